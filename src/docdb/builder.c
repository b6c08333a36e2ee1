/* The document builder: rebuilding documents from versions (docdb-format.md
 * §6.2), the part of the read path that point reads and scans share
 * (reader.c drives it; builder.h is its internal interface).
 *
 * Design. Every read is a stream of (key, value) pairs in key order fed to a
 * builder. Key order gives two facts the builder relies on: all versions of
 * one path arrive together, newest first ('#' DocHT sorts newest first), and
 * a path arrives before its descendants ('#' sorts below every subkey type).
 * The builder keeps a stack of frames, one per path component of the last
 * decided entry:
 *
 *   frame[d].overwrite  the newest write time at this path or above: any
 *                       entry at or below it with an older DocHT is hidden
 *   frame[d].exp        an explicit TTL inherited by descendants
 *   frame[d].node       the document node, created lazily
 *
 * For each pair: skip it if it is newer than the read time, or an older
 * version of the path just decided; pop the frames that are not prefixes of
 * its path, push inherited frames down to its depth, and decide it: hidden
 * (older than an ancestor's overwrite), absent (tombstone or expired), or a
 * node (primitive or container marker). Ancestors of a node are created as
 * implicit objects; implicit objects left without children are pruned at
 * the end, which is how a CQL row or collection with nothing live vanishes.
 *
 *
 * Packed rows (§6.2 steps 1 and 3, §8). A packed row at the DocKey is read
 * as what the INSERT it replaces would have written at its DocHT: the
 * liveness column ('$' with the row's TTL) and each column of its schema
 * version (its value with its own TTL, else the row's; a NULL slot is a
 * column tombstone). It is not an overwrite of the whole row: it hides only
 * older versions of those paths, never newer cells and never other columns
 * or collections. So the root's versions are walked past packed rows (they
 * are kept, newest first) down to the newest other entry, which decides the
 * root as before (a row tombstone hides every older packed row and cell).
 * When the first column entry arrives, the kept rows become "virtual cells",
 * one per path, from the newest row that has it, sorted by path; each is fed
 * through the same decision as a stored pair just before the stored pairs
 * of its path or of later paths, or dropped when the path's newest stored
 * version is newer. A packed row in a read that has no schema (so no
 * packings) is an error.
 *
 * Hot rows (many versions within the history retention). Reading must not
 * cost one step per version:
 *   - older versions of a decided path are ignored by feed(); after a few in
 *     a row, builder_feed_prefix seeks past all of them (path + '#'+1);
 *   - versions newer than the read time likewise: after a few of one path,
 *     a seek to path '#' DocHT(read_ht, max write id), its newest version
 *     at or below the read time (reads in the past, AS OF);
 *   - only the newest visible packed row is kept when it is of the table's
 *     current schema version: it then has a slot for every live column, so
 *     an older packed row would add no cell (make_vcells);
 *   - point reads (get_doc) go further: when that packed row has no TTL,
 *     the table no default TTL and no collection column, older root entries
 *     (packed rows, a row tombstone, a marker) cannot change the result
 *     either: a tombstone or marker only hides older cells, and every live
 *     column's older cells are hidden by the packed row anyway. So the rest
 *     of the root's versions are skipped with one seek. Whether the row
 *     really holds nothing but the liveness column and scalar columns is
 *     checked as its subkeys are fed; a row that holds anything else is
 *     read again without the shortcut (reread).
 *
 * TTL merge records (§5.1; Redis EXPIRE, PERSIST). A root version whose
 * merge flags are set ('k' 01 ['t' ttl] <type byte>) is not a value: it
 * sets the TTL of the next older full version of the root, counted from
 * the merge record's own hybrid time (no 't': the value loses its own TTL,
 * the table default applies from its write time). Of several merge
 * records the newest wins; the older ones are ignored. The value keeps its
 * own DocHT for hiding (a merge record overwrites nothing); a tombstone or
 * packed row met first makes the pending merge record void. Only root
 * versions are folded (YEDIS writes merge records nowhere else). */
#include "docdb/builder.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/mem.h"
#include "docdb/packed.h"

#define MAX_DEPTH BUILDER_MAX_DEPTH

/* reader.h's counters of the read path: the builder counts every pair fed
 * and takes its shortcuts only while shortcuts is set. */
static _Atomic uint64_t keys_fed;
static _Atomic bool shortcuts = true;

uint64_t reader_keys_fed(void)
{
	return keys_fed;
}

void reader_set_shortcuts(bool on)
{
	shortcuts = on;
}

void builder_init(struct builder *b, struct arena *a, uint64_t read_ht,
		  int64_t default_ttl_ms, const struct schema *schema, char *errmsg)
{
	memset(b, 0, sizeof *b);
	b->a = a;
	b->errmsg = errmsg;
	b->read_ht = read_ht;
	b->default_ttl_ms = default_ttl_ms;
	b->schema = schema;
	buf_init(&b->path);
	buf_init(&b->pbytes);
	buf_init(&b->vkey);
	buf_init(&b->seek);
}

void builder_start(struct builder *b, const uint8_t *root, size_t root_len)
{
	b->root_len = root_len;
	memset(&b->st[0], 0, sizeof b->st[0]);
	b->st[0].path_len = root_len;
	b->nodes[0] = NULL;
	b->depth = 1;
	buf_reset(&b->path);
	buf_append(&b->path, root, root_len);
	b->top_decided = false;
	b->root = NULL;
	b->nprows = 0;
	buf_reset(&b->pbytes);
	b->nvcells = 0;
	b->vnext = 0;
	b->vready = false;
	b->ignored = false;
	b->newest_full = false;
	b->skip_root = false;
	b->root_skipped = false;
	b->reread = false;
	b->merge_pending = false;
	b->ttl_from = 0;
}

void builder_free(struct builder *b)
{
	buf_free(&b->path);
	buf_free(&b->pbytes);
	buf_free(&b->vkey);
	buf_free(&b->seek);
	free(b->prows);
	free(b->vcells);
}

int builder_corrupt(struct builder *b, const char *what)
{
	return err_set(b->errmsg, DOCRAFT_ECORRUPT, "corrupt DocDB entry: %s", what);
}

static struct docnode *new_node(struct builder *b)
{
	struct docnode *n = arena_alloc(b->a, sizeof *n);
	memset(n, 0, sizeof *n);
	n->kind = VAL_OBJECT;
	return n;
}

static void append_child(struct docnode *parent, struct docnode *n)
{
	n->parent_ = parent;
	if (parent->last_ != NULL)
		parent->last_->next = n;
	else
		parent->children = n;
	parent->last_ = n;
	parent->n_children++;
	if (parent->kind == VAL_PRIMITIVE) {
		/* A newer child under a primitive turns it into an object. */
		parent->kind = VAL_OBJECT;
		parent->has_marker = false;
		parent->value = pv_null();
	}
}

/* The node of frame d, creating it and its missing ancestors. key/bounds
 * describe the entry being decided, whose path has these frames as prefixes. */
static int ensure_node(struct builder *b, size_t d, const uint8_t *key, const size_t *bounds,
		       struct docnode **out)
{
	struct docnode *n, *parent = NULL;
	int rv;
	if (b->nodes[d] != NULL) {
		*out = b->nodes[d];
		return 0;
	}
	if (d > 0 && (rv = ensure_node(b, d - 1, key, bounds, &parent)) != 0)
		return rv;
	n = new_node(b);
	if (d > 0) {
		const uint8_t *p = key + bounds[d - 1];
		if (key_decode_pv(&p, key + bounds[d], &n->key, b->a) != 0)
			return builder_corrupt(b, "bad subkey");
		append_child(parent, n);
	} else {
		b->root = n;
	}
	b->nodes[d] = n;
	*out = n;
	return 0;
}

static bool expired(const struct builder *b, const struct ttl_scope *exp, uint64_t write_ht)
{
	return ttl_scope_expired(b->read_ht, b->default_ttl_ms, exp, write_ht);
}

/* Decides one entry: key[0..plen) is its path, bounds[0..nd] the ends of
 * its components (bounds[0] = the root). dv is its value, or NULL to decode
 * val/vlen (only once it is known not to be hidden). */
static int decide(struct builder *b, const uint8_t *key, size_t plen, const size_t *bounds,
		  size_t nd, struct docht d, const struct docvalue *dv, const uint8_t *val,
		  size_t vlen)
{
	size_t c;
	struct docvalue v;
	struct path_frame *f;
	const struct path_frame *par;
	struct docnode *n;
	int rv;

	/* Pop frames that are not prefixes of this path, push inherited ones
	 * (without a node yet) down to its depth. */
	for (c = pathframe_enter(b->st, &b->depth, &b->path, key, plen, bounds, nd); c <= nd; c++)
		b->nodes[c] = NULL;
	f = &b->st[nd];
	par = nd > 0 ? &b->st[nd - 1] : &b->base;
	b->top_decided = true;

	if (docht_compare(d, par->overwrite) <= 0)
		return 0; /* hidden by a newer write above it */
	if (dv != NULL)
		v = *dv;
	else if (value_decode(val, vlen, &v) != 0)
		return builder_corrupt(b, "bad value");

	f->overwrite = d;
	f->exp = ttl_scope_below(par->exp, v.has_ttl, v.ttl_ms,
				 nd == 0 && b->ttl_from != 0 ? b->ttl_from : d.ht);
	if (v.kind == VAL_TOMBSTONE || expired(b, &f->exp, d.ht))
		return 0;
	if (v.kind == VAL_PACKED_ROW)
		return builder_corrupt(b, "packed row below the DocKey");

	if ((rv = ensure_node(b, nd, key, bounds, &n)) != 0)
		return rv;
	n->write_time = d;
	n->has_ttl = f->exp.set;
	n->ttl_ms = f->exp.ttl_ms;
	n->ttl_from = f->exp.from;
	if (v.kind == VAL_PRIMITIVE) {
		n->kind = VAL_PRIMITIVE;
		n->value = v.prim;
		if (v.prim.type == PV_STRING)
			n->value.v.s.p = arena_dup(b->a, v.prim.v.s.p, v.prim.v.s.len);
	} else {
		n->kind = v.kind;
		n->has_marker = true;
	}
	return 0;
}

/* Keeps a packed row met among the root's versions (newer than every root
 * entry decided so far, since none is). */
static void keep_packed(struct builder *b, struct docht d, const struct docvalue *v)
{
	struct prow *r;
	b->prows = xgrow(b->prows, &b->prows_cap, b->nprows + 1, sizeof *b->prows, 4);
	r = &b->prows[b->nprows++];
	r->d = d;
	r->has_ttl = v->has_ttl;
	r->ttl_ms = v->ttl_ms;
	r->off = b->pbytes.len;
	r->len = v->packed_len;
	buf_append(&b->pbytes, v->packed, v->packed_len);
}

static struct vcell *new_vcell(struct builder *b, struct docht d, const struct pv *sub)
{
	struct vcell *vc;
	b->vcells = xgrow(b->vcells, &b->vcells_cap, b->nvcells + 1, sizeof *b->vcells, 16);
	vc = &b->vcells[b->nvcells++];
	memset(vc, 0, sizeof *vc);
	vc->d = d;
	buf_reset(&b->vkey);
	key_append_pv(&b->vkey, sub);
	PRE(b->vkey.len <= VSUB_MAX);
	memcpy(vc->sub, b->vkey.data, b->vkey.len);
	vc->sub_len = (uint8_t)b->vkey.len;
	return vc;
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c != 0)
		return c;
	return an < bn ? -1 : an > bn;
}

static int cmp_vcell(const void *x, const void *y)
{
	const struct vcell *a = x, *b = y;
	return cmp_bytes(a->sub, a->sub_len, b->sub, b->sub_len);
}

static bool has_vcell(struct builder *b, const struct pv *sub)
{
	buf_reset(&b->vkey);
	key_append_pv(&b->vkey, sub);
	for (size_t i = 0; i < b->nvcells; i++)
		if (cmp_bytes(b->vcells[i].sub, b->vcells[i].sub_len, b->vkey.data, b->vkey.len) == 0)
			return true;
	return false;
}

/* Turns the kept packed rows into virtual cells (newest row first: a path
 * takes its cell from the newest row that has it). */
static int make_vcells(struct builder *b)
{
	b->vready = true;
	if (b->nprows == 0)
		return 0;
	if (b->schema == NULL)
		return err_set(b->errmsg, DOCRAFT_EINVAL,
			       "a packed row needs its table's schema to be read "
			       "(reader_get_table_doc)");
	for (size_t i = 0; i < b->nprows; i++) {
		const struct prow *r = &b->prows[i];
		const struct schema_version *sv;
		struct packed_row pr;
		struct pv live = pv_liveness();
		struct vcell *vc;
		int rv;
		if ((rv = packed_parse_schema(b->pbytes.data + r->off, r->len, b->schema, &pr, &sv,
					      b->errmsg)) != 0)
			return rv;
		if (i == 0) {
			vc = new_vcell(b, r->d, &live);
			vc->v = docvalue_of(pv_null());
			vc->v.has_ttl = r->has_ttl;
			vc->v.ttl_ms = r->ttl_ms;
		}
		for (size_t k = 0; k < sv->n; k++) {
			struct pv sub = pv_column(sv->ids[k]);
			struct docvalue v;
			bool is_null;
			if (schema_id_dropped(b->schema, sv->ids[k]) || (i > 0 && has_vcell(b, &sub)))
				continue;
			if (packed_column(&pr, k, &v, &is_null) != 0)
				return builder_corrupt(b, "bad column in a packed row");
			if (is_null) {
				v = docvalue_kind(VAL_TOMBSTONE);
			} else if (!v.has_ttl && r->has_ttl) {
				v.has_ttl = true; /* the row's TTL, unless its own */
				v.ttl_ms = r->ttl_ms;
			}
			vc = new_vcell(b, r->d, &sub);
			vc->v = v;
		}
	}
	qsort(b->vcells, b->nvcells, sizeof *b->vcells, cmp_vcell);
	return 0;
}

static int feed_vcell(struct builder *b, const struct vcell *vc)
{
	size_t bounds[2] = {b->root_len, b->root_len + vc->sub_len};
	buf_reset(&b->vkey);
	buf_append(&b->vkey, b->path.data, b->root_len);
	buf_append(&b->vkey, vc->sub, vc->sub_len);
	return decide(b, b->vkey.data, b->vkey.len, bounds, 1, vc->d, &vc->v, NULL, 0);
}

/* Feeds the virtual cells due before a stored entry whose first subkey is
 * sub (nd: its depth, d: its DocHT): those of earlier paths, and the one
 * of its own path when newer than it (deeper entries: always). A virtual
 * cell older than the newest stored version of its path is dropped. sub ==
 * NULL: the document ends, feed them all. */
static int feed_vcells(struct builder *b, const uint8_t *sub, size_t sub_len, size_t nd,
		       struct docht d)
{
	int rv;
	for (; b->vnext < b->nvcells; b->vnext++) {
		const struct vcell *vc = &b->vcells[b->vnext];
		int c = sub ? cmp_bytes(vc->sub, vc->sub_len, sub, sub_len) : -1;
		if (c > 0)
			break;
		if (c == 0 && nd == 1 && docht_compare(vc->d, d) <= 0)
			continue;
		if ((rv = feed_vcell(b, vc)) != 0)
			return rv;
	}
	return 0;
}

static bool has_collection(const struct schema *s)
{
	for (size_t i = 0; i < s->ncols; i++)
		if (col_type_is_collection((enum col_type)s->cols[i].type))
			return true;
	return false;
}

/* The newest visible packed row was just kept (v): whether it covers every
 * live column, and whether the rest of the root may be skipped. */
static int note_newest_packed(struct builder *b, const struct docvalue *v)
{
	const struct schema_version *sv;
	struct packed_row pr;
	if (b->schema == NULL)
		return 0; /* make_vcells reports it */
	if (packed_parse_schema(v->packed, v->packed_len, b->schema, &pr, &sv, NULL) != 0)
		return 0; /* make_vcells reports it */
	b->newest_full = shortcuts && sv->version == b->schema->version;
	if (b->root_skip_ok && b->newest_full && !v->has_ttl && b->default_ttl_ms == 0 &&
	    !has_collection(b->schema)) {
		b->skip_root = true;
		b->root_skipped = true;
	}
	return 0;
}

/* Whether the subkey at p (n bytes) is the liveness column or a column of
 * a scalar type (a dropped one included: its cells are ignored). */
static bool scalar_column(struct builder *b, const uint8_t *p, size_t n)
{
	const uint8_t *q = p;
	struct pv k;
	const struct column *c;
	if (key_decode_pv(&q, p + n, &k, b->a) != 0)
		return false;
	if (k.type == PV_SYSTEM_COLUMN_ID)
		return k.v.i64 == LIVENESS_COLUMN_ID;
	if (k.type != PV_COLUMN_ID || b->schema == NULL)
		return false;
	c = schema_find_id(b->schema, (int32_t)k.v.i64);
	return c == NULL || !col_type_is_collection((enum col_type)c->type);
}

static int feed(struct builder *b, const uint8_t *key, size_t klen, const uint8_t *val,
		size_t vlen)
{
	size_t bounds[MAX_DEPTH + 1];
	size_t plen, nd = 0;
	struct docht d;
	struct docvalue v;
	int rv;

	b->ignored = false;
	b->newer_plen = 0;
	keys_fed++;
	if (key_split_ht(key, klen, &plen, &d) != 0)
		return builder_corrupt(b, "bad hybrid time suffix");
	if (d.ht > b->read_ht) {
		b->newer_plen = plen;
		return 0;
	}
	if (b->top_decided && plen == b->path.len && memcmp(key, b->path.data, plen) == 0) {
		b->ignored = true;
		return 0; /* an older version of a decided path */
	}
	if (plen < b->root_len || memcmp(key, b->path.data, b->root_len) != 0)
		return builder_corrupt(b, "key outside the document");

	if (plen == b->root_len && !b->vready) {
		/* A root entry is never hidden: decode it now, to keep packed
		 * rows and walk on to older root versions. */
		if (value_decode(val, vlen, &v) != 0)
			return builder_corrupt(b, "bad value");
		if (v.merge_flags != 0) {
			/* A TTL merge record: the newest one waits for the
			 * value it applies to (design note). */
			if (!b->merge_pending) {
				b->merge_pending = true;
				b->merge_has_ttl = v.has_ttl;
				b->merge_ttl_ms = v.ttl_ms;
				b->merge_ht = d.ht;
			}
			return 0;
		}
		if (b->merge_pending) {
			b->merge_pending = false;
			if (v.kind != VAL_TOMBSTONE && v.kind != VAL_PACKED_ROW) {
				v.has_ttl = b->merge_has_ttl;
				v.ttl_ms = b->merge_ttl_ms;
				b->ttl_from = b->merge_ht;
				if (!v.has_ttl)
					b->ttl_from = 0;
			}
		}
		if (v.kind == VAL_PACKED_ROW) {
			if (b->nprows > 0 && b->newest_full)
				return 0; /* adds no cell: see the design note */
			keep_packed(b, d, &v);
			if (b->nprows == 1 && (rv = note_newest_packed(b, &v)) != 0)
				return rv;
			return 0;
		}
		bounds[0] = b->root_len;
		rv = decide(b, key, plen, bounds, 0, d, &v, NULL, 0);
		b->ttl_from = 0;
		return rv;
	}

	bounds[0] = b->root_len;
	for (const uint8_t *p = key + b->root_len, *end = key + plen; p < end;) {
		if (nd == MAX_DEPTH)
			return builder_corrupt(b, "document nested too deeply");
		if (key_skip_pv(&p, end) != 0)
			return builder_corrupt(b, "bad subkey");
		bounds[++nd] = (size_t)(p - key);
	}
	if (nd > 0 && b->root_skipped && !scalar_column(b, key + bounds[0], bounds[1] - bounds[0])) {
		b->reread = true;
		return 0;
	}
	if (nd > 0) {
		if (!b->vready && (rv = make_vcells(b)) != 0)
			return rv;
		if (b->vnext < b->nvcells) {
			if ((rv = feed_vcells(b, key + bounds[0], bounds[1] - bounds[0], nd, d)) != 0)
				return rv;
			if (b->top_decided && plen == b->path.len &&
			    memcmp(key, b->path.data, plen) == 0)
				return 0; /* older than the packed row's cell */
		}
	}
	return decide(b, key, plen, bounds, nd, d, NULL, val, vlen);
}

/* Drops implicit containers without children; returns n or NULL. */
static struct docnode *prune(struct docnode *n)
{
	struct docnode **link = &n->children;
	n->n_children = 0;
	n->last_ = NULL;
	while (*link != NULL) {
		struct docnode *c = prune(*link);
		if (c == NULL) {
			*link = (*link)->next;
			continue;
		}
		n->n_children++;
		n->last_ = c;
		if (!n->has_marker && n->kind != VAL_PRIMITIVE &&
		    docht_compare(c->write_time, n->write_time) > 0)
			n->write_time = c->write_time;
		link = &c->next;
	}
	if (n->kind != VAL_PRIMITIVE && !n->has_marker && n->n_children == 0)
		return NULL;
	return n;
}

int builder_finish(struct builder *b, struct docnode **out)
{
	int rv;
	*out = NULL;
	if (!b->vready && (rv = make_vcells(b)) != 0)
		return rv;
	if ((rv = feed_vcells(b, NULL, 0, 0, (struct docht){0, 0})) != 0)
		return rv;
	*out = b->root != NULL ? prune(b->root) : NULL;
	return 0;
}

/* Drops the cells of dropped columns from a row's root (their packed slots

 * never make it there); returns root, or NULL when nothing is left. */
struct docnode *builder_drop_dropped(const struct schema *s, struct docnode *root)
{
	struct docnode **link;
	if (root == NULL || s == NULL || !schema_has_dropped(s) || root->kind == VAL_PRIMITIVE)
		return root;
	root->n_children = 0;
	root->last_ = NULL;
	if (!root->has_marker)
		memset(&root->write_time, 0, sizeof root->write_time);
	for (link = &root->children; *link != NULL;) {
		struct docnode *c = *link;
		if (c->key.type == PV_COLUMN_ID && c->key.v.i64 >= INT32_MIN &&
		    c->key.v.i64 <= INT32_MAX && schema_id_dropped(s, (int32_t)c->key.v.i64)) {
			*link = c->next;
			continue;
		}
		root->n_children++;
		root->last_ = c;
		if (!root->has_marker && docht_compare(c->write_time, root->write_time) > 0)
			root->write_time = c->write_time;
		link = &c->next;
	}
	if (!root->has_marker && root->n_children == 0)
		return NULL;
	return root;
}

/* Seeks past every version of the path key[0..plen) (path '#' ...). */
static void seek_past_versions(struct builder *b, struct store_iter *it, const uint8_t *key,
			       size_t plen)
{
	buf_reset(&b->seek);
	buf_append(&b->seek, key, plen);
	buf_push(&b->seek, KT_HYBRID_TIME + 1);
	store_iter_seek(it, b->seek.data, b->seek.len);
}

/* Older versions of a decided path stepped over before seeking past the
 * rest (a seek costs a few steps). */
#define IGNORED_STEPS 4

/* Feeds every pair whose key starts with prefix (exact_path: whose path is
 * exactly prefix, i.e. prefix '#' ...), starting at the iterator position.
 * Stops early, with b->reread set, when a get_doc shortcut proved wrong. */
int builder_feed_prefix(struct builder *b, struct store_iter *it, const uint8_t *prefix,
			size_t plen, bool exact_path)
{
	unsigned ignored = 0, newer = 0;
	while (store_iter_valid(it)) {
		size_t klen, vlen;
		const uint8_t *k = store_iter_key(it, &klen);
		const uint8_t *v;
		int rv;
		if (klen < plen || memcmp(k, prefix, plen) != 0)
			break;
		if (exact_path && (klen == plen || k[plen] != KT_HYBRID_TIME))
			break;
		v = store_iter_value(it, &vlen);
		if ((rv = feed(b, k, klen, v, vlen)) != 0)
			return rv;
		if (b->reread)
			return 0;
		if (b->skip_root) {
			b->skip_root = false;
			seek_past_versions(b, it, k, b->root_len);
			continue;
		}
		if (b->ignored && shortcuts && ++ignored >= IGNORED_STEPS) {
			ignored = 0;
			seek_past_versions(b, it, k, b->path.len);
			continue;
		}
		if (!b->ignored)
			ignored = 0;
		if (b->newer_plen != 0 && shortcuts) {
			/* b->seek holds the path of the previous newer version. */
			if (newer > 0 && b->seek.len == b->newer_plen &&
			    memcmp(b->seek.data, k, b->newer_plen) == 0) {
				newer++;
			} else {
				buf_reset(&b->seek);
				buf_append(&b->seek, k, b->newer_plen);
				newer = 1;
			}
			if (newer >= IGNORED_STEPS) {
				newer = 0;
				buf_push(&b->seek, KT_HYBRID_TIME);
				docht_append(&b->seek, (struct docht){b->read_ht, UINT32_MAX});
				store_iter_seek(it, b->seek.data, b->seek.len);
				continue;
			}
		} else {
			newer = 0;
		}
		store_iter_next(it);
	}
	return store_iter_status(it, b->errmsg);
}
