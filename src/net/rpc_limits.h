/* Connections per source address, for the connection caps of the one-port
 * listener (net/listener.h, preamble stage) and the RPC server
 * (rpc/rpc.h). Pure: no I/O, no libuv; lives in docraft_net, below both
 * users.
 *
 * A table counts live connections by IPv4 address (network byte order, as
 * in sockaddr_in.sin_addr.s_addr). An address whose count drops to zero
 * leaves the table, so its memory follows the live connections, never the
 * history of addresses seen. When TLS arrives the key becomes the peer's
 * certificate identity; the callers only ever ask "how many from this one".
 *
 * Not thread-safe: one table per loop. */
#ifndef DOCRAFT_NET_RPC_LIMITS_H
#define DOCRAFT_NET_RPC_LIMITS_H

#include <stdint.h>

#define IP_COUNTS_BUCKETS 256 /* power of two */

struct ip_count;

struct ip_counts {
	struct ip_count *buckets[IP_COUNTS_BUCKETS];
	uint32_t total; /* sum of every count */
};

/* An empty table; release it with ip_counts_free. */
void ip_counts_init(struct ip_counts *t);
void ip_counts_free(struct ip_counts *t);

/* Live connections from ip now. */
uint32_t ip_counts_get(const struct ip_counts *t, uint32_t ip);

/* Counts one more connection from ip. */
void ip_counts_add(struct ip_counts *t, uint32_t ip);

/* Counts one connection from ip less. PRE: ip was added more times than
 * removed. */
void ip_counts_remove(struct ip_counts *t, uint32_t ip);

#endif
