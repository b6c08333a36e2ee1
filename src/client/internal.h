/* libdocraft internals shared by the files of src/client: the client
 * object, its timers, jobs (one per public request), results and ops
 * (values and their conversions are values.h's).
 *
 * Threading: everything here belongs to the client's loop thread, except
 * what is marked "any thread" (the submission queue, under mu). */
#ifndef DOCRAFT_CLIENT_INTERNAL_H
#define DOCRAFT_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "client/ctimer.h"
#include "client/metacache.h"
#include "client/values.h"
#include "common/arena.h"
#include "common/buf.h"
#include "rpc/rpc.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"

#define CLIENT_MAX_MASTERS 16
#define CLIENT_DEFAULT_MASTER_PORT 7100
#define CLIENT_MAX_VALUES 1024

/* ---- jobs: one public request on the loop ---- */

struct job;
struct job_ops {
	/* Starts the job on the loop. It ends by calling job_finish. */
	void (*start)(struct job *j);
	/* Releases what the job owns (after job_finish). */
	void (*free)(struct job *j);
};

struct job {
	const struct job_ops *ops;
	docraft_client *c;
	docraft_req *req;
	docraft_req_cb cb;
	struct job *next;       /* submission queue */
	struct job *prev_active, *next_active; /* c->active */
	uint64_t deadline;      /* uv_now() ms, set when started */
	bool finished;
};

/* Hands a job to the loop (any thread). The job is allocated by the caller
 * with job->ops set; on error (DOCRAFT_ECLOSED) it was freed and the
 * callback will not run. */
int job_submit(docraft_client *c, struct job *j, docraft_req *req, docraft_req_cb cb);
/* Ends a job: sets req->status/errmsg, runs the callback, frees the job. */
void job_finish(struct job *j, int status, const char *errmsg);

/* ---- the client ---- */

struct client_seq {
	uint64_t seq;
	struct client_seq *prev, *next;
};

struct docraft_client {
	docraft_client_options opts;
	uv_loop_t *loop;
	uv_loop_t own_loop;
	bool owns_loop;
	uv_thread_t thread;
	bool thread_started;

	/* Submission, any thread. */
	uv_mutex_t mu;
	uv_async_t wake;
	struct job *queue, *queue_tail;
	bool close_requested;
	/* Submitters between deciding to wake the loop (under mu, before a
	 * close request) and the end of their uv_async_send (outside mu):
	 * the wake handle is not closed while any (atomic). */
	unsigned wakers;
	void (*close_cb)(void *arg);
	void *close_arg;

	/* Loop thread only. */
	bool closing;
	unsigned handles_open;
	struct rpc_client rpc;
	uv_timer_t timer;
	struct ctimer **heap;
	size_t heap_len, heap_cap;
	struct job *active; /* started, not finished */
	struct metacache mc;
	char masters[CLIENT_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
	size_t n_masters;
	char master_leader[RPC_ADDRESS_MAX + 1]; /* "" when unknown */
	/* masters.c: the caller's list, kept as a fallback of the learned one. */
	char flag_masters[CLIENT_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
	size_t n_flag_masters;
	bool masters_stale;    /* learn the list at the next successful master call */
	bool masters_learning; /* a ListMasters is running */
	uint8_t id[16];
	uint64_t next_seq;
	struct client_seq *running, *running_tail; /* writes in flight, by seq */
	uint64_t rand;
};

/* masters.c (loop thread, but init): the list of masters learned from the
 * cluster. init: at open, the caller's list is the fallback and stale.
 * hint: a NOT_LEADER hint's address, added if unknown. learn: after a
 * successful master call, one ListMasters in the background if stale. */
void client_masters_init(docraft_client *c);
void client_masters_hint(docraft_client *c, const char *address);
void client_masters_learn(docraft_client *c);

/* Jittered delay in [ms/2, ms]. */
uint32_t client_jitter(docraft_client *c, uint32_t ms);
/* A write's sequence number: registered as running until released. */
void client_seq_acquire(docraft_client *c, struct client_seq *s);
void client_seq_release(docraft_client *c, struct client_seq *s);
/* The smallest seq still running (the caller's own included). */
uint64_t client_min_running(const docraft_client *c);

/* Blocking helpers used by cql.c and admin.c: run a job and wait (any
 * thread but the loop's). Return DOCRAFT_EINVAL on a loop-mode client. */
int client_wait(docraft_client *c, struct job *j, docraft_req *req);
/* Sets docraft_errmsg() for this thread; returns code. */
int client_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies the schema of table (loading it into the cache if needed) into
 * out (schema_free it). Blocking. */
int client_table_schema(docraft_client *c, const char *table, struct schema *out);

/* redis.c (issue 17), blocking (as client_wait): docraft_redis_async and
 * docraft_redis_tablets_async of database db; on success *out is the
 * result (the caller frees it). */
int client_redis(docraft_client *c, unsigned db, uint16_t slot, const docraft_redis_cmd *cmds,
		 size_t n, bool write, docraft_result **out);
int client_redis_tablets(docraft_client *c, unsigned db, docraft_result **out);
/* redis_view.c: the rows of Redis database db as the CQL view shows them
 * (at most limit), *nrows rows of 4 cells (key, type, ttl, value) in *out
 * (buf_free each, then free *out). Blocking, as client_wait. */
int redis_view_rows(docraft_client *c, unsigned db, uint64_t limit, struct buf **out,
		    size_t *nrows);
/* The value cell of a key of type (TYPE's answer) from the RESP2 reply of
 * the command that read it (GET, HGETALL, SMEMBERS, ZRANGE .. WITHSCORES,
 * LRANGE, TSRANGEBYTIME), appended to out. DOCRAFT_ENOTFOUND for a nil
 * (the key is gone), DOCRAFT_EINVAL for a Redis error reply,
 * DOCRAFT_ECORRUPT for a reply that does not decode or fit the type;
 * docraft_errmsg() says why. Pure (any thread). */
int redis_view_value(const char *type, const void *reply, size_t len, struct buf *out);

/* Generic master call, blocking: method with msg; on success the reply
 * bytes are appended to reply. */
int client_master_call(docraft_client *c, uint16_t method, const ProtobufCMessage *msg,
		       struct buf *reply);
/* Generic tablet call, blocking: method with msg (whose tablet_id field is
 * *tablet_id_field, set by the call) to the leader of tablet_id of table,
 * or to replica when not NULL (one attempt per retry, no redirects). */
int client_tablet_call(docraft_client *c, const char *table, const char *tablet_id,
		       const char *replica, uint16_t method, ProtobufCMessage *msg,
		       char **tablet_id_field, struct buf *reply);

/* ---- results ---- */

struct docraft_schema {
	struct schema s;
};

struct result_cell {
	bool present;
	docraft_value v;
	docraft_value *keys, *vals;
	size_t n;
};

struct result_col {
	char *name;
	uint8_t kind, type, elem_type, value_type;
	char type_name[64];
};

/* Where a scan continues (copied into every result that may have more). */
struct scan_state {
	char *table;
	uint8_t *tmpl; /* packed ScanRequest: keys, bounds, reverse */
	size_t tmpl_len;
	bool whole_table;
	uint32_t cursor; /* a hash inside the tablet being scanned */
	uint8_t *paging;
	size_t paging_len;
	uint64_t read_ht;
	uint64_t limit;
	uint32_t page_size;
	/* Read restart (scan.c): a scan of the whole table at a
	 * read time it did not get from the caller; origin: the partition
	 * start of the tablet whose leader chose read_ht. */
	bool restartable;
	uint32_t origin;
};

struct docraft_result {
	struct arena arena;
	struct result_col *cols;
	size_t ncols, nkeys;
	struct result_cell *cells; /* nrows * ncols */
	size_t nrows, caprows;
	uint64_t read_ht;
	bool has_more;
	struct scan_state *scan; /* when has_more */
	/* redis.c (issue 17), in arena: docraft_redis_async's replies, or
	 * docraft_redis_tablets_async's tablets. */
	docraft_bytes *replies;
	size_t nreplies;
	docraft_redis_tablet *rtablets;
	size_t nrtablets;
};

docraft_result *result_new(const struct schema *s);
/* Appends a decoded row. */
int result_add_row(docraft_result *r, const Docraft__Row *row, char *errmsg);

/* ---- ops ---- */

struct op_col {
	char *name;
	bool is_collection;
	docraft_value value;
	docraft_value *keys, *vals;
	size_t n;
};

/* A condition of a conditional write (docraft_op_if) on the op's row. */
struct op_cond {
	char *name;
	bool has_value;         /* false: "the column has no live value" */
	docraft_value value;    /* with has_value (bytes in the op's arena) */
};

struct docraft_op {
	int kind; /* Docraft__WriteOp__Kind */
	docraft_value *key;
	size_t nkey;
	struct op_col *cols;
	size_t ncols, capcols;
	struct op_cond *conds;
	size_t nconds, capconds;
	bool has_ttl;
	int64_t ttl_ms;
	struct arena arena;
};

#endif
