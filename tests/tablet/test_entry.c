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

/* Every prefix and every single-byte corruption decodes or fails cleanly. */
TEST(hostile_input)
{
	struct buf e = BUF_INIT;
	struct batch b1, b2;
	char err[DOCRAFT_ERRMSG_SIZE];
	make(&e, &b1, &b2);
	for (size_t n = 0; n < e.len; n++) {
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

TEST_MAIN(T(round_trip), T(hostile_input), T(conditional_round_trip), T(malformed_conditions))
