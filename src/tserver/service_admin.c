/* The tablet server's administrative methods: TSERVER_CREATE_TABLET,
 * TSERVER_DELETE_TABLET, TSERVER_CHANGE_CONFIG, TSERVER_STEP_DOWN and
 * TSERVER_TABLET_STATUS (service.h has the contract, service.c the common
 * design).
 *
 * CREATE_TABLET is idempotent (manager_create) and answered once the
 * replica is open (a request for a replica being created gets UNAVAILABLE,
 * retryable); DELETE of an unknown tablet is TABLET_NOT_FOUND;
 * CHANGE_CONFIG ADD promotes the new replica to voter once it caught up
 * (tablet_add_replica), one change at a time (SERVICE_BUSY otherwise);
 * STEP_DOWN first commits a Raft barrier (so that the voter raft_transfer
 * picks is one that just answered), then answers OK once this replica no
 * longer leads, UNAVAILABLE if the transfer did not happen. TABLET_STATUS
 * is served by any replica.
 *
 * Heartbeat instructions (create, delete, change, step down) run through
 * these same handlers with no call (service_execute): their outcome is
 * logged. None of them keeps its request: what an op needs later is copied
 * into it, and a step-down finds its replica again by id once the transfer
 * has ended. */
#include "common/err.h"
#include "tserver/service_internal.h"

static void create_done(void *arg, int status)
{
	Docraft__CreateTabletResponse resp = DOCRAFT__CREATE_TABLET_RESPONSE__INIT;
	svc_op_end(arg, status,
		   status == DOCRAFT_ETABLETNOTFOUND
			   ? "the replica was deleted while being created"
			   : "the replica could not be created (see the tserver log)",
		   &resp.base);
}

/* Answered once the replica is open (manager_create works off the loop). */
enum rpc_dispatch_req svc_create(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__CreateTabletRequest *rq = req;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	int rv;

	(void)obj;
	if (s->closing) {
		svc_fail_call(s, call, "create", rq->tablet_id, DOCRAFT_ECLOSED, "shutting down");
		return RPC_DISPATCH_FREE;
	}
	op = svc_op_new(s, OP_CREATE, call, rq->tablet_id);
	if ((rv = manager_create(s->m, rq, create_done, op, errmsg)) != 0)
		svc_op_end(op, rv, errmsg, NULL);
	return RPC_DISPATCH_FREE;
}

static void delete_done(void *arg, int status)
{
	Docraft__DeleteTabletResponse resp = DOCRAFT__DELETE_TABLET_RESPONSE__INIT;
	svc_op_end(arg, status, "the replica was closed but its files could not be removed",
		   &resp.base);
}

enum rpc_dispatch_req svc_delete(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__DeleteTabletRequest *rq = req;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op = svc_op_new(s, OP_DELETE, call, rq->tablet_id);
	int rv = manager_delete(s->m, rq->tablet_id, delete_done, op, errmsg);

	(void)obj;
	if (rv != 0) {
		if (rv == DOCRAFT_ETABLETNOTFOUND && op->instruction)
			op->instruction = false; /* already gone: nothing to log */
		svc_op_end(op, rv, errmsg, NULL);
	}
	return RPC_DISPATCH_FREE;
}

static void change_done(void *arg, int status)
{
	Docraft__ChangeConfigResponse resp = DOCRAFT__CHANGE_CONFIG_RESPONSE__INIT;
	svc_op_end(arg, status, NULL, &resp.base);
}

enum rpc_dispatch_req svc_change(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__ChangeConfigRequest *rq = req;
	const Docraft__Peer *p = rq->peer;
	struct replica *r = obj;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	struct sockaddr_in sa;
	int rv;

	if (p == NULL || p->raft_id == 0) {
		svc_fail_call(s, call, "change config", r->id, DOCRAFT_EINVAL,
			      "the peer needs a raft id");
		return RPC_DISPATCH_FREE;
	}
	if (rq->kind == DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD &&
	    listener_parse_address(p->address, &sa, errmsg) != 0) {
		svc_fail_call(s, call, "change config", r->id, DOCRAFT_EINVAL, errmsg);
		return RPC_DISPATCH_FREE;
	}
	op = svc_op_new(s, OP_CHANGE, call, r->id);
	switch (rq->kind) {
	case DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD:
		rv = tablet_add_replica(r->t, p->raft_id, p->address, change_done, op, errmsg);
		break;
	case DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__REMOVE:
		rv = tablet_remove_replica(r->t, p->raft_id, change_done, op, errmsg);
		break;
	default:
		rv = err_set(errmsg, DOCRAFT_EINVAL, "unknown change kind %d", (int)rq->kind);
		break;
	}
	/* ENOTLEADER: svc_reply_error adds the hint; a busy one: retry. */
	if (rv != 0)
		svc_op_end(op, rv, rv == DOCRAFT_ENOTLEADER ? NULL : errmsg, NULL);
	return RPC_DISPATCH_FREE;
}

static void step_down_done(void *arg, int status)
{
	struct svc_op *op = arg;
	struct replica *r = manager_find(op->s->m, op->tablet_id);
	Docraft__StepDownResponse resp = DOCRAFT__STEP_DOWN_RESPONSE__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *msg = NULL; /* status != 0: the hint or the code's name */

	if (status == 0 && r != NULL && r->state == REPLICA_OPEN && r->t != NULL &&
	    tablet_leader(r->t, NULL) == op->raft_id) {
		status = err_set(errmsg, DOCRAFT_EUNAVAILABLE,
				 "tablet %s: the leadership transfer did not complete",
				 op->tablet_id);
		msg = errmsg;
	}
	svc_op_end(op, status, msg, &resp.base);
}

void svc_transfer_now(struct svc_op *op)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = op->r;
	int rv;
	op->r = NULL; /* step_down_done finds the replica again by id */
	rv = tablet_transfer(r->t, op->to_raft_id, step_down_done, op, errmsg);
	if (rv != 0)
		svc_op_end(op, rv, rv == DOCRAFT_ENOTLEADER ? NULL : errmsg, NULL);
}

/* A Raft barrier first (svc_start_read): once it has committed, the voters
 * that are up to date, which raft_transfer(0) prefers, just acknowledged
 * it, so the target chosen is alive (see tserver_main.c, drain). */
enum rpc_dispatch_req svc_step_down(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	const Docraft__StepDownRequest *rq = req;
	struct replica *r = obj;
	struct svc_op *op;

	if (rq->to_raft_id != 0 && rq->to_raft_id == r->raft_id) {
		/* Handing over to the leader itself (the caller's view of the
		 * leader was stale): done, as asked. */
		Docraft__StepDownResponse resp = DOCRAFT__STEP_DOWN_RESPONSE__INIT;
		rpc_reply_message(call, &resp.base);
		return RPC_DISPATCH_FREE;
	}
	op = svc_op_new(ctx, OP_STEP_DOWN, call, r->id);
	op->raft_id = r->raft_id;
	op->to_raft_id = rq->to_raft_id;
	op->r = r;
	svc_start_read(op);
	return RPC_DISPATCH_FREE;
}

/* Any replica, or every one (tablet_id empty). */
enum rpc_dispatch_req svc_status(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__TabletStatusRequest *rq = req;
	Docraft__TabletStatusResponse resp = DOCRAFT__TABLET_STATUS_RESPONSE__INIT;
	Docraft__TabletReport rep, *one = &rep;
	struct arena a = ARENA_INIT;

	(void)obj;
	if (rq->tablet_id[0] == '\0') {
		resp.n_tablets = manager_reports(s->m, &a, &resp.tablets);
	} else {
		struct replica *r = manager_find(s->m, rq->tablet_id);
		if (r == NULL) {
			rpc_reply_errorf(call, DOCRAFT_ETABLETNOTFOUND,
					 "tablet %s is not hosted here", rq->tablet_id);
			goto out;
		}
		manager_report(r, &rep, &a);
		resp.n_tablets = 1;
		resp.tablets = &one;
	}
	rpc_reply_message(call, &resp.base);
out:
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}
