/* reader_children: the leaves below a path one child subtree at a time,
 * forward and reverse, from a start, stopping early. Checked against
 * reader_get_doc (the whole subtree, flattened) on random histories of
 * one document (root markers and tombstones, TTLs, children at two
 * levels, deletes), and its cost on a big collection read partly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/key.h"
#include "docdb/value.h"
#include "fixture.h"

static struct fx F;
static struct batch B;
static struct buf DK;

static void put(const struct pv *sub, size_t nsub, const struct docvalue *v)
{
	fx_put_path(&B, &DK, sub, nsub, v);
}

static void open_doc(void)
{
	struct pv k = pv_str("doc");
	struct dockey d = {true, 0x4242, 1, 0, &k, NULL};
	fx_open(&F, "children");
	batch_init(&B);
	buf_init(&DK);
	dockey_append(&DK, &d);
}

static void close_doc(void)
{
	fx_close(&F);
	batch_free(&B);
	buf_free(&DK);
}

/* "path=value" lines of the leaves, as reader_children gives them. */
struct out {
	struct buf b;
	size_t n, limit;
};

static void fmt_leaf(struct buf *b, const struct pv *sub, size_t nsub, const struct pv *v)
{
	for (size_t i = 0; i < nsub; i++) {
		pv_format(b, &sub[i]);
		buf_push(b, i + 1 < nsub ? '/' : '=');
	}
	pv_format(b, v);
	buf_push(b, '\n');
}

static int on_leaf(void *arg, const uint8_t *path, size_t plen, const struct pv *sub, size_t nsub,
		   const struct pv *value)
{
	struct out *o = arg;
	struct buf enc = BUF_INIT;
	for (size_t i = 0; i < nsub; i++)
		key_append_pv(&enc, &sub[i]);
	CHECK_EQ_MEM(enc.data, enc.len, path, plen);
	buf_free(&enc);
	fmt_leaf(&o->b, sub, nsub, value);
	return ++o->n == o->limit;
}

/* The leaves of reader_get_doc's subtree, in order, as lines. */
struct line {
	char *s;
	struct buf enc;
};

static void flatten(const struct docnode *n, struct pv *stack, size_t depth, struct line *lines,
		    size_t *nl)
{
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		stack[depth] = c->key;
		if (c->kind != VAL_PRIMITIVE) {
			flatten(c, stack, depth + 1, lines, nl);
			continue;
		}
		struct buf b = BUF_INIT;
		fmt_leaf(&b, stack, depth + 1, &c->value);
		lines[*nl].s = strdup(buf_cstr(&b));
		buf_init(&lines[*nl].enc);
		for (size_t i = 0; i <= depth; i++)
			key_append_pv(&lines[*nl].enc, &stack[i]);
		(*nl)++;
		buf_free(&b);
	}
}

static int cmp_enc(const struct buf *a, const uint8_t *b, size_t bn)
{
	int c = memcmp(a->data, b, a->len < bn ? a->len : bn);
	return c != 0 ? c : (a->len < bn ? -1 : a->len > bn);
}

static const struct pv ROOTPATH_NONE[1];
static size_t compared; /* leaves compared, to show the test is not vacuous */

static void compare(uint64_t ht, const struct pv *prefix, size_t np, bool reverse,
		    const uint8_t *start, size_t sl, size_t limit)
{
	static struct line lines[4096];
	struct pv stack[16];
	const struct docnode *n;
	struct out o = {BUF_INIT, 0, limit};
	struct buf want = BUF_INIT;
	size_t nl = 0, taken = 0;

	arena_reset(&F.arena);
	CHECK_OK_MSG(reader_get_doc(F.s, DK.data, DK.len, prefix, np, ht, 0, &F.arena, &n,
				    F.errmsg),
		     F.errmsg);
	if (n != NULL && n->kind != VAL_PRIMITIVE)
		flatten(n, stack, 0, lines, &nl);
	for (size_t i = 0; i < nl; i++) {
		size_t k = reverse ? nl - 1 - i : i;
		bool due = true;
		if (start != NULL) {
			int c = cmp_enc(&lines[k].enc, start, sl);
			due = reverse ? c <= 0 || (lines[k].enc.len > sl &&
						   memcmp(lines[k].enc.data, start, sl) == 0)
				      : c >= 0;
		}
		if (due && (limit == 0 || taken < limit)) {
			buf_printf(&want, "%s", lines[k].s);
			taken++;
		}
	}
	CHECK_OK_MSG(reader_children(F.s, DK.data, DK.len, prefix, np, ht, 0, reverse, start, sl,
				     &F.arena, on_leaf, &o, F.errmsg),
		     F.errmsg);
	compared += taken;
	CHECK_MSG(strcmp(buf_cstr(&o.b), buf_cstr(&want)) == 0,
		  "reverse %d, limit %zu, prefix %zu:\n--- got\n%s--- want\n%s", reverse, limit, np,
		  buf_cstr(&o.b), buf_cstr(&want));
	for (size_t i = 0; i < nl; i++) {
		free(lines[i].s);
		buf_free(&lines[i].enc);
	}
	buf_free(&o.b);
	buf_free(&want);
}

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

TEST(random_histories)
{
	const char *e = getenv("TEST_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 10) : 12345;
	test_note("TEST_SEED=%llu", (unsigned long long)seed);
	for (int round = 0; round < 20; round++) {
		rng = seed * 7919 + (uint64_t)round + 1;
		open_doc();
		for (int step = 1; step <= 40; step++) {
			int nops = 1 + (int)(rnd() % 6);
			for (int op = 0; op < nops; op++) {
				uint64_t r = rnd() % 100;
				char a[4], b[4];
				snprintf(a, sizeof a, "a%d", (int)(rnd() % 6));
				snprintf(b, sizeof b, "b%d", (int)(rnd() % 4));
				struct pv sub[2] = {pv_str(a), pv_str(b)};
				struct docvalue v = docvalue_of(pv_int64((int64_t)(rnd() % 1000)));
				if (r < 5) {
					struct docvalue x = docvalue_kind(VAL_TOMBSTONE);
					put(NULL, 0, &x);
				} else if (r < 12) {
					struct docvalue m = docvalue_kind(VAL_OBJECT);
					if (rnd() % 3 == 0) {
						m.has_ttl = true;
						m.ttl_ms = 1000 * (int64_t)(1 + rnd() % 10);
					}
					put(NULL, 0, &m);
				} else if (r < 20) {
					struct docvalue x = docvalue_kind(VAL_TOMBSTONE);
					put(sub, 1 + rnd() % 2, &x);
				} else if (r < 25) {
					struct docvalue m = docvalue_kind(VAL_OBJECT);
					put(sub, 1, &m);
				} else {
					if (rnd() % 5 == 0) {
						v.has_ttl = true;
						v.ttl_ms = 1000 * (int64_t)(1 + rnd() % 10);
					}
					put(sub, 1 + rnd() % 2, &v);
				}
			}
			fx_apply(&F, &B, fx_ht(step));
		}
		for (int q = 0; q < 60; q++) {
			uint64_t ht = fx_ht(1 + (int64_t)(rnd() % 48));
			bool reverse = rnd() % 2;
			size_t limit = rnd() % 3 == 0 ? 1 + rnd() % 5 : 0;
			char a[4], b[4];
			struct pv pre;
			struct buf st = BUF_INIT;
			snprintf(a, sizeof a, "a%d", (int)(rnd() % 6));
			snprintf(b, sizeof b, "b%d", (int)(rnd() % 4));
			pre = pv_str(a);
			size_t np = rnd() % 3 == 0 ? 1 : 0;
			bool with_start = rnd() % 2;
			if (with_start) {
				struct pv s1 = pv_str(np ? b : a), s2 = pv_str(b);
				key_append_pv(&st, &s1);
				if (!np && rnd() % 2)
					key_append_pv(&st, &s2);
			}
			compare(ht, np ? &pre : ROOTPATH_NONE, np, reverse,
				with_start ? st.data : NULL, st.len, limit);
			buf_free(&st);
		}
		close_doc();
	}
	test_note("%zu leaves compared", compared);
	CHECK(compared > 1000);
}

/* A collection of 20000 children read from either end: a few entries fed. */
TEST(early_stop_is_cheap)
{
	struct docvalue m = docvalue_kind(VAL_REDIS_LIST);
	struct out o = {BUF_INIT, 0, 3};
	uint64_t before;
	open_doc();
	put(NULL, 0, &m);
	for (int i = 0; i < 20000; i++) {
		struct pv sub = pv_int64(i);
		struct docvalue v = docvalue_of(pv_int64(i));
		put(&sub, 1, &v);
	}
	fx_apply(&F, &B, fx_ht(1));
	before = reader_keys_fed();
	CHECK_OK_MSG(reader_children(F.s, DK.data, DK.len, NULL, 0, fx_ht(2), 0, false, NULL, 0,
				     &F.arena, on_leaf, &o, F.errmsg),
		     F.errmsg);
	CHECK_EQ_STR(buf_cstr(&o.b), "0=0\n1=1\n2=2\n");
	CHECK(reader_keys_fed() - before < 20);
	buf_reset(&o.b);
	o.n = 0;
	before = reader_keys_fed();
	CHECK_OK_MSG(reader_children(F.s, DK.data, DK.len, NULL, 0, fx_ht(2), 0, true, NULL, 0,
				     &F.arena, on_leaf, &o, F.errmsg),
		     F.errmsg);
	CHECK_EQ_STR(buf_cstr(&o.b), "19999=19999\n19998=19998\n19997=19997\n");
	CHECK(reader_keys_fed() - before < 20);
	buf_free(&o.b);
	close_doc();
}

TEST_MAIN(T(random_histories), T(early_stop_is_cheap))
