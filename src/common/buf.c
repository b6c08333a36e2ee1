#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra;
	size_t cap;
	uint8_t *p;
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		PANIC("out of memory growing a buffer to %zu bytes", cap);
	b->data = p;
	b->cap = cap;
}

void buf_append_be16(struct buf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	buf_append(b, x, 2);
}

void buf_append_be32(struct buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	buf_append(b, x, 4);
}

void buf_append_be64(struct buf *b, uint64_t v)
{
	buf_append_be32(b, (uint32_t)(v >> 32));
	buf_append_be32(b, (uint32_t)v);
}

void buf_append_le32(struct buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	buf_append(b, x, 4);
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	/* Format straight into the free space; grow and redo when it is short. */
	buf_reserve(b, 64);
	va_start(ap, fmt);
	n = vsnprintf((char *)b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	ASSERT(n >= 0);
	if ((size_t)n >= b->cap - b->len) {
		buf_reserve(b, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

const char *buf_cstr(struct buf *b)
{
	buf_reserve(b, 1);
	b->data[b->len] = '\0';
	return (const char *)b->data;
}
