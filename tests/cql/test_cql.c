/* The CQL library of `docraft shell` (src/cql): every statement of
 * the seeds parses unchanged with the expected tree, the grammar's other
 * forms, located errors and their caret display, binding literals to
 * column types, CREATE TABLE to schemas, statement checks against a
 * schema, and robustness (every prefix of every statement, mutated
 * statements and random token soups fail cleanly). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "test.h"
#include "cql/bind.h"
#include "cql/parser.h"

/* Every CQL statement of /work/shared/seeds, verbatim but for the `T1: `
 * labels and the HTML `<code>` in front of one statement (neither is CQL;
 * the caller strips them). Seed 003 has none. Seed 001 shows YSQL (jsonb,
 * ||) next to YCQL: those parse too (see seed_ysql_statements). */
static const char *const seeds[] = {
	/* 000:78 */
	 "CREATE TABLE msgs (user_id text,\n"
	 "                   msg_id int,\n"
	 "                   msg text,\n"
	 "                   msg_props map<text, text>,\n"
	 "      PRIMARY KEY ((user_id), msg_id));",
	/* 000:86 */
	 "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	 "      VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'});",
	/* 000:100 */
	 "UPDATE msgs\n"
	 "       SET msg_props = msg_props + {'read_status' : 'true'}\n"
	 "     WHERE user_id = 'user1', msg_id = 10",
	/* 000:116 */
	 "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	 "        VALUES (user1, 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'});",
	/* 000:135 */
	 "DELETE msg_props\n"
	 "      FROM msgs\n"
	 "     WHERE user_id = 'user1'\n"
	 "       AND msg_id = 10;",
	/* 000:163 */
	 "DELETE FROM msgs    // Delete entire row corresponding to msg_id 10\n"
	 "     WHERE user_id = 'user1'\n"
	 "            AND msg_id = 10;",
	/* 000:190 */
	 "CREATE TABLE page_views (page_id text,\n"
	 "                         views int,\n"
	 "                         category text,\n"
	 "     PRIMARY KEY ((page_id)));",
	/* 000:199 */
	 "INSERT INTO page_views (page_id, views)\n"
	 "        VALUES ('abc.com', 10)\n"
	 "        USING TTL 86400",
	/* 000:212 */
	 "UPDATE page_views\n"
	 "     USING TTL 3600\n"
	 "       SET category = 'news'\n"
	 "     WHERE page_id = 'abc.com';",
	/* 001:33 */
	 "CREATE TABLE msgs (\n"
	 "    user_id text,\n"
	 "    msg_id int,\n"
	 "    msg text,\n"
	 "    msg_props jsonb,\n"
	 "    PRIMARY KEY ((user_id), msg_id)\n"
	 ");",
	/* 001:43 */
	 "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	 "VALUES ('user1', 10, 'Hello', '{\"from\": \"[email protected]\", \"subject\": \"hi\"}');",
	/* 001:55 */
	 "UPDATE msgs\n"
	 "SET msg_props = msg_props || '{\"read\": true}'\n"
	 "WHERE user_id = 'user1' AND msg_id = 10;",
	/* 001:68 */
	 "DELETE FROM msgs WHERE user_id = 'user1' AND msg_id = 10;",
	/* 001:149 */
	 "CREATE TABLE sessions (\n"
	 "    session_id UUID PRIMARY KEY,\n"
	 "    data TEXT\n"
	 ") WITH default_time_to_live = 86400;  -- 24 hours",
	/* 001:154 */
	 "INSERT INTO sessions (session_id, data)\n"
	 "VALUES (uuid(), 'session_data')\n"
	 "USING TTL 3600;  -- 1 hour",
	/* 002:89 */
	 "        SELECT message_txt\n"
	 "          FROM messages\n"
	 "        WHERE user_id = 17\n"
	 "          AND message_id > 50\n"
	 "          AND message_id < 100;",
	/* 002:98 */
	 "        SELECT metric_value\n"
	 "          FROM metrics\n"
	 "        WHERE metric_name = ’system.cpu’\n"
	 "          AND metric_timestamp < ?\n"
	 "          AND metric_timestamp > ?",
	/* 002:196 */
	 "CREATE TABLE msgs (user_id text,\n"
	 "                   msg_id int,\n"
	 "                   msg text,\n"
	 "                   msg_props map<text, text>,\n"
	 "      PRIMARY KEY ((user_id), msg_id));",
	/* 002:202 */
	 "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	 "        VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'});",
	/* 002:216 */
	 "UPDATE msgs\n"
	 "       SET msg_props = msg_props + {'read_status' : 'true'}\n"
	 "     WHERE user_id = 'user1', msg_id = 10",
	/* 002:233 */
	 "INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
	 "        VALUES (‘user1’, 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'});",
	/* 002:253 */
	 "DELETE msg_props       \n"
	 "      FROM msgs\n"
	 "     WHERE user_id = 'user1'\n"
	 "       AND msg_id = 10;",
	/* 002:289 */
	 "DELETE FROM msgs    // Delete entire row corresponding to msg_id 10\n"
	 "     WHERE user_id = 'user1'\n"
	 "            AND msg_id = 10;",
	/* 002:308 */
	 "CREATE TABLE page_views (page_id text,\n"
	 "                         views int,\n"
	 "                         category text,\n"
	 "     PRIMARY KEY ((page_id)));",
	/* 002:313 */
	 "INSERT INTO page_views (page_id, views)\n"
	 "        VALUES ('abc.com', 10)\n"
	 "        USING TTL 86400",
	/* 002:322 */
	 "UPDATE page_views\n"
	 "     USING TTL 3600\n"
	 "       SET category = 'news'\n"
	 "     WHERE page_id = 'abc.com';",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define NSEEDS NELEM(seeds)

static const enum cql_stmt_kind seed_kinds[] = {
	CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT, CQL_STMT_UPDATE, CQL_STMT_INSERT,
	CQL_STMT_DELETE, CQL_STMT_DELETE, CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT,
	CQL_STMT_UPDATE,
	CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT, CQL_STMT_UPDATE, CQL_STMT_DELETE,
	CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT,
	CQL_STMT_SELECT, CQL_STMT_SELECT, CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT,
	CQL_STMT_UPDATE, CQL_STMT_INSERT, CQL_STMT_DELETE, CQL_STMT_DELETE,
	CQL_STMT_CREATE_TABLE, CQL_STMT_INSERT, CQL_STMT_UPDATE,
};

/* Indexes into seeds[]. */
enum {
	S_MSGS_CREATE = 0,
	S_MSGS_INSERT = 1,
	S_MSGS_UPDATE = 2,
	S_MSGS_INSERT_BARE = 3,
	S_MSGS_DELETE_COL = 4,
	S_MSGS_DELETE_ROW = 5,
	S_PV_CREATE = 6,
	S_PV_INSERT_TTL = 7,
	S_PV_UPDATE_TTL = 8,
	S_YSQL_CREATE = 9,
	S_YSQL_INSERT = 10,
	S_YSQL_UPDATE = 11,
	S_SESSIONS_CREATE = 13,
	S_SESSIONS_INSERT = 14,
	S_SELECT_RANGE = 15,
	S_SELECT_MARKERS = 16,
	S_MSGS_INSERT_CURLY = 20,
};

/* Parses text that must hold exactly one statement. */
static const struct cql_stmt *parse1(const char *text, struct cql_stmts *out)
{
	struct cql_error err;
	int rv = cql_parse(text, out, &err);
	if (rv != 0) {
		struct buf b = BUF_INIT;
		cql_error_render(text, &err, &b);
		test_fail(__FILE__, __LINE__, "parse failed (%d):\n%s", rv, buf_cstr(&b));
	}
	CHECK_EQ_INT(out->n, 1);
	return &out->v[0];
}

/* Parses text that must fail; returns the two-line display (static). */
static const char *parse_err(const char *text, struct cql_error *err)
{
	static struct buf b = BUF_INIT;
	struct cql_stmts out;
	int rv = cql_parse(text, &out, err);
	CHECK_MSG(rv == DOCRAFT_EINVAL, "expected a syntax error for <%s>, got %d", text, rv);
	CHECK_EQ_INT(out.n, 0);
	CHECK(out.v == NULL);
	cql_free(&out);
	buf_reset(&b);
	cql_error_render(text, err, &b);
	return buf_cstr(&b);
}

static struct schema schema_of(const char *create)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s;
	const struct cql_stmt *c = parse1(create, &st);
	CHECK_EQ_INT(c->kind, CQL_STMT_CREATE_TABLE);
	CHECK_OK_MSG(cql_create_schema(&c->u.create, &s, &err), err.message);
	cql_free(&st);
	return s;
}

static void fixed_random(void *arg, uint8_t *out, size_t n)
{
	(void)arg;
	memset(out, 0xAB, n);
}

static const struct cql_bind_env test_env = {INT64_C(1700000000000000), fixed_random, NULL};

static const char *pv_str_of(const struct pv *v)
{
	static struct buf b = BUF_INIT;
	buf_reset(&b);
	pv_format(&b, v);
	return buf_cstr(&b);
}

/* ---- the seeds ---- */

TEST(seeds_each_parse)
{
	CHECK_EQ_INT(NSEEDS, sizeof seed_kinds / sizeof seed_kinds[0]);
	for (size_t i = 0; i < NSEEDS; i++) {
		struct cql_stmts st;
		struct cql_error err;
		int rv = cql_parse(seeds[i], &st, &err);
		if (rv != 0) {
			struct buf b = BUF_INIT;
			cql_error_render(seeds[i], &err, &b);
			test_fail(__FILE__, __LINE__, "seed %zu:\n%s", i, buf_cstr(&b));
		}
		CHECK_EQ_INT(st.n, 1);
		CHECK_EQ_INT(st.v[0].kind, seed_kinds[i]);
		cql_free(&st);
		cql_free(&st); /* idempotent */
	}
}

/* All of them in one input: `;` is optional between statements. */
TEST(seeds_together_parse)
{
	struct buf all = BUF_INIT;
	struct cql_stmts st;
	struct cql_error err;
	for (size_t i = 0; i < NSEEDS; i++)
		buf_printf(&all, "%s\n", seeds[i]);
	CHECK_OK_MSG(cql_parse(buf_cstr(&all), &st, &err), err.message);
	CHECK_EQ_INT(st.n, NSEEDS);
	for (size_t i = 0; i < NSEEDS; i++)
		CHECK_EQ_INT(st.v[i].kind, seed_kinds[i]);
	/* Each statement's text is its source, without the `;`. */
	CHECK_EQ_STR(st.v[S_PV_INSERT_TTL].src, "INSERT INTO page_views (page_id, views)\n"
						 "        VALUES ('abc.com', 10)\n"
						 "        USING TTL 86400");
	CHECK_EQ_STR(st.v[S_MSGS_DELETE_ROW].src,
		     "DELETE FROM msgs    // Delete entire row corresponding to msg_id 10\n"
		     "     WHERE user_id = 'user1'\n"
		     "            AND msg_id = 10");
	cql_free(&st);
	buf_free(&all);
}

TEST(seed_msgs_create)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s;
	const struct cql_create_table *c = &parse1(seeds[S_MSGS_CREATE], &st)->u.create;
	const struct column *col;
	CHECK_EQ_STR(c->table.name, "msgs");
	CHECK(c->keyspace.name == NULL);
	CHECK(!c->if_not_exists);
	CHECK_EQ_INT(c->ncols, 4);
	CHECK_EQ_STR(c->cols[0].name.name, "user_id");
	CHECK_EQ_INT(c->cols[0].type.type, CT_TEXT);
	CHECK_EQ_INT(c->cols[1].type.type, CT_INT32);
	CHECK_EQ_STR(c->cols[3].name.name, "msg_props");
	CHECK_EQ_INT(c->cols[3].type.type, CT_MAP);
	CHECK_EQ_INT(c->cols[3].type.elem_type, CT_TEXT);
	CHECK_EQ_INT(c->cols[3].type.value_type, CT_TEXT);
	CHECK_EQ_STR(c->cols[3].type.name, "map<text, text>");
	CHECK(c->has_pk);
	CHECK_EQ_INT(c->nhash, 1);
	CHECK_EQ_STR(c->hash[0].name, "user_id");
	CHECK_EQ_INT(c->nrange, 1);
	CHECK_EQ_STR(c->range[0].name, "msg_id");
	CHECK(!c->has_default_ttl);
	CHECK_EQ_INT(c->hash[0].pos.line, 5);
	CHECK_EQ_INT(c->hash[0].pos.column, 21);

	CHECK_OK_MSG(cql_create_schema(c, &s, &err), err.message);
	CHECK_EQ_STR(s.table, "msgs");
	CHECK_EQ_INT(s.ncols, 4);
	CHECK_EQ_INT(s.n_hash, 1);
	CHECK_EQ_INT(s.n_range, 1);
	CHECK_EQ_INT(s.default_ttl_ms, 0);
	col = schema_find(&s, "user_id");
	CHECK_EQ_INT(col->id, 0);
	CHECK_EQ_INT(col->kind, COL_HASH);
	col = schema_find(&s, "msg_id");
	CHECK_EQ_INT(col->id, 1);
	CHECK_EQ_INT(col->kind, COL_RANGE);
	CHECK(!col->desc);
	col = schema_find(&s, "msg");
	CHECK_EQ_INT(col->id, 2);
	CHECK_EQ_INT(col->kind, COL_REGULAR);
	col = schema_find(&s, "msg_props");
	CHECK_EQ_INT(col->id, 3);
	CHECK_EQ_INT(col->type, CT_MAP);
	CHECK_EQ_INT(col->elem_type, CT_TEXT);
	CHECK_EQ_INT(col->value_type, CT_TEXT);
	schema_free(&s);
	cql_free(&st);
}

TEST(seed_msgs_insert)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	const struct cql_stmt *stmt = parse1(seeds[S_MSGS_INSERT], &st);
	const struct cql_insert *in = &stmt->u.insert;
	struct cql_value v;
	CHECK_EQ_STR(in->table.name, "msgs");
	CHECK_EQ_INT(in->ncols, 4);
	CHECK_EQ_STR(in->cols[3].name, "msg_props");
	CHECK_EQ_INT(in->values[0].kind, CQL_LIT_STRING);
	CHECK_EQ_STR(in->values[0].v.str.p, "user1");
	CHECK_EQ_INT(in->values[1].kind, CQL_LIT_INT);
	CHECK_EQ_INT(in->values[1].v.i, 10);
	CHECK_EQ_INT(in->values[3].kind, CQL_LIT_MAP);
	CHECK_EQ_INT(in->values[3].v.coll.n, 2);
	CHECK_EQ_STR(in->values[3].v.coll.items[1].v.str.p, "subject");
	CHECK_EQ_STR(in->values[3].v.coll.vals[1].v.str.p, "hello");
	CHECK_EQ_STR(in->values[3].src, "{'from' : 'a@b.com', 'subject' : 'hello'}");
	CHECK(!in->has_ttl);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);

	CHECK_OK_MSG(cql_bind_column(&in->values[1], schema_find(&s, "msg_id"), &test_env, &a, &v,
				     &err),
		     err.message);
	CHECK(!v.is_collection);
	CHECK_EQ_STR(pv_str_of(&v.value), "10");
	CHECK_EQ_INT(v.value.type, PV_INT32);
	CHECK_OK_MSG(cql_bind_column(&in->values[3], schema_find(&s, "msg_props"), &test_env, &a,
				     &v, &err),
		     err.message);
	CHECK(v.is_collection);
	CHECK_EQ_INT(v.n, 2);
	CHECK_EQ_STR(pv_str_of(&v.keys[0]), "'from'");
	CHECK_EQ_STR(pv_str_of(&v.vals[0]), "'a@b.com'");
	arena_free(&a);
	schema_free(&s);
	cql_free(&st);
}

TEST(seed_msgs_update_map_put)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	const struct cql_stmt *stmt = parse1(seeds[S_MSGS_UPDATE], &st);
	const struct cql_update *up = &stmt->u.update;
	struct cql_value v;
	CHECK_EQ_STR(up->table.name, "msgs");
	CHECK(!up->has_ttl);
	CHECK_EQ_INT(up->nassigns, 1);
	CHECK_EQ_STR(up->assigns[0].col.name, "msg_props");
	CHECK_EQ_INT(up->assigns[0].op, CQL_ASSIGN_ADD);
	CHECK(!up->assigns[0].concat);
	CHECK_EQ_INT(up->assigns[0].value.kind, CQL_LIT_MAP);
	CHECK_EQ_INT(up->assigns[0].value.v.coll.n, 1);
	/* WHERE user_id = 'user1', msg_id = 10: the comma joins like AND. */
	CHECK_EQ_INT(up->nwhere, 2);
	CHECK_EQ_STR(up->where[0].col.name, "user_id");
	CHECK_EQ_INT(up->where[0].rel, CQL_REL_EQ);
	CHECK_EQ_STR(up->where[1].col.name, "msg_id");
	CHECK_EQ_INT(up->where[1].value.v.i, 10);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	CHECK_OK_MSG(cql_bind_assign(&up->assigns[0], schema_find(&s, "msg_props"), &test_env, &a,
				     NULL, &v, &err),
		     err.message);
	CHECK(v.is_collection);
	CHECK_EQ_INT(v.n, 1);
	CHECK_EQ_STR(pv_str_of(&v.keys[0]), "'read_status'");
	CHECK_EQ_STR(pv_str_of(&v.vals[0]), "'true'");
	arena_free(&a);
	schema_free(&s);
	cql_free(&st);
}

/* Seed 000's T3 writes VALUES (user1, …) with the quotes lost; its layout
 * shows the row ('user1', 20). The word parses as CQL_LIT_IDENT and binds
 * to a text column as the string it spells; anywhere else it is an error
 * that says how to write a string. */
TEST(seed_bare_word_value)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	const struct cql_stmt *stmt = parse1(seeds[S_MSGS_INSERT_BARE], &st);
	const struct cql_literal *w = &stmt->u.insert.values[0];
	struct cql_value v;
	struct pv pv;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_EQ_INT(w->kind, CQL_LIT_IDENT);
	CHECK_EQ_STR(w->v.ident, "user1");
	CHECK_EQ_INT(w->pos.line, 2);
	CHECK_EQ_INT(w->pos.column, 17);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	CHECK_OK_MSG(cql_bind_column(w, schema_find(&s, "user_id"), &test_env, &a, &v, &err),
		     err.message);
	CHECK_EQ_STR(pv_str_of(&v.value), "'user1'");
	CHECK_EQ_INT(cql_bind_column(w, schema_find(&s, "msg_id"), &test_env, &a, &v, &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column msg_id is int: cannot store user1 (a bare word; strings "
				  "take quotes: 'user1')");
	CHECK_EQ_INT(err.line, 2);
	CHECK_EQ_INT(err.column, 17);
	CHECK_EQ_STR(err.token, "user1");
	CHECK_EQ_INT(cql_bind_value(w, CT_INT64, &a, &pv, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_STR(errmsg, "bigint: cannot store user1 (a bare word; strings take quotes: "
			     "'user1')");
	/* The case is kept: it is a value, not a name. */
	cql_free(&st);
	stmt = parse1("INSERT INTO msgs (user_id, msg_id) VALUES (User1, 1)", &st);
	CHECK_OK(cql_bind_value(&stmt->u.insert.values[0], CT_TEXT, &a, &pv, errmsg));
	CHECK_EQ_STR(pv_str_of(&pv), "'User1'");
	cql_free(&st);
	/* A bare word that names a column is refused: CQL cannot copy one. */
	stmt = parse1("INSERT INTO msgs (user_id, msg_id, msg) VALUES ('u', 1, msg_id)", &st);
	CHECK_EQ_INT(cql_check_stmt(stmt, &s, &err), DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "msg_id is a column, not a value (CQL cannot copy columns; a "
				  "string takes quotes: 'msg_id')");
	CHECK_EQ_INT(err.column, 57);
	arena_free(&a);
	schema_free(&s);
	cql_free(&st);
}

/* ‘user1’ (seed 002's T3) and ’system.cpu’ (both closing quotes). */
TEST(seed_curly_quotes)
{
	struct cql_stmts st;
	const struct cql_stmt *stmt = parse1(seeds[S_MSGS_INSERT_CURLY], &st);
	const struct cql_literal *l = &stmt->u.insert.values[0];
	CHECK_EQ_INT(l->kind, CQL_LIT_STRING);
	CHECK_EQ_STR(l->v.str.p, "user1");
	CHECK_EQ_INT(l->v.str.len, 5);
	CHECK_EQ_STR(l->src, "\xE2\x80\x98user1\xE2\x80\x99");
	/* Columns count characters: the 'msg2' after it is at column 30. */
	CHECK_EQ_INT(stmt->u.insert.values[2].pos.column, 30);
	CHECK_EQ_INT(stmt->u.insert.values[2].pos.offset, 51 + 33);
	cql_free(&st);
	stmt = parse1(seeds[S_SELECT_MARKERS], &st);
	CHECK_EQ_STR(stmt->u.select.where[0].value.v.str.p, "system.cpu");
	cql_free(&st);
}

TEST(seed_delete_column_and_row)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	const struct cql_stmt *stmt = parse1(seeds[S_MSGS_DELETE_COL], &st);
	const struct cql_delete *d = &stmt->u.del;
	CHECK_EQ_INT(d->ntargets, 1);
	CHECK_EQ_STR(d->targets[0].col.name, "msg_props");
	CHECK(!d->targets[0].has_key);
	CHECK_EQ_STR(d->table.name, "msgs");
	CHECK_EQ_INT(d->nwhere, 2);
	CHECK_EQ_STR(d->where[1].col.name, "msg_id");
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	cql_free(&st);
	/* With the `// Delete entire row …` comment after FROM msgs. */
	stmt = parse1(seeds[S_MSGS_DELETE_ROW], &st);
	d = &stmt->u.del;
	CHECK_EQ_INT(d->ntargets, 0);
	CHECK_EQ_STR(d->table.name, "msgs");
	CHECK_EQ_INT(d->nwhere, 2);
	CHECK_EQ_STR(d->where[0].value.v.str.p, "user1");
	CHECK_EQ_INT(d->where[0].col.pos.line, 2);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	schema_free(&s);
	cql_free(&st);
}

TEST(seed_ttl_insert_update)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s = schema_of(seeds[S_PV_CREATE]);
	const struct cql_stmt *stmt;
	CHECK_EQ_INT(s.n_hash, 1);
	CHECK_EQ_INT(s.n_range, 0);
	CHECK_EQ_STR(s.cols[0].name, "page_id");
	stmt = parse1(seeds[S_PV_INSERT_TTL], &st);
	CHECK(stmt->u.insert.has_ttl);
	CHECK_EQ_INT(stmt->u.insert.ttl_s, 86400);
	CHECK_EQ_INT(stmt->u.insert.ttl_pos.line, 3);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	cql_free(&st);
	stmt = parse1(seeds[S_PV_UPDATE_TTL], &st);
	CHECK(stmt->u.update.has_ttl);
	CHECK_EQ_INT(stmt->u.update.ttl_s, 3600);
	CHECK_EQ_INT(stmt->u.update.nassigns, 1);
	CHECK_EQ_INT(stmt->u.update.assigns[0].op, CQL_ASSIGN_SET);
	CHECK_EQ_STR(stmt->u.update.assigns[0].value.v.str.p, "news");
	CHECK_EQ_INT(stmt->u.update.nwhere, 1);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	schema_free(&s);
	cql_free(&st);
}

TEST(seed_sessions_default_ttl)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s;
	struct cql_value v;
	const struct cql_stmt *stmt = parse1(seeds[S_SESSIONS_CREATE], &st);
	const struct cql_create_table *c = &stmt->u.create;
	CHECK_EQ_STR(c->table.name, "sessions");
	CHECK_EQ_INT(c->ncols, 2);
	CHECK(c->cols[0].primary_key);
	CHECK_EQ_INT(c->cols[0].type.type, CT_UUID);
	CHECK_EQ_INT(c->cols[1].type.type, CT_TEXT);
	CHECK_EQ_STR(c->cols[1].name.name, "data");
	CHECK(!c->has_pk);
	CHECK(c->has_default_ttl);
	CHECK_EQ_INT(c->default_ttl_s, 86400);
	CHECK_OK_MSG(cql_create_schema(c, &s, &err), err.message);
	CHECK_EQ_INT(s.default_ttl_ms, INT64_C(86400000));
	CHECK_EQ_INT(s.n_hash, 1);
	CHECK_EQ_INT(schema_find(&s, "session_id")->kind, COL_HASH);
	CHECK_EQ_INT(schema_find(&s, "session_id")->type, CT_UUID);
	CHECK_EQ_INT(schema_find(&s, "data")->id, 1);
	cql_free(&st);

	stmt = parse1(seeds[S_SESSIONS_INSERT], &st);
	CHECK_EQ_INT(stmt->u.insert.values[0].kind, CQL_LIT_FUNC);
	CHECK_EQ_STR(stmt->u.insert.values[0].v.func.name, "uuid");
	CHECK_EQ_INT(stmt->u.insert.values[0].v.func.nargs, 0);
	CHECK(stmt->u.insert.has_ttl);
	CHECK_EQ_INT(stmt->u.insert.ttl_s, 3600);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	CHECK_OK_MSG(cql_bind_column(&stmt->u.insert.values[0], schema_find(&s, "session_id"),
				     &test_env, &a, &v, &err),
		     err.message);
	CHECK_EQ_STR(pv_str_of(&v.value), "abababab-abab-4bab-abab-abababababab");
	/* With the default environment: a random version-4 uuid. */
	CHECK_OK_MSG(cql_bind_column(&stmt->u.insert.values[0], schema_find(&s, "session_id"),
				     NULL, &a, &v, &err),
		     err.message);
	CHECK_EQ_INT(v.value.type, PV_UUID);
	CHECK_EQ_INT(v.value.v.uuid[6] >> 4, 4);
	CHECK_EQ_INT(cql_bind_column(&stmt->u.insert.values[0], schema_find(&s, "data"),
				     &test_env, &a, &v, &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column data is text: cannot store uuid() (it gives a uuid)");
	arena_free(&a);
	schema_free(&s);
	cql_free(&st);
}

/* Seed 001 shows YSQL statements: they parse (jsonb is a type name like
 * any other, `||` an append), and fail where they stop being CQL. */
TEST(seed_ysql_statements)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s;
	struct buf b = BUF_INIT;
	const struct cql_stmt *stmt = parse1(seeds[S_YSQL_CREATE], &st);
	CHECK_EQ_INT(stmt->u.create.cols[3].type.type, 0);
	CHECK_EQ_STR(stmt->u.create.cols[3].type.name, "jsonb");
	CHECK_EQ_INT(cql_create_schema(&stmt->u.create, &s, &err), DOCRAFT_EINVAL);
	cql_error_render(seeds[S_YSQL_CREATE], &err, &b);
	CHECK_EQ_STR(buf_cstr(&b), "    msg_props jsonb,\n"
				   "              ^^^^^ unknown type jsonb\n");
	CHECK_EQ_INT(err.line, 5);
	CHECK_EQ_INT(err.column, 15);
	cql_free(&st);

	stmt = parse1(seeds[S_YSQL_UPDATE], &st);
	CHECK_EQ_INT(stmt->u.update.assigns[0].op, CQL_ASSIGN_ADD);
	CHECK(stmt->u.update.assigns[0].concat);
	CHECK_EQ_INT(stmt->u.update.assigns[0].value.kind, CQL_LIT_STRING);
	cql_free(&st);

	/* Against the CQL msgs table, || a string is no map put. */
	s = schema_of(seeds[S_MSGS_CREATE]);
	stmt = parse1(seeds[S_YSQL_UPDATE], &st);
	{
		struct arena a = ARENA_INIT;
		struct cql_value v;
		const struct column *mp = schema_find(&s, "msg_props");
		CHECK_EQ_INT(cql_bind_assign(&stmt->u.update.assigns[0], mp, NULL, &a, NULL, &v,
					     &err),
			     DOCRAFT_EINVAL);
		CHECK_EQ_STR(err.message, "column msg_props is map<text, text>: cannot store "
					  "'{\"read\": true}' (expected a map {k: v, ...})");
		arena_free(&a);
	}
	buf_free(&b);
	schema_free(&s);
	cql_free(&st);
}

TEST(seed_selects)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s = schema_of("CREATE TABLE messages (user_id int, message_id int, "
				    "message_txt text, PRIMARY KEY (user_id, message_id))");
	const struct cql_stmt *stmt = parse1(seeds[S_SELECT_RANGE], &st);
	const struct cql_select *sel = &stmt->u.select;
	CHECK(!sel->star);
	CHECK_EQ_INT(sel->ncols, 1);
	CHECK_EQ_STR(sel->cols[0].name, "message_txt");
	CHECK_EQ_STR(sel->table.name, "messages");
	CHECK_EQ_INT(sel->nwhere, 3);
	CHECK_EQ_INT(sel->where[0].rel, CQL_REL_EQ);
	CHECK_EQ_INT(sel->where[0].value.v.i, 17);
	CHECK_EQ_INT(sel->where[1].rel, CQL_REL_GT);
	CHECK_EQ_INT(sel->where[1].value.v.i, 50);
	CHECK_EQ_INT(sel->where[2].rel, CQL_REL_LT);
	CHECK_EQ_INT(sel->where[2].value.v.i, 100);
	CHECK(!sel->has_limit);
	CHECK(!sel->has_as_of);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	cql_free(&st);
	schema_free(&s);

	s = schema_of("CREATE TABLE metrics (metric_name text, metric_timestamp timestamp, "
		      "metric_value double, PRIMARY KEY ((metric_name), metric_timestamp)) "
		      "WITH CLUSTERING ORDER BY (metric_timestamp DESC)");
	stmt = parse1(seeds[S_SELECT_MARKERS], &st);
	sel = &stmt->u.select;
	CHECK_EQ_INT(stmt->nmarkers, 2);
	CHECK_EQ_INT(sel->where[1].value.kind, CQL_LIT_MARKER);
	CHECK_EQ_INT(sel->where[1].value.v.marker.index, 0);
	CHECK_EQ_INT(sel->where[2].value.v.marker.index, 1);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	{
		struct arena a = ARENA_INIT;
		struct cql_value v;
		const struct column *mt = schema_find(&s, "metric_timestamp");
		CHECK_EQ_INT(cql_bind_column(&sel->where[1].value, mt, NULL, &a, &v, &err),
			     DOCRAFT_EINVAL);
		CHECK_EQ_STR(err.message, "column metric_timestamp is timestamp: cannot store ? "
					  "(an unbound bind marker)");
		arena_free(&a);
	}
	schema_free(&s);
	cql_free(&st);
}

/* ---- the rest of the grammar ---- */

TEST(create_table_forms)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s;
	const struct cql_stmt *stmt = parse1(
		"create table if not exists KS.Events (\n"
		"  \"Tenant\" text, day date, seq bigint, at timestamp, body blob,\n"
		"  tags set<text>, hist list<int>, attrs MAP<Text, Double>,\n"
		"  flag boolean, t tinyint, sm smallint, f float, d double, id uuid, v varchar,\n"
		"  primary key ((\"Tenant\", day), seq, at)\n"
		") with clustering order by (seq desc, at asc) and default_time_to_live = 60\n"
		"  and packed = true",
		&st);
	const struct cql_create_table *c = &stmt->u.create;
	CHECK(c->if_not_exists);
	CHECK_EQ_STR(c->keyspace.name, "ks");
	CHECK_EQ_STR(c->table.name, "events");
	CHECK_EQ_INT(c->ncols, 15);
	CHECK_EQ_STR(c->cols[0].name.name, "Tenant");
	CHECK_EQ_INT(c->cols[7].type.type, CT_MAP);
	CHECK_EQ_INT(c->cols[7].type.elem_type, CT_TEXT);
	CHECK_EQ_INT(c->cols[7].type.value_type, CT_DOUBLE);
	CHECK_EQ_STR(c->cols[7].type.name, "map<text, double>");
	CHECK_EQ_INT(c->nhash, 2);
	CHECK_EQ_INT(c->nrange, 2);
	CHECK_EQ_INT(c->nclustering, 2);
	CHECK(c->clustering[0].desc);
	CHECK(!c->clustering[1].desc);
	CHECK_EQ_INT(c->default_ttl_s, 60);
	CHECK_EQ_INT(c->noptions, 1);
	CHECK_EQ_STR(c->options[0].name.name, "packed");
	CHECK_OK_MSG(cql_create_schema(c, &s, &err), err.message);
	CHECK(s.packed);
	CHECK_EQ_INT(s.default_ttl_ms, 60000);
	CHECK_EQ_INT(s.n_hash, 2);
	CHECK_EQ_INT(s.n_range, 2);
	/* Ids: hash, range (key order), then the others as declared. */
	{
		static const char *const order[] = {"Tenant", "day", "seq", "at", "body", "tags",
						    "hist", "attrs", "flag", "t", "sm", "f", "d",
						    "id", "v"};
		for (size_t i = 0; i < 15; i++) {
			CHECK_EQ_STR(s.cols[i].name, order[i]);
			CHECK_EQ_INT(s.cols[i].id, (int)i);
		}
	}
	CHECK(schema_find(&s, "seq")->desc);
	CHECK(!schema_find(&s, "at")->desc);
	CHECK_EQ_INT(schema_find(&s, "day")->type, CT_DATE);
	CHECK_EQ_INT(schema_find(&s, "hist")->type, CT_LIST);
	CHECK_EQ_INT(schema_find(&s, "t")->type, CT_INT8);
	CHECK_EQ_INT(schema_find(&s, "v")->type, CT_TEXT);
	schema_free(&s);
	cql_free(&st);

	/* PRIMARY KEY (a, b): a is the partition key. */
	s = schema_of("CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a, b))");
	CHECK_EQ_INT(s.n_hash, 1);
	CHECK_EQ_INT(s.n_range, 1);
	schema_free(&s);
	s = schema_of("CREATE TABLE t (c int, a int PRIMARY KEY)");
	CHECK_EQ_STR(s.cols[0].name, "a");
	CHECK_EQ_INT(s.cols[0].kind, COL_HASH);
	CHECK_EQ_INT(s.cols[1].id, 1);
	schema_free(&s);

	stmt = parse1("DROP TABLE IF EXISTS msgs;", &st);
	CHECK(stmt->u.drop.if_exists);
	CHECK_EQ_STR(stmt->u.drop.table.name, "msgs");
	cql_free(&st);
}

TEST(update_operations)
{
	static const struct {
		enum cql_assign_op op;
		const char *col;
		int value_kind;
		size_t n;
	} want[] = {
		{CQL_ASSIGN_SET, "v", CQL_LIT_NULL, 0},
		{CQL_ASSIGN_REMOVE, "m", CQL_LIT_SET, 2},
		{CQL_ASSIGN_ELEM, "m", CQL_LIT_INT, 0},
		{CQL_ASSIGN_ADD, "s", CQL_LIT_SET, 2},
		{CQL_ASSIGN_REMOVE, "s", CQL_LIT_SET, 1},
		{CQL_ASSIGN_ADD, "l", CQL_LIT_LIST, 1},
		{CQL_ASSIGN_PREPEND, "l", CQL_LIT_LIST, 1},
		{CQL_ASSIGN_SET, "m", CQL_LIT_MAP, 1},
		{CQL_ASSIGN_SET, "l", CQL_LIT_LIST, 0},
		{CQL_ASSIGN_SET, "n", CQL_LIT_INT, 0},
		{CQL_ASSIGN_SET, "m", CQL_LIT_SET, 0},
		{CQL_ASSIGN_SET, "s", CQL_LIT_SET, 0},
	};
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of("CREATE TABLE t (k int PRIMARY KEY, v text, n int, "
				    "m map<text, int>, s set<int>, l list<text>)");
	const struct cql_stmt *stmt = parse1(
		"UPDATE t USING TTL 10 SET v = NULL, m = m - {'a', 'b'}, m['x'] = 5,\n"
		"  s = s + {1, 2}, s = s - {3}, l = l + ['z'], l = ['a'] + l, m = {'k': -1},\n"
		"  l = [], n = -7, m = {}, s = {}\n"
		"WHERE k = 1",
		&st);
	const struct cql_update *up = &stmt->u.update;
	CHECK_EQ_INT(up->ttl_s, 10);
	CHECK_EQ_INT(up->nassigns, sizeof want / sizeof want[0]);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	for (size_t i = 0; i < up->nassigns; i++) {
		const struct cql_assign *as = &up->assigns[i];
		struct cql_value v;
		struct pv key;
		CHECK_EQ_INT(as->op, want[i].op);
		CHECK_EQ_STR(as->col.name, want[i].col);
		CHECK_EQ_INT(as->value.kind, want[i].value_kind);
		CHECK_OK_MSG(cql_bind_assign(as, schema_find(&s, as->col.name), &test_env, &a, &key,
					     &v, &err),
			     err.message);
		if (want[i].value_kind == CQL_LIT_SET || want[i].value_kind == CQL_LIT_LIST ||
		    want[i].value_kind == CQL_LIT_MAP) {
			CHECK(v.is_collection);
			CHECK_EQ_INT(v.n, want[i].n);
		}
	}
	CHECK_EQ_STR(up->assigns[2].key.v.str.p, "x");
	CHECK_EQ_INT(up->assigns[9].value.v.i, -7);
	CHECK_EQ_INT(up->assigns[7].value.v.coll.vals[0].v.i, -1);
	{
		struct cql_value v;
		struct pv key;
		CHECK_OK(cql_bind_assign(&up->assigns[2], schema_find(&s, "m"), NULL, &a, &key, &v,
					 &err));
		CHECK_EQ_STR(pv_str_of(&key), "'x'");
		CHECK_EQ_STR(pv_str_of(&v.value), "5");
		/* m - {keys}: the keys of the map. */
		CHECK_OK(cql_bind_assign(&up->assigns[1], schema_find(&s, "m"), NULL, &a, NULL, &v,
					 &err));
		CHECK_EQ_STR(pv_str_of(&v.keys[1]), "'b'");
		CHECK(v.vals == NULL);
		CHECK_OK(cql_bind_assign(&up->assigns[0], schema_find(&s, "v"), NULL, &a, NULL, &v,
					 &err));
		CHECK_EQ_INT(v.value.type, PV_NULL);
	}
	cql_free(&st);

	/* Operations that do not fit their column, located. */
	{
		static const struct {
			const char *stmt;
			const char *msg;
			int column;
		} bad[] = {
			{"UPDATE t SET n = n + 1 WHERE k = 1",
			 "column n is int: + adds to map, set and list columns only", 20},
			{"UPDATE t SET l = l - ['a'] WHERE k = 1",
			 "column l is list<text>: removing list elements by value is not supported "
			 "(it needs a read)", 20},
			{"UPDATE t SET s = [1] + s WHERE k = 1",
			 "column s is set<int>: [...] + s prepends to list columns only", 22},
			{"UPDATE t SET l[0] = 'a' WHERE k = 1",
			 "column l is list<text>: setting a list element by index is not supported "
			 "(it needs a read)", 16},
			{"UPDATE t SET m = m + {'a', 'b'} WHERE k = 1",
			 "column m is map<text, int>: cannot store {'a', 'b'} (expected a map "
			 "{k: v, ...})",
			 22},
			{"UPDATE t SET m = m + {'a': 'b'} WHERE k = 1",
			 "column m is map<text, int>: cannot store 'b' as int", 28},
			{"UPDATE t SET s = s + {1, NULL} WHERE k = 1",
			 "column s is set<int>: cannot store NULL here (collection elements and "
			 "keys cannot be NULL)",
			 26},
			{"UPDATE t SET m = m + NULL WHERE k = 1",
			 "column m is map<text, int>: cannot store NULL (expected a map {k: v, "
			 "...})",
			 22},
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			struct cql_value v;
			struct pv key;
			stmt = parse1(bad[i].stmt, &st);
			up = &stmt->u.update;
			CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
			CHECK_EQ_INT(cql_bind_assign(&up->assigns[0],
						     schema_find(&s, up->assigns[0].col.name), NULL,
						     &a, &key, &v, &err),
				     DOCRAFT_EINVAL);
			CHECK_EQ_STR(err.message, bad[i].msg);
			CHECK_MSG(err.column == (uint32_t)bad[i].column, "%s: column %u, want %d",
				  bad[i].stmt, err.column, bad[i].column);
			cql_free(&st);
		}
	}
	arena_free(&a);
	schema_free(&s);
}

/* UPDATE ... IF col = value [AND ...]: a conditional write. */
TEST(update_if)
{
	struct cql_stmts st;
	struct cql_error err;
	const struct cql_stmt *stmt = parse1(
		"UPDATE t SET v = 'b' WHERE k = 1 IF v = 'a' AND n = NULL", &st);
	const struct cql_update *up = &stmt->u.update;
	CHECK_EQ_INT(up->nwhere, 1);
	CHECK_EQ_INT(up->nifs, 2);
	CHECK_EQ_STR(up->ifs[0].col.name, "v");
	CHECK_EQ_INT(up->ifs[0].rel, CQL_REL_EQ);
	CHECK_EQ_INT(up->ifs[0].value.kind, CQL_LIT_STRING);
	CHECK_EQ_STR(up->ifs[1].col.name, "n");
	CHECK_EQ_INT(up->ifs[1].value.kind, CQL_LIT_NULL);
	cql_free(&st);
	stmt = parse1("update t set v = 'b' where k = 1", &st);
	CHECK_EQ_INT(stmt->u.update.nifs, 0);
	cql_free(&st);
	parse_err("UPDATE t SET v = 'b' WHERE k = 1 IF v > 'a'", &err);
	CHECK_EQ_STR(err.message, "only = is supported in IF");
	CHECK_EQ_INT(err.column, 39);
	parse_err("UPDATE t SET v = 'b' WHERE k = 1 IF EXISTS", &err);
	CHECK(strstr(err.message, "IF [NOT] EXISTS is not supported") != NULL);
	parse_err("UPDATE t SET v = 'b' WHERE k = 1 IF", &err);
	parse_err("UPDATE t SET v = 'b' WHERE k = 1 LIMIT 1", &err);
	CHECK_EQ_STR(err.message, "expected AND, IF or ';'");
	parse_err("UPDATE t SET v = 'b' WHERE k = 1 IF v = 'a' LIMIT 1", &err);
	CHECK_EQ_STR(err.message, "expected AND or ';'");
}

TEST(delete_forms)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of("CREATE TABLE t (k int, r int, m map<int, text>, v text, "
				    "PRIMARY KEY (k, r))");
	const struct cql_stmt *stmt = parse1("DELETE m[7], v FROM t WHERE k = 1 AND r = 2", &st);
	const struct cql_delete *d = &stmt->u.del;
	struct pv key;
	CHECK_EQ_INT(d->ntargets, 2);
	CHECK(d->targets[0].has_key);
	CHECK_EQ_INT(d->targets[0].key.v.i, 7);
	CHECK(!d->targets[1].has_key);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	CHECK_OK_MSG(cql_bind_map_key(&d->targets[0].key, schema_find(&s, "m"), NULL, &a, &key,
				      &err),
		     err.message);
	CHECK_EQ_STR(pv_str_of(&key), "7");
	CHECK_EQ_INT(cql_bind_map_key(&d->targets[0].key, schema_find(&s, "v"), NULL, &a, &key,
				      &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column v is text: only map entries can be addressed by key");
	cql_free(&st);
	arena_free(&a);
	schema_free(&s);
}

TEST(select_forms)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s = schema_of("CREATE TABLE ts (h text, r1 int, r2 timestamp, v double, "
				    "PRIMARY KEY ((h), r1, r2)) "
				    "WITH CLUSTERING ORDER BY (r1 DESC)");
	const struct cql_stmt *stmt = parse1(
		"select * from ts where h = 'a' and r1 = 3 and r2 >= '2024-01-01' and r2 < "
		"'2024-02-01T00:00:00Z' order by r1 asc, r2 desc limit 10\n"
		"as of HT(1700000000000000.7)",
		&st);
	const struct cql_select *sel = &stmt->u.select;
	CHECK(sel->star);
	CHECK_EQ_INT(sel->nwhere, 4);
	CHECK_EQ_INT(sel->where[2].rel, CQL_REL_GE);
	CHECK_EQ_INT(sel->where[3].rel, CQL_REL_LT);
	CHECK_EQ_INT(sel->norder_by, 2);
	CHECK(!sel->order_by[0].desc);
	CHECK(sel->order_by[1].desc);
	CHECK(sel->has_limit);
	CHECK_EQ_INT(sel->limit, 10);
	CHECK(sel->has_as_of);
	CHECK_EQ_U64(sel->as_of, ht_make(UINT64_C(1700000000000000), 7));
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	cql_free(&st);

	stmt = parse1("SELECT v FROM ts WHERE h = 'a' AS OF 6963200000000000", &st);
	CHECK_EQ_U64(stmt->u.select.as_of, UINT64_C(6963200000000000));
	cql_free(&st);
	stmt = parse1("SELECT v FROM ts AS OF '1970-01-01 02:00:01.5+01:00'", &st);
	CHECK_EQ_U64(stmt->u.select.as_of, ht_make(UINT64_C(3601500000), 0));
	cql_free(&st);
	stmt = parse1("SELECT v FROM ts WHERE v > 1.5 ALLOW FILTERING", &st);
	CHECK(stmt->u.select.allow_filtering);
	CHECK_OK_MSG(cql_check_stmt(stmt, &s, &err), err.message);
	cql_free(&st);
	schema_free(&s);
}

/* DESCRIBE TABLES / DESCRIBE TABLE t (issue 17: the shell's view of Redis
 * databases). */
TEST(describe_forms)
{
	struct cql_stmts st;
	struct cql_error err;
	const struct cql_stmt *stmt = parse1("describe tables;", &st);
	CHECK_EQ_INT(stmt->kind, CQL_STMT_DESCRIBE);
	CHECK(stmt->u.describe.tables);
	cql_free(&st);
	stmt = parse1("DESCRIBE TABLE redis_0", &st);
	CHECK(!stmt->u.describe.tables);
	CHECK_EQ_STR(stmt->u.describe.table.name, "redis_0");
	cql_free(&st);
	CHECK(strstr(parse_err("DESCRIBE redis_0;", &err), "expected TABLES or TABLE") != NULL);
	CHECK(strstr(parse_err("DESCRIBE TABLE;", &err), "expected") != NULL);
	CHECK(strstr(parse_err("DESCRIBE TABLES x;", &err), "expected ';'") != NULL);
}

TEST(hybrid_time_strings)
{
	uint64_t ht;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(cql_parse_hybrid_time("HT(1000.5)", &ht, errmsg));
	CHECK_EQ_U64(ht, ht_make(1000, 5));
	CHECK_OK(cql_parse_hybrid_time("ht(1000)", &ht, errmsg));
	CHECK_EQ_U64(ht, ht_make(1000, 0));
	CHECK_OK(cql_parse_hybrid_time("4096005", &ht, errmsg));
	CHECK_EQ_U64(ht, UINT64_C(4096005));
	CHECK_OK(cql_parse_hybrid_time("'1970-01-01 00:00:02Z'", &ht, errmsg));
	CHECK_EQ_U64(ht, ht_make(2000000, 0));
	CHECK_OK(cql_parse_hybrid_time("1970-01-01T00:00:02", &ht, errmsg));
	CHECK_EQ_U64(ht, ht_make(2000000, 0));
	CHECK_EQ_INT(cql_parse_hybrid_time("HT(1.4096)", &ht, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_STR(errmsg, "hybrid time out of range (logical is 0..4095)");
	CHECK_EQ_INT(cql_parse_hybrid_time("99999999999999999999", &ht, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_STR(errmsg, "hybrid time out of range");
	CHECK_EQ_INT(cql_parse_hybrid_time("soon", &ht, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(cql_parse_hybrid_time("HT(5) x", &ht, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_STR(errmsg, "expected the end of the hybrid time");
}

TEST(literals)
{
	struct cql_stmts st;
	const struct cql_stmt *stmt = parse1(
		"INSERT INTO t (a, b, c, d, e, f, g, h, i, j, k, l, m, n) VALUES (\n"
		"  'it''s', $$a 'b'$$, -9223372036854775808, 9223372036854775808, 1.5e3, -NaN,\n"
		"  Infinity, TRUE, null, 0xCAFE, 123e4567-e89b-12d3-a456-426614174000, [1, -2],\n"
		"  :name, now())",
		&st);
	const struct cql_literal *v = stmt->u.insert.values;
	CHECK_EQ_STR(v[0].v.str.p, "it's");
	CHECK_EQ_STR(v[0].src, "'it''s'");
	CHECK_EQ_STR(v[1].v.str.p, "a 'b'");
	CHECK_EQ_INT(v[2].kind, CQL_LIT_INT);
	CHECK(v[2].v.i == INT64_MIN);
	CHECK(!v[2].v.int_overflow);
	CHECK(v[3].v.int_overflow);
	CHECK_EQ_INT(v[4].kind, CQL_LIT_FLOAT);
	CHECK(v[4].v.f == 1500.0);
	CHECK(isnan(v[5].v.f));
	CHECK(isinf(v[6].v.f) && v[6].v.f > 0);
	CHECK_EQ_INT(v[7].kind, CQL_LIT_BOOL);
	CHECK(v[7].v.b);
	CHECK_EQ_INT(v[8].kind, CQL_LIT_NULL);
	CHECK_EQ_INT(v[9].kind, CQL_LIT_BLOB);
	CHECK_EQ_INT(v[9].v.str.len, 2);
	CHECK_EQ_MEM(v[9].v.str.p, 2, "\xCA\xFE", 2);
	CHECK_EQ_INT(v[10].kind, CQL_LIT_UUID);
	CHECK_EQ_INT(v[10].v.uuid[0], 0x12);
	CHECK_EQ_INT(v[10].v.uuid[15], 0x00);
	CHECK_EQ_INT(v[11].kind, CQL_LIT_LIST);
	CHECK_EQ_INT(v[11].v.coll.items[1].v.i, -2);
	CHECK_EQ_INT(v[12].kind, CQL_LIT_MARKER);
	CHECK_EQ_STR(v[12].v.marker.name, "name");
	CHECK_EQ_INT(v[13].kind, CQL_LIT_FUNC);
	CHECK_EQ_INT(v[2].pos.line, 2);
	CHECK_EQ_INT(v[2].pos.column, 23);
	CHECK_EQ_STR(v[2].src, "-9223372036854775808");
	cql_free(&st);
}

TEST(lexical_details)
{
	struct cql_stmts st;
	struct cql_error err;
	/* Comments of three kinds, several statements, `;` optional, case. */
	CHECK_OK(cql_parse("-- first\n"
			   "sElEcT * FrOm t; /* block\n comment */ ;; select a,b from t // x\n"
			   "DROP TABLE t",
			   &st, &err));
	CHECK_EQ_INT(st.n, 3);
	CHECK_EQ_INT(st.v[1].u.select.ncols, 2);
	CHECK_EQ_INT(st.v[2].kind, CQL_STMT_DROP_TABLE);
	CHECK_EQ_INT(st.v[2].pos.line, 4);
	cql_free(&st);
	/* Nothing but blanks, comments and semicolons: no statement. */
	CHECK_OK(cql_parse("  ; -- nothing\n ;", &st, &err));
	CHECK_EQ_INT(st.n, 0);
	cql_free(&st);
	CHECK_OK(cql_parse("", &st, &err));
	CHECK_EQ_INT(st.n, 0);
	cql_free(&st);
	/* Quoted identifiers keep their case and may be reserved words. */
	{
		const struct cql_stmt *s = parse1("SELECT \"Select\", \"a\"\"b\" FROM \"T\"", &st);
		CHECK_EQ_STR(s->u.select.cols[0].name, "Select");
		CHECK_EQ_STR(s->u.select.cols[1].name, "a\"b");
		CHECK_EQ_STR(s->u.select.table.name, "T");
		cql_free(&st);
	}
	/* Token positions: line, column (characters), offset, length. */
	{
		struct cql_lexer lx;
		struct cql_token t;
		const char *text = "a\n\t‘é’ >= 0x01";
		cql_lexer_init(&lx, text, strlen(text));
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_IDENT);
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_STRING);
		CHECK_EQ_INT(t.pos.line, 2);
		CHECK_EQ_INT(t.pos.column, 2);
		CHECK_EQ_INT(t.pos.offset, 3);
		CHECK_EQ_INT(t.pos.length, 8);
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_GE);
		CHECK_EQ_INT(t.pos.column, 6);
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_BLOB);
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_EOF);
		CHECK_EQ_INT(t.pos.offset, strlen(text));
		CHECK_OK(cql_lex_next(&lx, &t, &err));
		CHECK_EQ_INT(t.kind, CQL_TOK_EOF);
	}
}

/* ---- errors ---- */

TEST(error_caret_display)
{
	static const struct {
		const char *text;
		const char *display;
		unsigned line, column;
		const char *token;
	} cases[] = {
		{"INSERT INTO t (a) VALUS (1)",
		 "INSERT INTO t (a) VALUS (1)\n"
		 "                  ^^^^^ expected VALUES\n",
		 1, 19, "VALUS"},
		{"SELECT * FROM",
		 "SELECT * FROM\n"
		 "             ^ expected table name, got end of input\n",
		 1, 14, ""},
		{"SELECT *\n  FROM t\n  WHERE a = 1\n  LIMT 5",
		 "  LIMT 5\n"
		 "  ^^^^ expected AND, ORDER BY, LIMIT, ALLOW FILTERING, AS OF or ';'\n",
		 4, 3, "LIMT"},
		{"INSERT INTO t (select) VALUES (1)",
		 "INSERT INTO t (select) VALUES (1)\n"
		 "               ^^^^^^ expected column name (select is a reserved word; quote "
		 "it: \"select\")\n",
		 1, 16, "select"},
		{"INSERT INTO t (a) VALUES ('abc)",
		 "INSERT INTO t (a) VALUES ('abc)\n"
		 "                          ^^^^^ unterminated string\n",
		 1, 27, "'abc)"},
		{"\tUPDATE t SET a = 1 WHERE b # 2",
		 "\tUPDATE t SET a = 1 WHERE b # 2\n"
		 "\t                           ^ unexpected character '#'\n",
		 1, 29, "#"},
		{"INSERT INTO t (a, b) VALUES (‘é’, 1, 2)",
		 "INSERT INTO t (a, b) VALUES (‘é’, 1, 2)\n"
		 "                                     ^ more values than columns (2)\n",
		 1, 38, "2"},
		{"INSERT INTO t (a, b, c) VALUES (1)",
		 "INSERT INTO t (a, b, c) VALUES (1)\n"
		 "                                 ^ expected ',' and 2 more values (one per "
		 "column)\n",
		 1, 34, ")"},
		{"UPDATE t SET m = n + {1: 2} WHERE k = 1",
		 "UPDATE t SET m = n + {1: 2} WHERE k = 1\n"
		 "                 ^ expected m (`c = c + …` updates the column it names)\n",
		 1, 18, "n"},
		{"SELECT * FROM t LIMIT 0",
		 "SELECT * FROM t LIMIT 0\n"
		 "                      ^ LIMIT must be 1..9223372036854775807\n",
		 1, 23, "0"},
		{"CREATE TABLE t (a int PRIMARY KEY, PRIMARY KEY (a))",
		 "CREATE TABLE t (a int PRIMARY KEY, PRIMARY KEY (a))\n"
		 "                                   ^^^^^^^ the primary key is already defined\n",
		 1, 36, "PRIMARY"},
		{"CREATE TABLE t (a map<text, list<int>> PRIMARY KEY)",
		 "CREATE TABLE t (a map<text, list<int>> PRIMARY KEY)\n"
		 "                            ^^^^ nested collections are not supported\n",
		 1, 29, "list"},
		{"INSERT INTO t (a) VALUES (1) USING TTL 630720001",
		 "INSERT INTO t (a) VALUES (1) USING TTL 630720001\n"
		 "                                       ^^^^^^^^^ TTL must be 0..630720000 "
		 "seconds\n",
		 1, 40, "630720001"},
		{"SELECT * FROM t WHERE a != 1",
		 "SELECT * FROM t WHERE a != 1\n"
		 "                        ^^ != is not supported in WHERE\n",
		 1, 25, "!="},
		{"SELECT * FROM t AS OF HT(5.4096)",
		 "SELECT * FROM t AS OF HT(5.4096)\n"
		 "                         ^^^^^^ hybrid time out of range (logical is 0..4095)\n",
		 1, 26, "5.4096"},
		{"SELEC * FROM t",
		 "SELEC * FROM t\n"
		 "^^^^^ expected a statement: CREATE, DROP, INSERT, UPDATE, DELETE, SELECT or "
		 "DESCRIBE\n",
		 1, 1, "SELEC"},
		{"SELECT * FROM t;\r\nSELECT * FROM t WHERE a = \"x\"\r\n",
		 "SELECT * FROM t WHERE a = \"x\"\n"
		 "                          ^^^ expected a value (strings take single quotes; "
		 "double quotes are for identifiers)\n",
		 2, 27, "\"x\""},
		{"INSERT INTO t (a) VALUES (12ab)",
		 "INSERT INTO t (a) VALUES (12ab)\n"
		 "                          ^^^^ malformed number\n",
		 1, 27, "12ab"},
		{"SELECT * FROM t /* open",
		 "SELECT * FROM t /* open\n"
		 "                ^^ unterminated comment\n",
		 1, 17, "/*"},
		{"INSERT INTO t (a) VALUES (0xABC)",
		 "INSERT INTO t (a) VALUES (0xABC)\n"
		 "                          ^^^^^ blob literal has an odd number of hex digits\n",
		 1, 27, "0xABC"},
		{"INSERT INTO t (a) VALUES ({[1]})",
		 "INSERT INTO t (a) VALUES ({[1]})\n"
		 "                           ^ nested collections are not supported\n",
		 1, 28, "["},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH default_time_to_live = 'x'",
		 "CREATE TABLE t (a int PRIMARY KEY) WITH default_time_to_live = 'x'\n"
		 "                                                               ^^^ "
		 "default_time_to_live must be a number of seconds, 0..630720000\n",
		 1, 64, "'x'"},
		{"CREATE TABLE t (a int PRIMAR KEY)",
		 "CREATE TABLE t (a int PRIMAR KEY)\n"
		 "                      ^^^^^^ expected ',', ')' or PRIMARY KEY\n",
		 1, 23, "PRIMAR"},
		{"CREATE TABLE t (a int, PRIMARY KEY (a)) WITH CLUSTERING ORDER (a)",
		 "CREATE TABLE t (a int, PRIMARY KEY (a)) WITH CLUSTERING ORDER (a)\n"
		 "                                                              ^ expected BY\n",
		 1, 63, "("},
		{"UPDATE t USING TIMESTAMP 5 SET a = 1 WHERE k = 1",
		 "UPDATE t USING TIMESTAMP 5 SET a = 1 WHERE k = 1\n"
		 "               ^^^^^^^^^ USING TIMESTAMP is not supported\n",
		 1, 16, "TIMESTAMP"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cql_error err;
		const char *display = parse_err(cases[i].text, &err);
		CHECK_EQ_STR(display, cases[i].display);
		CHECK_MSG(err.line == cases[i].line && err.column == cases[i].column,
			  "case %zu: line %u column %u, want %u %u", i, err.line, err.column,
			  cases[i].line, cases[i].column);
		CHECK_EQ_STR(err.token, cases[i].token);
	}
	/* The one-line form. */
	{
		struct cql_error err;
		struct buf b = BUF_INIT;
		parse_err("INSERT INTO t (a) VALUS (1)", &err);
		CHECK_EQ_INT(err.offset, 18);
		CHECK_EQ_INT(err.length, 5);
		cql_error_format(&err, &b);
		CHECK_EQ_STR(buf_cstr(&b), "line 1, column 19: expected VALUES (at 'VALUS')");
		buf_free(&b);
	}
}

/* A long line is shown as a window around the error. */
TEST(error_display_long_line)
{
	struct buf text = BUF_INIT, want = BUF_INIT;
	struct cql_error err;
	buf_printf(&text, "SELECT * FROM t WHERE ");
	for (int i = 0; i < 40; i++)
		buf_printf(&text, "a%02d = %d AND ", i, i);
	buf_printf(&text, "zz ~ 1");
	for (int i = 0; i < 40; i++)
		buf_printf(&text, " AND b = 2");
	parse_err(buf_cstr(&text), &err);
	{
		const char *t = buf_cstr(&text);
		struct buf got = BUF_INIT;
		size_t from = err.offset - 60;
		cql_error_render(t, &err, &got);
		buf_printf(&want, "...%.*s...\n", 60 + 1 + 60, t + from);
		buf_printf(&want, "   %*s^ unexpected character '~'\n", 60, "");
		CHECK_EQ_STR(buf_cstr(&got), buf_cstr(&want));
		buf_free(&got);
	}
	buf_free(&text);
	buf_free(&want);
}

TEST(input_limits)
{
	struct cql_stmts st;
	struct cql_error err;
	char *big = malloc(CQL_MAX_INPUT + 2);
	static const char nul[] = "SELECT * FROM t\0WHERE";
	CHECK(big != NULL);
	memset(big, ' ', CQL_MAX_INPUT + 1);
	big[CQL_MAX_INPUT + 1] = '\0';
	CHECK_EQ_INT(cql_parse(big, &st, &err), DOCRAFT_ETOOBIG);
	CHECK_EQ_INT(st.n, 0);
	free(big);
	CHECK_EQ_INT(cql_parse_n(nul, sizeof nul - 1, &st, &err), DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "unexpected character \\x00");
	CHECK_EQ_INT(err.column, 16);
	/* err may be NULL. */
	CHECK_EQ_INT(cql_parse("SELECT", &st, NULL), DOCRAFT_EINVAL);
	CHECK_EQ_INT(cql_parse("SELECT 'x", &st, NULL), DOCRAFT_EINVAL);
	/* Deeply nested function calls are refused, not recursed into. */
	{
		struct buf b = BUF_INIT;
		buf_printf(&b, "INSERT INTO t (a) VALUES (");
		for (int i = 0; i < 100000; i++)
			buf_printf(&b, "f(");
		CHECK_EQ_INT(cql_parse(buf_cstr(&b), &st, &err), DOCRAFT_EINVAL);
		CHECK_EQ_STR(err.message, "function calls nested too deeply");
		buf_free(&b);
	}
}

/* ---- binding ---- */

/* Binds the single value of "INSERT INTO t (c) VALUES (<lit>)". */
static int bind_text(const char *lit, enum col_type type, struct arena *a, struct pv *out,
		     char *errmsg)
{
	struct cql_stmts st;
	struct buf b = BUF_INIT;
	int rv;
	buf_printf(&b, "INSERT INTO t (c) VALUES (%s)", lit);
	parse1(buf_cstr(&b), &st);
	rv = cql_bind_value(&st.v[0].u.insert.values[0], type, a, out, errmsg);
	if (rv == 0 && out->type == PV_STRING) /* outlive the statement */
		*out = pv_strn(arena_dup(a, out->v.s.p, out->v.s.len), out->v.s.len);
	cql_free(&st);
	buf_free(&b);
	return rv;
}

TEST(bind_values)
{
	static const struct {
		const char *lit;
		enum col_type type;
		const char *want; /* pv_format */
		int pv_type;
	} ok[] = {
		{"true", CT_BOOL, "true", PV_BOOL},
		{"-128", CT_INT8, "-128", PV_INT32},
		{"32767", CT_INT16, "32767", PV_INT32},
		{"-2147483648", CT_INT32, "-2147483648", PV_INT32},
		{"9223372036854775807", CT_INT64, "9223372036854775807", PV_INT64},
		{"1.5", CT_FLOAT, "1.5", PV_FLOAT},
		{"3", CT_FLOAT, "3", PV_FLOAT},
		{"-0.1", CT_DOUBLE, "-0.1", PV_DOUBLE},
		{"NaN", CT_DOUBLE, "NaN", PV_DOUBLE},
		{"-Infinity", CT_FLOAT, "-Infinity", PV_FLOAT},
		{"'héllo'", CT_TEXT, "'h\\xc3\\xa9llo'", PV_STRING},
		{"‘x’", CT_TEXT, "'x'", PV_STRING},
		{"0x00ff", CT_BLOB, "'\\x00\\xff'", PV_STRING},
		{"0x", CT_BLOB, "''", PV_STRING},
		{"5", CT_TIMESTAMP, "ts(5µs)", PV_TIMESTAMP},
		{"'1970-01-01'", CT_TIMESTAMP, "ts(0µs)", PV_TIMESTAMP},
		{"'2000-02-29 12:34:56.789'", CT_TIMESTAMP, "ts(951827696789000µs)", PV_TIMESTAMP},
		{"'2000-02-29T12:34:56.789123456Z'", CT_TIMESTAMP, "ts(951827696789123µs)",
		 PV_TIMESTAMP},
		{"'2000-02-29 13:34+0100'", CT_TIMESTAMP, "ts(951827640000000µs)", PV_TIMESTAMP},
		{"'1969-12-31 23:59:59'", CT_TIMESTAMP, "ts(-1000000µs)", PV_TIMESTAMP},
		{"'1970-01-01'", CT_DATE, "2147483648", PV_UINT32},
		{"'2024-03-01'", CT_DATE, "2147503431", PV_UINT32}, /* 2^31 + 19783 */
		{"'1969-12-31'", CT_DATE, "2147483647", PV_UINT32},
		{"4294967295", CT_DATE, "4294967295", PV_UINT32},
		{"123e4567-e89b-12d3-a456-426614174000", CT_UUID,
		 "123e4567-e89b-12d3-a456-426614174000", PV_UUID},
		{"'123E4567-E89B-12D3-A456-426614174000'", CT_UUID,
		 "123e4567-e89b-12d3-a456-426614174000", PV_UUID},
		{"NULL", CT_INT32, "NULL", PV_NULL},
		{"null", CT_TEXT, "NULL", PV_NULL},
		{"word", CT_TEXT, "'word'", PV_STRING},
	};
	static const struct {
		const char *lit;
		enum col_type type;
		const char *msg;
	} bad[] = {
		{"'abc'", CT_INT32, "int: cannot store 'abc'"},
		{"128", CT_INT8, "tinyint: cannot store 128 (out of range -128..127)"},
		{"-32769", CT_INT16, "smallint: cannot store -32769 (out of range -32768..32767)"},
		{"2147483648", CT_INT32, "int: cannot store 2147483648 (out of range "
					 "-2147483648..2147483647)"},
		{"9223372036854775808", CT_INT64,
		 "bigint: cannot store 9223372036854775808 (out of range "
		 "-9223372036854775808..9223372036854775807)"},
		{"1.5", CT_INT32, "int: cannot store 1.5"},
		{"1e39", CT_FLOAT, "float: cannot store 1e39 (out of range for float)"},
		{"'1'", CT_DOUBLE, "double: cannot store '1'"},
		{"'abc'", CT_BLOB, "blob: cannot store 'abc' (blob literals are written 0x...)"},
		{"0x41", CT_TEXT, "text: cannot store 0x41"},
		{"'\xff'", CT_TEXT, "text: cannot store a string that is not valid UTF-8"},
		{"1", CT_BOOL, "boolean: cannot store 1"},
		{"'true'", CT_BOOL, "boolean: cannot store 'true'"},
		{"'2024-02-30'", CT_DATE, "date: cannot store '2024-02-30' ('2024-02-30' is not a "
					  "date (YYYY-MM-DD))"},
		{"-1", CT_DATE, "date: cannot store -1 (out of range 0..4294967295)"},
		{"'yesterday'", CT_TIMESTAMP, "timestamp: cannot store 'yesterday' ('yesterday' is "
					      "not a timestamp (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|"
					      "+HH:MM]))"},
		{"'2024-01-01 24:00'", CT_TIMESTAMP,
		 "timestamp: cannot store '2024-01-01 24:00' ('2024-01-01 24:00' is not a "
		 "timestamp (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|+HH:MM]))"},
		{"'123e4567'", CT_UUID, "uuid: cannot store '123e4567' ('123e4567' is not a uuid)"},
		{"'x'", CT_UUID, "uuid: cannot store 'x' ('x' is not a uuid)"},
		{"1", CT_UUID, "uuid: cannot store 1"},
		{"{1: 2}", CT_INT32, "int: cannot store {1: 2}"},
		{"[1, 2]", CT_MAP, "map: a collection type (use cql_bind_column)"},
		{"?", CT_TEXT, "text: cannot store ? (an unbound bind marker)"},
		{"foo()", CT_TEXT,
		 "text: cannot store foo() (unknown function foo(); known: uuid(), now(), "
		 "currenttimestamp(), currentdate())"},
		{"uuid(1)", CT_UUID, "uuid: cannot store uuid(1) (uuid() takes no arguments)"},
		{"'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", CT_INT32,
		 "int: cannot store 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... "},
	};
	struct arena a = ARENA_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct pv v;
		int rv = bind_text(ok[i].lit, ok[i].type, &a, &v, errmsg);
		CHECK_MSG(rv == 0, "%s: %s", ok[i].lit, errmsg);
		CHECK_EQ_STR(pv_str_of(&v), ok[i].want);
		CHECK_MSG(v.type == ok[i].pv_type, "%s: pv type %d", ok[i].lit, v.type);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pv v;
		CHECK_MSG(bind_text(bad[i].lit, bad[i].type, &a, &v, errmsg) == DOCRAFT_EINVAL,
			  "%s bound", bad[i].lit);
		if (bad[i].msg[strlen(bad[i].msg) - 1] == ' ')
			CHECK_MSG(strncmp(errmsg, bad[i].msg, strlen(bad[i].msg) - 1) == 0, "%s",
				  errmsg);
		else
			CHECK_EQ_STR(errmsg, bad[i].msg);
		CHECK_EQ_INT(v.type, PV_NULL);
	}
	arena_free(&a);
}

TEST(bind_column_errors_located)
{
	struct cql_stmts st;
	struct cql_error err;
	struct arena a = ARENA_INIT;
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	const char *text = "INSERT INTO msgs (user_id, msg_id, msg_props)\n"
			   "  VALUES ('u', 'abc', {'a': 1})";
	const struct cql_stmt *stmt = parse1(text, &st);
	struct cql_value v;
	struct buf b = BUF_INIT;
	CHECK_OK(cql_check_stmt(stmt, &s, &err));
	CHECK_EQ_INT(cql_bind_column(&stmt->u.insert.values[1], schema_find(&s, "msg_id"), NULL,
				     &a, &v, &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column msg_id is int: cannot store 'abc'");
	cql_error_render(text, &err, &b);
	CHECK_EQ_STR(buf_cstr(&b),
		     "  VALUES ('u', 'abc', {'a': 1})\n"
		     "               ^^^^^ column msg_id is int: cannot store 'abc'\n");
	CHECK_EQ_INT(cql_bind_column(&stmt->u.insert.values[2], schema_find(&s, "msg_props"), NULL,
				     &a, &v, &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column msg_props is map<text, text>: cannot store 1 as text");
	CHECK_EQ_INT(err.column, 29);
	CHECK_EQ_STR(err.token, "1");
	CHECK_EQ_INT(cql_bind_column(&stmt->u.insert.values[0], schema_find(&s, "msg_props"), NULL,
				     &a, &v, &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column msg_props is map<text, text>: cannot store 'u' "
				  "(expected a map {k: v, ...})");
	/* NULL for a collection: no elements (the column is deleted). */
	cql_free(&st);
	stmt = parse1("INSERT INTO msgs (user_id, msg_id, msg_props) VALUES ('u', 1, NULL)", &st);
	CHECK_OK(cql_bind_column(&stmt->u.insert.values[2], schema_find(&s, "msg_props"), NULL,
				 &a, &v, &err));
	CHECK(!v.is_collection);
	CHECK_EQ_INT(v.value.type, PV_NULL);
	buf_free(&b);
	cql_free(&st);
	arena_free(&a);
	schema_free(&s);
}

TEST(bind_functions)
{
	struct arena a = ARENA_INIT;
	struct cql_stmts st;
	struct cql_error err;
	struct cql_value v;
	struct schema s = schema_of("CREATE TABLE f (id uuid PRIMARY KEY, at timestamp, d date)");
	const struct cql_stmt *stmt = parse1(
		"INSERT INTO f (id, at, d) VALUES (now(), currenttimestamp(), currentdate())", &st);
	CHECK_OK(cql_check_stmt(stmt, &s, &err));
	CHECK_OK_MSG(cql_bind_column(&stmt->u.insert.values[0], &s.cols[0], &test_env, &a, &v,
				     &err),
		     err.message);
	/* A version-1 uuid: its time is the environment's now. */
	CHECK_EQ_INT(v.value.v.uuid[6] >> 4, 1);
	{
		const uint8_t *u = v.value.v.uuid;
		uint64_t ticks = (uint64_t)(u[6] & 0x0F) << 56 | (uint64_t)u[7] << 48 |
				 (uint64_t)u[4] << 40 | (uint64_t)u[5] << 32 |
				 (uint64_t)u[0] << 24 | (uint64_t)u[1] << 16 |
				 (uint64_t)u[2] << 8 | u[3];
		CHECK_EQ_U64((ticks - UINT64_C(0x01B21DD213814000)) / 10,
			     UINT64_C(1700000000000000));
		CHECK_EQ_INT(u[8] >> 6, 2);
	}
	CHECK_OK(cql_bind_column(&stmt->u.insert.values[1], &s.cols[1], &test_env, &a, &v, &err));
	CHECK_EQ_STR(pv_str_of(&v.value), "ts(1700000000000000µs)");
	CHECK_OK(cql_bind_column(&stmt->u.insert.values[2], &s.cols[2], &test_env, &a, &v, &err));
	CHECK_EQ_INT(v.value.v.u32, (UINT32_C(1) << 31) + 19675); /* 2023-11-14 */
	CHECK_EQ_INT(cql_bind_column(&stmt->u.insert.values[1], &s.cols[2], &test_env, &a, &v,
				     &err),
		     DOCRAFT_EINVAL);
	CHECK_EQ_STR(err.message, "column d is date: cannot store currenttimestamp() (it gives a "
				  "timestamp)");
	cql_free(&st);
	schema_free(&s);
	arena_free(&a);
}

/* ---- CREATE TABLE → schema errors ---- */

TEST(create_schema_errors)
{
	static const struct {
		const char *text;
		const char *msg;
		unsigned column;
	} cases[] = {
		{"CREATE TABLE t (a int, b text)", "table t has no PRIMARY KEY", 14},
		{"CREATE TABLE t (a int, b blurb, PRIMARY KEY (a))", "unknown type blurb", 26},
		{"CREATE TABLE t (a int, b set<blurb>, PRIMARY KEY (a))", "unknown type blurb", 30},
		{"CREATE TABLE t (a int, m map<text, int>, PRIMARY KEY (a, m))",
		 "key column m cannot be a collection (map<text, int>)", 58},
		{"CREATE TABLE t (s set<int> PRIMARY KEY)",
		 "key column s cannot be a collection (set<int>)", 17},
		{"CREATE TABLE t (a int, b int, PRIMARY KEY (a, c))",
		 "unknown column c in PRIMARY KEY", 47},
		{"CREATE TABLE t (a int, b int, PRIMARY KEY ((a), a))",
		 "column a appears twice in PRIMARY KEY", 49},
		{"CREATE TABLE t (a int, a text, PRIMARY KEY (a))", "column a is declared twice",
		 24},
		{"CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a, b)) "
		 "WITH CLUSTERING ORDER BY (c DESC)",
		 "c is not a range column (CLUSTERING ORDER BY orders range columns)", 84},
		{"CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a, b)) "
		 "WITH CLUSTERING ORDER BY (a DESC)",
		 "a is not a range column (CLUSTERING ORDER BY orders range columns)", 84},
		{"CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a, b, c)) "
		 "WITH CLUSTERING ORDER BY (c DESC, b ASC)",
		 "CLUSTERING ORDER BY must name range columns once each, in PRIMARY KEY order",
		 95},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH CLUSTERING ORDER BY (z ASC)",
		 "unknown column z in CLUSTERING ORDER BY", 62},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH compaction = 'x'",
		 "unknown table option compaction (known: default_time_to_live, packed, "
		 "CLUSTERING ORDER BY)", 41},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH packed = 1",
		 "packed must be true or false", 50},
		{"CREATE TABLE t (\"a b\" int PRIMARY KEY)",
		 "invalid column name 'a b'", 17},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cql_stmts st;
		struct cql_error err;
		struct schema s;
		const struct cql_stmt *stmt = parse1(cases[i].text, &st);
		memset(&s, 0xEE, sizeof s);
		CHECK_EQ_INT(cql_create_schema(&stmt->u.create, &s, &err), DOCRAFT_EINVAL);
		CHECK_EQ_STR(err.message, cases[i].msg);
		CHECK_MSG(err.column == cases[i].column, "case %zu: column %u, want %u", i,
			  err.column, cases[i].column);
		CHECK(s.cols == NULL && s.table == NULL); /* left freed */
		cql_free(&st);
	}
}

/* ---- statements against a schema ---- */

TEST(check_stmt_errors)
{
	static const struct {
		const char *text;
		const char *msg;
		unsigned column;
	} cases[] = {
		{"INSERT INTO t (h, r, nope) VALUES (1, 2, 3)", "table t has no column nope", 22},
		{"INSERT INTO t (h, v) VALUES (1, 'x')",
		 "INSERT needs every primary key column: r is missing", 13},
		{"INSERT INTO t (h, r, h) VALUES (1, 2, 3)", "column h is given twice", 22},
		{"UPDATE t SET r = 1 WHERE h = 1 AND r = 2", "cannot SET primary key column r", 14},
		{"UPDATE t SET v = 'x' WHERE h = 1",
		 "expected AND r = … (UPDATE needs every primary key column)", 33},
		{"UPDATE t SET v = 'x' WHERE h = 1 AND r > 2",
		 "UPDATE needs = on every primary key column (no ranges)", 40},
		{"UPDATE t SET v = 'x' WHERE h = 1 AND r = 2 AND v = 'y'",
		 "v is not a primary key column (UPDATE … WHERE names the primary key only)", 48},
		{"UPDATE t SET v = 'x' WHERE h = 1 AND r = 2 AND h = 3", "h is restricted twice",
		 48},
		{"DELETE h FROM t WHERE h = 1 AND r = 2",
		 "cannot delete primary key column h (DELETE FROM … deletes the row)", 8},
		{"DELETE v[1] FROM t WHERE h = 1 AND r = 2",
		 "only map entries can be deleted by key (v is text)", 10},
		{"DELETE FROM t WHERE h = 1",
		 "expected AND r = … (DELETE needs every primary key column)", 26},
		{"SELECT * FROM t WHERE h > 1",
		 "range conditions are only allowed on range columns (h is a hash column)", 25},
		{"SELECT * FROM t WHERE v = 'x'",
		 "v is not a primary key column (conditions on other columns need ALLOW "
		 "FILTERING)", 23},
		{"SELECT * FROM t WHERE r = 1",
		 "restricting range column r needs = on every hash column, or ALLOW FILTERING", 23},
		{"SELECT * FROM t WHERE h = 1 AND r2 = 1",
		 "cannot restrict r2: the earlier range column r is not restricted", 33},
		{"SELECT * FROM t WHERE h = 1 AND r > 1 AND r2 = 1",
		 "cannot restrict r2: the earlier range column r is restricted by a range, not =",
		 43},
		{"SELECT * FROM t WHERE h = 1 AND r > 1 AND r >= 2",
		 "r already has a bound on this side", 43},
		{"SELECT * FROM t WHERE h = 1 AND r = 1 AND r < 2", "r is restricted twice", 43},
		{"SELECT * FROM t WHERE h = 1 ORDER BY v", "ORDER BY orders by range columns only "
							   "(v is a regular column)", 38},
		{"SELECT * FROM t WHERE h = 1 ORDER BY r2", "ORDER BY must follow the primary key "
							    "order: expected r", 38},
		{"SELECT * FROM t WHERE h = 1 ORDER BY r ASC, r2 ASC",
		 "ORDER BY must keep the table's clustering order or reverse all of it", 45},
		{"SELECT * FROM t ORDER BY r", "ORDER BY needs = on every hash column", 26},
		{"SELECT nope FROM t", "table t has no column nope", 8},
		{"UPDATE t SET v = r WHERE h = 1 AND r = 2",
		 "r is a column, not a value (CQL cannot copy columns; a string takes quotes: 'r')",
		 18},
	};
	struct schema s = schema_of("CREATE TABLE t (h int, r int, r2 int, v text, "
				    "PRIMARY KEY ((h), r, r2)) WITH CLUSTERING ORDER BY (r DESC)");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cql_stmts st;
		struct cql_error err;
		const struct cql_stmt *stmt = parse1(cases[i].text, &st);
		CHECK_MSG(cql_check_stmt(stmt, &s, &err) == DOCRAFT_EINVAL, "%s passed",
			  cases[i].text);
		CHECK_EQ_STR(err.message, cases[i].msg);
		CHECK_MSG(err.column == cases[i].column, "case %zu: column %u, want %u", i,
			  err.column, cases[i].column);
		cql_free(&st);
	}
	/* What passes: reversed clustering order, prefix ranges, filtering. */
	{
		static const char *const good[] = {
			"SELECT * FROM t",
			"SELECT * FROM t WHERE h = 1 ORDER BY r ASC, r2 DESC",
			"SELECT * FROM t WHERE h = 1 ORDER BY r DESC",
			"SELECT * FROM t WHERE h = 1 AND r = 2 AND r2 > 3 AND r2 <= 9",
			"SELECT * FROM t WHERE r = 1 ALLOW FILTERING",
			"SELECT * FROM t WHERE h = 1 AND v = 'x' ALLOW FILTERING",
			"DELETE FROM t WHERE r2 = 1 AND r = 2 AND h = 3",
			"CREATE TABLE x (a int PRIMARY KEY)",
			"DROP TABLE t",
		};
		for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
			struct cql_stmts st;
			struct cql_error err;
			const struct cql_stmt *stmt = parse1(good[i], &st);
			CHECK_MSG(cql_check_stmt(stmt, &s, &err) == 0, "%s: %s", good[i],
				  err.message);
			cql_free(&st);
		}
	}
	schema_free(&s);
}

/* ---- robustness ---- */

/* Runs everything downstream of a successful parse on its statements:
 * nothing may crash or leak, whatever the result. */
static void exercise(const struct cql_stmts *st, const struct schema *s)
{
	struct arena a = ARENA_INIT;
	for (size_t i = 0; i < st->n; i++) {
		const struct cql_stmt *stmt = &st->v[i];
		struct cql_error err;
		struct cql_value v;
		struct pv key;
		(void)cql_check_stmt(stmt, s, &err);
		switch (stmt->kind) {
		case CQL_STMT_CREATE_TABLE: {
			struct schema made;
			if (cql_create_schema(&stmt->u.create, &made, &err) == 0)
				schema_free(&made);
			break;
		}
		case CQL_STMT_INSERT:
			for (size_t k = 0; k < stmt->u.insert.ncols; k++)
				for (size_t c = 0; c < s->ncols; c++)
					(void)cql_bind_column(&stmt->u.insert.values[k],
							      &s->cols[c], &test_env, &a, &v,
							      &err);
			break;
		case CQL_STMT_UPDATE:
			for (size_t k = 0; k < stmt->u.update.nassigns; k++)
				for (size_t c = 0; c < s->ncols; c++)
					(void)cql_bind_assign(&stmt->u.update.assigns[k],
							      &s->cols[c], &test_env, &a, &key,
							      &v, &err);
			break;
		case CQL_STMT_DELETE:
			for (size_t k = 0; k < stmt->u.del.ntargets; k++)
				if (stmt->u.del.targets[k].has_key)
					for (size_t c = 0; c < s->ncols; c++)
						(void)cql_bind_map_key(&stmt->u.del.targets[k].key,
								       &s->cols[c], &test_env, &a,
								       &key, &err);
			break;
		case CQL_STMT_SELECT:
			for (size_t k = 0; k < stmt->u.select.nwhere; k++)
				for (size_t c = 0; c < s->ncols; c++)
					(void)cql_bind_column(&stmt->u.select.where[k].value,
							      &s->cols[c], &test_env, &a, &v, &err);
			break;
		default:
			break;
		}
	}
	arena_free(&a);
}

/* Parses text[0..len); checks a failure is clean and located inside it. */
static void parse_any(const char *text, size_t len, const struct schema *s)
{
	struct cql_stmts st;
	struct cql_error err;
	char *copy = malloc(len + 1);
	int rv;
	CHECK(copy != NULL);
	memcpy(copy, text, len);
	copy[len] = '\0';
	rv = cql_parse(copy, &st, &err);
	if (rv == 0) {
		exercise(&st, s);
	} else {
		struct buf b = BUF_INIT;
		CHECK_MSG(rv == DOCRAFT_EINVAL, "<%s>: %d", copy, rv);
		CHECK_EQ_INT(st.n, 0);
		CHECK_MSG(err.offset + err.length <= len, "<%s>: error at %zu+%zu", copy,
			  err.offset, err.length);
		CHECK(err.line >= 1 && err.column >= 1);
		CHECK(err.message[0] != '\0');
		cql_error_render(copy, &err, &b);
		CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
		buf_free(&b);
	}
	cql_free(&st);
	free(copy);
}

static const char *const grammar_samples[] = {
	"CREATE TABLE IF NOT EXISTS ks.t (h text, r int, v map<text, int>, s set<int>, "
	"l list<text>, PRIMARY KEY ((h), r)) WITH CLUSTERING ORDER BY (r DESC) AND "
	"default_time_to_live = 10 AND packed = false;",
	"UPDATE t USING TTL 5 SET v = v + {'a': 1}, v['b'] = 2, s = s - {1}, l = ['x'] + l, "
	"l = l + ['y'] WHERE h = 'a' AND r = 1;",
	"DELETE v['a'], s FROM t WHERE h = 'a', r = 1;",
	"SELECT h, r FROM t WHERE h = 'a' AND r >= 1 AND r < 10 ORDER BY r ASC LIMIT 3 "
	"ALLOW FILTERING AS OF HT(17.3);",
	"INSERT INTO t (h, r, v) VALUES ($$x$$, -1, {}) USING TTL 0; DROP TABLE IF EXISTS t",
	"select * from t where h = 'x' as of '2024-01-01T00:00:00Z' -- c\n/* d */",
};

TEST(every_prefix_fails_cleanly)
{
	struct schema s = schema_of(seeds[S_MSGS_CREATE]);
	size_t n = 0;
	for (size_t i = 0; i < NSEEDS + sizeof grammar_samples / sizeof grammar_samples[0]; i++) {
		const char *text = i < NSEEDS ? seeds[i] : grammar_samples[i - NSEEDS];
		size_t len = strlen(text);
		for (size_t k = 0; k <= len; k++, n++)
			parse_any(text, k, &s);
	}
	test_note("%zu prefixes", n);
	schema_free(&s);
}

TEST(mutations_fail_cleanly)
{
	static const char alphabet[] = "'\"(){}[],;:.?*+-=<>!|$/\\ \n\t0aZ_x\xe2\x80\x98\xff";
	uint64_t rng = test_seed();
	struct schema s = schema_of("CREATE TABLE msgs (user_id text, msg_id int, msg text, "
				    "msg_props map<text, text>, tags set<int>, l list<text>, "
				    "PRIMARY KEY ((user_id), msg_id))");
	for (size_t i = 0; i < NSEEDS + sizeof grammar_samples / sizeof grammar_samples[0]; i++) {
		const char *text = i < NSEEDS ? seeds[i] : grammar_samples[i - NSEEDS];
		size_t len = strlen(text);
		for (int round = 0; round < 300; round++) {
			char buf[1024];
			size_t n = len < sizeof buf - 8 ? len : sizeof buf - 8;
			memcpy(buf, text, n);
			for (int edits = 1 + (int)(test_rand(&rng) % 3); edits > 0; edits--) {
				size_t at = n ? test_rand(&rng) % n : 0;
				char c = alphabet[test_rand(&rng) % (sizeof alphabet - 1)];
				switch (test_rand(&rng) % 3) {
				case 0: /* replace */
					if (n > 0)
						buf[at] = c;
					break;
				case 1: /* delete */
					if (n > 0) {
						memmove(buf + at, buf + at + 1, n - at - 1);
						n--;
					}
					break;
				default: /* insert */
					memmove(buf + at + 1, buf + at, n - at);
					buf[at] = c;
					n++;
					break;
				}
			}
			parse_any(buf, n, &s);
		}
	}
	schema_free(&s);
}

TEST(token_soup_fails_cleanly)
{
	static const char *const vocab[] = {
		"CREATE", "TABLE", "IF", "NOT", "EXISTS", "DROP", "INSERT", "INTO", "VALUES",
		"UPDATE", "SET", "DELETE", "FROM", "SELECT", "WHERE", "AND", "ORDER", "BY",
		"LIMIT", "ASC", "DESC", "USING", "TTL", "PRIMARY", "KEY", "WITH", "CLUSTERING",
		"AS", "OF", "HT", "ALLOW", "FILTERING", "default_time_to_live", "map", "set",
		"list", "int", "text", "t", "a", "b", "m", "NULL", "true", "NaN", "uuid", "(", ")",
		"[", "]", "{", "}", ",", ";", ":", ".", "*", "+", "-", "=", "<", "<=", ">", ">=",
		"!=", "||", "?", ":n", "1", "-5", "1.5", "99999999999999999999", "'s'", "‘c’",
		"0xff", "123e4567-e89b-12d3-a456-426614174000", "$$d$$", "\"Q\"", "now()",
		"-- c\n", "/* c */",
	};
	static const char *const starts[] = {"", "CREATE TABLE t (", "INSERT INTO t (a) VALUES (",
					     "UPDATE t SET ", "DELETE ", "SELECT * FROM t WHERE "};
	uint64_t rng = test_seed();
	struct schema s = schema_of("CREATE TABLE t (a int, b text, m map<int, text>, "
				    "PRIMARY KEY (a, b))");
	int parsed = 0;
	for (int round = 0; round < 20000; round++) {
		struct buf b = BUF_INIT;
		size_t ntok = 1 + test_rand(&rng) % 24;
		struct cql_stmts st;
		buf_printf(&b, "%s", starts[test_rand(&rng) % NELEM(starts)]);
		for (size_t k = 0; k < ntok; k++)
			buf_printf(&b, "%s%s", vocab[test_rand(&rng) % NELEM(vocab)],
				   test_rand(&rng) % 4 ? " " : "");
		parse_any((const char *)b.data, b.len, &s);
		if (cql_parse(buf_cstr(&b), &st, NULL) == 0)
			parsed++;
		cql_free(&st);
		buf_free(&b);
	}
	test_note("%d of 20000 soups parsed", parsed);
	schema_free(&s);
}

/* Statements made from the grammar with random names and values: each
 * parses, and checking and binding every value against every column of
 * the table fails cleanly or succeeds. */
TEST(random_statements_bind_cleanly)
{
	static const char *const cols[] = {"a", "b", "m", "s", "l", "ts", "d", "u", "f", "x"};
	static const char *const vals[] = {
		"1", "-1", "300", "99999999999999999999", "1.5", "-1e300", "NaN", "-Infinity",
		"'s'", "'2024-01-01'", "'2024-01-01 10:00:00.5Z'",
		"'123e4567-e89b-12d3-a456-426614174000'", "123e4567-e89b-12d3-a456-426614174000",
		"0xff", "true", "NULL", "word", "a", "?", ":p", "uuid()", "now()", "currentdate()",
		"currenttimestamp()", "nope(1)", "'\xc3\xa9'",
		/* collections last (not allowed as keys, m[k] values, nested) */
		"{}", "{1: 'x'}", "{'k': 2, 'j': NULL}", "{1, 2}", "{'a', 'b'}", "[1, 2]", "['x']",
		"[]",
	};
	const size_t nscalar = NELEM(vals) - 8;
	static const char *const rels[] = {"=", "<", "<=", ">", ">="};
	uint64_t rng = test_seed();
	struct schema s = schema_of("CREATE TABLE t (a int, b text, m map<text, int>, "
				    "s set<int>, l list<text>, ts timestamp, d date, u uuid, "
				    "f float, PRIMARY KEY ((a), b))");
#define C() cols[test_rand(&rng) % NELEM(cols)]
#define V() vals[test_rand(&rng) % NELEM(vals)]
#define R() rels[test_rand(&rng) % NELEM(rels)]
#define SV() vals[test_rand(&rng) % nscalar]
#define CV() vals[nscalar + test_rand(&rng) % (NELEM(vals) - nscalar)]
	for (int round = 0; round < 5000; round++) {
		struct buf b = BUF_INIT;
		struct cql_stmts st;
		struct cql_error err;
		const char *c = C();
		switch (test_rand(&rng) % 6) {
		case 0:
			buf_printf(&b,
				   "INSERT INTO t (%s, %s, %s) VALUES (%s, %s, %s) USING TTL %d",
				   C(), C(), C(), V(), V(), V(), (int)(test_rand(&rng) % 100));
			break;
		case 1:
			buf_printf(&b,
				   "UPDATE t SET %s = %s, %s = %s + %s, %s[%s] = %s "
				   "WHERE %s = %s AND %s = %s",
				   C(), V(), c, c, V(), C(), SV(), SV(), C(), V(), C(), V());
			break;
		case 2:
			buf_printf(&b, "UPDATE t SET %s = %s - %s, %s = %s + %s WHERE %s = %s",
				   c, c, V(), c, CV(), c, C(), V());
			break;
		case 3:
			buf_printf(&b, "DELETE %s[%s], %s FROM t WHERE %s = %s, %s = %s", C(),
				   SV(), C(), C(), V(), C(), V());
			break;
		case 4:
			buf_printf(&b, "SELECT * FROM t WHERE %s %s %s AND %s %s %s ORDER BY %s %s "
				       "LIMIT %d",
				   C(), R(), V(), C(), R(), V(), C(),
				   test_rand(&rng) % 2 ? "ASC" : "DESC",
				   1 + (int)(test_rand(&rng) % 9));
			break;
		default:
			buf_printf(&b, "SELECT %s FROM t WHERE %s %s %s ALLOW FILTERING", C(), C(),
				   R(), V());
			break;
		}
		CHECK_MSG(cql_parse(buf_cstr(&b), &st, &err) == 0, "<%s>: %s", buf_cstr(&b),
			  err.message);
		exercise(&st, &s);
		cql_free(&st);
		buf_free(&b);
	}
#undef C
#undef V
#undef R
#undef SV
#undef CV
	schema_free(&s);
}

TEST_MAIN(T(seeds_each_parse), T(seeds_together_parse), T(seed_msgs_create),
	  T(seed_msgs_insert), T(seed_msgs_update_map_put), T(seed_bare_word_value),
	  T(seed_curly_quotes), T(seed_delete_column_and_row), T(seed_ttl_insert_update),
	  T(seed_sessions_default_ttl), T(seed_ysql_statements), T(seed_selects),
	  T(create_table_forms), T(update_operations), T(update_if), T(delete_forms), T(select_forms),
	  T(describe_forms), T(hybrid_time_strings), T(literals), T(lexical_details), T(error_caret_display),
	  T(error_display_long_line), T(input_limits), T(bind_values),
	  T(bind_column_errors_located), T(bind_functions), T(create_schema_errors),
	  T(check_stmt_errors), T(every_prefix_fails_cleanly), T(mutations_fail_cleanly),
	  T(token_soup_fails_cleanly), T(random_statements_bind_cleanly))
