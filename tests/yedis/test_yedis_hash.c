/* Hash commands on a real store (src/yedis/cmd_hash.c): every command's
 * replies and errors as Redis 7.0 gives them (checked against
 * redis-server 7.0.15), WRONGTYPE, an emptied hash deleted, the key's TTL
 * over every field, a hash replaced by a string and back, the txn's
 * overlay, and seed 002's Redis table (T1..T7) through the commands. */
#include "yharness.h"

#include <stdio.h>
#include <string.h>

#include "yedis/yedis_int.h"

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

/* The raw RESP bytes of the last reply. */
static const char *raw(void)
{
	return buf_cstr(&h.reply);
}

TEST(set_get)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HSET h a 1 b 2"), "2");
	EQ(raw(), ":2\r\n");
	EQ(yh_cmd(&h, yh_ht(2), "HSET h a 3 c 4"), "1");
	EQ(yh_cmd(&h, yh_ht(2), "HSET h d 1 d 2"), "1"); /* a field given twice counts once */
	EQ(yh_cmd(&h, yh_ht(3), "HMSET h a 1"), "OK");
	EQ(raw(), "+OK\r\n");
	EQ(yh_cmd(&h, yh_ht(4), "HSETNX h a 5"), "0");
	EQ(yh_cmd(&h, yh_ht(4), "HSETNX h z 5"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "HSETNX new z 5"), "1");
	EQ(yh_read(&h, yh_ht(5), "HGET h a"), "\"1\"");
	EQ(raw(), "$1\r\n1\r\n");
	EQ(yh_read(&h, yh_ht(5), "HGET h d"), "\"2\"");
	EQ(yh_read(&h, yh_ht(5), "HGET h nope"), "nil");
	EQ(raw(), "$-1\r\n");
	EQ(yh_read(&h, yh_ht(5), "HGET nokey a"), "nil");
	EQ(yh_read(&h, yh_ht(5), "HMGET h a nope b"), "[\"1\", nil, \"2\"]");
	EQ(raw(), "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n");
	EQ(yh_read(&h, yh_ht(5), "HMGET nokey a"), "[nil]");
	EQ(yh_read(&h, yh_ht(5), "HGETALL h"),
	   "[\"a\", \"1\", \"b\", \"2\", \"c\", \"4\", \"d\", \"2\", \"z\", \"5\"]");
	EQ(yh_read(&h, yh_ht(5), "HGETALL nokey"), "[]");
	EQ(raw(), "*0\r\n");
	EQ(yh_read(&h, yh_ht(5), "HKEYS h"), "[\"a\", \"b\", \"c\", \"d\", \"z\"]");
	EQ(yh_read(&h, yh_ht(5), "HVALS h"), "[\"1\", \"2\", \"4\", \"2\", \"5\"]");
	EQ(yh_read(&h, yh_ht(5), "HKEYS nokey"), "[]");
	EQ(yh_read(&h, yh_ht(5), "HVALS nokey"), "[]");
	EQ(yh_read(&h, yh_ht(5), "HLEN h"), "5");
	EQ(yh_read(&h, yh_ht(5), "HLEN nokey"), "0");
	EQ(yh_read(&h, yh_ht(5), "HEXISTS h a"), "1");
	EQ(yh_read(&h, yh_ht(5), "HEXISTS h nope"), "0");
	EQ(yh_read(&h, yh_ht(5), "HEXISTS nokey a"), "0");
	EQ(yh_cmd(&h, yh_ht(6), "HSET h s abc"), "1");
	EQ(yh_read(&h, yh_ht(6), "HSTRLEN h s"), "3");
	EQ(yh_read(&h, yh_ht(6), "HSTRLEN h nope"), "0");
	EQ(yh_read(&h, yh_ht(6), "HSTRLEN nokey a"), "0");
	EQ(yh_read(&h, yh_ht(6), "TYPE h"), "hash");
	/* Empty fields and values, binary bytes. */
	EQ(yh_cmd(&h, yh_ht(7), "HSET e \"\" \"\""), "1");
	EQ(yh_read(&h, yh_ht(7), "HGETALL e"), "[\"\", \"\"]");
	{
		struct resp_arg a[4] = {{"HSET", 4}, {"b", 1}, {"f\0\xff", 3}, {"v\0\r\n", 4}};
		yh_begin(&h, yh_ht(8), true);
		EQ(yh_runv(&h, 4, a), "1");
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(8), "HGETALL b"), "[\"f\\x00\\xff\", \"v\\x00\\x0d\\x0a\"]");
	EQ(yh_read(&h, yh_ht(8), "HSTRLEN b f"), "0");
	yh_close(&h);
}

TEST(del_and_empty)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HSET h a 1 b 2 c 3"), "3");
	EQ(yh_cmd(&h, yh_ht(2), "HDEL h a nope a"), "1");
	EQ(raw(), ":1\r\n");
	EQ(yh_read(&h, yh_ht(2), "HGETALL h"), "[\"b\", \"2\", \"c\", \"3\"]");
	EQ(yh_cmd(&h, yh_ht(3), "HDEL nokey a"), "0");
	EQ(yh_cmd(&h, yh_ht(3), "HDEL h nope"), "0");
	/* The last field gone: the key is gone (a root tombstone). */
	EQ(yh_cmd(&h, yh_ht(4), "HDEL h b c"), "2");
	EQ(yh_read(&h, yh_ht(4), "EXISTS h"), "0");
	EQ(yh_read(&h, yh_ht(4), "TYPE h"), "none");
	EQ(yh_read(&h, yh_ht(4), "HLEN h"), "0");
	CHECK(strstr(yh_dump(&h), "Tombstone") != NULL);
	/* The key is free for any type now. */
	EQ(yh_cmd(&h, yh_ht(5), "SET h s"), "OK");
	EQ(yh_cmd(&h, yh_ht(6), "DEL h"), "1");
	EQ(yh_cmd(&h, yh_ht(7), "HSET h x 1"), "1");
	EQ(yh_read(&h, yh_ht(7), "HGETALL h"), "[\"x\", \"1\"]");
	yh_close(&h);
}

TEST(errors)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "SET str x"), "OK");
	static const char *const wrong[] = {
		"HSET str a b",   "HSETNX str a b", "HGET str a",        "HMSET str a b",
		"HMGET str a",    "HGETALL str",    "HDEL str a",        "HEXISTS str a",
		"HLEN str",       "HKEYS str",      "HVALS str",         "HINCRBY str a 1",
		"HSTRLEN str a",  "HINCRBYFLOAT str a 1",
	};
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
		yh_begin(&h, yh_ht(2), true);
		EQ(yh_run(&h, wrong[i]),
		   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
		EQ(raw(), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
		yh_commit(&h);
		CHECK_EQ_INT(h.last_batch.len, 0);
	}
	EQ(yh_read(&h, yh_ht(2), "GET str"), "\"x\"");
	EQ(yh_cmd(&h, yh_ht(3), "HSET h a 1 b"),
	   "(error) ERR wrong number of arguments for 'hset' command");
	EQ(yh_cmd(&h, yh_ht(3), "HMSET h a"),
	   "(error) ERR wrong number of arguments for 'hmset' command");
	EQ(yh_cmd(&h, yh_ht(3), "HMSET h a 1 b"),
	   "(error) ERR wrong number of arguments for 'hmset' command");
	EQ(yh_cmd(&h, yh_ht(3), "HSET h"), "(error) ERR wrong number of arguments for 'hset' command");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h x 1 2"),
	   "(error) ERR wrong number of arguments for 'hincrby' command");
	EQ(yh_read(&h, yh_ht(3), "HGET h"), "(error) ERR wrong number of arguments for 'hget' command");
	EQ(yh_read(&h, yh_ht(3), "HMGET h"),
	   "(error) ERR wrong number of arguments for 'hmget' command");
	EQ(yh_read(&h, yh_ht(3), "HGETALL h x"),
	   "(error) ERR wrong number of arguments for 'hgetall' command");
	EQ(yh_cmd(&h, yh_ht(3), "HDEL h"), "(error) ERR wrong number of arguments for 'hdel' command");
	EQ(yh_read(&h, yh_ht(3), "EXISTS h"), "0");
	EQ(yh_read(&h, yh_ht(3), "HSET h a 1"),
	   "(error) ERR docraft: 'hset' writes, but runs in a read-only transaction");
	/* A field longer than a DocDB key allows. */
	{
		static char big[YEDIS_MAX_KEY + 1];
		memset(big, 'f', sizeof big);
		struct resp_arg a[4] = {{"HSET", 4}, {"h", 1}, {big, sizeof big}, {"v", 1}};
		yh_begin(&h, yh_ht(4), true);
		EQ(yh_runv(&h, 4, a), "(error) " YERR_TOO_LONG);
		a[0] = (struct resp_arg){"HSETNX", 6};
		EQ(yh_runv(&h, 4, a), "(error) " YERR_TOO_LONG);
		a[0] = (struct resp_arg){"HINCRBY", 7};
		a[3] = (struct resp_arg){"1", 1};
		EQ(yh_runv(&h, 4, a), "(error) " YERR_TOO_LONG);
		a[2].n = YEDIS_MAX_KEY;
		EQ(yh_runv(&h, 4, a), "1");
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(5), "HLEN h"), "1");
	yh_close(&h);
}

TEST(incrby)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HINCRBY h n 5"), "5");
	EQ(raw(), ":5\r\n");
	EQ(yh_cmd(&h, yh_ht(2), "HINCRBY h n -7"), "-2");
	EQ(yh_read(&h, yh_ht(2), "HGET h n"), "\"-2\"");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h n x"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h n +1"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h n 01"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h n -0"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBY h big 9223372036854775807"), "9223372036854775807");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBY h big 1"), "(error) ERR increment or decrement would overflow");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBY h small -9223372036854775808"), "-9223372036854775808");
	EQ(yh_cmd(&h, yh_ht(5), "HINCRBY h small -1"),
	   "(error) ERR increment or decrement would overflow");
	EQ(yh_cmd(&h, yh_ht(5), "HSET h s abc f 1.5"), "2");
	EQ(yh_cmd(&h, yh_ht(6), "HINCRBY h s 1"), "(error) ERR hash value is not an integer");
	EQ(yh_cmd(&h, yh_ht(6), "HINCRBY h f 1"), "(error) ERR hash value is not an integer");
	EQ(yh_read(&h, yh_ht(6), "HGET h s"), "\"abc\"");
	/* The increment is checked before the key's type. */
	EQ(yh_cmd(&h, yh_ht(6), "SET str x"), "OK");
	EQ(yh_cmd(&h, yh_ht(7), "HINCRBY str a x"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(7), "HINCRBYFLOAT str a x"), "(error) ERR value is not a valid float");
	yh_close(&h);
}

TEST(incrbyfloat)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HINCRBYFLOAT h f 1.5"), "\"1.5\"");
	EQ(raw(), "$3\r\n1.5\r\n");
	EQ(yh_cmd(&h, yh_ht(2), "HINCRBYFLOAT h f abc"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(2), "HINCRBYFLOAT h f nan"), "(error) ERR value is not a valid float");
	EQ(yh_cmd(&h, yh_ht(2), "HINCRBYFLOAT h f inf"), "(error) ERR value is NaN or Infinity");
	EQ(yh_cmd(&h, yh_ht(2), "HINCRBYFLOAT h f infinity"), "(error) ERR value is NaN or Infinity");
	EQ(yh_cmd(&h, yh_ht(3), "HINCRBYFLOAT h f3 3.0e3"), "\"3000\"");
	/* Redis's long double arithmetic and "%.17Lf". */
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h f3 0.1"), "\"3000.10000000000000009\"");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h g -0.0"), "\"0\"");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h g2 5.0e-20"), "\"0\"");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h g3 0x10"), "\"16\"");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h g4 +1"), "\"1\"");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBYFLOAT h g5 1e-400"), "\"0\"");
	EQ(yh_cmd(&h, yh_ht(5), "HINCRBYFLOAT h big 1e308"),
	   "\"9999999999999999999668587965584564566056009984741556720779704799492173486883806187210"
	   "012692188853932044674722505401322315213474959396058359742081443019641876795910001960319"
	   "077866310960450710666793915339578893891456054356306126836490161863021708658925344488162"
	   "3791300855757318142424510452728255046343928578048\"");
	EQ(yh_cmd(&h, yh_ht(6), "HINCRBYFLOAT h big 1e308"),
	   "\"1999999999999999999933717593116912913211201996948311344155940959898434697376761237442"
	   "002538437770786408934944501080264463042694991879211671948416288603928375359182000392063"
	   "815573262192090142133358783067915778778291210871261225367298032372604341731785068897632"
	   "47582601711514636284849020905456510092687857156096\"");
	EQ(yh_cmd(&h, yh_ht(7), "HSET h i 7 s abc"), "2");
	EQ(yh_cmd(&h, yh_ht(8), "HINCRBYFLOAT h i 0.5"), "\"7.5\"");
	EQ(yh_cmd(&h, yh_ht(8), "HINCRBYFLOAT h s 1"), "(error) ERR hash value is not a float");
	EQ(yh_read(&h, yh_ht(8), "HGET h i"), "\"7.5\"");
	EQ(yh_cmd(&h, yh_ht(9), "HSET h huge 1e4932"), "1");
	EQ(yh_cmd(&h, yh_ht(10), "HINCRBYFLOAT h huge 1e4932"),
	   "(error) ERR increment would produce NaN or Infinity");
	yh_close(&h);
}

/* EXPIRE on a hash covers every field, old and new; HSET keeps the TTL. */
TEST(ttl_covers_fields)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HSET h a 1"), "1");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE h 10"), "1");
	EQ(yh_cmd(&h, yh_ht(3), "HSET h b 2"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "HINCRBY h n 1"), "1");
	EQ(yh_read(&h, yh_ht(5), "TTL h"), "7");
	EQ(yh_read(&h, yh_ht(11), "HGETALL h"), "[\"a\", \"1\", \"b\", \"2\", \"n\", \"1\"]");
	EQ(yh_read(&h, yh_ht_ms(12000), "HLEN h"), "3");
	EQ(yh_read(&h, yh_ht_ms(12001), "HGET h a"), "nil");
	EQ(yh_read(&h, yh_ht_ms(12001), "HGET h b"), "nil");
	EQ(yh_read(&h, yh_ht_ms(12001), "HLEN h"), "0");
	EQ(yh_read(&h, yh_ht_ms(12001), "HGETALL h"), "[]");
	EQ(yh_read(&h, yh_ht_ms(12001), "EXISTS h"), "0");
	/* A new hash after expiry: a new root, no old field, no TTL. */
	EQ(yh_cmd(&h, yh_ht(13), "HSETNX h b 3"), "1");
	EQ(yh_read(&h, yh_ht(14), "HGETALL h"), "[\"b\", \"3\"]");
	EQ(yh_read(&h, yh_ht(14), "TTL h"), "-1");
	/* PERSIST keeps the fields. */
	EQ(yh_cmd(&h, yh_ht(15), "EXPIRE h 5"), "1");
	EQ(yh_cmd(&h, yh_ht(16), "PERSIST h"), "1");
	EQ(yh_read(&h, yh_ht(100), "HGETALL h"), "[\"b\", \"3\"]");
	yh_close(&h);
}

/* SET replaces a hash whole; a hash written after DEL starts empty. */
TEST(replaced_by_string_and_back)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HSET k a 1 b 2"), "2");
	EQ(yh_cmd(&h, yh_ht(2), "SET k x"), "OK");
	EQ(yh_read(&h, yh_ht(2), "GET k"), "\"x\"");
	EQ(yh_read(&h, yh_ht(2), "TYPE k"), "string");
	EQ(yh_read(&h, yh_ht(2), "HGET k a"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_cmd(&h, yh_ht(3), "HSET k c 3"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_cmd(&h, yh_ht(4), "DEL k"), "1");
	EQ(yh_cmd(&h, yh_ht(5), "HSET k c 3"), "1");
	EQ(yh_read(&h, yh_ht(5), "HGETALL k"), "[\"c\", \"3\"]");
	EQ(yh_read(&h, yh_ht(5), "GET k"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	/* Reads in the past still see each version. */
	EQ(yh_read(&h, yh_ht(1), "HGETALL k"), "[\"a\", \"1\", \"b\", \"2\"]");
	EQ(yh_read(&h, yh_ht(3), "GET k"), "\"x\"");
	/* SET with a TTL over a hash, then a hash again after it expires. */
	EQ(yh_cmd(&h, yh_ht(6), "SET k y EX 2"), "OK");
	EQ(yh_cmd(&h, yh_ht(9), "HSET k d 4"), "1");
	EQ(yh_read(&h, yh_ht(9), "HGETALL k"), "[\"d\", \"4\"]");
	EQ(yh_read(&h, yh_ht(9), "TTL k"), "-1");
	yh_close(&h);
}

/* Several commands in one txn (one Raft entry, one MULTI): each sees the
 * writes of the ones before it. */
TEST(overlay)
{
	yh_open(&h, "yhash");
	EQ(yh_cmd(&h, yh_ht(1), "HSET h old 1"), "1");
	yh_begin(&h, yh_ht(2), true);
	EQ(yh_run(&h, "HSET h n 5"), "1");
	EQ(yh_run(&h, "HINCRBY h n 3"), "8");
	EQ(yh_run(&h, "HINCRBYFLOAT h n 0.5"), "\"8.5\"");
	EQ(yh_run(&h, "HGET h n"), "\"8.5\"");
	EQ(yh_run(&h, "HLEN h"), "2");
	EQ(yh_run(&h, "HDEL h old n"), "2");
	EQ(yh_run(&h, "EXISTS h"), "0");
	EQ(yh_run(&h, "HGETALL h"), "[]");
	EQ(yh_run(&h, "HSETNX h m 1"), "1");
	EQ(yh_run(&h, "HSET h m 2 p 3"), "1");
	EQ(yh_run(&h, "DEL h"), "1");
	EQ(yh_run(&h, "HSET h q 4"), "1");
	EQ(yh_run(&h, "HGETALL h"), "[\"q\", \"4\"]");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "HGETALL h"), "[\"q\", \"4\"]");
	EQ(yh_read(&h, yh_ht(1), "HGETALL h"), "[\"old\", \"1\"]");
	yh_close(&h);
}

/* Whether the store holds a pair whose key is prefix + a DocHT (no other
 * subkey) and whose value is val. */
static bool has_pair(const char *prefix, size_t plen, const char *val, size_t vlen)
{
	struct store_iter *it = store_iter_new(h.s, NULL, 0, NULL, 0);
	bool found = false;
	for (store_iter_seek_first(it); !found && store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		found = kl > plen && memcmp(k, prefix, plen) == 0 &&
			vl == vlen && memcmp(v, val, vlen) == 0;
	}
	CHECK_OK_MSG(store_iter_status(it, h.errmsg), h.errmsg);
	store_iter_free(it);
	return found;
}

/* Seed 002's Redis example (T1..T7) through the commands: the store
 * listing is the seed's sorted view. The hash is the key's slot * 4
 * (key1: slot 9189, key2: 4998, key3: 935); groups come in hash order and
 * key3's members in byte order (the seed lists value6 first). */
TEST(seed_002)
{
	yh_open(&h, "yhash");
	for (int i = 1; i <= 7; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		yh_label_ht(&h, yh_ht(i), l);
	}
	EQ(yh_cmd(&h, yh_ht(1), "SET key1 value1 EX 15"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "HSET key2 subkey1 value1"), "1");
	EQ(yh_cmd(&h, yh_ht(3), "HSET key2 subkey2 value2"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "DEL key2"), "1");
	EQ(yh_cmd(&h, yh_ht(5), "HMSET key2 subkey1 new_val1 subkey3 value3"), "OK");
	EQ(yh_cmd(&h, yh_ht(6), "SADD key3 value4 value5"), "2");
	EQ(yh_cmd(&h, yh_ht(7), "SADD key3 value6"), "1");
	EQ(yh_dump(&h), "(0x0e9c, key3), T6 -> [Redis-Set-Type]\n"
			"(0x0e9c, key3), value4, T6 -> [NULL]\n"
			"(0x0e9c, key3), value5, T6 -> [NULL]\n"
			"(0x0e9c, key3), value6, T7 -> [NULL]\n"
			"(0x4e18, key2), T5 -> [Redis-Hash-Type]\n"
			"(0x4e18, key2), T4 -> Tombstone\n"
			"(0x4e18, key2), T2 -> [Redis-Hash-Type]\n"
			"(0x4e18, key2), subkey1, T5 -> new_val1\n"
			"(0x4e18, key2), subkey1, T2 -> value1\n"
			"(0x4e18, key2), subkey2, T3 -> value2\n"
			"(0x4e18, key2), subkey3, T5 -> value3\n"
			"(0x8f94, key1), T1 -> 15, value1\n");
	/* The bytes (docs/redis.md "Hashes and sets in DocDB"). */
	{
		struct buf k = BUF_INIT;
		yedis_dockey(&k, "key2", 4);
		CHECK_EQ_MEM(k.data, k.len, "G\x4e\x18Skey2\x00\x00!!", 12);
		buf_free(&k);
	}
	CHECK(has_pair("G\x4e\x18Skey2\x00\x00!!#", 13, "{", 1));
	CHECK(has_pair("G\x4e\x18Skey2\x00\x00!!#", 13, "X", 1));
	CHECK(has_pair("G\x4e\x18Skey2\x00\x00!!Ssubkey1\x00\x00#", 23, "Snew_val1", 9));
	CHECK(has_pair("G\x0e\x9cSkey3\x00\x00!!#", 13, "(", 1));
	CHECK(has_pair("G\x0e\x9cSkey3\x00\x00!!Svalue4\x00\x00#", 22, "$", 1));
	EQ(yh_read(&h, yh_ht(3), "HGETALL key2"),
	   "[\"subkey1\", \"value1\", \"subkey2\", \"value2\"]");
	EQ(yh_read(&h, yh_ht(4), "HGETALL key2"), "[]");
	EQ(yh_read(&h, yh_ht(7), "HGETALL key2"),
	   "[\"subkey1\", \"new_val1\", \"subkey3\", \"value3\"]");
	EQ(yh_read(&h, yh_ht(7), "SMEMBERS key3"), "[\"value4\", \"value5\", \"value6\"]");
	EQ(yh_read(&h, yh_ht(6), "SMEMBERS key3"), "[\"value4\", \"value5\"]");
	EQ(yh_read(&h, yh_ht(16), "GET key1"), "\"value1\"");
	EQ(yh_read(&h, yh_ht_ms(16001), "GET key1"), "nil");
	yh_close(&h);
}

TEST_MAIN(T(set_get), T(del_and_empty), T(errors), T(incrby), T(incrbyfloat),
	  T(ttl_covers_fields), T(replaced_by_string_and_back), T(overlay), T(seed_002))
