/* Primitive values: the typed scalars that appear as key components (hash and
 * range columns, column ids, map keys, set members, list indexes) and as
 * stored values. Encoded by docdb/key.h (binary-comparable, key side) and
 * docdb/value.h (value side).
 *
 * A pv never owns memory: PV_STRING points at bytes owned by the caller (or by
 * the arena a decoder was given). */
#ifndef DOCRAFT_DOCDB_PV_H
#define DOCRAFT_DOCDB_PV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"

enum pv_type {
	PV_NULL = 0,         /* key: '$' (or '|' when null_high); value: '$' */
	PV_BOOL,             /* 'F'/'T', desc 'i'/'h' */
	PV_INT32,            /* 'H', desc 'e'; int8/int16 are widened */
	PV_INT64,            /* 'I', desc 'b' */
	PV_UINT32,           /* 'O', desc 'g' */
	PV_UINT64,           /* 'U', desc 'j' */
	PV_FLOAT,            /* 'C', desc 'M' */
	PV_DOUBLE,           /* 'D', desc 'L' */
	PV_STRING,           /* 'S', desc 'a': text and binary alike */
	PV_TIMESTAMP,        /* 's', desc 'c': int64 microseconds */
	PV_UUID,             /* '_', desc '`': 16 bytes, RFC 4122 order */
	PV_COLUMN_ID,        /* 'K' + svarint; key side only, ascending only */
	PV_SYSTEM_COLUMN_ID, /* 'J' + svarint; key side only; 0 = liveness */
	PV_ARRAY_INDEX,      /* '[' + int64; key side only (list element) */
	/* The YEDIS marker components (docdb-format.md §1.1, §11): key side
	 * only, ascending only, the type byte alone (no payload). */
	PV_REDIS_COUNTER,    /* '%' kCounter: a collection's cardinality subkey */
	PV_SS_FORWARD,       /* '&' kSSForward: a sorted set's score -> member map */
	PV_SS_REVERSE,       /* '\'' kSSReverse: a sorted set's member -> score map */
	PV_TYPE_COUNT
};

struct pv {
	uint8_t type;      /* enum pv_type */
	uint8_t desc;      /* key side: descending encoding */
	uint8_t null_high; /* key side, PV_NULL only: sorts last ('|') */
	union {
		bool b;
		int32_t i32;
		int64_t i64; /* INT64, TIMESTAMP, COLUMN_ID, SYSTEM_COLUMN_ID, ARRAY_INDEX */
		uint32_t u32;
		uint64_t u64;
		float f;
		double d;
		struct {
			const uint8_t *p;
			size_t len;
		} s;
		uint8_t uuid[16];
	} v;
};

#define LIVENESS_COLUMN_ID 0

static inline struct pv pv_null(void) { struct pv v; memset(&v, 0, sizeof v); return v; }
static inline struct pv pv_bool(bool b) { struct pv v = pv_null(); v.type = PV_BOOL; v.v.b = b; return v; }
static inline struct pv pv_int32(int32_t x) { struct pv v = pv_null(); v.type = PV_INT32; v.v.i32 = x; return v; }
static inline struct pv pv_int64(int64_t x) { struct pv v = pv_null(); v.type = PV_INT64; v.v.i64 = x; return v; }
static inline struct pv pv_uint32(uint32_t x) { struct pv v = pv_null(); v.type = PV_UINT32; v.v.u32 = x; return v; }
static inline struct pv pv_uint64(uint64_t x) { struct pv v = pv_null(); v.type = PV_UINT64; v.v.u64 = x; return v; }
static inline struct pv pv_float(float x) { struct pv v = pv_null(); v.type = PV_FLOAT; v.v.f = x; return v; }
static inline struct pv pv_double(double x) { struct pv v = pv_null(); v.type = PV_DOUBLE; v.v.d = x; return v; }
static inline struct pv pv_strn(const void *p, size_t n) { struct pv v = pv_null(); v.type = PV_STRING; v.v.s.p = (const uint8_t *)p; v.v.s.len = n; return v; }
static inline struct pv pv_str(const char *s) { return pv_strn(s, strlen(s)); }
static inline struct pv pv_timestamp(int64_t us) { struct pv v = pv_null(); v.type = PV_TIMESTAMP; v.v.i64 = us; return v; }
static inline struct pv pv_uuid(const uint8_t u[16]) { struct pv v = pv_null(); v.type = PV_UUID; memcpy(v.v.uuid, u, 16); return v; }
static inline struct pv pv_column(int64_t id) { struct pv v = pv_null(); v.type = PV_COLUMN_ID; v.v.i64 = id; return v; }
static inline struct pv pv_system_column(int64_t id) { struct pv v = pv_null(); v.type = PV_SYSTEM_COLUMN_ID; v.v.i64 = id; return v; }
static inline struct pv pv_liveness(void) { return pv_system_column(LIVENESS_COLUMN_ID); }
static inline struct pv pv_array_index(int64_t i) { struct pv v = pv_null(); v.type = PV_ARRAY_INDEX; v.v.i64 = i; return v; }
static inline struct pv pv_redis_counter(void) { struct pv v = pv_null(); v.type = PV_REDIS_COUNTER; return v; }
static inline struct pv pv_ss_forward(void) { struct pv v = pv_null(); v.type = PV_SS_FORWARD; return v; }
static inline struct pv pv_ss_reverse(void) { struct pv v = pv_null(); v.type = PV_SS_REVERSE; return v; }
/* True for the payload-less marker types (PV_REDIS_COUNTER .. PV_SS_REVERSE). */
static inline bool pv_is_marker(const struct pv *v) { return v->type >= PV_REDIS_COUNTER && v->type <= PV_SS_REVERSE; }
static inline struct pv pv_desc(struct pv v) { v.desc = 1; return v; }

/* Logical order of two values of the same type (NaN == NaN, -0.0 < +0.0, as
 * the key encoding orders them); for different types, by type byte order.
 * desc is ignored: this is the ascending order. Precisely, the order is that
 * of the ascending key encodings: NaN sorts above +inf, strings compare as
 * unsigned bytes with a prefix first, uuids compare by their comparable form
 * (§2.1: version-1 uuids by timestamp), and a PV_NULL with null_high has the
 * type byte '|' (above every other type), '$' otherwise (below). */
int pv_compare(const struct pv *a, const struct pv *b);
bool pv_equal(const struct pv *a, const struct pv *b);

/* Human-readable form used by the dump and the shell: 'text' (quotes
 * escaped, non-printable bytes as \xNN), 10, 1.5, true, NULL,
 * 123e4567-e89b-12d3-a456-426614174000, ts(…µs), col(3), syscol(0), idx(5),
 * and the YEDIS markers as Counter, SSForward, SSReverse.
 * Precisely: in strings ' and \ are backslash-escaped and bytes outside
 * 0x20..0x7E are \xNN (lowercase hex); floats and doubles use the shortest
 * %g form that reads back exactly (1, 1.5, 0.1, -0, 1e+300), NaN, Infinity,
 * -Infinity; timestamps are ts(<microseconds>µs), e.g. ts(5µs). */
void pv_format(struct buf *out, const struct pv *v);

/* Canonical IEEE bits (§2.3): every NaN becomes the quiet NaN (0x7FC00000,
 * 0x7FF8000000000000); -0.0 is kept. Shared by the key, value and hash
 * encodings. */
static inline uint32_t pv_float_bits(float f)
{
	uint32_t u;
	if (f != f)
		return UINT32_C(0x7FC00000);
	memcpy(&u, &f, sizeof u);
	return u;
}
static inline uint64_t pv_double_bits(double d)
{
	uint64_t u;
	if (d != d)
		return UINT64_C(0x7FF8000000000000);
	memcpy(&u, &d, sizeof u);
	return u;
}

/* The 16-byte "comparable" uuid form (§2.1, Uuid::EncodeToComparable) used
 * on disk, key and value side alike: a version-1 uuid has its first 8 bytes
 * reordered timestamp-high-first (6,7,4,5,0,1,2,3); any other version has its
 * version nibble moved in front of bytes 0..5. Bytes 8..15 are unchanged.
 * uuid_from_comparable is the exact inverse (a first nibble of 1 means
 * version 1); every 16-byte string is the image of exactly one uuid. */
void uuid_to_comparable(const uint8_t uuid[16], uint8_t out[16]);
void uuid_from_comparable(const uint8_t cmp[16], uint8_t out[16]);

#endif
