/* What the files of the tablet server's RPC service share (service.h is
 * the contract to the rest of the server; the design note is at the top of
 * service.c):
 *
 *   service.c        the method table and its hooks (replica lookup, table
 *                    and leader checks, queue room), answering, ops and the
 *                    deadline sweep, heartbeat instructions, init and close
 *   service_data.c   WRITE, READ and SCAN
 *   service_admin.c  CREATE_TABLET, DELETE_TABLET, CHANGE_CONFIG, STEP_DOWN,
 *                    TABLET_STATUS
 *   service_redis.c  REDIS (issue 17: Redis commands on the tablet)
 *   service_paged.c  DUMP_TABLET and CHECKSUM: work done one page per loop
 *                    turn by checksum_timer
 *
 * The svc_* handlers are the table's (rpc/dispatch.h): they run after the
 * table's steps, with the replica the request names as obj for methods
 * that find one, and answer the call or hand it to an op. The handlers of
 * the methods a heartbeat instruction may carry (create, delete, change
 * config, step down) also run with call NULL: they then log their outcome
 * instead of answering, and never keep req.
 *
 * Threading: the loop thread, like everything of the service. */
#ifndef DOCRAFT_TSERVER_SERVICE_INTERNAL_H
#define DOCRAFT_TSERVER_SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/batch.h"
#include "docdb/checksum.h"
#include "docdb/pv.h"
#include "rpc/dispatch.h"
#include "tserver/service.h"

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
	OP_REDIS,
};

/* A request waiting for a tablet callback (or a page of work): it owns its
 * rpc_call until it answers (op->call NULL from then on), so every call is
 * answered exactly once however the op ends. Listed in s->ops. */
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
	/* OP_REDIS */
	struct buf cmds;         /* a write's commands (entry.h's encoding) */
	Docraft__RedisRequest *redis; /* a read's request: owned, freed with the op */
	/* OP_READ, OP_SCAN */
	struct tablet_read rd;
	Docraft__ReadRequest *read; /* owned: freed with the op */
	Docraft__ScanRequest *scan; /* owned: freed with the op */
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

/* ---- service.c: answering -------------------------------------------------------- */

/* "write", "change config", ... */
const char *svc_op_name(enum op_kind k);

/* The one place where a docraft code becomes an error reply (answers and
 * frees call). r (may be NULL) is the replica the request was for, if the
 * caller still holds it: NOT_LEADER gets its leader hint, CLOSED becomes
 * UNAVAILABLE or TABLET_NOT_FOUND. */
void svc_reply_error(struct service *s, struct rpc_call *call, const char *tablet_id,
		     struct replica *r, int code, const char *msg);
/* A failure before any op exists: answered to call, or logged for an
 * instruction (call NULL) as "<what> instruction failed". */
void svc_fail_call(struct service *s, struct rpc_call *call, const char *what,
		   const char *tablet_id, int code, const char *msg);

/* Whether r may queue one more request; else answers call SERVICE_BUSY. */
bool svc_room_for(struct service *s, struct rpc_call *call, const struct replica *r);
/* Whether r's tablet takes requests now (a ready leader, or a leader whose
 * barrier is pending: the tablet queues them) and, when queued, has room
 * for one more (svc_room_for); else answers call (or logs the failure of
 * the instruction what, call NULL). */
bool svc_may_serve(struct service *s, struct rpc_call *call, const char *what, struct replica *r,
		   bool queued);

/* ---- service.c: ops ---------------------------------------------------------------- */

/* A new op for call (NULL: an instruction), listed in s->ops. Never NULL. */
struct svc_op *svc_op_new(struct service *s, enum op_kind kind, struct rpc_call *call,
			  const char *tablet_id);
/* Unlists and frees op and what it owns (its request, batch, checksum),
 * answering UNAVAILABLE a call still held (never happens: every path
 * answers first). */
void svc_op_free(struct svc_op *op);
/* Answers op's call (if it still holds one) with the error, or logs it for
 * an instruction. op stays. */
void svc_op_fail(struct svc_op *op, int code, const char *msg);
/* Answers op's call with msg, or logs the success of an instruction. */
void svc_op_ok(struct svc_op *op, const ProtobufCMessage *msg);
/* Ends op: svc_op_fail(status, msg) if status != 0, else svc_op_ok(ok);
 * then frees it. With err_set, an error with a formatted message in one
 * statement: svc_op_end(op, err_set(errmsg, code, ...), errmsg, NULL). */
void svc_op_end(struct svc_op *op, int status, const char *msg, const ProtobufCMessage *ok);

/* ---- service_data.c -------------------------------------------------------------- */

enum rpc_dispatch_req svc_write(void *ctx, struct rpc_call *call, void *req, void *obj);
/* Schema version, client id and operations of a write, before the leader
 * check. */
bool svc_write_check(void *ctx, struct rpc_call *call, const void *req, void *obj);
/* Fills op->w's id (client_id: ENTRY_CLIENT_ID_LEN bytes) and callback
 * (data: op) and queues it on op->r's tablet, counted in op->r->pending;
 * a synchronous failure ends op. The payload (batch, conditions or Redis
 * commands) is set by the caller. */
void svc_write_submit(struct svc_op *op, const uint8_t *client_id, uint64_t seq,
		      uint64_t min_running, tablet_write_cb cb);
enum rpc_dispatch_req svc_read(void *ctx, struct rpc_call *call, void *req, void *obj);
/* The number of key values of a read, before the leader check. */
bool svc_read_check(void *ctx, struct rpc_call *call, const void *req, void *obj);
enum rpc_dispatch_req svc_scan(void *ctx, struct rpc_call *call, void *req, void *obj);
/* Starts op's tablet_read (a barrier for OP_STEP_DOWN), counted in
 * op->r->pending; on failure ends op. */
void svc_start_read(struct svc_op *op);

/* ---- service_redis.c -------------------------------------------------------------- */

/* The table, the commands (names, arity, write flag, keys in the
 * partition) and the client id of a Redis request, before the leader check. */
bool svc_redis_check(void *ctx, struct rpc_call *call, const void *req, void *obj);
enum rpc_dispatch_req svc_redis(void *ctx, struct rpc_call *call, void *req, void *obj);

/* ---- service_admin.c ------------------------------------------------------------- */

enum rpc_dispatch_req svc_create(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req svc_delete(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req svc_change(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req svc_step_down(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req svc_status(void *ctx, struct rpc_call *call, void *req, void *obj);
/* OP_STEP_DOWN, once its barrier (svc_start_read) has committed: the
 * leadership transfer itself. */
void svc_transfer_now(struct svc_op *op);

/* ---- service_paged.c ------------------------------------------------------------- */

enum rpc_dispatch_req svc_dump(void *ctx, struct rpc_call *call, void *req, void *obj);
enum rpc_dispatch_req svc_checksum(void *ctx, struct rpc_call *call, void *req, void *obj);

#endif
