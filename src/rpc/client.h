/* The RPC client's half of rpc.h: options, calls and their outcomes. A
 * section of rpc.h, which says how the client works with the server and
 * the loop (async rules, coalesced writes, threading); include rpc/rpc.h,
 * not this file. Implemented in client.c (connections, calls, deadlines,
 * backoff), pending.c (its call indexes) and options.c (defaults,
 * checks). */
#ifndef DOCRAFT_RPC_CLIENT_H
#define DOCRAFT_RPC_CLIENT_H

#ifndef DOCRAFT_RPC_RPC_H
#error "include rpc/rpc.h, of which rpc/client.h is a section"
#endif

#define RPC_DEFAULT_CONNECT_TIMEOUT_MS 3000
#define RPC_DEFAULT_BACKOFF_MIN_MS 50
#define RPC_DEFAULT_BACKOFF_MAX_MS 5000

struct rpc_client_options {
	/* Largest frame sent or received, header included (default
	 * RPC_FRAME_DEFAULT_MAX). A larger request fails synchronously with
	 * DOCRAFT_ETOOBIG; a larger reply fails its call with
	 * DOCRAFT_ETOOBIG and its connection (other calls: UNAVAILABLE). */
	uint32_t max_frame;
	/* A connection not established within this time fails (>= 1). */
	uint32_t connect_timeout_ms;
	/* After a failed connection (connect error, or lost before its first
	 * response), no new one is attempted to that address for a delay
	 * growing from backoff_min_ms to backoff_max_ms (doubling, jittered
	 * down by up to half); calls meanwhile fail fast with UNAVAILABLE. A
	 * connection that worked and is then lost is retried at once. */
	uint32_t backoff_min_ms;
	uint32_t backoff_max_ms;
};

struct rpc_client_stats {
	uint64_t calls;            /* accepted by rpc_call */
	uint64_t connects;         /* connection attempts */
	uint64_t connect_failures; /* attempts that failed before connecting */
	uint64_t disconnects;      /* established connections lost or closed */
	uint64_t timeouts;         /* calls failed TIMED_OUT */
	uint64_t fail_fast;        /* calls failed at once: address in backoff */
	uint64_t late_replies;     /* responses to no pending call (ignored) */
	uint64_t frames_sent;      /* request frames handed to the socket */
	uint64_t writes;           /* uv_write calls carrying them (and preambles) */
};

/* The outcome of a call, valid only during its callback. */
struct rpc_result {
	int status;                 /* DOCRAFT_OK or a DOCRAFT_E* code */
	const char *message;        /* never NULL; "" on success */
	const char *leader_address; /* never NULL; "" when not known */
	uint64_t leader_id;         /* 0 when not known */
	const uint8_t *reply;       /* the reply payload on success, else NULL */
	size_t reply_len;
	bool sent; /* false: the request certainly never reached the server */
};

struct rpc_client;
struct rpc_call_req;
struct rpc_peer;
struct rpc_cconn;

typedef void (*rpc_call_cb)(struct rpc_call_req *req, const struct rpc_result *res);
/* The client's memory may be released from here on. */
typedef void (*rpc_client_close_cb)(struct rpc_client *cl);

/* One outgoing call; caller memory that must stay valid until its callback
 * runs, and may be reused or freed from the callback on. */
struct rpc_call_req {
	void *data; /* free for the caller */

	/* Private. */
	struct rpc_client *cl;
	struct rpc_cconn *conn; /* connection it was sent on, NULL if none */
	struct rpc_call_req *prev, *next; /* in conn->calls or cl->done */
	struct rpc_call_req *id_next;     /* in the call id table */
	size_t heap_index;                /* in the deadline heap, or SIZE_MAX */
	uint64_t id;
	uint64_t deadline;
	uint32_t timeout_ms;
	uint16_t method;
	rpc_call_cb cb;
	int status; /* outcome, once queued in cl->done */
	bool sent;
	char address[RPC_ADDRESS_MAX + 1];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

#define RPC_PEER_BUCKETS 64

struct rpc_client {
	void *data; /* free for the owner */

	/* Private. */
	uv_loop_t *loop;
	struct rpc_client_options opts;
	struct rpc_peer *peers[RPC_PEER_BUCKETS]; /* by address, kept until close */
	struct rpc_call_req **ids;                /* pending calls by id */
	size_t ids_mask, n_ids;
	struct rpc_call_req **heap; /* pending calls by deadline */
	size_t heap_len, heap_cap;
	struct rpc_call_req *done, *done_tail; /* failed, callback not yet run */
	uv_timer_t deadline_timer;
	uv_timer_t defer_timer;
	struct rpc_flusher flush; /* connected ones with frames queued, not yet written */
	uint64_t next_id;
	uint64_t rand;
	uint8_t *rbuf; /* one read buffer, shared by every connection */
	unsigned n_handles;
	bool closing;
	rpc_client_close_cb close_cb;
	struct rpc_client_stats stats;
};

/* Initializes cl (caller memory) on loop with the default options. Always
 * succeeds (returns 0); cl must be closed with rpc_client_close. */
int rpc_client_init(struct rpc_client *cl, uv_loop_t *loop);

void rpc_client_options_default(struct rpc_client_options *o);
/* Replaces the options; max_frame applies to requests sent and connections
 * opened afterwards. DOCRAFT_EINVAL if out of range (nothing changed). */
int rpc_client_configure(struct rpc_client *cl, const struct rpc_client_options *o,
			 char *errmsg);

/* Calls method at address ("a.b.c.d:port") with the request payload
 * (copied before returning; len may be 0) and a deadline of timeout_ms
 * (>= 1) from now, also sent to the server as its time budget. cb(req,
 * result) runs exactly once, from the loop, never inside rpc_call.
 *
 * Synchronous failures (cb is never called): DOCRAFT_EINVAL (bad address,
 * method 0, timeout 0), DOCRAFT_ETOOBIG (frame larger than max_frame),
 * DOCRAFT_ECLOSED (client closing); errmsg (may be NULL) says why. */
int rpc_call(struct rpc_client *cl, const char *address, uint16_t method, const void *request,
	     size_t len, uint32_t timeout_ms, struct rpc_call_req *req, rpc_call_cb cb,
	     char *errmsg);
/* The same with msg packed as the request payload. */
int rpc_call_message(struct rpc_client *cl, const char *address, uint16_t method,
		     const ProtobufCMessage *msg, uint32_t timeout_ms, struct rpc_call_req *req,
		     rpc_call_cb cb, char *errmsg);

/* Fails every pending call with DOCRAFT_ECLOSED (callbacks run from the
 * loop, all before cb), closes every connection and calls cb(cl) once
 * every handle is closed, never synchronously. Later rpc_call fail with
 * DOCRAFT_ECLOSED. Must be called once. */
void rpc_client_close(struct rpc_client *cl, rpc_client_close_cb cb);

void rpc_client_get_stats(const struct rpc_client *cl, struct rpc_client_stats *out);

#endif
