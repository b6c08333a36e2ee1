/* YEDIS: Redis values stored as DocDB documents (seed 002, docdb-format.md
 * §11) and the Redis data commands evaluated against a tablet's store
 * (issue 17).
 *
 * Keys. Redis database n is the table "redis_<n>" (TableSchema.redis). A
 * Redis key k is the DocKey
 *     'G' BE16(redis_slot_partition(redis_key_slot(k))) 'S' <k, 0x00 escaped> 00 00 '!' '!'
 * i.e. the DocKey of a table whose one hash column is k (blob), with the
 * partition value from the key's Redis Cluster slot (redis/slot.h) instead
 * of hash16 (yedis_dockey).
 *
 * Values: the document's root value is the Redis type (docdb-format.md §11):
 *   string       root 'S' <bytes>
 *   hash         root '{'; children 'S' field -> 'S' value
 *   set          root '('; children 'S' member -> '$'
 *   sorted set   root ','; '%' -> 'I' cardinality; '&' 'D' score 'S' member
 *                -> '$'; '\'' 'S' member -> 'D' score
 *   list         root ')'; children: list entries (see yedis_int.h)
 *   time series  root '+'; children 'b' (int64 descending) timestamp -> 'S'
 * A key's expiry is a 't' TTL control field on its root (SET .. EX, SETEX);
 * EXPIRE / PEXPIRE / EXPIREAT / PERSIST on an existing key write a TTL
 * merge record at the root ('k' 01 ['t' ttl] <type byte>), which readers
 * (docdb/reader.h) and compactions fold into the next older root value.
 * Writing a new root (SET on a hash, DEL, a new type after expiry) hides
 * every older child: a collection created anew starts empty.
 *
 * Evaluation. A txn is the unit of atomicity: on a write, the requests of
 * one Raft entry (the tablet creates one txn per entry at apply); on a
 * read, one RedisRequest. yedis_exec runs one command in it: reads see the
 * store as of the txn's hybrid time plus every write the txn's earlier
 * commands made (so INCR a; INCR a in one entry or one MULTI gives 1 then
 * 2); writes are appended to the txn's batch, which the caller applies at
 * the txn's hybrid time (docdb/batch.h: later pairs win on the same path).
 * Evaluation is deterministic: the same store, hybrid time, seed and
 * commands give the same batch and replies on every replica (SPOP and
 * SRANDMEMBER draw from the seed; "now" for TTLs is the txn's hybrid time,
 * never a clock).
 *
 * Replies are RESP2, appended with redis/resp.h's writer. Redis's own
 * errors (WRONGTYPE, "value is not an integer or out of range", a wrong
 * argument) are replies and yedis_exec returns 0; a nonzero return
 * (DOCRAFT_EIO, DOCRAFT_ECORRUPT, DOCRAFT_ETOOOLD) is a storage failure
 * with errmsg: the caller fails (at apply, the state machine fails).
 *
 * Threading: a txn belongs to one thread; the store may be read
 * concurrently by others (docdb/reader.h). */
#ifndef DOCRAFT_YEDIS_YEDIS_H
#define DOCRAFT_YEDIS_YEDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/batch.h"
#include "docdb/store.h"
#include "redis/resp.h"

/* ---- The command table ---- */

enum {
	YEDIS_WRITE = 1u << 0,    /* may write: goes through Raft */
	YEDIS_READONLY = 1u << 1, /* never writes: a read on the leader */
	YEDIS_TABLET = 1u << 2,   /* tablet-wide (KEYS, SCAN, DBSIZE): no key; the
				     front end sends it to every tablet (SCAN: to
				     the cursor's) and merges the replies */
	YEDIS_SMALL = 1u << 3,    /* a write whose reply is a status, an integer,
				     a number, nil or an error: short whatever the
				     data (yedis_reply_small) */
};

/* One data command the engine runs (lower-case name, Redis's arity rule:
 * n > 0 exactly n words with the name, n < 0 at least -n; the key is
 * argv[1] unless YEDIS_TABLET). Multi-key commands (MGET, MSET, DEL and
 * EXISTS of several keys) are split by the front end into one command per
 * key (GET, SET, DEL k, EXISTS k), grouped per tablet into one request. */
struct yedis_command {
	const char *name;
	int arity;
	unsigned flags;
};

/* The command named argv[0] (case-insensitive), or NULL when the engine
 * does not run it (a front-end command, or unknown). */
const struct yedis_command *yedis_command_find(const char *name, size_t n);

/* Whether cmd's reply to argv is short whatever the data: a YEDIS_SMALL
 * write (SET only without its GET option). The front end batches such
 * writes of many clients into one request, which one client's large reply
 * could otherwise fail for all of them. */
bool yedis_reply_small(const struct yedis_command *cmd, uint32_t argc, const struct resp_arg *argv);

/* The whole table, for COMMAND and the front end: i < yedis_command_count(). */
size_t yedis_command_count(void);
const struct yedis_command *yedis_command_at(size_t i);

/* The DocKey of Redis key k (appended to out). */
void yedis_dockey(struct buf *out, const void *key, size_t n);

/* SCAN's cursor on a tablet (YEDIS_TABLET): slot * 2^40 + n, where n is
 * how many live keys of that slot, in DocKey order, the previous calls
 * returned (0 for all but a slot too big for one call: one call returns
 * whole slots until COUNT keys were examined, and splits a slot only past
 * 10000 keys of it). A call walks the tablet's store from the cursor's
 * slot on and replies [next cursor, keys]; next cursor 0 means the
 * store holds no key at or after the slot where it stopped: the front end
 * goes on with the first slot of the next tablet (or replies 0 after the
 * last). A key present throughout a full SCAN is returned exactly once,
 * except in a split slot (more than 10000 keys in one slot, one hash tag):
 * keys created before it between the calls may make it come twice, keys
 * deleted before it may make it be missed. */
#define YEDIS_SCAN_SLOT_SHIFT 40
static inline uint64_t yedis_scan_cursor(uint32_t slot, uint64_t n)
{
	return ((uint64_t)slot << YEDIS_SCAN_SLOT_SHIFT) | n;
}
static inline uint32_t yedis_scan_slot(uint64_t cursor)
{
	return (uint32_t)(cursor >> YEDIS_SCAN_SLOT_SHIFT);
}
static inline uint64_t yedis_scan_offset(uint64_t cursor)
{
	return cursor & ((UINT64_C(1) << YEDIS_SCAN_SLOT_SHIFT) - 1);
}

/* ---- Evaluation ---- */

struct yedis_txn;

struct yedis_txn_options {
	struct store *store;
	uint64_t ht;            /* read time; for writes the entry's hybrid time */
	uint64_t seed;          /* SPOP / SRANDMEMBER (e.g. the entry's raft index) */
	struct batch *batch;    /* writes go here; NULL: a read-only txn (a write
				command then replies an error) */
	int64_t default_ttl_ms; /* the table's default TTL (0: none) */
};

/* A new txn (never fails: allocation failure aborts, as everywhere). */
struct yedis_txn *yedis_txn_new(const struct yedis_txn_options *o);
void yedis_txn_free(struct yedis_txn *t);
/* After the txn's last command, before its batch is applied: drops the
 * pairs that a later root write of the same key in this txn hides (no
 * reader could see them), so a key written many times in one txn reaches
 * the store once. Deterministic: every replica drops the same pairs. The
 * txn takes no more commands afterwards. */
void yedis_txn_seal(struct yedis_txn *t);

/* Runs argv[0..argc) (argv[0] a name yedis_command_find knows; the arity
 * is checked here too, with Redis's text) and appends exactly one reply
 * to reply. 0, or a storage failure (see above) with errmsg: the reply
 * and batch are then unspecified and the txn must be freed. */
int yedis_exec(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
	       char *errmsg);

#endif
