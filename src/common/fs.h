/* File-system helpers every server layer needs, in one place: creating
 * directories, durable small files, removing trees.
 *
 * Errors: DOCRAFT_ENOSPC when the disk (or quota) is full, DOCRAFT_ENOTFOUND
 * where a missing file is an answer, DOCRAFT_EINVAL for a path too long,
 * DOCRAFT_EIO otherwise, each with errmsg naming the path. Blocking system
 * calls: never on an event loop's thread for anything but start-up, unless
 * the file is known to be small and local (the callers say). Any thread. */
#ifndef DOCRAFT_COMMON_FS_H
#define DOCRAFT_COMMON_FS_H

#include <stddef.h>
#include <stdint.h>

/* The docraft code of an errno from a file operation: ENOSPC and EDQUOT
 * are DOCRAFT_ENOSPC, everything else DOCRAFT_EIO. */
int fs_errno_code(int e);

/* Creates path and its missing parents (mode 0755); an existing directory
 * is fine. */
int fs_mkdir_p(const char *path, char *errmsg);

/* Creates a new, empty directory parent/prefix-XXXXXX (mkdtemp: mode 0700,
 * a name no other caller gets) and writes its path into out (len bytes).
 * parent NULL or "": $TMPDIR, or /tmp when that is unset or empty.
 * DOCRAFT_EINVAL when the path does not fit in out. */
int fs_mkdtemp(const char *parent, const char *prefix, char *out, size_t len, char *errmsg);

/* fsync of a file or directory by path. */
int fs_fsync_path(const char *path, char *errmsg);

/* fsync of the directory holding path (so a rename or create in it lasts). */
int fs_fsync_parent(const char *path, char *errmsg);

/* Replaces path with data[0..len) durably: writes path.tmp, fsyncs it,
 * renames it over path and fsyncs the directory. On failure path is
 * unchanged and path.tmp is gone. */
int fs_write_file(const char *path, const void *data, size_t len, char *errmsg);

/* Reads the whole file (at most max bytes, else DOCRAFT_EIO) into a new
 * buffer (*out, NUL-terminated past *len, free with free()). ENOENT is
 * DOCRAFT_ENOTFOUND. */
int fs_read_file(const char *path, size_t max, uint8_t **out, size_t *len, char *errmsg);

/* Removes path and everything below it, not following links; what cannot
 * be removed is logged at WARN and skipped. A missing path is fine. */
void fs_remove_tree(const char *path);

#endif
