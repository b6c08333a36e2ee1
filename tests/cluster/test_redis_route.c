/* Redis tables in the master and the routing client (issue 17) on a real
 * cluster: one docraft-master, three docraft-tservers on 127.0.0.1-3 (RF
 * 3), each with its RESP port on a free port (--redis-address :0):
 *
 *   tablets_cover      docraft_redis_tablets_async on a fresh cluster creates
 *                      redis_0 (GetTable: TableSchema.redis, one column k
 *                      blob) with the client's 6 tablets; their slot ranges
 *                      cover 0..16383 exactly once, in order; every tablet
 *                      has 3 replicas whose Redis addresses are the ones the
 *                      tservers listen on (their logs), the leader first;
 *                      GetTable's peers and ListTServers carry them too
 *   created_once       many concurrent first requests on a new database
 *                      all succeed, and make one table
 *   bad_schemas        the master refuses a Redis table that is not exactly
 *                      k blob hash key, with a clear error
 *   create_fails       a client asking for RF 5 of three tservers: the
 *                      request fails with the master's reason for refusing
 *                      the create, not "not found"
 *   not_redis          a CQL table named redis_3 is refused by the Redis
 *                      requests ("not a Redis database")
 *   bad_args           the synchronous errors of docraft_redis_async
 *   routing            SET / GET through docraft_redis_async for keys of known
 *                      slots: each key is in the dump of the tablet whose
 *                      slot range holds its slot, in no other; a write's
 *                      reply, a read's; SELECT * FROM redis_0 shows the
 *                      strings with their TTLs
 *   incr_once          INCRs of one key from a thread while the leader of its
 *                      tablet is asked to step down again and again: every
 *                      reply is the previous one + 1 (a retried write keeps
 *                      its seq, so no INCR applies twice or is lost)
 *   cql_view_types     SELECT * FROM redis_0 shows a hash, a set, a sorted set,
 *                      a list and a time series as {f: v}, {m}, [(score, m)],
 *                      [..], {ts: v} (skipped, with a note, in a build whose
 *                      engine lacks the collection commands)
 *   cql_view           the docraft CLI: DESCRIBE TABLES and DESCRIBE TABLE
 *                      say redis_0 is a Redis database, `docraft tables` too;
 *                      INSERT, UPDATE, DELETE on it are refused ("use a Redis
 *                      client"), a SELECT other than SELECT * too
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "common/buf.h"
#include "common/redis_slot.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

/* ---- waiting for an async request ---- */

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void req_done(docraft_req *req)
{
	struct waiter *w = req->data;
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void wait_req(struct waiter *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

/* docraft_redis_tablets_async, waited for: req->status is the outcome. */
static void redis_tablets(unsigned db, docraft_req *req)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	memset(req, 0, sizeof *req);
	req->data = &w;
	CHECK_OK_MSG(docraft_redis_tablets_async(C.client, req, db, req_done), docraft_errmsg());
	wait_req(&w);
}

/* docraft_redis_async of one command, waited for; *reply gets the reply
 * (malloc'd, NUL-terminated). */
static int redis1(unsigned db, bool write, char **reply, int argc, ...)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	docraft_bytes argv[8];
	docraft_redis_cmd cmd = {(uint32_t)argc, argv};
	docraft_req req;
	const void *p;
	size_t len;
	va_list ap;

	va_start(ap, argc);
	for (int i = 0; i < argc && i < 8; i++) {
		const char *a = va_arg(ap, const char *);
		argv[i] = (docraft_bytes){a, strlen(a)};
	}
	va_end(ap);
	memset(&req, 0, sizeof req);
	req.data = &w;
	CHECK_OK_MSG(docraft_redis_async(C.client, &req, db, redis_key_slot(argv[1].p, argv[1].n),
					 &cmd, 1, write, req_done),
		     docraft_errmsg());
	wait_req(&w);
	*reply = NULL;
	if (req.status != 0) {
		test_note("%s %s: %s", (const char *)argv[0].p, (const char *)argv[1].p,
			  req.errmsg);
		return req.status;
	}
	CHECK_EQ_INT(docraft_result_nreplies(req.result), 1);
	p = docraft_result_reply(req.result, 0, &len);
	*reply = calloc(1, len + 1);
	memcpy(*reply, p, len);
	docraft_result_free(req.result);
	return 0;
}

/* ---- the cluster ---- */

static char redis_addr[NT][64]; /* tserver k's RESP address, from its log */

static void read_redis_addresses(void)
{
	for (int k = 0; k < NT; k++) {
		char line[512];
		FILE *f = fopen(C.t[k].log, "r");
		redis_addr[k][0] = '\0';
		CHECK_MSG(f != NULL, "cannot open %s", C.t[k].log);
		while (fgets(line, sizeof line, f) != NULL) {
			const char *p = strstr(line, "redis: Redis protocol on ");
			if (p != NULL)
				sscanf(p + strlen("redis: Redis protocol on "), "%63s",
				       redis_addr[k]);
		}
		fclose(f);
		CHECK_MSG(redis_addr[k][0] != '\0', "tserver %d logs no Redis address", k);
	}
}

static int tserver_of_redis(const char *addr)
{
	for (int k = 0; k < NT; k++)
		if (strcmp(redis_addr[k], addr) == 0)
			return k;
	return -1;
}

static void up(const char *tag)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	C.tserver_args[0] = "--redis-address";
	C.tserver_args[1] = ":0";
	C.tserver_args[2] = NULL;
	cluster_up(tag);
	read_redis_addresses();
	docraft_client_options_init(&o);
	o.num_tablets = 6;
	o.replication_factor = 3;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
}

static Docraft__GetTableResponse *get_table(const char *name)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	struct buf reply = BUF_INIT;
	Docraft__GetTableResponse *resp;
	req.name = (char *)name;
	CHECK_OK_MSG(
		client_master_call(C.client, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &reply),
		docraft_errmsg());
	resp = docraft__get_table_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	CHECK(resp != NULL);
	return resp;
}

/* Every tablet of the result has a known leader. */
static bool leaders_known(void *arg)
{
	docraft_req req;
	bool all = true;
	(void)arg;
	redis_tablets(0, &req);
	if (req.status != 0)
		return false;
	for (size_t i = 0; i < docraft_result_ntablets(req.result); i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(req.result, i, &t);
		all = all && t.leader_known;
	}
	docraft_result_free(req.result);
	return all;
}

TEST(tablets_cover)
{
	Docraft__GetTableResponse *gt;
	docraft_req req;
	size_t n;
	uint32_t next = 0;

	uint64_t t0;

	up("redis-cover");
	t0 = proc_now_ms();
	redis_tablets(0, &req);
	CHECK_MSG(req.status == 0, "redis_tablets: %s", req.errmsg);
	test_note("redis_0 created on first use and resolved in %" PRIu64 " ms",
		  proc_now_ms() - t0);
	n = docraft_result_ntablets(req.result);
	CHECK_EQ_INT(n, 6);
	for (size_t i = 0; i < n; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(req.result, i, &t);
		CHECK_MSG(t.first_slot == next && t.last_slot >= t.first_slot,
			  "tablet %zu: slots %u..%u, expected to start at %u", i, t.first_slot,
			  t.last_slot, next);
		next = t.last_slot + 1u;
		CHECK_EQ_INT(t.nreplicas, 3);
		for (size_t k = 0; k < t.nreplicas; k++) {
			CHECK_MSG(tserver_of_redis(t.redis_addresses[k]) >= 0,
				  "tablet %s replica %zu: Redis address '%s' is no tserver's",
				  t.tablet_id, k, t.redis_addresses[k]);
			CHECK(t.tserver_uuids[k] != NULL && t.tserver_uuids[k][0] != '\0');
		}
	}
	CHECK_EQ_INT(next, REDIS_SLOTS);
	docraft_result_free(req.result);

	/* The leader first once known: its Redis address is its tserver's. */
	CHECK_MSG(wait_for(leaders_known, NULL, 20000), "leaders unknown after 20 s");
	redis_tablets(0, &req);
	CHECK_OK_MSG(req.status, req.errmsg);
	gt = get_table("redis_0");
	CHECK(gt->schema != NULL && gt->schema->redis);
	CHECK_EQ_INT(gt->schema->n_columns, 1);
	CHECK(strcmp(gt->schema->columns[0]->name, "k") == 0);
	CHECK_EQ_INT(gt->schema->columns[0]->type, DOCRAFT__COLUMN_TYPE__BLOB);
	CHECK_EQ_INT(gt->n_tablets, 6);
	for (size_t i = 0; i < docraft_result_ntablets(req.result); i++) {
		docraft_redis_tablet t;
		const Docraft__TabletLocation *loc = NULL;
		docraft_result_redis_tablet(req.result, i, &t);
		for (size_t j = 0; j < gt->n_tablets; j++)
			if (strcmp(gt->tablets[j]->tablet_id, t.tablet_id) == 0)
				loc = gt->tablets[j];
		CHECK(loc != NULL);
		CHECK_EQ_INT(t.first_slot, redis_partition_slot(loc->start));
		CHECK_EQ_INT(t.last_slot + 1u, redis_partition_slot(loc->end));
		for (size_t k = 0; k < loc->n_replicas; k++) {
			const Docraft__Peer *p = loc->replicas[k];
			int ts = tserver_of_redis(p->redis_address);
			CHECK_MSG(ts >= 0 && strcmp(C.t[ts].addr, p->address) == 0,
				  "peer %s has Redis address '%s'", p->address, p->redis_address);
			if (p->raft_id == loc->leader_raft_id && t.leader_known)
				CHECK_MSG(strcmp(t.redis_addresses[0], p->redis_address) == 0,
					  "tablet %s: first address %s, leader's %s", t.tablet_id,
					  t.redis_addresses[0], p->redis_address);
		}
	}
	docraft__get_table_response__free_unpacked(gt, NULL);
	docraft_result_free(req.result);

	/* ListTServers names each tserver's Redis address. */
	{
		Docraft__ListTServersRequest lr = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
		Docraft__ListTServersResponse *ls;
		struct buf reply = BUF_INIT;
		CHECK_OK_MSG(client_master_call(C.client, DOCRAFT__METHOD__MASTER_LIST_TSERVERS,
						&lr.base, &reply),
			     docraft_errmsg());
		ls = docraft__list_tservers_response__unpack(NULL, reply.len, reply.data);
		buf_free(&reply);
		CHECK(ls != NULL);
		CHECK_EQ_INT(ls->n_tservers, NT);
		for (size_t i = 0; i < ls->n_tservers; i++) {
			int ts = tserver_of_redis(ls->tservers[i]->redis_address);
			CHECK_MSG(ts >= 0 && strcmp(C.t[ts].addr, ls->tservers[i]->address) == 0,
				  "tserver %s: Redis address '%s'", ls->tservers[i]->address,
				  ls->tservers[i]->redis_address);
		}
		docraft__list_tservers_response__free_unpacked(ls, NULL);
	}
	cluster_down();
}

#define CONCURRENT 8

TEST(created_once)
{
	struct waiter w[CONCURRENT];
	docraft_req req[CONCURRENT];
	int rv;

	up("redis-once");
	for (int i = 0; i < CONCURRENT; i++) {
		w[i] = (struct waiter){PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
		memset(&req[i], 0, sizeof req[i]);
		req[i].data = &w[i];
		CHECK_OK_MSG(docraft_redis_tablets_async(C.client, &req[i], 7, req_done),
			     docraft_errmsg());
	}
	for (int i = 0; i < CONCURRENT; i++) {
		wait_req(&w[i]);
		CHECK_MSG(req[i].status == 0, "request %d: %s", i, req[i].errmsg);
		CHECK_EQ_INT(docraft_result_ntablets(req[i].result), 6);
		docraft_result_free(req[i].result);
	}
	/* One table: `docraft tables` lists redis_7 once. */
	rv = CLI(30000, "tables");
	CHECK_MSG(rv == 0 && count_substr(C.out, "redis_7") == 1, "tables:\n%s", C.out);
	cluster_down();
}

/* CreateTable of a Redis table with schema s: the master's error. */
static int create_redis(Docraft__TableSchema *s, struct buf *reply)
{
	Docraft__CreateTableRequest req = DOCRAFT__CREATE_TABLE_REQUEST__INIT;
	req.schema = s;
	req.num_tablets = 1;
	req.replication_factor = 3;
	return client_master_call(C.client, DOCRAFT__METHOD__MASTER_CREATE_TABLE, &req.base, reply);
}

TEST(bad_schemas)
{
	Docraft__ColumnSchema k = DOCRAFT__COLUMN_SCHEMA__INIT, v = DOCRAFT__COLUMN_SCHEMA__INIT;
	Docraft__ColumnSchema *cols[2] = {&k, &v};
	Docraft__TableSchema s = DOCRAFT__TABLE_SCHEMA__INIT;
	struct buf reply = BUF_INIT;
	int rv;

	up("redis-schemas");
	k.name = "k";
	k.kind = DOCRAFT__COLUMN_KIND__HASH;
	k.type = DOCRAFT__COLUMN_TYPE__BLOB;
	v.name = "v";
	v.kind = DOCRAFT__COLUMN_KIND__REGULAR;
	v.type = DOCRAFT__COLUMN_TYPE__BLOB;
	s.name = "redis_9";
	s.redis = true;
	s.columns = cols;
	s.n_columns = 2; /* k and v */
	rv = create_redis(&s, &reply);
	CHECK_MSG(rv == DOCRAFT_EINVAL && strstr(docraft_errmsg(), "exactly one column") != NULL,
		  "two columns: %d %s", rv, docraft_errmsg());
	s.n_columns = 1;
	k.type = DOCRAFT__COLUMN_TYPE__TEXT; /* k text */
	rv = create_redis(&s, &reply);
	CHECK_MSG(rv == DOCRAFT_EINVAL && strstr(docraft_errmsg(), "k blob hash key") != NULL,
		  "k text: %d %s", rv, docraft_errmsg());
	k.type = DOCRAFT__COLUMN_TYPE__BLOB;
	s.default_ttl_ms = 1000;
	rv = create_redis(&s, &reply);
	CHECK_MSG(rv == DOCRAFT_EINVAL && strstr(docraft_errmsg(), "default TTL") != NULL,
		  "default TTL: %d %s", rv, docraft_errmsg());
	s.default_ttl_ms = 0;
	rv = create_redis(&s, &reply); /* the right one */
	CHECK_MSG(rv == 0, "k blob: %d %s", rv, docraft_errmsg());
	buf_free(&reply);
	cluster_down();
}

TEST(create_fails)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_client *c;
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	docraft_req req;

	up("redis-createfails");
	docraft_client_options_init(&o);
	o.replication_factor = 5;
	o.timeout_ms = 3000;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &c, err), err);
	memset(&req, 0, sizeof req);
	req.data = &w;
	CHECK_OK_MSG(docraft_redis_tablets_async(c, &req, 1, req_done), docraft_errmsg());
	wait_req(&w);
	CHECK_MSG(req.status != 0 && strstr(req.errmsg, "creating table redis_1") != NULL &&
			  strstr(req.errmsg, "replication factor 5") != NULL,
		  "RF 5: %d %s", req.status, req.errmsg);
	docraft_client_close(c);
	cluster_down();
}

TEST(not_redis)
{
	docraft_req req;
	up("redis-notredis");
	CHECK_OK_MSG(
		docraft_table_create_cql(
			C.client, "CREATE TABLE redis_3 (k blob, v blob, PRIMARY KEY (k));", NULL),
		docraft_errmsg());
	redis_tablets(3, &req);
	CHECK_MSG(req.status == DOCRAFT_EINVAL &&
			  strstr(req.errmsg, "is not a Redis database") != NULL,
		  "redis_3: %d %s", req.status, req.errmsg);
	CHECK(req.result == NULL);
	cluster_down();
}

TEST(bad_args)
{
	docraft_client *c;
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_req req;
	docraft_bytes argv[2] = {{"GET", 3}, {"k", 1}};
	docraft_redis_cmd cmd = {2, argv}, empty = {0, argv};

	/* No cluster needed: these fail before anything is sent. */
	docraft_client_options_init(&o);
	CHECK_OK_MSG(docraft_client_open("127.0.0.1:1", &o, &c, err), err);
	CHECK_EQ_INT(docraft_redis_async(c, &req, 0, 16384, &cmd, 1, false, req_done),
		     DOCRAFT_EINVAL);
	CHECK(strstr(docraft_errmsg(), "slot 16384") != NULL);
	CHECK_EQ_INT(docraft_redis_async(c, &req, 0, 1, &cmd, 0, false, req_done), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_redis_async(c, &req, 0, 1, &empty, 1, false, req_done),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_redis_async(c, &req, 0, 1, NULL, 1, false, req_done), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_redis_tablets_async(c, &req, 0, NULL), DOCRAFT_EINVAL);
	docraft_client_close(c);
}

TEST(cql_view)
{
	static const char *const writes[] = {
		"INSERT INTO redis_0 (k) VALUES (0x01);",
		"UPDATE redis_0 SET k = 0x02 WHERE k = 0x01;",
		"DELETE FROM redis_0 WHERE k = 0x01;",
	};
	docraft_req req;
	int rv;

	up("redis-cql");
	redis_tablets(0, &req);
	CHECK_MSG(req.status == 0, "redis_tablets: %s", req.errmsg);
	docraft_result_free(req.result);
	CHECK_OK_MSG(docraft_table_create_cql(
			     C.client, "CREATE TABLE plain (k int PRIMARY KEY, v text);", NULL),
		     docraft_errmsg());

	rv = CLI(30000, "-e", "DESCRIBE TABLES;");
	CHECK_MSG(rv == 0 && strstr(C.out, "redis_0  (Redis database)\n") != NULL &&
			  strstr(C.out, "plain\n") != NULL && strstr(C.out, "plain  (") == NULL,
		  "DESCRIBE TABLES exited %d:\n%s%s", rv, C.out, cluster_cli_errors());
	rv = CLI(30000, "-e", "DESCRIBE TABLE redis_0;");
	CHECK_MSG(rv == 0 && strstr(C.out, "redis_0: a Redis database (Redis SELECT 0): key -> "
					   "typed value") != NULL,
		  "DESCRIBE TABLE redis_0 exited %d:\n%s%s", rv, C.out, cluster_cli_errors());
	rv = CLI(30000, "-e", "DESCRIBE TABLE plain;");
	CHECK_MSG(rv == 0 && strstr(C.out, "CREATE TABLE plain (k int, v text") != NULL,
		  "DESCRIBE TABLE plain exited %d:\n%s%s", rv, C.out, cluster_cli_errors());
	rv = CLI(30000, "-e", "DESCRIBE TABLE nosuch;");
	CHECK_MSG(rv != 0 && strstr(cluster_cli_errors(), "not found") != NULL,
		  "DESCRIBE TABLE nosuch exited %d:\n%s", rv, cluster_cli_errors());
	rv = CLI(30000, "tables");
	CHECK_MSG(rv == 0 && strstr(C.out, "-- redis_0: a Redis database") != NULL,
		  "tables exited %d:\n%s", rv, C.out);

	for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
		rv = CLI(30000, "-e", writes[i]);
		CHECK_MSG(rv != 0 &&
				  strstr(cluster_cli_errors(),
					 "redis_0 is a Redis database: use a Redis client") != NULL,
			  "%s exited %d:\n%s", writes[i], rv, cluster_cli_errors());
	}
	/* The row API refuses it too: its documents are Redis values. */
	{
		docraft_value key = {.type = DOCRAFT_TYPE_BLOB, .v.s = {"k", 1}};
		docraft_result *r = NULL;
		rv = docraft_get(C.client, "redis_0", &key, 1, 0, &r);
		CHECK_MSG(rv == DOCRAFT_EINVAL &&
				  strstr(docraft_errmsg(), "redis_0 is a Redis database: use a "
							   "Redis client") != NULL,
			  "docraft_get: %d %s", rv, docraft_errmsg());
		CHECK(r == NULL);
	}
	rv = CLI(30000, "-e", "SELECT k FROM redis_0;");
	CHECK_MSG(rv != 0 &&
			  strstr(cluster_cli_errors(), "SELECT * FROM redis_0 [LIMIT n]") != NULL,
		  "SELECT k exited %d:\n%s", rv, cluster_cli_errors());
	cluster_down();
}

struct dump_check {
	const char *const *keys;
	int n;
	char why[128];
	docraft_redis_tablet t;
};

/* For wait_for: `docraft dump` of d->t holds the keys of its slots, and
 * only those. */
static bool dump_holds(void *arg)
{
	struct dump_check *d = arg;
	if (CLI(30000, "dump", d->t.tablet_id) != 0) {
		snprintf(d->why, sizeof d->why, "dump failed");
		return false;
	}
	for (int k = 0; k < d->n; k++) {
		char needle[64];
		uint16_t slot = redis_key_slot(d->keys[k], strlen(d->keys[k]));
		bool owner = slot >= d->t.first_slot && slot <= d->t.last_slot;
		snprintf(needle, sizeof needle, "0x%04x, %s)", redis_slot_partition(slot),
			 d->keys[k]);
		if ((strstr(C.out, needle) != NULL) != owner) {
			snprintf(d->why, sizeof d->why, "key %s (slot %u) %s", d->keys[k], slot,
				 owner ? "missing" : "found");
			return false;
		}
	}
	return true;
}

TEST(routing)
{
	static const char *const keys[] = {"key1",         "key2", "key3", "{user1}.name",
					   "{user1}.mail", "a",    "zz"};
	enum { NKEYS = sizeof keys / sizeof keys[0] };
	docraft_req req;
	char *reply;
	size_t nt;

	up("redis-routing");
	for (int i = 0; i < NKEYS; i++) {
		char value[32];
		snprintf(value, sizeof value, "v-%s", keys[i]);
		CHECK_OK_MSG(redis1(0, true, &reply, 5, "SET", keys[i], value, "EX", "1000"),
			     "SET");
		CHECK_MSG(strcmp(reply, "+OK\r\n") == 0, "SET %s: %s", keys[i], reply);
		free(reply);
	}
	for (int i = 0; i < NKEYS; i++) {
		char want[64];
		CHECK_OK_MSG(redis1(0, false, &reply, 2, "GET", keys[i]), "GET");
		snprintf(want, sizeof want, "$%zu\r\nv-%s\r\n", strlen(keys[i]) + 2, keys[i]);
		CHECK_MSG(strcmp(reply, want) == 0, "GET %s: %s", keys[i], reply);
		free(reply);
	}
	CHECK_OK_MSG(redis1(0, false, &reply, 2, "GET", "nosuchkey"), "GET");
	CHECK_MSG(strcmp(reply, "$-1\r\n") == 0, "GET nosuchkey: %s", reply);
	free(reply);

	/* Each key is in the dump of its slot's tablet only. The dump is served
	 * by the replica the CLI finds first, maybe a follower a little behind
	 * the leader: wait for the keys to be there. */
	redis_tablets(0, &req);
	CHECK_MSG(req.status == 0, "redis_tablets: %s", req.errmsg);
	nt = docraft_result_ntablets(req.result);
	for (size_t i = 0; i < nt; i++) {
		struct dump_check d = {keys, NKEYS, {0}};
		docraft_result_redis_tablet(req.result, i, &d.t);
		CHECK_MSG(wait_for(dump_holds, &d, 10000),
			  "the dump of tablet %s (slots %u..%u) is not its keys: %s\n%s",
			  d.t.tablet_id, d.t.first_slot, d.t.last_slot, d.why, C.out);
	}
	docraft_result_free(req.result);

	/* The CQL view: the strings with their TTLs, in key order. */
	CHECK_MSG(CLI(30000, "-e", "SELECT * FROM redis_0;") == 0, "SELECT:\n%s",
		  cluster_cli_errors());
	CHECK_MSG(strstr(C.out, "(7 rows)") != NULL && strstr(C.out, "| string |") != NULL &&
			  strstr(C.out, "v-{user1}.mail") != NULL,
		  "SELECT * FROM redis_0:\n%s", C.out);
	{
		const char *row = strstr(C.out, " key1 | string | ");
		const char *eol = row != NULL ? strchr(row, '\n') : NULL;
		CHECK_MSG(row != NULL && eol != NULL &&
				  (strncmp(row + 17, "1000 |", 6) == 0 ||
				   strncmp(row + 17, " 999 |", 6) == 0) &&
				  strncmp(eol - 7, " v-key1", 7) == 0,
			  "SELECT * FROM redis_0 (key1's row):\n%s", C.out);
	}
	CHECK_MSG(CLI(30000, "-e", "SELECT * FROM redis_0 LIMIT 2;") == 0 &&
			  strstr(C.out, "(2 rows)") != NULL,
		  "SELECT LIMIT 2:\n%s%s", C.out, cluster_cli_errors());
	cluster_down();
}

#define INCRS 300

struct incr_state {
	int done;       /* INCRs answered in order */
	char fail[256]; /* the first wrong answer */
	bool stop;
};

static void *incr_thread(void *arg)
{
	struct incr_state *st = arg;
	for (int i = 1; i <= INCRS && st->fail[0] == '\0'; i++) {
		char *reply = NULL, want[32];
		int rv = redis1(0, true, &reply, 2, "INCR", "counter");
		snprintf(want, sizeof want, ":%d\r\n", i);
		if (rv != 0 || strcmp(reply, want) != 0)
			snprintf(st->fail, sizeof st->fail, "INCR %d: status %d, reply %s", i, rv,
				 reply != NULL ? reply : "(none)");
		else
			__atomic_store_n(&st->done, i, __ATOMIC_SEQ_CST);
		free(reply);
	}
	__atomic_store_n(&st->stop, true, __ATOMIC_SEQ_CST);
	return NULL;
}

TEST(incr_once)
{
	struct incr_state st = {0, {0}, false};
	uint16_t slot = redis_key_slot("counter", 7);
	docraft_redis_tablet t;
	docraft_req req;
	char tablet[80] = "";
	pthread_t th;
	int stepdowns = 0;
	uint64_t t0;

	up("redis-incr");
	redis_tablets(0, &req);
	CHECK_MSG(req.status == 0, "redis_tablets: %s", req.errmsg);
	for (size_t i = 0; i < docraft_result_ntablets(req.result); i++) {
		docraft_result_redis_tablet(req.result, i, &t);
		if (slot >= t.first_slot && slot <= t.last_slot)
			snprintf(tablet, sizeof tablet, "%s", t.tablet_id);
	}
	docraft_result_free(req.result);
	CHECK(tablet[0] != '\0');
	t0 = proc_now_ms();
	CHECK(pthread_create(&th, NULL, incr_thread, &st) == 0);
	/* Step downs while INCRs run: some in flight at each. */
	while (!__atomic_load_n(&st.stop, __ATOMIC_SEQ_CST) && stepdowns < 6) {
		int at = __atomic_load_n(&st.done, __ATOMIC_SEQ_CST);
		while (!__atomic_load_n(&st.stop, __ATOMIC_SEQ_CST) &&
		       __atomic_load_n(&st.done, __ATOMIC_SEQ_CST) < at + 20)
			sleep_ms(5);
		if (CLI(30000, "step-down", tablet) == 0)
			stepdowns++;
	}
	pthread_join(th, NULL);
	CHECK_MSG(st.fail[0] == '\0', "%s (after %d step-downs)", st.fail, stepdowns);
	CHECK_EQ_INT(st.done, INCRS);
	test_note("%d INCRs one after the other in %" PRIu64 " ms, %d leader step-downs", INCRS,
		  proc_now_ms() - t0, stepdowns);
	CHECK_MSG(stepdowns >= 2, "only %d step-downs happened", stepdowns);
	cluster_down();
}

/* The row of key in the last SELECT's output (cells right-aligned): of
 * type, its ttl cell ttl (NULL: a number), its value cell value. */
static void check_row(const char *key, const char *type, const char *ttl, const char *value)
{
	char needle[64], cell[64];
	const char *row, *eol, *p;
	snprintf(needle, sizeof needle, " %s | ", key);
	row = strstr(C.out, needle);
	eol = row != NULL ? strchr(row, '\n') : NULL;
	CHECK_MSG(row != NULL && eol != NULL, "no row of %s:\n%s", key, C.out);
	p = row + strlen(needle);
	snprintf(cell, sizeof cell, "%s | ", type);
	while (*p == ' ')
		p++;
	CHECK_MSG(strncmp(p, cell, strlen(cell)) == 0, "%s: not of type %s:\n%s", key, type, C.out);
	p += strlen(cell);
	while (*p == ' ')
		p++;
	if (ttl != NULL)
		CHECK_MSG(strncmp(p, ttl, strlen(ttl)) == 0, "%s: ttl not %s:\n%s", key, ttl,
			  C.out);
	else
		CHECK_MSG(*p >= '1' && *p <= '9', "%s: no ttl:\n%s", key, C.out);
	CHECK_MSG((size_t)(eol - row) > strlen(value) + 1 &&
			  strncmp(eol - strlen(value) - 1, " ", 1) == 0 &&
			  strncmp(eol - strlen(value), value, strlen(value)) == 0,
		  "%s: value not <%s>:\n%s", key, value, C.out);
}

TEST(cql_view_types)
{
	static const char *const cmds[][9] = {
		{"HSET", "h", "f1", "v1", "f2", "v2", NULL},  {"SADD", "s", "m1", "m2", NULL},
		{"ZADD", "z", "1.5", "a", "2", "b", NULL},    {"RPUSH", "l", "x", "y", NULL},
		{"TSADD", "t", "10", "v1", "20", "v2", NULL}, {"EXPIRE", "h", "500", NULL},
	};
	up("redis-view-types");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
		docraft_bytes argv[8];
		docraft_redis_cmd cmd = {0, argv};
		docraft_req req;
		while (cmds[i][cmd.argc] != NULL) {
			argv[cmd.argc] =
				(docraft_bytes){cmds[i][cmd.argc], strlen(cmds[i][cmd.argc])};
			cmd.argc++;
		}
		memset(&req, 0, sizeof req);
		req.data = &w;
		CHECK_OK_MSG(docraft_redis_async(C.client, &req, 0, redis_key_slot(cmds[i][1], 1),
						 &cmd, 1, true, req_done),
			     docraft_errmsg());
		wait_req(&w);
		if (req.status == DOCRAFT_EINVAL && strstr(req.errmsg, "unknown command") != NULL) {
			test_note("skipped: %s", req.errmsg);
			cluster_down();
			return;
		}
		CHECK_MSG(req.status == 0, "%s: %s", cmds[i][0], req.errmsg);
		{
			size_t len;
			const char *r = docraft_result_reply(req.result, 0, &len);
			if (len >= 20 && strncmp(r, "-ERR unknown command", 20) == 0) {
				test_note("skipped: %.*s", (int)len, r);
				docraft_result_free(req.result);
				cluster_down();
				return;
			}
			CHECK_MSG(len > 0 && r[0] != '-', "%s: %.*s", cmds[i][0], (int)len, r);
		}
		docraft_result_free(req.result);
	}
	CHECK_MSG(CLI(30000, "-e", "SELECT * FROM redis_0;") == 0, "SELECT:\n%s",
		  cluster_cli_errors());
	CHECK_MSG(strstr(C.out, "(5 rows)") != NULL, "SELECT * FROM redis_0:\n%s", C.out);
	check_row("h", "hash", NULL, "{f1: v1, f2: v2}");
	check_row("s", "set", "null", "{m1, m2}");
	check_row("z", "zset", "null", "[(1.5, a), (2, b)]");
	check_row("l", "list", "null", "[x, y]");
	check_row("t", "tsdb", "null", "{10: v1, 20: v2}");
	cluster_down();
}

TEST_MAIN(T(bad_args), T(tablets_cover), T(created_once), T(bad_schemas), T(create_fails),
	  T(not_redis), T(routing), T(incr_once), T(cql_view_types), T(cql_view))
