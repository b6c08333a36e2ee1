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
 * an error, not a figure. */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rocksdb/c.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/value.h"

#define HKEY_LEN 8     /* "h" + 7 digits */
#define TEXT_LEN 100
#define NCOLS 4
#define TARGET 0.5
/* The timed loops stay functions of their own, so that a profiler can
 * restrict itself to one of them:
 *   valgrind --tool=callgrind --toggle-collect=docdb_scan ... --only packed */
#define NOINLINE __attribute__((noinline))
/* rocksdb::InfoLogLevel::WARN_LEVEL, as store.c sets it. */
#define ROCKSDB_WARN_LEVEL 2

struct opts {
	long rows;
	long hash_keys;
	long batch;
	long reads;
	long scans;
	long runs;
	long memtable_mb;
	double seconds_cap;
	const char *dir;
	int only; /* enum kind, or -1: every layout */
};

/* The data set, shared by every store and every run. */
struct data {
	long rows, nh;
	char (*hkeys)[HKEY_LEN + 1];
	uint8_t *text;         /* rows * TEXT_LEN random lowercase letters */
	/* Raw pairs: key = DocKey, value = the 4 column value encodings. */
	struct buf rkeys, rvals;
	size_t *rkoff, *rvoff; /* rows + 1 offsets each */
	/* Per hash key: DocKey prefix through the hashed group, and it + 0xFF. */
	struct buf pfx, upper;
	size_t *pfxoff, *upoff; /* nh + 1 offsets each */
	long *read_rows;        /* reads: random row indexes ... */
	long nreads;
	long *scan_keys;        /* ... scans: random hash key indexes */
	long nscans;
};

/* What is timed, per layout. */
enum metric {
	M_INSERT,
	M_READ_MEM,
	M_SCAN_MEM,
	M_READ_SST,
	M_SCAN_SST,
	M_COUNT
};

/* Rows per second of wall-clock time and of the thread's CPU time. */
struct rate {
	double wall;
	double cpu;
};

struct result {
	struct rate rate[M_COUNT];
	double flush_s;
	double pairs_per_row;
	double bytes_per_row;  /* user key + value bytes written per row */
};

enum kind { K_UNPACKED, K_PACKED, K_RAW, K_COUNT };
static const char *const kind_name[K_COUNT] = {"unpacked", "packed", "raw"};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0) {
		perror("docdbbench: clock_gettime");
		exit(1);
	}
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* A timed loop: wall clock and this thread's CPU time. */
struct stopwatch {
	double wall;
	double cpu;
};

static void sw_start(struct stopwatch *sw)
{
	sw->wall = now_s();
	sw->cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void sw_rate(const struct stopwatch *sw, double rows, struct rate *out)
{
	double wall = now_s() - sw->wall;
	double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - sw->cpu;
	out->wall = wall > 0 ? rows / wall : 0;
	out->cpu = cpu > 0 ? rows / cpu : 0;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* ---- the data set ------------------------------------------------------- */

static int32_t row_r(const struct data *d, long i) { return (int32_t)(i / d->nh); }
static long row_h(const struct data *d, long i) { return i % d->nh; }

static void row_key(const struct data *d, long i, struct pv key[2])
{
	key[0] = pv_strn(d->hkeys[row_h(d, i)], HKEY_LEN);
	key[1] = pv_int32(row_r(d, i));
}

static void row_values(const struct data *d, long i, struct pv v[NCOLS])
{
	v[0] = pv_int32((int32_t)(i * 7));
	v[1] = pv_int64((int64_t)i * 1000003);
	v[2] = pv_strn(d->text + (size_t)i * TEXT_LEN, TEXT_LEN);
	v[3] = pv_double((double)i * 0.5);
}

static const char *const col_names[NCOLS] = {"a", "b", "c", "d"};

static void row_cols(const struct data *d, long i, struct colval cols[NCOLS])
{
	struct pv v[NCOLS];
	row_values(d, i, v);
	for (int c = 0; c < NCOLS; c++)
		cols[c] = colval_of(col_names[c], v[c]);
}

/* Rows of hash key h. */
static long rows_of(const struct data *d, long h)
{
	return d->rows / d->nh + (h < d->rows % d->nh ? 1 : 0);
}

static int build_schema(struct schema *s, bool packed, char *errmsg)
{
	int rv;
	if ((rv = schema_init(s, "bench", errmsg)) != 0)
		return rv;
	if ((rv = schema_add(s, "h", COL_HASH, CT_TEXT, errmsg)) != 0 ||
	    (rv = schema_add(s, "r", COL_RANGE, CT_INT32, errmsg)) != 0 ||
	    (rv = schema_add(s, "a", COL_REGULAR, CT_INT32, errmsg)) != 0 ||
	    (rv = schema_add(s, "b", COL_REGULAR, CT_INT64, errmsg)) != 0 ||
	    (rv = schema_add(s, "c", COL_REGULAR, CT_TEXT, errmsg)) != 0 ||
	    (rv = schema_add(s, "d", COL_REGULAR, CT_DOUBLE, errmsg)) != 0) {
		schema_free(s);
		return rv;
	}
	s->packed = packed;
	return 0;
}

static int data_build(struct data *d, const struct opts *o, char *errmsg)
{
	struct schema s;
	struct buf dk = BUF_INIT;
	uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
	int rv;

	memset(d, 0, sizeof *d);
	d->rows = o->rows;
	d->nh = o->hash_keys;
	d->hkeys = xcalloc((size_t)d->nh, sizeof *d->hkeys);
	for (long h = 0; h < d->nh; h++) {
		/* "h" + 7 digits (--hash-keys < 10^7): every key is HKEY_LEN bytes. */
		long x = h;
		d->hkeys[h][0] = 'h';
		for (int k = HKEY_LEN - 1; k >= 1; k--, x /= 10)
			d->hkeys[h][k] = (char)('0' + x % 10);
		d->hkeys[h][HKEY_LEN] = '\0';
	}
	d->text = xcalloc((size_t)d->rows, TEXT_LEN);
	for (size_t k = 0; k < (size_t)d->rows * TEXT_LEN; k++)
		d->text[k] = (uint8_t)('a' + rng_next(&seed) % 26);

	if ((rv = build_schema(&s, false, errmsg)) != 0)
		return rv;
	d->rkoff = xcalloc((size_t)d->rows + 1, sizeof *d->rkoff);
	d->rvoff = xcalloc((size_t)d->rows + 1, sizeof *d->rvoff);
	for (long i = 0; i < d->rows; i++) {
		struct pv key[2], v[NCOLS];
		row_key(d, i, key);
		/* docwrite_dockey checks the size of its whole output buffer. */
		buf_reset(&dk);
		if ((rv = docwrite_dockey(&s, key, 2, &dk, errmsg)) != 0)
			goto out;
		buf_append(&d->rkeys, dk.data, dk.len);
		row_values(d, i, v);
		for (int c = 0; c < NCOLS; c++)
			value_append_pv(&d->rvals, &v[c]);
		d->rkoff[i + 1] = d->rkeys.len;
		d->rvoff[i + 1] = d->rvals.len;
	}
	/* Hash key prefixes: 'G' hash16 <h> '!', as reader_scan bounds them. */
	d->pfxoff = xcalloc((size_t)d->nh + 1, sizeof *d->pfxoff);
	d->upoff = xcalloc((size_t)d->nh + 1, sizeof *d->upoff);
	for (long h = 0; h < d->nh; h++) {
		struct pv hk = pv_strn(d->hkeys[h], HKEY_LEN);
		size_t start = d->pfx.len;
		buf_push(&d->pfx, KT_UINT16_HASH);
		buf_append_be16(&d->pfx, key_hash_components(&hk, 1));
		key_append_pv(&d->pfx, &hk);
		buf_push(&d->pfx, KT_GROUP_END);
		d->pfxoff[h + 1] = d->pfx.len;
		buf_append(&d->upper, d->pfx.data + start, d->pfx.len - start);
		buf_push(&d->upper, KT_MAX_BYTE);
		d->upoff[h + 1] = d->upper.len;
	}
	/* Every raw key must lie under its hash key's prefix. */
	for (long i = 0; i < d->rows; i++) {
		long h = row_h(d, i);
		size_t pl = d->pfxoff[h + 1] - d->pfxoff[h];
		if (d->rkoff[i + 1] - d->rkoff[i] <= pl ||
		    memcmp(d->rkeys.data + d->rkoff[i], d->pfx.data + d->pfxoff[h], pl) != 0) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "row %ld: DocKey not under its prefix",
				     i);
			goto out;
		}
	}
	/* The timed reads, then the warm-up's (a tenth more). */
	d->nreads = o->reads + o->reads / 10;
	d->read_rows = xcalloc((size_t)d->nreads + 1, sizeof *d->read_rows);
	for (long n = 0; n < d->nreads; n++)
		d->read_rows[n] = (long)(rng_next(&seed) % (uint64_t)d->rows);
	d->nscans = o->scans + o->scans / 10;
	d->scan_keys = xcalloc((size_t)d->nscans + 1, sizeof *d->scan_keys);
	for (long n = 0; n < d->nscans; n++)
		d->scan_keys[n] = (long)(rng_next(&seed) % (uint64_t)d->nh);
	rv = 0;
out:
	buf_free(&dk);
	schema_free(&s);
	return rv;
}

static void data_free(struct data *d)
{
	free(d->hkeys);
	free(d->text);
	buf_free(&d->rkeys);
	buf_free(&d->rvals);
	free(d->rkoff);
	free(d->rvoff);
	buf_free(&d->pfx);
	buf_free(&d->upper);
	free(d->pfxoff);
	free(d->upoff);
	free(d->read_rows);
	free(d->scan_keys);
}

/* ---- directories -------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0) {
		fprintf(stderr, "docdbbench: removing %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Removes dir and everything under it; a missing dir is fine. */
static int rm_tree(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) != 0 && errno == ENOENT)
		return 0;
	if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
		fprintf(stderr, "docdbbench: could not remove %s\n", dir);
		return -1;
	}
	return 0;
}

/* ---- timing helpers ----------------------------------------------------- */

/* Whether a timed loop must stop: interrupted, or past the cap (checked
 * every 64 operations). */
static bool capped(const struct opts *o, long n, double t0)
{
	if (stop)
		return true;
	return (n & 63) == 0 && n > 0 && o->seconds_cap > 0 && now_s() - t0 > o->seconds_cap;
}

static int interrupted(char *errmsg)
{
	return err_set(errmsg, DOCRAFT_ECLOSED, "interrupted");
}

/* ---- one layout's store ---------------------------------------------- */

struct layout {
	enum kind kind;
	const struct opts *o;
	const struct data *d;
	char dir[4096];
	struct result res;
	/* DocDB layouts */
	struct store *st;
	struct schema s;
	bool has_schema;
	const struct column *col_c;
	struct arena a;
	struct hlc clock;
	uint64_t index;
	uint64_t read_ht;
	/* raw */
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;  /* gets */
	rocksdb_readoptions_t *sro; /* scans: bounds set per scan */
	rocksdb_writebatch_t *wb;
};

static int raw_err(char *errmsg, char *err, const char *op)
{
	int rv = err_set(errmsg, DOCRAFT_EIO, "rocksdb %s: %s", op, err);
	rocksdb_free(err);
	return rv;
}

/* ---- DocDB -------------------------------------------------------------- */

/* Bytes DocDB writes per row: user key (with '#' DocHT) + value, over the
 * first batch's rows, built but not applied. */
static int docdb_bytes(struct layout *x, char *errmsg)
{
	struct batch b;
	struct docwrite w;
	struct batch_iter it;
	struct buf scratch = BUF_INIT;
	const uint8_t *k, *v;
	size_t kl, vl, bytes = 0;
	long n = x->o->batch < x->d->rows ? x->o->batch : x->d->rows;
	uint64_t ht = hlc_now(&x->clock);
	uint32_t id = 0;
	int rv = 0;

	batch_init(&b);
	docwrite_init(&w, &x->s, &b, NULL);
	for (long i = 0; i < n && rv == 0; i++) {
		struct pv key[2];
		struct colval cols[NCOLS];
		row_key(x->d, i, key);
		row_cols(x->d, i, cols);
		if ((rv = docwrite_insert(&w, key, 2, cols, NCOLS, DOCWRITE_NO_TTL)) != 0)
			err_set(errmsg, rv, "docwrite_insert: %s", w.errmsg);
	}
	batch_iter_init(&it, b.data.data, b.data.len);
	if (rv == 0) {
		while ((rv = batch_next(&it, &k, &kl, &v, &vl)) == 1) {
			buf_reset(&scratch);
			docht_append(&scratch, (struct docht){.ht = ht, .write_id = id++});
			bytes += kl + 1 + scratch.len + vl;
		}
	}
	if (rv < 0)
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "malformed batch");
	else if (rv == 0) {
		x->res.pairs_per_row = (double)b.count / (double)n;
		x->res.bytes_per_row = (double)bytes / (double)n;
	}
	buf_free(&scratch);
	docwrite_free(&w);
	batch_free(&b);
	return rv;
}

static int docdb_open(struct layout *x, char *errmsg)
{
	struct store_options so;
	int rv;
	arena_init(&x->a);
	hlc_init(&x->clock, 500000, NULL, NULL);
	if ((rv = build_schema(&x->s, x->kind == K_PACKED, errmsg)) != 0)
		return rv;
	x->has_schema = true;
	x->col_c = schema_find(&x->s, "c");
	store_options_default(&so);
	so.write_buffer_size = (size_t)x->o->memtable_mb << 20;
	if ((rv = store_open(x->dir, &so, &x->st, errmsg)) != 0)
		return rv;
	return docdb_bytes(x, errmsg);
}

static void docdb_close(struct layout *x)
{
	store_close(x->st);
	x->st = NULL;
	arena_free(&x->a);
	if (x->has_schema)
		schema_free(&x->s);
	x->has_schema = false;
}

static NOINLINE int docdb_insert(struct layout *x, char *errmsg)
{
	struct batch b;
	struct docwrite w;
	struct stopwatch sw;
	long i = 0;
	int rv = 0;

	batch_init(&b);
	docwrite_init(&w, &x->s, &b, NULL);
	sw_start(&sw);
	while (i < x->d->rows) {
		if (stop) {
			rv = interrupted(errmsg);
			goto out;
		}
		batch_reset(&b);
		for (long k = 0; k < x->o->batch && i < x->d->rows; k++, i++) {
			struct pv key[2];
			struct colval cols[NCOLS];
			row_key(x->d, i, key);
			row_cols(x->d, i, cols);
			if ((rv = docwrite_insert(&w, key, 2, cols, NCOLS, DOCWRITE_NO_TTL)) != 0) {
				err_set(errmsg, rv, "docwrite_insert of row %ld: %s", i, w.errmsg);
				goto out;
			}
		}
		if ((rv = store_apply(x->st, b.data.data, b.data.len, hlc_now(&x->clock),
				      ++x->index, errmsg)) != 0)
			goto out;
	}
	sw_rate(&sw, (double)x->d->rows, &x->res.rate[M_INSERT]);
	x->read_ht = hlc_now(&x->clock);
out:
	docwrite_free(&w);
	batch_free(&b);
	return rv;
}

static NOINLINE int docdb_get(struct layout *x, long i, long *rows, char *errmsg)
{
	struct pv key[2];
	struct row row;
	const struct docnode *c;
	bool found = false;
	int rv;

	(void)rows; /* a read counts 1 */
	row_key(x->d, i, key);
	arena_reset(&x->a);
	if ((rv = reader_get_row(x->st, &x->s, key, 2, x->read_ht, &x->a, &row, &found,
				 errmsg)) != 0)
		return rv;
	if (!found)
		return err_set(errmsg, DOCRAFT_ENOTFOUND, "row %ld not found", i);
	c = row_column(&row, x->col_c);
	if (c == NULL || c->kind != VAL_PRIMITIVE || c->value.type != PV_STRING ||
	    c->value.v.s.len != TEXT_LEN)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "row %ld: bad column c", i);
	return 0;
}

static NOINLINE int docdb_scan(struct layout *x, long h, long *nrows_out, char *errmsg)
{
	struct pv hk = pv_strn(x->d->hkeys[h], HKEY_LEN);
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	int rv;

	memset(&sp, 0, sizeof sp);
	sp.read_ht = x->read_ht;
	sp.hash_key = &hk;
	sp.n_hash = 1;
	arena_reset(&x->a);
	if ((rv = reader_scan(x->st, &x->s, &sp, &x->a, &rows, &nrows, NULL, errmsg)) != 0)
		return rv;
	if ((long)nrows != rows_of(x->d, h))
		return err_set(errmsg, DOCRAFT_ECORRUPT, "hash key %ld: %zu rows, want %ld", h,
			       nrows, rows_of(x->d, h));
	if (nrows > 0 && row_column(&rows[nrows - 1], x->col_c) == NULL)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "hash key %ld: last row without c", h);
	*nrows_out = (long)nrows;
	return 0;
}

/* ---- raw RocksDB -------------------------------------------------------- */

/* The options store.c gives RocksDB (make_options, store_open) without an
 * environment: the same full bloom filter (10 bits per key) in block-based
 * tables, but over whole keys, as a raw reader knows its key (the store
 * filters by DocKey prefix since its keys carry a hybrid time); no prefix
 * extractor and no compaction filter (no compaction runs here). */
static int raw_open(struct layout *x, char *errmsg)
{
	rocksdb_options_t *base = rocksdb_options_create();
	rocksdb_block_based_table_options_t *t;
	char *err = NULL;

	x->opts = rocksdb_options_create();
	rocksdb_get_options_from_string(base, "avoid_flush_during_shutdown=true", x->opts, &err);
	rocksdb_options_destroy(base);
	if (err != NULL)
		return raw_err(errmsg, err, "options");
	rocksdb_options_set_create_if_missing(x->opts, 1);
	rocksdb_options_set_write_buffer_size(x->opts, (size_t)x->o->memtable_mb << 20);
	rocksdb_options_set_info_log_level(x->opts, ROCKSDB_WARN_LEVEL);
	rocksdb_options_set_keep_log_file_num(x->opts, 4);
	rocksdb_options_set_max_subcompactions(x->opts, 1);
	t = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_options_set_block_based_table_factory(x->opts, t);
	rocksdb_block_based_options_destroy(t);
	x->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_disable_WAL(x->wo, 1);
	rocksdb_writeoptions_set_sync(x->wo, 0);
	x->ro = rocksdb_readoptions_create();
	x->sro = rocksdb_readoptions_create();
	x->wb = rocksdb_writebatch_create();
	x->db = rocksdb_open(x->opts, x->dir, &err);
	if (err != NULL)
		return raw_err(errmsg, err, "open");
	x->res.pairs_per_row = 1;
	x->res.bytes_per_row = (double)(x->d->rkeys.len + x->d->rvals.len) / (double)x->d->rows;
	return 0;
}

static void raw_close(struct layout *x)
{
	if (x->db != NULL)
		rocksdb_close(x->db);
	if (x->wb != NULL)
		rocksdb_writebatch_destroy(x->wb);
	if (x->sro != NULL)
		rocksdb_readoptions_destroy(x->sro);
	if (x->ro != NULL)
		rocksdb_readoptions_destroy(x->ro);
	if (x->wo != NULL)
		rocksdb_writeoptions_destroy(x->wo);
	if (x->opts != NULL)
		rocksdb_options_destroy(x->opts);
	x->db = NULL;
	x->wb = NULL;
	x->sro = x->ro = NULL;
	x->wo = NULL;
	x->opts = NULL;
}

static NOINLINE int raw_insert(struct layout *x, char *errmsg)
{
	const struct data *d = x->d;
	struct stopwatch sw;
	char *err = NULL;
	long i = 0;

	sw_start(&sw);
	while (i < d->rows) {
		if (stop)
			return interrupted(errmsg);
		rocksdb_writebatch_clear(x->wb);
		for (long k = 0; k < x->o->batch && i < d->rows; k++, i++)
			rocksdb_writebatch_put(x->wb, (const char *)d->rkeys.data + d->rkoff[i],
					       d->rkoff[i + 1] - d->rkoff[i],
					       (const char *)d->rvals.data + d->rvoff[i],
					       d->rvoff[i + 1] - d->rvoff[i]);
		rocksdb_write(x->db, x->wo, x->wb, &err);
		if (err != NULL)
			return raw_err(errmsg, err, "write");
	}
	sw_rate(&sw, (double)d->rows, &x->res.rate[M_INSERT]);
	return 0;
}

static NOINLINE int raw_get(struct layout *x, long i, long *rows, char *errmsg)
{
	const struct data *d = x->d;
	size_t vlen = 0;
	char *err = NULL;
	char *v = rocksdb_get(x->db, x->ro, (const char *)d->rkeys.data + d->rkoff[i],
			      d->rkoff[i + 1] - d->rkoff[i], &vlen, &err);

	(void)rows; /* a read counts 1 */
	if (err != NULL)
		return raw_err(errmsg, err, "get");
	if (v == NULL)
		return err_set(errmsg, DOCRAFT_ENOTFOUND, "raw row %ld not found", i);
	rocksdb_free(v);
	if (vlen != d->rvoff[i + 1] - d->rvoff[i])
		return err_set(errmsg, DOCRAFT_ECORRUPT, "raw row %ld: %zu value bytes", i, vlen);
	return 0;
}

static NOINLINE int raw_scan(struct layout *x, long h, long *nrows_out, char *errmsg)
{
	const struct data *d = x->d;
	const char *lo = (const char *)d->pfx.data + d->pfxoff[h];
	size_t lo_len = d->pfxoff[h + 1] - d->pfxoff[h];
	rocksdb_iterator_t *it;
	char *err = NULL;
	long n = 0;
	size_t bytes = 0;

	rocksdb_readoptions_set_iterate_lower_bound(x->sro, lo, lo_len);
	rocksdb_readoptions_set_iterate_upper_bound(x->sro,
						    (const char *)d->upper.data + d->upoff[h],
						    d->upoff[h + 1] - d->upoff[h]);
	it = rocksdb_create_iterator(x->db, x->sro);
	for (rocksdb_iter_seek(it, lo, lo_len); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		(void)rocksdb_iter_key(it, &kl);
		(void)rocksdb_iter_value(it, &vl);
		bytes += kl + vl;
		n++;
	}
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err != NULL)
		return raw_err(errmsg, err, "iterate");
	if (n != rows_of(d, h) || bytes == 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "raw hash key %ld: %ld rows, want %ld", h,
			       n, rows_of(d, h));
	*nrows_out = n;
	return 0;
}

/* ---- phases, dispatched by layout -------------------------------------- */

static int layout_open(struct layout *x, char *errmsg)
{
	return x->kind == K_RAW ? raw_open(x, errmsg) : docdb_open(x, errmsg);
}

static void layout_close(struct layout *x)
{
	if (x->kind == K_RAW)
		raw_close(x);
	else
		docdb_close(x);
}

static int layout_insert(struct layout *x, char *errmsg)
{
	return x->kind == K_RAW ? raw_insert(x, errmsg) : docdb_insert(x, errmsg);
}

/* One item of a timed phase: a read of row i (*amount stays 1) or a scan
 * of hash key i (*amount: its rows). */
typedef int (*item_fn)(struct layout *x, long i, long *amount, char *errmsg);

/* Runs op on items[first .. first + count) until the cap; out NULL: a
 * warm-up. The rate counts the amounts (reads, or rows scanned). */
static int timed(struct layout *x, item_fn op, const long *items, long first, long count,
		 struct rate *out, char *errmsg)
{
	struct stopwatch sw;
	long n, total = 0;
	int rv;
	sw_start(&sw);
	for (n = 0; n < count; n++) {
		long amount = 1;
		if (capped(x->o, n, sw.wall))
			break;
		if ((rv = op(x, items[first + n], &amount, errmsg)) != 0)
			return rv;
		total += amount;
	}
	if (stop)
		return interrupted(errmsg);
	if (out != NULL)
		sw_rate(&sw, (double)total, out);
	return 0;
}

/* Warm-up (the items after the first n, untimed), then n timed ones. */
static int warm_then_time(struct layout *x, item_fn op, const long *items, long n, long all,
			  struct rate *out, char *errmsg)
{
	int rv;
	if ((rv = timed(x, op, items, n, all - n, NULL, errmsg)) != 0)
		return rv;
	return timed(x, op, items, 0, n, out, errmsg);
}

static int layout_reads(struct layout *x, enum metric m, char *errmsg)
{
	return warm_then_time(x, x->kind == K_RAW ? raw_get : docdb_get, x->d->read_rows,
			      x->o->reads, x->d->nreads, &x->res.rate[m], errmsg);
}

static int layout_scans(struct layout *x, enum metric m, char *errmsg)
{
	return warm_then_time(x, x->kind == K_RAW ? raw_scan : docdb_scan, x->d->scan_keys,
			      x->o->scans, x->d->nscans, &x->res.rate[m], errmsg);
}

static int layout_flush(struct layout *x, char *errmsg)
{
	double t0 = now_s();
	int rv = 0;
	if (x->kind == K_RAW) {
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		char *err = NULL;
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(x->db, fo, &err);
		rocksdb_flushoptions_destroy(fo);
		if (err != NULL)
			rv = raw_err(errmsg, err, "flush");
	} else {
		rv = store_flush(x->st, errmsg);
	}
	x->res.flush_s = now_s() - t0;
	return rv;
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
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_open(&L[order[j]], errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_insert(&L[order[j]], errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_reads(&L[order[j]], M_READ_MEM, errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_scans(&L[order[j]], M_SCAN_MEM, errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_flush(&L[order[j]], errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_reads(&L[order[j]], M_READ_SST, errmsg);
	for (int j = 0; j < n && rv == 0; j++)
		rv = layout_scans(&L[order[j]], M_SCAN_SST, errmsg);
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
	const char *parent;
	char *end;
	int c, n, idx = 0, rv = 0;

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

	parent = o.dir ? o.dir : getenv("TMPDIR");
	if (parent == NULL || parent[0] == '\0')
		parent = "/tmp";
	n = snprintf(base, sizeof base, "%s/docraft-docdbbench-XXXXXX", parent);
	if (n < 0 || (size_t)n >= sizeof base) {
		fprintf(stderr, "docdbbench: --dir too long\n");
		return 2;
	}
	if (mkdtemp(base) == NULL) {
		fprintf(stderr, "docdbbench: mkdtemp %s: %s\n", base, strerror(errno));
		return 1;
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
