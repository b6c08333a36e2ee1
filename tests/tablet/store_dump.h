/* Test helper: a store's whole contents as one byte string, to compare two
 * replicas byte for byte. Header-only (static): included by the raft tests
 * that need it. */
#ifndef DOCRAFT_TESTS_STORE_DUMP_H
#define DOCRAFT_TESTS_STORE_DUMP_H

#include "common/buf.h"
#include "common/err.h"
#include "docdb/store.h"
#include "test.h"

/* Every stored pair, internal records (retry table, marker) included, in key
 * order: LE32 length + key, LE32 length + value. Fails the test on a read
 * error. */
static inline void store_dump(struct store *s, struct buf *out)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);
	int rv;

	buf_reset(out);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);

		buf_append_le32(out, (uint32_t)kl);
		buf_append(out, k, kl);
		buf_append_le32(out, (uint32_t)vl);
		buf_append(out, v, vl);
	}
	rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	CHECK_OK_MSG(rv, errmsg);
}

#endif
