/* Per-store block cache hits and misses (store_cache_counts) on real
 * RocksDB in a temp dir: counted from RocksDB's per-thread perf context
 * around iterator calls, with statistics off. A key read twice from a cold
 * cache after a flush misses, then hits; reads on another thread count
 * for the same store; compactions and writes do not count. Also the
 * store_property numbers /metrics shows beside them (SST files: a string
 * property in RocksDB 7.8). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/store.h"
#include "docdb/store_env.h"
#include "test.h"

#define BASE_US UINT64_C(1700000000000000)
#define NKEYS 2000

struct cfx {
	char dir[256];
	char path[300];
	struct store_env *env;
	struct store *s;
	char err[DOCRAFT_ERRMSG_SIZE];
};

/* A fresh environment (so a cold shared block cache) and the store in it. */
static void cfx_open(struct cfx *f)
{
	struct store_env_options eo;
	struct store_options o;

	store_env_options_default(&eo);
	eo.block_cache_bytes = 8u << 20;
	CHECK_OK_MSG(store_env_create(&eo, &f->env, f->err), f->err);
	store_options_default(&o);
	o.env = f->env;
	CHECK_OK_MSG(store_open(f->path, &o, &f->s, f->err), f->err);
}

static void cfx_close(struct cfx *f)
{
	store_close(f->s);
	f->s = NULL;
	store_env_destroy(f->env);
	f->env = NULL;
}

/* NKEYS keys "k00000".. in one batch at Raft index 1, flushed, then the
 * store and its cache reopened cold. */
static void cfx_init(struct cfx *f, const char *tag)
{
	struct batch b;
	char k[32], v[64];

	test_tmpdir_make(f->dir, tag);
	snprintf(f->path, sizeof f->path, "%s/db", f->dir);
	cfx_open(f);
	batch_init(&b);
	for (int i = 0; i < NKEYS; i++) {
		int kl = snprintf(k, sizeof k, "k%05d", i);
		int vl = snprintf(v, sizeof v, "value-%05d-padding-padding-padding", i);
		batch_put(&b, k, (size_t)kl, v, (size_t)vl);
	}
	CHECK_OK_MSG(store_apply(f->s, b.data.data, b.data.len, ht_make(BASE_US, 0), 1, f->err),
		     f->err);
	batch_free(&b);
	CHECK_OK_MSG(store_flush(f->s, f->err), f->err);
	cfx_close(f);
	cfx_open(f);
}

static void cfx_done(struct cfx *f)
{
	cfx_close(f);
	test_tmpdir_remove(f->dir);
}

/* Seeks a new iterator to the stored key "k<i>" and checks it is there. */
static void read_key(struct store *s, int i)
{
	char k[32];
	size_t kl = (size_t)snprintf(k, sizeof k, "k%05d", i);
	size_t len;
	const uint8_t *got;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);

	store_iter_seek(it, k, kl);
	CHECK_OK_MSG(store_iter_status(it, err), err);
	CHECK(store_iter_valid(it));
	got = store_iter_key(it, &len);
	CHECK(len >= kl && memcmp(got, k, kl) == 0);
	store_iter_free(it);
}

TEST(cold_read_misses_then_hits)
{
	struct cfx f;
	uint64_t h0, m0, h1, m1, h2, m2;

	cfx_init(&f, "cache-cold");
	store_cache_counts(f.s, &h0, &m0);
	CHECK_EQ_U64(h0, 0);
	CHECK_EQ_U64(m0, 0);
	read_key(f.s, 1234);
	store_cache_counts(f.s, &h1, &m1);
	test_note("first read: hits %" PRIu64 " misses %" PRIu64, h1, m1);
	CHECK(m1 >= 1); /* the data block at least came from the file */
	read_key(f.s, 1234);
	store_cache_counts(f.s, &h2, &m2);
	test_note("second read: hits %" PRIu64 " misses %" PRIu64, h2, m2);
	CHECK_EQ_U64(m2, m1); /* everything it needs is cached now */
	CHECK(h2 > h1);
	cfx_done(&f);
}

struct reader_arg {
	struct store *s;
	int first, n;
};

static void *reader_main(void *arg)
{
	struct reader_arg *a = arg;
	char k[32];
	int n = 0;
	size_t kl = (size_t)snprintf(k, sizeof k, "k%05d", a->first);
	struct store_iter *it = store_iter_new(a->s, NULL, 0, NULL, 0);

	for (store_iter_seek(it, k, kl); store_iter_valid(it) && n < a->n; store_iter_next(it))
		n++;
	store_iter_free(it);
	return NULL;
}

TEST(reads_on_other_threads_count)
{
	struct cfx f;
	pthread_t th;
	struct reader_arg a;
	uint64_t h1, m1, h2, m2;

	cfx_init(&f, "cache-thread");
	a.s = f.s;
	a.first = 0;
	a.n = NKEYS;
	CHECK_EQ_INT(pthread_create(&th, NULL, reader_main, &a), 0);
	CHECK_EQ_INT(pthread_join(th, NULL), 0);
	store_cache_counts(f.s, &h1, &m1);
	test_note("scan: hits %" PRIu64 " misses %" PRIu64, h1, m1);
	CHECK(m1 >= 2); /* NKEYS keys span several data blocks */
	CHECK_EQ_INT(pthread_create(&th, NULL, reader_main, &a), 0);
	CHECK_EQ_INT(pthread_join(th, NULL), 0);
	store_cache_counts(f.s, &h2, &m2);
	CHECK_EQ_U64(m2, m1);
	CHECK(h2 >= h1 + 2);
	cfx_done(&f);
}

TEST(writes_and_compactions_do_not_count)
{
	struct cfx f;
	struct batch b;
	uint64_t h, m;

	cfx_init(&f, "cache-compact");
	batch_init(&b);
	batch_put(&b, "k00001", 6, "new", 3);
	CHECK_OK_MSG(store_apply(f.s, b.data.data, b.data.len, ht_make(BASE_US + 1000, 0), 2,
				 f.err),
		     f.err);
	batch_free(&b);
	CHECK_OK_MSG(store_flush(f.s, f.err), f.err);
	CHECK_OK_MSG(store_compact(f.s, 0, f.err), f.err);
	store_cache_counts(f.s, &h, &m);
	CHECK_EQ_U64(h, 0);
	CHECK_EQ_U64(m, 0);
	cfx_done(&f);
}

TEST(store_property_numbers)
{
	struct cfx f;
	uint64_t v = 99;

	cfx_init(&f, "cache-prop");
	CHECK(store_property(f.s, "rocksdb.num-files-at-level0", &v)); /* string only */
	CHECK_EQ_U64(v, 1);
	CHECK(store_property(f.s, "rocksdb.live-sst-files-size", &v)); /* an integer */
	CHECK(v > 0);
	CHECK(!store_property(f.s, "rocksdb.no-such-property", &v));
	CHECK(!store_property(f.s, "rocksdb.stats", &v)); /* text, not a number */
	CHECK_EQ_U64(v, 0);
	cfx_done(&f);
}

TEST_MAIN(T(cold_read_misses_then_hits), T(reads_on_other_threads_count),
	  T(writes_and_compactions_do_not_count), T(store_property_numbers))
