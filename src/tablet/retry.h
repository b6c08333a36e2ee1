/* Retryable requests: which (client id, sequence number) writes a tablet has
 * decided, so a retried write is applied once and answered with its first
 * result: "ok" at the hybrid time it applied at, or, for a conditional write
 * whose condition was false, DOCRAFT_ECONDITION (never evaluated twice).
 *
 * The table is part of the replicated state: every replica updates it while
 * applying an entry, deterministically from the entry and the store, and
 * persists the change in the same RocksDB write as the entry's data (records
 * under the internal prefix 0x02: 0x02 | client id | BE64 seq -> BE64 hybrid
 * time for an applied write, the original format, or BE64 hybrid time | u8
 * outcome for any other outcome: 1 = condition false, nothing applied).
 * After a restart it is loaded from RocksDB, so it matches the applied
 * marker exactly; replayed entries then update it as they apply.
 *
 * A client sends with each write the smallest sequence number it still has
 * in flight (min_running); records below it are forgotten, since that client
 * will never retry them. Records of clients that went away stay until a
 * later version adds time-based expiry (see docs/replication.md).
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
/* The outcome byte of a record's value (absent: applied). */
#define RETRY_OUTCOME_CONDITION 1

struct retry_client;

struct retry_table {
	struct retry_client **slots; /* open addressing by client id */
	size_t nslots;
	size_t nclients;
	size_t nrecords;
};

/* Raw store records produced by retry_record, to write with the entry. */
struct retry_changes {
	struct store_raw *raw;
	size_t n;
	size_t cap;
	struct buf keys; /* storage for the keys and values */
};

void retry_init(struct retry_table *t);
void retry_free(struct retry_table *t);
/* Replaces the table's contents with the records in s. */
int retry_load(struct retry_table *t, struct store *s, char *errmsg);

/* Whether (cid, seq) was decided (applied, or refused by its condition). */
bool retry_applied(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq);
/* Like retry_applied; *ht (may be NULL) gets the hybrid time of the entry
 * that decided it, *status (may be NULL) its outcome: 0 (applied) or
 * DOCRAFT_ECONDITION (its condition was false: nothing applied). */
bool retry_lookup(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		  uint64_t seq, uint64_t *ht, int *status);
/* Records (cid, seq) as decided at ht with status (0 or DOCRAFT_ECONDITION)
 * unless it already is, and forgets cid's records below min_running,
 * appending the matching puts/deletes to ch. */
void retry_record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		  uint64_t min_running, uint64_t ht, int status, struct retry_changes *ch);

void retry_changes_init(struct retry_changes *ch);
void retry_changes_reset(struct retry_changes *ch);
void retry_changes_free(struct retry_changes *ch);
/* Points every raw record's key/val into ch->keys; call before using ch->raw
 * (the buffer may have moved while records were added). */
void retry_changes_finish(struct retry_changes *ch);

#endif
