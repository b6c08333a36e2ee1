/* RPC frames: see rpc_frame.h for the format.
 *
 * The decoder has two phases per frame: gather the 22 header bytes into
 * d->head (any chunking), validate them all at once, then copy payload
 * bytes into a buffer that grows with the bytes actually received (doubling
 * from 64 KiB, never beyond the announced length), so a peer cannot make us
 * allocate more than about twice what it sent. The header is validated as a
 * whole, kind first: garbage is reported as a bad kind or flags rather than
 * as an absurd length, and a well-formed but oversized request still yields
 * its call id so the server can answer it. */
#include "net/rpc_frame.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"

#define LENGTH_MIN (RPC_FRAME_HEADER_SIZE - 4) /* length field of an empty frame */
#define FIRST_CHUNK (64u << 10)

void rpc_frame_decoder_init(struct rpc_frame_decoder *d, uint32_t max_frame)
{
	memset(d, 0, sizeof *d);
	d->max_frame = max_frame < RPC_FRAME_MIN_MAX ? RPC_FRAME_MIN_MAX : max_frame;
}

void rpc_frame_decoder_free(struct rpc_frame_decoder *d)
{
	free(d->cur.payload);
	d->cur.payload = NULL;
	d->cap = 0;
	d->have = 0;
}

/* Makes result d's sticky error, with the message formatted into d->errmsg;
 * evaluates to result. */
#define FAIL(d, result, ...) ((d)->error = (result), err_set((d)->errmsg, (result), __VA_ARGS__))

/* Validates d->head and fills d->cur; 0 or an error. */
static int parse_header(struct rpc_frame_decoder *d)
{
	const uint8_t *h = d->head;
	uint32_t length = be32_load(h);
	uint8_t kind = h[4], flags = h[5];
	struct rpc_frame *f = &d->cur;

	f->kind = kind;
	f->call_id = be64_load(h + 6);
	f->method = be16_load(h + 14);
	f->status = be16_load(h + 16);
	f->budget_ms = be32_load(h + 18);
	f->payload = NULL;
	f->len = length >= LENGTH_MIN ? length - LENGTH_MIN : 0;

	if (kind != RPC_FRAME_REQUEST && kind != RPC_FRAME_RESPONSE)
		return FAIL(d, RPC_FRAME_EKIND, "frame kind %u (1 request, 2 response)", kind);
	d->head_ok = true;
	if (flags != 0)
		return FAIL(d, RPC_FRAME_EFLAGS, "reserved frame flags 0x%02x set", flags);
	if (length < LENGTH_MIN)
		return FAIL(d, RPC_FRAME_ESHORT, "frame length %u below the header's %u bytes",
			    length, LENGTH_MIN);
	if ((uint64_t)length + 4 > d->max_frame)
		return FAIL(d, RPC_FRAME_ETOOBIG, "frame of %llu bytes exceeds the maximum of %u",
			    (unsigned long long)length + 4, d->max_frame);
	if (kind == RPC_FRAME_REQUEST && f->status != 0)
		return FAIL(d, RPC_FRAME_EFIELD, "request frame with status %u", f->status);
	if (kind == RPC_FRAME_RESPONSE && f->budget_ms != 0)
		return FAIL(d, RPC_FRAME_EFIELD, "response frame with a time budget of %u ms",
			    f->budget_ms);
	return 0;
}

/* Makes room for want payload bytes (want <= d->cur.len). */
static void reserve(struct rpc_frame_decoder *d, size_t want)
{
	size_t cap = d->cap;

	if (want <= cap)
		return;
	if (cap == 0)
		cap = d->cur.len < FIRST_CHUNK ? d->cur.len : FIRST_CHUNK;
	while (cap < want)
		cap *= 2;
	if (cap > d->cur.len)
		cap = d->cur.len;
	d->cur.payload = xrealloc(d->cur.payload, cap);
	d->cap = cap;
}

static void advance(const uint8_t **data, size_t *len, size_t n)
{
	*data += n;
	*len -= n;
}

int rpc_frame_decoder_next(struct rpc_frame_decoder *d, const uint8_t **data, size_t *len,
			   struct rpc_frame *out)
{
	size_t n, total, got;
	int rv;

	if (d->error != 0)
		return d->error;
	if (d->have < RPC_FRAME_HEADER_SIZE) {
		n = RPC_FRAME_HEADER_SIZE - d->have;
		if (n > *len)
			n = *len;
		if (n > 0)
			memcpy(d->head + d->have, *data, n);
		advance(data, len, n);
		d->have += n;
		if (d->have < RPC_FRAME_HEADER_SIZE)
			return RPC_FRAME_MORE;
		rv = parse_header(d);
		if (rv != 0)
			return rv;
	}
	total = RPC_FRAME_HEADER_SIZE + d->cur.len;
	if (d->have < total) {
		got = d->have - RPC_FRAME_HEADER_SIZE;
		n = total - d->have;
		if (n > *len)
			n = *len;
		if (n == 0)
			return RPC_FRAME_MORE;
		reserve(d, got + n);
		memcpy(d->cur.payload + got, *data, n);
		advance(data, len, n);
		d->have += n;
		if (d->have < total)
			return RPC_FRAME_MORE;
	}
	*out = d->cur;
	d->cur.payload = NULL;
	d->cap = 0;
	d->have = 0;
	d->head_ok = false;
	return RPC_FRAME_READY;
}

int rpc_frame_decoder_eof(struct rpc_frame_decoder *d)
{
	if (d->error != 0)
		return d->error;
	if (d->have == 0)
		return RPC_FRAME_MORE;
	if (d->have < RPC_FRAME_HEADER_SIZE)
		return FAIL(d, RPC_FRAME_ETRUNCATED,
			    "stream ended inside a frame header (%zu of %u bytes)", d->have,
			    RPC_FRAME_HEADER_SIZE);
	return FAIL(d, RPC_FRAME_ETRUNCATED, "stream ended inside a frame (%zu of %zu bytes)",
		    d->have, RPC_FRAME_HEADER_SIZE + d->cur.len);
}

size_t rpc_frame_decoder_pending(const struct rpc_frame_decoder *d)
{
	return d->have;
}

const char *rpc_frame_decoder_errmsg(const struct rpc_frame_decoder *d)
{
	return d->error != 0 ? d->errmsg : "";
}

bool rpc_frame_decoder_header(const struct rpc_frame_decoder *d, struct rpc_frame *out)
{
	if (d->error == 0 || !d->head_ok)
		return false;
	*out = d->cur;
	out->payload = NULL;
	return true;
}

const char *rpc_frame_strerror(int result)
{
	switch (result) {
	case RPC_FRAME_MORE:
		return "incomplete frame";
	case RPC_FRAME_READY:
		return "frame ready";
	case RPC_FRAME_EKIND:
		return "bad frame kind";
	case RPC_FRAME_EFLAGS:
		return "bad frame flags";
	case RPC_FRAME_ESHORT:
		return "frame shorter than its header";
	case RPC_FRAME_ETOOBIG:
		return "frame too big";
	case RPC_FRAME_EFIELD:
		return "bad frame field";
	case RPC_FRAME_ETRUNCATED:
		return "truncated frame";
	default:
		return "unknown frame result";
	}
}

void rpc_frame_encode_header(uint8_t head[RPC_FRAME_HEADER_SIZE], const struct rpc_frame *f)
{
	uint32_t length;

	PRE(f->kind == RPC_FRAME_REQUEST || f->kind == RPC_FRAME_RESPONSE);
	PRE(f->len <= RPC_FRAME_PAYLOAD_LIMIT);
	PRE(f->kind != RPC_FRAME_REQUEST || f->status == 0);
	PRE(f->kind != RPC_FRAME_RESPONSE || f->budget_ms == 0);
	length = (uint32_t)(LENGTH_MIN + f->len);
	head[0] = (uint8_t)(length >> 24);
	head[1] = (uint8_t)(length >> 16);
	head[2] = (uint8_t)(length >> 8);
	head[3] = (uint8_t)length;
	head[4] = f->kind;
	head[5] = 0;
	be64_store(head + 6, f->call_id);
	head[14] = (uint8_t)(f->method >> 8);
	head[15] = (uint8_t)f->method;
	head[16] = (uint8_t)(f->status >> 8);
	head[17] = (uint8_t)f->status;
	head[18] = (uint8_t)(f->budget_ms >> 24);
	head[19] = (uint8_t)(f->budget_ms >> 16);
	head[20] = (uint8_t)(f->budget_ms >> 8);
	head[21] = (uint8_t)f->budget_ms;
}

void rpc_frame_encode(struct buf *b, const struct rpc_frame *f)
{
	uint8_t head[RPC_FRAME_HEADER_SIZE];

	rpc_frame_encode_header(head, f);
	buf_append(b, head, sizeof head);
	buf_append(b, f->payload, f->len);
}
