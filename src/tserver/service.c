/* The tablet server's RPC service. See service.h for the contract.
 *
 * Design.
 *
 * Every request is decoded on the loop thread, in its handler, and checked
 * before anything is queued: the tablet must be hosted here (else
 * TABLET_NOT_FOUND) and open (a replica that failed to open: UNAVAILABLE);
 * for data requests, the table name (when given) must be the tablet's, and
 * this replica must be the leader or about to become a ready one (a
 * follower answers NOT_LEADER at once with the leader it knows; a leader
 * whose barrier has not applied yet queues the request in the tablet, which
 * serves it once ready).
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
 * whole tablet and takes no range conditions.
 *
 * Administration: CREATE_TABLET is idempotent (manager_create) and answered
 * once the replica is open (a request for a replica being created gets
 * UNAVAILABLE, retryable); DELETE of
 * an unknown tablet is TABLET_NOT_FOUND; CHANGE_CONFIG ADD promotes the new
 * replica to voter once it caught up (tablet_add_replica), one change at a
 * time (SERVICE_BUSY otherwise); STEP_DOWN first commits a Raft barrier (so
 * that the voter raft_transfer picks is one that just answered), then
 * answers OK once this replica no longer leads, UNAVAILABLE if the transfer
 * did not happen. DUMP_TABLET and
 * TABLET_STATUS are served by any replica. Heartbeat instructions run
 * through the same code with no call: their outcome is logged.
 *
 * Checksums (CHECKSUM, any replica; docs/cluster.md "Replica checksums"):
 * read_ht 0 means this replica's store applied hybrid time (the last write
 * it applied; nothing applied yet: an empty answer at read_ht 0); read_ht
 * T > 0 first waits until the store has applied up to T, polled by
 * checksum_timer every SERVICE_CHECKSUM_POLL_MS without blocking the loop,
 * bounded by wait_ms (then TIMED_OUT "replica applied ht X behind T"). Then
 * docdb/checksum.h hashes the rows visible at that time, one page per loop
 * turn; the replica is found again by id at every tick, and a replica that
 * was deleted, failed, or had a copy installed meanwhile ends the op.
 *
 * Errors: reply_error is the one place where a docraft code becomes a
 * reply. The codes are the wire statuses (proto/rpc.proto), so most pass
 * through; DOCRAFT_ENOTLEADER gets the leader hint; DOCRAFT_ECLOSED (a
 * tablet closing under a request) becomes UNAVAILABLE when the server is
 * shutting down, TABLET_NOT_FOUND when the tablet was deleted. */
#include "tserver/service.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "docdb/batch.h"
#include "docdb/checksum.h"
#include "docdb/docwrite.h"
#include "docdb/dump.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "rpc.pb-c.h"
#include "rpc/wire.h"
#include "tablet/diskspace.h"

#define SWEEP_MS 100
#define READ_WAIT_MAX_MS 2000
/* How long a read at a time holds that history against compaction; for a
 * scan, how long its next page may take to come (store_hold_history). */
#define READ_HOLD_MS 10000
#define SCAN_HOLD_MS 60000
/* Bytes a row costs in a ScanResponse beyond its own encoding (tag and
 * length), rounded up. */
#define ROW_OVERHEAD 16

enum op_kind {
	OP_WRITE = 1,
	OP_READ,
	OP_SCAN,
	OP_DELETE,
	OP_CHANGE,
	OP_STEP_DOWN,
	OP_CHECKSUM,
	OP_DUMP,
	OP_CREATE,
};

struct svc_op {
	struct service *s;
	enum op_kind kind;
	struct rpc_call *call;   /* NULL once answered, or for an instruction */
	bool instruction;        /* from a heartbeat: log the outcome */
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	struct replica *r;       /* OP_WRITE/READ/SCAN: valid until the tablet callback */
	uint64_t started;        /* uv_now() */
	struct svc_op *prev, *next;

	/* OP_WRITE */
	struct tablet_write w;
	struct batch batch;
	struct buf cond;         /* condition blob (docdb/condition.h), or empty */
	/* OP_READ, OP_SCAN */
	struct tablet_read rd;
	Docraft__ReadRequest *read;
	Docraft__ScanRequest *scan;
	struct arena arena;      /* decoded key values (borrowing from the request) */
	struct pv *key;          /* read: the primary key; scan: the hash key */
	size_t nkey;
	struct pv *eq;
	size_t neq;
	struct pv lower, upper;
	bool has_lower, has_upper;
	uint32_t limit;
	/* OP_STEP_DOWN */
	uint64_t raft_id;        /* this replica's */
	uint64_t to_raft_id;     /* the target, 0: any up-to-date voter */
	/* OP_CHECKSUM: compared (never dereferenced) at every tick */
	const struct tablet *ck_tablet;
	const struct store *ck_store;
	uint64_t ck_want;        /* the request's read_ht */
	uint64_t ck_until;       /* uv_now() bound of the wait */
	struct checksum ck;
	bool ck_on;              /* ck initialized */
	/* OP_DUMP (and ck_tablet, ck_store) */
	struct buf text;         /* the dump so far */
	struct buf dump_key;     /* the next page starts after this key; empty: first */
};

static const char *op_name(enum op_kind k)
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
	}
	return "?";
}

/* ---- answering ------------------------------------------------------------------ */

/* The one place where a docraft code becomes an error reply. r (may be
 * NULL) is the replica the request was for, if the caller still holds it. */
static void reply_error(struct service *s, struct rpc_call *call, const char *tablet_id,
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

/* A failure before any op exists: to the caller, or into the log for an
 * instruction (call NULL). */
static void fail_call(struct service *s, struct rpc_call *call, const char *what,
		      const char *tablet_id, int code, const char *msg)
{
	if (call != NULL)
		reply_error(s, call, tablet_id, NULL, code, msg);
	else
		LOG_WARN("tablet %s: %s instruction failed: %s", tablet_id, what,
			 msg != NULL ? msg : docraft_strerror(code));
}

static void op_fail(struct svc_op *op, int code, const char *msg)
{
	if (op->call != NULL) {
		reply_error(op->s, op->call, op->tablet_id, op->r, code, msg);
		op->call = NULL;
	} else if (op->instruction) {
		LOG_WARN("tablet %s: %s instruction failed: %s", op->tablet_id, op_name(op->kind),
			 msg != NULL ? msg : docraft_strerror(code));
	}
}

static void op_ok(struct svc_op *op, const ProtobufCMessage *msg)
{
	if (op->call != NULL) {
		rpc_reply_message(op->call, msg);
		op->call = NULL;
	} else if (op->instruction) {
		LOG_INFO("tablet %s: %s instruction done", op->tablet_id, op_name(op->kind));
	}
}

/* ---- ops ------------------------------------------------------------------------- */

static struct svc_op *op_new(struct service *s, enum op_kind kind, struct rpc_call *call,
			     const char *tablet_id)
{
	struct svc_op *op = calloc(1, sizeof *op);
	if (op == NULL)
		PANIC("out of memory");
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

static void op_free(struct svc_op *op)
{
	struct service *s = op->s;
	if (op->call != NULL) /* never happens: every path answers first */
		reply_error(s, op->call, op->tablet_id, NULL, DOCRAFT_EUNAVAILABLE, NULL);
	if (op->prev != NULL)
		op->prev->next = op->next;
	else
		s->ops = op->next;
	if (op->next != NULL)
		op->next->prev = op->prev;
	batch_free(&op->batch);
	buf_free(&op->cond);
	arena_free(&op->arena);
	buf_free(&op->text);
	buf_free(&op->dump_key);
	if (op->kind == OP_CHECKSUM || op->kind == OP_DUMP)
		s->n_paged--;
	if (op->read != NULL)
		docraft__read_request__free_unpacked(op->read, NULL);
	if (op->scan != NULL)
		docraft__scan_request__free_unpacked(op->scan, NULL);
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
					 op_name(op->kind));
		}
	}
}

/* ---- helpers ------------------------------------------------------------------------ */

/* The request under the decode budget, or NULL after answering. */
static void *decode(struct rpc_call *call, const ProtobufCMessageDescriptor *d)
{
	return rpc_call_decode(call, d);
}

/* The OPEN replica id, or NULL after answering (or logging). */
static struct replica *find_open(struct service *s, struct rpc_call *call, const char *what,
				 const char *id)
{
	char msg[2 * DOCRAFT_ERRMSG_SIZE];
	struct replica *r = manager_find(s->m, id);
	const char *busy = r == NULL ? manager_busy(s->m, id) : NULL;
	if (busy != NULL && strcmp(busy, "being created") == 0) {
		snprintf(msg, sizeof msg, "tablet %s is being created here: retry", id);
		fail_call(s, call, what, id, DOCRAFT_EUNAVAILABLE, msg);
		return NULL;
	}
	if (r == NULL) {
		snprintf(msg, sizeof msg, "tablet %s is not hosted here", id);
		fail_call(s, call, what, id, DOCRAFT_ETABLETNOTFOUND, msg);
		return NULL;
	}
	if (r->state != REPLICA_OPEN || r->t == NULL) {
		snprintf(msg, sizeof msg, "tablet %s failed: %s", id, r->errmsg);
		fail_call(s, call, what, id, DOCRAFT_EUNAVAILABLE, msg);
		return NULL;
	}
	return r;
}

/* 0 if r's tablet takes data requests now (a ready leader, or a leader
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

/* Whether r may queue one more request; else answers SERVICE_BUSY. */
static bool room_for(struct service *s, struct rpc_call *call, const struct replica *r)
{
	if (r->pending < s->o.max_pending)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EBUSY, "tablet %s: %u requests queued: retry later", r->id,
			 r->pending);
	return false;
}

/* Only a ready leader serves data, within its queue limit; false once an
 * error has been replied. */
static bool may_serve(struct service *s, struct rpc_call *call, struct replica *r)
{
	int rv = leader_check(r);
	if (rv != 0) {
		reply_error(s, call, r->id, r, rv, NULL);
		return false;
	}
	return room_for(s, call, r);
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

/* The replica a data request names, checked against the request's table
 * (name and id); NULL once an error has been replied. */
static struct replica *data_replica(struct service *s, struct rpc_call *call, const char *what,
				    const char *tablet_id, const char *table,
				    const char *table_id)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = find_open(s, call, what, tablet_id);
	int rv;
	if (r != NULL && ((rv = check_table(r, table, errmsg)) != 0 ||
			  (rv = check_table_id(r, table_id, errmsg)) != 0)) {
		reply_error(s, call, r->id, r, rv, errmsg);
		return NULL;
	}
	return r;
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

static int decode_keys(const struct schema *s, size_t first, Docraft__Datum **d, size_t n,
		       struct pv *out, char *errmsg);

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

/* ---- writes ------------------------------------------------------------------------ */

static void write_done(struct tablet_write *w, int status, uint64_t ht)
{
	struct svc_op *op = w->data;
	op->r->pending--;
	if (status != 0) {
		op_fail(op, status, status == DOCRAFT_ECONDITION ? "condition not met"
				  : status == DOCRAFT_ETOOOLD
				  ? "retry window expired: the tablet no longer knows whether this "
				    "request applied (--retry-record-ttl-s); not applied again"
				  : NULL);
	} else {
		Docraft__WriteResponse resp = DOCRAFT__WRITE_RESPONSE__INIT;
		resp.ht = ht;
		op_ok(op, &resp.base);
	}
	op_free(op);
}

static void on_write(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	Docraft__WriteRequest *req = decode(call, &docraft__write_request__descriptor);
	struct replica *r;
	struct svc_op *op;
	struct docwrite dw;
	struct arena a = ARENA_INIT;
	int rv;

	if (req == NULL)
		return;
	if ((r = data_replica(s, call, "write", req->tablet_id, req->table,
			      req->table_id)) == NULL)
		goto out;
	if (req->schema_version != r->schema.version) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: schema version %u does not "
				 "match the table's version %u: refresh the schema", r->id,
				 req->schema_version, r->schema.version);
		goto out;
	}
	if (req->client_id.len != ENTRY_CLIENT_ID_LEN) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "client_id must be %d bytes, got %zu",
				 ENTRY_CLIENT_ID_LEN, req->client_id.len);
		goto out;
	}
	if (req->n_ops == 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "tablet %s: a write needs operations",
				 r->id);
		goto out;
	}
	if (!may_serve(s, call, r))
		goto out;
	if ((rv = diskspace_admit(s->o.disk, errmsg)) != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		goto out;
	}
	op = op_new(s, OP_WRITE, call, r->id);
	op->r = r;
	docwrite_init(&dw, &r->schema, &op->batch, manager_list_counter(r));
	rv = wire_apply_ops(&dw, req, &a, errmsg);
	docwrite_free(&dw);
	if (rv == 0)
		rv = wire_conditions(&r->schema, req, &op->cond, &a, errmsg);
	if (rv == 0)
		rv = check_write_partition(r, req, &a, errmsg);
	arena_free(&a);
	if (rv != 0) {
		op_fail(op, rv, errmsg);
		op_free(op);
		goto out;
	}
	memcpy(op->w.client_id, req->client_id.data, ENTRY_CLIENT_ID_LEN);
	op->w.seq = req->seq;
	op->w.min_running = req->min_running;
	op->w.batch = op->batch.data.data;
	op->w.batch_len = op->batch.data.len;
	op->w.cond = op->cond.len > 0 ? op->cond.data : NULL;
	op->w.cond_len = op->cond.len;
	op->w.cb = write_done;
	op->w.data = op;
	if ((rv = tablet_write(r->t, &op->w)) != 0) {
		op_fail(op, rv, rv == DOCRAFT_ETOOBIG ? "larger than a Raft entry may be" : NULL);
		op_free(op);
		goto out;
	}
	r->pending++;
out:
	docraft__write_request__free_unpacked(req, NULL);
}

/* ---- reads and scans --------------------------------------------------------------- */

static void read_done(struct tablet_read *rd, int status, uint64_t safe_ht);
static void transfer_now(struct svc_op *op);

static void start_read(struct svc_op *op)
{
	int rv;
	op->rd.data = op;
	op->rd.cb = read_done;
	op->rd.barrier = op->rd.barrier || op->kind == OP_STEP_DOWN;
	if ((rv = tablet_read(op->r->t, &op->rd)) != 0) {
		op_fail(op, rv, NULL);
		op_free(op);
		return;
	}
	op->r->pending++;
}

/* do_read and do_scan: false if the lease that served the read ran out
 * while reading (tablet_read_confirm): nothing was answered, read again. */
static bool do_read(struct svc_op *op, uint64_t at)
{
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	Docraft__Row row_pb;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct arena a = ARENA_INIT;
	struct replica *r = op->r;
	struct row row;
	bool found = false;
	int rv;

	rv = reader_get_row(tablet_store(r->t), &r->schema, op->key, op->nkey, at, &a, &row, &found,
			    errmsg);
	if (!tablet_read_confirm(r->t, &op->rd)) {
		arena_free(&a);
		return false;
	}
	if (rv != 0) {
		op_fail(op, rv, errmsg);
	} else {
		resp.found = found;
		resp.read_ht = at;
		if (found) {
			wire_row_to_pb(&row, &row_pb, &a);
			resp.row = &row_pb;
		}
		op_ok(op, &resp.base);
	}
	arena_free(&a);
	return true;
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
	if (!tablet_read_confirm(r->t, &op->rd)) {
		buf_free(&paging);
		arena_free(&a);
		return false;
	}
	if (rv != 0) {
		op_fail(op, rv, errmsg);
	} else {
		resp.n_rows = n;
		resp.rows = rows_pb;
		resp.paging.data = paging.data;
		resp.paging.len = paging.len;
		resp.read_ht = at;
		op_ok(op, &resp.base);
	}
	buf_free(&paging);
	arena_free(&a);
	return true;
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
	op_ok(op, &resp.base);
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
		op_fail(op, status, NULL);
		op_free(op);
		return;
	}
	if (op->kind == OP_STEP_DOWN) {
		transfer_now(op);
		return;
	}
	if (op->call == NULL) { /* answered already (deadline, abandoned) */
		op_free(op);
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
			op_fail(op, DOCRAFT_ECLOCKSKEW, msg);
			op_free(op);
			return;
		}
		if (uv_now(op->s->loop) - op->started > READ_WAIT_MAX_MS) {
			snprintf(msg, sizeof msg,
				 "tablet %s: the safe time did not reach the read time %" PRIu64,
				 op->tablet_id, want);
			op_fail(op, DOCRAFT_ETIMEDOUT, msg);
			op_free(op);
			return;
		}
		/* Wait for the safe time to pass want; a barrier paces the
		 * retries (under a lease they would spin the loop). */
		op->rd.barrier = true;
		start_read(op);
		return;
	}
	if (want != 0)
		at = want;
	if (op->kind == OP_SCAN && want != 0 && op->scan->restart_limit != 0 &&
	    restart_scan(op, want, safe_ht)) {
		op_free(op);
		return;
	}
	/* Compaction keeps what this read sees; a scan's hold also keeps its
	 * next page readable for a while (paging is stateless here). */
	if ((want != 0 || op->kind == OP_SCAN) &&
	    store_hold_history(tablet_store(op->r->t), at,
			       op->kind == OP_SCAN ? SCAN_HOLD_MS : READ_HOLD_MS, msg) != 0) {
		char why[2 * DOCRAFT_ERRMSG_SIZE];
		snprintf(why, sizeof why, "tablet %s: %s", op->tablet_id, msg);
		op_fail(op, DOCRAFT_ETOOOLD, why);
		op_free(op);
		return;
	}
	if (!(op->kind == OP_READ ? do_read(op, at) : do_scan(op, at))) {
		op->rd.barrier = true; /* the lease ran out meanwhile */
		start_read(op);
		return;
	}
	op_free(op);
}

static void on_read(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	Docraft__ReadRequest *req = decode(call, &docraft__read_request__descriptor);
	struct replica *r;
	struct svc_op *op;
	size_t nk;
	int rv;

	if (req == NULL)
		return;
	if ((r = data_replica(s, call, "read", req->tablet_id, req->table,
			      req->table_id)) == NULL)
		goto out;
	nk = schema_nkeys(&r->schema);
	if (req->n_key != nk) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "table %s: expected %zu key values, got %zu",
				 r->schema.table, nk, req->n_key);
		goto out;
	}
#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
	/* DELIBERATE BUG (meson -Djepsen_bug=follower-reads, for the failover
	 * suite's checker only, docs/reliability.md): any replica in a raft
	 * role answers from its local store at its wall clock, without the
	 * leader check and without the read barrier: stale reads. */
	struct tablet_status bug_st;
	tablet_get_status(r->t, &bug_st);
	if (bug_st.role == TABLET_FOLLOWER || bug_st.role == TABLET_CANDIDATE ||
	    bug_st.role == TABLET_LEADER || bug_st.role == TABLET_LEADER_NOT_READY) {
		if (!room_for(s, call, r))
			goto out;
	} else if (!may_serve(s, call, r)) {
		goto out;
	}
#else
	if (!may_serve(s, call, r))
		goto out;
#endif
	op = op_new(s, OP_READ, call, r->id);
	op->r = r;
	op->read = req;
	op->key = arena_alloc(&op->arena, nk * sizeof *op->key);
	op->nkey = nk;
	if ((rv = decode_keys(&r->schema, 0, req->key, nk, op->key, errmsg)) != 0 ||
	    (rv = check_partition(r, key_hash_components(op->key, r->schema.n_hash), errmsg)) !=
		    0) {
		op_fail(op, rv, errmsg);
		op_free(op);
		return;
	}
#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
	do_read(op, req->read_ht != 0 ? req->read_ht
				      : ht_make(hlc_wall_clock(NULL), HT_LOGICAL_MASK));
	op_free(op);
	return;
#endif
	start_read(op);
	return;
out:
	docraft__read_request__free_unpacked(req, NULL);
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

static void on_scan(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	Docraft__ScanRequest *req = decode(call, &docraft__scan_request__descriptor);
	struct replica *r;
	struct svc_op *op;
	int rv;

	if (req == NULL)
		return;
	if ((r = data_replica(s, call, "scan", req->tablet_id, req->table,
			      req->table_id)) == NULL)
		goto out;
	if (!may_serve(s, call, r))
		goto out;
	op = op_new(s, OP_SCAN, call, r->id);
	op->r = r;
	op->scan = req;
	op->limit = req->limit == 0 ? SERVICE_SCAN_DEFAULT_LIMIT
		  : req->limit > SERVICE_SCAN_MAX_LIMIT ? SERVICE_SCAN_MAX_LIMIT : req->limit;
	if ((rv = scan_spec_from(op, errmsg)) != 0) {
		op_fail(op, rv, errmsg);
		op_free(op);
		return;
	}
	start_read(op);
	return;
out:
	docraft__scan_request__free_unpacked(req, NULL);
}

/* ---- administration ----------------------------------------------------------------- */

static void create_done(void *arg, int status)
{
	struct svc_op *op = arg;
	if (status == DOCRAFT_ETABLETNOTFOUND) {
		op_fail(op, status, "the replica was deleted while being created");
	} else if (status != 0) {
		op_fail(op, status, "the replica could not be created (see the tserver log)");
	} else {
		Docraft__CreateTabletResponse resp = DOCRAFT__CREATE_TABLET_RESPONSE__INIT;
		op_ok(op, &resp.base);
	}
	op_free(op);
}

/* Answered once the replica is open (manager_create works off the loop). */
static void do_create(struct service *s, struct rpc_call *call,
		      const Docraft__CreateTabletRequest *req)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op;
	int rv;
	if (s->closing) {
		fail_call(s, call, "create", req->tablet_id, DOCRAFT_ECLOSED, "shutting down");
		return;
	}
	op = op_new(s, OP_CREATE, call, req->tablet_id);
	rv = manager_create(s->m, req, create_done, op, errmsg);
	if (rv != 0) {
		op_fail(op, rv, errmsg);
		op_free(op);
	}
}

static void on_create(void *arg, struct rpc_call *call)
{
	Docraft__CreateTabletRequest *req =
		decode(call, &docraft__create_tablet_request__descriptor);
	if (req == NULL)
		return;
	do_create(arg, call, req);
	docraft__create_tablet_request__free_unpacked(req, NULL);
}

static void delete_done(void *arg, int status)
{
	struct svc_op *op = arg;
	if (status != 0) {
		op_fail(op, status, "the replica was closed but its files could not be removed");
	} else {
		Docraft__DeleteTabletResponse resp = DOCRAFT__DELETE_TABLET_RESPONSE__INIT;
		op_ok(op, &resp.base);
	}
	op_free(op);
}

static void do_delete(struct service *s, struct rpc_call *call,
		      const Docraft__DeleteTabletRequest *req)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct svc_op *op = op_new(s, OP_DELETE, call, req->tablet_id);
	int rv = manager_delete(s->m, req->tablet_id, delete_done, op, errmsg);
	if (rv != 0) {
		if (rv == DOCRAFT_ETABLETNOTFOUND && op->instruction)
			op->instruction = false; /* already gone: nothing to log */
		op_fail(op, rv, errmsg);
		op_free(op);
	}
}

static void on_delete(void *arg, struct rpc_call *call)
{
	Docraft__DeleteTabletRequest *req =
		decode(call, &docraft__delete_tablet_request__descriptor);
	if (req == NULL)
		return;
	do_delete(arg, call, req);
	docraft__delete_tablet_request__free_unpacked(req, NULL);
}

static void change_done(void *arg, int status)
{
	struct svc_op *op = arg;
	if (status != 0) {
		op_fail(op, status, NULL);
	} else {
		Docraft__ChangeConfigResponse resp = DOCRAFT__CHANGE_CONFIG_RESPONSE__INIT;
		op_ok(op, &resp.base);
	}
	op_free(op);
}

static void do_change(struct service *s, struct rpc_call *call,
		      const Docraft__ChangeConfigRequest *req)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const Docraft__Peer *p = req->peer;
	struct replica *r = find_open(s, call, "change config", req->tablet_id);
	struct svc_op *op;
	struct sockaddr_in sa;
	int rv;

	if (r == NULL)
		return;
	if (p == NULL || p->raft_id == 0) {
		fail_call(s, call, "change config", r->id, DOCRAFT_EINVAL,
			  "the peer needs a raft id");
		return;
	}
	if (req->kind == DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD &&
	    listener_parse_address(p->address, &sa, errmsg) != 0) {
		fail_call(s, call, "change config", r->id, DOCRAFT_EINVAL, errmsg);
		return;
	}
	op = op_new(s, OP_CHANGE, call, r->id);
	switch (req->kind) {
	case DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD:
		rv = tablet_add_replica(r->t, p->raft_id, p->address, change_done, op, errmsg);
		break;
	case DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__REMOVE:
		rv = tablet_remove_replica(r->t, p->raft_id, change_done, op, errmsg);
		break;
	default:
		rv = err_set(errmsg, DOCRAFT_EINVAL, "unknown change kind %d", (int)req->kind);
		break;
	}
	if (rv != 0) {
		/* ENOTLEADER: reply_error adds the hint; a busy one: retry. */
		op_fail(op, rv, rv == DOCRAFT_ENOTLEADER ? NULL : errmsg);
		op_free(op);
	}
}

static void on_change(void *arg, struct rpc_call *call)
{
	Docraft__ChangeConfigRequest *req =
		decode(call, &docraft__change_config_request__descriptor);
	if (req == NULL)
		return;
	do_change(arg, call, req);
	docraft__change_config_request__free_unpacked(req, NULL);
}

static void step_down_done(void *arg, int status)
{
	struct svc_op *op = arg;
	struct replica *r = manager_find(op->s->m, op->tablet_id);
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (status == 0 && r != NULL && r->state == REPLICA_OPEN && r->t != NULL &&
	    tablet_leader(r->t, NULL) == op->raft_id) {
		snprintf(msg, sizeof msg, "tablet %s: the leadership transfer did not complete",
			 op->tablet_id);
		op_fail(op, DOCRAFT_EUNAVAILABLE, msg);
	} else if (status != 0) {
		op_fail(op, status, NULL);
	} else {
		Docraft__StepDownResponse resp = DOCRAFT__STEP_DOWN_RESPONSE__INIT;
		op_ok(op, &resp.base);
	}
	op_free(op);
}

/* After the barrier: the transfer itself. */
static void transfer_now(struct svc_op *op)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = op->r;
	int rv;
	op->r = NULL; /* step_down_done finds the replica again by id */
	rv = tablet_transfer(r->t, op->to_raft_id, step_down_done, op, errmsg);
	if (rv != 0) {
		op_fail(op, rv, rv == DOCRAFT_ENOTLEADER ? NULL : errmsg);
		op_free(op);
	}
}

/* A Raft barrier first (start_read): once it has committed, the voters
 * that are up to date, which raft_transfer(0) prefers, just acknowledged
 * it, so the target chosen is alive (see tserver_main.c, drain). */
static void do_step_down(struct service *s, struct rpc_call *call,
			 const Docraft__StepDownRequest *req)
{
	struct replica *r = find_open(s, call, "step down", req->tablet_id);
	struct svc_op *op;
	int rv;

	if (r == NULL)
		return;
	if ((rv = leader_check(r)) != 0) {
		fail_call(s, call, "step down", r->id, rv, NULL);
		return;
	}
	op = op_new(s, OP_STEP_DOWN, call, r->id);
	op->raft_id = r->raft_id;
	op->to_raft_id = req->to_raft_id;
	op->r = r;
	start_read(op);
}

static void on_step_down(void *arg, struct rpc_call *call)
{
	Docraft__StepDownRequest *req = decode(call, &docraft__step_down_request__descriptor);
	if (req == NULL)
		return;
	do_step_down(arg, call, req);
	docraft__step_down_request__free_unpacked(req, NULL);
}

static void checksum_arm(struct service *s, uint64_t delay_ms);

static void on_dump(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	Docraft__DumpTabletRequest *req = decode(call, &docraft__dump_tablet_request__descriptor);
	struct tablet_status st;
	struct replica *r;
	struct svc_op *op;

	if (req == NULL)
		return;
	if ((r = find_open(s, call, "dump", req->tablet_id)) == NULL)
		goto out;
	tablet_get_status(r->t, &st);
	if (st.role == TABLET_FAILED || st.role == TABLET_CLOSED || st.role == TABLET_COPYING ||
	    tablet_store(r->t) == NULL) {
		rpc_reply_errorf(call, DOCRAFT_EUNAVAILABLE, "tablet %s is %s", r->id,
				 manager_role_name(st.role));
		goto out;
	}
	if (s->n_paged >= SERVICE_MAX_PAGED_OPS) {
		rpc_reply_errorf(call, DOCRAFT_EBUSY, "tserver busy: %u checksums and dumps "
				 "being served", s->n_paged);
		goto out;
	}
	/* One page per loop turn (checksum_tick): a large tablet must not
	 * hold the loop thread past the election timeout. */
	op = op_new(s, OP_DUMP, call, r->id);
	s->n_paged++;
	op->ck_tablet = r->t;
	op->ck_store = tablet_store(r->t);
	checksum_arm(s, 0);
out:
	docraft__dump_tablet_request__free_unpacked(req, NULL);
}

static void on_status(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	Docraft__TabletStatusRequest *req =
		decode(call, &docraft__tablet_status_request__descriptor);
	Docraft__TabletStatusResponse resp = DOCRAFT__TABLET_STATUS_RESPONSE__INIT;
	Docraft__TabletReport rep, *one = &rep;
	struct arena a = ARENA_INIT;

	if (req == NULL)
		return;
	if (req->tablet_id[0] == '\0') {
		resp.n_tablets = manager_reports(s->m, &a, &resp.tablets);
	} else {
		struct replica *r = manager_find(s->m, req->tablet_id);
		if (r == NULL) {
			rpc_reply_errorf(call, DOCRAFT_ETABLETNOTFOUND,
					 "tablet %s is not hosted here", req->tablet_id);
			goto out;
		}
		manager_report(r, &rep, &a);
		resp.n_tablets = 1;
		resp.tablets = &one;
	}
	rpc_reply_message(call, &resp.base);
out:
	arena_free(&a);
	docraft__tablet_status_request__free_unpacked(req, NULL);
}

/* ---- checksums ------------------------------------------------------------------------ */

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
	struct store *st;
	const char *why;

	if (op->call == NULL) { /* answered already (deadline, abandoned) */
		op_free(op);
		return NULL;
	}
	r = manager_find(op->s->m, op->tablet_id);
	if (r == NULL) {
		snprintf(errmsg, sizeof errmsg, "tablet %s was deleted", op->tablet_id);
		op_fail(op, DOCRAFT_ETABLETNOTFOUND, errmsg);
		op_free(op);
		return NULL;
	}
	if ((why = unreadable(r)) != NULL) {
		snprintf(errmsg, sizeof errmsg, "tablet %s is %s", op->tablet_id, why);
		op_fail(op, DOCRAFT_EUNAVAILABLE, errmsg);
		op_free(op);
		return NULL;
	}
	st = tablet_store(r->t);
	if (r->t != op->ck_tablet || st != op->ck_store) {
		snprintf(errmsg, sizeof errmsg, "tablet %s: the replica changed under the %s "
			 "(reopened or copied): retry", op->tablet_id, op_name(op->kind));
		op_fail(op, DOCRAFT_EUNAVAILABLE, errmsg);
		op_free(op);
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
		op_fail(op, rv, errmsg);
	} else if (op->text.len > max) {
		snprintf(errmsg, sizeof errmsg, "tablet %s: its dump exceeds the largest reply "
			 "(%zu bytes)", op->tablet_id, max);
		op_fail(op, DOCRAFT_ETOOBIG, errmsg);
	} else if (*computing) {
		return;
	} else {
		Docraft__DumpTabletResponse resp = DOCRAFT__DUMP_TABLET_RESPONSE__INIT;
		resp.text = (char *)buf_cstr(&op->text);
		op_ok(op, &resp.base);
	}
	op_free(op);
}

static void checksum_reply(struct svc_op *op, uint64_t sum, uint64_t rows, uint64_t read_ht,
			   uint64_t applied_index)
{
	Docraft__ChecksumResponse resp = DOCRAFT__CHECKSUM_RESPONSE__INIT;
	resp.checksum = sum;
	resp.rows = rows;
	resp.read_ht = read_ht;
	resp.applied_index = applied_index;
	op_ok(op, &resp.base);
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
			op_free(op);
			return;
		}
		if (at == 0) {
			at = applied;
		} else if (applied < at) {
			if (now < op->ck_until) {
				*waiting = true;
				return;
			}
			snprintf(errmsg, sizeof errmsg,
				 "tablet %s: replica applied ht %" PRIu64 " behind %" PRIu64
				 " after %" PRIu64 " ms", op->tablet_id, applied, at,
				 now - op->started);
			op_fail(op, DOCRAFT_ETIMEDOUT, errmsg);
			op_free(op);
			return;
		}
		checksum_init(&op->ck, at);
		op->ck_on = true;
	}
	if ((rv = checksum_step(&op->ck, st, &r->schema, CHECKSUM_PAGE_ROWS, errmsg)) != 0) {
		op_fail(op, rv, errmsg);
		op_free(op);
		return;
	}
	if (!op->ck.done) {
		*computing = true;
		return;
	}
	checksum_reply(op, op->ck.hash, op->ck.rows, op->ck.read_ht, index);
	op_free(op);
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

static void on_checksum(void *arg, struct rpc_call *call)
{
	struct service *s = arg;
	Docraft__ChecksumRequest *req = decode(call, &docraft__checksum_request__descriptor);
	struct replica *r;
	struct svc_op *op;
	const char *why;
	uint64_t cutoff;
	uint32_t wait_ms;

	if (req == NULL)
		return;
	if ((r = find_open(s, call, "checksum", req->tablet_id)) == NULL)
		goto out;
	if ((why = unreadable(r)) != NULL) {
		rpc_reply_errorf(call, DOCRAFT_EUNAVAILABLE, "tablet %s is %s", r->id, why);
		goto out;
	}
	if (req->read_ht >= HT_INVALID) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "invalid read time %" PRIu64, req->read_ht);
		goto out;
	}
	cutoff = store_history_cutoff(tablet_store(r->t));
	if (req->read_ht != 0 && req->read_ht < cutoff) {
		rpc_reply_errorf(call, DOCRAFT_ETOOOLD, "tablet %s: read time %" PRIu64
				 " is below the history cutoff %" PRIu64, r->id, req->read_ht,
				 cutoff);
		goto out;
	}
	if (s->n_paged >= SERVICE_MAX_PAGED_OPS) {
		rpc_reply_errorf(call, DOCRAFT_EBUSY, "tserver busy: %u checksums and dumps "
				 "being served", s->n_paged);
		goto out;
	}
	wait_ms = req->wait_ms == 0 ? SERVICE_CHECKSUM_WAIT_MS
		: req->wait_ms > SERVICE_CHECKSUM_WAIT_MAX_MS ? SERVICE_CHECKSUM_WAIT_MAX_MS
		: req->wait_ms;
	op = op_new(s, OP_CHECKSUM, call, r->id);
	s->n_paged++;
	op->ck_tablet = r->t;
	op->ck_store = tablet_store(r->t);
	op->ck_want = req->read_ht;
	op->ck_until = op->started + wait_ms;
	checksum_arm(s, 0);
out:
	docraft__checksum_request__free_unpacked(req, NULL);
}

/* ---- the service ---------------------------------------------------------------------- */

void service_execute(struct service *s, const Docraft__Instruction *ins)
{
	if (s->closing || manager_closing(s->m))
		return;
	switch (ins->kind_case) {
	case DOCRAFT__INSTRUCTION__KIND_CREATE:
		if (ins->create != NULL) {
			LOG_INFO("tablet %s: the master asks to create it", ins->create->tablet_id);
			do_create(s, NULL, ins->create);
		}
		break;
	case DOCRAFT__INSTRUCTION__KIND_DELETE:
		if (ins->delete_ != NULL) {
			LOG_INFO("tablet %s: the master asks to delete it",
				 ins->delete_->tablet_id);
			do_delete(s, NULL, ins->delete_);
		}
		break;
	case DOCRAFT__INSTRUCTION__KIND_CHANGE:
		if (ins->change != NULL) {
			LOG_INFO("tablet %s: the master asks to %s replica %" PRIu64,
				 ins->change->tablet_id,
				 ins->change->kind == DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD
					 ? "add" : "remove",
				 ins->change->peer != NULL ? ins->change->peer->raft_id : 0);
			do_change(s, NULL, ins->change);
		}
		break;
	case DOCRAFT__INSTRUCTION__KIND_STEP_DOWN:
		if (ins->step_down != NULL) {
			LOG_INFO("tablet %s: the master asks to step down",
				 ins->step_down->tablet_id);
			do_step_down(s, NULL, ins->step_down);
		}
		break;
	default:
		LOG_WARN("heartbeat: unknown instruction %d ignored", (int)ins->kind_case);
		break;
	}
}

int service_init(struct service *s, uv_loop_t *loop, struct rpc_server *srv, struct manager *m,
		 const struct service_options *o, char *errmsg)
{
	static const struct {
		uint16_t method;
		rpc_handler_cb cb;
	} methods[] = {
		{DOCRAFT__METHOD__TSERVER_WRITE, on_write},
		{DOCRAFT__METHOD__TSERVER_READ, on_read},
		{DOCRAFT__METHOD__TSERVER_SCAN, on_scan},
		{DOCRAFT__METHOD__TSERVER_CREATE_TABLET, on_create},
		{DOCRAFT__METHOD__TSERVER_DELETE_TABLET, on_delete},
		{DOCRAFT__METHOD__TSERVER_CHANGE_CONFIG, on_change},
		{DOCRAFT__METHOD__TSERVER_STEP_DOWN, on_step_down},
		{DOCRAFT__METHOD__TSERVER_DUMP_TABLET, on_dump},
		{DOCRAFT__METHOD__TSERVER_TABLET_STATUS, on_status},
		{DOCRAFT__METHOD__TSERVER_CHECKSUM, on_checksum},
	};
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
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if ((rv = rpc_server_register(srv, methods[i].method, methods[i].cb, s,
					      errmsg)) != 0)
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
		op_free(s->ops); /* answers UNAVAILABLE */
	s->handles_open = 2;
	uv_close((uv_handle_t *)&s->sweep, handle_closed);
	uv_close((uv_handle_t *)&s->checksum_timer, handle_closed);
}
