/* The front end's multi-key and tablet-wide commands (redis_int.h).
 *
 * Design note. Multi-key commands are split into one engine command per
 * key (MGET -> GET k, MSET -> SET k v, DEL -> DEL k, EXISTS -> EXISTS k),
 * grouped per tablet into one request each (fan: the database's tablets
 * from the client's cache; a tablet refusing a key as not its own, the
 * cache being stale, makes the fan send that group's commands again per
 * slot), and their replies joined in argument order: MGET an array (a key
 * of another type is a nil, as in Redis), MSET +OK, DEL and EXISTS the
 * sum. So MSET is atomic per tablet only (one Raft entry per tablet), not
 * across tablets: Redis Cluster refuses an MSET across slots (CROSSSLOT);
 * we run it, each tablet's part atomically.
 *
 * Tablet-wide commands ask every tablet of the database (fan_tablets,
 * then one request per tablet routed by its first slot) and merge: KEYS
 * concatenates, DBSIZE sums, RANDOMKEY takes the first tablet's key.
 * SCAN walks the tablets in slot order, one tablet per call: the cursor is
 * the engine's (yedis.h: slot * 2^40 + n), whose slot names the tablet;
 * when a tablet's cursor comes back 0 the next cursor is the next
 * tablet's first slot (n 0), and "0" after the last tablet ends the walk.
 * A split between calls sends the cursor to the tablet now owning its
 * slot, which walks on from there: nothing is missed or repeated.
 *
 * FLUSHDB drops the table redis_<db> (if it exists): the next write
 * creates it anew. FLUSHALL drops every one of the 16. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"
#include "common/redis_slot.h"
#include "tserver/redis_int.h"
#include "yedis/yedis.h"

#define SLOTS REDIS_SLOTS

static bool is(const struct resp_arg *a, const char *name)
{
	return a->n == strlen(name) && strncasecmp(a->p, name, a->n) == 0;
}

static uint16_t slot_of(const struct resp_arg *key)
{
	return redis_key_slot(key->p, key->n);
}

/* ---- multi-key ---- */

bool redis_split_multikey(struct fan *f, uint32_t argc, const struct resp_arg *argv)
{
	if (is(&argv[0], "mset")) {
		f->write = true;
		for (uint32_t i = 1; i + 1 < argc; i += 2) {
			struct resp_arg a[3] = {argv[0], argv[i], argv[i + 1]};
			fan_add(f, slot_of(&argv[i]), "SET", 3, a);
		}
	} else if (is(&argv[0], "mget") || is(&argv[0], "del") || is(&argv[0], "exists")) {
		const char *name = is(&argv[0], "mget")  ? "GET"
				   : is(&argv[0], "del") ? "DEL"
							 : "EXISTS";
		f->write |= is(&argv[0], "del");
		for (uint32_t i = 1; i < argc; i++) {
			struct resp_arg a[2] = {argv[0], argv[i]};
			fan_add(f, slot_of(&argv[i]), name, 2, a);
		}
	} else {
		return false;
	}
	return true;
}

void redis_join_multikey(struct buf *out, const struct resp_arg *name, const struct fan_sub *subs,
			 size_t n)
{
	long long sum = 0, v;

	if (is(name, "mget")) {
		resp_array(out, n);
		for (size_t i = 0; i < n; i++) {
			if (subs[i].rep_n > 0 && (subs[i].rep[0] == '$'))
				buf_append(out, subs[i].rep, subs[i].rep_n);
			else
				resp_null_bulk(out); /* not a string */
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (rr_is_error(subs[i].rep, subs[i].rep_n)) {
			buf_append(out, subs[i].rep, subs[i].rep_n);
			return;
		}
	}
	if (is(name, "mset")) {
		resp_simple(out, "OK");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!rr_int(subs[i].rep, subs[i].rep_n, &v)) {
			resp_error(out, "ERR docraft: a tablet's reply is not an integer");
			return;
		}
		sum += v;
	}
	resp_int(out, sum);
}

static void multikey_done(struct fan *f)
{
	redis_join_multikey(redis_conn_out(f->c), f->arg, f->subs, f->n_subs);
}

static void multikey_go(struct fan *f)
{
	fan_run(f, multikey_done);
}

/* Keys of several slots: grouped per tablet (one request each), so the
 * database's tablets first. */
static int multikey(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct fan *f = fan_new(c);

	if (f == NULL)
		return REDIS_DONE;
	f->arg = &argv[0];
	redis_split_multikey(f, argc, argv);
	for (size_t i = 1; i < f->n_subs; i++) {
		if (f->subs[i].slot != f->subs[0].slot) {
			f->regroup = true;
			return fan_tablets(f, multikey_go);
		}
	}
	return fan_run(f, multikey_done);
}

int redis_cmd_mget(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return multikey(c, argc, argv);
}

int redis_cmd_mset(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	if (argc % 2 == 0) {
		resp_error(redis_conn_out(c), "ERR wrong number of arguments for 'mset' command");
		return REDIS_DONE;
	}
	return multikey(c, argc, argv);
}

int redis_cmd_del(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return multikey(c, argc, argv);
}

/* ---- tablet-wide ---- */

/* After fan_tablets: the command f->arg (n_arg words) to every tablet. */
static void to_every_tablet(struct fan *f, fan_fn done)
{
	size_t n = docraft_result_ntablets(f->tablets);

	if (n == 0) {
		fan_fail(f, "the database has no tablets");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(f->tablets, i, &t);
		fan_add(f, t.first_slot, NULL, (uint32_t)f->n_arg, f->arg);
	}
	fan_run(f, done);
}

static bool first_error(struct fan *f)
{
	for (size_t i = 0; i < f->n_subs; i++) {
		if (rr_is_error(f->subs[i].rep, f->subs[i].rep_n)) {
			buf_append(redis_conn_out(f->c), f->subs[i].rep, f->subs[i].rep_n);
			return true;
		}
	}
	return false;
}

static void keys_done(struct fan *f)
{
	long long total = 0, k;
	size_t hdr;
	struct buf *out = redis_conn_out(f->c);

	if (first_error(f))
		return;
	for (size_t i = 0; i < f->n_subs; i++) {
		if (!rr_array(f->subs[i].rep, f->subs[i].rep_n, &k, &hdr)) {
			resp_error(out, "ERR docraft: a tablet's reply is not an array");
			return;
		}
		total += k;
	}
	resp_array(out, (size_t)total);
	for (size_t i = 0; i < f->n_subs; i++) {
		rr_array(f->subs[i].rep, f->subs[i].rep_n, &k, &hdr);
		buf_append(out, f->subs[i].rep + hdr, f->subs[i].rep_n - hdr);
	}
}

static void dbsize_done(struct fan *f)
{
	long long total = 0, v;

	if (first_error(f))
		return;
	for (size_t i = 0; i < f->n_subs; i++) {
		if (!rr_int(f->subs[i].rep, f->subs[i].rep_n, &v)) {
			resp_error(redis_conn_out(f->c),
				   "ERR docraft: a tablet's reply is not an integer");
			return;
		}
		total += v;
	}
	resp_int(redis_conn_out(f->c), total);
}

/* RANDOMKEY: each tablet's first key (SCAN from its first slot, COUNT 1);
 * one of the tablets that have one, drawn at random: not uniform over the
 * keys when tablets hold different numbers of them. */
static void randomkey_done(struct fan *f)
{
	size_t with[f->n_subs], n = 0;

	if (first_error(f))
		return;
	for (size_t i = 0; i < f->n_subs; i++) {
		const char *p = f->subs[i].rep, *cur;
		size_t len = f->subs[i].rep_n, hdr, curn, used, hdr2;
		long long count;
		if (rr_array(p, len, &count, &hdr) && count == 2 &&
		    rr_bulk(p + hdr, len - hdr, &cur, &curn, &used) &&
		    rr_array(p + hdr + used, len - hdr - used, &count, &hdr2) && count > 0)
			with[n++] = i;
	}
	if (n == 0) {
		resp_null_bulk(redis_conn_out(f->c));
		return;
	}
	{
		size_t i = with[(size_t)rand() % n], hdr, curn, used, hdr2, kn, kused;
		const char *p = f->subs[i].rep, *cur, *k;
		size_t len = f->subs[i].rep_n;
		long long count;
		rr_array(p, len, &count, &hdr);
		rr_bulk(p + hdr, len - hdr, &cur, &curn, &used);
		rr_array(p + hdr + used, len - hdr - used, &count, &hdr2);
		p += hdr + used + hdr2;
		len -= hdr + used + hdr2;
		if (rr_bulk(p, len, &k, &kn, &kused))
			resp_bulk(redis_conn_out(f->c), k, kn);
		else
			resp_error(redis_conn_out(f->c),
				   "ERR docraft: a tablet's SCAN reply is not [cursor, keys]");
	}
}

static void keys_go(struct fan *f)
{
	to_every_tablet(f, keys_done);
}

static void dbsize_go(struct fan *f)
{
	to_every_tablet(f, dbsize_done);
}

static void randomkey_go(struct fan *f)
{
	size_t n = docraft_result_ntablets(f->tablets);

	for (size_t i = 0; i < n; i++) {
		docraft_redis_tablet t;
		char *num = arena_alloc(&f->mem, 24);
		struct resp_arg a[4] = {{"SCAN", 4}, {num, 0}, {"COUNT", 5}, {"1", 1}};
		docraft_result_redis_tablet(f->tablets, i, &t);
		a[1].n = (size_t)snprintf(num, 24, "%" PRIu64, yedis_scan_cursor(t.first_slot, 0));
		fan_add(f, t.first_slot, NULL, 4, a);
	}
	if (n == 0) {
		fan_fail(f, "the database has no tablets");
		return;
	}
	fan_run(f, randomkey_done);
}

static int tablet_wide(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv, fan_fn go)
{
	struct fan *f = fan_new(c);

	if (f == NULL)
		return REDIS_DONE;
	f->arg = argv;
	f->n_arg = argc;
	return fan_tablets(f, go);
}

int redis_cmd_keys(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return tablet_wide(c, argc, argv, keys_go);
}

int redis_cmd_dbsize(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return tablet_wide(c, argc, argv, dbsize_go);
}

int redis_cmd_randomkey(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return tablet_wide(c, argc, argv, randomkey_go);
}

/* ---- SCAN ---- */

static void scan_done(struct fan *f)
{
	struct buf *out = redis_conn_out(f->c);
	const char *p = f->subs[0].rep, *cur;
	size_t n = f->subs[0].rep_n, hdr, curn, used;
	long long count;
	uint64_t next = 0;
	size_t t;

	if (rr_is_error(p, n)) {
		buf_append(out, p, n);
		return;
	}
	if (!rr_array(p, n, &count, &hdr) || count != 2 ||
	    !rr_bulk(p + hdr, n - hdr, &cur, &curn, &used) || curn == 0 || curn > 20) {
		resp_error(out, "ERR docraft: a tablet's SCAN reply is not [cursor, keys]");
		return;
	}
	for (size_t i = 0; i < curn; i++) {
		if (cur[i] < '0' || cur[i] > '9') {
			resp_error(out, "ERR docraft: a tablet's SCAN cursor is not a number");
			return;
		}
		next = next * 10 + (uint64_t)(cur[i] - '0');
	}
	if (next == 0 && (t = fan_tablet_of(f, f->subs[0].slot)) != SIZE_MAX) {
		/* this tablet is done: the next one's first slot, or the end */
		docraft_redis_tablet rt;
		docraft_result_redis_tablet(f->tablets, t, &rt);
		if (rt.last_slot + 1u < SLOTS)
			next = yedis_scan_cursor(rt.last_slot + 1u, 0);
	}
	{
		char num[24];
		int len = snprintf(num, sizeof num, "%" PRIu64, next);
		resp_array(out, 2);
		resp_bulk(out, num, (size_t)len);
		buf_append(out, p + hdr + used, n - hdr - used);
	}
}

static void scan_go(struct fan *f)
{
	uint16_t slot = (uint16_t)yedis_scan_slot(f->u);

	if (fan_tablet_of(f, slot) == SIZE_MAX) {
		fan_fail(f, "no tablet owns the cursor's slot");
		return;
	}
	fan_add(f, slot, NULL, (uint32_t)f->n_arg, f->arg);
	fan_run(f, scan_done);
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]: the engine's cursor
 * (yedis.h: slot * 2^40 + keys of the slot already returned) names the
 * tablet; the engine checks the options. */
int redis_cmd_scan(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	uint64_t cur = 0;
	bool bad = argv[1].n == 0;
	struct fan *f;

	/* Redis's cursor rule: an unsigned decimal number */
	for (size_t i = 0; i < argv[1].n && !bad; i++) {
		unsigned d = (unsigned)(argv[1].p[i] - '0');
		bad = argv[1].p[i] < '0' || argv[1].p[i] > '9' || cur > (UINT64_MAX - d) / 10;
		cur = cur * 10 + d;
	}
	if (bad) {
		resp_error(redis_conn_out(c), "ERR invalid cursor");
		return REDIS_DONE;
	}
	if (yedis_scan_slot(cur) >= SLOTS) {
		/* past the last slot: nothing more */
		resp_array(redis_conn_out(c), 2);
		resp_bulk_str(redis_conn_out(c), "0");
		resp_array(redis_conn_out(c), 0);
		return REDIS_DONE;
	}
	if ((f = fan_new(c)) == NULL)
		return REDIS_DONE;
	f->arg = argv;
	f->n_arg = argc;
	f->u = cur;
	return fan_tablets(f, scan_go);
}

/* ---- FLUSHDB, FLUSHALL ---- */

struct flush {
	struct redis_conn *c;
	docraft_req reqs[REDIS_DBS];
	unsigned pending;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

static void flush_done(docraft_req *req)
{
	struct flush *x = req->data;

	if (req->status != DOCRAFT_OK && x->errmsg[0] == '\0')
		snprintf(x->errmsg, sizeof x->errmsg, "%s", req->errmsg);
	if (--x->pending > 0)
		return;
	if (x->errmsg[0] != '\0')
		resp_errorf(redis_conn_out(x->c), "ERR docraft: %s", x->errmsg);
	else
		resp_simple(redis_conn_out(x->c), "OK");
	{
		struct redis_conn *c = x->c;
		free(x);
		redis_conn_complete(c);
	}
}

static int flush(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv, bool all)
{
	struct redis_data *d = redis_conn_data(c);
	struct flush *x;
	unsigned first = all ? 0 : redis_conn_db(c), last = all ? REDIS_DBS - 1 : first;

	if (argc > 2 || (argc == 2 && !is(&argv[1], "async") && !is(&argv[1], "sync"))) {
		resp_error(redis_conn_out(c), "ERR syntax error");
		return REDIS_DONE;
	}
	if (d->client == NULL) {
		resp_error(redis_conn_out(c), "ERR this tserver has no masters: no data commands");
		return REDIS_DONE;
	}
	x = xcalloc(1, sizeof *x);
	x->c = c;
	x->pending = 1;
	for (unsigned db = first; db <= last; db++) {
		char table[16];
		docraft_req *req = &x->reqs[db];
		snprintf(table, sizeof table, "redis_%u", db);
		req->data = x;
		x->pending++;
		if (docraft_table_drop_async(d->client, req, table, true, flush_done) != 0) {
			req->status = DOCRAFT_ECLOSED;
			snprintf(req->errmsg, sizeof req->errmsg, "the tserver is stopping");
			flush_done(req);
		}
	}
	{
		docraft_req self = {.data = x, .status = DOCRAFT_OK};
		flush_done(&self);
	}
	return REDIS_ASYNC;
}

int redis_cmd_flushdb(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return flush(c, argc, argv, false);
}

int redis_cmd_flushall(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	return flush(c, argc, argv, true);
}
