/* EXEC's work (redis_data_exec, redis_data.h): the server queued the
 * commands after MULTI (src/redis/server.c); here they run as one request
 * on one tablet.
 *
 * Design note. Each queued command becomes its part of one fan with
 * f->single set (every sub in one docraft_redis_async, so one Raft entry
 * on a write, one read otherwise): an engine command one sub, a multi-key
 * command (MGET MSET DEL EXISTS) one sub per key, a connection command
 * (PING ECHO SELECT...: REDIS_CMD_LOCAL) no sub, run here when the reply
 * is written. Before sending, every sub's slot must belong to one tablet:
 * one slot needs no look-up, several are checked against the database's
 * tablets (fan_tablets); else the EXEC replies "-ERR docraft: MULTI/EXEC
 * keys span several tablets (use a {hash tag})" and nothing runs. A
 * command that cannot run in one request (KEYS, SCAN, FLUSHDB, CLUSTER...)
 * likewise refuses the whole EXEC. The reply is the array of every queued
 * command's reply, in order.
 *
 * A SELECT in the queue runs when the replies are written: the commands
 * of the EXEC all use the database selected before it (documented). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"
#include "common/redis_slot.h"
#include "tserver/redis_int.h"
#include "yedis/yedis.h"

/* What one queued command became. */
struct part {
	size_t first, n; /* its subs */
	enum { P_ENGINE, P_SPLIT, P_LOCAL, P_ERROR } kind;
};

struct exec {
	const struct redis_queued *q;
	struct part *parts;
	size_t n;
};

static void exec_done(struct fan *f)
{
	const struct exec *x = f->arg;
	struct buf *out = redis_conn_out(f->c);

	resp_array(out, x->n);
	for (size_t i = 0; i < x->n; i++) {
		const struct part *p = &x->parts[i];
		switch (p->kind) {
		case P_ENGINE:
			buf_append(out, f->subs[p->first].rep, f->subs[p->first].rep_n);
			break;
		case P_SPLIT:
			redis_join_multikey(out, &x->q[i].argv[0], &f->subs[p->first], p->n);
			break;
		case P_LOCAL:
			redis_conn_run_local(f->c, &x->q[i], out);
			break;
		case P_ERROR:
			resp_errorf(out, "ERR wrong number of arguments for '%s' command",
				    x->q[i].cmd->name);
			break;
		}
	}
}

static void exec_checked(struct fan *f)
{
	size_t t = fan_tablet_of(f, f->subs[0].slot);

	for (size_t i = 1; i < f->n_subs; i++) {
		if (fan_tablet_of(f, f->subs[i].slot) != t || t == SIZE_MAX) {
			fan_fail(f, "MULTI/EXEC keys span several tablets (use a {hash tag})");
			return;
		}
	}
	fan_run(f, exec_done);
}

int redis_data_exec(struct redis_conn *c, size_t n, const struct redis_queued *q)
{
	struct fan *f;
	struct exec *x;
	bool one_slot = true;

	/* refuse what cannot run in one request before anything is built */
	for (size_t i = 0; i < n; i++) {
		const struct yedis_command *y = yedis_command_find(q[i].argv[0].p, q[i].argv[0].n);
		const char *name = q[i].cmd->name;
		bool split = strcmp(name, "mget") == 0 || strcmp(name, "mset") == 0 ||
			     strcmp(name, "del") == 0 || strcmp(name, "exists") == 0;
		if (q[i].cmd->flags & REDIS_CMD_LOCAL || split ||
		    (y != NULL && !(y->flags & YEDIS_TABLET)))
			continue;
		resp_errorf(redis_conn_out(c),
			    "ERR docraft: '%s' cannot run inside MULTI/EXEC here", name);
		return REDIS_DONE;
	}
	if ((f = fan_new(c)) == NULL)
		return REDIS_DONE;
	x = arena_alloc(&f->mem, sizeof *x);
	x->q = q;
	x->n = n;
	x->parts = arena_alloc(&f->mem, n * sizeof *x->parts);
	f->arg = x;
	f->single = true;
	for (size_t i = 0; i < n; i++) {
		struct part *p = &x->parts[i];
		const struct yedis_command *y;
		p->first = f->n_subs;
		if (q[i].cmd->flags & REDIS_CMD_LOCAL) {
			p->kind = P_LOCAL;
		} else if (strcmp(q[i].cmd->name, "mset") == 0 && q[i].argc % 2 == 0) {
			p->kind = P_ERROR;
		} else if (redis_split_multikey(f, q[i].argc, q[i].argv)) {
			p->kind = P_SPLIT;
		} else {
			y = yedis_command_find(q[i].argv[0].p, q[i].argv[0].n);
			p->kind = P_ENGINE;
			f->write |= (y->flags & YEDIS_WRITE) != 0;
			fan_add(f,
				q[i].argc > 1 ? redis_key_slot(q[i].argv[1].p, q[i].argv[1].n) : 0,
				NULL, q[i].argc, q[i].argv);
		}
		p->n = f->n_subs - p->first;
	}
	if (f->n_subs == 0) {
		/* only connection commands: no tablet at all */
		exec_done(f);
		fan_end(f);
		return REDIS_ASYNC;
	}
	for (size_t i = 1; i < f->n_subs; i++)
		one_slot &= f->subs[i].slot == f->subs[0].slot;
	if (one_slot)
		return fan_run(f, exec_done);
	return fan_tablets(f, exec_checked);
}
