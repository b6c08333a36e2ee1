/* String commands on a real store: replies and errors as Redis 7.0 gives
 * them, TTLs by advancing the hybrid time. */
#include "yharness.h"

#include <stdio.h>

#include "yedis/yedis_int.h"

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(get_set)
{
	yh_open(&h, "ystr");
	EQ(yh_read(&h, yh_ht(1), "GET a"), "nil");
	EQ(yh_cmd(&h, yh_ht(2), "SET a hello"), "OK");
	EQ(yh_read(&h, yh_ht(3), "GET a"), "\"hello\"");
	EQ(yh_read(&h, yh_ht(3), "get a"), "\"hello\"");
	EQ(yh_cmd(&h, yh_ht(4), "SET a \"\""), "OK");
	EQ(yh_read(&h, yh_ht(5), "GET a"), "\"\"");
	EQ(yh_read(&h, yh_ht(5), "GET"), "(error) ERR wrong number of arguments for 'get' command");
	EQ(yh_read(&h, yh_ht(5), "GET a b"),
	   "(error) ERR wrong number of arguments for 'get' command");
	EQ(yh_read(&h, yh_ht(5), "SET a b"),
	   "(error) ERR docraft: 'set' writes, but runs in a read-only transaction");
	yh_close(&h);
}

TEST(set_options)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(1), "SET a 1 NX"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "SET a 2 NX"), "nil");
	EQ(yh_cmd(&h, yh_ht(2), "SET b 2 XX"), "nil");
	EQ(yh_cmd(&h, yh_ht(3), "SET a 3 XX"), "OK");
	EQ(yh_read(&h, yh_ht(4), "GET a"), "\"3\"");
	EQ(yh_read(&h, yh_ht(4), "EXISTS b"), "0");
	EQ(yh_cmd(&h, yh_ht(5), "SET a 4 GET"), "\"3\"");
	EQ(yh_cmd(&h, yh_ht(5), "SET c 4 GET"), "nil");
	EQ(yh_cmd(&h, yh_ht(6), "SET a 5 NX GET"), "\"4\"");
	EQ(yh_read(&h, yh_ht(7), "GET a"), "\"4\"");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 NX XX"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX 10 PX 100"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX 10 KEEPTTL"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 KEEPTTL EX 10"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 FOO"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX ten"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX 0"),
	   "(error) ERR invalid expire time in 'set' command");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 PX -1"),
	   "(error) ERR invalid expire time in 'set' command");
	EQ(yh_cmd(&h, yh_ht(7), "SET a 5 EX 9223372036854775"),
	   "(error) ERR invalid expire time in 'set' command");
	/* The same option twice: the last one wins, as in Redis. */
	EQ(yh_cmd(&h, yh_ht(8), "SET a 6 EX 100 EX 10"), "OK");
	EQ(yh_read(&h, yh_ht(9), "TTL a"), "9");
	yh_close(&h);
}

TEST(set_expiry)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(10), "SET a v EX 15"), "OK");
	EQ(yh_read(&h, yh_ht(10), "TTL a"), "15");
	EQ(yh_read(&h, yh_ht(20), "PTTL a"), "5000");
	EQ(yh_read(&h, yh_ht(25), "GET a"), "\"v\"");
	EQ(yh_read(&h, yh_ht_ms(25001), "GET a"), "nil");
	EQ(yh_read(&h, yh_ht(26), "TTL a"), "-2");
	EQ(yh_cmd(&h, yh_ht(30), "SET b v PX 1500"), "OK");
	EQ(yh_read(&h, yh_ht_ms(31400), "PTTL b"), "100");
	EQ(yh_read(&h, yh_ht_ms(31600), "EXISTS b"), "0");
	/* EXAT / PXAT: absolute Unix times. */
	{
		char cmd[128];
		snprintf(cmd, sizeof cmd, "SET c v EXAT %llu",
			 (unsigned long long)(YH_BASE_US / 1000000 + 100));
		EQ(yh_cmd(&h, yh_ht(40), cmd), "OK");
		EQ(yh_read(&h, yh_ht(40), "TTL c"), "60");
		snprintf(cmd, sizeof cmd, "SET d v PXAT %llu",
			 (unsigned long long)(YH_BASE_US / 1000 + 40500));
		EQ(yh_cmd(&h, yh_ht(40), cmd), "OK");
		EQ(yh_read(&h, yh_ht(40), "PTTL d"), "500");
		/* In the past: the key is gone, the reply still OK. */
		snprintf(cmd, sizeof cmd, "SET c w PXAT %llu",
			 (unsigned long long)(YH_BASE_US / 1000 + 1000));
		EQ(yh_cmd(&h, yh_ht(41), cmd), "OK");
		EQ(yh_read(&h, yh_ht(41), "EXISTS c"), "0");
	}
	/* SET without options clears the TTL; KEEPTTL keeps it. */
	EQ(yh_cmd(&h, yh_ht(50), "SET e v EX 100"), "OK");
	EQ(yh_cmd(&h, yh_ht(60), "SET e w KEEPTTL"), "OK");
	EQ(yh_read(&h, yh_ht(60), "TTL e"), "90");
	EQ(yh_read(&h, yh_ht(60), "GET e"), "\"w\"");
	EQ(yh_cmd(&h, yh_ht(61), "SET e x"), "OK");
	EQ(yh_read(&h, yh_ht(61), "TTL e"), "-1");
	EQ(yh_read(&h, yh_ht(1000), "GET e"), "\"x\"");
	yh_close(&h);
}

TEST(setex_family)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(1), "SETEX a 10 v"), "OK");
	EQ(yh_read(&h, yh_ht(2), "TTL a"), "9");
	EQ(yh_cmd(&h, yh_ht(1), "SETEX a 0 v"),
	   "(error) ERR invalid expire time in 'setex' command");
	EQ(yh_cmd(&h, yh_ht(1), "SETEX a x v"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(1), "PSETEX b 2500 v"), "OK");
	EQ(yh_read(&h, yh_ht(2), "PTTL b"), "1500");
	EQ(yh_cmd(&h, yh_ht(1), "PSETEX b -5 v"),
	   "(error) ERR invalid expire time in 'psetex' command");
	EQ(yh_cmd(&h, yh_ht(3), "SETNX c 1"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "SETNX c 2"), "0");
	EQ(yh_read(&h, yh_ht(5), "GET c"), "\"1\"");
	EQ(yh_cmd(&h, yh_ht(6), "GETSET c 3"), "\"1\"");
	EQ(yh_cmd(&h, yh_ht(6), "GETSET d 3"), "nil");
	EQ(yh_read(&h, yh_ht(7), "GET d"), "\"3\"");
	EQ(yh_cmd(&h, yh_ht(8), "GETDEL d"), "\"3\"");
	EQ(yh_cmd(&h, yh_ht(9), "GETDEL d"), "nil");
	EQ(yh_read(&h, yh_ht(9), "EXISTS d"), "0");
	/* GETSET clears a TTL. */
	EQ(yh_cmd(&h, yh_ht(10), "SETEX e 100 v"), "OK");
	EQ(yh_cmd(&h, yh_ht(11), "GETSET e w"), "\"v\"");
	EQ(yh_read(&h, yh_ht(12), "TTL e"), "-1");
	yh_close(&h);
}

TEST(append_strlen_ranges)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(1), "APPEND a Hello"), "5");
	EQ(yh_cmd(&h, yh_ht(2), "APPEND a _World"), "11");
	EQ(yh_read(&h, yh_ht(3), "GET a"), "\"Hello_World\"");
	EQ(yh_read(&h, yh_ht(3), "STRLEN a"), "11");
	EQ(yh_read(&h, yh_ht(3), "STRLEN nope"), "0");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a 0 4"), "\"Hello\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a -5 -1"), "\"World\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a 0 -1"), "\"Hello_World\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a 5 3"), "\"\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a -1 -5"), "\"\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a 10 100"), "\"d\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a -100 2"), "\"Hel\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE nope 0 -1"), "\"\"");
	EQ(yh_read(&h, yh_ht(3), "GETRANGE a x 1"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(4), "SETRANGE a 6 Redis"), "11");
	EQ(yh_read(&h, yh_ht(5), "GET a"), "\"Hello_Redis\"");
	EQ(yh_cmd(&h, yh_ht(5), "SETRANGE b 3 x"), "4");
	EQ(yh_read(&h, yh_ht(6), "GET b"), "\"\\x00\\x00\\x00x\"");
	EQ(yh_cmd(&h, yh_ht(6), "SETRANGE c 3 \"\""), "0");
	EQ(yh_read(&h, yh_ht(6), "EXISTS c"), "0");
	EQ(yh_cmd(&h, yh_ht(6), "SETRANGE a 100 \"\""), "11");
	EQ(yh_cmd(&h, yh_ht(6), "SETRANGE a -1 x"), "(error) ERR offset is out of range");
	EQ(yh_cmd(&h, yh_ht(6), "SETRANGE a 4194304 x"),
	   "(error) ERR string exceeds maximum allowed size (proto-max-bulk-len)");
	EQ(yh_cmd(&h, yh_ht(6), "SETRANGE a 4194303 x"), "4194304");
	EQ(yh_read(&h, yh_ht(7), "STRLEN a"), "4194304");
	EQ(yh_cmd(&h, yh_ht(8), "APPEND a y"),
	   "(error) ERR string exceeds maximum allowed size (proto-max-bulk-len)");
	/* APPEND and SETRANGE keep the TTL. */
	EQ(yh_cmd(&h, yh_ht(10), "SETEX t 100 ab"), "OK");
	EQ(yh_cmd(&h, yh_ht(20), "APPEND t cd"), "4");
	EQ(yh_read(&h, yh_ht(20), "TTL t"), "90");
	EQ(yh_cmd(&h, yh_ht(30), "SETRANGE t 0 X"), "4");
	EQ(yh_read(&h, yh_ht(30), "TTL t"), "80");
	EQ(yh_read(&h, yh_ht(30), "GET t"), "\"Xbcd\"");
	EQ(yh_read(&h, yh_ht(111), "GET t"), "nil");
	yh_close(&h);
}

TEST(counters)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(1), "INCR n"), "1");
	EQ(yh_cmd(&h, yh_ht(2), "INCRBY n 41"), "42");
	EQ(yh_cmd(&h, yh_ht(3), "DECR n"), "41");
	EQ(yh_cmd(&h, yh_ht(4), "DECRBY n 50"), "-9");
	EQ(yh_read(&h, yh_ht(5), "GET n"), "\"-9\"");
	EQ(yh_cmd(&h, yh_ht(6), "INCRBY n x"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(6), "DECRBY n -9223372036854775808"),
	   "(error) ERR decrement would overflow");
	EQ(yh_cmd(&h, yh_ht(6), "SET s abc"), "OK");
	EQ(yh_cmd(&h, yh_ht(7), "INCR s"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(8), "SET m 9223372036854775807"), "OK");
	EQ(yh_cmd(&h, yh_ht(9), "INCR m"), "(error) ERR increment or decrement would overflow");
	EQ(yh_cmd(&h, yh_ht(9), "SET m -9223372036854775808"), "OK");
	EQ(yh_cmd(&h, yh_ht(10), "DECR m"), "(error) ERR increment or decrement would overflow");
	EQ(yh_cmd(&h, yh_ht(10), "SET z 007"), "OK");
	EQ(yh_cmd(&h, yh_ht(11), "INCR z"), "(error) ERR value is not an integer or out of range");
	/* INCR keeps the TTL. */
	EQ(yh_cmd(&h, yh_ht(20), "SET t 5 EX 100"), "OK");
	EQ(yh_cmd(&h, yh_ht(30), "INCR t"), "6");
	EQ(yh_read(&h, yh_ht(30), "TTL t"), "90");
	yh_close(&h);
}

TEST(incrbyfloat)
{
	yh_open(&h, "ystr");
	EQ(yh_cmd(&h, yh_ht(1), "INCRBYFLOAT f 10.5"), "\"10.5\"");
	EQ(yh_cmd(&h, yh_ht(2), "INCRBYFLOAT f 0.1"), "\"10.6\"");
	EQ(yh_cmd(&h, yh_ht(3), "INCRBYFLOAT f -5"), "\"5.6\"");
	EQ(yh_cmd(&h, yh_ht(4), "SET g 5.0e3"), "OK");
	EQ(yh_cmd(&h, yh_ht(5), "INCRBYFLOAT g 2.0e2"), "\"5200\"");
	EQ(yh_cmd(&h, yh_ht(6), "INCRBYFLOAT g x"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(6), "INCRBYFLOAT g nan"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(6), "INCRBYFLOAT g inf"),
	   "(error) ERR increment would produce NaN or Infinity");
	EQ(yh_cmd(&h, yh_ht(6), "SET s abc"), "OK");
	EQ(yh_cmd(&h, yh_ht(7), "INCRBYFLOAT s 1"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(8), "INCRBYFLOAT h -0.0"), "\"0\"");
	EQ(yh_cmd(&h, yh_ht(9), "INCRBYFLOAT i 3"), "\"3\"");
	yh_close(&h);
}

TEST(wrongtype)
{
	static const char *const cmds[] = {
		"GET h", "SET h x GET", "GETSET h x", "GETDEL h", "APPEND h x", "STRLEN h",
		"GETRANGE h 0 1", "SETRANGE h 0 x", "INCR h", "INCRBY h 1", "DECR h",
		"DECRBY h 1", "INCRBYFLOAT h 1",
	};
	yh_open(&h, "ystr");
	yh_hset(&h, yh_ht(1), "h", "f", "v");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		CHECK_EQ_STR(yh_cmd(&h, yh_ht(2), cmds[i]),
			     "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_read(&h, yh_ht(2), "TYPE h"), "hash");
	/* SET replaces whatever type was there (and its fields). */
	EQ(yh_cmd(&h, yh_ht(3), "SET h x NX"), "nil");
	EQ(yh_cmd(&h, yh_ht(3), "SET h x"), "OK");
	EQ(yh_read(&h, yh_ht(4), "TYPE h"), "string");
	EQ(yh_read(&h, yh_ht(4), "GET h"), "\"x\"");
	yh_close(&h);
}

TEST_MAIN(T(get_set), T(set_options), T(set_expiry), T(setex_family), T(append_strlen_ranges),
	  T(counters), T(incrbyfloat), T(wrongtype))
