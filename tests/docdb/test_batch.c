/* Write batch serialization (docdb/batch.h): round trips, and that no byte
 * string, however truncated or garbled, makes the decoder misbehave. Inputs
 * are copied into exactly-sized heap blocks so ASan catches any over-read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "docdb/batch.h"
#include "test.h"

static uint8_t *dup_exact(const void *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);
	CHECK(d != NULL);
	if (n)
		memcpy(d, p, n);
	return d;
}

/* Fills a batch with count pairs of varied sizes; pair i has key "k<i>..."
 * and a value of pseudo-random bytes, recorded in keys/vals for checking. */
struct pairs {
	struct buf keys[64];
	struct buf vals[64];
	size_t n;
};

static void pairs_make(struct pairs *p, struct batch *b, size_t n, uint64_t *rng)
{
	CHECK(n <= 64);
	p->n = n;
	for (size_t i = 0; i < n; i++) {
		size_t kl = (size_t)(test_rand(rng) % 40);
		size_t vl = (size_t)(test_rand(rng) % 300);
		buf_init(&p->keys[i]);
		buf_init(&p->vals[i]);
		buf_printf(&p->keys[i], "k%zu", i);
		for (size_t j = 0; j < kl; j++)
			buf_push(&p->keys[i], (uint8_t)test_rand(rng));
		for (size_t j = 0; j < vl; j++)
			buf_push(&p->vals[i], (uint8_t)test_rand(rng));
		batch_put(b, p->keys[i].data, p->keys[i].len, p->vals[i].data, p->vals[i].len);
	}
}

static void pairs_free(struct pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		buf_free(&p->keys[i]);
		buf_free(&p->vals[i]);
	}
	p->n = 0;
}

TEST(round_trip)
{
	uint64_t rng = test_seed();
	struct batch b;
	struct pairs p;
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl, i;
	uint32_t count = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t *copy;
	int rv;

	batch_init(&b);
	pairs_make(&p, &b, 50, &rng);
	CHECK_EQ_INT(b.count, 50);
	copy = dup_exact(b.data.data, b.data.len);
	batch_iter_init(&it, copy, b.data.len);
	for (i = 0; (rv = batch_next(&it, &k, &kl, &v, &vl)) == 1; i++) {
		CHECK(i < p.n);
		CHECK_EQ_MEM(k, kl, p.keys[i].data, p.keys[i].len);
		if (p.vals[i].len == 0)
			CHECK_EQ_INT(vl, 0); /* the buf has no data pointer */
		else
			CHECK_EQ_MEM(v, vl, p.vals[i].data, p.vals[i].len);
	}
	CHECK_EQ_INT(rv, 0);
	CHECK_EQ_INT(i, 50);
	/* At the end it stays at the end. */
	CHECK_EQ_INT(batch_next(&it, &k, &kl, &v, &vl), 0);
	CHECK_OK_MSG(batch_validate(copy, b.data.len, &count, errmsg), errmsg);
	CHECK_EQ_INT(count, 50);
	free(copy);

	/* Reset and reuse. */
	pairs_free(&p);
	batch_reset(&b);
	CHECK_EQ_INT(b.count, 0);
	CHECK_EQ_INT(b.data.len, 0);
	batch_put(&b, "a", 1, "b", 1);
	CHECK_EQ_INT(b.count, 1);
	CHECK_OK_MSG(batch_validate(b.data.data, b.data.len, &count, errmsg), errmsg);
	CHECK_EQ_INT(count, 1);
	batch_free(&b);
}

TEST(exact_wire_format)
{
	static const uint8_t want[] = {
		2, 0, 0, 0, 'k', '1', 3, 0, 0, 0, 'v', 'a', 'l',
		0, 0, 0, 0, 0, 0, 0, 0,
	};
	struct batch b;
	batch_init(&b);
	batch_put(&b, "k1", 2, "val", 3);
	batch_put(&b, "", 0, "", 0);
	CHECK_EQ_MEM(b.data.data, b.data.len, want, sizeof want);
	batch_free(&b);
}

TEST(empty_batch)
{
	struct batch b;
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint32_t count = 99;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	batch_init(&b);
	CHECK_EQ_INT(b.count, 0);
	batch_iter_init(&it, b.data.data, b.data.len);
	CHECK_EQ_INT(batch_next(&it, &k, &kl, &v, &vl), 0);
	/* NULL + 0 was undefined behaviour in batch_iter_init (clang's UBSan,
	 * found by tests/fuzz/fuzz_rpc_request; gcc's does not flag it). */
	CHECK_OK_MSG(batch_validate(NULL, 0, &count, errmsg), errmsg);
	CHECK_EQ_INT(count, 0);
	batch_free(&b);

	/* Empty key and empty value are a valid pair. */
	batch_init(&b);
	batch_put(&b, "", 0, "", 0);
	CHECK_OK_MSG(batch_validate(b.data.data, b.data.len, &count, errmsg), errmsg);
	CHECK_EQ_INT(count, 1);
	batch_iter_init(&it, b.data.data, b.data.len);
	CHECK_EQ_INT(batch_next(&it, &k, &kl, &v, &vl), 1);
	CHECK_EQ_INT(kl, 0);
	CHECK_EQ_INT(vl, 0);
	CHECK_EQ_INT(batch_next(&it, &k, &kl, &v, &vl), 0);
	batch_free(&b);
}

/* Every prefix of a valid batch is valid exactly when it ends on a pair
 * boundary (with that many pairs); otherwise it is DOCRAFT_ECORRUPT. */
TEST(every_prefix)
{
	uint64_t rng = test_seed();
	struct batch b;
	struct pairs p;
	size_t bounds[65];
	size_t nb = 0, off = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	batch_init(&b);
	pairs_make(&p, &b, 12, &rng);
	bounds[nb++] = 0;
	for (size_t i = 0; i < p.n; i++) {
		off += 8 + p.keys[i].len + p.vals[i].len;
		bounds[nb++] = off;
	}
	CHECK_EQ_INT(off, b.data.len);

	for (size_t len = 0; len <= b.data.len; len++) {
		uint8_t *copy = dup_exact(b.data.data, len);
		uint32_t count = 12345;
		size_t pairs_before = 0;
		bool boundary = false;
		int rv;
		for (size_t j = 0; j < nb; j++) {
			if (bounds[j] == len) {
				boundary = true;
				pairs_before = j;
			}
		}
		errmsg[0] = '\0';
		rv = batch_validate(copy, len, &count, errmsg);
		if (boundary) {
			CHECK_MSG(rv == 0, "prefix %zu: %s", len, errmsg);
			CHECK_EQ_INT(count, pairs_before);
		} else {
			CHECK_MSG(rv == DOCRAFT_ECORRUPT, "prefix %zu: rv %d", len, rv);
			CHECK_EQ_INT(count, 12345); /* untouched on error */
			CHECK(strstr(errmsg, "malformed") != NULL);
		}
		free(copy);
	}
	pairs_free(&p);
	batch_free(&b);
}

/* Random bytes and random single-byte corruptions of a valid batch: validate
 * and batch_next agree, and never read outside the input. */
TEST(garbage)
{
	uint64_t rng = test_seed();
	struct batch b;
	struct pairs p;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	batch_init(&b);
	pairs_make(&p, &b, 8, &rng);
	for (int round = 0; round < 4000; round++) {
		size_t len;
		uint8_t *in;
		struct batch_iter it;
		const uint8_t *k, *v;
		size_t kl, vl;
		uint32_t count = 0, n = 0;
		int rv, rv2;

		if (round % 2 == 0) {
			len = (size_t)(test_rand(&rng) % 64);
			in = malloc(len ? len : 1);
			CHECK(in != NULL);
			for (size_t j = 0; j < len; j++)
				in[j] = (uint8_t)(test_rand(&rng) % 4 == 0 ? test_rand(&rng) : j % 7);
		} else {
			len = b.data.len;
			in = dup_exact(b.data.data, len);
			in[test_rand(&rng) % len] = (uint8_t)test_rand(&rng);
		}
		rv = batch_validate(in, len, &count, errmsg);
		CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
		batch_iter_init(&it, in, len);
		while ((rv2 = batch_next(&it, &k, &kl, &v, &vl)) == 1) {
			CHECK(k >= in && k + kl <= in + len);
			CHECK(v >= in && v + vl <= in + len);
			CHECK(kl <= BATCH_MAX_KEY && vl <= BATCH_MAX_VALUE);
			n++;
		}
		if (rv == 0) {
			CHECK_EQ_INT(rv2, 0);
			CHECK_EQ_INT(n, count);
		} else {
			CHECK_EQ_INT(rv2, -DOCRAFT_ECORRUPT);
		}
		free(in);
	}
	pairs_free(&p);
	batch_free(&b);
}

static void put_le32(struct buf *b, uint32_t v)
{
	buf_append_le32(b, v);
}

static int validate_buf(struct buf *b, uint32_t *count)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t *copy = dup_exact(b->data, b->len);
	int rv = batch_validate(copy, b->len, count, errmsg);
	free(copy);
	return rv;
}

TEST(oversized_lengths)
{
	struct buf b = BUF_INIT;
	uint32_t count = 0;
	uint8_t *zeros = calloc(1, BATCH_MAX_KEY + 16);
	CHECK(zeros != NULL);

	/* Key of exactly BATCH_MAX_KEY bytes: fine. */
	put_le32(&b, BATCH_MAX_KEY);
	buf_append(&b, zeros, BATCH_MAX_KEY);
	put_le32(&b, 0);
	CHECK_OK(validate_buf(&b, &count));
	CHECK_EQ_INT(count, 1);

	/* One more byte than allowed, even with the bytes present. */
	buf_reset(&b);
	put_le32(&b, BATCH_MAX_KEY + 1);
	buf_append(&b, zeros, BATCH_MAX_KEY + 1);
	put_le32(&b, 0);
	CHECK_EQ_INT(validate_buf(&b, &count), DOCRAFT_ECORRUPT);

	/* Lengths that would overflow a pointer or a 32-bit sum. */
	static const uint32_t huge[] = {UINT32_MAX, UINT32_MAX - 3, 0x80000000u,
					BATCH_MAX_VALUE + 1};
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		buf_reset(&b);
		put_le32(&b, huge[i]);
		buf_append(&b, "abcd", 4);
		put_le32(&b, 0);
		CHECK_EQ_INT(validate_buf(&b, &count), DOCRAFT_ECORRUPT);

		buf_reset(&b);
		put_le32(&b, 1);
		buf_push(&b, 'k');
		put_le32(&b, huge[i]);
		buf_append(&b, "abcd", 4);
		CHECK_EQ_INT(validate_buf(&b, &count), DOCRAFT_ECORRUPT);
	}

	/* A value length just past the remaining bytes. */
	buf_reset(&b);
	put_le32(&b, 1);
	buf_push(&b, 'k');
	put_le32(&b, 5);
	buf_append(&b, "abcd", 4);
	CHECK_EQ_INT(validate_buf(&b, &count), DOCRAFT_ECORRUPT);

	/* A trailing partial length field after a good pair. */
	buf_reset(&b);
	put_le32(&b, 1);
	buf_push(&b, 'k');
	put_le32(&b, 1);
	buf_push(&b, 'v');
	buf_append(&b, "\x01\x00", 2);
	CHECK_EQ_INT(validate_buf(&b, &count), DOCRAFT_ECORRUPT);

	free(zeros);
	buf_free(&b);
}

TEST_MAIN(T(round_trip), T(exact_wire_format), T(empty_batch), T(every_prefix), T(garbage),
	  T(oversized_lengths))
