/* Binary-comparable key order (docdb-format.md §1.3, §2, §3): for every
 * component type and direction, memcmp of the encodings is the logical order
 * (pv_compare, reversed for DESC); DocKeys compare component-wise; newer
 * DocHTs sort first; a path sorts before its extensions. Randomized with
 * test_seed (replay with TEST_SEED=...). */
#include "test.h"

#include <math.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "docdb/key.h"

#define PAIRS 100000

/* Lexicographic byte order with the shorter-prefix-first rule; -1, 0, 1. */
static int lexcmp(const struct buf *a, const struct buf *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = n ? memcmp(a->data, b->data, n) : 0;
	if (c != 0)
		return c < 0 ? -1 : 1;
	return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static struct buf ea = BUF_INIT, eb = BUF_INIT;

static void format_pair(const struct pv *a, const struct pv *b, struct buf *f)
{
	pv_format(f, a);
	buf_printf(f, " vs ");
	pv_format(f, b);
}

/* Checks one pair in one direction; a trailing byte after each component
 * (as if the key went on) must not change the outcome. */
static void check_pair(const char *file, int line, struct pv a, struct pv b, bool desc,
		       uint64_t *seed)
{
	int want, got;
	a.desc = b.desc = desc;
	want = sign(pv_compare(&a, &b));
	if (desc)
		want = -want;
	buf_reset(&ea);
	buf_reset(&eb);
	key_append_pv(&ea, &a);
	key_append_pv(&eb, &b);
	got = lexcmp(&ea, &eb);
	if (got == want && want != 0) {
		uint64_t r = test_rand(seed);
		buf_push(&ea, (uint8_t)r);
		buf_push(&eb, (uint8_t)(r >> 8));
		got = lexcmp(&ea, &eb);
	}
	if (got != want) {
		struct buf f = BUF_INIT;
		format_pair(&a, &b, &f);
		test_fail_mem(file, line, buf_cstr(&f), ea.data, ea.len, eb.data, eb.len);
	}
	/* pv_compare is antisymmetric. */
	if (sign(pv_compare(&b, &a)) != -sign(pv_compare(&a, &b)))
		test_fail(file, line, "pv_compare not antisymmetric");
}

static uint64_t rnd(uint64_t *s)
{
	return test_rand(s);
}

/* Random magnitudes: small, medium and full-width values are all common. */
static uint64_t rnd_bits(uint64_t *s)
{
	return rnd(s) >> (rnd(s) % 64);
}

static const int64_t edge_i64[] = {INT64_MIN, INT64_MIN + 1, -4096, -64, -1, 0,
				   1, 63, 64, 4096, INT64_MAX - 1, INT64_MAX};
static const int32_t edge_i32[] = {INT32_MIN, INT32_MIN + 1, -256, -1, 0, 1, 255,
				   INT32_MAX - 1, INT32_MAX};

static int64_t gen_i64(uint64_t *s)
{
	uint64_t r = rnd(s);
	if (r % 8 == 0)
		return edge_i64[(r >> 8) % (sizeof edge_i64 / sizeof edge_i64[0])];
	return (int64_t)(r & 16 ? 0 - rnd_bits(s) : rnd_bits(s));
}

static int32_t gen_i32(uint64_t *s)
{
	uint64_t r = rnd(s);
	if (r % 8 == 0)
		return edge_i32[(r >> 8) % (sizeof edge_i32 / sizeof edge_i32[0])];
	return (int32_t)(uint32_t)(r & 16 ? 0 - rnd_bits(s) : rnd_bits(s));
}

static double gen_double(uint64_t *s)
{
	static const double edge[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN,
				      5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
				      2.2250738585072014e-308};
	uint64_t r = rnd(s), bits;
	double d;
	if (r % 6 == 0)
		return edge[(r >> 8) % (sizeof edge / sizeof edge[0])];
	if (r % 6 == 1) {
		/* NaNs with any sign and payload. */
		bits = UINT64_C(0x7FF0000000000000) | (rnd(s) & UINT64_C(0x800FFFFFFFFFFFFF)) | 1;
	} else if (r % 6 == 2) {
		return (double)(int64_t)(rnd(s) % 2001) - 1000.0; /* many ties */
	} else {
		bits = rnd(s);
	}
	memcpy(&d, &bits, sizeof d);
	return d;
}

static float gen_float(uint64_t *s)
{
	uint64_t r = rnd(s);
	uint32_t bits;
	float f;
	if (r % 4 == 0)
		return (float)gen_double(s);
	if (r % 4 == 1)
		bits = UINT32_C(0x7F800000) | ((uint32_t)rnd(s) & UINT32_C(0x807FFFFF)) | 1;
	else
		bits = (uint32_t)rnd(s);
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* Short strings over a tiny alphabet (so prefixes, 00 and FF bytes and ties
 * are frequent), sometimes longer random ones. */
static size_t gen_bytes(uint64_t *s, uint8_t *out, size_t max)
{
	static const uint8_t alpha[] = {0x00, 0x01, 0xFE, 0xFF, 'a', 'b'};
	uint64_t r = rnd(s);
	size_t n = r % 4 == 0 ? rnd(s) % max : rnd(s) % 6;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = rnd(s);
		out[i] = r % 4 == 0 && (x & 1) ? (uint8_t)(x >> 8) : alpha[(x >> 1) % sizeof alpha];
	}
	return n;
}

static void gen_uuid(uint64_t *s, uint8_t u[16])
{
	uint64_t r = rnd(s);
	uint8_t raw[16];
	/* Few distinct bytes, so that ties in the leading bytes are common. */
	for (int i = 0; i < 16; i++) {
		uint64_t x = rnd(s);
		raw[i] = r & 1 ? (uint8_t)x : (uint8_t)((x & 3) * 0x55);
	}
	switch ((r >> 1) % 3) {
	case 0: /* version 1 (time) */
		raw[6] = (uint8_t)((raw[6] & 0x0F) | 0x10);
		raw[8] = (uint8_t)((raw[8] & 0x3F) | 0x80);
		break;
	case 1: /* version 4 (random) */
		raw[6] = (uint8_t)((raw[6] & 0x0F) | 0x40);
		raw[8] = (uint8_t)((raw[8] & 0x3F) | 0x80);
		break;
	default: /* anything, including the nil and max uuids */
		break;
	}
	memcpy(u, raw, 16);
}

/* A random value of type t; string bytes go into store. */
static struct pv gen(uint64_t *s, enum pv_type t, uint8_t *store, size_t cap)
{
	struct pv v = pv_null();
	switch (t) {
	case PV_NULL:
		v.null_high = rnd(s) & 1;
		return v;
	case PV_BOOL:
		return pv_bool(rnd(s) & 1);
	case PV_INT32:
		return pv_int32(gen_i32(s));
	case PV_INT64:
		return pv_int64(gen_i64(s));
	case PV_UINT32:
		return pv_uint32((uint32_t)rnd_bits(s));
	case PV_UINT64:
		return pv_uint64(rnd(s) % 8 == 0 ? UINT64_MAX - rnd(s) % 2 : rnd_bits(s));
	case PV_FLOAT:
		return pv_float(gen_float(s));
	case PV_DOUBLE:
		return pv_double(gen_double(s));
	case PV_STRING:
		return pv_strn(store, gen_bytes(s, store, cap));
	case PV_TIMESTAMP:
		return pv_timestamp(gen_i64(s));
	case PV_UUID: {
		uint8_t u[16];
		gen_uuid(s, u);
		return pv_uuid(u);
	}
	case PV_COLUMN_ID:
		return pv_column(gen_i64(s));
	case PV_SYSTEM_COLUMN_ID:
		return pv_system_column(gen_i64(s));
	case PV_ARRAY_INDEX:
		return pv_array_index(gen_i64(s));
	case PV_REDIS_COUNTER:
		return pv_redis_counter();
	case PV_SS_FORWARD:
		return pv_ss_forward();
	case PV_SS_REVERSE:
		return pv_ss_reverse();
	case PV_TYPE_COUNT:
		break;
	}
	return v;
}

/* Derives b from a: equal, or a near neighbour, or an extension. */
static struct pv near(uint64_t *s, const struct pv *a, uint8_t *store, size_t cap)
{
	struct pv b = *a;
	uint64_t r = rnd(s);
	switch (a->type) {
	case PV_INT32:
		b.v.i32 = (int32_t)((uint32_t)a->v.i32 + (r & 1 ? 1u : UINT32_MAX));
		break;
	case PV_INT64:
	case PV_TIMESTAMP:
	case PV_COLUMN_ID:
	case PV_SYSTEM_COLUMN_ID:
	case PV_ARRAY_INDEX:
		b.v.i64 = (int64_t)((uint64_t)a->v.i64 + (r & 1 ? 1 : UINT64_MAX));
		break;
	case PV_UINT32:
		b.v.u32 = a->v.u32 + (r & 1 ? 1u : UINT32_MAX);
		break;
	case PV_UINT64:
		b.v.u64 = a->v.u64 + (r & 1 ? 1 : UINT64_MAX);
		break;
	case PV_FLOAT:
		b.v.f = r & 1 ? nextafterf(a->v.f, INFINITY) : -a->v.f;
		break;
	case PV_DOUBLE:
		b.v.d = r & 1 ? nextafter(a->v.d, -INFINITY) : -a->v.d;
		break;
	case PV_STRING:
		if (a->v.s.len + 1 <= cap) {
			/* a itself plus one more byte (00, 01 or FF). */
			memcpy(store, a->v.s.p, a->v.s.len);
			store[a->v.s.len] = (uint8_t[]){0x00, 0x01, 0xFF}[(r >> 1) % 3];
			b = pv_strn(store, a->v.s.len + (r & 1));
		}
		break;
	case PV_UUID:
		b.v.uuid[15 - (r >> 1) % 16] ^= (uint8_t)(1u << (r >> 8) % 8);
		break;
	default:
		break;
	}
	return b;
}

static void order_type(enum pv_type t, bool with_desc)
{
	uint64_t seed = test_seed();
	uint8_t sa[48], sb[48];
	for (int i = 0; i < PAIRS; i++) {
		struct pv a = gen(&seed, t, sa, sizeof sa), b;
		uint64_t r = rnd(&seed);
		if (r % 8 == 0)
			b = a;
		else if (r % 8 <= 2)
			b = near(&seed, &a, sb, sizeof sb);
		else
			b = gen(&seed, t, sb, sizeof sb);
		check_pair(__FILE__, __LINE__, a, b, false, &seed);
		if (with_desc)
			check_pair(__FILE__, __LINE__, a, b, true, &seed);
	}
	buf_free(&ea);
	buf_free(&eb);
}

TEST(order_null) { order_type(PV_NULL, false); }
TEST(order_bool) { order_type(PV_BOOL, true); }
TEST(order_int32) { order_type(PV_INT32, true); }
TEST(order_int64) { order_type(PV_INT64, true); }
TEST(order_uint32) { order_type(PV_UINT32, true); }
TEST(order_uint64) { order_type(PV_UINT64, true); }
TEST(order_float) { order_type(PV_FLOAT, true); }
TEST(order_double) { order_type(PV_DOUBLE, true); }
TEST(order_string) { order_type(PV_STRING, true); }
TEST(order_timestamp) { order_type(PV_TIMESTAMP, true); }
TEST(order_uuid) { order_type(PV_UUID, true); }
TEST(order_column_id) { order_type(PV_COLUMN_ID, false); }
TEST(order_system_column_id) { order_type(PV_SYSTEM_COLUMN_ID, false); }
TEST(order_array_index) { order_type(PV_ARRAY_INDEX, false); }

TEST(order_redis_markers)
{
	/* '%' < '&' < '\'' (a sorted set's counter, then its two maps), each
	 * ordered against other types by its byte; each is its type byte
	 * alone and decodes back, leaving the bytes that follow. */
	uint64_t seed = test_seed();
	const struct pv m[3] = {pv_redis_counter(), pv_ss_forward(), pv_ss_reverse()};
	const uint8_t bytes[3] = {'%', '&', '\''};
	struct pv others[] = {pv_null(), pv_double(-INFINITY), pv_int64(INT64_MIN), pv_str(""),
			      pv_array_index(0), pv_bool(false)};
	struct arena a;
	arena_init(&a);
	for (int i = 0; i < 3; i++) {
		struct pv d;
		const uint8_t *p;
		order_type(m[i].type, false);
		buf_reset(&ea);
		key_append_pv(&ea, &m[i]);
		CHECK_EQ_INT(ea.len, 1);
		CHECK_EQ_INT(ea.data[0], bytes[i]);
		buf_push(&ea, 'S');
		p = ea.data;
		CHECK_EQ_INT(key_decode_pv(&p, ea.data + ea.len, &d, &a), 0);
		CHECK_EQ_INT(d.type, m[i].type);
		CHECK(p == ea.data + 1);
		CHECK(pv_equal(&d, &m[i]));
		for (int j = 0; j < 3; j++)
			check_pair(__FILE__, __LINE__, m[i], m[j], false, &seed);
		for (size_t j = 0; j < sizeof others / sizeof others[0]; j++)
			check_pair(__FILE__, __LINE__, m[i], others[j], false, &seed);
	}
	CHECK(pv_compare(&m[0], &m[1]) < 0 && pv_compare(&m[1], &m[2]) < 0);
	{
		/* A sorted set's forward entry as a whole key: DocKey '&' 'D'
		 * score 'S' member '#' DocHT decodes back, and sorts after the
		 * counter's key and before the reverse map's. */
		struct pv h = pv_str("z"), sub[3] = {pv_ss_forward(), pv_double(-1.5), pv_str("m")};
		struct dockey k = {.has_hash = true, .hash = 0x7f74, .n_hashed = 1, .hashed = &h};
		struct docht d = {.ht = (UINT64_C(1767225600000000) << 12), .write_id = 1};
		struct subdockey sk;
		struct buf c = BUF_INIT, r = BUF_INIT;
		buf_reset(&ea);
		dockey_append(&ea, &k);
		buf_append(&c, ea.data, ea.len);
		buf_append(&r, ea.data, ea.len);
		for (int i = 0; i < 3; i++)
			key_append_pv(&ea, &sub[i]);
		buf_push(&ea, KT_HYBRID_TIME);
		docht_append(&ea, d);
		CHECK_EQ_INT(subdockey_decode(ea.data, ea.len, &sk, &a), 0);
		CHECK_EQ_INT(sk.n_subkeys, 3);
		CHECK(sk.has_ht && sk.ht.ht == d.ht && sk.ht.write_id == 1);
		for (int i = 0; i < 3; i++)
			CHECK(sk.subkeys[i].type == sub[i].type && pv_equal(&sk.subkeys[i], &sub[i]));
		key_append_pv(&c, &m[0]);
		key_append_pv(&r, &m[2]);
		key_append_pv(&r, &sub[2]);
		CHECK_EQ_INT(lexcmp(&c, &ea), -1);
		CHECK_EQ_INT(lexcmp(&ea, &r), -1);
		buf_free(&c);
		buf_free(&r);
	}
	arena_free(&a);
	buf_free(&ea);
	buf_free(&eb);
}

TEST(order_float_edges)
{
	/* The documented order: -inf < ... < -0.0 < +0.0 < ... < +inf < NaN,
	 * every NaN equal. */
	const double d[] = {-INFINITY, -1e308, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e308,
			    INFINITY, NAN};
	const float f[] = {-INFINITY, -3e38f, -1.0f, -1e-45f, -0.0f, 0.0f, 1e-45f, 1.0f, 3e38f,
			   INFINITY, NAN};
	uint64_t seed = test_seed();
	for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
		for (size_t j = 0; j < sizeof d / sizeof d[0]; j++) {
			struct pv a = pv_double(d[i]), b = pv_double(d[j]);
			struct pv x = pv_float(f[i]), y = pv_float(f[j]);
			CHECK_EQ_INT(sign(pv_compare(&a, &b)), i < j ? -1 : i > j);
			CHECK_EQ_INT(sign(pv_compare(&x, &y)), i < j ? -1 : i > j);
			for (int desc = 0; desc < 2; desc++) {
				check_pair(__FILE__, __LINE__, a, b, desc, &seed);
				check_pair(__FILE__, __LINE__, x, y, desc, &seed);
			}
		}
	}
	{
		struct pv n1 = pv_double(NAN), n2 = pv_double(-__builtin_nan("0x77"));
		CHECK(pv_equal(&n1, &n2));
		check_pair(__FILE__, __LINE__, n1, n2, false, &seed);
	}
	buf_free(&ea);
	buf_free(&eb);
}

TEST(order_across_types)
{
	/* Different types order by their ascending type byte: NULL-low first,
	 * NULL-high last. */
	uint64_t seed = test_seed();
	uint8_t sa[48], sb[48];
	for (int i = 0; i < PAIRS; i++) {
		enum pv_type ta = (enum pv_type)(rnd(&seed) % PV_TYPE_COUNT);
		enum pv_type tb = (enum pv_type)(rnd(&seed) % PV_TYPE_COUNT);
		struct pv a = gen(&seed, ta, sa, sizeof sa), b = gen(&seed, tb, sb, sizeof sb);
		check_pair(__FILE__, __LINE__, a, b, false, &seed);
		if (ta == PV_NULL && a.null_high)
			CHECK(pv_compare(&a, &b) > 0 || (tb == PV_NULL && b.null_high));
		if (ta == PV_NULL && !a.null_high)
			CHECK(pv_compare(&a, &b) < 0 || (tb == PV_NULL && !b.null_high));
	}
	buf_free(&ea);
	buf_free(&eb);
}

/* A table: hash columns (int32, string), range columns with mixed
 * directions (int32 ASC, string DESC, double ASC, uuid DESC, bool DESC). */
#define NH 2
#define NR 5
static const enum pv_type range_types[NR] = {PV_INT32, PV_STRING, PV_DOUBLE, PV_UUID, PV_BOOL};
static const bool range_desc[NR] = {false, true, false, true, true};

struct row {
	struct dockey k;
	struct pv h[NH], r[NR];
	uint8_t store[NH + NR][16];
};

static void gen_row(uint64_t *s, struct row *row, const struct row *like)
{
	/* Share a prefix of components with `like` to make ties likely. */
	size_t share = like ? rnd(s) % (NH + NR + 1) : 0;
	for (size_t i = 0; i < NH + NR; i++) {
		struct pv *v = i < NH ? &row->h[i] : &row->r[i - NH];
		if (i < share) {
			*v = i < NH ? like->h[i] : like->r[i - NH];
			if (v->type == PV_STRING) {
				memcpy(row->store[i], v->v.s.p, v->v.s.len);
				v->v.s.p = row->store[i];
			}
			continue;
		}
		if (i < NH)
			*v = i == 0 ? pv_int32((int32_t)(rnd(s) % 3))
				    : gen(s, PV_STRING, row->store[i], sizeof row->store[i]);
		else
			*v = gen(s, range_types[i - NH], row->store[i], sizeof row->store[i]);
		if (i >= NH)
			v->desc = range_desc[i - NH];
	}
	row->k.has_hash = true;
	row->k.hashed = row->h;
	row->k.n_hashed = NH;
	/* Share the hash too when the hash columns are shared. */
	row->k.hash = share >= NH && like ? like->k.hash : (uint16_t)(rnd(s) % 3);
	row->k.range = row->r;
	/* A DocKey may carry a prefix of the range columns. */
	row->k.n_range = rnd(s) % 4 == 0 ? rnd(s) % (NR + 1) : NR;
	if (like && rnd(s) % 4 == 0)
		row->k.n_range = like->k.n_range;
}

static int cmp_component(const struct pv *a, const struct pv *b)
{
	int c = sign(pv_compare(a, b));
	return a->desc ? -c : c;
}

static int cmp_rows(const struct row *a, const struct row *b)
{
	int c;
	if (a->k.hash != b->k.hash)
		return a->k.hash < b->k.hash ? -1 : 1;
	for (size_t i = 0; i < NH; i++)
		if ((c = cmp_component(&a->h[i], &b->h[i])) != 0)
			return c;
	for (size_t i = 0; i < a->k.n_range && i < b->k.n_range; i++)
		if ((c = cmp_component(&a->r[i], &b->r[i])) != 0)
			return c;
	/* A prefix DocKey sorts first. */
	return a->k.n_range < b->k.n_range ? -1 : a->k.n_range > b->k.n_range;
}

TEST(order_dockeys)
{
	uint64_t seed = test_seed();
	struct row a, b;
	for (int i = 0; i < PAIRS; i++) {
		int want, got;
		gen_row(&seed, &a, NULL);
		gen_row(&seed, &b, &a);
		want = cmp_rows(&a, &b);
		buf_reset(&ea);
		buf_reset(&eb);
		dockey_append(&ea, &a.k);
		dockey_append(&eb, &b.k);
		got = lexcmp(&ea, &eb);
		if (got != want)
			test_fail_mem(__FILE__, __LINE__, "dockey order", ea.data, ea.len, eb.data,
				      eb.len);
		/* The same holds once subkeys and a DocHT follow each DocKey. */
		if (want != 0) {
			struct pv col = pv_column((int64_t)(rnd(&seed) % 100));
			key_append_pv(&ea, &col);
			buf_push(&ea, KT_HYBRID_TIME);
			docht_append(&ea, (struct docht){rnd(&seed), (uint32_t)rnd(&seed)});
			buf_push(&eb, KT_HYBRID_TIME);
			docht_append(&eb, (struct docht){rnd(&seed), (uint32_t)rnd(&seed)});
			CHECK_EQ_INT(lexcmp(&ea, &eb), want);
		}
	}
	buf_free(&ea);
	buf_free(&eb);
}

static struct docht gen_docht(uint64_t *s, const struct docht *like)
{
	struct docht d;
	uint64_t r = rnd(s);
	if (like && r % 3 == 0) {
		d = *like; /* same HT, another write id */
		d.write_id = (uint32_t)rnd_bits(s);
		return d;
	}
	if (r % 5 == 0) {
		static const uint64_t edge[] = {HT_MIN, HT_INITIAL, HT_INVALID, HT_MAX};
		d.ht = edge[(r >> 8) % 4];
	} else if (r % 5 == 1 && like) {
		d.ht = like->ht + (r & 256 ? 1 : UINT64_MAX); /* a neighbour */
	} else {
		/* Around now, and anywhere. */
		d.ht = r & 512 ? ht_make(UINT64_C(1700000000000000) + rnd(s) % (UINT64_C(1) << 40),
					 (uint32_t)rnd(s) & 0xFFF)
			       : rnd_bits(s);
	}
	d.write_id = (uint32_t)(r & 1024 ? rnd_bits(s) : rnd(s) % 4);
	return d;
}

TEST(order_docht)
{
	uint64_t seed = test_seed();
	for (int i = 0; i < PAIRS * 2; i++) {
		struct docht a = gen_docht(&seed, NULL), b = gen_docht(&seed, &a);
		int want = -docht_compare(a, b), got;
		buf_reset(&ea);
		buf_reset(&eb);
		docht_append(&ea, a);
		docht_append(&eb, b);
		got = lexcmp(&ea, &eb);
		if (got != want) {
			test_note("a = (%" PRIu64 ", %u), b = (%" PRIu64 ", %u)", a.ht, a.write_id,
				  b.ht, b.write_id);
			test_fail_mem(__FILE__, __LINE__, "docht order", ea.data, ea.len, eb.data,
				      eb.len);
		}
	}
	buf_free(&ea);
	buf_free(&eb);
}

TEST(order_path_before_extensions)
{
	/* P '#' DocHT sorts before P <subkey> ... '#' DocHT, whatever the two
	 * DocHTs: '#' is below every component type byte. And versions of one
	 * path are newest first. */
	uint64_t seed = test_seed();
	uint8_t st[48];
	struct buf p = BUF_INIT;
	for (int i = 0; i < PAIRS; i++) {
		struct pv h = pv_int32((int32_t)rnd(&seed));
		struct dockey k = {.has_hash = true, .hash = (uint16_t)rnd(&seed), .n_hashed = 1,
				   .hashed = &h};
		enum pv_type t = (enum pv_type)(rnd(&seed) % PV_TYPE_COUNT);
		struct pv sub = gen(&seed, t, st, sizeof st);
		struct docht d1 = gen_docht(&seed, NULL), d2 = gen_docht(&seed, &d1);
		buf_reset(&p);
		dockey_append(&p, &k);
		if (rnd(&seed) & 1)
			key_append_pv(&p, &(struct pv){.type = PV_COLUMN_ID, .v.i64 = 3});
		buf_reset(&ea);
		buf_append(&ea, p.data, p.len);
		buf_push(&ea, KT_HYBRID_TIME);
		docht_append(&ea, d1);
		buf_reset(&eb);
		buf_append(&eb, p.data, p.len);
		if (sub.type != PV_COLUMN_ID && sub.type != PV_SYSTEM_COLUMN_ID &&
		    sub.type != PV_ARRAY_INDEX && !pv_is_marker(&sub))
			sub.desc = rnd(&seed) & 1;
		key_append_pv(&eb, &sub);
		buf_push(&eb, KT_HYBRID_TIME);
		docht_append(&eb, d2);
		CHECK_EQ_INT(lexcmp(&ea, &eb), -1);
		/* Same path, two versions: the newer sorts first. */
		buf_reset(&eb);
		buf_append(&eb, p.data, p.len);
		buf_push(&eb, KT_HYBRID_TIME);
		docht_append(&eb, d2);
		CHECK_EQ_INT(lexcmp(&ea, &eb), -docht_compare(d1, d2));
	}
	buf_free(&p);
	buf_free(&ea);
	buf_free(&eb);
}

TEST_MAIN(T(order_null), T(order_bool), T(order_int32), T(order_int64), T(order_uint32),
	  T(order_uint64), T(order_float), T(order_double), T(order_string), T(order_timestamp),
	  T(order_uuid), T(order_column_id), T(order_system_column_id), T(order_array_index),
	  T(order_redis_markers),
	  T(order_float_edges), T(order_across_types), T(order_dockeys), T(order_docht),
	  T(order_path_before_extensions))
