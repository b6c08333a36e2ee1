/* Collections: the type check, the children as an array, emptiness
 * (coll.h). */
#include "yedis/coll.h"

#include <string.h>

#include "common/arena.h"
#include <ctype.h>

#include "common/err.h"
#include "docraft/error.h"

int ycoll_lookup(struct yedis_txn *t, const struct resp_arg *key, int want, int *state,
		 struct buf *reply, char *errmsg)
{
	struct yroot r;
	int rv = yv_root(t, key, &r, errmsg);
	if (rv != 0)
		return rv;
	if (r.type == YT_NONE) {
		*state = YCOLL_ABSENT;
	} else if (r.type == want) {
		*state = YCOLL_PRESENT;
	} else {
		*state = YCOLL_WRONGTYPE;
		resp_error(reply, YERR_WRONGTYPE);
	}
	return 0;
}

void ycoll_create(struct yedis_txn *t, const struct resp_arg *key, int type, int state)
{
	if (state == YCOLL_ABSENT)
		yw_root(t, key, type, NULL, YEDIS_NO_TTL);
}

void ycoll_arity_error(struct buf *reply, const char *name)
{
	resp_errorf(reply, "ERR wrong number of arguments for '%s' command", name);
}

bool ycoll_subs_ok(uint32_t argc, const struct resp_arg *argv, uint32_t first, uint32_t step,
		   struct buf *reply)
{
	for (uint32_t i = first; i < argc; i += step)
		if (!yarg_sub_ok(&argv[i])) {
			resp_error(reply, YERR_TOO_LONG);
			return false;
		}
	return true;
}

int ycoll_remove(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, int type,
		 struct buf *reply, char *errmsg)
{
	int state, rv;
	long long removed = 0;
	if ((rv = ycoll_lookup(t, &argv[1], type, &state, reply, errmsg)) != 0)
		return rv;
	if (state == YCOLL_WRONGTYPE)
		return 0;
	for (uint32_t i = 2; state == YCOLL_PRESENT && i < argc; i++) {
		struct pv sub = ycoll_sub(&argv[i]), v;
		bool found;
		/* Through the overlay: a field given twice counts once. */
		if ((rv = yv_get(t, &argv[1], &sub, 1, &v, &found, errmsg)) != 0)
			return rv;
		if (found) {
			yw_delete(t, &argv[1], &sub, 1);
			removed++;
		}
	}
	if (removed > 0 && (rv = ycoll_drop_if_empty(t, &argv[1], errmsg)) != 0)
		return rv;
	resp_int(reply, removed);
	return 0;
}

/* ---- walking the children ---- */

struct walk {
	struct yedis_txn *t;
	struct buf items; /* struct yitem, when collecting */
	bool collect;
	bool first_only; /* stop at the first child */
	bool stopped;    /* the callback stopped the walk */
	bool corrupt;
	size_t n;
};

/* A string pv whose bytes live in the txn's arena. */
static struct pv keep(struct yedis_txn *t, const struct pv *v)
{
	struct pv c = *v;
	if (v->type == PV_STRING && v->v.s.len > 0)
		c.v.s.p = arena_dup(yv_arena(t), v->v.s.p, v->v.s.len);
	return c;
}

static int on_child(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct walk *w = arg;
	if (nsub != 1 || sub[0].type != PV_STRING) {
		w->corrupt = true;
		w->stopped = true;
		return 1;
	}
	w->n++;
	if (w->collect) {
		struct yitem it = {keep(w->t, &sub[0]), keep(w->t, value)};
		buf_append(&w->items, &it, sizeof it);
	}
	if (w->first_only) {
		w->stopped = true;
		return 1;
	}
	return 0;
}

static int walk(struct yedis_txn *t, const struct resp_arg *key, struct walk *w, char *errmsg)
{
	w->t = t;
	w->n = 0;
	w->stopped = w->corrupt = false;
	int rv = yv_children(t, key, NULL, 0, false, NULL, 0, on_child, w, errmsg);
	/* yv_children may pass on the callback's stop value: only a walk that
	 * was not stopped by us failed. */
	if (rv != 0 && !w->stopped)
		return rv;
	if (w->corrupt)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "yedis: key '%.*s' has a child that is not one string subkey",
			       (int)(key->n > 64 ? 64 : key->n), key->p);
	return 0;
}

int ycoll_items(struct yedis_txn *t, const struct resp_arg *key, struct yitem **items,
		size_t *n, char *errmsg)
{
	struct walk w = {.collect = true};
	buf_init(&w.items);
	int rv = walk(t, key, &w, errmsg);
	*items = NULL;
	*n = 0;
	if (rv == 0 && w.n > 0) {
		*items = arena_dup(yv_arena(t), w.items.data, w.items.len);
		*n = w.n;
	}
	buf_free(&w.items);
	return rv;
}

int ycoll_count(struct yedis_txn *t, const struct resp_arg *key, size_t *n, char *errmsg)
{
	struct walk w = {.collect = false};
	int rv = walk(t, key, &w, errmsg);
	*n = w.n;
	return rv;
}

int ycoll_drop_if_empty(struct yedis_txn *t, const struct resp_arg *key, char *errmsg)
{
	struct walk w = {.first_only = true};
	int rv = walk(t, key, &w, errmsg);
	if (rv != 0)
		return rv;
	if (w.n == 0)
		yw_delete_key(t, key);
	return 0;
}

/* ---- counted collections (sorted sets, lists): the '%' counter ---- */

int ycoll_open(struct yedis_txn *t, const struct resp_arg *key, int want, bool *exists,
	       bool *wrongtype, struct buf *reply, char *errmsg)
{
	int state = YCOLL_ABSENT;
	int rv = ycoll_lookup(t, key, want, &state, reply, errmsg);
	*exists = rv == 0 && state == YCOLL_PRESENT;
	*wrongtype = rv == 0 && state == YCOLL_WRONGTYPE;
	return rv;
}

int ycoll_counter(struct yedis_txn *t, const struct resp_arg *key, int64_t *n, char *errmsg)
{
	struct pv c = pv_redis_counter(), v;
	bool found;
	int rv = yv_get(t, key, &c, 1, &v, &found, errmsg);
	*n = 0;
	if (rv != 0)
		return rv;
	if (!found)
		return 0;
	if (v.type != PV_INT64 || v.v.i64 < 0)
		return ycoll_corrupt(errmsg, "collection", key, "bad counter");
	*n = v.v.i64;
	return 0;
}

void ycoll_set_counter(struct yedis_txn *t, const struct resp_arg *key, int64_t n)
{
	struct pv c = pv_redis_counter(), v = pv_int64(n);
	if (n == 0)
		yw_delete_key(t, key);
	else
		yw_put(t, key, &c, 1, &v);
}

int ycoll_count_arg(const struct resp_arg *a, long long *v, const char *msg, struct buf *reply)
{
	if (!yarg_ll(a, v)) {
		resp_error(reply, msg != NULL ? msg : YERR_NOT_INT);
		return 0;
	}
	if (*v < 0) {
		resp_error(reply,
			   msg != NULL ? msg : "ERR value is out of range, must be positive");
		return 0;
	}
	return 1;
}

int ycoll_corrupt(char *errmsg, const char *what, const struct resp_arg *key, const char *why)
{
	return err_set(errmsg, DOCRAFT_ECORRUPT, "yedis: %s '%.*s': %s", what,
		       (int)(key->n > 64 ? 64 : key->n), key->p, why);
}

bool ycoll_is(const struct resp_arg *a, const char *word)
{
	size_t n = strlen(word);
	if (a->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a->p[i]) != word[i])
			return false;
	return true;
}

bool ycoll_rank_range(long long n, long long *start, long long *end)
{
	if (*start < 0)
		*start += n;
	if (*end < 0)
		*end += n;
	if (*start < 0)
		*start = 0;
	if (*start > *end || *start >= n)
		return false;
	if (*end >= n)
		*end = n - 1;
	return true;
}

int ycoll_reply_counter(struct yedis_txn *t, const struct resp_arg *key, int type,
			struct buf *reply, char *errmsg)
{
	bool exists, wrongtype;
	int64_t n = 0;
	int rv = ycoll_open(t, key, type, &exists, &wrongtype, reply, errmsg);
	if (rv != 0 || wrongtype)
		return rv;
	if (exists)
		rv = ycoll_counter(t, key, &n, errmsg);
	if (rv == 0)
		resp_int(reply, n);
	return rv;
}
