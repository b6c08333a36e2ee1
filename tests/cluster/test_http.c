/* The HTTP endpoints of real servers (issue 16): a docraft-master and three
 * docraft-tservers (../lib/cluster.h) with --http-address on free ports, a
 * table kv of 3 tablets, RF 3.
 *
 * Case metrics_and_api, one cluster:
 *   metrics_pass_promtool   every server's /metrics is valid for Debian's
 *                           `promtool check metrics` (skipped with a note
 *                           when promtool is absent; the CI installs it)
 *   counters_move           60 writes: docraft_tablet_writes_total and the
 *                           write latency histogram's count grow by 60
 *                           over the cluster (counted on the leaders only),
 *                           the RPC requests by at least that, elections
 *                           won are counted, every replica's applied index advances
 *                           to the leaders' commit index, the master counts
 *                           the RPCs and the tablets healthy
 *   health_and_json         /healthz, /readyz, /api/v1/cluster and
 *                           /api/v1/tablets (checked by python3's json)
 *   cache_counters_move     a table loaded past the memtable budget
 *                           (--memstore-mb 1: flushed to SST files, which
 *                           docraft_tablet_sst_files shows), then
 *                           500 reads: the leader's block cache hits +
 *                           misses grow by 500 at least, the followers'
 *                           stay; promtool still passes
 * Case pages_in_chromium, a cluster of its own:
 *   pages_in_chromium       tserver 3 killed (SIGKILL): headless chromium
 *                           renders the master's overview with it down and
 *                           the table's tablet map with every tablet and
 *                           its replicas on it down (skipped with a note
 *                           when chromium is absent)
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpget.h"
#include "test.h"

#include "cluster.h"

#define NTAB 3
#define NWRITES 60

static struct tablet tabs[NTAB];

static char *get(const char *addr, const char *path)
{
	char *body = NULL;
	int st = http_get(addr, path, &body, 10000);
	CHECK_MSG(st == 200 && body != NULL, "GET http://%s%s: status %d", addr, path, st);
	return body;
}

static void up(void)
{
	/* A 1 MiB memtable budget: cache_counters_move's load is flushed to SST
	 * files, where reads go through the block cache. */
	C.tserver_args[0] = "--memstore-mb";
	C.tserver_args[1] = "1";
	C.tserver_args[2] = NULL;
	cluster_use_http();
	cluster_up("http");
	CHECK_MSG(CLI(30000, "--tablets", "3", "-e",
		      "CREATE TABLE kv (k text PRIMARY KEY, v bigint);") == 0,
		  "create: %s", C.out);
	tablets_with_leaders("kv", tabs, NTAB, NTAB, 20000);
}

static bool promtool_ok(const char *text)
{
	FILE *p = popen("/usr/bin/promtool check metrics >/dev/null 2>&1", "w");
	if (p == NULL)
		return false;
	fwrite(text, 1, strlen(text), p);
	return pclose(p) == 0;
}

/* tablets: how many the master's catalog holds. */
static void metrics_pass_promtool(int tablets)
{
	char *body;
	char want[64];

	/* Every server's loop-lag probe has run (every 100 ms). */
	body = get(C.mhttp, "/metrics");
	CHECK_MSG(strstr(body, "docraft_loop_lag_seconds_count ") != NULL, "%.2000s", body);
	free(body);
	for (int k = 0; k < NT; k++) {
		body = get(C.t[k].http, "/metrics");
		CHECK(strstr(body, "docraft_loop_lag_seconds_count ") != NULL);
		free(body);
	}
	if (access("/usr/bin/promtool", X_OK) != 0) {
		test_note("SKIP: /usr/bin/promtool absent (Debian package prometheus)");
		return;
	}
	body = get(C.mhttp, "/metrics");
	snprintf(want, sizeof want, "docraft_master_tablets %d\n", tablets);
	CHECK_MSG(strstr(body, want) != NULL, "no \"%s\" in the master's /metrics", want);
	CHECK_MSG(promtool_ok(body), "promtool rejects the master's /metrics:\n%.4000s", body);
	free(body);
	for (int k = 0; k < NT; k++) {
		body = get(C.t[k].http, "/metrics");
		CHECK(strstr(body, "docraft_tablet_applied_index{") != NULL);
		CHECK_MSG(promtool_ok(body), "promtool rejects tserver %d's /metrics:\n%.4000s",
			  k + 1, body);
		free(body);
	}
}

static double sum_all(const char *name, const char *tablet, int *count)
{
	char lab[512];
	const char *has[1] = {lab};
	double sum = 0;
	int n = 0, c;

	snprintf(lab, sizeof lab, "tablet=\"%s\"", tablet != NULL ? tablet : "");
	for (int k = 0; k < NT; k++) {
		char *body = get(C.t[k].http, "/metrics");
		sum += metric_sum(body, name, has, tablet != NULL ? 1 : 0, &c);
		n += c;
		free(body);
	}
	if (count != NULL)
		*count = n;
	return sum;
}

/* Every replica of tablet tabs[i] (3 of them) has applied at least want. */
struct applied_want {
	int i;
	double want;
};

/* The master's /metrics count no leaderless and no under-replicated tablet. */
static bool tablets_healthy(void *arg)
{
	char *b = get(C.mhttp, "/metrics");
	bool ok = strstr(b, "docraft_master_tablets_leaderless 0\n") != NULL &&
		  strstr(b, "docraft_master_tablets_under_replicated 0\n") != NULL;
	(void)arg;
	free(b);
	return ok;
}

static bool all_applied(void *arg)
{
	struct applied_want *w = arg;
	char lab[512];
	const char *has[1] = {lab};
	int ok = 0, c;

	snprintf(lab, sizeof lab, "tablet=\"%s\"", tabs[w->i].id);
	for (int k = 0; k < NT; k++) {
		char *body = NULL;
		if (http_get(C.t[k].http, "/metrics", &body, 5000) == 200 && body != NULL &&
		    metric_sum(body, "docraft_tablet_applied_index", has, 1, &c) >= w->want &&
		    c == 1)
			ok++;
		free(body);
	}
	return ok == NT;
}

static void counters_move(void)
{
	static char stmts[NWRITES * 80];
	double writes0, writes1, lat0, lat1, rpc0, applied0[NTAB], commit;
	size_t n = 0;
	char *body;

	writes0 = sum_all("docraft_tablet_writes_total", NULL, NULL);
	lat0 = sum_all("docraft_tablet_write_latency_seconds_count", NULL, NULL);
	rpc0 = sum_all("docraft_rpc_requests_total", NULL, NULL);
	for (int i = 0; i < NTAB; i++)
		applied0[i] = sum_all("docraft_tablet_applied_index", tabs[i].id, NULL);
	for (int i = 0; i < NWRITES; i++)
		n += (size_t)snprintf(stmts + n, sizeof stmts - n,
				      "INSERT INTO kv (k, v) VALUES ('key%d', %d);", i, i);
	CHECK_MSG(CLI(60000, "-e", stmts) == 0, "writes: %s", C.out);
	writes1 = sum_all("docraft_tablet_writes_total", NULL, NULL);
	test_note("docraft_tablet_writes_total over the cluster: %.0f -> %.0f", writes0, writes1);
	/* Counted once per write, by the leader that proposed it: followers
	 * would triple it. */
	CHECK_MSG(writes1 - writes0 >= NWRITES && writes1 - writes0 < 2 * NWRITES,
		  "writes_total grew by %.0f for %d writes", writes1 - writes0, NWRITES);
	/* Each acknowledged write has its latency recorded once (on the
	 * leader), and went through the RPC port as one request at least. */
	lat1 = sum_all("docraft_tablet_write_latency_seconds_count", NULL, NULL);
	CHECK_MSG(lat1 - lat0 >= NWRITES && lat1 - lat0 < 2 * NWRITES,
		  "write latency count grew by %.0f for %d writes", lat1 - lat0, NWRITES);
	CHECK_MSG(sum_all("docraft_rpc_requests_total", NULL, NULL) - rpc0 >= NWRITES,
		  "RPC requests did not grow by %d", NWRITES);
	CHECK_MSG(sum_all("docraft_tablet_elections_won_total", NULL, NULL) >= NTAB,
		  "fewer elections won than tablets");
	for (int i = 0; i < NTAB; i++) {
		struct applied_want w = {i, 0};
		char lab[512];
		const char *has[2] = {lab, "role=\"leader\""};
		int c = 0;
		/* The leader's commit index, then every replica up to it. */
		commit = 0;
		snprintf(lab, sizeof lab, "tablet=\"%s\"", tabs[i].id);
		for (int k = 0; k < NT; k++) {
			char *b = get(C.t[k].http, "/metrics");
			int lead = 0;
			metric_sum(b, "docraft_tablet_role", has, 2, &lead);
			if (lead == 1) {
				commit = metric_sum(b, "docraft_tablet_commit_index", has, 1, &c);
			}
			free(b);
		}
		CHECK_MSG(commit > 0, "no leader reports tablet %s", tabs[i].id);
		w.want = commit;
		CHECK_MSG(wait_for(all_applied, &w, 15000),
			  "tablet %s: not every replica applied up to %.0f", tabs[i].id, commit);
		CHECK_MSG(commit * NT > applied0[i], "tablet %s: applied index did not advance",
			  tabs[i].id);
	}
	body = get(C.mhttp, "/metrics");
	{
		const char *has[1] = {"method=\"MASTER_HEARTBEAT\""};
		int c;
		CHECK(metric_sum(body, "docraft_rpc_requests_total", has, 1, &c) > 0 && c == 1);
		CHECK(metric_sum(body, "docraft_rpc_latency_seconds_count", has, 1, &c) > 0);
	}
	CHECK(strstr(body, "docraft_master_tservers{state=\"live\"} 3\n") != NULL);
	free(body);
	/* A replica counts as live once the tserver's latest heartbeat lists
	 * it in the leader's term: right after writes and elections that can
	 * take a heartbeat period. */
	CHECK_MSG(wait_for(tablets_healthy, NULL, 10000),
		  "the master still counts leaderless or under-replicated tablets");
}

/* Runs python3 on json with a check script: exit 0 when it holds. */
static bool json_holds(const char *json, const char *script)
{
	char path[320], cmd[4800];
	FILE *f;
	int rv;

	snprintf(path, sizeof path, "%s/api.json", C.base);
	f = fopen(path, "w");
	if (f == NULL)
		return false;
	fputs(json, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import json,sys\nd=json.load(open(\"%s\"))\n%s' 1>&2",
		 path, script);
	rv = system(cmd);
	return rv == 0;
}

static void health_and_json(void)
{
	char *body;

	CHECK_EQ_INT(http_get(C.mhttp, "/healthz", NULL, 5000), 200);
	CHECK_EQ_INT(http_get(C.mhttp, "/readyz", NULL, 5000), 200);
	CHECK_EQ_INT(http_get(C.mhttp, "/no/such/page", NULL, 5000), 404);
	CHECK_EQ_INT(http_get(C.mhttp, "/table?name=nosuch", NULL, 5000), 404);
	body = get(C.mhttp, "/api/v1/cluster");
	CHECK_MSG(json_holds(body, "assert d[\"leader\"]\n"
				   "assert len(d[\"tservers\"]) == 3, d\n"
				   "assert all(t[\"live\"] for t in d[\"tservers\"]), d\n"
				   "assert sum(t[\"replicas\"] for t in d[\"tservers\"]) == 9, d\n"
				   "assert [t[\"name\"] for t in d[\"tables\"]] == [\"kv\"], d\n"
				   "ts = [t for t in d[\"tablets\"] if t[\"table\"] == \"kv\"]\n"
				   "assert len(ts) == 3, d\n"
				   "assert all(t[\"health\"] == \"ok\" for t in ts), d\n"
				   "assert all(len(t[\"replicas\"]) == 3 for t in ts), d\n"
				   "assert ts[0][\"partition\"][0] == 0 and ts[-1][\"partition\"][1] == 65536\n"),
		  "master JSON: %.2000s", body);
	free(body);
	for (int k = 0; k < NT; k++) {
		CHECK_EQ_INT(http_get(C.t[k].http, "/healthz", NULL, 5000), 200);
		CHECK_EQ_INT(http_get(C.t[k].http, "/readyz", NULL, 5000), 200);
		body = get(C.t[k].http, "/api/v1/tablets");
		CHECK_MSG(json_holds(body, "assert d[\"ready\"]\n"
					   "ts = [t for t in d[\"tablets\"] if t[\"table\"] == \"kv\"]\n"
					   "assert len(ts) == 3, d\n"
					   "assert all(t[\"state\"] == \"open\" for t in ts), d\n"
					   "assert all(t[\"applied_index\"] > 0 for t in ts), d\n"),
			  "tserver %d JSON: %.2000s", k + 1, body);
		free(body);
	}
}

static bool ts3_down(void *arg)
{
	char *body = NULL;
	bool down = false;
	(void)arg;
	if (http_get(C.mhttp, "/metrics", &body, 5000) == 200 && body != NULL)
		down = strstr(body, "docraft_master_tservers{state=\"dead\"} 1\n") != NULL;
	free(body);
	return down;
}

/* The DOM chromium builds from url, NUL-terminated in out; false if it
 * could not run. */
static bool dump_dom(const char *url, char *out, size_t cap)
{
	char cmd[1024];
	size_t n = 0, r;
	FILE *p;

	snprintf(cmd, sizeof cmd,
		 "timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run "
		 "--user-data-dir=%s/chromium --dump-dom '%s' 2>/dev/null",
		 C.base, url);
	p = popen(cmd, "r");
	if (p == NULL)
		return false;
	while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += r;
	out[n] = '\0';
	return pclose(p) == 0 && n > 0;
}

TEST(pages_in_chromium)
{
	static char dom[1 << 20];
	char url[128], want[512];

	if (access("/usr/bin/chromium", X_OK) != 0) {
		test_note("SKIP: /usr/bin/chromium absent (Debian package chromium)");
		return;
	}
	up();
	proc_signal(&C.t[2].p, SIGKILL);
	proc_wait(&C.t[2].p, 10000, NULL);
	C.t[2].up = false;
	CHECK_MSG(wait_for(ts3_down, NULL, 20000), "the master does not count tserver 3 dead");

	snprintf(url, sizeof url, "http://%s/", C.mhttp);
	CHECK_MSG(dump_dom(url, dom, sizeof dom), "chromium could not load %s", url);
	CHECK_MSG(strstr(dom, "<table id=\"tservers\">") != NULL, "%.3000s", dom);
	snprintf(want, sizeof want, "<td>%s</td><td class=\"down\">down</td>", C.t[2].addr);
	CHECK_MSG(strstr(dom, want) != NULL, "tserver 3 not shown down:\n%.4000s", dom);
	for (int k = 0; k < 2; k++) {
		snprintf(want, sizeof want, "<td>%s</td><td class=\"ok\">live</td>", C.t[k].addr);
		CHECK_MSG(strstr(dom, want) != NULL, "tserver %d not shown live:\n%.4000s", k + 1,
			  dom);
	}
	CHECK(strstr(dom, "href=\"/table?name=kv\"") != NULL);

	snprintf(url, sizeof url, "http://%s/table?name=kv", C.mhttp);
	CHECK_MSG(dump_dom(url, dom, sizeof dom), "chromium could not load %s", url);
	CHECK_MSG(strstr(dom, "id=\"map\"") != NULL, "%.3000s", dom);
	for (int i = 0; i < NTAB; i++) {
		snprintf(want, sizeof want, "title=\"%s\"", tabs[i].id);
		CHECK_MSG(strstr(dom, want) != NULL, "tablet %s not on the map:\n%.4000s",
			  tabs[i].id, dom);
	}
	snprintf(want, sizeof want, "%s (down)", C.t[2].addr);
	CHECK_MSG(count_substr(dom, want) == NTAB, "tserver 3's replicas not shown down:\n%.4000s",
		  dom);
	cluster_down();
}

/* For wait_for: table cache's tablet has SST files on its leader. */
static bool cache_flushed(void *arg)
{
	const struct tablet *t = arg;
	char lab[512];
	const char *has[1] = {lab};
	double files = 0;
	int c;

	snprintf(lab, sizeof lab, "tablet=\"%s\"", t->id);
	for (int k = 0; k < NT; k++) {
		char *body = NULL;
		if (strcmp(C.t[k].addr, t->leader) == 0 &&
		    http_get(C.t[k].http, "/metrics", &body, 5000) == 200 && body != NULL)
			files = metric_sum(body, "docraft_tablet_sst_files", has, 1, &c);
		free(body);
	}
	return files > 0;
}

/* Hits (or misses) of tablet t on tserver k. */
static double cache_count(int k, const struct tablet *t, const char *name)
{
	char lab[512];
	const char *has[1] = {lab};
	char *body = get(C.t[k].http, "/metrics");
	int c = 0;
	double v;

	snprintf(lab, sizeof lab, "tablet=\"%s\"", t->id);
	v = metric_sum(body, name, has, 1, &c);
	free(body);
	CHECK_MSG(c == 1, "tserver %d: %d %s lines for tablet %s", k + 1, c, name, t->id);
	return v;
}

/* Block cache hits and misses move with reads on the leader: a table of one
 * tablet loaded past the memtable budget (flushed to SST files), then read;
 * the followers, which serve no reads, count nothing. */
static void cache_counters_move(void)
{
	struct tablet t;
	double h0[NT], m0[NT], h1, m1;
	int lead = -1, rv;

	rv = CLI(120000, "bench", "--workload", "load", "--table", "cache", "--keys", "1500",
		 "--value-size", "1000", "--clients", "2", "--tablets", "1", "--rf", "3");
	CHECK_MSG(rv == 0, "bench load exited %d:\n%s", rv, C.out);
	tablets_with_leaders("cache", &t, 1, 1, 20000);
	if (!wait_for(cache_flushed, &t, 20000)) {
		for (int k = 0; k < NT; k++) {
			char *b = get(C.t[k].http, "/metrics");
			const char *has[1] = {t.id};
			int c;
			test_note("tserver %d (%s): memtable %.0f sst files %.0f forced flushes %.0f",
				  k + 1, C.t[k].addr,
				  metric_sum(b, "docraft_tablet_memtable_bytes", has, 1, &c),
				  metric_sum(b, "docraft_tablet_sst_files", has, 1, &c),
				  metric_sum(b, "docraft_memtable_forced_flushes_total", NULL, 0, &c));
			free(b);
		}
		CHECK_MSG(false, "tablet %s (leader %s): no SST files on its leader past the "
				 "memtable budget", t.id, t.leader);
	}
	tablets_with_leaders("cache", &t, 1, 1, 20000); /* the leader now */
	for (int k = 0; k < NT; k++) {
		if (strcmp(C.t[k].addr, t.leader) == 0)
			lead = k;
		h0[k] = cache_count(k, &t, "docraft_tablet_block_cache_hits_total");
		m0[k] = cache_count(k, &t, "docraft_tablet_block_cache_misses_total");
	}
	CHECK_MSG(lead >= 0, "leader %s of tablet %s is no tserver of the cluster", t.leader, t.id);
	rv = CLI(120000, "bench", "--workload", "c", "--table", "cache", "--keys", "1500",
		 "--ops", "500", "--clients", "2", "--distribution", "uniform");
	CHECK_MSG(rv == 0, "bench reads exited %d:\n%s", rv, C.out);
	h1 = cache_count(lead, &t, "docraft_tablet_block_cache_hits_total");
	m1 = cache_count(lead, &t, "docraft_tablet_block_cache_misses_total");
	test_note("tablet %s on its leader: block cache hits %.0f -> %.0f, misses %.0f -> %.0f",
		  t.id, h0[lead], h1, m0[lead], m1);
	/* Every read of a flushed key looks at a filter, index or data block
	 * of its SST file at least: the sum grows by at least the reads. */
	CHECK_MSG((h1 - h0[lead]) + (m1 - m0[lead]) >= 500,
		  "hits + misses grew by %.0f for 500 reads", (h1 - h0[lead]) + (m1 - m0[lead]));
	CHECK_MSG(h1 > h0[lead], "no block cache hits counted");
	for (int k = 0; k < NT; k++) {
		if (k == lead)
			continue;
		CHECK_MSG(cache_count(k, &t, "docraft_tablet_block_cache_hits_total") == h0[k] &&
				  cache_count(k, &t, "docraft_tablet_block_cache_misses_total") ==
					  m0[k],
			  "follower on tserver %d counted block cache reads", k + 1);
	}
}

/* One cluster for the four (a case's temp dir goes with it). */
TEST(metrics_and_api)
{
	up();
	metrics_pass_promtool(NTAB);
	counters_move();
	health_and_json();
	cache_counters_move();
	metrics_pass_promtool(NTAB + 1);
	cluster_down();
}

TEST_MAIN(T(metrics_and_api), T(pages_in_chromium))
