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
 * Key order gives the two facts the reader's builder (builder.c) relies on:
 * the versions of one path arrive together, newest first, and a path
 * arrives before its descendants.
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
 * Packed rows (builder.c's design note): a packed row at the DocKey is not a
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
 * full jobs repack packed rows (§8.6, compaction_repack.c); and a packed row
 * at the latest version hides every older packed row of its document
 * (each column they could supply it has, newer), which then go.
 *
 * TTL merge records (§5.1, §7.2; Redis EXPIRE and PERSIST; the reader's
 * rule is in builder.c). A root version with merge flags sets the TTL of
 * the next older full root value, counted from its own hybrid time; the
 * newest one wins. It is no version that decides the root (it hides
 * nothing), so the decider notes the newest one at or below the cutoff
 * and lets the next older root version decide as before, judging its
 * expiry (and its children's) with the merge record's TTL. A full job
 * folds them: the merge records go, and the value they apply to is
 * rewritten with the TTL re-encoded from its own write time (the
 * difference of the two physical times added, rounded up to the next ms;
 * PERSIST: no TTL field), which gives the same expiry to within that
 * millisecond. A full job holds every older version of the document (as
 * for dropping tombstones), so the value is in it whenever it exists; a
 * partial job keeps both, since the value may live in a file outside it.
 * A tombstone or packed row met first voids the merge records, as for
 * the reader.
 *
 * Files. This one decides each entry (compaction_gc_*); compaction_repack.c
 * rewrites a document's newest packed row for a full job (§8.6);
 * compaction_filter.c is the RocksDB glue that runs a decider per job;
 * compaction_history.c holds the read holds that cap the cutoff and the
 * cutoff's durable file. compaction_gc.h is what they share. */
#include "docdb/compaction_gc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/value.h"
#include "docdb/varint.h"

#define MAX_DEPTH COMPACTION_MAX_DEPTH

/* Type byte of a column id subkey, 'K' <svarint id> (key.c). */
#define KT_COLUMN 'K'

static const uint8_t TOMBSTONE[1] = {VT_TOMBSTONE};

struct compaction_gc *compaction_gc_new(uint64_t cutoff_ht, bool full, int64_t default_ttl_ms)
{
	struct compaction_gc *g = xzalloc(sizeof *g);
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
	buf_free(&g->folded);
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
	g->mpending = false;
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
bool compaction_column_id(const uint8_t *sub, size_t len, int32_t *id)
{
	const uint8_t *p = sub + 1;
	int64_t v;
	if (len < 2 || sub[0] != KT_COLUMN || svarint_decode(&p, sub + len, &v) != 0 ||
	    p != sub + len || v < INT32_MIN || v > INT32_MAX)
		return false;
	*id = (int32_t)v;
	return true;
}

int compaction_id_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static bool folded(const struct compaction_gc *g, const uint8_t *sub, size_t len)
{
	int32_t id;
	return g->nfold > 0 && compaction_column_id(sub, len, &id) &&
	       bsearch(&id, g->fold, g->nfold, sizeof id, compaction_id_cmp) != NULL;
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
	if (g->full && g->src != NULL && compaction_repack(g, key, dl, d, val, vlen, v)) {
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

/* The root value v (at d, at or below the cutoff) under the pending TTL
 * merge record: judged with the merge record's TTL; a full job rewrites it
 * with that TTL folded in (the merge records were dropped). */
static enum compaction_verdict merged_root(struct compaction_gc *g, struct path_frame *f,
					   struct docht d, struct docvalue *v,
					   const uint8_t **new_val, size_t *new_len)
{
	static const struct ttl_scope none;
	bool rewritten = false;
	if (g->full) {
		v->has_ttl = g->m_has_ttl;
		if (g->m_has_ttl) {
			uint64_t gap = ht_physical(g->m_ht) - ht_physical(d.ht);
			v->ttl_ms = g->m_ttl_ms + (int64_t)((gap + 999) / 1000);
		}
		f->exp = ttl_scope_below(none, v->has_ttl, v->ttl_ms, d.ht);
		buf_reset(&g->folded);
		value_append(&g->folded, v);
		rewritten = true;
	} else {
		f->exp = ttl_scope_below(none, g->m_has_ttl, g->m_ttl_ms, g->m_ht);
	}
	/* As below: an expired container with a TTL stays (descendants
	 * newer than the cutoff may inherit it); any other expired value goes
	 * (a full job) or becomes a tombstone. */
	if (expired(g, &f->exp, d.ht) && !(v->kind != VAL_PRIMITIVE && f->exp.set))
		return g->full ? drop(g) : rewrite(g, new_val, new_len);
	if (!rewritten)
		return keep(g);
	g->stats.rewritten++;
	*new_val = g->folded.data;
	*new_len = g->folded.len;
	return COMPACTION_REWRITE;
}

enum compaction_verdict compaction_gc_decide(struct compaction_gc *g, const uint8_t *key,
					     size_t klen, const uint8_t *val, size_t vlen,
					     const uint8_t **new_val, size_t *new_len)
{
	static const struct path_frame base; /* above the root: nothing hidden, no TTL */
	size_t bounds[MAX_DEPTH + 1];
	size_t dl, plen, nd = 0;
	const struct path_frame *par;
	struct path_frame *f;
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

	/* A TTL merge record at the root: noted, never deciding (design note). */
	if (nd == 0 && vlen > 0 && value_decode(val, vlen, &v) == 0 && v.merge_flags != 0) {
		if (g->mpending)
			return g->full ? drop(g) : keep(g); /* an older one: void */
		g->mpending = true;
		g->m_has_ttl = v.has_ttl;
		g->m_ttl_ms = v.ttl_ms;
		g->m_ht = d.ht;
		return g->full ? drop(g) : keep(g);
	}

	/* A packed row at the root: decoded first, as the reader does. */
	if (nd == 0 && vlen > 0 && value_decode(val, vlen, &v) == 0 &&
	    v.kind == VAL_PACKED_ROW)
		return packed_root(g, key, dl, d, val, vlen, &v, new_val, new_len);

	/* A dropped column's cells (and anything below them) go: readers with
	 * the schema ignore them, and they hide nothing outside their path. */
	if (nd > 0 && g->schema != NULL && compaction_column_id(key + dl, bounds[1] - dl, &id) &&
	    schema_id_dropped(g->schema, id))
		return drop(g);
	fold = nd == 1 && folded(g, key + dl, bounds[1] - dl);

	/* builder.c feed/decide: pop the frames that are not prefixes of this
	 * path, push inherited ones down to its depth. */
	pathframe_enter(g->st, &g->depth, &g->path, key, plen, bounds, nd);
	f = &g->st[nd];
	par = nd > 0 ? &g->st[nd - 1] : &base;
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
	if (nd == 0 && g->mpending) {
		g->mpending = false;
		if (v.kind != VAL_TOMBSTONE && v.kind != VAL_PACKED_ROW)
			return merged_root(g, f, d, &v, new_val, new_len);
	}
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

