/* docraft bench's generators (src/tools/bench/workload.c): the zipfian key
 * choosers stay in range and are as skewed as YCSB's, the uniform one is
 * not, the workload mixes draw reads at their shares, keys are named like
 * YCSB's. Fixed seeds: the bounds are many standard deviations wide. */
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "tools/bench/workload.h"

#define KEYS 1000
#define DRAWS 200000

/* Draws DRAWS keys of dist over KEYS keys into counts (KEYS entries),
 * checking each is in range; returns the most drawn key. */
static uint64_t draw(enum distribution dist, uint64_t seed, uint64_t *counts)
{
	struct keychooser k;
	struct rng r;
	uint64_t top = 0;
	keychooser_init(&k, dist, KEYS);
	rng_seed(&r, seed);
	memset(counts, 0, KEYS * sizeof *counts);
	for (int i = 0; i < DRAWS; i++) {
		uint64_t v = keychooser_next(&k, &r);
		CHECK_MSG(v < KEYS, "draw %d: key %" PRIu64 " out of [0, %d)", i, v, KEYS);
		counts[v]++;
	}
	for (uint64_t i = 1; i < KEYS; i++)
		if (counts[i] > counts[top])
			top = i;
	return top;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The share of draws that went to the hottest tenth of the keys. */
static double top_tenth_share(uint64_t *counts)
{
	uint64_t sum = 0;
	qsort(counts, KEYS, sizeof *counts, cmp_desc);
	for (int i = 0; i < KEYS / 10; i++)
		sum += counts[i];
	return (double)sum / DRAWS;
}

TEST(zipfian_key_zero_is_hottest)
{
	static uint64_t counts[KEYS];
	/* P(item 0) = 1 / zeta(n, 0.99) */
	double want = 1.0 / zeta(KEYS, ZIPFIAN_THETA);
	uint64_t top = draw(DIST_ZIPFIAN, 42, counts);
	double got = (double)counts[0] / DRAWS, second = (double)counts[1] / DRAWS;
	test_note("zipfian: key 0 %.4f (expected %.4f), key 1 %.4f", got, want, second);
	CHECK_EQ_U64(top, 0);
	CHECK_MSG(fabs(got - want) < 0.1 * want, "key 0 drawn %.4f, expected %.4f", got, want);
	/* P(item 1) = P(item 0) / 2^0.99 */
	CHECK_MSG(fabs(second - want / pow(2, ZIPFIAN_THETA)) < 0.1 * want,
		  "key 1 drawn %.4f", second);
	CHECK_MSG(top_tenth_share(counts) > 0.6, "hottest 10%% of keys: %.3f of the draws",
		  top_tenth_share(counts));
}

TEST(scrambled_zipfian_is_skewed_and_spread)
{
	static uint64_t counts[KEYS];
	uint64_t top = draw(DIST_SCRAMBLED_ZIPFIAN, 7, counts);
	/* YCSB: item 0 of a zipfian over 10^10 items, P = 1/26.469 = 0.0378,
	 * lands on key fnv64(0) mod n; plus its share of the long tail. */
	double got = (double)counts[top] / DRAWS, share;
	test_note("scrambled zipfian: hottest key %" PRIu64 " at %.4f", top, got);
	CHECK_EQ_U64(top, fnvhash64(0) % KEYS);
	CHECK_MSG(got > 0.030 && got < 0.050, "hottest key drawn %.4f, expected about 0.038",
		  got);
	/* the second hottest item lands elsewhere: hot keys are spread */
	CHECK(fnvhash64(1) % KEYS != top);
	CHECK((double)counts[fnvhash64(1) % KEYS] / DRAWS > 0.015);
	/* much of the mass is the long tail, spread evenly: about 0.3 */
	share = top_tenth_share(counts);
	test_note("scrambled zipfian: hottest 10%% of keys take %.3f", share);
	CHECK_MSG(share > 0.2 && share < 0.5, "hottest 10%% of keys: %.3f of the draws", share);
}

TEST(uniform_is_flat)
{
	static uint64_t counts[KEYS];
	uint64_t top = draw(DIST_UNIFORM, 3, counts);
	/* mean 200 per key, sd 14: the maximum of 1000 stays below 300 */
	CHECK_MSG(counts[top] < 300, "key %" PRIu64 " drawn %" PRIu64 " times", top, counts[top]);
	CHECK(top_tenth_share(counts) < 0.13);
}

TEST(zipfian_over_one_key)
{
	struct keychooser k;
	struct rng r;
	rng_seed(&r, 1);
	keychooser_init(&k, DIST_SCRAMBLED_ZIPFIAN, 1);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ_U64(keychooser_next(&k, &r), 0);
}

/* Reads among n draws of workload w. */
static int reads_of(enum workload w, int n)
{
	struct rng r;
	int reads = 0;
	rng_seed(&r, 99);
	for (int i = 0; i < n; i++) {
		enum op_kind op = workload_next_op(w, &r);
		CHECK(op == OP_READ || op == OP_UPDATE);
		reads += op == OP_READ;
	}
	return reads;
}

TEST(workload_mixes)
{
	int a = reads_of(WL_A, 10000), b = reads_of(WL_B, 10000);
	test_note("workload a: %d reads of 10000; b: %d", a, b);
	/* sd 50 for a, 22 for b */
	CHECK_MSG(a > 4800 && a < 5200, "workload a: %d reads of 10000", a);
	CHECK_MSG(b > 9400 && b < 9600, "workload b: %d reads of 10000", b);
	CHECK_EQ_INT(reads_of(WL_C, 10000), 10000);
	CHECK_EQ_INT(reads_of(WL_WRITE, 10000), 0);
}

TEST(workload_names)
{
	CHECK_EQ_INT(workload_parse("load"), WL_LOAD);
	CHECK_EQ_INT(workload_parse("a"), WL_A);
	CHECK_EQ_INT(workload_parse("write"), WL_WRITE);
	CHECK_EQ_INT(workload_parse("d"), -1);
	CHECK_EQ_INT(workload_parse("A"), -1);
	CHECK_EQ_STR(workload_name(WL_C), "c");
}

TEST(key_names)
{
	char k[KEY_NAME_MAX];
	CHECK_EQ_INT(key_name(42, k), 14);
	CHECK_EQ_STR(k, "user0000000042");
	CHECK_EQ_INT(key_name(9999999999ull, k), 14);
	CHECK_EQ_STR(k, "user9999999999");
}

TEST(fnvhash64_matches_ycsb)
{
	/* FNV-1a 64 over the 8 bytes low first, then Java's Math.abs (values
	 * computed independently, in Python) */
	CHECK_EQ_U64(fnvhash64(0), 0x573807cdd7e5c63bull);
	CHECK_EQ_U64(fnvhash64(1), 0x7632ced6e2d5105cull);
	CHECK_EQ_U64(fnvhash64(0x0102030405060708ull), 0x0c6d4496e17859d5ull);
}

TEST_MAIN(T(zipfian_key_zero_is_hottest), T(scrambled_zipfian_is_skewed_and_spread),
	  T(uniform_is_flat), T(zipfian_over_one_key), T(workload_mixes), T(workload_names),
	  T(key_names), T(fnvhash64_matches_ycsb))
