/* Leader balancing on a real cluster (tests/lib/cluster.h: one
 * docraft-master with its defaults, leader balancing on, and three
 * docraft-tserver processes on 127.0.0.1-3).
 *
 *   restarted_tserver_gets_leaders
 *       a table of 6 tablets, RF 3; SIGKILL of tserver 3; once the two
 *       others lead all 6 tablets, tserver 3 restarts on its data: within
 *       30 s it leads at least one tablet and max - min of the tablets led
 *       per tserver is <= 1 (without balancing it would lead none: nothing
 *       else moves a leader back); then, for 3 s, no tablet moves again
 *       (no oscillation) and the master logged at most 12 moves. Then a
 *       second table of 3 tablets: within 30 s each table is led evenly
 *       (u 1/1/1, t 2/2/2: leaders are balanced per table, not only per
 *       tserver).
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them); the
 * processes' logs are shown when the case fails. */
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
#include "proc.h"
#include "test.h"

#include "cluster.h"

#define NTAB 6
#define NTAB_U 3
#define VICTIM 2

/* Tablets led per tserver from `docraft tablets t` (leaders[k] for C.t[k]);
 * the number of tablets with a known leader, -1 if the CLI failed. */
static int leader_counts_of(const char *table, int ntab, struct tablet *t, int leaders[NT])
{
	int n = tablets_of(table, t, ntab), known = 0;
	memset(leaders, 0, NT * sizeof *leaders);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < NT; k++)
			if (strcmp(t[i].leader, C.t[k].addr) == 0) {
				leaders[k]++;
				known++;
			}
	return known;
}

static int leader_counts(struct tablet *t, int leaders[NT])
{
	return leader_counts_of("t", NTAB, t, leaders);
}

/* Master log lines announcing a leader move. */
static int moves_logged(void)
{
	char line[2048];
	int n = 0;
	FILE *f = fopen(C.m.log, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		n += strstr(line, "leader balance: tablet") != NULL;
	fclose(f);
	return n;
}

static bool balanced(const int leaders[NT])
{
	int lo = leaders[0], hi = leaders[0];
	for (int k = 1; k < NT; k++) {
		lo = leaders[k] < lo ? leaders[k] : lo;
		hi = leaders[k] > hi ? leaders[k] : hi;
	}
	return hi - lo <= 1;
}

TEST(restarted_tserver_gets_leaders)
{
	docraft_table_options to = {.num_tablets = NTAB, .replication_factor = 3};
	char err[DOCRAFT_ERRMSG_SIZE], before[NTAB][40];
	docraft_client_options o;
	struct tablet t[NTAB];
	int leaders[NT], known, moves;
	uint64_t end, t0;

	setenv("DOCRAFT_TRACE", "info", 1); /* the master logs each move at info */
	cluster_up("lbal");
	docraft_client_options_init(&o);
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE t (k text, v int, PRIMARY KEY ((k)));",
					      &to),
		     docraft_errmsg());
	tablets_with_leaders("t", t, NTAB, NTAB, 15000);

	CHECK_OK(proc_signal(&C.t[VICTIM].p, SIGKILL));
	CHECK(proc_wait(&C.t[VICTIM].p, 5000, NULL));
	C.t[VICTIM].up = false;
	end = proc_now_ms() + 20000;
	for (;;) {
		known = leader_counts(t, leaders);
		if (known == NTAB && leaders[VICTIM] == 0)
			break;
		CHECK_MSG(proc_now_ms() < end, "20 s after the kill: %d of %d leaders known, "
			  "%d on the killed tserver:\n%s", known, NTAB, leaders[VICTIM], C.out);
		sleep_ms(200);
	}
	test_note("tserver %d killed: leaders %d/%d/%d", VICTIM + 1, leaders[0], leaders[1],
		  leaders[2]);

	tserver_start(VICTIM);
	t0 = proc_now_ms();
	end = t0 + 30000;
	for (;;) {
		known = leader_counts(t, leaders);
		if (known == NTAB && leaders[VICTIM] >= 1 && balanced(leaders))
			break;
		CHECK_MSG(proc_now_ms() < end, "30 s after the restart: leaders %d/%d/%d (%d "
			  "known):\n%s", leaders[0], leaders[1], leaders[2], known, C.out);
		sleep_ms(200);
	}
	moves = moves_logged();
	test_note("tserver %d restarted: leaders %d/%d/%d after %" PRIu64 " ms, %d moves "
		  "instructed", VICTIM + 1, leaders[0], leaders[1], leaders[2],
		  proc_now_ms() - t0, moves);

	/* Settled: nothing moves any more. */
	for (int i = 0; i < NTAB; i++)
		snprintf(before[i], sizeof before[i], "%s", t[i].leader);
	sleep_ms(3000);
	CHECK_EQ_INT(leader_counts(t, leaders), NTAB);
	for (int i = 0; i < NTAB; i++)
		CHECK_MSG(strcmp(before[i], t[i].leader) == 0, "tablet %s: leader %s, then %s",
			  t[i].id, before[i], t[i].leader);
	CHECK_EQ_INT(moves_logged(), moves);
	/* Two moves make 4/2/0 (or 3/3/0) even; a few more may have been
	 * tried between the kill and the master noticing it (they fail). */
	CHECK_MSG(moves >= 1 && moves <= 2 * NTAB, "%d moves", moves);

	/* Per table: a second table of 3 tablets ends led 1/1/1 while t stays
	 * 2/2/2 (counting totals only, 3/3/3 would allow u at 2/1/0). */
	to.num_tablets = NTAB_U;
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE u (k text, v int, PRIMARY KEY ((k)));",
					      &to),
		     docraft_errmsg());
	tablets_with_leaders("u", t, NTAB_U, NTAB_U, 15000);
	t0 = proc_now_ms();
	end = t0 + 30000;
	for (;;) {
		int lu[NT];
		bool done = leader_counts_of("u", NTAB_U, t, lu) == NTAB_U &&
			    leader_counts(t, leaders) == NTAB;
		for (int k = 0; k < NT && done; k++)
			done = lu[k] == 1 && leaders[k] == 2;
		if (done)
			break;
		CHECK_MSG(proc_now_ms() < end, "30 s after CREATE TABLE u: t led %d/%d/%d, u "
			  "%d/%d/%d:\n%s", leaders[0], leaders[1], leaders[2], lu[0], lu[1], lu[2],
			  C.out);
		sleep_ms(200);
	}
	test_note("table u: led 1/1/1 after %" PRIu64 " ms, %d moves in all",
		  proc_now_ms() - t0, moves_logged());
	cluster_down();
}

TEST_MAIN(T(restarted_tserver_gets_leaders))
