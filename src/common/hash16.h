/* The 16-bit partition hash (docdb-format.md §4.2): Bob Jenkins' lookup2,
 * 64-bit variant, seed 97, XOR-folded to 16 bits. The input is the raw
 * concatenation of the hash columns' values (see docdb/key.h
 * key_hash_components), never the DocKey bytes. Pure functions. */
#ifndef DOCRAFT_COMMON_HASH16_H
#define DOCRAFT_COMMON_HASH16_H

#include <stddef.h>
#include <stdint.h>

#define HASH16_SEED 97

uint64_t hash_jenkins64(const void *data, size_t len, uint64_t seed);

/* Incremental form of hash_jenkins64: feeding the same bytes in any number of
 * update calls gives the same result as one hash_jenkins64 call. Lets callers
 * hash a concatenation (key_hash_components) without a temporary buffer. The
 * state is plain data: no cleanup needed. */
struct hash_jenkins64_state {
	uint64_t a, b, c;
	uint64_t len;      /* bytes fed so far */
	size_t fill;       /* bytes pending in block */
	uint8_t block[24];
};
void hash_jenkins64_init(struct hash_jenkins64_state *s, uint64_t seed);
void hash_jenkins64_update(struct hash_jenkins64_state *s, const void *data, size_t len);
uint64_t hash_jenkins64_final(const struct hash_jenkins64_state *s);
uint16_t hash16_fold(uint64_t h);
/* hash16_fold(hash_jenkins64(data, len, HASH16_SEED)) */
uint16_t hash16(const void *data, size_t len);

/* Tablet i of n starts at floor(i * 65536 / n) (§4.3); n in 1..65535. */
uint16_t hash16_partition_start(uint32_t i, uint32_t n);

#endif
