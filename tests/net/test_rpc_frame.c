/* RPC frames (src/net/rpc_frame.c): byte-exact header, round trips,
 * every truncation, arbitrary chunking, every header error, and random
 * garbage that must never crash or over-allocate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "net/rpc_frame.h"
#include "test.h"

/* ---- helpers ---- */

#define MAX_FRAMES 64

struct decoded {
	struct rpc_frame f[MAX_FRAMES];
	size_t n;
	int last; /* last result of rpc_frame_decoder_next */
};

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->f[i].payload);
	d->n = 0;
}

/* Feeds p[0..n) to dec, collecting frames; stops at an error. */
static void feed(struct rpc_frame_decoder *dec, const uint8_t *p, size_t n, struct decoded *out)
{
	for (;;) {
		struct rpc_frame f;
		int rv = rpc_frame_decoder_next(dec, &p, &n, &f);
		out->last = rv;
		if (rv == RPC_FRAME_MORE) {
			CHECK_EQ_U64(n, 0);
			return;
		}
		if (rv != RPC_FRAME_READY)
			return;
		CHECK(out->n < MAX_FRAMES);
		out->f[out->n++] = f;
	}
}

static void check_same(const struct rpc_frame *a, const struct rpc_frame *b)
{
	CHECK_EQ_INT(a->kind, b->kind);
	CHECK_EQ_U64(a->call_id, b->call_id);
	CHECK_EQ_INT(a->method, b->method);
	CHECK_EQ_INT(a->status, b->status);
	CHECK_EQ_U64(a->budget_ms, b->budget_ms);
	CHECK_EQ_U64(a->len, b->len);
	if (a->len > 0) /* memcmp on NULL is undefined even for 0 bytes */
		CHECK_EQ_MEM(a->payload, a->len, b->payload, b->len);
}

/* A stream of frames with the given payload sizes; frames[i].payload
 * malloc'd (free with free_frames). */
static void make_frames(struct rpc_frame *frames, const size_t *sizes, size_t n, uint64_t *rnd,
			struct buf *stream)
{
	for (size_t i = 0; i < n; i++) {
		struct rpc_frame *f = &frames[i];
		memset(f, 0, sizeof *f);
		f->kind = (test_rand(rnd) & 1) ? RPC_FRAME_REQUEST : RPC_FRAME_RESPONSE;
		f->call_id = test_rand(rnd);
		f->method = (uint16_t)test_rand(rnd);
		if (f->kind == RPC_FRAME_REQUEST)
			f->budget_ms = (uint32_t)test_rand(rnd);
		else
			f->status = (uint16_t)test_rand(rnd);
		f->len = sizes[i];
		f->payload = sizes[i] ? malloc(sizes[i]) : NULL;
		for (size_t j = 0; j < sizes[i]; j++)
			f->payload[j] = (uint8_t)test_rand(rnd);
		rpc_frame_encode(stream, f);
	}
}

static void free_frames(struct rpc_frame *frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(frames[i].payload);
}

static void put_header(uint8_t *h, uint32_t length, uint8_t kind, uint8_t flags, uint64_t id,
		       uint16_t method, uint16_t status, uint32_t budget)
{
	struct buf b = BUF_INIT;
	buf_append_be32(&b, length);
	buf_push(&b, kind);
	buf_push(&b, flags);
	buf_append_be64(&b, id);
	buf_append_be16(&b, method);
	buf_append_be16(&b, status);
	buf_append_be32(&b, budget);
	CHECK_EQ_U64(b.len, RPC_FRAME_HEADER_SIZE);
	memcpy(h, b.data, b.len);
	buf_free(&b);
}

/* ---- cases ---- */

TEST(header_is_byte_exact)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x15,                         /* length 18 + 3 */
		0x01, 0x00,                                     /* request, flags */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* call id */
		0x12, 0x34,                                     /* method */
		0x00, 0x00,                                     /* status */
		0x00, 0x00, 0x03, 0xe8,                         /* budget 1000 ms */
		'a',  'b',  'c',
	};
	struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = 0x0102030405060708ull,
			      .method = 0x1234, .budget_ms = 1000, .payload = (uint8_t *)"abc",
			      .len = 3};
	struct buf b = BUF_INIT;

	rpc_frame_encode(&b, &f);
	CHECK_EQ_MEM(b.data, b.len, want, sizeof want);
	buf_free(&b);
}

TEST(round_trip)
{
	uint64_t rnd = test_seed();
	size_t sizes[] = {0, 1, 3, 100, 70000, 0, 5};
	const size_t n = sizeof sizes / sizeof sizes[0];
	struct rpc_frame frames[sizeof sizes / sizeof sizes[0]];
	struct rpc_frame_decoder dec;
	struct decoded got = {0};
	struct buf stream = BUF_INIT;

	make_frames(frames, sizes, n, &rnd, &stream);
	rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
	feed(&dec, stream.data, stream.len, &got);
	CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
	CHECK_EQ_U64(got.n, n);
	for (size_t i = 0; i < n; i++) {
		check_same(&got.f[i], &frames[i]);
		CHECK((got.f[i].payload == NULL) == (got.f[i].len == 0));
	}
	CHECK_EQ_U64(rpc_frame_decoder_pending(&dec), 0);
	CHECK_EQ_INT(rpc_frame_decoder_eof(&dec), RPC_FRAME_MORE);
	decoded_free(&got);
	rpc_frame_decoder_free(&dec);
	free_frames(frames, n);
	buf_free(&stream);
}

/* Every prefix of a stream: exactly the frames wholly inside it, and EOF
 * there is clean only on a frame boundary. */
TEST(every_truncation)
{
	uint64_t rnd = test_seed();
	size_t sizes[] = {5, 0, 40};
	const size_t n = sizeof sizes / sizeof sizes[0];
	struct rpc_frame frames[sizeof sizes / sizeof sizes[0]];
	struct buf stream = BUF_INIT;
	size_t ends[sizeof sizes / sizeof sizes[0]];

	make_frames(frames, sizes, n, &rnd, &stream);
	for (size_t i = 0, at = 0; i < n; i++) {
		at += RPC_FRAME_HEADER_SIZE + sizes[i];
		ends[i] = at;
	}
	for (size_t k = 0; k <= stream.len; k++) {
		struct rpc_frame_decoder dec;
		struct decoded got = {0};
		size_t whole = 0;
		bool boundary = k == 0;
		struct rpc_frame h;
		int rv;

		for (size_t i = 0; i < n; i++) {
			if (ends[i] <= k)
				whole++;
			if (ends[i] == k)
				boundary = true;
		}
		rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
		feed(&dec, stream.data, k, &got);
		CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
		CHECK_EQ_U64(got.n, whole);
		for (size_t i = 0; i < whole; i++)
			check_same(&got.f[i], &frames[i]);
		rv = rpc_frame_decoder_eof(&dec);
		if (boundary) {
			CHECK_EQ_INT(rv, RPC_FRAME_MORE);
			CHECK(!rpc_frame_decoder_header(&dec, &h));
		} else {
			size_t into = k - (whole ? ends[whole - 1] : 0);
			CHECK_EQ_INT(rv, RPC_FRAME_ETRUNCATED);
			CHECK_EQ_U64(rpc_frame_decoder_pending(&dec), into);
			CHECK(strstr(rpc_frame_decoder_errmsg(&dec), "stream ended inside") !=
			      NULL);
			/* Sticky. */
			CHECK_EQ_INT(rpc_frame_decoder_eof(&dec), RPC_FRAME_ETRUNCATED);
			CHECK_EQ_INT(rpc_frame_decoder_header(&dec, &h),
				     into >= RPC_FRAME_HEADER_SIZE);
		}
		decoded_free(&got);
		rpc_frame_decoder_free(&dec);
	}
	free_frames(frames, n);
	buf_free(&stream);
}

/* The same frames whether fed byte by byte, in random chunks, or at once. */
TEST(any_chunking)
{
	uint64_t rnd = test_seed();
	size_t sizes[40];
	const size_t n = sizeof sizes / sizeof sizes[0];
	struct rpc_frame frames[sizeof sizes / sizeof sizes[0]];
	struct buf stream = BUF_INIT;

	for (size_t i = 0; i < n; i++)
		sizes[i] = (test_rand(&rnd) % 4 == 0) ? test_rand(&rnd) % 200000
						       : test_rand(&rnd) % 64;
	make_frames(frames, sizes, n, &rnd, &stream);
	for (int mode = 0; mode < 3; mode++) {
		struct rpc_frame_decoder dec;
		struct decoded got = {0};
		size_t at = 0;

		rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
		while (at < stream.len) {
			size_t chunk = mode == 0 ? 1
				       : mode == 1 ? 1 + test_rand(&rnd) % 3000
						   : stream.len;
			if (chunk > stream.len - at)
				chunk = stream.len - at;
			feed(&dec, stream.data + at, chunk, &got);
			CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
			at += chunk;
		}
		CHECK_EQ_U64(got.n, n);
		for (size_t i = 0; i < n; i++)
			check_same(&got.f[i], &frames[i]);
		CHECK_EQ_INT(rpc_frame_decoder_eof(&dec), RPC_FRAME_MORE);
		decoded_free(&got);
		rpc_frame_decoder_free(&dec);
	}
	free_frames(frames, n);
	buf_free(&stream);
}

/* Feeds one header (plus trailing bytes) and expects error rv. */
static void expect_error(const uint8_t *h, uint32_t max, int want, const char *needle)
{
	struct rpc_frame_decoder dec;
	struct decoded got = {0};
	uint8_t bytes[RPC_FRAME_HEADER_SIZE + 8];
	const uint8_t *p = bytes;
	size_t n = sizeof bytes;
	struct rpc_frame f;

	memcpy(bytes, h, RPC_FRAME_HEADER_SIZE);
	memset(bytes + RPC_FRAME_HEADER_SIZE, 0xee, 8);
	rpc_frame_decoder_init(&dec, max);
	/* Nothing is decided before the whole header is in. */
	feed(&dec, bytes, RPC_FRAME_HEADER_SIZE - 1, &got);
	CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
	p = bytes + RPC_FRAME_HEADER_SIZE - 1;
	n = sizeof bytes - (RPC_FRAME_HEADER_SIZE - 1);
	CHECK_EQ_INT(rpc_frame_decoder_next(&dec, &p, &n, &f), want);
	CHECK_EQ_U64(n, 8); /* stopped right after the header */
	CHECK_MSG(strstr(rpc_frame_decoder_errmsg(&dec), needle) != NULL, "message '%s' lacks '%s'",
		  rpc_frame_decoder_errmsg(&dec), needle);
	/* Sticky, consumes nothing. */
	CHECK_EQ_INT(rpc_frame_decoder_next(&dec, &p, &n, &f), want);
	CHECK_EQ_U64(n, 8);
	CHECK_EQ_INT(rpc_frame_decoder_eof(&dec), want);
	rpc_frame_decoder_free(&dec);
}

TEST(header_errors)
{
	uint8_t h[RPC_FRAME_HEADER_SIZE];
	struct rpc_frame_decoder dec;
	struct rpc_frame f;

	put_header(h, 18, 0, 0, 1, 1, 0, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EKIND, "frame kind 0");
	put_header(h, 18, 3, 0, 1, 1, 0, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EKIND, "frame kind 3");
	put_header(h, 18, 255, 0, 1, 1, 0, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EKIND, "frame kind 255");
	put_header(h, 18, 1, 0x80, 1, 1, 0, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EFLAGS, "flags 0x80");
	for (uint32_t len = 0; len < 18; len++) {
		put_header(h, len, 2, 0, 1, 1, 0, 0);
		expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_ESHORT, "below the header");
	}
	put_header(h, 18, 1, 0, 1, 1, 5, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EFIELD, "request frame with status 5");
	put_header(h, 18, 2, 0, 1, 1, 0, 9);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_EFIELD, "time budget of 9 ms");
	put_header(h, UINT32_MAX, 1, 0, 1, 1, 0, 0);
	expect_error(h, RPC_FRAME_DEFAULT_MAX, RPC_FRAME_ETOOBIG,
		     "exceeds the maximum of 16777216");

	/* The kind is checked first: no header fields for garbage. */
	put_header(h, 18, 9, 0, 1, 1, 0, 0);
	rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
	{
		struct decoded got = {0};
		feed(&dec, h, sizeof h, &got);
		CHECK_EQ_INT(got.last, RPC_FRAME_EKIND);
		CHECK(!rpc_frame_decoder_header(&dec, &f));
	}
	rpc_frame_decoder_free(&dec);

	for (int r = RPC_FRAME_MORE; r <= RPC_FRAME_ETRUNCATED; r++)
		CHECK(strcmp(rpc_frame_strerror(r), "unknown frame result") != 0);
	CHECK_EQ_STR(rpc_frame_strerror(99), "unknown frame result");
}

/* The maximum counts the header: max bytes pass, max + 1 do not; the
 * oversized request's header is still available to answer it. */
TEST(oversized)
{
	const uint32_t max = 1000;
	struct rpc_frame_decoder dec;
	struct decoded got = {0};
	uint8_t *bytes = calloc(1, max + 1);
	uint8_t h[RPC_FRAME_HEADER_SIZE];
	struct rpc_frame f;

	put_header(h, max - 4, RPC_FRAME_REQUEST, 0, 42, 7, 0, 100);
	memcpy(bytes, h, sizeof h);
	rpc_frame_decoder_init(&dec, max);
	feed(&dec, bytes, max, &got);
	CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
	CHECK_EQ_U64(got.n, 1);
	CHECK_EQ_U64(got.f[0].len, max - RPC_FRAME_HEADER_SIZE);
	decoded_free(&got);

	put_header(h, max - 3, RPC_FRAME_REQUEST, 0, 43, 7, 0, 100);
	memcpy(bytes, h, sizeof h);
	feed(&dec, bytes, max + 1, &got);
	CHECK_EQ_INT(got.last, RPC_FRAME_ETOOBIG);
	CHECK_EQ_U64(got.n, 0);
	CHECK(strstr(rpc_frame_decoder_errmsg(&dec), "frame of 1001 bytes") != NULL);
	CHECK(rpc_frame_decoder_header(&dec, &f));
	CHECK_EQ_U64(f.call_id, 43);
	CHECK_EQ_INT(f.method, 7);
	CHECK_EQ_INT(f.kind, RPC_FRAME_REQUEST);
	CHECK_EQ_U64(f.len, max + 1 - RPC_FRAME_HEADER_SIZE);
	CHECK(f.payload == NULL);
	rpc_frame_decoder_free(&dec);

	/* A maximum below the floor is raised to it. */
	rpc_frame_decoder_init(&dec, 0);
	put_header(h, RPC_FRAME_MIN_MAX - 4, RPC_FRAME_RESPONSE, 0, 1, 1, 0, 0);
	memset(bytes, 0, max);
	memcpy(bytes, h, sizeof h);
	feed(&dec, bytes, RPC_FRAME_MIN_MAX, &got);
	CHECK_EQ_U64(got.n, 1);
	decoded_free(&got);
	rpc_frame_decoder_free(&dec);
	free(bytes);
}

/* A header announcing 16 MiB followed by a few bytes allocates a small
 * buffer, growing with what actually arrives. */
TEST(no_allocation_ahead_of_data)
{
	struct rpc_frame_decoder dec;
	struct decoded got = {0};
	uint8_t h[RPC_FRAME_HEADER_SIZE];
	uint8_t chunk[1000] = {0};

	put_header(h, RPC_FRAME_DEFAULT_MAX - 4, RPC_FRAME_REQUEST, 0, 1, 1, 0, 0);
	rpc_frame_decoder_init(&dec, RPC_FRAME_DEFAULT_MAX);
	feed(&dec, h, sizeof h, &got);
	CHECK_EQ_U64(dec.cap, 0);
	feed(&dec, chunk, 10, &got);
	CHECK(dec.cap <= (64u << 10));
	for (int i = 0; i < 200; i++)
		feed(&dec, chunk, sizeof chunk, &got);
	CHECK_EQ_INT(got.last, RPC_FRAME_MORE);
	CHECK(dec.cap <= 2 * (200 * sizeof chunk + 10));
	CHECK_EQ_U64(rpc_frame_decoder_pending(&dec), sizeof h + 10 + 200 * sizeof chunk);
	rpc_frame_decoder_free(&dec);
}

/* Random garbage, random chunks, random maxima: no crash, every frame
 * consistent, errors sticky. Plus garbage after valid frames. */
TEST(random_garbage)
{
	uint64_t rnd = test_seed();
	uint8_t *bytes = malloc(4096);

	for (int iter = 0; iter < 20000; iter++) {
		struct rpc_frame_decoder dec;
		size_t n = test_rand(&rnd) % 4096, at = 0;
		int last = RPC_FRAME_MORE;

		for (size_t i = 0; i < n; i++)
			bytes[i] = (uint8_t)test_rand(&rnd);
		/* Often make the header plausible so payload paths run too. */
		if (n >= 6 && test_rand(&rnd) % 2) {
			bytes[0] = bytes[1] = 0;
			bytes[2] &= 0x0f;
			bytes[4] = 1 + test_rand(&rnd) % 2;
			bytes[5] = 0;
		}
		rpc_frame_decoder_init(&dec, (uint32_t)(test_rand(&rnd) % 8192));
		while (at < n) {
			struct decoded got = {0};
			size_t chunk = 1 + test_rand(&rnd) % 700;
			if (chunk > n - at)
				chunk = n - at;
			feed(&dec, bytes + at, chunk, &got);
			for (size_t i = 0; i < got.n; i++) {
				CHECK(got.f[i].kind == RPC_FRAME_REQUEST ||
				      got.f[i].kind == RPC_FRAME_RESPONSE);
				CHECK(got.f[i].len + RPC_FRAME_HEADER_SIZE <= dec.max_frame);
			}
			decoded_free(&got);
			last = got.last;
			if (last != RPC_FRAME_MORE)
				break;
			at += chunk;
		}
		if (last != RPC_FRAME_MORE) {
			struct decoded again = {0};
			feed(&dec, bytes, n, &again);
			CHECK_EQ_INT(again.last, last);
			CHECK_EQ_U64(again.n, 0);
			CHECK(rpc_frame_decoder_errmsg(&dec)[0] != '\0');
		}
		rpc_frame_decoder_eof(&dec);
		rpc_frame_decoder_free(&dec);
	}
	free(bytes);
}

TEST_MAIN(T(header_is_byte_exact), T(round_trip), T(every_truncation), T(any_chunking),
	  T(header_errors), T(oversized), T(no_allocation_ahead_of_data), T(random_garbage))
