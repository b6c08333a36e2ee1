/* TTL merge records (docdb-format.md §5.1, §7.2): 'k' 01 ['t' ttl] <type>
 * at a document's root, as Redis EXPIRE and PERSIST write them. Readers
 * fold the newest one into the next older full root value (its TTL from
 * the merge record's time); a full compaction folds them into that value,
 * a partial one keeps both. On a real store (fixture.h) and on the
 * compaction decider directly. */
#include <stdio.h>
#include <string.h>

#include "docdb/compaction.h"
#include "docdb/compaction_gc.h"
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

static struct docvalue str_ttl(const char *s, int64_t ttl)
{
	struct docvalue v = docvalue_of(pv_str(s));
	if (ttl >= 0) {
		v.has_ttl = true;
		v.ttl_ms = ttl;
	}
	return v;
}

/* A merge record over a string value: ttl < 0 is PERSIST (no 't'). */
static struct docvalue merge(int64_t ttl)
{
	struct docvalue v = str_ttl("", ttl);
	v.merge_flags = 1;
	return v;
}

static void at(int64_t s, const struct docvalue *v)
{
	put(NULL, 0, v);
	fx_apply(&F, &B, fx_ht(s));
}

/* The root at second s: its value, or "absent"; with its TTL. */
static const char *root_at(int64_t s)
{
	static char out[128];
	const struct docnode *n;
	arena_reset(&F.arena);
	CHECK_OK_MSG(reader_get_doc(F.s, DK.data, DK.len, NULL, 0, fx_ht(s), 0, &F.arena, &n,
				    F.errmsg),
		     F.errmsg);
	if (n == NULL)
		return "absent";
	if (n->kind != VAL_PRIMITIVE)
		snprintf(out, sizeof out, "container");
	else
		snprintf(out, sizeof out, "%.*s", (int)n->value.v.s.len, n->value.v.s.p);
	return out;
}

static void open_doc(const char *tag)
{
	struct pv k = pv_str("key1");
	struct dockey d = {true, 0x1234, 1, 0, &k, NULL};
	fx_open(&F, tag);
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

TEST(read_folds_newest_merge)
{
	open_doc("merge");
	{
		struct docvalue v = str_ttl("v1", 10000);
		at(1, &v); /* a value with TTL 10 s at T1 */
	}
	CHECK_EQ_STR(root_at(11), "v1");
	CHECK_EQ_STR(root_at(12), "absent");
	{
		struct docvalue m = merge(100000);
		at(5, &m); /* EXPIRE 100 at T5: lives until T105 */
	}
	CHECK_EQ_STR(root_at(4), "v1"); /* before it: the old TTL */
	CHECK_EQ_STR(root_at(12), "v1");
	CHECK_EQ_STR(root_at(105), "v1");
	CHECK_EQ_STR(root_at(106), "absent");
	{
		struct docvalue m = merge(20000);
		at(6, &m); /* EXPIRE 20 at T6: the newest wins */
	}
	CHECK_EQ_STR(root_at(26), "v1");
	CHECK_EQ_STR(root_at(27), "absent");
	CHECK_EQ_STR(root_at(5), "v1");
	{
		struct docvalue m = merge(-1);
		at(7, &m); /* PERSIST at T7 */
	}
	CHECK_EQ_STR(root_at(100000), "v1");
	CHECK_EQ_STR(root_at(26), "v1");
	{
		/* The node's TTL is the merge record's, counted from its time. */
		const struct docnode *n;
		struct docvalue m = merge(30000);
		at(8, &m);
		CHECK_OK_MSG(reader_get_node(F.s, DK.data, DK.len, NULL, 0, fx_ht(9), 0, &F.arena,
					     &n, F.errmsg),
			     F.errmsg);
		CHECK(n != NULL && n->has_ttl);
		CHECK_EQ_INT(n->ttl_ms, 30000);
		CHECK_EQ_U64(n->ttl_from, fx_ht(8));
		CHECK_EQ_U64(n->write_time.ht, fx_ht(1));
	}
	/* A newer full value ignores the older merge records. */
	{
		struct docvalue v = str_ttl("v2", -1);
		at(9, &v);
	}
	CHECK_EQ_STR(root_at(100000), "v2");
	/* A tombstone under a merge record: still absent. */
	{
		struct docvalue x = docvalue_kind(VAL_TOMBSTONE), m = merge(50000);
		at(10, &x);
		at(11, &m);
	}
	CHECK_EQ_STR(root_at(12), "absent");
	close_doc();
}

TEST(merge_applies_to_children)
{
	struct pv f = pv_str("f");
	struct docvalue obj = docvalue_kind(VAL_OBJECT), fv = docvalue_of(pv_str("x"));
	struct docvalue m = merge(10000);
	const struct docnode *n;
	open_doc("merge");
	put(NULL, 0, &obj);
	put(&f, 1, &fv);
	fx_apply(&F, &B, fx_ht(1));
	m.prim = pv_null();
	m = docvalue_kind(VAL_OBJECT);
	m.merge_flags = 1;
	m.has_ttl = true;
	m.ttl_ms = 10000;
	at(2, &m);
	CHECK_OK_MSG(reader_get_doc(F.s, DK.data, DK.len, &f, 1, fx_ht(12), 0, &F.arena, &n,
				    F.errmsg),
		     F.errmsg);
	CHECK(n != NULL);
	CHECK_OK_MSG(reader_get_doc(F.s, DK.data, DK.len, &f, 1, fx_ht(13), 0, &F.arena, &n,
				    F.errmsg),
		     F.errmsg);
	CHECK(n == NULL);
	CHECK_EQ_STR(root_at(13), "absent");
	CHECK_EQ_STR(root_at(12), "container");
	close_doc();
}

/* Builds the history of read_folds_newest_merge, compacts (full) at
 * cutoff, and checks reads at and after it are unchanged and no merge
 * record is left at or below it. */
TEST(full_compaction_folds)
{
	static const int64_t reads[] = {50, 99, 100, 104, 105, 106, 200, 1000};
	char before[8][32];
	open_doc("merge");
	{
		struct docvalue v = str_ttl("v1", 10000), m1 = merge(200000), m2 = merge(100000);
		at(1, &v);
		at(3, &m1);
		at(5, &m2); /* lives until T105 */
	}
	for (size_t i = 0; i < 8; i++)
		snprintf(before[i], sizeof before[i], "%s", root_at(reads[i]));
	CHECK_EQ_STR(before[4], "v1");
	CHECK_EQ_STR(before[5], "absent");
	CHECK_OK_MSG(store_flush(F.s, F.errmsg), F.errmsg);
	CHECK_OK_MSG(store_compact(F.s, fx_ht(50), F.errmsg), F.errmsg);
	CHECK_EQ_STR(fx_dump(&F, NULL, true), "(0x1234, key1), HT(1767225601000000.0) -> 104, v1\n");
	for (size_t i = 0; i < 8; i++)
		CHECK_EQ_STR(root_at(reads[i]), before[i]);
	close_doc();
}

/* The decider directly: partial jobs keep both and judge the value with
 * the merge record's TTL; full jobs drop the merge records and rewrite. */
TEST(decider)
{
	struct compaction_gc *g;
	struct buf key = BUF_INIT, val = BUF_INIT;
	const uint8_t *nv;
	size_t nl;
	struct docvalue d;
	const uint64_t C = fx_ht(100);
	open_doc("merge");

#define DECIDE(ht, v)                                                                     \
	(buf_reset(&key), buf_append(&key, DK.data, DK.len), buf_push(&key, KT_HYBRID_TIME), \
	 docht_append(&key, (struct docht){(ht), 0}), buf_reset(&val), value_append(&val, (v)), \
	 nv = NULL, nl = 0,                                                                \
	 compaction_gc_decide(g, key.data, key.len, val.data, val.len, &nv, &nl))

	/* Partial: a value whose own TTL ran out at the cutoff, extended by
	 * the merge record: kept, both. */
	g = compaction_gc_new(C, false, 0);
	{
		struct docvalue m = merge(500000), v = str_ttl("v", 10000);
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_KEEP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_KEEP);
	}
	compaction_gc_free(g);
	/* Partial: the merge record shortened it: expired at the cutoff, the
	 * value becomes a tombstone (the merge record stays above it). */
	g = compaction_gc_new(C, false, 0);
	{
		struct docvalue m = merge(1000), v = str_ttl("v", -1);
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_KEEP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_REWRITE);
		CHECK_EQ_MEM(nv, nl, "X", 1);
	}
	compaction_gc_free(g);
	/* Full: merge records go, the value carries the TTL. */
	g = compaction_gc_new(C, true, 0);
	{
		struct docvalue m = merge(500000), old = merge(7), v = str_ttl("v", 10000);
		CHECK_EQ_INT(DECIDE(fx_ht(150), &old), COMPACTION_KEEP); /* above the cutoff */
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(40), &old), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_REWRITE);
		CHECK_OK(value_decode(nv, nl, &d));
		CHECK(d.has_ttl && d.merge_flags == 0 && d.kind == VAL_PRIMITIVE);
		CHECK_EQ_INT(d.ttl_ms, 540000); /* 500 s from T50 = 540 s from T10 */
		CHECK_EQ_MEM(d.prim.v.s.p, d.prim.v.s.len, "v", 1);
	}
	compaction_gc_free(g);
	/* Full, PERSIST: the value loses its TTL (and is not expired). */
	g = compaction_gc_new(C, true, 0);
	{
		struct docvalue m = merge(-1), v = str_ttl("v", 10000);
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_REWRITE);
		CHECK_OK(value_decode(nv, nl, &d));
		CHECK(!d.has_ttl && d.merge_flags == 0);
	}
	compaction_gc_free(g);
	/* Full, rounding: a gap of 1.5 ms adds 2 ms. */
	g = compaction_gc_new(C, true, 0);
	{
		struct docvalue m = merge(1000000), v = str_ttl("v", -1);
		CHECK_EQ_INT(DECIDE(fx_ht_us(10, 1500), &m), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_REWRITE);
		CHECK_OK(value_decode(nv, nl, &d));
		CHECK_EQ_INT(d.ttl_ms, 1000002);
	}
	compaction_gc_free(g);
	/* Full: expired under the merge record: dropped; a tombstone under
	 * one: the tombstone's rule (dropped in a full job). */
	g = compaction_gc_new(C, true, 0);
	{
		struct docvalue m = merge(1000), v = str_ttl("v", -1);
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_DROP);
	}
	compaction_gc_free(g);
	g = compaction_gc_new(C, true, 0);
	{
		struct docvalue m = merge(1000000), x = docvalue_kind(VAL_TOMBSTONE),
				v = str_ttl("v", -1);
		CHECK_EQ_INT(DECIDE(fx_ht(50), &m), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(40), &x), COMPACTION_DROP);
		CHECK_EQ_INT(DECIDE(fx_ht(10), &v), COMPACTION_DROP);
	}
	compaction_gc_free(g);
#undef DECIDE
	buf_free(&key);
	buf_free(&val);
	close_doc();
}

/* A partial compaction that holds the merge record but not the value:
 * both survive, reads unchanged. */
TEST(partial_keeps_both)
{
	open_doc("merge");
	{
		struct docvalue v = str_ttl("v1", 10000), m = merge(100000);
		at(1, &v);
		CHECK_OK_MSG(store_flush(F.s, F.errmsg), F.errmsg);
		at(5, &m);
		CHECK_OK_MSG(store_flush(F.s, F.errmsg), F.errmsg);
	}
	CHECK_EQ_STR(root_at(105), "v1");
	CHECK_EQ_STR(root_at(106), "absent");
	{
		/* Only the newer file's range: the value's file is not in it...
		 * both files share the key range, so compact a job that holds
		 * only the merge record with the decider's partial mode. */
		struct compaction_gc *g = compaction_gc_new(fx_ht(50), false, 0);
		struct buf key = BUF_INIT, val = BUF_INIT;
		const uint8_t *nv;
		size_t nl;
		struct docvalue m = merge(100000);
		buf_append(&key, DK.data, DK.len);
		buf_push(&key, KT_HYBRID_TIME);
		docht_append(&key, (struct docht){fx_ht(5), 0});
		value_append(&val, &m);
		CHECK_EQ_INT(compaction_gc_decide(g, key.data, key.len, val.data, val.len, &nv, &nl),
			     COMPACTION_KEEP);
		compaction_gc_free(g);
		buf_free(&key);
		buf_free(&val);
	}
	close_doc();
}

TEST_MAIN(T(read_folds_newest_merge), T(merge_applies_to_children), T(full_compaction_folds),
	  T(decider), T(partial_keeps_both))
