/* The Redis data commands of the tserver's front end (issue 17): GET,
 * SET (EX PX NX XX), EXISTS and DEL, run through the routing client (include/docraft) on
 * the tserver's loop, so a command reaches its tablet's leader wherever
 * it is and every write is replicated by Raft before its reply.
 *
 * Storage: Redis database n is the docraft table redis_<n> (k blob hash
 * key, v blob), created on first use with the cluster's default tablets
 * and replication factor. A string is the row's v, its expiry the
 * value's TTL. (The slot partitioning of src/redis/slot.h and seed 002's
 * typed documents come with the other value types: src/redis/README.md.)
 *
 * Loop thread only. */
#ifndef DOCRAFT_TSERVER_REDIS_DATA_H
#define DOCRAFT_TSERVER_REDIS_DATA_H

#include <stddef.h>

#include "docraft/docraft.h"
#include "redis/server.h"

/* What the data commands need: redis_server_options.data points to it. */
struct redis_data {
	docraft_client *client; /* on the tserver's loop; NULL: no masters, no data commands */
};

/* The command table (DEL, EXISTS, GET, SET), for redis_server_options.commands. */
extern const struct redis_command redis_data_commands[];
extern const size_t redis_data_n_commands;

#endif
