/* RPC on libuv: server connections, the connection-sharing client.
 *
 * Design note.
 *
 * Wire. A client connects to a server's one port, sends the listener
 * preamble of kind LISTENER_RPC (no tablet id), then request frames; the
 * server answers with response frames carrying the request's call id and
 * method (rpc_frame.h for the 22-byte header). Responses come in any order:
 * many calls are in flight per connection and are matched by call id. A
 * response's status is a DOCRAFT_E* code; when it is not DOCRAFT_OK the
 * payload is an ErrorInfo (proto/rpc.proto) with the message and, for
 * NOT_LEADER, the leader hint. The status codes are the error.h codes
 * themselves; the Status enum of rpc.proto mirrors them for other
 * languages, checked below at compile time.
 *
 * Server. Each accepted connection (struct rpc_sconn) reads into one
 * server-wide buffer (single thread: a read callback consumes its buffer
 * before the next read), decodes frames, and for each request allocates a
 * struct rpc_call that owns the request bytes and is linked into the
 * connection's list of calls in flight. The handler owns the call until it
 * answers; the answer unlinks and frees it. When the connection closes
 * (EOF, error, malformed frame, server closing), every call still in its
 * list is detached (call->conn = NULL): an answer to a detached call only
 * frees it. So a call never points at freed memory, without reference
 * counts: the connection, which dies first, cuts the links to itself.
 * Answers are queued on their connection and written in batches (see
 * Output below). Error handling: unknown
 * method: INVALID_ARGUMENT "unknown method N"; more than max_inflight calls
 * on one connection: SERVICE_BUSY; a frame that does not decode: the
 * connection is closed (debug log), except an oversized request with a
 * sound header, which is answered TOO_BIG first (reading stops; the close
 * follows the write). A connection whose peer stops reading is closed once
 * its queued output (ours and libuv's) exceeds four maximum frames (at
 * least 64 MiB).
 *
 * Client. Addresses map to a struct rpc_peer (kept until the client
 * closes: it remembers the backoff), which has at most one connection
 * (struct rpc_cconn) at a time, shared by every caller. The first call to
 * an address opens it: uv_tcp_connect; the preamble and the requests are
 * queued meanwhile and written together once the connection is made.
 * Every pending call is in three places: the client's id table (to match
 * responses), the deadline heap (one timer for all deadlines, armed at the
 * earliest), and its connection's list (to fail them all when it breaks).
 * A call leaves all three before its callback runs. A response for an id
 * no longer in the table (the call timed out) is counted and dropped.
 *
 * Failures found inside an API call (rpc_call's write fails, the address is
 * in backoff, the client closes) must not run callbacks re-entrantly, so
 * such calls are queued on cl->done and completed by a zero-delay timer;
 * all connection failures go this way too, for one simple path. Replies and
 * timeouts run their callbacks directly from libuv callbacks, where
 * re-entrance is harmless: loops re-check their state after each callback
 * (a callback may call rpc_call or even rpc_client_close).
 *
 * Backoff: a connection that fails before its first response (connect
 * refused or timed out, preamble rejected) counts as a failure of its
 * address: no new attempt for min(max, min * 2^(failures-1)) ms, jittered
 * down by up to half, and calls meanwhile fail fast with UNAVAILABLE. A
 * connection that had worked is retried at once when lost.
 *
 * Output. Every frame (a response, a request, the client's preamble) is
 * one allocation, struct wreq: header and payload, with a uv_write_t and
 * a next link. Queuing a frame appends it to its connection's output
 * queue (struct outq) and puts the connection on its owner's dirty list
 * (the server's, or the client's once connected); nothing is written
 * then. The owner's check handle (flusher) writes every dirty
 * connection's queue in order, cut into batches of at most
 * FLUSH_MAX_FRAMES frames and FLUSH_MAX_BYTES bytes (a larger frame goes
 * alone): one uv_write (a writev) per batch, on the uv_write_t of the
 * batch's first frame, the batch chained by next; the write callback
 * frees the chain. So a server answering 16 calls of one read in one
 * turn does one write(2), not 16. Why a check handle plus an idle
 * handle: libuv runs timers, idle, prepare, then polls for I/O, then
 * check handles; the flusher is started with an idle handle (kick)
 * whenever a connection becomes dirty, and an active idle handle makes
 * the poll non-blocking, so frames queued from a timer, idle or prepare
 * callback (the tablet layer answers from uv_prepare) are written in
 * the same turn's check phase without waiting for I/O, those queued
 * from I/O callbacks in the check phase right after them, and those
 * queued from check or close callbacks at the next turn, again without
 * blocking. Both handles stop once no connection is dirty. Frames never
 * overtake each other: the queue is FIFO and libuv keeps its writes in
 * order. Closing a server connection first writes what is queued (as
 * the direct writes did: libuv writes what the socket takes at once,
 * and the close cancels the rest); a client connection's failure drops
 * its queue, its calls failing as before. A uv_write error fails the
 * connection as a failed write callback does. The TOO_BIG answer
 * before a close ("last") marks its connection, whose final batch then
 * closes it from its write callback; nothing is queued after it
 * (draining).
 *
 * Memory: connections, calls and frames are malloc'd and freed in close
 * or write callbacks (queued frames when their connection closes);
 * struct rpc_server, rpc_client and rpc_call_req are caller memory
 * (libuv's handle/request split). */
#include "rpc/rpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "net/listener.h"
#include "rpc.pb-c.h"

#define READ_BUF_SIZE (64u << 10)
#define WRITE_QUEUE_MIN (64u << 20)
#define FLUSH_MAX_FRAMES 64            /* frames per uv_write */
#define FLUSH_MAX_BYTES (1u << 20)     /* bytes per uv_write, unless one frame is larger */

/* The wire status codes are the error.h codes (see proto/rpc.proto). */
#define SAME_CODE(status, code) \
	_Static_assert((int)DOCRAFT__STATUS__STATUS_##status == (int)DOCRAFT_##code, #status)
SAME_CODE(OK, OK);
SAME_CODE(INVALID_ARGUMENT, EINVAL);
SAME_CODE(NOT_FOUND, ENOTFOUND);
SAME_CODE(CORRUPT, ECORRUPT);
SAME_CODE(IO_ERROR, EIO);
SAME_CODE(NO_SPACE, ENOSPC);
SAME_CODE(NO_MEMORY, ENOMEM);
SAME_CODE(SNAPSHOT_TOO_OLD, ETOOOLD);
SAME_CODE(CLOCK_SKEW, ECLOCKSKEW);
SAME_CODE(TOO_BIG, ETOOBIG);
SAME_CODE(CLOSED, ECLOSED);
SAME_CODE(NOT_LEADER, ENOTLEADER);
SAME_CODE(LEADERSHIP_LOST, ELEADERLOST);
SAME_CODE(UNAVAILABLE, EUNAVAILABLE);
SAME_CODE(SERVICE_BUSY, EBUSY);
SAME_CODE(TIMED_OUT, ETIMEDOUT);
SAME_CODE(TABLET_NOT_FOUND, ETABLETNOTFOUND);
SAME_CODE(TABLE_NOT_FOUND, ETABLENOTFOUND);
SAME_CODE(CONDITION, ECONDITION);
SAME_CODE(WRONG_TABLET, EWRONGTABLET);
/* A new error.h code? Add it to enum Status in proto/rpc.proto and above. */
_Static_assert(DOCRAFT_ERROR_MAX == 20, "error.h and rpc.proto Status out of sync");
_Static_assert((int)DOCRAFT__METHOD__METHOD_PING == 1, "method");

/* ---- shared helpers ---- */

static void *xcalloc(size_t n)
{
	void *p = calloc(1, n);
	if (p == NULL)
		PANIC("out of memory (%zu bytes)", n);
	return p;
}

/* One frame, queued or being written: header and payload in one
 * allocation. req is used when it is the first of a batch. */
struct wreq {
	uv_write_t req;
	struct wreq *next; /* in an output queue, then in its batch */
	size_t len;
	uint8_t data[];
};

/* A connection's frames not yet handed to libuv, in order. */
struct outq {
	struct wreq *head, *tail;
	size_t bytes;
};

/* Allocates a write of the frame hdr (hdr->len ignored) whose payload is
 * msg packed (len is then its packed size), or len bytes at p. */
static struct wreq *frame_alloc(const struct rpc_frame *hdr, const ProtobufCMessage *msg,
				const void *p, size_t len)
{
	struct rpc_frame f = *hdr;
	struct wreq *w;

	w = malloc(sizeof *w + RPC_FRAME_HEADER_SIZE + len);
	if (w == NULL)
		PANIC("out of memory (%zu bytes)", len);
	f.payload = NULL;
	f.len = len;
	rpc_frame_encode_header(w->data, &f);
	if (msg != NULL)
		protobuf_c_message_pack(msg, w->data + RPC_FRAME_HEADER_SIZE);
	else if (len > 0)
		memcpy(w->data + RPC_FRAME_HEADER_SIZE, p, len);
	w->len = RPC_FRAME_HEADER_SIZE + len;
	return w;
}

static void outq_push(struct outq *q, struct wreq *w)
{
	w->next = NULL;
	if (q->tail != NULL)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	q->bytes += w->len;
}

static void wreq_free_chain(struct wreq *w)
{
	while (w != NULL) {
		struct wreq *next = w->next;
		free(w);
		w = next;
	}
}

/* Drops every queued frame. */
static void outq_clear(struct outq *q)
{
	wreq_free_chain(q->head);
	q->head = q->tail = NULL;
	q->bytes = 0;
}

/* Frees the batch a write callback's req starts. */
static void batch_free(uv_write_t *req)
{
	wreq_free_chain((struct wreq *)req); /* req is the first member */
}

/* Takes the next batch off the (non-empty) q: its buffers into bufs, *n
 * of them; returns its first frame, the batch chained by next. */
static struct wreq *outq_take(struct outq *q, uv_buf_t *bufs, unsigned *n)
{
	struct wreq *first = q->head, *w = first, *last = NULL;
	size_t bytes = 0;
	unsigned k = 0;

	while (w != NULL && k < FLUSH_MAX_FRAMES &&
	       (k == 0 || bytes + w->len <= FLUSH_MAX_BYTES)) {
		bufs[k++] = uv_buf_init((char *)w->data, (unsigned)w->len);
		bytes += w->len;
		last = w;
		w = w->next;
	}
	last->next = NULL;
	q->head = w;
	if (w == NULL)
		q->tail = NULL;
	q->bytes -= bytes;
	*n = k;
	return first;
}

/* Hands all of q to libuv on s, in order, one uv_write per batch: cb for
 * each batch, last_cb for the final one. Counts uv_writes into *writes and
 * frames into *frames. Returns 0, or uv_write's error (that batch freed,
 * later frames left in q). */
static int outq_flush(struct outq *q, uv_stream_t *s, uv_write_cb cb, uv_write_cb last_cb,
		      uint64_t *writes, uint64_t *frames)
{
	while (q->head != NULL) {
		uv_buf_t bufs[FLUSH_MAX_FRAMES];
		unsigned n;
		struct wreq *first = outq_take(q, bufs, &n);
		int rv = uv_write(&first->req, s, bufs, n, q->head == NULL ? last_cb : cb);
		if (rv != 0) {
			wreq_free_chain(first);
			return rv;
		}
		(*writes)++;
		*frames += n;
	}
	return 0;
}

static void idle_noop_cb(uv_idle_t *h)
{
	(void)h;
}

#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* The dirty list of a server or a client (struct rpc_flusher, rpc.h). */
static void flusher_init(uv_loop_t *loop, struct rpc_flusher *f, void *owner)
{
	uv_check_init(loop, &f->check);
	uv_idle_init(loop, &f->kick);
	f->check.data = f->kick.data = owner;
	f->head = NULL;
}

/* Lists l (once) and makes sure cb runs this turn, or the next without
 * blocking. */
static void flusher_add(struct rpc_flusher *f, struct rpc_dirty_link *l, uv_check_cb cb)
{
	if (l->on)
		return;
	l->on = true;
	l->prev = NULL;
	l->next = f->head;
	if (f->head != NULL)
		f->head->prev = l;
	f->head = l;
	uv_check_start(&f->check, cb);
	uv_idle_start(&f->kick, idle_noop_cb);
}

static void flusher_remove(struct rpc_flusher *f, struct rpc_dirty_link *l)
{
	if (!l->on)
		return;
	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		f->head = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
	l->on = false;
}

/* For the check callback: the next listed connection (unlisted), or NULL
 * once none is left (the handles then stop). */
static struct rpc_dirty_link *flusher_take(struct rpc_flusher *f)
{
	struct rpc_dirty_link *l = f->head;
	if (l == NULL) {
		uv_check_stop(&f->check);
		uv_idle_stop(&f->kick);
		return NULL;
	}
	flusher_remove(f, l);
	return l;
}

static size_t payload_size(const ProtobufCMessage *msg, size_t len)
{
	return msg != NULL ? protobuf_c_message_get_packed_size(msg) : len;
}

static void format_address(const struct sockaddr_in *a, char *out)
{
	char ip[INET_ADDRSTRLEN];
	if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip) == NULL)
		strcpy(ip, "?");
	snprintf(out, RPC_ADDRESS_MAX + 1, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
}

static size_t write_queue_limit(uint32_t max_frame)
{
	uint64_t n = (uint64_t)max_frame * 4;
	return n < WRITE_QUEUE_MIN ? WRITE_QUEUE_MIN : (size_t)n;
}

/* ------------------------------------------------------------------------
 * Server
 * ------------------------------------------------------------------------ */

struct rpc_method_entry {
	uint16_t method;
	rpc_handler_cb cb;
	void *arg;
};

struct rpc_sconn {
	struct rpc_server *srv;
	struct rpc_sconn *prev, *next; /* in srv->conns until closed */
	uv_tcp_t *tcp;                 /* from the listener (listener_stream_free) */
	struct rpc_frame_decoder dec;
	struct rpc_call *calls; /* handed to handlers, not answered */
	uint32_t n_inflight;
	uint64_t inflight_bytes; /* their request bytes (in srv->stats.inflight_bytes) */
	uint64_t partial_bytes;  /* of the frame still arriving (in srv->stats.partial_bytes) */
	uint64_t last_active;    /* loop time of the last byte received or call answered */
	uint64_t paused_since;   /* loop time reading stopped for queued answers */
	bool paused;             /* reading stopped: too many answers queued */
	bool counted;            /* in srv->per_ip and stats.open */
	uint32_t ip;             /* source address (network order), 0 if unknown */
	struct outq out;                           /* answers not yet written */
	struct rpc_dirty_link dirty;               /* in srv->flush when queued */
	bool last_queued; /* the final answer is queued: close once written */
	bool draining;    /* a final answer is being written, then close */
	bool closing;
	char peer[RPC_ADDRESS_MAX + 1];
};

static void sconn_close(struct rpc_sconn *c);
static void sconn_write_cb(uv_write_t *req, int status);
static void sconn_last_write_cb(uv_write_t *req, int status);

static void server_flush_cb(uv_check_t *h);

/* Puts c on the server's dirty list (flushed this turn, or the next
 * without blocking). */
static void sconn_mark_dirty(struct rpc_sconn *c)
{
	if (!c->closing && !c->srv->closing)
		flusher_add(&c->srv->flush, &c->dirty, server_flush_cb);
}

/* Hands c's queued answers to libuv. A uv_write error closes c (when it
 * is not closing already) and drops what is left. */
static void sconn_flush(struct rpc_sconn *c)
{
	struct rpc_server *srv = c->srv;
	int rv;

	rv = outq_flush(&c->out, (uv_stream_t *)c->tcp, sconn_write_cb,
			c->last_queued ? sconn_last_write_cb : sconn_write_cb, &srv->stats.writes,
			&srv->stats.frames_sent);
	if (rv != 0) {
		outq_clear(&c->out);
		if (!c->closing) {
			LOG_DEBUG("rpc: write to %s: %s, closing", c->peer, uv_strerror(rv));
			sconn_close(c);
		}
	}
}

/* The check callback: flushes every dirty connection. */
static void server_flush_cb(uv_check_t *h)
{
	struct rpc_server *srv = h->data;
	struct rpc_dirty_link *l;

	while ((l = flusher_take(&srv->flush)) != NULL)
		sconn_flush(CONTAINER_OF(l, struct rpc_sconn, dirty));
}

static void server_maybe_closed(struct rpc_server *srv)
{
	if (!srv->closing || srv->n_handles > 0)
		return;
	free(srv->methods);
	srv->methods = NULL;
	free(srv->rbuf);
	srv->rbuf = NULL;
	ip_counts_free(&srv->per_ip);
	srv->close_cb(srv);
}

static void sconn_close_cb(uv_handle_t *h)
{
	struct rpc_sconn *c = h->data;
	struct rpc_server *srv = c->srv;

	listener_stream_free(h);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	rpc_frame_decoder_free(&c->dec);
	if (c->counted) {
		ip_counts_remove(&srv->per_ip, c->ip);
		srv->stats.open--;
	}
	free(c);
	srv->n_handles--;
	server_maybe_closed(srv);
}

/* Closes c and detaches its calls; idempotent. */
static void sconn_close(struct rpc_sconn *c)
{
	struct rpc_call *call;

	if (c->closing)
		return;
	c->closing = true;
	/* What is queued goes out as far as the socket takes it now; the
	 * close cancels the rest (the write callbacks free it). */
	flusher_remove(&c->srv->flush, &c->dirty);
	if (c->out.head != NULL)
		sconn_flush(c);
	while ((call = c->calls) != NULL) {
		c->calls = call->next;
		call->conn = NULL;
		call->prev = call->next = NULL;
		c->srv->stats.abandoned++;
	}
	c->n_inflight = 0;
	c->srv->stats.inflight_bytes -= c->inflight_bytes;
	c->inflight_bytes = 0;
	c->srv->stats.partial_bytes -= c->partial_bytes;
	c->partial_bytes = 0;
	uv_close((uv_handle_t *)c->tcp, sconn_close_cb);
}

static void sconn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void sconn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Answers queued on c, ours and libuv's. */
static size_t sconn_queued(struct rpc_sconn *c)
{
	return c->out.bytes + uv_stream_get_write_queue_size((uv_stream_t *)c->tcp);
}

/* Backpressure: stops reading c's requests while its answers pile up. */
static void sconn_pause(struct rpc_sconn *c)
{
	if (c->paused)
		return;
	c->paused = true;
	c->paused_since = uv_now(c->srv->loop);
	c->srv->stats.paused++;
	uv_read_stop((uv_stream_t *)c->tcp);
	LOG_DEBUG("rpc: %s does not read its replies (%zu bytes queued), reading paused",
		  c->peer, sconn_queued(c));
}

/* Reading again once the peer has read its answers down to half the limit. */
static void sconn_maybe_resume(struct rpc_sconn *c)
{
	int rv;

	if (!c->paused || c->closing || c->draining ||
	    sconn_queued(c) > c->srv->opts.max_queued_bytes / 2)
		return;
	c->paused = false;
	c->last_active = uv_now(c->srv->loop);
	rv = uv_read_start((uv_stream_t *)c->tcp, sconn_alloc_cb, sconn_read_cb);
	if (rv != 0) {
		LOG_DEBUG("rpc: read from %s: %s, closing", c->peer, uv_strerror(rv));
		sconn_close(c);
	}
}

static void sconn_write_cb(uv_write_t *req, int status)
{
	struct rpc_sconn *c = req->handle->data;
	batch_free(req);
	if (status != 0 && status != UV_ECANCELED && !c->closing) {
		LOG_DEBUG("rpc: write to %s: %s, closing", c->peer, uv_strerror(status));
		sconn_close(c);
		return;
	}
	sconn_maybe_resume(c);
}

static void sconn_last_write_cb(uv_write_t *req, int status)
{
	struct rpc_sconn *c = req->handle->data;
	(void)status;
	batch_free(req);
	sconn_close(c);
}

static void send_error(struct rpc_sconn *c, uint64_t id, uint16_t method, int code,
		       const char *message, const char *leader_address, uint64_t leader_id,
		       bool last);

/* Queues a response; last: close the connection once it is written. */
static void send_response(struct rpc_sconn *c, uint64_t id, uint16_t method, int status,
			  const ProtobufCMessage *msg, const void *p, size_t len, bool last)
{
	struct rpc_server *srv = c->srv;
	struct rpc_frame hdr = {.kind = RPC_FRAME_RESPONSE, .call_id = id, .method = method,
				.status = (uint16_t)status};
	size_t size = payload_size(msg, len);
	size_t queued;

	if (size > srv->opts.max_frame - RPC_FRAME_HEADER_SIZE) {
		char m[DOCRAFT_ERRMSG_SIZE];
		if (status == DOCRAFT_OK) {
			snprintf(m, sizeof m,
				 "reply to method %u of %zu bytes exceeds the maximum frame of %u "
				 "bytes",
				 method, size, srv->opts.max_frame);
			LOG_WARN("rpc: %s (to %s)", m, c->peer);
			send_error(c, id, method, DOCRAFT_ETOOBIG, m, NULL, 0, last);
			return;
		}
		msg = NULL; /* not even the error fits: the bare status */
		size = 0;
	}
	outq_push(&c->out, frame_alloc(&hdr, msg, p, size));
	if (last)
		c->last_queued = true;
	srv->stats.replies++;
	c->last_active = uv_now(srv->loop);
	queued = sconn_queued(c);
	if (queued > write_queue_limit(srv->opts.max_frame)) {
		LOG_WARN("rpc: %s does not read its replies (%zu bytes queued), closing", c->peer,
			 queued);
		srv->stats.slow_closed++;
		sconn_close(c);
		return;
	}
	if (queued > srv->opts.max_queued_bytes)
		sconn_pause(c);
	sconn_mark_dirty(c);
}

static void send_error(struct rpc_sconn *c, uint64_t id, uint16_t method, int code,
		       const char *message, const char *leader_address, uint64_t leader_id,
		       bool last)
{
	Docraft__ErrorInfo ei = DOCRAFT__ERROR_INFO__INIT;

	ei.code = code;
	ei.message = (char *)(message != NULL ? message : "");
	ei.leader_address = (char *)(leader_address != NULL ? leader_address : "");
	ei.leader_id = leader_id;
	send_response(c, id, method, code, &ei.base, NULL, 0, last);
}

/* Unlinks call from its connection; returns the connection if an answer can
 * still be written on it. */
static struct rpc_sconn *call_detach(struct rpc_call *call)
{
	struct rpc_sconn *c = call->conn;

	if (c == NULL)
		return NULL;
	if (call->prev != NULL)
		call->prev->next = call->next;
	else
		c->calls = call->next;
	if (call->next != NULL)
		call->next->prev = call->prev;
	call->conn = NULL;
	c->n_inflight--;
	c->inflight_bytes -= call->request_len;
	c->srv->stats.inflight_bytes -= call->request_len;
	return c->closing || c->draining ? NULL : c;
}

static void call_free(struct rpc_call *call)
{
	free(call->payload);
	free(call);
}

void rpc_reply(struct rpc_call *call, const void *payload, size_t len)
{
	struct rpc_sconn *c = call_detach(call);

	PRE(payload != NULL || len == 0);
	if (c != NULL)
		send_response(c, call->call_id, call->method, DOCRAFT_OK, NULL, payload, len,
			      false);
	call_free(call);
}

void rpc_reply_message(struct rpc_call *call, const ProtobufCMessage *msg)
{
	struct rpc_sconn *c = call_detach(call);

	PRE(msg != NULL);
	if (c != NULL)
		send_response(c, call->call_id, call->method, DOCRAFT_OK, msg, NULL, 0, false);
	call_free(call);
}

void rpc_reply_error(struct rpc_call *call, int code, const char *message,
		     const char *leader_address, uint64_t leader_id)
{
	struct rpc_sconn *c = call_detach(call);

	PRE(code > DOCRAFT_OK && code <= UINT16_MAX);
	if (c != NULL)
		send_error(c, call->call_id, call->method, code, message, leader_address,
			   leader_id, false);
	call_free(call);
}

void rpc_reply_errorf(struct rpc_call *call, int code, const char *fmt, ...)
{
	char m[DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	rpc_reply_error(call, code, m, NULL, 0);
}

bool rpc_call_abandoned(const struct rpc_call *call)
{
	return call->conn == NULL || call->conn->closing || call->conn->draining ||
	       call->conn->srv->closing;
}

static const struct rpc_method_entry *find_method(const struct rpc_server *srv, uint16_t method)
{
	size_t lo = 0, hi = srv->n_methods;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (srv->methods[mid].method == method)
			return &srv->methods[mid];
		if (srv->methods[mid].method < method)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A request frame arrived on c; f's payload passes to the call. */
static void dispatch(struct rpc_sconn *c, struct rpc_frame *f)
{
	struct rpc_server *srv = c->srv;
	const struct rpc_method_entry *m;
	struct rpc_call *call;

	srv->stats.calls++;
	call = xcalloc(sizeof *call);
	call->method = f->method;
	call->call_id = f->call_id;
	call->payload = f->payload;
	call->request = f->payload;
	call->request_len = f->len;
	call->budget_ms = f->budget_ms;
	call->deadline = f->budget_ms != 0 ? uv_now(srv->loop) + f->budget_ms : 0;
	memcpy(call->peer, c->peer, sizeof call->peer);
	call->conn = c;
	call->next = c->calls;
	if (c->calls != NULL)
		c->calls->prev = call;
	c->calls = call;
	c->n_inflight++;
	c->inflight_bytes += f->len;
	srv->stats.inflight_bytes += f->len;
	c->last_active = uv_now(srv->loop);

	m = find_method(srv, f->method);
	if (m == NULL) {
		srv->stats.unknown_method++;
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "unknown method %u", f->method);
		return;
	}
	if (c->n_inflight > srv->opts.max_inflight) {
		srv->stats.busy++;
		rpc_reply_errorf(call, DOCRAFT_EBUSY,
				 "server busy: %u calls in flight on this connection",
				 c->n_inflight - 1);
		return;
	}
	if (srv->stats.inflight_bytes > srv->opts.max_inflight_bytes) {
		srv->stats.busy++;
		srv->stats.busy_bytes++;
		rpc_reply_errorf(call, DOCRAFT_EBUSY,
				 "server busy: %" PRIu64 " request bytes in flight (limit %" PRIu64
				 ")",
				 srv->stats.inflight_bytes - f->len, srv->opts.max_inflight_bytes);
		return;
	}
	m->cb(m->arg, call);
}

/* The decoder rejected a frame from c. */
static void bad_frame(struct rpc_sconn *c, int rv)
{
	struct rpc_server *srv = c->srv;
	struct rpc_frame h;

	LOG_DEBUG("rpc: malformed frame from %s: %s, closing", c->peer,
		  rpc_frame_decoder_errmsg(&c->dec));
	if (rv == RPC_FRAME_ETOOBIG && rpc_frame_decoder_header(&c->dec, &h) &&
	    h.kind == RPC_FRAME_REQUEST) {
		/* A sound header, only too big: tell the caller why. */
		srv->stats.too_big++;
		c->draining = true;
		uv_read_stop((uv_stream_t *)c->tcp);
		send_error(c, h.call_id, h.method, DOCRAFT_ETOOBIG,
			   rpc_frame_decoder_errmsg(&c->dec), NULL, 0, true);
		return;
	}
	if (rv == RPC_FRAME_ETOOBIG)
		srv->stats.too_big++;
	else
		srv->stats.malformed++;
	sconn_close(c);
}

static void sconn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rpc_sconn *c = h->data;
	(void)suggested;
	buf->base = (char *)c->srv->rbuf;
	buf->len = READ_BUF_SIZE;
}

/* Accounts the bytes of c's frame still arriving (the decoder holds them)
 * and closes c when they would take the server past max_inflight_bytes. */
static void count_partial(struct rpc_sconn *c)
{
	struct rpc_server *srv = c->srv;
	uint64_t now = rpc_frame_decoder_pending(&c->dec);

	srv->stats.partial_bytes = srv->stats.partial_bytes - c->partial_bytes + now;
	c->partial_bytes = now;
	if (now == 0 ||
	    srv->stats.inflight_bytes + srv->stats.partial_bytes <= srv->opts.max_inflight_bytes)
		return;
	srv->stats.partial_closed++;
	if ((srv->stats.partial_closed & (srv->stats.partial_closed - 1)) == 0)
		LOG_WARN("rpc: closing %s: its frame in progress (%" PRIu64 " bytes) takes the "
			 "server past %" PRIu64 " request bytes (%" PRIu64 " closed so far)",
			 c->peer, now, srv->opts.max_inflight_bytes, srv->stats.partial_closed);
	sconn_close(c);
}

static void sconn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct rpc_sconn *c = s->data;
	const uint8_t *p = (const uint8_t *)buf->base;
	size_t n;

	if (c->closing || c->draining)
		return;
	if (nread < 0) {
		if (nread != UV_EOF)
			LOG_DEBUG("rpc: read from %s: %s, closing", c->peer,
				  uv_strerror((int)nread));
		else if (rpc_frame_decoder_eof(&c->dec) != RPC_FRAME_MORE)
			LOG_DEBUG("rpc: %s: %s", c->peer, rpc_frame_decoder_errmsg(&c->dec));
		sconn_close(c);
		return;
	}
	n = (size_t)nread;
	c->last_active = uv_now(c->srv->loop);
	/* A handler may close the connection or the server: re-check each time. */
	while (!c->closing && !c->draining) {
		struct rpc_frame f;
		int rv = rpc_frame_decoder_next(&c->dec, &p, &n, &f);
		if (rv == RPC_FRAME_MORE)
			break;
		if (rv != RPC_FRAME_READY) {
			bad_frame(c, rv);
			break;
		}
		if (f.kind != RPC_FRAME_REQUEST) {
			LOG_DEBUG("rpc: response frame from client %s, closing", c->peer);
			free(f.payload);
			c->srv->stats.malformed++;
			sconn_close(c);
			break;
		}
		dispatch(c, &f);
	}
	if (!c->closing && !c->draining)
		count_partial(c);
}

/* The listener's LISTENER_RPC handler: a new connection. */
static void on_rpc_connection(void *arg, uv_stream_t *stream, const char *tablet_id)
{
	struct rpc_server *srv = arg;
	struct rpc_sconn *c;
	struct sockaddr_storage ss;
	char peer[RPC_ADDRESS_MAX + 1] = "";
	uint32_t ip = 0;
	int len = sizeof ss;
	int rv;

	(void)tablet_id; /* RPC connections serve every tablet */
	if (uv_tcp_getpeername((uv_tcp_t *)stream, (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family == AF_INET) {
		format_address((const struct sockaddr_in *)&ss, peer);
		ip = ((const struct sockaddr_in *)&ss)->sin_addr.s_addr;
	}
	if (srv->stats.open >= srv->opts.max_connections ||
	    ip_counts_get(&srv->per_ip, ip) >= srv->opts.max_connections_per_ip) {
		srv->stats.refused++;
		/* Logged at 1, 2, 4, 8... refusals: a flood must not flood the log. */
		if ((srv->stats.refused & (srv->stats.refused - 1)) == 0)
			LOG_WARN("rpc: refusing connection from %s: %u open, %u from its address "
				 "(limits %u, %u per address; %" PRIu64 " refused so far)",
				 peer, srv->stats.open, ip_counts_get(&srv->per_ip, ip),
				 srv->opts.max_connections, srv->opts.max_connections_per_ip,
				 srv->stats.refused);
		listener_stream_close(stream);
		return;
	}
	c = xcalloc(sizeof *c);
	c->srv = srv;
	c->tcp = (uv_tcp_t *)stream;
	stream->data = c;
	rpc_frame_decoder_init(&c->dec, srv->opts.max_frame);
	memcpy(c->peer, peer, sizeof c->peer);
	c->ip = ip;
	c->counted = true;
	ip_counts_add(&srv->per_ip, ip);
	srv->stats.open++;
	c->last_active = uv_now(srv->loop);
	c->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = c;
	srv->conns = c;
	srv->n_handles++;
	srv->stats.connections++;
	uv_tcp_keepalive(c->tcp, 1, 60);
	rv = uv_read_start(stream, sconn_alloc_cb, sconn_read_cb);
	if (rv != 0) {
		LOG_DEBUG("rpc: read from %s: %s", c->peer, uv_strerror(rv));
		sconn_close(c);
		return;
	}
	LOG_DEBUG("rpc: connection from %s", c->peer);
}

/* METHOD_PING: echo seq and data. */
static void ping_handler(void *arg, struct rpc_call *call)
{
	Docraft__PingRequest *rq;
	Docraft__PingResponse rs = DOCRAFT__PING_RESPONSE__INIT;

	(void)arg;
	rq = rpc_call_decode(call, &docraft__ping_request__descriptor);
	if (rq == NULL)
		return;
	rs.seq = rq->seq;
	rs.data = rq->data;
	rpc_reply_message(call, &rs.base);
	docraft__ping_request__free_unpacked(rq, NULL);
}

void rpc_server_options_default(struct rpc_server_options *o)
{
	o->max_frame = RPC_FRAME_DEFAULT_MAX;
	o->max_inflight = RPC_DEFAULT_MAX_INFLIGHT;
	o->max_connections = RPC_DEFAULT_MAX_CONNECTIONS;
	o->max_connections_per_ip = RPC_DEFAULT_MAX_CONNECTIONS_PER_IP;
	o->idle_timeout_ms = RPC_DEFAULT_IDLE_TIMEOUT_MS;
	o->max_queued_bytes = RPC_DEFAULT_MAX_QUEUED_BYTES;
	o->slow_reader_timeout_ms = RPC_DEFAULT_SLOW_READER_TIMEOUT_MS;
	o->max_inflight_bytes = RPC_DEFAULT_MAX_INFLIGHT_BYTES;
}

/* How often the sweep looks for idle and slow-reader connections. */
static uint64_t sweep_interval(const struct rpc_server_options *o)
{
	uint64_t ms = o->slow_reader_timeout_ms;
	if (o->idle_timeout_ms != 0 && o->idle_timeout_ms < ms)
		ms = o->idle_timeout_ms;
	ms /= 4;
	return ms < 10 ? 10 : ms > 1000 ? 1000 : ms;
}

/* Closes connections idle for idle_timeout_ms and those whose reading has
 * been paused for slow_reader_timeout_ms. */
static void sweep_cb(uv_timer_t *t)
{
	struct rpc_server *srv = t->data;
	uint64_t now = uv_now(srv->loop);
	struct rpc_sconn *c, *next;

	for (c = srv->conns; c != NULL; c = next) {
		next = c->next; /* sconn_close keeps c listed until its close callback */
		if (c->closing || c->draining)
			continue;
		if (c->paused && now - c->paused_since >= srv->opts.slow_reader_timeout_ms) {
			LOG_WARN("rpc: %s has not read its replies for %u ms (%zu bytes queued), "
				 "closing",
				 c->peer, srv->opts.slow_reader_timeout_ms, sconn_queued(c));
			srv->stats.slow_closed++;
			sconn_close(c);
		} else if (srv->opts.idle_timeout_ms != 0 && c->n_inflight == 0 &&
			   sconn_queued(c) == 0 && now - c->last_active >= srv->opts.idle_timeout_ms) {
			LOG_DEBUG("rpc: %s idle for %u ms, closing", c->peer,
				  srv->opts.idle_timeout_ms);
			srv->stats.idle_closed++;
			sconn_close(c);
		}
	}
}

int rpc_server_configure(struct rpc_server *srv, const struct rpc_server_options *o,
			 char *errmsg)
{
	if (o->max_frame < RPC_FRAME_MIN_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "max_frame %u below %u", o->max_frame,
			       RPC_FRAME_MIN_MAX);
	if (o->max_inflight == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "max_inflight must be at least 1");
	if (o->max_connections == 0 || o->max_connections_per_ip == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "connection limits must be at least 1");
	if (o->max_queued_bytes == 0 || o->slow_reader_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "max_queued_bytes and slow_reader_timeout_ms must be at least 1");
	if (o->max_inflight_bytes < o->max_frame)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "max_inflight_bytes %" PRIu64 " below max_frame %u",
			       o->max_inflight_bytes, o->max_frame);
	srv->opts = *o;
	if (!srv->closing) {
		uint64_t ms = sweep_interval(o);
		uv_timer_start(&srv->sweep, sweep_cb, ms, ms);
	}
	return 0;
}

int rpc_server_init(struct rpc_server *srv, uv_loop_t *loop, struct listener *l, char *errmsg)
{
	int rv;

	PRE(srv != NULL && loop != NULL && l != NULL && listener_loop(l) == loop);
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	srv->l = l;
	rpc_server_options_default(&srv->opts);
	rv = rpc_server_register(srv, DOCRAFT__METHOD__METHOD_PING, ping_handler, NULL, errmsg);
	ASSERT(rv == 0);
	rv = listener_set_handler(l, LISTENER_RPC, on_rpc_connection, srv, errmsg);
	if (rv != 0) {
		free(srv->methods);
		return rv;
	}
	srv->rbuf = xcalloc(READ_BUF_SIZE);
	ip_counts_init(&srv->per_ip);
	uv_timer_init(loop, &srv->sweep);
	flusher_init(loop, &srv->flush, srv);
	srv->sweep.data = srv;
	srv->n_handles = 3;
	uv_timer_start(&srv->sweep, sweep_cb, sweep_interval(&srv->opts),
		       sweep_interval(&srv->opts));
	return 0;
}

int rpc_server_register(struct rpc_server *srv, uint16_t method, rpc_handler_cb handler,
			void *arg, char *errmsg)
{
	size_t i;

	PRE(handler != NULL && !srv->closing);
	if (method == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "method 0 is not valid");
	if (find_method(srv, method) != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "method %u is already registered", method);
	if (srv->n_methods == srv->cap_methods) {
		size_t cap = srv->cap_methods ? srv->cap_methods * 2 : 16;
		struct rpc_method_entry *m = realloc(srv->methods, cap * sizeof *m);
		if (m == NULL)
			PANIC("out of memory");
		srv->methods = m;
		srv->cap_methods = cap;
	}
	for (i = srv->n_methods; i > 0 && srv->methods[i - 1].method > method; i--)
		srv->methods[i] = srv->methods[i - 1];
	srv->methods[i] = (struct rpc_method_entry){method, handler, arg};
	srv->n_methods++;
	return 0;
}

static void closer_close_cb(uv_handle_t *h)
{
	struct rpc_server *srv = h->data;
	srv->n_handles--;
	server_maybe_closed(srv);
}

void rpc_server_close(struct rpc_server *srv, rpc_server_close_cb cb)
{
	struct rpc_sconn *c;

	PRE(!srv->closing && cb != NULL);
	srv->closing = true;
	srv->close_cb = cb;
	listener_set_handler(srv->l, LISTENER_RPC, NULL, NULL, NULL);
	for (c = srv->conns; c != NULL; c = c->next)
		sconn_close(c);
	ASSERT(srv->flush.head == NULL);
	uv_close((uv_handle_t *)&srv->sweep, closer_close_cb);
	uv_close((uv_handle_t *)&srv->flush.check, closer_close_cb);
	uv_close((uv_handle_t *)&srv->flush.kick, closer_close_cb);
}

void rpc_server_get_stats(const struct rpc_server *srv, struct rpc_server_stats *out)
{
	*out = srv->stats;
}

const struct rpc_server_flag rpc_server_flags[RPC_SERVER_N_FLAGS] = {
	{"max-connections", "N", "client and server connections open at once, and "
				 "connections in their preamble (default 10000)"},
	{"max-connections-per-ip", "N", "the same from one source address (default 1000)"},
	{"idle-timeout-s", "S", "close a connection with nothing in flight for S seconds "
				"(default 300; 0: never)"},
	{"max-queued-mb", "MB", "answers queued to a client that does not read them before "
				"its requests are no longer read (default 32)"},
	{"slow-reader-timeout-s", "S", "close a client whose requests stayed unread so for S "
				       "seconds (default 30)"},
	{"max-inflight-mb", "MB", "request bytes being served at once, over every connection; "
				  "beyond: SERVICE_BUSY (default 256)"},
};

int rpc_server_options_set(struct rpc_server_options *o, const char *name, const char *value,
			   char *errmsg)
{
	static const struct {
		const char *name;
		unsigned long min, max, scale;
	} lim[RPC_SERVER_N_FLAGS] = {
		{"max-connections", 1, 1000000, 1},
		{"max-connections-per-ip", 1, 1000000, 1},
		{"idle-timeout-s", 0, 86400, 1000},
		{"max-queued-mb", 1, 4095, 1u << 20},
		{"slow-reader-timeout-s", 1, 3600, 1000},
		{"max-inflight-mb", 16, 1u << 20, 1u << 20},
	};
	unsigned long v;
	char *end;
	int i;

	for (i = 0; i < RPC_SERVER_N_FLAGS && strcmp(name, lim[i].name) != 0; i++)
		;
	if (i == RPC_SERVER_N_FLAGS)
		return DOCRAFT_ENOTFOUND;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno != 0 || *value < '0' || *value > '9' || *end != '\0' || v < lim[i].min ||
	    v > lim[i].max)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: '%.32s' is not a whole number in %lu..%lu",
			       name, value, lim[i].min, lim[i].max);
	switch (i) {
	case 0:
		o->max_connections = (uint32_t)v;
		break;
	case 1:
		o->max_connections_per_ip = (uint32_t)v;
		break;
	case 2:
		o->idle_timeout_ms = (uint32_t)(v * lim[i].scale);
		break;
	case 3:
		o->max_queued_bytes = (uint32_t)(v * lim[i].scale);
		break;
	case 4:
		o->slow_reader_timeout_ms = (uint32_t)(v * lim[i].scale);
		break;
	default:
		o->max_inflight_bytes = (uint64_t)v * lim[i].scale;
		break;
	}
	return 0;
}

/* ---- decoding under a budget ---- */

struct budget {
	size_t left;
	bool exceeded;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	if (size > b->left) {
		b->exceeded = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p); /* so that free_unpacked(m, NULL), plain free, releases it too */
}

int rpc_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
	       ProtobufCMessage **out, char *errmsg)
{
	static const uint8_t empty[1];
	struct budget b = {RPC_DECODE_BUDGET(len), false};
	ProtobufCAllocator a = {budget_alloc, budget_free, &b};

	*out = protobuf_c_message_unpack(d, &a, len, data != NULL ? data : empty);
	if (*out != NULL)
		return 0;
	if (b.exceeded)
		return err_set(errmsg, DOCRAFT_ETOOBIG,
			       "%s of %zu bytes needs more than its decode budget of %zu bytes",
			       d->short_name, len, RPC_DECODE_BUDGET(len));
	return err_set(errmsg, DOCRAFT_EINVAL, "malformed %s (%zu bytes)", d->short_name, len);
}

void *rpc_call_decode(struct rpc_call *call, const ProtobufCMessageDescriptor *d)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	ProtobufCMessage *m;
	int rv = rpc_unpack(d, call->request, call->request_len, &m, errmsg);

	if (rv == 0)
		return m;
	if (rv == DOCRAFT_ETOOBIG) {
		if (call->conn != NULL)
			call->conn->srv->stats.over_budget++;
		LOG_WARN("rpc: %s (from %s)", errmsg, call->peer);
	}
	rpc_reply_error(call, rv, errmsg, NULL, 0);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------ */

struct rpc_peer {
	struct rpc_peer *next; /* hash chain */
	struct sockaddr_in addr;
	char address[RPC_ADDRESS_MAX + 1];
	struct rpc_cconn *conn; /* current connection, NULL if none */
	unsigned failures;      /* consecutive failed connections */
	uint64_t retry_at;      /* no new connection before this loop time */
	char last_error[DOCRAFT_ERRMSG_SIZE];
};

struct rpc_cconn {
	struct rpc_client *cl;
	struct rpc_peer *peer; /* NULL once failed */
	uv_tcp_t tcp;
	uv_connect_t creq;
	uv_timer_t timer; /* connect timeout */
	struct rpc_frame_decoder dec;
	struct rpc_call_req *calls; /* sent here, not completed */
	struct outq out;            /* preamble and requests not yet written */
	struct rpc_dirty_link dirty;               /* in cl->flush when queued */
	unsigned n_open;            /* handles not yet closed */
	bool preamble_sent;         /* (not counted as a frame in the stats) */
	bool connected;             /* the TCP connection was made */
	bool healthy;               /* a response arrived */
	bool closing;
};

/* -- call id table -- */

static void ids_grow(struct rpc_client *cl)
{
	size_t n = (cl->ids_mask + 1) * 2;
	struct rpc_call_req **t = xcalloc(n * sizeof *t);

	for (size_t i = 0; i <= cl->ids_mask; i++) {
		struct rpc_call_req *r, *next;
		for (r = cl->ids[i]; r != NULL; r = next) {
			next = r->id_next;
			r->id_next = t[r->id & (n - 1)];
			t[r->id & (n - 1)] = r;
		}
	}
	free(cl->ids);
	cl->ids = t;
	cl->ids_mask = n - 1;
}

static void ids_insert(struct rpc_client *cl, struct rpc_call_req *req)
{
	struct rpc_call_req **b;

	if (cl->n_ids >= cl->ids_mask + 1)
		ids_grow(cl);
	b = &cl->ids[req->id & cl->ids_mask];
	req->id_next = *b;
	*b = req;
	cl->n_ids++;
}

static struct rpc_call_req *ids_find(struct rpc_client *cl, uint64_t id)
{
	struct rpc_call_req *r;

	for (r = cl->ids[id & cl->ids_mask]; r != NULL; r = r->id_next)
		if (r->id == id)
			return r;
	return NULL;
}

static void ids_remove(struct rpc_client *cl, struct rpc_call_req *req)
{
	struct rpc_call_req **pp = &cl->ids[req->id & cl->ids_mask];

	while (*pp != NULL && *pp != req)
		pp = &(*pp)->id_next;
	ASSERT(*pp == req);
	*pp = req->id_next;
	req->id_next = NULL;
	cl->n_ids--;
}

/* -- deadline heap (min-heap on deadline, index kept in each req) -- */

static void heap_set(struct rpc_client *cl, size_t i, struct rpc_call_req *r)
{
	cl->heap[i] = r;
	r->heap_index = i;
}

static void heap_up(struct rpc_client *cl, size_t i)
{
	struct rpc_call_req *r = cl->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (cl->heap[parent]->deadline <= r->deadline)
			break;
		heap_set(cl, i, cl->heap[parent]);
		i = parent;
	}
	heap_set(cl, i, r);
}

static void heap_down(struct rpc_client *cl, size_t i)
{
	struct rpc_call_req *r = cl->heap[i];

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= cl->heap_len)
			break;
		if (child + 1 < cl->heap_len &&
		    cl->heap[child + 1]->deadline < cl->heap[child]->deadline)
			child++;
		if (r->deadline <= cl->heap[child]->deadline)
			break;
		heap_set(cl, i, cl->heap[child]);
		i = child;
	}
	heap_set(cl, i, r);
}

static void deadline_cb(uv_timer_t *t);

/* Arms the deadline timer for the earliest deadline. */
static void heap_rearm(struct rpc_client *cl)
{
	uint64_t now = uv_now(cl->loop);

	if (cl->closing)
		return;
	if (cl->heap_len == 0) {
		uv_timer_stop(&cl->deadline_timer);
		return;
	}
	uv_timer_start(&cl->deadline_timer, deadline_cb,
		       cl->heap[0]->deadline > now ? cl->heap[0]->deadline - now : 0, 0);
}

static void heap_push(struct rpc_client *cl, struct rpc_call_req *r)
{
	if (cl->heap_len == cl->heap_cap) {
		size_t cap = cl->heap_cap ? cl->heap_cap * 2 : 64;
		struct rpc_call_req **h = realloc(cl->heap, cap * sizeof *h);
		if (h == NULL)
			PANIC("out of memory");
		cl->heap = h;
		cl->heap_cap = cap;
	}
	heap_set(cl, cl->heap_len++, r);
	heap_up(cl, r->heap_index);
	if (r->heap_index == 0)
		heap_rearm(cl);
}

static void heap_remove(struct rpc_client *cl, struct rpc_call_req *r)
{
	size_t i = r->heap_index;
	struct rpc_call_req *last;

	ASSERT(i < cl->heap_len && cl->heap[i] == r);
	r->heap_index = SIZE_MAX;
	last = cl->heap[--cl->heap_len];
	if (last != r) {
		heap_set(cl, i, last);
		heap_up(cl, i);
		heap_down(cl, last->heap_index);
	}
	if (i == 0)
		heap_rearm(cl);
}

/* -- completing calls -- */

/* Takes req out of the id table, the heap and its connection's list. */
static void req_detach(struct rpc_call_req *req)
{
	struct rpc_client *cl = req->cl;
	struct rpc_cconn *c = req->conn;

	ids_remove(cl, req);
	heap_remove(cl, req);
	if (c != NULL) {
		if (req->prev != NULL)
			req->prev->next = req->next;
		else
			c->calls = req->next;
		if (req->next != NULL)
			req->next->prev = req->prev;
	}
	req->prev = req->next = NULL;
	req->conn = NULL;
}

static void result_init(struct rpc_result *res, int status, const char *message, bool sent)
{
	memset(res, 0, sizeof *res);
	res->status = status;
	res->message = message;
	res->leader_address = "";
	res->sent = sent;
}

static void defer_cb(uv_timer_t *t);

/* Detaches req and queues its failure for the defer timer. */
static void req_defer(struct rpc_call_req *req, int status, bool sent, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void req_defer(struct rpc_call_req *req, int status, bool sent, const char *fmt, ...)
{
	struct rpc_client *cl = req->cl;
	va_list ap;

	req_detach(req);
	req->status = status;
	req->sent = sent;
	va_start(ap, fmt);
	vsnprintf(req->errmsg, sizeof req->errmsg, fmt, ap);
	va_end(ap);
	if (cl->done == NULL) {
		cl->done = req;
		if (!cl->closing)
			uv_timer_start(&cl->defer_timer, defer_cb, 0, 0);
	} else {
		cl->done_tail->next = req;
	}
	cl->done_tail = req;
}

static void drain_done(struct rpc_client *cl)
{
	struct rpc_call_req *req = cl->done, *next;

	cl->done = cl->done_tail = NULL;
	for (; req != NULL; req = next) {
		struct rpc_result res;
		next = req->next;
		req->next = NULL;
		result_init(&res, req->status, req->errmsg, req->sent);
		req->cb(req, &res); /* req may be gone after this */
	}
}

static void defer_cb(uv_timer_t *t)
{
	drain_done(t->data);
}

static void deadline_cb(uv_timer_t *t)
{
	struct rpc_client *cl = t->data;

	/* Callbacks may add calls (with later deadlines) or close the client. */
	while (!cl->closing && cl->heap_len > 0 &&
	       cl->heap[0]->deadline <= uv_now(cl->loop)) {
		struct rpc_call_req *req = cl->heap[0];
		struct rpc_result res;
		bool sent = req->conn != NULL && req->conn->connected;

		req_detach(req);
		cl->stats.timeouts++;
		snprintf(req->errmsg, sizeof req->errmsg,
			 "call of method %u to %s timed out after %u ms", req->method, req->address,
			 req->timeout_ms);
		result_init(&res, DOCRAFT_ETIMEDOUT, req->errmsg, sent);
		req->cb(req, &res);
	}
	heap_rearm(cl);
}

/* -- connections -- */

static void client_maybe_closed(struct rpc_client *cl)
{
	if (!cl->closing || cl->n_handles > 0)
		return;
	/* Every call failed by the close is in cl->done: deliver, then free. */
	drain_done(cl);
	for (size_t i = 0; i < RPC_PEER_BUCKETS; i++) {
		struct rpc_peer *p, *next;
		for (p = cl->peers[i]; p != NULL; p = next) {
			next = p->next;
			free(p);
		}
		cl->peers[i] = NULL;
	}
	ASSERT(cl->n_ids == 0 && cl->heap_len == 0);
	free(cl->ids);
	cl->ids = NULL;
	free(cl->heap);
	cl->heap = NULL;
	free(cl->rbuf);
	cl->rbuf = NULL;
	cl->close_cb(cl);
}

static void cconn_close_cb(uv_handle_t *h)
{
	struct rpc_cconn *c = h->data;
	struct rpc_client *cl = c->cl;

	cl->n_handles--;
	if (--c->n_open > 0)
		return;
	rpc_frame_decoder_free(&c->dec);
	free(c);
	client_maybe_closed(cl);
}

static uint64_t backoff_ms(struct rpc_client *cl, unsigned failures)
{
	uint64_t d = cl->opts.backoff_min_ms;

	for (unsigned i = 1; i < failures && d < cl->opts.backoff_max_ms; i++)
		d *= 2;
	if (d > cl->opts.backoff_max_ms)
		d = cl->opts.backoff_max_ms;
	/* xorshift64: jitter down by up to half */
	cl->rand ^= cl->rand << 13;
	cl->rand ^= cl->rand >> 7;
	cl->rand ^= cl->rand << 17;
	return d - (d / 2 == 0 ? 0 : cl->rand % (d / 2 + 1));
}

/* Fails c and every call on it with code (deferred), closes it; the peer
 * records the failure. Idempotent. */
static void cconn_fail(struct rpc_cconn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void cconn_fail(struct rpc_cconn *c, int code, const char *fmt, ...)
{
	struct rpc_client *cl = c->cl;
	struct rpc_peer *peer = c->peer;
	char why[DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	if (c->closing)
		return;
	c->closing = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (c->connected)
		cl->stats.disconnects++;
	else
		cl->stats.connect_failures++;
	if (peer != NULL) {
		peer->conn = NULL;
		c->peer = NULL;
		if (c->healthy) {
			peer->failures = 0;
			peer->retry_at = 0;
		} else if (code != DOCRAFT_ECLOSED) {
			peer->failures++;
			peer->retry_at = uv_now(cl->loop) + backoff_ms(cl, peer->failures);
		}
		snprintf(peer->last_error, sizeof peer->last_error, "%s", why);
		LOG_DEBUG("rpc: connection to %s failed: %s", peer->address, why);
	}
	while (c->calls != NULL)
		req_defer(c->calls, code, c->connected, "%s", why);
	flusher_remove(&c->cl->flush, &c->dirty);
	outq_clear(&c->out);
	uv_close((uv_handle_t *)&c->tcp, cconn_close_cb);
	uv_close((uv_handle_t *)&c->timer, cconn_close_cb);
}

static void cconn_write_cb(uv_write_t *req, int status)
{
	struct rpc_cconn *c = req->handle->data;

	batch_free(req);
	if (status != 0 && status != UV_ECANCELED && !c->closing)
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "write to %s: %s",
			   c->peer != NULL ? c->peer->address : "?", uv_strerror(status));
}

static void client_flush_cb(uv_check_t *h);

/* Puts c on the client's dirty list if it has output to write and is
 * connected (until then its output waits: cconn_connect_cb calls this). */
static void cconn_mark_dirty(struct rpc_cconn *c)
{
	if (c->out.head != NULL && c->connected && !c->closing && !c->cl->closing)
		flusher_add(&c->cl->flush, &c->dirty, client_flush_cb);
}

/* Hands c's queued output to libuv; a uv_write error fails c. */
static void cconn_flush(struct rpc_cconn *c)
{
	struct rpc_client *cl = c->cl;
	uint64_t frames = 0;
	int rv;

	rv = outq_flush(&c->out, (uv_stream_t *)&c->tcp, cconn_write_cb, cconn_write_cb,
			&cl->stats.writes, &frames);
	if (frames > 0 && !c->preamble_sent) {
		frames--; /* the preamble, always first */
		c->preamble_sent = true;
	}
	cl->stats.frames_sent += frames;
	if (rv != 0)
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "write to %s: %s", c->peer->address,
			   uv_strerror(rv));
}

/* The check callback: flushes every dirty connection. */
static void client_flush_cb(uv_check_t *h)
{
	struct rpc_client *cl = h->data;
	struct rpc_dirty_link *l;

	while ((l = flusher_take(&cl->flush)) != NULL)
		cconn_flush(CONTAINER_OF(l, struct rpc_cconn, dirty));
}

static void cconn_connect_timeout_cb(uv_timer_t *t)
{
	struct rpc_cconn *c = t->data;

	cconn_fail(c, DOCRAFT_EUNAVAILABLE, "connect to %s: no connection after %u ms",
		   c->peer->address, c->cl->opts.connect_timeout_ms);
}

static void cconn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rpc_cconn *c = h->data;
	(void)suggested;
	buf->base = (char *)c->cl->rbuf;
	buf->len = READ_BUF_SIZE;
}

/* A response frame arrived on c; frees its payload. */
static void on_response(struct rpc_cconn *c, struct rpc_frame *f)
{
	struct rpc_client *cl = c->cl;
	struct rpc_call_req *req;
	struct rpc_result res;
	Docraft__ErrorInfo *ei = NULL;

	if (!c->healthy) {
		c->healthy = true;
		c->peer->failures = 0;
		c->peer->retry_at = 0;
	}
	req = ids_find(cl, f->call_id);
	if (req == NULL || req->conn != c) {
		cl->stats.late_replies++;
		free(f->payload);
		return;
	}
	if (f->method != req->method) {
		free(f->payload);
		cconn_fail(c, DOCRAFT_EUNAVAILABLE,
			   "protocol error: %s answered call %" PRIu64 " of method %u as method %u",
			   c->peer->address, f->call_id, req->method, f->method);
		return;
	}
	req_detach(req);
	result_init(&res, f->status, "", true);
	if (f->status == DOCRAFT_OK) {
		res.reply = f->payload;
		res.reply_len = f->len;
	} else {
		ei = docraft__error_info__unpack(NULL, f->len, f->payload);
		if (ei != NULL) {
			res.message = ei->message;
			res.leader_address = ei->leader_address;
			res.leader_id = ei->leader_id;
		} else {
			res.message = f->len == 0 ? docraft_strerror(f->status)
						  : "(undecodable error details)";
		}
	}
	req->cb(req, &res);
	if (ei != NULL)
		docraft__error_info__free_unpacked(ei, NULL);
	free(f->payload);
}

static void cconn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct rpc_cconn *c = s->data;
	const uint8_t *p = (const uint8_t *)buf->base;
	size_t n;

	if (c->closing)
		return;
	if (nread < 0) {
		if (nread == UV_EOF && rpc_frame_decoder_eof(&c->dec) == RPC_FRAME_MORE)
			cconn_fail(c, DOCRAFT_EUNAVAILABLE, "connection closed by %s",
				   c->peer->address);
		else if (nread == UV_EOF)
			cconn_fail(c, DOCRAFT_EUNAVAILABLE, "connection closed by %s: %s",
				   c->peer->address, rpc_frame_decoder_errmsg(&c->dec));
		else
			cconn_fail(c, DOCRAFT_EUNAVAILABLE, "read from %s: %s", c->peer->address,
				   uv_strerror((int)nread));
		return;
	}
	n = (size_t)nread;
	/* A callback may fail this connection or close the client: re-check. */
	while (!c->closing) {
		struct rpc_frame f, h;
		int rv = rpc_frame_decoder_next(&c->dec, &p, &n, &f);
		if (rv == RPC_FRAME_MORE)
			break;
		if (rv == RPC_FRAME_READY && f.kind == RPC_FRAME_RESPONSE) {
			on_response(c, &f);
			continue;
		}
		if (rv == RPC_FRAME_READY) {
			free(f.payload);
			cconn_fail(c, DOCRAFT_EUNAVAILABLE, "protocol error: request frame from %s",
				   c->peer->address);
			break;
		}
		if (rv == RPC_FRAME_ETOOBIG && rpc_frame_decoder_header(&c->dec, &h) &&
		    h.kind == RPC_FRAME_RESPONSE) {
			struct rpc_call_req *req = ids_find(c->cl, h.call_id);
			if (req != NULL && req->conn == c)
				req_defer(req, DOCRAFT_ETOOBIG, true, "reply from %s: %s",
					  c->peer->address, rpc_frame_decoder_errmsg(&c->dec));
		}
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "malformed frame from %s: %s",
			   c->peer->address, rpc_frame_decoder_errmsg(&c->dec));
		break;
	}
}

static void cconn_connect_cb(uv_connect_t *creq, int status)
{
	struct rpc_cconn *c = creq->data;
	int rv;

	if (c->closing)
		return;
	if (status != 0) {
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "connect to %s: %s", c->peer->address,
			   uv_strerror(status));
		return;
	}
	c->connected = true;
	uv_timer_stop(&c->timer);
	rv = uv_read_start((uv_stream_t *)&c->tcp, cconn_alloc_cb, cconn_read_cb);
	if (rv != 0) {
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "read from %s: %s", c->peer->address,
			   uv_strerror(rv));
		return;
	}
	cconn_mark_dirty(c); /* the preamble and the requests queued meanwhile */
}

/* Opens a connection to peer and queues the preamble. On failure returns
 * NULL with the reason in peer->last_error (the backoff recorded). */
static struct rpc_cconn *cconn_open(struct rpc_client *cl, struct rpc_peer *peer)
{
	struct rpc_cconn *c = xcalloc(sizeof *c);
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
	size_t plen;
	struct wreq *w;
	int rv;

	c->cl = cl;
	c->peer = peer;
	rpc_frame_decoder_init(&c->dec, cl->opts.max_frame);
	rv = uv_tcp_init(cl->loop, &c->tcp);
	if (rv != 0) {
		rpc_frame_decoder_free(&c->dec);
		free(c);
		peer->failures++;
		peer->retry_at = uv_now(cl->loop) + backoff_ms(cl, peer->failures);
		snprintf(peer->last_error, sizeof peer->last_error, "socket: %s",
			 uv_strerror(rv));
		return NULL;
	}
	uv_timer_init(cl->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->creq.data = c;
	c->n_open = 2;
	cl->n_handles += 2;
	cl->stats.connects++;
	peer->conn = c;
	uv_tcp_nodelay(&c->tcp, 1);
	uv_tcp_keepalive(&c->tcp, 1, 30);
	rv = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&peer->addr,
			    cconn_connect_cb);
	if (rv != 0) {
		cconn_fail(c, DOCRAFT_EUNAVAILABLE, "connect to %s: %s", peer->address,
			   uv_strerror(rv));
		return NULL;
	}
	plen = listener_preamble_encode(preamble, LISTENER_RPC, "", 0, NULL);
	ASSERT(plen > 0);
	w = malloc(sizeof *w + plen);
	if (w == NULL)
		PANIC("out of memory");
	memcpy(w->data, preamble, plen);
	w->len = plen;
	outq_push(&c->out, w); /* written once connected, with the requests */
	uv_timer_start(&c->timer, cconn_connect_timeout_cb, cl->opts.connect_timeout_ms, 0);
	return c;
}

static size_t peer_bucket(const struct sockaddr_in *a)
{
	uint64_t h = (uint64_t)a->sin_addr.s_addr * 0x9e3779b97f4a7c15ull ^ a->sin_port;
	return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 58) & (RPC_PEER_BUCKETS - 1);
}

/* The peer for address, created on first use. NULL if address is bad. */
static struct rpc_peer *peer_get(struct rpc_client *cl, const char *address, char *errmsg)
{
	struct sockaddr_in a;
	struct rpc_peer *p;
	size_t b;

	if (listener_parse_address(address, &a, errmsg) != 0)
		return NULL;
	b = peer_bucket(&a);
	for (p = cl->peers[b]; p != NULL; p = p->next)
		if (p->addr.sin_addr.s_addr == a.sin_addr.s_addr && p->addr.sin_port == a.sin_port)
			return p;
	p = xcalloc(sizeof *p);
	p->addr = a;
	format_address(&a, p->address);
	p->next = cl->peers[b];
	cl->peers[b] = p;
	return p;
}

static int start_call(struct rpc_client *cl, const char *address, uint16_t method,
		      const ProtobufCMessage *msg, const void *request, size_t len,
		      uint32_t timeout_ms, struct rpc_call_req *req, rpc_call_cb cb, char *errmsg)
{
	struct rpc_frame hdr = {.kind = RPC_FRAME_REQUEST, .method = method,
				.budget_ms = timeout_ms};
	struct rpc_peer *peer;
	struct rpc_cconn *c;
	size_t size;
	uint64_t now = uv_now(cl->loop);

	PRE(address != NULL && req != NULL && cb != NULL);
	if (cl->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "rpc client closing");
	if (method == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "method 0 is not valid");
	if (timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "timeout of 0 ms");
	size = payload_size(msg, len);
	if (size > cl->opts.max_frame - RPC_FRAME_HEADER_SIZE)
		return err_set(errmsg, DOCRAFT_ETOOBIG,
			       "request of %zu bytes exceeds the maximum frame of %u bytes", size,
			       cl->opts.max_frame);
	peer = peer_get(cl, address, errmsg);
	if (peer == NULL)
		return DOCRAFT_EINVAL;

	/* Every private field; req->data is the caller's. */
	memset(&req->cl, 0, sizeof *req - offsetof(struct rpc_call_req, cl));
	req->cl = cl;
	req->id = ++cl->next_id;
	req->method = method;
	req->timeout_ms = timeout_ms;
	req->deadline = now + timeout_ms;
	req->cb = cb;
	memcpy(req->address, peer->address, sizeof req->address);
	ids_insert(cl, req);
	heap_push(cl, req);
	cl->stats.calls++;

	c = peer->conn;
	if (c == NULL && now < peer->retry_at) {
		cl->stats.fail_fast++;
		req_defer(req, DOCRAFT_EUNAVAILABLE, false, "%s (next attempt in %" PRIu64 " ms)",
			  peer->last_error, peer->retry_at - now);
		return 0;
	}
	if (c == NULL) {
		c = cconn_open(cl, peer);
		if (c == NULL) {
			req_defer(req, DOCRAFT_EUNAVAILABLE, false, "%s", peer->last_error);
			return 0;
		}
	}
	req->conn = c;
	req->next = c->calls;
	if (c->calls != NULL)
		c->calls->prev = req;
	c->calls = req;

	hdr.call_id = req->id;
	outq_push(&c->out, frame_alloc(&hdr, msg, request, size));
	cconn_mark_dirty(c);
	return 0;
}

int rpc_call(struct rpc_client *cl, const char *address, uint16_t method, const void *request,
	     size_t len, uint32_t timeout_ms, struct rpc_call_req *req, rpc_call_cb cb,
	     char *errmsg)
{
	PRE(request != NULL || len == 0);
	return start_call(cl, address, method, NULL, request, len, timeout_ms, req, cb, errmsg);
}

int rpc_call_message(struct rpc_client *cl, const char *address, uint16_t method,
		     const ProtobufCMessage *msg, uint32_t timeout_ms, struct rpc_call_req *req,
		     rpc_call_cb cb, char *errmsg)
{
	PRE(msg != NULL);
	return start_call(cl, address, method, msg, NULL, 0, timeout_ms, req, cb, errmsg);
}

void rpc_client_options_default(struct rpc_client_options *o)
{
	o->max_frame = RPC_FRAME_DEFAULT_MAX;
	o->connect_timeout_ms = RPC_DEFAULT_CONNECT_TIMEOUT_MS;
	o->backoff_min_ms = RPC_DEFAULT_BACKOFF_MIN_MS;
	o->backoff_max_ms = RPC_DEFAULT_BACKOFF_MAX_MS;
}

int rpc_client_configure(struct rpc_client *cl, const struct rpc_client_options *o,
			 char *errmsg)
{
	if (o->max_frame < RPC_FRAME_MIN_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "max_frame %u below %u", o->max_frame,
			       RPC_FRAME_MIN_MAX);
	if (o->connect_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "connect timeout of 0 ms");
	if (o->backoff_min_ms == 0 || o->backoff_max_ms < o->backoff_min_ms)
		return err_set(errmsg, DOCRAFT_EINVAL, "backoff %u..%u ms", o->backoff_min_ms,
			       o->backoff_max_ms);
	cl->opts = *o;
	return 0;
}

int rpc_client_init(struct rpc_client *cl, uv_loop_t *loop)
{
	PRE(cl != NULL && loop != NULL);
	memset(cl, 0, sizeof *cl);
	cl->loop = loop;
	rpc_client_options_default(&cl->opts);
	cl->ids_mask = 63;
	cl->ids = xcalloc((cl->ids_mask + 1) * sizeof *cl->ids);
	cl->rbuf = xcalloc(READ_BUF_SIZE);
	cl->rand = (uint64_t)(uintptr_t)cl ^ uv_hrtime() ^ 0x2545f4914f6cdd1dull;
	if (cl->rand == 0)
		cl->rand = 1;
	uv_timer_init(loop, &cl->deadline_timer);
	uv_timer_init(loop, &cl->defer_timer);
	flusher_init(loop, &cl->flush, cl);
	cl->deadline_timer.data = cl;
	cl->defer_timer.data = cl;
	cl->n_handles = 4;
	return 0;
}

static void client_timer_close_cb(uv_handle_t *h)
{
	struct rpc_client *cl = h->data;
	cl->n_handles--;
	client_maybe_closed(cl);
}

void rpc_client_close(struct rpc_client *cl, rpc_client_close_cb cb)
{
	PRE(!cl->closing && cb != NULL);
	cl->closing = true;
	cl->close_cb = cb;
	for (size_t i = 0; i < RPC_PEER_BUCKETS; i++)
		for (struct rpc_peer *p = cl->peers[i]; p != NULL; p = p->next)
			if (p->conn != NULL)
				cconn_fail(p->conn, DOCRAFT_ECLOSED, "rpc client closing");
	ASSERT(cl->flush.head == NULL);
	uv_close((uv_handle_t *)&cl->deadline_timer, client_timer_close_cb);
	uv_close((uv_handle_t *)&cl->defer_timer, client_timer_close_cb);
	uv_close((uv_handle_t *)&cl->flush.check, client_timer_close_cb);
	uv_close((uv_handle_t *)&cl->flush.kick, client_timer_close_cb);
}

void rpc_client_get_stats(const struct rpc_client *cl, struct rpc_client_stats *out)
{
	*out = cl->stats;
}
