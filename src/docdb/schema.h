/* A table schema: hash columns, range columns (each ASC or DESC), regular
 * columns of primitive or collection type (map<k,v>, set<t>, list<t>), a
 * default TTL, the table option `packed` and a version. Every column has a
 * stable column id, assigned from 0 in declaration order (docdb-format.md
 * §2.4) and never reused, not even after the column is dropped; regular
 * columns are stored under the subkey 'K' <id>, the liveness column under
 * 'J' 0.
 *
 * Versions: a schema is built at version 0 (schema_add_column). Altering a
 * built schema (schema_add_regular_column, schema_drop_column) bumps the
 * version and keeps, for every version so far, its packable columns: the
 * regular non-collection columns in schema order (§8.1). Packed rows name
 * their version, so rows written before an ALTER stay readable
 * (docdb/packed.h).
 *
 * Ownership: a schema owns its column names and version history. Build one
 * with schema_init + schema_add_column, release with schema_free. Immutable
 * once built (between ALTERs); may then be shared read-only between threads. */
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

/* The packable columns of one schema version (§8.1), in packing order. */
struct schema_version {
	uint32_t version;
	size_t n;
	int32_t *ids;
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
	/* Table option: an INSERT that gives every packable column writes one
	 * packed row (docwrite.h). Off by default. */
	bool packed;
	/* A YEDIS table (issue 17, TableSchema.redis): one hash column k blob;
	 * its documents are seed 002's typed Redis values (src/yedis/yedis.h). */
	bool redis;
	/* Every version so far, oldest first; the last one is `version`. Empty
	 * until the first column is added. */
	struct schema_version *versions;
	size_t nversions;
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

/* ALTER TABLE ADD: a regular column (elem_type/value_type as above) added
 * to a built schema as a new version. Errors as schema_add_column; on error
 * the schema is unchanged. */
int schema_add_regular_column(struct schema *s, const char *name, enum col_type type,
			      enum col_type elem_type, enum col_type value_type, char *errmsg);
/* ALTER TABLE DROP: removes a regular column as a new version; its id is
 * never given to another column. DOCRAFT_EINVAL for an unknown or a key
 * column (the schema is then unchanged). Readers ignore the dropped
 * column's stored cells and packed slots. */
int schema_drop_column(struct schema *s, const char *name, char *errmsg);
/* The packable columns of a version, or NULL if the schema has no such
 * version (none yet, or one it never had). */
const struct schema_version *schema_version_get(const struct schema *s, uint32_t version);
/* Deep copy (dst is overwritten, not freed first). */
void schema_copy(struct schema *dst, const struct schema *src);

const struct column *schema_find(const struct schema *s, const char *name);
const struct column *schema_find_id(const struct schema *s, int32_t id);
static inline size_t schema_nkeys(const struct schema *s) { return s->n_hash + s->n_range; }
/* Whether any column was ever dropped (ids are dense otherwise), and
 * whether id is one of them. */
static inline bool schema_has_dropped(const struct schema *s)
{
	return s->ncols < (size_t)s->next_id;
}
static inline bool schema_id_dropped(const struct schema *s, int32_t id)
{
	return schema_has_dropped(s) && id >= 0 && id < s->next_id && schema_find_id(s, id) == NULL;
}

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
