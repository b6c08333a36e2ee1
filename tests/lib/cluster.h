/* The real-process cluster of the cluster, hostile and master tests: a
 * docraft-master and NT docraft-tservers on 127.0.0.1..NT (free ports, data
 * in a fresh temp dir), the docraft CLI run as a child, cleanup at exit and
 * on fatal signals (SIGTERM from a meson timeout, SIGINT, SIGHUP).
 * tests/lib/cluster.sh starts the same processes with the same flags for the
 * shell tests (test_bench.sh); a flag added here is added there too.
 *
 * One cluster per test program, in the global C (the tests read its
 * addresses, processes and logs, and set the extra flags). Single-threaded:
 * every function here is called from the test's main thread only; a test's
 * own threads may use C.client (a docraft client is thread-safe) and read
 * the addresses, nothing else. A failed CHECK inside these functions ends the
 * case like any CHECK; the next cluster_up (or the exit) cleans up what is
 * left, printing the end of every server's log. */
#ifndef DOCRAFT_TESTS_CLUSTER_H
#define DOCRAFT_TESTS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "docraft/docraft.h"
#include "proc.h"
#include "test.h"
#include "wait.h"

#define CLUSTER_MAX_TSERVERS 8
#define CLUSTER_MAX_MASTERS 3
#ifndef NT
#define NT 3 /* tservers; a test may define fewer before including this */
#endif
#define OUT_CAP (1u << 18)

struct server {
	struct proc p;
	char addr[32];
	char dir[300];
	char log[320];
	char http[32]; /* its HTTP address after cluster_use_http, else "" */
	bool up;
};

struct cluster {
	bool active;
	int nt; /* tservers of this cluster (NT of the test) */
	char base[256];
	char master_exe[4096];
	char tserver_exe[4096];
	char cli_exe[4096];
	/* The master's address; with several masters (cluster_start_masters)
	 * the comma-separated list of them all, as tservers and the CLI take
	 * it. */
	char maddr[128];
	struct server m; /* the master (one master) */
	int nm;          /* masters: 1, or cluster_start_masters' count in mk */
	struct server mk[CLUSTER_MAX_MASTERS]; /* several masters: 127.0.0.K, K = 1.. */
	struct server t[CLUSTER_MAX_TSERVERS];
	docraft_client *client; /* the test's own client, closed by cluster_down */
	struct proc cli;
	char out[OUT_CAP]; /* stdout of the last CLI run */
	size_t out_len;
	/* Extra flags of every tserver_start (NULL-terminated; set before
	 * cluster_up). */
	const char *tserver_args[9];
	/* --placement of tserver k (NULL: none), for every tserver_start of
	 * it; set before cluster_start, left as set (a test that sets it sets
	 * or clears it before each cluster_start). */
	const char *placement[CLUSTER_MAX_TSERVERS];
	/* Extra flags of master_start, the same way. */
	const char *master_args[5];
	/* cluster_use_http: the master's HTTP address, the tservers' port. */
	char mhttp[32];
	char http_flag[16];
	int http_port;
};

extern struct cluster C;

/* Starts a fresh cluster of nt (1..CLUSTER_MAX_TSERVERS) tservers in a temp
 * dir tagged tag, after cleaning up one left by a failed case; returns once
 * the master lists every tserver live (fails the case after 20 s). The
 * programs come from $MASTER, $TSERVER and $DOCRAFT (set by meson). */
void cluster_start(const char *tag, int nt);

/* cluster_start with nm (1..CLUSTER_MAX_MASTERS) masters; nm > 1: they
 * run in C.mk[0..nm) on 127.0.0.1..nm (one port), C.m is unused, and
 * C.maddr lists them all. */
void cluster_start_masters(const char *tag, int nt, int nm);

/* Starts master k of several (again after a stop) with C.master_args; as
 * master_start. */
void master_start_k(int k);

/* cluster_start with the test's NT. */
static inline void cluster_up(const char *tag)
{
	cluster_start(tag, NT);
}

/* Before cluster_start: every server of the next cluster gets an HTTP
 * server on free ports (--http-address, appended to C.master_args and
 * C.tserver_args): the master at C.mhttp, tserver k at C.t[k].http (set by
 * cluster_start). Fails the case when no ports are free. */
void cluster_use_http(void);

/* Closes C.client, stops every server still up (SIGTERM, then SIGKILL after
 * a bound) and removes the temp dir. */
void cluster_down(void);

/* Starts the master (again) at C.maddr with C.master_args; fails the case if
 * it does not print its listening line within 15 s. */
void master_start(void);

/* Starts tserver k (0-based; again after a stop) at C.t[k].addr with
 * C.tserver_args; fails the case if it does not print its listening line
 * within 15 s. */
void tserver_start(int k);

/* Runs the CLI with --masters and args (NULL-terminated); its stdout goes
 * into C.out. Returns its exit status (-1: killed/timed out). */
int cluster_cli(int timeout_ms, const char *const *args);
#define CLI(timeout_ms, ...) cluster_cli((timeout_ms), (const char *const[]){__VA_ARGS__, NULL})

/* The CLI's stderr of its last run (<tmp>/cli.log, where errors go), up to
 * 16 KiB; a static buffer, valid until the next call. */
const char *cluster_cli_errors(void);

/* Live tservers according to `docraft tservers`, -1 if the CLI failed. */
int live_tservers(void);

/* For wait_for: the master lists all C.nt tservers live; the count goes to
 * *(int *)live unless live is NULL. */
bool all_tservers_live(void *live);

/* How many times needle occurs in s. */
int count_substr(const char *s, const char *needle);

struct tablet {
	char id[80];
	char leader[40];
};

/* Parses `docraft tablets <table>` into t (at most cap); returns the count,
 * or -1 if the command failed. */
int tablets_of(const char *table, struct tablet *t, int cap);

/* Waits until table has want tablets, each with a leader (fails the case
 * after timeout_ms); returns the count. */
int tablets_with_leaders(const char *table, struct tablet *t, int cap, int want, int timeout_ms);

#endif
