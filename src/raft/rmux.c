/* rmux: the Raft messages of every group, one connection per peer server
 * (see rmux.h; frames: rmuxwire.h).
 *
 * Design note.
 *
 * Outbound, one link per peer address. A send to an idle link (connected,
 * no batch whose write callback is still due, nothing queued) is written
 * at once: a lone message does not wait for the end of the turn (measured:
 * 0.25 ms more 1-client p50 without this, and fewer writes/s with 64).
 * Otherwise rmux_send appends to the link's queue and puts the link on
 * the dirty list; a uv_idle and a uv_check
 * hook (active only while there is work) flush every dirty link: the whole
 * queue becomes one uv_write of a buffer vector (per message a 5-byte MSG
 * head, then the caller's head and payload buffers, no copy; before a
 * group's first message on a connection, its OPEN frame). Sends queued by
 * poll callbacks go out in the check hook of the same loop turn; those
 * queued by timers in the idle hook right after them; those queued by
 * prepare hooks (each tablet's poll proposes its batched writes there),
 * other check hooks or close callbacks in the check or idle hook of the
 * next turn — and while anything waits the active idle handle makes the
 * poll return at once (libuv polls with timeout 0 then): nothing waits for
 * a poll timeout. (A uv_prepare hook would not do: a send queued by a
 * prepare callback that runs after it waited for the next I/O or timer,
 * 9 ms per write for a lone client.)
 *
 * A link's connection is a struct conn of its own (uv_tcp_t, connect
 * request, generation), so a closing one never mixes with its successor:
 * writes in flight on it fail with RAFT_IOERR when it closes. A group
 * remembers per link the connection generation its OPEN went out on
 * (`ann`); a new connection announces every group again. A link that
 * breaks reconnects while it has sends queued: at once if the connection
 * lived retry_ms, else after it (a peer that accepts and hangs up costs one
 * attempt per retry_ms). Outbound streams are read only to see EOF early.
 *
 * Completions never run inside rmux_send or rmux_unregister: drops and
 * cancellations go to the `done` FIFO, completed by the hooks; write
 * callbacks complete their batch's sends directly (loop callbacks).
 *
 * Inbound, one struct in per accepted RMUX connection: an rmuxwire decoder
 * and an open-addressing table from the sender's group number to a slot
 * (the OPEN's tablet id, sender id and address, the registration found for
 * the tablet, whether the peer check accepted). A slot looks its tablet up
 * again when the registry changed (reg_gen) or its registration ended, so a
 * tablet that opens after the peer announced it, or reopens, gets its
 * messages. Reads use one 64 KiB buffer per thread, or go straight into a
 * large payload's buffer (as rnet.c).
 *
 * Lifetime of a group: references from the registration, each send not
 * completed and each slot; freed at zero. Links live until rmux_close. */
#include "raft/rmux.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "raft/rmuxwire.h"
#include "raft/transport.h"

#define READ_BUF_SIZE (64 * 1024)
#define DIRECT_READ_MIN (64 * 1024)

struct ann {
	struct rmux_link *link;
	uint64_t gen;
};

struct rmux_group {
	struct rmux *mux;
	struct rmux_group *prev, *next; /* registered */
	char tablet_id[RMUXWIRE_TABLET_ID_MAX + 1];
	uint64_t id;
	char *address;
	rmux_recv_cb recv;
	rmux_check_cb check;
	void *arg;
	bool registered;
	uint32_t gno;
	unsigned refs;
	struct ann *ann;
	unsigned n_ann;
};

struct conn {
	uv_tcp_t tcp;
	uv_connect_t connect;
	uv_write_t preamble_write;
	struct rmux_link *link; /* NULL once the link let go of it */
	uint64_t gen;
};

struct rmux_link {
	struct rmux *mux;
	struct rmux_link *prev, *next;
	char address[LISTENER_ADDRESS_MAX + 1];
	struct sockaddr_in addr;
	struct conn *conn; /* connecting or connected */
	bool connected;
	uint64_t gen; /* connections made */
	uint64_t connected_at;
	uv_timer_t timer; /* retry delay */
	bool waiting;     /* timer running */
	struct rmux_send *queue, *tail;
	unsigned n_queued;
	bool dirty;
	struct rmux_link *dirty_next;
	unsigned n_writing; /* batches written, callback not run yet */
};

struct batch {
	uv_write_t w;
	struct rmux_link *link;
	struct conn *conn;
	struct rmux_send *sends;
	unsigned n;
	uint8_t opens[]; /* OPEN frames */
};

struct slot {
	uint32_t gno;
	struct rmux_group *g; /* referenced, or NULL */
	uint64_t reg_gen;     /* registry generation g was looked up at */
	bool accepted;
	uint64_t id;
	char tablet_id[RMUXWIRE_TABLET_ID_MAX + 1];
	char address[RMUXWIRE_ADDRESS_MAX + 1];
};

struct in {
	struct rmux *mux;
	struct in *prev, *next;
	uv_stream_t *stream;
	struct sockaddr_in peer;
	struct rmuxwire_decoder dec;
	bool direct;
	bool closing;
	struct slot **slots; /* open addressing, power of two */
	unsigned cap, n_slots;
};

struct rmux {
	uv_loop_t *loop;
	struct listener *l;
	uint64_t limit;
	unsigned retry_ms;
	struct rmux_group *groups;
	uint64_t reg_gen;
	uint32_t next_gno;
	struct rmux_link *links;
	struct rmux_link *dirty;
	struct rmux_send *done, *done_tail;
	struct in *ins;
	uv_idle_t idle;
	uv_check_t check;
	bool hooks_active;
	bool closing;
	/* Handles not closed yet: hooks, link timers, connections (closing
	 * ones too), inbound connections. */
	unsigned n_handles;
	void (*close_cb)(void *);
	void *close_arg;
	struct rmux_stats stats;
};

static void flush_link(struct rmux_link *k);
static void link_connect(struct rmux_link *k);
static void drop_queue(struct rmux_link *k, int status);

/* ---- groups ---- */

static void group_unref(struct rmux_group *g)
{
	PRE(g->refs > 0);
	if (--g->refs > 0)
		return;
	free(g->ann);
	free(g->address);
	free(g);
}

/* ---- completions ---- */

static void complete(struct rmux_send *s, int status)
{
	struct rmux_group *g = s->g;

	s->g = NULL;
	s->cb(s, status);
	group_unref(g);
}

static void hooks_start(struct rmux *mux);

static void defer(struct rmux *mux, struct rmux_send *s, int status)
{
	s->status = status;
	s->next = NULL;
	if (mux->done_tail != NULL)
		mux->done_tail->next = s;
	else
		mux->done = s;
	mux->done_tail = s;
	hooks_start(mux);
}

static void run_done(struct rmux *mux)
{
	while (mux->done != NULL) {
		struct rmux_send *s = mux->done;
		mux->done = s->next;
		if (mux->done == NULL)
			mux->done_tail = NULL;
		complete(s, s->status);
	}
}

/* ---- the per-turn hooks ---- */

static void turn(struct rmux *mux)
{
	for (int round = 0; round < 4 && (mux->done != NULL || mux->dirty != NULL); round++) {
		run_done(mux);
		while (mux->dirty != NULL) {
			struct rmux_link *k = mux->dirty;
			mux->dirty = k->dirty_next;
			k->dirty = false;
			k->dirty_next = NULL;
			flush_link(k);
		}
	}
	if (mux->done == NULL && mux->dirty == NULL && mux->hooks_active) {
		uv_idle_stop(&mux->idle);
		uv_check_stop(&mux->check);
		mux->hooks_active = false;
	}
}

static void idle_cb(uv_idle_t *h)
{
	turn(h->data);
}

static void check_cb(uv_check_t *h)
{
	turn(h->data);
}

static void hooks_start(struct rmux *mux)
{
	if (mux->hooks_active || mux->closing)
		return;
	uv_idle_start(&mux->idle, idle_cb);
	uv_check_start(&mux->check, check_cb);
	mux->hooks_active = true;
}

static void mark_dirty(struct rmux_link *k)
{
	if (k->dirty)
		return;
	k->dirty = true;
	k->dirty_next = k->mux->dirty;
	k->mux->dirty = k;
	hooks_start(k->mux);
}

/* ---- outbound ---- */

static void handle_closed(struct rmux *mux);

static void conn_close_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct rmux *mux = c->link->mux;

	free(c);
	handle_closed(mux);
}

static void retry_cb(uv_timer_t *t)
{
	struct rmux_link *k = t->data;

	k->waiting = false;
	if (k->conn == NULL && k->queue != NULL)
		link_connect(k);
}

/* Drops the link's connection (if any); reconnects later if there is
 * something to send. Writes in flight on it fail when it closes. */
static void link_disconnect(struct rmux_link *k, bool failed_connect)
{
	struct rmux *mux = k->mux;
	struct conn *c = k->conn;
	uint64_t lived = failed_connect ? 0 : uv_now(mux->loop) - k->connected_at;

	if (c == NULL)
		return;
	k->conn = NULL;
	k->connected = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_close((uv_handle_t *)&c->tcp, conn_close_cb);
	if (failed_connect)
		drop_queue(k, RAFT_NOCONNECTION); /* as raft_uv: a failed connect trims */
	if (mux->closing || k->queue == NULL)
		return;
	if (lived >= mux->retry_ms) {
		link_connect(k);
	} else {
		k->waiting = true;
		uv_timer_start(&k->timer, retry_cb, mux->retry_ms - lived, 0);
	}
}

static void out_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static _Thread_local char sink[256];
	(void)h;
	(void)suggested;
	*buf = uv_buf_init(sink, sizeof sink);
}

/* The peer never writes on our connection: EOF, an error or bytes mean
 * it is gone or not speaking rmux. */
static void out_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = stream->data;
	struct rmux_link *k = c->link;
	(void)buf;

	if (nread == 0 || k->conn != c)
		return;
	LOG_DEBUG("rmux link to %s: %s", k->address,
		  nread > 0 ? "the peer wrote to it" : uv_strerror((int)nread));
	link_disconnect(k, false);
}

static void preamble_write_cb(uv_write_t *w, int status)
{
	(void)w;
	(void)status; /* a failure shows in the batch writes queued after it */
}

static void connect_cb(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	struct rmux_link *k = c->link;
	struct rmux *mux = k->mux;
	static uint8_t preamble[LISTENER_PREAMBLE_MAX]; /* the same for every link */
	static _Thread_local size_t preamble_len;
	uv_buf_t buf;

	if (k->conn != c)
		return; /* dropped (closing): the handle is closing */
	if (status != 0) {
		mux->stats.connect_failures++;
		LOG_DEBUG("rmux connect to %s: %s", k->address, uv_strerror(status));
		link_disconnect(k, true);
		return;
	}
	if (preamble_len == 0)
		preamble_len = listener_preamble_encode(preamble, LISTENER_RMUX, "", 0, NULL);
	ASSERT(preamble_len > 0);
	uv_tcp_nodelay(&c->tcp, 1);
	buf = uv_buf_init((char *)preamble, (unsigned)preamble_len);
	if (uv_write(&c->preamble_write, (uv_stream_t *)&c->tcp, &buf, 1, preamble_write_cb) != 0) {
		mux->stats.connect_failures++;
		link_disconnect(k, true);
		return;
	}
	k->connected = true;
	k->gen++;
	c->gen = k->gen;
	k->connected_at = uv_now(mux->loop);
	mux->stats.connects++;
	uv_read_start((uv_stream_t *)&c->tcp, out_alloc_cb, out_read_cb);
	if (k->queue != NULL)
		mark_dirty(k);
}

static void link_connect(struct rmux_link *k)
{
	struct rmux *mux = k->mux;
	struct conn *c;
	int rv;

	PRE(k->conn == NULL && !mux->closing);
	c = xzalloc(sizeof *c);
	c->link = k;
	rv = uv_tcp_init_ex(mux->loop, &c->tcp, AF_INET);
	if (rv != 0) { /* no socket (EMFILE, ...): nothing to close */
		free(c);
		mux->stats.connect_failures++;
		k->waiting = true;
		uv_timer_start(&k->timer, retry_cb, mux->retry_ms, 0);
		return;
	}
	c->tcp.data = c;
	c->connect.data = c;
	k->conn = c;
	mux->n_handles++;
	rv = transport_bind_source(mux->l, &c->tcp);
	if (rv == 0)
		rv = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&k->addr,
				    connect_cb);
	if (rv != 0) {
		mux->stats.connect_failures++;
		LOG_DEBUG("rmux connect to %s: %s", k->address, uv_strerror(rv));
		link_disconnect(k, true);
	}
}

static void batch_write_cb(uv_write_t *w, int status)
{
	struct batch *b = w->data;
	struct rmux_link *k = b->link;
	struct rmux *mux = k->mux;

	k->n_writing--;
	if (status != 0) {
		mux->stats.write_errors += b->n;
		if (k->conn == b->conn) {
			LOG_DEBUG("rmux write to %s: %s", k->address, uv_strerror(status));
			link_disconnect(k, false);
		}
	}
	while (b->sends != NULL) {
		struct rmux_send *s = b->sends;
		b->sends = s->next;
		if (status == 0) {
			mux->stats.msgs_out++;
			mux->stats.bytes_out += s->bytes;
		}
		complete(s, status == 0 ? 0 : RAFT_IOERR);
	}
	free(b);
}

/* Whether g's OPEN went out on k's current connection; marks it so. */
static bool announced(struct rmux_group *g, struct rmux_link *k)
{
	for (unsigned i = 0; i < g->n_ann; i++) {
		if (g->ann[i].link != k)
			continue;
		if (g->ann[i].gen == k->gen)
			return true;
		g->ann[i].gen = k->gen;
		return false;
	}
	g->ann = xrealloc(g->ann, (g->n_ann + 1) * sizeof *g->ann);
	g->ann[g->n_ann++] = (struct ann){k, k->gen};
	return false;
}

static void drop_queue(struct rmux_link *k, int status)
{
	while (k->queue != NULL) {
		struct rmux_send *s = k->queue;
		k->queue = s->next;
		if (status == RAFT_NOCONNECTION)
			k->mux->stats.drops++;
		defer(k->mux, s, status);
	}
	k->tail = NULL;
	k->n_queued = 0;
}

static void flush_link(struct rmux_link *k)
{
	struct rmux *mux = k->mux;
	struct rmux_send *s;
	struct batch *b;
	uv_buf_t *bufs;
	unsigned n_bufs = 0, n_open = 0, n = 0, i = 0;
	size_t open_off = 0;
	int rv;

	if (k->queue == NULL)
		return;
	if (!k->connected) {
		if (k->conn == NULL && !k->waiting)
			link_connect(k);
		return;
	}
	if (uv_stream_get_write_queue_size((uv_stream_t *)&k->conn->tcp) > mux->limit) {
		drop_queue(k, RAFT_NOCONNECTION);
		return;
	}
	for (s = k->queue; s != NULL; s = s->next) {
		s->status = !announced(s->g, k); /* 1: needs its OPEN first */
		n_open += (unsigned)s->status;
		n_bufs += 1 + s->n_bufs + (unsigned)s->status;
		n++;
	}
	b = xmalloc(sizeof *b + (size_t)n_open * RMUXWIRE_OPEN_MAX);
	bufs = xmalloc(n_bufs * sizeof *bufs);
	for (s = k->queue; s != NULL; s = s->next) {
		if (s->status) {
			struct rmux_group *g = s->g;
			size_t len = rmuxwire_open_encode(b->opens + open_off, g->gno, g->tablet_id,
							  g->id, g->address);
			ASSERT(len > 0); /* validated by rmux_register */
			bufs[i++] = uv_buf_init((char *)b->opens + open_off, (unsigned)len);
			open_off += len;
		}
		rmuxwire_msg_head(s->g->gno, s->head);
		bufs[i++] = uv_buf_init((char *)s->head, sizeof s->head);
		for (unsigned j = 0; j < s->n_bufs; j++)
			bufs[i++] = s->bufs[j];
	}
	b->w.data = b;
	b->link = k;
	b->conn = k->conn;
	b->sends = k->queue;
	b->n = n;
	rv = uv_write(&b->w, (uv_stream_t *)&k->conn->tcp, bufs, n_bufs, batch_write_cb);
	free(bufs); /* libuv copied the vector */
	if (rv != 0) {
		free(b);
		mux->stats.write_errors += n;
		LOG_DEBUG("rmux write to %s: %s", k->address, uv_strerror(rv));
		while (k->queue != NULL) {
			s = k->queue;
			k->queue = s->next;
			defer(mux, s, RAFT_IOERR);
		}
		k->tail = NULL;
		k->n_queued = 0;
		link_disconnect(k, false);
		return;
	}
	mux->stats.batches++;
	k->n_writing++;
	k->queue = k->tail = NULL;
	k->n_queued = 0;
}

static struct rmux_link *get_link(struct rmux *mux, const char *address)
{
	struct rmux_link *k;
	struct sockaddr_in addr;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	for (k = mux->links; k != NULL; k = k->next)
		if (strcmp(k->address, address) == 0)
			return k;
	if (strlen(address) > LISTENER_ADDRESS_MAX ||
	    listener_parse_address(address, &addr, errmsg) != 0)
		return NULL;
	k = xzalloc(sizeof *k);
	k->mux = mux;
	snprintf(k->address, sizeof k->address, "%s", address);
	k->addr = addr;
	uv_timer_init(mux->loop, &k->timer);
	k->timer.data = k;
	mux->n_handles++;
	DLIST_PUSH(mux->links, k);
	mux->stats.links++;
	return k;
}

int rmux_send(struct rmux_group *g, const char *address, struct rmux_send *s)
{
	struct rmux *mux = g->mux;
	struct rmux_link *k;

	PRE(g->registered && !mux->closing);
	k = get_link(mux, address);
	if (k == NULL)
		return RAFT_NOCONNECTION;
	s->g = g;
	g->refs++;
	s->next = NULL;
	if (k->tail != NULL)
		k->tail->next = s;
	else
		k->queue = s;
	k->tail = s;
	k->n_queued++;
	if (!k->connected && k->n_queued > RMUX_MAX_QUEUED) {
		struct rmux_send *old = k->queue;
		k->queue = old->next;
		k->n_queued--;
		mux->stats.drops++;
		defer(mux, old, RAFT_NOCONNECTION);
	}
	if (k->connected && k->n_writing == 0 && k->n_queued == 1) {
		flush_link(k); /* an idle link: no wait for the end of the turn */
		return 0;
	}
	mark_dirty(k);
	return 0;
}

/* ---- inbound ---- */

static struct slot **slot_find(struct in *in, uint32_t gno)
{
	uint32_t mask = in->cap - 1;
	uint32_t i = (gno * 2654435761u) & mask;

	while (in->slots[i] != NULL && in->slots[i]->gno != gno)
		i = (i + 1) & mask;
	return &in->slots[i];
}

static void slots_grow(struct in *in)
{
	struct slot **old = in->slots;
	unsigned old_cap = in->cap;

	in->cap = old_cap == 0 ? 16 : old_cap * 2;
	in->slots = xcalloc(in->cap, sizeof *in->slots);
	for (unsigned i = 0; i < old_cap; i++)
		if (old[i] != NULL)
			*slot_find(in, old[i]->gno) = old[i];
	free(old);
}

static void slot_unbind(struct slot *sl)
{
	if (sl->g != NULL)
		group_unref(sl->g);
	sl->g = NULL;
	sl->accepted = false;
}

static void in_close_cb(uv_handle_t *h)
{
	struct in *in = h->data;
	struct rmux *mux = in->mux;

	rmuxwire_decoder_close(&in->dec);
	for (unsigned i = 0; i < in->cap; i++) {
		if (in->slots[i] != NULL) {
			slot_unbind(in->slots[i]);
			free(in->slots[i]);
		}
	}
	free(in->slots);
	DLIST_REMOVE(mux->ins, in);
	listener_stream_free(h);
	free(in);
	handle_closed(mux);
}

static void in_close(struct in *in)
{
	if (in->closing)
		return;
	in->closing = true;
	uv_read_stop(in->stream);
	uv_close((uv_handle_t *)in->stream, in_close_cb);
}

static void bad_frame(struct in *in, const char *why)
{
	char peer[LISTENER_ADDRESS_TEXT_MAX + 1];
	uint64_t k = ++in->mux->stats.decode_errors;

	if ((k & (k - 1)) == 0) {
		listener_format_address(&in->peer, peer);
		LOG_WARN("rmux connection from %s closed: %s (%llu so far)", peer, why,
			 (unsigned long long)k);
	}
	in_close(in);
}

static void on_open(struct in *in, const struct rmuxwire_open *o)
{
	struct slot **p;
	struct slot *sl;

	if (in->cap > 0 && *slot_find(in, o->group) != NULL) {
		bad_frame(in, "a group opened twice");
		return;
	}
	if (in->n_slots >= RMUX_MAX_GROUPS) {
		bad_frame(in, "too many groups");
		return;
	}
	if ((in->n_slots + 1) * 2 > in->cap)
		slots_grow(in);
	p = slot_find(in, o->group);
	sl = xzalloc(sizeof *sl);
	sl->gno = o->group;
	sl->id = o->id;
	memcpy(sl->tablet_id, o->tablet_id, sizeof sl->tablet_id);
	memcpy(sl->address, o->address, sizeof sl->address);
	sl->reg_gen = in->mux->reg_gen - 1; /* look it up at the first message */
	*p = sl;
	in->n_slots++;
}

static struct rmux_group *lookup(struct rmux *mux, const char *tablet_id)
{
	for (struct rmux_group *g = mux->groups; g != NULL; g = g->next)
		if (strcmp(g->tablet_id, tablet_id) == 0)
			return g;
	return NULL;
}

static void on_message(struct in *in, uint32_t gno, struct raft_message *m)
{
	struct rmux *mux = in->mux;
	struct slot *sl = in->cap > 0 ? *slot_find(in, gno) : NULL;
	struct rmux_group *g;

	if (sl == NULL) {
		rwire_message_free(m);
		bad_frame(in, "a message of a group never opened");
		return;
	}
	if (sl->g != NULL && !sl->g->registered)
		slot_unbind(sl);
	if (sl->g == NULL && sl->reg_gen != mux->reg_gen) {
		sl->reg_gen = mux->reg_gen;
		sl->g = lookup(mux, sl->tablet_id);
		if (sl->g != NULL)
			sl->g->refs++;
	}
	g = sl->g;
	if (g == NULL) {
		mux->stats.unknown++;
		rwire_message_free(m);
		return;
	}
	if (!sl->accepted) {
		sl->accepted = g->check == NULL || g->check(g->arg, sl->id, sl->address, &in->peer);
		if (!sl->accepted) {
			uint64_t k = ++mux->stats.refused;
			if ((k & (k - 1)) == 0)
				TLOG_WARN(g->tablet_id, 0,
					  "raft message from %llu (%s) refused by the peer "
					  "check (%llu so far)",
					  (unsigned long long)sl->id, sl->address,
					  (unsigned long long)k);
			rwire_message_free(m);
			return;
		}
	}
	m->server_id = sl->id;
	m->server_address = sl->address;
	mux->stats.msgs_in++;
	g->recv(g->arg, m);
}

static _Thread_local uint8_t read_buf[READ_BUF_SIZE];

static void in_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct in *in = h->data;
	uint8_t *p;
	size_t len;
	(void)suggested;

	in->direct = rmuxwire_decoder_window(&in->dec, DIRECT_READ_MIN, &p, &len);
	if (in->direct)
		*buf = uv_buf_init((char *)p, len > UINT32_MAX ? UINT32_MAX : (unsigned)len);
	else
		*buf = uv_buf_init((char *)read_buf, sizeof read_buf);
}

static void in_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct in *in = stream->data;
	struct raft_message m;
	uint32_t gno;
	size_t off = 0;

	if (in->closing)
		return;
	if (nread < 0) {
		in_close(in);
		return;
	}
	if (nread == 0)
		return;
	in->mux->stats.bytes_in += (uint64_t)nread;
	if (in->direct) {
		in->direct = false;
		if (rmuxwire_decoder_advance(&in->dec, (size_t)nread, &gno, &m) == RMUXWIRE_MESSAGE)
			on_message(in, gno, &m);
		return;
	}
	while (off < (size_t)nread && !in->closing) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		struct rmuxwire_open o;
		size_t used = 0;
		int rv = rmuxwire_decoder_feed(&in->dec, (const uint8_t *)buf->base + off,
					       (size_t)nread - off, &used, &gno, &m, &o, errmsg);
		off += used;
		if (rv == RMUXWIRE_MESSAGE) {
			on_message(in, gno, &m);
		} else if (rv == RMUXWIRE_OPENED) {
			on_open(in, &o);
		} else if (rv != RMUXWIRE_MORE) {
			bad_frame(in, errmsg);
			return;
		}
	}
}

static void accept_cb(void *arg, uv_stream_t *stream, const char *tablet_id)
{
	struct rmux *mux = arg;
	struct in *in;
	int len = sizeof in->peer;
	(void)tablet_id;

	if (mux->closing) {
		listener_stream_close(stream);
		return;
	}
	in = xzalloc(sizeof *in);
	in->mux = mux;
	in->stream = stream;
	stream->data = in;
	if (uv_tcp_getpeername((uv_tcp_t *)stream, (struct sockaddr *)&in->peer, &len) != 0)
		memset(&in->peer, 0, sizeof in->peer);
	rmuxwire_decoder_init(&in->dec, mux->limit);
	mux->n_handles++;
	DLIST_PUSH(mux->ins, in);
	mux->stats.accepted++;
	if (uv_read_start(stream, in_alloc_cb, in_read_cb) != 0)
		in_close(in);
}

/* ---- API ---- */

int rmux_open(uv_loop_t *loop, struct listener *l, struct rmux **out, char *errmsg)
{
	struct rmux *mux;
	int rv;

	if (loop == NULL || l == NULL || out == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "rmux_open: NULL argument");
	mux = xzalloc(sizeof *mux);
	mux->loop = loop;
	mux->l = l;
	mux->limit = RWIRE_LIMIT_DEFAULT;
	mux->retry_ms = RMUX_RETRY_MS;
	mux->next_gno = 1;
	mux->reg_gen = 1;
	if ((rv = listener_set_handler(l, LISTENER_RMUX, accept_cb, mux, errmsg)) != 0) {
		free(mux);
		return rv;
	}
	uv_idle_init(loop, &mux->idle);
	mux->idle.data = mux;
	uv_check_init(loop, &mux->check);
	mux->check.data = mux;
	mux->n_handles = 2;
	*out = mux;
	return 0;
}

int rmux_register(struct rmux *mux, const char *tablet_id, uint64_t id, const char *address,
		  rmux_recv_cb recv, rmux_check_cb check, void *arg, struct rmux_group **out,
		  char *errmsg)
{
	uint8_t probe[RMUXWIRE_OPEN_MAX];
	struct rmux_group *g;

	PRE(!mux->closing && recv != NULL);
	if (rmuxwire_open_encode(probe, 0, tablet_id, id, address) == 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "rmux: tablet id, raft id or address out of range");
	if (lookup(mux, tablet_id) != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "rmux: tablet %s is registered already",
			       tablet_id);
	g = xzalloc(sizeof *g);
	g->mux = mux;
	snprintf(g->tablet_id, sizeof g->tablet_id, "%s", tablet_id);
	g->id = id;
	g->address = xstrdup(address);
	g->recv = recv;
	g->check = check;
	g->arg = arg;
	g->registered = true;
	g->gno = mux->next_gno++;
	g->refs = 1;
	DLIST_PUSH(mux->groups, g);
	mux->reg_gen++;
	*out = g;
	return 0;
}

void rmux_unregister(struct rmux_group *g)
{
	struct rmux *mux = g->mux;

	PRE(g->registered);
	g->registered = false;
	DLIST_REMOVE(mux->groups, g);
	mux->reg_gen++;
	for (struct rmux_link *k = mux->links; k != NULL; k = k->next) {
		struct rmux_send **pp = &k->queue, *keep_tail = NULL;
		while (*pp != NULL) {
			struct rmux_send *s = *pp;
			if (s->g != g) {
				keep_tail = s;
				pp = &s->next;
				continue;
			}
			*pp = s->next;
			k->n_queued--;
			defer(mux, s, RAFT_CANCELED);
		}
		k->tail = keep_tail;
	}
	group_unref(g);
}

static void handle_closed(struct rmux *mux)
{
	PRE(mux->n_handles > 0);
	if (--mux->n_handles > 0 || !mux->closing)
		return;
	void (*cb)(void *) = mux->close_cb;
	void *arg = mux->close_arg;
	while (mux->links != NULL) {
		struct rmux_link *k = mux->links;
		DLIST_REMOVE(mux->links, k);
		free(k);
	}
	free(mux);
	if (cb != NULL)
		cb(arg);
}

static void hook_close_cb(uv_handle_t *h)
{
	handle_closed(h->data);
}

static void timer_close_cb(uv_handle_t *h)
{
	struct rmux_link *k = h->data;
	handle_closed(k->mux);
}

int rmux_close(struct rmux *mux, void (*cb)(void *arg), void *arg)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	PRE(!mux->closing);
	if (mux->groups != NULL || mux->done != NULL)
		return DOCRAFT_EBUSY;
	mux->closing = true;
	mux->close_cb = cb;
	mux->close_arg = arg;
	listener_set_handler(mux->l, LISTENER_RMUX, NULL, NULL, errmsg);
	mux->n_handles++; /* held until every close below has started */
	uv_close((uv_handle_t *)&mux->idle, hook_close_cb);
	uv_close((uv_handle_t *)&mux->check, hook_close_cb);
	for (struct rmux_link *k = mux->links; k != NULL; k = k->next) {
		PRE(k->queue == NULL);
		uv_close((uv_handle_t *)&k->timer, timer_close_cb);
		link_disconnect(k, false);
	}
	for (struct in *in = mux->ins; in != NULL; in = in->next)
		in_close(in);
	handle_closed(mux);
	return 0;
}

void rmux_set_limit(struct rmux *mux, uint64_t bytes)
{
	if (bytes == 0)
		bytes = RWIRE_LIMIT_DEFAULT;
	mux->limit = bytes > RWIRE_LIMIT_MAX ? RWIRE_LIMIT_MAX : bytes;
}

void rmux_set_retry_delay(struct rmux *mux, unsigned ms)
{
	mux->retry_ms = ms > 0 ? ms : 1;
}

void rmux_get_stats(const struct rmux *mux, struct rmux_stats *st)
{
	*st = mux->stats;
}
