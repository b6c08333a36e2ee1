#include "common/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t cap;
	_Alignas(16) unsigned char data[];
};

#define BLOCK_MIN 4096

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	if (need == 0)
		need = 16;
	if (b == NULL || b->cap - b->used < need) {
		size_t cap = need > BLOCK_MIN ? need : BLOCK_MIN;
		if (b != NULL && b->cap * 2 > cap && b->cap < (1u << 20))
			cap = b->cap * 2 > need ? b->cap * 2 : need;
		b = malloc(sizeof *b + cap);
		if (b == NULL)
			PANIC("out of memory allocating an arena block of %zu bytes", cap);
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += need;
	return p;
}

void *arena_dup(struct arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n);
	if (n > 0)
		memcpy(q, p, n);
	return q;
}

void arena_reset(struct arena *a)
{
	struct arena_block *b = a->head;
	if (b == NULL)
		return;
	struct arena_block *rest = b->next;
	while (rest != NULL) {
		struct arena_block *next = rest->next;
		free(rest);
		rest = next;
	}
	b->next = NULL;
	b->used = 0;
}

void arena_free(struct arena *a)
{
	arena_reset(a);
	free(a->head);
	a->head = NULL;
}
