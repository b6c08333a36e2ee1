#include "yedis/ycoll.h"

#include <ctype.h>
#include <string.h>

#include "common/err.h"
#include "docraft/error.h"

int ycoll_open(struct yedis_txn *t, const struct resp_arg *key, int want, bool *exists,
	       bool *wrongtype, struct buf *reply, char *errmsg)
{
	struct yroot r;
	int rv = yv_root(t, key, &r, errmsg);
	*exists = false;
	*wrongtype = false;
	if (rv != 0)
		return rv;
	if (r.type == YT_NONE)
		return 0;
	if (r.type != want) {
		*wrongtype = true;
		resp_error(reply, YERR_WRONGTYPE);
		return 0;
	}
	*exists = true;
	return 0;
}

int ycoll_count(struct yedis_txn *t, const struct resp_arg *key, int64_t *n, char *errmsg)
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
		return err_set(errmsg, DOCRAFT_ECORRUPT, "yedis: key '%.*s': bad counter",
			       (int)(key->n > 64 ? 64 : key->n), key->p);
	*n = v.v.i64;
	return 0;
}

void ycoll_set_count(struct yedis_txn *t, const struct resp_arg *key, int64_t n)
{
	struct pv c = pv_redis_counter(), v = pv_int64(n);
	if (n == 0)
		yw_delete_key(t, key);
	else
		yw_put(t, key, &c, 1, &v);
}

void ycoll_create(struct yedis_txn *t, const struct resp_arg *key, int type)
{
	yw_root(t, key, type, NULL, YEDIS_NO_TTL);
}

int ycoll_count_arg(const struct resp_arg *a, long long *v, const char *msg, struct buf *reply)
{
	if (!yarg_ll(a, v)) {
		resp_error(reply, msg != NULL ? msg : YERR_NOT_INT);
		return 0;
	}
	if (*v < 0) {
		resp_error(reply, msg != NULL ? msg : "ERR value is out of range, must be positive");
		return 0;
	}
	return 1;
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
