#include "common/histogram.h"

#include <string.h>

void histogram_init(struct histogram *h)
{
	memset(h, 0, sizeof *h);
	h->min = UINT64_MAX;
}

/* Values below 64 sit in power 0 exactly. Power p >= 1 holds
 * [2^(p+5), 2^(p+6)) in 64 sub-buckets of width 2^(p-1). */
static void locate(uint64_t v, unsigned *p, unsigned *s)
{
	unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
	if (bits <= 6) {
		*p = 0;
		*s = (unsigned)v;
		return;
	}
	*p = bits - 6;
	if (*p >= HISTOGRAM_POW) {
		*p = HISTOGRAM_POW - 1;
		*s = HISTOGRAM_SUB - 1;
		return;
	}
	*s = (unsigned)(v >> (*p - 1)) - HISTOGRAM_SUB; /* v >> (p-1) is in [64, 128) */
}

static uint64_t value_of(unsigned p, unsigned s)
{
	if (p == 0)
		return s;
	/* the middle of the bucket */
	return ((uint64_t)(s + HISTOGRAM_SUB) << (p - 1)) + (((uint64_t)1 << (p - 1)) >> 1);
}

void histogram_record(struct histogram *h, uint64_t v)
{
	unsigned p, s;
	locate(v, &p, &s);
	h->buckets[p][s]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void histogram_merge(struct histogram *into, const struct histogram *from)
{
	for (unsigned p = 0; p < HISTOGRAM_POW; p++)
		for (unsigned s = 0; s < HISTOGRAM_SUB; s++)
			into->buckets[p][s] += from->buckets[p][s];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

uint64_t histogram_quantile(const struct histogram *h, double q)
{
	uint64_t rank, seen = 0;
	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count);
	if (rank >= h->count)
		rank = h->count - 1;
	for (unsigned p = 0; p < HISTOGRAM_POW; p++)
		for (unsigned s = 0; s < HISTOGRAM_SUB; s++) {
			seen += h->buckets[p][s];
			if (seen > rank) {
				uint64_t v = value_of(p, s);
				if (v < h->min)
					v = h->min;
				if (v > h->max)
					v = h->max;
				return v;
			}
		}
	return h->max;
}
