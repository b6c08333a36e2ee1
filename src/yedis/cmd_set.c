/* Sets: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER
 * (Redis 7's t_set.c, reply for reply).
 *
 * Layout (yedis.h): root '(', children 'S' member -> '$' (NULL). The root
 * marker is written only for a key without a live set; a command that
 * removes the last member deletes the key (coll.h).
 *
 * SPOP and SRANDMEMBER draw from yv_rand, the txn's deterministic stream:
 * every replica of a write picks the same members. They read the whole
 * set (a set is one document on one tablet, as in Redis one object): a
 * uniform choice without a count kept beside the members. SRANDMEMBER
 * with a negative count (repetition allowed) is bounded, unlike Redis,
 * whose reply for -9223372036854775807 never ends: at most
 * SRAND_REPEAT_MAX members. */
#include <limits.h>

#include "yedis/coll.h"

#define SRAND_REPEAT_MAX (1024 * 1024)

static void member_reply(struct buf *reply, const struct yitem *it)
{
	resp_bulk(reply, it->sub.v.s.p, it->sub.v.s.len);
}

static int member_exists(struct yedis_txn *t, const struct resp_arg *key, const struct resp_arg *m,
			 bool *found, char *errmsg)
{
	struct pv sub = ycoll_sub(m), v;
	return yv_get(t, key, &sub, 1, &v, found, errmsg);
}

/* The set's state; *ok false when a reply (WRONGTYPE) has been appended. */
static int open_set(struct yedis_txn *t, const struct resp_arg *key, int *state, bool *ok,
		    struct buf *reply, char *errmsg)
{
	int rv = ycoll_lookup(t, key, YT_SET, state, reply, errmsg);
	*ok = rv == 0 && *state != YCOLL_WRONGTYPE;
	return rv;
}

static int sadd(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	int state, rv;
	bool ok;
	long long added = 0;
	struct pv null = pv_null();
	if (!ycoll_subs_ok(argc, argv, 2, 1, reply))
		return 0;
	if ((rv = open_set(t, &argv[1], &state, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	ycoll_create(t, &argv[1], YT_SET, state);
	for (uint32_t i = 2; i < argc; i++) {
		bool found;
		/* Through the overlay: a member given twice counts once. */
		if ((rv = member_exists(t, &argv[1], &argv[i], &found, errmsg)) != 0)
			return rv;
		if (!found) {
			struct pv sub = ycoll_sub(&argv[i]);
			yw_put(t, &argv[1], &sub, 1, &null);
			added++;
		}
	}
	resp_int(reply, added);
	return 0;
}

static int srem(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	return ycoll_remove(t, argc, argv, YT_SET, reply, errmsg);
}

static int smembers(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	int state, rv;
	bool ok;
	struct yitem *it = NULL;
	size_t n = 0;
	(void)argc;
	if ((rv = open_set(t, &argv[1], &state, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (state == YCOLL_PRESENT && (rv = ycoll_items(t, &argv[1], &it, &n, errmsg)) != 0)
		return rv;
	resp_array(reply, n);
	for (size_t i = 0; i < n; i++)
		member_reply(reply, &it[i]);
	return 0;
}

/* SISMEMBER (one integer) and SMISMEMBER (an array of them). */
static int ismember(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg, bool multi)
{
	int state, rv;
	bool ok;
	if ((rv = open_set(t, &argv[1], &state, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (multi)
		resp_array(reply, argc - 2);
	for (uint32_t i = 2; i < argc; i++) {
		bool found = false;
		if (state == YCOLL_PRESENT &&
		    (rv = member_exists(t, &argv[1], &argv[i], &found, errmsg)) != 0)
			return rv;
		resp_int(reply, found ? 1 : 0);
	}
	return 0;
}

static int sismember(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	return ismember(t, argc, argv, reply, errmsg, false);
}

static int smismember(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	return ismember(t, argc, argv, reply, errmsg, true);
}

static int scard(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		 char *errmsg)
{
	int state, rv;
	bool ok;
	size_t n = 0;
	(void)argc;
	if ((rv = open_set(t, &argv[1], &state, &ok, reply, errmsg)) != 0 || !ok)
		return rv;
	if (state == YCOLL_PRESENT && (rv = ycoll_count(t, &argv[1], &n, errmsg)) != 0)
		return rv;
	resp_int(reply, (long long)n);
	return 0;
}

/* ---- random members ---- */

/* it[0..k) becomes k distinct members drawn uniformly from it[0..n)
 * (a partial Fisher-Yates shuffle on the txn's random stream). k == n:
 * every member, left in byte order. */
static void draw(struct yedis_txn *t, struct yitem *it, size_t n, size_t k)
{
	for (size_t i = 0; k < n && i < k; i++) {
		size_t j = i + (size_t)(yv_rand(t) % (n - i));
		struct yitem tmp = it[i];
		it[i] = it[j];
		it[j] = tmp;
	}
}

/* The members of a key for SPOP / SRANDMEMBER: *ok false when a reply
 * has been appended (WRONGTYPE, or empty_reply for an absent key). */
static int members_for_draw(struct yedis_txn *t, const struct resp_arg *key, struct yitem **it,
			    size_t *n, bool *ok, bool null_when_absent, struct buf *reply,
			    char *errmsg)
{
	int state, rv;
	*n = 0;
	if ((rv = open_set(t, key, &state, ok, reply, errmsg)) != 0 || !*ok)
		return rv;
	if (state == YCOLL_PRESENT && (rv = ycoll_items(t, key, it, n, errmsg)) != 0)
		return rv;
	if (*n == 0) {
		if (null_when_absent)
			resp_null_bulk(reply);
		else
			resp_array(reply, 0);
		*ok = false;
	}
	return 0;
}

/* The count argument of SPOP (pop) or SRANDMEMBER: 1 and *count set, or
 * 0 with the error reply appended, Redis's texts and order. */
static int parse_count(uint32_t argc, const struct resp_arg *argv, bool pop, long long *count,
		       struct buf *reply)
{
	*count = 1;
	if (argc > 3) {
		resp_error(reply, YERR_SYNTAX);
		return 0;
	}
	if (argc < 3)
		return 1;
	if (pop) {
		if (!yarg_ll(&argv[2], count) || *count < 0) {
			resp_error(reply, "ERR value is out of range, must be positive");
			return 0;
		}
	} else if (!yarg_ll(&argv[2], count)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	} else if (*count == LLONG_MIN) {
		resp_errorf(reply, "ERR value is out of range, value must between %lld and %lld",
			    -LLONG_MAX, LLONG_MAX);
		return 0;
	} else if (*count < -SRAND_REPEAT_MAX) {
		resp_errorf(reply,
			    "ERR value is out of range, with repetition (a negative count) at most "
			    "%d members",
			    SRAND_REPEAT_MAX);
		return 0;
	}
	return 1;
}

/* SPOP (pop: the members drawn are removed, the key when all are) and
 * SRANDMEMBER. Without a count: one member or nil; with one: an array. */
static int random_members(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, bool pop,
			  struct buf *reply, char *errmsg)
{
	long long count;
	struct yitem *it = NULL;
	size_t n, k;
	bool ok;
	int rv;

	if (!parse_count(argc, argv, pop, &count, reply))
		return 0;
	if ((rv = members_for_draw(t, &argv[1], &it, &n, &ok, argc == 2, reply, errmsg)) != 0 ||
	    !ok)
		return rv;
	if (count < 0) { /* SRANDMEMBER with repetition */
		resp_array(reply, (size_t)-count);
		for (long long i = 0; i < -count; i++)
			member_reply(reply, &it[yv_rand(t) % n]);
		return 0;
	}
	k = (unsigned long long)count < n ? (size_t)count : n;
	draw(t, it, n, k);
	if (argc == 3)
		resp_array(reply, k);
	for (size_t i = 0; i < k; i++) {
		member_reply(reply, &it[i]);
		if (pop && k < n)
			yw_delete(t, &argv[1], &it[i].sub, 1);
	}
	if (pop && k == n)
		yw_delete_key(t, &argv[1]); /* every member popped */
	return 0;
}

static int spop(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, struct buf *reply,
		char *errmsg)
{
	return random_members(t, argc, argv, true, reply, errmsg);
}

static int srandmember(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	return random_members(t, argc, argv, false, reply, errmsg);
}

static const struct ycmd cmds[] = {
	{{"sadd", -3, YEDIS_WRITE | YEDIS_SMALL}, sadd},
	{{"srem", -3, YEDIS_WRITE | YEDIS_SMALL}, srem},
	{{"smembers", 2, YEDIS_READONLY}, smembers},
	{{"sismember", 3, YEDIS_READONLY}, sismember},
	{{"smismember", -3, YEDIS_READONLY}, smismember},
	{{"scard", 2, YEDIS_READONLY}, scard},
	{{"spop", -2, YEDIS_WRITE}, spop},
	{{"srandmember", -2, YEDIS_READONLY}, srandmember},
};

const struct ycmd_table ycmd_sets = {cmds, sizeof cmds / sizeof cmds[0]};
