/* docraft bench driver: libdocraft's blocking calls on a table
 * (k text PRIMARY KEY, v blob). By default every client thread shares one
 * docraft_client (the API is thread-safe; its loop thread serves all of
 * them and groups what they send); --client-per-thread gives each thread
 * its own client, loop thread and connections. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/driver.h"
#include "common/mem.h"

struct shared {
	const struct bench_target *t;
	docraft_client *client; /* the shared one; also used for the CREATE */
};

struct conn {
	struct shared *s;
	docraft_client *client; /* s->client, or its own */
	bool own;
};

static void set_err(char *err, size_t errlen, const char *what, int rv)
{
	const char *msg = docraft_errmsg();
	snprintf(err, errlen, "%s: %s%s%s", what, docraft_strerror(rv), msg[0] ? ": " : "", msg);
}

static bool ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int setup(const struct bench_target *t, void **out, char *err, size_t errlen)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE], cql[256];
	docraft_table_options topts = {t->tablets, t->rf, true};
	struct shared *s;
	int rv;

	if (!ident(t->table) || strlen(t->table) > 64) {
		snprintf(err, errlen, "bad table name '%s' (an identifier)", t->table);
		return -1;
	}
	s = xzalloc(sizeof *s);
	s->t = t;
	if (docraft_client_open(t->endpoints, t->docraft_options, &s->client, errmsg) != 0) {
		snprintf(err, errlen, "--masters %s: %s", t->endpoints, errmsg);
		free(s);
		return -1;
	}
	snprintf(cql, sizeof cql, "CREATE TABLE %s (k text PRIMARY KEY, v blob)", t->table);
	if ((rv = docraft_table_create_cql(s->client, cql, &topts)) != 0) {
		set_err(err, errlen, cql, rv);
		docraft_client_close(s->client);
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

static int open_conn(void *shared, int index, void **out, char *err, size_t errlen)
{
	struct shared *s = shared;
	struct conn *c = xzalloc(sizeof *c);
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	(void)index;
	c->s = s;
	c->client = s->client;
	if (s->t->client_per_thread) {
		if (docraft_client_open(s->t->endpoints, s->t->docraft_options, &c->client,
					errmsg) != 0) {
			snprintf(err, errlen, "%s", errmsg);
			free(c);
			return -1;
		}
		c->own = true;
	}
	*out = c;
	return 0;
}

static int put(void *conn, const char *key, size_t klen, const void *value, size_t vlen,
	       bool insert, char *err, size_t errlen)
{
	struct conn *c = conn;
	docraft_value k = docraft_value_textn(key, klen);
	docraft_value v = docraft_value_blob(value, vlen);
	docraft_op *op;
	int rv;

	rv = insert ? docraft_op_insert(&k, 1, &op) : docraft_op_update(&k, 1, &op);
	if (rv == 0)
		rv = docraft_op_column(op, "v", &v);
	if (rv == 0)
		rv = docraft_write(c->client, c->s->t->table, &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	docraft_op_free(op);
	if (rv != 0) {
		set_err(err, errlen, insert ? "insert" : "update", rv);
		return -1;
	}
	return 0;
}

static int get(void *conn, const char *key, size_t klen, char *err, size_t errlen)
{
	struct conn *c = conn;
	docraft_value k = docraft_value_textn(key, klen);
	docraft_result *r;
	int rv, found;

	if ((rv = docraft_get(c->client, c->s->t->table, &k, 1, 0, &r)) != 0) {
		set_err(err, errlen, "get", rv);
		return -1;
	}
	found = docraft_result_nrows(r) > 0;
	docraft_result_free(r);
	return found;
}

static void close_conn(void *conn)
{
	struct conn *c = conn;
	if (c->own)
		docraft_client_close(c->client);
	free(c);
}

static void teardown(void *shared)
{
	struct shared *s = shared;
	docraft_client_close(s->client);
	free(s);
}

static void describe(void *shared, char *out, size_t len)
{
	struct shared *s = shared;
	if (s->t->client_per_thread)
		snprintf(out, len, "one docraft_client per thread (%d), masters %s", s->t->clients,
			 s->t->endpoints);
	else
		snprintf(out, len, "1 docraft_client shared by %d thread%s, masters %s",
			 s->t->clients, s->t->clients == 1 ? "" : "s", s->t->endpoints);
}

BENCH_DRIVER(bench_driver_docraft, "docraft");
