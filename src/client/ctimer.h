/* Client timers: one uv timer per client serves every backoff and
 * deadline of its calls, kept in a binary heap by due time. A struct
 * ctimer is embedded in the call that owns it, so arming one allocates
 * nothing and a call never has a libuv handle to close before it can be
 * freed.
 *
 * fire(t) runs on the loop, from the client's uv timer callback, once per
 * ctimer_start; it also runs for every armed timer when the client closes
 * (the owner then sees the client closing and finishes with
 * DOCRAFT_ECLOSED). Threading: the client's loop thread only. */
#ifndef DOCRAFT_CLIENT_CTIMER_H
#define DOCRAFT_CLIENT_CTIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docraft/docraft.h"

/* The struct holding member m at p. */
#define CONTAINER_OF(p, type, m) ((type *)(void *)((char *)(p) - offsetof(type, m)))

struct ctimer {
	uint64_t due; /* uv_now() ms */
	size_t idx;   /* heap index, SIZE_MAX when not armed */
	void (*fire)(struct ctimer *t);
};

void ctimer_init(struct ctimer *t, void (*fire)(struct ctimer *t));
/* (Re)arms t to fire at due (uv_now() ms; in the past: on the next timer
 * pass, never inside this call). */
void ctimer_start(docraft_client *c, struct ctimer *t, uint64_t due);
/* Disarms t; no-op when not armed. */
void ctimer_stop(docraft_client *c, struct ctimer *t);
static inline bool ctimer_armed(const struct ctimer *t) { return t->idx != SIZE_MAX; }
/* uv_now() of the client's loop. */
uint64_t client_now(const docraft_client *c);

#endif
