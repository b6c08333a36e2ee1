/* The bytes of RPC frames: status codes on the wire, building a frame
 * from a message, and decoding requests under a memory budget.
 *
 * Design note.
 *
 * Wire. A client connects to a server's one port, sends the listener
 * preamble of kind LISTENER_RPC (no tablet id), then request frames; the
 * server answers with response frames carrying the request's call id and
 * method (net/rpc_frame.h for the 22-byte header). Responses come in any
 * order: many calls are in flight per connection and are matched by call
 * id. A response's status is a DOCRAFT_E* code; when it is not DOCRAFT_OK
 * the payload is an ErrorInfo (proto/rpc.proto) with the message and, for
 * NOT_LEADER, the leader hint. The status codes are the error.h codes
 * themselves; the Status enum of rpc.proto mirrors them for other
 * languages, checked below at compile time.
 *
 * Frames. A frame to send is built once, header and packed payload in one
 * allocation (struct outq_frame), and then only queued and written
 * (outq.c): nothing is copied again on the way to the socket.
 *
 * Decoding under a budget (rpc_unpack, rpc.h). protobuf-c allocates every
 * element of a repeated field on its own, so a few bytes on the wire can
 * cost a hundred in memory. Every request is unpacked through an
 * allocator that fails once RPC_DECODE_BUDGET(len) bytes are taken; a
 * failure that came from the budget is told apart (TOO_BIG) from a
 * payload that does not decode (INVALID_ARGUMENT). The memory is plain
 * malloc'd, so the generated free_unpacked(m, NULL) releases it. */
#include "rpc/internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "rpc.pb-c.h"

/* The wire status codes are the error.h codes (see proto/rpc.proto). */
#define SAME_CODE(status, code) \
	_Static_assert((int)DOCRAFT__STATUS__STATUS_##status == (int)DOCRAFT_##code, #status)
SAME_CODE(OK, OK);
SAME_CODE(INVALID_ARGUMENT, EINVAL);
SAME_CODE(NOT_FOUND, ENOTFOUND);
SAME_CODE(CORRUPT, ECORRUPT);
SAME_CODE(IO_ERROR, EIO);
SAME_CODE(NO_SPACE, ENOSPC);
SAME_CODE(NO_MEMORY, ENOMEM);
SAME_CODE(SNAPSHOT_TOO_OLD, ETOOOLD);
SAME_CODE(CLOCK_SKEW, ECLOCKSKEW);
SAME_CODE(TOO_BIG, ETOOBIG);
SAME_CODE(CLOSED, ECLOSED);
SAME_CODE(NOT_LEADER, ENOTLEADER);
SAME_CODE(LEADERSHIP_LOST, ELEADERLOST);
SAME_CODE(UNAVAILABLE, EUNAVAILABLE);
SAME_CODE(SERVICE_BUSY, EBUSY);
SAME_CODE(TIMED_OUT, ETIMEDOUT);
SAME_CODE(TABLET_NOT_FOUND, ETABLETNOTFOUND);
SAME_CODE(TABLE_NOT_FOUND, ETABLENOTFOUND);
SAME_CODE(CONDITION, ECONDITION);
SAME_CODE(WRONG_TABLET, EWRONGTABLET);
/* A new error.h code? Add it to enum Status in proto/rpc.proto and above. */
_Static_assert(DOCRAFT_ERROR_MAX == 20, "error.h and rpc.proto Status out of sync");
_Static_assert((int)DOCRAFT__METHOD__METHOD_PING == 1, "method");

size_t codec_payload_size(const ProtobufCMessage *msg, size_t len)
{
	return msg != NULL ? protobuf_c_message_get_packed_size(msg) : len;
}

struct outq_frame *codec_frame(const struct rpc_frame *hdr, const ProtobufCMessage *msg,
			       const void *p, size_t len)
{
	struct rpc_frame f = *hdr;
	struct outq_frame *w = outq_frame_new(RPC_FRAME_HEADER_SIZE + len);

	f.payload = NULL;
	f.len = len;
	rpc_frame_encode_header(w->data, &f);
	if (msg != NULL)
		protobuf_c_message_pack(msg, w->data + RPC_FRAME_HEADER_SIZE);
	else if (len > 0)
		memcpy(w->data + RPC_FRAME_HEADER_SIZE, p, len);
	return w;
}

/* ---- decoding under a budget ---- */

struct budget {
	size_t left;
	bool exceeded;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	if (size > b->left) {
		b->exceeded = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p); /* so that free_unpacked(m, NULL), plain free, releases it too */
}

int rpc_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
	       ProtobufCMessage **out, char *errmsg)
{
	static const uint8_t empty[1];
	struct budget b = {RPC_DECODE_BUDGET(len), false};
	ProtobufCAllocator a = {budget_alloc, budget_free, &b};

	*out = protobuf_c_message_unpack(d, &a, len, data != NULL ? data : empty);
	if (*out != NULL)
		return 0;
	if (b.exceeded)
		return err_set(errmsg, DOCRAFT_ETOOBIG,
			       "%s of %zu bytes needs more than its decode budget of %zu bytes",
			       d->short_name, len, RPC_DECODE_BUDGET(len));
	return err_set(errmsg, DOCRAFT_EINVAL, "malformed %s (%zu bytes)", d->short_name, len);
}
