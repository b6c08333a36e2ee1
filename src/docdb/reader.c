/* Reads: point reads of documents and rows, scans and their paging
 * (docdb-format.md §6.2).
 *
 * Design. Every read is a stream of (key, value) pairs in key order fed to
 * the document builder (builder.c, whose design note says how versions,
 * TTLs, packed rows and hot rows are decided). This file chooses what to
 * feed it and where the iterator goes: the read-time checks against the
 * history cutoff, point reads of a document or a sub-document, rows of a
 * table, and scans with their paging state.
 *
 * A sub-document read feeds the builder the versions of each ancestor path
 * first (they may hide or expire the sub-document), then the subtree. A
 * whole-row point read lets the builder skip the root's older versions
 * (builder.c, "Hot rows") and reads the row again without that shortcut
 * when the builder says it did not hold (b.reread). */
#include "docdb/reader.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/mem.h"
#include "docdb/builder.h"
#include "docdb/docwrite.h"

#define MAX_DEPTH BUILDER_MAX_DEPTH

const struct docnode *docnode_child(const struct docnode *n, const struct pv *key)
{
	if (n == NULL)
		return NULL;
	for (const struct docnode *c = n->children; c != NULL; c = c->next)
		if (c->key.type == key->type && pv_compare(&c->key, key) == 0)
			return c;
	return NULL;
}

static int check_read_time(struct store *s, uint64_t read_ht, char *errmsg)
{
	uint64_t cutoff = store_history_cutoff(s);
	if (read_ht == 0 || read_ht >= HT_INVALID)
		return err_set(errmsg, DOCRAFT_EINVAL, "invalid read time %llu",
			       (unsigned long long)read_ht);
	if (read_ht < cutoff)
		return err_set(errmsg, DOCRAFT_ETOOOLD,
			       "read time %llu is below the history cutoff %llu",
			       (unsigned long long)read_ht, (unsigned long long)cutoff);
	return 0;
}

static int get_doc(struct store *s, const struct schema *schema, const uint8_t *dockey,
		   size_t dockey_len, const struct pv *subkeys, size_t nsub, uint64_t read_ht,
		   int64_t default_ttl_ms, bool top_only, struct arena *a,
		   const struct docnode **out, char *errmsg)
{
	struct builder b;
	struct buf path = BUF_INIT;
	struct store_iter *it;
	struct docnode *root;
	const struct docnode *n;
	int rv;

	*out = NULL;
	if ((rv = check_read_time(s, read_ht, errmsg)) != 0)
		return rv;
	if (nsub > MAX_DEPTH)
		return err_set(errmsg, DOCRAFT_EINVAL, "path deeper than %d levels", MAX_DEPTH);
	if (dockey_len == 0 || dockey_prefix_len(dockey, dockey_len) != dockey_len)
		return err_set(errmsg, DOCRAFT_EINVAL, "not a well-formed DocKey");

	buf_append(&path, dockey, dockey_len);
	buf_push(&path, KT_MAX_BYTE);
	it = store_iter_new(s, dockey, dockey_len, path.data, path.len);
	/* Again now that the iterator pins the files: a compaction raises the
	 * cutoff before it drops anything, so one that started after the first
	 * check is seen here, and one that had not would not affect the pinned
	 * version. */
	if ((rv = check_read_time(s, read_ht, errmsg)) != 0) {
		store_iter_free(it);
		buf_free(&path);
		return rv;
	}
	builder_init(&b, a, read_ht, default_ttl_ms, schema, errmsg);
	/* A whole row may skip its older root versions (design note). */
	b.root_skip_ok = nsub == 0 && schema != NULL && !top_only;
	for (;;) {
		path.len = dockey_len;
		builder_start(&b, dockey, dockey_len);
		/* Versions of each ancestor path, then the subtree. */
		for (size_t i = 0; i <= nsub; i++) {
			bool last = i == nsub;
			store_iter_seek(it, path.data, path.len);
			if ((rv = builder_feed_prefix(&b, it, path.data, path.len,
						      !last || top_only)) != 0)
				goto out;
			if (!last)
				key_append_pv(&path, &subkeys[i]);
		}
		if (!b.reread)
			break;
		b.root_skip_ok = false;
	}
	if ((rv = builder_finish(&b, &root)) != 0)
		goto out;
	n = builder_drop_dropped(schema, root);
	for (size_t i = 0; i < nsub && n != NULL; i++)
		n = docnode_child(n, &subkeys[i]);
	*out = n;
	rv = 0;
out:
	builder_free(&b);
	store_iter_free(it);
	buf_free(&path);
	return rv;
}

int reader_get_doc(struct store *s, const uint8_t *dockey, size_t dockey_len,
		   const struct pv *subkeys, size_t nsub, uint64_t read_ht, int64_t default_ttl_ms,
		   struct arena *a, const struct docnode **out, char *errmsg)
{
	return get_doc(s, NULL, dockey, dockey_len, subkeys, nsub, read_ht, default_ttl_ms, false,
		       a, out, errmsg);
}

int reader_get_node(struct store *s, const uint8_t *dockey, size_t dockey_len,
		    const struct pv *subkeys, size_t nsub, uint64_t read_ht, int64_t default_ttl_ms,
		    struct arena *a, const struct docnode **out, char *errmsg)
{
	return get_doc(s, NULL, dockey, dockey_len, subkeys, nsub, read_ht, default_ttl_ms, true,
		       a, out, errmsg);
}

int reader_get_table_doc(struct store *s, const struct schema *schema, const uint8_t *dockey,
			 size_t dockey_len, const struct pv *subkeys, size_t nsub,
			 uint64_t read_ht, struct arena *a, const struct docnode **out,
			 char *errmsg)
{
	return get_doc(s, schema, dockey, dockey_len, subkeys, nsub, read_ht,
		       schema->default_ttl_ms, false, a, out, errmsg);
}

/* ---- children one subtree at a time (reader_children) ----------------
 *
 * The builder is fed the versions of the prefix's ancestors and of the
 * prefix itself (as get_doc does), which leaves in its frames what they
 * pass down (overwrite time, TTL). Then each child subtree ("unit": one
 * first subkey below the prefix) is fed on its own, forward; the leaves it
 * adds under the prefix's node are reported and detached. Reverse walks
 * find the last key before the current bound, take its unit, feed that
 * unit forward and report its leaves backwards. */

struct leaf {
	const struct pv *sub;
	size_t nsub;
	const uint8_t *path;
	size_t plen;
	const struct pv *value;
};

struct leaves {
	struct leaf *v;
	size_t n, cap;
	struct pv stack[MAX_DEPTH];
	struct buf enc;
};

static void collect_leaves(struct arena *a, const struct docnode *n, size_t depth,
			   struct leaves *out)
{
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		if (depth >= MAX_DEPTH)
			return;
		out->stack[depth] = c->key;
		if (c->kind != VAL_PRIMITIVE) {
			collect_leaves(a, c, depth + 1, out);
			continue;
		}
		out->v = xgrow(out->v, &out->cap, out->n + 1, sizeof *out->v, 16);
		struct leaf *l = &out->v[out->n++];
		l->nsub = depth + 1;
		l->sub = arena_dup(a, out->stack, l->nsub * sizeof *out->stack);
		buf_reset(&out->enc);
		for (size_t i = 0; i < l->nsub; i++)
			key_append_pv(&out->enc, &l->sub[i]);
		l->path = arena_dup(a, out->enc.data, out->enc.len);
		l->plen = out->enc.len;
		l->value = &c->value;
	}
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c != 0)
		return c;
	return an < bn ? -1 : an > bn;
}

/* Whether leaf l is due given start (reader.h's rule). */
static bool leaf_due(const struct leaf *l, const uint8_t *start, size_t sl, bool reverse)
{
	int c;
	if (start == NULL)
		return true;
	c = cmp_bytes(l->path, l->plen, start, sl);
	if (!reverse)
		return c >= 0;
	return c <= 0 || (l->plen > sl && memcmp(l->path, start, sl) == 0);
}

/* Feeds the unit whose path is unit[0..ulen) and reports its leaves.
 * *stop when fn asked to. */
static int feed_unit(struct builder *b, struct store_iter *it, size_t nprefix, const uint8_t *unit,
		     size_t ulen, bool reverse, const uint8_t *start, size_t sl,
		     struct leaves *lv, reader_leaf_fn fn, void *arg, bool *stop)
{
	struct docnode *n;
	int rv;
	store_iter_seek(it, unit, ulen);
	if ((rv = builder_feed_prefix(b, it, unit, ulen, false)) != 0)
		return rv;
	n = b->nodes[nprefix];
	if (n == NULL || n->children == NULL)
		return 0;
	lv->n = 0;
	collect_leaves(b->a, n, 0, lv);
	n->children = n->last_ = NULL;
	n->n_children = 0;
	for (size_t i = 0; i < lv->n; i++) {
		const struct leaf *l = &lv->v[reverse ? lv->n - 1 - i : i];
		if (!leaf_due(l, start, sl, reverse))
			continue;
		if (fn(arg, l->path, l->plen, l->sub, l->nsub, l->value) != 0) {
			*stop = true;
			return 0;
		}
	}
	return 0;
}

/* unit = the path of the child subtree (one subkey below the prefix,
 * which ends at pl) that stored key k belongs to. */
static int unit_of(struct builder *b, const uint8_t *k, size_t klen, size_t pl, struct buf *unit)
{
	const uint8_t *p = k + pl;
	size_t plen;
	struct docht d;
	if (key_split_ht(k, klen, &plen, &d) != 0 || plen <= pl)
		return builder_corrupt(b, "bad hybrid time suffix");
	if (key_skip_pv(&p, k + plen) != 0)
		return builder_corrupt(b, "bad subkey");
	buf_reset(unit);
	buf_append(unit, k, (size_t)(p - k));
	return 0;
}

int reader_children(struct store *s, const uint8_t *dockey, size_t dockey_len,
		    const struct pv *prefix, size_t nprefix, uint64_t read_ht,
		    int64_t default_ttl_ms, bool reverse, const uint8_t *start, size_t start_len,
		    struct arena *a, reader_leaf_fn fn, void *arg, char *errmsg)
{
	struct builder b;
	struct buf path = BUF_INIT, hi = BUF_INIT, unit = BUF_INIT;
	struct leaves lv = {0};
	struct store_iter *it;
	size_t pl, su = 0;
	bool stop = false;
	int rv;

	if ((rv = check_read_time(s, read_ht, errmsg)) != 0)
		return rv;
	if (nprefix >= MAX_DEPTH)
		return err_set(errmsg, DOCRAFT_EINVAL, "path deeper than %d levels", MAX_DEPTH);
	if (dockey_len == 0 || dockey_prefix_len(dockey, dockey_len) != dockey_len)
		return err_set(errmsg, DOCRAFT_EINVAL, "not a well-formed DocKey");
	buf_init(&lv.enc);
	buf_append(&path, dockey, dockey_len);
	for (size_t i = 0; i < nprefix; i++)
		key_append_pv(&path, &prefix[i]);
	pl = path.len;
	buf_append(&hi, path.data, pl);
	buf_push(&hi, KT_MAX_BYTE);
	it = store_iter_new(s, dockey, dockey_len, hi.data, hi.len);
	if ((rv = check_read_time(s, read_ht, errmsg)) != 0)
		goto out;
	builder_init(&b, a, read_ht, default_ttl_ms, NULL, errmsg);
	builder_start(&b, dockey, dockey_len);
	/* The versions of each ancestor path and of the prefix itself. */
	for (size_t i = 0, len = dockey_len;; i++) {
		store_iter_seek(it, path.data, len);
		if ((rv = builder_feed_prefix(&b, it, path.data, len, true)) != 0)
			goto free_builder;
		if (i == nprefix)
			break;
		{
			const uint8_t *p = path.data + len;
			if (key_skip_pv(&p, path.data + pl) != 0)
				PANIC("reader_children: a prefix that does not re-decode");
			len = (size_t)(p - path.data);
		}
	}
	if (start != NULL && start_len > 0) {
		const uint8_t *p = start;
		if (key_skip_pv(&p, start + start_len) != 0) {
			rv = err_set(errmsg, DOCRAFT_EINVAL, "a start that is no encoded subkey");
			goto free_builder;
		}
		su = (size_t)(p - start); /* the start's unit */
	}

	if (!reverse) {
		/* From the start's unit (or the first) on. */
		buf_reset(&unit);
		buf_append(&unit, path.data, pl);
		if (su > 0)
			buf_append(&unit, start, su);
		store_iter_seek(it, unit.data, unit.len);
		while (!stop && store_iter_valid(it)) {
			size_t klen;
			const uint8_t *k = store_iter_key(it, &klen);
			if (klen <= pl || memcmp(k, path.data, pl) != 0)
				break;
			if (k[pl] == KT_HYBRID_TIME) { /* the prefix's own versions */
				store_iter_next(it);
				continue;
			}
			if ((rv = unit_of(&b, k, klen, pl, &unit)) != 0)
				goto free_builder;
			if ((rv = feed_unit(&b, it, nprefix, unit.data, unit.len, false, start,
					    start_len, &lv, fn, arg, &stop)) != 0)
				goto free_builder;
			/* feed_unit left the iterator past the unit. */
		}
	} else {
		/* From the last key of the start's unit (or of all) backwards. */
		buf_reset(&unit);
		buf_append(&unit, path.data, pl);
		if (su > 0)
			buf_append(&unit, start, su);
		buf_push(&unit, KT_MAX_BYTE);
		store_iter_seek_for_prev(it, unit.data, unit.len);
		while (!stop && store_iter_valid(it)) {
			size_t klen;
			const uint8_t *k = store_iter_key(it, &klen);
			if (klen <= pl || memcmp(k, path.data, pl) != 0 || k[pl] == KT_HYBRID_TIME)
				break; /* reached the prefix's own versions, or before */
			if ((rv = unit_of(&b, k, klen, pl, &unit)) != 0)
				goto free_builder;
			if ((rv = feed_unit(&b, it, nprefix, unit.data, unit.len, true, start,
					    start_len, &lv, fn, arg, &stop)) != 0)
				goto free_builder;
			store_iter_seek_for_prev(it, unit.data, unit.len);
		}
	}
	rv = store_iter_status(it, errmsg);
free_builder:
	builder_free(&b);
out:
	store_iter_free(it);
	buf_free(&path);
	buf_free(&hi);
	buf_free(&unit);
	buf_free(&lv.enc);
	free(lv.v);
	return rv;
}

const struct docnode *row_column(const struct row *r, const struct column *c)
{
	struct pv k = pv_column(c->id);
	return docnode_child(r->root, &k);
}

const struct docnode *row_column_named(const struct row *r, const char *name)
{
	const struct column *c = schema_find(r->schema, name);
	return c != NULL ? row_column(r, c) : NULL;
}

/* A CQL row exists when anything live is left under it (§6.2 step 4). */
static bool row_exists(const struct docnode *root)
{
	return root != NULL && root->n_children > 0;
}

int reader_get_row(struct store *s, const struct schema *schema, const struct pv *key,
		   size_t nkey, uint64_t read_ht, struct arena *a, struct row *out, bool *found,
		   char *errmsg)
{
	struct buf dk = BUF_INIT;
	const struct docnode *root;
	int rv;

	*found = false;
	memset(out, 0, sizeof *out);
	if ((rv = docwrite_dockey(schema, key, nkey, &dk, errmsg)) != 0)
		goto out;
	if ((rv = reader_get_table_doc(s, schema, dk.data, dk.len, NULL, 0, read_ht, a, &root,
					errmsg)) != 0)
		goto out;
	out->schema = schema;
	out->key = arena_dup(a, key, nkey * sizeof *key);
	for (size_t i = 0; i < nkey; i++)
		if (key[i].type == PV_STRING)
			out->key[i].v.s.p = arena_dup(a, key[i].v.s.p, key[i].v.s.len);
	out->root = root;
	*found = row_exists(root);
out:
	buf_free(&dk);
	return rv;
}

/* ---- scans ---------------------------------------------------------------
 *
 * A scan turns its spec into one byte interval [lo, hi) of DocKeys, then
 * walks it row by row: forward, it feeds pairs until the DocKey changes;
 * reversed, it finds the last key below hi, seeks to the start of that row,
 * builds it forward, and steps to the key just before the row.
 *
 * Paging state: 0x01, BE64 read time, DocKey of the last row returned. */

#define PAGING_V1 0x01

/* lo/hi for a bound on range column c (logical bound, direction-aware). */
static void bound_bytes(struct buf *lo, struct buf *hi, const struct buf *base,
			const struct column *c, const struct pv *bound, bool incl, bool is_lower)
{
	struct pv v = *bound;
	/* For a DESC column a logical lower bound limits the bytes from above. */
	bool bytes_lower = is_lower != c->desc;
	struct buf *dst = bytes_lower ? lo : hi;
	v.desc = c->desc;
	buf_reset(dst);
	buf_append(dst, base->data, base->len);
	key_append_pv(dst, &v);
	if (bytes_lower ? !incl : incl)
		buf_push(dst, KT_MAX_BYTE);
}

static int scan_interval(const struct schema *schema, const struct scan_spec *sp, struct buf *lo,
			 struct buf *hi, bool *hi_set, char *errmsg)
{
	struct buf base = BUF_INIT;
	struct pv comps[SCHEMA_MAX_COLUMNS];
	int rv = 0;

	*hi_set = false;
	if (sp->hash_key == NULL) {
		if (sp->n_eq || sp->lower || sp->upper)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "range conditions need the full hash key");
		buf_push(lo, KT_GROUP_END);
		return 0;
	}
	if (sp->n_hash != schema->n_hash || schema->n_hash == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s: expected %zu hash key values, got %zu",
			       schema->table, schema->n_hash, sp->n_hash);
	if (sp->n_eq > schema->n_range ||
	    ((sp->lower || sp->upper) && sp->n_eq >= schema->n_range))
		return err_set(errmsg, DOCRAFT_EINVAL, "too many range conditions for table %s",
			       schema->table);
	for (size_t i = 0; i < schema->n_hash; i++) {
		if ((rv = schema_check_value(schema->cols[i].type, &sp->hash_key[i], false,
					     schema->cols[i].name, errmsg)) != 0)
			return rv;
		comps[i] = sp->hash_key[i];
		comps[i].desc = 0;
	}
	buf_push(&base, KT_UINT16_HASH);
	buf_append_be16(&base, key_hash_components(comps, schema->n_hash));
	for (size_t i = 0; i < schema->n_hash; i++)
		key_append_pv(&base, &comps[i]);
	buf_push(&base, KT_GROUP_END);
	for (size_t i = 0; i < sp->n_eq; i++) {
		const struct column *c = &schema->cols[schema->n_hash + i];
		struct pv v = sp->range_eq[i];
		if ((rv = schema_check_value(c->type, &v, false, c->name, errmsg)) != 0)
			goto out;
		v.desc = c->desc;
		key_append_pv(&base, &v);
	}
	buf_append(lo, base.data, base.len);
	buf_append(hi, base.data, base.len);
	buf_push(hi, KT_MAX_BYTE);
	*hi_set = true;
	if (sp->lower || sp->upper) {
		const struct column *c = &schema->cols[schema->n_hash + sp->n_eq];
		if ((sp->lower && (rv = schema_check_value(c->type, sp->lower, false, c->name, errmsg))) ||
		    (sp->upper && (rv = schema_check_value(c->type, sp->upper, false, c->name, errmsg))))
			goto out;
		if (sp->lower)
			bound_bytes(lo, hi, &base, c, sp->lower, sp->lower_incl, true);
		if (sp->upper)
			bound_bytes(lo, hi, &base, c, sp->upper, sp->upper_incl, false);
	}
out:
	buf_free(&base);
	return rv;
}

int reader_paging_decode(const uint8_t *p, size_t len, uint64_t *read_ht, const uint8_t **dockey,
			 size_t *dockey_len, char *errmsg)
{
	if (len < 10 || p[0] != PAGING_V1)
		return err_set(errmsg, DOCRAFT_EINVAL, "malformed paging state");
	if (dockey_prefix_len(p + 9, len - 9) != len - 9)
		return err_set(errmsg, DOCRAFT_EINVAL, "malformed paging state");
	*read_ht = be64_load(p + 1);
	*dockey = p + 9;
	*dockey_len = len - 9;
	return 0;
}

static int apply_paging(const struct scan_spec *sp, struct buf *lo, struct buf *hi, bool *hi_set,
			uint64_t *read_ht, char *errmsg)
{
	const uint8_t *dk;
	size_t dl;
	uint64_t ht;
	int rv;
	if (sp->paging == NULL || sp->paging_len == 0)
		return 0;
	if ((rv = reader_paging_decode(sp->paging, sp->paging_len, &ht, &dk, &dl, errmsg)) != 0)
		return rv;
	/* The row must lie inside this scan's interval. */
	if (memcmp(dk, lo->data, dl < lo->len ? dl : lo->len) < 0 ||
	    (*hi_set && memcmp(dk, hi->data, dl < hi->len ? dl : hi->len) > 0))
		return err_set(errmsg, DOCRAFT_EINVAL, "paging state does not belong to this scan");
	/* The state names the time its scan reads at, and that time wins (a
	 * scan continues at its first page's time). It may not be later than
	 * the caller's read time, which the tablet checked against its safe
	 * time: a forged state must not pick a future time of its own (it would
	 * read what later writes may still change). */
	if (*read_ht != 0 && ht > *read_ht)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "paging state's read time %" PRIu64 " is later than the read time %" PRIu64,
			       ht, *read_ht);
	*read_ht = ht;
	if (sp->reverse) {
		buf_reset(hi);
		buf_append(hi, dk, dl);
		*hi_set = true;
	} else {
		buf_reset(lo);
		buf_append(lo, dk, dl);
		buf_push(lo, KT_MAX_BYTE);
	}
	return 0;
}

/* Builds the row whose first key the iterator is on; leaves the iterator on
 * the first key after the row. */
static int build_row(struct builder *b, struct store_iter *it, struct buf *cur,
		     struct docnode **root)
{
	size_t klen, dl;
	const uint8_t *k = store_iter_key(it, &klen);
	int rv;
	dl = dockey_prefix_len(k, klen);
	if (dl == 0)
		return builder_corrupt(b, "key without a DocKey");
	buf_reset(cur);
	buf_append(cur, k, dl);
	builder_start(b, cur->data, cur->len);
	if ((rv = builder_feed_prefix(b, it, cur->data, cur->len, false)) != 0)
		return rv;
	if ((rv = builder_finish(b, root)) != 0)
		return rv;
	*root = builder_drop_dropped(b->schema, *root);
	return 0;
}

static int decode_row(const struct schema *schema, const struct buf *dockey,
		      struct docnode *root, struct arena *a, struct row *r, char *errmsg)
{
	const uint8_t *p = dockey->data;
	struct dockey dk;
	if (dockey_decode(&p, dockey->data + dockey->len, &dk, a) != 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "corrupt DocKey in table %s", schema->table);
	r->schema = schema;
	r->root = root;
	r->key = arena_alloc(a, (dk.n_hashed + dk.n_range + 1) * sizeof *r->key);
	if (dk.n_hashed > 0)
		memcpy(r->key, dk.hashed, dk.n_hashed * sizeof *r->key);
	if (dk.n_range > 0)
		memcpy(r->key + dk.n_hashed, dk.range, dk.n_range * sizeof *r->key);
	return 0;
}

int reader_scan(struct store *s, const struct schema *schema, const struct scan_spec *spec,
		struct arena *a, struct row **rows, size_t *nrows, struct buf *paging_out,
		char *errmsg)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT, cur = BUF_INIT;
	struct builder b;
	struct store_iter *it = NULL;
	struct row *out = NULL;
	size_t n = 0, cap = 0;
	uint64_t read_ht = spec->read_ht;
	bool hi_set;
	int rv;

	*rows = NULL;
	*nrows = 0;
	/* Emptied first: left empty unless more rows may follow. A state read
	 * from this same buffer stays valid: it is consumed before anything is
	 * appended. */
	if (paging_out != NULL)
		buf_reset(paging_out);
	builder_init(&b, a, 0, schema->default_ttl_ms, schema, errmsg);
	if ((rv = scan_interval(schema, spec, &lo, &hi, &hi_set, errmsg)) != 0 ||
	    (rv = apply_paging(spec, &lo, &hi, &hi_set, &read_ht, errmsg)) != 0 ||
	    (rv = check_read_time(s, read_ht, errmsg)) != 0)
		goto out;
	b.read_ht = read_ht;
	it = store_iter_new(s, lo.data, lo.len, hi_set ? hi.data : NULL, hi_set ? hi.len : 0);
	if ((rv = check_read_time(s, read_ht, errmsg)) != 0) /* see reader_get_doc */
		goto out;
	if (spec->reverse)
		store_iter_seek_last(it);
	else
		store_iter_seek(it, lo.data, lo.len);

	while (store_iter_valid(it) && (spec->limit == 0 || n < spec->limit)) {
		struct docnode *root = NULL;
		if (spec->reverse) {
			size_t klen, dl;
			const uint8_t *k = store_iter_key(it, &klen);
			if ((dl = dockey_prefix_len(k, klen)) == 0) {
				rv = builder_corrupt(&b, "key without a DocKey");
				goto out;
			}
			buf_reset(&cur);
			buf_append(&cur, k, dl);
			store_iter_seek(it, cur.data, cur.len);
		}
		if ((rv = build_row(&b, it, &cur, &root)) != 0)
			goto out;
		if (spec->reverse)
			store_iter_seek_for_prev(it, cur.data, cur.len);
		if (!row_exists(root))
			continue;
		out = xgrow(out, &cap, n + 1, sizeof *out, 16);
		if ((rv = decode_row(schema, &cur, root, a, &out[n], errmsg)) != 0)
			goto out;
		n++;
	}
	if ((rv = store_iter_status(it, errmsg)) != 0)
		goto out;
	if (spec->limit != 0 && n == spec->limit && store_iter_valid(it) && paging_out != NULL) {
		buf_reset(paging_out);
		buf_push(paging_out, PAGING_V1);
		buf_append_be64(paging_out, read_ht);
		buf_append(paging_out, cur.data, cur.len);
	}
	*rows = n ? arena_dup(a, out, n * sizeof *out) : NULL;
	*nrows = n;
out:
	free(out);
	store_iter_free(it);
	builder_free(&b);
	buf_free(&lo);
	buf_free(&hi);
	buf_free(&cur);
	return rv;
}
