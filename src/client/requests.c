/* libdocraft's requests, the shared part: the table job (requests.h),
 * the primary key of a row on the wire, and the two requests too small for
 * a file of their own: get (docraft_get, docraft_get_async) and the
 * generic tablet call and schema fetch behind the admin commands and the
 * CQL executor (client_tablet_call, client_table_schema). Writes are in
 * write.c, scans in scan.c, table DDL and master calls in tables.c.
 *
 * Design note. Every request on a table is a job in two steps: the job's
 * start makes sure the table is in the metadata cache (tload, retrying an
 * unavailable master up to the deadline), then the request's own loaded
 * step converts the caller's values with the cached schema (so a bad
 * column or type fails before anything is sent), routes by the hash of the
 * row's hash columns and calls the tablet's leader (tcall, retry.c). The
 * key is hashed on the very values the tablet server will decode
 * (values.h), so both sides agree on a row's tablet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/requests.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "rpc.pb-c.h"

/* ---- table jobs ---- */

static void table_loaded(struct tload *l, int status, const char *errmsg)
{
	struct table_job *tj = l->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (status != 0) {
		job_finish(&tj->base, status, errmsg);
		return;
	}
	if (tj->t->schema.redis && !tj->redis_ok) {
		err_set(msg, 0, "%s is a Redis database: use a Redis client (docraft_redis_async)",
			tj->table);
		job_finish(&tj->base, DOCRAFT_EINVAL, msg);
		return;
	}
	tj->loaded(tj);
}

void requests_job_init(struct table_job *tj, const struct job_ops *ops, const char *table,
		       table_loaded_fn loaded)
{
	tj->base.ops = ops;
	arena_init(&tj->arena);
	tj->table = arena_dup(&tj->arena, table, strlen(table) + 1);
	tj->loaded = loaded;
}

void requests_job_start(struct job *base)
{
	struct table_job *tj = (struct table_job *)base;
	tj->t = metacache_table(&base->c->mc, tj->table);
	tj->load.data = tj;
	tload_start(&tj->load, base->c, tj->t, false, base->deadline, table_loaded);
}

void requests_job_free(struct job *base)
{
	struct table_job *tj = (struct table_job *)base;
	arena_free(&tj->arena);
	free(tj);
}

ProtobufCMessage *requests_reply(struct table_job *tj, const ProtobufCMessageDescriptor *desc,
				 int status, const char *errmsg, const uint8_t *reply, size_t len)
{
	ProtobufCMessage *m;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (status != 0) {
		job_finish(&tj->base, status, errmsg);
		return NULL;
	}
	m = protobuf_c_message_unpack(desc, NULL, len, reply);
	if (m == NULL) {
		err_set(msg, 0, "%s does not decode", desc->short_name);
		job_finish(&tj->base, DOCRAFT_ECORRUPT, msg);
	}
	return m;
}

int requests_wait_result(docraft_client *c, struct job *j, docraft_result **out)
{
	docraft_req req;
	int rv = client_wait(c, j, &req);
	if (rv == 0)
		*out = req.result;
	return rv;
}

void *requests_zalloc(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

int requests_key(const struct schema *s, const docraft_value *key, size_t nkey,
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
	d = requests_zalloc(a, nk * sizeof *d);
	for (size_t i = 0; i < nk; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "key column '%s'", s->cols[i].name);
		if ((rv = values_to_datum(&key[i], (enum col_type)s->cols[i].type, false, what, a,
					&d[i], &pv[i], errmsg)) != 0)
			return rv;
	}
	*out = d;
	*hash = key_hash_components(pv, s->n_hash);
	return 0;
}

/* ---- get ---- */

struct get_job {
	struct table_job tj; /* first */
	docraft_value *key;
	size_t nkey;
	uint64_t read_ht;
	struct tcall tc;
	Docraft__ReadRequest req;
};

static void get_done(struct tcall *tc, int status, const char *errmsg, const uint8_t *reply,
		     size_t len)
{
	struct get_job *j = tc->data;
	Docraft__ReadResponse *resp;
	docraft_result *r;
	char msg[DOCRAFT_ERRMSG_SIZE];
	int rv = 0;

	resp = (Docraft__ReadResponse *)requests_reply(&j->tj, &docraft__read_response__descriptor,
						       status, errmsg, reply, len);
	if (resp == NULL)
		return;
	r = result_new(&j->tj.t->schema);
	r->read_ht = resp->read_ht;
	if (resp->found && resp->row != NULL)
		rv = result_add_row(r, resp->row, msg);
	docraft__read_response__free_unpacked(resp, NULL);
	if (rv != 0) {
		docraft_result_free(r);
		job_finish(&j->tj.base, rv, msg);
		return;
	}
	j->tj.base.req->result = r;
	j->tj.base.req->ht = r->read_ht;
	job_finish(&j->tj.base, 0, "");
}

static void get_loaded(struct table_job *tj)
{
	struct get_job *j = (struct get_job *)tj;
	char msg[DOCRAFT_ERRMSG_SIZE];
	uint32_t hash;
	int rv;

	docraft__read_request__init(&j->req);
	rv = requests_key(&tj->t->schema, j->key, j->nkey, &tj->arena, &j->req.key, &hash, msg);
	if (rv != 0) {
		job_finish(&tj->base, rv, msg);
		return;
	}
	j->req.n_key = j->nkey;
	j->req.table = tj->t->name;
	j->req.read_ht = j->read_ht;
	j->tc.data = j;
	tcall_init(&j->tc, tj->base.c, tj->t, hash, DOCRAFT__METHOD__TSERVER_READ, &j->req.base,
		   &j->req.tablet_id, tj->base.deadline, get_done);
	j->tc.table_id_field = &j->req.table_id;
	tcall_start(&j->tc);
}

static const struct job_ops get_ops = {requests_job_start, requests_job_free};

static struct get_job *get_job_new(const char *table, const docraft_value *key, size_t nkey,
				   uint64_t read_ht)
{
	struct get_job *j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &get_ops, table, get_loaded);
	j->key = values_copy(&j->tj.arena, key, nkey);
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
	return job_submit(c, &get_job_new(table, key, nkey, read_ht)->tj.base, req, cb);
}

int docraft_get(docraft_client *c, const char *table, const docraft_value *key, size_t nkey,
		uint64_t read_ht, docraft_result **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || table == NULL || key == NULL || out == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (nkey == 0 || nkey > SCHEMA_MAX_COLUMNS)
		return client_error(DOCRAFT_EINVAL, "bad key length %zu", nkey);
	return requests_wait_result(c, &get_job_new(table, key, nkey, read_ht)->tj.base, out);
}

/* ---- generic tablet calls and schemas (blocking helpers) ---- */

struct tablet_job {
	struct table_job tj; /* first */
	char *tablet_id;    /* NULL: schema job (in arena, as replica) */
	char *replica;
	uint16_t method;
	ProtobufCMessage *msg;
	char **tablet_id_field;
	struct buf *reply;
	struct schema *schema_out;
	struct tcall tc;
};

static void tablet_done(struct tcall *tc, int status, const char *errmsg, const uint8_t *reply,
			size_t len)
{
	struct tablet_job *j = tc->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (status == DOCRAFT_ENOTFOUND && errmsg[0] == '\0') {
		snprintf(msg, sizeof msg, "table %s has no tablet %s", j->tj.table, j->tablet_id);
		errmsg = msg;
	}
	if (status == 0)
		buf_append(j->reply, reply, len);
	job_finish(&j->tj.base, status, errmsg);
}

static void tablet_loaded(struct table_job *tj)
{
	struct tablet_job *j = (struct tablet_job *)tj;
	if (j->tablet_id == NULL) {
		schema_copy(j->schema_out, &tj->t->schema);
		job_finish(&tj->base, 0, "");
		return;
	}
	j->tc.data = j;
	tcall_init(&j->tc, tj->base.c, tj->t, 0, j->method, j->msg, j->tablet_id_field,
		   tj->base.deadline, tablet_done);
	tcall_by_id(&j->tc, j->tablet_id);
	if (j->replica != NULL)
		tcall_to_replica(&j->tc, j->replica);
	tcall_start(&j->tc);
}

static const struct job_ops tablet_ops = {requests_job_start, requests_job_free};

int client_tablet_call(docraft_client *c, const char *table, const char *tablet_id,
		       const char *replica, uint16_t method, ProtobufCMessage *msg,
		       char **tablet_id_field, struct buf *reply)
{
	docraft_req req;
	struct tablet_job *j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &tablet_ops, table, tablet_loaded);
	j->tj.redis_ok = true; /* admin: dump, checksums, step-down of any tablet */
	j->tablet_id = arena_dup(&j->tj.arena, tablet_id, strlen(tablet_id) + 1);
	j->replica = replica != NULL ? arena_dup(&j->tj.arena, replica, strlen(replica) + 1) : NULL;
	j->method = method;
	j->msg = msg;
	j->tablet_id_field = tablet_id_field;
	j->reply = reply;
	return client_wait(c, &j->tj.base, &req);
}

int client_table_schema(docraft_client *c, const char *table, struct schema *out)
{
	docraft_req req;
	struct tablet_job *j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &tablet_ops, table, tablet_loaded);
	j->tj.redis_ok = true;
	j->schema_out = out;
	return client_wait(c, &j->tj.base, &req);
}

