/* Key commands on a real store: DEL EXISTS TYPE, the EXPIRE family with
 * Redis 7's NX XX GT LT, TTL PTTL PERSIST (merge records folded on read
 * and by compaction), KEYS SCAN DBSIZE. */
#include "yharness.h"

#include <stdio.h>
#include <stdlib.h>

#include "redis/slot.h"
#include "yedis/yedis_int.h"

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(del_exists_type)
{
	yh_open(&h, "ykeys");
	EQ(yh_cmd(&h, yh_ht(1), "SET a 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET b 1"), "OK");
	EQ(yh_read(&h, yh_ht(2), "EXISTS a"), "1");
	EQ(yh_read(&h, yh_ht(2), "EXISTS a b c a"), "3");
	EQ(yh_read(&h, yh_ht(2), "TYPE a"), "string");
	EQ(yh_read(&h, yh_ht(2), "TYPE c"), "none");
	EQ(yh_cmd(&h, yh_ht(3), "DEL a c"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "DEL a"), "0");
	EQ(yh_read(&h, yh_ht(5), "EXISTS a"), "0");
	EQ(yh_read(&h, yh_ht(5), "GET a"), "nil");
	/* Reads in the past still see it. */
	EQ(yh_read(&h, yh_ht(2), "GET a"), "\"1\"");
	EQ(yh_read(&h, yh_ht(5), "DEL"), "(error) ERR wrong number of arguments for 'del' command");
	EQ(yh_read(&h, yh_ht(5), "TYPE"), "(error) ERR wrong number of arguments for 'type' command");
	yh_close(&h);
}

TEST(expire_and_ttl)
{
	yh_open(&h, "ykeys");
	EQ(yh_cmd(&h, yh_ht(1), "SET a v"), "OK");
	EQ(yh_read(&h, yh_ht(1), "TTL a"), "-1");
	EQ(yh_read(&h, yh_ht(1), "PTTL a"), "-1");
	EQ(yh_read(&h, yh_ht(1), "TTL nope"), "-2");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 100"), "1");
	EQ(yh_read(&h, yh_ht(2), "TTL a"), "100");
	EQ(yh_read(&h, yh_ht(52), "PTTL a"), "50000");
	EQ(yh_cmd(&h, yh_ht(10), "PEXPIRE a 20500"), "1");
	EQ(yh_read(&h, yh_ht(10), "PTTL a"), "20500");
	EQ(yh_read(&h, yh_ht(10), "TTL a"), "21");
	EQ(yh_read(&h, yh_ht(30), "GET a"), "\"v\"");
	EQ(yh_read(&h, yh_ht(31), "GET a"), "nil");
	EQ(yh_cmd(&h, yh_ht(31), "EXPIRE a 100"), "0");
	EQ(yh_cmd(&h, yh_ht(31), "PERSIST a"), "0");
	/* Reads before the merge records see the key as it was. */
	EQ(yh_read(&h, yh_ht(1), "TTL a"), "-1");
	EQ(yh_read(&h, yh_ht(5), "TTL a"), "97");

	/* A TTL whose microseconds pass 2^64 never ends (it used to wrap to
	 * 0.45 s and the key vanished). */
	EQ(yh_cmd(&h, yh_ht(40), "SET huge v"), "OK");
	EQ(yh_cmd(&h, yh_ht(41), "EXPIRE huge 18446744073710"), "1");
	EQ(yh_read(&h, yh_ht(45), "GET huge"), "\"v\"");
	EQ(yh_read(&h, yh_ht(45), "EXISTS huge"), "1");

	/* EXPIREAT / PEXPIREAT: absolute times. */
	{
		char cmd[128];
		EQ(yh_cmd(&h, yh_ht(40), "SET b v"), "OK");
		snprintf(cmd, sizeof cmd, "EXPIREAT b %llu",
			 (unsigned long long)(YH_BASE_US / 1000000 + 100));
		EQ(yh_cmd(&h, yh_ht(41), cmd), "1");
		EQ(yh_read(&h, yh_ht(41), "TTL b"), "59");
		snprintf(cmd, sizeof cmd, "PEXPIREAT b %llu",
			 (unsigned long long)(YH_BASE_US / 1000 + 45250));
		EQ(yh_cmd(&h, yh_ht(42), cmd), "1");
		EQ(yh_read(&h, yh_ht(42), "PTTL b"), "3250");
		/* In the past: the key is deleted, 1. */
		snprintf(cmd, sizeof cmd, "EXPIREAT b %llu",
			 (unsigned long long)(YH_BASE_US / 1000000));
		EQ(yh_cmd(&h, yh_ht(43), cmd), "1");
		EQ(yh_read(&h, yh_ht(43), "EXISTS b"), "0");
	}
	EQ(yh_cmd(&h, yh_ht(50), "SET c v"), "OK");
	EQ(yh_cmd(&h, yh_ht(51), "EXPIRE c 0"), "1");
	EQ(yh_read(&h, yh_ht(51), "EXISTS c"), "0");
	EQ(yh_cmd(&h, yh_ht(52), "SET c v"), "OK");
	EQ(yh_cmd(&h, yh_ht(53), "PEXPIRE c -5"), "1");
	EQ(yh_read(&h, yh_ht(53), "EXISTS c"), "0");
	yh_close(&h);
}

TEST(expire_errors_and_flags)
{
	yh_open(&h, "ykeys");
	EQ(yh_cmd(&h, yh_ht(1), "SET a v"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a x"), "(error) ERR value is not an integer or out of range");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 10 FOO"), "(error) ERR Unsupported option FOO");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 10 NX XX"),
	   "(error) ERR NX and XX, GT or LT options at the same time are not compatible");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 10 GT LT"),
	   "(error) ERR GT and LT options at the same time are not compatible");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 9223372036854775807"),
	   "(error) ERR invalid expire time in 'expire' command");
	EQ(yh_cmd(&h, yh_ht(2), "pexpire a 9223372036854775807"),
	   "(error) ERR invalid expire time in 'pexpire' command");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a"),
	   "(error) ERR wrong number of arguments for 'expire' command");
	/* No expiry yet: XX and GT fail, LT and NX set it. */
	EQ(yh_cmd(&h, yh_ht(3), "EXPIRE a 100 XX"), "0");
	EQ(yh_cmd(&h, yh_ht(3), "EXPIRE a 100 GT"), "0");
	EQ(yh_read(&h, yh_ht(3), "TTL a"), "-1");
	EQ(yh_cmd(&h, yh_ht(3), "EXPIRE a 100 LT"), "1");
	EQ(yh_cmd(&h, yh_ht(4), "EXPIRE a 200 NX"), "0");
	EQ(yh_cmd(&h, yh_ht(4), "EXPIRE a 200 XX"), "1");
	EQ(yh_read(&h, yh_ht(4), "TTL a"), "200");
	EQ(yh_cmd(&h, yh_ht(5), "EXPIRE a 100 GT"), "0");
	EQ(yh_cmd(&h, yh_ht(5), "EXPIRE a 300 GT"), "1");
	EQ(yh_cmd(&h, yh_ht(6), "EXPIRE a 400 LT"), "0");
	EQ(yh_cmd(&h, yh_ht(6), "EXPIRE a 50 lt"), "1");
	EQ(yh_read(&h, yh_ht(6), "TTL a"), "50");
	EQ(yh_cmd(&h, yh_ht(7), "PERSIST a"), "1");
	EQ(yh_read(&h, yh_ht(7), "TTL a"), "-1");
	EQ(yh_read(&h, yh_ht(1000), "GET a"), "\"v\"");
	EQ(yh_cmd(&h, yh_ht(1000), "PERSIST a"), "0");
	EQ(yh_cmd(&h, yh_ht(1000), "EXPIRE nope 10"), "0");
	yh_close(&h);
}

static bool has_field(uint64_t ht, const char *key, const char *field)
{
	struct resp_arg k = {key, strlen(key)};
	struct pv f = pv_str(field), v;
	bool found;
	yh_begin(&h, ht, false);
	CHECK_OK(yv_get(h.t, &k, &f, 1, &v, &found, h.errmsg));
	yh_commit(&h);
	return found;
}

TEST(expire_collection)
{
	yh_open(&h, "ykeys");
	yh_hset(&h, yh_ht(1), "h", "f1", "v");
	yh_hset(&h, yh_ht(2), "h", "f2", "v");
	EQ(yh_cmd(&h, yh_ht(3), "EXPIRE h 10"), "1");
	EQ(yh_read(&h, yh_ht(3), "TYPE h"), "hash");
	EQ(yh_read(&h, yh_ht(3), "TTL h"), "10");
	CHECK(has_field(yh_ht(13), "h", "f1"));
	CHECK(has_field(yh_ht(13), "h", "f2"));
	CHECK(!has_field(yh_ht(14), "h", "f1"));
	CHECK(!has_field(yh_ht(14), "h", "f2"));
	EQ(yh_read(&h, yh_ht(14), "EXISTS h"), "0");
	/* A new hash after expiry starts empty. */
	yh_hset(&h, yh_ht(20), "h", "f3", "v");
	CHECK(!has_field(yh_ht(21), "h", "f1"));
	CHECK(has_field(yh_ht(21), "h", "f3"));
	EQ(yh_read(&h, yh_ht(21), "TTL h"), "-1");
	yh_close(&h);
}

/* The merge records in the store, folded by a full compaction: reads at
 * every time after the cutoff give what they gave before. */
TEST(merge_records_compacted)
{
	static const char *const reads[] = {"TTL a", "PTTL b", "TTL c", "EXISTS a", "EXISTS b",
					    "EXISTS c", "GET a", "TYPE h", "TTL h"};
	static const int64_t at[] = {100, 150, 200, 250, 1000, 2000};
	char before[64][128];
	size_t n = 0;
	yh_open(&h, "ykeys");
	EQ(yh_cmd(&h, yh_ht(1), "SET a v EX 10"), "OK");
	EQ(yh_cmd(&h, yh_ht(5), "EXPIRE a 1000"), "1");
	EQ(yh_cmd(&h, yh_ht(6), "EXPIRE a 300"), "1");
	EQ(yh_cmd(&h, yh_ht(1), "SET b v"), "OK");
	EQ(yh_cmd(&h, yh_ht(7), "PEXPIRE b 200500"), "1");
	EQ(yh_cmd(&h, yh_ht(1), "SET c v EX 50"), "OK");
	EQ(yh_cmd(&h, yh_ht(8), "PERSIST c"), "1");
	yh_hset(&h, yh_ht(2), "h", "f", "v");
	EQ(yh_cmd(&h, yh_ht(9), "EXPIRE h 1500"), "1");
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		for (size_t j = 0; j < sizeof reads / sizeof reads[0]; j++)
			snprintf(before[n++], sizeof before[0], "%s", yh_read(&h, yh_ht(at[i]), reads[j]));
	CHECK(strstr(yh_dump(&h), "MERGE") != NULL || strstr(yh_dump(&h), "merge") != NULL);
	CHECK_OK_MSG(store_flush(h.s, h.errmsg), h.errmsg);
	CHECK_OK_MSG(store_compact(h.s, yh_ht(50), h.errmsg), h.errmsg);
	test_note("after compaction:\n%s", yh_dump(&h));
	CHECK(strstr(yh_dump(&h), "MERGE") == NULL);
	n = 0;
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		for (size_t j = 0; j < sizeof reads / sizeof reads[0]; j++, n++)
			CHECK_MSG(strcmp(before[n], yh_read(&h, yh_ht(at[i]), reads[j])) == 0,
				  "%s at %lld: %s before the compaction, %s after", reads[j],
				  (long long)at[i], before[n], yh_read(&h, yh_ht(at[i]), reads[j]));
	CHECK(has_field(yh_ht(1500), "h", "f"));
	CHECK(!has_field(yh_ht(1510), "h", "f"));
	yh_close(&h);
}

/* Random SET / EXPIRE / PEXPIRE / PERSIST / DEL / HSET histories of a few
 * keys at millisecond times, then a full compaction at a random cutoff:
 * every read at or after the cutoff is what it was before (TTL merge
 * records folded into the values, expired and hidden versions gone). */
TEST(random_expiry_compaction)
{
	static const char *const keys[] = {"k0", "k1", "k2", "{k}3", "k4"};
	static const char *const reads[] = {"PTTL %s", "GET %s", "TYPE %s", "EXISTS %s"};
	const char *e = getenv("TEST_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 10) : 4242, rng;
	static char before[5][4][64][100];
	size_t merges_before = 0, merges_after = 0, live = 0;
	test_note("TEST_SEED=%llu", (unsigned long long)seed);
	for (int round = 0; round < 8; round++) {
		int64_t now = 1000, cutoff;
		rng = seed * 1000003 + (uint64_t)round;
		yh_open(&h, "yrand");
		for (int step = 0; step < 120; step++) {
			char cmd[128];
			const char *k;
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			k = keys[(rng >> 33) % 5];
			switch ((rng >> 40) % 8) {
			case 0:
				snprintf(cmd, sizeof cmd, "SET %s v%d", k, step);
				break;
			case 1:
				snprintf(cmd, sizeof cmd, "SET %s v%d PX %llu", k, step,
					 (unsigned long long)(1 + (rng >> 20) % 20000));
				break;
			case 2:
				snprintf(cmd, sizeof cmd, "PEXPIRE %s %llu", k,
					 (unsigned long long)(1 + (rng >> 20) % 30000));
				break;
			case 3:
				snprintf(cmd, sizeof cmd, "EXPIRE %s %llu", k,
					 (unsigned long long)((rng >> 20) % 40));
				break;
			case 4:
				snprintf(cmd, sizeof cmd, "PERSIST %s", k);
				break;
			case 5:
				snprintf(cmd, sizeof cmd, "DEL %s", k);
				break;
			default:
				snprintf(cmd, sizeof cmd, "TYPE %s", k);
				if (strcmp(yh_read(&h, yh_ht_ms(now), cmd), "string") == 0)
					snprintf(cmd, sizeof cmd, "APPEND %s x", k);
				else {
					char f[8];
					snprintf(f, sizeof f, "f%d", (int)((rng >> 24) % 4));
					yh_hset(&h, yh_ht_ms(now), k, f, "v");
					snprintf(cmd, sizeof cmd, "TYPE %s", k);
				}
				break;
			}
			yh_cmd(&h, yh_ht_ms(now), cmd);
			now += 1 + (int64_t)((rng >> 45) % 700);
		}
		cutoff = 1000 + (int64_t)((rng >> 13) % (uint64_t)(now - 1000));
		for (int k = 0; k < 5; k++)
			for (int r = 0; r < 4; r++)
				for (int i = 0; i < 64; i++) {
					char cmd[64];
					snprintf(cmd, sizeof cmd, reads[r], keys[k]);
					snprintf(before[k][r][i], sizeof before[0][0][0], "%s",
						 yh_read(&h, yh_ht_ms(cutoff + i * 997), cmd));
				}
		for (const char *p = yh_dump(&h); (p = strstr(p, "MERGE")) != NULL; p++)
			merges_before++;
		CHECK_OK_MSG(store_flush(h.s, h.errmsg), h.errmsg);
		CHECK_OK_MSG(store_compact(h.s, yh_ht_ms(cutoff), h.errmsg), h.errmsg);
		for (const char *p = yh_dump(&h); (p = strstr(p, "MERGE")) != NULL; p++)
			merges_after++;
		for (int k = 0; k < 5; k++)
			for (int i = 0; i < 64; i++)
				live += strcmp(before[k][3][i], "1") == 0;
		for (int k = 0; k < 5; k++)
			for (int r = 0; r < 4; r++)
				for (int i = 0; i < 64; i++) {
					char cmd[64];
					const char *got;
					snprintf(cmd, sizeof cmd, reads[r], keys[k]);
					got = yh_read(&h, yh_ht_ms(cutoff + i * 997), cmd);
					CHECK_MSG(strcmp(got, before[k][r][i]) == 0,
						  "round %d: %s at %lld ms: %s before the compaction at %lld, %s after",
						  round, cmd, (long long)(cutoff + i * 997), before[k][r][i],
						  (long long)cutoff, got);
				}
		yh_close(&h);
	}
	/* Not vacuous: merge records were folded, keys were live after the
	 * cutoff. */
	test_note("merge records: %zu before, %zu after; %zu live reads", merges_before,
		  merges_after, live);
	CHECK(merges_after < merges_before);
	CHECK(live > 100);
}

/* A table default TTL (none for Redis tables today, but the engine takes
 * one): it applies to values without their own, from their write time;
 * PERSIST falls back to it, in the txn as after it. */
TEST(table_default_ttl)
{
	yh_open(&h, "ykeys");
	h.default_ttl_ms = 100000;
	EQ(yh_cmd(&h, yh_ht(1), "SET a v"), "OK");
	EQ(yh_read(&h, yh_ht(1), "TTL a"), "100");
	EQ(yh_cmd(&h, yh_ht(2), "EXPIRE a 10"), "1");
	EQ(yh_read(&h, yh_ht(2), "TTL a"), "10");
	yh_begin(&h, yh_ht(5), true);
	EQ(yh_run(&h, "PERSIST a"), "1");
	EQ(yh_run(&h, "TTL a"), "96");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(5), "TTL a"), "96");
	EQ(yh_read(&h, yh_ht(101), "GET a"), "\"v\"");
	EQ(yh_read(&h, yh_ht(102), "GET a"), "nil");
	yh_close(&h);
}

TEST(keys_dbsize)
{
	yh_open(&h, "ykeys");
	EQ(yh_read(&h, yh_ht(1), "KEYS *"), "[]");
	EQ(yh_read(&h, yh_ht(1), "DBSIZE"), "0");
	EQ(yh_cmd(&h, yh_ht(1), "SET hello 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET hallo 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET hxllo 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET hllo 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET heeeello 1 EX 5"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET gone 1"), "OK");
	EQ(yh_cmd(&h, yh_ht(2), "DEL gone"), "1");
	yh_hset(&h, yh_ht(2), "h*llo", "f", "v");
	EQ(yh_read(&h, yh_ht(3), "DBSIZE"), "6");
	EQ(yh_read(&h, yh_ht(10), "DBSIZE"), "5");
	{
		/* Redis's examples; the order is the store's (slot, then bytes). */
		const char *r = yh_read(&h, yh_ht(3), "KEYS h?llo");
		CHECK(strstr(r, "\"hello\"") && strstr(r, "\"hallo\"") && strstr(r, "\"hxllo\""));
		CHECK(!strstr(r, "\"hllo\"") && !strstr(r, "heeeello"));
		r = yh_read(&h, yh_ht(3), "KEYS h*llo");
		CHECK(strstr(r, "\"hllo\"") && strstr(r, "heeeello") && strstr(r, "h*llo"));
		r = yh_read(&h, yh_ht(10), "KEYS h*llo");
		CHECK(!strstr(r, "heeeello"));
		r = yh_read(&h, yh_ht(3), "KEYS h[ae]llo");
		CHECK(strstr(r, "\"hello\"") && strstr(r, "\"hallo\"") && !strstr(r, "hxllo"));
		r = yh_read(&h, yh_ht(3), "KEYS h[^e]llo");
		CHECK(!strstr(r, "\"hello\"") && strstr(r, "\"hallo\"") && strstr(r, "hxllo"));
		r = yh_read(&h, yh_ht(3), "KEYS h[a-b]llo");
		CHECK(!strstr(r, "\"hello\"") && strstr(r, "\"hallo\""));
		EQ(yh_read(&h, yh_ht(3), "KEYS h\\*llo"), "[\"h*llo\"]");
		EQ(yh_read(&h, yh_ht(3), "KEYS gone"), "[]");
	}
	CHECK(ystringmatch("a*b?c", 5, "axxbyc", 6, false));
	CHECK(!ystringmatch("a*b?c", 5, "axxbc", 5, false));
	CHECK(ystringmatch("[abc", 4, "a", 1, false));
	CHECK(!ystringmatch("*", 1, "", 0, false)); /* as Redis's stringmatchlen */
	CHECK(ystringmatch("a\\", 2, "a\\", 2, false));
	CHECK(ystringmatch("HELLO", 5, "hello", 5, true));
	yh_close(&h);
}

TEST(keys_bounded)
{
	yh_open(&h, "ykeys");
	/* Past 100000 keys on one tablet, KEYS refuses. */
	for (int b = 0; b < 11; b++) {
		yh_begin(&h, yh_ht(1 + b), true);
		for (int i = 0; i < 10000; i++) {
			char cmd[64];
			snprintf(cmd, sizeof cmd, "SET k%d v", b * 10000 + i);
			yh_run(&h, cmd);
		}
		yh_commit(&h);
	}
	EQ(yh_read(&h, yh_ht(20), "DBSIZE"), "110000");
	EQ(yh_read(&h, yh_ht(20), "KEYS *"),
	   "(error) ERR docraft: KEYS would return more than 100000 keys; use SCAN");
	{
		const char *r = yh_read(&h, yh_ht(20), "KEYS k10000?");
		size_t commas = 0;
		for (const char *p = r; *p; p++)
			commas += *p == ',';
		CHECK_EQ_INT(commas, 9);
		for (int i = 0; i < 10; i++) {
			char k[16];
			snprintf(k, sizeof k, "\"k10000%d\"", i);
			CHECK(strstr(r, k) != NULL);
		}
	}
	yh_close(&h);
}

/* Runs a full SCAN as the front end would on one tablet; counts how often
 * each key k<i> came. */
static void full_scan(uint64_t ht, const char *opts, int *seen, int nkeys, int *calls)
{
	char cursor[32] = "0";
	*calls = 0;
	for (;;) {
		char cmd[256];
		const char *r, *p;
		snprintf(cmd, sizeof cmd, "SCAN %s%s", cursor, opts);
		r = yh_read(&h, ht, cmd);
		CHECK_MSG(r[0] == '[' && r[1] == '"', "%s", r);
		p = strchr(r + 2, '"');
		snprintf(cursor, sizeof cursor, "%.*s", (int)(p - r - 2), r + 2);
		for (p = strstr(p + 1, "\"k"); p != NULL; p = strstr(p + 1, "\"k")) {
			int i = atoi(p + 2);
			CHECK(i >= 0 && i < nkeys);
			seen[i]++;
		}
		(*calls)++;
		CHECK(*calls < 100000);
		if (strcmp(cursor, "0") == 0)
			break;
	}
}

TEST(scan)
{
	enum { N = 3000 };
	static int seen[N];
	int calls;
	yh_open(&h, "ykeys");
	yh_begin(&h, yh_ht(1), true);
	for (int i = 0; i < N; i++) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "SET k%d v", i);
		yh_run(&h, cmd);
	}
	/* Keys of one hash tag: one slot, split by the cursor. */
	for (int i = 0; i < 100; i++) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "SET {tag}%d v", i);
		yh_run(&h, cmd);
	}
	yh_commit(&h);
	memset(seen, 0, sizeof seen);
	full_scan(yh_ht(2), "", seen, N, &calls);
	for (int i = 0; i < N; i++)
		CHECK_MSG(seen[i] == 1, "k%d seen %d times", i, seen[i]);
	test_note("SCAN COUNT 10: %d calls", calls);
	CHECK(calls > 100);
	memset(seen, 0, sizeof seen);
	full_scan(yh_ht(2), " COUNT 1000 MATCH k1*", seen, N, &calls);
	for (int i = 0; i < N; i++)
		CHECK_EQ_INT(seen[i], i == 1 || (i >= 10 && i < 20) || (i >= 100 && i < 200) ||
					      (i >= 1000 && i < 2000));
	CHECK(calls <= 5);
	EQ(yh_read(&h, yh_ht(2), "SCAN 0 COUNT 100000 TYPE hash"), "[\"0\", []]");
	EQ(yh_read(&h, yh_ht(2), "SCAN x"), "(error) ERR invalid cursor");
	EQ(yh_read(&h, yh_ht(2), "SCAN 0 COUNT 0"), "(error) ERR syntax error");
	EQ(yh_read(&h, yh_ht(2), "SCAN 0 COUNT x"),
	   "(error) ERR value is not an integer or out of range");
	EQ(yh_read(&h, yh_ht(2), "SCAN 0 FOO"), "(error) ERR syntax error");
	/* A cursor past the last slot: nothing more. */
	EQ(yh_read(&h, yh_ht(2), "SCAN 18446744073709551615"), "[\"0\", []]");
	{
		/* The cursor names the slot where the next call starts. */
		char cmd[64];
		const char *r = yh_read(&h, yh_ht(2), "SCAN 0 COUNT 1");
		unsigned long long c = strtoull(r + 2, NULL, 10);
		CHECK(c != 0 && yedis_scan_offset(c) == 0);
		snprintf(cmd, sizeof cmd, "SCAN %llu COUNT 1", c);
		r = yh_read(&h, yh_ht(2), cmd);
		CHECK(strtoull(r + 2, NULL, 10) > c);
	}
	yh_close(&h);
}

TEST(scan_split_slot)
{
	enum { N = 25000 };
	static int seen[N];
	int calls;
	yh_open(&h, "ykeys");
	/* k{x}<i> are all in one slot; keys are named k<i>... for full_scan. */
	yh_begin(&h, yh_ht(1), true);
	for (int i = 0; i < N; i++) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "SET k%d{x} v", i);
		yh_run(&h, cmd);
	}
	yh_commit(&h);
	memset(seen, 0, sizeof seen);
	full_scan(yh_ht(2), " COUNT 10", seen, N, &calls);
	for (int i = 0; i < N; i++)
		CHECK_MSG(seen[i] == 1, "k%d seen %d times", i, seen[i]);
	CHECK(calls >= 3);
	yh_close(&h);
}

TEST_MAIN(T(del_exists_type), T(expire_and_ttl), T(expire_errors_and_flags), T(expire_collection),
	  T(merge_records_compacted), T(random_expiry_compaction), T(table_default_ttl), T(keys_dbsize), T(keys_bounded), T(scan), T(scan_split_slot))
