/* Method tables over rpc_server (dispatch.h has the contract and the order
 * of the steps).
 *
 * Design. Every method of a table is registered on the rpc_server with the
 * same handler, dispatch_call, and the struct rpc_dispatch as its argument;
 * dispatch_call finds the call's entry in the table by its method number
 * (a linear search: tables are a dozen entries, and the decode that follows
 * costs far more) and walks the steps. The table is checked once, when it
 * is registered, so a mistake in it (a flag without its hook) fails the
 * server's start instead of a call. The decoded request is freed in one
 * place, at the end of dispatch_call, whichever step ended the call, unless
 * the handler kept it. */
#include "rpc/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

#define GENERIC_FLAGS (RPC_METHOD_FIND | RPC_METHOD_LEADER | RPC_METHOD_ADMIN)

static const struct rpc_method *find_method(const struct rpc_dispatch *d, uint16_t method)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->table[i].method == method)
			return &d->table[i];
	return NULL;
}

static void dispatch_call(void *arg, struct rpc_call *call)
{
	const struct rpc_dispatch *d = arg;
	const struct rpc_dispatch_hooks *h = d->hooks;
	const struct rpc_method *m = find_method(d, call->method);
	ProtobufCMessage *req = NULL;
	void *obj = NULL;

	/* Registered from this very table: always found. */
	ASSERT(m != NULL);
	if ((m->flags & RPC_METHOD_ADMIN) && !h->admin(d->ctx, call, m))
		return;
	if ((m->flags & (RPC_METHOD_LEADER | RPC_METHOD_FIND)) == RPC_METHOD_LEADER &&
	    !h->leader(d->ctx, call, m, NULL))
		return;
	if (m->request != NULL && (req = rpc_call_decode(call, m->request)) == NULL)
		return;
	if ((m->flags & RPC_METHOD_FIND) && (obj = h->find(d->ctx, call, m, req)) == NULL)
		goto out;
	if (m->check != NULL && !m->check(d->ctx, call, req, obj))
		goto out;
	if ((m->flags & (RPC_METHOD_LEADER | RPC_METHOD_FIND)) ==
		    (RPC_METHOD_LEADER | RPC_METHOD_FIND) &&
	    !h->leader(d->ctx, call, m, obj))
		goto out;
	if (m->handler(d->ctx, call, req, obj) == RPC_DISPATCH_KEEP)
		return;
out:
	if (req != NULL)
		protobuf_c_message_free_unpacked(req, NULL);
}

/* 0 if m may stand in a table with hooks h, else why not. */
static int check_entry(const struct rpc_method *m, const struct rpc_dispatch_hooks *h,
		       char *errmsg)
{
	unsigned generic = m->flags & 0xffffu;
	const char *missing = NULL;

	if (m->method == 0 || m->name == NULL || m->handler == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "dispatch: method %u (%s) needs a number, "
			       "a name and a handler", m->method, m->name != NULL ? m->name : "?");
	if ((generic & ~GENERIC_FLAGS) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "dispatch: method %s: unknown flags 0x%x",
			       m->name, generic & ~GENERIC_FLAGS);
	if ((m->flags & RPC_METHOD_FIND) && m->request == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "dispatch: method %s: finding an object "
			       "needs a request type", m->name);
	if ((m->flags & RPC_METHOD_ADMIN) && (h == NULL || h->admin == NULL))
		missing = "admin";
	else if ((m->flags & RPC_METHOD_FIND) && (h == NULL || h->find == NULL))
		missing = "find";
	else if ((m->flags & RPC_METHOD_LEADER) && (h == NULL || h->leader == NULL))
		missing = "leader";
	if (missing != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "dispatch: method %s: no %s hook", m->name,
			       missing);
	return 0;
}

int rpc_dispatch_register(struct rpc_dispatch *d, struct rpc_server *srv,
			  const struct rpc_method *table, size_t n, void *ctx,
			  const struct rpc_dispatch_hooks *hooks, char *errmsg)
{
	int rv;

	if (n == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "dispatch: an empty table");
	for (size_t i = 0; i < n; i++) {
		if ((rv = check_entry(&table[i], hooks, errmsg)) != 0)
			return rv;
		for (size_t j = 0; j < i; j++)
			if (table[j].method == table[i].method)
				return err_set(errmsg, DOCRAFT_EINVAL,
					       "dispatch: method %u twice (%s, %s)",
					       table[i].method, table[j].name, table[i].name);
	}
	d->table = table;
	d->n = n;
	d->ctx = ctx;
	d->hooks = hooks;
	for (size_t i = 0; i < n; i++)
		if ((rv = rpc_server_register(srv, table[i].method, dispatch_call, d, errmsg)) != 0)
			return rv;
	return 0;
}

const char *rpc_message_string(const ProtobufCMessage *msg, const char *name)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
	if (f == NULL || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
		return NULL;
	return *(const char *const *)((const char *)msg + f->offset);
}
