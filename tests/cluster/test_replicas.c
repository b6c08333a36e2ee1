/* Many replicas on one tablet server (issue 12, "300 replicas per tserver
 * stay within the budget under load"): one docraft-master and ONE
 * docraft-tserver (127.0.0.1) with a small store budget.
 *
 *   many_replicas  a table of NTAB tablets with one replica each (RF 1),
 *                  all on the one tserver, loaded with `docraft bench`
 *                  (NKEYS writes of VSIZE bytes, 0 errors); the tserver
 *                  stays up, and its peak RSS (VmHWM) stays under a bound
 *                  derived from the budget flags only: block cache +
 *                  memtable budget + Raft log memory + a fixed part + a
 *                  per-replica part, not the bytes written (~2.5 times
 *                  the Raft log part; see rss_bound_kib). Then SIGTERM: the tserver stops cleanly
 *                  (exit 0) — with 300 busy replicas, raft_uv used to be
 *                  freed under a segment writer still closing (SIGSEGV,
 *                  tablet.c raft_closed).
 *   capacity       a tserver started with --max-replicas 3 and a table of 6
 *                  tablets: it hosts 3, refuses the others with the clear,
 *                  retryable "as many as its open-file and AIO limits
 *                  allow" (in its log, for every refused tablet), and stays
 *                  up; its start-up log says how many replicas its limits
 *                  allow.
 *
 * A resource bound, not a timing one: every wait is bounded and only fails
 * the test when the condition never comes. MASTER, TSERVER and DOCRAFT name
 * the executables (meson sets them); REPLICAS_TABLETS overrides NTAB;
 * RAFTLOG0=1 starts the tserver with --raft-log-memory-mb 0 (no byte bound:
 * the test then fails, VmHWM ~378 MiB for a bound of 278). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "docraft/docraft.h"
#include "tablet/tablet.h"
#include "proc.h"
#include "test.h"

#define NT 1
#include "cluster.h"

#define NTAB 300
#define NKEYS "12000"
#define VSIZE "16000" /* 192 MB written: ~2.5 times the bound's Raft log part */
#define CACHE_MB 32
#define MEMSTORE_MB 32
#define RAFT_LOG_MB 16

/* The bound, from the flags and the replica count only, whatever the bytes
 * written: what the flags give RocksDB (block cache, memtables), plus
 * 64 MiB for the process itself (libuv, protobuf, RPC buffers, RocksDB's
 * table readers and arenas), 256 KiB per replica (raft and tablet state,
 * RocksDB's per-DB structures; ~150 KiB measured idle), and Raft's
 * in-memory logs: --raft-log-memory-mb split among the replicas, each
 * share at least TABLET_LOG_FLOOR_BYTES (here the floor binds: 300 x 256
 * KiB). Before the byte bound (tablet.c, "Raft log memory") C-Raft 0.15
 * kept every entry since the last snapshot (4096 entries, 8192 trailing)
 * and this load, 40 entries per tablet, stayed in memory: VmHWM grew with
 * the bytes written (docs/benchmarks.md). */
static unsigned long rss_bound_kib(int replicas)
{
	unsigned long raft = (unsigned long)RAFT_LOG_MB * 1024,
		      floor = (unsigned long)replicas * (TABLET_LOG_FLOOR_BYTES >> 10);
	return ((unsigned long)CACHE_MB + MEMSTORE_MB + 64) * 1024 +
	       (unsigned long)replicas * 256 + (raft > floor ? raft : floor);
}

static bool alive(struct server *s)
{
	int st;
	if (s->p.pid == 0)
		return false;
	return !proc_wait(&s->p, 0, &st);
}

/* Stops tserver k with SIGTERM and returns its wait status (bounded). */
static int stop_tserver(int k)
{
	int st = 0;
	uint64_t t0 = proc_now_ms();
	CHECK(proc_signal(&C.t[k].p, SIGTERM) == 0);
	CHECK_MSG(proc_wait(&C.t[k].p, 60000, &st), "tserver %d did not stop in 60 s", k + 1);
	test_note("tserver %d stopped in %" PRIu64 " ms", k + 1, proc_now_ms() - t0);
	C.t[k].up = false;
	return st;
}

static bool log_has(const char *path, const char *needle, int *count)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	if (count != NULL)
		*count = n;
	return n > 0;
}

static int ntab(void)
{
	const char *e = getenv("REPLICAS_TABLETS");
	return e != NULL && atoi(e) > 0 ? atoi(e) : NTAB;
}

TEST(many_replicas)
{
	char tablets[16], cache[16], memstore[16], raftlog[16];
	int n = ntab(), rv, st;
	snprintf(tablets, sizeof tablets, "%d", n);
	snprintf(cache, sizeof cache, "%d", CACHE_MB);
	snprintf(memstore, sizeof memstore, "%d", MEMSTORE_MB);
	snprintf(raftlog, sizeof raftlog, "%d", getenv("RAFTLOG0") ? 0 : RAFT_LOG_MB);
	C.tserver_args[0] = "--block-cache-mb";
	C.tserver_args[1] = cache;
	C.tserver_args[2] = "--memstore-mb";
	C.tserver_args[3] = memstore;
	C.tserver_args[4] = "--raft-segment-mb";
	C.tserver_args[5] = "1";
	C.tserver_args[6] = "--raft-log-memory-mb";
	C.tserver_args[7] = raftlog;
	C.tserver_args[8] = NULL;
	cluster_up("replicas");
	uint64_t t0 = proc_now_ms();
	CHECK_MSG(log_has(C.t[0].log, "can host ", NULL),
		  "the tserver did not log how many replicas it can host");

	rv = CLI(240000, "--timeout", "60000", "bench", "--workload", "load", "--keys", NKEYS,
		 "--value-size", VSIZE, "--clients", "8", "--tablets", tablets, "--rf", "1");
	CHECK_MSG(rv == 0, "docraft bench exited %d:\n%s", rv, C.out);
	CHECK_MSG(strstr(C.out, "errors 0\n") != NULL && strstr(C.out, "summary: ops " NKEYS) != NULL,
		  "bench did not write " NKEYS " keys without errors:\n%s", C.out);
	CHECK_MSG(alive(&C.t[0]), "the tserver died under the load");
	test_note("table of %d tablets created and loaded in %" PRIu64 " ms", n,
		  proc_now_ms() - t0);

	long hwm = test_status_kib(C.t[0].p.pid, "VmHWM");
	long rss = test_status_kib(C.t[0].p.pid, "VmRSS");
	test_note("%d replicas, budget %d + %d + %d MiB: VmRSS %ld MiB, VmHWM %ld MiB, bound %lu MiB",
		  n, CACHE_MB, MEMSTORE_MB, RAFT_LOG_MB, rss >> 10, hwm >> 10, rss_bound_kib(n) >> 10);
	CHECK_MSG(hwm > 0, "no VmHWM for pid %d", (int)C.t[0].p.pid);
	CHECK_MSG((unsigned long)hwm <= rss_bound_kib(n), "VmHWM %ld KiB over the bound %lu KiB", hwm,
		  rss_bound_kib(n));

	st = stop_tserver(0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the tserver did not stop cleanly: %s %d", WIFSIGNALED(st) ? "signal" : "exit",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	cluster_down();
}

#define REFUSED "as many as its open-file and AIO limits allow"

/* For wait_for: tserver 1's log tells of a refused create. */
static bool create_refused(void *count)
{
	return log_has(C.t[0].log, REFUSED, count);
}

TEST(capacity)
{
	int refused = 0;
	C.tserver_args[0] = "--max-replicas";
	C.tserver_args[1] = "3";
	C.tserver_args[2] = NULL;
	cluster_up("capacity");
	/* The statement may or may not come back before its timeout (the
	 * table cannot become whole here): only what the tserver does counts. */
	(void)CLI(20000, "--timeout", "5000", "--tablets", "6", "--rf", "1", "-e",
		  "CREATE TABLE capped (k int PRIMARY KEY, v text);");
	CHECK_MSG(wait_for(create_refused, &refused, 30000), "no create refused in 30 s");
	CHECK_MSG(alive(&C.t[0]), "the tserver died");
	int opened = 0;
	log_has(C.t[0].log, " opened: raft id", &opened);
	CHECK_EQ_INT(opened, 3);
	CHECK_MSG(log_has(C.t[0].log, "--max-replicas overrides it", NULL),
		  "the start-up log does not say the limit was overridden");
	int st = stop_tserver(0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the tserver did not stop cleanly");
	cluster_down();
}

TEST_MAIN(T(many_replicas), T(capacity))
