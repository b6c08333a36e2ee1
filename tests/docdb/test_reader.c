/* Adversarial tests of the DocDB read path (reader.c), driven through the
 * row write API (docwrite.c) on a real store (fixture.h).
 *
 *   liveness       UPDATE-only rows vanish, INSERTed rows survive
 *   history        row delete + re-insert, reads at every time between;
 *                  200 versions of one cell; DocHTs across the 10 -> 11 byte
 *                  change of 2026-06-14
 *   TTL            column / row / table default TTL, TTL 0, exact
 *                  boundaries (physical µs only), inherited marker TTLs
 *   same batch     later write_id wins (insert, delete, re-insert ...)
 *   collections    map / set / list ops, replace, list order
 *   documents      sub-document deletes at depth >= 2, primitive <->
 *                  object overwrites, sub-document reads, the depth limit
 *   metadata       node write times and TTLs; 300-column rows
 *   bad data       undecodable stored pairs give DOCRAFT_ECORRUPT
 *   concurrency    reads concurrent with store_apply see whole batches
 *   read times     history cutoff (ETOOOLD), 0 / HT_INVALID (EINVAL)
 *   types          every column type round-trips (values and keys, ASC and
 *                  DESC, composite hash keys)
 *   validation     errors name the column, leave the batch unchanged
 *   model          randomized: thousands of ops against an in-memory model
 *                  of the documented semantics (replay with TEST_SEED=...)
 *
 * meson runs this file twice: as test_reader_packed (DOCRAFT_TEST_PACKED=1)
 * every table is packed (docdb/packed.h) and every expected read is the
 * same; only write ids and pair counts differ where noted.
 *
 * Every case keeps its store, schema and batch in the global C, so a failed
 * CHECK (which longjmps out of the case) is cleaned up by the next case, or
 * at exit (temp dir only). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/key.h"
#include "fixture.h"

/* ---- shared context ------------------------------------------------------ */

static struct {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	int64_t list_counter;
	bool open;
} C;

static void cleanup_all(void);

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

static void ctx_open(const char *tag, const char *table)
{
	static bool registered;
	char err[DOCRAFT_ERRMSG_SIZE];
	if (!registered) {
		atexit(cleanup_all);
		registered = true;
	}
	ctx_close();
	memset(&C, 0, sizeof C);
	fx_open(&C.f, tag);
	batch_init(&C.b);
	C.open = true;
	CHECK_OK_MSG(schema_init(&C.s, table, err), err);
	C.s.packed = fx_packed();
	C.list_counter = 1000;
}

static void col(const char *name, enum col_kind kind, enum col_type type, bool desc)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(schema_add_column(&C.s, name, kind, type, 0, 0, desc, err), err);
}

static void coll(const char *name, enum col_type type, enum col_type elem, enum col_type val)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(schema_add_column(&C.s, name, COL_REGULAR, type, elem, val, false, err), err);
}

static void ctx_ready(void)
{
	docwrite_init(&C.w, &C.s, &C.b, &C.list_counter);
}

static void apply(uint64_t ht)
{
	fx_apply(&C.f, &C.b, ht);
}

/* The table most cases use: k text hash key; a int, b text, m map<text,int>,
 * st set<int>, l list<text>. */
static void std_table(const char *tag, int64_t default_ttl_ms)
{
	ctx_open(tag, "t");
	col("k", COL_HASH, CT_TEXT, false);
	col("a", COL_REGULAR, CT_INT32, false);
	col("b", COL_REGULAR, CT_TEXT, false);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	coll("st", CT_SET, CT_INT32, 0);
	coll("l", CT_LIST, CT_TEXT, 0);
	C.s.default_ttl_ms = default_ttl_ms;
	ctx_ready();
}

/* Formats a node; lists (elements keyed by PV_ARRAY_INDEX) print as [v, ...]
 * so their order is visible without the indexes. */
static void fmt_node(struct buf *out, const struct docnode *n)
{
	if (n == NULL) {
		buf_printf(out, "NULL");
		return;
	}
	if (n->kind == VAL_PRIMITIVE) {
		pv_format(out, &n->value);
		return;
	}
	bool list = n->children != NULL && n->children->key.type == PV_ARRAY_INDEX;
	buf_push(out, list ? '[' : '{');
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		if (!list) {
			pv_format(out, &c->key);
			buf_printf(out, ": ");
		}
		fmt_node(out, c);
		if (c->next != NULL)
			buf_printf(out, ", ");
	}
	buf_push(out, list ? ']' : '}');
}

/* "live a=1 b='x' m={...} st=NULL l=[...]" ("live" when the liveness column
 * is visible), or "not found". Regular columns of the schema, in order. */
static const char *fmt_row(const struct row *r, bool found)
{
	static char out[8192];
	struct buf b = BUF_INIT;
	struct pv live = pv_liveness();
	if (!found) {
		snprintf(out, sizeof out, "not found");
		return out;
	}
	if (docnode_child(r->root, &live) != NULL)
		buf_printf(&b, "live ");
	for (size_t i = schema_nkeys(r->schema); i < r->schema->ncols; i++) {
		const struct column *c = &r->schema->cols[i];
		buf_printf(&b, "%s%s=", i > schema_nkeys(r->schema) ? " " : "", c->name);
		fmt_node(&b, row_column(r, c));
	}
	snprintf(out, sizeof out, "%s", buf_cstr(&b));
	buf_free(&b);
	return out;
}

static const char *row_at_key(const struct pv *key, size_t nkey, uint64_t ht)
{
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, key, nkey, ht, &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	CHECK(!found || r.root != NULL);
	return fmt_row(&r, found);
}

/* Row of the standard table. */
static const char *row_at(const char *k, uint64_t ht)
{
	struct pv key = pv_str(k);
	return row_at_key(&key, 1, ht);
}

#define OK(call) CHECK_OK_MSG(call, C.w.errmsg)
#define KEY(name) struct pv name = pv_str(#name)

static struct colval cv_int(const char *n, int32_t v) { return colval_of(n, pv_int32(v)); }
static struct colval cv_str(const char *n, const char *v) { return colval_of(n, pv_str(v)); }
static struct colval cv_null(const char *n) { return colval_of(n, pv_null()); }

static uint64_t at(int64_t s) { return fx_ht(s); }
static uint64_t at_us(int64_t s, int64_t us) { return fx_ht_us(s, us); }

/* ---- liveness -------------------------------------------------------------- */

TEST(update_only_row_vanishes)
{
	KEY(u);
	std_table("rd-upd", 0);
	struct colval a1 = cv_int("a", 1), bx = cv_str("b", "x"), bnull = cv_null("b");
	OK(docwrite_update(&C.w, &u, 1, &a1, 1, DOCWRITE_NO_TTL));
	apply(at(1));
	OK(docwrite_update(&C.w, &u, 1, &bx, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	OK(docwrite_delete_column(&C.w, &u, 1, "a"));
	apply(at(3));
	OK(docwrite_update(&C.w, &u, 1, &bnull, 1, DOCWRITE_NO_TTL)); /* SET b = NULL */
	apply(at(4));
	struct pv mk = pv_str("k"), mv = pv_int32(1);
	OK(docwrite_map_put(&C.w, &u, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
	apply(at(5));
	OK(docwrite_map_remove(&C.w, &u, 1, "m", &mk, 1));
	apply(at(6));
	struct pv e5 = pv_int32(5);
	OK(docwrite_set_add(&C.w, &u, 1, "st", &e5, 1, DOCWRITE_NO_TTL));
	apply(at(7));
	OK(docwrite_set_remove(&C.w, &u, 1, "st", &e5, 1));
	apply(at(8));
	struct pv lx = pv_str("x");
	OK(docwrite_list_append(&C.w, &u, 1, "l", &lx, 1, DOCWRITE_NO_TTL));
	apply(at(9));
	OK(docwrite_delete_column(&C.w, &u, 1, "l"));
	apply(at(10));

	CHECK_EQ_STR(row_at("u", at(1) - 1), "not found");
	CHECK_EQ_STR(row_at("u", at(1)), "a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at(2)), "a=1 b='x' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at(3)), "a=NULL b='x' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at(4)), "not found");
	CHECK_EQ_STR(row_at("u", at(5)), "a=NULL b=NULL m={'k': 1} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at(6)), "not found");
	CHECK_EQ_STR(row_at("u", at(7)), "a=NULL b=NULL m=NULL st={5: NULL} l=NULL");
	CHECK_EQ_STR(row_at("u", at(8)), "not found");
	CHECK_EQ_STR(row_at("u", at(9)), "a=NULL b=NULL m=NULL st=NULL l=['x']");
	CHECK_EQ_STR(row_at("u", at(10)), "not found");
	CHECK_EQ_STR(row_at("u", at(100)), "not found");
	/* Re-reading older times after everything is still exact. */
	CHECK_EQ_STR(row_at("u", at(2)), "a=1 b='x' m=NULL st=NULL l=NULL");
	ctx_close();
}

TEST(inserted_row_survives)
{
	KEY(i);
	KEY(e);
	std_table("rd-ins", 0);
	struct colval cols[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &i, 1, cols, 2, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &e, 1, NULL, 0, DOCWRITE_NO_TTL)); /* key only */
	apply(at(1));
	OK(docwrite_delete_column(&C.w, &i, 1, "a"));
	apply(at(2));
	struct colval bnull = cv_null("b");
	OK(docwrite_update(&C.w, &i, 1, &bnull, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	struct pv mk = pv_str("k"), mv = pv_int32(1);
	OK(docwrite_map_put(&C.w, &i, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	OK(docwrite_map_remove(&C.w, &i, 1, "m", &mk, 1));
	apply(at(5));

	CHECK_EQ_STR(row_at("i", at(1)), "live a=1 b='x' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("i", at(2)), "live a=NULL b='x' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("i", at(3)), "live a=NULL b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("i", at(4)), "live a=NULL b=NULL m={'k': 1} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("i", at(5)), "live a=NULL b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("e", at(5)), "live a=NULL b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("e", at(1) - 1), "not found");
	/* INSERT of NULL columns: a tombstone, but the row exists. */
	KEY(n);
	struct colval nulls[2] = {cv_null("a"), cv_null("b")};
	OK(docwrite_insert(&C.w, &n, 1, nulls, 2, DOCWRITE_NO_TTL));
	apply(at(6));
	CHECK_EQ_STR(row_at("n", at(6)), "live a=NULL b=NULL m=NULL st=NULL l=NULL");
	ctx_close();
}

/* ---- history ------------------------------------------------------------- */

TEST(delete_then_reinsert)
{
	KEY(r);
	std_table("rd-reins", 0);
	{
		struct pv mk[2] = {pv_str("x"), pv_str("y")}, mv[2] = {pv_int32(1), pv_int32(2)};
		struct colval cols[3] = {cv_int("a", 1), cv_str("b", "one"), colval_map("m", mk, mv, 2)};
		OK(docwrite_insert(&C.w, &r, 1, cols, 3, DOCWRITE_NO_TTL));
		apply(at(1));
	}
	{
		struct colval a2 = cv_int("a", 2);
		struct pv e = pv_int32(9);
		OK(docwrite_update(&C.w, &r, 1, &a2, 1, DOCWRITE_NO_TTL));
		OK(docwrite_set_add(&C.w, &r, 1, "st", &e, 1, DOCWRITE_NO_TTL));
		apply(at(2));
	}
	OK(docwrite_delete_row(&C.w, &r, 1));
	apply(at(3));
	{
		struct colval b4 = cv_str("b", "four");
		OK(docwrite_insert(&C.w, &r, 1, &b4, 1, DOCWRITE_NO_TTL));
		apply(at(4));
	}
	{
		struct pv mk = pv_str("z"), mv = pv_int32(3);
		OK(docwrite_map_put(&C.w, &r, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
		apply(at(5));
	}
	CHECK_EQ_STR(row_at("r", at(1) - 1), "not found");
	CHECK_EQ_STR(row_at("r", at(1)), "live a=1 b='one' m={'x': 1, 'y': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at_us(1, 500000)), "live a=1 b='one' m={'x': 1, 'y': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at(2)), "live a=2 b='one' m={'x': 1, 'y': 2} st={9: NULL} l=NULL");
	CHECK_EQ_STR(row_at("r", at(3) - 1), "live a=2 b='one' m={'x': 1, 'y': 2} st={9: NULL} l=NULL");
	CHECK_EQ_STR(row_at("r", at(3)), "not found");
	CHECK_EQ_STR(row_at("r", at_us(3, 999999)), "not found");
	CHECK_EQ_STR(row_at("r", at(4)), "live a=NULL b='four' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at(5)), "live a=NULL b='four' m={'z': 3} st=NULL l=NULL");

	/* Delete again, then an UPDATE-only row: no liveness, old data hidden. */
	OK(docwrite_delete_row(&C.w, &r, 1));
	apply(at(6));
	struct colval a7 = cv_int("a", 7);
	OK(docwrite_update(&C.w, &r, 1, &a7, 1, DOCWRITE_NO_TTL));
	apply(at(7));
	CHECK_EQ_STR(row_at("r", at(6)), "not found");
	CHECK_EQ_STR(row_at("r", at(7)), "a=7 b=NULL m=NULL st=NULL l=NULL");
	/* Everything again after a flush and reopen (SST instead of memtable). */
	CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
	fx_reopen(&C.f);
	CHECK_EQ_STR(row_at("r", at(2)), "live a=2 b='one' m={'x': 1, 'y': 2} st={9: NULL} l=NULL");
	CHECK_EQ_STR(row_at("r", at(3)), "not found");
	CHECK_EQ_STR(row_at("r", at(5)), "live a=NULL b='four' m={'z': 3} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at(7)), "a=7 b=NULL m=NULL st=NULL l=NULL");
	ctx_close();
}

TEST(many_versions_of_one_cell)
{
	KEY(v);
	std_table("rd-vers", 0);
	for (int i = 1; i <= 200; i++) {
		struct colval a = cv_int("a", i);
		if (i % 7 == 0)
			OK(docwrite_delete_column(&C.w, &v, 1, "a"));
		else
			OK(docwrite_update(&C.w, &v, 1, &a, 1, DOCWRITE_NO_TTL));
		apply(at_us(10, i * 3));
	}
	for (int i = 1; i <= 200; i++) {
		char want[64];
		if (i % 7 == 0)
			snprintf(want, sizeof want, "not found");
		else
			snprintf(want, sizeof want, "a=%d b=NULL m=NULL st=NULL l=NULL", i);
		CHECK_EQ_STR(row_at("v", at_us(10, i * 3)), want);
		CHECK_EQ_STR(row_at("v", at_us(10, i * 3 + 2)), want);
	}
	ctx_close();
}

/* ---- hot rows (builder.c design note) --------------------------------------- */

/* k text hash, a int, b text: no collection, so a whole-row read may skip
 * older root versions after the newest packed row (packed build). */
static void scalar_table(const char *tag)
{
	ctx_open(tag, "t");
	col("k", COL_HASH, CT_TEXT, false);
	col("a", COL_REGULAR, CT_INT32, false);
	col("b", COL_REGULAR, CT_TEXT, false);
	ctx_ready();
}

/* 3000 versions of one row (a full insert, packed in the packed build,
 * every 3rd; an update of a otherwise): reading it at the newest time or
 * or in the middle (newer versions skipped by a seek to the read time,
 * older ones past the decided path) costs a bounded number of keys, not
 * one per version. */
TEST(hot_row_reads_are_bounded)
{
	KEY(h);
	uint64_t before, fed_new, fed_mid, plain_mid;
	scalar_table("rd-hot");
	for (int i = 1; i <= 3000; i++) {
		struct colval cols[2] = {cv_int("a", i), cv_str("b", "x")};
		if (i % 3 == 1)
			OK(docwrite_insert(&C.w, &h, 1, cols, 2, DOCWRITE_NO_TTL));
		else
			OK(docwrite_update(&C.w, &h, 1, cols, 1, DOCWRITE_NO_TTL));
		apply(at_us(10, i * 3));
	}
	before = reader_keys_fed();
	CHECK_EQ_STR(row_at("h", at_us(10, 3000 * 3)), "live a=3000 b='x'");
	fed_new = reader_keys_fed() - before;
	before = reader_keys_fed();
	CHECK_EQ_STR(row_at("h", at_us(10, 1500 * 3 + 1)), "live a=1500 b='x'");
	fed_mid = reader_keys_fed() - before;
	reader_set_shortcuts(false);
	before = reader_keys_fed();
	CHECK_EQ_STR(row_at("h", at_us(10, 1500 * 3 + 1)), "live a=1500 b='x'");
	plain_mid = reader_keys_fed() - before;
	reader_set_shortcuts(true);
	test_note("keys fed: %" PRIu64 " at the newest time, %" PRIu64 " in the middle (%" PRIu64
		  " without the shortcuts)", fed_new, fed_mid, plain_mid);
	CHECK(fed_new < 64);
	CHECK(fed_mid < 64);
	CHECK(plain_mid > 1500);
	ctx_close();
}

/* Random histories on one scalar row: full inserts (packed), partial
 * inserts, updates, row and column deletes, with and without TTL; every
 * read, at every write time and just after, is the same with the hot-row
 * shortcuts on and off. */
TEST(hot_row_shortcuts_agree)
{
	uint64_t rng = test_seed();
	KEY(h);
	int n = 400;
	scalar_table("rd-hot-agree");
	for (int i = 1; i <= n; i++) {
		int op = (int)(test_rand(&rng) % 10);
		int64_t ttl = test_rand(&rng) % 4 == 0 ? 1 + (int64_t)(test_rand(&rng) % 5) * 3
							: DOCWRITE_NO_TTL;
		struct colval cols[2] = {cv_int("a", i), cv_str("b", test_rand(&rng) % 2 ? "y" : "z")};
		if (op < 4)
			OK(docwrite_insert(&C.w, &h, 1, cols, 2, ttl));
		else if (op < 5)
			OK(docwrite_insert(&C.w, &h, 1, cols, 1, ttl));
		else if (op < 8)
			OK(docwrite_update(&C.w, &h, 1, cols + (op - 5) % 2, 1, ttl));
		else if (op < 9)
			OK(docwrite_delete_row(&C.w, &h, 1));
		else
			OK(docwrite_delete_column(&C.w, &h, 1, test_rand(&rng) % 2 ? "a" : "b"));
		apply(at(i));
	}
	for (int i = 1; i <= n + 20; i++) {
		for (int d = 0; d < 2; d++) {
			uint64_t t = d == 0 ? at(i) : at_us(i, 500000);
			char on[256];
			snprintf(on, sizeof on, "%s", row_at("h", t));
			reader_set_shortcuts(false);
			const char *off = row_at("h", t);
			reader_set_shortcuts(true);
			CHECK_MSG(strcmp(on, off) == 0, "at %d%s: shortcuts %s, plain %s", i,
				  d ? ".5" : "", on, off);
		}
	}
	ctx_close();
}

/* DocHTs grow from 10 to 11 bytes at 2026-06-14 22:09:36 UTC (§3.3); the
 * versions of one path must still sort newest first across that change. */
TEST(docht_length_boundary)
{
	KEY(d);
	const uint64_t boundary_us = UINT64_C(1500000000000000) + (UINT64_C(1) << 48);
	const uint64_t t1 = ht_make(boundary_us - 1000000, 0), t2 = ht_make(boundary_us + 1000000, 0);
	const uint64_t t3 = ht_make(boundary_us + 2000000, 7);
	std_table("rd-bound", 0);
	struct colval a1 = cv_int("a", 1), a2 = cv_int("a", 2);
	OK(docwrite_insert(&C.w, &d, 1, &a1, 1, DOCWRITE_NO_TTL));
	apply(t1);
	OK(docwrite_update(&C.w, &d, 1, &a2, 1, 2000));
	apply(t2);
	CHECK_EQ_STR(row_at("d", t1), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("d", t2 - 1), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("d", t2), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("d", ht_make(boundary_us + 3000001, 0)),
		     "live a=NULL b=NULL m=NULL st=NULL l=NULL");
	OK(docwrite_delete_row(&C.w, &d, 1));
	apply(t3);
	CHECK_EQ_STR(row_at("d", t3), "not found");
	CHECK_EQ_STR(row_at("d", t3 - 1), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	ctx_close();
}

/* ---- TTL ----------------------------------------------------------------- */

TEST(ttl_column_vs_row)
{
	KEY(r);
	KEY(u);
	std_table("rd-ttl", 0);
	/* INSERT ... USING TTL 10 at 100. */
	struct colval cols[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &r, 1, cols, 2, 10000));
	apply(at(100));
	/* UPDATE b without TTL at 105: the row outlives its liveness. */
	struct colval by = cv_str("b", "y");
	OK(docwrite_update(&C.w, &r, 1, &by, 1, DOCWRITE_NO_TTL));
	apply(at(105));
	/* A map element with its own 3 s TTL at 106, another without. */
	struct pv mk[2] = {pv_str("short"), pv_str("long")}, mv[2] = {pv_int32(1), pv_int32(2)};
	OK(docwrite_map_put(&C.w, &r, 1, "m", &mk[0], &mv[0], 1, 3000));
	OK(docwrite_map_put(&C.w, &r, 1, "m", &mk[1], &mv[1], 1, DOCWRITE_NO_TTL));
	apply(at(106));

	CHECK_EQ_STR(row_at("r", at(109)), "live a=1 b='y' m={'long': 2, 'short': 1} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at_us(109, 1)), "live a=1 b='y' m={'long': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at(110)), "live a=1 b='y' m={'long': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at_us(110, 1)), "a=NULL b='y' m={'long': 2} st=NULL l=NULL");
	/* Reads before the update still see b='x' with its TTL. */
	CHECK_EQ_STR(row_at("r", at(104)), "live a=1 b='x' m=NULL st=NULL l=NULL");
	OK(docwrite_delete_column(&C.w, &r, 1, "b"));
	OK(docwrite_delete_column(&C.w, &r, 1, "m"));
	apply(at(120));
	CHECK_EQ_STR(row_at("r", at(120)), "not found");
	CHECK_EQ_STR(row_at("r", at(119)), "a=NULL b='y' m={'long': 2} st=NULL l=NULL");

	/* UPDATE ... USING TTL on an UPDATE-only row: gone with its column. */
	struct colval a5 = cv_int("a", 5);
	OK(docwrite_update(&C.w, &u, 1, &a5, 1, 2000));
	apply(at(130));
	CHECK_EQ_STR(row_at("u", at(132)), "a=5 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at_us(132, 1)), "not found");
	/* A newer value without TTL replaces an expired one. */
	struct colval a6 = cv_int("a", 6);
	OK(docwrite_update(&C.w, &u, 1, &a6, 1, DOCWRITE_NO_TTL));
	apply(at(140));
	CHECK_EQ_STR(row_at("u", at(139)), "not found");
	CHECK_EQ_STR(row_at("u", at(100000)), "a=6 b=NULL m=NULL st=NULL l=NULL");
	/* ... and an expired newer value hides an older live one. */
	struct colval a7 = cv_int("a", 7);
	OK(docwrite_update(&C.w, &u, 1, &a7, 1, 1000));
	apply(at(150));
	CHECK_EQ_STR(row_at("u", at(151)), "a=7 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("u", at(152)), "not found");
	ctx_close();
}

TEST(ttl_table_default)
{
	std_table("rd-ttldef", 100000); /* default_time_to_live = 100 s */
	struct pv k[7] = {pv_str("k1"), pv_str("k2"), pv_str("k3"), pv_str("k4"),
			  pv_str("k5"), pv_str("k6"), pv_str("k7")};
	struct colval a = cv_int("a", 1);
	OK(docwrite_insert(&C.w, &k[0], 1, &a, 1, DOCWRITE_NO_TTL)); /* table default */
	OK(docwrite_insert(&C.w, &k[1], 1, &a, 1, 0));               /* never */
	OK(docwrite_insert(&C.w, &k[2], 1, &a, 1, 10000));           /* shorter */
	OK(docwrite_insert(&C.w, &k[3], 1, &a, 1, 500000));          /* longer */
	OK(docwrite_insert(&C.w, &k[4], 1, &a, 1, 10000));
	OK(docwrite_update(&C.w, &k[5], 1, &a, 1, DOCWRITE_NO_TTL));
	apply(at(1000));
	struct colval bz = cv_str("b", "z");
	OK(docwrite_update(&C.w, &k[4], 1, &bz, 1, 0)); /* TTL 0 overrides the default */
	struct pv mk = pv_str("m"), mv = pv_int32(3);
	OK(docwrite_map_put(&C.w, &k[5], 1, "m", &mk, &mv, 1, 0));
	struct pv e = pv_int32(4);
	OK(docwrite_set_add(&C.w, &k[6], 1, "st", &e, 1, DOCWRITE_NO_TTL));
	apply(at(1005));

	const char *live_a = "live a=1 b=NULL m=NULL st=NULL l=NULL";
	CHECK_EQ_STR(row_at("k1", at(1100)), live_a);
	CHECK_EQ_STR(row_at("k1", at_us(1100, 1)), "not found");
	CHECK_EQ_STR(row_at("k2", at(1000000)), live_a);
	CHECK_EQ_STR(row_at("k3", at(1010)), live_a);
	CHECK_EQ_STR(row_at("k3", at_us(1010, 1)), "not found");
	CHECK_EQ_STR(row_at("k4", at(1400)), live_a);
	CHECK_EQ_STR(row_at("k4", at(1500)), live_a);
	CHECK_EQ_STR(row_at("k4", at_us(1500, 1)), "not found");
	CHECK_EQ_STR(row_at("k5", at(1010)), "live a=1 b='z' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k5", at_us(1010, 1)), "a=NULL b='z' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k5", at(1000000)), "a=NULL b='z' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k6", at(1100)), "a=1 b=NULL m={'m': 3} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k6", at_us(1100, 1)), "a=NULL b=NULL m={'m': 3} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k7", at(1105)), "a=NULL b=NULL m=NULL st={4: NULL} l=NULL");
	CHECK_EQ_STR(row_at("k7", at_us(1105, 1)), "not found");

	/* The default comes from the caller of reader_get_doc, not the data. */
	struct buf dk = BUF_INIT;
	const struct docnode *n;
	CHECK_OK_MSG(docwrite_dockey(&C.s, &k[0], 1, &dk, C.f.errmsg), C.f.errmsg);
	CHECK_OK_MSG(reader_get_doc(C.f.s, dk.data, dk.len, NULL, 0, at(5000), 0, &C.f.arena, &n,
				    C.f.errmsg), C.f.errmsg);
	CHECK(n != NULL && n->n_children == 2);
	CHECK_OK_MSG(reader_get_doc(C.f.s, dk.data, dk.len, NULL, 0, at(5000), 100000, &C.f.arena,
				    &n, C.f.errmsg), C.f.errmsg);
	CHECK(n == NULL);
	buf_free(&dk);

	/* Scans apply the default too. */
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at_us(1100, 1);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 5); /* k2, k4, k5, k6, k7 */
	sp.read_ht = at(1000000);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 3); /* k2, k5, k6 */
	ctx_close();
}

/* Expiry compares physical microseconds only. */
TEST(ttl_boundary_is_physical)
{
	KEY(p);
	std_table("rd-ttlphys", 0);
	const uint64_t w = ht_make(FX_BASE_US + 50000000, 4000);
	struct colval a = cv_int("a", 1);
	OK(docwrite_update(&C.w, &p, 1, &a, 1, 1000));
	apply(w);
	CHECK_EQ_STR(row_at("p", ht_make(FX_BASE_US + 51000000, 0)), "a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("p", ht_make(FX_BASE_US + 51000000, 4095)), "a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("p", ht_make(FX_BASE_US + 51000001, 0)), "not found");
	/* TTL of 1 ms. */
	KEY(q);
	OK(docwrite_update(&C.w, &q, 1, &a, 1, 1));
	apply(at(60));
	CHECK_EQ_STR(row_at("q", at_us(60, 1000)), "a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("q", at_us(60, 1001)), "not found");
	ctx_close();
}

/* ---- same batch ---------------------------------------------------------- */

TEST(same_batch_later_write_wins)
{
	std_table("rd-batch", 0);
	struct pv k[10];
	char names[10][4];
	for (int i = 0; i < 10; i++) {
		snprintf(names[i], sizeof names[i], "k%d", i);
		k[i] = pv_str(names[i]);
	}
	struct colval ins1[2] = {cv_int("a", 1), cv_str("b", "x")};
	struct colval a2 = cv_int("a", 2), a9 = cv_int("a", 9), bq = cv_str("b", "q");
	/* insert, delete, re-insert */
	OK(docwrite_insert(&C.w, &k[0], 1, ins1, 2, DOCWRITE_NO_TTL));
	OK(docwrite_delete_row(&C.w, &k[0], 1));
	OK(docwrite_insert(&C.w, &k[0], 1, &a2, 1, DOCWRITE_NO_TTL));
	/* insert, delete */
	OK(docwrite_insert(&C.w, &k[1], 1, ins1, 2, DOCWRITE_NO_TTL));
	OK(docwrite_delete_row(&C.w, &k[1], 1));
	/* update, delete column, update another */
	OK(docwrite_update(&C.w, &k[2], 1, &a2, 1, DOCWRITE_NO_TTL));
	OK(docwrite_delete_column(&C.w, &k[2], 1, "a"));
	OK(docwrite_update(&C.w, &k[2], 1, &bq, 1, DOCWRITE_NO_TTL));
	/* delete column, then set it */
	OK(docwrite_delete_column(&C.w, &k[3], 1, "a"));
	OK(docwrite_update(&C.w, &k[3], 1, &a9, 1, DOCWRITE_NO_TTL));
	/* two values for one column */
	OK(docwrite_update(&C.w, &k[4], 1, &a2, 1, DOCWRITE_NO_TTL));
	OK(docwrite_update(&C.w, &k[4], 1, &a9, 1, DOCWRITE_NO_TTL));
	/* map put / remove / put */
	struct pv mx = pv_str("x"), my = pv_str("y"), v1 = pv_int32(1), v2 = pv_int32(2);
	OK(docwrite_map_put(&C.w, &k[5], 1, "m", &mx, &v1, 1, DOCWRITE_NO_TTL));
	OK(docwrite_map_remove(&C.w, &k[5], 1, "m", &mx, 1));
	OK(docwrite_map_put(&C.w, &k[5], 1, "m", &my, &v2, 1, DOCWRITE_NO_TTL));
	OK(docwrite_map_remove(&C.w, &k[6], 1, "m", &mx, 1));
	OK(docwrite_map_put(&C.w, &k[6], 1, "m", &mx, &v2, 1, DOCWRITE_NO_TTL));
	struct pv e1 = pv_int32(1);
	OK(docwrite_set_add(&C.w, &k[6], 1, "st", &e1, 1, DOCWRITE_NO_TTL));
	OK(docwrite_set_remove(&C.w, &k[6], 1, "st", &e1, 1));
	/* insert with a map, then replace it in the same batch */
	struct pv mk[2] = {pv_str("a"), pv_str("b")}, mv[2] = {pv_int32(1), pv_int32(2)};
	struct colval insm = colval_map("m", mk, mv, 2);
	struct pv rk = pv_str("c"), rv = pv_int32(3);
	struct colval repl = colval_map("m", &rk, &rv, 1);
	OK(docwrite_insert(&C.w, &k[7], 1, &insm, 1, DOCWRITE_NO_TTL));
	OK(docwrite_collection_replace(&C.w, &k[7], 1, &repl, DOCWRITE_NO_TTL));
	/* replace, then add */
	struct pv dk = pv_str("d"), dv = pv_int32(4);
	OK(docwrite_collection_replace(&C.w, &k[8], 1, &repl, DOCWRITE_NO_TTL));
	OK(docwrite_map_put(&C.w, &k[8], 1, "m", &dk, &dv, 1, DOCWRITE_NO_TTL));
	/* delete row, then update (row exists without liveness); update, delete */
	OK(docwrite_delete_row(&C.w, &k[9], 1));
	OK(docwrite_update(&C.w, &k[9], 1, &a9, 1, DOCWRITE_NO_TTL));
	apply(at(1));

	CHECK_EQ_STR(row_at("k0", at(1)), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k1", at(1)), "not found");
	CHECK_EQ_STR(row_at("k2", at(1)), "a=NULL b='q' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k3", at(1)), "a=9 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k4", at(1)), "a=9 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k5", at(1)), "a=NULL b=NULL m={'y': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k6", at(1)), "a=NULL b=NULL m={'x': 2} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k7", at(1)), "live a=NULL b=NULL m={'c': 3} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k8", at(1)), "a=NULL b=NULL m={'c': 3, 'd': 4} st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k9", at(1)), "a=9 b=NULL m=NULL st=NULL l=NULL");

	/* Second batch on the same rows: update then delete row; a row delete
	 * and a re-insert of k1 in the same batch as a later column update. */
	OK(docwrite_update(&C.w, &k[9], 1, &a2, 1, DOCWRITE_NO_TTL));
	OK(docwrite_delete_row(&C.w, &k[9], 1));
	OK(docwrite_insert(&C.w, &k[1], 1, &bq, 1, DOCWRITE_NO_TTL));
	OK(docwrite_update(&C.w, &k[1], 1, &a9, 1, DOCWRITE_NO_TTL));
	OK(docwrite_delete_row(&C.w, &k[0], 1));
	apply(at(2));
	CHECK_EQ_STR(row_at("k9", at(2)), "not found");
	CHECK_EQ_STR(row_at("k1", at(2)), "live a=9 b='q' m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("k0", at(2)), "not found");
	CHECK_EQ_STR(row_at("k0", at(1)), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	ctx_close();
}

/* ---- collections ----------------------------------------------------------- */

TEST(map_and_set_ops)
{
	KEY(c);
	std_table("rd-coll", 0);
	{
		struct pv mk[2] = {pv_str("a"), pv_str("b")}, mv[2] = {pv_int32(1), pv_int32(2)};
		struct pv se[3] = {pv_int32(-5), pv_int32(3), pv_int32(INT32_MAX)};
		struct colval cols[2] = {colval_map("m", mk, mv, 2), colval_elems("st", se, 3)};
		OK(docwrite_insert(&C.w, &c, 1, cols, 2, DOCWRITE_NO_TTL));
		apply(at(1));
	}
	{
		struct pv mk[2] = {pv_str("b"), pv_str("c")}, mv[2] = {pv_int32(20), pv_int32(3)};
		struct pv se[2] = {pv_int32(INT32_MIN), pv_int32(3)};
		OK(docwrite_map_put(&C.w, &c, 1, "m", mk, mv, 2, DOCWRITE_NO_TTL));
		OK(docwrite_set_add(&C.w, &c, 1, "st", se, 2, DOCWRITE_NO_TTL));
		apply(at(2));
	}
	{
		struct pv mk[2] = {pv_str("a"), pv_str("zz")};
		struct pv se[2] = {pv_int32(3), pv_int32(99)};
		OK(docwrite_map_remove(&C.w, &c, 1, "m", mk, 2));
		OK(docwrite_set_remove(&C.w, &c, 1, "st", se, 2));
		apply(at(3));
	}
	{
		struct pv mk = pv_str("d"), mv = pv_int32(4);
		struct pv se = pv_int32(0);
		struct colval rm = colval_map("m", &mk, &mv, 1), rs = colval_elems("st", &se, 1);
		OK(docwrite_collection_replace(&C.w, &c, 1, &rm, DOCWRITE_NO_TTL));
		OK(docwrite_collection_replace(&C.w, &c, 1, &rs, DOCWRITE_NO_TTL));
		apply(at(4));
	}
	{
		struct pv mk = pv_str("e"), mv = pv_int32(5);
		OK(docwrite_map_put(&C.w, &c, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
		apply(at(5));
	}
	{
		struct colval empty = colval_map("m", NULL, NULL, 0);
		OK(docwrite_collection_replace(&C.w, &c, 1, &empty, DOCWRITE_NO_TTL));
		apply(at(6));
	}
	{
		/* UPDATE SET m = {...}: replaces, like collection_replace. */
		struct pv mk = pv_str("f"), mv = pv_int32(6);
		struct colval um = colval_map("m", &mk, &mv, 1);
		OK(docwrite_update(&C.w, &c, 1, &um, 1, DOCWRITE_NO_TTL));
		apply(at(7));
	}
	CHECK_EQ_STR(row_at("c", at(1)), "live a=NULL b=NULL m={'a': 1, 'b': 2} st={-5: NULL, 3: NULL, "
					"2147483647: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(2)),
		     "live a=NULL b=NULL m={'a': 1, 'b': 20, 'c': 3} st={-2147483648: NULL, -5: NULL, "
		     "3: NULL, 2147483647: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(3)),
		     "live a=NULL b=NULL m={'b': 20, 'c': 3} st={-2147483648: NULL, -5: NULL, "
		     "2147483647: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(4)), "live a=NULL b=NULL m={'d': 4} st={0: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(5)), "live a=NULL b=NULL m={'d': 4, 'e': 5} st={0: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(6)), "live a=NULL b=NULL m=NULL st={0: NULL} l=NULL");
	CHECK_EQ_STR(row_at("c", at(7)), "live a=NULL b=NULL m={'f': 6} st={0: NULL} l=NULL");
	ctx_close();
}

TEST(list_order)
{
	KEY(l);
	std_table("rd-list", 0);
	struct pv ins[2] = {pv_str("x"), pv_str("y")};
	struct colval cl = colval_elems("l", ins, 2);
	OK(docwrite_insert(&C.w, &l, 1, &cl, 1, DOCWRITE_NO_TTL));
	apply(at(1));
	struct pv app[2] = {pv_str("c"), pv_str("d")};
	OK(docwrite_list_append(&C.w, &l, 1, "l", app, 2, DOCWRITE_NO_TTL));
	apply(at(2));
	struct pv pre[2] = {pv_str("a"), pv_str("b")};
	OK(docwrite_list_prepend(&C.w, &l, 1, "l", pre, 2, DOCWRITE_NO_TTL));
	apply(at(3));
	struct pv z = pv_str("z"), e = pv_str("e");
	OK(docwrite_list_prepend(&C.w, &l, 1, "l", &z, 1, DOCWRITE_NO_TTL));
	OK(docwrite_list_append(&C.w, &l, 1, "l", &e, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK_EQ_STR(row_at("l", at(1)), "live a=NULL b=NULL m=NULL st=NULL l=['x', 'y']");
	CHECK_EQ_STR(row_at("l", at(2)), "live a=NULL b=NULL m=NULL st=NULL l=['x', 'y', 'c', 'd']");
	CHECK_EQ_STR(row_at("l", at(3)), "live a=NULL b=NULL m=NULL st=NULL l=['a', 'b', 'x', 'y', 'c', 'd']");
	CHECK_EQ_STR(row_at("l", at(4)),
		     "live a=NULL b=NULL m=NULL st=NULL l=['z', 'a', 'b', 'x', 'y', 'c', 'd', 'e']");
	/* Duplicates are kept: a list is not a set. */
	struct pv dup[2] = {pv_str("x"), pv_str("x")};
	OK(docwrite_list_append(&C.w, &l, 1, "l", dup, 2, DOCWRITE_NO_TTL));
	apply(at(5));
	CHECK_EQ_STR(row_at("l", at(5)),
		     "live a=NULL b=NULL m=NULL st=NULL l=['z', 'a', 'b', 'x', 'y', 'c', 'd', 'e', 'x', 'x']");
	/* Replace hides every element, including those of the INSERT. */
	struct pv nl[2] = {pv_str("n1"), pv_str("n2")};
	struct colval rl = colval_elems("l", nl, 2);
	OK(docwrite_collection_replace(&C.w, &l, 1, &rl, DOCWRITE_NO_TTL));
	apply(at(6));
	CHECK_EQ_STR(row_at("l", at(6)), "live a=NULL b=NULL m=NULL st=NULL l=['n1', 'n2']");
	OK(docwrite_list_prepend(&C.w, &l, 1, "l", &z, 1, DOCWRITE_NO_TTL));
	apply(at(7));
	CHECK_EQ_STR(row_at("l", at(7)), "live a=NULL b=NULL m=NULL st=NULL l=['z', 'n1', 'n2']");
	CHECK_EQ_STR(row_at("l", at(4)),
		     "live a=NULL b=NULL m=NULL st=NULL l=['z', 'a', 'b', 'x', 'y', 'c', 'd', 'e']");
	/* List elements with a TTL. */
	KEY(t);
	struct pv te[2] = {pv_str("short"), pv_str("long")};
	OK(docwrite_list_append(&C.w, &t, 1, "l", &te[0], 1, 1000));
	OK(docwrite_list_append(&C.w, &t, 1, "l", &te[1], 1, 5000));
	apply(at(10));
	CHECK_EQ_STR(row_at("t", at(11)), "a=NULL b=NULL m=NULL st=NULL l=['short', 'long']");
	CHECK_EQ_STR(row_at("t", at(12)), "a=NULL b=NULL m=NULL st=NULL l=['long']");
	CHECK_EQ_STR(row_at("t", at(16)), "not found");
	ctx_close();
}

TEST(replace_hides_same_insert_elements)
{
	KEY(r);
	std_table("rd-repl", 0);
	/* INSERT with map and set, then replace both at a later time; elements
	 * of the INSERT (same batch as the liveness) must be hidden. */
	struct pv mk[3] = {pv_str("a"), pv_str("b"), pv_str("c")};
	struct pv mv[3] = {pv_int32(1), pv_int32(2), pv_int32(3)};
	struct pv se[2] = {pv_int32(1), pv_int32(2)};
	struct colval cols[3] = {cv_int("a", 1), colval_map("m", mk, mv, 3), colval_elems("st", se, 2)};
	OK(docwrite_insert(&C.w, &r, 1, cols, 3, 60000));
	apply(at(1));
	struct pv nk = pv_str("b"), nv = pv_int32(200);
	struct colval rm = colval_map("m", &nk, &nv, 1);
	OK(docwrite_collection_replace(&C.w, &r, 1, &rm, 5000));
	struct colval rs = colval_elems("st", NULL, 0);
	OK(docwrite_collection_replace(&C.w, &r, 1, &rs, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK_EQ_STR(row_at("r", at(1)), "live a=1 b=NULL m={'a': 1, 'b': 2, 'c': 3} st={1: NULL, 2: NULL} l=NULL");
	CHECK_EQ_STR(row_at("r", at(2)), "live a=1 b=NULL m={'b': 200} st=NULL l=NULL");
	/* The replacement's own TTL: gone at 2 + 5 s; the old 'b' does not come back. */
	CHECK_EQ_STR(row_at("r", at_us(7, 1)), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("r", at_us(61, 1)), "not found");
	ctx_close();
}

/* ---- generic documents ---------------------------------------------------- */

static struct buf DK;

static void doc_key(const char *name)
{
	struct pv c = pv_str(name);
	struct dockey k = {false, 0, 0, 1, NULL, &c};
	buf_reset(&DK);
	dockey_append(&DK, &k);
}

static const char *doc_at(const struct pv *sub, size_t nsub, uint64_t ht)
{
	const struct docnode *n;
	CHECK_OK_MSG(reader_get_doc(C.f.s, DK.data, DK.len, sub, nsub, ht, 0, &C.f.arena, &n,
				    C.f.errmsg), C.f.errmsg);
	return fx_doc(&C.f, n);
}

static void doc_open(const char *tag)
{
	ctx_open(tag, "docs");
	docwrite_init(&C.w, NULL, &C.b, NULL);
	buf_free(&DK);
}

static struct subdoc leaf(struct pv v)
{
	struct subdoc d = {0, v, NULL, NULL, 0};
	return d;
}

static struct subdoc obj(const struct pv *keys, const struct subdoc *children, size_t n)
{
	struct subdoc d = {1, {0}, keys, children, n};
	return d;
}

TEST(delete_subtree_at_depth)
{
	doc_open("rd-subdel");
	doc_key("doc");
	/* {a: {b: {c: 1, d: 2}, bb: 3, e: {c: 9}, n: {1: 'one', 2: 'two'}}, f: 4} */
	struct pv kb[2] = {pv_str("c"), pv_str("d")};
	struct subdoc cb[2] = {leaf(pv_int32(1)), leaf(pv_int32(2))};
	struct pv ke[1] = {pv_str("c")};
	struct subdoc ce[1] = {leaf(pv_int32(9))};
	struct pv kn[2] = {pv_int64(1), pv_int64(2)};
	struct subdoc cn[2] = {leaf(pv_str("one")), leaf(pv_str("two"))};
	struct pv ka[4] = {pv_str("b"), pv_str("bb"), pv_str("e"), pv_str("n")};
	struct subdoc ca[4] = {obj(kb, cb, 2), leaf(pv_int32(3)), obj(ke, ce, 1), obj(kn, cn, 2)};
	struct pv kr[2] = {pv_str("a"), pv_str("f")};
	struct subdoc cr[2] = {obj(ka, ca, 4), leaf(pv_int32(4))};
	struct subdoc root = obj(kr, cr, 2);
	OK(docwrite_insert_subdoc(&C.w, DK.data, DK.len, NULL, 0, &root));
	apply(at(1));
	const char *full = "{'a': {'b': {'c': 1, 'd': 2}, 'bb': 3, 'e': {'c': 9}, 'n': {1: 'one', 2: "
			   "'two'}}, 'f': 4}";
	CHECK_EQ_STR(doc_at(NULL, 0, at(1)), full);

	struct pv p_ab[3] = {pv_str("a"), pv_str("b"), pv_str("c")};
	OK(docwrite_delete_path(&C.w, DK.data, DK.len, p_ab, 2)); /* depth 2 */
	apply(at(2));
	CHECK_EQ_STR(doc_at(NULL, 0, at(2)),
		     "{'a': {'bb': 3, 'e': {'c': 9}, 'n': {1: 'one', 2: 'two'}}, 'f': 4}");
	struct pv p_aec[3] = {pv_str("a"), pv_str("e"), pv_str("c")};
	struct pv p_an1[3] = {pv_str("a"), pv_str("n"), pv_int64(1)};
	OK(docwrite_delete_path(&C.w, DK.data, DK.len, p_aec, 3)); /* depth 3 */
	OK(docwrite_delete_path(&C.w, DK.data, DK.len, p_an1, 3));
	apply(at(3));
	CHECK_EQ_STR(doc_at(NULL, 0, at(3)), "{'a': {'bb': 3, 'e': {}, 'n': {2: 'two'}}, 'f': 4}");
	struct docvalue five = docvalue_of(pv_int32(5));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, p_ab, 3, &five));
	apply(at(4));
	CHECK_EQ_STR(doc_at(NULL, 0, at(4)),
		     "{'a': {'b': {'c': 5}, 'bb': 3, 'e': {}, 'n': {2: 'two'}}, 'f': 4}");
	/* Sub-document reads at each time. */
	CHECK_EQ_STR(doc_at(p_ab, 2, at(1)), "{'c': 1, 'd': 2}");
	CHECK_EQ_STR(doc_at(p_ab, 2, at(2)), "NULL");
	CHECK_EQ_STR(doc_at(p_ab, 2, at(4)), "{'c': 5}");
	CHECK_EQ_STR(doc_at(p_ab, 3, at(1)), "1");
	CHECK_EQ_STR(doc_at(p_ab, 3, at(3)), "NULL");
	CHECK_EQ_STR(doc_at(p_ab, 3, at(4)), "5");
	CHECK_EQ_STR(doc_at(p_ab, 1, at(3)), "{'bb': 3, 'e': {}, 'n': {2: 'two'}}");
	CHECK_EQ_STR(doc_at(p_an1, 2, at(3)), "{2: 'two'}");
	CHECK_EQ_STR(doc_at(p_an1, 3, at(2)), "'one'");
	CHECK_EQ_STR(doc_at(p_an1, 3, at(3)), "NULL");
	/* Whole document deleted, then one field written again. */
	OK(docwrite_delete_path(&C.w, DK.data, DK.len, NULL, 0));
	apply(at(5));
	struct pv kf = pv_str("f");
	struct docvalue six = docvalue_of(pv_int32(6));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &kf, 1, &six));
	apply(at(6));
	CHECK_EQ_STR(doc_at(NULL, 0, at(5)), "NULL");
	CHECK_EQ_STR(doc_at(NULL, 0, at(6)), "{'f': 6}");
	CHECK_EQ_STR(doc_at(p_ab, 1, at(6)), "NULL");
	CHECK_EQ_STR(doc_at(p_ab, 2, at(6)), "NULL");
	CHECK_EQ_STR(doc_at(p_ab, 2, at(4)), "{'c': 5}");
	/* Another document next to it is untouched. */
	doc_key("doc2");
	CHECK_EQ_STR(doc_at(NULL, 0, at(6)), "NULL");
	buf_free(&DK);
	ctx_close();
}

TEST(primitive_object_overwrites)
{
	doc_open("rd-primobj");
	doc_key("d");
	struct pv x[2] = {pv_str("x"), pv_str("y")};
	struct pv q[2] = {pv_str("x"), pv_str("q")};
	struct docvalue v1 = docvalue_of(pv_int32(1)), v2 = docvalue_of(pv_int32(2)),
			v3 = docvalue_of(pv_int32(3)), v8 = docvalue_of(pv_int32(8)),
			v9 = docvalue_of(pv_int32(9));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, x, 1, &v1));
	apply(at(1));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, x, 2, &v2)); /* child under a primitive */
	apply(at(2));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, x, 1, &v3)); /* primitive over children */
	apply(at(3));
	struct pv kp = pv_str("p");
	struct subdoc cp = leaf(pv_int32(7));
	struct subdoc o = obj(&kp, &cp, 1);
	OK(docwrite_insert_subdoc(&C.w, DK.data, DK.len, x, 1, &o)); /* object over primitive */
	apply(at(4));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, x, 1, &v8));
	apply(at(5));
	struct subdoc empty = obj(NULL, NULL, 0);
	OK(docwrite_insert_subdoc(&C.w, DK.data, DK.len, x, 1, &empty));
	apply(at(6));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, q, 2, &v9));
	apply(at(7));
	CHECK_EQ_STR(doc_at(NULL, 0, at(1)), "{'x': 1}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(2)), "{'x': {'y': 2}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(3)), "{'x': 3}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(4)), "{'x': {'p': 7}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(5)), "{'x': 8}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(6)), "{'x': {}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(7)), "{'x': {'q': 9}}");
	CHECK_EQ_STR(doc_at(x, 1, at(3)), "3");
	CHECK_EQ_STR(doc_at(x, 2, at(2)), "2");
	CHECK_EQ_STR(doc_at(x, 2, at(3)), "NULL");
	CHECK_EQ_STR(doc_at(x, 2, at(7)), "NULL");
	CHECK_EQ_STR(doc_at(q, 2, at(7)), "9");
	CHECK_EQ_STR(doc_at(x, 1, at(6)), "{}");

	/* The same at the document root. */
	doc_key("root");
	struct docvalue sv = docvalue_of(pv_str("v"));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, NULL, 0, &sv));
	apply(at(10));
	struct pv kc = pv_str("c");
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &kc, 1, &v1));
	apply(at(11));
	struct pv kd = pv_str("d");
	struct subdoc cd = leaf(pv_int32(2));
	struct subdoc od = obj(&kd, &cd, 1);
	OK(docwrite_insert_subdoc(&C.w, DK.data, DK.len, NULL, 0, &od));
	apply(at(12));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, NULL, 0, &sv));
	apply(at(13));
	CHECK_EQ_STR(doc_at(NULL, 0, at(10)), "'v'");
	CHECK_EQ_STR(doc_at(NULL, 0, at(11)), "{'c': 1}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(12)), "{'d': 2}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(13)), "'v'");
	CHECK_EQ_STR(doc_at(&kc, 1, at(11)), "1");
	CHECK_EQ_STR(doc_at(&kc, 1, at(12)), "NULL");
	CHECK_EQ_STR(doc_at(&kd, 1, at(13)), "NULL");
	buf_free(&DK);
	ctx_close();
}

/* An init marker with a TTL: its children inherit the expiry (§6.3) unless
 * they carry their own TTL. */
TEST(inherited_ttl)
{
	doc_open("rd-inhttl");
	doc_key("d");
	struct docvalue marker = docvalue_kind(VAL_OBJECT);
	marker.has_ttl = true;
	marker.ttl_ms = 10000;
	struct pv o = pv_str("o");
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &o, 1, &marker));
	struct pv c1[2] = {pv_str("o"), pv_str("inherit")};
	struct pv c2[2] = {pv_str("o"), pv_str("own")};
	struct pv c3[2] = {pv_str("o"), pv_str("never")};
	struct docvalue v = docvalue_of(pv_int32(1));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, c1, 2, &v));
	v.has_ttl = true;
	v.ttl_ms = 20000;
	OK(docwrite_put_path(&C.w, DK.data, DK.len, c2, 2, &v));
	v.ttl_ms = 0;
	OK(docwrite_put_path(&C.w, DK.data, DK.len, c3, 2, &v));
	apply(at(100));
	/* A child written later with its own TTL counts from its own time. */
	struct pv c4[2] = {pv_str("o"), pv_str("late")};
	v.ttl_ms = 20000;
	OK(docwrite_put_path(&C.w, DK.data, DK.len, c4, 2, &v));
	apply(at(105));
	CHECK_EQ_STR(doc_at(NULL, 0, at(110)), "{'o': {'inherit': 1, 'late': 1, 'never': 1, 'own': 1}}");
	/* After 10 s the marker has expired; explicit-TTL children stay. */
	CHECK_EQ_STR(doc_at(NULL, 0, at_us(110, 1)), "{'o': {'late': 1, 'never': 1, 'own': 1}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at_us(120, 1)), "{'o': {'late': 1, 'never': 1}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at(125)), "{'o': {'late': 1, 'never': 1}}");
	CHECK_EQ_STR(doc_at(NULL, 0, at_us(125, 1)), "{'o': {'never': 1}}");
	/* Sub-document reads see the ancestor's TTL too. */
	CHECK_EQ_STR(doc_at(c1, 2, at(110)), "1");
	CHECK_EQ_STR(doc_at(c1, 2, at_us(110, 1)), "NULL");
	CHECK_EQ_STR(doc_at(c2, 2, at_us(110, 1)), "1");
	CHECK_EQ_STR(doc_at(c4, 2, at(125)), "1");
	CHECK_EQ_STR(doc_at(c1, 1, at_us(110, 1)), "{'late': 1, 'never': 1, 'own': 1}");
	/* A newer marker without TTL stops the inheritance for newer children. */
	struct docvalue marker2 = docvalue_kind(VAL_OBJECT);
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &o, 1, &marker2));
	struct docvalue v2 = docvalue_of(pv_int32(2));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, c1, 2, &v2));
	apply(at(200));
	CHECK_EQ_STR(doc_at(NULL, 0, at(100000)), "{'o': {'inherit': 2}}");
	buf_free(&DK);
	ctx_close();
}

/* Documents nested to the reader's depth limit (64 levels). A write the API
 * accepts must stay readable: a too-deep path must be refused at write time,
 * not poison the whole document for readers. */
TEST(deep_documents)
{
	doc_open("rd-deep");
	struct pv path[80];
	for (int i = 0; i < 80; i++)
		path[i] = pv_int32(i);
	struct docvalue v = docvalue_of(pv_str("leaf"));
	struct pv sib = pv_str("sibling");
	struct docvalue sv = docvalue_of(pv_int32(1));
	doc_key("deep64");
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &sib, 1, &sv));
	OK(docwrite_put_path(&C.w, DK.data, DK.len, path, 64, &v));
	apply(at(1));
	const struct docnode *n;
	CHECK_OK_MSG(reader_get_doc(C.f.s, DK.data, DK.len, NULL, 0, at(1), 0, &C.f.arena, &n,
				    C.f.errmsg), C.f.errmsg);
	CHECK(n != NULL && n->n_children == 2);
	for (int i = 0; i < 64; i++) {
		n = docnode_child(n, &path[i]);
		CHECK_MSG(n != NULL, "level %d missing", i);
	}
	CHECK_EQ_STR(fx_doc(&C.f, n), "'leaf'");
	CHECK_EQ_STR(doc_at(path, 63, at(1)), "{63: 'leaf'}");
	CHECK_OK(reader_get_doc(C.f.s, DK.data, DK.len, path, 64, at(1), 0, &C.f.arena, &n,
				C.f.errmsg));
	CHECK_EQ_STR(fx_doc(&C.f, n), "'leaf'");
	CHECK_EQ_INT(reader_get_doc(C.f.s, DK.data, DK.len, path, 65, at(1), 0, &C.f.arena, &n,
				    C.f.errmsg), DOCRAFT_EINVAL);

	doc_key("deep65");
	OK(docwrite_put_path(&C.w, DK.data, DK.len, &sib, 1, &sv));
	apply(at(2));
	int rv = docwrite_put_path(&C.w, DK.data, DK.len, path, 65, &v);
	if (rv == 0) {
		apply(at(3));
		rv = reader_get_doc(C.f.s, DK.data, DK.len, NULL, 0, at(3), 0, &C.f.arena, &n,
				    C.f.errmsg);
		CHECK_MSG(rv == 0, "put_path accepted 65 subkeys, then reading the document fails: %d (%s)",
			  rv, C.f.errmsg);
	} else {
		CHECK_EQ_INT(rv, DOCRAFT_EINVAL);
		CHECK_EQ_INT(C.b.count, 0);
	}
	buf_free(&DK);
	ctx_close();
}

/* A table with 300 columns: ids above 63 take multi-byte svarints. */
TEST(wide_table)
{
	ctx_open("rd-wide", "wide");
	col("k", COL_HASH, CT_INT64, false);
	for (int i = 0; i < 300; i++) {
		char name[16];
		snprintf(name, sizeof name, "c%d", i);
		col(name, COL_REGULAR, CT_INT32, false);
	}
	ctx_ready();
	struct pv key = pv_int64(42);
	struct colval cols[300];
	char names[300][16];
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof names[i], "c%d", i);
		cols[i] = cv_int(names[i], i * 10);
	}
	OK(docwrite_update(&C.w, &key, 1, cols, 300, DOCWRITE_NO_TTL));
	apply(at(1));
	for (int i = 0; i < 300; i += 3)
		OK(docwrite_delete_column(&C.w, &key, 1, names[i]));
	apply(at(2));
	for (int ts = 1; ts <= 2; ts++) {
		struct row r;
		bool found;
		CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &key, 1, at(ts), &C.f.arena, &r, &found, C.f.errmsg),
			     C.f.errmsg);
		CHECK(found);
		CHECK_EQ_INT(r.root->n_children, ts == 1 ? 300 : 200);
		for (int i = 0; i < 300; i++) {
			const struct docnode *n = row_column_named(&r, names[i]);
			if (ts == 2 && i % 3 == 0)
				CHECK_MSG(n == NULL, "c%d should be deleted", i);
			else
				CHECK_MSG(n != NULL && n->value.v.i32 == i * 10, "c%d at %d", i, ts);
		}
	}
	ctx_close();
}

/* The metadata the reader documents on nodes: write time (DocHT of the
 * entry; implicit containers: newest child) and the explicit TTL. */
TEST(node_write_time_and_ttl)
{
	KEY(w);
	std_table("rd-meta", 0);
	struct colval cols[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &w, 1, cols, 2, 30000)); /* liveness w0, a w1, b w2 (packed: w0) */
	apply(at(1));
	struct pv mk[2] = {pv_str("p"), pv_str("q")}, mv[2] = {pv_int32(1), pv_int32(2)};
	struct colval b2 = cv_str("b", "y");
	OK(docwrite_update(&C.w, &w, 1, &b2, 1, DOCWRITE_NO_TTL));         /* w0 */
	OK(docwrite_map_put(&C.w, &w, 1, "m", &mk[0], &mv[0], 1, 0));      /* w1 */
	OK(docwrite_map_put(&C.w, &w, 1, "m", &mk[1], &mv[1], 1, 5000));   /* w2 */
	apply(at(2));
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &w, 1, at(3), &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	CHECK(found);
	const struct docnode *a = row_column_named(&r, "a"), *b = row_column_named(&r, "b"),
			     *m = row_column_named(&r, "m");
	struct pv live = pv_liveness();
	const struct docnode *l = docnode_child(r.root, &live);
	CHECK(a != NULL && b != NULL && m != NULL && l != NULL);
	CHECK_EQ_U64(l->write_time.ht, at(1));
	CHECK_EQ_INT(l->write_time.write_id, 0);
	CHECK(l->has_ttl && l->ttl_ms == 30000 && l->ttl_from == at(1));
	CHECK_EQ_U64(a->write_time.ht, at(1));
	CHECK_EQ_INT(a->write_time.write_id, C.s.packed ? 0 : 1); /* packed: one pair, w0 */
	CHECK(a->has_ttl && a->ttl_ms == 30000 && a->ttl_from == at(1));
	CHECK_EQ_U64(b->write_time.ht, at(2));
	CHECK_EQ_INT(b->write_time.write_id, 0);
	CHECK(!b->has_ttl);
	CHECK(!m->has_marker);
	CHECK_EQ_U64(m->write_time.ht, at(2));
	CHECK_EQ_INT(m->write_time.write_id, 2);
	CHECK_EQ_INT(m->n_children, 2);
	CHECK(m->children->has_ttl && m->children->ttl_ms == 0);
	CHECK(m->children->next->has_ttl && m->children->next->ttl_ms == 5000 &&
	      m->children->next->ttl_from == at(2));
	CHECK_EQ_U64(r.root->write_time.ht, at(2));
	ctx_close();
}

/* Stored bytes that do not decode: the reader reports DOCRAFT_ECORRUPT for
 * the affected row (and scans over it), never crashes, and other rows stay
 * readable. Raw pairs go in through batch_put, below the docwrite API. */
TEST(corrupt_entries)
{
	std_table("rd-corrupt", 0);
	KEY(good);
	struct colval a1 = cv_int("a", 1);
	OK(docwrite_insert(&C.w, &good, 1, &a1, 1, DOCWRITE_NO_TTL));
	apply(at(1));
	static const struct {
		const char *name;
		const char *sub; /* appended to the DocKey */
		size_t sublen;
		const char *val;
		size_t vallen;
	} bad[] = {
		{"c_subkey", "\x01", 1, "$", 1},          /* unknown subkey type */
		{"c_trunc", "K", 1, "$", 1},              /* truncated column id */
		{"c_int_short", "K\x81", 2, "H\x00\x01", 3}, /* int value of 2 bytes */
		{"c_empty", "K\x81", 2, "", 0},           /* empty value */
		{"c_packed", "", 0, "z\x01\x02", 3},      /* packed row of an unknown schema version */
		{"c_ttl", "K\x81", 2, "t", 1},            /* TTL marker without varint */
		{"c_marker", "K\x81", 2, "{x", 2},         /* marker with trailing bytes */
		{"c_uuid", "K\x81", 2, "_\x01", 2},        /* short uuid */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv k = pv_str(bad[i].name);
		struct buf key = BUF_INIT;
		CHECK_OK(docwrite_dockey(&C.s, &k, 1, &key, C.f.errmsg));
		buf_append(&key, bad[i].sub, bad[i].sublen);
		batch_put(&C.b, key.data, key.len, bad[i].val, bad[i].vallen);
		buf_free(&key);
	}
	apply(at(2));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv k = pv_str(bad[i].name);
		struct row r;
		bool found = true;
		char err[DOCRAFT_ERRMSG_SIZE] = "";
		int rv = reader_get_row(C.f.s, &C.s, &k, 1, at(2), &C.f.arena, &r, &found, err);
		CHECK_MSG(rv == DOCRAFT_ECORRUPT, "%s: rv %d (%s)", bad[i].name, rv, err);
		CHECK_MSG(!found, "%s: found", bad[i].name);
		CHECK_MSG(strlen(err) > 0, "%s: no message", bad[i].name);
		/* The same through a scan of its hash key. */
		struct scan_spec sp;
		struct row *rows;
		size_t nrows;
		memset(&sp, 0, sizeof sp);
		sp.read_ht = at(2);
		sp.hash_key = &k;
		sp.n_hash = 1;
		rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
		CHECK_MSG(rv == DOCRAFT_ECORRUPT, "%s: scan rv %d (%s)", bad[i].name, rv, err);
		/* Before the corrupt pair was written the row simply does not exist. */
		CHECK_EQ_STR(row_at(bad[i].name, at(1)), "not found");
	}
	CHECK_EQ_STR(row_at("good", at(2)), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	/* A whole-store scan meets the corrupt rows. */
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	char err[DOCRAFT_ERRMSG_SIZE];
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(2);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_ECORRUPT);
	sp.reverse = true;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_ECORRUPT);
	/* A key that is not a DocKey at all, inside the whole-store range. */
	ctx_close();
	std_table("rd-corrupt2", 0);
	OK(docwrite_insert(&C.w, &good, 1, &a1, 1, DOCWRITE_NO_TTL));
	batch_put(&C.b, "G\x00", 2, "$", 1);
	apply(at(1));
	sp.reverse = false;
	sp.read_ht = at(1);
	int rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
	CHECK_MSG(rv == DOCRAFT_ECORRUPT, "scan over a non-DocKey key: rv %d", rv);
	sp.reverse = true;
	rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
	CHECK_MSG(rv == DOCRAFT_ECORRUPT, "reverse scan over a non-DocKey key: rv %d", rv);
	CHECK_EQ_STR(row_at("good", at(1)), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	ctx_close();
}

/* Reads run concurrently with store_apply (reader.h): every read sees whole
 * batches (a, b and m['k'] are written together), and a read at a time the
 * writer has passed always returns the same answer. */
static atomic_int WRITER_DONE_UPTO;
static atomic_bool WRITER_FAILED;
#define CONC_N 1500

static void *writer_main(void *arg)
{
	(void)arg;
	struct pv key = pv_str("c");
	for (int i = 1; i <= CONC_N; i++) {
		char txt[16];
		snprintf(txt, sizeof txt, "%d", i);
		struct colval cols[2] = {cv_int("a", i), cv_str("b", txt)};
		struct pv mk = pv_str("k"), mv = pv_int32(i);
		if (docwrite_update(&C.w, &key, 1, cols, 2, DOCWRITE_NO_TTL) != 0 ||
		    docwrite_map_put(&C.w, &key, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL) != 0 ||
		    (i % 3 == 0 && docwrite_delete_row(&C.w, &key, 1) != 0) ||
		    (i % 3 == 0 && docwrite_update(&C.w, &key, 1, cols, 2, DOCWRITE_NO_TTL) != 0) ||
		    (i % 3 == 0 && docwrite_map_put(&C.w, &key, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL) != 0) ||
		    store_apply(C.f.s, C.b.data.data, C.b.data.len, at_us(1, i * 10), (uint64_t)i,
				C.f.errmsg) != 0) {
			atomic_store(&WRITER_FAILED, true);
			break;
		}
		batch_reset(&C.b);
		if (i % 500 == 0 && store_flush(C.f.s, C.f.errmsg) != 0) {
			atomic_store(&WRITER_FAILED, true);
			break;
		}
		atomic_store(&WRITER_DONE_UPTO, i);
	}
	atomic_store(&WRITER_DONE_UPTO, CONC_N + 1);
	return NULL;
}

TEST(concurrent_reads_see_whole_batches)
{
	std_table("rd-conc", 0);
	pthread_t th;
	struct arena a = ARENA_INIT;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv key = pv_str("c");
	uint64_t rng = 7;
	int reads = 0, bad = 0, last_bad_i = 0, last_bad_a = 0;
	char last_bad[512] = "";
	atomic_store(&WRITER_DONE_UPTO, 0);
	atomic_store(&WRITER_FAILED, false);
	CHECK(pthread_create(&th, NULL, writer_main, NULL) == 0);
	for (;;) {
		int done = atomic_load(&WRITER_DONE_UPTO);
		struct row r;
		bool found;
		int i;
		uint64_t t;
		if (done > CONC_N)
			break;
		/* Either the far future (whatever is applied) or a passed time. */
		if (test_rand(&rng) % 2 || done == 0) {
			t = at(100000);
			i = -1;
		} else {
			i = 1 + (int)(test_rand(&rng) % (uint64_t)done);
			t = at_us(1, i * 10 + (int64_t)(test_rand(&rng) % 10));
		}
		if (reader_get_row(C.f.s, &C.s, &key, 1, t, &a, &r, &found, err) != 0) {
			bad++;
			snprintf(last_bad, sizeof last_bad, "read failed: %s", err);
			continue;
		}
		reads++;
		if (!found) {
			if (i >= 0) {
				bad++;
				snprintf(last_bad, sizeof last_bad, "row missing at step %d", i);
			}
			continue;
		}
		const struct docnode *na = row_column_named(&r, "a"), *nb = row_column_named(&r, "b"),
				     *nm = row_column_named(&r, "m");
		int va = na ? na->value.v.i32 : -1;
		int vb = -1;
		if (nb != NULL) {
			char txt[16];
			size_t n = nb->value.v.s.len < 15 ? nb->value.v.s.len : 15;
			memcpy(txt, nb->value.v.s.p, n);
			txt[n] = 0;
			vb = atoi(txt);
		}
		int vm = nm && nm->children ? nm->children->value.v.i32 : -1;
		if (va != vb || va != vm || (i >= 0 && va != i)) {
			bad++;
			last_bad_i = i;
			last_bad_a = va;
			snprintf(last_bad, sizeof last_bad, "step %d: a=%d b=%d m=%d", i, va, vb, vm);
		}
		arena_reset(&a);
	}
	pthread_join(th, NULL);
	arena_free(&a);
	CHECK_MSG(!atomic_load(&WRITER_FAILED), "writer failed: %s", C.f.errmsg);
	CHECK_MSG(bad == 0, "%d of %d concurrent reads were inconsistent; last: %s (%d, %d)", bad, reads,
		  last_bad, last_bad_i, last_bad_a);
	CHECK(reads > 0);
	CHECK_EQ_STR(row_at("c", at(100000)), "a=1500 b='1500' m={'k': 1500} st=NULL l=NULL");
	ctx_close();
}

/* ---- read times -------------------------------------------------------- */

TEST(read_times_and_history_cutoff)
{
	KEY(h);
	std_table("rd-cutoff", 0);
	struct colval a1 = cv_int("a", 1), a2 = cv_int("a", 2);
	OK(docwrite_insert(&C.w, &h, 1, &a1, 1, DOCWRITE_NO_TTL));
	apply(at(1));
	OK(docwrite_update(&C.w, &h, 1, &a2, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	store_set_history_cutoff(C.f.s, at(2));

	struct row r;
	bool found = true;
	char err[DOCRAFT_ERRMSG_SIZE];
	const struct docnode *n;
	struct buf dk = BUF_INIT;
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	CHECK_OK(docwrite_dockey(&C.s, &h, 1, &dk, err));
	err[0] = 0;
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, at(1), &C.f.arena, &r, &found, err),
		     DOCRAFT_ETOOOLD);
	CHECK(!found);
	CHECK(strlen(err) > 0);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, at(2) - 1, &C.f.arena, &r, &found, err),
		     DOCRAFT_ETOOOLD);
	CHECK_EQ_INT(reader_get_doc(C.f.s, dk.data, dk.len, NULL, 0, at(1), 0, &C.f.arena, &n, err),
		     DOCRAFT_ETOOOLD);
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(1);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err),
		     DOCRAFT_ETOOOLD);
	CHECK_EQ_INT(nrows, 0);
	/* At the cutoff itself: readable, and the value of T1 is still there. */
	CHECK_EQ_STR(row_at("h", at(2)), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("h", at(3)), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	/* Invalid read times. */
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, 0, &C.f.arena, &r, &found, err), DOCRAFT_EINVAL);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, HT_INVALID, &C.f.arena, &r, &found, err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, HT_MAX, &C.f.arena, &r, &found, err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(reader_get_doc(C.f.s, dk.data, dk.len, NULL, 0, 0, 0, &C.f.arena, &n, err),
		     DOCRAFT_EINVAL);
	sp.read_ht = 0;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err),
		     DOCRAFT_EINVAL);
	/* With no cutoff, read time 0 is still invalid (not "before everything"). */
	store_set_history_cutoff(C.f.s, 0);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 1, 0, &C.f.arena, &r, &found, err), DOCRAFT_EINVAL);
	CHECK_EQ_STR(row_at("h", at(1)), "live a=1 b=NULL m=NULL st=NULL l=NULL");
	CHECK_EQ_STR(row_at("h", HT_INITIAL), "not found");
	CHECK_EQ_STR(row_at("h", HT_INVALID - 1), "live a=2 b=NULL m=NULL st=NULL l=NULL");
	/* A malformed DocKey for reader_get_doc. */
	static const uint8_t bad[] = {'S', 'x'};
	CHECK_EQ_INT(reader_get_doc(C.f.s, bad, sizeof bad, NULL, 0, at(3), 0, &C.f.arena, &n, err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(reader_get_doc(C.f.s, dk.data, 0, NULL, 0, at(3), 0, &C.f.arena, &n, err),
		     DOCRAFT_EINVAL);
	/* Wrong key for reader_get_row. */
	struct pv wrong = pv_int32(1);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &wrong, 1, at(3), &C.f.arena, &r, &found, err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(reader_get_row(C.f.s, &C.s, &h, 0, at(3), &C.f.arena, &r, &found, err),
		     DOCRAFT_EINVAL);
	buf_free(&dk);
	ctx_close();
}

/* ---- types ------------------------------------------------------------------ */

static const enum col_type ALL_TYPES[] = {CT_BOOL, CT_INT8,      CT_INT16, CT_INT32,
					  CT_INT64, CT_FLOAT,    CT_DOUBLE, CT_TEXT,
					  CT_BLOB, CT_TIMESTAMP, CT_UUID,  CT_DATE};
#define NTYPES (sizeof ALL_TYPES / sizeof ALL_TYPES[0])

/* Exact equality: same pv type; floats by canonical bits (NaN == NaN,
 * -0.0 != +0.0); strings by bytes. desc is ignored. */
static bool same_pv(const struct pv *a, const struct pv *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case PV_NULL: return true;
	case PV_BOOL: return a->v.b == b->v.b;
	case PV_INT32: return a->v.i32 == b->v.i32;
	case PV_UINT32: return a->v.u32 == b->v.u32;
	case PV_INT64:
	case PV_TIMESTAMP: return a->v.i64 == b->v.i64;
	case PV_UINT64: return a->v.u64 == b->v.u64;
	case PV_FLOAT: return pv_float_bits(a->v.f) == pv_float_bits(b->v.f);
	case PV_DOUBLE: return pv_double_bits(a->v.d) == pv_double_bits(b->v.d);
	case PV_STRING:
		return a->v.s.len == b->v.s.len &&
		       (a->v.s.len == 0 || memcmp(a->v.s.p, b->v.s.p, a->v.s.len) == 0);
	case PV_UUID: return memcmp(a->v.uuid, b->v.uuid, 16) == 0;
	default: return false;
	}
}

static const char *pv_text(const struct pv *v)
{
	static char out[4][256];
	static int i;
	struct buf b = BUF_INIT;
	i = (i + 1) % 4;
	pv_format(&b, v);
	snprintf(out[i], sizeof out[i], "%s", buf_cstr(&b));
	buf_free(&b);
	return out[i];
}

#define NVALS 6
static const uint8_t UUID_V1[16] = {0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
				    0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
static const uint8_t UUID_V1B[16] = {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x11, 0xd2,
				     0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
static const uint8_t UUID_V4[16] = {0xf4, 0x7a, 0xc1, 0x0b, 0x58, 0xcc, 0x43, 0x72,
				    0xa5, 0x67, 0x0e, 0x02, 0xb2, 0xc3, 0xd4, 0x79};
static const uint8_t UUID_0[16] = {0};
static const uint8_t UUID_FF[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x4f, 0xff,
				    0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t UUID_NUL[16] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00,
				     0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};

/* NVALS distinct values of each type, edge cases first. */
static struct pv type_value(enum col_type t, int i)
{
	switch (t) {
	case CT_BOOL: return pv_bool(i % 2);
	case CT_INT8: { static const int32_t v[] = {-128, 127, 0, -1, 1, 64}; return pv_int32(v[i]); }
	case CT_INT16: { static const int32_t v[] = {-32768, 32767, 0, -1, 255, 256}; return pv_int32(v[i]); }
	case CT_INT32: { static const int32_t v[] = {INT32_MIN, INT32_MAX, 0, -1, 1, 65536}; return pv_int32(v[i]); }
	case CT_INT64: { static const int64_t v[] = {INT64_MIN, INT64_MAX, 0, -1, 1, (int64_t)1 << 40}; return pv_int64(v[i]); }
	case CT_FLOAT: { const float v[] = {-INFINITY, INFINITY, -0.0f, 0.0f, NAN, -FLT_MIN}; return pv_float(v[i]); }
	case CT_DOUBLE: { const double v[] = {-DBL_MAX, DBL_MAX, -0.0, 0.0, NAN, DBL_MIN}; return pv_double(v[i]); }
	case CT_TEXT: {
		static const struct { const char *s; size_t n; } v[] = {
			{"", 0}, {"\xf4\x8f\xbf\xbf", 4}, {"a", 1}, {"a\0", 2}, {"h\xc3\xa9llo \xe2\x9c\x93", 11}, {"a\0\0b", 4}};
		return pv_strn(v[i].s, v[i].n);
	}
	case CT_BLOB: {
		static const struct { const char *s; size_t n; } v[] = {
			{"", 0}, {"\xff\xff\xff", 3}, {"\0", 1}, {"\0\xff\0\x01", 4}, {"\xfe\x00", 2}, {"\x01\x00\x00", 3}};
		return pv_strn(v[i].s, v[i].n);
	}
	case CT_TIMESTAMP: { static const int64_t v[] = {INT64_MIN, INT64_MAX, 0, -1, 1767225600000000, 1}; return pv_timestamp(v[i]); }
	case CT_UUID: {
		const uint8_t *v[] = {UUID_0, UUID_FF, UUID_V1, UUID_V4, UUID_V1B, UUID_NUL};
		return pv_uuid(v[i]);
	}
	case CT_DATE: { static const uint32_t v[] = {0, UINT32_MAX, 1u << 31, (1u << 31) - 1, 1, 20000}; return pv_uint32(v[i]); }
	default: return pv_null();
	}
}

/* Every type as a regular column: values round-trip through insert + read. */
TEST(types_roundtrip_values)
{
	ctx_open("rd-types", "types");
	col("h1", COL_HASH, CT_TEXT, false);
	col("h2", COL_HASH, CT_INT64, false);
	col("r1", COL_RANGE, CT_BLOB, true);
	for (size_t t = 0; t < NTYPES; t++) {
		char name[16];
		snprintf(name, sizeof name, "c%zu", t);
		col(name, COL_REGULAR, ALL_TYPES[t], false);
	}
	ctx_ready();
	for (int i = 0; i < NVALS; i++) {
		struct pv key[3] = {pv_strn("h\0x", 3), pv_int64(-i), type_value(CT_BLOB, i)};
		struct colval cols[NTYPES];
		char names[NTYPES][16];
		for (size_t t = 0; t < NTYPES; t++) {
			snprintf(names[t], sizeof names[t], "c%zu", t);
			cols[t] = colval_of(names[t], type_value(ALL_TYPES[t], (i + (int)t) % NVALS));
		}
		OK(docwrite_insert(&C.w, key, 3, cols, NTYPES, DOCWRITE_NO_TTL));
	}
	apply(at(1));
	CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
	for (int i = 0; i < NVALS; i++) {
		struct pv key[3] = {pv_strn("h\0x", 3), pv_int64(-i), type_value(CT_BLOB, i)};
		struct row r;
		bool found;
		CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, key, 3, at(1), &C.f.arena, &r, &found,
					    C.f.errmsg), C.f.errmsg);
		CHECK(found);
		for (size_t t = 0; t < NTYPES; t++) {
			struct pv want = type_value(ALL_TYPES[t], (i + (int)t) % NVALS);
			const struct docnode *n = row_column(&r, &C.s.cols[3 + t]);
			CHECK_MSG(n != NULL && n->kind == VAL_PRIMITIVE, "row %d type %s: missing", i,
				  col_type_name(ALL_TYPES[t]));
			CHECK_MSG(same_pv(&n->value, &want), "row %d type %s: got %s want %s", i,
				  col_type_name(ALL_TYPES[t]), pv_text(&n->value), pv_text(&want));
		}
	}
	/* A different composite hash key (same h1, other h2) is another row. */
	struct pv other[3] = {pv_strn("h\0x", 3), pv_int64(1), type_value(CT_BLOB, 0)};
	CHECK_EQ_STR(row_at_key(other, 3, at(1)), "not found");
	struct pv other2[3] = {pv_strn("h\0y", 3), pv_int64(0), type_value(CT_BLOB, 0)};
	CHECK_EQ_STR(row_at_key(other2, 3, at(1)), "not found");
	ctx_close();
}

/* Logical order of two values of one column type (ascending). */
static int logical_cmp(enum col_type t, const struct pv *a, const struct pv *b)
{
	switch (t) {
	case CT_BOOL: return (int)a->v.b - (int)b->v.b;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32: return a->v.i32 < b->v.i32 ? -1 : a->v.i32 > b->v.i32;
	case CT_INT64:
	case CT_TIMESTAMP: return a->v.i64 < b->v.i64 ? -1 : a->v.i64 > b->v.i64;
	case CT_DATE: return a->v.u32 < b->v.u32 ? -1 : a->v.u32 > b->v.u32;
	case CT_FLOAT:
	case CT_DOUBLE: {
		double x = t == CT_FLOAT ? a->v.f : a->v.d, y = t == CT_FLOAT ? b->v.f : b->v.d;
		/* NaN above +inf; -0.0 below +0.0. */
		if (isnan(x) || isnan(y))
			return isnan(x) - isnan(y);
		if (x == y)
			return (int)(signbit(y) != 0) - (int)(signbit(x) != 0);
		return x < y ? -1 : 1;
	}
	case CT_TEXT:
	case CT_BLOB: {
		size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
		int c = n ? memcmp(a->v.s.p, b->v.s.p, n) : 0;
		if (c != 0)
			return c;
		return a->v.s.len < b->v.s.len ? -1 : a->v.s.len > b->v.s.len;
	}
	case CT_UUID: return pv_compare(a, b); /* comparable form: see pv.h */
	default: return 0;
	}
}

/* Every type as a range column, ASC and DESC: scans return the keys decoded
 * exactly, in logical (or reversed) order; point reads find each row. */
TEST(types_roundtrip_keys)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int desc = 0; desc < 2; desc++) {
			enum col_type ty = ALL_TYPES[t];
			int nv = ty == CT_BOOL ? 2 : NVALS;
			int order[NVALS];
			ctx_open("rd-keys", "keys");
			col("h", COL_HASH, ty, false);
			col("r", COL_RANGE, ty, desc);
			col("v", COL_REGULAR, CT_INT32, false);
			ctx_ready();
			/* Insert in a scrambled order. */
			for (int j = 0; j < nv; j++) {
				int i = (j * 5 + 3) % nv;
				struct pv key[2] = {type_value(ty, 0), type_value(ty, i)};
				struct colval v = cv_int("v", i);
				OK(docwrite_insert(&C.w, key, 2, &v, 1, DOCWRITE_NO_TTL));
			}
			apply(at(1));
			for (int i = 0; i < nv; i++)
				order[i] = i;
			for (int i = 1; i < nv; i++) /* insertion sort by logical order */
				for (int j = i; j > 0; j--) {
					struct pv x = type_value(ty, order[j - 1]), y = type_value(ty, order[j]);
					int c = logical_cmp(ty, &x, &y);
					if (desc ? c < 0 : c > 0) {
						int tmp = order[j];
						order[j] = order[j - 1];
						order[j - 1] = tmp;
					}
				}
			for (int rev = 0; rev < 2; rev++) {
				struct scan_spec sp;
				struct row *rows;
				size_t nrows;
				struct pv hk = type_value(ty, 0);
				memset(&sp, 0, sizeof sp);
				sp.read_ht = at(1);
				sp.hash_key = &hk;
				sp.n_hash = 1;
				sp.reverse = rev;
				CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL,
							 C.f.errmsg), C.f.errmsg);
				CHECK_EQ_INT(nrows, nv);
				for (int i = 0; i < nv; i++) {
					int want = order[rev ? nv - 1 - i : i];
					struct pv wk = type_value(ty, want);
					const struct docnode *v = row_column_named(&rows[i], "v");
					CHECK_MSG(same_pv(&rows[i].key[0], &hk), "%s: hash key %s != %s",
						  col_type_name(ty), pv_text(&rows[i].key[0]), pv_text(&hk));
					CHECK_MSG(same_pv(&rows[i].key[1], &wk),
						  "%s %s rev=%d row %d: key %s want %s", col_type_name(ty),
						  desc ? "DESC" : "ASC", rev, i, pv_text(&rows[i].key[1]),
						  pv_text(&wk));
					CHECK(v != NULL && v->value.type == PV_INT32 && v->value.v.i32 == want);
				}
			}
			for (int i = 0; i < nv; i++) {
				struct pv key[2] = {type_value(ty, 0), type_value(ty, i)};
				char want[32];
				snprintf(want, sizeof want, "live v=%d", i);
				CHECK_EQ_STR(row_at_key(key, 2, at(1)), want);
			}
			ctx_close();
		}
	}
}

/* ---- validation ------------------------------------------------------------ */

struct snap {
	uint8_t *data;
	size_t len;
	uint32_t count;
};

static struct snap snap_take(void)
{
	struct snap s = {malloc(C.b.data.len + 1), C.b.data.len, C.b.count};
	CHECK(s.data != NULL);
	if (s.len)
		memcpy(s.data, C.b.data.data, s.len);
	return s;
}

/* rv must be want, errmsg must name what, and the batch must be unchanged. */
static void expect_err(int rv, int want, const char *what, const char *ctx)
{
	CHECK_MSG(rv == want, "%s: returned %d, want %d (%s)", ctx, rv, want, C.w.errmsg);
	CHECK_MSG(strstr(C.w.errmsg, what) != NULL, "%s: message '%s' does not name '%s'", ctx,
		  C.w.errmsg, what);
}

#define EXPECT_ERR(call, code, what)                                                  \
	do {                                                                          \
		struct snap s_ = snap_take();                                         \
		C.w.errmsg[0] = 0;                                                    \
		int rv_ = (call);                                                     \
		bool same_ = C.b.count == s_.count && C.b.data.len == s_.len &&       \
			     memcmp(C.b.data.data, s_.data, s_.len) == 0;              \
		free(s_.data);                                                        \
		CHECK_MSG(same_, "%s: batch changed (count %u, was %u)", #call, C.b.count, \
			  s_.count);                                                  \
		expect_err(rv_, code, what, #call);                                   \
	} while (0)

TEST(validation_errors)
{
	ctx_open("rd-valid", "v");
	col("k", COL_HASH, CT_TEXT, false);
	col("rk", COL_RANGE, CT_INT8, true);
	col("c_int", COL_REGULAR, CT_INT32, false);
	col("c_txt", COL_REGULAR, CT_TEXT, false);
	col("c_blob", COL_REGULAR, CT_BLOB, false);
	col("c_tiny", COL_REGULAR, CT_INT8, false);
	col("c_small", COL_REGULAR, CT_INT16, false);
	coll("c_map", CT_MAP, CT_TEXT, CT_INT32);
	coll("c_set", CT_SET, CT_INT32, 0);
	coll("c_list", CT_LIST, CT_TEXT, 0);
	ctx_ready();
	struct pv key[2] = {pv_str("k1"), pv_int32(5)};
	/* Something already in the batch, so "unchanged" means something. */
	struct colval good = cv_int("c_int", 1);
	OK(docwrite_insert(&C.w, key, 2, &good, 1, DOCWRITE_NO_TTL));
	CHECK(C.b.count == 2);

	struct colval unknown[2] = {cv_int("c_int", 1), cv_int("nosuch", 1)};
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, unknown, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "nosuch");
	EXPECT_ERR(docwrite_update(&C.w, key, 2, unknown, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "nosuch");
	EXPECT_ERR(docwrite_delete_column(&C.w, key, 2, "nosuch"), DOCRAFT_EINVAL, "nosuch");
	struct colval wrong[2] = {cv_str("c_txt", "ok"), cv_str("c_int", "text")};
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, wrong, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	EXPECT_ERR(docwrite_update(&C.w, key, 2, wrong, 2, 1000), DOCRAFT_EINVAL, "c_int");
	struct pv nullkey[2] = {pv_null(), pv_int32(5)};
	EXPECT_ERR(docwrite_insert(&C.w, nullkey, 2, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "'k'");
	struct pv nullrange[2] = {pv_str("k1"), pv_null()};
	EXPECT_ERR(docwrite_update(&C.w, nullrange, 2, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "rk");
	EXPECT_ERR(docwrite_delete_row(&C.w, nullrange, 2), DOCRAFT_EINVAL, "rk");
	struct pv wrongkey[2] = {pv_int32(1), pv_int32(5)};
	EXPECT_ERR(docwrite_delete_row(&C.w, wrongkey, 2), DOCRAFT_EINVAL, "'k'");
	struct pv tinykey[2] = {pv_str("k1"), pv_int32(128)};
	EXPECT_ERR(docwrite_insert(&C.w, tinykey, 2, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "rk");
	struct pv badutf_key[2] = {pv_strn("\xc3\x28", 2), pv_int32(5)};
	EXPECT_ERR(docwrite_insert(&C.w, badutf_key, 2, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "'k'");
	/* Not UTF-8: a bad continuation, an overlong form, a surrogate, a lone
	 * continuation byte, a truncated sequence, a code point above U+10FFFF. */
	static const struct { const char *s; size_t n; } bad[] = {
		{"\xc3\x28", 2}, {"\xc0\xaf", 2}, {"\xed\xa0\x80", 3}, {"ok\x80", 3},
		{"\xe2\x82", 2}, {"\xf4\x90\x80\x80", 4}, {"\xff", 1}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct colval t = colval_of("c_txt", pv_strn(bad[i].s, bad[i].n));
		EXPECT_ERR(docwrite_insert(&C.w, key, 2, &t, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_txt");
	}
	/* ... but a blob takes any bytes, and NUL is valid UTF-8. */
	struct colval blob = colval_of("c_blob", pv_strn("\xff\0\xc3", 3));
	struct colval nul = colval_of("c_txt", pv_strn("a\0b", 3));
	size_t before = C.b.count;
	OK(docwrite_update(&C.w, key, 2, &blob, 1, DOCWRITE_NO_TTL));
	OK(docwrite_update(&C.w, key, 2, &nul, 1, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, before + 2);
	struct colval tiny[2] = {cv_int("c_tiny", 127), cv_int("c_tiny", 0)};
	tiny[1] = cv_int("c_small", 32768);
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, tiny, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_small");
	struct colval tiny2 = cv_int("c_tiny", -129);
	EXPECT_ERR(docwrite_update(&C.w, key, 2, &tiny2, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_tiny");
	/* Oversized values: text, blob, map value, set element; exactly the
	 * limit is accepted. */
	size_t big = DOCWRITE_MAX_VALUE + 1;
	char *huge = malloc(big);
	CHECK(huge != NULL);
	memset(huge, 'x', big);
	struct colval bigt[2] = {cv_int("c_int", 3), colval_of("c_txt", pv_strn(huge, big))};
	struct colval bigb = colval_of("c_blob", pv_strn(huge, big));
	struct snap s0 = snap_take();
	int rv1 = docwrite_insert(&C.w, key, 2, bigt, 2, DOCWRITE_NO_TTL);
	bool same1 = C.b.count == s0.count && C.b.data.len == s0.len;
	char msg1[DOCRAFT_ERRMSG_SIZE];
	snprintf(msg1, sizeof msg1, "%s", C.w.errmsg);
	int rv2 = docwrite_update(&C.w, key, 2, &bigb, 1, DOCWRITE_NO_TTL);
	char msg2[DOCRAFT_ERRMSG_SIZE];
	snprintf(msg2, sizeof msg2, "%s", C.w.errmsg);
	struct colval exact = colval_of("c_blob", pv_strn(huge, DOCWRITE_MAX_VALUE));
	int rv3 = docwrite_update(&C.w, key, 2, &exact, 1, DOCWRITE_NO_TTL);
	free(huge);
	free(s0.data);
	CHECK_EQ_INT(rv1, DOCRAFT_ETOOBIG);
	CHECK(same1);
	CHECK_MSG(strstr(msg1, "c_txt") != NULL, "message '%s'", msg1);
	CHECK_EQ_INT(rv2, DOCRAFT_ETOOBIG);
	CHECK_MSG(strstr(msg2, "c_blob") != NULL, "message '%s'", msg2);
	CHECK_OK_MSG(rv3, C.w.errmsg);
	batch_reset(&C.b);
	OK(docwrite_insert(&C.w, key, 2, &good, 1, DOCWRITE_NO_TTL));
	/* Wrong number of key values. */
	struct pv key3[3] = {pv_str("k1"), pv_int32(5), pv_int32(6)};
	EXPECT_ERR(docwrite_insert(&C.w, key, 1, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "expected 2");
	EXPECT_ERR(docwrite_delete_row(&C.w, key3, 3), DOCRAFT_EINVAL, "expected 2");
	EXPECT_ERR(docwrite_update(&C.w, key3, 0, &good, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "expected 2");
	/* Collection operations on the wrong kind of column. */
	struct pv e1 = pv_int32(1), s1 = pv_str("s");
	EXPECT_ERR(docwrite_map_put(&C.w, key, 2, "c_int", &s1, &e1, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	EXPECT_ERR(docwrite_map_remove(&C.w, key, 2, "c_set", &s1, 1), DOCRAFT_EINVAL, "c_set");
	EXPECT_ERR(docwrite_set_add(&C.w, key, 2, "c_map", &e1, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_map");
	EXPECT_ERR(docwrite_set_remove(&C.w, key, 2, "c_txt", &e1, 1), DOCRAFT_EINVAL, "c_txt");
	EXPECT_ERR(docwrite_list_append(&C.w, key, 2, "c_set", &s1, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_set");
	EXPECT_ERR(docwrite_list_prepend(&C.w, key, 2, "c_int", &s1, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	struct colval notcoll = colval_elems("c_int", &e1, 1);
	EXPECT_ERR(docwrite_collection_replace(&C.w, key, 2, &notcoll, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, &notcoll, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	/* Collection elements of the wrong type / NULL. */
	struct pv two_keys[2] = {pv_str("a"), pv_int32(3)}, two_vals[2] = {pv_int32(1), pv_int32(2)};
	EXPECT_ERR(docwrite_map_put(&C.w, key, 2, "c_map", two_keys, two_vals, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_map");
	struct pv nullval[2] = {pv_int32(1), pv_null()};
	struct pv ok_keys[2] = {pv_str("a"), pv_str("b")};
	EXPECT_ERR(docwrite_map_put(&C.w, key, 2, "c_map", ok_keys, nullval, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_map");
	struct pv set_bad[2] = {pv_int32(1), pv_null()};
	EXPECT_ERR(docwrite_set_add(&C.w, key, 2, "c_set", set_bad, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_set");
	struct colval map_bad = colval_map("c_map", ok_keys, set_bad, 2);
	EXPECT_ERR(docwrite_collection_replace(&C.w, key, 2, &map_bad, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_map");
	struct pv utf_bad = pv_strn("\xc3\x28", 2);
	EXPECT_ERR(docwrite_list_append(&C.w, key, 2, "c_list", &utf_bad, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_list");
	/* Key columns cannot be set; a column given twice; bad TTLs. */
	struct colval keycol = cv_int("rk", 1);
	EXPECT_ERR(docwrite_update(&C.w, key, 2, &keycol, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "rk");
	struct colval twice[2] = {cv_int("c_int", 1), cv_int("c_int", 2)};
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, twice, 2, DOCWRITE_NO_TTL), DOCRAFT_EINVAL, "c_int");
	EXPECT_ERR(docwrite_insert(&C.w, key, 2, &good, 1, -5), DOCRAFT_EINVAL, "TTL");
	EXPECT_ERR(docwrite_set_add(&C.w, key, 2, "c_set", &e1, 1, -2), DOCRAFT_EINVAL, "TTL");
	/* List operations need the caller's counter. */
	struct docwrite nocounter;
	docwrite_init(&nocounter, &C.s, &C.b, NULL);
	struct snap s1n = snap_take();
	int rvl = docwrite_list_append(&nocounter, key, 2, "c_list", &s1, 1, DOCWRITE_NO_TTL);
	bool samel = C.b.count == s1n.count && C.b.data.len == s1n.len;
	free(s1n.data);
	docwrite_free(&nocounter);
	CHECK_EQ_INT(rvl, DOCRAFT_EINVAL);
	CHECK(samel);

	/* Everything valid still applies and reads back. */
	apply(at(1));
	CHECK_EQ_STR(row_at_key(key, 2, at(1)),
		     "live c_int=1 c_txt=NULL c_blob=NULL c_tiny=NULL c_small=NULL c_map=NULL "
		     "c_set=NULL c_list=NULL");
	ctx_close();
}

/* Keys too large for a DocDB key: a map key / set member after a valid
 * element, and a primary key. Runs the three operations on a fresh table;
 * returns their codes, whether the batch stayed unchanged, and messages. */
static void oversized_keys(int rv[3], bool same[3], char msg[3][DOCRAFT_ERRMSG_SIZE])
{
	ctx_open("rd-bigkey", "v");
	col("k", COL_HASH, CT_TEXT, false);
	coll("c_map", CT_MAP, CT_TEXT, CT_INT32);
	coll("c_set", CT_SET, CT_TEXT, 0);
	ctx_ready();
	struct pv key = pv_str("k1");
	OK(docwrite_insert(&C.w, &key, 1, NULL, 0, DOCWRITE_NO_TTL));
	size_t kbig = BATCH_MAX_KEY + 10;
	char *kbytes = malloc(kbig);
	CHECK(kbytes != NULL);
	memset(kbytes, 'k', kbig);
	struct pv bigkeys[2] = {pv_str("fine"), pv_strn(kbytes, kbig)};
	struct pv vals[2] = {pv_int32(1), pv_int32(2)};
	struct pv bigpk = pv_strn(kbytes, BATCH_MAX_KEY / 2 + 1);
	for (int i = 0; i < 3; i++) {
		struct snap s0 = snap_take();
		C.w.errmsg[0] = 0;
		if (i == 0)
			rv[i] = docwrite_map_put(&C.w, &key, 1, "c_map", bigkeys, vals, 2, DOCWRITE_NO_TTL);
		else if (i == 1)
			rv[i] = docwrite_set_add(&C.w, &key, 1, "c_set", bigkeys, 2, DOCWRITE_NO_TTL);
		else
			rv[i] = docwrite_insert(&C.w, &bigpk, 1, NULL, 0, DOCWRITE_NO_TTL);
		same[i] = C.b.count == s0.count && C.b.data.len == s0.len &&
			  memcmp(C.b.data.data, s0.data, s0.len) == 0;
		snprintf(msg[i], DOCRAFT_ERRMSG_SIZE, "%s", C.w.errmsg);
		free(s0.data);
	}
	free(kbytes);
	apply(at(1));
	CHECK_EQ_STR(row_at_key(&key, 1, at(1)), "live c_map=NULL c_set=NULL");
	ctx_close();
}

/* ... fail with ETOOBIG and are rolled back (nothing of them applied) ... */
TEST(oversized_keys_roll_back)
{
	int rv[3];
	bool same[3];
	char msg[3][DOCRAFT_ERRMSG_SIZE];
	oversized_keys(rv, same, msg);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(rv[i], DOCRAFT_ETOOBIG);
		CHECK_MSG(same[i], "operation %d left pairs in the batch", i);
	}
}

/* ... and, like every other validation error, should name the column. */
TEST(oversized_keys_name_the_column)
{
	int rv[3];
	bool same[3];
	char msg[3][DOCRAFT_ERRMSG_SIZE];
	oversized_keys(rv, same, msg);
	CHECK_MSG(strstr(msg[0], "c_map") != NULL, "oversized map key: message '%s' does not name the column",
		  msg[0]);
	CHECK_MSG(strstr(msg[1], "c_set") != NULL, "oversized set member: message '%s' does not name the column",
		  msg[1]);
	CHECK_MSG(strstr(msg[2], "'k'") != NULL, "oversized primary key: message '%s' does not name the column",
		  msg[2]);
}

/* ---- randomized model test ------------------------------------------------- */

/* Table: h text (hash), r int (range, ASC or DESC), a int, t text,
 * m map<text, int>, st set<int>. */
enum { NH = 3, NR = 5, NROWS = NH * NR };
enum { P_ROW, P_LIVE, P_A, P_T, P_M, P_ST, NPATH }; /* non-element paths */
#define NMK 5
#define NSE 6
#define NTV 5

static const struct {
	const char *s;
	size_t n;
} HKEYS[NH] = {{"", 0}, {"a\0b", 3}, {"ab", 2}},
  MKEYS[NMK] = {{"", 0}, {"a", 1}, {"a\0", 2}, {"ab", 2}, {"b", 1}},
  TVALS[NTV] = {{"", 0}, {"x", 1}, {"x\0y", 3}, {"\xc3\xa9", 2}, {"xx", 2}};
static const int32_t RKEYS[NR] = {INT32_MIN, -1, 0, 1, INT32_MAX};
static const int32_t SELEMS[NSE] = {INT32_MIN, -7, -1, 0, 1, INT32_MAX};

struct mcell {
	uint64_t ht;
	uint32_t wid;
	uint8_t path;  /* P_*; with elem: P_M / P_ST */
	int8_t elem;   /* -1, or the index into MKEYS / SELEMS */
	bool tomb;
	int32_t val;   /* a, map value; t: index into TVALS */
	int64_t ttl;   /* DOCWRITE_NO_TTL, 0, or ms */
};

static struct model {
	struct mcell *cells[NROWS];
	size_t n[NROWS], cap[NROWS];
	int64_t default_ttl;
	bool desc;
} M;

static void model_free(void)
{
	for (int i = 0; i < NROWS; i++) {
		free(M.cells[i]);
		M.cells[i] = NULL;
		M.n[i] = M.cap[i] = 0;
	}
}

static void model_add(int row, uint64_t ht, uint32_t wid, int path, int elem, bool tomb,
		      int32_t val, int64_t ttl)
{
	if (M.n[row] == M.cap[row]) {
		M.cap[row] = M.cap[row] ? 2 * M.cap[row] : 64;
		M.cells[row] = realloc(M.cells[row], M.cap[row] * sizeof *M.cells[row]);
		CHECK(M.cells[row] != NULL);
	}
	struct mcell c = {ht, wid, (uint8_t)path, (int8_t)elem, tomb, val, ttl};
	M.cells[row][M.n[row]++] = c;
}

/* What one row is at a read time. */
struct view {
	bool found, live;
	bool has_a, has_t;
	int32_t a;
	int t;
	bool m[NMK];
	int32_t mv[NMK];
	bool st[NSE];
};

static bool newer(const struct mcell *c, const struct mcell *than)
{
	return than == NULL || c->ht > than->ht || (c->ht == than->ht && c->wid > than->wid);
}

static bool cell_expired(const struct mcell *c, uint64_t read_ht)
{
	int64_t ttl = c->ttl;
	if (ttl == DOCWRITE_NO_TTL)
		ttl = M.default_ttl;
	if (ttl <= 0)
		return false;
	return ht_physical(read_ht) - ht_physical(c->ht) > (uint64_t)ttl * 1000;
}

/* A cell is visible when it is the newest of its path at read_ht, newer than
 * every ancestor's newest entry, not a tombstone and not expired. */
static bool visible(const struct mcell *c, const struct mcell *over, uint64_t read_ht)
{
	return c != NULL && newer(c, over) && !c->tomb && !cell_expired(c, read_ht);
}

static struct view model_read(int row, uint64_t read_ht)
{
	const struct mcell *top[NPATH] = {0}, *mel[NMK] = {0}, *sel[NSE] = {0};
	struct view v;
	memset(&v, 0, sizeof v);
	for (size_t i = 0; i < M.n[row]; i++) {
		const struct mcell *c = &M.cells[row][i];
		const struct mcell **slot;
		if (c->ht > read_ht)
			continue;
		if (c->elem < 0)
			slot = &top[c->path];
		else if (c->path == P_M)
			slot = &mel[c->elem];
		else
			slot = &sel[c->elem];
		if (newer(c, *slot))
			*slot = c;
	}
	const struct mcell *rt = top[P_ROW];
	v.live = visible(top[P_LIVE], rt, read_ht);
	if ((v.has_a = visible(top[P_A], rt, read_ht)))
		v.a = top[P_A]->val;
	if ((v.has_t = visible(top[P_T], rt, read_ht)))
		v.t = top[P_T]->val;
	const struct mcell *mo = top[P_M] != NULL && newer(top[P_M], rt) ? top[P_M] : rt;
	const struct mcell *so = top[P_ST] != NULL && newer(top[P_ST], rt) ? top[P_ST] : rt;
	for (int i = 0; i < NMK; i++)
		if ((v.m[i] = visible(mel[i], mo, read_ht)))
			v.mv[i] = mel[i]->val;
	for (int i = 0; i < NSE; i++)
		v.st[i] = visible(sel[i], so, read_ht);
	v.found = v.live || v.has_a || v.has_t;
	for (int i = 0; i < NMK; i++)
		v.found |= v.m[i];
	for (int i = 0; i < NSE; i++)
		v.found |= v.st[i];
	return v;
}

static void view_format(struct buf *b, const struct view *v)
{
	if (!v->found) {
		buf_printf(b, "not found");
		return;
	}
	buf_printf(b, "%s", v->live ? "live " : "");
	if (v->has_a)
		buf_printf(b, "a=%d", v->a);
	else
		buf_printf(b, "a=NULL");
	if (v->has_t) {
		struct pv t = pv_strn(TVALS[v->t].s, TVALS[v->t].n);
		buf_printf(b, " t=");
		pv_format(b, &t);
	} else {
		buf_printf(b, " t=NULL");
	}
	buf_printf(b, " m={");
	for (int i = 0, first = 1; i < NMK; i++)
		if (v->m[i]) {
			struct pv k = pv_strn(MKEYS[i].s, MKEYS[i].n);
			buf_printf(b, "%s", first ? "" : ", ");
			pv_format(b, &k);
			buf_printf(b, ": %d", v->mv[i]);
			first = 0;
		}
	buf_printf(b, "} st={");
	for (int i = 0, first = 1; i < NSE; i++)
		if (v->st[i]) {
			buf_printf(b, "%s%d", first ? "" : ", ", SELEMS[i]);
			first = 0;
		}
	buf_printf(b, "}");
}

static int find_str(const struct pv *p, int which)
{
	int n = which == 0 ? NMK : NTV;
	if (p->type != PV_STRING)
		return -1;
	for (int i = 0; i < n; i++) {
		size_t len = which == 0 ? MKEYS[i].n : TVALS[i].n;
		const char *s = which == 0 ? MKEYS[i].s : TVALS[i].s;
		if (p->v.s.len == len && (len == 0 || memcmp(p->v.s.p, s, len) == 0))
			return i;
	}
	return -1;
}

/* Converts a row read from the store into a view, checking its shape: only
 * known children, right kinds and types, collection children in key order. */
static struct view view_of_row(const struct row *r, bool found, uint64_t seed)
{
	struct view v;
	memset(&v, 0, sizeof v);
	v.found = found;
	if (!found)
		return v;
	for (const struct docnode *c = r->root->children; c != NULL; c = c->next) {
		if (c->key.type == PV_SYSTEM_COLUMN_ID && c->key.v.i64 == 0) {
			CHECK_MSG(c->kind == VAL_PRIMITIVE && c->value.type == PV_NULL,
				  "seed %" PRIu64 ": liveness is not NULL", seed);
			v.live = true;
			continue;
		}
		CHECK_MSG(c->key.type == PV_COLUMN_ID, "seed %" PRIu64 ": unexpected child type %u", seed,
			  c->key.type);
		const struct column *col_ = schema_find_id(&C.s, (int32_t)c->key.v.i64);
		CHECK_MSG(col_ != NULL && col_->kind == COL_REGULAR, "seed %" PRIu64 ": unknown column %lld",
			  seed, (long long)c->key.v.i64);
		if (strcmp(col_->name, "a") == 0) {
			CHECK_MSG(c->kind == VAL_PRIMITIVE && c->value.type == PV_INT32,
				  "seed %" PRIu64 ": a is not an int", seed);
			v.has_a = true;
			v.a = c->value.v.i32;
		} else if (strcmp(col_->name, "t") == 0) {
			CHECK_MSG(c->kind == VAL_PRIMITIVE, "seed %" PRIu64 ": t not primitive", seed);
			v.t = find_str(&c->value, 1);
			CHECK_MSG(v.t >= 0, "seed %" PRIu64 ": t has an unknown value %s", seed, pv_text(&c->value));
			v.has_t = true;
		} else if (strcmp(col_->name, "m") == 0) {
			int last = -1;
			CHECK_MSG(c->kind != VAL_PRIMITIVE && c->n_children > 0,
				  "seed %" PRIu64 ": m is not a non-empty map", seed);
			for (const struct docnode *e = c->children; e != NULL; e = e->next) {
				int i = find_str(&e->key, 0);
				CHECK_MSG(i > last, "seed %" PRIu64 ": map key %s unknown or out of order", seed,
					  pv_text(&e->key));
				CHECK_MSG(e->kind == VAL_PRIMITIVE && e->value.type == PV_INT32,
					  "seed %" PRIu64 ": map value type", seed);
				v.m[i] = true;
				v.mv[i] = e->value.v.i32;
				last = i;
			}
		} else {
			int last = -1;
			CHECK_MSG(strcmp(col_->name, "st") == 0 && c->kind != VAL_PRIMITIVE &&
					  c->n_children > 0,
				  "seed %" PRIu64 ": st is not a non-empty set", seed);
			for (const struct docnode *e = c->children; e != NULL; e = e->next) {
				int i = 0;
				while (i < NSE && !(e->key.type == PV_INT32 && e->key.v.i32 == SELEMS[i]))
					i++;
				CHECK_MSG(i < NSE && i > last, "seed %" PRIu64 ": set member %s unknown or out of order",
					  seed, pv_text(&e->key));
				CHECK_MSG(e->kind == VAL_PRIMITIVE && e->value.type == PV_NULL,
					  "seed %" PRIu64 ": set member value", seed);
				v.st[i] = true;
				last = i;
			}
		}
	}
	return v;
}

static struct pv row_key_pv(int row, int which)
{
	return which == 0 ? pv_strn(HKEYS[row / NR].s, HKEYS[row / NR].n) : pv_int32(RKEYS[row % NR]);
}

/* The log of one op, for failure messages. */
static char OPLOG[64][160];
static unsigned NOPLOG;

static void oplog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void oplog(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(OPLOG[NOPLOG % 64], sizeof OPLOG[0], fmt, ap);
	va_end(ap);
	NOPLOG++;
}

static void oplog_dump_row(int row)
{
	char tag[32];
	snprintf(tag, sizeof tag, "row %d:", row);
	for (unsigned i = NOPLOG > 64 ? NOPLOG - 64 : 0; i < NOPLOG; i++)
		if (strstr(OPLOG[i % 64], tag) != NULL)
			test_note("  %s", OPLOG[i % 64]);
}

/* The stored pairs of one model row, with write ids. */
static const char *row_dump(int row)
{
	static struct buf out;
	struct pv key[2] = {row_key_pv(row, 0), row_key_pv(row, 1)};
	struct buf dk = BUF_INIT, hi = BUF_INIT;
	struct dump_opts o = {&C.s, NULL, NULL, NULL, false, true};
	CHECK_OK_MSG(docwrite_dockey(&C.s, key, 2, &dk, C.f.errmsg), C.f.errmsg);
	buf_append(&hi, dk.data, dk.len);
	buf_push(&hi, KT_MAX_BYTE);
	struct store_iter *it = store_iter_new(C.f.s, dk.data, dk.len, hi.data, hi.len);
	buf_free(&out);
	for (store_iter_seek(it, dk.data, dk.len); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		dump_pair(k, kl, v, vl, &o, &out);
	}
	store_iter_free(it);
	buf_free(&dk);
	buf_free(&hi);
	return buf_cstr(&out);
}

static void check_row(int row, uint64_t read_ht, uint64_t seed)
{
	struct pv key[2] = {row_key_pv(row, 0), row_key_pv(row, 1)};
	struct row r;
	bool found;
	struct buf want = BUF_INIT, got = BUF_INIT;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, key, 2, read_ht, &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	struct view mv = model_read(row, read_ht), rv = view_of_row(&r, found, seed);
	view_format(&want, &mv);
	view_format(&got, &rv);
	if (strcmp(buf_cstr(&want), buf_cstr(&got)) != 0) {
		oplog_dump_row(row);
		test_fail(__FILE__, __LINE__,
			  "seed %" PRIu64 " (TEST_SEED=%" PRIu64 "): row %d (h=%d r=%d) at ht %" PRIu64
			  " (+%.6f s):\n  got  %s\n  want %s\n%s",
			  seed, seed, row, row / NR, RKEYS[row % NR], read_ht,
			  (double)(ht_physical(read_ht) - FX_BASE_US) / 1e6, buf_cstr(&got),
			  buf_cstr(&want), row_dump(row));
	}
	buf_free(&want);
	buf_free(&got);
}

/* Storage order of the model rows: the DocKey bytes. */
static uint8_t DOCKEYS[NROWS][64];
static size_t DOCKEY_LEN[NROWS];
static int STORAGE_ORDER[NROWS];

static void compute_storage_order(void)
{
	for (int row = 0; row < NROWS; row++) {
		struct pv key[2] = {row_key_pv(row, 0), row_key_pv(row, 1)};
		struct buf b = BUF_INIT;
		CHECK_OK_MSG(docwrite_dockey(&C.s, key, 2, &b, C.f.errmsg), C.f.errmsg);
		CHECK(b.len <= sizeof DOCKEYS[0]);
		memcpy(DOCKEYS[row], b.data, b.len);
		DOCKEY_LEN[row] = b.len;
		buf_free(&b);
		STORAGE_ORDER[row] = row;
	}
	for (int i = 1; i < NROWS; i++)
		for (int j = i; j > 0; j--) {
			int x = STORAGE_ORDER[j - 1], y = STORAGE_ORDER[j];
			size_t n = DOCKEY_LEN[x] < DOCKEY_LEN[y] ? DOCKEY_LEN[x] : DOCKEY_LEN[y];
			int c = memcmp(DOCKEYS[x], DOCKEYS[y], n);
			if (c > 0 || (c == 0 && DOCKEY_LEN[x] > DOCKEY_LEN[y])) {
				STORAGE_ORDER[j - 1] = y;
				STORAGE_ORDER[j] = x;
			}
		}
}

/* Which model row a scanned row is, from its decoded key. */
static int row_of_key(const struct row *r)
{
	for (int row = 0; row < NROWS; row++) {
		struct pv h = row_key_pv(row, 0), rk = row_key_pv(row, 1);
		if (same_pv(&r->key[0], &h) && same_pv(&r->key[1], &rk))
			return row;
	}
	return -1;
}

/* Scans (whole store, or one hash key with optional bounds on r), paged
 * with a random limit, forward or reverse, against the model. */
static void check_scan(uint64_t read_ht, uint64_t *rng, uint64_t seed)
{
	int h = (int)(test_rand(rng) % (NH + 1)) - 1; /* -1: whole store */
	bool reverse = test_rand(rng) % 2;
	size_t limit = test_rand(rng) % 3 == 0 ? 0 : 1 + test_rand(rng) % 6;
	struct pv hk, lo, hi;
	struct scan_spec sp;
	int expect[NROWS], nexp = 0;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = read_ht;
	sp.reverse = reverse;
	sp.limit = limit;
	int lo_i = -1, hi_i = -1;
	if (h >= 0) {
		hk = row_key_pv(h * NR, 0);
		sp.hash_key = &hk;
		sp.n_hash = 1;
		if (test_rand(rng) % 2) {
			lo_i = (int)(test_rand(rng) % NR);
			lo = pv_int32(RKEYS[lo_i]);
			sp.lower = &lo;
			sp.lower_incl = test_rand(rng) % 2;
		}
		if (test_rand(rng) % 2) {
			hi_i = (int)(test_rand(rng) % NR);
			hi = pv_int32(RKEYS[hi_i]);
			sp.upper = &hi;
			sp.upper_incl = test_rand(rng) % 2;
		}
	}
	/* Expected rows, storage order. */
	for (int i = 0; i < NROWS; i++) {
		int row = STORAGE_ORDER[i], ri = row % NR;
		if (h >= 0 && row / NR != h)
			continue;
		if (lo_i >= 0 && (sp.lower_incl ? ri < lo_i : ri <= lo_i))
			continue;
		if (hi_i >= 0 && (sp.upper_incl ? ri > hi_i : ri >= hi_i))
			continue;
		if (model_read(row, read_ht).found)
			expect[nexp++] = row;
	}
	if (reverse)
		for (int i = 0; i < nexp / 2; i++) {
			int tmp = expect[i];
			expect[i] = expect[nexp - 1 - i];
			expect[nexp - 1 - i] = tmp;
		}
	struct buf state = BUF_INIT, next = BUF_INIT;
	int got = 0, pages = 0;
	for (;;) {
		struct row *rows;
		size_t nrows;
		buf_reset(&next);
		sp.paging = state.len ? state.data : NULL;
		sp.paging_len = state.len;
		CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &next, C.f.errmsg),
			     C.f.errmsg);
		CHECK_MSG(limit == 0 || nrows <= limit, "seed %" PRIu64 ": page of %zu rows, limit %zu", seed,
			  nrows, limit);
		for (size_t i = 0; i < nrows; i++) {
			int row = row_of_key(&rows[i]);
			CHECK_MSG(got < nexp && row == expect[got],
				  "seed %" PRIu64 " (TEST_SEED=%" PRIu64 "): scan h=%d rev=%d limit=%zu lo=%d%s "
				  "hi=%d%s at %" PRIu64 ": row %zu of page %d is model row %d, want %d "
				  "(of %d)",
				  seed, seed, h, reverse, limit, lo_i, sp.lower_incl ? "i" : "", hi_i,
				  sp.upper_incl ? "i" : "", read_ht, i, pages, row,
				  got < nexp ? expect[got] : -1, nexp);
			struct view mv = model_read(row, read_ht), rv = view_of_row(&rows[i], true, seed);
			struct buf a = BUF_INIT, b = BUF_INIT;
			view_format(&a, &mv);
			view_format(&b, &rv);
			CHECK_MSG(strcmp(buf_cstr(&a), buf_cstr(&b)) == 0,
				  "seed %" PRIu64 ": scanned row %d:\n  got  %s\n  want %s", seed, row,
				  buf_cstr(&b), buf_cstr(&a));
			buf_free(&a);
			buf_free(&b);
			got++;
		}
		pages++;
		CHECK_MSG(pages <= NROWS + 2, "seed %" PRIu64 ": paging does not end", seed);
		if (next.len == 0)
			break;
		CHECK_MSG(limit != 0 && nrows == limit, "seed %" PRIu64 ": paging state after a short page",
			  seed);
		buf_reset(&state);
		buf_append(&state, next.data, next.len);
	}
	CHECK_MSG(got == nexp, "seed %" PRIu64 " (TEST_SEED=%" PRIu64 "): scan h=%d rev=%d limit=%zu at %"
		  PRIu64 ": %d rows, want %d", seed, seed, h, reverse, limit, read_ht, got, nexp);
	buf_free(&state);
	buf_free(&next);
}

static int64_t rand_ttl(uint64_t *rng)
{
	uint64_t x = test_rand(rng) % 10;
	if (x < 5)
		return DOCWRITE_NO_TTL;
	if (x < 6)
		return 0;
	if (x < 7)
		return 1 + (int64_t)(test_rand(rng) % 5);
	return 1 + (int64_t)(test_rand(rng) % 15000);
}

/* One random operation appended to the batch (and the model, with write ids
 * from the batch count). */
static void random_op(uint64_t *rng, uint64_t ht)
{
	int row = (int)(test_rand(rng) % NROWS);
	struct pv key[2] = {row_key_pv(row, 0), row_key_pv(row, 1)};
	uint32_t wid = C.b.count;
	int64_t ttl = rand_ttl(rng);
	int op = (int)(test_rand(rng) % 100);
	struct pv mk[4], mv[4], se[4];
	int mi[4], si[4];
	size_t n = test_rand(rng) % 4; /* elements, may be 0 */
	for (size_t i = 0; i < n; i++) {
		mi[i] = (int)(test_rand(rng) % NMK);
		mk[i] = pv_strn(MKEYS[mi[i]].s, MKEYS[mi[i]].n);
		mv[i] = pv_int32((int32_t)(test_rand(rng) % 100));
		si[i] = (int)(test_rand(rng) % NSE);
		se[i] = pv_int32(SELEMS[si[i]]);
	}
	if (op < 22) { /* INSERT */
		struct colval cols[4];
		size_t nc = 0;
		int32_t a = (int32_t)(test_rand(rng) % 50) - 25;
		int tv = (int)(test_rand(rng) % (NTV + 1)); /* NTV: NULL */
		bool wa = test_rand(rng) % 2, wt = test_rand(rng) % 2, wm = test_rand(rng) % 3 == 0,
		     ws = test_rand(rng) % 3 == 0;
		if (wa)
			cols[nc++] = test_rand(rng) % 8 ? cv_int("a", a) : cv_null("a");
		if (wt)
			cols[nc++] = tv < NTV ? colval_of("t", pv_strn(TVALS[tv].s, TVALS[tv].n))
					      : cv_null("t");
		if (wm)
			cols[nc++] = colval_map("m", mk, mv, n);
		if (ws)
			cols[nc++] = colval_elems("st", se, n);
		OK(docwrite_insert(&C.w, key, 2, cols, nc, ttl));
		oplog("ht %" PRIu64 " row %d: insert ttl %lld (%zu cols)", ht, row, (long long)ttl, nc);
		/* Packed (every packable column given): the liveness and a, t are
		 * one pair, so they share its write id. */
		uint32_t packed_wid = wid;
		bool packed = C.s.packed && wa && wt;
		model_add(row, ht, wid++, P_LIVE, -1, false, 0, ttl);
		for (size_t c = 0; c < nc; c++) {
			const char *name = cols[c].name;
			if (strcmp(name, "a") == 0 || strcmp(name, "t") == 0) {
				int path = name[0] == 'a' ? P_A : P_T;
				bool null = cols[c].value.type == PV_NULL;
				model_add(row, ht, packed ? packed_wid : wid++, path, -1, null,
					  path == P_A ? cols[c].value.v.i32 : tv, null ? DOCWRITE_NO_TTL : ttl);
			} else {
				for (size_t i = 0; i < n; i++)
					model_add(row, ht, wid++, name[0] == 'm' ? P_M : P_ST,
						  name[0] == 'm' ? mi[i] : si[i], false, mv[i].v.i32, ttl);
			}
		}
	} else if (op < 40) { /* UPDATE */
		struct colval cols[4];
		size_t nc = 0;
		int32_t a = (int32_t)(test_rand(rng) % 50) - 25;
		int tv = (int)(test_rand(rng) % (NTV + 1));
		int which = 1 + (int)(test_rand(rng) % 15); /* non-empty subset of a, t, m, st */
		if (which & 1)
			cols[nc++] = test_rand(rng) % 8 ? cv_int("a", a) : cv_null("a");
		if (which & 2)
			cols[nc++] = tv < NTV ? colval_of("t", pv_strn(TVALS[tv].s, TVALS[tv].n))
					      : cv_null("t");
		if (which & 4)
			cols[nc++] = colval_map("m", mk, mv, n);
		if (which & 8)
			cols[nc++] = colval_elems("st", se, n);
		OK(docwrite_update(&C.w, key, 2, cols, nc, ttl));
		oplog("ht %" PRIu64 " row %d: update ttl %lld (cols %d)", ht, row, (long long)ttl, which);
		for (size_t c = 0; c < nc; c++) {
			const char *name = cols[c].name;
			if (strcmp(name, "a") == 0 || strcmp(name, "t") == 0) {
				int path = name[0] == 'a' ? P_A : P_T;
				bool null = cols[c].value.type == PV_NULL;
				model_add(row, ht, wid++, path, -1, null, path == P_A ? cols[c].value.v.i32 : tv,
					  null ? DOCWRITE_NO_TTL : ttl);
			} else {
				int path = name[0] == 'm' ? P_M : P_ST;
				model_add(row, ht, wid++, path, -1, true, 0, DOCWRITE_NO_TTL);
				for (size_t i = 0; i < n; i++)
					model_add(row, ht, wid++, path, path == P_M ? mi[i] : si[i], false,
						  mv[i].v.i32, ttl);
			}
		}
	} else if (op < 48) { /* DELETE column */
		static const char *names[4] = {"a", "t", "m", "st"};
		static const int paths[4] = {P_A, P_T, P_M, P_ST};
		int c = (int)(test_rand(rng) % 4);
		OK(docwrite_delete_column(&C.w, key, 2, names[c]));
		oplog("ht %" PRIu64 " row %d: delete column %s", ht, row, names[c]);
		model_add(row, ht, wid++, paths[c], -1, true, 0, DOCWRITE_NO_TTL);
	} else if (op < 55) { /* DELETE row */
		OK(docwrite_delete_row(&C.w, key, 2));
		oplog("ht %" PRIu64 " row %d: delete row", ht, row);
		model_add(row, ht, wid++, P_ROW, -1, true, 0, DOCWRITE_NO_TTL);
	} else if (op < 67) { /* map put */
		OK(docwrite_map_put(&C.w, key, 2, "m", mk, mv, n, ttl));
		oplog("ht %" PRIu64 " row %d: map put %zu ttl %lld", ht, row, n, (long long)ttl);
		for (size_t i = 0; i < n; i++)
			model_add(row, ht, wid++, P_M, mi[i], false, mv[i].v.i32, ttl);
	} else if (op < 74) { /* map remove */
		OK(docwrite_map_remove(&C.w, key, 2, "m", mk, n));
		oplog("ht %" PRIu64 " row %d: map remove %zu", ht, row, n);
		for (size_t i = 0; i < n; i++)
			model_add(row, ht, wid++, P_M, mi[i], true, 0, DOCWRITE_NO_TTL);
	} else if (op < 84) { /* set add */
		OK(docwrite_set_add(&C.w, key, 2, "st", se, n, ttl));
		oplog("ht %" PRIu64 " row %d: set add %zu ttl %lld", ht, row, n, (long long)ttl);
		for (size_t i = 0; i < n; i++)
			model_add(row, ht, wid++, P_ST, si[i], false, 0, ttl);
	} else if (op < 90) { /* set remove */
		OK(docwrite_set_remove(&C.w, key, 2, "st", se, n));
		oplog("ht %" PRIu64 " row %d: set remove %zu", ht, row, n);
		for (size_t i = 0; i < n; i++)
			model_add(row, ht, wid++, P_ST, si[i], true, 0, DOCWRITE_NO_TTL);
	} else { /* collection replace */
		bool map = test_rand(rng) % 2;
		struct colval cv = map ? colval_map("m", mk, mv, n) : colval_elems("st", se, n);
		int path = map ? P_M : P_ST;
		OK(docwrite_collection_replace(&C.w, key, 2, &cv, ttl));
		oplog("ht %" PRIu64 " row %d: replace %s with %zu ttl %lld", ht, row, map ? "m" : "st", n,
		      (long long)ttl);
		model_add(row, ht, wid++, path, -1, true, 0, DOCWRITE_NO_TTL);
		for (size_t i = 0; i < n; i++)
			model_add(row, ht, wid++, path, map ? mi[i] : si[i], false, mv[i].v.i32, ttl);
	}
	CHECK_MSG(C.b.count == wid, "model and batch disagree on the pairs of one op: %u vs %u",
		  C.b.count, wid);
}

static void model_run(uint64_t seed, bool desc, int64_t default_ttl, int nops)
{
	uint64_t rng = seed ^ (desc ? UINT64_C(0x5bd1e995) : 0);
	static uint64_t hts[16384];
	size_t nhts = 0;
	ctx_open("rd-model", "model");
	col("h", COL_HASH, CT_TEXT, false);
	col("r", COL_RANGE, CT_INT32, desc);
	col("a", COL_REGULAR, CT_INT32, false);
	col("t", COL_REGULAR, CT_TEXT, false);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	coll("st", CT_SET, CT_INT32, 0);
	C.s.default_ttl_ms = default_ttl;
	ctx_ready();
	if (rng == 0)
		rng = 1;
	model_free();
	M.default_ttl = default_ttl;
	M.desc = desc;
	NOPLOG = 0;
	compute_storage_order();

	uint64_t ht = ht_make(FX_BASE_US + 1000000, 0);
	const uint64_t first = ht;
	for (int done = 0; done < nops;) {
		int k = test_rand(&rng) % 4 == 0 ? 2 + (int)(test_rand(&rng) % 3) : 1;
		for (int i = 0; i < k && done < nops; i++, done++)
			random_op(&rng, ht);
		apply(ht);
		if (nhts < sizeof hts / sizeof hts[0])
			hts[nhts++] = ht;
		/* Point reads at random past (and a little future) times. */
		for (int q = 0; q < 2; q++) {
			int row = (int)(test_rand(&rng) % NROWS);
			uint64_t x = test_rand(&rng) % 10, t;
			if (x < 4) {
				t = hts[test_rand(&rng) % nhts];
			} else if (x < 6) {
				t = hts[test_rand(&rng) % nhts] - 1;
			} else if (x < 8 && M.n[row] > 0) {
				/* Around the expiry of one of the row's cells. */
				const struct mcell *c = &M.cells[row][test_rand(&rng) % M.n[row]];
				int64_t ttl = c->ttl == DOCWRITE_NO_TTL ? M.default_ttl : c->ttl;
				t = ht_make(ht_physical(c->ht) + (uint64_t)(ttl > 0 ? ttl : 0) * 1000 +
						    test_rand(&rng) % 2,
					    (uint32_t)(test_rand(&rng) % 4096));
			} else {
				uint64_t span = ht_physical(ht) - ht_physical(first) + 20000000;
				t = ht_make(ht_physical(first) - 1 + test_rand(&rng) % span,
					    (uint32_t)(test_rand(&rng) % 4096));
			}
			if (t < first - 1)
				t = first - 1;
			check_row(row, t, seed);
		}
		if (done % 400 == 0 || done == nops) {
			for (int q = 0; q < 6; q++) {
				uint64_t t = q == 0 ? ht : hts[test_rand(&rng) % nhts];
				check_scan(t, &rng, seed);
			}
		}
		if (done == nops / 2) {
			CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
			fx_reopen(&C.f);
		}
		arena_reset(&C.f.arena);
		/* Advance time: same microsecond, a few µs, up to 3 s, up to 20 s. */
		uint64_t x = test_rand(&rng) % 10;
		if (x < 3 && ht_logical(ht) < 4000)
			ht += 1 + test_rand(&rng) % 3;
		else if (x < 6)
			ht = ht_make(ht_physical(ht) + 1 + test_rand(&rng) % 1000, (uint32_t)(test_rand(&rng) % 4096));
		else if (x < 9)
			ht = ht_make(ht_physical(ht) + test_rand(&rng) % 3000000 + 1, 0);
		else
			ht = ht_make(ht_physical(ht) + test_rand(&rng) % 20000000 + 1, 0);
	}
	/* Every row at every 50th batch time. */
	for (size_t i = 0; i < nhts; i += 50)
		for (int row = 0; row < NROWS; row++)
			check_row(row, hts[i], seed);
	model_free();
	ctx_close();
}

TEST(model_random_asc)
{
	uint64_t seed = test_seed();
	model_run(seed, false, 0, 8000);
}

TEST(model_random_desc_default_ttl)
{
	uint64_t seed = test_seed();
	model_run(seed, true, 8000, 8000);
}

/* At exit, after a failed last case: RocksDB's own static objects may be
 * gone already, so only the temp dir and plain memory are released. */
static void cleanup_all(void)
{
	if (C.open) {
		test_tmpdir_remove(C.f.dir);
		C.open = false;
	}
	model_free();
	buf_free(&DK);
}

TEST_MAIN(T(hot_row_reads_are_bounded), T(hot_row_shortcuts_agree), T(update_only_row_vanishes), T(inserted_row_survives),
	  T(delete_then_reinsert), T(many_versions_of_one_cell), T(docht_length_boundary),
	  T(ttl_column_vs_row), T(ttl_table_default), T(ttl_boundary_is_physical),
	  T(same_batch_later_write_wins), T(map_and_set_ops), T(list_order),
	  T(replace_hides_same_insert_elements), T(delete_subtree_at_depth),
	  T(primitive_object_overwrites), T(inherited_ttl), T(deep_documents), T(wide_table), T(node_write_time_and_ttl),
	  T(corrupt_entries), T(concurrent_reads_see_whole_batches),
	  T(read_times_and_history_cutoff),
	  T(types_roundtrip_values), T(types_roundtrip_keys), T(validation_errors), T(oversized_keys_roll_back), T(oversized_keys_name_the_column),
	  T(model_random_asc), T(model_random_desc_default_ttl))
