/* The shared Raft log (src/raftlog/raftlog.h) from the outside: only the
 * public API, each group's raft_io called the way C-Raft 0.15 calls it
 * (drive.h), a real uv loop, a real raft_uv as every group's network half,
 * real segment files in temp dirs.
 *
 *   contract   fresh groups, term/vote, bootstrap, interleaved groups,
 *              truncate, snapshots and trailing, snapshot_get, remove,
 *              attach rules, asynchronous callbacks
 *   disk       200 groups on 256 KiB segments: the directory stays within
 *              a few segments of the live data, idle groups (the rewrite
 *              rule) cost next to nothing
 *   damage     the last segment cut at every batch boundary +-1 and at
 *              random offsets; one bit flipped in a non-last segment, in the
 *              last batch of the last segment, in an earlier batch of it
 *   disk full  a 2 MiB tmpfs in a mount namespace of a child process
 *
 * The damage cases know the segment framing (src/raftlog/record.h: a 32-byte
 * segment header, then batches of a 20-byte header {magic, crc, len, seq}
 * and len bytes) only to find batch boundaries and headers to hit; what is
 * checked is still what load returns. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <uv.h>

#include "docraft/error.h"
#include "drive.h"
#include "loop.h"
#include "raftlog/raftlog.h"
#include "test.h"

static void fail_hook(const char *file, int line, const char *msg)
{
	test_fail(file, line, "%s", msg);
}

/* ---- fixture: a loop, a log directory, a raft_uv directory ---- */

struct fx {
	uv_loop_t loop;
	char dir[256];
	char logdir[320];
	char netdir[320];
	size_t segment_bytes;
	struct raftlog *l;
};

static void fx_open(struct fx *f)
{
	struct raftlog_options o = {f->logdir, f->segment_bytes};
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";

	f->l = NULL;
	CHECK_OK_MSG(raftlog_open(&f->loop, &o, &f->l, errmsg), errmsg);
	CHECK(f->l != NULL);
}

static void fx_close(struct fx *f)
{
	drive_close_log(&f->loop, f->l);
	f->l = NULL;
}

static void fx_reopen(struct fx *f)
{
	fx_close(f);
	fx_open(f);
}

static void fx_up(struct fx *f, const char *tag, size_t segment_bytes)
{
	drive_fail = fail_hook;
	memset(f, 0, sizeof *f);
	test_tmpdir_make(f->dir, tag);
	snprintf(f->logdir, sizeof f->logdir, "%s/log", f->dir);
	drive_netdir_make(f->netdir);
	f->segment_bytes = segment_bytes;
	CHECK_OK(uv_loop_init(&f->loop));
	fx_open(f);
}

static void fx_down(struct fx *f)
{
	if (f->l != NULL)
		fx_close(f);
	CHECK_OK(loop_finish(&f->loop));
	test_tmpdir_remove(f->dir);
	test_tmpdir_remove(f->netdir);
}

/* raftlog_io_init + io.init, as raft_init. */
static void attach_raw(struct fx *f, struct drive_group *g, const char *name)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	CHECK_OK_MSG(drive_attach(g, &f->loop, f->l, name, f->netdir, errmsg), errmsg);
}

/* ---- a model of one group: what load must return ---- */

#define MODEL_MAX 4096
struct model {
	char name[72];
	uint64_t key;
	raft_term term;
	raft_id vote;
	bool has_snap;
	struct drive_snap snap;
	raft_index start; /* first index load must return */
	raft_index next;  /* one past the last */
	struct drive_want w[MODEL_MAX + 1]; /* by index */
};

static void model_init(struct model *m, const char *name)
{
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	m->key = drive_key(name);
	m->start = 1;
	m->next = 1;
}

/* The descriptions of n new entries at m->next of term, random lengths
 * (0..max_len), the first entry of a log (index 1) a RAFT_CHANGE. */
static void model_make(struct model *m, struct drive_want *w, unsigned n, raft_term term,
		       uint32_t max_len, uint64_t *rng)
{
	for (unsigned i = 0; i < n; i++) {
		raft_index idx = m->next + i;
		uint64_t r = test_rand(rng);
		w[i].term = term;
		w[i].type = idx == 1 ? RAFT_CHANGE : (r % 7 == 0 ? RAFT_BARRIER : RAFT_COMMAND);
		w[i].salt = (uint32_t)(r >> 32);
		w[i].len = max_len == 0 ? 0 : (uint32_t)((r >> 8) % (max_len + 1));
		if (r % 11 == 0)
			w[i].len = 0;
	}
}

static void model_add(struct model *m, const struct drive_want *w, unsigned n)
{
	CHECK(m->next + n <= MODEL_MAX);
	for (unsigned i = 0; i < n; i++)
		m->w[m->next + i] = w[i];
	m->next += n;
}

static void model_check_state(const struct model *m, const struct drive_state *st)
{
	CHECK_MSG(st->term == m->term, "%s: term %llu, want %llu", m->name,
		  (unsigned long long)st->term, (unsigned long long)m->term);
	CHECK_MSG(st->vote == m->vote, "%s: vote %llu, want %llu", m->name,
		  (unsigned long long)st->vote, (unsigned long long)m->vote);
	CHECK_MSG(st->has_snap == m->has_snap, "%s: snapshot %d, want %d", m->name, st->has_snap,
		  m->has_snap);
	if (m->has_snap) {
		CHECK_EQ_U64(st->snap.index, m->snap.index);
		CHECK_EQ_U64(st->snap.term, m->snap.term);
		CHECK_EQ_U64(st->snap.conf_index, m->snap.conf_index);
		CHECK_EQ_INT(st->snap.n_servers, m->snap.n_servers);
		for (unsigned i = 0; i < m->snap.n_servers; i++)
			CHECK_EQ_U64(st->snap.ids[i], m->snap.ids[i]);
		CHECK_EQ_MEM(st->snap.data, st->snap.len, m->snap.data, m->snap.len);
	}
	CHECK_MSG(st->start == m->start && st->n == m->next - m->start,
		  "%s: entries %llu..%llu (%zu), want %llu..%llu", m->name,
		  (unsigned long long)st->start, (unsigned long long)(st->start + st->n - 1), st->n,
		  (unsigned long long)m->start, (unsigned long long)(m->next - 1));
	for (raft_index i = m->start; i < m->next; i++) {
		const struct drive_entry *e = drive_state_at(st, i);
		CHECK_MSG(drive_entry_is(e, m->key, i, &m->w[i]),
			  "%s: entry %llu is term %llu type %u len %u, want term %llu type %u len %u "
			  "salt %u",
			  m->name, (unsigned long long)i, (unsigned long long)e->term, e->type, e->len,
			  (unsigned long long)m->w[i].term, m->w[i].type, m->w[i].len, m->w[i].salt);
	}
}

/* Attach and load as raft_init + raft_start do; compare with m. */
static void start(struct fx *f, struct drive_group *g, const struct model *m)
{
	struct drive_state st;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";

	attach_raw(f, g, m->name);
	CHECK_OK_MSG(drive_load(g, &st, errmsg), errmsg);
	model_check_state(m, &st);
	drive_state_free(&st);
}

/* raft_close, then raft_init + raft_start again: what load says now. */
static void restart(struct fx *f, struct drive_group *g, const struct model *m)
{
	drive_detach(g);
	start(f, g, m);
}

/* Start, compare, close. */
static void model_check_attached(struct fx *f, const struct model *m)
{
	struct drive_group *g = calloc(1, sizeof *g);
	CHECK(g != NULL);
	start(f, g, m);
	drive_detach(g);
	free(g);
}

static void append_ok(struct drive_group *g, struct model *m, const struct drive_want *w,
		      unsigned n)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	int rv = drive_append_wait(g, m->next, w, n, errmsg);
	CHECK_MSG(rv == 0, "%s: append at %llu: %d %s", m->name, (unsigned long long)m->next, rv,
		  errmsg);
	model_add(m, w, n);
}

static void append_random(struct drive_group *g, struct model *m, unsigned n, raft_term term,
			  uint32_t max_len, uint64_t *rng)
{
	struct drive_want w[64];
	CHECK(n <= 64);
	model_make(m, w, n, term, max_len, rng);
	append_ok(g, m, w, n);
}

static void set_term_ok(struct drive_group *g, struct model *m, raft_term term)
{
	int rv = g->x.io.set_term(&g->x.io, term);
	CHECK_MSG(rv == 0, "%s: set_term %llu: %d %s", m->name, (unsigned long long)term, rv,
		  g->x.io.errmsg);
	m->term = term;
	m->vote = 0;
}

static void set_vote_ok(struct drive_group *g, struct model *m, raft_id vote)
{
	int rv = g->x.io.set_vote(&g->x.io, vote);
	CHECK_MSG(rv == 0, "%s: set_vote %llu: %d %s", m->name, (unsigned long long)vote, rv,
		  g->x.io.errmsg);
	m->vote = vote;
}

static void truncate_ok(struct drive_group *g, struct model *m, raft_index index)
{
	int rv = drive_truncate(g, index);
	CHECK_MSG(rv == 0, "%s: truncate %llu: %d %s", m->name, (unsigned long long)index, rv,
		  g->x.io.errmsg);
	m->next = index;
}

/* What a follower does when a new leader's entries conflict from index on:
 * the new term, truncate, n entries of it. */
static void overwrite_ok(struct drive_group *g, struct model *m, raft_index index, unsigned n,
			 raft_term term, uint32_t max_len, uint64_t *rng)
{
	truncate_ok(g, m, index);
	set_term_ok(g, m, term);
	append_random(g, m, n, term, max_len, rng);
}

/* Starts g again (load must match m), closes it and reopens the log. */
static void check_and_reopen(struct fx *f, struct drive_group *g, const struct model *m)
{
	restart(f, g, m);
	drive_detach(g);
	fx_reopen(f);
}

static void snap_make(struct drive_snap *s, raft_index index, raft_term term, raft_index conf_index,
		      unsigned n_servers, const char *data)
{
	memset(s, 0, sizeof *s);
	s->index = index;
	s->term = term;
	s->conf_index = conf_index;
	s->n_servers = n_servers;
	for (unsigned i = 0; i < n_servers; i++)
		s->ids[i] = i + 1;
	s->len = strlen(data);
	memcpy(s->data, data, s->len);
}

/* snapshot_put(trailing) and what raft then expects of the log: entries
 * below index - trailing + 1 gone (trailing 0: every entry, also those
 * after index: an installed snapshot replaces the log). */
static void snapshot_ok(struct drive_group *g, struct model *m, unsigned trailing,
			const struct drive_snap *s)
{
	int rv = drive_snapshot_put_wait(g, trailing, s);
	CHECK_MSG(rv == 0, "%s: snapshot_put %llu: %d %s", m->name, (unsigned long long)s->index,
		  rv, g->x.io.errmsg);
	m->has_snap = true;
	m->snap = *s;
	if (trailing == 0) {
		m->start = m->next = s->index + 1;
	} else if (s->index > trailing && s->index - trailing + 1 > m->start) {
		m->start = s->index - trailing + 1;
	}
}

/* ---- contract ---- */

TEST(fresh_group_is_empty)
{
	struct fx f;
	static struct drive_group g;
	static struct model m;
	struct raftlog_stats st;

	fx_up(&f, "rl-fresh", 1 << 20);
	CHECK(!raftlog_group_exists(f.l, "t-fresh"));
	model_init(&m, "t-fresh");
	start(&f, &g, &m);
	drive_detach(&g);
	raftlog_stats(f.l, &st);
	CHECK_EQ_U64(st.appends, 0);
	fx_reopen(&f);
	model_check_attached(&f, &m);
	fx_down(&f);
}

TEST(term_and_vote_survive_reopen)
{
	struct fx f;
	static struct drive_group g;
	static struct model m;

	fx_up(&f, "rl-term", 1 << 20);
	model_init(&m, "t-term");
	start(&f, &g, &m);
	set_term_ok(&g, &m, 3);
	set_vote_ok(&g, &m, 2);
	CHECK(raftlog_group_exists(f.l, "t-term"));
	check_and_reopen(&f, &g, &m);
	CHECK(raftlog_group_exists(f.l, "t-term"));

	/* set_term clears the vote, on disk too. */
	start(&f, &g, &m);
	set_term_ok(&g, &m, 4);
	check_and_reopen(&f, &g, &m);

	/* A vote in the new term, the vote changing within a term. */
	start(&f, &g, &m);
	set_vote_ok(&g, &m, 5);
	set_vote_ok(&g, &m, 1);
	drive_detach(&g);
	fx_reopen(&f);
	model_check_attached(&f, &m);
	fx_down(&f);
}

TEST(bootstrap_writes_entry_one)
{
	struct fx f;
	static struct drive_group g, h;
	static struct model m;
	struct raft_configuration conf;
	struct raft_buffer enc;
	struct drive_state st;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	int rv;

	fx_up(&f, "rl-boot", 1 << 20);
	/* raft_bootstrap runs between raft_init and raft_start (no load yet). */
	attach_raw(&f, &g, "t-boot");
	drive_conf(&conf, 3);
	CHECK_OK(raft_configuration_encode(&conf, &enc));
	rv = g.x.io.bootstrap(&g.x.io, &conf);
	CHECK_MSG(rv == 0, "bootstrap: %d %s", rv, g.x.io.errmsg);
	rv = g.x.io.bootstrap(&g.x.io, &conf);
	CHECK_MSG(rv == RAFT_CANTBOOTSTRAP, "second bootstrap: %d", rv);
	CHECK(raftlog_group_exists(f.l, "t-boot"));
	drive_detach(&g);

	for (int pass = 0; pass < 2; pass++) {
		attach_raw(&f, &g, "t-boot");
		rv = g.x.io.bootstrap(&g.x.io, &conf); /* dqlite calls it on every start */
		CHECK_MSG(rv == RAFT_CANTBOOTSTRAP, "bootstrap again: %d", rv);
		CHECK_OK_MSG(drive_load(&g, &st, errmsg), errmsg);
		CHECK_EQ_U64(st.term, 1);
		CHECK_EQ_U64(st.vote, 0);
		CHECK(!st.has_snap);
		CHECK_EQ_U64(st.start, 1);
		CHECK_EQ_U64(st.n, 1);
		CHECK_EQ_U64(st.e[0].term, 1);
		CHECK_EQ_INT(st.e[0].type, RAFT_CHANGE);
		CHECK_EQ_MEM(st.e[0].data, st.e[0].len, enc.base, enc.len);
		drive_state_free(&st);
		drive_detach(&g);
		fx_reopen(&f);
	}

	/* A group that only has a term cannot be bootstrapped either. */
	model_init(&m, "t-boot-term");
	start(&f, &h, &m);
	set_term_ok(&h, &m, 2);
	drive_detach(&h);
	attach_raw(&f, &h, "t-boot-term");
	CHECK_EQ_INT(h.x.io.bootstrap(&h.x.io, &conf), RAFT_CANTBOOTSTRAP);
	drive_detach(&h);
	raft_free(enc.base);
	raft_configuration_close(&conf);
	model_check_attached(&f, &m);
	fx_down(&f);
}

/* Several groups, several appends in flight per group, all submitted before
 * the loop runs (so batches mix groups), terms and votes set while appends
 * are in flight: each group loads exactly its own entries, started again and
 * after a reopen. */
TEST(interleaved_groups_load_their_own)
{
	enum { G = 6, ROUNDS = 80, INFLIGHT = 4 };
	struct fx f;
	static struct drive_group g[G];
	static struct model m[G];
	static struct drive_append a[G][INFLIGHT];
	uint64_t rng = test_seed();
	char name[32];

	fx_up(&f, "rl-mix", 256 << 10);
	for (int i = 0; i < G; i++) {
		snprintf(name, sizeof name, "tablet-%d", i);
		model_init(&m[i], name);
		start(&f, &g[i], &m[i]);
		set_term_ok(&g[i], &m[i], 1 + (raft_term)i);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < G; i++) {
			unsigned k = (unsigned)(test_rand(&rng) % (INFLIGHT + 1));
			for (unsigned j = 0; j < k; j++) {
				struct drive_want w[8];
				unsigned n = 1 + (unsigned)(test_rand(&rng) % 5);
				uint32_t max = test_rand(&rng) % 13 == 0 ? 70000 : 3000;
				model_make(&m[i], w, n, m[i].term, max, &rng);
				a[i][j].then = NULL;
				CHECK_OK(drive_append(&g[i], &a[i][j], m[i].next, w, n));
				model_add(&m[i], w, n);
			}
			/* A higher term seen while appends are in flight (raft's
			 * recv path persists it at once, synchronously). */
			if (k > 0 && test_rand(&rng) % 6 == 0) {
				set_term_ok(&g[i], &m[i], m[i].term + 1);
				set_vote_ok(&g[i], &m[i], 1 + (raft_id)(test_rand(&rng) % 3));
			}
		}
		for (int i = 0; i < G; i++)
			for (unsigned j = 0; j < INFLIGHT; j++)
				if (a[i][j].returned) {
					CHECK(drive_run_until(&f.loop, &a[i][j].done));
					CHECK_MSG(a[i][j].status == 0, "%s: append %llu: %d %s",
						  m[i].name, (unsigned long long)a[i][j].first,
						  a[i][j].status, a[i][j].errmsg);
				}
		for (int i = 0; i < G; i++) {
			CHECK_EQ_INT(g[i].appends_in_flight, 0);
			memset(a[i], 0, sizeof a[i]);
		}
		if (r == ROUNDS / 2) /* a term change between batches */
			for (int i = 0; i < G; i++)
				set_term_ok(&g[i], &m[i], m[i].term + 1);
	}
	for (int i = 0; i < G; i++)
		restart(&f, &g[i], &m[i]);
	for (int i = 0; i < G; i++)
		drive_detach(&g[i]);
	fx_reopen(&f);
	for (int i = 0; i < G; i++)
		model_check_attached(&f, &m[i]);
	fx_down(&f);
}

/* truncate then append rewrites the tail (within a segment, across several
 * small segments, and while the truncated entries' append is in flight). */
TEST(truncate_then_append)
{
	struct fx f;
	static struct drive_group g;
	static struct model m;
	struct drive_append a;
	struct drive_want w[8];
	uint64_t rng = test_seed();

	fx_up(&f, "rl-trunc", 64 << 10);
	model_init(&m, "t-trunc");
	start(&f, &g, &m);
	set_term_ok(&g, &m, 1);
	for (int i = 0; i < 10; i++)
		append_random(&g, &m, 1, 1, 100, &rng);
	/* 1..10 -> 1..5 + 6..8 of term 2 */
	overwrite_ok(&g, &m, 6, 3, 2, 100, &rng);
	check_and_reopen(&f, &g, &m);

	/* Across segments: ~300 KiB of entries on 64 KiB segments, truncated
	 * back into an early one. */
	start(&f, &g, &m);
	for (int i = 0; i < 60; i++)
		append_random(&g, &m, 2, 2, 4000, &rng);
	overwrite_ok(&g, &m, 20, 5, 3, 4000, &rng);
	check_and_reopen(&f, &g, &m);

	/* Truncating entries whose append has not called back yet (a follower
	 * that receives a conflicting AppendEntries): ordered after it. */
	start(&f, &g, &m);
	model_make(&m, w, 6, 3, 500, &rng);
	a.then = NULL;
	CHECK_OK(drive_append(&g, &a, m.next, w, 6));
	model_add(&m, w, 6);
	overwrite_ok(&g, &m, m.next - 3, 2, 4, 500, &rng);
	CHECK(a.done);
	CHECK_MSG(a.status == 0, "append before the truncate: %d %s", a.status, a.errmsg);
	check_and_reopen(&f, &g, &m);

	/* A truncate with nothing after it, then a clean close. */
	start(&f, &g, &m);
	truncate_ok(&g, &m, m.next - 2);
	drive_detach(&g);
	fx_reopen(&f);
	model_check_attached(&f, &m);
	fx_down(&f);
}

/* snapshot_put with trailing keeps exactly index - trailing + 1 onwards;
 * trailing 0 (an installed snapshot) drops every entry; appends go on after
 * both. snapshot_get returns the newest with its configuration. */
TEST(snapshot_trailing)
{
	struct fx f;
	static struct drive_group g;
	static struct model m;
	struct drive_snap s, got;
	uint64_t rng = test_seed();

	fx_up(&f, "rl-snap", 64 << 10);
	model_init(&m, "t-snap");
	start(&f, &g, &m);
	set_term_ok(&g, &m, 1);
	for (int i = 0; i < 10; i++)
		append_random(&g, &m, 10, 1, 1500, &rng);
	CHECK_EQ_U64(m.next, 101);

	snap_make(&s, 80, 1, 1, 3, "snapshot at 80");
	snapshot_ok(&g, &m, 20, &s);
	CHECK_EQ_U64(m.start, 61);
	CHECK_OK(drive_snapshot_get_wait(&g, &got));
	CHECK_EQ_U64(got.index, 80);
	CHECK_EQ_MEM(got.data, got.len, s.data, s.len);
	check_and_reopen(&f, &g, &m);

	/* A trailing larger than the index keeps everything that is left. */
	start(&f, &g, &m);
	snap_make(&s, 90, 1, 85, 2, "snapshot at 90, conf at 85");
	snapshot_ok(&g, &m, 1000, &s);
	CHECK_EQ_U64(m.start, 61);
	CHECK_OK(drive_snapshot_get_wait(&g, &got));
	CHECK_EQ_U64(got.index, 90);
	CHECK_EQ_U64(got.term, 1);
	CHECK_EQ_U64(got.conf_index, 85);
	CHECK_EQ_INT(got.n_servers, 2);
	CHECK_EQ_U64(got.ids[0], 1);
	CHECK_EQ_U64(got.ids[1], 2);
	CHECK_EQ_MEM(got.data, got.len, s.data, s.len);
	restart(&f, &g, &m);

	/* trailing 0 at the last index: no entry left, the next append is 101. */
	snap_make(&s, 100, 1, 85, 2, "at 100");
	snapshot_ok(&g, &m, 0, &s);
	CHECK_EQ_U64(m.start, 101);
	check_and_reopen(&f, &g, &m);
	start(&f, &g, &m);
	set_term_ok(&g, &m, 2);
	append_random(&g, &m, 5, 2, 1500, &rng);
	drive_detach(&g);
	fx_reopen(&f);

	/* An installed snapshot far past the log (a follower that fell behind),
	 * and one behind the log's end: both replace the log. */
	start(&f, &g, &m);
	snap_make(&s, 500, 2, 400, 3, "installed at 500");
	snapshot_ok(&g, &m, 0, &s);
	append_random(&g, &m, 4, 2, 1500, &rng);
	CHECK_EQ_U64(m.start, 501);
	snap_make(&s, 502, 2, 400, 3, "installed at 502");
	snapshot_ok(&g, &m, 0, &s);
	CHECK_EQ_U64(m.start, 503);
	restart(&f, &g, &m);
	append_random(&g, &m, 3, 2, 1500, &rng);
	drive_detach(&g);
	fx_reopen(&f);
	start(&f, &g, &m);
	CHECK_OK(drive_snapshot_get_wait(&g, &got));
	CHECK_EQ_U64(got.index, 502);
	CHECK_EQ_U64(got.conf_index, 400);
	CHECK_EQ_INT(got.n_servers, 3);
	CHECK_EQ_MEM(got.data, got.len, s.data, s.len);
	drive_detach(&g);
	fx_down(&f);
}

/* raftlog_group_remove: refused while attached, gone after it (also after a
 * reopen), a new group of that name starts empty and keeps only its own
 * entries; unknown names are fine. */
TEST(group_remove)
{
	struct fx f;
	static struct drive_group g, other;
	static struct model m, mo;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	uint64_t rng = test_seed();

	fx_up(&f, "rl-remove", 64 << 10);
	model_init(&m, "t-gone");
	model_init(&mo, "t-other");
	start(&f, &g, &m);
	start(&f, &other, &mo);
	set_term_ok(&g, &m, 7);
	set_vote_ok(&g, &m, 3);
	set_term_ok(&other, &mo, 2);
	for (int i = 0; i < 30; i++) {
		append_random(&g, &m, 3, 7, 2000, &rng);
		append_random(&other, &mo, 1, 2, 2000, &rng);
	}
	CHECK_EQ_INT(raftlog_group_remove(f.l, "t-gone", errmsg), DOCRAFT_EBUSY);
	drive_detach(&g);
	CHECK_OK_MSG(raftlog_group_remove(f.l, "t-gone", errmsg), errmsg);
	CHECK(!raftlog_group_exists(f.l, "t-gone"));
	CHECK_OK_MSG(raftlog_group_remove(f.l, "t-never", errmsg), errmsg);
	CHECK_OK_MSG(raftlog_group_remove(f.l, "t-gone", errmsg), errmsg);
	model_init(&m, "t-gone");
	model_check_attached(&f, &m);
	drive_detach(&other);
	fx_reopen(&f);
	CHECK(!raftlog_group_exists(f.l, "t-gone"));
	CHECK(raftlog_group_exists(f.l, "t-other"));
	model_check_attached(&f, &m);
	model_check_attached(&f, &mo);

	/* Reborn: a few entries of its own, nothing of the old life. */
	start(&f, &g, &m);
	set_term_ok(&g, &m, 1);
	append_random(&g, &m, 2, 1, 100, &rng);
	drive_detach(&g);
	fx_reopen(&f);
	model_check_attached(&f, &m);
	model_check_attached(&f, &mo);
	fx_down(&f);
}

static void closed_flag_cb(struct raftlog *l, void *arg)
{
	(void)l;
	*(bool *)arg = true;
}

/* One attached io per name; names 1..64 printable bytes; raftlog_close
 * refuses while a group is attached and does not call back. */
TEST(attach_rules)
{
	struct fx f;
	static struct drive_group g, h;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	char name[80];
	bool closed = false;

	fx_up(&f, "rl-attach", 1 << 20);
	attach_raw(&f, &g, "t-one");
	CHECK_EQ_INT(drive_attach(&h, &f.loop, f.l, "t-one", f.netdir, errmsg), DOCRAFT_EBUSY);
	test_note("second attach: %s", errmsg);
	CHECK(errmsg[0] != '\0');

	CHECK_EQ_INT(raftlog_close(f.l, closed_flag_cb, &closed), DOCRAFT_EBUSY);
	CHECK(!closed);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	CHECK(!closed);

	CHECK_EQ_INT(drive_attach(&h, &f.loop, f.l, "", f.netdir, errmsg), DOCRAFT_EINVAL);
	memset(name, 'n', 65);
	name[65] = '\0';
	CHECK_EQ_INT(drive_attach(&h, &f.loop, f.l, name, f.netdir, errmsg), DOCRAFT_EINVAL);
	snprintf(name, sizeof name, "bad\nname");
	CHECK_EQ_INT(drive_attach(&h, &f.loop, f.l, name, f.netdir, errmsg), DOCRAFT_EINVAL);
	memset(name, 'n', 64);
	name[64] = '\0';
	attach_raw(&f, &h, name);
	CHECK_OK(h.x.io.set_term(&h.x.io, 9));
	drive_detach(&h);

	drive_detach(&g);
	attach_raw(&f, &g, "t-one"); /* free again after release */
	drive_detach(&g);
	fx_reopen(&f);
	CHECK(raftlog_group_exists(f.l, name));
	fx_down(&f);
}

/* ---- disk ---- */

/* Bytes of the directory's files: st_size and allocated blocks. */
static void dir_usage(const char *dir, uint64_t *size, uint64_t *blocks, uint64_t *segs)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[600];
	struct stat sb;

	*size = *blocks = *segs = 0;
	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		*size += (uint64_t)sb.st_size;
		*blocks += (uint64_t)sb.st_blocks * 512;
		if (strlen(de->d_name) == 20 && strcmp(de->d_name + 16, ".seg") == 0)
			(*segs)++;
	}
	closedir(d);
}

/* Stats and the directory once the writer has done its unlinks (a GC job
 * runs on the writer thread with no callback to wait for): the loop turns
 * until they agree (bounded; the caller checks). */
static void dir_settle(struct fx *f, struct raftlog_stats *st, uint64_t *size, uint64_t *blocks,
		       uint64_t *segs)
{
	for (int i = 0; i < 2000; i++) {
		raftlog_stats(f->l, st);
		dir_usage(f->logdir, size, blocks, segs);
		if (st->segments == *segs && st->disk_bytes == *size)
			return;
		uv_run(&f->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

/* 200 groups on 256 KiB segments. 190 append one 200-byte entry per round
 * and snapshot every 20 entries keeping 10; 10 write their first entries at
 * rounds spread over the run (each lands in a different segment) and then
 * stay idle. At every round the directory (stats and allocated blocks) stays
 * under 4 segments + the live data estimated from what raft still needs (the
 * most of the last 20 rounds: a segment goes some time after its last live
 * record, not at once);
 * without the rewrite rule the idle groups would pin a segment each. Then the
 * 190 are removed and one pump group writes on: what is left is the pump's
 * segments and the idle groups' share, under 64 KiB each. */
TEST(disk_bound_with_idle_groups)
{
	enum { G = 200, IDLE = 10, ROUNDS = 170, LEN = 200, EVERY = 20, TRAIL = 10 };
	const uint64_t seg = 256 << 10;
	struct fx f;
	static struct drive_group g[G], pump;
	static struct model m[G], mp;
	static struct drive_append a[G];
	static struct drive_put puts[G];
	struct raftlog_stats st;
	static uint64_t lives[ROUNDS];
	uint64_t rng = test_seed(), size, blocks, segs, max_disk = 0, max_live = 0;
	char name[32], errmsg[DOCRAFT_ERRMSG_SIZE] = "";

	fx_up(&f, "rl-disk", seg);
	for (int i = 0; i < G; i++) {
		snprintf(name, sizeof name, "%s-%03d", i < IDLE ? "idle" : "busy", i);
		model_init(&m[i], name);
		start(&f, &g[i], &m[i]);
		set_term_ok(&g[i], &m[i], 1);
	}
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t live = 0, recent = 0;
		for (int i = 0; i < G; i++) {
			struct drive_want w[3];
			unsigned n = 1;
			if (i < IDLE && r != 15 * i)
				continue;
			if (i < IDLE)
				n = 3;
			model_make(&m[i], w, n, 1, 0, &rng);
			for (unsigned k = 0; k < n; k++)
				w[k].len = LEN;
			a[i].then = NULL;
			CHECK_OK(drive_append(&g[i], &a[i], m[i].next, w, n));
			model_add(&m[i], w, n);
		}
		for (int i = 0; i < G; i++)
			if (a[i].returned) {
				CHECK(drive_run_until(&f.loop, &a[i].done));
				CHECK_MSG(a[i].status == 0, "%s: %d %s", m[i].name, a[i].status,
					  a[i].errmsg);
				memset(&a[i], 0, sizeof a[i]);
			}
		if ((r + 1) % EVERY == 0) {
			for (int i = IDLE; i < G; i++) {
				struct drive_snap s;
				snap_make(&s, m[i].next - 1, 1, 1, 3, "busy");
				CHECK_OK(drive_snapshot_put(&g[i], &puts[i], TRAIL, &s));
			}
			for (int i = IDLE; i < G; i++) {
				CHECK(drive_run_until(&f.loop, &puts[i].done));
				CHECK_MSG(puts[i].status == 0, "%s: snapshot: %d", m[i].name,
					  puts[i].status);
				m[i].has_snap = true;
				snap_make(&m[i].snap, m[i].next - 1, 1, 1, 3, "busy");
				m[i].start = m[i].next - TRAIL;
				drive_put_free(&puts[i]);
			}
		}
		/* What raft still needs: entries from start, a snapshot, term/vote.
		 * Per-entry and per-group overheads are generous guesses. */
		for (int i = 0; i < G; i++)
			live += (m[i].next - m[i].start) * (LEN + 64) + 512;
		lives[r] = live;
		for (int k = r >= EVERY ? r - EVERY : 0; k <= r; k++)
			if (lives[k] > recent)
				recent = lives[k];
		dir_settle(&f, &st, &size, &blocks, &segs);
		if (st.disk_bytes > max_disk)
			max_disk = st.disk_bytes;
		if (live > max_live)
			max_live = live;
		CHECK_MSG(st.segments == segs && st.disk_bytes == size,
			  "round %d: stats say %llu segments of %llu bytes, the dir has %llu of %llu",
			  r, (unsigned long long)st.segments, (unsigned long long)st.disk_bytes,
			  (unsigned long long)segs, (unsigned long long)size);
		if (r < 2 * EVERY)
			continue;
		CHECK_MSG(st.disk_bytes <= 4 * seg + recent && blocks <= 4 * seg + recent,
			  "round %d: disk %llu bytes (%llu allocated, %llu segments) > 4 segments + "
			  "live %llu (the most of the last %d rounds); stats: live %llu, removed %llu, "
			  "rewrites %llu",
			  r, (unsigned long long)st.disk_bytes, (unsigned long long)blocks,
			  (unsigned long long)segs, (unsigned long long)recent, EVERY,
			  (unsigned long long)st.live_bytes, (unsigned long long)st.segments_removed,
			  (unsigned long long)st.rewrites);
	}
	raftlog_stats(f.l, &st);
	test_note("200 groups: max disk %llu, max live estimate %llu; %llu segments removed, "
		  "%llu rewrites, %llu batches, %llu bytes written",
		  (unsigned long long)max_disk, (unsigned long long)max_live,
		  (unsigned long long)st.segments_removed, (unsigned long long)st.rewrites,
		  (unsigned long long)st.batches, (unsigned long long)st.bytes_written);
	CHECK(st.segments_removed > 0);

	/* The busy groups go; one pump writes ~1.1 MiB more, snapshotting with
	 * trailing 0 (nothing of it stays needed for long). */
	for (int i = IDLE; i < G; i++) {
		drive_detach(&g[i]);
		CHECK_OK_MSG(raftlog_group_remove(f.l, m[i].name, errmsg), errmsg);
	}
	model_init(&mp, "pump");
	start(&f, &pump, &mp);
	set_term_ok(&pump, &mp, 1);
	for (int r = 0; r < 70; r++) {
		struct drive_want w[1];
		model_make(&mp, w, 1, 1, 0, &rng);
		w[0].len = 16000;
		append_ok(&pump, &mp, w, 1);
		if (r % 2 == 1) {
			struct drive_snap s;
			snap_make(&s, mp.next - 1, 1, 1, 3, "pump");
			snapshot_ok(&pump, &mp, 0, &s);
		}
	}
	dir_settle(&f, &st, &size, &blocks, &segs);
	test_note("10 idle groups and the pump: disk %llu bytes (%llu allocated), %llu segments",
		  (unsigned long long)st.disk_bytes, (unsigned long long)blocks,
		  (unsigned long long)segs);
	CHECK_MSG(st.disk_bytes <= 2 * seg + IDLE * (64 << 10) &&
			  blocks <= 2 * seg + IDLE * (64 << 10),
		  "disk %llu (%llu allocated) > the pump's 2 segments + 64 KiB per idle group",
		  (unsigned long long)st.disk_bytes, (unsigned long long)blocks);
	drive_detach(&pump);
	for (int i = 0; i < IDLE; i++)
		drive_detach(&g[i]);
	fx_reopen(&f);
	for (int i = 0; i < IDLE; i++)
		model_check_attached(&f, &m[i]);
	model_check_attached(&f, &mp);
	fx_down(&f);
}

/* ---- damage: torn tails and bit flips on real segment files ---- */

/* The segment framing (src/raftlog/record.h), only to find where batches
 * start and end. */
#define SEG_HDR 32u
#define BATCH_HDR 20u
#define BATCH_MAGIC 0x48424c52u
#define REC_HDR 12u

/* Segment sequence numbers in dir, ascending. */
static size_t seg_list(const char *dir, uint64_t *seqs, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL) {
		char *end;
		uint64_t v;
		if (strlen(de->d_name) != 20 || strcmp(de->d_name + 16, ".seg") != 0)
			continue;
		v = strtoull(de->d_name, &end, 10);
		CHECK(end == de->d_name + 16 && n < cap);
		seqs[n++] = v;
	}
	closedir(d);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && seqs[j - 1] > seqs[j]; j--) {
			uint64_t t = seqs[j];
			seqs[j] = seqs[j - 1];
			seqs[j - 1] = t;
		}
	return n;
}

static void seg_name(char *out, size_t cap, const char *dir, uint64_t seq)
{
	snprintf(out, cap, "%s/%016llu.seg", dir, (unsigned long long)seq);
}

static uint64_t file_size(const char *path)
{
	struct stat sb;
	CHECK_MSG(stat(path, &sb) == 0, "%s: %s", path, strerror(errno));
	return (uint64_t)sb.st_size;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the bytes of fp from at to size are all zeros. */
static bool zeros_from(FILE *fp, uint64_t at, uint64_t size)
{
	int c = 0;
	CHECK(fseek(fp, (long)at, SEEK_SET) == 0);
	for (uint64_t i = at; i < size && c == 0; i++)
		c = fgetc(fp);
	return c == 0;
}

/* The start offsets of the batches of a segment file, then its end:
 * off[0..n] with off[n] = the end of the last batch (the file size, or
 * where the zeros the writer keeps ahead of the last segment's end start). */
static size_t seg_batches(const char *path, uint64_t *off, size_t cap)
{
	FILE *fp = fopen(path, "rb");
	uint8_t h[BATCH_HDR];
	uint64_t at = SEG_HDR, size = file_size(path);
	size_t n = 0;

	CHECK(fp != NULL);
	while (at + BATCH_HDR <= size) {
		CHECK(fseek(fp, (long)at, SEEK_SET) == 0 && fread(h, 1, sizeof h, fp) == sizeof h);
		if (le32(h) == 0 && zeros_from(fp, at, size))
			break;
		CHECK_MSG(le32(h) == BATCH_MAGIC, "%s: no batch magic at %llu", path,
			  (unsigned long long)at);
		CHECK(n + 1 < cap);
		off[n++] = at;
		at += BATCH_HDR + le32(h + 8);
	}
	CHECK_MSG(at == size || zeros_from(fp, at, size),
		  "%s: batches end at %llu, the file at %llu", path, (unsigned long long)at,
		  (unsigned long long)size);
	fclose(fp);
	off[n] = at;
	return n;
}

/* The start offsets of the records inside the batches off[0..nb] of the
 * segment file (record := type u8, 3 zero bytes, group u32, body_len u32,
 * body). */
static size_t seg_records(const char *path, const uint64_t *off, size_t nb, uint64_t *rec,
			  size_t cap)
{
	FILE *fp = fopen(path, "rb");
	uint8_t h[REC_HDR];
	size_t n = 0;

	CHECK(fp != NULL);
	for (size_t b = 0; b < nb; b++) {
		uint64_t at = off[b] + BATCH_HDR;
		while (at + REC_HDR <= off[b + 1]) {
			CHECK(fseek(fp, (long)at, SEEK_SET) == 0 &&
			      fread(h, 1, sizeof h, fp) == sizeof h);
			CHECK(n < cap);
			rec[n++] = at;
			at += REC_HDR + le32(h + 8);
		}
		CHECK_MSG(at == off[b + 1], "%s: records of the batch at %llu end at %llu, not %llu",
			  path, (unsigned long long)off[b], (unsigned long long)at,
			  (unsigned long long)off[b + 1]);
	}
	fclose(fp);
	return n;
}

static void copy_dir(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *de;
	static char buf[1 << 16];

	CHECK(d != NULL);
	CHECK_MSG(mkdir(to, 0755) == 0, "mkdir %s: %s", to, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		char a[600], b[600];
		FILE *in, *out;
		size_t k;
		if (de->d_name[0] == '.')
			continue;
		snprintf(a, sizeof a, "%s/%s", from, de->d_name);
		snprintf(b, sizeof b, "%s/%s", to, de->d_name);
		in = fopen(a, "rb");
		out = fopen(b, "wb");
		CHECK(in != NULL && out != NULL);
		while ((k = fread(buf, 1, sizeof buf, in)) > 0)
			CHECK(fwrite(buf, 1, k, out) == k);
		fclose(in);
		CHECK(fclose(out) == 0);
	}
	closedir(d);
}

static void flip_bit(const char *path, uint64_t off, unsigned bit)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	CHECK(fd >= 0);
	CHECK(pread(fd, &b, 1, (off_t)off) == 1);
	b ^= (uint8_t)(1u << bit);
	CHECK(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

/* A known history: 3 groups, one append at a time (so each lands in a batch
 * of its own), on 16 KiB segments; for each append the segment it went to
 * and the end of that file's batches when its callback came (the end of its
 * batch; the zeros the writer keeps ahead are not counted). */
#define HIST_G 3
#define HIST_MAX 200
struct hist_append {
	int g;
	unsigned n;
	struct drive_want w[4];
	uint64_t seg, end;
};

struct history {
	struct fx f;
	char pristine[320];
	uint64_t safe_from; /* cuts of the last segment at or past this are crashes */
	uint64_t first_seq; /* the oldest segment at the last append */
	char names[HIST_G][16];
	raft_term terms[HIST_G];
	size_t n;
	struct hist_append a[HIST_MAX];
	uint64_t segs[64];
	size_t nsegs;
};

/* Appends wholly in the last segment past safe_from. */
static size_t history_safe(const struct history *h)
{
	size_t n = 0;
	for (size_t k = 0; k < h->n; k++)
		if (h->a[k].seg == h->a[h->n - 1].seg && h->a[k].end > h->safe_from)
			n++;
	return n;
}

static void history_write(struct history *h, const char *tag)
{
	static struct drive_group g[HIST_G];
	static struct model m[HIST_G];
	uint64_t rng = test_seed();
	char path[400];

	memset(h, 0, sizeof *h);
	fx_up(&h->f, tag, 16 << 10);
	snprintf(h->pristine, sizeof h->pristine, "%s", h->f.logdir);
	for (int i = 0; i < HIST_G; i++) {
		snprintf(h->names[i], sizeof h->names[i], "hist-%d", i);
		model_init(&m[i], h->names[i]);
		start(&h->f, &g[i], &m[i]);
		h->terms[i] = 2 + (raft_term)i;
		set_term_ok(&g[i], &m[i], h->terms[i]);
	}
	for (size_t k = 0; k < 80 || history_safe(h) < 6; k++) {
		struct hist_append *ha = &h->a[h->n++];
		uint64_t seqs[64];
		size_t ns;
		CHECK(h->n < HIST_MAX);
		ha->g = (int)(test_rand(&rng) % HIST_G);
		ha->n = 1 + (unsigned)(test_rand(&rng) % 3);
		model_make(&m[ha->g], ha->w, ha->n, h->terms[ha->g], 700, &rng);
		append_ok(&g[ha->g], &m[ha->g], ha->w, ha->n);
		ns = seg_list(h->f.logdir, seqs, 64);
		CHECK(ns > 0);
		ha->seg = seqs[ns - 1];
		seg_name(path, sizeof path, h->f.logdir, ha->seg);
		{
			static uint64_t boff[HIST_MAX + 2];
			ha->end = boff[seg_batches(path, boff, HIST_MAX + 2)];
		}
		/* A segment went: the GC relied on every batch written so far (an
		 * idle group's tail rewritten forward, say), which no crash can
		 * lose; cuts start past this append. A new segment without that:
		 * all of it could be lost. */
		if (k == 0 || seqs[0] != h->first_seq) {
			h->safe_from = ha->end;
			h->first_seq = seqs[0];
		} else if (h->a[h->n - 2].seg != ha->seg) {
			h->safe_from = SEG_HDR;
		}
	}
	for (int i = 0; i < HIST_G; i++)
		drive_detach(&g[i]);
	fx_close(&h->f);
	h->nsegs = seg_list(h->pristine, h->segs, 64);
	CHECK_MSG(h->nsegs >= 3, "only %zu segments", h->nsegs);
	CHECK_MSG(h->segs[0] == h->first_seq && h->segs[h->nsegs - 1] == h->a[h->n - 1].seg,
		  "segments changed after the last append");
	test_note("history: %zu appends in %zu segments; cuts from offset %llu of the last", h->n,
		  h->nsegs, (unsigned long long)h->safe_from);
}

/* The models of the history's first `kept` appends. */
static void history_models(const struct history *h, size_t kept, struct model *m)
{
	for (int i = 0; i < HIST_G; i++) {
		model_init(&m[i], h->names[i]);
		m[i].term = h->terms[i];
	}
	for (size_t k = 0; k < kept; k++)
		model_add(&m[h->a[k].g], h->a[k].w, h->a[k].n);
}

/* A fresh copy of the pristine log at f.logdir (= dir/work). */
static void history_copy(struct history *h)
{
	char cmd[700];
	snprintf(h->f.logdir, sizeof h->f.logdir, "%s/work", h->f.dir);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->f.logdir);
	CHECK(system(cmd) == 0);
	copy_dir(h->pristine, h->f.logdir);
}

/* Opens the damaged copy: it must open and hold exactly the first `kept`
 * appends (and still take appends after that). */
static void history_expect(struct history *h, size_t kept, const char *what, bool append_after)
{
	static struct model m[HIST_G];
	static struct drive_group g;
	struct raftlog_options o = {h->f.logdir, h->f.segment_bytes};
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	uint64_t rng = 99;
	int rv;

	h->f.l = NULL;
	rv = raftlog_open(&h->f.loop, &o, &h->f.l, errmsg);
	CHECK_MSG(rv == 0, "%s: open: %d %s", what, rv, errmsg);
	history_models(h, kept, m);
	for (int i = 0; i < HIST_G; i++)
		model_check_attached(&h->f, &m[i]);
	if (append_after) {
		start(&h->f, &g, &m[0]);
		append_random(&g, &m[0], 2, m[0].term, 300, &rng);
		drive_detach(&g);
		fx_reopen(&h->f);
		for (int i = 0; i < HIST_G; i++)
			model_check_attached(&h->f, &m[i]);
	}
	fx_close(&h->f);
}

/* Opens the damaged copy: DOCRAFT_ECORRUPT naming the segment file and an
 * offset (one of those given). */
static void history_expect_corrupt(struct history *h, uint64_t seq, uint64_t off_a,
				   uint64_t off_b, const char *what)
{
	struct raftlog_options o = {h->f.logdir, h->f.segment_bytes};
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "", file[32], a[32], b[32];
	struct raftlog *l = (struct raftlog *)&o; /* must come back NULL */
	int rv;

	rv = raftlog_open(&h->f.loop, &o, &l, errmsg);
	if (rv == 0)
		drive_close_log(&h->f.loop, l);
	CHECK_MSG(rv == DOCRAFT_ECORRUPT, "%s: open returned %d (%s), want DOCRAFT_ECORRUPT", what,
		  rv, errmsg);
	CHECK_MSG(l == NULL, "%s: failed open left *out set", what);
	snprintf(file, sizeof file, "%016llu.seg", (unsigned long long)seq);
	snprintf(a, sizeof a, "%llu", (unsigned long long)off_a);
	snprintf(b, sizeof b, "%llu", (unsigned long long)off_b);
	CHECK_MSG(strstr(errmsg, file) != NULL && (strstr(errmsg, a) != NULL ||
						   strstr(errmsg, b) != NULL),
		  "%s: errmsg \"%s\" does not name %s and offset %s or %s", what, errmsg, file, a,
		  b);
}

/* How many of the history's appends lie wholly before offset x of the last
 * segment (everything in earlier segments counts). */
static size_t history_kept(const struct history *h, uint64_t x)
{
	size_t kept = 0;
	uint64_t last = h->segs[h->nsegs - 1];
	for (size_t k = 0; k < h->n; k++) {
		if (h->a[k].seg < last || h->a[k].end <= x)
			kept = k + 1;
		else
			break;
	}
	return kept;
}

static void history_down(struct history *h)
{
	fx_down(&h->f);
}

/* The batch offsets of segment h->segs[s] as written (seg_batches). */
static size_t history_batches(const struct history *h, size_t s, uint64_t *off, size_t cap)
{
	char path[400];
	seg_name(path, sizeof path, h->pristine, h->segs[s]);
	return seg_batches(path, off, cap);
}

/* A fresh copy (history_copy) with one bit of segment h->segs[s] flipped at
 * offset at (bit < 8; or a random bit when bit is 8). */
static void history_flip(struct history *h, size_t s, uint64_t at, unsigned bit, uint64_t *rng)
{
	char path[400];
	history_copy(h);
	seg_name(path, sizeof path, h->f.logdir, h->segs[s]);
	flip_bit(path, at, bit < 8 ? bit : (unsigned)(test_rand(rng) % 8));
}

/* The last segment cut at every batch and record boundary +-1, inside its
 * header and at random offsets: the log opens, and each group holds exactly
 * the appends wholly before the cut. */
TEST(torn_tail_cuts)
{
	static struct history h;
	uint64_t off[256], rec[512], cuts[1024], size, rng = test_seed();
	size_t nb, nr, nc = 0;
	char path[400], what[64];

	history_write(&h, "rl-torn");
	nb = history_batches(&h, h.nsegs - 1, off, 256);
	seg_name(path, sizeof path, h.pristine, h.segs[h.nsegs - 1]);
	size = off[nb];
	test_note("last segment: %zu batches, %llu bytes", nb, (unsigned long long)size);
	CHECK(nb >= 4);
	/* Each append of the last segment ends at a batch boundary. */
	for (size_t k = 0; k < h.n; k++)
		if (h.a[k].seg == h.segs[h.nsegs - 1]) {
			bool found = false;
			for (size_t b = 1; b <= nb; b++)
				found = found || off[b] == h.a[k].end;
			CHECK_MSG(found, "append %zu ends at %llu, not at a batch boundary", k,
				  (unsigned long long)h.a[k].end);
		}
	if (h.safe_from == SEG_HDR) /* the segment's creation torn */
		for (uint64_t x = 0; x <= SEG_HDR + 1; x += (x < 2 || x >= SEG_HDR - 1) ? 1 : SEG_HDR - 3)
			cuts[nc++] = x;
	for (size_t b = 0; b <= nb; b++)
		for (int d = -1; d <= 1; d++)
			if (off[b] + (uint64_t)d >= h.safe_from && off[b] + (uint64_t)d <= size &&
			    (d >= 0 || off[b] > 0))
				cuts[nc++] = off[b] + (uint64_t)d;
	nr = seg_records(path, off, nb, rec, 512);
	for (size_t k = 0; k < nr; k++)
		for (int d = -1; d <= 1; d++)
			if (rec[k] + (uint64_t)d >= h.safe_from && nc < 1000)
				cuts[nc++] = rec[k] + (uint64_t)d;
	for (int r = 0; r < 40; r++)
		cuts[nc++] = h.safe_from + test_rand(&rng) % (size - h.safe_from);
	for (size_t c = 0; c < nc; c++) {
		size_t kept = history_kept(&h, cuts[c]);
		history_copy(&h);
		seg_name(path, sizeof path, h.f.logdir, h.segs[h.nsegs - 1]);
		CHECK(truncate(path, (off_t)cuts[c]) == 0);
		snprintf(what, sizeof what, "cut at %llu", (unsigned long long)cuts[c]);
		history_expect(&h, kept, what, c % 8 == 0);
	}
	test_note("%zu cuts", nc);
	history_down(&h);
}

/* One bit flipped in a segment that is not the last (its header, a batch
 * header's magic, crc, len and seq, a record): DOCRAFT_ECORRUPT naming the
 * file and the offset, never a silent cut. */
TEST(bitflip_non_last_segment)
{
	static struct history h;
	uint64_t off[256];
	size_t nb;
	char what[96];
	uint64_t rng = test_seed();

	history_write(&h, "rl-flip");
	for (size_t s = 0; s + 1 < h.nsegs; s++) {
		struct {
			uint64_t at, batch;
			const char *part;
		} hits[10];
		size_t nh = 0;
		nb = history_batches(&h, s, off, 256);
		CHECK(nb >= 1);
		hits[nh].at = 4;
		hits[nh].batch = 0;
		hits[nh++].part = "segment header";
		for (int k = 0; k < (nb > 1 ? 2 : 1); k++) {
			size_t b = k == 0 ? 0 : nb - 1; /* the first and last batch */
			uint64_t len = off[b + 1] - off[b] - BATCH_HDR;
			hits[nh].at = off[b] + 1;
			hits[nh].batch = off[b];
			hits[nh++].part = "batch magic";
			hits[nh].at = off[b] + 4;
			hits[nh].batch = off[b];
			hits[nh++].part = "batch crc";
			hits[nh].at = off[b] + 12 + (uint64_t)(test_rand(&rng) % 8);
			hits[nh].batch = off[b];
			hits[nh++].part = "batch seq";
			hits[nh].at = off[b] + BATCH_HDR + test_rand(&rng) % len;
			hits[nh].batch = off[b];
			hits[nh++].part = "records";
		}
		for (size_t i = 0; i < nh; i++) {
			history_flip(&h, s, hits[i].at, 8, &rng);
			snprintf(what, sizeof what, "segment %zu of %zu, %s at %llu", s + 1, h.nsegs,
				 hits[i].part, (unsigned long long)hits[i].at);
			history_expect_corrupt(&h, h.segs[s], hits[i].batch, hits[i].at, what);
		}
		/* The len field: a length past the file or one that lands mid-batch. */
		history_flip(&h, s, off[0] + 8, 3, &rng);
		snprintf(what, sizeof what, "segment %zu, len of batch 1", s + 1);
		history_expect_corrupt(&h, h.segs[s], off[0], off[0] + 8, what);
	}
	history_down(&h);
}

/* A bit flipped in the last batch of the last segment is a torn tail: that
 * batch goes, every earlier one stays. */
TEST(bitflip_last_batch)
{
	static struct history h;
	uint64_t off[256], rng = test_seed();
	size_t nb;
	char what[96];

	history_write(&h, "rl-flip-last");
	nb = history_batches(&h, h.nsegs - 1, off, 256);
	CHECK(nb >= 2);
	for (int i = 0; i < 12; i++) {
		uint64_t len = off[nb] - off[nb - 1];
		uint64_t at = i < 4 ? off[nb - 1] + (uint64_t)i * 4 + 1 /* magic, crc, len, seq */
				    : off[nb - 1] + test_rand(&rng) % len;
		history_flip(&h, h.nsegs - 1, at, 8, &rng);
		snprintf(what, sizeof what, "flip at %llu in the last batch (%llu..%llu)",
			 (unsigned long long)at, (unsigned long long)off[nb - 1],
			 (unsigned long long)off[nb]);
		history_expect(&h, history_kept(&h, off[nb - 1]), what, i % 4 == 0);
	}
	history_down(&h);
}

/* A bit flipped in an earlier batch of the last segment, with good batches
 * after it, is corruption, not a torn tail: DOCRAFT_ECORRUPT. */
TEST(bitflip_earlier_batch_of_last_segment)
{
	static struct history h;
	uint64_t off[256], rng = test_seed();
	size_t nb;
	char what[96];

	history_write(&h, "rl-flip-mid");
	nb = history_batches(&h, h.nsegs - 1, off, 256);
	CHECK(nb >= 3);
	for (int i = 0; i < 10; i++) {
		size_t b = i < 5 ? 0 : (size_t)(test_rand(&rng) % (nb - 1));
		uint64_t len = off[b + 1] - off[b];
		uint64_t at = i == 0   ? off[b] + 1                   /* magic */
			      : i == 1 ? off[b] + 9                   /* len */
			      : i == 2 ? off[b] + 13                  /* seq */
				       : off[b] + test_rand(&rng) % len;
		history_flip(&h, h.nsegs - 1, at, 8, &rng);
		snprintf(what, sizeof what, "flip at %llu in batch %zu of %zu of the last segment",
			 (unsigned long long)at, b + 1, nb);
		history_expect_corrupt(&h, h.segs[h.nsegs - 1], off[b], at, what);
	}
	history_down(&h);
}

/* Entries larger than a segment (64 KiB segments; 100 and 300 KiB
 * entries) next to small ones of another group, truncated into, reopened. */
TEST(entries_larger_than_a_segment)
{
	struct fx f;
	static struct drive_group g, h;
	static struct model m, mh;
	struct drive_want w[2];
	uint64_t rng = test_seed();

	fx_up(&f, "rl-big", 64 << 10);
	model_init(&m, "t-big");
	model_init(&mh, "t-small");
	start(&f, &g, &m);
	start(&f, &h, &mh);
	set_term_ok(&g, &m, 1);
	set_term_ok(&h, &mh, 1);
	for (int i = 0; i < 6; i++) {
		model_make(&m, w, 2, 1, 0, &rng);
		w[0].len = i % 2 ? 100 << 10 : 300 << 10;
		w[1].len = 10;
		append_ok(&g, &m, w, 2);
		append_random(&h, &mh, 3, 1, 2000, &rng);
	}
	truncate_ok(&g, &m, 6);
	set_term_ok(&g, &m, 2);
	model_make(&m, w, 1, 2, 0, &rng);
	w[0].len = 200 << 10;
	append_ok(&g, &m, w, 1);
	restart(&f, &g, &m);
	drive_detach(&g);
	drive_detach(&h);
	fx_reopen(&f);
	model_check_attached(&f, &m);
	model_check_attached(&f, &mh);
	fx_down(&f);
}

struct close_seen {
	unsigned appends_before_close; /* append callbacks seen when close called back */
	bool closed;
};

static struct close_seen close_seen;

static void seen_close_cb(struct raft_io *io)
{
	struct drive_group *g = io->data;
	close_seen.appends_before_close = g->appends_done;
	close_seen.closed = true;
	g->close_fired = true;
}

/* raft_close with appends in flight: raft frees itself in its close
 * callback, so every append must have called back before io.close does
 * (with any status); those that said 0 are there after a reopen. */
TEST(close_with_appends_in_flight)
{
	enum { N = 8 };
	struct fx f;
	static struct drive_group g;
	static struct model m;
	static struct drive_append a[N];
	struct drive_want w[3];
	uint64_t rng = test_seed();
	raft_index first = 0;
	unsigned before;

	fx_up(&f, "rl-close", 64 << 10);
	model_init(&m, "t-close");
	start(&f, &g, &m);
	set_term_ok(&g, &m, 1);
	append_random(&g, &m, 3, 1, 500, &rng);
	before = g.appends_done;
	for (int i = 0; i < N; i++) {
		model_make(&m, w, 3, 1, 4000, &rng);
		a[i].then = NULL;
		CHECK_OK(drive_append(&g, &a[i], m.next, w, 3));
		model_add(&m, w, 3);
	}
	memset(&close_seen, 0, sizeof close_seen);
	g.x.io.close(&g.x.io, seen_close_cb);
	CHECK(!close_seen.closed);
	CHECK(drive_run_until(&f.loop, &close_seen.closed));
	CHECK_MSG(close_seen.appends_before_close == before + N,
		  "close called back after %u of %d append callbacks",
		  close_seen.appends_before_close - before, N);
	g.inited = false;
	/* The log keeps a prefix: every append that said 0 before the first that
	 * did not. */
	m.next = 4;
	for (int i = 0; i < N; i++) {
		test_note("append %d: %d %s", i, a[i].status, a[i].errmsg);
		if (a[i].status != 0)
			break;
		first = a[i].first + a[i].n;
		m.next = first;
	}
	drive_detach(&g);
	fx_reopen(&f);
	{
		struct drive_state st;
		char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
		attach_raw(&f, &g, "t-close");
		CHECK_OK_MSG(drive_load(&g, &st, errmsg), errmsg);
		CHECK_MSG(st.start + st.n >= m.next, "entries end at %llu, acknowledged up to %llu",
			  (unsigned long long)(st.start + st.n - 1), (unsigned long long)(m.next - 1));
		for (raft_index i = 1; i < st.start + st.n; i++)
			CHECK_MSG(drive_entry_is(drive_state_at(&st, i), m.key, i, &m.w[i]),
				  "entry %llu", (unsigned long long)i);
		drive_state_free(&st);
		drive_detach(&g);
	}
	fx_down(&f);
}

/* raft 0.15 puts a snapshot while it closes: net's close waits for the
 * async work of snapshot_async, whose callback (takeSnapshotDoneCb) calls
 * snapshot_put after io.close found nothing queued. Raft frees itself in
 * its close callback, so the put's callback must come first. */
static bool put_seen_before_close;
static struct drive_put *closing_put;

static void put_close_cb(struct raft_io *io)
{
	struct drive_group *g = io->data;
	put_seen_before_close = closing_put->done;
	close_seen.closed = true;
	g->close_fired = true;
}

TEST(snapshot_put_while_closing_calls_back_before_close)
{
	struct fx f;
	static struct drive_group g;
	static struct model m;
	static struct drive_put p;
	struct drive_snap s = {.index = 1, .term = 1, .conf_index = 1, .n_servers = 3,
			       .ids = {1, 2, 3}, .len = 13};
	uint64_t rng = test_seed();

	fx_up(&f, "rl-close-put", 64 << 10);
	model_init(&m, "t-close-put");
	start(&f, &g, &m);
	set_term_ok(&g, &m, 1);
	append_random(&g, &m, 3, 1, 200, &rng);
	memset(s.data, 'm', s.len);
	memset(&close_seen, 0, sizeof close_seen);
	memset(&p, 0, sizeof p);
	put_seen_before_close = false;
	closing_put = &p;
	g.x.io.close(&g.x.io, put_close_cb);
	CHECK_OK(drive_snapshot_put(&g, &p, 2, &s));
	CHECK(drive_run_until(&f.loop, &close_seen.closed));
	CHECK_MSG(put_seen_before_close, "raft's close callback came before the snapshot put's");
	CHECK(p.done);
	CHECK_EQ_INT(p.status, 0);
	drive_put_free(&p);
	g.inited = false;
	drive_detach(&g);
	fx_down(&f);
}

/* A segment file missing from the middle, or the oldest one (which still
 * holds live entries): the open fails with DOCRAFT_ECORRUPT, or (if the
 * file held nothing any group needs) every group loads exactly what was
 * written; never a log with entries silently gone. */
TEST(missing_segment)
{
	static struct history h;
	static struct model m[HIST_G];
	struct raftlog_options o;
	char path[400], errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	history_write(&h, "rl-missing");
	for (int k = 0; k < 2; k++) {
		size_t s = k == 0 ? h.nsegs / 2 : 0;
		history_copy(&h);
		seg_name(path, sizeof path, h.f.logdir, h.segs[s]);
		CHECK(unlink(path) == 0);
		o.dir = h.f.logdir;
		o.segment_bytes = h.f.segment_bytes;
		errmsg[0] = '\0';
		rv = raftlog_open(&h.f.loop, &o, &h.f.l, errmsg);
		test_note("segment %zu of %zu removed: %d %s", s + 1, h.nsegs, rv, errmsg);
		if (rv != 0) {
			CHECK_EQ_INT(rv, DOCRAFT_ECORRUPT);
			continue;
		}
		history_models(&h, h.n, m);
		for (int i = 0; i < HIST_G; i++)
			model_check_attached(&h.f, &m[i]);
		fx_close(&h.f);
	}
	history_down(&h);
}

/* ---- disk full ---- */

/* The body of disk_full, run by disk_full in a child process inside a mount
 * namespace of its own (RAFTLOG_FULL_DIR set); a no-op otherwise. */
TEST(disk_full_body)
{
	const char *dir = getenv("RAFTLOG_FULL_DIR");
	static struct drive_group ga, gb;
	static struct model ma, mb;
	static struct drive_append q[4];
	struct fx f;
	char mnt[290], ballast[320], errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct drive_want w[1];
	uint64_t rng = test_seed();
	raft_index failed_at;
	static char chunk[1 << 16];
	int fd, rv;
	size_t filled = 0;

	if (dir == NULL) {
		test_note("runs inside disk_full");
		return;
	}
	drive_fail = fail_hook;
	CHECK(strlen(dir) < 250);
	snprintf(mnt, sizeof mnt, "%.250s/mnt", dir);
	CHECK(mkdir(mnt, 0755) == 0);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("raftlog-full", mnt, "tmpfs", 0, "size=2m") != 0) {
		printf("# SKIP-FULL mount tmpfs: %s\n", strerror(errno));
		return;
	}
	memset(&f, 0, sizeof f);
	snprintf(f.dir, sizeof f.dir, "%s", dir);
	snprintf(f.logdir, sizeof f.logdir, "%s/log", mnt);
	snprintf(f.netdir, sizeof f.netdir, "%s/net", dir);
	CHECK(mkdir(f.netdir, 0755) == 0);
	f.segment_bytes = 256 << 10;
	CHECK_OK(uv_loop_init(&f.loop));
	fx_open(&f);
	model_init(&ma, "full-a");
	model_init(&mb, "full-b");
	start(&f, &ga, &ma);
	start(&f, &gb, &mb);
	set_term_ok(&ga, &ma, 1);
	set_term_ok(&gb, &mb, 1);
	for (int i = 0; i < 10; i++) {
		append_random(&ga, &ma, 2, 1, 3000, &rng);
		append_random(&gb, &mb, 2, 1, 3000, &rng);
	}

	/* Ballast until the file system is full. */
	snprintf(ballast, sizeof ballast, "%s/ballast", mnt);
	fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	memset(chunk, 0xBA, sizeof chunk);
	for (;;) {
		ssize_t k = write(fd, chunk, sizeof chunk);
		if (k <= 0)
			break;
		filled += (size_t)k;
	}
	CHECK(errno == ENOSPC);
	close(fd);
	test_note("ballast %zu KiB", filled >> 10);

	/* Appends into the zeros the writer keeps allocated ahead of the last
	 * segment's end still succeed (at most to the segment's end); the
	 * first that needs new pages fails with RAFT_NOSPACE, and again. */
	for (int k = 0;; k++) {
		CHECK_MSG(k < (int)(f.segment_bytes / 8192) + 2, "%d appends on a full disk", k);
		model_make(&ma, w, 1, 1, 0, &rng);
		w[0].len = 8192;
		rv = drive_append_wait(&ga, ma.next, w, 1, errmsg);
		if (rv != 0)
			break;
		model_add(&ma, w, 1);
	}
	failed_at = ma.next;
	for (int i = 0; i < 2; i++) {
		if (i > 0)
			model_make(&ma, w, 1, 1, 0, &rng);
		w[0].len = 8192;
		rv = drive_append_wait(&ga, failed_at, w, 1, errmsg);
		test_note("append %d on a full disk: %d %s", i + 1, rv, errmsg);
		CHECK_MSG(rv == RAFT_NOSPACE, "append %d on a full disk: %d %s", i + 1, rv, errmsg);
		CHECK_MSG(strcasestr(errmsg, "space") != NULL,
			  "append %d: the errmsg \"%s\" does not say the disk is full", i + 1, errmsg);
	}

	/* Appends in flight, three of one group and one of the other: every one
	 * fails (those queued after a failed one of the same group too). */
	for (int k = 0; k < 4; k++) {
		model_make(k < 3 ? &ma : &mb, w, 1, 1, 0, &rng);
		w[0].len = 8192;
		q[k].then = NULL;
		CHECK_OK(drive_append(k < 3 ? &ga : &gb, &q[k], k < 3 ? failed_at + (raft_index)k : mb.next,
				      w, 1));
	}
	for (int k = 0; k < 4; k++) {
		CHECK(drive_run_until(&f.loop, &q[k].done));
		test_note("append in flight %d on a full disk: %d %s", k + 1, q[k].status,
			  q[k].errmsg);
		CHECK_MSG(q[k].status == RAFT_NOSPACE, "append in flight %d: %d %s", k + 1,
			  q[k].status, q[k].errmsg);
	}

	/* Space again: raft appends at the failed index (0.15's leader does). */
	CHECK(unlink(ballast) == 0);
	model_make(&ma, w, 1, 1, 0, &rng);
	w[0].len = 8192;
	w[0].salt ^= 0x5a5a5a5au;
	append_ok(&ga, &ma, w, 1);
	CHECK_EQ_U64(ma.next, failed_at + 1);
	append_random(&ga, &ma, 3, 1, 3000, &rng);
	append_random(&gb, &mb, 3, 1, 3000, &rng);
	drive_detach(&ga);
	drive_detach(&gb);
	fx_reopen(&f);
	model_check_attached(&f, &ma);
	model_check_attached(&f, &mb);
	fx_close(&f);
	CHECK_OK(loop_finish(&f.loop));
	CHECK(umount(mnt) == 0);
}

/* A 2 MiB tmpfs, in a mount namespace of a child (unshare -m, or -rm where
 * this is not root): ballast fills it, appends fail with RAFT_NOSPACE and an
 * errmsg, then succeed once the ballast is gone; a reopen holds every
 * acknowledged entry and none of the failed ones. */
TEST(disk_full)
{
	char dir[256], self[512], cmd[1400], line[1024];
	FILE *p;
	int status;
	bool ok_line = false, skipped = false;
	ssize_t k;

	k = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(k > 0);
	self[k] = '\0';
	if (access("/usr/bin/unshare", X_OK) != 0) {
		test_note("SKIP disk_full: no unshare(1)");
		return;
	}
	test_tmpdir_make(dir, "rl-full");
	snprintf(cmd, sizeof cmd,
		 "RAFTLOG_FULL_DIR='%s' TEST_SEED=%llu unshare %s-m --propagation private '%s' "
		 "disk_full_body 2>&1",
		 dir, (unsigned long long)test_seed(), geteuid() == 0 ? "" : "-r ", self);
	fflush(stdout);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while (fgets(line, sizeof line, p) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "SKIP-FULL") != NULL || strstr(line, "unshare failed") != NULL ||
		    strstr(line, "unshare: ") == line)
			skipped = true;
		if (strcmp(line, "ok 1 - disk_full_body") == 0)
			ok_line = true;
		test_note("  | %s", line);
	}
	status = pclose(p);
	test_tmpdir_remove(dir);
	if (skipped) {
		test_note("SKIP disk_full: no tmpfs in a mount namespace here");
		return;
	}
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok_line,
		  "the child failed (status %d)", status);
}

TEST_MAIN(T(fresh_group_is_empty), T(term_and_vote_survive_reopen), T(bootstrap_writes_entry_one),
	  T(interleaved_groups_load_their_own), T(truncate_then_append), T(snapshot_trailing),
	  T(group_remove), T(attach_rules), T(disk_bound_with_idle_groups), T(torn_tail_cuts),
	  T(bitflip_non_last_segment), T(bitflip_last_batch),
	  T(bitflip_earlier_batch_of_last_segment), T(missing_segment),
	  T(entries_larger_than_a_segment), T(close_with_appends_in_flight),
	  T(snapshot_put_while_closing_calls_back_before_close), T(disk_full_body),
	  T(disk_full))
