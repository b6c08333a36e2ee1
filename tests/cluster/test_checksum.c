/* Real-process tests of replica checksums (TSERVER_CHECKSUM,
 * docraft_admin_checksum, `docraft checksum`): one docraft-master on
 * 127.0.0.1 and three docraft-tserver processes on 127.0.0.1-3, a table of
 * 3 tablets with 3 replicas each (every tserver holds every tablet).
 *
 *   replicas_agree   rows written through the client; every replica of
 *                    every tablet answers, all agree, the leaders' row counts
 *                    add up to the rows written (library and CLI, exit 0);
 *                    one more write changes exactly one tablet's checksum
 *                    (rows + 1); every follower asked directly at the old
 *                    read time answers the old checksum, at read_ht 0 the
 *                    new one; a read time far ahead is refused as "behind"
 *                    after wait_ms while the server keeps answering other
 *                    calls; unknown tablet, bad read time
 *   stopped_replica  a tserver stopped with SIGSTOP: the command reports
 *                    that replica UNAVAILABLE in every tablet and fails
 *                    (DOCRAFT_EUNAVAILABLE naming it; the CLI exits 1); after
 *                    SIGCONT every replica agrees again
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). Each
 * process's stderr goes to <tmp>/<name>.log; the logs' tails are shown when a
 * case fails. The cluster helpers are those of test_e2e.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "client/internal.h"
#include "rpc/rpc.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

/* ---- client ------------------------------------------------------------------------- */

#define TABLE "kv"
#define NTAB 3

static docraft_client *client_new(uint32_t timeout_ms, uint32_t rpc_timeout_ms)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_client *c = NULL;
	docraft_client_options_init(&o);
	o.num_tablets = NTAB;
	o.replication_factor = 3;
	if (timeout_ms != 0)
		o.timeout_ms = timeout_ms;
	if (rpc_timeout_ms != 0)
		o.rpc_timeout_ms = rpc_timeout_ms;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &c, err), err);
	return c;
}

static void create_kv(void)
{
	docraft_table_options to = {.num_tablets = NTAB, .replication_factor = 3};
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE kv (k text, r int, v text, "
					      "m map<text, int>, PRIMARY KEY ((k), r));",
					      &to),
		     docraft_errmsg());
}

static void write_row(int i)
{
	char k[32], v[32];
	docraft_op *op = NULL;
	snprintf(k, sizeof k, "key%d", i);
	snprintf(v, sizeof v, "value%d", i);
	docraft_value key[2] = {docraft_value_text(k), docraft_value_int(i % 7)};
	docraft_value val = docraft_value_text(v);
	CHECK_OK(docraft_op_insert(key, 2, &op));
	CHECK_OK(docraft_op_column(op, "v", &val));
	int rv = docraft_write(C.client, TABLE, &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	docraft_op_free(op);
	CHECK_MSG(rv == 0, "write of row %d failed: %d %s", i, rv, docraft_errmsg());
}

/* ---- the checksum command's output ---------------------------------------------------- */

static char OUTBUF[OUT_CAP];
static size_t OUTLEN;

static void capture(void *arg, const char *text, size_t len)
{
	(void)arg;
	if (OUTLEN + len + 1 < OUT_CAP) {
		memcpy(OUTBUF + OUTLEN, text, len);
		OUTLEN += len;
		OUTBUF[OUTLEN] = '\0';
	}
}

static const docraft_printer CAPTURE = {capture, capture, NULL};

/* One replica line. */
struct ck_line {
	char tablet[80], addr[40], role[16];
	bool ok;
	uint64_t rows, sum, applied, read_ht;
};

#define MAX_LINES 32

struct ck_run {
	int rv;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct ck_line l[MAX_LINES];
	int n;
	char last[512]; /* the "checksums: ..." line */
};

/* Runs docraft_admin_checksum on c and parses its output into *r. */
static void run_checksum(docraft_client *c, struct ck_run *r)
{
	char *save = NULL;
	memset(r, 0, sizeof *r);
	OUTLEN = 0;
	OUTBUF[0] = '\0';
	r->rv = docraft_admin_checksum(c, TABLE, &CAPTURE);
	snprintf(r->errmsg, sizeof r->errmsg, "%s", r->rv != 0 ? docraft_errmsg() : "");
	for (char *l = strtok_r(OUTBUF, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		struct ck_line *x = &r->l[r->n];
		if (strncmp(l, "checksums: ", 11) == 0) {
			snprintf(r->last, sizeof r->last, "%s", l);
			continue;
		}
		if (l[0] == ' ')
			continue; /* the indented hint after a MISMATCH / INCOMPLETE verdict */
		CHECK_MSG(r->n < MAX_LINES, "too many lines");
		CHECK_MSG(sscanf(l, "%79s %39s %15s", x->tablet, x->addr, x->role) == 3,
			  "bad line: %s", l);
		if (strstr(l, " UNAVAILABLE: ") != NULL) {
			x->ok = false;
		} else {
			const char *p = strstr(l, " rows=");
			CHECK_MSG(p != NULL && sscanf(p, " rows=%" SCNu64 " checksum=%" SCNx64
						      " applied=%" SCNu64 " read_ht=%" SCNu64,
						      &x->rows, &x->sum, &x->applied, &x->read_ht) == 4,
				  "bad line: %s", l);
			x->ok = true;
		}
		r->n++;
	}
}

/* For wait_for: a checksum run of C.client into *r succeeds. */
static bool clean_run(void *r)
{
	run_checksum(C.client, r);
	return ((struct ck_run *)r)->rv == 0;
}

/* For wait_for: a checksum run succeeds and names a leader for every tablet. */
static bool clean_led_run(void *arg)
{
	struct ck_run *r = arg;
	int leaders = 0;
	run_checksum(C.client, r);
	for (int i = 0; i < r->n; i++)
		leaders += strcmp(r->l[i].role, "leader") == 0;
	return r->rv == 0 && leaders == NTAB;
}

static void dump_run(const struct ck_run *r)
{
	test_note("docraft_admin_checksum: %d %s", r->rv, r->errmsg);
	for (int i = 0; i < r->n; i++)
		test_note("  %s %s %s %s rows=%" PRIu64 " sum=%016" PRIx64 " read_ht=%" PRIu64,
			  r->l[i].tablet, r->l[i].addr, r->l[i].role, r->l[i].ok ? "ok" : "UNAVAILABLE",
			  r->l[i].rows, r->l[i].sum, r->l[i].read_ht);
	test_note("  %s", r->last);
}

/* The line of tablet's leader (the first line of the tablet, the
 * reference), or NULL. */
static const struct ck_line *ref_line(const struct ck_run *r, const char *tablet)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->l[i].tablet, tablet) == 0 && r->l[i].ok)
			return &r->l[i];
	return NULL;
}

/* Checks that every replica of NTAB tablets answered and agrees; returns
 * the total rows (of the reference replicas). */
static uint64_t check_agree(const struct ck_run *r)
{
	uint64_t total = 0;
	int tablets = 0, leaders = 0;
	if (r->rv != 0)
		dump_run(r);
	CHECK_MSG(r->rv == 0, "checksum failed: %d %s", r->rv, r->errmsg);
	CHECK_EQ_INT(r->n, NTAB * 3);
	for (int i = 0; i < r->n; i++) {
		const struct ck_line *ref = ref_line(r, r->l[i].tablet);
		CHECK(r->l[i].ok && ref != NULL);
		CHECK_MSG(r->l[i].sum == ref->sum && r->l[i].rows == ref->rows &&
				  r->l[i].read_ht == ref->read_ht,
			  "tablet %s: %s disagrees with %s", r->l[i].tablet, r->l[i].addr, ref->addr);
		if (ref == &r->l[i]) {
			tablets++;
			total += ref->rows;
		}
		leaders += strcmp(r->l[i].role, "leader") == 0;
	}
	CHECK_EQ_INT(tablets, NTAB);
	CHECK_MSG(leaders == NTAB, "%d leader lines for %d tablets", leaders, NTAB);
	char want[64];
	snprintf(want, sizeof want, "checksums: %d tablets, all replicas agree", NTAB);
	CHECK_EQ_STR(r->last, want);
	return total;
}

/* TSERVER_CHECKSUM to one replica, through the client library's tablet
 * call (retries until the client's timeout). */
static int checksum_rpc(docraft_client *c, const char *tablet, const char *addr,
			uint64_t read_ht, uint32_t wait_ms, Docraft__ChecksumResponse *out)
{
	Docraft__ChecksumRequest req = DOCRAFT__CHECKSUM_REQUEST__INIT;
	Docraft__ChecksumResponse *resp;
	struct buf reply = BUF_INIT;
	req.read_ht = read_ht;
	req.wait_ms = wait_ms;
	int rv = client_tablet_call(c, TABLE, tablet, addr, DOCRAFT__METHOD__TSERVER_CHECKSUM,
				    &req.base, &req.tablet_id, &reply);
	if (rv == 0) {
		resp = docraft__checksum_response__unpack(NULL, reply.len, reply.data);
		CHECK_MSG(resp != NULL, "ChecksumResponse does not decode");
		*out = *resp;
		docraft__checksum_response__free_unpacked(resp, NULL);
	}
	buf_free(&reply);
	return rv;
}

/* One raw RPC (no retries) on a private loop: status, message, reply. */
struct raw_res {
	bool done;
	uint64_t done_ms; /* proc_now_ms() when answered */
	int status;
	char message[DOCRAFT_ERRMSG_SIZE];
	struct buf reply;
};

static void raw_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct raw_res *out = req->data;
	out->status = r->status;
	snprintf(out->message, sizeof out->message, "%s", r->message);
	if (r->status == 0)
		buf_append(&out->reply, r->reply, r->reply_len);
	out->done_ms = proc_now_ms();
	out->done = true;
}

static void raw_closed(struct rpc_client *cl)
{
	(void)cl;
}

/* n calls to addr sent at once (the second after the first); returns the
 * first one's status. */
static int raw_calls(const char *addr, size_t n, const uint16_t *method,
		     const ProtobufCMessage *const *msg, uint32_t timeout_ms, struct raw_res *out)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct rpc_call_req req[2];
	struct rpc_client cl;
	uv_loop_t loop;
	CHECK(n >= 1 && n <= 2);
	CHECK_OK(uv_loop_init(&loop));
	rpc_client_init(&cl, &loop);
	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof out[i]);
		memset(&req[i], 0, sizeof req[i]);
		req[i].data = &out[i];
		CHECK_OK_MSG(rpc_call_message(&cl, addr, method[i], msg[i], timeout_ms, &req[i],
					      raw_cb, errmsg), errmsg);
	}
	for (size_t i = 0; i < n; i++)
		while (!out[i].done)
			uv_run(&loop, UV_RUN_ONCE);
	rpc_client_close(&cl, raw_closed);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_OK(uv_loop_close(&loop));
	return out[0].status;
}

static int raw_call(const char *addr, uint16_t method, const ProtobufCMessage *msg,
		    uint32_t timeout_ms, struct raw_res *out)
{
	return raw_calls(addr, 1, &method, &msg, timeout_ms, out);
}

/* ---- cases -------------------------------------------------------------------------- */

TEST(replicas_agree)
{
	struct tablet t[8];
	struct ck_run before, after;
	Docraft__ChecksumResponse resp;
	const int nrows = 60;

	cluster_up("ck-agree");
	C.client = client_new(0, 0);
	create_kv();
	CHECK_EQ_INT(tablets_with_leaders(TABLE, t, 8, NTAB, 15000), NTAB);
	for (int i = 0; i < nrows; i++)
		write_row(i);
	/* The master learns leaders from heartbeats: wait until the checksum's
	 * leader lines match (a fresh table may still be electing). */
	CHECK_MSG(wait_for(clean_led_run, &before, 15000), "no clean checksum run within 15 s");
	dump_run(&before);
	CHECK_EQ_U64(check_agree(&before), (uint64_t)nrows);

	/* The CLI: the same, exit 0. */
	int rv = CLI(30000, "checksum", TABLE);
	CHECK_MSG(rv == 0 && strstr(C.out, "checksums: 3 tablets, all replicas agree") != NULL,
		  "docraft checksum exited %d:\n%s", rv, C.out);
	CHECK_EQ_INT(count_substr(C.out, " rows="), NTAB * 3);
	rv = CLI(10000, "checksum");
	CHECK_EQ_INT(rv, 2);
	rv = CLI(10000, "checksum", "no_such_table");
	CHECK_EQ_INT(rv, 1);

	/* One more write: exactly one tablet changes, by one row. */
	write_row(nrows);
	run_checksum(C.client, &after);
	dump_run(&after);
	CHECK_EQ_U64(check_agree(&after), (uint64_t)nrows + 1);
	int changed = 0;
	const char *changed_tablet = NULL;
	for (int i = 0; i < NTAB; i++) {
		const struct ck_line *b = ref_line(&before, t[i].id), *a = ref_line(&after, t[i].id);
		CHECK(a != NULL && b != NULL);
		if (a->sum != b->sum) {
			changed++;
			changed_tablet = t[i].id;
			CHECK_EQ_U64(a->rows, b->rows + 1);
			CHECK(a->read_ht > b->read_ht);
		} else {
			CHECK_EQ_U64(a->rows, b->rows);
		}
	}
	CHECK_EQ_INT(changed, 1);
	test_note("the write changed tablet %s", changed_tablet);

	/* Point in time: every follower, asked directly at the earlier read
	 * time, answers the earlier checksum. */
	int asked = 0;
	for (int i = 0; i < before.n; i++) {
		const struct ck_line *b = &before.l[i];
		if (strcmp(b->role, "follower") != 0)
			continue;
		CHECK_OK_MSG(checksum_rpc(C.client, b->tablet, b->addr, b->read_ht, 2000, &resp),
			     docraft_errmsg());
		CHECK_EQ_U64(resp.read_ht, b->read_ht);
		CHECK_EQ_U64(resp.checksum, b->sum);
		CHECK_EQ_U64(resp.rows, b->rows);
		if (strcmp(b->tablet, changed_tablet) == 0) {
			const struct ck_line *a = ref_line(&after, b->tablet);
			CHECK(resp.checksum != a->sum);
			CHECK(resp.applied_index >= a->applied);
		}
		asked++;
	}
	CHECK_EQ_INT(asked, NTAB * 2);
	/* read_ht 0: this replica's last applied write (the newest state). */
	{
		const struct ck_line *a = ref_line(&after, changed_tablet);
		CHECK_OK_MSG(checksum_rpc(C.client, a->tablet, a->addr, 0, 0, &resp),
			     docraft_errmsg());
		CHECK_EQ_U64(resp.checksum, a->sum);
		CHECK_EQ_U64(resp.read_ht, a->read_ht);
	}
	/* A read time far ahead of every replica: refused as "behind" once
	 * the wait (300 ms) has passed, without blocking the server (a status
	 * call meanwhile is answered at once). */
	{
		const struct ck_line *a = ref_line(&after, changed_tablet);
		Docraft__ChecksumRequest req = DOCRAFT__CHECKSUM_REQUEST__INIT;
		Docraft__TabletStatusRequest sreq = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
		struct raw_res res, two[2];
		req.tablet_id = (char *)a->tablet;
		req.read_ht = a->read_ht + ((uint64_t)60000000 << 12); /* + 60 s */
		req.wait_ms = 600;
		const uint16_t methods[2] = {DOCRAFT__METHOD__TSERVER_CHECKSUM,
					     DOCRAFT__METHOD__TSERVER_TABLET_STATUS};
		const ProtobufCMessage *msgs[2] = {&req.base, &sreq.base};
		uint64_t t0 = proc_now_ms();
		rv = raw_calls(a->addr, 2, methods, msgs, 5000, two);
		uint64_t dt = two[0].done_ms - t0, dt_status = two[1].done_ms - t0;
		test_note("far ahead: %d after %" PRIu64 " ms: %s (status answered after %" PRIu64
			  " ms)", rv, dt, two[0].message, dt_status);
		CHECK_MSG(rv == DOCRAFT_ETIMEDOUT && strstr(two[0].message, "behind") != NULL,
			  "a read time far ahead: %d %s", rv, two[0].message);
		CHECK_MSG(dt >= 550 && dt < 3000, "answered after %" PRIu64 " ms", dt);
		CHECK_EQ_INT(two[1].status, 0);
		CHECK_MSG(dt_status < dt, "the status call waited for the checksum's wait");
		buf_free(&two[0].reply);
		buf_free(&two[1].reply);
		/* An unknown tablet; a bad read time. */
		req.tablet_id = (char *)"kv-9-00000000";
		req.read_ht = 0;
		CHECK_EQ_INT(raw_call(a->addr, DOCRAFT__METHOD__TSERVER_CHECKSUM, &req.base, 5000,
				      &res), DOCRAFT_ETABLETNOTFOUND);
		req.tablet_id = (char *)a->tablet;
		req.read_ht = UINT64_MAX;
		CHECK_EQ_INT(raw_call(a->addr, DOCRAFT__METHOD__TSERVER_CHECKSUM, &req.base, 5000,
				      &res), DOCRAFT_EINVAL);
		/* A follower at read_ht 0: its own last write, the same state. */
		for (int i = 0; i < after.n; i++) {
			const struct ck_line *f = &after.l[i];
			if (strcmp(f->tablet, a->tablet) != 0 || strcmp(f->role, "follower") != 0)
				continue;
			req.read_ht = 0;
			CHECK_OK_MSG(raw_call(f->addr, DOCRAFT__METHOD__TSERVER_CHECKSUM, &req.base,
					      5000, &res), res.message);
			Docraft__ChecksumResponse *r0 = docraft__checksum_response__unpack(
				NULL, res.reply.len, res.reply.data);
			CHECK(r0 != NULL);
			CHECK_EQ_U64(r0->read_ht, a->read_ht);
			CHECK_EQ_U64(r0->checksum, a->sum);
			CHECK_EQ_U64(r0->rows, a->rows);
			docraft__checksum_response__free_unpacked(r0, NULL);
			buf_free(&res.reply);
		}
	}
	cluster_down();
}

TEST(stopped_replica)
{
	struct tablet t[8];
	struct ck_run r;
	const int nrows = 30;

	cluster_up("ck-stop");
	C.client = client_new(0, 0);
	create_kv();
	CHECK_EQ_INT(tablets_with_leaders(TABLE, t, 8, NTAB, 15000), NTAB);
	for (int i = 0; i < nrows; i++)
		write_row(i);
	CHECK_MSG(wait_for(clean_run, &r, 15000), "no clean checksum run within 15 s");
	CHECK_EQ_U64(check_agree(&r), (uint64_t)nrows);

	/* The victim: the tserver leading the fewest tablets (a follower of
	 * them all when one leads none). */
	int victim = 0, fewest = NTAB + 1;
	for (int k = 0; k < NT; k++) {
		int led = 0;
		for (int i = 0; i < NTAB; i++)
			led += strcmp(t[i].leader, C.t[k].addr) == 0;
		if (led < fewest) {
			fewest = led;
			victim = k;
		}
	}
	test_note("SIGSTOP tserver %s (leads %d tablets)", C.t[victim].addr, fewest);
	CHECK_OK(proc_signal(&C.t[victim].p, SIGSTOP));

	docraft_client *quick = client_new(3000, 1000);
	uint64_t t0 = proc_now_ms();
	run_checksum(quick, &r);
	docraft_client_close(quick);
	test_note("with the replica stopped: %" PRIu64 " ms", proc_now_ms() - t0);
	dump_run(&r);
	CHECK_EQ_INT(r.rv, DOCRAFT_EUNAVAILABLE);
	CHECK_MSG(strstr(r.errmsg, C.t[victim].addr) != NULL, "errmsg: %s", r.errmsg);
	CHECK_MSG(strncmp(r.last, "checksums: INCOMPLETE: ", 23) == 0 &&
			  strstr(r.last, C.t[victim].addr) != NULL,
		  "last line: %s", r.last);
	int down = 0, up = 0;
	for (int i = 0; i < r.n; i++) {
		if (strcmp(r.l[i].addr, C.t[victim].addr) == 0)
			down += !r.l[i].ok;
		else
			up += r.l[i].ok;
	}
	CHECK_EQ_INT(down, NTAB);   /* the stopped replica, in every tablet */
	CHECK_EQ_INT(up, NTAB * 2); /* the others answered */
	/* The others still agree among themselves. */
	for (int i = 0; i < r.n; i++) {
		const struct ck_line *ref = ref_line(&r, r.l[i].tablet);
		if (r.l[i].ok)
			CHECK(ref != NULL && r.l[i].sum == ref->sum && r.l[i].rows == ref->rows);
	}
	/* The CLI: exit 1, the replica named. */
	int rv = CLI(30000, "--timeout", "2000", "checksum", TABLE);
	CHECK_MSG(rv == 1 && count_substr(C.out, " UNAVAILABLE: ") == NTAB,
		  "docraft checksum with a stopped replica exited %d:\n%s", rv, C.out);

	CHECK_OK(proc_signal(&C.t[victim].p, SIGCONT));
	CHECK_MSG(wait_for(clean_run, &r, 30000), "replicas do not agree 30 s after SIGCONT");
	dump_run(&r);
	CHECK_EQ_U64(check_agree(&r), (uint64_t)nrows);

	/* Right after leaders move and more rows arrive, the master still
	 * names the old leaders (it learns leaders from heartbeats, once a
	 * second), and an old leader learns the new commit index only with
	 * the next Raft heartbeat: every acknowledged row must still count (the
	 * checksum compares at the newest time any replica has applied). */
	CHECK_EQ_INT(tablets_with_leaders(TABLE, t, 8, NTAB, 15000), NTAB);
	for (int i = 0; i < NTAB; i++) {
		rv = CLI(15000, "step-down", t[i].id);
		CHECK_MSG(rv == 0, "docraft step-down %s exited %d:\n%s", t[i].id, rv, C.out);
	}
	for (int i = nrows; i < 2 * nrows; i++)
		write_row(i);
	run_checksum(C.client, &r);
	dump_run(&r);
	CHECK_EQ_U64(check_agree(&r), (uint64_t)(2 * nrows));
	cluster_down();
}

TEST_MAIN(T(replicas_agree), T(stopped_replica))
