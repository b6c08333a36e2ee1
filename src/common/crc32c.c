/* CRC-32C: a slice-by-8 table (built once with pthread_once) and, on x86-64
 * CPUs with SSE4.2 (checked at run time), the crc32 instruction. Moved here
 * from tablet/copy_proto.c so that raftlog/ can use it too. */
#include "common/crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_hw_ok;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *b, size_t n)
{
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				     (uint32_t)b[3] << 24);
		uint32_t hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
			      (uint32_t)b[7] << 24;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		b += 8;
		n -= 8;
	}
	while (n-- > 0)
		crc = crc_table[0][(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *b,
							  size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		c = __builtin_ia32_crc32di(c, w);
		b += 8;
		n -= 8;
	}
	crc = (uint32_t)c;
	while (n-- > 0)
		crc = __builtin_ia32_crc32qi(crc, *b++);
	return crc;
}
#endif

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	crc = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
	if (crc_hw_ok)
		return ~crc_hw(crc, p, n);
#endif
	return ~crc_sw(crc, p, n);
}
