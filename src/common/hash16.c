#include "common/hash16.h"

#include <string.h>

#include "common/check.h"

/* Bob Jenkins' lookup2 ("newhash"), 64-bit variant, as in gutil's
 * Hash64StringWithSeed (docdb-format.md §4.2). All arithmetic is uint64. */

#define JENKINS64_INIT UINT64_C(0xe08c1d668b756f82)

static inline void mix(uint64_t *pa, uint64_t *pb, uint64_t *pc)
{
	uint64_t a = *pa, b = *pb, c = *pc;
	a -= b; a -= c; a ^= c >> 43;
	b -= c; b -= a; b ^= a << 9;
	c -= a; c -= b; c ^= b >> 8;
	a -= b; a -= c; a ^= c >> 38;
	b -= c; b -= a; b ^= a << 23;
	c -= a; c -= b; c ^= b >> 5;
	a -= b; a -= c; a ^= c >> 35;
	b -= c; b -= a; b ^= a << 49;
	c -= a; c -= b; c ^= b >> 11;
	a -= b; a -= c; a ^= c >> 12;
	b -= c; b -= a; b ^= a << 18;
	c -= a; c -= b; c ^= b >> 22;
	*pa = a;
	*pb = b;
	*pc = c;
}

static inline uint64_t le64_load(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
	       (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* Adds the final 0..23 bytes and the length, then mixes; returns c. */
static uint64_t finish(uint64_t a, uint64_t b, uint64_t c, const uint8_t *s, size_t rest,
		       uint64_t total)
{
	size_t i;
	/* The reference passes the length as uint32. */
	c += (uint32_t)total;
	/* Bytes 16..22 go into c shifted by 8..56: its low byte is the length. */
	for (i = 16; i < rest; i++)
		c += (uint64_t)s[i] << (8 * (i - 15));
	for (i = 8; i < rest && i < 16; i++)
		b += (uint64_t)s[i] << (8 * (i - 8));
	for (i = 0; i < rest && i < 8; i++)
		a += (uint64_t)s[i] << (8 * i);
	mix(&a, &b, &c);
	return c;
}

uint64_t hash_jenkins64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *s = data;
	uint64_t a = JENKINS64_INIT, b = JENKINS64_INIT, c = seed;
	size_t left = len;
	while (left >= 24) {
		a += le64_load(s);
		b += le64_load(s + 8);
		c += le64_load(s + 16);
		mix(&a, &b, &c);
		s += 24;
		left -= 24;
	}
	return finish(a, b, c, s, left, len);
}

void hash_jenkins64_init(struct hash_jenkins64_state *s, uint64_t seed)
{
	s->a = s->b = JENKINS64_INIT;
	s->c = seed;
	s->len = 0;
	s->fill = 0;
}

void hash_jenkins64_update(struct hash_jenkins64_state *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->len += len;
	if (s->fill > 0) {
		size_t take = 24 - s->fill;
		if (take > len)
			take = len;
		memcpy(s->block + s->fill, p, take);
		s->fill += take;
		p += take;
		len -= take;
		if (s->fill < 24)
			return;
		s->a += le64_load(s->block);
		s->b += le64_load(s->block + 8);
		s->c += le64_load(s->block + 16);
		mix(&s->a, &s->b, &s->c);
		s->fill = 0;
	}
	while (len >= 24) {
		s->a += le64_load(p);
		s->b += le64_load(p + 8);
		s->c += le64_load(p + 16);
		mix(&s->a, &s->b, &s->c);
		p += 24;
		len -= 24;
	}
	if (len > 0) {
		memcpy(s->block, p, len);
		s->fill = len;
	}
}

uint64_t hash_jenkins64_final(const struct hash_jenkins64_state *s)
{
	return finish(s->a, s->b, s->c, s->block, s->fill, s->len);
}

uint16_t hash16_fold(uint64_t h)
{
	return (uint16_t)(((h >> 48) ^ 3 * (h >> 32) ^ 5 * (h >> 16) ^ 7 * (h & 0xffff)) & 0xffff);
}

uint16_t hash16(const void *data, size_t len)
{
	return hash16_fold(hash_jenkins64(data, len, HASH16_SEED));
}

uint16_t hash16_partition_start(uint32_t i, uint32_t n)
{
	PRE(n >= 1 && n <= 65535 && i < n);
	return (uint16_t)((uint64_t)i * 65536 / n);
}
