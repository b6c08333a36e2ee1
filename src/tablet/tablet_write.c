/* The write path of a tablet replica (tablet.h "writes").
 *
 * Design.
 *
 *   tablet_write ─► t->wq (queued) ─► poll of a READY leader: propose
 *       ├─ a decided retry (retry table) ──► t->done ──► answered next poll
 *       ├─ a retry of a write in flight ──► waits on it (dups_)
 *       └─ the rest ─► one entry (hybrid time, requests) ─► raft_apply
 *                                         │ applied on this replica
 *                           apply_cb ◄────┘ each request: the outcome the
 *                                           retry table recorded
 *
 * Group commit: while max_inflight entries wait for their majority, writes
 * queue up and go into the next entry together, up to max_entry_bytes. A
 * conditional write goes into an entry of its own: it ends the group
 * before it (fsm.c evaluates its conditions on every replica at apply).
 * Redis writes group with each other, not with batch writes: a change of
 * kind ends the group (an entry mixing them is malformed, entry.h).
 *
 * A Redis write is answered with its replies: those the apply of its entry
 * just made (tablet_fsm_replies, valid during the apply callback), or, for
 * a retry of one decided before (found in the retry table when proposing,
 * or a duplicate in the log), those kept in the store
 * (tablet_fsm_stored_replies) read into t->replies just before answering.
 *
 * An entry whose raft_apply call fails answers its writes at once with the
 * raft code (never proposed). One whose callback reports an error was in
 * the log and may still commit: its writes get DOCRAFT_ELEADERLOST
 * (outcome unknown, retry with the same id). A failed write of this
 * leader's Raft log also fails the replica (tablet_disk_failed: 0.15 does
 * not step down, canonical/raft#321).
 *
 * Every committed entry renews the leader lease (tablet_read.c) from the
 * time it was proposed. Nothing is answered from inside tablet_write. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/mem.h"
#include "docdb/condition.h"
#include "docdb/store_env.h"
#include "tablet/tablet_int.h"

/* Answers w and its duplicates; a Redis write with status 0 gets the
 * n replies in p, lens[i] bytes each. */
static void answer_replies(struct tablet_write *w, int status, uint64_t ht, const uint8_t *p,
			   const uint32_t *lens, uint32_t n)
{
	struct tablet_write *d = w->dups_;
	w->dups_ = NULL;
	for (struct tablet_write *x = w; x != NULL;) {
		struct tablet_write *next = x == w ? d : x->dups_;
		x->dups_ = NULL;
		x->replies = status == 0 ? p : NULL;
		x->reply_len = status == 0 ? lens : NULL;
		x->nreplies = status == 0 ? n : 0;
		x->cb(x, status, ht);
		x = next;
	}
}

void tablet_write_answer(struct tablet_write *w, int status, uint64_t ht)
{
	answer_replies(w, status, ht, NULL, NULL, 0);
}

/* Answers a Redis write decided before (status 0) with its kept replies:
 * a read of the store, so a failure answers the error instead. */
static void answer_stored(struct tablet *t, struct tablet_write *w, uint64_t ht)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint32_t n = 0;
	int rv;
	buf_reset(&t->replies);
	buf_reset(&t->reply_lens);
	if (!retry_has_replies(&t->fsm.retry, w->client_id, w->seq)) {
		/* Applied without a reply record: every reply was "+OK"
		 * (fsm_redis_run). */
		struct entry_redis_iter it;
		const struct resp_arg *argv;
		uint32_t argc;
		entry_redis_iter_init(&it, w->redis, w->redis_len);
		while (entry_redis_iter_next(&it, &argc, &argv)) {
			uint32_t len = 5;
			buf_append(&t->replies, "+OK\r\n", 5);
			buf_append(&t->reply_lens, &len, sizeof len);
			n++;
		}
		entry_redis_iter_free(&it);
		answer_replies(w, 0, ht, t->replies.data,
			       (const uint32_t *)(void *)t->reply_lens.data, n);
		return;
	}
	rv = t->store != NULL ? tablet_fsm_stored_replies(t->store, w->client_id, w->seq,
							   &t->replies, &t->reply_lens, &n,
							   errmsg)
			      : DOCRAFT_EUNAVAILABLE;
	if (rv != 0) {
		if (t->store != NULL)
			TLOG(LOG_LVL_ERROR, t, "kept replies: %s", errmsg);
		tablet_write_answer(w, rv, 0);
		return;
	}
	answer_replies(w, 0, ht, t->replies.data, (const uint32_t *)(void *)t->reply_lens.data, n);
}

void tablet_write_answer_done(struct tablet *t)
{
	while (t->done != NULL) {
		struct tablet_write *w = t->done;
		t->done = w->next_;
		if (w->status_ == 0)
			lathist_record(&t->st.write_latency, (uv_hrtime() - w->start_ns_) / 1000);
		if (w->status_ == 0 && w->redis != NULL)
			answer_stored(t, w, w->ht_);
		else
			tablet_write_answer(w, w->status_, w->ht_);
	}
}

static void inflight_unlink(struct tablet *t, struct inflight *f)
{
	t->n_inflight--;
	if (f->next == NULL)
		t->if_tail = f->prev;
	DLIST_REMOVE(t->if_head, f);
}

static void apply_cb(struct raft_apply *req, int status, void *result)
{
	struct inflight *f = req->data;
	struct tablet *t = f->t;
	struct tablet_write *w = f->writes;
	int code = tablet_from_raft(status);
	inflight_unlink(t, f);
	if (status == 0)
		tablet_read_lease_extend(t, f->epoch, f->sent_ns);
	if (tablet_disk_error(status))
		tablet_disk_failed(t, status, "this leader's Raft log write");
	/* It was in the log and may have reached followers: whatever failed,
	 * it may still commit, so the outcome is unknown (retry, same id). */
	if (code != 0)
		code = DOCRAFT_ELEADERLOST;
	while (w != NULL) {
		struct tablet_write *next = w->next_;
		uint64_t ht = 0;
		int st = code;
		const uint8_t *rp;
		const uint32_t *rlens;
		uint32_t rn;
		/* The apply decided each request (retry.h): its outcome, and the
		 * time of the entry that decided it (an earlier one for a
		 * duplicate in the log). Not found: its record is already
		 * forgotten (min_running), so it applied here. */
		if (code == 0 && tablet_fsm_refused(result, w->client_id, w->seq)) {
			st = DOCRAFT_ETOOOLD; /* retry window expired: not applied */
		} else if (code == 0 &&
			   !retry_lookup(&t->fsm.retry, w->client_id, w->seq, &ht, &st)) {
			ht = f->ht;
			st = 0;
		}
		if (st == 0)
			lathist_record(&t->st.write_latency, (uv_hrtime() - w->start_ns_) / 1000);
		if (st != 0 || w->redis == NULL)
			tablet_write_answer(w, st, st == 0 ? ht : 0);
		else if (tablet_fsm_replies(result, w->client_id, w->seq, &rp, &rlens, &rn))
			answer_replies(w, 0, ht, rp, rlens, rn);
		else
			answer_stored(t, w, ht); /* decided by an earlier entry */
		w = next;
	}
	free(f);
}

/* A queued write that duplicates one in flight waits for it. */
static bool attach_duplicate(struct tablet *t, struct tablet_write *w)
{
	for (struct inflight *f = t->if_head; f != NULL; f = f->next)
		for (struct tablet_write *o = f->writes; o != NULL; o = o->next_)
			if (o->seq == w->seq &&
			    memcmp(o->client_id, w->client_id, ENTRY_CLIENT_ID_LEN) == 0) {
				w->dups_ = o->dups_;
				o->dups_ = w;
				return true;
			}
	return false;
}

/* The largest entry of one request: the group cap, passed by at most
 * LONE_SLACK (a write of DocDB's largest value, 4 MiB, with its key and
 * framing, must fit an entry of its own), never past ENTRY_MAX_BYTES.
 * take_group puts such a request alone into its entry. */
#define LONE_SLACK ((size_t)1 << 20)
static size_t lone_max(const struct tablet *t)
{
	size_t m = t->o.max_entry_bytes + LONE_SLACK;
	return m < ENTRY_MAX_BYTES ? m : ENTRY_MAX_BYTES;
}

/* Takes from the queue what fits in one entry into *take (n requests,
 * *bytes with the header), answering retries of decided writes and
 * attaching retries of writes in flight on the way. A conditional write
 * goes alone: it ends the group before it and is the only request of its
 * entry. */
static uint32_t take_group(struct tablet *t, struct tablet_write **take)
{
	struct tablet_write **tail = take, *w;
	size_t bytes = ENTRY_HEADER_SIZE;
	uint32_t n = 0;
	bool alone = false, redis = false;

	*take = NULL;
	while (!alone && (w = t->wq_head) != NULL) {
		size_t need = entry_request_size(w->cond_len, w->batch_len + w->redis_len);
		if (n > 0 && (bytes + need > t->o.max_entry_bytes || w->cond_len > 0 ||
			      redis != (w->redis != NULL)))
			break;
		t->wq_head = w->next_;
		if (t->wq_head == NULL)
			t->wq_tail = NULL;
		w->next_ = NULL;
		if (retry_lookup(&t->fsm.retry, w->client_id, w->seq, &w->ht_, &w->status_)) {
			if (w->status_ != 0)
				w->ht_ = 0;
			w->next_ = t->done;
			t->done = w;
			continue;
		}
		if (attach_duplicate(t, w))
			continue;
		*tail = w;
		tail = &w->next_;
		bytes += need;
		n++;
		alone = w->cond_len > 0;
		redis = w->redis != NULL;
	}
	return n;
}

/* Proposes one entry holding the n writes of take; false (each answered
 * with raft's code) if raft refused it. */
static bool propose_entry(struct tablet *t, struct tablet_write *take, uint32_t n)
{
	struct inflight *f = xzalloc(sizeof *f);
	struct raft_buffer rb;
	struct tablet_write *w;
	int rv;

	f->t = t;
	f->ht = hlc_now(&t->hlc);
	f->writes = take;
	buf_reset(&t->entry);
	/* Version 2 unless Redis: older builds follow the entry (entry.h). */
	entry_begin_v(&t->entry, f->ht, n, take->redis != NULL ? ENTRY_VERSION : 2);
	for (w = take; w != NULL; w = w->next_)
		if (w->redis != NULL)
			entry_add_redis(&t->entry, w->client_id, w->seq, w->min_running, w->redis,
					w->redis_len);
		else
			entry_add_request_if(&t->entry, w->client_id, w->seq, w->min_running,
					     w->cond, w->cond_len, w->batch, w->batch_len);
	entry_finish(&t->entry);
	rb.len = t->entry.len;
	rb.base = raft_malloc(rb.len);
	if (rb.base == NULL)
		PANIC("out of memory");
	memcpy(rb.base, t->entry.data, rb.len);
	f->req.data = f;
	f->epoch = t->epoch;
	f->sent_ns = tablet_read_clock(t);
	rv = raft_apply(t->raft, &f->req, &rb, 1, apply_cb);
	if (rv != 0) {
		raft_free(rb.base);
		for (w = take; w != NULL;) {
			struct tablet_write *next = w->next_;
			tablet_write_answer(w, tablet_from_raft(rv), 0);
			w = next;
		}
		free(f);
		return false;
	}
	f->prev = t->if_tail;
	if (t->if_tail)
		t->if_tail->next = f;
	else
		t->if_head = f;
	t->if_tail = f;
	t->n_inflight++;
	t->st.entries++;
	t->st.writes += n;
	return true;
}

void tablet_write_propose(struct tablet *t)
{
	/* Group commit: while max_inflight entries wait for their majority,
	 * writes queue up and go into the next entry together. Proposing
	 * every loop turn instead gave ~3.5 writes per entry at 64 clients
	 * on 4 tablets, and each entry costs about two client writes of CPU
	 * over the cluster (messages, disk submissions, a RocksDB write per
	 * replica): docs/benchmarks.md. */
	while (t->wq_head != NULL && t->n_inflight < t->o.max_inflight) {
		struct tablet_write *take;
		uint32_t n = take_group(t, &take);
		if (n > 0)
			propose_entry(t, take, n);
	}
}

int tablet_write(struct tablet *t, struct tablet_write *req)
{
	int rv = tablet_admit(t);
	if (rv != 0)
		return rv;
	/* The process's memtables are far over their budget: the flusher is
	 * behind (docdb/store_env.h); back off before it reaches Raft. */
	if (store_env_busy(t->o.store.env))
		return DOCRAFT_EBUSY;
	if (req->cb == NULL || (req->batch == NULL && req->batch_len != 0) ||
	    (req->cond == NULL && req->cond_len != 0) ||
	    (req->redis != NULL && (req->batch_len != 0 || req->cond_len != 0)))
		return DOCRAFT_EINVAL;
	if (entry_request_size(req->cond_len, req->batch_len + req->redis_len) +
		    ENTRY_HEADER_SIZE > lone_max(t))
		return DOCRAFT_ETOOBIG;
	/* Malformed commands in the log would fail every replica's apply. */
	if (req->redis != NULL) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		uint32_t n;
		if (entry_redis_validate(req->redis, req->redis_len, &n, errmsg) != 0)
			return DOCRAFT_EINVAL;
	}
	/* A malformed blob in the log would fail every replica's apply. */
	if (req->cond_len > 0) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		if (condition_validate(req->cond, req->cond_len, errmsg) != 0)
			return DOCRAFT_EINVAL;
	}
	req->next_ = NULL;
	req->dups_ = NULL;
	req->start_ns_ = uv_hrtime();
	*(t->wq_tail != NULL ? &t->wq_tail->next_ : &t->wq_head) = req;
	t->wq_tail = req;
	return 0;
}
