/* Row operations -> DocDB pairs. See docwrite.h for the mapping.
 *
 * Every public operation follows the same shape: begin() encodes the row's
 * DocKey and remembers where the batch ended; the operation validates its
 * input and appends pairs with put(); on any error rollback() truncates the
 * batch back to that mark, so a failed operation leaves no trace. */
#include "docdb/docwrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "docdb/packed.h"

/* CQL's limit: 20 years. */
#define MAX_TTL_MS (630720000LL * 1000)

struct mark {
	size_t len;
	uint32_t count;
};

void docwrite_init(struct docwrite *w, const struct schema *s, struct batch *b,
		   int64_t *list_counter)
{
	memset(w, 0, sizeof *w);
	w->schema = s;
	w->batch = b;
	w->list_counter = list_counter;
	buf_init(&w->key);
	buf_init(&w->val);
	buf_init(&w->doc);
}

void docwrite_free(struct docwrite *w)
{
	buf_free(&w->key);
	buf_free(&w->val);
	buf_free(&w->doc);
}

static struct mark mark_of(const struct docwrite *w)
{
	struct mark m = {w->batch->data.len, w->batch->count};
	return m;
}

static int rollback(struct docwrite *w, struct mark m, int rv)
{
	w->batch->data.len = m.len;
	w->batch->count = m.count;
	return rv;
}

int docwrite_dockey(const struct schema *s, const struct pv *key, size_t nkey, struct buf *out,
		    char *errmsg)
{
	struct pv comps[SCHEMA_MAX_COLUMNS];
	struct dockey dk;
	int rv;
	if (nkey != schema_nkeys(s))
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s: expected %zu primary key values, got %zu", s->table,
			       schema_nkeys(s), nkey);
	for (size_t i = 0; i < nkey; i++) {
		const struct column *c = &s->cols[i];
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "key column '%s'", c->name);
		if ((rv = schema_check_value(c->type, &key[i], false, what, errmsg)) != 0)
			return rv;
		comps[i] = key[i];
		comps[i].desc = c->desc;
		comps[i].null_high = 0;
	}
	memset(&dk, 0, sizeof dk);
	dk.has_hash = s->n_hash > 0;
	dk.n_hashed = s->n_hash;
	dk.hashed = comps;
	dk.n_range = s->n_range;
	dk.range = comps + s->n_hash;
	if (dk.has_hash)
		dk.hash = key_hash_components(comps, s->n_hash);
	dockey_append(out, &dk);
	if (out->len > BATCH_MAX_KEY / 2) {
		/* Name the largest key column: that is the one to shorten. */
		size_t big = 0;
		for (size_t i = 1; i < nkey; i++)
			if (key[i].type == PV_STRING &&
			    (key[big].type != PV_STRING || key[i].v.s.len > key[big].v.s.len))
				big = i;
		return err_set(errmsg, DOCRAFT_ETOOBIG,
			       "table %s: primary key of %zu bytes exceeds %u bytes (column '%s')",
			       s->table, out->len, BATCH_MAX_KEY / 2, s->cols[big].name);
	}
	return 0;
}

static int begin(struct docwrite *w, const struct pv *key, size_t nkey)
{
	buf_reset(&w->doc);
	return docwrite_dockey(w->schema, key, nkey, &w->doc, w->errmsg);
}

static int check_ttl(struct docwrite *w, int64_t ttl_ms)
{
	if (ttl_ms == DOCWRITE_NO_TTL || (ttl_ms >= 0 && ttl_ms <= MAX_TTL_MS))
		return 0;
	return err_set(w->errmsg, DOCRAFT_EINVAL, "TTL %lld ms out of range (0..%lld)",
		       (long long)ttl_ms, (long long)MAX_TTL_MS);
}

static void with_ttl(struct docvalue *v, int64_t ttl_ms)
{
	if (ttl_ms != DOCWRITE_NO_TTL) {
		v->has_ttl = true;
		v->ttl_ms = ttl_ms;
	}
}

/* Appends DocKey(prefix) + subkeys -> v. */
static int put_raw(struct docwrite *w, const uint8_t *prefix, size_t prefix_len,
		   const struct pv *subkeys, size_t nsub, const struct docvalue *v)
{
	buf_reset(&w->key);
	buf_append(&w->key, prefix, prefix_len);
	for (size_t i = 0; i < nsub; i++)
		key_append_pv(&w->key, &subkeys[i]);
	buf_reset(&w->val);
	value_append(&w->val, v);
	if (w->key.len > BATCH_MAX_KEY)
		return err_set(w->errmsg, DOCRAFT_ETOOBIG, "%s: key of %zu bytes exceeds %u",
			       w->what ? w->what : "document", w->key.len, BATCH_MAX_KEY);
	if (w->val.len > DOCWRITE_MAX_VALUE + 64)
		return err_set(w->errmsg, DOCRAFT_ETOOBIG, "%s: value of %zu bytes exceeds %u",
			       w->what ? w->what : "document", w->val.len, DOCWRITE_MAX_VALUE);
	batch_put(w->batch, w->key.data, w->key.len, w->val.data, w->val.len);
	return 0;
}

static int put(struct docwrite *w, const struct pv *subkeys, size_t nsub, const struct docvalue *v)
{
	char what[SCHEMA_MAX_NAME + 16];
	if (nsub > 0 && subkeys[0].type == PV_COLUMN_ID) {
		const struct column *c = schema_find_id(w->schema, (int32_t)subkeys[0].v.i64);
		snprintf(what, sizeof what, "column '%s'", c ? c->name : "?");
		w->what = what;
	} else {
		w->what = "row";
	}
	int rv = put_raw(w, w->doc.data, w->doc.len, subkeys, nsub, v);
	w->what = NULL;
	return rv;
}

static const struct column *find_regular(struct docwrite *w, const char *name)
{
	const struct column *c = name ? schema_find(w->schema, name) : NULL;
	if (c == NULL) {
		err_set(w->errmsg, DOCRAFT_EINVAL, "table %s has no column '%s'", w->schema->table,
			name ? name : "(null)");
		return NULL;
	}
	if (c->kind != COL_REGULAR) {
		err_set(w->errmsg, DOCRAFT_EINVAL, "'%s' is a primary key column", name);
		return NULL;
	}
	return c;
}

static int check_size(struct docwrite *w, const struct column *c, const struct pv *v)
{
	if (v->type == PV_STRING && v->v.s.len > DOCWRITE_MAX_VALUE)
		return err_set(w->errmsg, DOCRAFT_ETOOBIG, "column '%s': value of %zu bytes exceeds %u",
			       c->name, v->v.s.len, DOCWRITE_MAX_VALUE);
	return 0;
}

/* Checks one colval against its column; with collections, every element. */
static int check_colval(struct docwrite *w, const struct column *c, const struct colval *cv)
{
	char what[SCHEMA_MAX_NAME + 32];
	int rv;
	if (!col_type_is_collection(c->type)) {
		if (cv->n != 0 || cv->keys != NULL)
			return err_set(w->errmsg, DOCRAFT_EINVAL,
				       "column '%s' is %s, not a collection", c->name,
				       col_type_name(c->type));
		snprintf(what, sizeof what, "column '%s'", c->name);
		if ((rv = schema_check_value(c->type, &cv->value, true, what, w->errmsg)) != 0)
			return rv;
		return check_size(w, c, &cv->value);
	}
	if (cv->value.type != PV_NULL)
		return err_set(w->errmsg, DOCRAFT_EINVAL,
			       "column '%s' is a %s: give its elements, not a single value", c->name,
			       col_type_name(c->type));
	if (cv->n > 0 && cv->keys == NULL)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "column '%s': missing elements", c->name);
	if (c->type == CT_MAP && cv->n > 0 && cv->vals == NULL)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "column '%s': map without values", c->name);
	for (size_t i = 0; i < cv->n; i++) {
		snprintf(what, sizeof what, "element of '%s'", c->name);
		if ((rv = schema_check_value(c->elem_type, &cv->keys[i], false, what, w->errmsg)) != 0)
			return rv;
		if ((rv = check_size(w, c, &cv->keys[i])) != 0)
			return rv;
		if (c->type == CT_MAP) {
			snprintf(what, sizeof what, "value in map '%s'", c->name);
			if ((rv = schema_check_value(c->value_type, &cv->vals[i], false, what,
						     w->errmsg)) != 0)
				return rv;
			if ((rv = check_size(w, c, &cv->vals[i])) != 0)
				return rv;
		}
	}
	return 0;
}

static int check_cols(struct docwrite *w, const struct colval *cols, size_t ncols)
{
	for (size_t i = 0; i < ncols; i++) {
		const struct column *c = find_regular(w, cols[i].name);
		int rv;
		if (c == NULL)
			return DOCRAFT_EINVAL;
		for (size_t j = 0; j < i; j++)
			if (strcmp(cols[j].name, cols[i].name) == 0)
				return err_set(w->errmsg, DOCRAFT_EINVAL, "column '%s' given twice",
					       c->name);
		if ((rv = check_colval(w, c, &cols[i])) != 0)
			return rv;
	}
	return 0;
}

static int next_list_index(struct docwrite *w, int64_t *out)
{
	if (w->list_counter == NULL)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "list operations need a list counter");
	*out = ++*w->list_counter;
	return 0;
}

/* Writes the elements of a collection column (no marker). */
static int put_elements(struct docwrite *w, const struct column *c, const struct pv *keys,
			const struct pv *vals, size_t n, int64_t ttl_ms, bool prepend)
{
	struct pv sub[2];
	int rv;
	sub[0] = pv_column(c->id);
	for (size_t k = 0; k < n; k++) {
		/* Prepend walks backwards so the first element gets the smallest index. */
		size_t i = prepend ? n - 1 - k : k;
		struct docvalue v;
		if (c->type == CT_LIST) {
			int64_t idx = 0;
			if ((rv = next_list_index(w, &idx)) != 0)
				return rv;
			sub[1] = pv_array_index(prepend ? -idx : idx);
			v = docvalue_of(keys[i]);
		} else {
			sub[1] = keys[i];
			sub[1].desc = 0;
			v = docvalue_of(c->type == CT_MAP ? vals[i] : pv_null());
		}
		with_ttl(&v, ttl_ms);
		if ((rv = put(w, sub, 2, &v)) != 0)
			return rv;
	}
	return 0;
}

static int put_column(struct docwrite *w, const struct column *c, const struct colval *cv,
		      int64_t ttl_ms, bool replace)
{
	struct pv sub = pv_column(c->id);
	struct docvalue v;
	if (!col_type_is_collection(c->type)) {
		if (cv->value.type == PV_NULL) {
			v = docvalue_kind(VAL_TOMBSTONE);
		} else {
			v = docvalue_of(cv->value);
			with_ttl(&v, ttl_ms);
		}
		return put(w, &sub, 1, &v);
	}
	if (replace) {
		int rv;
		v = docvalue_kind(VAL_TOMBSTONE);
		if ((rv = put(w, &sub, 1, &v)) != 0)
			return rv;
	}
	return put_elements(w, c, cv->keys, cv->vals, cv->n, ttl_ms, false);
}

static bool packable(const struct column *c)
{
	return c->kind == COL_REGULAR && !col_type_is_collection(c->type);
}

/* The version to pack an INSERT with, or NULL when it is not packed: the
 * table option is off, or the INSERT leaves out a packable column (§8.4:
 * only an INSERT that gives them all is packed, as YCQL does; packing a
 * partial one would turn the columns it leaves out into NULLs that hide
 * their older values). The columns are valid and distinct (check_cols). */
static const struct schema_version *pack_version(struct docwrite *w, const struct colval *cols,
						 size_t ncols)
{
	const struct schema_version *sv;
	size_t given = 0;
	if (!w->schema->packed || (sv = schema_version_get(w->schema, w->schema->version)) == NULL)
		return NULL;
	for (size_t i = 0; i < ncols; i++)
		if (packable(schema_find(w->schema, cols[i].name)))
			given++;
	return given == sv->n ? sv : NULL;
}

/* Slot of column id in a version (its ids ascend: schema order). */
static size_t slot_of(const struct schema_version *sv, int32_t id)
{
	size_t lo = 0, hi = sv->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sv->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	PRE(lo < sv->n && sv->ids[lo] == id);
	return lo;
}

/* A packed INSERT (§8): DocKey -> [TTL] 'z' <every packable column> first,
 * so that it takes the batch's next write id before the cells of the same
 * statement (§3.4); then, as separate cells, the columns that did not fit
 * the size limit (their slots stay NULL, and the cells' higher write ids
 * win over them) and the collections. No liveness column: a live packed
 * row stands in for it. */
static int write_packed(struct docwrite *w, const struct schema_version *sv,
			const struct colval *cols, size_t ncols, int64_t ttl_ms)
{
	struct docvalue *vals = xcalloc(sv->n + 1, sizeof *vals);
	const struct docvalue **slots = xcalloc(sv->n + 1, sizeof *slots);
	bool *separate = xcalloc(ncols + 1, sizeof *separate);
	struct buf payload = BUF_INIT;
	struct docvalue row = docvalue_kind(VAL_PACKED_ROW);
	size_t used = 0;
	int rv = 0;

	/* Slots in packing order, so that the size limit keeps the leading
	 * columns whatever order the caller gave them in. */
	for (size_t i = 0; i < ncols; i++) {
		const struct column *c = schema_find(w->schema, cols[i].name);
		size_t k;
		if (!packable(c)) {
			separate[i] = true;
			continue;
		}
		k = slot_of(sv, c->id);
		if (cols[i].value.type != PV_NULL) {
			vals[k] = docvalue_of(cols[i].value);
			with_ttl(&vals[k], ttl_ms);
			slots[k] = &vals[k];
		}
	}
	for (size_t k = 0; k < sv->n; k++) {
		size_t size;
		if (slots[k] == NULL)
			continue;
		size = packed_value_size(slots[k]);
		if (size <= PACKED_SIZE_LIMIT - used) {
			used += size;
			continue;
		}
		slots[k] = NULL;
		for (size_t i = 0; i < ncols; i++)
			if (schema_find(w->schema, cols[i].name)->id == sv->ids[k])
				separate[i] = true;
	}
	packed_encode(&payload, sv->version, slots, sv->n);
	row.packed = payload.data;
	row.packed_len = payload.len;
	with_ttl(&row, ttl_ms);
	if ((rv = put(w, NULL, 0, &row)) != 0)
		goto out;
	for (size_t i = 0; i < ncols && rv == 0; i++)
		if (separate[i])
			rv = put_column(w, schema_find(w->schema, cols[i].name), &cols[i], ttl_ms, false);
out:
	buf_free(&payload);
	free(separate);
	free(slots);
	free(vals);
	return rv;
}

static int write_row(struct docwrite *w, const struct pv *key, size_t nkey,
		     const struct colval *cols, size_t ncols, int64_t ttl_ms, bool insert)
{
	const struct schema_version *sv;
	struct mark m = mark_of(w);
	int rv;
	if ((rv = begin(w, key, nkey)) != 0 || (rv = check_ttl(w, ttl_ms)) != 0 ||
	    (rv = check_cols(w, cols, ncols)) != 0)
		return rv;
	if (!insert && ncols == 0)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "UPDATE needs at least one column");
	if (insert && (sv = pack_version(w, cols, ncols)) != NULL) {
		if ((rv = write_packed(w, sv, cols, ncols, ttl_ms)) != 0)
			return rollback(w, m, rv);
		return 0;
	}
	if (insert) {
		struct pv sub = pv_liveness();
		struct docvalue v = docvalue_of(pv_null());
		with_ttl(&v, ttl_ms);
		if ((rv = put(w, &sub, 1, &v)) != 0)
			return rollback(w, m, rv);
	}
	for (size_t i = 0; i < ncols; i++) {
		const struct column *c = schema_find(w->schema, cols[i].name);
		if ((rv = put_column(w, c, &cols[i], ttl_ms, !insert)) != 0)
			return rollback(w, m, rv);
	}
	return 0;
}

int docwrite_insert(struct docwrite *w, const struct pv *key, size_t nkey,
		    const struct colval *cols, size_t ncols, int64_t ttl_ms)
{
	return write_row(w, key, nkey, cols, ncols, ttl_ms, true);
}

int docwrite_update(struct docwrite *w, const struct pv *key, size_t nkey,
		    const struct colval *cols, size_t ncols, int64_t ttl_ms)
{
	return write_row(w, key, nkey, cols, ncols, ttl_ms, false);
}

int docwrite_delete_row(struct docwrite *w, const struct pv *key, size_t nkey)
{
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);
	int rv;
	if ((rv = begin(w, key, nkey)) != 0)
		return rv;
	return put(w, NULL, 0, &v);
}

int docwrite_delete_column(struct docwrite *w, const struct pv *key, size_t nkey, const char *col)
{
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);
	const struct column *c;
	struct pv sub;
	int rv;
	if ((rv = begin(w, key, nkey)) != 0)
		return rv;
	if ((c = find_regular(w, col)) == NULL)
		return DOCRAFT_EINVAL;
	sub = pv_column(c->id);
	return put(w, &sub, 1, &v);
}

/* Shared front half of the collection operations. */
static const struct column *collection_op(struct docwrite *w, const struct pv *key, size_t nkey,
					  const char *col, enum col_type want,
					  const struct pv *keys, const struct pv *vals, size_t n,
					  int64_t ttl_ms, int *rv)
{
	const struct column *c;
	struct column check;
	struct colval cv = {col, {0}, keys, vals, n};
	if ((*rv = begin(w, key, nkey)) != 0 || (*rv = check_ttl(w, ttl_ms)) != 0)
		return NULL;
	if ((c = find_regular(w, col)) == NULL) {
		*rv = DOCRAFT_EINVAL;
		return NULL;
	}
	if (c->type != want) {
		*rv = err_set(w->errmsg, DOCRAFT_EINVAL, "column '%s' is a %s, not a %s", c->name,
			      col_type_name(c->type), col_type_name(want));
		return NULL;
	}
	/* A removal names map keys only: check them as a set of the key type. */
	check = *c;
	if (c->type == CT_MAP && vals == NULL)
		check.type = CT_SET;
	if ((*rv = check_colval(w, &check, &cv)) != 0)
		return NULL;
	return c;
}

static int remove_elements(struct docwrite *w, const struct column *c, const struct pv *keys,
			   size_t n)
{
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);
	struct mark m = mark_of(w);
	struct pv sub[2];
	int rv;
	sub[0] = pv_column(c->id);
	for (size_t i = 0; i < n; i++) {
		sub[1] = keys[i];
		sub[1].desc = 0;
		if ((rv = put(w, sub, 2, &v)) != 0)
			return rollback(w, m, rv);
	}
	return 0;
}

/* Adds n elements (map keys with their values, or set elements with vals
 * NULL) to collection column col of type ct: all or nothing. */
static int collection_add(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			  enum col_type ct, const struct pv *keys, const struct pv *vals, size_t n,
			  int64_t ttl_ms)
{
	struct mark m = mark_of(w);
	int rv;
	const struct column *c = collection_op(w, key, nkey, col, ct, keys, vals, n, ttl_ms, &rv);
	if (c == NULL)
		return rv;
	if ((rv = put_elements(w, c, keys, vals, n, ttl_ms, false)) != 0)
		return rollback(w, m, rv);
	return 0;
}

/* Removes n map keys or set elements from collection column col of type ct. */
static int collection_remove(struct docwrite *w, const struct pv *key, size_t nkey,
			     const char *col, enum col_type ct, const struct pv *keys, size_t n)
{
	int rv;
	const struct column *c =
		collection_op(w, key, nkey, col, ct, keys, NULL, n, DOCWRITE_NO_TTL, &rv);
	if (c == NULL)
		return rv;
	return remove_elements(w, c, keys, n);
}

int docwrite_map_put(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
		     const struct pv *mkeys, const struct pv *mvals, size_t n, int64_t ttl_ms)
{
	if (n > 0 && mvals == NULL)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "map '%s': keys given without values",
			       col ? col : "?");
	return collection_add(w, key, nkey, col, CT_MAP, mkeys, mvals, n, ttl_ms);
}

int docwrite_map_remove(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			const struct pv *mkeys, size_t n)
{
	return collection_remove(w, key, nkey, col, CT_MAP, mkeys, n);
}

int docwrite_set_add(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
		     const struct pv *elems, size_t n, int64_t ttl_ms)
{
	return collection_add(w, key, nkey, col, CT_SET, elems, NULL, n, ttl_ms);
}

int docwrite_set_remove(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			const struct pv *elems, size_t n)
{
	return collection_remove(w, key, nkey, col, CT_SET, elems, n);
}

static int list_extend(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
		       const struct pv *elems, size_t n, int64_t ttl_ms, bool prepend)
{
	struct mark m = mark_of(w);
	int rv;
	const struct column *c =
		collection_op(w, key, nkey, col, CT_LIST, elems, NULL, n, ttl_ms, &rv);
	if (c == NULL)
		return rv;
	if ((rv = put_elements(w, c, elems, NULL, n, ttl_ms, prepend)) != 0)
		return rollback(w, m, rv);
	return 0;
}

int docwrite_list_append(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			 const struct pv *elems, size_t n, int64_t ttl_ms)
{
	return list_extend(w, key, nkey, col, elems, n, ttl_ms, false);
}

int docwrite_list_prepend(struct docwrite *w, const struct pv *key, size_t nkey, const char *col,
			  const struct pv *elems, size_t n, int64_t ttl_ms)
{
	return list_extend(w, key, nkey, col, elems, n, ttl_ms, true);
}

int docwrite_collection_replace(struct docwrite *w, const struct pv *key, size_t nkey,
				const struct colval *cv, int64_t ttl_ms)
{
	const struct column *c;
	struct mark m = mark_of(w);
	int rv;
	if ((rv = begin(w, key, nkey)) != 0 || (rv = check_ttl(w, ttl_ms)) != 0)
		return rv;
	if ((c = find_regular(w, cv->name)) == NULL)
		return DOCRAFT_EINVAL;
	if (!col_type_is_collection(c->type))
		return err_set(w->errmsg, DOCRAFT_EINVAL, "column '%s' is not a collection",
			       c->name);
	if ((rv = check_colval(w, c, cv)) != 0)
		return rv;
	if ((rv = put_column(w, c, cv, ttl_ms, true)) != 0)
		return rollback(w, m, rv);
	return 0;
}

static int check_path(struct docwrite *w, const uint8_t *dockey, size_t dockey_len, size_t nsub)
{
	if (dockey_len == 0 || dockey_prefix_len(dockey, dockey_len) != dockey_len)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "not a well-formed DocKey");
	if (nsub > DOCDB_MAX_SUBKEYS)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "path deeper than %d levels",
			       DOCDB_MAX_SUBKEYS);
	return 0;
}

int docwrite_put_path(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
		      const struct pv *subkeys, size_t nsub, const struct docvalue *v)
{
	int rv;
	if ((rv = check_path(w, dockey, dockey_len, nsub)) != 0)
		return rv;
	return put_raw(w, dockey, dockey_len, subkeys, nsub, v);
}

int docwrite_delete_path(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
			 const struct pv *subkeys, size_t nsub)
{
	struct docvalue v = docvalue_kind(VAL_TOMBSTONE);
	return docwrite_put_path(w, dockey, dockey_len, subkeys, nsub, &v);
}

static int insert_subdoc(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
			 struct pv *path, size_t depth, const struct subdoc *doc)
{
	struct docvalue v;
	int rv;
	if (!doc->is_object) {
		v = docvalue_of(doc->value);
		return put_raw(w, dockey, dockey_len, path, depth, &v);
	}
	v = docvalue_kind(VAL_OBJECT);
	if ((rv = put_raw(w, dockey, dockey_len, path, depth, &v)) != 0)
		return rv;
	if (doc->n > 0 && depth + 1 > DOCDB_MAX_SUBKEYS)
		return err_set(w->errmsg, DOCRAFT_EINVAL, "document nested deeper than %d levels",
			       DOCDB_MAX_SUBKEYS);
	for (size_t i = 0; i < doc->n; i++) {
		path[depth] = doc->keys[i];
		path[depth].desc = 0;
		if ((rv = insert_subdoc(w, dockey, dockey_len, path, depth + 1, &doc->children[i])) != 0)
			return rv;
	}
	return 0;
}

int docwrite_insert_subdoc(struct docwrite *w, const uint8_t *dockey, size_t dockey_len,
			   const struct pv *subkeys, size_t nsub, const struct subdoc *doc)
{
	struct pv path[DOCDB_MAX_SUBKEYS];
	struct mark m = mark_of(w);
	int rv;
	if ((rv = check_path(w, dockey, dockey_len, nsub)) != 0)
		return rv;
	if (nsub > 0)
		memcpy(path, subkeys, nsub * sizeof *path);
	if ((rv = insert_subdoc(w, dockey, dockey_len, path, nsub, doc)) != 0)
		return rollback(w, m, rv);
	return 0;
}
