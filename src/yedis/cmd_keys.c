/* Key commands: DEL EXISTS TYPE EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL
 * PERSIST, and the tablet-wide KEYS SCAN DBSIZE, with Redis 7.0's replies
 * (db.c, expire.c).
 *
 * Expiry. A key's expiry is its root's TTL. EXPIRE and PERSIST on an
 * existing key write a TTL merge record (yw_expire), which readers fold
 * into the root value; an expiry at or before now deletes the key as
 * Redis does (a root tombstone).
 *
 * Tablet-wide commands walk every DocKey of the store in key order (a
 * Redis key's DocKey starts 'G' BE16(slot * 4), so the walk goes slot by
 * slot), read each key's root through the txn (expired and deleted keys
 * are skipped) and seek past the key's entries to the next DocKey. KEYS
 * and DBSIZE also count the keys the txn itself created that the store
 * does not hold yet (SCAN does not: its cursor walks the store). SCAN's
 * cursor is yedis.h's: whole slots are returned
 * until COUNT keys were examined, and a slot is split (the cursor then
 * holds the live keys of the slot already returned) only when one call
 * met more than SCAN_SPLIT keys of it. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hlc.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "docdb/store.h"
#include "redis/slot.h"
#include "yedis/txn.h"
#include "yedis/yedis_int.h"

/* Most keys KEYS returns from one tablet. */
#define KEYS_MAX 100000
/* Keys of one slot one SCAN call examines before it splits the slot. */
#define SCAN_SPLIT 10000

static bool arg_is(const struct resp_arg *a, const char *s)
{
	return a->n == strlen(s) && strncasecmp(a->p, s, a->n) == 0;
}

static char lower(char c, bool nocase)
{
	return nocase && c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static int cmd_del(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	long long n = 0;
	for (uint32_t i = 1; i < argc; i++) {
		struct yroot r;
		int rv;
		if (!yarg_sub_ok(&argv[i]))
			continue; /* never stored */
		if ((rv = yv_root(t, &argv[i], &r, errmsg)) != 0)
			return rv;
		if (r.type == YT_NONE)
			continue;
		yw_delete_key(t, &argv[i]);
		n++;
	}
	resp_int(reply, n);
	return 0;
}

static int cmd_exists(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	long long n = 0;
	for (uint32_t i = 1; i < argc; i++) {
		struct yroot r;
		int rv;
		if (!yarg_sub_ok(&argv[i]))
			continue;
		if ((rv = yv_root(t, &argv[i], &r, errmsg)) != 0)
			return rv;
		n += r.type != YT_NONE;
	}
	resp_int(reply, n);
	return 0;
}

static int cmd_type(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	struct yroot r;
	int rv;
	(void)argc;
	if ((rv = yv_root(t, &argv[1], &r, errmsg)) != 0)
		return rv;
	resp_simple(reply, ytype_name(r.type));
	return 0;
}

/* ---- expiry ---- */

enum { EXP_NX = 1, EXP_XX = 2, EXP_GT = 4, EXP_LT = 8 };

/* "invalid expire time in 'expire' command": Redis names the command in
 * lower case (its fullname). */
static void bad_expire_time(const struct resp_arg *argv, struct buf *reply)
{
	char name[16];
	size_t n = argv[0].n < sizeof name - 1 ? argv[0].n : sizeof name - 1;
	for (size_t i = 0; i < n; i++)
		name[i] = lower(argv[0].p[i], true);
	name[n] = '\0';
	resp_errorf(reply, "ERR invalid expire time in '%s' command", name);
}

/* expireGenericCommand: basetime 0 (..AT) or now, unit 1000 (seconds) or 1. */
static int expire_generic(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv, bool at,
			  long long unit, struct buf *reply, char *errmsg)
{
	unsigned flags = 0;
	long long when, base = at ? 0 : yv_now_ms(t), now = yv_now_ms(t), cur = -1;
	struct yroot r;
	int rv;

	for (uint32_t j = 3; j < argc; j++) {
		if (arg_is(&argv[j], "nx"))
			flags |= EXP_NX;
		else if (arg_is(&argv[j], "xx"))
			flags |= EXP_XX;
		else if (arg_is(&argv[j], "gt"))
			flags |= EXP_GT;
		else if (arg_is(&argv[j], "lt"))
			flags |= EXP_LT;
		else {
			size_t n = argv[j].n < 128 ? argv[j].n : 128;
			resp_errorf(reply, "ERR Unsupported option %.*s", (int)n, argv[j].p);
			return 0;
		}
	}
	if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT))) {
		resp_error(reply,
			   "ERR NX and XX, GT or LT options at the same time are not compatible");
		return 0;
	}
	if ((flags & EXP_GT) && (flags & EXP_LT)) {
		resp_error(reply, "ERR GT and LT options at the same time are not compatible");
		return 0;
	}
	if (!yarg_ll(&argv[2], &when)) {
		resp_error(reply, YERR_NOT_INT);
		return 0;
	}
	if (unit == 1000) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto bad_time;
		when *= 1000;
	}
	if (when > LLONG_MAX - base)
		goto bad_time;
	when += base;

	if ((rv = yv_root(t, &argv[1], &r, errmsg)) != 0)
		return rv;
	if (r.type == YT_NONE) {
		resp_int(reply, 0);
		return 0;
	}
	if (r.has_expiry)
		cur = r.expire_at_ms;
	if (((flags & EXP_NX) && cur != -1) || ((flags & EXP_XX) && cur == -1) ||
	    ((flags & EXP_GT) && (when <= cur || cur == -1)) ||
	    ((flags & EXP_LT) && cur != -1 && when >= cur)) {
		resp_int(reply, 0);
		return 0;
	}
	if (when <= now)
		yw_delete_key(t, &argv[1]);
	else
		yw_expire(t, &argv[1], r.type, when - now);
	resp_int(reply, 1);
	return 0;
bad_time:
	bad_expire_time(argv, reply);
	return 0;
}

static int cmd_expire(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	return expire_generic(t, argc, argv, false, 1000, reply, errmsg);
}

static int cmd_pexpire(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	return expire_generic(t, argc, argv, false, 1, reply, errmsg);
}

static int cmd_expireat(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			struct buf *reply, char *errmsg)
{
	return expire_generic(t, argc, argv, true, 1000, reply, errmsg);
}

static int cmd_pexpireat(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
			 struct buf *reply, char *errmsg)
{
	return expire_generic(t, argc, argv, true, 1, reply, errmsg);
}

static int ttl_generic(struct yedis_txn *t, const struct resp_arg *key, bool ms, struct buf *reply,
		       char *errmsg)
{
	struct yroot r;
	long long left;
	int rv;
	if ((rv = yv_root(t, key, &r, errmsg)) != 0)
		return rv;
	if (r.type == YT_NONE) {
		resp_int(reply, -2);
		return 0;
	}
	if (!r.has_expiry) {
		resp_int(reply, -1);
		return 0;
	}
	left = r.expire_at_ms - yv_now_ms(t);
	if (left < 0)
		left = 0;
	resp_int(reply, ms ? left : (left + 500) / 1000);
	return 0;
}

static int cmd_ttl(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		   struct buf *reply, char *errmsg)
{
	(void)argc;
	return ttl_generic(t, &argv[1], false, reply, errmsg);
}

static int cmd_pttl(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	(void)argc;
	return ttl_generic(t, &argv[1], true, reply, errmsg);
}

static int cmd_persist(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		       struct buf *reply, char *errmsg)
{
	struct yroot r;
	int rv;
	(void)argc;
	if ((rv = yv_root(t, &argv[1], &r, errmsg)) != 0)
		return rv;
	if (r.type == YT_NONE || !r.has_expiry) {
		resp_int(reply, 0);
		return 0;
	}
	yw_expire(t, &argv[1], r.type, YEDIS_NO_TTL);
	resp_int(reply, 1);
	return 0;
}

/* ---- glob (Redis util.c stringmatchlen) ---- */

static bool match(const char *p, size_t pl, const char *s, size_t sl, bool nocase, int nest,
		  bool *skip_longer)
{
	/* Redis stops a pattern nested too deeply (and reports no match). */
	if (nest > 1000)
		return false;
	while (pl > 0 && sl > 0) {
		switch (p[0]) {
		case '*':
			while (pl > 1 && p[1] == '*') {
				p++;
				pl--;
			}
			if (pl == 1)
				return true;
			while (sl > 0) {
				if (match(p + 1, pl - 1, s, sl, nocase, nest + 1, skip_longer))
					return true;
				if (*skip_longer)
					return false;
				s++;
				sl--;
			}
			*skip_longer = true;
			return false;
		case '?':
			s++;
			sl--;
			break;
		case '[': {
			bool negate, ok = false;
			p++;
			pl--;
			negate = pl > 0 && p[0] == '^';
			if (negate) {
				p++;
				pl--;
			}
			for (;;) {
				if (pl > 1 && p[0] == '\\') {
					p++;
					pl--;
					if (p[0] == s[0])
						ok = true;
				} else if (pl == 0 || p[0] == ']') {
					break;
				} else if (pl >= 3 && p[1] == '-') {
					char a = lower(p[0], nocase), b = lower(p[2], nocase),
					     c = lower(s[0], nocase);
					if (a > b) {
						char x = a;
						a = b;
						b = x;
					}
					p += 2;
					pl -= 2;
					if (c >= a && c <= b)
						ok = true;
				} else if (lower(p[0], nocase) == lower(s[0], nocase)) {
					ok = true;
				}
				p++;
				pl--;
			}
			if (pl == 0) {
				/* Redis: a missing ']' ends the pattern here. */
				p--;
				pl++;
			}
			if (negate)
				ok = !ok;
			if (!ok)
				return false;
			s++;
			sl--;
			break;
		}
		case '\\':
			if (pl >= 2) {
				p++;
				pl--;
			}
			/* fallthrough */
		default:
			if (lower(p[0], nocase) != lower(s[0], nocase))
				return false;
			s++;
			sl--;
			break;
		}
		p++;
		pl--;
		if (sl == 0) {
			while (pl > 0 && p[0] == '*') {
				p++;
				pl--;
			}
			break;
		}
	}
	return pl == 0 && sl == 0;
}

bool ystringmatch(const char *pat, size_t plen, const char *s, size_t slen, bool nocase)
{
	bool skip_longer = false;
	return match(pat, plen, s, slen, nocase, 0, &skip_longer);
}

/* ---- the tablet-wide walk ---- */

/* Called for each live key: its bytes, its type. Nonzero stops the walk. */
typedef int (*key_fn)(void *arg, const struct resp_arg *key, int type, uint16_t slot);

struct walk {
	struct yedis_txn *t;
	key_fn fn;
	void *arg;
	bool stopped;
	char *errmsg;
};

/* The Redis key of a stored DocKey; false when it is no YEDIS key. */
static bool redis_key_of(struct yedis_txn *t, const uint8_t *dk, size_t dl, struct resp_arg *key,
			 uint16_t *slot)
{
	const uint8_t *p = dk;
	struct dockey d;
	if (dockey_decode(&p, dk + dl, &d, yv_arena(t)) != 0 || !d.has_hash || d.n_hashed != 1 ||
	    d.n_range != 0 || d.hashed[0].type != PV_STRING)
		return false;
	key->p = (const char *)d.hashed[0].v.s.p;
	key->n = d.hashed[0].v.s.len;
	*slot = (uint16_t)(d.hash / REDIS_SLOT_SCALE);
	return true;
}

/* Walks the stored keys from slot first on; every live one goes to fn. */
static int walk_store(struct walk *w, uint32_t first_slot)
{
	struct buf seek = BUF_INIT;
	struct store_iter *it = store_iter_new(w->t->o.store, NULL, 0, NULL, 0);
	int rv = 0;

	buf_push(&seek, KT_UINT16_HASH);
	buf_append_be16(&seek, (uint16_t)(first_slot * REDIS_SLOT_SCALE));
	store_iter_seek(it, seek.data, seek.len);
	while (store_iter_valid(it)) {
		size_t klen, dl;
		const uint8_t *k = store_iter_key(it, &klen);
		struct resp_arg key;
		struct yroot r;
		uint16_t slot;
		if (klen == 0 || k[0] != KT_UINT16_HASH)
			break; /* past the hashed keys */
		dl = dockey_prefix_len(k, klen);
		if (dl == 0) {
			store_iter_next(it);
			continue;
		}
		buf_reset(&seek);
		buf_append(&seek, k, dl);
		buf_push(&seek, KT_MAX_BYTE);
		if (redis_key_of(w->t, k, dl, &key, &slot)) {
			if ((rv = yv_root(w->t, &key, &r, w->errmsg)) != 0)
				goto out;
			if (r.type != YT_NONE && w->fn(w->arg, &key, r.type, slot) != 0) {
				w->stopped = true;
				goto out;
			}
		}
		store_iter_seek(it, seek.data, seek.len);
	}
	rv = store_iter_status(it, w->errmsg);
out:
	store_iter_free(it);
	buf_free(&seek);
	return rv;
}

/* Whether the store holds any version of DocKey dk. */
static int stored(struct yedis_txn *t, const uint8_t *dk, size_t dl, bool *out, char *errmsg)
{
	struct buf hi = BUF_INIT;
	struct store_iter *it;
	int rv;
	buf_append(&hi, dk, dl);
	buf_push(&hi, KT_MAX_BYTE);
	it = store_iter_new(t->o.store, dk, dl, hi.data, hi.len);
	store_iter_seek(it, dk, dl);
	*out = store_iter_valid(it);
	rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	buf_free(&hi);
	return rv;
}

/* The keys the txn created that the store does not hold (KEYS, DBSIZE). */
static int walk_overlay(struct walk *w)
{
	struct yedis_txn *t = w->t;
	for (size_t i = 0; i < t->tab_cap && !w->stopped; i++) {
		struct okey *k = t->tab[i];
		struct resp_arg key;
		struct yroot r;
		uint16_t slot;
		bool in_store;
		int rv;
		if (k == NULL || !k->root_written || k->root_deleted)
			continue;
		if ((rv = stored(t, k->dockey, k->dlen, &in_store, w->errmsg)) != 0)
			return rv;
		if (in_store || !redis_key_of(t, k->dockey, k->dlen, &key, &slot))
			continue;
		if ((rv = yv_root(t, &key, &r, w->errmsg)) != 0)
			return rv;
		if (r.type != YT_NONE && w->fn(w->arg, &key, r.type, slot) != 0)
			w->stopped = true;
	}
	return 0;
}

/* The overlay's keys come in table order: KEYS's reply order is
 * unspecified in Redis too. */

struct keys_ctx {
	const struct resp_arg *pat;
	bool all;
	struct resp_arg *keys;
	size_t n, cap;
	bool too_many;
};

static int keys_one(void *arg, const struct resp_arg *key, int type, uint16_t slot)
{
	struct keys_ctx *c = arg;
	(void)type;
	(void)slot;
	if (!c->all && !ystringmatch(c->pat->p, c->pat->n, key->p, key->n, false))
		return 0;
	if (c->n == KEYS_MAX) {
		c->too_many = true;
		return 1;
	}
	c->keys = xgrow(c->keys, &c->cap, c->n + 1, sizeof *c->keys, 64);
	c->keys[c->n++] = *key;
	return 0;
}

static int cmd_keys(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	struct keys_ctx c = {.pat = &argv[1]};
	struct walk w = {.t = t, .fn = keys_one, .arg = &c, .errmsg = errmsg};
	int rv;
	(void)argc;
	c.all = argv[1].n == 1 && argv[1].p[0] == '*';
	if ((rv = walk_store(&w, 0)) == 0 && !w.stopped)
		rv = walk_overlay(&w);
	if (rv == 0) {
		if (c.too_many) {
			resp_errorf(reply,
				    "ERR docraft: KEYS would return more than %d keys; use SCAN",
				    KEYS_MAX);
		} else {
			resp_array(reply, c.n);
			for (size_t i = 0; i < c.n; i++)
				resp_bulk(reply, c.keys[i].p, c.keys[i].n);
		}
	}
	free(c.keys);
	return rv;
}

static int count_one(void *arg, const struct resp_arg *key, int type, uint16_t slot)
{
	(void)key;
	(void)type;
	(void)slot;
	(*(long long *)arg)++;
	return 0;
}

static int cmd_dbsize(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		      struct buf *reply, char *errmsg)
{
	long long n = 0;
	struct walk w = {.t = t, .fn = count_one, .arg = &n, .errmsg = errmsg};
	int rv;
	(void)argc;
	(void)argv;
	if ((rv = walk_store(&w, 0)) != 0 || (rv = walk_overlay(&w)) != 0)
		return rv;
	resp_int(reply, n);
	return 0;
}

/* ---- SCAN ---- */

struct scan_ctx {
	const struct resp_arg *pat; /* NULL: every key */
	const struct resp_arg *type;
	long long count;
	uint32_t slot;       /* the slot being walked */
	uint64_t skip;       /* live keys of the first slot to skip (a split slot) */
	uint64_t in_slot;    /* live keys of slot met (skipped ones included) */
	uint64_t examined;   /* keys examined by this call */
	uint64_t slot_here;  /* keys of slot examined by this call */
	bool done_slot_full; /* stopped at the start of slot (the cursor) */
	uint64_t next_cursor;
	struct resp_arg *keys;
	size_t n, cap;
};

static int scan_one(void *arg, const struct resp_arg *key, int type, uint16_t slot)
{
	struct scan_ctx *c = arg;
	if (slot != c->slot) {
		/* A new slot: stop here when enough keys were examined. */
		if (c->examined >= (uint64_t)c->count) {
			c->next_cursor = yedis_scan_cursor(slot, 0);
			return 1;
		}
		c->slot = slot;
		c->in_slot = 0;
		c->slot_here = 0;
		c->skip = 0;
	}
	c->in_slot++;
	if (c->in_slot <= c->skip)
		return 0;
	if (c->slot_here >= SCAN_SPLIT && c->examined >= (uint64_t)c->count) {
		/* A big slot: split it after the keys returned so far. */
		c->next_cursor = yedis_scan_cursor(slot, c->in_slot - 1);
		return 1;
	}
	c->examined++;
	c->slot_here++;
	if (c->pat != NULL && !ystringmatch(c->pat->p, c->pat->n, key->p, key->n, false))
		return 0;
	if (c->type != NULL && !(c->type->n == strlen(ytype_name(type)) &&
				 strncasecmp(c->type->p, ytype_name(type), c->type->n) == 0))
		return 0;
	c->keys = xgrow(c->keys, &c->cap, c->n + 1, sizeof *c->keys, 16);
	c->keys[c->n++] = *key;
	return 0;
}

/* Redis's parseScanCursorOrReply: strtoul over the whole argument (a
 * sign is accepted, "-1" wraps around; no leading blank, no overflow). */
static bool parse_cursor(const struct resp_arg *a, uint64_t *out)
{
	char buf[32];
	char *end;
	unsigned long long v;
	if (a->n >= sizeof buf)
		return false;
	memcpy(buf, a->p, a->n);
	buf[a->n] = '\0';
	if (memchr(a->p, '\0', a->n) != NULL || isspace((unsigned char)buf[0]))
		return false;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return false;
	*out = v;
	return true;
}

static int cmd_scan(struct yedis_txn *t, uint32_t argc, const struct resp_arg *argv,
		    struct buf *reply, char *errmsg)
{
	struct scan_ctx c = {.count = 10};
	struct walk w = {.t = t, .fn = scan_one, .arg = &c, .errmsg = errmsg};
	uint64_t cursor;
	char num[24];
	int rv;

	if (!parse_cursor(&argv[1], &cursor)) {
		resp_error(reply, "ERR invalid cursor");
		return 0;
	}
	for (uint32_t i = 2; i < argc; i++) {
		bool more = i + 1 < argc;
		if (arg_is(&argv[i], "count") && more) {
			if (!yarg_ll(&argv[i + 1], &c.count)) {
				resp_error(reply, YERR_NOT_INT);
				return 0;
			}
			if (c.count < 1) {
				resp_error(reply, YERR_SYNTAX);
				return 0;
			}
			i++;
		} else if (arg_is(&argv[i], "match") && more) {
			c.pat = &argv[++i];
			if (c.pat->n == 1 && c.pat->p[0] == '*')
				c.pat = NULL;
		} else if (arg_is(&argv[i], "type") && more) {
			c.type = &argv[++i];
		} else {
			resp_error(reply, YERR_SYNTAX);
			return 0;
		}
	}
	c.slot = yedis_scan_slot(cursor);
	c.skip = yedis_scan_offset(cursor);
	c.next_cursor = 0;
	if (c.slot < REDIS_SLOTS && (rv = walk_store(&w, c.slot)) != 0) {
		free(c.keys);
		return rv;
	}
	resp_array(reply, 2);
	snprintf(num, sizeof num, "%llu", (unsigned long long)c.next_cursor);
	resp_bulk_str(reply, num);
	resp_array(reply, c.n);
	for (size_t i = 0; i < c.n; i++)
		resp_bulk(reply, c.keys[i].p, c.keys[i].n);
	free(c.keys);
	return 0;
}

static const struct ycmd cmds[] = {
	{{"del", -2, YEDIS_WRITE | YEDIS_SMALL}, cmd_del},
	{{"exists", -2, YEDIS_READONLY}, cmd_exists},
	{{"type", 2, YEDIS_READONLY}, cmd_type},
	{{"expire", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_expire},
	{{"pexpire", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_pexpire},
	{{"expireat", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_expireat},
	{{"pexpireat", -3, YEDIS_WRITE | YEDIS_SMALL}, cmd_pexpireat},
	{{"ttl", 2, YEDIS_READONLY}, cmd_ttl},
	{{"pttl", 2, YEDIS_READONLY}, cmd_pttl},
	{{"persist", 2, YEDIS_WRITE | YEDIS_SMALL}, cmd_persist},
	{{"keys", 2, YEDIS_READONLY | YEDIS_TABLET}, cmd_keys},
	{{"scan", -2, YEDIS_READONLY | YEDIS_TABLET}, cmd_scan},
	{{"dbsize", 1, YEDIS_READONLY | YEDIS_TABLET}, cmd_dbsize},
};

const struct ycmd_table ycmd_keys = {cmds, sizeof cmds / sizeof cmds[0]};
