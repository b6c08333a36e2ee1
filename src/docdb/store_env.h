/* A store environment: the memory shared by every DocDB store of a process
 * (seed 002, "Server-global block cache" and "Server-global memstore
 * limits"), so a server hosting hundreds of tablets stays inside one
 * configured budget however many stores it opens.
 *
 * - One LRU block cache (rocksdb_cache_create_lru) given to every store's
 *   block-based tables, index and filter blocks included
 *   (cache_index_and_filter_blocks), so table readers hold no unbounded
 *   per-file index/filter memory outside it.
 * - One memtable (write-buffer) budget. RocksDB 7.8's C API has no
 *   WriteBufferManager, so the budget is enforced here, the way YugabyteDB's
 *   global memstore limit is: after each write a store reports its memtable
 *   bytes (RocksDB's "rocksdb.cur-size-all-mem-tables"); when the sum over
 *   all stores exceeds the budget, the environment's flusher thread re-reads
 *   every store's size and flushes, one store at a time, the memtable
 *   holding the oldest write (by hybrid time: the one pinning the most Raft
 *   log) until the sum is back under the budget. Writers do not wait for
 *   it (the writer is the tserver's loop thread): the budget is soft, and
 *   callers that admit new writes refuse them while store_env_busy (3/2 of
 *   the budget); only a writer past twice the budget waits, briefly, for
 *   the flusher. Each store also gets a small RocksDB write_buffer_size and
 *   arena block, so a single busy store flushes by itself well before the
 *   budget and an idle one holds little.
 *
 * Threading: create/destroy from one thread (create starts the flusher
 * thread, destroy joins it); everything else any thread.
 * The environment must outlive every store opened with it. */
#ifndef DOCRAFT_DOCDB_STORE_ENV_H
#define DOCRAFT_DOCDB_STORE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

struct store;
struct store_env;
struct store_env_member;

struct store_env_options {
	size_t block_cache_bytes;  /* shared block cache capacity; 0 = 256 MiB */
	size_t write_buffer_bytes; /* memtable budget over all stores; 0 = 256 MiB */
	/* RocksDB write_buffer_size of each store (a store_options value
	 * overrides it); 0 = write_buffer_bytes / 8, within [1, 64] MiB. */
	size_t store_write_buffer_size;
};

void store_env_options_default(struct store_env_options *o);

/* NULL opts: the defaults. On error returns a code, *out is NULL and errmsg
 * says why. */
int store_env_create(const struct store_env_options *opts, struct store_env **out, char *errmsg);
/* Every store opened with e must be closed first (PRE). NULL is a no-op. */
void store_env_destroy(struct store_env *e);

struct store_env_stats {
	size_t stores;             /* stores open with the environment */
	size_t memtable_bytes;     /* sum of the stores' last reported sizes */
	size_t write_buffer_bytes; /* the budget */
	size_t block_cache_usage;  /* bytes charged to the shared cache */
	size_t block_cache_bytes;  /* its capacity */
	uint64_t forced_flushes;   /* flushes the budget forced */
	uint64_t flush_errors;     /* of those, failed ones (see the log) */
	uint64_t hard_waits;       /* writes that waited past twice the budget */
};

void store_env_stats(struct store_env *e, struct store_env_stats *out);

/* True while the memtables hold more than 3/2 of the budget: the flusher is
 * behind, and a server should refuse new writes (retryably) rather than let
 * them reach the stores. NULL: false. Any thread; lock-free. */
bool store_env_busy(struct store_env *e);

/* Blocks until no flush episode is due or running (tests, tools; never on
 * a loop thread). */
void store_env_wait_idle(struct store_env *e);

/* ---- for store.c ---- */

/* The shared cache (owned by e; RocksDB keeps its own reference). */
rocksdb_cache_t *store_env_block_cache(struct store_env *e);
/* The per-store write_buffer_size and arena block size in effect. */
size_t store_env_store_write_buffer_size(const struct store_env *e);
size_t store_env_arena_block_size(const struct store_env *e);

/* Adds s, whose RocksDB instance is open, to the budget. */
struct store_env_member *store_env_join(struct store_env *e, struct store *s);
/* Removes the member (waiting for a forced flush of it to end), before its
 * RocksDB instance closes. NULL is a no-op. */
void store_env_leave(struct store_env_member *m);
/* After a write at hybrid time ht: the store's memtables now hold
 * memtable_bytes. Over the budget, wakes the flusher and returns; waits
 * (at most 100 ms) only past twice the budget. Never flushes on the
 * caller's thread; never fails (flush errors are counted and logged, and
 * the store's writes keep failing or succeeding on their own). */
void store_env_wrote(struct store_env_member *m, size_t memtable_bytes, uint64_t ht);

#endif
