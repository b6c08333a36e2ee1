/* A DocDB store: one RocksDB instance holding one tablet's documents.
 *
 * Durability contract (design.md, "Durability: one log, not two"): RocksDB
 * runs with its WAL disabled. store_apply writes a batch's pairs, each key
 * suffixed with '#' DocHT(ht, write_id), together with the applied-index
 * marker (raft index + hybrid time) in ONE RocksDB write batch. After a crash
 * the store holds exactly what had been flushed, and store_applied() names
 * the last batch in it; the caller replays later entries from its log.
 *
 * The marker lives under an internal key (first byte < '!'), so it sorts
 * before every DocKey and is invisible to readers.
 *
 * Threading: a store may be read from any thread while one thread applies;
 * store_close must not race with anything. */
#ifndef DOCRAFT_DOCDB_STORE_H
#define DOCRAFT_DOCDB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct schema;
struct store;
struct store_iter;
struct store_env;

struct store_options {
	bool create_if_missing;        /* default true */
	size_t write_buffer_size;      /* memtable bytes; 0 = RocksDB default (or the env's) */
	uint64_t history_retention_us; /* 0 = 900 s (docdb-format.md §7.1) */
	int64_t default_ttl_ms;        /* table default TTL for compaction GC; <= 0 none */
	/* Default true: DocDB prefix bloom filters (docdb/filter.h) in the SST
	 * files and prefix-mode iterators (store_iter_new). False: no filter
	 * and total-order iterators only (files keep the filters they have). */
	bool prefix_filter;
	/* Default false: RocksDB statistics, read with store_ticker. */
	bool statistics;
	/* Default false: RocksDB's own LOG file (info log) stays empty. Debian's
	 * RocksDB 7.8 keeps assert() on, and once a LOG write has failed (disk
	 * full) the next write or flush of that file aborts the process
	 * (WritableFileWriter::AssertFalseAndGetStatusForPrevError), so a store
	 * that may live on a filling disk must not log there; its errors still
	 * reach the caller as codes and are logged through common/log.h. True:
	 * warnings and errors go to LOG (tools, tests on a disk that cannot
	 * fill). */
	bool info_log;
	/* Default NULL: a private block cache and memtables (RocksDB's
	 * defaults). Else the shared cache and memtable budget of env
	 * (docdb/store_env.h), which must outlive the store. */
	struct store_env *env;
	/* Default NULL. The table schema compactions use (store_set_schema);
	 * copied at open. */
	const struct schema *schema;
};

void store_options_default(struct store_options *o);

/* Opens (creating if allowed) the store in directory path. On error returns a
 * code, *out is NULL and errmsg (DOCRAFT_ERRMSG_SIZE) says why. */
int store_open(const char *path, const struct store_options *opts, struct store **out,
	       char *errmsg);
/* Closes without flushing (what is not flushed is replayed from the log;
 * RocksDB's own flush at close is switched off). Iterators must be freed
 * first. NULL is a no-op. */
void store_close(struct store *s);

/* Applies serialized batch bytes (docdb/batch.h) at hybrid time ht as Raft
 * entry raft_index. An index at or below the applied marker is skipped and
 * returns 0 (replay is idempotent). Malformed bytes: DOCRAFT_ECORRUPT, nothing
 * written. Disk full: DOCRAFT_ENOSPC. ht of HT_MIN, HT_INVALID or HT_MAX:
 * DOCRAFT_EINVAL. An empty batch only advances the marker. raft_index 0 means
 * "not from the log": the pairs are written, the marker is left alone. */
int store_apply(struct store *s, const void *batch, size_t len, uint64_t ht, uint64_t raft_index,
		char *errmsg);

/* One serialized batch among several applied together (store_apply_parts). */
struct store_part {
	const void *batch;
	size_t len;
};

/* An internal record written as-is (no hybrid time suffix) in the same
 * RocksDB write batch: key[0] must be <= KT_INTERNAL_MAX and not the applied
 * marker's byte 0x01. del: a delete of key (val ignored). */
struct store_raw {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
	bool del;
};

/* Like store_apply for the concatenation of parts (write ids run on across
 * them), plus raw internal records, all in one atomic RocksDB write with the
 * marker. Same skip / error rules as store_apply. */
int store_apply_parts(struct store *s, const struct store_part *parts, size_t nparts,
		      const struct store_raw *raw, size_t nraw, uint64_t ht, uint64_t raft_index,
		      char *errmsg);

/* Writes a RocksDB checkpoint (hard links where possible) of everything
 * applied so far into dir, which must not exist; the memtables are flushed
 * first. The checkpoint is a store that store_open can open: its marker
 * names the last index it holds. Any thread. */
int store_checkpoint(struct store *s, const char *dir, char *errmsg);

/* Last applied index and hybrid time (0, 0 for a fresh store). Reflects
 * memtable contents until a crash; after reopen, what was flushed. */
void store_applied(const struct store *s, uint64_t *raft_index, uint64_t *ht);

/* Flushes the memtables to SST files and waits. */
int store_flush(struct store *s, char *errmsg);

/* Bytes held by the memtables, active and immutable (RocksDB's
 * "rocksdb.cur-size-all-mem-tables"). Any thread. */
size_t store_memtable_bytes(struct store *s);

/* A RocksDB integer property ("rocksdb.live-sst-files-size", ...) into
 * *out, or a property RocksDB gives only as a decimal string
 * ("rocksdb.num-files-at-level0"): false if RocksDB does not know it or it
 * is no number. Any thread. */
bool store_property(struct store *s, const char *name, uint64_t *out);

/* Compactions started on s (flushes not counted): the compaction filter
 * factory counts each job it is asked a filter for. Any thread. */
void store_count_compaction(struct store *s);
uint64_t store_compactions(const struct store *s);

/* The RocksDB statistics ticker name ("rocksdb.block.cache.data.miss",
 * "rocksdb.bloom.filter.prefix.useful", ...) into *out: true, or false when
 * the store was opened without statistics or the name is unknown. Tickers
 * count from store_open. Any thread. */
bool store_ticker(struct store *s, const char *name, uint64_t *out);

/* Block cache hits and misses (blocks read from a file: data, index and
 * filter blocks) of the reads through this store's iterators since
 * store_open, counted with RocksDB's per-thread perf context, not
 * statistics (store.c). Compactions and flushes are not reads. Side effect:
 * a thread's first read through any store sets that thread's RocksDB perf
 * level to "count" (rocksdb_enable_count) for good, and the store owns the
 * thread's perf context from then on (nothing else may reset it; a reset is
 * tolerated but loses that call's counts). Any thread. */
void store_cache_counts(const struct store *s, uint64_t *hits, uint64_t *misses);

/* Reads below this time fail with DOCRAFT_ETOOOLD (set by compaction). */
uint64_t store_history_cutoff(const struct store *s);
/* Sets the in-memory cutoff, but never below the persisted one (data below
 * it may be gone); not persisted itself, but the next compaction persists
 * the cutoff it uses, which is never lower than this. */
void store_set_history_cutoff(struct store *s, uint64_t ht);
uint64_t store_history_retention_us(const struct store *s);

/* ---- compaction GC (docdb/compaction.h) ----
 *
 * Every RocksDB compaction runs the DocDB GC at a history cutoff. The cutoff
 * only rises, is persisted (in the store directory, and copied into
 * checkpoints) before any entry is dropped, and comes back at store_open.
 * Assumes writes arrive in hybrid-time order above the cutoff, as Raft
 * applies them. */

/* Holds hybrid time ht for a read in progress for hold_ms (a new call
 * renews it): until then no compaction raises the cutoff above ht
 * (compaction.h, "history holds"). DOCRAFT_ETOOOLD ("snapshot too old":
 * nothing held) when ht is below the cutoff, older than the retention (now -
 * history_retention_us) and not kept by a live hold, or older than twice the
 * retention. Any thread. */
int store_hold_history(struct store *s, uint64_t ht, unsigned hold_ms, char *errmsg);

/* Raises the history cutoff to at least ht, but never above a live hold:
 * persists it first (durably), then makes readers see it. *in_effect (may
 * be NULL) gets the persisted cutoff afterwards (on failure: the one
 * persisted before). Any thread. */
int store_raise_history_cutoff(struct store *s, uint64_t ht, uint64_t *in_effect, char *errmsg);

/* A manual FULL compaction at history cutoff cutoff_ht (0: now - retention,
 * see compaction_auto_cutoff; never below the cutoff already in effect):
 * raises the cutoff, flushes the memtables and rewrites every level down to
 * the bottommost one through the GC. RocksDB reports no error through its C
 * API here; a background error counted meanwhile becomes DOCRAFT_EIO.
 * cutoff_ht >= HT_INVALID: DOCRAFT_EINVAL. Any thread. */
int store_compact(struct store *s, uint64_t cutoff_ht, char *errmsg);
/* The same for the keys in [lo, hi], both inclusive as in RocksDB's
 * CompactRange (NULL: unbounded). Jobs that do not
 * take every SST file are not full: they keep tombstones and rewrite expired
 * values as tombstones. */
int store_compact_range(struct store *s, const void *lo, size_t lo_len, const void *hi,
			size_t hi_len, uint64_t cutoff_ht, char *errmsg);

/* The table default TTL compactions use (store_options.default_ttl_ms; must
 * match the schema's, or GC and reads disagree). Read at each job's start. */
int64_t store_default_ttl_ms(const struct store *s);
void store_set_default_ttl_ms(struct store *s, int64_t ttl_ms);

/* The table schema compactions use (docdb/compaction.h): cells of columns
 * dropped from it are removed, and full compactions repack packed rows at
 * its latest version (docdb-format.md §8.6). The store keeps its own copy
 * (schema is only read during the call; NULL: none, the default, which
 * turns both off); each compaction job uses the copy in effect when it
 * starts. Call it at every ALTER, after the readers have the new schema:
 * readers must use this schema or a newer one. Any thread. */
void store_set_schema(struct store *s, const struct schema *schema);
/* The copy in effect, pinned (immutable, valid) until
 * store_schema_release; NULL when there is none. Any thread. */
const struct schema *store_schema_acquire(struct store *s);
/* Unpins a copy from store_schema_acquire (NULL: no-op). */
void store_schema_release(const struct schema *schema);
/* Whether store_open has opened the RocksDB instance (compactions can run
 * inside it, before the store can be read). Any thread. */
bool store_db_open(const struct store *s);

/* Raw iteration over stored (key, value) pairs, internal records included
 * (callers skip keys whose first byte is <= KT_INTERNAL_MAX).
 * lower (inclusive) / upper (exclusive) may be NULL; they are copied and set
 * as RocksDB iterate bounds, so files and blocks outside them are not read.
 *
 * Prefix mode, chosen here (like RocksDB's auto_prefix_mode, which 7.8's C
 * API does not expose): when both bounds share one bloom key
 * (filter_bounds_prefix: a point read's [DocKey, DocKey 0xFF), a scan inside
 * one hash key) and the store has prefix filters, the iterator runs with
 * prefix_same_as_start, so every seek checks each SST file's bloom filter and
 * skips the files that cannot hold the prefix. Results are those of total
 * order as long as every seek key lies within [lower, upper] (SeekToFirst /
 * SeekToLast seek the bounds). Any other iterator (whole store scans, open
 * bounds) runs in total order. */
struct store_iter *store_iter_new(struct store *s, const void *lower, size_t lower_len,
				  const void *upper, size_t upper_len);
/* Whether it runs in prefix mode (above). */
bool store_iter_prefix_mode(const struct store_iter *it);
void store_iter_free(struct store_iter *it);
void store_iter_seek(struct store_iter *it, const void *key, size_t len);
void store_iter_seek_for_prev(struct store_iter *it, const void *key, size_t len);
void store_iter_seek_first(struct store_iter *it);
void store_iter_seek_last(struct store_iter *it);
void store_iter_next(struct store_iter *it);
void store_iter_prev(struct store_iter *it);
bool store_iter_valid(const struct store_iter *it);
const uint8_t *store_iter_key(const struct store_iter *it, size_t *len);
const uint8_t *store_iter_value(const struct store_iter *it, size_t *len);
/* 0, or a code (DOCRAFT_EIO, DOCRAFT_ECORRUPT, ...) with errmsg when
 * iteration stopped on an error. */
int store_iter_status(const struct store_iter *it, char *errmsg);

/* Directory the store was opened from. */
const char *store_path(const struct store *s);

#endif
