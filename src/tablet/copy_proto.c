/* The remote-copy stream: wire format, its pure encoders and decoder, and
 * the CRC-32C that checks every file.
 *
 * Design note.
 *
 * The destination opens a TCP connection to the source server's one port
 * and sends a COPY preamble naming the tablet (listener.h); after that it
 * sends nothing. The source answers with frames, all integers big endian:
 *
 *   'K'                                         keepalive: checkpoint still
 *                                               being written (every
 *                                               COPY_KEEPALIVE_MS)
 *   'F' u16 name_len, name, u64 size            a file begins
 *   'D' u32 len (1..COPY_CHUNK_MAX), len bytes  the next bytes of that file
 *   'C' u32 crc32c                              the file ends; CRC-32C of its
 *                                               whole content
 *   'E' u32 nfiles, u64 total_bytes,            success: the checkpoint's
 *       u64 applied_index, u64 applied_ht       applied marker; then close
 *   'X' u8 code, u16 len (<= 1024), message     failure (a DOCRAFT_E* code);
 *                                               then close
 *
 * A file is F, D..., C; files follow each other; the stream ends with E or
 * X. Names are 1..255 printable ASCII bytes without '/', never "." or "..".
 *
 * This file only turns frames into bytes and back: copy_source.c decides
 * what to send, copy_dest.c checks what the decoder returns against the
 * stream (order of frames, sizes, CRCs, the end's totals). The decoder
 * reads only the bytes it is given and is fuzzed
 * (tests/fuzz/fuzz_copy_stream.c): every header it accepts re-encodes to
 * the same bytes, and any shorter prefix of a header asks for more.
 *
 * Integrity: transport and disk-to-disk corruption are caught by the
 * per-file size and CRC-32C (computed from the bytes the source read and the
 * bytes the destination wrote); a checkpoint that is not a consistent store
 * (missing or truncated file) fails to open; RocksDB's own block checksums
 * are then verified on every read of the copy (CRC-32C: common/crc32c.h). */
#include "tablet/copy_proto.h"

#include <inttypes.h>
#include <string.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/err.h"

/* ---- CRC-32C ---- */

uint32_t copy_crc32c(uint32_t crc, const void *p, size_t n)
{
	return crc32c(crc, p, n);
}

/* ---- encoders ---- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

bool copy_proto_valid_name(const char *s, size_t n)
{
	if (n == 0 || n > COPY_NAME_MAX)
		return false;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '/')
			return false;
	return true;
}

size_t copy_proto_encode_file(uint8_t *out, const char *name, uint64_t size)
{
	size_t len = strlen(name);

	out[0] = 'F';
	put_be16(out + 1, (uint16_t)len);
	memcpy(out + 3, name, len);
	put_be64(out + 3 + len, size);
	return 3 + len + 8;
}

size_t copy_proto_encode_data(uint8_t *out, uint32_t len)
{
	out[0] = 'D';
	put_be32(out + 1, len);
	return 5;
}

size_t copy_proto_encode_crc(uint8_t *out, uint32_t crc)
{
	out[0] = 'C';
	put_be32(out + 1, crc);
	return 5;
}

size_t copy_proto_encode_end(uint8_t *out, uint32_t nfiles, uint64_t total,
			     uint64_t applied_index, uint64_t applied_ht)
{
	out[0] = 'E';
	put_be32(out + 1, nfiles);
	put_be64(out + 5, total);
	put_be64(out + 13, applied_index);
	put_be64(out + 21, applied_ht);
	return COPY_END_LEN;
}

size_t copy_proto_encode_error(uint8_t *out, int code, const char *msg)
{
	size_t len = strnlen(msg, COPY_MSG_MAX);

	out[0] = 'X';
	out[1] = (uint8_t)code;
	put_be16(out + 2, (uint16_t)len);
	memcpy(out + 4, msg, len);
	return 4 + len;
}

/* ---- decoder ---- */

int copy_frame_decode(const uint8_t *p, size_t avail, struct copy_frame *out, char *errmsg)
{
	size_t need;
	uint16_t n;

	if (avail == 0)
		return 0;
	out->type = p[0];
	switch (p[0]) {
	case 'K':
		return 1;
	case 'F':
		if (avail < 3)
			return 0;
		n = be16_load(p + 1);
		if (n == 0 || n > COPY_NAME_MAX) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "file name of %u bytes", n);
			return -DOCRAFT_ECORRUPT;
		}
		need = 3 + (size_t)n + 8;
		if (avail < need)
			return 0;
		if (!copy_proto_valid_name((const char *)p + 3, n)) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "file name");
			return -DOCRAFT_ECORRUPT;
		}
		memcpy(out->name, p + 3, n);
		out->name[n] = '\0';
		out->size = be64_load(p + 3 + n);
		return (int)need;
	case 'D':
		if (avail < 5)
			return 0;
		out->len = be32_load(p + 1);
		if (out->len == 0 || out->len > COPY_CHUNK_MAX) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "data frame of %" PRIu32 " bytes",
				out->len);
			return -DOCRAFT_ECORRUPT;
		}
		return 5;
	case 'C':
		if (avail < 5)
			return 0;
		out->crc = be32_load(p + 1);
		return 5;
	case 'E':
		if (avail < COPY_END_LEN)
			return 0;
		out->nfiles = be32_load(p + 1);
		out->total = be64_load(p + 5);
		out->applied_index = be64_load(p + 13);
		out->applied_ht = be64_load(p + 21);
		return COPY_END_LEN;
	case 'X':
		if (avail < 4)
			return 0;
		n = be16_load(p + 2);
		if (n > COPY_MSG_MAX) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "error message of %u bytes", n);
			return -DOCRAFT_ECORRUPT;
		}
		if (avail < 4 + (size_t)n)
			return 0;
		out->code = p[1];
		if (out->code <= DOCRAFT_OK || out->code >= DOCRAFT_ERROR_MAX)
			out->code = DOCRAFT_EIO;
		for (size_t i = 0; i < n; i++)
			out->msg[i] = (p[4 + i] >= 0x20 && p[4 + i] < 0x7f) ? (char)p[4 + i] : '?';
		out->msg[n] = '\0';
		return 4 + n;
	default:
		err_set(errmsg, DOCRAFT_ECORRUPT, "unknown frame type 0x%02x", p[0]);
		return -DOCRAFT_ECORRUPT;
	}
}
