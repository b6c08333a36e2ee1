/* A growable byte buffer, the currency of every encoder.
 *
 * Ownership: the buffer owns data; buf_free releases it. Allocation failure
 * is fatal (PANIC), as in redis' zmalloc: encoders never fail on memory.
 * Not thread-safe; one owner at a time. */
#ifndef DOCRAFT_COMMON_BUF_H
#define DOCRAFT_COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

#define BUF_INIT {NULL, 0, 0}

static inline void buf_init(struct buf *b) { b->data = NULL; b->len = b->cap = 0; }
void buf_free(struct buf *b);
static inline void buf_reset(struct buf *b) { b->len = 0; }
/* Ensures room for extra more bytes. */
void buf_reserve(struct buf *b, size_t extra);

static inline void buf_append(struct buf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n)
		buf_reserve(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}
static inline void buf_push(struct buf *b, uint8_t c)
{
	if (b->cap == b->len)
		buf_reserve(b, 1);
	b->data[b->len++] = c;
}
void buf_append_be16(struct buf *b, uint16_t v);
void buf_append_be32(struct buf *b, uint32_t v);
void buf_append_be64(struct buf *b, uint64_t v);
void buf_append_le32(struct buf *b, uint32_t v);
/* printf-style append (text, not NUL-terminated in len). */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes data NUL-terminated (not counted in len) and returns it as a string. */
const char *buf_cstr(struct buf *b);

static inline uint16_t be16_load(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t be32_load(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be64_load(const uint8_t *p)
{
	return (uint64_t)be32_load(p) << 32 | be32_load(p + 4);
}
static inline void be64_store(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint32_t le32_load(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
/* Reads a field written as a BE32 length and that many bytes at *p, never
 * past end: *field and *len get it and *p moves past it; false (nothing moved)
 * when it does not fit. */
static inline bool be32_field_take(const uint8_t **p, const uint8_t *end, const uint8_t **field,
				   size_t *len)
{
	uint32_t n;
	if (end - *p < 4)
		return false;
	n = be32_load(*p);
	if ((size_t)(end - *p) - 4 < n)
		return false;
	*field = *p + 4;
	*len = n;
	*p += 4 + (size_t)n;
	return true;
}

#endif
