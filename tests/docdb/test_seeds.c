/* Golden tests: every worked example of ../shared/seeds/ reproduced through
 * the DocDB write API on a real store, asserting the exact key-value layout
 * (in the seeds' notation) and the read results after each step.
 *
 *   msgs       T1-T5   insert, map update, second insert, column delete,
 *                      row delete   (seed 000 / 002, "Examples")
 *   page_views T1-T2   row TTL, column TTL, reads before/after each expiry
 *   nested doc T10     five pairs with init markers   (seed 000 / 002)
 *   YEDIS      T1-T7   the sorted view of seed 002's Redis table
 *
 * Seed layouts after compaction (msgs after T4/T5) belong to compaction GC
 * (issue 3); here the physical layout keeps the shadowed pairs and the reads
 * prove they are hidden. */
#include <stdio.h>
#include <string.h>

#include "docdb/key.h"
#include "fixture.h"

static void msgs_schema(struct schema *s)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(schema_init(s, "msgs", err));
	CHECK_OK(schema_add(s, "user_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(s, "msg_id", COL_RANGE, CT_INT32, err));
	CHECK_OK(schema_add(s, "msg", COL_REGULAR, CT_TEXT, err));
	CHECK_OK_MSG(schema_add_column(s, "msg_props", COL_REGULAR, CT_MAP, CT_TEXT, CT_TEXT, false,
				       err), err);
}

static struct row read_row(struct fx *f, const struct schema *s, const struct pv *key, size_t n,
			   uint64_t ht, bool *found)
{
	struct row r;
	CHECK_OK_MSG(reader_get_row(f->s, s, key, n, ht, &f->arena, &r, found, f->errmsg),
		     f->errmsg);
	return r;
}

/* "msg=..., props=..." of a msgs row, or "not found". */
static const char *msgs_row(struct fx *f, const struct schema *s, int32_t id, uint64_t ht)
{
	static char out[512];
	struct pv key[2] = {pv_str("user1"), pv_int32(id)};
	bool found;
	struct row r = read_row(f, s, key, 2, ht, &found);
	char msg[128];
	if (!found)
		return "not found";
	snprintf(msg, sizeof msg, "%s", fx_col(f, &r, "msg"));
	snprintf(out, sizeof out, "msg=%s props=%s", msg, fx_col(f, &r, "msg_props"));
	return out;
}

TEST(msgs_t1_to_t5)
{
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	struct pv k10[2] = {pv_str("user1"), pv_int32(10)};
	struct pv k20[2] = {pv_str("user1"), pv_int32(20)};
	const uint64_t T[6] = {0, fx_ht(1), fx_ht(2), fx_ht(3), fx_ht(4), fx_ht(5)};

	fx_open(&f, "seed-msgs");
	msgs_schema(&s);
	batch_init(&b);
	docwrite_init(&w, &s, &b, NULL);
	for (int i = 1; i <= 5; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		fx_label_ht(&f, T[i], l);
	}
	fx_label_hash(&f, key_hash_components(&k10[0], 1), "hash1");

	/* T1: INSERT INTO msgs (user_id, msg_id, msg, msg_props)
	 *     VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'}); */
	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("a@b.com"), pv_str("hello")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg1")),
					 colval_map("msg_props", mk, mv, 2)};
		CHECK_OK_MSG(docwrite_insert(&w, k10, 2, cols, 2, DOCWRITE_NO_TTL), w.errmsg);
		fx_apply(&f, &b, T[1]);
	}
	CHECK_EQ_STR(fx_dump(&f, &s, false),
		     "(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"
		     "(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[1]),
		     "msg='msg1' props={'from': 'a@b.com', 'subject': 'hello'}");

	/* T2: UPDATE msgs SET msg_props = msg_props + {'read_status' : 'true'}
	 *     WHERE user_id = 'user1', msg_id = 10 */
	{
		struct pv mk = pv_str("read_status"), mv = pv_str("true");
		CHECK_OK_MSG(docwrite_map_put(&w, k10, 2, "msg_props", &mk, &mv, 1, DOCWRITE_NO_TTL),
			     w.errmsg);
		fx_apply(&f, &b, T[2]);
	}
	CHECK_EQ_STR(fx_dump(&f, &s, false),
		     "(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"
		     "(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");

	/* T3: INSERT INTO msgs (user_id, msg_id, msg, msg_props)
	 *     VALUES ('user1', 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'}); */
	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("c@d.com"), pv_str("bar")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg2")),
					 colval_map("msg_props", mk, mv, 2)};
		CHECK_OK_MSG(docwrite_insert(&w, k20, 2, cols, 2, DOCWRITE_NO_TTL), w.errmsg);
		fx_apply(&f, &b, T[3]);
	}
	const char *t3 =
		"(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"
		"(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n"
		"(hash1, 'user1', 20), liveness_column_id, T3 -> [NULL]\n"
		"(hash1, 'user1', 20), msg_column_id, T3 -> 'msg2'\n"
		"(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"
		"(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n";
	CHECK_EQ_STR(fx_dump(&f, &s, false), t3);
	CHECK_EQ_STR(msgs_row(&f, &s, 20, T[3]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");

	/* T4: DELETE msg_props FROM msgs WHERE user_id = 'user1' AND msg_id = 10; */
	CHECK_OK_MSG(docwrite_delete_column(&w, k10, 2, "msg_props"), w.errmsg);
	fx_apply(&f, &b, T[4]);
	const char *t4 =
		"(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"
		"(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
		"(hash1, 'user1', 10), msg_props_column_id, T4 -> [DELETE]\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		"(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n"
		"(hash1, 'user1', 20), liveness_column_id, T3 -> [NULL]\n"
		"(hash1, 'user1', 20), msg_column_id, T3 -> 'msg2'\n"
		"(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"
		"(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n";
	CHECK_EQ_STR(fx_dump(&f, &s, false), t4);
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[4]), "msg='msg1' props=NULL");
	CHECK_EQ_STR(msgs_row(&f, &s, 20, T[4]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");

	/* T5: DELETE FROM msgs WHERE user_id = 'user1' AND msg_id = 10; */
	CHECK_OK_MSG(docwrite_delete_row(&w, k10, 2), w.errmsg);
	fx_apply(&f, &b, T[5]);
	CHECK_EQ_STR(fx_dump(&f, &s, false),
		     "(hash1, 'user1', 10), T5 -> [DELETE]\n"
		     "(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"
		     "(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, T4 -> [DELETE]\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'from', T1 -> 'a@b.com'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'read_status', T2 -> 'true'\n"
		     "(hash1, 'user1', 10), msg_props_column_id, 'subject', T1 -> 'hello'\n"
		     "(hash1, 'user1', 20), liveness_column_id, T3 -> [NULL]\n"
		     "(hash1, 'user1', 20), msg_column_id, T3 -> 'msg2'\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"
		     "(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[5]), "not found");
	CHECK_EQ_STR(msgs_row(&f, &s, 20, T[5]), "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");

	/* Point-in-time reads inside the retention window see each step. */
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[1]),
		     "msg='msg1' props={'from': 'a@b.com', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[4]), "msg='msg1' props=NULL");
	CHECK_EQ_STR(msgs_row(&f, &s, 20, T[2]), "not found");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[1] - 1), "not found");

	/* The layout survives flush + reopen byte for byte. */
	CHECK_OK_MSG(store_flush(f.s, f.errmsg), f.errmsg);
	fx_reopen(&f);
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[2]),
		     "msg='msg1' props={'from': 'a@b.com', 'read_status': 'true', 'subject': 'hello'}");
	CHECK_EQ_STR(msgs_row(&f, &s, 10, T[5]), "not found");

	docwrite_free(&w);
	batch_free(&b);
	schema_free(&s);
	fx_close(&f);
}

static const char *pv_row(struct fx *f, const struct schema *s, uint64_t ht)
{
	static char out[256];
	struct pv key = pv_str("abc.com");
	bool found;
	struct row r = read_row(f, s, &key, 1, ht, &found);
	char views[64];
	if (!found)
		return "not found";
	snprintf(views, sizeof views, "%s", fx_col(f, &r, "views"));
	snprintf(out, sizeof out, "views=%s category=%s", views, fx_col(f, &r, "category"));
	return out;
}

TEST(page_views_ttl)
{
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv key = pv_str("abc.com");
	const uint64_t T1 = fx_ht(100), T2 = fx_ht(160);

	fx_open(&f, "seed-ttl");
	CHECK_OK(schema_init(&s, "page_views", err));
	CHECK_OK(schema_add(&s, "page_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(&s, "views", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add(&s, "category", COL_REGULAR, CT_TEXT, err));
	batch_init(&b);
	docwrite_init(&w, &s, &b, NULL);
	fx_label_ht(&f, T1, "T1");
	fx_label_ht(&f, T2, "T2");
	fx_label_hash(&f, key_hash_components(&key, 1), "hash1");

	/* T1: INSERT INTO page_views (page_id, views) VALUES ('abc.com', 10) USING TTL 86400 */
	struct colval views = colval_of("views", pv_int32(10));
	CHECK_OK_MSG(docwrite_insert(&w, &key, 1, &views, 1, 86400 * 1000LL), w.errmsg);
	fx_apply(&f, &b, T1);
	CHECK_EQ_STR(fx_dump(&f, &s, false),
		     "(hash1, 'abc.com'), liveness_column_id, T1 -> (TTL = 86400) [NULL]\n"
		     "(hash1, 'abc.com'), views_column_id, T1 -> (TTL = 86400) 10\n");

	/* T2: UPDATE page_views USING TTL 3600 SET category = 'news' WHERE page_id = 'abc.com'; */
	struct colval cat = colval_of("category", pv_str("news"));
	CHECK_OK_MSG(docwrite_update(&w, &key, 1, &cat, 1, 3600 * 1000LL), w.errmsg);
	fx_apply(&f, &b, T2);
	CHECK_EQ_STR(fx_dump(&f, &s, false),
		     "(hash1, 'abc.com'), liveness_column_id, T1 -> (TTL = 86400) [NULL]\n"
		     "(hash1, 'abc.com'), views_column_id, T1 -> (TTL = 86400) 10\n"
		     "(hash1, 'abc.com'), category_column_id, T2 -> (TTL = 3600) 'news'\n");

	CHECK_EQ_STR(pv_row(&f, &s, T1), "views=10 category=NULL");
	CHECK_EQ_STR(pv_row(&f, &s, T2), "views=10 category='news'");
	/* category expires 3600 s after T2: alive at exactly +3600 s, gone 1 µs later. */
	CHECK_EQ_STR(pv_row(&f, &s, fx_ht(160 + 3600)), "views=10 category='news'");
	CHECK_EQ_STR(pv_row(&f, &s, fx_ht_us(160 + 3600, 1)), "views=10 category=NULL");
	/* The row (liveness + views) expires 86400 s after T1. */
	CHECK_EQ_STR(pv_row(&f, &s, fx_ht(100 + 86400)), "views=10 category=NULL");
	CHECK_EQ_STR(pv_row(&f, &s, fx_ht_us(100 + 86400, 1)), "not found");
	/* Before T1 nothing. */
	CHECK_EQ_STR(pv_row(&f, &s, fx_ht(99)), "not found");

	docwrite_free(&w);
	batch_free(&b);
	schema_free(&s);
	fx_close(&f);
}

TEST(nested_document)
{
	struct fx f;
	struct batch b;
	struct docwrite w;
	struct buf dk = BUF_INIT;
	struct pv root = pv_str("DocumentKey1");
	struct dockey k = {false, 0, 0, 1, NULL, &root};
	const uint64_t T10 = fx_ht(10), T11 = fx_ht(11);

	/* DocumentKey1 = { SubKey1 = { SubKey2 = Value1, SubKey3 = Value2 }, SubKey4 = Value3 } */
	struct pv k1[2] = {pv_str("SubKey2"), pv_str("SubKey3")};
	struct subdoc c1[2] = {{0, pv_str("Value1"), NULL, NULL, 0}, {0, pv_str("Value2"), NULL, NULL, 0}};
	struct pv k0[2] = {pv_str("SubKey1"), pv_str("SubKey4")};
	struct subdoc c0[2] = {{1, {0}, k1, c1, 2}, {0, pv_str("Value3"), NULL, NULL, 0}};
	struct subdoc doc = {1, {0}, k0, c0, 2};

	fx_open(&f, "seed-nested");
	batch_init(&b);
	docwrite_init(&w, NULL, &b, NULL);
	dockey_append(&dk, &k);
	fx_label_ht(&f, T10, "T10");
	fx_label_ht(&f, T11, "T11");

	CHECK_OK_MSG(docwrite_insert_subdoc(&w, dk.data, dk.len, NULL, 0, &doc), w.errmsg);
	fx_apply(&f, &b, T10);
	CHECK_EQ_STR(fx_dump(&f, NULL, false),
		     "('DocumentKey1'), T10 -> {}\n"
		     "('DocumentKey1'), 'SubKey1', T10 -> {}\n"
		     "('DocumentKey1'), 'SubKey1', 'SubKey2', T10 -> 'Value1'\n"
		     "('DocumentKey1'), 'SubKey1', 'SubKey3', T10 -> 'Value2'\n"
		     "('DocumentKey1'), 'SubKey4', T10 -> 'Value3'\n");

	const struct docnode *n;
	CHECK_OK_MSG(reader_get_doc(f.s, dk.data, dk.len, NULL, 0, T10, 0, &f.arena, &n, f.errmsg),
		     f.errmsg);
	CHECK_EQ_STR(fx_doc(&f, n),
		     "{'SubKey1': {'SubKey2': 'Value1', 'SubKey3': 'Value2'}, 'SubKey4': 'Value3'}");
	/* One sub-document. */
	CHECK_OK_MSG(reader_get_doc(f.s, dk.data, dk.len, &k0[0], 1, T10, 0, &f.arena, &n, f.errmsg),
		     f.errmsg);
	CHECK_EQ_STR(fx_doc(&f, n), "{'SubKey2': 'Value1', 'SubKey3': 'Value2'}");

	/* Deleting a sub-document is one tombstone, without reading. */
	CHECK_OK_MSG(docwrite_delete_path(&w, dk.data, dk.len, &k0[0], 1), w.errmsg);
	fx_apply(&f, &b, T11);
	CHECK_EQ_INT(b.count, 0);
	CHECK_OK(reader_get_doc(f.s, dk.data, dk.len, NULL, 0, T11, 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'SubKey4': 'Value3'}");
	CHECK_OK(reader_get_doc(f.s, dk.data, dk.len, &k0[0], 1, T11, 0, &f.arena, &n, f.errmsg));
	CHECK(n == NULL);
	CHECK_OK(reader_get_doc(f.s, dk.data, dk.len, k0, 1, T10, 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'SubKey2': 'Value1', 'SubKey3': 'Value2'}");

	buf_free(&dk);
	docwrite_free(&w);
	batch_free(&b);
	fx_close(&f);
}

/* ---- YEDIS ----------------------------------------------------------------
 * The Redis mapping of seed 002, written with the generic document API. Redis
 * semantics need a read to know whether a key exists (to write the type's
 * init marker), done here with reader_get_doc exactly as the YEDIS layer does.
 * Hash: Redis Cluster CRC16 (XMODEM) mod 16384 (docdb-format.md §4.2). */

static uint16_t crc16_xmodem(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

static void redis_key(struct buf *out, const char *k)
{
	struct pv c = pv_str(k);
	struct dockey dk = {true, (uint16_t)(crc16_xmodem((const uint8_t *)k, strlen(k)) % 16384),
			    1, 0, &c, NULL};
	buf_reset(out);
	dockey_append(out, &dk);
}

static bool redis_exists(struct fx *f, const struct buf *k, uint64_t ht)
{
	const struct docnode *n;
	CHECK_OK_MSG(reader_get_doc(f->s, k->data, k->len, NULL, 0, ht, 0, &f->arena, &n, f->errmsg),
		     f->errmsg);
	return n != NULL;
}

/* HSET/HMSET/SADD: marker when the key is new, then the fields. */
static void redis_collection_put(struct fx *f, struct docwrite *w, const char *key,
				 enum val_kind type, const char **fields, const char **vals,
				 size_t n, uint64_t ht)
{
	struct buf k = BUF_INIT;
	redis_key(&k, key);
	if (!redis_exists(f, &k, ht - 1)) {
		struct docvalue m = docvalue_kind(type);
		CHECK_OK(docwrite_put_path(w, k.data, k.len, NULL, 0, &m));
	}
	for (size_t i = 0; i < n; i++) {
		struct pv sub = pv_str(fields[i]);
		struct docvalue v = docvalue_of(vals ? pv_str(vals[i]) : pv_null());
		CHECK_OK(docwrite_put_path(w, k.data, k.len, &sub, 1, &v));
	}
	buf_free(&k);
}

TEST(yedis_table)
{
	struct fx f;
	struct batch b;
	struct docwrite w;
	struct buf k = BUF_INIT;
	uint64_t T[8];
	const char *keys[3] = {"key1", "key2", "key3"};

	fx_open(&f, "seed-yedis");
	batch_init(&b);
	docwrite_init(&w, NULL, &b, NULL);
	for (int i = 1; i <= 7; i++) {
		char l[4];
		snprintf(l, sizeof l, "T%d", i);
		T[i] = fx_ht(i);
		fx_label_ht(&f, T[i], l);
	}
	for (int i = 0; i < 3; i++) {
		char l[4];
		snprintf(l, sizeof l, "h%d", i + 1);
		fx_label_hash(&f, crc16_xmodem((const uint8_t *)keys[i], 4) % 16384, l);
	}

	/* T1 SET key1 value1 EX 15 */
	{
		struct docvalue v = docvalue_of(pv_str("value1"));
		v.has_ttl = true;
		v.ttl_ms = 15000;
		redis_key(&k, "key1");
		CHECK_OK(docwrite_put_path(&w, k.data, k.len, NULL, 0, &v));
		fx_apply(&f, &b, T[1]);
	}
	/* T2 HSET key2 subkey1 value1 */
	{
		const char *fl[] = {"subkey1"}, *vl[] = {"value1"};
		redis_collection_put(&f, &w, "key2", VAL_OBJECT, fl, vl, 1, T[2]);
		fx_apply(&f, &b, T[2]);
	}
	/* T3 HSET key2 subkey2 value2 */
	{
		const char *fl[] = {"subkey2"}, *vl[] = {"value2"};
		redis_collection_put(&f, &w, "key2", VAL_OBJECT, fl, vl, 1, T[3]);
		fx_apply(&f, &b, T[3]);
	}
	/* T4 DEL key2 */
	redis_key(&k, "key2");
	CHECK_OK(docwrite_delete_path(&w, k.data, k.len, NULL, 0));
	fx_apply(&f, &b, T[4]);
	/* T5 HMSET key2 subkey1 new_val1 subkey3 value3 */
	{
		const char *fl[] = {"subkey1", "subkey3"}, *vl[] = {"new_val1", "value3"};
		redis_collection_put(&f, &w, "key2", VAL_OBJECT, fl, vl, 2, T[5]);
		fx_apply(&f, &b, T[5]);
	}
	/* T6 SADD key3 value4 value5 */
	{
		const char *fl[] = {"value4", "value5"};
		redis_collection_put(&f, &w, "key3", VAL_REDIS_SET, fl, NULL, 2, T[6]);
		fx_apply(&f, &b, T[6]);
	}
	/* T7 SADD key3 value6 */
	{
		const char *fl[] = {"value6"};
		redis_collection_put(&f, &w, "key3", VAL_REDIS_SET, fl, NULL, 1, T[7]);
		fx_apply(&f, &b, T[7]);
	}

	/* The seed's sorted view, one group per key. The seed lists key3's
	 * members as value6, value4, value5; byte order (which RocksDB and
	 * this view follow) is value4, value5, value6. Groups come in the order
	 * of their real hashes. */
	const char *group[3] = {
		"(h1, key1), T1 -> 15, value1\n",
		"(h2, key2), T5 -> [Redis-Hash-Type]\n"
		"(h2, key2), T4 -> Tombstone\n"
		"(h2, key2), T2 -> [Redis-Hash-Type]\n"
		"(h2, key2), subkey1, T5 -> new_val1\n"
		"(h2, key2), subkey1, T2 -> value1\n"
		"(h2, key2), subkey2, T3 -> value2\n"
		"(h2, key2), subkey3, T5 -> value3\n",
		"(h3, key3), T6 -> [Redis-Set-Type]\n"
		"(h3, key3), value4, T6 -> [NULL]\n"
		"(h3, key3), value5, T6 -> [NULL]\n"
		"(h3, key3), value6, T7 -> [NULL]\n",
	};
	int order[3] = {0, 1, 2};
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++) {
			uint16_t hi = crc16_xmodem((const uint8_t *)keys[order[i]], 4) % 16384;
			uint16_t hj = crc16_xmodem((const uint8_t *)keys[order[j]], 4) % 16384;
			if (hj < hi) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
		}
	char want[2048] = "";
	for (int i = 0; i < 3; i++)
		strcat(want, group[order[i]]);
	CHECK_EQ_STR(fx_dump(&f, NULL, true), want);

	/* Reads: GET key1 before and after EX 15; HGETALL key2; SMEMBERS key3. */
	const struct docnode *n;
	redis_key(&k, "key1");
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, fx_ht(16), 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "'value1'");
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, fx_ht_us(16, 1), 0, &f.arena, &n, f.errmsg));
	CHECK(n == NULL);
	redis_key(&k, "key2");
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, T[3], 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'subkey1': 'value1', 'subkey2': 'value2'}");
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, T[4], 0, &f.arena, &n, f.errmsg));
	CHECK(n == NULL);
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, T[7], 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'subkey1': 'new_val1', 'subkey3': 'value3'}");
	CHECK_EQ_INT(n->kind, VAL_OBJECT);
	CHECK(n->has_marker);
	redis_key(&k, "key3");
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, T[7], 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'value4': NULL, 'value5': NULL, 'value6': NULL}");
	CHECK_EQ_INT(n->kind, VAL_REDIS_SET);
	CHECK_OK(reader_get_doc(f.s, k.data, k.len, NULL, 0, T[6], 0, &f.arena, &n, f.errmsg));
	CHECK_EQ_STR(fx_doc(&f, n), "{'value4': NULL, 'value5': NULL}");

	buf_free(&k);
	docwrite_free(&w);
	batch_free(&b);
	fx_close(&f);
}

TEST_MAIN(T(msgs_t1_to_t5), T(page_views_ttl), T(nested_document), T(yedis_table))
