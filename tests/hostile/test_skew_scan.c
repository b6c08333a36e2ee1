/* Clock skew (issue 12), black box: a master and three tservers as
 * processes; tserver 1 runs under the clock shim of tests/jepsen/skew.c
 * (LD_PRELOAD, DOCRAFT_SKEW_FILE), its wall clock shifted by a fixed
 * offset; the tservers keep the default --max-clock-skew-ms (500). Table kv
 * (k text primary key, v int) in 4 tablets, RF 3. Tserver 1 is made the
 * leader of a tablet other than tablet 0, and not of tablet 0, whose
 * leader (a correct clock) chooses the read time of whole-table scans.
 *
 *   scan_after_write_on_a_fast_leader (+300 ms, within the maximum skew)
 *       ROUNDS times: write v = i to a key of tserver 1's tablet through
 *       the routing client, then at once scan the whole table and read the
 *       key: both must show v = i. The writes are stamped ahead of the real
 *       clock (checked: the scenario is exercised), so a scan reading every
 *       tablet at tablet 0's time would miss them without the read restart.
 *   clock_beyond_the_maximum_skew (+2000 ms)
 *       A write on tserver 1's tablet is stamped ~2 s ahead. Its followers
 *       apply it but log that they did not adopt the time; a read at that
 *       time on another tablet is refused with CLOCK_SKEW; that tablet's own
 *       read times stay near the real clock (its clock did not jump); point
 *       reads on every tablet answer what was written; every process is up.
 *   list_order_across_a_slower_leader (+60 s, --max-clock-skew-ms 120000)
 *       Table lst (k text primary key, l list<int>) in one tablet. Ten
 *       appends while tserver 1 (fast clock) leads it, then its leadership
 *       moves (targeted transfer) to a tserver whose wall clock is 60 s
 *       behind, far longer than the move takes, ten more appends: the list
 *       reads 0..19 in order. List indexes come from the
 *       tablet's hybrid clock, which every replica raises past the entries
 *       it applies; indexes taken from the new leader's wall clock would
 *       sort its appends before the first ten.
 *
 * MASTER, TSERVER, DOCRAFT and DOCRAFT_SKEW_SO name the executables and the
 * shim (meson sets them). */
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
#include "common/hlc.h"
#include "docdb/key.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

#define NTAB 4
#include "kv.h" /* needs NTAB */
#define ROUNDS 30
#define FAST 0 /* the tserver under the shim */
#define LIST_SKEW_MS 60000

static char skew_file[320];

/* ---- the skewed tserver -------------------------------------------------------------- */

static void write_skew(int ms)
{
	char tmp[340];
	snprintf(tmp, sizeof tmp, "%s.tmp", skew_file);
	FILE *f = fopen(tmp, "w");
	CHECK(f != NULL);
	fprintf(f, "%d\n", ms);
	CHECK_OK(fclose(f));
	CHECK_OK(rename(tmp, skew_file)); /* atomic, as skew.c asks */
}

/* Starts the cluster, then restarts tserver FAST under the shim with its
 * clock ms ahead (before any table exists: nothing to recover). */
static void skewed_cluster_up(const char *tag, int ms)
{
	const char *so = getenv("DOCRAFT_SKEW_SO");
	int st;
	CHECK_MSG(so != NULL && access(so, R_OK) == 0, "DOCRAFT_SKEW_SO not set or missing");
	/* The cases place leaders themselves: the master's leader balancing
	 * would move them back (it moved the fast leader away mid-case). */
	C.master_args[0] = "--leader-balance";
	C.master_args[1] = "off";
	C.master_args[2] = NULL;
	cluster_up(tag);
	snprintf(skew_file, sizeof skew_file, "%s/skew_ms", C.base);
	write_skew(ms);
	proc_signal(&C.t[FAST].p, SIGTERM);
	CHECK_MSG(proc_wait(&C.t[FAST].p, 15000, &st), "tserver %d did not stop", FAST + 1);
	CHECK_OK(setenv("LD_PRELOAD", so, 1));
	CHECK_OK(setenv("DOCRAFT_SKEW_FILE", skew_file, 1));
	tserver_start(FAST);
	CHECK_OK(unsetenv("LD_PRELOAD"));
	CHECK_OK(unsetenv("DOCRAFT_SKEW_FILE"));
	CHECK_MSG(wait_for(all_tservers_live, NULL, 20000), "tserver %d did not come back", FAST + 1);
	test_note("tserver %d runs %+d ms ahead", FAST + 1, ms);
}

/* ---- the table ----------------------------------------------------------------------- */

/* A key <prefix><n> of tablet i (the master splits the space evenly). */
static void key_of_tablet(char *out, size_t cap, const char *prefix, int i)
{
	key_for(out, cap, prefix, (uint32_t)(i * 65536 / NTAB), (uint32_t)((i + 1) * 65536 / NTAB),
		true);
}

/* v of row k in r, or -1 if r has no such row. */
static int64_t value_in(const docraft_result *r, const char *k)
{
	int kc = docraft_result_column_index(r, "k"), vc = docraft_result_column_index(r, "v");
	CHECK(kc >= 0 && vc >= 0);
	for (size_t i = 0; i < docraft_result_nrows(r); i++) {
		docraft_value kv = docraft_result_value(r, i, (size_t)kc);
		if (kv.v.s.len == strlen(k) && memcmp(kv.v.s.p, k, kv.v.s.len) == 0)
			return docraft_result_value(r, i, (size_t)vc).v.i;
	}
	return -1;
}

/* v of k by a point read at read_ht (0: now); *at (may be NULL) gets the
 * time read at. Returns the status. */
static int get_at(const char *k, uint64_t read_ht, int64_t *v, uint64_t *at)
{
	docraft_value key = docraft_value_text(k);
	docraft_result *r = NULL;
	int rv = docraft_get(C.client, "kv", &key, 1, read_ht, &r);
	if (rv != 0)
		return rv;
	*v = value_in(r, k);
	if (at != NULL)
		*at = docraft_result_read_ht(r);
	docraft_result_free(r);
	return 0;
}

static int64_t scan_value(const char *k)
{
	docraft_scan_spec spec;
	docraft_result *r = NULL;
	memset(&spec, 0, sizeof spec);
	CHECK_OK_MSG(docraft_scan(C.client, "kv", &spec, &r), docraft_errmsg());
	int64_t v = value_in(r, k);
	docraft_result_free(r);
	return v;
}

/* Moves leaders until tserver FAST leads some tablet other than 0 and not
 * tablet 0; returns that tablet (bounded). */
static int arrange_leaders(void)
{
	struct tablet tb[NTAB];
	uint64_t end = proc_now_ms() + 60000;
	for (;;) {
		int mine = -1;
		CHECK_EQ_INT(tablets_with_leaders("kv", tb, NTAB, NTAB, 20000), NTAB);
		for (int i = 1; i < NTAB && mine < 0; i++)
			if (strcmp(tb[i].leader, C.t[FAST].addr) == 0)
				mine = i;
		bool first_mine = strcmp(tb[0].leader, C.t[FAST].addr) == 0;
		if (mine > 0 && !first_mine) {
			test_note("tablet %s led by the fast tserver, tablet 0 by %s", tb[mine].id,
				  tb[0].leader);
			return mine;
		}
		CHECK_MSG(proc_now_ms() < end, "could not arrange the leaders");
		if (first_mine) /* to any other voter */
			CHECK_EQ_INT(CLI(10000, "step-down", tb[0].id), 0);
		else /* tablet 1 is not the fast tserver's yet: hand it over */
			CHECK_EQ_INT(CLI(10000, "step-down", tb[1].id, C.t[FAST].addr), 0);
		sleep_ms(500); /* the master learns leaders from heartbeats */
	}
}

static uint64_t wall_us(void)
{
	return hlc_wall_clock(NULL);
}

static bool log_has(const char *path, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n;
	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* For wait_for: every follower of the fast tserver logged a time beyond the
 * maximum clock skew; *missing is the first tserver without the line. */
static bool skew_logged(void *missing)
{
	for (int t = 0; t < NT; t++)
		if (t != FAST && !log_has(C.t[t].log, "beyond the maximum clock skew")) {
			*(int *)missing = t;
			return false;
		}
	return true;
}

/* ---- cases ---------------------------------------------------------------------------- */

TEST(scan_after_write_on_a_fast_leader)
{
	char k[32];
	int ahead = 0;

	skewed_cluster_up("hostile-skew-scan", 300);
	client_open();
	int mine = arrange_leaders();
	key_of_tablet(k, sizeof k, "fast", mine);
	for (int i = 0; i < ROUNDS; i++) {
		int64_t v = -1;
		uint64_t ht = put(k, i);
		if (ht_physical(ht) > wall_us())
			ahead++; /* stamped by the fast clock */
		int64_t seen = scan_value(k);
		CHECK_MSG(seen == i, "round %d: the scan right after the write shows v = %" PRId64,
			  i, seen);
		CHECK_OK(get_at(k, 0, &v, NULL));
		CHECK_EQ_INT((int)v, i);
	}
	test_note("%d of %d writes were stamped ahead of the real clock", ahead, ROUNDS);
	/* Else the leaders moved away and the case proved little. */
	CHECK_MSG(ahead >= ROUNDS / 2, "only %d writes were on the fast leader", ahead);
	all_up();
	cluster_down();
}

TEST(clock_beyond_the_maximum_skew)
{
	char k_fast[32], k_first[32];
	int64_t v = -1;
	uint64_t at = 0;

	skewed_cluster_up("hostile-skew-far", 2000);
	client_open();
	int mine = arrange_leaders();
	key_of_tablet(k_fast, sizeof k_fast, "far", mine);
	key_of_tablet(k_first, sizeof k_first, "first", 0);
	put(k_first, 1);
	uint64_t ht = put(k_fast, 2);
	CHECK_MSG(ht_physical(ht) > wall_us() + 1000000, "the write was not stamped ahead");

	/* The followers of the fast tablet applied the entry without adopting
	 * its time (bounded wait for the log line). */
	int missing = -1;
	CHECK_MSG(wait_for(skew_logged, &missing, 20000), "tserver %d: no clock skew line",
		  missing + 1);
	/* Its time, asked of tablet 0's leader (a correct clock): refused. */
	CHECK_EQ_INT(get_at(k_first, ht, &v, NULL), DOCRAFT_ECLOCKSKEW);
	test_note("refused: %s", docraft_errmsg());
	/* Tablet 0 still reads at its own time: its clock did not jump. */
	CHECK_OK(get_at(k_first, 0, &v, &at));
	CHECK_EQ_INT((int)v, 1);
	CHECK_MSG(ht_physical(at) < ht_physical(ht), "tablet 0 reads at %" PRIu64
		  ", not below the far time %" PRIu64, at, ht);
	/* Correct answers on both tablets, and a write on tablet 0 after it. */
	put(k_first, 3);
	CHECK_OK(get_at(k_first, 0, &v, NULL));
	CHECK_EQ_INT((int)v, 3);
	CHECK_OK(get_at(k_fast, 0, &v, NULL));
	CHECK_EQ_INT((int)v, 2);
	all_up();
	cluster_down();
}

/* lst's one tablet as the master knows it (GetTable). */
static Docraft__GetTableResponse *lst_table(void)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	Docraft__GetTableResponse *resp = NULL;
	struct buf reply = BUF_INIT;
	req.name = "lst";
	CHECK_OK_MSG(client_master_call(C.client, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base,
					&reply),
		     docraft_errmsg());
	resp = docraft__get_table_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	CHECK(resp != NULL && resp->n_tablets == 1);
	return resp;
}

/* Moves the leadership of lst's tablet to tserver FAST (fast) or to another
 * tserver (!fast) with a targeted transfer (StepDown to_raft_id), and waits
 * until the master reports it. Bounded. */
static void lst_led_by_fast(bool fast)
{
	uint64_t end = proc_now_ms() + 60000;
	for (;;) {
		Docraft__GetTableResponse *t = lst_table();
		const Docraft__TabletLocation *loc = t->tablets[0];
		const Docraft__Peer *leader = NULL, *target = NULL;
		for (size_t i = 0; i < loc->n_replicas; i++) {
			const Docraft__Peer *p = loc->replicas[i];
			bool is_fast = strcmp(p->address, C.t[FAST].addr) == 0;
			if (p->raft_id == loc->leader_raft_id)
				leader = p;
			else if (is_fast == fast && target == NULL)
				target = p;
		}
		bool done = leader != NULL && (strcmp(leader->address, C.t[FAST].addr) == 0) == fast;
		if (!done && leader != NULL && target != NULL) {
			Docraft__StepDownRequest req = DOCRAFT__STEP_DOWN_REQUEST__INIT;
			struct buf reply = BUF_INIT;
			req.to_raft_id = target->raft_id;
			/* May fail (e.g. a leader change under way): tried again. */
			(void)client_tablet_call(C.client, "lst", loc->tablet_id, leader->address,
						 DOCRAFT__METHOD__TSERVER_STEP_DOWN, &req.base,
						 &req.tablet_id, &reply);
			buf_free(&reply);
		}
		docraft__get_table_response__free_unpacked(t, NULL);
		if (done)
			return;
		CHECK_MSG(proc_now_ms() < end, "could not move lst's leader");
		sleep_ms(500); /* the master learns leaders from heartbeats */
	}
}

static void lst_append(int i)
{
	docraft_value key = docraft_value_text("x"), item = docraft_value_int(i);
	docraft_op *op = NULL;
	CHECK_OK(docraft_op_list_append(&key, 1, "l", &item, 1, &op));
	CHECK_OK_MSG(docraft_write(C.client, "lst", &op, 1, -1, NULL), docraft_errmsg());
	docraft_op_free(op);
}

TEST(list_order_across_a_slower_leader)
{
	docraft_table_options to = {.num_tablets = 1, .replication_factor = 3};
	docraft_value key = docraft_value_text("x");
	const docraft_value *items = NULL;
	docraft_result *r = NULL;

	/* A skew far longer than the leader change takes (it waits for the
	 * master's view: seconds on a busy machine), so that wall-clock indexes would
	 * really go backwards; the tservers allow it (--max-clock-skew-ms). */
	C.tserver_args[0] = "--max-clock-skew-ms";
	C.tserver_args[1] = "120000";
	C.tserver_args[2] = NULL;
	skewed_cluster_up("hostile-skew-list", LIST_SKEW_MS);
	client_open();
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE lst (k text, l list<int>, "
					      "PRIMARY KEY ((k)));",
					      &to),
		     docraft_errmsg());
	lst_led_by_fast(true);
	for (int i = 0; i < 10; i++)
		lst_append(i);
	lst_led_by_fast(false);
	for (int i = 10; i < 20; i++)
		lst_append(i);
	CHECK_OK_MSG(docraft_get(C.client, "lst", &key, 1, 0, &r), docraft_errmsg());
	CHECK_EQ_INT((int)docraft_result_nrows(r), 1);
	size_t n = docraft_result_elems(r, 0, (size_t)docraft_result_column_index(r, "l"), &items,
					NULL);
	CHECK_EQ_INT((int)n, 20);
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(items[i].v.i == (int64_t)i, "item %zu is %" PRId64 " (order broken)", i,
			  items[i].v.i);
	docraft_result_free(r);
	all_up();
	cluster_down();
	C.tserver_args[0] = NULL;
}

TEST_MAIN(T(scan_after_write_on_a_fast_leader), T(clock_beyond_the_maximum_skew),
	  T(list_order_across_a_slower_leader))
