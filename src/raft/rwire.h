/* rwire: raft_uv 0.15's message codec, byte for byte, with a decoder that
 * takes hostile input (used by rnet.c, the network half of a raft_io).
 *
 * After docraft's RAFT preamble (net/listener.h) a connection carries
 * messages back to back, every integer little endian (canonical/raft
 * v0.15.0 src/uv_encoding.c, src/uv_recv.c):
 *
 *   u64 type (RAFT_IO_APPEND_ENTRIES = 1 ... RAFT_IO_TIMEOUT_NOW = 6)
 *   u64 header length H (> 0), H bytes of header, then the payload:
 *
 *   AppendEntries        term, prev_log_index, prev_log_term, leader_commit,
 *                        n, n x {u64 term, u8 type, 3 unused, u32 length},
 *                        8 bytes of slack (raft_uv sizes the header 48 + 16 n
 *                        and never writes its last 8 bytes: rwire writes
 *                        zeros); payload: the n entries' bytes, concatenated
 *   AppendEntriesResult  term, rejected, last_log_index
 *   RequestVote          term, candidate_id, last_log_index, last_log_term,
 *                        flags (1 disrupt_leader, 2 pre_vote; absent in v1)
 *   RequestVoteResult    term, vote_granted, flags (1 pre_vote; absent in v1)
 *   InstallSnapshot      term, last_index, last_term, conf_index, conf length
 *                        C, C bytes of configuration (raft's encoding: u8
 *                        format 1, u64 count, per server u64 id, address,
 *                        NUL, u8 role; padded to 8), data length, 8 bytes of
 *                        slack; payload: the snapshot data
 *   TimeoutNow           term, last_log_index, last_log_term
 *
 * raft_uv 0.15's receiver places every entry but the last at an offset
 * rounded up to 8 bytes, while its sender concatenates them unpadded: an
 * entry of a length that is not a multiple of 8 followed by another is
 * decoded wrongly by raft_uv. rwire decodes what the sender wrote (no
 * padding); src/raft/rio.c drops such messages either way.
 *
 * Hostile input (docs/style.md): the decoder never asserts on the bytes. It
 * refuses an unknown type, a header of 0 bytes, a header too short for its
 * type, longer than RWIRE_FIXED_HEADER_MAX for the fixed-size types or than
 * the limit for the others, an entry count that does not fit the header, an
 * unknown entry type, entries' total or snapshot data above the limit, a
 * configuration that does not decode (format, bounds, id 0, empty address,
 * role, duplicate id or address, no server at all). What it hands over has
 * the memory layout raft 0.15 frees: AppendEntries with n > 0 entries gets a
 * raft_malloc'd entries array and ONE raft_malloc'd payload buffer that is
 * the batch of every entry; entries of length 0 have buf.base NULL; n == 0
 * gives entries NULL. When every entry is empty there is no buffer and
 * every batch is NULL: raft then treats them as entries of their own with
 * nothing to free (as its own raft_apply entries), and rio.c's drop path,
 * which frees batches only when the payload is not empty (raft_uv leaves
 * them uninitialised then), leaks nothing; only a libraft built with
 * assertions would object, in entryBatchesDestroy (Debian's has none, and
 * rio drops such messages first). InstallSnapshot
 * gets its configuration decoded (raft_configuration_*) and its data
 * raft_malloc'd (base NULL when empty). No pointer is left uninitialised.
 *
 * Pure code: no I/O, no libuv; libraft only for raft_malloc and the
 * configuration functions. Allocation failure is fatal (PANIC). Not
 * thread-safe per decoder; separate decoders are independent. */
#ifndef DOCRAFT_RAFT_RWIRE_H
#define DOCRAFT_RAFT_RWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "common/buf.h"

#define RWIRE_PREAMBLE_SIZE 16
/* Default bound of a header and of a payload, in bytes. */
#define RWIRE_LIMIT_DEFAULT ((uint64_t)64 << 20)
/* The largest limit rwire accepts (entry lengths are u32 on the wire). */
#define RWIRE_LIMIT_MAX ((uint64_t)1 << 31)
/* Longest header accepted for the four fixed-size types (raft_uv sends 24
 * to 40 bytes; later bytes are ignored, as raft_uv does). */
#define RWIRE_FIXED_HEADER_MAX 256
/* Message types are 1 .. RWIRE_TYPE_MAX (RAFT_IO_*). */
#define RWIRE_TYPE_MAX RAFT_IO_TIMEOUT_NOW

/* ---- encoding ---- */

/* Bytes of m's preamble and header (what rwire_head_encode writes), or 0
 * for an unknown type. The payload is not included. */
size_t rwire_head_size(const struct raft_message *m);

/* Writes m's preamble and header, rwire_head_size(m) bytes, into out. The
 * payload (AppendEntries: each entry's buf in order; InstallSnapshot: data)
 * follows on the wire and is the caller's to write. m's type must be known. */
void rwire_head_encode(const struct raft_message *m, uint8_t *out);

/* Bytes of m's payload: the entries' total or the snapshot data length. */
uint64_t rwire_payload_size(const struct raft_message *m);

/* Appends m's whole frame (head and payload) to out. Returns 0, or
 * DOCRAFT_EINVAL for an unknown type (nothing appended). For tests, fuzzing
 * and tools; rnet writes the payload from raft's buffers without a copy. */
int rwire_encode(const struct raft_message *m, struct buf *out);

/* ---- decoding ---- */

enum rwire_stage { RWIRE_AT_PREAMBLE = 0, RWIRE_AT_HEADER, RWIRE_AT_PAYLOAD };

/* The state of one incoming stream. Fields are rwire's. */
struct rwire_decoder {
	uint64_t limit;
	enum rwire_stage stage;
	size_t have;                   /* bytes of the current stage received */
	uint8_t preamble[RWIRE_PREAMBLE_SIZE];
	uint64_t type;
	uint8_t *header;               /* fixed[] or xmalloc'd */
	size_t header_len;
	uint8_t fixed[RWIRE_FIXED_HEADER_MAX];
	uint8_t *payload;              /* raft_malloc'd, owned until handed over */
	size_t payload_len;
	struct raft_message m;         /* decoded from the header so far */
};

/* Sets up d for a new stream; limit 0 means RWIRE_LIMIT_DEFAULT, larger
 * than RWIRE_LIMIT_MAX means RWIRE_LIMIT_MAX. */
void rwire_decoder_init(struct rwire_decoder *d, uint64_t limit);

/* Releases what a message cut short holds (header, entries, configuration,
 * payload). d can then be initialised again. */
void rwire_decoder_close(struct rwire_decoder *d);

/* Results of rwire_decoder_feed / _advance besides error codes. */
#define RWIRE_MORE 0    /* all bytes taken, no message complete yet */
#define RWIRE_MESSAGE 1 /* *out holds a complete message */

/* Takes bytes of the stream. Returns RWIRE_MORE (all n taken),
 * RWIRE_MESSAGE (*used bytes taken, the rest not looked at; *out is the
 * message, server_id 0 and server_address NULL, and the caller owns its
 * buffers as raft would: give it to raft's recv callback or free it with
 * rwire_message_free), or DOCRAFT_ECORRUPT with errmsg: the stream is
 * unusable from here on (close it, then rwire_decoder_close). */
int rwire_decoder_feed(struct rwire_decoder *d, const uint8_t *p, size_t n, size_t *used,
		       struct raft_message *out, char *errmsg);

/* Zero-copy reading of large payloads: true if d is inside a payload with
 * at least min bytes still missing; *p and *n are then where they go. The
 * caller reads at most *n bytes there and calls rwire_decoder_advance with
 * the count. */
bool rwire_decoder_window(struct rwire_decoder *d, size_t min, uint8_t **p, size_t *n);

/* After k bytes were read into the window: RWIRE_MORE, or RWIRE_MESSAGE
 * with *out as for rwire_decoder_feed. */
int rwire_decoder_advance(struct rwire_decoder *d, size_t k, struct raft_message *out);

/* Frees a decoded message's buffers as raft's recv path would for an
 * unavailable node (entries array and batch, or configuration and data). */
void rwire_message_free(struct raft_message *m);

/* Whether a and b carry the same message: type and fields, the entries'
 * terms, types and bytes, the configuration, the snapshot data. Not the
 * server id and address, nor the memory layout. A RequestVoteResult's
 * pre_vote unknown equals false (both go on the wire as 0). For tests and
 * fuzzing. */
bool rwire_message_equal(const struct raft_message *a, const struct raft_message *b);

/* "append_entries", ..., "timeout_now"; "?" for other types. */
const char *rwire_type_name(unsigned type);

#endif
