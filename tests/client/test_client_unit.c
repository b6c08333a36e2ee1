/* libdocraft's pure parts: the metadata cache (install checks, lookup by
 * hash, leader choice with down marks), values and their display, type
 * names, the schema builder, op constructors, statement completion, and
 * the conversion of values for a column type (which must give the very
 * pv the server decodes, so the hash agrees). No network. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "client/internal.h"
#include "client/metacache.h"
#include "docdb/key.h"
#include "rpc/wire.h"
#include "test.h"

/* A GetTable answer with tablets given as [start, end) pairs, listed in
 * the order given; replicas raft 1..3 at 127.0.0.1..3:9100, leader raft 2. */
struct answer {
	Docraft__GetTableResponse resp;
	Docraft__TableSchema schema;
	Docraft__ColumnSchema cols[2], *pcols[2];
	Docraft__TabletLocation locs[8], *plocs[8];
	Docraft__Peer peers[8][3], *ppeers[8][3];
	char ids[8][16];
};

static char *const addrs[3] = {"127.0.0.1:9100", "127.0.0.2:9100", "127.0.0.3:9100"};

static Docraft__GetTableResponse *answer(struct answer *a, const uint32_t (*parts)[2], size_t n)
{
	docraft__get_table_response__init(&a->resp);
	docraft__table_schema__init(&a->schema);
	a->schema.name = "t";
	for (int i = 0; i < 2; i++) {
		docraft__column_schema__init(&a->cols[i]);
		a->cols[i].name = i == 0 ? "k" : "v";
		a->cols[i].id = i;
		a->cols[i].kind = i == 0 ? DOCRAFT__COLUMN_KIND__HASH : DOCRAFT__COLUMN_KIND__REGULAR;
		a->cols[i].type = i == 0 ? DOCRAFT__COLUMN_TYPE__TEXT : DOCRAFT__COLUMN_TYPE__INT64;
		a->pcols[i] = &a->cols[i];
	}
	a->schema.columns = a->pcols;
	a->schema.n_columns = 2;
	a->resp.schema = &a->schema;
	for (size_t i = 0; i < n; i++) {
		Docraft__TabletLocation *l = &a->locs[i];
		docraft__tablet_location__init(l);
		snprintf(a->ids[i], sizeof a->ids[i], "t-%zu-x", i);
		l->tablet_id = a->ids[i];
		l->start = parts[i][0];
		l->end = parts[i][1];
		l->leader_raft_id = 2;
		for (int r = 0; r < 3; r++) {
			docraft__peer__init(&a->peers[i][r]);
			a->peers[i][r].raft_id = (uint64_t)r + 1;
			a->peers[i][r].address = addrs[r];
			a->peers[i][r].tserver_uuid = "u";
			a->ppeers[i][r] = &a->peers[i][r];
		}
		l->replicas = a->ppeers[i];
		l->n_replicas = 3;
		a->plocs[i] = l;
	}
	a->resp.tablets = a->plocs;
	a->resp.n_tablets = n;
	return &a->resp;
}

TEST(metacache_lookup_by_hash)
{
	static const uint32_t parts[4][2] = {
		{32768, 49152}, {0, 16384}, {49152, 65536}, {16384, 32768}};
	struct metacache mc;
	struct mc_table *t;
	struct answer a;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	metacache_init(&mc, NULL);
	t = metacache_table(&mc, "t");
	CHECK(metacache_table(&mc, "t") == t);
	CHECK(metacache_lookup(t, 0) == NULL); /* not loaded */
	CHECK_OK_MSG(metacache_install(t, answer(&a, parts, 4), errmsg), errmsg);
	CHECK(t->loaded);
	CHECK_EQ_INT(t->n_tablets, 4);
	CHECK_EQ_STR(metacache_lookup(t, 0)->id, "t-1-x");
	CHECK_EQ_STR(metacache_lookup(t, 16383)->id, "t-1-x");
	CHECK_EQ_STR(metacache_lookup(t, 16384)->id, "t-3-x");
	CHECK_EQ_STR(metacache_lookup(t, 32767)->id, "t-3-x");
	CHECK_EQ_STR(metacache_lookup(t, 32768)->id, "t-0-x");
	CHECK_EQ_STR(metacache_lookup(t, 49151)->id, "t-0-x");
	CHECK_EQ_STR(metacache_lookup(t, 49152)->id, "t-2-x");
	CHECK_EQ_STR(metacache_lookup(t, 65535)->id, "t-2-x");
	CHECK(metacache_lookup(t, 65536) == NULL);
	/* Every hash: the tablet covers it. */
	for (uint32_t h = 0; h < 65536; h += 7) {
		struct mc_tablet *tb = metacache_lookup(t, h);
		CHECK(tb->start <= h && h < tb->end);
	}
	CHECK_EQ_STR(metacache_lookup(t, 5)->leader, "127.0.0.2:9100");
	CHECK(metacache_tablet_by_id(t, "t-2-x") == metacache_lookup(t, 60000));
	CHECK(metacache_tablet_by_id(t, "nope") == NULL);
	CHECK_EQ_STR(t->schema.table, "t");
	CHECK_EQ_INT(t->generation, 1);
	metacache_forget(&mc, "t");
	CHECK(!t->loaded);
	CHECK(metacache_lookup(t, 5) == NULL);
	metacache_free(&mc);
}

TEST(metacache_refuses_bad_answers)
{
	static const uint32_t gap[2][2] = {{0, 30000}, {30001, 65536}};
	static const uint32_t overlap[2][2] = {{0, 30000}, {20000, 65536}};
	static const uint32_t partial[1][2] = {{0, 30000}};
	static const uint32_t good[1][2] = {{0, 65536}};
	struct metacache mc;
	struct mc_table *t;
	struct answer a;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	metacache_init(&mc, NULL);
	t = metacache_table(&mc, "t");
	CHECK_EQ_INT(metacache_install(t, answer(&a, gap, 2), errmsg), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(metacache_install(t, answer(&a, overlap, 2), errmsg), DOCRAFT_ECORRUPT);
	CHECK_EQ_INT(metacache_install(t, answer(&a, partial, 1), errmsg), DOCRAFT_EUNAVAILABLE);
	CHECK(strstr(errmsg, "cover [0, 30000)") != NULL);
	CHECK_EQ_INT(metacache_install(t, answer(&a, good, 0), errmsg), DOCRAFT_EUNAVAILABLE);
	answer(&a, good, 1);
	a.locs[0].leader_raft_id = 9;
	CHECK_EQ_INT(metacache_install(t, &a.resp, errmsg), DOCRAFT_ECORRUPT);
	CHECK(!t->loaded);
	/* A refused answer keeps the old contents. */
	CHECK_OK(metacache_install(t, answer(&a, good, 1), errmsg));
	CHECK_EQ_INT(metacache_install(t, answer(&a, gap, 2), errmsg), DOCRAFT_ECORRUPT);
	CHECK(t->loaded);
	CHECK_EQ_INT(t->n_tablets, 1);
	metacache_free(&mc);
}

TEST(metacache_targets_and_down_marks)
{
	static const uint32_t good[1][2] = {{0, 65536}};
	struct metacache mc;
	struct mc_table *t;
	struct mc_tablet *tb;
	struct answer a;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	metacache_init(&mc, NULL);
	t = metacache_table(&mc, "t");
	CHECK_OK(metacache_install(t, answer(&a, good, 1), errmsg));
	tb = metacache_lookup(t, 1);
	CHECK_EQ_STR(metacache_target(&mc, tb, 0), "127.0.0.2:9100");
	/* A leader marked down: the first replica that is not. */
	metacache_mark_down(&mc, "127.0.0.2:9100", 1000);
	CHECK(metacache_is_down(&mc, "127.0.0.2:9100", 1500));
	CHECK_EQ_STR(metacache_target(&mc, tb, 1500), "127.0.0.1:9100");
	metacache_mark_down(&mc, "127.0.0.1:9100", 1000);
	CHECK_EQ_STR(metacache_target(&mc, tb, 1500), "127.0.0.3:9100");
	metacache_mark_down(&mc, "127.0.0.3:9100", 1000);
	CHECK_EQ_STR(metacache_target(&mc, tb, 1500), "127.0.0.2:9100"); /* all down */
	/* Marks expire, and success clears them. */
	CHECK(!metacache_is_down(&mc, "127.0.0.2:9100", 1000 + MC_DOWN_MS));
	metacache_mark_up(&mc, "127.0.0.1:9100");
	CHECK(!metacache_is_down(&mc, "127.0.0.1:9100", 1500));
	/* Hints and rotation. */
	metacache_set_leader(tb, "127.0.0.3:9100");
	CHECK_EQ_STR(tb->leader, "127.0.0.3:9100");
	CHECK_EQ_STR(metacache_next_replica(tb, "127.0.0.3:9100"), "127.0.0.1:9100");
	CHECK_EQ_STR(metacache_next_replica(tb, "127.0.0.1:9100"), "127.0.0.2:9100");
	CHECK_EQ_STR(metacache_next_replica(tb, "9.9.9.9:1"), "127.0.0.1:9100");
	CHECK_EQ_STR(metacache_replica_address(tb, 3), "127.0.0.3:9100");
	CHECK(metacache_replica_address(tb, 4) == NULL);
	/* The mark table is bounded. */
	for (int i = 0; i < 3 * MC_DOWN_MAX; i++) {
		char addr[32];
		snprintf(addr, sizeof addr, "10.0.%d.%d:1", i / 256, i % 256);
		metacache_mark_down(&mc, addr, (uint64_t)i);
	}
	CHECK_EQ_INT(mc.n_down, MC_DOWN_MAX);
	metacache_free(&mc);
}

TEST(status_classes)
{
	static const int retry[] = {DOCRAFT_ENOTLEADER, DOCRAFT_ELEADERLOST, DOCRAFT_EUNAVAILABLE,
				    DOCRAFT_EBUSY, DOCRAFT_ETIMEDOUT, DOCRAFT_ETABLETNOTFOUND};
	static const int final[] = {DOCRAFT_EINVAL, DOCRAFT_ENOTFOUND, DOCRAFT_ETABLENOTFOUND,
				    DOCRAFT_ETOOBIG, DOCRAFT_ECORRUPT, DOCRAFT_EIO,
				    DOCRAFT_ETOOOLD};
	for (size_t i = 0; i < sizeof retry / sizeof retry[0]; i++)
		CHECK(status_retryable(retry[i]));
	for (size_t i = 0; i < sizeof final / sizeof final[0]; i++)
		CHECK(!status_retryable(final[i]));
}

static const char *fmt(docraft_value v, bool quoted)
{
	static char buf[128];
	docraft_value_format(&v, quoted, buf, sizeof buf);
	return buf;
}

TEST(values_format_like_cqlsh)
{
	static const uint8_t u[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
				      0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
	char small[4];
	CHECK_EQ_STR(fmt(docraft_value_null(), false), "null");
	CHECK_EQ_STR(fmt(docraft_value_bool(true), false), "True");
	CHECK_EQ_STR(fmt(docraft_value_int(-42), false), "-42");
	CHECK_EQ_STR(fmt(docraft_value_double(0.1), false), "0.1");
	CHECK_EQ_STR(fmt(docraft_value_double(1.0 / 3), false), "0.3333333333333333");
	CHECK_EQ_STR(fmt(docraft_value_float(0.1f), false), "0.1");
	CHECK_EQ_STR(fmt(docraft_value_double(NAN), false), "NaN");
	CHECK_EQ_STR(fmt(docraft_value_double(-INFINITY), false), "-Infinity");
	CHECK_EQ_STR(fmt(docraft_value_text("it's"), false), "it's");
	CHECK_EQ_STR(fmt(docraft_value_text("it's"), true), "'it''s'");
	CHECK_EQ_STR(fmt(docraft_value_blob("\x01\xab", 2), false), "0x01ab");
	CHECK_EQ_STR(fmt(docraft_value_timestamp(INT64_C(1714564800123456)), false),
		     "2024-05-01 12:00:00.123456+0000");
	CHECK_EQ_STR(fmt(docraft_value_timestamp(-1), false), "1969-12-31 23:59:59.999999+0000");
	CHECK_EQ_STR(fmt(docraft_value_date((UINT32_C(1) << 31) + 19844), false), "2024-05-01");
	CHECK_EQ_STR(fmt(docraft_value_date((UINT32_C(1) << 31) - 1), true), "'1969-12-31'");
	CHECK_EQ_STR(fmt(docraft_value_uuid(u), false), "123e4567-e89b-12d3-a456-426614174000");
	/* snprintf-like truncation. */
	CHECK_EQ_INT(docraft_value_format(&(docraft_value){0}, false, small, sizeof small), 4);
	{
		docraft_value v = docraft_value_text("abcdef");
		CHECK_EQ_INT(docraft_value_format(&v, false, small, sizeof small), 6);
		CHECK_EQ_STR(small, "abc");
	}
}

TEST(type_names_parse)
{
	enum col_type t, e, v;
	CHECK_OK(values_parse_type("int", &t, &e, &v));
	CHECK_EQ_INT(t, CT_INT32);
	CHECK_OK(values_parse_type(" map< text ,bigint > ", &t, &e, &v));
	CHECK_EQ_INT(t, CT_MAP);
	CHECK_EQ_INT(e, CT_TEXT);
	CHECK_EQ_INT(v, CT_INT64);
	CHECK_OK(values_parse_type("LIST<timestamp>", &t, &e, &v));
	CHECK_EQ_INT(t, CT_LIST);
	CHECK_EQ_INT(e, CT_TIMESTAMP);
	CHECK_OK(values_parse_type("set<uuid>", &t, &e, &v));
	CHECK_EQ_INT(t, CT_SET);
	CHECK_EQ_INT(values_parse_type("map<text>", &t, &e, &v), DOCRAFT_EINVAL);
	CHECK_EQ_INT(values_parse_type("set<map<int, int>>", &t, &e, &v), DOCRAFT_EINVAL);
	CHECK_EQ_INT(values_parse_type("jsonb", &t, &e, &v), DOCRAFT_EINVAL);
	CHECK_EQ_INT(values_parse_type("", &t, &e, &v), DOCRAFT_EINVAL);
	CHECK_EQ_INT(values_parse_type("list<int", &t, &e, &v), DOCRAFT_EINVAL);
}

TEST(schema_builder)
{
	docraft_schema *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(docraft_schema_new("events", &s, errmsg));
	CHECK_OK_MSG(docraft_schema_add_column(s, "dev", DOCRAFT_COLUMN_HASH, "text", errmsg),
		     errmsg);
	CHECK_OK(docraft_schema_add_column(s, "ts", DOCRAFT_COLUMN_RANGE_DESC, "timestamp", errmsg));
	CHECK_OK(docraft_schema_add_column(s, "tags", DOCRAFT_COLUMN_REGULAR, "set<text>", errmsg));
	CHECK_EQ_INT(docraft_schema_add_column(s, "x", DOCRAFT_COLUMN_REGULAR, "jsonb", errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(errmsg, "column x: unknown type 'jsonb'");
	CHECK_EQ_INT(docraft_schema_add_column(s, "h2", DOCRAFT_COLUMN_HASH, "int", errmsg),
		     DOCRAFT_EINVAL); /* hash after range */
	CHECK_EQ_INT(docraft_schema_add_column(s, "tags", DOCRAFT_COLUMN_REGULAR, "int", errmsg),
		     DOCRAFT_EINVAL);
	docraft_schema_set_default_ttl(s, 5000);
	CHECK_EQ_INT(s->s.ncols, 3);
	CHECK(s->s.cols[1].desc);
	CHECK_EQ_INT(s->s.cols[2].type, CT_SET);
	CHECK_EQ_INT(s->s.default_ttl_ms, 5000);
	/* The wire form is rpc/wire.c's (tests/rpc/test_wire.c). */
	CHECK_EQ_INT(s->s.n_hash, 1);
	CHECK_EQ_INT(s->s.n_range, 1);
	CHECK_EQ_INT(s->s.cols[2].elem_type, CT_TEXT);
	docraft_schema_free(s);
}

TEST(ops_validate_arguments)
{
	docraft_value key[1] = {docraft_value_text("k")};
	docraft_value e[2] = {docraft_value_int(1), docraft_value_int(2)};
	docraft_op *op;
	CHECK_EQ_INT(docraft_op_insert(NULL, 1, &op), DOCRAFT_EINVAL);
	CHECK(op == NULL);
	CHECK_EQ_INT(docraft_op_insert(key, 0, &op), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_op_map_put(key, 1, "m", e, NULL, 2, &op), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_op_set_add(key, 1, NULL, e, 2, &op), DOCRAFT_EINVAL);
	CHECK_OK(docraft_op_delete_row(key, 1, &op));
	CHECK_EQ_INT(docraft_op_column(op, "v", &e[0]), DOCRAFT_EINVAL);
	CHECK(strstr(docraft_errmsg(), "only INSERT and UPDATE") != NULL);
	docraft_op_free(op);
	CHECK_OK(docraft_op_update(key, 1, &op));
	CHECK_EQ_INT(docraft_op_collection(op, "s", e, NULL, 2), DOCRAFT_EINVAL);
	docraft_op_set_ttl(op, 1500);
	CHECK(op->has_ttl);
	CHECK_EQ_INT(op->ttl_ms, 1500);
	docraft_op_free(op);
	/* Values are copied: the op outlives the caller's buffers. */
	{
		char text[8] = "abc";
		docraft_value v = docraft_value_text(text);
		CHECK_OK(docraft_op_list_append(key, 1, "l", &v, 1, &op));
		text[0] = 'X';
		CHECK_EQ_MEM(op->cols[0].keys[0].v.s.p, 3, "abc", 3);
		docraft_op_free(op);
	}
	docraft_op_free(NULL);
}

TEST(cql_statement_complete)
{
	CHECK(!docraft_cql_complete(""));
	CHECK(!docraft_cql_complete("SELECT * FROM t"));
	CHECK(docraft_cql_complete("SELECT * FROM t;"));
	CHECK(docraft_cql_complete("SELECT * FROM t;  -- done\n"));
	CHECK(!docraft_cql_complete("INSERT INTO t (a) VALUES ('x;"));
	CHECK(docraft_cql_complete("INSERT INTO t (a) VALUES ('x;');"));
	CHECK(!docraft_cql_complete("SELECT 1 /* ; "));
	CHECK(!docraft_cql_complete("SELECT * FROM t; SELECT"));
	CHECK(docraft_cql_complete("SELECT # FROM t;")); /* the parser will say why */
}

/* The value a client sends, decoded as the server does (rpc/wire.c), is
 * the pv the client hashed: both sides route a row to the same tablet. */
TEST(conversion_matches_server)
{
	static const struct {
		enum col_type t;
		docraft_value v;
	} cases[] = {
		{CT_INT8, {DOCRAFT_TYPE_INT, {.i = -7}}},
		{CT_INT16, {DOCRAFT_TYPE_INT, {.i = 300}}},
		{CT_INT32, {DOCRAFT_TYPE_INT, {.i = 10}}},
		{CT_INT64, {DOCRAFT_TYPE_INT, {.i = INT64_C(1) << 40}}},
		{CT_TEXT, {DOCRAFT_TYPE_TEXT, {.s = {"user1", 5}}}},
		{CT_BLOB, {DOCRAFT_TYPE_BLOB, {.s = {"\0\1", 2}}}},
		{CT_TIMESTAMP, {DOCRAFT_TYPE_TIMESTAMP, {.i = 1714564800000000}}},
		{CT_TIMESTAMP, {DOCRAFT_TYPE_INT, {.i = 5}}},
		{CT_DATE, {DOCRAFT_TYPE_DATE, {.date = 2147483648u + 10}}},
		{CT_DOUBLE, {DOCRAFT_TYPE_FLOAT, {.f = 1.5f}}},
		{CT_FLOAT, {DOCRAFT_TYPE_DOUBLE, {.d = 2.25}}},
		{CT_BOOL, {DOCRAFT_TYPE_BOOL, {.b = true}}},
		{CT_UUID, {DOCRAFT_TYPE_UUID, {.uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
						       15, 16}}}},
	};
	struct arena a = ARENA_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		Docraft__Datum *d;
		struct pv mine, theirs;
		docraft_value back;
		CHECK_OK_MSG(values_to_datum(&cases[i].v, cases[i].t, false, "c", &a, &d, &mine,
					   errmsg),
			     errmsg);
		CHECK_OK_MSG(wire_datum_to_pv(d, cases[i].t, "c", &theirs, errmsg), errmsg);
		CHECK_EQ_INT(mine.type, theirs.type);
		CHECK(pv_equal(&mine, &theirs));
		CHECK_EQ_INT(key_hash_components(&mine, 1), key_hash_components(&theirs, 1));
		CHECK_OK(values_from_datum(d, cases[i].t, "c", &a, &back, errmsg));
		{
			struct pv again = values_to_pv(&back, cases[i].t);
			CHECK(pv_equal(&again, &mine));
		}
	}
	/* Mismatches and ranges. */
	{
		Docraft__Datum *d;
		struct pv pv;
		docraft_value v = docraft_value_int(200);
		CHECK_EQ_INT(values_to_datum(&v, CT_INT8, false, "column 'b'", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		CHECK_EQ_STR(errmsg, "column 'b': 200 out of range for tinyint");
		v = docraft_value_int(INT64_C(1) << 33);
		CHECK_EQ_INT(values_to_datum(&v, CT_INT32, false, "c", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		v = docraft_value_textn("\xff", 1);
		CHECK_EQ_INT(values_to_datum(&v, CT_TEXT, false, "c", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		CHECK(strstr(errmsg, "UTF-8") != NULL);
		v = docraft_value_text("x");
		CHECK_EQ_INT(values_to_datum(&v, CT_BLOB, false, "c", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		CHECK_EQ_STR(errmsg, "c is blob: cannot store a text value");
		v = docraft_value_null();
		CHECK_EQ_INT(values_to_datum(&v, CT_TEXT, false, "c", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		CHECK_OK(values_to_datum(&v, CT_TEXT, true, "c", &a, &d, &pv, errmsg));
		CHECK_EQ_INT(d->v_case, DOCRAFT__DATUM__V_NULL);
		v = docraft_value_text("x");
		CHECK_EQ_INT(values_to_datum(&v, CT_LIST, false, "c", &a, &d, &pv, errmsg),
			     DOCRAFT_EINVAL);
		CHECK_EQ_STR(errmsg, "c: not a primitive column");
	}
	/* What the server sent that does not fit its column: ECORRUPT. */
	{
		Docraft__Datum d;
		docraft_value v;
		struct pv text = pv_str("x");
		wire_pv_to_datum(&text, &d);
		CHECK_EQ_INT(values_from_datum(&d, CT_INT32, "column 'n'", &a, &v, errmsg),
			     DOCRAFT_ECORRUPT);
		CHECK_EQ_STR(errmsg, "column 'n': the server sent a value that is not int");
		CHECK_EQ_INT(values_from_datum(&d, CT_MAP, "column 'm'", &a, &v, errmsg),
			     DOCRAFT_ECORRUPT);
		CHECK_EQ_STR(errmsg, "column 'm': not a primitive column");
		CHECK_OK(values_from_datum(NULL, CT_MAP, "column 'm'", &a, &v, errmsg));
		CHECK_EQ_INT(v.type, DOCRAFT_TYPE_NULL);
		/* Bytes are copied: the value outlives the message. */
		CHECK_OK(values_from_datum(&d, CT_BLOB, "c", &a, &v, errmsg));
		CHECK_EQ_INT(v.type, DOCRAFT_TYPE_BLOB);
		CHECK((const void *)v.v.s.p != (const void *)text.v.s.p);
		CHECK_EQ_MEM(v.v.s.p, v.v.s.len, "x", 1);
	}
	arena_free(&a);
}

static void scan_cb_unused(docraft_req *req)
{
	(void)req;
	CHECK(!"called");
}

/* The four scan calls check their arguments before any job exists
 * (scan.c: scan_call); no master is asked. */
TEST(scan_calls_check_arguments)
{
	docraft_client *c;
	docraft_req req;
	docraft_result *r = (docraft_result *)&req; /* not a result: must become NULL */
	docraft_scan_spec spec;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memset(&spec, 0, sizeof spec);
	CHECK_OK_MSG(docraft_client_open("127.0.0.1:1", NULL, &c, errmsg), errmsg);
	CHECK_EQ_INT(docraft_scan(NULL, "t", &spec, &r), DOCRAFT_EINVAL);
	CHECK_EQ_INT(docraft_scan(c, "t", &spec, NULL), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "NULL argument");
	CHECK_EQ_INT(docraft_scan(c, NULL, &spec, &r), DOCRAFT_EINVAL);
	CHECK(r == NULL);
	spec.n_hash = 1; /* and no hash_key */
	CHECK_EQ_INT(docraft_scan(c, "t", &spec, &r), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "bad scan spec");
	CHECK_EQ_INT(docraft_scan_async(c, &req, "t", &spec, NULL), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "NULL argument");
	CHECK_EQ_INT(docraft_scan_async(c, &req, "t", &spec, scan_cb_unused), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "bad scan spec");
	r = (docraft_result *)&req;
	CHECK_EQ_INT(docraft_scan_resume(c, NULL, 0, &r), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "nothing to resume: the result has no more rows");
	CHECK(r == NULL);
	CHECK_EQ_INT(docraft_scan_resume(c, NULL, 0, NULL), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "NULL argument");
	CHECK_EQ_INT(docraft_scan_resume_async(c, NULL, NULL, 0, scan_cb_unused), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "NULL argument");
	CHECK_EQ_INT(docraft_scan_resume_async(c, &req, NULL, 0, scan_cb_unused), DOCRAFT_EINVAL);
	CHECK_EQ_STR(docraft_errmsg(), "nothing to resume: the result has no more rows");
	docraft_client_close(c);
}

TEST_MAIN(T(metacache_lookup_by_hash), T(metacache_refuses_bad_answers),
	  T(metacache_targets_and_down_marks), T(status_classes), T(values_format_like_cqlsh),
	  T(type_names_parse), T(schema_builder), T(ops_validate_arguments),
	  T(cql_statement_complete), T(conversion_matches_server), T(scan_calls_check_arguments))
