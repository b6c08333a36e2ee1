/* docraft bench: random numbers, key choosers, workload mixes, key names.
 * The zipfian generators follow YCSB's ZipfianGenerator and
 * ScrambledZipfianGenerator (core/src/main/java/site/ycsb/generator/) line
 * for line, so "zipfian" means here what it means in YCSB results. */
#include "tools/bench/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- random numbers ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Lemire's multiply-shift; the bias (n / 2^64) is irrelevant here. */
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* ---- key choosers ---- */

/* YCSB ScrambledZipfianGenerator: ITEM_COUNT and ZETAN (zeta(10^10, 0.99)). */
#define SCRAMBLED_ITEMS 10000000000ull
#define SCRAMBLED_ZETAN 26.46902820178302

double zeta(uint64_t n, double theta)
{
	double sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += 1.0 / pow((double)(i + 1), theta);
	return sum;
}

uint64_t fnvhash64(uint64_t v)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;
		h *= 1099511628211ull;
	}
	/* Java's Math.abs of a long (Long.MIN_VALUE stays itself). */
	if ((int64_t)h < 0 && h != 0x8000000000000000ull)
		h = (uint64_t)(-(int64_t)h);
	return h;
}

static void zipf_init(struct keychooser *k, uint64_t items, double zetan)
{
	k->items = items;
	k->theta = ZIPFIAN_THETA;
	k->alpha = 1.0 / (1.0 - k->theta);
	k->zetan = zetan;
	k->eta = (1 - pow(2.0 / (double)items, 1 - k->theta)) / (1 - zeta(2, k->theta) / zetan);
	k->half_pow_theta = pow(0.5, k->theta);
}

void keychooser_init(struct keychooser *k, enum distribution dist, uint64_t n)
{
	memset(k, 0, sizeof *k);
	k->dist = dist;
	k->n = n ? n : 1;
	if (dist == DIST_ZIPFIAN)
		zipf_init(k, k->n, zeta(k->n, ZIPFIAN_THETA));
	else if (dist == DIST_SCRAMBLED_ZIPFIAN)
		/* new ZipfianGenerator(0, ITEM_COUNT, ...): ITEM_COUNT + 1 items */
		zipf_init(k, SCRAMBLED_ITEMS + 1, SCRAMBLED_ZETAN);
}

/* ZipfianGenerator.nextLong(items) with base 0. */
static uint64_t zipf_next(const struct keychooser *k, struct rng *r)
{
	double u = rng_double(r);
	double uz = u * k->zetan;
	uint64_t v;
	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + k->half_pow_theta)
		return 1;
	v = (uint64_t)((double)k->items * pow(k->eta * u - k->eta + 1, k->alpha));
	return v < k->items ? v : k->items - 1;
}

uint64_t keychooser_next(const struct keychooser *k, struct rng *r)
{
	switch (k->dist) {
	case DIST_ZIPFIAN:
		return zipf_next(k, r);
	case DIST_SCRAMBLED_ZIPFIAN:
		return fnvhash64(zipf_next(k, r)) % k->n;
	case DIST_UNIFORM:
	default:
		return rng_below(r, k->n);
	}
}

/* ---- workloads ---- */

static const char *const names[] = {
	[WL_LOAD] = "load", [WL_A] = "a", [WL_B] = "b", [WL_C] = "c", [WL_WRITE] = "write",
};

int workload_parse(const char *s)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

const char *workload_name(enum workload w)
{
	return (unsigned)w < sizeof names / sizeof names[0] ? names[w] : "?";
}

double workload_read_share(enum workload w)
{
	switch (w) {
	case WL_A:
		return 0.5;
	case WL_B:
		return 0.95;
	case WL_C:
		return 1.0;
	default:
		return 0.0;
	}
}

enum op_kind workload_next_op(enum workload w, struct rng *r)
{
	double share = workload_read_share(w);
	if (share >= 1.0)
		return OP_READ;
	if (share <= 0.0)
		return OP_UPDATE;
	return rng_double(r) < share ? OP_READ : OP_UPDATE;
}

/* ---- keys ---- */

size_t key_name(uint64_t i, char out[KEY_NAME_MAX])
{
	int n = snprintf(out, KEY_NAME_MAX, "user%010llu", (unsigned long long)i);
	return (size_t)n;
}
