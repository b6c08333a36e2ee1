/* Value encoding (docdb-format.md §5): optional control fields in the order
 * 'k' merge flags, 't' TTL (svarint ms), 'u' user timestamp (BE64 µs), then
 * one value type byte and its payload. Value-side primitive payloads are not
 * order-preserving (§5.3): strings are raw to the end of the value. */
#ifndef DOCRAFT_DOCDB_VALUE_H
#define DOCRAFT_DOCDB_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/pv.h"

/* Value type bytes that are not primitives. */
#define VT_TOMBSTONE 'X'
#define VT_OBJECT '{'
#define VT_ARRAY 'A'
#define VT_REDIS_SET '('
#define VT_REDIS_LIST ')'
#define VT_REDIS_TS '+'
#define VT_REDIS_SORTED_SET ','
#define VT_PACKED_ROW_V1 'z'
#define VC_MERGE_FLAGS 'k'
#define VC_TTL 't'
#define VC_USER_TS 'u'

enum val_kind {
	VAL_PRIMITIVE = 0,   /* prim; PV_NULL is '$' (the liveness column) */
	VAL_TOMBSTONE,       /* 'X' */
	VAL_OBJECT,          /* '{' init marker: map, Redis hash, subdocument */
	VAL_ARRAY,           /* 'A' list init marker */
	VAL_REDIS_SET,       /* '(' */
	VAL_REDIS_LIST,      /* ')' */
	VAL_REDIS_TS,        /* '+' */
	VAL_REDIS_SORTED_SET,/* ',' */
	VAL_PACKED_ROW,      /* 'z' + packed payload (issue 3) */
};

struct docvalue {
	uint8_t kind;          /* enum val_kind */
	bool has_ttl;
	bool has_user_ts;
	uint64_t merge_flags;  /* 0 = none */
	int64_t ttl_ms;        /* with has_ttl; 0 means "never expires" */
	int64_t user_ts;       /* with has_user_ts, µs */
	struct pv prim;        /* VAL_PRIMITIVE */
	const uint8_t *packed; /* VAL_PACKED_ROW: bytes after 'z' (borrowed) */
	size_t packed_len;
};

static inline struct docvalue docvalue_of(struct pv p)
{
	struct docvalue v;
	memset(&v, 0, sizeof v);
	v.kind = VAL_PRIMITIVE;
	v.prim = p;
	return v;
}
static inline struct docvalue docvalue_kind(enum val_kind k)
{
	struct docvalue v;
	memset(&v, 0, sizeof v);
	v.kind = (uint8_t)k;
	return v;
}

/* Appends control fields that are set, then the value. */
void value_append(struct buf *out, const struct docvalue *v);
/* Decodes exactly len bytes; strings and packed payloads borrow from p.
 * Control fields are accepted only in the order 'k', 't', 'u', each at most
 * once (the intent-DocHT field '#' of §5.1 is not supported); a marker must
 * be the last byte; a primitive payload must have its exact size. Anything
 * else is DOCRAFT_ECORRUPT. An explicit 'k' 00 decodes as merge_flags 0. */
int value_decode(const uint8_t *p, size_t len, struct docvalue *out);

/* Value-side primitive only (type byte + payload). Key-only types
 * (column ids, array index) are a caller bug. */
void value_append_pv(struct buf *out, const struct pv *v);
int value_decode_pv(const uint8_t *p, size_t len, struct pv *out);

#endif
