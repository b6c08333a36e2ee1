/* The HTTP side of the skeleton, the same on both servers: the
 * --http-address flag's server (http/http.h) and its close step, and the
 * /metrics families every server has (the process, its RPC port by method,
 * the HTTP server itself, the loop's lag), and the loop-lag probe. What each server shows beyond
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

/* The loop-lag probe, after server_open: every SERVER_LAG_PERIOD_MS a
 * timer (unref'ed: it keeps no loop alive) compares when it runs with when
 * it was due; the difference is how long the loop thread was busy with
 * something else (a handler, a RocksDB call, a stall). Everything of the
 * server runs on that thread, so a lag near the election timeout costs
 * leaderships: it goes into /metrics (docraft_loop_lag_seconds) and the log
 * (WARN from 100 ms, naming election_ms when not 0; DEBUG from 10 ms).
 * Close it with server_step_lag. */
#define SERVER_LAG_PERIOD_MS 100
void server_lag_start(struct server *s, unsigned election_ms);
void server_step_lag(struct server *s);

/* Writes the families every server has (see above) into m. */
void server_metrics(struct server *s, struct metrics *m);

/* /healthz (200 "ok") and /readyz (200 "ready" if ready, else 503 with
 * why_not): true if req was one of them and resp is filled. */
bool server_http_health(const struct http_request *req, struct http_response *resp, bool ready,
			const char *why_not);

/* The method's name for labels and pages ("TSERVER_WRITE"), "" if unknown. */
const char *server_method_name(uint16_t method);

#endif
