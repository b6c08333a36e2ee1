/* The retry table; the format, expiry and why loading it is exact are in
 * retry.h.
 *
 * Per client: held records in a treap by seq, live chunks in a treap by key
 * (treaps: binary search trees whose nodes also form a max-heap on a
 * pseudo-random priority, so their depth is O(log n) whatever the order of
 * the keys), the records in decision order in a queue (for expiry), and the
 * seqs the entry being applied recorded (for its chunk's put). */
#include "tablet/retry.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/mem.h"

/* ---- treaps ---- */

struct tnode {
	uint64_t key;
	uint64_t prio;
	struct tnode *l, *r;
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static struct tnode *tfind(struct tnode *n, uint64_t key)
{
	while (n != NULL && n->key != key)
		n = key < n->key ? n->l : n->r;
	return n;
}

/* Inserts n (its key absent) below *p. */
static void tinsert(struct tnode **p, struct tnode *n)
{
	struct tnode *x = *p;
	if (x == NULL) {
		n->l = n->r = NULL;
		*p = n;
		return;
	}
	if (n->key < x->key) {
		tinsert(&x->l, n);
		if (x->l->prio > x->prio) { /* rotate right */
			*p = x->l;
			x->l = (*p)->r;
			(*p)->r = x;
		}
	} else {
		tinsert(&x->r, n);
		if (x->r->prio > x->prio) { /* rotate left */
			*p = x->r;
			x->r = (*p)->l;
			(*p)->l = x;
		}
	}
}

/* Joins two treaps, every key of a below every key of b. */
static struct tnode *tjoin(struct tnode *a, struct tnode *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	if (a->prio > b->prio) {
		a->r = tjoin(a->r, b);
		return a;
	}
	b->l = tjoin(a, b->l);
	return b;
}

/* Unlinks and returns the node of key (NULL if absent). */
static struct tnode *tremove(struct tnode **p, uint64_t key)
{
	struct tnode *n;
	while (*p != NULL && (*p)->key != key)
		p = key < (*p)->key ? &(*p)->l : &(*p)->r;
	n = *p;
	if (n != NULL)
		*p = tjoin(n->l, n->r);
	return n;
}

/* The node of the smallest key, or NULL. */
static struct tnode *tmin(struct tnode *n)
{
	while (n != NULL && n->l != NULL)
		n = n->l;
	return n;
}

/* ---- the table ---- */

struct record {
	struct tnode n; /* key: the seq */
	uint64_t ht;    /* when it was decided */
	uint64_t chunk; /* the key of the chunk holding it */
	uint8_t outcome; /* 0 applied, else RETRY_OUTCOME_* */
};

/* A chunk holding some of a client's seqs: a store key, or one being built
 * by the entry being applied. */
struct chunk {
	struct tnode n; /* key: an entry's raft index (this entry's or, taken
			 * from an emptied chunk, an earlier one's), or a
			 * legacy record's seq */
	size_t count;   /* seqs it holds */
	bool stored;    /* in the store (else made by the entry being applied) */
	bool legacy;    /* stored as a legacy record (key: its seq), not a chunk */
};

/* A record in decision order; cmax: the largest seq pushed up to it. */
struct decided {
	uint64_t ht;
	uint64_t seq;
	uint64_t cmax;
};

struct retry_client {
	uint8_t id[ENTRY_CLIENT_ID_LEN];
	struct tnode *seqs;   /* struct record */
	size_t n;
	struct tnode *chunks; /* struct chunk */
	size_t nlive;
	struct decided *queue; /* [qhead, qlen): ht ascending */
	size_t qhead, qlen, qcap;
	uint64_t floor;       /* the largest drop point applied */
	uint64_t last_ht;     /* its newest decision */
	struct retry_client *older, *newer; /* the table's list by last_ht */
	uint64_t *pending;    /* seqs recorded by the entry being applied */
	size_t npending, pcap;
	uint64_t entry;     /* index of the last entry recorded for it (0: none since the load) */
	uint64_t watermark; /* that entry's largest drop point */
	/* The last chunk (not a legacy record) an entry emptied and deleted:
	 * that entry's index and the delete's place in its raw records. */
	uint64_t freed_entry;
	size_t freed_raw;
};

void retry_init(struct retry_table *t)
{
	memset(t, 0, sizeof *t);
	if (getrandom(&t->seed, sizeof t->seed, GRND_NONBLOCK) != (ssize_t)sizeof t->seed)
		t->seed = (uint64_t)(uintptr_t)t;
}

void retry_set_ttl(struct retry_table *t, uint64_t ttl_us)
{
	t->ttl_us = ttl_us;
}

static void free_tree(struct tnode *n)
{
	while (n != NULL) {
		struct tnode *r = n->r;
		free_tree(n->l);
		free(n);
		n = r;
	}
}

static void client_free(struct retry_client *c)
{
	free_tree(c->seqs);
	free_tree(c->chunks);
	free(c->queue);
	free(c->pending);
	free(c);
}

void retry_free(struct retry_table *t)
{
	uint64_t ttl = t->ttl_us, seed = t->seed;
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slots[i] != NULL)
			client_free(t->slots[i]);
	free(t->slots);
	memset(t, 0, sizeof *t);
	t->ttl_us = ttl;
	t->seed = seed;
}

static size_t slot_of(const uint8_t id[ENTRY_CLIENT_ID_LEN], size_t nslots)
{
	uint64_t h = 1469598103934665603ULL;
	for (int i = 0; i < ENTRY_CLIENT_ID_LEN; i++)
		h = (h ^ id[i]) * 1099511628211ULL;
	return (size_t)(h & (nslots - 1));
}

static size_t find_slot(const struct retry_table *t, const uint8_t id[ENTRY_CLIENT_ID_LEN])
{
	if (t->nslots == 0)
		return SIZE_MAX;
	for (size_t i = slot_of(id, t->nslots);; i = (i + 1) & (t->nslots - 1)) {
		struct retry_client *c = t->slots[i];
		if (c == NULL)
			return SIZE_MAX;
		if (memcmp(c->id, id, ENTRY_CLIENT_ID_LEN) == 0)
			return i;
	}
}

static struct retry_client *find(const struct retry_table *t, const uint8_t id[ENTRY_CLIENT_ID_LEN])
{
	size_t i = find_slot(t, id);
	return i == SIZE_MAX ? NULL : t->slots[i];
}

static void insert_slot(struct retry_client **slots, size_t nslots, struct retry_client *c)
{
	size_t i = slot_of(c->id, nslots);
	while (slots[i] != NULL)
		i = (i + 1) & (nslots - 1);
	slots[i] = c;
}

/* Empties slot i, moving later members of its probe run back. */
static void remove_slot(struct retry_table *t, size_t i)
{
	size_t mask = t->nslots - 1;
	t->slots[i] = NULL;
	for (size_t j = (i + 1) & mask; t->slots[j] != NULL; j = (j + 1) & mask) {
		size_t home = slot_of(t->slots[j]->id, t->nslots);
		/* j may move to i iff its home is not in (i, j] (cyclically). */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			t->slots[j] = NULL;
			i = j;
		}
	}
}

/* ---- the list of clients by their newest decision ---- */

static void unlink_client(struct retry_table *t, struct retry_client *c)
{
	if (c->older == NULL && t->oldest != c)
		return; /* a new client: on no list yet */
	*(c->older != NULL ? &c->older->newer : &t->oldest) = c->newer;
	*(c->newer != NULL ? &c->newer->older : &t->newest) = c->older;
	c->older = c->newer = NULL;
}

static void link_newest(struct retry_table *t, struct retry_client *c)
{
	c->older = t->newest;
	c->newer = NULL;
	*(t->newest != NULL ? &t->newest->newer : &t->oldest) = c;
	t->newest = c;
}

static struct retry_client *get(struct retry_table *t, const uint8_t id[ENTRY_CLIENT_ID_LEN])
{
	struct retry_client *c = find(t, id);
	if (c != NULL)
		return c;
	if ((t->nclients + 1) * 2 > t->nslots) {
		size_t n = t->nslots ? t->nslots * 2 : 64;
		struct retry_client **s = xcalloc(n, sizeof *s);
		for (size_t i = 0; i < t->nslots; i++)
			if (t->slots[i] != NULL)
				insert_slot(s, n, t->slots[i]);
		free(t->slots);
		t->slots = s;
		t->nslots = n;
	}
	c = xzalloc(sizeof *c);
	memcpy(c->id, id, ENTRY_CLIENT_ID_LEN);
	insert_slot(t->slots, t->nslots, c);
	t->nclients++;
	return c;
}

static struct record *held(const struct retry_client *c, uint64_t seq)
{
	return (struct record *)tfind(c->seqs, seq);
}

bool retry_lookup(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		  uint64_t seq, uint64_t *ht, int *status)
{
	const struct retry_client *c = find(t, cid);
	const struct record *r = c != NULL ? held(c, seq) : NULL;
	if (r == NULL)
		return false;
	if (ht != NULL)
		*ht = r->ht;
	if (status != NULL)
		*status = r->outcome == RETRY_OUTCOME_CONDITION ? DOCRAFT_ECONDITION : 0;
	return true;
}

bool retry_applied(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq)
{
	return retry_lookup(t, cid, seq, NULL, NULL);
}

/* Decisions before this time are out of the window (0: none). */
static uint64_t window_start(const struct retry_table *t, uint64_t ht)
{
	uint64_t ttl;
	if (t->ttl_us == 0 || t->ttl_us >= ht_physical(ht))
		return 0;
	ttl = ht_make(t->ttl_us, 0);
	return ht - ttl;
}

/* E(c, ht) of retry.h: 1 + the largest seq decided before the window. The
 * queue's running maximum also counts records no longer held: they were
 * forgotten below a drop point, so they never raise E above the floor. */
static uint64_t expiry_point(const struct retry_table *t, const struct retry_client *c, uint64_t ht)
{
	uint64_t start = window_start(t, ht);
	size_t lo = c->qhead, hi = c->qhead + c->qlen;
	if (start == 0)
		return 0;
	while (lo < hi) { /* the first decision at or after start */
		size_t mid = lo + (hi - lo) / 2;
		if (c->queue[mid].ht < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == c->qhead ? 0 : c->queue[lo - 1].cmax + 1;
}

bool retry_expired(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		   uint64_t seq, uint64_t ht)
{
	const struct retry_client *c = find(t, cid);
	uint64_t e;
	if (c == NULL || held(c, seq) != NULL)
		return false;
	e = expiry_point(t, c, ht);
	return seq < (e > c->floor ? e : c->floor);
}

static void queue_push(struct retry_client *c, uint64_t ht, uint64_t seq)
{
	uint64_t cmax = seq;
	if (c->qlen > 0 && c->queue[c->qhead + c->qlen - 1].cmax > cmax)
		cmax = c->queue[c->qhead + c->qlen - 1].cmax;
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead > c->qcap / 2) {
			memmove(c->queue, c->queue + c->qhead, c->qlen * sizeof *c->queue);
			c->qhead = 0;
		} else {
			c->qcap = c->qcap ? c->qcap * 2 : 8;
			c->queue = xrealloc(c->queue, c->qcap * sizeof *c->queue);
		}
	}
	c->queue[c->qhead + c->qlen++] = (struct decided){.ht = ht, .seq = seq, .cmax = cmax};
}

/* Drops the queue's head while it is out of the window or not held. */
static void queue_trim(const struct retry_table *t, struct retry_client *c, uint64_t ht)
{
	uint64_t start = window_start(t, ht);
	while (c->qlen > 0) {
		const struct decided *d = &c->queue[c->qhead];
		if (d->ht >= start && held(c, d->seq) != NULL)
			break;
		c->qhead++;
		c->qlen--;
	}
	if (c->qlen == 0)
		c->qhead = 0;
}

/* One more seq in chunk key (made, as stored or not, if not live). */
static void hold(struct retry_table *t, struct retry_client *c, uint64_t key, bool stored)
{
	struct chunk *k = (struct chunk *)tfind(c->chunks, key);
	if (k != NULL) {
		k->count++;
		return;
	}
	k = xzalloc(sizeof *k);
	k->n.key = key;
	k->n.prio = mix(key ^ t->seed);
	k->count = 1;
	k->stored = stored;
	tinsert(&c->chunks, &k->n);
	c->nlive++;
	t->nchunks++;
}

/* Adds seq, not held yet, in chunk key. */
static void add_seq(struct retry_table *t, struct retry_client *c, uint64_t seq, uint64_t ht,
		    uint8_t outcome, uint64_t key, bool stored)
{
	struct record *r = xzalloc(sizeof *r);
	PRE(held(c, seq) == NULL);
	r->n.key = seq;
	r->n.prio = mix(seq ^ ~t->seed);
	r->ht = ht;
	r->chunk = key;
	r->outcome = outcome;
	tinsert(&c->seqs, &r->n);
	c->n++;
	t->nrecords++;
	if (ht > c->last_ht)
		c->last_ht = ht;
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
static struct store_raw *change_at(struct retry_changes *ch, uint8_t prefix,
				   const uint8_t id[ENTRY_CLIENT_ID_LEN], uint64_t key, bool del)
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
	buf_push(&ch->keys, prefix);
	buf_append(&ch->keys, id, ENTRY_CLIENT_ID_LEN);
	buf_append_be64(&ch->keys, key);
	r->del = del;
	if (!del)
		r->val = (const void *)(uintptr_t)ch->keys.len;
	return r;
}

static struct store_raw *change(struct retry_changes *ch, const uint8_t id[ENTRY_CLIENT_ID_LEN],
				uint64_t key, bool del)
{
	return change_at(ch, RETRY_PREFIX, id, key, del);
}

/* A forgotten seq whose replies are stored: their record goes too. */
static void forget_replies(struct retry_changes *ch, const struct retry_client *c,
			   const struct record *r)
{
	if (r->outcome == RETRY_OUTCOME_REPLIES)
		change_at(ch, RETRY_REPLY_PREFIX, c->id, r->n.key, true);
}

static void forget_all_replies(struct retry_changes *ch, const struct retry_client *c,
			       const struct tnode *n)
{
	for (; n != NULL; n = n->r) {
		forget_all_replies(ch, c, n->l);
		forget_replies(ch, c, (const struct record *)n);
	}
}

/* One seq less in chunk key; a stored chunk left empty is deleted. */
static void release(struct retry_table *t, struct retry_client *c, uint64_t key,
		    struct retry_changes *ch)
{
	struct chunk *k = (struct chunk *)tfind(c->chunks, key);
	ASSERT(k != NULL && k->count > 0);
	if (--k->count > 0)
		return;
	if (k->stored) {
		change(ch, c->id, key, true);
		if (!k->legacy) {
			c->freed_entry = ch->index;
			c->freed_raw = ch->n - 1;
		}
	}
	tremove(&c->chunks, key);
	free(k);
	c->nlive--;
	t->nchunks--;
}

static void delete_chunks(struct retry_client *c, struct tnode *n, struct retry_changes *ch)
{
	for (; n != NULL; n = n->r) {
		delete_chunks(c, n->l, ch);
		if (((struct chunk *)n)->stored)
			change(ch, c->id, n->key, true);
	}
}

void retry_expire(struct retry_table *t, uint64_t ht, struct retry_changes *ch)
{
	uint64_t start = window_start(t, ht);
	struct retry_client *c;
	while ((c = t->oldest) != NULL && c->last_ht < start) {
		/* Nothing of it was recorded by this entry yet (retry.h). */
		ASSERT(c->entry != ch->index);
		delete_chunks(c, c->chunks, ch);
		forget_all_replies(ch, c, c->seqs);
		unlink_client(t, c);
		remove_slot(t, find_slot(t, c->id));
		t->nclients--;
		t->nrecords -= c->n;
		t->nchunks -= c->nlive;
		client_free(c);
	}
}

static void record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		   uint64_t min_running, uint64_t ht, int status, uint8_t outcome,
		   struct retry_changes *ch)
{
	/* Never forget the request being applied. */
	uint64_t below = min_running < seq ? min_running : seq;
	struct retry_client *c;
	struct record *r;
	uint64_t e;
	PRE(ch->index > 0 && (status == 0 || status == DOCRAFT_ECONDITION));
	PRE(!retry_expired(t, cid, seq, ht));
	c = get(t, cid);
	e = expiry_point(t, c, ht);
	if (e > below)
		below = e; /* <= seq: not expired */
	if (c->entry != ch->index) {
		PRE(c->entry < ch->index);
		c->entry = ch->index;
		c->watermark = below;
		c->npending = 0;
		if (ch->ntouched == ch->touched_cap) {
			ch->touched_cap = ch->touched_cap ? ch->touched_cap * 2 : 16;
			ch->touched = xrealloc(ch->touched, ch->touched_cap * sizeof *ch->touched);
		}
		ch->touched[ch->ntouched++] = c;
	} else if (below > c->watermark) {
		c->watermark = below;
	}
	if (below > c->floor)
		c->floor = below;
	while ((r = (struct record *)tmin(c->seqs)) != NULL && r->n.key < below) {
		tremove(&c->seqs, r->n.key);
		release(t, c, r->chunk, ch);
		forget_replies(ch, c, r);
		free(r);
		c->n--;
		t->nrecords--;
	}
	add_seq(t, c, seq, ht, outcome, ch->index, false);
	queue_push(c, ht, seq);
	queue_trim(t, c, ht);
	if (c->npending == c->pcap) {
		c->pcap = c->pcap ? c->pcap * 2 : 8;
		c->pending = xrealloc(c->pending, c->pcap * sizeof *c->pending);
	}
	c->pending[c->npending++] = seq;
	unlink_client(t, c);
	link_newest(t, c);
}

void retry_record(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN], uint64_t seq,
		  uint64_t min_running, uint64_t ht, int status, struct retry_changes *ch)
{
	record(t, cid, seq, min_running, ht, status,
	       status == DOCRAFT_ECONDITION ? RETRY_OUTCOME_CONDITION : 0, ch);
}

void retry_record_replies(struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
			  uint64_t seq, uint64_t min_running, uint64_t ht,
			  struct retry_changes *ch)
{
	record(t, cid, seq, min_running, ht, 0, RETRY_OUTCOME_REPLIES, ch);
}

bool retry_has_replies(const struct retry_table *t, const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq)
{
	const struct retry_client *c = find(t, cid);
	const struct record *r = c != NULL ? held(c, seq) : NULL;
	return r != NULL && r->outcome == RETRY_OUTCOME_REPLIES;
}

void retry_reply_key(uint8_t key[RETRY_KEY_LEN], const uint8_t cid[ENTRY_CLIENT_ID_LEN],
		     uint64_t seq)
{
	key[0] = RETRY_REPLY_PREFIX;
	memcpy(key + 1, cid, ENTRY_CLIENT_ID_LEN);
	be64_store(key + 1 + ENTRY_CLIENT_ID_LEN, seq);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The put of c's chunk of entry ch->index: every seq it holds, ascending:
 * those the entry recorded and still holds (a later request of the entry
 * may have forgotten some), and a legacy record's sharing the key.
 *
 * When that chunk is c's only one and the entry emptied and deleted
 * another of c's chunks (release: the last one it emptied), the chunk
 * takes that key instead and its delete becomes this put: one put instead
 * of a put and a delete (a client with one request at a time empties its
 * previous chunk in every entry). Why the load reads the same table:
 * retry.h, the store format. */
static void put_chunk(struct retry_changes *ch, struct retry_client *c)
{
	struct chunk *k = (struct chunk *)tfind(c->chunks, ch->index);
	const struct record *legacy = held(c, ch->index);
	size_t items = 0;
	uint64_t key = ch->index;
	struct store_raw *r;
	ASSERT(k != NULL);
	if (legacy != NULL && legacy->chunk == ch->index) {
		bool listed = false;
		for (size_t i = 0; i < c->npending && !listed; i++)
			listed = c->pending[i] == ch->index;
		if (!listed) {
			if (c->npending == c->pcap) {
				c->pcap = c->pcap ? c->pcap * 2 : 8;
				c->pending = xrealloc(c->pending, c->pcap * sizeof *c->pending);
			}
			c->pending[c->npending++] = ch->index;
		}
	}
	qsort(c->pending, c->npending, sizeof *c->pending, cmp_u64);
	if (c->nlive == 1 && !k->stored && c->freed_entry == ch->index) {
		/* nlive 1 and not stored: no legacy record shares the key */
		r = &ch->raw[c->freed_raw];
		key = be64_load(ch->keys.data + (uintptr_t)r->key + 1 + ENTRY_CLIENT_ID_LEN);
		ASSERT(r->del && key < ch->index);
		r->del = false;
		r->val = (const void *)(uintptr_t)ch->keys.len;
	} else {
		r = change(ch, c->id, ch->index, false);
	}
	buf_push(&ch->keys, RETRY_CHUNK_TAG);
	buf_append_be64(&ch->keys, c->watermark);
	for (size_t i = 0; i < c->npending; i++) {
		const struct record *rec = held(c, c->pending[i]);
		if (rec == NULL || rec->chunk != ch->index)
			continue;
		buf_append_be64(&ch->keys, rec->n.key);
		buf_append_be64(&ch->keys, rec->ht);
		buf_push(&ch->keys, rec->outcome);
		items++;
	}
	ASSERT(items == k->count);
	r->vlen = RETRY_CHUNK_HEAD_LEN + items * RETRY_CHUNK_ITEM_LEN;
	if (key != ch->index) {
		/* c's only chunk: every seq it holds is in this one. */
		for (size_t i = 0; i < c->npending; i++) {
			struct record *rec = (struct record *)held(c, c->pending[i]);
			if (rec != NULL && rec->chunk == ch->index)
				rec->chunk = key;
		}
		tremove(&c->chunks, ch->index);
		k->n.key = key;
		tinsert(&c->chunks, &k->n);
	}
	k->stored = true;
	k->legacy = false;
	c->npending = 0;
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
	struct decided *d; /* scratch: the client's records in decision order */
	size_t dcap;
	struct retry_client **clients; /* every client loaded */
	size_t nclients, ccap;
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
			if (outcome != 0 && outcome != RETRY_OUTCOME_CONDITION &&
			    outcome != RETRY_OUTCOME_REPLIES)
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
	if (held(*c, seq) != NULL)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "retry seq %llu held by two records",
			       (unsigned long long)seq);
	add_seq(l->t, *c, seq, ht, outcome, key, true);
	if (l->nclients == 0 || l->clients[l->nclients - 1] != *c) {
		if (l->nclients == l->ccap) {
			l->ccap = l->ccap ? l->ccap * 2 : 16;
			l->clients = xrealloc(l->clients, l->ccap * sizeof *l->clients);
		}
		l->clients[l->nclients++] = *c;
	}
	return 0;
}

static int cmp_decided(const void *a, const void *b)
{
	const struct decided *x = a, *y = b;
	if (x->ht != y->ht)
		return x->ht < y->ht ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void collect(struct loader *l, const struct tnode *n, size_t *k)
{
	for (; n != NULL; n = n->r) {
		collect(l, n->l, k);
		l->d[(*k)++] = (struct decided){.ht = ((const struct record *)n)->ht, .seq = n->key};
	}
}

/* c's queue: its held records in decision order. */
static void build_queue(struct loader *l, struct retry_client *c)
{
	size_t k = 0;
	if (c->n > l->dcap) {
		l->dcap = c->n;
		l->d = xrealloc(l->d, l->dcap * sizeof *l->d);
	}
	collect(l, c->seqs, &k);
	qsort(l->d, k, sizeof *l->d, cmp_decided);
	for (size_t i = 0; i < k; i++)
		queue_push(c, l->d[i].ht, l->d[i].seq);
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
			if (r->key < later)
				continue;
			if ((rv = load_seq(l, &c, r->key, r->key, be64_load(v), r->len == 9 ? v[8] : 0,
					   errmsg)) != 0)
				return rv;
			((struct chunk *)tfind(c->chunks, r->key))->legacy = true;
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
	if (c != NULL) {
		c->floor = later; /* the largest watermark stored */
		build_queue(l, c);
	}
	l->n = 0;
	buf_reset(&l->vals);
	return 0;
}

static int cmp_last(const void *a, const void *b)
{
	const struct retry_client *x = *(struct retry_client *const *)a;
	const struct retry_client *y = *(struct retry_client *const *)b;
	return x->last_ht < y->last_ht ? -1 : x->last_ht > y->last_ht;
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
	if (rv == 0) {
		/* The list by newest decision, as applying would have built it. */
		if (l.nclients > 1)
			qsort(l.clients, l.nclients, sizeof *l.clients, cmp_last);
		for (size_t i = 0; i < l.nclients; i++)
			link_newest(t, l.clients[i]);
	}
out:
	store_iter_free(it);
	free(l.recs);
	free(l.d);
	free(l.clients);
	buf_free(&l.vals);
	if (rv != 0)
		retry_free(t);
	return rv;
}
