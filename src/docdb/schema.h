/* A table schema: hash columns, range columns (each ASC or DESC), regular
 * columns of primitive or collection type (map<k,v>, set<t>, list<t>), a
 * default TTL and a version. Every column has a stable column id, assigned
 * from 0 in declaration order (docdb-format.md §2.4); regular columns are
 * stored under the subkey 'K' <id>, the liveness column under 'J' 0.
 *
 * Ownership: a schema owns its column names. Build one with schema_init +
 * schema_add_column, release with schema_free. Immutable once built; may then
 * be shared read-only between threads. */
#ifndef DOCRAFT_DOCDB_SCHEMA_H
#define DOCRAFT_DOCDB_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docraft/error.h"
#include "docdb/pv.h"

enum col_type {
	CT_BOOL = 1,
	CT_INT8,
	CT_INT16,
	CT_INT32,
	CT_INT64,
	CT_FLOAT,
	CT_DOUBLE,
	CT_TEXT,      /* UTF-8, checked */
	CT_BLOB,
	CT_TIMESTAMP, /* µs since the epoch */
	CT_UUID,
	CT_DATE,      /* days, uint32 as in CQL */
	CT_MAP,       /* map<elem_type, value_type> */
	CT_SET,       /* set<elem_type> */
	CT_LIST,      /* list<elem_type> */
};

enum col_kind {
	COL_HASH = 1,
	COL_RANGE,
	COL_REGULAR,
};

#define SCHEMA_MAX_COLUMNS 1024
#define SCHEMA_MAX_NAME 64

struct column {
	char *name;
	int32_t id;
	uint8_t kind;       /* enum col_kind */
	uint8_t type;       /* enum col_type */
	uint8_t elem_type;  /* collections: map key / set member / list element */
	uint8_t value_type; /* maps: value type */
	bool desc;          /* range columns: DESC */
};

struct schema {
	char *table;
	struct column *cols; /* hash columns, then range, then regular */
	size_t ncols;
	size_t n_hash;
	size_t n_range;
	int64_t default_ttl_ms; /* 0 = none */
	uint32_t version;
	int32_t next_id;
};

int schema_init(struct schema *s, const char *table, char *errmsg);
void schema_free(struct schema *s);

/* Adds a column. Hash columns must come before range columns, key columns
 * before regular ones; key columns must be primitive; names must be unique
 * identifiers. elem_type/value_type only for collections (else 0). Errors:
 * DOCRAFT_EINVAL with the reason in errmsg. */
int schema_add_column(struct schema *s, const char *name, enum col_kind kind, enum col_type type,
		      enum col_type elem_type, enum col_type value_type, bool desc, char *errmsg);
/* Convenience for primitive columns. */
static inline int schema_add(struct schema *s, const char *name, enum col_kind kind,
			     enum col_type type, char *errmsg)
{
	return schema_add_column(s, name, kind, type, 0, 0, false, errmsg);
}

/* Deep copy (dst is overwritten, not freed first). */
void schema_copy(struct schema *dst, const struct schema *src);

const struct column *schema_find(const struct schema *s, const char *name);
const struct column *schema_find_id(const struct schema *s, int32_t id);
static inline size_t schema_nkeys(const struct schema *s) { return s->n_hash + s->n_range; }

bool col_type_is_collection(enum col_type t);
/* "text", "int", "map<text, int>" ...; static or written into out. */
const char *col_type_name(enum col_type t);
/* Parses a primitive type name (CQL spelling: int, bigint, text, ...);
 * 0 if unknown. */
enum col_type col_type_parse(const char *name);
/* The pv type a value of a primitive column type is carried in. */
enum pv_type col_type_pv(enum col_type t);

/* Checks that v may be stored in a column (or collection element) of type t.
 * PV_NULL is accepted only when allow_null. DOCRAFT_EINVAL + reason naming
 * what (e.g. the column name) on mismatch, out-of-range int8/int16, or text
 * that is not UTF-8. */
int schema_check_value(enum col_type t, const struct pv *v, bool allow_null, const char *what,
		       char *errmsg);

#endif
