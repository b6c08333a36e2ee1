/* What each row operation puts in the batch, shown in dump notation (keys
 * in a batch carry no hybrid time yet), and that a failed operation leaves
 * the batch untouched. */
#include <string.h>

#include "docdb/key.h"
#include "fixture.h"

struct t {
	struct schema s;
	struct batch b;
	struct docwrite w;
	int64_t counter;
	struct buf out;
};

static void setup(struct t *t)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	memset(t, 0, sizeof *t);
	CHECK_OK(schema_init(&t->s, "t", err));
	CHECK_OK(schema_add(&t->s, "h", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add_column(&t->s, "r", COL_RANGE, CT_INT64, 0, 0, true, err));
	CHECK_OK(schema_add(&t->s, "v", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add_column(&t->s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_TEXT, false, err));
	CHECK_OK(schema_add_column(&t->s, "st", COL_REGULAR, CT_SET, CT_INT32, 0, false, err));
	CHECK_OK(schema_add_column(&t->s, "l", COL_REGULAR, CT_LIST, CT_TEXT, 0, false, err));
	batch_init(&t->b);
	t->counter = 100;
	docwrite_init(&t->w, &t->s, &t->b, &t->counter);
	buf_init(&t->out);
}

static void teardown(struct t *t)
{
	docwrite_free(&t->w);
	batch_free(&t->b);
	schema_free(&t->s);
	buf_free(&t->out);
}

/* The batch as dump lines, hash shown as H; resets the batch. */
static const char *batch_text(struct t *t)
{
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl;
	struct dump_opts o = {&t->s, NULL, NULL, NULL, false, false};
	buf_reset(&t->out);
	batch_iter_init(&it, t->b.data.data, t->b.data.len);
	while (batch_next(&it, &k, &kl, &v, &vl) == 1)
		dump_pair(k, kl, v, vl, &o, &t->out);
	batch_reset(&t->b);
	/* Replace the numeric hash with H for readability. */
	char *s = (char *)buf_cstr(&t->out);
	for (char *p = s; (p = strstr(p, "(0x")) != NULL;)
		memmove(p + 2, p + 7, strlen(p + 7) + 1), p[1] = 'H', p += 2;
	return s;
}

TEST(insert_update_delete)
{
	struct t t;
	setup(&t);
	struct pv key[2] = {pv_str("a"), pv_int64(7)};
	struct pv mk[1] = {pv_str("x")}, mv[1] = {pv_str("y")};
	struct pv se[2] = {pv_int32(3), pv_int32(1)};
	struct colval cols[3] = {colval_of("v", pv_int32(5)), colval_map("m", mk, mv, 1),
				 colval_elems("st", se, 2)};
	CHECK_OK_MSG(docwrite_insert(&t.w, key, 2, cols, 3, 60000), t.w.errmsg);
	CHECK_EQ_STR(batch_text(&t),
		     "(H, 'a', 7), liveness_column_id -> (TTL = 60) [NULL]\n"
		     "(H, 'a', 7), v_column_id -> (TTL = 60) 5\n"
		     "(H, 'a', 7), m_column_id, 'x' -> (TTL = 60) 'y'\n"
		     "(H, 'a', 7), st_column_id, 3 -> (TTL = 60) [NULL]\n"
		     "(H, 'a', 7), st_column_id, 1 -> (TTL = 60) [NULL]\n");

	/* UPDATE: no liveness; NULL deletes; a collection value replaces. */
	struct colval up[2] = {colval_of("v", pv_null()), colval_map("m", mk, mv, 1)};
	CHECK_OK_MSG(docwrite_update(&t.w, key, 2, up, 2, DOCWRITE_NO_TTL), t.w.errmsg);
	CHECK_EQ_STR(batch_text(&t),
		     "(H, 'a', 7), v_column_id -> [DELETE]\n"
		     "(H, 'a', 7), m_column_id -> [DELETE]\n"
		     "(H, 'a', 7), m_column_id, 'x' -> 'y'\n");

	CHECK_OK(docwrite_delete_column(&t.w, key, 2, "m"));
	CHECK_OK(docwrite_delete_row(&t.w, key, 2));
	CHECK_OK(docwrite_map_remove(&t.w, key, 2, "m", mk, 1));
	CHECK_OK(docwrite_set_remove(&t.w, key, 2, "st", se, 1));
	CHECK_EQ_STR(batch_text(&t),
		     "(H, 'a', 7), m_column_id -> [DELETE]\n"
		     "(H, 'a', 7) -> [DELETE]\n"
		     "(H, 'a', 7), m_column_id, 'x' -> [DELETE]\n"
		     "(H, 'a', 7), st_column_id, 3 -> [DELETE]\n");
	teardown(&t);
}

TEST(list_indexes_without_reads)
{
	struct t t;
	setup(&t);
	struct pv key[2] = {pv_str("a"), pv_int64(1)};
	struct pv e[2] = {pv_str("p"), pv_str("q")};
	CHECK_OK(docwrite_list_append(&t.w, key, 2, "l", e, 2, DOCWRITE_NO_TTL));
	CHECK_OK(docwrite_list_prepend(&t.w, key, 2, "l", e, 2, DOCWRITE_NO_TTL));
	/* Append takes 101, 102; prepend gives p the smaller (more negative) index. */
	CHECK_EQ_STR(batch_text(&t),
		     "(H, 'a', 1), l_column_id, idx(101) -> 'p'\n"
		     "(H, 'a', 1), l_column_id, idx(102) -> 'q'\n"
		     "(H, 'a', 1), l_column_id, idx(-103) -> 'q'\n"
		     "(H, 'a', 1), l_column_id, idx(-104) -> 'p'\n");
	CHECK_EQ_INT(t.counter, 104);

	/* Without a counter list operations are refused. */
	struct docwrite w2;
	docwrite_init(&w2, &t.s, &t.b, NULL);
	CHECK_EQ_INT(docwrite_list_append(&w2, key, 2, "l", e, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL);
	CHECK_EQ_INT(t.b.count, 0);
	docwrite_free(&w2);
	teardown(&t);
}

/* Every error leaves the batch byte-identical. */
TEST(errors_roll_back)
{
	struct t t;
	setup(&t);
	struct pv key[2] = {pv_str("a"), pv_int64(1)};
	struct pv mk[2] = {pv_str("ok"), pv_int32(1)}, mv[2] = {pv_str("v"), pv_str("v")};
	CHECK_OK(docwrite_delete_row(&t.w, key, 2)); /* something already in the batch */
	size_t len = t.b.data.len;
	uint32_t count = t.b.count;
	struct {
		int rv;
		const char *needle;
	} r[12];
	int n = 0;
	struct colval bad_type = colval_of("v", pv_str("x"));
	struct colval unknown = colval_of("nope", pv_int32(1));
	struct colval keycol = colval_of("r", pv_int64(1));
	struct colval dup[2] = {colval_of("v", pv_int32(1)), colval_of("v", pv_int32(2))};
	struct colval map_bad = colval_map("m", mk, mv, 2);
	struct pv badkey[2] = {pv_null(), pv_int64(1)};
	static char big[DOCWRITE_MAX_VALUE + 1];
	struct pv bigv = pv_strn(big, sizeof big);
	struct pv bigk[2] = {pv_str("a"), pv_int64(1)};
	r[n].rv = docwrite_insert(&t.w, key, 2, &bad_type, 1, DOCWRITE_NO_TTL), r[n++].needle = "column 'v'";
	r[n].rv = docwrite_insert(&t.w, key, 2, &unknown, 1, DOCWRITE_NO_TTL), r[n++].needle = "no column 'nope'";
	r[n].rv = docwrite_update(&t.w, key, 2, &keycol, 1, DOCWRITE_NO_TTL), r[n++].needle = "primary key column";
	r[n].rv = docwrite_insert(&t.w, key, 2, dup, 2, DOCWRITE_NO_TTL), r[n++].needle = "given twice";
	r[n].rv = docwrite_insert(&t.w, key, 2, &map_bad, 1, DOCWRITE_NO_TTL), r[n++].needle = "element of 'm'";
	r[n].rv = docwrite_insert(&t.w, badkey, 2, NULL, 0, DOCWRITE_NO_TTL), r[n++].needle = "NULL";
	r[n].rv = docwrite_insert(&t.w, key, 1, NULL, 0, DOCWRITE_NO_TTL), r[n++].needle = "expected 2 primary key values";
	r[n].rv = docwrite_insert(&t.w, key, 2, NULL, 0, -5), r[n++].needle = "TTL";
	r[n].rv = docwrite_set_add(&t.w, key, 2, "m", mk, 1, DOCWRITE_NO_TTL), r[n++].needle = "not a set";
	r[n].rv = docwrite_update(&t.w, key, 2, NULL, 0, DOCWRITE_NO_TTL), r[n++].needle = "at least one column";
	struct colval bigc = colval_of("m", bigv);
	r[n].rv = docwrite_update(&t.w, bigk, 2, &bigc, 1, DOCWRITE_NO_TTL), r[n++].needle = "give its elements";
	struct colval l_bad = colval_elems("l", &bigv, 1);
	r[n].rv = docwrite_collection_replace(&t.w, key, 2, &l_bad, DOCWRITE_NO_TTL), r[n++].needle = "exceeds";
	for (int i = 0; i < n; i++) {
		CHECK_MSG(r[i].rv == DOCRAFT_EINVAL || r[i].rv == DOCRAFT_ETOOBIG, "case %d: rv %d", i,
			  r[i].rv);
	}
	/* The last message is the ETOOBIG one. */
	CHECK_EQ_INT(r[n - 1].rv, DOCRAFT_ETOOBIG);
	CHECK_MSG(strstr(t.w.errmsg, r[n - 1].needle) != NULL, "%s", t.w.errmsg);
	CHECK_EQ_INT(t.b.data.len, len);
	CHECK_EQ_INT(t.b.count, count);
	teardown(&t);
}

TEST(each_error_message)
{
	struct t t;
	setup(&t);
	struct pv key[2] = {pv_str("a"), pv_int64(1)};
	struct colval bad_type = colval_of("v", pv_str("x"));
	CHECK_EQ_INT(docwrite_insert(&t.w, key, 2, &bad_type, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(t.w.errmsg, "column 'v': expected int") != NULL, "%s", t.w.errmsg);
	struct colval unknown = colval_of("nope", pv_int32(1));
	CHECK_EQ_INT(docwrite_update(&t.w, key, 2, &unknown, 1, DOCWRITE_NO_TTL), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(t.w.errmsg, "table t has no column 'nope'") != NULL, "%s", t.w.errmsg);
	CHECK_EQ_INT(t.b.count, 0);
	teardown(&t);
}

TEST_MAIN(T(insert_update_delete), T(list_indexes_without_reads), T(errors_roll_back),
	  T(each_error_message))
