/* Writes: docraft_write and docraft_write_async.
 *
 * Design note. docraft_write converts every op with the table's schema
 * from the cache (so a bad column or type fails before anything is sent),
 * hashes each row's hash columns (key_hash_components on the very values
 * the tablet server will decode), groups the ops by tablet keeping their
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
 * retried) and becomes DOCRAFT_ECONDITION, "condition not met". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/requests.h"
#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
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


/* The collection type an op of kind works on (0: none in particular). */
static enum col_type collection_of(int kind)
{
	switch (kind) {
	case DOCRAFT__WRITE_OP__KIND__MAP_PUT:
	case DOCRAFT__WRITE_OP__KIND__MAP_REMOVE:
		return CT_MAP;
	case DOCRAFT__WRITE_OP__KIND__SET_ADD:
	case DOCRAFT__WRITE_OP__KIND__SET_REMOVE:
		return CT_SET;
	case DOCRAFT__WRITE_OP__KIND__LIST_APPEND:
	case DOCRAFT__WRITE_OP__KIND__LIST_PREPEND:
		return CT_LIST;
	default:
		return 0;
	}
}

/* Converts a column's value(s) into cv. */
static int build_colval(const struct schema *s, const struct op_col *oc, int kind,
			struct arena *a, Docraft__ColumnValue *cv, char *errmsg)
{
	const struct column *col = find_column(s, oc->name, errmsg);
	char what[SCHEMA_MAX_NAME + 32];
	enum col_type need;
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
	if (kind == DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN)
		return 0;
	if ((need = collection_of(kind)) != 0 && col->type != need)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a %s", what, col_type_name(need));
	if (kind == DOCRAFT__WRITE_OP__KIND__COLLECTION_REPLACE &&
	    !col_type_is_collection((enum col_type)col->type))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a collection", what);
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
		return values_to_datum(&oc->value, (enum col_type)col->type, true, what, a,
				       &cv->value, &pv, errmsg);
	}
	if (!col_type_is_collection((enum col_type)col->type))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a collection", what);
	if (col->type == CT_MAP && kind != DOCRAFT__WRITE_OP__KIND__MAP_REMOVE && oc->vals == NULL &&
	    oc->n > 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is a map: values are missing", what);
	if (col->type != CT_MAP && oc->vals != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is not a map: no values expected", what);
	cv->n_keys = oc->n;
	cv->keys = requests_zalloc(a, oc->n * sizeof *cv->keys);
	for (size_t i = 0; i < oc->n; i++) {
		if ((rv = values_to_datum(&oc->keys[i], (enum col_type)col->elem_type, false,
					  what, a, &cv->keys[i], &pv, errmsg)) != 0)
			return rv;
	}
	if (oc->vals != NULL && kind != DOCRAFT__WRITE_OP__KIND__MAP_REMOVE) {
		cv->n_values = oc->n;
		cv->values = requests_zalloc(a, oc->n * sizeof *cv->values);
		for (size_t i = 0; i < oc->n; i++) {
			enum col_type vt = (enum col_type)col->value_type;
			if ((rv = values_to_datum(&oc->vals[i], vt, false, what, a, &cv->values[i],
						  &pv, errmsg)) != 0)
				return rv;
		}
	}
	return 0;
}

/* The primary key of a row as Datums, and its hash. */

static int build_op(const struct schema *s, const docraft_op *op, int64_t ttl_ms,
		    struct arena *a, Docraft__WriteOp **out, uint32_t *hash, char *errmsg)
{
	Docraft__WriteOp *wo = requests_zalloc(a, sizeof *wo);
	int rv;

	docraft__write_op__init(wo);
	wo->kind = (Docraft__WriteOp__Kind)op->kind;
	if ((rv = requests_key(s, op->key, op->nkey, a, &wo->key, hash, errmsg)) != 0)
		return rv;
	wo->n_key = op->nkey;
	wo->ttl_ms = op->has_ttl ? op->ttl_ms : ttl_ms;
	if (op->kind == DOCRAFT__WRITE_OP__KIND__DELETE_ROW ||
	    op->kind == DOCRAFT__WRITE_OP__KIND__DELETE_COLUMN)
		wo->ttl_ms = -1;
	wo->n_columns = op->ncols;
	wo->columns = requests_zalloc(a, op->ncols * sizeof *wo->columns);
	for (size_t i = 0; i < op->ncols; i++) {
		wo->columns[i] = requests_zalloc(a, sizeof *wo->columns[i]);
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
		pc = requests_zalloc(a, sizeof *pc);
		docraft__condition__init(pc);
		pc->key = key;
		pc->n_key = op->nkey;
		/* Copied: a refresh may replace the cached schema before a retry. */
		pc->column = arena_dup(a, col->name, strlen(col->name) + 1);
		if (oc->has_value) {
			pc->has_value = 1;
			if ((rv = values_to_datum(&oc->value, (enum col_type)col->type, false,
						  what, a, &pc->value, &pv, errmsg)) != 0)
				return rv;
		}
		out[(*n)++] = pc;
	}
	return 0;
}


/* ---- the write job ---- */

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
	struct table_job tj; /* first */
	docraft_op **ops; /* the caller's ops (the array in arena) */
	size_t n;
	int64_t ttl_ms;
	struct wgroup *groups;
	size_t ngroups, pending;
	Docraft__Condition **conds; /* of every op, in op order (arena) */
	size_t nconds;
};

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

	client_seq_release(j->tj.base.c, &g->seq);
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
			job_finish(&j->tj.base, fail->status, msg);
			return;
		}
		j->tj.base.req->ht = ht;
		job_finish(&j->tj.base, 0, "");
	}
}

static void write_loaded(struct table_job *tj)
{
	struct write_job *j = (struct write_job *)tj;
	docraft_client *c = tj->base.c;
	const struct schema *s = &tj->t->schema;
	size_t *group_of; /* per tablet index: group index + 1 */
	char msg[DOCRAFT_ERRMSG_SIZE];

	group_of = xcalloc(tj->t->n_tablets, sizeof *group_of);
	j->groups = requests_zalloc(&tj->arena, j->n * sizeof *j->groups);
	j->nconds = 0;
	for (size_t i = 0; i < j->n; i++)
		j->nconds += j->ops[i]->nconds;
	j->conds = requests_zalloc(&tj->arena, j->nconds * sizeof *j->conds);
	j->nconds = 0;
	for (size_t i = 0; i < j->n; i++) {
		Docraft__WriteOp *wo = NULL;
		uint32_t hash = 0;
		struct mc_tablet *tb;
		size_t ti;
		struct wgroup *g;
		int rv = build_op(s, j->ops[i], j->ttl_ms, &tj->arena, &wo, &hash, msg);
		if (rv == 0)
			rv = build_conds(s, j->ops[i], wo->key, &tj->arena, j->conds, &j->nconds,
					 msg);
		if (rv != 0) {
			free(group_of);
			if (j->n > 1) {
				char m2[DOCRAFT_ERRMSG_SIZE];
				err_set(m2, 0, "op %zu: %s", i + 1, msg);
				job_finish(&tj->base, rv, m2);
			} else {
				job_finish(&tj->base, rv, msg);
			}
			return;
		}
		tb = metacache_lookup(tj->t, hash);
		ASSERT(tb != NULL);
		ti = (size_t)(tb - tj->t->tablets);
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
			Docraft__WriteOp **ops = arena_alloc(&tj->arena, cap * sizeof *ops);
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
		struct mc_tablet *t0 = metacache_lookup(tj->t, j->groups[0].route);
		struct mc_tablet *t1 = metacache_lookup(tj->t, j->groups[1].route);
		err_set(msg, DOCRAFT_EINVAL,
			"a write with conditions must have all its ops on one tablet: op %zu is "
			"on tablet %s, op %zu on tablet %s",
			j->groups[0].first_op + 1, t0 != NULL ? t0->id : "?",
			j->groups[1].first_op + 1, t1 != NULL ? t1->id : "?");
		job_finish(&tj->base, DOCRAFT_EINVAL, msg);
		return;
	}
	j->pending = j->ngroups;
	for (size_t i = 0; i < j->ngroups; i++) {
		struct wgroup *g = &j->groups[i];
		docraft__write_request__init(&g->req);
		g->req.table = tj->t->name;
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
		tcall_init(&g->tc, c, tj->t, g->route, DOCRAFT__METHOD__TSERVER_WRITE, &g->req.base,
			   &g->req.tablet_id, tj->base.deadline, write_group_done);
		g->tc.table_id_field = &g->req.table_id;
		g->tc.prepare = write_prepare;
	}
	/* All groups go out at once. */
	for (size_t i = 0; i < j->ngroups; i++)
		tcall_start(&j->groups[i].tc);
}

static const struct job_ops write_ops = {requests_job_start, requests_job_free};

/* The checks both calls make after their own, and the job. */
static int write_job_new(const char *table, docraft_op *const *ops, size_t n, int64_t ttl_ms,
			 struct write_job **out)
{
	struct write_job *j;
	if (ttl_ms < -1)
		return client_error(DOCRAFT_EINVAL, "bad TTL %" PRId64, ttl_ms);
	for (size_t i = 0; i < n; i++)
		if (ops[i] == NULL)
			return client_error(DOCRAFT_EINVAL, "op %zu is NULL", i + 1);
	j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &write_ops, table, write_loaded);
	j->ops = arena_dup(&j->tj.arena, ops, n * sizeof *ops);
	j->n = n;
	j->ttl_ms = ttl_ms;
	*out = j;
	return 0;
}

int docraft_write_async(docraft_client *c, docraft_req *req, const char *table,
			docraft_op *const *ops, size_t n, int64_t ttl_ms, docraft_req_cb cb)
{
	struct write_job *j;
	int rv;
	if (c == NULL || req == NULL || table == NULL || ops == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (n == 0)
		return client_error(DOCRAFT_EINVAL, "no operations");
	if ((rv = write_job_new(table, ops, n, ttl_ms, &j)) != 0)
		return rv;
	return job_submit(c, &j->tj.base, req, cb);
}

int docraft_write(docraft_client *c, const char *table, docraft_op *const *ops, size_t n,
		  int64_t ttl_ms, uint64_t *ht)
{
	docraft_req req;
	struct write_job *j;
	int rv;
	if (c == NULL || table == NULL || ops == NULL || n == 0)
		return client_error(DOCRAFT_EINVAL, "NULL argument or no operations");
	if ((rv = write_job_new(table, ops, n, ttl_ms, &j)) != 0)
		return rv;
	rv = client_wait(c, &j->tj.base, &req);
	if (rv == 0 && ht != NULL)
		*ht = req.ht;
	return rv;
}
