/* Value encoding (docdb-format.md §5): control fields, markers, value-side
 * primitives, and clean failures on malformed values. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "common/buf.h"
#include "docdb/value.h"
#include "docraft/error.h"

static void check_value_bytes(const char *file, int line, const struct docvalue *v,
			      const uint8_t *want, size_t n)
{
	struct buf b = BUF_INIT;
	value_append(&b, v);
	if (b.len != n || memcmp(b.data, want, n) != 0)
		test_fail_mem(file, line, "value_append", b.data, b.len, want, n);
	buf_free(&b);
}

#define CHECK_VALUE_BYTES(v, ...)                                             \
	do {                                                                  \
		static const uint8_t want_[] = {__VA_ARGS__};                 \
		struct docvalue dv_ = (v);                                    \
		check_value_bytes(__FILE__, __LINE__, &dv_, want_, sizeof want_); \
	} while (0)

static struct docvalue with_ttl(struct docvalue v, int64_t ms)
{
	v.has_ttl = true;
	v.ttl_ms = ms;
	return v;
}

TEST(ttl_examples)
{
	/* USING TTL 3600 -> 't' F0 36 EE 80, then the value. */
	CHECK_VALUE_BYTES(with_ttl(docvalue_of(pv_int32(5)), 3600 * 1000), 't', 0xF0, 0x36, 0xEE,
			  0x80, 'H', 0, 0, 0, 5);
	/* TTL 0 means "never expires": 't' 80. */
	CHECK_VALUE_BYTES(with_ttl(docvalue_of(pv_str("x")), 0), 't', 0x80, 'S', 'x');
}

TEST(primitive_examples)
{
	static const uint8_t u[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3,
				      0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	CHECK_VALUE_BYTES(docvalue_of(pv_null()), '$');
	CHECK_VALUE_BYTES(docvalue_of(pv_bool(true)), 'T');
	CHECK_VALUE_BYTES(docvalue_of(pv_bool(false)), 'F');
	/* Plain two's complement on the value side, no sign flip. */
	CHECK_VALUE_BYTES(docvalue_of(pv_int32(-1)), 'H', 0xFF, 0xFF, 0xFF, 0xFF);
	CHECK_VALUE_BYTES(docvalue_of(pv_int32(3)), 'H', 0x00, 0x00, 0x00, 0x03);
	CHECK_VALUE_BYTES(docvalue_of(pv_int64(-2)), 'I', 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
			  0xFE);
	CHECK_VALUE_BYTES(docvalue_of(pv_uint32(7)), 'O', 0, 0, 0, 7);
	CHECK_VALUE_BYTES(docvalue_of(pv_uint64(7)), 'U', 0, 0, 0, 0, 0, 0, 0, 7);
	CHECK_VALUE_BYTES(docvalue_of(pv_float(1.0f)), 'C', 0x3F, 0x80, 0, 0);
	CHECK_VALUE_BYTES(docvalue_of(pv_double(1.0)), 'D', 0x3F, 0xF0, 0, 0, 0, 0, 0, 0);
	CHECK_VALUE_BYTES(docvalue_of(pv_double(-__builtin_nan("0x9"))), 'D', 0x7F, 0xF8, 0, 0, 0,
			  0, 0, 0);
	CHECK_VALUE_BYTES(docvalue_of(pv_float(NAN)), 'C', 0x7F, 0xC0, 0, 0);
	/* Strings are raw to the end of the value: no escaping, no terminator. */
	CHECK_VALUE_BYTES(docvalue_of(pv_strn("a\0b", 3)), 'S', 'a', 0, 'b');
	CHECK_VALUE_BYTES(docvalue_of(pv_str("")), 'S');
	CHECK_VALUE_BYTES(docvalue_of(pv_timestamp(1)), 's', 0, 0, 0, 0, 0, 0, 0, 1);
	/* The comparable uuid form, unescaped (here it has a 00 byte). */
	CHECK_VALUE_BYTES(docvalue_of(pv_uuid(u)), '_', 0x41, 0x23, 0xe4, 0x56, 0x7e, 0x89, 0xb2,
			  0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00);
	/* The direction flag of a key pv is irrelevant on the value side. */
	CHECK_VALUE_BYTES(docvalue_of(pv_desc(pv_int32(3))), 'H', 0x00, 0x00, 0x00, 0x03);
}

TEST(marker_examples)
{
	uint8_t packed[] = {1, 2, 3, 0};
	struct docvalue pr = docvalue_kind(VAL_PACKED_ROW);
	CHECK_VALUE_BYTES(docvalue_kind(VAL_TOMBSTONE), 'X');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_OBJECT), '{');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_ARRAY), 'A');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_REDIS_SET), '(');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_REDIS_LIST), ')');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_REDIS_TS), '+');
	CHECK_VALUE_BYTES(docvalue_kind(VAL_REDIS_SORTED_SET), ',');
	pr.packed = packed;
	pr.packed_len = sizeof packed;
	CHECK_VALUE_BYTES(pr, 'z', 1, 2, 3, 0);
	pr.packed_len = 0;
	CHECK_VALUE_BYTES(pr, 'z');
}

TEST(control_field_order)
{
	struct docvalue v = docvalue_of(pv_null());
	v.merge_flags = 1;
	v.has_ttl = true;
	v.ttl_ms = 1;
	v.has_user_ts = true;
	v.user_ts = 0x0102030405060708;
	CHECK_VALUE_BYTES(v, 'k', 0x01, 't', 0x81, 'u', 1, 2, 3, 4, 5, 6, 7, 8, '$');
	/* Only the fields that are set. */
	v.has_ttl = false;
	CHECK_VALUE_BYTES(v, 'k', 0x01, 'u', 1, 2, 3, 4, 5, 6, 7, 8, '$');
	v.merge_flags = 0;
	CHECK_VALUE_BYTES(v, 'u', 1, 2, 3, 4, 5, 6, 7, 8, '$');
	v = docvalue_kind(VAL_TOMBSTONE);
	v.merge_flags = 300;
	CHECK_VALUE_BYTES(v, 'k', 0x81, 0x2C, 'X');
}

static bool same_pv(const struct pv *a, const struct pv *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == PV_FLOAT)
		return pv_float_bits(a->v.f) == pv_float_bits(b->v.f);
	if (a->type == PV_DOUBLE)
		return pv_double_bits(a->v.d) == pv_double_bits(b->v.d);
	return pv_equal(a, b);
}

/* Encodes v, decodes an exact-size copy, and compares every field. */
static void roundtrip(const char *file, int line, const struct docvalue *v)
{
	struct buf b = BUF_INIT;
	struct docvalue got;
	uint8_t *copy;
	int rv;
	value_append(&b, v);
	copy = malloc(b.len);
	memcpy(copy, b.data, b.len);
	rv = value_decode(copy, b.len, &got);
	if (rv != 0) {
		test_note("decode returned %d", rv);
		test_fail_mem(file, line, "value", copy, b.len, copy, b.len);
	}
	if (got.kind != v->kind || got.merge_flags != v->merge_flags ||
	    got.has_ttl != v->has_ttl || got.has_user_ts != v->has_user_ts ||
	    (v->has_ttl && got.ttl_ms != v->ttl_ms) ||
	    (v->has_user_ts && got.user_ts != v->user_ts))
		test_fail(file, line, "control fields or kind differ");
	if (v->kind == VAL_PRIMITIVE && !same_pv(&got.prim, &v->prim)) {
		struct buf f = BUF_INIT, g = BUF_INIT;
		pv_format(&f, &v->prim);
		pv_format(&g, &got.prim);
		test_fail(file, line, "%s != %s", buf_cstr(&f), buf_cstr(&g));
	}
	if (v->kind == VAL_PRIMITIVE && v->prim.type == PV_STRING && v->prim.v.s.len > 0)
		if (got.prim.v.s.p < copy || got.prim.v.s.p >= copy + b.len)
			test_fail(file, line, "string does not borrow from the input");
	if (v->kind == VAL_PACKED_ROW) {
		if (got.packed_len != v->packed_len ||
		    (v->packed_len && memcmp(got.packed, v->packed, v->packed_len) != 0))
			test_fail(file, line, "packed payload differs");
		if (got.packed != copy + b.len - v->packed_len)
			test_fail(file, line, "packed payload does not borrow from the input");
	}
	/* value_decode_pv of the bare primitive. */
	if (v->kind == VAL_PRIMITIVE) {
		struct pv p;
		size_t off;
		struct buf bare = BUF_INIT;
		value_append_pv(&bare, &v->prim);
		off = b.len - bare.len;
		CHECK_EQ_MEM(b.data + off, bare.len, bare.data, bare.len);
		CHECK_OK(value_decode_pv(copy + off, bare.len, &p));
		CHECK(same_pv(&p, &got.prim));
		buf_free(&bare);
	}
	free(copy);
	buf_free(&b);
}

TEST(roundtrip_every_kind_and_control)
{
	static const uint8_t u1[16] = {0xc2, 0x32, 0xab, 0x00, 0x94, 0x14, 0x11, 0xec,
				       0xb3, 0xc8, 0x9f, 0x6b, 0xde, 0xce, 0xd8, 0x46};
	static const uint8_t u4[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3,
				       0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	static const uint8_t packed[] = {0, 'z', 'X', 0xFF};
	struct pv prims[] = {
		pv_null(), pv_bool(true), pv_bool(false), pv_int32(0), pv_int32(INT32_MIN),
		pv_int32(INT32_MAX), pv_int64(INT64_MIN), pv_int64(INT64_MAX), pv_uint32(UINT32_MAX),
		pv_uint64(UINT64_MAX), pv_float(-0.0f), pv_float(INFINITY), pv_float(NAN),
		pv_double(-0.0), pv_double(1e-310), pv_double(NAN), pv_str(""), pv_str("hello"),
		pv_strn("\0\xFF\0", 3), pv_strn("X", 1), pv_timestamp(-1), pv_timestamp(INT64_MAX),
		pv_uuid(u1), pv_uuid(u4),
	};
	const size_t n_prims = sizeof prims / sizeof prims[0];
	const int64_t ttls[] = {0, 1, 3600000, -1, INT64_MAX, INT64_MIN};
	const int64_t uts[] = {0, 1, -1, INT64_MIN, INT64_MAX, 1581475435181551};
	const uint64_t flags[] = {0, 1, 127, 128, UINT64_MAX};
	size_t count = 0;

	for (size_t k = VAL_PRIMITIVE; k <= VAL_PACKED_ROW; k++) {
		size_t nv = k == VAL_PRIMITIVE ? n_prims : 1;
		for (size_t i = 0; i < nv; i++) {
			for (unsigned mask = 0; mask < 8; mask++) {
				struct docvalue v = docvalue_kind((enum val_kind)k);
				if (k == VAL_PRIMITIVE)
					v.prim = prims[i];
				if (k == VAL_PACKED_ROW) {
					v.packed = packed;
					v.packed_len = (mask + i) % (sizeof packed + 1);
				}
				if (mask & 1)
					v.merge_flags = flags[(i + mask) % 4 + 1];
				if (mask & 2) {
					v.has_ttl = true;
					v.ttl_ms = ttls[(i + mask) % 6];
				}
				if (mask & 4) {
					v.has_user_ts = true;
					v.user_ts = uts[(i + mask) % 6];
				}
				roundtrip(__FILE__, __LINE__, &v);
				count++;
			}
		}
	}
	test_note("%zu value round trips", count);
}

TEST(roundtrip_random)
{
	uint64_t seed = test_seed();
	uint8_t s[64];
	for (int i = 0; i < 100000; i++) {
		uint64_t r = test_rand(&seed), x = test_rand(&seed);
		struct docvalue v = docvalue_kind((enum val_kind)(r % (VAL_PACKED_ROW + 1)));
		for (size_t k = 0; k < sizeof s; k++)
			s[k] = (uint8_t)test_rand(&seed);
		if (v.kind == VAL_PRIMITIVE) {
			switch ((r >> 8) % 11) {
			case 0: v.prim = pv_null(); break;
			case 1: v.prim = pv_bool(x & 1); break;
			case 2: v.prim = pv_int32((int32_t)x); break;
			case 3: v.prim = pv_int64((int64_t)x); break;
			case 4: v.prim = pv_uint32((uint32_t)x); break;
			case 5: v.prim = pv_uint64(x); break;
			case 6: { float f; uint32_t b = (uint32_t)x; memcpy(&f, &b, 4); v.prim = pv_float(f); break; }
			case 7: { double d; memcpy(&d, &x, 8); v.prim = pv_double(d); break; }
			case 8: v.prim = pv_strn(s, x % sizeof s); break;
			case 9: v.prim = pv_timestamp((int64_t)x); break;
			default: v.prim = pv_uuid(s); break;
			}
		} else if (v.kind == VAL_PACKED_ROW) {
			v.packed = s;
			v.packed_len = x % sizeof s;
		}
		if (r & (1 << 20))
			v.merge_flags = test_rand(&seed) >> (r % 64);
		if (r & (1 << 21)) {
			v.has_ttl = true;
			v.ttl_ms = (int64_t)(test_rand(&seed) >> (r % 64));
		}
		if (r & (1 << 22)) {
			v.has_user_ts = true;
			v.user_ts = (int64_t)test_rand(&seed);
		}
		roundtrip(__FILE__, __LINE__, &v);
	}
}

static int decode_copy(const void *p, size_t n)
{
	uint8_t *c = calloc(1, n ? n : 1);
	struct docvalue v;
	int rv;
	memcpy(c, p, n);
	rv = value_decode(c, n, &v);
	free(c);
	return rv;
}

#define CHECK_CORRUPT(...)                                                    \
	do {                                                                  \
		static const uint8_t in_[] = {__VA_ARGS__};                   \
		CHECK_EQ_INT(decode_copy(in_, sizeof in_), DOCRAFT_ECORRUPT); \
	} while (0)

TEST(malformed_values)
{
	CHECK_EQ_INT(decode_copy("", 0), DOCRAFT_ECORRUPT);
	/* Control fields with nothing after them, or truncated. */
	CHECK_CORRUPT('t', 0x80);
	CHECK_CORRUPT('t');
	CHECK_CORRUPT('t', 0xF0, 0x36);
	CHECK_CORRUPT('k');
	CHECK_CORRUPT('k', 0x01);
	CHECK_CORRUPT('u', 1, 2, 3);
	CHECK_CORRUPT('u', 1, 2, 3, 4, 5, 6, 7, 8);
	/* Control fields out of order: 't' before 'k', 'u' before 't'. */
	CHECK_CORRUPT('t', 0x80, 'k', 0x01, '$');
	CHECK_CORRUPT('u', 0, 0, 0, 0, 0, 0, 0, 0, 't', 0x80, '$');
	CHECK_CORRUPT('t', 0x80, 't', 0x80, '$');
	/* Wrong payload sizes. */
	CHECK_CORRUPT('H', 0, 0, 0);
	CHECK_CORRUPT('H', 0, 0, 0, 0, 0);
	CHECK_CORRUPT('I', 0, 0, 0, 0, 0, 0, 0);
	CHECK_CORRUPT('D', 0, 0, 0, 0, 0, 0, 0, 0, 0);
	CHECK_CORRUPT('C', 0);
	CHECK_CORRUPT('O', 0, 0);
	CHECK_CORRUPT('U');
	CHECK_CORRUPT('s', 1);
	CHECK_CORRUPT('_', 1, 2, 3);
	CHECK_CORRUPT('$', 0);
	CHECK_CORRUPT('T', 'T');
	/* Markers are the whole value. */
	CHECK_CORRUPT('X', 0);
	CHECK_CORRUPT('{', '{');
	/* Unknown or key-only type bytes. */
	CHECK_CORRUPT('K', 0x80);
	CHECK_CORRUPT('[', 0, 0, 0, 0, 0, 0, 0, 0);
	CHECK_CORRUPT('!');
	CHECK_CORRUPT(0x00);
	CHECK_CORRUPT(0xFF);
	CHECK_CORRUPT('a', 0xFF, 0xFF);
	{
		struct pv p;
		CHECK_EQ_INT(value_decode_pv((const uint8_t *)"", 0, &p), DOCRAFT_ECORRUPT);
		CHECK_EQ_INT(value_decode_pv((const uint8_t *)"X", 1, &p), DOCRAFT_ECORRUPT);
		CHECK_EQ_INT(value_decode_pv((const uint8_t *)"z", 1, &p), DOCRAFT_ECORRUPT);
	}
}

TEST(truncations_and_garbage)
{
	uint64_t seed = test_seed();
	struct buf b = BUF_INIT;
	struct docvalue v = docvalue_of(pv_int64(42));
	uint8_t in[40];
	v.merge_flags = 1;
	v.has_ttl = true;
	v.ttl_ms = 3600000;
	v.has_user_ts = true;
	v.user_ts = 99;
	value_append(&b, &v);
	/* Every strict prefix fails: each cut lands inside a control field or
	 * leaves a fixed-size payload short. */
	for (size_t n = 0; n < b.len; n++)
		CHECK_EQ_INT(decode_copy(b.data, n), DOCRAFT_ECORRUPT);
	CHECK_OK(decode_copy(b.data, b.len));
	/* Random bytes: decode or fail cleanly, never read outside. */
	for (int i = 0; i < 300000; i++) {
		static const uint8_t alpha[] = {'k', 't', 'u', 'X', '{', 'z', 'S', 'H', 'I', 'D',
						'_', '$', 0x80, 0xFF, 0x00, 0x7E};
		size_t n = test_rand(&seed) % sizeof in;
		int rv;
		for (size_t k = 0; k < n; k++) {
			uint64_t r = test_rand(&seed);
			in[k] = r & 1 ? alpha[(r >> 1) % sizeof alpha] : (uint8_t)(r >> 8);
		}
		rv = decode_copy(in, n);
		CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
		if (rv == 0) {
			/* What decodes re-encodes to the same bytes, unless it
			 * used a non-minimal varint or an explicit 'k' 00. */
			struct docvalue d;
			struct buf re = BUF_INIT;
			CHECK_OK(value_decode(in, n, &d));
			value_append(&re, &d);
			if (re.len == n && memcmp(re.data, in, n) != 0) {
				/* Only NaN payloads may be canonicalized, and a
				 * TTL written as "minus zero" (7F) reads as 0. */
				CHECK((d.kind == VAL_PRIMITIVE &&
				       (d.prim.type == PV_FLOAT || d.prim.type == PV_DOUBLE)) ||
				      (d.has_ttl && d.ttl_ms == 0));
			}
			buf_free(&re);
		}
	}
	buf_free(&b);
}

TEST_MAIN(T(ttl_examples), T(primitive_examples), T(marker_examples), T(control_field_order),
	  T(roundtrip_every_kind_and_control), T(roundtrip_random), T(malformed_values),
	  T(truncations_and_garbage))
