/* The payload of a tablet's Raft entry (design.md, "The write path").
 *
 * One entry carries every client write the leader grouped into it (group
 * commit), all applied at one hybrid time chosen by the leader's clock:
 *
 *   u8    version (3; versions 1 and 2, below, are still decoded)
 *   BE64  hybrid time
 *   BE32  number of requests
 *   per request:
 *     16 bytes  client id
 *     BE64      sequence number (unique per client)
 *     BE64      min running sequence of that client (records below are
 *               forgotten: the client will never retry them)
 *     u8        kind (version 3 only): 0 batch, 1 conditional, 2 redis
 *     kind 0:   BE32 length, bytes: the request's DocDB batch (docdb/batch.h)
 *     kind 1:   BE32 length, bytes: the condition blob (docdb/condition.h,
 *               non-empty), then the batch as for kind 0
 *     kind 2:   BE32 length, bytes: the Redis commands (below)
 *   0..7 zero bytes of padding to a multiple of 8 (entry_finish): raft_uv
 *   0.15 pads entries to 8 bytes when it reads its segments but not when it
 *   writes them, so an unpadded entry corrupts every later batch's offset.
 *
 * Version 2 has no kind byte: every request is BE32 condition length (0:
 * none), the blob, then the batch; version 1 has no condition fields. A
 * version 3 writer still writes version 2 for an entry without Redis
 * requests, so a replica of an older build follows every entry that does
 * not need the new kind.
 *
 * Redis commands (issue 17): BE32 number of commands (1..ENTRY_REDIS_MAX_
 * COMMANDS), per command BE32 argc (>= 1), per argument BE32 length and the
 * bytes. They are not evaluated by the leader: every replica runs them at
 * apply (fsm_redis.c, one yedis txn per entry at the entry's hybrid time),
 * and their writes and replies are the outcome. Redis requests share
 * entries with each other (the txn runs them in order: INCR a from two
 * clients in one entry gives 1 and 2), never with batch requests (the txn
 * would not see the batches' writes): an entry holding both kinds is
 * malformed.
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
#include "redis/resp.h"

#define ENTRY_VERSION 3
#define ENTRY_CLIENT_ID_LEN 16
/* An entry never grows past this many bytes (group commit stops earlier). */
#define ENTRY_MAX_BYTES (16u * 1024 * 1024)
/* Commands of one Redis request at most (RedisRequest's cap). */
#define ENTRY_REDIS_MAX_COMMANDS 10000

enum entry_kind {
	ENTRY_KIND_BATCH = 0,
	ENTRY_KIND_COND = 1,
	ENTRY_KIND_REDIS = 2,
};

struct entry_request {
	enum entry_kind kind;
	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	uint64_t min_running;
	const uint8_t *cond;  /* condition blob, borrowed; NULL when none */
	size_t cond_len;      /* 0 when none */
	const uint8_t *batch; /* borrowed from the entry bytes; NULL / 0 for redis */
	size_t batch_len;
	const uint8_t *redis; /* kind redis: the commands (validated), borrowed */
	size_t redis_len;
	uint32_t redis_n;     /* ... their number */
};

/* Appends the header (version 2); then call entry_add_request (or, for
 * the one request of a conditional entry, entry_add_request_if) n times.
 * The entry must start at out->data[0] (the adders read its version). */
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
/* A Redis request: cmds[0..len) are commands entry_redis_validate accepts.
 * Pre: the entry was begun with entry_begin_v(out, ht, n, 3) and holds no
 * batch request. */
void entry_add_redis(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		     uint64_t seq, uint64_t min_running, const void *cmds, size_t len);
/* entry_begin with an explicit version (2 or 3): entries with Redis
 * requests need 3; entry_begin writes 2 (older builds read it). */
void entry_begin_v(struct buf *out, uint64_t ht, uint32_t n_requests, uint8_t version);
/* Pads the entry to a multiple of 8 bytes; call after the last request. */
void entry_finish(struct buf *out);
/* Bytes one request adds to an entry (versions 2 and 3, at most). */
static inline size_t entry_request_size(size_t cond_len, size_t batch_len)
{
	return 16 + 8 + 8 + 1 + 4 + cond_len + 4 + batch_len;
}
#define ENTRY_HEADER_SIZE 13

struct entry_reader {
	uint8_t version;
	unsigned kinds; /* 1 << kind of every request read so far */
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

/* ---- Redis commands (the blob of a redis request) ---- */

/* Appends the count of commands; then per command entry_redis_command
 * (argc) and argc times entry_redis_arg. */
void entry_redis_begin(struct buf *out, uint32_t ncmds);
void entry_redis_command(struct buf *out, uint32_t argc);
void entry_redis_arg(struct buf *out, const void *p, size_t n);

/* Checks commands from an untrusted source: 0 with their count in *n, or
 * DOCRAFT_ECORRUPT (no commands, more than ENTRY_REDIS_MAX_COMMANDS, a
 * command without words, truncated or stray bytes). */
int entry_redis_validate(const void *data, size_t len, uint32_t *n, char *errmsg);

/* Walks validated commands. */
struct entry_redis_iter {
	const uint8_t *p, *end;
	struct resp_arg *argv; /* grown as needed; free with entry_redis_iter_free
				  before the next init */
	size_t cap;
};
void entry_redis_iter_init(struct entry_redis_iter *it, const void *data, size_t len);
/* true with the next command in *argc / *argv (pointing into the blob and
 * it->argv, valid until the next call), false after the last one. Pre:
 * the blob passed entry_redis_validate. */
bool entry_redis_iter_next(struct entry_redis_iter *it, uint32_t *argc,
			   const struct resp_arg **argv);
void entry_redis_iter_free(struct entry_redis_iter *it);

#endif
