/* The public value type (docraft_value, include/docraft/docraft.h) against
 * DocDB's primitive values (struct pv) and the wire's Datums.
 *
 * A docraft_value says what the program has (an integer, a text); a
 * column type says what the table stores (a tinyint, a timestamp). Which
 * value a column type takes, and how it becomes the pv the tablet server
 * will decode (so the client hashes a row's key as the tablet does), is
 * decided here; pv <-> Datum is rpc/wire.h's, the one conversion both
 * sides use. Also the type names of the public schema builder.
 *
 * Pure functions; any thread. Nothing here allocates outside the arena it
 * is given. */
#ifndef DOCRAFT_CLIENT_VALUES_H
#define DOCRAFT_CLIENT_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/arena.h"
#include "docdb/pv.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"

/* v for a column (or element) of type t: *d, the Datum to send (new in
 * a, as a uuid's bytes; text and blob bytes borrowed from v), and pv, the
 * value the server will decode from it (for hashing). NULL is accepted
 * only when allow_null. On error DOCRAFT_EINVAL with errmsg naming what
 * ("column 'x'"); *d is then an empty Datum. */
int values_to_datum(const docraft_value *v, enum col_type t, bool allow_null, const char *what,
		    struct arena *a, Docraft__Datum **d, struct pv *pv, char *errmsg);

/* A Datum received for a column (or element) of type t as a value, its
 * bytes copied into a (the value lives as long as a). A missing or NULL
 * Datum is the NULL value. A Datum not of t's kind: DOCRAFT_ECORRUPT
 * ("the server sent a value that is not ..."). */
int values_from_datum(const Docraft__Datum *d, enum col_type t, const char *what,
		      struct arena *a, docraft_value *out, char *errmsg);

/* v as a pv of column type t (for comparisons and hashing), unchecked:
 * call it on values values_to_datum accepts, or for a best effort. Strings
 * are borrowed (an empty one points at a static ""). */
struct pv values_to_pv(const docraft_value *v, enum col_type t);
/* A pv (as the CQL binder and the wire make them) of column type t as a
 * value; strings borrowed. */
docraft_value values_from_pv(const struct pv *v, enum col_type t);

/* Copies v[0..n) and their text and blob bytes into a (an array of at
 * least one element, so never NULL). */
docraft_value *values_copy(struct arena *a, const docraft_value *v, size_t n);

/* A type name of the public API ("int", "map<text, bigint>", case and
 * blanks free) as a column type and its element and value types (0 where
 * none). DOCRAFT_EINVAL if it is no type or a collection of collections. */
int values_parse_type(const char *s, enum col_type *t, enum col_type *elem,
		      enum col_type *value);

#endif
