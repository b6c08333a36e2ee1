/* Packed rows (docdb-format.md §8; packed.c, the packed INSERT of
 * docwrite.c, the packed-row merge of builder.c, schema versions).
 *
 *   bytes          the §8.2 example byte for byte; encode/parse round trip
 *   seeds          the msgs example (seed 000/002) on a packed table: exact
 *                  layouts after each step and the same reads as unpacked
 *   merge          newer cells win over the packed row, older ones are
 *                  hidden, other columns and collections are not; column and
 *                  row deletes; same-batch order; write ids (§3.4)
 *   TTL            row TTL before 'z', per-column TTLs, inheritance, the
 *                  table default
 *   size limit     columns that do not fit go to separate cells (§8.4)
 *   schema         add / drop column: old packed rows stay readable through
 *                  their version; dropped columns are gone; ids not reused
 *   documents      reader_get_doc refuses packed rows, reader_get_table_doc
 *                  reads them
 *   bad data       malformed payloads give DOCRAFT_ECORRUPT (and a fuzz run
 *                  for ASan), corrupt stored rows fail reads
 *   differential   random operations on a packed and an unpacked table give
 *                  identical reads (replay with TEST_SEED=...)
 *
 * The whole read suites (test_reader, test_scan) also run on packed tables
 * (test_*_packed in meson). Like test_reader.c, each case keeps its store in
 * the global C so that a failed CHECK is cleaned up by the next case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/key.h"
#include "docdb/packed.h"
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

/* The second store of the differential test. */
static struct fx F2;
static bool F2_open;

static void at_exit(void)
{
	if (C.open) {
		test_tmpdir_remove(C.f.dir);
		C.open = false;
	}
	if (F2_open) {
		test_tmpdir_remove(F2.dir);
		F2_open = false;
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
	if (F2_open) {
		fx_close(&F2);
		F2_open = false;
	}
	memset(&C, 0, sizeof C);
	fx_open(&C.f, tag);
	batch_init(&C.b);
	C.open = true;
	CHECK_OK_MSG(schema_init(&C.s, table, err), err);
	C.s.packed = true;
	C.list_counter = 1000;
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

static void ready(void)
{
	docwrite_init(&C.w, &C.s, &C.b, &C.list_counter);
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

static void fmt_node(struct buf *out, const struct docnode *n)
{
	if (n == NULL) {
		buf_printf(out, "NULL");
		return;
	}
	if (n->kind == VAL_PRIMITIVE) {
		if (n->value.type == PV_STRING && n->value.v.s.len > 40)
			buf_printf(out, "<%zu bytes>", n->value.v.s.len);
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

/* "live a=1 b='x' m={...}" over the current regular columns ("live" when
 * the liveness column, or a packed row standing in for it, is visible), or
 * "not found". */
static const char *fmt_row(const struct row *r, bool found)
{
	static char out[4][1024];
	static int k;
	struct buf b = BUF_INIT;
	struct pv live = pv_liveness();
	k = (k + 1) % 4;
	if (!found) {
		snprintf(out[k], sizeof out[k], "not found");
		return out[k];
	}
	if (docnode_child(r->root, &live) != NULL)
		buf_printf(&b, "live");
	for (size_t i = schema_nkeys(r->schema); i < r->schema->ncols; i++) {
		const struct column *c = &r->schema->cols[i];
		buf_printf(&b, "%s%s=", b.len ? " " : "", c->name);
		fmt_node(&b, row_column(r, c));
	}
	snprintf(out[k], sizeof out[k], "%s", buf_cstr(&b));
	buf_free(&b);
	return out[k];
}

static const char *row_key_at(const struct pv *key, size_t nkey, uint64_t ht)
{
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, key, nkey, ht, &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	return fmt_row(&r, found);
}

static const char *row_at(const char *k, uint64_t ht)
{
	struct pv key = pv_str(k);
	return row_key_at(&key, 1, ht);
}

/* The i-th pair of the current batch. */
static void batch_pair(size_t i, const uint8_t **k, size_t *kl, const uint8_t **v, size_t *vl)
{
	struct batch_iter it;
	batch_iter_init(&it, C.b.data.data, C.b.data.len);
	for (size_t n = 0; n <= i; n++)
		CHECK_EQ_INT(batch_next(&it, k, kl, v, vl), 1);
}

static struct buf DK;

/* The DocKey of a row of C.s, in DK. */
static void dockey_of(const struct pv *key, size_t nkey)
{
	buf_reset(&DK);
	CHECK_OK_MSG(docwrite_dockey(&C.s, key, nkey, &DK, C.f.errmsg), C.f.errmsg);
}

/* Appends a raw pair at a row's DocKey to the batch. */
static void put_raw_row(const struct pv *key, const void *val, size_t vlen)
{
	dockey_of(key, 1);
	batch_put(&C.b, DK.data, DK.len, val, vlen);
}

/* The table most cases use: k text hash; a int, b text, m map<text, int>. */
static void std_table(const char *tag)
{
	ctx_open(tag, "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	ready();
}

/* ---- bytes ----------------------------------------------------------------- */

/* §8.2: (1, 42, 'hello', 1000000) at schema version 1 is
 * 7A 01 05000000 0B000000 14000000 | 48 0000002A | 53 68656C6C6F | 49 ...0F4240:
 * a key column, then int 42, text 'hello', bigint 1000000, the last one added
 * by an ALTER (version 0 -> 1). */
TEST(v1_layout_byte_exact)
{
	static const uint8_t want[] = {0x7A, 0x01, 0x05, 0x00, 0x00, 0x00, 0x0B, 0x00, 0x00,
				       0x00, 0x14, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00,
				       0x2A, 0x53, 0x68, 0x65, 0x6C, 0x6C, 0x6F, 0x49, 0x00,
				       0x00, 0x00, 0x00, 0x00, 0x0F, 0x42, 0x40};
	char err[DOCRAFT_ERRMSG_SIZE];
	ctx_open("pk-bytes", "t");
	col("k", COL_HASH, CT_INT32);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	CHECK_EQ_INT(C.s.version, 0);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "c", CT_INT64, 0, 0, err), err);
	CHECK_EQ_INT(C.s.version, 1);
	ready();
	struct pv key = pv_int32(1);
	struct colval cols[3] = {cv_int("a", 42), cv_str("b", "hello"),
				 colval_of("c", pv_int64(1000000))};
	OK(docwrite_insert(&C.w, &key, 1, cols, 3, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 1);
	const uint8_t *k, *v;
	size_t kl, vl;
	batch_pair(0, &k, &kl, &v, &vl);
	dockey_of(&key, 1);
	CHECK_EQ_MEM(k, kl, DK.data, DK.len); /* at the DocKey itself */
	CHECK_EQ_MEM(v, vl, want, sizeof want);

	/* The encoder alone, and the decoder back. */
	struct docvalue c0 = docvalue_of(pv_int32(42)), c1 = docvalue_of(pv_str("hello")),
			c2 = docvalue_of(pv_int64(1000000));
	const struct docvalue *slots[3] = {&c0, &c1, &c2};
	struct buf payload = BUF_INIT;
	packed_encode(&payload, 1, slots, 3);
	CHECK_EQ_MEM(payload.data, payload.len, want + 1, sizeof want - 1);
	struct packed_row r;
	const struct schema_version *sv;
	CHECK_OK_MSG(packed_parse_schema(payload.data, payload.len, &C.s, &r, &sv, err), err);
	CHECK_EQ_INT(r.version, 1);
	CHECK_EQ_INT(r.n, 3);
	CHECK(sv == schema_version_get(&C.s, 1));
	for (size_t i = 0; i < 3; i++) {
		struct docvalue got;
		bool is_null;
		CHECK_OK(packed_column(&r, i, &got, &is_null));
		CHECK(!is_null && got.kind == VAL_PRIMITIVE && pv_equal(&got.prim, &slots[i]->prim));
	}
	/* NULL slots take no bytes: their end offset repeats the previous one. */
	const struct docvalue *nulls[3] = {&c0, NULL, NULL};
	static const uint8_t want_nulls[] = {0x01, 0x05, 0, 0, 0, 0x05, 0, 0, 0, 0x05, 0, 0, 0,
					     0x48, 0, 0, 0, 0x2A};
	buf_reset(&payload);
	packed_encode(&payload, 1, nulls, 3);
	CHECK_EQ_MEM(payload.data, payload.len, want_nulls, sizeof want_nulls);
	buf_free(&payload);

	apply(at(1));
	fx_label_ht(&C.f, at(1), "T1");
	fx_label_hash(&C.f, key_hash_components(&key, 1), "hash1");
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 1), T1 -> [PACKED ROW v1: a=42, b='hello', c=1000000]\n");
	CHECK_EQ_STR(row_key_at(&key, 1, at(1)), "live a=42 b='hello' c=1000000");
	/* Without a schema the dump cannot name the columns. */
	CHECK_EQ_STR(fx_dump(&C.f, NULL, false), "(hash1, 1), T1 -> [PACKED ROW v1, 33 bytes]\n");
	buf_free(&DK);
	ctx_close();
}

/* ---- seeds ------------------------------------------------------------------ */

static const char *msgs_row(int32_t id, uint64_t ht)
{
	static char out[512];
	struct pv key[2] = {pv_str("user1"), pv_int32(id)};
	struct row r;
	bool found;
	char msg[128];
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, key, 2, ht, &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	if (!found)
		return "not found";
	snprintf(msg, sizeof msg, "%s", fx_col(&C.f, &r, "msg"));
	snprintf(out, sizeof out, "msg=%s props=%s", msg, fx_col(&C.f, &r, "msg_props"));
	return out;
}

/* test_seeds.c's msgs_t1_to_t5 on a packed table: each INSERT gives the only
 * packable column (msg), so it is one packed row plus the map's elements. */
TEST(msgs_example_packed)
{
	struct pv k10[2] = {pv_str("user1"), pv_int32(10)};
	struct pv k20[2] = {pv_str("user1"), pv_int32(20)};
	const uint64_t T[6] = {0, fx_ht(1), fx_ht(2), fx_ht(3), fx_ht(4), fx_ht(5)};
	ctx_open("pk-msgs", "msgs");
	col("user_id", COL_HASH, CT_TEXT);
	col("msg_id", COL_RANGE, CT_INT32);
	col("msg", COL_REGULAR, CT_TEXT);
	coll("msg_props", CT_MAP, CT_TEXT, CT_TEXT);
	ready();
	for (int i = 1; i <= 5; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		fx_label_ht(&C.f, T[i], l);
	}
	fx_label_hash(&C.f, key_hash_components(&k10[0], 1), "hash1");

	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("a@b.com"), pv_str("hello")};
		struct colval cols[2] = {cv_str("msg", "msg1"), colval_map("msg_props", mk, mv, 2)};
		OK(docwrite_insert(&C.w, k10, 2, cols, 2, DOCWRITE_NO_TTL));
		apply(T[1]);
	}
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'user1', 10), T1 -> [PACKED ROW v0: msg='msg1']\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n");
	CHECK_EQ_STR(msgs_row(10, T[1]), "msg='msg1' props={'from': 'a@b.com', 'subject': 'hello'}");

	{
		struct pv mk = pv_str("read_status"), mv = pv_str("true");
		OK(docwrite_map_put(&C.w, k10, 2, "msg_props", &mk, &mv, 1, DOCWRITE_NO_TTL));
		apply(T[2]);
	}
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'user1', 10), T1 -> [PACKED ROW v0: msg='msg1']\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n");
	CHECK_EQ_STR(msgs_row(10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");

	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("c@d.com"), pv_str("bar")};
		struct colval cols[2] = {cv_str("msg", "msg2"), colval_map("msg_props", mk, mv, 2)};
		OK(docwrite_insert(&C.w, k20, 2, cols, 2, DOCWRITE_NO_TTL));
		apply(T[3]);
	}
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'user1', 10), T1 -> [PACKED ROW v0: msg='msg1']\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n"
		     "(hash1, 'user1', 20), T3 -> [PACKED ROW v0: msg='msg2']\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n");
	CHECK_EQ_STR(msgs_row(20, T[3]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");

	OK(docwrite_delete_column(&C.w, k10, 2, "msg_props"));
	apply(T[4]);
	CHECK_EQ_STR(msgs_row(10, T[4]), "msg='msg1' props=NULL");
	CHECK_EQ_STR(msgs_row(20, T[4]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");

	OK(docwrite_delete_row(&C.w, k10, 2));
	apply(T[5]);
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'user1', 10), T5 -> [DELETE]\n"
		     "(hash1, 'user1', 10), T1 -> [PACKED ROW v0: msg='msg1']\n"
		     "(hash1, 'user1', 10), msg_props_column_id, T4 -> [DELETE]\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n"
		     "(hash1, 'user1', 20), T3 -> [PACKED ROW v0: msg='msg2']\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n");
	CHECK_EQ_STR(msgs_row(10, T[5]), "not found");
	CHECK_EQ_STR(msgs_row(20, T[5]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");
	/* Point-in-time reads: the same answers as the unpacked seed test. */
	CHECK_EQ_STR(msgs_row(10, T[1]), "msg='msg1' props={'from': 'a@b.com', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(10, T[4]), "msg='msg1' props=NULL");
	CHECK_EQ_STR(msgs_row(20, T[2]), "not found");
	CHECK_EQ_STR(msgs_row(10, T[1] - 1), "not found");
	CHECK_OK_MSG(store_flush(C.f.s, C.f.errmsg), C.f.errmsg);
	fx_reopen(&C.f);
	CHECK_EQ_STR(msgs_row(10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(10, T[5]), "not found");
	ctx_close();
}

/* Only an INSERT that gives every packable column is packed (§8.4); any
 * other INSERT keeps the unpacked layout, because NULL slots would hide the
 * older values of the columns it leaves out. NULL values count as given. */
TEST(partial_insert_stays_unpacked)
{
	std_table("pk-partial");
	struct pv k = pv_str("p");
	fx_label_ht(&C.f, at(1), "T1");
	fx_label_ht(&C.f, at(2), "T2");
	fx_label_hash(&C.f, key_hash_components(&k, 1), "hash1");
	struct colval b1 = cv_str("b", "old");
	OK(docwrite_update(&C.w, &k, 1, &b1, 1, DOCWRITE_NO_TTL));
	apply(at(1));
	struct colval a1 = cv_int("a", 1);
	OK(docwrite_insert(&C.w, &k, 1, &a1, 1, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 2);
	apply(at(2));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'p'), liveness_column_id, T2 -> [NULL]\n"
		     "(hash1, 'p'), a_column_id, T2 -> 1\n"
		     "(hash1, 'p'), b_column_id, T1 -> 'old'\n");
	CHECK_EQ_STR(row_at("p", at(2)), "live a=1 b='old' m=NULL");
	/* Explicit NULLs: packed, with NULL slots that hide older values. */
	struct colval nulls[2] = {cv_null("a"), cv_null("b")};
	OK(docwrite_insert(&C.w, &k, 1, nulls, 2, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 1);
	apply(at(3));
	CHECK_EQ_STR(row_at("p", at(3)), "live a=NULL b=NULL m=NULL");
	/* The option off: the same full INSERT is unpacked. */
	C.s.packed = false;
	struct colval both[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &k, 1, both, 2, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 3);
	ctx_close();
}

/* ---- merge ------------------------------------------------------------------- */

TEST(newer_cells_win_older_are_hidden)
{
	std_table("pk-merge");
	struct pv r1 = pv_str("r1"), r2 = pv_str("r2"), r3 = pv_str("r3");
	struct colval ins[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &r1, 1, ins, 2, DOCWRITE_NO_TTL));
	apply(at(1));
	struct colval a2 = cv_int("a", 2);
	OK(docwrite_update(&C.w, &r1, 1, &a2, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK_EQ_STR(row_at("r1", at(1) - 1), "not found");
	CHECK_EQ_STR(row_at("r1", at(1)), "live a=1 b='x' m=NULL");
	CHECK_EQ_STR(row_at("r1", at(2)), "live a=2 b='x' m=NULL");
	/* A newer packed row hides the older cell; a newer cell again wins. */
	struct colval ins3[2] = {cv_int("a", 3), cv_null("b")};
	OK(docwrite_insert(&C.w, &r1, 1, ins3, 2, DOCWRITE_NO_TTL));
	apply(at(3));
	CHECK_EQ_STR(row_at("r1", at(3)), "live a=3 b=NULL m=NULL");
	struct colval b4 = cv_str("b", "four");
	OK(docwrite_update(&C.w, &r1, 1, &b4, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK_EQ_STR(row_at("r1", at(4)), "live a=3 b='four' m=NULL");
	CHECK_EQ_STR(row_at("r1", at(2)), "live a=2 b='x' m=NULL");

	/* Same batch: UPDATE, packed INSERT, UPDATE: write ids decide. */
	struct colval early = cv_str("b", "early"), ins5[2] = {cv_int("a", 5), cv_str("b", "ins")},
		      a6 = cv_int("a", 6);
	OK(docwrite_update(&C.w, &r2, 1, &early, 1, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &r2, 1, ins5, 2, DOCWRITE_NO_TTL));
	OK(docwrite_update(&C.w, &r2, 1, &a6, 1, DOCWRITE_NO_TTL));
	apply(at(5));
	CHECK_EQ_STR(row_at("r2", at(5)), "live a=6 b='ins' m=NULL");

	/* A packed INSERT leaves collections alone (as the unpacked one does):
	 * map elements written before it stay. */
	struct pv mk = pv_str("e"), mv = pv_int32(7);
	OK(docwrite_map_put(&C.w, &r3, 1, "m", &mk, &mv, 1, DOCWRITE_NO_TTL));
	apply(at(6));
	OK(docwrite_insert(&C.w, &r3, 1, ins, 2, DOCWRITE_NO_TTL));
	apply(at(7));
	CHECK_EQ_STR(row_at("r3", at(7)), "live a=1 b='x' m={'e': 7}");

	/* Node metadata: packed columns carry the packed row's DocHT. */
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &r1, 1, at(4), &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	const struct docnode *a = row_column_named(&r, "a"), *b = row_column_named(&r, "b");
	struct pv live = pv_liveness();
	const struct docnode *l = docnode_child(r.root, &live);
	CHECK(found && a != NULL && b != NULL && l != NULL);
	CHECK(l->kind == VAL_PRIMITIVE && l->value.type == PV_NULL);
	CHECK_EQ_U64(l->write_time.ht, at(3));
	CHECK_EQ_U64(a->write_time.ht, at(3));
	CHECK_EQ_INT(a->write_time.write_id, 0);
	CHECK_EQ_U64(b->write_time.ht, at(4));
	CHECK_EQ_U64(r.root->write_time.ht, at(4));
	ctx_close();
}

TEST(deletes_after_packed_insert)
{
	std_table("pk-del");
	struct pv d = pv_str("d");
	struct pv mk[2] = {pv_str("p"), pv_str("q")}, mv[2] = {pv_int32(1), pv_int32(2)};
	struct colval ins[3] = {cv_int("a", 1), cv_str("b", "x"), colval_map("m", mk, mv, 2)};
	OK(docwrite_insert(&C.w, &d, 1, ins, 3, DOCWRITE_NO_TTL));
	apply(at(1));
	OK(docwrite_delete_column(&C.w, &d, 1, "a"));
	apply(at(2));
	OK(docwrite_delete_column(&C.w, &d, 1, "b"));
	OK(docwrite_delete_column(&C.w, &d, 1, "m"));
	apply(at(3));
	CHECK_EQ_STR(row_at("d", at(1)), "live a=1 b='x' m={'p': 1, 'q': 2}");
	CHECK_EQ_STR(row_at("d", at(2)), "live a=NULL b='x' m={'p': 1, 'q': 2}");
	/* Every column gone: the packed row still stands in for the liveness. */
	CHECK_EQ_STR(row_at("d", at(3)), "live a=NULL b=NULL m=NULL");
	OK(docwrite_delete_row(&C.w, &d, 1));
	apply(at(4));
	CHECK_EQ_STR(row_at("d", at(4)), "not found");
	/* After the row delete an UPDATE does not bring the packed row back. */
	struct colval a5 = cv_int("a", 5);
	OK(docwrite_update(&C.w, &d, 1, &a5, 1, DOCWRITE_NO_TTL));
	apply(at(5));
	CHECK_EQ_STR(row_at("d", at(5)), "a=5 b=NULL m=NULL");
	/* Re-insert, and a row delete + re-insert in one batch. */
	struct colval ins6[2] = {cv_int("a", 6), cv_str("b", "six")};
	OK(docwrite_insert(&C.w, &d, 1, ins6, 2, DOCWRITE_NO_TTL));
	apply(at(6));
	CHECK_EQ_STR(row_at("d", at(6)), "live a=6 b='six' m=NULL");
	struct colval ins7[2] = {cv_int("a", 7), cv_null("b")};
	OK(docwrite_delete_row(&C.w, &d, 1));
	OK(docwrite_insert(&C.w, &d, 1, ins7, 2, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &d, 1, ins6, 2, DOCWRITE_NO_TTL));
	OK(docwrite_delete_row(&C.w, &d, 1));
	OK(docwrite_insert(&C.w, &d, 1, ins7, 2, DOCWRITE_NO_TTL));
	apply(at(7));
	CHECK_EQ_STR(row_at("d", at(7)), "live a=7 b=NULL m=NULL");
	CHECK_EQ_STR(row_at("d", at(6)), "live a=6 b='six' m=NULL");
	CHECK_EQ_STR(row_at("d", at(3)), "live a=NULL b=NULL m=NULL");
	/* A scan sees the same. */
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(4);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 0);
	sp.read_ht = at(7);
	sp.reverse = true;
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 1);
	CHECK_EQ_STR(fmt_row(&rows[0], true), "live a=7 b=NULL m=NULL");
	ctx_close();
}

/* §3.4: the packed row takes its write id before the cells of the same
 * statement (columns over the size limit, collections). */
TEST(write_ids_in_a_batch)
{
	std_table("pk-wid");
	struct pv k = pv_str("w");
	struct pv mk[2] = {pv_str("p"), pv_str("q")}, mv[2] = {pv_int32(1), pv_int32(2)};
	struct colval first = cv_int("a", 0);
	struct colval ins[3] = {colval_map("m", mk, mv, 2), cv_str("b", "x"), cv_int("a", 1)};
	OK(docwrite_update(&C.w, &k, 1, &first, 1, DOCWRITE_NO_TTL));
	OK(docwrite_insert(&C.w, &k, 1, ins, 3, DOCWRITE_NO_TTL));
	apply(at(1));
	fx_label_ht(&C.f, at(1), "T1");
	fx_label_hash(&C.f, key_hash_components(&k, 1), "hash1");
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'w'), T1 -> [PACKED ROW v0: a=1, b='x']\n"
		     "(hash1, 'w'), a_column_id, T1 -> 0\n"
		     "(hash1, 'w'), m_column_id, 'p', T1 -> 1\n"
		     "(hash1, 'w'), m_column_id, 'q', T1 -> 2\n");
	/* With write ids: the UPDATE is w0, the packed row w1, the map w2, w3. */
	struct dump_opts ow = {&C.s, NULL, NULL, NULL, false, true};
	struct buf d = BUF_INIT;
	CHECK_OK_MSG(dump_store(C.f.s, &ow, &d, C.f.errmsg), C.f.errmsg);
	CHECK_MSG(strstr(buf_cstr(&d), " w1 -> [PACKED ROW v0: a=1, b='x']") != NULL, "%s",
		  buf_cstr(&d));
	CHECK_MSG(strstr(buf_cstr(&d), "a_column_id, HT(1767225601000000.0) w0 -> 0") != NULL, "%s",
		  buf_cstr(&d));
	CHECK_MSG(strstr(buf_cstr(&d), "'p', HT(1767225601000000.0) w2 -> 1") != NULL, "%s",
		  buf_cstr(&d));
	CHECK_MSG(strstr(buf_cstr(&d), "'q', HT(1767225601000000.0) w3 -> 2") != NULL, "%s",
		  buf_cstr(&d));
	buf_free(&d);
	CHECK_EQ_STR(row_at("w", at(1)), "live a=1 b='x' m={'p': 1, 'q': 2}");
	ctx_close();
}

/* ---- TTL ------------------------------------------------------------------ */

TEST(row_ttl_on_packed_rows)
{
	ctx_open("pk-ttl", "page_views");
	col("page_id", COL_HASH, CT_TEXT);
	col("views", COL_REGULAR, CT_INT32);
	col("category", COL_REGULAR, CT_TEXT);
	ready();
	struct pv key = pv_str("abc.com");
	fx_label_ht(&C.f, at(100), "T1");
	fx_label_hash(&C.f, key_hash_components(&key, 1), "hash1");
	/* INSERT ... VALUES ('abc.com', 10, NULL) USING TTL 100 */
	struct colval cols[2] = {cv_int("views", 10), cv_null("category")};
	OK(docwrite_insert(&C.w, &key, 1, cols, 2, 100000));
	apply(at(100));
	CHECK_EQ_STR(fx_dump(&C.f, &C.s, false),
		     "(hash1, 'abc.com'), T1 -> (TTL = 100) [PACKED ROW v0: views=(TTL = 100) 10, "
		     "category=NULL]\n");
	CHECK_EQ_STR(row_at("abc.com", at(200)), "live views=10 category=NULL");
	CHECK_EQ_STR(row_at("abc.com", at_us(200, 1)), "not found");
	/* UPDATE without TTL: the row outlives its packed row. */
	struct colval cat = cv_str("category", "news");
	OK(docwrite_update(&C.w, &key, 1, &cat, 1, DOCWRITE_NO_TTL));
	apply(at(150));
	CHECK_EQ_STR(row_at("abc.com", at(200)), "live views=10 category='news'");
	CHECK_EQ_STR(row_at("abc.com", at_us(200, 1)), "views=NULL category='news'");
	CHECK_EQ_STR(row_at("abc.com", at(149)), "live views=10 category=NULL");

	/* A packed row built by hand: row TTL 100 s; views with its own 10 s,
	 * category without one (inherits the row's); and one with TTL 0
	 * ("never") keeps the row alive past the row TTL. */
	struct pv k2 = pv_str("hand"), k3 = pv_str("never");
	struct docvalue views = docvalue_of(pv_int32(5)), catv = docvalue_of(pv_str("c"));
	views.has_ttl = true;
	views.ttl_ms = 10000;
	const struct docvalue *slots[2] = {&views, &catv};
	struct buf payload = BUF_INIT, val = BUF_INIT;
	struct docvalue row = docvalue_kind(VAL_PACKED_ROW);
	packed_encode(&payload, 0, slots, 2);
	row.packed = payload.data;
	row.packed_len = payload.len;
	row.has_ttl = true;
	row.ttl_ms = 100000;
	value_append(&val, &row);
	put_raw_row(&k2, val.data, val.len);
	views.ttl_ms = 0;
	buf_reset(&payload);
	packed_encode(&payload, 0, slots, 2);
	row.packed = payload.data;
	row.packed_len = payload.len;
	buf_reset(&val);
	value_append(&val, &row);
	put_raw_row(&k3, val.data, val.len);
	apply(at(1000));
	CHECK_EQ_STR(row_at("hand", at(1010)), "live views=5 category='c'");
	CHECK_EQ_STR(row_at("hand", at_us(1010, 1)), "live views=NULL category='c'");
	CHECK_EQ_STR(row_at("hand", at(1100)), "live views=NULL category='c'");
	CHECK_EQ_STR(row_at("hand", at_us(1100, 1)), "not found");
	CHECK_EQ_STR(row_at("never", at_us(1100, 1)), "views=5 category=NULL");
	CHECK_EQ_STR(row_at("never", at(100000)), "views=5 category=NULL");
	buf_free(&payload);
	buf_free(&val);

	/* The table default applies to a packed row without a TTL. */
	C.s.default_ttl_ms = 50000;
	struct pv k4 = pv_str("dflt");
	struct colval c4[2] = {cv_int("views", 4), cv_str("category", "d")};
	OK(docwrite_insert(&C.w, &k4, 1, c4, 2, DOCWRITE_NO_TTL));
	apply(at(2000));
	CHECK_EQ_STR(row_at("dflt", at(2050)), "live views=4 category='d'");
	CHECK_EQ_STR(row_at("dflt", at_us(2050, 1)), "not found");
	buf_free(&DK);
	ctx_close();
}

/* ---- size limit ------------------------------------------------------------ */

TEST(oversized_columns_fall_back_to_cells)
{
	ctx_open("pk-big", "big");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("big", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_TEXT);
	ready();
	const size_t n = 40000;
	char *huge = malloc(n);
	CHECK(huge != NULL);
	memset(huge, 'x', n);
	struct pv k1 = pv_str("k1"), k2 = pv_str("k2"), k3 = pv_str("k3");
	int32_t big_id = schema_find(&C.s, "big")->id;
	/* 40000 bytes: does not fit; its slot stays NULL, the cell follows. */
	struct colval cols[3] = {cv_str("c", "small"), colval_of("big", pv_strn(huge, n)),
				 cv_int("a", 1)};
	OK(docwrite_insert(&C.w, &k1, 1, cols, 3, 60000));
	CHECK_EQ_INT(C.b.count, 2);
	const uint8_t *k, *v;
	size_t kl, vl;
	struct docvalue dv, cv;
	struct packed_row pr;
	bool is_null;
	batch_pair(0, &k, &kl, &v, &vl);
	dockey_of(&k1, 1);
	CHECK_EQ_MEM(k, kl, DK.data, DK.len);
	CHECK_OK(value_decode(v, vl, &dv));
	CHECK(dv.kind == VAL_PACKED_ROW && dv.has_ttl && dv.ttl_ms == 60000);
	CHECK_OK(packed_parse(dv.packed, dv.packed_len, 3, &pr));
	CHECK_OK(packed_column(&pr, 0, &cv, &is_null));
	CHECK(!is_null && cv.prim.v.i32 == 1 && cv.has_ttl && cv.ttl_ms == 60000);
	CHECK_OK(packed_column(&pr, 1, &cv, &is_null));
	CHECK(is_null);
	CHECK_OK(packed_column(&pr, 2, &cv, &is_null));
	CHECK(!is_null && cv.prim.v.s.len == 5);
	batch_pair(1, &k, &kl, &v, &vl);
	struct buf want = BUF_INIT;
	buf_append(&want, DK.data, DK.len);
	struct pv sub = pv_column(big_id);
	key_append_pv(&want, &sub);
	CHECK_EQ_MEM(k, kl, want.data, want.len);
	CHECK_OK(value_decode(v, vl, &dv));
	CHECK(dv.kind == VAL_PRIMITIVE && dv.prim.v.s.len == n && dv.has_ttl && dv.ttl_ms == 60000);

	/* Greedy in packing order (a, big, c): a takes 5 bytes, so a big value
	 * of 32762 bytes (32763 encoded) fills the limit and c goes separate;
	 * one byte more and big goes separate while c stays packed. */
	struct colval fit[3] = {cv_int("a", 2), colval_of("big", pv_strn(huge, 32762)),
				cv_str("c", "small")};
	OK(docwrite_insert(&C.w, &k2, 1, fit, 3, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 4);
	batch_pair(2, &k, &kl, &v, &vl);
	CHECK_OK(value_decode(v, vl, &dv));
	CHECK_OK(packed_parse(dv.packed, dv.packed_len, 3, &pr));
	CHECK_OK(packed_column(&pr, 1, &cv, &is_null));
	CHECK(!is_null && cv.prim.v.s.len == 32762);
	CHECK_OK(packed_column(&pr, 2, &cv, &is_null));
	CHECK(is_null);
	struct colval over[3] = {cv_int("a", 3), colval_of("big", pv_strn(huge, 32763)),
				 cv_str("c", "small")};
	OK(docwrite_insert(&C.w, &k3, 1, over, 3, DOCWRITE_NO_TTL));
	CHECK_EQ_INT(C.b.count, 6);
	batch_pair(4, &k, &kl, &v, &vl);
	CHECK_OK(value_decode(v, vl, &dv));
	CHECK_OK(packed_parse(dv.packed, dv.packed_len, 3, &pr));
	CHECK_OK(packed_column(&pr, 1, &cv, &is_null));
	CHECK(is_null);
	CHECK_OK(packed_column(&pr, 2, &cv, &is_null));
	CHECK(!is_null);
	apply(at(1));
	CHECK_EQ_STR(row_at("k1", at(1)), "live a=1 big=<40000 bytes> c='small'");
	CHECK_EQ_STR(row_at("k2", at(1)), "live a=2 big=<32762 bytes> c='small'");
	CHECK_EQ_STR(row_at("k3", at(1)), "live a=3 big=<32763 bytes> c='small'");
	/* The separate cell carries the statement's TTL too. */
	CHECK_EQ_STR(row_at("k1", at(61)), "live a=1 big=<40000 bytes> c='small'");
	CHECK_EQ_STR(row_at("k1", at_us(61, 1)), "not found");
	/* Later writes to the big column behave as usual. */
	struct colval bnull = cv_null("big");
	OK(docwrite_update(&C.w, &k3, 1, &bnull, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK_EQ_STR(row_at("k3", at(2)), "live a=3 big=NULL c='small'");
	free(huge);
	buf_free(&want);
	buf_free(&DK);
	ctx_close();
}

/* ---- schema versions ---------------------------------------------------------- */

static int32_t id_of(const char *name)
{
	const struct column *c = schema_find(&C.s, name);
	CHECK_MSG(c != NULL, "no column %s", name);
	return c->id;
}

static void check_version(uint32_t version, const int32_t *ids, size_t n)
{
	const struct schema_version *sv = schema_version_get(&C.s, version);
	CHECK_MSG(sv != NULL, "version %u missing", version);
	CHECK_EQ_INT(sv->version, version);
	CHECK_EQ_INT(sv->n, n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_INT(sv->ids[i], ids[i]);
}

TEST(schema_versions_api)
{
	char err[DOCRAFT_ERRMSG_SIZE] = "";
	ctx_open("pk-sv", "t");
	col("k", COL_HASH, CT_TEXT);
	col("r", COL_RANGE, CT_INT32);
	col("a", COL_REGULAR, CT_INT32);
	coll("m", CT_MAP, CT_TEXT, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	CHECK_EQ_INT(C.s.version, 0);
	CHECK_EQ_INT(C.s.nversions, 1);
	check_version(0, (int32_t[]){2, 4}, 2); /* regular, not collections */
	CHECK_OK_MSG(schema_drop_column(&C.s, "a", err), err);
	check_version(1, (int32_t[]){4}, 1);
	CHECK(schema_find(&C.s, "a") == NULL && schema_id_dropped(&C.s, 2));
	CHECK(!schema_id_dropped(&C.s, 4) && !schema_id_dropped(&C.s, 0));
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "a", CT_TEXT, 0, 0, err), err);
	CHECK_EQ_INT(id_of("a"), 5); /* a new column: a new id */
	check_version(2, (int32_t[]){4, 5}, 2);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "s", CT_SET, CT_INT32, 0, err), err);
	check_version(3, (int32_t[]){4, 5}, 2);
	CHECK_OK_MSG(schema_drop_column(&C.s, "m", err), err);
	check_version(4, (int32_t[]){4, 5}, 2);
	/* Old versions stay as they were. */
	check_version(0, (int32_t[]){2, 4}, 2);
	check_version(1, (int32_t[]){4}, 1);
	CHECK(schema_version_get(&C.s, 5) == NULL);
	/* Errors leave the schema unchanged. */
	CHECK_EQ_INT(schema_drop_column(&C.s, "k", err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "'k'") != NULL);
	CHECK_EQ_INT(schema_drop_column(&C.s, "r", err), DOCRAFT_EINVAL);
	CHECK_EQ_INT(schema_drop_column(&C.s, "nope", err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "nope") != NULL);
	CHECK_EQ_INT(schema_add_regular_column(&C.s, "b", CT_INT32, 0, 0, err), DOCRAFT_EINVAL);
	CHECK_EQ_INT(schema_add_regular_column(&C.s, "1x", CT_INT32, 0, 0, err), DOCRAFT_EINVAL);
	CHECK_EQ_INT(C.s.version, 4);
	CHECK_EQ_INT(C.s.nversions, 5);
	CHECK_EQ_INT(C.s.next_id, 7);
	/* A copy has its own history. */
	struct schema cp;
	schema_copy(&cp, &C.s);
	CHECK_OK_MSG(schema_drop_column(&C.s, "b", err), err);
	CHECK_EQ_INT(cp.version, 4);
	CHECK_EQ_INT(cp.nversions, 5);
	CHECK(schema_version_get(&cp, 0)->ids != schema_version_get(&C.s, 0)->ids);
	CHECK_EQ_INT(schema_version_get(&cp, 4)->n, 2);
	CHECK_EQ_INT(schema_version_get(&C.s, 5)->n, 1);
	CHECK(schema_find(&cp, "b") != NULL);
	schema_free(&cp);
	ctx_close();
}

/* Old packed rows stay readable through their version: a dropped column is
 * gone (its packed slots and its cells), an added one is NULL until
 * written, a re-added name is a new column. */
TEST(schema_change_keeps_old_rows_readable)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	ctx_open("pk-alter", "t");
	col("k", COL_HASH, CT_TEXT);
	col("a", COL_REGULAR, CT_INT32);
	col("b", COL_REGULAR, CT_TEXT);
	col("c", COL_REGULAR, CT_INT32);
	ready();
	struct pv r1 = pv_str("r1"), r2 = pv_str("r2"), r3 = pv_str("r3");
	fx_label_ht(&C.f, at(1), "T1");
	fx_label_ht(&C.f, at(2), "T2");
	fx_label_ht(&C.f, at(3), "T3");
	fx_label_ht(&C.f, at(4), "T4");
	struct colval v0[3] = {cv_int("a", 1), cv_str("b", "x"), cv_int("c", 3)};
	OK(docwrite_insert(&C.w, &r1, 1, v0, 3, DOCWRITE_NO_TTL));
	struct colval bz = cv_str("b", "z");
	OK(docwrite_update(&C.w, &r3, 1, &bz, 1, DOCWRITE_NO_TTL)); /* r3 has only b */
	apply(at(1));
	struct colval by = cv_str("b", "y");
	OK(docwrite_update(&C.w, &r1, 1, &by, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK_EQ_STR(row_at("r1", at(2)), "live a=1 b='y' c=3");
	CHECK_EQ_STR(row_at("r3", at(2)), "a=NULL b='z' c=NULL");

	/* ALTER TABLE t DROP b; ADD d int; ADD b text. */
	CHECK_OK_MSG(schema_drop_column(&C.s, "b", err), err);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "d", CT_INT32, 0, 0, err), err);
	CHECK_OK_MSG(schema_add_regular_column(&C.s, "b", CT_TEXT, 0, 0, err), err);
	CHECK_EQ_INT(C.s.version, 3);
	CHECK_EQ_STR(row_at("r1", at(2)), "live a=1 c=3 d=NULL b=NULL");
	CHECK_EQ_STR(row_at("r1", at(1)), "live a=1 c=3 d=NULL b=NULL");
	CHECK_EQ_STR(row_at("r3", at(2)), "not found"); /* its only column is gone */
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &r1, 1, at(2), &C.f.arena, &r, &found, C.f.errmsg),
		     C.f.errmsg);
	CHECK(found);
	CHECK_EQ_INT(r.root->n_children, 3); /* liveness, a, c: nothing of the old b */

	/* A new row at version 3; an UPDATE of the new column on the old row. */
	struct colval v3[4] = {cv_int("a", 10), cv_int("c", 30), cv_int("d", 40), cv_str("b", "new")};
	OK(docwrite_insert(&C.w, &r2, 1, v3, 4, DOCWRITE_NO_TTL));
	apply(at(3));
	struct colval d4 = cv_int("d", 4);
	OK(docwrite_update(&C.w, &r1, 1, &d4, 1, DOCWRITE_NO_TTL));
	apply(at(4));
	CHECK_EQ_STR(row_at("r1", at(4)), "live a=1 c=3 d=4 b=NULL");
	CHECK_EQ_STR(row_at("r2", at(4)), "live a=10 c=30 d=40 b='new'");
	fx_label_hash(&C.f, key_hash_components(&r1, 1), "h1");
	fx_label_hash(&C.f, key_hash_components(&r2, 1), "h2");
	fx_label_hash(&C.f, key_hash_components(&r3, 1), "h3");
	const char *dump = fx_dump(&C.f, &C.s, false);
	CHECK_MSG(strstr(dump, "(h1, 'r1'), T1 -> [PACKED ROW v0: a=1, col(2)='x', c=3]\n") != NULL,
		  "%s", dump);
	CHECK_MSG(strstr(dump, "(h1, 'r1'), col(2), T2 -> 'y'\n") != NULL, "%s", dump);
	CHECK_MSG(strstr(dump, "(h2, 'r2'), T3 -> [PACKED ROW v3: a=10, c=30, d=40, b='new']\n") !=
			  NULL,
		  "%s", dump);
	/* Scans agree. */
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(4);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 2);
	for (size_t i = 0; i < nrows; i++)
		CHECK(strcmp(fmt_row(&rows[i], true), "live a=1 c=3 d=4 b=NULL") == 0 ||
		      strcmp(fmt_row(&rows[i], true), "live a=10 c=30 d=40 b='new'") == 0);
	/* A reader still at version 0 does not know version 3's rows. */
	struct schema old;
	CHECK_OK(schema_init(&old, "t", err));
	CHECK_OK(schema_add(&old, "k", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(&old, "a", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add(&old, "b", COL_REGULAR, CT_TEXT, err));
	CHECK_OK(schema_add(&old, "c", COL_REGULAR, CT_INT32, err));
	CHECK_EQ_INT(reader_get_row(C.f.s, &old, &r2, 1, at(4), &C.f.arena, &r, &found, err),
		     DOCRAFT_ECORRUPT);
	CHECK_MSG(strstr(err, "version 3") != NULL, "%s", err);
	CHECK_OK_MSG(reader_get_row(C.f.s, &old, &r1, 1, at(2), &C.f.arena, &r, &found, err), err);
	CHECK_EQ_STR(fmt_row(&r, found), "live a=1 b='y' c=3");
	schema_free(&old);
	ctx_close();
}

/* ---- documents ---------------------------------------------------------------- */

TEST(documents_of_packed_rows)
{
	std_table("pk-doc");
	struct pv k = pv_str("d");
	struct colval ins[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &k, 1, ins, 2, DOCWRITE_NO_TTL));
	apply(at(1));
	const struct docnode *n;
	char err[DOCRAFT_ERRMSG_SIZE] = "";
	dockey_of(&k, 1);
	CHECK_EQ_INT(reader_get_doc(C.f.s, DK.data, DK.len, NULL, 0, at(1), 0, &C.f.arena, &n, err),
		     DOCRAFT_EINVAL);
	CHECK_MSG(strstr(err, "schema") != NULL, "%s", err);
	/* Before the packed row there is nothing to decode. */
	CHECK_OK(reader_get_doc(C.f.s, DK.data, DK.len, NULL, 0, at(1) - 1, 0, &C.f.arena, &n, err));
	CHECK(n == NULL);
	CHECK_OK_MSG(reader_get_table_doc(C.f.s, &C.s, DK.data, DK.len, NULL, 0, at(1), &C.f.arena,
					  &n, err), err);
	CHECK_EQ_STR(fx_doc(&C.f, n), "{syscol(0): NULL, col(1): 1, col(2): 'x'}");
	struct pv sub[2] = {pv_column(1), pv_column(2)};
	CHECK_OK_MSG(reader_get_table_doc(C.f.s, &C.s, DK.data, DK.len, &sub[1], 1, at(1),
					  &C.f.arena, &n, err), err);
	CHECK_EQ_STR(fx_doc(&C.f, n), "'x'");
	struct colval b2 = cv_str("b", "y");
	OK(docwrite_update(&C.w, &k, 1, &b2, 1, DOCWRITE_NO_TTL));
	apply(at(2));
	CHECK_OK_MSG(reader_get_table_doc(C.f.s, &C.s, DK.data, DK.len, &sub[1], 1, at(2),
					  &C.f.arena, &n, err), err);
	CHECK_EQ_STR(fx_doc(&C.f, n), "'y'");
	CHECK_OK_MSG(reader_get_table_doc(C.f.s, &C.s, DK.data, DK.len, &sub[0], 1, at(2),
					  &C.f.arena, &n, err), err);
	CHECK_EQ_STR(fx_doc(&C.f, n), "1");
	buf_free(&DK);
	ctx_close();
}

/* ---- bad data ------------------------------------------------------------------ */

#define U(s) ((const uint8_t *)(s))

static int parse_col(const void *p, size_t len, size_t n, size_t col_i)
{
	struct packed_row r;
	struct docvalue v;
	bool is_null;
	int rv = packed_parse(p, len, n, &r);
	if (rv != 0)
		return rv;
	return packed_column(&r, col_i, &v, &is_null);
}

TEST(malformed_payloads)
{
	struct packed_row r;
	uint32_t ver;
	/* Headers. */
	CHECK_EQ_INT(packed_parse(U(""), 0, 0, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_version(U(""), 0, &ver), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_version(U("\xff\xff"), 2, &ver), DOCRAFT_ECORRUPT);
	CHECK_OK(packed_parse(U("\x01"), 1, 0, &r)); /* no columns, no data */
	CHECK_EQ_INT(packed_parse(U("\x01\x00"), 2, 0, &r), DOCRAFT_ECORRUPT); /* trailing byte */
	CHECK_EQ_INT(packed_parse(U("\x01\x00\x00\x00"), 4, 1, &r), DOCRAFT_ECORRUPT); /* short offsets */
	CHECK_EQ_INT(packed_parse(U("\x01\x00\x00\x00\x00"), 5, 2, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_parse(U("\x01\x00\x00\x00\x00"), 5, (size_t)-1 / 2, &r), DOCRAFT_ECORRUPT);
	CHECK_OK(packed_parse(U("\x01\x00\x00\x00\x00"), 5, 1, &r)); /* one NULL */
	/* Offsets beyond the data, decreasing, or short of its end. */
	CHECK_EQ_INT(packed_parse(U("\x01\x02\x00\x00\x00T"), 6, 1, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_parse(U("\x01\x01\x00\x00\x00\x00\x00\x00\x00T"), 10, 2, &r),
		     DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_parse(U("\x01\x00\x00\x00\x00T"), 6, 1, &r), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(packed_parse(U("\x01\xff\xff\xff\xffT"), 6, 1, &r), DOCRAFT_ECORRUPT);
	CHECK_OK(parse_col("\x01\x01\x00\x00\x00T", 6, 1, 0));
	/* Column data that is not a single non-NULL primitive. */
	static const struct {
		const char *p;
		size_t n;
	} bad[] = {
		{"\x01\x01\x00\x00\x00X", 6},           /* tombstone */
		{"\x01\x01\x00\x00\x00$", 6},           /* NULL value */
		{"\x01\x01\x00\x00\x00{", 6},           /* init marker */
		{"\x01\x01\x00\x00\x00z", 6},           /* nested packed row */
		{"\x01\x03\x00\x00\x00H\x00\x01", 8},   /* short int */
		{"\x01\x01\x00\x00\x00t", 6},           /* TTL without its varint */
		{"\x01\x03\x00\x00\x00k\x01T", 8},      /* merge flags */
		{"\x01\x02\x00\x00\x00TT", 7},          /* trailing byte */
		{"\x01\x01\x00\x00\x00\x01", 6},        /* unknown type */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_MSG(parse_col(bad[i].p, bad[i].n, 1, 0) == DOCRAFT_ECORRUPT, "case %zu", i);
	/* A column with its own TTL is fine. */
	CHECK_OK(parse_col("\x01\x03\x00\x00\x00t\x8aT", 8, 1, 0));

	/* Fuzz: mutations of a valid payload and random bytes, for ASan. */
	struct docvalue c0 = docvalue_of(pv_int32(42)), c1 = docvalue_of(pv_str("hello")),
			c2 = docvalue_of(pv_int64(-1));
	c1.has_ttl = true;
	c1.ttl_ms = 5000;
	const struct docvalue *slots[4] = {&c0, &c1, NULL, &c2};
	struct buf good = BUF_INIT, m = BUF_INIT;
	packed_encode(&good, 7, slots, 4);
	uint64_t rng = test_seed();
	int ok = 0;
	for (int iter = 0; iter < 20000; iter++) {
		buf_reset(&m);
		if (iter % 4 == 0) {
			size_t n = test_rand(&rng) % 40;
			for (size_t i = 0; i < n; i++)
				buf_push(&m, (uint8_t)test_rand(&rng));
		} else {
			buf_append(&m, good.data, good.len);
			for (int f = 0, nf = 1 + (int)(test_rand(&rng) % 3); f < nf; f++) {
				size_t at_i = test_rand(&rng) % m.len;
				switch (test_rand(&rng) % 3) {
				case 0: m.data[at_i] = (uint8_t)test_rand(&rng); break;
				case 1: m.len = at_i; break;
				default: buf_push(&m, (uint8_t)test_rand(&rng)); break;
				}
				if (m.len == 0)
					break;
			}
		}
		/* Exact-size copy so ASan sees reads past the end. */
		uint8_t *p = malloc(m.len + 1);
		CHECK(p != NULL);
		if (m.len)
			memcpy(p, m.data, m.len);
		for (size_t n = 0; n <= 5; n++) {
			int rv = packed_parse(p, m.len, n, &r);
			CHECK(rv == 0 || rv == DOCRAFT_ECORRUPT);
			for (size_t i = 0; rv == 0 && i < n; i++) {
				struct docvalue v;
				bool is_null;
				int crv = packed_column(&r, i, &v, &is_null);
				CHECK(crv == 0 || crv == DOCRAFT_ECORRUPT);
				ok += crv == 0;
			}
		}
		free(p);
	}
	test_note("fuzz: %d columns decoded", ok);
	buf_free(&good);
	buf_free(&m);
}

/* Corrupt stored packed rows fail reads of their row (and scans over it),
 * show as <corrupt> in dumps, and do not matter once hidden. */
TEST(corrupt_stored_rows)
{
	std_table("pk-corrupt");
	struct pv good = pv_str("good");
	struct colval ins[2] = {cv_int("a", 1), cv_str("b", "x")};
	OK(docwrite_insert(&C.w, &good, 1, ins, 2, DOCWRITE_NO_TTL));
	apply(at(1));
	static const struct {
		const char *name;
		const char *val;
		size_t len;
	} bad[] = {
		{"c_version", "z\x05\x00\x00\x00\x00\x00\x00\x00\x00", 10}, /* unknown version */
		{"c_noversion", "z", 1},
		{"c_short", "z\x00\x01\x00\x00\x00", 6},                    /* 1 of 2 offsets */
		{"c_offsets", "z\x00\x02\x00\x00\x00\x01\x00\x00\x00TT", 12}, /* decreasing */
		{"c_column", "z\x00\x01\x00\x00\x00\x01\x00\x00\x00X", 11}, /* tombstone slot */
		{"c_rowttl", "t", 1},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv k = pv_str(bad[i].name);
		put_raw_row(&k, bad[i].val, bad[i].len);
	}
	apply(at(2));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv k = pv_str(bad[i].name);
		struct row r;
		bool found = true;
		char err[DOCRAFT_ERRMSG_SIZE] = "";
		int rv = reader_get_row(C.f.s, &C.s, &k, 1, at(2), &C.f.arena, &r, &found, err);
		CHECK_MSG(rv == DOCRAFT_ECORRUPT, "%s: rv %d (%s)", bad[i].name, rv, err);
		CHECK_MSG(!found && strlen(err) > 0, "%s", bad[i].name);
		struct scan_spec sp;
		struct row *rows;
		size_t nrows;
		memset(&sp, 0, sizeof sp);
		sp.read_ht = at(2);
		sp.hash_key = &k;
		sp.n_hash = 1;
		CHECK_EQ_INT(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, err),
			     DOCRAFT_ECORRUPT);
	}
	const char *dump = fx_dump(&C.f, &C.s, false);
	CHECK_MSG(strstr(dump, "[PACKED ROW v5, 9 bytes]") != NULL, "%s", dump);
	CHECK_MSG(strstr(dump, "[PACKED ROW <corrupt 0 bytes>]") != NULL, "%s", dump);
	CHECK_MSG(strstr(dump, "[PACKED ROW v0 <corrupt 5 bytes>]") != NULL, "%s", dump);
	CHECK_MSG(strstr(dump, "[PACKED ROW v0: a=<corrupt>, b=NULL]") != NULL, "%s", dump);
	/* Hidden by a newer row delete, a corrupt packed row is never decoded. */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv k = pv_str(bad[i].name);
		OK(docwrite_delete_row(&C.w, &k, 1));
	}
	apply(at(3));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ_STR(row_at(bad[i].name, at(3)), "not found");
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at(3);
	CHECK_OK_MSG(reader_scan(C.f.s, &C.s, &sp, &C.f.arena, &rows, &nrows, NULL, C.f.errmsg),
		     C.f.errmsg);
	CHECK_EQ_INT(nrows, 1);
	CHECK_EQ_STR(row_at("good", at(3)), "live a=1 b='x' m=NULL");
	buf_free(&DK);
	ctx_close();
}

/* ---- differential ----------------------------------------------------------------- */

/* The same random operations on a packed and an unpacked copy of one table
 * (two stores): every row reads the same at every time, and so do scans. */
TEST(packed_and_unpacked_read_the_same)
{
	struct fx *f2 = &F2;
	struct schema s2;
	struct batch b2;
	struct docwrite w2;
	int64_t counter2 = 1000;
	uint64_t seed = test_seed(), rng = seed | 1;
	static const char *keys[4] = {"k0", "k1", "k2", "k3"};
	uint64_t hts[400];
	std_table("pk-diff");
	fx_open(f2, "pk-diff2");
	F2_open = true;
	schema_copy(&s2, &C.s);
	s2.packed = false;
	batch_init(&b2);
	docwrite_init(&w2, &s2, &b2, &counter2);
	for (int step = 0; step < 400; step++) {
		for (int op = 0, nops = 1 + (int)(test_rand(&rng) % 3); op < nops; op++) {
			struct pv k = pv_str(keys[test_rand(&rng) % 4]);
			int64_t ttl = test_rand(&rng) % 3 == 0 ? (int64_t)(test_rand(&rng) % 8000)
							       : DOCWRITE_NO_TTL;
			struct pv mk = pv_str(test_rand(&rng) % 2 ? "p" : "q"),
				  mv = pv_int32((int32_t)(test_rand(&rng) % 9));
			struct colval cols[3];
			size_t nc = 0;
			int kind = (int)(test_rand(&rng) % 7);
			if (kind <= 2) {
				if (kind != 2 || test_rand(&rng) % 2)
					cols[nc++] = test_rand(&rng) % 5 ? cv_int("a", (int32_t)step)
									 : cv_null("a");
				if (kind != 2 || test_rand(&rng) % 2)
					cols[nc++] = test_rand(&rng) % 5 ? cv_str("b", keys[step % 4])
									 : cv_null("b");
				if (test_rand(&rng) % 3 == 0)
					cols[nc++] = colval_map("m", &mk, &mv, 1);
			}
			for (int t = 0; t < 2; t++) {
				struct docwrite *w = t ? &w2 : &C.w;
				switch (kind) {
				case 0:
				case 1:
				case 2:
					OK(docwrite_insert(w, &k, 1, cols, nc, ttl));
					break;
				case 3:
					if (nc == 0)
						cols[nc++] = cv_int("a", -step);
					OK(docwrite_update(w, &k, 1, cols, nc, ttl));
					break;
				case 4:
					OK(docwrite_delete_column(w, &k, 1, step % 2 ? "a" : "b"));
					break;
				case 5:
					OK(docwrite_delete_row(w, &k, 1));
					break;
				default:
					OK(docwrite_map_put(w, &k, 1, "m", &mk, &mv, 1, ttl));
					break;
				}
			}
		}
		hts[step] = at_us(10, (int64_t)step * 700000);
		apply(hts[step]);
		fx_apply(f2, &b2, hts[step]);
	}
	for (int i = 0; i < 400; i++) {
		uint64_t t = hts[i] + (i % 3 == 0 ? 0 : ht_make(1000 * (uint64_t)(i % 7), 0));
		for (int k = 0; k < 4; k++) {
			struct pv key = pv_str(keys[k]);
			struct row r1, r2;
			bool found1, found2;
			CHECK_OK_MSG(reader_get_row(C.f.s, &C.s, &key, 1, t, &C.f.arena, &r1, &found1,
						    C.f.errmsg), C.f.errmsg);
			CHECK_OK_MSG(reader_get_row(f2->s, &s2, &key, 1, t, &f2->arena, &r2, &found2,
						    f2->errmsg), f2->errmsg);
			const char *a = fmt_row(&r1, found1), *b = fmt_row(&r2, found2);
			CHECK_MSG(strcmp(a, b) == 0,
				  "seed %" PRIu64 " (TEST_SEED=%" PRIu64 "): %s at step %d:\n  packed   %s\n"
				  "  unpacked %s",
				  seed, seed, keys[k], i, a, b);
		}
		arena_reset(&C.f.arena);
		arena_reset(&f2->arena);
	}
	docwrite_free(&w2);
	batch_free(&b2);
	schema_free(&s2);
	fx_close(f2);
	F2_open = false;
	ctx_close();
}

TEST_MAIN(T(v1_layout_byte_exact), T(msgs_example_packed), T(partial_insert_stays_unpacked),
	  T(newer_cells_win_older_are_hidden), T(deletes_after_packed_insert),
	  T(write_ids_in_a_batch), T(row_ttl_on_packed_rows),
	  T(oversized_columns_fall_back_to_cells), T(schema_versions_api),
	  T(schema_change_keeps_old_rows_readable), T(documents_of_packed_rows),
	  T(malformed_payloads), T(corrupt_stored_rows), T(packed_and_unpacked_read_the_same))
