/* Key encoding (docdb-format.md §2–3): byte-exact worked examples, round
 * trips of every component type and direction, DocKey / SubDocKey / DocHT,
 * and decoders that fail cleanly on truncated or garbage input. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/hash16.h"
#include "common/hlc.h"
#include "docdb/key.h"
#include "docraft/error.h"

/* 2020-02-12 02:43:55.181551 UTC, the §3.1/§3.3 example. */
#define EXAMPLE_MICROS UINT64_C(1581475435181551)

static void check_pv_bytes(const char *file, int line, struct pv v, const uint8_t *want,
			   size_t n)
{
	struct buf b = BUF_INIT;
	key_append_pv(&b, &v);
	if (b.len != n || memcmp(b.data, want, n) != 0)
		test_fail_mem(file, line, "key_append_pv", b.data, b.len, want, n);
	buf_free(&b);
}

#define CHECK_PV_BYTES(v, ...)                                                \
	do {                                                                  \
		static const uint8_t want_[] = {__VA_ARGS__};                 \
		check_pv_bytes(__FILE__, __LINE__, (v), want_, sizeof want_); \
	} while (0)

TEST(string_examples)
{
	CHECK_PV_BYTES(pv_strn("a\0b", 3), 'S', 0x61, 0x00, 0x01, 0x62, 0x00, 0x00);
	CHECK_PV_BYTES(pv_str(""), 'S', 0x00, 0x00);
	CHECK_PV_BYTES(pv_desc(pv_str("ab")), 'a', 0x9E, 0x9D, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_str("")), 'a', 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_strn("a\0b", 3)), 'a', 0x9E, 0xFF, 0xFE, 0x9D, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_strn("\0\0", 2), 'S', 0x00, 0x01, 0x00, 0x01, 0x00, 0x00);
	CHECK_PV_BYTES(pv_strn("\xFF", 1), 'S', 0xFF, 0x00, 0x00);
	CHECK_PV_BYTES(pv_desc(pv_strn("\xFF", 1)), 'a', 0x00, 0xFF, 0xFF);
}

TEST(integer_examples)
{
	CHECK_PV_BYTES(pv_int32(3), 'H', 0x80, 0x00, 0x00, 0x03);
	CHECK_PV_BYTES(pv_int32(-1), 'H', 0x7F, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_int32(3)), 'e', 0x7F, 0xFF, 0xFF, 0xFC);
	CHECK_PV_BYTES(pv_int32(INT32_MIN), 'H', 0x00, 0x00, 0x00, 0x00);
	CHECK_PV_BYTES(pv_int32(INT32_MAX), 'H', 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_int32(INT32_MIN)), 'e', 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_int64(3), 'I', 0x80, 0, 0, 0, 0, 0, 0, 0x03);
	CHECK_PV_BYTES(pv_int64(-1), 'I', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_int64(3)), 'b', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFC);
	CHECK_PV_BYTES(pv_timestamp(3), 's', 0x80, 0, 0, 0, 0, 0, 0, 0x03);
	CHECK_PV_BYTES(pv_desc(pv_timestamp(3)), 'c', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		       0xFC);
	CHECK_PV_BYTES(pv_array_index(5), '[', 0x80, 0, 0, 0, 0, 0, 0, 0x05);
	CHECK_PV_BYTES(pv_array_index(-1), '[', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_uint32(0x01020304), 'O', 0x01, 0x02, 0x03, 0x04);
	CHECK_PV_BYTES(pv_desc(pv_uint32(0x01020304)), 'g', 0xFE, 0xFD, 0xFC, 0xFB);
	CHECK_PV_BYTES(pv_uint64(5), 'U', 0, 0, 0, 0, 0, 0, 0, 0x05);
	CHECK_PV_BYTES(pv_desc(pv_uint64(5)), 'j', 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFA);
}

TEST(float_examples)
{
	CHECK_PV_BYTES(pv_double(1.0), 'D', 0xBF, 0xF0, 0, 0, 0, 0, 0, 0);
	CHECK_PV_BYTES(pv_double(-1.0), 'D', 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_double(0.0), 'D', 0x80, 0, 0, 0, 0, 0, 0, 0);
	CHECK_PV_BYTES(pv_double(-0.0), 'D', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_double(1.0)), 'L', 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		       0xFF);
	/* Every NaN is the canonical quiet NaN 0x7FF8...: sign flipped. */
	CHECK_PV_BYTES(pv_double(NAN), 'D', 0xFF, 0xF8, 0, 0, 0, 0, 0, 0);
	CHECK_PV_BYTES(pv_double(-__builtin_nan("0x55")), 'D', 0xFF, 0xF8, 0, 0, 0, 0, 0, 0);
	CHECK_PV_BYTES(pv_double(INFINITY), 'D', 0xFF, 0xF0, 0, 0, 0, 0, 0, 0);
	CHECK_PV_BYTES(pv_float(1.0f), 'C', 0xBF, 0x80, 0x00, 0x00);
	CHECK_PV_BYTES(pv_float(-1.0f), 'C', 0x40, 0x7F, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_float(-0.0f), 'C', 0x7F, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_desc(pv_float(0.0f)), 'M', 0x7F, 0xFF, 0xFF, 0xFF);
	CHECK_PV_BYTES(pv_float(__builtin_nanf("3")), 'C', 0xFF, 0xC0, 0x00, 0x00);
}

/* Found by tests/fuzz/fuzz_docdb_key: the decoder accepted any NaN bit
 * pattern, so a NaN had many key encodings (keys compare as bytes). Only
 * the canonical quiet NaN decodes now, ascending and descending. */
TEST(float_noncanonical_nan_is_corrupt)
{
	static const uint8_t bad[][9] = {
		{'C', 0xFF, 0xFF, 0xFF, 0x9D},                   /* float NaN, other payload */
		{'M', 0x00, 0x00, 0x00, 0x62},                   /* the same, descending */
		{'D', 0xFF, 0xF8, 0, 0, 0, 0, 0, 0x01},          /* double NaN, other payload */
		{'D', 0x00, 0x07, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, /* negative NaN */
	};
	static const uint8_t good[][9] = {
		{'C', 0xFF, 0xC0, 0x00, 0x00},
		{'M', 0x00, 0x3F, 0xFF, 0xFF},
		{'D', 0xFF, 0xF8, 0, 0, 0, 0, 0, 0},
	};
	struct arena a = ARENA_INIT;
	struct pv v;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const uint8_t *p = bad[i];
		size_t n = bad[i][0] == 'D' ? 9 : 5;
		CHECK_EQ_INT(key_decode_pv(&p, bad[i] + n, &v, &a), DOCRAFT_ECORRUPT);
		CHECK(p == bad[i]);
		CHECK_EQ_INT(key_skip_pv(&p, bad[i] + n), DOCRAFT_ECORRUPT);
	}
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		const uint8_t *p = good[i];
		size_t n = good[i][0] == 'D' ? 9 : 5;
		CHECK_OK(key_decode_pv(&p, good[i] + n, &v, &a));
		CHECK(p == good[i] + n);
		CHECK(v.type == PV_FLOAT ? v.v.f != v.v.f : v.v.d != v.v.d);
	}
	arena_free(&a);
}

TEST(other_examples)
{
	CHECK_PV_BYTES(pv_bool(false), 'F');
	CHECK_PV_BYTES(pv_bool(true), 'T');
	CHECK_PV_BYTES(pv_desc(pv_bool(false)), 'i');
	CHECK_PV_BYTES(pv_desc(pv_bool(true)), 'h');
	CHECK_PV_BYTES(pv_null(), '$');
	{
		struct pv n = pv_null();
		n.null_high = 1;
		CHECK_PV_BYTES(n, '|');
	}
	CHECK_PV_BYTES(pv_column(0), 'K', 0x80);
	CHECK_PV_BYTES(pv_column(10), 'K', 0x8A);
	CHECK_PV_BYTES(pv_column(64), 'K', 0xC0, 0x40);
	CHECK_PV_BYTES(pv_liveness(), 'J', 0x80);
	CHECK_PV_BYTES(pv_system_column(1), 'J', 0x81);
}

TEST(uuid_examples)
{
	/* Version 4: 123e4567-e89b-42d3-a456-426614174000. The version nibble
	 * moves to the front; no zero bytes, so no escaping. */
	static const uint8_t v4[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3,
				       0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x01};
	/* Version 1: c232ab00-9414-11ec-b3c8-9f6bdeced846 (a timeuuid): the
	 * first 8 bytes reorder to 11ec 9414 c232ab00. */
	static const uint8_t v1[16] = {0xc2, 0x32, 0xab, 0x00, 0x94, 0x14, 0x11, 0xec,
				       0xb3, 0xc8, 0x9f, 0x6b, 0xde, 0xce, 0xd8, 0x46};
	uint8_t c[16], back[16];

	CHECK_PV_BYTES(pv_uuid(v4), '_', 0x41, 0x23, 0xe4, 0x56, 0x7e, 0x89, 0xb2, 0xd3, 0xa4,
		       0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x01, 0x00, 0x00);
	CHECK_PV_BYTES(pv_uuid(v1), '_', 0x11, 0xec, 0x94, 0x14, 0xc2, 0x32, 0xab, 0x00, 0x01,
		       0xb3, 0xc8, 0x9f, 0x6b, 0xde, 0xce, 0xd8, 0x46, 0x00, 0x00);
	CHECK_PV_BYTES(pv_desc(pv_uuid(v1)), '`', 0xEE, 0x13, 0x6B, 0xEB, 0x3D, 0xCD, 0x54, 0xFF,
		       0xFE, 0x4C, 0x37, 0x60, 0x94, 0x21, 0x31, 0x27, 0xB9, 0xFF, 0xFF);

	uuid_to_comparable(v4, c);
	uuid_from_comparable(c, back);
	CHECK_EQ_MEM(back, 16, v4, 16);
	uuid_to_comparable(v1, c);
	uuid_from_comparable(c, back);
	CHECK_EQ_MEM(back, 16, v1, 16);
}

TEST(uuid_comparable_bijection)
{
	uint64_t seed = test_seed();
	for (int i = 0; i < 100000; i++) {
		uint8_t u[16], c[16], back[16], c2[16];
		uint64_t r1 = test_rand(&seed), r2 = test_rand(&seed);
		for (int k = 0; k < 8; k++) {
			u[k] = (uint8_t)(r1 >> (8 * k));
			u[8 + k] = (uint8_t)(r2 >> (8 * k));
		}
		if (i & 1)
			u[6] = (uint8_t)((u[6] & 0x0F) | 0x10); /* version 1 */
		uuid_to_comparable(u, c);
		uuid_from_comparable(c, back);
		CHECK_EQ_MEM(back, 16, u, 16);
		/* And the other way round: every 16 bytes are a comparable form. */
		uuid_from_comparable(u, back);
		uuid_to_comparable(back, c2);
		CHECK_EQ_MEM(c2, 16, u, 16);
	}
}

/* Encodes v, decodes it back, checks equality, direction and length. */
static void roundtrip(const char *file, int line, struct pv v)
{
	struct buf b = BUF_INIT;
	struct arena a = ARENA_INIT;
	struct pv got;
	const uint8_t *p;
	int rv;
	/* Append to a non-empty buffer and decode from an exact-size copy so
	 * that ASan sees any over-read. */
	buf_push(&b, 0xAB);
	key_append_pv(&b, &v);
	size_t n = b.len - 1;
	uint8_t *copy = malloc(n);
	memcpy(copy, b.data + 1, n);
	p = copy;
	rv = key_decode_pv(&p, copy + n, &got, &a);
	if (rv != 0 || p != copy + n) {
		struct buf f = BUF_INIT;
		pv_format(&f, &v);
		test_note("value %s", buf_cstr(&f));
		buf_free(&f);
		test_fail(file, line, "decode rv %d, consumed %zu of %zu", rv,
			  (size_t)(p - copy), n);
	}
	if (!pv_equal(&got, &v) || got.desc != v.desc || got.type != v.type ||
	    got.null_high != v.null_high) {
		struct buf f = BUF_INIT, g = BUF_INIT;
		pv_format(&f, &v);
		pv_format(&g, &got);
		test_fail(file, line, "round trip %s (desc %d) -> %s (desc %d)", buf_cstr(&f),
			  v.desc, buf_cstr(&g), got.desc);
	}
	if (v.type == PV_FLOAT || v.type == PV_DOUBLE) {
		/* Bit-exact, apart from NaN canonicalization. */
		if (v.type == PV_FLOAT)
			CHECK(pv_float_bits(got.v.f) == pv_float_bits(v.v.f));
		else
			CHECK(pv_double_bits(got.v.d) == pv_double_bits(v.v.d));
	}
	p = copy;
	CHECK_OK(key_skip_pv(&p, copy + n));
	CHECK(p == copy + n);
	free(copy);
	buf_free(&b);
	arena_free(&a);
}

#define ROUNDTRIP(v)                                                          \
	do {                                                                  \
		roundtrip(__FILE__, __LINE__, (v));                           \
		roundtrip(__FILE__, __LINE__, pv_desc(v));                    \
	} while (0)

TEST(roundtrip_every_type)
{
	static const uint8_t u0[16], uff[16] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
						0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
	static const uint8_t u1[16] = {0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	struct pv nh = pv_null();
	uint64_t seed = test_seed();
	nh.null_high = 1;

	roundtrip(__FILE__, __LINE__, pv_null());
	roundtrip(__FILE__, __LINE__, nh);
	ROUNDTRIP(pv_bool(false));
	ROUNDTRIP(pv_bool(true));
	ROUNDTRIP(pv_int32(0));
	ROUNDTRIP(pv_int32(-1));
	ROUNDTRIP(pv_int32(INT32_MIN));
	ROUNDTRIP(pv_int32(INT32_MAX));
	ROUNDTRIP(pv_int64(0));
	ROUNDTRIP(pv_int64(INT64_MIN));
	ROUNDTRIP(pv_int64(INT64_MAX));
	ROUNDTRIP(pv_uint32(0));
	ROUNDTRIP(pv_uint32(UINT32_MAX));
	ROUNDTRIP(pv_uint64(0));
	ROUNDTRIP(pv_uint64(UINT64_MAX));
	ROUNDTRIP(pv_float(0.0f));
	ROUNDTRIP(pv_float(-0.0f));
	ROUNDTRIP(pv_float(1.5f));
	ROUNDTRIP(pv_float(-INFINITY));
	ROUNDTRIP(pv_float(NAN));
	ROUNDTRIP(pv_float(1e-45f));
	ROUNDTRIP(pv_double(0.0));
	ROUNDTRIP(pv_double(-0.0));
	ROUNDTRIP(pv_double(3.141592653589793));
	ROUNDTRIP(pv_double(INFINITY));
	ROUNDTRIP(pv_double(-INFINITY));
	ROUNDTRIP(pv_double(NAN));
	ROUNDTRIP(pv_double(5e-324));
	ROUNDTRIP(pv_str(""));
	ROUNDTRIP(pv_str("hello"));
	ROUNDTRIP(pv_strn("\0", 1));
	ROUNDTRIP(pv_strn("\0\0\0", 3));
	ROUNDTRIP(pv_strn("\xFF\xFE\x01\x00\xFF", 5));
	ROUNDTRIP(pv_strn("a\0b\0", 4));
	ROUNDTRIP(pv_timestamp(0));
	ROUNDTRIP(pv_timestamp(INT64_MIN));
	ROUNDTRIP(pv_timestamp((int64_t)EXAMPLE_MICROS));
	ROUNDTRIP(pv_uuid(u0));
	ROUNDTRIP(pv_uuid(uff));
	ROUNDTRIP(pv_uuid(u1));
	roundtrip(__FILE__, __LINE__, pv_column(0));
	roundtrip(__FILE__, __LINE__, pv_column(64));
	roundtrip(__FILE__, __LINE__, pv_column(-5));
	roundtrip(__FILE__, __LINE__, pv_column(INT64_MAX));
	roundtrip(__FILE__, __LINE__, pv_column(INT64_MIN));
	roundtrip(__FILE__, __LINE__, pv_liveness());
	roundtrip(__FILE__, __LINE__, pv_system_column(7));
	roundtrip(__FILE__, __LINE__, pv_array_index(0));
	roundtrip(__FILE__, __LINE__, pv_array_index(INT64_MIN));
	roundtrip(__FILE__, __LINE__, pv_array_index(INT64_MAX));

	/* Random values of every type. */
	for (int i = 0; i < 20000; i++) {
		uint64_t r = test_rand(&seed);
		uint8_t s[40], u[16];
		size_t n = test_rand(&seed) % sizeof s;
		for (size_t k = 0; k < sizeof s; k++) {
			uint64_t x = test_rand(&seed);
			s[k] = (x & 3) == 0 ? 0 : (x & 3) == 1 ? 0xFF : (uint8_t)(x >> 8);
		}
		memcpy(u, s, 16);
		ROUNDTRIP(pv_int32((int32_t)r));
		ROUNDTRIP(pv_int64((int64_t)r));
		ROUNDTRIP(pv_uint32((uint32_t)r));
		ROUNDTRIP(pv_uint64(r));
		{
			uint32_t fb = (uint32_t)r;
			uint64_t db = r;
			float f;
			double d;
			memcpy(&f, &fb, 4);
			memcpy(&d, &db, 8);
			ROUNDTRIP(pv_float(f));
			ROUNDTRIP(pv_double(d));
		}
		ROUNDTRIP(pv_strn(s, n));
		ROUNDTRIP(pv_timestamp((int64_t)r));
		ROUNDTRIP(pv_uuid(u));
		roundtrip(__FILE__, __LINE__, pv_column((int64_t)r >> (r & 63)));
		roundtrip(__FILE__, __LINE__, pv_array_index((int64_t)r));
	}
}

TEST(decoded_strings_live_in_arena)
{
	struct buf b = BUF_INIT;
	struct arena a = ARENA_INIT;
	struct pv got;
	const uint8_t *p;
	struct pv v = pv_str("no escapes here");
	key_append_pv(&b, &v);
	p = b.data;
	CHECK_OK(key_decode_pv(&p, b.data + b.len, &got, &a));
	CHECK(got.v.s.p < b.data || got.v.s.p >= b.data + b.len);
	memset(b.data, 0x55, b.len);
	CHECK_EQ_MEM(got.v.s.p, got.v.s.len, "no escapes here", 15);
	buf_free(&b);
	arena_free(&a);
}

static uint64_t example_ht(void)
{
	return ht_make(EXAMPLE_MICROS, 0);
}

TEST(docht_examples)
{
	static const uint8_t w0[] = {0x80, 0x01, 0xB5, 0xE6, 0x05, 0xA0, 0xCA, 0x10, 0x80, 0x4A};
	static const uint8_t w1[] = {0x80, 0x01, 0xB5, 0xE6, 0x05, 0xA0,
				     0xCA, 0x10, 0x80, 0x3F, 0xAB};
	struct buf b = BUF_INIT;
	struct docht d;

	docht_append(&b, (struct docht){example_ht(), 0});
	CHECK_EQ_MEM(b.data, b.len, w0, sizeof w0);
	CHECK_OK(docht_decode(b.data, b.len, &d));
	CHECK_EQ_U64(d.ht, example_ht());
	CHECK_EQ_INT(d.write_id, 0);

	buf_reset(&b);
	docht_append(&b, (struct docht){example_ht(), 1});
	CHECK_EQ_MEM(b.data, b.len, w1, sizeof w1);
	CHECK_OK(docht_decode(b.data, b.len, &d));
	CHECK_EQ_U64(d.ht, example_ht());
	CHECK_EQ_INT(d.write_id, 1);
	/* write_id 1 sorts first (it is newer). */
	CHECK(memcmp(w1, w0, sizeof w0) < 0);
	buf_free(&b);
}

TEST(docht_roundtrip)
{
	uint64_t seed = test_seed();
	struct buf b = BUF_INIT;
	uint64_t hts[] = {HT_MIN, HT_INITIAL, HT_INVALID, HT_MAX, example_ht(),
			  ht_make(EXAMPLE_MICROS, 4095), ht_make(UINT64_C(1500000000000000), 0),
			  ht_make(UINT64_C(1781475435181551), 17)};
	uint32_t wids[] = {0, 1, 30, 31, 32, 63, 64, 65535, UINT32_MAX - 1, UINT32_MAX};
	for (size_t i = 0; i < sizeof hts / sizeof hts[0]; i++) {
		for (size_t j = 0; j < sizeof wids / sizeof wids[0]; j++) {
			struct docht d;
			buf_reset(&b);
			docht_append(&b, (struct docht){hts[i], wids[j]});
			CHECK(b.len >= 4 && b.len <= DOCHT_MAX_LEN);
			CHECK_EQ_INT(b.data[b.len - 1] & 0x1F, b.len);
			CHECK_OK(docht_decode(b.data, b.len, &d));
			CHECK_EQ_U64(d.ht, hts[i]);
			CHECK_EQ_U64(d.write_id, wids[j]);
		}
	}
	for (int i = 0; i < 100000; i++) {
		struct docht in = {test_rand(&seed) >> (test_rand(&seed) % 64),
				   (uint32_t)(test_rand(&seed) >> (test_rand(&seed) % 64))}, out;
		buf_reset(&b);
		docht_append(&b, in);
		CHECK_OK(docht_decode(b.data, b.len, &out));
		CHECK_EQ_U64(out.ht, in.ht);
		CHECK_EQ_U64(out.write_id, in.write_id);
	}
	buf_free(&b);
}

TEST(docht_corrupt)
{
	struct buf b = BUF_INIT;
	struct docht d;
	uint8_t tmp[DOCHT_MAX_LEN + 2];
	docht_append(&b, (struct docht){example_ht(), 0});
	/* Empty, every prefix, a trailing byte, a wrong size field. */
	CHECK_EQ_INT(docht_decode(b.data, 0, &d), DOCRAFT_ECORRUPT);
	for (size_t n = 1; n < b.len; n++)
		CHECK_EQ_INT(docht_decode(b.data, n, &d), DOCRAFT_ECORRUPT);
	memcpy(tmp, b.data, b.len);
	tmp[b.len] = (uint8_t)(0x40 | (b.len + 1));
	CHECK_EQ_INT(docht_decode(tmp, b.len + 1, &d), DOCRAFT_ECORRUPT);
	memcpy(tmp, b.data, b.len);
	tmp[b.len - 1] = (uint8_t)((tmp[b.len - 1] & 0xE0) | 9);
	CHECK_EQ_INT(docht_decode(tmp, b.len, &d), DOCRAFT_ECORRUPT);
	/* A positive write id field (write_id + 1 <= 0) is corrupt. */
	memcpy(tmp, b.data, b.len);
	tmp[b.len - 1] = 0x80 | (uint8_t)b.len;
	CHECK_EQ_INT(docht_decode(tmp, b.len, &d), DOCRAFT_ECORRUPT);
	/* A logical part outside 0..4095: 4096 (field 2F FF), and -1 (81). */
	{
		static const uint8_t good[] = {0x80, 0x01, 0xB5, 0xE6, 0x05, 0xA0,
					       0xCA, 0x10, 0x30, 0x00, 0x4B};
		static const uint8_t big[] = {0x80, 0x01, 0xB5, 0xE6, 0x05, 0xA0,
					      0xCA, 0x10, 0x2F, 0xFF, 0x4B};
		static const uint8_t neg[] = {0x80, 0x01, 0xB5, 0xE6, 0x05,
					      0xA0, 0xCA, 0x10, 0x81, 0x4A};
		CHECK_OK(docht_decode(good, sizeof good, &d));
		CHECK_EQ_U64(d.ht, example_ht() + 4095);
		CHECK_EQ_INT(docht_decode(big, sizeof big, &d), DOCRAFT_ECORRUPT);
		CHECK_EQ_INT(docht_decode(neg, sizeof neg, &d), DOCRAFT_ECORRUPT);
	}
	buf_free(&b);
}

/* The §3.1 worked example. */
static const uint8_t full_key[] = {0x47, 0xFC, 0xA0, 0x48, 0x80, 0x00, 0x00, 0x03,
				   0x21, 0x21, 0x4A, 0x80, 0x23, 0x80, 0x01, 0xB5,
				   0xE6, 0x05, 0xA0, 0xCA, 0x10, 0x80, 0x4A};

TEST(full_key_example)
{
	struct buf b = BUF_INIT;
	struct pv h = pv_int32(3), live = pv_liveness();
	struct dockey k = {.has_hash = true,
			   .hash = key_hash_components(&h, 1),
			   .n_hashed = 1,
			   .hashed = &h};
	CHECK_EQ_INT(k.hash, 0xFCA0);
	dockey_append(&b, &k);
	key_append_pv(&b, &live);
	buf_push(&b, KT_HYBRID_TIME);
	docht_append(&b, (struct docht){example_ht(), 0});
	CHECK_EQ_MEM(b.data, b.len, full_key, sizeof full_key);
	CHECK_EQ_INT(dockey_prefix_len(b.data, b.len), 10);
	buf_free(&b);
}

TEST(full_key_decode)
{
	struct arena a = ARENA_INIT;
	struct subdockey sk;
	struct dockey dk;
	struct docht d;
	size_t path_len;
	const uint8_t *p = full_key;

	CHECK_OK(subdockey_decode(full_key, sizeof full_key, &sk, &a));
	CHECK(sk.doc.has_hash);
	CHECK_EQ_INT(sk.doc.hash, 0xFCA0);
	CHECK_EQ_INT(sk.doc.n_hashed, 1);
	CHECK_EQ_INT(sk.doc.hashed[0].type, PV_INT32);
	CHECK_EQ_INT(sk.doc.hashed[0].v.i32, 3);
	CHECK_EQ_INT(sk.doc.n_range, 0);
	CHECK_EQ_INT(sk.n_subkeys, 1);
	CHECK_EQ_INT(sk.subkeys[0].type, PV_SYSTEM_COLUMN_ID);
	CHECK_EQ_INT(sk.subkeys[0].v.i64, LIVENESS_COLUMN_ID);
	CHECK(sk.has_ht);
	CHECK_EQ_U64(sk.ht.ht, example_ht());
	CHECK_EQ_INT(sk.ht.write_id, 0);

	CHECK_OK(key_split_ht(full_key, sizeof full_key, &path_len, &d));
	CHECK_EQ_INT(path_len, 12);
	CHECK_EQ_U64(d.ht, example_ht());
	CHECK_EQ_INT(d.write_id, 0);

	CHECK_OK(dockey_decode(&p, full_key + sizeof full_key, &dk, &a));
	CHECK(p == full_key + 10);
	CHECK_EQ_INT(dk.hash, 0xFCA0);

	/* Without the DocHT: accepted, has_ht false. */
	CHECK_OK(subdockey_decode(full_key, 12, &sk, &a));
	CHECK(!sk.has_ht);
	CHECK_EQ_INT(sk.n_subkeys, 1);
	arena_free(&a);
}

TEST(dockey_shapes)
{
	struct arena a = ARENA_INIT;
	struct buf b = BUF_INIT;
	struct dockey k = {0}, got;
	const uint8_t *p;

	/* The empty key is one '!'. */
	dockey_append(&b, &k);
	CHECK_EQ_MEM(b.data, b.len, "!", 1);
	p = b.data;
	CHECK_OK(dockey_decode(&p, b.data + b.len, &got, &a));
	CHECK(!got.has_hash && got.n_hashed == 0 && got.n_range == 0);
	CHECK_EQ_INT(dockey_prefix_len(b.data, b.len), 1);

	/* Range-only key: <range comps> '!'. */
	{
		struct pv r[2] = {pv_str("ab"), pv_desc(pv_int64(7))};
		buf_reset(&b);
		k = (struct dockey){.n_range = 2, .range = r};
		dockey_append(&b, &k);
		static const uint8_t want[] = {'S', 'a', 'b', 0, 0, 'b', 0x7F, 0xFF, 0xFF, 0xFF,
					       0xFF, 0xFF, 0xFF, 0xF8, '!'};
		CHECK_EQ_MEM(b.data, b.len, want, sizeof want);
		p = b.data;
		CHECK_OK(dockey_decode(&p, b.data + b.len, &got, &a));
		CHECK(!got.has_hash);
		CHECK_EQ_INT(got.n_range, 2);
		CHECK(pv_equal(&got.range[0], &r[0]) && !got.range[0].desc);
		CHECK(pv_equal(&got.range[1], &r[1]) && got.range[1].desc);
	}

	/* Redis key: 'G' hash 'S' <escaped> 00 00 '!' '!'. */
	{
		struct pv h = pv_str("mykey");
		buf_reset(&b);
		k = (struct dockey){.has_hash = true, .hash = 0x1234, .n_hashed = 1, .hashed = &h};
		dockey_append(&b, &k);
		static const uint8_t want[] = {'G', 0x12, 0x34, 'S', 'm', 'y', 'k',
					       'e', 'y', 0, 0, '!', '!'};
		CHECK_EQ_MEM(b.data, b.len, want, sizeof want);
	}

	/* Hash and range components, more than fit the decoder's stack array. */
	{
		struct pv hs[20], rs[40];
		for (int i = 0; i < 20; i++)
			hs[i] = i & 1 ? pv_int32(i) : pv_strn("x\0y", (size_t)(i % 4));
		for (int i = 0; i < 40; i++)
			rs[i] = i % 3 == 0 ? pv_desc(pv_str("zz")) : pv_uint64((uint64_t)i);
		for (size_t nh = 0; nh <= 20; nh += 5) {
			for (size_t nr = 0; nr <= 40; nr += 8) {
				buf_reset(&b);
				k = (struct dockey){.has_hash = nh > 0,
						    .hash = (uint16_t)(nh * 1000 + nr),
						    .n_hashed = nh,
						    .hashed = hs,
						    .n_range = nr,
						    .range = rs};
				dockey_append(&b, &k);
				buf_push(&b, 'K'); /* a subkey follows */
				p = b.data;
				CHECK_OK(dockey_decode(&p, b.data + b.len, &got, &a));
				CHECK_EQ_INT(p - b.data, b.len - 1);
				CHECK_EQ_INT(dockey_prefix_len(b.data, b.len), b.len - 1);
				CHECK_EQ_INT(got.has_hash, nh > 0);
				CHECK_EQ_INT(got.hash, nh > 0 ? k.hash : 0);
				CHECK_EQ_INT(got.n_hashed, nh);
				CHECK_EQ_INT(got.n_range, nr);
				for (size_t i = 0; i < nh; i++)
					CHECK(pv_equal(&got.hashed[i], &hs[i]));
				for (size_t i = 0; i < nr; i++)
					CHECK(pv_equal(&got.range[i], &rs[i]) &&
					      got.range[i].desc == rs[i].desc);
			}
		}
	}
	buf_free(&b);
	arena_free(&a);
}

TEST(subdockey_paths)
{
	struct arena a = ARENA_INIT;
	struct buf b = BUF_INIT;
	struct pv h = pv_str("user1"), r = pv_int32(10);
	struct pv sub[24];
	struct dockey k = {.has_hash = true, .n_hashed = 1, .hashed = &h, .n_range = 1, .range = &r};
	k.hash = key_hash_components(&h, 1);
	sub[0] = pv_column(12);
	for (int i = 1; i < 24; i++)
		sub[i] = i & 1 ? pv_strn("from\0", 5) : pv_array_index(-i);
	for (size_t n = 0; n <= 24; n++) {
		struct subdockey sk;
		struct docht d;
		size_t path_len;
		buf_reset(&b);
		dockey_append(&b, &k);
		for (size_t i = 0; i < n; i++)
			key_append_pv(&b, &sub[i]);
		size_t plen = b.len;
		buf_push(&b, KT_HYBRID_TIME);
		docht_append(&b, (struct docht){example_ht() + n, (uint32_t)n});
		CHECK_OK(subdockey_decode(b.data, b.len, &sk, &a));
		CHECK_EQ_INT(sk.n_subkeys, n);
		for (size_t i = 0; i < n; i++)
			CHECK(pv_equal(&sk.subkeys[i], &sub[i]));
		CHECK(sk.has_ht);
		CHECK_EQ_U64(sk.ht.ht, example_ht() + n);
		CHECK_EQ_INT(sk.ht.write_id, n);
		CHECK_OK(key_split_ht(b.data, b.len, &path_len, &d));
		CHECK_EQ_INT(path_len, plen);
		CHECK_EQ_U64(d.ht, example_ht() + n);
		CHECK_EQ_INT(d.write_id, n);
	}
	buf_free(&b);
	arena_free(&a);
}

TEST(key_split_ht_rejects)
{
	struct docht d;
	size_t path_len = 77;
	/* Empty; size 0; size beyond the key; no '#' before the DocHT. */
	CHECK_EQ_INT(key_split_ht(full_key, 0, &path_len, &d), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(key_split_ht((const uint8_t *)"\x40", 1, &path_len, &d), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(key_split_ht(full_key + 13, 10, &path_len, &d), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(key_split_ht(full_key + 12, 11, &path_len, &d), 0);
	CHECK_EQ_INT(path_len, 0);
	{
		uint8_t k[sizeof full_key];
		memcpy(k, full_key, sizeof k);
		k[12] = '$';
		CHECK_EQ_INT(key_split_ht(k, sizeof k, &path_len, &d), DOCRAFT_ECORRUPT);
	}
}

/* Runs every decoder over an exact-size heap copy of in[0..n): none may
 * crash or read outside; results must be self-consistent. */
static void fuzz_one(const uint8_t *in, size_t n, struct arena *a)
{
	uint8_t *c = malloc(n ? n : 1);
	const uint8_t *p;
	struct pv v;
	struct dockey dk;
	struct subdockey sk;
	struct docht d;
	size_t path_len, plen;
	int rv;
	memcpy(c, in, n);
	p = c;
	rv = key_decode_pv(&p, c + n, &v, a);
	CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
	if (rv == 0) {
		const uint8_t *q = c;
		CHECK(p > c && p <= c + n);
		CHECK_OK(key_skip_pv(&q, c + n));
		CHECK(q == p);
	} else {
		CHECK(p == c);
		CHECK_EQ_INT(key_skip_pv(&p, c + n), DOCRAFT_ECORRUPT);
	}
	p = c;
	rv = dockey_decode(&p, c + n, &dk, a);
	CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
	plen = dockey_prefix_len(c, n);
	CHECK_EQ_INT(plen, rv == 0 ? (size_t)(p - c) : 0);
	rv = subdockey_decode(c, n, &sk, a);
	CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
	rv = key_split_ht(c, n, &path_len, &d);
	CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
	if (rv == 0)
		CHECK(path_len < n);
	rv = docht_decode(c, n, &d);
	CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
	free(c);
}

TEST(truncated_keys_fail)
{
	struct arena a = ARENA_INIT;
	struct buf b = BUF_INIT;
	static const uint8_t u[16] = {1, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	struct pv comps[] = {
		pv_null(), pv_bool(true), pv_int32(3), pv_desc(pv_int32(3)), pv_int64(-9),
		pv_uint32(7), pv_desc(pv_uint64(7)), pv_float(1.0f), pv_desc(pv_double(-2.5)),
		pv_str("abc"), pv_strn("a\0b", 3), pv_desc(pv_strn("a\0b", 3)),
		pv_timestamp(1), pv_uuid(u), pv_desc(pv_uuid(u)), pv_column(64),
		pv_column(-3600000), pv_liveness(), pv_array_index(2)};
	for (size_t i = 0; i < sizeof comps / sizeof comps[0]; i++) {
		buf_reset(&b);
		key_append_pv(&b, &comps[i]);
		/* Every strict prefix of one component is corrupt. */
		for (size_t n = 0; n < b.len; n++) {
			uint8_t *c = malloc(n ? n : 1);
			const uint8_t *p = c;
			struct pv v;
			memcpy(c, b.data, n);
			CHECK_EQ_INT(key_decode_pv(&p, c + n, &v, &a), DOCRAFT_ECORRUPT);
			CHECK(p == c);
			CHECK_EQ_INT(key_skip_pv(&p, c + n), DOCRAFT_ECORRUPT);
			free(c);
		}
	}
	/* Every strict prefix of a DocKey is not a DocKey; every prefix of a
	 * full key decodes or fails cleanly. */
	{
		struct pv h[2] = {pv_str("k\0"), pv_int32(1)};
		struct pv r[2] = {pv_desc(pv_str("r")), pv_uuid(u)};
		struct dockey k = {.has_hash = true, .hash = 7, .n_hashed = 2, .hashed = h,
				   .n_range = 2, .range = r};
		size_t dlen;
		buf_reset(&b);
		dockey_append(&b, &k);
		dlen = b.len;
		key_append_pv(&b, &comps[15]);
		key_append_pv(&b, &comps[10]);
		buf_push(&b, KT_HYBRID_TIME);
		docht_append(&b, (struct docht){example_ht(), 3});
		for (size_t n = 0; n <= b.len; n++) {
			uint8_t *c = malloc(n ? n : 1);
			const uint8_t *p = c;
			struct dockey dk;
			memcpy(c, b.data, n);
			if (n < dlen) {
				CHECK_EQ_INT(dockey_decode(&p, c + n, &dk, &a), DOCRAFT_ECORRUPT);
				CHECK_EQ_INT(dockey_prefix_len(c, n), 0);
			} else {
				CHECK_OK(dockey_decode(&p, c + n, &dk, &a));
				CHECK_EQ_INT(dockey_prefix_len(c, n), dlen);
			}
			free(c);
			fuzz_one(b.data, n, &a);
		}
		for (size_t n = 0; n <= sizeof full_key; n++)
			fuzz_one(full_key, n, &a);
	}
	buf_free(&b);
	arena_free(&a);
}

TEST(garbage_never_crashes)
{
	struct arena a = ARENA_INIT;
	uint64_t seed = test_seed();
	uint8_t in[64];
	/* Bytes drawn mostly from the type bytes and terminators, so that the
	 * decoders get deep before they fail. */
	static const uint8_t alphabet[] = {'!', '#', '$', '|', 'F', 'T', 'i', 'h', 'H', 'e',
					   'I', 'b', 'O', 'g', 'U', 'j', 'C', 'M', 'D', 'L',
					   'S', 'a', 's', 'c', '_', '`', 'K', 'J', '[', 'G',
					   0x00, 0x01, 0xFE, 0xFF, 0x80, 0x7F, 0x4A, 0xC0};
	for (int i = 0; i < 300000; i++) {
		size_t n = test_rand(&seed) % sizeof in;
		for (size_t k = 0; k < n; k++) {
			uint64_t r = test_rand(&seed);
			in[k] = r & 1 ? alphabet[(r >> 1) % sizeof alphabet] : (uint8_t)(r >> 8);
		}
		fuzz_one(in, n, &a);
		if (i % 1000 == 0)
			arena_reset(&a);
	}
	/* Valid keys with random byte flips. */
	for (int i = 0; i < 100000; i++) {
		uint8_t k[sizeof full_key];
		memcpy(k, full_key, sizeof k);
		for (int f = 0; f < 1 + i % 3; f++)
			k[test_rand(&seed) % sizeof k] = (uint8_t)test_rand(&seed);
		fuzz_one(k, sizeof k, &a);
		if (i % 1000 == 0)
			arena_reset(&a);
	}
	arena_free(&a);
}

TEST(pv_format_forms)
{
	static const uint8_t u[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
				      0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	struct {
		struct pv v;
		const char *want;
	} cases[] = {
		{pv_str("text"), "'text'"},
		{pv_str("it's"), "'it\\'s'"},
		{pv_strn("a\0\n\xff", 4), "'a\\x00\\x0a\\xff'"},
		{pv_int32(10), "10"},
		{pv_int64(-7), "-7"},
		{pv_uint64(UINT64_MAX), "18446744073709551615"},
		{pv_double(1.5), "1.5"},
		{pv_double(0.1), "0.1"},
		{pv_float(0.1f), "0.1"},
		{pv_double(NAN), "NaN"},
		{pv_double(-0.0), "-0"},
		{pv_double(1.0), "1"},
		{pv_double(1e300), "1e+300"},
		{pv_double(-INFINITY), "-Infinity"},
		{pv_float(INFINITY), "Infinity"},
		{pv_float(16777216.0f), "16777216"},
		{pv_str("back\\slash"), "'back\\\\slash'"},
		{pv_bool(true), "true"},
		{pv_bool(false), "false"},
		{pv_null(), "NULL"},
		{pv_uuid(u), "123e4567-e89b-12d3-a456-426614174000"},
		{pv_timestamp(5), "ts(5µs)"},
		{pv_column(3), "col(3)"},
		{pv_liveness(), "syscol(0)"},
		{pv_array_index(5), "idx(5)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct buf b = BUF_INIT;
		pv_format(&b, &cases[i].v);
		CHECK_EQ_STR(buf_cstr(&b), cases[i].want);
		buf_free(&b);
	}
}

TEST_MAIN(T(string_examples), T(integer_examples), T(float_examples), T(other_examples),
	  T(uuid_examples), T(uuid_comparable_bijection), T(roundtrip_every_type),
	  T(decoded_strings_live_in_arena), T(docht_examples), T(docht_roundtrip),
	  T(docht_corrupt), T(full_key_example), T(full_key_decode), T(dockey_shapes),
	  T(subdockey_paths), T(key_split_ht_rejects), T(truncated_keys_fail),
	  T(garbage_never_crashes), T(pv_format_forms), T(float_noncanonical_nan_is_corrupt))
