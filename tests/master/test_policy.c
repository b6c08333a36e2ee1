/* The replica policy (src/master/policy.c): rule order (re-replicate, then
 * drain, then rebalance), target selection (live, not failed or draining,
 * not a holder; zones distinct when there are enough, spread evenly when
 * not; least loaded; lowest index), the majority rule, skipped tablets,
 * the limits (max_moves, max_per_server with moves in flight), rebalance
 * convergence and its sum-of-squares property on random clusters, drain
 * emptying a server, and a simulation of moves step by step (add spare,
 * promote, remove) with failures injected at every step, checking that
 * no step runs below a majority and every tablet ends at rf on distinct
 * live servers. Random cases use fixed seeds: a failure replays. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "master/policy.h"
#include "server/placement_str.h"
#include "test.h"

#define NS_MAX 128
#define NT_MAX 1024
#define OUT_MAX 64

struct rig {
	struct policy_server s[NS_MAX];
	size_t ns;
	struct policy_tablet t[NT_MAX];
	size_t nt;
	struct policy_move out[OUT_MAX];
	size_t n_out;
};

static struct rig R; /* large: static, one at a time */

/* ns live servers, zone 0, no tablet. */
static struct rig *rig(size_t ns)
{
	memset(&R, 0, sizeof R);
	R.ns = ns;
	for (size_t i = 0; i < ns; i++)
		R.s[i].live = true;
	return &R;
}

/* Server s dead for good (declared failed), or back. */
static void fail(struct rig *r, size_t s)
{
	r->s[s].failed = true;
	r->s[s].live = false;
}

static void revive(struct rig *r, size_t s)
{
	r->s[s].failed = false;
	r->s[s].live = true;
}

/* Server loads recomputed from the tablets (moves in flight not counted). */
static void reload(struct rig *r)
{
	for (size_t s = 0; s < r->ns; s++)
		r->s[s].load = 0;
	for (size_t i = 0; i < r->nt; i++)
		for (uint32_t k = 0; k < r->t[i].n_replicas; k++)
			if (r->t[i].server[k] != POLICY_NONE)
				r->s[r->t[i].server[k]].load++;
}

/* A tablet of rf replicas on the servers listed, all up. */
static size_t tab(struct rig *r, uint32_t rf, const size_t *servers)
{
	struct policy_tablet *t = &r->t[r->nt];
	memset(t, 0, sizeof *t);
	t->rf = rf;
	t->n_replicas = rf;
	for (uint32_t k = 0; k < rf; k++) {
		t->server[k] = servers[k];
		t->up[k] = true;
	}
	return r->nt++;
}

static size_t tab3(struct rig *r, size_t a, size_t b, size_t c)
{
	size_t v[3] = {a, b, c};
	return tab(r, 3, v);
}

static size_t pick(struct rig *r, size_t max_moves, uint32_t per_server)
{
	reload(r);
	r->n_out = policy_pick(r->s, r->ns, r->t, r->nt, max_moves, per_server, r->out);
	CHECK(r->n_out <= max_moves);
	return r->n_out;
}

/* Picks with loads as the rig has them (no reload). */
static size_t pick_raw(struct rig *r, size_t max_moves, uint32_t per_server)
{
	r->n_out = policy_pick(r->s, r->ns, r->t, r->nt, max_moves, per_server, r->out);
	CHECK(r->n_out <= max_moves);
	return r->n_out;
}

static void check_move(const struct policy_move *m, size_t tablet, uint32_t replica, size_t to,
		       enum policy_reason why)
{
	CHECK_EQ_U64(m->tablet, tablet);
	CHECK_EQ_INT(m->replica, replica);
	CHECK_EQ_U64(m->to, to);
	CHECK_EQ_STR(policy_reason_name(m->reason), policy_reason_name(why));
}

/* A move done at once: the replica now lives on the target. */
static void apply(struct rig *r, const struct policy_move *m)
{
	r->t[m->tablet].server[m->replica] = m->to;
	r->t[m->tablet].up[m->replica] = true;
}

static uint64_t sum_squares(const struct rig *r)
{
	uint64_t sum = 0;
	for (size_t s = 0; s < r->ns; s++)
		sum += (uint64_t)r->s[s].load * r->s[s].load;
	return sum;
}

/* No two replicas of a tablet on one server; with distinct_zones, nor in
 * one zone. */
static void check_tablets(const struct rig *r, bool distinct_zones)
{
	for (size_t i = 0; i < r->nt; i++) {
		const struct policy_tablet *t = &r->t[i];
		for (uint32_t a = 0; a < t->n_replicas; a++)
			for (uint32_t b = a + 1; b < t->n_replicas; b++) {
				CHECK_MSG(t->server[a] != t->server[b],
					  "tablet %zu: server %zu twice", i, t->server[a]);
				if (distinct_zones)
					CHECK_MSG(r->s[t->server[a]].zone !=
							  r->s[t->server[b]].zone,
						  "tablet %zu: zone %u twice", i,
						  r->s[t->server[a]].zone);
			}
	}
}

/* ---- names, zones, placement strings ---------------------------------------------------------- */

TEST(reason_names)
{
	CHECK_EQ_STR(policy_reason_name(POLICY_REREPLICATE), "re-replicate");
	CHECK_EQ_STR(policy_reason_name(POLICY_DRAIN), "drain");
	CHECK_EQ_STR(policy_reason_name(POLICY_REBALANCE), "rebalance");
}

TEST(zone_index)
{
	const char *zones[3];
	uint32_t n = 0;
	char again[] = "aws.eu.a";
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, "aws.eu.a"), 0);
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, ""), 1);
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, again), 0); /* by value */
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, "aws.eu.b"), 2);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, "aws.eu.c"), 3); /* full */
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, ""), 1); /* known ones still found */
	CHECK_EQ_INT(policy_zone_index(zones, &n, 3, "aws.eu.b"), 2);
	n = 0;
	CHECK_EQ_INT(policy_zone_index(zones, &n, 0, "x"), 0); /* cap 0: full at once */
	CHECK_EQ_INT(n, 0);
}

TEST(placement_strings)
{
	static const char *good[] = {
		"", "aws.us-east-1.us-east-1a", "a.b.c", "A_1.b-2.C_3",
		"c.r.012345678901234567890123456789012345678901234567890123456789"};
	static const struct {
		const char *s, *why;
	} bad[] = {
		{"a.b", "2 parts"},
		{"a.b.c.d", "4 parts"},
		{"abc", "1 parts"},
		{".b.c", "empty part"},
		{"a..c", "empty part"},
		{"a.b.", "empty part"},
		{".", "empty part"},
		{"a.b c.d", "byte 0x20"},
		{"a.b/c.d", "byte 0x2f"},
		{"a.\xc3\xa9.c", "byte 0xc3"},
		{"c.r.0123456789012345678901234567890123456789012345678901234567890", "65 bytes"},
	};
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK_MSG(placement_str_valid(good[i], errmsg), "'%s': %s", good[i], errmsg);
	CHECK_EQ_INT(strlen(good[4]), PLACEMENT_STR_MAX);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errmsg[0] = '\0';
		CHECK_MSG(!placement_str_valid(bad[i].s, errmsg), "'%s' accepted", bad[i].s);
		CHECK_MSG(strstr(errmsg, bad[i].why) != NULL, "'%s': '%s' lacks '%s'", bad[i].s,
			  errmsg, bad[i].why);
	}
	CHECK(!placement_str_valid("a.b", NULL)); /* errmsg may be NULL */
}

/* ---- rules and their order -------------------------------------------------------------------- */

TEST(balanced_healthy_cluster_moves_nothing)
{
	struct rig *r = rig(3);
	for (int i = 0; i < 5; i++)
		tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 8, 8), 0);
	/* 4 servers with loads 3,3,3,2 (within one): nothing either. */
	r = rig(4);
	tab3(r, 0, 1, 2);
	tab3(r, 1, 2, 3);
	tab3(r, 2, 3, 0);
	tab3(r, 3, 0, 1);
	tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 8, 8), 0);
	CHECK_EQ_INT(pick(r, 0, 8), 0);
}

TEST(rereplicate_replaces_the_failed_replica)
{
	struct rig *r = rig(4);
	tab3(r, 0, 1, 2);
	fail(r, 1);
	CHECK_EQ_INT(pick(r, 4, 2), 1);
	check_move(&r->out[0], 0, 1, 3, POLICY_REREPLICATE);
}

TEST(rules_in_order)
{
	/* t0: replica on failed 0; t1: on draining 1; t2/t3/t4: healthy on
	 * 2,3,4 with 5 empty (rebalance). Listed in reverse so that order is
	 * by rule, not by tablet. */
	struct rig *r = rig(6);
	tab3(r, 2, 3, 4);
	tab3(r, 2, 3, 4);
	tab3(r, 1, 3, 4);
	tab3(r, 0, 3, 4);
	fail(r, 0);
	r->s[1].draining = true;
	CHECK_EQ_INT(pick(r, 8, 8), 3);
	check_move(&r->out[0], 3, 0, 5, POLICY_REREPLICATE);
	/* 2 holds 2, 5 holds 1 (the pick before counted): 5. */
	check_move(&r->out[1], 2, 0, 5, POLICY_DRAIN);
	/* Loads now (picks counted): 2:2, 3:4, 4:4, 5:2. Most loaded x = 3
	 * (lowest index of the 4s); the least loaded y is 2, which holds
	 * every healthy tablet of 3 (t0, t1), so 5; the first tablet: t0. */
	check_move(&r->out[2], 0, 1, 5, POLICY_REBALANCE);
	/* max_moves 1: only the re-replication. */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	check_move(&r->out[0], 3, 0, 5, POLICY_REREPLICATE);
	/* max_moves 2: no rebalance. */
	CHECK_EQ_INT(pick(r, 2, 8), 2);
	CHECK_EQ_INT(r->out[1].reason, POLICY_DRAIN);
}

TEST(rereplicate_most_at_risk_first)
{
	/* RF 5: t0 lost one replica, t1 lost two: t1 goes first. */
	struct rig *r = rig(10);
	size_t a[5] = {0, 1, 2, 3, 4}, b[5] = {0, 1, 5, 6, 7};
	tab(r, 5, a);
	tab(r, 5, b);
	fail(r, 0);
	fail(r, 1);
	fail(r, 2);
	/* t0 has 2 live of 5 (blocked by majority: 2 + 1 of 6 is not a
	 * majority), t1 has 3 live of 5. */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].tablet, 1);
	revive(r, 2);
	/* Now t0 has 3 live, t1 3 live: index order. */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].tablet, 0);
	r->s[6].live = false; /* t1: 2 live, but majority needs 3 of 6 */
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	CHECK_EQ_U64(r->out[0].tablet, 0);
	r->s[6].live = true;
	r->t[1].up[3] = false; /* not up: counts as down too */
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	CHECK_EQ_U64(r->out[0].tablet, 0);
	r->t[1].up[3] = true;
	fail(r, 2);
	fail(r, 3);
	/* t0: 1 live (blocked), t1: 3 live: only t1. */
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	CHECK_EQ_U64(r->out[0].tablet, 1);
}

TEST(targets_exclude_dead_failed_draining_and_holders)
{
	struct rig *r = rig(8);
	tab3(r, 0, 1, 2);
	tab3(r, 3, 4, 5); /* loads 3, 4, 5 at 1; 6, 7 at 0 */
	fail(r, 0);
	r->s[6].live = false;
	r->s[7].draining = true;
	/* 6 down, 7 draining, 1 and 2 holders: the least loaded of 3, 4, 5,
	 * lowest index. */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 3, POLICY_REREPLICATE);
	r->s[3].failed = true; /* failed while live (flags as the caller sets them) */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 4, POLICY_REREPLICATE);
	r->s[4].load = 9;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 5, POLICY_REREPLICATE);
	r->s[6].live = true; /* 6 is back, empty: the least loaded */
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 6, POLICY_REREPLICATE);
	/* No target at all: nothing. */
	r = rig(3);
	tab3(r, 0, 1, 2);
	r->s[2].failed = true;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
}

TEST(least_loaded_then_lowest_index)
{
	struct rig *r = rig(6);
	tab3(r, 0, 1, 2);
	fail(r, 0);
	reload(r);
	r->s[3].load = 5;
	r->s[4].load = 2;
	r->s[5].load = 2;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].to, 4);
	r->s[4].load = 3;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].to, 5);
}

TEST(zones_distinct_when_enough)
{
	/* Zones: 0,1 in zone 0; 2,3 in zone 1; 4,5 in zone 2. Tablet on 0, 2,
	 * 4; 2 fails: the target is 3 (zone 1) although it is the most loaded. */
	struct rig *r = rig(6);
	for (size_t s = 0; s < 6; s++)
		r->s[s].zone = (uint32_t)(s / 2);
	tab3(r, 0, 2, 4);
	fail(r, 2);
	reload(r);
	r->s[3].load = 10;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 1, 3, POLICY_REREPLICATE);
	/* Zone 1 has no other live server: fall back to any zone, least
	 * loaded (1, zone 0, load 0). */
	r->s[3].live = false;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 1, 1, POLICY_REREPLICATE);
	/* 3 is draining: the same. */
	r->s[3].live = true;
	r->s[3].draining = true;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].to, 1);
	/* Drain keeps zones too: 4 (zone 2) drains, 5 is the target. */
	r->s[3].draining = false;
	revive(r, 2);
	r->s[4].draining = true;
	r->s[5].load = 7;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 2, 5, POLICY_DRAIN);
}

TEST(zones_spread_when_too_few)
{
	/* Two zones for RF 3: 0,1,2 in zone 0, 3,4 in zone 1. Tablet on 0, 1,
	 * 3; 3 fails: the target is 4 (zone 1 has none left), even loaded. */
	struct rig *r = rig(5);
	r->s[3].zone = r->s[4].zone = 1;
	tab3(r, 0, 1, 3);
	fail(r, 3);
	reload(r);
	r->s[4].load = 9;
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 2, 4, POLICY_REREPLICATE);
	/* 0 fails instead: zone 0 keeps one (1), zone 1 one (3): either zone
	 * has a count of 1; the least loaded: 2 (load 0) over 4. */
	revive(r, 3);
	fail(r, 0);
	CHECK_EQ_INT(pick_raw(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 2, POLICY_REREPLICATE);
	/* One zone only ("" everywhere): plain least loaded. */
	r = rig(4);
	tab3(r, 0, 1, 2);
	r->s[0].failed = true;
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	CHECK_EQ_U64(r->out[0].to, 3);
}

TEST(next_replica_when_first_has_no_target)
{
	/* RF 5 in 5 zones (server s in zone s % 5), on 0..4; 0 and 1 failed.
	 * Zone 0's other server (5) is busy: replica 1 (zone 1) goes first, to
	 * 6. Drain likewise: 2 and 3 drain, 7 busy: replica 3 goes to 8. */
	struct rig *r = rig(10);
	size_t v[5] = {0, 1, 2, 3, 4};
	for (size_t s = 0; s < 10; s++)
		r->s[s].zone = (uint32_t)(s % 5);
	tab(r, 5, v);
	fail(r, 0);
	fail(r, 1);
	r->s[5].moves_in_flight = 2;
	CHECK_EQ_INT(pick(r, 4, 2), 1);
	check_move(&r->out[0], 0, 1, 6, POLICY_REREPLICATE);
	revive(r, 0);
	revive(r, 1);
	r->s[2].draining = r->s[3].draining = true;
	r->s[7].moves_in_flight = 2;
	CHECK_EQ_INT(pick(r, 4, 2), 1);
	check_move(&r->out[0], 0, 3, 8, POLICY_DRAIN);
	/* A live source without budget: the next one. */
	r->s[7].moves_in_flight = 0;
	r->s[2].moves_in_flight = 2;
	CHECK_EQ_INT(pick(r, 4, 2), 1);
	check_move(&r->out[0], 0, 3, 8, POLICY_DRAIN);
}

TEST(zone_target_busy_means_wait)
{
	/* The only server in the free zone has no budget: no move into a zone
	 * that already has a replica; the tablet waits. */
	struct rig *r = rig(5);
	r->s[0].zone = 0;
	r->s[1].zone = 1;
	r->s[2].zone = 2;
	r->s[3].zone = 0; /* 3: zone 0, free budget */
	r->s[4].zone = 2; /* 4: zone 2, busy */
	tab3(r, 0, 1, 2);
	fail(r, 2);
	r->s[4].moves_in_flight = 2;
	CHECK_EQ_INT(pick(r, 4, 2), 0);
	r->s[4].moves_in_flight = 1;
	CHECK_EQ_INT(pick(r, 4, 2), 1);
	check_move(&r->out[0], 0, 2, 4, POLICY_REREPLICATE);
}

TEST(majority_rule)
{
	struct rig *r = rig(6);
	size_t one[1] = {0};
	tab3(r, 0, 1, 2);
	/* One lost of 3: 2 live + the new one = 3 of 4. */
	fail(r, 0);
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	/* Two lost: 1 + 1 of 4 is no majority. */
	fail(r, 1);
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	/* One failed and one down (not failed yet): no move either. */
	r->s[1].failed = false;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	/* One failed and one live but not up (catching up, old term). */
	r->s[1].live = true;
	r->t[0].up[1] = false;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	r->t[0].up[1] = true;
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	/* A replica on a server the master does not know counts as down and
	 * is not replaced. */
	r->t[0].server[0] = POLICY_NONE;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	r->t[0].server[1] = POLICY_NONE;
	r->s[1].failed = true;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	/* Drain under the same rule: a draining tablet with one replica down
	 * moves (2 up + new of 4), with two down it does not. */
	r = rig(5);
	tab3(r, 0, 1, 2);
	r->s[0].draining = true;
	r->s[1].live = false;
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	check_move(&r->out[0], 0, 0, 3, POLICY_DRAIN);
	r->s[2].live = false;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	/* RF 1: a failed replica is lost for good (nothing to copy from); a
	 * draining one moves. */
	r = rig(2);
	tab(r, 1, one);
	fail(r, 0);
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	revive(r, 0);
	r->s[0].draining = true;
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	check_move(&r->out[0], 0, 0, 1, POLICY_DRAIN);
	/* A tablet with a replica down is not rebalanced. */
	r = rig(4);
	tab3(r, 0, 1, 2);
	tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 4, 8), 1);
	r->t[0].up[2] = false;
	r->t[1].up[0] = false;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
}

TEST(moving_and_mid_move_tablets_skipped)
{
	struct rig *r = rig(5);
	size_t four[4] = {0, 1, 2, 3};
	tab3(r, 0, 1, 2);
	fail(r, 0);
	r->t[0].moving = true;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	r->t[0].moving = false;
	/* The spare promoted, the old replica not yet removed: 4 voters. */
	r->nt = 0;
	tab(r, 3, four);
	r->t[0].n_replicas = 4;
	r->t[0].server[3] = 3;
	r->t[0].up[3] = true;
	CHECK_EQ_INT(pick(r, 4, 8), 0);
	/* Not moving any more: repaired. */
	r->nt = 0;
	tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 4, 8), 1);
}

TEST(limits)
{
	/* Server 0 failed with 6 tablets; 6 empty targets. */
	struct rig *r = rig(9);
	for (int i = 0; i < 6; i++)
		tab3(r, 0, 1, 2);
	fail(r, 0);
	/* max_moves bounds the count; one move per tablet. */
	CHECK_EQ_INT(pick(r, 4, 8), 4);
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ_U64(r->out[i].tablet, i);
		CHECK_EQ_U64(r->out[i].to, 3 + i); /* loads grow: each goes to the next */
	}
	/* The failed source is not limited: per server 1 still gives 6. */
	CHECK_EQ_INT(pick(r, 16, 1), 6);
	/* Moves in flight count: 3 and 4 have one each, limit 1: 4 moves. */
	r->s[3].moves_in_flight = 1;
	r->s[4].moves_in_flight = 1;
	CHECK_EQ_INT(pick(r, 16, 1), 4);
	for (size_t i = 0; i < 4; i++)
		CHECK(r->out[i].to >= 5);
	/* Limit 2: 3 and 4 take one more each. */
	CHECK_EQ_INT(pick(r, 16, 2), 6);
	/* A live source is limited: drain 6 tablets off 0 with limit 2. */
	revive(r, 0);
	r->s[0].draining = true;
	r->s[3].moves_in_flight = r->s[4].moves_in_flight = 0;
	CHECK_EQ_INT(pick(r, 16, 2), 2);
	r->s[0].moves_in_flight = 1;
	CHECK_EQ_INT(pick(r, 16, 2), 1);
	r->s[0].moves_in_flight = 2;
	CHECK_EQ_INT(pick(r, 16, 2), 0);
	/* Limit 0: nothing moves. */
	r->s[0].moves_in_flight = 0;
	CHECK_EQ_INT(pick(r, 16, 0), 0);
}

TEST(rebalance_picks)
{
	/* 4 servers, 3 tablets on 0,1,2: loads 3,3,3,0. */
	struct rig *r = rig(4);
	tab3(r, 0, 1, 2);
	tab3(r, 0, 1, 2);
	tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 8, 8), 2);
	check_move(&r->out[0], 0, 0, 3, POLICY_REBALANCE); /* 2,3,3,1 */
	check_move(&r->out[1], 1, 1, 3, POLICY_REBALANCE); /* 2,2,3,2 */
	/* The target's budget: 3 takes one. */
	CHECK_EQ_INT(pick(r, 8, 1), 1);
	/* Moves in flight counted at the target (as the caller fills load):
	 * 3 at load 2 and 0 at 3 are within one of 3: nothing. */
	reload(r);
	r->s[3].load = 2;
	CHECK_EQ_INT(pick_raw(r, 8, 8), 0);
	/* Loads differ by one: nothing. */
	r = rig(2);
	size_t one[1] = {0};
	tab(r, 1, one);
	CHECK_EQ_INT(pick(r, 8, 8), 0);
	tab(r, 1, one);
	CHECK_EQ_INT(pick(r, 8, 8), 1); /* 2 vs 0 */
	check_move(&r->out[0], 0, 0, 1, POLICY_REBALANCE);
	/* Failed, down and draining servers take part in no rebalance. */
	r->ns = 3;
	r->s[1].live = false;
	r->s[2].live = true;
	r->s[2].draining = true;
	CHECK_EQ_INT(pick(r, 8, 8), 0);
}

TEST(rebalance_keeps_zones)
{
	/* Zones 0: {0, 3}, 1: {1, 4}, 2: {2}. Tablets on 0,1,2 (x4). 3 and 4
	 * are empty: replicas of 0 go to 3, of 1 to 4 — never across zones. */
	struct rig *r = rig(5);
	r->s[0].zone = r->s[3].zone = 0;
	r->s[1].zone = r->s[4].zone = 1;
	r->s[2].zone = 2;
	for (int i = 0; i < 4; i++)
		tab3(r, 0, 1, 2);
	for (int round = 0; round < 20 && pick(r, 8, 8) > 0; round++)
		for (size_t i = 0; i < r->n_out; i++) {
			size_t from = r->t[r->out[i].tablet].server[r->out[i].replica];
			CHECK_EQ_INT(r->s[from].zone, r->s[r->out[i].to].zone);
			apply(r, &r->out[i]);
		}
	reload(r);
	CHECK_EQ_INT(r->s[0].load, 2);
	CHECK_EQ_INT(r->s[3].load, 2);
	CHECK_EQ_INT(r->s[1].load, 2);
	CHECK_EQ_INT(r->s[4].load, 2);
	CHECK_EQ_INT(r->s[2].load, 4); /* alone in its zone */
	check_tablets(r, true);
}

TEST(rebalance_never_lowers_zone_spread)
{
	/* A tablet with two replicas in zone 0 (0 and 1) and one in zone 1
	 * (2); 3 is zone 1 and empty, 4 zone 2 and empty. The replica moving
	 * off 0 or 1 may go anywhere with count <= 1, the one of 2 (zone
	 * count 0) only to zone 2. */
	struct rig *r = rig(5);
	r->s[2].zone = r->s[3].zone = 1;
	r->s[4].zone = 2;
	tab3(r, 0, 1, 2);
	tab3(r, 0, 1, 2);
	CHECK_EQ_INT(pick(r, 1, 8), 1);
	check_move(&r->out[0], 0, 0, 3, POLICY_REBALANCE); /* 0 -> 3: count 1 <= 1 */
	/* Distinct zones 0, 1, 2 on 0, 1, 2; 3 empty. */
	r = rig(4);
	r->s[1].zone = 1;
	r->s[2].zone = 2;
	r->s[3].zone = 1;
	tab3(r, 0, 1, 2);
	tab3(r, 0, 1, 2);
	/* 3 (zone 1) may take 1's replica (zone 1 count 0 <= 0) but not 0's or
	 * 2's (zone 1 already has 1's). */
	CHECK_EQ_INT(pick(r, 8, 8), 1);
	check_move(&r->out[0], 0, 1, 3, POLICY_REBALANCE);
	r->s[3].zone = 0;
	CHECK_EQ_INT(pick(r, 8, 8), 1);
	check_move(&r->out[0], 0, 0, 3, POLICY_REBALANCE);
	r->s[3].zone = 3; /* a fourth zone: any replica, the first: from 0 */
	CHECK_EQ_INT(pick(r, 8, 8), 1);
	check_move(&r->out[0], 0, 0, 3, POLICY_REBALANCE);
}

/* ---- simulations ------------------------------------------------------------------------------ */

/* Applies picks until none comes; checks every rebalance move lowers the
 * sum of squared loads. Returns the rounds. */
static int converge(struct rig *r, size_t max_moves, uint32_t per_server, int max_rounds)
{
	int round;
	for (round = 0; round < max_rounds; round++) {
		if (pick(r, max_moves, per_server) == 0)
			return round;
		for (size_t i = 0; i < r->n_out; i++) {
			uint64_t before = sum_squares(r);
			if (r->out[i].reason != POLICY_REBALANCE) {
				apply(r, &r->out[i]);
				reload(r);
				continue;
			}
			apply(r, &r->out[i]);
			reload(r);
			CHECK_MSG(sum_squares(r) < before,
				  "round %d move %zu: %" PRIu64 " -> %" PRIu64, round, i, before,
				  sum_squares(r));
		}
	}
	CHECK_MSG(false, "no end after %d rounds", max_rounds);
	return round;
}

static void check_within_one(const struct rig *r)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	for (size_t s = 0; s < r->ns; s++) {
		if (!r->s[s].live || r->s[s].failed || r->s[s].draining)
			continue;
		lo = r->s[s].load < lo ? r->s[s].load : lo;
		hi = r->s[s].load > hi ? r->s[s].load : hi;
	}
	CHECK_MSG(hi <= lo + 1, "loads from %u to %u", lo, hi);
}

TEST(rebalance_converges_after_add_node)
{
	/* 3 servers with 12 tablets, 3 added: loads end at 6 each. */
	struct rig *r = rig(6);
	for (int i = 0; i < 12; i++)
		tab3(r, 0, 1, 2);
	converge(r, 4, 2, 100);
	check_within_one(r);
	check_tablets(r, false);
	for (size_t s = 0; s < 6; s++)
		CHECK_EQ_INT(r->s[s].load, 6);
	/* In 3 zones of 3 (added one per zone): within one, zones distinct. */
	r = rig(9);
	for (size_t s = 0; s < 9; s++)
		r->s[s].zone = (uint32_t)(s % 3);
	for (int i = 0; i < 20; i++)
		tab3(r, (size_t)(i % 2) * 3, (size_t)(i % 2) * 3 + 1, (size_t)(i % 2) * 3 + 2);
	converge(r, 3, 1, 200);
	check_within_one(r);
	check_tablets(r, true);
}

/* A random cluster: ns servers in nz zones (0: all in zone 0), nt tablets
 * of rf placed at random on distinct servers (in distinct zones when
 * nz >= rf). */
static void random_cluster(struct rig *r, uint64_t *seed, size_t ns, uint32_t nz, size_t nt,
			   uint32_t rf)
{
	rig(ns);
	for (size_t s = 0; s < ns; s++)
		r->s[s].zone = nz > 0 ? (uint32_t)(test_rand(seed) % nz) : 0;
	for (size_t i = 0; i < nt; i++) {
		size_t v[PLACEMENT_MAX_RF];
		for (uint32_t k = 0; k < rf; k++) {
			bool ok;
			do {
				v[k] = test_rand(seed) % ns;
				ok = true;
				for (uint32_t j = 0; j < k; j++)
					ok = ok && v[j] != v[k] &&
					     (nz < rf || r->s[v[j]].zone != r->s[v[k]].zone);
			} while (!ok);
		}
		tab(r, rf, v);
	}
}

static bool zones_distinct(const struct rig *r, size_t i)
{
	const struct policy_tablet *t = &r->t[i];
	for (uint32_t a = 0; a < t->n_replicas; a++)
		for (uint32_t b = a + 1; b < t->n_replicas; b++)
			if (r->s[t->server[a]].zone == r->s[t->server[b]].zone)
				return false;
	return true;
}

TEST(rebalance_property_random_clusters)
{
	uint64_t seed = 0x5eed15;
	for (int c = 0; c < 60; c++) {
		size_t ns = 3 + test_rand(&seed) % 14;
		uint32_t rf = ns >= 5 && test_rand(&seed) % 3 == 0 ? 5 : 3;
		uint32_t nz = (uint32_t)(test_rand(&seed) % 6); /* 0: no zones */
		size_t nt = 1 + test_rand(&seed) % 60;
		bool distinct[NT_MAX];
		if (nz > 0 && nz < rf && test_rand(&seed) % 2 == 0)
			nz = rf; /* more clusters with enough zones */
		/* Enough servers per zone for the placement loop to end. */
		bool zones_ok = true;
		random_cluster(&R, &seed, ns, nz, 0, rf);
		if (nz >= rf) {
			uint32_t seen = 0;
			for (uint32_t z = 0; z < nz; z++)
				for (size_t s = 0; s < ns; s++)
					if (R.s[s].zone == z) {
						seen++;
						break;
					}
			zones_ok = seen >= rf;
		}
		if (!zones_ok)
			nz = 0;
		random_cluster(&R, &seed, ns, nz, nt, rf);
		for (size_t i = 0; i < nt; i++)
			distinct[i] = zones_distinct(&R, i);
		converge(&R, 1 + test_rand(&seed) % 6, 1 + (uint32_t)(test_rand(&seed) % 3), 5000);
		check_tablets(&R, false);
		for (size_t i = 0; i < nt; i++)
			CHECK_MSG(!distinct[i] || zones_distinct(&R, i),
				  "case %d: tablet %zu lost its distinct zones", c, i);
		if (nz == 0)
			check_within_one(&R);
	}
}

TEST(drain_empties_a_server)
{
	/* 5 servers, 10 tablets; 2 drains: it ends with nothing and the
	 * others within one. */
	struct rig *r = rig(5);
	for (size_t i = 0; i < 10; i++)
		tab3(r, i % 5, (i + 1) % 5, (i + 2) % 5);
	r->s[2].draining = true;
	converge(r, 4, 2, 100);
	CHECK_EQ_INT(r->s[2].load, 0);
	check_within_one(r);
	check_tablets(r, false);
	/* In zones: 6 servers, 3 zones of 2; 5 drains: its zone-mate 2 takes
	 * everything. */
	r = rig(6);
	for (size_t s = 0; s < 6; s++)
		r->s[s].zone = (uint32_t)(s % 3);
	for (size_t i = 0; i < 9; i++)
		tab3(r, (i % 2) * 3, (i % 2) * 3 + 1, (i % 2) * 3 + 2);
	r->s[5].draining = true;
	converge(r, 4, 2, 100);
	CHECK_EQ_INT(r->s[5].load, 0);
	CHECK_EQ_INT(r->s[2].load, 9);
	check_tablets(r, true);
	/* No capacity (3 servers, RF 3): nothing moves, nothing breaks. */
	r = rig(3);
	tab3(r, 0, 1, 2);
	r->s[0].draining = true;
	CHECK_EQ_INT(pick(r, 4, 2), 0);
}

TEST(large_cluster)
{
	/* 1024 tablets on 100 servers, RF 3, 3 zones; ten new empty servers,
	 * one failed and one draining: a call of 16 moves. */
	struct rig *r = rig(110);
	struct timespec a, b;
	uint64_t seed = 42;
	for (size_t s = 0; s < 110; s++)
		r->s[s].zone = (uint32_t)(s % 3);
	for (size_t i = 0; i < 1024; i++) {
		size_t base = 3 * (test_rand(&seed) % 33);
		tab3(r, base, base + 1, base + 2);
	}
	fail(r, 7);
	r->s[8].draining = true;
	reload(r);
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK_EQ_INT(pick(r, 16, 4), 16);
	clock_gettime(CLOCK_MONOTONIC, &b);
	test_note("1024 tablets x 110 servers, 16 moves: %.1f ms",
		  (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	for (size_t i = 0; i < 16; i++) {
		CHECK_EQ_INT(r->out[i].reason, POLICY_REREPLICATE);
		CHECK_EQ_INT(r->s[r->out[i].to].zone, r->s[7].zone);
	}
	/* Rebalance alone: no failure, no drain. */
	revive(r, 7);
	r->s[8].draining = false;
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK_EQ_INT(pick(r, 16, 4), 16);
	clock_gettime(CLOCK_MONOTONIC, &b);
	test_note("rebalance, 16 moves: %.1f ms",
		  (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	for (size_t i = 0; i < 16; i++)
		CHECK_EQ_INT(r->out[i].reason, POLICY_REBALANCE);
}

/* ---- a simulation of moves with failures -------------------------------------------------------
 *
 * A model of the master's move engine around policy_pick: a move adds a
 * spare on its target (phase ADDED: catching up, not a voter), promotes
 * it (PROMOTED: rf + 1 voters), then removes the replaced replica. A
 * step needs the configuration after it to keep a live majority; a move
 * whose target died rolls back (the spare dropped, or the new voter
 * removed). Each round injects at most one event (a server dies, comes
 * back, is declared failed, drains or undrains; a server is added), then
 * advances every move by one step, then asks the policy for more with the
 * budget left. A server dies for good only while fewer than (rf - 1) / 2
 * servers dead for good still hold a replica; besides those, one more may
 * be down for a few rounds (less than the time to be declared failed):
 * then some tablets have no live majority for a while, and neither the
 * policy nor the engine may touch them. A zone keeps two available
 * servers (live, not draining), so zones stay distinct. Checked after
 * every step: each tablet has a live majority unless a server is down for
 * a while, a step runs only with a live majority and keeps it, the policy
 * picks only tablets whose live-and-up replicas plus the new one are a
 * majority of n_replicas + 1, and only eligible targets that hold none of
 * the tablet. At the end (no more events, the dead declared failed, the
 * blips back): every tablet at rf voters on distinct live servers in
 * distinct zones, none on a draining server, loads of the available
 * servers within one per zone, nothing in flight. RF 3 (12 seeds) and
 * RF 5 (4 seeds), one zone per replica. */

#define SIM_NS 32
#define SIM_MAX_MOVES 4
#define SIM_PER_SERVER 2

enum sim_phase { SIM_IDLE = 0, SIM_ADDED, SIM_PROMOTED };

struct sim_move {
	enum sim_phase phase;
	size_t old, to;
};

struct sim {
	uint64_t seed;
	size_t ns;
	bool dead[SIM_NS];
	uint32_t dead_rounds[SIM_NS];
	uint32_t
		blip[SIM_NS]; /* dead for this many rounds, then back (never failed); 0: for good */
	bool failed[SIM_NS], draining[SIM_NS];
	uint32_t zone[SIM_NS];
	size_t nt;
	uint32_t n[NT_MAX];
	size_t v[NT_MAX][POLICY_MAX_REPLICAS];
	struct sim_move mv[NT_MAX];
	uint32_t rf, zones; /* one zone per replica */
	uint64_t picks, steps, rollbacks, events;
};

static uint32_t sim_live_voters(const struct sim *m, size_t t)
{
	uint32_t live = 0;
	for (uint32_t k = 0; k < m->n[t]; k++)
		live += !m->dead[m->v[t][k]];
	return live;
}

static bool sim_holds_voter(const struct sim *m, size_t t, size_t s)
{
	for (uint32_t k = 0; k < m->n[t]; k++)
		if (m->v[t][k] == s)
			return true;
	return false;
}

static void sim_remove(struct sim *m, size_t t, size_t s)
{
	for (uint32_t k = 0; k < m->n[t]; k++)
		if (m->v[t][k] == s) {
			m->v[t][k] = m->v[t][--m->n[t]];
			return;
		}
	CHECK_MSG(false, "tablet %zu: no voter on %zu", t, s);
}

/* Whether removing voter s of tablet t leaves a live majority. */
static bool sim_may_remove(const struct sim *m, size_t t, size_t s)
{
	uint32_t live = sim_live_voters(m, t) - !m->dead[s];
	return 2 * live > m->n[t] - 1;
}

/* Servers dead for good that still hold a voter or are a move's target. */
static uint32_t sim_dead_holders(const struct sim *m)
{
	uint32_t n = 0;
	for (size_t s = 0; s < m->ns; s++) {
		bool holds = false;
		if (!m->dead[s] || m->blip[s] != 0)
			continue;
		for (size_t t = 0; t < m->nt && !holds; t++)
			holds = sim_holds_voter(m, t, s) ||
				(m->mv[t].phase != SIM_IDLE && m->mv[t].to == s);
		n += holds;
	}
	return n;
}

static bool sim_blipping(const struct sim *m)
{
	for (size_t s = 0; s < m->ns; s++)
		if (m->dead[s] && m->blip[s] > 0)
			return true;
	return false;
}

static uint32_t sim_available_in_zone(const struct sim *m, uint32_t zone, size_t except)
{
	uint32_t n = 0;
	for (size_t s = 0; s < m->ns; s++)
		n += s != except && m->zone[s] == zone && !m->dead[s] && !m->draining[s];
	return n;
}

static void sim_event(struct sim *m, bool end)
{
	size_t s = test_rand(&m->seed) % m->ns;
	unsigned what = (unsigned)(test_rand(&m->seed) % 16);
	for (size_t i = 0; i < m->ns; i++) {
		if (!m->dead[i] || m->failed[i])
			continue;
		m->dead_rounds[i]++;
		if (m->blip[i] > 0 && (end || m->dead_rounds[i] >= m->blip[i]))
			m->dead[i] = false; /* back before being declared failed */
		else if (m->blip[i] == 0 && (end || m->dead_rounds[i] >= 6))
			m->failed[i] = true; /* silent past --tserver-failed-after-s */
	}
	if (end)
		return;
	if (what == 0 && !m->dead[s] && sim_dead_holders(m) < (m->rf - 1) / 2 &&
	    sim_available_in_zone(m, m->zone[s], s) >= 2) {
		m->dead[s] = true; /* dies for good */
		m->blip[s] = 0;
		m->dead_rounds[s] = 0;
		m->events++;
	} else if (what == 1 && !m->dead[s] && !sim_blipping(m) &&
		   sim_available_in_zone(m, m->zone[s], s) >= 2) {
		/* Down for a while (a second failure at the same time: some
		 * tablets have no live majority until it is back). */
		m->dead[s] = true;
		m->blip[s] = 1 + (uint32_t)(test_rand(&m->seed) % 4);
		m->dead_rounds[s] = 0;
		m->events++;
	} else if (what == 2 && !m->dead[s] && !m->draining[s] &&
		   sim_available_in_zone(m, m->zone[s], s) >= 2) {
		m->draining[s] = true;
		m->events++;
	} else if (what == 3 && m->draining[s]) {
		m->draining[s] = false;
		m->events++;
	} else if (what == 4 && m->ns < SIM_NS) {
		m->zone[m->ns++] = (uint32_t)(test_rand(&m->seed) % m->zones); /* add-node */
		m->events++;
	}
}

/* One step of tablet t's move. */
static void sim_step(struct sim *m, size_t t)
{
	struct sim_move *mv = &m->mv[t];
	if (2 * sim_live_voters(m, t) <= m->n[t])
		return; /* no live majority: no configuration change commits */
	if (mv->phase == SIM_ADDED) {
		if (m->dead[mv->to]) {
			mv->phase = SIM_IDLE; /* roll back: drop the spare */
			m->rollbacks++;
		} else if (2 * (sim_live_voters(m, t) + 1) > m->n[t] + 1) {
			m->v[t][m->n[t]++] = mv->to; /* promote */
			mv->phase = SIM_PROMOTED;
		}
	} else if (mv->phase == SIM_PROMOTED) {
		size_t gone = m->dead[mv->to] ? mv->to : mv->old;
		if (!sim_may_remove(m, t, gone))
			return; /* waits */
		sim_remove(m, t, gone);
		m->rollbacks += gone == mv->to;
		mv->phase = SIM_IDLE;
	}
	m->steps++;
	CHECK_MSG(2 * sim_live_voters(m, t) > m->n[t], "tablet %zu: %u live of %u after a step", t,
		  sim_live_voters(m, t), m->n[t]);
	CHECK(m->n[t] <= m->rf + 1);
}

/* The policy's view of the model, a pick, the moves started. */
static void sim_pick(struct sim *m, struct rig *r)
{
	size_t in_flight = 0, got;
	memset(r, 0, sizeof *r);
	r->ns = m->ns;
	r->nt = m->nt;
	for (size_t s = 0; s < m->ns; s++) {
		r->s[s].live = !m->dead[s];
		r->s[s].failed = m->failed[s];
		r->s[s].draining = m->draining[s];
		r->s[s].zone = m->zone[s];
	}
	for (size_t t = 0; t < m->nt; t++) {
		struct policy_tablet *pt = &r->t[t];
		pt->rf = m->rf;
		pt->n_replicas = m->n[t];
		for (uint32_t k = 0; k < m->n[t]; k++) {
			pt->server[k] = m->v[t][k];
			pt->up[k] = !m->dead[m->v[t][k]];
			r->s[m->v[t][k]].load++;
		}
		pt->moving = m->mv[t].phase != SIM_IDLE;
		if (pt->moving) {
			in_flight++;
			if (m->mv[t].phase == SIM_ADDED)
				r->s[m->mv[t].to].load++; /* counted at its target */
			r->s[m->mv[t].to].moves_in_flight++;
			r->s[m->mv[t].old].moves_in_flight++;
		}
	}
	if (in_flight >= SIM_MAX_MOVES)
		return;
	got = pick_raw(r, SIM_MAX_MOVES - in_flight, SIM_PER_SERVER);
	for (size_t i = 0; i < got; i++) {
		const struct policy_move *pm = &r->out[i];
		size_t t = pm->tablet, to = pm->to;
		CHECK(t < m->nt && pm->replica < m->n[t] && to < m->ns);
		CHECK_MSG(m->n[t] <= m->rf && m->mv[t].phase == SIM_IDLE, "tablet %zu moves twice",
			  t);
		CHECK_MSG(2 * (sim_live_voters(m, t) + 1) > m->n[t] + 1,
			  "tablet %zu picked with %u live of %u", t, sim_live_voters(m, t),
			  m->n[t]);
		CHECK_MSG(!m->dead[to] && !m->failed[to] && !m->draining[to] &&
				  !sim_holds_voter(m, t, to),
			  "tablet %zu: bad target %zu", t, to);
		m->mv[t] = (struct sim_move){SIM_ADDED, m->v[t][pm->replica], to};
		m->picks++;
	}
}

static void sim_check_end(const struct sim *m)
{
	uint32_t lo = UINT32_MAX, hi = 0, load[SIM_NS] = {0};
	for (size_t t = 0; t < m->nt; t++) {
		CHECK_EQ_INT(m->mv[t].phase, SIM_IDLE);
		CHECK_MSG(m->n[t] == m->rf, "tablet %zu: %u voters", t, m->n[t]);
		for (uint32_t a = 0; a < m->n[t]; a++) {
			size_t s = m->v[t][a];
			CHECK_MSG(!m->dead[s] && !m->draining[s], "tablet %zu on %zu (dead %d)", t,
				  s, m->dead[s]);
			load[s]++;
			for (uint32_t b = a + 1; b < m->n[t]; b++)
				CHECK_MSG(m->zone[s] != m->zone[m->v[t][b]],
					  "tablet %zu: zone %u twice", t, m->zone[s]);
		}
	}
	/* Within one per zone (moves keep zones: each zone holds every
	 * tablet once), for the available servers. */
	for (uint32_t z = 0; z < m->zones; z++) {
		lo = UINT32_MAX;
		hi = 0;
		for (size_t s = 0; s < m->ns; s++) {
			if (m->zone[s] != z || m->dead[s] || m->draining[s])
				continue;
			lo = load[s] < lo ? load[s] : lo;
			hi = load[s] > hi ? load[s] : hi;
		}
		CHECK_MSG(hi <= lo + 1, "zone %u: loads %u..%u", z, lo, hi);
	}
}

static void sim_run(uint64_t seed, uint32_t rf, size_t nt, int rounds)
{
	static struct sim m;
	memset(&m, 0, sizeof m);
	m.seed = seed;
	m.rf = rf;
	m.zones = rf;
	m.ns = 3 * (size_t)rf;
	m.nt = nt;
	for (size_t s = 0; s < m.ns; s++)
		m.zone[s] = (uint32_t)(s % m.zones);
	/* Each tablet on one server of each zone. */
	for (size_t t = 0; t < nt; t++) {
		m.n[t] = rf;
		for (uint32_t k = 0; k < rf; k++)
			m.v[t][k] = k + m.zones * (test_rand(&m.seed) % 3);
	}
	int round;
	for (round = 0; round < rounds; round++) {
		sim_event(&m, false);
		for (size_t t = 0; t < m.nt; t++)
			if (m.mv[t].phase != SIM_IDLE)
				sim_step(&m, t);
		sim_pick(&m, &R);
		/* Only the blip takes a majority away (every voter but one alive
		 * otherwise). */
		for (size_t t = 0; t < m.nt; t++)
			CHECK_MSG(2 * sim_live_voters(&m, t) > m.n[t] || sim_blipping(&m),
				  "round %d tablet %zu: %u of %u", round, t, sim_live_voters(&m, t),
				  m.n[t]);
	}
	/* The end: no more events, the dead are declared failed, undrained
	 * capacity as it is; run until nothing moves. */
	for (round = 0; round < 2000; round++) {
		bool busy = false;
		sim_event(&m, true);
		for (size_t t = 0; t < m.nt; t++)
			if (m.mv[t].phase != SIM_IDLE) {
				sim_step(&m, t);
				busy = true;
			}
		sim_pick(&m, &R);
		busy = busy || R.n_out > 0;
		if (!busy)
			break;
	}
	CHECK_MSG(round < 2000, "seed %" PRIu64 ": still moving", seed);
	sim_check_end(&m);
	test_note("seed %" PRIu64 ": %" PRIu64 " events, %" PRIu64 " moves, %" PRIu64
		  " steps, %" PRIu64 " rollbacks, %d rounds to settle, %zu servers",
		  seed, m.events, m.picks, m.steps, m.rollbacks, round, m.ns);
}

TEST(simulation_with_failures)
{
	for (uint64_t seed = 1; seed <= 12; seed++)
		sim_run(seed * 0x9e3779b97f4a7c15ull, 3, 48, 600);
	for (uint64_t seed = 13; seed <= 16; seed++)
		sim_run(seed * 0x9e3779b97f4a7c15ull, 5, 40, 600);
}

TEST_MAIN(T(reason_names), T(zone_index), T(placement_strings),
	  T(balanced_healthy_cluster_moves_nothing), T(rereplicate_replaces_the_failed_replica),
	  T(rules_in_order), T(rereplicate_most_at_risk_first),
	  T(targets_exclude_dead_failed_draining_and_holders), T(least_loaded_then_lowest_index),
	  T(zones_distinct_when_enough), T(zones_spread_when_too_few),
	  T(zone_target_busy_means_wait), T(next_replica_when_first_has_no_target),
	  T(majority_rule), T(moving_and_mid_move_tablets_skipped), T(limits), T(rebalance_picks),
	  T(rebalance_keeps_zones), T(rebalance_never_lowers_zone_spread),
	  T(rebalance_converges_after_add_node), T(rebalance_property_random_clusters),
	  T(drain_empties_a_server), T(large_cluster), T(simulation_with_failures))
