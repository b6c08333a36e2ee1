/* The RPC client: one shared connection per server address, calls with
 * deadlines, failure delivery and reconnect backoff.
 *
 * Design note.
 *
 * Addresses map to a struct rpc_peer (kept until the client closes: it
 * remembers the backoff), which has at most one connection (struct
 * rpc_cconn) at a time, shared by every caller. The first call to an
 * address opens it: uv_tcp_connect; the preamble and the requests are
 * queued meanwhile (outq.c) and written together once the connection is
 * made. Every pending call is in three places: the client's id table (to
 * match responses), the deadline heap (one timer for all deadlines, armed
 * at the earliest) — both in pending.c — and its connection's list (to
 * fail them all when it breaks). A call leaves all three before its
 * callback runs. A response for an id no longer in the table (the call
 * timed out) is counted and dropped.
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
 * Output: a connection's queue waits until it is connected, then goes on
 * the client's dirty list like a server connection's (outq.c). A
 * connection's failure drops its queue, its calls failing as above; a
 * uv_write error fails the connection as a failed write callback does.
 *
 * Memory: peers, connections and frames are malloc'd; a connection is
 * freed once both its handles are closed, peers when the client closes.
 * struct rpc_client and rpc_call_req are caller memory (libuv's
 * handle/request split). */
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
#include "rpc/pending.h"
#include "rpc.pb-c.h"

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

static void deadline_cb(uv_timer_t *t);

/* Arms the deadline timer for the earliest deadline. */
static void deadline_rearm(struct rpc_client *cl)
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

/* -- completing calls -- */

/* Takes req out of the id table, the heap and its connection's list. */
static void req_detach(struct rpc_call_req *req)
{
	struct rpc_client *cl = req->cl;
	struct rpc_cconn *c = req->conn;

	pending_id_remove(cl, req);
	if (pending_deadline_remove(cl, req))
		deadline_rearm(cl);
	if (c != NULL)
		DLIST_REMOVE(c->calls, req);
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
	deadline_rearm(cl);
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
	pending_free(cl);
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
	outq_flusher_remove(&c->cl->flush, &c->dirty);
	outq_clear(&c->out);
	uv_close((uv_handle_t *)&c->tcp, cconn_close_cb);
	uv_close((uv_handle_t *)&c->timer, cconn_close_cb);
}

static void cconn_write_cb(uv_write_t *req, int status)
{
	struct rpc_cconn *c = req->handle->data;

	outq_batch_free(req);
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
		outq_flusher_add(&c->cl->flush, &c->dirty, client_flush_cb);
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

	while ((l = outq_flusher_take(&cl->flush)) != NULL)
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
	buf->len = RPC_READ_BUF_SIZE;
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
	req = pending_id_find(cl, f->call_id);
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
			struct rpc_call_req *req = pending_id_find(c->cl, h.call_id);
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
	struct rpc_cconn *c = xzalloc(sizeof *c);
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
	size_t plen;
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
	/* written once connected, with the requests */
	outq_push_bytes(&c->out, preamble, plen);
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
	p = xzalloc(sizeof *p);
	p->addr = a;
	listener_format_address(&a, p->address);
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
	size = codec_payload_size(msg, len);
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
	pending_id_insert(cl, req);
	if (pending_deadline_push(cl, req))
		deadline_rearm(cl);
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
	DLIST_PUSH(c->calls, req);

	hdr.call_id = req->id;
	outq_push(&c->out, codec_frame(&hdr, msg, request, size));
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

int rpc_client_configure(struct rpc_client *cl, const struct rpc_client_options *o,
			 char *errmsg)
{
	int rv = options_check_client(o, errmsg);

	if (rv == 0)
		cl->opts = *o;
	return rv;
}

int rpc_client_init(struct rpc_client *cl, uv_loop_t *loop)
{
	PRE(cl != NULL && loop != NULL);
	memset(cl, 0, sizeof *cl);
	cl->loop = loop;
	rpc_client_options_default(&cl->opts);
	pending_init(cl);
	cl->rbuf = xzalloc(RPC_READ_BUF_SIZE);
	cl->rand = (uint64_t)(uintptr_t)cl ^ uv_hrtime() ^ 0x2545f4914f6cdd1dull;
	if (cl->rand == 0)
		cl->rand = 1;
	uv_timer_init(loop, &cl->deadline_timer);
	uv_timer_init(loop, &cl->defer_timer);
	outq_flusher_init(loop, &cl->flush, cl);
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
	uv_close((uv_handle_t *)&cl->deadline_timer, client_timer_close_cb);
	uv_close((uv_handle_t *)&cl->defer_timer, client_timer_close_cb);
	outq_flusher_close(&cl->flush, client_timer_close_cb);
}

void rpc_client_get_stats(const struct rpc_client *cl, struct rpc_client_stats *out)
{
	*out = cl->stats;
}
