/* Repacking (§8.6): a full compaction job rewrites the newest packed row of
 * a document at or below the cutoff so that it stands for every column.
 *
 * Met first among a document's root versions at or below the cutoff C (so
 * newer than the root's deciding entry, and the newest packed row the
 * reader keeps at every read time >= C, except rows above C, untouched), a
 * packed row P at DocHT p is rewritten with one slot per column of the
 * latest schema version, each holding what a read at C shows for that
 * column, with the expiry it has there. Which it is needs the row's column
 * cells, which follow P in key order, so the filter reads the document
 * ahead through an iterator on the live store (read_ahead). A full job's
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
#include "docdb/compaction_gc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "docdb/packed.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "docdb/value.h"

/* Expiry "never" (expiry()). */
#define NEVER UINT64_MAX
/* TTLs repacking re-expresses: up to about 100 years (no overflow in µs). */
#define REPACK_MAX_TTL_MS (INT64_C(100) * 366 * 24 * 3600 * 1000)


/* Effective expiry of a value (the physical µs after which the reader's test (ttl.h)
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
			g->rows = xgrow(g->rows, &g->rows_cap, g->nrows + 1, sizeof *g->rows, 4);
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
		if (!compaction_column_id(sub, (size_t)(p - sub), &id) || (pos = version_pos(latest, id)) < 0)
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
bool compaction_repack(struct compaction_gc *g, const uint8_t *key, size_t dl, struct docht d,
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
	g->cols = xgrow(g->cols, &g->cols_cap, latest->n + 1, sizeof *g->cols, 4);
	g->slots = xrealloc(g->slots, g->cols_cap * sizeof *g->slots);
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
	g->fold = xgrow(g->fold, &g->fold_cap, latest->n + 1, sizeof *g->fold, 4);
	for (size_t i = 0; i < latest->n; i++) {
		g->slots[i] = g->cols[i].null ? NULL : &g->cols[i].v;
		if (!g->cols[i].leave)
			g->fold[g->nfold++] = latest->ids[i];
	}
	qsort(g->fold, g->nfold, sizeof *g->fold, compaction_id_cmp);
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
