/* The RPC server's half of rpc.h: options, limits and their flags, calls
 * and answers, decoding requests under a budget. A section of rpc.h,
 * which says how the server works with the client and the loop (async
 * rules, coalesced writes, threading); include rpc/rpc.h, not this file.
 * Implemented in server.c (connections, calls, answers), options.c
 * (defaults, checks, flags) and codec.c (rpc_unpack). */
#ifndef DOCRAFT_RPC_SERVER_H
#define DOCRAFT_RPC_SERVER_H

#ifndef DOCRAFT_RPC_RPC_H
#error "include rpc/rpc.h, of which rpc/server.h is a section"
#endif

#define RPC_DEFAULT_MAX_INFLIGHT 10000
#define RPC_DEFAULT_MAX_CONNECTIONS 10000
#define RPC_DEFAULT_MAX_CONNECTIONS_PER_IP 1000
#define RPC_DEFAULT_IDLE_TIMEOUT_MS (300u * 1000)
#define RPC_DEFAULT_MAX_QUEUED_BYTES (32u << 20)
#define RPC_DEFAULT_SLOW_READER_TIMEOUT_MS 30000
#define RPC_DEFAULT_MAX_INFLIGHT_BYTES (256u << 20)
/* Decode budget: protobuf-c may allocate at most this many bytes to unpack
 * a payload of len bytes (rpc_unpack): 32 times len plus 1 MiB, at most
 * 256 MiB. Measured (docs/reliability.md): a WriteRequest of one-column
 * ops with an int key decodes to 19x its size, of key-only deletes to 24x,
 * of empty ops to 66x. */
#define RPC_DECODE_BUDGET_MAX ((size_t)256 << 20)
#define RPC_DECODE_BUDGET(len)                                                   \
	((size_t)(len) < (RPC_DECODE_BUDGET_MAX - ((size_t)1 << 20)) / 32         \
		 ? (size_t)(len) * 32 + ((size_t)1 << 20)                         \
		 : RPC_DECODE_BUDGET_MAX)

struct rpc_server_options {
	/* Largest frame received or sent, header included
	 * (RPC_FRAME_MIN_MAX.., default RPC_FRAME_DEFAULT_MAX). A larger
	 * request is answered TOO_BIG and its connection closed; a larger
	 * reply is replaced by a TOO_BIG error. */
	uint32_t max_frame;
	/* Calls per connection handed to handlers and not yet answered
	 * (>= 1, default RPC_DEFAULT_MAX_INFLIGHT); beyond it, requests are
	 * answered SERVICE_BUSY without reaching a handler. */
	uint32_t max_inflight;
	/* Connections open at once, in total and from one source IP address
	 * (>= 1; defaults RPC_DEFAULT_MAX_CONNECTIONS{,_PER_IP}). A connection
	 * beyond either is closed at once, without reading it. */
	uint32_t max_connections;
	uint32_t max_connections_per_ip;
	/* A connection with no call in flight, no answer queued and no byte
	 * received for this long is closed (0: never; default
	 * RPC_DEFAULT_IDLE_TIMEOUT_MS). Checked every idle_timeout_ms / 4 (at
	 * most every second), so the close comes up to a quarter later. */
	uint32_t idle_timeout_ms;
	/* Answers queued on one connection (ours and libuv's) beyond which the
	 * server stops reading that connection's requests, until its peer has
	 * read them down to half (>= 1; default RPC_DEFAULT_MAX_QUEUED_BYTES).
	 * A connection that stays stopped so for slow_reader_timeout_ms (>= 1)
	 * is closed, and so is one whose queue passes four times max_frame
	 * (at least 64 MiB: answers to calls already in flight). */
	uint32_t max_queued_bytes;
	uint32_t slow_reader_timeout_ms;
	/* Request bytes of the calls handed to handlers and not yet answered,
	 * over every connection (>= max_frame; default
	 * RPC_DEFAULT_MAX_INFLIGHT_BYTES); a request that would pass it is
	 * answered SERVICE_BUSY without reaching a handler. Bytes of frames
	 * still arriving (a header read, its payload not yet) count against
	 * the same limit: a connection whose partial frame would pass it is
	 * closed (partial_closed), so peers that start large frames and never
	 * finish them cannot hold more memory than this between them. */
	uint64_t max_inflight_bytes;
};

struct rpc_server_stats {
	uint64_t connections;    /* accepted */
	uint64_t calls;          /* requests received */
	uint64_t replies;        /* answers written (errors included) */
	uint64_t abandoned;      /* calls whose connection closed before the answer */
	uint64_t unknown_method; /* answered INVALID_ARGUMENT "unknown method" */
	uint64_t busy;           /* answered SERVICE_BUSY */
	uint64_t malformed;      /* connections closed for a malformed frame */
	uint64_t too_big;        /* connections closed for an oversized frame */
	uint64_t frames_sent;    /* response frames handed to the socket */
	uint64_t writes;         /* uv_write calls carrying them (writes <= frames_sent) */
	uint64_t refused;        /* connections closed at once: max_connections{,_per_ip} */
	uint64_t idle_closed;    /* connections closed after idle_timeout_ms */
	uint64_t slow_closed;    /* connections closed for not reading their answers */
	uint64_t paused;         /* times a connection's reading stopped: its answers piled up */
	uint64_t busy_bytes;     /* of busy: max_inflight_bytes */
	uint64_t over_budget;    /* requests answered TOO_BIG by rpc_call_decode's budget */
	uint32_t open;           /* connections open now */
	uint64_t inflight_bytes; /* request bytes of calls not yet answered, now */
	uint64_t partial_bytes;  /* bytes of frames still arriving, now */
	uint64_t partial_closed; /* connections closed: their partial frame passed
				    max_inflight_bytes (with inflight_bytes) */
	uint64_t bytes_in;       /* bytes read from RPC connections */
	uint64_t bytes_out;      /* bytes of response frames queued to them */
};

/* One registered method's calls (rpc_server_method_stats). Calls whose
 * connection closed before the answer are not counted (stats.abandoned). */
struct rpc_method_stats {
	uint16_t method;
	uint64_t calls;         /* answered */
	uint64_t errors;        /* of them, answered with an error status */
	struct lathist latency; /* from the request's arrival to its answer */
};

struct rpc_server;
struct rpc_sconn;
struct rpc_method_entry;

/* One request being handled. Allocated by the server, handed to the
 * handler, freed by the answer (rpc_reply*). */
struct rpc_call {
	void *data; /* free for the handler */

	/* Read-only. */
	uint16_t method;
	uint64_t call_id;
	const uint8_t *request; /* the request payload (NULL if empty), valid until answered */
	size_t request_len;
	uint32_t budget_ms; /* the caller's time budget when it sent the call; 0 = none */
	uint64_t deadline;  /* uv_now() by which the caller gives up; 0 = none */
	char peer[RPC_ADDRESS_MAX + 1]; /* "ip:port" of the caller ("" if unknown) */

	/* Private. */
	uint64_t start_ns;      /* uv_hrtime() at arrival (method latency) */
	struct rpc_sconn *conn; /* NULL once the connection is gone */
	struct rpc_call *prev, *next;
	uint8_t *payload; /* owns request */
};

/* Receives a request for a registered method. Called on the loop thread;
 * arg is the registration's. The handler owns call until it answers. */
typedef void (*rpc_handler_cb)(void *arg, struct rpc_call *call);
/* The server's memory may be released from here on. */
typedef void (*rpc_server_close_cb)(struct rpc_server *srv);

struct rpc_server {
	void *data; /* free for the owner */

	/* Private. */
	uv_loop_t *loop;
	struct listener *l;
	struct rpc_server_options opts;
	struct rpc_method_entry *methods; /* sorted by method */
	size_t n_methods, cap_methods;
	struct rpc_sconn *conns;
	struct ip_counts per_ip; /* open connections by source address */
	uint8_t *rbuf; /* one read buffer, shared by every connection */
	uv_timer_t sweep; /* idle and slow-reader connections */
	struct rpc_flusher flush; /* connections with frames queued, not yet written */
	unsigned n_handles; /* handles not yet closed */
	bool closing;
	rpc_server_close_cb close_cb;
	struct rpc_server_stats stats;
};

/* Initializes srv (caller memory) and makes it the LISTENER_RPC handler of
 * l, which must run on loop. METHOD_PING is registered (echo, see
 * proto/rpc.proto). Options are the defaults (rpc_server_configure).
 * DOCRAFT_EINVAL with errmsg if the listener refuses; then nothing is left
 * to close. Otherwise srv must be closed with rpc_server_close, before l. */
int rpc_server_init(struct rpc_server *srv, uv_loop_t *loop, struct listener *l, char *errmsg);

void rpc_server_options_default(struct rpc_server_options *o);
/* Replaces the options; max_frame applies to connections accepted
 * afterwards and to every answer sent afterwards. DOCRAFT_EINVAL if out of
 * range (nothing changed). */
int rpc_server_configure(struct rpc_server *srv, const struct rpc_server_options *o,
			 char *errmsg);

/* Routes requests for method (1..65535) to handler(arg, call).
 * DOCRAFT_EINVAL for method 0 or a method already registered (METHOD_PING
 * included). Not while closing. */
int rpc_server_register(struct rpc_server *srv, uint16_t method, rpc_handler_cb handler,
			void *arg, char *errmsg);

/* Answers call with a success status and payload (copied; len may be 0).
 * Frees call. Dropped if the connection is gone. If the frame would exceed
 * max_frame, a TOO_BIG error is sent instead (and logged). */
void rpc_reply(struct rpc_call *call, const void *payload, size_t len);
/* The same with msg packed as the payload. */
void rpc_reply_message(struct rpc_call *call, const ProtobufCMessage *msg);
/* Answers with an error: code is a DOCRAFT_E* code other than DOCRAFT_OK;
 * message (may be NULL) says why; for DOCRAFT_ENOTLEADER, leader_address
 * (may be NULL: unknown) and leader_id (0: unknown) name the leader.
 * Strings are copied. Frees call. */
void rpc_reply_error(struct rpc_call *call, int code, const char *message,
		     const char *leader_address, uint64_t leader_id);
/* rpc_reply_error without a leader hint, message formatted (truncated to
 * DOCRAFT_ERRMSG_SIZE). */
void rpc_reply_errorf(struct rpc_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* True once the caller can no longer receive the answer (its connection
 * closed, or the server is closing). The handler must still answer. */
bool rpc_call_abandoned(const struct rpc_call *call);

/* Unregisters from the listener, closes every connection (calls being
 * handled become abandoned and stay valid until answered) and calls
 * cb(srv) once every handle is closed, never synchronously. Must be called
 * once, before the listener is closed. */
void rpc_server_close(struct rpc_server *srv, rpc_server_close_cb cb);

void rpc_server_get_stats(const struct rpc_server *srv, struct rpc_server_stats *out);

/* Copies the stats of the first cap registered methods, by method number,
 * into out; returns how many methods are registered. Loop thread. */
size_t rpc_server_method_stats(const struct rpc_server *srv, struct rpc_method_stats *out,
			       size_t cap);

/* The limits above as server flags, shared by docraft-tserver and
 * docraft-master (names without "--"): max-connections,
 * max-connections-per-ip (also the listener's accept-stage cap),
 * idle-timeout-s (0: never), max-queued-mb, slow-reader-timeout-s,
 * max-inflight-mb. rpc_server_flags lists them for --help,
 * RPC_SERVER_N_FLAGS entries. */
struct rpc_server_flag {
	const char *name, *arg, *help;
};
#define RPC_SERVER_N_FLAGS 6
extern const struct rpc_server_flag rpc_server_flags[RPC_SERVER_N_FLAGS];
/* Applies flag name = value to o: 0; DOCRAFT_ENOTFOUND if name is not one
 * of them (o unchanged, errmsg untouched); DOCRAFT_EINVAL with errmsg for
 * a value out of range. */
int rpc_server_options_set(struct rpc_server_options *o, const char *name, const char *value,
			   char *errmsg);

/* Decoding requests under a memory budget. protobuf-c allocates every
 * element of a repeated field on its own, so a few bytes on the wire can
 * cost a hundred in memory: a 16 MiB request of empty sub-messages would
 * take over 1 GiB. Every request is unpacked through these, which give
 * protobuf-c an allocator that fails once RPC_DECODE_BUDGET(len) bytes are
 * taken.
 *
 * rpc_unpack: *out is the message (free it with the generated
 * *__free_unpacked(m, NULL) or protobuf_c_message_free_unpacked(m, NULL):
 * the memory is plain malloc'd), or NULL with DOCRAFT_EINVAL (does not
 * decode as d) or DOCRAFT_ETOOBIG (over the budget), errmsg saying which.
 * data may be NULL when len is 0. Any thread.
 *
 * rpc_call_decode: the same for call's request; on failure it answers call
 * with that code (INVALID_ARGUMENT "malformed X" or TOO_BIG) and returns
 * NULL. Loop thread, from a handler that still owns call. */
int rpc_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
	       ProtobufCMessage **out, char *errmsg);
void *rpc_call_decode(struct rpc_call *call, const ProtobufCMessageDescriptor *d);

#endif
