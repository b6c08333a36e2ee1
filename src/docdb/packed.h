/* Packed rows, v1 layout (docdb-format.md §8.1, §8.2): all packable columns
 * of a row in one value at the DocKey itself,
 *
 *   [row control fields] 'z' | uvarint schema_version | LE32 end offset per
 *   column | column data...
 *
 * The packable columns of a version are its regular non-collection columns
 * in schema order (struct schema_version, docdb/schema.h). End offsets count
 * from the start of the data area. A column's data is its ordinary value
 * encoding (value.h): optional control fields (its own TTL) then the type
 * byte and payload. Zero-length data is NULL.
 *
 * The functions here work on the payload after 'z' (what value_decode
 * returns in docvalue.packed); value_append adds the control fields and 'z'.
 * Decoders never trust their input: anything malformed is DOCRAFT_ECORRUPT,
 * never a crash or a read outside the given bytes. Pure functions. */
#ifndef DOCRAFT_DOCDB_PACKED_H
#define DOCRAFT_DOCDB_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/schema.h"
#include "docdb/value.h"

/* The data area of a packed row stays within this many bytes (§8.4, YCQL's
 * default 32 KiB): a column value that would not fit is written as its own
 * cell and its slot left NULL. */
#define PACKED_SIZE_LIMIT (32u * 1024)

/* Appends the payload of a packed row of `version` with n columns; cols[i]
 * is the i-th column's value (a non-NULL primitive, optionally with a TTL)
 * or NULL for a NULL slot. */
void packed_encode(struct buf *out, uint32_t version, const struct docvalue *const *cols,
		   size_t n);

/* The size column value v takes in a packed row's data area. */
size_t packed_value_size(const struct docvalue *v);

/* A parsed payload, borrowing the bytes it was parsed from. */
struct packed_row {
	uint32_t version;
	size_t n;               /* columns */
	const uint8_t *offsets; /* n LE32 end offsets */
	const uint8_t *data;
	size_t data_len;
};

/* Reads only the schema version at the start of a payload. */
int packed_version(const uint8_t *p, size_t len, uint32_t *version);

/* Parses a payload whose version must have n columns (the caller looked its
 * version up): the offsets must fit, never decrease and end exactly at the
 * end of the data. */
int packed_parse(const uint8_t *p, size_t len, size_t n, struct packed_row *out);

/* Same, with the column count taken from the schema's record of the
 * payload's version; DOCRAFT_ECORRUPT (reason in errmsg, may be NULL) for a
 * version the schema never had. *ver receives that version's columns. */
int packed_parse_schema(const uint8_t *p, size_t len, const struct schema *s,
			struct packed_row *out, const struct schema_version **ver, char *errmsg);

/* Column i (< r->n): *is_null for a NULL slot, else *out is its value, a
 * primitive that is not NULL, with at most the TTL and user-timestamp
 * control fields. Strings borrow from the payload. */
int packed_column(const struct packed_row *r, size_t i, struct docvalue *out, bool *is_null);

#endif
