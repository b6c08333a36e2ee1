/* Schema construction rules, lookups and value checks. */
#include <string.h>

#include "docdb/schema.h"
#include "test.h"

TEST(ids_in_declaration_order)
{
	struct schema s;
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(schema_init(&s, "msgs", err));
	CHECK_OK(schema_add(&s, "user_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add_column(&s, "msg_id", COL_RANGE, CT_INT32, 0, 0, true, err));
	CHECK_OK(schema_add(&s, "msg", COL_REGULAR, CT_TEXT, err));
	CHECK_OK(schema_add_column(&s, "props", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT64, false, err));
	CHECK_EQ_INT(s.n_hash, 1);
	CHECK_EQ_INT(s.n_range, 1);
	CHECK_EQ_INT(schema_nkeys(&s), 2);
	CHECK_EQ_INT(schema_find(&s, "user_id")->id, 0);
	CHECK_EQ_INT(schema_find(&s, "msg_id")->id, 1);
	CHECK(schema_find(&s, "msg_id")->desc);
	CHECK_EQ_INT(schema_find(&s, "msg")->id, 2);
	CHECK_EQ_INT(schema_find(&s, "props")->elem_type, CT_TEXT);
	CHECK_EQ_INT(schema_find(&s, "props")->value_type, CT_INT64);
	CHECK_EQ_STR(schema_find_id(&s, 3)->name, "props");
	CHECK(schema_find(&s, "nope") == NULL);
	CHECK(schema_find_id(&s, 9) == NULL);

	struct schema c;
	schema_copy(&c, &s);
	CHECK_EQ_STR(c.table, "msgs");
	CHECK_EQ_STR(schema_find(&c, "props")->name, "props");
	CHECK(schema_find(&c, "props")->name != schema_find(&s, "props")->name);
	schema_free(&c);
	schema_free(&s);
}

static void expect_error(struct schema *s, const char *name, enum col_kind kind, enum col_type t,
			 enum col_type e, enum col_type v, bool desc, const char *needle)
{
	char err[DOCRAFT_ERRMSG_SIZE] = "";
	CHECK_EQ_INT(schema_add_column(s, name, kind, t, e, v, desc, err), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

TEST(construction_errors)
{
	struct schema s;
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_EQ_INT(schema_init(&s, "", err), DOCRAFT_EINVAL);
	schema_free(&s);
	CHECK_OK(schema_init(&s, "t", err));
	expect_error(&s, "1bad", COL_HASH, CT_INT32, 0, 0, false, "invalid column name");
	expect_error(&s, "a-b", COL_HASH, CT_INT32, 0, 0, false, "invalid column name");
	expect_error(&s, "h", COL_HASH, CT_MAP, CT_TEXT, CT_TEXT, false, "cannot be a collection");
	expect_error(&s, "h", COL_HASH, CT_INT32, 0, 0, true, "only range columns");
	expect_error(&s, "h", COL_HASH, 99, 0, 0, false, "unknown type");
	CHECK_OK(schema_add(&s, "h", COL_HASH, CT_INT32, err));
	expect_error(&s, "h", COL_REGULAR, CT_INT32, 0, 0, false, "duplicate column");
	CHECK_OK(schema_add(&s, "r", COL_RANGE, CT_TEXT, err));
	expect_error(&s, "h2", COL_HASH, CT_INT32, 0, 0, false, "must come before");
	CHECK_OK(schema_add(&s, "v", COL_REGULAR, CT_TEXT, err));
	expect_error(&s, "r2", COL_RANGE, CT_INT32, 0, 0, false, "must come before regular");
	expect_error(&s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_LIST, false, "must be primitive");
	expect_error(&s, "l", COL_REGULAR, CT_LIST, 0, 0, false, "must be primitive");
	CHECK_OK(schema_add_column(&s, "l", COL_REGULAR, CT_LIST, CT_INT64, 0, false, err));
	CHECK_EQ_INT(s.ncols, 4);
	schema_free(&s);
}

TEST(type_names)
{
	CHECK_EQ_INT(col_type_parse("int"), CT_INT32);
	CHECK_EQ_INT(col_type_parse("TEXT"), CT_TEXT);
	CHECK_EQ_INT(col_type_parse("varchar"), CT_TEXT);
	CHECK_EQ_INT(col_type_parse("bigint"), CT_INT64);
	CHECK_EQ_INT(col_type_parse("timestamp"), CT_TIMESTAMP);
	CHECK_EQ_INT(col_type_parse("map"), 0);
	CHECK_EQ_INT(col_type_parse("nonsense"), 0);
	CHECK_EQ_STR(col_type_name(CT_DOUBLE), "double");
	CHECK_EQ_STR(col_type_name(200), "?");
	CHECK_EQ_INT(col_type_pv(CT_INT16), PV_INT32);
	CHECK_EQ_INT(col_type_pv(CT_DATE), PV_UINT32);
	CHECK_EQ_INT(col_type_pv(CT_BLOB), PV_STRING);
}

TEST(value_checks)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv v;
	v = pv_int32(127);
	CHECK_OK(schema_check_value(CT_INT8, &v, false, "c", err));
	v = pv_int32(128);
	CHECK_EQ_INT(schema_check_value(CT_INT8, &v, false, "c", err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "out of range") != NULL);
	v = pv_int32(-32769);
	CHECK_EQ_INT(schema_check_value(CT_INT16, &v, false, "c", err), DOCRAFT_EINVAL);
	v = pv_int64(1);
	CHECK_EQ_INT(schema_check_value(CT_INT32, &v, false, "col 'x'", err), DOCRAFT_EINVAL);
	CHECK(strstr(err, "col 'x'") != NULL && strstr(err, "expected int") != NULL);
	v = pv_null();
	CHECK_EQ_INT(schema_check_value(CT_INT32, &v, false, "c", err), DOCRAFT_EINVAL);
	CHECK_OK(schema_check_value(CT_INT32, &v, true, "c", err));
	/* UTF-8: valid multibyte accepted, bad continuation / overlong / surrogate rejected. */
	v = pv_str("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
	CHECK_OK(schema_check_value(CT_TEXT, &v, false, "c", err));
	const char *bad[] = {"\xc3", "\xc3\x28", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = pv_str(bad[i]);
		CHECK_EQ_INT(schema_check_value(CT_TEXT, &v, false, "c", err), DOCRAFT_EINVAL);
		CHECK_OK(schema_check_value(CT_BLOB, &v, false, "c", err));
	}
}

TEST_MAIN(T(ids_in_declaration_order), T(construction_errors), T(type_names), T(value_checks))
