/* A DocDB write batch: an ordered list of (key without hybrid time, value)
 * pairs. It is what the leader builds and what Raft replicates (design.md,
 * "The write path"); at apply time entry i gets the suffix
 * '#' DocHT(batch_ht, write_id = i), so replaying it yields identical keys.
 *
 * Serialized form (the bytes in data): repeated
 *     LE32 key_len, key, LE32 value_len, value
 * Ownership: the batch owns data. Not thread-safe. */
#ifndef DOCRAFT_DOCDB_BATCH_H
#define DOCRAFT_DOCDB_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Largest key and value accepted in a batch. */
#define BATCH_MAX_KEY (64u * 1024)
#define BATCH_MAX_VALUE (32u * 1024 * 1024)

struct batch {
	struct buf data;
	uint32_t count;
};

static inline void batch_init(struct batch *b) { buf_init(&b->data); b->count = 0; }
static inline void batch_free(struct batch *b) { buf_free(&b->data); b->count = 0; }
static inline void batch_reset(struct batch *b) { buf_reset(&b->data); b->count = 0; }
void batch_put(struct batch *b, const void *key, size_t klen, const void *val, size_t vlen);

struct batch_iter {
	const uint8_t *p;
	const uint8_t *end;
};

static inline void batch_iter_init(struct batch_iter *it, const void *data, size_t len)
{
	it->p = (const uint8_t *)data;
	it->end = len > 0 ? it->p + len : it->p; /* an empty batch may be NULL */
}
/* 1 with the next pair (pointers into the batch bytes), 0 at the end,
 * DOCRAFT_ECORRUPT (as a negative: -DOCRAFT_ECORRUPT) on malformed bytes. */
int batch_next(struct batch_iter *it, const uint8_t **key, size_t *klen, const uint8_t **val,
	       size_t *vlen);
/* Checks serialized bytes from an untrusted source; counts the pairs. */
int batch_validate(const void *data, size_t len, uint32_t *count, char *errmsg);

#endif
