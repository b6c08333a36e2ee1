/* The plain objects of the public API: row operations, schema builders and
 * results (values are values.c's). Nothing here talks to the network;
 * write.c turns ops into WriteRequests with a table's schema, and results
 * come out of ReadResponses and ScanResponses.
 *
 * Memory: an op, a schema builder or a result owns an arena holding every
 * byte it was given or decoded; values handed out point into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "client/values.h"
#include "common/err.h"
#include "common/mem.h"

/* ---- ops ---- */

static int op_new(int kind, const docraft_value *key, size_t nkey, docraft_op **out)
{
	docraft_op *op;
	if (out == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	*out = NULL;
	if (key == NULL || nkey == 0 || nkey > CLIENT_MAX_VALUES)
		return client_error(DOCRAFT_EINVAL, "an op needs its primary key (1..%d values)",
				    CLIENT_MAX_VALUES);
	op = xcalloc(1, sizeof *op);
	arena_init(&op->arena);
	op->kind = kind;
	op->key = values_copy(&op->arena, key, nkey);
	op->nkey = nkey;
	op->ttl_ms = -1;
	*out = op;
	return 0;
}

static int check_name(const char *column)
{
	if (column == NULL || column[0] == '\0' || strlen(column) > SCHEMA_MAX_NAME)
		return client_error(DOCRAFT_EINVAL, "bad column name");
	return 0;
}

static struct op_col *op_add_col(docraft_op *op, const char *column)
{
	struct op_col *c;
	if (op->ncols == op->capcols) {
		size_t cap = op->capcols ? 2 * op->capcols : 4;
		struct op_col *cols = arena_alloc(&op->arena, cap * sizeof *cols);
		if (op->ncols > 0)
			memcpy(cols, op->cols, op->ncols * sizeof *cols);
		op->cols = cols;
		op->capcols = cap;
	}
	c = &op->cols[op->ncols++];
	memset(c, 0, sizeof *c);
	c->name = arena_dup(&op->arena, column, strlen(column) + 1);
	return c;
}

/* An op on one column with n elements. */
static int op_elems(int kind, const docraft_value *key, size_t nkey, const char *column,
		    const docraft_value *keys, const docraft_value *vals, size_t n,
		    docraft_op **out)
{
	struct op_col *c;
	int rv;
	if (out != NULL)
		*out = NULL;
	if ((rv = check_name(column)) != 0)
		return rv;
	if (n > CLIENT_MAX_VALUES || (n > 0 && keys == NULL))
		return client_error(DOCRAFT_EINVAL, "bad element list (0..%d elements)",
				    CLIENT_MAX_VALUES);
	if ((rv = op_new(kind, key, nkey, out)) != 0)
		return rv;
	c = op_add_col(*out, column);
	c->is_collection = true;
	c->keys = values_copy(&(*out)->arena, keys, n);
	c->vals = vals != NULL ? values_copy(&(*out)->arena, vals, n) : NULL;
	c->n = n;
	return 0;
}

int docraft_op_insert(const docraft_value *key, size_t nkey, docraft_op **out)
{
	return op_new(DOCRAFT__WRITE_OP__KIND__INSERT, key, nkey, out);
}

int docraft_op_update(const docraft_value *key, size_t nkey, docraft_op **out)
{
	return op_new(DOCRAFT__WRITE_OP__KIND__UPDATE, key, nkey, out);
}

int docraft_op_delete_row(const docraft_value *key, size_t nkey, docraft_op **out)
{
	return op_new(DOCRAFT__WRITE_OP__KIND__DELETE_ROW, key, nkey, out);
}

int docraft_op_delete_column(const docraft_value *key, size_t nkey, const char *column,
			     docraft_op **out)
{
	int rv;
	if (out != NULL)
		*out = NULL;
	if ((rv = check_name(column)) != 0)
		return rv;
	if ((rv = op_new(DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN, key, nkey, out)) != 0)
		return rv;
	op_add_col(*out, column);
	return 0;
}

int docraft_op_map_put(const docraft_value *key, size_t nkey, const char *column,
		       const docraft_value *mkeys, const docraft_value *mvals, size_t n,
		       docraft_op **out)
{
	if (n > 0 && mvals == NULL) {
		if (out != NULL)
			*out = NULL;
		return client_error(DOCRAFT_EINVAL, "map put needs values");
	}
	return op_elems(DOCRAFT__WRITE_OP__KIND__MAP_PUT, key, nkey, column, mkeys, mvals, n, out);
}

int docraft_op_map_remove(const docraft_value *key, size_t nkey, const char *column,
			  const docraft_value *mkeys, size_t n, docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__MAP_REMOVE, key, nkey, column, mkeys, NULL, n,
			out);
}

int docraft_op_set_add(const docraft_value *key, size_t nkey, const char *column,
		       const docraft_value *elems, size_t n, docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__SET_ADD, key, nkey, column, elems, NULL, n, out);
}

int docraft_op_set_remove(const docraft_value *key, size_t nkey, const char *column,
			  const docraft_value *elems, size_t n, docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__SET_REMOVE, key, nkey, column, elems, NULL, n,
			out);
}

int docraft_op_list_append(const docraft_value *key, size_t nkey, const char *column,
			   const docraft_value *elems, size_t n, docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__LIST_APPEND, key, nkey, column, elems, NULL, n,
			out);
}

int docraft_op_list_prepend(const docraft_value *key, size_t nkey, const char *column,
			    const docraft_value *elems, size_t n, docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__LIST_PREPEND, key, nkey, column, elems, NULL, n,
			out);
}

int docraft_op_collection_replace(const docraft_value *key, size_t nkey, const char *column,
				  const docraft_value *keys, const docraft_value *vals, size_t n,
				  docraft_op **out)
{
	return op_elems(DOCRAFT__WRITE_OP__KIND__COLLECTION_REPLACE, key, nkey, column, keys, vals,
			n, out);
}

int docraft_op_column(docraft_op *op, const char *column, const docraft_value *v)
{
	struct op_col *c;
	int rv;
	if (op == NULL || v == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = check_name(column)) != 0)
		return rv;
	if (op->kind != DOCRAFT__WRITE_OP__KIND__INSERT &&
	    op->kind != DOCRAFT__WRITE_OP__KIND__UPDATE)
		return client_error(DOCRAFT_EINVAL, "only INSERT and UPDATE ops take columns");
	if (op->ncols >= CLIENT_MAX_VALUES)
		return client_error(DOCRAFT_EINVAL, "too many columns");
	c = op_add_col(op, column);
	c->value = values_copy(&op->arena, v, 1)[0];
	return 0;
}

int docraft_op_collection(docraft_op *op, const char *column, const docraft_value *keys,
			  const docraft_value *vals, size_t n)
{
	struct op_col *c;
	int rv;
	if (op == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = check_name(column)) != 0)
		return rv;
	if (op->kind != DOCRAFT__WRITE_OP__KIND__INSERT)
		return client_error(DOCRAFT_EINVAL,
				    "only INSERT ops take whole collections (UPDATE: "
				    "docraft_op_collection_replace)");
	if (n > CLIENT_MAX_VALUES || (n > 0 && keys == NULL) || op->ncols >= CLIENT_MAX_VALUES)
		return client_error(DOCRAFT_EINVAL, "bad element list");
	c = op_add_col(op, column);
	c->is_collection = true;
	c->keys = values_copy(&op->arena, keys, n);
	c->vals = vals != NULL ? values_copy(&op->arena, vals, n) : NULL;
	c->n = n;
	return 0;
}

int docraft_op_if(docraft_op *op, const char *column, const docraft_value *expected)
{
	struct op_cond *c;
	int rv;
	if (op == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = check_name(column)) != 0)
		return rv;
	if (op->nconds >= CLIENT_MAX_VALUES)
		return client_error(DOCRAFT_EINVAL, "too many conditions");
	if (op->nconds == op->capconds) {
		size_t cap = op->capconds ? 2 * op->capconds : 2;
		struct op_cond *conds = arena_alloc(&op->arena, cap * sizeof *conds);
		if (op->nconds > 0)
			memcpy(conds, op->conds, op->nconds * sizeof *conds);
		op->conds = conds;
		op->capconds = cap;
	}
	c = &op->conds[op->nconds++];
	memset(c, 0, sizeof *c);
	c->name = arena_dup(&op->arena, column, strlen(column) + 1);
	c->has_value = expected != NULL && expected->type != DOCRAFT_TYPE_NULL;
	c->value = c->has_value ? values_copy(&op->arena, expected, 1)[0] : docraft_value_null();
	return 0;
}

void docraft_op_set_ttl(docraft_op *op, int64_t ttl_ms)
{
	if (op == NULL)
		return;
	op->has_ttl = ttl_ms >= 0;
	op->ttl_ms = ttl_ms >= 0 ? ttl_ms : -1;
}

void docraft_op_free(docraft_op *op)
{
	if (op == NULL)
		return;
	arena_free(&op->arena);
	free(op);
}

/* ---- schema builder ---- */

int docraft_schema_new(const char *table, docraft_schema **out, char *errmsg)
{
	docraft_schema *s;
	int rv;
	if (out == NULL || table == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "NULL argument");
	*out = NULL;
	s = xcalloc(1, sizeof *s);
	if ((rv = schema_init(&s->s, table, errmsg)) != 0) {
		free(s);
		return rv;
	}
	*out = s;
	return 0;
}

int docraft_schema_add_column(docraft_schema *s, const char *name, int kind, const char *type,
			      char *errmsg)
{
	enum col_type t, elem, value;
	enum col_kind k;
	bool desc = false;
	if (s == NULL || name == NULL || type == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "NULL argument");
	switch (kind) {
	case DOCRAFT_COLUMN_HASH: k = COL_HASH; break;
	case DOCRAFT_COLUMN_RANGE: k = COL_RANGE; break;
	case DOCRAFT_COLUMN_RANGE_DESC: k = COL_RANGE; desc = true; break;
	case DOCRAFT_COLUMN_REGULAR: k = COL_REGULAR; break;
	default:
		return err_set(errmsg, DOCRAFT_EINVAL, "column %s: unknown kind %d", name, kind);
	}
	if (values_parse_type(type, &t, &elem, &value) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "column %s: unknown type '%s'", name, type);
	return schema_add_column(&s->s, name, k, t, elem, value, desc, errmsg);
}

void docraft_schema_set_default_ttl(docraft_schema *s, int64_t ttl_ms)
{
	if (s != NULL)
		s->s.default_ttl_ms = ttl_ms > 0 ? ttl_ms : 0;
}

void docraft_schema_set_packed(docraft_schema *s, bool packed)
{
	if (s != NULL)
		s->s.packed = packed;
}

void docraft_schema_free(docraft_schema *s)
{
	if (s == NULL)
		return;
	schema_free(&s->s);
	free(s);
}

/* ---- results ---- */

docraft_result *result_new(const struct schema *s)
{
	docraft_result *r = xcalloc(1, sizeof *r);
	arena_init(&r->arena);
	r->ncols = s->ncols;
	r->nkeys = schema_nkeys(s);
	r->cols = arena_alloc(&r->arena, (s->ncols ? s->ncols : 1) * sizeof *r->cols);
	for (size_t i = 0; i < s->ncols; i++) {
		const struct column *c = &s->cols[i];
		struct result_col *rc = &r->cols[i];
		rc->name = arena_dup(&r->arena, c->name, strlen(c->name) + 1);
		rc->kind = c->kind;
		rc->type = c->type;
		rc->elem_type = c->elem_type;
		rc->value_type = c->value_type;
		if (c->type == CT_MAP)
			snprintf(rc->type_name, sizeof rc->type_name, "map<%s, %s>",
				 col_type_name((enum col_type)c->elem_type),
				 col_type_name((enum col_type)c->value_type));
		else if (c->type == CT_SET || c->type == CT_LIST)
			snprintf(rc->type_name, sizeof rc->type_name, "%s<%s>",
				 c->type == CT_SET ? "set" : "list",
				 col_type_name((enum col_type)c->elem_type));
		else
			snprintf(rc->type_name, sizeof rc->type_name, "%s",
				 col_type_name((enum col_type)c->type));
	}
	return r;
}

int result_add_row(docraft_result *r, const Docraft__Row *row, char *errmsg)
{
	struct result_cell *cells;
	int rv;

	if (row->n_key != r->nkeys)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "row with %zu key values, expected %zu",
			       row->n_key, r->nkeys);
	if (r->nrows == r->caprows) {
		size_t cap = r->caprows ? 2 * r->caprows : 16;
		struct result_cell *c = xrealloc(r->cells, cap * r->ncols * sizeof *c);
		r->cells = c;
		r->caprows = cap;
	}
	cells = &r->cells[r->nrows * r->ncols];
	memset(cells, 0, r->ncols * sizeof *cells);
	for (size_t i = 0; i < r->nkeys; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "key column '%s'", r->cols[i].name);
		cells[i].present = true;
		if ((rv = values_from_datum(row->key[i], (enum col_type)r->cols[i].type, what, &r->arena,
					&cells[i].v, errmsg)) != 0)
			return rv;
	}
	for (size_t i = 0; i < row->n_columns; i++) {
		const Docraft__ColumnResult *cr = row->columns[i];
		struct result_col *col = NULL;
		struct result_cell *cell;
		char what[SCHEMA_MAX_NAME + 32];
		size_t k;
		for (k = r->nkeys; k < r->ncols; k++)
			if (cr->name != NULL && strcmp(r->cols[k].name, cr->name) == 0) {
				col = &r->cols[k];
				break;
			}
		if (col == NULL || !cr->present)
			continue; /* a column added since our schema: not shown */
		cell = &cells[k];
		cell->present = true;
		snprintf(what, sizeof what, "column '%s'", col->name);
		if (!col_type_is_collection((enum col_type)col->type)) {
			if ((rv = values_from_datum(cr->value, (enum col_type)col->type, what, &r->arena,
						&cell->v, errmsg)) != 0)
				return rv;
			continue;
		}
		if (col->type == CT_MAP && cr->n_values != cr->n_keys)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: %zu keys, %zu values", what,
				       cr->n_keys, cr->n_values);
		cell->n = cr->n_keys;
		cell->keys = arena_alloc(&r->arena, (cr->n_keys ? cr->n_keys : 1) *
							    sizeof *cell->keys);
		for (size_t e = 0; e < cr->n_keys; e++)
			if ((rv = values_from_datum(cr->keys[e], (enum col_type)col->elem_type, what,
						&r->arena, &cell->keys[e], errmsg)) != 0)
				return rv;
		if (col->type == CT_MAP) {
			cell->vals = arena_alloc(&r->arena, (cr->n_values ? cr->n_values : 1) *
								    sizeof *cell->vals);
			for (size_t e = 0; e < cr->n_values; e++)
				if ((rv = values_from_datum(cr->values[e], (enum col_type)col->value_type,
							what, &r->arena, &cell->vals[e], errmsg)) != 0)
					return rv;
		}
	}
	r->nrows++;
	return 0;
}

size_t docraft_result_nrows(const docraft_result *r)
{
	return r != NULL ? r->nrows : 0;
}

size_t docraft_result_ncolumns(const docraft_result *r)
{
	return r != NULL ? r->ncols : 0;
}

const char *docraft_result_column_name(const docraft_result *r, size_t col)
{
	return r != NULL && col < r->ncols ? r->cols[col].name : NULL;
}

const char *docraft_result_column_type(const docraft_result *r, size_t col)
{
	return r != NULL && col < r->ncols ? r->cols[col].type_name : NULL;
}

bool docraft_result_column_is_collection(const docraft_result *r, size_t col)
{
	return r != NULL && col < r->ncols &&
	       col_type_is_collection((enum col_type)r->cols[col].type);
}

int docraft_result_column_index(const docraft_result *r, const char *name)
{
	for (size_t i = 0; r != NULL && name != NULL && i < r->ncols; i++)
		if (strcmp(r->cols[i].name, name) == 0)
			return (int)i;
	return -1;
}

docraft_value docraft_result_value(const docraft_result *r, size_t row, size_t col)
{
	const struct result_cell *c;
	if (r == NULL || row >= r->nrows || col >= r->ncols)
		return docraft_value_null();
	c = &r->cells[row * r->ncols + col];
	return c->present ? c->v : docraft_value_null();
}

size_t docraft_result_elems(const docraft_result *r, size_t row, size_t col,
			    const docraft_value **keys, const docraft_value **vals)
{
	const struct result_cell *c;
	if (keys != NULL)
		*keys = NULL;
	if (vals != NULL)
		*vals = NULL;
	if (r == NULL || row >= r->nrows || col >= r->ncols)
		return 0;
	c = &r->cells[row * r->ncols + col];
	if (!c->present || c->n == 0)
		return 0;
	if (keys != NULL)
		*keys = c->keys;
	if (vals != NULL)
		*vals = c->vals;
	return c->n;
}

uint64_t docraft_result_read_ht(const docraft_result *r)
{
	return r != NULL ? r->read_ht : 0;
}

bool docraft_result_has_more(const docraft_result *r)
{
	return r != NULL && r->has_more;
}

void docraft_result_free(docraft_result *r)
{
	if (r == NULL)
		return;
	free(r->cells);
	arena_free(&r->arena);
	free(r);
}
