/* The routing client (libdocraft) against a fake cluster (fake.h): real
 * RPC servers on 127.0.0.1-3 playing two masters and three tablet servers,
 * scripted per case.
 *
 * What is checked, one behaviour per case:
 *   - a NOT_LEADER hint is followed at once, without asking the master;
 *   - a transport error (connection refused) refreshes the table from the
 *     master, whose new locations are then used;
 *   - a timed-out attempt refreshes too, and the retry carries the same
 *     client id and sequence number;
 *   - TABLET_NOT_FOUND refreshes (a tablet id that changed);
 *   - the total time bound gives DOCRAFT_EUNAVAILABLE, also with no master;
 *   - final errors (INVALID_ARGUMENT, TABLE_NOT_FOUND) are not retried;
 *   - a master's NOT_LEADER hint is followed;
 *   - writes to rows of two tablets go out as two WriteRequests at once
 *     (the fake holds writes until both arrived);
 *   - gets, scans with paging and resume, whole-table scans over tablets;
 *   - docraft_exec_cql runs the seed statements and sends the expected
 *     WriteRequests (the T2 map put, TTLs, deletes), prints SELECTs like
 *     cqlsh, points errors at their token;
 *   - the async API on a caller's loop; closing fails requests in flight,
 *     also blocking calls of many threads;
 *   - the admin commands.
 * Every key sent is also checked by the fake to hash into the tablet it
 * was sent to (the server's own decoding, rpc/wire.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "client/internal.h"
#include "common/buf.h"
#include "docdb/key.h"
#include "docraft/docraft.h"
#include "fake.h"
#include "rpc.pb-c.h"
#include "test.h"

static const char *const MSGS_CQL =
	"CREATE TABLE msgs (user_id text, msg_id int, msg text, msg_props map<text, text>, "
	"PRIMARY KEY ((user_id), msg_id))";

static struct fake F;

/* A server that goes away must not kill the test (listener.h). */
__attribute__((constructor)) static void ignore_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}

/* ---- helpers ---- */

static void start(void)
{
	fake_start(&F);
	fake_lock(&F);
	fake_set_table(&F, MSGS_CQL);
	fake_unlock(&F);
}

static void stop(void)
{
	fake_lock(&F);
	CHECK_EQ_INT(F.errors, 0);
	fake_unlock(&F);
	fake_stop(&F);
}

static docraft_client *open_client(const char *masters, uint32_t timeout_ms, uint32_t rpc_ms)
{
	docraft_client_options o;
	docraft_client *c;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options_init(&o);
	o.backoff_min_ms = 5;
	o.backoff_max_ms = 50;
	if (timeout_ms)
		o.timeout_ms = timeout_ms;
	if (rpc_ms)
		o.rpc_timeout_ms = rpc_ms;
	CHECK_OK_MSG(docraft_client_open(masters ? masters : fake_masters(&F), &o, &c, errmsg),
		     errmsg);
	return c;
}

/* A user id whose row lives in tablet ti (the 16-bit hash of the text). */
static const char *user_in(int ti, char *buf)
{
	for (int i = 0;; i++) {
		struct pv v;
		snprintf(buf, 32, "user%d", i);
		v = pv_str(buf);
		if (fake_tablet_of(key_hash_components(&v, 1)) == ti)
			return buf;
	}
}

static docraft_op *insert_msg(const char *user, int id, const char *msg)
{
	docraft_value key[2] = {docraft_value_text(user), docraft_value_int(id)};
	docraft_value v = docraft_value_text(msg);
	docraft_op *op;
	CHECK_OK(docraft_op_insert(key, 2, &op));
	CHECK_OK(docraft_op_column(op, "msg", &v));
	return op;
}

static int write1(docraft_client *c, const char *user, int id)
{
	docraft_op *op = insert_msg(user, id, "hello");
	int rv = docraft_write(c, "msgs", &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	docraft_op_free(op);
	return rv;
}

static int get_table_calls(void)
{
	int n;
	fake_lock(&F);
	n = F.get_table_calls[0] + F.get_table_calls[1];
	fake_unlock(&F);
	return n;
}

static Docraft__WriteRequest *wreq(int i)
{
	CHECK(F.reqs[i].method == DOCRAFT__METHOD__TSERVER_WRITE);
	return (Docraft__WriteRequest *)F.reqs[i].msg;
}

static const char *datum_s(const Docraft__Datum *d, char *buf)
{
	CHECK_EQ_INT(d->v_case, DOCRAFT__DATUM__V_S);
	memcpy(buf, d->s.data, d->s.len);
	buf[d->s.len] = '\0';
	return buf;
}

/* ---- routing and retries ---- */

TEST(open_validates_masters)
{
	docraft_client *c;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_EQ_INT(docraft_client_open("", NULL, &c, errmsg), DOCRAFT_EINVAL);
	CHECK(c == NULL);
	CHECK_EQ_INT(docraft_client_open("127.0.0.1:7100,300.1.1.1", NULL, &c, errmsg),
		     DOCRAFT_EINVAL);
	CHECK(strstr(errmsg, "bad master address '300.1.1.1'") != NULL);
	CHECK_EQ_INT(docraft_client_open("127.0.0.1:99999", NULL, &c, errmsg), DOCRAFT_EINVAL);
	/* No connection at open; a port-less address gets 7100. */
	CHECK_OK_MSG(docraft_client_open(" 127.0.0.1 , 127.0.0.2:7101", NULL, &c, errmsg), errmsg);
	CHECK_EQ_STR(c->masters[0], "127.0.0.1:7100");
	CHECK_EQ_STR(c->masters[1], "127.0.0.2:7101");
	docraft_client_close(c);
}

TEST(hint_followed_without_master)
{
	char user[32];
	docraft_client *c;
	uint8_t id[16];
	int ti = 1;
	start();
	fake_lock(&F);
	F.view.leader[ti] = 1; /* the master thinks tserver 0 leads ... */
	F.truth[ti] = 1;       /* ... but tserver 1 does */
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	docraft_client_id(c, id);
	CHECK_OK_MSG(write1(c, user_in(ti, user), 1), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 1);
	CHECK_EQ_INT(F.nreqs, 2);
	CHECK_EQ_INT(F.reqs[0].ts, 0);
	CHECK_EQ_INT(F.reqs[1].ts, 1);
	CHECK_EQ_STR(F.reqs[0].tablet, "msgs-1-aaaa");
	CHECK_EQ_STR(F.reqs[1].tablet, "msgs-1-aaaa");
	CHECK_EQ_MEM(F.reqs[0].client_id, 16, id, 16);
	CHECK_EQ_MEM(F.reqs[1].client_id, 16, id, 16);
	CHECK_EQ_U64(F.reqs[0].seq, F.reqs[1].seq);
	CHECK(F.reqs[0].hash_ok && F.reqs[1].hash_ok);
	fake_unlock(&F);
	/* The cache learnt the leader: the next write goes straight there. */
	CHECK_OK_MSG(write1(c, user, 2), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 3);
	CHECK_EQ_INT(F.reqs[2].ts, 1);
	CHECK_EQ_U64(F.reqs[2].seq, F.reqs[1].seq + 1);
	CHECK_EQ_U64(F.reqs[2].min_running, F.reqs[2].seq);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 1);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(no_hint_tries_next_replica)
{
	char user[32];
	docraft_client *c;
	start();
	fake_lock(&F);
	F.hints = false;
	F.view.leader[0] = 1;
	F.truth[0] = 2;
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(write1(c, user_in(0, user), 1), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 3);
	CHECK_EQ_INT(F.reqs[0].ts, 0);
	CHECK_EQ_INT(F.reqs[1].ts, 1);
	CHECK_EQ_INT(F.reqs[2].ts, 2);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 1);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(transport_error_refreshes)
{
	char user[32];
	docraft_client *c;
	int ti = 0;
	start();
	fake_lock(&F);
	/* The master names a leader whose address refuses connections; after
	 * one GetTable it knows better. */
	snprintf(F.view.addr[3], sizeof F.view.addr[3], "%s", F.dead_addr);
	F.view.leader[ti] = 3;
	F.next_view = F.view;
	F.next_view.leader[ti] = 2;
	F.switch_after = 1;
	F.truth[ti] = 1;
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(write1(c, user_in(ti, user), 1), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 2);
	CHECK_EQ_INT(F.nreqs, 1);
	CHECK_EQ_INT(F.reqs[0].ts, 1);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(timeout_refreshes_same_seq)
{
	char user[32];
	docraft_client *c;
	int ti = 1;
	start();
	fake_lock(&F);
	F.mode[0] = TS_BLACKHOLE;
	F.view.leader[ti] = 1;
	F.next_view = F.view;
	F.next_view.leader[ti] = 2;
	F.switch_after = 1;
	F.truth[ti] = 1;
	fake_unlock(&F);
	c = open_client(NULL, 0, 200);
	CHECK_OK_MSG(write1(c, user_in(ti, user), 7), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 2);
	CHECK_EQ_INT(F.nreqs, 2);
	CHECK_EQ_INT(F.reqs[0].ts, 0); /* timed out */
	CHECK_EQ_INT(F.reqs[1].ts, 1);
	CHECK_EQ_MEM(F.reqs[0].client_id, 16, F.reqs[1].client_id, 16);
	CHECK_EQ_U64(F.reqs[0].seq, F.reqs[1].seq);
	/* The very same operations. */
	CHECK_EQ_INT(wreq(0)->n_ops, 1);
	CHECK_EQ_INT(wreq(1)->ops[0]->key[1]->i, 7);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(tablet_not_found_refreshes)
{
	char user[32];
	docraft_client *c;
	start();
	fake_lock(&F);
	snprintf(F.tnf_tablet, sizeof F.tnf_tablet, "msgs-0-aaaa");
	F.next_view = F.view;
	snprintf(F.next_view.ids[0], sizeof F.next_view.ids[0], "msgs-0-bbbb");
	F.switch_after = 1;
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(write1(c, user_in(0, user), 1), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 2);
	CHECK_EQ_INT(F.nreqs, 2);
	CHECK_EQ_STR(F.reqs[0].tablet, "msgs-0-aaaa");
	CHECK_EQ_STR(F.reqs[1].tablet, "msgs-0-bbbb");
	CHECK_EQ_U64(F.reqs[0].seq, F.reqs[1].seq);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(gives_up_unavailable)
{
	char user[32], masters[64];
	docraft_client *c;
	uint64_t t0, ms;
	start();
	fake_lock(&F);
	for (int i = 0; i < FAKE_TS; i++)
		F.mode[i] = TS_BLACKHOLE;
	fake_unlock(&F);
	c = open_client(NULL, 800, 200);
	t0 = uv_hrtime();
	CHECK_EQ_INT(write1(c, user_in(0, user), 1), DOCRAFT_EUNAVAILABLE);
	ms = (uv_hrtime() - t0) / 1000000;
	test_note("gave up after %llu ms: %s", (unsigned long long)ms, docraft_errmsg());
	CHECK(ms >= 700 && ms < 800 + 2500);
	CHECK(strstr(docraft_errmsg(), "gave up") != NULL);
	CHECK(strstr(docraft_errmsg(), "timed out") != NULL);
	fake_lock(&F);
	CHECK(F.nreqs >= 3);
	CHECK(F.get_table_calls[0] + F.get_table_calls[1] >= 2);
	for (int i = 1; i < F.nreqs; i++)
		CHECK_EQ_U64(F.reqs[i].seq, F.reqs[0].seq);
	fake_unlock(&F);
	docraft_client_close(c);

	/* No master at all. */
	snprintf(masters, sizeof masters, "%s", F.dead_addr);
	c = open_client(masters, 500, 100);
	t0 = uv_hrtime();
	CHECK_EQ_INT(write1(c, "user1", 1), DOCRAFT_EUNAVAILABLE);
	ms = (uv_hrtime() - t0) / 1000000;
	test_note("no master: %llu ms: %s", (unsigned long long)ms, docraft_errmsg());
	CHECK(ms >= 400 && ms < 500 + 2500);
	CHECK(strstr(docraft_errmsg(), "no master answered") != NULL);
	docraft_client_close(c);
	stop();
}

/* A write in flight at a failover backs off while no replica leads; the
 * first other write that finds the new leader wakes it: it completes at
 * once, not at the end of its (here 5 s) backoff. */
static uint64_t woken_done_ns;
static int woken_status = -1;

static void woken_cb(docraft_req *req)
{
	__atomic_store_n(&woken_status, req->status, __ATOMIC_SEQ_CST);
	__atomic_store_n(&woken_done_ns, uv_hrtime(), __ATOMIC_SEQ_CST);
}

TEST(backoff_cut_short_by_success)
{
	char user[32];
	docraft_client *c;
	docraft_client_options o;
	docraft_req req;
	docraft_op *op;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t b_done, a_done;
	int ti = 0, reqs_before;
	start();
	fake_lock(&F);
	F.truth[ti] = -1; /* an election: every replica answers NOT_LEADER */
	F.hints = false;
	fake_unlock(&F);
	docraft_client_options_init(&o);
	o.backoff_min_ms = 5000;
	o.backoff_max_ms = 5000;
	o.timeout_ms = 30000;
	CHECK_OK_MSG(docraft_client_open(fake_masters(&F), &o, &c, errmsg), errmsg);
	op = insert_msg(user_in(ti, user), 1, "in flight");
	memset(&req, 0, sizeof req);
	woken_done_ns = 0;
	woken_status = -1;
	CHECK_OK(docraft_write_async(c, &req, "msgs", &op, 1, DOCRAFT_TTL_DEFAULT, woken_cb));
	/* Wait until it asked every replica and sleeps (2.5..5 s). */
	for (int i = 0; i < 400; i++) {
		fake_lock(&F);
		reqs_before = F.nreqs;
		fake_unlock(&F);
		if (reqs_before >= 4)
			break;
		uv_sleep(5);
	}
	CHECK(reqs_before >= 4);
	uv_sleep(200);
	fake_lock(&F);
	F.truth[ti] = 1; /* tserver 1 leads */
	fake_unlock(&F);
	CHECK_OK_MSG(write1(c, user, 2), docraft_errmsg());
	b_done = uv_hrtime();
	for (int i = 0; i < 300 && __atomic_load_n(&woken_done_ns, __ATOMIC_SEQ_CST) == 0; i++)
		uv_sleep(10);
	a_done = __atomic_load_n(&woken_done_ns, __ATOMIC_SEQ_CST);
	CHECK_MSG(a_done != 0, "the write in flight was not woken within 3 s");
	CHECK_EQ_INT(__atomic_load_n(&woken_status, __ATOMIC_SEQ_CST), DOCRAFT_OK);
	test_note("the write in flight completed %lld ms after the first success",
		  (long long)((int64_t)(a_done - b_done) / 1000000));
	CHECK((int64_t)(a_done - b_done) < 1000 * 1000000LL);
	docraft_op_free(op);
	docraft_client_close(c);
	stop();
}

TEST(final_errors_not_retried)
{
	char user[32];
	docraft_client *c;
	start();
	fake_lock(&F);
	F.mode[0] = TS_EINVAL;
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	CHECK_EQ_INT(write1(c, user_in(0, user), 1), DOCRAFT_EINVAL);
	CHECK(strstr(docraft_errmsg(), "expected a text value") != NULL);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 1);
	fake_unlock(&F);
	{
		docraft_op *op = insert_msg("u", 1, "x");
		CHECK_EQ_INT(docraft_write(c, "nosuch", &op, 1, -1, NULL), DOCRAFT_ETABLENOTFOUND);
		docraft_op_free(op);
	}
	CHECK_EQ_INT(get_table_calls(), 2);
	/* A bad column or type fails before anything is sent. */
	{
		docraft_value key[2] = {docraft_value_text("u"), docraft_value_text("oops")};
		docraft_op *op;
		CHECK_OK(docraft_op_insert(key, 2, &op));
		CHECK_EQ_INT(docraft_write(c, "msgs", &op, 1, -1, NULL), DOCRAFT_EINVAL);
		CHECK_EQ_STR(docraft_errmsg(),
			     "key column 'msg_id' is int: cannot store a text value");
		docraft_op_free(op);
		key[1] = docraft_value_int(1);
		CHECK_OK(docraft_op_insert(key, 2, &op));
		CHECK_OK(docraft_op_column(op, "nope", &key[1]));
		CHECK_EQ_INT(docraft_write(c, "msgs", &op, 1, -1, NULL), DOCRAFT_EINVAL);
		CHECK_EQ_STR(docraft_errmsg(), "table msgs has no column 'nope'");
		docraft_op_free(op);
	}
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 1);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(master_hint_followed)
{
	char masters[80], user[32];
	docraft_client *c;
	start();
	fake_lock(&F);
	F.master1_follower = true;
	snprintf(masters, sizeof masters, "%s,%s", F.master[1].addr, F.master[0].addr);
	fake_unlock(&F);
	c = open_client(masters, 0, 0);
	CHECK_OK_MSG(write1(c, user_in(0, user), 1), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.master_calls[1], 1);
	CHECK_EQ_INT(F.master_calls[0], 1);
	fake_unlock(&F);
	/* The leader is remembered. */
	CHECK_OK_MSG(docraft_table_drop(c, "other", true), docraft_errmsg());
	fake_lock(&F);
	CHECK_EQ_INT(F.master_calls[1], 1);
	CHECK_EQ_INT(F.master_calls[0], 2);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(parallel_batches_one_per_tablet)
{
	char u0[32], u1[32];
	docraft_op *ops[3];
	docraft_client *c;
	uint64_t ht = 0;
	start();
	fake_lock(&F);
	F.gate = 2; /* each write is held until two are held */
	fake_unlock(&F);
	c = open_client(NULL, 3000, 0);
	ops[0] = insert_msg(user_in(0, u0), 1, "a");
	ops[1] = insert_msg(user_in(1, u1), 1, "b");
	ops[2] = insert_msg(u0, 2, "c");
	CHECK_OK_MSG(docraft_write(c, "msgs", ops, 3, DOCRAFT_TTL_DEFAULT, &ht), docraft_errmsg());
	CHECK_EQ_U64(ht, 2);
	fake_lock(&F);
	CHECK_EQ_INT(F.gate_released, 1);
	CHECK_EQ_INT(F.nreqs, 2);
	for (int i = 0; i < 2; i++) {
		Docraft__WriteRequest *w = wreq(i);
		bool t0 = strcmp(w->tablet_id, "msgs-0-aaaa") == 0;
		char b[32];
		CHECK(F.reqs[i].hash_ok);
		CHECK(t0 || strcmp(w->tablet_id, "msgs-1-aaaa") == 0);
		CHECK_EQ_INT(w->n_ops, t0 ? 2 : 1);
		CHECK_EQ_STR(datum_s(w->ops[0]->key[0], b), t0 ? u0 : u1);
		if (t0) /* op order kept */
			CHECK_EQ_INT(w->ops[1]->key[1]->i, 2);
		CHECK(w->min_running <= w->seq);
		CHECK(w->min_running >= (F.reqs[0].seq < F.reqs[1].seq ? F.reqs[0].seq
									: F.reqs[1].seq));
	}
	CHECK(F.reqs[0].seq != F.reqs[1].seq);
	CHECK(strcmp(F.reqs[0].tablet, F.reqs[1].tablet) != 0);
	fake_unlock(&F);
	for (int i = 0; i < 3; i++)
		docraft_op_free(ops[i]);
	docraft_client_close(c);
	stop();
}

/* ---- reads ---- */

static Docraft__Datum *dtext(Docraft__Datum *d, const char *s)
{
	docraft__datum__init(d);
	d->v_case = DOCRAFT__DATUM__V_S;
	d->s.data = (uint8_t *)s;
	d->s.len = strlen(s);
	return d;
}

static Docraft__Datum *dint(Docraft__Datum *d, int64_t i)
{
	docraft__datum__init(d);
	d->v_case = DOCRAFT__DATUM__V_I;
	d->i = i;
	return d;
}

/* A msgs row: (user, id) with msg and a map of one or two entries. */
struct row_buf {
	Docraft__Row row;
	Docraft__Datum k[2], *pk[2];
	Docraft__ColumnResult msg, props, *pc[2];
	Docraft__Datum mv, mk[2], mvals[2], *pmk[2], *pmv[2];
};

static Docraft__Row *msgs_row(struct row_buf *b, const char *user, int id, const char *msg)
{
	docraft__row__init(&b->row);
	b->pk[0] = dtext(&b->k[0], user);
	b->pk[1] = dint(&b->k[1], id);
	b->row.key = b->pk;
	b->row.n_key = 2;
	docraft__column_result__init(&b->msg);
	b->msg.name = "msg";
	b->msg.present = 1;
	b->msg.value = dtext(&b->mv, msg);
	docraft__column_result__init(&b->props);
	b->props.name = "msg_props";
	b->props.present = 1;
	b->pmk[0] = dtext(&b->mk[0], "from");
	b->pmk[1] = dtext(&b->mk[1], "subject");
	b->pmv[0] = dtext(&b->mvals[0], "a@b.com");
	b->pmv[1] = dtext(&b->mvals[1], "hello");
	b->props.keys = b->pmk;
	b->props.values = b->pmv;
	b->props.n_keys = b->props.n_values = 2;
	b->pc[0] = &b->msg;
	b->pc[1] = &b->props;
	b->row.columns = b->pc;
	b->row.n_columns = 2;
	return &b->row;
}

/* The read answer: the row (user, id), or with bad_id one whose msg_id is
 * a text (no int column takes). */
static void set_read_reply_of(const char *user, int id, bool bad_id)
{
	struct row_buf b;
	Docraft__Datum text;
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	resp.found = 1;
	resp.row = msgs_row(&b, user, id, "msg1");
	if (bad_id)
		resp.row->key[1] = dtext(&text, "ten");
	resp.read_ht = 777;
	fake_lock(&F);
	free(F.read_reply);
	F.read_reply = fake_pack(&resp.base, &F.read_reply_len);
	fake_unlock(&F);
}

static void set_read_reply(const char *user, int id)
{
	set_read_reply_of(user, id, false);
}

static void add_scan_page(const char *user, int id, const char *paging, uint64_t read_ht)
{
	struct row_buf b;
	Docraft__Row *rows[1];
	Docraft__ScanResponse resp = DOCRAFT__SCAN_RESPONSE__INIT;
	rows[0] = msgs_row(&b, user, id, "m");
	resp.rows = rows;
	resp.n_rows = 1;
	resp.paging.data = (uint8_t *)paging;
	resp.paging.len = strlen(paging);
	resp.read_ht = read_ht;
	fake_lock(&F);
	F.scan_pages[F.n_scan_pages] = fake_pack(&resp.base, &F.scan_page_len[F.n_scan_pages]);
	F.n_scan_pages++;
	fake_unlock(&F);
}

TEST(get_row)
{
	docraft_value key[2] = {docraft_value_text("user1"), docraft_value_int(10)};
	const docraft_value *mk, *mv;
	docraft_result *r;
	docraft_client *c;
	docraft_value v;
	start();
	set_read_reply("user1", 10);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(docraft_get(c, "msgs", key, 2, 0, &r), docraft_errmsg());
	CHECK_EQ_INT(docraft_result_nrows(r), 1);
	CHECK_EQ_INT(docraft_result_ncolumns(r), 4);
	CHECK_EQ_U64(docraft_result_read_ht(r), 777);
	CHECK_EQ_STR(docraft_result_column_name(r, 3), "msg_props");
	CHECK_EQ_STR(docraft_result_column_type(r, 3), "map<text, text>");
	CHECK(docraft_result_column_is_collection(r, 3));
	CHECK_EQ_INT(docraft_result_column_index(r, "msg"), 2);
	v = docraft_result_value(r, 0, 1);
	CHECK_EQ_INT(v.type, DOCRAFT_TYPE_INT);
	CHECK_EQ_INT(v.v.i, 10);
	v = docraft_result_value(r, 0, 2);
	CHECK_EQ_INT(v.type, DOCRAFT_TYPE_TEXT);
	CHECK_EQ_MEM(v.v.s.p, v.v.s.len, "msg1", 4);
	CHECK_EQ_INT(docraft_result_elems(r, 0, 3, &mk, &mv), 2);
	CHECK_EQ_MEM(mk[1].v.s.p, mk[1].v.s.len, "subject", 7);
	CHECK_EQ_MEM(mv[0].v.s.p, mv[0].v.s.len, "a@b.com", 7);
	CHECK_EQ_INT(docraft_result_value(r, 1, 0).type, DOCRAFT_TYPE_NULL);
	docraft_result_free(r);
	/* A read at a past time. */
	CHECK_OK_MSG(docraft_get(c, "msgs", key, 2, 123456, &r), docraft_errmsg());
	docraft_result_free(r);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 2);
	CHECK_EQ_INT(F.reqs[0].method, DOCRAFT__METHOD__TSERVER_READ);
	CHECK(F.reqs[0].hash_ok);
	CHECK_EQ_U64(((Docraft__ReadRequest *)F.reqs[0].msg)->read_ht, 0);
	CHECK_EQ_U64(((Docraft__ReadRequest *)F.reqs[1].msg)->read_ht, 123456);
	fake_unlock(&F);
	/* A key of the wrong length is refused before sending. */
	CHECK_EQ_INT(docraft_get(c, "msgs", key, 1, 0, &r), DOCRAFT_EINVAL);
	CHECK(r == NULL);
	/* An answer that does not decode, or whose values do not fit the
	 * table's columns: DOCRAFT_ECORRUPT. */
	fake_lock(&F);
	free(F.read_reply);
	F.read_reply = malloc(2);
	memcpy(F.read_reply, "\x0a\x05", 2); /* a field of 5 bytes, none there */
	F.read_reply_len = 2;
	fake_unlock(&F);
	CHECK_EQ_INT(docraft_get(c, "msgs", key, 2, 0, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_STR(docraft_errmsg(), "ReadResponse does not decode");
	CHECK(r == NULL);
	set_read_reply_of("user1", 10, true);
	CHECK_EQ_INT(docraft_get(c, "msgs", key, 2, 0, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_STR(docraft_errmsg(),
		     "key column 'msg_id': the server sent a value that is not int");
	CHECK(r == NULL);
	docraft_client_close(c);
	stop();
}

TEST(scan_pages_and_resume)
{
	docraft_value hk = docraft_value_text("user1"), lo = docraft_value_int(0);
	docraft_scan_spec spec;
	docraft_result *r, *r2;
	docraft_client *c;
	start();
	add_scan_page("user1", 1, "P1", 999);
	add_scan_page("user1", 2, "", 999);
	c = open_client(NULL, 0, 0);
	memset(&spec, 0, sizeof spec);
	spec.hash_key = &hk;
	spec.n_hash = 1;
	spec.lower = &lo;
	spec.lower_incl = true;
	CHECK_OK_MSG(docraft_scan(c, "msgs", &spec, &r), docraft_errmsg());
	CHECK_EQ_INT(docraft_result_nrows(r), 2);
	CHECK(!docraft_result_has_more(r));
	CHECK_EQ_U64(docraft_result_read_ht(r), 999);
	CHECK_EQ_INT(docraft_result_value(r, 1, 1).v.i, 2);
	docraft_result_free(r);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 2);
	{
		Docraft__ScanRequest *a = (Docraft__ScanRequest *)F.reqs[0].msg;
		Docraft__ScanRequest *b = (Docraft__ScanRequest *)F.reqs[1].msg;
		CHECK(F.reqs[0].hash_ok);
		CHECK_EQ_INT(a->n_hash_key, 1);
		CHECK(a->lower != NULL && a->lower->i == 0 && a->lower_incl);
		CHECK(a->upper == NULL);
		CHECK_EQ_INT(a->paging.len, 0);
		CHECK_EQ_U64(a->read_ht, 0);
		CHECK_EQ_MEM(b->paging.data, b->paging.len, "P1", 2);
		CHECK_EQ_U64(b->read_ht, 999); /* one snapshot */
		CHECK_EQ_STR(a->tablet_id, b->tablet_id);
	}
	/* Limit 1: a page, then resume. */
	F.next_scan_page = 0;
	fake_unlock(&F);
	spec.limit = 1;
	CHECK_OK_MSG(docraft_scan(c, "msgs", &spec, &r), docraft_errmsg());
	CHECK_EQ_INT(docraft_result_nrows(r), 1);
	CHECK(docraft_result_has_more(r));
	CHECK_OK_MSG(docraft_scan_resume(c, r, 0, &r2), docraft_errmsg());
	CHECK_EQ_INT(docraft_result_nrows(r2), 1);
	CHECK_EQ_INT(docraft_result_value(r2, 0, 1).v.i, 2);
	CHECK(!docraft_result_has_more(r2));
	docraft_result_free(r);
	CHECK_EQ_INT(docraft_scan_resume(c, r2, 0, &r), DOCRAFT_EINVAL);
	CHECK(r == NULL);
	docraft_result_free(r2);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 4);
	CHECK_EQ_INT(((Docraft__ScanRequest *)F.reqs[2].msg)->limit, 1);
	CHECK_EQ_MEM(((Docraft__ScanRequest *)F.reqs[3].msg)->paging.data,
		     ((Docraft__ScanRequest *)F.reqs[3].msg)->paging.len, "P1", 2);
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

TEST(whole_table_scan_walks_tablets)
{
	docraft_scan_spec spec;
	docraft_result *r;
	docraft_client *c;
	start();
	c = open_client(NULL, 0, 0);
	memset(&spec, 0, sizeof spec);
	CHECK_OK_MSG(docraft_scan(c, "msgs", &spec, &r), docraft_errmsg());
	CHECK_EQ_INT(docraft_result_nrows(r), 0);
	docraft_result_free(r);
	spec.reverse = true;
	CHECK_OK_MSG(docraft_scan(c, "msgs", &spec, &r), docraft_errmsg());
	docraft_result_free(r);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, 4);
	CHECK_EQ_STR(F.reqs[0].tablet, "msgs-0-aaaa");
	CHECK_EQ_STR(F.reqs[1].tablet, "msgs-1-aaaa");
	CHECK_EQ_U64(((Docraft__ScanRequest *)F.reqs[1].msg)->read_ht, 8192);
	CHECK_EQ_STR(F.reqs[2].tablet, "msgs-1-aaaa");
	CHECK_EQ_STR(F.reqs[3].tablet, "msgs-0-aaaa");
	CHECK(((Docraft__ScanRequest *)F.reqs[2].msg)->reverse);
	fake_unlock(&F);
	/* Range conditions without the hash key are refused. */
	{
		docraft_value lo = docraft_value_int(1);
		spec.lower = &lo;
		CHECK_EQ_INT(docraft_scan(c, "msgs", &spec, &r), DOCRAFT_EINVAL);
	}
	docraft_client_close(c);
	stop();
}

/* ---- CQL ---- */

struct capture {
	struct buf out, err;
};

static void cap_out(void *arg, const char *s, size_t n)
{
	buf_append(&((struct capture *)arg)->out, s, n);
}

static void cap_err(void *arg, const char *s, size_t n)
{
	buf_append(&((struct capture *)arg)->err, s, n);
}

static int exec(docraft_client *c, struct capture *cap, const char *cql)
{
	docraft_printer p = {cap_out, cap_err, cap};
	buf_reset(&cap->out);
	buf_reset(&cap->err);
	return docraft_exec_cql(c, cql, &p);
}

static Docraft__WriteOp *last_op(int nops)
{
	Docraft__WriteRequest *w = wreq(F.nreqs - 1);
	CHECK_EQ_INT(w->n_ops, nops);
	return w->ops[0];
}

TEST(exec_cql_seeds)
{
	struct capture cap = {BUF_INIT, BUF_INIT};
	Docraft__WriteOp *op;
	docraft_client *c;
	char b[64];
	int n;

	fake_start(&F);
	c = open_client(NULL, 0, 0);
	/* Seed 000. */
	CHECK_OK_MSG(exec(c, &cap,
			  "CREATE TABLE msgs (user_id text,\n"
			  "                   msg_id int,\n"
			  "                   msg text,\n"
			  "                   msg_props map<text, text>,\n"
			  "      PRIMARY KEY ((user_id), msg_id));"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	CHECK(F.created != NULL);
	CHECK_EQ_STR(F.created->schema->name, "msgs");
	CHECK_EQ_INT(F.created->schema->n_columns, 4);
	CHECK_EQ_INT(F.created->schema->columns[0]->kind, DOCRAFT__COLUMN_KIND__HASH);
	CHECK_EQ_INT(F.created->schema->columns[1]->kind, DOCRAFT__COLUMN_KIND__RANGE);
	CHECK_EQ_INT(F.created->schema->columns[3]->type, DOCRAFT__COLUMN_TYPE__MAP);
	CHECK_EQ_INT(F.created->num_tablets, 0); /* the master decides */
	fake_unlock(&F);

	CHECK_OK_MSG(exec(c, &cap,
			  "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
			  "      VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : "
			  "'hello'});"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	op = last_op(1);
	CHECK(F.reqs[F.nreqs - 1].hash_ok);
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__INSERT);
	CHECK_EQ_STR(datum_s(op->key[0], b), "user1");
	CHECK_EQ_INT(op->key[1]->i, 10);
	CHECK_EQ_INT(op->ttl_ms, -1);
	CHECK_EQ_INT(op->n_columns, 2);
	CHECK_EQ_STR(op->columns[0]->name, "msg");
	CHECK_EQ_STR(datum_s(op->columns[0]->value, b), "msg1");
	CHECK_EQ_STR(op->columns[1]->name, "msg_props");
	CHECK_EQ_INT(op->columns[1]->n_keys, 2);
	CHECK_EQ_STR(datum_s(op->columns[1]->keys[1], b), "subject");
	CHECK_EQ_STR(datum_s(op->columns[1]->values[0], b), "a@b.com");
	fake_unlock(&F);

	/* T2: the map put. */
	CHECK_OK_MSG(exec(c, &cap,
			  "UPDATE msgs\n"
			  "       SET msg_props = msg_props + {'read_status' : 'true'}\n"
			  "     WHERE user_id = 'user1', msg_id = 10"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	op = last_op(1);
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__MAP_PUT);
	CHECK_EQ_STR(datum_s(op->key[0], b), "user1");
	CHECK_EQ_INT(op->key[1]->i, 10);
	CHECK_EQ_INT(op->n_columns, 1);
	CHECK_EQ_STR(op->columns[0]->name, "msg_props");
	CHECK_EQ_INT(op->columns[0]->n_keys, 1);
	CHECK_EQ_INT(op->columns[0]->n_values, 1);
	CHECK_EQ_STR(datum_s(op->columns[0]->keys[0], b), "read_status");
	CHECK_EQ_STR(datum_s(op->columns[0]->values[0], b), "true");
	fake_unlock(&F);

	/* T3: the bare word. */
	CHECK_OK_MSG(exec(c, &cap,
			  "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
			  "        VALUES (user1, 20, 'msg2', {'from' : 'c@d.com', 'subject' : "
			  "'bar'});"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	op = last_op(1);
	CHECK_EQ_STR(datum_s(op->key[0], b), "user1");
	CHECK_EQ_INT(op->key[1]->i, 20);
	fake_unlock(&F);

	/* T4, T5. */
	CHECK_OK_MSG(exec(c, &cap,
			  "DELETE msg_props\n"
			  "      FROM msgs\n"
			  "     WHERE user_id = 'user1'\n"
			  "       AND msg_id = 10;\n"
			  "DELETE FROM msgs    // Delete entire row corresponding to msg_id 10\n"
			  "     WHERE user_id = 'user1'\n"
			  "            AND msg_id = 10;"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	n = F.nreqs;
	op = wreq(n - 2)->ops[0];
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN);
	CHECK_EQ_STR(op->columns[0]->name, "msg_props");
	op = wreq(n - 1)->ops[0];
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__DELETE_ROW);
	CHECK_EQ_INT(op->n_columns, 0);
	CHECK_EQ_INT(op->key[1]->i, 10);
	fake_unlock(&F);

	/* page_views: TTLs. */
	CHECK_OK_MSG(exec(c, &cap,
			  "CREATE TABLE page_views (page_id text,\n"
			  "                         views int,\n"
			  "                         category text,\n"
			  "     PRIMARY KEY ((page_id)));\n"
			  "INSERT INTO page_views (page_id, views)\n"
			  "        VALUES ('abc.com', 10)\n"
			  "        USING TTL 86400\n"
			  "UPDATE page_views\n"
			  "     USING TTL 3600\n"
			  "       SET category = 'news'\n"
			  "     WHERE page_id = 'abc.com';"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	n = F.nreqs;
	op = wreq(n - 2)->ops[0];
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__INSERT);
	CHECK_EQ_INT(op->ttl_ms, 86400000);
	CHECK_EQ_STR(op->columns[0]->name, "views");
	CHECK_EQ_INT(op->columns[0]->value->i, 10);
	op = wreq(n - 1)->ops[0];
	CHECK_EQ_INT(op->kind, DOCRAFT__WRITE_OP__KIND__UPDATE);
	CHECK_EQ_INT(op->ttl_ms, 3600000);
	CHECK_EQ_STR(op->columns[0]->name, "category");
	CHECK_EQ_STR(datum_s(op->columns[0]->value, b), "news");
	CHECK_EQ_STR(wreq(n - 1)->table, "page_views");
	fake_unlock(&F);

	/* Seed 001: default TTL, uuid(). */
	CHECK_OK_MSG(exec(c, &cap,
			  "CREATE TABLE sessions (\n"
			  "    session_id UUID PRIMARY KEY,\n"
			  "    data TEXT\n"
			  ") WITH default_time_to_live = 86400;  -- 24 hours\n"
			  "INSERT INTO sessions (session_id, data)\n"
			  "VALUES (uuid(), 'session_data')\n"
			  "USING TTL 3600;  -- 1 hour"),
		     buf_cstr(&cap.err));
	fake_lock(&F);
	CHECK_EQ_INT(F.created->schema->default_ttl_ms, 86400000);
	op = last_op(1);
	CHECK_EQ_INT(op->key[0]->v_case, DOCRAFT__DATUM__V_UUID);
	CHECK_EQ_INT(op->key[0]->uuid.len, 16);
	CHECK_EQ_INT(op->ttl_ms, 3600000);
	CHECK(F.reqs[F.nreqs - 1].hash_ok);
	n = F.nreqs;
	fake_unlock(&F);

	/* Seed 001's YSQL table: jsonb is refused at its token. */
	CHECK_EQ_INT(exec(c, &cap,
			  "CREATE TABLE msgs (\n"
			  "    user_id text,\n"
			  "    msg_id int,\n"
			  "    msg text,\n"
			  "    msg_props jsonb,\n"
			  "    PRIMARY KEY ((user_id), msg_id)\n"
			  ");"),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(buf_cstr(&cap.err), "    msg_props jsonb,\n"
					 "              ^^^^^ unknown type jsonb\n");
	/* Seed 002's SELECT: its table does not exist here. */
	CHECK_EQ_INT(exec(c, &cap,
			  "        SELECT message_txt\n"
			  "          FROM messages\n"
			  "        WHERE user_id = 17\n"
			  "          AND message_id > 50\n"
			  "          AND message_id < 100;"),
		     DOCRAFT_ETABLENOTFOUND);
	CHECK(strstr(buf_cstr(&cap.err), "          FROM messages\n"
					 "               ^^^^^^^^ ") != NULL);
	/* A syntax error anywhere runs nothing. */
	CHECK_EQ_INT(exec(c, &cap,
			  "DELETE FROM sessions WHERE session_id = uuid(); INSERT INTO t (a) "
			  "VALUS (1)"),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(buf_cstr(&cap.err),
		     "DELETE FROM sessions WHERE session_id = uuid(); INSERT INTO t (a) VALUS (1)\n"
		     "                                                                  ^^^^^ "
		     "expected VALUES\n");
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, n);
	fake_unlock(&F);
	docraft_client_close(c);
	fake_stop(&F);
	buf_free(&cap.out);
	buf_free(&cap.err);
}

TEST(exec_cql_select)
{
	struct capture cap = {BUF_INIT, BUF_INIT};
	docraft_client *c;
	Docraft__ScanRequest *s;
	start();
	set_read_reply("user1", 10);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(exec(c, &cap, "SELECT * FROM msgs WHERE user_id = 'user1' AND msg_id = 10;"),
		     buf_cstr(&cap.err));
	CHECK_EQ_STR(buf_cstr(&cap.out),
		     "\n"
		     " user_id | msg_id |  msg |                               msg_props\n"
		     "---------+--------+------+-----------------------------------------\n"
		     "   user1 |     10 | msg1 | {'from': 'a@b.com', 'subject': 'hello'}\n"
		     "\n"
		     "(1 rows)\n");
	fake_lock(&F);
	CHECK_EQ_INT(F.reqs[F.nreqs - 1].method, DOCRAFT__METHOD__TSERVER_READ);
	CHECK(F.reqs[F.nreqs - 1].hash_ok);
	fake_unlock(&F);
	/* A projection, a condition the row fails, AS OF. */
	CHECK_OK_MSG(exec(c, &cap,
			  "SELECT msg FROM msgs WHERE user_id = 'user1' AND msg_id = 10 AND msg = "
			  "'other' ALLOW FILTERING AS OF 6834582342385664000"),
		     buf_cstr(&cap.err));
	CHECK_EQ_STR(buf_cstr(&cap.out), "\n msg\n-----\n\n(0 rows)\n");
	fake_lock(&F);
	CHECK_EQ_U64(((Docraft__ReadRequest *)F.reqs[F.nreqs - 1].msg)->read_ht,
		     UINT64_C(6834582342385664000));
	fake_unlock(&F);
	/* A range, reversed, limited: all pushed to the tablet. */
	add_scan_page("user1", 20, "", 5);
	CHECK_OK_MSG(exec(c, &cap,
			  "SELECT msg_id, msg FROM msgs WHERE user_id = 'user1' AND msg_id > 5 "
			  "AND msg_id <= 20 ORDER BY msg_id DESC LIMIT 1"),
		     buf_cstr(&cap.err));
	CHECK_EQ_STR(buf_cstr(&cap.out),
		     "\n msg_id | msg\n--------+-----\n     20 |   m\n\n(1 rows)\n");
	fake_lock(&F);
	s = (Docraft__ScanRequest *)F.reqs[F.nreqs - 1].msg;
	CHECK_EQ_INT(F.reqs[F.nreqs - 1].method, DOCRAFT__METHOD__TSERVER_SCAN);
	CHECK_EQ_INT(s->n_hash_key, 1);
	CHECK(s->lower != NULL && s->lower->i == 5 && !s->lower_incl);
	CHECK(s->upper != NULL && s->upper->i == 20 && s->upper_incl);
	CHECK(s->reverse);
	CHECK_EQ_INT(s->limit, 1);
	fake_unlock(&F);
	/* Errors at their token. */
	CHECK_EQ_INT(exec(c, &cap, "SELECT nope FROM msgs"), DOCRAFT_EINVAL);
	CHECK(strstr(buf_cstr(&cap.err), "SELECT nope FROM msgs\n       ^^^^ ") != NULL);
	CHECK_EQ_INT(exec(c, &cap, "INSERT INTO msgs (user_id, msg_id) VALUES ('u', 'x')"),
		     DOCRAFT_EINVAL);
	CHECK(strstr(buf_cstr(&cap.err), "^^^ column msg_id is int") != NULL);
	CHECK_EQ_INT(exec(c, &cap, "SELECT * FROM ks.msgs"), DOCRAFT_EINVAL);
	CHECK(strstr(buf_cstr(&cap.err), "keyspaces are not supported") != NULL);
	docraft_client_close(c);
	buf_free(&cap.out);
	buf_free(&cap.err);
	stop();
}

/* ---- async, close, admin ---- */

struct async_state {
	int done;
	int status[4];
	docraft_result *result;
	uint64_t ht;
};

static void async_cb(docraft_req *req)
{
	struct async_state *s = req->data;
	s->status[s->done] = req->status;
	if (req->result != NULL)
		s->result = req->result;
	if (req->ht)
		s->ht = req->ht;
	s->done++;
}

static void flag_set(bool *flag)
{
	*flag = true;
}

static void guard_cb(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

TEST(async_on_callers_loop)
{
	docraft_value key[2] = {docraft_value_text("user1"), docraft_value_int(10)};
	struct async_state st = {0};
	docraft_client_options o;
	docraft_client *c;
	docraft_req w, g;
	docraft_op *op;
	uv_loop_t loop;
	uv_timer_t guard;
	bool expired = false;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	start();
	set_read_reply("user1", 10);
	CHECK_OK(uv_loop_init(&loop));
	docraft_client_options_init(&o);
	o.loop = &loop;
	CHECK_OK_MSG(docraft_client_open(fake_masters(&F), &o, &c, errmsg), errmsg);
	/* Blocking calls are refused on a caller's loop. */
	CHECK_EQ_INT(write1(c, "user1", 1), DOCRAFT_EINVAL);
	op = insert_msg("user1", 10, "hi");
	w.data = g.data = &st;
	CHECK_OK(docraft_write_async(c, &w, "msgs", &op, 1, DOCRAFT_TTL_DEFAULT, async_cb));
	CHECK_OK(docraft_get_async(c, &g, "msgs", key, 2, 0, async_cb));
	CHECK_EQ_INT(st.done, 0); /* never inside the call */
	CHECK_EQ_INT(docraft_write_async(c, &w, "msgs", &op, 0, -1, async_cb), DOCRAFT_EINVAL);
	uv_timer_init(&loop, &guard);
	guard.data = &expired;
	uv_timer_start(&guard, guard_cb, 5000, 0);
	while (st.done < 2 && !expired)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK_EQ_INT(st.done, 2);
	CHECK_OK(st.status[0]);
	CHECK_OK(st.status[1]);
	CHECK(st.result != NULL);
	CHECK_EQ_INT(docraft_result_nrows(st.result), 1);
	docraft_result_free(st.result);
	docraft_op_free(op);
	/* Close from the loop: the callback comes later, from the loop. */
	{
		bool closed = false;
		CHECK_OK(docraft_client_close_async(c, (void (*)(void *))flag_set, &closed));
		CHECK(!closed);
		while (!closed && !expired)
			uv_run(&loop, UV_RUN_ONCE);
		CHECK(closed);
	}
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	stop();
}

struct close_state {
	uv_mutex_t mu;
	int status;
	bool done;
};

static void close_cb(docraft_req *req)
{
	struct close_state *s = req->data;
	uv_mutex_lock(&s->mu);
	s->status = req->status;
	s->done = true;
	uv_mutex_unlock(&s->mu);
}

TEST(close_fails_requests_in_flight)
{
	struct close_state st;
	docraft_client *c;
	docraft_req req;
	docraft_op *op;
	start();
	fake_lock(&F);
	F.mode[0] = TS_BLACKHOLE;
	fake_unlock(&F);
	uv_mutex_init(&st.mu);
	st.done = false;
	c = open_client(NULL, 0, 0);
	op = insert_msg("user1", 1, "x");
	req.data = &st;
	CHECK_OK(docraft_write_async(c, &req, "msgs", &op, 1, -1, close_cb));
	for (int i = 0; i < 500; i++) { /* until the write is held */
		int n;
		fake_lock(&F);
		n = F.nheld;
		fake_unlock(&F);
		if (n > 0)
			break;
		uv_sleep(10);
	}
	CHECK_EQ_INT(docraft_client_close_async(c, NULL, NULL), DOCRAFT_EINVAL);
	docraft_client_close(c);
	uv_mutex_lock(&st.mu);
	CHECK(st.done);
	CHECK_EQ_INT(st.status, DOCRAFT_ECLOSED);
	uv_mutex_unlock(&st.mu);
	uv_mutex_destroy(&st.mu);
	docraft_op_free(op);
	stop();
}

TEST(admin_commands)
{
	struct capture cap = {BUF_INIT, BUF_INIT};
	docraft_printer p = {cap_out, cap_err, &cap};
	docraft_client *c;
	char want[128];
	start();
	fake_lock(&F);
	F.truth[0] = 1; /* step-down follows the hint from tserver 0 */
	fake_unlock(&F);
	c = open_client(NULL, 0, 0);
	CHECK_OK_MSG(docraft_admin_tservers(c, &p), docraft_errmsg());
	CHECK(strstr(buf_cstr(&cap.out), F.ts[2].addr) != NULL);
	CHECK(strstr(buf_cstr(&cap.out), "NO") != NULL);
	buf_reset(&cap.out);
	CHECK_OK_MSG(docraft_admin_tables(c, &p), docraft_errmsg());
	CHECK_EQ_STR(buf_cstr(&cap.out),
		     "CREATE TABLE msgs (user_id text, msg_id int, msg text, msg_props map<text, "
		     "text>, PRIMARY KEY ((user_id), msg_id));\n");
	buf_reset(&cap.out);
	CHECK_OK_MSG(docraft_admin_tablets(c, "msgs", &p), docraft_errmsg());
	CHECK(strstr(buf_cstr(&cap.out), "msgs-0-aaaa  [0x0000, 0x8000)") != NULL);
	CHECK(strstr(buf_cstr(&cap.out), "msgs-1-aaaa  [0x8000, 0x10000)") != NULL);
	snprintf(want, sizeof want, "1@%s*", F.ts[0].addr);
	CHECK(strstr(buf_cstr(&cap.out), want) != NULL);
	buf_reset(&cap.out);
	CHECK_OK_MSG(docraft_admin_step_down(c, "msgs-0-aaaa", &p), docraft_errmsg());
	buf_reset(&cap.out);
	CHECK_OK_MSG(docraft_admin_dump(c, "msgs-1-aaaa", F.ts[2].addr, &p), docraft_errmsg());
	snprintf(want, sizeof want, "dump of msgs-1-aaaa at %s\n", F.ts[2].addr);
	CHECK_EQ_STR(buf_cstr(&cap.out), want);
	CHECK_EQ_INT(docraft_admin_dump(c, "msgs-9-zzzz", NULL, &p), DOCRAFT_ENOTFOUND);
	fake_lock(&F);
	{
		int last = F.nreqs - 1;
		CHECK_EQ_INT(F.reqs[last].method, DOCRAFT__METHOD__TSERVER_DUMP_TABLET);
		CHECK_EQ_INT(F.reqs[last].ts, 2);
		CHECK_EQ_INT(F.reqs[last - 1].method, DOCRAFT__METHOD__TSERVER_STEP_DOWN);
		CHECK_EQ_INT(F.reqs[last - 1].ts, 1);
		CHECK_EQ_INT(F.reqs[last - 2].ts, 0);
	}
	fake_unlock(&F);
	docraft_client_close(c);
	buf_free(&cap.out);
	buf_free(&cap.err);
	stop();
}

/* Blocking calls from several threads share one client. */
#define N_THREADS 4
#define N_WRITES 25

struct worker {
	docraft_client *c;
	int index;
	int failures;
};

static void worker_main(void *arg)
{
	struct worker *w = arg;
	char user[32];
	for (int i = 0; i < N_WRITES; i++) {
		snprintf(user, sizeof user, "w%d-%d", w->index, i);
		if (write1(w->c, user, i) != 0)
			w->failures++;
	}
}

TEST(concurrent_blocking_calls)
{
	struct worker w[N_THREADS];
	uv_thread_t th[N_THREADS];
	docraft_client *c;
	start();
	c = open_client(NULL, 0, 0);
	for (int i = 0; i < N_THREADS; i++) {
		w[i].c = c;
		w[i].index = i;
		w[i].failures = 0;
		CHECK_OK(uv_thread_create(&th[i], worker_main, &w[i]));
	}
	for (int i = 0; i < N_THREADS; i++) {
		uv_thread_join(&th[i]);
		CHECK_EQ_INT(w[i].failures, 0);
	}
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, N_THREADS * N_WRITES);
	CHECK_EQ_INT(F.get_table_calls[0] + F.get_table_calls[1], 1);
	for (int i = 0; i < F.nreqs; i++) {
		CHECK(F.reqs[i].hash_ok);
		for (int j = 0; j < i; j++)
			CHECK(F.reqs[i].seq != F.reqs[j].seq);
	}
	fake_unlock(&F);
	docraft_client_close(c);
	stop();
}

/* Many threads in blocking calls when the client closes: every call
 * returns (none hangs), the ones answered before with 0, the ones still
 * in flight with DOCRAFT_ECLOSED and a message. The threads first write
 * together (their submissions race for the loop's wake-ups), then all wait
 * on a server that never answers, and the client is closed under them. */
#define N_CLOSERS 32
#define N_CLOSER_WRITES 6

struct closer {
	docraft_client *c;
	uv_barrier_t *phase;
	int index;
	int failures;  /* writes before the close that did not succeed */
	int last;      /* the write in flight at close */
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

static void closer_main(void *arg)
{
	struct closer *w = arg;
	char user[32];
	for (int i = 0; i < N_CLOSER_WRITES; i++) {
		snprintf(user, sizeof user, "c%d-%d", w->index, i);
		if (write1(w->c, user, i) != 0)
			w->failures++;
	}
	uv_barrier_wait(w->phase); /* every write done */
	uv_barrier_wait(w->phase); /* the servers stopped answering */
	snprintf(user, sizeof user, "c%d-last", w->index);
	w->last = write1(w->c, user, 0);
	snprintf(w->errmsg, sizeof w->errmsg, "%s", docraft_errmsg());
}

TEST(close_under_concurrent_blocking_calls)
{
	struct closer w[N_CLOSERS];
	uv_thread_t th[N_CLOSERS];
	uv_barrier_t phase;
	docraft_client *c;
	int held = 0;
	start();
	/* No attempt times out while the test waits for the held writes. */
	c = open_client(NULL, 60000, 60000);
	CHECK_OK(uv_barrier_init(&phase, N_CLOSERS + 1));
	for (int i = 0; i < N_CLOSERS; i++) {
		w[i].c = c;
		w[i].phase = &phase;
		w[i].index = i;
		w[i].failures = 0;
		w[i].last = -1;
		w[i].errmsg[0] = '\0';
		CHECK_OK(uv_thread_create(&th[i], closer_main, &w[i]));
	}
	uv_barrier_wait(&phase);
	fake_lock(&F);
	CHECK_EQ_INT(F.nreqs, N_CLOSERS * N_CLOSER_WRITES);
	for (int i = 0; i < FAKE_TS; i++)
		F.mode[i] = TS_BLACKHOLE;
	fake_unlock(&F);
	uv_barrier_wait(&phase);
	for (int i = 0; i < 1000 && held < N_CLOSERS; i++) { /* every last write held */
		fake_lock(&F);
		held = F.nheld;
		fake_unlock(&F);
		if (held < N_CLOSERS)
			uv_sleep(10);
	}
	CHECK_EQ_INT(held, N_CLOSERS);
	docraft_client_close(c);
	for (int i = 0; i < N_CLOSERS; i++) {
		uv_thread_join(&th[i]);
		CHECK_EQ_INT(w[i].failures, 0);
		CHECK_EQ_INT(w[i].last, DOCRAFT_ECLOSED);
		CHECK(w[i].errmsg[0] != '\0');
	}
	uv_barrier_destroy(&phase);
	stop();
}

TEST_MAIN(T(open_validates_masters), T(hint_followed_without_master),
	  T(no_hint_tries_next_replica), T(transport_error_refreshes),
	  T(timeout_refreshes_same_seq), T(tablet_not_found_refreshes), T(gives_up_unavailable),
	  T(backoff_cut_short_by_success), T(final_errors_not_retried), T(master_hint_followed), T(parallel_batches_one_per_tablet),
	  T(get_row), T(scan_pages_and_resume), T(whole_table_scan_walks_tablets),
	  T(exec_cql_seeds), T(exec_cql_select), T(async_on_callers_loop),
	  T(close_fails_requests_in_flight), T(admin_commands), T(concurrent_blocking_calls),
	  T(close_under_concurrent_blocking_calls))
