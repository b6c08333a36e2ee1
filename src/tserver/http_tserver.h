/* The tablet server's HTTP endpoints (docs/operations.md lists them):
 *
 *   /metrics           Prometheus: the families every server has
 *                      (server/web.h), every hosted replica's Raft and
 *                      storage state, the process's cache, memtables,
 *                      shared Raft log and checkpoint copies
 *   /healthz           200 while the process runs its loop
 *   /readyz            200 once started and until it drains; 503 otherwise
 *   /api/v1/tablets    JSON: the server and its replicas
 *   /                  HTML: the same as a page
 *
 * Threading: the handler runs on the server's loop thread (http/http.h)
 * and reads the manager, the tablets and the stores directly. */
#ifndef DOCRAFT_TSERVER_HTTP_TSERVER_H
#define DOCRAFT_TSERVER_HTTP_TSERVER_H

#include <stdbool.h>

#include "docdb/store_env.h"
#include "http/http.h"
#include "raftlog/raftlog.h"
#include "server/skeleton.h"
#include "tablet/remote_copy.h"
#include "tserver/manager.h"

/* What the handler reads; the owner (tserver_main.c) fills it and keeps it
 * alive while the HTTP server is open. Pointers are NULL until their part
 * is open and again once it is closed (the *_on flags say so). */
struct tserver_http {
	struct server *proc;
	const char *uuid;
	struct manager *m;
	const bool *m_on;
	struct store_env *const *env;
	struct copy_server *copy;
	const bool *copy_on;
	struct raftlog *const *log; /* *log NULL: per-tablet logs */
	const bool *ready;          /* serving: started and not draining */
};

/* The http_handler_fn (http/http.h); arg is a struct tserver_http. */
void tserver_http_handle(void *arg, const struct http_request *req, struct http_response *resp);

#endif
