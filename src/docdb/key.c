#include "docdb/key.h"

#include <string.h>

#include "common/check.h"
#include "common/hash16.h"
#include "docdb/varint.h"
#include "docraft/error.h"

/* Primitive key type bytes (docdb-format.md §1.1). */
enum {
	KT_NULL_LOW = '$',
	KT_NULL_HIGH = '|',
	KT_FALSE = 'F',
	KT_FALSE_DESC = 'i',
	KT_TRUE = 'T',
	KT_TRUE_DESC = 'h',
	KT_INT32 = 'H',
	KT_INT32_DESC = 'e',
	KT_INT64 = 'I',
	KT_INT64_DESC = 'b',
	KT_UINT32 = 'O',
	KT_UINT32_DESC = 'g',
	KT_UINT64 = 'U',
	KT_UINT64_DESC = 'j',
	KT_FLOAT = 'C',
	KT_FLOAT_DESC = 'M',
	KT_DOUBLE = 'D',
	KT_DOUBLE_DESC = 'L',
	KT_STRING = 'S',
	KT_STRING_DESC = 'a',
	KT_TIMESTAMP = 's',
	KT_TIMESTAMP_DESC = 'c',
	KT_UUID = '_',
	KT_UUID_DESC = '`',
	KT_COLUMN_ID = 'K',
	KT_SYSTEM_COLUMN_ID = 'J',
	KT_ARRAY_INDEX = '[',
	KT_REDIS_COUNTER = '%',
	KT_SS_FORWARD = '&',
	KT_SS_REVERSE = '\'',
};

#define SIGN32 UINT32_C(0x80000000)
#define SIGN64 UINT64_C(0x8000000000000000)

/* The "YugaByte epoch" (§3.3): DocHTs store physical µs relative to it. */
#define YB_EPOCH_MICROS INT64_C(1500000000000000)
#define HT_PHYSICAL_LIMIT (UINT64_C(1) << 52) /* 64 - 12 logical bits */
#define DOCHT_SIZE_MASK 0x1F

static inline void put_be32(uint8_t *d, uint32_t v)
{
	d[0] = (uint8_t)(v >> 24);
	d[1] = (uint8_t)(v >> 16);
	d[2] = (uint8_t)(v >> 8);
	d[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *d, uint64_t v)
{
	put_be32(d, (uint32_t)(v >> 32));
	put_be32(d + 4, (uint32_t)v);
}

/* Order-preserving images of the canonical IEEE bits (§2.3). */
static inline uint32_t float_key(float f)
{
	uint32_t u = pv_float_bits(f);
	return (u & SIGN32) ? ~u : u ^ SIGN32;
}

static inline uint64_t double_key(double d)
{
	uint64_t u = pv_double_bits(d);
	return (u & SIGN64) ? ~u : u ^ SIGN64;
}

static inline float float_unkey(uint32_t k)
{
	uint32_t u = (k & SIGN32) ? k ^ SIGN32 : ~k;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline double double_unkey(uint64_t k)
{
	uint64_t u = (k & SIGN64) ? k ^ SIGN64 : ~k;
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

/* Zero-escaped, terminated string payload (§2.1): 00 -> 00 01, then 00 00.
 * Descending: the same, complemented (00 -> FF FE, terminator FF FF). */
static void append_escaped(struct buf *out, const uint8_t *s, size_t n, bool desc)
{
	const uint8_t *end = s + n, *z;
	if (!desc) {
		buf_reserve(out, n + 2);
		while (s < end && (z = memchr(s, 0, (size_t)(end - s))) != NULL) {
			buf_append(out, s, (size_t)(z - s) + 1);
			buf_push(out, 0x01);
			s = z + 1;
		}
		buf_append(out, s, (size_t)(end - s));
		buf_push(out, 0x00);
		buf_push(out, 0x00);
	} else {
		size_t zeros = 0;
		uint8_t *d;
		for (const uint8_t *q = s; q < end && (z = memchr(q, 0, (size_t)(end - q))) != NULL;
		     q = z + 1)
			zeros++;
		buf_reserve(out, n + zeros + 2);
		d = out->data + out->len;
		for (; s < end; s++) {
			*d++ = (uint8_t)~*s;
			if (*s == 0)
				*d++ = 0xFE;
		}
		*d++ = 0xFF;
		*d++ = 0xFF;
		out->len = (size_t)(d - out->data);
	}
}

/* Validates an escaped payload at s: *n is its unescaped length, *term
 * points at its terminator pair. */
static int scan_escaped(const uint8_t *s, const uint8_t *end, bool desc, size_t *n,
			const uint8_t **term)
{
	const uint8_t mark = desc ? 0xFF : 0x00;
	const uint8_t esc = desc ? 0xFE : 0x01;
	size_t len = 0;
	for (;;) {
		const uint8_t *z = s < end ? memchr(s, mark, (size_t)(end - s)) : NULL;
		if (z == NULL || end - z < 2)
			return DOCRAFT_ECORRUPT;
		len += (size_t)(z - s);
		if (z[1] == mark) {
			*n = len;
			*term = z;
			return 0;
		}
		if (z[1] != esc)
			return DOCRAFT_ECORRUPT;
		len++;
		s = z + 2;
	}
}

/* Unescapes the validated payload [s, term) into d. */
static void unescape(const uint8_t *s, const uint8_t *term, bool desc, uint8_t *d)
{
	if (!desc) {
		const uint8_t *z;
		while (s < term && (z = memchr(s, 0, (size_t)(term - s))) != NULL) {
			memcpy(d, s, (size_t)(z - s));
			d += z - s;
			*d++ = 0;
			s = z + 2;
		}
		memcpy(d, s, (size_t)(term - s));
	} else {
		while (s < term) {
			uint8_t c = *s++;
			if (c == 0xFF) {
				*d++ = 0;
				s++; /* the FE */
			} else {
				*d++ = (uint8_t)~c;
			}
		}
	}
}

/* The fixed-width key types (§1.1): their type bytes, ascending and
 * descending (PV_ARRAY_INDEX has no descending form), and the width of the
 * big-endian order key that follows. */
static const struct fixed_form {
	uint8_t asc, desc;
	uint8_t width; /* 4 or 8 */
} fixed_form[PV_TYPE_COUNT] = {
	[PV_INT32] = {KT_INT32, KT_INT32_DESC, 4},
	[PV_INT64] = {KT_INT64, KT_INT64_DESC, 8},
	[PV_UINT32] = {KT_UINT32, KT_UINT32_DESC, 4},
	[PV_UINT64] = {KT_UINT64, KT_UINT64_DESC, 8},
	[PV_FLOAT] = {KT_FLOAT, KT_FLOAT_DESC, 4},
	[PV_DOUBLE] = {KT_DOUBLE, KT_DOUBLE_DESC, 8},
	[PV_TIMESTAMP] = {KT_TIMESTAMP, KT_TIMESTAMP_DESC, 8},
	[PV_ARRAY_INDEX] = {KT_ARRAY_INDEX, 0, 8},
};

/* The other way round: the type of each fixed-width type byte and whether
 * it is the descending one (type 0: not such a byte). */
static const struct {
	uint8_t type;
	bool desc;
} fixed_type[128] = {
	[KT_INT32] = {PV_INT32, false},	      [KT_INT32_DESC] = {PV_INT32, true},
	[KT_INT64] = {PV_INT64, false},	      [KT_INT64_DESC] = {PV_INT64, true},
	[KT_UINT32] = {PV_UINT32, false},     [KT_UINT32_DESC] = {PV_UINT32, true},
	[KT_UINT64] = {PV_UINT64, false},     [KT_UINT64_DESC] = {PV_UINT64, true},
	[KT_FLOAT] = {PV_FLOAT, false},	      [KT_FLOAT_DESC] = {PV_FLOAT, true},
	[KT_DOUBLE] = {PV_DOUBLE, false},     [KT_DOUBLE_DESC] = {PV_DOUBLE, true},
	[KT_TIMESTAMP] = {PV_TIMESTAMP, false}, [KT_TIMESTAMP_DESC] = {PV_TIMESTAMP, true},
	[KT_ARRAY_INDEX] = {PV_ARRAY_INDEX, false},
};

/* The ascending order key of a fixed-width value: a signed integer's bits
 * with the sign bit flipped, an unsigned one's as they are, float_key or
 * double_key of a float or double. A descending key is its complement. */
static uint64_t order_key(const struct pv *v)
{
	switch (v->type) {
	case PV_INT32:
		return (uint32_t)v->v.i32 ^ SIGN32;
	case PV_UINT32:
		return v->v.u32;
	case PV_FLOAT:
		return float_key(v->v.f);
	case PV_UINT64:
		return v->v.u64;
	case PV_DOUBLE:
		return double_key(v->v.d);
	default: /* PV_INT64, PV_TIMESTAMP, PV_ARRAY_INDEX */
		return (uint64_t)v->v.i64 ^ SIGN64;
	}
}

/* order_key inverted into v (of a fixed-width type): false for a float or
 * double key other than the canonical one of its value (a NaN other than
 * the canonical one). */
static bool order_unkey(struct pv *v, uint64_t k)
{
	switch (v->type) {
	case PV_INT32:
		v->v.i32 = (int32_t)((uint32_t)k ^ SIGN32);
		return true;
	case PV_UINT32:
		v->v.u32 = (uint32_t)k;
		return true;
	case PV_FLOAT:
		v->v.f = float_unkey((uint32_t)k);
		return float_key(v->v.f) == (uint32_t)k;
	case PV_UINT64:
		v->v.u64 = k;
		return true;
	case PV_DOUBLE:
		v->v.d = double_unkey(k);
		return double_key(v->v.d) == k;
	default: /* PV_INT64, PV_TIMESTAMP, PV_ARRAY_INDEX */
		v->v.i64 = (int64_t)(k ^ SIGN64);
		return true;
	}
}

void key_append_pv(struct buf *out, const struct pv *v)
{
	const bool desc = v->desc;
	uint8_t b[9];
	switch (v->type) {
	case PV_NULL:
		buf_push(out, v->null_high ? KT_NULL_HIGH : KT_NULL_LOW);
		return;
	case PV_BOOL:
		if (v->v.b)
			buf_push(out, desc ? KT_TRUE_DESC : KT_TRUE);
		else
			buf_push(out, desc ? KT_FALSE_DESC : KT_FALSE);
		return;
	case PV_INT32:
	case PV_INT64:
	case PV_TIMESTAMP:
	case PV_UINT32:
	case PV_UINT64:
	case PV_FLOAT:
	case PV_DOUBLE:
	case PV_ARRAY_INDEX: {
		const struct fixed_form *f = &fixed_form[v->type];
		uint64_t k = order_key(v);
		PRE(v->type != PV_ARRAY_INDEX || !desc);
		b[0] = desc ? f->desc : f->asc;
		if (desc)
			k = ~k;
		if (f->width == 4)
			put_be32(b + 1, (uint32_t)k);
		else
			put_be64(b + 1, k);
		buf_append(out, b, 1 + (size_t)f->width);
		return;
	}
	case PV_STRING:
		buf_push(out, desc ? KT_STRING_DESC : KT_STRING);
		append_escaped(out, v->v.s.p, v->v.s.len, desc);
		return;
	case PV_UUID: {
		uint8_t c[16];
		uuid_to_comparable(v->v.uuid, c);
		buf_push(out, desc ? KT_UUID_DESC : KT_UUID);
		append_escaped(out, c, 16, desc);
		return;
	}
	case PV_COLUMN_ID:
	case PV_SYSTEM_COLUMN_ID:
		PRE(!desc);
		buf_push(out, v->type == PV_COLUMN_ID ? KT_COLUMN_ID : KT_SYSTEM_COLUMN_ID);
		svarint_append(out, v->v.i64);
		return;
	case PV_REDIS_COUNTER:
	case PV_SS_FORWARD:
	case PV_SS_REVERSE:
		PRE(!desc);
		buf_push(out, v->type == PV_REDIS_COUNTER ? KT_REDIS_COUNTER
			      : v->type == PV_SS_FORWARD  ? KT_SS_FORWARD
							  : KT_SS_REVERSE);
		return;
	}
	PANIC("bad pv type %u", v->type);
}

/* Decodes one component. With a == NULL only validates and skips: string
 * payloads are not copied (out->v.s.p is NULL). */
static int decode_pv(const uint8_t **pp, const uint8_t *end, struct pv *out, struct arena *a)
{
	const uint8_t *s = *pp;
	size_t avail;
	uint8_t t;
	if (s >= end)
		return DOCRAFT_ECORRUPT;
	t = *s++;
	avail = (size_t)(end - s);
	memset(out, 0, sizeof *out);
	switch (t) {
	case KT_NULL_LOW:
	case KT_NULL_HIGH:
		out->type = PV_NULL;
		out->null_high = t == KT_NULL_HIGH;
		break;
	case KT_FALSE:
	case KT_FALSE_DESC:
	case KT_TRUE:
	case KT_TRUE_DESC:
		out->type = PV_BOOL;
		out->desc = t == KT_FALSE_DESC || t == KT_TRUE_DESC;
		out->v.b = t == KT_TRUE || t == KT_TRUE_DESC;
		break;
	case KT_INT32:
	case KT_INT32_DESC:
	case KT_INT64:
	case KT_INT64_DESC:
	case KT_UINT32:
	case KT_UINT32_DESC:
	case KT_UINT64:
	case KT_UINT64_DESC:
	case KT_FLOAT:
	case KT_FLOAT_DESC:
	case KT_DOUBLE:
	case KT_DOUBLE_DESC:
	case KT_TIMESTAMP:
	case KT_TIMESTAMP_DESC:
	case KT_ARRAY_INDEX: {
		size_t w;
		uint64_t k;
		out->type = fixed_type[t].type;
		out->desc = fixed_type[t].desc;
		w = fixed_form[out->type].width;
		if (avail < w)
			return DOCRAFT_ECORRUPT;
		k = w == 4 ? be32_load(s) : be64_load(s);
		if (out->desc)
			k = w == 4 ? (uint32_t)~k : ~k;
		if (!order_unkey(out, k))
			return DOCRAFT_ECORRUPT;
		s += w;
		break;
	}
	case KT_STRING:
	case KT_STRING_DESC: {
		const bool desc = t == KT_STRING_DESC;
		const uint8_t *term;
		size_t n;
		int rv = scan_escaped(s, end, desc, &n, &term);
		if (rv != 0)
			return rv;
		out->type = PV_STRING;
		out->desc = desc;
		out->v.s.len = n;
		if (a == NULL) {
			out->v.s.p = NULL;
		} else if (n == 0) {
			out->v.s.p = (const uint8_t *)"";
		} else {
			uint8_t *d = arena_alloc(a, n);
			if (!desc && (size_t)(term - s) == n)
				memcpy(d, s, n); /* nothing escaped */
			else
				unescape(s, term, desc, d);
			out->v.s.p = d;
		}
		s = term + 2;
		break;
	}
	case KT_UUID:
	case KT_UUID_DESC: {
		const bool desc = t == KT_UUID_DESC;
		const uint8_t *term;
		uint8_t c[16];
		size_t n;
		int rv = scan_escaped(s, end, desc, &n, &term);
		if (rv != 0)
			return rv;
		if (n != 16)
			return DOCRAFT_ECORRUPT;
		unescape(s, term, desc, c);
		out->type = PV_UUID;
		out->desc = desc;
		uuid_from_comparable(c, out->v.uuid);
		s = term + 2;
		break;
	}
	case KT_COLUMN_ID:
	case KT_SYSTEM_COLUMN_ID: {
		int rv = svarint_decode(&s, end, &out->v.i64);
		if (rv != 0)
			return rv;
		out->type = t == KT_COLUMN_ID ? PV_COLUMN_ID : PV_SYSTEM_COLUMN_ID;
		break;
	}
	case KT_REDIS_COUNTER:
		out->type = PV_REDIS_COUNTER;
		break;
	case KT_SS_FORWARD:
		out->type = PV_SS_FORWARD;
		break;
	case KT_SS_REVERSE:
		out->type = PV_SS_REVERSE;
		break;
	default:
		return DOCRAFT_ECORRUPT;
	}
	*pp = s;
	return 0;
}

int key_decode_pv(const uint8_t **p, const uint8_t *end, struct pv *out, struct arena *a)
{
	PRE(a != NULL);
	return decode_pv(p, end, out, a);
}

int key_skip_pv(const uint8_t **p, const uint8_t *end)
{
	struct pv scratch;
	return decode_pv(p, end, &scratch, NULL);
}

uint16_t key_hash_components(const struct pv *hashed, size_t n)
{
	struct hash_jenkins64_state st;
	uint8_t b[16];
	hash_jenkins64_init(&st, HASH16_SEED);
	for (size_t i = 0; i < n; i++) {
		const struct pv *v = &hashed[i];
		switch (v->type) {
		case PV_NULL:
			break; /* a NULL contributes no bytes */
		case PV_BOOL:
			b[0] = v->v.b ? 1 : 0;
			hash_jenkins64_update(&st, b, 1);
			break;
		case PV_INT32:
		case PV_UINT32:
		case PV_FLOAT:
			/* BE32 of the bits (a float's made canonical) */
			put_be32(b, v->type == PV_FLOAT ? pv_float_bits(v->v.f) : v->v.u32);
			hash_jenkins64_update(&st, b, 4);
			break;
		case PV_COLUMN_ID:
		case PV_SYSTEM_COLUMN_ID:
		case PV_ARRAY_INDEX:
		case PV_REDIS_COUNTER:
		case PV_SS_FORWARD:
		case PV_SS_REVERSE:
			PRE(!"a key-only pv type cannot be a hash column");
			/* fall through: hashed as its int64 */
		case PV_INT64:
		case PV_TIMESTAMP:
		case PV_UINT64:
		case PV_DOUBLE:
			/* BE64 of the bits (a double's made canonical) */
			put_be64(b, v->type == PV_DOUBLE ? pv_double_bits(v->v.d) : v->v.u64);
			hash_jenkins64_update(&st, b, 8);
			break;
		case PV_STRING:
			hash_jenkins64_update(&st, v->v.s.p, v->v.s.len);
			break;
		case PV_UUID:
			hash_jenkins64_update(&st, v->v.uuid, 16);
			break;
		default:
			PANIC("bad pv type %u", v->type);
		}
	}
	return hash16_fold(hash_jenkins64_final(&st));
}

void dockey_append(struct buf *out, const struct dockey *k)
{
	size_t i;
	PRE(k->has_hash || k->n_hashed == 0);
	if (k->has_hash) {
		uint8_t h[3] = {KT_UINT16_HASH, (uint8_t)(k->hash >> 8), (uint8_t)k->hash};
		buf_append(out, h, 3);
		for (i = 0; i < k->n_hashed; i++)
			key_append_pv(out, &k->hashed[i]);
		buf_push(out, KT_GROUP_END);
	}
	for (i = 0; i < k->n_range; i++)
		key_append_pv(out, &k->range[i]);
	buf_push(out, KT_GROUP_END);
}

#define LOCAL_PVS 16

/* Decodes components up to a group end '!' (consumed) or, for subkeys, up to
 * '#' or the end of input (not consumed). The array goes into a; with
 * a == NULL the components are only validated and *arr is NULL. */
static int decode_list(const uint8_t **pp, const uint8_t *end, bool subkeys,
		       const struct pv **arr, size_t *count, struct arena *a)
{
	struct pv local[LOCAL_PVS], scratch;
	const uint8_t *s = *pp, *after_local = NULL;
	size_t n = 0;
	int rv;
	for (;;) {
		if (s >= end) {
			if (subkeys)
				break;
			return DOCRAFT_ECORRUPT;
		}
		if (*s == (subkeys ? KT_HYBRID_TIME : KT_GROUP_END))
			break;
		if (n < LOCAL_PVS) {
			rv = decode_pv(&s, end, &local[n], a);
			if (n == LOCAL_PVS - 1)
				after_local = s;
		} else {
			rv = decode_pv(&s, end, &scratch, NULL);
		}
		if (rv != 0)
			return rv;
		n++;
	}
	if (!subkeys)
		s++;
	*count = n;
	*arr = NULL;
	if (a != NULL && n > 0) {
		if (n <= LOCAL_PVS) {
			*arr = arena_dup(a, local, n * sizeof local[0]);
		} else {
			/* Rare: decode the rest straight into the arena. */
			struct pv *v = arena_alloc(a, n * sizeof v[0]);
			const uint8_t *q = after_local;
			memcpy(v, local, sizeof local);
			for (size_t i = LOCAL_PVS; i < n; i++) {
				rv = decode_pv(&q, end, &v[i], a);
				ASSERT(rv == 0);
			}
			*arr = v;
		}
	}
	*pp = s;
	return 0;
}

static int decode_dockey(const uint8_t **p, const uint8_t *end, struct dockey *out,
			 struct arena *a)
{
	const uint8_t *s = *p;
	int rv;
	memset(out, 0, sizeof *out);
	if (s >= end)
		return DOCRAFT_ECORRUPT;
	if (*s == KT_UINT16_HASH) {
		if (end - s < 3)
			return DOCRAFT_ECORRUPT;
		out->has_hash = true;
		out->hash = be16_load(s + 1);
		s += 3;
		rv = decode_list(&s, end, false, &out->hashed, &out->n_hashed, a);
		if (rv != 0)
			return rv;
	}
	rv = decode_list(&s, end, false, &out->range, &out->n_range, a);
	if (rv != 0)
		return rv;
	*p = s;
	return 0;
}

int dockey_decode(const uint8_t **p, const uint8_t *end, struct dockey *out, struct arena *a)
{
	PRE(a != NULL);
	return decode_dockey(p, end, out, a);
}

size_t dockey_prefix_len(const uint8_t *key, size_t len)
{
	const uint8_t *s = key;
	struct dockey k;
	if (decode_dockey(&s, key + len, &k, NULL) != 0)
		return 0;
	return (size_t)(s - key);
}

/* Appends a descending svarint of a magnitude below 2^62 (every DocHT
 * field). */
static inline void desc_field(struct buf *out, int64_t v)
{
	svarint_append(out, -v);
}

void docht_append(struct buf *out, struct docht d)
{
	size_t start = out->len;
	uint64_t physical = d.ht >> 12;
	uint8_t *last;
	buf_reserve(out, DOCHT_MAX_LEN);
	buf_push(out, 0x80); /* generation 0 */
	desc_field(out, (int64_t)physical - YB_EPOCH_MICROS);
	desc_field(out, (int64_t)(d.ht & 0xFFF));
	desc_field(out, ((int64_t)d.write_id + 1) * 32);
	last = &out->data[out->len - 1];
	*last = (uint8_t)((*last & ~DOCHT_SIZE_MASK) | (out->len - start));
}

int docht_decode(const uint8_t *p, size_t len, struct docht *out)
{
	const uint8_t *s = p, *end = p + len;
	int64_t gen, phys, logical, wid;
	uint64_t micros, shifted;
	if (len == 0 || len > DOCHT_MAX_LEN || (p[len - 1] & DOCHT_SIZE_MASK) != len)
		return DOCRAFT_ECORRUPT;
	if (svarint_decode(&s, end, &gen) != 0 || svarint_decode(&s, end, &phys) != 0 ||
	    svarint_decode(&s, end, &logical) != 0 || svarint_decode(&s, end, &wid) != 0 ||
	    s != end)
		return DOCRAFT_ECORRUPT;
	/* Every field is negated. The generation is ignored (always 0). */
	if (phys < -(int64_t)(HT_PHYSICAL_LIMIT - 1) + YB_EPOCH_MICROS || phys > YB_EPOCH_MICROS)
		return DOCRAFT_ECORRUPT;
	micros = (uint64_t)(YB_EPOCH_MICROS - phys);
	if (logical > 0 || logical < -0xFFF)
		return DOCRAFT_ECORRUPT;
	/* The write id field is -((write_id + 1) << 5) with its low bits
	 * overwritten by the size: the magnitude's top bits are intact. */
	if (wid > -32 || wid < -(((int64_t)UINT32_MAX + 1) << 5) - 31)
		return DOCRAFT_ECORRUPT;
	shifted = (uint64_t)-wid;
	out->ht = micros << 12 | (uint64_t)-logical;
	out->write_id = (uint32_t)((shifted >> 5) - 1);
	return 0;
}

int key_split_ht(const uint8_t *key, size_t len, size_t *path_len, struct docht *out)
{
	size_t n;
	int rv;
	if (len == 0)
		return DOCRAFT_ECORRUPT;
	n = key[len - 1] & DOCHT_SIZE_MASK;
	if (n == 0 || n >= len || key[len - n - 1] != KT_HYBRID_TIME)
		return DOCRAFT_ECORRUPT;
	rv = docht_decode(key + len - n, n, out);
	if (rv != 0)
		return rv;
	*path_len = len - n - 1;
	return 0;
}

int subdockey_decode(const uint8_t *key, size_t len, struct subdockey *out, struct arena *a)
{
	const uint8_t *s = key, *end = key + len;
	int rv;
	PRE(a != NULL);
	memset(out, 0, sizeof *out);
	rv = decode_dockey(&s, end, &out->doc, a);
	if (rv != 0)
		return rv;
	rv = decode_list(&s, end, true, &out->subkeys, &out->n_subkeys, a);
	if (rv != 0)
		return rv;
	if (s < end) {
		/* *s is '#': the rest is exactly one DocHT. */
		rv = docht_decode(s + 1, (size_t)(end - s - 1), &out->ht);
		if (rv != 0)
			return rv;
		out->has_ht = true;
	}
	return 0;
}
