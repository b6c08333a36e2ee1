/* The HTTP side of the skeleton, the same on both servers: the
 * --http-address flag's server (http/http.h) and its close step, and the
 * /metrics families every server has (the process, its RPC port by method,
 * the HTTP server itself, the loop's lag). What each server shows beyond
 * that is its own handler's (tserver/http_tserver.c, master/http_master.c).
 *
 * Threading: the loop's thread, like the rest of the skeleton. */
#ifndef DOCRAFT_SERVER_WEB_H
#define DOCRAFT_SERVER_WEB_H

#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "http/metrics.h"
#include "server/skeleton.h"

/* The ports of design.md. */
#define SERVER_HTTP_PORT_MASTER 7000
#define SERVER_HTTP_PORT_TSERVER 9000

/* Opens the HTTP server with handler(arg, ...) at s->http_address: "off"
 * none; ":PORT" the IP of rpc_address and PORT; not given: the IP of
 * rpc_address and default_port. Logs the address served. Returns 0, or -1
 * after logging why when an address given cannot be used (the start
 * fails); when the default cannot be bound (another server of the host
 * has it) it warns and runs without HTTP. Close with server_step_http. */
int server_http_open(struct server *s, const char *rpc_address, unsigned default_port,
		     http_handler_fn handler, void *arg);

/* The close step of the HTTP server (nothing if none). */
void server_step_http(struct server *s);

/* The loop-lag probe's measure of one turn (us): how late it ran. */
void server_lag_record(struct server *s, uint64_t lag_us);

/* Writes the families every server has (see above) into m. */
void server_metrics(struct server *s, struct metrics *m);

/* /healthz (200 "ok") and /readyz (200 "ready" if ready, else 503 with
 * why_not): true if req was one of them and resp is filled. */
bool server_http_health(const struct http_request *req, struct http_response *resp, bool ready,
			const char *why_not);

/* The method's name for labels and pages ("TSERVER_WRITE"), "" if unknown. */
const char *server_method_name(uint16_t method);

#endif
