/* Written Raft log segments.
 *
 * Design note. raft_uv (C-Raft 0.15) prepares each open segment ahead of
 * use with posix_fallocate, which on ext4 and xfs allocates *unwritten*
 * extents, and appends with O_DIRECT + O_DSYNC kernel AIO submitted with
 * RWF_NOWAIT. A write that touches an unwritten block needs its extent
 * converted (a journal transaction, committed before an O_DSYNC write
 * completes), which the kernel will not do without blocking: the write
 * completes with EAGAIN and raft_uv redoes it synchronously on the libuv
 * threadpool, two thread hand-offs later, journal commit included. Under
 * 64-client writes that was 81-96% of all appends (strace of a tserver,
 * docs/benchmarks.md fix 10). raft_uv has no hook between preparing a
 * segment and using it, and no option to write the segment instead.
 *
 * So this file defines posix_fallocate for the process: it calls glibc's,
 * then writes zeros over the part of the range that lay past the file's
 * end and fdatasyncs the file, so every block of a prepared (new, empty)
 * segment is written, and the conversion durable, before raft_uv appends
 * to it; an append is then a plain overwrite that RWF_NOWAIT accepts. The
 * cost moves to where raft_uv prepares segments, on the libuv threadpool
 * ahead of use: one sequential write of the segment (8 MiB by default).
 * The result is still a valid posix_fallocate: bytes past the old end read
 * as zeros either way, data before it is never touched, and no more space
 * is needed (the blocks are allocated first). The one thing a caller may
 * not do is write past the old end while the call runs (raft_uv prepares
 * a segment before anyone writes it). Zeroing that fails after the
 * allocation succeeded is only logged: the segment is then partly
 * unwritten, which is the slow path, not an error. RocksDB preallocates with fallocate(2) and
 * calls posix_fallocate only for mmap writes (allow_mmap_writes, off in
 * docraft); nothing else in docraft calls it.
 *
 * Linking: an executable's own definition wins over glibc's only if the
 * executable exports it; raftglue_dep passes
 * -Wl,--export-dynamic-symbol=posix_fallocate, and segfill_active() checks
 * the result (tablets log a warning when it is false). The name is set
 * with an asm label because _FILE_OFFSET_BITS=64 renames the C prototype
 * to posix_fallocate64, while libraft.so binds the plain name. */
#include "raft/segfill.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/log.h"

#define ZERO_CHUNK (1u << 20)

typedef int (*fallocate_fn)(int, off_t, off_t);

/* Exported from the executable under the plain name (see the note). */
__attribute__((visibility("default"))) int segfill_posix_fallocate(int fd, off_t offset,
								   off_t len)
	__asm__("posix_fallocate");

static atomic_bool enabled = true;
static fallocate_fn glibc_fallocate;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
/* Aligned for O_DIRECT descriptors; never written. */
static _Alignas(4096) char zeros[ZERO_CHUNK];

void segfill_set(bool on)
{
	atomic_store(&enabled, on);
}

bool segfill_enabled(void)
{
	return atomic_load(&enabled);
}

bool segfill_active(void)
{
	return dlsym(RTLD_DEFAULT, "posix_fallocate") == (void *)segfill_posix_fallocate;
}

static void resolve(void)
{
	glibc_fallocate = (fallocate_fn)dlsym(RTLD_NEXT, "posix_fallocate");
}

/* Zeros over [offset, offset + len), then fdatasync; 0 or an errno. */
static int fill(int fd, off_t offset, off_t len)
{
	off_t end = offset + len;
	for (off_t at = offset; at < end;) {
		size_t n = end - at < (off_t)ZERO_CHUNK ? (size_t)(end - at) : ZERO_CHUNK;
		ssize_t w = pwrite(fd, zeros, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		at += w;
	}
	if (fdatasync(fd) != 0)
		return errno;
	/* Buffered zeros would otherwise be flushed and dropped by raft_uv's
	 * first O_DIRECT write to the range, on its loop thread. */
	(void)posix_fadvise(fd, offset, len, POSIX_FADV_DONTNEED);
	return 0;
}

int segfill_posix_fallocate(int fd, off_t offset, off_t len)
{
	int rv;
	pthread_once(&resolve_once, resolve);
	if (glibc_fallocate == NULL)
		return ENOSYS;
	struct stat st;
	off_t from;
	bool zero = atomic_load(&enabled) && offset >= 0 && len > 0 && fstat(fd, &st) == 0 &&
		    S_ISREG(st.st_mode);
	rv = glibc_fallocate(fd, offset, len);
	if (rv != 0 || !zero)
		return rv;
	/* Only what lay past the end: the bytes before it are the caller's. */
	from = st.st_size > offset ? st.st_size : offset;
	if (from < offset + len && (rv = fill(fd, from, offset + len - from)) != 0)
		LOG_WARN("segfill: zeroing %lld bytes at %lld of fd %d: %s (the allocation "
			 "stands; appends there take raft_uv's slow path)",
			 (long long)(offset + len - from), (long long)from, fd, strerror(rv));
	return 0;
}
