/* Rebuilding documents from versions (docdb-format.md §6.2).
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
 * A sub-document read feeds the builder the versions of each ancestor path
 * first (they may hide or expire the sub-document), then the subtree.
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
 *     a row, feed_prefix seeks past all of them (path + '#'+1);
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
 *     read again without the shortcut (reread). */
#include "docdb/ttl.h"
#include "docdb/reader.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/mem.h"
#include "docdb/docwrite.h"
#include "docdb/packed.h"

#define MAX_DEPTH DOCDB_MAX_SUBKEYS

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

struct frame {
	size_t path_len;
	struct docht overwrite;
	struct ttl_scope exp; /* the explicit TTL inherited by descendants */
	struct docnode *node;
};

/* A packed row kept from the root's versions; its payload is in pbytes. */
struct prow {
	struct docht d;
	bool has_ttl;
	int64_t ttl_ms;
	size_t off, len;
};

/* One column (or the liveness) of a packed row, to be fed as a stored pair
 * with the subkey sub at DocHT d. */
#define VSUB_MAX 11 /* 'K' + svarint */
struct vcell {
	struct docht d;
	struct docvalue v;
	uint8_t sub[VSUB_MAX];
	uint8_t sub_len;
};

struct builder {
	struct arena *a;
	char *errmsg;
	uint64_t read_ht;
	int64_t default_ttl_ms;
	const struct schema *schema; /* packings; NULL: packed rows are an error */
	size_t root_len;
	struct frame base; /* context above the root: nothing hidden, no TTL */
	struct frame st[MAX_DEPTH + 1];
	size_t depth;
	struct buf path; /* path of the last decided entry */
	bool top_decided;
	struct docnode *root;
	/* Packed rows of the current document (see the design note). */
	struct prow *prows;
	size_t nprows, prows_cap;
	struct buf pbytes;
	struct vcell *vcells;
	size_t nvcells, vnext, vcells_cap;
	bool vready; /* prows turned into vcells */
	struct buf vkey; /* scratch: a virtual cell's subkey or key */
	/* Hot rows (see the design note). */
	bool ignored;      /* the last key fed was an older version of a decided path */
	size_t newer_plen; /* ... was newer than the read: its path length, else 0 */
	bool newest_full;  /* the kept packed row is of the current schema version */
	bool root_skip_ok; /* get_doc: may skip older root versions after it */
	bool skip_root;    /* feed asks feed_prefix to seek past the root's versions */
	bool root_skipped; /* ... and it did: subkeys must be scalar columns */
	bool reread;       /* they were not: read again without the shortcut */
	struct buf seek;   /* scratch: a seek target */
};

const struct docnode *docnode_child(const struct docnode *n, const struct pv *key)
{
	if (n == NULL)
		return NULL;
	for (const struct docnode *c = n->children; c != NULL; c = c->next)
		if (c->key.type == key->type && pv_compare(&c->key, key) == 0)
			return c;
	return NULL;
}

static void builder_init(struct builder *b, struct arena *a, uint64_t read_ht,
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

static void builder_start(struct builder *b, const uint8_t *root, size_t root_len)
{
	b->root_len = root_len;
	memset(&b->st[0], 0, sizeof b->st[0]);
	b->st[0].path_len = root_len;
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
}

static void builder_free(struct builder *b)
{
	buf_free(&b->path);
	buf_free(&b->pbytes);
	buf_free(&b->vkey);
	buf_free(&b->seek);
	free(b->prows);
	free(b->vcells);
}

static int corrupt(struct builder *b, const char *what)
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
	if (b->st[d].node != NULL) {
		*out = b->st[d].node;
		return 0;
	}
	if (d > 0 && (rv = ensure_node(b, d - 1, key, bounds, &parent)) != 0)
		return rv;
	n = new_node(b);
	if (d > 0) {
		const uint8_t *p = key + bounds[d - 1];
		if (key_decode_pv(&p, key + bounds[d], &n->key, b->a) != 0)
			return corrupt(b, "bad subkey");
		append_child(parent, n);
	} else {
		b->root = n;
	}
	b->st[d].node = n;
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
	struct frame *f;
	const struct frame *par;
	struct docnode *n;
	int rv;

	/* Pop frames that are not prefixes of this path. */
	c = 1;
	while (c < b->depth && c <= nd && b->st[c].path_len == bounds[c] &&
	       memcmp(key, b->path.data, bounds[c]) == 0)
		c++;
	b->depth = c;
	/* Push inherited frames down to this path's depth. */
	while (b->depth <= nd) {
		struct frame *nf = &b->st[b->depth];
		*nf = b->st[b->depth - 1];
		nf->path_len = bounds[b->depth];
		nf->node = NULL;
		b->depth++;
	}
	b->depth = nd + 1;
	f = &b->st[nd];
	par = nd > 0 ? &b->st[nd - 1] : &b->base;
	buf_reset(&b->path);
	buf_append(&b->path, key, plen);
	b->top_decided = true;

	if (docht_compare(d, par->overwrite) <= 0)
		return 0; /* hidden by a newer write above it */
	if (dv != NULL)
		v = *dv;
	else if (value_decode(val, vlen, &v) != 0)
		return corrupt(b, "bad value");

	f->overwrite = d;
	f->exp = ttl_scope_below(par->exp, v.has_ttl, v.ttl_ms, d.ht);
	if (v.kind == VAL_TOMBSTONE || expired(b, &f->exp, d.ht))
		return 0;
	if (v.kind == VAL_PACKED_ROW)
		return corrupt(b, "packed row below the DocKey");

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
				return corrupt(b, "bad column in a packed row");
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
		return corrupt(b, "bad hybrid time suffix");
	if (d.ht > b->read_ht) {
		b->newer_plen = plen;
		return 0;
	}
	if (b->top_decided && plen == b->path.len && memcmp(key, b->path.data, plen) == 0) {
		b->ignored = true;
		return 0; /* an older version of a decided path */
	}
	if (plen < b->root_len || memcmp(key, b->path.data, b->root_len) != 0)
		return corrupt(b, "key outside the document");

	if (plen == b->root_len && !b->vready) {
		/* A root entry is never hidden: decode it now, to keep packed
		 * rows and walk on to older root versions. */
		if (value_decode(val, vlen, &v) != 0)
			return corrupt(b, "bad value");
		if (v.kind == VAL_PACKED_ROW) {
			if (b->nprows > 0 && b->newest_full)
				return 0; /* adds no cell: see the design note */
			keep_packed(b, d, &v);
			if (b->nprows == 1 && (rv = note_newest_packed(b, &v)) != 0)
				return rv;
			return 0;
		}
		bounds[0] = b->root_len;
		return decide(b, key, plen, bounds, 0, d, &v, NULL, 0);
	}

	bounds[0] = b->root_len;
	for (const uint8_t *p = key + b->root_len, *end = key + plen; p < end;) {
		if (nd == MAX_DEPTH)
			return corrupt(b, "document nested too deeply");
		if (key_skip_pv(&p, end) != 0)
			return corrupt(b, "bad subkey");
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

static int builder_finish(struct builder *b, struct docnode **out)
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
static struct docnode *drop_dropped(const struct schema *s, struct docnode *root)
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
static int feed_prefix(struct builder *b, struct store_iter *it, const uint8_t *prefix,
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
		   int64_t default_ttl_ms, struct arena *a, const struct docnode **out, char *errmsg)
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
	b.root_skip_ok = nsub == 0 && schema != NULL;
	for (;;) {
		path.len = dockey_len;
		builder_start(&b, dockey, dockey_len);
		/* Versions of each ancestor path, then the subtree. */
		for (size_t i = 0; i <= nsub; i++) {
			bool last = i == nsub;
			store_iter_seek(it, path.data, path.len);
			if ((rv = feed_prefix(&b, it, path.data, path.len, !last)) != 0)
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
	n = drop_dropped(schema, root);
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
	return get_doc(s, NULL, dockey, dockey_len, subkeys, nsub, read_ht, default_ttl_ms, a, out,
		       errmsg);
}

int reader_get_table_doc(struct store *s, const struct schema *schema, const uint8_t *dockey,
			 size_t dockey_len, const struct pv *subkeys, size_t nsub,
			 uint64_t read_ht, struct arena *a, const struct docnode **out,
			 char *errmsg)
{
	return get_doc(s, schema, dockey, dockey_len, subkeys, nsub, read_ht,
		       schema->default_ttl_ms, a, out, errmsg);
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
		return corrupt(b, "key without a DocKey");
	buf_reset(cur);
	buf_append(cur, k, dl);
	builder_start(b, cur->data, cur->len);
	if ((rv = feed_prefix(b, it, cur->data, cur->len, false)) != 0)
		return rv;
	if ((rv = builder_finish(b, root)) != 0)
		return rv;
	*root = drop_dropped(b->schema, *root);
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
				rv = corrupt(&b, "key without a DocKey");
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
