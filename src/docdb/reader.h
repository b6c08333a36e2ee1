/* Reads at a hybrid time (docdb-format.md §6): rebuilds documents from their
 * key-value versions.
 *
 * For each exact path the newest version with HT <= read time wins. An entry
 * at a path (tombstone, primitive, init marker) hides every older entry below
 * it. A value's TTL counts from its own write time; without one it inherits
 * an explicit TTL from its parent, else the table default applies; TTL 0 means
 * never. Expired values read as absent, like tombstones. A row (CQL) exists
 * when it has a live liveness column or at least one live column, so a row
 * written only by UPDATE disappears when all its columns are gone.
 *
 * A packed row (docdb/packed.h) reads exactly as the liveness column and
 * column cells it replaces, written at its DocHT: it yields a 'J' 0 node
 * (so a live packed row keeps the row alive) and one 'K' <id> node per
 * column of its schema version, each hiding only older versions of its own
 * path; newer cells win. Columns its version lacks are simply absent.
 * Decoding needs the table schema: reader_get_row, reader_scan and
 * reader_get_table_doc have it; reader_get_doc fails on a packed row with
 * DOCRAFT_EINVAL. With a schema, cells and slots of dropped columns are not
 * returned.
 *
 * A root version with merge flags (a TTL merge record, §5.1: Redis EXPIRE,
 * PERSIST) is folded into the next older full root value: the newest one
 * sets that value's TTL, counted from the merge record's hybrid time (no
 * 't': the value has no TTL of its own any more).
 *
 * Results live in the caller's arena (valid until it is reset or freed).
 * Reads below the store's history cutoff fail with DOCRAFT_ETOOOLD.
 * Threading: any thread; concurrent with store_apply. */
#ifndef DOCRAFT_DOCDB_READER_H
#define DOCRAFT_DOCDB_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/key.h"
#include "docdb/pv.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/value.h"

/* One node of a rebuilt document. */
struct docnode {
	struct pv key;           /* subkey under the parent (the root: PV_NULL) */
	uint8_t kind;            /* VAL_PRIMITIVE or a container (enum val_kind) */
	bool has_marker;         /* container written with an init marker */
	struct pv value;         /* VAL_PRIMITIVE */
	struct docht write_time; /* of the entry that set it (containers: the
				    marker, or the newest child for implicit ones) */
	bool has_ttl;            /* an explicit TTL governs this value */
	int64_t ttl_ms;          /* with has_ttl: the TTL ... */
	uint64_t ttl_from;       /* ... counted from this hybrid time */
	size_t n_children;
	struct docnode *children; /* first child, in key order */
	struct docnode *next;     /* next sibling */
	struct docnode *last_;    /* internal: last child */
	struct docnode *parent_;  /* internal */
};

/* Child with the given key, or NULL. */
const struct docnode *docnode_child(const struct docnode *n, const struct pv *key);

/* Rebuilds the document at DocKey + subkeys as of read_ht; *out is NULL when
 * it does not exist. default_ttl_ms: the table's default TTL (0 = none). */
int reader_get_doc(struct store *s, const uint8_t *dockey, size_t dockey_len,
		   const struct pv *subkeys, size_t nsub, uint64_t read_ht, int64_t default_ttl_ms,
		   struct arena *a, const struct docnode **out, char *errmsg);

/* reader_get_doc without the descendants: the node at the path alone (its
 * value, or a container written with an init marker, with no children),
 * as the path's own versions and its ancestors' decide it; *out NULL when
 * the path holds no live value or marker of its own. What a Redis
 * command reads to learn a key's type and expiry without its members. */
int reader_get_node(struct store *s, const uint8_t *dockey, size_t dockey_len,
		    const struct pv *subkeys, size_t nsub, uint64_t read_ht, int64_t default_ttl_ms,
		    struct arena *a, const struct docnode **out, char *errmsg);

/* The live primitive leaves below DocKey + prefix[0..nprefix), in key
 * order (reverse: descending), as reader_get_doc would build them (the
 * prefix's ancestors hide and expire them the same way), but one child
 * subtree (one first subkey below the prefix) at a time, so that the cost
 * is that of the children visited, not of the whole collection. Each leaf
 * goes to fn once with its subkeys after the prefix (sub[0..nsub), and
 * their encoding path[0..plen)) and its value, all in arena a; fn returns
 * nonzero to stop (reader_children then returns 0). start (encoded
 * subkeys after the prefix, NULL: from the first / last leaf): forward,
 * the leaves at or after it; reverse, those at or before it or below it.
 * A primitive with descendants newer than it reads as a container (its
 * leaves are reported). Errors as reader_get_doc. */
typedef int (*reader_leaf_fn)(void *arg, const uint8_t *path, size_t plen, const struct pv *sub,
			      size_t nsub, const struct pv *value);
int reader_children(struct store *s, const uint8_t *dockey, size_t dockey_len,
		    const struct pv *prefix, size_t nprefix, uint64_t read_ht,
		    int64_t default_ttl_ms, bool reverse, const uint8_t *start, size_t start_len,
		    struct arena *a, reader_leaf_fn fn, void *arg, char *errmsg);

/* reader_get_doc for a document of a table: the schema decodes packed rows
 * (their columns appear as 'K' <id> children and 'J' 0, as if unpacked)
 * and gives the default TTL. */
int reader_get_table_doc(struct store *s, const struct schema *schema, const uint8_t *dockey,
			 size_t dockey_len, const struct pv *subkeys, size_t nsub,
			 uint64_t read_ht, struct arena *a, const struct docnode **out,
			 char *errmsg);

/* A row of a table. */
struct row {
	const struct schema *schema;
	struct pv *key;              /* key column values, schema order */
	const struct docnode *root;  /* children: columns ('K' id) and liveness ('J' 0) */
};

/* The node of a regular column, or NULL when the column is NULL/absent.
 * Primitive columns: node->value; collections: node->children (map: key ->
 * value; set: member -> NULL; list: index -> element, in list order). */
const struct docnode *row_column(const struct row *r, const struct column *c);
const struct docnode *row_column_named(const struct row *r, const char *name);

/* Reads one row by primary key; *found false when it does not exist. */
int reader_get_row(struct store *s, const struct schema *schema, const struct pv *key,
		   size_t nkey, uint64_t read_ht, struct arena *a, struct row *out, bool *found,
		   char *errmsg);

/* A scan of one hash key (hash_key given) with optional bounds on the range
 * columns, or of the whole store (hash_key NULL: every row, in storage
 * order). Equality on the first n_eq range columns, then optional lower /
 * upper bounds (logical, inclusive or not) on range column n_eq. Rows come
 * in storage order (DESC columns descending), or reversed with reverse. */
struct scan_spec {
	uint64_t read_ht;
	const struct pv *hash_key;
	size_t n_hash;
	const struct pv *range_eq;
	size_t n_eq;
	const struct pv *lower;
	bool lower_incl;
	const struct pv *upper;
	bool upper_incl;
	bool reverse;
	size_t limit;            /* rows per page; 0 = all */
	const uint8_t *paging;   /* state from the previous page, or NULL */
	size_t paging_len;
};

/* Returns up to limit existing rows (arena-allocated array). When more rows
 * may follow, paging_out receives an opaque state that resumes right after
 * the last row at the same read time; otherwise it is left empty. A state
 * given in spec->paging resumes at its own read time, which may not be later
 * than spec->read_ht (when that is not 0): DOCRAFT_EINVAL, so a forged state
 * cannot read past the time the caller vetted. */
int reader_scan(struct store *s, const struct schema *schema, const struct scan_spec *spec,
		struct arena *a, struct row **rows, size_t *nrows, struct buf *paging_out,
		char *errmsg);

/* The pure decoder of a paging state from the network (what reader_scan
 * reads first): PAGING_V1, BE64 read time, then exactly one well-formed
 * DocKey (the last row sent). *dockey borrows from p. DOCRAFT_EINVAL with
 * errmsg on anything else. Any thread. */
int reader_paging_decode(const uint8_t *p, size_t len, uint64_t *read_ht, const uint8_t **dockey,
			 size_t *dockey_len, char *errmsg);

/* Keys the readers have fed to their document builders so far, in this
 * process (any thread): a hot row must cost a bounded number of them. */
uint64_t reader_keys_fed(void);
/* Tests only: off, reads step through every version of every path (the
 * plain algorithm the hot-row shortcuts must agree with). Default on. */
void reader_set_shortcuts(bool on);

#endif
