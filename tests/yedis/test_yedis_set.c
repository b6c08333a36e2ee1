/* Set commands on a real store (src/yedis/cmd_set.c): every command's
 * replies and errors as Redis 7.0 gives them (checked against
 * redis-server 7.0.15), WRONGTYPE, an emptied set deleted, SPOP and
 * SRANDMEMBER (deterministic per txn seed, uniform enough), the key's TTL
 * over every member, a set replaced by a string and back, the overlay. */
#include "yharness.h"

#include <stdio.h>
#include <string.h>

#include "yedis/yedis_int.h"

#define EQ(got, want) CHECK_EQ_STR(got, want)
#define WRONGTYPE "(error) WRONGTYPE Operation against a key holding the wrong kind of value"

static struct yh h;

static const char *raw(void)
{
	return buf_cstr(&h.reply);
}

TEST(add_rem_members)
{
	yh_open(&h, "yset");
	EQ(yh_cmd(&h, yh_ht(1), "SADD s a b a c"), "3");
	EQ(raw(), ":3\r\n");
	EQ(yh_cmd(&h, yh_ht(2), "SADD s a"), "0");
	EQ(yh_read(&h, yh_ht(2), "TYPE s"), "set");
	EQ(yh_read(&h, yh_ht(2), "SMEMBERS s"), "[\"a\", \"b\", \"c\"]");
	EQ(raw(), "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
	EQ(yh_cmd(&h, yh_ht(3), "SREM s a z a"), "1");
	EQ(yh_read(&h, yh_ht(3), "SMEMBERS s"), "[\"b\", \"c\"]");
	EQ(yh_read(&h, yh_ht(3), "SMEMBERS nokey"), "[]");
	EQ(raw(), "*0\r\n");
	EQ(yh_read(&h, yh_ht(3), "SISMEMBER s b"), "1");
	EQ(yh_read(&h, yh_ht(3), "SISMEMBER s a"), "0");
	EQ(yh_read(&h, yh_ht(3), "SISMEMBER nokey a"), "0");
	EQ(yh_read(&h, yh_ht(3), "SMISMEMBER s a b"), "[0, 1]");
	EQ(raw(), "*2\r\n:0\r\n:1\r\n");
	EQ(yh_read(&h, yh_ht(3), "SMISMEMBER nokey a"), "[0]");
	EQ(yh_read(&h, yh_ht(3), "SCARD s"), "2");
	EQ(yh_read(&h, yh_ht(3), "SCARD nokey"), "0");
	EQ(yh_cmd(&h, yh_ht(3), "SREM nokey a"), "0");
	/* The empty member, binary members. */
	EQ(yh_cmd(&h, yh_ht(4), "SADD e \"\""), "1");
	EQ(yh_read(&h, yh_ht(4), "SMEMBERS e"), "[\"\"]");
	{
		struct resp_arg a[3] = {{"SADD", 4}, {"b", 1}, {"m\0\xff", 3}};
		yh_begin(&h, yh_ht(5), true);
		EQ(yh_runv(&h, 3, a), "1");
		a[0] = (struct resp_arg){"SISMEMBER", 9};
		EQ(yh_runv(&h, 3, a), "1");
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(5), "SMEMBERS b"), "[\"m\\x00\\xff\"]");
	/* The last member gone: the key is gone. */
	EQ(yh_cmd(&h, yh_ht(6), "SREM s b c"), "2");
	EQ(yh_read(&h, yh_ht(6), "EXISTS s"), "0");
	EQ(yh_read(&h, yh_ht(6), "TYPE s"), "none");
	EQ(yh_cmd(&h, yh_ht(7), "SET s now-a-string"), "OK");
	EQ(yh_read(&h, yh_ht(7), "GET s"), "\"now-a-string\"");
	yh_close(&h);
}

TEST(errors)
{
	yh_open(&h, "yset");
	EQ(yh_cmd(&h, yh_ht(1), "SET str x"), "OK");
	static const char *const wrong[] = {
		"SADD str a",      "SREM str a",      "SMEMBERS str",      "SISMEMBER str a",
		"SMISMEMBER str a", "SCARD str",      "SPOP str",          "SPOP str 0",
		"SPOP str 2",      "SRANDMEMBER str", "SRANDMEMBER str 0", "SRANDMEMBER str -2",
	};
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
		yh_begin(&h, yh_ht(2), true);
		EQ(yh_run(&h, wrong[i]), WRONGTYPE);
		yh_commit(&h);
		CHECK_EQ_INT(h.last_batch.len, 0);
	}
	EQ(yh_cmd(&h, yh_ht(3), "SADD s"), "(error) ERR wrong number of arguments for 'sadd' command");
	EQ(yh_read(&h, yh_ht(3), "SMISMEMBER s"),
	   "(error) ERR wrong number of arguments for 'smismember' command");
	EQ(yh_read(&h, yh_ht(3), "SISMEMBER s a b"),
	   "(error) ERR wrong number of arguments for 'sismember' command");
	EQ(yh_read(&h, yh_ht(3), "SCARD"), "(error) ERR wrong number of arguments for 'scard' command");
	EQ(yh_cmd(&h, yh_ht(3), "SPOP"), "(error) ERR wrong number of arguments for 'spop' command");
	EQ(yh_cmd(&h, yh_ht(3), "SADD s a b c"), "3");
	/* Counts: SPOP's checked before the key, then the type. */
	EQ(yh_cmd(&h, yh_ht(4), "SPOP nokey -1"), "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(4), "SPOP s x"), "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(4), "SPOP str -1"), "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(4), "SPOP s 1 2"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(4), "SRANDMEMBER s x"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_read(&h, yh_ht(4), "SRANDMEMBER nokey x"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_read(&h, yh_ht(4), "SRANDMEMBER s -9223372036854775808"),
	   "(error) ERR value is out of range, value must between -9223372036854775807 and "
	   "9223372036854775807");
	EQ(yh_read(&h, yh_ht(4), "SRANDMEMBER s 1 2"), "(error) ERR syntax error");
	/* docraft's bound on a reply with repetition (Redis's never ends). */
	EQ(yh_read(&h, yh_ht(4), "SRANDMEMBER s -9223372036854775807"),
	   "(error) ERR value is out of range, with repetition (a negative count) at most "
	   "1048576 members");
	EQ(yh_read(&h, yh_ht(4), "SCARD s"), "3");
	{
		static char big[YEDIS_MAX_KEY + 1];
		memset(big, 'm', sizeof big);
		struct resp_arg a[4] = {{"SADD", 4}, {"s", 1}, {"ok", 2}, {big, sizeof big}};
		yh_begin(&h, yh_ht(5), true);
		EQ(yh_runv(&h, 4, a), "(error) " YERR_TOO_LONG);
		a[3].n = YEDIS_MAX_KEY;
		EQ(yh_runv(&h, 4, a), "2");
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(5), "SCARD s"), "5");
	yh_close(&h);
}

TEST(spop)
{
	yh_open(&h, "yset");
	EQ(yh_cmd(&h, yh_ht(1), "SPOP nokey"), "nil");
	EQ(raw(), "$-1\r\n");
	EQ(yh_cmd(&h, yh_ht(1), "SPOP nokey 2"), "[]");
	EQ(raw(), "*0\r\n");
	EQ(yh_cmd(&h, yh_ht(1), "SADD s a b c d e"), "5");
	EQ(yh_cmd(&h, yh_ht(2), "SPOP s 0"), "[]");
	CHECK_EQ_INT(h.last_batch.len, 0);
	/* One member: a bulk, gone from the set. */
	const char *r = yh_cmd(&h, yh_ht(3), "SPOP s");
	char popped[8];
	CHECK(strlen(r) == 3 && r[0] == '"' && r[1] >= 'a' && r[1] <= 'e');
	snprintf(popped, sizeof popped, "%c", r[1]);
	EQ(yh_read(&h, yh_ht(3), "SCARD s"), "4");
	{
		char cmd[32];
		snprintf(cmd, sizeof cmd, "SISMEMBER s %s", popped);
		EQ(yh_read(&h, yh_ht(3), cmd), "0");
	}
	/* Two members: an array of two distinct ones. */
	r = yh_cmd(&h, yh_ht(4), "SPOP s 2");
	CHECK_MSG(strlen(r) == 10 && r[2] != r[7], "%s", r);
	EQ(yh_read(&h, yh_ht(4), "SCARD s"), "2");
	/* More than there are: all of them, and the key is gone. */
	r = yh_cmd(&h, yh_ht(5), "SPOP s 5");
	CHECK_MSG(strlen(r) == 10, "%s", r);
	EQ(yh_read(&h, yh_ht(5), "EXISTS s"), "0");
	EQ(yh_cmd(&h, yh_ht(6), "SADD t x"), "1");
	EQ(yh_cmd(&h, yh_ht(7), "SPOP t"), "\"x\"");
	EQ(yh_read(&h, yh_ht(7), "EXISTS t"), "0");
	yh_close(&h);
}

/* Same store, hybrid time, seed and commands: the same reply and batch,
 * so every replica pops the same members; another seed, another draw. */
static void spop_with_seed(uint64_t seed, struct buf *reply, struct buf *batch)
{
	h.next_index = seed;
	yh_begin(&h, yh_ht(2), true);
	buf_reset(reply);
	buf_printf(reply, "%s", yh_run(&h, "SPOP s 3"));
	buf_reset(batch);
	buf_append(batch, h.b.data.data, h.b.data.len);
	yedis_txn_free(h.t); /* not applied: the next draw reads the same set */
	h.t = NULL;
}

TEST(spop_deterministic)
{
	struct buf r1 = BUF_INIT, b1 = BUF_INIT, r2 = BUF_INIT, b2 = BUF_INIT;
	yh_open(&h, "yset");
	EQ(yh_cmd(&h, yh_ht(1), "SADD s a b c d e f g h i j"), "10");
	spop_with_seed(1000, &r1, &b1);
	spop_with_seed(1000, &r2, &b2);
	EQ(buf_cstr(&r1), buf_cstr(&r2));
	CHECK_EQ_MEM(b1.data, b1.len, b2.data, b2.len);
	spop_with_seed(1002, &r2, &b2);
	CHECK_MSG(strcmp(buf_cstr(&r1), buf_cstr(&r2)) != 0, "seeds 1000 and 1002 both drew %s",
		  buf_cstr(&r1));
	EQ(yh_read(&h, yh_ht(2), "SCARD s"), "10");
	buf_free(&r1);
	buf_free(&b1);
	buf_free(&r2);
	buf_free(&b2);
	yh_close(&h);
}

TEST(srandmember)
{
	yh_open(&h, "yset");
	EQ(yh_read(&h, yh_ht(1), "SRANDMEMBER nokey"), "nil");
	EQ(yh_read(&h, yh_ht(1), "SRANDMEMBER nokey 3"), "[]");
	EQ(yh_read(&h, yh_ht(1), "SRANDMEMBER nokey -3"), "[]");
	EQ(yh_cmd(&h, yh_ht(1), "SADD s a b c"), "3");
	EQ(yh_read(&h, yh_ht(2), "SRANDMEMBER s 0"), "[]");
	EQ(yh_read(&h, yh_ht(2), "SRANDMEMBER s 5"), "[\"a\", \"b\", \"c\"]");
	const char *r = yh_read(&h, yh_ht(2), "SRANDMEMBER s");
	CHECK(strlen(r) == 3 && r[1] >= 'a' && r[1] <= 'c');
	r = yh_read(&h, yh_ht(2), "SRANDMEMBER s 2");
	CHECK_MSG(strlen(r) == 10 && r[2] != r[7], "%s", r);
	r = yh_read(&h, yh_ht(2), "SRANDMEMBER s -5");
	CHECK_MSG(strncmp(raw(), "*5\r\n", 4) == 0, "%s", r);
	EQ(yh_read(&h, yh_ht(2), "SCARD s"), "3"); /* nothing removed */
	/* Negative counts repeat: over 3000 draws every member comes, each
	 * about a third of the time (a loose bound: a broken draw fails it). */
	yh_begin(&h, yh_ht(3), false);
	yh_run(&h, "SRANDMEMBER s -3000");
	int seen[3] = {0};
	for (const char *p = raw(); (p = strstr(p, "\r\n$1\r\n")) != NULL; p += 6)
		seen[p[6] - 'a']++;
	yh_commit(&h);
	for (int i = 0; i < 3; i++)
		CHECK_MSG(seen[i] > 800 && seen[i] < 1200, "member %c drawn %d times of 3000",
			  'a' + i, seen[i]);
	yh_close(&h);
}

/* SPOP draws uniformly: over 600 pops of one member from {a,b,c}, each
 * comes about 200 times. */
TEST(spop_uniform)
{
	int seen[3] = {0};
	yh_open(&h, "yset");
	for (int i = 0; i < 600; i++) {
		yh_begin(&h, yh_ht(1 + 2 * i), true);
		EQ(yh_run(&h, "SADD s a b c"), i == 0 ? "3" : "1");
		yh_commit(&h);
		const char *r = yh_cmd(&h, yh_ht(2 + 2 * i), "SPOP s");
		CHECK(strlen(r) == 3 && r[1] >= 'a' && r[1] <= 'c');
		seen[r[1] - 'a']++;
	}
	for (int i = 0; i < 3; i++)
		CHECK_MSG(seen[i] > 130 && seen[i] < 270, "member %c popped %d times of 600", 'a' + i,
			  seen[i]);
	yh_close(&h);
}

TEST(ttl_and_types)
{
	yh_open(&h, "yset");
	EQ(yh_cmd(&h, yh_ht(1), "SADD s a"), "1");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE s 10"), "1");
	EQ(yh_cmd(&h, yh_ht(3), "SADD s b"), "1");
	EQ(yh_read(&h, yh_ht(3), "TTL s"), "9");
	EQ(yh_read(&h, yh_ht(12), "SMEMBERS s"), "[\"a\", \"b\"]");
	EQ(yh_read(&h, yh_ht_ms(12001), "SMEMBERS s"), "[]");
	EQ(yh_read(&h, yh_ht_ms(12001), "SISMEMBER s b"), "0");
	EQ(yh_read(&h, yh_ht_ms(12001), "SCARD s"), "0");
	EQ(yh_cmd(&h, yh_ht(13), "SPOP s"), "nil");
	EQ(yh_cmd(&h, yh_ht(13), "SADD s c"), "1");
	EQ(yh_read(&h, yh_ht(13), "SMEMBERS s"), "[\"c\"]");
	EQ(yh_read(&h, yh_ht(13), "TTL s"), "-1");
	/* A set replaced by a string, a hash, and a set again. */
	EQ(yh_cmd(&h, yh_ht(14), "SET s x"), "OK");
	EQ(yh_cmd(&h, yh_ht(15), "SADD s d"), WRONGTYPE);
	EQ(yh_cmd(&h, yh_ht(15), "DEL s"), "1");
	EQ(yh_cmd(&h, yh_ht(16), "HSET s f v"), "1");
	EQ(yh_read(&h, yh_ht(16), "SCARD s"), WRONGTYPE);
	EQ(yh_cmd(&h, yh_ht(17), "HDEL s f"), "1");
	EQ(yh_cmd(&h, yh_ht(18), "SADD s d"), "1");
	EQ(yh_read(&h, yh_ht(18), "SMEMBERS s"), "[\"d\"]");
	EQ(yh_read(&h, yh_ht(18), "TYPE s"), "set");
	yh_close(&h);
}

TEST(overlay)
{
	yh_open(&h, "yset");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "SADD s a b"), "2");
	EQ(yh_run(&h, "SADD s b c"), "1");
	EQ(yh_run(&h, "SCARD s"), "3");
	EQ(yh_run(&h, "SREM s a b"), "2");
	EQ(yh_run(&h, "SMEMBERS s"), "[\"c\"]");
	EQ(yh_run(&h, "SPOP s"), "\"c\"");
	EQ(yh_run(&h, "EXISTS s"), "0");
	EQ(yh_run(&h, "SADD s d"), "1");
	EQ(yh_run(&h, "SISMEMBER s c"), "0");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(1), "SMEMBERS s"), "[\"d\"]");
	yh_close(&h);
}

TEST_MAIN(T(add_rem_members), T(errors), T(spop), T(spop_deterministic), T(srandmember),
	  T(spop_uniform), T(ttl_and_types), T(overlay))
