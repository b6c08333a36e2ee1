/* RPC on libuv: request/response calls in frames (rpc_frame.h) over TCP
 * connections to a server's one port (net/listener.h, preamble kind
 * LISTENER_RPC). Messages are protobuf (proto/rpc.proto and its siblings);
 * this layer moves bytes and never looks inside a payload except to build
 * and read ErrorInfo.
 *
 * Server: rpc_server_init attaches to a listener, rpc_server_register maps a
 * method number to a handler. A handler receives a struct rpc_call and must
 * answer it exactly once, now or later, with rpc_reply, rpc_reply_message,
 * rpc_reply_error or rpc_reply_errorf; that frees the call. If the
 * connection closed meanwhile the answer is dropped, safely: the call stays
 * valid until answered (rpc_call_abandoned tells the handler it may give up
 * early, but it must still answer).
 *
 * Client: one struct rpc_client per process (or per loop) shares one
 * connection per server address among all its callers. rpc_call sends a
 * request and calls back exactly once with the outcome: the reply, the
 * server's error (code, message, leader hint), DOCRAFT_ETIMEDOUT when the
 * deadline passes first (a reply arriving later is ignored),
 * DOCRAFT_EUNAVAILABLE when the connection fails or cannot be made (no new
 * attempt to that address before its backoff has passed: calls fail fast
 * meanwhile), DOCRAFT_ETOOBIG for a reply larger than the maximum frame,
 * DOCRAFT_ECLOSED when the client closes first. Whether a request was
 * executed is unknown after TIMED_OUT or UNAVAILABLE, unless
 * rpc_result.sent is false.
 *
 * Async rules (libuv's): a function taking a callback that returns an error
 * never calls it; callbacks never run inside the call that registered them
 * (failures found inside rpc_call are delivered from the loop); memory
 * given to a close function may be released only in or after its callback.
 *
 * Writes are coalesced: frames queued on one connection during a loop turn
 * (answers on the server, requests on the client) go out together, in
 * order, with one uv_write per connection (at most 64 frames or 1 MiB
 * each) in the check phase of that same turn; nothing waits for further
 * I/O, whichever phase queued them (prepare callbacks included).
 *
 * Threading: a server or client and everything it hands out belong to the
 * thread running its loop. The process must ignore SIGPIPE (listener.h).
 *
 * Wire format and decoding: the design note at the top of codec.c;
 * server connections, lifetimes and limits: server.c; client connections,
 * deadlines and backoff: client.c; the write path both share: outq.c. */
#ifndef DOCRAFT_RPC_RPC_H
#define DOCRAFT_RPC_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "common/lathist.h"
#include "docraft/error.h"
#include "net/rpc_frame.h"
#include "net/rpc_limits.h"

struct listener;

/* "255.255.255.255:65535" */
#define RPC_ADDRESS_MAX 21

/* Private (outq.h, outq.c): the connections of a server or a client with
 * frames queued, written out once per loop turn. */
struct rpc_dirty_link {
	struct rpc_dirty_link *prev, *next;
	bool on; /* in the list */
};
struct rpc_flusher {
	uv_check_t check;            /* writes out the listed connections, active while any */
	uv_idle_t kick;              /* active with check: the loop polls without blocking */
	struct rpc_dirty_link *head;
};

/* The two halves of the API, sections of this header (they are not
 * included on their own). */
#include "rpc/server.h"
#include "rpc/client.h"

#endif
