/* Replica moves (issue 15): the master leader's engine that re-replicates
 * the replicas of failed tablet servers, drains tservers marked draining
 * and evens out replica counts, one single-server Raft change at a time,
 * each step recorded in the catalog first so a master failover resumes or
 * rolls it back. What moves where is policy.h's decision (policy_pick);
 * moves.c is the mechanism. docs/cluster.md ("Self-healing") has the steps
 * and the resume rules; the design note of moves.c the details.
 *
 * Not for use outside src/master/ (internal.h has the files around it).
 * Everything runs on the master's loop thread. */
#ifndef DOCRAFT_MASTER_MOVES_H
#define DOCRAFT_MASTER_MOVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/catalog.h"
#include "rpc/dispatch.h"
#include "rpc/rpc.h"

struct master;

/* Room moves_describe needs, NUL included. */
#define MOVES_DESCRIBE_MAX 160
/* The driver's period. */
#define MOVES_TICK_MS 1000

/* Starts the driver's timer (master_open, once m->loop is set); it acts
 * only while m is the ready leader with its catalog loaded, and not before
 * m->tserver_timeout_ms after the load (every live tserver has heartbeated
 * by then). master_close closes the handle (m->moves_timer). */
void moves_open(struct master *m);

/* One pass of the driver (the timer calls it; tests may too): advances
 * every move in flight by one step where it can, then starts the moves
 * policy_pick chooses within --max-concurrent-moves. */
void moves_tick(struct master *m);

/* "live" (heard from within --tserver-timeout-ms), "unreachable" (silent
 * longer) or "failed" (silent past --tserver-failed-after-s). */
const char *moves_tserver_state(const struct master *m, const struct cat_tserver *ts,
				uint64_t now);

/* Whether replica r of tb counts as a live voter: not joining, its tserver
 * live and its latest heartbeat listed r as follower or leader, in the term
 * of tb's leader when one is known. */
bool moves_replica_live(const struct master *m, const struct cat_tablet *tb,
			const struct cat_replica *r, uint64_t now);
/* How many replicas of tb are live voters (TabletLocation.live_replicas). */
uint32_t moves_live_replicas(struct master *m, const struct cat_tablet *tb, uint64_t now);

/* tb's move as one line ("re-replicate 3 -> <uuid> (raft id 4): adding"),
 * "" when none, in out (cap bytes, at most MOVES_DESCRIBE_MAX needed). */
void moves_describe(const struct cat_tablet *tb, char *out, size_t cap);

/* Moves in flight from or to tserver uuid. */
uint32_t moves_of_tserver(const struct master *m, const char *uuid);

/* Handlers (rpc/dispatch.h), as ddl.c's: MASTER_DRAIN (DrainRequest: the
 * tserver by uuid or address; NOT_FOUND for one the master does not know;
 * the mark written to the catalog, then answered with what it still
 * holds) and MASTER_CLUSTER_STATUS (req is NULL). */
enum rpc_dispatch_req moves_drain(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req moves_cluster_status(void *ctx, struct rpc_call *call, void *req,
					   void *obj);

#endif
