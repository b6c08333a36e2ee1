/* The master's HTTP endpoints (docs/operations.md lists them):
 *
 *   /metrics           Prometheus: the families every server has
 *                      (server/web.h), the catalog tablet's Raft state and,
 *                      on the leader, the cluster: tservers live / dead,
 *                      tables, tablets, leaderless and under-replicated
 *                      tablets, replicas and leaders per tserver
 *   /healthz           200 while the process runs its loop
 *   /readyz            200 on the loaded leader and on a follower that
 *                      knows the leader; 503 otherwise (election, loading)
 *   /api/v1/cluster    JSON: tservers with liveness and load, tables,
 *                      tablets with replicas, leader and health
 *   /                  HTML overview: tservers, tables, unhealthy tablets
 *   /table?name=T      HTML: T's tablet map over the 16-bit hash space
 *
 * A master that is not the leader holds no catalog: its pages and JSON
 * say so and name the leader's RPC address.
 *
 * Threading: the handler runs on the master's loop thread (http/http.h)
 * and reads the catalog directly. */
#ifndef DOCRAFT_MASTER_HTTP_MASTER_H
#define DOCRAFT_MASTER_HTTP_MASTER_H

#include "http/http.h"
#include "master/service.h"
#include "server/skeleton.h"

/* What the handler reads; the owner (master_main.c) keeps it alive while
 * the HTTP server is open. *m is NULL before master_open and after close. */
struct master_http {
	struct server *proc;
	struct master *const *m;
};

/* The http_handler_fn (http/http.h); arg is a struct master_http. */
void master_http_handle(void *arg, const struct http_request *req, struct http_response *resp);

#endif
