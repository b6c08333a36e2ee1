/* What the compaction GC files share (internal to docdb/; compaction.h is
 * the public interface): the per-job decider's state, which compaction.c
 * drives entry by entry, compaction_repack.c extends with its read-ahead
 * and compaction_filter.c creates per RocksDB job. A decider belongs to
 * one job on RocksDB's compaction thread: nothing here is thread-safe. */
#ifndef DOCRAFT_DOCDB_COMPACTION_GC_H
#define DOCRAFT_DOCDB_COMPACTION_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/compaction.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/packed.h"
#include "docdb/pathframe.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/ttl.h"
#include "docdb/value.h"

/* Deepest path below a DocKey the decider follows. */
#define COMPACTION_MAX_DEPTH DOCDB_MAX_SUBKEYS

struct compaction_gc {
	uint64_t cutoff;
	bool full;
	int64_t default_ttl_ms;
	const char *tag; /* store path for log lines (may be NULL) */
	/* The current document: path holds the DocKey (dockey_len bytes), then
	 * the subkeys of the last decided entry. */
	struct buf path;
	size_t dockey_len; /* 0: no document yet */
	bool top_decided;  /* path is a decided entry */
	bool drop_older;   /* older versions of path may be dropped */
	bool has_packed;   /* a packed row <= cutoff is kept in this document */
	struct docht packed_min; /* the oldest of them */
	/* Frames of path (pathframe.h); overwrite: the newest DocHT <= cutoff. */
	struct path_frame st[COMPACTION_MAX_DEPTH + 1];
	size_t depth;
	struct compaction_stats stats;
	/* Table schema (compaction_gc_set_schema; NULL: none) and the store
	 * repacking reads ahead in (NULL: no repacking). */
	const struct schema *schema;
	struct store *src;
	struct store_iter *it; /* on src, from the first read-ahead on */
	/* Repacking, for the current document. */
	bool cover;     /* the newest kept packed row <= cutoff has every column
			   of the latest version: older packed rows are hidden */
	int32_t *fold;  /* sorted ids of the columns whose versions <= cutoff the
			   repacked row replaced (their cells go) */
	size_t nfold, fold_cap;
	/* Read-ahead scratch (compaction_repack). */
	struct buf ra;  /* copies of the values read ahead */
	struct ra_row *rows;
	size_t nrows, rows_cap;
	struct ra_col *cols;
	const struct docvalue **slots;
	size_t cols_cap;
	struct buf payload, out; /* the repacked row */
	/* TTL merge records (compaction.c's design note), for the current
	 * document: the newest one at or below the cutoff met among the
	 * root's versions, waiting for the next older full value. */
	bool mpending;
	bool m_has_ttl;
	int64_t m_ttl_ms;
	uint64_t m_ht;
	struct buf folded; /* the value rewritten with its TTL */
};

/* A packed row older than the one being repacked and newer than the root's
 * deciding entry; *pr borrows from g->ra once the read-ahead is over. */
struct ra_row {
	struct docht d;
	size_t off, len; /* the value in g->ra */
	struct docvalue v;
	struct packed_row pr;
	const struct schema_version *sv;
};

/* A column of the latest schema version during a repack. */
struct ra_col {
	bool stored;      /* it has a cell version <= cutoff */
	struct docht w;   /* the newest one */
	size_t off, len;  /* its value in g->ra */
	struct docvalue v; /* the slot of the new row (when !null) */
	bool null;        /* NULL slot */
	bool leave;       /* its cells stay as they are (not folded) */
};

/* The column id of a first subkey sub[0..len) of the form 'K' <svarint>;
 * false for any other subkey. */
bool compaction_column_id(const uint8_t *sub, size_t len, int32_t *id);

/* qsort/bsearch order of int32_t column ids (g->fold). */
int compaction_id_cmp(const void *a, const void *b);

/* §8.6 for the packed row P met first among a document's root versions at
 * or below the cutoff (key[0..dl) its DocKey, d its DocHT, val/vlen its
 * value, rv decoded): reads the document ahead in g->src and, on success,
 * leaves the new value in g->out (maybe byte-identical to val) and the
 * sorted ids of the columns it replaces in g->fold. False: P stays as it
 * is. Needs g->schema and g->src (full jobs only). */
bool compaction_repack(struct compaction_gc *g, const uint8_t *key, size_t dl, struct docht d,
		       const uint8_t *val, size_t vlen, const struct docvalue *rv);

#endif
