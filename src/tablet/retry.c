/* The retry table; the format and why loading it is exact are in retry.h. */
#include "tablet/retry.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

/* A chunk holding some of a client's seqs: a store key, or one being built
 * by the entry being applied. */
struct retry_chunk {
	uint64_t key; /* the key's BE64: an entry's raft index, or a legacy record's seq */
	size_t n;     /* seqs it holds */
	bool stored;  /* in the store (else made by the entry being applied) */
};

struct retry_client {
	uint8_t id[ENTRY_CLIENT_ID_LEN];
	uint64_t *seqs; /* sorted, distinct */
	uint64_t *hts;  /* hts[i]: when seqs[i] was decided */
	uint64_t *chunks; /* chunks[i]: the key of the chunk holding seqs[i] */
	uint8_t *outcomes; /* outcomes[i]: 0 applied, else RETRY_OUTCOME_* */
	size_t n;
	size_t cap;
	struct retry_chunk *live; /* sorted by key, each n > 0 */
	size_t nlive;
	size_t live_cap;
	uint64_t entry;     /* index of the last entry recorded for it (0: none since the load) */
	uint64_t watermark; /* that entry's largest drop point */
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (q == NULL)
		PANIC("out of memory");
	return q;
}

void retry_init(struct retry_table *t)
{
	memset(t, 0, sizeof *t);
}

void retry_free(struct retry_table *t)
{
	for (size_t i = 0; i < t->nslots; i++) {
		struct retry_client *c = t->slots[i];
		if (c == NULL)
			continue;
		free(c->seqs);
		free(c->hts);
		free(c->chunks);
		free(c->outcomes);
		free(c->live);
		free(c);
	}
	free(t->slots);
	memset(t, 0, sizeof *t);
}

static size_t slot_of(const uint8_t id[ENTRY_CLIENT_ID_LEN], size_t nslots)
{
	uint64_t h = 1469598103934665603ULL;
	for (int i = 0; i < ENTRY_CLIENT_ID_LEN; i++)
		h = (h ^ id[i]) * 1099511628211ULL;
	return (size_t)(h & (nslots - 1));
}

static struct retry_client *find(const struct retry_table *t, const uint8_t id[ENTRY_CLIENT_ID_LEN])
{
	if (t->nslots == 0)
		return NULL;
	for (size_t i = slot_of(id, t->nslots);; i = (i + 1) & (t->nslots - 1)) {
		struct retry_client *c = t->slots[i];
		if (c == NULL)
			return NULL;
		if (memcmp(c->id, id, ENTRY_CLIENT_ID_LEN) == 0)
			return c;
	}
}

static void insert_slot(struct retry_client **slots, size_t nslots, struct retry_client *c)
{
	size_t i = slot_of(c->id, nslots);
	while (slots[i] != NULL)
		i = (i + 1) & (nslots - 1);
	slots[i] = c;
}

static struct retry_client *get(struct retry_table *t, const uint8_t id[ENTRY_CLIENT_ID_LEN])
{
	struct retry_client *c = find(t, id);
	if (c != NULL)
		return c;
	if ((t->nclients + 1) * 2 > t->nslots) {
		size_t n = t->nslots ? t->nslots * 2 : 64;
		struct retry_client **s = calloc(n, sizeof *s);
		if (s == NULL)
			PANIC("out of memory");
		for (size_t i = 0; i < t->nslots; i++)
			if (t->slots[i] != NULL)
				insert_slot(s, n, t->slots[i]);
		free(t->slots);
		t->slots = s;
		t->nslots = n;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL)
		PANIC("out of memory");
	memcpy(c->id, id, ENTRY_CLIENT_ID_LEN);
	insert_slot(t->slots, t->nslots, c);
	t->nclients++;
	return c;
}

/* Index of the first seq >= s. */
static size_t lower_bound(const struct retry_client *c, uint64_t s)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->seqs[mid] < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of seq among c's held seqs; SIZE_MAX if not held. */
static size_t seq_index(const struct retry_client *c, uint64_t seq)
{
	size_t i = lower_bound(c, seq);
	return i < c->n && c->seqs[i] == seq ? i : SIZE_MAX;
}

/* Index of the first live chunk with a key >= key. */
static size_t chunk_at(const struct retry_client *c, uint64_t key)
{
	size_t lo = 0, hi = c->nlive;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->live[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool retry_lookup(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		  uint64_t seq, uint64_t *ht, int *status)
{
	const struct retry_client *c = find(t, cid);
	size_t i = c != NULL ? seq_index(c, seq) : SIZE_MAX;
	if (i == SIZE_MAX)
		return false;
	if (ht != NULL)
		*ht = c->hts[i];
	if (status != NULL)
		*status = c->outcomes[i] == RETRY_OUTCOME_CONDITION ? DOCRAFT_ECONDITION : 0;
	return true;
}

bool retry_applied(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq)
{
	return retry_lookup(t, cid, seq, NULL, NULL);
}

/* One more seq in chunk key (made, as stored or not, if not live). */
static void hold(struct retry_table *t, struct retry_client *c, uint64_t key, bool stored)
{
	size_t i = chunk_at(c, key);
	if (i < c->nlive && c->live[i].key == key) {
		c->live[i].n++;
		return;
	}
	if (c->nlive == c->live_cap) {
		c->live_cap = c->live_cap ? c->live_cap * 2 : 4;
		c->live = xrealloc(c->live, c->live_cap * sizeof *c->live);
	}
	memmove(c->live + i + 1, c->live + i, (c->nlive - i) * sizeof *c->live);
	c->live[i] = (struct retry_chunk){.key = key, .n = 1, .stored = stored};
	c->nlive++;
	t->nchunks++;
}

/* Adds seq, not held yet, in chunk key. */
static void add_seq(struct retry_table *t, struct retry_client *c, uint64_t seq, uint64_t ht,
		    uint8_t outcome, uint64_t key, bool stored)
{
	size_t i = lower_bound(c, seq);
	PRE(seq_index(c, seq) == SIZE_MAX);
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->seqs = xrealloc(c->seqs, c->cap * sizeof *c->seqs);
		c->hts = xrealloc(c->hts, c->cap * sizeof *c->hts);
		c->chunks = xrealloc(c->chunks, c->cap * sizeof *c->chunks);
		c->outcomes = xrealloc(c->outcomes, c->cap * sizeof *c->outcomes);
	}
	if (c->n > i) {
		memmove(c->seqs + i + 1, c->seqs + i, (c->n - i) * sizeof *c->seqs);
		memmove(c->hts + i + 1, c->hts + i, (c->n - i) * sizeof *c->hts);
		memmove(c->chunks + i + 1, c->chunks + i, (c->n - i) * sizeof *c->chunks);
		memmove(c->outcomes + i + 1, c->outcomes + i, (c->n - i) * sizeof *c->outcomes);
	}
	c->seqs[i] = seq;
	c->hts[i] = ht;
	c->chunks[i] = key;
	c->outcomes[i] = outcome;
	c->n++;
	t->nrecords++;
	hold(t, c, key, stored);
}

void retry_changes_init(struct retry_changes *ch)
{
	memset(ch, 0, sizeof *ch);
	buf_init(&ch->keys);
}

void retry_changes_reset(struct retry_changes *ch, uint64_t idx)
{
	PRE(idx > 0);
	ch->index = idx;
	ch->n = 0;
	ch->ntouched = 0;
	buf_reset(&ch->keys);
}

void retry_changes_free(struct retry_changes *ch)
{
	free(ch->raw);
	free(ch->touched);
	buf_free(&ch->keys);
	memset(ch, 0, sizeof *ch);
}

/* Appends the raw record of key 0x02 | id | BE64 key; a put's value is
 * appended to ch->keys by the caller, from the offset in r->val. Offsets
 * become pointers in retry_changes_finish, once the buffer stops moving. */
static struct store_raw *change(struct retry_changes *ch, const uint8_t id[ENTRY_CLIENT_ID_LEN],
				uint64_t key, bool del)
{
	struct store_raw *r;
	if (ch->n == ch->cap) {
		ch->cap = ch->cap ? ch->cap * 2 : 16;
		ch->raw = xrealloc(ch->raw, ch->cap * sizeof *ch->raw);
	}
	r = &ch->raw[ch->n++];
	memset(r, 0, sizeof *r);
	r->key = (const void *)(uintptr_t)ch->keys.len;
	r->klen = RETRY_KEY_LEN;
	buf_push(&ch->keys, RETRY_PREFIX);
	buf_append(&ch->keys, id, ENTRY_CLIENT_ID_LEN);
	buf_append_be64(&ch->keys, key);
	r->del = del;
	if (!del)
		r->val = (const void *)(uintptr_t)ch->keys.len;
	return r;
}

/* One seq less in chunk key; a stored chunk left empty is deleted. */
static void release(struct retry_table *t, struct retry_client *c, uint64_t key,
		    struct retry_changes *ch)
{
	size_t i = chunk_at(c, key);
	ASSERT(i < c->nlive && c->live[i].key == key && c->live[i].n > 0);
	if (--c->live[i].n > 0)
		return;
	if (c->live[i].stored)
		change(ch, c->id, key, true);
	memmove(c->live + i, c->live + i + 1, (c->nlive - i - 1) * sizeof *c->live);
	c->nlive--;
	t->nchunks--;
}

void retry_record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		  uint64_t min_running, uint64_t ht, int status, struct retry_changes *ch)
{
	/* Never forget the request being applied. */
	uint64_t below = min_running < seq ? min_running : seq;
	struct retry_client *c;
	size_t drop;
	PRE(ch->index > 0 && (status == 0 || status == DOCRAFT_ECONDITION));
	c = get(t, cid);
	if (c->entry != ch->index) {
		PRE(c->entry < ch->index);
		c->entry = ch->index;
		c->watermark = below;
		if (ch->ntouched == ch->touched_cap) {
			ch->touched_cap = ch->touched_cap ? ch->touched_cap * 2 : 16;
			ch->touched = xrealloc(ch->touched, ch->touched_cap * sizeof *ch->touched);
		}
		ch->touched[ch->ntouched++] = c;
	} else if (below > c->watermark) {
		c->watermark = below;
	}
	drop = lower_bound(c, below);
	for (size_t i = 0; i < drop; i++)
		release(t, c, c->chunks[i], ch);
	if (drop > 0) {
		memmove(c->seqs, c->seqs + drop, (c->n - drop) * sizeof *c->seqs);
		memmove(c->hts, c->hts + drop, (c->n - drop) * sizeof *c->hts);
		memmove(c->chunks, c->chunks + drop, (c->n - drop) * sizeof *c->chunks);
		memmove(c->outcomes, c->outcomes + drop, (c->n - drop) * sizeof *c->outcomes);
	}
	c->n -= drop;
	t->nrecords -= drop;
	add_seq(t, c, seq, ht, status == DOCRAFT_ECONDITION ? RETRY_OUTCOME_CONDITION : 0,
		ch->index, false);
}

/* The put of c's chunk of entry ch->index: every seq it holds, ascending
 * (its own, and a legacy record's sharing the key). */
static void put_chunk(struct retry_changes *ch, struct retry_client *c)
{
	size_t k = chunk_at(c, ch->index), items = 0, from = c->n, seen = 0;
	struct store_raw *r;
	ASSERT(k < c->nlive && c->live[k].key == ch->index);
	/* Its seqs are among the newest the client holds: scan from the end
	 * back to the first of them only, not every seq a client with a stuck
	 * request keeps (this runs for every entry on every replica). */
	while (seen < c->live[k].n) {
		ASSERT(from > 0);
		seen += c->chunks[--from] == ch->index;
	}
	r = change(ch, c->id, ch->index, false);
	buf_push(&ch->keys, RETRY_CHUNK_TAG);
	buf_append_be64(&ch->keys, c->watermark);
	for (size_t i = from; i < c->n; i++) {
		if (c->chunks[i] != ch->index)
			continue;
		buf_append_be64(&ch->keys, c->seqs[i]);
		buf_append_be64(&ch->keys, c->hts[i]);
		buf_push(&ch->keys, c->outcomes[i]);
		items++;
	}
	ASSERT(items == c->live[k].n);
	r->vlen = RETRY_CHUNK_HEAD_LEN + items * RETRY_CHUNK_ITEM_LEN;
	c->live[k].stored = true;
}

void retry_changes_finish(struct retry_changes *ch)
{
	for (size_t i = 0; i < ch->ntouched; i++)
		put_chunk(ch, ch->touched[i]);
	ch->ntouched = 0;
	for (size_t i = 0; i < ch->n; i++) {
		struct store_raw *r = &ch->raw[i];
		r->key = ch->keys.data + (uintptr_t)r->key;
		if (!r->del)
			r->val = ch->keys.data + (uintptr_t)r->val;
	}
}

/* ---- loading ---- */

/* One stored record of the client being loaded; its value is in vals. */
struct rec {
	uint64_t key;
	size_t off;
	size_t len;
	bool legacy;
	uint64_t later; /* the largest watermark of the chunks after it */
};

struct loader {
	struct retry_table *t;
	uint8_t id[ENTRY_CLIENT_ID_LEN]; /* the client whose records are in recs */
	struct rec *recs;
	size_t n;
	size_t cap;
	struct buf vals;
};

/* Checks a record's value and queues it for the client being loaded. */
static int queue(struct loader *l, const uint8_t *k, const uint8_t *v, size_t vl, char *errmsg)
{
	bool legacy = vl == 8 || (vl == 9 && v[8] == RETRY_OUTCOME_CONDITION);
	uint64_t key = be64_load(k + 1 + ENTRY_CLIENT_ID_LEN);
	if (!legacy) {
		if (vl < RETRY_CHUNK_HEAD_LEN + RETRY_CHUNK_ITEM_LEN ||
		    (vl - RETRY_CHUNK_HEAD_LEN) % RETRY_CHUNK_ITEM_LEN != 0 || v[0] != RETRY_CHUNK_TAG)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "retry record %llu with a value of %zu bytes",
				       (unsigned long long)key, vl);
		for (size_t o = RETRY_CHUNK_HEAD_LEN; o < vl; o += RETRY_CHUNK_ITEM_LEN) {
			uint8_t outcome = v[o + 16];
			if (outcome != 0 && outcome != RETRY_OUTCOME_CONDITION)
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "retry chunk %llu with an outcome %u",
					       (unsigned long long)key, outcome);
			if (o > RETRY_CHUNK_HEAD_LEN &&
			    be64_load(v + o) <= be64_load(v + o - RETRY_CHUNK_ITEM_LEN))
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "retry chunk %llu with unsorted seqs",
					       (unsigned long long)key);
		}
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->recs = xrealloc(l->recs, l->cap * sizeof *l->recs);
	}
	l->recs[l->n++] = (struct rec){.key = key, .off = l->vals.len, .len = vl, .legacy = legacy};
	buf_append(&l->vals, v, vl);
	return 0;
}

static int load_seq(struct loader *l, struct retry_client **c, uint64_t key, uint64_t seq,
		    uint64_t ht, uint8_t outcome, char *errmsg)
{
	if (*c == NULL)
		*c = get(l->t, l->id);
	if (seq_index(*c, seq) != SIZE_MAX)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "retry seq %llu held by two records",
			       (unsigned long long)seq);
	add_seq(l->t, *c, seq, ht, outcome, key, true);
	return 0;
}

/* Adds what the queued records of one client hold (the rule in retry.h). */
static int load_client(struct loader *l, char *errmsg)
{
	struct retry_client *c = NULL;
	uint64_t later = 0;
	int rv;
	for (size_t i = l->n; i-- > 0;) {
		struct rec *r = &l->recs[i];
		uint64_t w;
		if (r->legacy)
			continue;
		r->later = later;
		w = be64_load(l->vals.data + r->off + 1);
		if (w > later)
			later = w;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct rec *r = &l->recs[i];
		const uint8_t *v = l->vals.data + r->off;
		if (r->legacy) {
			if (r->key >= later &&
			    (rv = load_seq(l, &c, r->key, r->key, be64_load(v), r->len == 9 ? v[8] : 0,
					   errmsg)) != 0)
				return rv;
			continue;
		}
		for (size_t o = RETRY_CHUNK_HEAD_LEN; o < r->len; o += RETRY_CHUNK_ITEM_LEN) {
			uint64_t seq = be64_load(v + o);
			if (seq >= r->later &&
			    (rv = load_seq(l, &c, r->key, seq, be64_load(v + o + 8), v[o + 16],
					   errmsg)) != 0)
				return rv;
		}
	}
	l->n = 0;
	buf_reset(&l->vals);
	return 0;
}

int retry_load(struct retry_table *t, struct store *s, char *errmsg)
{
	const uint8_t lo = RETRY_PREFIX, hi = RETRY_PREFIX + 1;
	struct store_iter *it = store_iter_new(s, &lo, 1, &hi, 1);
	struct loader l = {.t = t};
	int rv = 0;
	retry_free(t);
	buf_init(&l.vals);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v;
		if (kl != RETRY_KEY_LEN) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT, "retry record with a key of %zu bytes",
				     kl);
			goto out;
		}
		if (l.n > 0 && memcmp(l.id, k + 1, ENTRY_CLIENT_ID_LEN) != 0 &&
		    (rv = load_client(&l, errmsg)) != 0)
			goto out;
		memcpy(l.id, k + 1, ENTRY_CLIENT_ID_LEN);
		v = store_iter_value(it, &vl);
		if ((rv = queue(&l, k, v, vl, errmsg)) != 0)
			goto out;
	}
	if ((rv = store_iter_status(it, errmsg)) == 0)
		rv = load_client(&l, errmsg);
out:
	store_iter_free(it);
	free(l.recs);
	buf_free(&l.vals);
	if (rv != 0)
		retry_free(t);
	return rv;
}
