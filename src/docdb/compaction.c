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
 * packed row's value.
 *
 * With the table schema (compaction_gc_set_schema): the cells of columns
 * the schema dropped (at or below C) go in every job, since readers with
 * that schema ignore them and they hide nothing outside their own path;
 * full jobs repack packed rows (§8.6, "repacking" below); and a packed row
 * at the latest version hides every older packed row of its document
 * (each column they could supply it has, newer), which then go.
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
#include "docdb/ttl.h"
#include "docdb/compaction.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/packed.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/value.h"
#include "docdb/varint.h"

#define MAX_DEPTH DOCDB_MAX_SUBKEYS

/* Type byte of a column id subkey, 'K' <svarint id> (key.c). */
#define KT_COLUMN 'K'

/* Expiry "never" (expiry()). */
#define NEVER UINT64_MAX
/* TTLs repacking re-expresses: up to about 100 years (no overflow in µs). */
#define REPACK_MAX_TTL_MS (INT64_C(100) * 366 * 24 * 3600 * 1000)

struct frame {
	size_t path_len;
	struct docht overwrite; /* newest DocHT <= cutoff at this path or above */
	struct ttl_scope exp;   /* an explicit TTL inherited by descendants */
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
	/* Read-ahead scratch (repack()). */
	struct buf ra;  /* copies of the values read ahead */
	struct ra_row *rows;
	size_t nrows, rows_cap;
	struct ra_col *cols;
	const struct docvalue **slots;
	size_t cols_cap;
	struct buf payload, out; /* the repacked row */
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
	store_iter_free(g->it);
	buf_free(&g->path);
	buf_free(&g->ra);
	buf_free(&g->payload);
	buf_free(&g->out);
	free(g->fold);
	free(g->rows);
	free(g->cols);
	free(g->slots);
	free(g);
}

void compaction_gc_set_schema(struct compaction_gc *g, const struct schema *schema,
			      struct store *src)
{
	PRE(g != NULL && g->it == NULL);
	g->schema = schema;
	g->src = schema != NULL ? src : NULL;
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

/* The reader's expiry rule (docdb/ttl.h) at read time = cutoff. */
static bool expired(const struct compaction_gc *g, const struct ttl_scope *exp, uint64_t write_ht)
{
	return ttl_scope_expired(g->cutoff, g->default_ttl_ms, exp, write_ht);
}

static void start_document(struct compaction_gc *g, const uint8_t *key, size_t dl)
{
	buf_reset(&g->path);
	buf_append(&g->path, key, dl);
	g->dockey_len = dl;
	g->top_decided = false;
	g->drop_older = false;
	g->has_packed = false;
	g->cover = false;
	g->nfold = 0;
	memset(&g->st[0], 0, sizeof g->st[0]);
	g->st[0].path_len = dl;
	g->depth = 1;
}

/* Records a kept packed row at the root (nd == 0): it hides nothing (the
 * reader's virtual cells do that). */
static void note_packed(struct compaction_gc *g, struct docht d)
{
	if (!g->has_packed || docht_compare(d, g->packed_min) < 0)
		g->packed_min = d;
	g->has_packed = true;
}

static enum compaction_verdict keep_packed(struct compaction_gc *g, struct docht d)
{
	note_packed(g, d);
	return keep(g);
}

/* The column id of a first subkey sub[0..len) of the form 'K' <svarint>. */
static bool column_id(const uint8_t *sub, size_t len, int32_t *id)
{
	const uint8_t *p = sub + 1;
	int64_t v;
	if (len < 2 || sub[0] != KT_COLUMN || svarint_decode(&p, sub + len, &v) != 0 ||
	    p != sub + len || v < INT32_MIN || v > INT32_MAX)
		return false;
	*id = (int32_t)v;
	return true;
}

static int cmp_id(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static bool folded(const struct compaction_gc *g, const uint8_t *sub, size_t len)
{
	int32_t id;
	return g->nfold > 0 && column_id(sub, len, &id) &&
	       bsearch(&id, g->fold, g->nfold, sizeof id, cmp_id) != NULL;
}

/* ---- repacking (§8.6) -----------------------------------------------------
 *
 * Met first among a document's root versions at or below the cutoff C (so
 * newer than the root's deciding entry, and the newest packed row the
 * reader keeps at every read time >= C, except rows above C, untouched), a
 * packed row P at DocHT p is rewritten with one slot per column of the
 * latest schema version, each holding what a read at C shows for that
 * column, with the expiry it has there. Which it is needs the row's column
 * cells, which follow P in key order, so the filter reads the document
 * ahead through an iterator on the live store (repack()). A full job's
 * inputs are every live SST file, so the iterator sees the job's pairs plus
 * the memtables, whose pairs are newer than all of them (writes arrive in
 * hybrid-time order) and stay where they are.
 *
 * For a column c, the reader's candidates at C are the newest cell version
 * <= C and the slot of the newest kept packed row that has c; the newer one
 * decides, unless the root's deciding entry hides it. The new slot is NULL
 * when that decides "absent" (tombstone, NULL slot, hidden, expired at C),
 * else the value with a TTL giving the same expiry counted from p. Then at
 * any R >= C the new row reads as before: versions above C are untouched
 * and win as before; below them, c's slot says what c's newest version said.
 * So every cell version of c <= C can go (g->fold); the newest is folded,
 * the older ones were hidden by it. Older packed rows go too (g->cover):
 * each of their columns is either in the new row, which is newer, or
 * dropped from the schema, which readers ignore.
 *
 * Exceptions. A value whose expiry cannot be said from p (a TTL counts in
 * whole ms from the write's µs) stays a cell if it is newer than p (the new
 * slot is NULL, hidden by the cell forever); otherwise, and for anything
 * unexpected (an entry below a packable column, a root decider with a TTL
 * its descendants inherit, an unknown schema version, a pair the job did not
 * hand over in the same order), the row is left as it is. Cells are folded
 * only while the data area stays within PACKED_SIZE_LIMIT. */

/* Effective expiry of a value (the physical µs after which reader.c's test
 * says expired, NEVER if never): an explicit TTL ttl_ms counted from from,
 * else the table default counted from write_ht. False for TTLs too large to
 * handle. */
static bool expiry(const struct compaction_gc *g, bool has, int64_t ttl_ms, uint64_t from,
		   uint64_t write_ht, uint64_t *out)
{
	if (!has) {
		ttl_ms = g->default_ttl_ms;
		from = write_ht;
	}
	if (ttl_ms <= 0) {
		*out = NEVER;
		return true;
	}
	if (ttl_ms > REPACK_MAX_TTL_MS)
		return false;
	*out = ht_physical(from) + (uint64_t)ttl_ms * 1000;
	return true;
}

/* Sets the TTL fields of slot v so that in the repacked row (DocHT p, row
 * control fields rv) it expires at e, which is not before the cutoff. */
static bool slot_ttl(const struct compaction_gc *g, struct docvalue *v, uint64_t e,
		     const struct docvalue *rv, uint64_t p)
{
	uint64_t natural, diff;
	v->has_ttl = false;
	v->ttl_ms = 0;
	if (!expiry(g, rv->has_ttl, rv->ttl_ms, p, p, &natural))
		return false;
	if (e == natural)
		return true; /* no TTL of its own: the row's, or the default */
	v->has_ttl = true;
	if (e == NEVER)
		return true; /* TTL 0 */
	if (e <= ht_physical(p))
		return false;
	diff = e - ht_physical(p);
	if (diff % 1000 != 0)
		return false;
	v->ttl_ms = (int64_t)(diff / 1000);
	return true;
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 4;
	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	p = realloc(p, n * size);
	if (p == NULL)
		PANIC("out of memory");
	*cap = n;
	return p;
}

/* Position of id among a version's columns, or -1. */
static ssize_t version_pos(const struct schema_version *sv, int32_t id)
{
	for (size_t i = 0; i < sv->n; i++)
		if (sv->ids[i] == id)
			return (ssize_t)i;
	return -1;
}

/* Reads the document of the packed row P (key[0..dl) + DocHT d, value
 * val/vlen, decoded *rv) ahead in g->src: the older packed rows the reader
 * keeps (g->rows), the root decider's DocHT (*r0) and each latest column's
 * newest cell version <= C (g->cols). False when the row must stay as it
 * is. */
static bool read_ahead(struct compaction_gc *g, const uint8_t *key, size_t dl, struct docht d,
		       const uint8_t *val, size_t vlen, const struct schema_version *latest,
		       struct docht *r0)
{
	bool met = false, root_decided = false;
	char err[DOCRAFT_ERRMSG_SIZE];

	g->nrows = 0;
	buf_reset(&g->ra);
	memset(g->cols, 0, latest->n * sizeof *g->cols);
	memset(r0, 0, sizeof *r0);
	if (g->it == NULL)
		g->it = store_iter_new(g->src, NULL, 0, NULL, 0);
	for (store_iter_seek(g->it, key, dl); store_iter_valid(g->it); store_iter_next(g->it)) {
		size_t kl, vl, plen;
		const uint8_t *k = store_iter_key(g->it, &kl), *v, *sub;
		const uint8_t *p;
		struct docht kd;
		struct docvalue dv;
		ssize_t pos;
		int32_t id;

		if (kl < dl || memcmp(k, key, dl) != 0)
			break;
		if (key_split_ht(k, kl, &plen, &kd) != 0 || plen < dl)
			return false;
		v = store_iter_value(g->it, &vl);
		if (plen == dl) {
			if (kd.ht > g->cutoff || root_decided)
				continue;
			if (!met) {
				/* P first, as the job handed it over. */
				if (docht_compare(kd, d) != 0 || vl != vlen || memcmp(v, val, vlen) != 0)
					return false;
				met = true;
				continue;
			}
			if (value_decode(v, vl, &dv) != 0)
				return false;
			if (dv.kind != VAL_PACKED_ROW) {
				/* The root decider: descendants must not inherit a TTL
				 * from it (docwrite never writes one). */
				if (dv.has_ttl)
					return false;
				*r0 = kd;
				root_decided = true;
				continue;
			}
			g->rows = grow(g->rows, &g->rows_cap, g->nrows + 1, sizeof *g->rows);
			g->rows[g->nrows].d = kd;
			g->rows[g->nrows].off = g->ra.len;
			g->rows[g->nrows].len = vl;
			g->nrows++;
			buf_append(&g->ra, v, vl);
			continue;
		}
		if (!met)
			return false;
		sub = p = k + dl;
		if (key_skip_pv(&p, k + plen) != 0)
			return false;
		if (!column_id(sub, (size_t)(p - sub), &id) || (pos = version_pos(latest, id)) < 0)
			continue; /* not a packable column of the latest version */
		if (p != k + plen)
			return false; /* an entry below a packable column */
		if (kd.ht > g->cutoff || g->cols[pos].stored)
			continue;
		g->cols[pos].stored = true;
		g->cols[pos].w = kd;
		g->cols[pos].off = g->ra.len;
		g->cols[pos].len = vl;
		buf_append(&g->ra, v, vl);
	}
	if (store_iter_status(g->it, err) != 0) {
		LOG_WARN("store %s: compaction does not repack a row: %s", g->tag ? g->tag : "?",
			 err);
		return false;
	}
	return met;
}

/* The new slot of latest column pos (id), given the read-ahead. rv / pr1 /
 * sv1: P, at DocHT d. False when the row must stay as it is. */
static bool choose_slot(struct compaction_gc *g, size_t pos, int32_t id, struct docht d,
			const struct docvalue *rv, const struct packed_row *pr1,
			const struct schema_version *sv1, struct docht r0)
{
	struct ra_col *c = &g->cols[pos];
	const struct packed_row *pr = NULL;
	const struct docvalue *prow = NULL;
	struct docht pd = {0, 0};
	struct docvalue v;
	ssize_t at = -1;
	bool is_null;
	uint64_t e;

	c->null = true;
	c->leave = false;
	/* The newest kept packed row that has the column: P, then older. */
	if ((at = version_pos(sv1, id)) >= 0) {
		pr = pr1;
		prow = rv;
		pd = d;
	}
	for (size_t i = 0; at < 0 && i < g->nrows; i++) {
		if ((at = version_pos(g->rows[i].sv, id)) >= 0) {
			pr = &g->rows[i].pr;
			prow = &g->rows[i].v;
			pd = g->rows[i].d;
		}
	}
	if (pr != NULL && (!c->stored || docht_compare(pd, c->w) > 0)) {
		/* A packed slot decides. */
		if (packed_column(pr, (size_t)at, &v, &is_null) != 0)
			return false;
		if (is_null)
			return true;
		if (!expiry(g, v.has_ttl || prow->has_ttl, v.has_ttl ? v.ttl_ms : prow->ttl_ms,
			    pd.ht, pd.ht, &e))
			return false;
		if (e != NEVER && ht_physical(g->cutoff) > e)
			return true; /* expired at C */
		if (pr != pr1 && !slot_ttl(g, &v, e, rv, d.ht))
			return false;
		c->v = v; /* P's own slot: as it is */
		c->null = false;
		return true;
	}
	if (!c->stored || docht_compare(c->w, r0) <= 0)
		return true; /* nothing, or hidden by the root */
	if (value_decode(g->ra.data + c->off, c->len, &v) != 0)
		return false;
	if (v.kind == VAL_TOMBSTONE)
		return true;
	if (v.kind != VAL_PRIMITIVE || v.prim.type == PV_NULL || v.merge_flags != 0 ||
	    !expiry(g, v.has_ttl, v.ttl_ms, c->w.ht, c->w.ht, &e))
		goto unpackable;
	if (e != NEVER && ht_physical(g->cutoff) > e)
		return true; /* expired at C */
	if (!slot_ttl(g, &v, e, rv, d.ht))
		goto unpackable;
	c->v = v;
	c->null = false;
	return true;
unpackable:
	/* A cell newer than P stays and hides the NULL slot for good. */
	c->leave = true;
	return docht_compare(c->w, d) > 0;
}

/* §8.6 for packed row P (see above): on success g->out holds the new value
 * (maybe byte-identical to val) and g->fold the columns it replaces. */
static bool repack(struct compaction_gc *g, const uint8_t *key, size_t dl, struct docht d,
		   const uint8_t *val, size_t vlen, const struct docvalue *rv)
{
	const struct schema *sch = g->schema;
	const struct schema_version *latest = schema_version_get(sch, sch->version), *sv1;
	struct packed_row pr1;
	struct docht r0;
	size_t size = 0;

	if (latest == NULL || (rv->has_ttl && rv->ttl_ms > REPACK_MAX_TTL_MS) ||
	    packed_parse_schema(rv->packed, rv->packed_len, sch, &pr1, &sv1, NULL) != 0)
		return false;
	g->cols = grow(g->cols, &g->cols_cap, latest->n + 1, sizeof *g->cols);
	g->slots = realloc(g->slots, g->cols_cap * sizeof *g->slots);
	if (g->slots == NULL)
		PANIC("out of memory");
	if (!read_ahead(g, key, dl, d, val, vlen, latest, &r0))
		return false;
	for (size_t i = 0; i < g->nrows; i++) {
		struct ra_row *r = &g->rows[i];
		if (value_decode(g->ra.data + r->off, r->len, &r->v) != 0 ||
		    packed_parse_schema(r->v.packed, r->v.packed_len, sch, &r->pr, &r->sv, NULL) != 0)
			return false;
	}
	for (size_t i = 0; i < latest->n; i++) {
		if (!choose_slot(g, i, latest->ids[i], d, rv, &pr1, sv1, r0))
			return false;
		if (!g->cols[i].null)
			size += packed_value_size(&g->cols[i].v);
	}
	/* Within the size limit: leave the largest folded cells newer than P
	 * as cells (NULL slots hidden by them); if that is not enough, the
	 * row stays. */
	while (size > PACKED_SIZE_LIMIT) {
		size_t big = SIZE_MAX, bs = 0;
		for (size_t i = 0; i < latest->n; i++) {
			const struct ra_col *c = &g->cols[i];
			size_t n;
			if (c->null || !c->stored || docht_compare(c->w, d) <= 0)
				continue;
			if ((n = packed_value_size(&c->v)) > bs) {
				bs = n;
				big = i;
			}
		}
		if (big == SIZE_MAX)
			return false;
		g->cols[big].null = true;
		g->cols[big].leave = true;
		size -= bs;
	}
	g->nfold = 0;
	g->fold = grow(g->fold, &g->fold_cap, latest->n + 1, sizeof *g->fold);
	for (size_t i = 0; i < latest->n; i++) {
		g->slots[i] = g->cols[i].null ? NULL : &g->cols[i].v;
		if (!g->cols[i].leave)
			g->fold[g->nfold++] = latest->ids[i];
	}
	qsort(g->fold, g->nfold, sizeof *g->fold, cmp_id);
	buf_reset(&g->payload);
	packed_encode(&g->payload, latest->version, g->slots, latest->n);
	{
		struct docvalue nv = *rv;
		nv.packed = g->payload.data;
		nv.packed_len = g->payload.len;
		buf_reset(&g->out);
		value_append(&g->out, &nv);
	}
	return true;
}

/* A packed row at the root, newer than the root's deciding entry (none is
 * decided yet) and at or below the cutoff. */
static enum compaction_verdict packed_root(struct compaction_gc *g, const uint8_t *key,
					   size_t dl, struct docht d, const uint8_t *val,
					   size_t vlen, const struct docvalue *v,
					   const uint8_t **new_val, size_t *new_len)
{
	uint32_t version;
	bool first = !g->has_packed;

	if (g->cover)
		return drop(g); /* a newer packed row has every column */
	note_packed(g, d);
	if (!first || g->schema == NULL)
		return keep(g);
	if (g->full && g->src != NULL && repack(g, key, dl, d, val, vlen, v)) {
		g->cover = true;
		if (g->out.len == vlen && memcmp(g->out.data, val, vlen) == 0)
			return keep(g);
		g->stats.repacked++;
		g->stats.rewritten++;
		*new_val = g->out.data;
		*new_len = g->out.len;
		return COMPACTION_REWRITE;
	}
	g->nfold = 0;
	if (packed_version(v->packed, v->packed_len, &version) == 0 &&
	    version == g->schema->version && schema_version_get(g->schema, version) != NULL)
		g->cover = true;
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
	bool packed_below, fold;
	int32_t id;

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
		return packed_root(g, key, dl, d, val, vlen, &v, new_val, new_len);

	/* A dropped column's cells (and anything below them) go: readers with
	 * the schema ignore them, and they hide nothing outside their path. */
	if (nd > 0 && g->schema != NULL && column_id(key + dl, bounds[1] - dl, &id) &&
	    schema_id_dropped(g->schema, id))
		return drop(g);
	fold = nd == 1 && folded(g, key + dl, bounds[1] - dl);

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
	f->exp = ttl_scope_below(par->exp, v.has_ttl, v.ttl_ms, d.ht);
	if (fold) {
		/* The newest version <= cutoff of a column the repacked row
		 * replaced (older ones go as older versions). */
		g->stats.folded++;
		return drop(g);
	}
	/* A kept packed row older than this entry may supply its path. */
	packed_below = nd > 0 && g->has_packed && docht_compare(g->packed_min, d) < 0;

	if (v.kind == VAL_TOMBSTONE)
		return g->full && !v.has_ttl && !packed_below ? drop(g) : keep(g);
	if (!expired(g, &f->exp, d.ht))
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

/* ---- history holds ------------------------------------------------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void compaction_holds_init(struct compaction_holds *h)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->mu, NULL);
}

void compaction_holds_destroy(struct compaction_holds *h)
{
	pthread_mutex_destroy(&h->mu);
}

/* Drops expired holds; returns the smallest live one (UINT64_MAX: none). */
static uint64_t holds_prune(struct compaction_holds *h, uint64_t now)
{
	uint64_t least = UINT64_MAX;
	size_t k = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (h->h[i].until_ms <= now)
			continue;
		h->h[k++] = h->h[i];
		if (h->h[i].ht < least)
			least = h->h[i].ht;
	}
	h->n = k;
	return least;
}

int compaction_hold_add(struct compaction_holds *h, uint64_t ht, uint64_t cutoff,
			uint64_t retention_floor, uint64_t hard_floor, uint64_t hold_ms,
			char *errmsg)
{
	uint64_t now = mono_ms(), until = now + hold_ms, floor, least;
	size_t below = SIZE_MAX, smallest = 0;
	pthread_mutex_lock(&h->mu);
	least = holds_prune(h, now);
	floor = cutoff > h->pending ? cutoff : h->pending;
	if (ht < floor || ht < hard_floor || (ht < retention_floor && least > ht)) {
		pthread_mutex_unlock(&h->mu);
		return err_set(errmsg, DOCRAFT_ETOOOLD,
			       "read time %" PRIu64 " is below the history kept (cutoff %" PRIu64
			       ", retention from %" PRIu64 ")",
			       ht, floor, retention_floor);
	}
	for (size_t i = 0; i < h->n; i++) {
		if (h->h[i].ht == ht) {
			if (h->h[i].until_ms < until)
				h->h[i].until_ms = until;
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
		if (h->h[i].ht < ht && (below == SIZE_MAX || h->h[i].ht > h->h[below].ht))
			below = i;
		if (h->h[i].ht < h->h[smallest].ht)
			smallest = i;
	}
	if (h->n < COMPACTION_MAX_HOLDS) {
		h->h[h->n].ht = ht;
		h->h[h->n].until_ms = until;
		h->n++;
	} else {
		/* Full: the hold just below protects ht already; else ht is
		 * the smallest and takes the smallest one's place. */
		size_t i = below != SIZE_MAX ? below : smallest;
		if (below == SIZE_MAX)
			h->h[i].ht = ht;
		if (h->h[i].until_ms < until)
			h->h[i].until_ms = until;
	}
	pthread_mutex_unlock(&h->mu);
	return 0;
}

uint64_t compaction_hold_cap(struct compaction_holds *h, uint64_t want)
{
	uint64_t least;
	pthread_mutex_lock(&h->mu);
	least = holds_prune(h, mono_ms());
	if (want > least)
		want = least;
	if (want > h->pending)
		h->pending = want;
	pthread_mutex_unlock(&h->mu);
	return want;
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
