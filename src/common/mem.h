/* Allocation that cannot fail: out of memory is PANIC (docs/style.md).
 *
 * Every layer allocates through these instead of its own xmalloc; raft's
 * own buffers (raft_malloc) and RocksDB's (rocksdb_free) keep their
 * allocators. Any thread. */
#ifndef DOCRAFT_COMMON_MEM_H
#define DOCRAFT_COMMON_MEM_H

#include <stddef.h>

/* malloc(n) (n 0 allowed: a unique pointer); never NULL. */
void *xmalloc(size_t n);
/* calloc(1, n): zeroed; never NULL. */
void *xzalloc(size_t n);
/* calloc(count, size), with the overflow check calloc does; never NULL. */
void *xcalloc(size_t count, size_t size);
/* realloc(p, n); never NULL (n 0 keeps a unique pointer). */
void *xrealloc(void *p, size_t n);
/* strdup(s); s must not be NULL; never NULL. */
char *xstrdup(const char *s);
/* The first n bytes of s (fewer at a NUL) as a new string; never NULL. */
char *xstrndup(const char *s, size_t n);

/* Makes array p (*cap elements of elem bytes) hold at least need
 * elements: returns p when it already does, else the array grown to
 * max(2 * *cap, need, min) elements (the contents kept, the new tail
 * uninitialized) with *cap updated. The usual call appends one:
 *   a = xgrow(a, &cap, n + 1, sizeof *a, 16); a[n++] = x; */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem, size_t min);

#endif
