#include "common/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

int fs_errno_code(int e)
{
	return e == ENOSPC || e == EDQUOT ? DOCRAFT_ENOSPC : DOCRAFT_EIO;
}

int fs_mkdir_p(const char *path, char *errmsg)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof tmp)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad directory path '%.64s'", path);
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		char c = tmp[i];
		if (c != '/' && c != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return err_set(errmsg, fs_errno_code(errno), "cannot create directory %s: %s",
				       tmp, strerror(errno));
		tmp[i] = c;
	}
	return 0;
}

int fs_mkdtemp(const char *parent, const char *prefix, char *out, size_t len, char *errmsg)
{
	int n;

	if (parent == NULL || parent[0] == '\0')
		parent = getenv("TMPDIR");
	if (parent == NULL || parent[0] == '\0')
		parent = "/tmp";
	n = snprintf(out, len, "%s/%s-XXXXXX", parent, prefix);
	if (n < 0 || (size_t)n >= len)
		return err_set(errmsg, DOCRAFT_EINVAL, "temporary directory path too long: %s/%s-XXXXXX",
			       parent, prefix);
	if (mkdtemp(out) == NULL)
		return err_set(errmsg, fs_errno_code(errno),
			       "cannot create a temporary directory in %s: %s", parent,
			       strerror(errno));
	return 0;
}

int fs_fsync_path(const char *path, char *errmsg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rv = 0;

	if (fd < 0)
		return err_set(errmsg, fs_errno_code(errno), "open %s: %s", path, strerror(errno));
	if (fsync(fd) != 0)
		rv = err_set(errmsg, fs_errno_code(errno), "fsync %s: %s", path, strerror(errno));
	close(fd);
	return rv;
}

int fs_fsync_parent(const char *path, char *errmsg)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int rv;

	if (slash == NULL)
		return fs_fsync_path(".", errmsg);
	dir = xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
	rv = fs_fsync_path(dir, errmsg);
	free(dir);
	return rv;
}

int fs_write_file(const char *path, const void *data, size_t len, char *errmsg)
{
	size_t n = strlen(path);
	char *tmp = xmalloc(n + 5);
	const uint8_t *p = data;
	size_t off = 0;
	int fd, rv = 0;

	memcpy(tmp, path, n);
	memcpy(tmp + n, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rv = err_set(errmsg, fs_errno_code(errno), "create %s: %s", tmp, strerror(errno));
		free(tmp);
		return rv;
	}
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			rv = err_set(errmsg, fs_errno_code(e), "write %s: %s", tmp, strerror(e));
			break;
		}
		off += (size_t)w;
	}
	if (rv == 0 && fsync(fd) != 0)
		rv = err_set(errmsg, fs_errno_code(errno), "fsync %s: %s", tmp, strerror(errno));
	close(fd);
	if (rv == 0 && rename(tmp, path) != 0)
		rv = err_set(errmsg, fs_errno_code(errno), "rename %s: %s", tmp, strerror(errno));
	if (rv != 0)
		unlink(tmp);
	free(tmp);
	return rv != 0 ? rv : fs_fsync_parent(path, errmsg);
}

int fs_read_file(const char *path, size_t max, uint8_t **out, size_t *len, char *errmsg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *p;
	size_t off = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return err_set(errmsg, errno == ENOENT ? DOCRAFT_ENOTFOUND : DOCRAFT_EIO,
			       "open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > max) {
		close(fd);
		return err_set(errmsg, DOCRAFT_EIO, "%s: cannot stat or larger than %zu bytes",
			       path, max);
	}
	p = xmalloc((size_t)st.st_size + 1);
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, p + off, (size_t)st.st_size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	close(fd);
	if (off != (size_t)st.st_size) {
		free(p);
		return err_set(errmsg, DOCRAFT_EIO, "%s: short read", path);
	}
	p[off] = '\0';
	*out = p;
	*len = off;
	return 0;
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(p) != 0 && errno != ENOENT)
		LOG_WARN("cannot remove %s: %s", p, strerror(errno));
	return 0;
}

void fs_remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
