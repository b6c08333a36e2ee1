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
uint16_t hash16_fold(uint64_t h);
/* hash16_fold(hash_jenkins64(data, len, HASH16_SEED)) */
uint16_t hash16(const void *data, size_t len);

/* Tablet i of n starts at floor(i * 65536 / n) (§4.3); n in 1..65535. */
uint16_t hash16_partition_start(uint32_t i, uint32_t n);

#endif
