/* Partition ownership (issue 12), black box: a master and three tservers as
 * processes, table kv (k text primary key, v int) in 4 tablets, RF 3.
 *
 *   raw_requests_outside_the_partition
 *       For every tablet, a key hashing (key_hash_components, as the client
 *       routes) outside it, sent as raw TSERVER_WRITE / conditional write /
 *       READ / SCAN (hash key) RPCs to the tablet's replicas: the leader
 *       answers WRONG_TABLET naming the partition (followers NOT_LEADER).
 *       A read naming another table id than the tablet's (a dropped
 *       incarnation of kv) is WRONG_TABLET too.
 *       Nothing was written anywhere (routed reads: not found; a scan of the
 *       whole table: only the rows the test wrote through the client), and
 *       every process is still up.
 *   stale_cache_is_refreshed
 *       The routing client's cache is made stale on purpose (the ids and
 *       replicas of tablets 0 and 1 swapped, partitions kept): a write and a
 *       read of a key of tablet 0 go to tablet 1, get WRONG_TABLET, refresh
 *       the table and succeed on tablet 0; the row is then where it belongs
 *       (raw read on tablet 0's leader finds it). Read restart, tablet
 *       side: a scan page at a time just below that write with a restart
 *       limit answers restart_ht past the write instead of rows; with the
 *       window closed it reads at the time asked.
 *   dropped_table_does_not_take_stale_writes
 *       Client A caches kv; client B drops kv and creates it again at once
 *       (retrying while the master answers EBUSY); A, stale, writes a row
 *       of kv: acknowledged, so once every tablet of the dropped kv is gone
 *       from the tservers' disks B must read it from the new kv. Before
 *       CREATE waited for the old tablets, A's write landed in a tablet of
 *       the dropped table and vanished with it.
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/internal.h"
#include "rpc/rpc.h"
#include "docdb/key.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

#define NTAB 4
#include "kv.h" /* needs NTAB */
#define CALL_MS 5000

/* ---- raw RPCs ------------------------------------------------------------------------ */

static struct {
	uv_loop_t loop;
	struct rpc_client cl;
	bool on;
} R;

struct res {
	bool done;
	int status;
	char message[DOCRAFT_ERRMSG_SIZE];
	uint8_t *reply;
	size_t len;
};

static void call_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct res *out = req->data;
	out->status = r->status;
	snprintf(out->message, sizeof out->message, "%s", r->message);
	free(out->reply);
	out->reply = NULL;
	out->len = 0;
	if (r->status == 0) {
		out->reply = malloc(r->reply_len + 1);
		CHECK(out->reply != NULL);
		memcpy(out->reply, r->reply, r->reply_len);
		out->len = r->reply_len;
	}
	out->done = true;
}

static int raw_call(const char *addr, uint16_t method, const ProtobufCMessage *msg,
		    struct res *out)
{
	struct rpc_call_req req;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memset(&req, 0, sizeof req);
	req.data = out;
	out->done = false;
	CHECK_OK_MSG(rpc_call_message(&R.cl, addr, method, msg, CALL_MS, &req, call_cb, errmsg),
		     errmsg);
	while (!out->done)
		uv_run(&R.loop, UV_RUN_ONCE);
	return out->status;
}

static void raw_open(void)
{
	CHECK_OK(uv_loop_init(&R.loop));
	rpc_client_init(&R.cl, &R.loop);
	R.on = true;
}

static void raw_closed(struct rpc_client *cl)
{
	(void)cl;
}

static void raw_close(void)
{
	if (!R.on)
		return;
	rpc_client_close(&R.cl, raw_closed);
	uv_run(&R.loop, UV_RUN_DEFAULT);
	CHECK_OK(uv_loop_close(&R.loop));
	R.on = false;
}

/* Sends msg to every replica of tb until one answers something else than
 * NOT_LEADER (a leader may be moving: bounded retries). */
static int to_leader(const struct mc_tablet *tb, uint16_t method, const ProtobufCMessage *msg,
		     struct res *out)
{
	uint64_t end = proc_now_ms() + 20000;
	int rv = DOCRAFT_ENOTLEADER;
	while (proc_now_ms() < end) {
		for (size_t i = 0; i < tb->n_replicas; i++) {
			rv = raw_call(tb->replicas[i].address, method, msg, out);
			if (rv != DOCRAFT_ENOTLEADER && rv != DOCRAFT_EUNAVAILABLE)
				return rv;
		}
		sleep_ms(100);
	}
	return rv;
}

/* ---- the table ----------------------------------------------------------------------- */

/* 1 found, 0 not found. */
static int get(const char *k)
{
	docraft_value key = docraft_value_text(k);
	docraft_result *r = NULL;
	int rv = docraft_get(C.client, "kv", &key, 1, 0, &r);
	CHECK_OK_MSG(rv, docraft_errmsg());
	int found = docraft_result_nrows(r) == 1;
	docraft_result_free(r);
	return found;
}

static size_t scan_all(void)
{
	docraft_scan_spec spec;
	docraft_result *r = NULL;
	memset(&spec, 0, sizeof spec);
	CHECK_OK_MSG(docraft_scan(C.client, "kv", &spec, &r), docraft_errmsg());
	size_t n = docraft_result_nrows(r);
	docraft_result_free(r);
	return n;
}

/* The client's cached table kv (loaded: the client wrote to it). */
static struct mc_table *cached(void)
{
	struct mc_table *t = metacache_table(&C.client->mc, "kv");
	CHECK(t->loaded && t->n_tablets == NTAB);
	return t;
}

static Docraft__Datum *text_datum(Docraft__Datum *d, const char *s)
{
	docraft__datum__init(d);
	d->v_case = DOCRAFT__DATUM__V_S;
	d->s.data = (uint8_t *)s;
	d->s.len = strlen(s);
	return d;
}

/* Makes t stale on purpose: tablets 0 and 1 swap everything but their
 * partitions. The client is idle (no job in flight), so its loop thread
 * does not touch the cache meanwhile. */
static void swap_tablets(struct mc_table *t)
{
	struct mc_tablet t0 = t->tablets[0], t1 = t->tablets[1];
	t->tablets[0] = t1;
	t->tablets[0].start = t0.start;
	t->tablets[0].end = t0.end;
	t->tablets[1] = t0;
	t->tablets[1].start = t1.start;
	t->tablets[1].end = t1.end;
}

/* ---- cases ---------------------------------------------------------------------------- */

TEST(raw_requests_outside_the_partition)
{
	char own[NTAB][32];
	struct res r = {0};

	cluster_up("hostile-wrong-tablet");
	client_open();
	raw_open();
	/* One row per tablet through the client: locations and leaders cached. */
	for (int i = 0; i < NTAB; i++) {
		uint32_t start = (uint32_t)(i * 65536 / NTAB), end = (uint32_t)((i + 1) * 65536 / NTAB);
		key_for(own[i], sizeof own[i], "own", start, end, true);
		put(own[i], i);
	}
	struct mc_table *t = cached();
	for (size_t i = 0; i < t->n_tablets; i++) {
		const struct mc_tablet *tb = &t->tablets[i];
		char k[32], ok[32], want[64];
		Docraft__Datum d, dok, dv;
		Docraft__Datum *key[1] = {&d}, *okkey[1] = {&dok};
		uint8_t cid[16];

		key_for(k, sizeof k, "stray", tb->start, tb->end, false);
		key_for(ok, sizeof ok, "fine", tb->start, tb->end, true);
		text_datum(&d, k);
		text_datum(&dok, ok);
		snprintf(want, sizeof want, "[0x%04x, 0x%04x)", tb->start, tb->end);
		test_note("tablet %s %s: stray key %s (hash 0x%04x)", tb->id, want, k, hash_of(k));

		/* A write (and a write whose second op is the stray one). */
		Docraft__ColumnValue cv = DOCRAFT__COLUMN_VALUE__INIT, *cvs[1] = {&cv};
		docraft__datum__init(&dv);
		dv.v_case = DOCRAFT__DATUM__V_I;
		dv.i = 7;
		cv.name = "v";
		cv.value = &dv;
		Docraft__WriteOp op_bad = DOCRAFT__WRITE_OP__INIT, op_ok = DOCRAFT__WRITE_OP__INIT;
		op_bad.kind = DOCRAFT__WRITE_OP__KIND__INSERT;
		op_bad.n_key = 1;
		op_bad.key = key;
		op_bad.n_columns = 1;
		op_bad.columns = cvs;
		op_bad.ttl_ms = -1;
		op_ok = op_bad;
		op_ok.key = okkey;
		Docraft__WriteOp *ops[2] = {&op_ok, &op_bad};
		Docraft__WriteRequest w = DOCRAFT__WRITE_REQUEST__INIT;
		memset(cid, 0x5a, sizeof cid);
		w.tablet_id = tb->id;
		w.table = "kv";
		w.schema_version = t->schema.version;
		w.client_id.data = cid;
		w.client_id.len = sizeof cid;
		w.seq = 1 + i;
		w.n_ops = 2;
		w.ops = ops;
		CHECK_EQ_INT(to_leader(tb, DOCRAFT__METHOD__TSERVER_WRITE, &w.base, &r),
			     DOCRAFT_EWRONGTABLET);
		CHECK_MSG(strstr(r.message, want) != NULL && strstr(r.message, "outside") != NULL,
			  "message: %s", r.message);

		/* A conditional write: its op is inside, its condition's key is not. */
		Docraft__Condition cond = DOCRAFT__CONDITION__INIT, *conds[1] = {&cond};
		cond.n_key = 1;
		cond.key = key;
		cond.column = "v";
		cond.has_value = false;
		w.n_ops = 1;
		w.ops = ops; /* op_ok only */
		w.n_conditions = 1;
		w.conditions = conds;
		w.seq = 100 + i;
		CHECK_EQ_INT(to_leader(tb, DOCRAFT__METHOD__TSERVER_WRITE, &w.base, &r),
			     DOCRAFT_EWRONGTABLET);

		/* A read and a scan of the stray key. */
		Docraft__ReadRequest rd = DOCRAFT__READ_REQUEST__INIT;
		rd.tablet_id = tb->id;
		rd.table = "kv";
		rd.n_key = 1;
		rd.key = key;
		CHECK_EQ_INT(to_leader(tb, DOCRAFT__METHOD__TSERVER_READ, &rd.base, &r),
			     DOCRAFT_EWRONGTABLET);
		Docraft__ScanRequest sc = DOCRAFT__SCAN_REQUEST__INIT;
		sc.tablet_id = tb->id;
		sc.table = "kv";
		sc.n_hash_key = 1;
		sc.hash_key = key;
		CHECK_EQ_INT(to_leader(tb, DOCRAFT__METHOD__TSERVER_SCAN, &sc.base, &r),
			     DOCRAFT_EWRONGTABLET);
		/* The key it owns is still served: the check is not a blanket refusal. */
		rd.key = okkey;
		CHECK_OK(to_leader(tb, DOCRAFT__METHOD__TSERVER_READ, &rd.base, &r));
		/* Another incarnation's table id (docs/cluster.md "Table ids"):
		 * WRONG_TABLET; the id the master gave the client: served. */
		CHECK_MSG(strlen(t->id) == 16, "table id '%s'", t->id);
		rd.table_id = "0123456789abcdef";
		CHECK_EQ_INT(to_leader(tb, DOCRAFT__METHOD__TSERVER_READ, &rd.base, &r),
			     DOCRAFT_EWRONGTABLET);
		CHECK_MSG(strstr(r.message, "table id") != NULL, "message: %s", r.message);
		rd.table_id = t->id;
		CHECK_OK(to_leader(tb, DOCRAFT__METHOD__TSERVER_READ, &rd.base, &r));
		rd.table_id = "";

		/* Nothing of either write applied: not the stray key anywhere,
		 * not the in-partition op of the refused write. */
		CHECK_EQ_INT(get(k), 0);
		CHECK_EQ_INT(get(ok), 0);
	}
	CHECK_EQ_U64(scan_all(), NTAB);
	all_up();
	free(r.reply);
	raw_close();
	cluster_down();
}

TEST(stale_cache_is_refreshed)
{
	char k[32];
	struct res r = {0};

	cluster_up("hostile-stale-cache");
	client_open();
	raw_open();
	for (int i = 0; i < NTAB; i++) {
		char own[32];
		key_for(own, sizeof own, "seed", (uint32_t)(i * 65536 / NTAB),
			(uint32_t)((i + 1) * 65536 / NTAB), true);
		put(own, i);
	}
	struct mc_table *t = cached();
	char real0[80];
	snprintf(real0, sizeof real0, "%s", t->tablets[0].id);
	key_for(k, sizeof k, "moved", t->tablets[0].start, t->tablets[0].end, true);
	swap_tablets(t);
	uint64_t gen = t->generation;

	uint64_t wrote_at = put(k, 42); /* to tablet 1 first: WRONG_TABLET, refresh, tablet 0 */
	t = cached();
	CHECK_MSG(t->generation > gen, "the table was not refreshed");
	CHECK_EQ_STR(t->tablets[0].id, real0);
	CHECK_EQ_INT(get(k), 1);

	/* Stale again, then a read: the same path. */
	swap_tablets(t);
	gen = t->generation;
	CHECK_EQ_INT(get(k), 1);
	t = cached();
	CHECK_MSG(t->generation > gen, "the table was not refreshed");

	/* The row is on tablet 0, where it belongs. */
	{
		Docraft__Datum d, *key[1] = {&d};
		Docraft__ReadRequest rd = DOCRAFT__READ_REQUEST__INIT;
		Docraft__ReadResponse *resp;
		text_datum(&d, k);
		rd.tablet_id = t->tablets[0].id;
		rd.table = "kv";
		rd.n_key = 1;
		rd.key = key;
		CHECK_OK(to_leader(&t->tablets[0], DOCRAFT__METHOD__TSERVER_READ, &rd.base, &r));
		resp = docraft__read_response__unpack(NULL, r.len, r.reply);
		CHECK(resp != NULL && resp->found);
		docraft__read_response__free_unpacked(resp, NULL);
	}
	CHECK_EQ_U64(scan_all(), NTAB + 1);

	/* Read restart, tablet side: a whole-tablet scan page at a time just
	 * below that write, with a restart limit, must not answer rows that
	 * miss it but a restart above it; with the window closed (limit = read
	 * time) it reads at the time asked. */
	{
		Docraft__ScanRequest sc = DOCRAFT__SCAN_REQUEST__INIT;
		Docraft__ScanResponse *resp;
		sc.tablet_id = t->tablets[0].id;
		sc.table = "kv";
		sc.read_ht = wrote_at - 1;
		sc.restart_limit = UINT64_MAX;
		CHECK_OK(to_leader(&t->tablets[0], DOCRAFT__METHOD__TSERVER_SCAN, &sc.base, &r));
		resp = docraft__scan_response__unpack(NULL, r.len, r.reply);
		CHECK(resp != NULL);
		CHECK_MSG(resp->restart_ht >= wrote_at && resp->local_limit == resp->restart_ht &&
			  resp->n_rows == 0, "restart_ht %" PRIu64 " (write at %" PRIu64 "), %zu rows",
			  resp->restart_ht, wrote_at, resp->n_rows);
		docraft__scan_response__free_unpacked(resp, NULL);
		sc.restart_limit = sc.read_ht;
		CHECK_OK(to_leader(&t->tablets[0], DOCRAFT__METHOD__TSERVER_SCAN, &sc.base, &r));
		resp = docraft__scan_response__unpack(NULL, r.len, r.reply);
		CHECK(resp != NULL);
		CHECK_EQ_U64(resp->restart_ht, 0);
		CHECK_EQ_U64(resp->n_rows, 1); /* tablet 0's seed row, not the later write */
		docraft__scan_response__free_unpacked(resp, NULL);
	}
	all_up();
	free(r.reply);
	raw_close();
	cluster_down();
}

/* True once no tserver has a directory for tablet id. */
static bool tablet_gone(const char *id)
{
	char path[1024];
	for (int k = 0; k < NT; k++) {
		snprintf(path, sizeof path, "%s/tablets/%s", C.t[k].dir, id);
		if (access(path, F_OK) == 0)
			return false;
	}
	return true;
}

/* For wait_for: no tserver has a directory for any of the NTAB tablets. */
static bool tablets_gone(void *tablets)
{
	const struct tablet *t = tablets;
	for (int i = 0; i < NTAB; i++)
		if (!tablet_gone(t[i].id))
			return false;
	return true;
}

TEST(dropped_table_does_not_take_stale_writes)
{
	char k[32], err[DOCRAFT_ERRMSG_SIZE];
	struct tablet old[NTAB];
	docraft_client *b = NULL;
	docraft_client_options o;

	cluster_up("hostile-drop-create");
	client_open();
	key_for(k, sizeof k, "row", 0, 65536, true);
	put(k, 1); /* client A caches kv */
	CHECK_EQ_INT(tablets_with_leaders("kv", old, NTAB, NTAB, 20000), NTAB);

	docraft_client_options_init(&o);
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &b, err), err);
	CHECK_OK_MSG(docraft_table_drop(b, "kv", false), docraft_errmsg());
	docraft_table_options to = {.num_tablets = NTAB, .replication_factor = 3};
	uint64_t end = proc_now_ms() + 60000;
	int rv;
	while ((rv = docraft_table_create_cql(b, "CREATE TABLE kv (k text, v int, "
					      "PRIMARY KEY ((k)));", &to)) == DOCRAFT_EBUSY) {
		CHECK_MSG(proc_now_ms() < end, "CREATE still busy: %s", docraft_errmsg());
		sleep_ms(50);
	}
	CHECK_OK_MSG(rv, docraft_errmsg());

	put(k, 2); /* client A, stale: acknowledged */

	CHECK_MSG(wait_for(tablets_gone, old, 60000), "a tablet of the dropped table still on disk");
	docraft_value key = docraft_value_text(k);
	docraft_result *r = NULL;
	CHECK_OK_MSG(docraft_get(b, "kv", &key, 1, 0, &r), docraft_errmsg());
	CHECK_MSG(docraft_result_nrows(r) == 1, "the acknowledged write of the stale client is "
		  "lost");
	docraft_result_free(r);
	docraft_client_close(b);
	all_up();
	cluster_down();
}

TEST_MAIN(T(raw_requests_outside_the_partition), T(stale_cache_is_refreshed),
	  T(dropped_table_does_not_take_stale_writes))
