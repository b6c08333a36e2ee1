/* Conditions of conditional writes (docdb/condition.h) evaluated on a real
 * store (fixture.h), rows written with docwrite:
 *
 *   value          equal / different value, different type of the same number
 *   absent         a column never written, set to NULL, deleted
 *   rows           a deleted row, a row never written, an UPDATE-only row
 *                  whose columns are gone, history (reads at earlier times)
 *   TTL            column TTL, the table default TTL (with a schema; without
 *                  one the store's default applies)
 *   several        all must hold
 *   errors         malformed blobs, reads below the history cutoff
 *
 * meson runs it twice: as test_condition_packed every table is packed, so
 * full INSERTs write packed rows and conditions read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/condition.h"
#include "docdb/key.h"
#include "fixture.h"

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

static void cleanup_all(void)
{
	ctx_close();
}

/* Table t: k text hash key; a int, b text, m map<text, int>. */
static void table(const char *tag, int64_t default_ttl_ms)
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
	CHECK_OK_MSG(schema_init(&C.s, "t", err), err);
	CHECK_OK_MSG(schema_add_column(&C.s, "k", COL_HASH, CT_TEXT, 0, 0, false, err), err);
	CHECK_OK_MSG(schema_add_column(&C.s, "a", COL_REGULAR, CT_INT32, 0, 0, false, err), err);
	CHECK_OK_MSG(schema_add_column(&C.s, "b", COL_REGULAR, CT_TEXT, 0, 0, false, err), err);
	CHECK_OK_MSG(schema_add_column(&C.s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT32, false,
				       err), err);
	C.s.packed = fx_packed();
	C.s.default_ttl_ms = default_ttl_ms;
	docwrite_init(&C.w, &C.s, &C.b, NULL);
}

#define OK(call) CHECK_OK_MSG(call, C.w.errmsg)

static uint64_t at(int64_t s) { return fx_ht(s); }

static void apply(uint64_t ht)
{
	fx_apply(&C.f, &C.b, ht);
}

/* Row k: a and b given (packed when the table is). */
static void insert(const char *k, int32_t a, const char *b, int64_t ttl_ms, uint64_t ht)
{
	struct pv key = pv_str(k);
	struct colval cols[2] = {colval_of("a", pv_int32(a)),
				 colval_of("b", b != NULL ? pv_str(b) : pv_null())};
	OK(docwrite_insert(&C.w, &key, 1, cols, 2, ttl_ms));
	apply(ht);
}

/* One condition on row k's column: equal to *v, or absent (v NULL). */
static struct condition cond(struct buf *dk, const char *k, const char *column,
			     const struct pv *v)
{
	struct condition c;
	struct pv key = pv_str(k);
	const struct column *col = schema_find(&C.s, column);
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK(col != NULL);
	buf_reset(dk);
	CHECK_OK_MSG(docwrite_dockey(&C.s, &key, 1, dk, err), err);
	memset(&c, 0, sizeof c);
	c.dockey = dk->data;
	c.dockey_len = dk->len;
	c.column_id = col->id;
	c.has_value = v != NULL;
	if (v != NULL)
		c.value = *v;
	return c;
}

/* Evaluates the conditions c[0..n) at ht with schema (or without: NULL). */
static bool eval_n(const struct condition *c, size_t n, const struct schema *schema, uint64_t ht)
{
	struct buf blob = BUF_INIT;
	bool holds = true;
	int rv;
	condition_encode(&blob, c, n);
	rv = condition_eval(C.f.s, schema, blob.data, blob.len, ht, &holds, C.f.errmsg);
	buf_free(&blob);
	CHECK_OK_MSG(rv, C.f.errmsg);
	return holds;
}

/* Whether row k's column equals *v (v NULL: has no live value) at ht. */
static bool holds(const char *k, const char *column, const struct pv *v, uint64_t ht)
{
	struct buf dk = BUF_INIT;
	struct condition c = cond(&dk, k, column, v);
	bool h = eval_n(&c, 1, &C.s, ht);
	buf_free(&dk);
	return h;
}

static bool is_int(const char *k, const char *column, int32_t x, uint64_t ht)
{
	struct pv v = pv_int32(x);
	return holds(k, column, &v, ht);
}

static bool is_text(const char *k, const char *column, const char *x, uint64_t ht)
{
	struct pv v = pv_str(x);
	return holds(k, column, &v, ht);
}

static bool absent(const char *k, const char *column, uint64_t ht)
{
	return holds(k, column, NULL, ht);
}

/* ---- cases ---------------------------------------------------------------- */

TEST(value_equal_or_different)
{
	table("cond-value", 0);
	insert("r", 1, "x", DOCWRITE_NO_TTL, at(1));
	CHECK(is_int("r", "a", 1, at(1)));
	CHECK(!is_int("r", "a", 2, at(1)));
	CHECK(!absent("r", "a", at(1)));
	CHECK(is_text("r", "b", "x", at(2)));
	CHECK(!is_text("r", "b", "x ", at(2)));
	CHECK(!is_text("r", "b", "", at(2)));
	/* Equality is of the stored type: the service converts the expected
	 * value to the column's type, so 1 as int64 is not int 1. */
	struct pv one64 = pv_int64(1);
	CHECK(!holds("r", "a", &one64, at(1)));
	/* Before the write the row does not exist. */
	CHECK(!is_int("r", "a", 1, at(1) - 1));
	CHECK(absent("r", "a", at(1) - 1));
	/* A newer value wins; older times still see the old one. */
	struct colval a2 = colval_of("a", pv_int32(2));
	struct pv key = pv_str("r");
	OK(docwrite_update(&C.w, &key, 1, &a2, 1, DOCWRITE_NO_TTL));
	apply(at(3));
	CHECK(is_int("r", "a", 2, at(3)));
	CHECK(!is_int("r", "a", 1, at(3)));
	CHECK(is_int("r", "a", 1, at(2)));
	ctx_close();
}

TEST(absent_column)
{
	struct pv key = pv_str("r");
	table("cond-absent", 0);
	insert("r", 1, NULL, DOCWRITE_NO_TTL, at(1)); /* b NULL */
	CHECK(absent("r", "b", at(1)));
	CHECK(!is_text("r", "b", "x", at(1)));
	/* Written, then deleted: absent again. */
	struct colval bx = colval_of("b", pv_str("x"));
	OK(docwrite_update(&C.w, &key, 1, &bx, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK(!absent("r", "b", at(2)));
	OK(docwrite_delete_column(&C.w, &key, 1, "b"));
	apply(at(3));
	CHECK(absent("r", "b", at(3)));
	CHECK(is_int("r", "a", 1, at(3)));
	/* SET a = NULL */
	struct colval anull = colval_of("a", pv_null());
	OK(docwrite_update(&C.w, &key, 1, &anull, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK(absent("r", "a", at(4)));
	/* A collection column written under the row is no value of a. */
	struct pv mk = pv_str("x"), mv = pv_int32(1);
	OK(docwrite_map_put(&C.w, &key, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
	apply(at(5));
	CHECK(absent("r", "a", at(5)));
	ctx_close();
}

TEST(deleted_and_missing_rows)
{
	struct pv key = pv_str("r");
	table("cond-rows", 0);
	insert("r", 1, "x", DOCWRITE_NO_TTL, at(1));
	OK(docwrite_delete_row(&C.w, &key, 1));
	apply(at(2));
	CHECK(!is_int("r", "a", 1, at(2)));
	CHECK(absent("r", "a", at(2)));
	CHECK(absent("r", "b", at(2)));
	CHECK(is_int("r", "a", 1, at(1)));
	/* Re-inserted after the delete. */
	insert("r", 3, NULL, DOCWRITE_NO_TTL, at(3));
	CHECK(is_int("r", "a", 3, at(3)));
	CHECK(absent("r", "b", at(3)));
	/* A row never written. */
	CHECK(absent("never", "a", at(10)));
	CHECK(!is_int("never", "a", 0, at(10)));
	/* An UPDATE-only row whose column is deleted: gone. */
	struct pv u = pv_str("u");
	struct colval a7 = colval_of("a", pv_int32(7));
	OK(docwrite_update(&C.w, &u, 1, &a7, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK(is_int("u", "a", 7, at(4)));
	OK(docwrite_delete_column(&C.w, &u, 1, "a"));
	apply(at(5));
	CHECK(absent("u", "a", at(5)));
	ctx_close();
}

TEST(expired_ttl)
{
	struct pv key = pv_str("c");
	table("cond-ttl", 0);
	/* Whole row with a 2 s TTL at 1 s: live up to 3 s (expired once more
	 * than 2 s have passed, ttl.h). */
	insert("r", 1, "x", 2000, at(1));
	CHECK(is_int("r", "a", 1, at(2)));
	CHECK(is_text("r", "b", "x", at(3)));
	CHECK(!is_int("r", "a", 1, fx_ht_us(3, 1)));
	CHECK(absent("r", "a", fx_ht_us(3, 1)));
	CHECK(absent("r", "b", at(4)));
	/* One column with its own TTL. */
	insert("c", 5, "y", DOCWRITE_NO_TTL, at(1));
	struct colval b = colval_of("b", pv_str("z"));
	OK(docwrite_update(&C.w, &key, 1, &b, 1, 1000));
	apply(at(2));
	CHECK(is_text("c", "b", "z", at(3)));
	CHECK(absent("c", "b", fx_ht_us(3, 1)));
	CHECK(is_int("c", "a", 5, at(4)));
	ctx_close();
}

/* The table's default TTL comes from the schema; without one, from the
 * store's options (none here): the schema is what the tablet must pass. */
TEST(default_ttl)
{
	struct buf dk = BUF_INIT;
	table("cond-defttl", 1000);
	insert("r", 1, "x", DOCWRITE_NO_TTL, at(1));
	CHECK(is_int("r", "a", 1, at(2)));
	CHECK(absent("r", "a", fx_ht_us(2, 1)));
	if (!C.s.packed) {
		/* Without a schema (packed rows need one) the store's default
		 * TTL applies: none. */
		struct condition c = cond(&dk, "r", "a", NULL);
		CHECK(!eval_n(&c, 1, NULL, fx_ht_us(2, 1)));
		store_set_default_ttl_ms(C.f.s, 1000);
		CHECK(eval_n(&c, 1, NULL, fx_ht_us(2, 1)));
	}
	buf_free(&dk);
	ctx_close();
}

TEST(several_must_all_hold)
{
	struct buf d1 = BUF_INIT, d2 = BUF_INIT, d3 = BUF_INIT;
	struct pv one = pv_int32(1), two = pv_int32(2), x = pv_str("x");
	struct condition c[3];
	table("cond-several", 0);
	insert("r", 1, "x", DOCWRITE_NO_TTL, at(1));
	insert("s", 2, NULL, DOCWRITE_NO_TTL, at(1) + 1);
	c[0] = cond(&d1, "r", "a", &one);
	c[1] = cond(&d2, "s", "a", &two);
	c[2] = cond(&d3, "s", "b", NULL);
	CHECK(eval_n(c, 3, &C.s, at(2)));
	c[2] = cond(&d3, "r", "b", &x);
	CHECK(eval_n(c, 3, &C.s, at(2)));
	c[1] = cond(&d2, "s", "a", &one);
	CHECK(!eval_n(c, 3, &C.s, at(2)));
	c[1] = cond(&d2, "s", "a", &two);
	c[2] = cond(&d3, "r", "b", NULL);
	CHECK(!eval_n(c, 3, &C.s, at(2)));
	buf_free(&d1);
	buf_free(&d2);
	buf_free(&d3);
	ctx_close();
}

TEST(errors)
{
	struct buf dk = BUF_INIT, blob = BUF_INIT;
	bool h = true;
	table("cond-errors", 0);
	insert("r", 1, "x", DOCWRITE_NO_TTL, at(1));
	struct condition c = cond(&dk, "r", "a", NULL);
	condition_encode(&blob, &c, 1);
	/* Malformed: truncated, or one stray byte. */
	CHECK_EQ_INT(condition_eval(C.f.s, &C.s, blob.data, blob.len - 1, at(2), &h, C.f.errmsg),
		     DOCRAFT_ECORRUPT);
	CHECK(!h);
	buf_push(&blob, 0);
	CHECK_EQ_INT(condition_eval(C.f.s, &C.s, blob.data, blob.len, at(2), &h, C.f.errmsg),
		     DOCRAFT_ECORRUPT);
	blob.len--;
	/* A read time below the history cutoff is refused, never guessed. */
	store_set_history_cutoff(C.f.s, at(5));
	CHECK_EQ_INT(condition_eval(C.f.s, &C.s, blob.data, blob.len, at(2), &h, C.f.errmsg),
		     DOCRAFT_ETOOOLD);
	CHECK(!h);
	CHECK_OK_MSG(condition_eval(C.f.s, &C.s, blob.data, blob.len, at(6), &h, C.f.errmsg),
		     C.f.errmsg);
	CHECK(!h); /* a is 1 */
	buf_free(&dk);
	buf_free(&blob);
	ctx_close();
}

TEST_MAIN(T(value_equal_or_different), T(absent_column), T(deleted_and_missing_rows),
	  T(expired_ttl), T(default_ttl), T(several_must_all_hold), T(errors))
