/* The remote-copy stream's wire format: the pure encoders of the frames the
 * source writes (design note and format: top of copy_proto.c). The decoder
 * the destination uses, copy_frame_decode, and copy_crc32c are public
 * (remote_copy.h) because the fuzz target and the tests call them.
 *
 * Internal to src/tablet/copy_*.c. Pure: no I/O, no allocation, no state;
 * any thread. Each encoder writes into caller memory of the size it names
 * and returns the frame's length. */
#ifndef DOCRAFT_TABLET_COPY_PROTO_H
#define DOCRAFT_TABLET_COPY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tablet/remote_copy.h"

/* Largest frame header: F with the longest name. */
#define COPY_HDR_MAX (1 + 2 + COPY_NAME_MAX + 8)
/* Length of the E frame. */
#define COPY_END_LEN (1 + 4 + 8 + 8 + 8)
/* Largest X frame. */
#define COPY_ERROR_FRAME_MAX (4 + COPY_MSG_MAX)

/* Whether s[0..n) may name a file of the stream: 1..COPY_NAME_MAX
 * printable ASCII bytes without '/', neither "." nor "..". */
bool copy_proto_valid_name(const char *s, size_t n);

/* F: file name (valid, NUL-terminated) begins, size bytes long. out holds
 * COPY_HDR_MAX bytes. */
size_t copy_proto_encode_file(uint8_t *out, const char *name, uint64_t size);

/* D header: len (1..COPY_CHUNK_MAX) payload bytes follow, which the caller
 * sends after these 5 bytes. */
size_t copy_proto_encode_data(uint8_t *out, uint32_t len);

/* C: the file ends, crc its CRC-32C. 5 bytes. */
size_t copy_proto_encode_crc(uint8_t *out, uint32_t crc);

/* E: the transfer ends with nfiles files of total bytes, and the copy's
 * applied marker. COPY_END_LEN bytes. */
size_t copy_proto_encode_end(uint8_t *out, uint32_t nfiles, uint64_t total,
			     uint64_t applied_index, uint64_t applied_ht);

/* X: failure code (a DOCRAFT_E* code) and msg (NUL-terminated; cut at
 * COPY_MSG_MAX bytes). out holds COPY_ERROR_FRAME_MAX bytes. */
size_t copy_proto_encode_error(uint8_t *out, int code, const char *msg);

#endif
