/* libFuzzer target: the RPC frame decoder (src/net/rpc_frame.c).
 *
 * Input: byte 0 picks the maximum frame size (0: the 16 MiB default, else
 * 64 + 16 * byte, so "too big" is reachable with small inputs), byte 1
 * seeds the chunk sizes, the rest is the byte stream from a peer.
 *
 * Besides "no crash, no leak, no UB" (ASan/UBSan), it checks:
 *  - decoding in random chunks yields the same frames and the same final
 *    result (frame, need more, or the same error) as decoding at once;
 *  - every frame re-encodes to exactly the bytes it was decoded from;
 *  - no frame exceeds the maximum; errors are sticky.
 *
 * Built and run by tests/fuzz/run.sh (clang -fsanitize=fuzzer). */
#include "fuzz.h"

#include "net/rpc_frame.h"

struct seen {
	struct rpc_frame *f;
	size_t n, cap;
};

static void seen_push(struct seen *s, const struct rpc_frame *f)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->f = realloc(s->f, s->cap * sizeof *s->f);
		FUZZ_CHECK(s->f != NULL);
	}
	s->f[s->n++] = *f;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->f[i].payload);
	free(s->f);
}

static bool same(const struct rpc_frame *a, const struct rpc_frame *b)
{
	return a->kind == b->kind && a->call_id == b->call_id && a->method == b->method &&
	       a->status == b->status && a->budget_ms == b->budget_ms && a->len == b->len &&
	       (a->len == 0 || memcmp(a->payload, b->payload, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_frame_decoder whole, chunked;
	struct seen frames = {0};
	uint32_t max;
	uint64_t rnd;
	const uint8_t *p, *stream;
	size_t n, len, at, k = 0;
	int r1, r2 = RPC_FRAME_MORE;
	struct buf enc = BUF_INIT;

	if (size < 2)
		return 0;
	max = data[0] == 0 ? RPC_FRAME_DEFAULT_MAX : RPC_FRAME_MIN_MAX + 16u * data[0];
	rnd = 0x9e3779b97f4a7c15ull * (data[1] + 1u);
	stream = data + 2;
	len = size - 2;

	/* At once, checking each frame against the bytes it came from. */
	rpc_frame_decoder_init(&whole, max);
	p = stream;
	n = len;
	for (;;) {
		const uint8_t *start = p;
		struct rpc_frame f;
		r1 = rpc_frame_decoder_next(&whole, &p, &n, &f);
		if (r1 != RPC_FRAME_READY)
			break;
		FUZZ_CHECK(f.len + RPC_FRAME_HEADER_SIZE <= max);
		FUZZ_CHECK((f.payload == NULL) == (f.len == 0));
		buf_reset(&enc);
		rpc_frame_encode(&enc, &f);
		FUZZ_CHECK(enc.len == (size_t)(p - start));
		FUZZ_CHECK(memcmp(enc.data, start, enc.len) == 0);
		seen_push(&frames, &f);
	}
	FUZZ_CHECK(r1 == RPC_FRAME_MORE ? n == 0 : r1 > RPC_FRAME_READY);
	if (r1 != RPC_FRAME_MORE) {
		struct rpc_frame f;
		FUZZ_CHECK(rpc_frame_decoder_next(&whole, &p, &n, &f) == r1);
		FUZZ_CHECK(rpc_frame_decoder_errmsg(&whole)[0] != '\0');
	}

	/* In random chunks: the same frames, the same outcome. */
	rpc_frame_decoder_init(&chunked, max);
	for (at = 0; at < len && r2 == RPC_FRAME_MORE;) {
		size_t chunk;
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		chunk = 1 + rnd % (rnd & 1 ? 8 : 300);
		if (chunk > len - at)
			chunk = len - at;
		p = stream + at;
		n = chunk;
		for (;;) {
			struct rpc_frame f;
			r2 = rpc_frame_decoder_next(&chunked, &p, &n, &f);
			if (r2 != RPC_FRAME_READY)
				break;
			FUZZ_CHECK(k < frames.n && same(&f, &frames.f[k]));
			k++;
			free(f.payload);
		}
		at += chunk;
	}
	FUZZ_CHECK(k == frames.n);
	FUZZ_CHECK(r2 == r1);
	FUZZ_CHECK(rpc_frame_decoder_pending(&chunked) == rpc_frame_decoder_pending(&whole));
	FUZZ_CHECK(rpc_frame_decoder_eof(&chunked) == rpc_frame_decoder_eof(&whole));
	{
		struct rpc_frame h1, h2;
		bool b1 = rpc_frame_decoder_header(&whole, &h1);
		FUZZ_CHECK(b1 == rpc_frame_decoder_header(&chunked, &h2));
		FUZZ_CHECK(!b1 || (h1.call_id == h2.call_id && h1.len == h2.len && !h1.payload));
	}

	rpc_frame_decoder_free(&whole);
	rpc_frame_decoder_free(&chunked);
	seen_free(&frames);
	buf_free(&enc);
	return 0;
}

/* Seeds: byte 0 = max frame selector, byte 1 = chunking seed, then frames. */
static void frame(struct buf *b, uint8_t kind, uint64_t call_id, uint16_t method, const char *p)
{
	struct rpc_frame f;
	memset(&f, 0, sizeof f);
	f.kind = kind;
	f.call_id = call_id;
	f.method = method;
	f.budget_ms = kind == RPC_FRAME_REQUEST ? 1000 : 0;
	f.payload = (uint8_t *)p;
	f.len = (uint32_t)strlen(p);
	rpc_frame_encode(b, &f);
}

static void fuzz_seeds(void)
{
	struct buf b = BUF_INIT;
	const uint8_t truncated[] = {0, 3, 0, 0, 0, 25, 1, 0, 0, 0};
	const uint8_t too_big[] = {1, 4, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0,
				   0, 0, 100};
	buf_push(&b, 0);
	buf_push(&b, 1);
	frame(&b, RPC_FRAME_REQUEST, 1, 1, "abc");
	seed_buf("request", &b);
	buf_reset(&b);
	buf_push(&b, 3);
	buf_push(&b, 7);
	frame(&b, RPC_FRAME_REQUEST, 1, 1, "abc");
	frame(&b, RPC_FRAME_RESPONSE, 1, 1, "");
	frame(&b, RPC_FRAME_REQUEST, UINT64_MAX, 65535, "0123456789abcdef");
	seed_buf("three-frames", &b);
	b.data[6] = 9; /* a bad kind in the first frame */
	seed_buf("bad-kind", &b);
	seed_write("truncated", truncated, sizeof truncated);
	seed_write("too-big", too_big, sizeof too_big);
	buf_free(&b);
}
