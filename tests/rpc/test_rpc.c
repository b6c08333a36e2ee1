/* RPC server and client (src/rpc/server.c, client.c, outq.c, codec.c) on
 * real loopback sockets (127.0.0.1 and 127.0.0.2), one uv loop per case;
 * and, without sockets, the pieces they are built of: the client's pending
 * call indexes (rpc/pending.h), the intrusive lists (common/dlist.h) and
 * peer address text (listener_format_address).
 *
 * Round trips, 1000 calls in flight on one connection answered in reverse
 * order, deadlines and late replies, server loss and reconnection with
 * backoff, malformed and oversized frames from a raw client, server-side
 * errors with their codes and leader hint, busy servers, client close;
 * write coalescing (one uv_write per connection per loop turn, capped at
 * 64 frames / 1 MiB, frames in order) and frames queued from prepare and
 * check callbacks written without waiting for other I/O.
 *
 * Every wait drives the loop until a condition holds or a guard timer
 * fires; nothing sleeps. Every case ends with uv_loop_close() == 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/buf.h"
#include "common/dlist.h"
#include "common/err.h"
#include "rpc/rpc.h"
#include "net/rpc_frame.h"
#include "net/listener.h"
#include "rpc/pending.h"
#include "docraft.pb-c.h"
#include "rpc.pb-c.h"
#include "test.h"
#include "loop.h"

#define N_CONCURRENT 1000

/* Test methods (60000.. is reserved for tests in proto/rpc.proto). */
enum {
	M_HOLD = 60001,  /* kept by the test until it answers */
	M_ECHO = 60002,  /* answers the request bytes at once */
	M_ERROR = 60003, /* answers the error whose code is the 4-byte request */
	M_BIG = 60004,   /* answers as many bytes as the 4-byte request says */
	M_CLOSE = 60005, /* closes the server, then answers */
	M_UNKNOWN = 777, /* never registered */
};

/* ---- driving the loop ---- */

static void flag_cb(void *arg)
{
	*(bool *)arg = true;
}

static bool never(void *p)
{
	(void)p;
	return false;
}

/* Runs the loop for about ms. */
static void run_for(uv_loop_t *loop, uint64_t ms)
{
	loop_run_until(loop, never, NULL, ms);
}

/* ---- a server on a listener, held calls ---- */

#define HOLD_MAX 2048

struct server {
	uv_loop_t *loop;
	struct listener *l;
	struct rpc_server srv;
	bool srv_closed, l_closed;
	struct rpc_call *held[HOLD_MAX];
	size_t n_held;
	char address[32];
};

static void hold_handler(void *arg, struct rpc_call *call)
{
	struct server *s = arg;
	CHECK(s->n_held < HOLD_MAX);
	s->held[s->n_held++] = call;
}

static void echo_handler(void *arg, struct rpc_call *call)
{
	(void)arg;
	rpc_reply(call, call->request, call->request_len);
}

static uint32_t request_u32(const struct rpc_call *call)
{
	return call->request_len == 4 ? be32_load(call->request) : 0;
}

static void error_handler(void *arg, struct rpc_call *call)
{
	int code = (int)request_u32(call);
	(void)arg;
	if (code == DOCRAFT_ENOTLEADER)
		rpc_reply_error(call, code, "not the leader of tablet t1", "127.0.0.2:9100", 3);
	else
		rpc_reply_errorf(call, code, "failing with %s", docraft_strerror(code));
}

static void server_closed_cb(struct rpc_server *srv);

static void close_handler(void *arg, struct rpc_call *call)
{
	struct server *s = arg;
	rpc_server_close(&s->srv, server_closed_cb);
	CHECK(rpc_call_abandoned(call));
	rpc_reply(call, "bye", 3); /* dropped */
}

static void big_handler(void *arg, struct rpc_call *call)
{
	size_t n = request_u32(call);
	uint8_t *p = calloc(1, n + 1);
	(void)arg;
	rpc_reply(call, p, n);
	free(p);
}

/* Opens a listener on address (port 0: any) and an RPC server on it. */
static void server_start(struct server *s, uv_loop_t *loop, const char *address)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";

	memset(s, 0, sizeof *s);
	s->loop = loop;
	CHECK_OK_MSG(listener_open(loop, address, &s->l, errmsg), errmsg);
	snprintf(s->address, sizeof s->address, "%s", listener_address(s->l));
	CHECK_OK_MSG(rpc_server_init(&s->srv, loop, s->l, errmsg), errmsg);
	s->srv.data = s;
	CHECK_OK(rpc_server_register(&s->srv, M_HOLD, hold_handler, s, errmsg));
	CHECK_OK(rpc_server_register(&s->srv, M_ECHO, echo_handler, s, errmsg));
	CHECK_OK(rpc_server_register(&s->srv, M_ERROR, error_handler, s, errmsg));
	CHECK_OK(rpc_server_register(&s->srv, M_BIG, big_handler, s, errmsg));
	CHECK_OK(rpc_server_register(&s->srv, M_CLOSE, close_handler, s, errmsg));
	/* Registrations are unique; method 0 is not one. */
	CHECK_EQ_INT(rpc_server_register(&s->srv, M_ECHO, echo_handler, s, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(rpc_server_register(&s->srv, DOCRAFT__METHOD__METHOD_PING, echo_handler, s,
					 errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(rpc_server_register(&s->srv, 0, echo_handler, s, errmsg), DOCRAFT_EINVAL);
}

static void server_closed_cb(struct rpc_server *srv)
{
	((struct server *)srv->data)->srv_closed = true;
}

static void listener_closed_cb(void *arg)
{
	((struct server *)arg)->l_closed = true;
}

/* Closes the RPC server and then the listener. Held calls stay held. */
static void server_stop(struct server *s)
{
	rpc_server_close(&s->srv, server_closed_cb);
	CHECK(!s->srv_closed); /* never synchronous */
	CHECK(loop_run_until(s->loop, loop_flag_is_set, &s->srv_closed, 5000));
	listener_close(s->l, listener_closed_cb, s);
	CHECK(loop_run_until(s->loop, loop_flag_is_set, &s->l_closed, 5000));
}

struct held_n {
	struct server *s;
	size_t n;
};

static bool has_held(void *p)
{
	struct held_n *h = p;
	return h->s->n_held >= h->n;
}

static void wait_held(struct server *s, size_t n)
{
	struct held_n h = {s, n};
	CHECK_MSG(loop_run_until(s->loop, has_held, &h, 5000), "%zu of %zu calls held", s->n_held, n);
}

/* ---- client side: calls recorded into results ---- */

struct result {
	struct rpc_call_req req;
	bool done;
	int status;
	char message[DOCRAFT_ERRMSG_SIZE];
	char leader[64];
	uint64_t leader_id;
	bool sent;
	struct buf reply;
	int order;      /* completion order, from 1 */
	uint64_t at;    /* loop time of completion */
	int *counter;   /* shared completion counter, optional */
};

static int completions;

static void result_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct result *x = req->data;

	CHECK(x != NULL && &x->req == req);
	CHECK(!x->done); /* exactly once */
	x->done = true;
	x->status = r->status;
	snprintf(x->message, sizeof x->message, "%s", r->message);
	snprintf(x->leader, sizeof x->leader, "%s", r->leader_address);
	x->leader_id = r->leader_id;
	x->sent = r->sent;
	buf_init(&x->reply);
	if (r->status == DOCRAFT_OK)
		buf_append(&x->reply, r->reply, r->reply_len);
	else
		CHECK(r->reply == NULL && r->reply_len == 0);
	x->order = ++completions;
	x->at = uv_now(req->cl->loop);
	if (x->counter != NULL)
		(*x->counter)++;
}

static bool result_done(void *p)
{
	return ((struct result *)p)->done;
}

static bool counter_reached(void *p)
{
	return *(int *)p >= N_CONCURRENT;
}

static void result_free(struct result *x)
{
	buf_free(&x->reply);
}

/* Starts a call whose outcome lands in x. */
static int start(struct rpc_client *cl, const char *address, uint16_t method, const void *p,
		 size_t n, uint32_t timeout_ms, struct result *x)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	memset(x, 0, sizeof *x);
	x->req.data = x;
	rv = rpc_call(cl, address, method, p, n, timeout_ms, &x->req, result_cb, errmsg);
	CHECK(!x->done); /* never called back inside rpc_call */
	return rv;
}

/* One call, waited for. */
static void call(uv_loop_t *loop, struct rpc_client *cl, const char *address, uint16_t method,
		 const void *p, size_t n, uint32_t timeout_ms, struct result *x)
{
	CHECK_OK(start(cl, address, method, p, n, timeout_ms, x));
	CHECK_MSG(loop_run_until(loop, result_done, x, (uint64_t)timeout_ms + 5000),
		  "call of method %u not completed", method);
}

static void call_u32(uv_loop_t *loop, struct rpc_client *cl, const char *address,
		     uint16_t method, uint32_t v, struct result *x)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	call(loop, cl, address, method, b, sizeof b, 5000, x);
}

/* A METHOD_PING round trip; checks the echo. Returns the status. */
static int ping(uv_loop_t *loop, struct rpc_client *cl, const char *address, uint64_t seq)
{
	Docraft__PingRequest rq = DOCRAFT__PING_REQUEST__INIT;
	Docraft__PingResponse *rs;
	char data[32];
	struct result x;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int status;

	snprintf(data, sizeof data, "ping %llu", (unsigned long long)seq);
	rq.seq = seq;
	rq.data.data = (uint8_t *)data;
	rq.data.len = strlen(data);
	memset(&x, 0, sizeof x);
	x.req.data = &x;
	CHECK_OK_MSG(rpc_call_message(cl, address, DOCRAFT__METHOD__METHOD_PING, &rq.base, 5000,
				      &x.req, result_cb, errmsg),
		     errmsg);
	CHECK(loop_run_until(loop, result_done, &x, 10000));
	status = x.status;
	if (status == DOCRAFT_OK) {
		rs = docraft__ping_response__unpack(NULL, x.reply.len, x.reply.data);
		CHECK(rs != NULL);
		CHECK_EQ_U64(rs->seq, seq);
		CHECK_EQ_MEM(rs->data.data, rs->data.len, data, strlen(data));
		docraft__ping_response__free_unpacked(rs, NULL);
	}
	result_free(&x);
	return status;
}

struct client {
	struct rpc_client cl;
	bool closed;
};

static void client_closed_cb(struct rpc_client *cl)
{
	((struct client *)cl->data)->closed = true;
}

static void client_start(struct client *c, uv_loop_t *loop)
{
	memset(c, 0, sizeof *c);
	CHECK_OK(rpc_client_init(&c->cl, loop));
	c->cl.data = c;
}

static void client_stop(uv_loop_t *loop, struct client *c)
{
	rpc_client_close(&c->cl, client_closed_cb);
	CHECK(!c->closed);
	CHECK(loop_run_until(loop, loop_flag_is_set, &c->closed, 5000));
}

static void start_loop(uv_loop_t *loop)
{
	signal(SIGPIPE, SIG_IGN); /* see listener.h */
	CHECK_OK(uv_loop_init(loop));
}

/* ---- a raw client speaking bytes ---- */

struct raw {
	uv_tcp_t tcp;
	uv_connect_t creq;
	bool connected, failed, ended, closed;
	struct buf in;
};

static void raw_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char sink[65536];
	(void)h;
	(void)suggested;
	buf->base = sink;
	buf->len = sizeof sink;
}

static void raw_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct raw *r = s->data;
	if (nread > 0)
		buf_append(&r->in, buf->base, (size_t)nread);
	if (nread < 0) {
		r->ended = true;
		uv_read_stop(s);
	}
}

static void raw_connect_cb(uv_connect_t *req, int status)
{
	struct raw *r = req->data;
	if (status != 0) {
		r->failed = true;
		return;
	}
	r->connected = true;
	uv_read_start((uv_stream_t *)&r->tcp, raw_alloc_cb, raw_read_cb);
}

static bool raw_connect_done(void *p)
{
	struct raw *r = p;
	return r->connected || r->failed;
}

static bool raw_ended(void *p)
{
	return ((struct raw *)p)->ended;
}

static bool raw_closed(void *p)
{
	return ((struct raw *)p)->closed;
}

static bool raw_has_answer(void *p)
{
	return ((struct raw *)p)->in.len >= RPC_FRAME_HEADER_SIZE;
}

static void raw_write_cb(uv_write_t *w, int status)
{
	(void)status;
	free(w);
}

static void raw_write(struct raw *r, const void *p, size_t n)
{
	uv_write_t *w = malloc(sizeof *w + n);
	uv_buf_t b = uv_buf_init((char *)(w + 1), (unsigned)n);
	memcpy(w + 1, p, n);
	CHECK_OK(uv_write(w, (uv_stream_t *)&r->tcp, &b, 1, raw_write_cb));
}

/* Connects from source address from ("a.b.c.d", NULL: any) and, if
 * preamble, sends the RPC preamble. reading: read what arrives (else
 * nothing is ever read: a slow reader). */
static void raw_open_from(uv_loop_t *loop, struct raw *r, const char *address, const char *from,
			  bool preamble, bool reading)
{
	struct sockaddr_in a, src;
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	size_t n;

	memset(r, 0, sizeof *r);
	CHECK_OK(listener_parse_address(address, &a, NULL));
	uv_tcp_init(loop, &r->tcp);
	r->tcp.data = r;
	r->creq.data = r;
	if (from != NULL) {
		CHECK_OK(uv_ip4_addr(from, 0, &src));
		CHECK_OK(uv_tcp_bind(&r->tcp, (struct sockaddr *)&src, 0));
	}
	CHECK_OK(uv_tcp_connect(&r->creq, &r->tcp, (struct sockaddr *)&a, raw_connect_cb));
	CHECK(loop_run_until(loop, raw_connect_done, r, 5000));
	CHECK(r->connected);
	if (!reading)
		uv_read_stop((uv_stream_t *)&r->tcp);
	if (!preamble)
		return;
	n = listener_preamble_encode(pre, LISTENER_RPC, "", 0, NULL);
	CHECK(n > 0);
	raw_write(r, pre, n);
}

/* Connects and sends the RPC preamble. */
static void raw_open(uv_loop_t *loop, struct raw *r, const char *address)
{
	raw_open_from(loop, r, address, NULL, true, true);
}

static void raw_close_cb(uv_handle_t *h)
{
	((struct raw *)h->data)->closed = true;
}

static void raw_close(uv_loop_t *loop, struct raw *r)
{
	uv_close((uv_handle_t *)&r->tcp, raw_close_cb);
	CHECK(loop_run_until(loop, raw_closed, r, 5000));
	buf_free(&r->in);
}

static void raw_header(uint8_t *h, uint32_t length, uint8_t kind, uint8_t flags, uint64_t id,
		       uint16_t method, uint16_t status, uint32_t budget)
{
	struct buf b = BUF_INIT;
	buf_append_be32(&b, length);
	buf_push(&b, kind);
	buf_push(&b, flags);
	buf_append_be64(&b, id);
	buf_append_be16(&b, method);
	buf_append_be16(&b, status);
	buf_append_be32(&b, budget);
	memcpy(h, b.data, RPC_FRAME_HEADER_SIZE);
	buf_free(&b);
}

/* ---- cases ---- */

/* Pings, sequential and from two servers; one connection per address,
 * shared by every caller of the client. */
TEST(ping_round_trips)
{
	uv_loop_t loop;
	struct server s1, s2;
	struct client c;
	struct rpc_client_stats cs;
	struct rpc_server_stats ss;

	start_loop(&loop);
	server_start(&s1, &loop, "127.0.0.1:0");
	server_start(&s2, &loop, "127.0.0.2:0");
	client_start(&c, &loop);
	for (uint64_t i = 1; i <= 20; i++) {
		CHECK_EQ_INT(ping(&loop, &c.cl, s1.address, i), DOCRAFT_OK);
		CHECK_EQ_INT(ping(&loop, &c.cl, s2.address, 100 + i), DOCRAFT_OK);
	}
	/* An empty request reaches the handler as zero bytes. */
	{
		struct result x;
		call(&loop, &c.cl, s1.address, M_ECHO, NULL, 0, 1000, &x);
		CHECK_EQ_INT(x.status, DOCRAFT_OK);
		CHECK_EQ_U64(x.reply.len, 0);
		CHECK_EQ_STR(x.message, "");
		CHECK(x.sent);
		result_free(&x);
	}
	/* A request trickling in one byte per write decodes all the same. */
	{
		struct raw r;
		struct buf frame = BUF_INIT;
		struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = 5, .method = M_ECHO,
				      .budget_ms = 1000, .payload = (uint8_t *)"trickle", .len = 7};
		struct rpc_frame_decoder dec;
		const uint8_t *p;
		size_t n;

		raw_open(&loop, &r, s1.address);
		rpc_frame_encode(&frame, &f);
		for (size_t i = 0; i < frame.len; i++) {
			raw_write(&r, frame.data + i, 1);
			run_for(&loop, 1);
		}
		for (int i = 0; i < 500 && r.in.len < RPC_FRAME_HEADER_SIZE + 7; i++)
			run_for(&loop, 10);
		rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
		p = r.in.data;
		n = r.in.len;
		CHECK_EQ_INT(rpc_frame_decoder_next(&dec, &p, &n, &f), RPC_FRAME_READY);
		CHECK_EQ_INT(f.kind, RPC_FRAME_RESPONSE);
		CHECK_EQ_U64(f.call_id, 5);
		CHECK_EQ_INT(f.status, DOCRAFT_OK);
		CHECK_EQ_MEM(f.payload, f.len, "trickle", 7);
		free(f.payload);
		rpc_frame_decoder_free(&dec);
		buf_free(&frame);
		raw_close(&loop, &r);
	}
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.connects, 2);
	CHECK_EQ_U64(cs.calls, 41);
	CHECK_EQ_U64(cs.timeouts + cs.connect_failures + cs.disconnects + cs.late_replies, 0);
	rpc_server_get_stats(&s1.srv, &ss);
	CHECK_EQ_U64(ss.connections, 2); /* the client's and the raw one */
	CHECK_EQ_U64(ss.calls, 22);
	CHECK_EQ_U64(ss.replies, 22);
	client_stop(&loop, &c);
	server_stop(&s1);
	server_stop(&s2);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* 1000 calls in flight on one connection, answered in reverse order: each
 * caller gets its own answer, in the order the server answered. */
TEST(thousand_in_flight_out_of_order)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result *x = calloc(N_CONCURRENT, sizeof *x);
	int done = 0;
	struct rpc_client_stats cs;
	struct rpc_server_stats ss;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	completions = 0;
	for (uint32_t i = 0; i < N_CONCURRENT; i++) {
		uint8_t b[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8),
				(uint8_t)i};
		CHECK_OK(start(&c.cl, s.address, M_HOLD, b, sizeof b, 10000, &x[i]));
		x[i].counter = &done;
	}
	wait_held(&s, N_CONCURRENT);
	CHECK_EQ_INT(done, 0);
	for (size_t i = N_CONCURRENT; i-- > 0;) {
		struct rpc_call *call = s.held[i];
		CHECK_EQ_U64(call->request_len, 4);
		CHECK_EQ_U64(be32_load(call->request), i); /* arrived in order sent */
		CHECK(call->budget_ms > 0 && call->budget_ms <= 10000);
		CHECK(call->deadline > 0);
		CHECK(strncmp(call->peer, "127.0.0.1:", 10) == 0);
		CHECK(!rpc_call_abandoned(call));
		rpc_reply(call, call->request, call->request_len);
	}
	s.n_held = 0;
	CHECK(loop_run_until(&loop, counter_reached, &done, 10000));
	for (uint32_t i = 0; i < N_CONCURRENT; i++) {
		CHECK_MSG(x[i].done, "call %u not completed", i);
		CHECK_EQ_INT(x[i].status, DOCRAFT_OK);
		CHECK_EQ_U64(x[i].reply.len, 4);
		CHECK_EQ_U64(be32_load(x[i].reply.data), i);
		/* Answered last-first, so completed last-first. */
		CHECK_EQ_INT(x[i].order, N_CONCURRENT - (int)i);
		result_free(&x[i]);
	}
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.connects, 1);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.connections, 1);
	CHECK_EQ_U64(ss.calls, N_CONCURRENT);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
	free(x);
}

/* A call whose deadline passes fails TIMED_OUT on time; the server's late
 * answer is ignored and the connection stays usable. */
TEST(deadline_and_late_reply)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x;
	struct rpc_client_stats cs;
	uint64_t t0;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 1), DOCRAFT_OK);
	t0 = uv_now(&loop);
	call(&loop, &c.cl, s.address, M_HOLD, "x", 1, 50, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_ETIMEDOUT);
	CHECK(x.at - t0 >= 50);
	CHECK(x.at - t0 < 2000);
	CHECK(strstr(x.message, "timed out after 50 ms") != NULL);
	CHECK(x.sent);
	result_free(&x);
	wait_held(&s, 1);
	CHECK_EQ_U64(s.held[0]->budget_ms, 50);
	/* The server may still answer; the client drops it. */
	rpc_reply(s.held[0], "late", 4);
	s.n_held = 0;
	for (int i = 0; i < 100; i++) {
		rpc_client_get_stats(&c.cl, &cs);
		if (cs.late_replies == 1)
			break;
		run_for(&loop, 10);
	}
	CHECK_EQ_U64(cs.late_replies, 1);
	CHECK_EQ_U64(cs.timeouts, 1);
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 2), DOCRAFT_OK);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.connects, 1);

	/* Deadlines fire in deadline order, whatever the order of the calls. */
	{
		struct result y[5];
		uint32_t ms[5] = {90, 30, 70, 10, 50};
		completions = 0;
		for (int i = 0; i < 5; i++)
			CHECK_OK(start(&c.cl, s.address, M_HOLD, "y", 1, ms[i], &y[i]));
		CHECK(loop_run_until(&loop, result_done, &y[0], 5000));
		CHECK_EQ_INT(y[3].order, 1);
		CHECK_EQ_INT(y[1].order, 2);
		CHECK_EQ_INT(y[4].order, 3);
		CHECK_EQ_INT(y[2].order, 4);
		CHECK_EQ_INT(y[0].order, 5);
		for (int i = 0; i < 5; i++) {
			CHECK_EQ_INT(y[i].status, DOCRAFT_ETIMEDOUT);
			result_free(&y[i]);
		}
		wait_held(&s, 5);
		for (int i = 0; i < 5; i++)
			rpc_reply_errorf(s.held[i], DOCRAFT_EBUSY, "too late anyway");
		s.n_held = 0;
	}
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* The server goes away with calls in flight: they fail UNAVAILABLE (not
 * TIMED_OUT) at once; answers to the abandoned calls are dropped safely;
 * new calls fail (refused, then fast during the backoff); once a server
 * listens there again, calls succeed on a new connection. */
TEST(server_loss_and_reconnect)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x[3], y, z;
	struct rpc_client_stats cs;
	char address[32];
	struct rpc_client_options o;
	int status = -1;
	uint64_t t0;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	snprintf(address, sizeof address, "%s", s.address);
	client_start(&c, &loop);
	rpc_client_options_default(&o);
	o.backoff_min_ms = 200;
	o.backoff_max_ms = 400;
	CHECK_OK(rpc_client_configure(&c.cl, &o, NULL));
	CHECK_EQ_INT(ping(&loop, &c.cl, address, 1), DOCRAFT_OK);
	for (int i = 0; i < 3; i++)
		CHECK_OK(start(&c.cl, address, M_HOLD, "h", 1, 30000, &x[i]));
	wait_held(&s, 3);
	t0 = uv_now(&loop);
	server_stop(&s);
	for (int i = 0; i < 3; i++) {
		CHECK(loop_run_until(&loop, result_done, &x[i], 5000));
		CHECK_EQ_INT(x[i].status, DOCRAFT_EUNAVAILABLE);
		CHECK(x[i].sent);
		CHECK(strstr(x[i].message, "connection closed by") != NULL);
		CHECK(x[i].at - t0 < 5000);
		result_free(&x[i]);
	}
	/* The handler still owns its calls: answering them is safe. */
	for (size_t i = 0; i < s.n_held; i++) {
		CHECK(rpc_call_abandoned(s.held[i]));
		rpc_reply(s.held[i], "gone", 4);
	}
	s.n_held = 0;

	/* A connection that had worked is retried at once: refused. */
	call(&loop, &c.cl, address, M_ECHO, "a", 1, 1000, &y);
	CHECK_EQ_INT(y.status, DOCRAFT_EUNAVAILABLE);
	CHECK(!y.sent);
	CHECK(strstr(y.message, "connect to") != NULL);
	result_free(&y);
	/* Now in backoff: fails fast without a new attempt. */
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.fail_fast, 0);
	call(&loop, &c.cl, address, M_ECHO, "b", 1, 1000, &z);
	CHECK_EQ_INT(z.status, DOCRAFT_EUNAVAILABLE);
	CHECK(!z.sent);
	CHECK(strstr(z.message, "next attempt in") != NULL);
	result_free(&z);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.fail_fast, 1);
	CHECK_EQ_U64(cs.connect_failures, 1);
	CHECK_EQ_U64(cs.disconnects, 1);
	CHECK_EQ_U64(cs.timeouts, 0);

	/* The server comes back on the same address. */
	server_start(&s, &loop, address);
	for (int i = 0; i < 100 && status != DOCRAFT_OK; i++) {
		status = ping(&loop, &c.cl, address, 2);
		if (status != DOCRAFT_OK) {
			CHECK_EQ_INT(status, DOCRAFT_EUNAVAILABLE);
			run_for(&loop, 20);
		}
	}
	CHECK_EQ_INT(status, DOCRAFT_OK);
	CHECK_EQ_INT(ping(&loop, &c.cl, address, 3), DOCRAFT_OK);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* A connection that fails before any response (refused, or the server has
 * no RPC handler) backs off; the next attempt waits for it. */
TEST(unreachable_backs_off)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x;
	struct rpc_client_stats cs;
	struct listener *bare;
	char address[32], errmsg[DOCRAFT_ERRMSG_SIZE];
	bool bare_closed = false;

	start_loop(&loop);
	/* A port nobody listens on: open and close a listener. */
	server_start(&s, &loop, "127.0.0.1:0");
	snprintf(address, sizeof address, "%s", s.address);
	server_stop(&s);
	client_start(&c, &loop);
	call(&loop, &c.cl, address, M_ECHO, "a", 1, 2000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EUNAVAILABLE);
	CHECK(!x.sent);
	CHECK_MSG(strstr(x.message, "connection refused") != NULL, "%s", x.message);
	result_free(&x);
	call(&loop, &c.cl, address, M_ECHO, "a", 1, 2000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EUNAVAILABLE);
	CHECK(strstr(x.message, "next attempt in") != NULL);
	result_free(&x);

	/* A listener without an RPC handler closes RPC connections after the
	 * preamble: that too is a failed connection, not a working one. */
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.2:0", &bare, errmsg), errmsg);
	snprintf(address, sizeof address, "%s", listener_address(bare));
	call(&loop, &c.cl, address, M_ECHO, "a", 1, 2000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EUNAVAILABLE);
	CHECK(x.sent); /* connected: the server might have seen it */
	result_free(&x);
	call(&loop, &c.cl, address, M_ECHO, "a", 1, 2000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EUNAVAILABLE);
	CHECK(!x.sent);
	CHECK(strstr(x.message, "next attempt in") != NULL);
	result_free(&x);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.fail_fast, 2);
	CHECK_EQ_U64(cs.connects, 2);

	/* Synchronous failures never call back. */
	{
		struct result y;
		CHECK_EQ_INT(start(&c.cl, "127.0.0.1", M_ECHO, "a", 1, 100, &y), DOCRAFT_EINVAL);
		CHECK_EQ_INT(start(&c.cl, "localhost:1", M_ECHO, "a", 1, 100, &y), DOCRAFT_EINVAL);
		CHECK_EQ_INT(start(&c.cl, address, M_ECHO, "a", 1, 0, &y), DOCRAFT_EINVAL);
		CHECK_EQ_INT(start(&c.cl, address, 0, "a", 1, 100, &y), DOCRAFT_EINVAL);
		run_for(&loop, 20);
		CHECK(!y.done);
	}
	client_stop(&loop, &c);
	listener_close(bare, flag_cb, &bare_closed);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &bare_closed, 5000));
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* Malformed frames close the connection; the server goes on serving. */
TEST(malformed_frames_close)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_stats ss;
	uint8_t h[RPC_FRAME_HEADER_SIZE + 4];
	struct {
		uint32_t length;
		uint8_t kind, flags;
		uint16_t status;
		uint32_t budget;
		const char *what;
	} bad[] = {
		{18, 7, 0, 0, 0, "bad kind"},
		{18, 1, 1, 0, 0, "flags"},
		{3, 1, 0, 0, 0, "length below the header"},
		{18, 1, 0, 4, 0, "request with a status"},
		{18, 2, 0, 0, 0, "a response sent to the server"},
		{22, 2, 0, 0, 5, "response with a budget"},
	};
	const size_t n_bad = sizeof bad / sizeof bad[0];

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	for (size_t i = 0; i < n_bad; i++) {
		struct raw r;
		raw_open(&loop, &r, s.address);
		raw_header(h, bad[i].length, bad[i].kind, bad[i].flags, 9, M_ECHO, bad[i].status,
			   bad[i].budget);
		memcpy(h + RPC_FRAME_HEADER_SIZE, "abcd", 4);
		raw_write(&r, h, sizeof h);
		CHECK_MSG(loop_run_until(&loop, raw_ended, &r, 5000), "%s: not closed", bad[i].what);
		CHECK_MSG(r.in.len == 0, "%s: %zu bytes answered", bad[i].what, r.in.len);
		raw_close(&loop, &r);
		CHECK_EQ_INT(ping(&loop, &c.cl, s.address, i), DOCRAFT_OK);
	}
	/* Garbage that is not even a header, then EOF mid-frame. */
	{
		struct raw r;
		uv_shutdown_t sreq;
		raw_open(&loop, &r, s.address);
		raw_write(&r, "\0\0\0\x20\x01\0", 6);
		CHECK_OK(uv_shutdown(&sreq, (uv_stream_t *)&r.tcp, NULL));
		CHECK(loop_run_until(&loop, raw_ended, &r, 5000));
		raw_close(&loop, &r);
	}
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.malformed, n_bad);
	CHECK_EQ_U64(ss.calls, n_bad); /* the pings */
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 99), DOCRAFT_OK);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* Oversized frames: a request over the server's maximum is answered
 * TOO_BIG with its call id, then closed; the client refuses to send one;
 * a reply over either side's maximum fails its call TOO_BIG. */
TEST(oversized_frames)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_options so;
	struct rpc_client_options co;
	struct rpc_server_stats ss;
	struct result x;
	uint8_t h[RPC_FRAME_HEADER_SIZE];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t *big = calloc(1, 8192);

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_frame = 4096;
	CHECK_OK(rpc_server_configure(&s.srv, &so, errmsg));
	so.max_frame = 10;
	CHECK_EQ_INT(rpc_server_configure(&s.srv, &so, errmsg), DOCRAFT_EINVAL);
	client_start(&c, &loop);

	/* Raw: a 5000-byte request. */
	{
		struct raw r;
		struct rpc_frame_decoder dec;
		struct rpc_frame f;
		const uint8_t *p;
		size_t n;
		Docraft__ErrorInfo *ei;

		raw_open(&loop, &r, s.address);
		raw_header(h, 5000 - 4, RPC_FRAME_REQUEST, 0, 77, M_ECHO, 0, 1000);
		raw_write(&r, h, sizeof h);
		raw_write(&r, big, 1000); /* the rest never needs to arrive */
		CHECK(loop_run_until(&loop, raw_ended, &r, 5000));
		rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
		p = r.in.data;
		n = r.in.len;
		CHECK_EQ_INT(rpc_frame_decoder_next(&dec, &p, &n, &f), RPC_FRAME_READY);
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_INT(f.kind, RPC_FRAME_RESPONSE);
		CHECK_EQ_U64(f.call_id, 77);
		CHECK_EQ_INT(f.method, M_ECHO);
		CHECK_EQ_INT(f.status, DOCRAFT_ETOOBIG);
		ei = docraft__error_info__unpack(NULL, f.len, f.payload);
		CHECK(ei != NULL);
		CHECK_EQ_INT(ei->code, DOCRAFT_ETOOBIG);
		CHECK_MSG(strstr(ei->message, "frame of 5000 bytes exceeds the maximum of 4096") !=
				  NULL,
			  "%s", ei->message);
		docraft__error_info__free_unpacked(ei, NULL);
		free(f.payload);
		rpc_frame_decoder_free(&dec);
		raw_close(&loop, &r);
		rpc_server_get_stats(&s.srv, &ss);
		CHECK_EQ_U64(ss.too_big, 1);
		CHECK_EQ_U64(ss.calls, 0);
	}

	/* The client checks its own maximum before sending. */
	rpc_client_options_default(&co);
	co.max_frame = 2048;
	CHECK_OK(rpc_client_configure(&c.cl, &co, errmsg));
	{
		struct result y;
		CHECK_EQ_INT(start(&c.cl, s.address, M_ECHO, big, 2048 - RPC_FRAME_HEADER_SIZE + 1,
				   1000, &y),
			     DOCRAFT_ETOOBIG);
		run_for(&loop, 10);
		CHECK(!y.done);
	}
	call(&loop, &c.cl, s.address, M_ECHO, big, 2048 - RPC_FRAME_HEADER_SIZE, 1000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_OK);
	CHECK_EQ_U64(x.reply.len, 2048 - RPC_FRAME_HEADER_SIZE);
	result_free(&x);

	/* A reply over the server's maximum becomes a TOO_BIG error. */
	call_u32(&loop, &c.cl, s.address, M_BIG, 5000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_ETOOBIG);
	CHECK_MSG(strstr(x.message, "reply to method 60004 of 5000 bytes") != NULL, "%s",
		  x.message);
	result_free(&x);

	/* A reply over the client's maximum (but not the server's) fails its
	 * call TOO_BIG and its connection: other calls there UNAVAILABLE. */
	{
		struct result held;
		CHECK_OK(start(&c.cl, s.address, M_HOLD, "h", 1, 5000, &held));
		wait_held(&s, 1);
		call_u32(&loop, &c.cl, s.address, M_BIG, 3000, &x);
		CHECK_EQ_INT(x.status, DOCRAFT_ETOOBIG);
		CHECK(strstr(x.message, "exceeds the maximum of 2048") != NULL);
		result_free(&x);
		CHECK(loop_run_until(&loop, result_done, &held, 5000));
		CHECK_EQ_INT(held.status, DOCRAFT_EUNAVAILABLE);
		CHECK(strstr(held.message, "malformed frame") != NULL);
		result_free(&held);
		rpc_reply(s.held[0], NULL, 0);
		s.n_held = 0;
	}
	/* And the connection comes back (it had worked: no backoff). */
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 5), DOCRAFT_OK);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
	free(big);
}

/* Server-side errors reach the caller with their code and message:
 * unknown method, every error.h code, NOT_LEADER with its hint. */
TEST(error_replies)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x;
	struct rpc_server_stats ss;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);

	call(&loop, &c.cl, s.address, M_UNKNOWN, "?", 1, 1000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EINVAL);
	CHECK_EQ_STR(x.message, "unknown method 777");
	CHECK(x.sent);
	result_free(&x);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.unknown_method, 1);

	call_u32(&loop, &c.cl, s.address, M_ERROR, DOCRAFT_ENOTLEADER, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_ENOTLEADER);
	CHECK_EQ_STR(x.message, "not the leader of tablet t1");
	CHECK_EQ_STR(x.leader, "127.0.0.2:9100");
	CHECK_EQ_U64(x.leader_id, 3);
	result_free(&x);

	for (int code = DOCRAFT_OK + 1; code < DOCRAFT_ERROR_MAX; code++) {
		char want[DOCRAFT_ERRMSG_SIZE];
		/* The proto's Status enum mirrors error.h value for value. */
		CHECK_MSG(protobuf_c_enum_descriptor_get_value(&docraft__status__descriptor,
							       code) != NULL,
			  "code %d missing from enum Status", code);
		if (code == DOCRAFT_ENOTLEADER)
			continue;
		call_u32(&loop, &c.cl, s.address, M_ERROR, (uint32_t)code, &x);
		CHECK_EQ_INT(x.status, code);
		snprintf(want, sizeof want, "failing with %s", docraft_strerror(code));
		CHECK_EQ_STR(x.message, want);
		CHECK_EQ_STR(x.leader, "");
		CHECK_EQ_U64(x.leader_id, 0);
		result_free(&x);
	}
	CHECK_EQ_U64(docraft__status__descriptor.n_values, DOCRAFT_ERROR_MAX);
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ETABLETNOTFOUND), "tablet not found");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ETABLENOTFOUND), "table not found");
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* Beyond max_inflight calls on a connection: SERVICE_BUSY, and the
 * handler is not called. */
TEST(busy_server)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_options so;
	struct result x[3];
	struct rpc_server_stats ss;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_inflight = 2;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	client_start(&c, &loop);
	for (int i = 0; i < 3; i++)
		CHECK_OK(start(&c.cl, s.address, M_HOLD, "h", 1, 5000, &x[i]));
	CHECK(loop_run_until(&loop, result_done, &x[2], 5000));
	CHECK_EQ_INT(x[2].status, DOCRAFT_EBUSY);
	CHECK(strstr(x[2].message, "2 calls in flight") != NULL);
	CHECK_EQ_U64(s.n_held, 2);
	CHECK(!x[0].done && !x[1].done);
	rpc_reply(s.held[0], "0", 1);
	rpc_reply(s.held[1], "1", 1);
	s.n_held = 0;
	CHECK(loop_run_until(&loop, result_done, &x[1], 5000));
	CHECK(loop_run_until(&loop, result_done, &x[0], 5000));
	for (int i = 0; i < 3; i++)
		result_free(&x[i]);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.busy, 1);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

struct close_check {
	struct result *x;
	size_t n;
	bool all_done_before_close;
	struct client *c;
};

static struct close_check *close_check;

static void checking_close_cb(struct rpc_client *cl)
{
	struct close_check *k = close_check;
	(void)cl;
	k->all_done_before_close = true;
	for (size_t i = 0; i < k->n; i++)
		if (!k->x[i].done)
			k->all_done_before_close = false;
	k->c->closed = true;
}

/* Closing the client fails its pending calls with CLOSED, all before the
 * close callback and none inside rpc_client_close; later calls fail
 * synchronously. The server's late answers are dropped. */
TEST(client_close_fails_pending)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x[5], y;
	struct close_check k = {x, 5, false, &c};

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	for (int i = 0; i < 5; i++)
		CHECK_OK(start(&c.cl, s.address, M_HOLD, "h", 1, 30000, &x[i]));
	wait_held(&s, 5);
	close_check = &k;
	rpc_client_close(&c.cl, checking_close_cb);
	for (int i = 0; i < 5; i++)
		CHECK(!x[i].done);
	CHECK_EQ_INT(start(&c.cl, s.address, M_ECHO, "a", 1, 100, &y), DOCRAFT_ECLOSED);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &c.closed, 5000));
	CHECK(k.all_done_before_close);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ_INT(x[i].status, DOCRAFT_ECLOSED);
		CHECK(x[i].sent);
		result_free(&x[i]);
	}
	CHECK(!y.done);
	/* The server sees the connection go; its handler answers anyway. */
	for (int i = 0; i < 100 && !rpc_call_abandoned(s.held[0]); i++)
		run_for(&loop, 10);
	CHECK(rpc_call_abandoned(s.held[0]));
	for (size_t i = 0; i < s.n_held; i++)
		rpc_reply_error(s.held[i], DOCRAFT_ENOTLEADER, "x", "127.0.0.1:1", 1);
	s.n_held = 0;
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

struct chain {
	struct rpc_client *cl;
	const char *address;
	struct rpc_call_req req;
	int n, want;
	bool failed;
};

static void chain_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct chain *ch = req->data;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	if (r->status != DOCRAFT_OK || r->reply_len != sizeof ch->n ||
	    memcmp(r->reply, &ch->n, sizeof ch->n) != 0) {
		ch->failed = true;
		return;
	}
	if (++ch->n == ch->want)
		return;
	/* The next call from inside the callback, reusing req. */
	req->data = ch;
	if (rpc_call(ch->cl, ch->address, M_ECHO, &ch->n, sizeof ch->n, 1000, req, chain_cb,
		     errmsg) != 0)
		ch->failed = true;
}

static bool chain_over(void *p)
{
	struct chain *ch = p;
	return ch->failed || ch->n == ch->want;
}

/* Calls issued from callbacks (the request struct reused), and a server
 * closed from inside a handler. */
TEST(calls_from_callbacks)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct chain ch;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	memset(&ch, 0, sizeof ch);
	ch.cl = &c.cl;
	ch.address = s.address;
	ch.want = 200;
	ch.req.data = &ch;
	CHECK_OK(rpc_call(&c.cl, s.address, M_ECHO, &ch.n, sizeof ch.n, 1000, &ch.req, chain_cb,
			  NULL));
	CHECK(loop_run_until(&loop, chain_over, &ch, 10000));
	CHECK(!ch.failed);
	CHECK_EQ_INT(ch.n, 200);

	/* The server closed by one of its handlers, other calls in flight. */
	{
		struct result x, y;
		CHECK_OK(start(&c.cl, s.address, M_HOLD, "h", 1, 5000, &x));
		wait_held(&s, 1);
		call(&loop, &c.cl, s.address, M_CLOSE, "c", 1, 5000, &y);
		CHECK_EQ_INT(y.status, DOCRAFT_EUNAVAILABLE);
		CHECK(loop_run_until(&loop, result_done, &x, 5000));
		CHECK_EQ_INT(x.status, DOCRAFT_EUNAVAILABLE);
		CHECK(loop_run_until(&loop, loop_flag_is_set, &s.srv_closed, 5000));
		CHECK(rpc_call_abandoned(s.held[0]));
		rpc_reply(s.held[0], "late", 4);
		s.n_held = 0;
		result_free(&x);
		result_free(&y);
	}
	client_stop(&loop, &c);
	listener_close(s.l, listener_closed_cb, &s);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &s.l_closed, 5000));
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* A payload for call i of a batch: its index then a pattern, length
 * varying with i. */
static size_t batch_payload(uint32_t i, uint8_t *out, size_t base)
{
	size_t n = base + (i * 37) % 301;
	out[0] = (uint8_t)(i >> 24);
	out[1] = (uint8_t)(i >> 16);
	out[2] = (uint8_t)(i >> 8);
	out[3] = (uint8_t)i;
	for (size_t k = 4; k < n; k++)
		out[k] = (uint8_t)(i * 31 + k);
	return n;
}

struct done_n {
	int *done;
	int n;
};

static bool done_reached(void *p)
{
	struct done_n *d = p;
	return *d->done >= d->n;
}

/* n echo calls started in one turn; returns when all are done. */
static void echo_batch(uv_loop_t *loop, struct client *c, const char *address, struct result *x,
		       uint32_t n, size_t base, uint8_t *scratch)
{
	int done = 0;
	struct done_n d = {&done, (int)n};

	completions = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = batch_payload(i, scratch, base);
		CHECK_OK(start(&c->cl, address, M_ECHO, scratch, len, 10000, &x[i]));
		x[i].counter = &done;
	}
	CHECK(loop_run_until(loop, done_reached, &d, 10000));
	for (uint32_t i = 0; i < n; i++) {
		size_t len = batch_payload(i, scratch, base);
		CHECK_EQ_INT(x[i].status, DOCRAFT_OK);
		CHECK_EQ_MEM(x[i].reply.data, x[i].reply.len, scratch, len);
		/* Sent in order, answered in order of arrival, read in order. */
		CHECK_EQ_INT(x[i].order, (int)i + 1);
		result_free(&x[i]);
	}
}

/* Frames queued on a connection in one loop turn leave in one uv_write
 * (at most 64 frames or 1 MiB per uv_write), in the order queued. */
TEST(coalesced_writes)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result *x = calloc(256, sizeof *x);
	uint8_t *scratch = malloc(2u << 20);
	struct rpc_client_stats cs0, cs;
	struct rpc_server_stats ss0, ss;
	int done;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);

	/* 32 calls before the connection exists: the preamble and all 32
	 * requests in one uv_write once connected; the server answers a read
	 * burst with fewer writes than answers. */
	echo_batch(&loop, &c, s.address, x, 32, 4, scratch);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.frames_sent, 32);
	CHECK_EQ_U64(cs.writes, 1);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.frames_sent, 32);
	CHECK_MSG(ss.writes < ss.frames_sent, "%llu writes for %llu frames",
		  (unsigned long long)ss.writes, (unsigned long long)ss.frames_sent);

	/* 200 calls in one turn on the open connection: 64 frames per write. */
	cs0 = cs;
	ss0 = ss;
	echo_batch(&loop, &c, s.address, x, 200, 4, scratch);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.frames_sent - cs0.frames_sent, 200);
	CHECK_EQ_U64(cs.writes - cs0.writes, 4);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.frames_sent - ss0.frames_sent, 200);
	CHECK(ss.writes - ss0.writes >= 4 && ss.writes - ss0.writes < 200);

	/* 1 MiB per write: 300,000-byte frames go three by three; a frame
	 * over 1 MiB goes alone. */
	cs0 = cs;
	echo_batch(&loop, &c, s.address, x, 8, 300000 - 300, scratch);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.writes - cs0.writes, 3);
	cs0 = cs;
	echo_batch(&loop, &c, s.address, x, 2, 1500000, scratch);
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.writes - cs0.writes, 2);

	/* Answers given in one turn, outside any read: one write for 32
	 * answers (in reverse order, as given), four for 200. */
	for (uint32_t round = 0; round < 2; round++) {
		uint32_t n = round == 0 ? 32 : 200;
		struct done_n d = {&done, (int)n};
		done = 0;
		completions = 0;
		for (uint32_t i = 0; i < n; i++) {
			CHECK_OK(start(&c.cl, s.address, M_HOLD, &i, sizeof i, 10000, &x[i]));
			x[i].counter = &done;
		}
		wait_held(&s, n);
		rpc_server_get_stats(&s.srv, &ss0);
		for (size_t i = n; i-- > 0;) {
			uint8_t b[8];
			memcpy(b, s.held[i]->request, 4);
			memcpy(b + 4, "done", 4);
			rpc_reply(s.held[i], b, sizeof b);
		}
		s.n_held = 0;
		CHECK(loop_run_until(&loop, done_reached, &d, 10000));
		rpc_server_get_stats(&s.srv, &ss);
		CHECK_EQ_U64(ss.frames_sent - ss0.frames_sent, n);
		CHECK_EQ_U64(ss.writes - ss0.writes, round == 0 ? 1 : 4);
		for (uint32_t i = 0; i < n; i++) {
			CHECK_EQ_INT(x[i].status, DOCRAFT_OK);
			CHECK_EQ_U64(x[i].reply.len, 8);
			CHECK(memcmp(x[i].reply.data, &i, 4) == 0);
			CHECK(memcmp(x[i].reply.data + 4, "done", 4) == 0);
			CHECK_EQ_INT(x[i].order, (int)(n - i));
			result_free(&x[i]);
		}
	}
	rpc_client_get_stats(&c.cl, &cs);
	CHECK_EQ_U64(cs.connects, 1);
	CHECK_EQ_U64(cs.timeouts + cs.disconnects + cs.late_replies, 0);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
	free(scratch);
	free(x);
}

/* A hook run once from a prepare or check callback. */
struct hook {
	uv_prepare_t prep;
	uv_check_t check;
	uv_timer_t wake; /* check hooks run after a poll: this one returns */
	bool use_check;
	bool armed;
	int open;
	void (*fn)(struct hook *);
	struct client *c;
	struct server *s;
	struct result *x;
	uint64_t at; /* loop time the hook ran */
};

static void hook_run(struct hook *h)
{
	if (!h->armed)
		return;
	h->armed = false;
	h->at = uv_now(h->s->loop);
	h->fn(h);
}

static void hook_prepare_cb(uv_prepare_t *p)
{
	hook_run(p->data);
}

static void hook_check_cb(uv_check_t *k)
{
	hook_run(k->data);
}

static void hook_wake_cb(uv_timer_t *t)
{
	(void)t;
}

static void hook_arm(struct hook *h, void (*fn)(struct hook *))
{
	h->fn = fn;
	h->armed = true;
	if (h->use_check)
		uv_timer_start(&h->wake, hook_wake_cb, 10, 0);
}

static void hook_call(struct hook *h)
{
	CHECK_OK(start(&h->c->cl, h->s->address, M_HOLD, "p", 1, 1000, h->x));
}

static void hook_answer(struct hook *h)
{
	CHECK_EQ_U64(h->s->n_held, 1);
	rpc_reply(h->s->held[0], "answer", 6);
	h->s->n_held = 0;
}

static void hook_close_cb(uv_handle_t *u)
{
	((struct hook *)u->data)->open--;
}

static bool hook_closed(void *p)
{
	return ((struct hook *)p)->open == 0;
}

/* A request queued from a prepare (or check) callback, and an answer
 * queued from one, are written without waiting for other I/O: nothing
 * else happens on the loop, and the call's 1 s deadline would expire
 * first if either stayed queued until the next poll returned. (A check
 * hook runs after a poll, so a 10 ms timer ends the poll before it.) */
static void queued_from_hook(bool use_check)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x;
	struct hook h;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 1), DOCRAFT_OK); /* connected, idle */

	memset(&h, 0, sizeof h);
	h.c = &c;
	h.s = &s;
	h.x = &x;
	h.use_check = use_check;
	uv_timer_init(&loop, &h.wake);
	h.wake.data = &h;
	if (use_check) {
		uv_check_init(&loop, &h.check);
		h.check.data = &h;
		uv_check_start(&h.check, hook_check_cb);
	} else {
		uv_prepare_init(&loop, &h.prep);
		h.prep.data = &h;
		uv_prepare_start(&h.prep, hook_prepare_cb);
	}
	/* The request, from the hook. */
	hook_arm(&h, hook_call);
	wait_held(&s, 1);
	CHECK(!h.armed);
	CHECK_MSG(uv_now(&loop) - h.at < 500, "request held after %llu ms",
		  (unsigned long long)(uv_now(&loop) - h.at));
	CHECK(!x.done);
	/* The answer, from the hook. */
	hook_arm(&h, hook_answer);
	CHECK(loop_run_until(&loop, result_done, &x, 5000));
	CHECK(!h.armed);
	CHECK_EQ_INT(x.status, DOCRAFT_OK);
	CHECK_EQ_MEM(x.reply.data, x.reply.len, "answer", 6);
	CHECK_MSG(x.at - h.at < 500, "answered after %llu ms", (unsigned long long)(x.at - h.at));
	result_free(&x);

	h.open = 2;
	uv_close((uv_handle_t *)&h.wake, hook_close_cb);
	uv_close(use_check ? (uv_handle_t *)&h.check : (uv_handle_t *)&h.prep, hook_close_cb);
	CHECK(loop_run_until(&loop, hook_closed, &h, 5000));
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

TEST(queued_from_prepare)
{
	queued_from_hook(false);
}

TEST(queued_from_check)
{
	queued_from_hook(true);
}

/* Closing with frames queued: the client drops its requests (the calls
 * fail CLOSED, the server never sees them); the server writes the answers
 * it queued before closing (as far as the socket takes them). */
TEST(close_with_queued_frames)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct result x[5], y[3];
	struct rpc_server_stats ss;
	struct client c2;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	client_start(&c, &loop);
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 1), DOCRAFT_OK);
	for (int i = 0; i < 5; i++)
		CHECK_OK(start(&c.cl, s.address, M_ECHO, "q", 1, 5000, &x[i]));
	client_stop(&loop, &c); /* in the same turn: nothing written */
	for (int i = 0; i < 5; i++) {
		CHECK(x[i].done);
		CHECK_EQ_INT(x[i].status, DOCRAFT_ECLOSED);
		result_free(&x[i]);
	}
	run_for(&loop, 50);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.calls, 1);

	/* Answers queued, then the server closes in the same turn. */
	client_start(&c2, &loop);
	for (int i = 0; i < 3; i++)
		CHECK_OK(start(&c2.cl, s.address, M_HOLD, "h", 1, 5000, &y[i]));
	wait_held(&s, 3);
	for (int i = 0; i < 3; i++)
		rpc_reply(s.held[i], "bye", 3);
	s.n_held = 0;
	server_stop(&s);
	for (int i = 0; i < 3; i++) {
		CHECK(loop_run_until(&loop, result_done, &y[i], 5000));
		CHECK_EQ_INT(y[i].status, DOCRAFT_OK);
		CHECK_EQ_MEM(y[i].reply.data, y[i].reply.len, "bye", 3);
		result_free(&y[i]);
	}
	client_stop(&loop, &c2);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* ---- resource bounds (issue 12) ---- */

struct open_n {
	struct rpc_server *srv;
	uint32_t n;
};

static bool open_reached(void *p)
{
	struct open_n *o = p;
	struct rpc_server_stats ss;
	rpc_server_get_stats(o->srv, &ss);
	return ss.open == o->n;
}

static void wait_open(uv_loop_t *loop, struct rpc_server *srv, uint32_t n)
{
	struct open_n o = {srv, n};
	CHECK_MSG(loop_run_until(loop, open_reached, &o, 5000), "%u connections not reached", n);
}

/* At most max_connections_per_ip from one source address and
 * max_connections in all: beyond, a connection is closed at once; a slot
 * freed is taken again. Sources 127.0.0.2..4. */
TEST(connection_caps)
{
	uv_loop_t loop;
	struct server s;
	struct rpc_server_options so;
	struct rpc_server_stats ss;
	struct raw a1, a2, a3, b1, c1, c2;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_connections = 3;
	so.max_connections_per_ip = 2;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	so.max_connections_per_ip = 0;
	CHECK_EQ_INT(rpc_server_configure(&s.srv, &so, NULL), DOCRAFT_EINVAL);

	raw_open_from(&loop, &a1, s.address, "127.0.0.2", true, true);
	raw_open_from(&loop, &a2, s.address, "127.0.0.2", true, true);
	wait_open(&loop, &s.srv, 2);
	/* A third from 127.0.0.2: over the per-address cap. */
	raw_open_from(&loop, &a3, s.address, "127.0.0.2", true, true);
	CHECK(loop_run_until(&loop, raw_ended, &a3, 5000));
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.refused, 1);
	CHECK_EQ_U64(ss.open, 2);
	/* Another address still gets in, up to the total. */
	raw_open_from(&loop, &b1, s.address, "127.0.0.3", true, true);
	wait_open(&loop, &s.srv, 3);
	raw_open_from(&loop, &c1, s.address, "127.0.0.4", true, true);
	CHECK(loop_run_until(&loop, raw_ended, &c1, 5000));
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.refused, 2);
	CHECK(!a1.ended && !a2.ended && !b1.ended);
	/* A slot freed is taken again. */
	raw_close(&loop, &a1);
	wait_open(&loop, &s.srv, 2);
	raw_open_from(&loop, &c2, s.address, "127.0.0.4", true, true);
	wait_open(&loop, &s.srv, 3);
	CHECK(!c2.ended);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.refused, 2);
	raw_close(&loop, &a2);
	raw_close(&loop, &a3);
	raw_close(&loop, &b1);
	raw_close(&loop, &c1);
	raw_close(&loop, &c2);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

static bool listener_refused(void *p)
{
	struct listener_stats st;
	listener_get_stats(p, &st);
	return st.refused > 0;
}

/* The listener's accept-stage cap: connections that have not sent their
 * preamble count per source address; beyond, closed at once. */
TEST(listener_pending_cap)
{
	uv_loop_t loop;
	struct server s;
	struct listener_stats st;
	struct raw a1, a2, b1;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	listener_set_max_pending(s.l, 2, 1);
	raw_open_from(&loop, &a1, s.address, "127.0.0.2", false, true);
	raw_open_from(&loop, &a2, s.address, "127.0.0.2", false, true);
	CHECK(loop_run_until(&loop, raw_ended, &a2, 5000));
	CHECK(loop_run_until(&loop, listener_refused, s.l, 5000));
	raw_open_from(&loop, &b1, s.address, "127.0.0.3", false, true);
	/* a1 finishes its preamble: no longer pending, and served. */
	{
		uint8_t pre[LISTENER_PREAMBLE_MAX];
		size_t n = listener_preamble_encode(pre, LISTENER_RPC, "", 0, NULL);
		raw_write(&a1, pre, n);
	}
	wait_open(&loop, &s.srv, 1);
	listener_get_stats(s.l, &st);
	CHECK_EQ_U64(st.refused, 1);
	CHECK(!a1.ended && !b1.ended);
	raw_close(&loop, &a1);
	raw_close(&loop, &a2);
	raw_close(&loop, &b1);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* A connection with nothing in flight is closed after idle_timeout_ms; one
 * with a call in flight is not. */
TEST(idle_timeout)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_options so;
	struct rpc_server_stats ss;
	struct result held, x;
	struct raw idle;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.idle_timeout_ms = 200;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	client_start(&c, &loop);
	CHECK_OK(start(&c.cl, s.address, M_HOLD, "h", 1, 30000, &held));
	wait_held(&s, 1);
	raw_open(&loop, &idle, s.address);
	CHECK(loop_run_until(&loop, raw_ended, &idle, 5000));
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.idle_closed, 1);
	/* The client's connection, with a call held since before, is still
	 * there: its answer arrives. */
	CHECK(!held.done);
	rpc_reply(s.held[0], "ok", 2);
	s.n_held = 0;
	CHECK(loop_run_until(&loop, result_done, &held, 5000));
	CHECK_EQ_INT(held.status, DOCRAFT_OK);
	result_free(&held);
	/* Idle now: closed in turn; the client reconnects at once. */
	{
		struct open_n o = {&s.srv, 0};
		CHECK(loop_run_until(&loop, open_reached, &o, 5000));
	}
	call(&loop, &c.cl, s.address, M_ECHO, "e", 1, 5000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_OK);
	result_free(&x);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.idle_closed, 2);
	raw_close(&loop, &idle);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* Requests are unpacked under a budget proportional to their size: a
 * message of many empty sub-messages (66 bytes decoded per 2 on the wire)
 * is answered TOO_BIG; garbage INVALID_ARGUMENT; the same count of real
 * one-column ops decodes. */
static void decode_write_handler(void *arg, struct rpc_call *call)
{
	Docraft__WriteRequest *rq = rpc_call_decode(call, &docraft__write_request__descriptor);
	(void)arg;
	if (rq == NULL)
		return;
	rpc_reply(call, &rq->n_ops, sizeof rq->n_ops);
	docraft__write_request__free_unpacked(rq, NULL);
}

TEST(decode_budget)
{
	enum { M_DECODE = 60010, N_OPS = 200000 };
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_stats ss;
	struct result x;
	struct buf b = BUF_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	ProtobufCMessage *m;

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	CHECK_OK(rpc_server_register(&s.srv, M_DECODE, decode_write_handler, NULL, errmsg));
	client_start(&c, &loop);

	/* WriteRequest.ops (field 7), each empty: 0x3a 0x00. */
	for (int i = 0; i < N_OPS; i++) {
		buf_push(&b, 0x3a);
		buf_push(&b, 0x00);
	}
	call(&loop, &c.cl, s.address, M_DECODE, b.data, b.len, 10000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_ETOOBIG);
	CHECK_MSG(strstr(x.message, "WriteRequest of 400000 bytes needs more than its decode "
				    "budget") != NULL,
		  "%s", x.message);
	result_free(&x);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.over_budget, 1);
	/* The same directly. */
	CHECK_EQ_INT(rpc_unpack(&docraft__write_request__descriptor, b.data, b.len, &m, errmsg),
		     DOCRAFT_ETOOBIG);
	CHECK(m == NULL);

	/* Garbage: INVALID_ARGUMENT. */
	call(&loop, &c.cl, s.address, M_DECODE, "\xff\xff\xff", 3, 5000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_EINVAL);
	CHECK_MSG(strstr(x.message, "malformed WriteRequest") != NULL, "%s", x.message);
	result_free(&x);

	/* Real ops of one int key and one column (19x decoded) fit. */
	{
		Docraft__WriteRequest rq = DOCRAFT__WRITE_REQUEST__INIT;
		Docraft__Datum k = DOCRAFT__DATUM__INIT, *pk = &k;
		Docraft__ColumnValue cv = DOCRAFT__COLUMN_VALUE__INIT, *pcv = &cv;
		Docraft__WriteOp *ops = calloc(N_OPS, sizeof *ops);
		Docraft__WriteOp **pops = calloc(N_OPS, sizeof *pops);
		size_t n_ops;

		k.v_case = DOCRAFT__DATUM__V_I;
		k.i = 1;
		cv.name = "a";
		cv.value = &k;
		for (int i = 0; i < N_OPS; i++) {
			docraft__write_op__init(&ops[i]);
			ops[i].kind = DOCRAFT__WRITE_OP__KIND__INSERT;
			ops[i].n_key = 1;
			ops[i].key = &pk;
			ops[i].n_columns = 1;
			ops[i].columns = &pcv;
			pops[i] = &ops[i];
		}
		rq.n_ops = N_OPS;
		rq.ops = pops;
		buf_reset(&b);
		buf_reserve(&b, protobuf_c_message_get_packed_size(&rq.base));
		b.len = protobuf_c_message_pack(&rq.base, b.data);
		call(&loop, &c.cl, s.address, M_DECODE, b.data, b.len, 10000, &x);
		CHECK_EQ_INT(x.status, DOCRAFT_OK);
		CHECK_EQ_U64(x.reply.len, sizeof n_ops);
		memcpy(&n_ops, x.reply.data, sizeof n_ops);
		CHECK_EQ_U64(n_ops, N_OPS);
		result_free(&x);
		free(ops);
		free(pops);
	}
	buf_free(&b);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* A client that sends requests and never reads the answers: once its
 * answers pile up past max_queued_bytes the server stops reading its
 * requests (so it does not run them all), and closes it after
 * slow_reader_timeout_ms. Other clients are served meanwhile. */
TEST(slow_reader)
{
	enum { N_REQ = 2000, REQ_LEN = 16 << 10 };
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_options so;
	struct rpc_server_stats ss;
	struct raw r;
	struct result x;
	uint8_t *req = calloc(1, RPC_FRAME_HEADER_SIZE + REQ_LEN);

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_queued_bytes = 64 << 10;
	so.slow_reader_timeout_ms = 300;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	client_start(&c, &loop);

	raw_open_from(&loop, &r, s.address, "127.0.0.2", true, false);
	for (uint32_t i = 0; i < N_REQ; i++) {
		raw_header(req, RPC_FRAME_HEADER_SIZE - 4 + REQ_LEN, RPC_FRAME_REQUEST, 0, i,
			   M_ECHO, 0, 0);
		raw_write(&r, req, RPC_FRAME_HEADER_SIZE + REQ_LEN);
	}
	/* Served meanwhile. */
	call(&loop, &c.cl, s.address, M_ECHO, "e", 1, 5000, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_OK);
	result_free(&x);
	{
		struct open_n o = {&s.srv, 1};
		CHECK(loop_run_until(&loop, open_reached, &o, 10000));
	}
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.slow_closed, 1);
	CHECK(ss.paused >= 1);
	test_note("slow reader: %" PRIu64 " of %d requests read before the close", ss.calls - 1,
		  N_REQ);
	CHECK(ss.calls - 1 < N_REQ);
	raw_close(&loop, &r);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
	free(req);
}

/* Request bytes of unanswered calls over every connection are bounded:
 * beyond max_inflight_bytes, SERVICE_BUSY; answered calls free their
 * share. */
TEST(inflight_bytes)
{
	uv_loop_t loop;
	struct server s;
	struct client c1, c2;
	struct rpc_server_options so;
	struct rpc_server_stats ss;
	struct result x[3], y;
	uint8_t payload[1500] = {0};

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_frame = 4096;
	so.max_inflight_bytes = 4095;
	CHECK_EQ_INT(rpc_server_configure(&s.srv, &so, NULL), DOCRAFT_EINVAL);
	so.max_inflight_bytes = 4096;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	client_start(&c1, &loop);
	client_start(&c2, &loop);
	/* Two connections: the bound is the server's, not a connection's. */
	CHECK_OK(start(&c1.cl, s.address, M_HOLD, payload, sizeof payload, 5000, &x[0]));
	CHECK_OK(start(&c2.cl, s.address, M_HOLD, payload, sizeof payload, 5000, &x[1]));
	wait_held(&s, 2);
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.inflight_bytes, 3000);
	call(&loop, &c2.cl, s.address, M_HOLD, payload, sizeof payload, 5000, &x[2]);
	CHECK_EQ_INT(x[2].status, DOCRAFT_EBUSY);
	CHECK_MSG(strstr(x[2].message, "3000 request bytes in flight (limit 4096)") != NULL, "%s",
		  x[2].message);
	CHECK_EQ_U64(s.n_held, 2);
	rpc_reply(s.held[0], NULL, 0);
	rpc_reply(s.held[1], NULL, 0);
	s.n_held = 0;
	CHECK(loop_run_until(&loop, result_done, &x[0], 5000));
	CHECK(loop_run_until(&loop, result_done, &x[1], 5000));
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.inflight_bytes, 0);
	CHECK_EQ_U64(ss.busy_bytes, 1);
	/* Room again. */
	CHECK_OK(start(&c1.cl, s.address, M_HOLD, payload, sizeof payload, 5000, &y));
	wait_held(&s, 1);
	rpc_reply(s.held[0], NULL, 0);
	s.n_held = 0;
	CHECK(loop_run_until(&loop, result_done, &y, 5000));
	CHECK_EQ_INT(y.status, DOCRAFT_OK);
	/* A connection closing with calls held gives their bytes back. */
	{
		struct result z;
		CHECK_OK(start(&c1.cl, s.address, M_HOLD, payload, sizeof payload, 5000, &z));
		wait_held(&s, 1);
		client_stop(&loop, &c1);
		CHECK(z.done);
		result_free(&z);
		{
			struct open_n o = {&s.srv, 1};
			CHECK(loop_run_until(&loop, open_reached, &o, 5000));
		}
		rpc_server_get_stats(&s.srv, &ss);
		CHECK_EQ_U64(ss.inflight_bytes, 0);
		rpc_reply(s.held[0], NULL, 0); /* detached: dropped */
		s.n_held = 0;
	}
	for (int i = 0; i < 3; i++)
		result_free(&x[i]);
	result_free(&y);
	client_stop(&loop, &c2);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

struct partial_at_least {
	struct rpc_server *srv;
	uint64_t bytes;
};

static bool partial_reached(void *p)
{
	struct partial_at_least *w = p;
	struct rpc_server_stats ss;
	rpc_server_get_stats(w->srv, &ss);
	return ss.partial_bytes >= w->bytes;
}

/* Frames still arriving count against max_inflight_bytes: a connection
 * whose partial frame would pass it is closed; the others are untouched. */
TEST(partial_frames_bounded)
{
	uv_loop_t loop;
	struct server s;
	struct client c;
	struct rpc_server_options so;
	struct rpc_server_stats ss;
	struct raw a, b;
	uint8_t frame[RPC_FRAME_HEADER_SIZE + 3000];

	start_loop(&loop);
	server_start(&s, &loop, "127.0.0.1:0");
	rpc_server_options_default(&so);
	so.max_frame = 4096;
	so.max_inflight_bytes = 4096;
	CHECK_OK(rpc_server_configure(&s.srv, &so, NULL));
	client_start(&c, &loop);
	memset(frame, 'x', sizeof frame);
	raw_header(frame, 18 + 3000, 1, 0, 1, M_ECHO, 0, 0);
	/* a: 2000 of its 3000 payload bytes, and it stays open. */
	raw_open(&loop, &a, s.address);
	raw_write(&a, frame, RPC_FRAME_HEADER_SIZE + 2000);
	{
		struct partial_at_least w = {&s.srv, RPC_FRAME_HEADER_SIZE + 2000};
		CHECK(loop_run_until(&loop, partial_reached, &w, 5000));
	}
	/* b: 2500 more would make 4522 > 4096: b is closed, a is not. */
	raw_open(&loop, &b, s.address);
	raw_write(&b, frame, RPC_FRAME_HEADER_SIZE + 2500);
	CHECK_MSG(loop_run_until(&loop, raw_ended, &b, 5000), "b was not closed");
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.partial_closed, 1);
	CHECK_EQ_U64(ss.partial_bytes, RPC_FRAME_HEADER_SIZE + 2000);
	CHECK(!a.ended);
	/* a finishes its frame: answered, nothing partial left. */
	raw_write(&a, frame + RPC_FRAME_HEADER_SIZE + 2000, 1000);
	CHECK(loop_run_until(&loop, raw_has_answer, &a, 5000));
	rpc_server_get_stats(&s.srv, &ss);
	CHECK_EQ_U64(ss.partial_bytes, 0);
	CHECK_EQ_INT(ping(&loop, &c.cl, s.address, 1), DOCRAFT_OK);
	raw_close(&loop, &a);
	raw_close(&loop, &b);
	client_stop(&loop, &c);
	server_stop(&s);
	CHECK_EQ_INT(loop_finish(&loop), 0);
}

/* ---- the pieces, without sockets ---- */

/* The id table grows past its 64 initial buckets and finds every call; the
 * heap gives the calls back in deadline order while calls leave it from
 * anywhere, and reports when its earliest deadline changes. */
TEST(pending_indexes)
{
	enum { N = 1000 };
	static struct rpc_call_req reqs[N];
	struct rpc_client cl;
	uint64_t x = 88172645463325252ull, last = 0;
	size_t left = N;

	memset(&cl, 0, sizeof cl);
	memset(reqs, 0, sizeof reqs);
	pending_init(&cl);
	for (size_t i = 0; i < N; i++) {
		bool earliest;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		reqs[i].id = i + 1;
		reqs[i].deadline = x % 5000;
		pending_id_insert(&cl, &reqs[i]);
		earliest = pending_deadline_push(&cl, &reqs[i]);
		CHECK(earliest == (cl.heap[0] == &reqs[i]));
	}
	CHECK_EQ_U64(cl.n_ids, N);
	CHECK(cl.ids_mask + 1 >= N);
	for (size_t i = 0; i < N; i++)
		CHECK(pending_id_find(&cl, i + 1) == &reqs[i]);
	CHECK(pending_id_find(&cl, N + 1) == NULL);
	/* Every third call completes early, from wherever it is in the heap. */
	for (size_t i = 0; i < N; i += 3) {
		bool was_first = cl.heap[0] == &reqs[i];
		CHECK(pending_deadline_remove(&cl, &reqs[i]) == was_first);
		CHECK_EQ_U64(reqs[i].heap_index, SIZE_MAX);
		pending_id_remove(&cl, &reqs[i]);
		CHECK(pending_id_find(&cl, i + 1) == NULL);
		left--;
	}
	/* The rest leave in deadline order. */
	while (cl.heap_len > 0) {
		struct rpc_call_req *r = cl.heap[0];
		CHECK(r->deadline >= last);
		last = r->deadline;
		CHECK(pending_deadline_remove(&cl, r));
		pending_id_remove(&cl, r);
		left--;
	}
	CHECK_EQ_U64(left, 0);
	CHECK_EQ_U64(cl.n_ids, 0);
	pending_free(&cl);
}

struct lnode {
	struct lnode *prev, *next;
	int v;
};

/* The values of the list at head, in order, as text ("" when empty); also
 * checks that every prev link mirrors a next link. */
static const char *list_text(struct lnode *head, char *out, size_t size)
{
	size_t n = 0;

	out[0] = '\0';
	CHECK(head == NULL || head->prev == NULL);
	for (struct lnode *p = head; p != NULL; p = p->next) {
		CHECK(p->next == NULL || p->next->prev == p);
		n += (size_t)snprintf(out + n, size - n, "%d", p->v);
	}
	return out;
}

TEST(intrusive_list)
{
	struct lnode a = {.v = 1}, b = {.v = 2}, c = {.v = 3}, *head = NULL, *first;
	char t[16];

	DLIST_PUSH(head, &a);
	DLIST_PUSH(head, &b);
	DLIST_PUSH(head, &c);
	CHECK_EQ_STR(list_text(head, t, sizeof t), "321");
	DLIST_REMOVE(head, &b); /* middle */
	CHECK_EQ_STR(list_text(head, t, sizeof t), "31");
	CHECK(b.prev == NULL && b.next == NULL);
	DLIST_REMOVE(head, &a); /* last */
	CHECK_EQ_STR(list_text(head, t, sizeof t), "3");
	DLIST_PUSH(head, &b);
	first = head;
	DLIST_REMOVE(head, first); /* first, through a copy of head */
	CHECK_EQ_STR(list_text(head, t, sizeof t), "3");
	DLIST_REMOVE(head, &c); /* the only one */
	CHECK(head == NULL);
	CHECK(c.prev == NULL && c.next == NULL);
}

/* listener_format_address writes back what listener_parse_address reads,
 * the longest address included; call->peer and rpc_peer use it. */
TEST(address_text)
{
	static const char *const cases[] = {"255.255.255.255:65535", "127.0.0.1:0",
					    "10.1.2.3:7100"};
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char out[LISTENER_ADDRESS_TEXT_MAX + 1];
	struct sockaddr_in a;

	CHECK_EQ_INT(strlen(cases[0]), LISTENER_ADDRESS_TEXT_MAX);
	CHECK_EQ_INT(LISTENER_ADDRESS_TEXT_MAX, RPC_ADDRESS_MAX);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_OK(listener_parse_address(cases[i], &a, errmsg));
		listener_format_address(&a, out);
		CHECK_EQ_STR(out, cases[i]);
	}
}

TEST_MAIN(T(ping_round_trips), T(thousand_in_flight_out_of_order), T(deadline_and_late_reply),
	  T(server_loss_and_reconnect), T(unreachable_backs_off), T(malformed_frames_close),
	  T(oversized_frames), T(error_replies), T(busy_server), T(client_close_fails_pending),
	  T(calls_from_callbacks), T(coalesced_writes), T(queued_from_prepare),
	  T(queued_from_check), T(close_with_queued_frames), T(connection_caps),
	  T(listener_pending_cap), T(idle_timeout), T(decode_budget), T(slow_reader),
	  T(inflight_bytes), T(partial_frames_bounded), T(pending_indexes), T(intrusive_list),
	  T(address_text))
