/* The Redis front end's dispatch (redis_data.h) and its fan (redis_int.h).
 *
 * Design note. The command table is built at start: every command of the
 * engine's table (yedis_command_at) with one generic function, one_cmd:
 * the key argv[1] -> its slot -> docraft_redis_async of that one command
 * to the tablet owning the slot (a write when the engine says YEDIS_WRITE)
 * -> the tablet's reply bytes copied to the client. Beside them the front
 * end's own commands, which shadow the engine's of the same name:
 * multi-key ones split per key (redis_fanout.c), tablet-wide ones
 * (redis_fanout.c), CLUSTER (redis_cluster.c); EXEC's work is
 * redis_multi.c.
 *
 * Every command that goes to tablets is a fan: its subs grouped into
 * requests, all sent at once, the reply written when the last answers.
 * Grouping is per slot (every key of a slot is on one tablet whatever the
 * splits, so a group never spans tablets), per tablet when the fan knows
 * the tablets (fan_tablets: multi-key commands, the tablet-wide ones), or
 * all in one request (EXEC, once it checked that one tablet owns every
 * key); a group past GROUP_MAX commands starts another. Grouped per tablet
 * from a stale cache, a request may hold a key its tablet no longer owns:
 * the tablet refuses it whole (EWRONGTABLET, after the client's own
 * refreshes), and a fan with regroup set sends its commands again per
 * slot.
 *
 * Errors: a failure of the cluster (no leader in time, the client closed)
 * is "-ERR docraft: <reason>"; the tablets' replies (Redis's own errors
 * among them) pass through byte for byte. */
#include "tserver/redis_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/mem.h"
#include "common/redis_slot.h"
#include "tserver/redis_int.h"
#include "yedis/yedis.h"

/* Commands of one request but EXEC's (a tablet takes up to 10,000): an
 * MGET of more keys of one slot takes several requests. */
#define GROUP_MAX 1000

/* ---- the fan ---- */

struct fan *fan_new(struct redis_conn *c)
{
	struct redis_data *d = redis_conn_data(c);
	struct fan *f;

	if (d->client == NULL) {
		resp_error(redis_conn_out(c), "ERR this tserver has no masters: no data commands");
		return NULL;
	}
	f = xcalloc(1, sizeof *f);
	f->c = c;
	f->d = d;
	f->db = redis_conn_db(c);
	arena_init(&f->mem);
	return f;
}

void fan_add(struct fan *f, uint16_t slot, const char *name, uint32_t argc,
	     const struct resp_arg *argv)
{
	docraft_bytes *a = arena_alloc(&f->mem, argc * sizeof *a);
	struct fan_sub *s;

	for (uint32_t i = 0; i < argc; i++) {
		a[i].p = argv[i].p; /* valid until the command completes */
		a[i].n = argv[i].n;
	}
	if (name != NULL) {
		a[0].p = name;
		a[0].n = strlen(name);
	}
	if (f->n_subs == f->cap_subs) {
		f->cap_subs = f->cap_subs == 0 ? 4 : 2 * f->cap_subs;
		f->subs = xrealloc(f->subs, f->cap_subs * sizeof *f->subs);
	}
	s = &f->subs[f->n_subs++];
	memset(s, 0, sizeof *s);
	s->slot = slot;
	s->argc = argc;
	s->argv = a;
}

void fan_end(struct fan *f)
{
	struct redis_conn *c = f->c;

	for (size_t i = 0; i < f->n_groups; i++) {
		docraft_result_free(f->groups[i].req.result);
		free(f->groups[i].subs);
	}
	free(f->groups);
	free(f->subs);
	docraft_result_free(f->tablets);
	arena_free(&f->mem);
	free(f);
	redis_conn_complete(c);
}

void fan_fail(struct fan *f, const char *msg)
{
	resp_errorf(redis_conn_out(f->c), "ERR docraft: %s", msg);
	fan_end(f);
}

size_t fan_tablet_of(const struct fan *f, uint16_t slot)
{
	size_t n = docraft_result_ntablets(f->tablets);

	for (size_t i = 0; i < n; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(f->tablets, i, &t);
		if (slot >= t.first_slot && slot <= t.last_slot)
			return i;
	}
	return SIZE_MAX;
}

/* The group a sub of slot goes to: one per slot, per tablet when the
 * tablets are known (a slot no tablet covers, a hole in the cache: alone),
 * or one for all. */
static struct fan_group *group_for(struct fan *f, uint16_t slot)
{
	size_t key = slot;
	struct fan_group *g;

	if (f->single)
		key = 0;
	else if (f->tablets != NULL && !f->by_slot && (key = fan_tablet_of(f, slot)) == SIZE_MAX)
		key = (size_t)1 << 20 | slot;
	for (size_t i = f->round; i < f->n_groups; i++)
		if (f->groups[i].key == key && (f->single || f->groups[i].n < GROUP_MAX))
			return &f->groups[i];
	f->groups = xgrow(f->groups, &f->groups_cap, f->n_groups + 1, sizeof *f->groups, 8);
	g = &f->groups[f->n_groups++];
	memset(g, 0, sizeof *g);
	g->f = f;
	g->slot = slot;
	g->key = key;
	return g;
}

static void send_groups(struct fan *f);

/* One group less to wait for; the last writes the reply and ends the fan.
 * A request grouped per tablet that a tablet refused as spanning other
 * tablets (the cache is stale) is sent again per slot, its subs only: the
 * other groups' replies stand (a retry of theirs could change a DEL's
 * count). */
static void release(struct fan *f)
{
	if (--f->pending > 0)
		return;
	if (f->status == DOCRAFT_EWRONGTABLET && f->regroup && !f->by_slot && !f->unsure) {
		f->by_slot = true;
		f->status = DOCRAFT_OK;
		f->errmsg[0] = '\0';
		send_groups(f);
		return;
	}
	if (f->status != DOCRAFT_OK) {
		fan_fail(f, f->errmsg);
		return;
	}
	f->done(f);
	fan_end(f);
}

void fan_group_answer(struct fan_group *g, int status, const char *errmsg, const docraft_result *r,
		      size_t first)
{
	struct fan *f = g->f;

	if (status != DOCRAFT_OK) {
		if (status != DOCRAFT_EWRONGTABLET)
			f->unsure = true;
		if (f->status == DOCRAFT_OK) {
			f->status = status;
			snprintf(f->errmsg, sizeof f->errmsg, "%s", errmsg);
		}
	} else {
		for (size_t i = 0; i < g->n; i++) {
			struct fan_sub *s = &f->subs[g->subs[i]];
			s->rep = docraft_result_reply(r, first + i, &s->rep_n);
		}
	}
	release(f);
}

static void group_done(docraft_req *req)
{
	struct fan_group *g = req->data;
	size_t n = docraft_result_nreplies(req->result);

	if (req->status == DOCRAFT_OK && n != g->n) {
		char msg[DOCRAFT_ERRMSG_SIZE];
		snprintf(msg, sizeof msg, "the tablet answered %zu replies to %zu commands", n,
			 g->n);
		fan_group_answer(g, DOCRAFT_EIO, msg, NULL, 0);
		return;
	}
	fan_group_answer(g, req->status, req->errmsg, req->result, 0);
}

const char *fan_sync_error(int rv)
{
	return rv == DOCRAFT_ECLOSED ? "the tserver is stopping" : docraft_errmsg();
}

void fan_group_cmd(const struct fan_group *g, docraft_redis_cmd *out)
{
	PRE(g->n == 1);
	out->argc = g->f->subs[g->subs[0]].argc;
	out->argv = g->f->subs[g->subs[0]].argv;
}

void fan_group_send(struct fan_group *g)
{
	struct fan *f = g->f;
	docraft_redis_cmd *cmds = arena_alloc(&f->mem, g->n * sizeof *cmds);
	int rv;

	for (size_t j = 0; j < g->n; j++) {
		cmds[j].argc = f->subs[g->subs[j]].argc;
		cmds[j].argv = f->subs[g->subs[j]].argv;
	}
	g->req.data = g;
	rv = docraft_redis_async(f->d->client, &g->req, f->db, g->slot, cmds, g->n, f->write,
				 group_done);
	if (rv != 0)
		fan_group_answer(g, rv, fan_sync_error(rv), NULL, 0);
}

/* Groups the subs not answered yet and sends a request per group (a
 * batchable command's into its tablet's shared request). */
static void send_groups(struct fan *f)
{
	f->round = f->n_groups;
	for (size_t i = 0; i < f->n_subs; i++) {
		struct fan_group *g;
		if (f->subs[i].rep != NULL)
			continue;
		g = group_for(f, f->subs[i].slot);
		if (g->n == g->cap) {
			g->cap = g->cap == 0 ? 4 : 2 * g->cap;
			g->subs = xrealloc(g->subs, g->cap * sizeof *g->subs);
		}
		g->subs[g->n++] = i;
	}
	f->pending =
		f->n_groups - f->round + 1; /* +1: no answer ends the fan before all are sent */
	for (size_t i = f->round; i < f->n_groups; i++) {
		struct fan_group *g = &f->groups[i];
		if (f->batch && f->n_subs == 1 && f->d->batcher != NULL) {
			const struct fan_sub *s = &f->subs[0];
			size_t bytes = 0;
			for (uint32_t a = 0; a < s->argc; a++)
				bytes += s->argv[a].n;
			redis_batch_add(f->d->batcher, g, f->db, f->write, g->slot, bytes);
		} else {
			fan_group_send(g);
		}
	}
	release(f);
}

int fan_run(struct fan *f, fan_fn done)
{
	PRE(f->n_subs > 0);
	f->done = done;
	send_groups(f);
	return REDIS_ASYNC;
}

static void tablets_done(docraft_req *req)
{
	struct fan *f = req->data;
	fan_fn next = f->done;

	if (req->status != DOCRAFT_OK) {
		fan_fail(f, req->errmsg);
		return;
	}
	f->tablets = req->result;
	req->result = NULL;
	next(f);
}

int fan_tablets(struct fan *f, fan_fn next)
{
	int rv;

	f->done = next;
	f->treq.data = f;
	rv = docraft_redis_tablets_async(f->d->client, &f->treq, f->db, tablets_done);
	if (rv != 0)
		fan_fail(f, fan_sync_error(rv));
	return REDIS_ASYNC;
}

/* ---- reading replies ---- */

/* The number after p[0] up to "\r\n": its value and the line's length. */
static bool line_ll(const char *p, size_t n, long long *v, size_t *len)
{
	const char *cr = n > 1 ? memchr(p, '\r', n) : NULL;

	if (cr == NULL || (size_t)(cr - p) + 1 >= n || cr[1] != '\n')
		return false;
	if (!resp_string2ll(p + 1, (size_t)(cr - p) - 1, v))
		return false;
	*len = (size_t)(cr - p) + 2;
	return true;
}

bool rr_int(const char *p, size_t n, long long *v)
{
	size_t len;
	return n > 0 && p[0] == ':' && line_ll(p, n, v, &len);
}

bool rr_array(const char *p, size_t n, long long *count, size_t *hdr)
{
	return n > 0 && p[0] == '*' && line_ll(p, n, count, hdr) && *count >= 0;
}

bool rr_bulk(const char *p, size_t n, const char **s, size_t *sn, size_t *used)
{
	long long len;
	size_t hdr;

	if (n == 0 || p[0] != '$' || !line_ll(p, n, &len, &hdr) || len < 0 ||
	    (unsigned long long)len > n - hdr || n - hdr - (size_t)len < 2)
		return false;
	*s = p + hdr;
	*sn = (size_t)len;
	*used = hdr + (size_t)len + 2;
	return true;
}

/* ---- one command, one key ---- */

static void one_done(struct fan *f)
{
	buf_append(redis_conn_out(f->c), f->subs[0].rep, f->subs[0].rep_n);
}

static int one_cmd(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	const struct yedis_command *y = yedis_command_find(argv[0].p, argv[0].n);
	struct fan *f = fan_new(c);

	if (f == NULL)
		return REDIS_DONE;
	PRE(y != NULL);
	f->write = (y->flags & YEDIS_WRITE) != 0;
	f->batch = !f->write || yedis_reply_small(y, argc, argv);
	/* a keyless engine command (arity 1): any tablet, slot 0's */
	fan_add(f, argc > 1 ? redis_key_slot(argv[1].p, argv[1].n) : 0, NULL, argc, argv);
	return fan_run(f, one_done);
}

/* An engine command that is tablet-wide but not one the front end merges. */
static int tablet_unknown(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	resp_errorf(redis_conn_out(c), "ERR docraft: '%.*s' is not supported across tablets",
		    (int)argv[0].n, argv[0].p);
	return REDIS_DONE;
}

/* ---- the table ---- */

#define RO REDIS_CMD_READONLY
#define WR (REDIS_CMD_WRITE | REDIS_CMD_DENYOOM)

static const struct redis_command front[] = {
	{"cluster", -2, 0, 0, 0, 0, NULL, NULL, 0}, /* subs set at init */
	{"dbsize", 1, RO | REDIS_CMD_FAST, 0, 0, 0, redis_cmd_dbsize, NULL, 0},
	{"del", -2, REDIS_CMD_WRITE, 1, -1, 1, redis_cmd_del, NULL, 0},
	{"exists", -2, RO | REDIS_CMD_FAST, 1, -1, 1, redis_cmd_del, NULL, 0},
	{"flushall", -1, REDIS_CMD_WRITE, 0, 0, 0, redis_cmd_flushall, NULL, 0},
	{"flushdb", -1, REDIS_CMD_WRITE, 0, 0, 0, redis_cmd_flushdb, NULL, 0},
	{"keys", 2, RO, 0, 0, 0, redis_cmd_keys, NULL, 0},
	{"mget", -2, RO | REDIS_CMD_FAST, 1, -1, 1, redis_cmd_mget, NULL, 0},
	{"mset", -3, WR, 1, -1, 2, redis_cmd_mset, NULL, 0},
	{"randomkey", 1, RO, 0, 0, 0, redis_cmd_randomkey, NULL, 0},
	{"scan", -2, RO, 0, 0, 0, redis_cmd_scan, NULL, 0},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

void redis_data_init(struct redis_data *d, const char *uuid)
{
	size_t ny = yedis_command_count(), n = 0;
	struct redis_command *t = xcalloc(N(front) + ny, sizeof *t);

	for (size_t i = 0; i < N(front); i++) {
		t[n] = front[i];
		if (strcmp(t[n].name, "cluster") == 0) {
			t[n].subs = redis_cluster_subs;
			t[n].n_subs = redis_cluster_n_subs;
		}
		n++;
	}
	for (size_t i = 0; i < ny; i++) {
		const struct yedis_command *y = yedis_command_at(i);
		bool shadowed = false;
		for (size_t k = 0; k < N(front); k++)
			shadowed |= strcasecmp(front[k].name, y->name) == 0;
		if (shadowed)
			continue;
		t[n].name = y->name;
		t[n].arity = y->arity;
		t[n].flags =
			(y->flags & YEDIS_WRITE ? WR : 0) | (y->flags & YEDIS_READONLY ? RO : 0);
		if (y->flags & YEDIS_TABLET) {
			t[n].fn = tablet_unknown;
		} else {
			t[n].first_key = t[n].last_key = t[n].step = 1;
			t[n].fn = one_cmd;
		}
		n++;
	}
	d->commands = t;
	d->n_commands = n;
	d->batcher = NULL;
	redis_node_id(d->node_id, uuid);
}

void redis_data_info(void *data, struct buf *out)
{
	struct redis_data *d = data;
	struct redis_batch_stats st = {0};

	if (d->batcher != NULL)
		redis_batcher_stats(d->batcher, &st);
	buf_printf(out,
		   "# Docraft\r\nbatched_requests:%" PRIu64 "\r\nbatched_commands:%" PRIu64
		   "\r\nbatches_split:%" PRIu64 "\r\n",
		   st.requests, st.commands, st.split);
}

void redis_data_free(struct redis_data *d)
{
	free(d->commands);
	d->commands = NULL;
	d->n_commands = 0;
}
