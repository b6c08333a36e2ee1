/* The RPC client's pending calls, by call id and by deadline (internal to
 * src/rpc/; only client.c calls these).
 *
 * Both indexes live in struct rpc_client (ids, heap: rpc.h) and link
 * struct rpc_call_req through its private fields (id_next, heap_index);
 * they own no call, only the arrays that point at them. A call is in both
 * from rpc_call until it completes (client.c removes it from both before
 * its callback runs). Threading: the client's loop thread. */
#ifndef DOCRAFT_RPC_PENDING_H
#define DOCRAFT_RPC_PENDING_H

#include <stdbool.h>
#include <stdint.h>

#include "rpc/rpc.h"

/* Empty indexes for cl (after its memset); released by pending_free, once
 * both are empty. */
void pending_init(struct rpc_client *cl);
void pending_free(struct rpc_client *cl);

/* The id table: req->id must be unique among the calls in it. */
void pending_id_insert(struct rpc_client *cl, struct rpc_call_req *req);
/* The call with id, or NULL. */
struct rpc_call_req *pending_id_find(struct rpc_client *cl, uint64_t id);
/* PRE: req is in the table. */
void pending_id_remove(struct rpc_client *cl, struct rpc_call_req *req);

/* The deadline heap: a min-heap on req->deadline, cl->heap[0] the
 * earliest. Both return true when the earliest deadline changed (the
 * caller then re-arms its timer). PRE for remove: req is in the heap; its
 * heap_index is SIZE_MAX afterwards. */
bool pending_deadline_push(struct rpc_client *cl, struct rpc_call_req *req);
bool pending_deadline_remove(struct rpc_client *cl, struct rpc_call_req *req);

#endif
