/* raftlog's in-memory index: groups (name, term, vote, snapshot, entry
 * locations), the segment table, and the small file helpers the writer and
 * recovery share. Loop thread (rl_write_all and rl_fsync_dir: any). */
#include "raftlog/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

void rl_seg_path(const struct raftlog *l, uint64_t seq, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%016" PRIu64 ".seg", l->dir, seq);
}

struct raftlog_group *rl_group_find(struct raftlog *l, const char *name)
{
	for (size_t i = 0; i < l->ngroups; i++)
		if (!l->groups[i]->removed && strcmp(l->groups[i]->name, name) == 0)
			return l->groups[i];
	return NULL;
}

struct raftlog_group *rl_group_new(struct raftlog *l, uint32_t id, const char *name,
				       size_t name_len)
{
	struct raftlog_group *g = xzalloc(sizeof *g);
	memcpy(g->name, name, name_len);
	g->name[name_len] = '\0';
	g->id = id;
	g->first = 1;
	l->groups = xgrow(l->groups, &l->gcap, l->ngroups + 1, sizeof *l->groups, 16);
	l->groups[l->ngroups++] = g;
	if (id >= l->next_id)
		l->next_id = id + 1;
	return g;
}

struct raftlog_group *rl_group_get(struct raftlog *l, const char *name)
{
	struct raftlog_group *g = rl_group_find(l, name);
	if (g == NULL && l->next_id > RL_GROUP_ID_MAX)
		return NULL;
	return g != NULL ? g : rl_group_new(l, l->next_id, name, strlen(name));
}

void rl_group_free(struct raftlog_group *g)
{
	free(g->snap_conf);
	free(g->snap_data);
	free(g->e);
	free(g);
}

void rl_group_unlink(struct raftlog *l, struct raftlog_group *g)
{
	for (size_t i = 0; i < l->ngroups; i++)
		if (l->groups[i] == g) {
			l->groups[i] = l->groups[--l->ngroups];
			break;
		}
	rl_group_free(g);
}

static uint64_t entry_bytes(const struct rl_entry *e)
{
	return RL_ENTRY_HDR + rl_pad8(e->len);
}

void rl_group_keep(struct raftlog_group *g, size_t n)
{
	for (size_t i = n; i < g->n; i++)
		g->ebytes -= entry_bytes(&g->e[i]);
	if (n < g->n)
		g->n = n;
}

void rl_group_truncate(struct raftlog_group *g, uint64_t index)
{
	if (index <= g->first)
		rl_group_keep(g, 0);
	else if (index - g->first < g->n)
		rl_group_keep(g, (size_t)(index - g->first));
}

void rl_group_drop_below(struct raftlog_group *g, uint64_t index, uint64_t snap_index)
{
	if (index == 0) {
		rl_group_keep(g, 0);
		g->first = snap_index + 1;
		return;
	}
	if (index <= g->first)
		return;
	uint64_t drop = index - g->first;
	if (drop >= g->n) {
		/* nothing left: the next index stays, and follows the snapshot */
		g->first += g->n;
		if (g->first < snap_index + 1)
			g->first = snap_index + 1;
		rl_group_keep(g, 0);
		return;
	}
	for (size_t i = 0; i < drop; i++)
		g->ebytes -= entry_bytes(&g->e[i]);
	memmove(g->e, g->e + drop, (g->n - drop) * sizeof *g->e);
	g->n -= drop;
	g->first = index;
}

void rl_group_push(struct raftlog_group *g, uint64_t term, uint8_t type, uint32_t len)
{
	g->e = xgrow(g->e, &g->cap, g->n + 1, sizeof *g->e, 16);
	g->e[g->n++] = (struct rl_entry){.term = term, .type = type, .len = len};
	g->ebytes += entry_bytes(&g->e[g->n - 1]);
}

void rl_group_set_snapshot(struct raftlog_group *g, uint64_t index, uint64_t term,
			   uint64_t conf_index, const void *conf, uint32_t conf_len,
			   const void *data, uint32_t data_len)
{
	free(g->snap_conf);
	free(g->snap_data);
	g->snap_conf = xmalloc(conf_len);
	memcpy(g->snap_conf, conf, conf_len);
	g->snap_data = xmalloc(data_len);
	if (data_len > 0)
		memcpy(g->snap_data, data, data_len);
	g->snap_conf_len = conf_len;
	g->snap_data_len = data_len;
	g->snap_index = index;
	g->snap_term = term;
	g->snap_conf_index = conf_index;
	g->has_snap = true;
}

/* The oldest segment g needs a record in (UINT64_MAX: none). Entries are
 * written in index order and GC copies move all of them forward at once,
 * so e[0] is in the oldest segment holding any of g's entries. */
uint64_t rl_group_pin(const struct raftlog_group *g)
{
	uint64_t pin = UINT64_MAX;
	const struct rl_loc *locs[] = {&g->rec_group, &g->rec_tv, &g->rec_snap};
	if (g->removed)
		return pin;
	for (size_t i = 0; i < 3; i++)
		if (locs[i]->seg != 0 && locs[i]->seg < pin)
			pin = locs[i]->seg;
	if (g->n > 0 && g->e[0].seg != 0 && g->e[0].seg < pin)
		pin = g->e[0].seg;
	return pin;
}

/* ---- segments ---- */

struct rl_seg *rl_seg_find(struct raftlog *l, uint64_t seq)
{
	if (l->nsegs == 0 || seq < l->segs[0].seq || seq - l->segs[0].seq >= l->nsegs)
		return NULL;
	return &l->segs[seq - l->segs[0].seq];
}

void rl_seg_push(struct raftlog *l, uint64_t seq, int fd, uint64_t size, uint64_t fsize)
{
	l->segs = xgrow(l->segs, &l->segcap, l->nsegs + 1, sizeof *l->segs, 8);
	l->segs[l->nsegs++] =
		(struct rl_seg){.seq = seq, .fd = fd, .size = size, .zend = fsize, .fsize = fsize};
}

int rl_read(struct raftlog *l, uint64_t seg, uint64_t off, void *p, size_t len, char *errmsg)
{
	struct rl_seg *s = rl_seg_find(l, seg);
	if (s == NULL || s->fd < 0)
		return err_set(errmsg, RAFT_IOERR, "raftlog: segment %" PRIu64 " is gone", seg);
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(s->fd, (char *)p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(errmsg, RAFT_IOERR, "raftlog: read of segment %" PRIu64
				       " at %" PRIu64 ": %s", seg, off + done,
				       n < 0 ? strerror(errno) : "end of file");
		done += (size_t)n;
	}
	return 0;
}

/* ---- file helpers ---- */

int rl_write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int rl_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int e = fsync(fd) != 0 ? errno : 0;
	close(fd);
	return e;
}
