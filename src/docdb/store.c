/* The RocksDB glue behind docdb/store.h.
 *
 * One RocksDB instance, default column family, bytewise order, WAL off. Every
 * store_apply is one rocksdb_write carrying the batch's pairs (each key
 * suffixed with '#' DocHT(ht, write_id)) and the applied marker, so whatever
 * a flush persists is a prefix of the applied Raft entries and the marker
 * names its last one. RocksDB's own flush-at-close is switched off
 * (avoid_flush_during_shutdown): store_close does not flush, as the header
 * promises, so the persisted state only ever moves at store_flush (or when a
 * memtable fills up).
 *
 * Reading less (docs/docdb.md): block-based tables with a full bloom filter
 * over the DocKey prefix of filter.h, iterators in prefix mode when their
 * bounds share that prefix, and optionally the process-wide block cache and
 * memtable budget of store_env.h.
 *
 * Block cache hits and misses per store without RocksDB statistics (which
 * cost a shared atomic on every operation): each store_iter call that can
 * read blocks (seeks, next, prev) reads the calling thread's RocksDB perf
 * context before and after and adds the difference to the store's counters.
 * The perf level is per thread in RocksDB; perf_thread() sets it to
 * "count" the first time a thread reads through a store (counts only, no
 * timers), and keeps one perf context handle per thread. Hits are
 * block_cache_hit_count, misses block_read_count (a block read from a file
 * because the cache did not have it); both cover data, index and filter
 * blocks. Compactions run on RocksDB's own threads and are not counted; the
 * marker read at open does not go through an iterator and is not counted
 * either. */
#include "docdb/store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/compaction.h"
#include "docdb/filter.h"
#include "docdb/key.h"
#include "docdb/schema.h"
#include "docdb/store_env.h"

/* The applied marker: BE64 raft index, BE64 hybrid time. Its first byte is
 * below KT_GROUP_END, so it sorts before every DocKey. */
#define MARKER_KEY "\x01" "applied"
#define MARKER_KEY_LEN (sizeof(MARKER_KEY) - 1)
#define MARKER_VALUE_LEN 16

/* rocksdb::InfoLogLevel, which c.h does not name: WARN_LEVEL, and
 * NUM_INFO_LOG_LEVELS, above every level (HEADER_LEVEL included), so that
 * nothing is ever written to the LOG file and it is never flushed. */
#define ROCKSDB_WARN_LEVEL 2
#define ROCKSDB_NO_LOG_LEVEL 6
#define STORE_MANIFEST_PREALLOC (64u << 10) /* bytes of disk reserved per MANIFEST */

#define DEFAULT_RETENTION_US (UINT64_C(900) * 1000 * 1000)

struct store {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_readoptions_t *ropts;  /* point reads (the marker at open) */
	rocksdb_flushoptions_t *fopts;
	/* Applier-only scratch, reused across store_apply calls. */
	rocksdb_writebatch_t *wb;
	struct buf key;
	struct buf marker;
	/* Written by the applier, read from any thread. */
	pthread_mutex_t mu;
	uint64_t applied_index;
	uint64_t applied_ht;
	_Atomic uint64_t history_cutoff;
	uint64_t retention_us;
	/* Compaction GC: gc_mu serialises raising and persisting the cutoff;
	 * gc_cutoff is the persisted one (written under gc_mu). */
	pthread_mutex_t gc_mu;
	_Atomic uint64_t gc_cutoff;
	struct compaction_holds holds; /* reads in progress: caps every raise */
	_Atomic int64_t default_ttl_ms;
	/* The schema compactions use (store_set_schema): a refcounted copy,
	 * swapped under schema_mu, pinned by each job. */
	pthread_mutex_t schema_mu;
	struct schema_ref *schema;
	/* Set once s->db is (compactions may run inside rocksdb_open). */
	_Atomic uint64_t compactions; /* jobs the compaction filter factory saw */
	_Atomic bool db_open;
	/* Block cache counts of reads through iterators (file comment). */
	_Atomic uint64_t cache_hits;
	_Atomic uint64_t cache_misses;
	bool prefix_filter;
	struct store_env_member *env_member; /* NULL: private memory */
	char *path;
};

struct store_iter {
	struct store *s;
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	bool prefix; /* prefix mode (store_iter_new) */
	/* Copies of the bounds: RocksDB keeps pointers to them. */
	uint8_t *lower;
	size_t lower_len;
	uint8_t *upper;
	size_t upper_len;
	uint8_t bounds[];
};

/* The one place a RocksDB error string becomes a docraft code: frees err,
 * fills errmsg with the store path and the operation, returns the code. */
static int rocks_err(char *errmsg, char *err, const char *path, const char *op)
{
	int code;
	if (strstr(err, "No space left") != NULL || strncmp(err, "IO error: No space", 18) == 0)
		code = DOCRAFT_ENOSPC;
	else if (strncmp(err, "Corruption", 10) == 0)
		code = DOCRAFT_ECORRUPT;
	else if (strncmp(err, "Invalid argument", 16) == 0)
		code = DOCRAFT_EINVAL;
	else
		code = DOCRAFT_EIO;
	err_set(errmsg, code, "store %s: %s: %s", path, op, err);
	rocksdb_free(err);
	return code;
}

void store_options_default(struct store_options *o)
{
	o->create_if_missing = true;
	o->write_buffer_size = 0;
	o->history_retention_us = 0;
	o->default_ttl_ms = 0;
	o->prefix_filter = true;
	o->statistics = false;
	o->info_log = false;
	o->env = NULL;
	o->schema = NULL;
}

static int make_options(const struct store_options *o, const char *path,
			rocksdb_options_t **out, char *errmsg)
{
	rocksdb_options_t *base = rocksdb_options_create();
	rocksdb_options_t *opts = rocksdb_options_create();
	char *err = NULL;
	/* No C setter for this one in RocksDB 7.8; the option string has it. */
	rocksdb_get_options_from_string(base, "avoid_flush_during_shutdown=true", opts, &err);
	rocksdb_options_destroy(base);
	if (err != NULL) {
		rocksdb_options_destroy(opts);
		return rocks_err(errmsg, err, path, "options");
	}
	/* The comparator is RocksDB's default bytewise one. */
	rocksdb_options_set_create_if_missing(opts, o->create_if_missing ? 1 : 0);
	if (o->write_buffer_size != 0)
		rocksdb_options_set_write_buffer_size(opts, o->write_buffer_size);
	/* Tables: DocDB prefix bloom filters; with an environment, its shared
	 * block cache holding index and filter blocks too (so they count
	 * against the budget), and its small memtables (store_env.h). */
	{
		rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
		if (o->prefix_filter)
			filter_configure(opts, t);
		if (o->env != NULL) {
			rocksdb_block_based_options_set_block_cache(t,
								   store_env_block_cache(o->env));
			rocksdb_block_based_options_set_cache_index_and_filter_blocks(t, 1);
			rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(
				t, 1);
			if (o->write_buffer_size == 0)
				rocksdb_options_set_write_buffer_size(
					opts, store_env_store_write_buffer_size(o->env));
			rocksdb_options_set_arena_block_size(opts,
							     store_env_arena_block_size(o->env));
			/* Room for two memtables being flushed beside the
			 * active one before RocksDB stops writes (its stop
			 * trigger; no slowdown below four): the memtables
			 * count against the budget anyway, and a stop blocks
			 * the writer, the tserver's loop thread. */
			rocksdb_options_set_max_write_buffer_number(opts, 3);
		}
		rocksdb_options_set_block_based_table_factory(opts, t);
		rocksdb_block_based_options_destroy(t);
	}
	if (o->statistics)
		rocksdb_options_enable_statistics(opts);
	/* RocksDB's own LOG file in the store directory (store.h, info_log):
	 * off by default, else warnings and errors only. Debian's 7.8 build
	 * keeps assert() on (the library holds the assertion strings), and
	 * once a write of the LOG file fails (disk full) the next Append or
	 * Flush of it aborts the process in
	 * WritableFileWriter::AssertFalseAndGetStatusForPrevError; at INFO
	 * level that was seen, and a flush that fails for lack of space logs
	 * an ERROR line, which WARN level still writes. Off, the logger is
	 * still created (an empty LOG; if creating it fails RocksDB goes on
	 * without one) but never written, so never flushed. */
	rocksdb_options_set_info_log_level(opts, o->info_log ? ROCKSDB_WARN_LEVEL
							     : ROCKSDB_NO_LOG_LEVEL);
	rocksdb_options_set_keep_log_file_num(opts, 4);
	/* RocksDB reserves 4 MiB of disk (fallocate) for every MANIFEST: with
	 * 96 replicas per tserver that was 1.1 GiB of a fresh table's disk
	 * (issue 14). A store's MANIFEST holds a few hundred bytes per flush
	 * or compaction and is rewritten once it passes max_manifest_file_size,
	 * so 64 KiB per extension is plenty. */
	rocksdb_options_set_manifest_preallocation_size(opts, STORE_MANIFEST_PREALLOC);
	*out = opts;
	return 0;
}

static int load_marker(struct store *s, char *errmsg)
{
	char *err = NULL;
	size_t len = 0;
	char *v = rocksdb_get(s->db, s->ropts, MARKER_KEY, MARKER_KEY_LEN, &len, &err);
	if (err != NULL)
		return rocks_err(errmsg, err, s->path, "reading the applied marker");
	if (v == NULL) {
		s->applied_index = 0;
		s->applied_ht = 0;
		return 0;
	}
	if (len != MARKER_VALUE_LEN) {
		rocksdb_free(v);
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "store %s: applied marker is %zu bytes, want %d", s->path, len,
			       MARKER_VALUE_LEN);
	}
	s->applied_index = be64_load((const uint8_t *)v);
	s->applied_ht = be64_load((const uint8_t *)v + 8);
	rocksdb_free(v);
	return 0;
}

int store_open(const char *path, const struct store_options *opts, struct store **out,
	       char *errmsg)
{
	char msg[DOCRAFT_ERRMSG_SIZE] = "";
	struct store_options def;
	struct store *s;
	char *err = NULL;
	int rv;

	PRE(path != NULL && out != NULL);
	*out = NULL;
	if (opts == NULL) {
		store_options_default(&def);
		opts = &def;
	}
	s = xzalloc(sizeof *s);
	s->path = xstrdup(path);
	buf_init(&s->key);
	buf_init(&s->marker);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->gc_mu, NULL);
	compaction_holds_init(&s->holds);
	atomic_init(&s->history_cutoff, 0);
	atomic_init(&s->gc_cutoff, 0);
	atomic_init(&s->cache_hits, 0);
	atomic_init(&s->cache_misses, 0);
	atomic_init(&s->default_ttl_ms, opts->default_ttl_ms);
	pthread_mutex_init(&s->schema_mu, NULL);
	store_set_schema(s, opts->schema);
	s->prefix_filter = opts->prefix_filter;
	s->retention_us = opts->history_retention_us ? opts->history_retention_us
						     : DEFAULT_RETENTION_US;

	if ((rv = make_options(opts, path, &s->opts, msg)) != 0)
		goto err_after_init;
	/* Compaction GC (compaction.c): the persisted cutoff first, since
	 * compactions may start as soon as RocksDB opens; one subcompaction per
	 * job, so each filter sees its job's keys in order. */
	{
		uint64_t c = 0;
		if ((rv = compaction_cutoff_load(path, &c, msg)) != 0)
			goto err_after_init;
		atomic_store(&s->gc_cutoff, c);
		atomic_store(&s->history_cutoff, c);
	}
	rocksdb_options_set_compaction_filter_factory(s->opts, compaction_factory_create(s));
	rocksdb_options_set_max_subcompactions(s->opts, 1);
	s->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_disable_WAL(s->wopts, 1);
	rocksdb_writeoptions_set_sync(s->wopts, 0);
	s->ropts = rocksdb_readoptions_create();
	s->fopts = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(s->fopts, 1);
	s->wb = rocksdb_writebatch_create();

	s->db = rocksdb_open(s->opts, path, &err);
	if (err != NULL) {
		rv = rocks_err(msg, err, path, "open");
		goto err_after_init;
	}
	atomic_store(&s->db_open, true);
	if ((rv = load_marker(s, msg)) != 0)
		goto err_after_init;
	if (opts->env != NULL)
		s->env_member = store_env_join(opts->env, s);
	LOG_INFO("store %s: opened, applied index %" PRIu64 " ht %" PRIu64, path,
		 s->applied_index, s->applied_ht);
	*out = s;
	return 0;

err_after_init:
	LOG_INFO("%s", msg);
	store_close(s);
	return err_set(errmsg, rv, "%s", msg);
}

void store_close(struct store *s)
{
	if (s == NULL)
		return;
	store_env_leave(s->env_member);
	if (s->db != NULL) {
		rocksdb_close(s->db);
		LOG_INFO("store %s: closed", s->path);
	}
	if (s->wb != NULL)
		rocksdb_writebatch_destroy(s->wb);
	if (s->fopts != NULL)
		rocksdb_flushoptions_destroy(s->fopts);
	if (s->ropts != NULL)
		rocksdb_readoptions_destroy(s->ropts);
	if (s->wopts != NULL)
		rocksdb_writeoptions_destroy(s->wopts);
	if (s->opts != NULL)
		rocksdb_options_destroy(s->opts);
	buf_free(&s->key);
	buf_free(&s->marker);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->gc_mu);
	compaction_holds_destroy(&s->holds);
	store_set_schema(s, NULL); /* jobs are over: rocksdb_close waited */
	pthread_mutex_destroy(&s->schema_mu);
	free(s->path);
	free(s);
}

int store_apply(struct store *s, const void *batch, size_t len, uint64_t ht, uint64_t raft_index,
		char *errmsg)
{
	struct store_part part = {batch, len};
	return store_apply_parts(s, &part, 1, NULL, 0, ht, raft_index, errmsg);
}

int store_apply_parts(struct store *s, const struct store_part *parts, size_t nparts,
		      const struct store_raw *raw, size_t nraw, uint64_t ht, uint64_t raft_index,
		      char *errmsg)
{
	struct batch_iter bi;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint64_t applied;
	uint32_t i = 0;
	size_t part = 0;
	char *err = NULL;
	int rv = 0;

	PRE(s != NULL && (parts != NULL || nparts == 0) && (raw != NULL || nraw == 0));
	if (ht == HT_MIN || ht == HT_INVALID || ht == HT_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "store %s: raft index %" PRIu64 ": invalid hybrid time %" PRIu64,
			       s->path, raft_index, ht);
	if (raft_index != 0) {
		store_applied(s, &applied, NULL);
		if (raft_index <= applied)
			return 0;
	}

	/* Write ids run on across the parts: together they are one batch. */
	for (; part < nparts && rv >= 0; part++) {
		PRE(parts[part].batch != NULL || parts[part].len == 0);
		batch_iter_init(&bi, parts[part].batch, parts[part].len);
		for (; (rv = batch_next(&bi, &k, &kl, &v, &vl)) == 1; i++) {
			buf_reset(&s->key);
			buf_append(&s->key, k, kl);
			buf_push(&s->key, KT_HYBRID_TIME);
			docht_append(&s->key, (struct docht){.ht = ht, .write_id = i});
			rocksdb_writebatch_put(s->wb, (const char *)s->key.data, s->key.len,
					       (const char *)v, vl);
		}
	}
	if (rv < 0) {
		rocksdb_writebatch_clear(s->wb);
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "store %s: raft index %" PRIu64
			       ": malformed write batch: part %zu, pair %" PRIu32 " at offset %zu",
			       s->path, raft_index, part - 1, i,
			       (size_t)(bi.p - (const uint8_t *)parts[part - 1].batch));
	}
	for (size_t r = 0; r < nraw; r++) {
		PRE(raw[r].klen > 0 && ((const uint8_t *)raw[r].key)[0] <= KT_INTERNAL_MAX &&
		    ((const uint8_t *)raw[r].key)[0] != MARKER_KEY[0]);
		if (raw[r].del)
			rocksdb_writebatch_delete(s->wb, raw[r].key, raw[r].klen);
		else
			rocksdb_writebatch_put(s->wb, raw[r].key, raw[r].klen, raw[r].val,
					       raw[r].vlen);
	}
	if (raft_index != 0) {
		buf_reset(&s->marker);
		buf_append_be64(&s->marker, raft_index);
		buf_append_be64(&s->marker, ht);
		rocksdb_writebatch_put(s->wb, MARKER_KEY, MARKER_KEY_LEN,
				       (const char *)s->marker.data, s->marker.len);
	}
	rocksdb_write(s->db, s->wopts, s->wb, &err);
	rocksdb_writebatch_clear(s->wb);
	if (err != NULL) {
		char op[64];
		snprintf(op, sizeof op, "write of raft index %" PRIu64, raft_index);
		return rocks_err(errmsg, err, s->path, op);
	}
	if (raft_index != 0) {
		pthread_mutex_lock(&s->mu);
		s->applied_index = raft_index;
		s->applied_ht = ht;
		pthread_mutex_unlock(&s->mu);
	}
	if (s->env_member != NULL)
		store_env_wrote(s->env_member, store_memtable_bytes(s), ht);
	return 0;
}

int store_checkpoint(struct store *s, const char *dir, char *errmsg)
{
	char *err = NULL;
	rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(s->db, &err);
	if (err != NULL)
		return rocks_err(errmsg, err, s->path, "creating a checkpoint object");
	/* log_size_for_flush 0: flush the memtables first, so the checkpoint
	 * holds everything applied (the WAL is off: nothing else would). */
	rocksdb_checkpoint_create(cp, dir, 0, &err);
	rocksdb_checkpoint_object_destroy(cp);
	if (err != NULL)
		return rocks_err(errmsg, err, s->path, "creating a checkpoint");
	/* The GC cutoff, read after the files were linked: at least the cutoff
	 * of every compaction whose output the checkpoint holds. */
	return compaction_cutoff_save(dir, atomic_load(&s->gc_cutoff), errmsg);
}

void store_applied(const struct store *s, uint64_t *raft_index, uint64_t *ht)
{
	struct store *m = (struct store *)s; /* the mutex is not part of the value */
	pthread_mutex_lock(&m->mu);
	if (raft_index != NULL)
		*raft_index = s->applied_index;
	if (ht != NULL)
		*ht = s->applied_ht;
	pthread_mutex_unlock(&m->mu);
}

int store_flush(struct store *s, char *errmsg)
{
	char *err = NULL;
	PRE(s != NULL);
	rocksdb_flush(s->db, s->fopts, &err);
	if (err != NULL)
		return rocks_err(errmsg, err, s->path, "flush");
	return 0;
}

bool store_property(struct store *s, const char *name, uint64_t *out)
{
	char *v, *end;
	bool ok;

	PRE(s != NULL);
	if (rocksdb_property_int(s->db, name, out) == 0)
		return true;
	/* Some numbers ("rocksdb.num-files-at-level<N>") have only a string
	 * form in RocksDB 7.8: take it when it is a plain decimal. */
	v = rocksdb_property_value(s->db, name);
	if (v == NULL)
		return false;
	errno = 0;
	*out = strtoull(v, &end, 10);
	ok = errno == 0 && end != v && *end == '\0' && v[0] >= '0' && v[0] <= '9';
	rocksdb_free(v);
	if (!ok)
		*out = 0;
	return ok;
}

void store_count_compaction(struct store *s)
{
	atomic_fetch_add(&s->compactions, 1);
}

uint64_t store_compactions(const struct store *s)
{
	return atomic_load(&((struct store *)s)->compactions);
}

size_t store_memtable_bytes(struct store *s)
{
	uint64_t v = 0;
	PRE(s != NULL);
	if (rocksdb_property_int(s->db, "rocksdb.cur-size-all-mem-tables", &v) != 0)
		return 0;
	return (size_t)v;
}

bool store_ticker(struct store *s, const char *name, uint64_t *out)
{
	/* 7.8's C API has no per-ticker getter: parse the dump, whose lines
	 * read "<name> COUNT : <n>". */
	char *all = rocksdb_options_statistics_get_string(s->opts);
	size_t n = strlen(name);
	bool found = false;
	if (all == NULL)
		return false;
	for (const char *p = all; (p = strstr(p, name)) != NULL; p += n) {
		unsigned long long v;
		if ((p != all && p[-1] != '\n') || sscanf(p + n, " COUNT : %llu", &v) != 1)
			continue;
		*out = v;
		found = true;
		break;
	}
	rocksdb_free(all);
	return found;
}

uint64_t store_history_cutoff(const struct store *s)
{
	return atomic_load(&((struct store *)s)->history_cutoff);
}

void store_set_history_cutoff(struct store *s, uint64_t ht)
{
	pthread_mutex_lock(&s->gc_mu);
	if (ht < atomic_load(&s->gc_cutoff))
		ht = atomic_load(&s->gc_cutoff);
	atomic_store(&s->history_cutoff, ht);
	pthread_mutex_unlock(&s->gc_mu);
}

int store_hold_history(struct store *s, uint64_t ht, unsigned hold_ms, char *errmsg)
{
	uint64_t applied = 0, now = hlc_wall_clock(NULL);
	store_applied(s, NULL, &applied);
	return compaction_hold_add(&s->holds, ht, store_history_cutoff(s),
				   compaction_auto_cutoff(now, applied, s->retention_us),
				   compaction_auto_cutoff(now, applied, 2 * s->retention_us),
				   hold_ms, errmsg);
}

int store_raise_history_cutoff(struct store *s, uint64_t ht, uint64_t *in_effect, char *errmsg)
{
	int rv = 0;
	ht = compaction_hold_cap(&s->holds, ht); /* never above a read in progress */
	pthread_mutex_lock(&s->gc_mu);
	if (ht > atomic_load(&s->gc_cutoff)) {
		if ((rv = compaction_cutoff_save(s->path, ht, errmsg)) == 0)
			atomic_store(&s->gc_cutoff, ht);
	}
	if (atomic_load(&s->history_cutoff) < atomic_load(&s->gc_cutoff))
		atomic_store(&s->history_cutoff, atomic_load(&s->gc_cutoff));
	if (in_effect != NULL)
		*in_effect = atomic_load(&s->gc_cutoff);
	pthread_mutex_unlock(&s->gc_mu);
	return rv;
}

int store_compact(struct store *s, uint64_t cutoff_ht, char *errmsg)
{
	return store_compact_range(s, NULL, 0, NULL, 0, cutoff_ht, errmsg);
}

int store_compact_range(struct store *s, const void *lo, size_t lo_len, const void *hi,
			size_t hi_len, uint64_t cutoff_ht, char *errmsg)
{
	rocksdb_compactoptions_t *co;
	uint64_t before = 0, after = 0, applied = 0;
	int rv;

	PRE(s != NULL);
	if (cutoff_ht >= HT_INVALID)
		return err_set(errmsg, DOCRAFT_EINVAL, "store %s: invalid history cutoff %" PRIu64,
			       s->path, cutoff_ht);
	if (cutoff_ht == 0) {
		store_applied(s, NULL, &applied);
		cutoff_ht = compaction_auto_cutoff(hlc_wall_clock(NULL), applied, s->retention_us);
	}
	if (cutoff_ht < store_history_cutoff(s))
		cutoff_ht = store_history_cutoff(s);
	/* Manual jobs use the store's cutoff as they start: raise it now. */
	if ((rv = store_raise_history_cutoff(s, cutoff_ht, NULL, errmsg)) != 0)
		return rv;
	co = rocksdb_compactoptions_create();
	rocksdb_compactoptions_set_exclusive_manual_compaction(co, 1);
	rocksdb_compactoptions_set_bottommost_level_compaction(co, 2 /* kForce */);
	rocksdb_property_int(s->db, "rocksdb.background-errors", &before);
	rocksdb_compact_range_opt(s->db, co, lo, lo ? lo_len : 0, hi, hi ? hi_len : 0);
	rocksdb_property_int(s->db, "rocksdb.background-errors", &after);
	rocksdb_compactoptions_destroy(co);
	if (after > before)
		return err_set(errmsg, DOCRAFT_EIO,
			       "store %s: compaction failed (%" PRIu64
			       " background errors, see the RocksDB LOG)",
			       s->path, after - before);
	return 0;
}

int64_t store_default_ttl_ms(const struct store *s)
{
	return atomic_load(&((struct store *)s)->default_ttl_ms);
}

void store_set_default_ttl_ms(struct store *s, int64_t ttl_ms)
{
	atomic_store(&s->default_ttl_ms, ttl_ms);
}

/* A schema copy shared by the store and the compaction jobs that pinned it;
 * the last store_schema_release frees it. */
struct schema_ref {
	_Atomic uint32_t refs;
	struct schema schema;
};

void store_set_schema(struct store *s, const struct schema *schema)
{
	struct schema_ref *r = NULL, *old;
	PRE(s != NULL);
	if (schema != NULL) {
		r = xmalloc(sizeof *r);
		atomic_init(&r->refs, 1);
		schema_copy(&r->schema, schema);
	}
	pthread_mutex_lock(&s->schema_mu);
	old = s->schema;
	s->schema = r;
	pthread_mutex_unlock(&s->schema_mu);
	if (old != NULL)
		store_schema_release(&old->schema);
}

const struct schema *store_schema_acquire(struct store *s)
{
	const struct schema *out = NULL;
	pthread_mutex_lock(&s->schema_mu);
	if (s->schema != NULL) {
		atomic_fetch_add(&s->schema->refs, 1);
		out = &s->schema->schema;
	}
	pthread_mutex_unlock(&s->schema_mu);
	return out;
}

void store_schema_release(const struct schema *schema)
{
	struct schema_ref *r;
	if (schema == NULL)
		return;
	r = (struct schema_ref *)((char *)schema - offsetof(struct schema_ref, schema));
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		schema_free(&r->schema);
		free(r);
	}
}

uint64_t store_history_retention_us(const struct store *s)
{
	return s->retention_us;
}

bool store_db_open(const struct store *s)
{
	return atomic_load(&((struct store *)s)->db_open);
}

const char *store_path(const struct store *s)
{
	return s->path;
}

/* ---- block cache counts (file comment) ---- */

static pthread_key_t perf_key;
static pthread_once_t perf_once = PTHREAD_ONCE_INIT;
static _Thread_local rocksdb_perfcontext_t *perf_tl;

static void perf_free(void *pc)
{
	rocksdb_perfcontext_destroy(pc);
}

static void perf_key_create(void)
{
	if (pthread_key_create(&perf_key, perf_free) != 0)
		PANIC("store: pthread_key_create failed");
}

/* The calling thread's perf context handle, counting enabled. */
static rocksdb_perfcontext_t *perf_thread(void)
{
	if (perf_tl != NULL)
		return perf_tl;
	pthread_once(&perf_once, perf_key_create);
	rocksdb_set_perf_level(rocksdb_enable_count);
	perf_tl = rocksdb_perfcontext_create();
	if (pthread_setspecific(perf_key, perf_tl) != 0) /* destroyed at thread exit */
		PANIC("store: pthread_setspecific failed");
	return perf_tl;
}

struct perf_mark {
	rocksdb_perfcontext_t *pc;
	uint64_t hits, reads;
};

static void perf_begin(struct perf_mark *m)
{
	m->pc = perf_thread();
	m->hits = rocksdb_perfcontext_metric(m->pc, rocksdb_block_cache_hit_count);
	m->reads = rocksdb_perfcontext_metric(m->pc, rocksdb_block_read_count);
}

/* Adds what the thread counted since perf_begin to s. A counter that went
 * down was reset by someone else on this thread: its new value is all we
 * know of. */
static void perf_end(const struct perf_mark *m, struct store *s)
{
	uint64_t h = rocksdb_perfcontext_metric(m->pc, rocksdb_block_cache_hit_count);
	uint64_t r = rocksdb_perfcontext_metric(m->pc, rocksdb_block_read_count);
	h = h >= m->hits ? h - m->hits : h;
	r = r >= m->reads ? r - m->reads : r;
	if (h != 0)
		atomic_fetch_add_explicit(&s->cache_hits, h, memory_order_relaxed);
	if (r != 0)
		atomic_fetch_add_explicit(&s->cache_misses, r, memory_order_relaxed);
}

void store_cache_counts(const struct store *s, uint64_t *hits, uint64_t *misses)
{
	struct store *m = (struct store *)s;
	*hits = atomic_load_explicit(&m->cache_hits, memory_order_relaxed);
	*misses = atomic_load_explicit(&m->cache_misses, memory_order_relaxed);
}

struct store_iter *store_iter_new(struct store *s, const void *lower, size_t lower_len,
				  const void *upper, size_t upper_len)
{
	struct store_iter *it;
	size_t n = (lower ? lower_len : 0) + (upper ? upper_len : 0);

	PRE(s != NULL);
	it = xmalloc(sizeof *it + n);
	it->s = s;
	it->lower = NULL;
	it->lower_len = 0;
	it->upper = NULL;
	it->upper_len = 0;
	it->ro = rocksdb_readoptions_create();
	if (lower != NULL) {
		it->lower = it->bounds;
		it->lower_len = lower_len;
		if (lower_len > 0)
			memcpy(it->lower, lower, lower_len);
		rocksdb_readoptions_set_iterate_lower_bound(it->ro, (const char *)it->lower,
							    lower_len);
	}
	if (upper != NULL) {
		it->upper = it->bounds + (lower ? lower_len : 0);
		it->upper_len = upper_len;
		if (upper_len > 0)
			memcpy(it->upper, upper, upper_len);
		rocksdb_readoptions_set_iterate_upper_bound(it->ro, (const char *)it->upper,
							    upper_len);
	}
	/* With a prefix extractor configured, RocksDB's default is prefix
	 * mode for every iterator: only bounds inside one bloom key may use
	 * it; everything else must ask for total order. */
	it->prefix = s->prefix_filter && filter_bounds_prefix(lower, lower_len, upper, upper_len) > 0;
	if (it->prefix)
		rocksdb_readoptions_set_prefix_same_as_start(it->ro, 1);
	else
		rocksdb_readoptions_set_total_order_seek(it->ro, 1);
	it->it = rocksdb_create_iterator(s->db, it->ro);
	return it;
}

bool store_iter_prefix_mode(const struct store_iter *it)
{
	return it->prefix;
}

/* memcmp order of byte strings. */
static int bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

void store_iter_free(struct store_iter *it)
{
	if (it == NULL)
		return;
	rocksdb_iter_destroy(it->it);
	rocksdb_readoptions_destroy(it->ro);
	free(it);
}

/* In prefix mode RocksDB takes the prefix from the seek key: keep it inside
 * the bounds, where it is the bounds' prefix (a key past the other bound
 * finds nothing either way). */
void store_iter_seek(struct store_iter *it, const void *key, size_t len)
{
	struct perf_mark pm;

	if (it->prefix && bytes_cmp(key, len, it->lower, it->lower_len) < 0) {
		key = it->lower;
		len = it->lower_len;
	}
	perf_begin(&pm);
	rocksdb_iter_seek(it->it, (const char *)key, len);
	perf_end(&pm, it->s);
}

void store_iter_seek_for_prev(struct store_iter *it, const void *key, size_t len)
{
	struct perf_mark pm;

	if (it->prefix && bytes_cmp(key, len, it->upper, it->upper_len) > 0) {
		key = it->upper;
		len = it->upper_len;
	}
	perf_begin(&pm);
	rocksdb_iter_seek_for_prev(it->it, (const char *)key, len);
	perf_end(&pm, it->s);
}

void store_iter_seek_first(struct store_iter *it)
{
	struct perf_mark pm;
	perf_begin(&pm);
	rocksdb_iter_seek_to_first(it->it);
	perf_end(&pm, it->s);
}

void store_iter_seek_last(struct store_iter *it)
{
	struct perf_mark pm;
	perf_begin(&pm);
	rocksdb_iter_seek_to_last(it->it);
	perf_end(&pm, it->s);
}

void store_iter_next(struct store_iter *it)
{
	PRE(store_iter_valid(it));
	struct perf_mark pm;
	perf_begin(&pm);
	rocksdb_iter_next(it->it);
	perf_end(&pm, it->s);
}

void store_iter_prev(struct store_iter *it)
{
	PRE(store_iter_valid(it));
	struct perf_mark pm;
	perf_begin(&pm);
	rocksdb_iter_prev(it->it);
	perf_end(&pm, it->s);
}

bool store_iter_valid(const struct store_iter *it)
{
	return rocksdb_iter_valid(it->it) != 0;
}

const uint8_t *store_iter_key(const struct store_iter *it, size_t *len)
{
	PRE(store_iter_valid(it));
	return (const uint8_t *)rocksdb_iter_key(it->it, len);
}

const uint8_t *store_iter_value(const struct store_iter *it, size_t *len)
{
	PRE(store_iter_valid(it));
	return (const uint8_t *)rocksdb_iter_value(it->it, len);
}

int store_iter_status(const struct store_iter *it, char *errmsg)
{
	char *err = NULL;
	rocksdb_iter_get_error(it->it, &err);
	if (err != NULL)
		return rocks_err(errmsg, err, it->s->path, "iterate");
	return 0;
}
