/* docraft-applybench: what one RocksDB per tablet server would save in the
 * state machine's apply step (docs/benchmarks.md, "Would one RocksDB per
 * tserver close it?"). Single-threaded and in-process: no Raft, no network,
 * real RocksDB (WAL off, as docdb/store.c runs it) in a temporary directory
 * under --dir, $TMPDIR or /tmp, removed at exit.
 *
 * The workload is a simulation of loop turns. In each turn, each of T
 * tablets applies one entry of R requests, as fsm.c apply does for a tablet
 * write entry: the tablet's retry table (tablet/retry.h, the real code:
 * retry_expire, retry_applied, retry_record, retry_changes_finish) decides
 * each request and yields the entry's raw retry records (one chunk put per
 * client, the deletes of chunks it forgot), and each request writes one row
 * of the benchmark's CQL table
 *
 *   CREATE TABLE t (k text PRIMARY KEY, v blob)
 *
 * k = "user" + 10 digits (docraft bench's key_name), the number in [0, K),
 * uniform or (--distribution zipfian) YCSB's scrambled zipfian as docraft
 * bench draws it by default; v = V random bytes. Keys go to tablets as
 * docraft places them: the 16-bit partition hash of k (key_hash_components)
 * in T equal hash ranges (hash16_partition_start). Before any layout runs,
 * keys are drawn from the distribution and each goes to its tablet's list
 * until every tablet has one per request (turns x R); a tablet's requests
 * take its list in order. The rows' DocDB batches (docwrite_insert: liveness column + v, two
 * pairs) are built once per key before the clock starts; in the tserver the
 * batch also arrives ready-made in the Raft entry. Requests come from C
 * clients in turn (request j of the run from client j mod C, its seqs 1, 2,
 * 3, ..., min_running = seq: one request in flight per client).
 *
 * Layouts, each on fresh stores, the same requests (same seed) in the same
 * order:
 *
 *   per-tablet        T stores, store_open each with one shared store_env
 *                     (the tserver's: tserver_main.c); one store_apply_parts
 *                     per entry (the row batches, the retry records raw, the
 *                     applied marker by raft index), exactly fsm.c's write.
 *   shared-per-entry  ONE raw RocksDB instance (rocksdb_open, not store_open:
 *                     store.c keeps its handle private and adds the marker
 *                     itself) with the options store.c gives a store in an
 *                     environment: its write_buffer_size and arena block,
 *                     max_write_buffer_number 3, the env's block cache, WAL
 *                     off; no prefix extractor or compaction filter (neither
 *                     touches a memtable insert: memtable prefix blooms are
 *                     off). Every key is prefixed by the 4-byte BE tablet
 *                     number: prefix + DocKey + '#' DocHT for the rows,
 *                     prefix + the retry key, prefix + "\x01applied" (BE64
 *                     index, BE64 ht) for the tablet's marker. One
 *                     rocksdb_write per entry.
 *   shared-per-turn   the same instance layout; the T entries of a turn in
 *                     ONE write batch, one rocksdb_write per turn.
 *
 * After each rocksdb_write the shared layouts read
 * "rocksdb.cur-size-all-mem-tables", as store_apply_parts does for the
 * memtable budget (store_env_wrote), so every layout pays that too.
 *
 * Memtables: by default (--write-buffer-mb 0) every store and the shared
 * instance get a 1 GiB write buffer under a 4 GiB budget, so nothing
 * flushes during the measured loop: the figures are the inserts alone, not
 * the background flush threads competing for the 2 cores (a shared store
 * flushes the same bytes as 96 small ones, in fewer, larger files).
 * --write-buffer-mb N gives every store and the shared instance N MiB and
 * the tserver's default 256 MiB budget, so memtables flush as the tserver's
 * would (N = 32 is the tserver's per-store default); the line "flushed"
 * reports the SST files at level 0 at the end.
 *
 * Reported per layout: ns per request (CLOCK_MONOTONIC over the whole loop:
 * retry table, key building, writes), memtable inserts per request (puts
 * and deletes handed to RocksDB) and rocksdb_writes per request; then the
 * ratios of the shared layouts to per-tablet. Not a test: it asserts nothing
 * about speed. Usage: docraft-applybench --help. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rocksdb/c.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/hash16.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/store_env.h"
#include "tablet/entry.h"
#include "tablet/retry.h"
#include "tools/bench/workload.h"

#define MIB ((size_t)1 << 20)
#define DEFAULT_TOTAL 300000
#define PREFIX_LEN 4
#define PATH_LEN 4096
/* store.c's applied-marker key, under each tablet's prefix in the shared layouts */
#define MARKER_KEY \
	"\x01"     \
	"applied"
#define MARKER_KEY_LEN (sizeof(MARKER_KEY) - 1)

enum layout { L_PER_TABLET, L_SHARED_ENTRY, L_SHARED_TURN, L_COUNT };
static const char *const layout_name[L_COUNT] = {"per-tablet", "shared-per-entry",
						 "shared-per-turn"};

struct opts {
	long tablets, rpe, turns, keys, value_size, clients, write_buffer_mb;
	enum distribution dist;
	unsigned long long seed;
	const char *dir;
};

/* The rows (one prebuilt batch per key) and the keys every tablet's
 * requests write, drawn before any layout runs. */
struct data {
	struct batch *rows; /* [keys] */
	uint32_t *reqs;     /* [tablets][turns * rpe]: tablet t's i-th request's key */
	uint8_t (*cids)[ENTRY_CLIENT_ID_LEN]; /* [clients] */
};

/* One tablet's state machine side: its retry table and raft index. */
struct tablet {
	struct retry_table rt;
	struct retry_changes ch;
	uint64_t idx;
	struct store *s; /* per-tablet only */
};

struct result {
	uint64_t requests, inserts, writes, ns;
	uint64_t l0_files;
};

/* One layout's run. */
struct run {
	const struct opts *o;
	const struct data *d;
	enum layout kind;
	struct store_env *env;
	struct tablet *tabs;
	uint64_t *seqs; /* [clients] */
	/* shared layouts */
	rocksdb_t *db;
	rocksdb_options_t *dbo;
	rocksdb_writeoptions_t *wo;
	rocksdb_writebatch_t *wb;
	struct buf key;
	struct store_part *parts; /* [rpe] */
	struct result res;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: docraft-applybench [options]\n"
		"The apply step of T tablets, each applying one entry of R requests per loop\n"
		"turn, into T RocksDB stores (per-tablet) or one shared RocksDB instance\n"
		"(shared-per-entry: one write per entry; shared-per-turn: one per turn).\n"
		"The design note at the top of src/tools/applybench.c says what is measured.\n"
		"  --tablets T             tablets (default 96)\n"
		"  --requests-per-entry R  requests in each entry (default 1)\n"
		"  --turns N               loop turns (default: enough for %d requests,\n"
		"                          rounded up)\n"
		"  --keys K                distinct keys \"user\" + 10 digits (default 10000;\n"
		"                          every tablet must get at least one)\n"
		"  --value-size V          bytes of the blob column v (default 100)\n"
		"  --clients C             clients the requests come from in turn (default 64)\n"
		"  --write-buffer-mb N     0 (default): 1 GiB memtables, nothing flushes while\n"
		"                          measuring; N: N MiB per store and for the shared one,\n"
		"                          the tserver's 256 MiB budget, flushes as it would\n"
		"  --distribution D        uniform (default) or zipfian: the keys' distribution\n"
		"                          (zipfian: YCSB's scrambled zipfian, 0.99, docraft\n"
		"                          bench's default)\n"
		"  --seed S                random seed (default 42)\n"
		"  --dir D                 parent of the temporary directory (default $TMPDIR\n"
		"                          or /tmp)\n"
		"  --help                  this text\n"
		"Prints one line per layout (ns/request, memtable inserts/request,\n"
		"rocksdb_writes/request) and the shared layouts' time ratios to per-tablet.\n",
		DEFAULT_TOTAL);
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* ---- the data ------------------------------------------------------------ */

/* The tablet of hash h among n equal hash ranges (master/placement.c). */
static long tablet_of(uint16_t h, long n)
{
	long lo = 0, hi = n - 1;
	while (lo < hi) {
		long mid = (lo + hi + 1) / 2;
		if (hash16_partition_start((uint32_t)mid, (uint32_t)n) <= h)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void data_free(struct data *d, const struct opts *o)
{
	if (d->rows != NULL)
		for (long k = 0; k < o->keys; k++)
			batch_free(&d->rows[k]);
	free(d->rows);
	free(d->reqs);
	free(d->cids);
	memset(d, 0, sizeof *d);
}

/* Draws the keys of every tablet's requests from the distribution: a key
 * goes to the tablet its hash falls in, until each tablet has turns * rpe
 * of them (the draws a full tablet gets are dropped). */
static int draw_requests(struct data *d, const struct opts *o, const long *tablet, struct rng *rng,
			 char *errmsg)
{
	uint64_t per = (uint64_t)o->turns * (uint64_t)o->rpe, full = 0, draws = 0;
	uint64_t *count = xcalloc((size_t)o->tablets, sizeof *count);
	struct keychooser kc;

	keychooser_init(&kc, o->dist, (uint64_t)o->keys);
	d->reqs = xmalloc((size_t)(per * (uint64_t)o->tablets) * sizeof *d->reqs);
	while (full < (uint64_t)o->tablets) {
		uint64_t k = keychooser_next(&kc, rng);
		long t = tablet[k];
		if (++draws > 1000 * per * (uint64_t)o->tablets) {
			free(count);
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %ld gets too few of the keys drawn: raise --keys",
				       t);
		}
		if (count[t] == per)
			continue;
		d->reqs[(uint64_t)t * per + count[t]++] = (uint32_t)k;
		if (count[t] == per)
			full++;
	}
	free(count);
	return 0;
}

static int data_build(struct data *d, const struct opts *o, char *errmsg)
{
	struct schema s;
	struct docwrite w;
	struct rng rng;
	uint8_t *value = xmalloc((size_t)o->value_size + 1);
	long *tablet = xmalloc((size_t)o->keys * sizeof *tablet);
	long *nkeys = xcalloc((size_t)o->tablets, sizeof *nkeys);
	int rv;

	memset(d, 0, sizeof *d);
	rng_seed(&rng, o->seed);
	if ((rv = schema_init(&s, "t", errmsg)) != 0 ||
	    (rv = schema_add(&s, "k", COL_HASH, CT_TEXT, errmsg)) != 0 ||
	    (rv = schema_add(&s, "v", COL_REGULAR, CT_BLOB, errmsg)) != 0)
		goto out;
	d->rows = xcalloc((size_t)o->keys, sizeof *d->rows);
	d->cids = xcalloc((size_t)o->clients, sizeof *d->cids);
	for (long c = 0; c < o->clients; c++)
		for (int i = 0; i < ENTRY_CLIENT_ID_LEN; i += 8) {
			uint64_t x = rng_next(&rng);
			memcpy(d->cids[c] + i, &x, 8);
		}
	for (long k = 0; k < o->keys && rv == 0; k++) {
		char name[KEY_NAME_MAX];
		struct pv key;
		struct colval col;
		key = pv_strn(name, key_name((uint64_t)k, name));
		for (long i = 0; i < o->value_size; i++)
			value[i] = (uint8_t)rng_next(&rng);
		col = colval_of("v", pv_strn(value, (size_t)o->value_size));
		batch_init(&d->rows[k]);
		docwrite_init(&w, &s, &d->rows[k], NULL);
		if ((rv = docwrite_insert(&w, &key, 1, &col, 1, DOCWRITE_NO_TTL)) != 0)
			err_set(errmsg, rv, "docwrite_insert of %s: %s", name, w.errmsg);
		docwrite_free(&w);
		tablet[k] = tablet_of(key_hash_components(&key, 1), o->tablets);
		nkeys[tablet[k]]++;
	}
	for (long t = 0; t < o->tablets && rv == 0; t++)
		if (nkeys[t] == 0)
			rv = err_set(errmsg, DOCRAFT_EINVAL,
				     "tablet %ld of %ld gets none of the %ld keys: raise --keys", t,
				     o->tablets, o->keys);
	if (rv == 0)
		rv = draw_requests(d, o, tablet, &rng, errmsg);
out:
	free(value);
	free(tablet);
	free(nkeys);
	schema_free(&s);
	if (rv != 0)
		data_free(d, o);
	return rv;
}

/* ---- the layouts --------------------------------------------------------- */

/* out = "dir/name" (out holds PATH_LEN bytes); DOCRAFT_EINVAL if too long. */
static int path_join(char *out, const char *dir, const char *name, char *errmsg)
{
	int n = snprintf(out, PATH_LEN, "%s/%s", dir, name);
	if (n < 0 || n >= PATH_LEN)
		return err_set(errmsg, DOCRAFT_EINVAL, "path too long: %s/%s", dir, name);
	return 0;
}

static int rocks_err(char *errmsg, char *err, const char *op)
{
	int rv = err_set(errmsg, DOCRAFT_EIO, "rocksdb %s: %s", op, err);
	rocksdb_free(err);
	return rv;
}

static size_t write_buffer_bytes(const struct opts *o)
{
	return o->write_buffer_mb == 0 ? 1024 * MIB : (size_t)o->write_buffer_mb * MIB;
}

/* The options store.c's make_options gives a store in an environment,
 * less the prefix extractor and the compaction filter (file comment). */
static rocksdb_options_t *shared_options(struct run *r, char *errmsg)
{
	rocksdb_options_t *base = rocksdb_options_create();
	rocksdb_options_t *opts = rocksdb_options_create();
	rocksdb_block_based_table_options_t *t;
	char *err = NULL;

	/* store.c: no flush at close (it would only lengthen the run). */
	rocksdb_get_options_from_string(base, "avoid_flush_during_shutdown=true", opts, &err);
	rocksdb_options_destroy(base);
	if (err != NULL) {
		rocksdb_options_destroy(opts);
		rocks_err(errmsg, err, "options");
		return NULL;
	}
	t = rocksdb_block_based_options_create();
	rocksdb_options_set_create_if_missing(opts, 1);
	rocksdb_block_based_options_set_block_cache(t, store_env_block_cache(r->env));
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(t, 1);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(t, 1);
	rocksdb_options_set_block_based_table_factory(opts, t);
	rocksdb_block_based_options_destroy(t);
	rocksdb_options_set_write_buffer_size(opts, write_buffer_bytes(r->o));
	rocksdb_options_set_arena_block_size(opts, store_env_arena_block_size(r->env));
	rocksdb_options_set_max_write_buffer_number(opts, 3);
	rocksdb_options_set_info_log_level(opts, 6); /* nothing (store.c) */
	rocksdb_options_set_manifest_preallocation_size(opts, 64u << 10);
	return opts;
}

static int run_open(struct run *r, const char *dir, char *errmsg)
{
	struct store_env_options eo;
	char path[PATH_LEN], name[32];
	char *err = NULL;
	int rv;

	if ((rv = fs_mkdir_p(dir, errmsg)) != 0)
		return rv;
	store_env_options_default(&eo);
	if (r->o->write_buffer_mb == 0)
		eo.write_buffer_bytes = 4096 * MIB;
	if ((rv = store_env_create(&eo, &r->env, errmsg)) != 0)
		return rv;
	r->tabs = xcalloc((size_t)r->o->tablets, sizeof *r->tabs);
	r->seqs = xcalloc((size_t)r->o->clients, sizeof *r->seqs);
	r->parts = xcalloc((size_t)r->o->rpe, sizeof *r->parts);
	buf_init(&r->key);
	for (long t = 0; t < r->o->tablets; t++) {
		retry_init(&r->tabs[t].rt);
		retry_set_ttl(&r->tabs[t].rt, RETRY_DEFAULT_TTL_US);
		retry_changes_init(&r->tabs[t].ch);
	}
	if (r->kind == L_PER_TABLET) {
		struct store_options so;
		store_options_default(&so);
		so.env = r->env;
		so.write_buffer_size = write_buffer_bytes(r->o);
		for (long t = 0; t < r->o->tablets; t++) {
			snprintf(name, sizeof name, "tablet-%ld", t);
			if ((rv = path_join(path, dir, name, errmsg)) != 0 ||
			    (rv = store_open(path, &so, &r->tabs[t].s, errmsg)) != 0)
				return rv;
		}
		return 0;
	}
	if ((rv = path_join(path, dir, "shared", errmsg)) != 0)
		return rv;
	if ((r->dbo = shared_options(r, errmsg)) == NULL)
		return DOCRAFT_EINVAL;
	r->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_disable_WAL(r->wo, 1);
	r->wb = rocksdb_writebatch_create();
	r->db = rocksdb_open(r->dbo, path, &err);
	if (err != NULL)
		return rocks_err(errmsg, err, "open");
	return 0;
}

/* SST files at level 0 (flushes that happened), summed over the stores. */
static uint64_t run_l0_files(struct run *r)
{
	uint64_t n = 0, v = 0;
	if (r->kind != L_PER_TABLET) {
		char *s = rocksdb_property_value(r->db, "rocksdb.num-files-at-level0");
		if (s != NULL) {
			n = strtoull(s, NULL, 10);
			rocksdb_free(s);
		}
		return n;
	}
	for (long t = 0; t < r->o->tablets; t++)
		if (store_property(r->tabs[t].s, "rocksdb.num-files-at-level0", &v))
			n += v;
	return n;
}

static void run_close(struct run *r)
{
	if (r->tabs != NULL)
		for (long t = 0; t < r->o->tablets; t++) {
			store_close(r->tabs[t].s);
			retry_free(&r->tabs[t].rt);
			retry_changes_free(&r->tabs[t].ch);
		}
	if (r->db != NULL)
		rocksdb_close(r->db);
	if (r->wb != NULL)
		rocksdb_writebatch_destroy(r->wb);
	if (r->wo != NULL)
		rocksdb_writeoptions_destroy(r->wo);
	if (r->dbo != NULL)
		rocksdb_options_destroy(r->dbo);
	store_env_destroy(r->env);
	buf_free(&r->key);
	free(r->tabs);
	free(r->seqs);
	free(r->parts);
}

/* r->key = the 4-byte BE tablet prefix, then len bytes of p. */
static void prefixed(struct run *r, long t, const void *p, size_t len)
{
	uint8_t pre[PREFIX_LEN] = {(uint8_t)(t >> 24), (uint8_t)(t >> 16), (uint8_t)(t >> 8),
				   (uint8_t)t};
	buf_reset(&r->key);
	buf_append(&r->key, pre, sizeof pre);
	buf_append(&r->key, p, len);
}

/* Adds tablet t's entry to the shared write batch, keys prefixed: what
 * store_apply_parts would add, under the tablet's prefix. */
static int shared_add(struct run *r, long t, size_t np, uint64_t ht, char *errmsg)
{
	const struct retry_changes *ch = &r->tabs[t].ch;
	struct batch_iter bi;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint8_t marker[16];
	uint32_t id = 0;
	int rv;

	for (size_t p = 0; p < np; p++) {
		batch_iter_init(&bi, r->parts[p].batch, r->parts[p].len);
		while ((rv = batch_next(&bi, &k, &kl, &v, &vl)) == 1) {
			prefixed(r, t, k, kl);
			buf_push(&r->key, KT_HYBRID_TIME);
			docht_append(&r->key, (struct docht){.ht = ht, .write_id = id++});
			rocksdb_writebatch_put(r->wb, (const char *)r->key.data, r->key.len,
					       (const char *)v, vl);
		}
		if (rv < 0)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "malformed row batch");
	}
	for (size_t i = 0; i < ch->n; i++) {
		prefixed(r, t, ch->raw[i].key, ch->raw[i].klen);
		if (ch->raw[i].del)
			rocksdb_writebatch_delete(r->wb, (const char *)r->key.data, r->key.len);
		else
			rocksdb_writebatch_put(r->wb, (const char *)r->key.data, r->key.len,
					       ch->raw[i].val, ch->raw[i].vlen);
	}
	prefixed(r, t, MARKER_KEY, MARKER_KEY_LEN);
	be64_store(marker, r->tabs[t].idx);
	be64_store(marker + 8, ht);
	rocksdb_writebatch_put(r->wb, (const char *)r->key.data, r->key.len, (const char *)marker,
			       sizeof marker);
	return 0;
}

/* One rocksdb_write of the shared batch, then the memtable size read that
 * store_apply_parts makes for the budget. */
static int shared_write(struct run *r, char *errmsg)
{
	char *err = NULL;
	uint64_t bytes = 0;
	r->res.inserts += (uint64_t)rocksdb_writebatch_count(r->wb);
	r->res.writes++;
	rocksdb_write(r->db, r->wo, r->wb, &err);
	rocksdb_writebatch_clear(r->wb);
	if (err != NULL)
		return rocks_err(errmsg, err, "write");
	rocksdb_property_int(r->db, "rocksdb.cur-size-all-mem-tables", &bytes);
	return 0;
}

/* Tablet t's entry of a turn: the retry table decides its requests, as
 * fsm.c apply does; then the layout's write. */
static int apply_entry(struct run *r, long t, long turn, uint64_t ht, uint64_t *next_req,
		       char *errmsg)
{
	const struct data *d = r->d;
	const uint32_t *keys = d->reqs + ((uint64_t)t * (uint64_t)r->o->turns + (uint64_t)turn) *
						 (uint64_t)r->o->rpe;
	struct tablet *tab = &r->tabs[t];
	size_t np = 0;
	uint64_t pairs = 0;
	int rv;

	tab->idx++;
	retry_changes_reset(&tab->ch, tab->idx);
	retry_expire(&tab->rt, ht, &tab->ch);
	for (long q = 0; q < r->o->rpe; q++) {
		long c = (long)(*next_req % (uint64_t)r->o->clients);
		uint32_t k = keys[q];
		uint64_t seq = ++r->seqs[c];
		(*next_req)++;
		if (retry_applied(&tab->rt, d->cids[c], seq))
			continue;
		retry_record(&tab->rt, d->cids[c], seq, seq, ht, 0, &tab->ch);
		r->parts[np].batch = d->rows[k].data.data;
		r->parts[np].len = d->rows[k].data.len;
		pairs += d->rows[k].count;
		np++;
	}
	retry_changes_finish(&tab->ch);
	r->res.requests += (uint64_t)r->o->rpe;
	if (r->kind != L_PER_TABLET) {
		if ((rv = shared_add(r, t, np, ht, errmsg)) != 0)
			return rv;
		return r->kind == L_SHARED_ENTRY ? shared_write(r, errmsg) : 0;
	}
	rv = store_apply_parts(tab->s, r->parts, np, tab->ch.raw, tab->ch.n, ht, tab->idx, errmsg);
	r->res.inserts += pairs + tab->ch.n + 1;
	r->res.writes++;
	return rv;
}

static int run_layout(struct run *r, const char *dir, char *errmsg)
{
	uint64_t next_req = 0, t0, base_us = UINT64_C(1700000000000000);
	int rv;

	if ((rv = run_open(r, dir, errmsg)) != 0)
		return rv;
	t0 = now_ns();
	for (long turn = 0; turn < r->o->turns && rv == 0; turn++) {
		for (long t = 0; t < r->o->tablets && rv == 0; t++) {
			uint64_t ht = ht_make(base_us + (uint64_t)(turn * r->o->tablets + t), 0);
			rv = apply_entry(r, t, turn, ht, &next_req, errmsg);
		}
		if (rv == 0 && r->kind == L_SHARED_TURN)
			rv = shared_write(r, errmsg);
	}
	r->res.ns = now_ns() - t0;
	r->res.l0_files = run_l0_files(r);
	return rv;
}

static void report(const struct run *r)
{
	double n = (double)r->res.requests;
	printf("%-16s %8llu requests %8.0f ns/request %6.2f inserts/request %6.3f "
	       "writes/request  flushed %llu\n",
	       layout_name[r->kind], (unsigned long long)r->res.requests, (double)r->res.ns / n,
	       (double)r->res.inserts / n, (double)r->res.writes / n,
	       (unsigned long long)r->res.l0_files);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"tablets", 1, 0, 't'},
					   {"requests-per-entry", 1, 0, 'r'},
					   {"turns", 1, 0, 'n'},
					   {"keys", 1, 0, 'k'},
					   {"value-size", 1, 0, 'v'},
					   {"clients", 1, 0, 'c'},
					   {"write-buffer-mb", 1, 0, 'w'},
					   {"seed", 1, 0, 's'},
					   {"dir", 1, 0, 'd'},
					   {"distribution", 1, 0, 'D'},
					   {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	struct opts o = {96, 1, 0, 10000, 100, 64, 0, DIST_UNIFORM, 42, NULL};
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	char base[PATH_LEN], dir[PATH_LEN];
	struct run runs[L_COUNT];
	struct data d;
	struct stat st;
	long seed = 42;
	const struct {
		int c;
		long lo, hi;
		long *dst;
	} nums[] = {
		{'t', 1, 65535, &o.tablets},
		{'r', 1, 100000, &o.rpe},
		{'n', 1, 1000000000, &o.turns},
		{'k', 1, 100000000, &o.keys},
		{'v', 0, DOCWRITE_MAX_VALUE, &o.value_size},
		{'c', 1, 1000000, &o.clients},
		{'w', 0, 65536, &o.write_buffer_mb},
		{'s', 0, 0x7fffffffffffffff, &seed},
	};
	int c, idx = 0, rv = 0;

	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		bool ok = true;
		switch (c) {
		case 'd':
			o.dir = optarg;
			break;
		case 'D':
			ok = strcmp(optarg, "uniform") == 0 || strcmp(optarg, "zipfian") == 0;
			o.dist = optarg[0] == 'u' ? DIST_UNIFORM : DIST_SCRAMBLED_ZIPFIAN;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default: { /* a numeric option, or an unknown one */
			size_t k = 0, nnums = sizeof nums / sizeof nums[0];
			while (k < nnums && nums[k].c != c)
				k++;
			if (k == nnums) {
				usage(stderr);
				return 1;
			}
			ok = parse_long(optarg, nums[k].lo, nums[k].hi, nums[k].dst);
		}
		}
		if (!ok) {
			fprintf(stderr, "applybench: bad value for --%s: %s\n", lo[idx].name,
				optarg);
			return 1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "applybench: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	o.seed = (unsigned long long)seed;
	if (o.turns == 0)
		o.turns = (DEFAULT_TOTAL + o.tablets * o.rpe - 1) / (o.tablets * o.rpe);
	if ((double)o.tablets * (double)o.rpe * (double)o.turns > 1e8) {
		fprintf(stderr, "applybench: more than 10^8 requests (tablets x requests per "
				"entry x turns)\n");
		return 1;
	}
	log_init();

	if (fs_mkdtemp(o.dir, "docraft-applybench", base, sizeof base, errmsg) != 0) {
		fprintf(stderr, "applybench: %s\n", errmsg);
		return 1;
	}
	if ((rv = data_build(&d, &o, errmsg)) != 0) {
		fprintf(stderr, "applybench: %s\n", errmsg);
		fs_remove_tree(base);
		return 1;
	}
	printf("docraft-applybench: %ld tablets x %ld requests per entry x %ld turns = %ld "
	       "requests, %ld %s keys, %ld-byte values, %ld clients, %s\n",
	       o.tablets, o.rpe, o.turns, o.tablets * o.rpe * o.turns, o.keys,
	       o.dist == DIST_UNIFORM ? "uniform" : "zipfian", o.value_size, o.clients,
	       o.write_buffer_mb == 0 ? "1 GiB memtables (no flush)" : "memtables flush");
	fflush(stdout);

	memset(runs, 0, sizeof runs);
	for (int k = 0; k < L_COUNT && rv == 0; k++) {
		runs[k].o = &o;
		runs[k].d = &d;
		runs[k].kind = (enum layout)k;
		if ((rv = path_join(dir, base, layout_name[k], errmsg)) != 0)
			break;
		rv = run_layout(&runs[k], dir, errmsg);
		run_close(&runs[k]);
		fs_remove_tree(dir);
		if (rv == 0)
			report(&runs[k]);
	}
	if (rv == 0) {
		double pt = (double)runs[L_PER_TABLET].res.ns;
		printf("ratio (time / per-tablet): shared-per-entry %.2f, shared-per-turn %.2f\n",
		       (double)runs[L_SHARED_ENTRY].res.ns / pt,
		       (double)runs[L_SHARED_TURN].res.ns / pt);
	}
	data_free(&d, &o);
	fs_remove_tree(base);
	if (lstat(base, &st) == 0) {
		fprintf(stderr, "applybench: could not remove %s\n", base);
		rv = rv != 0 ? rv : DOCRAFT_EIO;
	}
	if (rv != 0) {
		if (errmsg[0] != '\0')
			fprintf(stderr, "applybench: %s\n", errmsg);
		return 1;
	}
	return 0;
}
