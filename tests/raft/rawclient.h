/* Sockets for the raft tests (test_transport, test_rnet): a loop that
 * survives writes to closed sockets, a listener's close, and a raw TCP
 * client that plays a peer byte by byte.
 *
 * Every wait drives the loop until the condition holds or a guard timer
 * fires (loop.h); a failed CHECK ends the test case. Loop thread only. */
#ifndef DOCRAFT_TESTS_RAFT_RAWCLIENT_H
#define DOCRAFT_TESTS_RAFT_RAWCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "net/listener.h"

/* uv_loop_init, with SIGPIPE ignored: cases write to sockets their peers
 * close (see listener.h). */
void start_loop(uv_loop_t *loop);

/* Closes l and runs loop until its close callback, which must not come
 * from inside listener_close. */
void close_listener(uv_loop_t *loop, struct listener *l);

struct client {
	uv_tcp_t tcp;
	uv_connect_t creq;
	uv_shutdown_t sreq;
	bool connected;
	bool connect_failed;
	bool ended; /* EOF or read error: the server closed us */
	bool closed;
	size_t n_received;
};

/* Connects c to address ("a.b.c.d:port") and waits until it is connected
 * (a failure fails the case); c then reads and counts what comes back. */
void client_connect(uv_loop_t *loop, struct client *c, const char *address);

/* One uv_write of n bytes (copied). */
void client_write(struct client *c, const void *p, size_t n);

/* Shuts down c's sending side (the peer reads EOF). */
void client_shutdown(struct client *c);

/* Closes c and waits for its close callback. */
void client_close(uv_loop_t *loop, struct client *c);

/* A predicate for loop_run_until: the server closed c (EOF or error). */
bool client_ended(void *c);

#endif
