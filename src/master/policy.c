/* Replica policy (see policy.h).
 *
 * Design. policy_pick fills out[] one move at a time, each pick a fresh
 * scan over the caller's arrays with the moves already in out[] taken
 * into account on the fly: the effective load of a server is its load
 * plus the picked moves to it minus the picked moves from it, and its
 * budget is max_per_server minus its moves in flight minus the picked
 * moves touching it (eff_load, has_budget: O(moves picked) each, and a
 * call picks few). No scratch memory, so the function can run on the
 * master's loop with the catalog's arrays as they are.
 *
 * Rule 1 visits tablets by rising count of live-and-up replicas (one pass
 * per count, 1..POLICY_MAX_REPLICAS: a tablet with one live replica left
 * goes before those with two); rule 2 in index order. For each tablet the
 * target is found by two scans of the servers: the smallest zone count
 * among all eligible servers (budget ignored, so a busy server in the
 * right zone is waited for rather than replaced by a worse zone), then
 * the least loaded with that count and budget left.
 *
 * Rule 3 looks for the best (x, y, tablet) of the order in policy.h:
 * largest effective load of the source first. A source that cannot beat
 * the best found so far is skipped before its targets are scanned, so
 * the scan of servers runs for few replicas once a good move is known.
 * Every rebalance move satisfies load(x) >= load(y) + 2 with loads
 * counted as they are after the moves before it, so the sum of squared
 * loads falls by at least 2 with each: a simulation that applies the
 * picks and calls again stops (tests/master/test_policy.c checks it on
 * random clusters).
 *
 * The majority rule counts the new replica as up: it is promoted to voter
 * only once caught up (C-Raft's raft_assign catches a spare up first), so
 * in the configuration of n_replicas + 1 voters it is one of the live
 * ones. */
#include "master/policy.h"

#include <string.h>

#include "common/check.h"
#include "common/err.h"

const char *policy_reason_name(enum policy_reason r)
{
	switch (r) {
	case POLICY_REREPLICATE:
		return "re-replicate";
	case POLICY_DRAIN:
		return "drain";
	case POLICY_REBALANCE:
		return "rebalance";
	}
	return "unknown";
}

struct pick {
	const struct policy_server *servers;
	size_t n_servers;
	const struct policy_tablet *tablets;
	size_t n_tablets;
	uint32_t max_per_server;
	struct policy_move *out;
	size_t n_out;
};

static size_t source_of(const struct pick *p, const struct policy_move *m)
{
	return p->tablets[m->tablet].server[m->replica];
}

/* s's load counting the moves picked so far. */
static int64_t eff_load(const struct pick *p, size_t s)
{
	int64_t load = p->servers[s].load;
	for (size_t i = 0; i < p->n_out; i++) {
		if (p->out[i].to == s)
			load++;
		if (source_of(p, &p->out[i]) == s)
			load--;
	}
	return load;
}

/* Whether s may take one more move (as target, or as a live source). */
static bool has_budget(const struct pick *p, size_t s)
{
	uint64_t used = p->servers[s].moves_in_flight;
	for (size_t i = 0; i < p->n_out; i++)
		if (p->out[i].to == s || source_of(p, &p->out[i]) == s)
			used++;
	return used < p->max_per_server;
}

static bool source_has_budget(const struct pick *p, size_t s)
{
	return !p->servers[s].live || p->servers[s].failed || has_budget(p, s);
}

static bool picked(const struct pick *p, size_t t)
{
	for (size_t i = 0; i < p->n_out; i++)
		if (p->out[i].tablet == t)
			return true;
	return false;
}

/* May receive new replicas (and, for rule 3, give them). */
static bool eligible(const struct policy_server *s)
{
	return s->live && !s->failed && !s->draining;
}

static bool holds(const struct policy_tablet *t, size_t s)
{
	for (uint32_t k = 0; k < t->n_replicas; k++)
		if (t->server[k] == s)
			return true;
	return false;
}

/* The tablet's replicas other than `except` in zone. */
static uint32_t zone_count(const struct pick *p, const struct policy_tablet *t, uint32_t except,
			   uint32_t zone)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < t->n_replicas; k++)
		if (k != except && t->server[k] != POLICY_NONE &&
		    p->servers[t->server[k]].zone == zone)
			n++;
	return n;
}

static uint32_t live_up(const struct pick *p, const struct policy_tablet *t)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < t->n_replicas; k++) {
		const struct policy_server *s;
		if (t->server[k] == POLICY_NONE)
			continue;
		s = &p->servers[t->server[k]];
		if (t->up[k] && s->live && !s->failed)
			n++;
	}
	return n;
}

/* The majority rule of policy.h. */
static bool majority_allows(const struct pick *p, const struct policy_tablet *t)
{
	return 2 * (live_up(p, t) + 1) > t->n_replicas + 1;
}

/* Not moving, not mid-move, not picked in this call. */
static bool may_move(const struct pick *p, size_t i)
{
	const struct policy_tablet *t = &p->tablets[i];
	PRE(t->rf >= 1 && t->rf <= PLACEMENT_MAX_RF);
	PRE(t->n_replicas <= POLICY_MAX_REPLICAS);
	return !t->moving && t->n_replicas >= 1 && t->n_replicas <= t->rf && !picked(p, i);
}

/* The target for replica r of tablet t (rules 1 and 2); POLICY_NONE if
 * none qualifies now. */
static size_t target_for(const struct pick *p, const struct policy_tablet *t, uint32_t r)
{
	uint32_t best_count = UINT32_MAX;
	size_t best = POLICY_NONE;
	int64_t best_load = 0;

	for (size_t s = 0; s < p->n_servers; s++) {
		uint32_t c;
		if (!eligible(&p->servers[s]) || holds(t, s))
			continue;
		c = zone_count(p, t, r, p->servers[s].zone);
		if (c < best_count)
			best_count = c;
	}
	for (size_t s = 0; s < p->n_servers; s++) {
		int64_t load;
		if (!eligible(&p->servers[s]) || holds(t, s) ||
		    zone_count(p, t, r, p->servers[s].zone) != best_count || !has_budget(p, s))
			continue;
		load = eff_load(p, s);
		if (best == POLICY_NONE || load < best_load) {
			best = s;
			best_load = load;
		}
	}
	return best;
}

static void add(struct pick *p, size_t tablet, uint32_t replica, size_t to, enum policy_reason why)
{
	struct policy_move *m = &p->out[p->n_out++];
	m->tablet = tablet;
	m->replica = replica;
	m->to = to;
	m->reason = why;
}

/* Rule 1 or 2 for tablet i: replaces the first of its replicas on a
 * failed (rule 1) or draining (rule 2) server for which a target
 * qualifies (RF 5 with two lost: the second may have one when the first
 * has none). */
static void replace_one(struct pick *p, size_t i, enum policy_reason why)
{
	const struct policy_tablet *t = &p->tablets[i];
	for (uint32_t k = 0; k < t->n_replicas; k++) {
		const struct policy_server *s;
		size_t to;
		if (t->server[k] == POLICY_NONE)
			continue;
		s = &p->servers[t->server[k]];
		if ((why == POLICY_REREPLICATE ? !s->failed : !s->draining) ||
		    !source_has_budget(p, t->server[k]))
			continue;
		to = target_for(p, t, k);
		if (to != POLICY_NONE) {
			add(p, i, k, to, why);
			return;
		}
	}
}

static bool has_failed_replica(const struct pick *p, const struct policy_tablet *t)
{
	for (uint32_t k = 0; k < t->n_replicas; k++)
		if (t->server[k] != POLICY_NONE && p->servers[t->server[k]].failed)
			return true;
	return false;
}

/* Every replica up on an eligible server, and exactly rf of them. */
static bool healthy(const struct pick *p, const struct policy_tablet *t)
{
	if (t->n_replicas != t->rf)
		return false;
	for (uint32_t k = 0; k < t->n_replicas; k++)
		if (t->server[k] == POLICY_NONE || !t->up[k] ||
		    !eligible(&p->servers[t->server[k]]))
			return false;
	return true;
}

struct candidate {
	size_t tablet;
	uint32_t replica;
	size_t from, to;
	int64_t from_load, to_load;
};

/* Whether (from_load, from, to_load, to) beats c (tablet order: the
 * earlier one was found first and wins ties). */
static bool better(const struct candidate *c, int64_t from_load, size_t from, int64_t to_load,
		   size_t to)
{
	if (c->to == POLICY_NONE)
		return true;
	if (from_load != c->from_load)
		return from_load > c->from_load;
	if (from != c->from)
		return from < c->from;
	if (to_load != c->to_load)
		return to_load < c->to_load;
	return to < c->to;
}

/* Rule 3: one move, or false. */
static bool rebalance_one(struct pick *p)
{
	struct candidate best = {0, 0, POLICY_NONE, POLICY_NONE, 0, 0};
	int64_t min_target = INT64_MAX;

	for (size_t s = 0; s < p->n_servers; s++)
		if (eligible(&p->servers[s]) && has_budget(p, s)) {
			int64_t load = eff_load(p, s);
			if (load < min_target)
				min_target = load;
		}
	if (min_target == INT64_MAX)
		return false;
	for (size_t i = 0; i < p->n_tablets; i++) {
		const struct policy_tablet *t = &p->tablets[i];
		if (!may_move(p, i) || !healthy(p, t))
			continue;
		for (uint32_t k = 0; k < t->n_replicas; k++) {
			size_t x = t->server[k];
			int64_t x_load = eff_load(p, x);
			uint32_t x_count;
			if (x_load < min_target + 2 || !better(&best, x_load, x, min_target, 0) ||
			    !has_budget(p, x))
				continue;
			x_count = zone_count(p, t, k, p->servers[x].zone);
			for (size_t y = 0; y < p->n_servers; y++) {
				int64_t y_load;
				if (!eligible(&p->servers[y]) || holds(t, y))
					continue;
				y_load = eff_load(p, y);
				if (y_load + 2 > x_load || !better(&best, x_load, x, y_load, y) ||
				    zone_count(p, t, k, p->servers[y].zone) > x_count ||
				    !has_budget(p, y))
					continue;
				best = (struct candidate){i, k, x, y, x_load, y_load};
			}
		}
	}
	if (best.to == POLICY_NONE)
		return false;
	add(p, best.tablet, best.replica, best.to, POLICY_REBALANCE);
	return true;
}

size_t policy_pick(const struct policy_server *servers, size_t n_servers,
		   const struct policy_tablet *tablets, size_t n_tablets, size_t max_moves,
		   uint32_t max_per_server, struct policy_move *out)
{
	struct pick p = {servers, n_servers, tablets, n_tablets, max_per_server, out, 0};

	for (size_t i = 0; i < n_tablets; i++)
		for (uint32_t k = 0; k < tablets[i].n_replicas; k++)
			PRE(tablets[i].server[k] == POLICY_NONE ||
			    tablets[i].server[k] < n_servers);
	/* 1. re-replicate, the tablets with fewest live replicas first. */
	for (uint32_t level = 1; level <= POLICY_MAX_REPLICAS && p.n_out < max_moves; level++)
		for (size_t i = 0; i < n_tablets && p.n_out < max_moves; i++)
			if (may_move(&p, i) && live_up(&p, &tablets[i]) == level &&
			    majority_allows(&p, &tablets[i]))
				replace_one(&p, i, POLICY_REREPLICATE);
	/* 2. drain. */
	for (size_t i = 0; i < n_tablets && p.n_out < max_moves; i++)
		if (may_move(&p, i) && !has_failed_replica(&p, &tablets[i]) &&
		    majority_allows(&p, &tablets[i]))
			replace_one(&p, i, POLICY_DRAIN);
	/* 3. rebalance. */
	while (p.n_out < max_moves && rebalance_one(&p))
		;
	return p.n_out;
}

uint32_t policy_zone_index(const char **zones, uint32_t *n_zones, uint32_t cap, const char *zone)
{
	for (uint32_t i = 0; i < *n_zones; i++)
		if (strcmp(zones[i], zone) == 0)
			return i;
	if (*n_zones >= cap)
		return cap;
	zones[*n_zones] = zone;
	return (*n_zones)++;
}
