/* Helpers shared by the collection command files that keep a cardinality
 * counter ('%' -> int64, docdb-format.md §11): sorted sets (cmd_zset.c) and
 * lists (cmd_list.c), and the argument helpers of the range commands.
 * Same rules as yedis_int.h: storage failures are returned with errmsg,
 * Redis errors are replies; one txn, one thread. */
#ifndef DOCRAFT_YEDIS_YCOLL_H
#define DOCRAFT_YEDIS_YCOLL_H

#include <stdbool.h>
#include <stdint.h>

#include "yedis/yedis_int.h"

/* Opens key as a collection of type want: *exists true when it holds one;
 * false when absent (nothing replied) or of another type (WRONGTYPE
 * replied, *wrongtype true). */
int ycoll_open(struct yedis_txn *t, const struct resp_arg *key, int want, bool *exists,
	       bool *wrongtype, struct buf *reply, char *errmsg);

/* The counter of an existing collection (0 when missing: a collection
 * always writes it with its first child). A counter that is not an int64
 * is DOCRAFT_ECORRUPT. */
int ycoll_count(struct yedis_txn *t, const struct resp_arg *key, int64_t *n, char *errmsg);

/* Writes the counter n of an existing collection; n == 0 deletes the key
 * (an empty collection does not exist, as in Redis). */
void ycoll_set_count(struct yedis_txn *t, const struct resp_arg *key, int64_t n);

/* Writes the root of a new collection of type type (no expiry). */
void ycoll_create(struct yedis_txn *t, const struct resp_arg *key, int type);

/* Redis's getPositiveLongFromObjectOrReply: a count >= 0. 1 when valid;
 * else replies msg (NULL: YERR_NOT_INT for a non-integer, "ERR value is
 * out of range, must be positive" for a negative) and returns 0. */
int ycoll_count_arg(const struct resp_arg *a, long long *v, const char *msg, struct buf *reply);

/* Case-insensitive comparison of an argument with a lower-case word. */
bool ycoll_is(const struct resp_arg *a, const char *word);

/* Normalised rank range [*start, *end] of a collection of n elements, as
 * Redis's LRANGE / ZRANGE compute it; false when empty. */
bool ycoll_rank_range(long long n, long long *start, long long *end);

#endif
