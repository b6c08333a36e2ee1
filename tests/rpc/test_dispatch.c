/* Method tables (src/rpc/dispatch.c) on a real RPC server and client on
 * 127.0.0.1, one uv loop per case.
 *
 * The steps run in their order and each hook only for its flag (recorded
 * in a log the cases compare); a payload that does not decode is answered
 * once, INVALID_ARGUMENT, and no hook or handler runs; a refusing hook
 * ends the call with its answer; a server-wide leader check comes before
 * decoding; a handler may keep its request and answer later; unknown
 * methods get the rpc server's answer; wrong tables are refused before
 * anything is registered. The decoded requests' memory is checked by the
 * sanitizer build (suite rpc under ASan).
 *
 * Every wait drives the loop until a condition holds or a guard timer
 * fires; nothing sleeps. Every case ends with uv_loop_close() == 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/buf.h"
#include "common/err.h"
#include "docraft.pb-c.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/dispatch.h"
#include "rpc/rpc.h"
#include "test.h"
#include "loop.h"

/* Test methods (60000.. is reserved for tests in proto/rpc.proto). */
enum {
	M_OBJ = 60101,    /* FIND | LEADER, a check: the tablet server's shape */
	M_SERVER = 60102, /* LEADER without FIND: the master's shape */
	M_ADMIN = 60103,  /* ADMIN | LEADER, no request type */
	M_KEEP = 60104,   /* no flags; the handler keeps the request */
	M_NONE = 60199,   /* not in the table */
};

#define PRIVATE_FLAG RPC_METHOD_PRIVATE(3)

struct fix {
	uv_loop_t loop;
	struct listener *l;
	struct rpc_server srv;
	struct rpc_dispatch d;
	struct rpc_client cl;
	bool srv_closed, l_closed, cl_closed;
	char address[32];
	char log[256];  /* the steps run, in order */
	bool admin_ok;  /* the admin hook lets callers through */
	bool leading;   /* the server-wide leader hook does */
	Docraft__ReadRequest *kept;
	struct rpc_call *kept_call;
};

/* ---- the table and its hooks ---- */

static void step(struct fix *f, const char *what)
{
	size_t n = strlen(f->log);
	snprintf(f->log + n, sizeof f->log - n, "%s ", what);
}

struct object {
	const char *name;
	bool leads;
};

static struct object obj_leader = {"leader", true};
static struct object obj_follower = {"follower", false};

static bool admin_hook(void *ctx, struct rpc_call *call, const struct rpc_method *m)
{
	struct fix *f = ctx;
	step(f, "admin");
	CHECK_EQ_INT(m->method, M_ADMIN);
	if (f->admin_ok)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EINVAL, "%s: admin callers only", m->name);
	return false;
}

static void *find_hook(void *ctx, struct rpc_call *call, const struct rpc_method *m,
		       const ProtobufCMessage *req)
{
	struct fix *f = ctx;
	const char *id = rpc_message_string(req, "tablet_id");
	step(f, (m->flags & PRIVATE_FLAG) ? "find+private" : "find");
	CHECK(req->descriptor == m->request);
	if (strcmp(id, "leader") == 0)
		return &obj_leader;
	if (strcmp(id, "follower") == 0)
		return &obj_follower;
	rpc_reply_errorf(call, DOCRAFT_ETABLETNOTFOUND, "tablet %s is not hosted here", id);
	return NULL;
}

static bool leader_hook(void *ctx, struct rpc_call *call, const struct rpc_method *m, void *obj)
{
	struct fix *f = ctx;
	struct object *o = obj;
	if (obj == NULL) { /* the server's leadership, before decoding */
		step(f, "leader0");
		CHECK(!(m->flags & RPC_METHOD_FIND));
		if (f->leading)
			return true;
		rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the leader", "127.0.0.9:9", 9);
		return false;
	}
	step(f, "leader");
	if (o->leads)
		return true;
	rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the leader of the object", "127.0.0.8:8",
			8);
	return false;
}

static bool obj_check(void *ctx, struct rpc_call *call, const void *req, void *obj)
{
	const Docraft__ReadRequest *rq = req;
	step(ctx, "check");
	CHECK(obj == &obj_leader || obj == &obj_follower);
	if (strcmp(rq->table, "bad") != 0)
		return true;
	rpc_reply_errorf(call, DOCRAFT_EINVAL, "bad table %s", rq->table);
	return false;
}

static enum rpc_dispatch_req obj_handler(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	Docraft__ReadRequest *rq = req;
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	step(ctx, "handler");
	CHECK(obj == &obj_leader);
	resp.found = true;
	resp.read_ht = rq->read_ht + 1;
	rpc_reply_message(call, &resp.base);
	return RPC_DISPATCH_FREE;
}

static enum rpc_dispatch_req server_handler(void *ctx, struct rpc_call *call, void *req,
					    void *obj)
{
	Docraft__ReadRequest *rq = req;
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	step(ctx, "handler");
	CHECK(obj == NULL);
	resp.read_ht = rq->read_ht + 2;
	rpc_reply_message(call, &resp.base);
	return RPC_DISPATCH_FREE;
}

static enum rpc_dispatch_req admin_handler(void *ctx, struct rpc_call *call, void *req,
					   void *obj)
{
	Docraft__PingResponse resp = DOCRAFT__PING_RESPONSE__INIT;
	step(ctx, "handler");
	CHECK(req == NULL && obj == NULL);
	resp.seq = 7;
	rpc_reply_message(call, &resp.base);
	return RPC_DISPATCH_FREE;
}

static enum rpc_dispatch_req keep_handler(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct fix *f = ctx;
	(void)obj;
	step(f, "handler");
	CHECK(f->kept == NULL);
	f->kept = req;
	f->kept_call = call;
	return RPC_DISPATCH_KEEP;
}

static const struct rpc_method table[] = {
	{M_OBJ, "obj", &docraft__read_request__descriptor, &docraft__read_response__descriptor,
	 RPC_METHOD_FIND | RPC_METHOD_LEADER | PRIVATE_FLAG, obj_check, obj_handler},
	{M_SERVER, "server", &docraft__read_request__descriptor,
	 &docraft__read_response__descriptor, RPC_METHOD_LEADER, NULL, server_handler},
	{M_ADMIN, "admin", NULL, &docraft__ping_response__descriptor,
	 RPC_METHOD_ADMIN | RPC_METHOD_LEADER, NULL, admin_handler},
	{M_KEEP, "keep", &docraft__read_request__descriptor, &docraft__read_response__descriptor,
	 0, NULL, keep_handler},
};

static const struct rpc_dispatch_hooks hooks = {
	.admin = admin_hook,
	.find = find_hook,
	.leader = leader_hook,
};

/* ---- driving the loop ---- */

/* ---- server, client and calls ---- */

static void server_closed_cb(struct rpc_server *srv)
{
	((struct fix *)srv->data)->srv_closed = true;
}

static void listener_closed_cb(void *arg)
{
	((struct fix *)arg)->l_closed = true;
}

static void client_closed_cb(struct rpc_client *cl)
{
	((struct fix *)cl->data)->cl_closed = true;
}

/* A listener and an RPC server on 127.0.0.1, without a table yet, and a
 * client. */
static void fix_start_bare(struct fix *f)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";

	signal(SIGPIPE, SIG_IGN); /* see listener.h */
	memset(f, 0, sizeof *f);
	CHECK_OK(uv_loop_init(&f->loop));
	CHECK_OK_MSG(listener_open(&f->loop, "127.0.0.1:0", &f->l, errmsg), errmsg);
	snprintf(f->address, sizeof f->address, "%s", listener_address(f->l));
	CHECK_OK_MSG(rpc_server_init(&f->srv, &f->loop, f->l, errmsg), errmsg);
	f->srv.data = f;
	CHECK_OK(rpc_client_init(&f->cl, &f->loop));
	f->cl.data = f;
}

static void fix_start(struct fix *f)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	fix_start_bare(f);
	CHECK_OK_MSG(rpc_dispatch_register(&f->d, &f->srv, table, sizeof table / sizeof table[0],
					   f, &hooks, errmsg),
		     errmsg);
}

static void fix_stop(struct fix *f)
{
	rpc_client_close(&f->cl, client_closed_cb);
	CHECK(loop_run_until(&f->loop, loop_flag_is_set, &f->cl_closed, 5000));
	rpc_server_close(&f->srv, server_closed_cb);
	CHECK(loop_run_until(&f->loop, loop_flag_is_set, &f->srv_closed, 5000));
	listener_close(f->l, listener_closed_cb, f);
	CHECK(loop_run_until(&f->loop, loop_flag_is_set, &f->l_closed, 5000));
	CHECK_EQ_INT(uv_loop_close(&f->loop), 0);
}

struct result {
	struct rpc_call_req req;
	bool done;
	int status;
	char message[DOCRAFT_ERRMSG_SIZE];
	char leader[64];
	uint64_t leader_id;
	struct buf reply;
};

static void result_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct result *x = req->data;
	CHECK(!x->done); /* exactly once */
	x->done = true;
	x->status = r->status;
	snprintf(x->message, sizeof x->message, "%s", r->message);
	snprintf(x->leader, sizeof x->leader, "%s", r->leader_address);
	x->leader_id = r->leader_id;
	if (r->status == DOCRAFT_OK)
		buf_append(&x->reply, r->reply, r->reply_len);
}

static bool result_done(void *p)
{
	return ((struct result *)p)->done;
}

/* Starts method with payload p (n bytes) into x, without waiting. */
static void start(struct fix *f, uint16_t method, const void *p, size_t n, struct result *x)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	memset(x, 0, sizeof *x);
	buf_init(&x->reply);
	x->req.data = x;
	CHECK_OK_MSG(rpc_call(&f->cl, f->address, method, p, n, 5000, &x->req, result_cb, errmsg),
		     errmsg);
}

/* Calls method with payload p (n bytes) and waits for the outcome in x
 * (buf_free x->reply after). The log starts empty for each call. */
static void call(struct fix *f, uint16_t method, const void *p, size_t n, struct result *x)
{
	f->log[0] = '\0';
	start(f, method, p, n, x);
	CHECK_MSG(loop_run_until(&f->loop, result_done, x, 10000), "method %u not answered", method);
}

/* The same with a ReadRequest for tablet_id, table and read_ht. */
static void call_read(struct fix *f, uint16_t method, const char *tablet_id, const char *tbl,
		      uint64_t read_ht, struct result *x)
{
	Docraft__ReadRequest rq = DOCRAFT__READ_REQUEST__INIT;
	uint8_t b[256];
	size_t n;
	rq.tablet_id = (char *)tablet_id;
	rq.table = (char *)tbl;
	rq.read_ht = read_ht;
	n = docraft__read_request__pack(&rq, b);
	CHECK(n <= sizeof b);
	call(f, method, b, n, x);
}

/* The ReadResponse in x's reply: its read_ht. */
static uint64_t reply_read_ht(const struct result *x)
{
	Docraft__ReadResponse *rs;
	uint64_t ht;
	CHECK_EQ_INT(x->status, DOCRAFT_OK);
	rs = docraft__read_response__unpack(NULL, x->reply.len, x->reply.data);
	CHECK(rs != NULL);
	ht = rs->read_ht;
	docraft__read_response__free_unpacked(rs, NULL);
	return ht;
}

static void check_error(const struct result *x, int code, const char *text)
{
	CHECK_EQ_INT(x->status, code);
	CHECK_MSG(strstr(x->message, text) != NULL, "'%s' lacks '%s'", x->message, text);
}

/* ---- cases ---- */

/* Every step of a FIND | LEADER method with a check, in order, then the
 * handler's answer. */
TEST(steps_in_order)
{
	struct fix f;
	struct result x;

	fix_start(&f);
	call_read(&f, M_OBJ, "leader", "t", 41, &x);
	CHECK_EQ_U64(reply_read_ht(&x), 42);
	CHECK_EQ_STR(f.log, "find+private check leader handler ");
	buf_free(&x.reply);
	fix_stop(&f);
}

/* Each hook that refuses ends the call with its own answer; the steps
 * after it do not run. */
TEST(refusing_hooks)
{
	struct fix f;
	struct result x;

	fix_start(&f);
	call_read(&f, M_OBJ, "elsewhere", "t", 0, &x);
	check_error(&x, DOCRAFT_ETABLETNOTFOUND, "tablet elsewhere is not hosted here");
	CHECK_EQ_STR(f.log, "find+private ");

	/* The method's check before the leader check: a mistaken request at
	 * a follower gets its own answer. */
	call_read(&f, M_OBJ, "follower", "bad", 0, &x);
	check_error(&x, DOCRAFT_EINVAL, "bad table bad");
	CHECK_EQ_STR(f.log, "find+private check ");

	call_read(&f, M_OBJ, "follower", "t", 0, &x);
	check_error(&x, DOCRAFT_ENOTLEADER, "not the leader of the object");
	CHECK_EQ_STR(x.leader, "127.0.0.8:8");
	CHECK_EQ_U64(x.leader_id, 8);
	CHECK_EQ_STR(f.log, "find+private check leader ");
	fix_stop(&f);
}

/* A payload that does not decode: one INVALID_ARGUMENT answer, no hook
 * after the decode and no handler; the server answered as many calls as
 * it received. */
TEST(decode_failure_answered_once)
{
	struct fix f;
	struct result x;
	struct rpc_server_stats st;

	fix_start(&f);
	call(&f, M_OBJ, "\xff\xff\xff", 3, &x);
	check_error(&x, DOCRAFT_EINVAL, "malformed ReadRequest");
	CHECK_EQ_STR(f.log, "");
	call(&f, M_KEEP, "\xff\xff\xff", 3, &x);
	check_error(&x, DOCRAFT_EINVAL, "malformed ReadRequest");
	CHECK_EQ_STR(f.log, "");
	CHECK(f.kept == NULL);
	rpc_server_get_stats(&f.srv, &st);
	CHECK_EQ_U64(st.calls, 2);
	CHECK_EQ_U64(st.replies, 2);
	fix_stop(&f);
}

/* Leadership of the server (LEADER without FIND) is checked before
 * decoding: a server that does not lead answers every request alike. */
TEST(server_leader_before_decode)
{
	struct fix f;
	struct result x;

	fix_start(&f);
	call(&f, M_SERVER, "\xff\xff\xff", 3, &x);
	check_error(&x, DOCRAFT_ENOTLEADER, "not the leader");
	CHECK_EQ_STR(x.leader, "127.0.0.9:9");
	CHECK_EQ_STR(f.log, "leader0 ");

	f.leading = true;
	call(&f, M_SERVER, "\xff\xff\xff", 3, &x);
	check_error(&x, DOCRAFT_EINVAL, "malformed ReadRequest");
	CHECK_EQ_STR(f.log, "leader0 ");
	call_read(&f, M_SERVER, "any", "", 5, &x);
	CHECK_EQ_U64(reply_read_ht(&x), 7);
	CHECK_EQ_STR(f.log, "leader0 handler ");
	buf_free(&x.reply);
	fix_stop(&f);
}

/* ADMIN first, then the server's leadership; a method without a request
 * type is not decoded (any payload goes through) and its handler gets
 * NULL. */
TEST(admin_flag)
{
	struct fix f;
	struct result x;
	Docraft__PingResponse *rs;

	fix_start(&f);
	call(&f, M_ADMIN, "junk", 4, &x);
	check_error(&x, DOCRAFT_EINVAL, "admin: admin callers only");
	CHECK_EQ_STR(f.log, "admin ");

	f.admin_ok = true;
	call(&f, M_ADMIN, "junk", 4, &x);
	check_error(&x, DOCRAFT_ENOTLEADER, "not the leader");
	CHECK_EQ_STR(f.log, "admin leader0 ");

	f.leading = true;
	call(&f, M_ADMIN, "junk", 4, &x);
	CHECK_EQ_INT(x.status, DOCRAFT_OK);
	CHECK_EQ_STR(f.log, "admin leader0 handler ");
	rs = docraft__ping_response__unpack(NULL, x.reply.len, x.reply.data);
	CHECK(rs != NULL && rs->seq == 7);
	docraft__ping_response__free_unpacked(rs, NULL);
	buf_free(&x.reply);
	fix_stop(&f);
}

static bool kept(void *p)
{
	return ((struct fix *)p)->kept != NULL;
}

/* A handler that keeps its request answers later and frees it itself (the
 * sanitizer build would see a double free or a leak). */
TEST(handler_keeps_request)
{
	struct fix f;
	struct result x;
	Docraft__ReadRequest rq = DOCRAFT__READ_REQUEST__INIT;
	Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
	uint8_t b[64];

	fix_start(&f);
	rq.tablet_id = (char *)"kept";
	rq.read_ht = 10;
	start(&f, M_KEEP, b, docraft__read_request__pack(&rq, b), &x);
	CHECK(loop_run_until(&f.loop, kept, &f, 5000));
	CHECK_EQ_STR(f.log, "handler ");
	CHECK(!x.done);
	CHECK_EQ_STR(f.kept->tablet_id, "kept");
	resp.read_ht = f.kept->read_ht * 2;
	rpc_reply_message(f.kept_call, &resp.base);
	protobuf_c_message_free_unpacked(&f.kept->base, NULL);
	CHECK(loop_run_until(&f.loop, result_done, &x, 5000));
	CHECK_EQ_U64(reply_read_ht(&x), 20);
	buf_free(&x.reply);
	fix_stop(&f);
}

/* A method outside the table is the rpc server's: "unknown method". */
TEST(unknown_method)
{
	struct fix f;
	struct result x;
	struct rpc_server_stats st;

	fix_start(&f);
	call(&f, M_NONE, NULL, 0, &x);
	check_error(&x, DOCRAFT_EINVAL, "unknown method");
	CHECK_EQ_STR(f.log, "");
	rpc_server_get_stats(&f.srv, &st);
	CHECK_EQ_U64(st.unknown_method, 1);
	fix_stop(&f);
}

/* Wrong tables are refused before anything is registered: the right one
 * registers afterwards. A method the server has already is refused by
 * rpc_server_register. */
TEST(wrong_tables)
{
	struct fix f;
	struct result x;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	struct rpc_dispatch bad;
	struct rpc_method t[2];
	const struct rpc_dispatch_hooks no_find = {.leader = leader_hook};

	fix_start_bare(&f);
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, table, 0, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	/* A FIND method without a find hook, or with no hooks at all. */
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, table, 2, &f, &no_find, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_MSG(strstr(errmsg, "method obj: no find hook") != NULL, "%s", errmsg);
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, table, 1, &f, NULL, errmsg),
		     DOCRAFT_EINVAL);
	/* The same method twice (the second entry wrong only so). */
	t[0] = table[1];
	t[1] = table[3];
	t[1].method = t[0].method;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, t, 2, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_MSG(strstr(errmsg, "twice (server, keep)") != NULL, "%s", errmsg);
	/* Method 0, no handler, FIND without a request type, an unknown
	 * generic flag. */
	t[1] = table[3];
	t[1].method = 0;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, t, 2, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	t[1] = table[3];
	t[1].handler = NULL;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, t, 2, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	t[1] = table[3];
	t[1].flags = RPC_METHOD_FIND;
	t[1].request = NULL;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, t, 2, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	t[1] = table[3];
	t[1].flags = 1u << 9;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, t, 2, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_MSG(strstr(errmsg, "unknown flags 0x200") != NULL, "%s", errmsg);

	/* Nothing was registered: the whole table goes in now and serves. */
	CHECK_OK_MSG(rpc_dispatch_register(&f.d, &f.srv, table, sizeof table / sizeof table[0],
					   &f, &hooks, errmsg),
		     errmsg);
	call_read(&f, M_OBJ, "leader", "t", 1, &x);
	CHECK_EQ_U64(reply_read_ht(&x), 2);
	buf_free(&x.reply);
	/* METHOD_PING is the server's own. */
	t[1] = table[3];
	t[1].method = DOCRAFT__METHOD__METHOD_PING;
	CHECK_EQ_INT(rpc_dispatch_register(&bad, &f.srv, &t[1], 1, &f, &hooks, errmsg),
		     DOCRAFT_EINVAL);
	fix_stop(&f);
}

/* rpc_message_string reads a string field by name, and nothing else. */
TEST(message_string)
{
	Docraft__ReadRequest rq = DOCRAFT__READ_REQUEST__INIT;
	Docraft__DeleteTabletRequest del = DOCRAFT__DELETE_TABLET_REQUEST__INIT;

	rq.tablet_id = (char *)"t1";
	rq.table = (char *)"users";
	CHECK_EQ_STR(rpc_message_string(&rq.base, "tablet_id"), "t1");
	CHECK_EQ_STR(rpc_message_string(&rq.base, "table"), "users");
	CHECK_EQ_STR(rpc_message_string(&rq.base, "table_id"), "");
	CHECK(rpc_message_string(&rq.base, "read_ht") == NULL); /* not a string */
	CHECK(rpc_message_string(&rq.base, "key") == NULL);     /* repeated */
	CHECK(rpc_message_string(&rq.base, "nope") == NULL);
	del.tablet_id = (char *)"t2";
	CHECK_EQ_STR(rpc_message_string(&del.base, "tablet_id"), "t2");
	CHECK(rpc_message_string(&del.base, "table") == NULL);
}

TEST_MAIN(T(steps_in_order), T(refusing_hooks), T(decode_failure_answered_once),
	  T(server_leader_before_decode), T(admin_flag), T(handler_keeps_request),
	  T(unknown_method), T(wrong_tables), T(message_string))
