/* Conditions of a conditional write (compare-and-set): "row R's column C
 * equals V" or "row R's column C has no live value", encoded so that they
 * travel inside a Raft entry (tablet/entry.h) and are evaluated where the
 * entry is applied, on every replica, against the store as it is then.
 *
 * Encoding of one request's conditions (a "condition blob"):
 *
 *   BE32  number of conditions (1..CONDITION_MAX)
 *   per condition:
 *     BE32   length of the row's DocKey, then the DocKey (docdb/key.h;
 *            exactly one well-formed DocKey)
 *     BE32   column id (0..INT32_MAX): the cell 'K' <id> of the row
 *     u8     0: the column must have no live value
 *            1: the column's live value must equal the value that follows
 *     (1 only) BE32 length, then a value-side primitive (docdb/value.h,
 *            value_append_pv; never NULL '$')
 *
 * Every byte belongs to exactly one field: trailing bytes are malformed.
 * Decoding never trusts its input (blobs arrive from the network): anything
 * malformed is DOCRAFT_ECORRUPT with a message, never a crash.
 *
 * Evaluation reads the column exactly as reader_get_table_doc does at the
 * read time (row tombstones, column tombstones, TTLs including the table
 * default, packed rows, dropped columns), so a condition sees what a read
 * at that hybrid time sees. A column's live value is a primitive node
 * (containers, NULL and absent cells are "no live value"); equality is
 * pv_equal (same type and value; NaN equals NaN, -0.0 differs from +0.0, as
 * the key encoding orders them).
 *
 * Pure functions over the caller's buffers; condition_eval reads a store
 * (any thread, like the reader). */
#ifndef DOCRAFT_DOCDB_CONDITION_H
#define DOCRAFT_DOCDB_CONDITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/pv.h"
#include "docdb/schema.h"
#include "docdb/store.h"

/* Most conditions one request may carry. */
#define CONDITION_MAX 1024

struct condition {
	const uint8_t *dockey; /* the row's DocKey (borrowed) */
	size_t dockey_len;
	int32_t column_id;
	bool has_value;        /* false: "no live value" */
	struct pv value;       /* with has_value: never PV_NULL; strings borrowed */
};

/* Appends the blob of c[0..n) to out. Pre: 1 <= n <= CONDITION_MAX, each
 * DocKey well-formed, column ids >= 0, values (has_value) primitive and not
 * PV_NULL, not a key-only type. */
void condition_encode(struct buf *out, const struct condition *c, size_t n);

/* Decodes the blob p[0..len) into *out (an array of *n conditions allocated
 * in a; DocKeys and strings borrow from p). DOCRAFT_ECORRUPT + errmsg on
 * anything malformed (see the layout above); *out and *n are then unset. */
int condition_decode(const uint8_t *p, size_t len, struct arena *a, struct condition **out,
		     size_t *n, char *errmsg);

/* condition_decode without keeping the result: 0 or DOCRAFT_ECORRUPT. */
int condition_validate(const uint8_t *p, size_t len, char *errmsg);

/* Evaluates every condition of the blob against s as of read_ht: *holds is
 * true when all hold (evaluation stops at the first false one). schema:
 * the table's (decodes packed rows, gives the default TTL and the dropped
 * columns); NULL reads without packings and with store_default_ttl_ms(s).
 * Errors: DOCRAFT_ECORRUPT (malformed blob or stored data), DOCRAFT_ETOOOLD
 * (read_ht below the history cutoff), DOCRAFT_EINVAL (read_ht invalid),
 * DOCRAFT_EIO; *holds is then false. */
int condition_eval(struct store *s, const struct schema *schema, const uint8_t *p, size_t len,
		   uint64_t read_ht, bool *holds, char *errmsg);

#endif
