/* Compaction repacking (docdb-format.md §8.6) and the removal of dropped
 * columns' cells (§7), on real stores (compaction.c, store_set_schema).
 *
 *   fold          a packed INSERT + later single-column UPDATEs, compacted
 *                 past them: one packed row holding the updated values, at
 *                 its own DocHT (exact dumps); updates above the cutoff stay
 *                 cells; a second compaction folds those too; no schema, no
 *                 repacking
 *   alter         a packed row of an old schema version is re-encoded at the
 *                 latest one (dropped column gone, added column NULL); the
 *                 cells of a dropped column go
 *   deletes       column tombstones become NULL slots; a row delete removes
 *                 everything
 *   TTL           cells expired at the cutoff become NULL slots; live ones
 *                 keep their expiry through a TTL counted from the row (0 =
 *                 never against a row TTL); one whose expiry is not a whole
 *                 ms from the row stays a cell; the table default TTL
 *   older rows    older packed rows go; a cell older than a packed row of an
 *                 old version (a stale writer) is folded in
 *   size limit    cells that would overflow PACKED_SIZE_LIMIT stay cells
 *   filter        compaction_gc_decide with a schema and no store: dropped
 *                 columns go in partial jobs too, nothing above the cutoff
 *   random        random operations (packed and unpacked INSERTs, UPDATEs,
 *                 deletes, map operations, ALTER ADD / DROP, TTLs), flushes,
 *                 reopens and compactions at random cutoffs: reads and scans
 *                 at every interesting time >= the cutoff are unchanged and
 *                 every pair above the cutoff is still there.
 *
 * Every case reads each row at several times >= the cutoff before the
 * compaction and checks the same reads after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "docdb/compaction.h"
#include "docdb/key.h"
#include "docdb/packed.h"
#include "docdb/value.h"
#include "fixture.h"

/* ---- shared context ------------------------------------------------------ */

static struct {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	bool open;
} C;

static void ctx_close(void)
{
	if (!C.open)
		return;
	docwrite_free(&C.w);
	batch_free(&C.b);
	schema_free(&C.s);
	fx_close(&C.f);
	C.open = false;
}

static void at_exit(void)
{
	if (C.open) {
		test_tmpdir_remove(C.f.dir);
		C.open = false;
	}
}

static void ctx_open(const char *tag, const char *table)
{
	static bool registered;
	char err[DOCRAFT_ERRMSG_SIZE];
	if (!registered) {
		atexit(at_exit);
		registered = true;
	}
	ctx_close();
	memset(&C, 0, sizeof C);
	fx_open(&C.f, tag);
	batch_init(&C.b);
	C.open = true;
	CHECK_OK_MSG(schema_init(&C.s, table, err), err);
	C.s.packed = true;
}

static void col(const char *name, enum col_kind kind, enum col_type type)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(schema_add_column(&C.s, name, kind, type, 0, 0, false, err), err);
}

static void coll(const char *name, enum col_type type, enum col_type elem, enum col_type val)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(schema_add_column(&C.s, name, COL_REGULAR, type, elem, val, false, err), err);
}

/* The schema is complete: writes may start, and compactions use it. */
static void ready(void)
{
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	store_set_schema(C.f.s, &C.s);
}

static void apply(uint64_t ht)
{
	fx_apply(&C.f, &C.b, ht);
}

static uint64_t at(int64_t s) { return fx_ht(s); }
static uint64_t at_us(int64_t s, int64_t us) { return fx_ht_us(s, us); }

#define OK(call) CHECK_OK_MSG(call, C.w.errmsg)

static struct colval cv_int(const char *n, int32_t v) { return colval_of(n, pv_int32(v)); }
static struct colval cv_str(const char *n, const char *v) { return colval_of(n, pv_str(v)); }
static struct colval cv_null(const char *n) { return colval_of(n, pv_null()); }

static void compact(uint64_t cutoff)
{
	CHECK_OK_MSG(store_compact(C.f.s, cutoff, C.f.errmsg), C.f.errmsg);
}

static void fmt_node(struct buf *out, const struct docnode *n)
{
	if (n == NULL) {
		buf_printf(out, "NULL");
		return;
	}
	if (n->kind == VAL_PRIMITIVE) {
		if (n->value.type == PV_STRING && n->value.v.s.len > 40)
			buf_printf(out, "<%zu bytes %c>", n->value.v.s.len, n->value.v.s.p[0]);
		else
			pv_format(out, &n->value);
		return;
	}
	buf_push(out, '{');
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		pv_format(out, &c->key);
		buf_printf(out, ": ");
		fmt_node(out, c);
		if (c->next != NULL)
			buf_printf(out, ", ");
	}
	buf_push(out, '}');
}

/* "live a=1 b='x' m={...}" over the regular columns of schema s ("live"
 * when the liveness column, or a packed row standing in for it, is
 * visible), or "not found". */
static void fmt_row(struct buf *out, const struct schema *s, const struct row *r, bool found)
{
	struct pv live = pv_liveness();
	size_t start = out->len;
	if (!found) {
		buf_printf(out, "not found");
		return;
	}
	if (docnode_child(r->root, &live) != NULL)
		buf_printf(out, "live");
	for (size_t i = schema_nkeys(s); i < s->ncols; i++) {
		const struct column *c = &s->cols[i];
		buf_printf(out, "%s%s=", out->len > start ? " " : "", c->name);
		fmt_node(out, row_column(r, c));
	}
}

static const char *row_at(const char *k, uint64_t ht)
{
	static struct buf out;
	struct pv key = pv_str(k);
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &key, 1, ht, &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	buf_reset(&out);
	fmt_row(&out, &C.s, &r, found);
	return buf_cstr(&out);
}

/* Reads of rows keys[] at times[], one line each, into out. */
static void reads(const char *const *keys, size_t nkeys, const uint64_t *times, size_t ntimes,
		  struct buf *out)
{
	buf_reset(out);
	for (size_t t = 0; t < ntimes; t++)
		for (size_t k = 0; k < nkeys; k++)
			buf_printf(out, "%s @%" PRIu64 ": %s\n", keys[k], times[t],
				   row_at(keys[k], times[t]));
	arena_reset(&C.f.arena);
}

/* Compacts at cutoff, checking that reads at times (all >= cutoff) stay. */
static void compact_same_reads(uint64_t cutoff, const char *const *keys, size_t nkeys,
			       const uint64_t *times, size_t ntimes)
{
	struct buf before = BUF_INIT, after = BUF_INIT;
	for (size_t t = 0; t < ntimes; t++)
		CHECK(times[t] >= cutoff);
	reads(keys, nkeys, times, ntimes, &before);
	compact(cutoff);
	reads(keys, nkeys, times, ntimes, &after);
	CHECK_EQ_STR(buf_cstr(&after), buf_cstr(&before));
	buf_free(&before);
	buf_free(&after);
}

static void label(const char *name, uint64_t ht)
{
	fx_label_ht(&C.f, ht, name);
}

/* ---- fold ------------------------------------------------------------------ */

TEST(updates_fold_into_the_packed_row)
{
	struct compaction_totals t0, t1;
	ctx_open("rp-fold", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	ready();
	struct pv key = pv_str("r"), mk = pv_str("p"), mv = pv_int32(1);
	fx_label_hash(&C.f, key_hash_components(&key, 1), "h1");
	for (int i = 1; i <= 7; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		label(l, at(i));
	}
	struct colval ins[4] = {cv_int("a", 1), cv_str("b", "x"), cv_int("c", 3),
				colval_map("m", &mk, &mv, 1)};
	OK(docwrite_insert(&C.w, &key, 1, ins, 4, DOCWRITE_NO_TTL));
	apply(at(1));
	struct colval u2 = cv_int("a", 2), u3 = cv_str("b", "y"), u4 = cv_int("a", 5);
	struct colval u5 = cv_int("c", 4), u6 = cv_int("a", 6);
	OK(docwrite_update(&C.w, &key, 1, &u2, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	OK(docwrite_update(&C.w, &key, 1, &u3, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	OK(docwrite_update(&C.w, &key, 1, &u4, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	OK(docwrite_update(&C.w, &key, 1, &u5, 1, DOCWRITE_NO_TTL));
	apply(at(5));
	OK(docwrite_update(&C.w, &key, 1, &u6, 1, DOCWRITE_NO_TTL));
	apply(at(6));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=1, b='x', c=3]\n"
		     "(h1, 'r'), a_column_id, T6 -> 6\n"
		     "(h1, 'r'), a_column_id, T4 -> 5\n"
		     "(h1, 'r'), a_column_id, T2 -> 2\n"
		     "(h1, 'r'), b_column_id, T3 -> 'y'\n"
		     "(h1, 'r'), c_column_id, T5 -> 4\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");

	/* No schema: no repacking (and at T2 the GC has nothing to drop). */
	store_set_schema(C.f.s, NULL);
	compact(at(2));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=1, b='x', c=3]\n"
		     "(h1, 'r'), a_column_id, T6 -> 6\n"
		     "(h1, 'r'), a_column_id, T4 -> 5\n"
		     "(h1, 'r'), a_column_id, T2 -> 2\n"
		     "(h1, 'r'), b_column_id, T3 -> 'y'\n"
		     "(h1, 'r'), c_column_id, T5 -> 4\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");

	/* Cutoff T4: a (T4, over T2) and b fold; c (T5) and a (T6) stay. */
	store_set_schema(C.f.s, &C.s);
	const char *keys[1] = {"r"};
	const uint64_t times[] = {at(4),     at_us(4, 1), at(5) - 1, at(5),
				  at_us(5, 1), at(6),     at(7),     at(1000)};
	compaction_get_totals(&t0);
	compact_same_reads(at(4), keys, 1, times, sizeof times / sizeof times[0]);
	compaction_get_totals(&t1);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=5, b='y', c=3]\n"
		     "(h1, 'r'), a_column_id, T6 -> 6\n"
		     "(h1, 'r'), c_column_id, T5 -> 4\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");
	CHECK_EQ_U64(t1.stats.repacked - t0.stats.repacked, 1);
	CHECK_EQ_U64(t1.stats.folded - t0.stats.folded, 2);
	CHECK_EQ_STR(row_at("r", at(4)), "live a=5 b='y' c=3 m={'p': 1}");
	CHECK_EQ_STR(row_at("r", at(5)), "live a=5 b='y' c=4 m={'p': 1}");
	CHECK_EQ_STR(row_at("r", at(6)), "live a=6 b='y' c=4 m={'p': 1}");

	/* Past everything: one packed row and the map element. */
	compact_same_reads(at(7), keys, 1, times + 6, 2);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=6, b='y', c=4]\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");
	/* Again: nothing left to do, nothing changes. */
	compaction_get_totals(&t0);
	compact(at(7));
	compaction_get_totals(&t1);
	CHECK_EQ_U64(t1.stats.repacked - t0.stats.repacked, 0);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=6, b='y', c=4]\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");
	/* And after a reopen (the schema comes with the options). */
	{
		struct store_options o;
		store_close(C.f.s);
		store_options_default(&o);
		o.schema = &C.s;
		CHECK_OK_MSG(store_open(C.f.dir, &o, &C.f.s, C.f.errmsg), C.f.errmsg);
	}
	struct colval u8 = cv_str("b", "z");
	OK(docwrite_update(&C.w, &key, 1, &u8, 1, DOCWRITE_NO_TTL));
	apply(at(8));
	label("T8", at(8));
	compact(at(8));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=6, b='z', c=4]\n"
		     "(h1, 'r'), m_column_id, 'p', T1 -> 1\n");
	ctx_close();
}

/* ---- alter ------------------------------------------------------------------ */

TEST(old_version_reencoded_after_alter)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	ctx_open("rp-alter", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	ready();
	struct pv r1 = pv_str("r1"), r2 = pv_str("r2");
	fx_label_hash(&C.f, key_hash_components(&r1, 1), "h1");
	fx_label_hash(&C.f, key_hash_components(&r2, 1), "h2");
	label("T1", at(1));
	label("T2", at(2));
	label("T3", at(3));
	struct colval v1[3] = {cv_int("a", 1), cv_str("b", "x"), cv_int("c", 3)};
	struct colval v2[3] = {cv_int("a", 10), cv_str("b", "xx"), cv_int("c", 30)};
	OK(docwrite_insert(&C.w, &r1, 1, v1, 3, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &r2, 1, v2, 3, DOCWRITE_NO_TTL));
	apply(at(1));
	struct colval by = cv_str("b", "y");
	OK(docwrite_update(&C.w, &r1, 1, &by, 1, DOCWRITE_NO_TTL));
	apply(at(2));

	/* ALTER TABLE t DROP b; ADD d int (version 2). */
	CHECK_OK_MSG(schema_drop_column(&C.s, "b", err), err);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "d", CT_INT32, 0, 0, err), err);
	CHECK_EQ_INT(C.s.version, 2);
	store_set_schema(C.f.s, &C.s);
	struct colval d4 = cv_int("d", 4);
	OK(docwrite_update(&C.w, &r2, 1, &d4, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r1'), T1 -> [PACKED ROW v0: a=1, col(2)='x', c=3]\n"
		     "(h1, 'r1'), col(2), T2 -> 'y'\n"
		     "(h2, 'r2'), T1 -> [PACKED ROW v0: a=10, col(2)='xx', c=30]\n"
		     "(h2, 'r2'), d_column_id, T3 -> 4\n");

	const char *keys[2] = {"r1", "r2"};
	const uint64_t times[] = {at(3), at(4), at(1000)};
	compact_same_reads(at(3), keys, 2, times, 3);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r1'), T1 -> [PACKED ROW v2: a=1, c=3, d=NULL]\n"
		     "(h2, 'r2'), T1 -> [PACKED ROW v2: a=10, c=30, d=4]\n");
	CHECK_EQ_STR(row_at("r1", at(3)), "live a=1 c=3 d=NULL");
	CHECK_EQ_STR(row_at("r2", at(3)), "live a=10 c=30 d=4");

	/* A re-added name is a new column: the row gets a NULL slot for it. */
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "b", CT_TEXT, 0, 0, err), err);
	store_set_schema(C.f.s, &C.s);
	compact_same_reads(at(3), keys, 2, times, 3);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r1'), T1 -> [PACKED ROW v3: a=1, c=3, d=NULL, b=NULL]\n"
		     "(h2, 'r2'), T1 -> [PACKED ROW v3: a=10, c=30, d=4, b=NULL]\n");
	ctx_close();
}

/* ---- deletes -------------------------------------------------------------- */

TEST(column_deletes_fold_as_null_slots)
{
	ctx_open("rp-del", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	ready();
	struct pv r = pv_str("r"), r2 = pv_str("r2");
	fx_label_hash(&C.f, key_hash_components(&r, 1), "h1");
	label("T1", at(1));
	label("T2", at(2));
	label("T3", at(3));
	label("T4", at(4));
	struct colval v[3] = {cv_int("a", 1), cv_str("b", "x"), cv_int("c", 3)};
	OK(docwrite_insert(&C.w, &r, 1, v, 3, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &r2, 1, v, 3, DOCWRITE_NO_TTL));
	apply(at(1));
	OK(docwrite_delete_column(&C.w, &r, 1, "a"));
	OK(docwrite_delete_row(&C.w, &r2, 1));
	apply(at(2));
	struct colval bn = cv_null("b"), c4 = cv_null("c");
	OK(docwrite_update(&C.w, &r, 1, &bn, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	OK(docwrite_update(&C.w, &r, 1, &c4, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK_EQ_STR(row_at("r", at(3)), "live a=NULL b=NULL c=3");
	const char *keys[2] = {"r", "r2"};
	const uint64_t times[] = {at(3), at(4), at(5)};
	compact_same_reads(at(3), keys, 2, times, 3);
	/* The column delete above the cutoff stays (and hides the slot). */
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=NULL, b=NULL, c=3]\n"
		     "(h1, 'r'), c_column_id, T4 -> [DELETE]\n");
	compact_same_reads(at(4), keys, 2, times + 1, 2);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=NULL, b=NULL, c=NULL]\n");
	CHECK_EQ_STR(row_at("r", at(4)), "live a=NULL b=NULL c=NULL");
	ctx_close();
}

/* ---- TTL -------------------------------------------------------------------- */

TEST(ttl_cells)
{
	ctx_open("rp-ttl", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	col("d", COL_REGULAR, CT_INT32);
	ready();
	struct pv r = pv_str("r");
	fx_label_hash(&C.f, key_hash_components(&r, 1), "h1");
	label("T1", at(100));
	label("T5", at_us(140, 1));
	/* INSERT ... USING TTL 100 at 100 s: the row lives until 200 s. */
	struct colval v[4] = {cv_int("a", 1), cv_str("b", "x"), cv_int("c", 3), cv_int("d", 4)};
	OK(docwrite_insert(&C.w, &r, 1, v, 4, 100000));
	apply(at(100));
	/* a: TTL 10 at 110 (dead at the cutoff, 150); b: no TTL at 120 (never
	 * expires, unlike the row); c: TTL 30 at 130 (until 160); d: TTL 30 at
	 * 140 s + 1 µs (until 170 s + 1 µs: not a whole ms from the row). */
	struct colval a = cv_int("a", 5), b = cv_str("b", "n"), c = cv_int("c", 9),
		      d = cv_int("d", 7);
	OK(docwrite_update(&C.w, &r, 1, &a, 1, 10000));
	apply(at(110));
	OK(docwrite_update(&C.w, &r, 1, &b, 1, DOCWRITE_NO_TTL));
	apply(at(120));
	OK(docwrite_update(&C.w, &r, 1, &c, 1, 30000));
	apply(at(130));
	OK(docwrite_update(&C.w, &r, 1, &d, 1, 30000));
	apply(at_us(140, 1));
	const char *keys[1] = {"r"};
	const uint64_t times[] = {at(150),        at(160),        at_us(160, 1), at(170),
				  at_us(170, 1), at_us(170, 2), at(200),       at_us(200, 1),
				  at(300)};
	compact_same_reads(at(150), keys, 1, times, sizeof times / sizeof times[0]);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> (TTL = 100) [PACKED ROW v0: a=NULL, b=(TTL = 0) 'n', "
		     "c=(TTL = 60) 9, d=NULL]\n"
		     "(h1, 'r'), d_column_id, T5 -> (TTL = 30) 7\n");
	CHECK_EQ_STR(row_at("r", at(160)), "live a=NULL b='n' c=9 d=7");
	CHECK_EQ_STR(row_at("r", at_us(160, 1)), "live a=NULL b='n' c=NULL d=7");
	CHECK_EQ_STR(row_at("r", at_us(170, 2)), "live a=NULL b='n' c=NULL d=NULL");
	CHECK_EQ_STR(row_at("r", at_us(200, 1)), "a=NULL b='n' c=NULL d=NULL");
	/* Past d's expiry it goes too (expired at the cutoff). */
	compact_same_reads(at(180), keys, 1, times + 6, 3);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> (TTL = 100) [PACKED ROW v0: a=NULL, b=(TTL = 0) 'n', "
		     "c=NULL, d=NULL]\n");
	ctx_close();
}

TEST(table_default_ttl)
{
	ctx_open("rp-dttl", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	C.s.default_ttl_ms = 50000;
	ready();
	store_set_default_ttl_ms(C.f.s, 50000);
	struct pv r = pv_str("r");
	fx_label_hash(&C.f, key_hash_components(&r, 1), "h1");
	label("T1", at(100));
	struct colval v[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &r, 1, v, 2, DOCWRITE_NO_TTL));
	apply(at(100));
	struct colval a = cv_int("a", 2);
	OK(docwrite_update(&C.w, &r, 1, &a, 1, DOCWRITE_NO_TTL));
	apply(at(110));
	const char *keys[1] = {"r"};
	const uint64_t times[] = {at(120), at(150), at_us(150, 1), at(160), at_us(160, 1)};
	compact_same_reads(at(120), keys, 1, times, 5);
	/* a expires 50 s after its own write: 60 s after the row's. */
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T1 -> [PACKED ROW v0: a=(TTL = 60) 2, b='x']\n");
	CHECK_EQ_STR(row_at("r", at_us(150, 1)), "a=2 b=NULL");
	CHECK_EQ_STR(row_at("r", at_us(160, 1)), "not found");
	ctx_close();
}

/* ---- older packed rows, stale writers ------------------------------------- */

TEST(older_rows_and_old_version_writers)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct schema s0;
	struct docwrite w0;
	ctx_open("rp-older", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	ready();
	struct pv r = pv_str("r");
	fx_label_hash(&C.f, key_hash_components(&r, 1), "h1");
	for (int i = 1; i <= 6; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		label(l, at(i));
	}
	struct colval v1[2] = {cv_int("a", 1), cv_str("b", "x")};
	struct colval v3[2] = {cv_int("a", 3), cv_str("b", "z")};
	struct colval a2 = cv_int("a", 2);
	OK(docwrite_insert(&C.w, &r, 1, v1, 2, DOCWRITE_NO_TTL));
	apply(at(1));
	OK(docwrite_update(&C.w, &r, 1, &a2, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	OK(docwrite_insert(&C.w, &r, 1, v3, 2, DOCWRITE_NO_TTL));
	apply(at(3));
	const char *keys[1] = {"r"};
	const uint64_t times[] = {at(3), at(6), at(7)};
	compact_same_reads(at(3), keys, 1, times, 3);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(h1, 'r'), T3 -> [PACKED ROW v0: a=3, b='z']\n");

	/* ALTER ADD c; c is set at T4, then a writer still at version 0 packs
	 * the row at T5 (no c): the older c cell folds into it. */
	schema_copy(&s0, &C.s);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "c", CT_INT32, 0, 0, err), err);
	store_set_schema(C.f.s, &C.s);
	/* Row q the same way, but deleted between its c cell and the stale
	 * packed row: the delete hides the cell, so c stays NULL. */
	struct pv q = pv_str("q");
	fx_label_hash(&C.f, key_hash_components(&q, 1), "h2");
	label("T4+", at_us(4, 500));
	struct colval c5 = cv_int("c", 5), c8 = cv_int("c", 8);
	OK(docwrite_update(&C.w, &r, 1, &c5, 1, DOCWRITE_NO_TTL));
	OK(docwrite_update(&C.w, &q, 1, &c8, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	OK(docwrite_delete_row(&C.w, &q, 1));
	apply(at_us(4, 500));
	struct colval v5[2] = {cv_int("a", 7), cv_str("b", "w")};
	docwrite_init(&w0, &s0, &C.b, NULL);
	CHECK_OK_MSG(docwrite_insert(&w0, &r, 1, v5, 2, DOCWRITE_NO_TTL), w0.errmsg);
	CHECK_OK_MSG(docwrite_insert(&w0, &q, 1, v5, 2, DOCWRITE_NO_TTL), w0.errmsg);
	apply(at(5));
	const char *dump = fx_dump(&C.f, &C.s, false);
	CHECK_MSG(strstr(dump, "(h1, 'r'), T5 -> [PACKED ROW v0: a=7, b='w']\n"
			       "(h1, 'r'), T3 -> [PACKED ROW v0: a=3, b='z']\n"
			       "(h1, 'r'), c_column_id, T4 -> 5\n") != NULL,
		  "%s", dump);
	CHECK_MSG(strstr(dump, "(h2, 'q'), T5 -> [PACKED ROW v0: a=7, b='w']\n"
			       "(h2, 'q'), T4+ -> [DELETE]\n"
			       "(h2, 'q'), c_column_id, T4 -> 8\n") != NULL,
		  "%s", dump);
	CHECK_EQ_STR(row_at("r", at(5)), "live a=7 b='w' c=5");
	CHECK_EQ_STR(row_at("q", at(5)), "live a=7 b='w' c=NULL");
	const char *keys2[2] = {"r", "q"};
	compact_same_reads(at(5), keys2, 2, times + 1, 2);
	dump = fx_dump(&C.f, &C.s, false);
	CHECK_MSG(strstr(dump, "(h1, 'r'), T5 -> [PACKED ROW v1: a=7, b='w', c=5]\n") != NULL,
		  "%s", dump);
	CHECK_MSG(strstr(dump, "(h2, 'q'), T5 -> [PACKED ROW v1: a=7, b='w', c=NULL]\n") != NULL,
		  "%s", dump);
	CHECK_EQ_INT(strlen(dump), strlen("(h1, 'r'), T5 -> [PACKED ROW v1: a=7, b='w', c=5]\n"
					  "(h2, 'q'), T5 -> [PACKED ROW v1: a=7, b='w', c=NULL]\n"));
	docwrite_free(&w0);
	schema_free(&s0);
	ctx_close();
}

/* ---- size limit ------------------------------------------------------------- */

TEST(size_limit_keeps_big_cells)
{
	ctx_open("rp-big", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_TEXT);
	ready();
	const size_t nb = 30000, nc = 5000;
	char *big = malloc(nb), *mid = malloc(nc);
	CHECK(big != NULL && mid != NULL);
	memset(big, 'b', nb);
	memset(mid, 'c', nc);
	struct pv r = pv_str("r");
	fx_label_hash(&C.f, key_hash_components(&r, 1), "h1");
	label("T1", at(1));
	label("T2", at(2));
	struct colval v[3] = {cv_int("a", 1), cv_str("b", "x"), cv_str("c", "y")};
	OK(docwrite_insert(&C.w, &r, 1, v, 3, DOCWRITE_NO_TTL));
	apply(at(1));
	struct colval u[2] = {colval_of("b", pv_strn(big, nb)), colval_of("c", pv_strn(mid, nc))};
	OK(docwrite_update(&C.w, &r, 1, u, 2, DOCWRITE_NO_TTL));
	apply(at(2));
	const char *keys[1] = {"r"};
	const uint64_t times[] = {at(2), at(3)};
	compact_same_reads(at(2), keys, 1, times, 2);
	CHECK_EQ_STR(row_at("r", at(2)), "live a=1 b=<30000 bytes b> c=<5000 bytes c>");
	/* b (the larger) stays a cell; c is folded. */
	struct store_iter *it = store_iter_new(C.f.s, NULL, 0, NULL, 0);
	size_t n = 0, kl, vl;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		const uint8_t *k = store_iter_key(it, &kl), *val = store_iter_value(it, &vl);
		struct docvalue dv;
		if (k[0] <= KT_INTERNAL_MAX)
			continue;
		CHECK_OK(value_decode(val, vl, &dv));
		if (n == 0) {
			CHECK_EQ_INT(dv.kind, VAL_PACKED_ROW);
			CHECK(vl > nc && vl < nb);
		} else {
			CHECK(dv.kind == VAL_PRIMITIVE && dv.prim.v.s.len == nb);
		}
		n++;
	}
	store_iter_free(it);
	CHECK_EQ_INT(n, 2);
	free(big);
	free(mid);
	ctx_close();
}

/* ---- the filter alone ------------------------------------------------------ */

struct fk {
	struct buf dockey, key, val;
};

static enum compaction_verdict fdecide(struct compaction_gc *g, struct fk *k, const struct pv *sub,
				       size_t n, uint64_t ht, const struct docvalue *v)
{
	const uint8_t *nv = NULL;
	size_t nl = 0;
	buf_reset(&k->key);
	buf_append(&k->key, k->dockey.data, k->dockey.len);
	for (size_t i = 0; i < n; i++)
		key_append_pv(&k->key, &sub[i]);
	buf_push(&k->key, KT_HYBRID_TIME);
	docht_append(&k->key, (struct docht){ht, 0});
	buf_reset(&k->val);
	value_append(&k->val, v);
	return compaction_gc_decide(g, k->key.data, k->key.len, k->val.data, k->val.len, &nv, &nl);
}

TEST(filter_dropped_columns_any_job)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct fk k = {BUF_INIT, BUF_INIT, BUF_INIT};
	struct schema s;
	struct compaction_gc *g;
	struct pv dk = pv_str("doc");
	struct dockey d = {false, 0, 0, 1, NULL, &dk};
	const struct docvalue one = docvalue_of(pv_int32(1));
	const uint64_t cut = fx_ht(100);
	dockey_append(&k.dockey, &d);
	CHECK_OK(schema_init(&s, "t", err));
	CHECK_OK(schema_add(&s, "r", COL_RANGE, CT_TEXT, err));
	CHECK_OK(schema_add(&s, "a", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add(&s, "b", COL_REGULAR, CT_INT32, err));
	CHECK_OK_MSG(schema_add_column(&s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT32, false, err),
		     err);
	CHECK_OK_MSG(schema_drop_column(&s, "b", err), err);
	CHECK_OK_MSG(schema_drop_column(&s, "m", err), err);
	for (int full = 0; full < 2; full++) {
		struct pv a[1] = {pv_column(1)}, b[1] = {pv_column(2)}, m[2] = {pv_column(3),
										  pv_str("x")};
		struct pv unknown[1] = {pv_column(9)};
		g = compaction_gc_new(cut, full != 0, 0);
		compaction_gc_set_schema(g, &s, NULL);
		CHECK_EQ_INT(fdecide(g, &k, a, 1, fx_ht(50), &one), COMPACTION_KEEP);
		CHECK_EQ_INT(fdecide(g, &k, b, 1, fx_ht(150), &one), COMPACTION_KEEP); /* above */
		CHECK_EQ_INT(fdecide(g, &k, b, 1, fx_ht(60), &one), COMPACTION_DROP);
		CHECK_EQ_INT(fdecide(g, &k, b, 1, fx_ht(40), &one), COMPACTION_DROP);
		CHECK_EQ_INT(fdecide(g, &k, m, 1, fx_ht(60), &one), COMPACTION_DROP);
		CHECK_EQ_INT(fdecide(g, &k, m, 2, fx_ht(60), &one), COMPACTION_DROP);
		/* A column the schema never had (a newer one): kept. */
		CHECK_EQ_INT(fdecide(g, &k, unknown, 1, fx_ht(60), &one), COMPACTION_KEEP);
		compaction_gc_free(g);
	}
	schema_free(&s);
	buf_free(&k.dockey);
	buf_free(&k.key);
	buf_free(&k.val);
}

/* A packed row of version v over slots n (values 1, 2, ...). */
static struct docvalue packed_of(struct buf *payload, uint32_t v, size_t n)
{
	struct docvalue vals[4], row = docvalue_kind(VAL_PACKED_ROW);
	const struct docvalue *slots[4];
	for (size_t i = 0; i < n; i++) {
		vals[i] = docvalue_of(pv_int32((int32_t)i + 1));
		slots[i] = &vals[i];
	}
	buf_reset(payload);
	packed_encode(payload, v, slots, n);
	row.packed = payload->data;
	row.packed_len = payload->len;
	return row;
}

/* Without repacking (no store to read ahead in, or a partial job), older
 * packed rows go only below one of the latest version, which has every
 * column they could supply. */
TEST(filter_older_packed_rows)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct fk k = {BUF_INIT, BUF_INIT, BUF_INIT};
	struct buf p0 = BUF_INIT, p1 = BUF_INIT;
	struct schema s;
	struct compaction_gc *g;
	struct pv dk = pv_str("doc");
	struct dockey d = {false, 0, 0, 1, NULL, &dk};
	dockey_append(&k.dockey, &d);
	CHECK_OK(schema_init(&s, "t", err));
	CHECK_OK(schema_add(&s, "r", COL_RANGE, CT_TEXT, err));
	CHECK_OK(schema_add(&s, "a", COL_REGULAR, CT_INT32, err));
	CHECK_OK_MSG(schema_add_regular_column(&s, "b", CT_INT32, 0, 0, err), err);
	struct docvalue v0 = packed_of(&p0, 0, 1), v1 = packed_of(&p1, 1, 2);
	for (int full = 0; full < 2; full++) {
		/* Newest at version 0 (no b): the older version-1 row supplies b. */
		g = compaction_gc_new(fx_ht(100), full != 0, 0);
		compaction_gc_set_schema(g, &s, NULL);
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(50), &v0), COMPACTION_KEEP);
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(40), &v1), COMPACTION_KEEP);
		compaction_gc_free(g);
		/* Newest at version 1: older rows are hidden. */
		g = compaction_gc_new(fx_ht(100), full != 0, 0);
		compaction_gc_set_schema(g, &s, NULL);
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(150), &v0), COMPACTION_KEEP); /* above */
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(50), &v1), COMPACTION_KEEP);
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(40), &v1), COMPACTION_DROP);
		CHECK_EQ_INT(fdecide(g, &k, NULL, 0, fx_ht(30), &v0), COMPACTION_DROP);
		compaction_gc_free(g);
	}
	schema_free(&s);
	buf_free(&p0);
	buf_free(&p1);
	buf_free(&k.dockey);
	buf_free(&k.key);
	buf_free(&k.val);
}

/* ---- randomized ------------------------------------------------------------ */

#define NROWS 6
#define NMK 3
#define MAX_PROBES 400

static struct {
	struct store_options o;
	uint64_t *hts;    /* every batch time, and each TTL'd write's expiry */
	size_t nhts, cap;
	uint64_t *bts;    /* batch times only */
	size_t nbts, bcap;
	int next_col;     /* name counter for added columns */
	uint64_t repacked, folded;
	/* A writer still at the schema before the last ALTER. */
	struct schema old;
	struct docwrite wold;
	bool has_old;
} RR;

static struct pv rkey[NROWS];
static char rnames[NROWS][4];
static const char *mkeys[NMK] = {"k0", "k1", "k2"};

static void note_batch(uint64_t ht)
{
	if (RR.nbts == RR.bcap) {
		RR.bcap = RR.bcap ? 2 * RR.bcap : 256;
		RR.bts = realloc(RR.bts, RR.bcap * sizeof *RR.bts);
		CHECK(RR.bts != NULL);
	}
	RR.bts[RR.nbts++] = ht;
}

static void note_ht(uint64_t ht)
{
	if (RR.nhts == RR.cap) {
		RR.cap = RR.cap ? 2 * RR.cap : 256;
		RR.hts = realloc(RR.hts, RR.cap * sizeof *RR.hts);
		CHECK(RR.hts != NULL);
	}
	RR.hts[RR.nhts++] = ht;
}

static int64_t rand_ttl(uint64_t *rng)
{
	static const int64_t ttls[] = {DOCWRITE_NO_TTL, DOCWRITE_NO_TTL, DOCWRITE_NO_TTL,
				       DOCWRITE_NO_TTL, 0, 2000, 5000, 15000};
	return ttls[test_rand(rng) % 8];
}

/* Expiry times worth probing for a write at ht with ttl (or the default). */
static void note_expiry(uint64_t ht, int64_t ttl, int64_t dflt)
{
	if (ttl == DOCWRITE_NO_TTL)
		ttl = dflt;
	if (ttl <= 0)
		return;
	note_ht(ht_make(ht_physical(ht) + (uint64_t)ttl * 1000, 0));
	note_ht(ht_make(ht_physical(ht) + (uint64_t)ttl * 1000 + 1, 0));
}

/* A random value for regular column c. */
static struct pv rand_value(uint64_t *rng, const struct column *c, char *tmp)
{
	int32_t iv = (int32_t)(test_rand(rng) % 100);
	if (test_rand(rng) % 6 == 0)
		return pv_null();
	if (c->type == CT_TEXT) {
		snprintf(tmp, 8, "s%d", iv);
		return pv_str(tmp);
	}
	return pv_int32(iv);
}

static void random_op(uint64_t *rng, uint64_t ht, int64_t dflt)
{
	char tmp[16][8];
	struct colval cols[16];
	size_t nc = 0;
	int row = (int)(test_rand(rng) % NROWS);
	const struct pv *key = &rkey[row];
	int64_t ttl = rand_ttl(rng);
	int op = (int)(test_rand(rng) % 10);
	struct pv mk[2], mv[2];

	if (op <= 3) {
		/* INSERT: every primitive column given (packed), or some; now
		 * and then by a writer that missed the last ALTER. */
		bool all = op <= 2, stale = all && RR.has_old && test_rand(rng) % 4 == 0;
		const struct schema *s = stale ? &RR.old : &C.s;
		for (size_t i = schema_nkeys(s); i < s->ncols && nc < 14; i++) {
			const struct column *c = &s->cols[i];
			if (col_type_is_collection(c->type) || (!all && test_rand(rng) % 2))
				continue;
			cols[nc] = colval_of(c->name, rand_value(rng, c, tmp[nc]));
			nc++;
		}
		if (test_rand(rng) % 3 == 0 && schema_find(s, "m") != NULL) {
			mk[0] = pv_str(mkeys[test_rand(rng) % NMK]);
			mv[0] = pv_int32((int32_t)(test_rand(rng) % 100));
			cols[nc++] = colval_map("m", mk, mv, 1);
		}
		if (stale)
			CHECK_OK_MSG(docwrite_insert(&RR.wold, key, 1, cols, nc, ttl), RR.wold.errmsg);
		else
			OK(docwrite_insert(&C.w, key, 1, cols, nc, ttl));
	} else if (op <= 6) {
		/* UPDATE one or two primitive columns. */
		size_t nprim = 0;
		const struct column *prims[16];
		for (size_t i = schema_nkeys(&C.s); i < C.s.ncols && nprim < 16; i++)
			if (!col_type_is_collection(C.s.cols[i].type))
				prims[nprim++] = &C.s.cols[i];
		if (nprim == 0)
			return;
		size_t n = 1 + test_rand(rng) % 2, first = test_rand(rng) % nprim;
		for (size_t j = 0; j < n && j < nprim; j++) {
			const struct column *c = prims[(first + j) % nprim];
			cols[nc] = colval_of(c->name, rand_value(rng, c, tmp[nc]));
			nc++;
		}
		OK(docwrite_update(&C.w, key, 1, cols, nc, ttl));
	} else if (op == 7) {
		if (test_rand(rng) % 3 == 0) {
			OK(docwrite_delete_row(&C.w, key, 1));
		} else {
			size_t i = schema_nkeys(&C.s) + test_rand(rng) % (C.s.ncols - schema_nkeys(&C.s));
			OK(docwrite_delete_column(&C.w, key, 1, C.s.cols[i].name));
		}
		ttl = DOCWRITE_NO_TTL;
	} else if (schema_find(&C.s, "m") != NULL) {
		mk[0] = pv_str(mkeys[test_rand(rng) % NMK]);
		mv[0] = pv_int32((int32_t)(test_rand(rng) % 100));
		if (op == 8)
			OK(docwrite_map_put(&C.w, key, 1, "m", mk, mv, 1, ttl));
		else
			OK(docwrite_map_remove(&C.w, key, 1, "m", mk, 1));
	}
	note_expiry(ht, ttl, dflt);
}

/* ALTER: add an int or text column, or drop a regular one (keeping one). */
static void random_alter(uint64_t *rng)
{
	char err[DOCRAFT_ERRMSG_SIZE], name[16];
	size_t nreg = C.s.ncols - schema_nkeys(&C.s);
	if (RR.has_old) {
		docwrite_free(&RR.wold);
		schema_free(&RR.old);
	}
	schema_copy(&RR.old, &C.s);
	docwrite_init(&RR.wold, &RR.old, &C.b, NULL);
	RR.has_old = true;
	if (nreg > 2 && (test_rand(rng) % 2 || C.s.ncols >= 12)) {
		size_t i = schema_nkeys(&C.s) + test_rand(rng) % nreg;
		snprintf(name, sizeof name, "%s", C.s.cols[i].name);
		CHECK_OK_MSG(schema_drop_column(&C.s, name, err), err);
	} else {
		snprintf(name, sizeof name, "x%d", RR.next_col++);
		CHECK_OK_MSG(schema_add_regular_column(&C.s, name,
						       test_rand(rng) % 2 ? CT_INT32 : CT_TEXT, 0, 0,
						       err),
			     err);
	}
	store_set_schema(C.f.s, &C.s);
}

/* Every row at t, then a whole-table scan, into out. */
static void read_all(uint64_t t, struct buf *out)
{
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	for (int i = 0; i < NROWS; i++) {
		struct row r;
		bool found;
		CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &rkey[i], 1, t, &C.f.arena, &r, &found,
					    C.f.errmsg),
			     C.f.errmsg);
		buf_printf(out, "%s: ", rnames[i]);
		fmt_row(out, &C.s, &r, found);
		buf_push(out, '\n');
	}
	memset(&sp, 0, sizeof sp);
	sp.read_ht = t;
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	buf_printf(out, "scan:");
	for (size_t i = 0; i < nrows; i++) {
		buf_printf(out, " %.*s[", (int)rows[i].key[0].v.s.len,
			   (const char *)rows[i].key[0].v.s.p);
		fmt_row(out, &C.s, &rows[i], true);
		buf_push(out, ']');
	}
	buf_push(out, '\n');
	arena_reset(&C.f.arena);
}

/* Every non-internal pair above ht, serialized. */
static void pairs_above(uint64_t ht, struct buf *out)
{
	struct store_iter *it = store_iter_new(C.f.s, NULL, 0, NULL, 0);
	buf_reset(out);
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl, pl;
		struct docht d;
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		if (k[0] <= KT_INTERNAL_MAX || key_split_ht(k, kl, &pl, &d) != 0 || d.ht <= ht)
			continue;
		buf_append_be32(out, (uint32_t)kl);
		buf_append(out, k, kl);
		buf_append_be32(out, (uint32_t)vl);
		buf_append(out, v, vl);
	}
	CHECK_OK_MSG(store_iter_status(it, C.f.errmsg), C.f.errmsg);
	store_iter_free(it);
}

/* Mostly whole ms (TTLs re-expressed from the row), sometimes µs. */
static uint64_t advance(uint64_t *rng, uint64_t ht)
{
	uint64_t x = test_rand(rng) % 10, p = ht_physical(ht);
	if (x < 2)
		return ht_make(p + 1 + test_rand(rng) % 1000, 0);
	if (x < 8)
		return ht_make((p / 1000 + 1 + test_rand(rng) % 3000) * 1000, 0);
	return ht_make((p / 1000 + 1 + test_rand(rng) % 10000) * 1000, 0);
}

static void random_run(uint64_t seed, int64_t dflt, int rounds)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	uint64_t rng = seed ? seed : 1, ht = fx_ht(1), cutoff = 0;
	struct buf before = BUF_INIT, after = BUF_INIT, pb = BUF_INIT, pa = BUF_INIT;
	static uint64_t probes[MAX_PROBES];
	struct compaction_totals t0, t1;
	size_t nreads = 0;

	log_init();
	memset(&RR, 0, sizeof RR);
	ctx_open("rp-rand", "rt");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("t", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	C.s.default_ttl_ms = dflt;
	store_options_default(&RR.o);
	/* Automatic compactions collect nothing the test reads. */
	RR.o.history_retention_us = UINT64_C(1) << 62;
	RR.o.default_ttl_ms = dflt;
	RR.o.schema = &C.s;
	store_close(C.f.s);
	CHECK_OK_MSG(store_open(C.f.dir, &RR.o, &C.f.s, C.f.errmsg), C.f.errmsg);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	for (int i = 0; i < NROWS; i++) {
		snprintf(rnames[i], sizeof rnames[i], "r%d", i);
		rkey[i] = pv_str(rnames[i]);
	}
	compaction_get_totals(&t0);

	for (int round = 0; round < rounds; round++) {
		int nbatches = 10 + (int)(test_rand(&rng) % 40);
		size_t first = RR.nbts;
		for (int i = 0; i < nbatches; i++) {
			int k = test_rand(&rng) % 4 == 0 ? 2 + (int)(test_rand(&rng) % 2) : 1;
			if (test_rand(&rng) % 40 == 0)
				random_alter(&rng);
			for (int j = 0; j < k; j++)
				random_op(&rng, ht, dflt);
			apply(ht);
			note_ht(ht);
			note_batch(ht);
			if (test_rand(&rng) % 8 == 0)
				CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
			ht = advance(&rng, ht);
		}
		if (test_rand(&rng) % 5 == 0) {
			CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
			store_close(C.f.s);
			CHECK_OK_MSG(store_open(C.f.dir, &RR.o, &C.f.s, C.f.errmsg), C.f.errmsg);
		}

		/* The cutoff: a batch time (maybe -1), or anywhere since the round
		 * began; never below the last one. */
		uint64_t c;
		if (test_rand(&rng) % 2 == 0) {
			c = RR.bts[first + test_rand(&rng) % (RR.nbts - first)] - test_rand(&rng) % 2;
		} else {
			uint64_t lo = ht_physical(RR.bts[first]), span = ht_physical(ht) - lo + 1;
			c = ht_make(lo + test_rand(&rng) % span, (uint32_t)(test_rand(&rng) % 4096));
		}
		if (c < cutoff)
			c = cutoff;

		/* Probes: batch times and expiries >= c (and the instant before),
		 * the cutoff, random times up to a little past now. */
		size_t np = 0;
		probes[np++] = c;
		for (size_t i = RR.nhts; i-- > 0 && np < MAX_PROBES - 20;) {
			if (RR.hts[i] < c)
				continue;
			probes[np++] = RR.hts[i];
			if (RR.hts[i] - 1 >= c)
				probes[np++] = RR.hts[i] - 1;
		}
		while (np < MAX_PROBES) {
			uint64_t span = ht_physical(ht) - ht_physical(c) + 20000000;
			probes[np++] = ht_make(ht_physical(c) + test_rand(&rng) % span,
					       (uint32_t)(test_rand(&rng) % 4096));
		}
		buf_reset(&before);
		for (size_t q = 0; q < np; q++)
			read_all(probes[q], &before);
		pairs_above(c, &pb);

		if (test_rand(&rng) % 4 == 0) {
			/* One row's keys: full or not, reads must not change. */
			struct buf lo = BUF_INIT, hi = BUF_INIT;
			int row = (int)(test_rand(&rng) % NROWS);
			CHECK_OK(docwrite_dockey(&C.s, &rkey[row], 1, &lo, err));
			buf_append(&hi, lo.data, lo.len);
			buf_push(&hi, KT_MAX_BYTE);
			CHECK_OK_MSG(store_compact_range(C.f.s, lo.data, lo.len, hi.data, hi.len, c,
							 C.f.errmsg),
				     C.f.errmsg);
			buf_free(&lo);
			buf_free(&hi);
		} else {
			compact(c);
		}
		cutoff = c;

		pairs_above(c, &pa);
		CHECK_MSG(pa.len == pb.len && (pa.len == 0 || memcmp(pa.data, pb.data, pa.len) == 0),
			  "seed %" PRIu64 " round %d: pairs above the cutoff changed", seed, round);
		buf_reset(&after);
		for (size_t q = 0; q < np; q++)
			read_all(probes[q], &after);
		nreads += np;
		if (strcmp(buf_cstr(&before), buf_cstr(&after)) != 0) {
			/* Find the first differing probe for the message. */
			struct buf one = BUF_INIT;
			const char *bs = buf_cstr(&before), *as = buf_cstr(&after);
			size_t i = 0;
			while (bs[i] == as[i])
				i++;
			while (i > 0 && bs[i - 1] != '\n')
				i--;
			buf_printf(&one, "%.300s", bs + i);
			CHECK_MSG(false,
				  "seed %" PRIu64 " round %d (cutoff %" PRIu64
				  "): reads changed; before:\n%s\nafter:\n%.300s\n%s",
				  seed, round, c, buf_cstr(&one), as + i,
				  fx_dump(&C.f, &C.s, false));
			buf_free(&one);
		}
		if (ht <= c)
			ht = ht_make((ht_physical(c) / 1000 + 1) * 1000, 0);
	}
	compaction_get_totals(&t1);
	RR.repacked = t1.stats.repacked - t0.stats.repacked;
	RR.folded = t1.stats.folded - t0.stats.folded;
	test_note("seed %" PRIu64 ": %d rounds, schema version %u, reads at %zu times, %" PRIu64
		  " rows repacked, %" PRIu64 " cells folded",
		  seed, rounds, C.s.version, nreads, RR.repacked, RR.folded);
	CHECK(RR.repacked > 0 && RR.folded > 0);
	buf_free(&before);
	buf_free(&after);
	buf_free(&pb);
	buf_free(&pa);
	free(RR.hts);
	free(RR.bts);
	if (RR.has_old) {
		docwrite_free(&RR.wold);
		schema_free(&RR.old);
	}
	ctx_close();
}

TEST(random_reads_unchanged)
{
	random_run(test_seed(), 0, 14);
}

TEST(random_reads_unchanged_default_ttl)
{
	random_run(test_seed() + 1, 8000, 14);
}

TEST_MAIN(T(updates_fold_into_the_packed_row), T(old_version_reencoded_after_alter),
	  T(column_deletes_fold_as_null_slots), T(ttl_cells), T(table_default_ttl),
	  T(older_rows_and_old_version_writers), T(size_limit_keeps_big_cells),
	  T(filter_dropped_columns_any_job), T(filter_older_packed_rows), T(random_reads_unchanged),
	  T(random_reads_unchanged_default_ttl))
