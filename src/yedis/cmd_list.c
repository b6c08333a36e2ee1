/* Lists (issue 17): LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX,
 * with Redis 7.0's replies and error texts.
 *
 * Layout (docdb-format.md §11, "list entries + '%' counter"): root ')';
 * below it
 *     '%'            -> 'I' length (LLEN in O(1))
 *     '[' position   -> 'S' element
 * Positions are signed int64 (PV_ARRAY_INDEX, the CQL list element key:
 * sign-flipped big-endian, so DocDB key order is position order and every
 * position sorts after the '%' counter). The first element pushed gets
 * position 0; a left push takes (first - 1), a right push (last + 1),
 * the first and last found with yv_children forward / reverse from the
 * lowest / highest position. Positions are not dense after pops, so an
 * index (LINDEX, LRANGE) is reached by walking from the nearer end. A list
 * that has pushed 2^63 elements to one side replies an error rather than
 * wrap. An emptied list is deleted (root tombstone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "docraft/error.h"
#include "yedis/ycoll.h"

struct lelem {
	int64_t pos;
	const uint8_t *p;
	size_t n;
};

/* Walks the elements from one end: skip, then collect up to limit. */
struct lwalk {
	long long skip, limit;
	struct lelem *v;
	size_t n, cap;
	bool corrupt;
};

static int lwalk_fn(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct lwalk *w = arg;
	if (nsub >= 1 && sub[0].type != PV_ARRAY_INDEX)
		return 1; /* walking backward past the first element: the counter */
	if (nsub != 1 || value->type != PV_STRING) {
		w->corrupt = true;
		return 1;
	}
	if (w->limit == 0)
		return 1;
	if (w->skip > 0) {
		w->skip--;
		return 0;
	}
	w->v = xgrow(w->v, &w->cap, w->n + 1, sizeof w->v[0], 16);
	w->v[w->n++] = (struct lelem){sub[0].v.i64, value->v.s.p, value->v.s.len};
	if (w->limit > 0)
		w->limit--;
	return w->limit == 0;
}

static int lwalk(struct yedis_txn *t, const struct resp_arg *key, bool from_right,
		 struct lwalk *w, char *errmsg)
{
	struct pv start = pv_array_index(from_right ? INT64_MAX : INT64_MIN);
	int rv = yv_children(t, key, NULL, 0, from_right, &start, 1, lwalk_fn, w, errmsg);
	if (rv == 0 && w->corrupt)
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "yedis: list '%.*s': bad element",
			     (int)(key->n > 64 ? 64 : key->n), key->p);
	return rv;
}

static int cmd_push(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg, bool right, bool only_existing)
{
	const struct resp_arg *key = &argv[1];
	bool exists, wrongtype;
	int64_t len = 0, pos = 0;
	int rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists && only_existing) {
		resp_int(reply, 0);
		return 0;
	}
	if (exists) {
		struct lwalk w = {.limit = 1};
		rv = ycoll_count(t, key, &len, errmsg);
		if (rv == 0)
			rv = lwalk(t, key, right, &w, errmsg);
		if (rv != 0) {
			free(w.v);
			return rv;
		}
		if (w.n == 1) {
			uint64_t upos = (uint64_t)w.v[0].pos ^ UINT64_C(0x8000000000000000);
			uint64_t room = right ? UINT64_MAX - upos : upos; /* free positions */
			pos = w.v[0].pos;
			free(w.v);
			if (room < argc - 2) {
				resp_error(reply, "ERR list positions exhausted at this end");
				return 0;
			}
			pos = right ? pos + 1 : pos - 1;
		}
	} else {
		ycoll_create(t, key, YT_LIST);
	}
	for (uint32_t j = 2; j < argc; j++) {
		struct pv sub = pv_array_index(pos), val = pv_strn(argv[j].p, argv[j].n);
		yw_put(t, key, &sub, 1, &val);
		if (j + 1 < argc)
			pos = right ? pos + 1 : pos - 1;
	}
	len += argc - 2;
	ycoll_set_count(t, key, len);
	resp_int(reply, len);
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
	int64_t len;
	struct lwalk w = {0};
	int rv;
	if (argc > 3) {
		resp_errorf(reply, "ERR wrong number of arguments for '%s' command",
			    right ? "rpop" : "lpop");
		return 0;
	}
	if (argc == 3 &&
	    !ycoll_count_arg(&argv[2], &count, "ERR value is out of range, must be positive",
			     reply))
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
	rv = ycoll_count(t, key, &len, errmsg);
	w.limit = count;
	if (rv == 0)
		rv = lwalk(t, key, right, &w, errmsg);
	if (rv == 0) {
		for (size_t i = 0; i < w.n; i++) {
			struct pv sub = pv_array_index(w.v[i].pos);
			yw_delete(t, key, &sub, 1);
		}
		ycoll_set_count(t, key, len > (int64_t)w.n ? len - (int64_t)w.n : 0);
		if (argc == 3)
			resp_array(reply, w.n);
		for (size_t i = 0; i < w.n; i++)
			resp_bulk(reply, w.v[i].p, w.v[i].n);
		if (argc < 3 && w.n == 0)
			resp_null_bulk(reply);
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
	bool exists, wrongtype;
	int64_t len = 0;
	int rv = ycoll_open(t, &argv[1], YT_LIST, &exists, &wrongtype, reply, errmsg);
	(void)argc;
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = ycoll_count(t, &argv[1], &len, errmsg);
	if (rv == 0)
		resp_int(reply, len);
	return rv;
}

/* Elements [start, end] (normalised ranks of a list of len) into w,
 * walking from the nearer end; w->v ends up in list order. */
static int lrange_walk(struct yedis_txn *t, const struct resp_arg *key, int64_t len,
		       long long start, long long end, struct lwalk *w, char *errmsg)
{
	bool from_right = start > len - 1 - end;
	int rv;
	w->skip = from_right ? len - 1 - end : start;
	w->limit = end - start + 1;
	rv = lwalk(t, key, from_right, w, errmsg);
	if (rv == 0 && from_right) {
		for (size_t i = 0; i < w->n / 2; i++) {
			struct lelem x = w->v[i];
			w->v[i] = w->v[w->n - 1 - i];
			w->v[w->n - 1 - i] = x;
		}
	}
	return rv;
}

static int cmd_lrange(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	const struct resp_arg *key = &argv[1];
	long long start, end;
	bool exists, wrongtype;
	int64_t len;
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
	rv = ycoll_count(t, key, &len, errmsg);
	if (rv != 0)
		return rv;
	if (!ycoll_rank_range(len, &start, &end)) {
		resp_array(reply, 0);
		return 0;
	}
	rv = lrange_walk(t, key, len, start, end, &w, errmsg);
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
	bool exists, wrongtype;
	int64_t len;
	struct lwalk w = {0};
	int rv;
	(void)argc;
	if (!yarg_ll(&argv[2], &index)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	rv = ycoll_open(t, key, YT_LIST, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (!exists) {
		resp_null_bulk(reply);
		return 0;
	}
	rv = ycoll_count(t, key, &len, errmsg);
	if (rv != 0)
		return rv;
	if (index < 0)
		index += len;
	if (index < 0 || index >= len) {
		resp_null_bulk(reply);
		return 0;
	}
	rv = lrange_walk(t, key, len, index, index, &w, errmsg);
	if (rv == 0) {
		if (w.n == 1)
			resp_bulk(reply, w.v[0].p, w.v[0].n);
		else
			resp_null_bulk(reply);
	}
	free(w.v);
	return rv;
}

static const struct ycmd cmds[] = {
	{{"lpush", -3, YEDIS_WRITE}, cmd_lpush},
	{{"rpush", -3, YEDIS_WRITE}, cmd_rpush},
	{{"lpushx", -3, YEDIS_WRITE}, cmd_lpushx},
	{{"rpushx", -3, YEDIS_WRITE}, cmd_rpushx},
	{{"lpop", -2, YEDIS_WRITE}, cmd_lpop},
	{{"rpop", -2, YEDIS_WRITE}, cmd_rpop},
	{{"llen", 2, YEDIS_READONLY}, cmd_llen},
	{{"lrange", 4, YEDIS_READONLY}, cmd_lrange},
	{{"lindex", 3, YEDIS_READONLY}, cmd_lindex},
};

const struct ycmd_table ycmd_lists = {cmds, sizeof cmds / sizeof cmds[0]};
