/* One port per server process: accept, read the preamble, hand over.
 *
 * Design. raft_uv_transport hands raft_uv a connected stream and raft_uv
 * then writes and reads its own framing directly on it (on the accepting
 * side it first expects its own handshake, which the peer's raft_uv sends
 * right after our preamble, usually in the same TCP segment). So the
 * listener must consume exactly the preamble and not one byte more: anything
 * it read past the preamble would be lost to the new owner, because libuv
 * has no "unread".
 *
 * The rule that makes this exact, borrowed from canonical/raft's
 * src/uv_tcp_listen.c: the alloc callback never offers more buffer than the
 * bytes still missing from the current parse step (want - have). read(2)
 * cannot return more than the buffer, so the kernel keeps everything after
 * the preamble. The preamble is parsed (listener_preamble_parse, pure, so
 * it can be fuzzed) in at most three steps whose sizes are known in
 * advance: the fixed 7-byte head (magic, version, kind, tablet id length),
 * then the tablet id plus, for RAFT, the 8-byte sender id and the 1-byte
 * address length, then the address. When the last step
 * completes, the read callback calls uv_read_stop before anything else and
 * hands the stream over; a new owner that calls uv_read_start (raft_uv does
 * so inside its accept callback) simply continues reading from the kernel
 * buffer, in the same loop iteration or a later one (libuv polls level
 * triggered).
 *
 * Each connection in its preamble phase ("incoming") has two handles: the
 * stream-allocated TCP handle and a timer that closes a connection which stays
 * silent or incomplete for the preamble timeout. Every failure — bad magic,
 * version, kind, length or character, EOF, read error, timeout — is one
 * path: uv_close both handles, free in the close callbacks. Nothing from
 * the network is asserted. On hand-over only the timer is closed; the TCP
 * handle leaves our bookkeeping.
 *
 * l->n_handles counts every handle the listener still has to see closed
 * (the server socket, and the TCP handle and timer of each incoming). Once
 * listener_close has been called and it drops to zero, the listener is
 * freed and the caller's callback runs.
 *
 * RAFT connections are routed through a small chained hash table of
 * registered tablets (tablet id -> transport, accept callback). A tablet
 * that is not registered — not open here, or closed meanwhile — gets its
 * connection closed; the peer's raft_uv retries on its own schedule. */
#include "net/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "net/rpc_limits.h"

#define HEAD_SIZE 7     /* magic, version, kind, tablet id length */
#define RAFT_EXTRA 9    /* sender id, address length */
#define REG_BUCKETS 256 /* power of two */

struct reg {
	struct reg *next;
	void *owner;
	listener_accept_cb cb;
	listener_peer_check_cb check; /* NULL: every preamble is accepted */
	void *check_arg;
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
};

struct handler {
	listener_handler_cb cb;
	void *arg;
};

struct incoming {
	struct listener *l;
	struct incoming *prev, *next; /* in l->pending while reading the preamble */
	uv_tcp_t *tcp;                /* stream-allocated; NULL once handed over */
	uv_timer_t timer;
	unsigned n_open; /* handles of this incoming not yet closed */
	size_t have;     /* preamble bytes in buf */
	size_t want;     /* bytes buf must hold before the next parse step */
	uint32_t ip;     /* source address (network order), counted in l->pending_ips */
	bool counted;
	uint8_t buf[LISTENER_PREAMBLE_MAX];
};

struct listener {
	uv_loop_t *loop;
	uv_tcp_t server;
	struct sockaddr_in addr;
	char address[LISTENER_ADDRESS_TEXT_MAX + 1];
	uint64_t timeout_ms;
	struct handler handlers[LISTENER_RMUX + 1];
	struct incoming *pending; /* connections in their preamble phase */
	struct ip_counts pending_ips; /* the same, by source address */
	uint32_t max_pending, max_pending_per_ip;
	struct reg *buckets[REG_BUCKETS];
	size_t n_registered;
	unsigned n_handles; /* handles not yet closed, see the design note */
	bool closing;
	struct listener_stats stats;
	listener_close_cb close_cb;
	void *close_arg;
};

/* ---- small helpers ---- */

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return false;
	return true;
}

static bool valid_tablet_id(const char *id, bool may_be_empty)
{
	size_t n = strnlen(id, LISTENER_TABLET_ID_MAX + 1);
	if (n > LISTENER_TABLET_ID_MAX || (n == 0 && !may_be_empty))
		return false;
	return printable((const uint8_t *)id, n);
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static unsigned hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h & (REG_BUCKETS - 1);
}

static void *(*stream_alloc)(size_t) = malloc;
static void (*stream_free)(void *) = free;

void listener_set_stream_allocator(void *(*alloc)(size_t), void (*release)(void *))
{
	PRE(alloc != NULL && release != NULL);
	stream_alloc = alloc;
	stream_free = release;
}

static struct reg **find_reg(struct listener *l, const char *tablet_id)
{
	struct reg **pp = &l->buckets[hash(tablet_id)];
	while (*pp != NULL && strcmp((*pp)->tablet_id, tablet_id) != 0)
		pp = &(*pp)->next;
	return pp;
}

static void free_handle(uv_handle_t *h)
{
	stream_free(h);
}

/* ---- address parsing, preamble encoding ---- */

int listener_parse_address(const char *address, struct sockaddr_in *out, char *errmsg)
{
	char host[INET_ADDRSTRLEN];
	const char *colon;
	unsigned long port = 0;
	size_t hlen;

	if (address == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "no address");
	colon = strrchr(address, ':');
	if (colon == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "address '%.64s' has no port", address);
	hlen = (size_t)(colon - address);
	if (hlen == 0 || hlen >= sizeof host)
		return err_set(errmsg, DOCRAFT_EINVAL, "address '%.64s': bad IPv4 host", address);
	memcpy(host, address, hlen);
	host[hlen] = '\0';
	if (colon[1] == '\0')
		return err_set(errmsg, DOCRAFT_EINVAL, "address '%.64s': empty port", address);
	for (const char *p = colon + 1; *p != '\0' && port <= 65535; p++) {
		if (*p < '0' || *p > '9')
			port = 65536;
		else
			port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port > 65535)
		return err_set(errmsg, DOCRAFT_EINVAL, "address '%.64s': bad port", address);
	memset(out, 0, sizeof *out);
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return err_set(errmsg, DOCRAFT_EINVAL, "address '%.64s': not an IPv4 literal",
			       address);
	return 0;
}

void listener_format_address(const struct sockaddr_in *a, char *out)
{
	char ip[INET_ADDRSTRLEN];
	if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip) == NULL)
		strcpy(ip, "?");
	snprintf(out, LISTENER_ADDRESS_TEXT_MAX + 1, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
}

size_t listener_preamble_encode(uint8_t *buf, int kind, const char *tablet_id, uint64_t id,
				const char *address)
{
	size_t tlen, alen, n;

	if (kind != LISTENER_RAFT && kind != LISTENER_RPC && kind != LISTENER_COPY &&
	    kind != LISTENER_RMUX)
		return 0;
	if (tablet_id == NULL || !valid_tablet_id(tablet_id, kind == LISTENER_RPC ||
							     kind == LISTENER_RMUX))
		return 0;
	tlen = strlen(tablet_id);
	memcpy(buf, LISTENER_MAGIC, 4);
	buf[4] = LISTENER_VERSION;
	buf[5] = (uint8_t)kind;
	buf[6] = (uint8_t)tlen;
	memcpy(buf + HEAD_SIZE, tablet_id, tlen);
	n = HEAD_SIZE + tlen;
	if (kind != LISTENER_RAFT)
		return n;
	if (id == 0 || address == NULL)
		return 0;
	alen = strnlen(address, LISTENER_ADDRESS_MAX + 1);
	if (alen == 0 || alen > LISTENER_ADDRESS_MAX || !printable((const uint8_t *)address, alen))
		return 0;
	put_be64(buf + n, id);
	buf[n + 8] = (uint8_t)alen;
	memcpy(buf + n + RAFT_EXTRA, address, alen);
	return n + RAFT_EXTRA + alen;
}

/* ---- closing ---- */

/* Frees l once it is closing and its last handle is closed, then runs the
 * caller's callback (copied out first: l is gone by then). */
static void maybe_closed(struct listener *l)
{
	listener_close_cb cb = l->close_cb;
	void *arg = l->close_arg;

	if (!l->closing || l->n_handles > 0)
		return;
	ASSERT(l->pending == NULL);
	ip_counts_free(&l->pending_ips);
	free(l);
	if (cb != NULL)
		cb(arg);
}

/* One handle of an incoming is closed; the last one frees it. */
static void incoming_handle_closed(struct incoming *in)
{
	struct listener *l = in->l;

	ASSERT(in->n_open > 0 && l->n_handles > 0);
	in->n_open--;
	l->n_handles--;
	if (in->n_open == 0)
		free(in);
	maybe_closed(l);
}

static void tcp_close_cb(uv_handle_t *h)
{
	struct incoming *in = h->data;
	stream_free(h);
	incoming_handle_closed(in);
}

static void timer_close_cb(uv_handle_t *h)
{
	incoming_handle_closed(h->data);
}

static void unlink_incoming(struct incoming *in)
{
	struct listener *l = in->l;
	DLIST_REMOVE(l->pending, in);
	if (in->counted)
		ip_counts_remove(&l->pending_ips, in->ip);
	in->counted = false;
}

/* Drops a connection still in its preamble phase; counter is the
 * listener_stats field that counts the reason. */
static void abort_incoming(struct incoming *in, uint64_t *counter, const char *why)
{
	(*counter)++;
	LOG_DEBUG("listener %s: closing connection: %s", in->l->address, why);
	unlink_incoming(in);
	uv_close((uv_handle_t *)in->tcp, tcp_close_cb);
	uv_close((uv_handle_t *)&in->timer, timer_close_cb);
}

/* ---- preamble ---- */

int listener_preamble_parse(const uint8_t *b, size_t have, size_t *want,
			    struct listener_preamble *out)
{
	size_t tlen, body, alen;

	/* Step 1, the fixed head: magic, version, kind, tablet id length. */
	if (have < HEAD_SIZE) {
		*want = HEAD_SIZE;
		return 0;
	}
	if (memcmp(b, LISTENER_MAGIC, 4) != 0 || b[4] != LISTENER_VERSION)
		return -1;
	if (b[5] != LISTENER_RAFT && b[5] != LISTENER_RPC && b[5] != LISTENER_COPY &&
	    b[5] != LISTENER_RMUX)
		return -1;
	tlen = b[6];
	if (tlen > LISTENER_TABLET_ID_MAX ||
	    (tlen == 0 && b[5] != LISTENER_RPC && b[5] != LISTENER_RMUX))
		return -1;
	/* Step 2: the tablet id (and the RAFT sender id, address length). */
	body = HEAD_SIZE + tlen + (b[5] == LISTENER_RAFT ? RAFT_EXTRA : 0);
	if (have < body) {
		*want = body;
		return 0;
	}
	if (!printable(b + HEAD_SIZE, tlen))
		return -1;
	alen = 0;
	if (b[5] == LISTENER_RAFT) {
		if (get_be64(b + HEAD_SIZE + tlen) == 0 || b[HEAD_SIZE + tlen + 8] == 0)
			return -1;
		/* Step 3: the RAFT sender address. */
		alen = b[HEAD_SIZE + tlen + 8];
		if (have < body + alen) {
			*want = body + alen;
			return 0;
		}
		if (!printable(b + body, alen))
			return -1;
	}
	*want = body + alen;
	if (out != NULL) {
		out->kind = b[5];
		memcpy(out->tablet_id, b + HEAD_SIZE, tlen);
		out->tablet_id[tlen] = '\0';
		out->id = b[5] == LISTENER_RAFT ? get_be64(b + HEAD_SIZE + tlen) : 0;
		memcpy(out->address, b + body, alen);
		out->address[alen] = '\0';
	}
	return 1;
}

/* The registration's peer check on the claim and the socket's peer. */
static bool peer_accepted(const struct reg *r, uv_stream_t *s, uint64_t id, const char *address)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;

	if (uv_tcp_getpeername((uv_tcp_t *)s, (struct sockaddr *)&ss, &len) != 0 ||
	    ss.ss_family != AF_INET)
		return false;
	return r->check(r->check_arg, id, address, (const struct sockaddr_in *)&ss);
}

/* The preamble is complete: stop reading, leave our bookkeeping, dispatch. */
static void hand_over(struct incoming *in, const struct listener_preamble *pre)
{
	struct listener *l = in->l;
	uv_stream_t *s = (uv_stream_t *)in->tcp;
	const char *tablet_id = pre->tablet_id, *address = pre->address;
	int kind = pre->kind;
	uint64_t id = pre->id;

	uv_read_stop(s);

	/* The TCP handle is no longer ours; the timer closes and frees `in`. */
	unlink_incoming(in);
	in->tcp = NULL;
	in->n_open--;
	l->n_handles--;
	uv_close((uv_handle_t *)&in->timer, timer_close_cb);
	s->data = NULL;

	if (kind == LISTENER_RAFT) {
		struct reg *r = *find_reg(l, tablet_id);
		if (r == NULL) {
			l->stats.unroutable++;
			TLOG_DEBUG(tablet_id, 0,
				   "listener %s: raft connection from %llu (%s) for a tablet "
				   "not open here, closing",
				   l->address, (unsigned long long)id, address);
			listener_stream_close(s);
			return;
		}
		if (r->check != NULL && !peer_accepted(r, s, id, address)) {
			uint64_t n = ++l->stats.rejected;
			if ((n & (n - 1)) == 0)
				TLOG_WARN(tablet_id, 0,
					  "listener %s: raft connection claiming %llu (%s) "
					  "refused: not a member connecting from its address "
					  "(%llu refused so far)",
					  l->address, (unsigned long long)id, address,
					  (unsigned long long)n);
			listener_stream_close(s);
			return;
		}
		l->stats.handed_over++;
		TLOG_DEBUG(tablet_id, 0, "listener %s: raft connection from %llu (%s)", l->address,
			   (unsigned long long)id, address);
		r->cb(r->owner, id, address, s);
		return;
	}
	if (l->handlers[kind].cb == NULL) {
		l->stats.unroutable++;
		LOG_DEBUG("listener %s: no handler for connection kind %d, closing", l->address,
			  kind);
		listener_stream_close(s);
		return;
	}
	l->stats.handed_over++;
	l->handlers[kind].cb(l->handlers[kind].arg, s, tablet_id);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct incoming *in = h->data;
	(void)suggested;
	/* Never offer more than the bytes still missing: see the design note. */
	ASSERT(in->want > in->have && in->want <= sizeof in->buf);
	buf->base = (char *)in->buf + in->have;
	buf->len = in->want - in->have;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct incoming *in = s->data;
	struct listener_preamble pre;
	int rv = 0;

	(void)buf;
	if (nread == 0)
		return; /* EAGAIN */
	if (nread < 0) {
		abort_incoming(in, &in->l->stats.dropped,
			       nread == UV_EOF ? "EOF in preamble" : uv_strerror((int)nread));
		return;
	}
	ASSERT((size_t)nread <= in->want - in->have);
	in->have += (size_t)nread;
	/* A step that needs more raises want past have. */
	if (in->have == in->want)
		rv = listener_preamble_parse(in->buf, in->have, &in->want, &pre);
	if (rv < 0)
		abort_incoming(in, &in->l->stats.malformed, "malformed preamble");
	else if (rv > 0)
		hand_over(in, &pre);
}

static void timeout_cb(uv_timer_t *t)
{
	struct incoming *in = t->data;
	abort_incoming(in, &in->l->stats.timed_out, "preamble timeout");
}

/* The accept-stage connection cap: counts in (just accepted) by its source
 * address, or closes it when the listener already has max_pending
 * connections in their preamble phase, or max_pending_per_ip from that
 * address. Returns whether in lives on. */
static bool admit(struct incoming *in)
{
	struct listener *l = in->l;
	struct sockaddr_in sa;
	int len = sizeof sa;

	if (uv_tcp_getpeername(in->tcp, (struct sockaddr *)&sa, &len) == 0 &&
	    sa.sin_family == AF_INET)
		in->ip = sa.sin_addr.s_addr;
	if (l->pending_ips.total >= l->max_pending ||
	    ip_counts_get(&l->pending_ips, in->ip) >= l->max_pending_per_ip) {
		char ip[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &in->ip, ip, sizeof ip);
		/* Logged at 1, 2, 4... refusals: a flood must not flood the log. */
		if (((l->stats.refused + 1) & l->stats.refused) == 0)
			LOG_WARN("listener %s: refusing a connection from %s: %u connections "
				 "in their preamble, %u from that address (limits %u, %u)",
				 l->address, ip, l->pending_ips.total,
				 ip_counts_get(&l->pending_ips, in->ip), l->max_pending,
				 l->max_pending_per_ip);
		abort_incoming(in, &l->stats.refused, "too many connections in their preamble");
		return false;
	}
	ip_counts_add(&l->pending_ips, in->ip);
	in->counted = true;
	return true;
}

static void connection_cb(uv_stream_t *server, int status)
{
	struct listener *l = server->data;
	struct incoming *in;
	int rv;

	if (status < 0) {
		LOG_WARN("listener %s: accept: %s", l->address, uv_strerror(status));
		return;
	}
	in = xzalloc(sizeof *in);
	in->l = l;
	in->tcp = stream_alloc(sizeof *in->tcp);
	if (in->tcp == NULL)
		PANIC("out of memory");
	in->want = HEAD_SIZE;
	rv = uv_tcp_init(l->loop, in->tcp);
	ASSERT(rv == 0);
	in->tcp->data = in;
	rv = uv_timer_init(l->loop, &in->timer);
	ASSERT(rv == 0);
	in->timer.data = in;
	in->n_open = 2;
	l->n_handles += 2;
	DLIST_PUSH(l->pending, in);

	rv = uv_accept(server, (uv_stream_t *)in->tcp);
	l->stats.accepted++;
	if (rv != 0) {
		abort_incoming(in, &l->stats.dropped, uv_strerror(rv));
		return;
	}
	if (!admit(in))
		return;
	uv_tcp_nodelay(in->tcp, 1);
	rv = uv_timer_start(&in->timer, timeout_cb, l->timeout_ms, 0);
	ASSERT(rv == 0);
	rv = uv_read_start((uv_stream_t *)in->tcp, alloc_cb, read_cb);
	if (rv != 0)
		abort_incoming(in, &l->stats.dropped, uv_strerror(rv));
}

/* ---- public ---- */

static void free_listener_cb(uv_handle_t *h)
{
	free(h->data);
}

int listener_open(uv_loop_t *loop, const char *address, struct listener **out, char *errmsg)
{
	struct sockaddr_in addr;
	socklen_t alen = sizeof addr;
	struct listener *l;
	int one = 1;
	int fd, rv;

	*out = NULL;
	rv = listener_parse_address(address, &addr, errmsg);
	if (rv != 0)
		return rv;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(errmsg, DOCRAFT_EIO, "socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    listen(fd, SOMAXCONN) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &alen) != 0) {
		rv = err_set(errmsg, DOCRAFT_EIO, "listen on %s: %s", address, strerror(errno));
		close(fd);
		return rv;
	}

	l = xzalloc(sizeof *l);
	l->loop = loop;
	l->addr = addr;
	listener_format_address(&addr, l->address);
	l->timeout_ms = LISTENER_DEFAULT_TIMEOUT_MS;
	ip_counts_init(&l->pending_ips);
	l->max_pending = LISTENER_DEFAULT_MAX_PENDING;
	l->max_pending_per_ip = LISTENER_DEFAULT_MAX_PENDING_PER_IP;
	rv = uv_tcp_init(loop, &l->server);
	ASSERT(rv == 0);
	l->server.data = l;
	l->n_handles = 1;
	rv = uv_tcp_open(&l->server, fd);
	if (rv != 0)
		close(fd); /* not adopted by the handle */
	else
		rv = uv_listen((uv_stream_t *)&l->server, SOMAXCONN, connection_cb);
	if (rv != 0) {
		/* libuv refused a socket we just created: not expected. The
		 * handle closes on the next loop run and frees l; no callback
		 * reaches the caller. */
		rv = err_set(errmsg, DOCRAFT_EIO, "listen on %s: %s", address, uv_strerror(rv));
		uv_close((uv_handle_t *)&l->server, free_listener_cb);
		return rv;
	}
	{
		struct sigaction sa;
		if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
			LOG_WARN("listener %s: SIGPIPE is not ignored; a peer closing a "
				 "connection will kill this process", l->address);
	}
	LOG_INFO("listener: accepting on %s", l->address);
	*out = l;
	return 0;
}

const char *listener_address(const struct listener *l)
{
	return l->address;
}

const struct sockaddr_in *listener_sockaddr(const struct listener *l)
{
	return &l->addr;
}

uv_loop_t *listener_loop(const struct listener *l)
{
	return l->loop;
}

void listener_set_timeout(struct listener *l, uint64_t ms)
{
	PRE(ms > 0);
	l->timeout_ms = ms;
}

void listener_set_max_pending(struct listener *l, uint32_t total, uint32_t per_ip)
{
	PRE(total > 0 && per_ip > 0);
	l->max_pending = total;
	l->max_pending_per_ip = per_ip;
}

int listener_set_handler(struct listener *l, int kind, listener_handler_cb cb, void *arg,
			 char *errmsg)
{
	if (kind != LISTENER_RPC && kind != LISTENER_COPY && kind != LISTENER_RMUX)
		return err_set(errmsg, DOCRAFT_EINVAL, "no handler for connection kind %d", kind);
	l->handlers[kind].cb = cb;
	l->handlers[kind].arg = arg;
	return 0;
}

int listener_register(struct listener *l, const char *tablet_id, void *owner,
		      listener_accept_cb cb, char *errmsg)
{
	struct reg **pp, *r;

	PRE(!l->closing);
	PRE(cb != NULL);
	if (tablet_id == NULL || !valid_tablet_id(tablet_id, false))
		return err_set(errmsg, DOCRAFT_EINVAL, "bad tablet id");
	pp = find_reg(l, tablet_id);
	if (*pp != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "tablet %s is already registered on listener %s", tablet_id,
			       l->address);
	r = xzalloc(sizeof *r);
	r->owner = owner;
	r->cb = cb;
	strcpy(r->tablet_id, tablet_id);
	*pp = r;
	l->n_registered++;
	return 0;
}

void listener_unregister(struct listener *l, const char *tablet_id,
			 const void *owner)
{
	struct reg **pp = find_reg(l, tablet_id);
	struct reg *r = *pp;

	if (r == NULL || r->owner != owner)
		return;
	*pp = r->next;
	free(r);
	l->n_registered--;
}

void listener_set_peer_check(struct listener *l, const char *tablet_id,
			     const void *owner, listener_peer_check_cb cb, void *arg)
{
	struct reg *r = *find_reg(l, tablet_id);

	if (r == NULL || r->owner != owner)
		return;
	r->check = cb;
	r->check_arg = arg;
}

bool listener_peer_matches(const char *address, const struct sockaddr_in *peer)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct sockaddr_in a;

	if (listener_parse_address(address, &a, errmsg) != 0)
		return false;
	return peer->sin_family == AF_INET && a.sin_addr.s_addr == peer->sin_addr.s_addr;
}

size_t listener_n_registered(const struct listener *l)
{
	return l->n_registered;
}

void listener_get_stats(const struct listener *l, struct listener_stats *out)
{
	*out = l->stats;
}

void listener_stream_free(uv_handle_t *stream)
{
	stream_free(stream);
}

void listener_stream_close(uv_stream_t *stream)
{
	uv_close((uv_handle_t *)stream, free_handle);
}

static void server_close_cb(uv_handle_t *h)
{
	struct listener *l = h->data;
	l->n_handles--;
	maybe_closed(l);
}

void listener_close(struct listener *l, listener_close_cb cb, void *arg)
{
	PRE(!l->closing);
	PRE(l->n_registered == 0);
	LOG_INFO("listener %s: closing", l->address);
	l->closing = true;
	l->close_cb = cb;
	l->close_arg = arg;
	while (l->pending != NULL)
		abort_incoming(l->pending, &l->stats.dropped, "listener closing");
	uv_close((uv_handle_t *)&l->server, server_close_cb);
}
