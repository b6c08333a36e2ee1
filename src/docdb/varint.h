/* YugabyteDB's own varints (docdb-format.md §2.5): big-endian, prefix-length
 * coded, binary-comparable. NOT protobuf varints. Pure functions. */
#ifndef DOCRAFT_DOCDB_VARINT_H
#define DOCRAFT_DOCDB_VARINT_H

#include <stdint.h>

#include "common/buf.h"

void svarint_append(struct buf *out, int64_t v);
/* svarint of -v ("descending svarint"); v must not be INT64_MIN. */
void svarint_desc_append(struct buf *out, int64_t v);
/* Advances *p past one svarint; DOCRAFT_ECORRUPT if truncated/malformed.
 * Both decoders accept only the encoding the encoders write (the shortest,
 * no negative zero): keys compare as bytes, so a value must have exactly
 * one encoding. */
int svarint_decode(const uint8_t **p, const uint8_t *end, int64_t *out);

void uvarint_append(struct buf *out, uint64_t v);
int uvarint_decode(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
