/* Sorted set commands on a real store: replies and errors as Redis 7.0
 * gives them (checked against redis-server 7.0.15), the DocDB layout of
 * docdb-format.md §11, the txn overlay, TTL and WRONGTYPE. */
#include "yharness.h"

#include <stdio.h>
#include <string.h>

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(zadd_basic)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 1 a 2 b 3 c"), "3");
	EQ(yh_cmd(&h, yh_ht(2), "ZADD z 1 a 5 b 4 d"), "1");
	EQ(yh_read(&h, yh_ht(3), "ZCARD z"), "4");
	EQ(yh_read(&h, yh_ht(3), "ZRANGE z 0 -1 WITHSCORES"),
	   "[\"a\", \"1\", \"c\", \"3\", \"d\", \"4\", \"b\", \"5\"]");
	EQ(yh_read(&h, yh_ht(3), "ZSCORE z b"), "\"5\"");
	EQ(yh_read(&h, yh_ht(3), "ZSCORE z x"), "nil");
	EQ(yh_read(&h, yh_ht(3), "ZSCORE nokey x"), "nil");
	EQ(yh_read(&h, yh_ht(3), "ZCARD nokey"), "0");
	EQ(yh_read(&h, yh_ht(3), "TYPE z"), "zset");
	/* a duplicate member in one ZADD: added once, the last score wins */
	EQ(yh_cmd(&h, yh_ht(4), "ZADD y 1 m 2 m"), "1");
	EQ(yh_read(&h, yh_ht(5), "ZRANGE y 0 -1 WITHSCORES"), "[\"m\", \"2\"]");
	EQ(yh_read(&h, yh_ht(5), "ZCARD y"), "1");
	yh_close(&h);
}

TEST(zadd_flags)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z XX 1 a"), "0");
	EQ(yh_read(&h, yh_ht(2), "EXISTS z"), "0");
	EQ(yh_cmd(&h, yh_ht(2), "ZADD z XX INCR 1 a"), "nil");
	EQ(yh_cmd(&h, yh_ht(3), "ZADD z NX 1 a 2 b"), "2");
	EQ(yh_cmd(&h, yh_ht(4), "ZADD z NX 9 a 3 c"), "1");
	EQ(yh_read(&h, yh_ht(5), "ZSCORE z a"), "\"1\"");
	EQ(yh_cmd(&h, yh_ht(5), "ZADD z XX 7 a 8 x"), "0");
	EQ(yh_read(&h, yh_ht(6), "ZSCORE z a"), "\"7\"");
	EQ(yh_read(&h, yh_ht(6), "ZSCORE z x"), "nil");
	EQ(yh_cmd(&h, yh_ht(6), "ZADD z CH 7 a 9 b 1 y"), "2");
	EQ(yh_cmd(&h, yh_ht(7), "ZADD z GT CH 5 a 10 b"), "1");
	EQ(yh_read(&h, yh_ht(8), "ZSCORE z a"), "\"7\"");
	EQ(yh_read(&h, yh_ht(8), "ZSCORE z b"), "\"10\"");
	EQ(yh_cmd(&h, yh_ht(8), "ZADD z LT ch 5 a 20 b 6 new"), "2");
	EQ(yh_read(&h, yh_ht(9), "ZRANGE z 0 -1 WITHSCORES"),
	   "[\"y\", \"1\", \"c\", \"3\", \"a\", \"5\", \"new\", \"6\", \"b\", \"10\"]");
	EQ(yh_cmd(&h, yh_ht(9), "ZADD z INCR 2.5 a"), "\"7.5\"");
	EQ(yh_cmd(&h, yh_ht(10), "ZADD z GT INCR -1 a"), "nil");
	EQ(yh_cmd(&h, yh_ht(10), "ZADD z NX INCR 1 a"), "nil");
	EQ(yh_cmd(&h, yh_ht(10), "ZADD z INCR 0.1 q"), "\"0.10000000000000001\"");
	/* errors, in Redis's order */
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z 1"),
	   "(error) ERR wrong number of arguments for 'zadd' command");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z 1 a 2"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z NX XX 1 a"),
	   "(error) ERR XX and NX options at the same time are not compatible");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z GT LT 1 a"),
	   "(error) ERR GT, LT, and/or NX options at the same time are not compatible");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z GT NX 1 a"),
	   "(error) ERR GT, LT, and/or NX options at the same time are not compatible");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z INCR 1 a 2 b"),
	   "(error) ERR INCR option supports a single increment-element pair");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z 1 a nan b"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z 1 a x b"), "(error) ERR value is not a valid float");
	EQ(yh_read(&h, yh_ht(12), "ZCARD z"), "6");
	EQ(yh_cmd(&h, yh_ht(12), "ZADD z INCR inf a"), "\"inf\"");
	EQ(yh_cmd(&h, yh_ht(13), "ZADD z INCR -inf a"),
	   "(error) ERR resulting score is not a number (NaN)");
	EQ(yh_read(&h, yh_ht(14), "ZSCORE z a"), "\"inf\"");
	yh_close(&h);
}

TEST(zincrby)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZINCRBY z 2 a"), "\"2\"");
	EQ(yh_cmd(&h, yh_ht(2), "ZINCRBY z -3.5 a"), "\"-1.5\"");
	EQ(yh_cmd(&h, yh_ht(3), "ZINCRBY z x a"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(3), "ZINCRBY z 1"),
	   "(error) ERR wrong number of arguments for 'zincrby' command");
	EQ(yh_cmd(&h, yh_ht(3), "ZINCRBY z +inf b"), "\"inf\"");
	/* -0: stored as 0, but the INCR reply of a new member is "-0" */
	EQ(yh_cmd(&h, yh_ht(4), "ZINCRBY z -0 c"), "\"-0\"");
	EQ(yh_read(&h, yh_ht(5), "ZSCORE z c"), "\"0\"");
	EQ(yh_cmd(&h, yh_ht(5), "ZREM z c"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "ZINCRBY z -inf b"),
	   "(error) ERR resulting score is not a number (NaN)");
	EQ(yh_read(&h, yh_ht(5), "ZRANGE z 0 -1 WITHSCORES"), "[\"a\", \"-1.5\", \"b\", \"inf\"]");
	yh_close(&h);
}

TEST(order_edges)
{
	yh_open(&h, "yzset");
	/* equal scores order by member bytes; negative scores, infinities;
	 * -0 is 0 (Redis replies "0" too) */
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 0 b -0 a 0 c -1 n -inf lo +inf hi -1.5 m 1e300 big"), "8");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 -1 WITHSCORES"),
	   "[\"lo\", \"-inf\", \"m\", \"-1.5\", \"n\", \"-1\", \"a\", \"0\", \"b\", \"0\", "
	   "\"c\", \"0\", \"big\", \"1.0000000000000001e+300\", \"hi\", \"inf\"]");
	EQ(yh_read(&h, yh_ht(2), "ZSCORE z a"), "\"0\"");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z -0 0"), "[\"a\", \"b\", \"c\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z (-1 (0"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z -1 (0"), "[\"n\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z -inf -1.5"), "[\"lo\", \"m\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z (1 +inf"), "[\"big\", \"hi\"]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGEBYSCORE z 0 -1"), "[\"c\", \"b\", \"a\", \"n\"]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGEBYSCORE z +inf (1e300"), "[\"hi\"]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGEBYSCORE z inf -inf LIMIT 1 2"), "[\"big\", \"c\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANK z a"), "3");
	EQ(yh_read(&h, yh_ht(2), "ZRANK z c"), "5");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANK z c"), "2");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANK z lo"), "7");
	EQ(yh_read(&h, yh_ht(2), "ZRANK z nope"), "nil");
	EQ(yh_read(&h, yh_ht(2), "ZRANK nokey a"), "nil");
	EQ(yh_read(&h, yh_ht(2), "ZRANK z"),
	   "(error) ERR wrong number of arguments for 'zrank' command");
	/* members are bytes: "" and binary */
	EQ(yh_cmd(&h, yh_ht(3), "ZADD e 1 \"\" 1 \\x00"), "2");
	{
		struct resp_arg av[] = {{"ZADD", 4}, {"e", 1}, {"1", 1}, {"\x00", 1}};
		EQ(yh_cmd(&h, yh_ht(4), "ZCARD e"), "2");
		yh_begin(&h, yh_ht(5), true);
		EQ(yh_runv(&h, 4, av), "1");
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(6), "ZRANGE e 0 -1"), "[\"\", \"\\x00\", \"\\x5cx00\"]");
	yh_close(&h);
}

TEST(zrange_forms)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 1 a 2 b 3 c 4 d 5 e"), "5");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 1 2"), "[\"b\", \"c\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z -2 -1"), "[\"d\", \"e\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z -100 1"), "[\"a\", \"b\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 3 100"), "[\"d\", \"e\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 3 1"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 5 10"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE nokey 0 -1"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGE z 0 1 WITHSCORES"), "[\"e\", \"5\", \"d\", \"4\"]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGE z -1 -1"), "[\"a\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 0 REV"), "[\"e\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z (1 3 BYSCORE WITHSCORES"),
	   "[\"b\", \"2\", \"c\", \"3\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 4 2 BYSCORE REV"), "[\"d\", \"c\", \"b\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z -inf +inf BYSCORE LIMIT 1 2"), "[\"b\", \"c\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z -inf +inf BYSCORE LIMIT 3 -1"), "[\"d\", \"e\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z -inf +inf BYSCORE LIMIT 3 0"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z -inf +inf LIMIT -1 1"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 0 1"), "[\"b\", \"2\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 3 2"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z (2 2"), "[]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 2 2"), "[\"b\"]");
	/* errors */
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z a 1"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 1 LIMIT 0 1"),
	   "(error) ERR syntax error, LIMIT is only supported in combination with either BYSCORE "
	   "or BYLEX");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 1 LIMIT 0"), "(error) ERR syntax error");
	/* Redis checks LIMIT's count only: a count of -1 passes with ranks */
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 1 LIMIT 3 -1"), "[\"a\", \"b\"]");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGE z 0 0 LIMIT -2 -1"), "[\"e\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 1 FOO"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z a 1"), "(error) ERR min or max is not a float");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z nan 1"), "(error) ERR min or max is not a float");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 1x 1"), "(error) ERR min or max is not a float");
	/* zslParseRange is plain strtod: "(" is (0, 1e999 is inf, hex passes */
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z ( 2"), "[\"a\", \"b\"]");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 0x2 1e999"), "[\"b\", \"c\", \"d\", \"e\"]");
	EQ(yh_cmd(&h, yh_ht(2), "ZADD z 1e999 x"), "(error) ERR value is not a valid float");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 0 1 REV"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(2), "ZREVRANGE z 0 1 BYSCORE"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(2), "ZRANGEBYSCORE z 0 1 LIMIT x 1"),
	   "(error) ERR value is not an integer or out of range");
	yh_close(&h);
}

TEST(zrem_zpop_empty_deletion)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 1 a 2 b 3 c 4 d"), "4");
	EQ(yh_cmd(&h, yh_ht(2), "ZREM z a x a"), "1");
	EQ(yh_read(&h, yh_ht(3), "ZCARD z"), "3");
	EQ(yh_cmd(&h, yh_ht(3), "ZREM nokey a"), "0");
	EQ(yh_cmd(&h, yh_ht(3), "ZPOPMIN z"), "[\"b\", \"2\"]");
	EQ(yh_cmd(&h, yh_ht(4), "ZPOPMAX z"), "[\"d\", \"4\"]");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMAX z 0"), "[]");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMAX z -1"),
	   "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMAX z abc"),
	   "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMAX z 1 2"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMIN nokey"), "[]");
	EQ(yh_cmd(&h, yh_ht(5), "ZPOPMIN z 10"), "[\"c\", \"3\"]");
	EQ(yh_read(&h, yh_ht(6), "EXISTS z"), "0");
	EQ(yh_read(&h, yh_ht(6), "TYPE z"), "none");
	EQ(yh_cmd(&h, yh_ht(7), "ZADD z 1 a 2 b 3 c"), "3");
	EQ(yh_cmd(&h, yh_ht(8), "ZPOPMAX z 2"), "[\"c\", \"3\", \"b\", \"2\"]");
	EQ(yh_cmd(&h, yh_ht(9), "ZREM z a"), "1");
	EQ(yh_read(&h, yh_ht(10), "EXISTS z"), "0");
	/* a new zset on the same key starts empty */
	EQ(yh_cmd(&h, yh_ht(11), "ZADD z 9 q"), "1");
	EQ(yh_read(&h, yh_ht(12), "ZRANGE z 0 -1"), "[\"q\"]");
	EQ(yh_read(&h, yh_ht(12), "ZCARD z"), "1");
	yh_close(&h);
}

TEST(wrongtype)
{
	static const char *const cmds[] = {
		"ZADD s 1 a",      "ZINCRBY s 1 a",       "ZREM s a",
		"ZCARD s",         "ZSCORE s a",          "ZRANGE s 0 1",
		"ZREVRANGE s 0 1", "ZRANGEBYSCORE s 0 1", "ZREVRANGEBYSCORE s 1 0",
		"ZRANK s a",       "ZREVRANK s a",        "ZPOPMIN s",
		"ZPOPMAX s 2",
	};
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "SET s v"), "OK");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		EQ(yh_cmd(&h, yh_ht(2), cmds[i]),
		   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_cmd(&h, yh_ht(3), "ZADD z 1 a"), "1");
	EQ(yh_read(&h, yh_ht(4), "GET z"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	/* argument errors come before the type check, as in Redis */
	EQ(yh_cmd(&h, yh_ht(4), "ZADD s x a"), "(error) ERR value is not a valid float");
	yh_close(&h);
}

TEST(ttl_on_key)
{
	yh_open(&h, "yzset");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 1 a 2 b"), "2");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE z 10"), "1");
	EQ(yh_cmd(&h, yh_ht(3), "ZADD z 3 c"), "1");
	EQ(yh_read(&h, yh_ht(4), "TTL z"), "8");
	EQ(yh_read(&h, yh_ht(11), "ZCARD z"), "3");
	EQ(yh_read(&h, yh_ht(12), "ZCARD z"), "3");
	EQ(yh_read(&h, yh_ht_ms(12001), "ZCARD z"), "0");
	EQ(yh_read(&h, yh_ht_ms(12001), "ZRANGE z 0 -1"), "[]");
	EQ(yh_read(&h, yh_ht_ms(12001), "ZSCORE z a"), "nil");
	/* after expiry, a new zset: the old members are gone */
	EQ(yh_cmd(&h, yh_ht(13), "ZADD z 5 e"), "1");
	EQ(yh_read(&h, yh_ht(14), "ZRANGE z 0 -1 WITHSCORES"), "[\"e\", \"5\"]");
	EQ(yh_read(&h, yh_ht(14), "ZSCORE z a"), "nil");
	EQ(yh_read(&h, yh_ht(14), "TTL z"), "-1");
	yh_close(&h);
}

TEST(overlay)
{
	yh_open(&h, "yzset");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "ZADD z 1 a 2 b"), "2");
	EQ(yh_run(&h, "ZINCRBY z 5 a"), "\"6\"");
	EQ(yh_run(&h, "ZRANGE z 0 -1 WITHSCORES"), "[\"b\", \"2\", \"a\", \"6\"]");
	EQ(yh_run(&h, "ZRANK z a"), "1");
	EQ(yh_run(&h, "ZCARD z"), "2");
	EQ(yh_run(&h, "ZPOPMIN z"), "[\"b\", \"2\"]");
	EQ(yh_run(&h, "ZCARD z"), "1");
	EQ(yh_run(&h, "ZADD z 0 c"), "1");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "ZRANGE z 0 -1 WITHSCORES"), "[\"c\", \"0\", \"a\", \"6\"]");
	EQ(yh_read(&h, yh_ht(2), "ZCARD z"), "2");
	/* emptied and refilled in one txn */
	yh_begin(&h, yh_ht(3), true);
	EQ(yh_run(&h, "ZPOPMIN z 5"), "[\"c\", \"0\", \"a\", \"6\"]");
	EQ(yh_run(&h, "EXISTS z"), "0");
	EQ(yh_run(&h, "ZADD z 1 x"), "1");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(4), "ZRANGE z 0 -1"), "[\"x\"]");
	EQ(yh_read(&h, yh_ht(4), "ZCARD z"), "1");
	yh_close(&h);
}

TEST(docdb_layout)
{
	/* The pairs of a small sorted set (docs/redis.md shows the same). */
	yh_open(&h, "yzset");
	yh_label_ht(&h, yh_ht(1), "T1");
	yh_label_ht(&h, yh_ht(2), "T2");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD z 1.5 a -2 b"), "2");
	EQ(yh_cmd(&h, yh_ht(2), "ZINCRBY z 1 b"), "\"-1\"");
	EQ(yh_dump(&h), "(0x7f74, z), T1 -> [Redis-SortedSet-Type]\n"
			"(0x7f74, z), Counter, T1 -> 2\n"
			"(0x7f74, z), SSForward, -2, b, T2 -> Tombstone\n"
			"(0x7f74, z), SSForward, -2, b, T1 -> [NULL]\n"
			"(0x7f74, z), SSForward, -1, b, T2 -> [NULL]\n"
			"(0x7f74, z), SSForward, 1.5, a, T1 -> [NULL]\n"
			"(0x7f74, z), SSReverse, a, T1 -> 1.5\n"
			"(0x7f74, z), SSReverse, b, T2 -> -1\n"
			"(0x7f74, z), SSReverse, b, T1 -> -2\n");
	yh_close(&h);
}

TEST_MAIN(T(zadd_basic), T(zadd_flags), T(zincrby), T(order_edges), T(zrange_forms),
	  T(zrem_zpop_empty_deletion), T(wrongtype), T(ttl_on_key), T(overlay), T(docdb_layout))
