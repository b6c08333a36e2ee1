/* The tablet server's data methods: TSERVER_WRITE, TSERVER_READ and
 * TSERVER_SCAN (service.h has the contract, service.c the common design:
 * the table's steps have found the replica, checked the request's table,
 * and, before these handlers run, that the replica leads and has room).
 *
 * Writes. WriteRequest.schema_version must equal the tablet's schema
 * version (INVALID_ARGUMENT naming both otherwise: the client refreshes the
 * schema); client_id must be 16 bytes (it keys the retry table: a retry with
 * the same id and seq applies once). The ops become one DocDB batch
 * (wire_apply_ops: any bad op fails the whole request, nothing is applied)
 * with the replica's list counter, then one tablet_write. Conditions
 * (WriteRequest.conditions) become a condition blob checked against the
 * schema (wire_conditions) that goes with the batch: the tablet evaluates
 * it where the entry applies; a false one is answered CONDITION ("condition
 * not met"). The answer carries
 * the hybrid time the write applied at. More than max_pending requests
 * (writes, reads and scans) queued on one tablet: SERVICE_BUSY.
 *
 * Reads and scans always start with tablet_read, which proves leadership
 * (under the leader lease, or with a barrier) and waits until everything
 * committed is applied, and yields the leader's safe time S; a read served
 * under the lease is answered only if tablet_read_confirm still holds after
 * reading, else it is read again after a barrier. read_ht 0 reads at S (linearizable). An explicit read_ht
 * T <= S reads at T (a point-in-time read; below the history cutoff or
 * older than the retention: SNAPSHOT_TOO_OLD). A read at an explicit time
 * and every scan page hold their time against compaction
 * (store_hold_history: READ_HOLD_MS, SCAN_HOLD_MS for the next page), so a
 * paged scan keeps its history while its pages keep coming. T > S cannot be served yet (a write could still land
 * at or below T): if T is at most max_clock_skew_us ahead (another
 * server's clock may be that far ahead), the op waits by issuing tablet_read
 * again until S reaches T (bounded by READ_WAIT_MAX_MS, then TIMED_OUT);
 * further ahead is CLOCK_SKEW: the time is refused, never adopted into
 * this server's clock. The answer names the time read at; a
 * scan's paging state resumes at the same time when the next page sends
 * that time back as read_ht.
 *
 * Partitions: every key of a write (ops and conditions), a read's key and a
 * scan's hash key must hash (key_hash_components) into the replica's
 * partition [part_start, part_end); else the whole request is answered
 * WRONG_TABLET before anything is queued, so nothing of it applies. A scan
 * of the whole tablet returns only rows inside the partition (rows stored
 * outside it before tablets knew their partitions are skipped).
 *
 * Read restart (YugabyteDB's, for scans that walk several tablets at one
 * read time T chosen by the first tablet's leader): a page that carries
 * restart_limit checks the uncertainty window (T, L], L = min(T + max skew,
 * restart_limit, S). A write this tablet applied in that window may have
 * been acknowledged before the scan started on a server whose clock is
 * behind this one's, so reading at T could miss it. The check is
 * conservative (the store's last applied write time above T and a
 * non-empty window): instead of rows the answer is restart_ht = L and
 * local_limit = L; the client restarts the scan at L and sends L as this
 * tablet's restart_limit from then on, which makes its window empty: each
 * tablet restarts a scan at most once.
 *
 * Scans: limit 0 means SERVICE_SCAN_DEFAULT_LIMIT, larger than
 * SERVICE_SCAN_MAX_LIMIT is lowered to it; a page whose rows would not fit
 * in max_reply_bytes is read again with fewer rows (its paging state then
 * resumes after the last row sent). A scan without a hash key covers the
 * whole tablet and takes no range conditions. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "rpc/wire.h"
#include "tablet/diskspace.h"
#include "tserver/service_internal.h"

#define READ_WAIT_MAX_MS 2000
/* How long a read at a time holds that history against compaction; for a
 * scan, how long its next page may take to come (store_hold_history). */
#define READ_HOLD_MS 10000
#define SCAN_HOLD_MS 60000
/* Bytes a row costs in a ScanResponse beyond its own encoding (tag and
 * length), rounded up. */
#define ROW_OVERHEAD 16

/* ---- keys and partitions ---------------------------------------------------------- */

/* A datum given and not NULL. */
static bool datum_set(const Docraft__Datum *d)
{
	return d != NULL && d->v_case != DOCRAFT__DATUM__V__NOT_SET &&
	       d->v_case != DOCRAFT__DATUM__V_NULL;
}

/* Converts n key datums for columns first.. of s into out (no NULLs). */
static int decode_keys(const struct schema *s, size_t first, Docraft__Datum **d, size_t n,
		       struct pv *out, char *errmsg)
{
	for (size_t i = 0; i < n; i++) {
		const struct column *c = &s->cols[first + i];
		char what[SCHEMA_MAX_NAME + 32];
		int rv;
		snprintf(what, sizeof what, "key column '%s'", c->name);
		if (!datum_set(d[i]))
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: no value", what);
		if ((rv = wire_datum_to_pv(d[i], c->type, what, &out[i], errmsg)) != 0)
			return rv;
		if ((rv = schema_check_value(c->type, &out[i], false, what, errmsg)) != 0)
			return rv;
	}
	return 0;
}

/* WRONG_TABLET unless hash is inside r's partition. */
static int check_partition(const struct replica *r, uint16_t hash, char *errmsg)
{
	if (hash >= r->part_start && hash < r->part_end)
		return 0;
	return err_set(errmsg, DOCRAFT_EWRONGTABLET,
		       "tablet %s: key hash 0x%04x is outside its partition [0x%04x, 0x%04x): "
		       "refresh the table's locations", r->id, hash, r->part_start, r->part_end);
}

/* check_partition for a key given as datums (at least the hash columns,
 * already validated by the caller's decoding). */
static int check_key_partition(const struct replica *r, Docraft__Datum **key, size_t n,
			       struct arena *a, char *errmsg)
{
	size_t nh = r->schema.n_hash;
	struct pv *pv = arena_alloc(a, (nh + 1) * sizeof *pv);
	int rv;
	if (n < nh)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: a key without its hash columns",
			       r->id);
	if ((rv = decode_keys(&r->schema, 0, key, nh, pv, errmsg)) != 0)
		return rv;
	return check_partition(r, key_hash_components(pv, nh), errmsg);
}

/* Every key of a write request (ops and conditions) inside r's partition. */
static int check_write_partition(const struct replica *r, const Docraft__WriteRequest *req,
				 struct arena *a, char *errmsg)
{
	int rv = 0;
	for (size_t i = 0; i < req->n_ops && rv == 0; i++)
		rv = check_key_partition(r, req->ops[i]->key, req->ops[i]->n_key, a, errmsg);
	for (size_t i = 0; i < req->n_conditions && rv == 0; i++)
		rv = check_key_partition(r, req->conditions[i]->key, req->conditions[i]->n_key,
					 a, errmsg);
	return rv;
}

/* ---- writes ------------------------------------------------------------------------ */

static void write_done(struct tablet_write *w, int status, uint64_t ht)
{
	struct svc_op *op = w->data;
	Docraft__WriteResponse resp = DOCRAFT__WRITE_RESPONSE__INIT;
	op->r->pending--;
	resp.ht = ht;
	svc_op_end(op, status,
		   status == DOCRAFT_ECONDITION ? "condition not met"
		   : status == DOCRAFT_ETOOOLD
		   ? "retry window expired: the tablet no longer knows whether this request "
		     "applied (--retry-record-ttl-s); not applied again"
		   : NULL,
		   &resp.base);
}

/* Issue 17: a Redis tablet (schema.redis) holds YEDIS documents that only
 * the YEDIS engine reads and writes (TSERVER_REDIS); WRITE, READ and SCAN
 * are refused with STATUS_INVALID, whatever the client. */
static bool refuse_redis(struct rpc_call *call, const struct replica *r)
{
	if (!r->schema.redis)
		return false;
	rpc_reply_errorf(call, DOCRAFT_EINVAL,
			 "tablet %s: table %s is a Redis database: use a Redis client", r->id,
			 r->schema.table);
	return true;
}

bool svc_write_check(void *ctx, struct rpc_call *call, const void *req, void *obj)
{
	const Docraft__WriteRequest *rq = req;
	const struct replica *r = obj;
	(void)ctx;
	if (refuse_redis(call, r))
		return false;
	if (rq->schema_version != r->schema.version) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: schema version %u does not "
				 "match the table's version %u: refresh the schema", r->id,
				 rq->schema_version, r->schema.version);
		return false;
	}
	if (rq->client_id.len != ENTRY_CLIENT_ID_LEN) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "client_id must be %d bytes, got %zu",
				 ENTRY_CLIENT_ID_LEN, rq->client_id.len);
		return false;
	}
	if (rq->n_ops == 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: a write needs operations",
				 r->id);
		return false;
	}
	return true;
}

enum rpc_dispatch_req svc_write(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	const Docraft__WriteRequest *rq = req;
	struct replica *r = obj;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	struct docwrite dw;
	struct arena a = ARENA_INIT;
	int rv;

	if ((rv = diskspace_admit(s->o.disk, errmsg)) != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	op = svc_op_new(s, OP_WRITE, call, r->id);
	op->r = r;
	docwrite_init(&dw, &r->schema, &op->batch, manager_list_counter(r));
	rv = wire_apply_ops(&dw, rq, &a, errmsg);
	docwrite_free(&dw);
	if (rv == 0)
		rv = wire_conditions(&r->schema, rq, &op->cond, &a, errmsg);
	if (rv == 0)
		rv = check_write_partition(r, rq, &a, errmsg);
	arena_free(&a);
	if (rv != 0) {
		svc_op_end(op, rv, errmsg, NULL);
		return RPC_DISPATCH_FREE;
	}
	op->w.batch = op->batch.data.data;
	op->w.batch_len = op->batch.data.len;
	op->w.cond = op->cond.len > 0 ? op->cond.data : NULL;
	op->w.cond_len = op->cond.len;
	svc_write_submit(op, rq->client_id.data, rq->seq, rq->min_running, write_done);
	return RPC_DISPATCH_FREE;
}

void svc_write_submit(struct svc_op *op, const uint8_t *client_id, uint64_t seq,
		      uint64_t min_running, tablet_write_cb cb)
{
	int rv;
	memcpy(op->w.client_id, client_id, ENTRY_CLIENT_ID_LEN);
	op->w.seq = seq;
	op->w.min_running = min_running;
	op->w.cb = cb;
	op->w.data = op;
	if ((rv = tablet_write(op->r->t, &op->w)) != 0) {
		svc_op_end(op, rv, rv == DOCRAFT_ETOOBIG ? "larger than a Raft entry may be" : NULL,
			   NULL);
		return;
	}
	op->r->pending++;
}

/* ---- reads and scans --------------------------------------------------------------- */

static void read_done(struct tablet_read *rd, int status, uint64_t safe_ht);

void svc_start_read(struct svc_op *op)
{
	int rv;
	op->rd.data = op;
	op->rd.cb = read_done;
	op->rd.barrier = op->rd.barrier || op->kind == OP_STEP_DOWN;
	if ((rv = tablet_read(op->r->t, &op->rd)) != 0) {
		svc_op_end(op, rv, NULL, NULL);
		return;
	}
	op->r->pending++;
}

/* The end of do_read and do_scan: false if the lease that served the read
 * ran out while reading (tablet_read_confirm): nothing is answered, the op
 * reads again. Else answers op: the error rv (errmsg), or ok. */
static bool confirm_answer(struct svc_op *op, int rv, const char *errmsg,
			   const ProtobufCMessage *ok)
{
	if (!tablet_read_confirm(op->r->t, &op->rd))
		return false;
	if (rv != 0)
		svc_op_fail(op, rv, errmsg);
	else
		svc_op_ok(op, ok);
	return true;
}

/* do_read and do_scan: confirm_answer's result. */
static bool do_read(struct svc_op *op, uint64_t at)
{
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	Docraft__Row row_pb;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct arena a = ARENA_INIT;
	struct replica *r = op->r;
	struct row row;
	bool found = false, answered;
	int rv;

	rv = reader_get_row(tablet_store(r->t), &r->schema, op->key, op->nkey, at, &a, &row, &found,
			    errmsg);
	resp.found = found;
	resp.read_ht = at;
	if (rv == 0 && found) {
		wire_row_to_pb(&row, &row_pb, &a);
		resp.row = &row_pb;
	}
	answered = confirm_answer(op, rv, errmsg, &resp.base);
	arena_free(&a);
	return answered;
}

/* Drops the rows whose hash is outside r's partition (written before
 * tablets knew their partitions); returns how many are left. */
static size_t keep_own_rows(const struct replica *r, struct row *rows, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t h = key_hash_components(rows[i].key, r->schema.n_hash);
		if (h >= r->part_start && h < r->part_end)
			rows[k++] = rows[i];
	}
	return k;
}

static bool do_scan(struct svc_op *op, uint64_t at)
{
	Docraft__ScanResponse resp = DOCRAFT__SCAN_RESPONSE__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = op->r;
	const struct service *s = op->s;
	struct arena a = ARENA_INIT;
	struct buf paging = BUF_INIT;
	struct scan_spec spec;
	Docraft__Row **rows_pb = NULL;
	struct row *rows;
	size_t n = 0;
	bool answered;
	int rv;

	memset(&spec, 0, sizeof spec);
	spec.read_ht = at;
	spec.hash_key = op->nkey > 0 ? op->key : NULL;
	spec.n_hash = op->nkey;
	spec.range_eq = op->neq > 0 ? op->eq : NULL;
	spec.n_eq = op->neq;
	spec.lower = op->has_lower ? &op->lower : NULL;
	spec.lower_incl = op->scan->lower_incl;
	spec.upper = op->has_upper ? &op->upper : NULL;
	spec.upper_incl = op->scan->upper_incl;
	spec.reverse = op->scan->reverse;
	spec.limit = op->limit;
	spec.paging = op->scan->paging.len > 0 ? op->scan->paging.data : NULL;
	spec.paging_len = op->scan->paging.len;
	for (int attempt = 0;; attempt++) {
		size_t total = 0, fit;
		arena_reset(&a);
		buf_reset(&paging);
		rv = reader_scan(tablet_store(r->t), &r->schema, &spec, &a, &rows, &n, &paging,
				 errmsg);
		if (rv != 0)
			break;
		if (op->nkey == 0)
			n = keep_own_rows(r, rows, n);
		rows_pb = arena_alloc(&a, (n + 1) * sizeof *rows_pb);
		fit = n;
		for (size_t i = 0; i < n; i++) {
			Docraft__Row *pb = arena_alloc(&a, sizeof *pb);
			wire_row_to_pb(&rows[i], pb, &a);
			rows_pb[i] = pb;
			total += protobuf_c_message_get_packed_size(&pb->base) + ROW_OVERHEAD;
			if (total > s->o.max_reply_bytes && fit == n)
				fit = i > 0 ? i : 1;
		}
		if (fit >= n || attempt > 0)
			break;
		/* Too much for one reply: read again with fewer rows, so that
		 * the paging state resumes after the last row sent. */
		spec.limit = fit;
	}
	resp.n_rows = n;
	resp.rows = rows_pb;
	resp.paging.data = paging.data;
	resp.paging.len = paging.len;
	resp.read_ht = at;
	answered = confirm_answer(op, rv, errmsg, &resp.base);
	buf_free(&paging);
	arena_free(&a);
	return answered;
}

/* Read restart (see the top of this file): true once op was answered with
 * a restart instead of rows. */
static bool restart_scan(struct svc_op *op, uint64_t want, uint64_t safe_ht)
{
	Docraft__ScanResponse resp = DOCRAFT__SCAN_RESPONSE__INIT;
	uint64_t limit = ht_add_micros(want, op->s->o.max_clock_skew_us);
	uint64_t applied_index, applied_ht;

	if (op->scan->restart_limit < limit)
		limit = op->scan->restart_limit;
	if (safe_ht < limit)
		limit = safe_ht;
	store_applied(tablet_store(op->r->t), &applied_index, &applied_ht);
	if (limit <= want || applied_ht <= want)
		return false;
	LOG_DEBUG("tablet %s: scan at %" PRIu64 " restarts at %" PRIu64 " (write applied at %"
		  PRIu64 ")", op->tablet_id, want, limit, applied_ht);
	resp.read_ht = want;
	resp.restart_ht = limit;
	resp.local_limit = limit;
	svc_op_ok(op, &resp.base);
	return true;
}

static void read_done(struct tablet_read *rd, int status, uint64_t safe_ht)
{
	struct svc_op *op = rd->data;
	uint64_t want, at = safe_ht;
	char msg[DOCRAFT_ERRMSG_SIZE];

	op->r->pending--;
	if (status != 0) {
		op->r = NULL;
		svc_op_end(op, status, NULL, NULL);
		return;
	}
	if (op->kind == OP_STEP_DOWN) {
		svc_transfer_now(op);
		return;
	}
	if (op->call == NULL) { /* answered already (deadline, abandoned) */
		svc_op_free(op);
		return;
	}
	want = op->kind == OP_READ ? op->read->read_ht : op->scan->read_ht;
	if (want != 0 && want > safe_ht) {
		uint64_t skew = op->s->o.max_clock_skew_us;
		if (ht_physical(want) - ht_physical(safe_ht) > skew) {
			snprintf(msg, sizeof msg,
				 "tablet %s: read time %" PRIu64 " is ahead of the leader's safe "
				 "time %" PRIu64 " by more than the maximum clock skew (%" PRIu64
				 " us): refused",
				 op->tablet_id, want, safe_ht, skew);
			LOG_WARN("%s", msg);
			svc_op_end(op, DOCRAFT_ECLOCKSKEW, msg, NULL);
			return;
		}
		if (uv_now(op->s->loop) - op->started > READ_WAIT_MAX_MS) {
			snprintf(msg, sizeof msg,
				 "tablet %s: the safe time did not reach the read time %" PRIu64,
				 op->tablet_id, want);
			svc_op_end(op, DOCRAFT_ETIMEDOUT, msg, NULL);
			return;
		}
		/* Wait for the safe time to pass want; a barrier paces the
		 * retries (under a lease they would spin the loop). */
		op->rd.barrier = true;
		svc_start_read(op);
		return;
	}
	if (want != 0)
		at = want;
	if (op->kind == OP_SCAN && want != 0 && op->scan->restart_limit != 0 &&
	    restart_scan(op, want, safe_ht)) {
		svc_op_free(op);
		return;
	}
	/* Compaction keeps what this read sees; a scan's hold also keeps its
	 * next page readable for a while (paging is stateless here). */
	if ((want != 0 || op->kind == OP_SCAN) &&
	    store_hold_history(tablet_store(op->r->t), at,
			       op->kind == OP_SCAN ? SCAN_HOLD_MS : READ_HOLD_MS, msg) != 0) {
		char why[2 * DOCRAFT_ERRMSG_SIZE];
		snprintf(why, sizeof why, "tablet %s: %s", op->tablet_id, msg);
		svc_op_end(op, DOCRAFT_ETOOOLD, why, NULL);
		return;
	}
	if (!(op->kind == OP_READ ? do_read(op, at) : do_scan(op, at))) {
		op->rd.barrier = true; /* the lease ran out meanwhile */
		svc_start_read(op);
		return;
	}
	svc_op_free(op);
}

bool svc_read_check(void *ctx, struct rpc_call *call, const void *req, void *obj)
{
	const Docraft__ReadRequest *rq = req;
	const struct replica *r = obj;
	size_t nk = schema_nkeys(&r->schema);
	(void)ctx;
	if (refuse_redis(call, r))
		return false;
	if (rq->n_key == nk)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EINVAL, "table %s: expected %zu key values, got %zu",
			 r->schema.table, nk, rq->n_key);
	return false;
}

/* Kept by the op from the start: freed with it. */
enum rpc_dispatch_req svc_read(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	Docraft__ReadRequest *rq = req;
	struct replica *r = obj;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	size_t nk = schema_nkeys(&r->schema);
	struct svc_op *op;
	int rv;

#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
	/* DELIBERATE BUG (meson -Djepsen_bug=follower-reads, for the failover
	 * suite's checker only, docs/reliability.md): any replica in a raft
	 * role answers from its local store at its wall clock, without the
	 * leader check and without the read barrier: stale reads. (The
	 * table's READ entry has no RPC_METHOD_LEADER in this build.) */
	struct tablet_status bug_st;
	tablet_get_status(r->t, &bug_st);
	if (bug_st.role == TABLET_FOLLOWER || bug_st.role == TABLET_CANDIDATE ||
	    bug_st.role == TABLET_LEADER || bug_st.role == TABLET_LEADER_NOT_READY) {
		if (!svc_room_for(s, call, r))
			return RPC_DISPATCH_FREE;
	} else if (!svc_may_serve(s, call, "read", r, true)) {
		return RPC_DISPATCH_FREE;
	}
#endif
	op = svc_op_new(s, OP_READ, call, r->id);
	op->r = r;
	op->read = rq;
	op->key = arena_alloc(&op->arena, nk * sizeof *op->key);
	op->nkey = nk;
	if ((rv = decode_keys(&r->schema, 0, rq->key, nk, op->key, errmsg)) != 0 ||
	    (rv = check_partition(r, key_hash_components(op->key, r->schema.n_hash), errmsg)) !=
		    0) {
		svc_op_end(op, rv, errmsg, NULL);
		return RPC_DISPATCH_KEEP;
	}
#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
	do_read(op, rq->read_ht != 0 ? rq->read_ht
				     : ht_make(hlc_wall_clock(NULL), HT_LOGICAL_MASK));
	svc_op_free(op);
	return RPC_DISPATCH_KEEP;
#endif
	svc_start_read(op);
	return RPC_DISPATCH_KEEP;
}

/* Fills op's scan conditions from its request. */
static int scan_spec_from(struct svc_op *op, char *errmsg)
{
	const Docraft__ScanRequest *req = op->scan;
	const struct schema *s = &op->r->schema;
	const struct column *bound_col;
	int rv;

	if (req->n_hash_key != 0 && req->n_hash_key != s->n_hash)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s: expected %zu hash key values, got %zu", s->table,
			       s->n_hash, req->n_hash_key);
	if (req->n_range_eq > s->n_range)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s has %zu range columns, got %zu "
			       "equalities", s->table, s->n_range, req->n_range_eq);
	op->has_lower = datum_set(req->lower);
	op->has_upper = datum_set(req->upper);
	if (req->n_hash_key == 0 && (req->n_range_eq > 0 || op->has_lower || op->has_upper))
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "range conditions need the hash key (a scan without one covers the "
			       "whole tablet)");
	op->nkey = req->n_hash_key;
	op->key = arena_alloc(&op->arena, (op->nkey + 1) * sizeof *op->key);
	if ((rv = decode_keys(s, 0, req->hash_key, op->nkey, op->key, errmsg)) != 0)
		return rv;
	if (op->nkey > 0 &&
	    (rv = check_partition(op->r, key_hash_components(op->key, op->nkey), errmsg)) != 0)
		return rv;
	op->neq = req->n_range_eq;
	op->eq = arena_alloc(&op->arena, (op->neq + 1) * sizeof *op->eq);
	if ((rv = decode_keys(s, s->n_hash, req->range_eq, op->neq, op->eq, errmsg)) != 0)
		return rv;
	if (!op->has_lower && !op->has_upper)
		return 0;
	if (op->neq >= s->n_range)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s: bounds need a range column after the equalities",
			       s->table);
	bound_col = &s->cols[s->n_hash + op->neq];
	if (op->has_lower && (rv = decode_keys(s, s->n_hash + op->neq, &op->scan->lower, 1,
					       &op->lower, errmsg)) != 0)
		return err_wrap(errmsg, rv, "lower bound on %s", bound_col->name);
	if (op->has_upper && (rv = decode_keys(s, s->n_hash + op->neq, &op->scan->upper, 1,
					       &op->upper, errmsg)) != 0)
		return err_wrap(errmsg, rv, "upper bound on %s", bound_col->name);
	return 0;
}

/* Kept by the op from the start: freed with it. */
enum rpc_dispatch_req svc_scan(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct service *s = ctx;
	Docraft__ScanRequest *rq = req;
	struct replica *r = obj;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	int rv;

	if (refuse_redis(call, r))
		return RPC_DISPATCH_FREE;
	op = svc_op_new(s, OP_SCAN, call, r->id);
	op->r = r;
	op->scan = rq;
	op->limit = rq->limit == 0 ? SERVICE_SCAN_DEFAULT_LIMIT
		  : rq->limit > SERVICE_SCAN_MAX_LIMIT ? SERVICE_SCAN_MAX_LIMIT : rq->limit;
	if ((rv = scan_spec_from(op, errmsg)) != 0) {
		svc_op_end(op, rv, errmsg, NULL);
		return RPC_DISPATCH_KEEP;
	}
	svc_start_read(op);
	return RPC_DISPATCH_KEEP;
}
