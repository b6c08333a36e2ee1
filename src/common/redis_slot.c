/* Redis Cluster key slots (redis_slot.h). The CRC is computed bit by bit from
 * its definition (XMODEM: poly 0x1021, init 0, MSB first): keys are short,
 * and no table means nothing to initialize or share between threads; the
 * test checks it against the cluster spec's values. */
#include "common/redis_slot.h"

#include <string.h>

uint16_t redis_crc16(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint16_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)(s[i] << 8);
		for (int k = 0; k < 8; k++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
	}
	return crc;
}

uint16_t redis_key_slot(const void *key, size_t n)
{
	const uint8_t *k = key;
	const uint8_t *open = memchr(k, '{', n);

	if (open != NULL) {
		size_t from = (size_t)(open - k) + 1;
		const uint8_t *close = memchr(k + from, '}', n - from);
		if (close != NULL && close > k + from)
			return redis_crc16(k + from, (size_t)(close - k) - from) & (REDIS_SLOTS - 1);
	}
	return redis_crc16(k, n) & (REDIS_SLOTS - 1);
}
