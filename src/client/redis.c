/* YEDIS requests: docraft_redis_async (Redis commands on the leader of
 * the tablet owning a slot) and docraft_redis_tablets_async (the tablets
 * of a Redis database by slot range), issue 17.
 *
 * Design note. Redis database db is the table "redis_<db>" (TableSchema.
 * redis: one hash column k blob). Both requests are table jobs
 * (requests.h) with their own start: the table is loaded into the
 * metadata cache (tload); when the master does not know it, the job
 * creates it once (CreateTable with redis = true, the client's default
 * tablets and replication factor, a request id so that a retried create
 * is answered with its first result) and loads it again. The outcome of
 * that create does not matter: "already exists" (another client won the
 * race) or an error both lead to the second load, whose answer is final;
 * "being created" (EBUSY) is retried by the master call itself. A request
 * that finds the cached table gone (TABLE_NOT_FOUND after a refresh: the
 * database was dropped) does the same, once, and is sent again. A table of
 * that name that is not a Redis table (CREATE TABLE redis_0 in CQL) is
 * refused: its rows are not Redis values.
 *
 * Routing: the slot's partition value (redis_slot_partition: slot * 4) is
 * the route of a tcall (retry.c), so leaders, NOT_LEADER hints, stale
 * tablets, WRONG_TABLET and the deadline are handled as for every tablet
 * call. A write request takes a sequence number when it is built and
 * keeps it on every attempt (min_running set per attempt, as write.c), so
 * the tablet applies it once whatever the retries; a read has no seq.
 *
 * Tablets: the tablet [start, end) owns slots ceil(start/4) ..
 * ceil(end/4) - 1 (redis_partition_slot). When the cache knows no leader
 * for some tablet, the table is refreshed once (GetTable names the
 * leaders the master knows), so CLUSTER SLOTS points at leaders.
 *
 * Memory: the job's messages and copies are in its arena; a result holds
 * its replies or tablets in its own arena. Threading: the loop thread,
 * except the public calls (any thread, job_submit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/requests.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/redis_slot.h"
#include "rpc.pb-c.h"

#define REDIS_TABLE_NAME_MAX 32

struct redis_job {
	struct table_job tj; /* first */
	bool tablets;        /* docraft_redis_tablets_async */
	bool created;        /* the create-on-first-use was tried */
	bool refreshed;      /* tablets: refreshed for unknown leaders */
	int create_status;   /* the create's outcome, for a load that fails after it */
	char create_msg[DOCRAFT_ERRMSG_SIZE];
	uint16_t slot;
	bool write;
	struct mcall create;
	Docraft__CreateTableRequest create_req;
	Docraft__RedisRequest req;
	struct client_seq seq;
	struct tcall tc;
};

static void redis_loaded(struct table_job *tj);

/* ---- resolving the table (create on first use) ---- */

static void load_done(struct tload *l, int status, const char *errmsg);

static void load(struct redis_job *j, bool force)
{
	struct table_job *tj = &j->tj;
	tj->load.data = j;
	tload_start(&tj->load, tj->base.c, tj->t, force, tj->base.deadline, load_done);
}

static void create_done(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			size_t len)
{
	struct redis_job *j = m->data;
	(void)reply;
	(void)len;
	if (status == DOCRAFT_ECLOSED) {
		job_finish(&j->tj.base, status, errmsg);
		return;
	}
	/* Created, or another client did ("already exists"), or a failure
	 * the second load will report: load again either way. */
	j->create_status = status;
	snprintf(j->create_msg, sizeof j->create_msg, "%s", errmsg);
	metacache_forget(&j->tj.base.c->mc, j->tj.table);
	load(j, true);
}

static void create_table(struct redis_job *j)
{
	struct table_job *tj = &j->tj;
	docraft_client *c = tj->base.c;
	Docraft__CreateTableRequest *req = &j->create_req;
	Docraft__TableSchema *s = requests_zalloc(&tj->arena, sizeof *s);
	Docraft__ColumnSchema *k = requests_zalloc(&tj->arena, sizeof *k);
	Docraft__ColumnSchema **cols = requests_zalloc(&tj->arena, sizeof *cols);

	docraft__column_schema__init(k);
	k->name = "k";
	k->kind = DOCRAFT__COLUMN_KIND__HASH;
	k->type = DOCRAFT__COLUMN_TYPE__BLOB;
	cols[0] = k;
	docraft__table_schema__init(s);
	s->name = tj->table;
	s->n_columns = 1;
	s->columns = cols;
	s->redis = true;
	docraft__create_table_request__init(req);
	req->schema = s;
	req->num_tablets = c->opts.num_tablets;
	req->replication_factor = c->opts.replication_factor;
	/* A request id: a retry is answered with the first attempt's result. */
	req->client_id.data = c->id;
	req->client_id.len = sizeof c->id;
	req->seq = ++c->next_seq;
	j->created = true;
	j->create.data = j;
	mcall_start(&j->create, c, DOCRAFT__METHOD__MASTER_CREATE_TABLE, &req->base,
		    tj->base.deadline, create_done);
}

static bool leaders_unknown(const struct mc_table *t)
{
	for (size_t i = 0; i < t->n_tablets; i++)
		if (t->tablets[i].leader[0] == '\0')
			return true;
	return false;
}

static void load_done(struct tload *l, int status, const char *errmsg)
{
	struct redis_job *j = l->data;
	struct table_job *tj = &j->tj;
	char msg[DOCRAFT_ERRMSG_SIZE];

	if (status == DOCRAFT_ETABLENOTFOUND && !j->created) {
		create_table(j);
		return;
	}
	if (status != 0 && j->created && j->create_status != 0 &&
	    j->create_status != DOCRAFT_EINVAL /* "already exists" */) {
		/* Still not there: the create's own failure says why. */
		err_set(msg, 0, "creating table %s: %s", tj->table, j->create_msg);
		job_finish(&tj->base, j->create_status, msg);
		return;
	}
	if (status != 0) {
		job_finish(&tj->base, status, errmsg);
		return;
	}
	if (!tj->t->schema.redis) {
		err_set(msg, 0,
			"table %s exists and is not a Redis database (a CQL table of that name: "
			"drop or rename it)",
			tj->table);
		job_finish(&tj->base, DOCRAFT_EINVAL, msg);
		return;
	}
	if (j->tablets && !j->refreshed && leaders_unknown(tj->t)) {
		j->refreshed = true;
		load(j, true);
		return;
	}
	redis_loaded(tj);
}

static void redis_start(struct job *base)
{
	struct redis_job *j = (struct redis_job *)base;
	j->tj.t = metacache_table(&base->c->mc, j->tj.table);
	load(j, false);
}

static const struct job_ops redis_ops = {redis_start, requests_job_free};

static struct redis_job *redis_job_new(unsigned db, bool tablets)
{
	struct redis_job *j = xcalloc(1, sizeof *j);
	char name[REDIS_TABLE_NAME_MAX];
	snprintf(name, sizeof name, "redis_%u", db);
	requests_job_init(&j->tj, &redis_ops, name, redis_loaded);
	j->tablets = tablets;
	return j;
}

static docraft_result *redis_result_new(void)
{
	docraft_result *r = xcalloc(1, sizeof *r);
	arena_init(&r->arena);
	return r;
}

/* ---- commands ---- */

static void redis_prepare(struct tcall *tc)
{
	struct redis_job *j = tc->data;
	j->req.min_running = client_min_running(tc->c);
}

static void redis_done(struct tcall *tc, int status, const char *errmsg, const uint8_t *reply,
		       size_t len)
{
	struct redis_job *j = tc->data;
	Docraft__RedisResponse *resp;
	docraft_result *r;

	if (j->write)
		client_seq_release(j->tj.base.c, &j->seq);
	if (status == DOCRAFT_ETABLENOTFOUND && !j->created) {
		/* The cached table was dropped (FLUSHALL, DROP TABLE): create it
		 * again, once, as on first use, and send the request anew. */
		metacache_forget(&j->tj.base.c->mc, j->tj.table);
		create_table(j);
		return;
	}
	resp = (Docraft__RedisResponse *)requests_reply(
		&j->tj, &docraft__redis_response__descriptor, status, errmsg, reply, len);
	if (resp == NULL)
		return;
	if (resp->n_replies != j->req.n_commands) {
		char msg[DOCRAFT_ERRMSG_SIZE];
		err_set(msg, 0, "RedisResponse: %zu replies for %zu commands", resp->n_replies,
			j->req.n_commands);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		job_finish(&j->tj.base, DOCRAFT_ECORRUPT, msg);
		return;
	}
	r = redis_result_new();
	r->nreplies = resp->n_replies;
	r->replies = requests_zalloc(&r->arena, resp->n_replies * sizeof *r->replies);
	for (size_t i = 0; i < resp->n_replies; i++) {
		r->replies[i].n = resp->replies[i].len;
		r->replies[i].p = arena_dup(&r->arena, resp->replies[i].data,
					    resp->replies[i].len ? resp->replies[i].len : 1);
	}
	r->read_ht = resp->ht;
	j->tj.base.req->ht = resp->ht;
	j->tj.base.req->result = r;
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	job_finish(&j->tj.base, 0, "");
}

static void commands_loaded(struct redis_job *j)
{
	struct table_job *tj = &j->tj;
	docraft_client *c = tj->base.c;

	j->req.table = tj->t->name;
	if (j->write) {
		j->req.client_id.data = c->id;
		j->req.client_id.len = sizeof c->id;
		client_seq_acquire(c, &j->seq);
		j->req.seq = j->seq.seq;
	}
	j->tc.data = j;
	tcall_init(&j->tc, c, tj->t, redis_slot_partition(j->slot), DOCRAFT__METHOD__TSERVER_REDIS,
		   &j->req.base, &j->req.tablet_id, tj->base.deadline, redis_done);
	j->tc.table_id_field = &j->req.table_id;
	if (j->write)
		j->tc.prepare = redis_prepare;
	tcall_start(&j->tc);
}

/* ---- tablets ---- */

static const char *dup_str(struct arena *a, const char *s)
{
	return arena_dup(a, s, strlen(s) + 1);
}

static void tablets_loaded(struct redis_job *j)
{
	const struct mc_table *t = j->tj.t;
	docraft_result *r = redis_result_new();

	r->rtablets = requests_zalloc(&r->arena, t->n_tablets * sizeof *r->rtablets);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const struct mc_tablet *tb = &t->tablets[i];
		uint32_t first = redis_partition_slot(tb->start);
		uint32_t end = redis_partition_slot(tb->end);
		docraft_redis_tablet *out = &r->rtablets[r->nrtablets];
		const char **addrs, **uuids;
		size_t n = 0, lead = tb->n_replicas;

		if (first >= end) /* a tablet narrower than a slot's step owns none */
			continue;
		r->nrtablets++;
		out->tablet_id = dup_str(&r->arena, tb->id);
		out->first_slot = (uint16_t)first;
		out->last_slot = (uint16_t)(end - 1);
		addrs = requests_zalloc(&r->arena, tb->n_replicas * sizeof *addrs);
		uuids = requests_zalloc(&r->arena, tb->n_replicas * sizeof *uuids);
		for (size_t k = 0; k < tb->n_replicas; k++)
			if (tb->leader[0] != '\0' &&
			    strcmp(tb->replicas[k].address, tb->leader) == 0)
				lead = k;
		if (lead < tb->n_replicas) {
			addrs[n] = dup_str(&r->arena, tb->replicas[lead].redis_address);
			uuids[n++] = dup_str(&r->arena, tb->replicas[lead].uuid);
		}
		for (size_t k = 0; k < tb->n_replicas; k++) {
			if (k == lead)
				continue;
			addrs[n] = dup_str(&r->arena, tb->replicas[k].redis_address);
			uuids[n++] = dup_str(&r->arena, tb->replicas[k].uuid);
		}
		out->leader_known = lead < tb->n_replicas;
		out->nreplicas = n;
		out->redis_addresses = addrs;
		out->tserver_uuids = uuids;
	}
	j->tj.base.req->result = r;
	job_finish(&j->tj.base, 0, "");
}

static void redis_loaded(struct table_job *tj)
{
	struct redis_job *j = (struct redis_job *)tj;
	if (j->tablets)
		tablets_loaded(j);
	else
		commands_loaded(j);
}

/* ---- the public calls ---- */

/* The checks of a Redis request and its job (NULL and docraft_errmsg set
 * when the arguments are wrong). */
static struct redis_job *commands_job_new(unsigned db, uint16_t slot, const docraft_redis_cmd *cmds,
					  size_t n, bool write)
{
	struct redis_job *j;
	Docraft__RedisCommand **pcs;

	if (cmds == NULL) {
		client_error(DOCRAFT_EINVAL, "NULL argument");
		return NULL;
	}
	if (n == 0) {
		client_error(DOCRAFT_EINVAL, "no Redis commands");
		return NULL;
	}
	if (slot >= REDIS_SLOTS) {
		client_error(DOCRAFT_EINVAL, "slot %u is not below %u", slot, REDIS_SLOTS);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (cmds[i].argc == 0 || cmds[i].argv == NULL) {
			client_error(DOCRAFT_EINVAL, "Redis command %zu has no arguments", i + 1);
			return NULL;
		}
		for (uint32_t a = 0; a < cmds[i].argc; a++)
			if (cmds[i].argv[a].p == NULL && cmds[i].argv[a].n > 0) {
				client_error(DOCRAFT_EINVAL,
					     "Redis command %zu: argument %u is NULL", i + 1, a);
				return NULL;
			}
	}
	j = redis_job_new(db, false);
	j->slot = slot;
	j->write = write;
	docraft__redis_request__init(&j->req);
	j->req.write = write;
	j->req.n_commands = n;
	pcs = requests_zalloc(&j->tj.arena, n * sizeof *pcs);
	for (size_t i = 0; i < n; i++) {
		Docraft__RedisCommand *pc = requests_zalloc(&j->tj.arena, sizeof *pc);
		docraft__redis_command__init(pc);
		pc->n_args = cmds[i].argc;
		pc->args = requests_zalloc(&j->tj.arena, cmds[i].argc * sizeof *pc->args);
		for (uint32_t a = 0; a < cmds[i].argc; a++) {
			size_t len = cmds[i].argv[a].n;
			pc->args[a].len = len;
			pc->args[a].data =
				len > 0 ? arena_dup(&j->tj.arena, cmds[i].argv[a].p, len) : NULL;
		}
		pcs[i] = pc;
	}
	j->req.commands = pcs;
	return j;
}

int docraft_redis_async(docraft_client *c, docraft_req *req, unsigned db, uint16_t slot,
			const docraft_redis_cmd *cmds, size_t n, bool write, docraft_req_cb cb)
{
	struct redis_job *j;
	if (c == NULL || req == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((j = commands_job_new(db, slot, cmds, n, write)) == NULL)
		return DOCRAFT_EINVAL; /* docraft_errmsg() says why */
	return job_submit(c, &j->tj.base, req, cb);
}

int client_redis(docraft_client *c, unsigned db, uint16_t slot, const docraft_redis_cmd *cmds,
		 size_t n, bool write, docraft_result **out)
{
	struct redis_job *j = commands_job_new(db, slot, cmds, n, write);
	if (j == NULL)
		return DOCRAFT_EINVAL;
	return requests_wait_result(c, &j->tj.base, out);
}

int client_redis_tablets(docraft_client *c, unsigned db, docraft_result **out)
{
	return requests_wait_result(c, &redis_job_new(db, true)->tj.base, out);
}

int docraft_redis_tablets_async(docraft_client *c, docraft_req *req, unsigned db, docraft_req_cb cb)
{
	if (c == NULL || req == NULL || cb == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	return job_submit(c, &redis_job_new(db, true)->tj.base, req, cb);
}

size_t docraft_result_nreplies(const docraft_result *r)
{
	return r != NULL ? r->nreplies : 0;
}

const void *docraft_result_reply(const docraft_result *r, size_t i, size_t *len)
{
	if (r == NULL || i >= r->nreplies) {
		if (len != NULL)
			*len = 0;
		return NULL;
	}
	if (len != NULL)
		*len = r->replies[i].n;
	return r->replies[i].p;
}

int docraft_redis_slot_tablet(docraft_client *c, unsigned db, uint16_t slot, uint16_t *first,
			      uint16_t *last)
{
	char name[REDIS_TABLE_NAME_MAX];
	const struct mc_table *t;
	const struct mc_tablet *tb;

	if (c == NULL || first == NULL || last == NULL || c->owns_loop)
		return client_error(DOCRAFT_EINVAL, "NULL argument or a client with its own loop");
	if (slot >= REDIS_SLOTS)
		return client_error(DOCRAFT_EINVAL, "slot %u is not below %u", slot, REDIS_SLOTS);
	snprintf(name, sizeof name, "redis_%u", db);
	t = metacache_table(&c->mc, name);
	if (!t->loaded || (tb = metacache_lookup(t, redis_slot_partition(slot))) == NULL)
		return DOCRAFT_ENOTFOUND;
	*first = (uint16_t)redis_partition_slot(tb->start);
	*last = (uint16_t)(redis_partition_slot(tb->end) - 1);
	return 0;
}

size_t docraft_result_ntablets(const docraft_result *r)
{
	return r != NULL ? r->nrtablets : 0;
}

void docraft_result_redis_tablet(const docraft_result *r, size_t i, docraft_redis_tablet *out)
{
	if (r == NULL || i >= r->nrtablets) {
		memset(out, 0, sizeof *out);
		return;
	}
	*out = r->rtablets[i];
}
