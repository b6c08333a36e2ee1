/* What the pieces of the RPC layer share (internal to src/rpc/: server.c,
 * client.c, codec.c, outq.c; nothing outside src/rpc/ may include it).
 *
 * Threading: the functions declared here are pure (any thread); the
 * buffers they return belong to the caller. */
#ifndef DOCRAFT_RPC_INTERNAL_H
#define DOCRAFT_RPC_INTERNAL_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "net/listener.h"
#include "net/rpc_frame.h"
#include "rpc/outq.h"
#include "rpc/rpc.h"

/* Peer addresses are written by listener_format_address. */
_Static_assert(RPC_ADDRESS_MAX == LISTENER_ADDRESS_TEXT_MAX, "address text sizes differ");

/* The one read buffer of a server or a client, shared by its connections
 * (one loop thread: a read callback consumes it before the next read). */
#define RPC_READ_BUF_SIZE (64u << 10)

/* The struct of type holding member at ptr. */
#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* codec.c: the bytes of a frame. */

/* The payload size of a frame carrying msg packed (msg not NULL) or len
 * raw bytes. */
size_t codec_payload_size(const ProtobufCMessage *msg, size_t len);
/* A frame with header hdr (hdr->len and hdr->payload ignored) whose payload
 * is msg packed (len must then be codec_payload_size(msg, 0)) or, msg
 * NULL, the len bytes at p (may be NULL when len is 0). The caller owns
 * the frame (outq_push gives it to a queue); never NULL. */
struct outq_frame *codec_frame(const struct rpc_frame *hdr, const ProtobufCMessage *msg,
			       const void *p, size_t len);

/* options.c: whether o is a valid option set (rpc.h says each field's
 * range): 0, or DOCRAFT_EINVAL with errmsg (may be NULL) saying which. */
int options_check_server(const struct rpc_server_options *o, char *errmsg);
int options_check_client(const struct rpc_client_options *o, char *errmsg);

#endif
