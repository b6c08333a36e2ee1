/* An HTTP/1.1 server on a libuv loop: libmicrohttpd (MHD) parses and
 * answers, the loop drives it, the owner's handler renders each GET.
 *
 *   listening socket + connections ── MHD's epoll fd ── uv_poll ──► MHD_run
 *                                     MHD_get_timeout ──── uv_timer ──┘
 *                                                          │
 *                               handler(arg, request, response) on the loop thread
 *
 * Why libmicrohttpd: a maintained HTTP/1.1 server (Debian libmicrohttpd-dev)
 * that enforces its own limits — connection count, per-IP count, idle
 * timeout, a per-connection memory pool that answers 431/414 to oversized
 * headers and URLs, 400 to a malformed request line — and runs without
 * threads of its own from an external event loop through its epoll fd.
 * llhttp is only a parser: the connection handling, limits and response
 * writing would have been ours to write and to get right.
 *
 * Handlers are synchronous: they read the server's state (which lives on the
 * same loop thread, so no locks) and fill the response before returning.
 * GET and HEAD reach the handler; any other method is answered 405.
 *
 * Ownership: http_open allocates the server; http_close releases it from
 * its close callback. Threading: everything on the loop's thread. */
#ifndef DOCRAFT_HTTP_HTTP_H
#define DOCRAFT_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/buf.h"

/* The limits (http_options_default gives these). */
#define HTTP_DEFAULT_MAX_CONNECTIONS 256
#define HTTP_DEFAULT_MAX_PER_IP 32
#define HTTP_DEFAULT_TIMEOUT_S 10
#define HTTP_DEFAULT_MEMORY_BYTES (32u * 1024) /* request line + headers of one connection */

struct http_options {
	unsigned max_connections; /* beyond it, new connections are closed at once */
	unsigned max_per_ip;      /* the same per source address */
	unsigned timeout_s;       /* a connection silent that long is closed */
	size_t memory_bytes;      /* per connection; bigger headers: 431, longer URL: 414 */
};

void http_options_default(struct http_options *o);

/* One request, valid during the handler call only. */
struct http_request {
	const char *method; /* "GET" or "HEAD" */
	const char *path;   /* without the query string, e.g. "/api/v1/tablets" */
	void *conn;         /* private */
};

/* Filled by the handler: status (preset 200), content type (preset
 * "text/plain; charset=utf-8"; a static string) and body (preset empty). */
struct http_response {
	int status;
	const char *content_type;
	struct buf body;
};

typedef void (*http_handler_fn)(void *arg, const struct http_request *req,
				struct http_response *resp);

/* The query argument key of req, NULL if absent (decoded by MHD). */
const char *http_arg(const struct http_request *req, const char *key);

/* Fills resp with a plain-text error: status and the message. */
void http_error(struct http_response *resp, int status, const char *msg);

struct http_stats {
	uint64_t connections; /* accepted */
	uint64_t open;        /* open now */
	uint64_t requests;    /* reached the handler (or 405) */
	uint64_t status_2xx, status_4xx, status_5xx;
};

struct http_server;

/* Binds address ("IPv4:PORT"; port 0: any free port) and serves on loop,
 * handing every GET/HEAD to handler(arg, ...). o NULL: the defaults.
 * DOCRAFT_EINVAL for a bad address, DOCRAFT_EIO if it cannot be bound
 * (errmsg says why, *out NULL). */
int http_open(uv_loop_t *loop, const char *address, const struct http_options *o,
	      http_handler_fn handler, void *arg, struct http_server **out, char *errmsg);

/* "ip:port" bound (the real port when 0 was asked). */
const char *http_address(const struct http_server *h);

void http_get_stats(const struct http_server *h, struct http_stats *out);

/* Stops serving at once (open connections are closed, no handler runs any
 * more) and calls cb(arg) from a later loop turn when h is freed. Once. */
void http_close(struct http_server *h, void (*cb)(void *arg), void *arg);

#endif
