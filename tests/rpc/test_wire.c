/* Conversions between DocDB types and proto/docraft.proto messages. */
#include <string.h>

#include "common/hlc.h"
#include "docdb/store.h"
#include "rpc/wire.h"
#include "test.h"

static void msgs_schema(struct schema *s)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(schema_init(s, "msgs", err));
	CHECK_OK(schema_add(s, "user_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add_column(s, "msg_id", COL_RANGE, CT_INT32, 0, 0, true, err));
	CHECK_OK(schema_add(s, "msg", COL_REGULAR, CT_TEXT, err));
	CHECK_OK(schema_add_column(s, "msg_props", COL_REGULAR, CT_MAP, CT_TEXT, CT_TEXT, false, err));
	s->default_ttl_ms = 5000;
}

TEST(schema_round_trip_through_bytes)
{
	struct schema s, back;
	struct arena a = ARENA_INIT;
	Docraft__TableSchema pb;
	char err[DOCRAFT_ERRMSG_SIZE];
	size_t len;
	msgs_schema(&s);
	wire_schema_to_pb(&s, &pb, &a);
	void *bytes = wire_pack(&pb.base, &a, &len);
	Docraft__TableSchema *u = docraft__table_schema__unpack(NULL, len, bytes);
	CHECK(u != NULL);
	CHECK_OK_MSG(wire_schema_from_pb(u, &back, err), err);
	CHECK_EQ_STR(back.table, "msgs");
	CHECK_EQ_INT(back.ncols, 4);
	CHECK_EQ_INT(back.n_hash, 1);
	CHECK(schema_find(&back, "msg_id")->desc);
	CHECK_EQ_INT(schema_find(&back, "msg_props")->value_type, CT_TEXT);
	CHECK_EQ_INT(back.default_ttl_ms, 5000);
	/* Ids are kept even with gaps (dropped columns). */
	u->columns[3]->id = 9;
	schema_free(&back);
	CHECK_OK(wire_schema_from_pb(u, &back, err));
	CHECK_EQ_INT(schema_find(&back, "msg_props")->id, 9);
	CHECK_EQ_INT(back.next_id, 10);
	schema_free(&back);
	u->columns[3]->id = 2; /* duplicate of msg */
	CHECK_EQ_INT(wire_schema_from_pb(u, &back, err), DOCRAFT_EINVAL);
	docraft__table_schema__free_unpacked(u, NULL);
	schema_free(&s);
	arena_free(&a);
}

TEST(datum_types_checked)
{
	Docraft__Datum d;
	struct pv v;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv in = pv_int32(7);
	wire_pv_to_datum(&in, &d);
	CHECK_OK(wire_datum_to_pv(&d, CT_INT32, "c", &v, err));
	CHECK_EQ_INT(v.v.i32, 7);
	CHECK_EQ_INT(wire_datum_to_pv(&d, CT_TEXT, "column 'x'", &v, err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "column 'x': expected a text value") != NULL);
	d.i = (int64_t)1 << 40;
	CHECK_EQ_INT(wire_datum_to_pv(&d, CT_INT32, "c", &v, err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "out of range") != NULL);
	docraft__datum__init(&d); /* not set = NULL */
	CHECK_OK(wire_datum_to_pv(&d, CT_INT32, "c", &v, err));
	CHECK_EQ_INT(v.type, PV_NULL);
	uint8_t u[16] = {1, 2, 3};
	in = pv_uuid(u);
	wire_pv_to_datum(&in, &d);
	CHECK_OK(wire_datum_to_pv(&d, CT_UUID, "c", &v, err));
	CHECK_EQ_MEM(v.v.uuid, 16, u, 16);
	d.uuid.len = 3;
	CHECK_EQ_INT(wire_datum_to_pv(&d, CT_UUID, "c", &v, err), DOCRAFT_EINVAL);
}

/* Found by tests/fuzz/fuzz_rpc_request: protobuf-c unpacks an empty bytes
 * field as (NULL, 0), and the key encoder then computed NULL + 0 (undefined
 * behaviour, flagged by clang's UBSan). An empty string is never NULL. */
TEST(empty_string_datum_is_not_null)
{
	/* Datum{s: ""}: field 7, length 0. */
	static const uint8_t bytes[] = {0x3a, 0x00};
	Docraft__Datum *d = docraft__datum__unpack(NULL, sizeof bytes, bytes);
	struct buf k = BUF_INIT;
	struct pv v;
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK(d != NULL && d->v_case == DOCRAFT__DATUM__V_S && d->s.len == 0);
	CHECK_OK(wire_datum_to_pv(d, CT_TEXT, "c", &v, err));
	CHECK_EQ_INT(v.type, PV_STRING);
	CHECK_EQ_INT(v.v.s.len, 0);
	CHECK(v.v.s.p != NULL);
	key_append_pv(&k, &v);
	CHECK_EQ_MEM(k.data, k.len, "S\0\0", 3);
	buf_free(&k);
	docraft__datum__free_unpacked(d, NULL);
}

/* A WriteRequest with an INSERT and a map put, applied to a real store and
 * read back as a proto Row. */
TEST(write_request_to_row)
{
	struct schema s;
	struct arena a = ARENA_INIT;
	char dir[256], err[DOCRAFT_ERRMSG_SIZE];
	struct store *st;
	struct batch b;
	struct docwrite w;
	msgs_schema(&s);
	s.default_ttl_ms = 0;
	test_tmpdir_make(dir, "wire");
	CHECK_OK_MSG(store_open(dir, NULL, &st, err), err);

	struct pv kv[2] = {pv_str("user1"), pv_int32(10)};
	struct pv msg = pv_str("msg1"), k1 = pv_str("from"), v1 = pv_str("a@b.com");
	Docraft__Datum *key[2] = {wire_datum_new(&kv[0], &a), wire_datum_new(&kv[1], &a)};
	Docraft__ColumnValue c1 = DOCRAFT__COLUMN_VALUE__INIT, c2 = DOCRAFT__COLUMN_VALUE__INIT;
	c1.name = "msg";
	c1.value = wire_datum_new(&msg, &a);
	Docraft__Datum *mk[1] = {wire_datum_new(&k1, &a)}, *mv[1] = {wire_datum_new(&v1, &a)};
	c2.name = "msg_props";
	c2.n_keys = 1;
	c2.keys = mk;
	c2.n_values = 1;
	c2.values = mv;
	Docraft__ColumnValue *cols1[1] = {&c1}, *cols2[1] = {&c2};
	Docraft__WriteOp op1 = DOCRAFT__WRITE_OP__INIT, op2 = DOCRAFT__WRITE_OP__INIT;
	op1.kind = DOCRAFT__WRITE_OP__KIND__INSERT;
	op1.n_key = 2;
	op1.key = key;
	op1.n_columns = 1;
	op1.columns = cols1;
	op1.ttl_ms = -1;
	op2 = op1;
	op2.kind = DOCRAFT__WRITE_OP__KIND__MAP_PUT;
	op2.columns = cols2;
	Docraft__WriteOp *ops[2] = {&op1, &op2};
	Docraft__WriteRequest req = DOCRAFT__WRITE_REQUEST__INIT;
	req.n_ops = 2;
	req.ops = ops;

	batch_init(&b);
	docwrite_init(&w, &s, &b, NULL);
	CHECK_OK_MSG(wire_apply_ops(&w, &req, &a, err), err);
	uint64_t ht = ht_make(UINT64_C(1767225600000000), 0);
	CHECK_OK_MSG(store_apply(st, b.data.data, b.data.len, ht, 1, err), err);

	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(st, &s, kv, 2, ht, &a, &r, &found, err), err);
	CHECK(found);
	Docraft__Row pb;
	wire_row_to_pb(&r, &pb, &a);
	CHECK_EQ_INT(pb.n_key, 2);
	CHECK_EQ_INT(pb.n_columns, 2);
	CHECK_EQ_STR(pb.columns[0]->name, "msg");
	CHECK_EQ_MEM(pb.columns[0]->value->s.data, pb.columns[0]->value->s.len, "msg1", 4);
	CHECK_EQ_STR(pb.columns[1]->name, "msg_props");
	CHECK_EQ_INT(pb.columns[1]->n_keys, 1);
	CHECK_EQ_MEM(pb.columns[1]->values[0]->s.data, pb.columns[1]->values[0]->s.len, "a@b.com", 7);

	/* A bad op names its position and the column; the batch keeps the rest. */
	uint32_t before = b.count;
	c1.name = "nope";
	CHECK_EQ_INT(wire_apply_ops(&w, &req, &a, err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "operation 1") != NULL && strstr(err, "nope") != NULL);
	CHECK_EQ_INT(b.count, before);

	docwrite_free(&w);
	batch_free(&b);
	store_close(st);
	test_tmpdir_remove(dir);
	schema_free(&s);
	arena_free(&a);
}

TEST_MAIN(T(schema_round_trip_through_bytes), T(datum_types_checked), T(write_request_to_row),
	  T(empty_string_datum_is_not_null))
