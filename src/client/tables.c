/* Tables: create and drop (docraft_table_create, docraft_table_drop and
 * their async forms), and the generic master call behind the admin
 * commands (client_master_call). Each is a job around one mcall
 * (metacache.h), which finds the master leader and retries.
 *
 * Design note. CREATE and DROP carry a request id (the client id and a
 * sequence number taken when the job starts, the same on every attempt:
 * mcall sends the same bytes), so a master that applied an attempt
 * answers a retry with the first result. CREATE TABLE with IF NOT EXISTS
 * first tries to create, and on a failure asks GetTable whether the table
 * is there (it may even be from an earlier attempt whose answer was lost);
 * both forget the table in the metadata cache when they succeed, so the
 * next request loads it afresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "common/err.h"
#include "common/mem.h"
#include "rpc/wire.h"
#include "rpc.pb-c.h"

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
	/* DDL: msg's request id fields (NULL for generic calls). */
	ProtobufCBinaryData *client_id;
	uint64_t *seq;
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
	if (j->client_id != NULL) {
		j->client_id->data = c->id;
		j->client_id->len = sizeof c->id;
		*j->seq = ++c->next_seq;
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
	j->client_id = &req->client_id;
	j->seq = &req->seq;
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
	j->client_id = &req->client_id;
	j->seq = &req->seq;
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

