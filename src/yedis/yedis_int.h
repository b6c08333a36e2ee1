/* The YEDIS engine's internal API: what the command files (cmd_*.c) use.
 * Owned by yedis.c (the txn, the dispatcher) and view.c (reads through the
 * txn's overlay, writes into its batch and overlay).
 *
 * Every function takes the key as given by the client (k bytes) and
 * subkey paths below its root as struct pv arrays (docdb/pv.h), exactly as
 * they are encoded in the DocDB key after the DocKey. Reads see the store
 * at the txn's hybrid time plus the txn's own earlier writes; expiry is
 * applied (an expired key or child reads as absent). Results borrow from
 * the txn's arena (yv_arena), valid until the txn is freed.
 *
 * Errors: functions return 0 or a storage failure (DOCRAFT_EIO,
 * DOCRAFT_ECORRUPT, DOCRAFT_ETOOOLD) with errmsg, which the command
 * returns as is (yedis_exec's contract). Redis-level errors are replies. */
#ifndef DOCRAFT_YEDIS_YEDIS_INT_H
#define DOCRAFT_YEDIS_YEDIS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/pv.h"
#include "redis/resp.h"
#include "yedis/yedis.h"

/* A command's handler: appends exactly one reply; 0 or a storage failure. */
typedef int (*ycmd_fn)(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg);

struct ycmd {
	struct yedis_command info;
	ycmd_fn fn;
};

/* Each command file exports one fragment of the table; yedis.c lists them
 * (add a line there with a new file). */
struct ycmd_table {
	const struct ycmd *cmds;
	size_t n;
};
extern const struct ycmd_table ycmd_strings; /* cmd_string.c */
extern const struct ycmd_table ycmd_keys;    /* cmd_keys.c: DEL EXISTS TYPE EXPIRE.. TTL..
						KEYS SCAN DBSIZE */
extern const struct ycmd_table ycmd_hashes;  /* cmd_hash.c */
extern const struct ycmd_table ycmd_sets;    /* cmd_set.c */
extern const struct ycmd_table ycmd_zsets;   /* cmd_zset.c */
extern const struct ycmd_table ycmd_lists;   /* cmd_list.c */
extern const struct ycmd_table ycmd_ts;      /* cmd_ts.c */

/* Redis types as the root value says (yedis.h's layout). */
enum ytype {
	YT_NONE = 0, /* absent, deleted or expired */
	YT_STRING,
	YT_HASH,
	YT_SET,
	YT_ZSET,
	YT_LIST,
	YT_TS,
};

/* "string", "hash", ... as TYPE replies them ("none" for YT_NONE). */
const char *ytype_name(int type);

/* The Redis error replies every file needs, Redis's exact texts. */
#define YERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define YERR_NOT_INT "ERR value is not an integer or out of range"
#define YERR_NOT_FLOAT "ERR value is not a valid float"
#define YERR_SYNTAX "ERR syntax error"
#define YERR_OVERFLOW "ERR increment or decrement would overflow"

/* Longest key, hash field, set member ... a command may store (bytes): a
 * DocDB key must fit in 64 KiB (docdb/batch.h) with a key and one subkey,
 * each escaped (0x00 doubles). yedis_exec checks argv[1] of keyed
 * commands; a command checks the other arguments it stores as subkeys
 * with yarg_sub_ok and replies YERR_TOO_LONG. */
#define YEDIS_MAX_KEY 15000
#define YERR_TOO_LONG "ERR docraft: key, field or member longer than 15000 bytes"
bool yarg_sub_ok(const struct resp_arg *a);

/* A key's root, expiry applied. */
struct yroot {
	int type;              /* enum ytype */
	struct pv str;         /* YT_STRING: PV_STRING, borrowed */
	bool has_expiry;
	int64_t expire_at_ms;  /* with has_expiry: absolute ms, the hybrid
				  clock's physical time (compare yv_now_ms) */
};

int yv_root(struct yedis_txn *t, const struct resp_arg *key, struct yroot *out, char *errmsg);

/* The primitive at key + sub[0..nsub): *found false when absent, deleted
 * or expired (or a container). */
int yv_get(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub,
	   struct pv *out, bool *found, char *errmsg);

/* The live primitive children below key + prefix[0..nprefix), in DocDB
 * key order (reverse: descending), each reported once with its subkeys
 * after the prefix (sub[0..nsub)) and its value; start: begin at this
 * child path (inclusive; NULL: the first / last). fn returns nonzero to
 * stop. Used for HGETALL, SMEMBERS, ZRANGE (the '&' map), LRANGE, TSRANGE
 * and the pops.
 * Precisely (view.c, docdb/reader.h reader_children): start compares as
 * encoded subkeys; forward gives the children at or after it, reverse
 * those at or before it and those below it (a start [D 5] of the zset
 * '&' map includes every [D 5, S member]). The stored children are read
 * one child subtree (one first subkey below the prefix) at a time, so a
 * walk that stops after k children costs about k, whatever the size of
 * the collection; the txn's own writes are merged in (a child written
 * replaces the stored one at its exact path; a tombstone hides it). */
typedef int (*yv_child_fn)(void *arg, const struct pv *sub, size_t nsub, const struct pv *value);
int yv_children(struct yedis_txn *t, const struct resp_arg *key, const struct pv *prefix,
		size_t nprefix, bool reverse, const struct pv *start, size_t nstart, yv_child_fn fn,
		void *arg, char *errmsg);

/* ---- writes (into the batch and the overlay; a read-only txn: the
 * command must not call them, yedis_exec refuses YEDIS_WRITE commands) */

#define YEDIS_NO_TTL (-1) /* no expiry */

/* A new root for the key: replaces whatever was there (type, children,
 * expiry). type YT_STRING with *str; a collection writes its init marker.
 * ttl_ms: YEDIS_NO_TTL or > 0. */
void yw_root(struct yedis_txn *t, const struct resp_arg *key, int type, const struct pv *str,
	     int64_t ttl_ms);
/* A primitive child (PV_NULL for set members). */
void yw_put(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub, size_t nsub,
	    const struct pv *value);
/* yw_put with a TTL of the child's own (added by ycoll2 for TSADD
 * EXPIRE_IN / EXPIRE_AT): ttl_ms > 0 expires the child that long after
 * the txn's hybrid time; YEDIS_NO_TTL is yw_put. */
void yw_put_ttl(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub,
		size_t nsub, const struct pv *value, int64_t ttl_ms);
/* A tombstone at a child path. */
void yw_delete(struct yedis_txn *t, const struct resp_arg *key, const struct pv *sub,
	       size_t nsub);
/* A tombstone at the root: the key is gone. */
void yw_delete_key(struct yedis_txn *t, const struct resp_arg *key);
/* A TTL merge record at the root of an existing key of type type:
 * ttl_ms > 0 expires it that long after the txn's hybrid time;
 * YEDIS_NO_TTL removes its expiry (PERSIST). */
void yw_expire(struct yedis_txn *t, const struct resp_arg *key, int type, int64_t ttl_ms);

/* ---- the txn's context ---- */
struct arena *yv_arena(struct yedis_txn *t);
int64_t yv_now_ms(const struct yedis_txn *t); /* physical ms of the txn's hybrid time */
/* Deterministic pseudo-random numbers from the txn's seed. */
uint64_t yv_rand(struct yedis_txn *t);
bool yv_writable(const struct yedis_txn *t);

/* Argument parsing with Redis's rules (string2ll, strtold-like floats
 * with inf/-inf, no NaN). 1 when valid. */
int yarg_ll(const struct resp_arg *a, long long *v);
int yarg_double(const struct resp_arg *a, double *v);
/* Redis's formatting of a double reply (INCRBYFLOAT: "%.17Lg" then
 * trailing zeros removed; scores: "%.17g"). Returns the length. */
size_t yfmt_double(char *out, size_t cap, double d, bool humanfriendly);
/* The long double forms Redis uses for INCRBYFLOAT and HINCRBYFLOAT
 * (string2ld, ld2string: "%.17Lg", or humanfriendly "%.17Lf" without
 * trailing zeros). yfmt_ldouble returns 0 when cap is too small (cap >= 8;
 * YFMT_LDOUBLE_CAP always fits). */
#define YFMT_LDOUBLE_CAP 5120
int yarg_ldouble(const struct resp_arg *a, long double *v);
size_t yfmt_ldouble(char *out, size_t cap, long double d, bool humanfriendly);

/* Redis's glob match (util.c stringmatchlen): * ? [a-z] [^x] and \
 * escapes; KEYS, SCAN MATCH, HSCAN-like filters. */
bool ystringmatch(const char *pat, size_t plen, const char *s, size_t slen, bool nocase);

#endif
