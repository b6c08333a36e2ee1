/* docraft-jepsen-report: the numbers of a failover run's report.md.
 *
 *   docraft-jepsen-report --history FILE [--nemesis-log FILE] [--start-ms MS]
 *                         [--summary FILE]
 *
 * Reads a docraft-jepsen history (tests/jepsen/HISTORY.md) and the nemesis
 * log of tests/jepsen/nemesis.sh, and prints Markdown on stdout:
 *   - operations per f: invoked, ok, fail, info, ok latency p50/p99/max;
 *   - the set: acknowledged adds, the final read, acknowledged adds missing
 *     from it (lost), adds present although not acknowledged;
 *   - the nemesis timeline, and for each fault the time to recover:
 *     from the fault's start (and from its heal) to the first ok write
 *     (write, cas, delete or add) INVOKED at or after that instant —
 *     its completion time minus the instant — and the longest stretch
 *     without any ok write completion between the fault's start and the
 *     next fault (or the end of the history).
 * --summary FILE gets key=value lines for scripts (lost_adds, final_read,
 * ok_writes, faults, unrecovered, ...).
 *
 * Nemesis log lines: `<unix_ms> start <nemesis> <target>`,
 * `<unix_ms> end <nemesis> <target>`, and `<unix_ms> workload-start ...`
 * (written by the runner just before it starts the workload). History times
 * are CLOCK_MONOTONIC ns since the workload started. docraft-jepsen writes
 * the CLOCK_REALTIME of its time 0 in a comment
 * (`# time_ns 0 = CLOCK_MONOTONIC M ns = CLOCK_REALTIME R ns`), so a wall
 * time W ms (the nemesis uses `date +%s%3N`, the same clock on the same
 * machine) maps to W * 1e6 - R ns: exact to the nemesis log's 1 ms, plus
 * the few ms between the nemesis taking the time and docraft-local acting.
 * Without that comment the runner's workload-start line is used, which is
 * early by the workload's setup (table creation: up to seconds). --start-ms
 * overrides both.
 *
 * Exit: 0 report written, 2 bad usage or unreadable input. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_MS INT64_C(1000000)
#define NEVER INT64_MAX

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL) {
		fprintf(stderr, "docraft-jepsen-report: out of memory\n");
		exit(2);
	}
	return p;
}

#define PUSH(arr, n, cap, v)                                                   \
	do {                                                                   \
		if ((n) == (cap)) {                                            \
			(cap) = (cap) ? (cap) * 2 : 64;                        \
			(arr) = xrealloc((arr), (cap) * sizeof *(arr));        \
		}                                                              \
		(arr)[(n)++] = (v);                                            \
	} while (0)

/* ---- operations ------------------------------------------------------------------- */

enum { F_READ, F_WRITE, F_CAS, F_DELETE, F_ADD, F_READ_SET, F_OTHER, F_MAX };
static const char *const f_names[F_MAX] = {"read", "write", "cas", "delete",
					    "add",  "read-set", "other"};

struct fstat {
	uint64_t invoked, ok, fail, info;
	int64_t *lat; /* ok latencies, ns */
	size_t nlat, caplat;
};

static int f_index(const char *f)
{
	for (int i = 0; i < F_OTHER; i++)
		if (strcmp(f, f_names[i]) == 0)
			return i;
	return F_OTHER;
}

static bool is_write(int f) { return f == F_WRITE || f == F_CAS || f == F_DELETE || f == F_ADD; }

struct okw { /* an ok write */
	int64_t invoke, done;
};

struct proc { /* the open invoke of one process */
	int64_t invoke;
	bool open;
};

static struct fstat fst[F_MAX];
static struct okw *okws;
static size_t nokw, capokw;
static int64_t *done_sorted; /* completion times of ok writes, sorted */
static int64_t first_ns = NEVER, last_ns = -1;
static uint64_t n_events, n_bad;

/* The set. */
static int64_t *acked, *attempted, *final_set;
static size_t nacked, capacked, nattempted, capattempted, nfinal, capfinal;
static bool have_final;

static struct proc *procs;
static size_t nprocs;

/* CLOCK_REALTIME ns of the history's time 0, from its comment; -1 if none. */
static int64_t hist_wall_ns = -1;

static struct proc *proc_get(uint64_t p)
{
	if (p >= nprocs) {
		size_t n = nprocs ? nprocs : 64;
		while (n <= p)
			n *= 2;
		procs = xrealloc(procs, n * sizeof *procs);
		memset(procs + nprocs, 0, (n - nprocs) * sizeof *procs);
		nprocs = n;
	}
	return &procs[p];
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* A history line: time process type f key value value2. */
static void history_line(char *line, size_t lineno)
{
	char *tok[8];
	int n = 0;
	int64_t t, p;
	char *save = NULL;
	long long mono, wall;
	if (line[0] == '#') {
		if (sscanf(line, "# time_ns 0 = CLOCK_MONOTONIC %lld ns = CLOCK_REALTIME %lld ns", &mono,
			   &wall) == 2 && wall > 0)
			hist_wall_ns = wall;
		return;
	}
	for (char *s = strtok_r(line, " \t\r\n", &save); s != NULL && n < 8;
	     s = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = s;
	if (n == 0 || tok[0][0] == '#')
		return;
	if (n != 7 || !parse_i64(tok[0], &t) || !parse_i64(tok[1], &p) || p < 0 || t < 0) {
		if (n_bad++ < 5)
			fprintf(stderr, "docraft-jepsen-report: history line %zu: malformed\n",
				lineno);
		return;
	}
	n_events++;
	if (t < first_ns)
		first_ns = t;
	if (t > last_ns)
		last_ns = t;
	int f = f_index(tok[3]);
	struct proc *pr = proc_get((uint64_t)p);
	const char *type = tok[2];
	if (strcmp(type, "invoke") == 0) {
		fst[f].invoked++;
		pr->invoke = t;
		pr->open = true;
		if (f == F_ADD) {
			int64_t e;
			if (parse_i64(tok[5], &e))
				PUSH(attempted, nattempted, capattempted, e);
		}
		return;
	}
	int64_t inv = pr->open ? pr->invoke : t;
	pr->open = false;
	if (strcmp(type, "ok") == 0) {
		fst[f].ok++;
		PUSH(fst[f].lat, fst[f].nlat, fst[f].caplat, t - inv);
		if (is_write(f))
			PUSH(okws, nokw, capokw, ((struct okw){inv, t}));
		if (f == F_ADD) {
			int64_t e;
			if (parse_i64(tok[5], &e))
				PUSH(acked, nacked, capacked, e);
		} else if (f == F_READ_SET) {
			/* The last ok read-set is the final read. */
			nfinal = 0;
			have_final = true;
			if (strcmp(tok[5], "-") != 0) {
				char *save2 = NULL;
				for (char *e = strtok_r(tok[5], ",", &save2); e != NULL;
				     e = strtok_r(NULL, ",", &save2)) {
					int64_t v;
					if (parse_i64(e, &v))
						PUSH(final_set, nfinal, capfinal, v);
				}
			}
		}
	} else if (strcmp(type, "fail") == 0) {
		fst[f].fail++;
	} else if (strcmp(type, "info") == 0) {
		fst[f].info++;
	} else if (n_bad++ < 5) {
		fprintf(stderr, "docraft-jepsen-report: history line %zu: type '%s'\n", lineno,
			type);
	}
}

static int read_history(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	if (f == NULL) {
		fprintf(stderr, "docraft-jepsen-report: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) >= 0)
		history_line(line, ++lineno);
	free(line);
	fclose(f);
	return 0;
}

/* ---- nemesis log ------------------------------------------------------------------ */

struct fault {
	char nemesis[64], target[64];
	int64_t start_ms, end_ms; /* end_ms -1: never healed in the log */
};

static struct fault *faults;
static size_t nfaults, capfaults;
static int64_t start_ms = -1;

static int read_nemesis(const char *path, bool have_start)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	if (f == NULL) {
		fprintf(stderr, "docraft-jepsen-report: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) >= 0) {
		char ev[32] = "", nem[64] = "", tgt[64] = "";
		long long ms;
		int n = sscanf(line, "%lld %31s %63s %63s", &ms, ev, nem, tgt);
		if (n < 2)
			continue;
		if (strcmp(ev, "workload-start") == 0) {
			if (!have_start)
				start_ms = ms;
		} else if (strcmp(ev, "start") == 0 && n >= 3) {
			struct fault x;
			memset(&x, 0, sizeof x);
			snprintf(x.nemesis, sizeof x.nemesis, "%s", nem);
			snprintf(x.target, sizeof x.target, "%s", n >= 4 ? tgt : "-");
			x.start_ms = ms;
			x.end_ms = -1;
			PUSH(faults, nfaults, capfaults, x);
		} else if (strcmp(ev, "end") == 0 && n >= 3) {
			/* The latest open fault of that nemesis. */
			for (size_t i = nfaults; i-- > 0;) {
				if (faults[i].end_ms < 0 && strcmp(faults[i].nemesis, nem) == 0) {
					faults[i].end_ms = ms;
					break;
				}
			}
		}
	}
	free(line);
	fclose(f);
	return 0;
}

/* ---- recovery --------------------------------------------------------------------- */

/* Completion minus t of the earliest-completing ok write invoked at or after
 * t; NEVER if none. */
static int64_t first_ok_write_after(int64_t t)
{
	int64_t best = NEVER;
	for (size_t i = 0; i < nokw; i++)
		if (okws[i].invoke >= t && okws[i].done < best)
			best = okws[i].done;
	return best == NEVER ? NEVER : best - t;
}

/* The longest interval of [from, to) without an ok write completing. */
static int64_t longest_gap(int64_t from, int64_t to)
{
	int64_t prev = from, gap = 0;
	/* First completion at or after from. */
	size_t lo = 0, hi = nokw;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (done_sorted[mid] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < nokw && done_sorted[i] < to; i++) {
		if (done_sorted[i] - prev > gap)
			gap = done_sorted[i] - prev;
		prev = done_sorted[i];
	}
	if (to - prev > gap)
		gap = to - prev;
	return gap;
}

/* text in a Markdown table cell: '|' escaped (partition targets "a,b|c"). */
static void md_cell(FILE *out, const char *text)
{
	for (; *text; text++) {
		if (*text == '|')
			fputc('\\', out);
		fputc(*text, out);
	}
}

static void print_ms(FILE *out, int64_t ns)
{
	if (ns == NEVER)
		fprintf(out, "never");
	else
		fprintf(out, "%" PRId64, ns / NS_PER_MS);
}

static int64_t pct(const int64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static bool contains(const int64_t *sorted, size_t n, int64_t v)
{
	return bsearch(&v, sorted, n, sizeof v, cmp_i64) != NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: docraft-jepsen-report --history FILE [--nemesis-log FILE] "
		   "[--start-ms MS] [--summary FILE]\n");
}

int main(int argc, char **argv)
{
	const char *history = NULL, *nemlog = NULL, *summary = NULL;
	bool have_start = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc) {
			usage(stderr);
			return 2;
		}
		if (strcmp(a, "--history") == 0) {
			history = argv[++i];
		} else if (strcmp(a, "--nemesis-log") == 0) {
			nemlog = argv[++i];
		} else if (strcmp(a, "--summary") == 0) {
			summary = argv[++i];
		} else if (strcmp(a, "--start-ms") == 0) {
			if (!parse_i64(argv[++i], &start_ms) || start_ms < 0) {
				fprintf(stderr, "docraft-jepsen-report: --start-ms: not a number\n");
				return 2;
			}
			have_start = true;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (history == NULL) {
		usage(stderr);
		return 2;
	}
	if (read_history(history) != 0)
		return 2;
	if (nemlog != NULL && read_nemesis(nemlog, have_start) != 0)
		return 2;
	/* Wall-clock ns of the history's time 0. */
	int64_t origin = -1;
	const char *origin_from = "";
	if (have_start) {
		origin = start_ms * NS_PER_MS;
		origin_from = "--start-ms";
	} else if (hist_wall_ns >= 0) {
		origin = hist_wall_ns;
		origin_from = "the history's CLOCK_REALTIME of time 0 (exact to ~1 ms)";
	} else if (start_ms >= 0) {
		origin = start_ms * NS_PER_MS;
		origin_from = "the runner's workload-start line (early by the workload's setup)";
	}
	if (first_ns == NEVER)
		first_ns = 0;
	if (last_ns < 0)
		last_ns = 0;

	FILE *out = stdout;
	fprintf(out, "## Operations\n\n");
	fprintf(out, "%" PRIu64 " events, history spans %.1f s%s.\n\n", n_events,
		(double)last_ns / 1e9, n_bad ? " (some lines malformed: see stderr)" : "");
	fprintf(out, "| f | invoked | ok | fail | info | ok latency p50 / p99 / max (ms) |\n");
	fprintf(out, "|---|---:|---:|---:|---:|---|\n");
	uint64_t tot[4] = {0, 0, 0, 0};
	for (int f = 0; f < F_MAX; f++) {
		struct fstat *s = &fst[f];
		if (s->invoked == 0 && s->ok + s->fail + s->info == 0)
			continue;
		qsort(s->lat, s->nlat, sizeof *s->lat, cmp_i64);
		fprintf(out, "| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | ",
			f_names[f], s->invoked, s->ok, s->fail, s->info);
		if (s->nlat)
			fprintf(out, "%.1f / %.1f / %.1f |\n", (double)pct(s->lat, s->nlat, 0.5) / 1e6,
				(double)pct(s->lat, s->nlat, 0.99) / 1e6,
				(double)s->lat[s->nlat - 1] / 1e6);
		else
			fprintf(out, "- |\n");
		tot[0] += s->invoked;
		tot[1] += s->ok;
		tot[2] += s->fail;
		tot[3] += s->info;
	}
	fprintf(out, "| **all** | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | |\n\n",
		tot[0], tot[1], tot[2], tot[3]);

	/* The set. */
	size_t lost = 0, unacked_present = 0;
	qsort(acked, nacked, sizeof *acked, cmp_i64);
	qsort(attempted, nattempted, sizeof *attempted, cmp_i64);
	qsort(final_set, nfinal, sizeof *final_set, cmp_i64);
	if (fst[F_ADD].invoked > 0 || have_final) {
		fprintf(out, "## Set\n\n");
		fprintf(out, "- adds: %zu attempted, %zu acknowledged (ok)\n", nattempted, nacked);
		if (!have_final) {
			fprintf(out, "- final read: **none succeeded** (lost adds cannot be counted)\n\n");
		} else {
			char lost_list[512] = "";
			size_t len = 0;
			for (size_t i = 0; i < nacked; i++) {
				if (contains(final_set, nfinal, acked[i]))
					continue;
				if (len + 24 < sizeof lost_list)
					len += (size_t)snprintf(lost_list + len, sizeof lost_list - len,
								"%s%" PRId64, lost ? ", " : "",
								acked[i]);
				lost++;
			}
			for (size_t i = 0; i < nfinal; i++)
				if (!contains(acked, nacked, final_set[i]))
					unacked_present++;
			fprintf(out, "- final read: %zu elements\n", nfinal);
			fprintf(out, "- acknowledged adds missing from the final read (lost): **%zu**%s%s\n",
				lost, lost ? ": " : "", lost_list);
			fprintf(out, "- elements present whose add was not acknowledged "
				     "(fail/info: allowed for info): %zu\n\n",
				unacked_present);
		}
	}

	/* The nemesis timeline. */
	size_t unrecovered = 0;
	int64_t worst_start = 0, worst_heal = 0, worst_gap = 0;
	done_sorted = xrealloc(NULL, nokw * sizeof *done_sorted);
	for (size_t i = 0; i < nokw; i++)
		done_sorted[i] = okws[i].done;
	qsort(done_sorted, nokw, sizeof *done_sorted, cmp_i64);
	if (nemlog != NULL) {
		fprintf(out, "## Nemesis timeline\n\n");
		if (origin < 0) {
			fprintf(out, "No clock origin in the history, no workload-start line in the "
				     "nemesis log and no --start-ms: fault times cannot be placed on "
				     "the history.\n\n");
		} else if (nfaults == 0) {
			fprintf(out, "No faults.\n\n");
		} else {
			fprintf(out, "Times in seconds since the workload started (aligned with "
				     "%s); recovery = the first ok write (write/cas/delete/add) invoked "
				     "after the instant, completion minus instant, in ms; gap = the "
				     "longest time without an ok write from the fault's start to the "
				     "next fault.\n\n",
				origin_from);
			fprintf(out, "| # | start s | heal s | nemesis | target | recovery from start "
				     "ms | recovery from heal ms | longest write gap ms |\n");
			fprintf(out, "|---:|---:|---:|---|---|---:|---:|---:|\n");
			for (size_t i = 0; i < nfaults; i++) {
				struct fault *x = &faults[i];
				int64_t s = x->start_ms * NS_PER_MS - origin;
				int64_t e = x->end_ms >= 0 ? x->end_ms * NS_PER_MS - origin : -1;
				int64_t next = i + 1 < nfaults
						       ? faults[i + 1].start_ms * NS_PER_MS - origin
						       : last_ns;
				if (next > last_ns)
					next = last_ns;
				if (next < s)
					next = s;
				int64_t rs = first_ok_write_after(s);
				int64_t rh = e >= 0 ? first_ok_write_after(e) : NEVER;
				int64_t gap = longest_gap(s, next);
				fprintf(out, "| %zu | %.1f | ", i + 1, (double)s / 1e9);
				if (e >= 0)
					fprintf(out, "%.1f", (double)e / 1e9);
				else
					fprintf(out, "-");
				fprintf(out, " | %s | ", x->nemesis);
				md_cell(out, x->target);
				fprintf(out, " | ");
				print_ms(out, rs);
				fprintf(out, " | ");
				print_ms(out, rh);
				fprintf(out, " | %" PRId64 " |\n", gap / NS_PER_MS);
				if (rh == NEVER)
					unrecovered++;
				if (rs != NEVER && rs > worst_start)
					worst_start = rs;
				if (rh != NEVER && rh > worst_heal)
					worst_heal = rh;
				if (gap > worst_gap)
					worst_gap = gap;
			}
			fprintf(out, "\nWorst: recovery from start %" PRId64 " ms, from heal %" PRId64
				     " ms, write gap %" PRId64 " ms; faults without an ok write "
				     "after their heal: %zu.\n\n",
				worst_start / NS_PER_MS, worst_heal / NS_PER_MS,
				worst_gap / NS_PER_MS, unrecovered);
		}
	}

	if (summary != NULL) {
		FILE *s = fopen(summary, "w");
		if (s == NULL) {
			fprintf(stderr, "docraft-jepsen-report: %s: %s\n", summary, strerror(errno));
			return 2;
		}
		fprintf(s, "events=%" PRIu64 "\nmalformed=%" PRIu64 "\n", n_events, n_bad);
		fprintf(s, "ops=%" PRIu64 "\nok=%" PRIu64 "\nfail=%" PRIu64 "\ninfo=%" PRIu64 "\n",
			tot[0], tot[1], tot[2], tot[3]);
		fprintf(s, "ok_writes=%zu\nadds_acked=%zu\nfinal_read=%d\nfinal_size=%zu\n", nokw,
			nacked, have_final ? 1 : 0, nfinal);
		fprintf(s, "lost_adds=%zu\n", have_final ? lost : (size_t)0);
		fprintf(s, "faults=%zu\nunrecovered=%zu\nworst_recovery_ms=%" PRId64
			   "\nworst_heal_recovery_ms=%" PRId64 "\nworst_gap_ms=%" PRId64 "\n",
			nfaults, unrecovered, worst_start / NS_PER_MS, worst_heal / NS_PER_MS,
			worst_gap / NS_PER_MS);
		fclose(s);
	}
	return 0;
}
