#include "common/hlc.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "test.h"

/* 2026-11-21T19:40:00Z in microseconds. */
#define T0 UINT64_C(1795290000000000)
#define SKEW UINT64_C(500000)

struct fake_clock {
	uint64_t us;
	unsigned calls;
};

static uint64_t fake_read(void *arg)
{
	struct fake_clock *fc = arg;
	fc->calls++;
	return fc->us;
}

TEST(ht_make_round_trips)
{
	uint64_t ht = ht_make(T0, 17);
	CHECK_EQ_U64(ht_physical(ht), T0);
	CHECK_EQ_INT(ht_logical(ht), 17);
	CHECK_EQ_U64(ht, T0 << 12 | 17);

	ht = ht_make(T0, (uint32_t)HT_LOGICAL_MASK);
	CHECK_EQ_U64(ht_physical(ht), T0);
	CHECK_EQ_INT(ht_logical(ht), 4095);
	/* The logical part is masked to 12 bits, never spilling over. */
	CHECK_EQ_U64(ht_make(T0, 4096 + 3), ht_make(T0, 3));

	CHECK_EQ_U64(ht_physical(HT_MAX), HT_MAX >> 12);
	CHECK_EQ_INT(ht_logical(HT_MAX), 4095);
	CHECK_EQ_U64(ht_make(0, 0), HT_MIN);
	CHECK_EQ_U64(ht_make(0, 1), HT_INITIAL);

	/* Ordering: physical first, then logical. */
	CHECK(ht_make(T0, 4095) < ht_make(T0 + 1, 0));
	CHECK(ht_make(T0, 1) < ht_make(T0, 2));
	CHECK(HT_INITIAL > HT_MIN);
	CHECK(HT_INVALID < HT_MAX);
}

TEST(ht_add_micros_adds_and_saturates)
{
	uint64_t ht = ht_make(T0, 9);
	CHECK_EQ_U64(ht_add_micros(ht, 0), ht);
	CHECK_EQ_U64(ht_add_micros(ht, 250), ht_make(T0 + 250, 9));

	/* Exactly reaching HT_MAX is not saturation, one more is. */
	uint64_t top = HT_MAX - (UINT64_C(5) << 12);
	CHECK_EQ_U64(ht_add_micros(top, 5), HT_MAX);
	CHECK_EQ_U64(ht_add_micros(top, 6), HT_MAX);
	CHECK_EQ_U64(ht_add_micros(top, 4), HT_MAX - (UINT64_C(1) << 12));

	CHECK_EQ_U64(ht_add_micros(HT_MAX, 1), HT_MAX);
	CHECK_EQ_U64(ht_add_micros(HT_MAX - 1, 1), HT_MAX);
	CHECK_EQ_U64(ht_add_micros(ht, UINT64_MAX), HT_MAX);
	/* micros << 12 alone would overflow a uint64. */
	CHECK_EQ_U64(ht_add_micros(0, UINT64_C(1) << 52), HT_MAX);
	CHECK_EQ_U64(ht_add_micros(0, (UINT64_C(1) << 52) - 1), ht_make((UINT64_C(1) << 52) - 1, 0));
	CHECK_EQ_U64(ht_add_micros(1, (UINT64_C(1) << 52) - 1), HT_MAX - 4094);
}

TEST(init_sets_fields)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	hlc_init(&c, SKEW, fake_read, &fc);
	CHECK_EQ_U64(hlc_last(&c), HT_MIN);
	CHECK_EQ_U64(c.max_skew_us, SKEW);
	CHECK(c.clock == fake_read);
	CHECK(c.clock_arg == &fc);

	hlc_init(&c, SKEW, NULL, NULL);
	CHECK(c.clock == hlc_wall_clock);
}

TEST(frozen_clock_increments_logical)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	hlc_init(&c, SKEW, fake_read, &fc);
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0, 0));
	for (uint32_t i = 1; i < 100; i++) {
		uint64_t ht = hlc_now(&c);
		CHECK_EQ_U64(ht, ht_make(T0, i));
		CHECK_EQ_U64(hlc_last(&c), ht);
	}
	CHECK_EQ_INT(fc.calls, 100);
}

TEST(logical_overflow_carries_into_physical)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	uint64_t prev = 0, ht = 0;
	hlc_init(&c, SKEW, fake_read, &fc);
	for (int i = 0; i < 4096; i++) {
		ht = hlc_now(&c);
		CHECK(ht > prev);
		prev = ht;
	}
	CHECK_EQ_U64(ht, ht_make(T0, 4095));
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 1, 0));
	/* The real clock catching up to the borrowed microsecond does not
	 * reset the logical part: that would repeat a time. */
	fc.us = T0 + 1;
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 1, 1));
	fc.us = T0 + 2;
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 2, 0));
}

TEST(backwards_clock_stays_monotonic)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	uint64_t prev;
	hlc_init(&c, SKEW, fake_read, &fc);
	hlc_now(&c);
	prev = hlc_now(&c);
	CHECK_EQ_U64(prev, ht_make(T0, 1));
	for (int step = 1; step <= 50; step++) {
		fc.us = T0 - (uint64_t)step * 1000; /* NTP steps the clock back */
		uint64_t ht = hlc_now(&c);
		CHECK_EQ_U64(ht, prev + 1);
		prev = ht;
	}
	CHECK_EQ_U64(prev, ht_make(T0, 51));
	/* Back to the old time: still behind last, logical keeps counting. */
	fc.us = T0;
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0, 52));
}

TEST(physical_jump_resets_logical)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	hlc_init(&c, SKEW, fake_read, &fc);
	for (int i = 0; i < 6; i++)
		hlc_now(&c);
	CHECK_EQ_U64(hlc_last(&c), ht_make(T0, 5));
	fc.us = T0 + 1;
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 1, 0));
	fc.us = T0 + 3600 * UINT64_C(1000000);
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 3600 * UINT64_C(1000000), 0));
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 3600 * UINT64_C(1000000), 1));
}

TEST(update_ahead_within_skew_advances)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	uint64_t remote = ht_make(T0 + 100000, 7);
	hlc_init(&c, SKEW, fake_read, &fc);
	hlc_now(&c);
	CHECK_OK_MSG(hlc_update(&c, remote, errmsg), errmsg);
	CHECK_EQ_U64(hlc_last(&c), remote);
	uint64_t ht = hlc_now(&c);
	CHECK(ht > remote);
	CHECK_EQ_U64(ht, ht_make(T0 + 100000, 8));

	/* Once the local clock passes the remote time, logical restarts. */
	fc.us = T0 + 100001;
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + 100001, 0));
}

TEST(update_behind_keeps_clock)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	hlc_init(&c, SKEW, fake_read, &fc);
	for (int i = 0; i < 4; i++)
		hlc_now(&c);
	uint64_t last = hlc_last(&c);
	CHECK_OK(hlc_update(&c, ht_make(T0 - 10, 100), NULL));
	CHECK_EQ_U64(hlc_last(&c), last);
	CHECK_OK(hlc_update(&c, last, NULL));
	CHECK_EQ_U64(hlc_last(&c), last);
	CHECK_OK(hlc_update(&c, HT_MIN, NULL));
	CHECK_EQ_U64(hlc_last(&c), last);
	CHECK_EQ_U64(hlc_now(&c), last + 1);
}

TEST(update_at_skew_boundary)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	hlc_init(&c, SKEW, fake_read, &fc);
	/* Exactly max_skew ahead is accepted, whatever the logical part. */
	uint64_t edge = ht_make(T0 + SKEW, 4095);
	CHECK_OK_MSG(hlc_update(&c, edge, errmsg), errmsg);
	CHECK_EQ_U64(hlc_last(&c), edge);
	CHECK_EQ_INT(hlc_update(&c, ht_make(T0 + SKEW + 1, 0), errmsg), DOCRAFT_ECLOCKSKEW);
	CHECK_EQ_U64(hlc_last(&c), edge);
	CHECK_EQ_U64(hlc_now(&c), ht_make(T0 + SKEW + 1, 0));
}

TEST(update_beyond_skew_is_refused)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	hlc_init(&c, SKEW, fake_read, &fc);
	hlc_now(&c);
	hlc_now(&c);
	uint64_t last = hlc_last(&c);

	int rv = hlc_update(&c, ht_make(T0 + 2000000, 0), errmsg);
	CHECK_EQ_INT(rv, DOCRAFT_ECLOCKSKEW);
	test_note("errmsg: %s", errmsg);
	CHECK_MSG(strstr(errmsg, "2000000 us ahead of local clock") != NULL, "errmsg: %s", errmsg);
	CHECK_MSG(strstr(errmsg, "max skew 500000 us") != NULL, "errmsg: %s", errmsg);
	CHECK_EQ_U64(hlc_last(&c), last);
	CHECK_EQ_U64(hlc_now(&c), last + 1);

	/* A NULL errmsg still reports the code. */
	CHECK_EQ_INT(hlc_update(&c, ht_make(T0 + 2000000, 0), NULL), DOCRAFT_ECLOCKSKEW);
	/* The sentinels are far beyond any skew. */
	CHECK_EQ_INT(hlc_update(&c, HT_MAX, NULL), DOCRAFT_ECLOCKSKEW);
	CHECK_EQ_INT(hlc_update(&c, HT_INVALID, NULL), DOCRAFT_ECLOCKSKEW);
	CHECK_EQ_U64(hlc_last(&c), last + 1);

	/* With time the same remote value comes within the skew. */
	fc.us = T0 + 1500000;
	CHECK_OK_MSG(hlc_update(&c, ht_make(T0 + 2000000, 0), errmsg), errmsg);
	CHECK_EQ_U64(hlc_last(&c), ht_make(T0 + 2000000, 0));
}

TEST(update_huge_skew_does_not_overflow)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	hlc_init(&c, UINT64_MAX, fake_read, &fc);
	uint64_t far = ht_make(UINT64_C(1) << 51, 0);
	CHECK_OK(hlc_update(&c, far, NULL));
	CHECK_EQ_U64(hlc_last(&c), far);
	CHECK_EQ_U64(hlc_now(&c), far + 1);

	/* Zero skew: only times not ahead of the local clock. */
	hlc_init(&c, 0, fake_read, &fc);
	CHECK_OK(hlc_update(&c, ht_make(T0, 4095), NULL));
	CHECK_EQ_INT(hlc_update(&c, ht_make(T0 + 1, 0), NULL), DOCRAFT_ECLOCKSKEW);
}

TEST(wall_clock_is_sane)
{
	/* Between 2020-01-01 and 2100-01-01. */
	uint64_t us = hlc_wall_clock(NULL);
	CHECK(us > UINT64_C(1577836800) * 1000000);
	CHECK(us < UINT64_C(4102444800) * 1000000);

	struct hlc c;
	hlc_init(&c, SKEW, NULL, NULL);
	uint64_t before = hlc_wall_clock(NULL);
	uint64_t ht = hlc_now(&c);
	uint64_t after = hlc_wall_clock(NULL);
	CHECK(ht_physical(ht) >= before);
	CHECK(ht_physical(ht) <= after);
}

TEST(real_clock_strictly_increasing)
{
	struct hlc c;
	uint64_t prev, ht;
	hlc_init(&c, SKEW, NULL, NULL);
	prev = hlc_now(&c);
	for (int i = 0; i < 100000; i++) {
		ht = hlc_now(&c);
		CHECK_MSG(ht > prev, "step %d: %" PRIu64 " <= %" PRIu64, i, ht, prev);
		prev = ht;
	}
	CHECK_EQ_U64(hlc_last(&c), prev);
}

/* hlc_observe: an applied time is folded in whatever its distance (the
 * tablet's writes must follow it), never backwards. */
TEST(observe_ignores_skew_and_never_goes_back)
{
	struct fake_clock fc = {T0, 0};
	struct hlc c;
	uint64_t far = ht_make(T0 + 10 * SKEW, 5);
	hlc_init(&c, SKEW, fake_read, &fc);
	CHECK_EQ_INT(hlc_update(&c, far, NULL), DOCRAFT_ECLOCKSKEW);
	CHECK(hlc_last(&c) < far);
	hlc_observe(&c, far);
	CHECK_EQ_U64(hlc_last(&c), far);
	hlc_observe(&c, ht_make(T0, 0));
	CHECK_EQ_U64(hlc_last(&c), far);
	CHECK_EQ_U64(hlc_now(&c), far + 1);
}

TEST_MAIN(T(ht_make_round_trips), T(ht_add_micros_adds_and_saturates), T(init_sets_fields),
	  T(frozen_clock_increments_logical), T(logical_overflow_carries_into_physical),
	  T(backwards_clock_stays_monotonic), T(physical_jump_resets_logical),
	  T(update_ahead_within_skew_advances), T(update_behind_keeps_clock),
	  T(update_at_skew_boundary), T(update_beyond_skew_is_refused),
	  T(update_huge_skew_does_not_overflow), T(wall_clock_is_sane),
	  T(observe_ignores_skew_and_never_goes_back),
	  T(real_clock_strictly_increasing))
