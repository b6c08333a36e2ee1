/* The document builder's internal interface: what reader.c's point reads
 * and scans share with builder.c (see builder.c's design note for how a
 * stream of versions becomes a document). Internal to docdb/: nothing
 * outside this folder includes it; reader.h is the public read API.
 *
 * A builder belongs to one read on one thread; the nodes it builds live in
 * the caller's arena, its own scratch (paths, packed rows, virtual cells)
 * in the builder until builder_free. Not thread-safe; the counters behind
 * reader_keys_fed and reader_set_shortcuts are the only shared state
 * (atomics, builder.c). */
#ifndef DOCRAFT_DOCDB_BUILDER_H
#define DOCRAFT_DOCDB_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/pathframe.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/ttl.h"
#include "docdb/value.h"

/* Deepest path below a DocKey a read may name or meet. */
#define BUILDER_MAX_DEPTH DOCDB_MAX_SUBKEYS

/* A packed row kept from the root's versions; its payload is in pbytes. */
struct prow {
	struct docht d;
	bool has_ttl;
	int64_t ttl_ms;
	size_t off, len;
};

/* One column (or the liveness) of a packed row, to be fed as a stored pair
 * with the subkey sub at DocHT d. */
#define VSUB_MAX 11 /* 'K' + svarint */
struct vcell {
	struct docht d;
	struct docvalue v;
	uint8_t sub[VSUB_MAX];
	uint8_t sub_len;
};

struct builder {
	struct arena *a;
	char *errmsg;
	uint64_t read_ht;
	int64_t default_ttl_ms;
	const struct schema *schema; /* packings; NULL: packed rows are an error */
	size_t root_len;
	struct path_frame base; /* context above the root: nothing hidden, no TTL */
	struct path_frame st[BUILDER_MAX_DEPTH + 1];
	struct docnode *nodes[BUILDER_MAX_DEPTH + 1]; /* frame d's node, created lazily */
	size_t depth;
	struct buf path; /* path of the last decided entry */
	bool top_decided;
	struct docnode *root;
	/* Packed rows of the current document (builder.c's design note). */
	struct prow *prows;
	size_t nprows, prows_cap;
	struct buf pbytes;
	struct vcell *vcells;
	size_t nvcells, vnext, vcells_cap;
	bool vready; /* prows turned into vcells */
	struct buf vkey; /* scratch: a virtual cell's subkey or key */
	/* Hot rows (builder.c's design note). */
	bool ignored;      /* the last key fed was an older version of a decided path */
	size_t newer_plen; /* ... was newer than the read: its path length, else 0 */
	bool newest_full;  /* the kept packed row is of the current schema version */
	bool root_skip_ok; /* get_doc: may skip older root versions after it */
	bool skip_root;    /* feed asks builder_feed_prefix to seek past the root's versions */
	bool root_skipped; /* ... and it did: subkeys must be scalar columns */
	bool reread;       /* they were not: read again without the shortcut */
	struct buf seek;   /* scratch: a seek target */
	/* TTL merge records (builder.c's design note): the newest one met
	 * among the root's versions, waiting for the next older full value. */
	bool merge_pending;
	bool merge_has_ttl;
	int64_t merge_ttl_ms;
	uint64_t merge_ht;
	uint64_t ttl_from; /* decide: the root's TTL counts from here (0: its DocHT) */
};

/* Sets up b for reads at read_ht (scans may set b->read_ht later, before
 * the first builder_start) with the table's default TTL and schema (NULL:
 * a packed row is an error). Nodes go to arena a; errors to errmsg
 * (DOCRAFT_ERRMSG_SIZE bytes), which must outlive b. */
void builder_init(struct builder *b, struct arena *a, uint64_t read_ht,
		  int64_t default_ttl_ms, const struct schema *schema, char *errmsg);

/* Starts a new document at DocKey root[0..root_len) (copied); the frames,
 * packed rows and shortcut flags of the previous one are forgotten, except
 * b->root_skip_ok, which the caller sets. */
void builder_start(struct builder *b, const uint8_t *root, size_t root_len);

/* Feeds every pair of it whose key starts with prefix (exact_path: whose
 * path is exactly prefix, i.e. prefix '#' ...), from the iterator's
 * position on; leaves it on the first key past them (or wherever a
 * shortcut seek put it). Returns early, with b->reread set, when the
 * get_doc shortcut proved wrong: the caller starts again without it. */
int builder_feed_prefix(struct builder *b, struct store_iter *it, const uint8_t *prefix,
			size_t plen, bool exact_path);

/* Ends the document: feeds the virtual cells still due and prunes the
 * implicit containers left empty. *out: the root (in the arena), or NULL
 * when nothing is live. */
int builder_finish(struct builder *b, struct docnode **out);

/* Drops the cells of columns schema s dropped from a row's root (their
 * packed slots never get there); returns root, or NULL when nothing is
 * left. s NULL: root as it is. */
struct docnode *builder_drop_dropped(const struct schema *s, struct docnode *root);

/* Sets b's errmsg to "corrupt DocDB entry: <what>"; returns DOCRAFT_ECORRUPT. */
int builder_corrupt(struct builder *b, const char *what);

/* Frees b's scratch (not the arena's nodes). b may be reused after
 * builder_init. */
void builder_free(struct builder *b);

#endif
