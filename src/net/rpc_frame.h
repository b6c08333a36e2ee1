/* RPC frames: encoding and a streaming decoder. Pure: no I/O, no libuv.
 *
 * A frame is a fixed 22-byte header followed by the payload, all integers
 * big endian:
 *
 *   offset  size  field
 *   0       4     length: bytes after this field, 18 + payload length
 *   4       1     kind: 1 request, 2 response
 *   5       1     flags: must be 0 (reserved)
 *   6       8     call id (any value; chosen by the client, echoed back)
 *   14      2     method (enum Method in proto/rpc.proto)
 *   16      2     status: 0 in requests; a DOCRAFT_E* code in responses
 *   18      4     budget_ms: requests: the caller's remaining time budget
 *                 (0 = none); responses: must be 0
 *   22      ...   payload (protobuf; see proto/rpc.proto)
 *
 * The whole frame (header included) may not exceed the decoder's maximum
 * (RPC_FRAME_DEFAULT_MAX, 16 MiB, unless configured otherwise).
 *
 * Why not a protobuf header: a fixed header finds frame boundaries and
 * rejects an oversized frame after 22 bytes without allocating, costs no
 * varint parsing per frame, and keeps the fuzzed code small. Everything
 * that may grow lives in the protobuf payload.
 *
 * The decoder accepts bytes in chunks of any size and yields whole frames.
 * It never asserts on its input: every malformed header is a precise error
 * (enum rpc_frame_result) with a message. It does not allocate ahead of the
 * bytes received: a header announcing 16 MiB followed by silence costs a
 * small buffer, not 16 MiB.
 *
 * Not thread-safe; one decoder per connection. */
#ifndef DOCRAFT_NET_RPC_FRAME_H
#define DOCRAFT_NET_RPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docraft/error.h"

#define RPC_FRAME_HEADER_SIZE 22
/* Default maximum frame size (header included). */
#define RPC_FRAME_DEFAULT_MAX (16u << 20)
/* Smallest maximum a decoder accepts: a header and a little payload. */
#define RPC_FRAME_MIN_MAX 64u
/* Largest payload the format can carry with any maximum. */
#define RPC_FRAME_PAYLOAD_LIMIT (UINT32_MAX - (RPC_FRAME_HEADER_SIZE - 4))

enum rpc_frame_kind {
	RPC_FRAME_REQUEST = 1,
	RPC_FRAME_RESPONSE = 2,
};

/* A frame. The decoder fills every field; payload is then malloc'd (NULL
 * when len is 0) and belongs to the caller, who frees it with free(). The
 * encoders only read it. */
struct rpc_frame {
	uint8_t kind; /* enum rpc_frame_kind */
	uint64_t call_id;
	uint16_t method;
	uint16_t status;
	uint32_t budget_ms;
	uint8_t *payload;
	size_t len;
};

/* What rpc_frame_decoder_next returns. Errors are sticky: once one is
 * returned, every later call returns it again and consumes nothing. */
enum rpc_frame_result {
	RPC_FRAME_MORE = 0,   /* all input consumed, no complete frame yet */
	RPC_FRAME_READY,      /* one frame decoded into *out */
	RPC_FRAME_EKIND,      /* kind is neither request nor response */
	RPC_FRAME_EFLAGS,     /* reserved flags are not 0 */
	RPC_FRAME_ESHORT,     /* length field smaller than the header */
	RPC_FRAME_ETOOBIG,    /* frame larger than the maximum */
	RPC_FRAME_EFIELD,     /* request with a status, response with a budget */
	RPC_FRAME_ETRUNCATED, /* (rpc_frame_decoder_eof) stream ended mid-frame */
};

struct rpc_frame_decoder {
	/* private */
	uint32_t max_frame;
	int error;        /* sticky enum rpc_frame_result error, 0 if none */
	size_t have;      /* bytes of the current frame received, header included */
	uint8_t head[RPC_FRAME_HEADER_SIZE];
	struct rpc_frame cur; /* header fields, valid once have >= HEADER_SIZE */
	bool head_ok;         /* cur holds a header with a valid kind */
	size_t cap;           /* bytes allocated at cur.payload */
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

/* Initializes d with a maximum frame size of max_frame bytes, header
 * included (RPC_FRAME_MIN_MAX..UINT32_MAX; values out of range are clamped).
 * The decoder must be released with rpc_frame_decoder_free. */
void rpc_frame_decoder_init(struct rpc_frame_decoder *d, uint32_t max_frame);

/* Releases the partial frame, if any. d may be initialized again. */
void rpc_frame_decoder_free(struct rpc_frame_decoder *d);

/* Consumes input from *data (*len bytes) up to the end of the next frame.
 *
 * RPC_FRAME_READY: *out holds the frame (its payload now belongs to the
 *   caller), and *data, *len are advanced past the bytes consumed; call
 *   again with the rest (which may hold more frames).
 * RPC_FRAME_MORE: every input byte was consumed (*len is 0) and no frame is
 *   complete yet.
 * an error: the stream is broken and must be dropped. *data, *len point
 *   just after the header that was rejected. rpc_frame_decoder_errmsg says
 *   why; when the header's kind was valid, rpc_frame_decoder_header gives
 *   its fields (e.g. to answer an oversized request with its call id).
 *
 * *out is written only on RPC_FRAME_READY. Never asserts on the input. */
int rpc_frame_decoder_next(struct rpc_frame_decoder *d, const uint8_t **data, size_t *len,
			   struct rpc_frame *out);

/* Call when the stream ends: RPC_FRAME_MORE (0) if it ended on a frame
 * boundary, RPC_FRAME_ETRUNCATED (now sticky) if inside a frame, or the
 * sticky error. */
int rpc_frame_decoder_eof(struct rpc_frame_decoder *d);

/* Bytes of the frame in progress received so far (0 on a boundary). */
size_t rpc_frame_decoder_pending(const struct rpc_frame_decoder *d);

/* The last error's message ("" if none); owned by d. */
const char *rpc_frame_decoder_errmsg(const struct rpc_frame_decoder *d);

/* After an error: copies the rejected (or truncated) header's fields into
 * *out (payload NULL, len = the payload length it announced) and returns
 * true, or returns false if there was no error or no complete header with a
 * valid kind (a header we cannot trust). */
bool rpc_frame_decoder_header(const struct rpc_frame_decoder *d, struct rpc_frame *out);

/* Static name of an enum rpc_frame_result value. */
const char *rpc_frame_strerror(int result);

/* Writes the header of f (f->len is the payload length) into head.
 * PRE: f->kind is a valid kind, f->len <= RPC_FRAME_PAYLOAD_LIMIT, status
 * 0 in requests, budget_ms 0 in responses. The payload is not touched. */
void rpc_frame_encode_header(uint8_t head[RPC_FRAME_HEADER_SIZE], const struct rpc_frame *f);

/* Appends the header and the payload of f to b. Same preconditions. */
void rpc_frame_encode(struct buf *b, const struct rpc_frame *f);

#endif
