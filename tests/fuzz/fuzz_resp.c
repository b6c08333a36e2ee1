/* libFuzzer target: the RESP2 request parser (resp_parse, src/redis/resp.c),
 * fed the bytes a Redis client sends to a tserver's Redis port.
 *
 * Input: the byte stream of a connection. Checks, beyond "no crash, no
 * leak, no UB":
 *  - parsed at once and parsed with reads split at a point taken from the
 *    input, the requests (each argument, byte for byte) and the outcome
 *    agree, unless the whole-stream parse hit a "too big" line error (its
 *    outcome depends on how reads split a line, in Redis too);
 *  - every request uses more than 0 bytes, no more than were given;
 *  - a request re-encoded as a multibulk (resp_array + resp_bulk) parses
 *    back to the same arguments in exactly the encoded bytes. */
#include "fuzz.h"

#include "redis/resp.h"

static const struct resp_limits lim = {.max_bulk = 1024, .max_multibulk = 64, .max_inline = 256};

static void roundtrip(const struct resp_request *r)
{
	struct buf b = BUF_INIT;
	struct resp_parser p;
	struct resp_request back;

	resp_array(&b, r->argc);
	for (uint32_t i = 0; i < r->argc; i++)
		resp_bulk(&b, r->argv[i].p, r->argv[i].n);
	resp_parser_init(&p, NULL); /* an inline line may hold more than lim's count */
	FUZZ_CHECK(resp_parse(&p, (const char *)b.data, b.len, &back) == RESP_REQUEST);
	FUZZ_CHECK(back.used == b.len && back.argc == r->argc);
	for (uint32_t i = 0; i < r->argc; i++)
		FUZZ_CHECK(back.argv[i].n == r->argv[i].n &&
			   (r->argv[i].n == 0 ||
			    memcmp(back.argv[i].p, r->argv[i].p, r->argv[i].n) == 0));
	resp_parser_free(&p);
	buf_free(&b);
}

/* Parses data in reads of `step` bytes (0: one read); the requests are
 * rendered into out (length-prefixed arguments). Returns the last status. */
static int run(const uint8_t *data, size_t size, size_t step, struct buf *out, bool check,
	       char *err)
{
	struct resp_parser p;
	size_t start = 0, have = 0;
	int rv = RESP_MORE;

	resp_parser_init(&p, &lim);
	while (have < size) {
		have = step == 0 || size - have < step ? size : have + step;
		for (;;) {
			struct resp_request r;
			rv = resp_parse(&p, (const char *)data + start, have - start, &r);
			if (rv != RESP_REQUEST)
				break;
			FUZZ_CHECK(r.used > 0 && r.used <= have - start);
			buf_append_be32(out, r.argc);
			for (uint32_t i = 0; i < r.argc; i++) {
				buf_append_be32(out, (uint32_t)r.argv[i].n);
				buf_append(out, r.argv[i].p, r.argv[i].n);
			}
			if (check)
				roundtrip(&r);
			start += r.used;
		}
		if (rv == RESP_EPROTO)
			break;
	}
	snprintf(err, 64, "%s", rv == RESP_EPROTO ? p.err : "");
	resp_parser_free(&p);
	return rv;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf whole = BUF_INIT, split = BUF_INIT;
	char e1[64], e2[64];
	size_t step;
	int rv1, rv2;

	if (size == 0)
		return 0;
	step = 1 + data[0] % 16;
	rv1 = run(data + 1, size - 1, 0, &whole, true, e1);
	rv2 = run(data + 1, size - 1, step, &split, false, e2);
	if (strstr(e1, "too big") == NULL && strstr(e2, "too big") == NULL) {
		FUZZ_CHECK(rv1 == rv2 && strcmp(e1, e2) == 0);
		FUZZ_CHECK(whole.len == split.len &&
			   (whole.len == 0 || memcmp(whole.data, split.data, whole.len) == 0));
	}
	buf_free(&whole);
	buf_free(&split);
	return 0;
}

static void fuzz_seeds(void)
{
	static const char *seeds[][2] = {
		{"ping-inline", "\x03PING\r\n"},
		{"multibulk", "\x01*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"},
		{"pipeline", "\x05*1\r\n$4\r\nPING\r\nSELECT 1\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{"quotes", "\x02set \"a\\x41\\n\" 'it\\'s' \"\"\r\n"},
		{"unbalanced", "\x02" "echo \"abc\r\n"},
		{"empty", "\x01*0\r\n*-1\r\n\r\n"},
		{"bad-dollar", "\x01*1\r\n:1\r\n"},
		{"bad-bulk", "\x01*1\r\n$2000\r\n"},
	};
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		seed_write(seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
	/* a multibulk made by the writer, binary argument included */
	buf_push(&b, 7);
	resp_array(&b, 3);
	resp_bulk_str(&b, "SET");
	resp_bulk(&b, "k\0\r\n", 4);
	resp_bulk_str(&b, "value");
	seed_buf("writer", &b);
	buf_free(&b);
}
