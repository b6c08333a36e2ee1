#include "docdb/varint.h"

#include <stdbool.h>

#include "common/check.h"
#include "docraft/error.h"

/* svarint (docdb-format.md §2.5): an n-byte encoding (n = 1..10) holds
 * 7n - 1 bits of magnitude. The first bits are the sign (1 = non-negative),
 * then n - 1 one-bits, then a zero bit, then the magnitude big-endian. A
 * negative number is the one's complement of every byte of the encoding of
 * its magnitude. For n <= 8 the whole encoding is one 8n-bit number:
 * ((2^n - 1) << 7n) | magnitude. n = 9 and 10 start with 0xFF followed by
 * 10xxxxxx / 110xxxxx. */

static inline unsigned svarint_len(uint64_t m)
{
	unsigned n = 1;
	m >>= 6;
	while (m != 0) {
		m >>= 7;
		n++;
	}
	return n;
}

static void svarint_put(struct buf *out, uint64_t m, bool negative)
{
	uint8_t b[10];
	unsigned n = svarint_len(m), i, k;
	uint8_t flip = negative ? 0xFF : 0x00;
	if (n <= 8) {
		/* Header: n + 1 bits "1...10" above 7n - 1 magnitude bits. */
		uint64_t x = m | ((UINT64_C(1) << n) - 1) << (7 * n);
		for (i = 0; i < n; i++)
			b[i] = (uint8_t)(x >> (8 * (n - 1 - i))) ^ flip;
	} else {
		b[0] = 0xFF ^ flip;
		if (n == 9)
			b[1] = (uint8_t)(0x80 | (m >> 56)) ^ flip; /* m < 2^62 */
		else
			b[1] = 0xC0 ^ flip; /* m < 2^64: the 5 spare bits are 0 */
		for (i = 2, k = n - 3; i < n; i++, k--)
			b[i] = (uint8_t)(m >> (8 * k)) ^ flip;
	}
	buf_append(out, b, n);
}

void svarint_append(struct buf *out, int64_t v)
{
	if (v >= 0) {
		if (v < 64) {
			buf_push(out, (uint8_t)(0x80 | v));
			return;
		}
		svarint_put(out, (uint64_t)v, false);
	} else {
		svarint_put(out, 0 - (uint64_t)v, true);
	}
}

void svarint_desc_append(struct buf *out, int64_t v)
{
	PRE(v != INT64_MIN);
	svarint_append(out, -v);
}

int svarint_decode(const uint8_t **p, const uint8_t *end, int64_t *out)
{
	const uint8_t *s = *p;
	size_t avail = (size_t)(end - s);
	uint8_t flip, b0, b1;
	unsigned n, i;
	uint64_t m;
	if (avail == 0)
		return DOCRAFT_ECORRUPT;
	flip = (s[0] & 0x80) ? 0x00 : 0xFF;
	b0 = s[0] ^ flip;
	if ((b0 & 0x40) == 0) { /* one byte, the common case */
		m = b0 & 0x3F;
		n = 1;
	} else if (b0 != 0xFF) {
		/* Count the one-bits after the sign bit. */
		n = (unsigned)__builtin_clz((unsigned)(uint8_t)~(b0 << 1) << 24) + 1;
		if (avail < n)
			return DOCRAFT_ECORRUPT;
		m = b0 & (0xFFu >> (n + 1));
		for (i = 1; i < n; i++)
			m = m << 8 | (uint8_t)(s[i] ^ flip);
	} else {
		if (avail < 2)
			return DOCRAFT_ECORRUPT;
		b1 = s[1] ^ flip;
		if ((b1 & 0x80) == 0) {
			n = 8;
			m = b1;
		} else if ((b1 & 0xC0) == 0x80) {
			n = 9;
			m = b1 & 0x3F;
		} else if (b1 == 0xC0) {
			n = 10; /* 11xxxxxx with any x set would exceed 64 bits */
			m = 0;
		} else {
			return DOCRAFT_ECORRUPT;
		}
		if (avail < n)
			return DOCRAFT_ECORRUPT;
		for (i = 2; i < n; i++)
			m = m << 8 | (uint8_t)(s[i] ^ flip);
	}
	/* One encoding per value (keys compare as bytes): the shortest, and no
	 * negative zero. */
	if (n != svarint_len(m) || (flip != 0 && m == 0))
		return DOCRAFT_ECORRUPT;
	if (flip == 0) {
		if (m > (uint64_t)INT64_MAX)
			return DOCRAFT_ECORRUPT;
		*out = (int64_t)m;
	} else {
		if (m > (uint64_t)INT64_MAX + 1)
			return DOCRAFT_ECORRUPT;
		*out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
	}
	*p = s + n;
	return 0;
}

/* uvarint: the number of leading one-bits of the first byte is the count of
 * extra bytes (n = 1..8 hold 7n bits). 0xFF starts 9 bytes (second byte
 * 0xxxxxxx, 63 bits) or 10 bytes (second byte exactly 0x80, then BE64). */

static inline unsigned uvarint_len(uint64_t v)
{
	unsigned n = 1;
	for (v >>= 7; v != 0; v >>= 7)
		n++;
	return n;
}

void uvarint_append(struct buf *out, uint64_t v)
{
	uint8_t b[10];
	unsigned n = uvarint_len(v), i;
	if (n == 1) {
		buf_push(out, (uint8_t)v);
		return;
	}
	if (n <= 8) {
		/* n - 1 one-bits and a zero bit above 7n value bits. */
		uint64_t x = v | ((UINT64_C(1) << (n - 1)) - 1) << (7 * n + 1);
		for (i = 0; i < n; i++)
			b[i] = (uint8_t)(x >> (8 * (n - 1 - i)));
	} else if (n == 9) {
		b[0] = 0xFF;
		for (i = 1; i < 9; i++)
			b[i] = (uint8_t)(v >> (8 * (8 - i)));
	} else {
		b[0] = 0xFF;
		b[1] = 0x80;
		for (i = 2; i < 10; i++)
			b[i] = (uint8_t)(v >> (8 * (9 - i)));
	}
	buf_append(out, b, n);
}

int uvarint_decode(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *s = *p;
	size_t avail = (size_t)(end - s);
	unsigned n, i;
	uint64_t v;
	if (avail == 0)
		return DOCRAFT_ECORRUPT;
	if ((s[0] & 0x80) == 0) {
		*out = s[0];
		*p = s + 1;
		return 0;
	}
	if (s[0] != 0xFF) {
		n = (unsigned)__builtin_clz((unsigned)(uint8_t)~s[0] << 24) + 1;
		if (avail < n)
			return DOCRAFT_ECORRUPT;
		v = s[0] & (0xFFu >> n);
		for (i = 1; i < n; i++)
			v = v << 8 | s[i];
	} else {
		if (avail < 2)
			return DOCRAFT_ECORRUPT;
		if ((s[1] & 0x80) == 0) {
			n = 9;
			v = s[1];
		} else if (s[1] == 0x80) {
			n = 10;
			v = 0;
		} else {
			return DOCRAFT_ECORRUPT;
		}
		if (avail < n)
			return DOCRAFT_ECORRUPT;
		for (i = 2; i < n; i++)
			v = v << 8 | s[i];
	}
	if (n != uvarint_len(v))
		return DOCRAFT_ECORRUPT; /* one encoding per value: the shortest */
	*out = v;
	*p = s + n;
	return 0;
}
