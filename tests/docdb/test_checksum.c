/* Replica checksums (docdb/checksum.h) over real RocksDB stores in temp dirs.
 *
 *   definition_pinned        an empty store is the FNV offset basis; one row
 *                            hashes exactly the bytes checksum.h defines
 *                            (recomputed here independently)
 *   same_visible_data        the same rows written in two orders, one of them
 *                            with overwritten values, replaced collections,
 *                            deleted and expired rows, then compacted, and a
 *                            packed table: one checksum and row count
 *   different_data           one value changed, one row missing, two values
 *                            swapped between rows, a list in another order,
 *                            an empty vs a missing collection vs NULL: every
 *                            change but the last ones changes the checksum
 *   point_in_time_and_paging a checksum at an older read time equals the one
 *                            taken then (and that of a store holding only
 *                            those rows); any page size gives the same result
 *   errors                   read time 0 / HT_INVALID: INVALID_ARGUMENT;
 *                            below the history cutoff: SNAPSHOT_TOO_OLD
 *
 * Every store lives in the global S so that a failed CHECK still gets its
 * temp dir removed (the runner also removes left-over dirs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/checksum.h"
#include "fixture.h"

#define NS 6
#define NROWS 24

static struct {
	struct fx f[NS];
	bool open[NS];
	struct schema plain, packed;
	bool schemas;
} S;

static void at_exit(void)
{
	for (int i = 0; i < NS; i++)
		if (S.open[i]) {
			test_tmpdir_remove(S.f[i].dir);
			S.open[i] = false;
		}
}

static struct fx *store_new(int i, const char *tag)
{
	static bool registered;
	if (!registered) {
		atexit(at_exit);
		registered = true;
	}
	CHECK(i < NS && !S.open[i]);
	fx_open(&S.f[i], tag);
	S.open[i] = true;
	return &S.f[i];
}

static void stores_close(void)
{
	for (int i = 0; i < NS; i++)
		if (S.open[i]) {
			fx_close(&S.f[i]);
			S.open[i] = false;
		}
	if (S.schemas) {
		schema_free(&S.plain);
		schema_free(&S.packed);
		S.schemas = false;
	}
}

/* ck (h text, r int, v text, n bigint, d double, m map<text, int>,
 * s set<int>, l list<text>, PRIMARY KEY ((h), r)); the same packed. */
static void schemas_make(void)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct schema *all[2] = {&S.plain, &S.packed};
	for (int k = 0; k < 2; k++) {
		struct schema *s = all[k];
		CHECK_OK_MSG(schema_init(s, "ck", err), err);
		CHECK_OK_MSG(schema_add(s, "h", COL_HASH, CT_TEXT, err), err);
		CHECK_OK_MSG(schema_add(s, "r", COL_RANGE, CT_INT32, err), err);
		CHECK_OK_MSG(schema_add(s, "v", COL_REGULAR, CT_TEXT, err), err);
		CHECK_OK_MSG(schema_add(s, "n", COL_REGULAR, CT_INT64, err), err);
		CHECK_OK_MSG(schema_add(s, "d", COL_REGULAR, CT_DOUBLE, err), err);
		CHECK_OK_MSG(schema_add_column(s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT32, false,
					       err), err);
		CHECK_OK_MSG(schema_add_column(s, "s", COL_REGULAR, CT_SET, CT_INT32, 0, false, err),
			     err);
		CHECK_OK_MSG(schema_add_column(s, "l", COL_REGULAR, CT_LIST, CT_TEXT, 0, false, err),
			     err);
	}
	S.packed.packed = true;
	S.schemas = true;
}

/* A writer on one store: a batch applied at increasing hybrid times. */
struct wr {
	struct fx *f;
	const struct schema *s;
	struct batch b;
	struct docwrite w;
	int64_t list_counter;
	int64_t t; /* seconds after FX_BASE_US of the next apply */
};

static void wr_open(struct wr *w, struct fx *f, const struct schema *s, int64_t list_start)
{
	memset(w, 0, sizeof *w);
	w->f = f;
	w->s = s;
	w->list_counter = list_start;
	w->t = 1;
	batch_init(&w->b);
	docwrite_init(&w->w, s, &w->b, &w->list_counter);
}

static void wr_apply(struct wr *w)
{
	fx_apply(w->f, &w->b, fx_ht(w->t));
	w->t++;
}

static void wr_close(struct wr *w)
{
	docwrite_free(&w->w);
	batch_free(&w->b);
}

#define OK(wr_, call) CHECK_OK_MSG(call, (wr_)->w.errmsg)

/* The final values of row i. */
struct rowvals {
	char h[8], v[16], mk[2][4], le[2][4];
	int32_t r;
	int64_t n;
	double d;
	int32_t mv[2], se[2];
};

static void rowvals(int i, struct rowvals *rv)
{
	memset(rv, 0, sizeof *rv);
	snprintf(rv->h, sizeof rv->h, "k%d", i % 5);
	rv->r = i;
	snprintf(rv->v, sizeof rv->v, "v%d", i);
	rv->n = (int64_t)i * 7 - 50;
	rv->d = i / 2.0;
	snprintf(rv->mk[0], sizeof rv->mk[0], "a");
	snprintf(rv->mk[1], sizeof rv->mk[1], "b%d", i % 3);
	rv->mv[0] = i;
	rv->mv[1] = i + 1;
	rv->se[0] = i;
	rv->se[1] = i + 100;
	snprintf(rv->le[0], sizeof rv->le[0], "x%d", i % 4);
	snprintf(rv->le[1], sizeof rv->le[1], "y");
}

/* Inserts row i with its final values, in one batch (packed on a packed
 * table: every packable column is given). */
static void put_final(struct wr *w, int i)
{
	struct rowvals x;
	rowvals(i, &x);
	struct pv key[2] = {pv_str(x.h), pv_int32(x.r)};
	struct pv mk[2] = {pv_str(x.mk[0]), pv_str(x.mk[1])};
	struct pv mv[2] = {pv_int32(x.mv[0]), pv_int32(x.mv[1])};
	struct pv se[2] = {pv_int32(x.se[0]), pv_int32(x.se[1])};
	struct pv le[2] = {pv_str(x.le[0]), pv_str(x.le[1])};
	struct colval cols[6] = {
		colval_of("v", pv_str(x.v)), colval_of("n", pv_int64(x.n)),
		colval_of("d", pv_double(x.d)), colval_map("m", mk, mv, 2),
		colval_elems("s", se, 2), colval_elems("l", le, 2),
	};
	OK(w, docwrite_insert(&w->w, key, 2, cols, 6, DOCWRITE_NO_TTL));
	wr_apply(w);
}

/* Row i again, the long way: garbage first, then every column overwritten
 * or replaced in several batches. Visible result: put_final's. */
static void put_messy(struct wr *w, int i)
{
	struct rowvals x;
	rowvals(i, &x);
	struct pv key[2] = {pv_str(x.h), pv_int32(x.r)};
	struct pv gk[1] = {pv_str("zzz")}, gv[1] = {pv_int32(-9)};
	struct pv ge[1] = {pv_str("junk")};
	struct pv mk[2] = {pv_str(x.mk[0]), pv_str(x.mk[1])};
	struct pv mv[2] = {pv_int32(x.mv[0]), pv_int32(x.mv[1])};
	struct pv se[2] = {pv_int32(x.se[0]), pv_int32(x.se[1])};
	struct pv le[2] = {pv_str(x.le[0]), pv_str(x.le[1])};
	struct colval garbage[5] = {
		colval_of("v", pv_str("old")), colval_of("n", pv_int64(-1)),
		colval_map("m", gk, gv, 1), colval_elems("s", se, 1), colval_elems("l", ge, 1),
	};
	OK(w, docwrite_insert(&w->w, key, 2, garbage, 5, DOCWRITE_NO_TTL));
	wr_apply(w);
	/* d set then deleted, then set to its value; v overwritten. */
	struct colval d0 = colval_of("d", pv_double(99.5));
	OK(w, docwrite_update(&w->w, key, 2, &d0, 1, DOCWRITE_NO_TTL));
	OK(w, docwrite_delete_column(&w->w, key, 2, "d"));
	wr_apply(w);
	struct colval upd[3] = {colval_of("v", pv_str(x.v)), colval_of("n", pv_int64(x.n)),
				colval_of("d", pv_double(x.d))};
	OK(w, docwrite_update(&w->w, key, 2, upd, 3, DOCWRITE_NO_TTL));
	/* The map replaced, the set grown, the list replaced. */
	struct colval m = colval_map("m", mk, mv, 2), l = colval_elems("l", le, 2);
	OK(w, docwrite_collection_replace(&w->w, key, 2, &m, DOCWRITE_NO_TTL));
	OK(w, docwrite_set_add(&w->w, key, 2, "s", &se[1], 1, DOCWRITE_NO_TTL));
	wr_apply(w);
	OK(w, docwrite_collection_replace(&w->w, key, 2, &l, DOCWRITE_NO_TTL));
	wr_apply(w);
}

/* Rows that end up invisible: one deleted, one expired (TTL 1 s; reads
 * happen 1000 s later). */
static void put_invisible(struct wr *w)
{
	struct pv k1[2] = {pv_str("gone"), pv_int32(1)}, k2[2] = {pv_str("ttl"), pv_int32(2)};
	struct colval c = colval_of("v", pv_str("x"));
	OK(w, docwrite_insert(&w->w, k1, 2, &c, 1, DOCWRITE_NO_TTL));
	OK(w, docwrite_insert(&w->w, k2, 2, &c, 1, 1000));
	wr_apply(w);
	OK(w, docwrite_delete_row(&w->w, k1, 2));
	wr_apply(w);
}

static const uint64_t READ_AT_S = 100000;

static void sum_of(struct fx *f, const struct schema *s, uint64_t read_ht, uint64_t *sum,
		   uint64_t *rows)
{
	CHECK_OK_MSG(checksum_store(f->s, s, read_ht, sum, rows, f->errmsg), f->errmsg);
}

/* ---- definition ---------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

TEST(definition_pinned)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct schema s;
	struct wr w;
	uint64_t sum = 0, rows = 1;
	struct fx *f;

	stores_close(); /* a previous case that failed left them open */
	f = store_new(0, "ck-def");

	CHECK_OK_MSG(schema_init(&s, "one", err), err);
	CHECK_OK_MSG(schema_add(&s, "k", COL_HASH, CT_TEXT, err), err);
	CHECK_OK_MSG(schema_add(&s, "v", COL_REGULAR, CT_INT32, err), err);
	CHECK_OK_MSG(schema_add(&s, "w", COL_REGULAR, CT_TEXT, err), err);
	sum_of(f, &s, fx_ht(10), &sum, &rows);
	CHECK_EQ_U64(sum, UINT64_C(14695981039346656037)); /* FNV-1a 64 offset basis */
	CHECK_EQ_U64(rows, 0);

	wr_open(&w, f, &s, 0);
	struct pv key = pv_str("a");
	struct colval c = colval_of("v", pv_int32(-2));
	OK(&w, docwrite_insert(&w.w, &key, 1, &c, 1, DOCWRITE_NO_TTL));
	wr_apply(&w);
	wr_close(&w);
	/* 'R' VAL('a') COL(v = -2) COL(w absent) */
	static const uint8_t bytes[] = {
		'R', 'S', 0, 0, 0, 0, 0, 0, 0, 1, 'a',
		'P', 'H', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
		'N',
	};
	sum_of(f, &s, fx_ht(10), &sum, &rows);
	CHECK_EQ_U64(rows, 1);
	CHECK_EQ_U64(sum, fnv(UINT64_C(0xcbf29ce484222325), bytes, sizeof bytes));
	schema_free(&s);
	stores_close();
}

/* ---- same data, different histories --------------------------------------------- */

TEST(same_visible_data)
{
	struct wr a, b, c;
	uint64_t sa, ra, sb, rb, sc, rc;
	uint64_t at = fx_ht(READ_AT_S);

	stores_close(); /* a previous case that failed left them open */
	schemas_make();
	/* A: each row once, in order. */
	wr_open(&a, store_new(0, "ck-a"), &S.plain, 1000);
	for (int i = 0; i < NROWS; i++)
		put_final(&a, i);
	/* B: rows in reverse order, each the long way, plus invisible rows, a
	 * different list counter (other list indexes). */
	wr_open(&b, store_new(1, "ck-b"), &S.plain, 5000000);
	put_invisible(&b);
	for (int i = NROWS - 1; i >= 0; i--)
		put_messy(&b, i);
	/* C: a packed table, scrambled order. */
	wr_open(&c, store_new(2, "ck-c"), &S.packed, 77);
	for (int k = 0; k < NROWS; k++)
		put_final(&c, (k * 7 + 3) % NROWS);

	sum_of(a.f, &S.plain, at, &sa, &ra);
	sum_of(b.f, &S.plain, at, &sb, &rb);
	sum_of(c.f, &S.packed, at, &sc, &rc);
	test_note("checksum %016" PRIx64 " over %" PRIu64 " rows", sa, ra);
	CHECK_EQ_U64(ra, NROWS);
	CHECK_EQ_U64(rb, NROWS);
	CHECK_EQ_U64(rc, NROWS);
	CHECK_EQ_U64(sb, sa);
	CHECK_EQ_U64(sc, sa);

	/* B compacted at the read time (history dropped): the same. */
	CHECK_OK_MSG(store_compact(b.f->s, at, b.f->errmsg), b.f->errmsg);
	sum_of(b.f, &S.plain, at, &sb, &rb);
	CHECK_EQ_U64(sb, sa);
	CHECK_EQ_U64(rb, NROWS);
	/* Reopened (what is flushed): the same. */
	fx_reopen(b.f);
	sum_of(b.f, &S.plain, at, &sb, &rb);
	CHECK_EQ_U64(sb, sa);
	wr_close(&a);
	wr_close(&b);
	wr_close(&c);
	stores_close();
}

/* ---- different data -------------------------------------------------------------- */

TEST(different_data)
{
	struct wr a, w;
	uint64_t sa, ra, s, r;
	uint64_t at = fx_ht(READ_AT_S);
	struct rowvals x;

	stores_close(); /* a previous case that failed left them open */
	schemas_make();
	wr_open(&a, store_new(0, "ck-base"), &S.plain, 1);
	for (int i = 0; i < NROWS; i++)
		put_final(&a, i);
	sum_of(a.f, &S.plain, at, &sa, &ra);

	/* One value changed. */
	wr_open(&w, store_new(1, "ck-val"), &S.plain, 1);
	for (int i = 0; i < NROWS; i++)
		put_final(&w, i);
	rowvals(5, &x);
	struct pv k5[2] = {pv_str(x.h), pv_int32(x.r)};
	struct colval n5 = colval_of("n", pv_int64(x.n + 1));
	OK(&w, docwrite_update(&w.w, k5, 2, &n5, 1, DOCWRITE_NO_TTL));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s, &r);
	CHECK_EQ_U64(r, ra);
	CHECK_MSG(s != sa, "a changed value kept the checksum %016" PRIx64, s);

	/* The value back: equal again (the checksum sees only the result). */
	struct colval n5b = colval_of("n", pv_int64(x.n));
	OK(&w, docwrite_update(&w.w, k5, 2, &n5b, 1, DOCWRITE_NO_TTL));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s, &r);
	CHECK_EQ_U64(s, sa);

	/* One row missing. */
	OK(&w, docwrite_delete_row(&w.w, k5, 2));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s, &r);
	CHECK_EQ_U64(r, ra - 1);
	CHECK(s != sa);
	wr_close(&w);

	/* v of rows 1 and 2 swapped: same multiset of values, other rows. */
	wr_open(&w, store_new(2, "ck-swap"), &S.plain, 1);
	for (int i = 0; i < NROWS; i++)
		put_final(&w, i);
	struct rowvals x1, x2;
	rowvals(1, &x1);
	rowvals(2, &x2);
	struct pv k1[2] = {pv_str(x1.h), pv_int32(x1.r)}, k2[2] = {pv_str(x2.h), pv_int32(x2.r)};
	struct colval v1 = colval_of("v", pv_str(x2.v)), v2 = colval_of("v", pv_str(x1.v));
	OK(&w, docwrite_update(&w.w, k1, 2, &v1, 1, DOCWRITE_NO_TTL));
	OK(&w, docwrite_update(&w.w, k2, 2, &v2, 1, DOCWRITE_NO_TTL));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s, &r);
	CHECK_EQ_U64(r, ra);
	CHECK(s != sa);

	/* Row 3's list in the other order. */
	wr_close(&w);
	wr_open(&w, store_new(3, "ck-list"), &S.plain, 1);
	for (int i = 0; i < NROWS; i++)
		put_final(&w, i);
	struct rowvals x3;
	rowvals(3, &x3);
	struct pv k3[2] = {pv_str(x3.h), pv_int32(x3.r)};
	struct pv rev[2] = {pv_str(x3.le[1]), pv_str(x3.le[0])};
	struct colval l3 = colval_elems("l", rev, 2);
	OK(&w, docwrite_collection_replace(&w.w, k3, 2, &l3, DOCWRITE_NO_TTL));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s, &r);
	CHECK(s != sa);

	/* Row 3's map emptied (removing its elements) vs the map deleted: both
	 * read as NULL, one checksum; different from the base. */
	uint64_t s_removed, s_deleted;
	struct pv mk[2] = {pv_str(x3.mk[0]), pv_str(x3.mk[1])};
	OK(&w, docwrite_map_remove(&w.w, k3, 2, "m", mk, 2));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s_removed, &r);
	OK(&w, docwrite_delete_column(&w.w, k3, 2, "m"));
	wr_apply(&w);
	sum_of(w.f, &S.plain, at, &s_deleted, &r);
	CHECK_EQ_U64(s_removed, s_deleted);
	CHECK(s_removed != s);
	wr_close(&w);
	wr_close(&a);
	stores_close();
}

/* ---- point in time, paging ------------------------------------------------------------- */

TEST(point_in_time_and_paging)
{
	struct wr a, h;
	uint64_t s_mid, r_mid, s, r, s_half, r_half, s_all, r_all;
	uint64_t mid, all_at;

	stores_close(); /* a previous case that failed left them open */
	schemas_make();
	wr_open(&a, store_new(0, "ck-pit"), &S.plain, 1);
	for (int i = 0; i < NROWS / 2; i++)
		put_final(&a, i);
	mid = fx_ht(a.t - 1); /* the last write so far */
	sum_of(a.f, &S.plain, mid, &s_mid, &r_mid);
	CHECK_EQ_U64(r_mid, NROWS / 2);
	for (int i = NROWS / 2; i < NROWS; i++)
		put_final(&a, i);
	/* The rest arrived later: the old read time still sees the half. */
	sum_of(a.f, &S.plain, mid, &s, &r);
	CHECK_EQ_U64(s, s_mid);
	CHECK_EQ_U64(r, r_mid);
	all_at = fx_ht(a.t - 1);
	sum_of(a.f, &S.plain, all_at, &s_all, &r_all);
	CHECK_EQ_U64(r_all, NROWS);
	CHECK(s_all != s_mid);
	/* Just before the last write of the half: one row fewer. */
	sum_of(a.f, &S.plain, mid - 1, &s, &r);
	CHECK_EQ_U64(r, NROWS / 2 - 1);
	/* A store that only ever had the half, written later. */
	wr_open(&h, store_new(1, "ck-half"), &S.plain, 1);
	h.t = 500;
	for (int i = NROWS / 2 - 1; i >= 0; i--)
		put_final(&h, i);
	sum_of(h.f, &S.plain, fx_ht(READ_AT_S), &s_half, &r_half);
	CHECK_EQ_U64(s_half, s_mid);
	CHECK_EQ_U64(r_half, r_mid);

	/* Any page size: the same. */
	for (size_t page = 1; page <= NROWS + 1; page += 3) {
		struct checksum c;
		int steps = 0;
		checksum_init(&c, all_at);
		while (!c.done) {
			CHECK_OK_MSG(checksum_step(&c, a.f->s, &S.plain, page, a.f->errmsg),
				     a.f->errmsg);
			steps++;
			CHECK(steps <= NROWS + 2);
			/* Writes between pages land above the read time. */
			if (steps == 1)
				put_final(&a, 1000 + (int)page);
		}
		CHECK_EQ_U64(c.hash, s_all);
		CHECK_EQ_U64(c.rows, NROWS);
		CHECK(page >= NROWS || steps > 1);
		/* A finished checksum stays finished. */
		CHECK_OK(checksum_step(&c, a.f->s, &S.plain, page, a.f->errmsg));
		CHECK_EQ_U64(c.hash, s_all);
		checksum_free(&c);
	}
	wr_close(&a);
	wr_close(&h);
	stores_close();
}

/* ---- errors ------------------------------------------------------------------------------ */

TEST(errors)
{
	struct wr a;
	uint64_t s = 7, r = 7, in_effect = 0;

	stores_close(); /* a previous case that failed left them open */
	schemas_make();
	wr_open(&a, store_new(0, "ck-err"), &S.plain, 1);
	for (int i = 0; i < 3; i++)
		put_final(&a, i);
	CHECK_EQ_INT(checksum_store(a.f->s, &S.plain, 0, &s, &r, a.f->errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(checksum_store(a.f->s, &S.plain, HT_INVALID, &s, &r, a.f->errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_U64(s, 7); /* untouched on error */
	CHECK_OK_MSG(store_raise_history_cutoff(a.f->s, fx_ht(2), &in_effect, a.f->errmsg),
		     a.f->errmsg);
	CHECK_EQ_INT(checksum_store(a.f->s, &S.plain, fx_ht(1), &s, &r, a.f->errmsg),
		     DOCRAFT_ETOOOLD);
	CHECK_MSG(strstr(a.f->errmsg, "cutoff") != NULL, "errmsg: %s", a.f->errmsg);
	CHECK_OK_MSG(checksum_store(a.f->s, &S.plain, fx_ht(2), &s, &r, a.f->errmsg),
		     a.f->errmsg);
	CHECK_EQ_U64(r, 2);

	/* The cutoff passing the read time between two pages. */
	struct checksum c;
	checksum_init(&c, fx_ht(3));
	CHECK_OK_MSG(checksum_step(&c, a.f->s, &S.plain, 1, a.f->errmsg), a.f->errmsg);
	CHECK(!c.done);
	CHECK_OK_MSG(store_raise_history_cutoff(a.f->s, fx_ht(4), &in_effect, a.f->errmsg),
		     a.f->errmsg);
	CHECK_EQ_INT(checksum_step(&c, a.f->s, &S.plain, 1, a.f->errmsg), DOCRAFT_ETOOOLD);
	checksum_free(&c);
	wr_close(&a);
	stores_close();
}

TEST_MAIN(T(definition_pinned), T(same_visible_data), T(different_data),
	  T(point_in_time_and_paging), T(errors))
