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
 * Rules, in priority order (policy_pick returns moves in this order):
 *   1. re-replicate: a replica on a failed server is replaced;
 *   2. drain: a replica on a draining server is replaced;
 *   3. rebalance: when live, non-draining servers' loads differ by more
 *      than one, a replica of the most loaded moves to the least loaded
 *      (a server that holds no replica of that tablet).
 * Targets: live, not failed, not draining, not already holding a replica of
 * the tablet; when the cluster has at least rf distinct zones among such
 * servers plus the tablet's other replicas, the target's zone must differ
 * from every remaining replica's zone (re-replication and drain fall back
 * to any zone only when no such server exists; rebalance never breaks the
 * zone rule, and never moves a replica into a zone that already has one of
 * the tablet's replicas when it had none before); then the least loaded,
 * then the lowest index.
 * Safety: a tablet with a move in flight is not picked; a move starts only
 * if the tablet's replicas on live servers that are up are a majority of
 * n_replicas + 1 (the configuration while the spare is a voter), so no move
 * ever runs below a majority of live voters; at most max_moves moves are
 * returned, and a server is the target or source of at most
 * max_per_server of them (counting moves_in_flight of policy_server).
 * Loads count moves in flight at their target (the caller fills them so).
 *
 * Zones: policy_zone_index maps "cloud.region.zone" strings to small
 * indexes; "" is a zone of its own ("no placement").
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

/* Whether s is an accepted placement string: "" or three dot-separated
 * non-empty parts of [A-Za-z0-9_-], at most 64 bytes in all; errmsg says
 * why not. */
bool policy_placement_valid(const char *s, char *errmsg);

#endif
