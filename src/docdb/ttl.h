/* The TTL rule of docdb-format.md §6.3, shared by reads and compaction GC:
 * a value expires ttl milliseconds after the hybrid time it counts from.
 * An explicit TTL (the value's own, or one inherited from a parent) counts
 * from its writer's time; without one, the table default counts from the
 * value's own write time; a TTL of 0 never expires. "Expired" means
 * strictly more than ttl ms have passed (physical time only). */
#ifndef DOCRAFT_DOCDB_TTL_H
#define DOCRAFT_DOCDB_TTL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hlc.h"

/* at: the read (or cutoff) time; has_exp/ttl_ms/from: the explicit TTL in
 * force, if any; write_ht: the value's own write time. */
static inline bool ttl_expired(uint64_t at, int64_t default_ttl_ms, bool has_exp, int64_t ttl_ms,
			       uint64_t from, uint64_t write_ht)
{
	if (!has_exp) {
		if (default_ttl_ms <= 0)
			return false;
		ttl_ms = default_ttl_ms;
		from = write_ht;
	}
	/* A TTL past what microseconds since the epoch can hold never ends
	 * (Redis accepts EXPIRE up to LLONG_MAX seconds' worth of ms). */
	if (ttl_ms <= 0 || (uint64_t)ttl_ms > UINT64_MAX / 1000)
		return false;
	return ht_physical(at) - ht_physical(from) > (uint64_t)ttl_ms * 1000;
}

/* The explicit TTL in force at a document path, inherited by what lies
 * below it (set false: none, the table default applies). */
struct ttl_scope {
	bool set;
	int64_t ttl_ms;
	uint64_t from; /* the hybrid time it counts from */
};

/* The scope below a value written at ht: the value's own TTL (has_ttl,
 * ttl_ms) counting from ht if it has one, else the parent's. */
static inline struct ttl_scope ttl_scope_below(struct ttl_scope parent, bool has_ttl,
					       int64_t ttl_ms, uint64_t ht)
{
	if (!has_ttl)
		return parent;
	return (struct ttl_scope){.set = true, .ttl_ms = ttl_ms, .from = ht};
}

/* ttl_expired for a value written at write_ht under scope s. */
static inline bool ttl_scope_expired(uint64_t at, int64_t default_ttl_ms,
				     const struct ttl_scope *s, uint64_t write_ht)
{
	return ttl_expired(at, default_ttl_ms, s->set, s->ttl_ms, s->from, write_ht);
}

#endif
