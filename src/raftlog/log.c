/* raftlog: one append-only, segmented Raft log per tablet server, shared by
 * every Raft group it hosts (each sees its own raft_io: io.c).
 *
 * Design note.
 *
 * Files. dir/NNNNNNNNNNNNNNNN.seg, 16-digit decimal sequence numbers, one
 * more per segment; the last one is the one written. No preallocation, no
 * zero fill: a file is as large as what was written to it. A write that
 * would take the current segment past segment_bytes goes to a new segment
 * (a batch larger than a segment gets one of its own).
 *
 *   segment  := seg_header batch*
 *   seg_header (32 bytes) := magic "RLSG" u32 | version u32 | seg seq u64 |
 *                            first batch seq u64 | crc32c(previous 24) u32 | 0 u32
 *   batch    := magic "RLBH" u32 | crc32c u32 | len u32 | seq u64 | record*
 *               (crc over len, seq and the len bytes of records; seq is +1
 *               per batch across the whole log, across segments)
 *   record   := type u8 | 0 0 0 | group u32 | body_len u32 | body
 *     GROUP      name (1..64 printable bytes): group id <-> name, so the
 *                other records carry the u32
 *     TERM_VOTE  term u64 | vote u64
 *     ENTRIES    first u64 | n u32 | 0 u32 | n x (term u64 | type u8 | 0 0 0 |
 *                len u32) | n x data padded to 8 bytes. An ENTRIES record
 *                at index first drops the group's entries >= first.
 *     TRUNCATE   index u64: drop entries >= index
 *     SNAPSHOT   index u64 | term u64 | conf_index u64 | first_needed u64 |
 *                conf_len u32 | data_len u32 | configuration
 *                (raft_configuration_encode) | data. Entries below
 *                first_needed go; first_needed 0: every entry goes (an
 *                installed snapshot, trailing 0)
 *     REMOVE     (empty): the group is gone
 *   All integers little endian; every length is checked on decode.
 *
 * Group commit. Records are encoded on the loop thread into the pending
 * batch (each with an op: what to do once it is durable). A uv_prepare
 * handle (once per loop turn, after that turn's callbacks) hands the
 * pending batch to the writer thread if it is idle; the writer does
 * pwrite + fdatasync (+ segment creation and a directory fsync on rotation)
 * and wakes the loop with uv_async; the loop applies the ops (locations of
 * records and entries), fires the append / snapshot callbacks in order,
 * and hands over the next pending batch at once. A lone append costs one
 * write + fdatasync and no added wait; N groups appending in one turn
 * share one. Synchronous records (set_term, set_vote, bootstrap, recover,
 * raftlog_group_remove) block the loop thread until their batch is
 * durable (raft_uv blocks the same way on its metadata); callbacks of
 * appends in those batches still fire later, from the async.
 *
 * Failure (a write or fdatasync error): every append of the failed batch
 * and every queued append of the same groups completes with RAFT_NOSPACE
 * (ENOSPC, EDQUOT) or RAFT_IOERR; those groups' indexes roll back to their
 * last durable entry (0.15's leader truncates its in-memory log at the
 * failed index and appends there next; a follower does not, and its next
 * append, past a hole, is refused with RAFT_IOERR: see io.c). The other
 * records of the failed batch (GROUP, TRUNCATE, SNAPSHOT) are queued again
 * in front; GC copies are dropped; synchronous callers get the error. The
 * next write, after a 100 ms pause, starts at the failed batch's offset
 * with the same batch seq, so bytes of the failed write past it can never
 * be read back (recovery requires seq == previous + 1).
 *
 * Recovery (raftlog_open) replays every segment in order: batch CRC and
 * seq, then the records, building each group's name, term, vote, newest
 * snapshot (kept in memory: ours are small markers) and entry locations;
 * entry data is read back with pread when raft loads. A bad batch in the
 * last segment with no valid later batch after it is a torn tail (cut,
 * WARN); anything else fails with DOCRAFT_ECORRUPT naming the file, the
 * offset and the group of the last good record.
 *
 * Garbage collection. A group needs its GROUP record, its latest TERM_VOTE,
 * its latest SNAPSHOT and its entries from its first one on; a removed
 * group needs nothing. Segments are removed oldest first: every segment
 * below the oldest one some group needs is unlinked (then the directory
 * fsynced), but only once every record queued when that was decided is
 * durable (they are what made the old records unneeded). Idle groups would
 * pin old segments forever, so when more than two segments remain AND they
 * hold more than twice the live bytes plus one segment, every group that
 * pins the oldest one has its live state (GROUP, TERM_VOTE, SNAPSHOT, and
 * its entries re-read with pread if they are what pins) rewritten into the
 * pending batch; once durable, the oldest segment is free. Disk is then
 * bounded by about twice the live data plus two segments, not by the
 * slowest tablet. A group whose entries pin but which has records queued
 * is not copied: it moves forward by itself (its snapshots drop old
 * entries). Copies are counted in stats.rewrites. */
#include "raftlog/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"

#define RETRY_MS 100

static void seg_path(const struct raftlog *l, uint64_t seq, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%016" PRIu64 ".seg", l->dir, seq);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int raft_code(int e)
{
	return e == ENOSPC || e == EDQUOT ? RAFT_NOSPACE : RAFT_IOERR;
}

/* ---- groups ---- */

struct raftlog_group *rl_group_find(struct raftlog *l, const char *name)
{
	for (size_t i = 0; i < l->ngroups; i++)
		if (!l->groups[i]->removed && strcmp(l->groups[i]->name, name) == 0)
			return l->groups[i];
	return NULL;
}

static struct raftlog_group *group_new(struct raftlog *l, uint32_t id, const char *name,
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
	return g != NULL ? g : group_new(l, l->next_id, name, strlen(name));
}

static void group_free(struct raftlog_group *g)
{
	free(g->snap_conf);
	free(g->snap_data);
	free(g->e);
	free(g);
}

static void group_unlink(struct raftlog *l, struct raftlog_group *g)
{
	for (size_t i = 0; i < l->ngroups; i++)
		if (l->groups[i] == g) {
			l->groups[i] = l->groups[--l->ngroups];
			break;
		}
	group_free(g);
}

void rl_group_truncate(struct raftlog_group *g, uint64_t index)
{
	if (index <= g->first)
		g->n = 0;
	else if (index - g->first < g->n)
		g->n = (size_t)(index - g->first);
}

void rl_group_drop_below(struct raftlog_group *g, uint64_t index, uint64_t snap_index)
{
	if (index == 0) {
		g->n = 0;
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
		g->n = 0;
		return;
	}
	memmove(g->e, g->e + drop, (g->n - drop) * sizeof *g->e);
	g->n -= drop;
	g->first = index;
}

void rl_group_push(struct raftlog_group *g, uint64_t term, uint8_t type, uint32_t len)
{
	g->e = xgrow(g->e, &g->cap, g->n + 1, sizeof *g->e, 16);
	g->e[g->n++] = (struct rl_entry){.term = term, .type = type, .len = len};
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
static uint64_t group_pin(const struct raftlog_group *g)
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

static struct rl_seg *seg_find(struct raftlog *l, uint64_t seq)
{
	if (l->nsegs == 0 || seq < l->segs[0].seq || seq - l->segs[0].seq >= l->nsegs)
		return NULL;
	return &l->segs[seq - l->segs[0].seq];
}

static void seg_push(struct raftlog *l, uint64_t seq, int fd, uint64_t size)
{
	l->segs = xgrow(l->segs, &l->segcap, l->nsegs + 1, sizeof *l->segs, 8);
	l->segs[l->nsegs++] = (struct rl_seg){.seq = seq, .fd = fd, .size = size};
}

int rl_read(struct raftlog *l, uint64_t seg, uint64_t off, void *p, size_t len, char *errmsg)
{
	struct rl_seg *s = seg_find(l, seg);
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

/* ---- the writer thread ---- */

static int write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
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

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int e = fsync(fd) != 0 ? errno : 0;
	close(fd);
	return e;
}

/* Writer thread: one batch (and its unlinks). Touches only b and l->dir. */
static void run_job(struct raftlog *l, struct rl_batch *b, int fail)
{
	uint64_t t0 = now_ns();
	b->new_fd = -1;
	if (b->buf.len > RL_BATCH_HDR) {
		int fd = b->fd;
		int e = 0;
		/* A failed write may have left bytes past the old segment's durable
		 * end: cut them before it stops being the last segment (recovery
		 * forgives a bad tail only in the last one). */
		if (b->cut_fd >= 0 && (ftruncate(b->cut_fd, (off_t)b->cut_size) != 0 ||
				       fdatasync(b->cut_fd) != 0))
			e = errno;
		if (e == 0 && b->rotate) {
			char path[4096];
			seg_path(l, b->seg, path, sizeof path);
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0)
				e = errno;
			else {
				uint8_t h[RL_SEG_HDR];
				rl_seg_header(h, b->seg, b->seq);
				e = write_all(fd, h, sizeof h, 0);
			}
		}
		if (e == 0)
			e = write_all(fd, b->buf.data, b->buf.len, b->off);
		if (e == 0 && fdatasync(fd) != 0)
			e = errno;
		if (e == 0 && fail != 0)
			e = fail; /* test hook: as if fdatasync failed, bytes written */
		if (e == 0 && b->rotate)
			e = fsync_dir(l->dir);
		if (b->rotate) {
			if (e == 0) {
				b->new_fd = fd;
			} else if (fd >= 0) {
				/* The next write may not rotate (a smaller batch): a
				 * half-made segment must not follow the old one. */
				char path[4096];
				seg_path(l, b->seg, path, sizeof path);
				close(fd);
				unlink(path);
				fsync_dir(l->dir);
			}
		}
		b->err = e;
	}
	if (b->n_unlink > 0) {
		for (size_t i = 0; i < b->n_unlink; i++) {
			char path[4096];
			seg_path(l, b->unlink[i], path, sizeof path);
			if (unlink(path) != 0)
				LOG_WARN("raftlog: unlink %s: %s", path, strerror(errno));
		}
		int e = fsync_dir(l->dir);
		if (e != 0)
			LOG_WARN("raftlog: fsync of %s: %s", l->dir, strerror(e));
	}
	b->ns = now_ns() - t0;
}

static void *writer_main(void *arg)
{
	struct raftlog *l = arg;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (l->job == NULL && !l->stop)
			pthread_cond_wait(&l->cv_work, &l->mu);
		if (l->job == NULL)
			break;
		struct rl_batch *b = l->job;
		int fail = l->fail_next;
		l->fail_next = 0;
		pthread_mutex_unlock(&l->mu);
		run_job(l, b, fail);
		pthread_mutex_lock(&l->mu);
		l->job = NULL;
		l->job_done = true;
		pthread_cond_broadcast(&l->cv_done);
		uv_async_send(&l->async);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* ---- batches and ops ---- */

static struct rl_batch *batch_new(void)
{
	struct rl_batch *b = xzalloc(sizeof *b);
	buf_init(&b->buf);
	buf_reserve(&b->buf, 4096);
	b->buf.len = RL_BATCH_HDR;
	b->tail = &b->head;
	b->fd = -1;
	b->new_fd = -1;
	b->cut_fd = -1;
	return b;
}

static void batch_free(struct rl_batch *b)
{
	while (b->head != NULL) { /* only a log closed with records it could not write */
		struct rl_op *op = b->head;
		b->head = op->next;
		free(op);
	}
	buf_free(&b->buf);
	free(b->unlink);
	free(b);
}

static void batch_add(struct rl_batch *b, struct rl_op *op)
{
	op->next = NULL;
	*b->tail = op;
	b->tail = &op->next;
}

struct buf *rl_pending_buf(struct raftlog *l)
{
	return &l->pending->buf;
}

static void prepare_cb(uv_prepare_t *h);

static void pending_changed(struct raftlog *l)
{
	if (!uv_is_active((uv_handle_t *)&l->prepare))
		uv_prepare_start(&l->prepare, prepare_cb);
}

struct rl_op *rl_op_begin(struct raftlog *l, struct raftlog_group *g, uint8_t type,
			  uint8_t flags)
{
	if (g != NULL && !g->name_queued && type != RL_REC_GROUP) {
		struct rl_op *n = rl_op_begin(l, g, RL_REC_GROUP, flags & RL_OP_REWRITE);
		rl_enc_group(&l->pending->buf, g->id, g->name);
		rl_op_end(l, n);
		g->name_queued = true;
	}
	struct rl_op *op = xzalloc(sizeof *op);
	op->type = type;
	op->flags = flags;
	op->g = g;
	op->off = l->pending->buf.len;
	if (g != NULL)
		g->queued++;
	return op;
}

void rl_op_end(struct raftlog *l, struct rl_op *op)
{
	op->len = l->pending->buf.len - op->off;
	batch_add(l->pending, op);
	l->st.records++;
	pending_changed(l);
}

static void ready_add(struct raftlog *l, struct rl_op *op)
{
	op->next = NULL;
	*l->ready_tail = op;
	l->ready_tail = &op->next;
}

void rl_op_defer(struct raftlog *l, struct rl_op *op)
{
	if (op->g != NULL)
		op->g->queued++;
	ready_add(l, op);
	uv_async_send(&l->async);
}

/* The op is finished (written or failed): a waiting caller sees done; a
 * callback goes to the ready list; anything else is freed. */
static void op_finish(struct raftlog *l, struct rl_op *op, int status)
{
	op->status = status;
	if (op->flags & RL_OP_SYNC) {
		op->done = true;
		if (op->g != NULL)
			op->g->queued--;
		return;
	}
	ready_add(l, op);
}

/* Fires the ready callbacks, in order (each may queue more). */
static void fire_ready(struct raftlog *l)
{
	while (l->ready != NULL) {
		struct rl_op *op = l->ready;
		l->ready = op->next;
		if (l->ready == NULL)
			l->ready_tail = &l->ready;
		struct raftlog_group *g = op->g;
		if (g != NULL && op->status != 0 && g->io != NULL)
			snprintf(g->io->io.errmsg, sizeof g->io->io.errmsg,
				 "raftlog: write failed: %s", raft_strerror(op->status));
		if (op->acb != NULL)
			op->acb(op->areq, op->status);
		else if (op->scb != NULL)
			op->scb(op->sreq, op->status);
		else if (op->gcb != NULL)
			op->gcb(op->greq, op->gsnap, op->status);
		free(op);
		if (g != NULL && --g->queued == 0 && g->io != NULL)
			rl_io_idle(g->io);
	}
}

/* ---- completion ---- */

/* The op's record is durable at file offset base + op->off of segment seg. */
static void op_durable(struct rl_batch *b, struct rl_op *op)
{
	struct raftlog_group *g = op->g;
	struct rl_loc loc = {b->seg, b->off + op->off};
	switch (op->type) {
	case RL_REC_GROUP:
		g->rec_group = loc;
		break;
	case RL_REC_TERM_VOTE:
		g->rec_tv = loc;
		g->term = op->term;
		g->vote = op->vote;
		break;
	case RL_REC_SNAPSHOT:
		g->rec_snap = loc;
		break;
	case RL_REC_REMOVE:
		g->removed = true;
		break;
	case RL_REC_ENTRIES: {
		struct rl_rec r;
		size_t used;
		int rv = rl_rec_decode(b->buf.data + op->off, op->len, &r, &used, NULL);
		ASSERT(rv == 0);
		(void)rv;
		struct rl_entry_it it;
		struct rl_entry_view v;
		rl_entry_first(&it, &r);
		for (uint64_t idx = r.first; rl_entry_next(&it, &v); idx++) {
			if (idx < g->first || idx - g->first >= g->n)
				continue;
			struct rl_entry *e = &g->e[idx - g->first];
			/* A copy (GC) moves only what is still the same durable entry. */
			if (e->term != v.term || ((op->flags & RL_OP_REWRITE) && e->seg == 0))
				continue;
			e->seg = b->seg;
			e->off = b->off + op->off + RL_REC_HDR + v.body_off;
		}
		break;
	}
	default:
		break;
	}
}

static void gc_check(struct raftlog *l);

static void complete_batch(struct raftlog *l, struct rl_batch *b)
{
	if (b->buf.len > RL_BATCH_HDR) {
		if (b->rotate) {
			if (b->cut_fd >= 0)
				seg_find(l, b->seg - 1)->stale = false;
			seg_push(l, b->seg, b->new_fd, b->off + b->buf.len);
		} else
			seg_find(l, b->seg)->size = b->off + b->buf.len;
		l->durable_seq = b->seq;
	}
	bool relevant = b->rotate || b->n_unlink > 0;
	bool had_ops = b->head != NULL;
	struct rl_op *op = b->head;
	b->head = NULL; /* the ops move to the ready list (or their waiters) */
	while (op != NULL) {
		struct rl_op *next = op->next;
		op_durable(b, op);
		if (op->type != RL_REC_ENTRIES || (op->flags & RL_OP_REWRITE))
			relevant = true;
		op_finish(l, op, 0);
		op = next;
	}
	if (l->rewriting && had_ops) {
		bool any = false;
		for (op = l->pending->head; op != NULL; op = op->next)
			any |= (op->flags & RL_OP_REWRITE) != 0;
		l->rewriting = any;
	}
	if (relevant)
		l->gc_due = true; /* checked once the callbacks have run (async_cb) */
}

static bool group_failing(struct raftlog_group **v, size_t n, struct raftlog_group *g)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == g)
			return true;
	return false;
}

static void retry_cb(uv_timer_t *t)
{
	struct raftlog *l = t->data;
	l->backoff = false;
	pending_changed(l);
}

/* The write of b failed with errno b->err (see the design note). */
static void fail_batch(struct raftlog *l, struct rl_batch *b)
{
	int code = raft_code(b->err);
	l->st.write_errors++;
	if (!b->rotate && seg_find(l, b->seg) != NULL)
		seg_find(l, b->seg)->stale = true; /* bytes past its size, maybe */
	LOG_ERROR("raftlog %s: write of batch %" PRIu64 " (%zu bytes) to segment %" PRIu64
		  " at %" PRIu64 " failed: %s", l->dir, b->seq, b->buf.len, b->seg, b->off,
		  strerror(b->err));
	struct raftlog_group **failing = NULL;
	size_t nfail = 0, capfail = 0;
	struct rl_batch *np = batch_new();
	struct rl_batch *srcs[2] = {b, l->pending};
	for (int s = 0; s < 2; s++) {
		struct rl_op *op = srcs[s]->head;
		while (op != NULL) {
			struct rl_op *next = op->next;
			bool entries = op->type == RL_REC_ENTRIES && !(op->flags & RL_OP_REWRITE);
			if (entries && (s == 0 || group_failing(failing, nfail, op->g))) {
				if (!group_failing(failing, nfail, op->g)) {
					failing = xgrow(failing, &capfail, nfail + 1,
							sizeof *failing, 8);
					failing[nfail++] = op->g;
				}
				op_finish(l, op, code);
			} else if (s == 0 && (op->flags & RL_OP_SYNC)) {
				op_finish(l, op, code);
			} else if (s == 0 && (op->flags & RL_OP_REWRITE)) {
				if (op->g != NULL)
					op->g->queued--;
				free(op);
			} else {
				/* kept: copied into the new pending batch */
				size_t off = np->buf.len;
				buf_append(&np->buf, srcs[s]->buf.data + op->off, op->len);
				op->off = off;
				batch_add(np, op);
			}
			op = next;
		}
		srcs[s]->head = NULL;
	}
	for (size_t i = 0; i < nfail; i++) {
		struct raftlog_group *g = failing[i];
		size_t k = 0;
		while (k < g->n && g->e[k].seg != 0)
			k++;
		g->n = k;
	}
	free(failing);
	l->rewriting = false;
	for (struct rl_op *op = np->head; op != NULL; op = op->next)
		l->rewriting |= (op->flags & RL_OP_REWRITE) != 0;
	batch_free(l->pending);
	l->pending = np;
	l->backoff = true;
	uv_timer_start(&l->retry, retry_cb, RETRY_MS, 0);
}

/* Takes the finished job, if any, and applies it. */
static void reap(struct raftlog *l)
{
	pthread_mutex_lock(&l->mu);
	bool done = l->job_done;
	l->job_done = false;
	pthread_mutex_unlock(&l->mu);
	if (!done)
		return;
	struct rl_batch *b = l->inflight;
	l->inflight = NULL;
	uv_unref((uv_handle_t *)&l->async);
	l->st.sync_ns_total += b->ns;
	if (b->buf.len > RL_BATCH_HDR) {
		l->st.batches++;
		l->st.bytes_written += b->buf.len;
	}
	l->st.segments_removed += b->n_unlink;
	if (b->err != 0)
		fail_batch(l, b);
	else
		complete_batch(l, b);
	batch_free(b);
}

/* Hands the pending batch (and due unlinks) to the writer, which is idle. */
static void submit(struct raftlog *l)
{
	PRE(l->inflight == NULL);
	struct rl_batch *b = l->pending;
	bool data = b->head != NULL;
	bool gc = l->gc_planned && l->durable_seq >= l->gc_after && l->nsegs > 0 &&
		  l->segs[0].seq < l->gc_below;
	if (!data && !gc)
		return;
	l->pending = batch_new();
	if (data) {
		struct rl_seg *cur = &l->segs[l->nsegs - 1];
		size_t total = b->buf.len;
		b->seq = l->durable_seq + 1;
		rl_batch_seal(b->buf.data, (uint32_t)(total - RL_BATCH_HDR), b->seq);
		if (cur->size + total > l->segment_bytes && cur->size > RL_SEG_HDR) {
			b->rotate = true;
			b->seg = cur->seq + 1;
			b->off = RL_SEG_HDR;
			if (cur->stale) {
				b->cut_fd = cur->fd;
				b->cut_size = cur->size;
			}
		} else {
			b->seg = cur->seq;
			b->off = cur->size;
			b->fd = cur->fd;
		}
	} else {
		b->buf.len = RL_BATCH_HDR; /* nothing to write */
	}
	if (gc) {
		size_t n = 0;
		while (n < l->nsegs - 1 && l->segs[n].seq < l->gc_below)
			n++;
		b->unlink = xcalloc(n > 0 ? n : 1, sizeof *b->unlink);
		for (size_t i = 0; i < n; i++) {
			b->unlink[i] = l->segs[i].seq;
			close(l->segs[i].fd);
		}
		b->n_unlink = n;
		memmove(l->segs, l->segs + n, (l->nsegs - n) * sizeof *l->segs);
		l->nsegs -= n;
		l->gc_planned = false;
	}
	l->inflight = b;
	uv_ref((uv_handle_t *)&l->async);
	pthread_mutex_lock(&l->mu);
	l->job = b;
	pthread_cond_signal(&l->cv_work);
	pthread_mutex_unlock(&l->mu);
}

static void maybe_submit(struct raftlog *l)
{
	if (l->inflight == NULL && !l->backoff)
		submit(l);
	if (l->pending->head == NULL && !(l->gc_planned && l->inflight == NULL))
		uv_prepare_stop(&l->prepare);
}

static void prepare_cb(uv_prepare_t *h)
{
	maybe_submit(h->data);
}

static void async_cb(uv_async_t *h)
{
	struct raftlog *l = h->data;
	reap(l);
	maybe_submit(l);
	fire_ready(l);
	if (l->gc_due && l->inflight == NULL) {
		l->gc_due = false;
		gc_check(l);
		maybe_submit(l);
	}
}

/* Blocks until the write in flight (if any) is done, and applies it. */
static void wait_writer(struct raftlog *l)
{
	if (l->inflight == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	while (!l->job_done)
		pthread_cond_wait(&l->cv_done, &l->mu);
	pthread_mutex_unlock(&l->mu);
	reap(l);
}

int rl_op_wait(struct raftlog *l, struct rl_op *op)
{
	while (!op->done) {
		wait_writer(l);
		if (op->done)
			break;
		submit(l); /* no backoff for a waiting caller */
		if (l->inflight == NULL)
			break; /* cannot happen: op is pending */
	}
	int status = op->done ? op->status : RAFT_IOERR;
	struct raftlog_group *g = op->g;
	free(op);
	if (l->ready != NULL)
		uv_async_send(&l->async); /* callbacks of that batch, later */
	if (g != NULL && g->removed && g->queued == 0 && g->io == NULL)
		group_unlink(l, g);
	return status;
}

void raftlog_test_fail_next_write(struct raftlog *l, int e)
{
	pthread_mutex_lock(&l->mu);
	l->fail_next = e;
	pthread_mutex_unlock(&l->mu);
}

/* ---- garbage collection ---- */

/* Queues a copy of g's live state (see the design note): GROUP, TERM_VOTE
 * and SNAPSHOT always, the entries too when `entries` (g idle: nothing of
 * it queued, so every entry is durable). */
static int rewrite_group(struct raftlog *l, struct raftlog_group *g, bool entries)
{
	uint8_t f = RL_OP_REWRITE;
	g->name_queued = false; /* a fresh GROUP record first */
	struct rl_op *op = rl_op_begin(l, g, RL_REC_GROUP, f);
	rl_enc_group(rl_pending_buf(l), g->id, g->name);
	rl_op_end(l, op);
	g->name_queued = true;
	if (g->term != 0 || g->vote != 0) {
		op = rl_op_begin(l, g, RL_REC_TERM_VOTE, f);
		op->term = g->term;
		op->vote = g->vote;
		rl_enc_term_vote(rl_pending_buf(l), g->id, g->term, g->vote);
		rl_op_end(l, op);
	}
	if (g->has_snap) {
		op = rl_op_begin(l, g, RL_REC_SNAPSHOT, f);
		op->index = g->snap_index;
		rl_enc_snapshot(rl_pending_buf(l), g->id, g->snap_index, g->snap_term,
				g->snap_conf_index, g->n > 0 ? g->first : 0, g->snap_conf,
				g->snap_conf_len, g->snap_data, g->snap_data_len);
		rl_op_end(l, op);
	}
	if (entries && g->n > 0) {
		uint64_t *terms = xcalloc(g->n, sizeof *terms);
		uint8_t *types = xcalloc(g->n, 1);
		uint32_t *lens = xcalloc(g->n, sizeof *lens);
		for (size_t i = 0; i < g->n; i++) {
			terms[i] = g->e[i].term;
			types[i] = g->e[i].type;
			lens[i] = g->e[i].len;
		}
		op = rl_op_begin(l, g, RL_REC_ENTRIES, f);
		struct buf *b = rl_pending_buf(l);
		rl_enc_entries_begin(b, g->id, g->first, (uint32_t)g->n, terms, types, lens);
		int rv = 0;
		for (size_t i = 0; i < g->n && rv == 0; i++) {
			size_t at = b->len;
			buf_reserve(b, rl_pad8(g->e[i].len));
			rv = rl_read(l, g->e[i].seg, g->e[i].off, b->data + at, g->e[i].len, NULL);
			memset(b->data + at + g->e[i].len, 0, rl_pad8(g->e[i].len) - g->e[i].len);
			b->len = at + rl_pad8(g->e[i].len);
		}
		free(terms);
		free(types);
		free(lens);
		if (rv != 0) {
			/* Cannot copy: leave the old records; drop this one. */
			LOG_ERROR("raftlog %s: GC copy of group %s: read failed", l->dir, g->name);
			b->len = op->off;
			g->queued--;
			free(op);
			return rv;
		}
		rl_op_end(l, op);
	}
	l->st.rewrites++;
	return 0;
}

/* After a durable batch that may have unpinned segments: plans the unlink
 * of every segment below the oldest pinned one, and copies idle groups off
 * the oldest segment when more than two would remain. */
static void gc_check(struct raftlog *l)
{
	if (l->nsegs < 2 || l->closing)
		return;
	uint64_t cur = l->segs[l->nsegs - 1].seq;
	uint64_t pin = cur;
	for (size_t i = 0; i < l->ngroups; i++) {
		uint64_t p = group_pin(l->groups[i]);
		if (p < pin)
			pin = p;
	}
	if (l->segs[0].seq < pin && !l->gc_planned) {
		l->gc_planned = true;
		l->gc_below = pin;
		l->gc_after = l->pending->head != NULL ? l->durable_seq + 1 : l->durable_seq;
		pending_changed(l);
	}
	uint64_t oldest = l->gc_planned ? l->gc_below : l->segs[0].seq;
	if (cur - oldest + 1 <= 2 || l->rewriting)
		return;
	/* Copy only when the disk holds more than twice the live bytes plus a
	 * segment: with more live data than two segments, copying whoever pins
	 * the oldest one at every check would only rewrite live data again. */
	struct raftlog_stats st;
	raftlog_stats(l, &st);
	uint64_t kept = 0;
	for (size_t i = 0; i < l->nsegs; i++)
		if (l->segs[i].seq >= oldest)
			kept += l->segs[i].size;
	if (kept <= 2 * st.live_bytes + l->segment_bytes)
		return;
	for (size_t i = 0; i < l->ngroups; i++) {
		struct raftlog_group *g = l->groups[i];
		if (group_pin(g) != oldest)
			continue;
		bool entries_pin = g->n > 0 && g->e[0].seg == oldest;
		if (entries_pin && g->queued != 0)
			continue; /* busy: its snapshots move it forward */
		if (rewrite_group(l, g, entries_pin) == 0)
			l->rewriting = true;
	}
}

/* ---- recovery ---- */

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
	sc->byid[id] = group_new(sc->l, id, "", 0);
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
			g->n = 0;
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

/* Replays segment seq (fd) into the groups. *next_seq is the batch seq
 * expected next (0: any, for the first segment). */
static int scan_segment(struct scan *sc, uint64_t seq, int fd, bool last, uint64_t *next_seq,
			uint64_t *size)
{
	char path[4096];
	seg_path(sc->l, seq, path, sizeof path);
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
	*size = n;
	goto out;
cut:
	if (ftruncate(fd, (off_t)off) != 0 || fsync(fd) != 0) {
		rv = err_set(sc->errmsg, DOCRAFT_EIO, "raftlog: cut %s: %s", path, strerror(errno));
		goto out;
	}
	*size = off;
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

static int recover(struct raftlog *l, char *errmsg)
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
		seg_path(l, seqs[i], path, sizeof path);
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
		uint64_t size = 0;
		rv = scan_segment(&sc, seqs[i], fd, i + 1 == n, &next_seq, &size);
		if (rv != 0) {
			close(fd);
			break;
		}
		if (size == 0) { /* a torn empty last segment: gone */
			close(fd);
			unlink(path);
			continue;
		}
		seg_push(l, seqs[i], fd, size);
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
			group_unlink(l, l->groups[i]);
		else
			i++;
	if (rv == 0)
		l->durable_seq = next_seq != 0 ? next_seq - 1 : 0;
	return rv;
}

/* A fresh log (or one whose only segment was a torn header): segment 1 (or
 * the next number) with just its header, written synchronously. */
static int create_first_segment(struct raftlog *l, uint64_t seq, char *errmsg)
{
	char path[4096];
	seg_path(l, seq, path, sizeof path);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(errmsg, fs_errno_code(errno), "raftlog: create %s: %s", path,
			       strerror(errno));
	uint8_t h[RL_SEG_HDR];
	rl_seg_header(h, seq, l->durable_seq + 1);
	int e = write_all(fd, h, sizeof h, 0);
	if (e == 0 && fdatasync(fd) != 0)
		e = errno;
	if (e == 0)
		e = fsync_dir(l->dir);
	if (e != 0) {
		close(fd);
		return err_set(errmsg, fs_errno_code(e), "raftlog: create %s: %s", path,
			       strerror(e));
	}
	seg_push(l, seq, fd, RL_SEG_HDR);
	return 0;
}

/* ---- the public functions ---- */

static void log_free(struct raftlog *l)
{
	for (size_t i = 0; i < l->nsegs; i++)
		if (l->segs[i].fd >= 0)
			close(l->segs[i].fd);
	for (size_t i = 0; i < l->ngroups; i++)
		group_free(l->groups[i]);
	if (l->pending != NULL)
		batch_free(l->pending);
	free(l->groups);
	free(l->segs);
	free(l->dir);
	free(l);
}

int raftlog_open(uv_loop_t *loop, const struct raftlog_options *o, struct raftlog **out,
		 char *errmsg)
{
	*out = NULL;
	if (o == NULL || o->dir == NULL || o->dir[0] == '\0')
		return err_set(errmsg, DOCRAFT_EINVAL, "raftlog: no directory");
	if (strlen(o->dir) > 4000)
		return err_set(errmsg, DOCRAFT_EINVAL, "raftlog: directory name too long");
	int rv = fs_mkdir_p(o->dir, errmsg);
	if (rv != 0)
		return rv;
	struct raftlog *l = xzalloc(sizeof *l);
	l->loop = loop;
	l->dir = xstrdup(o->dir);
	l->segment_bytes = o->segment_bytes != 0 ? o->segment_bytes : RAFTLOG_SEGMENT_BYTES;
	l->next_id = 1;
	l->ready_tail = &l->ready;
	rv = recover(l, errmsg);
	if (rv == 0 && l->nsegs == 0)
		rv = create_first_segment(l, 1, errmsg);
	if (rv != 0) {
		log_free(l);
		return rv;
	}
	l->pending = batch_new();
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv_work, NULL);
	pthread_cond_init(&l->cv_done, NULL);
	uv_prepare_init(loop, &l->prepare);
	l->prepare.data = l;
	uv_async_init(loop, &l->async, async_cb);
	l->async.data = l;
	uv_unref((uv_handle_t *)&l->async);
	uv_timer_init(loop, &l->retry);
	l->retry.data = l;
	l->handles_open = 3;
	if (pthread_create(&l->thread, NULL, writer_main, l) != 0)
		PANIC("raftlog: cannot start the writer thread");
	LOG_INFO("raftlog %s: %zu segments, %zu groups, batch seq %" PRIu64, l->dir, l->nsegs,
		 l->ngroups, l->durable_seq);
	*out = l;
	return 0;
}

static void handle_closed(uv_handle_t *h)
{
	struct raftlog *l = h->data;
	if (--l->handles_open > 0)
		return;
	fire_ready(l);
	if (l->close_cb != NULL)
		l->close_cb(l, l->close_arg);
	log_free(l);
}

int raftlog_close(struct raftlog *l, raftlog_close_cb cb, void *arg)
{
	if (l->attached > 0)
		return DOCRAFT_EBUSY;
	l->closing = true;
	/* Everything queued (copies, records written again after a failure)
	 * is written before the writer stops. */
	wait_writer(l);
	if (l->pending->head != NULL) {
		submit(l);
		wait_writer(l);
	}
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_signal(&l->cv_work);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv_work);
	pthread_cond_destroy(&l->cv_done);
	l->close_cb = cb;
	l->close_arg = arg;
	uv_close((uv_handle_t *)&l->prepare, handle_closed);
	uv_close((uv_handle_t *)&l->async, handle_closed);
	uv_close((uv_handle_t *)&l->retry, handle_closed);
	return 0;
}

int raftlog_group_remove(struct raftlog *l, const char *name, char *errmsg)
{
	struct raftlog_group *g = rl_group_find(l, name);
	if (g == NULL)
		return 0;
	if (g->io != NULL)
		return err_set(errmsg, DOCRAFT_EBUSY, "raftlog: group %s is attached", name);
	struct rl_op *op = rl_op_begin(l, g, RL_REC_REMOVE, RL_OP_SYNC);
	rl_enc_remove(rl_pending_buf(l), g->id);
	rl_op_end(l, op);
	int rv = rl_op_wait(l, op);
	if (rv != 0)
		return err_set(errmsg, rv == RAFT_NOSPACE ? DOCRAFT_ENOSPC : DOCRAFT_EIO,
			       "raftlog: remove %s: %s", name, raft_strerror(rv));
	return 0;
}

bool raftlog_group_exists(struct raftlog *l, const char *name)
{
	struct raftlog_group *g = rl_group_find(l, name);
	return g != NULL && (g->term != 0 || g->vote != 0 || g->n > 0 || g->has_snap);
}

void raftlog_stats(const struct raftlog *l, struct raftlog_stats *st)
{
	*st = l->st;
	st->segments = l->nsegs;
	st->disk_bytes = 0;
	for (size_t i = 0; i < l->nsegs; i++)
		st->disk_bytes += l->segs[i].size;
	st->groups = l->ngroups;
	uint64_t live = 0;
	for (size_t i = 0; i < l->ngroups; i++) {
		const struct raftlog_group *g = l->groups[i];
		if (g->removed)
			continue;
		live += RL_REC_HDR + strlen(g->name);
		if (g->rec_tv.seg != 0)
			live += RL_REC_HDR + 16;
		if (g->has_snap)
			live += RL_REC_HDR + 40 + g->snap_conf_len + g->snap_data_len;
		if (g->n > 0)
			live += RL_REC_HDR + 16;
		for (size_t k = 0; k < g->n; k++)
			live += RL_ENTRY_HDR + rl_pad8(g->e[k].len);
	}
	st->live_bytes = live;
}
