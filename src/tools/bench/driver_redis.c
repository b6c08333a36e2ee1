/* docraft bench driver: Redis over RESP with hiredis, SET key value and GET
 * key. Each client thread owns one connection (TCP_NODELAY, as hiredis
 * sets it) to the server i mod count. A connection that fails is
 * reconnected on the next operation. What a SET's answer promises depends
 * on the server's configuration (appendfsync always: fsynced before the
 * reply); GET reads the server's memory (one server: linearizable). */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tools/bench/driver.h"
#include "common/mem.h"

struct shared {
	const struct bench_target *t;
	size_t n_endpoints;
};

struct conn {
	redisContext *ctx;
	char host[256];
	int port;
};

static int parse_endpoint(const char *ep, char *host, size_t hostlen, int *port)
{
	const char *colon;
	char *end;
	long p = 6379;
	size_t hl;
	if (strncmp(ep, "redis://", 8) == 0)
		ep += 8;
	colon = strrchr(ep, ':');
	hl = colon != NULL ? (size_t)(colon - ep) : strlen(ep);
	if (colon != NULL) {
		p = strtol(colon + 1, &end, 10);
		if (*end != '\0' || p <= 0 || p > 65535)
			return -1;
	}
	if (hl == 0 || hl >= hostlen)
		return -1;
	memcpy(host, ep, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

static int setup(const struct bench_target *t, void **out, char *err, size_t errlen)
{
	struct shared *s = xzalloc(sizeof *s);
	char ep[256], host[256];
	int port;
	s->t = t;
	s->n_endpoints = bench_endpoint(t->endpoints, 0, ep, sizeof ep);
	for (size_t i = 0; i < s->n_endpoints; i++) {
		bench_endpoint(t->endpoints, i, ep, sizeof ep);
		if (parse_endpoint(ep, host, sizeof host, &port) != 0) {
			snprintf(err, errlen, "bad Redis endpoint '%s' (host:port)", ep);
			free(s);
			return -1;
		}
	}
	if (s->n_endpoints == 0) {
		snprintf(err, errlen, "no Redis endpoint (--endpoints host:port,...)");
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* Connects c if it is not connected; 0 or -1 with the reason. */
static int ensure(struct conn *c, char *err, size_t errlen)
{
	struct timeval connect_timeout = {2, 0}, timeout = {10, 0};
	if (c->ctx != NULL && c->ctx->err == 0)
		return 0;
	if (c->ctx != NULL) {
		redisFree(c->ctx);
		c->ctx = NULL;
	}
	c->ctx = redisConnectWithTimeout(c->host, c->port, connect_timeout);
	if (c->ctx == NULL || c->ctx->err != 0) {
		snprintf(err, errlen, "connect %s:%d: %s", c->host, c->port,
			 c->ctx != NULL ? c->ctx->errstr : "out of memory");
		return -1;
	}
	redisSetTimeout(c->ctx, timeout);
	return 0;
}

static int open_conn(void *shared, int index, void **out, char *err, size_t errlen)
{
	struct shared *s = shared;
	struct conn *c = xzalloc(sizeof *c);
	char ep[256];
	bench_endpoint(s->t->endpoints, (size_t)index, ep, sizeof ep);
	parse_endpoint(ep, c->host, sizeof c->host, &c->port); /* checked by setup */
	if (ensure(c, err, errlen) != 0) {
		if (c->ctx != NULL)
			redisFree(c->ctx);
		free(c);
		return -1;
	}
	*out = c;
	return 0;
}

/* The reply of a command, or NULL with the reason. */
static redisReply *command(struct conn *c, char *err, size_t errlen, const char *fmt,
			   const void *a, size_t alen, const void *b, size_t blen)
{
	redisReply *r;
	if (ensure(c, err, errlen) != 0)
		return NULL;
	r = b != NULL ? redisCommand(c->ctx, fmt, a, alen, b, blen) :
			redisCommand(c->ctx, fmt, a, alen);
	if (r == NULL) {
		snprintf(err, errlen, "%s:%d: %s", c->host, c->port, c->ctx->errstr);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s:%d: %.*s", c->host, c->port, (int)r->len, r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

static int put(void *conn, const char *key, size_t klen, const void *value, size_t vlen,
	       bool insert, char *err, size_t errlen)
{
	redisReply *r = command(conn, err, errlen, "SET %b %b", key, klen, value, vlen);
	(void)insert;
	if (r == NULL)
		return -1;
	freeReplyObject(r);
	return 0;
}

static int get(void *conn, const char *key, size_t klen, char *err, size_t errlen)
{
	redisReply *r = command(conn, err, errlen, "GET %b", key, klen, NULL, 0);
	int found;
	if (r == NULL)
		return -1;
	found = r->type == REDIS_REPLY_STRING;
	freeReplyObject(r);
	return found;
}

static void close_conn(void *conn)
{
	struct conn *c = conn;
	if (c->ctx != NULL)
		redisFree(c->ctx);
	free(c);
}

static void teardown(void *shared)
{
	free(shared);
}

static void describe(void *shared, char *out, size_t len)
{
	struct shared *s = shared;
	snprintf(out, len, "%d RESP connection%s (hiredis %d.%d.%d) to %s%s", s->t->clients,
		 s->t->clients == 1 ? "" : "s", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
		 s->t->endpoints, s->n_endpoints > 1 ? " (thread i to server i mod n)" : "");
}

BENCH_DRIVER(bench_driver_redis, "redis");
