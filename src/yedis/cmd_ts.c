/* YugabyteDB's time series commands (YEDIS, issue 17): TSADD TSGET TSREM
 * TSRANGEBYTIME TSREVRANGEBYTIME TSCARD TSLASTN, with the reply shapes of
 * YugabyteDB's docs: TSADD and TSREM reply +OK, TSGET the value or nil,
 * the ranges and TSLASTN a flat array timestamp, value, ... (timestamps as
 * bulk strings), TSCARD an integer.
 *
 * Layout (docdb-format.md §11): root '+'; below it
 *     'b' timestamp -> 'S' value
 * 'b' is the descending int64: DocDB key order is newest first, so
 * TSLASTN and TSREVRANGEBYTIME walk forward and TSRANGEBYTIME backward.
 * There is no counter (YugabyteDB keeps none): TSCARD walks the entries.
 * TSADD's EXPIRE_IN secs / EXPIRE_AT unix-secs give the added entries a
 * TTL of their own (the key's root keeps its own expiry, if any). A time
 * series emptied by TSREM is deleted (root tombstone), as the other
 * collections are.
 *
 * Bounds of the range commands: a signed 64-bit timestamp, "(" before it
 * for an exclusive one, or -inf / +inf. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "yedis/coll.h"

#define ERR_TS "ERR timestamp is not a valid signed 64 bit integer"
#define ERR_LIMIT "ERR limit is not a valid positive 32 bit integer"

static struct pv ts_sub(int64_t ts)
{
	return pv_desc(pv_int64(ts));
}

static int parse_ts(const struct resp_arg *a, int64_t *ts)
{
	long long v;
	if (!yarg_ll(a, &v))
		return 0;
	*ts = v;
	return 1;
}

/* Checks the timestamps argv[2], argv[2 + step], ... below end; false
 * (replied) at the first that is not one. */
static bool check_ts_args(const struct resp_arg *argv, uint32_t end, uint32_t step,
			  struct buf *reply)
{
	for (uint32_t j = 2; j < end; j += step) {
		int64_t ts;
		if (!parse_ts(&argv[j], &ts)) {
			resp_error(reply, ERR_TS);
			return false;
		}
	}
	return true;
}

/* A positive 32-bit count (TSLASTN's N, TSREVRANGEBYTIME's LIMIT). */
static int parse_limit(const struct resp_arg *a, long long *n)
{
	return yarg_ll(a, n) && *n > 0 && *n <= INT32_MAX;
}

struct tsent {
	int64_t ts;
	const uint8_t *p;
	size_t n;
};

/* Collects entries in walking order within [lo, hi], up to limit. */
struct tswalk {
	int64_t lo, hi;
	bool reverse;
	long long limit; /* < 0: all */
	struct tsent *v;
	size_t n, cap;
	bool count_only, corrupt;
};

static int tswalk_fn(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct tswalk *w = arg;
	int64_t ts;
	if (nsub != 1 || sub[0].type != PV_INT64 || !sub[0].desc ||
	    (!w->count_only && value->type != PV_STRING)) {
		w->corrupt = true;
		return 1;
	}
	ts = sub[0].v.i64;
	/* forward: newest first (ts falling); reverse: ts rising */
	if (!w->reverse && ts > w->hi)
		return 0;
	if (w->reverse && ts < w->lo)
		return 0;
	if (ts < w->lo || ts > w->hi)
		return 1;
	if (w->limit == 0)
		return 1;
	if (!w->count_only) {
		w->v = xgrow(w->v, &w->cap, w->n + 1, sizeof w->v[0], 16);
		w->v[w->n] = (struct tsent){ts, value->v.s.p, value->v.s.len};
	}
	w->n++;
	if (w->limit > 0)
		w->limit--;
	return w->limit == 0;
}

static int tswalk(struct yedis_txn *t, const struct resp_arg *key, struct tswalk *w, char *errmsg)
{
	struct pv start = ts_sub(w->reverse ? w->lo : w->hi);
	int rv = yv_children(t, key, NULL, 0, w->reverse, &start, 1, tswalk_fn, w, errmsg);
	if (rv == 0 && w->corrupt)
		rv = ycoll_corrupt(errmsg, "time series", key, "bad entry");
	return rv;
}

static void reply_entries(struct buf *reply, const struct tswalk *w, bool reversed)
{
	resp_array(reply, w->n * 2);
	for (size_t k = 0; k < w->n; k++) {
		const struct tsent *e = &w->v[reversed ? w->n - 1 - k : k];
		char tmp[24];
		int n = snprintf(tmp, sizeof tmp, "%lld", (long long)e->ts);
		resp_bulk(reply, tmp, (size_t)n);
		resp_bulk(reply, e->p, e->n);
	}
}

/* Opens key as a time series: see ycoll_open. */
static int open_ts(struct yedis_txn *t, const struct resp_arg *key, bool *exists, bool *wrongtype,
		   struct buf *reply, char *errmsg)
{
	return ycoll_open(t, key, YT_TS, exists, wrongtype, reply, errmsg);
}

static int cmd_tsadd(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	uint32_t end = argc;
	int64_t ttl_ms = YEDIS_NO_TTL;
	bool exists, wrongtype;
	int rv;
	if (argc >= 6 &&
	    (ycoll_is(&argv[argc - 2], "expire_in") || ycoll_is(&argv[argc - 2], "expire_at"))) {
		long long v;
		if (!yarg_ll(&argv[argc - 1], &v)) {
			resp_error(reply, YERR_NOT_INT);
			return 0;
		}
		if (ycoll_is(&argv[argc - 2], "expire_in")) {
			if (v <= 0 || v > INT64_MAX / 1000) {
				resp_error(reply, "ERR EXPIRE_IN must be a positive number of "
						  "seconds");
				return 0;
			}
			ttl_ms = v * 1000;
		} else {
			if (v > INT64_MAX / 1000 || v * 1000 <= yv_now_ms(t)) {
				resp_error(reply, "ERR EXPIRE_AT must be in the future");
				return 0;
			}
			ttl_ms = v * 1000 - yv_now_ms(t);
		}
		end = argc - 2;
	}
	if ((end - 2) % 2 != 0 || end < 4) {
		resp_error(reply, YERR_SYNTAX);
		return 0;
	}
	if (!check_ts_args(argv, end, 2, reply))
		return 0;
	rv = open_ts(t, key, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists)
		ycoll_create(t, key, YT_TS, YCOLL_ABSENT);
	for (uint32_t j = 2; j < end; j += 2) {
		int64_t ts = 0;
		struct pv sub, val = pv_strn(argv[j + 1].p, argv[j + 1].n);
		parse_ts(&argv[j], &ts); /* checked above */
		sub = ts_sub(ts);
		yw_put_ttl(t, key, &sub, 1, &val, ttl_ms);
	}
	resp_simple(reply, "OK");
	return 0;
}

static int cmd_tsget(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	bool exists, wrongtype, found = false;
	int64_t ts;
	struct pv sub, v;
	int rv;
	(void)argc;
	if (!parse_ts(&argv[2], &ts)) {
		resp_error(reply, ERR_TS);
		return 0;
	}
	rv = open_ts(t, &argv[1], &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	sub = ts_sub(ts);
	if (exists)
		rv = yv_get(t, &argv[1], &sub, 1, &v, &found, errmsg);
	if (rv != 0)
		return rv;
	if (found && v.type == PV_STRING)
		resp_bulk(reply, v.v.s.p, v.v.s.len);
	else
		resp_null_bulk(reply);
	return 0;
}

static int cmd_tsrem(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	bool exists, wrongtype;
	struct tswalk w = {.lo = INT64_MIN, .hi = INT64_MAX, .limit = 1, .count_only = true};
	int rv;
	if (!check_ts_args(argv, argc, 1, reply))
		return 0;
	rv = open_ts(t, key, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (exists) {
		for (uint32_t j = 2; j < argc; j++) {
			int64_t ts = 0;
			struct pv sub;
			parse_ts(&argv[j], &ts); /* checked above */
			sub = ts_sub(ts);
			yw_delete(t, key, &sub, 1);
		}
		rv = tswalk(t, key, &w, errmsg); /* anything left? */
		if (rv != 0)
			return rv;
		if (w.n == 0)
			yw_delete_key(t, key);
	}
	resp_simple(reply, "OK");
	return 0;
}

/* A range bound: [(]int64, -inf or +inf, made inclusive; false when not
 * one. *empty when an exclusive bound leaves nothing (e.g. "(" INT64_MAX
 * as the low end). */
static bool parse_bound(const struct resp_arg *a, bool low, int64_t *v, bool *empty)
{
	struct resp_arg r = *a;
	bool ex = r.n > 0 && r.p[0] == '(';
	if (ex) {
		r.p++;
		r.n--;
	}
	if (ycoll_is(&r, "-inf")) {
		*v = INT64_MIN;
		return true; /* (-inf and -inf are the same bound */
	}
	if (ycoll_is(&r, "+inf")) {
		*v = INT64_MAX;
		return true;
	}
	if (!parse_ts(&r, v))
		return false;
	if (ex) {
		if (low && *v == INT64_MAX)
			*empty = true;
		else if (!low && *v == INT64_MIN)
			*empty = true;
		else
			*v += low ? 1 : -1;
	}
	return true;
}

static int ts_range(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, bool rev,
		    struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	bool exists, wrongtype, empty = false;
	struct tswalk w = {.reverse = !rev, .limit = -1};
	int rv;
	if (!parse_bound(&argv[2], true, &w.lo, &empty) ||
	    !parse_bound(&argv[3], false, &w.hi, &empty)) {
		resp_error(reply, ERR_TS);
		return 0;
	}
	if (argc > 4) {
		if (!rev || argc != 6 || !ycoll_is(&argv[4], "limit")) {
			resp_error(reply, YERR_SYNTAX);
			return 0;
		}
		if (!parse_limit(&argv[5], &w.limit)) {
			resp_error(reply, ERR_LIMIT);
			return 0;
		}
	}
	rv = open_ts(t, key, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (exists && !empty && w.lo <= w.hi)
		rv = tswalk(t, key, &w, errmsg);
	if (rv == 0)
		reply_entries(reply, &w, false);
	free(w.v);
	return rv;
}

static int cmd_tsrangebytime(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			     struct buf *reply, char *errmsg)
{
	return ts_range(t, argc, argv, false, reply, errmsg);
}

static int cmd_tsrevrangebytime(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
				struct buf *reply, char *errmsg)
{
	return ts_range(t, argc, argv, true, reply, errmsg);
}

static int cmd_tscard(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	bool exists, wrongtype;
	struct tswalk w = {.lo = INT64_MIN, .hi = INT64_MAX, .limit = -1, .count_only = true};
	int rv = open_ts(t, &argv[1], &exists, &wrongtype, reply, errmsg);
	(void)argc;
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = tswalk(t, &argv[1], &w, errmsg);
	if (rv == 0)
		resp_int(reply, (long long)w.n);
	return rv;
}

static int cmd_tslastn(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	bool exists, wrongtype;
	struct tswalk w = {.lo = INT64_MIN, .hi = INT64_MAX};
	int rv;
	(void)argc;
	if (!parse_limit(&argv[2], &w.limit)) {
		resp_error(reply, ERR_LIMIT);
		return 0;
	}
	rv = open_ts(t, &argv[1], &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = tswalk(t, &argv[1], &w, errmsg);
	if (rv == 0)
		reply_entries(reply, &w, true); /* newest N, oldest first */
	free(w.v);
	return rv;
}

static const struct ycmd cmds[] = {
	{{"tsadd", -4, YEDIS_WRITE | YEDIS_SMALL}, cmd_tsadd},
	{{"tsrem", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_tsrem},
	{{"tsget", 3, YEDIS_READONLY}, cmd_tsget},
	{{"tsrangebytime", 4, YEDIS_READONLY}, cmd_tsrangebytime},
	{{"tsrevrangebytime", -4, YEDIS_READONLY}, cmd_tsrevrangebytime},
	{{"tscard", 2, YEDIS_READONLY}, cmd_tscard},
	{{"tslastn", 3, YEDIS_READONLY}, cmd_tslastn},
};

const struct ycmd_table ycmd_ts = {cmds, sizeof cmds / sizeof cmds[0]};
