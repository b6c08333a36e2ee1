/* docraft-docdbbench's data set and layouts (docdbbench.h): the rows every
 * layout writes, generated once; and per layout, its store and the timed
 * loops that insert, read, scan and flush it.
 *
 * Design. Each timed loop is a function of its own (NOINLINE) so that a
 * profiler can restrict itself to one of them; the layout's kind picks the
 * DocDB or the raw one. The raw pairs and the hash keys' scan bounds are
 * built with the data set, before any clock starts: the raw side times
 * RocksDB only, while the DocDB side also encodes its rows from typed
 * values, which is part of what DocDB costs. Every answer is checked (rows
 * found, row counts, value sizes). */
#include "docdbbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/value.h"

/* The timed loops stay functions of their own, so that a profiler can
 * restrict itself to one of them:
 *   valgrind --tool=callgrind --toggle-collect=docdb_scan ... --only packed */
#define NOINLINE __attribute__((noinline))
/* rocksdb::InfoLogLevel::WARN_LEVEL, as store.c sets it. */
#define ROCKSDB_WARN_LEVEL 2

volatile sig_atomic_t layout_stop;

const char *const kind_name[K_COUNT] = {"unpacked", "packed", "raw"};

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

int data_build(struct data *d, const struct opts *o, char *errmsg)
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

void data_free(struct data *d)
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

/* ---- timing helpers ----------------------------------------------------- */

/* Whether a timed loop must layout_stop: interrupted, or past the cap (checked
 * every 64 operations). */
static bool capped(const struct opts *o, long n, double t0)
{
	if (layout_stop)
		return true;
	return (n & 63) == 0 && n > 0 && o->seconds_cap > 0 && now_s() - t0 > o->seconds_cap;
}

static int interrupted(char *errmsg)
{
	return err_set(errmsg, DOCRAFT_ECLOSED, "interrupted");
}

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
		if (layout_stop) {
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

	/* Every handle first: raw_close relies on opts meaning all of them. */
	x->wo = rocksdb_writeoptions_create();
	x->ro = rocksdb_readoptions_create();
	x->sro = rocksdb_readoptions_create();
	x->wb = rocksdb_writebatch_create();
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
	rocksdb_writeoptions_disable_WAL(x->wo, 1);
	rocksdb_writeoptions_set_sync(x->wo, 0);
	x->db = rocksdb_open(x->opts, x->dir, &err);
	if (err != NULL)
		return raw_err(errmsg, err, "open");
	x->res.pairs_per_row = 1;
	x->res.bytes_per_row = (double)(x->d->rkeys.len + x->d->rvals.len) / (double)x->d->rows;
	return 0;
}

static void raw_close(struct layout *x)
{
	if (x->opts == NULL)
		return; /* never opened, or closed: raw_open creates every handle with opts */
	if (x->db != NULL)
		rocksdb_close(x->db);
	x->db = NULL;
	rocksdb_options_destroy(x->opts);
	x->opts = NULL;
	rocksdb_writebatch_destroy(x->wb);
	rocksdb_readoptions_destroy(x->sro);
	rocksdb_readoptions_destroy(x->ro);
	rocksdb_writeoptions_destroy(x->wo);
}

static NOINLINE int raw_insert(struct layout *x, char *errmsg)
{
	const struct data *d = x->d;
	struct stopwatch sw;
	char *err = NULL;
	long i = 0;

	sw_start(&sw);
	while (i < d->rows) {
		if (layout_stop)
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

int layout_open(struct layout *x, char *errmsg)
{
	return x->kind == K_RAW ? raw_open(x, errmsg) : docdb_open(x, errmsg);
}

void layout_close(struct layout *x)
{
	if (x->kind == K_RAW)
		raw_close(x);
	else
		docdb_close(x);
}

int layout_insert(struct layout *x, char *errmsg)
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
	if (layout_stop)
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

int layout_reads(struct layout *x, enum metric m, char *errmsg)
{
	return warm_then_time(x, x->kind == K_RAW ? raw_get : docdb_get, x->d->read_rows,
			      x->o->reads, x->d->nreads, &x->res.rate[m], errmsg);
}

int layout_scans(struct layout *x, enum metric m, char *errmsg)
{
	return warm_then_time(x, x->kind == K_RAW ? raw_scan : docdb_scan, x->d->scan_keys,
			      x->o->scans, x->d->nscans, &x->res.rate[m], errmsg);
}

int layout_flush(struct layout *x, char *errmsg)
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
