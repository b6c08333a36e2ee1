#include "docdb/value.h"

#include <string.h>

#include "common/check.h"
#include "docdb/varint.h"
#include "docraft/error.h"

/* Value-side primitive type bytes (docdb-format.md §5.3). */
enum {
	VT_NULL = '$',
	VT_FALSE = 'F',
	VT_TRUE = 'T',
	VT_INT32 = 'H',
	VT_INT64 = 'I',
	VT_UINT32 = 'O',
	VT_UINT64 = 'U',
	VT_FLOAT = 'C',
	VT_DOUBLE = 'D',
	VT_STRING = 'S',
	VT_TIMESTAMP = 's',
	VT_UUID = '_',
};

/* The value type byte of each fixed-width type (the key-only ones are
 * stored as int64, value_append_pv). */
static const uint8_t fixed_byte[PV_TYPE_COUNT] = {
	[PV_INT32] = VT_INT32,	       [PV_UINT32] = VT_UINT32,	 [PV_FLOAT] = VT_FLOAT,
	[PV_INT64] = VT_INT64,	       [PV_TIMESTAMP] = VT_TIMESTAMP, [PV_UINT64] = VT_UINT64,
	[PV_DOUBLE] = VT_DOUBLE,       [PV_COLUMN_ID] = VT_INT64,  [PV_SYSTEM_COLUMN_ID] = VT_INT64,
	[PV_ARRAY_INDEX] = VT_INT64,
};

/* The other way round, for the bytes that start a fixed-width value. */
static const uint8_t fixed_type[128] = {
	[VT_INT32] = PV_INT32,	       [VT_UINT32] = PV_UINT32,	 [VT_FLOAT] = PV_FLOAT,
	[VT_INT64] = PV_INT64,	       [VT_TIMESTAMP] = PV_TIMESTAMP, [VT_UINT64] = PV_UINT64,
	[VT_DOUBLE] = PV_DOUBLE,
};

void value_append_pv(struct buf *out, const struct pv *v)
{
	uint8_t b[17];
	switch (v->type) {
	case PV_NULL:
		buf_push(out, VT_NULL);
		return;
	case PV_BOOL:
		buf_push(out, v->v.b ? VT_TRUE : VT_FALSE);
		return;
	case PV_INT32:
	case PV_UINT32:
	case PV_FLOAT:
		/* BE32 of the bits: an int32's two's complement, a float's IEEE
		 * bits made canonical. */
		buf_push(out, fixed_byte[v->type]);
		buf_append_be32(out, v->type == PV_FLOAT ? pv_float_bits(v->v.f) : v->v.u32);
		return;
	case PV_REDIS_COUNTER:
	case PV_SS_FORWARD:
	case PV_SS_REVERSE:
		PRE(!"a key-only pv type has no value encoding");
		buf_push(out, VT_NULL); /* (release builds) */
		return;
	case PV_COLUMN_ID:
	case PV_SYSTEM_COLUMN_ID:
	case PV_ARRAY_INDEX:
		PRE(!"a key-only pv type has no value encoding");
		/* fall through: stored as an int64 */
	case PV_INT64:
	case PV_TIMESTAMP:
	case PV_UINT64:
	case PV_DOUBLE:
		buf_push(out, fixed_byte[v->type]);
		buf_append_be64(out, v->type == PV_DOUBLE ? pv_double_bits(v->v.d) : v->v.u64);
		return;
	case PV_STRING:
		buf_reserve(out, 1 + v->v.s.len);
		buf_push(out, VT_STRING);
		buf_append(out, v->v.s.p, v->v.s.len);
		return;
	case PV_UUID:
		b[0] = VT_UUID;
		uuid_to_comparable(v->v.uuid, b + 1);
		buf_append(out, b, 17);
		return;
	}
	PANIC("bad pv type %u", v->type);
}

int value_decode_pv(const uint8_t *p, size_t len, struct pv *out)
{
	const uint8_t *s = p + 1;
	size_t n;
	if (len == 0)
		return DOCRAFT_ECORRUPT;
	n = len - 1;
	memset(out, 0, sizeof *out);
	switch (p[0]) {
	case VT_NULL:
	case VT_FALSE:
	case VT_TRUE:
		if (n != 0)
			return DOCRAFT_ECORRUPT;
		out->type = p[0] == VT_NULL ? PV_NULL : PV_BOOL;
		out->v.b = p[0] == VT_TRUE;
		return 0;
	case VT_INT32:
	case VT_UINT32:
	case VT_FLOAT:
		if (n != 4)
			return DOCRAFT_ECORRUPT;
		out->type = fixed_type[p[0]];
		out->v.u32 = be32_load(s); /* the bits of the int32, uint32 or float */
		return 0;
	case VT_INT64:
	case VT_TIMESTAMP:
	case VT_UINT64:
	case VT_DOUBLE:
		if (n != 8)
			return DOCRAFT_ECORRUPT;
		out->type = fixed_type[p[0]];
		out->v.u64 = be64_load(s); /* the bits of the int64, uint64 or double */
		return 0;
	case VT_STRING:
		out->type = PV_STRING;
		out->v.s.p = n > 0 ? s : (const uint8_t *)"";
		out->v.s.len = n;
		return 0;
	case VT_UUID:
		if (n != 16)
			return DOCRAFT_ECORRUPT;
		out->type = PV_UUID;
		uuid_from_comparable(s, out->v.uuid);
		return 0;
	default:
		return DOCRAFT_ECORRUPT;
	}
}

static const uint8_t marker_byte[] = {
	[VAL_TOMBSTONE] = VT_TOMBSTONE,
	[VAL_OBJECT] = VT_OBJECT,
	[VAL_ARRAY] = VT_ARRAY,
	[VAL_REDIS_SET] = VT_REDIS_SET,
	[VAL_REDIS_LIST] = VT_REDIS_LIST,
	[VAL_REDIS_TS] = VT_REDIS_TS,
	[VAL_REDIS_SORTED_SET] = VT_REDIS_SORTED_SET,
};

/* The other way round: the kind of a marker byte; VAL_PRIMITIVE (0) for
 * every byte that is not one. */
static const uint8_t marker_kind[256] = {
	[VT_TOMBSTONE] = VAL_TOMBSTONE,
	[VT_OBJECT] = VAL_OBJECT,
	[VT_ARRAY] = VAL_ARRAY,
	[VT_REDIS_SET] = VAL_REDIS_SET,
	[VT_REDIS_LIST] = VAL_REDIS_LIST,
	[VT_REDIS_TS] = VAL_REDIS_TS,
	[VT_REDIS_SORTED_SET] = VAL_REDIS_SORTED_SET,
};

void value_append(struct buf *out, const struct docvalue *v)
{
	if (v->merge_flags != 0) {
		buf_push(out, VC_MERGE_FLAGS);
		uvarint_append(out, v->merge_flags);
	}
	if (v->has_ttl) {
		buf_push(out, VC_TTL);
		svarint_append(out, v->ttl_ms);
	}
	if (v->has_user_ts) {
		buf_push(out, VC_USER_TS);
		buf_append_be64(out, (uint64_t)v->user_ts);
	}
	switch (v->kind) {
	case VAL_PRIMITIVE:
		value_append_pv(out, &v->prim);
		return;
	case VAL_TOMBSTONE:
	case VAL_OBJECT:
	case VAL_ARRAY:
	case VAL_REDIS_SET:
	case VAL_REDIS_LIST:
	case VAL_REDIS_TS:
	case VAL_REDIS_SORTED_SET:
		buf_push(out, marker_byte[v->kind]);
		return;
	case VAL_PACKED_ROW:
		buf_reserve(out, 1 + v->packed_len);
		buf_push(out, VT_PACKED_ROW_V1);
		buf_append(out, v->packed, v->packed_len);
		return;
	}
	PANIC("bad value kind %u", v->kind);
}

int value_decode(const uint8_t *p, size_t len, struct docvalue *out)
{
	const uint8_t *s = p, *end = p + len;
	int rv;
	memset(out, 0, sizeof *out);
	if (s < end && *s == VC_MERGE_FLAGS) {
		s++;
		if ((rv = uvarint_decode(&s, end, &out->merge_flags)) != 0)
			return rv;
	}
	if (s < end && *s == VC_TTL) {
		s++;
		if ((rv = svarint_decode(&s, end, &out->ttl_ms)) != 0)
			return rv;
		out->has_ttl = true;
	}
	if (s < end && *s == VC_USER_TS) {
		if (end - s < 9)
			return DOCRAFT_ECORRUPT;
		out->user_ts = (int64_t)be64_load(s + 1);
		out->has_user_ts = true;
		s += 9;
	}
	if (s >= end)
		return DOCRAFT_ECORRUPT;
	if (*s == VT_PACKED_ROW_V1) {
		out->kind = VAL_PACKED_ROW;
		out->packed = s + 1;
		out->packed_len = (size_t)(end - s - 1);
		return 0;
	}
	out->kind = marker_kind[*s];
	if (out->kind == VAL_PRIMITIVE)
		return value_decode_pv(s, (size_t)(end - s), &out->prim);
	/* A marker is the whole value. */
	return end - s == 1 ? 0 : DOCRAFT_ECORRUPT;
}
