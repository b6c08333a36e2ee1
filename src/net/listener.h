/* The one TCP port of a server process, shared by every kind of traffic.
 *
 * A listener owns one listening socket on one libuv loop. Every accepted
 * connection must open with a preamble naming what it carries:
 *
 *   offset  size  field
 *   0       4     magic "DRFT"
 *   4       1     version, 1
 *   5       1     kind: 1 RAFT, 2 RPC, 3 COPY, 4 RMUX
 *   6       1     tablet id length L: 1..64 (0..64 for RPC and RMUX)
 *   7       L     tablet id, printable ASCII (0x21..0x7e)
 *   -- RAFT only --
 *   7+L     8     sender raft id, big endian, non-zero
 *   15+L    1     sender address length A: 1..255
 *   16+L    A     sender address, printable ASCII
 *
 * The listener reads exactly these bytes, never one more, then hands the
 * stream over: RAFT to the raft_uv_transport registered for the tablet
 * (transport.h), RPC, COPY and RMUX to the handler set for that kind (RMUX:
 * the Raft messages of every group between two servers on one connection,
 * src/raft/rmux.h). Anything
 * else (bad magic, version, kind or lengths, EOF or silence for longer than
 * the preamble timeout, a RAFT tablet nobody registered, a kind without a
 * handler) is closed without a reply.
 *
 * Streams handed over are uv_tcp_t allocated with the stream allocator
 * (listener_set_stream_allocator: malloc/free unless the Raft glue sets
 * raft_malloc/raft_free, because raft_uv frees the streams it owns with
 * raft_free); whoever receives one must uv_close it and free it with that
 * allocator in the close callback (listener_stream_close does both). They are not reading (uv_read_start
 * was stopped), ->data is NULL, TCP_NODELAY is on, and every byte sent after
 * the preamble is still there to read.
 *
 * Threading: a listener and everything registered with it belong to the
 * thread running its loop; no function here may be called from another
 * thread.
 *
 * Signals: writing to a socket the peer has closed raises SIGPIPE, and
 * libuv (like raft_uv) writes with plain write(2). The process must ignore
 * SIGPIPE (signal(SIGPIPE, SIG_IGN) in main) or the first peer that goes
 * away kills it; listener_open logs a warning when SIGPIPE is still at its
 * default action. */
#ifndef DOCRAFT_NET_LISTENER_H
#define DOCRAFT_NET_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <uv.h>

#define LISTENER_MAGIC "DRFT"
#define LISTENER_VERSION 1

enum listener_kind {
	LISTENER_RAFT = 1,
	LISTENER_RPC = 2,
	LISTENER_COPY = 3,
	LISTENER_RMUX = 4, /* multiplexed Raft (raft/rmux.h); tablet id "" */
};

#define LISTENER_TABLET_ID_MAX 64
#define LISTENER_ADDRESS_MAX 255
/* Longest "a.b.c.d:port" text: "255.255.255.255:65535". */
#define LISTENER_ADDRESS_TEXT_MAX 21
/* Longest possible preamble: a RAFT one with both strings at their maximum. */
#define LISTENER_PREAMBLE_MAX (7 + LISTENER_TABLET_ID_MAX + 9 + LISTENER_ADDRESS_MAX)
#define LISTENER_DEFAULT_TIMEOUT_MS 10000
#define LISTENER_DEFAULT_MAX_PENDING 10000
#define LISTENER_DEFAULT_MAX_PENDING_PER_IP 1000

struct listener;

/* Receives an RPC or COPY connection whose preamble named tablet_id ("" for
 * an RPC preamble without one). The callee owns stream (see above);
 * tablet_id is valid only during the call. Called on the loop thread. */
typedef void (*listener_handler_cb)(void *arg, uv_stream_t *stream, const char *tablet_id);

/* Called once every handle of a closing listener is closed; the listener
 * memory is already released. */
typedef void (*listener_close_cb)(void *arg);

/* Parses "a.b.c.d:port" (IPv4 literal, port 0..65535) into *out.
 * DOCRAFT_EINVAL with errmsg on anything else. */
int listener_parse_address(const char *address, struct sockaddr_in *out, char *errmsg);
/* The reverse: a's IPv4 address and port as "a.b.c.d:port" into out
 * (LISTENER_ADDRESS_TEXT_MAX + 1 bytes), "?" for the IP if it cannot be
 * written. Pure; any thread. */
void listener_format_address(const struct sockaddr_in *a, char *out);

/* Binds exactly address ("a.b.c.d:port"; port 0 picks a free port, see
 * listener_address; SO_REUSEADDR, no SO_REUSEPORT) and starts accepting on
 * loop. On success *out is the new listener, which must eventually be
 * closed with listener_close. On failure (bad address: DOCRAFT_EINVAL;
 * socket/bind/listen failed, e.g. port in use or address not local:
 * DOCRAFT_EIO) *out is NULL, errmsg says why and the caller has nothing to
 * close. (Only if libuv refuses the fresh socket is a handle close left
 * pending, completed by the next loop run.) */
int listener_open(uv_loop_t *loop, const char *address, struct listener **out, char *errmsg);

/* The address actually bound, "a.b.c.d:port" with the real port. Owned by the
 * listener, valid until listener_close. */
const char *listener_address(const struct listener *l);
/* The same, as a socket address (used to bind outgoing connections). */
const struct sockaddr_in *listener_sockaddr(const struct listener *l);
uv_loop_t *listener_loop(const struct listener *l);

/* How long an accepted connection may take to send its whole preamble
 * (default LISTENER_DEFAULT_TIMEOUT_MS). Applies to connections accepted
 * afterwards. ms must be > 0. */
void listener_set_timeout(struct listener *l, uint64_t ms);

/* The accept-stage cap: at most total connections in their preamble phase
 * at once, and per_ip from one source address (defaults
 * LISTENER_DEFAULT_MAX_PENDING{,_PER_IP}); a connection beyond either is
 * closed as soon as it is accepted (stats.refused). Connections handed
 * over no longer count here: the RPC server caps its own
 * (rpc_server_options). Both > 0. */
void listener_set_max_pending(struct listener *l, uint32_t total, uint32_t per_ip);

/* Routes connections of kind (LISTENER_RPC, LISTENER_COPY or LISTENER_RMUX)
 * to cb(arg, ...);
 * cb NULL removes the handler (such connections are then closed).
 * DOCRAFT_EINVAL for any other kind. */
int listener_set_handler(struct listener *l, int kind, listener_handler_cb cb, void *arg,
			 char *errmsg);

/* Receives a RAFT connection for a registered tablet: owner is what was
 * registered, id and address what the preamble claims. The callee owns
 * stream (see above). Loop thread. */
typedef void (*listener_accept_cb)(void *owner, uint64_t id, const char *address,
				   uv_stream_t *stream);

/* Tablet registry, used by src/raft/transport.c (the listener itself knows
 * nothing of Raft). Routes RAFT connections for tablet_id to cb(owner,
 * sender id, sender address, stream), which then owns the stream.
 * tablet_id is copied. A second registration of the same tablet id fails
 * with DOCRAFT_EINVAL; a bad tablet id (length, characters) too. Not
 * allowed once closing. */
int listener_register(struct listener *l, const char *tablet_id, void *owner,
		      listener_accept_cb cb, char *errmsg);
/* Peer identity check of a RAFT connection (issue 12), run when its preamble
 * is complete and before the stream reaches the tablet's transport: id and
 * address are what the preamble claims, peer is the socket's remote address.
 * Returns true to accept; a refused connection is closed without a reply,
 * counted (stats.rejected) and logged at WARN naming the tablet and the
 * claim (the 1st, 2nd, 4th, 8th ... refusal per listener). The tablet's check
 * (tablet_membership.c) accepts a member of its configuration (rio_is_member) that
 * connects from its address's IP (listener_peer_matches: outgoing Raft
 * connections are bound to the listener's IP, transport.h). Only the
 * address comparison is about the network: with TLS the hook will receive
 * the peer's verified certificate and compare its identity instead; the
 * membership half stays. Loop thread; must not block, close the stream or
 * unregister tablets. */
typedef bool (*listener_peer_check_cb)(void *arg, uint64_t id, const char *address,
				       const struct sockaddr_in *peer);

/* Sets (cb NULL: removes) the peer check of tablet_id's registration, if it
 * belongs to owner; no-op otherwise. A registration without a check accepts
 * every well-formed preamble (as before issue 12). */
void listener_set_peer_check(struct listener *l, const char *tablet_id, const void *owner,
			     listener_peer_check_cb cb, void *arg);

/* Whether peer's IP is the IP of address ("a.b.c.d:port"; the port is not
 * compared: a peer connects from an ephemeral one). false if address does
 * not parse. */
bool listener_peer_matches(const char *address, const struct sockaddr_in *peer);

/* Removes the registration of tablet_id if it belongs to owner (no-op
 * otherwise). After it returns, no further connection for that tablet
 * reaches owner's callback. */
void listener_unregister(struct listener *l, const char *tablet_id, const void *owner);
/* Number of registered tablets. */
size_t listener_n_registered(const struct listener *l);

/* Writes a preamble into buf (at least LISTENER_PREAMBLE_MAX bytes) and
 * returns its length; 0 if the arguments cannot be encoded (unknown kind,
 * lengths or characters out of range, RAFT with id 0). id and address are
 * used only for LISTENER_RAFT; tablet_id may be "" only for LISTENER_RPC and
 * LISTENER_RMUX. */
size_t listener_preamble_encode(uint8_t *buf, int kind, const char *tablet_id, uint64_t id,
				const char *address);

/* A preamble read from the network (listener_preamble_parse). */
struct listener_preamble {
	int kind;                                      /* enum listener_kind */
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];    /* "" only for RPC */
	uint64_t id;                                   /* RAFT: sender raft id, else 0 */
	char address[LISTENER_ADDRESS_MAX + 1];        /* RAFT: sender address, else "" */
};

/* The pure preamble decoder the listener reads with: buf[0..have) are the
 * first bytes of a connection. Returns -1 when they cannot start a valid
 * preamble; 0 when more are needed, with *want (> have) the total length
 * the next step needs (never more than the preamble itself, at most
 * LISTENER_PREAMBLE_MAX); 1 when buf[0..*want) is a complete preamble,
 * decoded into *out (may be NULL). Bytes past the preamble are ignored.
 * Any thread. */
int listener_preamble_parse(const uint8_t *buf, size_t have, size_t *want,
			    struct listener_preamble *out);

/* Counters since listener_open, for status pages and tests. */
struct listener_stats {
	uint64_t accepted;    /* connections accepted */
	uint64_t handed_over; /* preamble complete, given to a transport or handler */
	uint64_t malformed;   /* bad magic, version, kind, length or character */
	uint64_t timed_out;   /* preamble not complete within the timeout */
	uint64_t unroutable;  /* RAFT tablet not registered, or kind without handler */
	uint64_t dropped;     /* EOF or error in the preamble, or the listener closed */
	uint64_t rejected;    /* RAFT preamble refused by the tablet's peer check */
	uint64_t refused;     /* over the accept-stage cap (listener_set_max_pending) */
};
void listener_get_stats(const struct listener *l, struct listener_stats *out);

/* The allocator of every stream a listener accepts (process-wide; default
 * malloc/free). transport_init (src/raft/transport.c) sets
 * raft_malloc/raft_free, because raft_uv frees the streams it owns with
 * raft_free; docraft never changes raft's heap, so the two pairs are the
 * same functions underneath and a stream accepted before the switch is
 * still freed correctly. Loop thread; both non-NULL. */
void listener_set_stream_allocator(void *(*alloc)(size_t), void (*release)(void *));

/* Frees a closed stream received from the listener (for owners that close
 * it with their own close callback). */
void listener_stream_free(uv_handle_t *stream);

/* Closes a stream received from the listener: uv_close, then the stream
 * allocator's free in the close callback. */
void listener_stream_close(uv_stream_t *stream);

/* Stops accepting, closes every connection still in its preamble phase and
 * releases the listener; cb(arg) (may be NULL) runs when all its handles are
 * closed. Streams already handed over are not touched. Every transport must
 * have been unregistered first (close the rafts before the listener). Must
 * not be called twice. */
void listener_close(struct listener *l, listener_close_cb cb, void *arg);

#endif
