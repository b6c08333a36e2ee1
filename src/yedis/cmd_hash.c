/* Hashes: HSET HSETNX HGET HMSET HMGET HGETALL HDEL HEXISTS HLEN HKEYS
 * HVALS HINCRBY HINCRBYFLOAT HSTRLEN (Redis 7's t_hash.c, reply for
 * reply).
 *
 * Layout (yedis.h): root '{', children 'S' field -> 'S' value. The root
 * marker is written only when the key holds no live hash (new, deleted
 * or expired: the new root hides the old children), so a hash keeps its
 * expiry across HSETs; a command that removes the last field deletes the
 * key (coll.h). Field order in replies is byte order, which Redis leaves
 * unspecified.
 *
 * HINCRBYFLOAT computes in long double and formats "%.17Lf" without
 * trailing zeros, as Redis does (yarg_ldouble, yfmt_ldouble): a double
 * would reply other digits (3000 + 0.1 is 3000.10000000000000009) and
 * overflow sooner. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yedis/coll.h"

/* ---- reads ---- */

/* The value of field *f of a present hash. */
static int field_get(struct yedis_txn *t, const struct resp_arg *key, const struct resp_arg *f,
		     struct pv *v, bool *found, char *errmsg)
{
	struct pv sub = ycoll_sub(f);
	int rv = yv_get(t, key, &sub, 1, v, found, errmsg);
	if (rv == 0 && *found && v->type != PV_STRING)
		*found = false; /* no command writes another value type */
	return rv;
}

/* The hash's state and the value of field argv[2] (absent when the hash
 * is): *ok false when a reply (WRONGTYPE) has been appended. */
static int field_lookup(struct yedis_txn *t, const struct resp_arg *argv, int *state, struct pv *v,
			bool *found, bool *ok, struct buf *reply, char *errmsg)
{
	int rv = ycoll_lookup(t, &argv[1], YT_HASH, state, reply, errmsg);
	*found = false;
	*ok = false;
	if (rv != 0 || *state == YCOLL_WRONGTYPE)
		return rv;
	if (*state == YCOLL_PRESENT &&
	    (rv = field_get(t, &argv[1], &argv[2], v, found, errmsg)) != 0)
		return rv;
	*ok = true;
	return 0;
}

static int hmget(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		 char *errmsg)
{
	int state, rv;
	if ((rv = ycoll_lookup(t, &argv[1], YT_HASH, &state, reply, errmsg)) != 0)
		return rv;
	if (state == YCOLL_WRONGTYPE)
		return 0;
	resp_array(reply, argc - 2);
	for (uint32_t i = 2; i < argc; i++) {
		struct pv v;
		bool found = false;
		if (state == YCOLL_PRESENT &&
		    (rv = field_get(t, &argv[1], &argv[i], &v, &found, errmsg)) != 0)
			return rv;
		if (found)
			resp_bulk(reply, v.v.s.p, v.v.s.len);
		else
			resp_null_bulk(reply);
	}
	return 0;
}

enum { FIELD_VALUE, FIELD_EXISTS, FIELD_STRLEN };

/* HGET (the value or nil), HEXISTS (1 or 0), HSTRLEN (its length or 0). */
static int one_field(struct yedis_txn *t, const struct resp_arg *argv, int what, struct buf *reply,
		     char *errmsg)
{
	int state, rv;
	struct pv v;
	bool found, ok;
	if ((rv = field_lookup(t, argv, &state, &v, &found, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (what == FIELD_EXISTS)
		resp_int(reply, found ? 1 : 0);
	else if (what == FIELD_STRLEN)
		resp_int(reply, found ? (long long)v.v.s.len : 0);
	else if (found)
		resp_bulk(reply, v.v.s.p, v.v.s.len);
	else
		resp_null_bulk(reply);
	return 0;
}

static int hget(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	(void)argc;
	return one_field(t, argv, FIELD_VALUE, reply, errmsg);
}

static int hexists(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	(void)argc;
	return one_field(t, argv, FIELD_EXISTS, reply, errmsg);
}

static int hstrlen(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	(void)argc;
	return one_field(t, argv, FIELD_STRLEN, reply, errmsg);
}

static int hlen(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	int state, rv;
	size_t n = 0;
	(void)argc;
	if ((rv = ycoll_lookup(t, &argv[1], YT_HASH, &state, reply, errmsg)) != 0)
		return rv;
	if (state == YCOLL_WRONGTYPE)
		return 0;
	if (state == YCOLL_PRESENT && (rv = ycoll_count(t, &argv[1], &n, errmsg)) != 0)
		return rv;
	resp_int(reply, (long long)n);
	return 0;
}

enum { WITH_FIELDS = 1, WITH_VALUES = 2 };

/* HGETALL (fields and values), HKEYS, HVALS. */
static int hall(struct yedis_txn *t, const struct resp_arg *key, int what, struct buf *reply,
		char *errmsg)
{
	int state, rv;
	struct yitem *it = NULL;
	size_t n = 0;
	if ((rv = ycoll_lookup(t, key, YT_HASH, &state, reply, errmsg)) != 0)
		return rv;
	if (state == YCOLL_WRONGTYPE)
		return 0;
	if (state == YCOLL_PRESENT && (rv = ycoll_items(t, key, &it, &n, errmsg)) != 0)
		return rv;
	resp_array(reply, what == (WITH_FIELDS | WITH_VALUES) ? 2 * n : n);
	for (size_t i = 0; i < n; i++) {
		if (what & WITH_FIELDS)
			resp_bulk(reply, it[i].sub.v.s.p, it[i].sub.v.s.len);
		if (what & WITH_VALUES) {
			if (it[i].value.type == PV_STRING)
				resp_bulk(reply, it[i].value.v.s.p, it[i].value.v.s.len);
			else
				resp_bulk(reply, "", 0); /* never written by a command */
		}
	}
	return 0;
}

static int hgetall(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	(void)argc;
	return hall(t, &argv[1], WITH_FIELDS | WITH_VALUES, reply, errmsg);
}

static int hkeys(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		 char *errmsg)
{
	(void)argc;
	return hall(t, &argv[1], WITH_FIELDS, reply, errmsg);
}

static int hvals(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		 char *errmsg)
{
	(void)argc;
	return hall(t, &argv[1], WITH_VALUES, reply, errmsg);
}

/* ---- writes ---- */

static void field_put(struct yedis_txn *t, const struct resp_arg *key, const struct resp_arg *f,
		      const void *v, size_t n)
{
	struct pv sub = ycoll_sub(f);
	struct pv val = pv_strn(v, n);
	yw_put(t, key, &sub, 1, &val);
}

/* HSET (replies the new fields) and HMSET (+OK). */
static int hset_pairs(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg, const char *name)
{
	int state, rv;
	long long added = 0;
	if (argc % 2 != 0) {
		ycoll_arity_error(reply, name);
		return 0;
	}
	if (!ycoll_subs_ok(argc, argv, 2, 2, reply))
		return 0;
	if ((rv = ycoll_lookup(t, &argv[1], YT_HASH, &state, reply, errmsg)) != 0)
		return rv;
	if (state == YCOLL_WRONGTYPE)
		return 0;
	ycoll_create(t, &argv[1], YT_HASH, state);
	for (uint32_t i = 2; i < argc; i += 2) {
		struct pv v;
		bool found = false;
		/* Through the overlay: a field given twice counts once. */
		if ((rv = field_get(t, &argv[1], &argv[i], &v, &found, errmsg)) != 0)
			return rv;
		if (!found)
			added++;
		field_put(t, &argv[1], &argv[i], argv[i + 1].p, argv[i + 1].n);
	}
	if (strcmp(name, "hmset") == 0)
		resp_simple(reply, "OK");
	else
		resp_int(reply, added);
	return 0;
}

static int hset(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	return hset_pairs(t, argc, argv, reply, errmsg, "hset");
}

static int hmset(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		 char *errmsg)
{
	return hset_pairs(t, argc, argv, reply, errmsg, "hmset");
}

static int hsetnx(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		  struct buf *reply, char *errmsg)
{
	int state, rv;
	struct pv v;
	bool found, ok;
	(void)argc;
	if (!ycoll_subs_ok(3, argv, 2, 1, reply))
		return 0;
	if ((rv = field_lookup(t, argv, &state, &v, &found, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (!found) {
		ycoll_create(t, &argv[1], YT_HASH, state);
		field_put(t, &argv[1], &argv[2], argv[3].p, argv[3].n);
	}
	resp_int(reply, found ? 0 : 1);
	return 0;
}

static int hdel(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	return ycoll_remove(t, argc, argv, YT_HASH, reply, errmsg);
}

static int hincrby(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	int state, rv;
	long long incr, old = 0;
	struct pv v;
	bool found, ok;
	char num[32];
	(void)argc;
	if (!ycoll_subs_ok(3, argv, 2, 1, reply))
		return 0;
	if (!yarg_ll(&argv[3], &incr)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if ((rv = field_lookup(t, argv, &state, &v, &found, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (found && !resp_string2ll((const char *)v.v.s.p, v.v.s.len, &old)) {
		resp_error(reply, "ERR hash value is not an integer");
		return 0;
	}
	if ((incr < 0 && old < 0 && incr < LLONG_MIN - old) ||
	    (incr > 0 && old > 0 && incr > LLONG_MAX - old)) {
		resp_error(reply, YERR_OVERFLOW);
		return 0;
	}
	ycoll_create(t, &argv[1], YT_HASH, state);
	int n = snprintf(num, sizeof num, "%lld", old + incr);
	field_put(t, &argv[1], &argv[2], num, (size_t)n);
	resp_int(reply, old + incr);
	return 0;
}

static int hincrbyfloat(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			struct buf *reply, char *errmsg)
{
	int state, rv;
	long double incr, old = 0;
	struct pv v;
	bool found, ok;
	char num[YFMT_LDOUBLE_CAP];
	(void)argc;
	if (!ycoll_subs_ok(3, argv, 2, 1, reply))
		return 0;
	if (!yarg_ldouble(&argv[3], &incr)) {
		resp_error(reply, YERR_NOT_FLOAT);
		return 0;
	}
	if (isinf(incr)) {
		resp_error(reply, "ERR value is NaN or Infinity");
		return 0;
	}
	if ((rv = field_lookup(t, argv, &state, &v, &found, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (found) {
		struct resp_arg cur = {(const char *)v.v.s.p, v.v.s.len};
		if (!yarg_ldouble(&cur, &old)) {
			resp_error(reply, "ERR hash value is not a float");
			return 0;
		}
	}
	long double sum = old + incr;
	size_t n = isnan(sum) || isinf(sum) ? 0 : yfmt_ldouble(num, sizeof num, sum, true);
	if (n == 0) {
		resp_error(reply, "ERR increment would produce NaN or Infinity");
		return 0;
	}
	ycoll_create(t, &argv[1], YT_HASH, state);
	field_put(t, &argv[1], &argv[2], num, n);
	resp_bulk(reply, num, n);
	return 0;
}

static const struct ycmd cmds[] = {
	{{"hset", -4, YEDIS_WRITE | YEDIS_SMALL}, hset},
	{{"hsetnx", 4, YEDIS_WRITE | YEDIS_SMALL}, hsetnx},
	{{"hget", 3, YEDIS_READONLY}, hget},
	{{"hmset", -4, YEDIS_WRITE | YEDIS_SMALL}, hmset},
	{{"hmget", -3, YEDIS_READONLY}, hmget},
	{{"hgetall", 2, YEDIS_READONLY}, hgetall},
	{{"hdel", -3, YEDIS_WRITE | YEDIS_SMALL}, hdel},
	{{"hexists", 3, YEDIS_READONLY}, hexists},
	{{"hlen", 2, YEDIS_READONLY}, hlen},
	{{"hkeys", 2, YEDIS_READONLY}, hkeys},
	{{"hvals", 2, YEDIS_READONLY}, hvals},
	{{"hincrby", 4, YEDIS_WRITE | YEDIS_SMALL}, hincrby},
	{{"hincrbyfloat", 4, YEDIS_WRITE | YEDIS_SMALL}, hincrbyfloat},
	{{"hstrlen", 3, YEDIS_READONLY}, hstrlen},
};

const struct ycmd_table ycmd_hashes = {cmds, sizeof cmds / sizeof cmds[0]};
