/* The one-port listener and the per-tablet raft_uv_transport, on real
 * loopback sockets (127.0.0.1-3) and one uv loop per case.
 *
 * (a) preamble handling with raw libuv clients: malformed, truncated, silent
 *     and unroutable connections are closed; RPC, COPY and RAFT connections
 *     reach their owner with the bytes after the preamble intact.
 * (b) the transport alone: connect, hand-over, refusal, cancellation.
 * (c) three "servers" (listeners on 127.0.0.1/2/3, same port) hosting two
 *     tablets of three raft_uv replicas each; t1 is closed while t2 keeps
 *     applying, then reopened from its directories.
 *
 * Every wait drives the loop until a condition holds or a guard timer
 * fires; nothing sleeps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/err.h"
#include "common/log.h"
#include "net/listener.h"
#include "raft/transport.h"
#include "test.h"
#include "loop.h"
#include "rawclient.h"
#include "seqfsm.h"

enum reason { MALFORMED, UNROUTABLE, DROPPED, REJECTED };

static uint64_t reason_count(const struct listener_stats *st, enum reason r)
{
	return r == MALFORMED ? st->malformed : r == UNROUTABLE ? st->unroutable
		: r == REJECTED ? st->rejected : st->dropped;
}

/* Sends bytes and expects the listener to close the connection, counting it
 * under reason (and nothing else). */
static void expect_rejected(uv_loop_t *loop, struct listener *l, const void *p, size_t n,
			    const char *what, enum reason why)
{
	struct listener_stats before, after;
	struct client c;

	listener_get_stats(l, &before);
	client_connect(loop, &c, listener_address(l));
	if (n > 0)
		client_write(&c, p, n);
	CHECK_MSG(loop_run_until(loop, client_ended, &c, 3000), "%s: not closed by the listener",
		  what);
	client_close(loop, &c);
	listener_get_stats(l, &after);
	CHECK_MSG(reason_count(&after, why) == reason_count(&before, why) + 1,
		  "%s: not counted as expected", what);
	CHECK_EQ_U64(after.accepted, before.accepted + 1);
	CHECK_EQ_U64(after.malformed + after.unroutable + after.dropped + after.timed_out +
			     after.handed_over + after.rejected,
		     before.malformed + before.unroutable + before.dropped + before.timed_out +
			     before.handed_over + before.rejected + 1);
}

/* ---- a stream reader for handed-over streams ---- */

struct sink {
	uv_stream_t *stream;
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	uint64_t raft_id;
	char address[LISTENER_ADDRESS_MAX + 1];
	char peer_ip[INET_ADDRSTRLEN]; /* source address of the connection */
	int n_calls;
	uint8_t *data;
	size_t len, cap;
	bool ended;
};

static void sink_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct sink *k = h->data;
	(void)suggested;
	if (k->cap - k->len < 4096) {
		k->cap = k->cap * 2 + 65536;
		k->data = realloc(k->data, k->cap);
	}
	buf->base = (char *)k->data + k->len;
	buf->len = k->cap - k->len;
}

static void sink_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct sink *k = s->data;
	(void)buf;
	if (nread > 0)
		k->len += (size_t)nread;
	if (nread < 0) {
		k->ended = true;
		uv_read_stop(s);
	}
}

static void sink_take(struct sink *k, uv_stream_t *s)
{
	struct sockaddr_in peer;
	int plen = sizeof peer;

	k->n_calls++;
	if (k->stream != NULL) { /* only one expected: drop extras */
		listener_stream_close(s);
		return;
	}
	k->stream = s;
	s->data = k;
	if (uv_tcp_getpeername((uv_tcp_t *)s, (struct sockaddr *)&peer, &plen) == 0)
		uv_ip4_name(&peer, k->peer_ip, sizeof k->peer_ip);
	uv_read_start(s, sink_alloc_cb, sink_read_cb);
}

static void sink_handler(void *arg, uv_stream_t *s, const char *tablet_id)
{
	struct sink *k = arg;
	snprintf(k->tablet_id, sizeof k->tablet_id, "%s", tablet_id);
	sink_take(k, s);
}

static void fake_accept_cb(void *owner, uint64_t id, const char *address,
			   struct uv_stream_s *s)
{
	struct raft_uv_transport *t = owner;
	struct sink *k = t->data;
	k->raft_id = id;
	snprintf(k->address, sizeof k->address, "%s", address);
	sink_take(k, s);
}

/* The same as raft_uv's accept callback (what t.listen takes). */
static void fake_raft_accept_cb(struct raft_uv_transport *t, raft_id id, const char *address,
				struct uv_stream_s *s)
{
	fake_accept_cb(t, id, address, s);
}

static bool sink_called(void *p)
{
	return ((struct sink *)p)->n_calls > 0;
}

struct sink_wait {
	struct sink *k;
	size_t len;
};

static bool sink_has(void *p)
{
	struct sink_wait *w = p;
	return w->k->len >= w->len || w->k->ended;
}

static void sink_free(struct sink *k)
{
	if (k->stream != NULL)
		listener_stream_close(k->stream);
	free(k->data);
	memset(k, 0, sizeof *k);
}

static uint8_t *make_payload(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n);
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(test_rand(&s) >> 24);
	return p;
}

/* ---- (a) preamble handling ---- */

TEST(parses_addresses)
{
	struct sockaddr_in a;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(listener_parse_address("127.0.0.2:9100", &a, errmsg));
	CHECK_EQ_INT(ntohs(a.sin_port), 9100);
	CHECK_EQ_INT(ntohl(a.sin_addr.s_addr), 0x7f000002);
	CHECK_OK(listener_parse_address("0.0.0.0:0", &a, errmsg));
	CHECK_EQ_INT(listener_parse_address("127.0.0.1", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("127.0.0.1:", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("127.0.0.1:65536", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("127.0.0.1:99999999999999999999", &a, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("127.0.0.1:8x", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("localhost:80", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address("::1:80", &a, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_parse_address(":80", &a, errmsg), DOCRAFT_EINVAL);
}

TEST(encodes_preambles)
{
	uint8_t b[LISTENER_PREAMBLE_MAX];
	char id64[LISTENER_TABLET_ID_MAX + 2];
	char addr255[LISTENER_ADDRESS_MAX + 2];
	static const uint8_t want[] = {'D', 'R', 'F', 'T', 1, 1, 2, 't', '1', 0, 0, 0, 0,
				       0, 0, 1, 2, 3, 'a', ':', '1'};

	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RAFT, "t1", 0x0102, "a:1"), sizeof want);
	CHECK_EQ_MEM(b, sizeof want, want, sizeof want);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RPC, "", 0, NULL), 7);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_COPY, "", 0, NULL), 0);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RAFT, "t1", 0, "a:1"), 0);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RAFT, "t1", 1, ""), 0);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RMUX, "", 0, NULL), 7);
	CHECK_EQ_INT(listener_preamble_encode(b, 5, "t1", 1, "a:1"), 0);
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_COPY, "t 1", 0, NULL), 0);
	memset(id64, 'x', sizeof id64);
	id64[LISTENER_TABLET_ID_MAX] = '\0';
	memset(addr255, 'y', sizeof addr255);
	addr255[LISTENER_ADDRESS_MAX] = '\0';
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_RAFT, id64, UINT64_MAX, addr255),
		     LISTENER_PREAMBLE_MAX);
	id64[LISTENER_TABLET_ID_MAX] = 'x';
	id64[LISTENER_TABLET_ID_MAX + 1] = '\0';
	CHECK_EQ_INT(listener_preamble_encode(b, LISTENER_COPY, id64, 0, NULL), 0);
}

TEST(open_fails_synchronously)
{
	uv_loop_t loop;
	struct listener *l, *l2;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char addr[64];

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	CHECK(strncmp(listener_address(l), "127.0.0.1:", 10) == 0);
	CHECK(strcmp(listener_address(l), "127.0.0.1:0") != 0);
	/* The same address again: in use. */
	snprintf(addr, sizeof addr, "%s", listener_address(l));
	CHECK_EQ_INT(listener_open(&loop, addr, &l2, errmsg), DOCRAFT_EIO);
	CHECK(l2 == NULL);
	test_note("busy port: %s", errmsg);
	CHECK_EQ_INT(listener_open(&loop, "nowhere:1", &l2, errmsg), DOCRAFT_EINVAL);
	CHECK(l2 == NULL);
	/* An address not configured on this host. */
	CHECK_EQ_INT(listener_open(&loop, "192.0.2.1:0", &l2, errmsg), DOCRAFT_EIO);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

TEST(rejects_bad_preambles)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t b[LISTENER_PREAMBLE_MAX + 512];
	size_t n;

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);

	expect_rejected(&loop, l, "hello, is anybody there?\r\n", 26, "garbage", MALFORMED);
	n = listener_preamble_encode(b, LISTENER_RAFT, "t1", 7, "127.0.0.9:1");
	b[0] = 'X';
	expect_rejected(&loop, l, b, n, "wrong magic", MALFORMED);
	b[0] = 'D';
	b[4] = 2;
	expect_rejected(&loop, l, b, n, "wrong version", MALFORMED);
	b[4] = 1;
	b[5] = 0;
	expect_rejected(&loop, l, b, n, "kind 0", MALFORMED);
	b[5] = 5;
	expect_rejected(&loop, l, b, n, "kind 5", MALFORMED);
	b[5] = LISTENER_RMUX; /* valid, but no handler here */
	expect_rejected(&loop, l, b, n, "RMUX without a handler", UNROUTABLE);
	b[5] = 0xff;
	expect_rejected(&loop, l, b, n, "kind 255", MALFORMED);

	/* Lengths out of range. */
	memset(b, 'z', sizeof b);
	memcpy(b, "DRFT\x01\x01\x00", 7);
	expect_rejected(&loop, l, b, 40, "RAFT with empty tablet id", MALFORMED);
	memcpy(b, "DRFT\x01\x03\x00", 7);
	expect_rejected(&loop, l, b, 40, "COPY with empty tablet id", MALFORMED);
	memcpy(b, "DRFT\x01\x01\x41", 7);
	expect_rejected(&loop, l, b, 7 + 65 + 9 + 10, "tablet id of 65 bytes", MALFORMED);
	memcpy(b, "DRFT\x01\x02\xff", 7);
	expect_rejected(&loop, l, b, sizeof b, "tablet id of 255 bytes", MALFORMED);
	n = listener_preamble_encode(b, LISTENER_RAFT, "t1", 7, "a:1");
	b[7 + 2 + 8] = 0;
	expect_rejected(&loop, l, b, n, "empty address", MALFORMED);
	n = listener_preamble_encode(b, LISTENER_RAFT, "t1", 7, "a:1");
	memset(b + 9, 0, 8);
	expect_rejected(&loop, l, b, n, "raft id 0", MALFORMED);

	/* Characters. */
	n = listener_preamble_encode(b, LISTENER_COPY, "t1", 0, NULL);
	b[8] = ' ';
	expect_rejected(&loop, l, b, n, "space in tablet id", MALFORMED);
	b[8] = 0;
	expect_rejected(&loop, l, b, n, "NUL in tablet id", MALFORMED);
	n = listener_preamble_encode(b, LISTENER_RAFT, "t1", 7, "a:1");
	b[n - 1] = 0x80;
	expect_rejected(&loop, l, b, n, "non-ASCII address", MALFORMED);

	/* Truncated, then EOF: closed at once, not at the 10 s timeout. */
	{
		struct listener_stats st;
		struct client c;
		n = listener_preamble_encode(b, LISTENER_RAFT, "t1", 7, "127.0.0.9:1");
		client_connect(&loop, &c, listener_address(l));
		client_write(&c, b, n - 3);
		client_shutdown(&c);
		CHECK(loop_run_until(&loop, client_ended, &c, 3000));
		client_close(&loop, &c);
		listener_get_stats(l, &st);
		CHECK_EQ_U64(st.dropped, 1);
		CHECK_EQ_U64(st.timed_out, 0);
	}

	/* Valid, but nobody is there to take it. */
	n = listener_preamble_encode(b, LISTENER_RAFT, "t-unknown", 7, "127.0.0.9:1");
	memcpy(b + n, "raft handshake bytes", 20);
	expect_rejected(&loop, l, b, n + 20, "RAFT for an unknown tablet", UNROUTABLE);
	n = listener_preamble_encode(b, LISTENER_RPC, "", 0, NULL);
	expect_rejected(&loop, l, b, n, "RPC without a handler", UNROUTABLE);
	n = listener_preamble_encode(b, LISTENER_COPY, "t1", 0, NULL);
	expect_rejected(&loop, l, b, n, "COPY without a handler", UNROUTABLE);

	/* The listener still serves. */
	{
		struct sink k = {0};
		struct sink_wait w = {&k, 3};
		struct client c;
		CHECK_OK(listener_set_handler(l, LISTENER_RPC, sink_handler, &k, errmsg));
		n = listener_preamble_encode(b, LISTENER_RPC, "", 0, NULL);
		memcpy(b + n, "abc", 3);
		client_connect(&loop, &c, listener_address(l));
		client_write(&c, b, n + 3);
		CHECK(loop_run_until(&loop, sink_has, &w, 3000));
		CHECK_EQ_MEM(k.data, k.len, "abc", 3);
		CHECK_EQ_STR(k.tablet_id, "");
		sink_free(&k);
		client_close(&loop, &c);
	}
	CHECK_EQ_INT(listener_set_handler(l, LISTENER_RAFT, sink_handler, NULL, errmsg),
		     DOCRAFT_EINVAL);

	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

TEST(closes_silent_connections)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct client silent, partial;
	uint64_t t0;

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	listener_set_timeout(l, 150);
	t0 = uv_hrtime();
	client_connect(&loop, &silent, listener_address(l));
	client_connect(&loop, &partial, listener_address(l));
	client_write(&partial, "DRFT\x01\x01", 6);
	CHECK(loop_run_until(&loop, client_ended, &silent, 5000));
	CHECK(loop_run_until(&loop, client_ended, &partial, 5000));
	/* Not before the timeout. */
	CHECK((uv_hrtime() - t0) / 1000000 >= 140);
	{
		struct listener_stats st;
		listener_get_stats(l, &st);
		CHECK_EQ_U64(st.accepted, 2);
		CHECK_EQ_U64(st.timed_out, 2);
		CHECK_EQ_U64(st.handed_over + st.malformed + st.dropped + st.unroutable, 0);
	}
	client_close(&loop, &silent);
	client_close(&loop, &partial);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

/* RPC and COPY reach their handlers with the tablet id and every byte that
 * followed the preamble in the same write. */
TEST(routes_rpc_and_copy)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	static const struct {
		int kind;
		const char *tablet;
		size_t payload;
	} cases[] = {
		{LISTENER_RPC, "", 5},
		{LISTENER_RPC, "t9", 1},
		{LISTENER_COPY, "tablet-7", 12},
		{LISTENER_COPY, "c0ffee00c0ffee00c0ffee00c0ffee00", 300 * 1024},
		{LISTENER_RPC, "", 1024 * 1024},
	};

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sink rpc = {0}, copy = {0};
		struct sink *k = cases[i].kind == LISTENER_RPC ? &rpc : &copy;
		struct sink_wait w = {k, cases[i].payload};
		uint8_t *payload = make_payload(cases[i].payload, i + 1);
		uint8_t *msg = malloc(LISTENER_PREAMBLE_MAX + cases[i].payload);
		struct client c;
		size_t n;

		CHECK_OK(listener_set_handler(l, LISTENER_RPC, sink_handler, &rpc, errmsg));
		CHECK_OK(listener_set_handler(l, LISTENER_COPY, sink_handler, &copy, errmsg));
		n = listener_preamble_encode(msg, cases[i].kind, cases[i].tablet, 0, NULL);
		CHECK(n > 0);
		memcpy(msg + n, payload, cases[i].payload);
		client_connect(&loop, &c, listener_address(l));
		client_write(&c, msg, n + cases[i].payload); /* ONE write */
		CHECK(loop_run_until(&loop, sink_has, &w, 10000));
		CHECK_EQ_INT(k->n_calls, 1);
		CHECK_EQ_INT(rpc.n_calls + copy.n_calls, 1);
		CHECK_EQ_STR(k->tablet_id, cases[i].tablet);
		CHECK_EQ_MEM(k->data, k->len, payload, cases[i].payload);
		/* The handler owns the stream: closing it ends the client. */
		sink_free(k);
		CHECK(loop_run_until(&loop, client_ended, &c, 3000));
		client_close(&loop, &c);
		free(payload);
		free(msg);
	}
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

/* A RAFT preamble followed at once by raft_uv-like bytes: the registered
 * accept callback gets the sender and a stream holding exactly those bytes.
 * Also sent one byte per loop iteration. */
TEST(hands_raft_streams_over_exactly)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct raft_uv_transport fake = {0}, other = {0};
	uint8_t msg[LISTENER_PREAMBLE_MAX + 64];
	static const char hs[] = "\x01\0\0\0\0\0\0\0 raft's own handshake";
	size_t n;

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	CHECK_OK_MSG(listener_register(l, "t1", &fake, fake_accept_cb, errmsg), errmsg);
	CHECK_EQ_INT(listener_register(l, "t1", &fake, fake_accept_cb, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_register(l, "", &fake, fake_accept_cb, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(listener_n_registered(l), 1);
	n = listener_preamble_encode(msg, LISTENER_RAFT, "t1", 0xfedcba9876543210ull,
				     "127.0.0.3:9100");
	memcpy(msg + n, hs, sizeof hs);

	for (int bytewise = 0; bytewise <= 1; bytewise++) {
		struct sink k = {0};
		struct sink_wait w = {&k, sizeof hs};
		struct client c;

		fake.data = &k;
		client_connect(&loop, &c, listener_address(l));
		if (!bytewise) {
			client_write(&c, msg, n + sizeof hs);
		} else {
			for (size_t i = 0; i < n; i++) {
				client_write(&c, msg + i, 1);
				for (int j = 0; j < 3; j++)
					uv_run(&loop, UV_RUN_NOWAIT);
			}
			CHECK_EQ_INT(k.n_calls, 1); /* handed over on the last byte */
			CHECK_EQ_INT(k.len, 0);
			client_write(&c, hs, sizeof hs);
		}
		CHECK(loop_run_until(&loop, sink_has, &w, 5000));
		CHECK_EQ_INT(k.n_calls, 1);
		CHECK_EQ_U64(k.raft_id, 0xfedcba9876543210ull);
		CHECK_EQ_STR(k.address, "127.0.0.3:9100");
		CHECK_EQ_MEM(k.data, k.len, hs, sizeof hs);
		sink_free(&k);
		client_close(&loop, &c);
	}

	/* Unregistered: closed again. */
	listener_unregister(l, "t1", &other); /* not its owner: no-op */
	CHECK_EQ_INT(listener_n_registered(l), 1);
	listener_unregister(l, "t1", &fake);
	listener_unregister(l, "t1", &fake);
	CHECK_EQ_INT(listener_n_registered(l), 0);
	expect_rejected(&loop, l, msg, n + sizeof hs, "after unregister", UNROUTABLE);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

/* The peer identity check of a registration: what it is given (the claim
 * and the socket's peer), a refusal (closed, counted as rejected, nothing
 * handed over), and listener_peer_matches comparing IPs, not ports. */
struct check_seen {
	int calls;
	uint64_t id;
	char address[LISTENER_ADDRESS_MAX + 1];
	char peer_ip[INET_ADDRSTRLEN];
	bool answer;
};

static bool record_check(void *arg, uint64_t id, const char *address,
			 const struct sockaddr_in *peer)
{
	struct check_seen *c = arg;
	c->calls++;
	c->id = id;
	snprintf(c->address, sizeof c->address, "%s", address);
	inet_ntop(AF_INET, &peer->sin_addr, c->peer_ip, sizeof c->peer_ip);
	return c->answer && listener_peer_matches(address, peer);
}

TEST(raft_peer_check)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct raft_uv_transport fake = {0};
	struct check_seen seen = {0};
	struct sockaddr_in peer;
	uint8_t msg[LISTENER_PREAMBLE_MAX];
	struct sink k = {0};
	struct client c;
	size_t n;

	CHECK_OK(listener_parse_address("127.0.0.1:5", &peer, errmsg));
	CHECK(listener_peer_matches("127.0.0.1:9100", &peer));
	CHECK(!listener_peer_matches("127.0.0.2:5", &peer));
	CHECK(!listener_peer_matches("not an address", &peer));

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	CHECK_OK(listener_register(l, "t1", &fake, fake_accept_cb, errmsg));
	listener_set_peer_check(l, "t1", &fake, record_check, &seen);
	fake.data = &k;

	/* A claim of another IP than the connection's: refused. */
	seen.answer = true;
	n = listener_preamble_encode(msg, LISTENER_RAFT, "t1", 7, "127.0.0.3:9100");
	expect_rejected(&loop, l, msg, n, "claim of another IP", REJECTED);
	CHECK_EQ_INT(seen.calls, 1);
	CHECK_EQ_U64(seen.id, 7);
	CHECK_EQ_STR(seen.address, "127.0.0.3:9100");
	CHECK_EQ_STR(seen.peer_ip, "127.0.0.1");
	CHECK_EQ_INT(k.n_calls, 0);

	/* The check says no (not a member): refused whatever the address. */
	seen.answer = false;
	n = listener_preamble_encode(msg, LISTENER_RAFT, "t1", 7, "127.0.0.1:9100");
	expect_rejected(&loop, l, msg, n, "not a member", REJECTED);
	CHECK_EQ_INT(k.n_calls, 0);

	/* Accepted: handed over as before. */
	seen.answer = true;
	client_connect(&loop, &c, listener_address(l));
	client_write(&c, msg, n);
	CHECK(loop_run_until(&loop, sink_called, &k, 5000));
	CHECK_EQ_INT(k.n_calls, 1);
	CHECK_EQ_INT(seen.calls, 3);
	sink_free(&k);
	client_close(&loop, &c);

	listener_unregister(l, "t1", &fake);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

TEST(close_drops_pending_connections)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct client c[3];

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	for (int i = 0; i < 3; i++)
		client_connect(&loop, &c[i], listener_address(l));
	client_write(&c[1], "DR", 2);
	client_write(&c[2], "DRFT\x01\x01\x02t1", 9);
	for (int j = 0; j < 5; j++)
		uv_run(&loop, UV_RUN_NOWAIT);
	close_listener(&loop, l);
	for (int i = 0; i < 3; i++) {
		CHECK(loop_run_until(&loop, client_ended, &c[i], 3000));
		client_close(&loop, &c[i]);
	}
	CHECK_OK(loop_finish(&loop));
}

/* ---- (b) the transport without raft ---- */

struct conn_result {
	bool done;
	int status;
	uv_stream_t *stream;
};

static void conn_cb(struct raft_uv_connect *req, struct uv_stream_s *s, int status)
{
	struct conn_result *r = req->data;
	r->done = true;
	r->status = status;
	r->stream = s;
}

static bool conn_done(void *p)
{
	return ((struct conn_result *)p)->done;
}

struct tclose {
	bool done;
	bool conn_seen_first;
	struct conn_result *conn;
};

static struct tclose *tclose_target;

static void tclose_cb(struct raft_uv_transport *t)
{
	(void)t;
	tclose_target->done = true;
	tclose_target->conn_seen_first = tclose_target->conn == NULL || tclose_target->conn->done;
}

TEST(transport_connects_refuses_and_cancels)
{
	uv_loop_t loop;
	struct listener *l, *l2, *gone;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char gone_addr[64];
	struct raft_uv_transport t, bad, fake = {0}, other = {0};
	struct raft_uv_connect req;
	struct conn_result r;
	struct sink k = {0};
	struct tclose tc = {0};

	/* Server 1 (127.0.0.1) hosts a fake "tx" replica; server 2 (127.0.0.2)
	 * the transport under test. */
	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.2:0", &l2, errmsg), errmsg);
	CHECK_EQ_INT(transport_init(&bad, l2, "", errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(transport_init(&bad, l2, "a b", errmsg), DOCRAFT_EINVAL);
	CHECK_OK_MSG(transport_init(&t, l2, "tx", errmsg), errmsg);
	CHECK_EQ_INT(t.init(&t, 0, "127.0.0.2:1"), RAFT_INVALID);
	CHECK_OK(t.init(&t, 42, "127.0.0.2:4242"));

	fake.data = &k;
	CHECK_OK(listener_register(l, "tx", &fake, fake_accept_cb, errmsg));
	memset(&r, 0, sizeof r);
	req.data = &r;
	CHECK_OK(t.connect(&t, &req, 7, listener_address(l), conn_cb));
	CHECK(!r.done);
	CHECK(loop_run_until(&loop, conn_done, &r, 5000));
	CHECK_EQ_INT(r.status, 0);
	CHECK(r.stream != NULL);
	CHECK(loop_run_until(&loop, sink_called, &k, 5000));
	CHECK_EQ_U64(k.raft_id, 42);
	CHECK_EQ_STR(k.address, "127.0.0.2:4242");
	CHECK_EQ_STR(k.peer_ip, "127.0.0.2"); /* bound to its server's address */
	listener_stream_close(r.stream);
	sink_free(&k);
	listener_unregister(l, "tx", &fake);

	/* Listening on a tablet already registered on its server fails. */
	CHECK_OK(listener_register(l2, "tx", &other, fake_accept_cb, errmsg));
	CHECK_EQ_INT(t.listen(&t, fake_raft_accept_cb), RAFT_BUSY);
	listener_unregister(l2, "tx", &other);

	/* Nobody listens there: the callback reports NOCONNECTION. */
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &gone, errmsg), errmsg);
	snprintf(gone_addr, sizeof gone_addr, "%s", listener_address(gone));
	close_listener(&loop, gone);
	memset(&r, 0, sizeof r);
	CHECK_OK(t.connect(&t, &req, 7, gone_addr, conn_cb));
	CHECK(loop_run_until(&loop, conn_done, &r, 5000));
	CHECK_EQ_INT(r.status, RAFT_NOCONNECTION);
	CHECK(r.stream == NULL);
	/* Unparsable address: synchronous failure, no callback. */
	memset(&r, 0, sizeof r);
	CHECK_EQ_INT(t.connect(&t, &req, 7, "peer.example:1", conn_cb), RAFT_NOCONNECTION);
	for (int i = 0; i < 3; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	CHECK(!r.done);

	/* Close in the middle of a connect: CANCELED, before the close callback,
	 * and the close itself is asynchronous. */
	CHECK_OK(t.listen(&t, fake_raft_accept_cb));
	CHECK_EQ_INT(listener_n_registered(l2), 1);
	memset(&r, 0, sizeof r);
	CHECK_OK(t.connect(&t, &req, 7, listener_address(l), conn_cb));
	tc.conn = &r;
	tclose_target = &tc;
	t.close(&t, tclose_cb);
	CHECK(!tc.done && !r.done);
	CHECK_EQ_INT(listener_n_registered(l2), 0);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &tc.done, 5000));
	CHECK(r.done);
	CHECK_EQ_INT(r.status, RAFT_CANCELED);
	CHECK(tc.conn_seen_first);
	transport_close(&t);
	CHECK(t.impl == NULL);

	/* A transport that raft never used closes without a close call. */
	CHECK_OK(transport_init(&t, l2, "ty", errmsg));
	transport_close(&t);

	close_listener(&loop, l2);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

/* ---- (c) many groups, one process, one port per server ---- */

#define N_SERVERS 3

struct tablet;

struct replica {
	struct tablet *tab;
	int idx;
	char dir[300];
	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport transport;
	struct seq_fsm fsm;
	bool open;
	bool closing;
};

struct tablet {
	const char *id;
	struct replica r[N_SERVERS];
	struct seq_load load;
};

struct cluster {
	uv_loop_t loop;
	char root[256];
	struct listener *l[N_SERVERS];
	char address[N_SERVERS][32];
	struct tablet tabs[2];
};

static void replica_open(struct cluster *cl, struct replica *rep)
{
	struct raft_configuration conf;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	seq_fsm_reset(&rep->fsm);
	CHECK_OK_MSG(transport_init(&rep->transport, cl->l[rep->idx], rep->tab->id, errmsg),
		     errmsg);
	CHECK_OK(raft_uv_init(&rep->io, &cl->loop, rep->dir, &rep->transport));
	raft_uv_set_segment_size(&rep->io, 1024 * 1024);
	raft_uv_set_connect_retry_delay(&rep->io, 200);
	rv = raft_init(&rep->raft, &rep->io, &rep->fsm.fsm, (raft_id)rep->idx + 1,
		       cl->address[rep->idx]);
	CHECK_OK_MSG(rv, raft_errmsg(&rep->raft));
	rep->raft.data = rep;
	raft_set_election_timeout(&rep->raft, 1000);
	raft_set_heartbeat_timeout(&rep->raft, 100);

	raft_configuration_init(&conf);
	for (int i = 0; i < N_SERVERS; i++)
		CHECK_OK(raft_configuration_add(&conf, (raft_id)i + 1, cl->address[i], RAFT_VOTER));
	rv = raft_bootstrap(&rep->raft, &conf);
	raft_configuration_close(&conf);
	CHECK_MSG(rv == 0 || rv == RAFT_CANTBOOTSTRAP, "bootstrap: %s", raft_strerror(rv));
	CHECK_OK_MSG(raft_start(&rep->raft), raft_errmsg(&rep->raft));
	rep->open = true;
}

static void replica_close_cb(struct raft *r)
{
	struct replica *rep = r->data;
	raft_uv_close(&rep->io);
	transport_close(&rep->transport);
	rep->open = false;
	rep->closing = false;
}

static void replica_close(struct replica *rep)
{
	if (!rep->open || rep->closing)
		return;
	rep->closing = true;
	raft_close(&rep->raft, replica_close_cb);
}

static bool tablet_closed(void *p)
{
	struct tablet *tab = p;
	for (int i = 0; i < N_SERVERS; i++)
		if (tab->r[i].open)
			return false;
	return true;
}

static struct replica *tablet_leader(struct tablet *tab)
{
	for (int i = 0; i < N_SERVERS; i++) {
		struct replica *rep = &tab->r[i];
		if (rep->open && !rep->closing && raft_state(&rep->raft) == RAFT_LEADER)
			return rep;
	}
	return NULL;
}

static bool tablet_has_leader(void *p)
{
	return tablet_leader(p) != NULL;
}

/* Every open replica (all N of them) applied [0, target). */
static bool tablet_caught_up(struct tablet *tab)
{
	struct replica *leader = tablet_leader(tab);

	seq_load_pump(&tab->load, leader != NULL ? &leader->raft : NULL);
	if (!seq_load_acked(&tab->load))
		return false;
	for (int i = 0; i < N_SERVERS; i++)
		if (!tab->r[i].open || !seq_fsm_has(&tab->r[i].fsm, tab->load.target))
			return false;
	return true;
}

static bool t_caught_up(void *p)
{
	return tablet_caught_up(p);
}

struct t2_while_t1_closes {
	struct tablet *t1, *t2;
};

static bool t1_closed_t2_caught_up(void *p)
{
	struct t2_while_t1_closes *x = p;
	bool up = tablet_caught_up(x->t2);
	return tablet_closed(x->t1) && up;
}

static struct listener *server1;

static bool t2_caught_up_s1_refused_t1(void *p)
{
	struct t2_while_t1_closes *x = p;
	struct listener_stats st;
	bool up = tablet_caught_up(x->t2);
	listener_get_stats(server1, &st);
	return up && st.unroutable > 0 && !x->t1->r[0].open;
}

static bool all_closed(void *p)
{
	struct cluster *cl = p;
	return tablet_closed(&cl->tabs[0]) && tablet_closed(&cl->tabs[1]);
}

/* Three listeners, same port, 127.0.0.1-3. */
static void open_servers(struct cluster *cl)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	for (int attempt = 0; attempt < 20; attempt++) {
		const char *a0;
		unsigned port;
		int ok = 1;

		CHECK_OK_MSG(listener_open(&cl->loop, "127.0.0.1:0", &cl->l[0], errmsg), errmsg);
		a0 = listener_address(cl->l[0]);
		port = (unsigned)atoi(strchr(a0, ':') + 1);
		snprintf(cl->address[0], sizeof cl->address[0], "%s", a0);
		for (int i = 1; i < N_SERVERS && ok; i++) {
			snprintf(cl->address[i], sizeof cl->address[i], "127.0.0.%d:%u", i + 1,
				 port);
			if (listener_open(&cl->loop, cl->address[i], &cl->l[i], errmsg) != 0) {
				test_note("port %u: %s, retrying", port, errmsg);
				for (int j = 0; j < i; j++)
					close_listener(&cl->loop, cl->l[j]);
				ok = 0;
			}
		}
		if (ok) {
			test_note("servers on %s, %s, %s", cl->address[0], cl->address[1],
				  cl->address[2]);
			return;
		}
	}
	CHECK_MSG(false, "no common free port on 127.0.0.1-3");
}

static void tablet_setup(struct cluster *cl, struct tablet *tab, const char *id)
{
	memset(tab, 0, sizeof *tab);
	tab->id = id;
	for (int i = 0; i < N_SERVERS; i++) {
		struct replica *rep = &tab->r[i];
		rep->tab = tab;
		rep->idx = i;
		snprintf(rep->dir, sizeof rep->dir, "%s/s%d-%s", cl->root, i + 1, id);
		CHECK_OK(mkdir(rep->dir, 0755));
	}
}

static void tablet_open(struct cluster *cl, struct tablet *tab)
{
	for (int i = 0; i < N_SERVERS; i++)
		replica_open(cl, &tab->r[i]);
}

static void tablet_close(struct tablet *tab)
{
	for (int i = 0; i < N_SERVERS; i++)
		replica_close(&tab->r[i]);
}

static void check_consistent(struct tablet *tab)
{
	for (int i = 0; i < N_SERVERS; i++) {
		struct replica *rep = &tab->r[i];
		CHECK_EQ_INT(rep->fsm.bad, 0);
		CHECK_EQ_INT(rep->fsm.distinct, tab->load.target);
		CHECK_EQ_MEM(rep->fsm.seen, SEQ_MAX, tab->r[0].fsm.seen, SEQ_MAX);
	}
}

TEST(two_tablets_three_servers_one_port_each)
{
	static struct cluster cl; /* large; keep it off the stack */
	struct tablet *t1 = &cl.tabs[0], *t2 = &cl.tabs[1];
	struct t2_while_t1_closes x = {t1, t2};
	struct listener_stats st;
	uint64_t t0 = uv_hrtime();

	log_init(); /* DOCRAFT_TRACE=debug shows the listener's decisions */
	memset(&cl, 0, sizeof cl);
	start_loop(&cl.loop);
	test_tmpdir_make(cl.root, "transport");
	open_servers(&cl);
	server1 = cl.l[0];
	tablet_setup(&cl, t1, "t1");
	tablet_setup(&cl, t2, "t2");

	/* Both tablets start and elect, over the three shared ports. */
	tablet_open(&cl, t1);
	tablet_open(&cl, t2);
	for (int i = 0; i < N_SERVERS; i++)
		CHECK_EQ_INT(listener_n_registered(cl.l[i]), 2);
	CHECK(loop_run_until(&cl.loop, tablet_has_leader, t1, 20000));
	CHECK(loop_run_until(&cl.loop, tablet_has_leader, t2, 20000));
	test_note("leaders after %.2f s: t1 %d, t2 %d", (double)(uv_hrtime() - t0) / 1e9,
		  tablet_leader(t1)->idx + 1, tablet_leader(t2)->idx + 1);

	/* 200 entries each, applied by all six replicas. */
	t1->load.target = 200;
	t2->load.target = 200;
	CHECK(loop_run_until(&cl.loop, t_caught_up, t1, 60000));
	CHECK(loop_run_until(&cl.loop, t_caught_up, t2, 60000));
	check_consistent(t1);
	check_consistent(t2);
	test_note("200 + 200 applied everywhere after %.2f s (%u + %u retried)",
		  (double)(uv_hrtime() - t0) / 1e9, t1->load.n_failed, t2->load.n_failed);

	/* Close t1's replica on server 1: its peers' raft_uv reconnect to
	 * server 1, whose listener now refuses t1 (unroutable) and still
	 * serves t2. */
	replica_close(&t1->r[0]);
	t2->load.target = 300;
	CHECK(loop_run_until(&cl.loop, t2_caught_up_s1_refused_t1, &x, 20000));
	listener_get_stats(cl.l[0], &st);
	test_note("server 1 refused %" PRIu64 " t1 connections", st.unroutable);

	/* Close the rest of t1 while t2 keeps applying. */
	tablet_close(t1);
	t2->load.target = 400;
	CHECK(loop_run_until(&cl.loop, t1_closed_t2_caught_up, &x, 60000));
	check_consistent(t2);
	for (int i = 0; i < N_SERVERS; i++)
		CHECK_EQ_INT(listener_n_registered(cl.l[i]), 1);
	test_note("t1 closed, t2 at 400 after %.2f s", (double)(uv_hrtime() - t0) / 1e9);

	/* Reopen t1 from its directories: it elects, replays, takes more. */
	memset(t1->load.state, 0, sizeof t1->load.state);
	for (unsigned seq = 0; seq < 200; seq++)
		t1->load.state[seq] = 2; /* committed before the restart */
	t1->load.target = 250;
	tablet_open(&cl, t1);
	CHECK(loop_run_until(&cl.loop, tablet_has_leader, t1, 20000));
	CHECK(loop_run_until(&cl.loop, t_caught_up, t1, 60000));
	check_consistent(t1);
	for (int i = 0; i < N_SERVERS; i++)
		CHECK(raft_last_index(&t1->r[i].raft) >= 251); /* config + 200 + 50 */
	/* t2 was not disturbed. */
	t2->load.target = 450;
	CHECK(loop_run_until(&cl.loop, t_caught_up, t2, 60000));
	check_consistent(t2);
	test_note("t1 reopened at 250, t2 at 450 after %.2f s", (double)(uv_hrtime() - t0) / 1e9);

	for (int i = 0; i < N_SERVERS; i++) {
		listener_get_stats(cl.l[i], &st);
		test_note("server %d: accepted %" PRIu64 ", handed over %" PRIu64
			  ", unroutable %" PRIu64 ", malformed %" PRIu64 ", timed out %" PRIu64,
			  i + 1, st.accepted, st.handed_over, st.unroutable, st.malformed,
			  st.timed_out);
		CHECK(st.handed_over >= 2); /* raft traffic of both tablets came in */
		CHECK_EQ_U64(st.malformed + st.timed_out, 0);
	}

	/* Close everything. */
	tablet_close(t1);
	tablet_close(t2);
	CHECK(loop_run_until(&cl.loop, all_closed, &cl, 20000));
	for (int i = 0; i < N_SERVERS; i++)
		close_listener(&cl.loop, cl.l[i]);
	CHECK_OK(loop_finish(&cl.loop));
	test_tmpdir_remove(cl.root);
	CHECK(access(cl.root, F_OK) != 0);
}

TEST_MAIN(T(parses_addresses), T(encodes_preambles), T(open_fails_synchronously),
	  T(rejects_bad_preambles), T(closes_silent_connections), T(routes_rpc_and_copy),
	  T(hands_raft_streams_over_exactly), T(raft_peer_check),
	  T(close_drops_pending_connections),
	  T(transport_connects_refuses_and_cancels), T(two_tablets_three_servers_one_port_each))
