/* Sockets for the raft tests: see rawclient.h. */
#include "rawclient.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "test.h"

void start_loop(uv_loop_t *loop)
{
	signal(SIGPIPE, SIG_IGN);
	CHECK_OK(uv_loop_init(loop));
}

static void listener_closed_cb(void *arg)
{
	*(bool *)arg = true;
}

void close_listener(uv_loop_t *loop, struct listener *l)
{
	bool done = false;
	listener_close(l, listener_closed_cb, &done);
	CHECK(!done); /* never synchronous */
	CHECK(loop_run_until(loop, loop_flag_is_set, &done, 5000));
}

static void client_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char sink[4096];
	(void)h;
	(void)suggested;
	buf->base = sink;
	buf->len = sizeof sink;
}

static void client_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct client *c = s->data;
	(void)buf;
	if (nread > 0)
		c->n_received += (size_t)nread;
	if (nread < 0) {
		c->ended = true;
		uv_read_stop(s);
	}
}

static void client_connect_cb(uv_connect_t *req, int status)
{
	struct client *c = req->data;
	if (status != 0) {
		c->connect_failed = true;
		return;
	}
	c->connected = true;
	uv_read_start((uv_stream_t *)&c->tcp, client_alloc_cb, client_read_cb);
}

static bool client_connected(void *p)
{
	struct client *c = p;
	return c->connected || c->connect_failed;
}

bool client_ended(void *p)
{
	return ((struct client *)p)->ended;
}

void client_connect(uv_loop_t *loop, struct client *c, const char *address)
{
	struct sockaddr_in addr;
	memset(c, 0, sizeof *c);
	CHECK_OK(listener_parse_address(address, &addr, NULL));
	uv_tcp_init(loop, &c->tcp);
	c->tcp.data = c;
	c->creq.data = c;
	CHECK_OK(uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&addr, client_connect_cb));
	CHECK(loop_run_until(loop, client_connected, c, 5000));
	CHECK(c->connected);
}

static void write_done_cb(uv_write_t *w, int status)
{
	(void)status; /* the server may have closed on us already */
	free(w);
}

void client_write(struct client *c, const void *p, size_t n)
{
	uv_write_t *w = malloc(sizeof *w + n);
	uv_buf_t buf = uv_buf_init((char *)(w + 1), (unsigned)n);
	memcpy(w + 1, p, n);
	CHECK_OK(uv_write(w, (uv_stream_t *)&c->tcp, &buf, 1, write_done_cb));
}

void client_shutdown(struct client *c)
{
	CHECK_OK(uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, NULL));
}

static void client_close_cb(uv_handle_t *h)
{
	((struct client *)h->data)->closed = true;
}

static bool client_closed(void *p)
{
	return ((struct client *)p)->closed;
}

void client_close(uv_loop_t *loop, struct client *c)
{
	uv_close((uv_handle_t *)&c->tcp, client_close_cb);
	CHECK(loop_run_until(loop, client_closed, c, 5000));
}
