/* Hybrid logical clock (docdb-format.md §3.3).
 *
 * A HybridTime is a uint64: (physical microseconds since the Unix epoch << 12)
 * | logical (12 bits). hlc_now never returns the same or a smaller value twice
 * for one clock; hlc_update folds in a time seen on a message so causality is
 * kept across nodes.
 *
 * Threading: a struct hlc is owned by one thread (a tablet's loop); callers
 * serialise access. */
#ifndef DOCRAFT_COMMON_HLC_H
#define DOCRAFT_COMMON_HLC_H

#include <stdbool.h>
#include <stdint.h>

#define HT_LOGICAL_BITS 12
#define HT_LOGICAL_MASK ((UINT64_C(1) << HT_LOGICAL_BITS) - 1)
#define HT_MIN UINT64_C(0)
#define HT_INITIAL UINT64_C(1)
#define HT_INVALID (UINT64_MAX - 1)
#define HT_MAX UINT64_MAX

static inline uint64_t ht_make(uint64_t micros, uint32_t logical)
{
	return micros << HT_LOGICAL_BITS | (logical & HT_LOGICAL_MASK);
}
static inline uint64_t ht_physical(uint64_t ht) { return ht >> HT_LOGICAL_BITS; }
static inline uint32_t ht_logical(uint64_t ht) { return (uint32_t)(ht & HT_LOGICAL_MASK); }
/* ht plus a number of microseconds, saturating at HT_MAX. */
uint64_t ht_add_micros(uint64_t ht, uint64_t micros);

/* Physical clock source: microseconds since the Unix epoch. */
typedef uint64_t (*hlc_clock_fn)(void *arg);

/* Default physical clock: CLOCK_REALTIME in microseconds. */
uint64_t hlc_wall_clock(void *arg);

struct hlc {
	uint64_t last;          /* last HybridTime handed out or seen */
	uint64_t max_skew_us;   /* refuse remote times further ahead than this */
	hlc_clock_fn clock;
	void *clock_arg;
};

/* clock may be NULL for hlc_wall_clock. max_skew_us: e.g. 500000. */
void hlc_init(struct hlc *c, uint64_t max_skew_us, hlc_clock_fn clock, void *clock_arg);

/* A new HybridTime strictly greater than every earlier result of hlc_now and
 * every time accepted by hlc_update. */
uint64_t hlc_now(struct hlc *c);

/* Folds in a remote time. Returns DOCRAFT_ECLOCKSKEW (and leaves the clock
 * alone) when remote is more than max_skew_us ahead of the local physical
 * clock; errmsg (may be NULL) says by how much. */
int hlc_update(struct hlc *c, uint64_t remote, char *errmsg);

/* Folds in a time this clock must stay above whatever its distance from
 * the physical clock: a write the tablet already applied (its next writes
 * must be newer). No skew check; hlc_update is for times from elsewhere. */
void hlc_observe(struct hlc *c, uint64_t ht);

/* The largest time handed out or seen so far (no advance). */
static inline uint64_t hlc_last(const struct hlc *c) { return c->last; }

#endif
