/* Sorted sets (issue 17): ZADD ZREM ZCARD ZSCORE ZINCRBY ZRANGE ZREVRANGE
 * ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANK ZREVRANK ZPOPMIN ZPOPMAX, with
 * Redis 7.0's replies and error texts.
 *
 * Layout (docdb-format.md §11): root ','; below it
 *     '%'                 -> 'I' cardinality (ZCARD in O(1))
 *     '&' 'D' score 'S' m -> '$'          (the forward map: DocDB key order
 *                                          is Redis's order, by score then
 *                                          member bytes)
 *     '\'' 'S' m          -> 'D' score    (the reverse map: ZSCORE, and the
 *                                          old score to delete on update)
 * A member's score is in both maps; every change writes both (an update
 * deletes the old forward entry). Scores are never NaN, and -0.0 is stored
 * as 0.0 (Redis too replies "0" for ZADD z -0 m), so that members of
 * score 0 order by member whatever sign they were given with.
 *
 * Ranges walk the forward map with yv_children (forward or reverse), from
 * a seek position when the range starts at a score; ranks count entries
 * (O(rank), as Redis's listpack encoding does). Reads go through the txn's
 * overlay, so ZADD then ZINCRBY in one txn see each other. An emptied
 * sorted set is deleted (root tombstone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "yedis/coll.h"

#define NANERR "ERR resulting score is not a number (NaN)"

struct zitem {
	double score;
	const uint8_t *m;
	size_t n;
};

struct zlist {
	struct zitem *v;
	size_t n, cap;
};

static void zlist_push(struct zlist *l, double score, const uint8_t *m, size_t n)
{
	l->v = xgrow(l->v, &l->cap, l->n + 1, sizeof l->v[0], 16);
	l->v[l->n++] = (struct zitem){score, m, n};
}

static double norm(double d)
{
	return d == 0 ? 0.0 : d; /* -0.0 -> 0.0 */
}

static void reply_score(struct buf *reply, double d)
{
	char tmp[64];
	size_t n = yfmt_double(tmp, sizeof tmp, d, false);
	resp_bulk(reply, tmp, n);
}

/* The reverse map path of member m. */
static void rev_path(struct pv p[2], const uint8_t *m, size_t n)
{
	p[0] = pv_ss_reverse();
	p[1] = pv_strn(m, n);
}

static int get_score(struct yedis_txn *t, const struct resp_arg *key, const uint8_t *m, size_t n,
		     double *score, bool *found, char *errmsg)
{
	struct pv p[2], v;
	int rv;
	rev_path(p, m, n);
	rv = yv_get(t, key, p, 2, &v, found, errmsg);
	if (rv != 0 || !*found)
		return rv;
	if (v.type != PV_DOUBLE || isnan(v.v.d))
		return ycoll_corrupt(errmsg, "sorted set", key, "bad score");
	*score = v.v.d;
	return 0;
}

static void put_member(struct yedis_txn *t, const struct resp_arg *key, const uint8_t *m, size_t n,
		       double score)
{
	struct pv f[3] = {pv_ss_forward(), pv_double(score), pv_strn(m, n)}, r[2];
	struct pv null = pv_null(), s = pv_double(score);
	yw_put(t, key, f, 3, &null);
	rev_path(r, m, n);
	yw_put(t, key, r, 2, &s);
}

/* Deletes member m of score from the forward map, and with both from the
 * reverse map too (an update rewrites the reverse entry instead). */
static void del_member(struct yedis_txn *t, const struct resp_arg *key, const uint8_t *m, size_t n,
		       double score, bool both)
{
	struct pv f[3] = {pv_ss_forward(), pv_double(score), pv_strn(m, n)}, r[2];
	yw_delete(t, key, f, 3);
	if (!both)
		return;
	rev_path(r, m, n);
	yw_delete(t, key, r, 2);
}

/* ---- walking the forward map ---- */

/* A score bound of ZRANGEBYSCORE: value, exclusive with "(" */
struct zbound {
	double v;
	bool ex;
};

struct walk {
	bool reverse;
	bool by_score;
	struct zbound min, max; /* by_score */
	long long skip;         /* entries (in range) to pass over first */
	long long limit;        /* entries to collect; < 0: all */
	struct zlist out;
	bool corrupt;
};

static bool below_max(const struct walk *w, double s)
{
	return w->max.ex ? s < w->max.v : s <= w->max.v;
}

static bool above_min(const struct walk *w, double s)
{
	return w->min.ex ? s > w->min.v : s >= w->min.v;
}

static int walk_fn(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct walk *w = arg;
	double s;
	(void)value;
	if (nsub != 2 || sub[0].type != PV_DOUBLE || sub[1].type != PV_STRING ||
	    isnan(sub[0].v.d)) {
		w->corrupt = true;
		return 1;
	}
	s = sub[0].v.d;
	if (w->by_score) {
		/* In walking order, entries before the range are passed,
		 * entries after it end the walk. */
		if (!w->reverse && !above_min(w, s))
			return 0;
		if (w->reverse && !below_max(w, s))
			return 0;
		if (!w->reverse && !below_max(w, s))
			return 1;
		if (w->reverse && !above_min(w, s))
			return 1;
	}
	if (w->limit == 0)
		return 1;
	if (w->skip > 0) {
		w->skip--;
		return 0;
	}
	zlist_push(&w->out, s, sub[1].v.s.p, sub[1].v.s.len);
	if (w->limit > 0)
		w->limit--;
	return w->limit == 0;
}

/* Walks key's forward map into w->out. */
static int walk(struct yedis_txn *t, const struct resp_arg *key, struct walk *w, char *errmsg)
{
	struct pv prefix = pv_ss_forward(), start;
	const struct pv *sp = NULL;
	int rv;
	if (w->by_score) {
		/* Seek to the first score of the range: a path [score] sorts
		 * before its extensions [score, member], so forward from
		 * [min] and backward from [the next double above max]. */
		if (!w->reverse && w->min.v != -INFINITY) {
			start = pv_double(norm(w->min.v));
			sp = &start;
		} else if (w->reverse && w->max.v != INFINITY) {
			start = pv_double(nextafter(norm(w->max.v), INFINITY));
			sp = &start;
		}
	}
	rv = yv_children(t, key, &prefix, 1, w->reverse, sp, sp != NULL ? 1 : 0, walk_fn, w,
			 errmsg);
	if (rv == 0 && w->corrupt)
		rv = ycoll_corrupt(errmsg, "sorted set", key, "bad entry");
	return rv;
}

static void reply_items(struct buf *reply, const struct zlist *l, bool withscores)
{
	resp_array(reply, l->n * (withscores ? 2 : 1));
	for (size_t i = 0; i < l->n; i++) {
		resp_bulk(reply, l->v[i].m, l->v[i].n);
		if (withscores)
			reply_score(reply, l->v[i].score);
	}
}

/* ---- ZADD, ZINCRBY ---- */

enum {
	Z_NX = 1,
	Z_XX = 2,
	Z_GT = 4,
	Z_LT = 8,
	Z_CH = 16,
	Z_INCR = 32,
};

/* Adds pairs argv[first..argc) (score member ...) with flags, as Redis's
 * zaddGenericCommand: all scores are checked before anything is written. */
static int zadd_generic(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			uint32_t first, unsigned flags, struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	uint32_t elements = argc - first;
	double *scores = NULL, score = 0;
	long long added = 0, updated = 0, processed = 0;
	int64_t card = 0;
	bool exists, wrongtype;
	int rv = 0;

	if (elements % 2 != 0 || elements == 0) {
		resp_error(reply, YERR_SYNTAX);
		return 0;
	}
	elements /= 2;
	if ((flags & Z_NX) && (flags & Z_XX)) {
		resp_error(reply, "ERR XX and NX options at the same time are not compatible");
		return 0;
	}
	if (((flags & (Z_GT | Z_LT)) && (flags & Z_NX)) || ((flags & Z_GT) && (flags & Z_LT))) {
		resp_error(reply,
			   "ERR GT, LT, and/or NX options at the same time are not compatible");
		return 0;
	}
	if ((flags & Z_INCR) && elements > 1) {
		resp_error(reply, "ERR INCR option supports a single increment-element pair");
		return 0;
	}
	scores = xmalloc(sizeof scores[0] * elements);
	for (uint32_t j = 0; j < elements; j++) {
		if (!yarg_double(&argv[first + 2 * j], &scores[j])) {
			resp_error(reply, YERR_NOT_FLOAT);
			goto out;
		}
	}
	rv = ycoll_open(t, key, YT_ZSET, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		goto out;
	if (!exists && (flags & Z_XX))
		goto reply;
	if (exists) {
		rv = ycoll_counter(t, key, &card, errmsg);
		if (rv != 0)
			goto out;
	}
	for (uint32_t j = 0; j < elements; j++) {
		const struct resp_arg *m = &argv[first + 2 * j + 1];
		const uint8_t *mp = (const uint8_t *)m->p;
		double cur = 0;
		bool found = false;
		score = scores[j];
		if (exists || added > 0) {
			rv = get_score(t, key, mp, m->n, &cur, &found, errmsg);
			if (rv != 0)
				goto out;
		}
		if (found) {
			if (flags & Z_NX)
				continue;
			if (flags & Z_INCR) {
				score += cur;
				if (isnan(score)) {
					resp_error(reply, NANERR);
					goto written;
				}
			}
			if (((flags & Z_LT) && score >= cur) || ((flags & Z_GT) && score <= cur))
				continue;
			processed++;
			if (score != cur) {
				del_member(t, key, mp, m->n, cur, false);
				put_member(t, key, mp, m->n, norm(score));
				updated++;
			}
		} else {
			if (flags & Z_XX)
				continue;
			if (!exists && added == 0)
				ycoll_create(t, key, YT_ZSET, YCOLL_ABSENT);
			put_member(t, key, mp, m->n, norm(score));
			added++;
			processed++;
		}
	}
reply:
	if (flags & Z_INCR) {
		if (processed > 0)
			reply_score(reply, score); /* Redis: "-0" for a new member of
						      increment -0, stored as 0 */
		else
			resp_null_bulk(reply);
	} else {
		resp_int(reply, (flags & Z_CH) ? added + updated : added);
	}
written:
	if (added > 0)
		ycoll_set_counter(t, key, card + added);
out:
	free(scores);
	return rv;
}

static int cmd_zadd(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	static const struct {
		const char *w;
		unsigned f;
	} opts[] = {{"nx", Z_NX}, {"xx", Z_XX}, {"gt", Z_GT},
		    {"lt", Z_LT}, {"ch", Z_CH}, {"incr", Z_INCR}};
	unsigned flags = 0;
	uint32_t j = 2;
	for (; j < argc; j++) {
		size_t o = 0;
		while (o < sizeof opts / sizeof opts[0] && !ycoll_is(&argv[j], opts[o].w))
			o++;
		if (o == sizeof opts / sizeof opts[0])
			break;
		flags |= opts[o].f;
	}
	return zadd_generic(t, argc, argv, j, flags, reply, errmsg);
}

static int cmd_zincrby(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	(void)argc;
	return zadd_generic(t, 4, argv, 2, Z_INCR, reply, errmsg);
}

/* ---- ZREM, ZCARD, ZSCORE ---- */

static int cmd_zrem(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	bool exists, wrongtype;
	int64_t card, removed = 0;
	int rv = ycoll_open(t, key, YT_ZSET, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		resp_int(reply, 0);
		return 0;
	}
	rv = ycoll_counter(t, key, &card, errmsg);
	for (uint32_t j = 2; rv == 0 && j < argc; j++) {
		const uint8_t *mp = (const uint8_t *)argv[j].p;
		double cur = 0;
		bool found;
		rv = get_score(t, key, mp, argv[j].n, &cur, &found, errmsg);
		if (rv == 0 && found) {
			del_member(t, key, mp, argv[j].n, cur, true);
			removed++;
		}
	}
	if (rv != 0)
		return rv;
	if (removed > 0)
		ycoll_set_counter(t, key, card > removed ? card - removed : 0);
	resp_int(reply, removed);
	return 0;
}

static int cmd_zcard(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	(void)argc;
	return ycoll_reply_counter(t, &argv[1], YT_ZSET, reply, errmsg);
}

static int cmd_zscore(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	bool exists, wrongtype, found = false;
	double score;
	int rv = ycoll_open(t, &argv[1], YT_ZSET, &exists, &wrongtype, reply, errmsg);
	(void)argc;
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = get_score(t, &argv[1], (const uint8_t *)argv[2].p, argv[2].n, &score, &found,
			       errmsg);
	if (rv != 0)
		return rv;
	if (found)
		reply_score(reply, score);
	else
		resp_null_bulk(reply);
	return 0;
}

/* ---- ZRANGE and its older forms ---- */

enum zr_kind { ZR_AUTO, ZR_RANK, ZR_SCORE };
enum zr_dir { ZD_AUTO, ZD_FORWARD, ZD_REVERSE };

/* A ZRANGEBYSCORE bound: [(]float, parsed as Redis's zslParseRange does
 * (plain strtod up to the first NUL: leading blanks, "" as 0, 1e999 as
 * inf all pass); false when not one, or NaN. */
static bool parse_bound(const struct resp_arg *a, struct zbound *b)
{
	size_t off = a->n > 0 && a->p[0] == '(' ? 1 : 0;
	char *s = xstrndup(a->p + off, a->n - off), *end;
	bool ok;
	b->ex = off == 1;
	b->v = strtod(s, &end);
	ok = *end == '\0' && !isnan(b->v);
	free(s);
	return ok;
}

/* Redis's zrangeGenericCommand: argv[1] key, argv[2..3] the range, then
 * options; kind and dir fixed by the command name or ZR_AUTO / ZD_AUTO
 * (ZRANGE: BYSCORE, REV allowed). */
static int zrange_generic(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			  enum zr_kind kind, enum zr_dir dir, struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	bool withscores = false, exists, wrongtype;
	long long offset = 0, limit = -1, start, end;
	int minidx = 2, maxidx = 3, rv;
	struct walk w;
	int64_t card = 0;

	for (uint32_t j = 4; j < argc; j++) {
		uint32_t left = argc - j - 1;
		if (ycoll_is(&argv[j], "withscores")) {
			withscores = true;
		} else if (ycoll_is(&argv[j], "limit") && left >= 2) {
			if (!yarg_ll(&argv[j + 1], &offset) || !yarg_ll(&argv[j + 2], &limit)) {
				resp_error(reply, YERR_NOT_INT);
				return 0;
			}
			j += 2;
		} else if (dir == ZD_AUTO && ycoll_is(&argv[j], "rev")) {
			dir = ZD_REVERSE;
		} else if (kind == ZR_AUTO && ycoll_is(&argv[j], "bylex")) {
			resp_error(reply, "ERR BYLEX is not supported by docraft");
			return 0;
		} else if (kind == ZR_AUTO && ycoll_is(&argv[j], "byscore")) {
			kind = ZR_SCORE;
		} else {
			resp_error(reply, YERR_SYNTAX);
			return 0;
		}
	}
	if (dir == ZD_AUTO)
		dir = ZD_FORWARD;
	if (kind == ZR_AUTO)
		kind = ZR_RANK;
	if (limit != -1 && kind == ZR_RANK) { /* Redis checks the count only */
		resp_error(reply, "ERR syntax error, LIMIT is only supported in combination with "
				  "either BYSCORE or BYLEX");
		return 0;
	}
	if (dir == ZD_REVERSE && kind == ZR_SCORE) {
		minidx = 3; /* the range is given as max min */
		maxidx = 2;
	}
	memset(&w, 0, sizeof w);
	w.reverse = dir == ZD_REVERSE;
	w.limit = -1;
	if (kind == ZR_RANK) {
		if (!yarg_ll(&argv[minidx], &start) || !yarg_ll(&argv[maxidx], &end)) {
			resp_error(reply, YERR_NOT_INT);
			return 0;
		}
	} else {
		if (!parse_bound(&argv[minidx], &w.min) || !parse_bound(&argv[maxidx], &w.max)) {
			resp_error(reply, "ERR min or max is not a float");
			return 0;
		}
		w.by_score = true;
		w.skip = offset;
		w.limit = limit;
	}
	rv = ycoll_open(t, key, YT_ZSET, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		resp_array(reply, 0);
		return 0;
	}
	if (kind == ZR_RANK) {
		rv = ycoll_counter(t, key, &card, errmsg);
		if (rv != 0)
			return rv;
		if (!ycoll_rank_range(card, &start, &end)) {
			resp_array(reply, 0);
			return 0;
		}
		w.skip = start;
		w.limit = end - start + 1;
	} else if (w.min.v > w.max.v || (w.min.v == w.max.v && (w.min.ex || w.max.ex)) ||
		   offset < 0) {
		resp_array(reply, 0); /* an empty range; Redis: a negative offset too */
		return 0;
	}
	rv = walk(t, key, &w, errmsg);
	if (rv == 0)
		reply_items(reply, &w.out, withscores);
	free(w.out.v);
	return rv;
}

static int cmd_zrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	return zrange_generic(t, argc, argv, ZR_AUTO, ZD_AUTO, reply, errmsg);
}

static int cmd_zrevrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			 struct buf *reply, char *errmsg)
{
	return zrange_generic(t, argc, argv, ZR_RANK, ZD_REVERSE, reply, errmsg);
}

static int cmd_zrangebyscore(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			     struct buf *reply, char *errmsg)
{
	return zrange_generic(t, argc, argv, ZR_SCORE, ZD_FORWARD, reply, errmsg);
}

static int cmd_zrevrangebyscore(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
				struct buf *reply, char *errmsg)
{
	return zrange_generic(t, argc, argv, ZR_SCORE, ZD_REVERSE, reply, errmsg);
}

/* ---- ZRANK, ZREVRANK ---- */

struct rank_walk {
	double score;
	const struct resp_arg *m;
	long long rank;
	bool hit, corrupt;
};

static int rank_fn(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct rank_walk *r = arg;
	(void)value;
	if (nsub != 2 || sub[0].type != PV_DOUBLE || sub[1].type != PV_STRING) {
		r->corrupt = true;
		return 1;
	}
	if (sub[0].v.d == r->score && sub[1].v.s.len == r->m->n &&
	    (r->m->n == 0 || memcmp(sub[1].v.s.p, r->m->p, r->m->n) == 0)) {
		r->hit = true;
		return 1;
	}
	r->rank++;
	return 0;
}

static int zrank_generic(struct yedis_txn *t, const struct resp_arg *argv, bool reverse,
			 struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	struct rank_walk r = {.m = &argv[2]};
	struct pv prefix = pv_ss_forward();
	bool exists, wrongtype, found = false;
	int rv = ycoll_open(t, key, YT_ZSET, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = get_score(t, key, (const uint8_t *)argv[2].p, argv[2].n, &r.score, &found,
			       errmsg);
	if (rv != 0)
		return rv;
	if (!found) {
		resp_null_bulk(reply);
		return 0;
	}
	rv = yv_children(t, key, &prefix, 1, reverse, NULL, 0, rank_fn, &r, errmsg);
	if (rv != 0)
		return rv;
	if (r.corrupt || !r.hit)
		return ycoll_corrupt(errmsg, "sorted set", key, "a member without its score entry");
	resp_int(reply, r.rank);
	return 0;
}

static int cmd_zrank(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	(void)argc;
	return zrank_generic(t, argv, false, reply, errmsg);
}

static int cmd_zrevrank(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			struct buf *reply, char *errmsg)
{
	(void)argc;
	return zrank_generic(t, argv, true, reply, errmsg);
}

/* ---- ZPOPMIN, ZPOPMAX ---- */

static int zpop_generic(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, bool max,
			struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	long long count = 1;
	bool exists, wrongtype;
	int64_t card;
	struct walk w;
	int rv;
	if (argc > 3) {
		resp_error(reply, YERR_SYNTAX);
		return 0;
	}
	if (argc == 3 && !ycoll_count_arg(&argv[2], &count,
					  "ERR value is out of range, must be positive", reply))
		return 0;
	rv = ycoll_open(t, key, YT_ZSET, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists || count == 0) {
		resp_array(reply, 0);
		return 0;
	}
	rv = ycoll_counter(t, key, &card, errmsg);
	if (rv != 0)
		return rv;
	memset(&w, 0, sizeof w);
	w.reverse = max;
	w.limit = count;
	rv = walk(t, key, &w, errmsg);
	if (rv == 0) {
		for (size_t i = 0; i < w.out.n; i++)
			del_member(t, key, w.out.v[i].m, w.out.v[i].n, w.out.v[i].score, true);
		ycoll_set_counter(t, key, card > (int64_t)w.out.n ? card - (int64_t)w.out.n : 0);
		reply_items(reply, &w.out, true);
	}
	free(w.out.v);
	return rv;
}

static int cmd_zpopmin(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	return zpop_generic(t, argc, argv, false, reply, errmsg);
}

static int cmd_zpopmax(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	return zpop_generic(t, argc, argv, true, reply, errmsg);
}

static const struct ycmd cmds[] = {
	{{"zadd", -4, YEDIS_WRITE | YEDIS_SMALL}, cmd_zadd},
	{{"zincrby", 4, YEDIS_WRITE | YEDIS_SMALL}, cmd_zincrby},
	{{"zrem", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_zrem},
	{{"zpopmin", -2, YEDIS_WRITE}, cmd_zpopmin},
	{{"zpopmax", -2, YEDIS_WRITE}, cmd_zpopmax},
	{{"zcard", 2, YEDIS_READONLY}, cmd_zcard},
	{{"zscore", 3, YEDIS_READONLY}, cmd_zscore},
	{{"zrange", -4, YEDIS_READONLY}, cmd_zrange},
	{{"zrevrange", -4, YEDIS_READONLY}, cmd_zrevrange},
	{{"zrangebyscore", -4, YEDIS_READONLY}, cmd_zrangebyscore},
	{{"zrevrangebyscore", -4, YEDIS_READONLY}, cmd_zrevrangebyscore},
	{{"zrank", 3, YEDIS_READONLY}, cmd_zrank},
	{{"zrevrank", 3, YEDIS_READONLY}, cmd_zrevrank},
};

const struct ycmd_table ycmd_zsets = {cmds, sizeof cmds / sizeof cmds[0]};
