/* The txn's insides, shared by yedis.c (which creates and frees it and
 * dispatches commands) and view.c (which reads and writes through it).
 * Internal to src/yedis: command files use yedis_int.h only.
 *
 * The overlay. A txn's own writes must be visible to its later commands
 * before the batch is applied, so view.c keeps, per Redis key written, an
 * okey: whether the root was replaced in this txn (then the store's
 * versions of the key are hidden entirely) and with what, whether a TTL
 * merge record was written on top, and the children written (encoded
 * subkey paths after the DocKey -> encoded values, 'X' for a tombstone),
 * kept unsorted with a sequence number and sorted lazily when read (later
 * writes of a path win). Okeys are found by their DocKey in an open
 * addressing table. Everything lives in the txn's arena but the kids
 * arrays (xgrow, freed with the txn). One thread. */
#ifndef DOCRAFT_YEDIS_TXN_H
#define DOCRAFT_YEDIS_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/value.h"
#include "yedis/yedis.h"

struct okid {
	const uint8_t *path; /* encoded subkeys after the DocKey */
	size_t plen;
	const uint8_t *val; /* encoded value ('X': tombstone) */
	size_t vlen;
	uint64_t seq; /* write order: the later one wins */
	size_t pair;  /* where its latest pair starts in the batch */
};

struct okey {
	const uint8_t *dockey;
	size_t dlen;
	uint64_t hash;
	bool root_written;    /* a new root or a root tombstone in this txn */
	bool root_deleted;    /* ... a tombstone */
	struct docvalue root; /* with root_written && !root_deleted; TTL from the txn's ht */
	bool merged;          /* a TTL merge record after it (or over the store's root) */
	bool merge_has_ttl;
	int64_t merge_ttl_ms;
	struct okid *kids;
	size_t nkids, kids_cap;
	bool sorted; /* kids sorted by path (always one per path: a write to a
			path already there replaces it) */
	/* Index of kids by path (open addressing, kid index + 1, 0 empty;
	 * ix_cap a power of 2 or 0): point lookups and writes cost O(1)
	 * whatever the order the paths come in; rebuilt after a sort. */
	size_t *ix;
	size_t ix_cap;
	bool ix_valid;
	/* Where this txn's pairs of the key start in the batch: a new root
	 * (or root tombstone) hides them all, so yedis_txn_seal drops them. */
	size_t *pairs;
	size_t npairs, pairs_cap;
};

struct yedis_txn {
	struct yedis_txn_options o;
	struct arena arena;
	uint64_t rng;
	uint64_t seq;
	struct okey **tab; /* open addressing, tab_cap a power of 2 */
	size_t tab_cap, nkeys;
	struct buf kbuf; /* scratch: keys */
	struct buf vbuf; /* scratch: values */
	/* A read-only txn (no batch) reads at one time and writes nothing,
	 * so the root it last read stays true for the txn: a request of
	 * many reads of one hot key (the front end's shared requests) reads
	 * the store once (yv_root). */
	size_t *hidden; /* batch offsets of pairs a later root write hides */
	size_t nhidden, hidden_cap;
	struct buf memo_key;             /* the DocKey; len 0: none */
	const struct docnode *memo_node; /* its root node, NULL: absent; in arena */
};

/* view.c: the overlay's teardown (yedis_txn_free). */
void view_free(struct yedis_txn *t);

#endif
