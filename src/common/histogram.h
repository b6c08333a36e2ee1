/* A latency histogram with bounded relative error (HDR-style): values are
 * bucketed by their power of two and 64 linear sub-buckets within it, so
 * any recorded value is reported within 1/64 (1.6%) of itself, from 1 to
 * 2^40 units, in a fixed 21 KiB. Record in microseconds (or nanoseconds).
 * Not thread-safe; merge per-thread histograms with histogram_merge. */
#ifndef DOCRAFT_COMMON_HISTOGRAM_H
#define DOCRAFT_COMMON_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB 64
#define HISTOGRAM_POW 41

struct histogram {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	uint64_t sum;
	uint32_t buckets[HISTOGRAM_POW][HISTOGRAM_SUB];
};

void histogram_init(struct histogram *h);
void histogram_record(struct histogram *h, uint64_t v);
void histogram_merge(struct histogram *into, const struct histogram *from);
/* The value at quantile q (0..1), e.g. 0.99; 0 when empty. */
uint64_t histogram_quantile(const struct histogram *h, double q);

#endif
