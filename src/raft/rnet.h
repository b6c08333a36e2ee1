/* rnet: the network half of a Raft group's raft_io, without raft_uv.
 *
 * A struct raft_io whose init, start, send, close, time, random and
 * async_work talk to peers over docraft's one-port transport
 * (raft/transport.h) in raft_uv 0.15's wire format (raft/rwire.h), so a
 * group may mix rnet replicas with raft_uv replicas. Its storage methods
 * (load, bootstrap, recover, set_term, set_vote, append, truncate,
 * snapshot_put, snapshot_get) fail with RAFT_IOERR and "rnet has no
 * storage": rnet is the `net` of a raft_io that stores elsewhere (the
 * shared log, raftlog_io), which never calls them. Why not raft_uv with its
 * storage unused: raft_uv_init probes the disk (io_setup/io_destroy, about
 * 33 ms here), 10 s for 300 replicas at a restart; rnet_init touches no
 * disk and no loop (see rnet.c for the connection design).
 *
 *   transport_init(&t, listener, "tablet-id", errmsg);
 *   rnet_init(&n, loop, &t, errmsg);     t->data becomes rnet's
 *   n.io.data = user;                    the io's data is the user's
 *   n.io.init(&n.io, id, address);       (raft_init, or the user's io, calls these)
 *   n.io.start(&n.io, msecs, tick, recv);
 *   ... n.io.send(...) ...
 *   n.io.close(&n.io, cb);
 *   in cb or later: rnet_release(&n); transport_close(&t);
 *
 * io methods:
 *   init(id, address)  remembers them and calls t->init(t, id, address).
 *   start(msecs, tick, recv)  t->listen (inbound connections), then a
 *                      uv_timer calls tick every msecs.
 *   send(req, m, cb)   encodes m at once (m may be gone after the call; the
 *                      entries' and snapshot data buffers must live until
 *                      cb, as raft guarantees) and writes it on the one
 *                      outbound connection to (m->server_id,
 *                      m->server_address), connecting if needed. cb fires
 *                      once, on a later loop callback, never inside send:
 *                      0 when written (on a connection younger than the
 *                      retry delay: once it has lived that long), RAFT_IOERR
 *                      when the connection broke (or died young after the
 *                      write: the peer probably never read it),
 *                      RAFT_NOCONNECTION when dropped (queue full while
 *                      disconnected, or a write backlog above the limit),
 *                      RAFT_CANCELED when closed first. A failing call
 *                      (RAFT_NOCONNECTION: no destination; RAFT_MALFORMED:
 *                      unknown type; RAFT_TOOBIG: an entry or snapshot above
 *                      the limit; RAFT_CANCELED: closing) never calls cb.
 *                      An AppendEntries whose entries exceed the limit is
 *                      cut to the longest prefix that fits (a valid Raft
 *                      message; raft 0.15 sends every entry from next_index).
 *   close(cb)          closes the tick timer, every connection and the
 *                      transport, waits for async work; cb(&n->io) runs on a
 *                      later loop turn, after every send callback has fired.
 *   time               uv_now(loop).
 *   random(min, max)   a per-instance PRNG seeded from getrandom (uv_hrtime
 *                      if that fails); min when max <= min.
 *   async_work         uv_queue_work; cb on the loop thread.
 * Callbacks (tick, recv, close) get &n->io. io->version is 2, io->impl is n,
 * io->data is never touched by rnet.
 *
 * Receiving: each inbound connection (from the transport's accept callback)
 * is read-only and carries one peer's messages; the id and address of every
 * message it delivers are those of the connection's preamble. A frame that
 * does not decode (rwire.h) closes that connection and is counted; nothing
 * on the network is asserted on. A received message's buffers belong to the
 * recv callback (raft's layout, rwire.h).
 *
 * Multiplexed (rnet_set_mux, the tserver's shared-log mode): sends go to
 * the process's rmux (raft/rmux.h), one connection per peer server for
 * every group, and messages arrive from it; the transport still accepts
 * raft_uv-wire connections for the tablet (kind RAFT on the one port;
 * rmux connections are kind RMUX), so both wires coexist on a server.
 *
 * Ownership and threading: the caller owns struct rnet and the transport,
 * both at the same address until the close callback (or rnet_release when
 * start never ran). Everything runs on the loop's thread. Return codes are
 * raft's (RAFT_*) for io methods, docraft's for rnet_init. */
#ifndef DOCRAFT_RAFT_RNET_H
#define DOCRAFT_RAFT_RNET_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "raft/rmux.h"
#include "raft/rwire.h"

#define RNET_MAX_PENDING_DEFAULT 3   /* sends queued per peer while disconnected */
#define RNET_RETRY_MS_DEFAULT 1000   /* delay before a new connect attempt */

struct rnet_stats {
	uint64_t msgs_in[RWIRE_TYPE_MAX + 1];  /* delivered to recv, by type */
	uint64_t msgs_out[RWIRE_TYPE_MAX + 1]; /* written, by type */
	uint64_t bytes_in;         /* bytes read from inbound connections */
	uint64_t bytes_out;        /* bytes of messages written */
	uint64_t decode_errors;    /* inbound connections closed for a bad frame */
	uint64_t accepted;         /* inbound connections taken */
	uint64_t connects;         /* outbound connections made */
	uint64_t connect_failures; /* outbound attempts that failed */
	uint64_t drops;            /* sends failed with RAFT_NOCONNECTION */
	uint64_t write_errors;     /* writes failed (the connection broke) */
	uint64_t unconfirmed;      /* connections that died young with sends
				      written on them (failed: RAFT_IOERR) */
	uint64_t truncated;        /* AppendEntries cut to the limit */
};

struct rnet_client;
struct rnet_server;
struct rnet_send;

struct rnet {
	struct raft_io io;          /* hand &n->io to the user; owned by rnet */
	/* The rest is rnet's. */
	uv_loop_t *loop;
	struct raft_uv_transport *t;
	raft_id id;                 /* set by io.init */
	char *address;              /* set by io.init (copy) */
	uint64_t limit;             /* header and payload bound (rwire.h) */
	unsigned max_pending;
	unsigned retry_ms;
	uint64_t rng;               /* PRNG state */
	const char *log_id;         /* tablet id in log lines (borrowed), or NULL */
	raft_io_tick_cb tick_cb;
	raft_io_recv_cb recv_cb;
	raft_io_close_cb close_cb;
	uv_timer_t tick;
	uv_idle_t flush;            /* completes deferred send callbacks */
	bool tick_open, flush_open, flush_closing;
	bool inited, started, closing, transport_closing, closed;
	struct rnet_client *clients;   /* one per peer (id, address) */
	struct rnet_client *aborting;  /* clients closing */
	struct rnet_server *servers;   /* inbound connections */
	struct rnet_send *done, *done_tail; /* sends whose callback is due */
	unsigned n_work;            /* async work in flight */
	struct rmux *mux;           /* rnet_set_mux, or NULL */
	struct rmux_group *mux_group; /* registered from start to close */
	unsigned n_mux_sending;     /* sends given to rmux, not completed */
	struct rnet_stats stats;
};

/* Fills n (every field) and n->io's methods for use on loop with transport
 * t (transport_init done, not yet used by anyone else); sets t->data = n.
 * Opens nothing: no handle, no file, no socket. Returns 0 (errmsg
 * untouched); DOCRAFT_EINVAL if loop or t is NULL. Loop thread. */
int rnet_init(struct rnet *n, uv_loop_t *loop, struct raft_uv_transport *t, char *errmsg);

/* Bound of a received header and payload and of a sent payload, bytes
 * (0: RWIRE_LIMIT_DEFAULT; at most RWIRE_LIMIT_MAX). Applies to
 * connections accepted and messages sent afterwards. */
void rnet_set_limit(struct rnet *n, uint64_t bytes);

/* Delay before reconnecting after a failed attempt or a connection that
 * broke young (ms, at least 1). Default RNET_RETRY_MS_DEFAULT. */
void rnet_set_retry_delay(struct rnet *n, unsigned ms);

/* Sends kept per peer while not connected (at least 1); beyond it the
 * oldest fails with RAFT_NOCONNECTION. Default RNET_MAX_PENDING_DEFAULT. */
void rnet_set_max_pending(struct rnet *n, unsigned count);

/* Sends through the process's multiplexer (raft/rmux.h) instead of this
 * group's own connections: from io.start (which registers the tablet with
 * mux, RAFT_BUSY if it is registered already) to io.close (which
 * unregisters it). Messages then arrive through mux too; raft_uv-wire
 * connections for the tablet are still accepted. The send contract above
 * holds, except that a send to an unreachable peer waits in the link's
 * queue (RMUX_MAX_QUEUED) instead of max_pending. Before io.start; mux must
 * outlive n's close. */
void rnet_set_mux(struct rnet *n, struct rmux *mux);

/* Tablet id for log lines (borrowed: must outlive n), or NULL. */
void rnet_set_log_id(struct rnet *n, const char *log_id);

/* A copy of the counters. Any time between rnet_init and rnet_release. */
void rnet_get_stats(const struct rnet *n, struct rnet_stats *st);

/* Frees what is left (the address copy). Call after the close callback, or
 * when start never ran and close was not called (e.g. raft_init failed).
 * Idempotent. transport_close(t) is the caller's job afterwards. */
void rnet_release(struct rnet *n);

#endif
