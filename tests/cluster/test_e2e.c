/* End-to-end tests of a whole local cluster: one docraft-master on
 * 127.0.0.1 and three docraft-tserver processes on 127.0.0.1-3, driven with
 * the docraft CLI (spawned, stdout captured) and the routing client library.
 *
 *   seeds_through_the_cli   the seeds' statements (msgs T1-T5, page_views with
 *                           TTLs) through `docraft -e`, SELECT outputs checked;
 *                           `docraft tablets msgs` shows 8 tablets with
 *                           leaders; `docraft dump` of user1's tablet shows
 *                           the seed layout
 *   step_down_while_writing 1000 client writes, every tablet's leader asked to
 *                           step down after 200; no write fails, all read back
 *   step_down_to_each_replica `docraft step-down <tablet> <addr>` hands the
 *                           leadership to each tserver in turn; an address
 *                           that is no replica is refused
 *   tserver_killed          SIGKILL of a tserver leading tablets while writing;
 *                           every write succeeds (max latency printed)
 *   master_restarted        the master stopped: writes and reads keep working
 *                           from the client's cache; restarted on its data
 *                           dir it still lists msgs, and writes work
 *   conditional_writes      docraft_op_if through the client: a CAS that
 *                           holds, one that does not (ECONDITION, "condition
 *                           not met", nothing applied), "if absent", several
 *                           ops on one tablet, ops on two tablets (EINVAL),
 *                           bad columns and values (EINVAL); CQL UPDATE ...
 *                           IF through the CLI prints [applied] True/False
 *   largest_value           a blob of 4 MiB (DocDB's largest value) written
 *                           through the client and read back byte for byte
 *                           from the leader; one byte more is refused
 *                           (ETOOBIG, naming the limit), nothing stored
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). Each
 * process's stderr goes to <tmp>/<name>.log; the logs' tails are shown when a
 * case fails. */
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

#include "docraft/docraft.h"
#include "proc.h"
#include "test.h"

#include "cluster.h"

/* ---- client ------------------------------------------------------------------------- */

static void client_open(void)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_client_options_init(&o);
	o.num_tablets = 8;
	o.replication_factor = 3;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
}

static void create_msgs(void)
{
	docraft_table_options to = {.num_tablets = 8, .replication_factor = 3};
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE msgs (user_id text, msg_id int, msg text, "
					      "msg_props map<text, text>, PRIMARY KEY ((user_id), msg_id));",
					      &to),
		     docraft_errmsg());
}

/* Writes row i: ('u<i % 37>', i) -> msg 'm<i>'; returns its latency in ms. */
static uint64_t write_row(int i)
{
	char user[32], msg[32];
	docraft_op *op = NULL;
	snprintf(user, sizeof user, "u%d", i % 37);
	snprintf(msg, sizeof msg, "m%d", i);
	docraft_value key[2] = {docraft_value_text(user), docraft_value_int(i)};
	docraft_value v = docraft_value_text(msg);
	CHECK_OK(docraft_op_insert(key, 2, &op));
	CHECK_OK(docraft_op_column(op, "msg", &v));
	uint64_t t0 = proc_now_ms();
	int rv = docraft_write(C.client, "msgs", &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	uint64_t dt = proc_now_ms() - t0;
	docraft_op_free(op);
	CHECK_MSG(rv == 0, "write of row %d failed after %" PRIu64 " ms: %d %s", i, dt, rv,
		  docraft_errmsg());
	return dt;
}

static void check_row(int i)
{
	char user[32], msg[32];
	docraft_result *r = NULL;
	snprintf(user, sizeof user, "u%d", i % 37);
	snprintf(msg, sizeof msg, "m%d", i);
	docraft_value key[2] = {docraft_value_text(user), docraft_value_int(i)};
	int rv = docraft_get(C.client, "msgs", key, 2, 0, &r);
	CHECK_MSG(rv == 0, "get of row %d failed: %d %s", i, rv, docraft_errmsg());
	CHECK_MSG(docraft_result_nrows(r) == 1, "row %d: %zu rows", i, docraft_result_nrows(r));
	int col = docraft_result_column_index(r, "msg");
	CHECK(col >= 0);
	docraft_value v = docraft_result_value(r, 0, (size_t)col);
	bool ok = v.type == DOCRAFT_TYPE_TEXT && v.v.s.len == strlen(msg) &&
		  memcmp(v.v.s.p, msg, v.v.s.len) == 0;
	docraft_result_free(r);
	CHECK_MSG(ok, "row %d: wrong msg", i);
}

/* ---- cases -------------------------------------------------------------------------- */

static const char SEEDS[] =
	"CREATE TABLE msgs (user_id text, msg_id int, msg text, msg_props map<text, text>,\n"
	"                   PRIMARY KEY ((user_id), msg_id));\n"
	"INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	"       VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'});\n"
	"UPDATE msgs SET msg_props = msg_props + {'read_status' : 'true'}\n"
	"       WHERE user_id = 'user1' AND msg_id = 10;\n"
	"INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	"       VALUES ('user1', 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'});\n"
	"SELECT * FROM msgs WHERE user_id = 'user1';\n"
	"DELETE msg_props FROM msgs WHERE user_id = 'user1' AND msg_id = 10;\n"
	"SELECT * FROM msgs WHERE user_id = 'user1';\n"
	"DELETE FROM msgs WHERE user_id = 'user1' AND msg_id = 10;\n"
	"SELECT * FROM msgs WHERE user_id = 'user1';\n"
	"CREATE TABLE page_views (page_id text, views int, category text,\n"
	"                         PRIMARY KEY ((page_id)));\n"
	"INSERT INTO page_views (page_id, views) VALUES ('abc.com', 10) USING TTL 86400;\n"
	"UPDATE page_views USING TTL 3600 SET category = 'news' WHERE page_id = 'abc.com';\n"
	"SELECT * FROM page_views WHERE page_id = 'abc.com';\n";

/* The SELECT outputs, in order (cqlsh layout, as the CLI prints them). */
static const char *const SELECTS[] = {
	" user_id | msg_id |  msg |                                                      msg_props\n"
	"---------+--------+------+----------------------------------------------------------------\n"
	"   user1 |     10 | msg1 | {'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}\n"
	"   user1 |     20 | msg2 |                          {'from': 'c@d.com', 'subject': 'bar'}\n"
	"\n(2 rows)\n",
	" user_id | msg_id |  msg |                             msg_props\n"
	"---------+--------+------+---------------------------------------\n"
	"   user1 |     10 | msg1 |                                  null\n"
	"   user1 |     20 | msg2 | {'from': 'c@d.com', 'subject': 'bar'}\n"
	"\n(2 rows)\n",
	" user_id | msg_id |  msg |                             msg_props\n"
	"---------+--------+------+---------------------------------------\n"
	"   user1 |     20 | msg2 | {'from': 'c@d.com', 'subject': 'bar'}\n"
	"\n(1 rows)\n",
	" page_id | views | category\n"
	"---------+-------+----------\n"
	" abc.com |    10 |     news\n"
	"\n(1 rows)\n",
};

TEST(seeds_through_the_cli)
{
	struct tablet t[16];
	cluster_up("e2e-seeds");

	int rv = CLI(60000, "--tablets", "8", "--rf", "3", "-e", SEEDS);
	CHECK_MSG(rv == 0, "docraft -e <seeds> exited %d; stdout:\n%s", rv, C.out);
	/* Every expected SELECT output, in order, and nothing else. */
	size_t want_len = 0;
	const char *p = C.out;
	for (size_t i = 0; i < sizeof SELECTS / sizeof SELECTS[0]; i++) {
		const char *at = strstr(p, SELECTS[i]);
		CHECK_MSG(at != NULL, "SELECT %zu: expected\n%s\ngot the whole output\n%s", i + 1,
			  SELECTS[i], C.out);
		p = at + strlen(SELECTS[i]);
		want_len += strlen(SELECTS[i]);
	}
	CHECK_EQ_INT(count_substr(C.out, " rows)"), 4);
	CHECK_MSG(C.out_len <= want_len + 8, "unexpected extra output:\n%s", C.out);

	/* 8 tablets, each with a leader (leaders reach the master by heartbeat). */
	int n = tablets_with_leaders("msgs", t, 16, 8, 10000);
	CHECK_EQ_INT(n, 8);

	/* The tablet holding user1: the one whose dump mentions it. */
	int found = -1;
	for (int i = 0; i < n && found < 0; i++) {
		rv = CLI(10000, "dump", t[i].id);
		CHECK_MSG(rv == 0, "docraft dump %s exited %d:\n%s", t[i].id, rv, C.out);
		if (strstr(C.out, "'user1'") != NULL)
			found = i;
	}
	CHECK_MSG(found >= 0, "no tablet's dump mentions 'user1'");
	test_note("user1 lives in %s (leader %s)", t[found].id, t[found].leader);
	static const char *const layout[] = {
		"'user1', 20), liveness_column_id, HT(",
		"'user1', 20), msg_column_id, HT(",
		"'user1', 20), msg_props_column_id, 'from', HT(",
		"'user1', 20), msg_props_column_id, 'subject', HT(",
		"'user1', 10), msg_props_column_id, 'read_status', HT(",
		"'user1', 10), msg_props_column_id, HT(",
	};
	for (size_t i = 0; i < sizeof layout / sizeof layout[0]; i++)
		CHECK_MSG(strstr(C.out, layout[i]) != NULL, "dump lacks \"%s\":\n%s", layout[i],
			  C.out);
	CHECK_MSG(strstr(C.out, "-> 'msg2'") != NULL && strstr(C.out, "-> 'c@d.com'") != NULL &&
			  strstr(C.out, "-> 'bar'") != NULL,
		  "dump lacks row 20's values:\n%s", C.out);
	/* T5: the row tombstone of ('user1', 10), a line of its own. */
	bool tomb = false;
	for (const char *l = C.out; l != NULL && *l != '\0' && !tomb;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl != NULL ? (size_t)(nl - l) : strlen(l);
		char line[1024];
		snprintf(line, sizeof line, "%.*s", (int)len, l);
		const char *k = strstr(line, "'user1', 10), HT(");
		tomb = k != NULL && strstr(k, ") -> [DELETE]") != NULL;
		l = nl != NULL ? nl + 1 : NULL;
	}
	CHECK_MSG(tomb, "dump lacks the row tombstone \"'user1', 10), HT(...) -> [DELETE]\":\n%s",
		  C.out);
	/* The map tombstone of T4. */
	CHECK_MSG(strstr(C.out, "'user1', 10), msg_props_column_id, HT(") != NULL, "no T4");
	cluster_down();
}

struct moved {
	const struct tablet *before;
	int n, moved;
};

/* Every tablet has a leader and at least one of them is not the one it had
 * in m->before (the master's view, from heartbeats). */
static bool leaders_moved(void *arg)
{
	struct moved *m = arg;
	struct tablet now[16];
	int n = tablets_of("msgs", now, 16);
	m->moved = 0;
	if (n != 8)
		return false;
	for (int k = 0; k < n; k++) {
		if (strchr(now[k].leader, ':') == NULL)
			return false;
		for (int j = 0; j < m->n; j++)
			if (strcmp(m->before[j].id, now[k].id) == 0 &&
			    strcmp(m->before[j].leader, now[k].leader) != 0)
				m->moved++;
	}
	return m->moved > 0;
}

TEST(step_down_while_writing)
{
	struct tablet t[16];
	cluster_up("e2e-stepdown");
	client_open();
	create_msgs();
	int n = tablets_with_leaders("msgs", t, 16, 8, 15000);
	uint64_t max_ms = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t dt = write_row(i);
		if (dt > max_ms)
			max_ms = dt;
		if (i == 200) {
			for (int k = 0; k < n; k++) {
				int rv = CLI(15000, "step-down", t[k].id);
				CHECK_MSG(rv == 0, "docraft step-down %s exited %d:\n%s", t[k].id, rv,
					  C.out);
			}
			test_note("stepped down the leaders of %d tablets after 200 writes", n);
		}
	}
	test_note("1000 writes, max write latency %" PRIu64 " ms", max_ms);
	/* Leaders reach the master with heartbeats (every 1 s). */
	struct moved m = {t, n, 0};
	CHECK_MSG(wait_for(leaders_moved, &m, 15000),
		  "no leader moved after step-down of every tablet:\n%s", C.out);
	test_note("%d of %d tablet leaders moved", m.moved, n);
	for (int i = 0; i < 1000; i++)
		check_row(i);
	cluster_down();
}

struct leads {
	const char *tablet;
	const char *addr;
};

static bool leads_now(void *arg)
{
	struct leads *l = arg;
	struct tablet t[16];
	int n = tablets_of("msgs", t, 16);
	for (int i = 0; i < n; i++)
		if (strcmp(t[i].id, l->tablet) == 0)
			return strcmp(t[i].leader, l->addr) == 0;
	return false;
}

/* docraft step-down <tablet> <addr> hands the leadership to that replica,
 * whatever the configuration order (C-Raft's own pick of "any up-to-date
 * voter" is not), also when it already leads; an address that is no
 * replica of the tablet is refused. */
TEST(step_down_to_each_replica)
{
	struct tablet t[16];
	cluster_up("e2e-stepdown-to");
	client_open();
	create_msgs();
	tablets_with_leaders("msgs", t, 16, 8, 15000);
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < NT; k++) {
			struct leads l = {t[0].id, C.t[k].addr};
			int rv = CLI(15000, "step-down", t[0].id, C.t[k].addr);
			CHECK_MSG(rv == 0, "docraft step-down %s %s exited %d:\n%s", t[0].id,
				  C.t[k].addr, rv, C.out);
			CHECK_MSG(wait_for(leads_now, &l, 15000), "%s does not lead %s", l.addr,
				  l.tablet);
		}
	CHECK(CLI(15000, "step-down", t[0].id, "127.0.0.9:1") != 0); /* no replica there */
	test_note("tablet %s led by each of %d tservers in turn, twice", t[0].id, NT);
	cluster_down();
}

TEST(tserver_killed)
{
	struct tablet t[16];
	cluster_up("e2e-kill");
	client_open();
	create_msgs();
	int n = tablets_with_leaders("msgs", t, 16, 8, 15000);
	uint64_t max_before = 0, max_after = 0;
	for (int i = 0; i < 300; i++) {
		uint64_t dt = write_row(i);
		if (dt > max_before)
			max_before = dt;
	}
	/* The tserver leading the first tablet. */
	int victim = -1;
	for (int k = 0; k < NT; k++)
		if (strcmp(C.t[k].addr, t[0].leader) == 0)
			victim = k;
	CHECK_MSG(victim >= 0, "leader %s of %s is no tserver of ours", t[0].leader, t[0].id);
	int led = 0;
	for (int j = 0; j < n; j++)
		led += strcmp(t[j].leader, C.t[victim].addr) == 0;
	test_note("SIGKILL tserver %s (leads %d of %d tablets)", C.t[victim].addr, led, n);
	CHECK_OK(proc_signal(&C.t[victim].p, SIGKILL));
	CHECK(proc_wait(&C.t[victim].p, 5000, NULL));
	C.t[victim].up = false;
	uint64_t t0 = proc_now_ms();
	for (int i = 300; i < 900; i++) {
		uint64_t dt = write_row(i);
		if (dt > max_after)
			max_after = dt;
	}
	test_note("max write latency: %" PRIu64 " ms before the kill, %" PRIu64
		  " ms after (600 writes in %" PRIu64 " ms)",
		  max_before, max_after, proc_now_ms() - t0);
	CHECK_MSG(max_after < 10000, "a write took %" PRIu64 " ms", max_after);
	for (int i = 0; i < 900; i++)
		check_row(i);
	cluster_down();
}

/* For wait_for: `docraft tables` lists the table msgs. */
static bool msgs_listed(void *unused)
{
	(void)unused;
	return CLI(10000, "tables") == 0 && strstr(C.out, "CREATE TABLE msgs (") != NULL;
}

TEST(master_restarted)
{
	cluster_up("e2e-master");
	client_open();
	create_msgs();
	struct tablet t[16];
	tablets_with_leaders("msgs", t, 16, 8, 15000);
	for (int i = 0; i < 200; i++)
		write_row(i);
	int st = 0;
	CHECK_OK(proc_signal(&C.m.p, SIGTERM));
	CHECK_MSG(proc_wait(&C.m.p, 10000, &st), "the master did not stop");
	C.m.up = false;
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "master exit status 0x%x", st);
	/* The master is down: the cache serves. */
	uint64_t max_ms = 0;
	for (int i = 200; i < 400; i++) {
		uint64_t dt = write_row(i);
		if (dt > max_ms)
			max_ms = dt;
	}
	for (int i = 0; i < 400; i++)
		check_row(i);
	test_note("200 writes with the master down, max latency %" PRIu64 " ms", max_ms);
	master_start();
	CHECK_MSG(wait_for(msgs_listed, NULL, 20000), "after the restart, `docraft tables`:\n%s",
		  C.out);
	write_row(400);
	check_row(400);
	/* A CLI write through the restarted master too. */
	int rv = CLI(20000, "-e",
		     "INSERT INTO msgs (user_id, msg_id, msg) VALUES ('after', 1, 'restart');\n"
		     "SELECT * FROM msgs WHERE user_id = 'after';");
	CHECK_MSG(rv == 0 && strstr(C.out, "restart") != NULL && strstr(C.out, "(1 rows)") != NULL,
		  "CLI write after restart exited %d:\n%s", rv, C.out);
	cluster_down();
}

/* msgs row (user, id)'s msg, or "" when the row or msg is missing. */
static const char *msg_of(const char *user, int id)
{
	static char out[64];
	docraft_result *r = NULL;
	docraft_value key[2] = {docraft_value_text(user), docraft_value_int(id)};
	int rv = docraft_get(C.client, "msgs", key, 2, 0, &r);
	CHECK_MSG(rv == 0, "get (%s, %d): %d %s", user, id, rv, docraft_errmsg());
	out[0] = '\0';
	if (docraft_result_nrows(r) == 1) {
		docraft_value v = docraft_result_value(r, 0, (size_t)docraft_result_column_index(r, "msg"));
		if (v.type == DOCRAFT_TYPE_TEXT)
			snprintf(out, sizeof out, "%.*s", (int)v.v.s.len, v.v.s.p);
	}
	docraft_result_free(r);
	return out;
}

/* An op setting msg of (user, id) to msg; with a condition on msg when
 * cond_col is given (expected NULL: "msg has no value"). */
static docraft_op *set_msg(const char *user, int id, const char *msg, const char *cond_col,
			   const docraft_value *expected)
{
	docraft_op *op = NULL;
	docraft_value key[2] = {docraft_value_text(user), docraft_value_int(id)};
	docraft_value v = docraft_value_text(msg);
	CHECK_OK(docraft_op_update(key, 2, &op));
	CHECK_OK(docraft_op_column(op, "msg", &v));
	if (cond_col != NULL)
		CHECK_OK(docraft_op_if(op, cond_col, expected));
	return op;
}

/* Writes the ops (freeing them); returns docraft_write's code. */
static int write_ops(docraft_op **ops, size_t n)
{
	int rv = docraft_write(C.client, "msgs", ops, n, DOCRAFT_TTL_DEFAULT, NULL);
	for (size_t i = 0; i < n; i++)
		docraft_op_free(ops[i]);
	return rv;
}

TEST(conditional_writes)
{
	struct tablet t[16];
	docraft_value a = docraft_value_text("a"), b = docraft_value_text("b");
	docraft_value never = docraft_value_text("never"), one = docraft_value_int(1);
	docraft_op *ops[2];
	int rv;
	cluster_up("e2e-cas");
	client_open();
	create_msgs();
	tablets_with_leaders("msgs", t, 16, 8, 15000);

	/* If absent: the first applies, the second is refused. */
	ops[0] = set_msg("c1", 1, "a", "msg", NULL);
	CHECK_OK_MSG(write_ops(ops, 1), docraft_errmsg());
	CHECK_EQ_STR(msg_of("c1", 1), "a");
	ops[0] = set_msg("c1", 1, "z", "msg", NULL);
	CHECK_EQ_INT(write_ops(ops, 1), DOCRAFT_ECONDITION);
	CHECK_EQ_STR(docraft_errmsg(), "condition not met");
	CHECK_EQ_STR(msg_of("c1", 1), "a");

	/* Compare-and-set a -> b holds; the same again (a -> b) does not. */
	ops[0] = set_msg("c1", 1, "b", "msg", &a);
	CHECK_OK_MSG(write_ops(ops, 1), docraft_errmsg());
	CHECK_EQ_STR(msg_of("c1", 1), "b");
	ops[0] = set_msg("c1", 1, "c", "msg", &a);
	rv = write_ops(ops, 1);
	CHECK_MSG(rv == DOCRAFT_ECONDITION, "stale CAS: %d %s", rv, docraft_errmsg());
	CHECK_EQ_STR(docraft_errmsg(), "condition not met");
	CHECK_EQ_STR(msg_of("c1", 1), "b");

	/* Two ops of one user (one tablet), the condition on the first op's
	 * row: both apply or neither. */
	ops[0] = set_msg("c1", 1, "c", "msg", &b);
	ops[1] = set_msg("c1", 2, "second", NULL, NULL);
	CHECK_OK_MSG(write_ops(ops, 2), docraft_errmsg());
	CHECK_EQ_STR(msg_of("c1", 1), "c");
	CHECK_EQ_STR(msg_of("c1", 2), "second");
	ops[0] = set_msg("c1", 1, "d", NULL, NULL);
	ops[1] = set_msg("c1", 2, "third", "msg", &never);
	CHECK_EQ_INT(write_ops(ops, 2), DOCRAFT_ECONDITION);
	CHECK_EQ_STR(msg_of("c1", 1), "c");
	CHECK_EQ_STR(msg_of("c1", 2), "second");

	/* Ops on two tablets with a condition: EINVAL before anything is sent.
	 * Which users share a tablet is the hash's business: with a false
	 * condition, a pair on one tablet answers ECONDITION (nothing applied),
	 * a pair on two tablets EINVAL; 8 tablets make 40 misses unlikely. */
	int found = 0;
	for (int k = 0; k < 40 && !found; k++) {
		char user[16];
		snprintf(user, sizeof user, "p%d", k);
		ops[0] = set_msg("c1", 1, "e", "msg", &never);
		ops[1] = set_msg(user, 1, "e", NULL, NULL);
		rv = write_ops(ops, 2);
		CHECK_MSG(rv == DOCRAFT_ECONDITION || rv == DOCRAFT_EINVAL, "%s: %d %s", user, rv,
			  docraft_errmsg());
		if (rv == DOCRAFT_EINVAL) {
			CHECK_MSG(strstr(docraft_errmsg(), "one tablet") != NULL, "%s",
				  docraft_errmsg());
			found = 1;
		}
		CHECK_EQ_STR(msg_of(user, 1), "");
	}
	CHECK_MSG(found, "no user on another tablet than c1");
	CHECK_EQ_STR(msg_of("c1", 1), "c");

	/* Bad conditions fail before anything is sent. */
	ops[0] = set_msg("c1", 1, "f", "nope", &a);
	CHECK_EQ_INT(write_ops(ops, 1), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(docraft_errmsg(), "no column 'nope'") != NULL, "%s", docraft_errmsg());
	ops[0] = set_msg("c1", 1, "f", "msg", &one); /* an int for a text column */
	CHECK_EQ_INT(write_ops(ops, 1), DOCRAFT_EINVAL);
	ops[0] = set_msg("c1", 1, "f", "msg_id", &one); /* a key column */
	CHECK_EQ_INT(write_ops(ops, 1), DOCRAFT_EINVAL);
	ops[0] = set_msg("c1", 1, "f", "msg_props", NULL); /* a map */
	CHECK_EQ_INT(write_ops(ops, 1), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_op_if(NULL, "msg", &a), DOCRAFT_EINVAL);
	CHECK_EQ_STR(msg_of("c1", 1), "c");

	/* CQL: UPDATE ... IF, answered like cqlsh. */
	rv = CLI(20000, "-e",
		 "UPDATE msgs SET msg = 'cql' WHERE user_id = 'c1' AND msg_id = 1 IF msg = 'c';");
	CHECK_MSG(rv == 0 && strstr(C.out, "[applied]") != NULL && strstr(C.out, "True") != NULL,
		  "CQL CAS exited %d:\n%s", rv, C.out);
	CHECK_EQ_STR(msg_of("c1", 1), "cql");
	rv = CLI(20000, "-e",
		 "UPDATE msgs SET msg = 'no' WHERE user_id = 'c1' AND msg_id = 1 IF msg = 'c';");
	CHECK_MSG(rv == 0 && strstr(C.out, "[applied]") != NULL && strstr(C.out, "False") != NULL,
		  "stale CQL CAS exited %d:\n%s", rv, C.out);
	CHECK_EQ_STR(msg_of("c1", 1), "cql");
	rv = CLI(20000, "-e",
		 "UPDATE msgs SET msg = 'n' WHERE user_id = 'c9' AND msg_id = 1 IF msg = NULL;");
	CHECK_MSG(rv == 0 && strstr(C.out, "True") != NULL, "CQL IF NULL exited %d:\n%s", rv,
		  C.out);
	CHECK_EQ_STR(msg_of("c9", 1), "n");
	cluster_down();
}

/* Reads blobs row k's v into a fresh copy (*len its length); NULL when the
 * row or the value is absent. */
static uint8_t *blob_of(const char *k, size_t *len)
{
	docraft_result *r = NULL;
	docraft_value key = docraft_value_text(k);
	uint8_t *copy = NULL;
	int rv = docraft_get(C.client, "blobs", &key, 1, 0, &r);
	CHECK_MSG(rv == 0, "get of %s: %d %s", k, rv, docraft_errmsg());
	int col = docraft_result_column_index(r, "v");
	if (docraft_result_nrows(r) == 1 && col >= 0) {
		docraft_value v = docraft_result_value(r, 0, (size_t)col);
		if (v.type == DOCRAFT_TYPE_BLOB) {
			*len = v.v.s.len;
			copy = malloc(*len ? *len : 1);
			CHECK(copy != NULL);
			memcpy(copy, v.v.s.p, *len);
		}
	}
	docraft_result_free(r);
	return copy;
}

static int write_blob(const char *k, const uint8_t *p, size_t len)
{
	docraft_value key = docraft_value_text(k), v = docraft_value_blob(p, len);
	docraft_op *op = NULL;
	CHECK_OK(docraft_op_insert(&key, 1, &op));
	CHECK_OK(docraft_op_column(op, "v", &v));
	int rv = docraft_write(C.client, "blobs", &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	docraft_op_free(op);
	return rv;
}

TEST(largest_value)
{
	/* DOCWRITE_MAX_VALUE, the limit docs/ name: this test sees only
	 * the public API, so it states the number. */
	const size_t max = (size_t)4 << 20;
	docraft_table_options to = {.num_tablets = 2, .replication_factor = 3};
	uint64_t seed = test_seed();
	uint8_t *big = malloc(max + 1), *got;
	size_t len = 0;
	int rv;
	CHECK(big != NULL);
	for (size_t i = 0; i <= max; i++)
		big[i] = (uint8_t)test_rand(&seed);
	cluster_up("e2e-big");
	client_open();
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE blobs (k text PRIMARY KEY, v blob);", &to),
		     docraft_errmsg());
	CHECK_OK_MSG(write_blob("max", big, max), docraft_errmsg());
	got = blob_of("max", &len);
	CHECK_MSG(got != NULL && len == max && memcmp(got, big, max) == 0,
		  "the 4 MiB value read back %s (%zu bytes)", got ? "differs" : "absent", len);
	free(got);
	rv = write_blob("over", big, max + 1);
	CHECK_MSG(rv == DOCRAFT_ETOOBIG && strstr(docraft_errmsg(), "4194304") != NULL,
		  "4 MiB + 1: %d %s", rv, docraft_errmsg());
	CHECK(blob_of("over", &len) == NULL);
	free(big);
	cluster_down();
}

TEST_MAIN(T(seeds_through_the_cli), T(step_down_while_writing), T(step_down_to_each_replica),
	  T(tserver_killed),
	  T(master_restarted), T(conditional_writes), T(largest_value))
