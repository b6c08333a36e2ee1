/* White-box tests of src/raftlog: the record format, the group commit, the
 * failure path, recovery (torn tail, corruption), the GC, and three real
 * C-Raft 0.15 instances each on its own shared log over raft_uv on
 * loopback. Real files in temp dirs, a real libuv loop, driven through the
 * raft_io methods the way raft calls them. No timing assertions. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/mem.h"
#include "loop.h"
#include "proc.h"
#include "raftlog/internal.h"
#include "raftlog/raftlog.h"
#include "raftlog/record.h"
#include "test.h"

/* ---- fixture: a loop, a log dir, one raft_uv used only as `net` ---- */

struct fx {
	uv_loop_t loop;
	char dir[256];
	char uvdir[256];
	struct raft_uv_transport t;
	struct raft_io uv;
	struct raftlog *l;
	size_t seg_bytes;
};

static void fx_open_log(struct fx *f)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct raftlog_options o = {.dir = f->dir, .segment_bytes = f->seg_bytes};
	CHECK_OK_MSG(raftlog_open(&f->loop, &o, &f->l, errmsg), errmsg);
}

static void fx_init(struct fx *f, size_t seg_bytes)
{
	memset(f, 0, sizeof *f);
	CHECK_OK(uv_loop_init(&f->loop));
	test_tmpdir_make(f->dir, "raftlog");
	test_tmpdir_make(f->uvdir, "raftuv");
	CHECK_OK(raft_uv_tcp_init(&f->t, &f->loop));
	CHECK_OK(raft_uv_init(&f->uv, &f->loop, f->uvdir, &f->t));
	f->seg_bytes = seg_bytes;
	fx_open_log(f);
}

static void closed_cb(struct raftlog *l, void *arg)
{
	(void)l;
	*(bool *)arg = true;
}

static void fx_close_log(struct fx *f)
{
	bool done = false;
	CHECK_OK(raftlog_close(f->l, closed_cb, &done));
	CHECK(loop_run_until(&f->loop, loop_flag_is_set, &done, 10000));
	f->l = NULL;
}

static void fx_reopen(struct fx *f)
{
	fx_close_log(f);
	fx_open_log(f);
}

static void fx_done(struct fx *f)
{
	if (f->l != NULL)
		fx_close_log(f);
	raft_uv_close(&f->uv);
	raft_uv_tcp_close(&f->t);
	CHECK_OK(loop_finish(&f->loop));
	test_tmpdir_remove(f->dir);
	test_tmpdir_remove(f->uvdir);
}

static void attach(struct fx *f, struct raftlog_io *x, const char *name)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	CHECK_OK_MSG(raftlog_io_init(x, f->l, name, &f->uv, errmsg), errmsg);
}

/* ---- appends ---- */

/* A request's outcome: req->data points here (raft_io leaves data alone). */
struct waiter {
	int status;
	bool done;
};

static bool waiter_done(void *arg)
{
	return ((struct waiter *)arg)->done;
}

static void waiter_set(void *data, int status)
{
	struct waiter *w = data;
	w->status = status;
	w->done = true;
}

struct app {
	struct raft_io_append req;
	struct waiter w;
};

static void app_cb(struct raft_io_append *req, int status)
{
	waiter_set(req->data, status);
}

static bool app_done(void *arg)
{
	return ((struct app *)arg)->w.done;
}

/* Appends one entry "<tag>:<i>" padded to len bytes (>= 16). */
static void append_one(struct raftlog_io *x, struct app *a, uint64_t term, const char *tag,
		       unsigned i, size_t len)
{
	static char data[16384];
	memset(data, 'x', sizeof data);
	int k = snprintf(data, sizeof data, "%s:%u", tag, i);
	data[k] = '.';
	struct raft_entry e = {.term = term, .type = RAFT_COMMAND, .buf = {data, len}};
	memset(a, 0, sizeof *a);
	a->req.data = &a->w;
	CHECK_OK(x->io.append(&x->io, &a->req, &e, 1, app_cb));
	CHECK(!a->w.done); /* never synchronously */
}

static void append_wait(struct fx *f, struct raftlog_io *x, uint64_t term, const char *tag,
			unsigned i, size_t len)
{
	struct app a;
	append_one(x, &a, term, tag, i, len);
	CHECK(loop_run_until(&f->loop, app_done, &a, 10000));
	CHECK_EQ_INT(a.w.status, 0);
}

struct loaded {
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap;
	raft_index start;
	struct raft_entry *e;
	size_t n;
};

static void load(struct raftlog_io *x, struct loaded *ld)
{
	CHECK_OK(x->io.load(&x->io, &ld->term, &ld->vote, &ld->snap, &ld->start, &ld->e, &ld->n));
}

static void loaded_free(struct loaded *ld)
{
	if (ld->snap != NULL) {
		raft_configuration_close(&ld->snap->configuration);
		raft_free(ld->snap->bufs[0].base);
		raft_free(ld->snap->bufs);
		raft_free(ld->snap);
	}
	if (ld->n > 0)
		raft_free(ld->e[0].batch);
	raft_free(ld->e);
	memset(ld, 0, sizeof *ld);
}

/* Detaches x, closes and reopens the log (a restart), attaches x again and
 * loads it. */
static void reopen_and_load(struct fx *f, struct raftlog_io *x, const char *name,
			    struct loaded *ld)
{
	raftlog_io_release(x);
	fx_reopen(f);
	attach(f, x, name);
	load(x, ld);
}

/* Entry k of ld starts with "<tag>:<i>." */
static void check_entry(const struct loaded *ld, size_t k, const char *tag, unsigned i,
			size_t len)
{
	char want[64];
	int n = snprintf(want, sizeof want, "%s:%u.", tag, i);
	CHECK(k < ld->n);
	CHECK_EQ_U64(ld->e[k].buf.len, len);
	CHECK_EQ_MEM(ld->e[k].buf.base, (size_t)n, want, (size_t)n);
	CHECK(ld->e[k].batch == ld->e[0].batch);
}

static void stats(struct fx *f, struct raftlog_stats *st)
{
	raftlog_stats(f->l, st);
}

/* fx_init, then x attached as group name. */
static void fx_init_attached(struct fx *f, size_t seg_bytes, struct raftlog_io *x,
			     const char *name)
{
	fx_init(f, seg_bytes);
	attach(f, x, name);
}

/* The end of a case: frees ld, detaches x, closes everything. */
static void finish(struct fx *f, struct raftlog_io *x, struct loaded *ld)
{
	loaded_free(ld);
	raftlog_io_release(x);
	fx_done(f);
}

/* ---- tests ---- */

TEST(records_round_trip)
{
	struct buf b = BUF_INIT;
	rl_enc_group(&b, 7, "tablet-1");
	rl_enc_term_vote(&b, 7, 42, 3);
	uint64_t terms[2] = {5, 6};
	uint8_t types[2] = {RAFT_COMMAND, RAFT_BARRIER};
	uint32_t lens[2] = {3, 9};
	rl_enc_entries_begin(&b, 7, 100, 2, terms, types, lens);
	rl_enc_entry_data(&b, "abc", 3);
	rl_enc_entry_data(&b, "123456789", 9);
	rl_enc_truncate(&b, 7, 101);
	rl_enc_snapshot(&b, 7, 99, 5, 1, 90, "conf", 4, "marker", 6);
	rl_enc_remove(&b, 7);

	struct rl_rec r;
	size_t used, at = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_GROUP);
	CHECK_EQ_INT(r.group, 7);
	CHECK_EQ_MEM(r.name, r.name_len, "tablet-1", (size_t)8);
	at += used;
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_TERM_VOTE);
	CHECK_EQ_U64(r.term, 42);
	CHECK_EQ_U64(r.vote, 3);
	at += used;
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_ENTRIES);
	CHECK_EQ_U64(r.first, 100);
	CHECK_EQ_INT(r.n, 2);
	struct rl_entry_it it;
	struct rl_entry_view v;
	rl_entry_first(&it, &r);
	CHECK(rl_entry_next(&it, &v));
	CHECK_EQ_U64(v.term, 5);
	CHECK_EQ_INT(v.type, RAFT_COMMAND);
	CHECK_EQ_MEM(r.body + v.body_off, (size_t)v.len, "abc", (size_t)3);
	CHECK(rl_entry_next(&it, &v));
	CHECK_EQ_U64(v.term, 6);
	CHECK_EQ_INT(v.type, RAFT_BARRIER);
	CHECK_EQ_MEM(r.body + v.body_off, (size_t)v.len, "123456789", (size_t)9);
	CHECK(!rl_entry_next(&it, &v));
	at += used;
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_TRUNCATE);
	CHECK_EQ_U64(r.index, 101);
	at += used;
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_SNAPSHOT);
	CHECK_EQ_U64(r.index, 99);
	CHECK_EQ_U64(r.term, 5);
	CHECK_EQ_U64(r.conf_index, 1);
	CHECK_EQ_U64(r.first_needed, 90);
	CHECK_EQ_MEM(r.conf, (size_t)r.conf_len, "conf", (size_t)4);
	CHECK_EQ_MEM(r.data, (size_t)r.data_len, "marker", (size_t)6);
	at += used;
	CHECK_OK_MSG(rl_rec_decode(b.data + at, b.len - at, &r, &used, errmsg), errmsg);
	CHECK_EQ_INT(r.type, RL_REC_REMOVE);
	at += used;
	CHECK_EQ_U64(at, b.len);

	/* Every cut-short prefix of every record is refused, never read past. */
	for (size_t cut = 0; cut < b.len; cut++) {
		size_t off = 0;
		while (off < cut && rl_rec_decode(b.data + off, cut - off, &r, &used, NULL) == 0)
			off += used;
		CHECK(off <= cut);
	}
	/* A bad length inside ENTRIES is refused. */
	struct buf c = BUF_INIT;
	rl_enc_entries_begin(&c, 1, 1, 2, terms, types, lens);
	rl_enc_entry_data(&c, "abc", 3);
	rl_enc_entry_data(&c, "123456789", 9);
	rl_put_u32(c.data + RL_REC_HDR + 16 + 12, 200);
	CHECK_EQ_INT(rl_rec_decode(c.data, c.len, &r, &used, errmsg), DOCRAFT_ECORRUPT);
	/* Batch seal / check. */
	uint8_t batch[RL_BATCH_HDR + 5] = {0};
	memcpy(batch + RL_BATCH_HDR, "hello", 5);
	rl_batch_seal(batch, 5, 77);
	uint32_t len;
	uint64_t seq;
	CHECK_OK(rl_batch_check(batch, sizeof batch, &len, &seq));
	CHECK_EQ_U64(seq, 77);
	batch[RL_BATCH_HDR + 2] ^= 1;
	CHECK_EQ_INT(rl_batch_check(batch, sizeof batch, &len, &seq), DOCRAFT_ECORRUPT);
	buf_free(&b);
	buf_free(&c);
}

TEST(append_and_reopen_return_identical_entries)
{
	struct fx f;
	fx_init(&f, 0);
	struct raftlog_io x;
	attach(&f, &x, "g1");
	struct loaded ld;
	load(&x, &ld);
	CHECK_EQ_U64(ld.start, 1);
	CHECK_EQ_U64(ld.n, 0);
	CHECK(ld.snap == NULL);
	CHECK_OK(x.io.set_term(&x.io, 3));
	CHECK_OK(x.io.set_vote(&x.io, 2));
	for (unsigned i = 0; i < 20; i++)
		append_wait(&f, &x, 3, "a", i, 16 + i * 7);
	raftlog_io_release(&x);
	CHECK(raftlog_group_exists(f.l, "g1"));
	CHECK(!raftlog_group_exists(f.l, "nope"));
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			fx_reopen(&f);
		attach(&f, &x, "g1");
		load(&x, &ld);
		CHECK_EQ_U64(ld.term, 3);
		CHECK_EQ_U64(ld.vote, 2);
		CHECK_EQ_U64(ld.start, 1);
		CHECK_EQ_U64(ld.n, 20);
		for (unsigned i = 0; i < 20; i++) {
			check_entry(&ld, i, "a", i, 16 + i * 7);
			CHECK_EQ_U64(ld.e[i].term, 3);
		}
		loaded_free(&ld);
		raftlog_io_release(&x);
	}
	/* Only one io per group; set_term clears the vote. */
	struct raftlog_io y;
	attach(&f, &x, "g1");
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_EQ_INT(raftlog_io_init(&y, f.l, "g1", &f.uv, errmsg), DOCRAFT_EBUSY);
	CHECK_EQ_INT(raftlog_io_init(&y, f.l, "", &f.uv, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(raftlog_io_init(&y, f.l, "tab\there", &f.uv, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(raftlog_close(f.l, closed_cb, NULL), DOCRAFT_EBUSY);
	CHECK_OK(x.io.set_term(&x.io, 4));
	load(&x, &ld);
	CHECK_EQ_U64(ld.term, 4);
	CHECK_EQ_U64(ld.vote, 0);
	finish(&f, &x, &ld);
}

TEST(group_commit_one_batch_for_50_groups)
{
	struct fx f;
	fx_init(&f, 0);
	enum { N = 50 };
	static struct raftlog_io x[N];
	static struct app a[N];
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof name, "tablet-%d", i);
		attach(&f, &x[i], name);
	}
	/* A lone append: exactly one batch before its callback. */
	struct raftlog_stats s0, s1;
	stats(&f, &s0);
	append_wait(&f, &x[0], 1, "lone", 0, 32);
	stats(&f, &s1);
	CHECK_EQ_U64(s1.batches - s0.batches, 1);
	CHECK_EQ_U64(s1.appends - s0.appends, 1);
	/* 50 groups in one loop turn: one batch, one fdatasync. */
	s0 = s1;
	for (int i = 0; i < N; i++)
		append_one(&x[i], &a[i], 1, "gc", (unsigned)i, 64);
	for (int i = 0; i < N; i++)
		CHECK(loop_run_until(&f.loop, app_done, &a[i], 10000));
	stats(&f, &s1);
	CHECK_EQ_U64(s1.batches - s0.batches, 1);
	CHECK_EQ_U64(s1.appends - s0.appends, N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ_INT(a[i].w.status, 0);
		raftlog_io_release(&x[i]);
	}
	fx_reopen(&f);
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof name, "tablet-%d", i);
		attach(&f, &x[i], name);
		struct loaded ld;
		load(&x[i], &ld);
		CHECK_EQ_U64(ld.n, i == 0 ? 2u : 1u);
		check_entry(&ld, ld.n - 1, "gc", (unsigned)i, 64);
		loaded_free(&ld);
		raftlog_io_release(&x[i]);
	}
	fx_done(&f);
}

TEST(truncate_then_append)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 0, &x, "g");
	for (unsigned i = 1; i <= 5; i++)
		append_wait(&f, &x, 1, "old", i, 24);
	/* Truncate and append in the same turn: ordered. */
	CHECK_OK(x.io.truncate(&x.io, 3));
	struct app a1, a2;
	append_one(&x, &a1, 2, "new", 3, 40);
	append_one(&x, &a2, 2, "new", 4, 40);
	CHECK(loop_run_until(&f.loop, app_done, &a2, 10000));
	CHECK(a1.w.done && a1.w.status == 0 && a2.w.status == 0);
	raftlog_io_release(&x);
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			fx_reopen(&f);
		attach(&f, &x, "g");
		struct loaded ld;
		load(&x, &ld);
		CHECK_EQ_U64(ld.n, 4);
		check_entry(&ld, 0, "old", 1, 24);
		check_entry(&ld, 1, "old", 2, 24);
		check_entry(&ld, 2, "new", 3, 40);
		check_entry(&ld, 3, "new", 4, 40);
		CHECK_EQ_U64(ld.e[3].term, 2);
		loaded_free(&ld);
		raftlog_io_release(&x);
	}
	fx_done(&f);
}

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
	waiter_set(req->data, status);
}

static void snapshot_put(struct fx *f, struct raftlog_io *x, uint64_t index, unsigned trailing)
{
	struct raft_snapshot s = {.index = index, .term = 1, .configuration_index = 1};
	raft_configuration_init(&s.configuration);
	CHECK_OK(raft_configuration_add(&s.configuration, 1, "127.0.0.1:9001", RAFT_VOTER));
	CHECK_OK(raft_configuration_add(&s.configuration, 2, "127.0.0.1:9002", RAFT_VOTER));
	struct raft_buffer b = {"marker-13byte", 13};
	s.bufs = &b;
	s.n_bufs = 1;
	struct raft_io_snapshot_put req;
	struct waiter w = {0};
	req.data = &w;
	CHECK_OK(x->io.snapshot_put(&x->io, trailing, &req, &s, put_cb));
	CHECK(!w.done);
	raft_configuration_close(&s.configuration);
	CHECK(loop_run_until(&f->loop, waiter_done, &w, 10000));
	CHECK_EQ_INT(w.status, 0);
}

struct get {
	struct raft_io_snapshot_get req;
	struct raft_snapshot *s;
	bool done;
};

static void get_cb(struct raft_io_snapshot_get *req, struct raft_snapshot *s, int status)
{
	struct get *g = (struct get *)((char *)req - offsetof(struct get, req));
	CHECK_EQ_INT(status, 0);
	g->s = s;
	g->done = true;
}

static bool get_done(void *arg)
{
	return ((struct get *)arg)->done;
}

TEST(snapshot_put_with_trailing_drops_entries)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 0, &x, "g");
	for (unsigned i = 1; i <= 10; i++)
		append_wait(&f, &x, 1, "e", i, 20);
	snapshot_put(&f, &x, 8, 3); /* keeps 6..10 */
	struct get g = {0};
	CHECK_OK(x.io.snapshot_get(&x.io, &g.req, get_cb));
	CHECK(!g.done);
	CHECK(loop_run_until(&f.loop, get_done, &g, 10000));
	CHECK(g.s != NULL);
	CHECK_EQ_U64(g.s->index, 8);
	CHECK_EQ_U64(g.s->configuration.n, 2);
	CHECK_EQ_STR(g.s->configuration.servers[1].address, "127.0.0.1:9002");
	CHECK_EQ_MEM(g.s->bufs[0].base, g.s->bufs[0].len, "marker-13byte", (size_t)13);
	struct loaded gl = {.snap = g.s};
	loaded_free(&gl);
	raftlog_io_release(&x);
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			fx_reopen(&f);
		attach(&f, &x, "g");
		struct loaded ld;
		load(&x, &ld);
		CHECK(ld.snap != NULL);
		CHECK_EQ_U64(ld.snap->index, 8);
		CHECK_EQ_U64(ld.start, 6);
		CHECK_EQ_U64(ld.n, 5);
		check_entry(&ld, 0, "e", 6, 20);
		check_entry(&ld, 4, "e", 10, 20);
		loaded_free(&ld);
		raftlog_io_release(&x);
	}
	/* An installed snapshot (trailing 0): every entry goes; the next
	 * append is at index + 1. */
	attach(&f, &x, "g");
	snapshot_put(&f, &x, 50, 0);
	append_wait(&f, &x, 2, "after", 51, 20);
	struct loaded ld;
	reopen_and_load(&f, &x, "g", &ld);
	CHECK_EQ_U64(ld.snap->index, 50);
	CHECK_EQ_U64(ld.start, 51);
	CHECK_EQ_U64(ld.n, 1);
	check_entry(&ld, 0, "after", 51, 20);
	finish(&f, &x, &ld);
}

TEST(bootstrap_and_recover)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 0, &x, "g");
	struct raft_configuration c;
	raft_configuration_init(&c);
	CHECK_OK(raft_configuration_add(&c, 1, "127.0.0.1:9001", RAFT_VOTER));
	CHECK_OK(x.io.bootstrap(&x.io, &c));
	CHECK_EQ_INT(x.io.bootstrap(&x.io, &c), RAFT_CANTBOOTSTRAP);
	CHECK_OK(x.io.recover(&x.io, &c));
	raft_configuration_close(&c);
	struct loaded ld;
	reopen_and_load(&f, &x, "g", &ld);
	CHECK_EQ_U64(ld.term, 1);
	CHECK_EQ_U64(ld.n, 2);
	CHECK_EQ_INT(ld.e[0].type, RAFT_CHANGE);
	CHECK_EQ_INT(ld.e[1].type, RAFT_CHANGE);
	CHECK_EQ_U64(ld.e[0].term, 1);
	loaded_free(&ld);
	raftlog_io_release(&x);
	/* remove: the name starts empty afterwards */
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	CHECK_OK_MSG(raftlog_group_remove(f.l, "g", errmsg), errmsg);
	CHECK(!raftlog_group_exists(f.l, "g"));
	fx_reopen(&f);
	CHECK(!raftlog_group_exists(f.l, "g"));
	fx_done(&f);
}

TEST(failed_write_fails_the_batch_and_the_next_append_restarts)
{
	struct fx f;
	fx_init(&f, 0);
	struct raftlog_io x, y;
	attach(&f, &x, "a");
	attach(&f, &y, "b");
	append_wait(&f, &x, 1, "a", 1, 30);
	append_wait(&f, &y, 1, "b", 1, 30);
	raftlog_test_fail_next_write(f.l, ENOSPC);
	struct app a2, a3, b2;
	append_one(&x, &a2, 1, "a", 2, 30);
	append_one(&y, &b2, 1, "b", 2, 30);
	CHECK(loop_run_until(&f.loop, app_done, &a2, 10000));
	CHECK(loop_run_until(&f.loop, app_done, &b2, 10000));
	CHECK_EQ_INT(a2.w.status, RAFT_NOSPACE);
	CHECK_EQ_INT(b2.w.status, RAFT_NOSPACE);
	CHECK(strstr(x.io.errmsg, "write failed") != NULL);
	struct raftlog_stats st;
	stats(&f, &st);
	CHECK_EQ_U64(st.write_errors, 1);
	/* As 0.15's leader does: the next append is at the failed index. */
	append_one(&x, &a2, 1, "a", 22, 30);
	append_one(&x, &a3, 1, "a", 33, 30);
	CHECK(loop_run_until(&f.loop, app_done, &a3, 10000));
	CHECK_EQ_INT(a2.w.status, 0);
	CHECK_EQ_INT(a3.w.status, 0);
	raftlog_io_release(&x);
	raftlog_io_release(&y);
	fx_reopen(&f);
	attach(&f, &x, "a");
	struct loaded ld;
	load(&x, &ld);
	CHECK_EQ_U64(ld.n, 3);
	check_entry(&ld, 0, "a", 1, 30);
	check_entry(&ld, 1, "a", 22, 30);
	check_entry(&ld, 2, "a", 33, 30);
	loaded_free(&ld);
	raftlog_io_release(&x);
	attach(&f, &y, "b");
	load(&y, &ld);
	CHECK_EQ_U64(ld.n, 1);
	loaded_free(&ld);
	raftlog_io_release(&y);
	fx_done(&f);
}

static int count_segments(const char *dir, uint64_t *lowest)
{
	char cmd[512];
	int n = 0;
	*lowest = UINT64_MAX;
	for (uint64_t s = 1; s < 10000; s++) {
		snprintf(cmd, sizeof cmd, "%s/%016" PRIu64 ".seg", dir, s);
		if (access(cmd, F_OK) == 0) {
			n++;
			if (s < *lowest)
				*lowest = s;
		}
	}
	return n;
}

/* A failed write leaves its bytes past the durable end (the fdatasync
 * failed); the retry is shorter; then the log rotates: the old segment is
 * no longer the last, and must still read back clean. Then a failed
 * rotation: its half-made segment must not stay behind. */
TEST(stale_bytes_of_a_failed_write_never_read_back)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 8192, &x, "s");
	append_wait(&f, &x, 1, "s", 1, 100);
	raftlog_test_fail_next_write(f.l, EIO);
	struct app a;
	append_one(&x, &a, 1, "s", 2, 7000);
	CHECK(loop_run_until(&f.loop, app_done, &a, 10000));
	CHECK_EQ_INT(a.w.status, RAFT_IOERR);
	append_wait(&f, &x, 1, "s", 2, 50);
	/* 7000 stale bytes follow; the next append does not fit: rotation */
	append_wait(&f, &x, 1, "s", 3, 7900);
	CHECK_EQ_INT(count_segments(f.dir, &(uint64_t){0}), 2);
	for (unsigned i = 4; i <= 12; i++)
		append_wait(&f, &x, 1, "s", i, 1500);
	struct raftlog_stats st;
	stats(&f, &st);
	CHECK(st.segments >= 2);
	/* a failed rotation */
	raftlog_test_fail_next_write(f.l, ENOSPC);
	append_one(&x, &a, 1, "s", 13, 7000);
	CHECK(loop_run_until(&f.loop, app_done, &a, 10000));
	CHECK_EQ_INT(a.w.status, RAFT_NOSPACE);
	append_wait(&f, &x, 1, "s", 13, 60);
	struct loaded ld;
	reopen_and_load(&f, &x, "s", &ld);
	CHECK_EQ_U64(ld.n, 13);
	check_entry(&ld, 1, "s", 2, 50);
	check_entry(&ld, 2, "s", 3, 7900);
	check_entry(&ld, 12, "s", 13, 60);
	finish(&f, &x, &ld);
}

TEST(gc_removes_unneeded_segments_and_rewrites_idle_groups)
{
	struct fx f;
	fx_init(&f, 64 << 10);
	struct raftlog_io idle, busy;
	attach(&f, &idle, "idle");
	attach(&f, &busy, "busy");
	CHECK_OK(idle.io.set_term(&idle.io, 7));
	append_wait(&f, &idle, 7, "idle", 1, 100);
	/* ~40 segments of a busy group that snapshots as it goes. */
	unsigned i;
	for (i = 1; i <= 2500; i++) {
		append_wait(&f, &busy, 1, "busy", i, 1000);
		if (i % 100 == 0)
			snapshot_put(&f, &busy, i, 10);
	}
	struct raftlog_stats st;
	stats(&f, &st);
	uint64_t lowest;
	int nseg = count_segments(f.dir, &lowest);
	test_note("segments %d (lowest %" PRIu64 "), removed %" PRIu64 ", rewrites %" PRIu64
		  ", disk %" PRIu64 ", live %" PRIu64 ", written %" PRIu64 " in %" PRIu64 " batches", nseg, lowest, st.segments_removed,
		  st.rewrites, st.disk_bytes, st.live_bytes, st.bytes_written, st.batches);
	CHECK(st.segments_removed > 0);
	CHECK(st.rewrites > 0);
	CHECK(lowest > 1); /* the idle group no longer pins segment 1 */
	CHECK(nseg <= 4);
	CHECK_EQ_U64(st.segments, (uint64_t)nseg);
	raftlog_io_release(&idle);
	raftlog_io_release(&busy);
	fx_reopen(&f);
	attach(&f, &idle, "idle");
	struct loaded ld;
	load(&idle, &ld);
	CHECK_EQ_U64(ld.term, 7);
	CHECK_EQ_U64(ld.n, 1);
	check_entry(&ld, 0, "idle", 1, 100);
	loaded_free(&ld);
	attach(&f, &busy, "busy");
	load(&busy, &ld);
	CHECK_EQ_U64(ld.snap->index, 2500);
	CHECK_EQ_U64(ld.start, 2491);
	check_entry(&ld, ld.n - 1, "busy", 2500, 1000);
	loaded_free(&ld);
	raftlog_io_release(&idle);
	raftlog_io_release(&busy);
	fx_done(&f);
}

static void last_segment(const char *dir, char *path, size_t cap)
{
	uint64_t lowest;
	int n = count_segments(dir, &lowest);
	CHECK(n > 0);
	snprintf(path, cap, "%s/%016" PRIu64 ".seg", dir, lowest + (uint64_t)n - 1);
}

static off_t file_size(const char *path)
{
	struct stat st;
	CHECK_OK(stat(path, &st));
	return st.st_size;
}

TEST(torn_tail_is_cut)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 0, &x, "g");
	for (unsigned i = 1; i <= 3; i++)
		append_wait(&f, &x, 1, "t", i, 50);
	raftlog_io_release(&x);
	fx_close_log(&f);
	char path[512];
	last_segment(f.dir, path, sizeof path);
	off_t good = file_size(path);
	/* The last batch half written, then garbage. */
	CHECK_OK(truncate(path, good - 20));
	int fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, "garbage-garbage", 15), 15);
	close(fd);
	fx_open_log(&f);
	CHECK(file_size(path) < good);
	attach(&f, &x, "g");
	struct loaded ld;
	load(&x, &ld);
	CHECK_EQ_U64(ld.n, 2);
	loaded_free(&ld);
	/* The log goes on after the cut. */
	append_wait(&f, &x, 1, "t", 3, 50);
	reopen_and_load(&f, &x, "g", &ld);
	CHECK_EQ_U64(ld.n, 3);
	check_entry(&ld, 2, "t", 3, 50);
	finish(&f, &x, &ld);
}

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	static char b[1 << 16];
	ssize_t n;
	CHECK(in >= 0 && out >= 0);
	while ((n = read(in, b, sizeof b)) > 0)
		CHECK_EQ_INT(write(out, b, (size_t)n), (int)n);
	CHECK_EQ_INT((int)n, 0);
	close(in);
	close(out);
}

/* The segment of a log with one segment, copied into dir to (as a crash
 * would leave it: the log is open). */
static void copy_open_log(struct fx *f, const char *to)
{
	char from[512], path[600];
	last_segment(f->dir, from, sizeof from);
	snprintf(path, sizeof path, "%s/%s", to, strrchr(from, '/') + 1);
	copy_file(from, path);
}

/* Attaches x as group name and returns how many entries it loads. */
static size_t attach_count(struct fx *f, struct raftlog_io *x, const char *name)
{
	struct loaded ld;
	attach(f, x, name);
	load(x, &ld);
	size_t n = ld.n;
	loaded_free(&ld);
	return n;
}

/* While the log is open its last segment holds a window of zeros after its
 * records (allocated ahead, stats.disk_bytes counts it). A crash leaves
 * it: recovery reads the zeros as the end of the log (nothing cut, nothing
 * lost) and the log goes on there; non-zero bytes in the window are still a
 * torn tail (cut); a clean close cuts the zeros. */
TEST(zero_window_ends_the_log)
{
	struct fx f, c;
	struct raftlog_io x, y;
	struct loaded ld;
	struct raftlog_stats st;
	char seg[512], cseg[512];
	fx_init_attached(&f, 0, &x, "g");
	for (unsigned i = 1; i <= 3; i++)
		append_wait(&f, &x, 1, "t", i, 100);
	last_segment(f.dir, seg, sizeof seg);
	stats(&f, &st);
	uint64_t end = f.l->segs[0].size;
	test_note("records end at %" PRIu64 ", the file is %lld bytes", end,
		  (long long)file_size(seg));
	CHECK((uint64_t)file_size(seg) >= end + RL_ZERO_WINDOW / 2);
	CHECK_EQ_U64(st.disk_bytes, (uint64_t)file_size(seg));

	/* A crash copy: opens with every entry, the zeros kept, and goes on. */
	fx_init(&c, 0);
	fx_close_log(&c);
	test_tmpdir_remove(c.dir);
	test_tmpdir_make(c.dir, "raftlog");
	copy_open_log(&f, c.dir);
	last_segment(c.dir, cseg, sizeof cseg);
	off_t crashed = file_size(cseg);
	fx_open_log(&c);
	CHECK_EQ_U64((uint64_t)file_size(cseg), (uint64_t)crashed);
	CHECK_EQ_U64(attach_count(&c, &y, "g"), 3);
	append_wait(&c, &y, 1, "t", 4, 100);
	stats(&c, &st);
	CHECK_EQ_U64(st.disk_bytes, (uint64_t)file_size(cseg));
	reopen_and_load(&c, &y, "g", &ld); /* the close cut the zeros */
	check_entry(&ld, 3, "t", 4, 100);
	CHECK_EQ_U64(ld.n, 4);
	loaded_free(&ld);
	raftlog_io_release(&y);
	fx_close_log(&c);
	CHECK((uint64_t)file_size(cseg) < end + 1024);

	/* Bytes that are not zeros past the records: a torn tail, cut. */
	copy_open_log(&f, c.dir);
	int fd = open(cseg, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT((int)pwrite(fd, "torn", 4, (off_t)end + 100), 4);
	close(fd);
	fx_open_log(&c);
	CHECK_EQ_U64((uint64_t)file_size(cseg), end);
	CHECK_EQ_U64(attach_count(&c, &y, "g"), 3);
	raftlog_io_release(&y);
	fx_done(&c);

	/* The clean close of the original cuts its zeros. */
	raftlog_io_release(&x);
	fx_close_log(&f);
	CHECK_EQ_U64((uint64_t)file_size(seg), end);
	fx_done(&f);
}

TEST(crc_error_in_a_non_last_segment_is_corruption)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 4096, &x, "victim");
	for (unsigned i = 1; i <= 20; i++)
		append_wait(&f, &x, 1, "c", i, 1000);
	raftlog_io_release(&x);
	fx_close_log(&f);
	uint64_t lowest;
	CHECK(count_segments(f.dir, &lowest) >= 3);
	char path[512];
	snprintf(path, sizeof path, "%s/%016" PRIu64 ".seg", f.dir, lowest + 1);
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	char c;
	CHECK_EQ_INT(pread(fd, &c, 1, RL_SEG_HDR + RL_BATCH_HDR + 40), 1);
	c ^= 0x10;
	CHECK_EQ_INT(pwrite(fd, &c, 1, RL_SEG_HDR + RL_BATCH_HDR + 40), 1);
	close(fd);
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct raftlog_options o = {.dir = f.dir, .segment_bytes = 4096};
	struct raftlog *l = (struct raftlog *)1;
	CHECK_EQ_INT(raftlog_open(&f.loop, &o, &l, errmsg), DOCRAFT_ECORRUPT);
	CHECK(l == NULL);
	test_note("%s", errmsg);
	CHECK(strstr(errmsg, path) != NULL);
	CHECK(strstr(errmsg, "victim") != NULL);
	fx_done(&f);
}

/* A batch with a valid CRC (as a crafted file or a buggy writer would
 * leave) whose record names group id 0xffffffff: recovery indexes groups by
 * id, so this must be corruption, not a 32 GiB array. */
TEST(group_id_out_of_range_is_corruption)
{
	struct fx f;
	struct raftlog_io x;
	fx_init_attached(&f, 0, &x, "g");
	append_wait(&f, &x, 1, "e", 1, 32);
	raftlog_io_release(&x);
	fx_close_log(&f);
	char path[512];
	last_segment(f.dir, path, sizeof path);
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	off_t end = file_size(path);
	/* The last batch's seq: walk the batches after the segment header. */
	uint8_t *p = xmalloc((size_t)end);
	CHECK_EQ_INT(pread(fd, p, (size_t)end, 0), (int)end);
	uint64_t off = RL_SEG_HDR, seq = 0;
	uint32_t len;
	while (off < (uint64_t)end && rl_batch_check(p + off, (size_t)end - off, &len, &seq) == 0)
		off += RL_BATCH_HDR + len;
	CHECK_EQ_U64(off, (uint64_t)end);
	free(p);
	struct buf b;
	buf_init(&b);
	uint8_t hdr[RL_BATCH_HDR] = {0};
	buf_append(&b, hdr, sizeof hdr);
	rl_enc_term_vote(&b, UINT32_MAX, 7, 0);
	rl_batch_seal(b.data, (uint32_t)(b.len - RL_BATCH_HDR), seq + 1);
	CHECK_EQ_INT(pwrite(fd, b.data, b.len, end), (int)b.len);
	close(fd);
	buf_free(&b);
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct raftlog_options o = {.dir = f.dir};
	struct raftlog *l = (struct raftlog *)1;
	CHECK_EQ_INT(raftlog_open(&f.loop, &o, &l, errmsg), DOCRAFT_ECORRUPT);
	CHECK(l == NULL);
	test_note("%s", errmsg);
	CHECK(strstr(errmsg, "group id out of range") != NULL);
	fx_done(&f);
}

/* ---- measurement (no assertion on time) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void bench(struct fx *f, int groups, int turns)
{
	static struct raftlog_io x[96];
	static struct app a[96];
	for (int i = 0; i < groups; i++) {
		char name[32];
		snprintf(name, sizeof name, "b%d", i);
		attach(f, &x[i], name);
	}
	struct raftlog_stats s0, s1;
	uint64_t *turn_ns = xcalloc((size_t)turns, sizeof *turn_ns);
	stats(f, &s0);
	uint64_t t0 = uv_hrtime();
	for (int t = 0; t < turns; t++) {
		uint64_t ts = uv_hrtime();
		for (int i = 0; i < groups; i++)
			append_one(&x[i], &a[i], 1, "b", (unsigned)t, 128);
		for (int i = 0; i < groups; i++)
			CHECK(loop_run_until(&f->loop, app_done, &a[i], 10000));
		turn_ns[t] = uv_hrtime() - ts;
	}
	double s = (double)(uv_hrtime() - t0) / 1e9;
	stats(f, &s1);
	qsort(turn_ns, (size_t)turns, sizeof *turn_ns, cmp_u64);
	test_note("%d group(s): a turn (append to callback) p50 %.1f us, p90 %.1f us, p99 %.1f us",
		  groups, (double)turn_ns[turns / 2] / 1e3, (double)turn_ns[turns * 9 / 10] / 1e3,
		  (double)turn_ns[turns * 99 / 100] / 1e3);
	free(turn_ns);
	test_note("%d group(s) x 1 entry per turn, %d turns in %.2f s: %.0f appends/s, %" PRIu64
		  " batches (%.0f fdatasyncs/s), %.1f us per write+fdatasync", groups, turns, s,
		  (double)(s1.appends - s0.appends) / s, s1.batches - s0.batches,
		  (double)(s1.batches - s0.batches) / s,
		  (double)(s1.sync_ns_total - s0.sync_ns_total) / 1e3 /
			  (double)(s1.batches - s0.batches));
	CHECK_EQ_U64(s1.appends - s0.appends, (uint64_t)groups * (uint64_t)turns);
	CHECK(s1.batches - s0.batches <= (uint64_t)turns + 1);
	for (int i = 0; i < groups; i++)
		raftlog_io_release(&x[i]);
}

/* RAFTLOG_BENCH_DIR=/work/... puts the log there (a real disk) and runs
 * longer; by default a short run in the test's temp dir. */
TEST(measure_group_commit)
{
	struct fx f;
	const char *where = getenv("RAFTLOG_BENCH_DIR");
	int turns = where != NULL ? 2000 : 50;
	fx_init(&f, 0);
	if (where != NULL) {
		fx_close_log(&f);
		test_tmpdir_remove(f.dir);
		snprintf(f.dir, sizeof f.dir, "%s/raftlog-bench-%d", where, (int)getpid());
		fx_open_log(&f);
	}
	bench(&f, 1, turns);
	bench(&f, 96, turns / 4);
	/* 288 bootstrapped replicas (CREATE TABLE on 3 servers x 96): disk. */
	struct raftlog_stats s0, s1;
	stats(&f, &s0);
	struct raft_configuration c;
	raft_configuration_init(&c);
	for (int k = 1; k <= 3; k++) {
		char a[32];
		snprintf(a, sizeof a, "127.0.0.%d:9000", k);
		CHECK_OK(raft_configuration_add(&c, (raft_id)k, a, RAFT_VOTER));
	}
	uint64_t t0 = uv_hrtime();
	for (int i = 0; i < 288; i++) {
		struct raftlog_io x;
		char name[40];
		snprintf(name, sizeof name, "replica-%03d-of-some-table-id", i);
		attach(&f, &x, name);
		CHECK_OK(x.io.bootstrap(&x.io, &c));
		raftlog_io_release(&x);
	}
	raft_configuration_close(&c);
	stats(&f, &s1);
	test_note("288 bootstraps in %.2f s: %" PRIu64 " bytes written (%" PRIu64 " per replica), "
		  "%" PRIu64 " batches", (double)(uv_hrtime() - t0) / 1e9,
		  s1.bytes_written - s0.bytes_written,
		  (s1.bytes_written - s0.bytes_written) / 288, s1.batches - s0.batches);
	t0 = uv_hrtime();
	fx_reopen(&f);
	stats(&f, &s1);
	test_note("reopen of %" PRIu64 " groups, %" PRIu64 " segments, %" PRIu64
		  " bytes: %.3f s", s1.groups, s1.segments, s1.disk_bytes,
		  (double)(uv_hrtime() - t0) / 1e9);
	CHECK_EQ_U64(s1.groups, 288 + 96); /* b0 is in both benches */
	if (where != NULL) {
		fx_close_log(&f);
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", f.dir);
		CHECK_EQ_INT(system(cmd), 0);
		test_tmpdir_make(f.dir, "raftlog");
	}
	fx_done(&f);
}

/* ---- real C-Raft: three instances, each on its own shared log ---- */

enum { NR = 3, NCMD = 500 };

struct node {
	struct raft r;
	struct raft_fsm fsm;
	struct raftlog_io x;
	struct raft_uv_transport t;
	struct raft_io uv;
	struct raftlog *l;
	char dir[256], uvdir[256], addr[64];
	uint64_t applied;     /* commands applied this start */
	uint64_t sum;         /* of their payload numbers */
	unsigned restores;    /* snapshots restored this start */
	bool closed;
	bool log_closed;
};

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct node *n = fsm->data;
	uint64_t v;
	CHECK_EQ_U64(buf->len, 8);
	memcpy(&v, buf->base, 8);
	n->applied++;
	n->sum += v;
	*result = NULL;
	return 0;
}

/* Snapshots are 16-byte markers: (applied, sum) at the snapshot's index. */
static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct node *nd = fsm->data;
	*bufs = raft_malloc(sizeof **bufs);
	(*bufs)[0].base = raft_malloc(16);
	(*bufs)[0].len = 16;
	memcpy((*bufs)[0].base, &nd->applied, 8);
	memcpy((char *)(*bufs)[0].base + 8, &nd->sum, 8);
	*n = 1;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct node *nd = fsm->data;
	CHECK_EQ_U64(buf->len, 16);
	memcpy(&nd->applied, buf->base, 8);
	memcpy(&nd->sum, (char *)buf->base + 8, 8);
	nd->restores++;
	raft_free(buf->base);
	return 0;
}

static unsigned g_threshold = 100000, g_trailing = 8192; /* raft's snapshot policy */

static void node_start(uv_loop_t *loop, struct node *nodes, int i, bool first, int port)
{
	struct node *n = &nodes[i];
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct raftlog_options o = {.dir = n->dir};
	CHECK_OK_MSG(raftlog_open(loop, &o, &n->l, errmsg), errmsg);
	CHECK_OK(raft_uv_tcp_init(&n->t, loop));
	CHECK_OK(raft_uv_init(&n->uv, loop, n->uvdir, &n->t));
	CHECK_OK_MSG(raftlog_io_init(&n->x, n->l, "tablet-a", &n->uv, errmsg), errmsg);
	n->fsm = (struct raft_fsm){.version = 1, .data = n, .apply = fsm_apply,
				   .snapshot = fsm_snapshot, .restore = fsm_restore};
	n->applied = n->sum = 0;
	n->restores = 0;
	n->closed = n->log_closed = false;
	snprintf(n->addr, sizeof n->addr, "127.0.0.1:%d", port + i);
	CHECK_OK(raft_init(&n->r, &n->x.io, &n->fsm, (raft_id)(i + 1), n->addr));
	raftlog_io_set_raft(&n->x, &n->r);
	raft_set_election_timeout(&n->r, 300);
	raft_set_heartbeat_timeout(&n->r, 50);
	raft_set_snapshot_threshold(&n->r, g_threshold);
	raft_set_snapshot_trailing(&n->r, g_trailing);
	if (first) {
		struct raft_configuration c;
		raft_configuration_init(&c);
		for (int k = 0; k < NR; k++) {
			char a[64];
			snprintf(a, sizeof a, "127.0.0.1:%d", port + k);
			CHECK_OK(raft_configuration_add(&c, (raft_id)(k + 1), a, RAFT_VOTER));
		}
		CHECK_OK(raft_bootstrap(&n->r, &c));
		raft_configuration_close(&c);
	}
	CHECK_OK(raft_start(&n->r));
}

static struct node *g_nodes;

static bool has_leader(void *arg)
{
	struct node *nodes = arg;
	for (int i = 0; i < NR; i++)
		if (raft_state(&nodes[i].r) == RAFT_LEADER)
			return true;
	return false;
}

static void apply_cb(struct raft_apply *req, int status, void *result)
{
	(void)result;
	waiter_set(req->data, status);
}

/* raft_apply of the 8-byte command v on whoever leads, again until one
 * attempt is applied (a leader may lose leadership meanwhile). */
static void apply_on_leader(uv_loop_t *loop, struct node *nodes, uint64_t v)
{
	for (int tries = 0; tries < 100; tries++) {
		CHECK(loop_run_until(loop, has_leader, nodes, 20000));
		int leader = 0;
		for (int i = 0; i < NR; i++)
			if (raft_state(&nodes[i].r) == RAFT_LEADER)
				leader = i;
		struct raft_buffer b = {raft_malloc(8), 8};
		memcpy(b.base, &v, 8);
		struct raft_apply req;
		struct waiter w = {0};
		req.data = &w;
		if (raft_apply(&nodes[leader].r, &req, &b, 1, apply_cb) != 0) {
			raft_free(b.base);
			continue;
		}
		CHECK(loop_run_until(loop, waiter_done, &w, 20000));
		if (w.status == 0)
			return;
	}
	CHECK_MSG(false, "command %" PRIu64 " never applied", v);
}

static uint64_t g_target = NCMD;

static bool all_applied(void *arg)
{
	struct node *nodes = arg;
	for (int i = 0; i < NR; i++)
		if (nodes[i].applied < g_target)
			return false;
	return true;
}

static void raft_closed(struct raft *r)
{
	for (int i = 0; i < NR; i++)
		if (&g_nodes[i].r == r)
			g_nodes[i].closed = true;
}

static void log_closed(struct raftlog *l, void *arg)
{
	(void)l;
	((struct node *)arg)->log_closed = true;
}

static unsigned g_mask; /* the nodes stop_nodes works on */

static bool all_closed(void *arg)
{
	struct node *nodes = arg;
	for (int i = 0; i < NR; i++)
		if ((g_mask & (1u << i)) && !nodes[i].closed)
			return false;
	return true;
}

static bool all_logs_closed(void *arg)
{
	struct node *nodes = arg;
	for (int i = 0; i < NR; i++)
		if ((g_mask & (1u << i)) && !nodes[i].log_closed)
			return false;
	return true;
}

/* Closes raft, the io, raft_uv and the log of the nodes in mask. */
static void stop_nodes(uv_loop_t *loop, struct node *nodes, unsigned mask)
{
	g_mask = mask;
	for (int i = 0; i < NR; i++)
		if (mask & (1u << i))
			raft_close(&nodes[i].r, raft_closed);
	CHECK(loop_run_until(loop, all_closed, nodes, 10000));
	for (int i = 0; i < NR; i++) {
		if (!(mask & (1u << i)))
			continue;
		raftlog_io_release(&nodes[i].x);
		raft_uv_close(&nodes[i].uv);
		raft_uv_tcp_close(&nodes[i].t);
		CHECK_OK(raftlog_close(nodes[i].l, log_closed, &nodes[i]));
	}
	CHECK(loop_run_until(loop, all_logs_closed, nodes, 10000));
}

/* Temp dirs, three consecutive free ports, three bootstrapped nodes
 * started; returns the first port once a leader is elected. */
static int cluster_start(uv_loop_t *loop, struct node *nodes)
{
	signal(SIGPIPE, SIG_IGN); /* raft_uv writes to peers that were closed */
	CHECK_OK(uv_loop_init(loop));
	memset(nodes, 0, sizeof(struct node) * NR);
	g_nodes = nodes;
	g_target = NCMD;
	for (int i = 0; i < NR; i++) {
		test_tmpdir_make(nodes[i].dir, "rlnode");
		test_tmpdir_make(nodes[i].uvdir, "rluv");
	}
	int port = proc_free_port(1, -1);
	CHECK(port > 0);
	/* Three consecutive ports: check the other two too. */
	for (int tries = 0; tries < 50; tries++) {
		uv_tcp_t s;
		struct sockaddr_in sa;
		bool ok = true;
		for (int k = 1; k < NR && ok; k++) {
			uv_tcp_init(loop, &s);
			uv_ip4_addr("127.0.0.1", port + k, &sa);
			ok = uv_tcp_bind(&s, (const struct sockaddr *)&sa, 0) == 0 &&
			     uv_listen((uv_stream_t *)&s, 1, NULL) == 0;
			uv_close((uv_handle_t *)&s, NULL);
			uv_run(loop, UV_RUN_NOWAIT);
		}
		if (ok)
			break;
		port = proc_free_port(1, -1);
	}
	for (int i = 0; i < NR; i++)
		node_start(loop, nodes, i, true, port);
	CHECK(loop_run_until(loop, has_leader, nodes, 20000));
	return port;
}

static void cluster_end(uv_loop_t *loop, struct node *nodes)
{
	stop_nodes(loop, nodes, (1u << NR) - 1);
	CHECK_OK(loop_finish(loop));
	for (int i = 0; i < NR; i++) {
		test_tmpdir_remove(nodes[i].dir);
		test_tmpdir_remove(nodes[i].uvdir);
	}
}

/* Commands from..to on whoever leads; returns the sum of their values. */
static uint64_t apply_range(uv_loop_t *loop, struct node *nodes, uint64_t from, uint64_t to)
{
	uint64_t sum = 0;
	for (uint64_t v = from; v <= to; v++) {
		apply_on_leader(loop, nodes, v);
		sum += v;
	}
	return sum;
}

TEST(three_real_raft_instances_elect_apply_reopen)
{
	uv_loop_t loop;
	static struct node nodes[NR];
	int port = cluster_start(&loop, nodes);
	uint64_t want_sum = apply_range(&loop, nodes, 1, NCMD);
	CHECK(loop_run_until(&loop, all_applied, nodes, 20000));
	for (int i = 0; i < NR; i++) {
		CHECK_EQ_U64(nodes[i].applied, NCMD);
		CHECK_EQ_U64(nodes[i].sum, want_sum);
	}
	stop_nodes(&loop, nodes, (1u << NR) - 1);

	/* Reopen all: the same log, a new election, every entry applied once. */
	for (int i = 0; i < NR; i++)
		node_start(&loop, nodes, i, false, port);
	CHECK(loop_run_until(&loop, has_leader, nodes, 20000));
	/* Commit a fresh entry of the new term so that followers learn the
	 * commit index (0.15 appends no entry on election). */
	apply_on_leader(&loop, nodes, 0);
	g_target = NCMD + 1;
	CHECK(loop_run_until(&loop, all_applied, nodes, 20000));
	for (int i = 0; i < NR; i++) {
		test_note("node %d: applied %" PRIu64 " after restart", i + 1, nodes[i].applied);
		CHECK_EQ_U64(nodes[i].applied, NCMD + 1);
		CHECK_EQ_U64(nodes[i].sum, want_sum);
	}
	cluster_end(&loop, nodes);
}

static int g_victim;

static bool victim_unavailable(void *arg)
{
	struct node *nodes = arg;
	return raft_state(&nodes[g_victim].r) == RAFT_UNAVAILABLE;
}

/* A follower's log write fails: 0.15 keeps the failed entries in its
 * memory, so its next append would leave a hole; the log refuses it (never
 * stores entries at the wrong index), raft goes UNAVAILABLE, and after a
 * restart the follower loads what is durable and catches up: every node
 * applies the same commands. Fails without raftlog_io_set_raft (the hole
 * is then written, and the follower never stops). */
TEST(real_raft_follower_write_failure_restart_catches_up)
{
	uv_loop_t loop;
	static struct node nodes[NR];
	int port = cluster_start(&loop, nodes);
	uint64_t want_sum = apply_range(&loop, nodes, 1, 50);
	int leader = 0;
	for (int i = 0; i < NR; i++)
		if (raft_state(&nodes[i].r) == RAFT_LEADER)
			leader = i;
	g_victim = (leader + 1) % NR;
	raftlog_test_fail_next_write(nodes[g_victim].l, EIO);
	uint64_t v = 51;
	for (; !victim_unavailable(nodes) && v < 1000; v++)
		want_sum += apply_range(&loop, nodes, v, v);
	CHECK(victim_unavailable(nodes));
	struct raftlog_stats st;
	raftlog_stats(nodes[g_victim].l, &st);
	CHECK_EQ_U64(st.write_errors, 1);
	test_note("node %d unavailable after command %" PRIu64, g_victim + 1, v - 1);
	stop_nodes(&loop, nodes, 1u << g_victim);
	node_start(&loop, nodes, g_victim, false, port);
	want_sum += apply_range(&loop, nodes, v, v + 9);
	g_target = v + 9;
	CHECK(loop_run_until(&loop, all_applied, nodes, 20000));
	for (int i = 0; i < NR; i++) {
		CHECK_EQ_U64(nodes[i].applied, v + 9);
		CHECK_EQ_U64(nodes[i].sum, want_sum);
	}
	cluster_end(&loop, nodes);
}

/* Raft snapshots every 32 entries keeping 8: snapshot_put with trailing
 * on every node; a follower that was down while the leader's log moved on
 * gets an InstallSnapshot (snapshot_put with trailing 0); after a restart
 * of all, each node restores its newest snapshot from the log and replays
 * what follows it. The sums prove every command counted exactly once. */
TEST(real_raft_snapshots_install_and_restart)
{
	uv_loop_t loop;
	static struct node nodes[NR];
	g_threshold = 32;
	g_trailing = 8;
	int port = cluster_start(&loop, nodes);
	uint64_t want_sum = apply_range(&loop, nodes, 1, 40);
	int leader = 0;
	for (int i = 0; i < NR; i++)
		if (raft_state(&nodes[i].r) == RAFT_LEADER)
			leader = i;
	int down = (leader + 1) % NR;
	stop_nodes(&loop, nodes, 1u << down);
	want_sum += apply_range(&loop, nodes, 41, 200);
	node_start(&loop, nodes, down, false, port);
	want_sum += apply_range(&loop, nodes, 201, 210);
	g_target = 210;
	CHECK(loop_run_until(&loop, all_applied, nodes, 20000));
	for (int i = 0; i < NR; i++) {
		CHECK_EQ_U64(nodes[i].applied, 210);
		CHECK_EQ_U64(nodes[i].sum, want_sum);
	}
	test_note("node %d restored %u snapshot(s) after its restart", down + 1,
		  nodes[down].restores);
	CHECK(nodes[down].restores >= 1);
	struct raftlog_stats st;
	raftlog_stats(nodes[leader].l, &st);
	CHECK(st.live_bytes < 8192); /* 8 trailing entries, not 210 */
	stop_nodes(&loop, nodes, (1u << NR) - 1);
	for (int i = 0; i < NR; i++)
		node_start(&loop, nodes, i, false, port);
	apply_on_leader(&loop, nodes, 0);
	g_target = 211;
	CHECK(loop_run_until(&loop, all_applied, nodes, 20000));
	for (int i = 0; i < NR; i++) {
		CHECK(nodes[i].restores == 1);
		CHECK_EQ_U64(nodes[i].applied, 211);
		CHECK_EQ_U64(nodes[i].sum, want_sum);
	}
	cluster_end(&loop, nodes);
	g_threshold = 100000;
	g_trailing = 8192;
}

TEST_MAIN(T(records_round_trip), T(append_and_reopen_return_identical_entries),
	  T(group_commit_one_batch_for_50_groups), T(truncate_then_append),
	  T(snapshot_put_with_trailing_drops_entries), T(bootstrap_and_recover),
	  T(failed_write_fails_the_batch_and_the_next_append_restarts),
	  T(stale_bytes_of_a_failed_write_never_read_back),
	  T(gc_removes_unneeded_segments_and_rewrites_idle_groups), T(torn_tail_is_cut),
	  T(zero_window_ends_the_log), T(crc_error_in_a_non_last_segment_is_corruption),
	 T(group_id_out_of_range_is_corruption), T(measure_group_commit),
	  T(three_real_raft_instances_elect_apply_reopen),
	  T(real_raft_follower_write_failure_restart_catches_up),
	  T(real_raft_snapshots_install_and_restart))
