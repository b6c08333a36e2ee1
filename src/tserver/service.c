/* The tablet server's RPC service. See service.h for the contract and
 * service_internal.h for how its files divide the work.
 *
 * Design.
 *
 * One method table (rpc/dispatch.h) declares the ten TSERVER_* methods:
 * their request and response types, their flags and their handlers. The
 * dispatcher decodes every request once, on the loop thread, and runs the
 * hooks of this file before the handler, so that every check happens
 * before anything is queued: the tablet named by the request's tablet_id
 * must be hosted here (else TABLET_NOT_FOUND) and open (a replica that
 * failed to open: UNAVAILABLE), the find hook; for data requests (SVC_DATA)
 * the table name and table id (when given) must be the tablet's; the
 * method's own check (a write's schema version, a read's key) comes next;
 * then, for methods only a leader serves, this replica must be the leader
 * or about to become a ready one (a follower answers NOT_LEADER at once
 * with the leader it knows; a leader whose barrier has not applied yet
 * queues the request in the tablet, which serves it once ready), and a data
 * request needs room in the tablet's queue (max_pending). Heartbeat
 * instructions take the same steps with no call (run_instruction): their
 * failures are logged.
 *
 * Requests that wait for a tablet callback (writes, reads, scans, deletes,
 * configuration changes, step-downs) are "ops": an op owns its rpc_call
 * until it answers, and sets op->call to NULL when it does, so every call is
 * answered exactly once however the op ends. A sweep timer (every
 * SWEEP_MS) answers calls whose deadline passed with TIMED_OUT ("outcome
 * unknown") and calls whose connection is gone (the answer is dropped), so
 * neither waits for the tablet; the op itself lives on until its tablet
 * callback, which every tablet request is guaranteed (tablet.h: closing a
 * tablet fails what is pending). A replica pointer is kept only by writes,
 * reads and scans, whose callbacks always run before the tablet's close
 * callback frees the replica; the other ops find their replica again by id.
 * Reads and scans keep their decoded request in the op
 * (RPC_DISPATCH_KEEP): their keys borrow from it until the answer.
 *
 * The methods themselves: service_data.c (writes, reads, scans, with the
 * design of reads at a time, partitions and read restart),
 * service_admin.c (replicas and their configuration), service_paged.c
 * (checksums and dumps, one page per loop turn).
 *
 * Errors: svc_reply_error is the one place where a docraft code becomes a
 * reply. The codes are the wire statuses (proto/rpc.proto), so most pass
 * through; DOCRAFT_ENOTLEADER gets the leader hint; DOCRAFT_ECLOSED (a
 * tablet closing under a request) becomes UNAVAILABLE when the server is
 * shutting down, TABLET_NOT_FOUND when the tablet was deleted. */
#include "tserver/service.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "rpc.pb-c.h"
#include "tserver/service_internal.h"

#define SWEEP_MS 100

/* The table's private flag: a data request (WRITE, READ, SCAN), checked
 * against the request's table and queued on the tablet (max_pending). */
#define SVC_DATA RPC_METHOD_PRIVATE(0)

const char *svc_op_name(enum op_kind k)
{
	switch (k) {
	case OP_WRITE: return "write";
	case OP_READ: return "read";
	case OP_SCAN: return "scan";
	case OP_DELETE: return "delete";
	case OP_CHANGE: return "change config";
	case OP_STEP_DOWN: return "step down";
	case OP_CHECKSUM: return "checksum";
	case OP_DUMP: return "dump";
	case OP_CREATE: return "create";
	case OP_REDIS: return "redis";
	}
	return "?";
}

/* ---- answering ------------------------------------------------------------------ */

void svc_reply_error(struct service *s, struct rpc_call *call, const char *tablet_id,
		     struct replica *r, int code, const char *msg)
{
	char buf[DOCRAFT_ERRMSG_SIZE];
	const char *addr = NULL;
	uint64_t leader = 0;

	switch (code) {
	case DOCRAFT_ENOTLEADER:
		if (r == NULL)
			r = manager_find(s->m, tablet_id);
		if (r != NULL && r->state == REPLICA_OPEN && r->t != NULL) {
			leader = tablet_leader(r->t, &addr);
			if (leader == r->raft_id || leader == 0) {
				leader = 0;
				addr = NULL;
			}
		}
		if (msg == NULL) {
			if (addr != NULL)
				snprintf(buf, sizeof buf,
					 "tablet %s: not the leader; the leader is %s", tablet_id,
					 addr);
			else
				snprintf(buf, sizeof buf,
					 "tablet %s: not the leader; leader unknown", tablet_id);
			msg = buf;
		}
		break;
	case DOCRAFT_ECLOSED:
		if (s->closing || manager_closing(s->m)) {
			code = DOCRAFT_EUNAVAILABLE;
			msg = "the tablet server is shutting down";
		} else if (manager_find(s->m, tablet_id) == NULL) {
			code = DOCRAFT_ETABLETNOTFOUND;
			snprintf(buf, sizeof buf, "tablet %s was deleted", tablet_id);
			msg = buf;
		} else {
			code = DOCRAFT_EUNAVAILABLE;
			snprintf(buf, sizeof buf, "tablet %s is closed", tablet_id);
			msg = buf;
		}
		break;
	default:
		break;
	}
	if (msg == NULL) {
		snprintf(buf, sizeof buf, "tablet %s: %s", tablet_id, docraft_strerror(code));
		msg = buf;
	}
	rpc_reply_error(call, code, msg, addr, leader);
}

void svc_fail_call(struct service *s, struct rpc_call *call, const char *what,
		   const char *tablet_id, int code, const char *msg)
{
	if (call != NULL)
		svc_reply_error(s, call, tablet_id, NULL, code, msg);
	else
		LOG_WARN("tablet %s: %s instruction failed: %s", tablet_id, what,
			 msg != NULL ? msg : docraft_strerror(code));
}

void svc_op_fail(struct svc_op *op, int code, const char *msg)
{
	if (op->call != NULL) {
		svc_reply_error(op->s, op->call, op->tablet_id, op->r, code, msg);
		op->call = NULL;
	} else if (op->instruction) {
		LOG_WARN("tablet %s: %s instruction failed: %s", op->tablet_id,
			 svc_op_name(op->kind), msg != NULL ? msg : docraft_strerror(code));
	}
}

void svc_op_ok(struct svc_op *op, const ProtobufCMessage *msg)
{
	if (op->call != NULL) {
		rpc_reply_message(op->call, msg);
		op->call = NULL;
	} else if (op->instruction) {
		LOG_INFO("tablet %s: %s instruction done", op->tablet_id, svc_op_name(op->kind));
	}
}

void svc_op_end(struct svc_op *op, int status, const char *msg, const ProtobufCMessage *ok)
{
	if (status != 0)
		svc_op_fail(op, status, msg);
	else
		svc_op_ok(op, ok);
	svc_op_free(op);
}

/* ---- ops ------------------------------------------------------------------------- */

struct svc_op *svc_op_new(struct service *s, enum op_kind kind, struct rpc_call *call,
			  const char *tablet_id)
{
	struct svc_op *op = xzalloc(sizeof *op);
	op->s = s;
	op->kind = kind;
	op->call = call;
	op->instruction = call == NULL;
	snprintf(op->tablet_id, sizeof op->tablet_id, "%s", tablet_id != NULL ? tablet_id : "");
	op->started = uv_now(s->loop);
	batch_init(&op->batch);
	buf_init(&op->cond);
	arena_init(&op->arena);
	op->next = s->ops;
	if (s->ops != NULL)
		s->ops->prev = op;
	s->ops = op;
	return op;
}

void svc_op_free(struct svc_op *op)
{
	struct service *s = op->s;
	if (op->call != NULL) /* never happens: every path answers first */
		svc_reply_error(s, op->call, op->tablet_id, NULL, DOCRAFT_EUNAVAILABLE, NULL);
	*(op->prev != NULL ? &op->prev->next : &s->ops) = op->next;
	if (op->next != NULL)
		op->next->prev = op->prev;
	batch_free(&op->batch);
	buf_free(&op->cond);
	buf_free(&op->cmds);
	arena_free(&op->arena);
	buf_free(&op->text);
	buf_free(&op->dump_key);
	if (op->kind == OP_CHECKSUM || op->kind == OP_DUMP)
		s->n_paged--;
	if (op->read != NULL)
		docraft__read_request__free_unpacked(op->read, NULL);
	if (op->scan != NULL)
		docraft__scan_request__free_unpacked(op->scan, NULL);
	if (op->redis != NULL)
		docraft__redis_request__free_unpacked(op->redis, NULL);
	if (op->ck_on)
		checksum_free(&op->ck);
	free(op);
}

static void sweep_cb(uv_timer_t *h)
{
	struct service *s = h->data;
	uint64_t now = uv_now(s->loop);
	for (struct svc_op *op = s->ops; op != NULL; op = op->next) {
		struct rpc_call *c = op->call;
		if (c == NULL)
			continue;
		if (rpc_call_abandoned(c)) {
			op->call = NULL;
			/* The answer is dropped; this frees the call. */
			rpc_reply_error(c, DOCRAFT_EUNAVAILABLE, "abandoned", NULL, 0);
		} else if (c->deadline != 0 && now >= c->deadline) {
			op->call = NULL;
			rpc_reply_errorf(c, DOCRAFT_ETIMEDOUT, "tablet %s: %s: the deadline "
					 "passed first; outcome unknown", op->tablet_id,
					 svc_op_name(op->kind));
		}
	}
}

/* ---- the table's hooks ------------------------------------------------------------ */

/* The OPEN replica id, or NULL after answering (or logging). */
static struct replica *find_open(struct service *s, struct rpc_call *call, const char *what,
				 const char *id)
{
	char msg[2 * DOCRAFT_ERRMSG_SIZE];
	struct replica *r = manager_find(s->m, id);
	const char *busy = r == NULL ? manager_busy(s->m, id) : NULL;
	if (busy != NULL && strcmp(busy, "being created") == 0) {
		snprintf(msg, sizeof msg, "tablet %s is being created here: retry", id);
		svc_fail_call(s, call, what, id, DOCRAFT_EUNAVAILABLE, msg);
		return NULL;
	}
	if (r == NULL) {
		snprintf(msg, sizeof msg, "tablet %s is not hosted here", id);
		svc_fail_call(s, call, what, id, DOCRAFT_ETABLETNOTFOUND, msg);
		return NULL;
	}
	if (r->state != REPLICA_OPEN || r->t == NULL) {
		snprintf(msg, sizeof msg, "tablet %s failed: %s", id, r->errmsg);
		svc_fail_call(s, call, what, id, DOCRAFT_EUNAVAILABLE, msg);
		return NULL;
	}
	return r;
}

static int check_table(const struct replica *r, const char *table, char *errmsg)
{
	if (table != NULL && table[0] != '\0' && strcmp(table, r->schema.table) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s belongs to table %s, not %s",
			       r->id, r->schema.table, table);
	return 0;
}

/* WRONG_TABLET when the request names a table id (the incarnation of the
 * table the client resolved) and r belongs to another one: r's table was
 * dropped and created again, the client's locations are stale. */
static int check_table_id(const struct replica *r, const char *table_id, char *errmsg)
{
	if (table_id == NULL || table_id[0] == '\0' || r->table_id[0] == '\0' ||
	    strcmp(table_id, r->table_id) == 0)
		return 0;
	return err_set(errmsg, DOCRAFT_EWRONGTABLET,
		       "tablet %s belongs to table id %s, not %s (table %s dropped and created "
		       "again?): refresh the table's locations", r->id, r->table_id, table_id,
		       r->schema.table);
}

/* RPC_METHOD_FIND: the open replica of req's tablet_id, checked against
 * req's table and table id for a data request; NULL once call is answered
 * (logged, call NULL). */
static struct replica *find_replica(struct service *s, struct rpc_call *call,
				    const struct rpc_method *m, const ProtobufCMessage *req)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = find_open(s, call, m->name, rpc_message_string(req, "tablet_id"));
	int rv;
	if (r != NULL && (m->flags & SVC_DATA) &&
	    ((rv = check_table(r, rpc_message_string(req, "table"), errmsg)) != 0 ||
	     (rv = check_table_id(r, rpc_message_string(req, "table_id"), errmsg)) != 0)) {
		svc_reply_error(s, call, r->id, r, rv, errmsg);
		return NULL;
	}
	return r;
}

static void *find_hook(void *ctx, struct rpc_call *call, const struct rpc_method *m,
		       const ProtobufCMessage *req)
{
	return find_replica(ctx, call, m, req);
}

/* 0 if r's tablet takes leader requests now (a ready leader, or a leader
 * whose barrier is pending: the tablet queues them), else the code. */
static int leader_check(struct replica *r)
{
	struct tablet_status st;
	tablet_get_status(r->t, &st);
	switch (st.role) {
	case TABLET_LEADER:
	case TABLET_LEADER_NOT_READY:
		return 0;
	case TABLET_FOLLOWER:
	case TABLET_CANDIDATE:
	case TABLET_COPYING:
		return DOCRAFT_ENOTLEADER;
	default:
		return DOCRAFT_EUNAVAILABLE;
	}
}

bool svc_room_for(struct service *s, struct rpc_call *call, const struct replica *r)
{
	if (r->pending < s->o.max_pending)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EBUSY, "tablet %s: %u requests queued: retry later", r->id,
			 r->pending);
	return false;
}

bool svc_may_serve(struct service *s, struct rpc_call *call, const char *what, struct replica *r,
		   bool queued)
{
	int rv = leader_check(r);
	if (rv != 0) {
		svc_fail_call(s, call, what, r->id, rv, NULL);
		return false;
	}
	return !queued || svc_room_for(s, call, r);
}

/* RPC_METHOD_LEADER (always with RPC_METHOD_FIND here: obj the replica). */
static bool leader_hook(void *ctx, struct rpc_call *call, const struct rpc_method *m, void *obj)
{
	return svc_may_serve(ctx, call, m->name, obj, (m->flags & SVC_DATA) != 0);
}

/* ---- the table ------------------------------------------------------------------------ */

#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
/* DELIBERATE BUG (see svc_read): no leader check, followers serve reads. */
#define READ_FLAGS (RPC_METHOD_FIND | SVC_DATA)
#else
#define READ_FLAGS (RPC_METHOD_FIND | RPC_METHOD_LEADER | SVC_DATA)
#endif

/* Method M with the request and response types docraft__<req>_request and
 * docraft__<req>_response. */
#define TABLE_ENTRY(M, name, req, flags, check, handler)                                   \
	{DOCRAFT__METHOD__TSERVER_##M, name, &docraft__##req##_request__descriptor,          \
	 &docraft__##req##_response__descriptor, flags, check, handler}
#define LEADER_DATA (RPC_METHOD_FIND | RPC_METHOD_LEADER | SVC_DATA)

/* The names are op names (svc_op_name): instruction logs use both. */
static const struct rpc_method methods[] = {
	TABLE_ENTRY(WRITE, "write", write, LEADER_DATA, svc_write_check, svc_write),
	TABLE_ENTRY(READ, "read", read, READ_FLAGS, svc_read_check, svc_read),
	TABLE_ENTRY(SCAN, "scan", scan, LEADER_DATA, NULL, svc_scan),
	TABLE_ENTRY(REDIS, "redis", redis, LEADER_DATA, svc_redis_check, svc_redis),
	TABLE_ENTRY(CREATE_TABLET, "create", create_tablet, 0, NULL, svc_create),
	TABLE_ENTRY(DELETE_TABLET, "delete", delete_tablet, 0, NULL, svc_delete),
	TABLE_ENTRY(CHANGE_CONFIG, "change config", change_config, RPC_METHOD_FIND, NULL,
		    svc_change),
	TABLE_ENTRY(STEP_DOWN, "step down", step_down, RPC_METHOD_FIND | RPC_METHOD_LEADER, NULL,
		    svc_step_down),
	TABLE_ENTRY(DUMP_TABLET, "dump", dump_tablet, RPC_METHOD_FIND, NULL, svc_dump),
	TABLE_ENTRY(TABLET_STATUS, "status", tablet_status, 0, NULL, svc_status),
	TABLE_ENTRY(CHECKSUM, "checksum", checksum, RPC_METHOD_FIND, NULL, svc_checksum),
};

static const struct rpc_dispatch_hooks hooks = {
	.find = find_hook,
	.leader = leader_hook,
};

/* ---- the service ---------------------------------------------------------------------- */

/* A heartbeat instruction for method, asking to do what (for the log): the
 * steps of its table entry (the replica it names, the leader check) with
 * no call, failures logged, then its handler. req (NULL: the instruction
 * is empty, ignored) stays the caller's. */
static void run_instruction(struct service *s, uint16_t method, const ProtobufCMessage *req,
			    const char *what)
{
	const struct rpc_method *m = NULL;
	struct replica *r = NULL;
	enum rpc_dispatch_req kept;

	if (req == NULL)
		return;
	LOG_INFO("tablet %s: the master asks to %s", rpc_message_string(req, "tablet_id"), what);
	for (size_t i = 0; i < sizeof methods / sizeof methods[0] && m == NULL; i++)
		if (methods[i].method == method)
			m = &methods[i];
	ASSERT(m != NULL && m->check == NULL && !(m->flags & SVC_DATA));
	if ((m->flags & RPC_METHOD_FIND) && (r = find_replica(s, NULL, m, req)) == NULL)
		return;
	if ((m->flags & RPC_METHOD_LEADER) && !svc_may_serve(s, NULL, m->name, r, false))
		return;
	kept = m->handler(s, NULL, (void *)req, r);
	ASSERT(kept == RPC_DISPATCH_FREE);
	(void)kept;
}

/* The instruction's message is its request (base first: a NULL one stays
 * NULL). */
void service_execute(struct service *s, const Docraft__Instruction *ins)
{
	const Docraft__ChangeConfigRequest *ch = ins->change;
	char what[64];

	if (s->closing || manager_closing(s->m))
		return;
	switch (ins->kind_case) {
	case DOCRAFT__INSTRUCTION__KIND_CREATE:
		run_instruction(s, DOCRAFT__METHOD__TSERVER_CREATE_TABLET,
				(const ProtobufCMessage *)ins->create, "create it");
		break;
	case DOCRAFT__INSTRUCTION__KIND_CHANGE:
		if (ch != NULL)
			snprintf(what, sizeof what, "%s replica %" PRIu64,
				 ch->kind == DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD ? "add"
										     : "remove",
				 ch->peer != NULL ? ch->peer->raft_id : 0);
		run_instruction(s, DOCRAFT__METHOD__TSERVER_CHANGE_CONFIG,
				(const ProtobufCMessage *)ch, what);
		break;
	case DOCRAFT__INSTRUCTION__KIND_DELETE:
		run_instruction(s, DOCRAFT__METHOD__TSERVER_DELETE_TABLET,
				(const ProtobufCMessage *)ins->delete_, "delete it");
		break;
	case DOCRAFT__INSTRUCTION__KIND_STEP_DOWN:
		run_instruction(s, DOCRAFT__METHOD__TSERVER_STEP_DOWN,
				(const ProtobufCMessage *)ins->step_down, "step down");
		break;
	default:
		LOG_WARN("heartbeat: unknown instruction %d ignored", (int)ins->kind_case);
		break;
	}
}

int service_init(struct service *s, uv_loop_t *loop, struct rpc_server *srv, struct manager *m,
		 const struct service_options *o, char *errmsg)
{
	int rv;

	memset(s, 0, sizeof *s);
	s->loop = loop;
	s->srv = srv;
	s->m = m;
	if (o != NULL)
		s->o = *o;
	if (s->o.max_reply_bytes == 0)
		s->o.max_reply_bytes = RPC_FRAME_DEFAULT_MAX - (64u << 10);
	if (s->o.max_pending == 0)
		s->o.max_pending = SERVICE_DEFAULT_MAX_PENDING;
	if (s->o.max_clock_skew_us == 0)
		s->o.max_clock_skew_us = SERVICE_DEFAULT_MAX_CLOCK_SKEW_US;
	if ((rv = rpc_dispatch_register(&s->dispatch, srv, methods,
					sizeof methods / sizeof methods[0], s, &hooks, errmsg)) != 0)
		return rv;
	uv_timer_init(loop, &s->sweep);
	s->sweep.data = s;
	uv_timer_start(&s->sweep, sweep_cb, SWEEP_MS, SWEEP_MS);
	uv_timer_init(loop, &s->checksum_timer);
	s->checksum_timer.data = s;
	return 0;
}

static void handle_closed(uv_handle_t *h)
{
	struct service *s = h->data;
	if (--s->handles_open == 0)
		s->close_cb(s);
}

void service_close(struct service *s, service_close_cb cb)
{
	PRE(!s->closing && cb != NULL);
	s->closing = true;
	s->close_cb = cb;
	if (s->ops != NULL)
		LOG_WARN("service closing with requests still waiting for a tablet");
	while (s->ops != NULL)
		svc_op_free(s->ops); /* answers UNAVAILABLE */
	s->handles_open = 2;
	uv_close((uv_handle_t *)&s->sweep, handle_closed);
	uv_close((uv_handle_t *)&s->checksum_timer, handle_closed);
}
