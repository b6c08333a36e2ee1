/* The master: on the process's one port (the caller's), the catalog tablet it shares with the other
 * masters, and the RPC handlers of every MASTER_* method.
 *
 *   listener (--address) ── RAFT ──► tablet "sys.catalog" (raft id in
 *        │                           DIR/master.id: members.c)
 *        ├── COPY ──► copy server (a lagging master catches up by checkpoint)
 *        └── RPC  ──► CreateTable, DropTable, ListTables, GetTable,
 *                     ListTServers, Heartbeat, Drain, ClusterStatus,
 *                     ChangeMasters, ListMasters (any master)
 *   rpc client ──► tablet servers (TSERVER_CREATE_TABLET)
 *
 * Leadership: the master leader is the catalog tablet's leader. Once its
 * tablet is a ready leader (role TABLET_LEADER) the master reads the
 * catalog from its store after a linearizable read barrier (tablet_read),
 * and only then serves. Meanwhile requests get DOCRAFT_EUNAVAILABLE
 * ("loading"); on a master that is not the leader they get
 * DOCRAFT_ENOTLEADER with the leader's address when known. Losing
 * leadership forgets the in-memory catalog and the tservers; regaining it
 * reloads both (the tservers from their next heartbeats).
 *
 * Heartbeat replies carry instructions: create or delete a replica, and
 * (leader balancing, balance.h) hand a tablet's leadership to another
 * replica so that every live tserver leads about as many tablets.
 *
 * Changes to the catalog (create, drop, purge of a dropped tablet) are
 * DocDB batches replicated through tablet_write; the in-memory catalog
 * changes once the write is committed, and only if this master has been
 * leader without interruption since the change began. See the design note
 * at the top of service.c for the request flows.
 *
 * Threading: everything runs on the loop given to master_open. */
#ifndef DOCRAFT_MASTER_SERVICE_H
#define DOCRAFT_MASTER_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "docraft/error.h"

/* Most masters in --masters. */
#define MASTER_MAX_MASTERS 7
#define MASTER_DEFAULT_TSERVER_TIMEOUT_MS 3000
/* --tserver-failed-after-s: a tserver silent this long is failed and its
 * replicas are replaced (YugabyteDB's follower_unavailable_considered_failed_sec). */
#define MASTER_DEFAULT_FAILED_AFTER_S 300
/* --max-concurrent-moves, and the moves one tserver takes part in at once. */
#define MASTER_DEFAULT_MAX_MOVES 4
#define MASTER_MOVES_PER_SERVER 2
#define MASTER_DEFAULT_RF 3

struct master_options {
	const char *address;        /* this master, "ip:port" (bound exactly) */
	const char *const *masters; /* every master, this one included; NULL: just address */
	size_t n_masters;
	const char *const *join;    /* a new master: masters to learn its raft id from
				     * once added (members.c); ignored once DIR/master.id
				     * exists. NULL: bootstrap from masters */
	size_t n_join;
	const char *data_dir;       /* created if missing; DIR/sys.catalog is the catalog */
	uint64_t tserver_timeout_ms; /* silent longer: not live (default 3000) */
	unsigned tserver_failed_after_s; /* silent longer: failed, replicas replaced (300);
					  * at least the tserver timeout */
	unsigned max_concurrent_moves;   /* replica moves in flight at most (4; 0: none) */
	uint32_t default_rf;         /* CreateTable with replication factor 0 (default 3) */
	bool leader_balance;         /* even out tablet leaders per tserver (default on) */
	uint64_t drop_timeout_ms;    /* DropTable answers once its tablets are deleted on a
				      * majority, or EUNAVAILABLE after this (default 1500:
				      * below the routing client's 2 s attempt, so the
				      * client sees the reason and retries) */
	unsigned raft_heartbeat_ms;  /* catalog tablet; 0: the tablet default */
	unsigned election_ms;        /* catalog tablet; 0: the tablet default */
	/* The process's port and its RPC server, opened and configured by the
	 * caller on loop, bound to address (server/skeleton.h server_listen,
	 * with the peer limits). The master puts the catalog tablet's Raft,
	 * checkpoint copies and its MASTER_* methods on them and never closes
	 * them: the caller closes the RPC server before master_close and the
	 * port after master_close has called back. Both required. */
	struct listener *listener;
	struct rpc_server *rpc_server;
	/* Called once if the catalog tablet fails (TABLET_FAILED): the master
	 * cannot serve any more; the owner should close it and exit non-zero.
	 * May be NULL. */
	void (*fatal_cb)(void *arg, const char *why);
	void *fatal_arg;
};

void master_options_default(struct master_options *o);

struct master;

/* On the caller's port (o->listener): opens the catalog tablet (bootstrapped on first start with
 * every master as a voter, in --masters order; with o->join, once this master has been added by
 * MASTER_CHANGE_MASTERS) and registers the MASTER_* methods on o->rpc_server, on
 * loop. Strings are copied. Errors (*out may still be set): DOCRAFT_EINVAL
 * for bad options (address not in masters, duplicates, more than
 * MASTER_MAX_MASTERS, a bad address), DOCRAFT_EIO for a port that cannot
 * be bound or a data directory that cannot be made, or what tablet_open
 * returns; errmsg says why. Whenever *out is not NULL it must be closed
 * with master_close, error or not. */
int master_open(uv_loop_t *loop, const struct master_options *o, struct master **out,
		char *errmsg);

/* The address bound ("ip:port"). */
const char *master_address(const struct master *m);

/* Stops serving, closes the RPC server, the catalog tablet (pending
 * writes fail), the RPC client, the copy server and the port, in that
 * order; cb(arg) runs on a later loop turn once everything is released
 * (m is freed then). Must be called once. */
typedef void (*master_close_cb)(void *arg);
void master_close(struct master *m, master_close_cb cb, void *arg);

#endif
