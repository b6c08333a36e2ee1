/* Linearizability checking: Wing & Gong's search with Lowe's improvements
 * (G. Lowe, "Testing for linearizability", 2017), the algorithm of
 * porcupine and of knossos' wgl checker.
 *
 * The problem. Each op has an interval [call, return] and a result. The
 * history is linearizable iff there is a total order of its ops that
 * (1) respects real time: if a returned before b was called (a.ret <
 * b.call), a comes first; equal times count as concurrent; and (2) is legal
 * for the sequential model (a register, linearizable.h).
 *
 * The search (WGL with "just-in-time linearization"). All call and return
 * events go into one doubly-linked list sorted by time (calls before returns
 * at equal times: ties are concurrent). The search walks the list from its
 * head, carrying the model state:
 *   - at a call entry, it tries to linearize that op now: if the model
 *     allows it, the op is pushed on a stack with the state before it, its
 *     call and return entries are lifted out of the list, and the walk
 *     restarts from the head; if not, the walk moves on to the next entry
 *     (another op whose call came before may be linearized first);
 *   - at a return entry, that op's return has been reached without it being
 *     linearized: every op still in the list would come after it, which
 *     breaks real time. So the last choice is undone: pop the stack,
 *     restore the state, put the op's entries back (unlift), and continue
 *     after its call entry (try the next candidate instead).
 * Success when the list is empty; failure when a return entry is reached
 * with an empty stack. Linearizing "just in time" means an op is only ever
 * placed between its call and its return, so every order tried respects
 * real time by construction.
 *
 * Memoization (Lowe). The future of the search depends only on which ops are
 * linearized and on the model state, not on the order that got there. Every
 * (set of linearized ops, state) reached is kept in a hash set; a step that
 * would reach a pair already seen is not taken again. The set of ops is a
 * bitset, hashed incrementally (a random 64-bit value per op, xor-ed in and
 * out: Zobrist hashing), so a step costs O(1) plus the compare on a hit.
 *
 * info ops. An info write/cas/delete may have taken effect at any time after
 * its call, or never. Its return time is +infinity: its return entry sorts
 * after every real event, so the search may linearize it anywhere after its
 * call. Reaching an info return entry means every op still in the list is
 * info (all finite returns come first and would have stopped the walk):
 * those never took effect, and the history up to here is explained, so the
 * search succeeds. An info cas whose condition does not hold where it is
 * placed is simply not placed there (a cas that ran and failed is the same
 * as one that never ran). info reads observed nothing and are dropped, as
 * are all fail ops (they certainly did not take effect; a failed cas is not
 * applied).
 *
 * Pending info ops multiply the state space: each could be placed or not at
 * every point (2^k sets of linearized ops). Four reductions cut this down,
 * each sound because it only skips orders or nodes for which an equivalent
 * or stronger one is explored:
 *   - consume: an info op is placed only if the very next op placed
 *     consumes its value (a read returning it, or a cas whose OLD it is).
 *     In any valid order, an info op followed by a write/delete (legal in
 *     any state, and erasing its effect) or by nothing can be removed, and
 *     removing such ops until none is left gives a valid order with the
 *     property. The search state carries a CONSUME bit after an info op; a
 *     write/delete is refused while it is set (the bit is part of the memo
 *     key). The end of the search ignores the bit (a trailing info op just
 *     never took effect);
 *   - no-op: an info op that leaves the value as it is (write V, or cas _ V,
 *     when the register holds V; delete when nil) changes nothing, so
 *     removing it keeps the order valid: it is never placed;
 *   - twins: info ops with the same effect (same f and values) are
 *     interchangeable once both are called (both return at infinity), so
 *     they are placed in call order: an info op only after its previous
 *     twin;
 *   - subsumption: a node is not expanded when a visited node dominates it:
 *     the same ok ops, the same value (with or without the CONSUME
 *     restriction) and a subset of its info ops. The visited node has every
 *     option the new one has (the same ok ops left, more info ops unused),
 *     so any completion of the new one is one of it. Only the cheap cases
 *     are looked up: the same set with one info op fewer (for each effect
 *     class, its last placed one, so that the smaller set respects the twin
 *     order), and the same node without CONSUME. A dominated node is
 *     recorded as visited too, so chains of removals are caught one step at
 *     a time.
 * lin_options.no_reduce turns the four off (plain WGL; for tests, which
 * check that both agree, and agree with a brute-force oracle).
 *
 * Pruning unobservable info ops (unless lin_options.no_prune). Let an info
 * op produce V (write V, cas _ V, delete: nil) and let no ok read return V
 * and no remaining cas have OLD == V. Dropping the op keeps the verdict: a
 * linearization with the op taking effect puts nothing in the "V period"
 * right after it except the next write/delete, which is legal in any state,
 * so removing the op leaves a legal linearization; the other way, "never
 * took effect" is allowed for info. Dropping an info cas can make its OLD
 * unobserved, so this runs to a fixpoint. With unique written values most
 * info ops go; with a small value domain (the workload writes 0..4) few
 * do, and the reductions above carry the load.
 *
 * Explanations. The walk records the latest return entry (in time order) at
 * which it ever got stuck: no path got past it, so the history up to that
 * return has no linearization, and every earlier return has been passed on
 * some path. Its op is reported, with the register values in which the
 * search tried to place it (the values the register could hold during its
 * interval, given everything before).
 *
 * Budget: max_steps walk steps, a time limit, and a cap on the memo's
 * memory, per key; exceeding any gives LIN_UNKNOWN. A valid history is
 * usually found in a few steps per op; an invalid one must exhaust every
 * order up to the bad return, which with many concurrent info ops on one
 * key and few distinct values can take tens of millions of steps (about
 * 0.1-0.2 us each). */
#include "linearizable.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX_STEPS UINT64_C(100000000)
#define DEFAULT_TIME_LIMIT_MS UINT64_C(60000)
#define DEFAULT_MAX_CACHE_BYTES ((size_t)1 << 30)
#define INF_NS UINT64_MAX
#define NSEEN 8
#define NIL_ID 0u
/* In the search state: the last op placed was info, so the next one must
 * consume its value (see the notes at the top). */
#define CONSUME UINT32_C(0x80000000)

enum lkind { LREAD, LWRITE, LCAS, LDELETE };

struct lop {
	enum lkind kind;
	uint32_t a, b; /* read: returned; write: V; cas: OLD, NEW (value ids) */
	bool info;
	bool dropped;  /* pruned */
	int32_t twin;  /* info: the previous info op with the same effect, or -1 */
	int32_t cls;   /* info: its effect class (twins share one) */
	uint64_t call, ret;
	const struct history_op *src;
	uint64_t zobrist;
	uint32_t seen[NSEEN]; /* states in which the search tried it */
	uint8_t nseen;
	bool seen_more;
};

/* A list entry; index 0 is the head sentinel, nn - 1 the tail sentinel,
 * entries in between in time order. */
struct node {
	int32_t op;
	int32_t match; /* call entry: its return entry */
	int32_t prev, next;
	bool call;
};

/* The memo: entries of [hash][state | next << 32][bitset words] in one
 * array; a table of chains (entry number + 1, 0 ends a chain). */
struct cache {
	uint64_t *data;
	size_t nentries, cap_entries;
	uint32_t *table;
	size_t tcap;
	size_t words; /* bitset words */
	size_t max_bytes;
};

struct keyctx {
	int64_t key;
	struct lop *ops;
	size_t n;
	int64_t *vals; /* value id i + 1 -> vals[i] */
	size_t nvals;
	size_t nclasses; /* info effect classes */
};

const char *lin_verdict_name(enum lin_verdict v)
{
	switch (v) {
	case LIN_VALID:
		return "valid";
	case LIN_INVALID:
		return "INVALID";
	case LIN_UNKNOWN:
		break;
	}
	return "unknown";
}

static uint64_t mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static double now_msf(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* ---- the model ---- */

/* state: a value id, | CONSUME when the op before was info. With reduce
 * false, the plain register (CONSUME never set). */
static bool step(const struct lop *o, uint32_t state, bool reduce, uint32_t *out)
{
	uint32_t v = state & ~CONSUME, nv = v;
	bool ok = true;
	switch (o->kind) {
	case LREAD:
		ok = v == o->a;
		break;
	case LWRITE:
		nv = o->a;
		break;
	case LDELETE:
		nv = NIL_ID;
		break;
	case LCAS:
		ok = v == o->a;
		nv = o->b;
		break;
	}
	if (reduce) {
		/* After an info op, only a consumer of its value (a read or a
		 * cas: they need v) may come, not a write or delete. */
		if ((state & CONSUME) && (o->kind == LWRITE || o->kind == LDELETE))
			ok = false;
		/* An info op that would not change the value is pointless
		 * (removing it leaves the same states). */
		if (o->info && nv == v)
			ok = false;
		if (o->info)
			nv |= CONSUME;
	}
	*out = nv;
	return ok;
}

static void note_seen(struct lop *o, uint32_t state)
{
	for (unsigned i = 0; i < o->nseen; i++)
		if (o->seen[i] == state)
			return;
	if (o->nseen < NSEEN)
		o->seen[o->nseen++] = state;
	else
		o->seen_more = true;
}

/* ---- the memo ---- */

static size_t entry_words(const struct cache *c)
{
	return c->words + 2;
}

static void cache_free(struct cache *c)
{
	free(c->data);
	free(c->table);
	memset(c, 0, sizeof *c);
}

/* Is (bits, state) in the memo? */
static bool cache_has(const struct cache *c, uint64_t hash, uint32_t state, const uint64_t *bits)
{
	size_t ew = entry_words(c);
	if (c->tcap == 0)
		return false;
	for (uint32_t i = c->table[hash & (c->tcap - 1)]; i != 0;) {
		const uint64_t *e = c->data + (size_t)(i - 1) * ew;
		if (e[0] == hash && (uint32_t)e[1] == state && memcmp(e + 2, bits, c->words * 8) == 0)
			return true;
		i = (uint32_t)(e[1] >> 32);
	}
	return false;
}

/* hash covers bits and state. 1 added, 0 already there, -1 out of memory,
 * -2 over the byte budget. */
static int cache_add(struct cache *c, uint64_t hash, uint32_t state, const uint64_t *bits)
{
	size_t ew = entry_words(c);
	if (c->tcap == 0 || c->nentries + 1 > c->tcap) {
		size_t ncap = c->tcap ? c->tcap * 2 : 1024;
		if (ncap > UINT32_MAX)
			return -2;
		if (c->cap_entries * ew * 8 + ncap * 4 > c->max_bytes)
			return -2;
		uint32_t *nt = calloc(ncap, sizeof *nt);
		if (nt == NULL)
			return -1;
		for (size_t i = 0; i < c->nentries; i++) {
			uint64_t *e = c->data + i * ew;
			size_t j = e[0] & (ncap - 1);
			e[1] = (e[1] & UINT32_MAX) | (uint64_t)nt[j] << 32;
			nt[j] = (uint32_t)(i + 1);
		}
		free(c->table);
		c->table = nt;
		c->tcap = ncap;
	}
	size_t j = hash & (c->tcap - 1);
	for (uint32_t i = c->table[j]; i != 0;) {
		const uint64_t *e = c->data + (size_t)(i - 1) * ew;
		if (e[0] == hash && (uint32_t)e[1] == state && memcmp(e + 2, bits, c->words * 8) == 0)
			return 0;
		i = (uint32_t)(e[1] >> 32);
	}
	if (c->nentries == c->cap_entries) {
		size_t ncap = c->cap_entries ? c->cap_entries * 2 : 1024;
		if (ncap * ew * 8 + c->tcap * 4 > c->max_bytes)
			return -2;
		uint64_t *nd = realloc(c->data, ncap * ew * 8);
		if (nd == NULL)
			return -1;
		c->data = nd;
		c->cap_entries = ncap;
	}
	uint64_t *e = c->data + c->nentries * ew;
	e[0] = hash;
	e[1] = state | (uint64_t)c->table[j] << 32;
	memcpy(e + 2, bits, c->words * 8);
	c->table[j] = (uint32_t)(++c->nentries);
	return 1;
}

/* ---- the list ---- */

static void lift(struct node *nd, int32_t e)
{
	struct node *c = &nd[e], *r = &nd[c->match];
	nd[c->prev].next = c->next;
	nd[c->next].prev = c->prev;
	nd[r->prev].next = r->next;
	nd[r->next].prev = r->prev;
}

static void unlift(struct node *nd, int32_t e)
{
	struct node *c = &nd[e], *r = &nd[c->match];
	nd[r->prev].next = c->match;
	nd[r->next].prev = c->match;
	nd[c->prev].next = e;
	nd[c->next].prev = e;
}

struct ev {
	uint64_t t;
	int ret; /* 0 call, 1 return: calls first at equal times */
	int32_t op;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->ret != y->ret)
		return x->ret - y->ret;
	return (x->op > y->op) - (x->op < y->op);
}

/* ---- explanations ---- */

static const char *val_str(const struct keyctx *k, uint32_t id, char *buf, size_t size)
{
	if (id == NIL_ID)
		snprintf(buf, size, "nil");
	else
		snprintf(buf, size, "%" PRId64, k->vals[id - 1]);
	return buf;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static char *explain(const struct keyctx *k, const struct lop *o)
{
	char what[96], set[256], b1[24], b2[24], when[96];
	const struct history_op *s = o->src;
	size_t len = 0;
	switch (o->kind) {
	case LREAD:
		snprintf(what, sizeof what, "read returned %s", val_str(k, o->a, b1, sizeof b1));
		break;
	case LWRITE:
		snprintf(what, sizeof what, "%swrite %s", o->info ? "info " : "", val_str(k, o->a, b1, sizeof b1));
		break;
	case LCAS:
		snprintf(what, sizeof what, "%s %s->%s", o->info ? "info cas" : "cas succeeded,",
			 val_str(k, o->a, b1, sizeof b1), val_str(k, o->b, b2, sizeof b2));
		break;
	case LDELETE:
		snprintf(what, sizeof what, "%sdelete", o->info ? "info " : "");
		break;
	}
	if (s->completed)
		snprintf(when, sizeof when, "at t=%" PRIu64 " (process %" PRId64 ", invoked t=%" PRIu64
			 ", lines %zu-%zu)", s->complete_ns, s->process, s->invoke_ns, s->invoke_line,
			 s->complete_line);
	else
		snprintf(when, sizeof when, "(process %" PRId64 ", invoked t=%" PRIu64 ", line %zu)", s->process,
			 s->invoke_ns, s->invoke_line);
	uint32_t seen[NSEEN];
	memcpy(seen, o->seen, o->nseen * sizeof seen[0]);
	qsort(seen, o->nseen, sizeof seen[0], cmp_u32);
	set[0] = '\0';
	for (unsigned i = 0; i < o->nseen && len < sizeof set - 40; i++)
		len += (size_t)snprintf(set + len, sizeof set - len, "%s%s", i ? ", " : "",
					val_str(k, seen[i], b1, sizeof b1));
	if (o->seen_more)
		snprintf(set + len, sizeof set - len, ", ...");
	return xasprintf("key %" PRId64 ": %s %s cannot be linearized with the operations before it: "
			 "the register could hold {%s} while it ran",
			 k->key, what, when, set);
}

/* ---- one key ---- */

static uint32_t val_id(const struct keyctx *k, struct history_val v)
{
	if (v.kind != HISTORY_VAL_INT)
		return NIL_ID;
	size_t lo = 0, hi = k->nvals;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (k->vals[mid] < v.v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo + 1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Builds k's ops from the history ops of one key; 0 or -1 (out of memory). */
static int build_key(struct keyctx *k, const struct history_op *const *hops, size_t n)
{
	size_t nv = 0;
	k->ops = calloc(n ? n : 1, sizeof *k->ops);
	k->vals = malloc((2 * n + 1) * sizeof *k->vals);
	if (k->ops == NULL || k->vals == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct history_op *s = hops[i];
		if (s->value.kind == HISTORY_VAL_INT)
			k->vals[nv++] = s->value.v;
		if (s->value2.kind == HISTORY_VAL_INT)
			k->vals[nv++] = s->value2.v;
	}
	qsort(k->vals, nv, sizeof *k->vals, cmp_i64);
	k->nvals = 0;
	for (size_t i = 0; i < nv; i++)
		if (k->nvals == 0 || k->vals[k->nvals - 1] != k->vals[i])
			k->vals[k->nvals++] = k->vals[i];
	k->n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct history_op *s = hops[i];
		if (s->type == HISTORY_FAIL)
			continue; /* did not take effect */
		if (s->f == HISTORY_READ && s->type != HISTORY_OK)
			continue; /* observed nothing */
		struct lop *o = &k->ops[k->n];
		o->src = s;
		o->info = s->type == HISTORY_INFO;
		o->call = s->invoke_ns;
		o->ret = o->info ? INF_NS : s->complete_ns;
		switch (s->f) {
		case HISTORY_READ:
			o->kind = LREAD;
			o->a = val_id(k, s->value);
			break;
		case HISTORY_WRITE:
			o->kind = LWRITE;
			o->a = val_id(k, s->value);
			break;
		case HISTORY_CAS:
			o->kind = LCAS;
			o->a = val_id(k, s->value);
			o->b = val_id(k, s->value2);
			break;
		default:
			o->kind = LDELETE;
			break;
		}
		k->n++;
	}
	return 0;
}

static uint32_t produced(const struct lop *o)
{
	return o->kind == LCAS ? o->b : o->kind == LWRITE ? o->a : NIL_ID;
}

/* Drops info ops whose produced value nothing observes (see the notes at
 * the top), to a fixpoint; returns how many, or -1 (out of memory). */
static long prune(struct keyctx *k)
{
	size_t *obs = calloc(k->nvals + 1, sizeof *obs);
	long dropped = 0;
	bool changed = true;
	if (obs == NULL)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		if (k->ops[i].kind == LREAD || k->ops[i].kind == LCAS)
			obs[k->ops[i].a]++;
	}
	while (changed) {
		changed = false;
		for (size_t i = 0; i < k->n; i++) {
			struct lop *o = &k->ops[i];
			if (!o->info || o->dropped || obs[produced(o)] != 0)
				continue;
			o->dropped = true;
			dropped++;
			if (o->kind == LCAS) {
				obs[o->a]--;
				changed = true;
			}
		}
	}
	free(obs);
	size_t j = 0;
	for (size_t i = 0; i < k->n; i++)
		if (!k->ops[i].dropped)
			k->ops[j++] = k->ops[i];
	k->n = j;
	return dropped;
}

static int cmp_twin(const void *a, const void *b, void *arg)
{
	const struct lop *ops = arg;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	const struct lop *x = &ops[i], *y = &ops[j];
	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return (i > j) - (i < j);
}

/* Links each info op to the previous info op (in call order) with the
 * same effect; 0 or -1 (out of memory). */
static int find_twins(struct keyctx *k)
{
	int32_t *idx = malloc((k->n + 1) * sizeof *idx);
	size_t m = 0;
	if (idx == NULL)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		k->ops[i].twin = -1;
		if (k->ops[i].info)
			idx[m++] = (int32_t)i;
	}
	qsort_r(idx, m, sizeof *idx, cmp_twin, k->ops);
	k->nclasses = 0;
	for (size_t i = 0; i < m; i++) {
		const struct lop *x = i ? &k->ops[idx[i - 1]] : NULL, *y = &k->ops[idx[i]];
		if (x != NULL && x->kind == y->kind && x->a == y->a && x->b == y->b)
			k->ops[idx[i]].twin = idx[i - 1];
		else
			k->nclasses++;
		k->ops[idx[i]].cls = (int32_t)k->nclasses - 1;
	}
	free(idx);
	return 0;
}

/* Is the node (bits, state) dominated by one in the memo: the same state
 * without the CONSUME restriction, or the same state with one info op fewer
 * (the last placed of its class, so that the smaller set respects the twin
 * order)? hash covers bits and state without the mix. */
static bool dominated(const struct cache *c, const struct keyctx *k, const int32_t *lastused, uint64_t *bits,
		      uint64_t hash, uint32_t state)
{
	if ((state & CONSUME) && cache_has(c, mix64(hash ^ (state & ~CONSUME)), state & ~CONSUME, bits))
		return true;
	for (size_t cl = 0; cl < k->nclasses; cl++) {
		int32_t y = lastused[cl];
		if (y < 0)
			continue;
		bits[y / 64] &= ~(UINT64_C(1) << (y % 64));
		bool found = cache_has(c, mix64(hash ^ k->ops[y].zobrist ^ state), state, bits);
		bits[y / 64] |= UINT64_C(1) << (y % 64);
		if (found)
			return true;
	}
	return false;
}

static int search(struct keyctx *k, const struct lin_options *opt, uint64_t deadline, struct lin_key_result *r)
{
	size_t n = k->n, nn = 2 * n + 2;
	int32_t tail = (int32_t)nn - 1;
	struct node *nd = calloc(nn, sizeof *nd);
	struct ev *evs = malloc((2 * n + 1) * sizeof *evs);
	struct cache c = {.words = (n + 63) / 64 ? (n + 63) / 64 : 1, .max_bytes = opt->max_cache_bytes};
	uint64_t *bits = calloc(c.words, 8);
	int32_t *lastused = NULL;
	struct {
		int32_t node;
		uint32_t state;
	} *stack = malloc((n + 1) * sizeof *stack);
	size_t sp = 0;
	int rv = 0;
	if (nd == NULL || evs == NULL || bits == NULL || stack == NULL) {
		rv = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		k->ops[i].zobrist = mix64(UINT64_C(0x6a09e667f3bcc909) ^ (i * UINT64_C(0x9e3779b97f4a7c15)));
		evs[2 * i] = (struct ev){k->ops[i].call, 0, (int32_t)i};
		evs[2 * i + 1] = (struct ev){k->ops[i].ret, 1, (int32_t)i};
	}
	qsort(evs, 2 * n, sizeof *evs, cmp_ev);
	if (find_twins(k) != 0 || (lastused = malloc((k->nclasses + 1) * sizeof *lastused)) == NULL) {
		rv = -1;
		goto out;
	}
	for (size_t i = 0; i < k->nclasses; i++)
		lastused[i] = -1;
	{
		int32_t *callnode = malloc((n + 1) * sizeof *callnode);
		if (callnode == NULL) {
			rv = -1;
			goto out;
		}
		for (size_t i = 0; i < nn; i++) {
			nd[i].prev = (int32_t)i - 1;
			nd[i].next = (int32_t)i + 1;
			nd[i].op = -1;
		}
		for (size_t i = 0; i < 2 * n; i++) {
			struct node *x = &nd[i + 1];
			x->op = evs[i].op;
			x->call = evs[i].ret == 0;
			if (x->call)
				callnode[evs[i].op] = (int32_t)i + 1;
			else
				nd[callnode[evs[i].op]].match = (int32_t)i + 1;
		}
		free(callnode);
	}

	uint64_t max_steps = opt->max_steps, steps = 0, hash = 0;
	bool reduce = !opt->no_reduce;
	uint32_t state = NIL_ID;
	int32_t e = nd[0].next, max_stuck = 0;
	enum lin_verdict verdict;
	for (;;) {
		if (e == tail) { /* only when the list is empty */
			verdict = LIN_VALID;
			break;
		}
		if (++steps > max_steps) {
			verdict = LIN_UNKNOWN;
			r->explanation = xasprintf("key %" PRId64 ": search budget of %" PRIu64
						   " steps exhausted (%zu ops, %zu info)", k->key, max_steps,
						   n, r->ninfo);
			break;
		}
		if ((steps & 0xffff) == 0 && now_ms() > deadline) {
			verdict = LIN_UNKNOWN;
			r->explanation = xasprintf("key %" PRId64 ": time limit exceeded after %" PRIu64
						   " steps (%zu ops, %zu info)", k->key, steps, n, r->ninfo);
			break;
		}
		struct node *x = &nd[e];
		struct lop *o = &k->ops[x->op];
		if (x->call) {
			uint32_t ns;
			if (reduce && o->info && o->twin >= 0 && !(bits[o->twin / 64] >> (o->twin % 64) & 1)) {
				e = x->next; /* its twin goes first */
				continue;
			}
			note_seen(o, state & ~CONSUME);
			if (step(o, state, reduce, &ns)) {
				uint64_t nh = hash ^ o->zobrist;
				int32_t saved = o->info ? lastused[o->cls] : -1;
				bits[x->op / 64] |= UINT64_C(1) << (x->op % 64);
				if (o->info)
					lastused[o->cls] = x->op;
				/* A dominated node is recorded as visited too (its
				 * dominator covers it), then skipped. */
				bool dom = reduce && dominated(&c, k, lastused, bits, nh, ns);
				int added = cache_add(&c, mix64(nh ^ ns), ns, bits);
				if (added == 1 && dom) {
					added = 0;
					r->dominated++;
				}
				if (added != 1 && o->info)
					lastused[o->cls] = saved;
				if (added < 0) {
					bits[x->op / 64] &= ~(UINT64_C(1) << (x->op % 64));
					if (added == -1) {
						rv = -1;
						goto out;
					}
					verdict = LIN_UNKNOWN;
					r->explanation = xasprintf("key %" PRId64 ": memo limit of %zu MiB reached after %"
								   PRIu64 " steps (%zu ops, %zu info)", k->key,
								   c.max_bytes >> 20, steps, n, r->ninfo);
					break;
				}
				if (added == 1) {
					stack[sp].node = e;
					stack[sp].state = state;
					sp++;
					state = ns;
					hash = nh;
					lift(nd, e);
					e = nd[0].next;
					continue;
				}
				bits[x->op / 64] &= ~(UINT64_C(1) << (x->op % 64));
			}
			e = x->next;
		} else if (o->info) {
			/* Every op left in the list is info: they never took effect. */
			verdict = LIN_VALID;
			break;
		} else {
			if (e > max_stuck)
				max_stuck = e;
			if (sp == 0) {
				verdict = LIN_INVALID;
				break;
			}
			sp--;
			e = stack[sp].node;
			state = stack[sp].state;
			int32_t op = nd[e].op;
			bits[op / 64] &= ~(UINT64_C(1) << (op % 64));
			hash ^= k->ops[op].zobrist;
			if (k->ops[op].info) /* twins are placed in call order */
				lastused[k->ops[op].cls] = k->ops[op].twin;
			unlift(nd, e);
			e = nd[e].next;
		}
	}
	r->verdict = verdict;
	r->steps = steps;
	r->cache_entries = c.nentries;
	if (verdict == LIN_INVALID) {
		r->explanation = explain(k, &k->ops[nd[max_stuck].op]);
		if (r->explanation == NULL)
			rv = -1;
	} else if (verdict == LIN_UNKNOWN && r->explanation == NULL) {
		rv = -1;
	}
out:
	free(nd);
	free(evs);
	free(bits);
	free(lastused);
	free(stack);
	cache_free(&c);
	return rv;
}

static int check_key(const struct history_op *const *hops, size_t n, const struct lin_options *opt,
		     uint64_t total_deadline, struct lin_key_result *r)
{
	struct keyctx k;
	double t0 = now_msf();
	int rv = -1;
	memset(&k, 0, sizeof k);
	memset(r, 0, sizeof *r);
	k.key = r->key = hops[0]->key;
	if (build_key(&k, hops, n) != 0)
		goto out;
	if (!opt->no_prune) {
		long d = prune(&k);
		if (d < 0)
			goto out;
		r->npruned = (size_t)d;
	}
	r->nops = k.n;
	for (size_t i = 0; i < k.n; i++)
		r->ninfo += k.ops[i].info;
	uint64_t deadline = now_ms() + opt->time_limit_ms;
	if (deadline > total_deadline)
		deadline = total_deadline;
	if (now_ms() >= total_deadline) {
		r->verdict = LIN_UNKNOWN;
		r->explanation = xasprintf("key %" PRId64 ": not checked, the total time limit was reached", k.key);
		rv = r->explanation == NULL ? -1 : 0;
	} else {
		rv = search(&k, opt, deadline, r);
	}
	r->ms = now_msf() - t0;
out:
	free(k.ops);
	free(k.vals);
	return rv;
}

static int cmp_by_key(const void *a, const void *b)
{
	const struct history_op *x = *(const struct history_op *const *)a, *y = *(const struct history_op *const *)b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	/* ops are sorted by invoke time: keep that order */
	return (x > y) - (x < y);
}

void lin_result_free(struct lin_result *res)
{
	for (size_t i = 0; i < res->nkeys; i++)
		free(res->keys[i].explanation);
	free(res->keys);
	memset(res, 0, sizeof *res);
}

int lin_check(const struct history *h, const struct lin_options *opt_in, struct lin_result *res,
	      char *errmsg)
{
	struct lin_options opt = {0};
	const struct history_op **v = NULL;
	size_t n = 0, nkeys = 0;
	if (opt_in != NULL)
		opt = *opt_in;
	if (opt.max_steps == 0)
		opt.max_steps = DEFAULT_MAX_STEPS;
	if (opt.time_limit_ms == 0)
		opt.time_limit_ms = DEFAULT_TIME_LIMIT_MS;
	if (opt.max_cache_bytes == 0)
		opt.max_cache_bytes = DEFAULT_MAX_CACHE_BYTES;
	uint64_t total_deadline = opt.total_time_limit_ms ? now_ms() + opt.total_time_limit_ms : UINT64_MAX;
	memset(res, 0, sizeof *res);
	res->verdict = LIN_VALID;
	v = malloc((h->nops + 1) * sizeof *v);
	if (v == NULL)
		goto oom;
	for (size_t i = 0; i < h->nops; i++)
		if (h->ops[i].f <= HISTORY_DELETE)
			v[n++] = &h->ops[i];
	qsort(v, n, sizeof *v, cmp_by_key);
	for (size_t i = 0; i < n; i++)
		nkeys += i == 0 || v[i]->key != v[i - 1]->key;
	res->keys = calloc(nkeys ? nkeys : 1, sizeof *res->keys);
	if (res->keys == NULL)
		goto oom;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && v[j]->key == v[i]->key)
			j++;
		struct lin_key_result *r = &res->keys[res->nkeys++];
		if (check_key(v + i, j - i, &opt, total_deadline, r) != 0)
			goto oom;
		res->nops += r->nops;
		if (r->verdict == LIN_INVALID)
			res->ninvalid++;
		else if (r->verdict == LIN_UNKNOWN)
			res->nunknown++;
		i = j;
	}
	res->verdict = res->ninvalid ? LIN_INVALID : res->nunknown ? LIN_UNKNOWN : LIN_VALID;
	free(v);
	return 0;
oom:
	free(v);
	lin_result_free(res);
	if (errmsg != NULL)
		snprintf(errmsg, HISTORY_ERRMSG_SIZE, "linearizability check: out of memory");
	return HISTORY_ENOMEM;
}
