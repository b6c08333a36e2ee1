/* String commands: GET SET SETEX PSETEX SETNX GETSET GETDEL APPEND STRLEN
 * GETRANGE SETRANGE INCR INCRBY DECR DECRBY INCRBYFLOAT, with Redis 7.0's
 * replies, errors and option rules (t_string.c).
 *
 * A string is a root 'S' value (yedis.h); its expiry a 't' TTL on it. SET
 * (without KEEPTTL), SETEX, PSETEX, SETNX and GETSET write a new root
 * with the TTL they give (none: no expiry); the commands that modify a
 * string (APPEND, SETRANGE, INCR...) write a new root too, with the TTL
 * that remains, so the key keeps its expiry as Redis keeps it. Redis's
 * 512 MB limit (proto-max-bulk-len) is DocDB's largest value here,
 * DOCWRITE_MAX_VALUE (4 MiB), with Redis's error text. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"
#include "docdb/docwrite.h"
#include "yedis/yedis_int.h"

#define YERR_TOO_BIG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

static bool arg_is(const struct resp_arg *a, const char *s)
{
	return a->n == strlen(s) && strncasecmp(a->p, s, a->n) == 0;
}

/* The key's root as a string command sees it: 0 with *r, and *wrong set
 * (WRONGTYPE replied) when it holds another type. */
static int string_root(struct yedis_txn *t, const struct resp_arg *key, struct yroot *r,
		       bool *wrong, struct buf *reply, char *errmsg)
{
	int rv = yv_root(t, key, r, errmsg);
	*wrong = false;
	if (rv != 0)
		return rv;
	if (r->type != YT_NONE && r->type != YT_STRING) {
		resp_error(reply, YERR_WRONGTYPE);
		*wrong = true;
	}
	return 0;
}

/* The TTL a modified string keeps: what remains of r's expiry. */
static int64_t kept_ttl(struct yedis_txn *t, const struct yroot *r)
{
	int64_t left;
	if (r->type == YT_NONE || !r->has_expiry)
		return YEDIS_NO_TTL;
	left = r->expire_at_ms - yv_now_ms(t);
	return left > 0 ? left : 1;
}

static void put_string(struct yedis_txn *t, const struct resp_arg *key, const void *p, size_t n,
		       int64_t ttl_ms)
{
	struct pv v = pv_strn(p, n);
	yw_root(t, key, YT_STRING, &v, ttl_ms);
}

static int cmd_get(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	struct yroot r;
	bool wrong;
	int rv;
	(void)argc;
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_NONE)
		resp_null_bulk(reply);
	else
		resp_bulk(reply, r.str.v.s.p, r.str.v.s.len);
	return 0;
}

/* ---- SET and its relatives (setGenericCommand) ---- */

enum {
	SET_NX = 1 << 0,
	SET_XX = 1 << 1,
	SET_GET = 1 << 2,
	SET_KEEPTTL = 1 << 3,
	SET_EX = 1 << 4,
	SET_PX = 1 << 5,
	SET_EXAT = 1 << 6,
	SET_PXAT = 1 << 7,
	SET_ANY_EXPIRE = SET_EX | SET_PX | SET_EXAT | SET_PXAT,
};

/* Redis's getExpireMillisecondsOrReply: the absolute expiry in ms, or an
 * error replied (false). */
static bool expire_ms(struct yedis_txn *t, const struct resp_arg *a, unsigned flags,
		      const char *cmd, long long *when, struct buf *reply)
{
	long long ms;
	bool seconds = flags & (SET_EX | SET_EXAT);
	if (!yarg_ll(a, &ms)) {
		resp_error(reply, YERR_NOT_INT);
		return false;
	}
	if (ms <= 0 || (seconds && ms > LLONG_MAX / 1000)) {
		resp_errorf(reply, "ERR invalid expire time in '%s' command", cmd);
		return false;
	}
	if (seconds)
		ms *= 1000;
	if (flags & (SET_EX | SET_PX)) {
		long long now = yv_now_ms(t);
		if (ms > LLONG_MAX - now) {
			resp_errorf(reply, "ERR invalid expire time in '%s' command", cmd);
			return false;
		}
		ms += now;
	}
	*when = ms;
	return true;
}

/* setGenericCommand: value val for key; expire (absolute ms) when
 * has_when; ok / abort: the replies (NULL: +OK / nil). */
static int set_generic(struct yedis_txn *t, unsigned flags, const struct resp_arg *key,
		       const struct resp_arg *val, bool has_when, long long when, bool ok_one,
		       struct buf *reply, char *errmsg)
{
	struct yroot r;
	bool read = flags & (SET_NX | SET_XX | SET_GET | SET_KEEPTTL), found = false;
	int64_t ttl = YEDIS_NO_TTL;
	int rv;

	/* A plain SET replaces whatever is there: it reads nothing. */
	memset(&r, 0, sizeof r);
	if (read && (rv = yv_root(t, key, &r, errmsg)) != 0)
		return rv;
	if ((flags & SET_GET) && r.type != YT_NONE && r.type != YT_STRING) {
		resp_error(reply, YERR_WRONGTYPE);
		return 0;
	}
	found = r.type != YT_NONE;
	if (flags & SET_GET) {
		if (found)
			resp_bulk(reply, r.str.v.s.p, r.str.v.s.len);
		else
			resp_null_bulk(reply);
	}
	if (((flags & SET_NX) && found) || ((flags & SET_XX) && !found)) {
		if (!(flags & SET_GET)) {
			if (ok_one)
				resp_int(reply, 0);
			else
				resp_null_bulk(reply);
		}
		return 0;
	}
	if (has_when) {
		long long left = when - yv_now_ms(t);
		if (left <= 0) {
			/* Already expired: Redis sets, then the key is gone. */
			if (found || !read)
				yw_delete_key(t, key);
			goto done;
		}
		ttl = left;
	} else if ((flags & SET_KEEPTTL) && r.type != YT_NONE) {
		ttl = kept_ttl(t, &r);
	}
	put_string(t, key, val->p, val->n, ttl);
done:
	if (!(flags & SET_GET)) {
		if (ok_one)
			resp_int(reply, 1);
		else
			resp_simple(reply, "OK");
	}
	return 0;
}

static int cmd_set(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	unsigned flags = 0;
	const struct resp_arg *expire = NULL;
	long long when = 0;

	/* parseExtendedStringArgumentsOrReply, COMMAND_SET. */
	for (uint32_t j = 3; j < argc; j++) {
		const struct resp_arg *o = &argv[j];
		bool next = j + 1 < argc;
		if (arg_is(o, "nx") && !(flags & SET_XX)) {
			flags |= SET_NX;
		} else if (arg_is(o, "xx") && !(flags & SET_NX)) {
			flags |= SET_XX;
		} else if (arg_is(o, "get")) {
			flags |= SET_GET;
		} else if (arg_is(o, "keepttl") && !(flags & SET_ANY_EXPIRE)) {
			flags |= SET_KEEPTTL;
		} else if (arg_is(o, "ex") && !(flags & SET_KEEPTTL) &&
			   !(flags & (SET_EXAT | SET_PX | SET_PXAT)) && next) {
			flags |= SET_EX;
			expire = &argv[++j];
		} else if (arg_is(o, "px") && !(flags & SET_KEEPTTL) &&
			   !(flags & (SET_EX | SET_EXAT | SET_PXAT)) && next) {
			flags |= SET_PX;
			expire = &argv[++j];
		} else if (arg_is(o, "exat") && !(flags & SET_KEEPTTL) &&
			   !(flags & (SET_EX | SET_PX | SET_PXAT)) && next) {
			flags |= SET_EXAT;
			expire = &argv[++j];
		} else if (arg_is(o, "pxat") && !(flags & SET_KEEPTTL) &&
			   !(flags & (SET_EX | SET_EXAT | SET_PX)) && next) {
			flags |= SET_PXAT;
			expire = &argv[++j];
		} else {
			resp_error(reply, YERR_SYNTAX);
			return 0;
		}
	}
	if (expire != NULL && !expire_ms(t, expire, flags, "set", &when, reply))
		return 0;
	return set_generic(t, flags, &argv[1], &argv[2], expire != NULL, when, false, reply,
			   errmsg);
}

static int setex_generic(struct yedis_txn *t, const struct resp_arg *argv, unsigned unit,
			 const char *cmd, struct buf *reply, char *errmsg)
{
	long long when;
	if (!expire_ms(t, &argv[2], unit, cmd, &when, reply))
		return 0;
	return set_generic(t, 0, &argv[1], &argv[3], true, when, false, reply, errmsg);
}

static int cmd_setex(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	(void)argc;
	return setex_generic(t, argv, SET_EX, "setex", reply, errmsg);
}

static int cmd_psetex(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	(void)argc;
	return setex_generic(t, argv, SET_PX, "psetex", reply, errmsg);
}

static int cmd_setnx(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	(void)argc;
	return set_generic(t, SET_NX, &argv[1], &argv[2], false, 0, true, reply, errmsg);
}

static int cmd_getset(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	(void)argc;
	return set_generic(t, SET_GET, &argv[1], &argv[2], false, 0, false, reply, errmsg);
}

static int cmd_getdel(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	struct yroot r;
	bool wrong;
	int rv;
	(void)argc;
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_NONE) {
		resp_null_bulk(reply);
		return 0;
	}
	resp_bulk(reply, r.str.v.s.p, r.str.v.s.len);
	yw_delete_key(t, &argv[1]);
	return 0;
}

/* ---- modifying a string ---- */

/* Redis's checkStringLength: a string of size + append bytes. */
static bool length_ok(long long size, long long append, struct buf *reply)
{
	long long total = size + append;
	if (total > (long long)DOCWRITE_MAX_VALUE || total < size || total < append) {
		resp_error(reply, YERR_TOO_BIG);
		return false;
	}
	return true;
}

static int cmd_append(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	struct yroot r;
	bool wrong;
	uint8_t *s;
	size_t old;
	int rv;
	(void)argc;
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_NONE) {
		put_string(t, &argv[1], argv[2].p, argv[2].n, YEDIS_NO_TTL);
		resp_int(reply, (long long)argv[2].n);
		return 0;
	}
	old = r.str.v.s.len;
	if (!length_ok((long long)old, (long long)argv[2].n, reply))
		return 0;
	s = arena_alloc(yv_arena(t), old + argv[2].n + 1);
	memcpy(s, r.str.v.s.p, old);
	memcpy(s + old, argv[2].p, argv[2].n);
	put_string(t, &argv[1], s, old + argv[2].n, kept_ttl(t, &r));
	resp_int(reply, (long long)(old + argv[2].n));
	return 0;
}

static int cmd_strlen(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	struct yroot r;
	bool wrong;
	int rv;
	(void)argc;
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	resp_int(reply, r.type == YT_NONE ? 0 : (long long)r.str.v.s.len);
	return 0;
}

static int cmd_getrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			struct buf *reply, char *errmsg)
{
	struct yroot r;
	long long start, end, len;
	bool wrong;
	int rv;
	(void)argc;
	if (!yarg_ll(&argv[2], &start) || !yarg_ll(&argv[3], &end)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_NONE) {
		resp_bulk(reply, "", 0);
		return 0;
	}
	len = (long long)r.str.v.s.len;
	if (start < 0 && end < 0 && start > end) {
		resp_bulk(reply, "", 0);
		return 0;
	}
	if (start < 0)
		start = len + start;
	if (end < 0)
		end = len + end;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= len)
		end = len - 1;
	if (start > end || len == 0)
		resp_bulk(reply, "", 0);
	else
		resp_bulk(reply, r.str.v.s.p + start, (size_t)(end - start + 1));
	return 0;
}

static int cmd_setrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			struct buf *reply, char *errmsg)
{
	struct yroot r;
	long long off;
	size_t old = 0, n;
	uint8_t *s;
	bool wrong;
	int rv;
	(void)argc;
	if (!yarg_ll(&argv[2], &off)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if (off < 0) {
		resp_error(reply, "ERR offset is out of range");
		return 0;
	}
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_STRING)
		old = r.str.v.s.len;
	if (argv[3].n == 0) {
		resp_int(reply, (long long)old);
		return 0;
	}
	if (!length_ok(off, (long long)argv[3].n, reply))
		return 0;
	n = (size_t)off + argv[3].n;
	if (n < old)
		n = old;
	s = arena_alloc(yv_arena(t), n + 1);
	memset(s, 0, n);
	if (old > 0)
		memcpy(s, r.str.v.s.p, old);
	memcpy(s + off, argv[3].p, argv[3].n);
	put_string(t, &argv[1], s, n, kept_ttl(t, &r));
	resp_int(reply, (long long)n);
	return 0;
}

/* incrDecrCommand. */
static int incr_by(struct yedis_txn *t, const struct resp_arg *key, long long incr,
		   struct buf *reply, char *errmsg)
{
	struct yroot r;
	long long v = 0;
	char num[32];
	bool wrong;
	int rv, n;
	if ((rv = string_root(t, key, &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_STRING && !resp_string2ll((const char *)r.str.v.s.p, r.str.v.s.len, &v)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if ((incr < 0 && v < 0 && incr < LLONG_MIN - v) ||
	    (incr > 0 && v > 0 && incr > LLONG_MAX - v)) {
		resp_error(reply, YERR_OVERFLOW);
		return 0;
	}
	v += incr;
	n = snprintf(num, sizeof num, "%lld", v);
	put_string(t, key, num, (size_t)n, kept_ttl(t, &r));
	resp_int(reply, v);
	return 0;
}

static int cmd_incr(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	(void)argc;
	return incr_by(t, &argv[1], 1, reply, errmsg);
}

static int cmd_decr(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	(void)argc;
	return incr_by(t, &argv[1], -1, reply, errmsg);
}

static int cmd_incrby(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	long long incr;
	(void)argc;
	if (!yarg_ll(&argv[2], &incr)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	return incr_by(t, &argv[1], incr, reply, errmsg);
}

static int cmd_decrby(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	long long incr;
	(void)argc;
	if (!yarg_ll(&argv[2], &incr)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if (incr == LLONG_MIN) {
		resp_error(reply, "ERR decrement would overflow");
		return 0;
	}
	return incr_by(t, &argv[1], -incr, reply, errmsg);
}

static int cmd_incrbyfloat(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			   struct buf *reply, char *errmsg)
{
	struct yroot r;
	long double v = 0, incr;
	char *num;
	size_t n;
	bool wrong;
	int rv;
	(void)argc;
	if ((rv = string_root(t, &argv[1], &r, &wrong, reply, errmsg)) != 0 || wrong)
		return rv;
	if (r.type == YT_STRING) {
		struct resp_arg cur = {(const char *)r.str.v.s.p, r.str.v.s.len};
		if (!yarg_ldouble(&cur, &v)) {
			resp_error(reply, YERR_NOT_FLOAT);
			return 0;
		}
	}
	if (!yarg_ldouble(&argv[2], &incr)) {
		resp_error(reply, YERR_NOT_FLOAT);
		return 0;
	}
	v += incr;
	if (isnan(v) || isinf(v)) {
		resp_error(reply, "ERR increment would produce NaN or Infinity");
		return 0;
	}
	num = arena_alloc(yv_arena(t), YFMT_LDOUBLE_CAP);
	n = yfmt_ldouble(num, YFMT_LDOUBLE_CAP, v, true);
	put_string(t, &argv[1], num, n, kept_ttl(t, &r));
	resp_bulk(reply, num, n);
	return 0;
}

static const struct ycmd cmds[] = {
	{{"get", 2, YEDIS_READONLY}, cmd_get},
	{{"set", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_set},
	{{"setex", 4, YEDIS_WRITE | YEDIS_SMALL}, cmd_setex},
	{{"psetex", 4, YEDIS_WRITE | YEDIS_SMALL}, cmd_psetex},
	{{"setnx", 3, YEDIS_WRITE | YEDIS_SMALL}, cmd_setnx},
	{{"getset", 3, YEDIS_WRITE}, cmd_getset},
	{{"getdel", 2, YEDIS_WRITE}, cmd_getdel},
	{{"append", 3, YEDIS_WRITE | YEDIS_SMALL}, cmd_append},
	{{"strlen", 2, YEDIS_READONLY}, cmd_strlen},
	{{"getrange", 4, YEDIS_READONLY}, cmd_getrange},
	{{"setrange", 4, YEDIS_WRITE | YEDIS_SMALL}, cmd_setrange},
	{{"incr", 2, YEDIS_WRITE | YEDIS_SMALL}, cmd_incr},
	{{"incrby", 3, YEDIS_WRITE | YEDIS_SMALL}, cmd_incrby},
	{{"decr", 2, YEDIS_WRITE | YEDIS_SMALL}, cmd_decr},
	{{"decrby", 3, YEDIS_WRITE | YEDIS_SMALL}, cmd_decrby},
	{{"incrbyfloat", 3, YEDIS_WRITE | YEDIS_SMALL}, cmd_incrbyfloat},
};

const struct ycmd_table ycmd_strings = {cmds, sizeof cmds / sizeof cmds[0]};
