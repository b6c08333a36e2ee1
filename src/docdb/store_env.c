/* The shared block cache and the global memtable budget behind
 * docdb/store_env.h.
 *
 * Accounting: each member keeps the memtable size its store last reported
 * (m->bytes) and e->total is their sum; both move by atomic exchange and
 * add, so the writers' fast path takes no lock. m->since is the hybrid time
 * of the oldest write still in the store's memtables as far as we know: set
 * by the first write after a flush (ours, or RocksDB's own, seen as a size
 * that shrank), 0 once we flushed it.
 *
 * Enforcement runs under e->mu, which also guards the member list: a store
 * cannot leave while it is being flushed or polled, and writers over the
 * budget queue there. A flush never calls back into the environment, and no
 * writer holds e->mu inside RocksDB's write path, so flushing under it cannot
 * deadlock. Each episode flushes every member at most once (since = 0
 * afterwards), so it ends even if flushes free nothing. */
#include "docdb/store_env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "docdb/store.h"

#define MIB ((size_t)1 << 20)
#define DEFAULT_CACHE_BYTES (256 * MIB)
#define DEFAULT_BUDGET_BYTES (256 * MIB)
#define MIN_STORE_WBS (1 * MIB)
#define MAX_STORE_WBS (64 * MIB)
/* Memtable arena blocks: RocksDB's default (write_buffer_size / 8, up to
 * 1 MiB) would charge every store that took one write a whole block. */
#define ARENA_BLOCK_BYTES ((size_t)64 << 10)

struct store_env_member {
	struct store_env *e;
	struct store *s;
	struct store_env_member *prev, *next;
	_Atomic size_t bytes;
	_Atomic uint64_t since;
};

struct store_env {
	rocksdb_cache_t *cache;
	size_t cache_bytes;
	size_t budget;
	size_t store_wbs;
	_Atomic size_t total;
	pthread_mutex_t mu; /* the list, enforcement */
	struct store_env_member *head;
	size_t n;
	uint64_t forced_flushes; /* under mu */
	uint64_t flush_errors;   /* under mu */
};

void store_env_options_default(struct store_env_options *o)
{
	o->block_cache_bytes = DEFAULT_CACHE_BYTES;
	o->write_buffer_bytes = DEFAULT_BUDGET_BYTES;
	o->store_write_buffer_size = 0;
}

int store_env_create(const struct store_env_options *opts, struct store_env **out, char *errmsg)
{
	struct store_env_options def;
	struct store_env *e;

	PRE(out != NULL);
	*out = NULL;
	if (opts == NULL) {
		store_env_options_default(&def);
		opts = &def;
	}
	e = calloc(1, sizeof *e);
	if (e == NULL)
		return err_set(errmsg, DOCRAFT_ENOMEM, "store environment: out of memory");
	e->cache_bytes = opts->block_cache_bytes ? opts->block_cache_bytes : DEFAULT_CACHE_BYTES;
	e->budget = opts->write_buffer_bytes ? opts->write_buffer_bytes : DEFAULT_BUDGET_BYTES;
	e->store_wbs = opts->store_write_buffer_size;
	if (e->store_wbs == 0) {
		e->store_wbs = e->budget / 8;
		if (e->store_wbs < MIN_STORE_WBS)
			e->store_wbs = MIN_STORE_WBS;
		if (e->store_wbs > MAX_STORE_WBS)
			e->store_wbs = MAX_STORE_WBS;
	}
	e->cache = rocksdb_cache_create_lru(e->cache_bytes);
	atomic_init(&e->total, 0);
	pthread_mutex_init(&e->mu, NULL);
	*out = e;
	return 0;
}

void store_env_destroy(struct store_env *e)
{
	if (e == NULL)
		return;
	PRE(e->head == NULL && e->n == 0);
	rocksdb_cache_destroy(e->cache);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

void store_env_stats(struct store_env *e, struct store_env_stats *out)
{
	pthread_mutex_lock(&e->mu);
	out->stores = e->n;
	out->forced_flushes = e->forced_flushes;
	out->flush_errors = e->flush_errors;
	pthread_mutex_unlock(&e->mu);
	out->memtable_bytes = atomic_load(&e->total);
	out->write_buffer_bytes = e->budget;
	out->block_cache_usage = rocksdb_cache_get_usage(e->cache);
	out->block_cache_bytes = e->cache_bytes;
}

rocksdb_cache_t *store_env_block_cache(struct store_env *e)
{
	return e->cache;
}

size_t store_env_store_write_buffer_size(const struct store_env *e)
{
	return e->store_wbs;
}

size_t store_env_arena_block_size(const struct store_env *e)
{
	return e->store_wbs / 8 < ARENA_BLOCK_BYTES ? e->store_wbs / 8 : ARENA_BLOCK_BYTES;
}

/* Records a new size for m; returns the previous one. */
static size_t set_bytes(struct store_env_member *m, size_t bytes)
{
	size_t old = atomic_exchange(&m->bytes, bytes);
	/* Unsigned wrap-around makes this the signed delta. */
	atomic_fetch_add(&m->e->total, bytes - old);
	return old;
}

struct store_env_member *store_env_join(struct store_env *e, struct store *s)
{
	struct store_env_member *m = calloc(1, sizeof *m);
	if (m == NULL)
		PANIC("out of memory");
	m->e = e;
	m->s = s;
	atomic_init(&m->bytes, 0);
	atomic_init(&m->since, 0);
	pthread_mutex_lock(&e->mu);
	m->next = e->head;
	if (e->head != NULL)
		e->head->prev = m;
	e->head = m;
	e->n++;
	pthread_mutex_unlock(&e->mu);
	set_bytes(m, store_memtable_bytes(s));
	return m;
}

void store_env_leave(struct store_env_member *m)
{
	struct store_env *e;
	if (m == NULL)
		return;
	e = m->e;
	pthread_mutex_lock(&e->mu);
	if (m->prev != NULL)
		m->prev->next = m->next;
	else
		e->head = m->next;
	if (m->next != NULL)
		m->next->prev = m->prev;
	e->n--;
	set_bytes(m, 0);
	pthread_mutex_unlock(&e->mu);
	free(m);
}

/* The member whose memtables hold the oldest write (then the larger one),
 * among those written since we last flushed them; NULL if none. */
static struct store_env_member *pick_victim(struct store_env *e)
{
	struct store_env_member *best = NULL;
	uint64_t best_since = 0;
	size_t best_bytes = 0;
	for (struct store_env_member *m = e->head; m != NULL; m = m->next) {
		uint64_t since = atomic_load(&m->since);
		size_t bytes = atomic_load(&m->bytes);
		if (since == 0)
			continue;
		if (best == NULL || since < best_since ||
		    (since == best_since && bytes > best_bytes)) {
			best = m;
			best_since = since;
			best_bytes = bytes;
		}
	}
	return best;
}

static void enforce(struct store_env *e)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	pthread_mutex_lock(&e->mu);
	if (atomic_load(&e->total) <= e->budget)
		goto out;
	/* Stale sizes (RocksDB flushed by itself since) would flush for
	 * nothing: re-read them all first. */
	for (struct store_env_member *m = e->head; m != NULL; m = m->next)
		set_bytes(m, store_memtable_bytes(m->s));
	for (size_t i = 0; i < e->n && atomic_load(&e->total) > e->budget; i++) {
		struct store_env_member *v = pick_victim(e);
		size_t before;
		if (v == NULL)
			break;
		before = atomic_load(&v->bytes);
		atomic_store(&v->since, 0);
		e->forced_flushes++;
		if (store_flush(v->s, errmsg) != 0) {
			e->flush_errors++;
			LOG_WARN("memtable budget: %s", errmsg);
		}
		set_bytes(v, store_memtable_bytes(v->s));
		LOG_DEBUG("memtable budget %zu: flushed store %s (%zu bytes), now %zu", e->budget,
			  store_path(v->s), before, atomic_load(&e->total));
	}
out:
	pthread_mutex_unlock(&e->mu);
}

void store_env_wrote(struct store_env_member *m, size_t memtable_bytes, uint64_t ht)
{
	struct store_env *e = m->e;
	size_t old = set_bytes(m, memtable_bytes);
	/* A size that shrank: RocksDB flushed, and what is left is newer. */
	if (memtable_bytes < old || atomic_load(&m->since) == 0)
		atomic_store(&m->since, ht);
	if (atomic_load(&e->total) > e->budget)
		enforce(e);
}
