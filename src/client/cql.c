/* docraft_exec_cql: the CQL subset of `docraft shell` on top of the public
 * client API.
 *
 * Design note.
 *
 * The text is parsed whole first (cql/parser.h): a syntax error runs
 * nothing. Each statement then runs in order and the first failure stops
 * the rest. Statements become public API calls, so the shell exercises
 * exactly what programs use:
 *
 *   CREATE TABLE   cql_create_schema -> docraft_table_create (tablets and
 *                  replication factor from the client options)
 *   DROP TABLE     docraft_table_drop
 *   INSERT         one INSERT op (a NULL collection: a DELETE of the column
 *                  first); USING TTL on the op
 *   UPDATE         the primitive SETs make one UPDATE op; each collection
 *                  assignment its own op (replace, map put/remove, set
 *                  add/remove, list append/prepend); all ops of the
 *                  statement go to one row, hence one WriteRequest, hence
 *                  atomically
 *   DELETE         DELETE FROM: the row; DELETE c: the column; DELETE m[k]:
 *                  a map remove
 *   SELECT         = on every key column: docraft_get; otherwise a scan of
 *                  the hash key (or of the whole table) with = on a prefix
 *                  of the range columns and bounds on the next one pushed
 *                  to the tablet; every WHERE condition is also checked
 *                  here on each row (so ALLOW FILTERING and IN work);
 *                  ORDER BY against the clustering order reverses; LIMIT
 *                  stops paging; AS OF <hybrid time> is the read time
 *
 * Literals are bound with the table's schema from the metadata cache
 * (cql_check_stmt, cql_bind_column, cql_bind_assign) and converted to
 * public values. Errors point at their token: CQL errors at theirs, errors
 * from the cluster (no such table, a server's refusal, unavailable) at the
 * statement's table name. SELECT prints like cqlsh: right-aligned columns,
 * text bare at the top level and quoted inside collections, "(N rows)". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin.h"
#include "client/internal.h"
#include "common/err.h"
#include "common/mem.h"
#include "cql/bind.h"
#include "cql/parser.h"
#include "rpc.pb-c.h"

#define SELECT_PAGE 1000

static void print_out(const docraft_printer *p, const char *s, size_t n)
{
	if (p != NULL && p->out != NULL && n > 0)
		p->out(p->arg, s, n);
}

static void print_err(const docraft_printer *p, const char *s, size_t n)
{
	if (p != NULL && p->err != NULL && n > 0)
		p->err(p->arg, s, n);
}

/* Renders err under its line of text to p->err; returns code. */
static int report(const docraft_printer *p, const char *text, const struct cql_error *err,
		  int code)
{
	struct buf b = BUF_INIT;
	struct buf one = BUF_INIT;
	cql_error_render(text, err, &b);
	print_err(p, (const char *)b.data, b.len);
	cql_error_format(err, &one);
	client_error(code, "%s", buf_cstr(&one));
	buf_free(&one);
	buf_free(&b);
	return code;
}

/* An error of the cluster about a statement, shown at its table name. */
static int report_at(const docraft_printer *p, const char *text, const struct cql_ident *at,
		     int code)
{
	struct cql_error err;
	const char *msg = docraft_errmsg();
	cql_error_set(&err, text, &at->pos, "%s", msg[0] ? msg : docraft_strerror(code));
	return report(p, text, &err, code);
}

static int no_keyspace(const docraft_printer *p, const char *text, const struct cql_ident *ks)
{
	struct cql_error err;
	if (ks->name == NULL)
		return 0;
	cql_error_set(&err, text, &ks->pos,
		      "keyspaces are not supported: docraft has one namespace (write the table "
		      "name alone)");
	return report(p, text, &err, DOCRAFT_EINVAL);
}

static docraft_value value_of(const struct pv *v, enum col_type t)
{
	return values_from_pv(v, t);
}

static docraft_value *values_of(struct arena *a, const struct pv *v, size_t n, enum col_type t)
{
	docraft_value *out = arena_alloc(a, (n ? n : 1) * sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = values_from_pv(&v[i], t);
	return out;
}

/* ---- ops list ---- */

struct oplist {
	docraft_op *v[CLIENT_MAX_VALUES + 2];
	size_t n;
};

static void oplist_free(struct oplist *l)
{
	for (size_t i = 0; i < l->n; i++)
		docraft_op_free(l->v[i]);
	l->n = 0;
}

/* Takes op (made by a constructor that returned rv; NULL then). */
static int oplist_add(struct oplist *l, int rv, docraft_op *op)
{
	if (rv != 0)
		return rv;
	if (l->n >= sizeof l->v / sizeof l->v[0]) {
		docraft_op_free(op);
		return client_error(DOCRAFT_EINVAL, "too many assignments");
	}
	l->v[l->n++] = op;
	return 0;
}

/* The primary key from WHERE k = v AND ... (checked by cql_check_stmt). */
static int bind_where_key(const struct schema *s, const struct cql_cond *w, size_t nw,
			  struct arena *a, docraft_value *key, struct cql_error *err)
{
	for (size_t k = 0; k < schema_nkeys(s); k++) {
		const struct column *col = &s->cols[k];
		for (size_t i = 0; i < nw; i++) {
			struct cql_value cv;
			int rv;
			if (strcmp(w[i].col.name, col->name) != 0)
				continue;
			if ((rv = cql_bind_column(&w[i].value, col, NULL, a, &cv, err)) != 0)
				return rv;
			if (cv.value.type == PV_NULL)
				return cql_error_set(err, NULL, &w[i].value.pos,
						     "primary key column %s cannot be NULL",
						     col->name);
			key[k] = value_of(&cv.value, (enum col_type)col->type);
		}
	}
	return 0;
}

/* ---- INSERT / UPDATE / DELETE ---- */

static int exec_insert(const struct cql_insert *in, const struct schema *s, struct oplist *ops,
		       struct arena *a, struct cql_error *err)
{
	docraft_value key[SCHEMA_MAX_COLUMNS];
	docraft_op *op;
	int rv;

	for (size_t k = 0; k < schema_nkeys(s); k++) {
		const struct column *col = &s->cols[k];
		for (size_t i = 0; i < in->ncols; i++) {
			struct cql_value cv;
			if (strcmp(in->cols[i].name, col->name) != 0)
				continue;
			if ((rv = cql_bind_column(&in->values[i], col, NULL, a, &cv, err)) != 0)
				return rv;
			if (cv.value.type == PV_NULL)
				return cql_error_set(err, NULL, &in->values[i].pos,
						     "primary key column %s cannot be NULL",
						     col->name);
			key[k] = value_of(&cv.value, (enum col_type)col->type);
		}
	}
	rv = docraft_op_insert(key, schema_nkeys(s), &op);
	if ((rv = oplist_add(ops, rv, op)) != 0)
		return rv;
	if (in->has_ttl)
		docraft_op_set_ttl(op, in->ttl_s * 1000);
	for (size_t i = 0; i < in->ncols; i++) {
		const struct column *col = schema_find(s, in->cols[i].name);
		struct cql_value cv;
		if (col == NULL || col->kind != COL_REGULAR)
			continue;
		if ((rv = cql_bind_column(&in->values[i], col, NULL, a, &cv, err)) != 0)
			return rv;
		if (cv.is_collection) {
			rv = docraft_op_collection(
				op, col->name,
				values_of(a, cv.keys, cv.n, (enum col_type)col->elem_type),
				cv.vals != NULL ? values_of(a, cv.vals, cv.n,
							    (enum col_type)col->value_type)
						: NULL,
				cv.n);
		} else if (col_type_is_collection((enum col_type)col->type)) {
			/* c = NULL for a collection: delete it, before the insert. */
			docraft_op *del;
			rv = docraft_op_delete_column(key, schema_nkeys(s), col->name, &del);
			rv = oplist_add(ops, rv, del);
			if (rv == 0) {
				ops->v[ops->n - 1] = ops->v[ops->n - 2];
				ops->v[ops->n - 2] = del;
			}
		} else {
			docraft_value v = value_of(&cv.value, (enum col_type)col->type);
			rv = docraft_op_column(op, col->name, &v);
		}
		if (rv != 0)
			return rv;
	}
	return 0;
}

/* The IF conditions of a conditional UPDATE, on the row of op: primitive
 * regular columns, = a value or NULL (no live value). */
static int bind_ifs(const struct cql_update *up, const struct schema *s, docraft_op *op,
		    struct arena *a, struct cql_error *err)
{
	for (size_t i = 0; i < up->nifs; i++) {
		const struct cql_cond *c = &up->ifs[i];
		const struct column *col = schema_find(s, c->col.name);
		struct cql_value cv;
		docraft_value v;
		int rv;
		if (col == NULL)
			return cql_error_set(err, NULL, &c->col.pos, "unknown column %s",
					     c->col.name);
		if (col->kind != COL_REGULAR)
			return cql_error_set(err, NULL, &c->col.pos,
					     "%s is a primary key column: IF takes regular columns",
					     col->name);
		if (col_type_is_collection((enum col_type)col->type))
			return cql_error_set(err, NULL, &c->col.pos,
					     "%s is a collection: IF takes primitive columns", col->name);
		if ((rv = cql_bind_column(&c->value, col, NULL, a, &cv, err)) != 0)
			return rv;
		v = value_of(&cv.value, (enum col_type)col->type);
		if ((rv = docraft_op_if(op, col->name, cv.value.type == PV_NULL ? NULL : &v)) != 0)
			return rv;
	}
	return 0;
}

static int exec_update(const struct cql_update *up, const struct schema *s, struct oplist *ops,
		       struct arena *a, struct cql_error *err)
{
	docraft_value key[SCHEMA_MAX_COLUMNS];
	size_t nk = schema_nkeys(s);
	docraft_op *set = NULL;
	int rv;

	if ((rv = bind_where_key(s, up->where, up->nwhere, a, key, err)) != 0)
		return rv;
	for (size_t i = 0; i < up->nassigns; i++) {
		const struct cql_assign *as = &up->assigns[i];
		const struct column *col = schema_find(s, as->col.name);
		enum col_type et = (enum col_type)col->elem_type;
		enum col_type vt = (enum col_type)col->value_type;
		struct cql_value cv;
		struct pv mkey;
		docraft_op *op = NULL;

		if ((rv = cql_bind_assign(as, col, NULL, a, &mkey, &cv, err)) != 0)
			return rv;
		switch (as->op) {
		case CQL_ASSIGN_SET:
			if (cv.is_collection) {
				rv = docraft_op_collection_replace(
					key, nk, col->name, values_of(a, cv.keys, cv.n, et),
					cv.vals ? values_of(a, cv.vals, cv.n, vt) : NULL, cv.n, &op);
			} else if (col_type_is_collection((enum col_type)col->type)) {
				rv = docraft_op_delete_column(key, nk, col->name, &op);
			} else {
				docraft_value v = value_of(&cv.value, (enum col_type)col->type);
				if (set == NULL) {
					if ((rv = docraft_op_update(key, nk, &set)) != 0)
						return rv;
					if ((rv = oplist_add(ops, 0, set)) != 0)
						return rv;
					if (up->has_ttl)
						docraft_op_set_ttl(set, up->ttl_s * 1000);
				}
				if ((rv = docraft_op_column(set, col->name, &v)) != 0)
					return rv;
				continue;
			}
			break;
		case CQL_ASSIGN_ADD:
			if (col->type == CT_MAP)
				rv = docraft_op_map_put(key, nk, col->name,
							values_of(a, cv.keys, cv.n, et),
							values_of(a, cv.vals, cv.n, vt), cv.n, &op);
			else if (col->type == CT_SET)
				rv = docraft_op_set_add(key, nk, col->name,
							values_of(a, cv.keys, cv.n, et), cv.n, &op);
			else
				rv = docraft_op_list_append(key, nk, col->name,
							    values_of(a, cv.keys, cv.n, et), cv.n,
							    &op);
			break;
		case CQL_ASSIGN_REMOVE:
			if (col->type == CT_MAP)
				rv = docraft_op_map_remove(key, nk, col->name,
							   values_of(a, cv.keys, cv.n, et), cv.n,
							   &op);
			else
				rv = docraft_op_set_remove(key, nk, col->name,
							   values_of(a, cv.keys, cv.n, et), cv.n,
							   &op);
			break;
		case CQL_ASSIGN_PREPEND:
			rv = docraft_op_list_prepend(key, nk, col->name,
						     values_of(a, cv.keys, cv.n, et), cv.n, &op);
			break;
		case CQL_ASSIGN_ELEM: {
			docraft_value k = values_from_pv(&mkey, et);
			if (cv.value.type == PV_NULL) {
				rv = docraft_op_map_remove(key, nk, col->name, &k, 1, &op);
			} else {
				docraft_value v = values_from_pv(&cv.value, vt);
				rv = docraft_op_map_put(key, nk, col->name, &k, &v, 1, &op);
			}
			break;
		}
		default:
			return cql_error_set(err, NULL, &as->op_pos, "unsupported assignment");
		}
		if ((rv = oplist_add(ops, rv, op)) != 0)
			return rv;
		if (up->has_ttl)
			docraft_op_set_ttl(op, up->ttl_s * 1000);
	}
	/* The conditions go on the first op: they are the whole write's (all
	 * its ops are on one row, so on one tablet). */
	if (up->nifs > 0 && ops->n > 0)
		return bind_ifs(up, s, ops->v[0], a, err);
	return 0;
}

/* cqlsh's answer to a conditional write. */
static void print_applied(const docraft_printer *p, bool applied)
{
	char out[64];
	int n = snprintf(out, sizeof out, "\n [applied]\n-----------\n %9s\n\n",
			 applied ? "True" : "False");
	print_out(p, out, (size_t)n);
}

static int exec_delete(const struct cql_delete *d, const struct schema *s, struct oplist *ops,
		       struct arena *a, struct cql_error *err)
{
	docraft_value key[SCHEMA_MAX_COLUMNS];
	size_t nk = schema_nkeys(s);
	docraft_op *op;
	int rv;

	if ((rv = bind_where_key(s, d->where, d->nwhere, a, key, err)) != 0)
		return rv;
	if (d->ntargets == 0) {
		rv = docraft_op_delete_row(key, nk, &op);
		return oplist_add(ops, rv, op);
	}
	for (size_t i = 0; i < d->ntargets; i++) {
		const struct cql_delete_target *t = &d->targets[i];
		const struct column *col = schema_find(s, t->col.name);
		if (t->has_key) {
			struct pv mk;
			docraft_value k;
			if ((rv = cql_bind_map_key(&t->key, col, NULL, a, &mk, err)) != 0)
				return rv;
			k = values_from_pv(&mk, (enum col_type)col->elem_type);
			rv = docraft_op_map_remove(key, nk, col->name, &k, 1, &op);
			rv = oplist_add(ops, rv, op);
		} else {
			rv = docraft_op_delete_column(key, nk, col->name, &op);
			rv = oplist_add(ops, rv, op);
		}
		if (rv != 0)
			return rv;
	}
	return 0;
}

/* ---- SELECT ---- */

/* One WHERE condition, bound once. */
struct bound_cond {
	size_t col;            /* schema index */
	enum cql_rel rel;
	struct pv value;       /* all but IN */
	struct pv *in;         /* IN: the list */
	size_t n_in;
};

static bool cond_holds(const struct bound_cond *bc, const struct schema *s,
		       const docraft_result *r, size_t row)
{
	enum col_type t = (enum col_type)s->cols[bc->col].type;
	docraft_value v = docraft_result_value(r, row, bc->col);
	struct pv x;
	int cmp;
	if (v.type == DOCRAFT_TYPE_NULL)
		return false;
	x = values_to_pv(&v, t);
	if (bc->rel == CQL_REL_IN) {
		for (size_t i = 0; i < bc->n_in; i++)
			if (pv_compare(&x, &bc->in[i]) == 0)
				return true;
		return false;
	}
	cmp = pv_compare(&x, &bc->value);
	switch (bc->rel) {
	case CQL_REL_EQ: return cmp == 0;
	case CQL_REL_LT: return cmp < 0;
	case CQL_REL_LE: return cmp <= 0;
	case CQL_REL_GT: return cmp > 0;
	case CQL_REL_GE: return cmp >= 0;
	default: return false;
	}
}

struct picked {
	const docraft_result *r;
	size_t row;
};

/* Display width in code points. */
static size_t text_width(const char *s, size_t n)
{
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			w++;
	return w;
}

static void format_cell(struct buf *b, const docraft_result *r, size_t row, size_t col)
{
	const struct result_cell *cell = &r->cells[row * r->ncols + col];
	enum col_type t = (enum col_type)r->cols[col].type;
	char tmp[256];
	if (!cell->present) {
		buf_printf(b, "null");
		return;
	}
	if (!col_type_is_collection(t)) {
		size_t n = docraft_value_format(&cell->v, false, tmp, sizeof tmp);
		if (n < sizeof tmp) {
			buf_append(b, tmp, n);
		} else {
			char *big = xmalloc(n + 1);
			docraft_value_format(&cell->v, false, big, n + 1);
			buf_append(b, big, n);
			free(big);
		}
		return;
	}
	buf_push(b, t == CT_LIST ? '[' : '{');
	for (size_t i = 0; i < cell->n; i++) {
		struct buf one = BUF_INIT;
		size_t n;
		if (i > 0)
			buf_printf(b, ", ");
		n = docraft_value_format(&cell->keys[i], true, NULL, 0);
		buf_reserve(&one, n + 1);
		docraft_value_format(&cell->keys[i], true, (char *)one.data, n + 1);
		buf_append(b, one.data, n);
		if (t == CT_MAP) {
			buf_printf(b, ": ");
			n = docraft_value_format(&cell->vals[i], true, NULL, 0);
			buf_reserve(&one, n + 1);
			docraft_value_format(&cell->vals[i], true, (char *)one.data, n + 1);
			buf_append(b, one.data, n);
		}
		buf_free(&one);
	}
	buf_push(b, t == CT_LIST ? ']' : '}');
}

/* Prints cells[(nrows + 1) * ncols] (the names first, then each row) as
 * cqlsh does: right-aligned, then "(N rows)". */
static void print_grid(const docraft_printer *p, struct buf *cells, size_t ncols, size_t nrows)
{
	size_t *width = xcalloc(ncols ? ncols : 1, sizeof *width);
	struct buf out = BUF_INIT;

	for (size_t i = 0; i <= nrows; i++)
		for (size_t j = 0; j < ncols; j++) {
			struct buf *b = &cells[i * ncols + j];
			size_t w = text_width((const char *)b->data, b->len);
			if (w > width[j])
				width[j] = w;
		}
	buf_printf(&out, "\n");
	for (size_t i = 0; i <= nrows; i++) {
		for (size_t j = 0; j < ncols; j++) {
			struct buf *b = &cells[i * ncols + j];
			size_t w = text_width((const char *)b->data, b->len);
			buf_printf(&out, "%s%*s", j == 0 ? " " : " | ", (int)(width[j] - w), "");
			buf_append(&out, b->data, b->len);
		}
		buf_printf(&out, "\n");
		if (i == 0) {
			for (size_t j = 0; j < ncols; j++) {
				if (j > 0)
					buf_push(&out, '+');
				for (size_t k = 0; k < width[j] + 2; k++)
					buf_push(&out, '-');
			}
			buf_printf(&out, "\n");
		}
	}
	buf_printf(&out, "\n(%zu rows)\n", nrows);
	print_out(p, (const char *)out.data, out.len);
	buf_free(&out);
	free(width);
}

static void print_table(const docraft_printer *p, const size_t *cols, size_t ncols,
			const char *const *names, const struct picked *rows, size_t nrows)
{
	struct buf *cells = xcalloc((nrows + 1) * (ncols ? ncols : 1), sizeof *cells);

	for (size_t j = 0; j < ncols; j++)
		buf_printf(&cells[j], "%s", names[j]);
	for (size_t i = 0; i < nrows; i++)
		for (size_t j = 0; j < ncols; j++)
			format_cell(&cells[(i + 1) * ncols + j], rows[i].r, rows[i].row, cols[j]);
	print_grid(p, cells, ncols, nrows);
	for (size_t i = 0; i < (nrows + 1) * ncols; i++)
		buf_free(&cells[i]);
	free(cells);
}

static int exec_select(docraft_client *c, const char *text, const struct cql_select *sel,
		       const struct schema *s, const docraft_printer *p, struct arena *a,
		       struct cql_error *err)
{
	size_t nk = schema_nkeys(s), ncond = 0;
	struct bound_cond *conds = arena_alloc(a, (sel->nwhere + 1) * sizeof *conds);
	size_t eq[SCHEMA_MAX_COLUMNS], lo[SCHEMA_MAX_COLUMNS], hi[SCHEMA_MAX_COLUMNS];
	docraft_value keyv[SCHEMA_MAX_COLUMNS];
	size_t cols[SCHEMA_MAX_COLUMNS];
	const char *names[SCHEMA_MAX_COLUMNS];
	size_t ncols = 0, n_hash_eq = 0, n_eq = 0;
	docraft_result **results = NULL;
	size_t nresults = 0;
	struct picked *rows = NULL;
	size_t nrows = 0, caprows = 0;
	uint64_t limit = sel->has_limit ? (uint64_t)sel->limit : 0;
	int rv = 0;

	for (size_t k = 0; k < nk; k++)
		eq[k] = lo[k] = hi[k] = SIZE_MAX;
	/* Columns shown. */
	if (sel->star) {
		for (size_t i = 0; i < s->ncols; i++) {
			cols[ncols] = i;
			names[ncols++] = s->cols[i].name;
		}
	} else {
		for (size_t i = 0; i < sel->ncols; i++) {
			const struct column *col = schema_find(s, sel->cols[i].name);
			cols[ncols] = (size_t)(col - s->cols);
			names[ncols++] = col->name;
		}
	}
	/* Bind every condition once. */
	for (size_t i = 0; i < sel->nwhere; i++) {
		const struct cql_cond *w = &sel->where[i];
		const struct column *col = schema_find(s, w->col.name);
		struct bound_cond *bc = &conds[ncond++];
		size_t k = (size_t)(col - s->cols);
		memset(bc, 0, sizeof *bc);
		bc->col = k;
		bc->rel = w->rel;
		if (col_type_is_collection((enum col_type)col->type))
			return cql_error_set(err, NULL, &w->col.pos,
					     "conditions on collection column %s are not supported",
					     col->name);
		if (w->rel == CQL_REL_IN) {
			char msg[DOCRAFT_ERRMSG_SIZE];
			if (w->value.kind != CQL_LIT_LIST)
				return cql_error_set(err, NULL, &w->value.pos,
						     "IN takes a list: (a, b, ...)");
			bc->n_in = w->value.v.coll.n;
			bc->in = arena_alloc(a, (bc->n_in ? bc->n_in : 1) * sizeof *bc->in);
			for (size_t j = 0; j < bc->n_in; j++)
				if (cql_bind_value(&w->value.v.coll.items[j], (enum col_type)col->type,
						   a, &bc->in[j], msg) != 0)
					return cql_error_set(err, NULL,
							     &w->value.v.coll.items[j].pos, "%s",
							     msg);
			continue;
		} else {
			struct cql_value cv;
			if ((rv = cql_bind_column(&w->value, col, NULL, a, &cv, err)) != 0)
				return rv;
			bc->value = cv.value;
			if (cv.value.type == PV_NULL)
				return cql_error_set(err, NULL, &w->value.pos,
						     "NULL cannot be compared (no row matches)");
		}
		if (k < nk) {
			if (w->rel == CQL_REL_EQ)
				eq[k] = ncond - 1;
			else if (w->rel == CQL_REL_GT || w->rel == CQL_REL_GE)
				lo[k] = ncond - 1;
			else
				hi[k] = ncond - 1;
		}
	}
	for (size_t k = 0; k < s->n_hash; k++)
		if (eq[k] != SIZE_MAX)
			n_hash_eq++;
	if (n_hash_eq == s->n_hash)
		while (n_eq < s->n_range && eq[s->n_hash + n_eq] != SIZE_MAX)
			n_eq++;
	for (size_t k = 0; k < nk; k++)
		if (eq[k] != SIZE_MAX)
			keyv[k] = values_from_pv(&conds[eq[k]].value, (enum col_type)s->cols[k].type);

	if (n_hash_eq == s->n_hash && n_eq == s->n_range) {
		/* A point read. */
		docraft_result *r;
		rv = docraft_get(c, s->table, keyv, nk, sel->has_as_of ? sel->as_of : 0, &r);
		if (rv != 0)
			return report_at(p, text, &sel->table, rv);
		results = xcalloc(1, sizeof *results);
		results[nresults++] = r;
	} else {
		docraft_scan_spec spec;
		docraft_value lower, upper;
		docraft_result *r = NULL;
		memset(&spec, 0, sizeof spec);
		if (n_hash_eq == s->n_hash) {
			size_t bk = s->n_hash + n_eq;
			spec.hash_key = keyv;
			spec.n_hash = s->n_hash;
			spec.range_eq = keyv + s->n_hash;
			spec.n_eq = n_eq;
			if (bk < nk && lo[bk] != SIZE_MAX) {
				lower = values_from_pv(&conds[lo[bk]].value,
							(enum col_type)s->cols[bk].type);
				spec.lower = &lower;
				spec.lower_incl = conds[lo[bk]].rel == CQL_REL_GE;
			}
			if (bk < nk && hi[bk] != SIZE_MAX && conds[hi[bk]].rel != CQL_REL_IN) {
				upper = values_from_pv(&conds[hi[bk]].value,
							(enum col_type)s->cols[bk].type);
				spec.upper = &upper;
				spec.upper_incl = conds[hi[bk]].rel == CQL_REL_LE;
			}
		}
		if (sel->norder_by > 0)
			spec.reverse = sel->order_by[0].desc != s->cols[s->n_hash].desc;
		spec.read_ht = sel->has_as_of ? sel->as_of : 0;
		spec.limit = SELECT_PAGE;
		spec.page_size = SELECT_PAGE;
		/* Every condition pushed to the tablet: LIMIT can be too. */
		if (limit != 0 && limit < SELECT_PAGE) {
			size_t pushed = 0;
			for (size_t k = 0; spec.n_hash > 0 && k < s->n_hash + n_eq; k++)
				pushed++;
			if (spec.lower != NULL)
				pushed++;
			if (spec.upper != NULL)
				pushed++;
			if (pushed == ncond)
				spec.limit = spec.page_size = (uint32_t)limit;
		}
		for (;;) {
			docraft_result *next;
			bool full = false;
			if (r == NULL)
				rv = docraft_scan(c, s->table, &spec, &next);
			else
				rv = docraft_scan_resume(c, r, SELECT_PAGE, &next);
			if (rv != 0)
				break;
			r = next;
			results = xrealloc(results, (nresults + 1) * sizeof *results);
			results[nresults++] = r;
			for (size_t i = 0; i < r->nrows && !full; i++) {
				bool ok = true;
				for (size_t j = 0; j < ncond && ok; j++)
					ok = cond_holds(&conds[j], s, r, i);
				if (!ok)
					continue;
				if (nrows == caprows) {
					caprows = caprows ? 2 * caprows : 64;
					rows = xrealloc(rows, caprows * sizeof *rows);
				}
				rows[nrows].r = r;
				rows[nrows++].row = i;
				full = limit != 0 && nrows >= limit;
			}
			if (full || !docraft_result_has_more(r))
				break;
		}
		if (rv != 0) {
			rv = report_at(p, text, &sel->table, rv);
			goto out;
		}
		goto print;
	}
	/* The point read's row, if it passes the other conditions. */
	for (size_t i = 0; i < results[0]->nrows; i++) {
		bool ok = true;
		for (size_t j = 0; j < ncond && ok; j++)
			ok = cond_holds(&conds[j], s, results[0], i);
		if (!ok)
			continue;
		rows = xrealloc(rows, (nrows + 1) * sizeof *rows);
		rows[nrows].r = results[0];
		rows[nrows++].row = i;
	}
print:
	print_table(p, cols, ncols, names, rows, nrows);
out:
	for (size_t i = 0; i < nresults; i++)
		docraft_result_free(results[i]);
	free(results);
	free(rows);
	return rv;
}

/* ---- Redis databases (issue 17) ---- */

/* A statement on a Redis database (schema s): SELECT * [LIMIT n] lists
 * its keys through the YEDIS engine (redis_view.c); writes are refused. */
static int exec_redis(docraft_client *c, const char *text, const struct cql_stmt *st,
		      const struct cql_ident *table, const docraft_printer *p)
{
	static const char *const names[4] = {"key", "type", "ttl", "value"};
	const struct cql_select *sel = &st->u.select;
	struct buf *rows = NULL, *cells;
	struct cql_error err;
	size_t n = 0;
	unsigned db;
	int rv;

	if (st->kind != CQL_STMT_SELECT) {
		cql_error_set(&err, text, &table->pos,
			      "%s is a Redis database: use a Redis client", table->name);
		return report(p, text, &err, DOCRAFT_EINVAL);
	}
	if (!sel->star || sel->nwhere > 0 || sel->norder_by > 0 || sel->has_as_of) {
		cql_error_set(&err, text, &table->pos,
			      "%s is a Redis database: SELECT * FROM %s [LIMIT n] lists its keys "
			      "(key, type, ttl, value); no columns, WHERE, ORDER BY or AS OF",
			      table->name, table->name);
		return report(p, text, &err, DOCRAFT_EINVAL);
	}
	if (sscanf(table->name, "redis_%u", &db) != 1) {
		cql_error_set(&err, text, &table->pos, "%s: not a redis_<n> name", table->name);
		return report(p, text, &err, DOCRAFT_EINVAL);
	}
	rv = redis_view_rows(c, db, sel->has_limit ? (uint64_t)sel->limit : UINT64_MAX, &rows, &n);
	if (rv != 0)
		return report_at(p, text, table, rv);
	cells = xcalloc((n + 1) * 4, sizeof *cells);
	for (size_t j = 0; j < 4; j++)
		buf_printf(&cells[j], "%s", names[j]);
	memcpy(cells + 4, rows, n * 4 * sizeof *cells);
	print_grid(p, cells, 4, n);
	for (size_t i = 0; i < (n + 1) * 4; i++)
		buf_free(&cells[i]);
	free(cells);
	free(rows);
	return 0;
}

/* DESCRIBE TABLES: one line per table ("name", or "name  (Redis
 * database)"); DESCRIBE TABLE t: admin_format_table's text. */
static int exec_describe(docraft_client *c, const char *text, const struct cql_describe *d,
			 const docraft_printer *p)
{
	struct buf out = BUF_INIT;
	int rv;

	if ((rv = no_keyspace(p, text, &d->keyspace)) != 0)
		return rv;
	if (d->tables) {
		Docraft__ListTablesResponse *resp;
		if ((rv = admin_list_tables(c, &resp)) != 0)
			return rv;
		buf_printf(&out, "\n");
		for (size_t i = 0; i < resp->n_tables; i++)
			buf_printf(&out, "%s%s\n", resp->tables[i]->name,
				   resp->tables[i]->redis ? "  (Redis database)" : "");
		if (resp->n_tables == 0)
			buf_printf(&out, "(no tables)\n");
		docraft__list_tables_response__free_unpacked(resp, NULL);
	} else {
		Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
		Docraft__GetTableResponse *resp;
		struct buf reply = BUF_INIT;
		req.name = (char *)d->table.name;
		rv = client_master_call(c, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &reply);
		resp = (Docraft__GetTableResponse *)admin_answer(
			&rv, &reply, &docraft__get_table_response__descriptor, "GetTable");
		if (resp == NULL)
			return report_at(p, text, &d->table, rv);
		if (resp->schema != NULL)
			admin_format_table(resp->schema, &out);
		buf_printf(&out, "\n");
		docraft__get_table_response__free_unpacked(resp, NULL);
	}
	print_out(p, (const char *)out.data, out.len);
	buf_free(&out);
	return 0;
}

/* ---- statements ---- */

static int exec_stmt(docraft_client *c, const char *text, const struct cql_stmt *st,
		     const docraft_printer *p)
{
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s;
	const struct cql_ident *table = NULL, *ks = NULL;
	struct oplist *ops = NULL;
	int rv;

	switch (st->kind) {
	case CQL_STMT_CREATE_TABLE: {
		const struct cql_create_table *ct = &st->u.create;
		docraft_table_options opts;
		docraft_schema ds;
		if ((rv = no_keyspace(p, text, &ct->keyspace)) != 0)
			return rv;
		if ((rv = cql_create_schema(ct, &ds.s, &err)) != 0)
			return report(p, text, &err, rv);
		memset(&opts, 0, sizeof opts);
		opts.if_not_exists = ct->if_not_exists;
		rv = docraft_table_create(c, &ds, &opts);
		schema_free(&ds.s);
		return rv != 0 ? report_at(p, text, &ct->table, rv) : 0;
	}
	case CQL_STMT_DROP_TABLE:
		if ((rv = no_keyspace(p, text, &st->u.drop.keyspace)) != 0)
			return rv;
		rv = docraft_table_drop(c, st->u.drop.table.name, st->u.drop.if_exists);
		return rv != 0 ? report_at(p, text, &st->u.drop.table, rv) : 0;
	case CQL_STMT_INSERT:
		table = &st->u.insert.table;
		ks = &st->u.insert.keyspace;
		break;
	case CQL_STMT_UPDATE:
		table = &st->u.update.table;
		ks = &st->u.update.keyspace;
		break;
	case CQL_STMT_DELETE:
		table = &st->u.del.table;
		ks = &st->u.del.keyspace;
		break;
	case CQL_STMT_SELECT:
		table = &st->u.select.table;
		ks = &st->u.select.keyspace;
		break;
	case CQL_STMT_DESCRIBE:
		return exec_describe(c, text, &st->u.describe, p);
	default:
		return client_error(DOCRAFT_EINVAL, "unknown statement");
	}
	if ((rv = no_keyspace(p, text, ks)) != 0)
		return rv;
	if ((rv = client_table_schema(c, table->name, &s)) != 0)
		return report_at(p, text, table, rv);
	if (s.redis) {
		rv = exec_redis(c, text, st, table, p);
		goto out;
	}
	if ((rv = cql_check_stmt(st, &s, &err)) != 0) {
		rv = report(p, text, &err, rv);
		goto out;
	}
	err.message[0] = '\0';
	if (st->kind == CQL_STMT_SELECT) {
		rv = exec_select(c, text, &st->u.select, &s, p, &a, &err);
		if (rv == DOCRAFT_EINVAL && err.message[0] != '\0')
			rv = report(p, text, &err, rv);
		goto out;
	}
	ops = xcalloc(1, sizeof *ops);
	err.message[0] = '\0';
	if (st->kind == CQL_STMT_INSERT)
		rv = exec_insert(&st->u.insert, &s, ops, &a, &err);
	else if (st->kind == CQL_STMT_UPDATE)
		rv = exec_update(&st->u.update, &s, ops, &a, &err);
	else
		rv = exec_delete(&st->u.del, &s, ops, &a, &err);
	if (rv != 0) {
		if (err.message[0] != '\0')
			rv = report(p, text, &err, rv);
		else
			rv = report_at(p, text, table, rv);
		goto out;
	}
	if (ops->n > 0 && (rv = docraft_write(c, table->name, ops->v, ops->n, DOCRAFT_TTL_DEFAULT,
					      NULL)) != 0 &&
	    !(rv == DOCRAFT_ECONDITION && st->kind == CQL_STMT_UPDATE && st->u.update.nifs > 0))
		rv = report_at(p, text, table, rv);
	if (st->kind == CQL_STMT_UPDATE && st->u.update.nifs > 0 &&
	    (rv == 0 || rv == DOCRAFT_ECONDITION)) {
		print_applied(p, rv == 0);
		rv = 0;
	}
out:
	if (ops != NULL) {
		oplist_free(ops);
		free(ops);
	}
	schema_free(&s);
	arena_free(&a);
	return rv;
}

int docraft_exec_cql(docraft_client *c, const char *text, const docraft_printer *p)
{
	struct cql_stmts st;
	struct cql_error err;
	int rv;

	if (c == NULL || text == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = cql_parse(text, &st, &err)) != 0)
		return report(p, text, &err, rv);
	for (size_t i = 0; i < st.n && rv == 0; i++) {
		err.message[0] = '\0';
		rv = exec_stmt(c, text, &st.v[i], p);
	}
	cql_free(&st);
	return rv;
}

bool docraft_cql_complete(const char *text)
{
	struct cql_lexer lx;
	struct cql_token tok;
	struct cql_error err;
	enum cql_tok last = CQL_TOK_EOF;

	if (text == NULL)
		return false;
	cql_lexer_init(&lx, text, strlen(text));
	for (;;) {
		if (cql_lex_next(&lx, &tok, &err) != 0)
			/* An open string or comment needs more lines; any other
			 * error is for the parser to show. */
			return strstr(err.message, "unterminated") == NULL;
		if (tok.kind == CQL_TOK_EOF)
			return last == CQL_TOK_SEMI;
		last = tok.kind;
	}
}

int docraft_table_create_cql(docraft_client *c, const char *cql,
			     const docraft_table_options *options)
{
	struct cql_stmts st;
	struct cql_error err;
	docraft_table_options opts;
	docraft_schema ds;
	struct buf b = BUF_INIT;
	int rv;

	if (c == NULL || cql == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = cql_parse(cql, &st, &err)) != 0) {
		cql_error_format(&err, &b);
		rv = client_error(rv, "%s", buf_cstr(&b));
		buf_free(&b);
		return rv;
	}
	if (st.n != 1 || st.v[0].kind != CQL_STMT_CREATE_TABLE) {
		cql_free(&st);
		return client_error(DOCRAFT_EINVAL, "expected one CREATE TABLE statement");
	}
	if ((rv = cql_create_schema(&st.v[0].u.create, &ds.s, &err)) != 0) {
		cql_error_format(&err, &b);
		rv = client_error(rv, "%s", buf_cstr(&b));
		buf_free(&b);
		cql_free(&st);
		return rv;
	}
	if (options != NULL)
		opts = *options;
	else
		memset(&opts, 0, sizeof opts);
	opts.if_not_exists = opts.if_not_exists || st.v[0].u.create.if_not_exists;
	rv = docraft_table_create(c, &ds, &opts);
	schema_free(&ds.s);
	cql_free(&st);
	return rv;
}
