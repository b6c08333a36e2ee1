/* The options of the RPC server and client: their defaults, and the
 * server's limits as command-line flags shared by docraft-tserver and
 * docraft-master (rpc.h "rpc_server_flags").
 *
 * Design note. Pure: nothing here touches a loop, a socket or a server.
 * The checks of a whole option set are here too (options_check_*);
 * applying options to a running server or client is rpc_server_configure
 * (server.c) and rpc_client_configure (client.c), which check first.
 * The flags are parsed here, in one table of names, ranges and units, so
 * that both servers accept the same spellings and print the same help.
 * Any thread. */
#include "rpc/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

void rpc_server_options_default(struct rpc_server_options *o)
{
	o->max_frame = RPC_FRAME_DEFAULT_MAX;
	o->max_inflight = RPC_DEFAULT_MAX_INFLIGHT;
	o->max_connections = RPC_DEFAULT_MAX_CONNECTIONS;
	o->max_connections_per_ip = RPC_DEFAULT_MAX_CONNECTIONS_PER_IP;
	o->idle_timeout_ms = RPC_DEFAULT_IDLE_TIMEOUT_MS;
	o->max_queued_bytes = RPC_DEFAULT_MAX_QUEUED_BYTES;
	o->slow_reader_timeout_ms = RPC_DEFAULT_SLOW_READER_TIMEOUT_MS;
	o->max_inflight_bytes = RPC_DEFAULT_MAX_INFLIGHT_BYTES;
}


void rpc_client_options_default(struct rpc_client_options *o)
{
	o->max_frame = RPC_FRAME_DEFAULT_MAX;
	o->connect_timeout_ms = RPC_DEFAULT_CONNECT_TIMEOUT_MS;
	o->backoff_min_ms = RPC_DEFAULT_BACKOFF_MIN_MS;
	o->backoff_max_ms = RPC_DEFAULT_BACKOFF_MAX_MS;
}


const struct rpc_server_flag rpc_server_flags[RPC_SERVER_N_FLAGS] = {
	{"max-connections", "N", "client and server connections open at once, and "
				 "connections in their preamble (default 10000)"},
	{"max-connections-per-ip", "N", "the same from one source address (default 1000)"},
	{"idle-timeout-s", "S", "close a connection with nothing in flight for S seconds "
				"(default 300; 0: never)"},
	{"max-queued-mb", "MB", "answers queued to a client that does not read them before "
				"its requests are no longer read (default 32)"},
	{"slow-reader-timeout-s", "S", "close a client whose requests stayed unread so for S "
				       "seconds (default 30)"},
	{"max-inflight-mb", "MB", "request bytes being served at once, over every connection; "
				  "beyond: SERVICE_BUSY (default 256)"},
};

int rpc_server_options_set(struct rpc_server_options *o, const char *name, const char *value,
			   char *errmsg)
{
	static const struct {
		const char *name;
		unsigned long min, max, scale;
	} lim[RPC_SERVER_N_FLAGS] = {
		{"max-connections", 1, 1000000, 1},
		{"max-connections-per-ip", 1, 1000000, 1},
		{"idle-timeout-s", 0, 86400, 1000},
		{"max-queued-mb", 1, 4095, 1u << 20},
		{"slow-reader-timeout-s", 1, 3600, 1000},
		{"max-inflight-mb", 16, 1u << 20, 1u << 20},
	};
	unsigned long v;
	char *end;
	int i;

	for (i = 0; i < RPC_SERVER_N_FLAGS && strcmp(name, lim[i].name) != 0; i++)
		;
	if (i == RPC_SERVER_N_FLAGS)
		return DOCRAFT_ENOTFOUND;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno != 0 || *value < '0' || *value > '9' || *end != '\0' || v < lim[i].min ||
	    v > lim[i].max)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: '%.32s' is not a whole number in %lu..%lu",
			       name, value, lim[i].min, lim[i].max);
	switch (i) {
	case 0:
		o->max_connections = (uint32_t)v;
		break;
	case 1:
		o->max_connections_per_ip = (uint32_t)v;
		break;
	case 2:
		o->idle_timeout_ms = (uint32_t)(v * lim[i].scale);
		break;
	case 3:
		o->max_queued_bytes = (uint32_t)(v * lim[i].scale);
		break;
	case 4:
		o->slow_reader_timeout_ms = (uint32_t)(v * lim[i].scale);
		break;
	default:
		o->max_inflight_bytes = (uint64_t)v * lim[i].scale;
		break;
	}
	return 0;
}

static int check_max_frame(uint32_t max_frame, char *errmsg)
{
	if (max_frame < RPC_FRAME_MIN_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "max_frame %u below %u", max_frame,
			       RPC_FRAME_MIN_MAX);
	return 0;
}

int options_check_server(const struct rpc_server_options *o, char *errmsg)
{
	int rv = check_max_frame(o->max_frame, errmsg);

	if (rv != 0)
		return rv;
	if (o->max_inflight == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "max_inflight must be at least 1");
	if (o->max_connections == 0 || o->max_connections_per_ip == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "connection limits must be at least 1");
	if (o->max_queued_bytes == 0 || o->slow_reader_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "max_queued_bytes and slow_reader_timeout_ms must be at least 1");
	if (o->max_inflight_bytes < o->max_frame)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "max_inflight_bytes %" PRIu64 " below max_frame %u",
			       o->max_inflight_bytes, o->max_frame);
	return 0;
}

int options_check_client(const struct rpc_client_options *o, char *errmsg)
{
	if (check_max_frame(o->max_frame, errmsg) != 0)
		return DOCRAFT_EINVAL;
	if (o->connect_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "connect timeout of 0 ms");
	if (o->backoff_min_ms == 0 || o->backoff_max_ms < o->backoff_min_ms)
		return err_set(errmsg, DOCRAFT_EINVAL, "backoff %u..%u ms", o->backoff_min_ms,
			       o->backoff_max_ms);
	return 0;
}
