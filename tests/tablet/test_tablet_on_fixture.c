/* Whole tablet replicas (src/tablet: write path, group commit, read path,
 * leases, retry table, fsm, real DocDB stores) on C-Raft's raft_fixture, in
 * virtual time (tablet_fixture.h: the fixture is the tablets' raft host;
 * raft's timers, the leases and the hybrid clocks all read the fixture's
 * clock). Three replicas, election_ms 1000, heartbeat 100 ms; the
 * fixture's network takes 15 ms and its disk 10 ms unless a case says
 * otherwise. Every step of the fixture is followed by one loop turn of the
 * tablets, so each case is one deterministic sequence of events.
 *
 * Cases, and what makes each fail:
 *   lease_outlives_no_new_leader   a leader with a 700 ms lease serves reads
 *       without a barrier; partitioned, it serves them only before its
 *       lease ends, and the other side elects a leader only after it has
 *       ended (exact virtual times noted). Fails if the lease ran on any
 *       clock but raft's (it would outlast the partition), if lease_ms
 *       reached the election timeout, or if a lease read saw stale data
 *       (on CLOCK_BOOTTIME the old leader still served at 3030 ms, after
 *       the new leader's election at 2460 ms).
 *   barrier_read_on_deposed_leader  lease_ms 0: every read waits for a
 *       barrier; a read given to a leader just cut off fails
 *       (DOCRAFT_ENOTLEADER) while the other side elects a leader and
 *       commits a newer value; it is never answered. Fails if a read were
 *       answered without a barrier (it would return the old value).
 *   group_commit_shares_next_entry  max_inflight 1: nine writes arriving
 *       over three loop turns while one entry is in flight go into ONE next
 *       entry (2 entries, 10 writes), each acknowledged only once applied on
 *       the leader and applied on every replica after commit. Fails if the
 *       in-flight cap were ignored (4 entries: checked by breaking it) or a
 *       write were acknowledged before it applied.
 *   leader_change_acked_survives_inflight_once  an acknowledged write
 *       survives a depose; a write in flight at the depose is answered
 *       DOCRAFT_ELEADERLOST, the next leader commits it, and a retry with the
 *       same (client, seq) but ANOTHER value is answered from the retry
 *       table: every replica keeps the first value. Fails if the retry
 *       applied again (the second value would win; with both retry checks,
 *       the leader's and the fsm's, switched off the process aborts on
 *       retry.c's invariant) or the acked write was lost.
 *   leader_change_lost_inflight_retried_once  the other outcome: a write
 *       proposed by a leader already cut off never commits; answered
 *       DOCRAFT_ELEADERLOST, retried at the new leader with the same id, it
 *       applies once; healed, the old leader drops its copy and every store
 *       is byte-identical. Fails if the old leader applied its uncommitted
 *       entry or the retry were refused.
 *   leader_change_redis_incr_once  (issue 17) an INCR in flight at a
 *       depose is answered DOCRAFT_ELEADERLOST, the next leader commits it
 *       (n = 1 everywhere), and its retry there is answered with the FIRST
 *       reply, ":1", from the replicated state, n staying 1. Fails if the
 *       retry ran again (":2") or were answered without its reply.
 *   slow_follower_keeps_apply_order  a follower's disk at 70 ms, the other
 *       follower's messages at 45 ms, four entries in flight: after every
 *       step every replica's "seq" key only grows, every write is
 *       acknowledged in order, and the stores end byte-identical. Fails if
 *       any replica applied out of order or missed an entry (followers
 *       skipping one apply: the dumps differ). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/value.h"
#include "redis_cmds.h"
#include "store_dump.h"
#include "tablet_fixture.h"
#include "test.h"

#define NS 3

static struct tablet_fixture TF;

static void options(struct tablet_options *o, unsigned lease_ms, unsigned max_inflight)
{
	tablet_options_default(o);
	o->election_ms = 1000;
	o->heartbeat_ms = 100;
	o->lease_ms = lease_ms;
	o->max_inflight = max_inflight;
}

static struct tablet_status status_of(unsigned i)
{
	struct tablet_status st;
	tablet_get_status(TF.t[i], &st);
	return st;
}

/* ---- keys and values ---------------------------------------------------------- */

static void dockey_of(struct buf *dk, const char *key)
{
	struct pv comp = pv_str(key);
	struct dockey d = {false, 0, 0, 1, NULL, &comp};
	buf_reset(dk);
	dockey_append(dk, &d);
}

/* key's int64 value in replica i's store as of read_ht (0: everything it
 * applied); -1: none. */
static int64_t v_at(unsigned i, const char *key, uint64_t read_ht)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store *s = tablet_store(TF.t[i]);
	struct buf dk = BUF_INIT;
	struct arena a = ARENA_INIT;
	const struct docnode *n = NULL;
	int64_t v = -1;
	if (read_ht == 0)
		store_applied(s, NULL, &read_ht);
	if (read_ht == 0)
		return -1; /* nothing applied yet */
	dockey_of(&dk, key);
	CHECK_OK_MSG(reader_get_doc(s, dk.data, dk.len, NULL, 0, read_ht, 0, &a, &n, errmsg),
		     errmsg);
	if (n != NULL && n->kind == VAL_PRIMITIVE && n->value.type == PV_INT64)
		v = n->value.v.i64;
	arena_free(&a);
	buf_free(&dk);
	return v;
}

static int64_t v_on(unsigned i, const char *key)
{
	return v_at(i, key, 0);
}

/* ---- writes ----------------------------------------------------------------- */

struct w {
	struct tablet_write req;
	struct batch b;
	unsigned at;     /* replica it went to */
	bool done;
	int status;
	uint64_t ht;
	uint64_t at_ms;  /* virtual time of the answer */
	int64_t leader_v; /* its first key on that replica when answered */
	const char *key;
};

static void write_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct w *w = req->data;
	w->done = true;
	w->status = status;
	w->ht = ht;
	w->at_ms = tablet_fixture_now(&TF);
	w->leader_v = status == 0 ? v_on(w->at, w->key) : -1;
}

static void w_add(struct w *w, const char *key, int64_t v)
{
	struct buf dk = BUF_INIT, val = BUF_INIT;
	struct pv p = pv_int64(v);
	dockey_of(&dk, key);
	value_append_pv(&val, &p);
	batch_put(&w->b, dk.data, dk.len, val.data, val.len);
	buf_free(&dk);
	buf_free(&val);
}

/* A write of key = v from client with seq; w->req.batch set by w_submit. */
static void w_init(struct w *w, uint8_t client, uint64_t seq, const char *key, int64_t v)
{
	memset(w, 0, sizeof *w);
	batch_init(&w->b);
	w->key = key;
	w_add(w, key, v);
	memset(w->req.client_id, client, sizeof w->req.client_id);
	w->req.seq = seq;
	w->req.min_running = 1;
	w->req.cb = write_cb;
	w->req.data = w;
}

static void w_submit(struct w *w, unsigned i)
{
	w->at = i;
	w->req.batch = w->b.data.data;
	w->req.batch_len = w->b.data.len;
	CHECK_OK(tablet_write(TF.t[i], &w->req));
}

static bool w_done(struct tablet_fixture *tf, void *arg)
{
	(void)tf;
	return ((struct w *)arg)->done;
}

/* Writes key = v through replica i and steps until it is acknowledged. */
static void write_acked(unsigned i, uint8_t client, uint64_t seq, const char *key, int64_t v)
{
	struct w w;
	w_init(&w, client, seq, key, v);
	w_submit(&w, i);
	CHECK(tablet_fixture_step_until(&TF, w_done, &w, 5000));
	CHECK_EQ_INT(w.status, 0);
	CHECK_EQ_INT(w.leader_v, v);
	batch_free(&w.b);
}

/* ---- reads ------------------------------------------------------------------ */

struct r {
	struct tablet_read req;
	unsigned at;
	const char *key;
	bool done;
	int status;
	bool confirmed;   /* tablet_read_confirm after reading */
	int64_t v;        /* key at the read time, on that replica */
	uint64_t at_ms;
};

static void read_cb(struct tablet_read *req, int status, uint64_t ht)
{
	struct r *r = req->data;
	r->done = true;
	r->status = status;
	r->at_ms = tablet_fixture_now(&TF);
	if (status == 0) {
		r->v = v_at(r->at, r->key, ht);
		r->confirmed = tablet_read_confirm(TF.t[r->at], req);
	}
}

static void r_submit(struct r *r, unsigned i, const char *key)
{
	memset(r, 0, sizeof *r);
	r->at = i;
	r->key = key;
	r->req.data = r;
	r->req.cb = read_cb;
	CHECK_OK(tablet_read(TF.t[i], &r->req));
}

static bool r_done(struct tablet_fixture *tf, void *arg)
{
	(void)tf;
	return ((struct r *)arg)->done;
}

/* A read of key at replica i: answered (and confirmed) with want. */
static void read_sees(unsigned i, const char *key, int64_t want)
{
	struct r rd;
	r_submit(&rd, i, key);
	CHECK(tablet_fixture_step_until(&TF, r_done, &rd, 1000));
	CHECK_EQ_INT(rd.status, 0);
	CHECK(rd.confirmed);
	CHECK_EQ_INT(rd.v, want);
}

/* ---- leadership ------------------------------------------------------------- */

static bool has_ready_leader(struct tablet_fixture *tf, void *arg)
{
	(void)arg;
	return tablet_fixture_leader(tf) >= 0;
}

static unsigned ready_leader(void)
{
	CHECK(tablet_fixture_step_until(&TF, has_ready_leader, NULL, 10000));
	return (unsigned)tablet_fixture_leader(&TF);
}

static bool other_is_ready(struct tablet_fixture *tf, void *arg)
{
	unsigned l = *(unsigned *)arg;
	for (unsigned i = 0; i < tf->n; i++)
		if (i != l && status_of(i).role == TABLET_LEADER)
			return true;
	return false;
}

/* Steps until a replica other than l is a READY leader (l may still count
 * itself one: it has not noticed yet); returns it. */
static unsigned other_ready_leader(unsigned l)
{
	CHECK(tablet_fixture_step_until(&TF, other_is_ready, &l, 10000));
	for (unsigned i = 0; i < NS; i++)
		if (i != l && status_of(i).role == TABLET_LEADER)
			return i;
	return l;
}

/* Cuts replica l off from the others, both ways. */
static void isolate(unsigned l)
{
	for (unsigned j = 0; j < NS; j++)
		if (j != l) {
			raft_fixture_saturate(&TF.f, l, j);
			raft_fixture_saturate(&TF.f, j, l);
		}
}

static void heal(unsigned l)
{
	for (unsigned j = 0; j < NS; j++)
		if (j != l) {
			raft_fixture_desaturate(&TF.f, l, j);
			raft_fixture_desaturate(&TF.f, j, l);
		}
}

struct applied_arg {
	uint64_t index;
};

static bool all_applied(struct tablet_fixture *tf, void *arg)
{
	struct applied_arg *a = arg;
	for (unsigned i = 0; i < tf->n; i++)
		if (status_of(i).applied_index < a->index)
			return false;
	return true;
}

/* Steps until every replica applied what replica l has. */
static void all_apply_what(unsigned l)
{
	struct applied_arg a = {status_of(l).applied_index};
	CHECK(tablet_fixture_step_until(&TF, all_applied, &a, 5000));
}

/* Opens the replicas, waits for a ready leader, writes a = 1 through it
 * (client 1, seq 1) and returns it. */
static unsigned up_with_a(unsigned lease_ms, unsigned max_inflight)
{
	struct tablet_options o;
	unsigned l;
	options(&o, lease_ms, max_inflight);
	tablet_fixture_up(&TF, NS, &o);
	l = ready_leader();
	write_acked(l, 1, 1, "a", 1);
	return l;
}

/* ---- leases ------------------------------------------------------------------ */

/* What the hook watches while the old leader is cut off. */
static struct {
	unsigned old;            /* the partitioned leader */
	uint64_t lease_end_ms;   /* latest end of its lease seen (virtual ms) */
	uint64_t last_held_ms;   /* last time it held the lease */
	uint64_t new_leader_ms;  /* first time another replica was raft leader */
	struct r rd;             /* a read always outstanding on the old leader */
	unsigned reads_ok, reads_failed;
	uint64_t last_ok_ms;
	int64_t want;            /* the value a read must see */
	bool stale;              /* a read answered a value other than want */
	bool unconfirmed_ok;
} LW;

static void lease_hook(struct tablet_fixture *tf, void *arg)
{
	uint64_t now = tablet_fixture_now(tf);
	struct tablet_status st = status_of(LW.old);
	(void)arg;
	if (st.role == TABLET_LEADER && st.lease_left_ms > 0) {
		LW.last_held_ms = now;
		if (now + st.lease_left_ms > LW.lease_end_ms)
			LW.lease_end_ms = now + st.lease_left_ms;
	}
	for (unsigned j = 0; j < tf->n; j++)
		if (j != LW.old && LW.new_leader_ms == 0 &&
		    raft_state(raft_fixture_get(&tf->f, j)) == RAFT_LEADER)
			LW.new_leader_ms = now;
	if (LW.rd.done) {
		if (LW.rd.status == 0 && LW.rd.confirmed) {
			LW.reads_ok++;
			LW.last_ok_ms = LW.rd.at_ms;
			if (LW.rd.v != LW.want)
				LW.stale = true;
		} else if (LW.rd.status != 0) {
			LW.reads_failed++;
		}
		if (LW.rd.status == 0)
			r_submit(&LW.rd, LW.old, "a");
	}
}

static bool old_read_failed_and_new_leader(struct tablet_fixture *tf, void *arg)
{
	(void)tf;
	(void)arg;
	return LW.reads_failed > 0 && LW.new_leader_ms != 0;
}

TEST(lease_outlives_no_new_leader)
{
	const unsigned election_ms = 1000; /* options() */
	struct tablet_status st0, st;
	unsigned l, m;
	struct r rd;
	uint64_t part_ms;

	l = up_with_a(700, 1);
	/* Under the lease: answered without a barrier. */
	st0 = status_of(l);
	read_sees(l, "a", 1);
	st = status_of(l);
	CHECK_EQ_U64(st.lease_reads, st0.lease_reads + 1);
	CHECK_EQ_U64(st.barrier_reads, st0.barrier_reads);

	/* Cut off: reads keep coming to the old leader, one at a time. */
	memset(&LW, 0, sizeof LW);
	LW.old = l;
	LW.want = 1;
	part_ms = tablet_fixture_now(&TF);
	isolate(l);
	r_submit(&LW.rd, l, "a");
	TF.hook = lease_hook;
	CHECK(tablet_fixture_step_until(&TF, old_read_failed_and_new_leader, NULL, 20000));
	TF.hook = NULL;
	test_note("partition at %" PRIu64 " ms; old lease held until %" PRIu64 " ms (ends %"
		  PRIu64 "); %u lease reads answered, last at %" PRIu64 " ms; new leader at %"
		  PRIu64 " ms", part_ms, LW.last_held_ms, LW.lease_end_ms, LW.reads_ok,
		  LW.last_ok_ms, LW.new_leader_ms);
	CHECK(!LW.stale);
	CHECK(LW.reads_ok > 0);                    /* the lease was used while cut off */
	CHECK(LW.last_ok_ms < LW.lease_end_ms);    /* ... only inside it */
	CHECK(LW.last_held_ms < LW.lease_end_ms);
	/* The argument of tablet.h: the entry that gave the lease was proposed at
	 * lease_end - 700 ms; nobody votes for election_ms after receiving it. */
	CHECK(LW.new_leader_ms >= LW.lease_end_ms);
	CHECK(LW.new_leader_ms >= LW.lease_end_ms - 700 + election_ms);
	CHECK(LW.last_ok_ms < LW.new_leader_ms);

	/* The new side serves a newer value; the old leader never does. */
	m = other_ready_leader(l);
	CHECK(m != l);
	write_acked(m, 1, 2, "a", 2);
	r_submit(&rd, l, "a");
	CHECK(tablet_fixture_step_until(&TF, r_done, &rd, 1000));
	CHECK_EQ_INT(rd.status, DOCRAFT_ENOTLEADER);
	heal(l);
	all_apply_what(m);
	CHECK_EQ_INT(v_on(l, "a"), 2);
	tablet_fixture_down(&TF);
}

/* ---- read barriers ---------------------------------------------------------- */

TEST(barrier_read_on_deposed_leader)
{
	struct tablet_status st0, st;
	unsigned l, m;
	struct r cut;
	struct w w2;

	l = up_with_a(0, 1);
	st0 = status_of(l);
	read_sees(l, "a", 1);
	st = status_of(l);
	CHECK_EQ_U64(st.barrier_reads, st0.barrier_reads + 1);
	CHECK_EQ_U64(st.lease_reads, 0);

	/* Cut off while leader: its read's barrier cannot commit. */
	isolate(l);
	CHECK_EQ_INT(status_of(l).role, TABLET_LEADER);
	r_submit(&cut, l, "a");
	m = other_ready_leader(l);
	w_init(&w2, 1, 2, "a", 2);
	w_submit(&w2, m);
	CHECK(tablet_fixture_step_until(&TF, w_done, &w2, 5000));
	CHECK_EQ_INT(w2.status, 0);
	CHECK(tablet_fixture_step_until(&TF, r_done, &cut, 5000));
	test_note("new leader's write acknowledged at %" PRIu64 " ms; the cut-off read "
		  "failed at %" PRIu64 " ms", w2.at_ms, cut.at_ms);
	CHECK_EQ_INT(cut.status, DOCRAFT_ENOTLEADER);
	CHECK_EQ_U64(status_of(l).lease_reads, 0);
	batch_free(&w2.b);

	heal(l);
	all_apply_what(m);
	CHECK_EQ_INT(v_on(l, "a"), 2);
	read_sees(m, "a", 2);
	tablet_fixture_down(&TF);
}

/* ---- group commit ----------------------------------------------------------- */

struct entries_arg {
	unsigned l;
	uint64_t entries;
};

static bool proposed(struct tablet_fixture *tf, void *arg)
{
	struct entries_arg *e = arg;
	(void)tf;
	return status_of(e->l).entries >= e->entries;
}

static bool all_w_done(struct tablet_fixture *tf, void *arg)
{
	struct w *ws = arg;
	(void)tf;
	for (int i = 0; ws[i].key != NULL; i++)
		if (!ws[i].done)
			return false;
	return true;
}

TEST(group_commit_shares_next_entry)
{
	static const char *keys[] = {"k0", "k1", "k2", "k3", "k4",
				     "k5", "k6", "k7", "k8", "k9"};
	struct tablet_options o;
	struct tablet_status st0, st;
	struct w ws[11];
	unsigned l;

	options(&o, TABLET_LEASE_AUTO, 1);
	tablet_fixture_up(&TF, NS, &o);
	l = ready_leader();
	st0 = status_of(l);
	memset(ws, 0, sizeof ws);
	w_init(&ws[0], 2, 1, keys[0], 100);
	w_submit(&ws[0], l);
	{
		struct entries_arg e = {l, st0.entries + 1};
		CHECK(tablet_fixture_step_until(&TF, proposed, &e, 1000));
	}
	/* Three each turn for three turns (steps), all while w0 is in flight:
	 * without the in-flight cap each turn would propose its own entry. */
	for (int i = 1; i < 10; i++) {
		if (i > 1 && i % 3 == 1)
			raft_fixture_step(&TF.f);
		CHECK(!ws[0].done); /* in flight: a majority has not stored it yet */
		w_init(&ws[i], 2, (uint64_t)i + 1, keys[i], 100 + i);
		w_submit(&ws[i], l);
	}
	CHECK(tablet_fixture_step_until(&TF, all_w_done, ws, 5000));
	st = status_of(l);
	test_note("10 writes in %" PRIu64 " entries", st.entries - st0.entries);
	CHECK_EQ_U64(st.entries - st0.entries, 2);
	CHECK_EQ_U64(st.writes - st0.writes, 10);
	for (int i = 0; i < 10; i++) {
		CHECK_EQ_INT(ws[i].status, 0);
		CHECK_EQ_INT(ws[i].leader_v, 100 + i); /* applied before acknowledged */
		if (i > 1)
			CHECK_EQ_U64(ws[i].ht, ws[1].ht); /* one entry, one hybrid time */
	}
	CHECK(ws[1].ht > ws[0].ht);
	all_apply_what(l);
	for (unsigned i = 0; i < NS; i++)
		for (int k = 0; k < 10; k++)
			CHECK_EQ_INT(v_on(i, keys[k]), 100 + k);
	for (int i = 0; i < 10; i++)
		batch_free(&ws[i].b);
	tablet_fixture_down(&TF);
}

/* ---- leader change ---------------------------------------------------------- */

/* The write just given to leader l (st0: l's status before) goes out to
 * the followers, whose answers the depose drops: steps until it is
 * proposed, deposes l, steps until done(arg) (its answer), lets another
 * replica win the next election (the fixture's "random" election timeouts
 * are these values) and apply everything; returns that replica. */
static unsigned depose_inflight(unsigned l, const struct tablet_status *st0,
				bool (*done)(struct tablet_fixture *tf, void *arg), void *arg)
{
	struct entries_arg e = {l, st0->entries + 1};
	unsigned m;
	CHECK(tablet_fixture_step_until(&TF, proposed, &e, 1000));
	raft_fixture_depose(&TF.f);
	CHECK(tablet_fixture_step_until(&TF, done, arg, 5000));
	for (unsigned i = 0; i < NS; i++)
		raft_fixture_set_randomized_election_timeout(&TF.f, i, i == l ? 2000 : 1000);
	m = other_ready_leader(l);
	all_apply_what(m);
	return m;
}

TEST(leader_change_acked_survives_inflight_once)
{
	struct tablet_status st0;
	struct w b, again;
	unsigned l, m;

	l = up_with_a(TABLET_LEASE_AUTO, 1);

	st0 = status_of(l);
	w_init(&b, 9, 1, "b", 10);
	w_submit(&b, l);
	m = depose_inflight(l, &st0, w_done, &b);
	CHECK_EQ_INT(b.status, DOCRAFT_ELEADERLOST);
	test_note("leader %u deposed; %u leads at %" PRIu64 " ms", l, m,
		  tablet_fixture_now(&TF));
	for (unsigned i = 0; i < NS; i++) {
		CHECK_EQ_INT(v_on(i, "a"), 1);  /* acknowledged: survives */
		CHECK_EQ_INT(v_on(i, "b"), 10); /* in flight, then committed by m */
	}

	/* The retry carries another value: applying it again would show. */
	w_init(&again, 9, 1, "b", 99);
	w_submit(&again, m);
	CHECK(tablet_fixture_step_until(&TF, w_done, &again, 5000));
	CHECK_EQ_INT(again.status, 0);
	CHECK(again.ht != 0);
	all_apply_what(m);
	for (unsigned i = 0; i < NS; i++)
		CHECK_EQ_INT(v_on(i, "b"), 10);
	batch_free(&b.b);
	batch_free(&again.b);
	tablet_fixture_down(&TF);
}

/* The other outcome: a write proposed by a leader already cut off never
 * commits; answered DOCRAFT_ELEADERLOST, retried with the same id (another
 * value) at the new leader, it applies there once, and after the partition
 * heals the old leader drops its own copy of the entry: every store ends
 * byte-identical with the retry's value. */
TEST(leader_change_lost_inflight_retried_once)
{
	struct buf d0 = BUF_INIT, d = BUF_INIT;
	struct w b, again;
	unsigned l, m;

	l = up_with_a(TABLET_LEASE_AUTO, 1);
	isolate(l);
	w_init(&b, 9, 1, "b", 10);
	w_submit(&b, l);
	m = other_ready_leader(l);
	CHECK(tablet_fixture_step_until(&TF, w_done, &b, 5000));
	CHECK_EQ_INT(b.status, DOCRAFT_ELEADERLOST);
	w_init(&again, 9, 1, "b", 99);
	w_submit(&again, m);
	CHECK(tablet_fixture_step_until(&TF, w_done, &again, 5000));
	CHECK_EQ_INT(again.status, 0);
	heal(l);
	all_apply_what(m);
	store_dump(tablet_store(TF.t[m]), &d0);
	for (unsigned i = 0; i < NS; i++) {
		CHECK_EQ_INT(v_on(i, "a"), 1);
		CHECK_EQ_INT(v_on(i, "b"), 99);
		store_dump(tablet_store(TF.t[i]), &d);
		CHECK_EQ_MEM(d.data, d.len, d0.data, d0.len);
	}
	batch_free(&b.b);
	batch_free(&again.b);
	buf_free(&d0);
	buf_free(&d);
	tablet_fixture_down(&TF);
}

static bool rw_done(struct tablet_fixture *tf, void *arg)
{
	(void)tf;
	return ((struct rw *)arg)->done;
}

/* GET n on every replica (at a time of its clock past all it applied). */
static void every_replica_n(const char *want)
{
	struct buf out = BUF_INIT;
	for (unsigned i = 0; i < NS; i++) {
		redis_read(tablet_store(TF.t[i]), tablet_now(TF.t[i]), "get n", &out);
		buf_push(&out, 0);
		CHECK_EQ_STR((const char *)out.data, want);
	}
	buf_free(&out);
}

TEST(leader_change_redis_incr_once)
{
	struct tablet_status st0;
	struct rw b, again;
	unsigned l, m;

	l = up_with_a(TABLET_LEASE_AUTO, 1);
	st0 = status_of(l);
	rw_init(&b, 9, 1, "incr n");
	CHECK_OK(tablet_write(TF.t[l], &b.req));
	m = depose_inflight(l, &st0, rw_done, &b);
	CHECK_EQ_INT(b.status, DOCRAFT_ELEADERLOST);
	every_replica_n("$1\r\n1\r\n");

	rw_init(&again, 9, 1, "incr n");
	CHECK_OK(tablet_write(TF.t[m], &again.req));
	CHECK(tablet_fixture_step_until(&TF, rw_done, &again, 5000));
	CHECK_EQ_INT(again.status, 0);
	CHECK_EQ_STR((const char *)again.replies.data, ":1\r\n");
	all_apply_what(m);
	every_replica_n("$1\r\n1\r\n");
	rw_free(&b);
	rw_free(&again);
	tablet_fixture_down(&TF);
}

/* ---- apply order ------------------------------------------------------------ */

#define ORDER_WRITES 30

static struct {
	int64_t seen[NS];
	bool reordered;
} OW;

static void order_hook(struct tablet_fixture *tf, void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < tf->n; i++) {
		int64_t v = v_on(i, "seq");
		if (v < OW.seen[i])
			OW.reordered = true;
		OW.seen[i] = v;
	}
}

TEST(slow_follower_keeps_apply_order)
{
	struct tablet_options o;
	static struct w ws[ORDER_WRITES + 1];
	struct buf d0 = BUF_INIT, d = BUF_INIT;
	unsigned l, f1, f2;
	int next = 0;

	options(&o, TABLET_LEASE_AUTO, 4);
	tablet_fixture_up(&TF, NS, &o);
	l = ready_leader();
	f1 = (l + 1) % NS;
	f2 = (l + 2) % NS;
	raft_fixture_set_disk_latency(&TF.f, f1, 70);
	raft_fixture_set_network_latency(&TF.f, f2, 45);
	memset(&OW, 0, sizeof OW);
	for (unsigned i = 0; i < NS; i++)
		OW.seen[i] = -1;
	memset(ws, 0, sizeof ws);
	TF.hook = order_hook;
	/* A write every 3 steps: several entries in flight at once. */
	while (!all_w_done(&TF, ws) || next < ORDER_WRITES) {
		if (next < ORDER_WRITES && TF.steps % 3 == 0) {
			static char keys[ORDER_WRITES][16];
			snprintf(keys[next], sizeof keys[next], "k%02d", next);
			w_init(&ws[next], 4, (uint64_t)next + 1, keys[next], next);
			w_add(&ws[next], "seq", next);
			w_submit(&ws[next], l);
			next++;
		}
		raft_fixture_step(&TF.f);
		CHECK(tablet_fixture_now(&TF) < 60000);
	}
	all_apply_what(l);
	TF.hook = NULL;
	CHECK(!OW.reordered);
	for (int i = 0; i < ORDER_WRITES; i++) {
		CHECK_EQ_INT(ws[i].status, 0);
		if (i > 0)
			CHECK(ws[i].ht >= ws[i - 1].ht);
	}
	test_note("%" PRIu64 " entries for %d writes", status_of(l).entries, ORDER_WRITES);
	store_dump(tablet_store(TF.t[l]), &d0);
	for (unsigned i = 0; i < NS; i++) {
		CHECK_EQ_INT(v_on(i, "seq"), ORDER_WRITES - 1);
		store_dump(tablet_store(TF.t[i]), &d);
		CHECK_EQ_MEM(d.data, d.len, d0.data, d0.len);
	}
	for (int i = 0; i < ORDER_WRITES; i++)
		batch_free(&ws[i].b);
	buf_free(&d0);
	buf_free(&d);
	tablet_fixture_down(&TF);
}

TEST_MAIN(T(lease_outlives_no_new_leader), T(barrier_read_on_deposed_leader),
	  T(group_commit_shares_next_entry), T(leader_change_acked_survives_inflight_once),
	  T(leader_change_lost_inflight_retried_once), T(leader_change_redis_incr_once),
	  T(slow_follower_keeps_apply_order))
