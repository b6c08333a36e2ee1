/* DocDB store on real RocksDB (docdb/store.h), each case in its own temp dir:
 * stored key format, idempotent replay, the applied marker, iterator bounds,
 * and the error paths (corrupt batch, bad hybrid time, unopenable path, full
 * disk). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "docdb/store.h"
#include "test.h"

#define BASE_US UINT64_C(1700000000000000)

static uint64_t ht_of(uint64_t index)
{
	return ht_make(BASE_US + index * 1000, (uint32_t)(index % 4096));
}

/* Temp dirs are removed by the case that made them; when a failed CHECK
 * ends a case early, its dir is removed at the start of the next case or at
 * exit (its store is leaked on purpose: the case may have left iterators on
 * it). */
static char pending_dir[256];

static void pending_remove(void)
{
	if (pending_dir[0] != '\0') {
		test_tmpdir_remove(pending_dir);
		pending_dir[0] = '\0';
	}
}

static void tmpdir_make(char *dir, const char *tag)
{
	static bool registered;
	if (!registered) {
		atexit(pending_remove);
		registered = true;
	}
	pending_remove();
	test_tmpdir_make(dir, tag);
	memcpy(pending_dir, dir, sizeof pending_dir);
}

static void tmpdir_remove(const char *dir)
{
	test_tmpdir_remove(dir);
	if (strcmp(dir, pending_dir) == 0)
		pending_dir[0] = '\0';
}

/* A fresh temp dir and a store in it; the case must call fixture_done. */
struct fixture {
	char dir[256];
	char path[300];
	struct store *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

static void fixture_open(struct fixture *f)
{
	CHECK_OK_MSG(store_open(f->path, NULL, &f->s, f->errmsg), f->errmsg);
	CHECK(f->s != NULL);
}

static void fixture_init(struct fixture *f, const char *tag)
{
	tmpdir_make(f->dir, tag);
	snprintf(f->path, sizeof f->path, "%s/db", f->dir);
	f->s = NULL;
	f->errmsg[0] = '\0';
	fixture_open(f);
}

static void fixture_reopen(struct fixture *f)
{
	store_close(f->s);
	f->s = NULL;
	fixture_open(f);
}

static void fixture_done(struct fixture *f)
{
	store_close(f->s);
	f->s = NULL;
	tmpdir_remove(f->dir);
}

/* The batch of Raft index idx: n pairs, key "S<tag>-<j>", value
 * "v<idx>-<j>". */
static void make_batch(struct batch *b, const char *tag, uint64_t idx, int n)
{
	char k[64], v[64];
	batch_reset(b);
	for (int j = 0; j < n; j++) {
		int kl = snprintf(k, sizeof k, "S%s-%02d", tag, j);
		int vl = snprintf(v, sizeof v, "v%llu-%d", (unsigned long long)idx, j);
		batch_put(b, k, (size_t)kl, v, (size_t)vl);
	}
}

static int apply_batch(struct store *s, const char *tag, uint64_t idx, int n, char *errmsg)
{
	struct batch b;
	int rv;
	batch_init(&b);
	make_batch(&b, tag, idx, n);
	rv = store_apply(s, b.data.data, b.data.len, ht_of(idx), idx, errmsg);
	batch_free(&b);
	return rv;
}

/* All (key, value) pairs in [lower, upper), serialized as a batch so two
 * snapshots compare with memcmp. */
static uint32_t snapshot(struct store *s, const char *lower, struct batch *out)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_iter *it = store_iter_new(s, lower, lower ? strlen(lower) : 0, NULL, 0);
	batch_reset(out);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		batch_put(out, k, kl, v, vl);
	}
	CHECK_OK_MSG(store_iter_status(it, errmsg), errmsg);
	store_iter_free(it);
	return out->count;
}

static void stored_key(struct buf *out, const void *key, size_t len, uint64_t ht, uint32_t wid)
{
	buf_reset(out);
	buf_append(out, key, len);
	buf_push(out, KT_HYBRID_TIME);
	docht_append(out, (struct docht){.ht = ht, .write_id = wid});
}

struct kv {
	struct buf k;
	struct buf v;
};

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	size_t n = x->k.len < y->k.len ? x->k.len : y->k.len;
	int c = memcmp(x->k.data, y->k.data, n);
	if (c != 0)
		return c;
	return x->k.len < y->k.len ? -1 : x->k.len > y->k.len;
}

TEST(fresh_store)
{
	struct fixture f;
	struct store_options o;
	struct batch snap;
	uint64_t idx = 7, ht = 7;

	fixture_init(&f, "store-fresh");
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 0);
	CHECK_EQ_U64(ht, 0);
	batch_init(&snap);
	CHECK_EQ_INT(snapshot(f.s, NULL, &snap), 0);
	batch_free(&snap);
	CHECK_EQ_STR(store_path(f.s), f.path);
	CHECK_EQ_U64(store_history_cutoff(f.s), 0);
	CHECK_EQ_U64(store_history_retention_us(f.s), UINT64_C(900000000));
	store_set_history_cutoff(f.s, 12345);
	CHECK_EQ_U64(store_history_cutoff(f.s), 12345);
	store_close(f.s);

	store_options_default(&o);
	CHECK(o.create_if_missing);
	o.history_retention_us = 10 * 1000 * 1000;
	o.write_buffer_size = 1 << 20;
	CHECK_OK_MSG(store_open(f.path, &o, &f.s, f.errmsg), f.errmsg);
	CHECK_EQ_U64(store_history_retention_us(f.s), 10 * 1000 * 1000);
	CHECK_EQ_U64(store_history_cutoff(f.s), 0); /* in memory only */
	fixture_done(&f);
}

/* Each stored key is the batch key + '#' + DocHT(ht, write_id = i), values
 * unchanged; a key repeated in a batch gets two versions, newest first. */
TEST(stored_key_format)
{
	struct fixture f;
	struct batch b;
	struct kv want[6];
	struct buf key = BUF_INIT;
	const uint64_t ht = ht_make(BASE_US + 42, 17);
	static const char *const keys[] = {"Sbeta", "Salpha", "Sgamma\x00x", "Salpha", "S", "Sz"};
	static const size_t klens[] = {5, 6, 8, 6, 1, 2};
	size_t n = 6, i = 0;
	uint64_t idx, aht;
	struct store_iter *it;

	fixture_init(&f, "store-format");
	batch_init(&b);
	for (i = 0; i < n; i++) {
		char v[16];
		int vl = snprintf(v, sizeof v, "value%zu", i);
		batch_put(&b, keys[i], klens[i], v, (size_t)vl);
		buf_init(&want[i].k);
		buf_init(&want[i].v);
		stored_key(&want[i].k, keys[i], klens[i], ht, (uint32_t)i);
		buf_append(&want[i].v, v, (size_t)vl);
	}
	CHECK_OK_MSG(store_apply(f.s, b.data.data, b.data.len, ht, 1, f.errmsg), f.errmsg);
	qsort(want, n, sizeof want[0], kv_cmp);

	it = store_iter_new(f.s, "!", 1, NULL, 0);
	i = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it), i++) {
		size_t kl, vl, path_len;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		struct docht d;
		CHECK(i < n);
		CHECK_EQ_MEM(k, kl, want[i].k.data, want[i].k.len);
		CHECK_EQ_MEM(v, vl, want[i].v.data, want[i].v.len);
		CHECK_OK(key_split_ht(k, kl, &path_len, &d));
		CHECK_EQ_U64(d.ht, ht);
		CHECK_EQ_INT(k[path_len], KT_HYBRID_TIME);
		/* value<i> was written with write id i */
		CHECK_EQ_INT(d.write_id, v[5] - '0');
	}
	CHECK_EQ_INT(i, n);
	CHECK_OK(store_iter_status(it, f.errmsg));
	store_iter_free(it);

	/* "S#..." first ('#' < 'a'), then "Salpha" twice: write id 3 sorts
	 * before write id 0. */
	stored_key(&key, "S", 1, ht, 4);
	CHECK_EQ_MEM(want[0].k.data, want[0].k.len, key.data, key.len);
	stored_key(&key, "Salpha", 6, ht, 3);
	CHECK_EQ_MEM(want[1].k.data, want[1].k.len, key.data, key.len);
	stored_key(&key, "Salpha", 6, ht, 1);
	CHECK_EQ_MEM(want[2].k.data, want[2].k.len, key.data, key.len);

	store_applied(f.s, &idx, &aht);
	CHECK_EQ_U64(idx, 1);
	CHECK_EQ_U64(aht, ht);

	for (i = 0; i < n; i++) {
		buf_free(&want[i].k);
		buf_free(&want[i].v);
	}
	buf_free(&key);
	batch_free(&b);
	fixture_done(&f);
}

/* Indexes at or below the applied one are skipped: nothing changes. */
TEST(replay_skipped)
{
	struct fixture f;
	struct batch before, after, b;
	uint64_t idx, ht;

	fixture_init(&f, "store-replay");
	batch_init(&before);
	batch_init(&after);
	batch_init(&b);
	for (uint64_t i = 1; i <= 3; i++)
		CHECK_OK_MSG(apply_batch(f.s, "r", i, 4, f.errmsg), f.errmsg);
	CHECK_EQ_INT(snapshot(f.s, "!", &before), 12);
	CHECK_EQ_INT(snapshot(f.s, NULL, &before), 13); /* + the marker */

	/* Same index, different contents and time: skipped, returns 0. */
	for (uint64_t i = 1; i <= 3; i++) {
		make_batch(&b, "other", i + 100, 5);
		CHECK_OK(store_apply(f.s, b.data.data, b.data.len, ht_of(i + 100), i, f.errmsg));
		/* A byte-identical replay is skipped too. */
		CHECK_OK(apply_batch(f.s, "r", i, 4, f.errmsg));
	}
	/* Even a malformed batch at an applied index is a no-op. */
	CHECK_OK(store_apply(f.s, "\x09", 1, ht_of(2), 2, f.errmsg));
	CHECK_EQ_INT(snapshot(f.s, NULL, &after), 13);
	CHECK_EQ_MEM(after.data.data, after.data.len, before.data.data, before.data.len);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 3);
	CHECK_EQ_U64(ht, ht_of(3));

	/* Gaps are fine (not every Raft entry is a write). */
	CHECK_OK_MSG(apply_batch(f.s, "r", 10, 2, f.errmsg), f.errmsg);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 10);
	CHECK_EQ_INT(snapshot(f.s, "!", &after), 14);

	batch_free(&b);
	batch_free(&before);
	batch_free(&after);
	fixture_done(&f);
}

/* An empty batch still advances the applied index; index 0 writes the pairs
 * but leaves the marker alone. */
TEST(empty_batch_and_index_zero)
{
	struct fixture f;
	struct batch snap, b;
	uint64_t idx, ht;

	fixture_init(&f, "store-empty");
	batch_init(&snap);
	batch_init(&b);
	CHECK_OK_MSG(store_apply(f.s, NULL, 0, ht_of(4), 4, f.errmsg), f.errmsg);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 4);
	CHECK_EQ_U64(ht, ht_of(4));
	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 0);
	CHECK_EQ_INT(snapshot(f.s, NULL, &snap), 1);

	make_batch(&b, "z", 0, 3);
	CHECK_OK_MSG(store_apply(f.s, b.data.data, b.data.len, ht_of(99), 0, f.errmsg), f.errmsg);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 4);
	CHECK_EQ_U64(ht, ht_of(4));
	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 3);

	store_flush(f.s, f.errmsg);
	fixture_reopen(&f);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 4);
	CHECK_EQ_U64(ht, ht_of(4));
	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 3);
	batch_free(&b);
	batch_free(&snap);
	fixture_done(&f);
}

/* The marker is persisted by store_flush, comes back at open, and is hidden
 * from iteration starting at '!'. store_close does not flush. */
TEST(marker_survives_reopen)
{
	struct fixture f;
	struct batch snap, flushed;
	struct store_iter *it;
	size_t kl;
	const uint8_t *k;
	uint64_t idx, ht;

	fixture_init(&f, "store-marker");
	batch_init(&snap);
	batch_init(&flushed);
	for (uint64_t i = 1; i <= 5; i++)
		CHECK_OK_MSG(apply_batch(f.s, "m", i, 3, f.errmsg), f.errmsg);
	CHECK_OK_MSG(store_flush(f.s, f.errmsg), f.errmsg);
	CHECK_EQ_INT(snapshot(f.s, NULL, &flushed), 16);
	fixture_reopen(&f);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 5);
	CHECK_EQ_U64(ht, ht_of(5));
	CHECK_EQ_INT(snapshot(f.s, NULL, &snap), 16);
	CHECK_EQ_MEM(snap.data.data, snap.data.len, flushed.data.data, flushed.data.len);

	/* Unbounded iteration sees the internal marker first ... */
	it = store_iter_new(f.s, NULL, 0, NULL, 0);
	store_iter_seek_first(it);
	CHECK(store_iter_valid(it));
	k = store_iter_key(it, &kl);
	CHECK(kl > 0 && k[0] <= KT_INTERNAL_MAX);
	store_iter_free(it);
	/* ... from '!' on, only data, and none of it internal. */
	it = store_iter_new(f.s, "!", 1, NULL, 0);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		k = store_iter_key(it, &kl);
		CHECK(k[0] > KT_INTERNAL_MAX);
	}
	store_iter_seek(it, "", 0);
	CHECK(store_iter_valid(it));
	CHECK(store_iter_key(it, &kl)[0] == 'S');
	store_iter_free(it);

	/* Applied but not flushed: gone after close + reopen (replayed from the
	 * Raft log in real life). */
	CHECK_OK_MSG(apply_batch(f.s, "m", 6, 3, f.errmsg), f.errmsg);
	CHECK_OK_MSG(apply_batch(f.s, "extra", 7, 3, f.errmsg), f.errmsg);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 7);
	fixture_reopen(&f);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 5);
	CHECK_EQ_U64(ht, ht_of(5));
	CHECK_EQ_INT(snapshot(f.s, NULL, &snap), 16);
	CHECK_EQ_MEM(snap.data.data, snap.data.len, flushed.data.data, flushed.data.len);

	batch_free(&snap);
	batch_free(&flushed);
	fixture_done(&f);
}

static void check_at(struct store_iter *it, char first)
{
	size_t kl;
	const uint8_t *k;
	CHECK_MSG(store_iter_valid(it), "iterator invalid, want key %c", first);
	k = store_iter_key(it, &kl);
	CHECK_MSG(kl > 2 && k[0] == (uint8_t)first && k[1] == KT_HYBRID_TIME,
		  "at key starting %c, want %c", kl ? k[0] : '?', first);
}

TEST(iterator_bounds)
{
	struct fixture f;
	struct batch b;
	struct store_iter *it;
	char lower[8], upper[8];

	fixture_init(&f, "store-bounds");
	batch_init(&b);
	for (char c = 'b'; c <= 'f'; c++)
		batch_put(&b, &c, 1, "v", 1);
	CHECK_OK_MSG(store_apply(f.s, b.data.data, b.data.len, ht_of(1), 1, f.errmsg), f.errmsg);

	/* [c, e): the bounds are copied, so scribbling on ours is harmless. */
	strcpy(lower, "c");
	strcpy(upper, "e");
	it = store_iter_new(f.s, lower, 1, upper, 1);
	memset(lower, 'a', sizeof lower);
	memset(upper, 'z', sizeof upper);

	store_iter_seek_first(it);
	check_at(it, 'c');
	store_iter_next(it);
	check_at(it, 'd');
	store_iter_next(it);
	CHECK(!store_iter_valid(it));

	store_iter_seek_last(it);
	check_at(it, 'd');
	store_iter_prev(it);
	check_at(it, 'c');
	store_iter_prev(it);
	CHECK(!store_iter_valid(it));

	store_iter_seek(it, "a", 1);
	check_at(it, 'c');
	store_iter_seek(it, "d", 1);
	check_at(it, 'd');
	store_iter_seek(it, "d\xff", 2);
	CHECK(!store_iter_valid(it));
	store_iter_seek(it, "z", 1);
	CHECK(!store_iter_valid(it));

	store_iter_seek_for_prev(it, "z", 1);
	check_at(it, 'd');
	store_iter_seek_for_prev(it, "d\xff", 2);
	check_at(it, 'd');
	store_iter_seek_for_prev(it, "d", 1);
	check_at(it, 'c');
	store_iter_seek_for_prev(it, "c", 1); /* "c" < "c#..." */
	CHECK(!store_iter_valid(it));
	store_iter_seek_for_prev(it, "a", 1);
	CHECK(!store_iter_valid(it));
	CHECK_OK(store_iter_status(it, f.errmsg));
	store_iter_free(it);

	/* Lower bound only, upper bound only. */
	it = store_iter_new(f.s, "e", 1, NULL, 0);
	store_iter_seek_last(it);
	check_at(it, 'f');
	store_iter_seek_for_prev(it, "c", 1);
	CHECK(!store_iter_valid(it));
	store_iter_free(it);
	it = store_iter_new(f.s, NULL, 0, "c", 1);
	store_iter_seek_last(it);
	check_at(it, 'b');
	store_iter_prev(it);
	CHECK(store_iter_valid(it)); /* the marker: no lower bound */
	store_iter_seek(it, "c", 1);
	CHECK(!store_iter_valid(it));
	store_iter_free(it);

	/* Empty range. */
	it = store_iter_new(f.s, "d", 1, "d", 1);
	store_iter_seek_first(it);
	CHECK(!store_iter_valid(it));
	store_iter_seek_last(it);
	CHECK(!store_iter_valid(it));
	store_iter_free(it);

	batch_free(&b);
	fixture_done(&f);
}

/* Readers on other threads while one thread applies: every iterator sees
 * whole batches only, and exactly the ones its marker names; store_applied
 * never goes backwards. */
struct reader_arg {
	struct store *s;
	atomic_bool *stop;
	char fail[256];
	unsigned long views;
};

#define CONC_PAIRS 4

static void *reader_main(void *p)
{
	struct reader_arg *a = p;
	uint64_t last_applied = 0;
	while (!atomic_load(a->stop) && a->fail[0] == '\0') {
		struct store_iter *it = store_iter_new(a->s, NULL, 0, NULL, 0);
		uint64_t marker = 0, idx, n = 0;
		size_t kl, vl;
		const uint8_t *k;
		store_applied(a->s, &idx, NULL);
		if (idx < last_applied)
			snprintf(a->fail, sizeof a->fail, "applied went back %llu -> %llu",
				 (unsigned long long)last_applied, (unsigned long long)idx);
		last_applied = idx;
		store_iter_seek_first(it);
		if (store_iter_valid(it)) {
			k = store_iter_key(it, &kl);
			if (k[0] <= KT_INTERNAL_MAX) {
				const uint8_t *v = store_iter_value(it, &vl);
				marker = vl == 16 ? be64_load(v) : UINT64_MAX;
				store_iter_next(it);
			}
		}
		for (; store_iter_valid(it); store_iter_next(it))
			n++;
		store_iter_free(it);
		if (n != marker * CONC_PAIRS)
			snprintf(a->fail, sizeof a->fail, "marker %llu but %llu pairs",
				 (unsigned long long)marker, (unsigned long long)n);
		a->views++;
	}
	return NULL;
}

TEST(concurrent_readers)
{
	struct fixture f;
	struct reader_arg args[2];
	pthread_t th[2];
	atomic_bool stop;
	char tag[16];
	int rv = 0;

	fixture_init(&f, "store-conc");
	atomic_init(&stop, false);
	for (int i = 0; i < 2; i++) {
		args[i] = (struct reader_arg){.s = f.s, .stop = &stop};
		CHECK(pthread_create(&th[i], NULL, reader_main, &args[i]) == 0);
	}
	for (uint64_t idx = 1; idx <= 400 && rv == 0; idx++) {
		snprintf(tag, sizeof tag, "c%llu", (unsigned long long)idx);
		rv = apply_batch(f.s, tag, idx, CONC_PAIRS, f.errmsg);
		if (idx == 200)
			rv = store_flush(f.s, f.errmsg);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_OK_MSG(rv, f.errmsg);
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(args[i].fail[0] == '\0', "reader %d: %s", i, args[i].fail);
		CHECK(args[i].views > 0);
	}
	test_note("readers took %lu + %lu views", args[0].views, args[1].views);
	fixture_done(&f);
}

/* A malformed batch writes nothing, not even the pairs before the damage,
 * and does not move the applied index. */
TEST(corrupt_batch)
{
	struct fixture f;
	struct batch b, snap;
	uint64_t idx, ht;

	fixture_init(&f, "store-corrupt");
	batch_init(&b);
	batch_init(&snap);
	CHECK_OK_MSG(apply_batch(f.s, "ok", 1, 2, f.errmsg), f.errmsg);

	make_batch(&b, "bad", 2, 5);
	f.errmsg[0] = '\0';
	CHECK_EQ_INT(store_apply(f.s, b.data.data, b.data.len - 1, ht_of(2), 2, f.errmsg),
		     DOCRAFT_ECORRUPT);
	CHECK(strstr(f.errmsg, "malformed") != NULL);
	CHECK(strstr(f.errmsg, f.path) != NULL);
	/* A length field claiming more than there is, in the first pair. */
	b.data.data[0] = 0xff;
	CHECK_EQ_INT(store_apply(f.s, b.data.data, b.data.len, ht_of(2), 2, f.errmsg),
		     DOCRAFT_ECORRUPT);
	/* Garbage. */
	CHECK_EQ_INT(store_apply(f.s, "\x01\x02\x03", 3, ht_of(2), 2, f.errmsg),
		     DOCRAFT_ECORRUPT);

	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 2);
	store_applied(f.s, &idx, &ht);
	CHECK_EQ_U64(idx, 1);
	CHECK_EQ_U64(ht, ht_of(1));

	/* The next good batch at that index goes through, alone. */
	CHECK_OK_MSG(apply_batch(f.s, "bad", 2, 5, f.errmsg), f.errmsg);
	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 7);
	batch_free(&b);
	batch_free(&snap);
	fixture_done(&f);
}

TEST(invalid_hybrid_time)
{
	struct fixture f;
	struct batch b, snap;
	static const uint64_t bad[] = {HT_MIN, HT_INVALID, HT_MAX};
	uint64_t idx;

	fixture_init(&f, "store-badht");
	batch_init(&b);
	batch_init(&snap);
	make_batch(&b, "h", 1, 2);
	for (size_t i = 0; i < 3; i++) {
		f.errmsg[0] = '\0';
		CHECK_EQ_INT(store_apply(f.s, b.data.data, b.data.len, bad[i], 1, f.errmsg),
			     DOCRAFT_EINVAL);
		CHECK(f.errmsg[0] != '\0');
	}
	CHECK_EQ_INT(snapshot(f.s, NULL, &snap), 0);
	store_applied(f.s, &idx, NULL);
	CHECK_EQ_U64(idx, 0);
	/* HT_INITIAL is a valid time. */
	CHECK_OK_MSG(store_apply(f.s, b.data.data, b.data.len, HT_INITIAL, 1, f.errmsg), f.errmsg);
	CHECK_EQ_INT(snapshot(f.s, "!", &snap), 2);
	batch_free(&b);
	batch_free(&snap);
	fixture_done(&f);
}

TEST(open_errors)
{
	char dir[256], path[300];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store *s = (struct store *)&s;
	struct store_options o;
	int fd, rv;

	tmpdir_make(dir, "store-openerr");
	/* A regular file where the directory should be. */
	snprintf(path, sizeof path, "%s/file", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, "x", 1) == 1);
	close(fd);
	errmsg[0] = '\0';
	rv = store_open(path, NULL, &s, errmsg);
	test_note("regular file: %d %s", rv, errmsg);
	CHECK(rv != 0);
	CHECK(s == NULL);
	CHECK(strstr(errmsg, path) != NULL);
	CHECK(strstr(errmsg, "open") != NULL);

	/* Missing directory, create_if_missing off. */
	snprintf(path, sizeof path, "%s/missing", dir);
	store_options_default(&o);
	o.create_if_missing = false;
	errmsg[0] = '\0';
	rv = store_open(path, &o, &s, errmsg);
	test_note("missing: %d %s", rv, errmsg);
	CHECK(rv != 0);
	CHECK(s == NULL);
	CHECK(strstr(errmsg, path) != NULL);

	/* Inside a regular file. */
	snprintf(path, sizeof path, "%s/file/db", dir);
	rv = store_open(path, NULL, &s, errmsg);
	CHECK(rv != 0);
	CHECK(s == NULL);
	/* errmsg may be NULL. */
	CHECK(store_open(path, NULL, &s, NULL) != 0);
	CHECK(s == NULL);

	/* A store already open (RocksDB's lock) cannot be opened twice. */
	snprintf(path, sizeof path, "%s/db", dir);
	CHECK_OK_MSG(store_open(path, NULL, &s, errmsg), errmsg);
	{
		struct store *s2 = NULL;
		rv = store_open(path, NULL, &s2, errmsg);
		test_note("locked: %d %s", rv, errmsg);
		CHECK(rv != 0);
		CHECK(s2 == NULL);
	}
	store_close(s);
	store_close(NULL);
	tmpdir_remove(dir);
}

/* Full disk: a 1 MiB tmpfs, mounted in a child inside its own user and mount
 * namespaces (no root needed where unprivileged user namespaces are allowed;
 * skipped otherwise). The child fills the memtable with incompressible data
 * and flushes: that must fail with DOCRAFT_ENOSPC. */
enum { CHILD_OK = 0, CHILD_SKIP = 77, CHILD_FAIL = 1 };

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int enospc_child(const char *dir, int out, size_t write_buffer_size)
{
	struct store_options o;
	char buf[64], path[300], msg[512];
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	uid_t uid = getuid();
	gid_t gid = getgid();
	struct store *s = NULL;
	uint64_t rng = 12345;
	int rv, code;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
		dprintf(out, "unshare: %s", strerror(errno));
		return CHILD_SKIP;
	}
	snprintf(buf, sizeof buf, "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", buf) != 0 ||
	    write_file("/proc/self/setgroups", "deny") != 0) {
		dprintf(out, "uid_map: %s", strerror(errno));
		return CHILD_SKIP;
	}
	snprintf(buf, sizeof buf, "%u %u 1", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", buf) != 0) {
		dprintf(out, "gid_map: %s", strerror(errno));
		return CHILD_SKIP;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("docraft-test", dir, "tmpfs", 0, "size=1m") != 0) {
		dprintf(out, "mount tmpfs: %s", strerror(errno));
		return CHILD_SKIP;
	}
	snprintf(path, sizeof path, "%s/db", dir);
	store_options_default(&o);
	o.write_buffer_size = write_buffer_size;
	if ((rv = store_open(path, &o, &s, errmsg)) != 0) {
		dprintf(out, "open: %d %s", rv, errmsg);
		return CHILD_FAIL;
	}
	/* 4 MiB of random values, far above the 1 MiB fs: all in the memtable
	 * (the flush fails), or with small memtables flushed in the background
	 * until that fails and a later write reports it. */
	for (uint64_t idx = 1; idx <= 64; idx++) {
		struct batch b;
		uint8_t val[4096];
		char key[32];
		batch_init(&b);
		for (int j = 0; j < 16; j++) {
			int kl = snprintf(key, sizeof key, "Sfull-%03d-%02d", (int)idx, j);
			for (size_t x = 0; x < sizeof val; x += 8) {
				uint64_t r = test_rand(&rng);
				memcpy(val + x, &r, 8);
			}
			batch_put(&b, key, (size_t)kl, val, sizeof val);
		}
		rv = store_apply(s, b.data.data, b.data.len, ht_of(idx), idx, errmsg);
		batch_free(&b);
		if (rv != 0)
			break;
	}
	if (rv == 0)
		rv = store_flush(s, errmsg);
	snprintf(msg, sizeof msg, "%d %s", rv, errmsg);
	code = rv == DOCRAFT_ENOSPC && strstr(errmsg, path) != NULL ? CHILD_OK : CHILD_FAIL;
	dprintf(out, "%s", msg);
	store_close(s);
	return code;
}

/* Runs enospc_child in a fork, bounded in time; returns its wait status and
 * its message in msg. */
static int run_full(size_t write_buffer_size, char *msg, size_t size)
{
	char dir[256];
	int fds[2], status = -1;
	pid_t pid;
	ssize_t n;
	time_t deadline = time(NULL) + 120;

	msg[0] = '\0';
	test_tmpdir_make(dir, "store-full");
	if (pipe(fds) != 0) {
		snprintf(msg, size, "pipe: %s", strerror(errno));
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		snprintf(msg, size, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		alarm(150);
		_exit(enospc_child(dir, fds[1], write_buffer_size));
	}
	close(fds[1]);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(10000);
	}
	n = read(fds[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(fds[0]);
out:
	test_tmpdir_remove(dir);
	return status;
}

TEST(disk_full)
{
	static const size_t wbs[] = {0, 64 * 1024};
	char msg[512];
	for (size_t i = 0; i < sizeof wbs / sizeof wbs[0]; i++) {
		int status = run_full(wbs[i], msg, sizeof msg);
		CHECK_MSG(WIFEXITED(status), "child did not exit (status %d): %s", status, msg);
		if (WEXITSTATUS(status) == CHILD_SKIP) {
			test_note("SKIP disk_full: no unprivileged tmpfs here (%s)", msg);
			return;
		}
		test_note("disk_full, write buffer %zu: %s", wbs[i], msg);
		CHECK_MSG(WEXITSTATUS(status) == CHILD_OK, "child exit %d: %s", WEXITSTATUS(status),
			  msg);
	}
}

/* disk_full runs first: its child uses RocksDB after fork(), which is only
 * safe while this process has not started RocksDB's background threads. */
/* Several parts are one batch (write ids run on); raw internal records land
 * in the same write; a checkpoint opens as a store holding everything. */
TEST(parts_raw_and_checkpoint)
{
	struct fixture f;
	struct batch b1, b2;
	struct buf want = BUF_INIT;
	char cp[400];
	const uint64_t ht = ht_make(UINT64_C(1767225600000000), 0);
	fixture_init(&f, "store-parts");
	batch_init(&b1);
	batch_init(&b2);
	batch_put(&b1, "Sa", 2, "1", 1);
	batch_put(&b2, "Sb", 2, "2", 1);
	batch_put(&b2, "Sa", 2, "3", 1);
	struct store_part parts[2] = {{b1.data.data, b1.data.len}, {b2.data.data, b2.data.len}};
	struct store_raw raw[2] = {{"\x02r1", 3, "x", 1, false}, {"\x02r0", 3, NULL, 0, true}};
	CHECK_OK_MSG(store_apply_parts(f.s, parts, 2, raw, 2, ht, 7, f.errmsg), f.errmsg);
	uint64_t idx;
	store_applied(f.s, &idx, NULL);
	CHECK_EQ_U64(idx, 7);
	/* "Sa" was written twice: write id 2 (the second part) sorts first. */
	struct store_iter *it = store_iter_new(f.s, NULL, 0, NULL, 0);
	store_iter_seek(it, "\x02", 1);
	size_t kl, vl;
	const uint8_t *k = store_iter_key(it, &kl), *v;
	CHECK_EQ_MEM(k, kl, "\x02r1", 3);
	store_iter_seek(it, "Sa", 2);
	k = store_iter_key(it, &kl);
	v = store_iter_value(it, &vl);
	stored_key(&want, "Sa", 2, ht, 2);
	CHECK_EQ_MEM(k, kl, want.data, want.len);
	CHECK_EQ_MEM(v, vl, "3", 1);
	store_iter_next(it);
	k = store_iter_key(it, &kl);
	stored_key(&want, "Sa", 2, ht, 0);
	CHECK_EQ_MEM(k, kl, want.data, want.len);
	store_iter_free(it);
	/* A malformed second part writes nothing at all. */
	struct store_part bad[2] = {{b1.data.data, b1.data.len}, {"\xff", 1}};
	CHECK_EQ_INT(store_apply_parts(f.s, bad, 2, NULL, 0, ht + 1, 8, f.errmsg), DOCRAFT_ECORRUPT);
	CHECK(strstr(f.errmsg, "part 1") != NULL);
	store_applied(f.s, &idx, NULL);
	CHECK_EQ_U64(idx, 7);

	snprintf(cp, sizeof cp, "%s/checkpoint", f.dir);
	CHECK_OK_MSG(store_checkpoint(f.s, cp, f.errmsg), f.errmsg);
	CHECK(store_checkpoint(f.s, cp, f.errmsg) != 0); /* exists already */
	struct store *c;
	CHECK_OK_MSG(store_open(cp, NULL, &c, f.errmsg), f.errmsg);
	store_applied(c, &idx, NULL);
	CHECK_EQ_U64(idx, 7);
	it = store_iter_new(c, "S", 1, "T", 1);
	int n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
		n++;
	CHECK_EQ_INT(n, 3);
	store_iter_free(it);
	store_close(c);
	buf_free(&want);
	batch_free(&b1);
	batch_free(&b2);
	fixture_done(&f);
}

TEST_MAIN(T(disk_full), T(fresh_store), T(stored_key_format), T(replay_skipped),
	  T(empty_batch_and_index_zero), T(marker_survives_reopen), T(iterator_bounds),
	  T(concurrent_readers), T(corrupt_batch), T(invalid_hybrid_time), T(open_errors), T(parts_raw_and_checkpoint))
