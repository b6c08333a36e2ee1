/* The tserver's Redis front end: the RESP server of src/redis/ on the
 * tserver's loop (issue 17), started from --redis-address.
 *
 * --redis-address IP:PORT binds there (a failure stops the tserver);
 * "off" starts nothing; not given, the default is IP:6379 with the IP of
 * the RPC address, and a failure to bind it (another tserver or a
 * redis-server on this IP) is logged and leaves the Redis port off, so
 * that test clusters sharing one IP keep starting.
 *
 * ":PORT" is that port on the IP of the RPC address (one flag for the
 * tservers of a local cluster, 127.0.0.N each).
 *
 * It serves the connection commands of src/redis/server.c and the data
 * commands of redis_data.c, whose routing client (on the same loop) finds
 * the tablets through the masters. Loop thread only. */
#ifndef DOCRAFT_TSERVER_REDIS_FRONT_H
#define DOCRAFT_TSERVER_REDIS_FRONT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "redis/server.h"
#include "tserver/redis_data.h"

#define TSERVER_REDIS_ADDRESS_MAX 64

struct tserver_redis {
	struct redis_server *srv; /* NULL: off */
	struct redis_data data;   /* its client: NULL without masters */
	int closing;              /* parts still closing */
	/* set before tserver_redis_start: */
	const char *uuid;         /* the tserver's (CLUSTER MYID); may be NULL */
	uint32_t max_per_ip;      /* --redis-max-connections-per-ip, when set */
	bool max_per_ip_set;
	void (*closed)(struct tserver_redis *r);
};

/* Starts the front end per flag ("" = the default, "off", IP:PORT or
 * :PORT) beside the RPC address rpc_address ("IP:PORT"), with a client of
 * the masters masters[0..n_masters) (none: only the connection commands).
 * 0 (r->srv NULL when off), or an error code with errmsg. */
int tserver_redis_start(struct tserver_redis *r, uv_loop_t *loop, const char *flag,
			const char *rpc_address, const char *const *masters, size_t n_masters,
			char *errmsg);

/* Closes the client (its requests fail, their commands reply) and the
 * server (its connections too); cb(r) once both are done. PRE: started
 * with r->srv not NULL. */
void tserver_redis_close(struct tserver_redis *r, void (*cb)(struct tserver_redis *r));

#endif
