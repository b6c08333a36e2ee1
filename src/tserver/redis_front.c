/* The tserver's Redis front end (redis_front.h). */
#include "tserver/redis_front.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "docdb/docwrite.h"
#include "net/listener.h"
#include "tserver/heartbeat.h"
#include "tserver/redis_int.h"

/* A value as large as DocDB stores is a bulk Redis accepts, no larger. */
_Static_assert(RESP_DEFAULT_MAX_BULK == DOCWRITE_MAX_VALUE,
	       "the RESP bulk limit follows DocDB's largest value");

static int open_client(struct tserver_redis *r, uv_loop_t *loop, const char *const *masters,
		       size_t n_masters, char *errmsg)
{
	docraft_client_options co;
	char list[HEARTBEAT_MAX_MASTERS * (LISTENER_ADDRESS_MAX + 1)];
	size_t len = 0;

	r->data.client = NULL;
	if (n_masters == 0)
		return 0;
	for (size_t i = 0; i < n_masters; i++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i > 0 ? "," : "",
					masters[i]);
	if (len >= sizeof list)
		return err_set(errmsg, DOCRAFT_EINVAL, "redis: master list too long");
	docraft_client_options_init(&co);
	co.loop = loop;
	return docraft_client_open(list, &co, &r->data.client, errmsg);
}

int tserver_redis_start(struct tserver_redis *r, uv_loop_t *loop, const char *flag,
			const char *rpc_address, const char *const *masters, size_t n_masters,
			char *errmsg)
{
	char address[TSERVER_REDIS_ADDRESS_MAX];
	struct redis_server_options o;
	struct sockaddr_in sa;
	bool defaulted = flag == NULL || flag[0] == '\0';
	int rv;

	r->srv = NULL;
	if (!defaulted && strcmp(flag, "off") == 0) {
		LOG_INFO("redis: --redis-address off: no Redis protocol port");
		return 0;
	}
	if (defaulted || flag[0] == ':') {
		const char *colon = strrchr(rpc_address, ':');
		int n = colon != NULL ? (int)(colon - rpc_address) : (int)strlen(rpc_address);
		if (defaulted)
			snprintf(address, sizeof address, "%.*s:%d", n, rpc_address,
				 REDIS_DEFAULT_PORT);
		else
			snprintf(address, sizeof address, "%.*s%s", n, rpc_address, flag);
	} else {
		snprintf(address, sizeof address, "%s", flag);
	}
	if ((rv = listener_parse_address(address, &sa, errmsg)) != 0)
		return err_wrap(errmsg, rv, "--redis-address");
	redis_server_options_default(&o);
	redis_data_init(&r->data, r->uuid);
	o.commands = r->data.commands;
	o.n_commands = r->data.n_commands;
	o.data = &r->data;
	o.exec = redis_data_exec;
	o.info = redis_data_info;
	o.cluster = true; /* CLUSTER SLOTS & co. (redis_cluster.c) */
	if (r->max_per_ip_set)
		o.max_per_ip = r->max_per_ip;
	rv = redis_server_start(loop, &sa, &o, &r->srv, errmsg);
	if (rv != 0)
		redis_data_free(&r->data);
	if (rv != 0 && defaulted) {
		LOG_WARN("redis: %s; the Redis protocol port stays off (--redis-address sets it)",
			 errmsg);
		r->srv = NULL;
		return 0;
	}
	if (rv != 0)
		return rv;
	if ((rv = open_client(r, loop, masters, n_masters, errmsg)) != 0) {
		/* a bad master list was refused by the flags already: unexpected */
		LOG_WARN("redis: no data commands: %s", errmsg);
		r->data.client = NULL;
	}
	r->data.batcher = NULL;
	if (r->data.client != NULL &&
	    (rv = redis_batcher_new(loop, r->data.client, &r->data.batcher)) != 0) {
		LOG_WARN("redis: every command in its own request: %s", uv_strerror(rv));
		r->data.batcher = NULL;
	}
	LOG_INFO("redis: Redis protocol on %s", redis_server_address(r->srv));
	return 0;
}

static void part_closed(void *arg)
{
	struct tserver_redis *r = arg;
	if (--r->closing == 0) {
		r->srv = NULL;
		redis_data_free(&r->data);
		r->data.client = NULL;
		r->closed(r);
	}
}

static void batcher_closed(void *arg)
{
	struct tserver_redis *r = arg;
	r->data.batcher = NULL;
	part_closed(r);
}

void tserver_redis_close(struct tserver_redis *r, void (*cb)(struct tserver_redis *r))
{
	r->closed = cb;
	r->closing = 1;
	/* what the batcher holds goes to the client before it closes */
	if (r->data.batcher != NULL) {
		r->closing++;
		redis_batcher_close(r->data.batcher, batcher_closed, r);
	}
	/* the client first: its requests fail now, and the commands waiting
	 * for them reply and release their connections */
	if (r->data.client != NULL) {
		r->closing++;
		if (docraft_client_close_async(r->data.client, part_closed, r) != 0)
			r->closing--;
	}
	redis_server_close(r->srv, part_closed, r);
}
