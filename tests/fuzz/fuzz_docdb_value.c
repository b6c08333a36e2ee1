/* libFuzzer target: DocDB value decoding (src/docdb/value.c, packed.c,
 * pv.c), which reads values from RocksDB and from Raft entries (batches,
 * condition blobs).
 *
 * Input: a stored value. It is decoded as a whole value (value_decode), as a
 * value-side primitive (value_decode_pv) and, when it is a packed row ('z'),
 * its payload is parsed against a schema with three versions
 * (packed_parse_schema) and with every column count 0..8 (packed_parse).
 * Checks, beyond "no crash, no leak, no UB":
 *  - a decoded value re-encodes (value_append) to bytes that decode to the
 *    same value, and to the very same bytes unless it has an explicit 'k' 00
 *    or is a NaN (written back canonical);
 *  - every column of a parsed packed row lies inside the payload and is a
 *    non-NULL primitive without merge flags, or NULL; its size
 *    (packed_value_size) is at most the size of its bytes;
 *  - pv_format prints every primitive. */
#include "fuzz.h"

#include "docdb/packed.h"
#include "docdb/schema.h"
#include "docdb/value.h"
#include "docraft/error.h"

static struct schema schema;

static void check_pv(const struct pv *v)
{
	struct buf text = BUF_INIT;
	pv_format(&text, v);
	FUZZ_CHECK(text.len > 0);
	buf_free(&text);
}

static bool same_value(const struct docvalue *a, const struct docvalue *b)
{
	if (a->kind != b->kind || a->has_ttl != b->has_ttl || a->has_user_ts != b->has_user_ts ||
	    a->merge_flags != b->merge_flags)
		return false;
	if ((a->has_ttl && a->ttl_ms != b->ttl_ms) || (a->has_user_ts && a->user_ts != b->user_ts))
		return false;
	if (a->kind == VAL_PACKED_ROW)
		return a->packed_len == b->packed_len &&
		       memcmp(a->packed, b->packed, a->packed_len) == 0;
	if (a->kind == VAL_PRIMITIVE)
		return pv_equal(&a->prim, &b->prim);
	return true;
}

static bool is_nan(const struct docvalue *v)
{
	return v->kind == VAL_PRIMITIVE &&
	       ((v->prim.type == PV_FLOAT && v->prim.v.f != v->prim.v.f) ||
		(v->prim.type == PV_DOUBLE && v->prim.v.d != v->prim.v.d));
}

static void check_packed(const struct packed_row *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct docvalue c;
		bool is_null;
		uint32_t start = i == 0 ? 0 : le32_load(r->offsets + 4 * (i - 1));
		uint32_t end = le32_load(r->offsets + 4 * i);
		FUZZ_CHECK(start <= end && end <= r->data_len);
		if (packed_column(r, i, &c, &is_null) != 0)
			continue;
		if (is_null) {
			FUZZ_CHECK(start == end);
			continue;
		}
		FUZZ_CHECK(c.kind == VAL_PRIMITIVE && c.prim.type != PV_NULL && c.merge_flags == 0);
		/* Larger only by an explicit 'k' 00 the decoder accepts. */
		FUZZ_CHECK(packed_value_size(&c) <= end - start);
		check_pv(&c.prim);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct docvalue v, v2;
	struct pv p;
	struct buf enc = BUF_INIT;

	if (value_decode_pv(data, size, &p) == 0)
		check_pv(&p);
	if (value_decode(data, size, &v) != 0)
		return 0;
	value_append(&enc, &v);
	FUZZ_CHECK(value_decode(enc.data, enc.len, &v2) == 0 && same_value(&v, &v2));
	/* Byte-exact but for an explicit 'k' 00 and NaN payloads (value-side
	 * bytes are never compared, so any NaN is accepted and written back
	 * canonical). */
	if (!(size >= 2 && data[0] == VC_MERGE_FLAGS && v.merge_flags == 0) && !is_nan(&v))
		FUZZ_CHECK(enc.len == size && memcmp(enc.data, data, size) == 0);
	if (v.kind == VAL_PRIMITIVE)
		check_pv(&v.prim);
	if (v.kind == VAL_PACKED_ROW) {
		struct packed_row r;
		const struct schema_version *ver;
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		uint32_t version;
		FUZZ_CHECK(v.packed >= data && v.packed + v.packed_len <= data + size);
		if (packed_parse_schema(v.packed, v.packed_len, &schema, &r, &ver, errmsg) == 0) {
			FUZZ_CHECK(packed_version(v.packed, v.packed_len, &version) == 0 &&
				   version == r.version && ver->n == r.n);
			check_packed(&r);
		}
		for (size_t n = 0; n <= 8; n++)
			if (packed_parse(v.packed, v.packed_len, n, &r) == 0)
				check_packed(&r);
	}
	buf_free(&enc);
	return 0;
}

/* t (k int, a int, b text, c double, m map<text,int>), then ALTER ADD d
 * bigint, DROP a: versions with 3, 4 and 3 packable columns. */
static void schema_build(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv = schema_init(&schema, "t", errmsg);
	rv = rv ?: schema_add(&schema, "k", COL_HASH, CT_INT32, errmsg);
	rv = rv ?: schema_add(&schema, "a", COL_REGULAR, CT_INT32, errmsg);
	rv = rv ?: schema_add(&schema, "b", COL_REGULAR, CT_TEXT, errmsg);
	rv = rv ?: schema_add(&schema, "c", COL_REGULAR, CT_DOUBLE, errmsg);
	rv = rv ?: schema_add_column(&schema, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT32, false,
				     errmsg);
	rv = rv ?: schema_add_regular_column(&schema, "d", CT_INT64, 0, 0, errmsg);
	rv = rv ?: schema_drop_column(&schema, "a", errmsg);
	FUZZ_CHECK(rv == 0);
	schema.packed = true;
}

__attribute__((constructor)) static void init(void)
{
	schema_build();
}

static void seed_value(const char *name, const struct docvalue *v)
{
	struct buf b = BUF_INIT;
	value_append(&b, v);
	seed_buf(name, &b);
	buf_free(&b);
}

static void fuzz_seeds(void)
{
	static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 0x47, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	struct pv prims[] = {pv_null(), pv_bool(false), pv_int32(-7), pv_int64(1ll << 40),
			     pv_uint32(9), pv_uint64(UINT64_MAX), pv_float(0.5f),
			     pv_double(-2.25), pv_str("text"), pv_timestamp(-1), pv_uuid(uuid)};
	struct docvalue v, c1, c2, c3;
	const struct docvalue *cols[4];
	struct buf payload = BUF_INIT;
	char name[32];

	for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
		v = docvalue_of(prims[i]);
		snprintf(name, sizeof name, "prim-%zu", i);
		seed_value(name, &v);
	}
	v = docvalue_of(pv_str("ttl'd"));
	v.has_ttl = true;
	v.ttl_ms = 3600000;
	v.has_user_ts = true;
	v.user_ts = 1700000000000000;
	v.merge_flags = 1;
	seed_value("controls", &v);
	v = docvalue_kind(VAL_TOMBSTONE);
	seed_value("tombstone", &v);
	v = docvalue_kind(VAL_OBJECT);
	seed_value("object", &v);

	/* Packed rows of the schema's last version (b, c, d) and its first (a, b, c). */
	c1 = docvalue_of(pv_str("packed"));
	c2 = docvalue_of(pv_double(3.5));
	c2.has_ttl = true;
	c2.ttl_ms = 1000;
	c3 = docvalue_of(pv_int64(-3));
	cols[0] = &c1;
	cols[1] = &c2;
	cols[2] = &c3;
	packed_encode(&payload, schema.version, cols, 3);
	v = docvalue_kind(VAL_PACKED_ROW);
	v.packed = payload.data;
	v.packed_len = payload.len;
	seed_value("packed-last", &v);
	buf_reset(&payload);
	cols[0] = &c3;
	cols[1] = NULL;
	cols[2] = &c2;
	packed_encode(&payload, schema.versions[0].version, cols, 3);
	v.packed = payload.data;
	v.packed_len = payload.len;
	v.has_ttl = true;
	v.ttl_ms = 5000;
	seed_value("packed-first-ttl", &v);
	buf_free(&payload);
}
