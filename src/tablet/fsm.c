/* The tablet state machine; the contract is in fsm.h. */
#include "tablet/fsm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/condition.h"
#include "tablet/entry.h"

#define FLOG(level, f, ...) LOG_AT(level, (f)->id, (f)->raft ? (f)->raft->current_term : 0, __VA_ARGS__)

static void failed(struct tablet_fsm *f, const char *why)
{
	if (f->failed)
		return;
	f->failed = true;
	snprintf(f->errmsg, sizeof f->errmsg, "%s", why);
	FLOG(LOG_LVL_ERROR, f, "state machine failed: %s", why);
}

/* Evaluates q's conditions against the store as of the entry's time ht:
 * the store holds exactly the entries before this one (a conditional
 * request is alone in its entry). *status: 0 or DOCRAFT_ECONDITION. */
static int check_conditions(struct tablet_fsm *f, const struct entry_request *q, uint64_t ht,
			    int *status, char *errmsg)
{
	const struct schema *schema = store_schema_acquire(f->store);
	bool holds = false;
	int rv = condition_eval(f->store, schema, q->cond, q->cond_len, ht, &holds, errmsg);
	store_schema_release(schema);
	*status = holds ? 0 : DOCRAFT_ECONDITION;
	return rv;
}

/* The clock never goes below a time already applied, unless that time is
 * further ahead of this server's clock than the maximum skew (a leader
 * with a runaway clock, c-raft applies it all the same): then it is not
 * adopted, only logged and counted, so this tablet's reads and the times
 * it answers are not dragged ahead. max_ht keeps it: should this replica
 * lead, its writes are still stamped above it (tablet_membership.c, leader ready). */
static void observe_ht(struct tablet_fsm *f, uint64_t ht)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (ht > f->max_ht)
		f->max_ht = ht;
	if (ht <= hlc_last(f->hlc) || hlc_update(f->hlc, ht, errmsg) == 0)
		return;
	if (f->skewed++ % 1000 == 0)
		FLOG(LOG_LVL_WARN, f, "applied an entry beyond the maximum clock skew (%" PRIu64
		     " so far), not adopted: %s", f->skewed, errmsg);
}

static void refuse(struct tablet_fsm *f, const struct entry_request *q)
{
	if (f->nrefused == f->refused_cap) {
		f->refused_cap = f->refused_cap ? f->refused_cap * 2 : 4;
		f->refused = xrealloc(f->refused, f->refused_cap * sizeof *f->refused);
	}
	memcpy(f->refused[f->nrefused].client_id, q->client_id, ENTRY_CLIENT_ID_LEN);
	f->refused[f->nrefused].seq = q->seq;
	f->nrefused++;
	FLOG(LOG_LVL_WARN, f, "request %" PRIu64 " of a client: retry window expired, not applied",
	     q->seq);
}

bool tablet_fsm_refused(const void *result, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq)
{
	const struct tablet_fsm *f = result;
	if (f == NULL)
		return false;
	for (size_t i = 0; i < f->nrefused; i++)
		if (f->refused[i].seq == seq &&
		    memcmp(f->refused[i].client_id, cid, ENTRY_CLIENT_ID_LEN) == 0)
			return true;
	return false;
}

/* Appends (batch, len) to the parts pp (parts, the caller's array, until
 * it is full); returns pp, grown if needed. */
static struct store_part *add_part(struct store_part *pp, struct store_part *parts, size_t *np,
				   size_t *cap, const void *batch, size_t len)
{
	if (*np == *cap) {
		struct store_part *grown = xmalloc(*cap * 2 * sizeof *grown);
		memcpy(grown, pp, *np * sizeof *pp);
		if (pp != parts)
			free(pp);
		pp = grown;
		*cap *= 2;
	}
	pp[*np].batch = batch;
	pp[*np].len = len;
	(*np)++;
	return pp;
}

static int apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct tablet_fsm *f = fsm->data;
	uint64_t idx = raft_last_applied(f->raft) + 1;
	uint64_t applied;
	struct entry_reader er;
	struct entry_request q;
	struct store_part parts[64];
	struct store_part *pp = parts, redis_part;
	size_t np = 0, cap = sizeof parts / sizeof parts[0];
	const struct store_raw *raw, *redis_raw;
	struct store_raw *all_raw = NULL;
	size_t nraw, nredis_raw;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	*result = NULL;
	f->log_bytes += buf->len;
	f->log_entries++;
	/* A failed state machine must never let raft move on: on a leader that
	 * would acknowledge writes that were not stored. While waiting for a
	 * copy a follower may skip (raft re-applies after its restart), a
	 * leader may not. */
	if (f->failed)
		return RAFT_IOERR;
	if (f->copy_min_index != 0)
		return raft_state(f->raft) == RAFT_LEADER ? RAFT_IOERR : 0;
	store_applied(f->store, &applied, NULL);
	if (idx <= applied) {
		f->skipped++;
		return 0;
	}
	if (entry_open(&er, buf->base, buf->len, errmsg) != 0) {
		failed(f, errmsg);
		return RAFT_MALFORMED;
	}
	retry_changes_reset(&f->changes, idx);
	retry_expire(&f->retry, er.ht, &f->changes);
	fsm_redis_reset(f, idx, er.ht);
	f->nrefused = 0;
	while ((rv = entry_next(&er, &q, errmsg)) == 1) {
		int status = 0;
		if (retry_applied(&f->retry, q.client_id, q.seq))
			continue; /* a retry of a write already decided */
		if (retry_expired(&f->retry, q.client_id, q.seq, er.ht)) {
			/* Forgotten: it may have applied already. Never twice. */
			refuse(f, &q);
			continue;
		}
		if (q.cond != NULL && (rv = check_conditions(f, &q, er.ht, &status, errmsg)) != 0) {
			char why[DOCRAFT_ERRMSG_SIZE + 64];
			snprintf(why, sizeof why, "apply of index %" PRIu64 ": conditions: %s", idx,
				 errmsg);
			failed(f, why);
			rv = rv == DOCRAFT_ECORRUPT ? RAFT_MALFORMED : RAFT_IOERR;
			goto out;
		}
		if (q.kind == ENTRY_KIND_REDIS) {
			bool recorded;
			if ((rv = fsm_redis_run(f, &q, &recorded, errmsg)) != 0) {
				char why[DOCRAFT_ERRMSG_SIZE + 64];
				snprintf(why, sizeof why, "apply of index %" PRIu64 ": redis: %s",
					 idx, errmsg);
				failed(f, why);
				rv = rv == DOCRAFT_ECORRUPT ? RAFT_MALFORMED : RAFT_IOERR;
				goto out;
			}
			/* Its writes are in the entry's txn batch (one part,
			 * below); a retry is answered with its replies. */
			if (recorded)
				retry_record_replies(&f->retry, q.client_id, q.seq, q.min_running,
						     er.ht, &f->changes);
			else
				retry_record(&f->retry, q.client_id, q.seq, q.min_running, er.ht,
					     0, &f->changes);
			continue;
		}
		/* Decided either way: a retry is answered from the table. */
		retry_record(&f->retry, q.client_id, q.seq, q.min_running, er.ht, status,
			     &f->changes);
		if (status != 0)
			continue; /* a condition was false: nothing of it applies */
		pp = add_part(pp, parts, &np, &cap, q.batch, q.batch_len);
	}
	if (rv < 0) {
		failed(f, errmsg);
		rv = RAFT_MALFORMED;
		goto out;
	}
	/* The deletes retry_record queued, then one chunk put per client. */
	retry_changes_finish(&f->changes);
	fsm_redis_finish(f, &redis_part, &redis_raw, &nredis_raw);
	raw = f->changes.raw;
	nraw = f->changes.n;
	if (nredis_raw > 0) {
		/* The retry changes first: they may delete an expired
		 * client's reply records, never one put here. */
		raw = all_raw = xmalloc((nraw + nredis_raw) * sizeof *raw);
		memcpy(all_raw, f->changes.raw, nraw * sizeof *raw);
		memcpy(all_raw + nraw, redis_raw, nredis_raw * sizeof *raw);
		nraw += nredis_raw;
	}
	if (redis_part.len > 0)
		pp = add_part(pp, parts, &np, &cap, redis_part.batch, redis_part.len);
	rv = store_apply_parts(f->store, pp, np, raw, nraw, er.ht, idx, errmsg);
	if (rv != 0) {
		char why[DOCRAFT_ERRMSG_SIZE + 64];
		snprintf(why, sizeof why, "apply of index %" PRIu64 ": %s", idx, errmsg);
		failed(f, why);
		rv = rv == DOCRAFT_ENOSPC ? RAFT_NOSPACE
		   : rv == DOCRAFT_EINVAL || rv == DOCRAFT_ECORRUPT ? RAFT_MALFORMED : RAFT_IOERR;
		goto out;
	}
	observe_ht(f, er.ht);
	if (idx <= f->log_last_at_start)
		f->replayed++;
	if (f->nrefused > 0 || tablet_fsm_has_replies(f))
		*result = f; /* not allocated: nothing leaks on a follower */
	rv = 0;
out:
	if (pp != parts)
		free(pp);
	free(all_raw);
	return rv;
}

static int snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct tablet_fsm *f = fsm->data;
	struct raft_buffer *b;
	uint8_t *p;
	uint64_t idx;
	if (f->snapshot_busy || f->copy_min_index != 0 || f->failed)
		return RAFT_BUSY;
	/* The marker names the store's index, not raft's: the last applied
	 * entry may be a barrier or a configuration change, which never reach
	 * the store. Everything up to raft_last_applied() is in the store up to
	 * this index, and it is what restore compares with. */
	store_applied(f->store, &idx, NULL);
	if (f->fsm.snapshot_async == NULL) {
		/* No threadpool (e.g. raft_fixture): flush here, synchronously. */
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		if (store_flush(f->store, errmsg) != 0) {
			FLOG(LOG_LVL_ERROR, f, "flush for a snapshot failed: %s", errmsg);
			return RAFT_BUSY;
		}
	}
	b = raft_malloc(sizeof *b);
	p = raft_malloc(FSM_SNAPSHOT_LEN);
	if (b == NULL || p == NULL) {
		raft_free(b);
		raft_free(p);
		return RAFT_NOMEM;
	}
	memcpy(p, FSM_SNAPSHOT_MAGIC, 4);
	p[4] = 1;
	be64_store(p + 5, idx);
	b->base = p;
	b->len = FSM_SNAPSHOT_LEN;
	*bufs = b;
	*n = 1;
	f->snapshot_busy = true;
	f->snapshot_pending = idx;
	f->log_bytes = 0;
	f->log_entries = 0;
	FLOG(LOG_LVL_DEBUG, f, "snapshot at index %" PRIu64, idx);
	return 0;
}

/* Threadpool: everything applied so far (>= the marker's index) to SST. */
static int snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct tablet_fsm *f = fsm->data;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	(void)bufs;
	(void)n;
	if (store_flush(f->store, errmsg) != 0) {
		LOG_ERROR("tablet %s: flush for a snapshot failed: %s", f->id, errmsg);
		return RAFT_IOERR;
	}
	return 0;
}

static int snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct tablet_fsm *f = fsm->data;
	for (unsigned i = 0; i < *n; i++)
		raft_free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n = 0;
	f->snapshot_busy = false;
	/* Called after raft wrote the snapshot (or failed to): a status hint. */
	f->snapshot_index = f->snapshot_pending;
	return 0;
}

static int restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct tablet_fsm *f = fsm->data;
	const uint8_t *p = buf->base;
	uint64_t x = 0, applied;
	if (buf->len != FSM_SNAPSHOT_LEN || memcmp(p, FSM_SNAPSHOT_MAGIC, 4) != 0 || p[4] != 1) {
		raft_free(buf->base);
		/* Failing here would wedge raft; the owner closes the tablet. */
		failed(f, "snapshot marker is malformed");
		return 0;
	}
	for (int i = 0; i < 8; i++)
		x = x << 8 | p[5 + i];
	raft_free(buf->base);
	store_applied(f->store, &applied, NULL);
	if (applied >= x)
		return 0;
	FLOG(LOG_LVL_WARN, f,
	     "snapshot %" PRIu64 " is past the store's index %" PRIu64 ": needs a checkpoint copy",
	     x, applied);
	f->copy_min_index = x;
	return 0;
}

int tablet_fsm_init(struct tablet_fsm *f, const char *id, struct store *s, struct hlc *hlc,
		    char *errmsg)
{
	uint64_t ht;
	*f = (struct tablet_fsm){
		.fsm = {.version = 3, .data = f, .apply = apply, .snapshot = snapshot,
			.restore = restore, .snapshot_finalize = snapshot_finalize,
			.snapshot_async = snapshot_async},
		.id = id,
		.store = s,
		.hlc = hlc,
	};
	retry_init(&f->retry);
	retry_changes_init(&f->changes);
	store_applied(s, NULL, &ht);
	observe_ht(f, ht);
	return retry_load(&f->retry, s, errmsg);
}

void tablet_fsm_bind(struct tablet_fsm *f, struct raft *r)
{
	f->raft = r;
}

int tablet_fsm_set_store(struct tablet_fsm *f, struct store *s, char *errmsg)
{
	uint64_t ht;
	f->store = s;
	f->copy_min_index = 0;
	store_applied(s, NULL, &ht);
	observe_ht(f, ht);
	return retry_load(&f->retry, s, errmsg);
}

void tablet_fsm_close(struct tablet_fsm *f)
{
	free(f->refused);
	f->refused = NULL;
	fsm_redis_free(f);
	retry_free(&f->retry);
	retry_changes_free(&f->changes);
}
