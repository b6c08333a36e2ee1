/* Adversarial tests of reader_scan (reader.c): one hash key with many range
 * keys, forward and reverse, ASC and DESC range columns, equality prefix +
 * bounds (brute-forced against a logical filter), limits and paging (equal to
 * the unpaged result, original read time kept), deleted / expired rows,
 * whole-store scans in storage order, hash-only and range-only tables, and
 * every way a scan spec or a paging state can be wrong.
 *
 * The table: h text (hash), r1 int (range), r2 text (range), v int; r1 and
 * r2 are ASC or DESC in the four combinations. Keys include strings that are
 * prefixes of each other and contain NUL bytes, and INT32_MIN / INT32_MAX.
 *
 * Also run as test_scan_packed (DOCRAFT_TEST_PACKED=1: packed tables, the
 * same expected results).
 *
 * Like test_reader.c, each case keeps its store in the global C so a failed
 * CHECK still gets its temp dir removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/key.h"
#include "fixture.h"

static struct {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	bool open;
} C;

static struct buf SCAN_OUT;

static void ctx_close(void)
{
	buf_free(&SCAN_OUT);
	if (!C.open)
		return;
	docwrite_free(&C.w);
	batch_free(&C.b);
	schema_free(&C.s);
	fx_close(&C.f);
	C.open = false;
}

/* At exit, after a failed last case: RocksDB's own static objects may be
 * gone already, so only the temp dir and plain memory are released. */
static void at_exit(void)
{
	buf_free(&SCAN_OUT);
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
	C.s.packed = fx_packed();
}

static void col(const char *name, enum col_kind kind, enum col_type type, bool desc)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(schema_add_column(&C.s, name, kind, type, 0, 0, desc, err), err);
}

#define OK(call) CHECK_OK_MSG(call, C.w.errmsg)

static uint64_t at(int64_t s) { return fx_ht(s); }

static void apply(uint64_t ht)
{
	fx_apply(&C.f, &C.b, ht);
}

/* ---- data ------------------------------------------------------------------ */

#define N1 5
#define N2 5
static const int32_t R1[N1] = {INT32_MIN, -1, 0, 7, INT32_MAX};
static const struct {
	const char *s;
	size_t n;
} R2[N2] = {{"", 0}, {"a", 1}, {"a\0", 2}, {"ab", 2}, {"b", 1}};

/* Candidate bounds on r2 (logical order is bytewise, a prefix first). */
#define NB2 8
static const struct {
	const char *s;
	size_t n;
} B2[NB2] = {{"", 0}, {"a", 1}, {"a\0", 2}, {"a\0\0", 3}, {"aa", 2}, {"ab", 2}, {"b", 1}, {"c", 1}};
#define NB1 8
static const int32_t B1[NB1] = {INT32_MIN, -5, -1, 0, 7, 8, INT32_MAX - 1, INT32_MAX};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int c = n ? memcmp(a, b, n) : 0;
	if (c != 0)
		return c;
	return an < bn ? -1 : an > bn;
}

static int cmp_i32(int32_t a, int32_t b) { return a < b ? -1 : a > b; }

/* The r1 x r2 table under hash key "p" (v = 100 * i + j), plus rows under
 * "q" and under a hash key whose 16-bit hash equals that of "p". */
static char COLLIDER[16];

static void find_collider(void)
{
	struct pv p = pv_str("p");
	uint16_t hp = key_hash_components(&p, 1);
	for (int i = 0; i < 10000000; i++) {
		char s[16];
		snprintf(s, sizeof s, "c%d", i);
		struct pv c = pv_str(s);
		if (key_hash_components(&c, 1) == hp) {
			snprintf(COLLIDER, sizeof COLLIDER, "%s", s);
			return;
		}
	}
	CHECK_MSG(false, "no hash collision with 'p' found");
}

static void scan_table(const char *tag, bool desc1, bool desc2)
{
	ctx_open(tag, "s");
	col("h", COL_HASH, CT_TEXT, false);
	col("r1", COL_RANGE, CT_INT32, desc1);
	col("r2", COL_RANGE, CT_TEXT, desc2);
	col("v", COL_REGULAR, CT_INT32, false);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	if (COLLIDER[0] == 0)
		find_collider();
}

static void put_row(const char *h, int32_t r1, const char *r2, size_t r2n, int32_t v, int64_t ttl)
{
	struct pv key[3] = {pv_str(h), pv_int32(r1), pv_strn(r2, r2n)};
	struct colval c = colval_of("v", pv_int32(v));
	OK(docwrite_insert(&C.w, key, 3, &c, 1, ttl));
}

static void load_grid(uint64_t ht)
{
	/* Inserted in a scrambled order. */
	for (int k = 0; k < N1 * N2; k++) {
		int idx = (k * 7 + 3) % (N1 * N2), i = idx / N2, j = idx % N2;
		put_row("p", R1[i], R2[j].s, R2[j].n, 100 * i + j, DOCWRITE_NO_TTL);
	}
	put_row("q", 0, "a", 1, 9001, DOCWRITE_NO_TTL);
	put_row("q", 5, "z", 1, 9002, DOCWRITE_NO_TTL);
	put_row(COLLIDER, 0, "a", 1, 9101, DOCWRITE_NO_TTL);
	put_row(COLLIDER, 7, "", 0, 9102, DOCWRITE_NO_TTL);
	apply(ht);
}

/* A scan result row: which grid cell (or -1) and its v. */
struct got {
	int i, j;
	int32_t v;
};

static int cell_of(const struct row *r)
{
	struct pv h = pv_str("p");
	if (r->key[0].type != PV_STRING || r->key[0].v.s.len != 1 || pv_compare(&r->key[0], &h) != 0)
		return -1;
	for (int i = 0; i < N1; i++)
		for (int j = 0; j < N2; j++)
			if (r->key[1].type == PV_INT32 && r->key[1].v.i32 == R1[i] &&
			    r->key[2].type == PV_STRING &&
			    cmp_bytes((const char *)r->key[2].v.s.p, r->key[2].v.s.len, R2[j].s, R2[j].n) == 0)
				return i * N2 + j;
	return -2;
}

/* Runs a scan through all its pages (limit from the spec), appending each
 * row as "i.j=v" to out; checks page sizes and that paging ends. */
static int scan_all(struct scan_spec *sp, struct buf *out, int *nrows_total)
{
	struct buf state = BUF_INIT, next = BUF_INIT;
	int total = 0, pages = 0, rv = 0;
	const uint8_t *orig_paging = sp->paging;
	size_t orig_len = sp->paging_len;
	buf_reset(out);
	for (;;) {
		struct row *rows;
		size_t nrows;
		buf_reset(&next);
		if (pages > 0 || orig_paging == NULL) {
			sp->paging = state.len ? state.data : NULL;
			sp->paging_len = state.len;
		}
		rv = reader_scan(C.f.s, &C.s, sp, &C.f.arena, &rows, &nrows, &next, C.f.errmsg);
		if (rv != 0)
			break;
		CHECK_MSG(sp->limit == 0 || nrows <= sp->limit, "page of %zu rows, limit %zu", nrows,
			  sp->limit);
		for (size_t k = 0; k < nrows; k++) {
			int c = cell_of(&rows[k]);
			const struct docnode *v = row_column_named(&rows[k], "v");
			CHECK(v != NULL && v->kind == VAL_PRIMITIVE && v->value.type == PV_INT32);
			if (c >= 0)
				buf_printf(out, "%d.%d=%d ", c / N2, c % N2, v->value.v.i32);
			else
				buf_printf(out, "other=%d ", v->value.v.i32);
			total++;
		}
		pages++;
		CHECK_MSG(pages < 200, "paging does not end");
		if (next.len == 0)
			break;
		CHECK_MSG(sp->limit != 0, "paging state without a limit");
		CHECK_MSG(nrows == sp->limit, "paging state after a short page (%zu of %zu)", nrows,
			  sp->limit);
		buf_reset(&state);
		buf_append(&state, next.data, next.len);
	}
	sp->paging = orig_paging;
	sp->paging_len = orig_len;
	buf_free(&state);
	buf_free(&next);
	if (nrows_total)
		*nrows_total = total;
	return rv;
}

static const char *scan_str(struct scan_spec *sp)
{
	struct buf b = BUF_INIT;
	CHECK_OK_MSG(scan_all(sp, &b, NULL), C.f.errmsg);
	buf_reset(&SCAN_OUT);
	buf_append(&SCAN_OUT, b.data, b.len);
	buf_free(&b);
	return buf_cstr(&SCAN_OUT);
}

/* Expected result of a scan of "p" in the grid as "i.j=v ..." : cells that
 * pass the filter, in storage order (or reversed). alive(i, j) says which
 * cells exist and v_of their value. */
struct filter {
	bool desc1, desc2, reverse;
	int eq_i;                 /* -1: no equality on r1; else R1 index */
	bool eq_missing;          /* equality on a value not in the grid */
	bool on_r2;               /* bounds on r2 (needs eq_i), else on r1 */
	int lo, hi;               /* candidate index (B1 / B2), -1 none */
	bool lo_incl, hi_incl;
};

static bool cell_alive_all(int i, int j) { (void)i; (void)j; return true; }
static int32_t cell_v_grid(int i, int j) { return 100 * i + j; }

static void expected(const struct filter *fl, bool (*alive)(int, int), int32_t (*v_of)(int, int),
		     struct buf *out)
{
	int order[N1 * N2], n = 0;
	for (int i = 0; i < N1; i++)
		for (int j = 0; j < N2; j++) {
			if (!alive(i, j))
				continue;
			if (fl->eq_missing || (fl->eq_i >= 0 && i != fl->eq_i))
				continue;
			if (fl->on_r2) {
				if (fl->lo >= 0) {
					int c = cmp_bytes(R2[j].s, R2[j].n, B2[fl->lo].s, B2[fl->lo].n);
					if (fl->lo_incl ? c < 0 : c <= 0)
						continue;
				}
				if (fl->hi >= 0) {
					int c = cmp_bytes(R2[j].s, R2[j].n, B2[fl->hi].s, B2[fl->hi].n);
					if (fl->hi_incl ? c > 0 : c >= 0)
						continue;
				}
			} else {
				if (fl->lo >= 0) {
					int c = cmp_i32(R1[i], B1[fl->lo]);
					if (fl->lo_incl ? c < 0 : c <= 0)
						continue;
				}
				if (fl->hi >= 0) {
					int c = cmp_i32(R1[i], B1[fl->hi]);
					if (fl->hi_incl ? c > 0 : c >= 0)
						continue;
				}
			}
			order[n++] = i * N2 + j;
		}
	/* Storage order: r1 then r2, each ASC or DESC. */
	for (int a = 1; a < n; a++)
		for (int b = a; b > 0; b--) {
			int x = order[b - 1], y = order[b];
			int c = cmp_i32(R1[x / N2], R1[y / N2]);
			if (fl->desc1)
				c = -c;
			if (c == 0) {
				c = cmp_bytes(R2[x % N2].s, R2[x % N2].n, R2[y % N2].s, R2[y % N2].n);
				if (fl->desc2)
					c = -c;
			}
			if (c > 0) {
				order[b - 1] = y;
				order[b] = x;
			}
		}
	buf_reset(out);
	for (int k = 0; k < n; k++) {
		int c = fl->reverse ? order[n - 1 - k] : order[k];
		buf_printf(out, "%d.%d=%d ", c / N2, c % N2, v_of(c / N2, c % N2));
	}
}

static void spec_for(struct scan_spec *sp, const struct filter *fl, struct pv *hk, struct pv *eq,
		     struct pv *lo, struct pv *hi, uint64_t ht)
{
	memset(sp, 0, sizeof *sp);
	sp->read_ht = ht;
	*hk = pv_str("p");
	sp->hash_key = hk;
	sp->n_hash = 1;
	sp->reverse = fl->reverse;
	if (fl->eq_i >= 0 || fl->eq_missing) {
		*eq = pv_int32(fl->eq_missing ? 3 : R1[fl->eq_i]);
		sp->range_eq = eq;
		sp->n_eq = 1;
	}
	if (fl->lo >= 0) {
		*lo = fl->on_r2 ? pv_strn(B2[fl->lo].s, B2[fl->lo].n) : pv_int32(B1[fl->lo]);
		sp->lower = lo;
		sp->lower_incl = fl->lo_incl;
	}
	if (fl->hi >= 0) {
		*hi = fl->on_r2 ? pv_strn(B2[fl->hi].s, B2[fl->hi].n) : pv_int32(B1[fl->hi]);
		sp->upper = hi;
		sp->upper_incl = fl->hi_incl;
	}
}

static const char *filter_text(const struct filter *fl)
{
	static char out[256];
	snprintf(out, sizeof out, "desc1=%d desc2=%d rev=%d eq=%d%s %s lo=%d%s hi=%d%s", fl->desc1,
		 fl->desc2, fl->reverse, fl->eq_i, fl->eq_missing ? "(missing)" : "",
		 fl->on_r2 ? "r2" : "r1", fl->lo, fl->lo_incl ? "i" : "x", fl->hi, fl->hi_incl ? "i" : "x");
	return out;
}

/* ---- cases ------------------------------------------------------------------- */

TEST(order_forward_reverse_asc_desc)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool d1 = cfg & 1, d2 = cfg & 2;
		scan_table("sc-order", d1, d2);
		load_grid(at(1));
		for (int rev = 0; rev < 2; rev++) {
			struct filter fl = {d1, d2, rev, -1, false, false, -1, -1, false, false};
			struct scan_spec sp;
			struct pv hk, eq, lo, hi;
			struct buf want = BUF_INIT;
			spec_for(&sp, &fl, &hk, &eq, &lo, &hi, at(1));
			expected(&fl, cell_alive_all, cell_v_grid, &want);
			CHECK_EQ_STR(scan_str(&sp), buf_cstr(&want));
			/* Before the data: nothing. */
			sp.read_ht = at(1) - 1;
			CHECK_EQ_STR(scan_str(&sp), "");
			buf_free(&want);
		}
		ctx_close();
	}
}

/* Every combination of equality prefix and bounds, against the filter. */
TEST(bounds_brute_force)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool d1 = cfg & 1, d2 = cfg & 2;
		struct buf want = BUF_INIT, got = BUF_INIT;
		scan_table("sc-bounds", d1, d2);
		load_grid(at(1));
		/* Bounds on r2 under r1 = R1[eq] (or a missing r1 value). */
		static const int eqs[] = {0, 2, 4, -2};
		for (size_t e = 0; e < sizeof eqs / sizeof eqs[0]; e++)
			for (int lo = -1; lo < NB2; lo++)
				for (int hi = -1; hi < NB2; hi++)
					for (int flags = 0; flags < 8; flags++) {
						struct filter fl = {d1, d2, flags & 4, eqs[e] >= 0 ? eqs[e] : -1,
								    eqs[e] < 0, true, lo, hi, flags & 1,
								    flags & 2};
						struct scan_spec sp;
						struct pv hk, eq, lov, hiv;
						if ((lo < 0 && (flags & 1)) || (hi < 0 && (flags & 2)))
							continue;
						spec_for(&sp, &fl, &hk, &eq, &lov, &hiv, at(1));
						expected(&fl, cell_alive_all, cell_v_grid, &want);
						int rv = scan_all(&sp, &got, NULL);
						CHECK_MSG(rv == 0, "%s: rv %d (%s)", filter_text(&fl), rv,
							  C.f.errmsg);
						CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
							  "%s:\n  got  %s\n  want %s", filter_text(&fl),
							  buf_cstr(&got), buf_cstr(&want));
						/* The same paged by 2. */
						if ((lo + hi + flags) % 3 == 0) {
							sp.limit = 2;
							rv = scan_all(&sp, &got, NULL);
							CHECK_MSG(rv == 0 && strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
								  "%s limit 2:\n  got  %s\n  want %s",
								  filter_text(&fl), buf_cstr(&got), buf_cstr(&want));
						}
					}
		/* Bounds on r1 (no equality prefix). */
		for (int lo = -1; lo < NB1; lo++)
			for (int hi = -1; hi < NB1; hi++)
				for (int flags = 0; flags < 8; flags++) {
					struct filter fl = {d1, d2, flags & 4, -1, false, false, lo, hi,
							    flags & 1, flags & 2};
					struct scan_spec sp;
					struct pv hk, eq, lov, hiv;
					if ((lo < 0 && (flags & 1)) || (hi < 0 && (flags & 2)))
						continue;
					spec_for(&sp, &fl, &hk, &eq, &lov, &hiv, at(1));
					expected(&fl, cell_alive_all, cell_v_grid, &want);
					int rv = scan_all(&sp, &got, NULL);
					CHECK_MSG(rv == 0, "%s: rv %d (%s)", filter_text(&fl), rv, C.f.errmsg);
					CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
						  "%s:\n  got  %s\n  want %s", filter_text(&fl), buf_cstr(&got),
						  buf_cstr(&want));
					if ((lo + hi + flags) % 4 == 0) {
						sp.limit = 3;
						rv = scan_all(&sp, &got, NULL);
						CHECK_MSG(rv == 0 && strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
							  "%s limit 3:\n  got  %s\n  want %s", filter_text(&fl),
							  buf_cstr(&got), buf_cstr(&want));
					}
				}
		/* Full equality (point lookup through a scan). */
		for (int i = 0; i < N1; i++)
			for (int j = 0; j < N2; j++) {
				struct pv hk = pv_str("p"), eq[2] = {pv_int32(R1[i]), pv_strn(R2[j].s, R2[j].n)};
				struct scan_spec sp;
				char w[32];
				memset(&sp, 0, sizeof sp);
				sp.read_ht = at(1);
				sp.hash_key = &hk;
				sp.n_hash = 1;
				sp.range_eq = eq;
				sp.n_eq = 2;
				snprintf(w, sizeof w, "%d.%d=%d ", i, j, 100 * i + j);
				CHECK_EQ_STR(scan_str(&sp), w);
			}
		buf_free(&want);
		buf_free(&got);
		ctx_close();
	}
}

/* Every limit, forward and reverse, with and without bounds: the pages put
 * together equal the unpaged scan. */
TEST(paging_equals_unpaged)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool d1 = cfg & 1, d2 = cfg & 2;
		struct buf want = BUF_INIT, got = BUF_INIT;
		scan_table("sc-paging", d1, d2);
		load_grid(at(1));
		static const struct filter shapes[] = {
			{0, 0, 0, -1, false, false, -1, -1, false, false},
			{0, 0, 0, -1, false, false, 1, 6, true, false},
			{0, 0, 0, 2, false, true, 1, 6, false, true},
			{0, 0, 0, 3, false, false, -1, -1, false, false},
		};
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int rev = 0; rev < 2; rev++)
				for (size_t limit = 1; limit <= 27; limit += (limit < 8 ? 1 : 9)) {
					struct filter fl = shapes[s];
					struct scan_spec sp;
					struct pv hk, eq, lo, hi;
					int n = 0;
					fl.desc1 = d1;
					fl.desc2 = d2;
					fl.reverse = rev;
					spec_for(&sp, &fl, &hk, &eq, &lo, &hi, at(1));
					expected(&fl, cell_alive_all, cell_v_grid, &want);
					sp.limit = limit;
					CHECK_OK_MSG(scan_all(&sp, &got, &n), C.f.errmsg);
					CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
						  "%s limit %zu:\n  got  %s\n  want %s", filter_text(&fl), limit,
						  buf_cstr(&got), buf_cstr(&want));
				}
		buf_free(&want);
		buf_free(&got);
		ctx_close();
	}
}

/* After the first page, rows are deleted, inserted (before and after the
 * cursor) and updated; the rest of the pages still read at the original
 * time, even when the caller passes a newer read time. */
TEST(paging_keeps_read_time)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool d1 = cfg & 1, d2 = cfg & 2;
		for (int rev = 0; rev < 2; rev++) {
			struct filter fl = {d1, d2, rev, -1, false, false, -1, -1, false, false};
			struct scan_spec sp;
			struct pv hk, eq, lo, hi;
			struct buf want = BUF_INIT, got = BUF_INIT, state = BUF_INIT;
			struct row *rows;
			size_t nrows;
			scan_table("sc-pagetime", d1, d2);
			load_grid(at(1));
			spec_for(&sp, &fl, &hk, &eq, &lo, &hi, at(1));
			expected(&fl, cell_alive_all, cell_v_grid, &want);
			sp.limit = 4;
			CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &state,
						 C.f.errmsg), C.f.errmsg);
			CHECK_EQ_INT(nrows, 4);
			CHECK(state.len > 0);
			buf_reset(&got);
			for (size_t k = 0; k < nrows; k++) {
				int c = cell_of(&rows[k]);
				buf_printf(&got, "%d.%d=%d ", c / N2, c % N2,
					   row_column_named(&rows[k], "v")->value.v.i32);
			}
			/* Later writes: delete every row, insert new ones, update. */
			for (int i = 0; i < N1; i++)
				for (int j = 0; j < N2; j++) {
					struct pv key[3] = {pv_str("p"), pv_int32(R1[i]), pv_strn(R2[j].s, R2[j].n)};
					if ((i + j) % 2)
						OK(docwrite_delete_row(&C.w, key, 3));
					else {
						struct colval c = colval_of("v", pv_int32(-1));
						OK(docwrite_update(&C.w, key, 3, &c, 1, DOCWRITE_NO_TTL));
					}
				}
			put_row("p", 1, "new", 3, -2, DOCWRITE_NO_TTL);
			put_row("p", INT32_MIN, "zzz", 3, -3, DOCWRITE_NO_TTL);
			put_row("p", INT32_MAX, "", 0, -4, DOCWRITE_NO_TTL);
			apply(at(2));
			/* Continue with the state, passing the newer read time. */
			sp.read_ht = at(2);
			sp.paging = state.data;
			sp.paging_len = state.len;
			struct buf rest = BUF_INIT;
			CHECK_OK_MSG(scan_all(&sp, &rest, NULL), C.f.errmsg);
			buf_append(&got, rest.data, rest.len);
			CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
				  "%s:\n  got  %s\n  want %s", filter_text(&fl), buf_cstr(&got),
				  buf_cstr(&want));
			/* A new scan at the new time sees the new data. */
			sp.paging = NULL;
			sp.paging_len = 0;
			sp.limit = 0;
			CHECK_OK_MSG(scan_all(&sp, &got, NULL), C.f.errmsg);
			CHECK(strstr(buf_cstr(&got), "=-1 ") != NULL);
			CHECK(strstr(buf_cstr(&got), "other=-2 ") != NULL);
			CHECK(strstr(buf_cstr(&got), "other=-3 ") != NULL);
			CHECK(strstr(buf_cstr(&got), "4.0=-4 ") != NULL); /* overwrote a grid row */
			buf_free(&rest);
			buf_free(&want);
			buf_free(&got);
			buf_free(&state);
			ctx_close();
		}
	}
}

static bool alive_sparse(int i, int j)
{
	int c = i * N2 + j;
	return !(c == 1 || c == 2 || c == 3 || c == 6 || c == 7 || c == 12 || c == 18 || c == 19 ||
		 c == 20 || c == 21 || c == 22 || c == 23 || c == 24);
}

/* Deleted rows (row delete, every column deleted on an UPDATE-only row) and
 * expired rows are skipped and do not count toward the limit. */
TEST(dead_rows_skipped_and_not_counted)
{
	for (int cfg = 0; cfg < 4; cfg++) {
		bool d1 = cfg & 1, d2 = cfg & 2;
		struct buf want = BUF_INIT, got = BUF_INIT;
		scan_table("sc-dead", d1, d2);
		/* Every grid cell: live ones by INSERT; dead ones in various ways. */
		int kind = 0;
		for (int i = 0; i < N1; i++)
			for (int j = 0; j < N2; j++) {
				struct pv key[3] = {pv_str("p"), pv_int32(R1[i]), pv_strn(R2[j].s, R2[j].n)};
				struct colval c = colval_of("v", pv_int32(100 * i + j));
				if (alive_sparse(i, j)) {
					OK(docwrite_insert(&C.w, key, 3, &c, 1, kind++ % 2 ? DOCWRITE_NO_TTL : 0));
					continue;
				}
				switch (kind++ % 4) {
				case 0: /* inserted with a TTL that expires */
					OK(docwrite_insert(&C.w, key, 3, &c, 1, 5000));
					break;
				case 1: /* inserted, then the row deleted (later batch) */
					OK(docwrite_insert(&C.w, key, 3, &c, 1, DOCWRITE_NO_TTL));
					break;
				case 2: /* UPDATE-only row, column deleted later */
					OK(docwrite_update(&C.w, key, 3, &c, 1, DOCWRITE_NO_TTL));
					break;
				default: /* UPDATE-only row with a TTL */
					OK(docwrite_update(&C.w, key, 3, &c, 1, 2000));
					break;
				}
			}
		apply(at(1));
		kind = 0;
		for (int i = 0; i < N1; i++)
			for (int j = 0; j < N2; j++) {
				struct pv key[3] = {pv_str("p"), pv_int32(R1[i]), pv_strn(R2[j].s, R2[j].n)};
				if (alive_sparse(i, j)) {
					kind++;
					continue;
				}
				switch (kind++ % 4) {
				case 1: OK(docwrite_delete_row(&C.w, key, 3)); break;
				case 2: OK(docwrite_delete_column(&C.w, key, 3, "v")); break;
				default: break;
				}
			}
		apply(at(2));
		for (int rev = 0; rev < 2; rev++)
			for (size_t limit = 0; limit <= 4; limit++) {
				struct filter fl = {d1, d2, rev, -1, false, false, -1, -1, false, false};
				struct scan_spec sp;
				struct pv hk, eq, lo, hi;
				struct buf state = BUF_INIT;
				struct row *rows;
				size_t nrows;
				int total = 0;
				spec_for(&sp, &fl, &hk, &eq, &lo, &hi, at(10));
				expected(&fl, alive_sparse, cell_v_grid, &want);
				sp.limit = limit;
				CHECK_OK_MSG(scan_all(&sp, &got, &total), C.f.errmsg);
				CHECK_MSG(strcmp(buf_cstr(&got), buf_cstr(&want)) == 0,
					  "%s limit %zu:\n  got  %s\n  want %s", filter_text(&fl), limit,
					  buf_cstr(&got), buf_cstr(&want));
				CHECK_EQ_INT(total, 12);
				/* Full pages until the rows run out: dead rows do not
				 * make a page short. */
				if (limit > 0) {
					int pages = 0, seen = 0;
					for (;;) {
						struct buf next = BUF_INIT;
						sp.paging = state.len ? state.data : NULL;
						sp.paging_len = state.len;
						CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows,
									 &nrows, &next, C.f.errmsg),
							     C.f.errmsg);
						seen += (int)nrows;
						if (seen < 12)
							CHECK_MSG(nrows == limit, "page %d: %zu rows, limit %zu",
								  pages, nrows, limit);
						buf_reset(&state);
						buf_append(&state, next.data, next.len);
						buf_free(&next);
						if (state.len == 0)
							break;
						CHECK(++pages < 50);
					}
					CHECK_EQ_INT(seen, 12);
				}
				buf_free(&state);
			}
		/* At time 1 (before deletes, before expiry) everything is there. */
		{
			struct filter fl = {d1, d2, false, -1, false, false, -1, -1, false, false};
			struct scan_spec sp;
			struct pv hk, eq, lo, hi;
			spec_for(&sp, &fl, &hk, &eq, &lo, &hi, at(1));
			expected(&fl, cell_alive_all, cell_v_grid, &want);
			sp.limit = 5;
			CHECK_OK_MSG(scan_all(&sp, &got, NULL), C.f.errmsg);
			CHECK_EQ_STR(buf_cstr(&got), buf_cstr(&want));
		}
		buf_free(&want);
		buf_free(&got);
		ctx_close();
	}
}

/* hash_key NULL: every live row of the store, in DocKey byte order. */
TEST(whole_store_scan)
{
	scan_table("sc-whole", false, true);
	load_grid(at(1));
	/* Delete one row of "q" and one grid row. */
	struct pv kq[3] = {pv_str("q"), pv_int32(0), pv_str("a")};
	struct pv kp[3] = {pv_str("p"), pv_int32(0), pv_str("ab")};
	OK(docwrite_delete_row(&C.w, kq, 3));
	OK(docwrite_delete_row(&C.w, kp, 3));
	apply(at(2));
	/* Expected: every live row's DocKey, sorted bytewise. */
	struct {
		uint8_t k[64];
		size_t n;
		int32_t v;
	} exp[N1 * N2 + 4];
	int nexp = 0;
	for (int i = 0; i < N1; i++)
		for (int j = 0; j < N2; j++) {
			struct pv key[3] = {pv_str("p"), pv_int32(R1[i]), pv_strn(R2[j].s, R2[j].n)};
			struct buf b = BUF_INIT;
			if (R1[i] == 0 && j == 3)
				continue;
			CHECK_OK(docwrite_dockey(&C.s, key, 3, &b, C.f.errmsg));
			memcpy(exp[nexp].k, b.data, b.len);
			exp[nexp].n = b.len;
			exp[nexp++].v = 100 * i + j;
			buf_free(&b);
		}
	{
		struct {
			const char *h;
			int32_t r1;
			const char *r2;
			int32_t v;
		} extra[3] = {{"q", 5, "z", 9002}, {COLLIDER, 0, "a", 9101}, {COLLIDER, 7, "", 9102}};
		for (int e = 0; e < 3; e++) {
			struct pv key[3] = {pv_str(extra[e].h), pv_int32(extra[e].r1), pv_str(extra[e].r2)};
			struct buf b = BUF_INIT;
			CHECK_OK(docwrite_dockey(&C.s, key, 3, &b, C.f.errmsg));
			memcpy(exp[nexp].k, b.data, b.len);
			exp[nexp].n = b.len;
			exp[nexp++].v = extra[e].v;
			buf_free(&b);
		}
	}
	for (int a = 1; a < nexp; a++)
		for (int b = a; b > 0; b--) {
			size_t n = exp[b - 1].n < exp[b].n ? exp[b - 1].n : exp[b].n;
			int c = memcmp(exp[b - 1].k, exp[b].k, n);
			if (c > 0 || (c == 0 && exp[b - 1].n > exp[b].n)) {
				__typeof__(exp[0]) tmp = exp[b - 1];
				exp[b - 1] = exp[b];
				exp[b] = tmp;
			}
		}
	for (int rev = 0; rev < 2; rev++)
		for (size_t limit = 0; limit <= 30; limit += limit < 5 ? 1 : 25) {
			struct scan_spec sp;
			struct buf state = BUF_INIT, next = BUF_INIT;
			int k = 0;
			memset(&sp, 0, sizeof sp);
			sp.read_ht = at(2);
			sp.reverse = rev;
			sp.limit = limit;
			for (int pages = 0;; pages++) {
				struct row *rows;
				size_t nrows;
				sp.paging = state.len ? state.data : NULL;
				sp.paging_len = state.len;
				buf_reset(&next);
				CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &next,
							 C.f.errmsg), C.f.errmsg);
				for (size_t r = 0; r < nrows; r++, k++) {
					int idx = rev ? nexp - 1 - k : k;
					struct buf b = BUF_INIT;
					CHECK_MSG(k < nexp, "rev %d limit %zu: more rows than expected", rev, limit);
					CHECK_OK(docwrite_dockey(&C.s, rows[r].key, 3, &b, C.f.errmsg));
					CHECK_MSG(b.len == exp[idx].n && memcmp(b.data, exp[idx].k, b.len) == 0,
						  "rev %d limit %zu: row %d has another key", rev, limit, k);
					CHECK_EQ_INT(row_column_named(&rows[r], "v")->value.v.i32, exp[idx].v);
					buf_free(&b);
				}
				if (next.len == 0)
					break;
				CHECK(pages < 100);
				buf_reset(&state);
				buf_append(&state, next.data, next.len);
			}
			CHECK_MSG(k == nexp, "rev %d limit %zu: %d rows, want %d", rev, limit, k, nexp);
			buf_free(&state);
			buf_free(&next);
		}
	ctx_close();
}

/* Hash-only and range-only tables. */
TEST(hash_only_and_range_only_tables)
{
	/* Hash only: one row per hash key. */
	ctx_open("sc-hashonly", "ho");
	col("h", COL_HASH, CT_INT64, false);
	col("v", COL_REGULAR, CT_INT32, false);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	for (int i = 0; i < 20; i++) {
		struct pv k = pv_int64(i - 10);
		struct colval c = colval_of("v", pv_int32(i));
		OK(docwrite_insert(&C.w, &k, 1, &c, 1, DOCWRITE_NO_TTL));
	}
	apply(at(1));
	for (int i = 0; i < 20; i++) {
		struct pv k = pv_int64(i - 10);
		struct scan_spec sp;
		struct row *rows;
		size_t nrows;
		memset(&sp, 0, sizeof sp);
		sp.read_ht = at(1);
		sp.hash_key = &k;
		sp.n_hash = 1;
		CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
			     C.f.errmsg);
		CHECK_EQ_INT(nrows, 1);
		CHECK_EQ_INT(rows[0].key[0].v.i64, i - 10);
		CHECK_EQ_INT(row_column_named(&rows[0], "v")->value.v.i32, i);
		/* No range columns: no range conditions. */
		struct pv b = pv_int32(1);
		sp.lower = &b;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
			     DOCRAFT_EINVAL);
	}
	{
		struct scan_spec sp;
		struct buf out = BUF_INIT;
		int n = 0;
		memset(&sp, 0, sizeof sp);
		sp.read_ht = at(1);
		sp.limit = 3;
		CHECK_OK_MSG(scan_all(&sp, &out, &n), C.f.errmsg);
		CHECK_EQ_INT(n, 20);
		sp.reverse = true;
		CHECK_OK_MSG(scan_all(&sp, &out, &n), C.f.errmsg);
		CHECK_EQ_INT(n, 20);
		buf_free(&out);
	}
	ctx_close();

	/* Range only (no hash columns): whole-store scans in range order. */
	ctx_open("sc-rangeonly", "ro");
	col("r", COL_RANGE, CT_TEXT, true);
	col("v", COL_REGULAR, CT_INT32, false);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	for (int j = 0; j < N2; j++) {
		struct pv k = pv_strn(R2[j].s, R2[j].n);
		struct colval c = colval_of("v", pv_int32(j));
		OK(docwrite_insert(&C.w, &k, 1, &c, 1, DOCWRITE_NO_TTL));
	}
	apply(at(1));
	for (int rev = 0; rev < 2; rev++)
		for (size_t limit = 0; limit <= 2; limit++) {
			struct scan_spec sp;
			struct buf state = BUF_INIT, next = BUF_INIT;
			int k = 0;
			memset(&sp, 0, sizeof sp);
			sp.read_ht = at(1);
			sp.reverse = rev;
			sp.limit = limit;
			for (;;) {
				struct row *rows;
				size_t nrows;
				sp.paging = state.len ? state.data : NULL;
				sp.paging_len = state.len;
				buf_reset(&next);
				CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &next,
							 C.f.errmsg), C.f.errmsg);
				for (size_t r = 0; r < nrows; r++, k++) {
					/* DESC: b, ab, a\0, a, "" ; reverse the other way. */
					int want = rev ? k : N2 - 1 - k;
					CHECK(k < N2);
					CHECK_EQ_INT(row_column_named(&rows[r], "v")->value.v.i32, want);
					CHECK(rows[r].key[0].v.s.len == R2[want].n);
				}
				if (next.len == 0)
					break;
				buf_reset(&state);
				buf_append(&state, next.data, next.len);
			}
			CHECK_EQ_INT(k, N2);
			buf_free(&state);
			buf_free(&next);
		}
	{
		struct pv k = pv_str("a");
		struct scan_spec sp;
		struct row *rows;
		size_t nrows;
		memset(&sp, 0, sizeof sp);
		sp.read_ht = at(1);
		sp.hash_key = &k; /* the table has no hash columns */
		sp.n_hash = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
			     DOCRAFT_EINVAL);
	}
	ctx_close();
}

/* A composite hash key (text, bigint): scans need both values; rows of
 * keys sharing one component are not mixed up. */
TEST(composite_hash_key)
{
	ctx_open("sc-composite", "comp");
	col("h1", COL_HASH, CT_TEXT, false);
	col("h2", COL_HASH, CT_INT64, false);
	col("r", COL_RANGE, CT_INT32, true);
	col("v", COL_REGULAR, CT_INT32, false);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	static const char *h1s[3] = {"a", "a\0", "b"};
	static const size_t h1n[3] = {1, 2, 1};
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			for (int r = 0; r < 4; r++) {
				struct pv key[3] = {pv_strn(h1s[a], h1n[a]), pv_int64(b - 1), pv_int32(r)};
				struct colval c = colval_of("v", pv_int32(a * 100 + b * 10 + r));
				OK(docwrite_insert(&C.w, key, 3, &c, 1, DOCWRITE_NO_TTL));
			}
	apply(at(1));
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			for (int rev = 0; rev < 2; rev++) {
				struct pv hk[2] = {pv_strn(h1s[a], h1n[a]), pv_int64(b - 1)};
				struct pv lo = pv_int32(1);
				struct scan_spec sp;
				struct row *rows;
				size_t nrows;
				memset(&sp, 0, sizeof sp);
				sp.read_ht = at(1);
				sp.hash_key = hk;
				sp.n_hash = 2;
				sp.reverse = rev;
				sp.lower = &lo;
				sp.lower_incl = true;
				CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL,
							 C.f.errmsg), C.f.errmsg);
				CHECK_EQ_INT(nrows, 3);
				for (size_t i = 0; i < nrows; i++) {
					int r = rev ? 1 + (int)i : 3 - (int)i; /* DESC */
					CHECK_EQ_INT(row_column_named(&rows[i], "v")->value.v.i32, a * 100 + b * 10 + r);
					CHECK(rows[i].key[0].v.s.len == h1n[a]);
					CHECK_EQ_INT(rows[i].key[1].v.i64, b - 1);
					CHECK_EQ_INT(rows[i].key[2].v.i32, r);
				}
				sp.n_hash = 1;
				CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL,
							 C.f.errmsg), DOCRAFT_EINVAL);
			}
	ctx_close();
}

/* A paging state of a finished scan: paging_out must come back empty even
 * when the caller passes the buffer that held the previous state (the
 * natural "state = next" loop). */
TEST(last_page_empties_paging_out)
{
	scan_table("sc-lastpage", false, false);
	load_grid(at(1));
	struct pv hk = pv_str("p"), eq = pv_int32(0);
	struct scan_spec sp;
	struct buf state = BUF_INIT;
	int rows_seen = 0, calls = 0;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(1);
	sp.hash_key = &hk;
	sp.n_hash = 1;
	sp.range_eq = &eq;
	sp.n_eq = 1;
	sp.limit = 2;
	do {
		struct row *rows;
		size_t nrows;
		struct buf copy = BUF_INIT;
		buf_append(&copy, state.data, state.len);
		sp.paging = copy.len ? copy.data : NULL;
		sp.paging_len = copy.len;
		CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &state, C.f.errmsg),
			     C.f.errmsg);
		buf_free(&copy);
		rows_seen += (int)nrows;
		calls++;
	} while (state.len > 0 && calls < 20);
	buf_free(&state);
	CHECK_MSG(calls < 20, "reader_scan left the previous paging state in paging_out on the last "
			      "page: the caller's loop never ends (%d rows seen)", rows_seen);
	CHECK_EQ_INT(rows_seen, N2);
	CHECK_EQ_INT(calls, 3);
	ctx_close();
}

/* Malformed paging states, states of other scans, bad specs. */
TEST(bad_paging_and_specs)
{
	scan_table("sc-bad", true, false);
	load_grid(at(1));
	struct pv hk = pv_str("p"), hq = pv_str("q"), eq = pv_int32(7), lo = pv_str("a");
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	struct buf state = BUF_INIT;
	char err[DOCRAFT_ERRMSG_SIZE];
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(1);
	sp.hash_key = &hk;
	sp.n_hash = 1;
	sp.limit = 3;
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &state, C.f.errmsg),
		     C.f.errmsg);
	CHECK(state.len >= 10);

	/* Truncations, extensions, bad version byte, flipped bytes. */
	uint8_t buf[256];
	CHECK(state.len + 1 < sizeof buf);
	for (size_t n = 1; n < state.len; n++) {
		memcpy(buf, state.data, n);
		sp.paging = buf;
		sp.paging_len = n;
		int rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
		CHECK_MSG(rv == DOCRAFT_EINVAL || (rv == 0 && n >= 9),
			  "state cut to %zu bytes: rv %d", n, rv);
		if (n < 10)
			CHECK_MSG(rv == DOCRAFT_EINVAL, "state cut to %zu bytes: rv %d", n, rv);
	}
	memcpy(buf, state.data, state.len);
	buf[state.len] = '!';
	sp.paging = buf;
	sp.paging_len = state.len + 1;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	memcpy(buf, state.data, state.len);
	buf[0] = 0x02;
	sp.paging_len = state.len;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	/* Read time 0 and HT_MAX in a state. */
	memcpy(buf, state.data, state.len);
	memset(buf + 1, 0, 8);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	memset(buf + 1, 0xff, 8);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	/* A well-formed state of another read time (a later one: it would read
	 * writes the caller's time does not cover). */
	memcpy(buf, state.data, state.len);
	for (int i = 0; i < 8; i++)
		buf[1 + i] = (uint8_t)(at(2) >> (56 - 8 * i));
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(err, "is later than the read time") != NULL, "%s", err);
	/* The same state at its own time resumes. */
	sp.read_ht = at(2);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), err);
	sp.read_ht = at(1);
	/* Every single-byte corruption and random garbage: an error or a
	 * result, never a crash (ASan run). */
	uint64_t rng = 12345;
	for (size_t pos = 0; pos < state.len; pos++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(buf, state.data, state.len);
			buf[pos] ^= (uint8_t)(1u << bit);
			sp.paging = buf;
			sp.paging_len = state.len;
			int rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
			CHECK_MSG(rv == 0 || rv == DOCRAFT_EINVAL, "flip %zu.%d: rv %d (%s)", pos, bit, rv, err);
		}
	for (int i = 0; i < 2000; i++) {
		size_t n = test_rand(&rng) % 40;
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)test_rand(&rng);
		if (n > 0 && i % 2)
			buf[0] = 0x01;
		sp.paging = buf;
		sp.paging_len = n;
		sp.hash_key = i % 3 ? &hk : NULL;
		sp.n_hash = i % 3 ? 1 : 0;
		sp.reverse = i % 5 == 0;
		int rv = reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err);
		CHECK_MSG(rv == 0 || rv == DOCRAFT_EINVAL, "garbage %d: rv %d (%s)", i, rv, err);
		arena_reset(&C.f.arena);
	}
	sp.hash_key = &hk;
	sp.n_hash = 1;
	sp.reverse = false;

	/* A state from another hash key's scan. */
	{
		struct scan_spec q;
		struct buf qs = BUF_INIT;
		memset(&q, 0, sizeof q);
		q.read_ht = at(1);
		q.hash_key = &hq;
		q.n_hash = 1;
		q.limit = 1;
		CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &q, &C.f.arena, &rows, &nrows, &qs, C.f.errmsg),
			     C.f.errmsg);
		CHECK(qs.len > 0);
		sp.paging = qs.data;
		sp.paging_len = qs.len;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		sp.reverse = true;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		sp.reverse = false;
		/* ... and the state of "p" used in a scan of "q". */
		q.paging = state.data;
		q.paging_len = state.len;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &q, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		/* ... and of the colliding hash key (same 16-bit hash as "p"). */
		struct pv hc = pv_str(COLLIDER);
		q.hash_key = &hc;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &q, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		buf_free(&qs);
	}
	/* A state from a scan of "p" (first rows: r1 = INT32_MAX, DESC) used
	 * in a scan restricted to r1 = 7. */
	{
		struct scan_spec e = sp;
		e.paging = state.data;
		e.paging_len = state.len;
		e.range_eq = &eq;
		e.n_eq = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.reverse = true;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
	}

	/* Range conditions without the full hash key. */
	{
		struct scan_spec e;
		memset(&e, 0, sizeof e);
		e.read_ht = at(1);
		e.range_eq = &eq;
		e.n_eq = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.n_eq = 0;
		e.range_eq = NULL;
		e.lower = &eq;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.lower = NULL;
		e.upper = &eq;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		/* n_hash given, hash_key NULL, no conditions: a whole-store scan. */
		/* Wrong number of hash values. */
		e.upper = NULL;
		e.hash_key = &hk;
		e.n_hash = 0;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		struct pv two[2] = {pv_str("p"), pv_str("x")};
		e.hash_key = two;
		e.n_hash = 2;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		/* Wrong types, NULLs, too many conditions. */
		struct pv wrong = pv_int32(1), null = pv_null();
		e.hash_key = &wrong;
		e.n_hash = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.hash_key = &null;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.hash_key = &hk;
		e.range_eq = &lo; /* text for the int r1 */
		e.n_eq = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.range_eq = &eq;
		e.lower = &eq; /* int for the text r2 */
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.lower = &null;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.lower = NULL;
		e.upper = &wrong;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		struct pv eq3[3] = {pv_int32(7), pv_str("a"), pv_str("b")};
		e.upper = NULL;
		e.range_eq = eq3;
		e.n_eq = 3;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.n_eq = 2;
		e.lower = &lo; /* bounds after a full equality */
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_EINVAL);
		e.lower = NULL;
		CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &e, &C.f.arena, &rows, &nrows, NULL, err), err);
		CHECK_EQ_INT(nrows, 1);
	}
	buf_free(&state);
	ctx_close();
}

/* Scans below the history cutoff, also through a paging state whose read
 * time the cutoff has passed since. */
TEST(history_cutoff)
{
	scan_table("sc-cutoff", false, false);
	load_grid(at(1));
	struct pv hk = pv_str("p");
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	struct buf state = BUF_INIT;
	char err[DOCRAFT_ERRMSG_SIZE];
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(2);
	sp.hash_key = &hk;
	sp.n_hash = 1;
	sp.limit = 5;
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &state, err), err);
	CHECK_EQ_INT(nrows, 5);
	CHECK(state.len > 0);
	store_set_history_cutoff(C.f.s, at(3));
	sp.paging = state.data;
	sp.paging_len = state.len;
	sp.read_ht = at(4);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_ETOOOLD);
	sp.paging = NULL;
	sp.paging_len = 0;
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), err);
	sp.read_ht = at(2);
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_ETOOOLD);
	sp.hash_key = NULL;
	sp.n_hash = 0;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_ETOOOLD);
	sp.read_ht = at(3);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), err);
	sp.read_ht = 0;
	CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err), DOCRAFT_EINVAL);
	buf_free(&state);
	ctx_close();
}

/* Many rows in one hash key (several SST files and the memtable), with
 * updates and deletes spread over time; paged scans at several times. */
TEST(many_rows_over_time)
{
	ctx_open("sc-many", "many");
	col("h", COL_HASH, CT_TEXT, false);
	col("r", COL_RANGE, CT_INT64, true);
	col("v", COL_REGULAR, CT_INT64, false);
	docwrite_init(&C.w, &C.s, &C.b, NULL);
	enum { NROW = 600 };
	static int64_t val[4][NROW]; /* value at time step, 0 = absent */
	memset(val, 0, sizeof val);
	uint64_t rng = 99;
	for (int step = 0; step < 4; step++) {
		if (step > 0)
			memcpy(val[step], val[step - 1], sizeof val[step]);
		for (int i = 0; i < NROW; i++) {
			struct pv key[2] = {pv_str("hk"), pv_int64(i * 3 - 900)};
			uint64_t x = test_rand(&rng) % 4;
			if (step == 0 || x == 0) {
				int64_t v = step * 10000 + i + 1;
				struct colval c = colval_of("v", pv_int64(v));
				OK(docwrite_insert(&C.w, key, 2, &c, 1, DOCWRITE_NO_TTL));
				val[step][i] = v;
			} else if (x == 1) {
				OK(docwrite_delete_row(&C.w, key, 2));
				val[step][i] = 0;
			}
		}
		apply(at(10 + step));
		if (step < 3)
			CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
	}
	struct pv hk = pv_str("hk");
	for (int step = 0; step < 4; step++)
		for (int rev = 0; rev < 2; rev++) {
			struct scan_spec sp;
			struct buf state = BUF_INIT, next = BUF_INIT;
			int k = 0;
			memset(&sp, 0, sizeof sp);
			sp.read_ht = at(10 + step);
			sp.hash_key = &hk;
			sp.n_hash = 1;
			sp.reverse = rev;
			sp.limit = 37;
			/* Expected: DESC r, i.e. i from NROW-1 down (reverse: up). */
			int idx = rev ? 0 : NROW - 1;
			for (;;) {
				struct row *rows;
				size_t nrows;
				sp.paging = state.len ? state.data : NULL;
				sp.paging_len = state.len;
				buf_reset(&next);
				CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, &next,
							 C.f.errmsg), C.f.errmsg);
				for (size_t r = 0; r < nrows; r++) {
					while (idx >= 0 && idx < NROW && val[step][idx] == 0)
						idx += rev ? 1 : -1;
					CHECK_MSG(idx >= 0 && idx < NROW, "step %d rev %d: extra row", step, rev);
					CHECK_MSG(rows[r].key[1].v.i64 == idx * 3 - 900,
						  "step %d rev %d: row key %lld, want %d", step, rev,
						  (long long)rows[r].key[1].v.i64, idx * 3 - 900);
					CHECK_EQ_INT(row_column_named(&rows[r], "v")->value.v.i64, val[step][idx]);
					idx += rev ? 1 : -1;
					k++;
				}
				arena_reset(&C.f.arena);
				if (next.len == 0)
					break;
				buf_reset(&state);
				buf_append(&state, next.data, next.len);
			}
			while (idx >= 0 && idx < NROW && val[step][idx] == 0)
				idx += rev ? 1 : -1;
			CHECK_MSG(idx < 0 || idx >= NROW, "step %d rev %d: rows missing after %d", step, rev, k);
			buf_free(&state);
			buf_free(&next);
		}
	ctx_close();
}

TEST_MAIN(T(order_forward_reverse_asc_desc), T(bounds_brute_force), T(paging_equals_unpaged),
	  T(paging_keeps_read_time), T(dead_rows_skipped_and_not_counted), T(whole_store_scan),
	  T(hash_only_and_range_only_tables), T(composite_hash_key), T(last_page_empties_paging_out),
	  T(bad_paging_and_specs), T(history_cutoff), T(many_rows_over_time))
