/* rmux (src/raft/rmux.h): every Raft group's messages between two servers
 * on one connection, with real listeners on 127.0.0.1, real rnet groups
 * and real C-Raft on the shared log (raftlog), as a tserver runs them.
 *
 * (a) rnet groups over rmux, no raft: 16 groups on server A send 40
 *     messages each to their peers on B in one loop turn: one connection,
 *     fewer writes than messages, every message delivered once, in order
 *     per group, with the sender's id and address; a group that closes
 *     with messages queued gets RAFT_CANCELED for each, before its close
 *     callback, while another group's messages to the same peer arrive;
 *     a peer that cannot be reached fails the sends (RAFT_NOCONNECTION),
 *     one that hangs up in the middle of a 16 MiB batch fails every send
 *     of it (RAFT_IOERR), and the link recovers once a peer listens.
 * (b) hostile bytes after an RMUX preamble: a message to a tablet not
 *     registered is dropped (counted) and the connection lives; one the
 *     peer check refuses likewise; a message of a group never opened, an
 *     unknown frame type, an oversized header, a group opened twice close
 *     that connection only (counted), and the server goes on serving.
 * (c) REAL C-Raft: 8 groups of 3 replicas on 3 servers (listener, raftlog,
 *     rmux each): every group elects and applies its commands; each server
 *     has one link per peer and accepted one connection per peer. Then
 *     server 3 stops (its connections break under load: sends fail, the
 *     other two go on) and comes back on the same address from its log:
 *     every group catches up and the replicas agree.
 *
 * Waits drive the loop until a condition holds or a guard timer fires. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <raft.h>
#include <uv.h>

#include "common/err.h"
#include "common/log.h"
#include "net/listener.h"
#include "raft/rmux.h"
#include "raft/rmuxwire.h"
#include "raft/rnet.h"
#include "raft/rwire.h"
#include "raft/transport.h"
#include "raftlog/raftlog.h"
#include "loop.h"
#include "rawclient.h"
#include "sendrecv.h"
#include "seqfsm.h"
#include "test.h"

/* ---- a server: a listener and its rmux ---- */

struct srv {
	struct listener *l;
	char address[64];
	struct rmux *mux;
};

static void srv_open(uv_loop_t *loop, struct srv *s, const char *bind)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK_OK_MSG(listener_open(loop, bind, &s->l, errmsg), errmsg);
	snprintf(s->address, sizeof s->address, "%s", listener_address(s->l));
	CHECK_OK_MSG(rmux_open(loop, s->l, &s->mux, errmsg), errmsg);
	rmux_set_retry_delay(s->mux, 200);
}

static void flag_cb(void *arg)
{
	*(bool *)arg = true;
}

static void srv_close(uv_loop_t *loop, struct srv *s)
{
	bool done = false;

	CHECK_OK(rmux_close(s->mux, flag_cb, &done));
	CHECK(!done);
	CHECK(loop_run_until(loop, loop_flag_is_set, &done, 5000));
	close_listener(loop, s->l);
	s->mux = NULL;
	s->l = NULL;
}

/* ---- (a) rnet endpoints on a server's rmux ---- */

struct ep {
	struct raft_uv_transport t;
	struct rnet n;
	raft_id id;
	char address[64];
	struct inbox in;
	bool closed;
	uint64_t close_seq;
};

static void ep_recv(struct raft_io *io, struct raft_message *m)
{
	struct ep *e = io->data;
	inbox_put(&e->in, m);
}

static void ep_tick(struct raft_io *io)
{
	(void)io;
}

static void ep_open(uv_loop_t *loop, struct srv *s, struct ep *e, raft_id id, const char *tablet)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	memset(e, 0, sizeof *e);
	e->id = id;
	snprintf(e->address, sizeof e->address, "%s", s->address);
	CHECK_OK_MSG(transport_init(&e->t, s->l, tablet, errmsg), errmsg);
	CHECK_OK(rnet_init(&e->n, loop, &e->t, errmsg));
	rnet_set_mux(&e->n, s->mux);
	e->n.io.data = e;
	CHECK_OK_MSG(e->n.io.init(&e->n.io, id, e->address), e->n.io.errmsg);
	CHECK_OK_MSG(e->n.io.start(&e->n.io, 1000, ep_tick, ep_recv), e->n.io.errmsg);
}

static void ep_close_cb(struct raft_io *io)
{
	struct ep *e = io->data;
	e->closed = true;
	e->close_seq = ++cb_seq;
}

static void ep_start_close(struct ep *e)
{
	e->n.io.close(&e->n.io, ep_close_cb);
	CHECK(!e->closed);
}

static void ep_finish_close(uv_loop_t *loop, struct ep *e)
{
	CHECK(loop_run_until(loop, loop_flag_is_set, &e->closed, 10000));
	rnet_release(&e->n);
	transport_close(&e->t);
	inbox_free(&e->in);
}

/* A TimeoutNow whose term numbers the message. */
static int send_tn(struct ep *from, struct ep *to, uint64_t term, struct sent *s)
{
	struct raft_message m = {0};

	m.type = RAFT_IO_TIMEOUT_NOW;
	m.timeout_now = (struct raft_timeout_now){term, 5, 6};
	m.server_id = to->id;
	m.server_address = to->address;
	sent_reset(s);
	return from->n.io.send(&from->n.io, &s->req, &m, sent_cb);
}

#define N_EP 16
#define N_MSG 40

struct all_got {
	struct ep *e;
	int n_ep, n;
};

static bool all_got(void *p)
{
	struct all_got *w = p;
	for (int i = 0; i < w->n_ep; i++)
		if (w->e[i].in.n_got < w->n)
			return false;
	return true;
}

TEST(groups_share_one_connection_in_order)
{
	uv_loop_t loop;
	static struct srv a, b;
	static struct ep ea[N_EP], eb[N_EP];
	static struct sent s[N_EP * N_MSG];
	struct rmux_stats st_mid;
	struct all_got wg = {eb, N_EP, N_MSG};
	struct sent_wait ws = {s, N_EP * N_MSG};
	struct rmux_stats sa, sb;

	log_init();
	start_loop(&loop);
	srv_open(&loop, &a, "127.0.0.1:0");
	srv_open(&loop, &b, "127.0.0.1:0");
	for (int g = 0; g < N_EP; g++) {
		char tablet[16];
		snprintf(tablet, sizeof tablet, "t%d", g);
		ep_open(&loop, &a, &ea[g], 1, tablet);
		ep_open(&loop, &b, &eb[g], 2, tablet);
	}
	/* One loop turn's worth: every group, interleaved. */
	for (int k = 0; k < N_MSG; k++)
		for (int g = 0; g < N_EP; g++)
			CHECK_OK(send_tn(&ea[g], &eb[g], (uint64_t)k + 1, &s[g * N_MSG + k]));
	for (int i = 0; i < N_EP * N_MSG; i++)
		CHECK_EQ_INT(s[i].n_calls, 0); /* never inside send */
	CHECK(loop_run_until(&loop, all_got, &wg, 10000));
	CHECK(loop_run_until(&loop, all_sent, &ws, 10000));
	for (int g = 0; g < N_EP; g++) {
		CHECK_EQ_INT(eb[g].in.n_got, N_MSG);
		for (int k = 0; k < N_MSG; k++) {
			CHECK_EQ_INT(eb[g].in.got[k].type, RAFT_IO_TIMEOUT_NOW);
			CHECK_EQ_U64(eb[g].in.got[k].timeout_now.term, (uint64_t)k + 1);
			CHECK_EQ_U64(eb[g].in.got[k].server_id, 1);
			CHECK_EQ_STR(eb[g].in.got[k].server_address, a.address);
		}
	}
	for (int i = 0; i < N_EP * N_MSG; i++) {
		CHECK_EQ_INT(s[i].n_calls, 1);
		CHECK_EQ_INT(s[i].status, 0);
	}
	rmux_get_stats(a.mux, &sa);
	rmux_get_stats(b.mux, &sb);
	test_note("A: %" PRIu64 " messages in %" PRIu64 " writes on %" PRIu64
		  " connection(s); B: %" PRIu64 " delivered, %" PRIu64 " bytes",
		  sa.msgs_out, sa.batches, sa.connects, sb.msgs_in, sb.bytes_in);
	CHECK_EQ_U64(sa.connects, 1);
	CHECK_EQ_U64(sb.accepted, 1);
	CHECK_EQ_U64(sa.msgs_out, N_EP * N_MSG);
	CHECK_EQ_U64(sb.msgs_in, N_EP * N_MSG);
	CHECK(sa.batches < sa.msgs_out); /* queued in one turn: coalesced */

	/* B answers on its own connection (one per direction). */
	{
		struct all_got w1 = {ea, 2, 1};
		struct sent_wait w2 = {s, 2};
		CHECK_OK(send_tn(&eb[0], &ea[0], 100, &s[0]));
		CHECK_OK(send_tn(&eb[1], &ea[1], 101, &s[1]));
		CHECK(loop_run_until(&loop, all_got, &w1, 10000));
		CHECK(loop_run_until(&loop, all_sent, &w2, 10000));
		CHECK_EQ_U64(ea[1].in.got[0].timeout_now.term, 101);
		CHECK_EQ_U64(ea[1].in.got[0].server_id, 2);
		CHECK_EQ_STR(ea[1].in.got[0].server_address, b.address);
	}

	/* Group 0 closes with 5 sends made in one turn; group 1's 5 go out.
	 * The link is idle: group 0's first send is written at once (an idle
	 * link does not wait for the end of the turn), the other 9 wait for
	 * it: group 0's 4 are cancelled. */
	{
		struct rmux_stats before;
		rmux_get_stats(a.mux, &before);
		CHECK_OK(send_tn(&ea[0], &eb[0], 999, &s[10]));
		rmux_get_stats(a.mux, &st_mid);
		CHECK_EQ_U64(st_mid.batches, before.batches + 1);
	}
	for (int k = 0; k < 5; k++) {
		CHECK_OK(send_tn(&ea[0], &eb[0], 1000 + (uint64_t)k, &s[k]));
		CHECK_OK(send_tn(&ea[1], &eb[1], 1000 + (uint64_t)k, &s[5 + k]));
	}
	ep_start_close(&ea[0]);
	for (int k = 0; k < 11; k++)
		CHECK_EQ_INT(s[k].n_calls, 0); /* never inside send or close */
	ep_finish_close(&loop, &ea[0]);
	CHECK_EQ_INT(s[10].n_calls, 1);
	CHECK_EQ_INT(s[10].status, 0);
	for (int k = 0; k < 5; k++) {
		CHECK_EQ_INT(s[k].n_calls, 1);
		CHECK_EQ_INT(s[k].status, RAFT_CANCELED);
		CHECK(s[k].seq < ea[0].close_seq);
	}
	{
		struct all_got w3 = {&eb[1], 1, N_MSG + 5};
		struct sent_wait w4 = {s + 5, 5};
		CHECK(loop_run_until(&loop, all_got, &w3, 10000));
		CHECK(loop_run_until(&loop, all_sent, &w4, 10000));
		for (int k = 0; k < 5; k++) {
			CHECK_EQ_INT(s[5 + k].status, 0);
			CHECK_EQ_U64(eb[1].in.got[N_MSG + k].timeout_now.term, 1000 + (uint64_t)k);
		}
		CHECK_EQ_INT(eb[0].in.n_got, N_MSG + 1);
		CHECK_EQ_U64(eb[0].in.got[N_MSG].timeout_now.term, 999);
	}
	/* A send after the close is refused at once. */
	CHECK_EQ_INT(send_tn(&ea[0], &eb[0], 1, &s[0]), RAFT_CANCELED);

	for (int g = 0; g < N_EP; g++) {
		if (g > 0) {
			ep_start_close(&ea[g]);
			ep_finish_close(&loop, &ea[g]);
		}
		ep_start_close(&eb[g]);
		ep_finish_close(&loop, &eb[g]);
	}
	srv_close(&loop, &a);
	srv_close(&loop, &b);
	CHECK_OK(loop_finish(&loop));
}

/* eb has just opened on b, at the address ea's link failed on: ea sends
 * until one message arrives (the link waits out its retry delay), then
 * both servers end. */
static void delivered_after_reconnect(uv_loop_t *loop, struct srv *a, struct srv *b, struct ep *ea,
				      struct ep *eb, uint64_t term, struct sent *s)
{
	for (int i = 0; i < 50 && eb->in.n_got == 0; i++) {
		struct sent_wait w1 = {s, 1};
		struct all_got wg = {eb, 1, 1};
		CHECK_OK(send_tn(ea, eb, term, s));
		CHECK(loop_run_until(loop, all_sent, &w1, 10000));
		loop_run_until(loop, all_got, &wg, s->status == 0 ? 10000 : 300);
	}
	CHECK_EQ_INT(eb->in.n_got, 1);
	CHECK_EQ_U64(eb->in.got[0].timeout_now.term, term);
	ep_start_close(ea);
	ep_finish_close(loop, ea);
	ep_start_close(eb);
	ep_finish_close(loop, eb);
	srv_close(loop, a);
	srv_close(loop, b);
	CHECK_OK(loop_finish(loop));
}

/* A group's messages wait while its peer is down, and fail with
 * RAFT_NOCONNECTION when the connect fails; once the peer listens they
 * get through. */
TEST(unreachable_peer_fails_sends_then_recovers)
{
	uv_loop_t loop;
	static struct srv a, b;
	static struct ep ea, eb;
	static struct sent s[4];
	struct sent_wait ws = {s, 2};
	struct rmux_stats st;
	char bind[64];

	log_init();
	start_loop(&loop);
	srv_open(&loop, &a, "127.0.0.1:0");
	srv_open(&loop, &b, "127.0.0.1:0");
	snprintf(bind, sizeof bind, "%s", b.address);
	ep_open(&loop, &a, &ea, 1, "t");
	ep_open(&loop, &b, &eb, 2, "t");
	ep_start_close(&eb);
	ep_finish_close(&loop, &eb);
	srv_close(&loop, &b); /* nothing listens at b.address now */
	snprintf(b.address, sizeof b.address, "%s", bind);
	CHECK_OK(send_tn(&ea, &eb, 1, &s[0]));
	CHECK_OK(send_tn(&ea, &eb, 2, &s[1]));
	CHECK(loop_run_until(&loop, all_sent, &ws, 10000));
	CHECK_EQ_INT(s[0].status, RAFT_NOCONNECTION);
	CHECK_EQ_INT(s[1].status, RAFT_NOCONNECTION);
	rmux_get_stats(a.mux, &st);
	CHECK(st.connect_failures >= 1);
	CHECK_EQ_U64(st.drops, 2);

	/* The peer comes back on the same address: a new group there. */
	srv_open(&loop, &b, bind);
	ep_open(&loop, &b, &eb, 2, "t");
	delivered_after_reconnect(&loop, &a, &b, &ea, &eb, 3, &s[2]);
}

/* A peer that hangs up while a batch of 16 MiB is being written (it reads
 * the first bytes and closes: the kernel resets the connection): every
 * send of that batch fails with RAFT_IOERR, once; then the real peer
 * listens on that address and the group's next send arrives. */
struct hangup {
	uv_tcp_t server;
	uv_tcp_t conn;
	bool accepted, conn_closed, server_closed;
};

static void hangup_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char sink[64];
	(void)h;
	(void)suggested;
	*buf = uv_buf_init(sink, sizeof sink);
}

static void hangup_conn_closed(uv_handle_t *h)
{
	((struct hangup *)h->data)->conn_closed = true;
}

static void hangup_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	if (nread != 0 && !uv_is_closing((uv_handle_t *)st))
		uv_close((uv_handle_t *)st, hangup_conn_closed); /* unread bytes: RST */
}

static void hangup_conn_cb(uv_stream_t *server, int status)
{
	struct hangup *q = server->data;
	if (status != 0 || q->accepted)
		return;
	uv_tcp_init(server->loop, &q->conn);
	q->conn.data = q;
	CHECK_OK(uv_accept(server, (uv_stream_t *)&q->conn));
	q->accepted = true;
	uv_read_start((uv_stream_t *)&q->conn, hangup_alloc_cb, hangup_read_cb);
}

static void hangup_server_closed(uv_handle_t *h)
{
	((struct hangup *)h->data)->server_closed = true;
}

#define BIG (4u << 20)

TEST(connection_breaking_mid_batch_fails_its_sends)
{
	uv_loop_t loop;
	static struct srv a, b;
	static struct ep ea, eb;
	static struct hangup q;
	static struct sent s[5];
	static uint8_t big[BIG];
	struct raft_entry e[4];
	struct raft_message ae = {0};
	struct sockaddr_in addr;
	int alen = sizeof addr;
	struct sent_wait ws = {s, 4};
	struct rmux_stats st;

	log_init();
	start_loop(&loop);
	srv_open(&loop, &a, "127.0.0.1:0");
	ep_open(&loop, &a, &ea, 1, "t");
	memset(&q, 0, sizeof q);
	uv_tcp_init(&loop, &q.server);
	q.server.data = &q;
	CHECK_OK(uv_ip4_addr("127.0.0.1", 0, &addr));
	CHECK_OK(uv_tcp_bind(&q.server, (struct sockaddr *)&addr, 0));
	CHECK_OK(uv_listen((uv_stream_t *)&q.server, 8, hangup_conn_cb));
	CHECK_OK(uv_tcp_getsockname(&q.server, (struct sockaddr *)&addr, &alen));
	memset(&eb, 0, sizeof eb);
	eb.id = 2;
	snprintf(eb.address, sizeof eb.address, "127.0.0.1:%d", ntohs(addr.sin_port));

	/* Four AppendEntries of one 4 MiB entry: one batch, far above what
	 * loopback buffers hold. */
	memset(e, 0, sizeof e);
	for (int i = 0; i < 4; i++) {
		e[i].term = 1;
		e[i].type = RAFT_COMMAND;
		e[i].buf = (struct raft_buffer){big, BIG};
	}
	ae.type = RAFT_IO_APPEND_ENTRIES;
	ae.server_id = 2;
	ae.server_address = eb.address;
	for (int i = 0; i < 4; i++) {
		ae.append_entries = (struct raft_append_entries){1, (raft_index)i, 1, 0, &e[i], 1};
		sent_reset(&s[i]);
		CHECK_OK(ea.n.io.send(&ea.n.io, &s[i].req, &ae, sent_cb));
	}
	CHECK(loop_run_until(&loop, all_sent, &ws, 10000));
	for (int i = 0; i < 4; i++) {
		CHECK_EQ_INT(s[i].n_calls, 1);
		CHECK_EQ_INT(s[i].status, RAFT_IOERR);
	}
	rmux_get_stats(a.mux, &st);
	CHECK_EQ_U64(st.write_errors, 4);
	CHECK_EQ_U64(st.batches, 1);

	/* The real peer takes the address over; the link reconnects. */
	if (!q.conn_closed)
		uv_close((uv_handle_t *)&q.conn, hangup_conn_closed);
	uv_close((uv_handle_t *)&q.server, hangup_server_closed);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &q.server_closed, 5000));
	CHECK(loop_run_until(&loop, loop_flag_is_set, &q.conn_closed, 5000));
	srv_open(&loop, &b, eb.address);
	ep_open(&loop, &b, &eb, 2, "t");
	delivered_after_reconnect(&loop, &a, &b, &ea, &eb, 7, &s[4]);
}

/* ---- (b) hostile bytes ---- */

static size_t tn_frame(uint8_t *out, uint32_t group, uint64_t term)
{
	struct raft_message m = {0};
	struct buf b = BUF_INIT;
	size_t n;

	m.type = RAFT_IO_TIMEOUT_NOW;
	m.timeout_now = (struct raft_timeout_now){term, 5, 6};
	CHECK_OK(rwire_encode(&m, &b));
	rmuxwire_msg_head(group, out);
	memcpy(out + RMUXWIRE_HEAD_SIZE, b.data, b.len);
	n = RMUXWIRE_HEAD_SIZE + b.len;
	buf_free(&b);
	return n;
}

static void raw_open(uv_loop_t *loop, struct client *c, const char *address)
{
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	size_t n = listener_preamble_encode(pre, LISTENER_RMUX, "", 0, NULL);

	CHECK(n > 0);
	client_connect(loop, c, address);
	client_write(c, pre, n);
}

static void raw_write_open(struct client *c, uint32_t group, const char *tablet, uint64_t id,
			   const char *address)
{
	uint8_t f[RMUXWIRE_OPEN_MAX];
	size_t n = rmuxwire_open_encode(f, group, tablet, id, address);
	CHECK(n > 0);
	client_write(c, f, n);
}

static bool refuse_77(void *arg, uint64_t id, const char *address, const struct sockaddr_in *peer)
{
	(void)arg;
	(void)address;
	(void)peer;
	return id != 77;
}

struct got_n {
	struct ep *e;
	int n;
};

static bool got_n(void *p)
{
	struct got_n *w = p;
	return w->e->in.n_got >= w->n;
}

struct stat_at_least {
	struct rmux *mux;
	uint64_t decode_errors, unknown, refused;
};

static bool stats_reached(void *p)
{
	struct stat_at_least *w = p;
	struct rmux_stats st;
	rmux_get_stats(w->mux, &st);
	return st.decode_errors >= w->decode_errors && st.unknown >= w->unknown &&
	       st.refused >= w->refused;
}

/* On r (group 7 open for eb): a message of a new group (tablet, sender
 * id) is dropped, counted as want says, and group 7's next message is
 * still delivered. */
static void dropped_then_delivered(uv_loop_t *loop, struct client *r, struct ep *eb, uint32_t group,
				   const char *tablet, uint64_t id, struct stat_at_least want)
{
	uint8_t f[256];
	size_t n;
	struct got_n w = {eb, eb->in.n_got + 1};

	raw_write_open(r, group, tablet, id, "127.0.0.1:7777");
	n = tn_frame(f, group, 10);
	client_write(r, f, n);
	CHECK(loop_run_until(loop, stats_reached, &want, 5000));
	n = tn_frame(f, 7, 11 + (uint64_t)eb->in.n_got);
	client_write(r, f, n);
	CHECK(loop_run_until(loop, got_n, &w, 5000));
	CHECK_EQ_INT(eb->in.n_got, w.n);
	CHECK_EQ_U64(eb->in.got[w.n - 1].timeout_now.term, 11 + (uint64_t)(w.n - 1));
	CHECK_EQ_U64(eb->in.got[w.n - 1].server_id, 66);
}

TEST(hostile_frames_close_one_connection)
{
	uv_loop_t loop;
	static struct srv b;
	static struct ep eb;
	struct client r, r2;
	uint8_t f[256];
	size_t n;
	struct rmux_stats st;

	log_init();
	start_loop(&loop);
	srv_open(&loop, &b, "127.0.0.1:0");
	ep_open(&loop, &b, &eb, 2, "t0");

	raw_open(&loop, &r, b.address);
	raw_write_open(&r, 7, "t0", 66, "127.0.0.1:6666");
	n = tn_frame(f, 7, 9);
	client_write(&r, f, n - 3); /* a frame in two writes */
	client_write(&r, f + n - 3, 3);
	{
		struct got_n w = {&eb, 1};
		CHECK(loop_run_until(&loop, got_n, &w, 5000));
	}
	CHECK_EQ_U64(eb.in.got[0].timeout_now.term, 9);
	CHECK_EQ_U64(eb.in.got[0].server_id, 66);
	CHECK_EQ_STR(eb.in.got[0].server_address, "127.0.0.1:6666");

	/* A tablet not here: dropped, counted, the connection lives. */
	dropped_then_delivered(&loop, &r, &eb, 8, "nope", 66,
			       (struct stat_at_least){b.mux, 0, 1, 0});
	/* The peer check refuses sender 77: dropped, counted, the connection lives. */
	transport_set_peer_check(&eb.t, refuse_77, NULL);
	dropped_then_delivered(&loop, &r, &eb, 9, "t0", 77, (struct stat_at_least){b.mux, 0, 1, 1});
	CHECK(!r.ended);

	/* A message of a group never opened: closed. */
	n = tn_frame(f, 1234, 14);
	client_write(&r, f, n);
	CHECK(loop_run_until(&loop, client_ended, &r, 5000));
	client_close(&loop, &r);

	/* An unknown frame type. */
	raw_open(&loop, &r2, b.address);
	client_write(&r2, "\x09\x01\0\0\0", 5);
	CHECK(loop_run_until(&loop, client_ended, &r2, 5000));
	client_close(&loop, &r2);

	/* A header above the limit (2^40 bytes). */
	raw_open(&loop, &r2, b.address);
	raw_write_open(&r2, 1, "t0", 66, "127.0.0.1:6666");
	rmuxwire_msg_head(1, f);
	memcpy(f + 5, "\x01\0\0\0\0\0\0\0\0\0\0\0\0\x01\0\0", 16);
	client_write(&r2, f, 21);
	CHECK(loop_run_until(&loop, client_ended, &r2, 5000));
	client_close(&loop, &r2);

	/* A group opened twice; then a bad OPEN (raft id 0). */
	raw_open(&loop, &r2, b.address);
	raw_write_open(&r2, 1, "t0", 66, "127.0.0.1:6666");
	raw_write_open(&r2, 1, "t0", 66, "127.0.0.1:6666");
	CHECK(loop_run_until(&loop, client_ended, &r2, 5000));
	client_close(&loop, &r2);
	raw_open(&loop, &r2, b.address);
	n = rmuxwire_open_encode(f, 1, "t0", 66, "127.0.0.1:6666");
	memset(f + 5 + 1 + 2, 0, 8);
	client_write(&r2, f, n);
	CHECK(loop_run_until(&loop, client_ended, &r2, 5000));
	client_close(&loop, &r2);

	rmux_get_stats(b.mux, &st);
	CHECK_EQ_U64(st.decode_errors, 5);
	CHECK_EQ_U64(st.unknown, 1);
	CHECK_EQ_U64(st.refused, 1);
	CHECK_EQ_U64(st.msgs_in, 3);
	CHECK_EQ_U64(st.accepted, 5);

	/* Still serving. */
	raw_open(&loop, &r2, b.address);
	raw_write_open(&r2, 3, "t0", 66, "127.0.0.1:6666");
	n = tn_frame(f, 3, 15);
	client_write(&r2, f, n);
	{
		struct got_n w = {&eb, 4};
		CHECK(loop_run_until(&loop, got_n, &w, 5000));
	}
	CHECK_EQ_U64(eb.in.got[3].timeout_now.term, 15);
	client_close(&loop, &r2);

	/* A registered group: the close is refused, nothing changes. */
	{
		bool never = false;
		CHECK_EQ_INT(rmux_close(b.mux, flag_cb, &never), DOCRAFT_EBUSY);
		CHECK(!never);
	}

	ep_start_close(&eb);
	ep_finish_close(&loop, &eb);
	srv_close(&loop, &b);
	CHECK_OK(loop_finish(&loop));
}

/* ---- (c) real C-Raft: many groups on three servers ---- */

#define N_SRV 3
#define N_GRP 8

struct world;

struct rep {
	struct world *w;
	int grp, srv;
	struct raft raft;
	struct seq_fsm fsm;
	struct raft_uv_transport t;
	struct rnet net;
	struct raftlog_io x;
	bool open, closing;
};

struct node {
	struct srv s;
	struct raftlog *log;
	char dir[300];
	bool up;
};

struct world {
	uv_loop_t loop;
	char root[256];
	struct node n[N_SRV];
	char tablet[N_GRP][16];
	struct rep r[N_GRP][N_SRV];
	struct seq_load load[N_GRP];
};

static void node_up(struct world *w, int i, const char *bind)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct raftlog_options o = {0};

	srv_open(&w->loop, &w->n[i].s, bind);
	o.dir = w->n[i].dir;
	o.segment_bytes = 1 << 20;
	CHECK_OK_MSG(raftlog_open(&w->loop, &o, &w->n[i].log, errmsg), errmsg);
	w->n[i].up = true;
}

static void rep_open(struct world *w, int g, int i)
{
	struct rep *rep = &w->r[g][i];
	struct node *nd = &w->n[i];
	struct raft_configuration conf;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	memset(rep, 0, sizeof *rep);
	rep->w = w;
	rep->grp = g;
	rep->srv = i;
	seq_fsm_reset(&rep->fsm);
	CHECK_OK_MSG(transport_init(&rep->t, nd->s.l, w->tablet[g], errmsg), errmsg);
	CHECK_OK(rnet_init(&rep->net, &w->loop, &rep->t, errmsg));
	rnet_set_mux(&rep->net, nd->s.mux);
	CHECK_OK_MSG(raftlog_io_init(&rep->x, nd->log, w->tablet[g], &rep->net.io, errmsg), errmsg);
	rv = raft_init(&rep->raft, &rep->x.io, &rep->fsm.fsm, (raft_id)i + 1, nd->s.address);
	CHECK_OK_MSG(rv, raft_errmsg(&rep->raft));
	raftlog_io_set_raft(&rep->x, &rep->raft);
	rep->raft.data = rep;
	raft_set_election_timeout(&rep->raft, 1000);
	raft_set_heartbeat_timeout(&rep->raft, 100);
	raft_configuration_init(&conf);
	for (int k = 0; k < N_SRV; k++)
		CHECK_OK(raft_configuration_add(&conf, (raft_id)k + 1, w->n[k].s.address,
						RAFT_VOTER));
	rv = raft_bootstrap(&rep->raft, &conf);
	raft_configuration_close(&conf);
	CHECK_MSG(rv == 0 || rv == RAFT_CANTBOOTSTRAP, "bootstrap: %s", raft_strerror(rv));
	CHECK_OK_MSG(raft_start(&rep->raft), raft_errmsg(&rep->raft));
	rep->open = true;
}

static void rep_close_cb(struct raft *r)
{
	struct rep *rep = r->data;
	raftlog_io_release(&rep->x);
	rnet_release(&rep->net);
	transport_close(&rep->t);
	rep->open = false;
	rep->closing = false;
}

static void rep_close(struct rep *rep)
{
	if (!rep->open || rep->closing)
		return;
	rep->closing = true;
	raft_close(&rep->raft, rep_close_cb);
}

struct node_wait {
	struct world *w;
	int i;
};

static bool node_reps_closed(void *p)
{
	struct node_wait *x = p;
	for (int g = 0; g < N_GRP; g++)
		if (x->w->r[g][x->i].open)
			return false;
	return true;
}

static void log_closed_cb(struct raftlog *l, void *arg)
{
	(void)l;
	*(bool *)arg = true;
}

static void node_down(struct world *w, int i)
{
	struct node_wait x = {w, i};
	bool done = false;

	for (int g = 0; g < N_GRP; g++)
		rep_close(&w->r[g][i]);
	CHECK(loop_run_until(&w->loop, node_reps_closed, &x, 20000));
	srv_close(&w->loop, &w->n[i].s);
	CHECK_OK(raftlog_close(w->n[i].log, log_closed_cb, &done));
	CHECK(loop_run_until(&w->loop, loop_flag_is_set, &done, 10000));
	w->n[i].log = NULL;
	w->n[i].up = false;
}

static struct raft *leader_of(struct world *w, int g)
{
	for (int i = 0; i < N_SRV; i++) {
		struct rep *rep = &w->r[g][i];
		if (rep->open && !rep->closing && raft_state(&rep->raft) == RAFT_LEADER)
			return &rep->raft;
	}
	return NULL;
}

/* Every group's load acknowledged and applied by each open replica. */
static bool world_caught_up(void *p)
{
	struct world *w = p;
	bool ok = true;

	for (int g = 0; g < N_GRP; g++) {
		seq_load_pump(&w->load[g], leader_of(w, g));
		if (!seq_load_acked(&w->load[g])) {
			ok = false;
			continue;
		}
		for (int i = 0; i < N_SRV; i++)
			if (w->r[g][i].open && !seq_fsm_has(&w->r[g][i].fsm, w->load[g].target))
				ok = false;
	}
	return ok;
}

static void world_target(struct world *w, unsigned target)
{
	for (int g = 0; g < N_GRP; g++)
		w->load[g].target = target;
	CHECK_MSG(loop_run_until(&w->loop, world_caught_up, w, 60000), "not caught up at %u",
		  target);
}

TEST(raft_groups_over_rmux)
{
	static struct world w;
	char bind[64];
	uint64_t t0 = uv_hrtime();
	struct rmux_stats st[N_SRV];

	log_init();
	memset(&w, 0, sizeof w);
	start_loop(&w.loop);
	test_tmpdir_make(w.root, "rmux-raft");
	for (int i = 0; i < N_SRV; i++) {
		snprintf(w.n[i].dir, sizeof w.n[i].dir, "%s/s%d", w.root, i + 1);
		node_up(&w, i, "127.0.0.1:0");
	}
	for (int g = 0; g < N_GRP; g++) {
		snprintf(w.tablet[g], sizeof w.tablet[g], "g%d", g);
		for (int i = 0; i < N_SRV; i++)
			rep_open(&w, g, i);
	}
	world_target(&w, 100);
	test_note("%d groups: 100 commands each applied everywhere after %.2f s", N_GRP,
		  (double)(uv_hrtime() - t0) / 1e9);
	for (int i = 0; i < N_SRV; i++) {
		rmux_get_stats(w.n[i].s.mux, &st[i]);
		test_note("server %d: %" PRIu64 " messages in %" PRIu64 " writes, %" PRIu64
			  " links, %" PRIu64 " connects, %" PRIu64 " accepted, %" PRIu64
			  " delivered",
			  i + 1, st[i].msgs_out, st[i].batches, st[i].links, st[i].connects,
			  st[i].accepted, st[i].msgs_in);
		CHECK_EQ_U64(st[i].links, N_SRV - 1);
		CHECK_EQ_U64(st[i].connects, N_SRV - 1);
		CHECK_EQ_U64(st[i].accepted, N_SRV - 1);
		CHECK_EQ_U64(st[i].decode_errors + st[i].unknown + st[i].refused, 0);
		CHECK(st[i].batches <= st[i].msgs_out);
	}

	/* Server 3 goes away under load and comes back on its address. */
	snprintf(bind, sizeof bind, "%s", w.n[2].s.address);
	for (int g = 0; g < N_GRP; g++)
		w.load[g].target = 200;
	for (int k = 0; k < 20; k++) {
		uv_run(&w.loop, UV_RUN_NOWAIT);
		world_caught_up(&w); /* pumps the load */
	}
	node_down(&w, 2);
	world_target(&w, 200);
	node_up(&w, 2, bind);
	for (int g = 0; g < N_GRP; g++)
		rep_open(&w, g, 2);
	world_target(&w, 300);
	for (int g = 0; g < N_GRP; g++)
		for (int i = 0; i < N_SRV; i++) {
			CHECK_EQ_INT(w.r[g][i].fsm.bad, 0);
			CHECK_EQ_MEM(w.r[g][i].fsm.seen, SEQ_MAX, w.r[g][0].fsm.seen, SEQ_MAX);
		}
	rmux_get_stats(w.n[0].s.mux, &st[0]);
	test_note("server 3 stopped and back: all caught up after %.2f s; server 1: %" PRIu64
		  " connects, %" PRIu64 " connect failures, %" PRIu64 " write errors, %" PRIu64
		  " drops",
		  (double)(uv_hrtime() - t0) / 1e9, st[0].connects, st[0].connect_failures,
		  st[0].write_errors, st[0].drops);
	CHECK(st[0].connects > N_SRV - 1); /* reconnected to server 3 */

	for (int i = 0; i < N_SRV; i++)
		node_down(&w, i);
	CHECK_OK(loop_finish(&w.loop));
	test_tmpdir_remove(w.root);
}

TEST_MAIN(T(groups_share_one_connection_in_order), T(unreachable_peer_fails_sends_then_recovers),
	  T(connection_breaking_mid_batch_fails_its_sends), T(hostile_frames_close_one_connection),
	  T(raft_groups_over_rmux))
