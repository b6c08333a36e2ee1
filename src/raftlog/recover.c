/* raftlog recovery: the scan of every segment at open (the rules are in
 * the design note at the top of log.c: batch CRC and seq, torn tail of the
 * last segment cut, anything else DOCRAFT_ECORRUPT naming the file, the
 * offset and the group of the last good record). Loop thread, at open. */
#include "raftlog/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <dirent.h>

#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"

struct scan {
	struct raftlog *l;
	struct raftlog_group **byid;
	size_t nbyid, capid;
	const char *file;
	uint64_t seg;
	uint32_t last_group;     /* group of the last good record, or UINT32_MAX */
	char *errmsg;
};

static struct raftlog_group *scan_group(struct scan *sc, uint32_t id)
{
	if (id < sc->nbyid && sc->byid[id] != NULL)
		return sc->byid[id];
	if (id >= sc->nbyid) {
		sc->byid = xgrow(sc->byid, &sc->capid, (size_t)id + 1, sizeof *sc->byid, 64);
		memset(sc->byid + sc->nbyid, 0, ((size_t)id + 1 - sc->nbyid) * sizeof *sc->byid);
		sc->nbyid = (size_t)id + 1;
	}
	/* A record of a group whose GROUP record was collected: the group must
	 * have been removed later in the log (checked at the end). */
	sc->byid[id] = rl_group_new(sc->l, id, "", 0);
	return sc->byid[id];
}

static const char *gname(struct scan *sc, uint32_t id)
{
	if (id < sc->nbyid && sc->byid[id] != NULL && sc->byid[id]->name[0] != '\0')
		return sc->byid[id]->name;
	return "?";
}

static int scan_corrupt(struct scan *sc, uint64_t off, const char *what)
{
	if (sc->last_group == UINT32_MAX)
		return err_set(sc->errmsg, DOCRAFT_ECORRUPT,
			       "raftlog: %s at offset %" PRIu64 ": %s (no record before it)",
			       sc->file, off, what);
	return err_set(sc->errmsg, DOCRAFT_ECORRUPT,
		       "raftlog: %s at offset %" PRIu64 ": %s (after a record of group %s, id %u)",
		       sc->file, off, what, gname(sc, sc->last_group), sc->last_group);
}

/* Applies one decoded record at file offset off. */
static int scan_record(struct scan *sc, const struct rl_rec *r, uint64_t off)
{
	if (r->group == 0 || r->group > RL_GROUP_ID_MAX)
		return scan_corrupt(sc, off, "group id out of range");
	struct raftlog_group *g = scan_group(sc, r->group);
	struct rl_loc loc = {sc->seg, off};
	if (g->removed && r->type != RL_REC_REMOVE)
		return scan_corrupt(sc, off, "a record of a removed group");
	switch (r->type) {
	case RL_REC_GROUP:
		if (g->name[0] != '\0' &&
		    (strlen(g->name) != r->name_len || memcmp(g->name, r->name, r->name_len) != 0))
			return scan_corrupt(sc, off, "group id renamed");
		memcpy(g->name, r->name, r->name_len);
		g->name[r->name_len] = '\0';
		g->rec_group = loc;
		g->name_queued = true;
		break;
	case RL_REC_TERM_VOTE:
		g->term = r->term;
		g->vote = r->vote;
		g->rec_tv = loc;
		break;
	case RL_REC_ENTRIES: {
		/* Entries that do not follow on: what came before was collected
		 * (the group's later SNAPSHOT no longer needs it) or is corrupt;
		 * the end of the scan checks that the log joins the snapshot. */
		if (r->first < g->first || r->first - g->first > g->n) {
			rl_group_keep(g, 0);
			g->first = r->first;
		}
		rl_group_truncate(g, r->first);
		struct rl_entry_it it;
		struct rl_entry_view v;
		rl_entry_first(&it, r);
		while (rl_entry_next(&it, &v)) {
			rl_group_push(g, v.term, v.type, v.len);
			g->e[g->n - 1].seg = sc->seg;
			g->e[g->n - 1].off = off + RL_REC_HDR + v.body_off;
		}
		break;
	}
	case RL_REC_TRUNCATE:
		rl_group_truncate(g, r->index);
		break;
	case RL_REC_SNAPSHOT:
		rl_group_set_snapshot(g, r->index, r->term, r->conf_index, r->conf, r->conf_len,
				      r->data, r->data_len);
		rl_group_drop_below(g, r->first_needed, r->index);
		g->rec_snap = loc;
		break;
	case RL_REC_REMOVE: {
		struct raftlog_group *fresh = xzalloc(sizeof *fresh);
		*fresh = (struct raftlog_group){.id = g->id, .first = 1, .removed = true};
		free(g->snap_conf);
		free(g->snap_data);
		free(g->e);
		*g = *fresh;
		free(fresh);
		break;
	}
	default:
		break;
	}
	sc->last_group = r->group;
	return 0;
}

/* Whether a valid batch with seq > after starts anywhere in p[from, n). */
static bool later_batch(const uint8_t *p, size_t n, size_t from, uint64_t after)
{
	for (size_t i = from; i + RL_BATCH_HDR <= n; i++) {
		uint32_t len;
		uint64_t seq;
		if (rl_get_u32(p + i) == RL_BATCH_MAGIC && rl_batch_check(p + i, n - i, &len, &seq) == 0 &&
		    seq > after)
			return true;
	}
	return false;
}

static int read_file(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return errno;
	uint8_t *p = xmalloc((size_t)st.st_size + 1);
	size_t done = 0;
	while (done < (size_t)st.st_size) {
		ssize_t n = pread(fd, p + done, (size_t)st.st_size - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(p);
			return n < 0 ? errno : EIO;
		}
		done += (size_t)n;
	}
	*out = p;
	*len = done;
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Replays segment seq (fd) into the groups. *next_seq is the batch seq
 * expected next (0: any, for the first segment). *size: where its records
 * end; *fsize: the file's size (the last segment's zero window after its
 * records is the end of the log, not a torn tail: it stays). */
static int scan_segment(struct scan *sc, uint64_t seq, int fd, bool last, uint64_t *next_seq,
			uint64_t *size, uint64_t *fsize)
{
	char path[4096];
	rl_seg_path(sc->l, seq, path, sizeof path);
	sc->file = path;
	sc->seg = seq;
	uint8_t *p = NULL;
	size_t n = 0;
	int e = read_file(fd, &p, &n);
	if (e != 0)
		return err_set(sc->errmsg, DOCRAFT_EIO, "raftlog: read %s: %s", path, strerror(e));
	int rv = 0;
	uint64_t hseq, first;
	size_t off = RL_SEG_HDR;
	if (n < RL_SEG_HDR) {
		if (!last) {
			rv = scan_corrupt(sc, 0, "segment header cut short");
			goto out;
		}
		/* A crash while creating the last segment: nothing in it. */
		LOG_WARN("raftlog: %s: torn segment header (%zu bytes): cut", path, n);
		off = 0;
		goto cut;
	}
	if (rl_seg_header_check(p, &hseq, &first) != 0 || hseq != seq) {
		rv = scan_corrupt(sc, 0, "bad segment header");
		goto out;
	}
	if (*next_seq != 0 && first != *next_seq) {
		rv = scan_corrupt(sc, 0, "batch sequence gap between segments");
		goto out;
	}
	*next_seq = first;
	while (off < n) {
		uint32_t len;
		uint64_t bseq;
		if (last && all_zero(p + off, n - off))
			break; /* the zeros the writer keeps ahead */
		if (rl_batch_check(p + off, n - off, &len, &bseq) != 0 || bseq != *next_seq) {
			if (last && !later_batch(p, n, off + 1, *next_seq - 1)) {
				LOG_WARN("raftlog: %s: torn tail at offset %zu (%zu bytes): cut",
					 path, off, n - off);
				goto cut;
			}
			bool intact = rl_batch_check(p + off, n - off, &len, &bseq) == 0;
			rv = scan_corrupt(sc, off, intact ? "batch out of sequence"
							  : "bad batch (checksum, length or magic)");
			goto out;
		}
		size_t at = off + RL_BATCH_HDR, end = at + len;
		while (at < end) {
			struct rl_rec r;
			size_t used;
			char why[DOCRAFT_ERRMSG_SIZE];
			if (rl_rec_decode(p + at, end - at, &r, &used, why) != 0) {
				rv = scan_corrupt(sc, at, why);
				goto out;
			}
			rv = scan_record(sc, &r, at);
			if (rv != 0)
				goto out;
			at += used;
		}
		(*next_seq)++;
		off = end;
	}
	*size = off;
	*fsize = n;
	goto out;
cut:
	if (ftruncate(fd, (off_t)off) != 0 || fsync(fd) != 0) {
		rv = err_set(sc->errmsg, DOCRAFT_EIO, "raftlog: cut %s: %s", path, strerror(errno));
		goto out;
	}
	*size = off;
	*fsize = off;
out:
	free(p);
	return rv;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Lists the segment numbers in dir, sorted. */
static int list_segments(const char *dir, uint64_t **out, size_t *n, char *errmsg)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return err_set(errmsg, fs_errno_code(errno), "raftlog: open %s: %s", dir,
			       strerror(errno));
	uint64_t *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *s = de->d_name;
		if (strlen(s) != 20 || strcmp(s + 16, ".seg") != 0)
			continue;
		uint64_t x = 0;
		bool ok = true;
		for (int i = 0; i < 16; i++) {
			if (s[i] < '0' || s[i] > '9')
				ok = false;
			x = x * 10 + (uint64_t)(s[i] - '0');
		}
		if (!ok || x == 0)
			continue;
		v = xgrow(v, &cap, cnt + 1, sizeof *v, 16);
		v[cnt++] = x;
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof *v, cmp_u64);
	*out = v;
	*n = cnt;
	return 0;
}

int rl_recover(struct raftlog *l, char *errmsg)
{
	uint64_t *seqs = NULL;
	size_t n = 0;
	int rv = list_segments(l->dir, &seqs, &n, errmsg);
	if (rv != 0)
		return rv;
	struct scan sc = {.l = l, .last_group = UINT32_MAX, .errmsg = errmsg};
	uint64_t next_seq = 0;
	for (size_t i = 0; i < n && rv == 0; i++) {
		char path[4096];
		rl_seg_path(l, seqs[i], path, sizeof path);
		if (i > 0 && seqs[i] != seqs[i - 1] + 1) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT,
				     "raftlog: %s: segment %" PRIu64 " is missing", path,
				     seqs[i - 1] + 1);
			break;
		}
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			rv = err_set(errmsg, fs_errno_code(errno), "raftlog: open %s: %s", path,
				     strerror(errno));
			break;
		}
		uint64_t size = 0, fsize = 0;
		rv = scan_segment(&sc, seqs[i], fd, i + 1 == n, &next_seq, &size, &fsize);
		if (rv != 0) {
			close(fd);
			break;
		}
		if (size == 0) { /* a torn empty last segment: gone */
			close(fd);
			unlink(path);
			continue;
		}
		rl_seg_push(l, seqs[i], fd, size, fsize);
	}
	free(seqs);
	for (size_t i = 0; i < l->ngroups && rv == 0; i++) {
		const struct raftlog_group *g = l->groups[i];
		if (g->removed)
			continue;
		if (g->name[0] == '\0')
			rv = err_set(errmsg, DOCRAFT_ECORRUPT,
				     "raftlog: %s: records of group id %u whose GROUP record is "
				     "missing", l->dir, g->id);
		else if (g->n > 0 && g->first > (g->has_snap ? g->snap_index + 1 : 1))
			rv = err_set(errmsg, DOCRAFT_ECORRUPT,
				     "raftlog: %s: group %s: entries from %" PRIu64
				     " do not join its %s", l->dir, g->name, g->first,
				     g->has_snap ? "snapshot" : "start (index 1)");
	}
	free(sc.byid);
	/* Removed groups need nothing any more. */
	for (size_t i = 0; i < l->ngroups;)
		if (l->groups[i]->removed)
			rl_group_unlink(l, l->groups[i]);
		else
			i++;
	if (rv == 0)
		l->durable_seq = next_seq != 0 ? next_seq - 1 : 0;
	return rv;
}

/* A fresh log (or one whose only segment was a torn header): segment 1 (or
 * the next number) with just its header, written synchronously. */
int rl_create_first_segment(struct raftlog *l, uint64_t seq, char *errmsg)
{
	char path[4096];
	rl_seg_path(l, seq, path, sizeof path);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(errmsg, fs_errno_code(errno), "raftlog: create %s: %s", path,
			       strerror(errno));
	uint8_t h[RL_SEG_HDR];
	rl_seg_header(h, seq, l->durable_seq + 1);
	int e = rl_write_all(fd, h, sizeof h, 0);
	if (e == 0 && fdatasync(fd) != 0)
		e = errno;
	if (e == 0)
		e = rl_fsync_dir(l->dir);
	if (e != 0) {
		close(fd);
		return err_set(errmsg, fs_errno_code(e), "raftlog: create %s: %s", path,
			       strerror(e));
	}
	rl_seg_push(l, seq, fd, RL_SEG_HDR, RL_SEG_HDR);
	return 0;
}
