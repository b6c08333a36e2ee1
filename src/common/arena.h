/* A bump allocator for short-lived decoded data (key components of one row,
 * one scan page). Everything allocated is released at once by arena_reset or
 * arena_free. Allocation failure is fatal (PANIC). Not thread-safe. */
#ifndef DOCRAFT_COMMON_ARENA_H
#define DOCRAFT_COMMON_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;
};

#define ARENA_INIT {NULL}

static inline void arena_init(struct arena *a) { a->head = NULL; }
/* Returns 16-byte aligned memory valid until the next reset/free. */
void *arena_alloc(struct arena *a, size_t n);
/* Copies n bytes into the arena. */
void *arena_dup(struct arena *a, const void *p, size_t n);
/* Frees every block but the first; keeps it for reuse. */
void arena_reset(struct arena *a);
void arena_free(struct arena *a);

#endif
