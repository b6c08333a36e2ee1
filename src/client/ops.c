/* The plain objects of the public API: values, row operations, schema
 * builders and results. Nothing here talks to the network; client.c turns
 * ops into WriteRequests with a table's schema, and results out of
 * ReadResponses and ScanResponses.
 *
 * Memory: an op, a schema builder or a result owns an arena holding every
 * byte it was given or decoded; values handed out point into it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/internal.h"
#include "common/check.h"
#include "common/err.h"

/* ---- values ---- */

docraft_value docraft_value_null(void)
{
	docraft_value v;
	memset(&v, 0, sizeof v);
	v.type = DOCRAFT_TYPE_NULL;
	return v;
}

docraft_value docraft_value_bool(bool b)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_BOOL;
	v.v.b = b;
	return v;
}

docraft_value docraft_value_int(int64_t i)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_INT;
	v.v.i = i;
	return v;
}

docraft_value docraft_value_float(float f)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_FLOAT;
	v.v.f = f;
	return v;
}

docraft_value docraft_value_double(double d)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_DOUBLE;
	v.v.d = d;
	return v;
}

docraft_value docraft_value_text(const char *s)
{
	return docraft_value_textn(s, s != NULL ? strlen(s) : 0);
}

docraft_value docraft_value_textn(const char *s, size_t len)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_TEXT;
	v.v.s.p = s != NULL ? s : "";
	v.v.s.len = s != NULL ? len : 0;
	return v;
}

docraft_value docraft_value_blob(const void *p, size_t len)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_BLOB;
	v.v.s.p = p != NULL ? p : "";
	v.v.s.len = p != NULL ? len : 0;
	return v;
}

docraft_value docraft_value_timestamp(int64_t micros)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_TIMESTAMP;
	v.v.i = micros;
	return v;
}

docraft_value docraft_value_uuid(const uint8_t uuid[16])
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_UUID;
	memcpy(v.v.uuid, uuid, 16);
	return v;
}

docraft_value docraft_value_date(uint32_t cql_date)
{
	docraft_value v = docraft_value_null();
	v.type = DOCRAFT_TYPE_DATE;
	v.v.date = cql_date;
	return v;
}

/* Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yoe, doy, mp;
	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	yoe = z - era * 146097;
	yoe = (yoe - yoe / 1460 + yoe / 36524 - yoe / 146096) / 365;
	doy = (z - era * 146097) - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static void format_double(struct buf *b, double d)
{
	char tmp[40];
	if (d != d) {
		buf_printf(b, "NaN");
		return;
	}
	if (d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
		buf_printf(b, "%sInfinity", d < 0 ? "-" : "");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	buf_printf(b, "%s", tmp);
}

static void format_value(struct buf *b, const docraft_value *v, bool quoted)
{
	switch (v->type) {
	case DOCRAFT_TYPE_NULL:
		buf_printf(b, "null");
		break;
	case DOCRAFT_TYPE_BOOL:
		buf_printf(b, "%s", v->v.b ? "True" : "False");
		break;
	case DOCRAFT_TYPE_INT:
		buf_printf(b, "%" PRId64, v->v.i);
		break;
	case DOCRAFT_TYPE_FLOAT: {
		/* The shortest text that reads back as the same float. */
		char tmp[40];
		float f = v->v.f;
		if (f != f || f > 3.4028235e38f || f < -3.4028235e38f) {
			format_double(b, f);
			break;
		}
		for (int prec = 1; prec <= 9; prec++) {
			snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
			if (strtof(tmp, NULL) == f)
				break;
		}
		buf_printf(b, "%s", tmp);
		break;
	}
	case DOCRAFT_TYPE_DOUBLE:
		format_double(b, v->v.d);
		break;
	case DOCRAFT_TYPE_TEXT:
		if (quoted)
			buf_push(b, '\'');
		for (size_t i = 0; i < v->v.s.len; i++) {
			if (quoted && v->v.s.p[i] == '\'')
				buf_push(b, '\'');
			buf_push(b, (uint8_t)v->v.s.p[i]);
		}
		if (quoted)
			buf_push(b, '\'');
		break;
	case DOCRAFT_TYPE_BLOB:
		buf_printf(b, "0x");
		for (size_t i = 0; i < v->v.s.len; i++)
			buf_printf(b, "%02x", (unsigned char)v->v.s.p[i]);
		break;
	case DOCRAFT_TYPE_TIMESTAMP: {
		int64_t us = v->v.i, secs = us / 1000000, frac = us % 1000000, days, rem, y;
		unsigned mo, d;
		if (frac < 0) {
			frac += 1000000;
			secs--;
		}
		days = secs / 86400;
		rem = secs % 86400;
		if (rem < 0) {
			rem += 86400;
			days--;
		}
		civil_from_days(days, &y, &mo, &d);
		if (quoted)
			buf_push(b, '\'');
		buf_printf(b, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%06d+0000", y, mo, d,
			   (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (int)frac);
		if (quoted)
			buf_push(b, '\'');
		break;
	}
	case DOCRAFT_TYPE_UUID: {
		const uint8_t *u = v->v.uuid;
		for (int i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				buf_push(b, '-');
			buf_printf(b, "%02x", u[i]);
		}
		break;
	}
	case DOCRAFT_TYPE_DATE: {
		int64_t y;
		unsigned mo, d;
		civil_from_days((int64_t)v->v.date - (INT64_C(1) << 31), &y, &mo, &d);
		if (quoted)
			buf_push(b, '\'');
		buf_printf(b, "%04" PRId64 "-%02u-%02u", y, mo, d);
		if (quoted)
			buf_push(b, '\'');
		break;
	}
	default:
		buf_printf(b, "?");
		break;
	}
}

size_t docraft_value_format(const docraft_value *v, bool quoted, char *out, size_t size)
{
	struct buf b = BUF_INIT;
	size_t n;
	format_value(&b, v, quoted);
	n = b.len;
	if (size > 0) {
		size_t k = n < size - 1 ? n : size - 1;
		if (k > 0)
			memcpy(out, b.data, k);
		out[k] = '\0';
	}
	buf_free(&b);
	return n;
}

/* ---- ops ---- */

static docraft_value *copy_values(struct arena *a, const docraft_value *v, size_t n)
{
	docraft_value *out = arena_alloc(a, (n ? n : 1) * sizeof *out);
	for (size_t i = 0; i < n; i++) {
		out[i] = v[i];
		if (v[i].type == DOCRAFT_TYPE_TEXT || v[i].type == DOCRAFT_TYPE_BLOB)
			out[i].v.s.p = v[i].v.s.len > 0 ? arena_dup(a, v[i].v.s.p, v[i].v.s.len)
							: "";
	}
	return out;
}

static int op_new(int kind, const docraft_value *key, size_t nkey, docraft_op **out)
{
	docraft_op *op;
	if (out == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	*out = NULL;
	if (key == NULL || nkey == 0 || nkey > CLIENT_MAX_VALUES)
		return client_error(DOCRAFT_EINVAL, "an op needs its primary key (1..%d values)",
				    CLIENT_MAX_VALUES);
	op = calloc(1, sizeof *op);
	if (op == NULL)
		PANIC("out of memory");
	arena_init(&op->arena);
	op->kind = kind;
	op->key = copy_values(&op->arena, key, nkey);
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
	c->keys = copy_values(&(*out)->arena, keys, n);
	c->vals = vals != NULL ? copy_values(&(*out)->arena, vals, n) : NULL;
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
	c->value = copy_values(&op->arena, v, 1)[0];
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
	c->keys = copy_values(&op->arena, keys, n);
	c->vals = vals != NULL ? copy_values(&op->arena, vals, n) : NULL;
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
	c->value = c->has_value ? copy_values(&op->arena, expected, 1)[0] : docraft_value_null();
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
	s = calloc(1, sizeof *s);
	if (s == NULL)
		PANIC("out of memory");
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
	if (convert_parse_type(type, &t, &elem, &value) != 0)
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
	docraft_result *r = calloc(1, sizeof *r);
	if (r == NULL)
		PANIC("out of memory");
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
		struct result_cell *c = realloc(r->cells, cap * r->ncols * sizeof *c);
		if (c == NULL)
			PANIC("out of memory");
		r->cells = c;
		r->caprows = cap;
	}
	cells = &r->cells[r->nrows * r->ncols];
	memset(cells, 0, r->ncols * sizeof *cells);
	for (size_t i = 0; i < r->nkeys; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "key column '%s'", r->cols[i].name);
		cells[i].present = true;
		if ((rv = convert_datum(row->key[i], (enum col_type)r->cols[i].type, what, &r->arena,
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
			if ((rv = convert_datum(cr->value, (enum col_type)col->type, what, &r->arena,
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
			if ((rv = convert_datum(cr->keys[e], (enum col_type)col->elem_type, what,
						&r->arena, &cell->keys[e], errmsg)) != 0)
				return rv;
		if (col->type == CT_MAP) {
			cell->vals = arena_alloc(&r->arena, (cr->n_values ? cr->n_values : 1) *
								    sizeof *cell->vals);
			for (size_t e = 0; e < cr->n_values; e++)
				if ((rv = convert_datum(cr->values[e], (enum col_type)col->value_type,
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
