/* A latency histogram with fixed Prometheus-style buckets: a count per
 * upper bound (50 us .. 10 s, then +Inf), the sum and the count, in
 * 168 bytes, so that every RPC method and every tablet can keep one.
 * Recorded in microseconds; /metrics (http/metrics.h) writes it as a
 * cumulative Prometheus histogram in seconds. common/histogram.h is the
 * precise one (1.6% error, 21 KiB) for benchmarks.
 *
 * Threading: none; the owner's thread (a server's loop) records and reads. */
#ifndef DOCRAFT_COMMON_LATHIST_H
#define DOCRAFT_COMMON_LATHIST_H

#include <stdint.h>

#define LATHIST_BUCKETS 17 /* finite bounds; one more slot counts the rest (+Inf) */

/* The upper bounds in microseconds, ascending. */
extern const uint64_t lathist_bounds_us[LATHIST_BUCKETS];

struct lathist {
	uint64_t count;
	uint64_t sum_us;
	uint32_t n[LATHIST_BUCKETS + 1]; /* per bucket, not cumulative; n[LATHIST_BUCKETS]: above
					  * the last bound */
};

/* Records one value (us). h must be zeroed first (memset or = {0}). */
void lathist_record(struct lathist *h, uint64_t us);

#endif
