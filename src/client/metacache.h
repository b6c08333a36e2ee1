/* The client's metadata cache and its conversation with the masters.
 *
 * Per table: the schema and the tablet locations (partition [start, end)
 * of the 16-bit hash space, replicas, the leader as last known), sorted by
 * partition start, so a row's tablet is a binary search on the hash of its
 * hash columns. Tables are loaded on first use and refreshed as a whole
 * (one GetTable) when a request finds a tablet stale: after a transport
 * error, a timeout or TABLET_NOT_FOUND at its leader. Concurrent refreshes
 * of one table are coalesced: the first request sends GetTable, later ones
 * wait for its answer.
 *
 * Leaders move without the master: a NOT_LEADER reply's hint updates the
 * tablet's leader in place (metacache_set_leader), no refresh needed.
 * Addresses that just failed are marked down for a short while
 * (metacache_mark_down): while a tablet's leader is marked down, requests
 * try its other replicas first (which answer NOT_LEADER with the real
 * leader, or serve), instead of hammering a dead server the master has not
 * noticed yet (yb#1052).
 *
 * Master calls (struct mcall) find the master leader: the last one known
 * first, then the list in order; a NOT_LEADER hint is followed at once; a
 * transport error moves to the next master; after a whole round without an
 * answer, a jittered backoff; at the deadline DOCRAFT_EUNAVAILABLE.
 *
 * Ownership and lifetime: tables live until the client closes (bounded by
 * the tables a program uses); a table's tablet array is replaced by each
 * refresh, so no pointer to a tablet may be kept across a callback: keep
 * the hash (or the tablet id) and look it up again.
 *
 * Threading: the client's loop thread only. */
#ifndef DOCRAFT_CLIENT_METACACHE_H
#define DOCRAFT_CLIENT_METACACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/ctimer.h"
#include "rpc/rpc.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"

#define MC_DOWN_MAX 64
#define MC_DOWN_MS 1000

struct mc_replica {
	uint64_t raft_id;
	char address[RPC_ADDRESS_MAX + 1];
	char *uuid;
	char *redis_address; /* its tserver's RESP address, "" none (issue 17) */
	bool voter;
};

struct mc_tablet {
	char *id;
	uint32_t start, end; /* [start, end), end <= 65536 */
	struct mc_replica *replicas;
	size_t n_replicas;
	char leader[RPC_ADDRESS_MAX + 1]; /* "" when unknown */
	bool stale;                       /* refresh before the next use */
};

struct mc_waiter;
typedef void (*mc_waiter_cb)(struct mc_waiter *w, int status, const char *errmsg);

/* A request waiting for a table refresh; caller memory. */
struct mc_waiter {
	struct mc_waiter *prev, *next;
	mc_waiter_cb cb;
	bool waiting;
};

#define MC_TABLE_ID_MAX 64

struct mcall;
struct tcall;

struct mc_table {
	char *name;
	struct mc_table *next;
	bool loaded;           /* schema and locations present */
	struct schema schema;  /* when loaded */
	/* The master's id of this incarnation of the table (GetTableResponse.
	 * table_id; "" unknown), refreshed with the locations; stays at this
	 * address (requests point at it). */
	char id[MC_TABLE_ID_MAX + 1];
	struct mc_tablet *tablets;
	size_t n_tablets;
	uint64_t generation;   /* successful refreshes so far */
	struct mcall *refresh; /* GetTable in flight, or NULL */
	struct mc_waiter *waiters;
	/* retry.c: calls of this table waiting out a backoff after a lost
	 * leader, woken when a call to their tablet succeeds. */
	struct tcall *backing_off;
};

struct mc_down {
	char address[RPC_ADDRESS_MAX + 1];
	uint64_t until;
};

struct metacache {
	docraft_client *c;
	struct mc_table *tables;
	struct mc_down down[MC_DOWN_MAX];
	size_t n_down;
	uint64_t refreshes; /* GetTable calls sent (tests, stats) */
};

void metacache_init(struct metacache *mc, docraft_client *c);
/* Frees every table. No refresh may be in flight. */
void metacache_free(struct metacache *mc);

/* The table's entry, created (not loaded) if absent. Never NULL. */
struct mc_table *metacache_table(struct metacache *mc, const char *name);
/* Forgets a table's schema and locations (after DROP TABLE). */
void metacache_forget(struct metacache *mc, const char *name);

/* The tablet whose partition covers hash (0..65535), or NULL when the
 * table is not loaded. Binary search. */
struct mc_tablet *metacache_lookup(const struct mc_table *t, uint32_t hash);
struct mc_tablet *metacache_tablet_by_id(const struct mc_table *t, const char *id);

/* Installs a GetTable answer: the schema and the locations, checked (the
 * partitions must be sorted-able into a gapless, non-overlapping cover of
 * 0..65536, every tablet with at least one replica; a leader named by raft
 * id must be a replica). DOCRAFT_EUNAVAILABLE when the table has no
 * complete set of tablets yet (retry later), DOCRAFT_ECORRUPT for an answer
 * that cannot be right; the old contents then stay. */
int metacache_install(struct mc_table *t, const Docraft__GetTableResponse *resp, char *errmsg);

/* Starts (or joins) a refresh of t from the master leader; w->cb(w, status,
 * errmsg) runs once it is answered (status 0: t is loaded; else the master
 * call's error). Never calls back synchronously. deadline: uv_now() ms by
 * which a new GetTable gives up. */
void metacache_refresh(struct metacache *mc, struct mc_table *t, uint64_t deadline,
		       struct mc_waiter *w);
/* The last failure of the refresh of t in flight ("" if none yet), for
 * the message of a request that gives up while waiting for it. */
const char *metacache_refresh_error(const struct mc_table *t);
/* Stops waiting (w->cb will not run). No-op if not waiting. */
void metacache_cancel(struct mc_table *t, struct mc_waiter *w);

/* Where to send a request for tb: its leader unless unknown or marked
 * down (then the first replica not marked down, else the leader or the
 * first replica anyway). Never NULL; "" only for a tablet without
 * replicas (never installed). */
const char *metacache_target(struct metacache *mc, const struct mc_tablet *tb, uint64_t now);
/* The replica after address in tb's list (wrapping), for NOT_LEADER
 * replies without a hint. */
const char *metacache_next_replica(const struct mc_tablet *tb, const char *address);
/* Records a leader (from a NOT_LEADER hint or a successful call). */
void metacache_set_leader(struct mc_tablet *tb, const char *address);
/* The leader address of a raft id among tb's replicas, or NULL. */
const char *metacache_replica_address(const struct mc_tablet *tb, uint64_t raft_id);

void metacache_mark_down(struct metacache *mc, const char *address, uint64_t now);
void metacache_mark_up(struct metacache *mc, const char *address);
bool metacache_is_down(struct metacache *mc, const char *address, uint64_t now);

/* ---- master calls ---- */

/* The outcome of a master call; reply valid only during the callback. */
typedef void (*mcall_cb)(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			 size_t len);

/* One call to the master leader with retries; caller memory, valid until
 * its callback. */
struct mcall {
	void *data; /* free for the caller */

	/* Private. */
	docraft_client *c;
	uint16_t method;
	uint8_t *payload; /* the packed request (owned) */
	size_t len;
	uint64_t deadline;
	char target[RPC_ADDRESS_MAX + 1];
	size_t next_master; /* list index tried next */
	unsigned tried;     /* attempts since the last backoff */
	unsigned hops;      /* NOT_LEADER hints followed in a row */
	unsigned attempts;
	unsigned failures;  /* attempts answered with an error */
	uint32_t backoff_ms;
	int result;         /* status to deliver from the timer */
	struct ctimer timer;
	struct rpc_call_req rpc;
	int last_status;
	char last_msg[DOCRAFT_ERRMSG_SIZE];
	mcall_cb cb;
};

/* Calls method with msg (packed now) on the master leader, retrying until
 * deadline (uv_now() ms). cb runs exactly once, never synchronously:
 * DOCRAFT_OK with the reply, a final error of the master (EINVAL,
 * TABLE_NOT_FOUND, ...), DOCRAFT_EUNAVAILABLE at the deadline (errmsg
 * names the last failure), DOCRAFT_ECLOSED when the client closes. */
void mcall_start(struct mcall *m, docraft_client *c, uint16_t method, const ProtobufCMessage *msg,
		 uint64_t deadline, mcall_cb cb);

/* Whether a status from a server or the transport is worth a retry
 * elsewhere or later (else it is the request's final answer). */
bool status_retryable(int status);

/* A failed attempt (res->status not OK) of a call to target: writes its
 * message "<what><target>: <reason>" into msg (size bytes: the call's
 * last message), and returns 0 when the call may try again, else its
 * final status with *why the message to deliver with it (msg itself, or
 * "the client is closing"). */
int status_final(const docraft_client *c, const struct rpc_result *res, const char *what,
		 const char *target, char *msg, size_t size, const char **why);

#endif
