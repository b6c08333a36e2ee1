/* Placement (src/master/placement.c): the split of the hash space, the
 * replication-factor and live-server checks, least-loaded ordering with its
 * tie-break, distinct replicas and an even spread; zones: distinct when
 * the servers span at least rf of them, spread evenly when not. */
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
		for (size_t i = 0; i < n; i++) {
			s[i].load = equal ? 7 : (uint32_t)(test_rand(&rng) % 20);
			s[i].zone = 0;
		}
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

TEST(zones_distinct_when_enough)
{
	/* 6 servers in 3 zones (s % 3), RF 3, 12 tablets: one replica per
	 * zone, 6 per server; zone 0 loaded far more still gets one of each. */
	struct placement_server s[6];
	size_t out[12 * 3];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (uint32_t i = 0; i < 6; i++)
		s[i] = (struct placement_server){0, i % 3};
	CHECK_OK(placement_place(s, 6, 12, 3, out, errmsg));
	for (int t = 0; t < 12; t++) {
		uint32_t seen = 0;
		for (int k = 0; k < 3; k++)
			seen |= 1u << s[out[t * 3 + k]].zone;
		CHECK_EQ_INT(seen, 7);
	}
	for (int i = 0; i < 6; i++)
		CHECK_EQ_INT(s[i].load, 6);
	s[0].load = s[3].load = 100;
	CHECK_OK(placement_place(s, 6, 4, 3, out, errmsg));
	for (int t = 0; t < 4; t++)
		CHECK(out[t * 3 + 0] == 0 || out[t * 3 + 0] == 3 || out[t * 3 + 1] == 0 ||
		      out[t * 3 + 1] == 3 || out[t * 3 + 2] == 0 || out[t * 3 + 2] == 3);
	/* Zones need not be dense indexes in order: 5 zones, RF 5, one
	 * server each plus two extra in zone 9. */
	struct placement_server z[7] = {{0, 9}, {0, 9}, {0, 4}, {0, 1}, {0, 9}, {0, 2}, {0, 7}};
	CHECK_OK(placement_place(z, 7, 1, 5, out, errmsg));
	uint32_t nine = 0;
	for (int k = 0; k < 5; k++)
		nine += z[out[k]].zone == 9;
	CHECK_EQ_INT(nine, 1);
}

TEST(zones_spread_when_too_few)
{
	/* RF 3 on two zones: 2 + 1; RF 5 on two: 3 + 2; RF 5 on three:
	 * 2 + 2 + 1. */
	static const struct {
		uint32_t rf, zones, most;
	} cases[] = {{3, 2, 2}, {5, 2, 3}, {5, 3, 2}, {5, 4, 2}, {3, 1, 3}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct placement_server s[12];
		size_t out[8 * 5];
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		for (uint32_t i = 0; i < 12; i++)
			s[i] = (struct placement_server){0, i % cases[c].zones};
		CHECK_OK(placement_place(s, 12, 8, cases[c].rf, out, errmsg));
		for (uint32_t t = 0; t < 8; t++) {
			uint32_t per[12] = {0}, most = 0;
			for (uint32_t k = 0; k < cases[c].rf; k++)
				per[s[out[t * cases[c].rf + k]].zone]++;
			for (uint32_t z = 0; z < cases[c].zones; z++)
				most = per[z] > most ? per[z] : most;
			CHECK_MSG(most == cases[c].most, "case %zu tablet %u: %u in one zone", c, t,
				  most);
		}
	}
}

/* Random zones and loads: a tablet's replicas are in distinct zones when
 * the servers span at least rf, and a zone holds two more of a tablet's
 * replicas than another only when the other has no server left. */
TEST(zones_property)
{
	uint64_t rng = 0x20e5;
	for (int round = 0; round < 300; round++) {
		struct placement_server s[10];
		size_t out[16 * 5];
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		uint32_t rf = (uint32_t[]){1, 3, 5}[test_rand(&rng) % 3];
		size_t n = rf + test_rand(&rng) % (10 - rf + 1);
		uint32_t nz = 1 + (uint32_t)(test_rand(&rng) % 6), spanned = 0, size[6] = {0};
		uint32_t tablets = 1 + (uint32_t)(test_rand(&rng) % 16);
		for (size_t i = 0; i < n; i++) {
			s[i].load = (uint32_t)(test_rand(&rng) % 5);
			s[i].zone = (uint32_t)(test_rand(&rng) % nz);
			spanned += size[s[i].zone]++ == 0;
		}
		CHECK_OK_MSG(placement_place(s, n, tablets, rf, out, errmsg), errmsg);
		for (uint32_t t = 0; t < tablets; t++) {
			uint32_t per[6] = {0};
			for (uint32_t k = 0; k < rf; k++)
				per[s[out[t * rf + k]].zone]++;
			for (uint32_t a = 0; a < nz; a++) {
				if (spanned >= rf)
					CHECK_MSG(per[a] <= 1, "round %d tablet %u: zone %u has %u", round,
						  t, a, per[a]);
				for (uint32_t b = 0; b < nz; b++)
					CHECK_MSG(per[a] < per[b] + 2 || per[b] == size[b],
						  "round %d tablet %u: zone %u has %u, zone %u %u of %u",
						  round, t, a, per[a], b, per[b], size[b]);
			}
		}
	}
}

TEST_MAIN(T(split_boundaries), T(split_known_values), T(replication_factor),
	  T(not_enough_live_servers), T(tablet_count_errors), T(least_loaded_first),
	  T(new_servers_fill_first), T(distinct_and_even), T(deterministic),
	  T(three_servers_rf3_eight_tablets), T(zones_distinct_when_enough),
	  T(zones_spread_when_too_few), T(zones_property))
