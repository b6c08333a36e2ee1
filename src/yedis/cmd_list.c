/* Lists (issue 17): LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX,
 * with Redis 7.0's replies and error texts.
 *
 * Layout (docdb-format.md §11, "list entries + '%' counter"): root ')';
 * below it
 *     '$'            -> 'I' head: the position of the first element
 *     '%'            -> 'I' length (LLEN in O(1))
 *     '[' position   -> 'S' element
 * Positions are signed int64 (PV_ARRAY_INDEX, the CQL list element key:
 * sign-flipped big-endian, so DocDB key order is position order, after
 * the '$' and '%' records). The elements always hold the contiguous
 * positions head .. head + length - 1: a left push takes head - 1 (and
 * moves the head), a right push head + length, a pop removes an end. So
 * the i-th element is at head + i, and nothing here ever walks over the
 * tombstones that pops leave behind (until compaction removes them): a
 * queue (RPUSH + LPOP) or a long-lived list stays O(1) per push and pop,
 * O(1 + n) per LRANGE of n. (The head record is docraft's addition to
 * YugabyteDB's list layout, which leaves list entries unspecified; finding
 * an end with a walk instead costs one step per tombstone at that end.)
 * A first push starts at position 0 (right) or -1 (left); a list that
 * would pass INT64_MIN or INT64_MAX replies an error rather than wrap. An
 * emptied list is deleted (root tombstone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "yedis/coll.h"

/* The head record's subkey. */
static struct pv head_sub(void)
{
	return pv_null();
}

/* An existing list's length and head. */
static int list_state(struct yedis_txn *t, const struct resp_arg *key, int64_t *len, int64_t *head,
		      char *errmsg)
{
	struct pv sub = head_sub(), v;
	bool found;
	int rv = ycoll_counter(t, key, len, errmsg);
	if (rv == 0)
		rv = yv_get(t, key, &sub, 1, &v, &found, errmsg);
	if (rv != 0)
		return rv;
	/* A list that exists has at least one element: an emptied one is
	 * deleted with its counter. */
	if (*len == 0)
		return ycoll_corrupt(errmsg, "list", key, "missing length record");
	if (!found || v.type != PV_INT64 || v.v.i64 > INT64_MAX - (*len - 1))
		return ycoll_corrupt(errmsg, "list", key, "bad head record");
	*head = v.v.i64;
	return 0;
}

/* Writes the new state; length 0 deletes the key. */
static void list_set_state(struct yedis_txn *t, const struct resp_arg *key, int64_t len,
			   int64_t head, bool head_changed)
{
	if (len > 0 && head_changed) {
		struct pv sub = head_sub(), v = pv_int64(head);
		yw_put(t, key, &sub, 1, &v);
	}
	ycoll_set_counter(t, key, len);
}

struct lelem {
	const uint8_t *p;
	size_t n;
};

/* Collects count elements from position first on (forward) or down
 * (reverse): they are live and contiguous. */
struct lwalk {
	long long limit;
	struct lelem *v;
	size_t n, cap;
	bool corrupt;
};

static int lwalk_fn(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct lwalk *w = arg;
	if (nsub != 1 || sub[0].type != PV_ARRAY_INDEX || value->type != PV_STRING) {
		w->corrupt = true;
		return 1;
	}
	w->v = xgrow(w->v, &w->cap, w->n + 1, sizeof w->v[0], 16);
	w->v[w->n++] = (struct lelem){value->v.s.p, value->v.s.len};
	return --w->limit == 0;
}

static int lwalk(struct yedis_txn *t, const struct resp_arg *key, int64_t first, long long count,
		 bool reverse, struct lwalk *w, char *errmsg)
{
	struct pv start = pv_array_index(first);
	int rv;
	w->limit = count;
	rv = yv_children(t, key, NULL, 0, reverse, &start, 1, lwalk_fn, w, errmsg);
	if (rv == 0 && (w->corrupt || w->n != (size_t)count))
		rv = ycoll_corrupt(errmsg, "list", key, "elements missing or bad");
	return rv;
}

static int cmd_push(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg, bool right, bool only_existing)
{
	const struct resp_arg *key = &argv[1];
	const int64_t k = argc - 2;
	bool exists, wrongtype;
	int64_t len = 0, head = right ? 0 : -1, pos;
	int rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists && only_existing) {
		resp_int(reply, 0);
		return 0;
	}
	if (exists) {
		rv = list_state(t, key, &len, &head, errmsg);
		if (rv != 0)
			return rv;
		if ((right && head + (len - 1) > INT64_MAX - k) ||
		    (!right && head < INT64_MIN + k)) {
			resp_error(reply, "ERR list positions exhausted at this end");
			return 0;
		}
		head = right ? head : head - 1; /* the first new left position */
	} else {
		ycoll_create(t, key, YT_LIST, YCOLL_ABSENT);
	}
	pos = right ? head + len : head;
	for (int64_t j = 0; j < k; j++) {
		struct pv sub = pv_array_index(right ? pos + j : pos - j);
		struct pv val = pv_strn(argv[2 + j].p, argv[2 + j].n);
		yw_put(t, key, &sub, 1, &val);
	}
	if (!right)
		head = pos - (k - 1);
	list_set_state(t, key, len + k, head, !exists || !right);
	resp_int(reply, len + k);
	return 0;
}

static int cmd_lpush(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	return cmd_push(t, argc, argv, reply, errmsg, false, false);
}

static int cmd_rpush(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		     struct buf *reply, char *errmsg)
{
	return cmd_push(t, argc, argv, reply, errmsg, true, false);
}

static int cmd_lpushx(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	return cmd_push(t, argc, argv, reply, errmsg, false, true);
}

static int cmd_rpushx(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	return cmd_push(t, argc, argv, reply, errmsg, true, true);
}

/* LPOP / RPOP key [count]: Redis 7.0's popGenericCommand. */
static int cmd_pop(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg, bool right)
{
	const struct resp_arg *key = &argv[1];
	bool exists, wrongtype;
	long long count = 1;
	int64_t len, head, first;
	struct lwalk w = {0};
	int rv;
	if (argc > 3) {
		resp_errorf(reply, "ERR wrong number of arguments for '%s' command",
			    right ? "rpop" : "lpop");
		return 0;
	}
	if (argc == 3 && !ycoll_count_arg(&argv[2], &count,
					  "ERR value is out of range, must be positive", reply))
		return 0;
	rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		if (argc == 3)
			resp_null_array(reply);
		else
			resp_null_bulk(reply);
		return 0;
	}
	if (count == 0) {
		resp_array(reply, 0);
		return 0;
	}
	rv = list_state(t, key, &len, &head, errmsg);
	if (rv != 0)
		return rv;
	if (count > len)
		count = len;
	first = right ? head + (len - 1) : head;
	rv = lwalk(t, key, first, count, right, &w, errmsg);
	if (rv == 0) {
		for (long long i = 0; i < count; i++) {
			struct pv sub = pv_array_index(right ? first - i : first + i);
			yw_delete(t, key, &sub, 1);
		}
		list_set_state(t, key, len - count, right ? head : head + count, !right);
		if (argc == 3)
			resp_array(reply, w.n);
		for (size_t i = 0; i < w.n; i++)
			resp_bulk(reply, w.v[i].p, w.v[i].n);
	}
	free(w.v);
	return rv;
}

static int cmd_lpop(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	return cmd_pop(t, argc, argv, reply, errmsg, false);
}

static int cmd_rpop(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	return cmd_pop(t, argc, argv, reply, errmsg, true);
}

static int cmd_llen(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	(void)argc;
	return ycoll_reply_counter(t, &argv[1], YT_LIST, reply, errmsg);
}

static int cmd_lrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	long long start, end;
	bool exists, wrongtype;
	int64_t len, head;
	struct lwalk w = {0};
	int rv;
	(void)argc;
	if (!yarg_ll(&argv[2], &start) || !yarg_ll(&argv[3], &end)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		resp_array(reply, 0);
		return 0;
	}
	rv = list_state(t, key, &len, &head, errmsg);
	if (rv != 0)
		return rv;
	if (!ycoll_rank_range(len, &start, &end)) {
		resp_array(reply, 0);
		return 0;
	}
	rv = lwalk(t, key, head + start, end - start + 1, false, &w, errmsg);
	if (rv == 0) {
		resp_array(reply, w.n);
		for (size_t i = 0; i < w.n; i++)
			resp_bulk(reply, w.v[i].p, w.v[i].n);
	}
	free(w.v);
	return rv;
}

static int cmd_lindex(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	long long index;
	bool exists, wrongtype, found;
	int64_t len, head;
	struct pv sub, v;
	int rv;
	(void)argc;
	rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		resp_null_bulk(reply);
		return 0;
	}
	if (!yarg_ll(&argv[2], &index)) { /* Redis: after the key's lookup */
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	rv = list_state(t, key, &len, &head, errmsg);
	if (rv != 0)
		return rv;
	if (index < 0)
		index += len;
	if (index < 0 || index >= len) {
		resp_null_bulk(reply);
		return 0;
	}
	sub = pv_array_index(head + index);
	rv = yv_get(t, key, &sub, 1, &v, &found, errmsg);
	if (rv != 0)
		return rv;
	if (!found || v.type != PV_STRING)
		return ycoll_corrupt(errmsg, "list", key, "an element missing");
	resp_bulk(reply, v.v.s.p, v.v.s.len);
	return 0;
}

static const struct ycmd cmds[] = {
	{{"lpush", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_lpush},
	{{"rpush", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_rpush},
	{{"lpushx", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_lpushx},
	{{"rpushx", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_rpushx},
	{{"lpop", -2, YEDIS_WRITE}, cmd_lpop},
	{{"rpop", -2, YEDIS_WRITE}, cmd_rpop},
	{{"llen", 2, YEDIS_READONLY}, cmd_llen},
	{{"lrange", 4, YEDIS_READONLY}, cmd_lrange},
	{{"lindex", 3, YEDIS_READONLY}, cmd_lindex},
};

const struct ycmd_table ycmd_lists = {cmds, sizeof cmds / sizeof cmds[0]};
