/* List commands on a real store: replies and errors as Redis 7.0 gives
 * them (checked against redis-server 7.0.15), positions and the counter
 * in DocDB, the txn overlay, TTL and WRONGTYPE. */
#include "yharness.h"

#include <stdio.h>
#include <string.h>

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(push_range_index)
{
	yh_open(&h, "ylist");
	EQ(yh_cmd(&h, yh_ht(1), "LPUSH l a b c"), "3");
	EQ(yh_cmd(&h, yh_ht(2), "RPUSH l d e"), "5");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l 0 -1"), "[\"c\", \"b\", \"a\", \"d\", \"e\"]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l -2 100"), "[\"d\", \"e\"]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l -100 0"), "[\"c\"]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l 1 3"), "[\"b\", \"a\", \"d\"]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l 3 1"), "[]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l 5 9"), "[]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE nokey 0 -1"), "[]");
	EQ(yh_read(&h, yh_ht(3), "LRANGE l x 1"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l 0"), "\"c\"");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l 3"), "\"d\"");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l -1"), "\"e\"");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l -5"), "\"c\"");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l -6"), "nil");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l 5"), "nil");
	EQ(yh_read(&h, yh_ht(3), "LINDEX nokey 0"), "nil");
	EQ(yh_read(&h, yh_ht(3), "LINDEX l x"),
	   "(error) ERR value is not an integer or out of range");
	/* LINDEX looks the key up before its index: nil / WRONGTYPE first */
	EQ(yh_read(&h, yh_ht(3), "LINDEX nokey x"), "nil");
	EQ(yh_read(&h, yh_ht(3), "LLEN l"), "5");
	EQ(yh_read(&h, yh_ht(3), "LLEN nokey"), "0");
	EQ(yh_read(&h, yh_ht(3), "TYPE l"), "list");
	EQ(yh_cmd(&h, yh_ht(4), "LPUSHX nokey a"), "0");
	EQ(yh_read(&h, yh_ht(5), "EXISTS nokey"), "0");
	EQ(yh_cmd(&h, yh_ht(5), "RPUSHX l z y"), "7");
	EQ(yh_cmd(&h, yh_ht(6), "LPUSHX l x"), "8");
	EQ(yh_read(&h, yh_ht(7), "LRANGE l 0 -1"),
	   "[\"x\", \"c\", \"b\", \"a\", \"d\", \"e\", \"z\", \"y\"]");
	EQ(yh_cmd(&h, yh_ht(7), "LPUSH l"),
	   "(error) ERR wrong number of arguments for 'lpush' command");
	EQ(yh_cmd(&h, yh_ht(7), "LPUSHX l"),
	   "(error) ERR wrong number of arguments for 'lpushx' command");
	/* duplicates and empty elements are elements */
	EQ(yh_cmd(&h, yh_ht(8), "RPUSH d a a \"\""), "3");
	EQ(yh_read(&h, yh_ht(9), "LRANGE d 0 -1"), "[\"a\", \"a\", \"\"]");
	yh_close(&h);
}

TEST(pops_and_empty_deletion)
{
	yh_open(&h, "ylist");
	EQ(yh_cmd(&h, yh_ht(1), "RPUSH l a b c d e"), "5");
	EQ(yh_cmd(&h, yh_ht(2), "LPOP l"), "\"a\"");
	EQ(yh_cmd(&h, yh_ht(3), "RPOP l"), "\"e\"");
	EQ(yh_cmd(&h, yh_ht(4), "LPOP l 2"), "[\"b\", \"c\"]");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP l 0"), "[]");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP l -1"),
	   "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP l abc"),
	   "(error) ERR value is out of range, must be positive");
	EQ(yh_cmd(&h, yh_ht(5), "RPOP l 1 2"),
	   "(error) ERR wrong number of arguments for 'rpop' command");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP nokey"), "nil");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP nokey 1"), "nil");
	EQ(yh_cmd(&h, yh_ht(5), "LPOP nokey 0"), "nil");
	EQ(yh_read(&h, yh_ht(6), "LLEN l"), "1");
	EQ(yh_cmd(&h, yh_ht(6), "RPOP l 10"), "[\"d\"]");
	EQ(yh_read(&h, yh_ht(7), "EXISTS l"), "0");
	EQ(yh_read(&h, yh_ht(7), "LLEN l"), "0");
	/* a new list after the old emptied: positions restart, nothing old */
	EQ(yh_cmd(&h, yh_ht(8), "LPUSH l q"), "1");
	EQ(yh_read(&h, yh_ht(9), "LRANGE l 0 -1"), "[\"q\"]");
	/* pops from both ends meet in the middle */
	EQ(yh_cmd(&h, yh_ht(10), "RPUSH m 1 2 3 4"), "4");
	EQ(yh_cmd(&h, yh_ht(11), "LPUSH m 0"), "5");
	EQ(yh_cmd(&h, yh_ht(12), "RPOP m 3"), "[\"4\", \"3\", \"2\"]");
	EQ(yh_cmd(&h, yh_ht(13), "RPOP m 3"), "[\"1\", \"0\"]");
	EQ(yh_read(&h, yh_ht(14), "TYPE m"), "none");
	yh_close(&h);
}

TEST(wrongtype)
{
	static const char *const cmds[] = {
		"LPUSH s a", "RPUSH s a", "LPUSHX s a",   "RPUSHX s a", "LPOP s",
		"RPOP s 2",  "LLEN s",    "LRANGE s 0 1", "LINDEX s 0",
	};
	yh_open(&h, "ylist");
	EQ(yh_cmd(&h, yh_ht(1), "SET s v"), "OK");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		EQ(yh_cmd(&h, yh_ht(2), cmds[i]),
		   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_cmd(&h, yh_ht(3), "RPUSH l a"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "ZADD l 1 a"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_read(&h, yh_ht(4), "GET l"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	yh_close(&h);
}

TEST(ttl_on_key)
{
	yh_open(&h, "ylist");
	EQ(yh_cmd(&h, yh_ht(1), "RPUSH l a b"), "2");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE l 10"), "1");
	EQ(yh_cmd(&h, yh_ht(3), "LPUSH l c"), "3");
	EQ(yh_read(&h, yh_ht(4), "TTL l"), "8");
	EQ(yh_read(&h, yh_ht(12), "LRANGE l 0 -1"), "[\"c\", \"a\", \"b\"]");
	EQ(yh_read(&h, yh_ht_ms(12001), "LLEN l"), "0");
	EQ(yh_read(&h, yh_ht_ms(12001), "LINDEX l 0"), "nil");
	EQ(yh_cmd(&h, yh_ht(13), "RPUSH l z"), "1");
	EQ(yh_read(&h, yh_ht(14), "LRANGE l 0 -1"), "[\"z\"]");
	EQ(yh_read(&h, yh_ht(14), "TTL l"), "-1");
	yh_close(&h);
}

TEST(overlay)
{
	yh_open(&h, "ylist");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "LPUSH l a"), "1");
	EQ(yh_run(&h, "LPUSH l b"), "2");
	EQ(yh_run(&h, "LPUSH l c"), "3");
	EQ(yh_run(&h, "LPOP l"), "\"c\"");
	EQ(yh_run(&h, "LRANGE l 0 -1"), "[\"b\", \"a\"]");
	EQ(yh_run(&h, "RPUSH l z"), "3");
	EQ(yh_run(&h, "LLEN l"), "3");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "LRANGE l 0 -1"), "[\"b\", \"a\", \"z\"]");
	yh_begin(&h, yh_ht(3), true);
	EQ(yh_run(&h, "LPOP l 3"), "[\"b\", \"a\", \"z\"]");
	EQ(yh_run(&h, "EXISTS l"), "0");
	EQ(yh_run(&h, "RPUSH l n"), "1");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(4), "LRANGE l 0 -1"), "[\"n\"]");
	EQ(yh_read(&h, yh_ht(4), "LLEN l"), "1");
	yh_close(&h);
}

TEST(docdb_layout)
{
	/* positions: the first right push takes 0, left pushes go down,
	 * right pushes go up, contiguous; the head record '$' (NULL) and the
	 * counter '%' sort before every position */
	yh_open(&h, "ylist");
	yh_label_ht(&h, yh_ht(1), "T1");
	yh_label_ht(&h, yh_ht(2), "T2");
	EQ(yh_cmd(&h, yh_ht(1), "RPUSH l a b"), "2");
	EQ(yh_cmd(&h, yh_ht(2), "LPUSH l c"), "3");
	EQ(yh_dump(&h), "(0xb4a8, l), T1 -> [Redis-List-Type]\n"
			"(0xb4a8, l), NULL, T2 -> -1\n"
			"(0xb4a8, l), NULL, T1 -> 0\n"
			"(0xb4a8, l), Counter, T2 -> 3\n"
			"(0xb4a8, l), Counter, T1 -> 2\n"
			"(0xb4a8, l), idx(-1), T2 -> c\n"
			"(0xb4a8, l), idx(0), T1 -> a\n"
			"(0xb4a8, l), idx(1), T1 -> b\n");
	yh_close(&h);
}

TEST_MAIN(T(push_range_index), T(pops_and_empty_deletion), T(wrongtype), T(ttl_on_key), T(overlay),
	  T(docdb_layout))
