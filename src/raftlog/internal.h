/* What log.c (the shared log: writer thread, batches, GC), group.c (the
 * in-memory index), recover.c (the scan at open) and io.c (a group's
 * raft_io) share. Internal to src/raftlog/ and its
 * white-box test. Everything runs on the loop thread unless it says the
 * writer thread. */
#ifndef DOCRAFT_RAFTLOG_INTERNAL_H
#define DOCRAFT_RAFTLOG_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "raftlog/raftlog.h"
#include "raftlog/record.h"

/* Where a durable record (or an entry's data) lives; seg 0: not durable. */
struct rl_loc {
	uint64_t seg;
	uint64_t off;
};

/* An entry of a group: its data is read back with pread when raft loads. */
struct rl_entry {
	uint64_t term;
	uint64_t seg;            /* 0 while its batch is not durable */
	uint64_t off;            /* file offset of the data */
	uint32_t len;
	uint8_t type;
};

struct raftlog_group {
	char name[RL_NAME_MAX + 1]; /* "" for a recovery placeholder */
	uint32_t id;
	uint64_t term, vote;
	struct rl_loc rec_group, rec_tv, rec_snap; /* durable records it needs */
	bool name_queued;        /* its GROUP record is queued or durable */
	bool has_snap;
	uint64_t snap_index, snap_term, snap_conf_index;
	uint8_t *snap_conf, *snap_data;
	uint32_t snap_conf_len, snap_data_len;
	uint64_t first;          /* index of e[0]; the next index when n == 0 */
	struct rl_entry *e;
	size_t n, cap;
	uint64_t ebytes;         /* sum over e[] of entry header + padded data */
	unsigned queued;         /* ops of this group not completed yet */
	bool removed;
	struct raftlog_io *io;   /* attached io, or NULL */
};

enum {
	RL_OP_SYNC = 1,          /* a caller waits for it (set_term, bootstrap...) */
	RL_OP_REWRITE = 2,       /* GC copy of durable state */
	RL_OP_GET = 4,           /* snapshot_get: no record, a deferred callback */
};

/* One record queued in a batch (and, after the write, a callback to fire). */
struct rl_op {
	struct rl_op *next;
	uint8_t type;            /* RL_REC_* */
	uint8_t flags;
	bool done;               /* RL_OP_SYNC: the write finished, status set */
	int status;
	int err;                 /* failed: the errno of the write or fdatasync */
	struct raftlog_group *g;
	size_t off, len;         /* the record's bytes in its batch's buffer */
	uint64_t term, vote;     /* TERM_VOTE (applied to g when durable) */
	uint64_t index;          /* SNAPSHOT: its index */
	struct raft_io_append *areq;
	raft_io_append_cb acb;
	struct raft_io_snapshot_put *sreq;
	raft_io_snapshot_put_cb scb;
	struct raft_io_snapshot_get *greq;
	raft_io_snapshot_get_cb gcb;
	struct raft_snapshot *gsnap;
};

/* One write: a batch header, the records of its ops; or only unlinks. */
struct rl_batch {
	uint64_t seq;
	struct buf buf;          /* RL_BATCH_HDR bytes, then the records */
	struct rl_op *head, **tail;
	/* placement, decided at submit */
	uint64_t seg;
	uint64_t off;
	bool rotate;             /* create segment seg first */
	int fd;                  /* the current segment's fd (not rotate) */
	/* segments to unlink after the write (their fds already closed) */
	uint64_t *unlink;
	size_t n_unlink;
	int cut_fd;              /* rotate: first cut the old segment ... */
	uint64_t cut_size;       /* ... to its durable size (zeros, failed bytes) */
	uint64_t zend;           /* not rotate: bytes [off, zend) are zeros */
	uint64_t fsize;          /* not rotate: the segment's file size */
	/* writer thread results */
	int err;                 /* errno of the failed write/fdatasync, 0 */
	int new_fd;
	uint64_t zend_out;       /* written: [end of the batch, zend_out) are zeros */
	uint64_t fsize_out;      /* written: the file size of segment seg */
	uint64_t ns;
};

/* The zero-filled window the writer keeps ahead of the last segment's end
 * (see the design note in log.c): refilled to RL_ZERO_WINDOW ahead (at most
 * to segment_bytes) when less than half of it is left. */
#define RL_ZERO_WINDOW (1u << 20)

struct rl_seg {
	uint64_t seq;
	int fd;
	uint64_t size;           /* durable bytes (the records end there) */
	uint64_t zend;           /* [size, zend) are known zeros (>= size) */
	uint64_t fsize;          /* the file's size: size, or the end of the zeros
				  * or of a failed write's bytes (>= zend) */
	bool stale;              /* a failed write may have left bytes past size */
};

struct raftlog {
	uv_loop_t *loop;
	char *dir;
	size_t segment_bytes;
	struct rl_seg *segs;     /* in order, seqs contiguous */
	size_t nsegs, segcap;
	struct raftlog_group **groups;
	size_t ngroups, gcap;
	uint32_t next_id;        /* never reused; at most RL_GROUP_ID_MAX */
	uint64_t durable_seq;    /* seq of the last durable batch */
	struct rl_batch *pending, *inflight;
	struct rl_op *ready, **ready_tail; /* callbacks to fire, in order */
	uv_prepare_t prepare;
	uv_async_t async;
	uv_timer_t retry;
	bool backoff;            /* after a failed write: wait for the timer */
	bool gc_planned;
	uint64_t gc_below;       /* unlink segments below this seq ... */
	uint64_t gc_after;       /* ... once this batch seq is durable */
	bool rewriting;          /* GC rewrites queued or in flight */
	bool gc_due;             /* a batch may have unpinned segments */
	/* writer thread */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	struct rl_batch *job;    /* handed to the writer (mu) */
	bool job_done;           /* (mu) */
	bool stop;               /* (mu) */
	int fail_next;           /* test hook: errno the next write fails with */
	unsigned attached;
	bool closing;
	int handles_open;
	raftlog_close_cb close_cb;
	void *close_arg;
	struct raftlog_stats st;
};

/* ---- log.c, for io.c ---- */

/* The group named name, or NULL (removed groups are not found). */
struct raftlog_group *rl_group_find(struct raftlog *l, const char *name);
/* Finds or creates (empty) the group; NULL once RL_GROUP_ID_MAX ids were
 * issued. */
struct raftlog_group *rl_group_get(struct raftlog *l, const char *name);
/* A new op of group g (g may be NULL for none) appended to the pending batch;
 * its record is the bytes the caller appends to rl_pending_buf() right
 * after this call and before rl_op_end. Queues g's GROUP record first if
 * it has none. */
struct rl_op *rl_op_begin(struct raftlog *l, struct raftlog_group *g, uint8_t type,
			  uint8_t flags);
struct buf *rl_pending_buf(struct raftlog *l);
void rl_op_end(struct raftlog *l, struct rl_op *op);
/* An op with no record whose callback fires on a later loop turn. */
void rl_op_defer(struct raftlog *l, struct rl_op *op);
/* Waits (blocking the loop thread) until op, a queued RL_OP_SYNC op, is
 * written; returns its status (a RAFT_* code) and frees it. */
int rl_op_wait(struct raftlog *l, struct rl_op *op);
/* Keeps g's first n entries (if it has more). */
void rl_group_keep(struct raftlog_group *g, size_t n);
/* Drops g's entries from index on (in memory). */
void rl_group_truncate(struct raftlog_group *g, uint64_t index);
/* Drops g's entries below index (all if index is 0: an installed snapshot
 * at snap_index, the next index then being snap_index + 1). */
void rl_group_drop_below(struct raftlog_group *g, uint64_t index, uint64_t snap_index);
/* Appends an entry (not durable yet) to g's index. */
void rl_group_push(struct raftlog_group *g, uint64_t term, uint8_t type, uint32_t len);
/* Reads len bytes of entry data at (seg, off) into p: 0 or RAFT_IOERR. */
int rl_read(struct raftlog *l, uint64_t seg, uint64_t off, void *p, size_t len, char *errmsg);
/* Sets the group's snapshot copy (conf and data copied). */
void rl_group_set_snapshot(struct raftlog_group *g, uint64_t index, uint64_t term,
			   uint64_t conf_index, const void *conf, uint32_t conf_len,
			   const void *data, uint32_t data_len);
/* Called by io.c when the group's last queued op has completed. */
void rl_io_idle(struct raftlog_io *x);

/* ---- group.c: the index, segments, file helpers ---- */

void rl_seg_path(const struct raftlog *l, uint64_t seq, char *out, size_t cap);
/* A new group (name_len bytes of name; "" for a recovery placeholder). */
struct raftlog_group *rl_group_new(struct raftlog *l, uint32_t id, const char *name,
				   size_t name_len);
void rl_group_free(struct raftlog_group *g);
/* Takes g out of the log's list and frees it. */
void rl_group_unlink(struct raftlog *l, struct raftlog_group *g);
/* The oldest segment g needs a record in (UINT64_MAX: none). */
uint64_t rl_group_pin(const struct raftlog_group *g);
struct rl_seg *rl_seg_find(struct raftlog *l, uint64_t seq);
/* Appends segment seq: size durable bytes, a file of fsize bytes whose
 * bytes past size are zeros. */
void rl_seg_push(struct raftlog *l, uint64_t seq, int fd, uint64_t size, uint64_t fsize);
/* pwrite of all n bytes at off: 0 or an errno. Any thread. */
int rl_write_all(int fd, const uint8_t *p, size_t n, uint64_t off);
/* fsync of a directory: 0 or an errno. Any thread. */
int rl_fsync_dir(const char *dir);

/* ---- recover.c ---- */

/* Replays every segment of l->dir into l (groups, segments, durable_seq). */
int rl_recover(struct raftlog *l, char *errmsg);
/* Creates segment seq holding only its header, durably. */
int rl_create_first_segment(struct raftlog *l, uint64_t seq, char *errmsg);

/* ---- test hooks (tests/raftlog/test_engine.c) ---- */

/* The next write's fdatasync "fails" with errno e (its bytes are written). */
void raftlog_test_fail_next_write(struct raftlog *l, int e);

#endif
