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
 * A replica that cannot be opened (bad meta.pb, RocksDB refuses, ...) stays
 * listed as FAILED with the reason: it is reported, never served, and can
 * only be deleted. Its files are left alone.
 *
 * Threading: everything runs on the loop thread; callbacks never run inside
 * the call that registered them. */
#ifndef DOCRAFT_TABLET_MANAGER_H
#define DOCRAFT_TABLET_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/arena.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"
#include "docraft/error.h"
#include "raft/listener.h"
#include "tablet/tablet.h"

struct copy_server;
struct manager;

#define MANAGER_META_FILE "meta.pb"

enum replica_state {
	REPLICA_OPEN = 1, /* tablet open and started */
	REPLICA_FAILED,   /* could not be opened: reported, never served */
	REPLICA_CLOSING,  /* being deleted or the manager is closing: invisible */
};

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
	char errmsg[DOCRAFT_ERRMSG_SIZE]; /* FAILED: why */
	unsigned pending;      /* the service's requests in flight on it */

	/* Private. */
	int64_t list_counter;
	struct manager *m;
	struct replica *next;
	struct mgr_waiter *waiters; /* manager_delete callers */
	bool remove_files;          /* CLOSING: delete the directory once closed */
	bool tablet_closing;        /* tablet_close called */
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
	size_t segment_bytes;         /* raft log segment size; 0: tablet default */
	unsigned max_clock_skew_ms;   /* each tablet's hybrid clock; 0: tablet default */
	/* The process's block cache and memtable budget (docdb/store_env.h)
	 * every replica's store joins; NULL: private RocksDB memory per store.
	 * Borrowed: it must outlive the manager (destroy it after the close
	 * callback). */
	struct store_env *store_env;
	/* Replicas this server hosts at most (its open-file and AIO limits,
	 * tserver_main.c): a create past it answers DOCRAFT_EUNAVAILABLE, a
	 * retryable error, instead of failing half-way on EMFILE. 0: no cap. */
	size_t max_replicas;
};

#define MANAGER_LEASE_OFF UINT32_MAX

typedef void (*manager_close_cb)(struct manager *m);
/* status 0 once the replica and its directory are gone. */
typedef void (*manager_delete_cb)(void *arg, int status);

/* Private: callers allocate it, only manager.c touches the fields. */
struct manager {
	uv_loop_t *loop;
	char *data_dir, *tablets_dir, *address;
	struct manager_options o;
	struct replica *head;
	size_t n_open;               /* replicas whose tablet is not closed yet */
	uv_timer_t defer;            /* runs deferred callbacks */
	struct mgr_waiter *deferred; /* callbacks to run from the loop */
	bool closing;
	manager_close_cb close_cb;
};

/* Initializes m (caller memory, at a fixed address until the close
 * callback), creates DIR/tablets if needed and opens every replica found
 * there (one that fails is kept as FAILED and logged). Strings in o are
 * copied; listener and copy are borrowed and must outlive the manager.
 * Returns 0, or DOCRAFT_EIO / DOCRAFT_ENOSPC / DOCRAFT_EINVAL with errmsg
 * when DIR/tablets cannot be created or listed (checked before any replica
 * is opened); then nothing needs to be closed. */
int manager_init(struct manager *m, uv_loop_t *loop, const struct manager_options *o,
		 char *errmsg);

/* Creates the replica req describes: validates it (tablet id of 1..64
 * characters [A-Za-z0-9_.-] not starting with '.', a valid schema, a
 * non-zero raft id; without join, a peer list that names this raft id with
 * this server's address), writes meta.pb, opens the tablet, bootstraps it
 * with the peers (all voters) unless join, and starts it.
 *
 * Idempotent: if the replica exists with the same raft id, returns 0 and
 * changes nothing. Errors (nothing is left behind): DOCRAFT_EINVAL (bad
 * request, or the tablet exists with another raft id), DOCRAFT_EBUSY (a
 * replica of that id is being deleted: retry), DOCRAFT_ECLOSED (manager
 * closing), DOCRAFT_EIO / DOCRAFT_ENOSPC (disk). */
int manager_create(struct manager *m, const Docraft__CreateTabletRequest *req, char *errmsg);

/* Deletes replica id: it disappears from lookups at once, its tablet is
 * closed (pending requests fail with DOCRAFT_ECLOSED), then meta.pb and
 * the directory are removed and cb(arg, 0) runs. A delete of a replica
 * already being deleted waits for that one. Synchronous errors (cb never
 * called): DOCRAFT_ETABLETNOTFOUND, DOCRAFT_ECLOSED (manager closing). */
int manager_delete(struct manager *m, const char *id, manager_delete_cb cb, void *arg,
		   char *errmsg);

/* The OPEN or FAILED replica id, or NULL (unknown, or being deleted). */
struct replica *manager_find(struct manager *m, const char *id);

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
 * pending delete callbacks, and calls cb(m) once everything is closed, never
 * synchronously. The files stay (a restart reopens them). Once. */
void manager_close(struct manager *m, manager_close_cb cb);

/* Writes data to path atomically: path.tmp, fsync, rename, fsync of the
 * directory. DOCRAFT_EIO / DOCRAFT_ENOSPC with errmsg. Blocking; any thread. */
int manager_write_file(const char *path, const void *data, size_t len, char *errmsg);

#endif
