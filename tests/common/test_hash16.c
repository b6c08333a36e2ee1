/* The 16-bit partition hash (docdb-format.md §4): every test vector of the
 * §4.2 table, over raw bytes and through key_hash_components, and the §4.3
 * tablet split points. */
#include "test.h"

#include "common/hash16.h"
#include "docdb/key.h"

struct vector {
	const char *name;
	uint8_t bytes[16];
	size_t len;
	uint16_t want;
};

/* Raw hash inputs (§4.1): BE integers, canonical IEEE bits, text bytes. */
static const struct vector vectors[] = {
	{"int4 1", {0, 0, 0, 1}, 4, 4624},
	{"int4 2", {0, 0, 0, 2}, 4, 49348},
	{"int4 3", {0, 0, 0, 3}, 4, 64672},
	{"int4 4", {0, 0, 0, 4}, 4, 40623},
	{"int4 3381", {0, 0, 0x0D, 0x35}, 4, 10427},
	{"(1, 2, 3) int4", {0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}, 12, 57262},
	{"(1, 2, 'abc')", {0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b', 'c'}, 11, 33808},
	{"text '800001'", {'8', '0', '0', '0', '0', '1'}, 6, 39633},
	{"text '800018'", {'8', '0', '0', '0', '1', '8'}, 6, 887},
	{"smallint 1", {0, 1}, 2, 13059},
	{"smallint 4", {0, 4}, 2, 1049},
	{"double 1.0", {0x3F, 0xF0, 0, 0, 0, 0, 0, 0}, 8, 4391},
	{"double 19.0", {0x40, 0x33, 0, 0, 0, 0, 0, 0}, 8, 1454},
	{"real 1.0", {0x3F, 0x80, 0, 0}, 4, 1462},
};

TEST(raw_vectors)
{
	for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
		const struct vector *v = &vectors[i];
		uint16_t h = hash16(v->bytes, v->len);
		CHECK_MSG(h == v->want, "%s: got %u, want %u", v->name, h, v->want);
		CHECK_EQ_INT(hash16_fold(hash_jenkins64(v->bytes, v->len, HASH16_SEED)), v->want);
	}
}

TEST(int3_is_fca0)
{
	struct pv v = pv_int32(3);
	CHECK_EQ_INT(key_hash_components(&v, 1), 0xFCA0);
}

TEST(component_vectors)
{
	struct pv one[1];
	struct pv three[3];

	one[0] = pv_int32(1);
	CHECK_EQ_INT(key_hash_components(one, 1), 4624);
	one[0] = pv_int32(2);
	CHECK_EQ_INT(key_hash_components(one, 1), 49348);
	one[0] = pv_int32(4);
	CHECK_EQ_INT(key_hash_components(one, 1), 40623);
	one[0] = pv_int32(3381);
	CHECK_EQ_INT(key_hash_components(one, 1), 10427);

	three[0] = pv_int32(1);
	three[1] = pv_int32(2);
	three[2] = pv_int32(3);
	CHECK_EQ_INT(key_hash_components(three, 3), 57262);
	three[2] = pv_str("abc");
	CHECK_EQ_INT(key_hash_components(three, 3), 33808);

	one[0] = pv_str("800001");
	CHECK_EQ_INT(key_hash_components(one, 1), 39633);
	one[0] = pv_str("800018");
	CHECK_EQ_INT(key_hash_components(one, 1), 887);
	one[0] = pv_double(1.0);
	CHECK_EQ_INT(key_hash_components(one, 1), 4391);
	one[0] = pv_double(19.0);
	CHECK_EQ_INT(key_hash_components(one, 1), 1454);
	one[0] = pv_float(1.0f);
	CHECK_EQ_INT(key_hash_components(one, 1), 1462);
	/* The direction of a component does not change its hash input. */
	one[0] = pv_desc(pv_int32(3));
	CHECK_EQ_INT(key_hash_components(one, 1), 64672);
}

TEST(component_encodings)
{
	/* Each pv type hashes the raw bytes of §4.1. */
	uint8_t u[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
			 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	uint8_t be8[8] = {0x80, 0, 0, 0, 0, 0, 0, 5};
	uint8_t be4[4] = {0xFF, 0xFF, 0xFF, 0xFE};
	uint8_t t = 1, f = 0;
	uint8_t nan[8] = {0x7F, 0xF8, 0, 0, 0, 0, 0, 0};
	uint8_t fnan[4] = {0x7F, 0xC0, 0, 0};
	uint8_t negz[8] = {0x80, 0, 0, 0, 0, 0, 0, 0};
	struct pv v;

	v = pv_uuid(u);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(u, 16));
	v = pv_int64((int64_t)(UINT64_C(0x8000000000000005)));
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(be8, 8));
	v = pv_timestamp((int64_t)(UINT64_C(0x8000000000000005)));
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(be8, 8));
	v = pv_uint64(UINT64_C(0x8000000000000005));
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(be8, 8));
	v = pv_int32(-2);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(be4, 4));
	v = pv_uint32(0xFFFFFFFEu);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(be4, 4));
	v = pv_bool(true);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(&t, 1));
	v = pv_bool(false);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(&f, 1));
	/* Any NaN hashes as the canonical quiet NaN; -0.0 is not canonicalized. */
	v = pv_double(-__builtin_nan("0x123"));
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(nan, 8));
	v = pv_float(__builtin_nanf("7"));
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(fnan, 4));
	v = pv_double(-0.0);
	CHECK_EQ_INT(key_hash_components(&v, 1), hash16(negz, 8));
	/* Zero components: the hash of the empty input. */
	CHECK_EQ_INT(key_hash_components(NULL, 0), hash16("", 0));
}

TEST(long_strings_and_streaming)
{
	/* Strings crossing the 24-byte block boundary, split over components:
	 * the hash of a concatenation does not depend on where it is split. */
	uint8_t data[200];
	uint64_t seed = test_seed();
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)test_rand(&seed);
	for (size_t n = 0; n <= sizeof data; n++) {
		uint16_t whole = hash16(data, n);
		for (size_t cut = 0; cut <= n; cut += 1 + n / 7) {
			struct pv parts[2] = {pv_strn(data, cut), pv_strn(data + cut, n - cut)};
			struct hash_jenkins64_state st;
			CHECK_EQ_INT(key_hash_components(parts, 2), whole);
			hash_jenkins64_init(&st, HASH16_SEED);
			for (size_t i = 0; i < n; i += 5)
				hash_jenkins64_update(&st, data + i, n - i < 5 ? n - i : 5);
			CHECK_EQ_U64(hash_jenkins64_final(&st), hash_jenkins64(data, n, HASH16_SEED));
		}
	}
}

TEST(fold)
{
	CHECK_EQ_INT(hash16_fold(0), 0);
	CHECK_EQ_INT(hash16_fold(1), 7);
	CHECK_EQ_INT(hash16_fold(UINT64_C(1) << 16), 5);
	CHECK_EQ_INT(hash16_fold(UINT64_C(1) << 32), 3);
	CHECK_EQ_INT(hash16_fold(UINT64_C(1) << 48), 1);
	/* 3*(h>>32) and 5*(h>>16) carry into the upper bits before masking. */
	CHECK_EQ_INT(hash16_fold(UINT64_C(0xFFFFFFFFFFFFFFFF)),
		     (0xFFFF ^ 3 * UINT64_C(0xFFFFFFFF) ^ 5 * UINT64_C(0xFFFFFFFFFFFF) ^
		      7 * UINT64_C(0xFFFF)) & 0xFFFF);
}

TEST(partition_starts)
{
	CHECK_EQ_INT(hash16_partition_start(0, 1), 0);
	CHECK_EQ_INT(hash16_partition_start(0, 2), 0x0000);
	CHECK_EQ_INT(hash16_partition_start(1, 2), 0x8000);
	CHECK_EQ_INT(hash16_partition_start(0, 3), 0x0000);
	CHECK_EQ_INT(hash16_partition_start(1, 3), 0x5555);
	CHECK_EQ_INT(hash16_partition_start(2, 3), 0xAAAA);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ_INT(hash16_partition_start(i, 4), i * 0x4000);
	for (uint32_t i = 0; i < 16; i++)
		CHECK_EQ_INT(hash16_partition_start(i, 16), i * 0x1000);
	/* Every N up to the maximum: strictly increasing starts from 0. */
	for (uint32_t n = 1; n <= 65535; n += n < 300 ? 1 : 997) {
		CHECK_EQ_INT(hash16_partition_start(0, n), 0);
		for (uint32_t i = 1; i < n; i++)
			CHECK(hash16_partition_start(i, n) > hash16_partition_start(i - 1, n));
	}
	CHECK_EQ_INT(hash16_partition_start(65534, 65535), 65534);
}

TEST_MAIN(T(raw_vectors), T(int3_is_fca0), T(component_vectors), T(component_encodings),
	  T(long_strings_and_streaming), T(fold), T(partition_starts))
