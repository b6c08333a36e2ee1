/* rnet: the network half of a raft_io (see rnet.h).
 *
 * Design note.
 *
 * One file of about 1,050 lines on purpose: the outbound clients, the
 * inbound streams and the raft_io methods share one instance's state and
 * its close accounting (every callback before the close callback);
 * splitting them would put that state and its invariants in a header.
 *
 * Outbound, one client per peer (id, address), as raft_uv 0.15's
 * src/uv_send.c: the first send to a peer creates its client and starts a
 * connect through the transport. A client is in one of: connecting (a
 * transport connect in flight), connected (stream set), closing its old
 * stream, or waiting (retry timer running). Sends made while not connected
 * wait in a FIFO of at most max_pending; the oldest beyond it fails with
 * RAFT_NOCONNECTION at once (raft_uv trims only when a connect fails, so a
 * peer whose SYNs vanish let its queue grow for minutes). Connected, a send
 * is one uv_write of the encoded head plus the raft-owned payload buffers
 * (no copy); a write backlog in user space above the limit (a peer that
 * stopped reading) drops the send instead of growing without bound.
 * A failed connect waits retry_ms. A connection that breaks (a write
 * fails, or the peer closes or writes: outbound streams are read too, only
 * to see EOF early; raft_uv notices at the next write) is reconnected at
 * once if it lived retry_ms or longer, else after retry_ms: a peer that
 * accepts and hangs up at once (a listener without that tablet) costs one
 * attempt per retry_ms, not a busy loop. Failures in a row (a failed
 * connect, a connection that died young) are logged as WARN at the 1st,
 * 2nd, 4th, ... and the recovery as INFO: a leader that cannot reach a
 * replica shows in INFO logs. A send to the same id at a new address aborts
 * the old client (its queued sends are cancelled), as raft_uv does.
 * Clients live until close, one per peer ever sent to, as in raft_uv.
 *
 * Young connections. A server whose listener is up but has not (or no
 * longer) that tablet open accepts the TCP connection, reads the preamble
 * and hangs up: the connect succeeds, the queued sends are written into
 * the kernel, and are lost. raft_uv reports them sent; raft then waits for
 * an answer to an InstallSnapshot for install_snapshot_timeout (30 s) before
 * sending it again (seen in test_rnet: a reopened replica caught up 30 s
 * late). So during its first retry_ms a connection's completed writes are
 * held: when it lives that long they complete with 0, when it dies first
 * with RAFT_IOERR (raft aborts the snapshot and retries at once); a
 * generation number per connection tells a late completion from a dead
 * connection. Holding a callback longer only keeps raft's buffers longer.
 *
 * Send callbacks never run inside raft's send call: a send dropped there
 * goes to the `done` FIFO, completed by an idle handle on the next loop
 * iteration (raft's callbacks release entries and update progress; calling
 * them re-entrantly from send is not something 0.15 expects). Write and
 * connect callbacks complete sends directly (they are loop callbacks).
 *
 * Inbound, one server per accepted stream, read-only, as src/uv_recv.c:
 * bytes go through an rwire_decoder. Reads land in one 64 KiB buffer per
 * thread (libuv calls alloc_cb then read_cb for one stream back to back,
 * and read_cb consumes every byte, so streams cannot interleave in it; a
 * buffer per connection would cost 64 KiB x 2 peers x 300 groups),
 * except while a payload with at least 64 KiB missing is being received:
 * then the read goes straight into the payload buffer raft will own. After
 * each delivered message the loop checks whether the recv callback closed
 * the io or the connection, and stops feeding if so.
 *
 * Close: tick timer, clients (queued sends fail with RAFT_CANCELED through
 * `done`, writes in flight with RAFT_CANCELED when their stream closes),
 * servers and the transport are closed; async work is waited for (it cannot
 * be cancelled once running). When all of that has completed and `done` is
 * empty, the idle handle is closed and its close callback calls raft's:
 * always on a later loop turn than io.close. Handles exist only from start
 * (or, for the idle handle, from the first deferred send or close), so
 * rnet_init and io.init open nothing on the loop. */
#include "raft/rnet.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "raft/transport.h"

#define READ_BUF_SIZE (64 * 1024)
#define DIRECT_READ_MIN (64 * 1024)

struct rnet_send {
	struct rnet_send *next;       /* queue or done FIFO */
	struct rnet_client *c;
	struct rnet *n;               /* sends through rmux */
	struct rmux_send ms;
	struct raft_io_send *req;
	uv_write_t write;
	int status;                   /* for the done FIFO */
	uint64_t gen;                 /* the client's connection it was written on */
	unsigned type;
	size_t bytes;                 /* head + payload */
	unsigned n_bufs;
	uv_buf_t *bufs;               /* [0] the head (in this allocation), then payload */
};

struct rnet_client {
	struct rnet *n;
	struct rnet_client *prev, *next;
	raft_id id;
	char *address;
	uv_timer_t timer;             /* retry delay */
	bool timer_closed;
	struct raft_uv_connect connect;
	bool connecting;
	uv_stream_t *stream;          /* connected (raft_malloc'd, from the transport) */
	bool stream_closing;          /* an old stream is closing */
	uint64_t connected_at;        /* loop time */
	uint64_t gen;                 /* connections made so far */
	uint64_t dead_young_gen;      /* the last one that died young, 0: none */
	bool young;                   /* the current one is younger than retry_ms */
	struct rnet_send *queue, *queue_tail;
	unsigned n_queued;
	struct rnet_send *held, *held_tail; /* written on the young connection */
	unsigned n_writing;           /* writes submitted, not completed */
	bool aborting;
	uint64_t failures;            /* connects failed or died young since one lived */
};

struct rnet_server {
	struct rnet *n;
	struct rnet_server *prev, *next;
	raft_id id;
	char *address;
	uv_stream_t *stream;          /* raft_malloc'd, from the transport */
	struct rwire_decoder dec;
	bool direct;                  /* the last alloc_cb gave a payload window */
	bool closing;
};

struct rnet_work {
	uv_work_t work;
	struct rnet *n;
	struct raft_io_async_work *req;
	int status;
};

static struct rnet *outer(struct raft_io *io)
{
	return (struct rnet *)((char *)io - offsetof(struct rnet, io));
}

static void maybe_closed(struct rnet *n);
static void client_connect(struct rnet_client *c);
static void fifo_push(struct rnet_send **head, struct rnet_send **tail, struct rnet_send *s);

/* ---- send completion ---- */

static void send_complete(struct rnet_send *s, int status)
{
	struct raft_io_send *req = s->req;

	free(s);
	if (req->cb != NULL)
		req->cb(req, status);
}

static void flush_cb(uv_idle_t *h)
{
	struct rnet *n = h->data;

	while (n->done != NULL) {
		struct rnet_send *s = n->done;
		n->done = s->next;
		if (n->done == NULL)
			n->done_tail = NULL;
		send_complete(s, s->status);
	}
	uv_idle_stop(h);
	if (n->closing)
		maybe_closed(n);
}

static void ensure_flush(struct rnet *n)
{
	int rv;

	if (n->flush_open)
		return;
	rv = uv_idle_init(n->loop, &n->flush);
	ASSERT(rv == 0);
	n->flush.data = n;
	n->flush_open = true;
}

/* Completes s with status on the next loop iteration. */
static void defer(struct rnet *n, struct rnet_send *s, int status)
{
	s->status = status;
	fifo_push(&n->done, &n->done_tail, s);
	ensure_flush(n);
	if (!n->flush_closing)
		uv_idle_start(&n->flush, flush_cb);
}

/* ---- outbound ---- */

static void fifo_push(struct rnet_send **head, struct rnet_send **tail, struct rnet_send *s)
{
	s->next = NULL;
	if (*tail != NULL)
		(*tail)->next = s;
	else
		*head = s;
	*tail = s;
}

/* The sends written on the young connection: completed with status, at
 * once (loop callbacks) or through `done` (later: may run inside raft's
 * calls). */
static void release_held(struct rnet_client *c, int status, bool later)
{
	while (c->held != NULL) {
		struct rnet_send *s = c->held;
		c->held = s->next;
		if (later)
			defer(c->n, s, status);
		else
			send_complete(s, status);
	}
	c->held_tail = NULL;
}

static bool client_idle(const struct rnet_client *c)
{
	return !c->connecting && c->stream == NULL && !c->stream_closing;
}

static void client_maybe_destroy(struct rnet_client *c)
{
	struct rnet *n = c->n;

	if (!c->aborting || !c->timer_closed || !client_idle(c) || c->n_writing > 0)
		return;
	ASSERT(c->queue == NULL && c->held == NULL);
	DLIST_REMOVE(n->aborting, c);
	free(c->address);
	free(c);
	maybe_closed(n);
}

static void write_cb(uv_write_t *w, int status);

static int write_send(struct rnet_client *c, struct rnet_send *s)
{
	int rv;

	s->c = c;
	s->gen = c->gen;
	s->write.data = s;
	rv = uv_write(&s->write, c->stream, s->bufs, s->n_bufs, write_cb);
	if (rv != 0)
		return rv;
	c->n_writing++;
	return 0;
}

/* One more connect that failed or died young: WARN at the 1st, 2nd, 4th,
 * ... in a row (issue 15: a leader that never reached a new replica left
 * only DEBUG lines, so the cause could not be read from INFO logs). */
static void note_failure(struct rnet_client *c, const char *why)
{
	uint64_t k = ++c->failures;

	if ((k & (k - 1)) == 0)
		TLOG_WARN(c->n->log_id, 0,
			  "raft connection to %llu (%s): %s (%llu in a row, retrying every "
			  "%llu ms)",
			  (unsigned long long)c->id, c->address, why, (unsigned long long)k,
			  (unsigned long long)c->n->retry_ms);
}

static void retry_cb(uv_timer_t *t)
{
	struct rnet_client *c = t->data;

	if (!c->aborting && client_idle(c))
		client_connect(c);
}

static void retry_later(struct rnet_client *c, uint64_t ms)
{
	uv_timer_start(&c->timer, retry_cb, ms, 0);
}

static void stream_close_cb(uv_handle_t *h)
{
	struct rnet_client *c = h->data;
	struct rnet *n = c->n;
	uint64_t lived = uv_now(n->loop) - c->connected_at;

	raft_free(h);
	c->stream_closing = false;
	if (c->aborting) {
		client_maybe_destroy(c);
		return;
	}
	if (lived >= n->retry_ms)
		client_connect(c);
	else
		retry_later(c, n->retry_ms - lived);
}

static void disconnect(struct rnet_client *c)
{
	uv_stream_t *s = c->stream;

	PRE(s != NULL && !c->stream_closing);
	c->stream = NULL;
	c->stream_closing = true;
	if (c->young) {
		/* Died young: what was written on it probably never reached the
		 * peer (a listener without that tablet accepts, reads the
		 * preamble and hangs up). Tell raft, which then retries. */
		c->young = false;
		c->dead_young_gen = c->gen;
		if (!c->aborting)
			note_failure(c, "closed by the peer within the retry delay");
		uv_timer_stop(&c->timer);
		if (c->held != NULL && !c->aborting)
			c->n->stats.unconfirmed++;
		release_held(c, c->aborting ? RAFT_CANCELED : RAFT_IOERR, true);
	}
	uv_read_stop(s);
	uv_close((uv_handle_t *)s, stream_close_cb);
}

static void write_cb(uv_write_t *w, int status)
{
	struct rnet_send *s = w->data;
	struct rnet_client *c = s->c;
	struct rnet *n = c->n;
	int cb_status = 0;

	c->n_writing--;
	if (status == 0) {
		n->stats.msgs_out[s->type]++;
		n->stats.bytes_out += s->bytes;
		if (s->gen == c->gen && c->young && !c->aborting) {
			fifo_push(&c->held, &c->held_tail, s); /* until it is not young */
			return;
		}
		if (s->gen == c->dead_young_gen)
			cb_status = RAFT_IOERR;
	} else if (c->aborting) {
		cb_status = RAFT_CANCELED;
	} else {
		cb_status = RAFT_IOERR;
		n->stats.write_errors++;
		TLOG_DEBUG(n->log_id, 0, "raft send to %s: %s", c->address, uv_strerror(status));
		if (c->stream != NULL)
			disconnect(c);
	}
	send_complete(s, cb_status);
	if (c->aborting)
		client_maybe_destroy(c);
}

static void out_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static _Thread_local char sink[256];
	(void)h;
	(void)suggested;
	*buf = uv_buf_init(sink, sizeof sink);
}

/* Outbound streams carry nothing back: read only to see the peer go. A
 * peer that writes is not speaking raft_uv's protocol: disconnected too
 * (rather than reading its bytes forever). */
static void out_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct rnet_client *c = stream->data;
	(void)buf;

	if (nread == 0 || c->stream != stream)
		return;
	TLOG_DEBUG(c->n->log_id, 0, "raft connection to %s: %s", c->address,
		   nread > 0 ? "the peer wrote to it" : uv_strerror((int)nread));
	disconnect(c);
}

/* The connection lived retry_ms: what was written on it counts as sent. */
static void grown_up_cb(uv_timer_t *t)
{
	struct rnet_client *c = t->data;

	c->young = false;
	if (c->failures > 0)
		TLOG_INFO(c->n->log_id, 0, "raft connection to %llu (%s): up after %llu failures",
			  (unsigned long long)c->id, c->address, (unsigned long long)c->failures);
	c->failures = 0;
	release_held(c, 0, false);
}

static void connect_cb(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
	struct rnet_client *c = req->data;
	struct rnet *n = c->n;

	c->connecting = false;
	if (status == 0 && stream != NULL) {
		c->stream = stream;
		stream->data = c;
		c->connected_at = uv_now(n->loop);
		if (c->aborting) {
			disconnect(c);
			return;
		}
		n->stats.connects++;
		c->gen++;
		c->young = true;
		uv_timer_start(&c->timer, grown_up_cb, n->retry_ms, 0);
		uv_read_start(stream, out_alloc_cb, out_read_cb);
		while (c->queue != NULL && c->stream != NULL) {
			struct rnet_send *s = c->queue;
			c->queue = s->next;
			if (c->queue == NULL)
				c->queue_tail = NULL;
			c->n_queued--;
			if (write_send(c, s) != 0) {
				n->stats.write_errors++;
				send_complete(s, RAFT_IOERR);
			}
		}
		return;
	}
	if (c->aborting) {
		client_maybe_destroy(c);
		return;
	}
	n->stats.connect_failures++;
	note_failure(c, status != 0 ? raft_strerror(status) : "no stream");
	retry_later(c, n->retry_ms);
}

static void client_connect(struct rnet_client *c)
{
	struct rnet *n = c->n;
	int rv;

	PRE(client_idle(c) && !c->aborting);
	c->connecting = true;
	c->connect.data = c;
	rv = n->t->connect(n->t, &c->connect, c->id, c->address, connect_cb);
	if (rv != 0) {
		c->connecting = false;
		n->stats.connect_failures++;
		note_failure(c, n->t->errmsg);
		retry_later(c, n->retry_ms);
	}
}

static void timer_close_cb(uv_handle_t *h)
{
	struct rnet_client *c = h->data;
	c->timer_closed = true;
	client_maybe_destroy(c);
}

/* Starts closing c: its queued sends are cancelled, writes in flight end
 * when the stream closes; c is freed once everything has called back. */
static void client_abort(struct rnet_client *c)
{
	struct rnet *n = c->n;

	DLIST_REMOVE(n->clients, c);
	DLIST_PUSH(n->aborting, c);
	c->aborting = true;
	uv_close((uv_handle_t *)&c->timer, timer_close_cb);
	if (c->stream != NULL)
		disconnect(c);
	while (c->queue != NULL) {
		struct rnet_send *s = c->queue;
		c->queue = s->next;
		defer(n, s, RAFT_CANCELED);
	}
	c->queue_tail = NULL;
	c->n_queued = 0;
}

static struct rnet_client *get_client(struct rnet *n, raft_id id, const char *address)
{
	struct rnet_client *c;

	for (c = n->clients; c != NULL; c = c->next) {
		if (c->id != id)
			continue;
		if (strcmp(c->address, address) == 0)
			return c;
		client_abort(c); /* the peer moved */
		break;
	}
	c = xzalloc(sizeof *c);
	c->n = n;
	c->id = id;
	c->address = xstrdup(address);
	uv_timer_init(n->loop, &c->timer);
	c->timer.data = c;
	DLIST_PUSH(n->clients, c);
	client_connect(c);
	return c;
}

/* ---- outbound through rmux ---- */

static void mux_send_cb(struct rmux_send *ms, int status)
{
	struct rnet_send *s = (struct rnet_send *)((char *)ms - offsetof(struct rnet_send, ms));
	struct rnet *n = s->n;

	if (status == 0) {
		n->stats.msgs_out[s->type]++;
		n->stats.bytes_out += s->bytes;
	} else if (status == RAFT_NOCONNECTION) {
		n->stats.drops++;
	} else if (status == RAFT_IOERR) {
		n->stats.write_errors++;
	}
	n->n_mux_sending--;
	send_complete(s, status);
	if (n->closing)
		maybe_closed(n);
}

static int mux_send(struct rnet *n, struct rnet_send *s, const char *address)
{
	int rv;

	s->n = n;
	s->ms.bufs = s->bufs;
	s->ms.n_bufs = s->n_bufs;
	s->ms.bytes = s->bytes;
	s->ms.cb = mux_send_cb;
	rv = rmux_send(n->mux_group, address, &s->ms);
	if (rv != 0) {
		free(s);
		snprintf(n->io.errmsg, sizeof n->io.errmsg, "rnet: bad address %.64s", address);
		return rv;
	}
	n->n_mux_sending++;
	return 0;
}

static void mux_recv(void *arg, struct raft_message *m)
{
	struct rnet *n = arg;

	if (n->closing) {
		rwire_message_free(m);
		return;
	}
	n->stats.msgs_in[m->type]++;
	n->recv_cb(&n->io, m);
}

static bool mux_check(void *arg, uint64_t id, const char *address, const struct sockaddr_in *peer)
{
	struct rnet *n = arg;
	return transport_check_peer(n->t, id, address, peer);
}

/* The longest prefix of m's entries whose payload fits limit. */
static unsigned entries_that_fit(const struct raft_append_entries *a, uint64_t limit)
{
	uint64_t total = 0;
	unsigned k;

	for (k = 0; k < a->n_entries; k++) {
		total += a->entries[k].buf.len;
		if (total > limit)
			break;
	}
	return k;
}

static int io_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *m,
		   raft_io_send_cb cb)
{
	struct rnet *n = outer(io);
	struct raft_message mm = *m;
	struct rnet_client *c;
	struct rnet_send *s;
	size_t head, n_payload = 0;
	uint64_t payload;

	if (n->closing) {
		snprintf(io->errmsg, sizeof io->errmsg, "rnet is closing");
		return RAFT_CANCELED;
	}
	if (m->server_id == 0 || m->server_address == NULL) {
		snprintf(io->errmsg, sizeof io->errmsg, "rnet: a message without a destination");
		return RAFT_NOCONNECTION;
	}
	head = rwire_head_size(m);
	if (head == 0) {
		snprintf(io->errmsg, sizeof io->errmsg, "rnet: message type %d", m->type);
		return RAFT_MALFORMED;
	}
	if (m->type == RAFT_IO_APPEND_ENTRIES) {
		unsigned k = entries_that_fit(&m->append_entries, n->limit);
		if (k == 0 && m->append_entries.n_entries > 0) {
			snprintf(io->errmsg, sizeof io->errmsg,
				 "rnet: an entry of %zu bytes (limit %llu)",
				 m->append_entries.entries[0].buf.len,
				 (unsigned long long)n->limit);
			return RAFT_TOOBIG;
		}
		if (k < m->append_entries.n_entries) {
			mm.append_entries.n_entries = k;
			n->stats.truncated++;
			head = rwire_head_size(&mm);
		}
		n_payload = mm.append_entries.n_entries;
	} else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
		if (m->install_snapshot.data.len > n->limit) {
			snprintf(io->errmsg, sizeof io->errmsg,
				 "rnet: snapshot of %zu bytes (limit %llu)",
				 m->install_snapshot.data.len, (unsigned long long)n->limit);
			return RAFT_TOOBIG;
		}
		n_payload = 1;
	}
	payload = rwire_payload_size(&mm);

	s = xmalloc(sizeof *s + (1 + n_payload) * sizeof(uv_buf_t) + head);
	memset(s, 0, sizeof *s);
	s->req = req;
	s->type = mm.type;
	s->bytes = head + (size_t)payload;
	s->bufs = (uv_buf_t *)(s + 1);
	s->n_bufs = 0;
	s->bufs[s->n_bufs++] = uv_buf_init((char *)(s->bufs + 1 + n_payload), (unsigned)head);
	rwire_head_encode(&mm, (uint8_t *)s->bufs[0].base);
	if (mm.type == RAFT_IO_APPEND_ENTRIES) {
		for (unsigned i = 0; i < mm.append_entries.n_entries; i++) {
			const struct raft_buffer *b = &mm.append_entries.entries[i].buf;
			if (b->len > 0)
				s->bufs[s->n_bufs++] = uv_buf_init(b->base, (unsigned)b->len);
		}
	} else if (mm.type == RAFT_IO_INSTALL_SNAPSHOT && mm.install_snapshot.data.len > 0) {
		s->bufs[s->n_bufs++] = uv_buf_init(mm.install_snapshot.data.base,
						   (unsigned)mm.install_snapshot.data.len);
	}
	req->cb = cb;
	if (n->mux_group != NULL)
		return mux_send(n, s, m->server_address);

	c = get_client(n, m->server_id, m->server_address);
	if (c->stream != NULL) {
		int rv;
		if (uv_stream_get_write_queue_size(c->stream) > n->limit) {
			n->stats.drops++;
			defer(n, s, RAFT_NOCONNECTION);
			return 0;
		}
		rv = write_send(c, s);
		if (rv != 0) {
			free(s);
			snprintf(io->errmsg, sizeof io->errmsg, "rnet: write to %s: %s",
				 m->server_address, uv_strerror(rv));
			return RAFT_IOERR;
		}
		return 0;
	}
	s->c = c;
	s->next = NULL;
	if (c->queue_tail != NULL)
		c->queue_tail->next = s;
	else
		c->queue = s;
	c->queue_tail = s;
	c->n_queued++;
	if (c->n_queued > n->max_pending) {
		struct rnet_send *old = c->queue;
		c->queue = old->next;
		c->n_queued--;
		n->stats.drops++;
		defer(n, old, RAFT_NOCONNECTION);
	}
	return 0;
}

/* ---- inbound ---- */

static void server_close_cb(uv_handle_t *h)
{
	struct rnet_server *s = h->data;
	struct rnet *n = s->n;

	rwire_decoder_close(&s->dec);
	DLIST_REMOVE(n->servers, s);
	free(s->address);
	raft_free(h);
	free(s);
	maybe_closed(n);
}

static void server_close(struct rnet_server *s)
{
	if (s->closing)
		return;
	s->closing = true;
	uv_read_stop(s->stream);
	uv_close((uv_handle_t *)s->stream, server_close_cb);
}

static void deliver(struct rnet_server *s, struct raft_message *m)
{
	struct rnet *n = s->n;

	m->server_id = s->id;
	m->server_address = s->address;
	n->stats.msgs_in[m->type]++;
	n->recv_cb(&n->io, m);
}

static _Thread_local uint8_t read_buf[READ_BUF_SIZE];

static void in_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rnet_server *s = h->data;
	uint8_t *p;
	size_t len;
	(void)suggested;

	s->direct = rwire_decoder_window(&s->dec, DIRECT_READ_MIN, &p, &len);
	if (s->direct)
		*buf = uv_buf_init((char *)p, len > UINT32_MAX ? UINT32_MAX : (unsigned)len);
	else
		*buf = uv_buf_init((char *)read_buf, sizeof read_buf);
}

static void decode_error(struct rnet_server *s, const char *why)
{
	struct rnet *n = s->n;
	uint64_t k = ++n->stats.decode_errors;

	if ((k & (k - 1)) == 0)
		TLOG_WARN(n->log_id, 0,
			  "raft connection from %llu (%s) closed: %s (%llu decode errors so far)",
			  (unsigned long long)s->id, s->address, why, (unsigned long long)k);
	server_close(s);
}

static void in_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct rnet_server *s = stream->data;
	struct rnet *n = s->n;
	struct raft_message m;
	size_t off = 0;

	if (s->closing)
		return;
	if (nread < 0) {
		server_close(s);
		return;
	}
	if (nread == 0)
		return;
	n->stats.bytes_in += (uint64_t)nread;
	if (s->direct) {
		s->direct = false;
		if (rwire_decoder_advance(&s->dec, (size_t)nread, &m) == RWIRE_MESSAGE)
			deliver(s, &m);
		return;
	}
	while (off < (size_t)nread && !s->closing && !n->closing) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		size_t used = 0;
		int rv = rwire_decoder_feed(&s->dec, (const uint8_t *)buf->base + off,
					    (size_t)nread - off, &used, &m, errmsg);
		off += used;
		if (rv == RWIRE_MESSAGE) {
			deliver(s, &m);
		} else if (rv != RWIRE_MORE) {
			decode_error(s, errmsg);
			return;
		}
	}
}

static void refuse_close_cb(uv_handle_t *h)
{
	raft_free(h);
}

static void accept_cb(struct raft_uv_transport *t, raft_id id, const char *address,
		      struct uv_stream_s *stream)
{
	struct rnet *n = t->data;
	struct rnet_server *s;
	int rv;

	if (n->closing) {
		uv_close((uv_handle_t *)stream, refuse_close_cb);
		return;
	}
	s = xzalloc(sizeof *s);
	s->n = n;
	s->id = id;
	s->address = xstrdup(address);
	s->stream = stream;
	stream->data = s;
	rwire_decoder_init(&s->dec, n->limit);
	DLIST_PUSH(n->servers, s);
	n->stats.accepted++;
	rv = uv_read_start(stream, in_alloc_cb, in_read_cb);
	if (rv != 0) {
		TLOG_WARN(n->log_id, 0, "raft connection from %s: %s", address, uv_strerror(rv));
		server_close(s);
	}
}

/* ---- life cycle ---- */

static int io_init(struct raft_io *io, raft_id id, const char *address)
{
	struct rnet *n = outer(io);
	int rv;

	PRE(!n->inited);
	rv = n->t->init(n->t, id, address);
	if (rv != 0) {
		snprintf(io->errmsg, sizeof io->errmsg, "%s", n->t->errmsg);
		return rv;
	}
	n->id = id;
	n->address = xstrdup(address);
	n->inited = true;
	return 0;
}

static void tick_timer_cb(uv_timer_t *t)
{
	struct rnet *n = t->data;
	if (n->tick_cb != NULL)
		n->tick_cb(&n->io);
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
		    raft_io_recv_cb recv)
{
	struct rnet *n = outer(io);
	int rv;

	PRE(n->inited && !n->started && !n->closing);
	n->tick_cb = tick;
	n->recv_cb = recv;
	rv = n->t->listen(n->t, accept_cb);
	if (rv != 0) {
		snprintf(io->errmsg, sizeof io->errmsg, "%s", n->t->errmsg);
		return rv;
	}
	if (n->mux != NULL) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		if (rmux_register(n->mux, transport_tablet_id(n->t), n->id, n->address, mux_recv,
				  mux_check, n, &n->mux_group, errmsg) != 0) {
			snprintf(io->errmsg, sizeof io->errmsg, "%s", errmsg);
			return RAFT_BUSY; /* the transport is closed by io.close */
		}
	}
	rv = uv_timer_init(n->loop, &n->tick);
	ASSERT(rv == 0);
	n->tick.data = n;
	n->tick_open = true;
	uv_timer_start(&n->tick, tick_timer_cb, msecs, msecs);
	ensure_flush(n);
	n->started = true;
	return 0;
}

static void final_close_cb(uv_handle_t *h)
{
	struct rnet *n = h->data;
	raft_io_close_cb cb = n->close_cb;

	n->flush_open = false;
	n->closed = true;
	if (cb != NULL)
		cb(&n->io);
}

static void maybe_closed(struct rnet *n)
{
	if (!n->closing || n->closed || n->flush_closing)
		return;
	if (n->tick_open || n->clients != NULL || n->aborting != NULL || n->servers != NULL ||
	    n->transport_closing || n->n_work > 0 || n->done != NULL || n->n_mux_sending > 0)
		return;
	ensure_flush(n);
	n->flush_closing = true;
	uv_close((uv_handle_t *)&n->flush, final_close_cb);
}

static void tick_close_cb(uv_handle_t *h)
{
	struct rnet *n = h->data;
	n->tick_open = false;
	maybe_closed(n);
}

static void transport_close_cb(struct raft_uv_transport *t)
{
	struct rnet *n = t->data;
	n->transport_closing = false;
	maybe_closed(n);
}

static void io_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct rnet *n = outer(io);

	PRE(!n->closing);
	n->closing = true;
	n->close_cb = cb;
	if (n->mux_group != NULL) {
		rmux_unregister(n->mux_group); /* queued sends: RAFT_CANCELED, later */
		n->mux_group = NULL;
	}
	if (n->tick_open)
		uv_close((uv_handle_t *)&n->tick, tick_close_cb);
	while (n->clients != NULL)
		client_abort(n->clients);
	for (struct rnet_server *s = n->servers; s != NULL; s = s->next)
		server_close(s);
	n->transport_closing = true;
	n->t->close(n->t, transport_close_cb);
	maybe_closed(n);
}

/* ---- time, random, async work ---- */

static raft_time io_time(struct raft_io *io)
{
	return uv_now(outer(io)->loop);
}

/* splitmix64 */
static uint64_t next_random(struct rnet *n)
{
	uint64_t z = (n->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int io_random(struct raft_io *io, int min, int max)
{
	struct rnet *n = outer(io);
	uint64_t range;

	if (max <= min)
		return min;
	range = (uint64_t)((int64_t)max - (int64_t)min);
	return (int)((int64_t)min + (int64_t)(next_random(n) % range));
}

static void work_cb(uv_work_t *w)
{
	struct rnet_work *x = w->data;
	x->status = x->req->work(x->req);
}

static void after_work_cb(uv_work_t *w, int status)
{
	struct rnet_work *x = w->data;
	struct rnet *n = x->n;
	struct raft_io_async_work *req = x->req;
	int st = status == UV_ECANCELED ? RAFT_CANCELED : x->status;

	free(x);
	n->n_work--;
	req->cb(req, st);
	if (n->closing)
		maybe_closed(n);
}

static int io_async_work(struct raft_io *io, struct raft_io_async_work *req,
			 raft_io_async_work_cb cb)
{
	struct rnet *n = outer(io);
	struct rnet_work *x;
	int rv;

	if (n->closing) {
		snprintf(io->errmsg, sizeof io->errmsg, "rnet is closing");
		return RAFT_CANCELED;
	}
	x = xzalloc(sizeof *x);
	x->n = n;
	x->req = req;
	x->work.data = x;
	req->cb = cb;
	rv = uv_queue_work(n->loop, &x->work, work_cb, after_work_cb);
	if (rv != 0) {
		free(x);
		snprintf(io->errmsg, sizeof io->errmsg, "rnet: async work: %s", uv_strerror(rv));
		return RAFT_IOERR;
	}
	n->n_work++;
	return 0;
}

/* ---- storage: not here ---- */

static int no_storage(struct raft_io *io)
{
	snprintf(io->errmsg, sizeof io->errmsg, "rnet has no storage");
	return RAFT_IOERR;
}

static int io_load(struct raft_io *io, raft_term *term, raft_id *voted_for,
		   struct raft_snapshot **snapshot, raft_index *start_index,
		   struct raft_entry *entries[], size_t *n_entries)
{
	(void)term;
	(void)voted_for;
	(void)snapshot;
	(void)start_index;
	(void)entries;
	(void)n_entries;
	return no_storage(io);
}

static int io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	(void)conf;
	return no_storage(io);
}

static int io_set_term(struct raft_io *io, raft_term term)
{
	(void)term;
	return no_storage(io);
}

static int io_set_vote(struct raft_io *io, raft_id id)
{
	(void)id;
	return no_storage(io);
}

static int io_append(struct raft_io *io, struct raft_io_append *req,
		     const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	(void)req;
	(void)entries;
	(void)n;
	(void)cb;
	return no_storage(io);
}

static int io_truncate(struct raft_io *io, raft_index index)
{
	(void)index;
	return no_storage(io);
}

static int io_snapshot_put(struct raft_io *io, unsigned trailing,
			   struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
			   raft_io_snapshot_put_cb cb)
{
	(void)trailing;
	(void)req;
	(void)snapshot;
	(void)cb;
	return no_storage(io);
}

static int io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			   raft_io_snapshot_get_cb cb)
{
	(void)req;
	(void)cb;
	return no_storage(io);
}

/* ---- API ---- */

static uint64_t seed(const struct rnet *n)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
		s = uv_hrtime() ^ (uint64_t)(uintptr_t)n;
	return s;
}

int rnet_init(struct rnet *n, uv_loop_t *loop, struct raft_uv_transport *t, char *errmsg)
{
	if (n == NULL || loop == NULL || t == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "rnet_init: NULL argument");
	memset(n, 0, sizeof *n);
	n->loop = loop;
	n->t = t;
	n->limit = RWIRE_LIMIT_DEFAULT;
	n->max_pending = RNET_MAX_PENDING_DEFAULT;
	n->retry_ms = RNET_RETRY_MS_DEFAULT;
	n->rng = seed(n);
	t->data = n;

	n->io.version = 2;
	n->io.data = NULL;
	n->io.impl = n;
	n->io.init = io_init;
	n->io.close = io_close;
	n->io.load = io_load;
	n->io.start = io_start;
	n->io.bootstrap = io_bootstrap;
	n->io.recover = io_bootstrap; /* same signature, same answer */
	n->io.set_term = io_set_term;
	n->io.set_vote = io_set_vote;
	n->io.send = io_send;
	n->io.append = io_append;
	n->io.truncate = io_truncate;
	n->io.snapshot_put = io_snapshot_put;
	n->io.snapshot_get = io_snapshot_get;
	n->io.time = io_time;
	n->io.random = io_random;
	n->io.async_work = io_async_work;
	return 0;
}

void rnet_set_limit(struct rnet *n, uint64_t bytes)
{
	n->limit = bytes == 0 ? RWIRE_LIMIT_DEFAULT : bytes > RWIRE_LIMIT_MAX ? RWIRE_LIMIT_MAX
									: bytes;
}

void rnet_set_retry_delay(struct rnet *n, unsigned ms)
{
	n->retry_ms = ms > 0 ? ms : 1;
}

void rnet_set_max_pending(struct rnet *n, unsigned count)
{
	n->max_pending = count > 0 ? count : 1;
}

void rnet_set_mux(struct rnet *n, struct rmux *mux)
{
	PRE(!n->started);
	n->mux = mux;
}

void rnet_set_log_id(struct rnet *n, const char *log_id)
{
	n->log_id = log_id;
}

void rnet_get_stats(const struct rnet *n, struct rnet_stats *st)
{
	*st = n->stats;
}

void rnet_release(struct rnet *n)
{
	PRE(!n->closing || n->closed);
	PRE(!n->started || n->closed);
	free(n->address);
	n->address = NULL;
}
