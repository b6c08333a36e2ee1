/* The tablet server's Redis method: TSERVER_REDIS (issue 17; service.h has
 * the contract, service.c the common design: the table's steps have found
 * the replica and checked the request's table and table id, and, before
 * svc_redis runs, that the replica leads and has room).
 *
 * Checks (svc_redis_check, before the leader check; each failure is an
 * INVALID_ARGUMENT RPC error naming the cause, nothing runs): the tablet's
 * table is a YEDIS table (TableSchema.redis: "not a Redis table"); 1 to
 * ENTRY_REDIS_MAX_COMMANDS commands; every command's name is one the engine
 * runs (yedis_command_find: "unknown command"), its word count obeys the
 * command's arity; a read request (write false) holds only commands that
 * never write (YEDIS_READONLY, YEDIS_TABLET), a write request has a 16-byte
 * client id. Every key (argv[1] of a command that is not tablet-wide) must
 * have its slot's partition value in the replica's partition, else the
 * whole request is WRONG_TABLET.
 *
 * Writes: the commands, in entry.h's encoding, go to tablet_write as one
 * Redis request with the request's (client id, seq, min_running): every
 * replica runs them where their entry applies, the answer carries their
 * replies and the hybrid time they applied at; a retry of a decided one is
 * answered with its first replies (tablet.h).
 *
 * Reads: tablet_read gives a linearizable time S (under the lease or after
 * a barrier); the commands run in a read-only yedis txn on the tablet's
 * store at S, then tablet_read_confirm decides whether the answer may go
 * (else the op reads again after a barrier), as service_data.c's reads do.
 * KEYS, SCAN and DBSIZE are such reads of one tablet (the front end merges
 * the tablets' replies).
 *
 * Replies larger together than max_reply_bytes (KEYS * on a large tablet)
 * cannot travel: the answer is then TOO_BIG naming their size (a write has
 * applied all the same; its retry gets the same answer).
 *
 * Threading: the loop thread, like everything of the service. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "redis/slot.h"
#include "tablet/diskspace.h"
#include "tablet/entry.h"
#include "tserver/service_internal.h"
#include "yedis/yedis.h"

/* The command of words args[0..n), or NULL after answering call. */
static const struct yedis_command *check_command(struct rpc_call *call, const struct replica *r,
						 const Docraft__RedisCommand *c, bool write)
{
	const struct yedis_command *cmd;
	const ProtobufCBinaryData *a = c->args;
	int n = (int)(c->n_args > 1000000 ? 1000000 : c->n_args);
	if (c->n_args == 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: a Redis command without words",
				 r->id);
		return NULL;
	}
	cmd = yedis_command_find((const char *)a[0].data, a[0].len);
	if (cmd == NULL) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: unknown command '%.*s'", r->id,
				 (int)(a[0].len > 64 ? 64 : a[0].len), (const char *)a[0].data);
		return NULL;
	}
	if ((cmd->arity > 0 && n != cmd->arity) || (cmd->arity < 0 && n < -cmd->arity) ||
	    (!(cmd->flags & YEDIS_TABLET) && n < 2)) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL,
				 "tablet %s: wrong number of arguments for '%s' command", r->id,
				 cmd->name);
		return NULL;
	}
	if (!write && (cmd->flags & YEDIS_WRITE)) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL,
				 "tablet %s: '%s' writes: send it in a write request", r->id,
				 cmd->name);
		return NULL;
	}
	if (write && (cmd->flags & YEDIS_TABLET)) {
		/* Walks the whole tablet: never inside an entry, where every
		 * replica's apply would pay for it. */
		rpc_reply_errorf(call, DOCRAFT_EINVAL,
				 "tablet %s: '%s' is a read: send it in a read request", r->id,
				 cmd->name);
		return NULL;
	}
	if (!(cmd->flags & YEDIS_TABLET)) {
		uint16_t h = redis_slot_partition(redis_key_slot(a[1].data, a[1].len));
		if (h < r->part_start || h >= r->part_end) {
			rpc_reply_errorf(call, DOCRAFT_EWRONGTABLET,
					 "tablet %s: key slot %u (partition 0x%04x) is outside its "
					 "partition [0x%04x, 0x%04x): refresh the table's locations",
					 r->id, redis_key_slot(a[1].data, a[1].len), h,
					 r->part_start, r->part_end);
			return NULL;
		}
	}
	return cmd;
}

bool svc_redis_check(void *ctx, struct rpc_call *call, const void *req, void *obj)
{
	const Docraft__RedisRequest *rq = req;
	const struct replica *r = obj;
	(void)ctx;
	if (!r->schema.redis) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: table %s is not a Redis table",
				 r->id, r->schema.table);
		return false;
	}
	if (rq->n_commands == 0 || rq->n_commands > ENTRY_REDIS_MAX_COMMANDS) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL,
				 "tablet %s: %zu Redis commands in one request (1 to %u)", r->id,
				 rq->n_commands, ENTRY_REDIS_MAX_COMMANDS);
		return false;
	}
	if (rq->write && rq->client_id.len != ENTRY_CLIENT_ID_LEN) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "client_id must be %d bytes, got %zu",
				 ENTRY_CLIENT_ID_LEN, rq->client_id.len);
		return false;
	}
	size_t tablet_wide = 0;
	for (size_t i = 0; i < rq->n_commands; i++) {
		const struct yedis_command *cmd = check_command(call, r, rq->commands[i], rq->write);
		if (cmd == NULL)
			return false;
		/* KEYS / SCAN / DBSIZE walk the tablet: one per request. */
		if ((cmd->flags & YEDIS_TABLET) && ++tablet_wide > 1) {
			rpc_reply_errorf(call, DOCRAFT_EINVAL,
					 "tablet %s: at most one tablet-wide command (KEYS, SCAN, "
					 "DBSIZE, ...) per request", r->id);
			return false;
		}
	}
	return true;
}

/* The response of n replies in p, lens[i] bytes each (arena-backed array). */
static void fill_response(Docraft__RedisResponse *resp, struct arena *a, const uint8_t *p,
			  const uint32_t *lens, uint32_t n, uint64_t ht)
{
	resp->replies = arena_alloc(a, (n + 1) * sizeof *resp->replies);
	resp->n_replies = n;
	for (uint32_t i = 0; i < n; i++) {
		resp->replies[i].data = (uint8_t *)(uintptr_t)p;
		resp->replies[i].len = lens[i];
		p += lens[i];
	}
	resp->ht = ht;
}

/* Whether n replies of lens[i] bytes fit in one answer of op; else op is
 * answered TOO_BIG. */
static bool replies_fit(struct svc_op *op, const uint32_t *lens, uint32_t n, bool write)
{
	uint64_t total = 0;
	char msg[DOCRAFT_ERRMSG_SIZE];
	for (uint32_t i = 0; i < n; i++)
		total += lens[i] + 8; /* the field's tag and length */
	if (total <= op->s->o.max_reply_bytes)
		return true;
	snprintf(msg, sizeof msg,
		 "tablet %s: %u Redis replies of %" PRIu64 " bytes exceed the largest answer "
		 "(%u bytes)%s",
		 op->tablet_id, n, total, op->s->o.max_reply_bytes,
		 write ? ": the commands WERE applied, only their replies are not returned; "
			 "do not resend them"
		       : ": ask for less (SCAN with COUNT instead of KEYS)");
	svc_op_fail(op, DOCRAFT_ETOOBIG, msg);
	return false;
}

/* ---- writes ---- */

static void redis_write_done(struct tablet_write *w, int status, uint64_t ht)
{
	struct svc_op *op = w->data;
	Docraft__RedisResponse resp = DOCRAFT__REDIS_RESPONSE__INIT;
	op->r->pending--;
	if (status == 0 && !replies_fit(op, w->reply_len, w->nreplies, true)) {
		svc_op_free(op);
		return;
	}
	if (status == 0)
		fill_response(&resp, &op->arena, w->replies, w->reply_len, w->nreplies, ht);
	svc_op_end(op, status,
		   status == DOCRAFT_ETOOOLD
		   ? "retry window expired: the tablet no longer knows whether this request "
		     "applied (--retry-record-ttl-s); not applied again"
		   : NULL,
		   &resp.base);
}

static void encode_commands(struct buf *out, const Docraft__RedisRequest *rq)
{
	entry_redis_begin(out, (uint32_t)rq->n_commands);
	for (size_t i = 0; i < rq->n_commands; i++) {
		const Docraft__RedisCommand *c = rq->commands[i];
		entry_redis_command(out, (uint32_t)c->n_args);
		for (size_t j = 0; j < c->n_args; j++)
			entry_redis_arg(out, c->args[j].data, c->args[j].len);
	}
}

static enum rpc_dispatch_req redis_write(struct service *s, struct rpc_call *call,
					 const Docraft__RedisRequest *rq, struct replica *r)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	int rv;

	if ((rv = diskspace_admit(s->o.disk, errmsg)) != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	op = svc_op_new(s, OP_REDIS, call, r->id);
	op->r = r;
	encode_commands(&op->cmds, rq);
	op->w.redis = op->cmds.data;
	op->w.redis_len = op->cmds.len;
	svc_write_submit(op, rq->client_id.data, rq->seq, rq->min_running, redis_write_done);
	return RPC_DISPATCH_FREE;
}

/* ---- reads ---- */

static void start_read(struct svc_op *op);

/* Runs the op's commands at `at`; false if the lease ran out meanwhile
 * (nothing answered: read again). */
static bool do_redis_read(struct svc_op *op, uint64_t at)
{
	const Docraft__RedisRequest *rq = op->redis;
	Docraft__RedisResponse resp = DOCRAFT__REDIS_RESPONSE__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store *store = tablet_store(op->r->t);
	struct buf replies = BUF_INIT;
	uint32_t *lens = arena_alloc(&op->arena, (rq->n_commands + 1) * sizeof *lens);
	struct resp_arg *argv = NULL;
	size_t cap = 0;
	struct yedis_txn *txn;
	size_t i;
	int rv = 0;

	struct yedis_txn_options o = {
		.store = store,
		.ht = at,
		.seed = at,
		.batch = NULL,
		.default_ttl_ms = op->r->schema.default_ttl_ms,
	};
	txn = yedis_txn_new(&o);
	/* Stops once the replies outgrow one answer: a peer cannot make this
	 * loop build more than that (TOO_BIG below). */
	for (i = 0; i < rq->n_commands && rv == 0 && replies.len <= op->s->o.max_reply_bytes;
	     i++) {
		const Docraft__RedisCommand *c = rq->commands[i];
		size_t before = replies.len;
		if (c->n_args > cap) {
			cap = c->n_args;
			argv = arena_alloc(&op->arena, cap * sizeof *argv);
		}
		for (size_t j = 0; j < c->n_args; j++) {
			argv[j].p = (const char *)c->args[j].data;
			argv[j].n = c->args[j].len;
		}
		rv = yedis_exec(txn, (uint32_t)c->n_args, argv, &replies, errmsg);
		lens[i] = (uint32_t)(replies.len - before);
	}
	yedis_txn_free(txn);
	if (!tablet_read_confirm(op->r->t, &op->rd)) {
		buf_free(&replies);
		return false;
	}
	if (rv != 0) {
		svc_op_fail(op, rv, errmsg);
	} else if (replies_fit(op, lens, (uint32_t)i, false)) {
		fill_response(&resp, &op->arena, replies.data, lens, (uint32_t)rq->n_commands, at);
		svc_op_ok(op, &resp.base);
	}
	buf_free(&replies);
	return true;
}

static void redis_read_done(struct tablet_read *rd, int status, uint64_t safe_ht)
{
	struct svc_op *op = rd->data;
	op->r->pending--;
	if (status != 0) {
		op->r = NULL;
		svc_op_end(op, status, NULL, NULL);
		return;
	}
	if (op->call == NULL) { /* answered already (deadline, abandoned) */
		svc_op_free(op);
		return;
	}
	if (!do_redis_read(op, safe_ht)) {
		op->rd.barrier = true; /* the lease ran out meanwhile */
		start_read(op);
		return;
	}
	svc_op_free(op);
}

static void start_read(struct svc_op *op)
{
	int rv;
	op->rd.data = op;
	op->rd.cb = redis_read_done;
	if ((rv = tablet_read(op->r->t, &op->rd)) != 0) {
		svc_op_end(op, rv, NULL, NULL);
		return;
	}
	op->r->pending++;
}

/* Kept by the op from the start: freed with it. */
enum rpc_dispatch_req svc_redis(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	Docraft__RedisRequest *rq = req;
	struct replica *r = obj;
	struct svc_op *op;

	if (rq->write)
		return redis_write(s, call, rq, r);
	op = svc_op_new(s, OP_REDIS, call, r->id);
	op->r = r;
	op->redis = rq;
	start_read(op);
	return RPC_DISPATCH_KEEP;
}
