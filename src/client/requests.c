/* libdocraft's requests: write, get, scan, create/drop table, and the
 * generic master and tablet calls behind the admin commands and the CQL
 * executor. Each is a job (internal.h) run on the client's loop.
 *
 * Design note.
 *
 * Writes. docraft_write converts every op with the table's schema from the
 * cache (so a bad column or type fails before anything is sent), hashes
 * each row's hash columns (key_hash_components on the very values the
 * tablet server will decode), groups the ops by tablet keeping their
 * order, and sends one WriteRequest per group, all at once. Each group has
 * its own sequence number, taken from the client's counter when the group
 * is built and kept across every retry of that group: with the client id
 * (16 random bytes per client) it names the write, and a tablet that
 * applied it already answers a retry from its retry table. min_running
 * (the smallest sequence number of this client still in flight, set on
 * every attempt) lets the tablet forget the entries of writes this client
 * will never retry.
 *
 * Conditional writes (docraft_op_if). Conditions are converted with the
 * same schema checks as column values and travel in the WriteRequest of
 * the one tablet the write falls on (a write with conditions whose ops
 * fall on several tablets is DOCRAFT_EINVAL before anything is sent: no
 * tablet could evaluate them atomically with the others' ops). The tablet
 * evaluates them where it applies the write; CONDITION is final (not
 * retried) and becomes DOCRAFT_ECONDITION, "condition not met".
 *
 * Scans. A scan with a hash key talks to one tablet; without one it walks
 * the tablets in hash order (reverse order for reverse scans), following a
 * cursor hash rather than a tablet index so that a refresh in the middle
 * of a scan cannot skip or repeat a tablet. Later pages (and later
 * tablets) read at the read time of the first page, so a multi-page scan
 * is one snapshot. Each page has the full timeout: the bound is per RPC
 * round, not per scan, which may be arbitrarily large.
 *
 * Tables. CREATE TABLE with IF NOT EXISTS first tries to create, and on a
 * failure asks GetTable whether the table is there (it may even be from an
 * earlier attempt whose answer was lost); DROP forgets the table in the
 * cache. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "client/retry.h"
#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "rpc/wire.h"
#include "rpc.pb-c.h"

/* ---- converting ops ---- */

static const struct column *find_column(const struct schema *s, const char *name,
					char *errmsg)
{
	const struct column *col = schema_find(s, name);
	if (col == NULL)
		err_set(errmsg, DOCRAFT_EINVAL, "table %s has no column '%s'", s->table, name);
	return col;
}

static void *alloc0(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

/* Converts a column's value(s) into cv. */
static int build_colval(const struct schema *s, const struct op_col *oc, int kind,
			struct arena *a, Docraft__ColumnValue *cv, char *errmsg)
{
	const struct column *col = find_column(s, oc->name, errmsg);
	char what[SCHEMA_MAX_NAME + 32];
	struct pv pv;
	int rv;

	if (col == NULL)
		return DOCRAFT_EINVAL;
	snprintf(what, sizeof what, "column '%s'", col->name);
	if (col->kind != COL_REGULAR)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is a primary key column", what);
	docraft__column_value__init(cv);
	/* Copied: a refresh may replace the cached schema before a retry. */
	cv->name = arena_dup(a, col->name, strlen(col->name) + 1);
	switch (kind) {
	case DOCRAFT__WRITE_OP__KIND__MAP_PUT:
	case DOCRAFT__WRITE_OP__KIND__MAP_REMOVE:
		if (col->type != CT_MAP)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a map", what);
		break;
	case DOCRAFT__WRITE_OP__KIND__SET_ADD:
	case DOCRAFT__WRITE_OP__KIND__SET_REMOVE:
		if (col->type != CT_SET)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a set", what);
		break;
	case DOCRAFT__WRITE_OP__KIND__LIST_APPEND:
	case DOCRAFT__WRITE_OP__KIND__LIST_PREPEND:
		if (col->type != CT_LIST)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a list", what);
		break;
	case DOCRAFT__WRITE_OP__KIND__COLLECTION_REPLACE:
		if (!col_type_is_collection((enum col_type)col->type))
			return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a collection", what);
		break;
	case DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN:
		return 0;
	default:
		break;
	}
	if (!oc->is_collection) {
		if (col_type_is_collection((enum col_type)col->type)) {
			if (oc->value.type == DOCRAFT_TYPE_NULL)
				return err_set(errmsg, DOCRAFT_EINVAL,
					       "%s is a collection: delete it with "
					       "docraft_op_delete_column",
					       what);
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "%s is a %s: give its elements "
				       "(docraft_op_collection)",
				       what, col_type_name((enum col_type)col->type));
		}
		cv->value = alloc0(a, sizeof *cv->value);
		return values_to_datum(&oc->value, (enum col_type)col->type, true, what, a, cv->value,
				     &pv, errmsg);
	}
	if (!col_type_is_collection((enum col_type)col->type))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a collection", what);
	if (col->type == CT_MAP && kind != DOCRAFT__WRITE_OP__KIND__MAP_REMOVE && oc->vals == NULL &&
	    oc->n > 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is a map: values are missing", what);
	if (col->type != CT_MAP && oc->vals != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a map: no values expected", what);
	cv->n_keys = oc->n;
	cv->keys = alloc0(a, oc->n * sizeof *cv->keys);
	for (size_t i = 0; i < oc->n; i++) {
		cv->keys[i] = alloc0(a, sizeof *cv->keys[i]);
		if ((rv = values_to_datum(&oc->keys[i], (enum col_type)col->elem_type, false, what, a,
					cv->keys[i], &pv, errmsg)) != 0)
			return rv;
	}
	if (oc->vals != NULL && kind != DOCRAFT__WRITE_OP__KIND__MAP_REMOVE) {
		cv->n_values = oc->n;
		cv->values = alloc0(a, oc->n * sizeof *cv->values);
		for (size_t i = 0; i < oc->n; i++) {
			cv->values[i] = alloc0(a, sizeof *cv->values[i]);
			if ((rv = values_to_datum(&oc->vals[i], (enum col_type)col->value_type, false,
						what, a, cv->values[i], &pv, errmsg)) != 0)
				return rv;
		}
	}
	return 0;
}

/* The primary key of a row as Datums, and its hash. */
static int build_key(const struct schema *s, const docraft_value *key, size_t nkey,
		     struct arena *a, Docraft__Datum ***out, uint32_t *hash, char *errmsg)
{
	size_t nk = schema_nkeys(s);
	struct pv pv[SCHEMA_MAX_COLUMNS];
	Docraft__Datum **d;
	int rv;

	if (nkey != nk)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s has %zu primary key columns, %zu values given", s->table,
			       nk, nkey);
	d = alloc0(a, nk * sizeof *d);
	for (size_t i = 0; i < nk; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "key column '%s'", s->cols[i].name);
		d[i] = alloc0(a, sizeof *d[i]);
		if ((rv = values_to_datum(&key[i], (enum col_type)s->cols[i].type, false, what, a,
					d[i], &pv[i], errmsg)) != 0)
			return rv;
	}
	*out = d;
	*hash = key_hash_components(pv, s->n_hash);
	return 0;
}

static int build_op(const struct schema *s, const docraft_op *op, int64_t ttl_ms,
		    struct arena *a, Docraft__WriteOp **out, uint32_t *hash, char *errmsg)
{
	Docraft__WriteOp *wo = alloc0(a, sizeof *wo);
	int rv;

	docraft__write_op__init(wo);
	wo->kind = (Docraft__WriteOp__Kind)op->kind;
	if ((rv = build_key(s, op->key, op->nkey, a, &wo->key, hash, errmsg)) != 0)
		return rv;
	wo->n_key = op->nkey;
	wo->ttl_ms = op->has_ttl ? op->ttl_ms : ttl_ms;
	if (op->kind == DOCRAFT__WRITE_OP__KIND__DELETE_ROW ||
	    op->kind == DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN)
		wo->ttl_ms = -1;
	wo->n_columns = op->ncols;
	wo->columns = alloc0(a, op->ncols * sizeof *wo->columns);
	for (size_t i = 0; i < op->ncols; i++) {
		wo->columns[i] = alloc0(a, sizeof *wo->columns[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(op->cols[j].name, op->cols[i].name) == 0)
				return err_set(errmsg, DOCRAFT_EINVAL, "column '%s' is given twice",
					       op->cols[i].name);
		if ((rv = build_colval(s, &op->cols[i], op->kind, a, wo->columns[i], errmsg)) != 0)
			return rv;
	}
	*out = wo;
	return 0;
}

/* The conditions of op (docraft_op_if) on its row, whose key is key[] as
 * built by build_key: the column must be a primitive regular column, the
 * value of its type. Appended to out[*n...] (room for op->nconds more). */
static int build_conds(const struct schema *s, const docraft_op *op, Docraft__Datum **key,
		       struct arena *a, Docraft__Condition **out, size_t *n, char *errmsg)
{
	for (size_t i = 0; i < op->nconds; i++) {
		const struct op_cond *oc = &op->conds[i];
		const struct column *col = find_column(s, oc->name, errmsg);
		Docraft__Condition *pc;
		char what[SCHEMA_MAX_NAME + 48];
		struct pv pv;
		int rv;
		if (col == NULL)
			return err_wrap(errmsg, DOCRAFT_EINVAL, "condition");
		snprintf(what, sizeof what, "condition on column '%s'", col->name);
		if (col->kind != COL_REGULAR)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: a primary key column", what);
		if (col_type_is_collection((enum col_type)col->type))
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "%s: a %s (conditions take primitive columns only)", what,
				       col_type_name((enum col_type)col->type));
		pc = alloc0(a, sizeof *pc);
		docraft__condition__init(pc);
		pc->key = key;
		pc->n_key = op->nkey;
		/* Copied: a refresh may replace the cached schema before a retry. */
		pc->column = arena_dup(a, col->name, strlen(col->name) + 1);
		if (oc->has_value) {
			pc->has_value = 1;
			pc->value = alloc0(a, sizeof *pc->value);
			if ((rv = values_to_datum(&oc->value, (enum col_type)col->type, false, what, a,
						pc->value, &pv, errmsg)) != 0)
				return rv;
		}
		out[(*n)++] = pc;
	}
	return 0;
}

/* ---- write ---- */

struct write_job;

struct wgroup {
	struct write_job *job;
	struct tcall tc;
	Docraft__WriteRequest req;
	Docraft__WriteOp **ops;
	size_t n, cap;
	size_t first_op;
	uint32_t route;
	struct client_seq seq;
	int status;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t ht;
};

struct write_job {
	struct job base;
	char *table;
	docraft_op **ops;
	size_t n;
	int64_t ttl_ms;
	struct tload load;
	struct mc_table *t;
	struct wgroup *groups;
	size_t ngroups, pending;
	Docraft__Condition **conds; /* of every op, in op order (arena) */
	size_t nconds;
	struct arena arena;
};

static void write_free(struct job *base)
{
	struct write_job *j = (struct write_job *)base;
	free(j->table);
	free(j->ops);
	free(j->groups);
	arena_free(&j->arena);
	free(j);
}

static void write_prepare(struct tcall *tc)
{
	struct wgroup *g = tc->data;
	g->req.min_running = client_min_running(tc->c);
}

static void write_group_done(struct tcall *tc, int status, const char *errmsg,
			     const uint8_t *reply, size_t len)
{
	struct wgroup *g = tc->data;
	struct write_job *j = g->job;

	client_seq_release(j->base.c, &g->seq);
	g->status = status;
	if (status == DOCRAFT_ECONDITION) {
		/* A definite outcome: nothing of the write applied. */
		snprintf(g->errmsg, sizeof g->errmsg, "condition not met");
	} else if (status == 0) {
		Docraft__WriteResponse *resp = docraft__write_response__unpack(NULL, len, reply);
		if (resp == NULL) {
			g->status = DOCRAFT_ECORRUPT;
			snprintf(g->errmsg, sizeof g->errmsg, "WriteResponse does not decode");
		} else {
			g->ht = resp->ht;
			docraft__write_response__free_unpacked(resp, NULL);
		}
	} else {
		snprintf(g->errmsg, sizeof g->errmsg, "%s", errmsg);
	}
	if (--j->pending > 0)
		return;
	{
		struct wgroup *fail = NULL;
		uint64_t ht = 0;
		for (size_t i = 0; i < j->ngroups; i++) {
			struct wgroup *x = &j->groups[i];
			if (x->status != 0 && (fail == NULL || x->first_op < fail->first_op))
				fail = x;
			if (x->ht > ht)
				ht = x->ht;
		}
		if (fail != NULL) {
			char msg[DOCRAFT_ERRMSG_SIZE];
			if (j->ngroups > 1)
				err_set(msg, 0, "write to tablet %s (op %zu): %s",
					fail->tc.tablet_id, fail->first_op + 1, fail->errmsg);
			else
				snprintf(msg, sizeof msg, "%s", fail->errmsg);
			job_finish(&j->base, fail->status, msg);
			return;
		}
		j->base.req->ht = ht;
		job_finish(&j->base, 0, "");
	}
}

static void write_loaded(struct tload *l, int status, const char *errmsg)
{
	struct write_job *j = l->data;
	docraft_client *c = j->base.c;
	const struct schema *s;
	size_t *group_of; /* per tablet index: group index + 1 */
	char msg[DOCRAFT_ERRMSG_SIZE];

	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	s = &j->t->schema;
	group_of = xcalloc(j->t->n_tablets, sizeof *group_of);
	j->groups = xcalloc(j->n, sizeof *j->groups);
	j->nconds = 0;
	for (size_t i = 0; i < j->n; i++)
		j->nconds += j->ops[i]->nconds;
	j->conds = alloc0(&j->arena, j->nconds * sizeof *j->conds);
	j->nconds = 0;
	for (size_t i = 0; i < j->n; i++) {
		Docraft__WriteOp *wo = NULL;
		uint32_t hash = 0;
		struct mc_tablet *tb;
		size_t ti;
		struct wgroup *g;
		int rv = build_op(s, j->ops[i], j->ttl_ms, &j->arena, &wo, &hash, msg);
		if (rv == 0)
			rv = build_conds(s, j->ops[i], wo->key, &j->arena, j->conds, &j->nconds, msg);
		if (rv != 0) {
			free(group_of);
			if (j->n > 1) {
				char m2[DOCRAFT_ERRMSG_SIZE];
				err_set(m2, 0, "op %zu: %s", i + 1, msg);
				job_finish(&j->base, rv, m2);
			} else {
				job_finish(&j->base, rv, msg);
			}
			return;
		}
		tb = metacache_lookup(j->t, hash);
		ASSERT(tb != NULL);
		ti = (size_t)(tb - j->t->tablets);
		if (group_of[ti] == 0) {
			g = &j->groups[j->ngroups++];
			group_of[ti] = j->ngroups;
			g->job = j;
			g->first_op = i;
			g->route = hash;
		}
		g = &j->groups[group_of[ti] - 1];
		if (g->n == g->cap) {
			size_t cap = g->cap ? 2 * g->cap : 4;
			Docraft__WriteOp **ops = arena_alloc(&j->arena, cap * sizeof *ops);
			if (g->n > 0)
				memcpy(ops, g->ops, g->n * sizeof *ops);
			g->ops = ops;
			g->cap = cap;
		}
		g->ops[g->n++] = wo;
	}
	free(group_of);
	if (j->nconds > 0 && j->ngroups > 1) {
		/* Conditions are evaluated by one tablet, atomically with its
		 * write: a write on several tablets cannot be conditional. */
		struct mc_tablet *t0 = metacache_lookup(j->t, j->groups[0].route);
		struct mc_tablet *t1 = metacache_lookup(j->t, j->groups[1].route);
		err_set(msg, DOCRAFT_EINVAL,
			"a write with conditions must have all its ops on one tablet: op %zu is "
			"on tablet %s, op %zu on tablet %s",
			j->groups[0].first_op + 1, t0 != NULL ? t0->id : "?",
			j->groups[1].first_op + 1, t1 != NULL ? t1->id : "?");
		job_finish(&j->base, DOCRAFT_EINVAL, msg);
		return;
	}
	j->pending = j->ngroups;
	for (size_t i = 0; i < j->ngroups; i++) {
		struct wgroup *g = &j->groups[i];
		docraft__write_request__init(&g->req);
		g->req.table = j->t->name;
		g->req.schema_version = s->version;
		g->req.client_id.data = c->id;
		g->req.client_id.len = sizeof c->id;
		client_seq_acquire(c, &g->seq);
		g->req.seq = g->seq.seq;
		g->req.ops = g->ops;
		g->req.n_ops = g->n;
		if (j->nconds > 0) { /* then there is one group */
			g->req.conditions = j->conds;
			g->req.n_conditions = j->nconds;
		}
		g->tc.data = g;
		tcall_init(&g->tc, c, j->t, g->route, DOCRAFT__METHOD__TSERVER_WRITE, &g->req.base,
			   &g->req.tablet_id, j->base.deadline, write_group_done);
		g->tc.table_id_field = &g->req.table_id;
		g->tc.prepare = write_prepare;
	}
	/* All groups go out at once. */
	for (size_t i = 0; i < j->ngroups; i++)
		tcall_start(&j->groups[i].tc);
}

static void write_start(struct job *base)
{
	struct write_job *j = (struct write_job *)base;
	j->t = metacache_table(&base->c->mc, j->table);
	j->load.data = j;
	tload_start(&j->load, base->c, j->t, false, base->deadline, write_loaded);
}

static const struct job_ops write_ops = {write_start, write_free};

int docraft_write_async(docraft_client *c, docraft_req *req, const char *table,
			docraft_op *const *ops, size_t n, int64_t ttl_ms, docraft_req_cb cb)
{
	struct write_job *j;
	if (c == NULL || req == NULL || table == NULL || ops == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (n == 0)
		return client_error(DOCRAFT_EINVAL, "no operations");
	if (ttl_ms < -1)
		return client_error(DOCRAFT_EINVAL, "bad TTL %" PRId64, ttl_ms);
	for (size_t i = 0; i < n; i++)
		if (ops[i] == NULL)
			return client_error(DOCRAFT_EINVAL, "op %zu is NULL", i + 1);
	j = xcalloc(1, sizeof *j);
	j->base.ops = &write_ops;
	j->table = xstrdup(table);
	j->ops = xcalloc(n, sizeof *j->ops);
	memcpy(j->ops, ops, n * sizeof *ops);
	j->n = n;
	j->ttl_ms = ttl_ms;
	return job_submit(c, &j->base, req, cb);
}

int docraft_write(docraft_client *c, const char *table, docraft_op *const *ops, size_t n,
		  int64_t ttl_ms, uint64_t *ht)
{
	docraft_req req;
	struct write_job *j;
	int rv;
	if (c == NULL || table == NULL || ops == NULL || n == 0)
		return client_error(DOCRAFT_EINVAL, "NULL argument or no operations");
	if (ttl_ms < -1)
		return client_error(DOCRAFT_EINVAL, "bad TTL %" PRId64, ttl_ms);
	for (size_t i = 0; i < n; i++)
		if (ops[i] == NULL)
			return client_error(DOCRAFT_EINVAL, "op %zu is NULL", i + 1);
	j = xcalloc(1, sizeof *j);
	j->base.ops = &write_ops;
	j->table = xstrdup(table);
	j->ops = xcalloc(n, sizeof *j->ops);
	memcpy(j->ops, ops, n * sizeof *ops);
	j->n = n;
	j->ttl_ms = ttl_ms;
	rv = client_wait(c, &j->base, &req);
	if (rv == 0 && ht != NULL)
		*ht = req.ht;
	return rv;
}

/* ---- get ---- */

struct get_job {
	struct job base;
	char *table;
	docraft_value *key;
	size_t nkey;
	uint64_t read_ht;
	struct tload load;
	struct mc_table *t;
	struct tcall tc;
	Docraft__ReadRequest req;
	struct arena arena;
};

static void get_free(struct job *base)
{
	struct get_job *j = (struct get_job *)base;
	free(j->table);
	arena_free(&j->arena);
	free(j);
}

static void get_done(struct tcall *tc, int status, const char *errmsg, const uint8_t *reply,
		     size_t len)
{
	struct get_job *j = tc->data;
	Docraft__ReadResponse *resp;
	docraft_result *r;
	char msg[DOCRAFT_ERRMSG_SIZE];
	int rv = 0;

	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	resp = docraft__read_response__unpack(NULL, len, reply);
	if (resp == NULL) {
		job_finish(&j->base, DOCRAFT_ECORRUPT, "ReadResponse does not decode");
		return;
	}
	r = result_new(&j->t->schema);
	r->read_ht = resp->read_ht;
	if (resp->found && resp->row != NULL)
		rv = result_add_row(r, resp->row, msg);
	docraft__read_response__free_unpacked(resp, NULL);
	if (rv != 0) {
		docraft_result_free(r);
		job_finish(&j->base, rv, msg);
		return;
	}
	j->base.req->result = r;
	j->base.req->ht = r->read_ht;
	job_finish(&j->base, 0, "");
}

static void get_loaded(struct tload *l, int status, const char *errmsg)
{
	struct get_job *j = l->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	uint32_t hash;
	int rv;

	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	docraft__read_request__init(&j->req);
	rv = build_key(&j->t->schema, j->key, j->nkey, &j->arena, &j->req.key, &hash, msg);
	if (rv != 0) {
		job_finish(&j->base, rv, msg);
		return;
	}
	j->req.n_key = j->nkey;
	j->req.table = j->t->name;
	j->req.read_ht = j->read_ht;
	j->tc.data = j;
	tcall_init(&j->tc, j->base.c, j->t, hash, DOCRAFT__METHOD__TSERVER_READ, &j->req.base,
		   &j->req.tablet_id, j->base.deadline, get_done);
	j->tc.table_id_field = &j->req.table_id;
	tcall_start(&j->tc);
}

static void get_start(struct job *base)
{
	struct get_job *j = (struct get_job *)base;
	j->t = metacache_table(&base->c->mc, j->table);
	j->load.data = j;
	tload_start(&j->load, base->c, j->t, false, base->deadline, get_loaded);
}

static const struct job_ops get_ops = {get_start, get_free};

static struct get_job *get_job_new(const char *table, const docraft_value *key, size_t nkey,
				   uint64_t read_ht)
{
	struct get_job *j = xcalloc(1, sizeof *j);
	j->base.ops = &get_ops;
	j->table = xstrdup(table);
	j->key = values_copy(&j->arena, key, nkey);
	j->nkey = nkey;
	j->read_ht = read_ht;
	return j;
}

int docraft_get_async(docraft_client *c, docraft_req *req, const char *table,
		      const docraft_value *key, size_t nkey, uint64_t read_ht, docraft_req_cb cb)
{
	if (c == NULL || req == NULL || table == NULL || key == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (nkey == 0 || nkey > SCHEMA_MAX_COLUMNS)
		return client_error(DOCRAFT_EINVAL, "bad key length %zu", nkey);
	return job_submit(c, &get_job_new(table, key, nkey, read_ht)->base, req, cb);
}

int docraft_get(docraft_client *c, const char *table, const docraft_value *key, size_t nkey,
		uint64_t read_ht, docraft_result **out)
{
	docraft_req req;
	int rv;
	if (out != NULL)
		*out = NULL;
	if (c == NULL || table == NULL || key == NULL || out == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (nkey == 0 || nkey > SCHEMA_MAX_COLUMNS)
		return client_error(DOCRAFT_EINVAL, "bad key length %zu", nkey);
	rv = client_wait(c, &get_job_new(table, key, nkey, read_ht)->base, &req);
	if (rv == 0)
		*out = req.result;
	return rv;
}

/* ---- scan ----
 *
 * Read restart (YugabyteDB's; the tablet side is in tserver/service.c): a
 * scan of the whole table reads every tablet at the time the first
 * tablet's leader chose. Another tablet's leader, with a clock ahead of
 * that one, may hold a write acknowledged before the scan started at a
 * later time; such a page answers restart_ht instead of rows. Then the
 * rows gathered so far are dropped and the scan starts again from its
 * first tablet at restart_ht, and that tablet's local_limit is sent with
 * every later page to it (its window is then empty: one restart per
 * tablet at most; SCAN_MAX_RESTARTS bounds the rest). The tablet that chose
 * the time is never asked (whatever it applied later came after the scan
 * started). A scan that already returned rows to the caller
 * (docraft_scan_resume) cannot restart: it fails with CLOCK_SKEW and the
 * caller starts the scan again. A time given by the caller is a snapshot
 * read: no restart. */

#define SCAN_DEFAULT_PAGE 1000
#define SCAN_MAX_RESTARTS 64

struct scan_limit {
	uint32_t start; /* the tablet's partition start */
	uint64_t limit; /* its local_limit */
};

struct scan_job {
	struct job base;
	char *table;
	bool resume;
	/* A new scan: the spec (values copied into arena). */
	docraft_scan_spec spec;
	/* Where it is. */
	struct scan_state st;
	struct tload load;
	struct mc_table *t;
	struct tcall tc;
	Docraft__ScanRequest *tmpl; /* unpacked st.tmpl */
	Docraft__ScanRequest req;   /* this page: tmpl's fields + ours */
	docraft_result *res;
	uint64_t got;
	struct arena arena;
	struct scan_limit *limits; /* read restart: local limits of tablets */
	size_t nlimits;
	unsigned restarts;
};

static void scan_state_clear(struct scan_state *st)
{
	free(st->table);
	free(st->tmpl);
	free(st->paging);
	memset(st, 0, sizeof *st);
}

static void scan_free(struct job *base)
{
	struct scan_job *j = (struct scan_job *)base;
	if (j->tmpl != NULL)
		docraft__scan_request__free_unpacked(j->tmpl, NULL);
	if (j->res != NULL)
		docraft_result_free(j->res);
	scan_state_clear(&j->st);
	free(j->table);
	free(j->limits);
	arena_free(&j->arena);
	free(j);
}

/* Every page: the restart limit of the tablet it goes to (tc->tablet_start
 * is set before each attempt). */
static void scan_prepare(struct tcall *tc)
{
	struct scan_job *j = tc->data;
	const struct scan_state *st = &j->st;
	j->req.restart_limit = 0;
	if (!st->restartable || st->read_ht == 0)
		return;
	if (tc->tablet_start == st->origin) {
		j->req.restart_limit = st->read_ht; /* an empty window */
		return;
	}
	j->req.restart_limit = UINT64_MAX;
	for (size_t i = 0; i < j->nlimits; i++)
		if (j->limits[i].start == tc->tablet_start)
			j->req.restart_limit = j->limits[i].limit;
}

/* A page answered restart_ht: start again from the first tablet at that
 * time. false (and finished) if the scan may not restart. */
static bool scan_restart(struct scan_job *j, const struct tcall *tc, uint64_t restart_ht,
			 uint64_t local_limit)
{
	struct scan_state *st = &j->st;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (j->resume || !st->restartable || j->restarts >= SCAN_MAX_RESTARTS ||
	    restart_ht <= st->read_ht) {
		err_set(msg, 0, "tablet %s: the scan's read time %" PRIu64 " is uncertain there "
			"(clock skew): start the scan again", tc->tablet_id, st->read_ht);
		job_finish(&j->base, DOCRAFT_ECLOCKSKEW, msg);
		return false;
	}
	j->restarts++;
	j->limits = xrealloc(j->limits, (j->nlimits + 1) * sizeof *j->limits);
	j->limits[j->nlimits].start = tc->tablet_start;
	j->limits[j->nlimits].limit = local_limit;
	j->nlimits++;
	st->read_ht = restart_ht;
	st->cursor = j->tmpl->reverse ? 0xFFFF : 0;
	free(st->paging);
	st->paging = NULL;
	st->paging_len = 0;
	docraft_result_free(j->res);
	j->res = result_new(&j->t->schema);
	j->got = 0;
	return true;
}

static void scan_page(struct scan_job *j);

static void scan_finish(struct scan_job *j, bool has_more)
{
	docraft_result *r = j->res;
	r->read_ht = j->st.read_ht;
	r->has_more = has_more;
	if (has_more) {
		struct scan_state *s = arena_alloc(&r->arena, sizeof *s);
		*s = j->st;
		s->table = arena_dup(&r->arena, j->st.table, strlen(j->st.table) + 1);
		s->tmpl = arena_dup(&r->arena, j->st.tmpl, j->st.tmpl_len ? j->st.tmpl_len : 1);
		s->paging = j->st.paging_len ? arena_dup(&r->arena, j->st.paging, j->st.paging_len)
					     : NULL;
		r->scan = s;
	}
	j->res = NULL;
	j->base.req->result = r;
	j->base.req->ht = r->read_ht;
	job_finish(&j->base, 0, "");
}

static void scan_page_done(struct tcall *tc, int status, const char *errmsg,
			   const uint8_t *reply, size_t len)
{
	struct scan_job *j = tc->data;
	struct scan_state *st = &j->st;
	Docraft__ScanResponse *resp;
	char msg[DOCRAFT_ERRMSG_SIZE];
	bool more_here;

	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	resp = docraft__scan_response__unpack(NULL, len, reply);
	if (resp == NULL) {
		job_finish(&j->base, DOCRAFT_ECORRUPT, "ScanResponse does not decode");
		return;
	}
	if (resp->restart_ht != 0) {
		uint64_t at = resp->restart_ht, limit = resp->local_limit;
		docraft__scan_response__free_unpacked(resp, NULL);
		if (scan_restart(j, tc, at, limit))
			scan_page(j);
		return;
	}
	if (st->read_ht == 0) {
		st->read_ht = resp->read_ht;
		st->origin = tc->tablet_start;
	}
	for (size_t i = 0; i < resp->n_rows; i++) {
		int rv = result_add_row(j->res, resp->rows[i], msg);
		if (rv != 0) {
			docraft__scan_response__free_unpacked(resp, NULL);
			job_finish(&j->base, rv, msg);
			return;
		}
	}
	j->got += resp->n_rows;
	free(st->paging);
	st->paging = NULL;
	st->paging_len = resp->paging.len;
	if (resp->paging.len > 0) {
		st->paging = xcalloc(1, resp->paging.len);
		memcpy(st->paging, resp->paging.data, resp->paging.len);
	}
	docraft__scan_response__free_unpacked(resp, NULL);
	more_here = st->paging_len > 0;
	if (!more_here) {
		/* This tablet is done: the next one, if the scan walks them. */
		if (!st->whole_table)
			goto done;
		if (!j->tmpl->reverse) {
			if (tc->tablet_end >= 65536)
				goto done;
			st->cursor = tc->tablet_end;
		} else {
			if (tc->tablet_start == 0)
				goto done;
			st->cursor = tc->tablet_start - 1;
		}
	}
	if (st->limit != 0 && j->got >= st->limit) {
		scan_finish(j, true);
		return;
	}
	scan_page(j);
	return;
done:
	scan_finish(j, false);
}

static void scan_page(struct scan_job *j)
{
	struct scan_state *st = &j->st;
	uint64_t left = st->limit != 0 ? st->limit - j->got : 0;

	j->req = *j->tmpl;
	j->req.tablet_id = NULL;
	j->req.paging.data = st->paging;
	j->req.paging.len = st->paging_len;
	j->req.read_ht = st->read_ht;
	j->req.limit = st->page_size;
	if (left != 0 && left < st->page_size)
		j->req.limit = (uint32_t)left;
	j->tc.data = j;
	/* Each page has the full time budget (see the design note). */
	tcall_init(&j->tc, j->base.c, j->t, st->cursor, DOCRAFT__METHOD__TSERVER_SCAN, &j->req.base,
		   &j->req.tablet_id, client_now(j->base.c) + j->base.c->opts.timeout_ms,
		   scan_page_done);
	j->tc.table_id_field = &j->req.table_id;
	j->tc.prepare = scan_prepare;
	tcall_start(&j->tc);
}

/* Builds the template ScanRequest of a new scan into st. */
static int scan_build(struct scan_job *j, char *errmsg)
{
	const struct schema *s = &j->t->schema;
	const docraft_scan_spec *sp = &j->spec;
	Docraft__ScanRequest m = DOCRAFT__SCAN_REQUEST__INIT;
	struct pv pv[SCHEMA_MAX_COLUMNS];
	struct arena *a = &j->arena;
	int rv;

	if (sp->n_hash != 0 && sp->n_hash != s->n_hash)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s has %zu hash columns: give all of them or none", s->table,
			       s->n_hash);
	if (sp->n_hash == 0 && (sp->n_eq > 0 || sp->lower != NULL || sp->upper != NULL))
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "conditions on range columns need the hash key");
	if (sp->n_eq > s->n_range ||
	    ((sp->lower != NULL || sp->upper != NULL) && sp->n_eq >= s->n_range))
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s has %zu range columns", s->table,
			       s->n_range);
	m.table = j->t->name;
	m.n_hash_key = sp->n_hash;
	m.hash_key = alloc0(a, sp->n_hash * sizeof *m.hash_key);
	for (size_t i = 0; i < sp->n_hash; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "hash column '%s'", s->cols[i].name);
		m.hash_key[i] = alloc0(a, sizeof *m.hash_key[i]);
		if ((rv = values_to_datum(&sp->hash_key[i], (enum col_type)s->cols[i].type, false,
					what, a, m.hash_key[i], &pv[i], errmsg)) != 0)
			return rv;
	}
	m.n_range_eq = sp->n_eq;
	m.range_eq = alloc0(a, sp->n_eq * sizeof *m.range_eq);
	for (size_t i = 0; i < sp->n_eq; i++) {
		const struct column *col = &s->cols[s->n_hash + i];
		char what[SCHEMA_MAX_NAME + 32];
		struct pv x;
		snprintf(what, sizeof what, "range column '%s'", col->name);
		m.range_eq[i] = alloc0(a, sizeof *m.range_eq[i]);
		if ((rv = values_to_datum(&sp->range_eq[i], (enum col_type)col->type, false, what, a,
					m.range_eq[i], &x, errmsg)) != 0)
			return rv;
	}
	if (sp->lower != NULL || sp->upper != NULL) {
		const struct column *col = &s->cols[s->n_hash + sp->n_eq];
		char what[SCHEMA_MAX_NAME + 32];
		struct pv x;
		snprintf(what, sizeof what, "bound on range column '%s'", col->name);
		if (sp->lower != NULL) {
			m.lower = alloc0(a, sizeof *m.lower);
			if ((rv = values_to_datum(sp->lower, (enum col_type)col->type, false, what, a,
						m.lower, &x, errmsg)) != 0)
				return rv;
			m.lower_incl = sp->lower_incl;
		}
		if (sp->upper != NULL) {
			m.upper = alloc0(a, sizeof *m.upper);
			if ((rv = values_to_datum(sp->upper, (enum col_type)col->type, false, what, a,
						m.upper, &x, errmsg)) != 0)
				return rv;
			m.upper_incl = sp->upper_incl;
		}
	}
	m.reverse = sp->reverse;
	j->st.table = xstrdup(j->table);
	j->st.tmpl_len = protobuf_c_message_get_packed_size(&m.base);
	j->st.tmpl = xcalloc(1, j->st.tmpl_len);
	protobuf_c_message_pack(&m.base, j->st.tmpl);
	j->st.whole_table = sp->n_hash == 0;
	j->st.cursor = sp->n_hash > 0 ? key_hash_components(pv, sp->n_hash)
				      : sp->reverse ? 0xFFFF : 0;
	j->st.read_ht = sp->read_ht;
	j->st.restartable = j->st.whole_table && sp->read_ht == 0;
	j->st.limit = sp->limit;
	j->st.page_size = sp->page_size ? sp->page_size : SCAN_DEFAULT_PAGE;
	return 0;
}

static void scan_loaded(struct tload *l, int status, const char *errmsg)
{
	struct scan_job *j = l->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	if (!j->resume && (rv = scan_build(j, msg)) != 0) {
		job_finish(&j->base, rv, msg);
		return;
	}
	j->tmpl = docraft__scan_request__unpack(NULL, j->st.tmpl_len, j->st.tmpl);
	if (j->tmpl == NULL) {
		job_finish(&j->base, DOCRAFT_EINVAL, "bad scan state");
		return;
	}
	j->res = result_new(&j->t->schema);
	scan_page(j);
}

static void scan_start(struct job *base)
{
	struct scan_job *j = (struct scan_job *)base;
	j->t = metacache_table(&base->c->mc, j->table);
	j->load.data = j;
	tload_start(&j->load, base->c, j->t, false, base->deadline, scan_loaded);
}

static const struct job_ops scan_ops = {scan_start, scan_free};

static int scan_job_new(const char *table, const docraft_scan_spec *spec, struct scan_job **out)
{
	struct scan_job *j;
	if (table == NULL || spec == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((spec->n_hash > 0 && spec->hash_key == NULL) ||
	    (spec->n_eq > 0 && spec->range_eq == NULL) || spec->n_hash > SCHEMA_MAX_COLUMNS ||
	    spec->n_eq > SCHEMA_MAX_COLUMNS)
		return client_error(DOCRAFT_EINVAL, "bad scan spec");
	j = xcalloc(1, sizeof *j);
	j->base.ops = &scan_ops;
	j->table = xstrdup(table);
	j->spec = *spec;
	j->spec.hash_key = values_copy(&j->arena, spec->hash_key, spec->n_hash);
	j->spec.range_eq = values_copy(&j->arena, spec->range_eq, spec->n_eq);
	if (spec->lower != NULL)
		j->spec.lower = values_copy(&j->arena, spec->lower, 1);
	if (spec->upper != NULL)
		j->spec.upper = values_copy(&j->arena, spec->upper, 1);
	*out = j;
	return 0;
}

static int resume_job_new(const docraft_result *prev, uint64_t limit, struct scan_job **out)
{
	const struct scan_state *s;
	struct scan_job *j;
	if (prev == NULL || !prev->has_more || prev->scan == NULL)
		return client_error(DOCRAFT_EINVAL, "nothing to resume: the result has no more rows");
	s = prev->scan;
	j = xcalloc(1, sizeof *j);
	j->base.ops = &scan_ops;
	j->resume = true;
	j->table = xstrdup(s->table);
	j->st = *s;
	j->st.table = xstrdup(s->table);
	j->st.tmpl = xcalloc(1, s->tmpl_len);
	memcpy(j->st.tmpl, s->tmpl, s->tmpl_len);
	j->st.paging = NULL;
	if (s->paging_len > 0) {
		j->st.paging = xcalloc(1, s->paging_len);
		memcpy(j->st.paging, s->paging, s->paging_len);
	}
	if (limit != 0)
		j->st.limit = limit;
	*out = j;
	return 0;
}

int docraft_scan_async(docraft_client *c, docraft_req *req, const char *table,
		       const docraft_scan_spec *spec, docraft_req_cb cb)
{
	struct scan_job *j;
	int rv;
	if (c == NULL || req == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = scan_job_new(table, spec, &j)) != 0)
		return rv;
	return job_submit(c, &j->base, req, cb);
}

int docraft_scan(docraft_client *c, const char *table, const docraft_scan_spec *spec,
		 docraft_result **out)
{
	docraft_req req;
	struct scan_job *j;
	int rv;
	if (out == NULL || c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	*out = NULL;
	if ((rv = scan_job_new(table, spec, &j)) != 0)
		return rv;
	rv = client_wait(c, &j->base, &req);
	if (rv == 0)
		*out = req.result;
	return rv;
}

int docraft_scan_resume_async(docraft_client *c, docraft_req *req, const docraft_result *prev,
			      uint64_t limit, docraft_req_cb cb)
{
	struct scan_job *j;
	int rv;
	if (c == NULL || req == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = resume_job_new(prev, limit, &j)) != 0)
		return rv;
	return job_submit(c, &j->base, req, cb);
}

int docraft_scan_resume(docraft_client *c, const docraft_result *prev, uint64_t limit,
			docraft_result **out)
{
	docraft_req req;
	struct scan_job *j;
	int rv;
	if (out == NULL || c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	*out = NULL;
	if ((rv = resume_job_new(prev, limit, &j)) != 0)
		return rv;
	rv = client_wait(c, &j->base, &req);
	if (rv == 0)
		*out = req.result;
	return rv;
}

/* ---- master jobs: create/drop table, generic calls ---- */

struct master_job {
	struct job base;
	struct mcall m;
	struct mcall m2;        /* create IF NOT EXISTS: the GetTable check */
	char *table;
	bool if_exists;         /* drop: missing is fine; create: existing is fine */
	int create_status;
	char create_msg[DOCRAFT_ERRMSG_SIZE];
	uint16_t method;
	ProtobufCMessage *msg;  /* in arena */
	struct buf *reply;      /* generic calls: the caller's */
	struct arena arena;
};

static void master_free(struct job *base)
{
	struct master_job *j = (struct master_job *)base;
	free(j->table);
	arena_free(&j->arena);
	free(j);
}

static void exists_done(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			size_t len)
{
	struct master_job *j = m->data;
	(void)errmsg;
	(void)reply;
	(void)len;
	if (status == 0) {
		metacache_forget(&j->base.c->mc, j->table);
		job_finish(&j->base, 0, "");
	} else {
		job_finish(&j->base, j->create_status, j->create_msg);
	}
}

static void master_done(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			size_t len)
{
	struct master_job *j = m->data;
	docraft_client *c = j->base.c;

	switch (j->method) {
	case DOCRAFT__METHOD__MASTER_CREATE_TABLE:
		if (status != 0 && j->if_exists && status != DOCRAFT_ECLOSED) {
			/* Maybe it exists (or an earlier attempt created it). */
			Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
			j->create_status = status;
			snprintf(j->create_msg, sizeof j->create_msg, "%s", errmsg);
			req.name = j->table;
			j->m2.data = j;
			mcall_start(&j->m2, c, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base,
				    j->base.deadline, exists_done);
			return;
		}
		if (status == 0)
			metacache_forget(&c->mc, j->table);
		break;
	case DOCRAFT__METHOD__MASTER_DROP_TABLE:
		if ((status == DOCRAFT_ETABLENOTFOUND || status == DOCRAFT_ENOTFOUND) &&
		    j->if_exists)
			status = 0;
		if (status == 0)
			metacache_forget(&c->mc, j->table);
		break;
	default:
		if (status == 0 && j->reply != NULL)
			buf_append(j->reply, reply, len);
		break;
	}
	job_finish(&j->base, status, errmsg);
}

static void master_start(struct job *base)
{
	struct master_job *j = (struct master_job *)base;
	docraft_client *c = base->c;
	/* DDL: a request id, the same on every attempt (mcall sends the same
	 * bytes), so a retry is answered with the first result. */
	if (j->method == DOCRAFT__METHOD__MASTER_CREATE_TABLE) {
		Docraft__CreateTableRequest *r = (Docraft__CreateTableRequest *)j->msg;
		r->client_id.data = c->id;
		r->client_id.len = sizeof c->id;
		r->seq = ++c->next_seq;
	} else if (j->method == DOCRAFT__METHOD__MASTER_DROP_TABLE) {
		Docraft__DropTableRequest *r = (Docraft__DropTableRequest *)j->msg;
		r->client_id.data = c->id;
		r->client_id.len = sizeof c->id;
		r->seq = ++c->next_seq;
	}
	j->m.data = j;
	mcall_start(&j->m, base->c, j->method, j->msg, base->deadline, master_done);
}

static const struct job_ops master_ops = {master_start, master_free};

static int create_job_new(docraft_client *c, const docraft_schema *s,
			  const docraft_table_options *options, struct master_job **out)
{
	struct master_job *j;
	Docraft__CreateTableRequest *req;
	if (c == NULL || s == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (s->s.ncols == 0 || s->s.n_hash == 0)
		return client_error(DOCRAFT_EINVAL, "table %s needs at least one hash column",
				    s->s.table);
	j = xcalloc(1, sizeof *j);
	j->base.ops = &master_ops;
	j->method = DOCRAFT__METHOD__MASTER_CREATE_TABLE;
	j->table = xstrdup(s->s.table);
	req = arena_alloc(&j->arena, sizeof *req);
	docraft__create_table_request__init(req);
	req->schema = arena_alloc(&j->arena, sizeof *req->schema);
	wire_schema_to_pb(&s->s, req->schema, &j->arena);
	/* The pb points into s, which the caller may free: copy the names. */
	req->schema->name = arena_dup(&j->arena, s->s.table, strlen(s->s.table) + 1);
	for (size_t i = 0; i < req->schema->n_columns; i++)
		req->schema->columns[i]->name = arena_dup(&j->arena, req->schema->columns[i]->name,
							  strlen(req->schema->columns[i]->name) + 1);
	req->num_tablets = options && options->num_tablets ? options->num_tablets
							   : c->opts.num_tablets;
	req->replication_factor = options && options->replication_factor
					  ? options->replication_factor
					  : c->opts.replication_factor;
	j->if_exists = options != NULL && options->if_not_exists;
	j->msg = &req->base;
	*out = j;
	return 0;
}

int docraft_table_create_async(docraft_client *c, docraft_req *req, const docraft_schema *s,
			       const docraft_table_options *options, docraft_req_cb cb)
{
	struct master_job *j;
	int rv;
	if (req == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = create_job_new(c, s, options, &j)) != 0)
		return rv;
	return job_submit(c, &j->base, req, cb);
}

int docraft_table_create(docraft_client *c, const docraft_schema *s,
			 const docraft_table_options *options)
{
	docraft_req req;
	struct master_job *j;
	int rv;
	if ((rv = create_job_new(c, s, options, &j)) != 0)
		return rv;
	return client_wait(c, &j->base, &req);
}

static struct master_job *drop_job_new(const char *table, bool if_exists)
{
	struct master_job *j = xcalloc(1, sizeof *j);
	Docraft__DropTableRequest *req;
	j->base.ops = &master_ops;
	j->method = DOCRAFT__METHOD__MASTER_DROP_TABLE;
	j->table = xstrdup(table);
	j->if_exists = if_exists;
	req = arena_alloc(&j->arena, sizeof *req);
	docraft__drop_table_request__init(req);
	req->name = j->table;
	j->msg = &req->base;
	return j;
}

int docraft_table_drop_async(docraft_client *c, docraft_req *req, const char *table,
			     bool if_exists, docraft_req_cb cb)
{
	if (c == NULL || req == NULL || table == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	return job_submit(c, &drop_job_new(table, if_exists)->base, req, cb);
}

int docraft_table_drop(docraft_client *c, const char *table, bool if_exists)
{
	docraft_req req;
	if (c == NULL || table == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	return client_wait(c, &drop_job_new(table, if_exists)->base, &req);
}

int client_master_call(docraft_client *c, uint16_t method, const ProtobufCMessage *msg,
		       struct buf *reply)
{
	docraft_req req;
	struct master_job *j = xcalloc(1, sizeof *j);
	j->base.ops = &master_ops;
	j->method = method;
	j->reply = reply;
	/* The caller waits, so msg outlives the job (mcall_start packs it). */
	j->msg = (ProtobufCMessage *)msg;
	return client_wait(c, &j->base, &req);
}

/* ---- generic tablet calls and schemas (blocking helpers) ---- */

struct tablet_job {
	struct job base;
	char *table;
	char *tablet_id;    /* NULL: schema job */
	char *replica;
	uint16_t method;
	ProtobufCMessage *msg;
	char **tablet_id_field;
	struct buf *reply;
	struct schema *schema_out;
	struct tload load;
	struct mc_table *t;
	struct tcall tc;
};

static void tablet_free(struct job *base)
{
	struct tablet_job *j = (struct tablet_job *)base;
	free(j->table);
	free(j->tablet_id);
	free(j->replica);
	free(j);
}

static void tablet_done(struct tcall *tc, int status, const char *errmsg, const uint8_t *reply,
			size_t len)
{
	struct tablet_job *j = tc->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (status == DOCRAFT_ENOTFOUND && errmsg[0] == '\0') {
		snprintf(msg, sizeof msg, "table %s has no tablet %s", j->table, j->tablet_id);
		errmsg = msg;
	}
	if (status == 0)
		buf_append(j->reply, reply, len);
	job_finish(&j->base, status, errmsg);
}

static void tablet_loaded(struct tload *l, int status, const char *errmsg)
{
	struct tablet_job *j = l->data;
	if (status != 0) {
		job_finish(&j->base, status, errmsg);
		return;
	}
	if (j->tablet_id == NULL) {
		schema_copy(j->schema_out, &j->t->schema);
		job_finish(&j->base, 0, "");
		return;
	}
	j->tc.data = j;
	tcall_init(&j->tc, j->base.c, j->t, 0, j->method, j->msg, j->tablet_id_field,
		   j->base.deadline, tablet_done);
	tcall_by_id(&j->tc, j->tablet_id);
	if (j->replica != NULL)
		tcall_to_replica(&j->tc, j->replica);
	tcall_start(&j->tc);
}

static void tablet_start(struct job *base)
{
	struct tablet_job *j = (struct tablet_job *)base;
	j->t = metacache_table(&base->c->mc, j->table);
	j->load.data = j;
	tload_start(&j->load, base->c, j->t, false, base->deadline, tablet_loaded);
}

static const struct job_ops tablet_ops = {tablet_start, tablet_free};

int client_tablet_call(docraft_client *c, const char *table, const char *tablet_id,
		       const char *replica, uint16_t method, ProtobufCMessage *msg,
		       char **tablet_id_field, struct buf *reply)
{
	docraft_req req;
	struct tablet_job *j = xcalloc(1, sizeof *j);
	j->base.ops = &tablet_ops;
	j->table = xstrdup(table);
	j->tablet_id = xstrdup(tablet_id);
	j->replica = replica != NULL ? xstrdup(replica) : NULL;
	j->method = method;
	j->msg = msg;
	j->tablet_id_field = tablet_id_field;
	j->reply = reply;
	return client_wait(c, &j->base, &req);
}

int client_table_schema(docraft_client *c, const char *table, struct schema *out)
{
	docraft_req req;
	struct tablet_job *j = xcalloc(1, sizeof *j);
	j->base.ops = &tablet_ops;
	j->table = xstrdup(table);
	j->schema_out = out;
	return client_wait(c, &j->base, &req);
}
