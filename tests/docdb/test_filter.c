/* Reading less (docs/docdb.md): the DocDB prefix bloom filter (filter.c),
 * prefix-mode iterators and iterate bounds (store.c), and the process-wide
 * block cache and memtable budget (store_env.c).
 *
 * - The extractor's domain and its prefix law, on encoded keys.
 * - With several SST files, RocksDB statistics show that a point read of an
 *   absent key and a scan of one hash key read no data block of a file
 *   without the key's hash prefix (bloom "prefix useful" per skipped file),
 *   where the same reads with the filter off do read blocks.
 * - Iterate bounds alone (filter off): a scan inside one hash key reads only
 *   the files whose key range overlaps it.
 * - Prefix mode returns exactly what total order does (randomized, against a
 *   model, hash- and range-sharded tables, forward / reverse / bounds /
 *   paging), before and after compactions.
 * - The memtable budget flushes the store holding the oldest write first and
 *   keeps the sum under the budget.
 * - 200 stores under one environment (16 MiB cache, 32 MiB memtables), ~1
 *   MiB written to each: the process RSS grows by at most the budget plus
 *   slack, where 200 private-default stores grow by far more. Runs in a
 *   re-executed child (fork alone would inherit RocksDB's thread pools
 *   without their threads); skipped under ASan, which inflates RSS.
 *
 * Each case keeps its store in the global G so a failed CHECK still gets its
 * temp dir removed. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/filter.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/store_env.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* 2026-01-01T00:00:00Z in µs. */
#define BASE_US UINT64_C(1767225600000000)
#define MIB ((size_t)1 << 20)

static uint64_t at(int64_t seconds)
{
	return ht_make(BASE_US + (uint64_t)(seconds * 1000000), 0);
}

static struct {
	char dir[256];
	bool have_dir;
	struct store *s;
	struct schema sc;
	bool have_schema;
	struct batch b;
	struct docwrite w;
	struct arena a;
	uint64_t index;
	char err[DOCRAFT_ERRMSG_SIZE];
} G;

static void g_end(void)
{
	store_close(G.s);
	G.s = NULL;
	if (G.have_schema) {
		docwrite_free(&G.w);
		batch_free(&G.b);
		schema_free(&G.sc);
		arena_free(&G.a);
		G.have_schema = false;
	}
	if (G.have_dir) {
		test_tmpdir_remove(G.dir);
		G.have_dir = false;
	}
}

/* At exit after a failed last case: RocksDB's static objects may be gone,
 * so only the temp dir is removed. */
static void at_exit(void)
{
	if (G.have_dir)
		test_tmpdir_remove(G.dir);
}

static void col(const char *name, enum col_kind kind, enum col_type type)
{
	CHECK_OK_MSG(schema_add_column(&G.sc, name, kind, type, 0, 0, false, G.err), G.err);
}

/* A temp dir and a table: t(h int HASH, r int RANGE, v text), or with
 * range_only t(h int RANGE, r int RANGE, v text). */
static void g_begin(const char *tag, bool range_only)
{
	static bool registered;
	if (!registered) {
		atexit(at_exit);
		registered = true;
	}
	g_end();
	memset(&G, 0, sizeof G);
	test_tmpdir_make(G.dir, tag);
	G.have_dir = true;
	CHECK_OK_MSG(schema_init(&G.sc, "t", G.err), G.err);
	batch_init(&G.b);
	arena_init(&G.a);
	G.have_schema = true;
	col("h", range_only ? COL_RANGE : COL_HASH, CT_INT32);
	col("r", COL_RANGE, CT_INT32);
	col("v", COL_REGULAR, CT_TEXT);
	docwrite_init(&G.w, &G.sc, &G.b, NULL);
	G.index = 1;
}

static void g_open(bool prefix_filter, bool statistics)
{
	struct store_options o;
	store_close(G.s);
	G.s = NULL;
	store_options_default(&o);
	o.prefix_filter = prefix_filter;
	o.statistics = statistics;
	CHECK_OK_MSG(store_open(G.dir, &o, &G.s, G.err), G.err);
}

static void put(int32_t h, int32_t r, const char *v)
{
	struct pv key[2] = {pv_int32(h), pv_int32(r)};
	struct colval c = colval_of("v", pv_str(v));
	CHECK_OK_MSG(docwrite_insert(&G.w, key, 2, &c, 1, DOCWRITE_NO_TTL), G.w.errmsg);
}

static void del(int32_t h, int32_t r)
{
	struct pv key[2] = {pv_int32(h), pv_int32(r)};
	CHECK_OK_MSG(docwrite_delete_row(&G.w, key, 2), G.w.errmsg);
}

static void commit(uint64_t ht)
{
	CHECK_OK_MSG(store_apply(G.s, G.b.data.data, G.b.data.len, ht, G.index++, G.err), G.err);
	batch_reset(&G.b);
}

/* Without the applied marker (raft index 0), which would otherwise put the
 * key \x01applied into every file and make all their key ranges overlap. */
static void commit_unmarked(uint64_t ht)
{
	CHECK_OK_MSG(store_apply(G.s, G.b.data.data, G.b.data.len, ht, 0, G.err), G.err);
	batch_reset(&G.b);
}

static void flush(void)
{
	CHECK_OK_MSG(store_flush(G.s, G.err), G.err);
}

static int count_sst(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".sst") == 0)
			n++;
	}
	closedir(d);
	return n;
}

static uint64_t ticker(const char *name)
{
	uint64_t v = 0;
	CHECK_MSG(store_ticker(G.s, name, &v), "no ticker %s", name);
	return v;
}

/* What one read cost, from RocksDB's statistics. */
struct cost {
	uint64_t data_blocks;   /* data blocks looked up (block cache hits + misses) */
	uint64_t prefix_checked; /* SST prefix filters consulted */
	uint64_t prefix_useful;  /* ... that ruled the file out */
};

static struct cost cost_now(void)
{
	struct cost c;
	c.data_blocks = ticker("rocksdb.block.cache.data.hit") +
			ticker("rocksdb.block.cache.data.miss");
	c.prefix_checked = ticker("rocksdb.bloom.filter.prefix.checked");
	c.prefix_useful = ticker("rocksdb.bloom.filter.prefix.useful");
	return c;
}

static struct cost cost_since(struct cost before)
{
	struct cost now = cost_now();
	now.data_blocks -= before.data_blocks;
	now.prefix_checked -= before.prefix_checked;
	now.prefix_useful -= before.prefix_useful;
	return now;
}

/* Point read of (h, r): found or not, v into vbuf. */
static bool get_row(int32_t h, int32_t r, char *vbuf, size_t vcap)
{
	struct pv key[2] = {pv_int32(h), pv_int32(r)};
	struct row row;
	bool found = false;
	CHECK_OK_MSG(reader_get_row(G.s, &G.sc, key, 2, at(1000), &G.a, &row, &found, G.err),
		     G.err);
	if (found && vbuf != NULL) {
		const struct docnode *n = row_column_named(&row, "v");
		CHECK(n != NULL && n->value.type == PV_STRING && n->value.v.s.len < vcap);
		memcpy(vbuf, n->value.v.s.p, n->value.v.s.len);
		vbuf[n->value.v.s.len] = '\0';
	}
	arena_reset(&G.a);
	return found;
}

/* Rows of the scan, as "h.r=v;" into out. */
static void scan_rows(const struct scan_spec *base, struct buf *out)
{
	struct scan_spec sp = *base;
	struct buf state = BUF_INIT;
	for (;;) {
		struct row *rows;
		size_t n;
		CHECK_OK_MSG(reader_scan(G.s, &G.sc, &sp, &G.a, &rows, &n, &state, G.err), G.err);
		for (size_t i = 0; i < n; i++) {
			const struct docnode *v = row_column_named(&rows[i], "v");
			buf_printf(out, "%d.%d=", rows[i].key[0].v.i32, rows[i].key[1].v.i32);
			if (v != NULL)
				buf_append(out, v->value.v.s.p, v->value.v.s.len);
			buf_push(out, ';');
		}
		arena_reset(&G.a);
		if (state.len == 0)
			break;
		/* reader_scan resets paging_out only after reading the state. */
		sp.paging = state.data;
		sp.paging_len = state.len;
	}
	buf_free(&state);
}

static size_t scan_hash(int32_t h)
{
	struct pv hk = pv_int32(h);
	struct scan_spec sp = {.read_ht = at(1000), .hash_key = &hk, .n_hash = 1};
	struct buf out = BUF_INIT;
	size_t rows = 0;
	scan_rows(&sp, &out);
	for (size_t i = 0; i < out.len; i++)
		rows += out.data[i] == ';';
	buf_free(&out);
	return rows;
}

/* ---- the extractor -------------------------------------------------------- */

static size_t dockey_of(const struct schema *sc, int32_t h, int32_t r, struct buf *out)
{
	struct pv key[2] = {pv_int32(h), pv_int32(r)};
	char err[DOCRAFT_ERRMSG_SIZE];
	buf_reset(out);
	CHECK_OK_MSG(docwrite_dockey(sc, key, 2, out, err), err);
	return out->len;
}

TEST(extractor_domain_and_prefix_law)
{
	struct buf k = BUF_INIT, k2 = BUF_INIT;
	uint64_t rnd = 0x9E3779B97F4A7C15ull;
	struct pv s = pv_str("ab\0c");
	size_t n;

	g_begin("ext", false);
	/* Hash-sharded: 'G' hash, int32 h, '!' -> 8 bytes, whatever follows. */
	dockey_of(&G.sc, 7, 3, &k);
	CHECK_EQ_INT(filter_prefix_len(k.data, k.len), 1 + 2 + 5 + 1);
	CHECK_EQ_INT(k.data[8], KT_GROUP_END);
	buf_push(&k, 'K');
	buf_push(&k, 0x81);
	buf_push(&k, KT_HYBRID_TIME);
	docht_append(&k, (struct docht){at(1), 0});
	CHECK_EQ_INT(filter_prefix_len(k.data, k.len), 9);
	/* The prefix alone is in the domain; anything shorter is not. */
	for (size_t i = 0; i < 9; i++)
		CHECK_EQ_INT(filter_prefix_len(k.data, i), 0);
	CHECK_EQ_INT(filter_prefix_len(k.data, 9), 9);
	/* A string hash component (escaped NUL) ends at its terminator. */
	buf_reset(&k2);
	buf_push(&k2, KT_UINT16_HASH);
	buf_append_be16(&k2, 0x1234);
	key_append_pv(&k2, &s);
	buf_push(&k2, KT_GROUP_END);
	n = k2.len;
	buf_push(&k2, KT_GROUP_END);
	CHECK_EQ_INT(filter_prefix_len(k2.data, k2.len), n);
	/* Internal records, an empty range part, garbage: not in the domain. */
	CHECK_EQ_INT(filter_prefix_len((const uint8_t *)"\x01" "applied", 8), 0);
	CHECK_EQ_INT(filter_prefix_len((const uint8_t *)"!#", 2), 0);
	CHECK_EQ_INT(filter_prefix_len((const uint8_t *)"G", 1), 0);
	CHECK_EQ_INT(filter_prefix_len((const uint8_t *)"G\x01\x02\xfe", 4), 0);
	CHECK_EQ_INT(filter_prefix_len(NULL, 0), 0);

	/* Range-sharded: the first range component, int32 = 5 bytes. */
	g_begin("ext", true);
	dockey_of(&G.sc, 7, 3, &k);
	CHECK_EQ_INT(filter_prefix_len(k.data, k.len), 5);

	/* The law RocksDB relies on: any key starting with a prefix has that
	 * prefix. Random suffixes after random keys of both kinds. */
	for (int round = 0; round < 2000; round++) {
		bool hash = round % 2 == 0;
		size_t p;
		g_begin("ext", !hash);
		dockey_of(&G.sc, (int32_t)test_rand(&rnd), (int32_t)test_rand(&rnd), &k);
		p = filter_prefix_len(k.data, k.len);
		CHECK(p > 0 && p <= k.len);
		buf_reset(&k2);
		buf_append(&k2, k.data, p);
		for (uint64_t j = test_rand(&rnd) % 12; j > 0; j--)
			buf_push(&k2, (uint8_t)test_rand(&rnd));
		CHECK_EQ_INT(filter_prefix_len(k2.data, k2.len), p);
	}

	/* Bounds: a point read and a hash scan share a prefix; a whole-store
	 * scan, open bounds and bounds across hash keys do not. */
	g_begin("ext", false);
	dockey_of(&G.sc, 7, 3, &k);
	buf_reset(&k2);
	buf_append(&k2, k.data, k.len);
	buf_push(&k2, KT_MAX_BYTE);
	CHECK_EQ_INT(filter_bounds_prefix(k.data, k.len, k2.data, k2.len), 9);
	CHECK_EQ_INT(filter_bounds_prefix(k.data, 9, k2.data, 10), 9);
	CHECK_EQ_INT(filter_bounds_prefix(k.data, k.len, NULL, 0), 0);
	CHECK_EQ_INT(filter_bounds_prefix("!", 1, k2.data, k2.len), 0);
	dockey_of(&G.sc, 8, 3, &k2);
	CHECK_EQ_INT(filter_bounds_prefix(k.data, k.len, k2.data, k2.len), 0);
	buf_free(&k);
	buf_free(&k2);
	g_end();
}

/* ---- bloom filters ---------------------------------------------------------- */

#define NFILES 3 /* below RocksDB's L0 compaction trigger (4) */
#define KEYS_PER_FILE 8
#define ROWS_PER_KEY 4

static void write_files(void)
{
	char v[32];
	for (int f = 0; f < NFILES; f++) {
		for (int i = 0; i < KEYS_PER_FILE; i++)
			for (int r = 0; r < ROWS_PER_KEY; r++) {
				snprintf(v, sizeof v, "v%d.%d", f * 100 + i, r);
				put(f * 100 + i, r, v);
			}
		commit(at(f + 1));
		flush();
	}
	CHECK_EQ_INT(count_sst(G.dir), NFILES);
}

#define ABSENT 9999

TEST(bloom_skips_files_without_the_hash_key)
{
	struct cost c, on_absent, on_hit, on_scan, off_absent, off_hit, off_scan;
	char v[32];

	g_begin("bloom", false);
	g_open(true, true);
	write_files();

	/* Filter on. An absent hash key: every file ruled out by its filter,
	 * not one data block read. */
	c = cost_now();
	CHECK(!get_row(ABSENT, 0, NULL, 0));
	on_absent = cost_since(c);
	CHECK_EQ_U64(on_absent.prefix_checked, NFILES);
	CHECK_EQ_U64(on_absent.prefix_useful, NFILES);
	CHECK_EQ_U64(on_absent.data_blocks, 0);
	/* A present key of file 1: the two other files ruled out, one block. */
	c = cost_now();
	CHECK(get_row(105, 2, v, sizeof v));
	on_hit = cost_since(c);
	CHECK_EQ_STR(v, "v105.2");
	CHECK_EQ_U64(on_hit.prefix_useful, NFILES - 1);
	CHECK_EQ_U64(on_hit.data_blocks, 1);
	/* A scan of one hash key: likewise. */
	c = cost_now();
	CHECK_EQ_INT(scan_hash(203), ROWS_PER_KEY);
	on_scan = cost_since(c);
	CHECK_EQ_U64(on_scan.prefix_useful, NFILES - 1);
	CHECK_EQ_U64(on_scan.data_blocks, 1);
	/* A whole-store scan still sees everything (total order). */
	{
		struct scan_spec sp = {.read_ht = at(1000)};
		struct buf out = BUF_INIT;
		size_t rows = 0;
		scan_rows(&sp, &out);
		for (size_t i = 0; i < out.len; i++)
			rows += out.data[i] == ';';
		CHECK_EQ_INT(rows, NFILES * KEYS_PER_FILE * ROWS_PER_KEY);
		buf_free(&out);
	}

	/* The same files and reads with the filter off. */
	g_open(false, true);
	c = cost_now();
	CHECK(!get_row(ABSENT, 0, NULL, 0));
	off_absent = cost_since(c);
	CHECK_EQ_U64(off_absent.prefix_checked, 0);
	CHECK(off_absent.data_blocks > 0);
	c = cost_now();
	CHECK(get_row(105, 2, v, sizeof v));
	off_hit = cost_since(c);
	CHECK(off_hit.data_blocks >= 1);
	c = cost_now();
	CHECK_EQ_INT(scan_hash(203), ROWS_PER_KEY);
	off_scan = cost_since(c);
	CHECK(off_scan.data_blocks >= 1);

	test_note("%d files; data blocks read, filter on / off: absent key %" PRIu64 " / %" PRIu64
		  ", present key %" PRIu64 " / %" PRIu64 ", hash-key scan %" PRIu64 " / %" PRIu64
		  "; files ruled out by the filter: %" PRIu64 ", %" PRIu64 ", %" PRIu64,
		  NFILES, on_absent.data_blocks, off_absent.data_blocks, on_hit.data_blocks,
		  off_hit.data_blocks, on_scan.data_blocks, off_scan.data_blocks,
		  on_absent.prefix_useful, on_hit.prefix_useful, on_scan.prefix_useful);
	g_end();
}

/* Range-sharded tables: the bloom key is the first range component. */
TEST(bloom_on_first_range_component)
{
	struct cost c;
	char v[32];

	g_begin("bloomr", true);
	g_open(true, true);
	write_files();
	c = cost_now();
	CHECK(!get_row(ABSENT, 0, NULL, 0));
	c = cost_since(c);
	CHECK_EQ_U64(c.data_blocks, 0);
	CHECK_EQ_U64(c.prefix_useful, NFILES);
	c = cost_now();
	CHECK(get_row(202, 1, v, sizeof v));
	c = cost_since(c);
	CHECK_EQ_STR(v, "v202.1");
	CHECK_EQ_U64(c.data_blocks, 1);
	CHECK_EQ_U64(c.prefix_useful, NFILES - 1);
	g_end();
}

/* ---- iterate bounds ---------------------------------------------------------- */

static int cmp_hash(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;
	struct pv px = pv_int32(*x), py = pv_int32(*y);
	uint16_t hx = key_hash_components(&px, 1), hy = key_hash_components(&py, 1);
	return hx < hy ? -1 : hx > hy;
}

static void hash_prefix(int32_t h, struct buf *out)
{
	struct pv hk = pv_int32(h);
	buf_reset(out);
	buf_push(out, KT_UINT16_HASH);
	buf_append_be16(out, key_hash_components(&hk, 1));
	key_append_pv(out, &hk);
	buf_push(out, KT_GROUP_END);
}

/* Filter off, so only the bounds act. Three files holding disjoint hash
 * bands, each compacted on its own into L1 (RocksDB keeps L1 files disjoint
 * and, given an upper bound, opens only those overlapping the scan). A scan
 * inside one hash key of the middle file reads that file's block only; the
 * same seek without an upper bound also reads the next file's first block.
 * In L0, where every file is sought, the next file's first block is read
 * even with bounds: there the prefix filter is what skips it (above). */
TEST(iterate_bounds_read_only_overlapping_files)
{
	int32_t hs[NFILES * KEYS_PER_FILE];
	struct cost c, l0, bounded, open_ended;
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	struct store_iter *it;
	char v[32];
	int32_t target;
	size_t rows = 0;

	for (int i = 0; i < NFILES * KEYS_PER_FILE; i++)
		hs[i] = 1000 + i;
	qsort(hs, NFILES * KEYS_PER_FILE, sizeof hs[0], cmp_hash);
	target = hs[2 * KEYS_PER_FILE - 1]; /* the last key of the middle file */
	/* Twice: the bands as L0 files, then each band compacted into L1 by
	 * itself as soon as it is flushed. */
	for (int pass = 0; pass < 2; pass++) {
		g_begin("bounds", false);
		g_open(false, true);
		for (int f = 0; f < NFILES; f++) {
			for (int i = 0; i < KEYS_PER_FILE; i++)
				for (int r = 0; r < ROWS_PER_KEY; r++) {
					snprintf(v, sizeof v, "v%d", r);
					put(hs[f * KEYS_PER_FILE + i], r, v);
				}
			commit_unmarked(at(f + 1));
			flush();
			if (pass == 1) {
				hash_prefix(hs[f * KEYS_PER_FILE], &lo);
				hash_prefix(hs[f * KEYS_PER_FILE + KEYS_PER_FILE - 1], &hi);
				buf_push(&hi, KT_MAX_BYTE);
				CHECK_OK_MSG(store_compact_range(G.s, lo.data, lo.len, hi.data,
								 hi.len, at(1), G.err),
					     G.err);
			}
		}
		CHECK_EQ_INT(count_sst(G.dir), NFILES);
		if (pass == 0) {
			c = cost_now();
			CHECK_EQ_INT(scan_hash(target), ROWS_PER_KEY);
			l0 = cost_since(c);
		}
	}

	c = cost_now();
	CHECK_EQ_INT(scan_hash(target), ROWS_PER_KEY);
	bounded = cost_since(c);
	CHECK_EQ_U64(bounded.prefix_checked, 0);
	CHECK_EQ_U64(bounded.data_blocks, 1);

	/* The same rows through an iterator with only a lower bound. */
	hash_prefix(target, &lo);
	c = cost_now();
	it = store_iter_new(G.s, lo.data, lo.len, NULL, 0);
	CHECK(!store_iter_prefix_mode(it));
	for (store_iter_seek(it, lo.data, lo.len); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		if (kl < lo.len || memcmp(k, lo.data, lo.len) != 0)
			break;
		rows++;
	}
	store_iter_free(it);
	open_ended = cost_since(c);
	CHECK_EQ_INT(rows, ROWS_PER_KEY * 2); /* liveness + v per row */
	CHECK(open_ended.data_blocks > bounded.data_blocks);
	test_note("scan inside one hash key of the middle of %d files, filter off: %" PRIu64
		  " data block(s) with iterate bounds in L1, %" PRIu64
		  " without an upper bound; %" PRIu64 " with bounds while the files were in L0",
		  NFILES, bounded.data_blocks, open_ended.data_blocks, l0.data_blocks);
	buf_free(&lo);
	buf_free(&hi);
	g_end();
}

/* ---- prefix mode == total order ------------------------------------------------ */

#define EQ_H 24
#define EQ_R 8

static int32_t MODEL[EQ_H][EQ_R]; /* -1: absent, else the v number */

static void check_against_model(uint64_t *rnd, bool range_only)
{
	char v[32], want[32];
	struct buf got = BUF_INIT, exp = BUF_INIT;

	for (int h = 0; h < EQ_H; h++)
		for (int r = 0; r < EQ_R; r++) {
			bool found = get_row(h, r, v, sizeof v);
			CHECK_MSG(found == (MODEL[h][r] >= 0), "row %d.%d found %d", h, r, found);
			if (found) {
				snprintf(want, sizeof want, "%d", MODEL[h][r]);
				CHECK_EQ_STR(v, want);
			}
		}
	if (range_only) {
		struct scan_spec sp = {.read_ht = at(1000)};
		buf_reset(&got);
		buf_reset(&exp);
		scan_rows(&sp, &got);
		for (int h = 0; h < EQ_H; h++)
			for (int r = 0; r < EQ_R; r++)
				if (MODEL[h][r] >= 0)
					buf_printf(&exp, "%d.%d=%d;", h, r, MODEL[h][r]);
		CHECK_EQ_STR(buf_cstr(&got), buf_cstr(&exp));
		buf_free(&got);
		buf_free(&exp);
		return;
	}
	for (int q = 0; q < 60; q++) {
		int h = (int)(test_rand(rnd) % EQ_H);
		int32_t l = (int32_t)(test_rand(rnd) % (EQ_R + 2)) - 1;
		int32_t u = (int32_t)(test_rand(rnd) % (EQ_R + 2)) - 1;
		struct pv hk = pv_int32(h), lo = pv_int32(l), hi = pv_int32(u);
		struct scan_spec sp = {.read_ht = at(1000), .hash_key = &hk, .n_hash = 1};
		uint64_t shape = test_rand(rnd);
		sp.reverse = shape & 1;
		if (shape & 2) {
			sp.lower = &lo;
			sp.lower_incl = shape & 4;
		}
		if (shape & 8) {
			sp.upper = &hi;
			sp.upper_incl = shape & 16;
		}
		sp.limit = (shape >> 5) % 4;
		buf_reset(&got);
		buf_reset(&exp);
		scan_rows(&sp, &got);
		for (int i = 0; i < EQ_R; i++) {
			int r = sp.reverse ? EQ_R - 1 - i : i;
			if (MODEL[h][r] < 0)
				continue;
			if (sp.lower && (r < lo.v.i32 || (r == lo.v.i32 && !sp.lower_incl)))
				continue;
			if (sp.upper && (r > hi.v.i32 || (r == hi.v.i32 && !sp.upper_incl)))
				continue;
			buf_printf(&exp, "%d.%d=%d;", h, r, MODEL[h][r]);
		}
		CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&exp)) == 0,
			  "scan h=%d shape %" PRIu64 ":\n got %s\nwant %s", h, shape % 64,
			  buf_cstr(&got), buf_cstr(&exp));
	}
	buf_free(&got);
	buf_free(&exp);
}

static void prefix_vs_total_order(bool range_only)
{
	uint64_t rnd = test_seed();
	char v[32];
	int n = 0;

	g_begin(range_only ? "eqr" : "eq", range_only);
	g_open(true, false);
	memset(MODEL, 0xff, sizeof MODEL);
	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < 40; i++) {
			int h = (int)(test_rand(&rnd) % EQ_H), r = (int)(test_rand(&rnd) % EQ_R);
			if (test_rand(&rnd) % 5 == 0) {
				del(h, r);
				MODEL[h][r] = -1;
			} else {
				MODEL[h][r] = ++n;
				snprintf(v, sizeof v, "%d", n);
				put(h, r, v);
			}
			commit(at(round * 100 + i + 1));
		}
		if (round % 3 != 2)
			flush();
		if (round == 5)
			CHECK_OK_MSG(store_compact(G.s, at(1), G.err), G.err);
		/* Filter on (prefix mode; some rounds with rows still in the
		 * memtable), then the same files in total order (reopening
		 * drops what is not flushed: the WAL is off). */
		check_against_model(&rnd, range_only);
		flush();
		g_open(false, false);
		check_against_model(&rnd, range_only);
		g_open(true, false);
	}
	g_end();
}

TEST(prefix_mode_equals_total_order_hash)
{
	prefix_vs_total_order(false);
}

TEST(prefix_mode_equals_total_order_range)
{
	prefix_vs_total_order(true);
}

TEST(iterators_choose_their_mode)
{
	struct buf k = BUF_INIT, k2 = BUF_INIT;
	struct store_iter *it;

	g_begin("mode", false);
	g_open(true, false);
	dockey_of(&G.sc, 1, 1, &k);
	buf_append(&k2, k.data, k.len);
	buf_push(&k2, KT_MAX_BYTE);
	it = store_iter_new(G.s, k.data, k.len, k2.data, k2.len);
	CHECK(store_iter_prefix_mode(it));
	store_iter_free(it);
	it = store_iter_new(G.s, "!", 1, NULL, 0);
	CHECK(!store_iter_prefix_mode(it));
	store_iter_free(it);
	it = store_iter_new(G.s, NULL, 0, NULL, 0);
	CHECK(!store_iter_prefix_mode(it));
	store_iter_free(it);
	g_open(false, false);
	it = store_iter_new(G.s, k.data, k.len, k2.data, k2.len);
	CHECK(!store_iter_prefix_mode(it));
	store_iter_free(it);
	buf_free(&k);
	buf_free(&k2);
	g_end();
}

/* ---- the memtable budget ---------------------------------------------------- */

static void fill(struct store *s, int32_t h0, size_t bytes, uint64_t ht, uint64_t *index)
{
	static char val[1024];
	struct batch b;
	struct docwrite w;
	memset(val, 'x', sizeof val - 1);
	batch_init(&b);
	docwrite_init(&w, &G.sc, &b, NULL);
	for (size_t done = 0; done < bytes; done += sizeof val) {
		struct pv key[2] = {pv_int32(h0), pv_int32((int32_t)(done / sizeof val))};
		struct colval c = colval_of("v", pv_str(val));
		CHECK_OK_MSG(docwrite_insert(&w, key, 2, &c, 1, DOCWRITE_NO_TTL), w.errmsg);
	}
	CHECK_OK_MSG(store_apply(s, b.data.data, b.data.len, ht, (*index)++, G.err), G.err);
	docwrite_free(&w);
	batch_free(&b);
}

TEST(budget_flushes_the_oldest_memtable)
{
	struct store_env_options eo;
	struct store_env *env = NULL;
	struct store_env_stats st;
	struct store_options o;
	struct store *s[3] = {NULL, NULL, NULL};
	char dir[3][300];
	uint64_t idx[3] = {1, 1, 1};
	size_t a_before;

	g_begin("budget", false);
	store_env_options_default(&eo);
	eo.block_cache_bytes = 4 * MIB;
	eo.write_buffer_bytes = 2 * MIB;
	eo.store_write_buffer_size = 64 * MIB; /* RocksDB never flushes by itself */
	CHECK_OK_MSG(store_env_create(&eo, &env, G.err), G.err);
	store_options_default(&o);
	o.env = env;
	for (int i = 0; i < 3; i++) {
		snprintf(dir[i], sizeof dir[i], "%s/s%d", G.dir, i);
		CHECK_OK_MSG(store_open(dir[i], &o, &s[i], G.err), G.err);
	}
	/* A (oldest write), then B, then C: the write to C crosses the
	 * budget, and A's memtable is the one flushed. */
	fill(s[0], 1, 700 << 10, at(1), &idx[0]);
	fill(s[1], 2, 700 << 10, at(2), &idx[1]);
	a_before = store_memtable_bytes(s[0]);
	store_env_stats(env, &st);
	CHECK_EQ_U64(st.forced_flushes, 0);
	CHECK_EQ_INT(st.stores, 3);
	CHECK(st.memtable_bytes > 1400 << 10 && st.memtable_bytes <= 2 * MIB);
	fill(s[2], 3, 700 << 10, at(3), &idx[2]);
	store_env_wait_idle(env); /* the flusher thread flushes */
	store_env_stats(env, &st);
	CHECK_EQ_U64(st.forced_flushes, 1);
	CHECK_EQ_U64(st.flush_errors, 0);
	CHECK(st.memtable_bytes <= 2 * MIB);
	CHECK(store_memtable_bytes(s[0]) < a_before / 4);
	CHECK(store_memtable_bytes(s[1]) > 700 << 10);
	CHECK(store_memtable_bytes(s[2]) > 700 << 10);
	CHECK_EQ_INT(count_sst(dir[0]), 1);
	CHECK_EQ_INT(count_sst(dir[1]), 0);
	/* Next in line: B, once A has been flushed already. */
	fill(s[0], 4, 700 << 10, at(4), &idx[0]);
	store_env_wait_idle(env);
	store_env_stats(env, &st);
	CHECK(st.memtable_bytes <= 2 * MIB);
	CHECK_EQ_INT(count_sst(dir[1]), 1);
	test_note("budget 2 MiB: %" PRIu64 " forced flushes, memtables now %zu bytes, "
		  "shared cache %zu bytes",
		  st.forced_flushes, st.memtable_bytes, st.block_cache_usage);
	/* Reads through the shared cache. */
	{
		struct pv key[2] = {pv_int32(1), pv_int32(3)};
		struct row row;
		bool found = false;
		CHECK_OK_MSG(reader_get_row(s[0], &G.sc, key, 2, at(1000), &G.a, &row, &found,
					    G.err),
			     G.err);
		CHECK(found);
		arena_reset(&G.a);
		store_env_stats(env, &st);
		CHECK(st.block_cache_usage > 0);
	}
	for (int i = 0; i < 3; i++)
		store_close(s[i]);
	store_env_stats(env, &st);
	CHECK_EQ_INT(st.stores, 0);
	CHECK_EQ_U64(st.memtable_bytes, 0);
	store_env_destroy(env);
	g_end();
}

/* ---- 200 stores under one budget (child process) ------------------------------ */

#define RSS_STORES 200
#define RSS_CACHE (16 * MIB)
#define RSS_BUDGET (32 * MIB)
#define RSS_PER_STORE MIB
#define RSS_VALUE 1024
#define RSS_BATCH 32 /* rows per write */
#define RSS_SLACK (24 * MIB)
#define CHILD_ENV "DOCRAFT_TEST_FILTER_CHILD"

/* The child's work: open RSS_STORES stores (shared env or private
 * defaults), write RSS_PER_STORE to each round-robin, read some back.
 * Prints "rss0 rss1 rss2 hwm memtables cache flushes" (kB, kB, kB, kB, bytes,
 * bytes, count) on fd. */
static int child_run(bool shared, const char *dir, int fd)
{
	static struct store *s[RSS_STORES];
	static uint64_t idx[RSS_STORES];
	struct store_env_options eo;
	struct store_env *env = NULL;
	struct store_env_stats st = {0};
	struct store_options o;
	struct schema sc;
	struct batch b;
	struct docwrite w;
	struct arena a;
	char err[DOCRAFT_ERRMSG_SIZE], path[512], val[RSS_VALUE];
	long rss0, rss1, rss2, hwm;
	uint64_t rnd = 42;
	int rounds = RSS_PER_STORE / (RSS_VALUE * RSS_BATCH);

	if (schema_init(&sc, "t", err) != 0 ||
	    schema_add_column(&sc, "h", COL_HASH, CT_INT32, 0, 0, false, err) != 0 ||
	    schema_add_column(&sc, "r", COL_RANGE, CT_INT32, 0, 0, false, err) != 0 ||
	    schema_add_column(&sc, "v", COL_REGULAR, CT_BLOB, 0, 0, false, err) != 0)
		goto fail;
	batch_init(&b);
	arena_init(&a);
	docwrite_init(&w, &sc, &b, NULL);
	rss0 = test_status_kib(0, "VmRSS");
	store_options_default(&o);
	if (shared) {
		store_env_options_default(&eo);
		eo.block_cache_bytes = RSS_CACHE;
		eo.write_buffer_bytes = RSS_BUDGET;
		if (store_env_create(&eo, &env, err) != 0)
			goto fail;
		o.env = env;
	}
	for (int i = 0; i < RSS_STORES; i++) {
		snprintf(path, sizeof path, "%s/s%03d", dir, i);
		if (store_open(path, &o, &s[i], err) != 0)
			goto fail;
		idx[i] = 1;
	}
	rss1 = test_status_kib(0, "VmRSS");
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < RSS_STORES; i++) {
			for (int j = 0; j < RSS_BATCH; j++) {
				struct pv key[2] = {pv_int32(round * RSS_BATCH + j), pv_int32(j)};
				struct colval c;
				for (size_t k = 0; k < sizeof val; k += 8) {
					uint64_t x = test_rand(&rnd);
					memcpy(val + k, &x, 8);
				}
				c = colval_of("v", pv_strn(val, sizeof val));
				if (docwrite_insert(&w, key, 2, &c, 1, DOCWRITE_NO_TTL) != 0) {
					snprintf(err, sizeof err, "%s", w.errmsg);
					goto fail;
				}
			}
			/* Admission as the tserver does it (tablet_write):
			 * no new writes while the flusher is far behind. */
			if (store_env_busy(env))
				store_env_wait_idle(env);
			if (store_apply(s[i], b.data.data, b.data.len, at(round * 1000 + i + 1),
					idx[i]++, err) != 0)
				goto fail;
			batch_reset(&b);
		}
	for (int i = 0; i < RSS_STORES; i++)
		for (int q = 0; q < 8; q++) {
			int h = (int)(test_rand(&rnd) % (uint64_t)(rounds * RSS_BATCH));
			struct pv key[2] = {pv_int32(h), pv_int32(h % RSS_BATCH)};
			struct row row;
			bool found;
			if (reader_get_row(s[i], &sc, key, 2, at(1000000), &a, &row, &found, err) !=
			    0)
				goto fail;
			if (!found) {
				snprintf(err, sizeof err, "row %d missing from store %d", h, i);
				goto fail;
			}
			arena_reset(&a);
		}
	if (env != NULL)
		store_env_wait_idle(env);
	rss2 = test_status_kib(0, "VmRSS");
	hwm = test_status_kib(0, "VmHWM");
	if (env != NULL)
		store_env_stats(env, &st);
	dprintf(fd, "%ld %ld %ld %ld %zu %zu %" PRIu64 "\n", rss0, rss1, rss2, hwm,
		st.memtable_bytes, st.block_cache_usage, st.forced_flushes);
	for (int i = 0; i < RSS_STORES; i++)
		store_close(s[i]);
	store_env_destroy(env);
	docwrite_free(&w);
	batch_free(&b);
	arena_free(&a);
	schema_free(&sc);
	return 0;
fail:
	dprintf(fd, "error %s\n", err);
	return 1;
}

/* The child is this executable run again with CHILD_ENV="mode dir fd": it
 * does its work before main and exits. */
__attribute__((constructor)) static void child_main(void)
{
	const char *spec = getenv(CHILD_ENV);
	char mode[16], dir[300];
	int fd;
	struct rlimit rl;
	if (spec == NULL || sscanf(spec, "%15s %299s %d", mode, dir, &fd) != 3)
		return;
	/* A few files per store. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	_exit(child_run(strcmp(mode, "shared") == 0, dir, fd));
}

struct child {
	char dir[256];
	int fd;
	pid_t pid;
	struct timespec t0;
	/* The child's report. */
	long rss0, rss1, rss2, hwm;
	size_t memtables, cache;
	uint64_t flushes;
	double seconds;
};

static void child_start(struct child *c, const char *mode)
{
	extern char **environ;
	char spec[400], self[4096];
	char **envp;
	size_t n = 0;
	int fds[2];
	ssize_t r;

	test_tmpdir_make(c->dir, "rss");
	CHECK(pipe(fds) == 0);
	snprintf(spec, sizeof spec, CHILD_ENV "=%s %s %d", mode, c->dir, fds[1]);
	while (environ[n] != NULL)
		n++;
	envp = calloc(n + 2, sizeof *envp);
	CHECK(envp != NULL);
	memcpy(envp, environ, n * sizeof *envp);
	envp[n] = spec;
	r = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(r > 0);
	self[r] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	c->pid = fork();
	CHECK(c->pid >= 0);
	if (c->pid == 0) {
		char *argv[] = {self, NULL};
		close(fds[0]);
		execve(self, argv, envp);
		_exit(127);
	}
	free(envp);
	close(fds[1]);
	c->fd = fds[0];
}

static void child_finish(struct child *c, const char *mode)
{
	char buf[512];
	size_t got = 0;
	struct timespec t1;
	int status;
	ssize_t r;

	while (got < sizeof buf - 1 && (r = read(c->fd, buf + got, sizeof buf - 1 - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	close(c->fd);
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	test_tmpdir_remove(c->dir);
	c->seconds = (double)(t1.tv_sec - c->t0.tv_sec) +
		     (double)(t1.tv_nsec - c->t0.tv_nsec) / 1e9;
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s: status %d: %s", mode,
		  status, buf);
	CHECK_MSG(sscanf(buf, "%ld %ld %ld %ld %zu %zu %" SCNu64, &c->rss0, &c->rss1, &c->rss2,
			 &c->hwm, &c->memtables, &c->cache, &c->flushes) == 7,
		  "child %s said: %s", mode, buf);
}

TEST(two_hundred_stores_stay_within_the_budget)
{
	struct child sh, pr;
	long bound_kb = (long)((RSS_CACHE + RSS_BUDGET + RSS_SLACK) >> 10);

	if (UNDER_ASAN) {
		test_note("SKIP: AddressSanitizer inflates RSS");
		return;
	}
	/* Both at once: separate processes, separate RSS. */
	child_start(&sh, "shared");
	child_start(&pr, "private");
	child_finish(&sh, "shared");
	child_finish(&pr, "private");
	test_note("%d stores, %zu MiB written to each; shared env (%zu MiB cache, %zu MiB "
		  "memtables): RSS %ld MiB at start, %ld MiB after opening (%ld KiB per store), "
		  "%ld MiB after writes and reads (peak %ld MiB), memtables %zu KiB, "
		  "cache %zu KiB, %" PRIu64 " forced flushes, %.1f s",
		  RSS_STORES, RSS_PER_STORE / MIB, RSS_CACHE / MIB, RSS_BUDGET / MIB, sh.rss0 >> 10,
		  sh.rss1 >> 10, (sh.rss1 - sh.rss0) / RSS_STORES, sh.rss2 >> 10, sh.hwm >> 10,
		  sh.memtables >> 10, sh.cache >> 10, sh.flushes, sh.seconds);
	test_note("private defaults: RSS %ld MiB at start, %ld MiB after opening, %ld MiB after "
		  "writes and reads (peak %ld MiB), %.1f s",
		  pr.rss0 >> 10, pr.rss1 >> 10, pr.rss2 >> 10, pr.hwm >> 10, pr.seconds);
	/* What the data cost on top of the opened stores (whose fixed cost
	 * rss1 - rss0 is measured, not bounded): at most the cache plus the
	 * memtable budget plus slack for allocator rounding and fragmentation,
	 * flush and compaction buffers, and the table readers of the files. */
	CHECK_MSG(sh.memtables <= RSS_BUDGET, "memtables %zu over the budget", sh.memtables);
	CHECK_MSG(sh.hwm - sh.rss1 <= bound_kb, "shared: grew %ld KiB, bound %ld KiB",
		  sh.hwm - sh.rss1, bound_kb);
	CHECK_MSG(pr.rss2 - pr.rss1 > bound_kb, "private: grew only %ld KiB (bound %ld KiB)",
		  pr.rss2 - pr.rss1, bound_kb);
}

TEST_MAIN(T(extractor_domain_and_prefix_law), T(bloom_skips_files_without_the_hash_key),
	  T(bloom_on_first_range_component), T(iterate_bounds_read_only_overlapping_files),
	  T(prefix_mode_equals_total_order_hash), T(prefix_mode_equals_total_order_range),
	  T(iterators_choose_their_mode), T(budget_flushes_the_oldest_memtable),
	  T(two_hundred_stores_stay_within_the_budget))
