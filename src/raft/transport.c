/* raft_uv_transport for one tablet replica over the shared listener.
 *
 * Outgoing connection ("conn"), modelled on canonical/raft's
 * src/uv_tcp_connect.c but non-blocking and with our preamble:
 *
 *   uv_tcp_connect -> connect_cb: uv_write(preamble) -> write_cb: give the
 *   stream to raft (req->cb(req, stream, 0)), free the conn.
 *
 * Every failure, and cancellation by the close method, is one path: set
 * c->status (RAFT_NOCONNECTION or RAFT_CANCELED) and uv_close the TCP
 * handle; libuv then completes a pending connect or write request with
 * UV_ECANCELED (whose callbacks see c->status set and return), and the close
 * callback reports c->status to raft and frees the handle and the conn. A
 * conn stays on tp->conns until that close callback, so the transport's
 * close completes only after raft has seen every connect callback — raft_uv
 * waits for them and may free its state right after our close callback.
 *
 * The close method always completes asynchronously (a throwaway timer
 * handle is closed to get a callback on the next loop iteration), never
 * from inside raft's own close call. */
#include "raft/transport.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "net/listener.h"

struct conn;

struct tp {
	struct raft_uv_transport *t;
	struct listener *l;
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	raft_id id; /* own raft id, set by init */
	char address[LISTENER_ADDRESS_MAX + 1];
	bool registered;
	bool closing;
	bool closer_closed;
	bool closed;
	uv_timer_t closer;
	raft_uv_transport_close_cb close_cb;
	struct conn *conns; /* connect requests not completed yet */
	listener_peer_check_cb check; /* given to the listener on listen */
	void *check_arg;
	raft_uv_accept_cb accept_cb; /* raft_uv's, set by listen */
};

struct conn {
	struct tp *tp;
	struct conn *prev, *next;
	struct raft_uv_connect *req;
	uv_tcp_t *tcp; /* raft_malloc'd: raft_uv frees it with raft_free */
	uv_connect_t connect;
	uv_write_t write;
	int status; /* 0 while running; the callback status once closing */
	char peer[LISTENER_ADDRESS_MAX + 1];
	size_t len;
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
};

static void free_handle(uv_handle_t *h)
{
	raft_free(h);
}

static void unlink_conn(struct conn *c)
{
	DLIST_REMOVE(c->tp->conns, c);
}

static void maybe_closed(struct tp *tp)
{
	if (!tp->closing || tp->closed || !tp->closer_closed || tp->conns != NULL)
		return;
	tp->closed = true;
	tp->close_cb(tp->t); /* raft may call transport_close from here: tp is gone */
}

/* ---- connect ---- */

static void conn_close_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct tp *tp = c->tp;
	struct raft_uv_connect *req = c->req;
	int status = c->status;

	ASSERT(status != 0);
	unlink_conn(c);
	raft_free(h);
	free(c);
	req->cb(req, NULL, status);
	maybe_closed(tp);
}

static void conn_fail(struct conn *c, int status, const char *why)
{
	ASSERT(c->status == 0);
	if (status != RAFT_CANCELED)
		TLOG_DEBUG(c->tp->tablet_id, 0, "raft connect to %s: %s", c->peer, why);
	c->status = status;
	uv_close((uv_handle_t *)c->tcp, conn_close_cb);
}

static void write_cb(uv_write_t *w, int status)
{
	struct conn *c = w->data;
	struct raft_uv_connect *req = c->req;
	uv_stream_t *s = (uv_stream_t *)c->tcp;

	if (c->status != 0)
		return; /* closing: conn_close_cb reports */
	if (status != 0) {
		conn_fail(c, RAFT_NOCONNECTION, uv_strerror(status));
		return;
	}
	unlink_conn(c);
	free(c);
	s->data = NULL;
	req->cb(req, s, 0);
}

static void connect_cb(uv_connect_t *cr, int status)
{
	struct conn *c = cr->data;
	uv_buf_t buf;
	int rv;

	if (c->status != 0)
		return; /* closing: conn_close_cb reports */
	if (status != 0) {
		conn_fail(c, RAFT_NOCONNECTION, uv_strerror(status));
		return;
	}
	uv_tcp_nodelay(c->tcp, 1);
	buf = uv_buf_init((char *)c->preamble, (unsigned)c->len);
	c->write.data = c;
	rv = uv_write(&c->write, (uv_stream_t *)c->tcp, &buf, 1, write_cb);
	if (rv != 0)
		conn_fail(c, RAFT_NOCONNECTION, uv_strerror(rv));
}

static int bind_source(struct tp *tp, uv_tcp_t *tcp)
{
	return transport_bind_source(tp->l, tcp);
}

static int tp_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
		      const char *address, raft_uv_connect_cb cb)
{
	struct tp *tp = t->impl;
	struct sockaddr_in addr;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct conn *c;
	int rv;

	(void)id;
	PRE(tp->id != 0);
	if (tp->closing)
		return RAFT_CANCELED;
	if (listener_parse_address(address, &addr, errmsg) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "%s", errmsg);
		return RAFT_NOCONNECTION;
	}
	c = xzalloc(sizeof *c);
	c->tp = tp;
	c->req = req;
	req->cb = cb;
	snprintf(c->peer, sizeof c->peer, "%s", address);
	c->len = listener_preamble_encode(c->preamble, LISTENER_RAFT, tp->tablet_id, tp->id,
					  tp->address);
	ASSERT(c->len > 0); /* every field was validated by init */
	c->tcp = raft_malloc(sizeof *c->tcp);
	if (c->tcp == NULL)
		PANIC("out of memory");
	rv = uv_tcp_init_ex(listener_loop(tp->l), c->tcp, AF_INET);
	if (rv != 0) { /* no socket (EMFILE, ...): nothing to close */
		raft_free(c->tcp);
		free(c);
		snprintf(t->errmsg, sizeof t->errmsg, "socket: %s", uv_strerror(rv));
		return RAFT_NOCONNECTION;
	}
	c->tcp->data = c;
	c->connect.data = c;
	rv = bind_source(tp, c->tcp);
	if (rv == 0)
		rv = uv_tcp_connect(&c->connect, c->tcp, (const struct sockaddr *)&addr,
				    connect_cb);
	if (rv != 0) {
		/* Synchronous failure: no callback; the handle closes on its own. */
		snprintf(t->errmsg, sizeof t->errmsg, "connect to %s: %s", address,
			 uv_strerror(rv));
		uv_close((uv_handle_t *)c->tcp, free_handle);
		free(c);
		return RAFT_NOCONNECTION;
	}
	DLIST_PUSH(tp->conns, c);
	return 0;
}

/* ---- the other methods ---- */

static int tp_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	struct tp *tp = t->impl;
	size_t n;

	if (id == 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "raft id 0");
		return RAFT_INVALID;
	}
	n = strnlen(address, LISTENER_ADDRESS_MAX + 1);
	if (n == 0 || n > LISTENER_ADDRESS_MAX) {
		snprintf(t->errmsg, sizeof t->errmsg, "address of %zu bytes", n);
		return RAFT_INVALID;
	}
	for (size_t i = 0; i < n; i++) {
		if (address[i] < 0x21 || address[i] > 0x7e) {
			snprintf(t->errmsg, sizeof t->errmsg, "address with byte 0x%02x",
				 (unsigned char)address[i]);
			return RAFT_INVALID;
		}
	}
	tp->id = id;
	memcpy(tp->address, address, n + 1);
	return 0;
}

/* The listener's accept callback for this tablet: hands the stream to raft_uv. */
static void on_accept(void *owner, uint64_t id, const char *address, uv_stream_t *stream)
{
	struct raft_uv_transport *t = owner;
	struct tp *tp = t->impl;
	tp->accept_cb(t, id, address, stream);
}

static int tp_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	struct tp *tp = t->impl;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	PRE(!tp->closing && !tp->registered);
	tp->accept_cb = cb;
	if (listener_register(tp->l, tp->tablet_id, t, on_accept, errmsg) != 0) {
		snprintf(t->errmsg, sizeof t->errmsg, "%s", errmsg);
		return RAFT_BUSY;
	}
	tp->registered = true;
	listener_set_peer_check(tp->l, tp->tablet_id, t, tp->check, tp->check_arg);
	return 0;
}

static void closer_close_cb(uv_handle_t *h)
{
	struct tp *tp = h->data;
	tp->closer_closed = true;
	maybe_closed(tp);
}

static void tp_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	struct tp *tp = t->impl;
	int rv;

	PRE(!tp->closing);
	tp->closing = true;
	tp->close_cb = cb;
	if (tp->registered) {
		listener_unregister(tp->l, tp->tablet_id, tp->t);
		tp->registered = false;
	}
	for (struct conn *c = tp->conns; c != NULL; c = c->next)
		if (c->status == 0)
			conn_fail(c, RAFT_CANCELED, "transport closing");
	rv = uv_timer_init(listener_loop(tp->l), &tp->closer);
	ASSERT(rv == 0);
	tp->closer.data = tp;
	uv_close((uv_handle_t *)&tp->closer, closer_close_cb);
}

/* ---- public ---- */

int transport_init(struct raft_uv_transport *t, struct listener *l, const char *tablet_id,
		   char *errmsg)
{
	struct tp *tp;
	size_t n;

	PRE(t != NULL && l != NULL);
	/* raft_uv frees the streams it owns with raft_free. */
	listener_set_stream_allocator(raft_malloc, raft_free);
	n = tablet_id != NULL ? strnlen(tablet_id, LISTENER_TABLET_ID_MAX + 1) : 0;
	if (n == 0 || n > LISTENER_TABLET_ID_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet id of %zu bytes (1..%d)", n,
			       LISTENER_TABLET_ID_MAX);
	for (size_t i = 0; i < n; i++)
		if (tablet_id[i] < 0x21 || tablet_id[i] > 0x7e)
			return err_set(errmsg, DOCRAFT_EINVAL, "tablet id with byte 0x%02x",
				       (unsigned char)tablet_id[i]);
	tp = xzalloc(sizeof *tp);
	tp->t = t;
	tp->l = l;
	memcpy(tp->tablet_id, tablet_id, n + 1);
	t->impl = tp; /* t->data is left alone: raft_uv_init may have set it */
	t->errmsg[0] = '\0';
	t->init = tp_init;
	t->listen = tp_listen;
	t->connect = tp_connect;
	t->close = tp_close;
	return 0;
}

void transport_set_peer_check(struct raft_uv_transport *t, listener_peer_check_cb cb, void *arg)
{
	struct tp *tp = t->impl;

	tp->check = cb;
	tp->check_arg = arg;
	if (tp->registered)
		listener_set_peer_check(tp->l, tp->tablet_id, t, cb, arg);
}

int transport_bind_source(struct listener *l, uv_tcp_t *tcp)
{
	struct sockaddr_in src = *listener_sockaddr(l);
	uv_os_fd_t fd;

	if (src.sin_addr.s_addr == htonl(INADDR_ANY))
		return 0;
	src.sin_port = 0;
#ifdef IP_BIND_ADDRESS_NO_PORT
	if (uv_fileno((uv_handle_t *)tcp, &fd) == 0) {
		int one = 1;
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
	}
#else
	(void)fd;
#endif
	return uv_tcp_bind(tcp, (const struct sockaddr *)&src, 0);
}

const char *transport_tablet_id(const struct raft_uv_transport *t)
{
	const struct tp *tp = t->impl;
	return tp->tablet_id;
}

bool transport_check_peer(const struct raft_uv_transport *t, uint64_t id, const char *address,
			  const struct sockaddr_in *peer)
{
	const struct tp *tp = t->impl;
	return tp->check == NULL || tp->check(tp->check_arg, id, address, peer);
}

void transport_close(struct raft_uv_transport *t)
{
	struct tp *tp = t->impl;

	if (tp == NULL)
		return;
	PRE(tp->conns == NULL);
	PRE(!tp->closing || tp->closed);
	if (tp->registered)
		listener_unregister(tp->l, tp->tablet_id, tp->t);
	free(tp);
	t->impl = NULL;
}
