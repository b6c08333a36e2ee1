/* The RocksDB side of compaction GC: a compaction filter factory that gives
 * every compaction job its own decider (compaction.c) and adds up what the
 * jobs did.
 *
 * Design. RocksDB 7.8 asks the factory for one filter per subcompaction on
 * its compaction thread (the store runs one subcompaction per job, see
 * compaction.c). Creating one raises and persists the store's history
 * cutoff first (store_raise_history_cutoff, compaction_history.c), so the
 * cutoff is durable and visible to readers before the first pair is
 * filtered; a job whose cutoff is 0 gets no filter. The job pins the schema
 * it starts with and reads ahead in the store only once the store is open
 * (not during the compactions RocksDB runs while opening). When RocksDB
 * destroys the filter the job's statistics go into process-wide atomic
 * totals (compaction_get_totals) and one log line. */
#include "docdb/compaction_gc.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/store.h"

struct job {
	struct compaction_gc *g;
	const struct schema *schema; /* pinned (store_schema_acquire) */
	bool manual;
};

static unsigned char filter_cb(void *arg, int level, const char *key, size_t klen,
			       const char *val, size_t vlen, char **new_val, size_t *new_len,
			       unsigned char *changed)
{
	struct job *j = arg;
	const uint8_t *nv = NULL;
	size_t nl = 0;
	(void)level;
	switch (compaction_gc_decide(j->g, (const uint8_t *)key, klen, (const uint8_t *)val, vlen,
				     &nv, &nl)) {
	case COMPACTION_DROP:
		return 1;
	case COMPACTION_REWRITE:
		/* RocksDB copies the new value before the next call. */
		*new_val = (char *)nv;
		*new_len = nl;
		*changed = 1;
		return 0;
	case COMPACTION_KEEP:
		break;
	}
	return 0;
}

static struct {
	_Atomic uint64_t jobs_full, jobs_partial, kept, dropped, rewritten, undecodable;
	_Atomic uint64_t repacked, folded;
} totals;

void compaction_get_totals(struct compaction_totals *out)
{
	out->jobs_full = atomic_load(&totals.jobs_full);
	out->jobs_partial = atomic_load(&totals.jobs_partial);
	out->stats.kept = atomic_load(&totals.kept);
	out->stats.dropped = atomic_load(&totals.dropped);
	out->stats.rewritten = atomic_load(&totals.rewritten);
	out->stats.undecodable = atomic_load(&totals.undecodable);
	out->stats.repacked = atomic_load(&totals.repacked);
	out->stats.folded = atomic_load(&totals.folded);
}

static void filter_destroy(void *arg)
{
	struct job *j = arg;
	const struct compaction_stats *st = &j->g->stats;
	atomic_fetch_add(j->g->full ? &totals.jobs_full : &totals.jobs_partial, 1);
	atomic_fetch_add(&totals.kept, st->kept);
	atomic_fetch_add(&totals.dropped, st->dropped);
	atomic_fetch_add(&totals.rewritten, st->rewritten);
	atomic_fetch_add(&totals.undecodable, st->undecodable);
	atomic_fetch_add(&totals.repacked, st->repacked);
	atomic_fetch_add(&totals.folded, st->folded);
	LOG_INFO("store %s: %s%s compaction GC at cutoff %" PRIu64 ": kept %" PRIu64
		 ", dropped %" PRIu64 ", rewritten %" PRIu64 ", undecodable %" PRIu64
		 ", repacked %" PRIu64 ", folded %" PRIu64,
		 j->g->tag, j->manual ? "manual " : "", j->g->full ? "full" : "partial",
		 j->g->cutoff, st->kept, st->dropped, st->rewritten, st->undecodable,
		 st->repacked, st->folded);
	compaction_gc_free(j->g); /* frees its iterator first */
	store_schema_release(j->schema);
	free(j);
}

static const char *filter_name(void *arg)
{
	(void)arg;
	return "docraft.DocDBGC";
}

static rocksdb_compactionfilter_t *factory_create_filter(void *arg,
							 rocksdb_compactionfiltercontext_t *ctx)
{
	struct store *s = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	bool full = rocksdb_compactionfiltercontext_is_full_compaction(ctx) != 0;
	bool manual = rocksdb_compactionfiltercontext_is_manual_compaction(ctx) != 0;
	uint64_t want = store_history_cutoff(s), cutoff = 0;
	rocksdb_compactionfilter_t *f;
	struct job *j;

	store_count_compaction(s);
	if (!manual) {
		uint64_t applied = 0, a;
		store_applied(s, NULL, &applied);
		a = compaction_auto_cutoff(hlc_wall_clock(NULL), applied,
					   store_history_retention_us(s));
		if (a > want)
			want = a;
	}
	/* Durable and visible to readers before the first pair is filtered. On
	 * failure cutoff is the one persisted before: still safe to use. */
	if (store_raise_history_cutoff(s, want, &cutoff, errmsg) != 0)
		LOG_WARN("store %s: compaction keeps history above %" PRIu64 ": %s",
			 store_path(s), cutoff, errmsg);
	if (cutoff == 0)
		return NULL; /* nothing at or below hybrid time 0: no filter */
	j = xmalloc(sizeof *j);
	j->g = compaction_gc_new(cutoff, full, store_default_ttl_ms(s));
	j->g->tag = store_path(s);
	j->manual = manual;
	/* The schema as the job starts; repacking reads ahead in s, once it
	 * is open (not in jobs RocksDB runs while opening). */
	j->schema = store_schema_acquire(s);
	compaction_gc_set_schema(j->g, j->schema, store_db_open(s) ? s : NULL);
	f = rocksdb_compactionfilter_create(j, filter_destroy, filter_cb, filter_name);
	rocksdb_compactionfilter_set_ignore_snapshots(f, 1);
	return f;
}

static void factory_destroy(void *arg)
{
	(void)arg; /* the store owns everything */
}

static const char *factory_name(void *arg)
{
	(void)arg;
	return "docraft.DocDBGCFactory";
}

rocksdb_compactionfilterfactory_t *compaction_factory_create(struct store *s)
{
	PRE(s != NULL);
	return rocksdb_compactionfilterfactory_create(s, factory_destroy, factory_create_filter,
						      factory_name);
}
