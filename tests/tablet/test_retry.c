/* The retry table (src/tablet/retry.c) over a real DocDB store, driven the
 * way fsm.c apply drives it (skip what is decided, retry_record the rest,
 * one store_apply_parts per entry):
 *
 *   chunk_format                  one entry, three requests of one client: one
 *       put, byte for byte the chunk format of retry.h.
 *   reload_equals_live_random     random entries (several clients, seqs that
 *       run on, skip, repeat held seqs and come back after being forgotten,
 *       min_running moving up and down, false conditions): after every entry
 *       a table loaded from the store answers every (client, seq) like the
 *       live table, and a replica that reloads after every entry writes the
 *       same store as one that never does; a seq that comes back after being
 *       forgotten is refused as expired (retry_expired), never recorded anew.
 *   reload_equals_live_random_expiry  the same with a retry window of 20
 *       entries and a client silent for 200: both replicas refuse and forget
 *       the same requests at the same entries.
 *   expiry_window                 a retry window by the entries' hybrid times:
 *       an idle client forgotten whole (its chunks deleted) by the first entry
 *       past its window, an old seq of an active client refused, a seq in the
 *       window still answered from the table; identical on a replica that
 *       reloads after every entry.
 *   many_clients_expire           600 clients, one per entry, a window of
 *       50 entries: each entry forgets exactly the client 51 entries back,
 *       every other client stays findable; a reload equals the live table.
 *   shuffled_order                one client's seqs decided in a random order
 *       (min_running: the smallest not decided): every decided seq at or above
 *       it is held, a reload equals the live table.
 *   legacy_records                one-record-per-seq values of earlier
 *       versions are loaded, merged into a chunk that takes their key, and
 *       deleted when forgotten.
 *   corrupt_records               every malformed record is DOCRAFT_ECORRUPT
 *       and leaves the table empty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "docdb/store.h"
#include "docraft/error.h"
#include "tablet/entry.h"
#include "tablet/retry.h"
#include "test.h"
#include "store_dump.h"

#define BASE_US UINT64_C(1700000000000000)

static uint64_t ht_of(uint64_t idx)
{
	return ht_make(BASE_US + idx * 1000, 0);
}

static void cid_of(uint8_t cid[ENTRY_CLIENT_ID_LEN], uint8_t client)
{
	memset(cid, client, ENTRY_CLIENT_ID_LEN);
}

static void key_of(uint8_t key[RETRY_KEY_LEN], uint8_t client, uint64_t k)
{
	key[0] = RETRY_PREFIX;
	cid_of(key + 1, client);
	for (int i = 0; i < 8; i++)
		key[1 + ENTRY_CLIENT_ID_LEN + i] = (uint8_t)(k >> (56 - 8 * i));
}

/* A store, the table applied to it and the changes of its last entry. */
struct side {
	char dir[256];
	char path[300];
	struct store *s;
	struct retry_table t;
	struct retry_changes ch;
	uint64_t idx; /* last applied */
	unsigned refused; /* requests of the last entry refused as expired */
};

static void side_open(struct side *x, const char *tag)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	memset(x, 0, sizeof *x);
	test_tmpdir_make(x->dir, tag);
	snprintf(x->path, sizeof x->path, "%s/db", x->dir);
	CHECK_OK_MSG(store_open(x->path, NULL, &x->s, errmsg), errmsg);
	retry_init(&x->t);
	retry_changes_init(&x->ch);
}

static void side_close(struct side *x)
{
	retry_free(&x->t);
	retry_changes_free(&x->ch);
	store_close(x->s);
	test_tmpdir_remove(x->dir);
}

static void reload(struct side *x)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK_OK_MSG(retry_load(&x->t, x->s, errmsg), errmsg);
}

/* Raw records written as the next entry, without the table. */
static void write_raw(struct side *x, const struct store_raw *raw, size_t n)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	x->idx++;
	CHECK_OK_MSG(store_apply_parts(x->s, NULL, 0, raw, n, ht_of(x->idx), x->idx, errmsg),
		     errmsg);
}

struct req {
	uint8_t client;
	uint64_t seq;
	uint64_t min_running;
	int status;
};

/* What fsm.c apply does with the requests of the entry at index idx. */
static void apply_entry(struct side *x, uint64_t idx, const struct req *q, size_t n)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK(idx > x->idx);
	retry_changes_reset(&x->ch, idx);
	retry_expire(&x->t, ht_of(idx), &x->ch);
	x->refused = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t cid[ENTRY_CLIENT_ID_LEN];

		cid_of(cid, q[i].client);
		if (retry_applied(&x->t, cid, q[i].seq))
			continue;
		if (retry_expired(&x->t, cid, q[i].seq, ht_of(idx))) {
			x->refused++;
			continue;
		}
		retry_record(&x->t, cid, q[i].seq, q[i].min_running, ht_of(idx), q[i].status,
			     &x->ch);
	}
	retry_changes_finish(&x->ch);
	CHECK_OK_MSG(store_apply_parts(x->s, NULL, 0, x->ch.raw, x->ch.n, ht_of(idx), idx, errmsg),
		     errmsg);
	x->idx = idx;
}

static unsigned n_puts(const struct retry_changes *ch)
{
	unsigned n = 0;

	for (size_t i = 0; i < ch->n; i++)
		n += !ch->raw[i].del;
	return n;
}

/* The keys under 0x02 (with the client byte, or any when client is 0). */
static unsigned n_keys(struct store *s, uint8_t client)
{
	uint8_t p[1 + ENTRY_CLIENT_ID_LEN];
	size_t pl = client ? sizeof p : 1;
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);
	unsigned n = 0;

	p[0] = RETRY_PREFIX;
	memset(p + 1, client, ENTRY_CLIENT_ID_LEN);
	for (store_iter_seek(it, p, pl); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);

		if (kl < pl || memcmp(k, p, pl) != 0)
			break;
		n++;
	}
	store_iter_free(it);
	return n;
}

/* The value stored under key (client, k) into out; false if absent. */
static bool stored_value(struct store *s, uint8_t client, uint64_t k, struct buf *out)
{
	uint8_t key[RETRY_KEY_LEN];
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);
	bool found = false;

	key_of(key, client, k);
	buf_reset(out);
	store_iter_seek(it, key, sizeof key);
	if (store_iter_valid(it)) {
		size_t kl, vl;
		const uint8_t *sk = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);

		if (kl == sizeof key && memcmp(sk, key, kl) == 0) {
			buf_append(out, v, vl);
			found = true;
		}
	}
	store_iter_free(it);
	return found;
}

/* a and b answer alike for clients first..first+nclients-1, seqs 0..maxseq. */
static void check_same(const struct retry_table *a, const struct retry_table *b, uint8_t first,
		       unsigned nclients, uint64_t maxseq, uint64_t idx)
{
	uint64_t next_ht = ht_of(idx + 1);

	CHECK_EQ_INT(a->nclients, b->nclients);
	CHECK_EQ_INT(a->nrecords, b->nrecords);
	CHECK_EQ_INT(a->nchunks, b->nchunks);
	for (unsigned c = 0; c < nclients; c++) {
		uint8_t cid[ENTRY_CLIENT_ID_LEN];

		cid_of(cid, (uint8_t)(first + c));
		for (uint64_t seq = 0; seq <= maxseq; seq++) {
			uint64_t hta = 0, htb = 0;
			int sa = -1, sb = -1;
			bool ia = retry_lookup(a, cid, seq, &hta, &sa);
			bool ib = retry_lookup(b, cid, seq, &htb, &sb);

			CHECK_MSG(ia == ib && (!ia || (hta == htb && sa == sb)),
				  "after entry %llu, client %u seq %llu: %s (ht %llu, %d) vs %s "
				  "(ht %llu, %d)",
				  (unsigned long long)idx, c, (unsigned long long)seq,
				  ia ? "held" : "not held", (unsigned long long)hta, sa,
				  ib ? "held" : "not held", (unsigned long long)htb, sb);
			CHECK_MSG(retry_expired(a, cid, seq, next_ht) ==
					  retry_expired(b, cid, seq, next_ht),
				  "after entry %llu, client %u seq %llu: expired differs",
				  (unsigned long long)idx, c, (unsigned long long)seq);
		}
	}
}

TEST(chunk_format)
{
	const struct req q[] = {
		{0x11, 7, 5, 0},
		{0x11, 5, 5, 0},
		{0x11, 6, 4, DOCRAFT_ECONDITION},
		{0x11, 7, 7, 0}, /* a retry of the first: skipped */
	};
	struct side x;
	struct buf v = BUF_INIT, want = BUF_INIT;
	uint64_t ht;
	int st;
	uint8_t cid[ENTRY_CLIENT_ID_LEN];

	side_open(&x, "retry-format");
	apply_entry(&x, 3, q, sizeof q / sizeof q[0]);
	CHECK_EQ_INT(x.ch.n, 1);
	CHECK_EQ_INT(n_puts(&x.ch), 1);
	CHECK_EQ_INT(n_keys(x.s, 0), 1);
	CHECK(stored_value(x.s, 0x11, 3, &v));
	buf_push(&want, RETRY_CHUNK_TAG);
	buf_append_be64(&want, 5); /* the largest min(min_running, seq) */
	for (uint64_t seq = 5; seq <= 7; seq++) {
		buf_append_be64(&want, seq);
		buf_append_be64(&want, ht_of(3));
		buf_push(&want, seq == 6 ? RETRY_OUTCOME_CONDITION : 0);
	}
	CHECK_EQ_MEM(v.data, v.len, want.data, want.len);
	CHECK_EQ_INT(v.len, RETRY_CHUNK_HEAD_LEN + 3 * RETRY_CHUNK_ITEM_LEN);
	CHECK_EQ_INT(x.t.nrecords, 3);
	CHECK_EQ_INT(x.t.nchunks, 1);
	cid_of(cid, 0x11);
	CHECK(retry_lookup(&x.t, cid, 6, &ht, &st));
	CHECK_EQ_U64(ht, ht_of(3));
	CHECK_EQ_INT(st, DOCRAFT_ECONDITION);
	reload(&x);
	CHECK(retry_lookup(&x.t, cid, 6, &ht, &st));
	CHECK_EQ_U64(ht, ht_of(3));
	CHECK_EQ_INT(st, DOCRAFT_ECONDITION);
	CHECK_EQ_INT(x.t.nrecords, 3);
	CHECK_EQ_INT(x.t.nchunks, 1);
	buf_free(&v);
	buf_free(&want);
	side_close(&x);
}

#define R_CLIENTS 3
#define R_FIRST 0xa0
#define R_ENTRIES 400
#define R_MAX_REQS 10

/* Entries are 1 ms apart (ht_of). ttl_us 0: records never expire. With a
 * ttl, the last client is silent from entry 100 to 300 (forgotten whole,
 * then back with old and new seqs). */
static void random_run(uint64_t ttl_us)
{
	uint64_t rng = test_seed();
	uint64_t next[R_CLIENTS], mr[R_CLIENTS], maxseq = 0;
	struct side live, restarted;
	struct retry_table fresh;
	struct req q[R_MAX_REQS];
	struct buf a = BUF_INIT, b = BUF_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	unsigned puts = 0, dels = 0, reqs = 0, reused = 0;

	unsigned refused = 0;
	size_t most_clients = 0;

	side_open(&live, "retry-live");
	side_open(&restarted, "retry-restarted");
	retry_init(&fresh);
	retry_set_ttl(&live.t, ttl_us);
	retry_set_ttl(&restarted.t, ttl_us);
	retry_set_ttl(&fresh, ttl_us);
	for (unsigned c = 0; c < R_CLIENTS; c++) {
		next[c] = 1;
		mr[c] = 1;
	}
	for (uint64_t idx = 1; idx <= R_ENTRIES; idx++) {
		size_t n = 1 + test_rand(&rng) % R_MAX_REQS;

		for (size_t i = 0; i < n; i++) {
			unsigned c = (unsigned)(test_rand(&rng) % R_CLIENTS);
			unsigned r = (unsigned)(test_rand(&rng) % 10);
			uint64_t seq;

			if (ttl_us != 0 && c == R_CLIENTS - 1 && idx > 100 && idx < 300)
				c = 0;

			if (r < 6 || next[c] == 1) {
				seq = next[c]++;
			} else if (r < 8) {
				/* Again: held (skipped), or forgotten (recorded anew). */
				uint64_t back = next[c] - 1 < 12 ? next[c] - 1 : 12;

				seq = next[c] - 1 - test_rand(&rng) % back;
			} else {
				seq = next[c] + test_rand(&rng) % 3;
				next[c] = seq + 1;
			}
			r = (unsigned)(test_rand(&rng) % 8);
			if (r < 2)
				mr[c] = seq > 3 ? seq - test_rand(&rng) % 4 : seq;
			else if (r == 2)
				mr[c] = 1 + test_rand(&rng) % seq; /* down again */
			else if (r == 3)
				mr[c] = seq + 1 + test_rand(&rng) % 3; /* above seq: capped */
			q[i] = (struct req){.client = (uint8_t)(R_FIRST + c),
					    .seq = seq,
					    .min_running = mr[c],
					    .status = test_rand(&rng) % 8 == 0 ? DOCRAFT_ECONDITION : 0};
			if (seq > maxseq)
				maxseq = seq;
		}
		apply_entry(&live, idx, q, n);
		apply_entry(&restarted, idx, q, n);
		CHECK_EQ_INT(live.refused, restarted.refused);
		refused += live.refused;
		if (live.t.nclients > most_clients)
			most_clients = live.t.nclients;
		reqs += (unsigned)n;
		puts += n_puts(&live.ch);
		dels += (unsigned)live.ch.n - n_puts(&live.ch);
		for (size_t i = 0; i < live.ch.n; i++) {
			const uint8_t *k = live.ch.raw[i].key;
			/* a chunk put under an emptied chunk's key */
			reused += !live.ch.raw[i].del && k[0] == RETRY_PREFIX &&
				  be64_load(k + 1 + ENTRY_CLIENT_ID_LEN) != idx;
		}
		CHECK_MSG(n_puts(&live.ch) <= R_CLIENTS, "entry %llu wrote %u puts",
			  (unsigned long long)idx, n_puts(&live.ch));

		CHECK_OK_MSG(retry_load(&fresh, live.s, errmsg), errmsg);
		check_same(&live.t, &fresh, R_FIRST, R_CLIENTS, maxseq + 1, idx);
		check_same(&live.t, &restarted.t, R_FIRST, R_CLIENTS, maxseq + 1, idx);
		/* The restarted side's chunk bookkeeping came from the store: it
		 * deletes exactly what the live side deletes. */
		store_dump(live.s, &a);
		store_dump(restarted.s, &b);
		CHECK_MSG(a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
			  "the stores differ after entry %llu", (unsigned long long)idx);
		CHECK_EQ_INT(n_keys(live.s, 0), live.t.nchunks);
		reload(&restarted);
	}
	test_note("ttl %llu us: %u requests in %u entries (%u refused as expired): %u chunk puts "
		  "(%u under an emptied chunk's key), %u deletes; %zu seqs in %zu chunks held at "
		  "the end",
		  (unsigned long long)ttl_us, reqs, R_ENTRIES, refused, puts, reused, dels,
		  live.t.nrecords, live.t.nchunks);
	CHECK(reused > 0); /* the path was taken, and every reload agreed */
	if (ttl_us != 0) {
		/* Expiry happened: old retries refused, the silent client gone. */
		CHECK(refused > 0);
		CHECK_EQ_INT(most_clients, R_CLIENTS);
	}
	retry_free(&fresh);
	buf_free(&a);
	buf_free(&b);
	side_close(&live);
	side_close(&restarted);
}

TEST(reload_equals_live_random)
{
	random_run(0);
}

TEST(reload_equals_live_random_expiry)
{
	random_run(20 * 1000); /* 20 entries */
}

/* Applies the same entry to a replica that never restarts and to one that
 * reloads before it, and checks they agree. */
static void apply_both(struct side *a, struct side *b, uint64_t idx, const struct req *q, size_t n)
{
	struct buf da = BUF_INIT, db = BUF_INIT;

	reload(b);
	apply_entry(a, idx, q, n);
	apply_entry(b, idx, q, n);
	CHECK_EQ_INT(a->refused, b->refused);
	CHECK_EQ_INT(a->ch.n, b->ch.n);
	store_dump(a->s, &da);
	store_dump(b->s, &db);
	CHECK_MSG(da.len == db.len && memcmp(da.data, db.data, da.len) == 0,
		  "the stores differ after entry %llu", (unsigned long long)idx);
	check_same(&a->t, &b->t, 0x41, 2, 12, idx);
	buf_free(&da);
	buf_free(&db);
}

TEST(expiry_window)
{
	struct side a, b;
	uint8_t ca[ENTRY_CLIENT_ID_LEN], cb[ENTRY_CLIENT_ID_LEN];
	uint64_t ht;
	int st;

	side_open(&a, "retry-expiry-a");
	side_open(&b, "retry-expiry-b");
	retry_set_ttl(&a.t, 10 * 1000); /* 10 entries */
	retry_set_ttl(&b.t, 10 * 1000);
	cid_of(ca, 0x41);
	cid_of(cb, 0x42);
	/* Client A: seqs 1..5 in entries 1..5 (min_running 1: 1 is kept);
	 * client B: seq 1 in entry 1, then silent. */
	{
		const struct req q[] = {{0x41, 1, 1, 0}, {0x42, 1, 1, 0}};
		apply_both(&a, &b, 1, q, 2);
	}
	for (uint64_t i = 2; i <= 5; i++) {
		const struct req q[] = {{0x41, i, 1, 0}};
		apply_both(&a, &b, i, q, 1);
	}
	CHECK_EQ_INT(a.t.nclients, 2);
	/* Entry 11: the window starts at entry 1's time: nothing expires. */
	{
		const struct req q[] = {{0x41, 6, 1, 0}};
		apply_both(&a, &b, 11, q, 1);
	}
	CHECK_EQ_INT(a.t.nclients, 2);
	CHECK(retry_applied(&a.t, ca, 1));
	CHECK(retry_applied(&a.t, cb, 1));
	/* Entry 12: entry 1 is out of the window. B is forgotten whole: its
	 * chunk is deleted by this entry. A's seq 1 goes with its next record. */
	{
		const struct req q[] = {{0x41, 7, 1, 0}};
		apply_both(&a, &b, 12, q, 1);
	}
	CHECK_EQ_INT(a.t.nclients, 1);
	CHECK(!retry_applied(&a.t, cb, 1));
	CHECK_EQ_INT(n_keys(a.s, 0x42), 0);
	CHECK(!retry_applied(&a.t, ca, 1));
	CHECK(retry_expired(&a.t, ca, 1, ht_of(13)));
	CHECK(!retry_expired(&a.t, ca, 8, ht_of(13)));  /* a new seq */
	CHECK(!retry_expired(&a.t, cb, 1, ht_of(13)));  /* unknown client: new */
	/* Entry 13: a retry of A's seq 1 is refused, of seq 3 (decided at
	 * entry 3, in the window) answered from the table, seq 8 recorded. */
	{
		const struct req q[] = {{0x41, 1, 1, 0}, {0x41, 3, 1, 0}, {0x41, 8, 1, 0}};
		apply_both(&a, &b, 13, q, 3);
	}
	CHECK_EQ_INT(a.refused, 1);
	CHECK(!retry_applied(&a.t, ca, 1));
	CHECK(retry_lookup(&a.t, ca, 3, &ht, &st));
	CHECK_EQ_U64(ht, ht_of(3));
	CHECK(retry_applied(&a.t, ca, 8));
	/* Entry 16: seqs decided up to entry 5 are out of the window, so every
	 * seq below 6 is refused even though min_running stays 1. */
	{
		const struct req q[] = {{0x41, 9, 1, 0}};
		apply_both(&a, &b, 16, q, 1);
	}
	for (uint64_t seq = 1; seq <= 5; seq++)
		CHECK(retry_expired(&a.t, ca, seq, ht_of(17)));
	CHECK(retry_applied(&a.t, ca, 6));
	CHECK_EQ_INT(a.t.nrecords, 4); /* 6, 7, 8, 9 */
	/* Entry 40: A silent since 16: forgotten whole; its old seqs are new
	 * requests again (a client retries for seconds, not a window). */
	{
		const struct req q[] = {{0x42, 2, 2, 0}};
		apply_both(&a, &b, 40, q, 1);
	}
	CHECK_EQ_INT(a.t.nclients, 1);
	CHECK_EQ_INT(n_keys(a.s, 0x41), 0);
	CHECK_EQ_INT(n_keys(a.s, 0), a.t.nchunks);
	side_close(&a);
	side_close(&b);
}

#define M_CLIENTS 600

static void cid_wide(uint8_t cid[ENTRY_CLIENT_ID_LEN], unsigned k)
{
	memset(cid, 0x6d, ENTRY_CLIENT_ID_LEN);
	cid[0] = (uint8_t)(k >> 8);
	cid[1] = (uint8_t)k;
}

/* Entry i (1..M_CLIENTS) records client i; with a window of 50 entries,
 * entry i forgets client i - 51 whole (the hash table's deletions move other
 * clients in their probe runs: every client still in the window must be
 * found); a reload equals the live table. */
TEST(many_clients_expire)
{
	struct side x;
	struct retry_table fresh;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t cid[ENTRY_CLIENT_ID_LEN];

	side_open(&x, "retry-many");
	retry_init(&fresh);
	retry_set_ttl(&x.t, 50 * 1000);
	for (unsigned i = 1; i <= M_CLIENTS; i++) {
		retry_changes_reset(&x.ch, i);
		retry_expire(&x.t, ht_of(i), &x.ch);
		cid_wide(cid, i);
		CHECK(!retry_expired(&x.t, cid, 1, ht_of(i)));
		retry_record(&x.t, cid, 1, 1, ht_of(i), 0, &x.ch);
		retry_changes_finish(&x.ch);
		CHECK_OK_MSG(store_apply_parts(x.s, NULL, 0, x.ch.raw, x.ch.n, ht_of(i), i, errmsg),
			     errmsg);
		/* Clients i - 50 .. i are held (i - 50 decided exactly at the
		 * window's start), older ones gone. */
		CHECK_EQ_INT(x.t.nclients, i <= 50 ? i : 51);
		for (unsigned k = i > 60 ? i - 60 : 1; k <= i; k++) {
			cid_wide(cid, k);
			CHECK_MSG(retry_applied(&x.t, cid, 1) == (k + 50 >= i),
				  "after entry %u, client %u", i, k);
		}
	}
	CHECK_OK_MSG(retry_load(&fresh, x.s, errmsg), errmsg);
	CHECK_EQ_INT(fresh.nclients, x.t.nclients);
	CHECK_EQ_INT(fresh.nchunks, x.t.nchunks);
	CHECK_EQ_INT(n_keys(x.s, 0), x.t.nchunks);
	for (unsigned k = M_CLIENTS - 60; k <= M_CLIENTS; k++) {
		cid_wide(cid, k);
		CHECK(retry_applied(&fresh, cid, 1) == (k + 50 >= M_CLIENTS));
	}
	retry_free(&fresh);
	side_close(&x);
}

#define S_SEQS 3000

TEST(shuffled_order)
{
	uint64_t rng = test_seed();
	uint64_t *order = malloc(S_SEQS * sizeof *order);
	bool *done = calloc(S_SEQS + 2, sizeof *done);
	struct retry_table fresh;
	struct side x;
	uint64_t low = 1, floor = 0;
	uint8_t cid[ENTRY_CLIENT_ID_LEN];
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK(order != NULL && done != NULL);
	side_open(&x, "retry-shuffled");
	retry_init(&fresh);
	cid_of(cid, 0x51);
	for (uint64_t i = 0; i < S_SEQS; i++)
		order[i] = i + 1;
	for (uint64_t i = S_SEQS - 1; i > 0; i--) {
		uint64_t j = test_rand(&rng) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < S_SEQS; i++) {
		const struct req q[] = {{0x51, order[i], low, 0}};

		apply_entry(&x, i + 1, q, 1);
		CHECK_EQ_INT(x.refused, 0);
		if ((low < order[i] ? low : order[i]) > floor)
			floor = low < order[i] ? low : order[i];
		done[order[i]] = true;
		while (low <= S_SEQS && done[low])
			low++;
	}
	/* Held: every seq at or above the largest drop point min(low, seq). */
	for (uint64_t seq = 1; seq <= S_SEQS; seq++)
		CHECK(retry_applied(&x.t, cid, seq) == (seq >= floor));
	CHECK_OK_MSG(retry_load(&fresh, x.s, errmsg), errmsg);
	check_same(&x.t, &fresh, 0x51, 1, S_SEQS + 1, S_SEQS);
	CHECK_EQ_INT(n_keys(x.s, 0), x.t.nchunks);
	retry_free(&fresh);
	side_close(&x);
	free(order);
	free(done);
}

/* Legacy records of client 0x33: seq 3 applied, 4 refused, 9 applied. */
static void write_legacy(struct side *x)
{
	uint8_t k[3][RETRY_KEY_LEN], v[3][9];
	struct store_raw raw[3];
	const uint64_t seqs[3] = {3, 4, 9};

	for (int i = 0; i < 3; i++) {
		key_of(k[i], 0x33, seqs[i]);
		for (int j = 0; j < 8; j++)
			v[i][j] = (uint8_t)(ht_of(100 + seqs[i]) >> (56 - 8 * j));
		v[i][8] = RETRY_OUTCOME_CONDITION;
		raw[i] = (struct store_raw){k[i], RETRY_KEY_LEN, v[i], seqs[i] == 4 ? 9 : 8, false};
	}
	write_raw(x, raw, 3);
}

TEST(legacy_records)
{
	/* Entry 9 takes the key of legacy seq 9 and forgets seq 3. */
	const struct req e9[] = {{0x33, 10, 4, 0}};
	/* Entry 10 forgets everything below 11. */
	const struct req e10[] = {{0x33, 11, 11, 0}};
	struct side x;
	struct retry_table fresh;
	struct buf v = BUF_INIT, want = BUF_INIT;
	uint8_t cid[ENTRY_CLIENT_ID_LEN], key[RETRY_KEY_LEN];
	uint64_t ht;
	int st;

	side_open(&x, "retry-legacy");
	retry_init(&fresh);
	cid_of(cid, 0x33);
	write_legacy(&x);
	reload(&x);
	CHECK_EQ_INT(x.t.nrecords, 3);
	CHECK_EQ_INT(x.t.nchunks, 3);
	CHECK(retry_lookup(&x.t, cid, 3, &ht, &st) && ht == ht_of(103) && st == 0);
	CHECK(retry_lookup(&x.t, cid, 4, &ht, &st) && ht == ht_of(104) &&
	      st == DOCRAFT_ECONDITION);
	CHECK(retry_lookup(&x.t, cid, 9, &ht, &st) && ht == ht_of(109) && st == 0);
	CHECK(!retry_applied(&x.t, cid, 5));

	apply_entry(&x, 9, e9, 1);
	/* The delete of legacy 3, then chunk 9: legacy 9 (its ht) and seq 10. */
	CHECK_EQ_INT(x.ch.n, 2);
	key_of(key, 0x33, 3);
	CHECK(x.ch.raw[0].del);
	CHECK_EQ_MEM(x.ch.raw[0].key, x.ch.raw[0].klen, key, sizeof key);
	CHECK(!x.ch.raw[1].del);
	CHECK(!stored_value(x.s, 0x33, 3, &v));
	CHECK(stored_value(x.s, 0x33, 4, &v) && v.len == 9);
	CHECK(stored_value(x.s, 0x33, 9, &v));
	buf_push(&want, RETRY_CHUNK_TAG);
	buf_append_be64(&want, 4);
	buf_append_be64(&want, 9);
	buf_append_be64(&want, ht_of(109));
	buf_push(&want, 0);
	buf_append_be64(&want, 10);
	buf_append_be64(&want, ht_of(9));
	buf_push(&want, 0);
	CHECK_EQ_MEM(v.data, v.len, want.data, want.len);
	CHECK_EQ_INT(n_keys(x.s, 0x33), 2);
	CHECK_EQ_INT(x.t.nrecords, 3);
	CHECK_EQ_INT(x.t.nchunks, 2);
	CHECK_OK(retry_load(&fresh, x.s, NULL));
	check_same(&x.t, &fresh, 0x33, 1, 12, 9);

	apply_entry(&x, 10, e10, 1);
	/* The delete of legacy 4; chunk 9 is emptied and chunk 10, the
	 * client's only one, takes its key: one put, no delete (a legacy
	 * record's key is never taken: legacy 4 stays a delete). */
	CHECK_EQ_INT(x.ch.n, 2);
	CHECK_EQ_INT(n_puts(&x.ch), 1);
	key_of(key, 0x33, 4);
	CHECK(x.ch.raw[0].del);
	CHECK_EQ_MEM(x.ch.raw[0].key, x.ch.raw[0].klen, key, sizeof key);
	CHECK_EQ_INT(n_keys(x.s, 0x33), 1);
	CHECK(!stored_value(x.s, 0x33, 10, &v));
	CHECK(stored_value(x.s, 0x33, 9, &v));
	CHECK_EQ_INT(v.len, RETRY_CHUNK_HEAD_LEN + RETRY_CHUNK_ITEM_LEN);
	CHECK_EQ_INT(x.t.nrecords, 1);
	CHECK_EQ_INT(x.t.nchunks, 1);
	CHECK_OK(retry_load(&fresh, x.s, NULL));
	check_same(&x.t, &fresh, 0x33, 1, 12, 10);
	CHECK(retry_applied(&fresh, cid, 11));
	retry_free(&fresh);
	buf_free(&v);
	buf_free(&want);
	side_close(&x);
}

/* A chunk value: watermark w, items (seq, outcome) at ht_of(1). */
static void chunk(struct buf *v, uint64_t w, const uint64_t *seqs, const uint8_t *outcomes,
		  size_t n)
{
	buf_reset(v);
	buf_push(v, RETRY_CHUNK_TAG);
	buf_append_be64(v, w);
	for (size_t i = 0; i < n; i++) {
		buf_append_be64(v, seqs[i]);
		buf_append_be64(v, ht_of(1));
		buf_push(v, outcomes[i]);
	}
}

TEST(corrupt_records)
{
	static const uint64_t s12[] = {1, 2}, s21[] = {2, 1}, s5[] = {5};
	static const uint8_t ok2[] = {0, 1}, bad2[] = {0, 3}, ok1[] = {0};
	struct side x;
	struct buf v = BUF_INIT, v2 = BUF_INIT;
	uint8_t k[RETRY_KEY_LEN], k2[RETRY_KEY_LEN];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const struct {
		const char *what;
		size_t len;  /* of the value; 0: built by chunk() */
		uint8_t last;
		const uint64_t *seqs;
		const uint8_t *outcomes;
		size_t n;
		const char *msg;
	} cases[] = {
		{"7 bytes", 7, 0, NULL, NULL, 0, "value of 7 bytes"},
		{"9 bytes, outcome 2", 9, 2, NULL, NULL, 0, "value of 9 bytes"},
		{"10 bytes", 10, 0, NULL, NULL, 0, "value of 10 bytes"},
		{"a chunk's length", RETRY_CHUNK_HEAD_LEN + RETRY_CHUNK_ITEM_LEN + 1, 0, NULL,
		 NULL, 0, "value of 27 bytes"},
		{"a chunk without its tag", RETRY_CHUNK_HEAD_LEN + RETRY_CHUNK_ITEM_LEN, 0, NULL,
		 NULL, 0, "value of 26 bytes"},
		{"outcome 3", 0, 0, s12, bad2, 2, "outcome 3"},
		{"unsorted", 0, 0, s21, ok2, 2, "unsorted"},
	};

	side_open(&x, "retry-corrupt");
	key_of(k, 0x44, 1);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct store_raw put = {k, sizeof k, NULL, 0, false}, del = {k, sizeof k, NULL, 0, true};

		if (cases[c].len == 0) {
			chunk(&v, 0, cases[c].seqs, cases[c].outcomes, cases[c].n);
		} else {
			buf_reset(&v);
			for (size_t i = 0; i < cases[c].len; i++)
				buf_push(&v, i + 1 == cases[c].len ? cases[c].last : 0);
		}
		put.val = v.data;
		put.vlen = v.len;
		write_raw(&x, &put, 1);
		errmsg[0] = '\0';
		CHECK_MSG(retry_load(&x.t, x.s, errmsg) == DOCRAFT_ECORRUPT, "%s: loaded",
			  cases[c].what);
		CHECK_MSG(strstr(errmsg, cases[c].msg) != NULL, "%s: \"%s\"", cases[c].what,
			  errmsg);
		CHECK_EQ_INT(x.t.nrecords + x.t.nchunks + x.t.nclients, 0);
		write_raw(&x, &del, 1);
		reload(&x);
	}

	/* Seq 5 held by two chunks (neither forgets below it). */
	chunk(&v, 0, s5, ok1, 1);
	chunk(&v2, 0, s5, ok1, 1);
	key_of(k2, 0x44, 2);
	{
		struct store_raw two[2] = {{k, sizeof k, v.data, v.len, false},
					   {k2, sizeof k2, v2.data, v2.len, false}};

		write_raw(&x, two, 2);
	}
	CHECK_EQ_INT(retry_load(&x.t, x.s, errmsg), DOCRAFT_ECORRUPT);
	CHECK(strstr(errmsg, "held by two") != NULL);
	CHECK_EQ_INT(x.t.nrecords, 0);
	/* ... unless the later chunk forgets below 6: then chunk 1's copy is
	 * dead and chunk 2 holds the only record. */
	chunk(&v2, 6, s5, ok1, 1);
	{
		struct store_raw one = {k2, sizeof k2, v2.data, v2.len, false};

		write_raw(&x, &one, 1);
	}
	reload(&x);
	CHECK_EQ_INT(x.t.nrecords, 1);
	CHECK_EQ_INT(x.t.nchunks, 1);

	/* A key of the wrong length. */
	{
		struct store_raw shortk = {k, sizeof k - 1, v.data, v.len, false};

		write_raw(&x, &shortk, 1);
	}
	CHECK_EQ_INT(retry_load(&x.t, x.s, errmsg), DOCRAFT_ECORRUPT);
	CHECK(strstr(errmsg, "key of 24 bytes") != NULL);
	buf_free(&v);
	buf_free(&v2);
	side_close(&x);
}

/* ---- reply records (RETRY_OUTCOME_REPLIES, issue 17) ---- */

static unsigned n_reply_records(struct store *s)
{
	const uint8_t lo = RETRY_REPLY_PREFIX, hi = RETRY_REPLY_PREFIX + 1;
	struct store_iter *it = store_iter_new(s, &lo, 1, &hi, 1);
	unsigned n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
		n++;
	store_iter_free(it);
	return n;
}

/* Entry idx: (client, seq) recorded with its replies kept (as fsm_redis.c
 * does: the record's put with the entry's retry changes). */
static void apply_replies(struct side *x, uint64_t idx, uint8_t client, uint64_t seq,
			  uint64_t min_running)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t cid[ENTRY_CLIENT_ID_LEN], key[RETRY_KEY_LEN];
	struct store_raw *raw;

	cid_of(cid, client);
	retry_changes_reset(&x->ch, idx);
	retry_expire(&x->t, ht_of(idx), &x->ch);
	CHECK(!retry_applied(&x->t, cid, seq) && !retry_expired(&x->t, cid, seq, ht_of(idx)));
	retry_record_replies(&x->t, cid, seq, min_running, ht_of(idx), &x->ch);
	retry_changes_finish(&x->ch);
	raw = calloc(x->ch.n + 1, sizeof *raw);
	memcpy(raw, x->ch.raw, x->ch.n * sizeof *raw);
	retry_reply_key(key, cid, seq);
	raw[x->ch.n] = (struct store_raw){key, sizeof key, "r", 1, false};
	CHECK_OK_MSG(store_apply_parts(x->s, NULL, 0, raw, x->ch.n + 1, ht_of(idx), idx, errmsg),
		     errmsg);
	free(raw);
	x->idx = idx;
}

TEST(reply_records)
{
	struct side x, y;
	uint8_t c5[ENTRY_CLIENT_ID_LEN];
	uint64_t ht;
	int status = -1;

	side_open(&x, "retry-replies");
	cid_of(c5, 5);
	apply_replies(&x, 1, 5, 1, 1);
	apply_replies(&x, 2, 5, 2, 1);
	CHECK(retry_has_replies(&x.t, c5, 1) && retry_has_replies(&x.t, c5, 2));
	CHECK(retry_lookup(&x.t, c5, 1, &ht, &status));
	CHECK_EQ_INT(status, 0);
	CHECK_EQ_U64(ht, ht_of(1));
	CHECK(!retry_has_replies(&x.t, c5, 3));
	CHECK_EQ_INT(n_reply_records(x.s), 2);
	/* Loaded, the outcome (so the record's owner) is the same. */
	reload(&x);
	CHECK(retry_has_replies(&x.t, c5, 1) && retry_has_replies(&x.t, c5, 2));
	/* A plain record forgetting seq 1 deletes its reply record. */
	{
		const struct req q[] = {{5, 3, 2, 0}};
		apply_entry(&x, 3, q, 1);
	}
	CHECK(!retry_applied(&x.t, c5, 1) && retry_has_replies(&x.t, c5, 2));
	CHECK(!retry_has_replies(&x.t, c5, 3));
	CHECK_EQ_INT(n_reply_records(x.s), 1);
	side_close(&x);

	/* An expired client's reply records go with it. */
	side_open(&y, "retry-replies-expiry");
	retry_set_ttl(&y.t, 2000); /* two entries */
	apply_replies(&y, 1, 6, 1, 1);
	apply_replies(&y, 2, 6, 2, 1);
	CHECK_EQ_INT(n_reply_records(y.s), 2);
	{
		const struct req q[] = {{7, 1, 1, 0}};
		apply_entry(&y, 10, q, 1);
	}
	CHECK_EQ_INT(n_reply_records(y.s), 0);
	CHECK_EQ_U64(y.t.nclients, 1);
	side_close(&y);
}

TEST_MAIN(T(chunk_format), T(reload_equals_live_random), T(reload_equals_live_random_expiry),
	  T(expiry_window), T(many_clients_expire), T(shuffled_order), T(legacy_records), T(corrupt_records),
	  T(reply_records))
