/* GET and SET over the routing client (redis_data.h).
 *
 * Design note. Each command is one struct cmd, alive from the command's
 * start to its reply; it holds the docraft request and the op. A command
 * runs as a small chain of client calls, each callback deciding the next:
 *   GET: get -> reply (a missing table is a missing key).
 *   SET: write -> reply; a missing table: create it (if not exists), then
 *        write again, once.
 *   SET ... XX: get (absent: null reply) -> write if v is still what was
 *        read -> reply; another writer in between (ECONDITION): again,
 *        at most XX_ATTEMPTS times. The client's conditions only say
 *        "equals" or "has no value", so "exists" is this read and compare.
 *   SET ... NX: one write with "v has no value" (ECONDITION: null reply).
 *   EXISTS k...: a get per key, one after the other, counting.
 *   DEL k...: per key, a get, then (present) a delete on condition that v
 *        is still what was read (changed: read again, as XX), counting
 *        the deletes that applied: Redis's count of keys removed.
 * Arguments (argv) stay valid until redis_conn_complete (server.h); the
 * op copies what it needs anyway. Errors of the cluster are replied as
 * "-ERR docraft: <reason>"; the command's own errors are Redis's texts. */
#include "tserver/redis_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"

#define XX_ATTEMPTS 8

/* what a struct cmd does beyond its name: SET's condition, or which of
 * EXISTS and DEL it is */
enum { SET_ANY, SET_NX, SET_XX, MULTI_EXISTS, MULTI_DEL };

struct cmd {
	docraft_req req;
	struct redis_conn *c;
	struct redis_data *d;
	char table[16];
	docraft_value key;
	docraft_value val;
	docraft_op *op;
	docraft_schema *schema;
	int64_t ttl_ms; /* 0: no expiry */
	int cond;
	int attempts;
	/* EXISTS, DEL: the keys argv[1..argc), the one at idx, the count */
	uint32_t argc, idx;
	const struct resp_arg *argv;
	long long count;
	bool created; /* the table was created once already */
};

static void set_write(struct cmd *x);

static struct cmd *cmd_new(struct redis_conn *c, const struct resp_arg *key)
{
	struct cmd *x = xcalloc(1, sizeof *x);

	x->c = c;
	x->d = redis_conn_data(c);
	x->req.data = x;
	snprintf(x->table, sizeof x->table, "redis_%u", redis_conn_db(c));
	x->key = docraft_value_blob(key->p, key->n);
	return x;
}

/* Replies and ends the command. */
static void finish(struct cmd *x)
{
	struct redis_conn *c = x->c;

	docraft_op_free(x->op);
	docraft_schema_free(x->schema);
	free(x);
	redis_conn_complete(c);
}

static void fail(struct cmd *x, int status, const char *errmsg)
{
	resp_errorf(redis_conn_out(x->c), "ERR docraft: %s",
		    errmsg != NULL && errmsg[0] != '\0' ? errmsg : docraft_strerror(status));
	finish(x);
}

/* A failure of a submitting call: its callback never runs. */
static void submit_failed(struct cmd *x, int rv)
{
	fail(x, rv, docraft_errmsg());
}

static bool no_client(struct redis_conn *c)
{
	struct redis_data *d = redis_conn_data(c);
	if (d != NULL && d->client != NULL)
		return false;
	resp_error(redis_conn_out(c), "ERR this tserver has no masters: no data commands");
	return true;
}

/* ---- GET ---- */

static void get_done(docraft_req *req)
{
	struct cmd *x = req->data;
	struct buf *out = redis_conn_out(x->c);

	if (req->status == DOCRAFT_ETABLENOTFOUND) {
		resp_null_bulk(out);
	} else if (req->status != 0) {
		fail(x, req->status, req->errmsg);
		return;
	} else {
		docraft_value v = docraft_result_value(req->result, 0, 1);
		if (docraft_result_nrows(req->result) == 0 || v.type != DOCRAFT_TYPE_BLOB)
			resp_null_bulk(out);
		else
			resp_bulk(out, v.v.s.p, v.v.s.len);
	}
	docraft_result_free(req->result);
	finish(x);
}

static int cmd_get(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct cmd *x;
	int rv;

	(void)argc;
	if (no_client(c))
		return REDIS_DONE;
	x = cmd_new(c, &argv[1]);
	rv = docraft_get_async(x->d->client, &x->req, x->table, &x->key, 1, 0, get_done);
	if (rv != 0)
		submit_failed(x, rv);
	return REDIS_ASYNC;
}

/* ---- SET ---- */

static void created(docraft_req *req)
{
	struct cmd *x = req->data;

	if (req->status != 0) {
		fail(x, req->status, req->errmsg);
		return;
	}
	set_write(x);
}

static void create_table(struct cmd *x)
{
	docraft_table_options o = {0, 0, true};
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	x->created = true;
	if ((rv = docraft_schema_new(x->table, &x->schema, errmsg)) != 0 ||
	    (rv = docraft_schema_add_column(x->schema, "k", DOCRAFT_COLUMN_HASH, "blob", errmsg)) !=
		    0 ||
	    (rv = docraft_schema_add_column(x->schema, "v", DOCRAFT_COLUMN_REGULAR, "blob",
					    errmsg)) != 0) {
		fail(x, rv, errmsg);
		return;
	}
	rv = docraft_table_create_async(x->d->client, &x->req, x->schema, &o, created);
	if (rv != 0)
		submit_failed(x, rv);
}

static void xx_read(struct cmd *x);

static void set_done(docraft_req *req)
{
	struct cmd *x = req->data;
	struct buf *out = redis_conn_out(x->c);

	if (req->status == 0) {
		resp_simple(out, "OK");
	} else if (req->status == DOCRAFT_ETABLENOTFOUND && !x->created && x->cond != SET_XX) {
		create_table(x);
		return;
	} else if (req->status == DOCRAFT_ECONDITION && x->cond == SET_NX) {
		resp_null_bulk(out);
	} else if (req->status == DOCRAFT_ECONDITION && x->cond == SET_XX &&
		   x->attempts < XX_ATTEMPTS) {
		xx_read(x); /* changed since read: it still exists; read again */
		return;
	} else {
		fail(x, req->status, req->errmsg);
		return;
	}
	finish(x);
}

/* The op for the current attempt: INSERT k, v = value, its TTL, and the
 * condition (expected: XX's value read; NULL otherwise). */
static int build_op(struct cmd *x, const docraft_value *expected)
{
	int rv;

	docraft_op_free(x->op);
	x->op = NULL;
	if ((rv = docraft_op_insert(&x->key, 1, &x->op)) != 0 ||
	    (rv = docraft_op_column(x->op, "v", &x->val)) != 0)
		return rv;
	docraft_op_set_ttl(x->op, x->ttl_ms); /* 0: never, as SET without KEEPTTL */
	if (x->cond == SET_NX)
		return docraft_op_if(x->op, "v", NULL);
	if (x->cond == SET_XX)
		return docraft_op_if(x->op, "v", expected);
	return 0;
}

/* Sends x->op; set_done replies. */
static void submit_write(struct cmd *x)
{
	int rv = docraft_write_async(x->d->client, &x->req, x->table, &x->op, 1,
				     DOCRAFT_TTL_DEFAULT, set_done);
	if (rv != 0)
		submit_failed(x, rv);
}

static void set_write(struct cmd *x)
{
	int rv;

	if (x->op == NULL && (rv = build_op(x, NULL)) != 0) {
		fail(x, rv, docraft_errmsg());
		return;
	}
	submit_write(x);
}

static void xx_got(docraft_req *req)
{
	struct cmd *x = req->data;
	docraft_value v;
	int rv;

	if (req->status == DOCRAFT_ETABLENOTFOUND ||
	    (req->status == 0 && docraft_result_nrows(req->result) == 0)) {
		docraft_result_free(req->result);
		resp_null_bulk(redis_conn_out(x->c));
		finish(x);
		return;
	}
	if (req->status != 0) {
		fail(x, req->status, req->errmsg);
		return;
	}
	v = docraft_result_value(req->result, 0, 1);
	if (v.type != DOCRAFT_TYPE_BLOB) {
		docraft_result_free(req->result);
		resp_null_bulk(redis_conn_out(x->c));
		finish(x);
		return;
	}
	rv = build_op(x, &v); /* copies v before the result goes */
	docraft_result_free(req->result);
	if (rv != 0) {
		fail(x, rv, docraft_errmsg());
		return;
	}
	submit_write(x);
}

static void xx_read(struct cmd *x)
{
	int rv;

	x->attempts++;
	rv = docraft_get_async(x->d->client, &x->req, x->table, &x->key, 1, 0, xx_got);
	if (rv != 0)
		submit_failed(x, rv);
}

static bool is(const struct resp_arg *a, const char *word)
{
	return a->n == strlen(word) && strncasecmp(a->p, word, a->n) == 0;
}

/* SET key value [NX|XX] [EX s|PX ms]: Redis's option rules and errors
 * (t_string.c parseExtendedStringArgumentsOrReply). */
static int cmd_set(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct buf *out = redis_conn_out(c);
	int cond = SET_ANY, unit = 0; /* unit: 1 s, 1000 ms */
	long long expire = 0;
	struct cmd *x;

	for (uint32_t i = 3; i < argc; i++) {
		bool has_next = i + 1 < argc;
		if (is(&argv[i], "nx") && cond != SET_XX) {
			cond = SET_NX;
		} else if (is(&argv[i], "xx") && cond != SET_NX) {
			cond = SET_XX;
		} else if ((is(&argv[i], "ex") || is(&argv[i], "px")) && unit == 0 && has_next) {
			unit = is(&argv[i], "ex") ? 1000 : 1;
			i++;
			if (!resp_string2ll(argv[i].p, argv[i].n, &expire)) {
				resp_error(out, "ERR value is not an integer or out of range");
				return REDIS_DONE;
			}
			if (expire <= 0 || expire > INT64_MAX / 1000) {
				resp_error(out, "ERR invalid expire time in 'set' command");
				return REDIS_DONE;
			}
		} else {
			resp_error(out, "ERR syntax error");
			return REDIS_DONE;
		}
	}
	if (no_client(c))
		return REDIS_DONE;
	x = cmd_new(c, &argv[1]);
	x->val = docraft_value_blob(argv[2].p, argv[2].n);
	x->ttl_ms = expire * unit;
	x->cond = cond;
	if (cond == SET_XX)
		xx_read(x);
	else
		set_write(x);
	return REDIS_ASYNC;
}

/* ---- EXISTS, DEL ---- */

static void multi_next(struct cmd *x);

static void multi_key_done(struct cmd *x)
{
	x->idx++;
	x->attempts = 0;
	multi_next(x);
}

static void del_done(docraft_req *req)
{
	struct cmd *x = req->data;

	if (req->status == 0) {
		x->count++;
		multi_key_done(x);
	} else if (req->status == DOCRAFT_ECONDITION && x->attempts < XX_ATTEMPTS) {
		multi_next(x); /* changed since read: read it again */
	} else {
		fail(x, req->status, req->errmsg);
	}
}

static void multi_got(docraft_req *req)
{
	struct cmd *x = req->data;
	docraft_value v;
	int rv;

	if (req->status == DOCRAFT_ETABLENOTFOUND) { /* no key of this database */
		x->idx = x->argc;
		multi_next(x);
		return;
	}
	if (req->status != 0) {
		fail(x, req->status, req->errmsg);
		return;
	}
	v = docraft_result_value(req->result, 0, 1);
	if (docraft_result_nrows(req->result) == 0 || v.type != DOCRAFT_TYPE_BLOB) {
		docraft_result_free(req->result);
		multi_key_done(x);
		return;
	}
	if (x->cond == MULTI_EXISTS) {
		docraft_result_free(req->result);
		x->count++;
		multi_key_done(x);
		return;
	}
	docraft_op_free(x->op);
	x->op = NULL;
	if ((rv = docraft_op_delete_row(&x->key, 1, &x->op)) == 0)
		rv = docraft_op_if(x->op, "v", &v); /* copies v */
	docraft_result_free(req->result);
	if (rv != 0) {
		fail(x, rv, docraft_errmsg());
		return;
	}
	rv = docraft_write_async(x->d->client, &x->req, x->table, &x->op, 1,
				 DOCRAFT_TTL_DEFAULT, del_done);
	if (rv != 0)
		submit_failed(x, rv);
}

/* Reads the key at idx, or replies the count once every key is done. */
static void multi_next(struct cmd *x)
{
	int rv;

	if (x->idx == x->argc) {
		resp_int(redis_conn_out(x->c), x->count);
		finish(x);
		return;
	}
	x->attempts++;
	x->key = docraft_value_blob(x->argv[x->idx].p, x->argv[x->idx].n);
	rv = docraft_get_async(x->d->client, &x->req, x->table, &x->key, 1, 0, multi_got);
	if (rv != 0)
		submit_failed(x, rv);
}

static int multi(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv, int kind)
{
	struct cmd *x;

	if (no_client(c))
		return REDIS_DONE;
	x = cmd_new(c, &argv[1]);
	x->cond = kind;
	x->argc = argc;
	x->argv = argv;
	x->idx = 1;
	multi_next(x);
	return REDIS_ASYNC;
}

static int cmd_exists(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return multi(c, argc, argv, MULTI_EXISTS);
}

static int cmd_del(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return multi(c, argc, argv, MULTI_DEL);
}

const struct redis_command redis_data_commands[] = {
	{"del", -2, REDIS_CMD_WRITE, 1, -1, 1, cmd_del, NULL, 0},
	{"exists", -2, REDIS_CMD_READONLY | REDIS_CMD_FAST, 1, -1, 1, cmd_exists, NULL, 0},
	{"get", 2, REDIS_CMD_READONLY | REDIS_CMD_FAST, 1, 1, 1, cmd_get, NULL, 0},
	{"set", -3, REDIS_CMD_WRITE | REDIS_CMD_DENYOOM, 1, 1, 1, cmd_set, NULL, 0},
};
const size_t redis_data_n_commands = sizeof redis_data_commands / sizeof redis_data_commands[0];
