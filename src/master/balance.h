/* Leader balancing: which tablet leader, if any, the master asks a tablet
 * server to hand over in the reply to its heartbeat (YugabyteDB's load
 * balancer does the same for leaders).
 *
 * Goal: every server leads about as many tablets as every other one; for
 * any two live servers x and y that hold replicas of the same tablets,
 * leaders(x) - leaders(y) <= 1. A server can only lead tablets it holds a
 * (voter) replica of, so servers that share no tablet are never compared.
 *
 * Rule (balance_pick). Counts: every tablet whose leader is known counts
 * for its leader, except a tablet with a move still in flight (instructed
 * less than cooldown_ms ago), which counts for the move's target whether
 * or not the reports show the new leader yet: two heartbeats in quick
 * succession then do not both move leaders to the same server. A tablet
 * led by server `from` may move to another of its replicas' servers y when
 *   - no move of it is in flight,
 *   - every replica of it on a live server is ready (listed as follower
 *     or leader in the current term: being copied or behind on the term,
 *     it may be in the middle of a change), and the ready ones are a
 *     majority (the target's election needs their votes); replicas on
 *     servers that are not live are down and left out: were they required,
 *     one tserver down would freeze the leaders of every tablet it holds a
 *     replica of, however uneven they are on the others,
 *   - y is live and every replica y holds is ready (y has reported
 *     everything that changed around it: a server that just lost leaders,
 *     or just restarted, first shows its current state), and
 *   - leaders(from) >= leaders(y) + 2.
 * Among all such (tablet, y) the smallest (leaders(y), y) wins, then the
 * first tablet. A move lowers the sum of squared counts, so moves stop.
 *
 * Pure functions: no allocation, no I/O, any thread. Servers and tablets
 * are identified by their index in the caller's arrays. */
#ifndef DOCRAFT_MASTER_BALANCE_H
#define DOCRAFT_MASTER_BALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/placement.h"

/* No server (unknown leader, a replica on a server not known, no move). */
#define BALANCE_NONE SIZE_MAX

struct balance_server {
	bool live; /* heard from recently: may take over a leader */
};

struct balance_tablet {
	size_t leader;                   /* server of its reported leader; BALANCE_NONE: unknown */
	uint32_t n_replicas;             /* 1..PLACEMENT_MAX_RF voters */
	size_t server[PLACEMENT_MAX_RF]; /* server of each replica; BALANCE_NONE: not known */
	bool ready[PLACEMENT_MAX_RF];    /* reported as follower or leader in the current term */
	uint64_t moved_ms;               /* when a move was last instructed (ms); 0: never */
	size_t moved_to;                 /* its target's server (with moved_ms) */
};

struct balance_move {
	size_t tablet;    /* index in the tablets */
	uint32_t replica; /* the target: index in that tablet's replicas */
	size_t to;        /* its server */
};

/* What balance_count finds per server. */
struct balance_load {
	uint32_t leaders; /* tablets it leads, moves in flight counted at their target */
	bool settled;     /* every replica it holds is ready */
};

/* Fills load[0..n_servers) as the rule above counts (moves in flight at
 * now_ms included). Tablets whose leader or target is BALANCE_NONE count
 * for nobody. Every server index in tablets is < n_servers or
 * BALANCE_NONE. */
void balance_count(const struct balance_tablet *tablets, size_t n_tablets, size_t n_servers,
		   uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load);

/* The move of a tablet led by server from (from < n_servers) that the rule
 * above picks, in *out; false (and *out untouched) when there is none.
 * load (n_servers entries) is filled as by balance_count, before the move. */
bool balance_pick(const struct balance_server *servers, size_t n_servers,
		  const struct balance_tablet *tablets, size_t n_tablets, size_t from,
		  uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load,
		  struct balance_move *out);

#endif
