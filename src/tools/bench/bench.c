/* docraft bench: a YCSB-style closed-loop benchmark of one system (docraft,
 * etcd or Redis, behind driver.h).
 *
 *   docraft bench [--system docraft|etcd|redis] [--endpoints LIST]
 *                 [--masters LIST] --workload load|a|b|c|write [--keys N]
 *                 [--value-size V] [--clients C] [--duration SEC | --ops N]
 *                 [--distribution uniform|zipfian] [--warmup SEC]
 *                 [--table NAME] [--tablets N] [--rf N]
 *                 [--client-per-thread] [--seed S] [--json]
 *
 * Design note.
 *
 * Workloads (YCSB core workloads on one value per key): load inserts keys
 * 0..N-1 once each, the client threads taking the next key from a shared
 * counter; a is 50% reads / 50% updates, b 95/5, c reads only, write
 * updates only, on keys drawn from the distribution (YCSB's scrambled
 * zipfian, constant 0.99, by default). Keys are "user" + 10 digits, values
 * V random bytes (incompressible).
 *
 * Threads. Each client is a thread in a closed loop: draw, call the driver,
 * time the call with CLOCK_MONOTONIC, record it; the next call starts when
 * the previous one returned. Each thread records into its own histograms
 * (src/common/histogram.h, nanoseconds) under its own mutex, which only the
 * main thread also takes, once a second, to merge and reset the interval
 * histogram behind the progress line; the totals are merged after the
 * threads are joined. Operations started during --warmup run but are not
 * counted. With --ops the threads share a counter of measured operations.
 *
 * Timing: the measured interval starts when the warm-up ends and ends at
 * --duration, when --ops operations are done, when load has inserted
 * every key, or at SIGINT; ops/s is measured operations over it. Failed
 * operations are counted as errors, not timed. */
#include "tools/bench/bench.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/histogram.h"
#include "tools/bench/driver.h"
#include "tools/bench/workload.h"

#define ERR_LEN 512
#define MAX_CLIENTS 4096
#define ERRORS_SHOWN 5

static const struct bench_driver *const drivers[] = {
	&bench_driver_docraft,
#ifdef BENCH_HAVE_ETCD
	&bench_driver_etcd,
#endif
#ifdef BENCH_HAVE_REDIS
	&bench_driver_redis,
#endif
};

struct config {
	const struct bench_driver *driver;
	struct bench_target target;
	docraft_client_options dopts;
	enum workload wl;
	uint64_t keys;
	enum distribution dist;
	double duration; /* s; 0: not given */
	uint64_t ops;    /* 0: not given */
	double warmup;   /* s */
	uint64_t seed;
	bool json;
};

/* Histogram slots per operation kind. */
enum { H_READ, H_WRITE, H_N };

struct worker {
	pthread_t th;
	int index;
	struct run *run;
	void *conn;
	struct rng rng;
	unsigned char *vbuf; /* 2 * value_size random bytes */
	int open_rv;
	char open_err[ERR_LEN];

	/* Guarded by mu (this thread and the main thread). */
	pthread_mutex_t mu;
	struct histogram hist[H_N]; /* measured, per kind */
	struct histogram interval;  /* every op since the last progress line */
	uint64_t errors;            /* measured */
	uint64_t all_errors;        /* warm-up included */
	uint64_t not_found;         /* measured reads of a missing key */
};

struct run {
	const struct config *cfg;
	const struct bench_driver *d;
	void *shared;
	struct keychooser kc;
	struct worker *w;
	pthread_barrier_t ready;

	atomic_bool stop;
	atomic_bool measuring;
	atomic_bool abandon;       /* an open failed */
	atomic_uint_fast64_t next_key; /* load */
	atomic_uint_fast64_t issued;   /* measured ops taken, with --ops */
	atomic_int errors_shown;

	pthread_mutex_t mu;        /* guards running and last_done_ns */
	pthread_cond_t cond;       /* a worker finished */
	int running;
	uint64_t last_done_ns;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

size_t bench_endpoint(const char *list, size_t i, char *out, size_t len)
{
	size_t n = 0, want;
	const char *p = list;
	if (len > 0)
		out[0] = '\0';
	if (list == NULL || *list == '\0')
		return 0;
	for (const char *q = list; *q; q++)
		n += *q == ',';
	n++;
	want = i % n;
	for (size_t k = 0; k < want; k++)
		p = strchr(p, ',') + 1;
	if (len > 0) {
		size_t l = strcspn(p, ",");
		if (l >= len)
			l = len - 1;
		memcpy(out, p, l);
		out[l] = '\0';
	}
	return n;
}

/* ---- usage and options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: docraft bench [options] --workload load|a|b|c|write\n"
		"\n"
		"A closed-loop YCSB-style benchmark: --clients threads each run one request\n"
		"at a time. Progress every second on stderr, a summary on stdout.\n"
		"\n"
		"  --system S            docraft (default), etcd or redis (this build has");
	for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
		fprintf(f, "%s%s", i ? ", " : "\n                        ", drivers[i]->name);
	fprintf(f,
		")\n"
		"  --endpoints LIST      etcd: host:port,... (default 127.0.0.1:2379); redis:\n"
		"                        host:port,... (default 127.0.0.1:6379); client thread i\n"
		"                        uses entry i mod count; docraft: same as --masters\n"
		"  --masters LIST        docraft masters ip:port,... (default: docraft's --masters)\n"
		"  --workload W          load: insert keys 0..N-1 once, split across clients;\n"
		"                        a: 50%% reads 50%% updates; b: 95/5; c: reads only;\n"
		"                        write: updates only\n"
		"  --keys N              key space (default 100000)\n"
		"  --value-size V        bytes per value (default 100)\n"
		"  --clients C           client threads (default 1)\n"
		"  --duration SEC        measured time (default 10 s; load: until every key)\n"
		"  --ops N               measured operations instead of a duration\n"
		"  --warmup SEC          run this long before measuring (default 0)\n"
		"  --distribution D      zipfian (default: YCSB's scrambled zipfian, 0.99) or\n"
		"                        uniform\n"
		"  --table NAME          docraft table (k text PRIMARY KEY, v blob), created if\n"
		"                        missing (default bench)\n"
		"  --tablets N, --rf N   its tablets and replication factor when created\n"
		"                        (default: docraft's --tablets/--rf, else the\n"
		"                        master's: one tablet per live tablet server)\n"
		"  --client-per-thread   docraft: one docraft_client per thread (default: one\n"
		"                        client shared by all threads, which is faster)\n"
		"  --seed S              random seed (default: from the clock)\n"
		"  --json                also print the summary as one JSON line\n"
		"  -h, --help            this text\n"
		"\n"
		"Reads are linearizable: docraft_get at read time 0, etcd range without\n"
		"serializable, Redis GET. Exit status 0 when operations ran and none failed.\n");
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "docraft bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (docraft bench --help)\n");
	return 2;
}

static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return bad("%s: '%s' is not a number", opt, s);
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return bad("%s: '%s' is not a number", opt, s);
	if (v < min || v > max)
		return bad("%s: %s is out of range (%" PRIu64 "..%" PRIu64 ")", opt, s, min, max);
	*out = v;
	return 0;
}

static int parse_seconds(const char *opt, const char *s, double min, double *out)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || end == s || !isfinite(v))
		return bad("%s: '%s' is not a number of seconds", opt, s);
	if (v < min || v > 86400)
		return bad("%s: %s is out of range (%g..86400 s)", opt, s, min);
	*out = v;
	return 0;
}

static bool takes_value(const char *name)
{
	static const char *const names[] = {
		"--system", "--endpoints", "--masters", "--workload", "--keys", "--value-size",
		"--clients", "--duration", "--ops", "--warmup", "--distribution", "--table",
		"--tablets", "--rf", "--seed",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* Fills cfg from argv (argv[0] is "bench"); 0, 2 for a usage error (said),
 * or -1 for --help (printed). */
static int parse(int argc, char **argv, const char *masters, struct config *cfg)
{
	const char *system = "docraft", *endpoints = NULL, *own_masters = NULL;
	const char *workload = NULL, *dist = "zipfian";
	uint64_t v;
	int rv;

	memset(cfg, 0, sizeof *cfg);
	cfg->keys = 100000;
	cfg->target.value_size = 100;
	cfg->target.clients = 1;
	cfg->target.table = "bench";
	cfg->seed = now_ns() ^ ((uint64_t)getpid() << 32);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		const char *eq = strchr(a, '=');
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strncmp(a, "--", 2) != 0)
			return bad("unexpected argument '%s'", a);
		if (eq != NULL) {
			snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
			val = eq + 1;
		} else {
			snprintf(name, sizeof name, "%s", a);
		}
		if (strcmp(name, "--json") == 0 || strcmp(name, "--client-per-thread") == 0) {
			if (val != NULL)
				return bad("%s takes no value", name);
			if (strcmp(name, "--json") == 0)
				cfg->json = true;
			else
				cfg->target.client_per_thread = true;
			continue;
		}
		if (!takes_value(name))
			return bad("unknown option %s", name);
		if (val == NULL) {
			if (i + 1 >= argc)
				return bad("%s needs a value", name);
			val = argv[++i];
		}
		if (strcmp(name, "--system") == 0) {
			system = val;
		} else if (strcmp(name, "--endpoints") == 0) {
			endpoints = val;
		} else if (strcmp(name, "--masters") == 0) {
			own_masters = val;
		} else if (strcmp(name, "--workload") == 0) {
			workload = val;
		} else if (strcmp(name, "--keys") == 0) {
			if ((rv = parse_u64(name, val, 1, 10000000000ull, &cfg->keys)) != 0)
				return rv;
		} else if (strcmp(name, "--value-size") == 0) {
			if ((rv = parse_u64(name, val, 1, 1 << 20, &v)) != 0)
				return rv;
			cfg->target.value_size = (size_t)v;
		} else if (strcmp(name, "--clients") == 0) {
			if ((rv = parse_u64(name, val, 1, MAX_CLIENTS, &v)) != 0)
				return rv;
			cfg->target.clients = (int)v;
		} else if (strcmp(name, "--duration") == 0) {
			if ((rv = parse_seconds(name, val, 0.001, &cfg->duration)) != 0)
				return rv;
		} else if (strcmp(name, "--ops") == 0) {
			if ((rv = parse_u64(name, val, 1, UINT64_MAX / 2, &cfg->ops)) != 0)
				return rv;
		} else if (strcmp(name, "--warmup") == 0) {
			if ((rv = parse_seconds(name, val, 0, &cfg->warmup)) != 0)
				return rv;
		} else if (strcmp(name, "--distribution") == 0) {
			dist = val;
		} else if (strcmp(name, "--table") == 0) {
			cfg->target.table = val;
		} else if (strcmp(name, "--tablets") == 0) {
			if ((rv = parse_u64(name, val, 1, 4096, &v)) != 0)
				return rv;
			cfg->dopts.num_tablets = (uint32_t)v;
		} else if (strcmp(name, "--rf") == 0) {
			if ((rv = parse_u64(name, val, 1, 7, &v)) != 0)
				return rv;
			cfg->dopts.replication_factor = (uint32_t)v;
		} else if (strcmp(name, "--seed") == 0) {
			if ((rv = parse_u64(name, val, 0, UINT64_MAX, &cfg->seed)) != 0)
				return rv;
		} else {
			return bad("unknown option %s", name);
		}
	}

	if (workload == NULL)
		return bad("--workload is required (load, a, b, c or write)");
	if ((rv = workload_parse(workload)) < 0)
		return bad("--workload: unknown workload '%s' (load, a, b, c or write)", workload);
	cfg->wl = (enum workload)rv;
	if (strcmp(dist, "zipfian") == 0)
		cfg->dist = DIST_SCRAMBLED_ZIPFIAN;
	else if (strcmp(dist, "uniform") == 0)
		cfg->dist = DIST_UNIFORM;
	else
		return bad("--distribution: '%s' is not uniform or zipfian", dist);
	if (cfg->duration > 0 && cfg->ops > 0)
		return bad("give --duration or --ops, not both");
	if (cfg->wl != WL_LOAD && cfg->duration == 0 && cfg->ops == 0)
		cfg->duration = 10;

	for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
		if (strcmp(system, drivers[i]->name) == 0)
			cfg->driver = drivers[i];
	if (cfg->driver == NULL) {
		if (strcmp(system, "etcd") == 0)
			fprintf(stderr, "docraft bench: --system etcd: this docraft was built without "
					"libcurl (apt-get install libcurl4-openssl-dev, then meson "
					"setup --reconfigure and rebuild)\n");
		else if (strcmp(system, "redis") == 0)
			fprintf(stderr, "docraft bench: --system redis: this docraft was built without "
					"hiredis (apt-get install libhiredis-dev, then meson "
					"setup --reconfigure and rebuild)\n");
		else
			return bad("--system: unknown system '%s' (docraft, etcd or redis)", system);
		return 2;
	}
	if (cfg->driver == &bench_driver_docraft) {
		if (own_masters != NULL && endpoints != NULL && strcmp(own_masters, endpoints) != 0)
			return bad("--masters and --endpoints disagree (for docraft they are the "
				   "same)");
		cfg->target.endpoints = own_masters ? own_masters : endpoints ? endpoints : masters;
	} else {
		if (own_masters != NULL)
			return bad("--masters is for --system docraft; use --endpoints");
		if (cfg->target.client_per_thread)
			return bad("--client-per-thread is for --system docraft");
		cfg->target.endpoints = endpoints ? endpoints :
				       strcmp(system, "etcd") == 0 ? "127.0.0.1:2379" : "127.0.0.1:6379";
	}
	return 0;
}

/* ---- client threads ---- */

static void show_error(struct run *r, const char *err)
{
	int n = atomic_fetch_add(&r->errors_shown, 1);
	if (n < ERRORS_SHOWN)
		fprintf(stderr, "docraft bench: error: %s\n", err);
	else if (n == ERRORS_SHOWN)
		fprintf(stderr, "docraft bench: (more errors: only counted from now on)\n");
}

static void worker_done(struct run *r)
{
	pthread_mutex_lock(&r->mu);
	r->running--;
	r->last_done_ns = now_ns();
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	const struct config *cfg = r->cfg;
	size_t vsize = cfg->target.value_size;
	char key[KEY_NAME_MAX], err[ERR_LEN];

	w->open_rv = r->d->open(r->shared, w->index, &w->conn, w->open_err, sizeof w->open_err);
	if (w->open_rv != 0)
		atomic_store(&r->abandon, true);
	pthread_barrier_wait(&r->ready);
	if (atomic_load(&r->abandon))
		goto out;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		bool measured = atomic_load_explicit(&r->measuring, memory_order_relaxed);
		enum op_kind kind;
		uint64_t k, t0, t1;
		size_t klen;
		int rv;

		if (cfg->wl == WL_LOAD) {
			k = atomic_fetch_add(&r->next_key, 1);
			if (k >= cfg->keys)
				break;
			kind = OP_INSERT;
		} else {
			kind = workload_next_op(cfg->wl, &w->rng);
			k = keychooser_next(&r->kc, &w->rng);
		}
		if (measured && cfg->ops > 0 && atomic_fetch_add(&r->issued, 1) >= cfg->ops)
			break;
		klen = key_name(k, key);
		t0 = now_ns();
		if (kind == OP_READ)
			rv = r->d->get(w->conn, key, klen, err, sizeof err);
		else
			rv = r->d->put(w->conn, key, klen, w->vbuf + rng_below(&w->rng, vsize + 1),
				       vsize, kind == OP_INSERT, err, sizeof err);
		t1 = now_ns();

		pthread_mutex_lock(&w->mu);
		if (rv < 0) {
			w->all_errors++;
			w->errors += measured;
		} else {
			histogram_record(&w->interval, t1 - t0);
			if (measured) {
				histogram_record(&w->hist[kind == OP_READ ? H_READ : H_WRITE],
						 t1 - t0);
				w->not_found += kind == OP_READ && rv == 0;
			}
		}
		pthread_mutex_unlock(&w->mu);
		if (rv < 0)
			show_error(r, err);
	}
out:
	worker_done(r);
	return NULL;
}

/* ---- reporting ---- */

struct stats {
	uint64_t ops;
	double ops_per_s, mean, p50, p95, p99, p999, max; /* ms */
};

static struct stats stats_of(const struct histogram *h, double seconds)
{
	struct stats s;
	s.ops = h->count;
	s.ops_per_s = seconds > 0 ? (double)h->count / seconds : 0;
	s.mean = h->count ? ms(h->sum / h->count) : 0;
	s.p50 = ms(histogram_quantile(h, 0.50));
	s.p95 = ms(histogram_quantile(h, 0.95));
	s.p99 = ms(histogram_quantile(h, 0.99));
	s.p999 = ms(histogram_quantile(h, 0.999));
	s.max = h->count ? ms(h->max) : 0;
	return s;
}

static void print_stats(const char *label, const struct stats *s)
{
	printf("%s ops %" PRIu64 "  ops/s %.1f  p50 %.3f ms  p95 %.3f ms  p99 %.3f ms  "
	       "p99.9 %.3f ms  max %.3f ms",
	       label, s->ops, s->ops_per_s, s->p50, s->p95, s->p99, s->p999, s->max);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_stats(const struct stats *s)
{
	printf("\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,\"mean_ms\":%.4f,\"p50_ms\":%.4f,"
	       "\"p95_ms\":%.4f,\"p99_ms\":%.4f,\"p999_ms\":%.4f,\"max_ms\":%.4f",
	       s->ops, s->ops_per_s, s->mean, s->p50, s->p95, s->p99, s->p999, s->max);
}

/* One progress line: the interval histograms of every worker, merged and
 * reset. */
static void progress(struct run *r, uint64_t start, uint64_t *last, struct histogram *tmp)
{
	uint64_t now = now_ns(), errors = 0;
	double secs = (double)(now - *last) / 1e9;
	histogram_init(tmp);
	for (int i = 0; i < r->cfg->target.clients; i++) {
		struct worker *w = &r->w[i];
		pthread_mutex_lock(&w->mu);
		histogram_merge(tmp, &w->interval);
		histogram_init(&w->interval);
		errors += w->all_errors;
		pthread_mutex_unlock(&w->mu);
	}
	*last = now;
	fprintf(stderr, "[%3.0fs] %.0f ops/s  p50 %.2f ms  p99 %.2f ms  errors %" PRIu64 "%s\n",
		(double)(now - start) / 1e9, secs > 0 ? (double)tmp->count / secs : 0,
		ms(histogram_quantile(tmp, 0.5)), ms(histogram_quantile(tmp, 0.99)), errors,
		atomic_load(&r->measuring) ? "" : "  (warm-up)");
}

static const char *dist_name(enum distribution d)
{
	return d == DIST_UNIFORM ? "uniform" : "zipfian";
}

/* ---- the run ---- */

static int run(const struct config *cfg)
{
	struct run r;
	int n = cfg->target.clients, status = 0, started = 0;
	bool finished = false; /* every thread ended by itself (--ops, load) */
	char err[ERR_LEN], how[512];
	uint64_t start, mstart = 0, mend = 0, last, warm_end, stop_at = UINT64_MAX;
	uint64_t errors = 0, not_found = 0;
	struct histogram *tmp, *total, *per;
	struct sigaction sa;
	double secs;

	memset(&r, 0, sizeof r);
	r.cfg = cfg;
	r.d = cfg->driver;
	if (cfg->wl != WL_LOAD)
		keychooser_init(&r.kc, cfg->dist, cfg->keys);
	tmp = malloc(sizeof *tmp);
	total = malloc(sizeof *total);
	per = malloc(H_N * sizeof *per);
	r.w = calloc((size_t)n, sizeof *r.w);
	if (tmp == NULL || total == NULL || per == NULL || r.w == NULL) {
		fprintf(stderr, "docraft bench: out of memory\n");
		exit(1);
	}
	if (r.d->setup(&cfg->target, &r.shared, err, sizeof err) != 0) {
		fprintf(stderr, "docraft bench: %s: %s\n", r.d->name, err);
		free(tmp), free(total), free(per), free(r.w);
		return 1;
	}
	r.d->describe(r.shared, how, sizeof how);

	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cond, NULL);
	pthread_barrier_init(&r.ready, NULL, (unsigned)n + 1);
	atomic_store(&r.measuring, cfg->warmup == 0);
	for (int i = 0; i < n; i++) {
		struct worker *w = &r.w[i];
		w->index = i;
		w->run = &r;
		rng_seed(&w->rng, cfg->seed + 0x1000193ull * (uint64_t)(i + 1));
		w->vbuf = malloc(2 * cfg->target.value_size + 1);
		if (w->vbuf == NULL) {
			fprintf(stderr, "docraft bench: out of memory\n");
			exit(1);
		}
		for (size_t b = 0; b < 2 * cfg->target.value_size + 1; b++)
			w->vbuf[b] = (unsigned char)rng_next(&w->rng);
		pthread_mutex_init(&w->mu, NULL);
		for (int k = 0; k < H_N; k++)
			histogram_init(&w->hist[k]);
		histogram_init(&w->interval);
	}
	r.running = n;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&r.w[i].th, NULL, worker_main, &r.w[i]) != 0) {
			fprintf(stderr, "docraft bench: cannot start client thread %d\n", i);
			exit(1);
		}
		started++;
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	fprintf(stderr, "docraft bench: %s, workload %s, %d client%s: %s\n", r.d->name,
		workload_name(cfg->wl), n, n == 1 ? "" : "s", how);
	pthread_barrier_wait(&r.ready);
	start = now_ns();
	if (atomic_load(&r.abandon)) {
		for (int i = 0; i < n; i++)
			if (r.w[i].open_rv != 0) {
				fprintf(stderr, "docraft bench: %s: client %d: %s\n", r.d->name, i,
					r.w[i].open_err);
				break;
			}
		status = 1;
		goto join;
	}

	warm_end = start + (uint64_t)(cfg->warmup * 1e9);
	mstart = warm_end;
	stop_at = cfg->duration > 0 ? warm_end + (uint64_t)(cfg->duration * 1e9) : UINT64_MAX;
	last = start;
	pthread_mutex_lock(&r.mu);
	for (uint64_t tick = start + 1000000000ull;;) {
		uint64_t now = now_ns(), wake = tick;
		if (r.running == 0) {
			finished = true;
			break;
		}
		if (interrupted)
			break;
		if (!atomic_load(&r.measuring) && now >= warm_end) {
			mstart = now;
			stop_at = cfg->duration > 0 ? now + (uint64_t)(cfg->duration * 1e9) :
						      UINT64_MAX;
			atomic_store(&r.measuring, true);
		}
		if (now >= stop_at)
			break;
		if (now >= tick) {
			pthread_mutex_unlock(&r.mu);
			progress(&r, start, &last, tmp);
			pthread_mutex_lock(&r.mu);
			tick += 1000000000ull;
			continue;
		}
		if (!atomic_load(&r.measuring) && warm_end < wake)
			wake = warm_end;
		if (stop_at < wake)
			wake = stop_at;
		if (now + 100000000ull < wake)
			wake = now + 100000000ull; /* a SIGINT does not wake the wait */
		{
			/* pthread_cond_timedwait takes CLOCK_REALTIME: sleep a relative time */
			struct timespec ts;
			uint64_t d = wake - now;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(d / 1000000000ull);
			ts.tv_nsec += (long)(d % 1000000000ull);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&r.cond, &r.mu, &ts);
		}
	}
	pthread_mutex_unlock(&r.mu);
	mend = now_ns();
	if (stop_at != UINT64_MAX && mend > stop_at)
		mend = stop_at;
join:
	atomic_store(&r.stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(r.w[i].th, NULL);
	if (finished)
		mend = r.last_done_ns; /* --ops or load: when the last thread finished */
	for (int i = 0; i < n; i++)
		if (r.w[i].conn != NULL)
			r.d->close(r.w[i].conn);
	if (r.shared != NULL)
		r.d->teardown(r.shared);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (status != 0)
		goto out;
	if (!atomic_load(&r.measuring)) {
		fprintf(stderr, "docraft bench: the run ended during the warm-up: nothing measured\n");
		status = 1;
		goto out;
	}

	/* The summary. */
	histogram_init(total);
	for (int k = 0; k < H_N; k++)
		histogram_init(&per[k]);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < H_N; k++) {
			histogram_merge(&per[k], &r.w[i].hist[k]);
			histogram_merge(total, &r.w[i].hist[k]);
		}
		errors += r.w[i].errors;
		not_found += r.w[i].not_found;
	}
	secs = mend > mstart ? (double)(mend - mstart) / 1e9 : 0;
	{
		struct stats all = stats_of(total, secs), rd = stats_of(&per[H_READ], secs),
			     wr = stats_of(&per[H_WRITE], secs);
		const char *wname = cfg->wl == WL_LOAD ? "insert" : "update";
		bool mixed = rd.ops > 0 && wr.ops > 0;

		printf("docraft bench: %s, workload %s, %d client%s (%s)\n", r.d->name,
		       workload_name(cfg->wl), n, n == 1 ? "" : "s", how);
		printf("  %" PRIu64 " keys, %s, %zu-byte values; %.2f s measured after %.1f s "
		       "warm-up%s\n",
		       cfg->keys, cfg->wl == WL_LOAD ? "each inserted once" : dist_name(cfg->dist),
		       cfg->target.value_size, secs, cfg->warmup, interrupted ? " (interrupted)" : "");
		print_stats("summary:", &all);
		printf("  errors %" PRIu64, errors);
		if (not_found > 0)
			printf("  not-found %" PRIu64, not_found);
		printf("\n");
		if (mixed) {
			print_stats("  read:  ", &rd);
			printf("\n");
			print_stats("  update:", &wr);
			printf("\n");
		}
		if (cfg->json) {
			printf("{\"system\":");
			json_string(r.d->name);
			printf(",\"workload\":\"%s\",\"clients\":%d,\"keys\":%" PRIu64
			       ",\"value_size\":%zu,\"distribution\":\"%s\",\"clients_setup\":",
			       workload_name(cfg->wl), n, cfg->keys, cfg->target.value_size,
			       cfg->wl == WL_LOAD ? "none" : dist_name(cfg->dist));
			json_string(how);
			printf(",\"warmup_s\":%.3f,\"seconds\":%.3f,", cfg->warmup, secs);
			json_stats(&all);
			printf(",\"errors\":%" PRIu64 ",\"not_found\":%" PRIu64, errors, not_found);
			if (rd.ops > 0) {
				printf(",\"read\":{");
				json_stats(&rd);
				printf("}");
			}
			if (wr.ops > 0) {
				printf(",\"%s\":{", wname);
				json_stats(&wr);
				printf("}");
			}
			printf(",\"interrupted\":%s}\n", interrupted ? "true" : "false");
		}
		fflush(stdout);
		if (errors > 0 || all.ops == 0)
			status = 1;
	}
out:
	for (int i = 0; i < n; i++) {
		pthread_mutex_destroy(&r.w[i].mu);
		free(r.w[i].vbuf);
	}
	pthread_barrier_destroy(&r.ready);
	pthread_cond_destroy(&r.cond);
	pthread_mutex_destroy(&r.mu);
	free(r.w);
	free(tmp);
	free(total);
	free(per);
	return status;
}

int bench_main(int argc, char **argv, const char *masters, const docraft_client_options *options)
{
	struct config cfg;
	uint32_t tablets, rf;
	int rv = parse(argc, argv, masters, &cfg);
	if (rv != 0)
		return rv < 0 ? 0 : rv;
	tablets = cfg.dopts.num_tablets;
	rf = cfg.dopts.replication_factor;
	/* the CLI's options, then bench's own --tablets / --rf */
	cfg.dopts = *options;
	if (tablets != 0)
		cfg.dopts.num_tablets = tablets;
	if (rf != 0)
		cfg.dopts.replication_factor = rf;
	cfg.target.docraft_options = &cfg.dopts;
	cfg.target.tablets = cfg.dopts.num_tablets;
	cfg.target.rf = cfg.dopts.replication_factor;
	return run(&cfg);
}
