#include "docdb/pv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/check.h"

/* Version 1 uuids: the comparable form's first 8 bytes are timestamp high,
 * mid, low, i.e. these bytes of the uuid. */
static const uint8_t v1_order[8] = {6, 7, 4, 5, 0, 1, 2, 3};

void uuid_to_comparable(const uint8_t u[16], uint8_t out[16])
{
	if ((u[6] & 0xF0) == 0x10) {
		for (int i = 0; i < 8; i++)
			out[i] = u[v1_order[i]];
	} else {
		/* Version nibble first, then bytes 0..5, then the low nibble
		 * of byte 6 and byte 7. */
		uint64_t m = be64_load(u);
		uint64_t r = (m & UINT64_C(0xF000)) << 48 | (m >> 16) << 12 | (m & 0xFFF);
		be64_store(out, r);
	}
	memcpy(out + 8, u + 8, 8);
}

void uuid_from_comparable(const uint8_t c[16], uint8_t out[16])
{
	if ((c[0] & 0xF0) == 0x10) {
		for (int i = 0; i < 8; i++)
			out[v1_order[i]] = c[i];
	} else {
		uint64_t r = be64_load(c);
		uint64_t m = ((r >> 12) & UINT64_C(0xFFFFFFFFFFFF)) << 16 | (r >> 60) << 12 |
			     (r & 0xFFF);
		be64_store(out, m);
	}
	memcpy(out + 8, c + 8, 8);
}

/* The ascending key type byte (pv_compare orders different types by it). */
static uint8_t asc_type_byte(const struct pv *v)
{
	switch (v->type) {
	case PV_NULL:
		return v->null_high ? '|' : '$';
	case PV_BOOL:
		return v->v.b ? 'T' : 'F';
	case PV_INT32:
		return 'H';
	case PV_INT64:
		return 'I';
	case PV_UINT32:
		return 'O';
	case PV_UINT64:
		return 'U';
	case PV_FLOAT:
		return 'C';
	case PV_DOUBLE:
		return 'D';
	case PV_STRING:
		return 'S';
	case PV_TIMESTAMP:
		return 's';
	case PV_UUID:
		return '_';
	case PV_COLUMN_ID:
		return 'K';
	case PV_SYSTEM_COLUMN_ID:
		return 'J';
	case PV_ARRAY_INDEX:
		return '[';
	case PV_REDIS_COUNTER:
		return '%';
	case PV_SS_FORWARD:
		return '&';
	case PV_SS_REVERSE:
		return '\'';
	}
	PANIC("bad pv type %u", v->type);
}

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* Order-preserving unsigned images of the IEEE bits (§2.3). */
static uint32_t float_order(float f)
{
	uint32_t u = pv_float_bits(f);
	return (u & UINT32_C(0x80000000)) ? ~u : u ^ UINT32_C(0x80000000);
}

static uint64_t double_order(double d)
{
	uint64_t u = pv_double_bits(d);
	return (u & UINT64_C(0x8000000000000000)) ? ~u : u ^ UINT64_C(0x8000000000000000);
}

int pv_compare(const struct pv *a, const struct pv *b)
{
	uint8_t ta = asc_type_byte(a), tb = asc_type_byte(b);
	if (ta != tb)
		return ta < tb ? -1 : 1;
	switch (a->type) {
	case PV_NULL:
	case PV_BOOL:
	case PV_REDIS_COUNTER:
	case PV_SS_FORWARD:
	case PV_SS_REVERSE:
		return 0; /* the type byte is the whole value */
	case PV_INT32:
		return CMP(a->v.i32, b->v.i32);
	case PV_INT64:
	case PV_TIMESTAMP:
	case PV_COLUMN_ID:
	case PV_SYSTEM_COLUMN_ID:
	case PV_ARRAY_INDEX:
		return CMP(a->v.i64, b->v.i64);
	case PV_UINT32:
		return CMP(a->v.u32, b->v.u32);
	case PV_UINT64:
		return CMP(a->v.u64, b->v.u64);
	case PV_FLOAT: {
		uint32_t x = float_order(a->v.f), y = float_order(b->v.f);
		return CMP(x, y);
	}
	case PV_DOUBLE: {
		uint64_t x = double_order(a->v.d), y = double_order(b->v.d);
		return CMP(x, y);
	}
	case PV_STRING: {
		size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
		int c = n ? memcmp(a->v.s.p, b->v.s.p, n) : 0;
		if (c != 0)
			return c < 0 ? -1 : 1;
		return CMP(a->v.s.len, b->v.s.len);
	}
	case PV_UUID: {
		uint8_t x[16], y[16];
		int c;
		uuid_to_comparable(a->v.uuid, x);
		uuid_to_comparable(b->v.uuid, y);
		c = memcmp(x, y, 16);
		return c < 0 ? -1 : c > 0 ? 1 : 0;
	}
	}
	PANIC("bad pv type %u", a->type);
}

bool pv_equal(const struct pv *a, const struct pv *b)
{
	return pv_compare(a, b) == 0;
}

static void format_double(struct buf *out, double d, int min_prec, int max_prec)
{
	char tmp[64];
	if (isnan(d)) {
		buf_append(out, "NaN", 3);
		return;
	}
	if (isinf(d)) {
		if (d < 0)
			buf_append(out, "-Infinity", 9);
		else
			buf_append(out, "Infinity", 8);
		return;
	}
	/* The shortest %g form that reads back as the same value. */
	for (int prec = min_prec; prec <= max_prec; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, d);
		if (prec == max_prec)
			break;
		if (max_prec > 9 ? strtod(tmp, NULL) == d : strtof(tmp, NULL) == (float)d)
			break;
	}
	buf_append(out, tmp, strlen(tmp));
}

static void format_string(struct buf *out, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;
	buf_reserve(out, n + 2);
	buf_push(out, '\'');
	for (i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
			run++;
			continue;
		}
		buf_append(out, p + i - run, run);
		run = 0;
		if (c == '\'' || c == '\\') {
			uint8_t e[2] = {'\\', c};
			buf_append(out, e, 2);
		} else {
			uint8_t e[4] = {'\\', 'x', (uint8_t)hex[c >> 4], (uint8_t)hex[c & 15]};
			buf_append(out, e, 4);
		}
	}
	buf_append(out, p + i - run, run);
	buf_push(out, '\'');
}

void pv_format(struct buf *out, const struct pv *v)
{
	switch (v->type) {
	case PV_NULL:
		buf_append(out, "NULL", 4);
		return;
	case PV_BOOL:
		if (v->v.b)
			buf_append(out, "true", 4);
		else
			buf_append(out, "false", 5);
		return;
	case PV_INT32:
	case PV_INT64:
		buf_printf(out, "%" PRId64, v->type == PV_INT32 ? v->v.i32 : v->v.i64);
		return;
	case PV_UINT32:
	case PV_UINT64:
		buf_printf(out, "%" PRIu64, v->type == PV_UINT32 ? v->v.u32 : v->v.u64);
		return;
	case PV_FLOAT:
		format_double(out, v->v.f, 6, 9);
		return;
	case PV_DOUBLE:
		format_double(out, v->v.d, 15, 17);
		return;
	case PV_STRING:
		format_string(out, v->v.s.p, v->v.s.len);
		return;
	case PV_TIMESTAMP:
		buf_printf(out, "ts(%" PRId64 "µs)", v->v.i64);
		return;
	case PV_UUID: {
		const uint8_t *u = v->v.uuid;
		buf_printf(out,
			   "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			   "%02x%02x%02x%02x%02x%02x",
			   u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
			   u[11], u[12], u[13], u[14], u[15]);
		return;
	}
	case PV_COLUMN_ID:
		buf_printf(out, "col(%" PRId64 ")", v->v.i64);
		return;
	case PV_SYSTEM_COLUMN_ID:
		buf_printf(out, "syscol(%" PRId64 ")", v->v.i64);
		return;
	case PV_ARRAY_INDEX:
		buf_printf(out, "idx(%" PRId64 ")", v->v.i64);
		return;
	case PV_REDIS_COUNTER:
		buf_append(out, "Counter", 7);
		return;
	case PV_SS_FORWARD:
		buf_append(out, "SSForward", 9);
		return;
	case PV_SS_REVERSE:
		buf_append(out, "SSReverse", 9);
		return;
	}
	PANIC("bad pv type %u", v->type);
}
