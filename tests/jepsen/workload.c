/* docraft-jepsen: the workload client of the failover suite.
 *
 *   docraft-jepsen --masters A,B --out FILE [--time SEC] [--clients N]
 *                  [--workload registers|set|both] [--keys K] [--ops-per-key N]
 *                  [--seed S] [--timeout-ms T] [--rate R] [--final-timeout SEC]
 *                  [--table-prefix P] [--tablets N] [--rf R]
 *
 * Runs N client threads against a cluster for --time seconds and records
 * every operation they make in a history file (tests/jepsen/HISTORY.md),
 * which a checker then judges (linearizable registers, a set that loses no
 * acknowledged add). Modelled on Jepsen's YugabyteDB and etcd suites.
 *
 * Design note.
 *
 * Tables. <P>_registers (k bigint PRIMARY KEY, v bigint) and <P>_set
 * (e bigint PRIMARY KEY), created with IF NOT EXISTS semantics through the
 * schema builder (not CQL: the names stay exactly as given), with --tablets
 * and --rf. Setup retries every error for up to 60 s (the master may be
 * electing, tservers may not have heartbeated yet: "not enough live
 * tservers" is EINVAL until they have), then probes each table with a
 * one-row scan until a tablet answers. A table that already holds rows is
 * reported (the checkers assume registers start nil and the set empty):
 * use a fresh --table-prefix per run.
 *
 * Clients and processes. Each thread owns its docraft_client (its own
 * client id, sequence numbers, connections and metadata cache: one stuck
 * connection never stalls the other threads), opened with timeout_ms =
 * --timeout-ms (the total time of one request, retries included) and
 * rpc_timeout_ms = min(2000, that). A thread is one Jepsen process at a
 * time: thread i starts as process i; after an `info` it continues as
 * i + N, then i + 2N, ... (the old process may still have an operation
 * pending in the cluster).
 *
 * Operations. Registers rotate like jepsen.independent: --keys keys are
 * active; each op picks one at random; a key that has been picked
 * --ops-per-key times is retired and replaced by the next fresh key number
 * (keys are 0, 1, 2, ... in order of first use). Ops: read 40%
 * (docraft_get, read_ht 0: linearizable), write 25% (INSERT v = 0..4),
 * cas 25% (UPDATE v = NEW IF v = OLD, docraft_op_if; OLD, NEW in 0..4),
 * delete 10% (DELETE the row). Set: `add` inserts a unique element,
 * thread * 10^9 + counter. With `both` an op is an add with
 * probability 0.3, else a register op.
 *
 * Outcomes.
 *   DOCRAFT_OK                                  ok
 *   DOCRAFT_ECONDITION (cas condition false)    fail   (definite: nothing applied)
 *   reads (get, scan): any error                fail   (a read changes nothing)
 *   writes: DOCRAFT_EINVAL, ETABLENOTFOUND      fail   (rejected before applying)
 *   writes: EUNAVAILABLE, ETIMEDOUT, ECLOSED,
 *           ELEADERLOST, anything else          info   (may have applied, or may
 *                                                       still apply later)
 *
 * History. Events are stamped with CLOCK_MONOTONIC ns since the workload
 * started (after setup) and appended to the thread's own buffer (a mutex
 * only the writer contends). A writer thread, every 100 ms, takes every
 * buffer, sorts the batch by time (ties: thread, then buffer order, so a
 * process's events stay in order) and appends it to the file with fflush:
 * a crash loses at most ~100 ms of events, and a file cut short is still a
 * valid history up to its last whole line (open invokes count as info).
 * Events straddling two
 * batches may be out of time order by a few µs, which the format allows.
 * Extra `#` comment lines: the run's parameters and clock origins (the
 * CLOCK_MONOTONIC and CLOCK_REALTIME values of time_ns 0, so a nemesis log
 * can be aligned), failed attempts of the final set read, and `# end ...`
 * once the run is complete. The writer also prints one progress line per
 * second to stderr (completions in that second) so a runner sees recovery.
 *
 * Final phase. At --time (or on SIGINT/SIGTERM) threads stop issuing and
 * wait at a barrier until every thread's last operation has completed.
 * Then every register key handed out (active and retired) is read once more
 * (plain `read` events, keys shared out among the threads, each retried
 * after a failed attempt until ok or --final-timeout), and thread 0 reads
 * the whole set with a paged table scan (retried as a whole): one
 * `read-set` invoke/ok pair with the sorted elements; failed attempts are
 * recorded as comments, so the history holds exactly one read-set.
 *
 * Exit status: 0 when the history was written (info operations included),
 * 1 when setup, a final read or writing the file failed (the reason on
 * stderr), 2 for bad arguments. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "docraft/docraft.h"

#define PROG "docraft-jepsen"
#define SETUP_TIMEOUT_S 60
#define MAX_CLIENTS 1024
#define MAX_PREFIX 38 /* + "_registers" = 48, the master's limit on table names */
#define WRITER_PERIOD_MS 100
#define SET_ELEMENT_STRIDE INT64_C(1000000000)
#define REG_VALUES 5 /* register values 0..4 */

/* ---- configuration --------------------------------------------------------------------- */

enum workload { WL_REGISTERS = 1, WL_SET = 2, WL_BOTH = 3 };

static struct config {
	const char *masters;
	const char *out;
	uint32_t time_s;
	uint32_t clients;
	int workload;
	uint32_t keys;
	uint32_t ops_per_key;
	uint64_t seed;
	uint32_t timeout_ms;
	double rate;
	uint32_t final_timeout_s;
	const char *prefix;
	uint32_t tablets;
	uint32_t rf;
	char reg_table[64];
	char set_table[64];
} cfg = {
	.time_s = 60,
	.clients = 10,
	.workload = WL_BOTH,
	.keys = 5,
	.ops_per_key = 200,
	.timeout_ms = 5000,
	.rate = 0,
	.final_timeout_s = 120,
	.prefix = "jepsen",
	.tablets = 3,
	.rf = 3,
};

/* ---- time ------------------------------------------------------------------------------ */

static int64_t t0_mono; /* CLOCK_MONOTONIC ns of time_ns 0 */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ns since the workload started. */
static int64_t now_ns(void)
{
	return mono_ns() - t0_mono;
}

/* Sleeps until CLOCK_MONOTONIC reaches abs_ns. */
static void sleep_until(int64_t abs_ns)
{
	struct timespec ts = {(time_t)(abs_ns / 1000000000), (long)(abs_ns % 1000000000)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_ms(int64_t ms)
{
	sleep_until(mono_ns() + ms * 1000000);
}

/* ---- random numbers (splitmix64: one stream per thread) --------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rnd(s) % n);
}

/* ---- memory ---------------------------------------------------------------------------- */

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (p == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		abort();
	}
	return p;
}

/* ---- events and per-thread logs -------------------------------------------------------- */

enum ev_type { EV_INVOKE, EV_OK, EV_FAIL, EV_INFO, EV_COMMENT };
enum ev_f { F_READ, F_WRITE, F_CAS, F_DELETE, F_ADD, F_READ_SET };

static const char *const type_names[] = {"invoke", "ok", "fail", "info", "#"};
static const char *const f_names[] = {"read", "write", "cas", "delete", "add", "read-set"};

/* A field that is not an integer. */
#define FIELD_NONE INT64_MIN       /* "-" */
#define FIELD_NIL (INT64_MIN + 1)  /* "nil" */

struct event {
	int64_t t;
	int64_t process;
	int64_t key, value, value2; /* FIELD_NONE, FIELD_NIL or an integer */
	char *text;                 /* owned: read-set ok elements, or a comment */
	uint32_t thread;
	uint32_t seq; /* position in its batch, for a stable sort */
	uint8_t type, f;
};

struct evlog {
	pthread_mutex_t mu;
	struct event *v;
	size_t len, cap;
};

static void evlog_push(struct evlog *l, const struct event *e)
{
	pthread_mutex_lock(&l->mu);
	if (l->len == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->v = xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->len++] = *e;
	pthread_mutex_unlock(&l->mu);
}

/* ---- shared state ---------------------------------------------------------------------- */

struct worker {
	uint32_t idx;
	pthread_t tid;
	docraft_client *c;
	int64_t process;
	uint64_t rng;
	int64_t set_counter;
	struct evlog log;
};

static struct worker *workers;

static atomic_ulong n_ok, n_fail, n_info;
static volatile sig_atomic_t stop_requested;

/* Register keys: `active` are the ones ops pick from; every number below
 * next_key has been active. */
static struct {
	pthread_mutex_t mu;
	int64_t *active;
	uint32_t *picks;
	int64_t next_key;
} keys = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_barrier_t phase_barrier;
static atomic_llong final_next; /* next key index to read in the final phase */

/* The first reason the run failed (final reads, file writes); exit 1. */
static struct {
	pthread_mutex_t mu;
	char why[512];
} failure = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void fail_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_run(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&failure.mu);
	if (failure.why[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(failure.why, sizeof failure.why, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&failure.mu);
}

/* Error statistics, for the end-of-run report on stderr. */
static struct {
	pthread_mutex_t mu;
	uint64_t count[DOCRAFT_ERROR_MAX + 1];
	char last[DOCRAFT_ERROR_MAX + 1][DOCRAFT_ERRMSG_SIZE];
} errstats = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void note_error(int rv)
{
	int i = rv > 0 && rv < DOCRAFT_ERROR_MAX ? rv : DOCRAFT_ERROR_MAX;
	const char *msg = docraft_errmsg();
	pthread_mutex_lock(&errstats.mu);
	errstats.count[i]++;
	snprintf(errstats.last[i], sizeof errstats.last[i], "%s", msg);
	pthread_mutex_unlock(&errstats.mu);
}

/* ---- recording ------------------------------------------------------------------------- */

static void record(struct worker *w, int type, int f, int64_t key, int64_t value, int64_t value2,
		   char *text)
{
	struct event e = {
		.t = now_ns(),
		.process = w->process,
		.key = key,
		.value = value,
		.value2 = value2,
		.text = text,
		.thread = w->idx,
		.type = (uint8_t)type,
		.f = (uint8_t)f,
	};
	evlog_push(&w->log, &e);
	switch (type) {
	case EV_OK:
		atomic_fetch_add(&n_ok, 1);
		break;
	case EV_FAIL:
		atomic_fetch_add(&n_fail, 1);
		break;
	case EV_INFO:
		atomic_fetch_add(&n_info, 1);
		break;
	default:
		break;
	}
}

static void record_comment(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void record_comment(struct worker *w, const char *fmt, ...)
{
	char buf[512], *text;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	for (char *p = buf; *p; p++) /* one line */
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	text = xrealloc(NULL, strlen(buf) + 1);
	strcpy(text, buf);
	record(w, EV_COMMENT, 0, 0, 0, 0, text);
}

/* A write's outcome (see the design note). */
static int write_outcome(int rv)
{
	switch (rv) {
	case DOCRAFT_OK:
		return EV_OK;
	case DOCRAFT_ECONDITION:
	case DOCRAFT_EINVAL:
	case DOCRAFT_ETABLENOTFOUND:
		return EV_FAIL;
	default:
		return EV_INFO;
	}
}

/* Records a write's completion; an info retires the process. */
static void complete_write(struct worker *w, int rv, int f, int64_t key, int64_t value,
			   int64_t value2)
{
	int type = write_outcome(rv);
	record(w, type, f, key, value, value2, NULL);
	if (type == EV_INFO)
		w->process += cfg.clients;
}

/* ---- the history file ------------------------------------------------------------------ */

static FILE *out_file;
static bool out_failed;
static atomic_bool writer_stop;

static void put_field(FILE *f, int64_t v)
{
	if (v == FIELD_NONE)
		fputs(" -", f);
	else if (v == FIELD_NIL)
		fputs(" nil", f);
	else
		fprintf(f, " %" PRId64, v);
}

static void write_event(FILE *f, const struct event *e)
{
	if (e->type == EV_COMMENT) {
		fprintf(f, "# %" PRId64 " %" PRId64 " %s\n", e->t, e->process, e->text);
		return;
	}
	fprintf(f, "%" PRId64 " %" PRId64 " %s %s", e->t, e->process, type_names[e->type],
		f_names[e->f]);
	put_field(f, e->key);
	if (e->f == F_READ_SET && e->type == EV_OK)
		fprintf(f, " %s", e->text != NULL && e->text[0] ? e->text : "-");
	else
		put_field(f, e->value);
	put_field(f, e->value2);
	fputc('\n', f);
}

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static struct event *batch;
static size_t batch_cap;

/* Takes every thread's pending events and appends them to the file. */
static void drain_logs(void)
{
	size_t n = 0;
	for (uint32_t i = 0; i < cfg.clients; i++) {
		struct evlog *l = &workers[i].log;
		pthread_mutex_lock(&l->mu);
		if (n + l->len > batch_cap) {
			batch_cap = 2 * (n + l->len);
			batch = xrealloc(batch, batch_cap * sizeof *batch);
		}
		for (size_t k = 0; k < l->len; k++) {
			batch[n] = l->v[k];
			batch[n].seq = (uint32_t)k;
			n++;
		}
		l->len = 0;
		pthread_mutex_unlock(&l->mu);
	}
	if (n == 0)
		return;
	qsort(batch, n, sizeof *batch, cmp_event);
	for (size_t k = 0; k < n; k++) {
		if (!out_failed)
			write_event(out_file, &batch[k]);
		free(batch[k].text);
	}
	if (!out_failed && (fflush(out_file) != 0 || ferror(out_file))) {
		out_failed = true;
		fail_run("writing %s: %s", cfg.out, strerror(errno));
	}
}

static void *writer_main(void *arg)
{
	unsigned long last_ok = 0, last_fail = 0, last_info = 0;
	int64_t next_report = 1000000000;
	(void)arg;
	while (!atomic_load(&writer_stop)) {
		sleep_ms(WRITER_PERIOD_MS);
		drain_logs();
		if (now_ns() >= next_report) {
			unsigned long ok = atomic_load(&n_ok), fl = atomic_load(&n_fail),
				      in = atomic_load(&n_info);
			fprintf(stderr, "t=%" PRId64 "s ok=%lu fail=%lu info=%lu\n",
				next_report / 1000000000, ok - last_ok, fl - last_fail,
				in - last_info);
			last_ok = ok;
			last_fail = fl;
			last_info = in;
			next_report += 1000000000;
			if (next_report < now_ns()) /* a stall: skip the missed seconds */
				next_report = (now_ns() / 1000000000 + 1) * 1000000000;
		}
	}
	drain_logs();
	return NULL;
}

/* ---- register and set operations ------------------------------------------------------- */

static int64_t key_pick(uint64_t *rng)
{
	uint32_t i;
	int64_t k;
	pthread_mutex_lock(&keys.mu);
	i = rnd_below(rng, cfg.keys);
	k = keys.active[i];
	if (++keys.picks[i] >= cfg.ops_per_key) {
		keys.active[i] = keys.next_key++;
		keys.picks[i] = 0;
	}
	pthread_mutex_unlock(&keys.mu);
	return k;
}

/* Reads register key: *value is its v or FIELD_NIL. */
static int reg_get(docraft_client *c, int64_t key, int64_t *value)
{
	docraft_value k = docraft_value_int(key), v;
	docraft_result *r;
	int col, rv;

	rv = docraft_get(c, cfg.reg_table, &k, 1, 0, &r);
	if (rv != 0)
		return rv;
	*value = FIELD_NIL;
	if (docraft_result_nrows(r) > 0) {
		col = docraft_result_column_index(r, "v");
		v = docraft_result_value(r, 0, col < 0 ? SIZE_MAX : (size_t)col);
		if (v.type == DOCRAFT_TYPE_INT) {
			*value = v.v.i;
		} else if (v.type != DOCRAFT_TYPE_NULL) {
			docraft_result_free(r);
			fprintf(stderr, PROG ": key %" PRId64 ": v has type %d, not bigint\n", key,
				v.type);
			return DOCRAFT_ECORRUPT;
		}
	}
	docraft_result_free(r);
	return 0;
}

/* A linearizable read of key, recorded; true when ok. */
static bool op_read(struct worker *w, int64_t key)
{
	int64_t value = FIELD_NONE;
	int rv;
	record(w, EV_INVOKE, F_READ, key, FIELD_NONE, FIELD_NONE, NULL);
	rv = reg_get(w->c, key, &value);
	if (rv == 0) {
		record(w, EV_OK, F_READ, key, value, FIELD_NONE, NULL);
		return true;
	}
	note_error(rv);
	record(w, EV_FAIL, F_READ, key, FIELD_NONE, FIELD_NONE, NULL);
	return false;
}

/* Applies one op built by the caller (freed here); the docraft_write code. */
static int write_one(struct worker *w, const char *table, int rv, docraft_op *op)
{
	if (rv == 0)
		rv = docraft_write(w->c, table, &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	if (rv != 0)
		note_error(rv);
	docraft_op_free(op);
	return rv;
}

static void op_write(struct worker *w, int64_t key)
{
	int64_t nv = rnd_below(&w->rng, REG_VALUES);
	docraft_value k = docraft_value_int(key), v = docraft_value_int(nv);
	docraft_op *op = NULL;
	int rv;
	record(w, EV_INVOKE, F_WRITE, key, nv, FIELD_NONE, NULL);
	rv = docraft_op_insert(&k, 1, &op);
	if (rv == 0)
		rv = docraft_op_column(op, "v", &v);
	rv = write_one(w, cfg.reg_table, rv, op);
	complete_write(w, rv, F_WRITE, key, nv, FIELD_NONE);
}

static void op_cas(struct worker *w, int64_t key)
{
	int64_t ov = rnd_below(&w->rng, REG_VALUES), nv = rnd_below(&w->rng, REG_VALUES);
	docraft_value k = docraft_value_int(key), o = docraft_value_int(ov),
		      v = docraft_value_int(nv);
	docraft_op *op = NULL;
	int rv;
	record(w, EV_INVOKE, F_CAS, key, ov, nv, NULL);
	rv = docraft_op_update(&k, 1, &op);
	if (rv == 0)
		rv = docraft_op_column(op, "v", &v);
	if (rv == 0)
		rv = docraft_op_if(op, "v", &o);
	rv = write_one(w, cfg.reg_table, rv, op);
	complete_write(w, rv, F_CAS, key, ov, nv);
}

static void op_delete(struct worker *w, int64_t key)
{
	docraft_value k = docraft_value_int(key);
	docraft_op *op = NULL;
	int rv;
	record(w, EV_INVOKE, F_DELETE, key, FIELD_NONE, FIELD_NONE, NULL);
	rv = docraft_op_delete_row(&k, 1, &op);
	rv = write_one(w, cfg.reg_table, rv, op);
	complete_write(w, rv, F_DELETE, key, FIELD_NONE, FIELD_NONE);
}

static void op_add(struct worker *w)
{
	int64_t e = (int64_t)w->idx * SET_ELEMENT_STRIDE + w->set_counter++;
	docraft_value k = docraft_value_int(e);
	docraft_op *op = NULL;
	int rv;
	record(w, EV_INVOKE, F_ADD, FIELD_NONE, e, FIELD_NONE, NULL);
	rv = docraft_op_insert(&k, 1, &op);
	rv = write_one(w, cfg.set_table, rv, op);
	complete_write(w, rv, F_ADD, FIELD_NONE, e, FIELD_NONE);
}

static void register_op(struct worker *w)
{
	int64_t key = key_pick(&w->rng);
	uint32_t r = rnd_below(&w->rng, 100);
	if (r < 40)
		op_read(w, key);
	else if (r < 65)
		op_write(w, key);
	else if (r < 90)
		op_cas(w, key);
	else
		op_delete(w, key);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Reads the whole set (a table scan, page after page, at one read time):
 * *text gets "E1,E2,..." ascending ("" when empty), owned by the caller. */
static int set_scan(docraft_client *c, char **text, size_t *count)
{
	docraft_scan_spec spec;
	docraft_result *r = NULL, *next;
	int64_t *elems = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *s;
	int rv, col = -1;

	memset(&spec, 0, sizeof spec);
	spec.limit = 10000;
	spec.page_size = 1000;
	rv = docraft_scan(c, cfg.set_table, &spec, &r);
	while (rv == 0) {
		size_t rows = docraft_result_nrows(r);
		if (col < 0)
			col = docraft_result_column_index(r, "e");
		if (col < 0) {
			fprintf(stderr, PROG ": table %s has no column e\n", cfg.set_table);
			rv = DOCRAFT_EINVAL;
			break;
		}
		for (size_t i = 0; i < rows; i++) {
			docraft_value v = docraft_result_value(r, i, (size_t)col);
			if (v.type != DOCRAFT_TYPE_INT)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				elems = xrealloc(elems, cap * sizeof *elems);
			}
			elems[n++] = v.v.i;
		}
		if (!docraft_result_has_more(r))
			break;
		rv = docraft_scan_resume(c, r, 0, &next);
		docraft_result_free(r);
		r = next;
	}
	docraft_result_free(r);
	if (rv != 0) {
		free(elems);
		return rv;
	}
	qsort(elems, n, sizeof *elems, cmp_i64);
	s = xrealloc(NULL, n * 21 + 1);
	s[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "%s%" PRId64, i ? "," : "", elems[i]);
	free(elems);
	*text = s;
	*count = n;
	return 0;
}

/* ---- the final phase ------------------------------------------------------------------- */

static int64_t backoff_next(int64_t ms)
{
	return ms >= 1000 ? 1000 : 2 * ms;
}

/* Reads one register until ok or deadline (CLOCK_MONOTONIC ns). */
static void final_read(struct worker *w, int64_t key, int64_t deadline)
{
	int64_t backoff = 50;
	for (;;) {
		if (op_read(w, key))
			return;
		if (mono_ns() >= deadline) {
			fail_run("final read of register %" PRId64
				 " did not succeed within %u s: %s",
				 key, cfg.final_timeout_s, docraft_errmsg());
			return;
		}
		sleep_ms(backoff);
		backoff = backoff_next(backoff);
	}
}

static void final_read_set(struct worker *w, int64_t deadline)
{
	int64_t backoff = 50;
	for (;;) {
		char *text = NULL;
		size_t count = 0;
		int64_t t_invoke = now_ns();
		int rv = set_scan(w->c, &text, &count);
		if (rv == 0) {
			struct event e = {
				.t = t_invoke,
				.process = w->process,
				.key = FIELD_NONE,
				.value = FIELD_NONE,
				.value2 = FIELD_NONE,
				.thread = w->idx,
				.type = EV_INVOKE,
				.f = F_READ_SET,
			};
			evlog_push(&w->log, &e);
			record(w, EV_OK, F_READ_SET, FIELD_NONE, FIELD_NONE, FIELD_NONE, text);
			fprintf(stderr, PROG ": final read-set: %zu elements\n", count);
			return;
		}
		note_error(rv);
		record_comment(w, "read-set attempt failed: %s: %s", docraft_strerror(rv),
			       docraft_errmsg());
		if (mono_ns() >= deadline) {
			fail_run("final read of the set did not succeed within %u s: %s: %s",
				 cfg.final_timeout_s, docraft_strerror(rv), docraft_errmsg());
			return;
		}
		sleep_ms(backoff);
		backoff = backoff_next(backoff);
	}
}

static void final_phase(struct worker *w)
{
	int64_t deadline = mono_ns() + (int64_t)cfg.final_timeout_s * 1000000000;
	int64_t nkeys;
	pthread_mutex_lock(&keys.mu);
	nkeys = keys.next_key;
	pthread_mutex_unlock(&keys.mu);
	if (w->idx == 0 && (cfg.workload & WL_SET))
		final_read_set(w, deadline);
	if (!(cfg.workload & WL_REGISTERS))
		return;
	for (;;) {
		int64_t i = atomic_fetch_add(&final_next, 1);
		if (i >= nkeys)
			break;
		final_read(w, i, deadline);
	}
}

/* ---- worker threads -------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int64_t end = t0_mono + (int64_t)cfg.time_s * 1000000000;
	int64_t interval = cfg.rate > 0 ? (int64_t)(1e9 / cfg.rate) : 0;
	int64_t next = mono_ns();

	while (!stop_requested) {
		int64_t now = mono_ns();
		if (now >= end)
			break;
		if (interval > 0) {
			if (next > now) {
				sleep_until(next < end ? next : end);
				continue;
			}
			next += interval;
			if (next < now - 1000000000) /* far behind (a stall): no burst */
				next = now;
		}
		if (cfg.workload == WL_SET ||
		    (cfg.workload == WL_BOTH && rnd_below(&w->rng, 100) < 30))
			op_add(w);
		else
			register_op(w);
	}
	pthread_barrier_wait(&phase_barrier);
	final_phase(w);
	return NULL;
}

/* ---- setup ----------------------------------------------------------------------------- */

static int create_table(docraft_client *c, const char *name, bool registers)
{
	docraft_table_options topt = {cfg.tablets, cfg.rf, true};
	docraft_schema *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	rv = docraft_schema_new(name, &s, errmsg);
	if (rv == 0 && registers) {
		rv = docraft_schema_add_column(s, "k", DOCRAFT_COLUMN_HASH, "bigint", errmsg);
		if (rv == 0)
			rv = docraft_schema_add_column(s, "v", DOCRAFT_COLUMN_REGULAR, "bigint",
						       errmsg);
	} else if (rv == 0) {
		rv = docraft_schema_add_column(s, "e", DOCRAFT_COLUMN_HASH, "bigint", errmsg);
	}
	if (rv != 0) {
		fprintf(stderr, PROG ": schema of %s: %s\n", name, errmsg);
		docraft_schema_free(s);
		return rv;
	}
	rv = docraft_table_create(c, s, &topt);
	docraft_schema_free(s);
	return rv;
}

#define NOT_EMPTY                                                                          \
	"already holds rows: the checkers assume empty tables, so this history will show "  \
	"anomalies (use a fresh --table-prefix)"

/* Tables found not empty at setup: registers, set. */
static bool nonempty[2];

/* One setup step, retried until it succeeds or the setup deadline. */
static bool setup_step(docraft_client *c, const char *table, bool registers, bool create,
		       int64_t deadline)
{
	int64_t last_report = 0;
	int rv;
	for (;;) {
		if (create) {
			rv = create_table(c, table, registers);
		} else {
			docraft_scan_spec spec;
			docraft_result *r = NULL;
			memset(&spec, 0, sizeof spec);
			spec.limit = 1;
			rv = docraft_scan(c, table, &spec, &r);
			if (rv == 0 && docraft_result_nrows(r) > 0) {
				fprintf(stderr, PROG ": warning: table %s %s\n", table,
					NOT_EMPTY);
				nonempty[registers ? 0 : 1] = true;
			}
			docraft_result_free(r);
		}
		if (rv == 0)
			return true;
		if (stop_requested) {
			fprintf(stderr, PROG ": setup interrupted\n");
			return false;
		}
		if (mono_ns() >= deadline) {
			fprintf(stderr,
				PROG ": setup failed: %s table %s: %s: %s (gave up after %d s)\n",
				create ? "creating" : "reading", table, docraft_strerror(rv),
				docraft_errmsg(), SETUP_TIMEOUT_S);
			return false;
		}
		if (mono_ns() - last_report >= INT64_C(5000000000)) {
			fprintf(stderr, PROG ": setup: %s table %s: %s: %s (retrying)\n",
				create ? "creating" : "reading", table, docraft_strerror(rv),
				docraft_errmsg());
			last_report = mono_ns();
		}
		sleep_ms(500);
	}
}

static bool setup(docraft_client *c)
{
	int64_t deadline = mono_ns() + (int64_t)SETUP_TIMEOUT_S * 1000000000;
	bool ok = true;
	if (cfg.workload & WL_REGISTERS)
		ok = ok && setup_step(c, cfg.reg_table, true, true, deadline);
	if (cfg.workload & WL_SET)
		ok = ok && setup_step(c, cfg.set_table, false, true, deadline);
	if (cfg.workload & WL_REGISTERS)
		ok = ok && setup_step(c, cfg.reg_table, true, false, deadline);
	if (cfg.workload & WL_SET)
		ok = ok && setup_step(c, cfg.set_table, false, false, deadline);
	return ok;
}

/* ---- arguments ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --masters A,B --out FILE [options]\n"
		"\n"
		"Runs a Jepsen-style workload against a docraft cluster and writes its\n"
		"history (tests/jepsen/HISTORY.md) to FILE.\n"
		"\n"
		"  --masters A,B          master addresses, ip[:port] (required)\n"
		"  --out FILE             the history file (required; overwritten)\n"
		"  --time SEC             workload duration (default 60)\n"
		"  --clients N            client threads, one docraft client each (default 10)\n"
		"  --workload W           registers | set | both (default both)\n"
		"  --keys K               concurrently active registers (default 5)\n"
		"  --ops-per-key N        operations per register before it retires (default 200)\n"
		"  --seed S               random seed (default: from the clock; printed)\n"
		"  --timeout-ms T         total time of one operation, retries included\n"
		"                         (default 5000)\n"
		"  --rate R               ops per second per client (default 0: closed loop)\n"
		"  --final-timeout SEC    time allowed for the final reads (default 120)\n"
		"  --table-prefix P       tables P_registers and P_set (default jepsen)\n"
		"  --tablets N            tablets per table (default 3)\n"
		"  --rf R                 replication factor: 1, 3 or 5 (default 3)\n"
		"  -h, --help             this text\n"
		"\n"
		"stdout: ops=N ok=N fail=N info=N duration_s=X at the end; stderr: one line\n"
		"per second, t=Ss ok=N fail=N info=N (completions in that second).\n"
		"Exit: 0 history written, 1 setup / final reads / file failed, 2 bad arguments.\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static bool parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(s, &v) || v < min || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool valid_prefix(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n > MAX_PREFIX)
		return false;
	if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z') || p[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return false;
	return true;
}

static int bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_arg(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (" PROG " --help)\n");
	return 2;
}

static const char *const options[] = {
	"--masters", "--out", "--time", "--clients", "--workload", "--keys", "--ops-per-key",
	"--seed", "--timeout-ms", "--rate", "--final-timeout", "--table-prefix", "--tablets",
	"--rf",
};

static bool known_option(const char *name)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
		if (strcmp(name, options[i]) == 0)
			return true;
	return false;
}

/* 0, or 2 after saying what is wrong; -1 for --help (exit 0). */
static int parse_args(int argc, char **argv, bool *seeded)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		char name[32];
		const char *eq;
		size_t n;
		bool ok = true;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strncmp(a, "--", 2) != 0)
			return bad_arg("unexpected argument '%s'", a);
		eq = strchr(a, '=');
		n = eq != NULL ? (size_t)(eq - a) : strlen(a);
		if (n >= sizeof name)
			return bad_arg("unknown option '%s'", a);
		memcpy(name, a, n);
		name[n] = '\0';
		if (!known_option(name))
			return bad_arg("unknown option '%s'", name);
		if (eq != NULL)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return bad_arg("%s needs a value", name);

		if (strcmp(name, "--masters") == 0) {
			cfg.masters = v;
		} else if (strcmp(name, "--out") == 0) {
			cfg.out = v;
		} else if (strcmp(name, "--time") == 0) {
			ok = parse_u32(v, 0, 7 * 86400, &cfg.time_s);
		} else if (strcmp(name, "--clients") == 0) {
			ok = parse_u32(v, 1, MAX_CLIENTS, &cfg.clients);
		} else if (strcmp(name, "--workload") == 0) {
			if (strcmp(v, "registers") == 0)
				cfg.workload = WL_REGISTERS;
			else if (strcmp(v, "set") == 0)
				cfg.workload = WL_SET;
			else if (strcmp(v, "both") == 0)
				cfg.workload = WL_BOTH;
			else
				ok = false;
		} else if (strcmp(name, "--keys") == 0) {
			ok = parse_u32(v, 1, 1000000, &cfg.keys);
		} else if (strcmp(name, "--ops-per-key") == 0) {
			ok = parse_u32(v, 1, UINT32_MAX, &cfg.ops_per_key);
		} else if (strcmp(name, "--seed") == 0) {
			ok = parse_u64(v, &cfg.seed);
			*seeded = true;
		} else if (strcmp(name, "--timeout-ms") == 0) {
			ok = parse_u32(v, 1, 3600000, &cfg.timeout_ms);
		} else if (strcmp(name, "--rate") == 0) {
			char *end;
			errno = 0;
			cfg.rate = strtod(v, &end);
			ok = errno == 0 && end != v && *end == '\0' && cfg.rate >= 0 &&
			     cfg.rate <= 1e6;
		} else if (strcmp(name, "--final-timeout") == 0) {
			ok = parse_u32(v, 1, 86400, &cfg.final_timeout_s);
		} else if (strcmp(name, "--table-prefix") == 0) {
			cfg.prefix = v;
			if (!valid_prefix(v))
				return bad_arg("--table-prefix '%s': 1..%d letters, digits or '_', "
					       "not starting with a digit",
					       v, MAX_PREFIX);
		} else if (strcmp(name, "--tablets") == 0) {
			ok = parse_u32(v, 1, 1024, &cfg.tablets);
		} else if (strcmp(name, "--rf") == 0) {
			ok = parse_u32(v, 1, 5, &cfg.rf) && cfg.rf % 2 == 1;
		} else {
			return bad_arg("unknown option '%s'", name);
		}
		if (!ok)
			return bad_arg("bad value '%s' for %s", v, name);
	}
	if (cfg.masters == NULL)
		return bad_arg("--masters is required");
	if (cfg.out == NULL)
		return bad_arg("--out is required");
	snprintf(cfg.reg_table, sizeof cfg.reg_table, "%s_registers", cfg.prefix);
	snprintf(cfg.set_table, sizeof cfg.set_table, "%s_set", cfg.prefix);
	return 0;
}

static const char *workload_name(int wl)
{
	return wl == WL_REGISTERS ? "registers" : wl == WL_SET ? "set" : "both";
}

/* ---- main ------------------------------------------------------------------------------ */

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void report_errors(void)
{
	for (int i = 0; i <= DOCRAFT_ERROR_MAX; i++)
		if (errstats.count[i] > 0)
			fprintf(stderr, PROG ": errors: %" PRIu64 " x %s (last: %s)\n",
				errstats.count[i],
				i < DOCRAFT_ERROR_MAX ? docraft_strerror(i) : "other",
				errstats.last[i]);
}

int main(int argc, char **argv)
{
	docraft_client_options opts;
	docraft_client *setup_client = NULL;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct sigaction sa;
	pthread_t writer;
	struct timespec rt;
	bool seeded = false, setup_ok;
	uint32_t opened = 0;
	unsigned long ok, fl, in;
	int rv, status = 0;

	rv = parse_args(argc, argv, &seeded);
	if (rv != 0)
		return rv < 0 ? 0 : rv;
	if (!seeded) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		cfg.seed = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND; /* a second signal kills */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	docraft_client_options_init(&opts);
	opts.timeout_ms = cfg.timeout_ms;
	if (opts.rpc_timeout_ms > cfg.timeout_ms)
		opts.rpc_timeout_ms = cfg.timeout_ms;

	/* The setup client keeps the default total time (creating tablets may
	 * take longer than one workload operation is allowed). */
	{
		docraft_client_options so;
		docraft_client_options_init(&so);
		rv = docraft_client_open(cfg.masters, &so, &setup_client, errmsg);
		if (rv != 0)
			return bad_arg("--masters '%s': %s", cfg.masters, errmsg);
	}

	out_file = fopen(cfg.out, "w");
	if (out_file == NULL) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", cfg.out, strerror(errno));
		docraft_client_close(setup_client);
		return 1;
	}

	fprintf(stderr,
		PROG ": masters %s, workload %s, %u clients, %u s, seed %" PRIu64
		", tables %s/%s (%u tablets, rf %u)\n",
		cfg.masters, workload_name(cfg.workload), cfg.clients, cfg.time_s, cfg.seed,
		cfg.reg_table, cfg.set_table, cfg.tablets, cfg.rf);
	setup_ok = setup(setup_client);
	docraft_client_close(setup_client);
	if (!setup_ok) { /* no history: leave no empty file behind */
		fclose(out_file);
		unlink(cfg.out);
		return 1;
	}

	workers = xrealloc(NULL, cfg.clients * sizeof *workers);
	memset(workers, 0, cfg.clients * sizeof *workers);
	keys.active = xrealloc(NULL, cfg.keys * sizeof *keys.active);
	keys.picks = xrealloc(NULL, cfg.keys * sizeof *keys.picks);
	for (uint32_t i = 0; i < cfg.keys; i++) {
		keys.active[i] = i;
		keys.picks[i] = 0;
	}
	keys.next_key = cfg.keys;
	for (uint32_t i = 0; i < cfg.clients; i++) {
		struct worker *w = &workers[i];
		w->idx = i;
		w->process = i;
		w->rng = cfg.seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (i + 1));
		pthread_mutex_init(&w->log.mu, NULL);
	}
	for (uint32_t i = 0; i < cfg.clients; i++) {
		rv = docraft_client_open(cfg.masters, &opts, &workers[i].c, errmsg);
		if (rv != 0) {
			fprintf(stderr, PROG ": client %u: %s\n", i, errmsg);
			status = 1;
			break;
		}
		opened++;
	}
	if (status != 0)
		goto out;
	pthread_barrier_init(&phase_barrier, NULL, cfg.clients);

	/* time_ns 0. */
	clock_gettime(CLOCK_REALTIME, &rt);
	t0_mono = mono_ns();
	fprintf(out_file, "# docraft-jepsen history v1\n");
	fprintf(out_file,
		"# masters=%s workload=%s clients=%u time_s=%u keys=%u ops_per_key=%u "
		"seed=%" PRIu64 " timeout_ms=%u rate=%g final_timeout_s=%u tables=%s,%s "
		"tablets=%u rf=%u\n",
		cfg.masters, workload_name(cfg.workload), cfg.clients, cfg.time_s, cfg.keys,
		cfg.ops_per_key, cfg.seed, cfg.timeout_ms, cfg.rate, cfg.final_timeout_s,
		cfg.reg_table, cfg.set_table, cfg.tablets, cfg.rf);
	fprintf(out_file, "# time_ns 0 = CLOCK_MONOTONIC %" PRId64 " ns = CLOCK_REALTIME %" PRId64
			  " ns\n",
		t0_mono, (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec);
	if (nonempty[0])
		fprintf(out_file, "# warning: table %s " NOT_EMPTY "\n", cfg.reg_table);
	if (nonempty[1])
		fprintf(out_file, "# warning: table %s " NOT_EMPTY "\n", cfg.set_table);
	fflush(out_file);

	if ((rv = pthread_create(&writer, NULL, writer_main, NULL)) != 0) {
		fprintf(stderr, PROG ": pthread_create: %s\n", strerror(rv));
		status = 1;
		goto out_barrier;
	}
	for (uint32_t i = 0; i < cfg.clients; i++) {
		if ((rv = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i])) != 0) {
			/* Without every thread the barrier would never open. */
			fprintf(stderr, PROG ": pthread_create: %s\n", strerror(rv));
			abort();
		}
	}
	for (uint32_t i = 0; i < cfg.clients; i++)
		pthread_join(workers[i].tid, NULL);
	atomic_store(&writer_stop, true);
	pthread_join(writer, NULL);

	ok = atomic_load(&n_ok);
	fl = atomic_load(&n_fail);
	in = atomic_load(&n_info);
	if (!out_failed) {
		fprintf(out_file, "# end ops=%lu ok=%lu fail=%lu info=%lu registers=%" PRId64 "\n",
			ok + fl + in, ok, fl, in,
			(cfg.workload & WL_REGISTERS) ? keys.next_key : 0);
		if (fflush(out_file) != 0 || ferror(out_file))
			fail_run("writing %s: %s", cfg.out, strerror(errno));
	}
	report_errors();
	printf("ops=%lu ok=%lu fail=%lu info=%lu duration_s=%.3f\n", ok + fl + in, ok, fl, in,
	       (double)now_ns() / 1e9);
	fflush(stdout);
	if (failure.why[0] != '\0') {
		fprintf(stderr, PROG ": failed: %s\n", failure.why);
		status = 1;
	}

out_barrier:
	pthread_barrier_destroy(&phase_barrier);
out:
	for (uint32_t i = 0; i < opened; i++)
		docraft_client_close(workers[i].c);
	for (uint32_t i = 0; i < cfg.clients; i++) {
		for (size_t k = 0; k < workers[i].log.len; k++)
			free(workers[i].log.v[k].text);
		free(workers[i].log.v);
		pthread_mutex_destroy(&workers[i].log.mu);
	}
	if (fclose(out_file) != 0 && status == 0) {
		fprintf(stderr, PROG ": closing %s: %s\n", cfg.out, strerror(errno));
		status = 1;
	}
	free(workers);
	free(keys.active);
	free(keys.picks);
	free(batch);
	return status;
}
