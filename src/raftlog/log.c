/* raftlog: one append-only, segmented Raft log per tablet server, shared by
 * every Raft group it hosts (each sees its own raft_io: io.c).
 *
 * Design note.
 *
 * Files. dir/NNNNNNNNNNNNNNNN.seg, 16-digit decimal sequence numbers, one
 * more per segment; the last one is the one written. A write that would
 * take the current segment past segment_bytes goes to a new segment (a
 * batch larger than a segment gets one of its own).
 *
 * Zero window. A pwrite that extends a file makes its fdatasync commit the
 * new size and block allocation (an ext4 journal commit): measured on
 * /work, 200-240 us per 256-byte write + fdatasync against 140-170 us for
 * the same overwriting zeros already written (RWF_DSYNC: no better). So
 * the writer keeps zeros written ahead of the last segment's end: when
 * less than RL_ZERO_WINDOW / 2 is left after a batch, it writes zeros up to
 * RL_ZERO_WINDOW (1 MiB) past the batch, at most to segment_bytes, before
 * that batch's fdatasync (one slower batch per ~512 KiB of log; a failed
 * zero write, a full disk, only ends the window early). The records of a
 * segment end where its zeros start: recovery reads an all-zero rest of
 * the last segment as the end of the log (not a torn tail: nothing cut,
 * no WARN); non-zero bytes after the last batch are a torn tail as before.
 * Only the last segment has zeros: a rotation first cuts the old one to
 * its records (ftruncate + fdatasync), and raftlog_close cuts them too, so
 * a closed log's files end at their records. stats.disk_bytes is the
 * files' sizes, the window included: at most 1 MiB per tserver.
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
 * WARN), unless every byte from it to the end is zero (the zero window: the
 * end of the log); anything else fails with DOCRAFT_ECORRUPT naming the file, the
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
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"

#define RETRY_MS 100


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

/* ---- the writer thread ---- */

/* Writer thread: after b's bytes, keeps the zero-filled window ahead of
 * them (refilled when less than half is left), so that later batches
 * overwrite allocated blocks inside the file's size and their fdatasync
 * has no size or allocation to commit. Best effort: a failed zero write
 * (a full disk) only ends the window early; the batch is not failed for
 * it. Sets b->zend_out and b->fsize_out. */
static void zero_ahead(const struct raftlog *l, struct rl_batch *b, int fd)
{
	static const uint8_t zeros[64 << 10];
	uint64_t end = b->off + b->buf.len;
	uint64_t z = b->rotate || b->zend < end ? end : b->zend;
	uint64_t fsize = b->rotate || b->fsize < end ? end : b->fsize;
	uint64_t target = end + RL_ZERO_WINDOW;
	if (target > l->segment_bytes)
		target = l->segment_bytes > end ? l->segment_bytes : end;
	if (z - end < RL_ZERO_WINDOW / 2 && target > z) {
		while (z < target) {
			size_t n = target - z < sizeof zeros ? (size_t)(target - z) : sizeof zeros;
			if (rl_write_all(fd, zeros, n, z) != 0) {
				/* The file may have grown by part of n. */
				struct stat sb;
				if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size > fsize)
					fsize = (uint64_t)sb.st_size;
				break;
			}
			z += n;
		}
		if (z > fsize)
			fsize = z;
	}
	b->zend_out = z;
	b->fsize_out = fsize;
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
			rl_seg_path(l, b->seg, path, sizeof path);
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0)
				e = errno;
			else {
				uint8_t h[RL_SEG_HDR];
				rl_seg_header(h, b->seg, b->seq);
				e = rl_write_all(fd, h, sizeof h, 0);
			}
		}
		if (e == 0)
			e = rl_write_all(fd, b->buf.data, b->buf.len, b->off);
		if (e == 0)
			zero_ahead(l, b, fd);
		if (e == 0 && fdatasync(fd) != 0)
			e = errno;
		if (e == 0 && fail != 0)
			e = fail; /* test hook: as if fdatasync failed, bytes written */
		if (e == 0 && b->rotate)
			e = rl_fsync_dir(l->dir);
		if (b->rotate) {
			if (e == 0) {
				b->new_fd = fd;
			} else if (fd >= 0) {
				/* The next write may not rotate (a smaller batch): a
				 * half-made segment must not follow the old one. */
				char path[4096];
				rl_seg_path(l, b->seg, path, sizeof path);
				close(fd);
				unlink(path);
				rl_fsync_dir(l->dir);
			}
		}
		b->err = e;
	}
	if (b->n_unlink > 0) {
		for (size_t i = 0; i < b->n_unlink; i++) {
			char path[4096];
			rl_seg_path(l, b->unlink[i], path, sizeof path);
			if (unlink(path) != 0)
				LOG_WARN("raftlog: unlink %s: %s", path, strerror(errno));
		}
		int e = rl_fsync_dir(l->dir);
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
				 "raftlog %s: write failed: %s", l->dir,
				 op->err != 0 ? strerror(op->err) : raft_strerror(op->status));
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
			if (b->cut_fd >= 0) {
				struct rl_seg *old = rl_seg_find(l, b->seg - 1);
				old->stale = false;
				old->zend = old->fsize = old->size;
			}
			rl_seg_push(l, b->seg, b->new_fd, b->off + b->buf.len, b->fsize_out);
			l->segs[l->nsegs - 1].zend = b->zend_out;
		} else {
			struct rl_seg *s = rl_seg_find(l, b->seg);
			s->size = b->off + b->buf.len;
			s->zend = b->zend_out;
			s->fsize = b->fsize_out;
		}
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
	if (!b->rotate && rl_seg_find(l, b->seg) != NULL)
		rl_seg_find(l, b->seg)->stale = true; /* bytes past its size, maybe */
	/* What the failed write left past the last segment's end is unknown:
	 * the next write zeroes ahead from its own end; its size is the file's. */
	struct rl_seg *last = &l->segs[l->nsegs - 1];
	struct stat sb;
	last->zend = last->size;
	if (fstat(last->fd, &sb) == 0 && (uint64_t)sb.st_size >= last->size)
		last->fsize = (uint64_t)sb.st_size;
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
				op->err = b->err;
				op_finish(l, op, code);
			} else if (s == 0 && (op->flags & RL_OP_SYNC)) {
				op->err = b->err;
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
		rl_group_keep(g, k);
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
			if (cur->stale || cur->fsize > cur->size) {
				b->cut_fd = cur->fd;
				b->cut_size = cur->size;
			}
		} else {
			b->seg = cur->seq;
			b->off = cur->size;
			b->fd = cur->fd;
			b->zend = cur->zend;
			b->fsize = cur->fsize;
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
		rl_group_unlink(l, g);
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
		uint64_t p = rl_group_pin(l->groups[i]);
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
		if (rl_group_pin(g) != oldest)
			continue;
		bool entries_pin = g->n > 0 && g->e[0].seg == oldest;
		if (entries_pin && g->queued != 0)
			continue; /* busy: its snapshots move it forward */
		if (rewrite_group(l, g, entries_pin) == 0)
			l->rewriting = true;
	}
}

/* ---- the public functions ---- */

static void log_free(struct raftlog *l)
{
	for (size_t i = 0; i < l->nsegs; i++)
		if (l->segs[i].fd >= 0)
			close(l->segs[i].fd);
	for (size_t i = 0; i < l->ngroups; i++)
		rl_group_free(l->groups[i]);
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
	rv = rl_recover(l, errmsg);
	if (rv == 0 && l->nsegs == 0)
		rv = rl_create_first_segment(l, 1, errmsg);
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

/* At close: the last segment's zero window goes (durably), so a closed
 * log's files end where their records do. If that fails, the zeros stay
 * (recovery reads them as the end of the log). */
static void trim_last(struct raftlog *l)
{
	struct rl_seg *s = &l->segs[l->nsegs - 1];
	if (s->fsize <= s->size || s->stale)
		return;
	if (ftruncate(s->fd, (off_t)s->size) != 0 || fdatasync(s->fd) != 0) {
		LOG_WARN("raftlog %s: cut of the zeros after segment %" PRIu64 ": %s", l->dir,
			 s->seq, strerror(errno));
		return;
	}
	s->zend = s->fsize = s->size;
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
	trim_last(l);
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
	if (!g->name_queued && g->queued == 0) { /* never written: nothing to record */
		rl_group_unlink(l, g);
		return 0;
	}
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
		st->disk_bytes += l->segs[i].fsize;
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
			live += RL_REC_HDR + 16 + g->ebytes;
	}
	st->live_bytes = live;
}
