/* Compaction GC: the reader's visibility rules run at the history cutoff.
 *
 * Design. A compaction job hands its filter every surviving key once, in key
 * order (RocksDB 7.8: CompactionJob::ProcessKeyValueCompaction creates one
 * filter per subcompaction from the factory and feeds it the output of one
 * CompactionIterator, which walks the merged inputs in internal-key order;
 * only the newest RocksDB version of a user key reaches the filter). The
 * store sets max_subcompactions = 1 (also RocksDB's default), so a job is one
 * subcompaction and sees its whole key range in order. With several
 * subcompactions a document could be split between two filters, and a
 * tombstone dropped by one would uncover older versions kept by the other.
 *
 * Key order gives the two facts reader.c relies on: the versions of one path
 * arrive together, newest first, and a path arrives before its descendants.
 * The filter is the reader's builder at read time = cutoff C, without the
 * document nodes: per DocKey a stack of frames, one per path level of the
 * last decided entry, each with the newest DocHT at or below C written at
 * that path or above (overwrite) and the explicit TTL descendants inherit.
 * For each pair at or below C it decides like the reader would at C:
 *
 *   - an older version of the path just decided: hidden at every read time
 *     >= C (the decided version is newer and at or below C)      -> drop
 *   - DocHT <= the parent frame's overwrite: hidden               -> drop
 *   - a tombstone: absent at every time >= C; full compaction     -> drop,
 *     else kept (older data may survive in files outside the job)
 *   - expired at C (so at every later time): full compaction      -> drop,
 *     else rewritten as a tombstone ('X'), which keeps hiding what it hid
 *   - anything else                                               -> keep
 *
 * Entries above C are passed through without touching the stack (the reader
 * at C skips them too). Why dropping never changes a read at R >= C: a
 * dropped entry is dead at R (hidden, deleted or expired), and whatever it
 * hid is dropped with it: older versions and older descendants come later
 * in the same job and meet the same frames. A decided entry keeps deciding
 * at R unless a newer version (> C) of it or of an ancestor exists, which
 * then hides every entry at or below C under it anyway.
 *
 * What an entry passes to its descendants besides its overwrite is its own
 * explicit TTL. Tombstones carry none, so dropping one changes nothing
 * there; a tombstone that does carry a TTL is kept. An expired primitive is
 * taken to be a leaf (docwrite puts TTLs only on leaves: liveness, columns,
 * collection elements); an expired container marker or packed row with its
 * own TTL is kept as it is, since descendants newer than C may inherit it.
 *
 * Packed rows (reader.c's design note): a packed row at the DocKey is not a
 * version that decides the root; the reader keeps every packed row newer
 * than the root's deciding entry and turns them into virtual column cells,
 * each hidden by newer stored versions of its path. So the filter keeps
 * those packed rows and lets them hide nothing, drops packed rows older
 * than the root's deciding entry, and, where an older kept packed row may
 * supply a column, neither drops a column tombstone nor drops an expired
 * cell (it rewrites it as a tombstone instead): either would uncover the
 * packed row's value. Repacking (§8.6) is left out.
 *
 * Persisting the cutoff. A job's cutoff must be durable before its first
 * pair is filtered: otherwise a crash could leave compacted files without
 * the cutoff that makes reads below it fail. The cutoff lives in a small
 * file in the store directory, replaced atomically (temp file, fsync,
 * rename, fsync of the directory) by the factory on the compaction thread.
 * An internal RocksDB record would need a write and a memtable flush from
 * inside the compaction: RocksDB 7.8's FlushMemTable waits for write-stall
 * conditions that only compactions clear (and the C API cannot set
 * allow_write_stall), and writes can stall the same way, so that could
 * deadlock; an unflushed record is not durable with the WAL off.
 * store_checkpoint copies the file into each checkpoint. */
#include "docdb/compaction.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/store.h"
#include "docdb/value.h"

#define MAX_DEPTH DOCDB_MAX_SUBKEYS

struct frame {
	size_t path_len;
	struct docht overwrite; /* newest DocHT <= cutoff at this path or above */
	bool has_exp;           /* an explicit TTL inherited by descendants */
	int64_t exp_ttl_ms;
	uint64_t exp_from;
};

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
	struct frame st[MAX_DEPTH + 1];
	size_t depth;
	struct compaction_stats stats;
};

static const uint8_t TOMBSTONE[1] = {VT_TOMBSTONE};

struct compaction_gc *compaction_gc_new(uint64_t cutoff_ht, bool full, int64_t default_ttl_ms)
{
	struct compaction_gc *g = calloc(1, sizeof *g);
	if (g == NULL)
		PANIC("out of memory");
	g->cutoff = cutoff_ht;
	g->full = full;
	g->default_ttl_ms = default_ttl_ms;
	buf_init(&g->path);
	return g;
}

void compaction_gc_free(struct compaction_gc *g)
{
	if (g == NULL)
		return;
	buf_free(&g->path);
	free(g);
}

void compaction_gc_get_stats(const struct compaction_gc *g, struct compaction_stats *out)
{
	*out = g->stats;
}

static enum compaction_verdict keep(struct compaction_gc *g)
{
	g->stats.kept++;
	return COMPACTION_KEEP;
}

static enum compaction_verdict drop(struct compaction_gc *g)
{
	g->stats.dropped++;
	return COMPACTION_DROP;
}

static enum compaction_verdict rewrite(struct compaction_gc *g, const uint8_t **new_val,
				       size_t *new_len)
{
	g->stats.rewritten++;
	*new_val = TOMBSTONE;
	*new_len = sizeof TOMBSTONE;
	return COMPACTION_REWRITE;
}

/* Kept unchanged and logged (the first one of a job in full). */
static enum compaction_verdict undecodable(struct compaction_gc *g, const uint8_t *key,
					   size_t klen, const char *why)
{
	if (g->stats.undecodable++ == 0) {
		char hex[2 * 32 + 1];
		size_t n = klen < 32 ? klen : 32;
		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", key[i]);
		hex[2 * n] = '\0';
		LOG_WARN("store %s: compaction keeps an entry it cannot decode (%s): key %s%s",
			 g->tag ? g->tag : "?", why, hex, klen > n ? "..." : "");
	}
	return keep(g);
}

/* reader.c's expiry test at read time = cutoff. */
static bool expired(const struct compaction_gc *g, bool has_exp, int64_t ttl_ms, uint64_t from,
		    uint64_t write_ht)
{
	if (!has_exp) {
		if (g->default_ttl_ms <= 0)
			return false;
		ttl_ms = g->default_ttl_ms;
		from = write_ht;
	}
	if (ttl_ms <= 0)
		return false; /* TTL 0: never expires */
	return ht_physical(g->cutoff) - ht_physical(from) > (uint64_t)ttl_ms * 1000;
}

static void start_document(struct compaction_gc *g, const uint8_t *key, size_t dl)
{
	buf_reset(&g->path);
	buf_append(&g->path, key, dl);
	g->dockey_len = dl;
	g->top_decided = false;
	g->drop_older = false;
	g->has_packed = false;
	memset(&g->st[0], 0, sizeof g->st[0]);
	g->st[0].path_len = dl;
	g->depth = 1;
}

/* The packed row root (nd == 0) at d, not an older version of a decided
 * root: kept, hides nothing (the reader's virtual cells do that). */
static enum compaction_verdict keep_packed(struct compaction_gc *g, struct docht d)
{
	if (!g->has_packed || docht_compare(d, g->packed_min) < 0)
		g->packed_min = d;
	g->has_packed = true;
	return keep(g);
}

enum compaction_verdict compaction_gc_decide(struct compaction_gc *g, const uint8_t *key,
					     size_t klen, const uint8_t *val, size_t vlen,
					     const uint8_t **new_val, size_t *new_len)
{
	static const struct frame base; /* above the root: nothing hidden, no TTL */
	size_t bounds[MAX_DEPTH + 1];
	size_t dl, plen, nd = 0, c;
	const struct frame *par;
	struct frame *f;
	struct docht d;
	struct docvalue v;
	bool packed_below;

	if (klen == 0 || key[0] <= KT_INTERNAL_MAX)
		return keep(g); /* internal records pass untouched */
	if ((dl = dockey_prefix_len(key, klen)) == 0)
		return undecodable(g, key, klen, "no DocKey");
	if (key_split_ht(key, klen, &plen, &d) != 0 || plen < dl)
		return undecodable(g, key, klen, "bad hybrid time suffix");
	if (d.ht > g->cutoff)
		return keep(g); /* newer than the cutoff: never touched */

	if (dl != g->dockey_len || memcmp(key, g->path.data, dl) != 0)
		start_document(g, key, dl);
	if (g->top_decided && plen == g->path.len && memcmp(key, g->path.data, plen) == 0) {
		/* An older version of the path just decided. */
		if (g->drop_older)
			return drop(g);
		if (plen == dl && value_decode(val, vlen, &v) == 0 && v.kind == VAL_PACKED_ROW)
			return keep_packed(g, d);
		return keep(g);
	}

	/* The subkeys, before any state changes (an undecodable key leaves the
	 * stack as it is, so what it cannot hide is still judged right). */
	bounds[0] = dl;
	for (const uint8_t *p = key + dl, *end = key + plen; p < end;) {
		if (nd == MAX_DEPTH)
			return undecodable(g, key, klen, "nested too deeply");
		if (key_skip_pv(&p, end) != 0)
			return undecodable(g, key, klen, "bad subkey");
		bounds[++nd] = (size_t)(p - key);
	}

	/* A packed row at the root: decoded first, as the reader does. */
	if (nd == 0 && vlen > 0 && value_decode(val, vlen, &v) == 0 &&
	    v.kind == VAL_PACKED_ROW)
		return keep_packed(g, d);

	/* reader.c feed/decide: pop the frames that are not prefixes of this
	 * path, push inherited ones down to its depth. */
	c = 1;
	while (c < g->depth && c <= nd && g->st[c].path_len == bounds[c] &&
	       memcmp(key, g->path.data, bounds[c]) == 0)
		c++;
	g->depth = c;
	while (g->depth <= nd) {
		g->st[g->depth] = g->st[g->depth - 1];
		g->st[g->depth].path_len = bounds[g->depth];
		g->depth++;
	}
	g->depth = nd + 1;
	f = &g->st[nd];
	par = nd > 0 ? &g->st[nd - 1] : &base;
	buf_reset(&g->path);
	buf_append(&g->path, key, plen);
	g->top_decided = true;
	g->drop_older = true;

	if (docht_compare(d, par->overwrite) <= 0)
		return drop(g); /* hidden by a newer write at or above its path */
	if (value_decode(val, vlen, &v) != 0) {
		/* The reader fails on it; keep it and everything it may hide. */
		g->drop_older = false;
		return undecodable(g, key, klen, "bad value");
	}

	f->overwrite = d;
	f->has_exp = par->has_exp;
	f->exp_ttl_ms = par->exp_ttl_ms;
	f->exp_from = par->exp_from;
	if (v.has_ttl) {
		f->has_exp = true;
		f->exp_ttl_ms = v.ttl_ms;
		f->exp_from = d.ht;
	}
	/* A kept packed row older than this entry may supply its path. */
	packed_below = nd > 0 && g->has_packed && docht_compare(g->packed_min, d) < 0;

	if (v.kind == VAL_TOMBSTONE)
		return g->full && !v.has_ttl && !packed_below ? drop(g) : keep(g);
	if (!expired(g, f->has_exp, f->exp_ttl_ms, f->exp_from, d.ht))
		return keep(g);
	if (v.kind == VAL_PACKED_ROW || (v.has_ttl && v.kind != VAL_PRIMITIVE))
		return keep(g); /* descendants may inherit its TTL */
	return g->full && !packed_below ? drop(g) : rewrite(g, new_val, new_len);
}

uint64_t compaction_auto_cutoff(uint64_t now_us, uint64_t applied_ht, uint64_t retention_us)
{
	uint64_t phys = ht_physical(applied_ht);
	if (now_us < phys)
		phys = now_us;
	if (phys <= retention_us)
		return 0;
	return ht_make(phys - retention_us, 0);
}

/* ---- RocksDB glue ------------------------------------------------------- */

struct job {
	struct compaction_gc *g;
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
} totals;

void compaction_get_totals(struct compaction_totals *out)
{
	out->jobs_full = atomic_load(&totals.jobs_full);
	out->jobs_partial = atomic_load(&totals.jobs_partial);
	out->stats.kept = atomic_load(&totals.kept);
	out->stats.dropped = atomic_load(&totals.dropped);
	out->stats.rewritten = atomic_load(&totals.rewritten);
	out->stats.undecodable = atomic_load(&totals.undecodable);
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
	LOG_INFO("store %s: %s%s compaction GC at cutoff %" PRIu64 ": kept %" PRIu64
		 ", dropped %" PRIu64 ", rewritten %" PRIu64 ", undecodable %" PRIu64,
		 j->g->tag, j->manual ? "manual " : "", j->g->full ? "full" : "partial",
		 j->g->cutoff, st->kept, st->dropped, st->rewritten, st->undecodable);
	compaction_gc_free(j->g);
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
	j = malloc(sizeof *j);
	if (j == NULL)
		PANIC("out of memory");
	j->g = compaction_gc_new(cutoff, full, store_default_ttl_ms(s));
	j->g->tag = store_path(s);
	j->manual = manual;
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

/* ---- the persisted cutoff ----------------------------------------------- */

#define CUTOFF_PREFIX "history_cutoff_ht="
#define CUTOFF_MAX_FILE 64

static int sys_err(char *errmsg, int e, const char *what, const char *path)
{
	int code = e == ENOSPC || e == EDQUOT ? DOCRAFT_ENOSPC : DOCRAFT_EIO;
	return err_set(errmsg, code, "%s %s: %s", what, path, strerror(e));
}

int compaction_cutoff_load(const char *dir, uint64_t *ht, char *errmsg)
{
	char path[4096], text[CUTOFF_MAX_FILE + 1], *end;
	const size_t plen = sizeof CUTOFF_PREFIX - 1;
	unsigned long long v;
	ssize_t n;
	size_t len = 0;
	int fd;

	*ht = 0;
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, COMPACTION_CUTOFF_FILE) >=
	    sizeof path)
		return err_set(errmsg, DOCRAFT_EINVAL, "store path too long: %s", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return sys_err(errmsg, errno, "opening", path);
	}
	while (len < sizeof text - 1) {
		n = read(fd, text + len, sizeof text - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return sys_err(errmsg, e, "reading", path);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	text[len] = '\0';
	/* Exactly "history_cutoff_ht=<decimal>\n". */
	if (len <= plen + 1 || memcmp(text, CUTOFF_PREFIX, plen) != 0 || text[len - 1] != '\n' ||
	    text[plen] < '0' || text[plen] > '9')
		return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: malformed history cutoff file", path);
	errno = 0;
	v = strtoull(text + plen, &end, 10);
	if (errno != 0 || end != text + len - 1 || v >= HT_INVALID)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: malformed history cutoff file", path);
	*ht = v;
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int compaction_cutoff_save(const char *dir, uint64_t ht, char *errmsg)
{
	char path[4096], tmp[4096 + 8], text[CUTOFF_MAX_FILE];
	int fd, dfd, e, len;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, COMPACTION_CUTOFF_FILE) >=
	    sizeof path)
		return err_set(errmsg, DOCRAFT_EINVAL, "store path too long: %s", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	len = snprintf(text, sizeof text, CUTOFF_PREFIX "%" PRIu64 "\n", ht);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return sys_err(errmsg, errno, "creating", tmp);
	if (write_all(fd, text, (size_t)len) != 0 || fsync(fd) != 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		return sys_err(errmsg, e, "writing", tmp);
	}
	if (close(fd) != 0) {
		e = errno;
		unlink(tmp);
		return sys_err(errmsg, e, "closing", tmp);
	}
	if (rename(tmp, path) != 0) {
		e = errno;
		unlink(tmp);
		return sys_err(errmsg, e, "renaming", tmp);
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sys_err(errmsg, errno, "opening directory", dir);
	if (fsync(dfd) != 0) {
		e = errno;
		close(dfd);
		return sys_err(errmsg, e, "syncing directory", dir);
	}
	close(dfd);
	return 0;
}
