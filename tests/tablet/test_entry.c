/* Raft entry encoding: round trip and hostile input. */
#include <stdlib.h>
#include <string.h>

#include "docdb/batch.h"
#include "docdb/condition.h"
#include "docdb/key.h"
#include "tablet/entry.h"
#include "test.h"

static void make(struct buf *out, struct batch *b1, struct batch *b2)
{
	uint8_t c1[16] = {1}, c2[16] = {2};
	batch_init(b1);
	batch_init(b2);
	batch_put(b1, "k1", 2, "v1", 2);
	batch_put(b2, "k2", 2, "v22", 3);
	batch_put(b2, "k3", 2, "", 0);
	entry_begin(out, 12345, 2);
	entry_add_request(out, c1, 7, 5, b1->data.data, b1->data.len);
	entry_add_request(out, c2, 9, 9, b2->data.data, b2->data.len);
	entry_finish(out);
}

TEST(round_trip)
{
	struct buf e = BUF_INIT;
	struct batch b1, b2;
	struct entry_reader r;
	struct entry_request q;
	char err[DOCRAFT_ERRMSG_SIZE];
	make(&e, &b1, &b2);
	CHECK_OK(entry_open(&r, e.data, e.len, err));
	CHECK_EQ_U64(r.ht, 12345);
	CHECK_EQ_INT(r.n_requests, 2);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_INT(q.client_id[0], 1);
	CHECK_EQ_U64(q.seq, 7);
	CHECK_EQ_U64(q.min_running, 5);
	CHECK_EQ_MEM(q.batch, q.batch_len, b1.data.data, b1.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_U64(q.seq, 9);
	CHECK_EQ_MEM(q.batch, q.batch_len, b2.data.data, b2.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);
	CHECK_EQ_INT(e.len % 8, 0);
	/* Up to 7 zero bytes of padding are accepted; non-zero or 8 are not. */
	static const struct {
		const char *tail;
		size_t n;
		int last;
	} cases[] = {{"\0\0\0", 3, 0}, {"\0\0\0\0\0\0\0", 7, 0},
		     {"\0\0\0\0\0\0\0\0", 8, -DOCRAFT_ECORRUPT}, {"\0\1", 2, -DOCRAFT_ECORRUPT}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct buf p = BUF_INIT;
		buf_append(&p, e.data, e.len);
		buf_append(&p, cases[c].tail, cases[c].n);
		CHECK_OK(entry_open(&r, p.data, p.len, err));
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(entry_next(&r, &q, err), cases[c].last);
		buf_free(&p);
	}
	buf_free(&e);
	batch_free(&b1);
	batch_free(&b2);
}

/* Every prefix of e fails, every single-bit corruption decodes or fails
 * cleanly (the sanitizers watch). */
static void hostile(const struct buf *e0)
{
	const struct buf *e = e0;
	char err[DOCRAFT_ERRMSG_SIZE];
	for (size_t n = 0; n < e->len; n++) {
		struct entry_reader r;
		struct entry_request q;
		int rv = 0;
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, e->data, n);
		if (entry_open(&r, copy, n, err) == 0)
			while ((rv = entry_next(&r, &q, err)) == 1)
				;
		bool padding = true; /* only padding cut: decodes */
		for (size_t i = n; i < e->len; i++)
			padding = padding && e->data[i] == 0;
		CHECK_MSG(n < ENTRY_HEADER_SIZE || rv == -DOCRAFT_ECORRUPT || (padding && rv == 0),
			  "prefix %zu: %d", n, rv);
		free(copy);
	}
	for (size_t i = 0; i < e->len; i++)
		for (int bit = 0; bit < 8; bit++) {
			struct entry_reader r;
			struct entry_request q;
			uint8_t *copy = malloc(e->len);
			memcpy(copy, e->data, e->len);
			copy[i] ^= (uint8_t)(1 << bit);
			if (entry_open(&r, copy, e->len, err) == 0)
				while (entry_next(&r, &q, err) == 1)
					if (q.kind == ENTRY_KIND_REDIS) {
						struct entry_redis_iter it;
						const struct resp_arg *argv;
						uint32_t argc;
						entry_redis_iter_init(&it, q.redis, q.redis_len);
						while (entry_redis_iter_next(&it, &argc, &argv))
							;
						entry_redis_iter_free(&it);
					}
			free(copy);
		}
}

TEST(hostile_input)
{
	struct buf e = BUF_INIT;
	struct batch b1, b2;
	make(&e, &b1, &b2);
	hostile(&e);
	buf_free(&e);
	batch_free(&b1);
	batch_free(&b2);
}

/* A condition blob: row ('r1') column 3 == 'v', row ('r2') column 4 absent. */
static void make_cond(struct buf *out, struct buf *k1, struct buf *k2)
{
	struct pv c1 = pv_str("r1"), c2 = pv_str("r2");
	struct dockey d1 = {false, 0, 0, 1, NULL, &c1}, d2 = {false, 0, 0, 1, NULL, &c2};
	struct condition c[2];
	dockey_append(k1, &d1);
	dockey_append(k2, &d2);
	memset(c, 0, sizeof c);
	c[0].dockey = k1->data;
	c[0].dockey_len = k1->len;
	c[0].column_id = 3;
	c[0].has_value = true;
	c[0].value = pv_str("v");
	c[1].dockey = k2->data;
	c[1].dockey_len = k2->len;
	c[1].column_id = 4;
	condition_encode(out, c, 2);
}

/* A version 2 entry with one conditional request round-trips, and so do its
 * conditions; a version 1 entry (no condition field) still decodes. */
TEST(conditional_round_trip)
{
	struct buf e = BUF_INIT, cond = BUF_INIT, k1 = BUF_INIT, k2 = BUF_INIT, v1 = BUF_INIT;
	struct batch b;
	struct entry_reader r;
	struct entry_request q;
	struct condition *c;
	struct arena a = ARENA_INIT;
	size_t n;
	uint8_t cid[16] = {7};
	char err[DOCRAFT_ERRMSG_SIZE];

	batch_init(&b);
	batch_put(&b, "k1", 2, "v1", 2);
	make_cond(&cond, &k1, &k2);
	entry_begin(&e, 777, 1);
	entry_add_request_if(&e, cid, 3, 2, cond.data, cond.len, b.data.data, b.data.len);
	entry_finish(&e);
	CHECK_EQ_INT(e.len % 8, 0);
	CHECK_EQ_INT(e.data[0], 2);
	CHECK_OK(entry_open(&r, e.data, e.len, err));
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_U64(q.seq, 3);
	CHECK_EQ_U64(q.min_running, 2);
	CHECK_EQ_MEM(q.cond, q.cond_len, cond.data, cond.len);
	CHECK_EQ_MEM(q.batch, q.batch_len, b.data.data, b.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);

	CHECK_OK_MSG(condition_decode(q.cond, q.cond_len, &a, &c, &n, err), err);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_MEM(c[0].dockey, c[0].dockey_len, k1.data, k1.len);
	CHECK_EQ_INT(c[0].column_id, 3);
	CHECK(c[0].has_value);
	CHECK(c[0].value.type == PV_STRING && c[0].value.v.s.len == 1 &&
	      c[0].value.v.s.p[0] == 'v');
	CHECK_EQ_MEM(c[1].dockey, c[1].dockey_len, k2.data, k2.len);
	CHECK_EQ_INT(c[1].column_id, 4);
	CHECK(!c[1].has_value);

	/* Unconditional requests of a v2 entry: no condition. */
	buf_reset(&e);
	entry_begin(&e, 778, 2);
	entry_add_request(&e, cid, 4, 4, b.data.data, b.data.len);
	entry_add_request_if(&e, cid, 5, 4, NULL, 0, b.data.data, b.data.len);
	entry_finish(&e);
	CHECK_OK(entry_open(&r, e.data, e.len, err));
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK(q.cond == NULL && q.cond_len == 0);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK(q.cond == NULL && q.cond_len == 0);
	CHECK_EQ_U64(q.seq, 5);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);

	/* Version 1, as written before conditions existed. */
	buf_push(&v1, 1);
	buf_append_be64(&v1, 779);
	buf_append_be32(&v1, 1);
	buf_append(&v1, cid, 16);
	buf_append_be64(&v1, 6);
	buf_append_be64(&v1, 6);
	buf_append_be32(&v1, (uint32_t)b.data.len);
	buf_append(&v1, b.data.data, b.data.len);
	entry_finish(&v1);
	CHECK_OK(entry_open(&r, v1.data, v1.len, err));
	CHECK_EQ_U64(r.ht, 779);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_U64(q.seq, 6);
	CHECK(q.cond == NULL);
	CHECK_EQ_MEM(q.batch, q.batch_len, b.data.data, b.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);

	arena_free(&a);
	buf_free(&e);
	buf_free(&cond);
	buf_free(&k1);
	buf_free(&k2);
	buf_free(&v1);
	batch_free(&b);
}

/* Decodes e expecting -DOCRAFT_ECORRUPT with msg in the message. */
static void expect_corrupt(const struct buf *e, const char *msg)
{
	struct entry_reader r;
	struct entry_request q;
	char err[DOCRAFT_ERRMSG_SIZE] = "";
	int rv = 0;
	CHECK_OK(entry_open(&r, e->data, e->len, err));
	while ((rv = entry_next(&r, &q, err)) == 1)
		;
	CHECK_EQ_INT(rv, -DOCRAFT_ECORRUPT);
	CHECK_MSG(strstr(err, msg) != NULL, "\"%s\" lacks \"%s\"", err, msg);
}

/* One conditional entry whose condition blob is blob[0..n); returns its
 * length before the padding. */
static size_t cond_entry(struct buf *e, const void *blob, size_t n)
{
	size_t len;
	static const uint8_t cid[16] = {9};
	struct batch b;
	batch_init(&b);
	batch_put(&b, "k", 1, "v", 1);
	buf_reset(e);
	entry_begin(e, 1000, 1);
	entry_add_request_if(e, cid, 1, 1, blob, n, b.data.data, b.data.len);
	len = e->len;
	entry_finish(e);
	batch_free(&b);
	return len;
}

/* Malformed condition blobs are refused by the entry decoder (and
 * condition_validate), as is a conditional request that is not alone. */
TEST(malformed_conditions)
{
	struct buf cond = BUF_INIT, k1 = BUF_INIT, k2 = BUF_INIT, e = BUF_INIT, x = BUF_INIT;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct batch b;
	static const uint8_t cid[16] = {9};
	make_cond(&cond, &k1, &k2);
	CHECK_OK_MSG(condition_validate(cond.data, cond.len, err), err);

	/* Zero conditions; more than CONDITION_MAX. */
	buf_append_be32(&x, 0);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "conditions");
	buf_reset(&x);
	buf_append_be32(&x, CONDITION_MAX + 1);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "conditions");

	/* A count announcing more conditions than follow. */
	buf_reset(&x);
	buf_append(&x, cond.data, cond.len);
	x.data[3] = 3;
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "condition 3");

	/* Stray bytes after the last condition. */
	buf_reset(&x);
	buf_append(&x, cond.data, cond.len);
	buf_push(&x, 0);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "stray");

	/* A DocKey that is not one (its final group end missing). */
	buf_reset(&x);
	buf_append_be32(&x, 1);
	buf_append_be32(&x, (uint32_t)k1.len - 1);
	buf_append(&x, k1.data, k1.len - 1);
	buf_append_be32(&x, 3);
	buf_push(&x, 0);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "DocKey");

	/* A DocKey length past the blob. */
	buf_reset(&x);
	buf_append_be32(&x, 1);
	buf_append_be32(&x, 1000);
	buf_append(&x, k1.data, k1.len);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "truncated DocKey");

	/* A negative column id, an unknown kind byte. */
	buf_reset(&x);
	buf_append_be32(&x, 1);
	buf_append_be32(&x, (uint32_t)k1.len);
	buf_append(&x, k1.data, k1.len);
	buf_append_be32(&x, 0x80000000u);
	buf_push(&x, 0);
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "column id");
	x.data[x.len - 5] = 0;
	x.data[x.len - 1] = 2;
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "kind");

	/* Expected values: NULL '$', a truncated int32, a tombstone 'X'. */
	static const uint8_t bad_vals[][3] = {{'$'}, {'H', 0, 0}, {'X'}};
	static const size_t bad_lens[] = {1, 3, 1};
	for (size_t i = 0; i < 3; i++) {
		buf_reset(&x);
		buf_append_be32(&x, 1);
		buf_append_be32(&x, (uint32_t)k1.len);
		buf_append(&x, k1.data, k1.len);
		buf_append_be32(&x, 3);
		buf_push(&x, 1);
		buf_append_be32(&x, (uint32_t)bad_lens[i]);
		buf_append(&x, bad_vals[i], bad_lens[i]);
		cond_entry(&e, x.data, x.len);
		expect_corrupt(&e, "not a primitive value");
		CHECK(condition_validate(x.data, x.len, err) == DOCRAFT_ECORRUPT);
	}

	/* A value length past the blob. */
	buf_reset(&x);
	buf_append(&x, cond.data, cond.len);
	x.len -= 10; /* into condition 1's value or condition 2 */
	cond_entry(&e, x.data, x.len);
	expect_corrupt(&e, "condition");

	/* A condition length past the entry. */
	cond_entry(&e, cond.data, cond.len);
	e.data[ENTRY_HEADER_SIZE + 32 + 3] = 0xff;
	expect_corrupt(&e, "truncated");

	/* A conditional request with another one in the entry. */
	batch_init(&b);
	batch_put(&b, "k", 1, "v", 1);
	buf_reset(&e);
	entry_begin(&e, 1000, 2);
	entry_add_request(&e, cid, 1, 1, b.data.data, b.data.len);
	entry_add_request_if(&e, cid, 2, 1, cond.data, cond.len, b.data.data, b.data.len);
	entry_finish(&e);
	expect_corrupt(&e, "conditional request");
	batch_free(&b);

	/* Every prefix and single-bit flip of a conditional entry decodes or
	 * fails cleanly (ASan watches). */
	size_t unpadded = cond_entry(&e, cond.data, cond.len);
	for (size_t n = 0; n < unpadded; n++) {
		struct entry_reader r;
		struct entry_request q;
		int rv = 0;
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, e.data, n);
		if (entry_open(&r, copy, n, err) == 0)
			while ((rv = entry_next(&r, &q, err)) == 1)
				;
		CHECK_MSG(n < ENTRY_HEADER_SIZE || rv == -DOCRAFT_ECORRUPT, "prefix %zu: %d", n, rv);
		free(copy);
	}
	for (size_t i = 0; i < e.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			struct entry_reader r;
			struct entry_request q;
			uint8_t *copy = malloc(e.len);
			memcpy(copy, e.data, e.len);
			copy[i] ^= (uint8_t)(1 << bit);
			if (entry_open(&r, copy, e.len, err) == 0)
				while (entry_next(&r, &q, err) == 1)
					;
			free(copy);
		}
	buf_free(&cond);
	buf_free(&k1);
	buf_free(&k2);
	buf_free(&e);
	buf_free(&x);
}

/* Commands: SET k v, then INCR n and GET k (two requests). */
static void make_redis(struct buf *e, struct buf *c1, struct buf *c2)
{
	static const uint8_t a[16] = {1}, b[16] = {2};
	entry_redis_begin(c1, 1);
	entry_redis_command(c1, 3);
	entry_redis_arg(c1, "SET", 3);
	entry_redis_arg(c1, "k", 1);
	entry_redis_arg(c1, "v\0v", 3);
	entry_redis_begin(c2, 2);
	entry_redis_command(c2, 2);
	entry_redis_arg(c2, "incr", 4);
	entry_redis_arg(c2, "n", 1);
	entry_redis_command(c2, 2);
	entry_redis_arg(c2, "get", 3);
	entry_redis_arg(c2, "", 0);
	entry_begin_v(e, 555, 2, ENTRY_VERSION);
	entry_add_redis(e, a, 3, 1, c1->data, c1->len);
	entry_add_redis(e, b, 4, 4, c2->data, c2->len);
	entry_finish(e);
}

static void check_command(struct entry_redis_iter *it, uint32_t want_argc, const char *w0,
			  const char *w1, size_t w1len)
{
	const struct resp_arg *argv;
	uint32_t argc;
	CHECK(entry_redis_iter_next(it, &argc, &argv));
	CHECK_EQ_INT(argc, want_argc);
	CHECK_EQ_MEM(argv[0].p, argv[0].n, w0, strlen(w0));
	CHECK_EQ_MEM(argv[1].p, argv[1].n, w1, w1len);
}

TEST(redis_round_trip)
{
	struct buf e = BUF_INIT, c1 = BUF_INIT, c2 = BUF_INIT;
	struct entry_reader r;
	struct entry_request q;
	struct entry_redis_iter it;
	const struct resp_arg *argv;
	uint32_t argc;
	char err[DOCRAFT_ERRMSG_SIZE];

	make_redis(&e, &c1, &c2);
	CHECK_EQ_INT(e.data[0], 3);
	CHECK_OK(entry_open(&r, e.data, e.len, err));
	CHECK_EQ_U64(r.ht, 555);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_INT(q.kind, ENTRY_KIND_REDIS);
	CHECK_EQ_U64(q.seq, 3);
	CHECK_EQ_U64(q.min_running, 1);
	CHECK_EQ_INT(q.redis_n, 1);
	CHECK(q.batch_len == 0 && q.cond == NULL);
	CHECK_EQ_MEM(q.redis, q.redis_len, c1.data, c1.len);
	entry_redis_iter_init(&it, q.redis, q.redis_len);
	check_command(&it, 3, "SET", "k", 1);
	CHECK(!entry_redis_iter_next(&it, &argc, &argv));
	entry_redis_iter_free(&it);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_INT(q.client_id[0], 2);
	CHECK_EQ_INT(q.redis_n, 2);
	entry_redis_iter_init(&it, q.redis, q.redis_len);
	check_command(&it, 2, "incr", "n", 1);
	check_command(&it, 2, "get", "", 0);
	CHECK(!entry_redis_iter_next(&it, &argc, &argv));
	entry_redis_iter_free(&it);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);

	/* Version 3 also carries batches and conditions (kinds 0 and 1). */
	{
		struct batch b1, b2;
		struct buf e2 = BUF_INIT;
		static const uint8_t cid[16] = {5};
		batch_init(&b1);
		batch_put(&b1, "k1", 2, "v1", 2);
		entry_begin_v(&e2, 9, 1, ENTRY_VERSION);
		entry_add_request(&e2, cid, 1, 1, b1.data.data, b1.data.len);
		entry_finish(&e2);
		CHECK_OK(entry_open(&r, e2.data, e2.len, err));
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(q.kind, ENTRY_KIND_BATCH);
		CHECK_EQ_MEM(q.batch, q.batch_len, b1.data.data, b1.data.len);
		CHECK_EQ_INT(entry_next(&r, &q, err), 0);
		/* A version-2 writer's entry decodes as before. */
		buf_reset(&e2);
		batch_free(&b1);
		make(&e2, &b1, &b2);
		CHECK_EQ_INT(e2.data[0], 2);
		CHECK_OK(entry_open(&r, e2.data, e2.len, err));
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(q.kind, ENTRY_KIND_BATCH);
		buf_free(&e2);
		batch_free(&b1);
		batch_free(&b2);
	}
	buf_free(&e);
	buf_free(&c1);
	buf_free(&c2);
}

TEST(redis_hostile)
{
	struct buf e = BUF_INIT, c1 = BUF_INIT, c2 = BUF_INIT, bad = BUF_INIT;
	static const uint8_t cid[16] = {7};
	uint32_t n;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct batch b;

	make_redis(&e, &c1, &c2);
	hostile(&e);

	/* Command blobs: none, too many, a command without words, truncated,
	 * stray bytes, a huge argc. */
	CHECK_EQ_INT(entry_redis_validate("", 0, &n, err), DOCRAFT_ECORRUPT);
	buf_append_be32(&bad, 0);
	CHECK_EQ_INT(entry_redis_validate(bad.data, bad.len, &n, err), DOCRAFT_ECORRUPT);
	CHECK(strstr(err, "0 commands") != NULL);
	buf_reset(&bad);
	buf_append_be32(&bad, ENTRY_REDIS_MAX_COMMANDS + 1);
	CHECK_EQ_INT(entry_redis_validate(bad.data, bad.len, &n, err), DOCRAFT_ECORRUPT);
	buf_reset(&bad);
	entry_redis_begin(&bad, 1);
	entry_redis_command(&bad, 0);
	CHECK_EQ_INT(entry_redis_validate(bad.data, bad.len, &n, err), DOCRAFT_ECORRUPT);
	CHECK(strstr(err, "no words") != NULL);
	buf_reset(&bad);
	entry_redis_begin(&bad, 1);
	entry_redis_command(&bad, 0xffffffffu);
	entry_redis_arg(&bad, "get", 3);
	CHECK_EQ_INT(entry_redis_validate(bad.data, bad.len, &n, err), DOCRAFT_ECORRUPT);
	CHECK(strstr(err, "truncated") != NULL);
	CHECK_OK(entry_redis_validate(c2.data, c2.len, &n, err));
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(entry_redis_validate(c2.data, c2.len - 1, &n, err), DOCRAFT_ECORRUPT);
	buf_reset(&bad);
	buf_append(&bad, c2.data, c2.len);
	buf_push(&bad, 0);
	CHECK_EQ_INT(entry_redis_validate(bad.data, bad.len, &n, err), DOCRAFT_ECORRUPT);
	CHECK(strstr(err, "stray") != NULL);

	/* An unknown kind; Redis and batch requests in one entry. */
	buf_reset(&e);
	entry_begin_v(&e, 1, 1, ENTRY_VERSION);
	entry_add_redis(&e, cid, 1, 1, c1.data, c1.len);
	e.data[ENTRY_HEADER_SIZE + 32] = 3;
	entry_finish(&e);
	expect_corrupt(&e, "unknown kind");
	batch_init(&b);
	batch_put(&b, "k", 1, "v", 1);
	buf_reset(&e);
	entry_begin_v(&e, 1, 2, ENTRY_VERSION);
	entry_add_redis(&e, cid, 1, 1, c1.data, c1.len);
	entry_add_request(&e, cid, 2, 1, b.data.data, b.data.len);
	entry_finish(&e);
	expect_corrupt(&e, "redis and batch");
	/* A conditional kind without conditions. */
	buf_reset(&e);
	entry_begin_v(&e, 1, 1, ENTRY_VERSION);
	buf_append(&e, cid, sizeof cid);
	buf_append_be64(&e, 2);
	buf_append_be64(&e, 1);
	buf_push(&e, ENTRY_KIND_COND);
	buf_append_be32(&e, 0);
	buf_append_be32(&e, (uint32_t)b.data.len);
	buf_append(&e, b.data.data, b.data.len);
	entry_finish(&e);
	expect_corrupt(&e, "without conditions");
	/* A version beyond 3. */
	e.data[0] = 4;
	{
		struct entry_reader r;
		CHECK_EQ_INT(entry_open(&r, e.data, e.len, err), DOCRAFT_ECORRUPT);
	}
	batch_free(&b);
	buf_free(&e);
	buf_free(&c1);
	buf_free(&c2);
	buf_free(&bad);
}

TEST_MAIN(T(round_trip), T(hostile_input), T(conditional_round_trip), T(malformed_conditions),
	  T(redis_round_trip), T(redis_hostile))
