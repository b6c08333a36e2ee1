/* Reads through a txn's overlay, writes into its batch and overlay: the
 * yv_* and yw_* halves of yedis_int.h.
 *
 * Design. A read answers what the store holds at the txn's hybrid time
 * (docdb/reader.h: expiry, tombstones and TTL merge records applied) as
 * changed by the txn's own earlier writes, which are not in the store yet
 * (the caller applies the batch after the last command). txn.h describes
 * the overlay kept for that. The rules, the same the reader applies once
 * the batch is in the store at the txn's hybrid time:
 *
 *   - a root written in the txn (yw_root, yw_delete_key) hides every
 *     stored version of the key, its children included, and the
 *     children the txn wrote before it;
 *   - a TTL merge record (yw_expire) changes the expiry of whatever root
 *     is there, stored or written, counted from the txn's hybrid time;
 *   - a child written in the txn replaces the stored child at that exact
 *     path (a tombstone hides it); the later of two writes wins.
 *
 * Everything the txn writes counts from its hybrid time, which is also
 * "now", so nothing it writes is expired within it.
 *
 * yv_children merges the stored children (reader_children: one child
 * subtree at a time, so a command that stops early, a pop or an LINDEX,
 * reads only what it visits) with the overlay's children under the same
 * prefix, both in encoded key order, forward or reverse. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/mem.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "redis/slot.h"
#include "yedis/txn.h"
#include "yedis/yedis_int.h"

/* ---- the txn's context ---- */

struct arena *yv_arena(struct yedis_txn *t)
{
	return &t->arena;
}

int64_t yv_now_ms(const struct yedis_txn *t)
{
	return (int64_t)(ht_physical(t->o.ht) / 1000);
}

uint64_t yv_rand(struct yedis_txn *t)
{
	/* splitmix64 */
	uint64_t z = (t->rng += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

bool yv_writable(const struct yedis_txn *t)
{
	return t->o.batch != NULL;
}

void yedis_dockey(struct buf *out, const void *key, size_t n)
{
	struct pv k = pv_strn(key, n);
	struct dockey dk = {
		.has_hash = true,
		.hash = redis_slot_partition(redis_key_slot(key, n)),
		.n_hashed = 1,
		.hashed = &k,
	};
	dockey_append(out, &dk);
}

/* ---- the overlay ---- */

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

static void grow_table(struct yedis_txn *t)
{
	size_t cap = t->tab_cap ? t->tab_cap * 2 : 16;
	struct okey **tab = xzalloc(cap * sizeof *tab);
	for (size_t i = 0; i < t->tab_cap; i++) {
		struct okey *k = t->tab[i];
		size_t j;
		if (k == NULL)
			continue;
		for (j = k->hash & (cap - 1); tab[j] != NULL; j = (j + 1) & (cap - 1))
			;
		tab[j] = k;
	}
	free(t->tab);
	t->tab = tab;
	t->tab_cap = cap;
}

/* The okey of DocKey dk, or NULL (create: a new empty one). */
static struct okey *okey_find(struct yedis_txn *t, const uint8_t *dk, size_t dlen, bool create)
{
	uint64_t h = hash_bytes(dk, dlen);
	size_t j;
	struct okey *k;
	if (t->tab_cap == 0) {
		if (!create)
			return NULL;
		grow_table(t);
	}
	for (j = h & (t->tab_cap - 1); (k = t->tab[j]) != NULL; j = (j + 1) & (t->tab_cap - 1))
		if (k->hash == h && k->dlen == dlen && memcmp(k->dockey, dk, dlen) == 0)
			return k;
	if (!create)
		return NULL;
	if (2 * (t->nkeys + 1) > t->tab_cap) {
		grow_table(t);
		for (j = h & (t->tab_cap - 1); t->tab[j] != NULL; j = (j + 1) & (t->tab_cap - 1))
			;
	}
	k = arena_alloc(&t->arena, sizeof *k);
	memset(k, 0, sizeof *k);
	k->dockey = arena_dup(&t->arena, dk, dlen);
	k->dlen = dlen;
	k->hash = h;
	k->sorted = true;
	t->tab[j] = k;
	t->nkeys++;
	return k;
}

void view_free(struct yedis_txn *t)
{
	for (size_t i = 0; i < t->tab_cap; i++)
		if (t->tab[i] != NULL) {
			free(t->tab[i]->kids);
			free(t->tab[i]->ix);
			free(t->tab[i]->pairs);
		}
	free(t->tab);
	t->tab = NULL;
	t->tab_cap = t->nkeys = 0;
	free(t->hidden);
	t->hidden = NULL;
	t->nhidden = t->hidden_cap = 0;
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c != 0)
		return c;
	return an < bn ? -1 : an > bn;
}

static int cmp_kid(const void *x, const void *y)
{
	const struct okid *a = x, *b = y;
	int c = cmp_bytes(a->path, a->plen, b->path, b->plen);
	if (c != 0)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Sorts k's children by path (each path is there once: put_child
 * replaces). Only range reads need the order. */
static void kids_normalize(struct okey *k)
{
	if (k->sorted)
		return;
	qsort(k->kids, k->nkids, sizeof *k->kids, cmp_kid);
	k->sorted = true;
	k->ix_valid = false;
}

static size_t ix_slot(const struct okey *k, const uint8_t *path, size_t plen)
{
	size_t j = hash_bytes(path, plen) & (k->ix_cap - 1);
	for (; k->ix[j] != 0; j = (j + 1) & (k->ix_cap - 1)) {
		const struct okid *o = &k->kids[k->ix[j] - 1];
		if (cmp_bytes(o->path, o->plen, path, plen) == 0)
			break;
	}
	return j;
}

/* Makes the index cover k->kids[0..nkids) with room for one more. */
static void ix_ready(struct okey *k)
{
	if (k->ix_valid && 2 * (k->nkids + 1) <= k->ix_cap)
		return;
	while (2 * (k->nkids + 1) > k->ix_cap)
		k->ix_cap = k->ix_cap ? k->ix_cap * 2 : 16;
	free(k->ix);
	k->ix = xzalloc(k->ix_cap * sizeof *k->ix);
	for (size_t i = 0; i < k->nkids; i++)
		k->ix[ix_slot(k, k->kids[i].path, k->kids[i].plen)] = i + 1;
	k->ix_valid = true;
}

/* The overlay's child at the encoded path, or NULL. */
static struct okid *kid_find(struct okey *k, const uint8_t *path, size_t plen)
{
	size_t j;
	if (k->nkids == 0)
		return NULL;
	ix_ready(k);
	j = ix_slot(k, path, plen);
	return k->ix[j] != 0 ? &k->kids[k->ix[j] - 1] : NULL;
}

static void encode_subs(struct buf *out, const struct pv *sub, size_t nsub)
{
	for (size_t i = 0; i < nsub; i++)
		key_append_pv(out, &sub[i]);
}

/* t->kbuf = the key's DocKey; returns its length. */
static size_t key_dockey(struct yedis_txn *t, const struct resp_arg *key)
{
	buf_reset(&t->kbuf);
	yedis_dockey(&t->kbuf, key->p, key->n);
	return t->kbuf.len;
}

/* ---- reads ---- */

/* The Redis type of a root value of kind kind (a primitive of type pvtype). */
static int type_of_kind(uint8_t kind, uint8_t pvtype, int *type)
{
	switch (kind) {
	case VAL_PRIMITIVE:
		if (pvtype != PV_STRING)
			return -1;
		*type = YT_STRING;
		return 0;
	case VAL_OBJECT:
		*type = YT_HASH;
		return 0;
	case VAL_REDIS_SET:
		*type = YT_SET;
		return 0;
	case VAL_REDIS_SORTED_SET:
		*type = YT_ZSET;
		return 0;
	case VAL_REDIS_LIST:
		*type = YT_LIST;
		return 0;
	case VAL_REDIS_TS:
		*type = YT_TS;
		return 0;
	default:
		return -1;
	}
}

static uint8_t kind_of_type(int type)
{
	switch (type) {
	case YT_HASH:
		return VAL_OBJECT;
	case YT_SET:
		return VAL_REDIS_SET;
	case YT_ZSET:
		return VAL_REDIS_SORTED_SET;
	case YT_LIST:
		return VAL_REDIS_LIST;
	case YT_TS:
		return VAL_REDIS_TS;
	default:
		return VAL_PRIMITIVE;
	}
}

/* The absolute expiry of a TTL counted from ht, saturating (a stored TTL
 * near INT64_MAX means "never" in practice, not an overflow). */
static int64_t at_ms(uint64_t ht, int64_t ttl_ms)
{
	int64_t now = (int64_t)(ht_physical(ht) / 1000);
	return ttl_ms > INT64_MAX - now ? INT64_MAX : now + ttl_ms;
}

int yv_root(struct yedis_txn *t, const struct resp_arg *key, struct yroot *out, char *errmsg)
{
	const struct docnode *n;
	struct okey *k;
	size_t dl = key_dockey(t, key);
	uint64_t written = t->o.ht; /* the root value's write time */
	int rv;

	memset(out, 0, sizeof *out);
	k = okey_find(t, t->kbuf.data, dl, false);
	if (k != NULL && k->root_written) {
		if (k->root_deleted)
			return 0;
		if (type_of_kind(k->root.kind, k->root.prim.type, &out->type) != 0)
			PANIC("yedis: the overlay holds a root of kind %d", k->root.kind);
		out->str = k->root.prim;
		if (k->root.has_ttl && k->root.ttl_ms > 0) {
			out->has_expiry = true;
			out->expire_at_ms = at_ms(t->o.ht, k->root.ttl_ms);
		} else if (!k->root.has_ttl && t->o.default_ttl_ms > 0) {
			out->has_expiry = true;
			out->expire_at_ms = at_ms(t->o.ht, t->o.default_ttl_ms);
		}
	} else {
		if (t->o.batch == NULL && t->memo_key.len == dl &&
		    memcmp(t->memo_key.data, t->kbuf.data, dl) == 0) {
			n = t->memo_node;
		} else {
			if ((rv = reader_get_node(t->o.store, t->kbuf.data, dl, NULL, 0, t->o.ht,
						  t->o.default_ttl_ms, &t->arena, &n, errmsg)) != 0)
				return rv;
			if (t->o.batch == NULL) {
				buf_reset(&t->memo_key);
				buf_append(&t->memo_key, t->kbuf.data, dl);
				t->memo_node = n;
			}
		}
		if (n == NULL)
			return 0;
		if (type_of_kind(n->kind, n->value.type, &out->type) != 0)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "redis key '%.*s': its root is no Redis value",
				       (int)key->n > 64 ? 64 : (int)key->n, key->p);
		out->str = n->value;
		written = n->write_time.ht;
		if (n->has_ttl && n->ttl_ms > 0) {
			out->has_expiry = true;
			out->expire_at_ms = at_ms(n->ttl_from, n->ttl_ms);
		} else if (!n->has_ttl && t->o.default_ttl_ms > 0) {
			out->has_expiry = true;
			out->expire_at_ms = at_ms(n->write_time.ht, t->o.default_ttl_ms);
		}
	}
	if (k != NULL && k->merged) {
		/* As the reader folds the merge record: its TTL from the txn's
		 * time; PERSIST leaves the table default from the write time. */
		out->has_expiry = k->merge_has_ttl || t->o.default_ttl_ms > 0;
		out->expire_at_ms = k->merge_has_ttl  ? at_ms(t->o.ht, k->merge_ttl_ms)
				    : out->has_expiry ? at_ms(written, t->o.default_ttl_ms)
						      : 0;
	}
	return 0;
}

static bool live_primitive(const struct docvalue *v)
{
	return v->kind == VAL_PRIMITIVE;
}

int yv_get(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub,
	   struct pv *out, bool *found, char *errmsg)
{
	const struct docnode *n;
	struct okey *k;
	size_t dl = key_dockey(t, key);
	int rv;

	*found = false;
	*out = pv_null();
	if (nsub == 0) {
		struct yroot r;
		if ((rv = yv_root(t, key, &r, errmsg)) != 0)
			return rv;
		if (r.type == YT_STRING) {
			*out = r.str;
			*found = true;
		}
		return 0;
	}
	k = okey_find(t, t->kbuf.data, dl, false);
	if (k != NULL) {
		const struct okid *c;
		size_t pl;
		encode_subs(&t->kbuf, sub, nsub);
		pl = t->kbuf.len - dl;
		c = kid_find(k, t->kbuf.data + dl, pl);
		t->kbuf.len = dl;
		if (c != NULL) {
			struct docvalue v;
			if (value_decode(c->val, c->vlen, &v) != 0)
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "yedis: bad overlay value");
			if (live_primitive(&v)) {
				*out = v.prim;
				*found = true;
			}
			return 0;
		}
		if (k->root_written)
			return 0;
	}
	if ((rv = reader_get_doc(t->o.store, t->kbuf.data, dl, sub, nsub, t->o.ht,
				 t->o.default_ttl_ms, &t->arena, &n, errmsg)) != 0)
		return rv;
	if (n != NULL && n->kind == VAL_PRIMITIVE) {
		*out = n->value;
		*found = true;
	}
	return 0;
}

/* One child for yv_children: its subkeys after the prefix, their encoding
 * and its value. */
struct child {
	const struct pv *sub;
	size_t nsub;
	const uint8_t *enc;
	size_t elen;
	struct pv value;
	bool dead; /* an overlay tombstone */
};

struct childv {
	struct child *v;
	size_t n, cap;
};

static void childv_push(struct childv *cv, const struct child *c)
{
	cv->v = xgrow(cv->v, &cv->cap, cv->n + 1, sizeof *cv->v, 16);
	cv->v[cv->n++] = *c;
}

/* The overlay's children below the encoded prefix (pre[0..plen) after the
 * DocKey), in path order. */
static int overlay_children(struct yedis_txn *t, struct okey *k, const uint8_t *pre, size_t plen,
			    struct childv *out, char *errmsg)
{
	kids_normalize(k);
	for (size_t i = 0; i < k->nkids; i++) {
		const struct okid *o = &k->kids[i];
		struct child ch;
		struct docvalue v;
		struct pv sub[DOCDB_MAX_SUBKEYS];
		const uint8_t *p, *end;
		if (o->plen <= plen || memcmp(o->path, pre, plen) != 0)
			continue;
		memset(&ch, 0, sizeof ch);
		p = o->path + plen;
		end = o->path + o->plen;
		while (p < end) {
			if (ch.nsub == DOCDB_MAX_SUBKEYS ||
			    key_decode_pv(&p, end, &sub[ch.nsub], &t->arena) != 0)
				return err_set(errmsg, DOCRAFT_ECORRUPT, "yedis: bad overlay path");
			ch.nsub++;
		}
		if (value_decode(o->val, o->vlen, &v) != 0)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "yedis: bad overlay value");
		ch.sub = arena_dup(&t->arena, sub, ch.nsub * sizeof *sub);
		ch.enc = o->path + plen;
		ch.elen = o->plen - plen;
		ch.dead = !live_primitive(&v);
		ch.value = v.prim;
		childv_push(out, &ch);
	}
	return 0;
}

/* Whether child c lies at or after start (forward) / at or before it
 * (reverse: a child below start counts as at it). */
static bool from_start(const struct child *c, const uint8_t *st, size_t sl, bool reverse)
{
	int cmp;
	if (st == NULL)
		return true;
	cmp = cmp_bytes(c->enc, c->elen, st, sl);
	if (!reverse)
		return cmp >= 0;
	return cmp <= 0 || (c->elen > sl && memcmp(c->enc, st, sl) == 0);
}

/* The merge of reader_children's stored leaves with the overlay's. */
struct merge {
	struct childv ov; /* the overlay's children below the prefix, in path order */
	size_t j;         /* the next one due (forward: from the front; reverse:
			     j counts down, ov.v[j - 1] next) */
	bool reverse;
	const uint8_t *st;
	size_t sl;
	yv_child_fn fn;
	void *arg;
	bool stopped;
};

static int emit(struct merge *m, const struct child *c)
{
	if (c->dead || !from_start(c, m->st, m->sl, m->reverse))
		return 0;
	if (m->fn(m->arg, c->sub, c->nsub, &c->value) != 0) {
		m->stopped = true;
		return 1;
	}
	return 0;
}

/* Emits the overlay's children before path (NULL: all that are left);
 * *same: the overlay has path itself (emitted in its place). */
static int emit_overlay_before(struct merge *m, const uint8_t *path, size_t plen, bool *same)
{
	*same = false;
	for (;;) {
		const struct child *c;
		int cmp;
		if (m->reverse ? m->j == 0 : m->j == m->ov.n)
			return 0;
		c = &m->ov.v[m->reverse ? m->j - 1 : m->j];
		cmp = path == NULL ? -1 : cmp_bytes(c->enc, c->elen, path, plen);
		if (m->reverse && path != NULL)
			cmp = -cmp;
		if (cmp > 0)
			return 0;
		if (m->reverse)
			m->j--;
		else
			m->j++;
		if (cmp == 0)
			*same = true;
		if (emit(m, c) != 0)
			return 1;
		if (cmp == 0)
			return 0;
	}
}

static int stored_leaf(void *arg, const uint8_t *path, size_t plen, const struct pv *sub,
		       size_t nsub, const struct pv *value)
{
	struct merge *m = arg;
	struct child c;
	bool same;
	if (emit_overlay_before(m, path, plen, &same) != 0)
		return 1;
	if (same)
		return 0;
	memset(&c, 0, sizeof c);
	c.sub = sub;
	c.nsub = nsub;
	c.enc = path;
	c.elen = plen;
	c.value = *value;
	return emit(m, &c);
}

int yv_children(struct yedis_txn *t, const struct resp_arg *key, const struct pv *prefix,
		size_t nprefix, bool reverse, const struct pv *start, size_t nstart, yv_child_fn fn,
		void *arg, char *errmsg)
{
	struct merge m = {.reverse = reverse, .fn = fn, .arg = arg};
	const uint8_t *pre;
	size_t dl = key_dockey(t, key), plen;
	struct okey *k = okey_find(t, t->kbuf.data, dl, false);
	const uint8_t *dk = arena_dup(&t->arena, t->kbuf.data, dl);
	bool same;
	int rv = 0;

	buf_reset(&t->vbuf);
	encode_subs(&t->vbuf, prefix, nprefix);
	plen = t->vbuf.len;
	pre = arena_dup(&t->arena, t->vbuf.data, plen);
	if (start != NULL) {
		buf_reset(&t->vbuf);
		encode_subs(&t->vbuf, start, nstart);
		m.sl = t->vbuf.len;
		m.st = arena_dup(&t->arena, t->vbuf.data, m.sl);
	}
	if (k != NULL && (rv = overlay_children(t, k, pre, plen, &m.ov, errmsg)) != 0)
		goto out;
	m.j = reverse ? m.ov.n : 0;
	if (k == NULL || !k->root_written) {
		if ((rv = reader_children(t->o.store, dk, dl, prefix, nprefix, t->o.ht,
					  t->o.default_ttl_ms, reverse, m.st, m.sl, &t->arena,
					  stored_leaf, &m, errmsg)) != 0)
			goto out;
	}
	if (!m.stopped)
		emit_overlay_before(&m, NULL, 0, &same);
out:
	free(m.ov.v);
	return rv;
}

/* ---- writes ---- */

/* Appends the pair (key, v) of okey k to the batch. */
static void put_pair(struct yedis_txn *t, struct okey *k, const uint8_t *key, size_t klen,
		     const struct docvalue *v)
{
	buf_reset(&t->vbuf);
	value_append(&t->vbuf, v);
	PRE(t->o.batch != NULL);
	k->pairs = xgrow(k->pairs, &k->pairs_cap, k->npairs + 1, sizeof *k->pairs, 4);
	k->pairs[k->npairs++] = t->o.batch->data.len;
	batch_put(t->o.batch, key, klen, t->vbuf.data, t->vbuf.len);
}

/* A new root of k is being written: every pair the txn wrote for k before
 * is hidden by it (the overlay's first rule) from every reader, so it need
 * not reach the store (yedis_txn_seal): a hot key SET by many clients in
 * one entry costs one pair, not one per SET. */
static void hide_pairs(struct yedis_txn *t, struct okey *k)
{
	if (k->npairs == 0)
		return;
	t->hidden = xgrow(t->hidden, &t->hidden_cap, t->nhidden + k->npairs, sizeof *t->hidden, 16);
	memcpy(t->hidden + t->nhidden, k->pairs, k->npairs * sizeof *k->pairs);
	t->nhidden += k->npairs;
	k->npairs = 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

void yedis_txn_seal(struct yedis_txn *t)
{
	struct batch *b = t->o.batch;
	struct buf out = BUF_INIT;
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl, h = 0;
	uint32_t count = 0;

	if (b == NULL || t->nhidden == 0)
		return;
	qsort(t->hidden, t->nhidden, sizeof *t->hidden, cmp_size);
	batch_iter_init(&it, b->data.data, b->data.len);
	for (;;) {
		const uint8_t *start = it.p;
		size_t at = (size_t)(start - b->data.data);
		int rv = batch_next(&it, &k, &kl, &v, &vl);
		ASSERT(rv >= 0); /* built here */
		if (rv == 0)
			break;
		while (h < t->nhidden && t->hidden[h] < at)
			h++;
		if (h < t->nhidden && t->hidden[h] == at)
			continue;
		buf_append(&out, start, (size_t)(it.p - start));
		count++;
	}
	buf_free(&b->data);
	b->data = out;
	b->count = count;
	t->nhidden = 0;
	for (size_t i = 0; i < t->tab_cap; i++)
		if (t->tab[i] != NULL)
			t->tab[i]->npairs = 0; /* offsets into the old bytes */
}

static void set_ttl(struct docvalue *v, int64_t ttl_ms)
{
	PRE(ttl_ms == YEDIS_NO_TTL || ttl_ms > 0);
	if (ttl_ms > 0) {
		v->has_ttl = true;
		v->ttl_ms = ttl_ms;
	}
}

void yw_root(struct yedis_txn *t, const struct resp_arg *key, int type, const struct pv *str,
	     int64_t ttl_ms)
{
	size_t dl = key_dockey(t, key);
	struct okey *k = okey_find(t, t->kbuf.data, dl, true);
	struct docvalue v;

	PRE(type != YT_NONE);
	if (type == YT_STRING) {
		struct pv s = *str;
		PRE(str->type == PV_STRING);
		s.v.s.p = arena_dup(&t->arena, str->v.s.p, str->v.s.len);
		v = docvalue_of(s);
	} else {
		v = docvalue_kind((enum val_kind)kind_of_type(type));
	}
	set_ttl(&v, ttl_ms);
	hide_pairs(t, k);
	put_pair(t, k, t->kbuf.data, dl, &v);
	k->root_written = true;
	k->root_deleted = false;
	k->root = v;
	k->merged = false;
	k->nkids = 0;
	k->sorted = true;
	k->ix_valid = false;
}

void yw_delete_key(struct yedis_txn *t, const struct resp_arg *key)
{
	size_t dl = key_dockey(t, key);
	struct okey *k = okey_find(t, t->kbuf.data, dl, true);
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);

	hide_pairs(t, k);
	put_pair(t, k, t->kbuf.data, dl, &v);
	k->root_written = true;
	k->root_deleted = true;
	k->merged = false;
	k->nkids = 0;
	k->sorted = true;
	k->ix_valid = false;
}

static void put_child(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub,
		      size_t nsub, const struct docvalue *v)
{
	size_t dl = key_dockey(t, key);
	struct okey *k = okey_find(t, t->kbuf.data, dl, true);
	struct okid *c;
	size_t j, at;

	PRE(nsub > 0);
	encode_subs(&t->kbuf, sub, nsub);
	at = t->o.batch->data.len;
	put_pair(t, k, t->kbuf.data, t->kbuf.len, v);
	ix_ready(k);
	j = ix_slot(k, t->kbuf.data + dl, t->kbuf.len - dl);
	if (k->ix[j] != 0) { /* the path again: the later write replaces it */
		c = &k->kids[k->ix[j] - 1];
		/* and hides its pair (the same key, an older write id) */
		t->hidden = xgrow(t->hidden, &t->hidden_cap, t->nhidden + 1, sizeof *t->hidden, 16);
		t->hidden[t->nhidden++] = c->pair;
	} else {
		k->kids = xgrow(k->kids, &k->kids_cap, k->nkids + 1, sizeof *k->kids, 8);
		c = &k->kids[k->nkids++];
		c->plen = t->kbuf.len - dl;
		c->path = arena_dup(&t->arena, t->kbuf.data + dl, c->plen);
		k->ix[j] = k->nkids;
		if (k->nkids > 1 && k->sorted) {
			const struct okid *p = &k->kids[k->nkids - 2];
			k->sorted = cmp_bytes(p->path, p->plen, c->path, c->plen) < 0;
		}
	}
	c->vlen = t->vbuf.len;
	c->val = arena_dup(&t->arena, t->vbuf.data, t->vbuf.len);
	c->seq = ++t->seq;
	c->pair = at;
}

void yw_put(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub,
	    const struct pv *value)
{
	struct docvalue v = docvalue_of(*value);
	put_child(t, key, sub, nsub, &v);
}

void yw_put_ttl(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub,
		const struct pv *value, int64_t ttl_ms)
{
	struct docvalue v = docvalue_of(*value);
	set_ttl(&v, ttl_ms);
	put_child(t, key, sub, nsub, &v);
}

void yw_delete(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub)
{
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);
	put_child(t, key, sub, nsub, &v);
}

void yw_expire(struct yedis_txn *t, const struct resp_arg *key, int type, int64_t ttl_ms)
{
	size_t dl = key_dockey(t, key);
	struct okey *k = okey_find(t, t->kbuf.data, dl, true);
	struct docvalue v;

	PRE(type != YT_NONE);
	/* 'k' 01 ['t' ttl] <the bare type byte> (docdb-format.md §5.1). */
	if (type == YT_STRING)
		v = docvalue_of(pv_strn("", 0));
	else
		v = docvalue_kind((enum val_kind)kind_of_type(type));
	v.merge_flags = 1;
	set_ttl(&v, ttl_ms);
	put_pair(t, k, t->kbuf.data, dl, &v);
	k->merged = true;
	k->merge_has_ttl = ttl_ms > 0;
	k->merge_ttl_ms = ttl_ms > 0 ? ttl_ms : 0;
}
