#include "rpc/wire.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

static void *alloc0(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

/* ---- schema ---------------------------------------------------------------- */

int wire_schema_from_pb(const Docraft__TableSchema *pb, struct schema *out, char *errmsg)
{
	int rv;
	int32_t max_id = -1;
	if ((rv = schema_init(out, pb->name, errmsg)) != 0)
		return rv;
	for (size_t i = 0; i < pb->n_columns; i++) {
		const Docraft__ColumnSchema *c = pb->columns[i];
		rv = schema_add_column(out, c->name, (enum col_kind)c->kind, (enum col_type)c->type,
				       (enum col_type)c->elem_type, (enum col_type)c->value_type,
				       c->desc, errmsg);
		if (rv != 0) {
			schema_free(out);
			return rv;
		}
		if (c->id < 0) {
			schema_free(out);
			return err_set(errmsg, DOCRAFT_EINVAL, "column '%s' has id %d", c->name,
				       c->id);
		}
		/* Ids come from the catalog: dropped columns leave gaps. */
		out->cols[out->ncols - 1].id = c->id;
		if (c->id > max_id)
			max_id = c->id;
	}
	for (size_t i = 0; i < out->ncols; i++)
		for (size_t j = i + 1; j < out->ncols; j++)
			if (out->cols[i].id == out->cols[j].id) {
				int32_t id = out->cols[i].id;
				schema_free(out);
				return err_set(errmsg, DOCRAFT_EINVAL, "column id %d used twice", id);
			}
	out->next_id = max_id + 1;
	out->default_ttl_ms = pb->default_ttl_ms;
	out->version = pb->version;
	out->packed = pb->packed;
	out->redis = pb->redis;
	return 0;
}

void wire_schema_to_pb(const struct schema *s, Docraft__TableSchema *pb, struct arena *a)
{
	docraft__table_schema__init(pb);
	pb->name = s->table;
	pb->n_columns = s->ncols;
	pb->columns = alloc0(a, s->ncols * sizeof *pb->columns);
	for (size_t i = 0; i < s->ncols; i++) {
		Docraft__ColumnSchema *c = alloc0(a, sizeof *c);
		docraft__column_schema__init(c);
		c->name = s->cols[i].name;
		c->id = s->cols[i].id;
		c->kind = (Docraft__ColumnKind)s->cols[i].kind;
		c->type = (Docraft__ColumnType)s->cols[i].type;
		c->elem_type = (Docraft__ColumnType)s->cols[i].elem_type;
		c->value_type = (Docraft__ColumnType)s->cols[i].value_type;
		c->desc = s->cols[i].desc;
		pb->columns[i] = c;
	}
	pb->default_ttl_ms = s->default_ttl_ms;
	pb->version = s->version;
	pb->packed = s->packed;
	pb->redis = s->redis;
}

/* ---- values ------------------------------------------------------------------ */

static int wrong(char *errmsg, const char *what, enum col_type t)
{
	return err_set(errmsg, DOCRAFT_EINVAL, "%s: expected a %s value", what, col_type_name(t));
}

int wire_datum_to_pv(const Docraft__Datum *d, enum col_type t, const char *what, struct pv *out,
		     char *errmsg)
{
	*out = pv_null();
	if (d == NULL || d->v_case == DOCRAFT__DATUM__V__NOT_SET || d->v_case == DOCRAFT__DATUM__V_NULL)
		return 0;
	switch (t) {
	case CT_BOOL:
		if (d->v_case != DOCRAFT__DATUM__V_B)
			return wrong(errmsg, what, t);
		*out = pv_bool(d->b);
		return 0;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32:
		if (d->v_case != DOCRAFT__DATUM__V_I)
			return wrong(errmsg, what, t);
		if (d->i < INT32_MIN || d->i > INT32_MAX)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: %lld out of range for %s", what,
				       (long long)d->i, col_type_name(t));
		*out = pv_int32((int32_t)d->i);
		return 0;
	case CT_INT64:
		if (d->v_case != DOCRAFT__DATUM__V_I)
			return wrong(errmsg, what, t);
		*out = pv_int64(d->i);
		return 0;
	case CT_TIMESTAMP:
		if (d->v_case != DOCRAFT__DATUM__V_I)
			return wrong(errmsg, what, t);
		*out = pv_timestamp(d->i);
		return 0;
	case CT_DATE:
		if (d->v_case != DOCRAFT__DATUM__V_U || d->u > UINT32_MAX)
			return wrong(errmsg, what, t);
		*out = pv_uint32((uint32_t)d->u);
		return 0;
	case CT_FLOAT:
		if (d->v_case != DOCRAFT__DATUM__V_F)
			return wrong(errmsg, what, t);
		*out = pv_float(d->f);
		return 0;
	case CT_DOUBLE:
		if (d->v_case != DOCRAFT__DATUM__V_D)
			return wrong(errmsg, what, t);
		*out = pv_double(d->d);
		return 0;
	case CT_TEXT:
	case CT_BLOB:
		if (d->v_case != DOCRAFT__DATUM__V_S)
			return wrong(errmsg, what, t);
		/* protobuf-c gives an empty bytes field a NULL pointer; the
		 * encoders do arithmetic on a string's pointer (NULL + 0 is
		 * undefined). Found by tests/fuzz/fuzz_rpc_request. */
		*out = pv_strn(d->s.len > 0 ? d->s.data : (const uint8_t *)"", d->s.len);
		return 0;
	case CT_UUID:
		if (d->v_case != DOCRAFT__DATUM__V_UUID || d->uuid.len != 16)
			return wrong(errmsg, what, t);
		*out = pv_uuid(d->uuid.data);
		return 0;
	default:
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: not a primitive column", what);
	}
}

void wire_pv_to_datum(const struct pv *v, Docraft__Datum *d)
{
	docraft__datum__init(d);
	switch (v->type) {
	case PV_NULL: d->v_case = DOCRAFT__DATUM__V_NULL; d->null = 1; break;
	case PV_BOOL: d->v_case = DOCRAFT__DATUM__V_B; d->b = v->v.b; break;
	case PV_INT32: d->v_case = DOCRAFT__DATUM__V_I; d->i = v->v.i32; break;
	case PV_INT64:
	case PV_TIMESTAMP:
	case PV_ARRAY_INDEX: d->v_case = DOCRAFT__DATUM__V_I; d->i = v->v.i64; break;
	case PV_UINT32: d->v_case = DOCRAFT__DATUM__V_U; d->u = v->v.u32; break;
	case PV_UINT64: d->v_case = DOCRAFT__DATUM__V_U; d->u = v->v.u64; break;
	case PV_FLOAT: d->v_case = DOCRAFT__DATUM__V_F; d->f = v->v.f; break;
	case PV_DOUBLE: d->v_case = DOCRAFT__DATUM__V_D; d->d = v->v.d; break;
	case PV_STRING:
		d->v_case = DOCRAFT__DATUM__V_S;
		d->s.data = (uint8_t *)v->v.s.p;
		d->s.len = v->v.s.len;
		break;
	case PV_UUID:
		d->v_case = DOCRAFT__DATUM__V_UUID;
		d->uuid.data = (uint8_t *)v->v.uuid;
		d->uuid.len = 16;
		break;
	default:
		d->v_case = DOCRAFT__DATUM__V_NULL;
		d->null = 1;
		break;
	}
}

Docraft__Datum *wire_datum_new(const struct pv *v, struct arena *a)
{
	Docraft__Datum *d = alloc0(a, sizeof *d);
	struct pv *copy = arena_dup(a, v, sizeof *v);
	wire_pv_to_datum(copy, d); /* uuid bytes must outlive v */
	return d;
}

/* ---- writes ---------------------------------------------------------------- */

static int column_of(const struct schema *s, const char *name, const struct column **out,
		     char *errmsg)
{
	*out = schema_find(s, name ? name : "");
	if (*out == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s has no column '%s'", s->table,
			       name ? name : "");
	return 0;
}

/* Converts a ColumnValue into a colval (arrays in a). */
static int colval_from_pb(const struct schema *s, const Docraft__ColumnValue *cv,
			  struct colval *out, struct arena *a, char *errmsg)
{
	const struct column *c;
	char what[SCHEMA_MAX_NAME + 32];
	struct pv *keys = NULL, *vals = NULL;
	int rv;
	if ((rv = column_of(s, cv->name, &c, errmsg)) != 0)
		return rv;
	memset(out, 0, sizeof *out);
	out->name = c->name;
	snprintf(what, sizeof what, "column '%s'", c->name);
	if (!col_type_is_collection(c->type)) {
		if (cv->n_keys || cv->n_values)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a collection", what);
		return wire_datum_to_pv(cv->value, c->type, what, &out->value, errmsg);
	}
	if (c->type == CT_MAP && cv->n_values != cv->n_keys && cv->n_values != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: %zu keys but %zu values", what,
			       cv->n_keys, cv->n_values);
	keys = arena_alloc(a, (cv->n_keys + 1) * sizeof *keys);
	for (size_t i = 0; i < cv->n_keys; i++)
		if ((rv = wire_datum_to_pv(cv->keys[i], c->elem_type, what, &keys[i], errmsg)) != 0)
			return rv;
	if (cv->n_values > 0) {
		vals = arena_alloc(a, (cv->n_values + 1) * sizeof *vals);
		for (size_t i = 0; i < cv->n_values; i++)
			if ((rv = wire_datum_to_pv(cv->values[i], c->value_type, what, &vals[i],
						   errmsg)) != 0)
				return rv;
	}
	out->keys = keys;
	out->vals = vals;
	out->n = cv->n_keys;
	return 0;
}

static int key_from_pb(const struct schema *s, const Docraft__WriteOp *op, struct pv *key,
		       char *errmsg)
{
	if (op->n_key != schema_nkeys(s))
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s: expected %zu key values, got %zu",
			       s->table, schema_nkeys(s), op->n_key);
	for (size_t i = 0; i < op->n_key; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		int rv;
		snprintf(what, sizeof what, "key column '%s'", s->cols[i].name);
		if ((rv = wire_datum_to_pv(op->key[i], s->cols[i].type, what, &key[i], errmsg)) != 0)
			return rv;
	}
	return 0;
}

static int apply_op(struct docwrite *w, const Docraft__WriteOp *op, struct arena *a, char *errmsg)
{
	const struct schema *s = w->schema;
	struct pv key[SCHEMA_MAX_COLUMNS];
	struct colval *cols;
	size_t n = op->n_columns;
	int64_t ttl = op->ttl_ms < 0 ? DOCWRITE_NO_TTL : op->ttl_ms;
	int rv;

	if ((rv = key_from_pb(s, op, key, errmsg)) != 0)
		return rv;
	cols = arena_alloc(a, (n + 1) * sizeof *cols);
	for (size_t i = 0; i < n; i++)
		if ((rv = colval_from_pb(s, op->columns[i], &cols[i], a, errmsg)) != 0)
			return rv;
	switch (op->kind) {
	case DOCRAFT__WRITE_OP__KIND__INSERT:
		rv = docwrite_insert(w, key, op->n_key, cols, n, ttl);
		break;
	case DOCRAFT__WRITE_OP__KIND__UPDATE:
		rv = docwrite_update(w, key, op->n_key, cols, n, ttl);
		break;
	case DOCRAFT__WRITE_OP__KIND__DELETE_ROW:
		rv = docwrite_delete_row(w, key, op->n_key);
		break;
	default:
		if (n != 1)
			return err_set(errmsg, DOCRAFT_EINVAL, "this operation takes one column, got %zu",
				       n);
		switch (op->kind) {
		case DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN:
			rv = docwrite_delete_column(w, key, op->n_key, cols[0].name);
			break;
		case DOCRAFT__WRITE_OP__KIND__MAP_PUT:
			rv = docwrite_map_put(w, key, op->n_key, cols[0].name, cols[0].keys,
					      cols[0].vals, cols[0].n, ttl);
			break;
		case DOCRAFT__WRITE_OP__KIND__MAP_REMOVE:
			rv = docwrite_map_remove(w, key, op->n_key, cols[0].name, cols[0].keys,
						 cols[0].n);
			break;
		case DOCRAFT__WRITE_OP__KIND__SET_ADD:
			rv = docwrite_set_add(w, key, op->n_key, cols[0].name, cols[0].keys,
					      cols[0].n, ttl);
			break;
		case DOCRAFT__WRITE_OP__KIND__SET_REMOVE:
			rv = docwrite_set_remove(w, key, op->n_key, cols[0].name, cols[0].keys,
						 cols[0].n);
			break;
		case DOCRAFT__WRITE_OP__KIND__LIST_APPEND:
			rv = docwrite_list_append(w, key, op->n_key, cols[0].name, cols[0].keys,
						  cols[0].n, ttl);
			break;
		case DOCRAFT__WRITE_OP__KIND__LIST_PREPEND:
			rv = docwrite_list_prepend(w, key, op->n_key, cols[0].name, cols[0].keys,
						   cols[0].n, ttl);
			break;
		case DOCRAFT__WRITE_OP__KIND__COLLECTION_REPLACE:
			rv = docwrite_collection_replace(w, key, op->n_key, &cols[0], ttl);
			break;
		default:
			return err_set(errmsg, DOCRAFT_EINVAL, "unknown write operation %d",
				       (int)op->kind);
		}
	}
	if (rv != 0)
		err_set(errmsg, rv, "%s", w->errmsg);
	return rv;
}

int wire_apply_ops(struct docwrite *w, const Docraft__WriteRequest *req, struct arena *a,
		   char *errmsg)
{
	for (size_t i = 0; i < req->n_ops; i++) {
		int rv = apply_op(w, req->ops[i], a, errmsg);
		if (rv != 0)
			return err_wrap(errmsg, rv, "operation %zu", i + 1);
	}
	return 0;
}

/* ---- conditions ------------------------------------------------------------- */

static int condition_from_pb(const struct schema *s, const Docraft__Condition *pc,
			     struct condition *out, struct arena *a, char *errmsg)
{
	size_t nk = schema_nkeys(s);
	struct pv key[SCHEMA_MAX_COLUMNS];
	struct buf dk = BUF_INIT;
	const struct column *c;
	char what[SCHEMA_MAX_NAME + 32];
	int rv;

	memset(out, 0, sizeof *out);
	if (pc->n_key != nk)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s: expected %zu key values, got %zu",
			       s->table, nk, pc->n_key);
	for (size_t i = 0; i < nk; i++) {
		snprintf(what, sizeof what, "key column '%s'", s->cols[i].name);
		if ((rv = wire_datum_to_pv(pc->key[i], s->cols[i].type, what, &key[i], errmsg)) != 0)
			return rv;
		if ((rv = schema_check_value(s->cols[i].type, &key[i], false, what, errmsg)) != 0)
			return rv;
	}
	if ((rv = column_of(s, pc->column, &c, errmsg)) != 0)
		return rv;
	snprintf(what, sizeof what, "column '%s'", c->name);
	if (c->kind != COL_REGULAR)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is a primary key column", what);
	if (col_type_is_collection(c->type))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is a %s: conditions take primitive "
			       "columns only", what, col_type_name(c->type));
	if ((rv = docwrite_dockey(s, key, nk, &dk, errmsg)) != 0) {
		buf_free(&dk);
		return rv;
	}
	out->dockey = arena_dup(a, dk.data, dk.len);
	out->dockey_len = dk.len;
	buf_free(&dk);
	out->column_id = c->id;
	if (pc->has_value) {
		if ((rv = wire_datum_to_pv(pc->value, c->type, what, &out->value, errmsg)) != 0)
			return rv;
		if ((rv = schema_check_value(c->type, &out->value, true, what, errmsg)) != 0)
			return rv;
		/* A NULL value: "no live value", as without has_value. */
		out->has_value = out->value.type != PV_NULL;
	}
	return 0;
}

int wire_conditions(const struct schema *s, const Docraft__WriteRequest *req, struct buf *out,
		    struct arena *a, char *errmsg)
{
	struct condition *c;
	int rv;
	if (req->n_conditions == 0)
		return 0;
	if (req->n_conditions > CONDITION_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "%zu conditions: at most %d",
			       req->n_conditions, CONDITION_MAX);
	c = alloc0(a, req->n_conditions * sizeof *c);
	for (size_t i = 0; i < req->n_conditions; i++)
		if ((rv = condition_from_pb(s, req->conditions[i], &c[i], a, errmsg)) != 0)
			return err_wrap(errmsg, rv, "condition %zu", i + 1);
	condition_encode(out, c, req->n_conditions);
	return 0;
}

/* ---- rows -------------------------------------------------------------------- */

void wire_row_to_pb(const struct row *r, Docraft__Row *pb, struct arena *a)
{
	const struct schema *s = r->schema;
	size_t nk = schema_nkeys(s), n = 0;
	docraft__row__init(pb);
	pb->n_key = nk;
	pb->key = alloc0(a, nk * sizeof *pb->key);
	for (size_t i = 0; i < nk; i++)
		pb->key[i] = wire_datum_new(&r->key[i], a);
	pb->columns = alloc0(a, s->ncols * sizeof *pb->columns);
	for (size_t i = nk; i < s->ncols; i++) {
		const struct column *c = &s->cols[i];
		const struct docnode *node = row_column(r, c);
		Docraft__ColumnResult *cr;
		if (node == NULL)
			continue;
		cr = alloc0(a, sizeof *cr);
		docraft__column_result__init(cr);
		cr->name = c->name;
		cr->present = 1;
		if (!col_type_is_collection(c->type)) {
			cr->value = wire_datum_new(&node->value, a);
		} else {
			size_t m = node->n_children, k = 0;
			cr->keys = alloc0(a, m * sizeof *cr->keys);
			if (c->type == CT_MAP)
				cr->values = alloc0(a, m * sizeof *cr->values);
			for (const struct docnode *e = node->children; e != NULL; e = e->next, k++) {
				/* lists: the items, in index order; sets: the members */
				cr->keys[k] = wire_datum_new(c->type == CT_LIST ? &e->value : &e->key, a);
				if (c->type == CT_MAP)
					cr->values[k] = wire_datum_new(&e->value, a);
			}
			cr->n_keys = k;
			cr->n_values = c->type == CT_MAP ? k : 0;
		}
		pb->columns[n++] = cr;
	}
	pb->n_columns = n;
}

void *wire_pack(const ProtobufCMessage *m, struct arena *a, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *p = arena_alloc(a, n ? n : 1);
	*len = protobuf_c_message_pack(m, p);
	ASSERT(*len == n);
	return p;
}
