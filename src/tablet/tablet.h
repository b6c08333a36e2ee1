/* A tablet replica: one C-Raft group whose state machine is a DocDB store.
 *
 *   client write ──► queue ──(group commit, one hybrid time)──► raft_apply
 *                                                      │ committed
 *   every replica: fsm apply ─► store_apply_parts(batch, retry records,
 *                                                  applied index) ─► answer
 *
 * Lifecycle: tablet_open (creates dir/db, opens the store and the replica's
 * Raft io behind the rio guard and the shared-port transport: its group of
 * the server's shared Raft log (raft_log), or a raft_uv of its own in
 * dir/raft) →
 * [tablet_bootstrap on first start, same configuration on every replica] →
 * tablet_start → ... → tablet_close. A replica whose raft group becomes
 * unavailable, fails to apply, or (as leader) fails to write its Raft log is
 * FAILED: its raft instance is closed (a leader steps down), the failure is
 * logged and reported (tablet_status: errmsg, failures), and it retries
 * with backoff to reopen its store and restart raft (recoveries).
 *
 * Leadership: each loop turn the tablet polls raft_state. On becoming leader
 * it appends a barrier (rio_on_leader); only once that barrier has applied
 * is the leader READY: every entry of earlier terms is applied, the hybrid
 * clock is past every applied write, and writes and reads are served.
 * Requests that reach a replica that is not a ready leader fail with
 * DOCRAFT_ENOTLEADER; tablet_leader gives the hint.
 *
 * Writes: DocDB batches with a client id and sequence number. Requests
 * queued while max_inflight entries wait for their majority go into the next
 * Raft entry together (group commit, capped by size). A retried (client id,
 * seq) that was decided is answered at once with its outcome and is never
 * applied twice; one that is still in flight
 * is answered with the original. DOCRAFT_ELEADERLOST means the outcome is
 * unknown: the entry may still commit; retry with the same id.
 *
 * Redis writes (issue 17) carry Redis commands instead of a batch
 * (entry.h's encoding); every replica runs them where their entry applies
 * (one yedis txn per entry, fsm_redis.c), and the leader answers each with
 * its replies. They group with each other into entries, never with batch
 * writes (the group ends where the kind changes). A retry of a decided one
 * is answered with its first replies, kept in the replicated state with
 * its retry record (also after a restart or a leader change).
 *
 * Conditional writes carry conditions (docdb/condition.h). Such a write goes
 * into a Raft entry of its own (the group before it is proposed first), and
 * every replica evaluates its conditions when it applies that entry, at the
 * entry's hybrid time, against the store holding exactly the entries before
 * it: all true, its batch applies; else nothing of it does. Either outcome
 * is recorded in the retry table, so it is linearizable, identical on every
 * replica, and a retry is answered with it (DOCRAFT_ECONDITION or ok).
 *
 * Reads (linearizable): a ready leader that holds a lease (below) answers
 * a read on its next loop turn; otherwise the read waits for a Raft barrier
 * issued after it arrived to apply (one barrier serves every read queued
 * before it). Either way it gets a read hybrid time: the leader's safe time,
 * below every write still in flight, so a later read at the same time sees
 * the same data. The caller then reads tablet_store() at that time on the
 * loop thread and, before answering, asks tablet_read_confirm() whether the
 * lease still held once it had read (a process paused between the two must
 * not answer from a store that another leader has since overtaken).
 *
 * Leader lease (YugabyteDB's leader leases, built on C-Raft 0.15 without
 * touching it; c-raft.md §4.5): an entry of this leadership proposed at time
 * S (CLOCK_BOOTTIME, or a raft host's clock; taken before raft_apply /
 * raft_barrier) that commits was stored by a majority, each of which
 * received it at or after S and reset its election timer then. 0.15 followers that know a leader refuse every
 * RequestVote and pre-vote (recv_request_vote.c) until that timer, at least
 * election_ms, runs out; so no other leader can be elected before
 * S + election_ms. The lease runs until S + lease_ms, lease_ms < election_ms
 * (default 7/10 of it: the rest covers clock-rate drift and follower loop
 * stalls between reading a message and stamping its arrival). Every write
 * entry, read barrier and leader barrier that commits renews it; a leader
 * serving reads with no writes proposes a barrier when less than half of the
 * lease is left. What would break the argument is handled: a replica that
 * restarts forgot its leader and could vote at once, so rio drops
 * RequestVotes for election_ms after a non-fresh start (rio_set_vote_quiet);
 * a leadership transfer makes followers vote at once (TimeoutNow), so a
 * leadership that started a transfer never uses its lease again; a lost
 * leadership (epoch) drops it. lease_ms 0 turns leases off.
 *
 * Durability: RocksDB's WAL is off; the applied index is recorded in every
 * RocksDB write. Raft snapshots are markers taken only after RocksDB has
 * flushed up to their index (fsm v3 snapshot_async), so the log is truncated
 * only below what is durable. A follower whose log fell behind the leader's
 * snapshot copies a checkpoint of a healthy replica (remote_copy.h) and then
 * rejoins.
 *
 * Threading: everything here runs on the loop thread of the tablet (the
 * server's loop), except where a prototype says otherwise. A call that takes
 * a callback and fails synchronously never calls it; callbacks never run
 * inside the call that registered them. */
#ifndef DOCRAFT_TABLET_TABLET_H
#define DOCRAFT_TABLET_TABLET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>
#include <uv.h>

#include "common/lathist.h"
#include "docraft/error.h"
#include "docdb/store.h"
#include "tablet/entry.h"

struct tablet;
struct listener;
struct copy_server;
struct diskspace;
struct raftlog;
struct tablet_options;
struct rmux;

#define TABLET_LEASE_AUTO UINT32_MAX

/* The bytes C-Raft 0.15 may keep in memory for the Raft logs of a process's
 * replicas (it never reads its log back from disk: every entry since the
 * last snapshot, plus the trailing ones, stays in memory). Each replica's
 * share is max(floor_bytes, total_bytes / replicas), read at every check,
 * so it follows the count as replicas come and go (tablet_raft.c, "Raft
 * log memory"). Owned by whoever hosts the replicas (the manager); read and
 * written on the loop thread only. */
struct tablet_log_budget {
	uint64_t total_bytes;
	uint64_t floor_bytes;
	unsigned replicas;
};

/* A raft instance made and owned outside the tablet, on a Raft io the
 * tablet does not know: C-Raft's raft_fixture, whose servers embed their
 * struct raft and whose io has its own virtual clock (tests/tablet/
 * tablet_fixture.h is the one host). Production leaves
 * tablet_options.raft_host NULL. The host outlives every tablet it hosts.
 * Every function runs on the tablet's loop thread. */
struct tablet_raft_host {
	/* At the replica's raft setup: r, raft_init'ed on the host's io with
	 * fsm (the replica's state machine; the host may clear its
	 * snapshot_async when its io has no threadpool), o->raft_id and
	 * o->address, neither bootstrapped nor started; the tablet wraps its
	 * io with rio (rio_wrap_fixture). Non-zero (a DOCRAFT_* code, errmsg
	 * set) fails the setup. */
	int (*open)(struct tablet_raft_host *h, const struct tablet_options *o,
		    struct raft_fsm *fsm, struct raft **r, char *errmsg);
	/* Instead of raft_close(r, cb): r is (or will be) closed by the host;
	 * cb(r) runs once it is, never from inside this call. */
	void (*close)(struct tablet_raft_host *h, struct raft *r, void (*cb)(struct raft *r));
	/* NULL, or the leases' clock in ns instead of CLOCK_BOOTTIME: the one
	 * raft's io->time runs on, so a lease and the election timers it
	 * relies on count the same time. */
	uint64_t (*clock_ns)(struct tablet_raft_host *h);
	/* NULL, or the hybrid clock's physical time (hlc.h, µs since the
	 * epoch) instead of the wall clock. */
	uint64_t (*hlc_clock_us)(void *h); /* h is the host */
};

/* The smallest share of a replica (a budget split among more replicas than
 * total / floor gives each the floor: the total is then exceeded). */
#define TABLET_LOG_FLOOR_BYTES (256u << 10)

struct tablet_options {
	const char *id;           /* tablet id, 1..64 printable characters */
	const char *dir;          /* data directory (created): dir/raft, dir/db */
	raft_id raft_id;          /* this replica's id in the group */
	const char *address;      /* this replica's address: its server "ip:port" */
	struct listener *listener;     /* the server's port (raft + copy traffic) */
	struct copy_server *copy;      /* registers the store as a copy source; may be NULL */
	unsigned heartbeat_ms;         /* default 100 */
	unsigned election_ms;          /* default 1000 */
	unsigned snapshot_threshold;   /* entries; default 4096 */
	unsigned snapshot_trailing;    /* entries; default 8192 (at most: see below) */
	const struct tablet_log_budget *log_budget; /* this replica's share of the Raft
					* log memory; borrowed, must outlive the tablet;
					* NULL: log_memory_bytes */
	uint64_t log_memory_bytes;     /* without log_budget: the share itself; 0 (default):
					* no byte bound, entry counts only */
	uint64_t max_clock_skew_us;    /* default 500 ms */
	unsigned lease_ms;             /* leader lease; TABLET_LEASE_AUTO (default):
					* election_ms * 7 / 10; 0: off (every read
					* waits for a barrier); at most that */
	size_t max_entry_bytes;        /* group commit cap; default 4 MiB (one request
					  alone: up to 1 MiB more, tablet_write.c) */
	unsigned max_inflight;         /* entries proposed and not yet applied before
					* the next one is proposed; default 1 */
	/* The server's shared Raft log (raftlog/raftlog.h): this replica's
	 * term, vote, entries and snapshots go there as group `id`, its Raft
	 * messages through rnet (raft/rnet.h) on the shared-port transport.
	 * Borrowed: open, on this loop, until the tablet's close callback.
	 * NULL: a raft_uv instance of the replica's own in dir/raft
	 * (`--raft-log per-tablet`). */
	struct raftlog *raft_log;
	/* Tests: a raft instance hosted outside (struct tablet_raft_host, on
	 * raft_fixture); then raft_log, listener and copy are not used. NULL
	 * in production. Borrowed. */
	struct tablet_raft_host *raft_host;
	/* With raft_log: the server's Raft multiplexer (raft/rmux.h) the
	 * replica's messages go through (rnet_set_mux); borrowed, open until
	 * the tablet's close callback. NULL: rnet's own connections. */
	struct rmux *raft_mux;
	size_t segment_bytes;          /* raft_uv segment size, a multiple of 4 KiB;
					* default TABLET_SEGMENT_BYTES; per-tablet only */
	const struct diskspace *disk;  /* NULL: none; else below its floor the replica
					* fails itself, and recovers only above its
					* reserve (diskspace.h); borrowed */
	struct store_options store;    /* options of the DocDB store */
	struct store *opened_store;    /* NULL: tablet_open prepares dir and opens dir/db
					* itself; else the store tablet_prepare opened
					* (e.g. on the threadpool), which tablet_open
					* takes over, also when it fails */
	uint64_t retry_ttl_us;         /* retry records' window (retry.h), the same
					* on every replica; default
					* RETRY_DEFAULT_TTL_US; 0: never expire */
};

/* raft_uv's own default. Every segment rotation costs the loop thread one
 * io_destroy(2) in 0.15's writer close, which waits for an RCU grace period
 * (~35 ms on the benchmark VM) and stalls every tablet of the process: with
 * 1 MiB segments a write-heavy tablet rotated three times a second and that
 * stall was the whole p99 (docs/benchmarks.md). The price is disk: raft_uv
 * pre-allocates up to two segments beside the open one, 24 MiB per replica. */
#define TABLET_SEGMENT_BYTES (8u << 20)

/* Backoff of a failed replica's recovery attempts: the first delay, doubled
 * up to the last (tablet_recover.c's recovery, manager.c's reopen of a replica that
 * failed to open). */
#define TABLET_RECOVER_FIRST_MS 250u
#define TABLET_RECOVER_MAX_MS 8000u

void tablet_options_default(struct tablet_options *o);

/* The blocking half of tablet_open: creates o->dir (and dir/raft without
 * a shared log), removes
 * the leftovers of an interrupted copy and opens the store dir/db into *out
 * (pass it as o->opened_store). Any thread (the manager runs it on libuv's
 * threadpool); touches nothing but those files. On error *out is NULL. */
int tablet_prepare(const struct tablet_options *o, struct store **out, char *errmsg);

/* Opens the replica's store and raft instance (not started). On error *out
 * is NULL and errmsg says why. */
int tablet_open(uv_loop_t *loop, const struct tablet_options *o, struct tablet **out,
		char *errmsg);

/* One replica of the initial configuration. */
struct tablet_peer {
	raft_id id;
	const char *address;
	int role; /* RAFT_VOTER, RAFT_STANDBY or RAFT_SPARE */
};

/* Writes the initial configuration (identical on every replica) before the
 * first tablet_start. Returns 0 if the replica already had one. */
int tablet_bootstrap(struct tablet *t, const struct tablet_peer *peers, size_t n, char *errmsg);
int tablet_start(struct tablet *t, char *errmsg);

/* Closes: pending requests fail with DOCRAFT_ECLOSED (writes in a Raft entry
 * with DOCRAFT_ELEADERLOST), raft and the store are closed, and cb runs on a
 * later loop turn; the tablet memory is freed after cb returns. */
typedef void (*tablet_close_cb)(struct tablet *t, void *arg);
void tablet_close(struct tablet *t, tablet_close_cb cb, void *arg);

/* ---- writes ------------------------------------------------------------- */

struct tablet_write;
/* status: 0, or DOCRAFT_ECONDITION (a condition was false where the entry
 * applied: nothing of the write applied; a definite outcome), or
 * DOCRAFT_ETOOOLD (its client's retry window expired, retry.h: a retry of
 * a request the tablet forgot; not applied, a definite outcome), or
 * DOCRAFT_ENOTLEADER / ELEADERLOST / ECLOSED / EUNAVAILABLE / ETOOBIG / EIO
 * ...; ht: the hybrid time the write applied at (status 0). */
typedef void (*tablet_write_cb)(struct tablet_write *req, int status, uint64_t ht);

struct tablet_write {
	void *data; /* caller's */
	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	uint64_t min_running;
	const void *batch; /* serialized DocDB batch, borrowed until cb */
	size_t batch_len;
	const void *cond;  /* condition blob (docdb/condition.h), borrowed until
			      cb; NULL / 0: an unconditional write */
	size_t cond_len;
	/* A Redis write: its commands (entry_redis_begin ..., 1 to
	 * ENTRY_REDIS_MAX_COMMANDS), borrowed until cb; batch and cond are then
	 * NULL / 0. NULL: a batch write. */
	const void *redis;
	size_t redis_len;
	/* A Redis write answered with status 0: its nreplies RESP replies
	 * (one per command, Redis's own errors included) concatenated in
	 * replies, reply_len[i] bytes each; set by the tablet just before cb,
	 * borrowed during cb only. */
	const uint8_t *replies;
	const uint32_t *reply_len;
	uint32_t nreplies;
	tablet_write_cb cb;
	/* private */
	struct tablet_write *next_;
	struct tablet_write *dups_; /* retries waiting for this request */
	uint64_t start_ns_;         /* uv_hrtime() at tablet_write (write_latency) */
	int status_;
	uint64_t ht_;
};

/* Queues a write. Synchronous errors (no callback): DOCRAFT_ECLOSED,
 * DOCRAFT_EUNAVAILABLE (a checkpoint copy is being fetched or installed),
 * DOCRAFT_EBUSY (the process's memtables are far over their budget,
 * store_env_busy: retry after a backoff),
 * DOCRAFT_ETOOBIG (batch and conditions larger than an entry may be),
 * DOCRAFT_EINVAL (no callback, a malformed condition blob or Redis
 * commands, a Redis write with a batch or conditions). */
int tablet_write(struct tablet *t, struct tablet_write *req);

/* ---- reads -------------------------------------------------------------- */

struct tablet_read;
/* status 0: read tablet_store(t) at read_ht now, on the loop thread. */
typedef void (*tablet_read_cb)(struct tablet_read *req, int status, uint64_t read_ht);

struct tablet_read {
	void *data;
	tablet_read_cb cb;
	bool barrier; /* wait for a barrier even under a lease (a step-down
			 proves with it that a follower just answered) */
	/* private */
	struct tablet_read *next_;
	bool lease_;     /* answered under the lease */
	uint64_t start_ns_; /* uv_hrtime() at tablet_read (read_latency) */
	uint64_t epoch_; /* ... of this leadership */
};

/* Queues a linearizable read (see the top of this file). Synchronous
 * errors: DOCRAFT_ECLOSED, DOCRAFT_EUNAVAILABLE (copying), DOCRAFT_EINVAL. */
int tablet_read(struct tablet *t, struct tablet_read *req);

/* After reading at the time req's callback gave (status 0), before
 * answering: true if the answer may go out, false if the lease that served
 * req ran out meanwhile (then read again with req->barrier set). Always true
 * for a read served by a barrier. Loop thread. */
bool tablet_read_confirm(struct tablet *t, const struct tablet_read *req);

/* ---- membership and leadership ----------------------------------------- */

typedef void (*tablet_change_cb)(void *arg, int status);

/* Adds a replica (already seeded with a checkpoint, or empty: it then catches
 * up by copy) as a spare, then promotes it to voter. One change at a time. */
int tablet_add_replica(struct tablet *t, raft_id id, const char *address, tablet_change_cb cb,
		       void *arg, char *errmsg);
int tablet_remove_replica(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg,
			  char *errmsg);
/* Transfers leadership to id (0: any up-to-date voter). */
int tablet_transfer(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg, char *errmsg);

/* ---- state -------------------------------------------------------------- */

enum tablet_role {
	TABLET_FOLLOWER = 0,
	TABLET_CANDIDATE,
	TABLET_LEADER_NOT_READY,
	TABLET_LEADER,
	TABLET_COPYING,  /* fetching a checkpoint from a peer */
	TABLET_FAILED,
	TABLET_CLOSED,
};

struct tablet_status {
	enum tablet_role role;
	uint64_t term;
	raft_id leader_id;
	char leader_address[256];
	uint64_t last_index;
	uint64_t applied_index;
	uint64_t flushed_index;   /* applied index persisted in SST files at open */
	uint64_t replayed;        /* entries re-applied since open (> flushed) */
	uint64_t skipped;         /* entries at or below the store's marker */
	uint64_t entries;         /* entries this replica proposed as leader */
	uint64_t writes;          /* client writes it put in those entries */
	uint64_t copies;          /* checkpoint copies installed */
	uint64_t snapshot_index;  /* store index of the last Raft snapshot taken */
	uint64_t log_bytes;       /* entry bytes applied since the last snapshot */
	uint64_t byte_snapshots;  /* snapshots requested because log_bytes reached half
				   * of the replica's Raft log memory share */
	uint64_t first_index;     /* first entry Raft still holds (after the last snapshot's
				   * truncation); a replica behind it needs a snapshot */
	uint64_t lease_reads;     /* reads this replica answered under its lease */
	uint64_t barrier_reads;   /* ... and after a read barrier */
	uint64_t lease_barriers;  /* barriers proposed only to renew the lease */
	uint64_t lease_left_ms;   /* lease left now (0: none) */
	uint64_t failures;        /* times this replica went FAILED (disk errors, ...) */
	uint64_t recoveries;      /* times it recovered from FAILED (tablet_recover.c) */
	char errmsg[DOCRAFT_ERRMSG_SIZE]; /* why FAILED; after a recovery, why it last
					   * failed ("" if it never did) */
	/* For /metrics (docs/operations.md). */
	uint64_t commit_index;    /* highest entry this replica knows committed */
	uint64_t elections_won;   /* times this replica became leader */
	uint64_t leader_changes;  /* times it became or stopped being leader */
	uint64_t pending_writes;  /* writes queued or in flight, not answered, now */
	uint64_t pending_reads;   /* reads waiting for a barrier, now */
	uint64_t retry_records;   /* (client, seq) pairs in the retry table, now */
	uint64_t guard_dropped;   /* Raft messages the message guard dropped (raft/rio.h) */
	struct lathist write_latency; /* acknowledged writes: tablet_write to the answer */
	struct lathist read_latency;  /* reads: tablet_read to the answer */
};

void tablet_get_status(struct tablet *t, struct tablet_status *st);
const char *tablet_id(const struct tablet *t);
const char *tablet_role_name(enum tablet_role r);
/* The leader as this replica knows it (0 / "" when unknown). */
raft_id tablet_leader(struct tablet *t, const char **address);
/* The replica's store; NULL while none is open: a checkpoint copy being
 * installed or a store being reopened (both on the threadpool: the role
 * is then COPYING or FAILED), after a failed install, and once closing. */
struct store *tablet_store(struct tablet *t);
/* A new time of the tablet's hybrid clock (hlc_now): on a ready leader,
 * above every write the tablet applied, whoever proposed it. */
uint64_t tablet_now(struct tablet *t);
/* The Raft configuration this replica holds now (raft's current one: the
 * last appended, committed or not) in *conf, borrowed until the next loop
 * turn, and the index of its entry in *index; false (nothing set) while
 * raft is not running (copying, failed, closing) or before the replica has
 * any configuration (a new replica joining). Loop thread. */
bool tablet_configuration(struct tablet *t, const struct raft_configuration **conf,
			  uint64_t *index);
/* Forces a Raft snapshot soon (tests, admin). */
void tablet_request_snapshot(struct tablet *t);

#endif
