/* YugabyteDB's svarint / uvarint (docdb-format.md §2.5). */
#include "test.h"

#include "common/buf.h"
#include "docdb/varint.h"
#include "docraft/error.h"

static struct buf enc_s(int64_t v)
{
	struct buf b = BUF_INIT;
	svarint_append(&b, v);
	return b;
}

static struct buf enc_u(uint64_t v)
{
	struct buf b = BUF_INIT;
	uvarint_append(&b, v);
	return b;
}

#define CHECK_SVARINT(v, ...)                                                 \
	do {                                                                  \
		static const uint8_t want_[] = {__VA_ARGS__};                 \
		struct buf b_ = enc_s(v);                                     \
		CHECK_EQ_MEM(b_.data, b_.len, want_, sizeof want_);           \
		buf_free(&b_);                                                \
	} while (0)

#define CHECK_UVARINT(v, ...)                                                 \
	do {                                                                  \
		static const uint8_t want_[] = {__VA_ARGS__};                 \
		struct buf b_ = enc_u(v);                                     \
		CHECK_EQ_MEM(b_.data, b_.len, want_, sizeof want_);           \
		buf_free(&b_);                                                \
	} while (0)

/* Decodes all of b as one svarint. */
static int dec_s(const struct buf *b, int64_t *v)
{
	const uint8_t *p = b->data;
	int rv = svarint_decode(&p, b->data + b->len, v);
	if (rv == 0 && p != b->data + b->len)
		return -1;
	return rv;
}

static int dec_u(const struct buf *b, uint64_t *v)
{
	const uint8_t *p = b->data;
	int rv = uvarint_decode(&p, b->data + b->len, v);
	if (rv == 0 && p != b->data + b->len)
		return -1;
	return rv;
}

TEST(svarint_examples)
{
	CHECK_SVARINT(0, 0x80);
	CHECK_SVARINT(1, 0x81);
	CHECK_SVARINT(-1, 0x7E);
	CHECK_SVARINT(3600000, 0xF0, 0x36, 0xEE, 0x80);
	CHECK_SVARINT(10, 0x8A);
	CHECK_SVARINT(64, 0xC0, 0x40);
	CHECK_SVARINT(-64, 0x3F, 0xBF);
	CHECK_SVARINT(63, 0xBF);
	CHECK_SVARINT(-63, 0x40);
}

TEST(svarint_desc)
{
	struct buf b = BUF_INIT;
	int64_t v;
	svarint_desc_append(&b, 32);
	CHECK_EQ_MEM(b.data, b.len, "\x5F", 1);
	CHECK_OK(dec_s(&b, &v));
	CHECK_EQ_INT(v, -32);
	buf_reset(&b);
	svarint_desc_append(&b, 0);
	CHECK_EQ_MEM(b.data, b.len, "\x80", 1);
	buf_reset(&b);
	svarint_desc_append(&b, INT64_MAX);
	CHECK_OK(dec_s(&b, &v));
	CHECK_EQ_INT(v, -INT64_MAX);
	buf_reset(&b);
	svarint_desc_append(&b, -INT64_MAX);
	CHECK_OK(dec_s(&b, &v));
	CHECK_EQ_INT(v, INT64_MAX);
	buf_free(&b);
}

/* The largest magnitude each length class holds: 7n - 1 bits. */
static uint64_t smax(unsigned n)
{
	return n >= 10 ? UINT64_MAX : (UINT64_C(1) << (7 * n - 1)) - 1;
}

TEST(svarint_length_classes)
{
	for (unsigned n = 1; n <= 10; n++) {
		uint64_t hi = smax(n), lo = n == 1 ? 0 : smax(n - 1) + 1;
		uint64_t cases[2] = {lo, hi};
		for (int k = 0; k < 2; k++) {
			uint64_t m = cases[k];
			int64_t pos, neg, v;
			struct buf b;
			if (m > (uint64_t)INT64_MAX)
				m = INT64_MAX;
			pos = (int64_t)m;
			neg = -pos;
			b = enc_s(pos);
			CHECK_MSG(b.len == n, "%" PRId64 ": %zu bytes, want %u", pos, b.len, n);
			CHECK_OK(dec_s(&b, &v));
			CHECK_EQ_INT(v, pos);
			buf_free(&b);
			if (pos == 0)
				continue;
			b = enc_s(neg);
			CHECK_MSG(b.len == n, "%" PRId64 ": %zu bytes, want %u", neg, b.len, n);
			CHECK_OK(dec_s(&b, &v));
			CHECK_EQ_INT(v, neg);
			buf_free(&b);
		}
	}
	/* The named boundaries. */
	CHECK_SVARINT(8191, 0xDF, 0xFF);
	CHECK_SVARINT(8192, 0xE0, 0x20, 0x00);
	CHECK_SVARINT(-8191, 0x20, 0x00);
	CHECK_SVARINT(-8192, 0x1F, 0xDF, 0xFF);
	CHECK_SVARINT((INT64_C(1) << 48) - 1, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_SVARINT(INT64_C(1) << 48, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
	CHECK_SVARINT((INT64_C(1) << 55) - 1, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_SVARINT(INT64_C(1) << 55, 0xFF, 0x80, 0x80, 0, 0, 0, 0, 0, 0);
	CHECK_SVARINT((INT64_C(1) << 62) - 1, 0xFF, 0xBF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		      0xFF);
	CHECK_SVARINT(INT64_C(1) << 62, 0xFF, 0xC0, 0x40, 0, 0, 0, 0, 0, 0, 0);
	CHECK_SVARINT(INT64_MAX, 0xFF, 0xC0, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_SVARINT(INT64_MIN + 1, 0x00, 0x3F, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		      0x00);
	CHECK_SVARINT(INT64_MIN, 0x00, 0x3F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
}

TEST(svarint_int64_min)
{
	struct buf b = enc_s(INT64_MIN);
	int64_t v;
	CHECK_OK(dec_s(&b, &v));
	CHECK(v == INT64_MIN);
	buf_free(&b);
}

TEST(svarint_roundtrip_random)
{
	uint64_t seed = test_seed();
	struct buf b = BUF_INIT;
	for (int i = 0; i < 200000; i++) {
		uint64_t r = test_rand(&seed);
		int64_t v = (int64_t)(r >> (test_rand(&seed) % 64)), got;
		if (r & 1)
			v = v == INT64_MIN ? v : -v;
		buf_reset(&b);
		svarint_append(&b, v);
		CHECK_OK(dec_s(&b, &got));
		CHECK_EQ_INT(got, v);
	}
	buf_free(&b);
}

TEST(svarint_order_random)
{
	uint64_t seed = test_seed();
	struct buf a = BUF_INIT, b = BUF_INIT;
	for (int i = 0; i < 200000; i++) {
		int64_t x = (int64_t)(test_rand(&seed) >> (test_rand(&seed) % 64));
		int64_t y = (int64_t)(test_rand(&seed) >> (test_rand(&seed) % 64));
		size_t n;
		int c;
		if (i & 1)
			x = (int64_t)(0 - (uint64_t)x);
		if (i & 2)
			y = (int64_t)(0 - (uint64_t)y);
		if (i % 97 == 0)
			y = x > 0 ? x - 1 : x + 1; /* neighbours */
		buf_reset(&a);
		buf_reset(&b);
		svarint_append(&a, x);
		svarint_append(&b, y);
		n = a.len < b.len ? a.len : b.len;
		c = memcmp(a.data, b.data, n);
		if (c == 0)
			c = a.len < b.len ? -1 : a.len > b.len;
		CHECK_MSG((c < 0) == (x < y) && (c == 0) == (x == y),
			  "%" PRId64 " vs %" PRId64 ": memcmp %d", x, y, c);
	}
	buf_free(&a);
	buf_free(&b);
}

TEST(svarint_truncated)
{
	int64_t vals[] = {0, 1, -1, 64, -64, 8192, -8192, 3600000, INT64_C(1) << 48,
			  INT64_C(1) << 55, INT64_C(1) << 62, INT64_MAX, INT64_MIN + 1, INT64_MIN};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		struct buf b = enc_s(vals[i]);
		for (size_t n = 0; n < b.len; n++) {
			const uint8_t *p = b.data;
			int64_t v = 12345;
			CHECK_EQ_INT(svarint_decode(&p, b.data + n, &v), DOCRAFT_ECORRUPT);
			CHECK(p == b.data);
			CHECK_EQ_INT(v, 12345);
		}
		buf_free(&b);
	}
}

TEST(svarint_malformed)
{
	/* 10-byte forms with magnitude bits beyond 64, and the undefined
	 * 11-byte header, are rejected; so is a magnitude above INT64_MAX. */
	static const uint8_t bad[][10] = {
		{0xFF, 0xC1, 0, 0, 0, 0, 0, 0, 0, 0},
		{0xFF, 0xE0, 0, 0, 0, 0, 0, 0, 0, 0},
		{0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0},
		{0xFF, 0xC0, 0x80, 0, 0, 0, 0, 0, 0, 0},
		{0x00, 0x3F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}, /* -(2^63+1) */
		{0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const uint8_t *p = bad[i];
		int64_t v;
		CHECK_EQ_INT(svarint_decode(&p, bad[i] + 10, &v), DOCRAFT_ECORRUPT);
	}
	/* Decoding stops at the varint's end; trailing bytes are left. */
	{
		static const uint8_t two[] = {0x81, 0x7E, 0xAA};
		const uint8_t *p = two;
		int64_t v;
		CHECK_OK(svarint_decode(&p, two + 3, &v));
		CHECK_EQ_INT(v, 1);
		CHECK_OK(svarint_decode(&p, two + 3, &v));
		CHECK_EQ_INT(v, -1);
		CHECK(p == two + 2);
	}
}

TEST(svarint_every_byte_pattern)
{
	/* Every 1- and 2-byte input, and random 10-byte inputs: decoding never
	 * reads out of bounds, and what decodes re-encodes to a value that
	 * decodes the same. */
	uint8_t in[10];
	uint64_t seed = test_seed();
	struct buf b = BUF_INIT;
	for (unsigned x = 0; x < 65536 + 200000; x++) {
		size_t len;
		const uint8_t *p = in;
		int64_t v, w;
		if (x < 256) {
			in[0] = (uint8_t)x;
			len = 1;
		} else if (x < 65536) {
			in[0] = (uint8_t)(x >> 8);
			in[1] = (uint8_t)x;
			len = 2;
		} else {
			uint64_t r = test_rand(&seed);
			for (int i = 0; i < 10; i++)
				in[i] = (uint8_t)(r >> (i * 6));
			len = 1 + test_rand(&seed) % 10;
		}
		if (svarint_decode(&p, in + len, &v) != 0)
			continue;
		CHECK(p > in && p <= in + len);
		buf_reset(&b);
		svarint_append(&b, v);
		CHECK_OK(dec_s(&b, &w));
		CHECK_EQ_INT(w, v);
	}
	buf_free(&b);
}

TEST(uvarint_classes)
{
	CHECK_UVARINT(0, 0x00);
	CHECK_UVARINT(1, 0x01);
	CHECK_UVARINT(127, 0x7F);
	CHECK_UVARINT(128, 0x80, 0x80);
	CHECK_UVARINT((1 << 14) - 1, 0xBF, 0xFF);
	CHECK_UVARINT(1 << 14, 0xC0, 0x40, 0x00);
	CHECK_UVARINT((1 << 21) - 1, 0xDF, 0xFF, 0xFF);
	CHECK_UVARINT(1 << 21, 0xE0, 0x20, 0x00, 0x00);
	CHECK_UVARINT((UINT64_C(1) << 56) - 1, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_UVARINT(UINT64_C(1) << 56, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
	CHECK_UVARINT((UINT64_C(1) << 63) - 1, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		      0xFF);
	CHECK_UVARINT(UINT64_C(1) << 63, 0xFF, 0x80, 0x80, 0, 0, 0, 0, 0, 0, 0);
	CHECK_UVARINT(UINT64_MAX, 0xFF, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	for (unsigned n = 1; n <= 10; n++) {
		uint64_t hi = n >= 10 ? UINT64_MAX : n == 9 ? (UINT64_C(1) << 63) - 1
							: (UINT64_C(1) << (7 * n)) - 1;
		uint64_t lo = n == 1 ? 0 : n == 10 ? UINT64_C(1) << 63 : (UINT64_C(1) << (7 * (n - 1)));
		uint64_t cases[2] = {lo, hi};
		for (int k = 0; k < 2; k++) {
			struct buf b = enc_u(cases[k]);
			uint64_t v;
			CHECK_MSG(b.len == n, "%" PRIu64 ": %zu bytes, want %u", cases[k], b.len, n);
			CHECK_OK(dec_u(&b, &v));
			CHECK_EQ_U64(v, cases[k]);
			buf_free(&b);
		}
	}
}

TEST(uvarint_roundtrip_order_random)
{
	uint64_t seed = test_seed();
	struct buf a = BUF_INIT, b = BUF_INIT;
	for (int i = 0; i < 200000; i++) {
		uint64_t x = test_rand(&seed) >> (test_rand(&seed) % 64);
		uint64_t y = test_rand(&seed) >> (test_rand(&seed) % 64);
		uint64_t v;
		size_t n;
		int c;
		buf_reset(&a);
		buf_reset(&b);
		uvarint_append(&a, x);
		uvarint_append(&b, y);
		CHECK_OK(dec_u(&a, &v));
		CHECK_EQ_U64(v, x);
		n = a.len < b.len ? a.len : b.len;
		c = memcmp(a.data, b.data, n);
		if (c == 0)
			c = a.len < b.len ? -1 : a.len > b.len;
		CHECK_MSG((c < 0) == (x < y) && (c == 0) == (x == y),
			  "%" PRIu64 " vs %" PRIu64 ": memcmp %d", x, y, c);
	}
	buf_free(&a);
	buf_free(&b);
}

TEST(uvarint_truncated_malformed)
{
	uint64_t vals[] = {0, 127, 128, 1 << 14, UINT64_C(1) << 56, UINT64_C(1) << 63, UINT64_MAX};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		struct buf b = enc_u(vals[i]);
		for (size_t n = 0; n < b.len; n++) {
			const uint8_t *p = b.data;
			uint64_t v;
			CHECK_EQ_INT(uvarint_decode(&p, b.data + n, &v), DOCRAFT_ECORRUPT);
			CHECK(p == b.data);
		}
		buf_free(&b);
	}
	{
		/* 0xFF then 1xxxxxxx other than 0x80 is not a defined form. */
		static const uint8_t bad[10] = {0xFF, 0x81, 0, 0, 0, 0, 0, 0, 0, 0};
		const uint8_t *p = bad;
		uint64_t v;
		CHECK_EQ_INT(uvarint_decode(&p, bad + 10, &v), DOCRAFT_ECORRUPT);
	}
}

/* Found by tests/fuzz/fuzz_docdb_key: the decoders accepted longer forms
 * of a value (magnitude bits padded with zeros) and a negative zero, so one
 * column id or DocHT had several key encodings. Only the shortest is
 * accepted now. */
TEST(varint_only_shortest_form)
{
	/* 0 as 2 bytes (0xC0 0x00), 64 as 3 bytes, -1 as 2 bytes, and -0 (0x7F,
	 * the fuzzer's first find: it decoded as 0 and re-encoded as 0x80). */
	static const uint8_t s_long0[] = {0xC0, 0x00}, s_long64[] = {0xE0, 0x00, 0x40},
			     s_longm1[] = {0x3F, 0xFE}, s_negzero[] = {0x7F};
	static const uint8_t u_long0[] = {0x80, 0x00}, u_long127[] = {0xC0, 0x00, 0x7F};
	static const struct {
		const uint8_t *p;
		size_t n;
	} bad_s[] = {{s_long0, 2}, {s_long64, 3}, {s_longm1, 2}, {s_negzero, 1}},
	  bad_u[] = {{u_long0, 2}, {u_long127, 3}};
	const uint8_t *p;
	int64_t sv;
	uint64_t uv;

	for (size_t i = 0; i < sizeof bad_s / sizeof bad_s[0]; i++) {
		p = bad_s[i].p;
		CHECK_EQ_INT(svarint_decode(&p, bad_s[i].p + bad_s[i].n, &sv), DOCRAFT_ECORRUPT);
		CHECK(p == bad_s[i].p);
	}
	for (size_t i = 0; i < sizeof bad_u / sizeof bad_u[0]; i++) {
		p = bad_u[i].p;
		CHECK_EQ_INT(uvarint_decode(&p, bad_u[i].p + bad_u[i].n, &uv), DOCRAFT_ECORRUPT);
		CHECK(p == bad_u[i].p);
	}
}

TEST_MAIN(T(svarint_examples), T(svarint_desc), T(svarint_length_classes), T(svarint_int64_min),
	  T(svarint_roundtrip_random), T(svarint_order_random), T(svarint_truncated),
	  T(svarint_malformed), T(svarint_every_byte_pattern), T(uvarint_classes),
	  T(uvarint_roundtrip_order_random), T(uvarint_truncated_malformed),
	  T(varint_only_shortest_form))
