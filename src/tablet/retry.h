/* Retryable requests: which (client id, sequence number) writes a tablet has
 * decided, so a retried write is applied once and answered with its first
 * result: "ok" at the hybrid time it applied at, or, for a conditional write
 * whose condition was false, DOCRAFT_ECONDITION (never evaluated twice).
 *
 * The table is part of the replicated state: every replica updates it while
 * applying an entry, deterministically from the entry and the table, and
 * persists the change in the same RocksDB write as the entry's data. After a
 * restart it is loaded from RocksDB and must equal exactly the table of a
 * replica that never restarted (apply consults it).
 *
 * A client sends with each write the smallest sequence number it still has
 * in flight (min_running). Recording a request first forgets the client's
 * seqs below its drop point max(min(min_running, seq), E), since that
 * client will never retry them; E is the expiry point below.
 *
 * Expiry (the retry window, ttl: --retry-record-ttl-s, YugabyteDB's
 * retryable_request_timeout_secs). Time is the hybrid time H of the entry
 * being applied, never a replica's clock, so every replica forgets the same
 * records at the same log position:
 * - E(c, H) = 1 + the largest seq of c held with a decision time below
 *   H - ttl (0: none). A seq below E was sent before a request decided more
 *   than ttl ago; recording a request forgets below E too (so the drop
 *   points, and what a load rebuilds, cover expiry).
 * - floor(c) = the largest drop point applied for c (= the largest
 *   watermark over c's stored chunks: see the load rule). A request of c
 *   that is not decided and whose seq is below max(floor(c), E(c, H)) is a
 *   retry of a request the table forgot (or one its client said it would
 *   never send again): retry_expired says so, apply must not apply it and
 *   the leader answers "retry window expired" (DOCRAFT_ETOOOLD).
 * - A client none of whose records was decided at or after H - ttl is
 *   forgotten whole by retry_expire (its chunks deleted): with it goes its
 *   floor. A client retries for its deadline (seconds, far below ttl), so
 *   a retry older than the window only comes from a stale or forged client;
 *   while the client has a record in the window it is refused, after that
 *   it is a new request.
 * ttl must be the same on every replica of a tablet (a tserver flag: the
 * same on every tserver); 0 means never.
 *
 * Cost: per client, held seqs and live chunks are treaps (O(log n) lookup,
 * insert, removal, removal of the smallest) and the records in decision
 * order a queue with a running maximum of seqs (E by binary search); the
 * clients are in a list by their newest decision (retry_expire pops its
 * head). A chunk's put lists only the seqs its entry recorded. So a request
 * costs O(log n) whatever the order its seqs arrive in (docs/benchmarks.md,
 * docraft-retrybench).
 *
 * Store format: one chunk per (client, entry) under the internal prefix 0x02,
 * keyed by the entry's raft index (or by an earlier entry's: the exception
 * below):
 *
 *   0x02 | client id | BE64 index -> 0xC1 | BE64 watermark |
 *                                    n >= 1 x (BE64 seq, BE64 ht, u8 outcome)
 *
 * the client's seqs the entry recorded and still holds at its end (plus, see
 * below, a legacy record sharing the key), ascending, each with the hybrid
 * time and outcome (0 applied, 1 condition false) it was decided with;
 * watermark W(e): the largest drop point the entry applied for the client.
 * A chunk is written once and deleted when its last seq is forgotten; a
 * partly forgotten chunk is not rewritten. One exception saves a write: when
 * an entry e empties one or more of the client's chunks (not legacy records)
 * and the chunk it builds is then the client's only one, that chunk is put
 * under the key k (< e) of the last chunk it emptied instead of under e, and
 * k is not deleted: the put replaces the old chunk. A client with one
 * request in flight at a time does this in every entry, so its one key is
 * overwritten, one memtable insert per entry instead of two. The load is
 * the same either way: the client has no other stored chunk, and every
 * chunk written later has the key k again (replacing this one) or a key
 * above e, so the chunks after it are the same for k as for e. It never
 * happens while another of the client's chunks is stored (that one would
 * be live), so the argument below, which follows chunks with larger keys,
 * is unchanged. Earlier versions wrote one legacy
 * record per seq, still read and deleted when its seq is forgotten, never
 * written: 0x02 | client id | BE64 seq -> BE64 ht (applied) or BE64 ht | 0x01.
 * Values are told apart by length (legacy 8 or 9, chunks 9 + 17n). An
 * entry's raw records: retry_expire's deletes, then the deletes in the
 * order its requests forget seqs (a forgotten seq's 0x03 reply record with
 * its chunk's; a client's put in place of the delete of the chunk whose key
 * it takes), then one put per other client, in the order of the client's
 * first request.
 *
 * In memory: per client its held seqs (each with its ht, outcome and chunk
 * key), its live chunks (key, count of held seqs, whether stored), its floor,
 * and its records in decision order with the running maximum of their seqs
 * (live, the queue also keeps records forgotten since, until they reach its
 * head: each was forgotten below a drop point, so it never raises E above
 * the floor, and E computed from it equals E computed from a load's queue).
 *
 * Load: a seq stored in a client's chunk e is held iff it is >= max W(e')
 * over the client's stored chunks e' > e; in a legacy record, over all of
 * them (legacy records predate every chunk and were exactly the held set).
 * Why this is exact: seq x recorded by e is forgotten later iff some later
 * entry e' forgets below a point > x, i.e. W(e') > x (a seq forgotten and
 * recorded again later is a new record in a later chunk; its old copy is
 * dead by the same rule). Deleted chunks do not hide a watermark:
 * retry_record is only called for a request not decided yet, so it records
 * its own seq s and keeps it (drop point <= s); the request that sets W(e)
 * leaves its s >= W(e) in e's chunk (dropping it later in e needs a point
 * > s), so every entry that forgets something writes a chunk with its W, and
 * that chunk can only be deleted by a later entry with W > s >= W(e):
 * following such entries ends at a stored chunk with a larger key and a
 * larger W (no such entry takes an emptied chunk's key: the chunk holding
 * s is still stored, so the client has another chunk). Keys are raft indexes, not seqs, because earlier versions could
 * record a forgotten seq again (a late retry) while its old chunk still held
 * other seqs (now such a request is below the floor and refused; their
 * stores still load); chunk keys never collide (a chunk put under an
 * emptied chunk's key replaces it), and a chunk whose key equals
 * a held legacy record's (seq == index) carries that seq with its own ht and
 * outcome. The held seqs, their chunks and the chunks' counts after a load
 * are thus exactly those of the live table; so is the floor (the largest W
 * stored, by the argument above), the queue (held records sorted by decision
 * time) and the list of clients (sorted by their newest decision, which is
 * always held: only a later record of the client can forget it).
 *
 * Not thread-safe: owned by the tablet's loop thread. */
#ifndef DOCRAFT_TABLET_RETRY_H
#define DOCRAFT_TABLET_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/store.h"
#include "tablet/entry.h"

#define RETRY_PREFIX 0x02
#define RETRY_KEY_LEN (1 + ENTRY_CLIENT_ID_LEN + 8)
/* The first byte of a chunk's value, then the watermark; then its items. */
#define RETRY_CHUNK_TAG 0xC1
#define RETRY_CHUNK_HEAD_LEN 9
#define RETRY_CHUNK_ITEM_LEN 17
/* An outcome byte (absent in a legacy record: applied). */
#define RETRY_OUTCOME_CONDITION 1
/* Applied, and its replies are kept (a Redis request, issue 17): under
 *   0x03 | client id | BE64 seq -> the replies (fsm_redis.c)
 * written by the apply that decides the seq, in the same RocksDB write, and
 * deleted by the apply that forgets it (retry_record's drop point, or
 * retry_expire), so the store holds a reply record exactly for each held
 * seq with this outcome, on every replica and after a load. */
#define RETRY_OUTCOME_REPLIES 2
#define RETRY_REPLY_PREFIX 0x03

/* YugabyteDB's retryable_request_timeout_secs default: 660 s. */
#define RETRY_DEFAULT_TTL_US (UINT64_C(660) * 1000000)

struct retry_client;

struct retry_table {
	struct retry_client **slots; /* open addressing by client id */
	size_t nslots;
	size_t nclients;
	size_t nrecords; /* (client, seq) held */
	size_t nchunks;  /* chunks (store keys) holding them */
	uint64_t ttl_us; /* the retry window; 0: records never expire */
	uint64_t seed;   /* treap priorities */
	struct retry_client *oldest, *newest; /* by their newest decision */
};

/* The raw store records of one entry, to write with it. */
struct retry_changes {
	uint64_t index; /* the entry's raft index: the key of its chunks */
	struct store_raw *raw;
	size_t n;
	size_t cap;
	struct buf keys; /* storage for the keys and values */
	struct retry_client **touched; /* recorded for since the reset, in order */
	size_t ntouched;
	size_t touched_cap;
};

/* An empty table whose records never expire. */
void retry_init(struct retry_table *t);
/* Sets the retry window (0: never). The same on every replica of the
 * tablet; set it before loading or applying anything. */
void retry_set_ttl(struct retry_table *t, uint64_t ttl_us);
void retry_free(struct retry_table *t);
/* Replaces the table's contents with the records in s (legacy records and
 * chunks, with the load rule above). DOCRAFT_ECORRUPT for a malformed record
 * or a seq held by two records; on an error the table is left empty. */
int retry_load(struct retry_table *t, struct store *s, char *errmsg);

/* Whether (cid, seq) was decided (applied, or refused by its condition). */
bool retry_applied(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq);
/* Like retry_applied; *ht (may be NULL) gets the hybrid time of the entry
 * that decided it, *status (may be NULL) its outcome: 0 (applied) or
 * DOCRAFT_ECONDITION (its condition was false: nothing applied). */
bool retry_lookup(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		  uint64_t seq, uint64_t *ht, int *status);
/* Whether (cid, seq), not decided, is below the client's window at the
 * hybrid time ht of the entry being applied (see Expiry above): a request
 * the table forgot, which must not be applied (nor recorded). */
bool retry_expired(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq, uint64_t ht);
/* Forgets every client with no record decided at or after ht - ttl, ht the
 * time of the entry ch was reset for; appends the deletes of their chunks
 * to ch. Call once per entry, after retry_changes_reset and before its
 * first retry_record. */
void retry_expire(struct retry_table *t, uint64_t ht, struct retry_changes *ch);
/* Forgets cid's seqs below max(min(min_running, seq), E(cid, ht)), then
 * records (cid, seq), which must be neither decided nor expired at ht
 * (entries are applied in increasing ht), as decided at ht with status (0 or
 * DOCRAFT_ECONDITION) in the chunk of the entry ch was reset for. Appends to
 * ch the deletes of stored chunks left empty; the chunk's put waits for
 * retry_changes_finish. t must not be loaded or freed until then. */
void retry_record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		  uint64_t min_running, uint64_t ht, int status, struct retry_changes *ch);

/* retry_record of an applied request whose replies are kept (outcome
 * RETRY_OUTCOME_REPLIES; retry_lookup reports status 0): the caller puts
 * its reply record (retry_reply_key) in the entry's write; forgetting the
 * seq later appends the record's delete to that entry's changes. */
void retry_record_replies(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
			  uint64_t seq, uint64_t min_running, uint64_t ht,
			  struct retry_changes *ch);
/* Whether (cid, seq) is held with its replies kept. */
bool retry_has_replies(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq);
/* The store key of (cid, seq)'s reply record. */
void retry_reply_key(uint8_t key[RETRY_KEY_LEN], const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		     uint64_t seq);

void retry_changes_init(struct retry_changes *ch);
/* Empties ch for the entry at raft index idx (> 0, and above the index of
 * every entry recorded before into the same table). */
void retry_changes_reset(struct retry_changes *ch, uint64_t idx);
void retry_changes_free(struct retry_changes *ch);
/* Appends one put per client recorded for since the reset (its chunk, in the
 * order the clients were first recorded for) after the deletes, or turns
 * the delete of the client's emptied chunk into that put (the store format
 * above), then points
 * every raw record's key/val into ch->keys; call before using ch->raw. */
void retry_changes_finish(struct retry_changes *ch);

#endif
