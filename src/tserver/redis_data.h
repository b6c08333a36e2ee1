/* The Redis data commands of the tserver's front end (issue 17): every
 * command of the YEDIS engine (src/yedis/yedis.h), run on the tablet that
 * owns its key's slot through the routing client (docraft_redis_async, on
 * the tserver's loop), so a command reaches its tablet's leader wherever
 * it is and every write is replicated by Raft before its reply; and the
 * front end's own commands: multi-key ones split per key (MGET MSET DEL
 * EXISTS), tablet-wide ones (KEYS SCAN DBSIZE FLUSHDB FLUSHALL), CLUSTER,
 * and EXEC's work (redis_multi.c).
 *
 * Storage: Redis database n is the YEDIS table redis_<n>, created on
 * first use with the cluster's default tablets and replication factor
 * (docraft.h). docs/redis.md is the user's view.
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
	struct redis_batcher *batcher; /* NULL: every command in its own request */
	char node_id[41];       /* this tserver's Redis Cluster node id (CLUSTER MYID) */
	/* the command table redis_data_init built */
	struct redis_command *commands;
	size_t n_commands;
};

/* Builds d's command table (the engine's commands and the front end's)
 * and node id from the tserver's uuid (may be NULL: a made-up id). d's
 * client is set by the caller. Never fails. */
void redis_data_init(struct redis_data *d, const char *uuid);
void redis_data_free(struct redis_data *d);

/* For redis_server_options.info: the "# Docraft" section (the batcher's
 * counts, redis_int.h). */
void redis_data_info(void *data, struct buf *out);

/* For redis_server_options.exec: EXEC on one tablet (redis_multi.c). */
int redis_data_exec(struct redis_conn *c, size_t n, const struct redis_queued *q);

#endif
