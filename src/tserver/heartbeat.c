/* Heartbeats to the master leader. See heartbeat.h for the contract. */
#include "tserver/heartbeat.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "docraft.pb-c.h"
#include "net/listener.h"
#include "rpc.pb-c.h"

static const uint8_t empty[1];

static const char *target(const struct heartbeat *hb)
{
	return hb->hint[0] != '\0' ? hb->hint : hb->masters[hb->current];
}

/* The next master to try after a failure. */
static void rotate(struct heartbeat *hb)
{
	if (hb->hint[0] != '\0')
		hb->hint[0] = '\0';
	hb->current = (hb->current + 1) % hb->n_masters;
}

static void set_hint(struct heartbeat *hb, const char *address)
{
	struct sockaddr_in sa;
	if (address == NULL || address[0] == '\0' || strlen(address) > RPC_ADDRESS_MAX ||
	    listener_parse_address(address, &sa, NULL) != 0)
		return;
	/* A listed master becomes the current one; another address is kept
	 * as a hint until it fails. */
	for (size_t i = 0; i < hb->n_masters; i++) {
		if (strcmp(hb->masters[i], address) == 0) {
			hb->current = i;
			hb->hint[0] = '\0';
			return;
		}
	}
	snprintf(hb->hint, sizeof hb->hint, "%s", address);
}

static void maybe_closed(struct heartbeat *hb)
{
	size_t i;
	if (!hb->stopping || !hb->timer_closed || hb->inflight)
		return;
	for (i = 0; i < hb->n_masters; i++)
		free(hb->masters[i]);
	for (i = 0; i < hb->n_flag_masters; i++)
		free(hb->flag_masters[i]);
	hb->n_flag_masters = 0;
	free(hb->uuid);
	free(hb->address);
	free(hb->placement);
	free(hb->redis_address);
	hb->n_masters = 0;
	hb->close_cb(hb);
}

static void failed(struct heartbeat *hb, const char *address, int status, const char *why)
{
	hb->stats.failed++;
	if (hb->failures++ == 0)
		LOG_WARN("heartbeat to master %s failed: %s: %s", address, docraft_strerror(status),
			 why);
	else
		LOG_DEBUG("heartbeat to master %s failed: %s: %s", address,
			  docraft_strerror(status), why);
}

static bool has_master(char *const *list, size_t n, const char *address)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], address) == 0)
			return true;
	return false;
}

/* The reply's masters, then the flag's others, become the list (see
 * heartbeat.h); the current target stays current. */
static void learn_masters(struct heartbeat *hb, char **masters, size_t n, const char *current)
{
	char *next[HEARTBEAT_MAX_MASTERS];
	size_t k = 0;
	struct sockaddr_in sa;

	for (size_t i = 0; i < n && k < HEARTBEAT_MAX_MASTERS; i++)
		if (strlen(masters[i]) <= RPC_ADDRESS_MAX &&
		    listener_parse_address(masters[i], &sa, NULL) == 0 &&
		    !has_master(next, k, masters[i]))
			next[k++] = xstrdup(masters[i]);
	if (k == 0)
		return;
	for (size_t i = 0; i < hb->n_flag_masters && k < HEARTBEAT_MAX_MASTERS; i++)
		if (!has_master(next, k, hb->flag_masters[i]))
			next[k++] = xstrdup(hb->flag_masters[i]);
	bool changed = k != hb->n_masters;
	for (size_t i = 0; i < k && !changed; i++)
		changed = !has_master(hb->masters, hb->n_masters, next[i]);
	if (changed)
		LOG_INFO("the masters, learned from %s: %zu of them, first %s", current, k,
			 next[0]);
	for (size_t i = 0; i < hb->n_masters; i++)
		free(hb->masters[i]);
	memcpy(hb->masters, next, k * sizeof *next);
	hb->n_masters = k;
	hb->current = 0;
	for (size_t i = 0; i < k; i++)
		if (strcmp(next[i], current) == 0) {
			hb->current = i;
			hb->hint[0] = '\0'; /* current was the hint: now listed */
		}
}

static void send_heartbeat(struct heartbeat *hb);

static void done_cb(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct heartbeat *hb = req->data;
	Docraft__HeartbeatResponse *resp;
	char address[RPC_ADDRESS_MAX + 1];

	hb->inflight = false;
	if (hb->stopping) {
		maybe_closed(hb);
		return;
	}
	snprintf(address, sizeof address, "%s", target(hb));
	if (res->status == DOCRAFT_ENOTLEADER && res->leader_address[0] != '\0' &&
	    strcmp(res->leader_address, address) != 0) {
		LOG_INFO("master %s is not the leader: heartbeats go to %s", address,
			 res->leader_address);
		set_hint(hb, res->leader_address);
		if (!hb->followed) {
			hb->followed = true;
			send_heartbeat(hb);
		}
		return;
	}
	if (res->status != 0) {
		failed(hb, address, res->status, res->message);
		rotate(hb);
		return;
	}
	resp = docraft__heartbeat_response__unpack(NULL, res->reply_len,
						   res->reply != NULL ? res->reply : empty);
	if (resp == NULL) {
		failed(hb, address, DOCRAFT_ECORRUPT, "malformed HeartbeatResponse");
		rotate(hb);
		return;
	}
	if (hb->failures > 0)
		LOG_INFO("heartbeats to master %s succeed again", address);
	hb->failures = 0;
	hb->stats.ok++;
	if (resp->n_masters > 0)
		learn_masters(hb, resp->masters, resp->n_masters, address);
	if (resp->master_leader_address != NULL && resp->master_leader_address[0] != '\0' &&
	    strcmp(resp->master_leader_address, address) != 0)
		set_hint(hb, resp->master_leader_address);
	for (size_t i = 0; i < resp->n_instructions && !hb->stopping; i++) {
		hb->stats.instructions++;
		service_execute(hb->svc, resp->instructions[i]);
	}
	docraft__heartbeat_response__free_unpacked(resp, NULL);
}

static void send_heartbeat(struct heartbeat *hb)
{
	Docraft__HeartbeatRequest msg = DOCRAFT__HEARTBEAT_REQUEST__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct arena a = ARENA_INIT;
	const char *to = target(hb);
	int rv;

	if (hb->inflight || hb->stopping)
		return;
	msg.uuid = hb->uuid;
	msg.address = hb->address;
	msg.placement = hb->placement;
	msg.redis_address = hb->redis_address;
	msg.n_tablets = manager_reports(hb->m, &a, &msg.tablets);
	hb->req.data = hb;
	rv = rpc_call_message(hb->cl, to, DOCRAFT__METHOD__MASTER_HEARTBEAT, &msg.base,
			      hb->timeout_ms, &hb->req, done_cb, errmsg);
	arena_free(&a);
	if (rv != 0) {
		failed(hb, to, rv, errmsg);
		rotate(hb);
		return;
	}
	hb->inflight = true;
	hb->stats.sent++;
}

static void timer_cb(uv_timer_t *t)
{
	struct heartbeat *hb = t->data;
	hb->followed = false;
	send_heartbeat(hb);
}

int heartbeat_start(struct heartbeat *hb, uv_loop_t *loop, struct rpc_client *cl,
		    struct manager *m, struct service *svc, const struct heartbeat_options *o,
		    char *errmsg)
{
	memset(hb, 0, sizeof *hb);
	if (o->n_masters == 0 || o->n_masters > HEARTBEAT_MAX_MASTERS)
		return err_set(errmsg, DOCRAFT_EINVAL, "1..%d master addresses are needed",
			       HEARTBEAT_MAX_MASTERS);
	for (size_t i = 0; i < o->n_masters; i++) {
		struct sockaddr_in sa;
		char why[DOCRAFT_ERRMSG_SIZE];
		if (o->masters[i] == NULL || strlen(o->masters[i]) > RPC_ADDRESS_MAX ||
		    listener_parse_address(o->masters[i], &sa, why) != 0)
			return err_set(errmsg, DOCRAFT_EINVAL, "bad master address '%s'",
				       o->masters[i] != NULL ? o->masters[i] : "");
	}
	hb->loop = loop;
	hb->cl = cl;
	hb->m = m;
	hb->svc = svc;
	hb->uuid = xstrdup(o->uuid != NULL ? o->uuid : "");
	hb->address = xstrdup(o->address != NULL ? o->address : "");
	hb->placement = xstrdup(o->placement != NULL ? o->placement : "");
	hb->redis_address = xstrdup(o->redis_address != NULL ? o->redis_address : "");
	for (size_t i = 0; i < o->n_masters; i++) {
		hb->masters[i] = xstrdup(o->masters[i]);
		hb->flag_masters[i] = xstrdup(o->masters[i]);
	}
	hb->n_masters = o->n_masters;
	hb->n_flag_masters = o->n_masters;
	hb->interval_ms = o->interval_ms != 0 ? o->interval_ms : HEARTBEAT_DEFAULT_INTERVAL_MS;
	hb->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : hb->interval_ms;
	if (hb->timeout_ms < 500)
		hb->timeout_ms = 500;
	uv_timer_init(loop, &hb->timer);
	hb->timer.data = hb;
	uv_timer_start(&hb->timer, timer_cb, 0, hb->interval_ms);
	return 0;
}

static void timer_closed(uv_handle_t *h)
{
	struct heartbeat *hb = h->data;
	hb->timer_closed = true;
	maybe_closed(hb);
}

void heartbeat_stop(struct heartbeat *hb, heartbeat_close_cb cb)
{
	PRE(!hb->stopping && cb != NULL);
	hb->stopping = true;
	hb->close_cb = cb;
	uv_timer_stop(&hb->timer);
	uv_close((uv_handle_t *)&hb->timer, timer_closed);
}

void heartbeat_get_stats(const struct heartbeat *hb, struct heartbeat_stats *out)
{
	*out = hb->stats;
}
