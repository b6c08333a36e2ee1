#include "common/lathist.h"

const uint64_t lathist_bounds_us[LATHIST_BUCKETS] = {
	50,     100,    250,    500,     1000,    2500,    5000,    10000,   25000,
	50000,  100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

void lathist_record(struct lathist *h, uint64_t us)
{
	unsigned i = 0;

	while (i < LATHIST_BUCKETS && us > lathist_bounds_us[i])
		i++;
	h->n[i]++;
	h->count++;
	h->sum_us += us;
}
