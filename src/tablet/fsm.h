/* The tablet's Raft state machine (fsm v3) over a DocDB store.
 *
 * apply     the entry's index is raft_last_applied() + 1 (0.15 does not pass
 *           it). At or below the store's applied marker: skipped (durable
 *           already; a replay after restart). Otherwise the entry's batches,
 *           minus requests the retry table has seen and requests whose
 *           conditions (docdb/condition.h, evaluated here at the entry's
 *           hybrid time with the store's schema) are false, and the retry
 *           records of every request decided (with its outcome) go to the
 *           store in one RocksDB write with the new marker. Requests below
 *           their client's retry window (retry_expired) are not applied and
 *           the leader's callback is told (tablet_fsm_refused).
 * snapshot  a marker {the store's applied index} taken on the loop thread (not
 *           raft's: the snapshot may end on a barrier); snapshot_async (libuv
 *           threadpool) flushes RocksDB before raft writes the marker and
 *           truncates its log, so the log is only cut below what is durable.
 *           With fsm.snapshot_async set to NULL (an io without a threadpool,
 *           such as raft_fixture's) the flush happens inside snapshot.
 * restore   a marker above the store's marker means this replica was sent a
 *           snapshot of data it does not have: copy_min_index is set, applies
 *           become no-ops on a follower (errors on a leader, which must never
 *           acknowledge what it did not store) and snapshots are refused until
 *           the owner has
 *           installed a checkpoint of a healthy replica and restarted raft.
 *
 * Redis requests (entry.h) run at apply in one yedis txn per entry
 * (fsm_redis.c); their replies are kept in the store with their retry
 * records (retry.h, RETRY_OUTCOME_REPLIES).
 *
 * An apply that cannot complete (corrupt entry, disk full) sets failed and
 * errmsg, and every later apply fails too, so raft never moves past it; the
 * owner must then close the raft instance from a later loop callback (never
 * from inside a raft callback).
 *
 * Threading: the loop thread of the raft instance, except snapshot_async. */
#ifndef DOCRAFT_TABLET_FSM_H
#define DOCRAFT_TABLET_FSM_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

#include "common/hlc.h"
#include "docraft/error.h"
#include "docdb/store.h"
#include "tablet/retry.h"

#define FSM_SNAPSHOT_MAGIC "DRSN"
#define FSM_SNAPSHOT_LEN 13

struct tablet_fsm {
	struct raft_fsm fsm;     /* hand &f->fsm to raft_init */
	struct raft *raft;       /* set by tablet_fsm_bind before raft_start */
	const char *id;          /* tablet id, for logs (borrowed) */
	struct store *store;     /* borrowed; may be swapped while raft is closed */
	struct hlc *hlc;         /* observes every applied hybrid time within the
				    maximum clock skew (hlc_update) */
	uint64_t max_ht;         /* the largest hybrid time applied or in the store */
	uint64_t skewed;         /* entries applied whose time was further ahead of
				    this server's clock than the maximum skew */
	struct retry_table retry;
	struct retry_changes changes;
	bool snapshot_busy;
	uint64_t log_bytes;      /* bytes of the entries applied (or skipped) since the
				    last snapshot started: what raft holds beyond its
				    trailing entries (tablet_raft.c, "Raft log memory") */
	uint64_t log_entries;    /* ... and their number */
	uint64_t snapshot_pending; /* store index of the snapshot being taken */
	uint64_t snapshot_index;   /* ... of the last one raft finished with */
	uint64_t copy_min_index; /* != 0: waiting for a checkpoint copy */
	bool failed;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t log_last_at_start; /* entries up to here count as replayed */
	uint64_t replayed;
	uint64_t skipped;
	struct {
		uint8_t client_id[ENTRY_CLIENT_ID_LEN];
		uint64_t seq;
	} *refused; /* requests of the last applied entry refused as expired */
	size_t nrefused, refused_cap;
	struct fsm_redis *redis; /* fsm_redis.c: the entry's txn and replies */
};

/* A retried request whose replies were larger than this is answered, per
 * command, with FSM_REDIS_TOO_LARGE (fsm_redis.c). */
#define FSM_REDIS_REPLY_KEEP_MAX (64u << 10)
#define FSM_REDIS_TOO_LARGE "ERR docraft: reply of a retried command is too large to keep"
/* Replies one Redis request may build at apply (every replica, at every
 * replay): past it each further command still runs but its reply is
 * FSM_REDIS_DROPPED (deterministic: it depends on the data only), so a
 * committed entry can never make apply allocate without bound. The
 * largest RPC answer is below it anyway. */
#define FSM_REDIS_REPLIES_MAX (16u << 20)
#define FSM_REDIS_DROPPED "ERR docraft: reply not kept: this request's replies exceed 16 MiB (the command was applied)"

/* ---- fsm_redis.c (apply's Redis part; the loop thread) ---- */

struct store_part;
/* Starts entry idx at hybrid time ht: forgets the last entry's replies. */
void fsm_redis_reset(struct tablet_fsm *f, uint64_t idx, uint64_t ht);
/* Runs q's commands (q->kind ENTRY_KIND_REDIS, validated) in the entry's
 * txn; its replies are kept in memory, and in a reply record unless every
 * one is "+OK" (*recorded false: the caller records the request as plainly
 * applied, and a retry is answered "+OK" per command; SET, MSET, HMSET
 * ... then cost no reply record). Nonzero: a storage failure (errmsg),
 * the entry cannot be applied. */
int fsm_redis_run(struct tablet_fsm *f, const struct entry_request *q, bool *recorded,
		  char *errmsg);
/* After the entry's last request: its Redis writes as one store part
 * (len 0: none) and the reply records to write with them; valid until the
 * next fsm_redis_reset. */
void fsm_redis_finish(struct tablet_fsm *f, struct store_part *part, const struct store_raw **raw,
		      size_t *nraw);
void fsm_redis_free(struct tablet_fsm *f);

/* Whether the entry whose apply gave result (the leader's raft_apply
 * callback) ran Redis requests; then tablet_fsm_replies finds (cid, seq)'s
 * replies: n RESP replies concatenated in p, their lengths in lens[0..n),
 * borrowed until the next apply. False: not one of that entry's Redis requests. */
bool tablet_fsm_has_replies(const void *result);
bool tablet_fsm_replies(const void *result, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
			const uint8_t **p, const uint32_t **lens, uint32_t *n);
/* The replies kept for a decided Redis request (retry_has_replies) from the
 * store s: appended to out, their lengths (uint32_t) to lens, their number
 * in *n. DOCRAFT_ECORRUPT when the
 * record is missing or malformed, or a read error. Loop thread. */
int tablet_fsm_stored_replies(struct store *s, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
			      uint64_t seq, struct buf *out, struct buf *lens, uint32_t *n,
			      char *errmsg);

/* Whether (cid, seq) was refused as expired by the entry whose apply gave
 * result (the `result` of the leader's raft_apply callback: the fsm when the
 * entry refused something, else NULL; valid until the next apply). */
bool tablet_fsm_refused(const void *result, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq);

/* Loads the retry table from s. */
int tablet_fsm_init(struct tablet_fsm *f, const char *id, struct store *s, struct hlc *hlc,
		    char *errmsg);
void tablet_fsm_bind(struct tablet_fsm *f, struct raft *r);
/* Points the fsm at another store (after a checkpoint copy) and reloads the
 * retry table from it. Only while raft is closed. */
int tablet_fsm_set_store(struct tablet_fsm *f, struct store *s, char *errmsg);
void tablet_fsm_close(struct tablet_fsm *f);

#endif
