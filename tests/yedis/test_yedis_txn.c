/* The txn: commands of one txn see each other's writes (the overlay),
 * replies and batches are deterministic, a read-only txn refuses writes,
 * and seed 002's Redis example (the string rows) comes out byte for
 * byte as the seed lists it. */
#include "yharness.h"

#include <stdio.h>
#include <stdlib.h>

#include "redis/slot.h"
#include "yedis/yedis_int.h"

#define EQ(got, want) CHECK_EQ_STR(got, want)

static struct yh h;

TEST(incr_three_times)
{
	yh_open(&h, "ytxn");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "INCR x"), "1");
	EQ(yh_run(&h, "INCR x"), "2");
	EQ(yh_run(&h, "INCR x"), "3");
	EQ(yh_run(&h, "GET x"), "\"3\"");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "GET x"), "\"3\"");
	/* Nothing of the txn is in the store before its commit. */
	yh_begin(&h, yh_ht(3), true);
	EQ(yh_run(&h, "INCRBY x 10"), "13");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(2), "GET x"), "\"3\"");
	EQ(yh_read(&h, yh_ht(3), "GET x"), "\"13\"");
	yh_close(&h);
}

TEST(set_get_del_exists)
{
	yh_open(&h, "ytxn");
	EQ(yh_cmd(&h, yh_ht(1), "SET old v"), "OK");
	yh_begin(&h, yh_ht(2), true);
	EQ(yh_run(&h, "SET a 1"), "OK");
	EQ(yh_run(&h, "GET a"), "\"1\"");
	EQ(yh_run(&h, "EXISTS a old"), "2");
	EQ(yh_run(&h, "DEL a old"), "2");
	EQ(yh_run(&h, "EXISTS a old"), "0");
	EQ(yh_run(&h, "GET old"), "nil");
	EQ(yh_run(&h, "SET old w NX"), "OK");
	EQ(yh_run(&h, "APPEND old x"), "2");
	EQ(yh_run(&h, "DBSIZE"), "1");
	EQ(yh_run(&h, "KEYS *"), "[\"old\"]");
	EQ(yh_run(&h, "SET b 1 EX 100"), "OK");
	EQ(yh_run(&h, "TTL b"), "100");
	EQ(yh_run(&h, "EXPIRE b 50"), "1");
	EQ(yh_run(&h, "TTL b"), "50");
	EQ(yh_run(&h, "PERSIST b"), "1");
	EQ(yh_run(&h, "TTL b"), "-1");
	EQ(yh_run(&h, "EXPIRE b 30"), "1");
	EQ(yh_run(&h, "DBSIZE"), "2");
	yh_commit(&h);
	EQ(yh_read(&h, yh_ht(3), "GET old"), "\"wx\"");
	EQ(yh_read(&h, yh_ht(3), "EXISTS a"), "0");
	EQ(yh_read(&h, yh_ht(3), "TTL b"), "29");
	EQ(yh_read(&h, yh_ht(33), "GET b"), "nil");
	EQ(yh_read(&h, yh_ht(3), "DBSIZE"), "2");
	yh_close(&h);
}

/* yv_children's callback: "f=v" pairs. */
static int collect(void *arg, const struct pv *sub, size_t nsub, const struct pv *value)
{
	struct buf *out = arg;
	CHECK(nsub == 1 && sub[0].type == PV_STRING && value->type == PV_STRING);
	buf_printf(out, "%s%.*s=%.*s", out->len ? " " : "", (int)sub[0].v.s.len, sub[0].v.s.p,
		   (int)value->v.s.len, value->v.s.p);
	return 0;
}

static const char *children(const char *key, bool reverse, const char *start)
{
	static struct buf out;
	struct resp_arg k = {key, strlen(key)};
	struct pv st = pv_str(start ? start : "");
	buf_reset(&out);
	CHECK_OK(yv_children(h.t, &k, NULL, 0, reverse, start ? &st : NULL, start ? 1 : 0, collect,
			     &out, h.errmsg));
	return buf_cstr(&out);
}

static void hput(const char *key, const char *f, const char *v)
{
	struct resp_arg k = {key, strlen(key)};
	struct pv fp = pv_str(f), vp = pv_str(v);
	yw_put(h.t, &k, &fp, 1, &vp);
}

static const char *hget(const char *key, const char *f)
{
	static char out[64];
	struct resp_arg k = {key, strlen(key)};
	struct pv fp = pv_str(f), v;
	bool found;
	CHECK_OK(yv_get(h.t, &k, &fp, 1, &v, &found, h.errmsg));
	if (!found)
		return "nil";
	snprintf(out, sizeof out, "%.*s", (int)v.v.s.len, v.v.s.p);
	return out;
}

TEST(hash_overlay)
{
	struct resp_arg k = {"h", 1};
	yh_open(&h, "ytxn");
	yh_begin(&h, yh_ht(1), true);
	yw_root(h.t, &k, YT_HASH, NULL, YEDIS_NO_TTL);
	hput("h", "f1", "a");
	hput("h", "f2", "b");
	hput("h", "f4", "d");
	EQ(children("h", false, NULL), "f1=a f2=b f4=d");
	yh_commit(&h);

	/* Fields written and deleted in a txn merge with the stored ones. */
	yh_begin(&h, yh_ht(2), true);
	hput("h", "f3", "c");
	hput("h", "f1", "A");
	{
		struct pv f2 = pv_str("f2");
		yw_delete(h.t, &k, &f2, 1);
	}
	hput("h", "f0", "z");
	hput("h", "f0", "Z"); /* the later write wins */
	EQ(hget("h", "f1"), "A");
	EQ(hget("h", "f2"), "nil");
	EQ(hget("h", "f4"), "d");
	EQ(children("h", false, NULL), "f0=Z f1=A f3=c f4=d");
	EQ(children("h", true, NULL), "f4=d f3=c f1=A f0=Z");
	EQ(children("h", false, "f2"), "f3=c f4=d");
	EQ(children("h", false, "f1"), "f1=A f3=c f4=d");
	EQ(children("h", true, "f3"), "f3=c f1=A f0=Z");
	EQ(children("h", true, "f2"), "f1=A f0=Z");
	yh_commit(&h);
	yh_begin(&h, yh_ht(3), false);
	EQ(children("h", false, NULL), "f0=Z f1=A f3=c f4=d");
	EQ(children("h", true, "f3"), "f3=c f1=A f0=Z");
	yh_commit(&h);

	/* A root replaced in the txn hides every stored field. */
	yh_begin(&h, yh_ht(4), true);
	yw_root(h.t, &k, YT_HASH, NULL, YEDIS_NO_TTL);
	EQ(hget("h", "f1"), "nil");
	EQ(children("h", false, NULL), "");
	hput("h", "g", "1");
	EQ(children("h", false, NULL), "g=1");
	EQ(yh_run(&h, "TYPE h"), "hash");
	yh_commit(&h);
	yh_begin(&h, yh_ht(5), false);
	EQ(children("h", false, NULL), "g=1");
	EQ(hget("h", "f1"), "nil");
	yh_commit(&h);

	/* A string over it, then a hash again: fields written before the
	 * new root are gone too. */
	yh_begin(&h, yh_ht(6), true);
	hput("h", "x", "1");
	EQ(yh_run(&h, "SET h s"), "OK");
	EQ(children("h", false, NULL), "");
	EQ(yh_run(&h, "GET h"), "\"s\"");
	yw_root(h.t, &k, YT_HASH, NULL, YEDIS_NO_TTL);
	hput("h", "y", "2");
	EQ(children("h", false, NULL), "y=2");
	EQ(yh_run(&h, "DEL h"), "1");
	EQ(children("h", false, NULL), "");
	EQ(yh_run(&h, "EXISTS h"), "0");
	yh_commit(&h);
	yh_begin(&h, yh_ht(7), false);
	EQ(children("h", false, NULL), "");
	EQ(yh_run(&h, "TYPE h"), "none");
	yh_commit(&h);
	yh_close(&h);
}

/* The same commands on two stores give the same batch bytes and replies. */
TEST(determinism)
{
	static const char *const cmds[] = {
		"SET a 1 EX 100", "INCR a",          "APPEND b xyz",      "SETRANGE b 5 q",
		"EXPIRE b 10",    "PERSIST b",       "INCRBYFLOAT c 1.5", "GETSET a 7",
		"DEL c",          "SET d 1 KEEPTTL", "PEXPIRE a 5000 GT", "GETDEL d",
	};
	struct buf batches[2], replies[2];
	for (int s = 0; s < 2; s++) {
		buf_init(&batches[s]);
		buf_init(&replies[s]);
		yh_open(&h, "ydet");
		EQ(yh_cmd(&h, yh_ht(1), "SET b abc"), "OK");
		yh_begin(&h, yh_ht(2), true);
		for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
			yh_run(&h, cmds[i]);
			buf_append(&replies[s], h.reply.data, h.reply.len);
		}
		yh_commit(&h);
		buf_append(&batches[s], h.last_batch.data, h.last_batch.len);
		yh_close(&h);
	}
	CHECK(batches[0].len > 0);
	CHECK_EQ_MEM(batches[0].data, batches[0].len, batches[1].data, batches[1].len);
	CHECK_EQ_MEM(replies[0].data, replies[0].len, replies[1].data, replies[1].len);
	for (int s = 0; s < 2; s++) {
		buf_free(&batches[s]);
		buf_free(&replies[s]);
	}
}

TEST(read_only_and_unknown)
{
	static const char *const writes[] = {"SET a 1",   "DEL a",      "INCR a",  "EXPIRE a 1",
					     "PERSIST a", "APPEND a x", "GETDEL a"};
	yh_open(&h, "ytxn");
	for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++)
		CHECK(strstr(yh_read(&h, yh_ht(1), writes[i]), "read-only transaction") != NULL);
	EQ(yh_read(&h, yh_ht(1), "FOO a"), "(error) ERR unknown command 'FOO'");
	CHECK(yedis_command_find("GeT", 3) != NULL);
	CHECK(yedis_command_find("ping", 4) == NULL);
	for (size_t i = 0; i < yedis_command_count(); i++) {
		const struct yedis_command *c = yedis_command_at(i);
		CHECK(c != NULL && yedis_command_find(c->name, strlen(c->name)) == c);
		CHECK(!!(c->flags & YEDIS_WRITE) != !!(c->flags & YEDIS_READONLY));
	}
	CHECK(yedis_command_at(yedis_command_count()) == NULL);
	/* A key too long for a DocDB key: a clear error. */
	{
		static char big[YEDIS_MAX_KEY + 2];
		struct resp_arg argv[3] = {{"SET", 3}, {big, YEDIS_MAX_KEY + 1}, {"v", 1}};
		memset(big, 'k', sizeof big);
		yh_begin(&h, yh_ht(2), true);
		EQ(yh_runv(&h, 3, argv), "(error) " YERR_TOO_LONG);
		argv[1].n = YEDIS_MAX_KEY;
		EQ(yh_runv(&h, 3, argv), "OK");
		yh_commit(&h);
	}
	yh_close(&h);
}

/* One read-only txn reading the same keys again and again (the front
 * end's shared requests): each read answers its own key, missing and
 * wrong-typed ones included, keys of one length told apart. */
TEST(read_txn_repeated_keys)
{
	yh_open(&h, "ytxn");
	EQ(yh_cmd(&h, yh_ht(1), "SET ka one"), "OK");
	EQ(yh_cmd(&h, yh_ht(1), "SET kb two"), "OK");
	yh_hset(&h, yh_ht(1), "kh", "f", "v");
	yh_begin(&h, yh_ht(2), false);
	for (int i = 0; i < 3; i++) {
		EQ(yh_run(&h, "GET ka"), "\"one\"");
		EQ(yh_run(&h, "GET ka"), "\"one\"");
		EQ(yh_run(&h, "GET kb"), "\"two\"");
		EQ(yh_run(&h, "GET kc"), "nil");
		EQ(yh_run(&h, "STRLEN kb"), "3");
		CHECK(strncmp(yh_run(&h, "GET kh"), "(error) WRONGTYPE", 17) == 0);
		EQ(yh_run(&h, "HGET kh f"), "\"v\"");
	}
	yh_commit(&h);
	yh_close(&h);
}

/* The pairs in the batch of the txn committed last. */
static uint64_t pairs_committed(void)
{
	uint32_t n = 0;
	CHECK_OK_MSG(batch_validate(h.last_batch.data, h.last_batch.len, &n, h.errmsg), h.errmsg);
	return n;
}

/* The pairs of one txn that a later root write of their key hides never
 * reach the store (yedis_txn_seal); what every read sees is unchanged. */
TEST(seal_drops_hidden_pairs)
{
	yh_open(&h, "ytxn");
	yh_begin(&h, yh_ht(1), true);
	EQ(yh_run(&h, "SET k 1"), "OK");
	EQ(yh_run(&h, "SET k 2"), "OK");
	EQ(yh_run(&h, "DEL k"), "1");
	EQ(yh_run(&h, "SET k 3"), "OK");
	EQ(yh_run(&h, "EXPIRE k 100"), "1");
	EQ(yh_run(&h, "SET j x"), "OK");
	EQ(yh_run(&h, "HSET h a 1 b 2"), "2");
	EQ(yh_run(&h, "DEL h"), "1");
	EQ(yh_run(&h, "HSET h c 3"), "1");
	EQ(yh_run(&h, "HSET h d 4"), "1");
	yh_commit(&h);
	/* k: its last root and the merge record after it; j; h: its last
	 * root and the two fields written after it */
	CHECK_EQ_U64(pairs_committed(), 6);
	EQ(yh_read(&h, yh_ht(2), "GET k"), "\"3\"");
	EQ(yh_read(&h, yh_ht(2), "TTL k"), "99");
	EQ(yh_read(&h, yh_ht(2), "GET j"), "\"x\"");
	EQ(yh_read(&h, yh_ht(2), "HGETALL h"), "[\"c\", \"3\", \"d\", \"4\"]");
	/* a field written again hides its earlier pair */
	yh_begin(&h, yh_ht(3), true);
	EQ(yh_run(&h, "HSET h2 f 1"), "1");
	EQ(yh_run(&h, "HSET h2 f 2 g 1"), "1");
	EQ(yh_run(&h, "HSET h2 f 3"), "0");
	EQ(yh_run(&h, "HDEL h2 g"), "1");
	yh_commit(&h);
	/* h2's root, f = 3, g's tombstone */
	CHECK_EQ_U64(pairs_committed(), 3);
	EQ(yh_read(&h, yh_ht(4), "HGETALL h2"), "[\"f\", \"3\"]");
	/* nothing hidden: the batch as written */
	yh_begin(&h, yh_ht(5), true);
	EQ(yh_run(&h, "SET a 1"), "OK");
	EQ(yh_run(&h, "HSET h e 5"), "1");
	yh_commit(&h);
	CHECK_EQ_U64(pairs_committed(), 2);
	yh_close(&h);
}

/* Which writes have a short reply whatever the data (the front end shares
 * requests among clients for those only). */
TEST(reply_small)
{
	struct resp_arg set[4] = {{"SET", 3}, {"k", 1}, {"v", 1}, {"gEt", 3}};
	struct resp_arg one[2] = {{"x", 1}, {"k", 1}};
	const struct yedis_command *c = yedis_command_find("set", 3);

	CHECK(yedis_reply_small(c, 3, set));
	CHECK(!yedis_reply_small(c, 4, set));
	CHECK(yedis_reply_small(yedis_command_find("incr", 4), 2, one));
	CHECK(yedis_reply_small(yedis_command_find("hset", 4), 2, one));
	CHECK(!yedis_reply_small(yedis_command_find("getset", 6), 2, one));
	CHECK(!yedis_reply_small(yedis_command_find("getdel", 6), 2, one));
	CHECK(!yedis_reply_small(yedis_command_find("spop", 4), 2, one));
	CHECK(!yedis_reply_small(yedis_command_find("lpop", 4), 2, one));
	CHECK(!yedis_reply_small(yedis_command_find("zpopmin", 7), 2, one));
	for (size_t i = 0; i < yedis_command_count(); i++) {
		const struct yedis_command *y = yedis_command_at(i);
		CHECK(!(y->flags & YEDIS_SMALL) || (y->flags & YEDIS_WRITE));
	}
}

/* Seed 002, "Mapping YEDIS keys to DocDB documents": the string row
 * (T1: SET key1 value1 EX 15 -> (h1, key1), T1 -> 15, value1). The hash
 * and set rows come with their commands (cmd_hash.c, cmd_set.c). */
TEST(seed_002_strings)
{
	yh_open(&h, "yseed");
	yh_label_ht(&h, yh_ht(1), "T1");
	yh_label_key(&h, "key1", "h1");
	EQ(yh_cmd(&h, yh_ht(1), "SET key1 value1 EX 15"), "OK");
	EQ(yh_dump(&h), "(h1, key1), T1 -> 15, value1\n");
	EQ(yh_read(&h, yh_ht(16), "GET key1"), "\"value1\"");
	EQ(yh_read(&h, yh_ht(17), "GET key1"), "nil");
	/* The DocKey bytes: 'G' BE16(slot * 4) 'S' key 00 00 '!' '!'. */
	{
		struct buf dk = BUF_INIT;
		uint8_t want[32];
		size_t n = 0;
		uint16_t part = (uint16_t)(redis_key_slot("key1", 4) * 4);
		yedis_dockey(&dk, "key1", 4);
		want[n++] = 'G';
		want[n++] = (uint8_t)(part >> 8);
		want[n++] = (uint8_t)part;
		want[n++] = 'S';
		memcpy(want + n, "key1", 4);
		n += 4;
		want[n++] = 0;
		want[n++] = 0;
		want[n++] = '!';
		want[n++] = '!';
		CHECK_EQ_MEM(dk.data, dk.len, want, n);
		CHECK_EQ_INT(redis_key_slot("key1", 4), 9189); /* redis-cli CLUSTER KEYSLOT key1 */
		buf_free(&dk);
	}
	yh_close(&h);
}

TEST_MAIN(T(incr_three_times), T(read_txn_repeated_keys), T(reply_small),
	  T(seal_drops_hidden_pairs), T(set_get_del_exists), T(hash_overlay), T(determinism),
	  T(read_only_and_unknown), T(seed_002_strings))
