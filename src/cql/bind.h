/* From syntax to DocDB: CQL statements checked against a schema, literals
 * converted to primitive values, CREATE TABLE turned into a schema.
 *
 * The intended pipeline of one statement (parser.h → here → docdb):
 *
 *   cql_parse            text → struct cql_stmt (untyped literals)
 *   cql_create_schema    CREATE TABLE → struct schema
 *   cql_check_stmt       names and WHERE shape against the table's schema
 *   cql_bind_column/     literal → struct pv / collection elements for a
 *   cql_bind_assign      column (docwrite.h takes them from there)
 *
 * Every error is a struct cql_error pointing at the offending name or
 * literal (cql_error_render shows it) except cql_bind_value's, which has
 * only an errmsg, as its callers may not have a statement.
 *
 * Literal → column type (anything else is an error naming both):
 *   integer       tinyint/smallint/int/bigint (range checked), float, double,
 *                 timestamp (µs since the epoch), date (the raw CQL uint32:
 *                 days + 2^31)
 *   float, NaN, Infinity     float (range checked), double
 *   string        text/varchar (UTF-8 checked), timestamp (ISO-8601:
 *                 'YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][Z|±HH[:MM]]', UTC
 *                 by default), date ('YYYY-MM-DD'), uuid ('8-4-4-4-12')
 *   0x…           blob (a string never is: text and blob do not mix)
 *   uuid          uuid
 *   true/false    boolean
 *   NULL          any column (PV_NULL; whether NULL is allowed there is the
 *                 writer's rule: docwrite.h rejects it in keys)
 *   {k: v, …}     map; {a, …} set (and `{}` an empty map); […] list
 *   uuid(), now() uuid (random v4 / time-based v1); currenttimestamp(),
 *                 currentdate(): timestamp / date
 *   bare word     text columns only: the word as written, so the seed's
 *                 VALUES (user1, …) stores 'user1' as its layout shows
 *                 (cql_check_stmt rejects a word that names a column)
 *   ?, :name      never (an unbound marker is an error)
 *
 * Ownership: bound values point into the arena given (strings, collection
 * arrays) or into the literal (which lives in the statements' arena); both
 * must outlive their use. Thread-safety: none needed. */
#ifndef DOCRAFT_CQL_BIND_H
#define DOCRAFT_CQL_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "docdb/pv.h"
#include "docdb/schema.h"
#include "cql/ast.h"

/* Where now() and uuid() get time and randomness. */
struct cql_bind_env {
	int64_t now_us; /* µs since the epoch; 0: read CLOCK_REALTIME */
	/* Fills out with n random bytes; NULL: getrandom(2). */
	void (*random)(void *arg, uint8_t *out, size_t n);
	void *arg;
};

/* A bound column value: a primitive (value, PV_NULL for NULL), or the
 * elements of a collection literal (keys: map keys / set members / list
 * items; vals: map values). */
struct cql_value {
	bool is_collection;
	struct pv value;
	const struct pv *keys;
	const struct pv *vals;
	size_t n;
};

/* Converts lit to a value of the primitive column type `type` (the table
 * above) into out, copying bytes into a when needed. Returns 0, or
 * DOCRAFT_EINVAL with errmsg = "<type>: <reason>", e.g. "int: cannot store
 * 'abc'". Collection types are refused (cql_bind_column binds those). */
int cql_bind_value(const struct cql_literal *lit, enum col_type type, struct arena *a,
		   struct pv *out, char *errmsg);

/* Binds lit for column col: a primitive, NULL or a whole collection (for
 * INSERT, `c = …` and WHERE). env may be NULL (the defaults). Errors point
 * at the literal (or the element) and read "column msg_id is int: cannot
 * store 'abc'". */
int cql_bind_column(const struct cql_literal *lit, const struct column *col,
		    const struct cql_bind_env *env, struct arena *a, struct cql_value *out,
		    struct cql_error *err);

/* Binds an UPDATE assignment for column col (= as->col), checking that the
 * operation fits the column:
 *   SET      out as cql_bind_column (a collection literal replaces)
 *   ADD      map: a map literal (map put); set: a set (set add); list: a list
 *            (append); any other column: an error at the operator
 *   REMOVE   map: a set of keys (map remove); set: a set (set remove); lists
 *            are refused (removal by value needs a read)
 *   PREPEND  list only: a list
 *   ELEM     map only: *key gets the key, out the value (PV_NULL: remove the
 *            entry); lists are refused (setting by index needs a read)
 * key may be NULL unless as->op is CQL_ASSIGN_ELEM. */
int cql_bind_assign(const struct cql_assign *as, const struct column *col,
		    const struct cql_bind_env *env, struct arena *a, struct pv *key,
		    struct cql_value *out, struct cql_error *err);

/* Binds the key of DELETE m[k] (a map column; the key may not be NULL). */
int cql_bind_map_key(const struct cql_literal *lit, const struct column *col,
		     const struct cql_bind_env *env, struct arena *a, struct pv *out,
		     struct cql_error *err);

/* Builds the schema of a CREATE TABLE into out (schema_init'ed here; free
 * with schema_free). Column ids follow the schema's order: hash columns in
 * PRIMARY KEY order, then range columns in PRIMARY KEY order, then the other
 * columns as declared; range columns are DESC as WITH CLUSTERING ORDER says;
 * default_ttl_ms = default_time_to_live * 1000; the option `packed = true`
 * sets schema.packed. Errors (out is then left freed), each pointing at its
 * token: no or several primary keys, an unknown or repeated column, a key
 * column that is a collection, an unknown type, CLUSTERING ORDER on a column
 * that is not a range column or out of key order, an unknown option. */
int cql_create_schema(const struct cql_create_table *ct, struct schema *out,
		      struct cql_error *err);

/* Checks a statement's names and shape against its table's schema (CREATE
 * and DROP TABLE need none: 0). Rules:
 *   INSERT   known, distinct columns; every key column given
 *   UPDATE   known, non-key assigned columns; m[k] only for maps
 *   DELETE   known, non-key targets; m[k] only for maps
 *   UPDATE, DELETE: WHERE gives every key column exactly once, with =, and
 *            nothing else
 *   SELECT   known columns; WHERE: = on hash columns (all of them or none),
 *            = or a range (<, <=, >, >=; at most one lower and one upper
 *            bound) on range columns, after = on every earlier range column
 *            and on the hash columns; other columns only with ALLOW
 *            FILTERING. ORDER BY: range columns in key order, all in the
 *            table's clustering order or all reversed, with the hash columns
 *            restricted by =
 *   any bare-word value that names a column of the table is refused (CQL
 *   cannot copy a column; 'quote' a string)
 * Returns 0 or DOCRAFT_EINVAL with err at the offending name. */
int cql_check_stmt(const struct cql_stmt *st, const struct schema *s, struct cql_error *err);

/* 'YYYY-MM-DD[( |T)HH:MM[:SS[.f…]]][ ][Z|±HH[[:]MM]]' (s[0..len)) → µs since
 * the epoch (UTC unless a zone is given). Returns 0 or DOCRAFT_EINVAL +
 * errmsg. */
int cql_parse_timestamp(const char *s, size_t len, int64_t *us, char *errmsg);
/* 'YYYY-MM-DD' → the CQL date (days since the epoch + 2^31). */
int cql_parse_date(const char *s, size_t len, uint32_t *date, char *errmsg);
/* '123e4567-e89b-12d3-a456-426614174000' → 16 bytes. */
int cql_parse_uuid(const char *s, size_t len, uint8_t out[16], char *errmsg);

/* "int", "map<text, int>", ... into buf (size >= 48); returns buf. */
const char *cql_type_str(enum col_type t, enum col_type elem, enum col_type value, char *buf,
			 size_t size);

#endif
