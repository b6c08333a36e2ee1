/* The value cells of the CQL view of a Redis database (redis_view_value,
 * src/client/redis_view.c) from the RESP2 replies Redis 7 gives to GET,
 * HGETALL, SMEMBERS, ZRANGE .. WITHSCORES, LRANGE and YEDIS's
 * TSRANGEBYTIME, and its refusals: nil, error replies, every prefix of a
 * good reply, trailing bytes, lengths past the end, odd pair counts,
 * nesting too deep. Pure: no cluster. */
#include <string.h>

#include "client/internal.h"
#include "common/buf.h"
#include "test.h"

static void ok(const char *type, const char *reply, const char *want)
{
	struct buf b = BUF_INIT;
	int rv = redis_view_value(type, reply, strlen(reply), &b);
	CHECK_MSG(rv == 0, "%s: %d %s", type, rv, docraft_errmsg());
	CHECK_MSG(strcmp(buf_cstr(&b), want) == 0, "%s: <%s>, want <%s>", type, buf_cstr(&b), want);
	buf_free(&b);
}

static void badn(const char *type, const char *reply, size_t len, int want)
{
	struct buf b = BUF_INIT;
	int rv = redis_view_value(type, reply, len, &b);
	CHECK_MSG(rv == want, "%s <%.*s>: %d, want %d", type, (int)len, reply, rv, want);
	buf_free(&b);
}

static void bad(const char *type, const char *reply, int want)
{
	badn(type, reply, strlen(reply), want);
}

TEST(types)
{
	ok("string", "$6\r\nvalue1\r\n", "value1");
	ok("string", "$0\r\n\r\n", "");
	ok("hash", "*4\r\n$7\r\nsubkey1\r\n$8\r\nnew_val1\r\n$7\r\nsubkey3\r\n$6\r\nvalue3\r\n",
	   "{subkey1: new_val1, subkey3: value3}");
	ok("hash", "*0\r\n", "{}");
	ok("set", "*3\r\n$6\r\nvalue4\r\n$6\r\nvalue5\r\n$6\r\nvalue6\r\n",
	   "{value4, value5, value6}");
	ok("zset", "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n", "[(1.5, a), (2, b)]");
	ok("list", "*3\r\n$1\r\nx\r\n$0\r\n\r\n$1\r\ny\r\n", "[x, , y]");
	ok("tsdb", "*4\r\n$2\r\n10\r\n$2\r\nv1\r\n$2\r\n20\r\n$2\r\nv2\r\n", "{10: v1, 20: v2}");
}

TEST(refusals)
{
	static const char good[] = "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n";
	bad("string", "$-1\r\n", DOCRAFT_ENOTFOUND);
	bad("hash", "*-1\r\n", DOCRAFT_ENOTFOUND);
	bad("hash", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	    DOCRAFT_EINVAL);
	CHECK(strstr(docraft_errmsg(), "WRONGTYPE") != NULL);
	for (size_t n = 0; n < sizeof good - 1; n++)
		badn("zset", good, n, DOCRAFT_ECORRUPT);
	bad("zset", "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n+x\r\n",
	    DOCRAFT_ECORRUPT); /* trailing bytes */
	bad("string", "$5\r\nab\r\n", DOCRAFT_ECORRUPT);
	bad("string", "$99999999999999999999\r\nab\r\n", DOCRAFT_ECORRUPT);
	bad("string", ":12\r\n", DOCRAFT_ECORRUPT);
	bad("hash", "*1\r\n$1\r\na\r\n", DOCRAFT_ECORRUPT);
	bad("set", "$1\r\na\r\n", DOCRAFT_ECORRUPT);
	bad("list", "*999999999\r\n$1\r\na\r\n", DOCRAFT_ECORRUPT);
	bad("list", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*0\r\n", DOCRAFT_ECORRUPT);
	bad("list", "?x\r\n", DOCRAFT_ECORRUPT);
	bad("list", "*1x\r\n", DOCRAFT_ECORRUPT);
}

TEST_MAIN(T(types), T(refusals))
