/* rmux: one outbound connection per peer server for the Raft messages of
 * every group of the process, written once per loop turn.
 *
 * Without it each Raft group (rnet.h) has its own connection to each peer
 * and one write per message: 96 groups x 2 peers = 192 connections per
 * tserver and a syscall per message (docs/benchmarks.md, issue 14). With
 * it (TiKV batches Raft messages per store, CockroachDB's RaftTransport has
 * one stream per node pair) a process has one link per peer address; every
 * message queued for it during one loop turn, whatever its group, goes out
 * in one uv_write (a buffer vector) from an idle or check hook, tagged
 * with the sender's small group number (rmuxwire.h) — except that a
 * message to an idle link (nothing queued or being written) is written at
 * once, so a lone message never waits for the turn to end — and the receiving
 * process demultiplexes each frame to the group registered for its tablet.
 *
 * Coexistence on the one port: a multiplexed connection opens with the
 * listener's RMUX preamble (kind 4, net/listener.h) and is routed to
 * rmux's handler; raft_uv-wire connections (kind RAFT, one per tablet, from
 * raft_uv or an rnet without rmux) are still routed to the tablet's
 * transport and accepted as before. A process uses rmux for what it sends
 * only in the shared-log mode (`--raft-log shared`); per-tablet mode keeps
 * raft_uv's own connections and wire. All tservers of a cluster run the
 * same build (a peer without an RMUX handler closes the connection: the
 * messages are lost, counted as write errors, and retried by Raft).
 *
 *   rmux_open(loop, listener, &mux, errmsg);    once per process
 *   rmux_register(mux, "tablet", id, address, recv, check, arg, &g, errmsg);
 *   rmux_send(g, "peer:port", &req);            req->cb later, once
 *   rmux_unregister(g);                         no recv afterwards
 *   rmux_close(mux, cb, arg);                   after every unregister
 *
 * Sends: rmux_send only queues; the send's callback fires once, on a later
 * loop callback (never inside rmux_send or rmux_unregister): 0 when the
 * batch holding it was written into the kernel, RAFT_IOERR when the
 * connection broke first, RAFT_NOCONNECTION when dropped (more than
 * RMUX_MAX_QUEUED waiting while the peer is unreachable: the oldest go;
 * or a write backlog above the limit: a peer that stopped reading),
 * RAFT_CANCELED when the group unregistered before its send was written.
 * Messages of one group to one peer keep their order. A link connects on
 * its first send, reconnects while it has something to send (at once if
 * the connection lived RMUX_RETRY_MS, else after it), and is kept until
 * rmux_close.
 *
 * Receiving: an OPEN frame names a group's tablet and sender; the tablet's
 * registration (found by tablet id, again after it re-registers) gets each
 * MSG through recv(arg, m) with m->server_id and m->server_address from
 * the OPEN; the callee owns the message's buffers (rwire.h's layout). The
 * registration's check (the tablet's peer check, listener.h) runs before
 * the first message of each OPEN is delivered, and again for each message
 * while it refuses; messages of refused or unknown tablets are dropped
 * (freed) and counted: like a lost packet, Raft retries. A frame that does
 * not decode, a MSG of a group never opened, a second OPEN of a group
 * number or more than RMUX_MAX_GROUPS groups on one connection close that
 * connection and are counted; nothing on the network is asserted on.
 *
 * Threading: everything on the loop's thread. Ownership: the caller owns
 * struct rmux_send until its callback; rmux owns the rest. */
#ifndef DOCRAFT_RAFT_RMUX_H
#define DOCRAFT_RAFT_RMUX_H

#include <stdbool.h>
#include <stdint.h>

#include <netinet/in.h>
#include <raft.h>
#include <uv.h>

#include "net/listener.h"

#define RMUX_MAX_QUEUED 4096  /* sends kept per link while it is not connected */
#define RMUX_RETRY_MS 1000    /* delay before reconnecting a link */
#define RMUX_MAX_GROUPS 65536 /* groups opened on one inbound connection */

struct rmux;
struct rmux_group;
struct rmux_link;

/* One message to send: filled by the caller (bufs, n_bufs, bytes, cb);
 * the rest is rmux's. bufs and what they point to live until cb. */
struct rmux_send {
	uv_buf_t *bufs; /* the message in rwire's format: head, payload */
	unsigned n_bufs;
	size_t bytes; /* total of bufs */
	void (*cb)(struct rmux_send *s, int status);
	/* rmux's */
	struct rmux_send *next;
	struct rmux_group *g;
	uint8_t head[5]; /* the MSG frame head */
	int status;
};

/* Delivers a received message (see above). Must not call rmux_close. */
typedef void (*rmux_recv_cb)(void *arg, struct raft_message *m);
/* The tablet's peer check (listener_peer_check_cb's contract). */
typedef bool (*rmux_check_cb)(void *arg, uint64_t id, const char *address,
			      const struct sockaddr_in *peer);

struct rmux_stats {
	uint64_t links;    /* outbound links made (one per peer address) */
	uint64_t connects; /* outbound connections made */
	uint64_t connect_failures;
	uint64_t batches;  /* writes (one per link and loop turn) */
	uint64_t msgs_out; /* messages written */
	uint64_t bytes_out;
	uint64_t write_errors; /* sends failed with RAFT_IOERR */
	uint64_t drops;        /* sends failed with RAFT_NOCONNECTION */
	uint64_t accepted;     /* inbound connections */
	uint64_t msgs_in;      /* messages delivered */
	uint64_t bytes_in;
	uint64_t unknown;       /* messages dropped: tablet not registered */
	uint64_t refused;       /* messages dropped: the peer check refused */
	uint64_t decode_errors; /* inbound connections closed for a bad frame */
};

/* Creates the process's multiplexer on loop and sets the listener's RMUX
 * handler (l must outlive it; its loop is loop). Returns 0 with *out, or a
 * code with errmsg. Loop thread. */
int rmux_open(uv_loop_t *loop, struct listener *l, struct rmux **out, char *errmsg);

/* Registers a group: tablet_id (1..64 printable bytes, copied; one
 * registration per tablet id at a time: DOCRAFT_EINVAL otherwise), this
 * replica's raft id (non-zero) and address (copied) as the peers will see
 * them, recv and check (NULL: accept every sender) with arg. Returns 0 with
 * *out, or DOCRAFT_EINVAL with errmsg. */
int rmux_register(struct rmux *mux, const char *tablet_id, uint64_t id, const char *address,
		  rmux_recv_cb recv, rmux_check_cb check, void *arg, struct rmux_group **out,
		  char *errmsg);

/* Queues s for the peer server at address ("a.b.c.d:port"). Returns 0 (s's
 * callback comes later), or RAFT_NOCONNECTION for an address that does not
 * parse (no callback). g must be registered. */
int rmux_send(struct rmux_group *g, const char *address, struct rmux_send *s);

/* Ends g: no recv afterwards; its sends not yet written complete with
 * RAFT_CANCELED on a later loop callback, those being written when their
 * write completes. g is freed by rmux when nothing refers to it. */
void rmux_unregister(struct rmux_group *g);

/* Closes every connection and the hooks and removes the listener's
 * handler; cb(arg) runs on a later loop turn, once every handle is closed
 * (mux is freed then), and 0 is returned. DOCRAFT_EBUSY (nothing done, no
 * callback) while a group is registered or a send's callback has yet to
 * run: a replica that did not close (leave it to the exit). */
int rmux_close(struct rmux *mux, void (*cb)(void *arg), void *arg);

/* Bound of a received header or payload and of the write backlog per link
 * (0: RWIRE_LIMIT_DEFAULT). Applies to connections accepted afterwards. */
void rmux_set_limit(struct rmux *mux, uint64_t bytes);

/* Reconnect delay (ms, at least 1; default RMUX_RETRY_MS). */
void rmux_set_retry_delay(struct rmux *mux, unsigned ms);

void rmux_get_stats(const struct rmux *mux, struct rmux_stats *st);

#endif
