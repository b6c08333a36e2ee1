/* CRC-32C (Castagnoli, the iSCSI / ext4 / RocksDB polynomial): the check of
 * the remote-copy stream's files (tablet/copy_proto.c) and of the shared
 * Raft log's batches (raftlog/). SSE4.2 when the CPU has it (runtime
 * check), else a slice-by-8 table built once. Pure; any thread. */
#ifndef DOCRAFT_COMMON_CRC32C_H
#define DOCRAFT_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes at p, continuing from crc (0 to start):
 * crc32c(crc32c(0, a, x), b, y) == crc32c(0, a ++ b, x + y).
 * p may be NULL when n is 0. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

#endif
