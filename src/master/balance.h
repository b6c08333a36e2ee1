/* Leader balancing: which tablet leader, if any, the master asks a tablet
 * server to hand over in the reply to its heartbeat (YugabyteDB's load
 * balancer does the same for leaders).
 *
 * Goal: leaders spread per table first, per server second: for every
 * table and any two live servers x and y that hold replicas of its
 * tablets, leaders of the table on x - leaders of the table on y <= 1,
 * and within that every server leads about as many tablets as every other
 * one. A server can only lead tablets it holds a (voter) replica of, so
 * servers that share no tablet are never compared. A draining server
 * (`docraft drain`) leads nothing: its leaders move off first, and no
 * leader moves to it.
 *
 * Counts: every tablet whose leader is known counts for its leader,
 * except a tablet with a move still in flight (instructed less than
 * cooldown_ms ago), which counts for the move's target whether or not the
 * reports show the new leader yet: two heartbeats in quick succession then
 * do not both move leaders to the same server. total(s) counts over all
 * tablets, table(s, T) over the tablets of table T.
 *
 * Guards. A tablet led by server `from` may move to another of its
 * replicas' servers y only when
 *   - no move of it is in flight,
 *   - every replica of it on a live server is ready (listed as follower
 *     or leader in the current term: being copied or behind on the term,
 *     it may be in the middle of a change), and the ready ones are a
 *     majority (the target's election needs their votes); replicas on
 *     servers that are not live are down and left out: were they required,
 *     one tserver down would freeze the leaders of every tablet it holds a
 *     replica of, however uneven they are on the others,
 *   - y is live, not draining, and every replica y holds is ready (y has
 *     reported everything that changed around it: a server that just lost
 *     leaders, or just restarted, first shows its current state).
 * Rule (balance_pick), for a tablet of table T, in this order:
 *   1. from is draining: any y the guards allow;
 *   2. per table: table(from, T) >= table(y, T) + 2;
 *   3. per server: table(from, T) >= table(y, T) + 1 (the table stays
 *      within one) and total(from) >= total(y) + 2.
 * Among all allowed (tablet, y): the lowest rule; within rule 1 the
 * smallest (table(y, T), total(y), y); within 2 the largest gap
 * table(from, T) - table(y, T), then the smallest (total(y), y); within 3
 * the smallest (total(y), y); then the first tablet. Moves stop: each
 * lowers (leaders on draining servers, sum over tables and servers of
 * table(s, T)^2, sum over servers of total(s)^2) in lexicographic order
 * (rule 1 the first, rule 2 the second, rule 3 the third and keeps the
 * second).
 *
 * Pure functions: no allocation, no I/O, any thread. Servers and tablets
 * are identified by their index in the caller's arrays; the tablets of one
 * table are next to each other (balance_tablet.table). */
#ifndef DOCRAFT_MASTER_BALANCE_H
#define DOCRAFT_MASTER_BALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/placement.h"

/* No server (unknown leader, a replica on a server not known, no move). */
#define BALANCE_NONE SIZE_MAX
/* A tablet's voters at most: rf + 1 while a replica move's new voter and
 * the one it replaces are both there (policy.h). */
#define BALANCE_MAX_REPLICAS (PLACEMENT_MAX_RF + 1)

struct balance_server {
	bool live;     /* heard from recently: may take over a leader */
	bool draining; /* `docraft drain`: takes over no leader, its leaders leave */
};

struct balance_tablet {
	size_t leader;                       /* server of its reported leader; BALANCE_NONE: unknown */
	uint32_t n_replicas;                 /* 1..BALANCE_MAX_REPLICAS voters */
	size_t server[BALANCE_MAX_REPLICAS]; /* server of each replica; BALANCE_NONE: not known */
	bool ready[BALANCE_MAX_REPLICAS];    /* reported as follower or leader in the current term */
	uint64_t moved_ms;                   /* when a move was last instructed (ms); 0: never */
	size_t moved_to;                     /* its target's server (with moved_ms) */
	uint32_t table;                      /* its table: any id, equal and adjacent for one table */
};

struct balance_move {
	size_t tablet;    /* index in the tablets */
	uint32_t replica; /* the target: index in that tablet's replicas */
	size_t to;        /* its server */
};

/* What balance_count finds per server. */
struct balance_load {
	uint32_t leaders;       /* tablets it leads, moves in flight counted at their target */
	bool settled;           /* every replica it holds is ready */
	uint32_t table_leaders; /* balance_pick's scratch: leaders of the table it looks at */
};

/* Fills load[0..n_servers) as the rule above counts (moves in flight at
 * now_ms included). Tablets whose leader or target is BALANCE_NONE count
 * for nobody. Every server index in tablets is < n_servers or
 * BALANCE_NONE. */
void balance_count(const struct balance_tablet *tablets, size_t n_tablets, size_t n_servers,
		   uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load);

/* The move of a tablet led by server from (from < n_servers) that the rule
 * above picks, in *out; false (and *out untouched) when there is none.
 * load (n_servers entries) is filled as by balance_count, before the move
 * (table_leaders: scratch). Tablets of one table must be adjacent (a table
 * split in two runs counts as two tables). O(tablets * rf). */
bool balance_pick(const struct balance_server *servers, size_t n_servers,
		  const struct balance_tablet *tablets, size_t n_tablets, size_t from,
		  uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load,
		  struct balance_move *out);

#endif
