/* docraft-docdbbench: DocDB rows against raw RocksDB pairs of the same data.
 *
 * One table
 *
 *   h text (hash key, 8 bytes), r int (range key),
 *   a int, b bigint, c text (100 bytes), d double
 *
 * with R rows spread over H hash keys (row i: h = i mod H, r = i div H), held
 * in three layouts, each a fresh store in its own temporary directory:
 *
 *   DocDB unpacked  docwrite_insert of each row into a batch (liveness column +
 *                   4 column cells), B rows per store_apply (one RocksDB write,
 *                   WAL off, with the applied marker), as the tablet's group
 *                   commit would apply them;
 *   DocDB packed    the same with schema.packed: one packed-row pair per row;
 *   raw RocksDB     the same data as ONE pair per row: key = the row's encoded
 *                   DocKey, value = its 4 column values concatenated, each in
 *                   its DocDB value encoding (type byte + payload, 124 bytes);
 *                   B rows per rocksdb_write, WAL off. These pairs are built
 *                   before the clock starts: the raw side times RocksDB only,
 *                   the DocDB side also encodes the rows from typed values.
 *
 * Phases, each run on the three layouts back to back (so that the figures
 * compared share the machine's state; the order rotates between runs):
 * insert every row; point reads of random existing rows (reader_get_row
 * against rocksdb_get of the raw key) and scans of every row of one random
 * hash key (reader_scan against a raw iterator bounded by the hash key's
 * DocKey prefix) with everything in the memtable; a flush to one SST file;
 * the same reads and scans again. Reads and scans start with an untimed
 * warm-up on a tenth as many other random rows and hash keys. Both sides
 * use the store's RocksDB options (WAL off, a full bloom filter, RocksDB
 * defaults otherwise: 8 MiB block cache, snappy; raw_open says how the
 * filters differ) with a memtable large enough that inserts never flush
 * (--memtable-mb).
 *
 * Each timed loop is measured by CLOCK_MONOTONIC (rows/s) and by the
 * thread's CPU time (every operation measured runs on the calling thread:
 * WAL-off writes go to the memtable inline, reads too); the CPU ratio is the
 * steadier one on a shared machine. With --runs N, every figure is a median
 * over N runs (ratios: the median of the per-run ratios). Not a test: it
 * asserts nothing about speed; docs/benchmarks.md records its output. Every
 * answer is checked (rows found, row counts, value sizes): a wrong answer is
 * an error, not a figure.
 *
 * Files: this one holds main, the runs and the report; docdbbench_layouts.c
 * the data set and the layouts' timed loops (docdbbench.h). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdbbench.h"

#define TARGET 0.5

static void on_signal(int sig)
{
	(void)sig;
	layout_stop = 1;
}

/* Removes dir and everything under it (a missing dir is fine); -1 when
 * something is left. */
static int rm_tree(const char *dir)
{
	struct stat st;
	fs_remove_tree(dir);
	if (lstat(dir, &st) == 0) {
		fprintf(stderr, "docdbbench: could not remove %s\n", dir);
		return -1;
	}
	return 0;
}

/* ---- report ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct line {
	const char *op;
	enum kind kind;
	enum metric m;
};

static const struct line lines[] = {
	{"insert", K_UNPACKED, M_INSERT},
	{"insert", K_PACKED, M_INSERT},
	{"point read, memtable", K_UNPACKED, M_READ_MEM},
	{"point read, memtable", K_PACKED, M_READ_MEM},
	{"point read, flushed", K_UNPACKED, M_READ_SST},
	{"point read, flushed", K_PACKED, M_READ_SST},
	{"scan 1 hash key, memtable", K_UNPACKED, M_SCAN_MEM},
	{"scan 1 hash key, memtable", K_PACKED, M_SCAN_MEM},
	{"scan 1 hash key, flushed", K_UNPACKED, M_SCAN_SST},
	{"scan 1 hash key, flushed", K_PACKED, M_SCAN_SST},
};

/* --only: the rates of the one layout run. */
static void report_one(const struct opts *o, struct result (*res)[K_COUNT], double *v, double *w)
{
	printf("\n%-28s %-9s %13s %13s\n", "operation", "layout", "rows/s", "rows/CPU-s");
	for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
		/* Raw has one line per operation: take the unpacked lines. */
		enum kind want = o->only == K_RAW ? K_UNPACKED : (enum kind)o->only;
		if (lines[l].kind != want)
			continue;
		for (long r = 0; r < o->runs; r++) {
			v[r] = res[r][o->only].rate[lines[l].m].wall;
			w[r] = res[r][o->only].rate[lines[l].m].cpu;
		}
		printf("%-28s %-9s %13.0f %13.0f\n", lines[l].op, kind_name[o->only],
		       median(v, o->runs), median(w, o->runs));
	}
}

static void report(const struct opts *o, struct result (*res)[K_COUNT])
{
	long runs = o->runs;
	double *v = xcalloc((size_t)runs, sizeof *v);
	double *w = xcalloc((size_t)runs, sizeof *w);
	double *q = xcalloc((size_t)runs, sizeof *q);
	double *qc = xcalloc((size_t)runs, sizeof *qc);

	printf("\nbytes per row written (user key + value; the marker adds one pair per "
	       "write):\n");
	for (int k = 0; k < K_COUNT; k++) {
		if (o->only >= 0 && o->only != k)
			continue;
		for (long r = 0; r < runs; r++)
			v[r] = res[r][k].flush_s;
		printf("  %-9s %3.0f pair%s/row  %6.1f bytes/row  flush %.2f s\n", kind_name[k],
		       res[0][k].pairs_per_row, res[0][k].pairs_per_row == 1 ? " " : "s",
		       res[0][k].bytes_per_row, median(v, runs));
	}
	if (o->only >= 0) {
		report_one(o, res, v, w);
		goto out;
	}
	printf("\n%-26s %-8s %12s %12s %9s %9s %6s %4s\n", "operation", "layout",
	       "DocDB rows/s", "raw rows/s", "DocDB/raw", "CPU ratio", "target", "met?");
	for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
		const struct line *ln = &lines[l];
		double ratio;
		for (long r = 0; r < runs; r++) {
			const struct rate *dr = &res[r][ln->kind].rate[ln->m];
			const struct rate *rr = &res[r][K_RAW].rate[ln->m];
			v[r] = dr->wall;
			w[r] = rr->wall;
			q[r] = rr->wall > 0 ? dr->wall / rr->wall : 0;
			qc[r] = rr->cpu > 0 ? dr->cpu / rr->cpu : 0;
		}
		/* Each column its own median; the ratios are medians of the
		 * per-run ratios (same-run figures share the machine's state). */
		ratio = median(q, runs);
		printf("%-26s %-8s %12.0f %12.0f %9.2f %9.2f %5.2fx %4s\n", ln->op,
		       kind_name[ln->kind], median(v, runs), median(w, runs), ratio,
		       median(qc, runs), TARGET, ratio >= TARGET ? "yes" : "NO");
	}
out:
	free(v);
	free(w);
	free(q);
	free(qc);
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: docraft-docdbbench [--rows R] [--hash-keys H] [--batch B] [--reads N]\n"
		"                          [--scans S] [--runs K] [--memtable-mb M]\n"
		"                          [--seconds-cap T] [--dir DIR] [--only LAYOUT]\n"
		"DocDB row insert (unpacked and packed), point read and single-hash-key scan\n"
		"against raw RocksDB put / get / iterate of the same data (one pair per row:\n"
		"key = the row's DocKey, value = its column values), WAL off on both sides.\n"
		"  --rows R         rows (default 200000)\n"
		"  --hash-keys H    hash keys the rows spread over (default 1000)\n"
		"  --batch B        rows per store_apply / rocksdb_write (default 100)\n"
		"  --reads N        random point reads per phase (default 100000)\n"
		"  --scans S        scans of one random hash key per phase (default 1000)\n"
		"  --runs K         repeat everything K times, print medians (default 1)\n"
		"  --memtable-mb M  RocksDB write buffer on both sides (default 256, so that\n"
		"                   inserts never flush)\n"
		"  --seconds-cap T  stop a read or scan phase after T seconds (default 60;\n"
		"                   0 = no cap); inserts always write every row\n"
		"  --dir DIR        where the temporary stores go (default $TMPDIR or /tmp);\n"
		"                   removed at the end\n"
		"  --only LAYOUT    run one layout only (unpacked, packed or raw), for\n"
		"                   profiling; no ratios then\n");
}

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* The phases of a run, in order: each runs on every layout before the next
 * starts. */
enum phase { P_OPEN, P_INSERT, P_READ_MEM, P_SCAN_MEM, P_FLUSH, P_READ_SST, P_SCAN_SST, P_COUNT };

static int run_phase(struct layout *x, enum phase ph, char *errmsg)
{
	switch (ph) {
	case P_OPEN: return layout_open(x, errmsg);
	case P_INSERT: return layout_insert(x, errmsg);
	case P_READ_MEM: return layout_reads(x, M_READ_MEM, errmsg);
	case P_SCAN_MEM: return layout_scans(x, M_SCAN_MEM, errmsg);
	case P_FLUSH: return layout_flush(x, errmsg);
	case P_READ_SST: return layout_reads(x, M_READ_SST, errmsg);
	default: return layout_scans(x, M_SCAN_SST, errmsg);
	}
}

/* One run: the three layouts side by side, phase by phase; the order of the
 * layouts within a phase rotates with the run. */
static int run_once(const struct opts *o, const struct data *d, const char *base, long run,
		    struct result *res, char *errmsg)
{
	struct layout *L = xcalloc(K_COUNT, sizeof *L);
	int order[K_COUNT], n = 0, rv = 0;

	for (int j = 0; j < K_COUNT; j++) {
		int k = (int)((run + j) % K_COUNT);
		if (o->only < 0 || o->only == k)
			order[n++] = k;
	}
	for (int k = 0; k < K_COUNT; k++) {
		int len = snprintf(L[k].dir, sizeof L[k].dir, "%s/%s", base, kind_name[k]);
		L[k].kind = (enum kind)k;
		L[k].o = o;
		L[k].d = d;
		if (len < 0 || (size_t)len >= sizeof L[k].dir) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "directory name too long");
			goto out;
		}
	}
	fprintf(stderr, "docdbbench: run %ld/%ld\n", run + 1, o->runs);
	for (int ph = 0; ph < P_COUNT && rv == 0; ph++)
		for (int j = 0; j < n && rv == 0; j++)
			rv = run_phase(&L[order[j]], (enum phase)ph, errmsg);
out:
	for (int k = 0; k < K_COUNT; k++) {
		if (L[k].o == NULL)
			continue;
		layout_close(&L[k]);
		res[k] = L[k].res;
		if (L[k].dir[0] != '\0' && rm_tree(L[k].dir) != 0 && rv == 0)
			rv = err_set(errmsg, DOCRAFT_EIO, "could not remove %s", L[k].dir);
	}
	free(L);
	return rv;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"rows", 1, 0, 'r'},  {"hash-keys", 1, 0, 'k'}, {"batch", 1, 0, 'b'},
		{"reads", 1, 0, 'n'}, {"scans", 1, 0, 's'},     {"runs", 1, 0, 'R'},
		{"memtable-mb", 1, 0, 'm'}, {"seconds-cap", 1, 0, 'c'}, {"dir", 1, 0, 'd'},
		{"only", 1, 0, 'o'},  {"help", 0, 0, 'h'},      {0, 0, 0, 0}};
	struct opts o = {200000, 1000, 100, 100000, 1000, 1, 256, 60, NULL, -1};
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	char base[4096];
	struct data d;
	struct result (*res)[K_COUNT] = NULL;
	struct sigaction sa;
	char *end;
	int c, idx = 0, rv = 0;

	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		bool ok = true;
		switch (c) {
		case 'r': ok = parse_long(optarg, 1, 100000000, &o.rows); break;
		case 'k': ok = parse_long(optarg, 1, 9999999, &o.hash_keys); break;
		case 'b': ok = parse_long(optarg, 1, 1000000, &o.batch); break;
		case 'n': ok = parse_long(optarg, 0, 1000000000, &o.reads); break;
		case 's': ok = parse_long(optarg, 0, 1000000000, &o.scans); break;
		case 'R': ok = parse_long(optarg, 1, 100, &o.runs); break;
		case 'm': ok = parse_long(optarg, 1, 65536, &o.memtable_mb); break;
		case 'c':
			errno = 0;
			o.seconds_cap = strtod(optarg, &end);
			ok = errno == 0 && end != optarg && *end == '\0' && o.seconds_cap >= 0;
			break;
		case 'd': o.dir = optarg; break;
		case 'o':
			ok = false;
			for (int k = 0; k < K_COUNT; k++)
				if (strcmp(optarg, kind_name[k]) == 0) {
					o.only = k;
					ok = true;
				}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok) {
			fprintf(stderr, "docdbbench: bad value for --%s: %s\n", lo[idx].name, optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.hash_keys > o.rows) {
		fprintf(stderr, "docdbbench: --hash-keys must not exceed --rows\n");
		return 2;
	}
	log_init();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
		perror("docdbbench: sigaction");
		return 1;
	}

	if ((rv = fs_mkdtemp(o.dir, "docraft-docdbbench", base, sizeof base, errmsg)) != 0) {
		fprintf(stderr, "docdbbench: %s\n", errmsg);
		return rv == DOCRAFT_EINVAL ? 2 : 1; /* 2: --dir too long, a usage error */
	}

	if ((rv = data_build(&d, &o, errmsg)) != 0)
		goto out_data;
	printf("docraft-docdbbench: %ld rows over %ld hash keys (%ld rows per scan), %ld rows "
	       "per write, %ld point reads and %ld scans per phase, %ld run%s%s\n",
	       o.rows, o.hash_keys, o.rows / o.hash_keys, o.batch, o.reads, o.scans, o.runs,
	       o.runs > 1 ? "s" : "", o.runs > 1 ? " (medians)" : "");
	printf("table: h text (hash, %d bytes), r int (range), a int, b bigint, c text (%d "
	       "bytes), d double\n",
	       HKEY_LEN, TEXT_LEN);
	printf("same bytes: raw = 1 pair per row, key = the row's DocKey (%zu bytes), value = "
	       "its 4 column values in DocDB value encoding (%zu bytes)\n",
	       d.rkoff[1], d.rvoff[1]);
	printf("both sides: WAL off, %ld MiB memtable (inserts never flush), full bloom filter "
	       "(DocDB: DocKey prefix, raw: whole key), RocksDB defaults otherwise (8 MiB block "
	       "cache, snappy); reads and scans: memtable, then after a flush to one SST\n",
	       o.memtable_mb);
	fflush(stdout);

	res = xcalloc((size_t)o.runs, sizeof *res);
	for (long r = 0; r < o.runs && rv == 0; r++)
		rv = run_once(&o, &d, base, r, res[r], errmsg);
	if (rv == 0)
		report(&o, res);
	free(res);
out_data:
	data_free(&d);
	if (rm_tree(base) != 0 && rv == 0)
		rv = DOCRAFT_EIO;
	if (rv != 0) {
		fprintf(stderr, "docdbbench: %s\n", errmsg[0] ? errmsg : docraft_strerror(rv));
		return 1;
	}
	return 0;
}
