/* The RPC write path: output queues and the flusher (see outq.h).
 *
 * Design note. Every frame (a response, a request, the client's preamble)
 * is one allocation, struct outq_frame: header and payload, with a
 * uv_write_t and a next link. Queuing a frame appends it to its
 * connection's output queue (struct outq) and puts the connection on its
 * owner's dirty list (the server's, or the client's once connected);
 * nothing is written then. The owner's check handle (the flusher) writes
 * every dirty connection's queue in order, cut into batches of at most
 * FLUSH_MAX_FRAMES frames and FLUSH_MAX_BYTES bytes (a larger frame goes
 * alone): one uv_write (a writev) per batch, on the uv_write_t of the
 * batch's first frame, the batch chained by next; the write callback
 * frees the chain. So a server answering 16 calls of one read in one turn
 * does one write(2), not 16.
 *
 * Why a check handle plus an idle handle: libuv runs timers, idle,
 * prepare, then polls for I/O, then check handles; the flusher is started
 * with an idle handle (kick) whenever a connection becomes dirty, and an
 * active idle handle makes the poll non-blocking, so frames queued from a
 * timer, idle or prepare callback (the tablet layer answers from
 * uv_prepare) are written in the same turn's check phase without waiting
 * for I/O, those queued from I/O callbacks in the check phase right after
 * them, and those queued from check or close callbacks at the next turn,
 * again without blocking. Both handles stop once no connection is dirty.
 *
 * Frames never overtake each other: the queue is FIFO and libuv keeps its
 * writes in order. What a connection does with its queue when it closes,
 * and which callback closes it after a final frame, is its owner's
 * business (server.c, client.c): this file only queues, batches and
 * frees. */
#include "rpc/outq.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/mem.h"

#define FLUSH_MAX_FRAMES 64        /* frames per uv_write */
#define FLUSH_MAX_BYTES (1u << 20) /* bytes per uv_write, unless one frame is larger */

struct outq_frame *outq_frame_new(size_t len)
{
	struct outq_frame *w = xmalloc(sizeof *w + len);

	w->len = len;
	return w;
}

void outq_push(struct outq *q, struct outq_frame *w)
{
	struct outq_frame **end = q->tail != NULL ? &q->tail->next : &q->head;

	w->next = NULL;
	*end = w;
	q->tail = w;
	q->bytes += w->len;
}

void outq_push_bytes(struct outq *q, const void *p, size_t len)
{
	struct outq_frame *w = outq_frame_new(len);

	memcpy(w->data, p, len);
	outq_push(q, w);
}

static void free_chain(struct outq_frame *w)
{
	while (w != NULL) {
		struct outq_frame *next = w->next;
		free(w);
		w = next;
	}
}

void outq_clear(struct outq *q)
{
	free_chain(q->head);
	q->head = q->tail = NULL;
	q->bytes = 0;
}

void outq_batch_free(uv_write_t *req)
{
	free_chain((struct outq_frame *)req); /* req is the first member */
}

/* Takes the next batch off the (non-empty) q: its buffers into bufs, *n
 * of them; returns its first frame, the batch chained by next. */
static struct outq_frame *take(struct outq *q, uv_buf_t *bufs, unsigned *n)
{
	struct outq_frame *first = q->head, *w = first, *last = NULL;
	size_t bytes = 0;
	unsigned k = 0;

	while (w != NULL && k < FLUSH_MAX_FRAMES &&
	       (k == 0 || bytes + w->len <= FLUSH_MAX_BYTES)) {
		bufs[k++] = uv_buf_init((char *)w->data, (unsigned)w->len);
		bytes += w->len;
		last = w;
		w = w->next;
	}
	last->next = NULL;
	q->head = w;
	if (w == NULL)
		q->tail = NULL;
	q->bytes -= bytes;
	*n = k;
	return first;
}

int outq_flush(struct outq *q, uv_stream_t *s, uv_write_cb cb, uv_write_cb last_cb,
	       uint64_t *writes, uint64_t *frames)
{
	while (q->head != NULL) {
		uv_buf_t bufs[FLUSH_MAX_FRAMES];
		unsigned n;
		struct outq_frame *first = take(q, bufs, &n);
		int rv = uv_write(&first->req, s, bufs, n, q->head == NULL ? last_cb : cb);
		if (rv != 0) {
			free_chain(first);
			return rv;
		}
		(*writes)++;
		*frames += n;
	}
	return 0;
}

/* ---- the dirty list ---- */

static void idle_noop_cb(uv_idle_t *h)
{
	(void)h;
}

void outq_flusher_init(uv_loop_t *loop, struct rpc_flusher *f, void *owner)
{
	uv_check_init(loop, &f->check);
	uv_idle_init(loop, &f->kick);
	f->check.data = f->kick.data = owner;
	f->head = NULL;
}

void outq_flusher_close(struct rpc_flusher *f, uv_close_cb cb)
{
	PRE(f->head == NULL);
	uv_close((uv_handle_t *)&f->check, cb);
	uv_close((uv_handle_t *)&f->kick, cb);
}

void outq_flusher_add(struct rpc_flusher *f, struct rpc_dirty_link *l, uv_check_cb cb)
{
	if (l->on)
		return;
	l->on = true;
	DLIST_PUSH(f->head, l);
	uv_check_start(&f->check, cb);
	uv_idle_start(&f->kick, idle_noop_cb);
}

void outq_flusher_remove(struct rpc_flusher *f, struct rpc_dirty_link *l)
{
	if (!l->on)
		return;
	DLIST_REMOVE(f->head, l);
	l->on = false;
}

struct rpc_dirty_link *outq_flusher_take(struct rpc_flusher *f)
{
	struct rpc_dirty_link *l = f->head;

	if (l == NULL) {
		uv_check_stop(&f->check);
		uv_idle_stop(&f->kick);
		return NULL;
	}
	outq_flusher_remove(f, l);
	return l;
}
