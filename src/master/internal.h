/* What the master's files share (not for use outside src/master/).
 *
 * The master is three files around one struct master:
 *
 *   service.c  lifecycle (open, close), leadership (following the catalog
 *              tablet's role, loading the catalog) and the RPC plumbing:
 *              one table of MASTER_* methods (rpc/dispatch.h); the
 *              master's own leadership is checked and the request decoded
 *              and freed once, there, around a handler below.
 *   ddl.c      the catalog's decisions: CreateTable (validation, placement,
 *              the table's documents, the DDL request ids, the DROP->CREATE
 *              guard, the replicas' creation), DropTable, the purge of
 *              dropped tablets, GetTable and ListTables; every catalog
 *              write goes through it.
 *   tservers.c the tablet servers: the registry fed by heartbeats, their
 *              liveness, the instructions of a heartbeat's reply (create,
 *              delete, leader balancing) and ListTServers.
 *   moves.c    replica moves (moves.h): re-replication, drain and
 *              rebalance driven by a timer, MASTER_DRAIN and
 *              MASTER_CLUSTER_STATUS.
 *   members.c  the masters: this master's raft id, joining, ListMasters,
 *              ChangeMasters, noticing a removal.
 *
 * Names: service.c's cross-file functions are master_*, the others
 * ddl_*, tservers_* and members_*. Everything runs on the master's loop thread. */
#ifndef DOCRAFT_MASTER_INTERNAL_H
#define DOCRAFT_MASTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <uv.h>

#include "common/arena.h"
#include "master/catalog.h"
#include "master/placement.h"
#include "master/service.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/dispatch.h"
#include "rpc/rpc.h"
#include "tablet/remote_copy.h"
#include "tablet/tablet.h"

struct master {
	uv_loop_t *loop;
	char address[RPC_ADDRESS_MAX + 1];
	char masters[MASTER_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
	size_t n_masters;
	raft_id raft_id;
	char data_dir[4096];
	uint64_t tserver_timeout_ms;
	uint64_t failed_after_ms;   /* --tserver-failed-after-s */
	uint32_t max_moves;         /* --max-concurrent-moves */
	uint32_t max_moves_per_server;
	uint32_t default_rf;
	uint64_t drop_timeout_ms;   /* --drop-timeout-ms: DropTable waits this long at most */
	bool leader_balance;
	unsigned raft_heartbeat_ms, election_ms; /* the catalog tablet's; 0: default */
	void (*fatal_cb)(void *arg, const char *why);
	void *fatal_arg;
	bool fatal_sent;

	struct listener *l;     /* the caller's port (master_options) */
	struct copy_server copy;
	bool copy_on;
	struct rpc_server *srv; /* the caller's RPC server (master_options) */
	struct rpc_dispatch methods; /* service.c's table on srv */
	struct rpc_client cl;
	bool cl_on;
	struct tablet *t;
	uv_timer_t poll;
	bool poll_open;
	uv_timer_t moves_timer; /* moves.c's driver */
	bool moves_open;

	struct catalog cat;
	bool leader;     /* the catalog tablet is a ready leader in term */
	uint64_t term;
	bool loaded;     /* the catalog of this leadership is in memory */
	bool loading;
	uint64_t loaded_ms; /* loop ms the catalog of this leadership was loaded */
	uint64_t load_retry_at;
	uint64_t gen;    /* bumped at every change of leadership */

	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	uint64_t rand;
	size_t ops;      /* asynchronous operations alive */

	bool closing;
	master_close_cb close_cb;
	void *close_arg;

	struct members *mem; /* members.c: master membership (issue 15) */
	struct drop_wait *drops; /* ddl.c: DropTables waiting for their tablets' deletion */
};

/* The loop's time in ms. */
static inline uint64_t master_now_ms(const struct master *m)
{
	return uv_now(m->loop);
}

/* n zeroed bytes (at least one) from a; protobuf messages are built in arenas. */
static inline void *master_zalloc(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

/* ---- service.c ------------------------------------------------------------------------------- */

/* Answers call as a master that is not the ready leader: ENOTLEADER with
 * the leader's address when known, EUNAVAILABLE if this master is the
 * leader but not ready. */
void master_reply_not_leader(struct master *m, struct rpc_call *call);

/* A catalog write of batch b (borrowed until cb) into w: the master's
 * client id and its next sequence number; then tablet_write(m->t, w). */
void master_write_prepare(struct master *m, struct tablet_write *w, const struct batch *b,
			  tablet_write_cb cb, void *data);

/* ---- ddl.c ----------------------------------------------------------------------------------- */

/* The handlers (rpc_method_fn, rpc/dispatch.h) of service.c's method table:
 * ctx is the master, which the dispatcher has found serving (the ready
 * leader, catalog loaded); req is the decoded request, left to the
 * dispatcher (RPC_DISPATCH_FREE: no handler keeps it); obj is NULL. Each
 * answers call once, now or from a later callback. */
enum rpc_dispatch_req ddl_create_table(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req ddl_drop_table(void *ctx, struct rpc_call *call, void *req, void *obj);
/* req is NULL: ListTables reads no request. */
enum rpc_dispatch_req ddl_list_tables(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req ddl_get_table(void *ctx, struct rpc_call *call, void *req, void *obj);

/* One replicated change of the catalog (a DocDB batch of catalog.h's
 * documents); the first member of every op that writes. */
struct cwrite;
typedef void (*cwrite_done_cb)(struct cwrite *w, int status);
struct cwrite {
	struct tablet_write req;
	struct batch b;
	struct master *m;
	uint64_t gen; /* the leadership it began in */
	cwrite_done_cb done;
};

/* Queues w->b (filled by the caller, batch_init'ed) as a catalog write of
 * this leadership; done(w, status) follows unless an error is returned.
 * The caller counts the op in m->ops once this succeeded. */
int ddl_cwrite_submit(struct master *m, struct cwrite *w, cwrite_done_cb done);
/* Frees the op that begins with w (its first member, allocated with
 * malloc), once its write has completed, and uncounts it from m->ops. */
void ddl_cwrite_free(struct cwrite *w);

/* Purges the dropped tablet tb from the catalog (one more catalog write)
 * once no replica's tserver lists it any more; nothing if it is not
 * CAT_DELETED or its purge is in flight. */
void ddl_maybe_purge(struct master *m, struct cat_tablet *tb);

/* Answers every DropTable waiting for its tablets' deletion that is
 * settled: deleted on a majority, deadline passed, leadership lost, or the
 * master closing (ECLOSED). service.c calls it every POLL_MS and once from
 * master_close. */
void ddl_drops_poll(struct master *m);

/* The TSERVER_CREATE_TABLET request of the replica raft_id of tb (of table
 * t), built in a; it points into t and tb, which must outlive its use. */
Docraft__CreateTabletRequest *ddl_create_tablet_pb(const struct cat_table *t,
						   const struct cat_tablet *tb, uint64_t raft_id,
						   struct arena *a);

/* ---- tservers.c ------------------------------------------------------------------------------ */

/* The TServerInfo of every tserver (ListTServers, ClusterStatus), in
 * the catalog's order, built in a (strings borrowed from the catalog:
 * valid until it changes). */
Docraft__TServerInfo **tservers_infos(struct master *m, uint64_t now, struct arena *a);

/* Handlers, as ddl.c's. */
enum rpc_dispatch_req tservers_heartbeat(void *ctx, struct rpc_call *call, void *req,
					 void *obj);
/* req is NULL: ListTServers reads no request. */
enum rpc_dispatch_req tservers_list(void *ctx, struct rpc_call *call, void *req, void *obj);

/* The live tservers sorted by uuid (the catalog's order) in *out and the
 * number of replicas of tablets not deleted each holds in *loads (the
 * placement's input); both arrays are new, the caller frees them.
 * Returns their length. */
size_t tservers_live(struct master *m, struct cat_tserver ***out,
		     struct placement_server **loads);

/* ---- members.c ------------------------------------------------------------------------------- */

/* Decides this master's raft id (DIR/master.id, else the position in
 * --masters with a bootstrap, else --join: later) and opens the catalog
 * tablet through master_open_catalog, now or once joined. Called once by
 * master_open, with the RPC client and the methods set up. */
int members_open(struct master *m, const struct master_options *o, char *errmsg);
/* From the poll: a joining master asks for its raft id (rate-limited). */
void members_join_poll(struct master *m);
/* From refresh: notes the leader and whether this master is still a member. */
void members_refresh(struct master *m);
/* A removed master: the last master leader it knew; others: "". */
const char *members_leader_hint(const struct master *m);
/* The masters' addresses (the catalog tablet's configuration), in a. */
size_t members_addresses(struct master *m, struct arena *a, char ***out);
/* Handlers: ListMasters (any master, req NULL) and ChangeMasters (leader). */
enum rpc_dispatch_req members_list(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req members_change(void *ctx, struct rpc_call *call, void *req, void *obj);
/* After the catalog tablet has closed: frees the membership state. */
void members_close(struct master *m);

/* service.c: opens and starts the catalog tablet as raft id m->raft_id,
 * bootstrapped with peers when peers is not NULL. */
int master_open_catalog(struct master *m, const struct tablet_peer *peers, size_t n,
			char *errmsg);

#endif
