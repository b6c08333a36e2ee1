/* The RESP2 parser and reply writer (src/redis/resp.c) and key slots
 * (src/redis/slot.c): both request forms, sdssplitargs quoting, every
 * protocol error string of Redis 7 (networking.c), the limits, requests
 * split at every byte boundary, pipelines, and CRC16 / slot values of the
 * Redis Cluster specification. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "redis/resp.h"
#include "redis/slot.h"
#include "test.h"

/* ---- helpers ---- */

/* The requests of a stream, rendered "ARG1|ARG2;ARG1;" (";" after each
 * request, "<empty>" for argc 0), then "!<error>" when one ended it. */
struct parsed {
	struct buf text;
	int last;
	size_t used; /* bytes taken by complete requests */
};

static void render(struct buf *out, const struct resp_request *r)
{
	if (r->argc == 0)
		buf_append(out, "<empty>", 7);
	for (uint32_t i = 0; i < r->argc; i++) {
		if (i > 0)
			buf_push(out, '|');
		buf_append(out, r->argv[i].p, r->argv[i].n);
	}
	buf_push(out, ';');
}

/* Parses in[0..n) fed in pieces of `step` bytes (0: all at once) from a
 * buffer that grows as a connection's does: consumed requests are
 * dropped, the rest moved to a fresh allocation each time (so offsets,
 * not pointers, must carry the parser's state). */
static void parse_stream(const char *in, size_t n, size_t step, const struct resp_limits *lim,
			 struct parsed *out)
{
	struct resp_parser p;
	char *buf = NULL;
	size_t have = 0, fed = 0;

	buf_init(&out->text);
	out->used = 0;
	out->last = RESP_MORE;
	resp_parser_init(&p, lim);
	while (fed < n || out->last == RESP_REQUEST) {
		size_t more = step == 0 ? n - fed : (n - fed < step ? n - fed : step);
		char *nb = malloc(have + more + 1);
		if (have > 0)
			memcpy(nb, buf, have);
		memcpy(nb + have, in + fed, more);
		free(buf);
		buf = nb;
		have += more;
		fed += more;
		for (;;) {
			struct resp_request r;
			out->last = resp_parse(&p, buf, have, &r);
			if (out->last == RESP_EPROTO) {
				buf_push(&out->text, '!');
				buf_append(&out->text, p.err, strlen(p.err));
				goto end;
			}
			if (out->last == RESP_MORE)
				break;
			CHECK(r.used > 0 && r.used <= have);
			render(&out->text, &r);
			memmove(buf, buf + r.used, have - r.used);
			have -= r.used;
			out->used += r.used;
		}
		if (fed == n)
			break;
	}
end:
	buf_cstr(&out->text);
	free(buf);
	resp_parser_free(&p);
}

/* Parses s at once and at every split step 1..len; all must agree. */
static void expect(const char *s, size_t n, const struct resp_limits *lim, const char *want)
{
	struct parsed whole;

	parse_stream(s, n, 0, lim, &whole);
	CHECK_EQ_STR((const char *)whole.text.data, want);
	for (size_t step = 1; step <= n; step++) {
		struct parsed part;
		parse_stream(s, n, step, lim, &part);
		if (strcmp((const char *)part.text.data, want) != 0) {
			test_note("step %zu", step);
			CHECK_EQ_STR((const char *)part.text.data, want);
		}
		CHECK_EQ_INT(part.last, whole.last);
		buf_free(&part.text);
	}
	buf_free(&whole.text);
}

#define EXPECT(lit, want) expect(lit, sizeof(lit) - 1, NULL, want)
#define EXPECT_LIM(lit, lim, want) expect(lit, sizeof(lit) - 1, lim, want)

/* ---- multibulk ---- */

TEST(multibulk_requests)
{
	EXPECT("*1\r\n$4\r\nPING\r\n", "PING;");
	EXPECT("*2\r\n$4\r\nECHO\r\n$5\r\nhe\r\nl\r\n", "ECHO|he\r\nl;");
	EXPECT("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", "SET|k|;");
	EXPECT("*0\r\n", "<empty>;");
	EXPECT("*-1\r\n", "<empty>;");
	EXPECT("*-5\r\n*1\r\n$1\r\nx\r\n", "<empty>;x;");
	/* Redis skips the two bytes after '\r' and after a bulk unchecked */
	EXPECT("*1\rX$1\rXyZZ", "y;");
	/* incomplete: nothing yet */
	EXPECT("*2\r\n$3\r\nGET\r\n$1\r\n", "");
}

TEST(multibulk_binary_nul)
{
	struct parsed out;
	static const char in[] = "*2\r\n$1\r\n\0\r\n$2\r\n\r\n\r\n";

	parse_stream(in, sizeof in - 1, 0, NULL, &out);
	CHECK_EQ_INT(out.last, RESP_MORE);
	CHECK_EQ_MEM(out.text.data, out.text.len, "\0|\r\n;", 5);
	buf_free(&out.text);
}

/* ---- inline ---- */

TEST(inline_requests)
{
	EXPECT("PING\r\n", "PING;");
	EXPECT("PING\n", "PING;");
	EXPECT("  set  k   v \r\n", "set|k|v;");
	EXPECT("\r\n", "<empty>;");
	EXPECT("\n\n", "<empty>;<empty>;");
	EXPECT("echo \"a b\" 'c d'\r\n", "echo|a b|c d;");
	EXPECT("echo \"\\x41\\x7a\\n\\r\\t\\b\\a\\\\\\\"\\q\"\r\n",
	       "echo|Az\n\r\t\b\a\\\"q;");
	EXPECT("echo \"\\x4\"\r\n", "echo|x4;"); /* not two hex digits: \x is x */
	EXPECT("echo 'it\\'s' 'a\\b'\r\n", "echo|it's|a\\b;");
	EXPECT("echo \"\" ''\r\n", "echo||;");
	EXPECT("echo a\"b\"\r\n", "echo|ab;"); /* a quote inside a word opens quotes */
	EXPECT("echo a\tb\r\n", "echo|a|b;");
	/* a NUL ends the line for sdssplitargs */
	expect("echo a\0b c\r\nPING\r\n", 18, NULL, "echo|a;PING;");
}

TEST(inline_unbalanced_quotes)
{
	const char *want = "!ERR Protocol error: unbalanced quotes in request";
	EXPECT("echo \"abc\r\n", want);
	EXPECT("echo 'abc\r\n", want);
	EXPECT("echo \"a\"b\r\n", want); /* closing quote not followed by a blank */
	EXPECT("echo 'a'b\r\n", want);
	EXPECT("PING\r\necho \"x\r\n", "PING;!ERR Protocol error: unbalanced quotes in request");
}

/* ---- every protocol error ---- */

TEST(protocol_errors)
{
	EXPECT("*x\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*+1\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*01\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("* 1\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*1048577\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*99999999999999999999\r\n", "!ERR Protocol error: invalid multibulk length");
	EXPECT("*1\r\n:1\r\n", "!ERR Protocol error: expected '$', got ':'");
	EXPECT("*1\r\n\r\n", "!ERR Protocol error: expected '$', got '\r'");
	EXPECT("*1\r\n$-1\r\n", "!ERR Protocol error: invalid bulk length");
	EXPECT("*1\r\n$\r\n", "!ERR Protocol error: invalid bulk length");
	EXPECT("*1\r\n$x\r\n", "!ERR Protocol error: invalid bulk length");
	EXPECT("*1\r\n$4194305\r\n", "!ERR Protocol error: invalid bulk length");
	EXPECT("*2\r\n$1\r\na\r\nPING\r\n", "!ERR Protocol error: expected '$', got 'P'");
}

/* The writer turns the \r of "got '\r'" into a space, as Redis does. */
TEST(error_reply_text)
{
	struct buf b = BUF_INIT;

	resp_error(&b, "ERR Protocol error: expected '$', got '\r'");
	buf_cstr(&b);
	CHECK_EQ_STR((const char *)b.data, "-ERR Protocol error: expected '$', got ' '\r\n");
	buf_reset(&b);
	resp_errorf(&b, "ERR unknown command '%s'", "a\nb");
	buf_cstr(&b);
	CHECK_EQ_STR((const char *)b.data, "-ERR unknown command 'a b'\r\n");
	buf_free(&b);
}

/* Lines without their end: an error past the inline limit, "more" below. */
TEST(line_limits)
{
	struct resp_limits lim = {.max_bulk = 100, .max_multibulk = 3, .max_inline = 16};
	char big[64];

	memset(big, 'a', sizeof big);
	expect(big, 16, &lim, "");
	expect(big, 17, &lim, "!ERR Protocol error: too big inline request");
	big[0] = '*';
	memset(big + 1, '1', sizeof big - 1);
	expect(big, 16, &lim, "");
	expect(big, 17, &lim, "!ERR Protocol error: too big mbulk count string");
	memcpy(big, "*1\r\n$", 5);
	expect(big, 4 + 16, &lim, "");
	expect(big, 4 + 17, &lim, "!ERR Protocol error: too big bulk count string");
	/* the limits given, not the defaults */
	EXPECT_LIM("*4\r\n", &lim, "!ERR Protocol error: invalid multibulk length");
	EXPECT_LIM("*3\r\n$0\r\n\r\n$0\r\n\r\n$100\r\n", &lim, "");
	EXPECT_LIM("*1\r\n$101\r\n", &lim, "!ERR Protocol error: invalid bulk length");
	/* a line longer than the limit is fine when its end comes in the same
	 * read (as in Redis, the outcome then depends on how reads split it) */
	{
		static const char in[] = "echo 0123456789012345678901234567890\r\n";
		struct parsed out;
		parse_stream(in, sizeof in - 1, 0, &lim, &out);
		CHECK_EQ_STR((const char *)out.text.data, "echo|0123456789012345678901234567890;");
		buf_free(&out.text);
	}
}

TEST(default_limits)
{
	struct parsed out;
	char hdr[64];
	int n;

	n = snprintf(hdr, sizeof hdr, "*%u\r\n", RESP_DEFAULT_MAX_MULTIBULK);
	parse_stream(hdr, (size_t)n, 0, NULL, &out);
	CHECK_EQ_INT(out.last, RESP_MORE);
	buf_free(&out.text);
	n = snprintf(hdr, sizeof hdr, "*1\r\n$%u\r\n", RESP_DEFAULT_MAX_BULK);
	parse_stream(hdr, (size_t)n, 0, NULL, &out);
	CHECK_EQ_INT(out.last, RESP_MORE);
	buf_free(&out.text);
}

/* A bulk of the largest size, fed in 64 KiB reads, as a connection sees it. */
TEST(largest_bulk)
{
	size_t n = RESP_DEFAULT_MAX_BULK;
	struct buf in = BUF_INIT;
	struct parsed out;

	buf_printf(&in, "*2\r\n$3\r\nSET\r\n$%zu\r\n", n);
	buf_reserve(&in, n + 2);
	memset(in.data + in.len, 'v', n);
	in.len += n;
	buf_append(&in, "\r\nPING\r\n", 8);
	parse_stream((const char *)in.data, in.len, 65536, NULL, &out);
	CHECK_EQ_INT(out.last, RESP_MORE);
	CHECK_EQ_U64(out.used, in.len);
	CHECK_EQ_U64(out.text.len, 4 + n + 1 + 5);
	CHECK_EQ_MEM(out.text.data + out.text.len - 7, 7, "v;PING;", 7);
	buf_free(&out.text);
	buf_free(&in);
}

/* Many arguments: the table grows past its first 1024 and shrinks back. */
TEST(many_arguments)
{
	struct buf in = BUF_INIT;
	struct resp_parser p;
	struct resp_request r;
	const uint32_t n = 5000;

	buf_printf(&in, "*%u\r\n", n);
	for (uint32_t i = 0; i < n; i++)
		buf_printf(&in, "$%u\r\n%u\r\n", i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : 4, i);
	buf_append(&in, "PING\r\n", 6);
	resp_parser_init(&p, NULL);
	CHECK_EQ_INT(resp_parse(&p, (const char *)in.data, in.len, &r), RESP_REQUEST);
	CHECK_EQ_U64(r.argc, n);
	CHECK_EQ_MEM(r.argv[4321].p, r.argv[4321].n, "4321", 4);
	CHECK(p.cap >= n);
	CHECK_EQ_INT(resp_parse(&p, (const char *)in.data + r.used, in.len - r.used, &r),
		     RESP_REQUEST);
	CHECK(p.cap <= 1024);
	CHECK_EQ_MEM(r.argv[0].p, r.argv[0].n, "PING", 4);
	resp_parser_free(&p);
	buf_free(&in);
}

/* Pipelines mixing both forms, split at every byte. */
TEST(pipelines)
{
	EXPECT("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nSELECT 3\n*1\r\n$4\r\nQUIT\r\n",
	       "PING;ECHO|hi;SELECT|3;QUIT;");
	EXPECT("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", "PING;PING;");
}

TEST(need_hint)
{
	struct resp_parser p;
	struct resp_request r;
	static const char in[] = "*2\r\n$3\r\nGET\r\n$10\r\nab";

	resp_parser_init(&p, NULL);
	CHECK_EQ_INT(resp_parse(&p, in, sizeof in - 1, &r), RESP_MORE);
	CHECK_EQ_U64(resp_parser_need(&p), sizeof in - 1 - 2 + 12);
	resp_parser_free(&p);
}

TEST(string2ll)
{
	long long v = 7;

	CHECK(resp_string2ll("0", 1, &v) && v == 0);
	CHECK(resp_string2ll("-1", 2, &v) && v == -1);
	CHECK(resp_string2ll("9223372036854775807", 19, &v) && v == 9223372036854775807LL);
	CHECK(resp_string2ll("-9223372036854775808", 20, &v) && v == (-9223372036854775807LL - 1));
	CHECK(!resp_string2ll("9223372036854775808", 19, &v));
	CHECK(!resp_string2ll("-0", 2, &v));
	CHECK(!resp_string2ll("007", 3, &v));
	CHECK(!resp_string2ll("+7", 2, &v));
	CHECK(!resp_string2ll("7 ", 2, &v));
	CHECK(!resp_string2ll("-", 1, &v));
	CHECK(!resp_string2ll("", 0, &v));
}

/* ---- replies ---- */

TEST(replies)
{
	struct buf b = BUF_INIT;

	resp_simple(&b, "OK");
	resp_int(&b, -42);
	resp_bulk(&b, "a\0b", 3);
	resp_bulk_str(&b, "");
	resp_null_bulk(&b);
	resp_array(&b, 2);
	resp_int(&b, 0);
	resp_null_array(&b);
	resp_error(&b, "WRONGTYPE Operation against a key holding the wrong kind of value");
	CHECK_EQ_MEM(b.data, b.len,
		     "+OK\r\n:-42\r\n$3\r\na\0b\r\n$0\r\n\r\n$-1\r\n*2\r\n:0\r\n*-1\r\n"
		     "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
		     sizeof("+OK\r\n:-42\r\n$3\r\na\0b\r\n$0\r\n\r\n$-1\r\n*2\r\n:0\r\n*-1\r\n"
			    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n") -
			     1);
	buf_free(&b);
}

/* ---- slots ---- */

TEST(crc16_and_slots)
{
	/* The cluster specification: CRC16("123456789") = 0x31C3. */
	CHECK_EQ_INT(redis_crc16("123456789", 9), 0x31C3);
	CHECK_EQ_INT(redis_crc16("", 0), 0);
	/* CLUSTER KEYSLOT of a Redis 7 server */
	CHECK_EQ_INT(redis_key_slot("foo", 3), 12182);
	CHECK_EQ_INT(redis_key_slot("bar", 3), 5061);
	CHECK_EQ_INT(redis_key_slot("hello", 5), 866);
	/* hash tags, the specification's examples */
	CHECK_EQ_INT(redis_key_slot("{user1000}.following", 20),
		     redis_key_slot("{user1000}.followers", 20));
	CHECK_EQ_INT(redis_key_slot("{user1000}.following", 20), redis_key_slot("user1000", 8));
	CHECK_EQ_INT(redis_key_slot("foo{{bar}}zap", 13), redis_key_slot("{bar", 4));
	CHECK_EQ_INT(redis_key_slot("foo{bar}{zap}", 13), redis_key_slot("bar", 3));
	CHECK_EQ_INT(redis_key_slot("foo{}{bar}", 10),
		     redis_crc16("foo{}{bar}", 10) & 16383); /* empty tag: whole key */
	CHECK_EQ_INT(redis_key_slot("{foo", 4), redis_crc16("{foo", 4) & 16383);
}

TEST(slot_partitions)
{
	CHECK_EQ_INT(redis_slot_partition(0), 0);
	CHECK_EQ_INT(redis_slot_partition(16383), 65532);
	CHECK_EQ_INT(redis_partition_slot(0), 0);
	CHECK_EQ_INT(redis_partition_slot(1), 1);
	CHECK_EQ_INT(redis_partition_slot(4), 1);
	CHECK_EQ_INT(redis_partition_slot(65536), REDIS_SLOTS);
	/* every slot maps back into the range [first, next first) */
	for (uint32_t s = 0; s < REDIS_SLOTS; s++) {
		uint16_t h = redis_slot_partition((uint16_t)s);
		CHECK(redis_partition_slot(h) == s);
		CHECK(redis_partition_slot((uint32_t)h + 1) == s + 1);
	}
}

TEST_MAIN(T(multibulk_requests), T(multibulk_binary_nul), T(inline_requests),
	  T(inline_unbalanced_quotes), T(protocol_errors), T(error_reply_text), T(line_limits),
	  T(default_limits), T(largest_bulk), T(many_arguments), T(pipelines), T(need_hint),
	  T(string2ll), T(replies), T(crc16_and_slots), T(slot_partitions))
