/* Batching the Redis front end's commands across connections
 * (redis_int.h, "batching").
 *
 * Design note. Every connection has at most one command in flight, so 64
 * clients of one tserver are 64 requests to the tablet leaders, each its
 * own RPC, its own retry record on every replica and its own reply frame,
 * though the leader puts them into one Raft entry all the same. Here the
 * single-key commands that arrive during one loop turn and go to the same
 * tablet of the same database share one request: they are collected as
 * they come (redis_batch_add) and sent from the loop's check phase of that
 * same turn, where the client's requests of the turn go out anyway (a
 * lone command waits for nothing). The tablet runs a request's commands
 * in order, atomically, and applies a write request once whatever the
 * retries (its sequence number), so a shared request keeps every
 * command's semantics; the connections' own order is kept because each
 * has one command in flight.
 *
 * What may share: reads, and writes whose reply is short whatever the
 * data (yedis_reply_small: one client's GETSET of a large value must not
 * push the others' replies over the largest answer). The tablet comes
 * from the client's cache (docraft_redis_slot_tablet); before the cache
 * knows the database, commands share by slot. A request the tablet
 * refuses as a whole without running it (WRONG_TABLET: the cache was
 * stale), or a read whose replies outgrew one answer (TOO_BIG), is sent
 * again command by command, each on its own, which is the unbatched path.
 * Any other failure is every member's.
 *
 * Memory: a batch owns its member list and, once answered, the result
 * the members' replies point into; every member's fan completes inside
 * fan_group_answer (one group of one command, no regroup), so the result
 * is freed right after. The batcher lives until it is closed and its last
 * sent batch answered (requests in flight at shutdown answer later).
 *
 * The loop: while a batch is open the check handle is active, and an idle
 * handle too, so that a batch opened where the check phase of this turn
 * has passed (a command completed inside the check phase) makes the poll
 * return at once instead of waiting for unrelated I/O. Threading: the
 * loop thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/mem.h"
#include "common/redis_slot.h"
#include "tserver/redis_int.h"

/* A batch's bounds: commands (a tablet takes up to 10,000) and bytes of
 * their arguments; past either, the next command starts another batch. */
#define BATCH_MAX_CMDS 1000
#define BATCH_MAX_BYTES (1u << 20)
/* Batches open at once (distinct tablets in one turn); past it, a command
 * goes alone. */
#define BATCH_MAX_OPEN 256

struct batch {
	struct redis_batcher *b;
	unsigned db;
	bool write;
	uint32_t key;  /* the tablet's first slot, or REDIS_SLOTS + slot */
	uint16_t slot; /* the route: the first command's slot */
	size_t n, cap, bytes;
	struct fan_group **g;
	docraft_req req;
};

struct redis_batcher {
	uv_check_t check;
	uv_idle_t kick; /* active with check: the poll does not block */
	docraft_client *client;
	struct batch **open;
	size_t n_open, cap_open;
	bool closing;
	size_t inflight; /* batches sent, not answered */
	int handles;     /* handles not closed yet */
	void (*closed)(void *arg);
	void *closed_arg;
	struct redis_batch_stats stats;
};

int redis_batcher_new(uv_loop_t *loop, docraft_client *client, struct redis_batcher **out)
{
	struct redis_batcher *b = xcalloc(1, sizeof *b);
	int rv;

	PRE(loop != NULL && client != NULL && out != NULL);
	if ((rv = uv_check_init(loop, &b->check)) != 0) {
		free(b);
		return rv;
	}
	uv_idle_init(loop, &b->kick); /* cannot fail on Linux */
	b->check.data = b;
	b->kick.data = b;
	b->handles = 2;
	b->client = client;
	*out = b;
	return 0;
}

void redis_batcher_stats(const struct redis_batcher *b, struct redis_batch_stats *out)
{
	*out = b->stats;
}

static void batch_free(struct batch *bt)
{
	docraft_result_free(bt->req.result);
	free(bt->g);
	free(bt);
}

/* Answers every member with status (not DOCRAFT_OK). */
static void fail_all(struct batch *bt, int status, const char *errmsg)
{
	for (size_t i = 0; i < bt->n; i++)
		fan_group_answer(bt->g[i], status, errmsg, NULL, 0);
}

static void maybe_free(struct redis_batcher *b);

static void batch_done(docraft_req *req)
{
	struct batch *bt = req->data;
	struct redis_batcher *b = bt->b;
	int st = req->status;

	if (st == DOCRAFT_OK && docraft_result_nreplies(req->result) != bt->n) {
		char msg[DOCRAFT_ERRMSG_SIZE];
		snprintf(msg, sizeof msg, "the tablet answered %zu replies to %zu commands",
			 docraft_result_nreplies(req->result), bt->n);
		fail_all(bt, DOCRAFT_EIO, msg);
	} else if (st == DOCRAFT_OK) {
		for (size_t i = 0; i < bt->n; i++)
			fan_group_answer(bt->g[i], DOCRAFT_OK, NULL, req->result, i);
	} else if (st == DOCRAFT_EWRONGTABLET || (st == DOCRAFT_ETOOBIG && !bt->write)) {
		/* refused whole, nothing ran: each command on its own */
		b->stats.split++;
		for (size_t i = 0; i < bt->n; i++)
			fan_group_send(bt->g[i]);
	} else {
		fail_all(bt, st, req->errmsg);
	}
	batch_free(bt);
	b->inflight--;
	maybe_free(b);
}

static void send_batch(struct redis_batcher *b, struct batch *bt)
{
	docraft_redis_cmd *cmds;
	int rv;

	if (bt->n == 1) {
		fan_group_send(bt->g[0]);
		batch_free(bt);
		return;
	}
	cmds = xmalloc(bt->n * sizeof *cmds);
	for (size_t i = 0; i < bt->n; i++)
		fan_group_cmd(bt->g[i], &cmds[i]);
	bt->req.data = bt;
	rv = docraft_redis_async(b->client, &bt->req, bt->db, bt->slot, cmds, bt->n, bt->write,
				 batch_done);
	free(cmds); /* copied */
	if (rv != 0) {
		fail_all(bt, rv, fan_sync_error(rv));
		batch_free(bt);
		return;
	}
	b->inflight++;
	b->stats.requests++;
	b->stats.commands += bt->n;
}

/* Sends every open batch, and those opened meanwhile (a send that fails
 * at once completes commands whose connections go on). */
static void flush(struct redis_batcher *b)
{
	while (b->n_open > 0) {
		struct batch **open = b->open;
		size_t n = b->n_open;

		b->open = NULL;
		b->n_open = b->cap_open = 0;
		for (size_t i = 0; i < n; i++)
			send_batch(b, open[i]);
		free(open);
	}
	uv_check_stop(&b->check);
	uv_idle_stop(&b->kick);
}

static void kick_cb(uv_idle_t *h)
{
	(void)h; /* the check runs right after this turn's poll */
}

static void check_cb(uv_check_t *h)
{
	flush(h->data);
}

void redis_batch_add(struct redis_batcher *b, struct fan_group *g, unsigned db, bool write,
		     uint16_t slot, size_t bytes)
{
	uint16_t first, last;
	uint32_t key = REDIS_SLOTS + (uint32_t)slot;
	struct batch *bt = NULL;

	if (b->closing) {
		fan_group_send(g);
		return;
	}
	if (docraft_redis_slot_tablet(b->client, db, slot, &first, &last) == 0)
		key = first;
	for (size_t i = 0; i < b->n_open && bt == NULL; i++) {
		struct batch *o = b->open[i];
		if (o->db == db && o->write == write && o->key == key && o->n < BATCH_MAX_CMDS &&
		    o->bytes + bytes <= BATCH_MAX_BYTES)
			bt = o;
	}
	if (bt == NULL) {
		if (b->n_open == BATCH_MAX_OPEN) {
			fan_group_send(g);
			return;
		}
		bt = xcalloc(1, sizeof *bt);
		bt->b = b;
		bt->db = db;
		bt->write = write;
		bt->key = key;
		bt->slot = slot;
		b->open = xgrow(b->open, &b->cap_open, b->n_open + 1, sizeof *b->open, 8);
		b->open[b->n_open++] = bt;
		if (b->n_open == 1) {
			uv_check_start(&b->check, check_cb);
			uv_idle_start(&b->kick, kick_cb);
		}
	}
	bt->g = xgrow(bt->g, &bt->cap, bt->n + 1, sizeof *bt->g, 8);
	bt->g[bt->n++] = g;
	bt->bytes += bytes;
}

/* Frees b once it is closed: both handles, and no batch in flight. */
static void maybe_free(struct redis_batcher *b)
{
	void (*cb)(void *);
	void *arg;

	if (!b->closing || b->handles > 0 || b->inflight > 0)
		return;
	cb = b->closed;
	arg = b->closed_arg;
	free(b);
	cb(arg);
}

static void close_cb(uv_handle_t *h)
{
	struct redis_batcher *b = h->data;

	b->handles--;
	maybe_free(b);
}

void redis_batcher_close(struct redis_batcher *b, void (*cb)(void *arg), void *arg)
{
	PRE(!b->closing);
	b->closing = true;
	b->closed = cb;
	b->closed_arg = arg;
	flush(b);
	uv_close((uv_handle_t *)&b->check, close_cb);
	uv_close((uv_handle_t *)&b->kick, close_cb);
}
