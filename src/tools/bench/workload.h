/* docraft bench: what the client threads draw. A PRNG, YCSB's zipfian and
 * scrambled zipfian key choosers, the uniform one, the workload mixes and
 * the key names. Pure functions on caller-owned state: one struct per
 * client thread, no locks, no allocation. Kept apart from the runner so
 * that tests/tools/test_bench.c can check the distributions alone. */
#ifndef DOCRAFT_TOOLS_BENCH_WORKLOAD_H
#define DOCRAFT_TOOLS_BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- random numbers ---- */

/* xoshiro256** seeded by splitmix64: fast, good enough for choosing keys. */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, 1). */
double rng_double(struct rng *r);
/* Uniform in [0, n); n >= 1. */
uint64_t rng_below(struct rng *r, uint64_t n);

/* ---- key choosers ---- */

enum distribution {
	DIST_UNIFORM,
	DIST_ZIPFIAN,           /* YCSB ZipfianGenerator: key 0 the hottest */
	DIST_SCRAMBLED_ZIPFIAN, /* YCSB ScrambledZipfianGenerator (the default) */
};

/* YCSB's zipfian constant. */
#define ZIPFIAN_THETA 0.99

/* Chooses keys in [0, n). Read-only once made: threads may share one. */
struct keychooser {
	enum distribution dist;
	uint64_t n;
	/* zipfian over `items` (n, or YCSB's 10^10 when scrambled) */
	uint64_t items;
	double theta, alpha, zetan, eta, half_pow_theta;
};

/* Prepares a chooser of dist over n >= 1 keys. DIST_ZIPFIAN computes
 * zeta(n, 0.99) (O(n): 100 ms for 10^8 keys); DIST_SCRAMBLED_ZIPFIAN, like
 * YCSB, draws from a zipfian over 10^10 items with its precomputed zeta
 * and maps item i to fnv64(i) mod n, so the hot keys are spread over the
 * key space and their popularity does not depend on n. */
void keychooser_init(struct keychooser *k, enum distribution dist, uint64_t n);
/* A key in [0, n). */
uint64_t keychooser_next(const struct keychooser *k, struct rng *r);
/* zeta(n, theta) = sum over i in 1..n of 1 / i^theta. */
double zeta(uint64_t n, double theta);
/* YCSB's Utils.fnvhash64 (FNV-1a over the 8 bytes, low byte first, then
 * the absolute value as a Java long). */
uint64_t fnvhash64(uint64_t v);

/* ---- workloads ---- */

enum workload {
	WL_LOAD,  /* inserts of keys 0..n-1, each once */
	WL_A,     /* 50% reads, 50% updates */
	WL_B,     /* 95% reads, 5% updates */
	WL_C,     /* reads only */
	WL_WRITE, /* updates only */
};

enum op_kind {
	OP_READ,
	OP_UPDATE,
	OP_INSERT,
};

/* "load", "a", "b", "c", "write" (case-sensitive); -1 if none of them. */
int workload_parse(const char *s);
const char *workload_name(enum workload w);
/* The share of reads of w (0 for load and write). */
double workload_read_share(enum workload w);
/* The next operation of a run workload (not WL_LOAD): OP_READ with the
 * workload's read share, else OP_UPDATE. */
enum op_kind workload_next_op(enum workload w, struct rng *r);

/* ---- keys ---- */

/* Longest key name, with its NUL. */
#define KEY_NAME_MAX 32

/* Key number i as YCSB names it: "user" and i zero-padded to 10 digits
 * ("user0000000042"). Writes the NUL; returns the length (14 for every
 * i < 10^10). */
size_t key_name(uint64_t i, char out[KEY_NAME_MAX]);

#endif
