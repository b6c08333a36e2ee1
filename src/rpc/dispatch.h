/* One dispatch table per server: each RPC method declared once, with its
 * request and response types, its flags and its handler, so that what
 * every handler used to repeat (decode the request, find the object it
 * names, check this server may serve it, free the request) is done once,
 * here and in the server's hooks.
 *
 * A call for a method of the table goes through these steps, in this
 * order; a step that fails has answered the call, and the later steps and
 * the handler do not run:
 *
 *   1. RPC_METHOD_ADMIN:   hooks->admin(ctx, call, m)          the caller may
 *                                                              call admin methods
 *   2. RPC_METHOD_LEADER   hooks->leader(ctx, call, m, NULL)   this server leads
 *      without _FIND:                                          (e.g. the master)
 *   3. m->request != NULL: decode the payload under the budget (rpc_call_decode:
 *                          INVALID_ARGUMENT "malformed X", or TOO_BIG)
 *   4. RPC_METHOD_FIND:    obj = hooks->find(ctx, call, m, req) the object the
 *                                                              request names
 *   5. m->check != NULL:   m->check(ctx, call, req, obj)       the method's own
 *                                                              validation
 *   6. RPC_METHOD_LEADER   hooks->leader(ctx, call, m, obj)    obj may serve it
 *      with _FIND:                                             (e.g. a tablet leader)
 *   7. m->handler(ctx, call, req, obj): answers call, now or later
 *   8. the request is freed, unless the handler kept it (RPC_DISPATCH_KEEP)
 *
 * So leadership is the object's when the request names one (checked after
 * the lookup and the method's validation: a malformed or mistaken request
 * gets its own answer before NOT_LEADER), else the server's (checked
 * before decoding, as a server that does not lead answers every request
 * alike). Bits from RPC_METHOD_PRIVATE(0) up are the server's own: the
 * dispatcher ignores them and the hooks read them from m->flags (the tablet
 * server's "queues on the tablet", for instance).
 *
 * Answers: exactly one per call, as rpc.h requires; the dispatcher answers
 * only a decode failure, every other answer comes from the hook, check or
 * handler that ends the call's way through the steps.
 *
 * Ownership: the table, its names and descriptors, and the hooks are
 * borrowed for the life of the server (static const tables); the decoded
 * request belongs to the dispatcher, which frees it after the handler
 * returns, unless the handler returns RPC_DISPATCH_KEEP: then it is the
 * handler's, to free with protobuf_c_message_free_unpacked(req, NULL). obj
 * is whatever the find hook returns; the dispatcher never frees it.
 *
 * Threading: everything runs on the loop thread of the rpc_server, inside
 * its handler callback (rpc.h); nothing is deferred. */
#ifndef DOCRAFT_RPC_DISPATCH_H
#define DOCRAFT_RPC_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "rpc/rpc.h"

/* Flags of a method (struct rpc_method.flags). */
#define RPC_METHOD_FIND (1u << 0)   /* the request names an object: hooks->find */
#define RPC_METHOD_LEADER (1u << 1) /* served by a leader only: hooks->leader */
#define RPC_METHOD_ADMIN (1u << 2)  /* for admin callers only: hooks->admin */
/* The server's own flag n (0..15), ignored by the dispatcher. */
#define RPC_METHOD_PRIVATE(n) (1u << (16 + (n)))

/* What the handler did with the decoded request. */
enum rpc_dispatch_req {
	RPC_DISPATCH_FREE = 0, /* done with it: the dispatcher frees it */
	RPC_DISPATCH_KEEP,     /* kept: the handler frees it later */
};

struct rpc_method;

/* The method's handler: answers call (now, or later from a callback) and
 * says whether it kept req. req is the decoded request (a message of
 * m->request; NULL when m->request is NULL), obj what hooks->find returned
 * (NULL without RPC_METHOD_FIND). */
typedef enum rpc_dispatch_req (*rpc_method_fn)(void *ctx, struct rpc_call *call, void *req,
					       void *obj);
/* The method's own validation, between the lookup and the leader check:
 * true to go on; false once it has answered call. Must not keep req. */
typedef bool (*rpc_method_check_fn)(void *ctx, struct rpc_call *call, const void *req,
				    void *obj);

struct rpc_method {
	uint16_t method;  /* 1..65535, unique in the table */
	const char *name; /* for logs and errors ("write") */
	/* The request's type, decoded before the handler runs; NULL: not
	 * decoded (an empty request), the handler gets req NULL. */
	const ProtobufCMessageDescriptor *request;
	/* The type of a successful answer's payload: the table says what
	 * the method returns; handlers answer with rpc_reply_message. */
	const ProtobufCMessageDescriptor *response;
	unsigned flags;            /* RPC_METHOD_* */
	rpc_method_check_fn check; /* NULL: none */
	rpc_method_fn handler;
};

/* The server's side of the flags; each returns true to go on, or false
 * once it has answered call (an error: the step list above). A hook may be
 * NULL when no method has its flag. */
struct rpc_dispatch_hooks {
	bool (*admin)(void *ctx, struct rpc_call *call, const struct rpc_method *m);
	/* The object req names (say, the replica of req's tablet_id), or
	 * NULL once call is answered. */
	void *(*find)(void *ctx, struct rpc_call *call, const struct rpc_method *m,
		      const ProtobufCMessage *req);
	/* obj is NULL for a method without RPC_METHOD_FIND (before the
	 * request is decoded). */
	bool (*leader)(void *ctx, struct rpc_call *call, const struct rpc_method *m, void *obj);
};

/* A registered table. Caller memory; the fields are private. */
struct rpc_dispatch {
	const struct rpc_method *table;
	size_t n;
	void *ctx;
	const struct rpc_dispatch_hooks *hooks;
};

/* Registers every method of table[0..n) on srv, routed through d (caller
 * memory at a fixed address until srv has closed), with ctx passed to
 * every hook, check and handler. table and hooks are borrowed as long.
 *
 * DOCRAFT_EINVAL with errmsg, before anything is registered, for a table
 * that is wrong: n 0, a method 0 or twice, no handler or name, a flag
 * whose hook is NULL, RPC_METHOD_FIND without a request type, an unknown
 * generic flag. DOCRAFT_EINVAL from rpc_server_register (a method the
 * server has already) leaves the methods before it registered: the server
 * must then be closed without serving. Loop thread; not while srv closes. */
int rpc_dispatch_register(struct rpc_dispatch *d, struct rpc_server *srv,
			  const struct rpc_method *table, size_t n, void *ctx,
			  const struct rpc_dispatch_hooks *hooks, char *errmsg);

/* The value of msg's string field name (not repeated), or NULL when its
 * type has no such field or it is unset. For find hooks reading a field
 * all their requests share ("tablet_id") without a cast per type. The
 * string belongs to msg. Any thread. */
const char *rpc_message_string(const ProtobufCMessage *msg, const char *name);

#endif
