/* Compaction garbage collection (docdb-format.md §7): a RocksDB compaction
 * filter that removes, at or below the store's history cutoff, what no read
 * at or after the cutoff can see.
 *
 *   - versions overwritten or deleted at the same or a higher level (an
 *     entry older than the newest version at or below the cutoff of its own
 *     path or of an ancestor path);
 *   - TTL-expired data (its own TTL, an inherited one, or the table default):
 *     dropped in a full compaction, rewritten as a tombstone otherwise;
 *   - tombstones, in a full compaction (every live SST file is an input, so
 *     nothing older can survive below them elsewhere);
 *   - with a table schema (store_set_schema): the cells of columns dropped
 *     from it, in any compaction; in a full one, packed rows are repacked
 *     (§8.6): the newest packed row of a document at or below the cutoff
 *     absorbs the newer cells of its columns and is re-encoded at the
 *     latest schema version, and older packed rows go (see compaction.c).
 *
 * Entries newer than the cutoff, internal records (first key byte <=
 * KT_INTERNAL_MAX) and anything that does not decode are kept unchanged.
 *
 * The decisions agree with reader.c at every read time >= the cutoff (for
 * readers with the store's schema, or a newer one): the
 * filter runs the reader's frame stack at read time = cutoff over the keys
 * of one compaction job, which RocksDB hands over in key order (one filter
 * object per job; the store pins max_subcompactions to 1, see compaction.c).
 *
 * Ownership: a struct compaction_gc belongs to one compaction job (one
 * thread). The factory reads the store's settings when a job starts, on a
 * RocksDB background thread, through the thread-safe store_* accessors. */
#ifndef DOCRAFT_DOCDB_COMPACTION_H
#define DOCRAFT_DOCDB_COMPACTION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

struct schema;
struct store;

/* Name of the file in a store directory that holds the persisted history
 * cutoff (see compaction.c, "Persisting the cutoff"). */
#define COMPACTION_CUTOFF_FILE "DOCRAFT-HISTORY-CUTOFF"

enum compaction_verdict {
	COMPACTION_KEEP = 0,
	COMPACTION_DROP,
	COMPACTION_REWRITE, /* replace the value by *new_val */
};

struct compaction_stats {
	uint64_t kept;
	uint64_t dropped;
	uint64_t rewritten;
	uint64_t undecodable; /* kept as they are (counted in kept too) */
	uint64_t repacked;    /* packed rows re-encoded (counted in rewritten too) */
	uint64_t folded;      /* cells merged into a packed row (counted in dropped) */
};

/* The per-job filter state. cutoff_ht: history cutoff (entries with a
 * hybrid time above it are never touched); full: every live SST file is an
 * input (tombstones may go); default_ttl_ms: the table default TTL (<= 0:
 * none), as the reader gets it from the schema. */
struct compaction_gc *compaction_gc_new(uint64_t cutoff_ht, bool full, int64_t default_ttl_ms);
void compaction_gc_free(struct compaction_gc *g);

/* Gives g the table schema (borrowed: it must stay unchanged and outlive g;
 * NULL: none). Then, at or below the cutoff, the cells of columns the schema
 * has dropped are removed in every job. When src is not NULL and the job is
 * full, packed rows are also repacked (§8.6) by reading ahead in src, which
 * must be the store whose compaction g filters (g keeps an iterator on it
 * until compaction_gc_free). Call before the first compaction_gc_decide. */
void compaction_gc_set_schema(struct compaction_gc *g, const struct schema *schema,
			      struct store *src);

/* Decides one stored pair. Pairs must come in key order, as in a compaction.
 * COMPACTION_REWRITE sets *new_val / *new_len (bytes owned by g, valid until
 * the next call): a tombstone, or a repacked row; the new value keeps the
 * key. Never fails: what does not decode is kept and logged. */
enum compaction_verdict compaction_gc_decide(struct compaction_gc *g, const uint8_t *key,
					     size_t klen, const uint8_t *val, size_t vlen,
					     const uint8_t **new_val, size_t *new_len);
void compaction_gc_get_stats(const struct compaction_gc *g, struct compaction_stats *out);

/* Totals over every filter job of the process so far (all stores): jobs
 * by kind and their stats. For tests and diagnostics. */
struct compaction_totals {
	uint64_t jobs_full;
	uint64_t jobs_partial;
	struct compaction_stats stats;
};
void compaction_get_totals(struct compaction_totals *out);

/* The cutoff an automatic compaction aims at: (min(now_us, physical time of
 * applied_ht) - retention_us) as a hybrid time, 0 when that is not positive
 * (nothing can be collected). */
uint64_t compaction_auto_cutoff(uint64_t now_us, uint64_t applied_ht, uint64_t retention_us);

/* The compaction filter factory of store s (registered by store.c). Every
 * compaction job asks it for a filter: it settles the job's cutoff (manual
 * jobs: the store's history cutoff, which store_compact raised; automatic
 * jobs: the higher of that and compaction_auto_cutoff), raises and persists
 * the store's cutoff to it (store_raise_history_cutoff) before any pair is
 * filtered, and returns a filter for it, or none when the cutoff is 0. The
 * filter pins the store's schema (store_schema_acquire) for the job and, once
 * the store is open, reads ahead in s to repack. s must outlive the RocksDB
 * instance; the factory owns nothing. */
rocksdb_compactionfilterfactory_t *compaction_factory_create(struct store *s);

/* ---- history holds ----
 *
 * Reads in progress at a hybrid time T (a read AS OF T, the pages of a scan
 * at T) need every version visible at T: no compaction may raise the
 * cutoff above T while they run. A hold on T lasts until a deadline (a
 * paged scan is stateless on the server: each page renews its hold); the
 * store caps every raise of its cutoff at the smallest live hold
 * (compaction_hold_cap under the store's raise). The table is bounded: when
 * full, a new hold is merged into the live hold just below it (which
 * protects it already) or, if it is the smallest, replaces the smallest.
 * Thread-safe (its own mutex); never held across I/O. */
#define COMPACTION_MAX_HOLDS 256

struct compaction_holds {
	pthread_mutex_t mu;
	struct {
		uint64_t ht;
		uint64_t until_ms; /* CLOCK_MONOTONIC ms */
	} h[COMPACTION_MAX_HOLDS];
	size_t n;
	uint64_t pending; /* the largest cutoff a raise was allowed to aim at */
};

void compaction_holds_init(struct compaction_holds *h);
void compaction_holds_destroy(struct compaction_holds *h);
/* Holds ht for hold_ms (renewing a hold on ht). DOCRAFT_ETOOOLD (nothing
 * held) when ht is below cutoff (the store's) or below a raise in progress,
 * below retention_floor (now - retention, compaction_auto_cutoff) while no
 * live hold at or below ht keeps that history, or below hard_floor (now -
 * 2 x retention) at all: renewing holds keeps history at most one more
 * retention, so no reader can stop collection for good. */
int compaction_hold_add(struct compaction_holds *h, uint64_t ht, uint64_t cutoff,
			uint64_t retention_floor, uint64_t hard_floor, uint64_t hold_ms,
			char *errmsg);
/* want capped at the smallest live hold (expired holds are dropped); the
 * result is remembered as a raise in progress, so a hold added afterwards
 * below it is refused. */
uint64_t compaction_hold_cap(struct compaction_holds *h, uint64_t want);

/* The persisted cutoff of the store in directory dir: 0 when the file does
 * not exist; DOCRAFT_ECORRUPT when it does not parse, DOCRAFT_EIO when it
 * cannot be read. */
int compaction_cutoff_load(const char *dir, uint64_t *ht, char *errmsg);
/* Replaces the file atomically and durably (temporary file, fsync, rename,
 * fsync of dir). DOCRAFT_ENOSPC / DOCRAFT_EIO on failure (the old file is
 * left in place). */
int compaction_cutoff_save(const char *dir, uint64_t ht, char *errmsg);

#endif
