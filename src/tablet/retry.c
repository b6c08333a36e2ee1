#include "tablet/retry.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

struct retry_client {
	uint8_t id[ENTRY_CLIENT_ID_LEN];
	uint64_t *seqs; /* sorted, distinct */
	uint64_t *hts;  /* hts[i]: when seqs[i] was decided */
	uint8_t *outcomes; /* outcomes[i]: 0 applied, else RETRY_OUTCOME_* */
	size_t n;
	size_t cap;
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
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slots[i] != NULL) {
			free(t->slots[i]->seqs);
			free(t->slots[i]->hts);
			free(t->slots[i]->outcomes);
			free(t->slots[i]);
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

bool retry_lookup(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		  uint64_t seq, uint64_t *ht, int *status)
{
	const struct retry_client *c = find(t, cid);
	size_t i;
	if (c == NULL)
		return false;
	i = lower_bound(c, seq);
	if (i >= c->n || c->seqs[i] != seq)
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

static void add_seq(struct retry_table *t, struct retry_client *c, uint64_t seq, uint64_t ht,
		    uint8_t outcome)
{
	size_t i = lower_bound(c, seq);
	if (i < c->n && c->seqs[i] == seq)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->seqs = xrealloc(c->seqs, c->cap * sizeof *c->seqs);
		c->hts = xrealloc(c->hts, c->cap * sizeof *c->hts);
		c->outcomes = xrealloc(c->outcomes, c->cap * sizeof *c->outcomes);
	}
	if (c->n > i) {
		memmove(c->seqs + i + 1, c->seqs + i, (c->n - i) * sizeof *c->seqs);
		memmove(c->hts + i + 1, c->hts + i, (c->n - i) * sizeof *c->hts);
		memmove(c->outcomes + i + 1, c->outcomes + i, (c->n - i) * sizeof *c->outcomes);
	}
	c->seqs[i] = seq;
	c->hts[i] = ht;
	c->outcomes[i] = outcome;
	c->n++;
	t->nrecords++;
}

void retry_changes_init(struct retry_changes *ch)
{
	memset(ch, 0, sizeof *ch);
	buf_init(&ch->keys);
}

void retry_changes_reset(struct retry_changes *ch)
{
	ch->n = 0;
	buf_reset(&ch->keys);
}

void retry_changes_free(struct retry_changes *ch)
{
	free(ch->raw);
	buf_free(&ch->keys);
	memset(ch, 0, sizeof *ch);
}

/* Records offsets in key/val while building; retry_changes_finish turns them
 * into pointers once the buffer stops moving. */
static void change(struct retry_changes *ch, const uint8_t id[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		   bool del, uint64_t ht, uint8_t outcome)
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
	buf_append_be64(&ch->keys, seq);
	r->del = del;
	if (!del) {
		r->val = (const void *)(uintptr_t)ch->keys.len;
		r->vlen = 8;
		buf_append_be64(&ch->keys, ht);
		if (outcome != 0) {
			/* Applied records keep the original 8-byte format. */
			r->vlen = 9;
			buf_push(&ch->keys, outcome);
		}
	}
}

void retry_changes_finish(struct retry_changes *ch)
{
	for (size_t i = 0; i < ch->n; i++) {
		struct store_raw *r = &ch->raw[i];
		r->key = ch->keys.data + (uintptr_t)r->key;
		if (!r->del)
			r->val = ch->keys.data + (uintptr_t)r->val;
	}
}

void retry_record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		  uint64_t min_running, uint64_t ht, int status, struct retry_changes *ch)
{
	struct retry_client *c = get(t, cid);
	uint8_t outcome = status == DOCRAFT_ECONDITION ? RETRY_OUTCOME_CONDITION : 0;
	size_t drop;
	if (min_running > seq)
		min_running = seq; /* never forget the request being applied */
	drop = lower_bound(c, min_running);
	for (size_t i = 0; i < drop; i++)
		change(ch, cid, c->seqs[i], true, 0, 0);
	if (drop > 0) {
		memmove(c->seqs, c->seqs + drop, (c->n - drop) * sizeof *c->seqs);
		memmove(c->hts, c->hts + drop, (c->n - drop) * sizeof *c->hts);
		memmove(c->outcomes, c->outcomes + drop, (c->n - drop) * sizeof *c->outcomes);
	}
	c->n -= drop;
	t->nrecords -= drop;
	if (!retry_applied(t, cid, seq)) {
		add_seq(t, c, seq, ht, outcome);
		change(ch, cid, seq, false, ht, outcome);
	}
}

int retry_load(struct retry_table *t, struct store *s, char *errmsg)
{
	const uint8_t lo = RETRY_PREFIX, hi = RETRY_PREFIX + 1;
	struct store_iter *it = store_iter_new(s, &lo, 1, &hi, 1);
	int rv;
	retry_free(t);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		if (kl != RETRY_KEY_LEN) {
			store_iter_free(it);
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "retry record with a key of %zu bytes", kl);
		}
		size_t vl;
		const uint8_t *v = store_iter_value(it, &vl);
		if (vl != 8 && !(vl == 9 && v[8] == RETRY_OUTCOME_CONDITION)) {
			store_iter_free(it);
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "retry record with a value of %zu bytes", vl);
		}
		add_seq(t, get(t, k + 1), be64_load(k + 1 + ENTRY_CLIENT_ID_LEN), be64_load(v),
			vl == 9 ? v[8] : 0);
	}
	rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	return rv;
}
