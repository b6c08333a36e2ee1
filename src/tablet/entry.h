/* The payload of a tablet's Raft entry (design.md, "The write path").
 *
 * One entry carries every client write the leader grouped into it (group
 * commit), all applied at one hybrid time chosen by the leader's clock:
 *
 *   u8    version (2; version 1 entries, without the condition fields, are
 *         still decoded)
 *   BE64  hybrid time
 *   BE32  number of requests
 *   per request:
 *     16 bytes  client id
 *     BE64      sequence number (unique per client)
 *     BE64      min running sequence of that client (records below are
 *               forgotten: the client will never retry them)
 *     BE32      length of the request's condition blob (version 2 only;
 *               0: an unconditional write)
 *     bytes     the condition blob (docdb/condition.h)
 *     BE32      length of the request's DocDB batch (docdb/batch.h)
 *     bytes     the batch
 *   0..7 zero bytes of padding to a multiple of 8 (entry_finish): raft_uv
 *   0.15 pads entries to 8 bytes when it reads its segments but not when it
 *   writes them, so an unpadded entry corrupts every later batch's offset.
 *
 * Batches are serialized pair lists, so the requests' batches taken in order
 * form one valid batch; write ids run on across requests, and a later request
 * in the entry overrides an earlier one on the same path.
 *
 * A conditional request (condition length > 0) is the only request of its
 * entry: its conditions are evaluated at apply against the store holding
 * exactly the entries before it, at the entry's hybrid time; if they all
 * hold its batch is applied, else nothing of it. An entry with a
 * conditional request among others is malformed.
 *
 * Decoding never trusts its input (entries arrive from the network). */
#ifndef DOCRAFT_TABLET_ENTRY_H
#define DOCRAFT_TABLET_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docraft/error.h"

#define ENTRY_VERSION 2
#define ENTRY_CLIENT_ID_LEN 16
/* An entry never grows past this many bytes (group commit stops earlier). */
#define ENTRY_MAX_BYTES (16u * 1024 * 1024)

struct entry_request {
	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	uint64_t min_running;
	const uint8_t *cond;  /* condition blob, borrowed; NULL when none */
	size_t cond_len;      /* 0 when none */
	const uint8_t *batch; /* borrowed from the entry bytes */
	size_t batch_len;
};

/* Appends the header; then call entry_add_request (or, for the one
 * request of a conditional entry, entry_add_request_if) n times. */
void entry_begin(struct buf *out, uint64_t ht, uint32_t n_requests);
/* An unconditional request. */
void entry_add_request(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq, uint64_t min_running, const void *batch, size_t batch_len);
/* A request with the condition blob cond[0..cond_len) (a valid blob, or
 * cond_len 0 for none). Pre: a request with conditions is the entry's only
 * one (n_requests 1). */
void entry_add_request_if(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
			  uint64_t seq, uint64_t min_running, const void *cond, size_t cond_len,
			  const void *batch, size_t batch_len);
/* Pads the entry to a multiple of 8 bytes; call after the last request. */
void entry_finish(struct buf *out);
/* Bytes one request adds to an entry (version 2). */
static inline size_t entry_request_size(size_t cond_len, size_t batch_len)
{
	return 16 + 8 + 8 + 4 + cond_len + 4 + batch_len;
}
#define ENTRY_HEADER_SIZE 13

struct entry_reader {
	uint8_t version;
	const uint8_t *p;
	const uint8_t *end;
	uint64_t ht;
	uint32_t n_requests;
	uint32_t read;
};

/* Parses the header. DOCRAFT_ECORRUPT on anything malformed. */
int entry_open(struct entry_reader *r, const void *data, size_t len, char *errmsg);
/* 1 with the next request, 0 after the last one (and all bytes consumed),
 * or DOCRAFT_ECORRUPT (negative: -DOCRAFT_ECORRUPT). Batches and condition
 * blobs are validated (condition_validate), and a conditional request must
 * be its entry's only one. */
int entry_next(struct entry_reader *r, struct entry_request *out, char *errmsg);

#endif
