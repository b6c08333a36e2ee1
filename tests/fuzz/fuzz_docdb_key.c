/* libFuzzer target: DocDB key decoding (src/docdb/key.c, varint.c), which
 * reads keys from RocksDB, from Raft entries (batches, condition blobs) and
 * from clients (paging states).
 *
 * Input: byte 0 picks how the rest is read (it is also always read as a
 * stored key):
 *   0  a sequence of key components (key_decode_pv / key_skip_pv)
 *   1  a DocKey (dockey_decode / dockey_prefix_len)
 *   2  a DocHybridTime of the whole length (docht_decode)
 *   3  a sequence of svarints, 4: of uvarints
 * Checks, beyond "no crash, no leak, no UB":
 *  - what decodes re-encodes to exactly the bytes it was decoded from
 *    (components, DocKeys, varints): one encoding per value, which the
 *    memcmp order of keys depends on; a DocHybridTime decodes back to
 *    itself after docht_append;
 *  - key_skip_pv advances exactly as key_decode_pv, dockey_prefix_len
 *    agrees with dockey_decode, key_split_ht with subdockey_decode. */
#include "fuzz.h"

#include "common/arena.h"
#include "docdb/key.h"
#include "docdb/varint.h"
#include "docraft/error.h"

static void components(const uint8_t *p, const uint8_t *end, struct arena *a)
{
	struct buf enc = BUF_INIT, text = BUF_INIT;
	while (p < end) {
		const uint8_t *start = p, *q = p;
		struct pv v;
		int rv = key_decode_pv(&p, end, &v, a);
		int rs = key_skip_pv(&q, end);
		FUZZ_CHECK((rv == 0) == (rs == 0));
		if (rv != 0) {
			FUZZ_CHECK(p == start);
			break;
		}
		FUZZ_CHECK(p > start && p <= end && q == p);
		buf_reset(&enc);
		key_append_pv(&enc, &v);
		FUZZ_CHECK(enc.len == (size_t)(p - start) && memcmp(enc.data, start, enc.len) == 0);
		buf_reset(&text);
		pv_format(&text, &v);
	}
	buf_free(&enc);
	buf_free(&text);
}

static void dockey(const uint8_t *data, size_t size, struct arena *a)
{
	const uint8_t *p = data;
	struct dockey k;
	size_t n = dockey_prefix_len(data, size);
	int rv = dockey_decode(&p, data + size, &k, a);
	FUZZ_CHECK((rv == 0) == (n > 0));
	if (rv == 0) {
		struct buf enc = BUF_INIT;
		FUZZ_CHECK((size_t)(p - data) == n);
		dockey_append(&enc, &k);
		FUZZ_CHECK(enc.len == n && memcmp(enc.data, data, n) == 0);
		/* Callers hash only schema-checked values; a DocKey may hold
		 * key-only types (column ids, array indexes), which they never
		 * pass (key_hash_components' precondition). */
		bool hashable = true;
		for (size_t i = 0; i < k.n_hashed; i++)
			hashable = hashable && k.hashed[i].type < PV_COLUMN_ID;
		if (k.has_hash && hashable)
			(void)key_hash_components(k.hashed, k.n_hashed);
		buf_free(&enc);
	}
}

static void docht(const uint8_t *data, size_t size)
{
	struct docht d, d2;
	if (docht_decode(data, size, &d) == 0) {
		struct buf enc = BUF_INIT;
		FUZZ_CHECK(size <= DOCHT_MAX_LEN);
		docht_append(&enc, d);
		FUZZ_CHECK(docht_decode(enc.data, enc.len, &d2) == 0 && docht_compare(d, d2) == 0);
		buf_free(&enc);
	}
}

static void varints(const uint8_t *p, const uint8_t *end, bool sign)
{
	struct buf enc = BUF_INIT;
	while (p < end) {
		const uint8_t *start = p;
		int64_t s;
		uint64_t u;
		int rv = sign ? svarint_decode(&p, end, &s) : uvarint_decode(&p, end, &u);
		if (rv != 0)
			break;
		FUZZ_CHECK(p > start && p <= end);
		buf_reset(&enc);
		if (sign)
			svarint_append(&enc, s);
		else
			uvarint_append(&enc, u);
		FUZZ_CHECK(enc.len == (size_t)(p - start) && memcmp(enc.data, start, enc.len) == 0);
	}
	buf_free(&enc);
}

static void stored_key(const uint8_t *data, size_t size, struct arena *a)
{
	struct subdockey sk;
	size_t path_len;
	struct docht d;
	if (subdockey_decode(data, size, &sk, a) != 0)
		return;
	FUZZ_CHECK(sk.n_subkeys == 0 || sk.subkeys != NULL);
	if (sk.has_ht) {
		FUZZ_CHECK(key_split_ht(data, size, &path_len, &d) == 0);
		FUZZ_CHECK(docht_compare(d, sk.ht) == 0 && path_len < size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena a = ARENA_INIT;
	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0:
		components(data + 1, data + size, &a);
		break;
	case 1:
		dockey(data + 1, size - 1, &a);
		break;
	case 2:
		docht(data + 1, size - 1);
		break;
	default:
		varints(data + 1, data + size, data[0] % 5 == 3);
		break;
	}
	stored_key(data + 1, size - 1, &a);
	arena_free(&a);
	return 0;
}

static void seed_key(const char *name, uint8_t mode, const struct buf *b)
{
	struct buf s = BUF_INIT;
	buf_push(&s, mode);
	buf_append(&s, b->data, b->len);
	seed_buf(name, &s);
	buf_free(&s);
}

static void fuzz_seeds(void)
{
	static const uint8_t uuid[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
					 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	struct pv all[] = {
		pv_null(), pv_bool(true), pv_int32(-5), pv_int64(INT64_MIN), pv_uint32(7),
		pv_uint64(UINT64_MAX), pv_float(1.5f), pv_double(-0.0), pv_strn("a\0b", 3),
		pv_timestamp(1700000000000000), pv_uuid(uuid), pv_column(3),
		pv_system_column(0), pv_array_index(-2),
	};
	size_t n = sizeof all / sizeof all[0];
	struct buf b = BUF_INIT;
	struct pv hashed[2] = {pv_int64(7), pv_str("k")};
	struct pv range[2] = {pv_desc(pv_str("r")), pv_timestamp(5)};
	struct dockey k = {true, key_hash_components(hashed, 2), 2, 2, hashed, range};
	struct docht d = {0x5f00000000000ull, 3};

	for (size_t i = 0; i < n; i++) {
		key_append_pv(&b, &all[i]);
		if (all[i].type < PV_COLUMN_ID) {
			struct pv v = pv_desc(all[i]);
			key_append_pv(&b, &v);
		}
	}
	seed_key("components", 0, &b);
	buf_reset(&b);
	dockey_append(&b, &k);
	seed_key("dockey", 1, &b);
	{
		struct pv col = pv_column(4), idx = pv_array_index(9);
		key_append_pv(&b, &col);
		key_append_pv(&b, &idx);
		buf_push(&b, KT_HYBRID_TIME);
		docht_append(&b, d);
		seed_key("stored-key", 1, &b);
	}
	buf_reset(&b);
	docht_append(&b, d);
	seed_key("docht", 2, &b);
	buf_reset(&b);
	svarint_append(&b, -1);
	svarint_append(&b, INT64_MAX);
	svarint_append(&b, 300);
	seed_key("svarints", 3, &b);
	buf_reset(&b);
	uvarint_append(&b, 0);
	uvarint_append(&b, UINT64_MAX);
	uvarint_append(&b, 70000);
	seed_key("uvarints", 4, &b);
	buf_free(&b);
}
