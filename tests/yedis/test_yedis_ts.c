/* YugabyteDB's time series commands on a real store: the reply shapes of
 * YugabyteDB's docs (TSADD / TSREM +OK, ranges as flat timestamp, value
 * arrays), bounds, LIMIT, entry TTLs (EXPIRE_IN / EXPIRE_AT), the
 * descending timestamps in DocDB, WRONGTYPE, empty deletion, overlay. */
#include "yharness.h"

#include <stdio.h>
#include <string.h>

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(add_get_ranges)
{
	yh_open(&h, "yts");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 one 2 two 3 three 4 four 5 five 6 six"), "OK");
	EQ(yh_read(&h, yh_ht(2), "TSGET ts 3"), "\"three\"");
	EQ(yh_read(&h, yh_ht(2), "TSGET ts 7"), "nil");
	EQ(yh_read(&h, yh_ht(2), "TSGET nokey 7"), "nil");
	EQ(yh_read(&h, yh_ht(2), "TSCARD ts"), "6");
	EQ(yh_read(&h, yh_ht(2), "TSCARD nokey"), "0");
	EQ(yh_read(&h, yh_ht(2), "TYPE ts"), "tsdb");
	/* the examples of YugabyteDB's docs */
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts 2 4"),
	   "[\"2\", \"two\", \"3\", \"three\", \"4\", \"four\"]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts (2 4"), "[\"3\", \"three\", \"4\", \"four\"]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts (2 (4"), "[\"3\", \"three\"]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts -inf 3"),
	   "[\"1\", \"one\", \"2\", \"two\", \"3\", \"three\"]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts 5 +inf"), "[\"5\", \"five\", \"6\", \"six\"]");
	EQ(yh_read(&h, yh_ht(2), "TSREVRANGEBYTIME ts 2 4"),
	   "[\"4\", \"four\", \"3\", \"three\", \"2\", \"two\"]");
	EQ(yh_read(&h, yh_ht(2), "TSREVRANGEBYTIME ts (2 (4"), "[\"3\", \"three\"]");
	EQ(yh_read(&h, yh_ht(2), "TSREVRANGEBYTIME ts -inf 3 LIMIT 2"),
	   "[\"3\", \"three\", \"2\", \"two\"]");
	EQ(yh_read(&h, yh_ht(2), "TSREVRANGEBYTIME ts -inf +inf limit 1"), "[\"6\", \"six\"]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts 4 2"), "[]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME ts (3 (4"), "[]");
	EQ(yh_read(&h, yh_ht(2), "TSRANGEBYTIME nokey -inf +inf"), "[]");
	EQ(yh_read(&h, yh_ht(2), "TSLASTN ts 2"), "[\"5\", \"five\", \"6\", \"six\"]");
	EQ(yh_read(&h, yh_ht(2), "TSLASTN ts 100"),
	   "[\"1\", \"one\", \"2\", \"two\", \"3\", \"three\", \"4\", \"four\", \"5\", \"five\", "
	   "\"6\", \"six\"]");
	EQ(yh_read(&h, yh_ht(2), "TSLASTN nokey 2"), "[]");
	/* overwrite, negative and extreme timestamps */
	EQ(yh_cmd(&h, yh_ht(3),
		  "TSADD ts 3 THREE -5 neg 9223372036854775807 max "
		  "-9223372036854775808 min"),
	   "OK");
	EQ(yh_read(&h, yh_ht(4), "TSRANGEBYTIME ts -inf 1"),
	   "[\"-9223372036854775808\", \"min\", \"-5\", \"neg\", \"1\", \"one\"]");
	EQ(yh_read(&h, yh_ht(4), "TSRANGEBYTIME ts (9223372036854775806 +inf"),
	   "[\"9223372036854775807\", \"max\"]");
	EQ(yh_read(&h, yh_ht(4), "TSRANGEBYTIME ts (9223372036854775807 +inf"), "[]");
	EQ(yh_read(&h, yh_ht(4), "TSRANGEBYTIME ts -inf (-9223372036854775808"), "[]");
	EQ(yh_read(&h, yh_ht(4), "TSGET ts 3"), "\"THREE\"");
	EQ(yh_read(&h, yh_ht(4), "TSCARD ts"), "9");
	yh_close(&h);
}

TEST(errors)
{
	yh_open(&h, "yts");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1"),
	   "(error) ERR wrong number of arguments for 'tsadd' command");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 a 2"), "(error) ERR syntax error");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts x a"),
	   "(error) ERR timestamp is not a valid signed 64 bit integer");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1.5 a"),
	   "(error) ERR timestamp is not a valid signed 64 bit integer");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 a EXPIRE_IN 0"),
	   "(error) ERR EXPIRE_IN must be a positive number of seconds");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 a EXPIRE_IN x"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 a EXPIRE_AT 100"),
	   "(error) ERR EXPIRE_AT must be in the future");
	EQ(yh_read(&h, yh_ht(2), "EXISTS ts"), "0");
	EQ(yh_cmd(&h, yh_ht(2), "TSADD ts 1 a"), "OK");
	EQ(yh_read(&h, yh_ht(3), "TSGET ts x"),
	   "(error) ERR timestamp is not a valid signed 64 bit integer");
	EQ(yh_read(&h, yh_ht(3), "TSRANGEBYTIME ts a 1"),
	   "(error) ERR timestamp is not a valid signed 64 bit integer");
	EQ(yh_read(&h, yh_ht(3), "TSRANGEBYTIME ts 1 2 LIMIT 1"),
	   "(error) ERR wrong number of arguments for 'tsrangebytime' command");
	EQ(yh_read(&h, yh_ht(3), "TSREVRANGEBYTIME ts 1 2 LIMIT 0"),
	   "(error) ERR limit is not a valid positive 32 bit integer");
	EQ(yh_read(&h, yh_ht(3), "TSREVRANGEBYTIME ts 1 2 LIMIT 4294967296"),
	   "(error) ERR limit is not a valid positive 32 bit integer");
	EQ(yh_read(&h, yh_ht(3), "TSREVRANGEBYTIME ts 1 2 FOO 1"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(3), "TSREVRANGEBYTIME ts 1 2 LIMIT"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(3), "TSLASTN ts -1"),
	   "(error) ERR limit is not a valid positive 32 bit integer");
	EQ(yh_cmd(&h, yh_ht(3), "TSREM ts x"),
	   "(error) ERR timestamp is not a valid signed 64 bit integer");
	yh_close(&h);
}

TEST(rem_and_empty_deletion)
{
	yh_open(&h, "yts");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 10 a 20 b 30 c"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "TSREM ts 20 25"), "OK");
	EQ(yh_read(&h, yh_ht(3), "TSRANGEBYTIME ts -inf +inf"), "[\"10\", \"a\", \"30\", \"c\"]");
	EQ(yh_cmd(&h, yh_ht(3), "TSREM nokey 1"), "OK");
	EQ(yh_read(&h, yh_ht(4), "EXISTS nokey"), "0");
	EQ(yh_cmd(&h, yh_ht(4), "TSREM ts 10 30"), "OK");
	EQ(yh_read(&h, yh_ht(5), "EXISTS ts"), "0");
	EQ(yh_read(&h, yh_ht(5), "TSCARD ts"), "0");
	EQ(yh_cmd(&h, yh_ht(6), "TSADD ts 5 e"), "OK");
	EQ(yh_read(&h, yh_ht(7), "TSLASTN ts 10"), "[\"5\", \"e\"]");
	yh_close(&h);
}

TEST(wrongtype)
{
	static const char *const cmds[] = {
		"TSADD s 1 a",
		"TSGET s 1",
		"TSREM s 1",
		"TSRANGEBYTIME s 1 2",
		"TSREVRANGEBYTIME s 1 2",
		"TSCARD s",
		"TSLASTN s 1",
	};
	yh_open(&h, "yts");
	EQ(yh_cmd(&h, yh_ht(1), "ZADD s 1 a"), "1");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		EQ(yh_cmd(&h, yh_ht(2), cmds[i]),
		   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	EQ(yh_cmd(&h, yh_ht(3), "TSADD t 1 a"), "OK");
	EQ(yh_cmd(&h, yh_ht(4), "LPUSH t a"),
	   "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
	yh_close(&h);
}

TEST(ttls)
{
	char cmd[128];
	yh_open(&h, "yts");
	/* entry TTLs: each added entry expires on its own */
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 1 a 2 b EXPIRE_IN 10"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "TSADD ts 3 c"), "OK");
	snprintf(cmd, sizeof cmd, "TSADD ts 4 d EXPIRE_AT %llu",
		 (unsigned long long)(YH_BASE_US / 1000000 + 20));
	EQ(yh_cmd(&h, yh_ht(3), cmd), "OK");
	EQ(yh_read(&h, yh_ht(11), "TSCARD ts"), "4");
	EQ(yh_read(&h, yh_ht(12), "TSRANGEBYTIME ts -inf +inf"), "[\"3\", \"c\", \"4\", \"d\"]");
	EQ(yh_read(&h, yh_ht(12), "TSGET ts 1"), "nil");
	EQ(yh_read(&h, yh_ht(21), "TSLASTN ts 5"), "[\"3\", \"c\"]");
	EQ(yh_read(&h, yh_ht(21), "TTL ts"), "-1");
	/* a TTL on the key covers every entry */
	EQ(yh_cmd(&h, yh_ht(22), "EXPIRE ts 5"), "1");
	EQ(yh_read(&h, yh_ht(23), "TSCARD ts"), "1");
	EQ(yh_read(&h, yh_ht(28), "TSCARD ts"), "0");
	EQ(yh_read(&h, yh_ht(28), "EXISTS ts"), "0");
	yh_close(&h);
}

TEST(overlay)
{
	yh_open(&h, "yts");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "TSADD ts 1 a 2 b"), "OK");
	EQ(yh_run(&h, "TSADD ts 2 B 3 c"), "OK");
	EQ(yh_run(&h, "TSREM ts 1"), "OK");
	EQ(yh_run(&h, "TSRANGEBYTIME ts -inf +inf"), "[\"2\", \"B\", \"3\", \"c\"]");
	EQ(yh_run(&h, "TSCARD ts"), "2");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "TSLASTN ts 5"), "[\"2\", \"B\", \"3\", \"c\"]");
	yh_close(&h);
}

TEST(docdb_layout)
{
	/* descending int64 timestamps: newest first in DocDB */
	yh_open(&h, "yts");
	yh_label_ht(&h, yh_ht(1), "T1");
	yh_label_ht(&h, yh_ht(2), "T2");
	EQ(yh_cmd(&h, yh_ht(1), "TSADD ts 10 a 20 b"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "TSADD ts 15 c EXPIRE_IN 60"), "OK");
	EQ(yh_dump(&h), "(0x29a4, ts), T1 -> [Redis-TS-Type]\n"
			"(0x29a4, ts), 20, T1 -> b\n"
			"(0x29a4, ts), 15, T2 -> 60, c\n"
			"(0x29a4, ts), 10, T1 -> a\n");
	yh_close(&h);
}

TEST_MAIN(T(add_get_ranges), T(errors), T(rem_and_empty_deletion), T(wrongtype), T(ttls),
	  T(overlay), T(docdb_layout))
