/* raftlog: one append-only, segmented Raft log per tablet server, shared by
 * every Raft group (tablet replica) the server hosts, exposed to each group
 * as its own struct raft_io (C-Raft 0.15).
 *
 * (Design note: the top of raftlog/log.c, and docs/replication.md "The
 * shared Raft log", for the record format, group commit and the GC rule.)
 *
 * Threading: every function here runs on the thread of the loop given to
 * raftlog_open, as do every raft_io method and every callback. The log's
 * writes and fdatasyncs run on one writer thread of its own (not libuv's
 * threadpool, which RocksDB flushes and raft_uv share).
 *
 * Errors: functions return 0 or a DOCRAFT_* code (include/docraft/error.h)
 * with errmsg filled; the raft_io methods return RAFT_* codes and fill
 * io->errmsg, as raft expects. */
#ifndef DOCRAFT_RAFTLOG_RAFTLOG_H
#define DOCRAFT_RAFTLOG_RAFTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>
#include <uv.h>

#include "docraft/error.h" /* DOCRAFT_* codes, DOCRAFT_ERRMSG_SIZE (added) */

struct raftlog;

struct raftlog_options {
	const char *dir;          /* the log's directory (created if missing) */
	size_t segment_bytes;     /* segment file size; default RAFTLOG_SEGMENT_BYTES */
};
#define RAFTLOG_SEGMENT_BYTES (64u << 20)

/* Opens (creating) the log in o->dir: one recovery scan of every segment
 * builds every group's index (synchronous, on the calling loop thread; a
 * 300-group log opens in well under a second). A torn tail of the LAST
 * segment is cut at the last good record (logged at WARN with segment and
 * offset); a bad record anywhere else fails with DOCRAFT_ECORRUPT and an
 * errmsg naming the segment file, the offset and the groups whose records
 * surround it; nothing is ever dropped silently. Starts the writer thread.
 * On error *out is NULL and nothing needs closing. */
int raftlog_open(uv_loop_t *loop, const struct raftlog_options *o, struct raftlog **out,
		 char *errmsg);

/* Closes the log once every attached group io has been closed by raft
 * (raftlog_close refuses with DOCRAFT_EBUSY, cb not called, while one is
 * attached): waits for the write in flight, stops the writer thread, closes
 * files; cb runs on a later loop turn and the memory is freed after it.
 * Nothing durable is lost: every append whose callback said 0 is on disk. */
typedef void (*raftlog_close_cb)(struct raftlog *l, void *arg);
int raftlog_close(struct raftlog *l, raftlog_close_cb cb, void *arg);

/* Removes a group (a replica deleted from this server) for good: a durable
 * REMOVE record; its entries become garbage for the GC; a later group with
 * the same name starts empty. The group must not be attached (DOCRAFT_EBUSY).
 * Unknown name: 0. Synchronous (waits for its record to be durable). */
int raftlog_group_remove(struct raftlog *l, const char *name, char *errmsg);

/* Whether the log holds state (a term, a vote, entries or a snapshot) for
 * the group. */
bool raftlog_group_exists(struct raftlog *l, const char *name);

struct raftlog_stats {
	uint64_t segments;         /* segment files on disk */
	uint64_t disk_bytes;       /* their total size (file sizes: the records
				    * and, while open, up to 1 MiB of zeros
				    * written ahead of the last one's end) */
	uint64_t live_bytes;       /* bytes of records some group still needs */
	uint64_t groups;           /* groups known, attached or not */
	uint64_t batches;          /* writes (each followed by one fdatasync) */
	uint64_t records;          /* records written */
	uint64_t appends;          /* raft_io append requests served */
	uint64_t bytes_written;
	uint64_t segments_removed; /* by the GC */
	uint64_t rewrites;         /* groups whose live tail was rewritten forward */
	uint64_t write_errors;     /* failed writes or fdatasyncs */
	uint64_t sync_ns_total;    /* time spent in write + fdatasync */
};
void raftlog_stats(const struct raftlog *l, struct raftlog_stats *st);

/* ---- one group's raft_io ----------------------------------------------------
 *
 * struct raftlog_io is the raft_io of one group: term, vote, entries and
 * snapshots go to the shared log; the network (init's transport part, start's
 * tick timer and receive path, send, close, time, random) goes to `net`, a
 * raft_io the caller set up (raft_uv_init on the shared-port transport, with
 * a directory that raft_uv uses for nothing: its metadata and segments are
 * never written because its storage methods are never called). async_work
 * runs on libuv's threadpool. Version 2.
 *
 *   raftlog_io_init(&x, l, "tablet-id", &uvio, errmsg);
 *   (rio_wrap(&g, &x.io) — optional)
 *   raft_init(&r, &x.io or &g.io, fsm, id, address);
 *   raft_bootstrap / raft_start / ...
 *   raft_close(&r, cb);  in cb (or later): raftlog_io_release(&x) then
 *                        raft_uv_close(&uvio), transport_close(...)
 *
 * Durability: set_term, set_vote, bootstrap and recover return only when their
 * record is durable (they wait on the loop thread for the writer; raft_uv
 * blocks the same way). An append's callback fires after the write and
 * fdatasync of the batch holding it. truncate(index) is ordered before every
 * later append of the group. snapshot_put stores the (small, marker) snapshot
 * as a record and lets the group's entries below index - trailing go
 * (trailing 0: an installed snapshot, every entry goes); snapshot_get returns
 * the newest one. load returns the group's term, vote, newest snapshot and
 * every entry it still holds (raft_malloc'd, as raft frees them).
 *
 * Append failure (ENOSPC, EIO): the batch's appends, and every append of the
 * same groups queued after it, complete with RAFT_NOSPACE / RAFT_IOERR and an
 * errmsg; the group's on-disk log ends before the first failed index (stale
 * bytes past the durable end are never read back as records). The next write
 * is tried again for later appends.
 *
 * One attached io per group name at a time (raftlog_io_init says DOCRAFT_EBUSY
 * otherwise). Ownership: the caller owns x and net; both stay at the same
 * address until raft's close callback has fired. */
struct raftlog_io {
	struct raft_io io;          /* hand &x->io to raft (or to rio_wrap) */
	struct raft_io *net;        /* network io, not owned */
	struct raftlog *log;
	struct raftlog_group *group;
	raft_io_close_cb close_cb;
	raft_io_tick_cb tick_cb;
	raft_io_recv_cb recv_cb;
	bool attached;
	/* Added by the engine (not in the first contract): */
	bool closing;               /* raft closed it; waiting for queued records */
	bool net_closed;            /* net's close callback came; raft's waits
				       until the group has nothing queued */
	struct raft *raft;          /* raftlog_io_set_raft, or NULL */
};

/* Attaches group `name` (1..64 printable bytes; created empty if unknown)
 * and fills x->io. Returns 0 or DOCRAFT_EINVAL / DOCRAFT_EBUSY with errmsg.
 * Loop thread; before raft_init. */
int raftlog_io_init(struct raftlog_io *x, struct raftlog *l, const char *name,
		    struct raft_io *net, char *errmsg);

/* Optional (added by the engine): the raft instance using x, so that an
 * append can be checked against raft's own index (raft_last_index(r) - n
 * + 1 must be the group's next index; a follower whose write failed keeps
 * the failed entries in memory and would otherwise have its next entries
 * stored at the wrong index, as raft_uv 0.15 does). Without it appends are
 * numbered by the log alone. Loop thread; after raft_init, before
 * raft_start. */
void raftlog_io_set_raft(struct raftlog_io *x, struct raft *r);

/* Detaches after raft's close callback (the group's state stays in the log
 * for a later raftlog_io_init). Also valid if raft_init failed or was never
 * called. Idempotent. */
void raftlog_io_release(struct raftlog_io *x);

#endif
