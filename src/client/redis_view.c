/* The CQL view of a Redis database (issue 17): `SELECT * FROM redis_<n>`
 * in the docraft shell lists (key, type, ttl, value) rows.
 *
 * Design note. The rows are read through the YEDIS engine on the tablets,
 * with Redis commands (client_redis, redis.c), not by decoding DocDB rows
 * in the client: the engine is the one place that knows how a Redis value
 * is stored (init markers, TTL merge records folded, expired keys hidden,
 * sorted-set and list layouts), so the view shows exactly what a Redis
 * client would read. Per tablet (docraft_redis_tablets_async), one KEYS *
 * routed to a slot of the tablet (a tablet-wide command: the tablet's own
 * keys); per key, one read request [TYPE k, TTL k], then one request with
 * the command that reads the whole value of that type:
 *
 *   string       GET            the bytes as they are
 *   hash         HGETALL        {f: v, ...}
 *   set          SMEMBERS       {m, ...}
 *   zset         ZRANGE 0 -1 WITHSCORES   [(score, m), ...]
 *   list         LRANGE 0 -1    [a, b, ...]
 *   time series  TSRANGEBYTIME  {ts: v, ...}
 *
 * A key that is gone between the calls (TYPE none) is left out; keys are
 * listed in byte order, at most limit of them. ttl is Redis's TTL in
 * seconds, null for a key without one. The replies are RESP2 (decoded
 * here, bounded: nesting at most 4 deep, every length checked against the
 * bytes there are).
 *
 * Threading: blocking; any thread but the client's loop. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/redis_slot.h"

/* ---- RESP2 replies ---- */

struct rvalue {
	char kind; /* '+' '-' ':' '$' '*'; '_' for a nil bulk or array */
	const uint8_t *s;
	size_t len;
	int64_t i;
	struct rvalue *elems;
	size_t n;
};

#define RVALUE_MAX_DEPTH 4

/* The line at *p (without "\r\n"), *p moved past it. */
static int line(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *len)
{
	for (const uint8_t *q = *p; q + 1 < end; q++)
		if (q[0] == '\r' && q[1] == '\n') {
			*s = *p;
			*len = (size_t)(q - *p);
			*p = q + 2;
			return 0;
		}
	return DOCRAFT_ECORRUPT;
}

static int int_of(const uint8_t *s, size_t len, int64_t *out)
{
	char tmp[24];
	char *e;
	if (len == 0 || len >= sizeof tmp)
		return DOCRAFT_ECORRUPT;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	*out = strtoll(tmp, &e, 10);
	return *e == '\0' ? 0 : DOCRAFT_ECORRUPT;
}

static int rdecode(const uint8_t **p, const uint8_t *end, int depth, struct arena *a,
		   struct rvalue *out)
{
	const uint8_t *s;
	size_t len;
	char kind;
	int rv;

	if (*p >= end || depth > RVALUE_MAX_DEPTH)
		return DOCRAFT_ECORRUPT;
	kind = (char)**p;
	(*p)++;
	if ((rv = line(p, end, &s, &len)) != 0)
		return rv;
	memset(out, 0, sizeof *out);
	out->kind = kind;
	switch (kind) {
	case '+':
	case '-':
		out->s = s;
		out->len = len;
		return 0;
	case ':':
		return int_of(s, len, &out->i);
	case '$':
		if ((rv = int_of(s, len, &out->i)) != 0)
			return rv;
		if (out->i < 0) {
			out->kind = '_';
			return 0;
		}
		if ((uint64_t)out->i + 2 > (uint64_t)(end - *p) || (*p)[out->i] != '\r')
			return DOCRAFT_ECORRUPT;
		out->s = *p;
		out->len = (size_t)out->i;
		*p += out->len + 2;
		return 0;
	case '*':
		if ((rv = int_of(s, len, &out->i)) != 0)
			return rv;
		if (out->i < 0) {
			out->kind = '_';
			return 0;
		}
		if ((uint64_t)out->i > (uint64_t)(end - *p) / 3) /* 3 bytes at least each */
			return DOCRAFT_ECORRUPT;
		out->n = (size_t)out->i;
		out->elems = arena_alloc(a, (out->n ? out->n : 1) * sizeof *out->elems);
		for (size_t k = 0; k < out->n; k++)
			if ((rv = rdecode(p, end, depth + 1, a, &out->elems[k])) != 0)
				return rv;
		return 0;
	default:
		return DOCRAFT_ECORRUPT;
	}
}

/* Reply i of r, decoded into a; a Redis error reply is DOCRAFT_EINVAL with
 * its text in docraft_errmsg(). */
static int reply_of(const docraft_result *r, size_t i, struct arena *a, struct rvalue *out)
{
	size_t len;
	const uint8_t *p = docraft_result_reply(r, i, &len), *end = p + len;
	if (p == NULL || rdecode(&p, end, 0, a, out) != 0 || p != end)
		return client_error(DOCRAFT_ECORRUPT, "a Redis reply does not decode");
	if (out->kind == '-')
		return client_error(DOCRAFT_EINVAL, "Redis error: %.*s", (int)out->len, out->s);
	return 0;
}

/* ---- requests ---- */

/* Runs cmd (argc words) on the tablet of slot; reply i in *out. */
static int run(docraft_client *c, unsigned db, uint16_t slot, const docraft_redis_cmd *cmds,
	       size_t n, struct arena *a, struct rvalue *out)
{
	docraft_result *r = NULL;
	int rv = client_redis(c, db, slot, cmds, n, false, &r);
	for (size_t i = 0; rv == 0 && i < n; i++)
		rv = reply_of(r, i, a, &out[i]);
	/* The decoded values borrow the result's bytes: keep them in a. */
	if (rv == 0)
		for (size_t i = 0; i < n; i++) {
			struct rvalue *v = &out[i];
			if (v->s != NULL)
				v->s = arena_dup(a, v->s, v->len ? v->len : 1);
			for (size_t k = 0; k < v->n; k++)
				if (v->elems[k].s != NULL)
					v->elems[k].s =
						arena_dup(a, v->elems[k].s,
							  v->elems[k].len ? v->elems[k].len : 1);
		}
	docraft_result_free(r);
	return rv;
}

#define BYTES(lit) ((docraft_bytes){lit, sizeof lit - 1})

static int by_bytes(const void *x, const void *y)
{
	const struct rvalue *a = x, *b = y;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = n > 0 ? memcmp(a->s, b->s, n) : 0;
	return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* ---- rendering ---- */

static void put(struct buf *b, const struct rvalue *v)
{
	if (v->kind == ':')
		buf_printf(b, "%" PRId64, v->i);
	else if (v->kind == '_')
		buf_printf(b, "null");
	else
		buf_append(b, v->s, v->len);
}

/* elems of an array reply, pairs (pairs: "k: v", or "(v, k)" swapped)
 * or single, between open and close. */
static int render(struct buf *b, const struct rvalue *v, char open, char close, bool pairs,
		  bool swapped)
{
	if (v->kind != '*')
		return client_error(DOCRAFT_ECORRUPT, "a Redis reply is not an array");
	if (pairs && v->n % 2 != 0)
		return client_error(DOCRAFT_ECORRUPT, "a Redis reply has an odd count");
	buf_push(b, open);
	for (size_t k = 0; k < v->n; k += pairs ? 2 : 1) {
		if (k > 0)
			buf_printf(b, ", ");
		if (!pairs) {
			put(b, &v->elems[k]);
		} else if (swapped) {
			buf_push(b, '(');
			put(b, &v->elems[k + 1]);
			buf_printf(b, ", ");
			put(b, &v->elems[k]);
			buf_push(b, ')');
		} else {
			put(b, &v->elems[k]);
			buf_printf(b, ": ");
			put(b, &v->elems[k + 1]);
		}
	}
	buf_push(b, close);
	return 0;
}

/* The value of key (of type) rendered into b. */
static int value_of(docraft_client *c, unsigned db, uint16_t slot, const struct rvalue *key,
		    const char *type, struct buf *b)
{
	docraft_bytes argv[6];
	docraft_redis_cmd cmd = {0, argv};
	docraft_result *r = NULL;
	const void *p;
	size_t len;
	int rv;

	argv[1] = (docraft_bytes){key->s, key->len};
	if (strcmp(type, "string") == 0) {
		argv[0] = BYTES("GET");
		cmd.argc = 2;
	} else if (strcmp(type, "hash") == 0) {
		argv[0] = BYTES("HGETALL");
		cmd.argc = 2;
	} else if (strcmp(type, "set") == 0) {
		argv[0] = BYTES("SMEMBERS");
		cmd.argc = 2;
	} else if (strcmp(type, "zset") == 0) {
		argv[0] = BYTES("ZRANGE");
		argv[2] = BYTES("0");
		argv[3] = BYTES("-1");
		argv[4] = BYTES("WITHSCORES");
		cmd.argc = 5;
	} else if (strcmp(type, "list") == 0) {
		argv[0] = BYTES("LRANGE");
		argv[2] = BYTES("0");
		argv[3] = BYTES("-1");
		cmd.argc = 4;
	} else { /* the time series type, whatever its TYPE name */
		argv[0] = BYTES("TSRANGEBYTIME");
		argv[2] = BYTES("-9223372036854775808");
		argv[3] = BYTES("9223372036854775807");
		cmd.argc = 4;
	}
	if ((rv = client_redis(c, db, slot, &cmd, 1, false, &r)) != 0)
		return rv;
	p = docraft_result_reply(r, 0, &len);
	rv = redis_view_value(type, p, len, b);
	docraft_result_free(r);
	return rv;
}

int redis_view_value(const char *type, const void *reply, size_t len, struct buf *out)
{
	const uint8_t *p = reply, *end = p + len;
	struct arena a = ARENA_INIT;
	struct rvalue v;
	int rv;

	if (p == NULL || rdecode(&p, end, 0, &a, &v) != 0 || p != end)
		rv = client_error(DOCRAFT_ECORRUPT, "a Redis reply does not decode");
	else if (v.kind == '-')
		rv = client_error(DOCRAFT_EINVAL, "Redis error: %.*s", (int)v.len, v.s);
	else if (v.kind == '_') /* gone meanwhile */
		rv = DOCRAFT_ENOTFOUND;
	else if (strcmp(type, "string") == 0)
		rv = v.kind == '$' ? (put(out, &v), 0)
				   : client_error(DOCRAFT_ECORRUPT, "GET: not a bulk string");
	else if (strcmp(type, "hash") == 0)
		rv = render(out, &v, '{', '}', true, false);
	else if (strcmp(type, "set") == 0)
		rv = render(out, &v, '{', '}', false, false);
	else if (strcmp(type, "zset") == 0)
		rv = render(out, &v, '[', ']', true, true);
	else if (strcmp(type, "list") == 0)
		rv = render(out, &v, '[', ']', false, false);
	else
		rv = render(out, &v, '{', '}', true, false);
	arena_free(&a);
	return rv;
}

/* One key's row: cells[0..4) = key, type, ttl, value. 0, DOCRAFT_ENOTFOUND
 * when the key is gone, or an error. */
static int key_row(docraft_client *c, unsigned db, const struct rvalue *key, struct arena *a,
		   struct buf *cells)
{
	uint16_t slot = redis_key_slot(key->s, key->len);
	docraft_bytes t_argv[2] = {BYTES("TYPE"), {key->s, key->len}};
	docraft_bytes l_argv[2] = {BYTES("TTL"), {key->s, key->len}};
	docraft_redis_cmd cmds[2] = {{2, t_argv}, {2, l_argv}};
	struct rvalue r[2];
	char type[32];
	int rv;

	if ((rv = run(c, db, slot, cmds, 2, a, r)) != 0)
		return rv;
	if (r[0].kind != '+' || r[0].len >= sizeof type || r[1].kind != ':')
		return client_error(DOCRAFT_ECORRUPT, "TYPE / TTL: unexpected replies");
	memcpy(type, r[0].s, r[0].len);
	type[r[0].len] = '\0';
	if (strcmp(type, "none") == 0)
		return DOCRAFT_ENOTFOUND;
	buf_append(&cells[0], key->s, key->len);
	buf_printf(&cells[1], "%s", type);
	if (r[1].i >= 0)
		buf_printf(&cells[2], "%" PRId64, r[1].i);
	else
		buf_printf(&cells[2], "null");
	return value_of(c, db, slot, key, type, &cells[3]);
}

int redis_view_rows(docraft_client *c, unsigned db, uint64_t limit, struct buf **out, size_t *nrows)
{
	docraft_result *tablets = NULL;
	struct rvalue *keys = NULL;
	size_t nkeys = 0, cap = 0, n = 0;
	struct arena a = ARENA_INIT;
	struct buf *cells = NULL;
	int rv;

	*out = NULL;
	*nrows = 0;
	if ((rv = client_redis_tablets(c, db, &tablets)) != 0)
		return rv;
	for (size_t i = 0; i < docraft_result_ntablets(tablets); i++) {
		docraft_redis_tablet t;
		docraft_bytes argv[2] = {BYTES("KEYS"), BYTES("*")};
		docraft_redis_cmd cmd = {2, argv};
		struct rvalue v;
		docraft_result_redis_tablet(tablets, i, &t);
		if ((rv = run(c, db, t.first_slot, &cmd, 1, &a, &v)) != 0)
			goto out;
		if (v.kind != '*') {
			rv = client_error(DOCRAFT_ECORRUPT, "KEYS: not an array");
			goto out;
		}
		if (nkeys + v.n > cap) {
			cap = (nkeys + v.n) * 2;
			keys = xrealloc(keys, cap * sizeof *keys);
		}
		memcpy(keys + nkeys, v.elems, v.n * sizeof *keys);
		nkeys += v.n;
	}
	if (nkeys > 0)
		qsort(keys, nkeys, sizeof *keys, by_bytes);
	cells = xcalloc((nkeys ? nkeys : 1) * 4, sizeof *cells);
	for (size_t i = 0; i < nkeys && n < limit; i++) {
		rv = key_row(c, db, &keys[i], &a, &cells[n * 4]);
		if (rv == DOCRAFT_ENOTFOUND) {
			for (size_t k = 0; k < 4; k++) {
				buf_free(&cells[n * 4 + k]);
				buf_init(&cells[n * 4 + k]);
			}
			continue;
		}
		if (rv != 0)
			goto out;
		n++;
	}
	rv = 0;
out:
	if (rv != 0) {
		for (size_t i = 0; cells != NULL && i < nkeys * 4; i++)
			buf_free(&cells[i]);
		free(cells);
		cells = NULL;
		n = 0;
	}
	*out = cells;
	*nrows = n;
	free(keys);
	arena_free(&a);
	docraft_result_free(tablets);
	return rv;
}
