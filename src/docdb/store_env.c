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
 * Enforcement is off the writers' threads (issue 12, "nothing long on the
 * loop thread": the writer is the tserver's loop thread during Raft apply,
 * and a forced flush waited for there stalled every tablet of the process
 * for tens of ms per flush, seconds under load). A writer that takes the
 * total past the budget only wakes the environment's flusher thread and
 * goes on; the flusher re-reads every store's size and flushes, one store at
 * a time and waiting for each, the memtable holding the oldest write until
 * the sum is back under the budget. Each episode flushes every member at
 * most once (since = 0 afterwards), so it ends even if flushes free
 * nothing. The budget is thereby soft: memtables may overshoot it while the
 * flusher works. Two bounds keep the overshoot finite:
 *   - admission (store_env_busy): at 3/2 of the budget the tserver refuses
 *     new client writes with a retryable EBUSY before they reach Raft, so a
 *     write load cannot outrun the flusher;
 *   - the hard limit, twice the budget: a writer past it (a follower
 *     applying what other leaders admitted) waits for the flusher, bounded
 *     by HARD_WAIT_MS, the write stall of the old design kept as the last
 *     resort only.
 *
 * e->mu guards the member list and the flusher's state; the flusher does
 * not hold it while it flushes: it marks the victim (m->flushing) and a
 * store leaving waits for that mark to clear (e->idle), so a flush never
 * outlives its store and a close waits for its own store only. A flush
 * never calls back into the environment. */
#include "docdb/store_env.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/store.h"

#define MIB ((size_t)1 << 20)
#define DEFAULT_CACHE_BYTES (256 * MIB)
#define DEFAULT_BUDGET_BYTES (256 * MIB)
#define MIN_STORE_WBS (1 * MIB)
#define MAX_STORE_WBS (64 * MIB)
/* Memtable arena blocks: RocksDB's default (write_buffer_size / 8, up to
 * 1 MiB) would charge every store that took one write a whole block. */
#define ARENA_BLOCK_BYTES ((size_t)64 << 10)
/* Longest a writer past the hard limit waits for the flusher (above). */
#define HARD_WAIT_MS 100

struct store_env_member {
	struct store_env *e;
	struct store *s;
	struct store_env_member *prev, *next;
	_Atomic size_t bytes;
	_Atomic uint64_t since;
	bool flushing; /* under e->mu: the flusher is flushing s */
};

struct store_env {
	rocksdb_cache_t *cache;
	size_t cache_bytes;
	size_t budget;
	size_t store_wbs;
	_Atomic size_t total;
	pthread_mutex_t mu; /* the list and everything below */
	pthread_cond_t wake; /* the flusher: work or stop */
	pthread_cond_t idle; /* a flush or an episode ended */
	struct store_env_member *head;
	size_t n;
	bool kicked;  /* an episode is due */
	bool busy;    /* an episode runs */
	bool stop;
	pthread_t flusher;
	uint64_t forced_flushes;
	uint64_t flush_errors;
	uint64_t hard_waits;
};

static void *flusher_main(void *arg);

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
	pthread_condattr_t ca;
	int rv;

	PRE(out != NULL);
	*out = NULL;
	if (opts == NULL) {
		store_env_options_default(&def);
		opts = &def;
	}
	e = xzalloc(sizeof *e);
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
	atomic_init(&e->total, 0);
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, NULL);
	pthread_cond_init(&e->idle, &ca);
	pthread_condattr_destroy(&ca);
	if ((rv = pthread_create(&e->flusher, NULL, flusher_main, e)) != 0) {
		pthread_cond_destroy(&e->wake);
		pthread_cond_destroy(&e->idle);
		pthread_mutex_destroy(&e->mu);
		free(e);
		return err_set(errmsg, DOCRAFT_ENOMEM,
			       "store environment: cannot start the flusher thread: errno %d", rv);
	}
	e->cache = rocksdb_cache_create_lru(e->cache_bytes);
	*out = e;
	return 0;
}

void store_env_destroy(struct store_env *e)
{
	if (e == NULL)
		return;
	pthread_mutex_lock(&e->mu);
	PRE(e->head == NULL && e->n == 0);
	e->stop = true;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->flusher, NULL);
	rocksdb_cache_destroy(e->cache);
	pthread_cond_destroy(&e->wake);
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

void store_env_stats(struct store_env *e, struct store_env_stats *out)
{
	pthread_mutex_lock(&e->mu);
	out->stores = e->n;
	out->forced_flushes = e->forced_flushes;
	out->flush_errors = e->flush_errors;
	out->hard_waits = e->hard_waits;
	pthread_mutex_unlock(&e->mu);
	out->memtable_bytes = atomic_load(&e->total);
	out->write_buffer_bytes = e->budget;
	out->block_cache_usage = rocksdb_cache_get_usage(e->cache);
	out->block_cache_bytes = e->cache_bytes;
}

bool store_env_busy(struct store_env *e)
{
	return e != NULL && atomic_load(&e->total) > e->budget + e->budget / 2;
}

void store_env_wait_idle(struct store_env *e)
{
	pthread_mutex_lock(&e->mu);
	while (e->kicked || e->busy)
		pthread_cond_wait(&e->idle, &e->mu);
	pthread_mutex_unlock(&e->mu);
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
	struct store_env_member *m = xzalloc(sizeof *m);
	m->e = e;
	m->s = s;
	atomic_init(&m->bytes, 0);
	atomic_init(&m->since, 0);
	pthread_mutex_lock(&e->mu);
	DLIST_PUSH(e->head, m);
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
	while (m->flushing)
		pthread_cond_wait(&e->idle, &e->mu);
	DLIST_REMOVE(e->head, m);
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

/* One episode, under e->mu (released around each flush). */
static void enforce(struct store_env *e)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	if (atomic_load(&e->total) <= e->budget)
		return;
	/* Stale sizes (RocksDB flushed by itself since) would flush for
	 * nothing: re-read them all first. */
	for (struct store_env_member *m = e->head; m != NULL; m = m->next)
		set_bytes(m, store_memtable_bytes(m->s));
	for (size_t i = 0; i < e->n && atomic_load(&e->total) > e->budget && !e->stop; i++) {
		struct store_env_member *v = pick_victim(e);
		size_t before;
		int rv;
		if (v == NULL)
			break;
		before = atomic_load(&v->bytes);
		atomic_store(&v->since, 0);
		e->forced_flushes++;
		v->flushing = true;
		pthread_mutex_unlock(&e->mu);
		rv = store_flush(v->s, errmsg);
		if (rv != 0)
			LOG_WARN("memtable budget: %s", errmsg);
		set_bytes(v, store_memtable_bytes(v->s));
		pthread_mutex_lock(&e->mu);
		v->flushing = false;
		if (rv != 0)
			e->flush_errors++;
		pthread_cond_broadcast(&e->idle);
		LOG_DEBUG("memtable budget %zu: flushed store %s (%zu bytes), now %zu", e->budget,
			  store_path(v->s), before, atomic_load(&e->total));
	}
}

static void *flusher_main(void *arg)
{
	struct store_env *e = arg;
	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (!e->kicked && !e->stop)
			pthread_cond_wait(&e->wake, &e->mu);
		if (e->stop)
			break;
		e->kicked = false;
		e->busy = true;
		enforce(e);
		e->busy = false;
		pthread_cond_broadcast(&e->idle);
	}
	e->kicked = false;
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* A writer past the hard limit: waits, at most HARD_WAIT_MS, for the
 * flusher's episode to end. */
static void hard_wait(struct store_env *e)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)HARD_WAIT_MS * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	e->hard_waits++;
	while ((e->kicked || e->busy) && atomic_load(&e->total) > 2 * e->budget && !e->stop)
		if (pthread_cond_timedwait(&e->idle, &e->mu, &until) == ETIMEDOUT)
			break;
}

void store_env_wrote(struct store_env_member *m, size_t memtable_bytes, uint64_t ht)
{
	struct store_env *e = m->e;
	size_t old = set_bytes(m, memtable_bytes);
	/* A size that shrank: RocksDB flushed, and what is left is newer. */
	if (memtable_bytes < old || atomic_load(&m->since) == 0)
		atomic_store(&m->since, ht);
	if (atomic_load(&e->total) <= e->budget)
		return;
	pthread_mutex_lock(&e->mu);
	/* Also while an episode runs: it may have passed this store already. */
	e->kicked = true;
	pthread_cond_signal(&e->wake);
	if (atomic_load(&e->total) > 2 * e->budget)
		hard_wait(e);
	pthread_mutex_unlock(&e->mu);
}
