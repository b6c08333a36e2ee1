/* Row-level write operations, turned into DocDB (key-without-HT, value) pairs
 * appended to a batch (docdb/batch.h). Nothing here reads the store: every
 * operation is a blind write, as in the seeds ("does not incur any read
 * overhead"). Validation against the schema happens before anything is
 * appended: on error the batch is left exactly as it was.
 *
 *   INSERT         liveness column ('J' 0 -> '$') + each given column
 *   UPDATE SET     the columns only (no liveness: the row disappears once
 *                  all its columns are gone)
 *   DELETE col     'K' <id> -> 'X'
 *   DELETE row     DocKey -> 'X'
 *   map/set        element subkeys under the column; replace = tombstone at
 *                  the column, then the elements (higher write ids)
 *   list           elements under '[' <index>; append/prepend take indexes
 *                  from a caller-owned monotonic counter, no read needed
 *
 * INSERT of a collection column writes its elements without a marker, exactly
 * as the seed layout shows; to replace an existing collection use the
 * replace operations (see docs/docdb.md).
 *
 * Packed tables (schema->packed): an INSERT that gives every packable column
 * (regular, non-collection; NULL allowed) writes instead of the liveness
 * column and those columns one packed row, DocKey -> ['t' TTL] 'z' ...
 * (docdb/packed.h), carrying the TTL on the row and on each column; columns
 * that do not fit PACKED_SIZE_LIMIT and the collections follow as ordinary
 * cells. Any other INSERT, and every other operation, writes as above.
 *
 * A TTL of DOCWRITE_NO_TTL leaves the value without a TTL field (the table
 * default applies on read); 0 means "never expires". */
#ifndef DOCRAFT_DOCDB_DOCWRITE_H
#define DOCRAFT_DOCDB_DOCWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "docraft/error.h"
#include "docdb/batch.h"
#include "docdb/pv.h"
#include "docdb/schema.h"
#include "docdb/value.h"

#define DOCWRITE_NO_TTL (-1)

/* Deepest document path accepted below a DocKey (subkeys), by writes and
 * reads alike. */
#define DOCDB_MAX_SUBKEYS 64

/* Largest primitive value accepted (a clear DOCRAFT_ETOOBIG beyond). */
#define DOCWRITE_MAX_VALUE (4u * 1024 * 1024)

/* A column value for insert/update: a primitive (PV_NULL deletes), or the
 * elements of a collection (map: keys + values; set/list: keys only). */
struct colval {
	const char *name;
	struct pv value;        /* primitive columns */
	const struct pv *keys;  /* collections: map keys / set members / list items */
	const struct pv *vals;  /* maps: values */
	size_t n;
};

static inline struct colval colval_of(const char *name, struct pv v)
{
	struct colval c = {name, v, NULL, NULL, 0};
	return c;
}
static inline struct colval colval_map(const char *name, const struct pv *k, const struct pv *v,
				       size_t n)
{
	struct colval c = {name, {0}, k, v, n};
	return c;
}
static inline struct colval colval_elems(const char *name, const struct pv *e, size_t n)
{
	struct colval c = {name, {0}, e, NULL, n};
	return c;
}

/* Builder bound to one schema and one batch. list_counter: a caller-owned
 * counter that only grows (e.g. seeded from the hybrid clock's physical
 * microseconds); may be NULL if no list operation is used. */
struct docwrite {
	const struct schema *schema;
	struct batch *batch;
	int64_t *list_counter;
	struct buf key;  /* scratch */
	struct buf val;  /* scratch */
	struct buf doc;  /* encoded DocKey of the current row */
	const char *what; /* what is being written, for size errors */
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

void docwrite_init(struct docwrite *w, const struct schema *s, struct batch *b,
		   int64_t *list_counter);
void docwrite_free(struct docwrite *w);

/* Encodes the DocKey of a row from its key column values (hash columns then
 * range columns, schema order) into out (appended). Checks count and types. */
int docwrite_dockey(const struct schema *s, const struct pv *key, size_t nkey, struct buf *out,
		    char *errmsg);

/* All of these validate first, then append; errors leave the batch unchanged
 * and fill w->errmsg. key = key column values in schema order. */
int docwrite_insert(struct docwrite *w, const struct pv *key, size_t nkey,
		    const struct colval *cols, size_t ncols, int64_t ttl_ms);
int docwrite_update(struct docwrite *w, const struct pv *key, size_t nkey,
		    const struct colval *cols, size_t ncols, int64_t ttl_ms);
int docwrite_delete_row(struct docwrite *w, const struct pv *key, size_t nkey);
int docwrite_delete_column(struct docwrite *w, const struct pv *key, size_t nkey,
			   const char *col);
/* m = m + {k: v, ...} */
int docwrite_map_put(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
		     const struct pv *mkeys, const struct pv *mvals, size_t n, int64_t ttl_ms);
/* m = m - {k, ...}  /  DELETE m[k] */
int docwrite_map_remove(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			const struct pv *mkeys, size_t n);
/* s = s + {e, ...} / s = s - {e, ...} */
int docwrite_set_add(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
		     const struct pv *elems, size_t n, int64_t ttl_ms);
int docwrite_set_remove(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			const struct pv *elems, size_t n);
/* l = l + [e, ...] / l = [e, ...] + l */
int docwrite_list_append(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			 const struct pv *elems, size_t n, int64_t ttl_ms);
int docwrite_list_prepend(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			  const struct pv *elems, size_t n, int64_t ttl_ms);
/* c = {...} / [...]: tombstone at the column, then the elements. */
int docwrite_collection_replace(struct docwrite *w, const struct pv *key, size_t nkey,
				const struct colval *cv, int64_t ttl_ms);

/* Low-level document writes at any path: DocKey bytes + subkeys. Used for
 * generic documents (nested objects, Redis-style values). */
int docwrite_put_path(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
		      const struct pv *subkeys, size_t nsub, const struct docvalue *v);
int docwrite_delete_path(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
			 const struct pv *subkeys, size_t nsub);

/* A document to insert whole: a primitive, or an object whose children are
 * (key, document) pairs. Insertion writes the object's init marker, then its
 * children (higher write ids, so newer), recursively. */
struct subdoc {
	uint8_t is_object;
	struct pv value;               /* !is_object */
	const struct pv *keys;         /* is_object: child keys */
	const struct subdoc *children; /* is_object: child documents */
	size_t n;
};
int docwrite_insert_subdoc(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
			   const struct pv *subkeys, size_t nsub, const struct subdoc *doc);

#endif
