#include "common/hlc.h"

#include <inttypes.h>
#include <time.h>

#include "common/check.h"
#include "common/err.h"

/* The largest physical time that fits above the logical bits. */
#define PHYSICAL_MAX (HT_MAX >> HT_LOGICAL_BITS)

uint64_t ht_add_micros(uint64_t ht, uint64_t micros)
{
	/* micros << 12 must fit in what is left above ht; this also keeps the
	 * shift itself from overflowing. */
	if (micros > (HT_MAX - ht) >> HT_LOGICAL_BITS)
		return HT_MAX;
	return ht + (micros << HT_LOGICAL_BITS);
}

uint64_t hlc_wall_clock(void *arg)
{
	struct timespec ts;
	(void)arg;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		PANIC("clock_gettime(CLOCK_REALTIME) failed");
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void hlc_init(struct hlc *c, uint64_t max_skew_us, hlc_clock_fn clock, void *clock_arg)
{
	c->last = HT_MIN;
	c->max_skew_us = max_skew_us;
	c->clock = clock != NULL ? clock : hlc_wall_clock;
	c->clock_arg = clock_arg;
}

static uint64_t physical_now(const struct hlc *c)
{
	uint64_t us = c->clock(c->clock_arg);
	/* Only a broken clock source gets here (2^52 µs is the year 2112). */
	if (us > PHYSICAL_MAX)
		PANIC("physical clock reads %" PRIu64 " us, beyond the hybrid time range", us);
	return us;
}

uint64_t hlc_now(struct hlc *c)
{
	uint64_t us = physical_now(c);
	uint64_t ht;
	if (us > ht_physical(c->last)) {
		ht = ht_make(us, 0);
	} else {
		/* Clock frozen or behind: bump the logical part; a logical
		 * overflow carries into the physical part, which is still a
		 * larger HybridTime. HT_INVALID and HT_MAX are reserved. */
		if (c->last >= HT_INVALID - 1)
			PANIC("hybrid clock exhausted at %" PRIu64, c->last);
		ht = c->last + 1;
	}
	POST(ht > c->last);
	c->last = ht;
	return ht;
}

void hlc_observe(struct hlc *c, uint64_t ht)
{
	if (ht > c->last)
		c->last = ht;
}

int hlc_update(struct hlc *c, uint64_t remote, char *errmsg)
{
	uint64_t us = physical_now(c);
	uint64_t remote_us = ht_physical(remote);
	/* Written as a difference so a huge max_skew_us cannot overflow. */
	if (remote_us > us && remote_us - us > c->max_skew_us)
		return err_set(errmsg, DOCRAFT_ECLOCKSKEW,
			       "remote hybrid time %" PRIu64 " rejected: remote time is %" PRIu64
			       " us ahead of local clock, max skew %" PRIu64 " us",
			       remote, remote_us - us, c->max_skew_us);
	hlc_observe(c, remote);
	return 0;
}
