/* docraft-seedwalk: walks through every worked example of the seed documents
 * on a real DocDB store and shows, after each statement, the key-value pairs
 * in the seeds' notation and what a read returns at that time.
 *
 *   msgs     T1-T5   insert, map update, second insert, column delete, row delete
 *   ttl      T1-T2   page_views: row TTL, column TTL, reads around each expiry
 *   nested   T10     a nested document as five pairs, then a sub-document delete
 *   yedis    T1-T7   the Redis table: pairs added per command, the sorted view
 *
 * Each example gets its own store, <dir>/<example>, so that its dump holds only
 * its own pairs. Every statement is one write batch applied at its own hybrid
 * time as the next Raft index. Hybrid times are fixed (seconds after
 * 2026-01-01T00:00:00Z) so the output is reproducible. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/fs.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/dump.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"

#define PROG "docraft-seedwalk"
#define BASE_US UINT64_C(1767225600000000) /* 2026-01-01T00:00:00Z */
#define SEC INT64_C(1000000)

/* Hybrid time at BASE + seconds + micros. */
static uint64_t at(int64_t seconds, int64_t micros)
{
	return ht_make(BASE_US + (uint64_t)(seconds * SEC + micros), 0);
}

static int fail(const char *what, int rc, const char *msg)
{
	fprintf(stderr, PROG ": %s: %s (%s)\n", what, msg && *msg ? msg : "failed",
		docraft_strerror(rc));
	return rc;
}

/* Calls of the DocDB API: report and leave on error. */
#define TRY(what, call, msg)                              \
	do {                                              \
		int rc_ = (call);                         \
		if (rc_ != 0) {                           \
			rc = fail((what), rc_, (msg));    \
			goto out;                         \
		}                                         \
	} while (0)
/* Calls of the helpers below, which report their own errors. */
#define RUN(call)                          \
	do {                                \
		if ((rc = (call)) != 0)     \
			goto out;           \
	} while (0)

/* ---- one example's store, batch and labels ------------------------------ */

struct label {
	uint64_t value; /* hybrid time or 16-bit hash */
	const char *name;
};

struct walk {
	struct store *s;
	uint64_t next_index;
	struct batch b;
	struct docwrite w;
	struct arena arena;
	struct buf out;
	const struct schema *schema; /* names columns in dumps; NULL for documents */
	bool redis;                  /* Redis notation */
	struct label hts[16];     /* T1, T2, ... */
	size_t nhts;
	struct label hashes[4];   /* hash1 / h1, h2, ... */
	size_t nhashes;
	char err[DOCRAFT_ERRMSG_SIZE];
};

static int walk_open(struct walk *w, const char *root, const char *name,
		     const struct schema *schema, bool redis)
{
	struct store_options o;
	struct stat st;
	char path[4096];

	memset(w, 0, sizeof *w);
	w->next_index = 1;
	w->schema = schema;
	w->redis = redis;
	batch_init(&w->b);
	docwrite_init(&w->w, schema, &w->b, NULL);
	arena_init(&w->arena);
	buf_init(&w->out);
	if ((size_t)snprintf(path, sizeof path, "%s/%s", root, name) >= sizeof path)
		return fail(name, DOCRAFT_EINVAL, "store path too long");
	/* An old store would skip our Raft indexes as already applied. */
	if (stat(path, &st) == 0) {
		fprintf(stderr, PROG ": %s already exists; give --keep an empty directory\n", path);
		return DOCRAFT_EINVAL;
	}
	store_options_default(&o);
	int rc = store_open(path, &o, &w->s, w->err);
	return rc ? fail("open store", rc, w->err) : 0;
}

static void walk_close(struct walk *w)
{
	store_close(w->s);
	docwrite_free(&w->w);
	batch_free(&w->b);
	arena_free(&w->arena);
	buf_free(&w->out);
}

#define ADD_LABEL(arr, n, v, nm)                                   \
	do {                                                       \
		if ((n) < sizeof(arr) / sizeof((arr)[0]))          \
			(arr)[(n)++] = (struct label){(v), (nm)};  \
	} while (0)

static void label_ht(struct walk *w, uint64_t ht, const char *name)
{
	ADD_LABEL(w->hts, w->nhts, ht, name);
}

static void label_hash(struct walk *w, uint16_t hash, const char *name)
{
	ADD_LABEL(w->hashes, w->nhashes, hash, name);
}

static const char *find_label(const struct label *l, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].value == v)
			return l[i].name;
	return NULL;
}

static const char *ht_label(void *ctx, uint64_t ht)
{
	struct walk *w = ctx;
	return find_label(w->hts, w->nhts, ht);
}

static const char *hash_label(void *ctx, uint16_t hash)
{
	struct walk *w = ctx;
	return find_label(w->hashes, w->nhashes, hash);
}

static struct dump_opts dump_opts(struct walk *w)
{
	return (struct dump_opts){w->schema, ht_label, hash_label, w, w->redis, false};
}

/* "T1 = 2026-01-01T00:00:01Z, ..." for the labelled times, wrapped. */
static void print_times(const struct walk *w)
{
	int col = printf("hybrid times:");
	for (size_t i = 0; i < w->nhts; i++) {
		time_t t = (time_t)(ht_physical(w->hts[i].value) / 1000000);
		struct tm tm;
		char s[64];
		gmtime_r(&t, &tm);
		strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
		if (col + (int)strlen(w->hts[i].name) + 26 > 80)
			col = printf("\n             ") - 1;
		col += printf(" %s = %s%s", w->hts[i].name, s, i + 1 < w->nhts ? "," : "\n");
	}
}

/* Applies the batch built so far at ht as the next Raft index. With
 * show_added, first prints the pairs it adds (as they will be stored). */
static int apply(struct walk *w, uint64_t ht, bool show_added)
{
	if (show_added) {
		struct dump_opts o = dump_opts(w);
		struct batch_iter it;
		const uint8_t *k, *v;
		size_t kl, vl;
		struct buf key = BUF_INIT;
		int r;
		buf_reset(&w->out);
		batch_iter_init(&it, w->b.data.data, w->b.data.len);
		for (uint32_t i = 0; (r = batch_next(&it, &k, &kl, &v, &vl)) == 1; i++) {
			buf_reset(&key);
			buf_append(&key, k, kl);
			buf_push(&key, KT_HYBRID_TIME);
			docht_append(&key, (struct docht){ht, i});
			buf_printf(&w->out, "  + ");
			dump_pair(key.data, key.len, v, vl, &o, &w->out);
		}
		buf_free(&key);
		if (r < 0)
			return fail("batch", DOCRAFT_ECORRUPT, "malformed write batch");
		printf("%s", buf_cstr(&w->out));
	}
	int rc = store_apply(w->s, w->b.data.data, w->b.data.len, ht, w->next_index++, w->err);
	batch_reset(&w->b);
	return rc ? fail("apply", rc, w->err) : 0;
}

static int print_dump(struct walk *w)
{
	struct dump_opts o = dump_opts(w);
	buf_reset(&w->out);
	int rc = dump_store(w->s, &o, &w->out, w->err);
	if (rc)
		return fail("dump", rc, w->err);
	printf("%s", buf_cstr(&w->out));
	return 0;
}

/* 'v', {k: v, ...}, {m, ...} (sets) or [v, ...] (lists); NULL when absent. */
static void format_node(struct buf *out, const struct docnode *n, bool set, bool list)
{
	if (n == NULL) {
		buf_printf(out, "NULL");
		return;
	}
	if (n->kind == VAL_PRIMITIVE) {
		pv_format(out, &n->value);
		return;
	}
	set = set || n->kind == VAL_REDIS_SET;
	list = list || n->kind == VAL_ARRAY || n->kind == VAL_REDIS_LIST;
	buf_push(out, list ? '[' : '{');
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		if (list) {
			format_node(out, c, false, false);
		} else {
			pv_format(out, &c->key);
			if (!set) {
				buf_printf(out, ": ");
				format_node(out, c, false, false);
			}
		}
		if (c->next != NULL)
			buf_printf(out, ", ");
	}
	buf_push(out, list ? ']' : '}');
}

/* read @<when>: (key...) col=value ...   or   (key...) not found */
static int print_row(struct walk *w, const struct pv *key, size_t nkey, uint64_t ht,
		     const char *when)
{
	struct row r;
	bool found;
	int rc = reader_get_row(w->s, w->schema, key, nkey, ht, &w->arena, &r, &found, w->err);
	if (rc)
		return fail("read row", rc, w->err);
	buf_reset(&w->out);
	buf_printf(&w->out, "read @%s: (", when);
	for (size_t i = 0; i < nkey; i++) {
		pv_format(&w->out, &key[i]);
		buf_printf(&w->out, i + 1 < nkey ? ", " : ")");
	}
	if (!found)
		buf_printf(&w->out, " not found");
	for (size_t i = schema_nkeys(w->schema); found && i < w->schema->ncols; i++) {
		const struct column *c = &w->schema->cols[i];
		buf_printf(&w->out, " %s=", c->name);
		format_node(&w->out, row_column(&r, c), c->type == CT_SET, c->type == CT_LIST);
	}
	printf("%s\n", buf_cstr(&w->out));
	arena_reset(&w->arena);
	return 0;
}

/* Reads the document at dockey + subkeys and prints "<prefix><document>". */
static int print_doc(struct walk *w, const struct buf *dockey, const struct pv *sub, size_t nsub,
		     uint64_t ht, const char *prefix)
{
	const struct docnode *n;
	int rc = reader_get_doc(w->s, dockey->data, dockey->len, sub, nsub, ht, 0, &w->arena, &n,
				w->err);
	if (rc)
		return fail("read document", rc, w->err);
	buf_reset(&w->out);
	if (n == NULL)
		buf_printf(&w->out, "(absent)");
	else
		format_node(&w->out, n, false, false);
	printf("%s%s\n", prefix, buf_cstr(&w->out));
	arena_reset(&w->arena);
	return 0;
}

static void header(const char *title, const char *source)
{
	printf("==============================================================================\n"
	       "%s\n(%s)\n"
	       "==============================================================================\n",
	       title, source);
}

static void statement(const char *s) { printf("\n%s\n", s); }

/* ---- msgs: T1-T5 --------------------------------------------------------- */

static int ex_msgs(const char *root)
{
	struct walk w;
	struct schema s;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv k10[2] = {pv_str("user1"), pv_int32(10)};
	struct pv k20[2] = {pv_str("user1"), pv_int32(20)};
	static const char *names[] = {NULL, "T1", "T2", "T3", "T4", "T5"};
	uint64_t T[6];
	int rc;

	header("msgs: rows, a map column, column and row deletes",
	       "seeds: 'DocDB data model', Examples; 'Persistence', Mapping of YCQL rows");
	memset(&w, 0, sizeof w);
	memset(&s, 0, sizeof s);
	TRY("schema", schema_init(&s, "msgs", err), err);
	TRY("schema", schema_add(&s, "user_id", COL_HASH, CT_TEXT, err), err);
	TRY("schema", schema_add(&s, "msg_id", COL_RANGE, CT_INT32, err), err);
	TRY("schema", schema_add(&s, "msg", COL_REGULAR, CT_TEXT, err), err);
	TRY("schema", schema_add_column(&s, "msg_props", COL_REGULAR, CT_MAP, CT_TEXT, CT_TEXT,
					false, err), err);
	RUN(walk_open(&w, root, "msgs", &s, false));
	for (int i = 1; i <= 5; i++)
		label_ht(&w, T[i] = at(i, 0), names[i]);
	label_hash(&w, key_hash_components(&k10[0], 1), "hash1");
	printf("CREATE TABLE msgs (user_id text, msg_id int, msg text, msg_props map<text, text>,\n"
	       "                   PRIMARY KEY ((user_id), msg_id));\n");
	print_times(&w);

	statement("T1: INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
		  "      VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'});");
	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("a@b.com"), pv_str("hello")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg1")),
					 colval_map("msg_props", mk, mv, 2)};
		TRY("T1", docwrite_insert(&w.w, k10, 2, cols, 2, DOCWRITE_NO_TTL), w.w.errmsg);
	}
	RUN(apply(&w, T[1], false));
	RUN(print_dump(&w));
	RUN(print_row(&w, k10, 2, T[1], "T1"));

	statement("T2: UPDATE msgs SET msg_props = msg_props + {'read_status' : 'true'}\n"
		  "      WHERE user_id = 'user1', msg_id = 10");
	{
		struct pv mk = pv_str("read_status"), mv = pv_str("true");
		TRY("T2", docwrite_map_put(&w.w, k10, 2, "msg_props", &mk, &mv, 1, DOCWRITE_NO_TTL),
		    w.w.errmsg);
	}
	RUN(apply(&w, T[2], false));
	RUN(print_dump(&w));
	RUN(print_row(&w, k10, 2, T[2], "T2"));

	statement("T3: INSERT INTO msgs (user_id, msg_id, msg, msg_props)\n"
		  "      VALUES ('user1', 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'});");
	{
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("c@d.com"), pv_str("bar")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg2")),
					 colval_map("msg_props", mk, mv, 2)};
		TRY("T3", docwrite_insert(&w.w, k20, 2, cols, 2, DOCWRITE_NO_TTL), w.w.errmsg);
	}
	RUN(apply(&w, T[3], false));
	RUN(print_dump(&w));
	RUN(print_row(&w, k10, 2, T[3], "T3"));
	RUN(print_row(&w, k20, 2, T[3], "T3"));

	statement("T4: DELETE msg_props FROM msgs WHERE user_id = 'user1' AND msg_id = 10;");
	TRY("T4", docwrite_delete_column(&w.w, k10, 2, "msg_props"), w.w.errmsg);
	RUN(apply(&w, T[4], false));
	RUN(print_dump(&w));
	RUN(print_row(&w, k10, 2, T[4], "T4"));
	RUN(print_row(&w, k20, 2, T[4], "T4"));
	printf("note: the T4 tombstone hides the three older msg_props pairs (struck through in\n"
	       "      the seed); compaction, not shown here, reclaims them.\n");

	statement("T5: DELETE FROM msgs WHERE user_id = 'user1' AND msg_id = 10;");
	TRY("T5", docwrite_delete_row(&w.w, k10, 2), w.w.errmsg);
	RUN(apply(&w, T[5], false));
	RUN(print_dump(&w));
	RUN(print_row(&w, k10, 2, T[5], "T5"));
	RUN(print_row(&w, k20, 2, T[5], "T5"));

	printf("\nearlier versions stay readable at their own times:\n");
	RUN(print_row(&w, k10, 2, T[2], "T2"));
	RUN(print_row(&w, k10, 2, T[4], "T4"));
out:
	walk_close(&w);
	schema_free(&s);
	return rc;
}

/* ---- page_views: row and column TTL ------------------------------------- */

static int ex_ttl(const char *root)
{
	struct walk w;
	struct schema s;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv key = pv_str("abc.com");
	const uint64_t T1 = at(100, 0), T2 = at(160, 0);
	int rc;

	header("page_views: data expiration (row TTL and column TTL)",
	       "seed: 'DocDB data model', Data expiration");
	memset(&w, 0, sizeof w);
	memset(&s, 0, sizeof s);
	TRY("schema", schema_init(&s, "page_views", err), err);
	TRY("schema", schema_add(&s, "page_id", COL_HASH, CT_TEXT, err), err);
	TRY("schema", schema_add(&s, "views", COL_REGULAR, CT_INT32, err), err);
	TRY("schema", schema_add(&s, "category", COL_REGULAR, CT_TEXT, err), err);
	RUN(walk_open(&w, root, "ttl", &s, false));
	label_ht(&w, T1, "T1");
	label_ht(&w, T2, "T2");
	label_hash(&w, key_hash_components(&key, 1), "hash1");
	printf("CREATE TABLE page_views (page_id text, views int, category text,\n"
	       "                         PRIMARY KEY ((page_id)));\n");
	print_times(&w);

	statement("T1: INSERT INTO page_views (page_id, views) VALUES ('abc.com', 10) USING TTL 86400");
	struct colval views = colval_of("views", pv_int32(10));
	TRY("T1", docwrite_insert(&w.w, &key, 1, &views, 1, 86400 * 1000LL), w.w.errmsg);
	RUN(apply(&w, T1, false));
	RUN(print_dump(&w));
	RUN(print_row(&w, &key, 1, T1, "T1"));

	statement("T2: UPDATE page_views USING TTL 3600 SET category = 'news'\n"
		  "      WHERE page_id = 'abc.com';");
	struct colval cat = colval_of("category", pv_str("news"));
	TRY("T2", docwrite_update(&w.w, &key, 1, &cat, 1, 3600 * 1000LL), w.w.errmsg);
	RUN(apply(&w, T2, false));
	RUN(print_dump(&w));

	printf("\ncategory expires 3600 s after T2, the row (liveness + views) 86400 s after T1:\n");
	RUN(print_row(&w, &key, 1, T2, "T2"));
	RUN(print_row(&w, &key, 1, at(160 + 3600, 0), "T2+3600s"));
	RUN(print_row(&w, &key, 1, at(160 + 3600, 1), "T2+3600s+1us"));
	RUN(print_row(&w, &key, 1, at(100 + 86400, 0), "T1+86400s"));
	RUN(print_row(&w, &key, 1, at(100 + 86400, 1), "T1+86400s+1us"));
out:
	walk_close(&w);
	schema_free(&s);
	return rc;
}

/* ---- a nested document -------------------------------------------------- */

static int ex_nested(const char *root)
{
	struct walk w;
	struct buf dk = BUF_INIT;
	struct pv id = pv_str("DocumentKey1");
	struct dockey k = {false, 0, 0, 1, NULL, &id};
	const uint64_t T10 = at(10, 0), T11 = at(11, 0);
	struct pv k1[2] = {pv_str("SubKey2"), pv_str("SubKey3")};
	struct subdoc c1[2] = {{0, pv_str("Value1"), NULL, NULL, 0},
			       {0, pv_str("Value2"), NULL, NULL, 0}};
	struct pv k0[2] = {pv_str("SubKey1"), pv_str("SubKey4")};
	struct subdoc c0[2] = {{1, {0}, k1, c1, 2}, {0, pv_str("Value3"), NULL, NULL, 0}};
	struct subdoc doc = {1, {0}, k0, c0, 2};
	int rc;

	header("a nested document: init markers and sub-document deletes",
	       "seeds: 'DocDB data model', Encoding documents; 'Persistence', Mapping DocDB documents");
	RUN(walk_open(&w, root, "nested", NULL, false));
	dockey_append(&dk, &k);
	label_ht(&w, T10, "T10");
	label_ht(&w, T11, "T11");
	print_times(&w);

	statement("T10: DocumentKey1 = { SubKey1 = { SubKey2 = Value1, SubKey3 = Value2 },\n"
		  "                      SubKey4 = Value3 }");
	TRY("T10", docwrite_insert_subdoc(&w.w, dk.data, dk.len, NULL, 0, &doc), w.w.errmsg);
	RUN(apply(&w, T10, false));
	RUN(print_dump(&w));
	RUN(print_doc(&w, &dk, NULL, 0, T10, "read @T10: DocumentKey1 = "));
	RUN(print_doc(&w, &dk, &k0[0], 1, T10, "read @T10: DocumentKey1.SubKey1 = "));

	statement("T11: delete the sub-document DocumentKey1.SubKey1 (one tombstone, no read)");
	TRY("T11", docwrite_delete_path(&w.w, dk.data, dk.len, &k0[0], 1), w.w.errmsg);
	RUN(apply(&w, T11, false));
	RUN(print_dump(&w));
	RUN(print_doc(&w, &dk, NULL, 0, T11, "read @T11: DocumentKey1 = "));
	RUN(print_doc(&w, &dk, &k0[0], 1, T11, "read @T11: DocumentKey1.SubKey1 = "));
	RUN(print_doc(&w, &dk, &k0[0], 1, T10, "read @T10: DocumentKey1.SubKey1 = "));
out:
	buf_free(&dk);
	walk_close(&w);
	return rc;
}

/* ---- YEDIS ---------------------------------------------------------------
 * Redis keys hash with the Redis Cluster slot function, CRC16 (XMODEM)
 * mod 16384. A Redis collection write reads first: a new key gets its
 * type's init marker before the fields. */

static uint16_t redis_slot(const char *key)
{
	uint16_t crc = 0;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		crc ^= (uint16_t)(*p << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc % 16384;
}

static void redis_key(struct buf *out, const char *key)
{
	struct pv c = pv_str(key);
	struct dockey dk = {true, redis_slot(key), 1, 0, &c, NULL};
	buf_reset(out);
	dockey_append(out, &dk);
}

/* SET (no fields), HSET/HMSET (fields + vals), SADD (fields only). */
static int redis_write(struct walk *w, struct buf *k, const char *key, enum val_kind type,
		       const char **fields, const char **vals, size_t n, uint64_t ht)
{
	const struct docnode *cur;
	int rc;

	redis_key(k, key);
	rc = reader_get_doc(w->s, k->data, k->len, NULL, 0, ht, 0, &w->arena, &cur, w->err);
	if (rc)
		return fail("read before write", rc, w->err);
	if (cur == NULL) {
		struct docvalue m = docvalue_kind(type);
		if ((rc = docwrite_put_path(&w->w, k->data, k->len, NULL, 0, &m)) != 0)
			return fail(key, rc, w->w.errmsg);
	}
	arena_reset(&w->arena);
	for (size_t i = 0; i < n; i++) {
		struct pv sub = pv_str(fields[i]);
		struct docvalue v = docvalue_of(vals ? pv_str(vals[i]) : pv_null());
		if ((rc = docwrite_put_path(&w->w, k->data, k->len, &sub, 1, &v)) != 0)
			return fail(key, rc, w->w.errmsg);
	}
	return 0;
}

static int redis_read(struct walk *w, struct buf *k, const char *cmd, const char *key,
		      uint64_t ht, const char *when)
{
	char prefix[96];
	redis_key(k, key);
	snprintf(prefix, sizeof prefix, "%s %s @%s -> ", cmd, key, when);
	return print_doc(w, k, NULL, 0, ht, prefix);
}

static int ex_yedis(const char *root)
{
	struct walk w;
	struct buf k = BUF_INIT;
	static const char *names[] = {NULL, "T1", "T2", "T3", "T4", "T5", "T6", "T7"};
	uint64_t T[8];
	int rc;

	header("YEDIS: Redis keys as DocDB documents",
	       "seed: 'Persistence', Mapping YEDIS keys to DocDB documents");
	RUN(walk_open(&w, root, "yedis", NULL, true));
	for (int i = 1; i <= 7; i++)
		label_ht(&w, T[i] = at(i, 0), names[i]);
	label_hash(&w, redis_slot("key1"), "h1");
	label_hash(&w, redis_slot("key2"), "h2");
	label_hash(&w, redis_slot("key3"), "h3");
	print_times(&w);
	printf("pairs added by each command:\n");

	statement("T1: SET key1 value1 EX 15");
	{
		struct docvalue v = docvalue_of(pv_str("value1"));
		v.has_ttl = true;
		v.ttl_ms = 15000;
		redis_key(&k, "key1");
		TRY("T1", docwrite_put_path(&w.w, k.data, k.len, NULL, 0, &v), w.w.errmsg);
		RUN(apply(&w, T[1], true));
	}
	statement("T2: HSET key2 subkey1 value1");
	{
		const char *f[] = {"subkey1"}, *v[] = {"value1"};
		RUN(redis_write(&w, &k, "key2", VAL_OBJECT, f, v, 1, T[2]));
		RUN(apply(&w, T[2], true));
	}
	statement("T3: HSET key2 subkey2 value2");
	{
		const char *f[] = {"subkey2"}, *v[] = {"value2"};
		RUN(redis_write(&w, &k, "key2", VAL_OBJECT, f, v, 1, T[3]));
		RUN(apply(&w, T[3], true));
	}
	statement("T4: DEL key2");
	redis_key(&k, "key2");
	TRY("T4", docwrite_delete_path(&w.w, k.data, k.len, NULL, 0), w.w.errmsg);
	RUN(apply(&w, T[4], true));
	statement("T5: HMSET key2 subkey1 new_val1 subkey3 value3");
	{
		const char *f[] = {"subkey1", "subkey3"}, *v[] = {"new_val1", "value3"};
		RUN(redis_write(&w, &k, "key2", VAL_OBJECT, f, v, 2, T[5]));
		RUN(apply(&w, T[5], true));
	}
	printf("note: the seed's table shows this marker as \"T2 -> [Redis-Hash-Type]\"; key2 was\n"
	       "      deleted at T4, so HMSET writes a new marker at T5 (as its sorted view shows).\n");
	statement("T6: SADD key3 value4 value5");
	{
		const char *f[] = {"value4", "value5"};
		RUN(redis_write(&w, &k, "key3", VAL_REDIS_SET, f, NULL, 2, T[6]));
		RUN(apply(&w, T[6], true));
	}
	statement("T7: SADD key3 value6");
	{
		const char *f[] = {"value6"};
		RUN(redis_write(&w, &k, "key3", VAL_REDIS_SET, f, NULL, 1, T[7]));
		RUN(apply(&w, T[7], true));
	}

	printf("\nsorted view of the store:\n");
	RUN(print_dump(&w));
	printf("note: keys group by their real hash (h1..h3 name key1..key3). The seed lists\n"
	       "      key3's members as value6, value4, value5; stored byte order is\n"
	       "      value4, value5, value6.\n\n");

	RUN(redis_read(&w, &k, "GET", "key1", T[1], "T1"));
	RUN(redis_read(&w, &k, "GET", "key1", at(1 + 15, 0), "T1+15s"));
	RUN(redis_read(&w, &k, "GET", "key1", at(1 + 15, 1), "T1+15s+1us"));
	RUN(redis_read(&w, &k, "HGETALL", "key2", T[3], "T3"));
	RUN(redis_read(&w, &k, "HGETALL", "key2", T[4], "T4"));
	RUN(redis_read(&w, &k, "HGETALL", "key2", T[7], "T7"));
	RUN(redis_read(&w, &k, "SMEMBERS", "key3", T[6], "T6"));
	RUN(redis_read(&w, &k, "SMEMBERS", "key3", T[7], "T7"));
out:
	buf_free(&k);
	walk_close(&w);
	return rc;
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--example msgs|ttl|nested|yedis] [--keep DIR]\n"
		"\n"
		"Replays the worked examples of the DocDB seed documents on a fresh store and\n"
		"prints, after each statement, the key-value pairs in the seeds' notation and\n"
		"the values read back at that hybrid time.\n"
		"\n"
		"  --example NAME  run only this example (default: all, in order)\n"
		"  --keep DIR      put the stores in DIR (one subdirectory per example) and\n"
		"                  keep them; default: a temporary directory, removed at exit\n"
		"  --help          show this help\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"example", required_argument, NULL, 'e'},
		{"keep", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct {
		const char *name;
		int (*run)(const char *root);
	} examples[] = {{"msgs", ex_msgs}, {"ttl", ex_ttl}, {"nested", ex_nested}, {"yedis", ex_yedis}};
	const size_t nex = sizeof examples / sizeof examples[0];
	const char *only = NULL, *keep = NULL;
	char tmp[4096];
	const char *root;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "e:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'e': only = optarg; break;
		case 'k': keep = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (only != NULL) {
		size_t i = 0;
		while (i < nex && strcmp(examples[i].name, only) != 0)
			i++;
		if (i == nex) {
			fprintf(stderr, PROG ": unknown example '%s' (msgs, ttl, nested or yedis)\n",
				only);
			return 2;
		}
	}

	if (keep != NULL) {
		if (mkdir(keep, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, PROG ": cannot create %s: %s\n", keep, strerror(errno));
			return 1;
		}
		root = keep;
	} else {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		if (fs_mkdtemp(NULL, "docraft-seedwalk", tmp, sizeof tmp, errmsg) != 0) {
			fprintf(stderr, PROG ": %s\n", errmsg);
			return 1;
		}
		root = tmp;
	}

	for (size_t i = 0; i < nex && rc == 0; i++) {
		if (only != NULL && strcmp(examples[i].name, only) != 0)
			continue;
		if (i > 0 && only == NULL)
			printf("\n");
		rc = examples[i].run(root);
		fflush(stdout);
	}

	if (keep == NULL)
		fs_remove_tree(root); /* what cannot go is logged and left */
	else if (rc == 0)
		printf("\nstores kept in %s\n", keep);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": writing output: %s\n", strerror(errno));
		return 1;
	}
	return rc == 0 ? 0 : 1;
}
