/* The tablet server's paged methods: TSERVER_DUMP_TABLET and
 * TSERVER_CHECKSUM, served by any replica (service.h has the contract,
 * service.c the common design). Their work is done one page per loop turn
 * by s->checksum_timer (checksum_tick), so that a large tablet never holds
 * the loop thread past the election timeout; at most
 * SERVICE_MAX_PAGED_OPS of them are served at once (beyond: SERVICE_BUSY).
 *
 * Checksums (docs/cluster.md "Replica checksums"): read_ht 0 means this
 * replica's store applied hybrid time (the last write it applied; nothing
 * applied yet: an empty answer at read_ht 0); read_ht T > 0 first waits
 * until the store has applied up to T, polled by checksum_timer every
 * SERVICE_CHECKSUM_POLL_MS without blocking the loop, bounded by wait_ms
 * (then TIMED_OUT "replica applied ht X behind T"). Then docdb/checksum.h
 * hashes the rows visible at that time, one page per loop turn.
 *
 * Dumps format SERVICE_DUMP_PAGE_PAIRS stored pairs per turn, up to
 * max_reply_bytes (beyond: TOO_BIG).
 *
 * Between pages the replica is found again by id at every tick, and a
 * replica that was deleted, failed, or had a copy installed meanwhile ends
 * the op (paged_store). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/hlc.h"
#include "docdb/dump.h"
#include "docdb/key.h"
#include "tserver/service_internal.h"

/* Why r's store cannot be read now (NULL: it can). */
static const char *unreadable(struct replica *r)
{
	struct tablet_status st;
	if (r->state != REPLICA_OPEN || r->t == NULL)
		return "failed";
	tablet_get_status(r->t, &st);
	if (st.role == TABLET_FAILED || st.role == TABLET_CLOSED || st.role == TABLET_COPYING)
		return manager_role_name(st.role);
	if (tablet_store(r->t) == NULL)
		return "without a store";
	return NULL;
}

static void checksum_tick(uv_timer_t *h);

static void checksum_arm(struct service *s, uint64_t delay_ms)
{
	if (!s->closing)
		uv_timer_start(&s->checksum_timer, checksum_tick, delay_ms, 0);
}

/* For the next page of a checksum or dump op: the store of its replica, the
 * same it started on, or NULL once the op is answered and freed (answered
 * already, replica deleted, failed, reopened or copied). */
static struct store *paged_store(struct svc_op *op, struct replica **rp)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r;
	struct store *st = NULL;
	const char *why;
	int rv = 0;

	if (op->call == NULL) { /* answered already (deadline, abandoned) */
		svc_op_free(op);
		return NULL;
	}
	r = manager_find(op->s->m, op->tablet_id);
	if (r == NULL)
		rv = err_set(errmsg, DOCRAFT_ETABLETNOTFOUND, "tablet %s was deleted",
			     op->tablet_id);
	else if ((why = unreadable(r)) != NULL)
		rv = err_set(errmsg, DOCRAFT_EUNAVAILABLE, "tablet %s is %s", op->tablet_id, why);
	else if (r->t != op->ck_tablet || (st = tablet_store(r->t)) != op->ck_store)
		rv = err_set(errmsg, DOCRAFT_EUNAVAILABLE, "tablet %s: the replica changed under "
			     "the %s (reopened or copied): retry", op->tablet_id,
			     svc_op_name(op->kind));
	if (rv != 0) {
		svc_op_end(op, rv, errmsg, NULL);
		return NULL;
	}
	*rp = r;
	return st;
}

/* One page of a dump op: SERVICE_DUMP_PAGE_PAIRS stored pairs after
 * dump_key, or the answer (the op is then freed). A fresh iterator per
 * page: nothing pins the store between loop turns, so pages may see
 * writes made meanwhile (a dump is a debugging view, not a snapshot). */
static void dump_op_step(struct svc_op *op, bool *computing)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const uint8_t lo = KT_GROUP_END; /* internal records skipped, as dump_store does */
	struct dump_opts o;
	struct replica *r;
	struct store *st;
	struct store_iter *it;
	size_t max = op->s->o.max_reply_bytes;
	unsigned n;
	int rv;

	if ((st = paged_store(op, &r)) == NULL)
		return;
	memset(&o, 0, sizeof o);
	o.schema = &r->schema;
	o.redis = r->schema.redis; /* issue 17: a YEDIS table in the seed's notation */
	it = store_iter_new(st, &lo, 1, NULL, 0);
	if (op->dump_key.len == 0) {
		store_iter_seek_first(it);
	} else {
		size_t kl;
		const uint8_t *k;
		store_iter_seek(it, op->dump_key.data, op->dump_key.len);
		if (store_iter_valid(it) && (k = store_iter_key(it, &kl)) != NULL &&
		    kl == op->dump_key.len && memcmp(k, op->dump_key.data, kl) == 0)
			store_iter_next(it);
	}
	for (n = 0; store_iter_valid(it) && n < SERVICE_DUMP_PAGE_PAIRS; n++) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		dump_pair(k, kl, v, vl, &o, &op->text);
		buf_reset(&op->dump_key);
		buf_append(&op->dump_key, k, kl);
		store_iter_next(it);
	}
	rv = store_iter_status(it, errmsg);
	if (rv == 0 && store_iter_valid(it))
		*computing = true;
	store_iter_free(it);
	if (rv != 0) {
		svc_op_fail(op, rv, errmsg);
	} else if (op->text.len > max) {
		snprintf(errmsg, sizeof errmsg, "tablet %s: its dump exceeds the largest reply "
			 "(%zu bytes)", op->tablet_id, max);
		svc_op_fail(op, DOCRAFT_ETOOBIG, errmsg);
	} else if (*computing) {
		return;
	} else {
		Docraft__DumpTabletResponse resp = DOCRAFT__DUMP_TABLET_RESPONSE__INIT;
		resp.text = (char *)buf_cstr(&op->text);
		svc_op_ok(op, &resp.base);
	}
	svc_op_free(op);
}

static void checksum_reply(struct svc_op *op, uint64_t sum, uint64_t rows, uint64_t read_ht,
			   uint64_t applied_index)
{
	Docraft__ChecksumResponse resp = DOCRAFT__CHECKSUM_RESPONSE__INIT;
	resp.checksum = sum;
	resp.rows = rows;
	resp.read_ht = read_ht;
	resp.applied_index = applied_index;
	svc_op_ok(op, &resp.base);
}

/* One step of a checksum op: wait, or hash one page, or answer (the op is
 * then freed). *computing / *waiting: the op needs another tick soon / at
 * the next poll. */
static void checksum_op_step(struct svc_op *op, uint64_t now, bool *computing, bool *waiting)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r;
	struct store *st;
	uint64_t index, applied;
	int rv;

	if ((st = paged_store(op, &r)) == NULL)
		return;
	store_applied(st, &index, &applied);
	if (!op->ck_on) {
		uint64_t at = op->ck_want;
		if (at == 0 && applied == 0) { /* nothing applied: nothing to read */
			checksum_reply(op, CHECKSUM_FNV_OFFSET, 0, 0, index);
			svc_op_free(op);
			return;
		}
		if (at == 0) {
			at = applied;
		} else if (applied < at) {
			if (now < op->ck_until) {
				*waiting = true;
				return;
			}
			svc_op_end(op, err_set(errmsg, DOCRAFT_ETIMEDOUT, "tablet %s: replica "
					       "applied ht %" PRIu64 " behind %" PRIu64 " after %"
					       PRIu64 " ms", op->tablet_id, applied, at,
					       now - op->started),
				   errmsg, NULL);
			return;
		}
		checksum_init(&op->ck, at);
		op->ck_on = true;
	}
	if ((rv = checksum_step(&op->ck, st, &r->schema, CHECKSUM_PAGE_ROWS, errmsg)) != 0) {
		svc_op_end(op, rv, errmsg, NULL);
		return;
	}
	if (!op->ck.done) {
		*computing = true;
		return;
	}
	checksum_reply(op, op->ck.hash, op->ck.rows, op->ck.read_ht, index);
	svc_op_free(op);
}

static void checksum_tick(uv_timer_t *h)
{
	struct service *s = h->data;
	uint64_t now = uv_now(s->loop);
	bool computing = false, waiting = false;
	struct svc_op *op, *next;

	if (s->closing)
		return;
	for (op = s->ops; op != NULL; op = next) {
		next = op->next;
		if (op->kind == OP_CHECKSUM)
			checksum_op_step(op, now, &computing, &waiting);
		else if (op->kind == OP_DUMP)
			dump_op_step(op, &computing);
	}
	/* Not 0: libuv 1.44 runs a timer re-armed with 0 from its own
	 * callback again in the same pass (the loop time has not moved), so
	 * every page would run in one loop turn. 1 ms lets the loop poll. */
	if (computing)
		checksum_arm(s, 1);
	else if (waiting)
		checksum_arm(s, SERVICE_CHECKSUM_POLL_MS);
}

/* Whether another paged op may start; else answers call SERVICE_BUSY. */
static bool room_for_paged(struct service *s, struct rpc_call *call)
{
	if (s->n_paged < SERVICE_MAX_PAGED_OPS)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EBUSY, "tserver busy: %u checksums and dumps being served",
			 s->n_paged);
	return false;
}

/* A paged op of kind on r, started at the next tick. */
static struct svc_op *paged_start(struct service *s, struct rpc_call *call, enum op_kind kind,
				  struct replica *r)
{
	struct svc_op *op = svc_op_new(s, kind, call, r->id);
	s->n_paged++;
	op->ck_tablet = r->t;
	op->ck_store = tablet_store(r->t);
	checksum_arm(s, 0);
	return op;
}

enum rpc_dispatch_req svc_checksum(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__ChecksumRequest *rq = req;
	struct replica *r = obj;
	struct svc_op *op;
	const char *why;
	uint64_t cutoff;
	uint32_t wait_ms;

	if ((why = unreadable(r)) != NULL) {
		rpc_reply_errorf(call, DOCRAFT_EUNAVAILABLE, "tablet %s is %s", r->id, why);
		return RPC_DISPATCH_FREE;
	}
	if (rq->read_ht >= HT_INVALID) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "invalid read time %" PRIu64, rq->read_ht);
		return RPC_DISPATCH_FREE;
	}
	cutoff = store_history_cutoff(tablet_store(r->t));
	if (rq->read_ht != 0 && rq->read_ht < cutoff) {
		rpc_reply_errorf(call, DOCRAFT_ETOOOLD, "tablet %s: read time %" PRIu64
				 " is below the history cutoff %" PRIu64, r->id, rq->read_ht,
				 cutoff);
		return RPC_DISPATCH_FREE;
	}
	if (!room_for_paged(s, call))
		return RPC_DISPATCH_FREE;
	wait_ms = rq->wait_ms == 0 ? SERVICE_CHECKSUM_WAIT_MS
		: rq->wait_ms > SERVICE_CHECKSUM_WAIT_MAX_MS ? SERVICE_CHECKSUM_WAIT_MAX_MS
		: rq->wait_ms;
	op = paged_start(s, call, OP_CHECKSUM, r);
	op->ck_want = rq->read_ht;
	op->ck_until = op->started + wait_ms;
	return RPC_DISPATCH_FREE;
}

enum rpc_dispatch_req svc_dump(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	struct replica *r = obj;
	struct tablet_status st;

	(void)req;
	tablet_get_status(r->t, &st);
	if (st.role == TABLET_FAILED || st.role == TABLET_CLOSED || st.role == TABLET_COPYING ||
	    tablet_store(r->t) == NULL) {
		rpc_reply_errorf(call, DOCRAFT_EUNAVAILABLE, "tablet %s is %s", r->id,
				 manager_role_name(st.role));
		return RPC_DISPATCH_FREE;
	}
	if (room_for_paged(s, call))
		paged_start(s, call, OP_DUMP, r);
	return RPC_DISPATCH_FREE;
}
