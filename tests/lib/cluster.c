/* The real-process cluster of the tests. See cluster.h.
 *
 * Design: one global cluster C, because a failed CHECK longjmps out of the
 * case with the processes still running: the next cluster_up, the atexit
 * handler and the fatal-signal handlers must all find them. Children are
 * spawned with proc.h (own process group, SIGKILL when the test dies), so
 * nothing outlives the test program even when cleanup never runs. */
#include "cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct cluster C;

static void tail_log(const char *path)
{
	proc_note_log_tail(path, path, 20);
}

static void cleanup(bool failed)
{
	if (C.client != NULL) {
		docraft_client_close(C.client);
		C.client = NULL;
	}
	if (!C.active)
		return;
	proc_kill_all();
	if (failed) {
		for (int k = 0; C.nm > 1 && k < C.nm; k++)
			tail_log(C.mk[k].log);
		if (C.nm <= 1)
			tail_log(C.m.log);
		for (int k = 0; k < C.nt; k++)
			tail_log(C.t[k].log);
	}
	C.m.up = false;
	for (int k = 0; k < CLUSTER_MAX_MASTERS; k++)
		C.mk[k].up = false;
	for (int k = 0; k < C.nt; k++)
		C.t[k].up = false;
	test_tmpdir_remove(C.base);
	C.active = false;
}

static void cleanup_at_exit(void)
{
	cleanup(true);
}

static void on_fatal_signal(int sig)
{
	proc_die_of_signal(sig, C.active ? C.base : NULL);
}

static void find_exe(char *out, size_t cap, const char *env_name, const char *rel)
{
	CHECK_MSG(proc_find_exe(out, cap, env_name, rel) == 0, "%s not found at %s (set %s)", rel,
		  out, env_name);
}

int cluster_cli(int timeout_ms, const char *const *args)
{
	char *argv[32];
	char line[8192];
	int n = 0, st = 0;
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	char log[320];
	argv[n++] = C.cli_exe;
	argv[n++] = (char *)"--masters";
	argv[n++] = C.maddr;
	for (int i = 0; args[i] != NULL && n < 31; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	snprintf(log, sizeof log, "%s/cli.log", C.base);
	C.out_len = 0;
	C.out[0] = '\0';
	CHECK_MSG(proc_spawn(&C.cli, argv, log) == 0, "spawn cli: %s", strerror(errno));
	for (;;) {
		uint64_t now = proc_now_ms();
		if (now >= end) {
			proc_kill(&C.cli);
			return -1;
		}
		int rv = proc_read_line(&C.cli, line, sizeof line, (int)(end - now));
		if (rv == 1) {
			size_t l = strlen(line);
			if (C.out_len + l + 2 < OUT_CAP) {
				memcpy(C.out + C.out_len, line, l);
				C.out_len += l;
				C.out[C.out_len++] = '\n';
				C.out[C.out_len] = '\0';
			}
		} else if (rv < 0) {
			break;
		}
	}
	/* A last line without '\n'. */
	if (C.cli.len > 0 && C.out_len + C.cli.len + 1 < OUT_CAP) {
		memcpy(C.out + C.out_len, C.cli.buf, C.cli.len);
		C.out_len += C.cli.len;
		C.out[C.out_len] = '\0';
	}
	if (!proc_wait(&C.cli, (int)(end > proc_now_ms() ? end - proc_now_ms() : 1000), &st)) {
		proc_kill(&C.cli);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int count_substr(const char *s, const char *needle)
{
	int n = 0;
	size_t l = strlen(needle);
	for (const char *p = strstr(s, needle); p != NULL; p = strstr(p + l, needle))
		n++;
	return n;
}

/* ---- processes ---------------------------------------------------------------------- */

/* Starts a master at s->addr with s->dir and s->log, --masters list when
 * not NULL, and C.master_args. The flags below are those of
 * tests/lib/cluster.sh too. */
static void spawn_master(struct server *s, const char *list)
{
	char line[512], want[192];
	char *argv[14] = {C.master_exe, "--address", s->addr, "--data", s->dir,
			  "--tserver-timeout-ms", "3000", NULL};
	int n = 7;
	if (list != NULL) {
		argv[n++] = "--masters";
		argv[n++] = (char *)list;
	}
	for (int i = 0; C.master_args[i] != NULL && n < 13; i++)
		argv[n++] = (char *)C.master_args[i];
	CHECK_MSG(proc_spawn(&s->p, argv, s->log) == 0, "spawn master: %s", strerror(errno));
	s->up = true;
	int rv = proc_read_line(&s->p, line, sizeof line, 15000);
	CHECK_MSG(rv == 1, "the master at %s did not start (%d)", s->addr, rv);
	snprintf(want, sizeof want, "docraft-master listening on %s", s->addr);
	CHECK_MSG(strstr(line, want) != NULL, "master %s: unexpected first line: %s", s->addr,
		  line);
}

void master_start(void)
{
	spawn_master(&C.m, NULL);
}

void master_start_k(int k)
{
	spawn_master(&C.mk[k], C.maddr);
}

void tserver_start(int k)
{
	struct server *s = &C.t[k];
	char line[512];
	char *argv[18] = {C.tserver_exe, "--address", s->addr, "--data", s->dir,
			  "--masters", C.maddr, NULL};
	int n = 7;
	if (C.placement[k] != NULL) {
		argv[n++] = (char *)"--placement";
		argv[n++] = (char *)C.placement[k];
	}
	for (int i = 0; C.tserver_args[i] != NULL && n < 17; i++)
		argv[n++] = (char *)C.tserver_args[i];
	CHECK_MSG(proc_spawn(&s->p, argv, s->log) == 0, "spawn tserver: %s", strerror(errno));
	s->up = true;
	int rv = proc_read_line(&s->p, line, sizeof line, 15000);
	CHECK_MSG(rv == 1, "tserver %d did not start (%d)", k + 1, rv);
	CHECK_MSG(strstr(line, " listening on ") != NULL && strstr(line, s->addr) != NULL,
		  "tserver %d: unexpected first line: %s", k + 1, line);
}

const char *cluster_cli_errors(void)
{
	static char text[16384];
	char path[320];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/cli.log", C.base);
	text[0] = '\0';
	if ((f = fopen(path, "r")) != NULL) {
		n = fread(text, 1, sizeof text - 1, f);
		fclose(f);
	}
	text[n] = '\0';
	return text;
}

int live_tservers(void)
{
	int live = 0;
	if (CLI(5000, "tservers") != 0)
		return -1;
	for (char *l = C.out; l != NULL && *l != '\0';) {
		char *nl = strchr(l, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (strstr(l, " yes ") != NULL)
			live++;
		l = nl != NULL ? nl + 1 : NULL;
	}
	return live;
}

bool all_tservers_live(void *live)
{
	int n = live_tservers();
	if (live != NULL)
		*(int *)live = n;
	return n >= C.nt;
}

/* Sets flag a to b in args (NULL-terminated, cap slots): replaced if
 * there, else appended. */
static void set_arg(const char **args, size_t cap, const char *a, const char *b)
{
	size_t n = 0;
	while (n < cap && args[n] != NULL) {
		if (strcmp(args[n], a) == 0 && n + 1 < cap && args[n + 1] != NULL) {
			args[n + 1] = b;
			return;
		}
		n++;
	}
	CHECK_MSG(n + 2 < cap, "no room for %s in the extra flags", a);
	args[n] = a;
	args[n + 1] = b;
	args[n + 2] = NULL;
}

void cluster_use_http(void)
{
	int pm = proc_free_port(1, -1), pt = proc_free_port(CLUSTER_MAX_TSERVERS, pm);

	CHECK_MSG(pm > 0 && pt > 0, "no free ports for HTTP");
	snprintf(C.mhttp, sizeof C.mhttp, "127.0.0.1:%d", pm);
	snprintf(C.http_flag, sizeof C.http_flag, ":%d", pt);
	C.http_port = pt;
	set_arg(C.master_args, sizeof C.master_args / sizeof C.master_args[0],
		    "--http-address", C.mhttp);
	set_arg(C.tserver_args, sizeof C.tserver_args / sizeof C.tserver_args[0],
		    "--http-address", C.http_flag);
}

void cluster_start(const char *tag, int nt)
{
	cluster_start_masters(tag, nt, 1);
}

void cluster_start_masters(const char *tag, int nt, int nm)
{
	cleanup(true); /* the previous case failed */
	proc_on_exit(cleanup_at_exit, on_fatal_signal);
	CHECK(nt >= 1 && nt <= CLUSTER_MAX_TSERVERS);
	CHECK(nm >= 1 && nm <= CLUSTER_MAX_MASTERS);
	C.nt = nt;
	C.nm = nm;
	memset(&C.m, 0, sizeof C.m);
	memset(C.mk, 0, sizeof C.mk);
	memset(C.t, 0, sizeof C.t);
	find_exe(C.master_exe, sizeof C.master_exe, "MASTER", "src/master/docraft-master");
	find_exe(C.tserver_exe, sizeof C.tserver_exe, "TSERVER", "src/tserver/docraft-tserver");
	find_exe(C.cli_exe, sizeof C.cli_exe, "DOCRAFT", "src/tools/docraft");
	test_tmpdir_make(C.base, tag);
	C.active = true;
	int pt = proc_free_port(nt, -1);
	int pm = proc_free_port(1, pt);
	CHECK_MSG(pt > 0 && pm > 0, "no free ports");
	if (nm == 1) {
		snprintf(C.maddr, sizeof C.maddr, "127.0.0.1:%d", pm);
		snprintf(C.m.addr, sizeof C.m.addr, "127.0.0.1:%d", pm);
		snprintf(C.m.dir, sizeof C.m.dir, "%s/master", C.base);
		snprintf(C.m.log, sizeof C.m.log, "%s/master.log", C.base);
		master_start();
	} else {
		size_t len = 0;
		for (int k = 0; k < nm; k++) {
			snprintf(C.mk[k].addr, sizeof C.mk[k].addr, "127.0.0.%d:%d", k + 1, pm);
			snprintf(C.mk[k].dir, sizeof C.mk[k].dir, "%s/master%d", C.base, k + 1);
			snprintf(C.mk[k].log, sizeof C.mk[k].log, "%s/master%d.log", C.base, k + 1);
			len += (size_t)snprintf(C.maddr + len, sizeof C.maddr - len, "%s%s",
						k > 0 ? "," : "", C.mk[k].addr);
		}
		for (int k = 0; k < nm; k++)
			master_start_k(k);
	}
	for (int k = 0; k < nt; k++) {
		struct server *s = &C.t[k];
		snprintf(s->addr, sizeof s->addr, "127.0.0.%d:%d", k + 1, pt);
		snprintf(s->dir, sizeof s->dir, "%s/ts%d", C.base, k + 1);
		snprintf(s->log, sizeof s->log, "%s/ts%d.log", C.base, k + 1);
		if (C.http_port > 0)
			snprintf(s->http, sizeof s->http, "127.0.0.%d:%d", k + 1, C.http_port);
		tserver_start(k);
	}
	int live = 0;
	CHECK_MSG(wait_for(all_tservers_live, &live, 20000), "only %d live tservers after 20 s:\n%s", live,
		  C.out);
	test_note("cluster up: master %s, tservers on port %d", C.maddr, pt);
}

void cluster_down(void)
{
	int st = 0;
	if (C.client != NULL) {
		docraft_client_close(C.client);
		C.client = NULL;
	}
	for (int k = 0; k < C.nt; k++)
		if (C.t[k].up) {
			proc_signal(&C.t[k].p, SIGTERM);
			if (!proc_wait(&C.t[k].p, 15000, &st))
				proc_kill(&C.t[k].p);
			C.t[k].up = false;
		}
	if (C.m.up) {
		proc_signal(&C.m.p, SIGTERM);
		if (!proc_wait(&C.m.p, 10000, &st))
			proc_kill(&C.m.p);
		C.m.up = false;
	}
	for (int k = 0; k < CLUSTER_MAX_MASTERS; k++)
		if (C.mk[k].up) {
			proc_signal(&C.mk[k].p, SIGTERM);
			if (!proc_wait(&C.mk[k].p, 10000, &st))
				proc_kill(&C.mk[k].p);
			C.mk[k].up = false;
		}
	cleanup(false);
}

/* ---- tablets ------------------------------------------------------------------------ */

int tablets_of(const char *table, struct tablet *t, int cap)
{
	int n = 0;
	if (CLI(10000, "tablets", table) != 0)
		return -1;
	char *save = NULL;
	for (char *l = strtok_r(C.out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		char id[80], part1[40], part2[40], leader[40];
		if (strncmp(l, "TABLET", 6) == 0)
			continue;
		if (sscanf(l, "%79s %39s %39s %39s", id, part1, part2, leader) != 4 || n >= cap)
			continue;
		snprintf(t[n].id, sizeof t[n].id, "%s", id);
		snprintf(t[n].leader, sizeof t[n].leader, "%s", leader);
		n++;
	}
	return n;
}

struct led {
	const char *table;
	struct tablet *t;
	int cap, want, n;
};

static bool all_led(void *arg)
{
	struct led *w = arg;
	w->n = tablets_of(w->table, w->t, w->cap);
	if (w->n != w->want)
		return false;
	for (int i = 0; i < w->n; i++)
		if (strchr(w->t[i].leader, ':') == NULL)
			return false;
	return true;
}

int tablets_with_leaders(const char *table, struct tablet *t, int cap, int want, int timeout_ms)
{
	struct led w = {table, t, cap, want, 0};
	CHECK_MSG(wait_for(all_led, &w, timeout_ms), "table %s: %d tablets, leaders missing:\n%s",
		  table, w.n, C.out);
	return w.n;
}
