/* What the collection commands (cmd_hash.c, cmd_set.c) share: the type
 * check each starts with, a collection's children as an array, its size,
 * and Redis's rule that an empty collection is no key.
 *
 * A collection is a root marker (yedis.h's layout) with primitive
 * children one subkey deep: 'S' field / member -> value. Everything here
 * reads through the txn's overlay (yedis_int.h), so a command sees the
 * writes of the txn's earlier commands and its own. Same threading and
 * error contract as yedis_int.h: 0 or a storage failure with errmsg. */
#ifndef DOCRAFT_YEDIS_COLL_H
#define DOCRAFT_YEDIS_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/pv.h"
#include "redis/resp.h"
#include "yedis/yedis_int.h"

enum ycoll_state {
	YCOLL_ABSENT = 0, /* no live key: a write creates the collection */
	YCOLL_PRESENT,    /* a live collection of the type asked for */
	YCOLL_WRONGTYPE,  /* another type: the WRONGTYPE reply is appended */
};

/* The state of key for a command on type want (YT_HASH, YT_SET, ...). */
int ycoll_lookup(struct yedis_txn *t, const struct resp_arg *key, int want, int *state,
		 struct buf *reply, char *errmsg);

/* Writes the collection's root marker when state is YCOLL_ABSENT (the key
 * is new, deleted or expired: the new root hides whatever was below it);
 * a present collection keeps its root and expiry. */
void ycoll_create(struct yedis_txn *t, const struct resp_arg *key, int type, int state);

/* One child: its subkey (a PV_STRING field or member) and value. */
struct yitem {
	struct pv sub;
	struct pv value;
};

/* Every live child of the key, in key order (bytewise), in *items (n of
 * them; NULL when none), their bytes copied into the txn's arena. A child
 * whose subkey is not one string is stored data no command writes:
 * DOCRAFT_ECORRUPT. */
int ycoll_items(struct yedis_txn *t, const struct resp_arg *key, struct yitem **items,
		size_t *n, char *errmsg);

/* How many live children the key has. */
int ycoll_count(struct yedis_txn *t, const struct resp_arg *key, size_t *n, char *errmsg);

/* After a command removed children: deletes the key (a root tombstone)
 * when none is left, as Redis deletes an emptied collection. */
int ycoll_drop_if_empty(struct yedis_txn *t, const struct resp_arg *key, char *errmsg);

/* HDEL, SREM: removes the fields / members argv[2..argc) of key argv[1]
 * that exist, deletes the key when none is left, and replies how many it
 * removed (WRONGTYPE for another type). */
int ycoll_remove(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, int type,
		 struct buf *reply, char *errmsg);

/* The one-subkey path of field / member a. */
static inline struct pv ycoll_sub(const struct resp_arg *a)
{
	return pv_strn(a->p, a->n);
}

/* Whether argv[first], argv[first + step], ... below argc (fields or
 * members a write stores as subkeys) fit yarg_sub_ok; false when not,
 * with the YERR_TOO_LONG reply appended. */
bool ycoll_subs_ok(uint32_t argc, const struct resp_arg *argv, uint32_t first, uint32_t step,
		   struct buf *reply);

/* Redis's "-ERR wrong number of arguments for 'name' command". */
void ycoll_arity_error(struct buf *reply, const char *name);

/* ---- counted collections: sorted sets and lists keep their size in a
 * '%' counter child (docdb-format.md §11); and the range commands' argument
 * helpers ---- */

/* ycoll_lookup in booleans (sorted sets, lists, time series): key as a
 * collection of type want: *exists true when it holds one;
 * false when absent (nothing replied) or of another type (WRONGTYPE
 * replied, *wrongtype true). */
int ycoll_open(struct yedis_txn *t, const struct resp_arg *key, int want, bool *exists,
	       bool *wrongtype, struct buf *reply, char *errmsg);

/* The counter of an existing collection (0 when missing: a collection
 * always writes it with its first child). A counter that is not an int64
 * is DOCRAFT_ECORRUPT. */
int ycoll_counter(struct yedis_txn *t, const struct resp_arg *key, int64_t *n, char *errmsg);

/* LLEN, ZCARD: replies the counter of key as a collection of type type
 * (0 when absent, WRONGTYPE for another type). */
int ycoll_reply_counter(struct yedis_txn *t, const struct resp_arg *key, int type,
			struct buf *reply, char *errmsg);
/* Writes the counter n of an existing collection; n == 0 deletes the key
 * (an empty collection does not exist, as in Redis). */
void ycoll_set_counter(struct yedis_txn *t, const struct resp_arg *key, int64_t n);


/* Redis's getPositiveLongFromObjectOrReply: a count >= 0. 1 when valid;
 * else replies msg (NULL: YERR_NOT_INT for a non-integer, "ERR value is
 * out of range, must be positive" for a negative) and returns 0. */
int ycoll_count_arg(const struct resp_arg *a, long long *v, const char *msg, struct buf *reply);

/* DOCRAFT_ECORRUPT with "yedis: <what> '<key>': <why>" (the key cut at
 * 64 bytes) in errmsg. */
int ycoll_corrupt(char *errmsg, const char *what, const struct resp_arg *key, const char *why);

/* Case-insensitive comparison of an argument with a lower-case word. */
bool ycoll_is(const struct resp_arg *a, const char *word);

/* Normalised rank range [*start, *end] of a collection of n elements, as
 * Redis's LRANGE / ZRANGE compute it; false when empty. */
bool ycoll_rank_range(long long n, long long *start, long long *end);

#endif
