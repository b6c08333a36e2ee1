/* Redis requests at apply (issue 17; entry.h "Redis commands", fsm.h).
 *
 * Design. An entry's Redis requests run in ONE yedis txn (yedis.h) made at
 * the entry's first Redis request: the store as of the entry's hybrid time
 * (it holds exactly the entries before this one), seed = the entry's raft
 * index (SPOP / SRANDMEMBER draw the same on every replica), writes into one
 * scratch batch. Each request runs its commands in order through
 * yedis_exec; the txn's overlay makes a later command (of the same or a
 * later request of the entry) see the earlier ones' writes, so INCR a from
 * n clients grouped into one entry gives 1..n. The scratch batch becomes
 * one store part of the entry's RocksDB write (a request's writes are the
 * slice it appended; the slices in order are the whole batch), with the
 * retry records and the applied marker, as for plain batches. An entry
 * never mixes Redis and batch requests (entry.h): the txn would not see
 * the batches.
 *
 * Replies. Every replica evaluates the same commands on the same store at
 * the same time and gets the same replies; they are part of the replicated
 * state: each request's replies go under its reply record (retry.h,
 * RETRY_OUTCOME_REPLIES) in the same write — except when every reply is
 * "+OK" (SET, MSET, ...): the request is then recorded as plainly applied
 * and a retry answered "+OK" per command, which saves the record's put and
 * its later delete on the hottest write path — so a retry of a decided request
 * is answered with its first replies (INCR's value, never a second
 * increment) by this leader, a later one, or a replica that restarted. The
 * record's value:
 *
 *   u8 form | BE32 n, the number of replies |
 *   form 0: n x BE32 the length of each reply | the replies, concatenated
 *
 * form 1: the replies were larger than FSM_REDIS_REPLY_KEEP_MAX; a retry is
 * answered, per command, "-ERR docraft: reply of a retried command is too
 * large to keep" (the first answer still carries the real replies).
 *
 * The replies of the last applied entry are also kept in memory for the
 * leader's apply callback (tablet_fsm_replies), valid until the next apply.
 *
 * Threading: the raft loop thread (fsm.h). */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/schema.h"
#include "redis/resp.h"
#include "tablet/entry.h"
#include "tablet/fsm.h"
#include "tablet/retry.h"
#include "yedis/yedis.h"

#define FORM_REPLIES 0
#define FORM_TOO_LARGE 1
#define HEAD_LEN 5

struct fsm_reply {
	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	size_t off, len; /* in replies */
	size_t first;    /* its first reply's length in lens */
	uint32_t n;
};

struct fsm_redis {
	struct yedis_txn *txn; /* NULL until the entry's first Redis request */
	struct batch batch;    /* the entry's Redis writes */
	struct buf replies;    /* every request's replies, concatenated */
	uint32_t *lens;        /* ... each one's length */
	size_t nlens, lenscap;
	struct fsm_reply *req; /* per request of the entry: its replies */
	size_t nreq, reqcap;
	struct buf vals;       /* reply records' keys and values */
	struct store_raw *raw; /* the reply records (pointers fixed at finish) */
	size_t nraw, rawcap;
	struct entry_redis_iter it;
	uint64_t idx, ht;
};

static struct fsm_redis *get(struct tablet_fsm *f)
{
	if (f->redis == NULL) {
		f->redis = xzalloc(sizeof *f->redis);
		batch_init(&f->redis->batch);
	}
	return f->redis;
}

void fsm_redis_reset(struct tablet_fsm *f, uint64_t idx, uint64_t ht)
{
	struct fsm_redis *r = get(f);
	if (r->txn != NULL)
		yedis_txn_free(r->txn);
	r->txn = NULL;
	batch_reset(&r->batch);
	if (r->replies.cap > (1u << 20)) /* a big entry does not pin its buffer */
		buf_free(&r->replies);
	buf_reset(&r->replies);
	buf_reset(&r->vals);
	r->nreq = 0;
	r->nraw = 0;
	r->nlens = 0;
	r->idx = idx;
	r->ht = ht;
}

static void add_record(struct fsm_redis *r, const struct entry_request *q, const struct fsm_reply *rep)
{
	uint8_t key[RETRY_KEY_LEN];
	bool keep = rep->len <= FSM_REDIS_REPLY_KEEP_MAX;
	struct store_raw *raw;
	if (r->nraw == r->rawcap) {
		r->rawcap = r->rawcap ? r->rawcap * 2 : 8;
		r->raw = xrealloc(r->raw, r->rawcap * sizeof *r->raw);
	}
	raw = &r->raw[r->nraw++];
	memset(raw, 0, sizeof *raw);
	retry_reply_key(key, q->client_id, q->seq);
	/* Offsets now, pointers at finish (vals may still move). */
	raw->key = (const void *)(uintptr_t)r->vals.len;
	raw->klen = RETRY_KEY_LEN;
	buf_append(&r->vals, key, sizeof key);
	raw->val = (const void *)(uintptr_t)r->vals.len;
	buf_push(&r->vals, keep ? FORM_REPLIES : FORM_TOO_LARGE);
	buf_append_be32(&r->vals, rep->n);
	if (keep) {
		for (uint32_t i = 0; i < rep->n; i++)
			buf_append_be32(&r->vals, r->lens[rep->first + i]);
		buf_append(&r->vals, r->replies.data + rep->off, rep->len);
	}
	raw->vlen = r->vals.len - (uintptr_t)raw->val;
}

/* Whether every reply of rep is "+OK" (constant: a retry can say it again
 * without a record). */
static bool all_ok(const struct fsm_redis *r, const struct fsm_reply *rep)
{
	static const char ok[] = "+OK\r\n";
	const uint8_t *p = r->replies.data + rep->off;
	for (uint32_t i = 0; i < rep->n; i++, p += sizeof ok - 1)
		if (r->lens[rep->first + i] != sizeof ok - 1 || memcmp(p, ok, sizeof ok - 1) != 0)
			return false;
	return true;
}

int fsm_redis_run(struct tablet_fsm *f, const struct entry_request *q, bool *recorded,
		  char *errmsg)
{
	struct fsm_redis *r = get(f);
	struct fsm_reply *rep;
	const struct resp_arg *argv;
	uint32_t argc;
	int rv = 0;

	PRE(q->kind == ENTRY_KIND_REDIS);
	if (r->ht == 0) /* from the network: never the engine's assertion */
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "a Redis request in an entry without a hybrid time");
	if (r->txn == NULL) {
		const struct schema *schema = store_schema_acquire(f->store);
		struct yedis_txn_options o = {
			.store = f->store,
			.ht = r->ht,
			.seed = r->idx,
			.batch = &r->batch,
			.default_ttl_ms = schema != NULL ? schema->default_ttl_ms : 0,
		};
		store_schema_release(schema);
		r->txn = yedis_txn_new(&o);
	}
	if (r->nreq == r->reqcap) {
		r->reqcap = r->reqcap ? r->reqcap * 2 : 8;
		r->req = xrealloc(r->req, r->reqcap * sizeof *r->req);
	}
	rep = &r->req[r->nreq++];
	memcpy(rep->client_id, q->client_id, ENTRY_CLIENT_ID_LEN);
	rep->seq = q->seq;
	rep->off = r->replies.len;
	rep->first = r->nlens;
	rep->n = 0;
	entry_redis_iter_init(&r->it, q->redis, q->redis_len);
	while (rv == 0 && entry_redis_iter_next(&r->it, &argc, &argv)) {
		size_t before = r->replies.len;
		/* The leader checked the names; a replica of another build
		 * may not know one: yedis_exec replies an error, like Redis. */
		rv = yedis_exec(r->txn, argc, argv, &r->replies, errmsg);
		if (rv == 0 && r->replies.len - rep->off > FSM_REDIS_REPLIES_MAX) {
			r->replies.len = before;
			resp_error(&r->replies, FSM_REDIS_DROPPED);
		}
		if (r->nlens == r->lenscap) {
			r->lenscap = r->lenscap ? r->lenscap * 2 : 64;
			r->lens = xrealloc(r->lens, r->lenscap * sizeof *r->lens);
		}
		r->lens[r->nlens++] = (uint32_t)(r->replies.len - before);
		rep->n++;
	}
	entry_redis_iter_free(&r->it);
	rep->len = r->replies.len - rep->off;
	*recorded = rv == 0 && !all_ok(r, rep);
	if (*recorded)
		add_record(r, q, rep);
	return rv;
}

void fsm_redis_finish(struct tablet_fsm *f, struct store_part *part, const struct store_raw **raw,
		      size_t *nraw)
{
	struct fsm_redis *r = f->redis;
	part->batch = NULL;
	part->len = 0;
	*raw = NULL;
	*nraw = 0;
	if (r == NULL || r->nreq == 0)
		return;
	for (size_t i = 0; i < r->nraw; i++) {
		r->raw[i].key = r->vals.data + (uintptr_t)r->raw[i].key;
		r->raw[i].val = r->vals.data + (uintptr_t)r->raw[i].val;
	}
	yedis_txn_seal(r->txn);
	part->batch = r->batch.data.data;
	part->len = r->batch.data.len;
	*raw = r->raw;
	*nraw = r->nraw;
	/* The txn is done: what it read stays valid in the store. */
	yedis_txn_free(r->txn);
	r->txn = NULL;
}

bool tablet_fsm_has_replies(const void *result)
{
	const struct tablet_fsm *f = result;
	return f != NULL && f->redis != NULL && f->redis->nreq > 0;
}

bool tablet_fsm_replies(const void *result, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
			const uint8_t **p, const uint32_t **lens, uint32_t *n)
{
	const struct fsm_redis *r;
	if (!tablet_fsm_has_replies(result))
		return false;
	r = ((const struct tablet_fsm *)result)->redis;
	for (size_t i = 0; i < r->nreq; i++)
		if (r->req[i].seq == seq &&
		    memcmp(r->req[i].client_id, cid, ENTRY_CLIENT_ID_LEN) == 0) {
			*p = r->replies.data + r->req[i].off;
			*lens = r->lens + r->req[i].first;
			*n = r->req[i].n;
			return true;
		}
	return false;
}

int tablet_fsm_stored_replies(struct store *s, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
			      uint64_t seq, struct buf *out, struct buf *lens, uint32_t *n,
			      char *errmsg)
{
	uint64_t total = 0;
	uint32_t count;
	uint8_t key[RETRY_KEY_LEN], hi[RETRY_KEY_LEN];
	struct store_iter *it;
	const uint8_t *v;
	size_t vl, kl;
	int rv;

	retry_reply_key(key, cid, seq);
	memcpy(hi, key, sizeof hi);
	for (int i = RETRY_KEY_LEN - 1; i >= 0 && ++hi[i] == 0; i--)
		;
	it = store_iter_new(s, key, sizeof key, hi, sizeof hi);
	store_iter_seek(it, key, sizeof key);
	if (!store_iter_valid(it)) {
		rv = store_iter_status(it, errmsg);
		if (rv == 0)
			rv = err_set(errmsg, DOCRAFT_ECORRUPT,
				     "the replies of a decided Redis request (seq %llu) are missing",
				     (unsigned long long)seq);
		goto out;
	}
	v = store_iter_value(it, &vl);
	(void)store_iter_key(it, &kl);
	if (kl != RETRY_KEY_LEN || vl < HEAD_LEN || v[0] > FORM_TOO_LARGE ||
	    (v[0] == FORM_TOO_LARGE && vl != HEAD_LEN)) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT,
			     "the reply record of seq %llu is malformed (%zu bytes)",
			     (unsigned long long)seq, vl);
		goto out;
	}
	count = be32_load(v + 1);
	if (count > ENTRY_REDIS_MAX_COMMANDS ||
	    (v[0] == FORM_REPLIES && (vl - HEAD_LEN) / 4 < count)) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT,
			     "the reply record of seq %llu is malformed (%u replies)",
			     (unsigned long long)seq, count);
		goto out;
	}
	for (uint32_t i = 0; v[0] == FORM_REPLIES && i < count; i++)
		total += be32_load(v + HEAD_LEN + 4 * i);
	if (v[0] == FORM_REPLIES && total != vl - HEAD_LEN - 4 * (size_t)count) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT,
			     "the reply record of seq %llu is malformed (lengths)",
			     (unsigned long long)seq);
		goto out;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint32_t len;
		if (v[0] == FORM_REPLIES) {
			len = be32_load(v + HEAD_LEN + 4 * i);
		} else {
			size_t before = out->len;
			resp_error(out, FSM_REDIS_TOO_LARGE);
			len = (uint32_t)(out->len - before);
		}
		buf_append(lens, &len, sizeof len);
	}
	if (v[0] == FORM_REPLIES)
		buf_append(out, v + HEAD_LEN + 4 * (size_t)count, vl - HEAD_LEN - 4 * (size_t)count);
	*n = count;
	rv = 0;
out:
	store_iter_free(it);
	return rv;
}

void fsm_redis_free(struct tablet_fsm *f)
{
	struct fsm_redis *r = f->redis;
	if (r == NULL)
		return;
	if (r->txn != NULL)
		yedis_txn_free(r->txn);
	batch_free(&r->batch);
	buf_free(&r->replies);
	buf_free(&r->vals);
	free(r->req);
	free(r->raw);
	free(r->lens);
	entry_redis_iter_free(&r->it);
	free(r);
	f->redis = NULL;
}
