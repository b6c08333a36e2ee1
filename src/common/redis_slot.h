/* Redis keys to docraft partitions: a key (or its {hash tag}) to a Redis
 * Cluster slot, and a slot to the 16-bit partition space of docraft's hash
 * partitioning (common/hash16.h, docs/docdb.md).
 *
 * The slot is Redis Cluster's: CRC16 (XMODEM: polynomial 0x1021, initial
 * value 0, no reflection) of the key, modulo 16384. When the key holds a
 * '{' followed later by a '}' with at least one byte between them, only
 * the bytes between the first '{' and the first '}' after it are hashed
 * (so "{user1}.name" and "{user1}.mail" share a slot).
 *
 * The partition value of slot s is s * 4 (REDIS_SLOT_SCALE). A Redis key
 * is stored under exactly one 16-bit hash value, so every key of one slot
 * lands in one tablet whatever the tablet boundaries; the mapping is
 * monotonic, so a tablet owning hash range [start, end) owns the slots
 * ceil(start / 4) .. ceil(end / 4) - 1, one contiguous range (what CLUSTER
 * SLOTS reports); and it spreads the 16384 slots evenly over the whole
 * 65536 space, so n tablets split evenly (hash16_partition_start) get
 * 16384 / n slots each, give or take one. YugabyteDB's YEDIS likewise
 * placed the slot inside its 16-bit hash range.
 *
 * Pure functions, any thread. Here in common/ (not redis/) so that the
 * routing client (src/client/redis.c) and the YEDIS engine use the same
 * mapping; redis/slot.h includes it. */
#ifndef DOCRAFT_COMMON_REDIS_SLOT_H
#define DOCRAFT_COMMON_REDIS_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define REDIS_SLOTS 16384u
#define REDIS_SLOT_SCALE 4u /* 65536 / REDIS_SLOTS */

/* CRC16-XMODEM of p[0..n), as Redis Cluster's crc16.c. */
uint16_t redis_crc16(const void *p, size_t n);

/* The slot of key[0..n): hash tag rule, then crc16 % 16384. */
uint16_t redis_key_slot(const void *key, size_t n);

/* The 16-bit partition value of slot (< REDIS_SLOTS). */
static inline uint16_t redis_slot_partition(uint16_t slot)
{
	return (uint16_t)(slot * REDIS_SLOT_SCALE);
}

/* The first slot whose partition value is >= h (REDIS_SLOTS when none):
 * a tablet [start, end) owns slots redis_partition_slot(start) ..
 * redis_partition_slot(end) - 1 (end 65536 gives REDIS_SLOTS). */
static inline uint32_t redis_partition_slot(uint32_t h)
{
	return (h + REDIS_SLOT_SCALE - 1) / REDIS_SLOT_SCALE;
}

#endif
