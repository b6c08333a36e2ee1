/* docraft-failover: measured failover time (issue #6).
 *
 *   docraft-failover [--kills N] [--table T] [--master-port P] [--tserver-port P]
 *                    [--bin-dir DIR] [--tserver-args "..."] [--same-key] [--keep] ...
 *
 * Starts its own cluster of real processes: one docraft-master on
 * 127.0.0.1 and three docraft-tservers on 127.0.0.1..3, with their default
 * settings (only --tserver-args / --master-args add flags), data and logs in
 * a temporary directory. Creates table T (1 tablet, RF 3). A writer thread
 * submits one write every 5 ms (docraft_write_async, so a stuck write does
 * not delay the next one) through ONE docraft_client with default options;
 * each write is a fresh row (--same-key: always the same row). Then N times:
 *
 *   1. find the tablet's leader: the master's view (docraft_admin_tablets'
 *      output), confirmed by the replica itself (TABLET_STATUS: role leader);
 *   2. t_kill = CLOCK_MONOTONIC, then SIGKILL the leader's process;
 *   3. recovery = the first write INVOKED after t_kill that succeeds: its
 *      completion time - t_kill. Also reported: the first success of a write
 *      that was already in flight at the kill (its retries), and, from the
 *      survivors' logs (wall-clock timestamps against the kill's wall time),
 *      when the first replica became a candidate, when the new leader was
 *      elected and when it was ready (its barrier applied);
 *   4. restart the killed tserver on its data, wait until the tablet is
 *      settled for --settle-ms (3 live tservers, the same leader, both
 *      followers' applied index past the leader's of the previous check),
 *      then a random 1-3 s, and go on.
 *
 * Prints one line per kill and at the end
 *   kills=N p50_ms=.. p90_ms=.. max_ms=.. min_ms=..
 * (nearest-rank percentiles of the recovery times), then the same for the
 * in-flight writes and the log breakdown. Exit 0 when every kill recovered
 * within --recover-timeout-ms (default 30000), 1 otherwise, 2 on bad usage.
 * Every process it started is killed on any exit path (children also die
 * with it: PR_SET_PDEATHSIG), signals included; the temporary directory is
 * removed unless --keep (with --keep, the path is printed). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/internal.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "rpc.pb-c.h"

#define PROG "docraft-failover"
#define NT 3
#define MAX_SLOTS 4096
#define MAX_KILLS 10000
#define MAX_EXTRA_ARGS 32
#define OUT_CAP (1u << 16)

/* ---- options ------------------------------------------------------------------------ */

static struct {
	unsigned kills;
	const char *table;
	int master_port, tserver_port;
	const char *bin_dir;
	const char *master_bin, *tserver_bin;
	const char *tserver_args, *master_args;
	bool same_key;
	bool keep;
	const char *dir;
	unsigned interval_ms;
	unsigned recover_timeout_ms;
	unsigned settle_ms;
	unsigned seed;
	bool seed_given;
} O = {
	.kills = 20,
	.table = "failover",
	.master_port = 7290,
	.tserver_port = 9290,
	.interval_ms = 5,
	.recover_timeout_ms = 30000,
	.settle_ms = 3000,
};

/* ---- time --------------------------------------------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the cluster -------------------------------------------------------------------- */

struct server {
	struct proc p;
	char addr[32];
	char dir[PATH_MAX];
	char log[PATH_MAX];
	bool up;
	long log_mark; /* log size at the kill */
};

static struct {
	char base[1024];
	bool made_base;
	char master_exe[PATH_MAX];
	char tserver_exe[PATH_MAX];
	char maddr[32];
	char *targs[MAX_EXTRA_ARGS];
	int n_targs;
	char *margs[MAX_EXTRA_ARGS];
	int n_margs;
	struct server m;
	struct server t[NT];
	docraft_client *admin;  /* leader lookups, status, settling */
	docraft_client *writer; /* the measured client: default options */
	char tablet_id[128];
	char out[OUT_CAP];
	size_t out_len;
} C;

static void tail_log(const char *path)
{
	FILE *f = fopen(path, "r");
	char lines[15][1024];
	int n = 0;
	if (f == NULL)
		return;
	while (fgets(lines[n % 15], sizeof lines[0], f) != NULL)
		n++;
	fclose(f);
	fprintf(stderr, "---- %s (last lines)\n", path);
	for (int i = n > 15 ? n - 15 : 0; i < n; i++)
		fputs(lines[i % 15], stderr);
}

static void remove_base(void)
{
	pid_t pid;
	if (!C.made_base || O.keep)
		return;
	pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", "--", C.base, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	C.made_base = false;
}

/* atexit: registered before the first spawn, so it runs after proc.c's
 * (which kills and reaps every child). */
static void at_exit(void)
{
	proc_kill_all();
	remove_base();
}

static void on_signal(int sig)
{
	proc_die_of_signal(sig, C.made_base && !O.keep ? C.base : NULL);
}

static void die(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (C.made_base) {
		tail_log(C.m.log);
		for (int k = 0; k < NT; k++)
			tail_log(C.t[k].log);
		if (O.keep)
			fprintf(stderr, PROG ": logs kept in %s\n", C.base);
	}
	exit(1);
}


/* Splits s on blanks into out (strdup'd words). */
static int split_args(const char *s, char **out, int cap)
{
	int n = 0;
	char *copy, *save = NULL;
	if (s == NULL)
		return 0;
	copy = strdup(s);
	if (copy == NULL)
		die("out of memory");
	for (char *w = strtok_r(copy, " \t\n", &save); w != NULL; w = strtok_r(NULL, " \t\n", &save)) {
		if (n >= cap)
			die("too many words in extra arguments");
		out[n++] = strdup(w);
	}
	free(copy);
	return n;
}

static void find_exes(const char *argv0)
{
	char self[2048];
	ssize_t r = readlink("/proc/self/exe", self, sizeof self - 1);
	(void)argv0;
	if (r <= 0)
		die("readlink /proc/self/exe: %s", strerror(errno));
	self[r] = '\0';
	*strrchr(self, '/') = '\0';
	if (O.bin_dir != NULL) {
		/* An install dir (both side by side) or a build dir's src/. */
		snprintf(C.master_exe, sizeof C.master_exe, "%s/docraft-master", O.bin_dir);
		if (access(C.master_exe, X_OK) != 0)
			snprintf(C.master_exe, sizeof C.master_exe, "%s/master/docraft-master",
				 O.bin_dir);
		snprintf(C.tserver_exe, sizeof C.tserver_exe, "%s/docraft-tserver", O.bin_dir);
		if (access(C.tserver_exe, X_OK) != 0)
			snprintf(C.tserver_exe, sizeof C.tserver_exe, "%s/tserver/docraft-tserver",
				 O.bin_dir);
	} else {
		snprintf(C.master_exe, sizeof C.master_exe, "%s/../../src/master/docraft-master",
			 self);
		snprintf(C.tserver_exe, sizeof C.tserver_exe,
			 "%s/../../src/tserver/docraft-tserver", self);
	}
	if (O.master_bin != NULL)
		snprintf(C.master_exe, sizeof C.master_exe, "%s", O.master_bin);
	if (O.tserver_bin != NULL)
		snprintf(C.tserver_exe, sizeof C.tserver_exe, "%s", O.tserver_bin);
	if (access(C.master_exe, X_OK) != 0)
		die("no docraft-master at %s (--bin-dir, --master-bin)", C.master_exe);
	if (access(C.tserver_exe, X_OK) != 0)
		die("no docraft-tserver at %s (--bin-dir, --tserver-bin)", C.tserver_exe);
}

static void master_start(void)
{
	char line[512], want[128];
	char *argv[8 + MAX_EXTRA_ARGS];
	int n = 0, rv;
	argv[n++] = C.master_exe;
	argv[n++] = "--address";
	argv[n++] = C.maddr;
	argv[n++] = "--data";
	argv[n++] = C.m.dir;
	for (int i = 0; i < C.n_margs; i++)
		argv[n++] = C.margs[i];
	argv[n] = NULL;
	if (proc_spawn(&C.m.p, argv, C.m.log) != 0)
		die("spawn %s: %s", C.master_exe, strerror(errno));
	C.m.up = true;
	rv = proc_read_line(&C.m.p, line, sizeof line, 20000);
	snprintf(want, sizeof want, "docraft-master listening on %s", C.maddr);
	if (rv != 1 || strstr(line, want) == NULL)
		die("the master did not start (%s)", rv == 1 ? line : "no ready line");
}

static void tserver_start(int k)
{
	struct server *s = &C.t[k];
	char line[512];
	char *argv[8 + MAX_EXTRA_ARGS];
	int n = 0, rv;
	argv[n++] = C.tserver_exe;
	argv[n++] = "--address";
	argv[n++] = s->addr;
	argv[n++] = "--data";
	argv[n++] = s->dir;
	argv[n++] = "--masters";
	argv[n++] = C.maddr;
	for (int i = 0; i < C.n_targs; i++)
		argv[n++] = C.targs[i];
	argv[n] = NULL;
	if (proc_spawn(&s->p, argv, s->log) != 0)
		die("spawn %s: %s", C.tserver_exe, strerror(errno));
	s->up = true;
	rv = proc_read_line(&s->p, line, sizeof line, 30000);
	if (rv != 1 || strstr(line, " listening on ") == NULL)
		die("tserver %s did not start (%s)", s->addr, rv == 1 ? line : "no ready line");
}

/* ---- admin calls (C.admin) ------------------------------------------------------------ */

static void out_cb(void *arg, const char *text, size_t len)
{
	(void)arg;
	if (C.out_len + len + 1 > OUT_CAP)
		len = OUT_CAP - 1 - C.out_len;
	memcpy(C.out + C.out_len, text, len);
	C.out_len += len;
	C.out[C.out_len] = '\0';
}

static const docraft_printer printer = {out_cb, NULL, NULL};

/* Live tservers per `tservers`, or -1. */
static int live_tservers(void)
{
	int live = 0;
	char *save = NULL;
	C.out_len = 0;
	C.out[0] = '\0';
	if (docraft_admin_tservers(C.admin, &printer) != 0)
		return -1;
	for (char *l = strtok_r(C.out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save))
		if (strstr(l, " yes ") != NULL)
			live++;
	return live;
}

/* The master's view of the table's one tablet: its id, leader ("" if
 * none) and replica addresses. Parses docraft_admin_tablets' table:
 *   TABLET  PARTITION  LEADER  REPLICAS
 *   id      [0x0000, 0x10000)  127.0.0.2:9290  1@127.0.0.1:9290 2@127.0.0.2:9290* ...
 * Returns the number of replicas, or -1. */
static int master_view(char *id, size_t id_cap, char *leader, size_t leader_cap,
		       char replicas[][32], int cap)
{
	char *save = NULL;
	int nrep = -1;
	C.out_len = 0;
	C.out[0] = '\0';
	if (docraft_admin_tablets(C.admin, O.table, &printer) != 0)
		return -1;
	for (char *l = strtok_r(C.out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		char tid[128], p1[40], p2[40], ld[40];
		int off = 0;
		if (strncmp(l, "TABLET", 6) == 0)
			continue;
		if (sscanf(l, "%127s %39s %39s %39s %n", tid, p1, p2, ld, &off) < 4)
			continue;
		snprintf(id, id_cap, "%s", tid);
		snprintf(leader, leader_cap, "%s", strchr(ld, ':') != NULL ? ld : "");
		nrep = 0;
		for (char *r = l + off; *r != '\0' && nrep < cap;) {
			char word[64], *at, *end;
			int used = 0;
			if (sscanf(r, "%63s%n", word, &used) != 1)
				break;
			r += used;
			at = strchr(word, '@');
			if (at == NULL)
				continue;
			at++;
			end = at + strcspn(at, "*(");
			*end = '\0';
			snprintf(replicas[nrep++], 32, "%s", at);
		}
		break; /* one tablet */
	}
	return nrep;
}

struct status {
	bool ok;
	char role[32];
	uint64_t term, applied, last;
};

/* TABLET_STATUS of the tablet at one replica (one attempt, 1 s). */
static struct status replica_status(const char *addr)
{
	Docraft__TabletStatusRequest req = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
	Docraft__TabletStatusResponse *resp;
	struct buf reply = BUF_INIT;
	struct status st;
	memset(&st, 0, sizeof st);
	if (client_tablet_call(C.admin, O.table, C.tablet_id, addr,
			       DOCRAFT__METHOD__TSERVER_TABLET_STATUS, &req.base, &req.tablet_id,
			       &reply) != 0) {
		buf_free(&reply);
		return st;
	}
	resp = docraft__tablet_status_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	if (resp == NULL)
		return st;
	for (size_t i = 0; i < resp->n_tablets; i++) {
		const Docraft__TabletReport *r = resp->tablets[i];
		if (strcmp(r->tablet_id, C.tablet_id) != 0)
			continue;
		st.ok = true;
		snprintf(st.role, sizeof st.role, "%s", r->role);
		st.term = r->term;
		st.applied = r->applied_index;
		st.last = r->last_index;
	}
	docraft__tablet_status_response__free_unpacked(resp, NULL);
	return st;
}

static int server_of(const char *addr)
{
	for (int k = 0; k < NT; k++)
		if (strcmp(C.t[k].addr, addr) == 0)
			return k;
	return -1;
}

static uint64_t leader_term; /* of the leader find_leader found */

/* The leader to kill: named by the master and confirmed by itself. */
static int find_leader(unsigned timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		char id[128], leader[40], reps[NT + 2][32];
		int n = master_view(id, sizeof id, leader, sizeof leader, reps, NT + 2);
		int k = leader[0] != '\0' && n > 0 ? server_of(leader) : -1;
		if (k >= 0 && C.t[k].up) {
			struct status st = replica_status(leader);
			if (st.ok && strcmp(st.role, "leader") == 0) {
				leader_term = st.term;
				return k;
			}
		}
		if (mono_ns() > end)
			return -1;
		sleep_ms(100);
	}
}

/* Waits until the tablet has been settled for settle_ms: every tserver
 * live, one leader (the same at every check, named by the master and by
 * itself), the others followers whose applied index reached the leader's of
 * the previous check (200 ms earlier). */
static bool wait_settled(unsigned settle_ms, unsigned timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	uint64_t since = 0, prev_applied = 0;
	char prev_leader[40] = "";
	for (;;) {
		char id[128], leader[40], reps[NT + 2][32];
		bool good;
		int n;
		uint64_t now = mono_ns();
		if (now > end)
			return false;
		n = master_view(id, sizeof id, leader, sizeof leader, reps, NT + 2);
		good = live_tservers() == NT && n == NT && leader[0] != '\0' &&
		       strcmp(leader, prev_leader) == 0;
		if (good) {
			uint64_t leader_applied = 0;
			int leaders = 0;
			struct status st[NT];
			for (int i = 0; i < n; i++) {
				st[i] = replica_status(reps[i]);
				if (!st[i].ok)
					good = false;
				else if (strcmp(st[i].role, "leader") == 0) {
					leaders++;
					leader_applied = st[i].applied;
					if (strcmp(reps[i], leader) != 0)
						good = false;
				} else if (strcmp(st[i].role, "follower") != 0)
					good = false;
			}
			for (int i = 0; good && i < n; i++)
				if (strcmp(st[i].role, "follower") == 0 && st[i].applied < prev_applied)
					good = false;
			if (leaders != 1)
				good = false;
			prev_applied = leader_applied;
		} else {
			prev_applied = UINT64_MAX; /* the next check cannot pass */
		}
		snprintf(prev_leader, sizeof prev_leader, "%s", leader);
		if (!good)
			since = 0;
		else if (since == 0)
			since = now;
		else if (now - since >= (uint64_t)settle_ms * 1000000u)
			return true;
		sleep_ms(200);
	}
}

/* ---- the writer --------------------------------------------------------------------- */

struct slot {
	docraft_req req;
	docraft_op *op;
	uint64_t t_inv;
	atomic_int busy;
};

static struct slot slots[MAX_SLOTS];

static struct {
	pthread_mutex_t mu;
	pthread_t thread;
	atomic_bool stop;
	uint64_t seq;
	/* Under mu. */
	uint64_t kill_ns;           /* 0: no kill yet */
	uint64_t first_new_ok;      /* completion of the first post-kill write that succeeded */
	uint64_t first_old_ok;      /* ... of a write in flight at the kill */
	int64_t outstanding;        /* submitted, not completed */
	int64_t old_pending;        /* in flight at the kill, not completed yet */
	int64_t old_at_kill;
	uint64_t ok, failed, skipped;
	uint64_t failed_since_kill;
	char last_error[DOCRAFT_ERRMSG_SIZE + 64];
	uint64_t last_ok;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void write_done(docraft_req *req)
{
	struct slot *s = req->data;
	pthread_mutex_lock(&W.mu);
	uint64_t t = mono_ns();
	W.outstanding--;
	if (W.kill_ns != 0 && s->t_inv < W.kill_ns)
		W.old_pending--;
	if (req->status == DOCRAFT_OK) {
		W.ok++;
		W.last_ok = t;
		if (W.kill_ns != 0 && t >= W.kill_ns) {
			if (s->t_inv >= W.kill_ns) {
				if (W.first_new_ok == 0)
					W.first_new_ok = t;
			} else if (W.first_old_ok == 0) {
				W.first_old_ok = t;
			}
		}
	} else {
		W.failed++;
		if (W.kill_ns != 0 && t >= W.kill_ns)
			W.failed_since_kill++;
		snprintf(W.last_error, sizeof W.last_error, "%s: %s", docraft_strerror(req->status),
			 req->errmsg);
	}
	pthread_mutex_unlock(&W.mu);
	docraft_op_free(s->op);
	s->op = NULL;
	atomic_store(&s->busy, 0);
}

static void *writer_main(void *arg)
{
	uint64_t next = mono_ns();
	size_t hint = 0;
	(void)arg;
	while (!atomic_load(&W.stop)) {
		struct slot *s = NULL;
		docraft_value key, val;
		struct timespec ts;
		uint64_t now;
		int rv;

		next += (uint64_t)O.interval_ms * 1000000u;
		now = mono_ns();
		if (next + 100000000u < now)
			next = now; /* far behind (a pause): do not burst */
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		for (size_t i = 0; i < MAX_SLOTS; i++) {
			size_t j = (hint + i) % MAX_SLOTS;
			if (atomic_load(&slots[j].busy) == 0) {
				s = &slots[j];
				hint = j + 1;
				break;
			}
		}
		if (s == NULL) {
			pthread_mutex_lock(&W.mu);
			W.skipped++;
			pthread_mutex_unlock(&W.mu);
			continue;
		}
		W.seq++;
		key = docraft_value_int(O.same_key ? 0 : (int64_t)W.seq);
		val = docraft_value_int((int64_t)W.seq);
		if (docraft_op_insert(&key, 1, &s->op) != 0 ||
		    docraft_op_column(s->op, "v", &val) != 0) {
			fprintf(stderr, PROG ": building a write: %s\n", docraft_errmsg());
			abort();
		}
		memset(&s->req, 0, sizeof s->req);
		s->req.data = s;
		atomic_store(&s->busy, 1);
		pthread_mutex_lock(&W.mu);
		s->t_inv = mono_ns();
		W.outstanding++;
		pthread_mutex_unlock(&W.mu);
		rv = docraft_write_async(C.writer, &s->req, O.table, &s->op, 1, DOCRAFT_TTL_DEFAULT,
					 write_done);
		if (rv != 0) {
			pthread_mutex_lock(&W.mu);
			W.outstanding--;
			if (W.kill_ns != 0 && s->t_inv < W.kill_ns)
				W.old_pending--;
			W.failed++;
			snprintf(W.last_error, sizeof W.last_error, "submit: %s: %s",
				 docraft_strerror(rv), docraft_errmsg());
			pthread_mutex_unlock(&W.mu);
			docraft_op_free(s->op);
			s->op = NULL;
			atomic_store(&s->busy, 0);
		}
	}
	return NULL;
}

/* ---- log breakdown ------------------------------------------------------------------ */

/* Wall µs of a log line "2024-05-01T22:38:46.123456Z ...", or 0. */
static uint64_t line_time_us(const char *l)
{
	struct tm tm;
	long us = 0;
	int n = 0;
	memset(&tm, 0, sizeof tm);
	if (sscanf(l, "%4d-%2d-%2dT%2d:%2d:%2d.%6ldZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us, &n) != 7 || n == 0)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (uint64_t)timegm(&tm) * 1000000u + (uint64_t)us;
}

struct breakdown {
	int64_t candidate_ms; /* first "election started" of a survivor, -1 if none */
	int64_t elected_ms;   /* "became leader" */
	int64_t ready_ms;     /* "leader ready" */
};

/* Scans the survivors' logs from their size at the kill for the tablet's
 * election lines (times relative to the kill's wall time). */
static struct breakdown scan_logs(int killed, uint64_t kill_wall)
{
	struct breakdown b = {-1, -1, -1};
	char tag[160];
	snprintf(tag, sizeof tag, "T %s ", C.tablet_id);
	for (int k = 0; k < NT; k++) {
		FILE *f;
		char line[2048];
		if (k == killed)
			continue;
		f = fopen(C.t[k].log, "r");
		if (f == NULL)
			continue;
		fseek(f, C.t[k].log_mark, SEEK_SET);
		while (fgets(line, sizeof line, f) != NULL) {
			uint64_t t;
			int64_t ms;
			if (strstr(line, tag) == NULL || (t = line_time_us(line)) == 0)
				continue;
			ms = ((int64_t)t - (int64_t)kill_wall) / 1000;
			/* The earliest over both survivors. */
			if (strstr(line, "election started") != NULL)
				b.candidate_ms = b.candidate_ms < 0 || ms < b.candidate_ms
							 ? ms : b.candidate_ms;
			else if (strstr(line, "became leader") != NULL)
				b.elected_ms = b.elected_ms < 0 || ms < b.elected_ms ? ms
										     : b.elected_ms;
			else if (strstr(line, "leader ready") != NULL)
				b.ready_ms = b.ready_ms < 0 || ms < b.ready_ms ? ms : b.ready_ms;
		}
		fclose(f);
	}
	return b;
}

/* ---- statistics --------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of v[0..n) (sorted in place). */
static int64_t pct(int64_t *v, size_t n, double p)
{
	size_t r;
	qsort(v, n, sizeof *v, cmp_i64);
	r = (size_t)(p * (double)n + 0.999999);
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return v[r - 1];
}

static void summary(const char *prefix, int64_t *v, size_t n)
{
	if (n == 0) {
		say("%sn=0\n", prefix);
		return;
	}
	say("%sp50_ms=%" PRId64 " p90_ms=%" PRId64 " max_ms=%" PRId64 " min_ms=%" PRId64 "\n",
	    prefix, pct(v, n, 0.5), pct(v, n, 0.9), pct(v, n, 1.0), pct(v, n, 0.0));
}

/* ---- main --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options]\n\n"
		"Starts a master and three tservers (127.0.0.1..3), kills the tablet leader N\n"
		"times and measures the time to the first successful write through the\n"
		"routing client. Prints one line per kill, then\n"
		"  kills=N p50_ms=.. p90_ms=.. max_ms=.. min_ms=..\n\n"
		"options:\n"
		"  --kills N              leader kills (default 20)\n"
		"  --table T              table name (default failover)\n"
		"  --master-port P        master port on 127.0.0.1 (default 7290; 0: a free one)\n"
		"  --tserver-port P       tserver port on 127.0.0.1..3 (default 9290; 0: free)\n"
		"  --bin-dir DIR          where docraft-master/-tserver are (DIR or DIR/master,\n"
		"                         DIR/tablet; default: <this program>/../../src/...)\n"
		"  --master-bin PATH      --tserver-bin PATH: the executables themselves\n"
		"  --tserver-args \"...\"   extra tserver flags (default: none, the defaults)\n"
		"  --master-args \"...\"    extra master flags\n"
		"  --same-key             every write to the same row (default: a new row each)\n"
		"  --interval-ms MS       one write every MS (default 5)\n"
		"  --recover-timeout-ms MS  a kill not recovered in MS fails the run (30000)\n"
		"  --settle-ms MS         stable time before the next kill (default 3000)\n"
		"  --seed S               random waits' seed (default: time)\n"
		"  --dir DIR              data and logs here (default: a new temp dir)\n"
		"  --keep                 keep the data and logs at exit\n"
		"  --help\n");
}

static unsigned parse_uint(const char *name, const char *v, unsigned max)
{
	char *end;
	unsigned long x;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno != 0 || *v == '\0' || *end != '\0' || x > max) {
		fprintf(stderr, PROG ": --%s: bad value '%s'\n", name, v);
		exit(2);
	}
	return (unsigned)x;
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"kills", required_argument, NULL, 'k'},
		{"table", required_argument, NULL, 't'},
		{"master-port", required_argument, NULL, 'm'},
		{"tserver-port", required_argument, NULL, 'p'},
		{"bin-dir", required_argument, NULL, 'b'},
		{"master-bin", required_argument, NULL, 'M'},
		{"tserver-bin", required_argument, NULL, 'T'},
		{"tserver-args", required_argument, NULL, 'a'},
		{"master-args", required_argument, NULL, 'A'},
		{"same-key", no_argument, NULL, 's'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"recover-timeout-ms", required_argument, NULL, 'r'},
		{"settle-ms", required_argument, NULL, 'S'},
		{"seed", required_argument, NULL, 'e'},
		{"dir", required_argument, NULL, 'd'},
		{"keep", no_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'k': O.kills = parse_uint("kills", optarg, MAX_KILLS); break;
		case 't': O.table = optarg; break;
		case 'm': O.master_port = (int)parse_uint("master-port", optarg, 65535); break;
		case 'p': O.tserver_port = (int)parse_uint("tserver-port", optarg, 65535); break;
		case 'b': O.bin_dir = optarg; break;
		case 'M': O.master_bin = optarg; break;
		case 'T': O.tserver_bin = optarg; break;
		case 'a': O.tserver_args = optarg; break;
		case 'A': O.master_args = optarg; break;
		case 's': O.same_key = true; break;
		case 'i': O.interval_ms = parse_uint("interval-ms", optarg, 10000); break;
		case 'r': O.recover_timeout_ms = parse_uint("recover-timeout-ms", optarg, 3600000); break;
		case 'S': O.settle_ms = parse_uint("settle-ms", optarg, 3600000); break;
		case 'e': O.seed = parse_uint("seed", optarg, UINT_MAX); O.seed_given = true; break;
		case 'd': O.dir = optarg; break;
		case 'K': O.keep = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (O.kills == 0 || O.interval_ms == 0) {
		fprintf(stderr, PROG ": --kills and --interval-ms must be >= 1\n");
		exit(2);
	}
}

static void cluster_up(void)
{
	int pm, pt;
	const char *tmp = getenv("TMPDIR");
	if (O.dir != NULL) {
		snprintf(C.base, sizeof C.base, "%s", O.dir);
		if (mkdir(C.base, 0755) != 0 && errno != EEXIST)
			die("mkdir %s: %s", C.base, strerror(errno));
	} else {
		snprintf(C.base, sizeof C.base, "%s/docraft-failover-XXXXXX",
			 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
		if (mkdtemp(C.base) == NULL)
			die("mkdtemp %s: %s", C.base, strerror(errno));
	}
	C.made_base = true;
	pt = O.tserver_port != 0 ? O.tserver_port : proc_free_port(NT, -1);
	pm = O.master_port != 0 ? O.master_port : proc_free_port(1, pt);
	if (pt <= 0 || pm <= 0)
		die("no free ports");
	snprintf(C.maddr, sizeof C.maddr, "127.0.0.1:%d", pm);
	snprintf(C.m.dir, sizeof C.m.dir, "%s/master", C.base);
	snprintf(C.m.log, sizeof C.m.log, "%s/master.log", C.base);
	master_start();
	for (int k = 0; k < NT; k++) {
		struct server *s = &C.t[k];
		snprintf(s->addr, sizeof s->addr, "127.0.0.%d:%d", k + 1, pt);
		snprintf(s->dir, sizeof s->dir, "%s/ts%d", C.base, k + 1);
		snprintf(s->log, sizeof s->log, "%s/ts%d.log", C.base, k + 1);
		tserver_start(k);
	}
	say("cluster: master %s, tservers 127.0.0.{1,2,3}:%d, data and logs in %s\n", C.maddr, pt,
	    C.base);
}

static void clients_open(void)
{
	docraft_client_options ao;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options_init(&ao);
	ao.timeout_ms = 3000;
	ao.rpc_timeout_ms = 1000;
	if (docraft_client_open(C.maddr, &ao, &C.admin, errmsg) != 0)
		die("admin client: %s", errmsg);
	/* The measured client: default options. */
	if (docraft_client_open(C.maddr, NULL, &C.writer, errmsg) != 0)
		die("client: %s", errmsg);
}

static void table_up(void)
{
	docraft_schema *s;
	docraft_table_options to = {.num_tablets = 1, .replication_factor = 3,
				    .if_not_exists = true};
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char id[128], leader[40], reps[NT + 2][32];
	uint64_t end = mono_ns() + 30000000000u;
	int rv;

	while (live_tservers() != NT) {
		if (mono_ns() > end)
			die("the tservers did not all heartbeat the master within 30 s");
		sleep_ms(100);
	}
	if (docraft_schema_new(O.table, &s, errmsg) != 0 ||
	    docraft_schema_add_column(s, "k", DOCRAFT_COLUMN_HASH, "bigint", errmsg) != 0 ||
	    docraft_schema_add_column(s, "v", DOCRAFT_COLUMN_REGULAR, "bigint", errmsg) != 0)
		die("schema: %s", errmsg);
	while ((rv = docraft_table_create(C.admin, s, &to)) != 0) {
		if (mono_ns() > end)
			die("create table %s: %s", O.table, docraft_errmsg());
		sleep_ms(200);
	}
	docraft_schema_free(s);
	while (master_view(id, sizeof id, leader, sizeof leader, reps, NT + 2) != NT ||
	       leader[0] == '\0') {
		if (mono_ns() > end)
			die("table %s: no leader within 30 s", O.table);
		sleep_ms(100);
	}
	snprintf(C.tablet_id, sizeof C.tablet_id, "%s", id);
}

int main(int argc, char **argv)
{
	static int64_t rec[MAX_KILLS], inflight[MAX_KILLS], cand[MAX_KILLS], elected[MAX_KILLS],
		ready[MAX_KILLS], after_ready[MAX_KILLS];
	size_t n_rec = 0, n_inflight = 0, n_cand = 0, n_elected = 0, n_ready = 0, n_after = 0;
	unsigned failures = 0;
	uint64_t t0;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!O.seed_given)
		O.seed = (unsigned)(time(NULL) ^ getpid());
	srand(O.seed);
	C.n_targs = split_args(O.tserver_args, C.targs, MAX_EXTRA_ARGS);
	C.n_margs = split_args(O.master_args, C.margs, MAX_EXTRA_ARGS);
	find_exes(argv[0]);
	atexit(at_exit);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);

	t0 = mono_ns();
	cluster_up();
	clients_open();
	table_up();
	say("table %s: tablet %s; tserver args: %s; writes: one every %u ms, %s; seed %u\n",
	    O.table, C.tablet_id, C.n_targs ? O.tserver_args : "(defaults)", O.interval_ms,
	    O.same_key ? "same row" : "a new row each", O.seed);

	if (pthread_create(&W.thread, NULL, writer_main, NULL) != 0)
		die("pthread_create");
	/* Warm up: the client has found the leader and writes succeed. */
	{
		uint64_t end = mono_ns() + 30000000000u;
		for (;;) {
			pthread_mutex_lock(&W.mu);
			uint64_t ok = W.ok;
			pthread_mutex_unlock(&W.mu);
			if (ok >= 20)
				break;
			if (mono_ns() > end)
				die("no write succeeded within 30 s (last error: %s)", W.last_error);
			sleep_ms(50);
		}
	}
	if (!wait_settled(O.settle_ms, 60000))
		die("the tablet did not settle within 60 s");

	for (unsigned i = 1; i <= O.kills; i++) {
		int k = find_leader(20000);
		uint64_t kill_ns, kill_wall, new_ok = 0, old_ok = 0, end;
		int64_t old_at_kill, failed;
		struct breakdown b;
		char newleader[40] = "?";
		uint64_t old_term, new_term = 0;
		int64_t rec_ms = -1, old_ms = -1;

		if (k < 0)
			die("kill %u: no leader found within 20 s", i);
		old_term = leader_term;
		for (int j = 0; j < NT; j++) {
			struct stat st;
			C.t[j].log_mark = stat(C.t[j].log, &st) == 0 ? (long)st.st_size : 0;
		}
		pthread_mutex_lock(&W.mu);
		W.first_new_ok = W.first_old_ok = 0;
		W.failed_since_kill = 0;
		W.old_pending = W.outstanding;
		W.old_at_kill = W.outstanding;
		kill_wall = wall_us();
		kill_ns = mono_ns();
		W.kill_ns = kill_ns;
		pthread_mutex_unlock(&W.mu);
		proc_signal(&C.t[k].p, SIGKILL);
		/* The first new write that succeeds; then the writes in flight at
		 * the kill finish (they give up after the client's 10 s at most). */
		end = kill_ns + (uint64_t)O.recover_timeout_ms * 1000000u;
		for (;;) {
			bool done;
			pthread_mutex_lock(&W.mu);
			new_ok = W.first_new_ok;
			old_ok = W.first_old_ok;
			done = new_ok != 0 && W.old_pending <= 0;
			pthread_mutex_unlock(&W.mu);
			if (done || mono_ns() > end)
				break;
			sleep_ms(5);
		}
		if (!proc_wait(&C.t[k].p, 5000, NULL))
			proc_kill(&C.t[k].p);
		C.t[k].up = false;
		pthread_mutex_lock(&W.mu);
		old_at_kill = W.old_at_kill;
		failed = (int64_t)W.failed_since_kill;
		pthread_mutex_unlock(&W.mu);
		b = scan_logs(k, kill_wall);
		if (new_ok != 0) {
			rec_ms = (int64_t)(new_ok - kill_ns) / 1000000;
			rec[n_rec++] = rec_ms;
		}
		if (old_ok != 0) {
			old_ms = (int64_t)(old_ok - kill_ns) / 1000000;
			inflight[n_inflight++] = old_ms;
		}
		if (b.candidate_ms >= 0)
			cand[n_cand++] = b.candidate_ms;
		if (b.elected_ms >= 0)
			elected[n_elected++] = b.elected_ms;
		if (b.ready_ms >= 0)
			ready[n_ready++] = b.ready_ms;
		if (b.ready_ms >= 0 && rec_ms >= 0)
			after_ready[n_after++] = rec_ms - b.ready_ms;
		for (int j = 0; j < NT; j++) {
			if (j == k || !C.t[j].up)
				continue;
			struct status st = replica_status(C.t[j].addr);
			if (st.ok && strcmp(st.role, "leader") == 0) {
				snprintf(newleader, sizeof newleader, "%s", C.t[j].addr);
				new_term = st.term;
			}
		}
		{
			/* The kill's wall time, to match the servers' logs (UTC). */
			time_t sec = (time_t)(kill_wall / 1000000u);
			struct tm tm;
			gmtime_r(&sec, &tm);
			say("kill %2u/%u at %02d:%02d:%02d.%03dZ ", i, O.kills, tm.tm_hour, tm.tm_min,
			    tm.tm_sec, (int)(kill_wall % 1000000u / 1000));
		}
		say("leader %s: first_new_write_ok_ms=%" PRId64
		    " inflight_ok_ms=%" PRId64 " (in flight at kill: %" PRId64
		    ") | log: candidate_ms=%" PRId64 " elected_ms=%" PRId64 " ready_ms=%" PRId64
		    " | failed_writes=%" PRId64 " new_leader=%s term+%lld\n",
		    C.t[k].addr, rec_ms, old_ms, old_at_kill, b.candidate_ms,
		    b.elected_ms, b.ready_ms, failed, newleader,
		    new_term != 0 ? (long long)(new_term - old_term) : -1LL);
		if (rec_ms < 0 || rec_ms > (int64_t)O.recover_timeout_ms) {
			failures++;
			say("kill %u: NOT recovered within %u ms (last error: %s)\n", i,
			    O.recover_timeout_ms, W.last_error);
			break;
		}
		tserver_start(k);
		if (!wait_settled(O.settle_ms, 60000))
			die("kill %u: the tablet did not settle within 60 s after the restart", i);
		if (i < O.kills)
			sleep_ms(1000 + (unsigned)(rand() % 2001));
	}

	/* Elections beyond the kills' (spurious ones: a follower that missed
	 * heartbeats of a live leader). Terms: 1 at bootstrap, +1 per election
	 * (pre-vote keeps failed candidacies from raising it). */
	for (int j = 0; j < NT; j++) {
		struct status st = C.t[j].up ? replica_status(C.t[j].addr) : (struct status){0};
		if (st.ok && strcmp(st.role, "leader") == 0) {
			long long extra = (long long)st.term - 2 - (long long)(n_rec);
			say("raft term %" PRIu64 " after %zu kills: %lld term(s) beyond one per "
			    "election (split votes: term+2 on a kill's line; else spurious "
			    "elections between kills)\n", st.term, n_rec, extra);
		}
	}
	atomic_store(&W.stop, true);
	pthread_join(W.thread, NULL);
	/* Let the last writes finish (closing would fail them). */
	for (int j = 0; j < 400; j++) {
		pthread_mutex_lock(&W.mu);
		int64_t left = W.outstanding;
		pthread_mutex_unlock(&W.mu);
		if (left <= 0)
			break;
		sleep_ms(5);
	}
	docraft_client_close(C.writer);
	docraft_client_close(C.admin);
	C.writer = C.admin = NULL;

	say("writes: %" PRIu64 " ok, %" PRIu64 " failed, %" PRIu64 " not sent (all slots busy); "
	    "%.0f s%s%s\n",
	    W.ok, W.failed, W.skipped, (double)(mono_ns() - t0) / 1e9,
	    W.failed ? "; last failure: " : "", W.failed ? W.last_error : "");
	say("kills=%zu ", n_rec);
	summary("", rec, n_rec);
	say("inflight_writes n=%zu ", n_inflight);
	summary("", inflight, n_inflight);
	say("log_first_candidate n=%zu ", n_cand);
	summary("", cand, n_cand);
	say("log_leader_elected n=%zu ", n_elected);
	summary("", elected, n_elected);
	say("log_leader_ready n=%zu ", n_ready);
	summary("", ready, n_ready);
	say("client_after_ready n=%zu ", n_after);
	summary("", after_ready, n_after);
	if (O.keep)
		say("data and logs kept in %s\n", C.base);

	/* Stop the servers (SIGKILL: nothing to keep), reap them. */
	proc_kill_all();
	remove_base();
	if (failures > 0) {
		fprintf(stderr, PROG ": a kill did not recover within %u ms\n",
			O.recover_timeout_ms);
		return 1;
	}
	return 0;
}
