/* Leader balancing (src/master/balance.c): the pure decision. Balanced
 * input moves nothing; 3/1/0 moves a leader from the 3 to the 0; moves in
 * flight count at their target and block their tablet for the cooldown;
 * dead or unsettled servers, servers without a replica and tablets with an
 * unknown leader, an unready live replica or no ready majority are never
 * used; ties are broken by
 * server index, then tablet order; repeated application converges.
 * Per table: a table's leaders are evened out before the totals, a move
 * for the totals never puts a table two apart, the largest gap in a
 * table goes first; a draining server's leaders leave first and no
 * leader moves to a draining server; random multi-table layouts converge
 * to every table and every total within one. */
#include <stdio.h>
#include <string.h>

#include "master/balance.h"
#include "test.h"

#define NOW 100000
#define COOL 5000
#define NS_MAX 8
#define NT_MAX 64

struct rig {
	struct balance_server s[NS_MAX];
	size_t ns;
	struct balance_tablet t[NT_MAX];
	size_t nt;
	struct balance_load load[NS_MAX];
};

static void rig_init(struct rig *r, size_t ns)
{
	memset(r, 0, sizeof *r);
	r->ns = ns;
	for (size_t i = 0; i < ns; i++)
		r->s[i].live = true;
}

/* A tablet led by leader (BALANCE_NONE: unknown) with replicas on the
 * servers a, b, c (RF 3), all ready. Returns its index. */
static size_t add3(struct rig *r, size_t leader, size_t a, size_t b, size_t c)
{
	struct balance_tablet *t = &r->t[r->nt];
	memset(t, 0, sizeof *t);
	t->leader = leader;
	t->n_replicas = 3;
	t->server[0] = a;
	t->server[1] = b;
	t->server[2] = c;
	for (int k = 0; k < 3; k++)
		t->ready[k] = true;
	t->moved_to = BALANCE_NONE;
	return r->nt++;
}

static bool pick(struct rig *r, size_t from, struct balance_move *mv)
{
	return balance_pick(r->s, r->ns, r->t, r->nt, from, NOW, COOL, r->load, mv);
}

/* The leaders the last pick counted on servers 0, 1, 2. */
static void counted(const struct rig *r, int l0, int l1, int l2)
{
	CHECK_EQ_INT(r->load[0].leaders, l0);
	CHECK_EQ_INT(r->load[1].leaders, l1);
	CHECK_EQ_INT(r->load[2].leaders, l2);
}

/* The master instructed a move of tablet t to server to at time at. */
static void moved(struct rig *r, size_t t, uint64_t at, size_t to)
{
	r->t[t].moved_ms = at;
	r->t[t].moved_to = to;
}

/* n tablets on servers 0, 1, 2, with lead[i] of them led by server i. */
static void layout3(struct rig *r, const int lead[3])
{
	rig_init(r, 3);
	for (size_t s = 0; s < 3; s++)
		for (int i = 0; i < lead[s]; i++)
			add3(r, s, 0, 1, 2);
}

TEST(balanced_moves_nothing)
{
	static const int cases[][3] = {{2, 2, 2}, {3, 2, 2}, {3, 3, 2}, {1, 0, 0}, {0, 0, 0}};
	struct balance_move mv;
	struct rig r;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		layout3(&r, cases[c]);
		for (size_t from = 0; from < 3; from++)
			CHECK_MSG(!pick(&r, from, &mv), "case %zu from %zu", c, from);
		for (size_t s = 0; s < 3; s++) {
			CHECK_EQ_INT(r.load[s].leaders, cases[c][s]);
			CHECK(r.load[s].settled);
		}
	}
}

TEST(three_one_zero)
{
	static const int lead[3] = {3, 1, 0};
	struct balance_move mv;
	struct rig r;
	layout3(&r, lead);
	/* Only the server with 3 moves, and to the one with 0. */
	CHECK(!pick(&r, 1, &mv));
	CHECK(!pick(&r, 2, &mv));
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 2);
	CHECK_EQ_INT(mv.tablet, 0); /* the first of its tablets */
	CHECK_EQ_INT(mv.replica, 2);
	counted(&r, 3, 1, 0);
}

TEST(in_flight_counts_at_target)
{
	static const int lead[3] = {4, 0, 0};
	struct balance_move mv;
	struct rig r;
	layout3(&r, lead);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 1); /* tie 0/0: the lower index */
	CHECK_EQ_INT(mv.tablet, 0);
	/* The master records the move; the reports still show server 0. */
	moved(&r, mv.tablet, NOW - 10, mv.to);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(r.load[0].leaders, 3);
	CHECK_EQ_INT(r.load[1].leaders, 1);
	CHECK_EQ_U64(mv.to, 2);     /* not 1 again: it has one in flight */
	CHECK_EQ_INT(mv.tablet, 1); /* not tablet 0: in flight */
	moved(&r, mv.tablet, NOW - 5, mv.to);
	/* 2/1/1: done, although the reports still say 4/0/0. */
	CHECK(!pick(&r, 0, &mv));
	counted(&r, 2, 1, 1);
}

TEST(cooldown)
{
	static const int lead[3] = {3, 0, 0};
	struct balance_move mv;
	struct rig r;
	layout3(&r, lead);
	/* Tablets 0 and 1 were moved (to 1) within the cooldown; the moves
	 * failed (the reports still show server 0). Tablet 2 can go. */
	for (size_t i = 0; i < 2; i++) {
		moved(&r, i, NOW - COOL + 1, 1);
	}
	CHECK(!pick(&r, 0, &mv)); /* counts 1/2/0: server 0 has only one left */
	CHECK_EQ_INT(r.load[0].leaders, 1);
	CHECK_EQ_INT(r.load[1].leaders, 2);
	/* Once the cooldown is over the reports count again: 3/0/0. */
	r.t[0].moved_ms = NOW - COOL;
	r.t[1].moved_ms = NOW - COOL;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(r.load[0].leaders, 3);
	CHECK_EQ_INT(mv.tablet, 0);
	CHECK_EQ_U64(mv.to, 1);
	/* A tablet with a move in flight is never the one moved. (Targets
	 * equal to the leader keep the counts at 4/0/0, isolating the rule:
	 * only tablet 3 is free.) */
	layout3(&r, (const int[3]){4, 0, 0});
	for (size_t i = 0; i < 3; i++) {
		moved(&r, i, NOW - 1, 0);
	}
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 3);
	moved(&r, 3, NOW - 1, 0);
	CHECK(!pick(&r, 0, &mv));
	CHECK_EQ_INT(r.load[0].leaders, 4);
}

TEST(dead_server_never_chosen)
{
	static const int lead[3] = {3, 1, 0};
	struct balance_move mv;
	struct rig r;
	/* 3/1/0 with server 2 dead: not 2, although it has fewest; 1 is 2 below. */
	layout3(&r, lead);
	r.s[2].live = false;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 1);
	/* 3/2/0 with server 2 dead: only 2 is 2 below: nothing. */
	layout3(&r, (const int[3]){3, 2, 0});
	r.s[2].live = false;
	CHECK(!pick(&r, 0, &mv));
	r.s[2].live = true;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 2);
	/* A dead server is never the source either. */
	layout3(&r, (const int[3]){3, 0, 0});
	r.s[0].live = false;
	CHECK(!pick(&r, 0, &mv));
}

/* Replicas on dead servers are left out, but the ready replicas must be a
 * majority (RF 5: 3 of 5). */
TEST(majority_ready)
{
	struct balance_move mv;
	struct rig r;
	rig_init(&r, 5);
	for (int i = 0; i < 2; i++) {
		size_t t = add3(&r, 0, 0, 1, 2);
		r.t[t].n_replicas = 5;
		r.t[t].server[3] = 3;
		r.t[t].server[4] = 4;
		r.t[t].ready[3] = r.t[t].ready[4] = true;
	}
	r.s[2].live = r.s[3].live = r.s[4].live = false;
	CHECK(!pick(&r, 0, &mv)); /* 2 of 5 live */
	r.s[4].live = true;
	CHECK(pick(&r, 0, &mv)); /* 3 of 5 */
	CHECK_EQ_U64(mv.to, 1);
	r.t[0].ready[4] = false; /* live but not ready: blocks tablet 0 */
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 1);
	CHECK_EQ_U64(mv.to, 1); /* 4 is not settled */
}

TEST(server_without_replica_never_chosen)
{
	struct balance_move mv;
	struct rig r;
	/* 4 servers; server 3 leads nothing and holds no replica of the
	 * tablets server 0 leads (3 of them); servers 1 and 2 lead 2 each. */
	rig_init(&r, 4);
	for (int i = 0; i < 3; i++)
		add3(&r, 0, 0, 1, 2);
	for (int i = 0; i < 2; i++)
		add3(&r, 1, 0, 1, 2);
	for (int i = 0; i < 2; i++)
		add3(&r, 2, 0, 1, 2);
	CHECK(!pick(&r, 0, &mv)); /* 3/2/2/0: 3 is 3 below but has no replica */
	CHECK_EQ_INT(r.load[3].leaders, 0);
	/* One tablet of server 0 with a replica on 3: that one goes to 3. */
	r.t[2].server[1] = 3;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 2);
	CHECK_EQ_U64(mv.to, 3);
	CHECK_EQ_INT(mv.replica, 1);
}

TEST(unknown_leader_ignored)
{
	struct balance_move mv;
	struct rig r;
	rig_init(&r, 3);
	/* Server 0 leads 2, 4 tablets have no known leader: not counted,
	 * never moved, so 2/0/0 is a move but nothing else is. */
	for (int i = 0; i < 4; i++)
		add3(&r, BALANCE_NONE, 0, 1, 2);
	add3(&r, 0, 0, 1, 2);
	add3(&r, 0, 0, 1, 2);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(r.load[0].leaders, 2);
	CHECK_EQ_INT(r.load[1].leaders, 0);
	CHECK(mv.tablet == 4);
	CHECK(!pick(&r, 1, &mv));
	/* A replica on a server the catalog does not know (it never
	 * heartbeated this master) counts as down: never a target, and not
	 * part of the ready majority. */
	rig_init(&r, 3);
	add3(&r, 0, 0, 1, 2);
	add3(&r, 0, 0, 1, 2);
	r.t[0].server[1] = r.t[1].server[1] = BALANCE_NONE;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 0);
	CHECK_EQ_U64(mv.to, 2);
	r.t[0].server[2] = r.t[1].server[2] = BALANCE_NONE;
	CHECK(!pick(&r, 0, &mv));
}

TEST(unready_replicas)
{
	static const int lead[3] = {3, 1, 0};
	struct balance_move mv;
	struct rig r;
	/* A tablet with any replica not ready (down, copying, behind on the
	 * term) keeps its leader. */
	layout3(&r, lead);
	r.t[0].ready[1] = false; /* tablet 0: replica on server 1 */
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 1);
	CHECK_EQ_U64(mv.to, 2);
	/* A server with any unready replica (it has not reported the latest
	 * changes yet) takes over nothing. */
	layout3(&r, (const int[3]){3, 2, 0});
	r.t[3].ready[2] = false; /* tablet 3 (led by 1): replica on server 2 */
	CHECK(!pick(&r, 0, &mv)); /* 3/2/0 but 2 is not settled */
	CHECK(!r.load[2].settled);
	CHECK(r.load[1].settled);
	layout3(&r, (const int[3]){4, 0, 0});
	r.t[0].ready[2] = false; /* server 2 unsettled: 1 takes it */
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 1);
	CHECK(mv.tablet != 0);
}

TEST(tie_breaks)
{
	struct balance_move mv;
	struct rig r;
	/* 5 servers: 0 leads 4; its tablets have replicas on (1, 2) and
	 * (3, 4); 1..4 lead nothing: the lowest index, 1, on the first
	 * tablet that has it. */
	rig_init(&r, 5);
	add3(&r, 0, 0, 3, 4);
	add3(&r, 0, 0, 4, 3);
	add3(&r, 0, 0, 2, 1);
	add3(&r, 0, 0, 1, 2);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 1);
	CHECK_EQ_INT(mv.tablet, 2);
	CHECK_EQ_INT(mv.replica, 2);
	/* With 1 at one leader more, 3 wins (fewest, then lowest index). */
	add3(&r, 1, 1, 2, 3);
	add3(&r, 2, 1, 2, 3);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 3);
	CHECK_EQ_INT(mv.tablet, 0);
}

/* Applying moves (each one reported at once) from any server, in turn,
 * ends balanced: max - min <= 1 on 3 servers with RF 3. */
TEST(converges)
{
	static const int starts[][3] = {{6, 0, 0}, {3, 3, 0}, {0, 7, 1}, {10, 2, 0}};
	struct balance_move mv;
	struct rig r;
	for (size_t c = 0; c < sizeof starts / sizeof starts[0]; c++) {
		int moves = 0, total = starts[c][0] + starts[c][1] + starts[c][2];
		bool any = true;
		layout3(&r, starts[c]);
		while (any) {
			any = false;
			for (size_t from = 0; from < 3; from++) {
				if (!pick(&r, from, &mv))
					continue;
				r.t[mv.tablet].leader = mv.to;
				any = true;
				moves++;
				CHECK(moves <= total);
			}
		}
		balance_count(r.t, r.nt, 3, NOW, COOL, r.load);
		uint32_t lo = r.load[0].leaders, hi = lo;
		for (size_t s = 1; s < 3; s++) {
			lo = r.load[s].leaders < lo ? r.load[s].leaders : lo;
			hi = r.load[s].leaders > hi ? r.load[s].leaders : hi;
		}
		CHECK_MSG(hi - lo <= 1, "case %zu: %u..%u after %d moves", c, lo, hi, moves);
		test_note("%d/%d/%d -> %u/%u/%u in %d moves", starts[c][0], starts[c][1],
			  starts[c][2], r.load[0].leaders, r.load[1].leaders, r.load[2].leaders,
			  moves);
	}
}

/* A tablet of table `table` (RF 3 on 0, 1, 2, all ready) led by leader. */
static size_t addt(struct rig *r, uint32_t table, size_t leader)
{
	size_t t = add3(r, leader, 0, 1, 2);
	r->t[t].table = table;
	return t;
}

/* n such tablets. */
static void addn(struct rig *r, uint32_t table, size_t leader, int n)
{
	for (int i = 0; i < n; i++)
		addt(r, table, leader);
}

/* The leaders of table `table` on server s. */
static int table_leaders(const struct rig *r, uint32_t table, size_t s)
{
	int n = 0;
	for (size_t i = 0; i < r->nt; i++)
		n += r->t[i].table == table && r->t[i].leader == s;
	return n;
}

TEST(per_table_first)
{
	struct balance_move mv;
	struct rig r;
	/* Table 0 led 2/0/1, table 1 led 0/2/1: totals 2/2/2, yet each
	 * table is uneven. 0 hands a table-0 leader to 1, then 1 a table-1
	 * leader to 0. */
	rig_init(&r, 3);
	addn(&r, 0, 0, 2);
	addt(&r, 0, 2);
	addn(&r, 1, 1, 2);
	addt(&r, 1, 2);
	CHECK(!pick(&r, 2, &mv));
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 0);
	CHECK_EQ_U64(mv.to, 1);
	r.t[mv.tablet].leader = mv.to;
	CHECK(pick(&r, 1, &mv));
	CHECK_EQ_INT(mv.tablet, 3);
	CHECK_EQ_U64(mv.to, 0);
	r.t[mv.tablet].leader = mv.to;
	for (size_t s = 0; s < 3; s++) {
		CHECK(!pick(&r, s, &mv));
		CHECK_EQ_INT(table_leaders(&r, 0, s), 1);
		CHECK_EQ_INT(table_leaders(&r, 1, s), 1);
	}
}

TEST(per_server_keeps_tables_within_one)
{
	struct balance_move mv;
	struct rig r;
	/* Table 0 led 1/1/1, tables 1 and 2 led 1/1/0: totals 3/3/1. 0 moves
	 * a leader to 2, not of table 0 (that would make it 0/1/2), but of
	 * table 1, the first such. */
	rig_init(&r, 3);
	addt(&r, 0, 0);
	addt(&r, 0, 1);
	addt(&r, 0, 2);
	addt(&r, 1, 0);
	addt(&r, 1, 1);
	addt(&r, 2, 0);
	addt(&r, 2, 1);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 3);
	CHECK_EQ_U64(mv.to, 2);
	/* 0 leads only table 0's tablet, and 2 leads one of table 0 too:
	 * totals 1/5/1 move nothing from 0 (table 0 would become 0/1/2). */
	r.t[3].leader = 1;
	r.t[5].leader = 1;
	CHECK(!pick(&r, 0, &mv));
	/* The per-table rule goes before the per-server one: 0 leads 1 of
	 * table 0 and 2 of table 3, 2 leads nothing (totals 3/2/0): moving
	 * table 0's tablet (first in order) would even the totals, but table
	 * 3's goes first. */
	rig_init(&r, 3);
	addt(&r, 0, 0);
	addt(&r, 0, 1);
	addn(&r, 3, 0, 2);
	addt(&r, 3, 1);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 2);
	CHECK_EQ_U64(mv.to, 2);
}

TEST(largest_table_gap_first)
{
	struct balance_move mv;
	struct rig r;
	/* From 0: table 0 led 2/0/1 (gap 2 to 1), table 1 led 5/2/2 (gap 3
	 * to 1 and 2, which lead more in table 1 than 1 does in table 0):
	 * table 1's first tablet goes, to 1 (fewer in total: 2 against 3). */
	rig_init(&r, 3);
	addn(&r, 0, 0, 2);
	addt(&r, 0, 2);
	addn(&r, 1, 0, 5);
	addn(&r, 1, 1, 2);
	addn(&r, 1, 2, 2);
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 3);
	CHECK_EQ_U64(mv.to, 1);
}

TEST(draining_leaders_leave_first)
{
	struct balance_move mv;
	struct rig r;
	/* 0 drains and leads one tablet (no imbalance): it goes, to the
	 * server that leads the fewest of the table (2). */
	rig_init(&r, 3);
	addt(&r, 0, 0);
	addt(&r, 0, 1);
	addn(&r, 1, 2, 2);
	r.s[0].draining = true;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_INT(mv.tablet, 0);
	CHECK_EQ_U64(mv.to, 2);
	/* Ties in the table: fewest in total (1 leads 1, 2 leads 2)... */
	r.t[1].leader = 2;
	r.t[2].leader = 1;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 1);
	/* The guards hold: not ready, no move. */
	r.t[0].ready[1] = false;
	r.t[0].ready[2] = false;
	CHECK(!pick(&r, 0, &mv));
	r.t[0].ready[1] = r.t[0].ready[2] = true;
	/* A draining server takes over nothing: 1 drains too, 2 takes it. */
	r.s[1].draining = true;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 2);
	r.s[2].draining = true;
	CHECK(!pick(&r, 0, &mv));
	/* Never to a draining server by the other rules either: 4/0/0 with 1
	 * draining goes to 2 only, and with both draining nowhere. */
	layout3(&r, (const int[3]){4, 0, 0});
	r.s[1].draining = true;
	CHECK(pick(&r, 0, &mv));
	CHECK_EQ_U64(mv.to, 2);
	r.s[2].draining = true;
	CHECK(!pick(&r, 0, &mv));
}

/* Random multi-table layouts on 3 servers (every tablet on all three):
 * applying moves from each server in turn ends with every table within
 * one, the totals within one and nothing led by a draining server. */
TEST(converges_per_table)
{
	uint64_t seed = 0x7ab1e;
	for (int c = 0; c < 200; c++) {
		struct balance_move mv;
		struct rig r;
		uint32_t tables = 1 + (uint32_t)(test_rand(&seed) % 5);
		bool drain = c % 4 == 3, any = true;
		int moves = 0;
		rig_init(&r, 3);
		for (uint32_t t = 0; t < tables; t++) {
			size_t n = 1 + test_rand(&seed) % 9;
			for (size_t i = 0; i < n && r.nt < NT_MAX; i++)
				addt(&r, t, test_rand(&seed) % 3);
		}
		if (drain)
			r.s[2].draining = true;
		while (any) {
			any = false;
			for (size_t from = 0; from < 3; from++) {
				if (!pick(&r, from, &mv))
					continue;
				r.t[mv.tablet].leader = mv.to;
				any = true;
				CHECK_MSG(++moves <= 4 * NT_MAX, "case %d: no end", c);
			}
		}
		balance_count(r.t, r.nt, 3, NOW, COOL, r.load);
		size_t n_up = drain ? 2 : 3;
		for (uint32_t t = 0; t < tables; t++)
			for (size_t a = 0; a < n_up; a++)
				for (size_t b = 0; b < n_up; b++)
					CHECK_MSG(table_leaders(&r, t, a) <= table_leaders(&r, t, b) + 1,
						  "case %d table %u: %d on %zu, %d on %zu", c, t,
						  table_leaders(&r, t, a), a, table_leaders(&r, t, b), b);
		for (size_t a = 0; a < n_up; a++)
			for (size_t b = 0; b < n_up; b++)
				CHECK_MSG(r.load[a].leaders <= r.load[b].leaders + 1,
					  "case %d: totals %u on %zu, %u on %zu", c,
					  r.load[a].leaders, a, r.load[b].leaders, b);
		if (drain)
			CHECK_EQ_INT(r.load[2].leaders, 0);
	}
}

TEST_MAIN(T(balanced_moves_nothing), T(three_one_zero), T(in_flight_counts_at_target),
	  T(cooldown), T(dead_server_never_chosen), T(majority_ready),
	  T(server_without_replica_never_chosen),
	  T(unknown_leader_ignored), T(unready_replicas), T(tie_breaks), T(converges),
	  T(per_table_first), T(per_server_keeps_tables_within_one), T(largest_table_gap_first),
	  T(draining_leaders_leave_first), T(converges_per_table))
