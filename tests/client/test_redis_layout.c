/* Seed 002's YEDIS example ("Mapping YEDIS keys to DocDB documents"),
 * byte for byte, against docs/redis.md (its path is argv's DOCS_REDIS_MD
 * environment variable, set by meson), so that the documented bytes and
 * the code cannot drift apart:
 *
 *   slots        the slots of key1, key2, key3 (redis_key_slot) and their
 *                partition values (slot * 4), as documented
 *   pairs        every pair of the seed's table, built with the DocDB
 *                encoders (a DocKey 'G' BE16(slot*4) 'S' key 00 00 '!' '!',
 *                subkeys, '#' DocHybridTime, control fields and values):
 *                its seed notation (dump_pair with the labels h1..h3 and
 *                T1..T7) and its hex appear in the docs
 *   sorted_view  the same pairs in key order (RocksDB's bytewise order):
 *                the docs' sorted view is that dump, line for line
 *
 * `test_redis_layout print` prints the text the docs hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "common/redis_slot.h"
#include "docdb/dump.h"
#include "docdb/key.h"
#include "docdb/value.h"
#include "test.h"

#define NPAIRS 16

struct pair {
	const char *cmd; /* the command that wrote it (first pair of a command) */
	int t;           /* T1..T7 */
	const char *key;
	const char *sub; /* NULL: the root */
	struct docvalue v;
	struct buf path, full, val;
};

static struct pair P[NPAIRS];
static size_t NP;
static const char *KEYS[3] = {"key1", "key2", "key3"};

static uint64_t ht_of(int t)
{
	return ht_make(1700000000000000ull + (uint64_t)t * 1000000, 0);
}

static const char *ht_label(void *ctx, uint64_t ht)
{
	static char s[8];
	(void)ctx;
	for (int t = 1; t <= 7; t++)
		if (ht == ht_of(t)) {
			snprintf(s, sizeof s, "T%d", t);
			return s;
		}
	return NULL;
}

static const char *hash_label(void *ctx, uint16_t hash)
{
	static char s[8];
	(void)ctx;
	for (int i = 0; i < 3; i++)
		if (hash == redis_slot_partition(redis_key_slot(KEYS[i], strlen(KEYS[i])))) {
			snprintf(s, sizeof s, "h%d", i + 1);
			return s;
		}
	return NULL;
}

static void add(const char *cmd, int t, const char *key, const char *sub, struct docvalue v)
{
	struct pair *p = &P[NP++];
	struct pv hk = pv_str(key);
	struct dockey dk = {.has_hash = true,
			    .hash = redis_slot_partition(redis_key_slot(key, strlen(key))),
			    .n_hashed = 1,
			    .hashed = &hk};
	p->cmd = cmd;
	p->t = t;
	p->key = key;
	p->sub = sub;
	p->v = v;
	buf_init(&p->path);
	buf_init(&p->full);
	buf_init(&p->val);
	dockey_append(&p->path, &dk);
	if (sub != NULL) {
		struct pv s = pv_str(sub);
		key_append_pv(&p->path, &s);
	}
	buf_append(&p->full, p->path.data, p->path.len);
	buf_append(&p->full, "#", 1);
	docht_append(&p->full, (struct docht){ht_of(t), 0});
	value_append(&p->val, &v);
}

static struct docvalue str(const char *s)
{
	return docvalue_of(pv_str(s));
}

static void build(void)
{
	struct docvalue v1 = str("value1");
	if (NP > 0)
		return;
	v1.has_ttl = true;
	v1.ttl_ms = 15000;
	add("SET key1 value1 EX 15", 1, "key1", NULL, v1);
	add("HSET key2 subkey1 value1", 2, "key2", NULL, docvalue_kind(VAL_OBJECT));
	add(NULL, 2, "key2", "subkey1", str("value1"));
	add("HSET key2 subkey2 value2", 3, "key2", "subkey2", str("value2"));
	add("DEL key2", 4, "key2", NULL, docvalue_kind(VAL_TOMBSTONE));
	add("HMSET key2 subkey1 new_val1 subkey3 value3", 5, "key2", NULL,
	    docvalue_kind(VAL_OBJECT));
	add(NULL, 5, "key2", "subkey1", str("new_val1"));
	add(NULL, 5, "key2", "subkey3", str("value3"));
	add("SADD key3 value4 value5", 6, "key3", NULL, docvalue_kind(VAL_REDIS_SET));
	add(NULL, 6, "key3", "value4", docvalue_of(pv_null()));
	add(NULL, 6, "key3", "value5", docvalue_of(pv_null()));
	add("SADD key3 value6", 7, "key3", "value6", docvalue_of(pv_null()));
}

static void hex(struct buf *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_printf(out, "%s%02x", i ? " " : "", p[i]);
}

/* The documented lines of pair p: its notation, its key without the
 * hybrid time and its value, in hex. */
static void pair_text(const struct pair *p, struct buf *out)
{
	struct dump_opts o = {.ht_label = ht_label, .hash_label = hash_label, .redis = true};
	dump_pair(p->full.data, p->full.len, p->val.data, p->val.len, &o, out);
	buf_printf(out, "    key   ");
	hex(out, p->path.data, p->path.len);
	buf_printf(out, " 23 <T%d>\n    value ", p->t);
	hex(out, p->val.data, p->val.len);
	buf_printf(out, "\n");
}

static void slots_text(struct buf *out)
{
	for (int i = 0; i < 3; i++) {
		uint16_t slot = redis_key_slot(KEYS[i], strlen(KEYS[i]));
		buf_printf(out, "| h%d | %s | %u | 0x%04x |\n", i + 1, KEYS[i], slot,
			   redis_slot_partition(slot));
	}
}

static int by_key(const void *a, const void *b)
{
	const struct pair *x = *(const struct pair *const *)a, *y = *(const struct pair *const *)b;
	size_t n = x->full.len < y->full.len ? x->full.len : y->full.len;
	int c = memcmp(x->full.data, y->full.data, n);
	return c != 0 ? c : (x->full.len > y->full.len) - (x->full.len < y->full.len);
}

static void sorted_text(struct buf *out)
{
	struct dump_opts o = {.ht_label = ht_label, .hash_label = hash_label, .redis = true};
	const struct pair *s[NPAIRS];
	for (size_t i = 0; i < NP; i++)
		s[i] = &P[i];
	qsort(s, NP, sizeof s[0], by_key);
	for (size_t i = 0; i < NP; i++)
		dump_pair(s[i]->full.data, s[i]->full.len, s[i]->val.data, s[i]->val.len, &o, out);
}

static char *docs(void)
{
	const char *path = getenv("DOCS_REDIS_MD");
	static char *text;
	FILE *f;
	long n;
	if (text != NULL)
		return text;
	CHECK_MSG(path != NULL, "DOCS_REDIS_MD is not set");
	f = fopen(path, "r");
	CHECK_MSG(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)n + 1);
	CHECK(fread(text, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return text;
}

static void check_in_docs(struct buf *b)
{
	CHECK_MSG(strstr(docs(), buf_cstr(b)) != NULL, "docs/redis.md does not hold, verbatim:\n%s",
		  buf_cstr(b));
}

TEST(slots)
{
	struct buf b = BUF_INIT;
	slots_text(&b);
	check_in_docs(&b);
	buf_free(&b);
}

TEST(pairs)
{
	build();
	for (size_t i = 0; i < NP; i++) {
		struct buf b = BUF_INIT;
		pair_text(&P[i], &b);
		check_in_docs(&b);
		buf_free(&b);
	}
}

TEST(sorted_view)
{
	struct buf b = BUF_INIT;
	build();
	sorted_text(&b);
	check_in_docs(&b);
	buf_free(&b);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {T(slots), T(pairs), T(sorted_view)};
	if (argc == 2 && strcmp(argv[1], "print") == 0) {
		struct buf b = BUF_INIT;
		build();
		slots_text(&b);
		buf_printf(&b, "\n");
		for (size_t i = 0; i < NP; i++) {
			if (P[i].cmd != NULL)
				buf_printf(&b, "%s%s\n", i ? "\n" : "", P[i].cmd);
			pair_text(&P[i], &b);
		}
		buf_printf(&b, "\n");
		sorted_text(&b);
		fwrite(b.data, 1, b.len, stdout);
		buf_free(&b);
		for (size_t i = 0; i < NP; i++) {
			buf_free(&P[i].path);
			buf_free(&P[i].full);
			buf_free(&P[i].val);
		}
		return 0;
	}
	return test_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
