/* A readable dump of a store's raw key-value pairs, in the seeds' notation:
 *
 *   (0x1210, 'user1', 10), msg_column_id, T1 -> 'msg1'
 *   (0xfca0, 'abc.com'), liveness_column_id, T1 -> (TTL = 86400) [NULL]
 *   (0x1210, 'user1', 10), T5 -> [DELETE]
 *   (0x1210, 'user1', 10), T1 -> [PACKED ROW v0: msg='msg1']
 *
 * hash, hash and range components, subkeys (column ids named from a schema
 * when one is given), the hybrid time (or a label from the caller), then the
 * value with its TTL / user timestamp. A packed row shows its schema version
 * and, when the schema knows that version, each column (with its own TTL). Redis notation (redis = true) prints
 * strings bare, TTLs as "15, value1" and Redis type markers. Pure formatting:
 * never fails on garbage, which it shows as <corrupt ...>. */
#ifndef DOCRAFT_DOCDB_DUMP_H
#define DOCRAFT_DOCDB_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/schema.h"
#include "docdb/store.h"

struct dump_opts {
	const struct schema *schema; /* names column ids; may be NULL */
	/* Optional labels; return NULL to fall back to the numeric form. */
	const char *(*ht_label)(void *ctx, uint64_t ht);
	const char *(*hash_label)(void *ctx, uint16_t hash);
	void *ctx;
	bool redis;
	bool show_write_id; /* "T1 w2" instead of "T1" */
};

/* Appends one "\n"-terminated line for one stored pair. */
void dump_pair(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
	       const struct dump_opts *o, struct buf *out);
/* Appends every stored pair in key order (internal records skipped). */
int dump_store(struct store *s, const struct dump_opts *o, struct buf *out, char *errmsg);

#endif
