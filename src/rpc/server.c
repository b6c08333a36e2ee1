/* The RPC server: connections handed over by the one-port listener, the
 * method table, per-connection and server-wide limits, answers.
 *
 * Design note.
 *
 * Each accepted connection (struct rpc_sconn) reads into one server-wide
 * buffer (single thread: a read callback consumes its buffer before the
 * next read), decodes frames (net/rpc_frame.h), and for each request
 * allocates a struct rpc_call that owns the request bytes and is linked
 * into the connection's list of calls in flight. The handler owns the call
 * until it answers; the answer unlinks and frees it. When the connection
 * closes (EOF, error, malformed frame, server closing), every call still
 * in its list is detached (call->conn = NULL): an answer to a detached
 * call only frees it. So a call never points at freed memory, without
 * reference counts: the connection, which dies first, cuts the links to
 * itself.
 *
 * Answers are built into frames (codec.c), queued on their connection and
 * written in batches once per loop turn (outq.c). Closing a connection
 * first writes what is queued (libuv writes what the socket takes at once,
 * and the close cancels the rest). A uv_write error closes the connection
 * as a failed write callback does. The TOO_BIG answer before a close
 * ("last") marks its connection, whose final batch then closes it from
 * its write callback; nothing is queued after it (draining).
 *
 * Error handling: unknown method: INVALID_ARGUMENT "unknown method N";
 * more than max_inflight calls on one connection, or more than
 * max_inflight_bytes of requests over every connection: SERVICE_BUSY; a
 * frame that does not decode: the connection is closed (debug log),
 * except an oversized request with a sound header, which is answered
 * TOO_BIG first (reading stops; the close follows the write).
 *
 * Limits, the ones that close connections: beyond max_connections (in
 * total or from one address) a new connection is closed at once; a
 * connection whose queued answers (ours and libuv's) pass max_queued_bytes
 * stops being read until its peer reads them down to half, and is closed
 * when that lasts slow_reader_timeout_ms or its queue passes four maximum
 * frames (at least 64 MiB); a connection idle for idle_timeout_ms is
 * closed; so is one whose frame still arriving would take the server past
 * max_inflight_bytes. One sweep timer finds the idle and slow ones.
 *
 * Memory: connections and calls are malloc'd; a connection is freed in
 * its close callback, a call by its answer. struct rpc_server is caller
 * memory, released from the close callback on. */
#include "rpc/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "net/listener.h"
#include "rpc.pb-c.h"

#define WRITE_QUEUE_MIN (64u << 20)

/* Answers queued on one connection beyond which it is closed: four
 * maximum frames, at least WRITE_QUEUE_MIN. */
static size_t write_queue_limit(uint32_t max_frame)
{
	uint64_t n = (uint64_t)max_frame * 4;
	return n < WRITE_QUEUE_MIN ? WRITE_QUEUE_MIN : (size_t)n;
}

struct rpc_method_entry {
	uint16_t method;
	rpc_handler_cb cb;
	void *arg;
	struct rpc_method_stats st;
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
		outq_flusher_add(&c->srv->flush, &c->dirty, server_flush_cb);
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

	while ((l = outq_flusher_take(&srv->flush)) != NULL)
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

/* The close callback of the server's own handles (sweep, flusher). */
static void closer_close_cb(uv_handle_t *h)
{
	struct rpc_server *srv = h->data;
	srv->n_handles--;
	server_maybe_closed(srv);
}

static void sconn_close_cb(uv_handle_t *h)
{
	struct rpc_sconn *c = h->data;
	struct rpc_server *srv = c->srv;

	listener_stream_free(h);
	DLIST_REMOVE(srv->conns, c);
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
	outq_flusher_remove(&c->srv->flush, &c->dirty);
	if (c->out.head != NULL)
		sconn_flush(c);
	while ((call = c->calls) != NULL) {
		DLIST_REMOVE(c->calls, call);
		call->conn = NULL;
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
	outq_batch_free(req);
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
	outq_batch_free(req);
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
	size_t size = codec_payload_size(msg, len);
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
	outq_push(&c->out, codec_frame(&hdr, msg, p, size));
	srv->stats.bytes_out += RPC_FRAME_HEADER_SIZE + size;
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
	DLIST_REMOVE(c->calls, call);
	call->conn = NULL;
	c->n_inflight--;
	c->inflight_bytes -= call->request_len;
	c->srv->stats.inflight_bytes -= call->request_len;
	return c->closing || c->draining ? NULL : c;
}

static struct rpc_method_entry *find_method(const struct rpc_server *srv, uint16_t method);

/* The answer to call is being written on c: the method's stats. */
static void count_answer(struct rpc_sconn *c, const struct rpc_call *call, bool error)
{
	struct rpc_method_entry *m = find_method(c->srv, call->method);
	if (m == NULL)
		return; /* unknown method: stats.unknown_method */
	m->st.calls++;
	if (error)
		m->st.errors++;
	lathist_record(&m->st.latency, (uv_hrtime() - call->start_ns) / 1000);
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
	if (c != NULL) {
		count_answer(c, call, false);
		send_response(c, call->call_id, call->method, DOCRAFT_OK, NULL, payload, len,
			      false);
	}
	call_free(call);
}

void rpc_reply_message(struct rpc_call *call, const ProtobufCMessage *msg)
{
	struct rpc_sconn *c = call_detach(call);

	PRE(msg != NULL);
	if (c != NULL) {
		count_answer(c, call, false);
		send_response(c, call->call_id, call->method, DOCRAFT_OK, msg, NULL, 0, false);
	}
	call_free(call);
}

void rpc_reply_error(struct rpc_call *call, int code, const char *message,
		     const char *leader_address, uint64_t leader_id)
{
	struct rpc_sconn *c = call_detach(call);

	PRE(code > DOCRAFT_OK && code <= UINT16_MAX);
	if (c != NULL) {
		count_answer(c, call, true);
		send_error(c, call->call_id, call->method, code, message, leader_address,
			   leader_id, false);
	}
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

static struct rpc_method_entry *find_method(const struct rpc_server *srv, uint16_t method)
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
	call = xzalloc(sizeof *call);
	call->method = f->method;
	call->start_ns = uv_hrtime();
	call->call_id = f->call_id;
	call->payload = f->payload;
	call->request = f->payload;
	call->request_len = f->len;
	call->budget_ms = f->budget_ms;
	call->deadline = f->budget_ms != 0 ? uv_now(srv->loop) + f->budget_ms : 0;
	memcpy(call->peer, c->peer, sizeof call->peer);
	call->conn = c;
	DLIST_PUSH(c->calls, call);
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
	buf->len = RPC_READ_BUF_SIZE;
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
	c->srv->stats.bytes_in += n;
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
		listener_format_address((const struct sockaddr_in *)&ss, peer);
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
	c = xzalloc(sizeof *c);
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
	DLIST_PUSH(srv->conns, c);
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
	int rv = options_check_server(o, errmsg);

	if (rv != 0)
		return rv;
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
	*srv = (struct rpc_server){.loop = loop, .l = l};
	rpc_server_options_default(&srv->opts);
	rv = rpc_server_register(srv, DOCRAFT__METHOD__METHOD_PING, ping_handler, NULL, errmsg);
	ASSERT(rv == 0);
	rv = listener_set_handler(l, LISTENER_RPC, on_rpc_connection, srv, errmsg);
	if (rv != 0) {
		free(srv->methods);
		return rv;
	}
	srv->rbuf = xzalloc(RPC_READ_BUF_SIZE);
	ip_counts_init(&srv->per_ip);
	uv_timer_init(loop, &srv->sweep);
	outq_flusher_init(loop, &srv->flush, srv);
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
		srv->methods = xrealloc(srv->methods, cap * sizeof *srv->methods);
		srv->cap_methods = cap;
	}
	for (i = srv->n_methods; i > 0 && srv->methods[i - 1].method > method; i--)
		srv->methods[i] = srv->methods[i - 1];
	srv->methods[i] = (struct rpc_method_entry){method, handler, arg, {.method = method}};
	srv->n_methods++;
	return 0;
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
	uv_close((uv_handle_t *)&srv->sweep, closer_close_cb);
	outq_flusher_close(&srv->flush, closer_close_cb);
}

void rpc_server_get_stats(const struct rpc_server *srv, struct rpc_server_stats *out)
{
	*out = srv->stats;
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


size_t rpc_server_method_stats(const struct rpc_server *srv, struct rpc_method_stats *out,
			       size_t cap)
{
	for (size_t i = 0; i < srv->n_methods && i < cap; i++)
		out[i] = srv->methods[i].st;
	return srv->n_methods;
}
