/* Heartbeats from a tablet server to the master leader.
 *
 * Every interval_ms (default HEARTBEAT_DEFAULT_INTERVAL_MS, the first one
 * at once) a HeartbeatRequest {uuid, address, placement, a report of every
 * replica}
 * goes to the master believed to lead (MASTER_HEARTBEAT, deadline
 * timeout_ms). The reply's instructions are carried out through the RPC
 * service (service_execute), and its master_leader_address, when set,
 * becomes the next target. A NOT_LEADER answer with a hint is followed at
 * once (once per period); without a hint, and on any other failure, the
 * next master of the list is tried at the next period. Only one heartbeat
 * is in flight at a time.
 *
 * The list of masters (issue 15): a reply's masters (the masters' Raft
 * configuration) replace the list, followed by the addresses of
 * o->masters it does not name (a fallback: e.g. a removed master that
 * still runs names the leader). A reply without masters (an older master)
 * changes nothing.
 *
 * Threading: the loop thread. */
#ifndef DOCRAFT_TSERVER_HEARTBEAT_H
#define DOCRAFT_TSERVER_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "rpc/rpc.h"
#include "tserver/manager.h"
#include "tserver/service.h"

#define HEARTBEAT_DEFAULT_INTERVAL_MS 1000u
#define HEARTBEAT_MAX_MASTERS 16

struct heartbeat_options {
	const char *uuid;          /* this tablet server's uuid */
	const char *address;       /* its RPC address */
	const char *placement;     /* "cloud.region.zone", checked by the caller; NULL: "" */
	const char *redis_address; /* its RESP server "IP:PORT" (issue 17); NULL: "" (off) */
	const char *const *masters; /* master addresses "ip:port", 1..HEARTBEAT_MAX_MASTERS */
	size_t n_masters;
	unsigned interval_ms;      /* 0 = HEARTBEAT_DEFAULT_INTERVAL_MS */
	unsigned timeout_ms;       /* per heartbeat; 0 = the interval, at least 500 */
};

struct heartbeat_stats {
	uint64_t sent;
	uint64_t ok;
	uint64_t failed;
	uint64_t instructions;
};

struct heartbeat;
typedef void (*heartbeat_close_cb)(struct heartbeat *hb);

/* Private: callers allocate it, only heartbeat.c touches the fields. */
struct heartbeat {
	uv_loop_t *loop;
	struct rpc_client *cl;
	struct manager *m;
	struct service *svc;
	char *uuid, *address, *placement, *redis_address;
	char *masters[HEARTBEAT_MAX_MASTERS];
	size_t n_masters;
	char *flag_masters[HEARTBEAT_MAX_MASTERS]; /* o->masters, the fallback */
	size_t n_flag_masters;
	size_t current;            /* index into masters, or the hint below */
	char hint[RPC_ADDRESS_MAX + 1]; /* a leader address learnt from a reply */
	unsigned interval_ms, timeout_ms;
	uv_timer_t timer;
	struct rpc_call_req req;
	bool inflight;
	bool followed;             /* a hint was followed at once this period */
	bool stopping;
	heartbeat_close_cb close_cb;
	bool timer_closed;
	unsigned failures;         /* in a row, for the logs */
	struct heartbeat_stats stats;
};

/* Starts heartbeating (the first one on the next loop turn). hb is caller
 * memory at a fixed address until the close callback; cl, m and svc are
 * borrowed (cl must outlive the close callback). Strings are copied.
 * DOCRAFT_EINVAL with errmsg for a bad master list (nothing to close). */
int heartbeat_start(struct heartbeat *hb, uv_loop_t *loop, struct rpc_client *cl,
		    struct manager *m, struct service *svc, const struct heartbeat_options *o,
		    char *errmsg);

/* Stops: no new heartbeat is sent and a reply still to come is ignored;
 * cb(hb) runs from the loop once the timer is closed and no call is in
 * flight (close the rpc client afterwards, or before: it fails the call).
 * Once. */
void heartbeat_stop(struct heartbeat *hb, heartbeat_close_cb cb);

void heartbeat_get_stats(const struct heartbeat *hb, struct heartbeat_stats *out);

#endif
