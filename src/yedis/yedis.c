/* The YEDIS engine: the command table, the txn and the dispatcher
 * (yedis.h), and the argument and formatting helpers every command file
 * shares (yedis_int.h).
 *
 * The table is the concatenation of the command files' fragments, in the
 * order of `fragments` below; yedis_command_find scans it (a few dozen
 * entries, names compared case-insensitively as Redis does). yedis_exec
 * checks, in Redis's order, the arity, then that a write command runs in
 * a writable txn, then the key's size, and hands the command to its file. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/mem.h"
#include "yedis/txn.h"
#include "yedis/yedis_int.h"

static const struct ycmd_table *const fragments[] = {
	&ycmd_strings, &ycmd_keys, &ycmd_hashes, &ycmd_sets, &ycmd_zsets, &ycmd_lists, &ycmd_ts,
};

#define NFRAGMENTS (sizeof fragments / sizeof fragments[0])

size_t yedis_command_count(void)
{
	size_t n = 0;
	for (size_t i = 0; i < NFRAGMENTS; i++)
		n += fragments[i]->n;
	return n;
}

static const struct ycmd *ycmd_at(size_t i)
{
	for (size_t f = 0; f < NFRAGMENTS; f++) {
		if (i < fragments[f]->n)
			return &fragments[f]->cmds[i];
		i -= fragments[f]->n;
	}
	return NULL;
}

const struct yedis_command *yedis_command_at(size_t i)
{
	const struct ycmd *c = ycmd_at(i);
	return c != NULL ? &c->info : NULL;
}

static const struct ycmd *ycmd_find(const char *name, size_t n)
{
	for (size_t f = 0; f < NFRAGMENTS; f++)
		for (size_t i = 0; i < fragments[f]->n; i++) {
			const struct ycmd *c = &fragments[f]->cmds[i];
			if (strlen(c->info.name) == n && strncasecmp(c->info.name, name, n) == 0)
				return c;
		}
	return NULL;
}

const struct yedis_command *yedis_command_find(const char *name, size_t n)
{
	const struct ycmd *c = ycmd_find(name, n);
	return c != NULL ? &c->info : NULL;
}

bool yedis_reply_small(const struct yedis_command *cmd, uint32_t argc, const struct resp_arg *argv)
{
	if (!(cmd->flags & YEDIS_SMALL))
		return false;
	if (strcmp(cmd->name, "set") == 0) /* SET k v [options]: GET returns the old value */
		for (uint32_t i = 3; i < argc; i++)
			if (argv[i].n == 3 && strncasecmp(argv[i].p, "get", 3) == 0)
				return false;
	return true;
}

const char *ytype_name(int type)
{
	switch (type) {
	case YT_STRING:
		return "string";
	case YT_HASH:
		return "hash";
	case YT_SET:
		return "set";
	case YT_ZSET:
		return "zset";
	case YT_LIST:
		return "list";
	case YT_TS:
		return "tsdb"; /* YugabyteDB's YEDIS name for its time series */
	default:
		return "none";
	}
}

/* ---- the txn ---- */

struct yedis_txn *yedis_txn_new(const struct yedis_txn_options *o)
{
	struct yedis_txn *t = xzalloc(sizeof *t);
	PRE(o->store != NULL && o->ht != 0);
	t->o = *o;
	arena_init(&t->arena);
	t->rng = o->seed;
	buf_init(&t->kbuf);
	buf_init(&t->vbuf);
	buf_init(&t->memo_key);
	return t;
}

void yedis_txn_free(struct yedis_txn *t)
{
	if (t == NULL)
		return;
	view_free(t);
	arena_free(&t->arena);
	buf_free(&t->kbuf);
	buf_free(&t->vbuf);
	buf_free(&t->memo_key);
	free(t);
}

/* ---- the dispatcher ---- */

bool yarg_sub_ok(const struct resp_arg *a)
{
	return a->n <= YEDIS_MAX_KEY;
}

int yedis_exec(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
	       char *errmsg)
{
	const struct ycmd *c;
	char name[64];
	size_t n;

	PRE(argc > 0);
	c = ycmd_find(argv[0].p, argv[0].n);
	if (c == NULL) {
		n = argv[0].n < 48 ? argv[0].n : 48;
		resp_errorf(reply, "ERR unknown command '%.*s'", (int)n, argv[0].p);
		return 0;
	}
	if ((c->info.arity > 0 && argc != (uint32_t)c->info.arity) ||
	    (c->info.arity < 0 && argc < (uint32_t)-c->info.arity)) {
		snprintf(name, sizeof name, "%s", c->info.name);
		resp_errorf(reply, "ERR wrong number of arguments for '%s' command", name);
		return 0;
	}
	if ((c->info.flags & YEDIS_WRITE) && !yv_writable(t)) {
		resp_errorf(reply, "ERR docraft: '%s' writes, but runs in a read-only transaction",
			    c->info.name);
		return 0;
	}
	if (!(c->info.flags & YEDIS_TABLET) && !yarg_sub_ok(&argv[1])) {
		resp_error(reply, YERR_TOO_LONG);
		return 0;
	}
	return c->fn(t, argc, argv, reply, errmsg);
}

/* ---- arguments and formatting ---- */

int yarg_ll(const struct resp_arg *a, long long *v)
{
	return resp_string2ll(a->p, a->n, v);
}

/* Redis's string2d / string2ld: strtod over the whole argument, no leading
 * blank, no NaN, no overflow to infinity from a finite text. */
#define MAX_FLOAT_CHARS (5 * 1024)

int yarg_double(const struct resp_arg *a, double *v)
{
	char buf[MAX_FLOAT_CHARS];
	char *end;
	double d;
	if (a->n == 0 || a->n >= sizeof buf)
		return 0;
	memcpy(buf, a->p, a->n);
	buf[a->n] = '\0';
	errno = 0;
	d = strtod(buf, &end);
	if (isspace((unsigned char)buf[0]) || *end != '\0' || (size_t)(end - buf) != a->n ||
	    (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL || fpclassify(d) == FP_ZERO)) ||
	    isnan(d))
		return 0;
	*v = d;
	return 1;
}

int yarg_ldouble(const struct resp_arg *a, long double *v)
{
	char buf[MAX_FLOAT_CHARS];
	char *end;
	long double d;
	if (a->n == 0 || a->n >= sizeof buf)
		return 0;
	memcpy(buf, a->p, a->n);
	buf[a->n] = '\0';
	errno = 0;
	d = strtold(buf, &end);
	if (isspace((unsigned char)buf[0]) || *end != '\0' || (size_t)(end - buf) != a->n ||
	    (errno == ERANGE && (d == HUGE_VALL || d == -HUGE_VALL || fpclassify(d) == FP_ZERO)) ||
	    errno == EINVAL || isnan(d))
		return 0;
	*v = d;
	return 1;
}

size_t yfmt_ldouble(char *out, size_t cap, long double d, bool humanfriendly)
{
	int l;
	PRE(cap >= 8);
	if (isinf(d)) {
		snprintf(out, cap, "%s", d > 0 ? "inf" : "-inf");
		return strlen(out);
	}
	if (!humanfriendly) {
		l = snprintf(out, cap, "%.17Lg", d);
		return l < 0 || (size_t)l >= cap ? 0 : (size_t)l;
	}
	/* Redis's ld2string LD_STR_HUMAN: "%.17Lf", trailing zeros after the
	 * point removed, then the point; "-0" becomes "0". */
	l = snprintf(out, cap, "%.17Lf", d);
	if (l < 0 || (size_t)l >= cap)
		return 0;
	if (strchr(out, '.') != NULL) {
		char *p = out + l - 1;
		while (*p == '0') {
			p--;
			l--;
		}
		if (*p == '.')
			l--;
	}
	if (l == 2 && out[0] == '-' && out[1] == '0') {
		out[0] = '0';
		l = 1;
	}
	out[l] = '\0';
	return (size_t)l;
}

size_t yfmt_double(char *out, size_t cap, double d, bool humanfriendly)
{
	int l;
	if (humanfriendly)
		return yfmt_ldouble(out, cap, (long double)d, true);
	PRE(cap >= 8);
	if (isinf(d)) {
		snprintf(out, cap, "%s", d > 0 ? "inf" : "-inf");
		return strlen(out);
	}
	l = snprintf(out, cap, "%.17g", d);
	return l < 0 || (size_t)l >= cap ? 0 : (size_t)l;
}
