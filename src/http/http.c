/* The HTTP server. See http.h for the contract.
 *
 * Design. MHD runs in its "external event loop, epoll" mode: no thread of
 * its own (MHD_USE_EPOLL without MHD_USE_INTERNAL_POLLING_THREAD); all of
 * its sockets sit in one epoll set whose fd (MHD_DAEMON_INFO_EPOLL_FD) is
 * readable whenever any of them has an event. A uv_poll on that fd calls
 * MHD_run, which accepts, reads, parses, calls access_cb and writes without
 * blocking. After every run a uv_timer is set from MHD_get_timeout: MHD
 * asks for 0 when it has work left (data already read, a response to
 * continue) and otherwise for the nearest connection timeout, which is
 * how idle and slow clients are closed.
 *
 * MHD enforces the limits itself: MHD_OPTION_CONNECTION_LIMIT and
 * PER_IP_CONNECTION_LIMIT close new connections beyond the caps at accept,
 * CONNECTION_TIMEOUT closes silent ones, CONNECTION_MEMORY_LIMIT bounds the
 * pool a connection's request line and headers are read into (431 Request
 * Header Fields Too Large, 414 URI Too Long); a malformed request line is
 * answered 400 by MHD. None of these reach the handler.
 *
 * Closing: the poll is stopped before MHD_stop_daemon closes the epoll fd
 * (libuv must not watch a closed fd); the struct is freed once both
 * handles have called back. */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

/* A handler slower than this is logged as a warning (it held the loop). */
#define HTTP_SLOW_MS 100

struct http_server {
	uv_loop_t *loop;
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer;
	int closes; /* handles not yet closed */
	bool closing;
	void (*close_cb)(void *arg);
	void *close_arg;
	http_handler_fn handler;
	void *arg;
	char address[64];
	struct http_stats stats;
};

void http_options_default(struct http_options *o)
{
	o->max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
	o->max_per_ip = HTTP_DEFAULT_MAX_PER_IP;
	o->timeout_s = HTTP_DEFAULT_TIMEOUT_S;
	o->memory_bytes = HTTP_DEFAULT_MEMORY_BYTES;
}

const char *http_arg(const struct http_request *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

void http_error(struct http_response *resp, int status, const char *msg)
{
	resp->status = status;
	resp->content_type = "text/plain; charset=utf-8";
	buf_reset(&resp->body);
	buf_printf(&resp->body, "%d %s\n", status, msg);
}

static void count_status(struct http_server *h, int status)
{
	if (status >= 500)
		h->stats.status_5xx++;
	else if (status >= 400)
		h->stats.status_4xx++;
	else if (status >= 200 && status < 300)
		h->stats.status_2xx++;
}

static enum MHD_Result respond(struct MHD_Connection *conn, struct http_response *r,
			    bool allow_header)
{
	struct MHD_Response *mr;
	enum MHD_Result rv;
	size_t len = r->body.len;
	void *data = r->body.data;

	if (data == NULL) {
		mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		/* MHD frees it with free(): buf memory is malloc'ed (common/mem.h). */
		mr = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
		if (mr != NULL)
			buf_init(&r->body);
	}
	if (mr == NULL) {
		buf_free(&r->body);
		return MHD_NO;
	}
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow_header)
		MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rv = MHD_queue_response(conn, (unsigned)r->status, mr);
	MHD_destroy_response(mr);
	return rv;
}

/* MHD's access handler: once per request, as soon as its headers are in. */
static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **req_cls)
{
	struct http_server *h = cls;
	struct http_response r = {.status = 200, .content_type = "text/plain; charset=utf-8"};
	struct http_request rq = {.method = method, .path = url, .conn = conn};
	bool is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	bool is_head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	enum MHD_Result rv;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req_cls;
	buf_init(&r.body);
	h->stats.requests++;
	if (h->closing) {
		http_error(&r, 503, "Service Unavailable: closing");
	} else if (!is_get && !is_head) {
		http_error(&r, 405, "Method Not Allowed: only GET and HEAD");
	} else {
		uint64_t t0 = uv_hrtime(), ms;
		h->handler(h->arg, &rq, &r);
		if (r.status < 100 || r.status > 599)
			http_error(&r, 500, "Internal Server Error: bad status from the handler");
		/* The loop waited for this: say so when it was long. */
		ms = (uv_hrtime() - t0) / 1000000;
		LOG_AT(ms >= HTTP_SLOW_MS ? LOG_LVL_WARN : LOG_LVL_DEBUG, NULL, 0,
		       "http: %s %s: %d, %zu bytes rendered in %" PRIu64 " ms", method, url,
		       r.status, r.body.len, ms);
	}
	count_status(h, r.status);
	rv = respond(conn, &r, r.status == 405);
	buf_free(&r.body);
	return rv;
}

static void notify_cb(void *cls, struct MHD_Connection *conn, void **socket_ctx,
		      enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	(void)conn;
	(void)socket_ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		h->stats.connections++;
		h->stats.open++;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && h->stats.open > 0) {
		h->stats.open--;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;
	(void)cls;
	vsnprintf(line, sizeof line, fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	LOG_DEBUG("http: %s", line);
}

static void timer_cb(uv_timer_t *t);

/* Runs MHD and sets the timer from what it asks for next. */
static void run(struct http_server *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (h->closing)
		return;
	MHD_run(h->d);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		uv_timer_start(&h->timer, timer_cb, ms > 60000 ? 60000 : (uint64_t)ms, 0);
	else
		uv_timer_stop(&h->timer);
}

static void timer_cb(uv_timer_t *t)
{
	run(t->data);
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
	struct http_server *h = p->data;
	(void)events;
	if (status < 0)
		LOG_WARN("http: polling %s: %s", h->address, uv_strerror(status));
	run(h);
}

static int parse_address(const char *address, struct sockaddr_in *sa, char *errmsg)
{
	char ip[64];
	const char *colon = strrchr(address, ':');
	char *end;
	unsigned long port;

	if (colon == NULL || (size_t)(colon - address) >= sizeof ip || colon == address)
		return err_set(errmsg, DOCRAFT_EINVAL, "HTTP address '%s': expected IPv4:PORT",
			       address);
	memcpy(ip, address, (size_t)(colon - address));
	ip[colon - address] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port > 65535)
		return err_set(errmsg, DOCRAFT_EINVAL, "HTTP address '%s': bad port", address);
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1)
		return err_set(errmsg, DOCRAFT_EINVAL, "HTTP address '%s': '%s' is not an IPv4 "
			       "address", address, ip);
	return 0;
}

int http_open(uv_loop_t *loop, const char *address, const struct http_options *o,
	      http_handler_fn handler, void *arg, struct http_server **out, char *errmsg)
{
	struct http_options def;
	struct sockaddr_in sa;
	struct http_server *h;
	const union MHD_DaemonInfo *info;
	char ip[INET_ADDRSTRLEN];
	int fd, rv;

	*out = NULL;
	if (o == NULL) {
		http_options_default(&def);
		o = &def;
	}
	if ((rv = parse_address(address, &sa, errmsg)) != 0)
		return rv;
	h = xzalloc(sizeof *h);
	h->loop = loop;
	h->handler = handler;
	h->arg = arg;
	errno = 0;
	h->d = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, access_cb, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, /* first: it applies from here on */
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->memory_bytes,
		MHD_OPTION_NOTIFY_CONNECTION, notify_cb, h,
		MHD_OPTION_END);
	if (h->d == NULL) {
		rv = err_set(errmsg, DOCRAFT_EIO, "HTTP address %s: cannot listen (%s)", address,
			     errno != 0 ? strerror(errno) : "libmicrohttpd refused");
		free(h);
		return rv;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	fd = info != NULL ? info->epoll_fd : -1;
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
	snprintf(h->address, sizeof h->address, "%s:%u", ip,
		 info != NULL ? (unsigned)info->port : (unsigned)ntohs(sa.sin_port));
	if (fd < 0 || uv_poll_init(loop, &h->poll, fd) != 0) {
		MHD_stop_daemon(h->d);
		free(h);
		return err_set(errmsg, DOCRAFT_EIO, "HTTP address %s: no epoll fd to poll", address);
	}
	uv_timer_init(loop, &h->timer);
	h->poll.data = h;
	h->timer.data = h;
	uv_poll_start(&h->poll, UV_READABLE, poll_cb);
	*out = h;
	run(h); /* arms the timer */
	return 0;
}

const char *http_address(const struct http_server *h)
{
	return h->address;
}

void http_get_stats(const struct http_server *h, struct http_stats *out)
{
	*out = h->stats;
}

static void handle_closed(uv_handle_t *hd)
{
	struct http_server *h = hd->data;
	if (--h->closes > 0)
		return;
	if (h->close_cb != NULL)
		h->close_cb(h->close_arg);
	free(h);
}

void http_close(struct http_server *h, void (*cb)(void *arg), void *arg)
{
	PRE(!h->closing);
	h->closing = true;
	h->close_cb = cb;
	h->close_arg = arg;
	uv_poll_stop(&h->poll);
	uv_timer_stop(&h->timer);
	MHD_stop_daemon(h->d); /* closes every socket and the epoll fd */
	h->d = NULL;
	h->closes = 2;
	uv_close((uv_handle_t *)&h->poll, handle_closed);
	uv_close((uv_handle_t *)&h->timer, handle_closed);
}
