/* Replica policy (issue 15): which replica moves the master starts, and
 * where new replicas go. The mechanism (recording a move in the catalog,
 * the Raft changes, resuming after a master failover) is moves.c's; this
 * file only decides. YugabyteDB's cluster balancer and TiKV's PD schedulers
 * make the same decisions.
 *
 * A move replaces one replica of one tablet: a new replica is added on
 * server `to` as a spare, caught up by checkpoint copy, promoted to voter,
 * then the replica `replica` (on server tablets[t].server[replica]) is
 * removed. Each step is one single-server Raft configuration change.
 *
 * Rules, in priority order (policy_pick returns moves in this order; a
 * tablet gets at most one move per call):
 *   1. re-replicate: a replica on a failed server is replaced (the first
 *      one that has a target, see below); tablets with the fewest
 *      live-and-up replicas go first (most at risk), then by index;
 *   2. drain: a replica on a draining server is replaced (the same way;
 *      tablets with a replica on a failed server are left to rule 1);
 *   3. rebalance, with what max_moves leaves: while some eligible server
 *      (live, not failed, not draining) holds at least two replicas more
 *      than another, a replica of a healthy tablet (n_replicas == rf,
 *      every replica up on an eligible server) moves from a server x to a
 *      server y with load(x) >= load(y) + 2 that holds none of it. The
 *      pair: the most loaded x (then the lowest index) that has such a
 *      move, then the least loaded y, lowest index, then the first tablet.
 *      Each such move lowers the sum of squared loads by at least 2, so
 *      rebalancing stops.
 * Targets (rules 1 and 2): live, not failed, not draining, not already
 * holding a replica of the tablet. Zones: the zone count of a target is
 * the number of the tablet's other replicas (every one but the replaced
 * one, on whatever server) in its zone; only targets of the smallest zone
 * count among all such servers qualify. So when the targets and the
 * other replicas span at least rf zones, the new replica's zone differs
 * from every other replica's; otherwise the replicas spread over the
 * zones as evenly as possible. Then the least loaded, then the lowest
 * index. A target that qualifies by zone but has no budget left
 * (max_per_server) is not replaced by a worse zone: the tablet waits.
 * Rebalance targets: the same servers, and the target's zone count is at
 * most the source's (a tablet's replicas never get less spread over
 * zones: with distinct zones, the target is in a zone that holds none of
 * the tablet's other replicas).
 * Safety: a tablet with a move in flight (moving, or n_replicas > rf) is
 * not picked; a move starts only if the tablet's replicas that are up on
 * live, non-failed servers, plus the new replica, are a majority of
 * n_replicas + 1 (the configuration once the new replica is a voter): so
 * an RF 3 tablet with one replica lost can be repaired, one with two lost
 * cannot (it has no majority to commit the change), and no move ever runs
 * below a majority of live voters. A replica whose server is POLICY_NONE
 * counts as down and is never replaced by these rules (the master may not
 * have heard from that server yet since it became leader: the driver
 * lists such a server, failed, once --tserver-failed-after-s has passed).
 * Limits: at most max_moves moves are returned, and a server is the
 * target or the (live) source of at most max_per_server moves, counting
 * its moves_in_flight; a source that is not live (failed, or down) does
 * no work in a move (the new replica copies from the leader) and is not
 * limited, so a failed server's replicas are replaced max_moves at a time.
 * Loads: policy_server.load counts moves in flight at their target (and
 * still at their source, which holds its replica until the move ends);
 * within one call, a picked move counts +1 at its target and -1 at its
 * source for the picks after it.
 *
 * Zones: policy_zone_index maps "cloud.region.zone" strings to small
 * indexes; "" is a zone of its own ("no placement").
 *
 * Cost: rules 1 and 2 walk the tablets rf + 2 times and scan the servers
 * for each tablet to replace, O(tablets * servers * (rf + max_moves)) at
 * worst; rebalance scans the servers only for the replicas whose source
 * can still beat the best move found so far, O(max_moves * tablets * rf *
 * servers * (rf + max_moves)) at worst, far less in practice: 16 moves
 * among 1024 tablets on 110 servers take about 3 ms (test_policy's
 * large_cluster prints it).
 *
 * Pure functions: no allocation, no I/O, any thread. Servers and tablets
 * are identified by their index in the caller's arrays. */
#ifndef DOCRAFT_MASTER_POLICY_H
#define DOCRAFT_MASTER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/placement.h"

/* No server (a replica on a server the master does not know). */
#define POLICY_NONE SIZE_MAX
/* A tablet's replicas while a move runs: rf + 1. */
#define POLICY_MAX_REPLICAS (PLACEMENT_MAX_RF + 1)

struct policy_server {
	bool live;              /* heard from within the liveness timeout */
	bool failed;            /* silent past --tserver-failed-after-s */
	bool draining;          /* `docraft drain`: no new replicas, its replicas leave */
	uint32_t zone;          /* zone index (policy_zone_index) */
	uint32_t load;          /* replicas it holds, moves in flight counted at their target */
	uint32_t moves_in_flight; /* moves from or to it */
};

struct policy_tablet {
	uint32_t rf;                             /* the table's replication factor */
	uint32_t n_replicas;                     /* voters in the catalog (1..POLICY_MAX_REPLICAS) */
	size_t server[POLICY_MAX_REPLICAS];      /* each replica's server; POLICY_NONE: unknown */
	bool up[POLICY_MAX_REPLICAS];            /* reported follower/leader in the current term */
	bool moving;                             /* a move of it is in flight */
};

enum policy_reason {
	POLICY_REREPLICATE = 0,
	POLICY_DRAIN,
	POLICY_REBALANCE,
};

struct policy_move {
	size_t tablet;           /* index in tablets */
	uint32_t replica;        /* the replica to replace: index in that tablet's server[] */
	size_t to;               /* the server receiving the new replica */
	enum policy_reason reason;
};

/* "re-replicate", "drain", "rebalance". */
const char *policy_reason_name(enum policy_reason r);

/* Up to max_moves moves (see the rules above) in out[0..return). Tablets
 * with n_replicas > rf (a move's spare still there) or with moving set are
 * skipped; servers' loads are not changed (out's moves count as placed for
 * the following picks of the same call). */
size_t policy_pick(const struct policy_server *servers, size_t n_servers,
		   const struct policy_tablet *tablets, size_t n_tablets, size_t max_moves,
		   uint32_t max_per_server, struct policy_move *out);

/* The index of zone among zones[0..*n_zones) (strings the caller owns),
 * appending it when new (*n_zones grows; cap entries at most). Returns
 * cap when the table is full (callers size it to their server count). */
uint32_t policy_zone_index(const char **zones, uint32_t *n_zones, uint32_t cap, const char *zone);


#endif
