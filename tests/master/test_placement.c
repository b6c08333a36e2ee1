/* Placement (src/master/placement.c): the split of the hash space, the
 * replication-factor and live-server checks, least-loaded ordering with its
 * tie-break, distinct replicas and an even spread. */
#include <stdio.h>
#include <string.h>

#include "master/placement.h"
#include "test.h"

TEST(split_boundaries)
{
	static const uint32_t ns[] = {1, 2, 3, 8, 16, 7, 1024};
	for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
		uint32_t n = ns[k], prev_end = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t start, end;
			placement_partition(i, n, &start, &end);
			CHECK_EQ_U64(start, (uint64_t)i * 65536 / n);
			CHECK_EQ_U64(start, prev_end);
			CHECK(end > start);
			if (i + 1 == n)
				CHECK_EQ_U64(end, 65536);
			else
				CHECK_EQ_U64(end, (uint64_t)(i + 1) * 65536 / n);
			prev_end = end;
		}
		CHECK_EQ_U64(prev_end, 65536);
	}
}

TEST(split_known_values)
{
	uint32_t s, e;
	placement_partition(0, 1, &s, &e);
	CHECK_EQ_U64(s, 0);
	CHECK_EQ_U64(e, 65536);
	placement_partition(1, 2, &s, &e);
	CHECK_EQ_U64(s, 32768);
	CHECK_EQ_U64(e, 65536);
	placement_partition(1, 3, &s, &e);
	CHECK_EQ_U64(s, 21845);
	CHECK_EQ_U64(e, 43690);
	placement_partition(2, 3, &s, &e);
	CHECK_EQ_U64(s, 43690);
	CHECK_EQ_U64(e, 65536);
	for (uint32_t i = 0; i < 8; i++) {
		placement_partition(i, 8, &s, &e);
		CHECK_EQ_U64(s, i * 8192);
		CHECK_EQ_U64(e, (i + 1) * 8192);
	}
	for (uint32_t i = 0; i < 16; i++) {
		placement_partition(i, 16, &s, &e);
		CHECK_EQ_U64(s, i * 4096);
		CHECK_EQ_U64(e, (i + 1) * 4096);
	}
}

TEST(replication_factor)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (uint32_t rf = 0; rf <= 7; rf++) {
		int rv = placement_check_rf(rf, errmsg);
		if (rf == 1 || rf == 3 || rf == 5) {
			CHECK_OK(rv);
		} else {
			CHECK_EQ_INT(rv, DOCRAFT_EINVAL);
			CHECK(strstr(errmsg, "1, 3 or 5") != NULL);
		}
	}
}

TEST(not_enough_live_servers)
{
	struct placement_server s[3] = {{0}, {0}, {0}};
	size_t out[5 * 4];
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	memset(out, 0xAB, sizeof out);
	CHECK_EQ_INT(placement_place(s, 3, 4, 5, out, errmsg), DOCRAFT_EUNAVAILABLE);
	CHECK_MSG(strstr(errmsg, "not enough live tservers: 3 live, replication factor 5"),
		  "%s", errmsg);
	/* Nothing written or changed. */
	for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
		CHECK_EQ_U64(out[i], (size_t)0xABABABABABABABABull);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(s[i].load, 0);
	CHECK_EQ_INT(placement_place(s, 0, 1, 1, out, errmsg), DOCRAFT_EUNAVAILABLE);
	CHECK(strstr(errmsg, "0 live") != NULL);
	CHECK_EQ_INT(placement_place(s, 2, 1, 3, out, errmsg), DOCRAFT_EUNAVAILABLE);
	CHECK_EQ_INT(placement_place(s, 3, 1, 2, out, errmsg), DOCRAFT_EINVAL);
	CHECK(strstr(errmsg, "1, 3 or 5") != NULL);
	CHECK_OK_MSG(placement_place(s, 3, 4, 3, out, errmsg), errmsg);
	CHECK_OK_MSG(placement_place(s, 1, 4, 1, out, errmsg), errmsg);
}

TEST(tablet_count_errors)
{
	struct placement_server s[3] = {{0}, {0}, {0}};
	static size_t out[(PLACEMENT_MAX_TABLETS + 1) * 3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_EQ_INT(placement_place(s, 3, 0, 3, out, errmsg), DOCRAFT_EINVAL);
	CHECK(strstr(errmsg, "number of tablets") != NULL);
	CHECK_EQ_INT(placement_place(s, 3, PLACEMENT_MAX_TABLETS + 1, 3, out, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_OK(placement_place(s, 3, PLACEMENT_MAX_TABLETS, 3, out, errmsg));
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(s[i].load, PLACEMENT_MAX_TABLETS);
}

TEST(least_loaded_first)
{
	struct placement_server s[4] = {{5}, {0}, {2}, {0}};
	size_t out[3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK_OK(placement_place(s, 4, 1, 3, out, errmsg));
	/* Two at load 0 in index order, then the one at 2; never the one at 5. */
	CHECK_EQ_INT(out[0], 1);
	CHECK_EQ_INT(out[1], 3);
	CHECK_EQ_INT(out[2], 2);
	CHECK_EQ_INT(s[0].load, 5);
	CHECK_EQ_INT(s[1].load, 1);
	CHECK_EQ_INT(s[2].load, 3);
	CHECK_EQ_INT(s[3].load, 1);
	/* RF 1: the least loaded, lowest index on a tie. */
	CHECK_OK(placement_place(s, 4, 1, 1, out, errmsg));
	CHECK_EQ_INT(out[0], 1);
	CHECK_OK(placement_place(s, 4, 1, 1, out, errmsg));
	CHECK_EQ_INT(out[0], 3);
}

TEST(new_servers_fill_first)
{
	/* Three loaded servers and a new one: the new one takes a replica of
	 * every tablet until it catches up. */
	struct placement_server s[4] = {{10}, {10}, {10}, {0}};
	size_t out[5 * 3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(placement_place(s, 4, 5, 3, out, errmsg));
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(out[i * 3], 3);
	CHECK_EQ_INT(s[3].load, 5);
}

TEST(distinct_and_even)
{
	static const uint32_t rfs[] = {1, 3, 5};
	uint64_t rng = test_seed();
	for (int round = 0; round < 200; round++) {
		struct placement_server s[9], before[9];
		size_t out[64 * 5];
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		uint32_t rf = rfs[test_rand(&rng) % 3];
		size_t n = rf + test_rand(&rng) % (9 - rf + 1);
		uint32_t tablets = 1 + (uint32_t)(test_rand(&rng) % 64);
		bool equal = test_rand(&rng) % 2 == 0;
		uint64_t total = 0;
		for (size_t i = 0; i < n; i++)
			s[i].load = equal ? 7 : (uint32_t)(test_rand(&rng) % 20);
		memcpy(before, s, sizeof s);
		CHECK_OK_MSG(placement_place(s, n, tablets, rf, out, errmsg), errmsg);
		for (uint32_t t = 0; t < tablets; t++) {
			for (uint32_t a = 0; a < rf; a++) {
				CHECK(out[t * rf + a] < n);
				for (uint32_t b = a + 1; b < rf; b++)
					CHECK(out[t * rf + a] != out[t * rf + b]);
			}
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t placed = 0;
			for (uint32_t k = 0; k < tablets * rf; k++)
				placed += out[k] == i;
			CHECK_EQ_INT(s[i].load, before[i].load + placed);
			total += placed;
		}
		CHECK_EQ_U64(total, (uint64_t)tablets * rf);
		if (equal) {
			/* Equal start: every server within one of the others. */
			uint32_t lo = UINT32_MAX, hi = 0;
			for (size_t i = 0; i < n; i++) {
				lo = s[i].load < lo ? s[i].load : lo;
				hi = s[i].load > hi ? s[i].load : hi;
			}
			CHECK_MSG(hi - lo <= 1, "loads %u..%u, n %zu rf %u tablets %u", lo, hi, n,
				  rf, tablets);
		}
	}
}

TEST(deterministic)
{
	struct placement_server a[5] = {{1}, {3}, {1}, {0}, {2}};
	struct placement_server b[5];
	size_t out_a[16 * 3], out_b[16 * 3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memcpy(b, a, sizeof a);
	CHECK_OK(placement_place(a, 5, 16, 3, out_a, errmsg));
	CHECK_OK(placement_place(b, 5, 16, 3, out_b, errmsg));
	CHECK_EQ_MEM(out_a, sizeof out_a, out_b, sizeof out_b);
	CHECK_EQ_MEM(a, sizeof a, b, sizeof b);
}

TEST(three_servers_rf3_eight_tablets)
{
	/* The process test's shape: every tablet on all three, 8 each. */
	struct placement_server s[3] = {{0}, {0}, {0}};
	size_t out[8 * 3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(placement_place(s, 3, 8, 3, out, errmsg));
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(s[i].load, 8);
}

TEST_MAIN(T(split_boundaries), T(split_known_values), T(replication_factor),
	  T(not_enough_live_servers), T(tablet_count_errors), T(least_loaded_first),
	  T(new_servers_fill_first), T(distinct_and_even), T(deterministic),
	  T(three_servers_rf3_eight_tablets))
