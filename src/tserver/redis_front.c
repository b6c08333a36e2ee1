/* The tserver's Redis front end (redis_front.h). */
#include "tserver/redis_front.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "docdb/docwrite.h"
#include "net/listener.h"

/* A value as large as DocDB stores is a bulk Redis accepts, no larger. */
_Static_assert(RESP_DEFAULT_MAX_BULK == DOCWRITE_MAX_VALUE,
	       "the RESP bulk limit follows DocDB's largest value");

int tserver_redis_start(struct tserver_redis *r, uv_loop_t *loop, const char *flag,
			const char *rpc_address, char *errmsg)
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
	if (defaulted) {
		const char *colon = strrchr(rpc_address, ':');
		int n = colon != NULL ? (int)(colon - rpc_address) : (int)strlen(rpc_address);
		snprintf(address, sizeof address, "%.*s:%d", n, rpc_address, REDIS_DEFAULT_PORT);
	} else {
		snprintf(address, sizeof address, "%s", flag);
	}
	if ((rv = listener_parse_address(address, &sa, errmsg)) != 0)
		return err_wrap(errmsg, rv, "--redis-address");
	redis_server_options_default(&o);
	rv = redis_server_start(loop, &sa, &o, &r->srv, errmsg);
	if (rv != 0 && defaulted) {
		LOG_WARN("redis: %s; the Redis protocol port stays off (--redis-address sets it)",
			 errmsg);
		r->srv = NULL;
		return 0;
	}
	if (rv != 0)
		return rv;
	LOG_INFO("redis: Redis protocol on %s", redis_server_address(r->srv));
	return 0;
}

static void closed(void *arg)
{
	struct tserver_redis *r = arg;
	r->srv = NULL;
	r->closed(r);
}

void tserver_redis_close(struct tserver_redis *r, void (*cb)(struct tserver_redis *r))
{
	r->closed = cb;
	redis_server_close(r->srv, closed, r);
}
