/* The tablet manager: every tablet replica a tablet server hosts.
 *
 * On disk (docs/cluster.md, "Tablet servers"): DIR/tablets/<tablet_id>/ is a
 * replica's tablet dir (raft/, db/ of tablet.h) and DIR/tablets/<id>/meta.pb
 * the CreateTabletRequest that created it (schema, raft id, peers, join),
 * written atomically (tmp + fsync + rename + fsync of the directory) before
 * the tablet is first opened. manager_init reopens every replica that has a
 * meta.pb; a directory without one (the remains of an interrupted create or
 * delete, or a replica whose meta.pb was lost) is moved aside to
 * DIR/tablets.orphan/<id>.<unix time> and logged, never deleted. A deleted
 * replica loses its meta.pb first, then its directory.
 *
 * Each replica keeps what the tablet server needs beside its tablet: the
 * table schema (from the meta's TableSchema), its raft id, its partition
 * [part_start, part_end) of the 16-bit hash space (the service refuses keys
 * outside it), and the list-index counter for list appends/prepends
 * (docwrite.h), see manager_list_counter.
 *
 * Partitions: a CreateTabletRequest must carry one (partition_end 0 is
 * refused: every sender in this repository gives it). A meta.pb written
 * before partitions existed has none; such a replica is opened with the
 * full range [0, 65536) and a warning, since nothing on this server knows
 * better (the master still routes by its own catalog).
 *
 * A replica that cannot be opened stays listed as FAILED with the reason:
 * it is reported, never served, and its files are left alone. If its
 * meta.pb is sound (decodes, names this tablet, valid schema) but the open
 * failed (RocksDB or raft_uv refused: a full disk, an I/O error), it
 * retries by itself with backoff (TABLET_RECOVER_FIRST_MS doubling to
 * TABLET_RECOVER_MAX_MS, postponed while the disk is below its reserve,
 * diskspace_may_recover), each attempt a "reopen" job like a create's
 * (store on the threadpool, raft on the loop) without a meta.pb write; the
 * report counts the failed attempts (failures) and a successful reopen
 * (recoveries). A replica whose meta.pb is unreadable or wrong stays
 * FAILED until it is deleted (retrying cannot help; the log says so).
 *
 * Nothing long on the loop thread (docs/reliability.md, "Loop lag"): a
 * create writes meta.pb and opens the new store on libuv's threadpool (at
 * most MANAGER_CREATE_JOBS at once, so raft_uv's own pool work never waits
 * behind a batch of creates), then opens the tablet's raft instance on the
 * loop, one replica per loop turn; a delete removes the files on the
 * threadpool. Meanwhile the replica is CREATING or CLOSING: invisible to
 * manager_find, named by manager_busy.
 *
 * Threading: everything runs on the loop thread; callbacks never run inside
 * the call that registered them. */
#ifndef DOCRAFT_TSERVER_MANAGER_H
#define DOCRAFT_TSERVER_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/arena.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"

struct diskspace;
#include "docraft/error.h"
#include "net/listener.h"
#include "tablet/tablet.h"

struct copy_server;
struct manager;

#define MANAGER_META_FILE "meta.pb"
/* The longest CreateTabletRequest.table_id accepted. */
#define MANAGER_TABLE_ID_MAX 64

enum replica_state {
	REPLICA_OPEN = 1, /* tablet open and started */
	REPLICA_FAILED,   /* could not be opened: reported, never served */
	REPLICA_CLOSING,  /* being deleted or the manager is closing: invisible */
	REPLICA_CREATING, /* manager_create in progress: invisible */
};

/* Create jobs on the threadpool at once (libuv's pool has 4 threads by
 * default, shared with raft_uv and copies). */
#define MANAGER_CREATE_JOBS 2

/* One hosted replica. Fields are read-only outside manager.c, except
 * `pending`, which belongs to the RPC service. */
struct replica {
	char id[LISTENER_TABLET_ID_MAX + 1];
	char *dir;             /* DIR/tablets/<id> */
	enum replica_state state;
	struct tablet *t;      /* OPEN and CLOSING: the tablet; FAILED: NULL */
	struct schema schema;  /* the table's schema (OPEN and CLOSING) */
	bool has_schema;
	uint64_t raft_id;
	bool join;             /* created as a new replica of an existing group */
	uint32_t part_start;   /* partition [part_start, part_end) of the hash space */
	uint32_t part_end;     /* 1..65536 */
	/* The master's id of the table (CreateTabletRequest.table_id, kept in
	 * meta.pb): requests naming another table id are refused (service.c).
	 * "": created by an older master, not checked. */
	char table_id[MANAGER_TABLE_ID_MAX + 1];
	char errmsg[DOCRAFT_ERRMSG_SIZE]; /* FAILED: why */
	unsigned pending;      /* the service's requests in flight on it */

	/* Private. */
	int64_t list_counter;
	struct manager *m;
	struct replica *next;
	struct mgr_waiter *waiters; /* manager_delete callers */
	struct mgr_waiter *create_waiters; /* CREATING: manager_create callers */
	struct mgr_job *job;        /* CREATING: the create in progress */
	bool remove_files;          /* CLOSING: delete the directory once closed;
				       CREATING: deleted meanwhile */
	bool tablet_closing;        /* tablet_close called */
	/* FAILED with a sound meta.pb (see the top): the decoded meta.pb a
	 * reopen uses, the next attempt (uv_now; 0: none pending) and the
	 * counters the report adds. r->job is the reopen job while one runs. */
	Docraft__CreateTabletRequest *meta;
	uint64_t reopen_at;
	unsigned reopen_attempts;
	uint64_t open_failures, reopens;
};

struct manager_options {
	const char *data_dir;         /* DIR (exists): replicas live in DIR/tablets */
	const char *address;          /* this server's "ip:port", every replica's raft address */
	struct listener *listener;    /* the server's port */
	struct copy_server *copy;     /* offers every store for checkpoint copies; may be NULL */
	unsigned raft_heartbeat_ms;   /* 0: tablet default */
	unsigned election_ms;         /* 0: tablet default */
	unsigned lease_ms;            /* leader lease: 0: tablet default (7/10 of the
					 election timeout); MANAGER_LEASE_OFF: none */
	unsigned max_inflight;        /* entries in flight per tablet; 0: tablet default */
	/* The server's shared Raft log (raftlog/raftlog.h), open on loop, given
	 * to every replica (tablet_options.raft_log); borrowed: close it after
	 * the manager's close callback. A deleted replica's group is removed
	 * from it once its files are gone, and a create of a replica unknown
	 * here first removes a group of that name left by a delete that a
	 * crash interrupted. NULL: each replica has its own raft_uv log. */
	struct raftlog *raft_log;
	/* The server's Raft multiplexer (raft/rmux.h), with raft_log: given to
	 * every replica (tablet_options.raft_mux); borrowed, closed after the
	 * manager's close callback. NULL: one connection per group and peer. */
	struct rmux *raft_mux;
	size_t segment_bytes;         /* per-tablet raft_uv segment size; 0: tablet default */
	const struct diskspace *disk; /* free-space reserve (diskspace.h); NULL: none */
	unsigned max_clock_skew_ms;   /* each tablet's hybrid clock; 0: tablet default */
	/* The process's block cache and memtable budget (docdb/store_env.h)
	 * every replica's store joins; NULL: private RocksDB memory per store.
	 * Borrowed: it must outlive the manager (destroy it after the close
	 * callback). */
	struct store_env *store_env;
	unsigned retry_ttl_s;         /* retry records' window; 0: tablet default */
	unsigned history_retention_s; /* 0: store default */
	/* Replicas this server hosts at most (its open-file and AIO limits,
	 * tserver_main.c): a create past it answers DOCRAFT_EUNAVAILABLE, a
	 * retryable error, instead of failing half-way on EMFILE. 0: no cap. */
	size_t max_replicas;
	/* Raft log memory of all replicas together, split among those hosted
	 * (struct tablet_log_budget, at least TABLET_LOG_FLOOR_BYTES each);
	 * 0: no byte bound, entry counts only. */
	uint64_t raft_log_memory_bytes;
};

#define MANAGER_LEASE_OFF UINT32_MAX

typedef void (*manager_close_cb)(struct manager *m);
/* status 0 once the replica and its directory are gone. */
typedef void (*manager_delete_cb)(void *arg, int status);
/* status 0 once the replica is open (or already was). */
typedef void (*manager_create_cb)(void *arg, int status);

/* Private: callers allocate it, only manager.c touches the fields. */
struct manager {
	uv_loop_t *loop;
	char *data_dir, *tablets_dir, *address;
	struct manager_options o;
	struct tablet_log_budget log_budget; /* replicas: those on head */
	struct replica *head;
	size_t n_open;               /* replicas whose tablet is not closed yet */
	uv_timer_t defer;            /* runs deferred callbacks */
	struct mgr_waiter *deferred; /* callbacks to run from the loop */
	uv_idle_t opener;            /* opens one created replica per loop turn */
	uv_timer_t reopen;           /* the next reopen attempt of a FAILED replica */
	struct mgr_job *jobs_head, *jobs_tail; /* creates in order: queued, on
						  the pool, or ready to open */
	unsigned pool_creates;       /* create and reopen jobs on the threadpool */
	unsigned pool_jobs;          /* every job on the threadpool */
	bool closing;
	manager_close_cb close_cb;
};

/* Initializes m (caller memory, at a fixed address until the close
 * callback), creates DIR/tablets if needed and opens every replica found
 * there (one that fails is kept as FAILED and logged, and retries in the
 * background when its meta.pb is sound, see the top). Strings in o are
 * copied; listener and copy are borrowed and must outlive the manager.
 * Returns 0, or DOCRAFT_EIO / DOCRAFT_ENOSPC / DOCRAFT_EINVAL with errmsg
 * when DIR/tablets cannot be created or listed (checked before any replica
 * is opened); then nothing needs to be closed. */
int manager_init(struct manager *m, uv_loop_t *loop, const struct manager_options *o,
		 char *errmsg);

/* Creates the replica req describes: validates it (tablet id of 1..64
 * characters [A-Za-z0-9_.-] not starting with '.', a valid schema, a
 * non-zero raft id; without join, a peer list that names this raft id with
 * this server's address) synchronously; then, asynchronously, writes
 * meta.pb and opens the store (threadpool), opens the tablet, bootstraps it
 * with the peers (all voters) unless join, starts it (loop, one replica per
 * turn) and calls cb(arg, 0). req is copied.
 *
 * Idempotent: if the replica exists with the same raft id and partition,
 * cb(arg, 0) follows and nothing changes; if it is being created, cb gets
 * that create's outcome. Synchronous errors (cb never called, nothing left
 * behind): DOCRAFT_EINVAL (bad request, or the tablet exists with another
 * raft id or partition), DOCRAFT_EBUSY (a replica of that id is being
 * deleted: retry), DOCRAFT_EUNAVAILABLE (it exists but failed),
 * DOCRAFT_ECLOSED (manager closing). Through cb (nothing left behind):
 * DOCRAFT_EIO / DOCRAFT_ENOSPC (disk), DOCRAFT_ETABLETNOTFOUND (deleted
 * while being created), DOCRAFT_ECLOSED (manager closed meanwhile). */
int manager_create(struct manager *m, const Docraft__CreateTabletRequest *req,
		   manager_create_cb cb, void *arg, char *errmsg);

/* Deletes replica id: it disappears from lookups at once, its tablet is
 * closed (pending requests fail with DOCRAFT_ECLOSED), then meta.pb and
 * the directory are removed (threadpool), then its group of the shared Raft
 * log (raft_log; a synchronous, durable record on the loop), and cb(arg, 0)
 * runs. A delete of
 * a replica already being deleted waits for that one; of one being created,
 * the create is answered DOCRAFT_ETABLETNOTFOUND and whatever it made is
 * removed. Synchronous errors (cb never called): DOCRAFT_ETABLETNOTFOUND,
 * DOCRAFT_ECLOSED (manager closing). */
int manager_delete(struct manager *m, const char *id, manager_delete_cb cb, void *arg,
		   char *errmsg);

/* The OPEN or FAILED replica id, or NULL (unknown, being created or being
 * deleted). */
struct replica *manager_find(struct manager *m, const char *id);

/* "being created" or "being deleted" when replica id is (a request for it
 * deserves a retryable answer), else NULL. */
const char *manager_busy(struct manager *m, const char *id);

/* Calls fn(arg, r) for every OPEN or FAILED replica, in no particular
 * order. fn must not create or delete replicas. */
void manager_foreach(struct manager *m, void (*fn)(void *arg, struct replica *r), void *arg);

/* Fills *out (initialized here) with r's report: role, term, leader,
 * indexes. Strings point into r or into a. */
void manager_report(struct replica *r, Docraft__TabletReport *out, struct arena *a);

/* Reports of every OPEN or FAILED replica (manager_report), as an array in
 * a (*out; NULL when there is none); returns how many. */
size_t manager_reports(struct manager *m, struct arena *a, Docraft__TabletReport ***out);

/* The report's role words: follower, candidate, leader_not_ready, leader,
 * copying, failed, closed. Static strings. */
const char *manager_role_name(enum tablet_role role);

/* r's list-index counter (OPEN replicas), first raised to at least the
 * physical part of the tablet's hybrid clock (tablet_now), not the wall
 * clock: on a ready leader that clock is past every write the tablet
 * applied, so list indexes keep growing across leaders whatever their
 * clocks. Pass it to docwrite_init (it increments before each use). */
int64_t *manager_list_counter(struct replica *r);

bool manager_closing(const struct manager *m);

/* Closes every replica (pending requests fail with DOCRAFT_ECLOSED), runs
 * pending delete callbacks, answers creates in progress DOCRAFT_ECLOSED
 * once their threadpool work has returned, and calls cb(m) once everything
 * is closed, never synchronously. The files stay (a restart reopens them;
 * a create interrupted before its meta.pb was written leaves a directory
 * that the next start moves aside). Once. */
void manager_close(struct manager *m, manager_close_cb cb);

#endif
