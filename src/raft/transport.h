/* The raft_uv_transport of one tablet replica, over the server's one port.
 *
 * Every tablet replica hosted by a server runs its own raft_uv instance with
 * one of these transports; all of them share the server's listener
 * (listener.h). Outgoing: connect opens a TCP connection to the peer's
 * address (the peer server's listener, "a.b.c.d:port"), writes a RAFT
 * preamble naming this tablet, this replica's raft id and address, and
 * gives the stream to raft_uv. Incoming: the listener routes RAFT
 * connections naming this tablet to raft_uv's accept callback once raft has
 * called listen (raft_start).
 *
 * Outgoing connections are bound to the listener's IP (port chosen by the
 * kernel) unless the listener is bound to 0.0.0.0, so a peer sees this
 * server's address as the source.
 *
 * Life cycle, all on the listener's loop thread:
 *
 *   transport_init(&t, l, "tablet-id", errmsg);
 *   raft_uv_init(&io, loop, dir, &t);     raft_uv takes over t.data
 *                                          (loop must be listener_loop(l))
 *   raft_init(&r, &io, &fsm, id, address); calls t.init
 *   raft_start(&r);                        calls t.listen: registers the tablet
 *   ...
 *   raft_close(&r, cb);                    calls t.close: unregisters, cancels
 *                                          pending connects, then completes
 *   in cb: raft_uv_close(&io); transport_close(&t);
 *
 * Methods, as raft_uv sees them:
 *   init    remembers the replica's raft id and address (1..255 printable
 *           bytes; else RAFT_INVALID).
 *   listen  registers the tablet with the listener; RAFT_BUSY if another
 *           transport of the same tablet id is registered there.
 *   connect returns 0 and later calls cb exactly once: (stream, 0) with a
 *           raft_malloc'd uv_tcp_t after the preamble was written,
 *           (NULL, RAFT_NOCONNECTION) if connect or write failed,
 *           (NULL, RAFT_CANCELED) if close ran first. An address that is
 *           not "a.b.c.d:port" or a socket that cannot be created fails
 *           synchronously with RAFT_NOCONNECTION and no callback.
 *   close   unregisters at once (no accept callback afterwards), cancels
 *           pending connects, and calls cb on a later loop iteration,
 *           after every connect callback.
 *
 * The transport keeps its state in t->impl; t->data belongs to raft_uv.
 * The listener must outlive the transport (close rafts, then the listener). */
#ifndef DOCRAFT_RAFT_TRANSPORT_H
#define DOCRAFT_RAFT_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "net/listener.h"

/* Fills t's methods and t->impl for replica tablet_id (1..64 printable
 * ASCII bytes, copied) served through l; t->data is not touched. On failure
 * (DOCRAFT_EINVAL for a bad tablet id) returns a code with errmsg, and t
 * needs no transport_close. */
int transport_init(struct raft_uv_transport *t, struct listener *l, const char *tablet_id,
		   char *errmsg);

/* The listener's peer check (listener.h) for this tablet's incoming Raft
 * connections; applied when raft calls listen, and at once if it already
 * has. Call after transport_init, normally before raft_start. cb NULL
 * removes it. */
void transport_set_peer_check(struct raft_uv_transport *t, listener_peer_check_cb cb, void *arg);

/* Binds an outgoing socket (uv_tcp_init_ex done, not connected) to l's IP,
 * port left to connect (IP_BIND_ADDRESS_NO_PORT), so the peer sees this
 * server's address as the source; nothing when l is bound to 0.0.0.0.
 * Returns 0 or a libuv error. Used by every outgoing Raft connection
 * (here and raft/rmux.c). */
int transport_bind_source(struct listener *l, uv_tcp_t *tcp);

/* The tablet id given to transport_init (owned by t). */
const char *transport_tablet_id(const struct raft_uv_transport *t);

/* Runs t's peer check (transport_set_peer_check) on a sender's claim and
 * the socket's remote address: true when it accepts or none is set. For
 * messages that arrive other than through the listener (raft/rmux.h). */
bool transport_check_peer(const struct raft_uv_transport *t, uint64_t id, const char *address,
			  const struct sockaddr_in *peer);

/* Releases t->impl. Only after raft has closed the transport through its
 * close method (raft_close's callback has run), or if raft never called
 * listen (e.g. raft_init failed). */
void transport_close(struct raft_uv_transport *t);

#endif
