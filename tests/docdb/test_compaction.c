/* Compaction GC (docdb/compaction.h, store_compact) on real stores.
 *
 *   seed layouts   msgs after the T4 and T5 compactions of seed 000, full
 *                  and partial (a key-range compaction that leaves a file
 *                  out), with reads at every retained time unchanged
 *   TTL            page_views: expired cells dropped by a full compaction,
 *                  rewritten as tombstones by a partial one; the table
 *                  default TTL; TTL 0 (never)
 *   cutoff         raised before anything is dropped, persisted across
 *                  reopen and into checkpoints, never lowered; reads below
 *                  it fail with DOCRAFT_ETOOOLD
 *   internal       the applied marker and raw internal records survive
 *   filter         compaction_gc_decide without RocksDB: undecodable input,
 *                  tombstones with a TTL, TTL'd containers, packed rows
 *   random         random CQL operations on a few rows, flushes, reopens
 *                  and compactions (full and partial) at random cutoffs:
 *                  after each, reads and scans at times >= the cutoff equal
 *                  both the reads before it and an in-memory model, and
 *                  every pair newer than the cutoff is still there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "docdb/compaction.h"
#include "docdb/key.h"
#include "docdb/pathframe.h"
#include "docdb/value.h"
#include "fixture.h"

static void reopen_with(struct fx *f, const struct store_options *o)
{
	store_close(f->s);
	f->s = NULL;
	CHECK_OK_MSG(store_open(f->dir, o, &f->s, f->errmsg), f->errmsg);
}

static void compact(struct fx *f, uint64_t cutoff)
{
	CHECK_OK_MSG(store_compact(f->s, cutoff, f->errmsg), f->errmsg);
}

/* A compaction of the keys of one DocKey only. */
static void compact_dockey(struct fx *f, const struct schema *s, const struct pv *key, size_t n,
			   uint64_t cutoff)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	CHECK_OK_MSG(docwrite_dockey(s, key, n, &lo, f->errmsg), f->errmsg);
	buf_append(&hi, lo.data, lo.len);
	buf_push(&hi, KT_MAX_BYTE);
	CHECK_OK_MSG(store_compact_range(f->s, lo.data, lo.len, hi.data, hi.len, cutoff, f->errmsg),
		     f->errmsg);
	buf_free(&lo);
	buf_free(&hi);
}

/* Every non-internal pair whose hybrid time is above ht, serialized. */
static void pairs_above(struct store *s, uint64_t ht, struct buf *out, size_t *n)
{
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);
	char err[DOCRAFT_ERRMSG_SIZE];
	buf_reset(out);
	*n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl, pl;
		struct docht d;
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		if (k[0] <= KT_INTERNAL_MAX || key_split_ht(k, kl, &pl, &d) != 0 || d.ht <= ht)
			continue;
		buf_append_be32(out, (uint32_t)kl);
		buf_append(out, k, kl);
		buf_append_be32(out, (uint32_t)vl);
		buf_append(out, v, vl);
		(*n)++;
	}
	CHECK_OK_MSG(store_iter_status(it, err), err);
	store_iter_free(it);
}

static int read_rv(struct fx *f, const struct schema *s, const struct pv *key, size_t n,
		   uint64_t ht)
{
	struct row r;
	bool found;
	char err[DOCRAFT_ERRMSG_SIZE];
	return reader_get_row(f->s, s, key, n, ht, &f->arena, &r, &found, err);
}

/* ---- msgs (seed 000, "Examples") ----------------------------------------- */

static void msgs_schema(struct schema *s)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK(schema_init(s, "msgs", err));
	CHECK_OK(schema_add(s, "user_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(s, "msg_id", COL_RANGE, CT_INT32, err));
	CHECK_OK(schema_add(s, "msg", COL_REGULAR, CT_TEXT, err));
	CHECK_OK_MSG(schema_add_column(s, "msg_props", COL_REGULAR, CT_MAP, CT_TEXT, CT_TEXT, false,
				       err), err);
}

static const char *msgs_row(struct fx *f, const struct schema *s, int32_t id, uint64_t ht)
{
	static char out[512];
	struct pv key[2] = {pv_str("user1"), pv_int32(id)};
	struct row r;
	bool found;
	char msg[128];
	CHECK_OK_MSG(reader_get_row(f->s, s, key, 2, ht, &f->arena, &r, &found, f->errmsg),
		     f->errmsg);
	if (!found)
		return "not found";
	snprintf(msg, sizeof msg, "%s", fx_col(f, &r, "msg"));
	snprintf(out, sizeof out, "msg=%s props=%s", msg, fx_col(f, &r, "msg_props"));
	return out;
}

struct msgs {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	uint64_t T[6];
	struct pv k10[2], k20[2];
};

static void msgs_open(struct msgs *m, const char *tag)
{
	fx_open(&m->f, tag);
	msgs_schema(&m->s);
	batch_init(&m->b);
	docwrite_init(&m->w, &m->s, &m->b, NULL);
	m->k10[0] = pv_str("user1");
	m->k10[1] = pv_int32(10);
	m->k20[0] = pv_str("user1");
	m->k20[1] = pv_int32(20);
	for (int i = 1; i <= 5; i++) {
		char l[4];
		m->T[i] = fx_ht(i);
		snprintf(l, sizeof l, "T%d", i);
		fx_label_ht(&m->f, m->T[i], l);
	}
	fx_label_hash(&m->f, key_hash_components(&m->k10[0], 1), "hash1");
}

static void msgs_close(struct msgs *m)
{
	docwrite_free(&m->w);
	batch_free(&m->b);
	schema_free(&m->s);
	fx_close(&m->f);
}

/* Step i of the seed at T[i]. raft_index 0 writes no applied marker, so the
 * flushed file holds the row's keys only (see msgs_partial). */
static void msgs_step(struct msgs *m, int i, bool no_marker)
{
	struct docwrite *w = &m->w;
	if (i == 1) {
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("a@b.com"), pv_str("hello")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg1")),
					 colval_map("msg_props", mk, mv, 2)};
		CHECK_OK_MSG(docwrite_insert(w, m->k10, 2, cols, 2, DOCWRITE_NO_TTL), w->errmsg);
	} else if (i == 2) {
		struct pv mk = pv_str("read_status"), mv = pv_str("true");
		CHECK_OK_MSG(docwrite_map_put(w, m->k10, 2, "msg_props", &mk, &mv, 1,
					      DOCWRITE_NO_TTL),
			     w->errmsg);
	} else if (i == 3) {
		struct pv mk[2] = {pv_str("from"), pv_str("subject")};
		struct pv mv[2] = {pv_str("c@d.com"), pv_str("bar")};
		struct colval cols[2] = {colval_of("msg", pv_str("msg2")),
					 colval_map("msg_props", mk, mv, 2)};
		CHECK_OK_MSG(docwrite_insert(w, m->k20, 2, cols, 2, DOCWRITE_NO_TTL), w->errmsg);
	} else if (i == 4) {
		CHECK_OK_MSG(docwrite_delete_column(w, m->k10, 2, "msg_props"), w->errmsg);
	} else {
		CHECK_OK_MSG(docwrite_delete_row(w, m->k10, 2), w->errmsg);
	}
	if (no_marker) {
		CHECK_OK_MSG(store_apply(m->f.s, m->b.data.data, m->b.data.len, m->T[i], 0,
					 m->f.errmsg),
			     m->f.errmsg);
		batch_reset(&m->b);
	} else {
		fx_apply(&m->f, &m->b, m->T[i]);
	}
}

#define ROW10_T1                                                                   \
	"(hash1, 'user1', 10), liveness_column_id, T1 -> [NULL]\n"                 \
	"(hash1, 'user1', 10), msg_column_id, T1 -> 'msg1'\n"
#define ROW20                                                                      \
	"(hash1, 'user1', 20), liveness_column_id, T3 -> [NULL]\n"                 \
	"(hash1, 'user1', 20), msg_column_id, T3 -> 'msg2'\n"                      \
	"(hash1, 'user1', 20), msg_props_column_id, 'from', T3 -> 'c@d.com'\n"     \
	"(hash1, 'user1', 20), msg_props_column_id, 'subject', T3 -> 'bar'\n"
#define ROW10_T5 "(hash1, 'user1', 10), T5 -> [DELETE]\n"

/* Seed 000: "When compactions occur, the space for the key-value pairs
 * corresponding to the deleted columns is reclaimed", then T5 on top.
 *
 * What the seed's T5 listing is: the layout after the T4 compaction plus the
 * row tombstone T5 — not a compacted layout. Its two T1 lines under the
 * tombstone are the ones the original page strikes through (the plain-text
 * seed lost the strike-through): logically deleted, physically present. A
 * compaction whose cutoff is below T5 must leave exactly that listing (T5 is
 * newer than the cutoff, and reads between T4 and T5 still see msg1). A full
 * compaction at a cutoff >= T5 removes the T1 pairs (hidden by T5) and the
 * tombstone itself (§7.2: nothing older can exist outside a full
 * compaction), leaving row 20 alone; only a partial compaction keeps the T5
 * line, alone (msgs_partial). */
TEST(msgs_after_t4_and_t5)
{
	struct msgs m;
	struct fx *f = &m.f;
	const char *r10_t4, *r20_t4;
	char a[512], b[512];

	msgs_open(&m, "gc-msgs");
	msgs_step(&m, 1, false);
	msgs_step(&m, 2, false);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	msgs_step(&m, 3, false);
	msgs_step(&m, 4, false);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);

	/* Reads at the retained times, before. */
	snprintf(a, sizeof a, "%s", msgs_row(f, &m.s, 10, m.T[4]));
	snprintf(b, sizeof b, "%s", msgs_row(f, &m.s, 20, m.T[4]));
	r10_t4 = "msg='msg1' props=NULL";
	r20_t4 = "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}";
	CHECK_EQ_STR(a, r10_t4);
	CHECK_EQ_STR(b, r20_t4);

	/* Compaction at cutoff T4: the seed's "after compaction" layout. */
	compact(f, m.T[4]);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[4]);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW10_T1 ROW20);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, m.T[4]), r10_t4);
	CHECK_EQ_STR(msgs_row(f, &m.s, 20, m.T[4]), r20_t4);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, fx_ht(1000)), r10_t4);
	CHECK_EQ_INT(read_rv(f, &m.s, m.k10, 2, m.T[4] - 1), DOCRAFT_ETOOOLD);
	CHECK_EQ_INT(read_rv(f, &m.s, m.k10, 2, m.T[2]), DOCRAFT_ETOOOLD);

	/* T5 on top: the seed's T5 listing. */
	msgs_step(&m, 5, false);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW10_T5 ROW10_T1 ROW20);
	/* A compaction below T5 keeps it exactly (T5 is above the cutoff). */
	compact(f, fx_ht_us(4, 500000));
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW10_T5 ROW10_T1 ROW20);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, fx_ht_us(4, 500000)), r10_t4);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, m.T[5]), "not found");

	/* Full compaction at T5: the tombstone and what it deleted are gone. */
	compact(f, m.T[5]);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW20);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, m.T[5]), "not found");
	CHECK_EQ_STR(msgs_row(f, &m.s, 20, m.T[5]), r20_t4);
	CHECK_EQ_INT(read_rv(f, &m.s, m.k20, 2, m.T[5] - 1), DOCRAFT_ETOOOLD);

	/* The cutoff survives a restart. */
	fx_reopen(f);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[5]);
	CHECK_EQ_INT(read_rv(f, &m.s, m.k20, 2, m.T[4]), DOCRAFT_ETOOOLD);
	CHECK_EQ_STR(msgs_row(f, &m.s, 20, m.T[5]), r20_t4);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW20);
	msgs_close(&m);
}

/* A partial compaction (row 10's keys only; row 20's file stays out, so the
 * jobs are not full) keeps the row tombstone and drops what it hides. */
TEST(msgs_partial)
{
	struct msgs m;
	struct fx *f = &m.f;
	msgs_open(&m, "gc-msgs-part");
	msgs_step(&m, 1, false);
	msgs_step(&m, 2, false);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	msgs_step(&m, 3, true);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	msgs_step(&m, 4, false);
	msgs_step(&m, 5, false);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);

	compact_dockey(f, &m.s, m.k10, 2, m.T[5]);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW10_T5 ROW20);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, m.T[5]), "not found");
	CHECK_EQ_STR(msgs_row(f, &m.s, 20, m.T[5]),
		     "msg='msg2' props={'from': 'c@d.com', 'subject': 'bar'}");
	/* Then a full one. */
	compact(f, 0);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW20);
	msgs_close(&m);
}

/* ---- TTL (seed 000, "Data expiration") ----------------------------------- */

struct pviews {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	struct pv key, other;
	char other_id[16];
};

static void pviews_open(struct pviews *p, const char *tag)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	fx_open(&p->f, tag);
	CHECK_OK(schema_init(&p->s, "page_views", err));
	CHECK_OK(schema_add(&p->s, "page_id", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(&p->s, "views", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add(&p->s, "category", COL_REGULAR, CT_TEXT, err));
	batch_init(&p->b);
	docwrite_init(&p->w, &p->s, &p->b, NULL);
	p->key = pv_str("abc.com");
	fx_label_hash(&p->f, key_hash_components(&p->key, 1), "hash1");
	/* Another page that sorts after abc.com (hash order). */
	for (int i = 0;; i++) {
		struct pv o;
		snprintf(p->other_id, sizeof p->other_id, "p%d", i);
		o = pv_str(p->other_id);
		if (key_hash_components(&o, 1) > key_hash_components(&p->key, 1)) {
			p->other = o;
			fx_label_hash(&p->f, key_hash_components(&o, 1), "hash2");
			break;
		}
	}
}

static void pviews_close(struct pviews *p)
{
	docwrite_free(&p->w);
	batch_free(&p->b);
	schema_free(&p->s);
	fx_close(&p->f);
}

static const char *pv_row(struct fx *f, const struct schema *s, const struct pv *key,
			  uint64_t ht)
{
	static char out[256];
	struct row r;
	bool found;
	char views[64];
	CHECK_OK_MSG(reader_get_row(f->s, s, key, 1, ht, &f->arena, &r, &found, f->errmsg),
		     f->errmsg);
	if (!found)
		return "not found";
	snprintf(views, sizeof views, "%s", fx_col(f, &r, "views"));
	snprintf(out, sizeof out, "views=%s category=%s", views, fx_col(f, &r, "category"));
	return out;
}

/* T1: INSERT ... VALUES ('abc.com', 10) USING TTL 86400; T2: UPDATE ...
 * USING TTL 3600 SET category = 'news'. Flushed after each, so abc.com is
 * in two overlapping files (a range compaction cannot just move them). */
static void pviews_seed(struct pviews *p, uint64_t T1, uint64_t T2)
{
	struct colval views = colval_of("views", pv_int32(10));
	struct colval cat = colval_of("category", pv_str("news"));
	fx_label_ht(&p->f, T1, "T1");
	fx_label_ht(&p->f, T2, "T2");
	CHECK_OK_MSG(docwrite_insert(&p->w, &p->key, 1, &views, 1, 86400 * 1000LL), p->w.errmsg);
	fx_apply(&p->f, &p->b, T1);
	CHECK_OK_MSG(store_flush(p->f.s, p->f.errmsg), p->f.errmsg);
	CHECK_OK_MSG(docwrite_update(&p->w, &p->key, 1, &cat, 1, 3600 * 1000LL), p->w.errmsg);
	fx_apply(&p->f, &p->b, T2);
	CHECK_OK_MSG(store_flush(p->f.s, p->f.errmsg), p->f.errmsg);
}

#define PV_T1                                                                      \
	"(hash1, 'abc.com'), liveness_column_id, T1 -> (TTL = 86400) [NULL]\n"     \
	"(hash1, 'abc.com'), views_column_id, T1 -> (TTL = 86400) 10\n"
#define PV_T2 "(hash1, 'abc.com'), category_column_id, T2 -> (TTL = 3600) 'news'\n"

TEST(page_views_full)
{
	struct pviews p;
	struct fx *f = &p.f;
	const uint64_t T1 = fx_ht(100), T2 = fx_ht(160);
	const uint64_t cat_gone = fx_ht_us(160 + 3600, 1), row_gone = fx_ht_us(100 + 86400, 1);

	pviews_open(&p, "gc-ttl");
	pviews_seed(&p, T1, T2);
	CHECK_EQ_STR(fx_dump(f, &p.s, false), PV_T1 PV_T2);

	/* At category's expiry + 1 µs: category's pair is gone. */
	compact(f, cat_gone);
	CHECK_EQ_STR(fx_dump(f, &p.s, false), PV_T1);
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, cat_gone), "views=10 category=NULL");
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, fx_ht(100 + 86400)), "views=10 category=NULL");
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, row_gone), "not found");
	/* A cutoff exactly at the expiry keeps what is still readable there. */
	compact(f, fx_ht(100 + 86400));
	CHECK_EQ_STR(fx_dump(f, &p.s, false), PV_T1);
	/* After both expiries: nothing left. */
	compact(f, row_gone);
	CHECK_EQ_STR(fx_dump(f, &p.s, false), "");
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, row_gone), "not found");
	CHECK_EQ_INT(read_rv(f, &p.s, &p.key, 1, fx_ht(100 + 86400)), DOCRAFT_ETOOOLD);
	pviews_close(&p);
}

/* A partial compaction rewrites expired pairs as tombstones: dropping them
 * could uncover older versions in files it did not read. */
TEST(page_views_partial)
{
	struct pviews p;
	struct fx *f = &p.f;
	const uint64_t T1 = fx_ht(100), T2 = fx_ht(160);
	const uint64_t cat_gone = fx_ht_us(160 + 3600, 1), row_gone = fx_ht_us(100 + 86400, 1);
	struct colval views = colval_of("views", pv_int32(7));
	char other[256];

	pviews_open(&p, "gc-ttl-part");
	pviews_seed(&p, T1, T2);
	/* The other page, without TTL, alone in a file without the marker. */
	CHECK_OK_MSG(docwrite_insert(&p.w, &p.other, 1, &views, 1, DOCWRITE_NO_TTL), p.w.errmsg);
	CHECK_OK_MSG(store_apply(f->s, p.b.data.data, p.b.data.len, T2, 0, f->errmsg), f->errmsg);
	batch_reset(&p.b);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	snprintf(other, sizeof other,
		 "(hash2, '%s'), liveness_column_id, T2 -> [NULL]\n"
		 "(hash2, '%s'), views_column_id, T2 -> 7\n",
		 p.other_id, p.other_id);

	compact_dockey(f, &p.s, &p.key, 1, cat_gone);
	{
		char want[1024];
		snprintf(want, sizeof want, "%s%s", PV_T1
			 "(hash1, 'abc.com'), category_column_id, T2 -> [DELETE]\n", other);
		CHECK_EQ_STR(fx_dump(f, &p.s, false), want);
	}
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, cat_gone), "views=10 category=NULL");
	compact_dockey(f, &p.s, &p.key, 1, row_gone);
	{
		char want[1024];
		snprintf(want, sizeof want, "%s%s",
			 "(hash1, 'abc.com'), liveness_column_id, T1 -> [DELETE]\n"
			 "(hash1, 'abc.com'), views_column_id, T1 -> [DELETE]\n"
			 "(hash1, 'abc.com'), category_column_id, T2 -> [DELETE]\n",
			 other);
		CHECK_EQ_STR(fx_dump(f, &p.s, false), want);
	}
	CHECK_EQ_STR(pv_row(f, &p.s, &p.key, row_gone), "not found");
	CHECK_EQ_STR(pv_row(f, &p.s, &p.other, row_gone), "views=7 category=NULL");
	/* A full compaction then removes the tombstones. */
	compact(f, 0);
	CHECK_EQ_STR(fx_dump(f, &p.s, false), other);
	pviews_close(&p);
}

/* The table default TTL (store option = schema property), and TTL 0. */
TEST(default_ttl)
{
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	struct store_options o;
	char err[DOCRAFT_ERRMSG_SIZE];
	struct pv ka = pv_str("a"), kb = pv_str("b"), kc = pv_str("c");
	struct colval v = colval_of("v", pv_int32(1));
	const uint64_t T1 = fx_ht(10);

	fx_open(&f, "gc-defttl");
	store_options_default(&o);
	o.default_ttl_ms = 60 * 1000;
	reopen_with(&f, &o);
	CHECK_EQ_INT(store_default_ttl_ms(f.s), 60 * 1000);
	CHECK_OK(schema_init(&s, "t", err));
	CHECK_OK(schema_add(&s, "k", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(&s, "v", COL_REGULAR, CT_INT32, err));
	s.default_ttl_ms = 60 * 1000;
	batch_init(&b);
	docwrite_init(&w, &s, &b, NULL);
	CHECK_OK(docwrite_insert(&w, &ka, 1, &v, 1, DOCWRITE_NO_TTL));
	CHECK_OK(docwrite_insert(&w, &kb, 1, &v, 1, 0));
	CHECK_OK(docwrite_insert(&w, &kc, 1, &v, 1, 120 * 1000));
	fx_apply(&f, &b, T1);
	CHECK_OK_MSG(store_flush(f.s, f.errmsg), f.errmsg);

	compact(&f, fx_ht(10 + 60)); /* a is still readable at +60 s exactly */
	CHECK_EQ_INT(strlen(fx_dump(&f, &s, false)) > 0, 1);
	{
		size_t n;
		struct buf all = BUF_INIT;
		pairs_above(f.s, 0, &all, &n);
		CHECK_EQ_INT(n, 6);
		buf_free(&all);
	}
	compact(&f, fx_ht_us(10 + 60, 1));
	{
		size_t n;
		struct buf all = BUF_INIT;
		pairs_above(f.s, 0, &all, &n);
		CHECK_EQ_INT(n, 4); /* b (never) and c (120 s) */
		compact(&f, fx_ht_us(10 + 120, 1));
		pairs_above(f.s, 0, &all, &n);
		CHECK_EQ_INT(n, 2); /* b only */
		buf_free(&all);
	}
	{
		struct row r;
		bool found;
		CHECK_OK(reader_get_row(f.s, &s, &kb, 1, fx_ht(100000), &f.arena, &r, &found, err));
		CHECK(found);
		CHECK_OK(reader_get_row(f.s, &s, &kc, 1, fx_ht(10 + 121), &f.arena, &r, &found,
					err));
		CHECK(!found);
	}
	docwrite_free(&w);
	batch_free(&b);
	schema_free(&s);
	fx_close(&f);
}

/* ---- the cutoff and internal records ------------------------------------- */

TEST(cutoff_persisted_never_lowered)
{
	struct msgs m;
	struct fx *f = &m.f;
	char cp[300], path[400];
	struct store *c = NULL;
	uint64_t v = 0;

	msgs_open(&m, "gc-cutoff");
	for (int i = 1; i <= 5; i++)
		msgs_step(&m, i, false);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	CHECK_EQ_U64(store_history_cutoff(f->s), 0);
	CHECK_OK(compaction_cutoff_load(f->dir, &v, f->errmsg));
	CHECK_EQ_U64(v, 0);

	compact(f, m.T[3]);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[3]);
	CHECK_OK(compaction_cutoff_load(f->dir, &v, f->errmsg));
	CHECK_EQ_U64(v, m.T[3]);
	/* Never lowered: not by a lower compaction cutoff, nor by the setter. */
	compact(f, m.T[1]);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[3]);
	store_set_history_cutoff(f->s, 0);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[3]);
	/* The setter may raise it; the next compaction uses and persists it. */
	store_set_history_cutoff(f->s, m.T[4]);
	compact(f, m.T[1]);
	CHECK_OK(compaction_cutoff_load(f->dir, &v, f->errmsg));
	CHECK_EQ_U64(v, m.T[4]);
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW10_T5 ROW10_T1 ROW20);
	CHECK_EQ_INT(store_compact(f->s, HT_INVALID, f->errmsg), DOCRAFT_EINVAL);

	/* Reopen and checkpoint keep it. */
	fx_reopen(f);
	CHECK_EQ_U64(store_history_cutoff(f->s), m.T[4]);
	CHECK_EQ_INT(read_rv(f, &m.s, m.k10, 2, m.T[4] - 1), DOCRAFT_ETOOOLD);
	CHECK_EQ_STR(msgs_row(f, &m.s, 10, m.T[4]), "msg='msg1' props=NULL");
	snprintf(cp, sizeof cp, "%s/cp", f->dir);
	CHECK_OK_MSG(store_checkpoint(f->s, cp, f->errmsg), f->errmsg);
	CHECK_OK_MSG(store_open(cp, NULL, &c, f->errmsg), f->errmsg);
	CHECK_EQ_U64(store_history_cutoff(c), m.T[4]);
	store_close(c);

	/* A cutoff file that does not parse stops the open. */
	snprintf(path, sizeof path, "%s/%s", cp, COMPACTION_CUTOFF_FILE);
	{
		FILE *fp = fopen(path, "w");
		CHECK(fp != NULL);
		fputs("history_cutoff_ht=12x\n", fp);
		fclose(fp);
	}
	CHECK_EQ_INT(store_open(cp, NULL, &c, f->errmsg), DOCRAFT_ECORRUPT);
	CHECK(c == NULL);
	/* So does one without its newline, or longer than the file can be
	 * (a well-formed start, padded past 64 bytes): malformed, not unreadable. */
	{
		FILE *fp = fopen(path, "w");
		CHECK(fp != NULL);
		fputs("history_cutoff_ht=12", fp);
		fclose(fp);
	}
	CHECK_EQ_INT(compaction_cutoff_load(cp, &v, f->errmsg), DOCRAFT_ECORRUPT);
	CHECK_EQ_U64(v, 0);
	{
		FILE *fp = fopen(path, "w");
		CHECK(fp != NULL);
		fprintf(fp, "history_cutoff_ht=12\n%80s\n", "");
		fclose(fp);
	}
	CHECK_EQ_INT(compaction_cutoff_load(cp, &v, f->errmsg), DOCRAFT_ECORRUPT);
	CHECK_OK(compaction_cutoff_save(cp, 77, f->errmsg));
	CHECK_OK(compaction_cutoff_load(cp, &v, f->errmsg));
	CHECK_EQ_U64(v, 77);
	/* Saved through a temporary file that does not stay behind. */
	{
		char tmp[420];
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		CHECK(access(tmp, F_OK) != 0);
	}
	msgs_close(&m);
}

TEST(internal_records_survive)
{
	struct msgs m;
	struct fx *f = &m.f;
	uint64_t idx0, ht0, idx1, ht1;
	const char rkey[] = "\x05gc-test";
	struct store_raw raw = {rkey, sizeof rkey - 1, "kept", 4, false};
	struct store_iter *it;
	size_t kl, vl;

	msgs_open(&m, "gc-internal");
	for (int i = 1; i <= 5; i++)
		msgs_step(&m, i, false);
	CHECK_OK_MSG(store_apply_parts(f->s, NULL, 0, &raw, 1, fx_ht(6), f->next_index++,
				       f->errmsg),
		     f->errmsg);
	CHECK_OK_MSG(store_flush(f->s, f->errmsg), f->errmsg);
	store_applied(f->s, &idx0, &ht0);
	compact(f, fx_ht(1000)); /* above everything */
	CHECK_EQ_STR(fx_dump(f, &m.s, false), ROW20);
	store_applied(f->s, &idx1, &ht1);
	CHECK_EQ_U64(idx1, idx0);
	CHECK_EQ_U64(ht1, ht0);
	fx_reopen(f);
	store_applied(f->s, &idx1, &ht1);
	CHECK_EQ_U64(idx1, idx0);
	CHECK_EQ_U64(ht1, ht0);
	it = store_iter_new(f->s, NULL, 0, NULL, 0);
	store_iter_seek(it, rkey, sizeof rkey - 1);
	CHECK(store_iter_valid(it));
	{
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		CHECK_EQ_MEM(k, kl, rkey, sizeof rkey - 1);
		CHECK_EQ_MEM(v, vl, "kept", 4);
	}
	store_iter_free(it);
	msgs_close(&m);
}

/* ---- the filter itself ---------------------------------------------------- */

struct fk {
	struct buf dockey;
	struct buf key;
	struct buf val;
};

/* Key: dockey [subkeys] '#' DocHT(ht, wid). */
static const struct buf *fkey(struct fk *k, const struct pv *sub, size_t n, uint64_t ht,
			      uint32_t wid)
{
	buf_reset(&k->key);
	buf_append(&k->key, k->dockey.data, k->dockey.len);
	for (size_t i = 0; i < n; i++)
		key_append_pv(&k->key, &sub[i]);
	buf_push(&k->key, KT_HYBRID_TIME);
	docht_append(&k->key, (struct docht){ht, wid});
	return &k->key;
}

static enum compaction_verdict decide(struct compaction_gc *g, struct fk *k, const struct pv *sub,
				      size_t n, uint64_t ht, const struct docvalue *v)
{
	const uint8_t *nv = NULL;
	size_t nl = 0;
	enum compaction_verdict r;
	fkey(k, sub, n, ht, 0);
	buf_reset(&k->val);
	value_append(&k->val, v);
	r = compaction_gc_decide(g, k->key.data, k->key.len, k->val.data, k->val.len, &nv, &nl);
	if (r == COMPACTION_REWRITE)
		CHECK_EQ_MEM(nv, nl, "X", 1);
	return r;
}

static struct docvalue with_ttl(struct docvalue v, int64_t ttl)
{
	v.has_ttl = true;
	v.ttl_ms = ttl;
	return v;
}

TEST(filter_decisions)
{
	struct fk k = {BUF_INIT, BUF_INIT, BUF_INIT};
	struct pv dk = pv_str("doc");
	struct dockey d = {false, 0, 0, 1, NULL, &dk};
	struct pv c1[1] = {pv_column(1)}, c2[1] = {pv_column(2)};
	struct pv c1x[2] = {pv_column(1), pv_str("x")};
	const struct docvalue X = docvalue_kind(VAL_TOMBSTONE), one = docvalue_of(pv_int32(1));
	const struct docvalue obj = docvalue_kind(VAL_OBJECT);
	const uint64_t C = fx_ht(100);
	struct compaction_gc *g;
	struct compaction_stats st;

	dockey_append(&k.dockey, &d);

	/* Full compaction. */
	g = compaction_gc_new(C, true, 0);
	CHECK_EQ_INT(compaction_gc_decide(g, (const uint8_t *)"\x01x", 2, NULL, 0, NULL, NULL),
		     COMPACTION_KEEP);
	CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(101), &X), COMPACTION_KEEP); /* above C */
	CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(50), &X), COMPACTION_DROP);
	CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(40), &one), COMPACTION_DROP); /* older */
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(120), &one), COMPACTION_KEEP);
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(60), &one), COMPACTION_KEEP);
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(45), &one), COMPACTION_DROP);
	CHECK_EQ_INT(decide(g, &k, c1x, 2, fx_ht(65), &one), COMPACTION_KEEP);
	{
		struct pv c1y[2] = {pv_column(1), pv_str("y")};
		CHECK_EQ_INT(decide(g, &k, c1y, 2, fx_ht(55), &one), COMPACTION_DROP); /* < 60 */
	}
	/* A tombstone with a TTL passes it on: kept. */
	{
		struct docvalue xt = with_ttl(X, 1000);
		struct pv c3[1] = {pv_column(3)};
		CHECK_EQ_INT(decide(g, &k, c3, 1, fx_ht(70), &xt), COMPACTION_KEEP);
	}
	/* An expired container with its own TTL stays; its expired child goes. */
	{
		struct pv c4[1] = {pv_column(4)}, c4y[2] = {pv_column(4), pv_str("y")};
		struct docvalue ot = with_ttl(obj, 1000);
		CHECK_EQ_INT(decide(g, &k, c4, 1, fx_ht(70), &ot), COMPACTION_KEEP);
		CHECK_EQ_INT(decide(g, &k, c4y, 2, fx_ht(71), &one), COMPACTION_DROP);
		/* Its own TTL 0 (never) outlives the container. */
		struct docvalue never = with_ttl(one, 0);
		struct pv c4z[2] = {pv_column(4), pv_str("z")};
		CHECK_EQ_INT(decide(g, &k, c4z, 2, fx_ht(72), &never), COMPACTION_KEEP);
	}
	/* An expired primitive goes. */
	{
		struct pv c5[1] = {pv_column(5)};
		struct docvalue t = with_ttl(one, 29999);
		CHECK_EQ_INT(decide(g, &k, c5, 1, fx_ht(70), &t), COMPACTION_DROP);
		t.ttl_ms = 30000; /* alive at C exactly */
		struct pv c6[1] = {pv_column(6)};
		CHECK_EQ_INT(decide(g, &k, c6, 1, fx_ht(70), &t), COMPACTION_KEEP);
	}
	compaction_gc_get_stats(g, &st);
	CHECK_EQ_U64(st.undecodable, 0);
	CHECK_EQ_U64(st.rewritten, 0);
	compaction_gc_free(g);

	/* Partial: tombstones stay, expired values become tombstones. */
	g = compaction_gc_new(C, false, 10 * 1000);
	CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(50), &X), COMPACTION_KEEP);
	CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(40), &X), COMPACTION_DROP);
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(60), &one), COMPACTION_REWRITE); /* default TTL */
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(58), &one), COMPACTION_DROP);
	CHECK_EQ_INT(decide(g, &k, c2, 1, fx_ht(95), &one), COMPACTION_KEEP);
	compaction_gc_get_stats(g, &st);
	CHECK_EQ_U64(st.rewritten, 1);
	compaction_gc_free(g);

	/* Undecodable input is kept and leaves the stack alone: what the
	 * tombstone hid still goes. (The warning it logs is silenced.) */
	int level = log_threshold;
	log_set_level(LOG_LVL_ERROR);
	g = compaction_gc_new(C, true, 0);
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(50), &X), COMPACTION_DROP);
	{
		const uint8_t *nv;
		size_t nl;
		struct buf bad = BUF_INIT;
		buf_append(&bad, k.dockey.data, k.dockey.len);
		key_append_pv(&bad, &c1[0]);
		buf_push(&bad, KT_HYBRID_TIME);
		buf_push(&bad, 0x1F); /* a DocHT claiming 31 bytes */
		const uint8_t *x = (const uint8_t *)"X";
		CHECK_EQ_INT(compaction_gc_decide(g, bad.data, bad.len, x, 1, &nv, &nl),
			     COMPACTION_KEEP);
		CHECK_EQ_INT(compaction_gc_decide(g, (const uint8_t *)"G", 1, x, 1, &nv, &nl),
			     COMPACTION_KEEP);
		buf_free(&bad);
	}
	CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(40), &one), COMPACTION_DROP);
	/* A value that does not decode keeps its older versions too. */
	fkey(&k, c2, 1, fx_ht(50), 0);
	CHECK_EQ_INT(compaction_gc_decide(g, k.key.data, k.key.len, (const uint8_t *)"Q", 1, NULL,
					  NULL),
		     COMPACTION_KEEP);
	CHECK_EQ_INT(decide(g, &k, c2, 1, fx_ht(40), &X), COMPACTION_KEEP);
	compaction_gc_get_stats(g, &st);
	CHECK_EQ_U64(st.undecodable, 3);
	compaction_gc_free(g);
	log_set_level(level);

	/* Packed rows (builder.c): not the root's deciding version; they hide
	 * nothing, and while one is kept, column tombstones and expired cells
	 * newer than it stay (as tombstones). */
	g = compaction_gc_new(C, true, 0);
	{
		static const uint8_t payload[] = {0x01, 0x00, 0x00, 0x00, 0x00};
		struct docvalue pk = docvalue_kind(VAL_PACKED_ROW);
		pk.packed = payload;
		pk.packed_len = sizeof payload;
		CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(60), &pk), COMPACTION_KEEP);
		CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(50), &X), COMPACTION_DROP);
		CHECK_EQ_INT(decide(g, &k, NULL, 0, fx_ht(30), &pk), COMPACTION_DROP);
		CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(70), &X), COMPACTION_KEEP);
		CHECK_EQ_INT(decide(g, &k, c1, 1, fx_ht(55), &one), COMPACTION_DROP);
		struct docvalue t = with_ttl(one, 1000);
		CHECK_EQ_INT(decide(g, &k, c2, 1, fx_ht(80), &t), COMPACTION_REWRITE);
		CHECK_EQ_INT(decide(g, &k, c2, 1, fx_ht(45), &t), COMPACTION_DROP); /* older */
	}
	compaction_gc_free(g);

	buf_free(&k.dockey);
	buf_free(&k.key);
	buf_free(&k.val);
}

TEST(auto_cutoff)
{
	const uint64_t s = 1000000;
	CHECK_EQ_U64(compaction_auto_cutoff(2000 * s, ht_make(3000 * s, 5), 900 * s),
		     ht_make(1100 * s, 0));
	CHECK_EQ_U64(compaction_auto_cutoff(5000 * s, ht_make(3000 * s, 5), 900 * s),
		     ht_make(2100 * s, 0));
	CHECK_EQ_U64(compaction_auto_cutoff(5000 * s, 0, 900 * s), 0);
	CHECK_EQ_U64(compaction_auto_cutoff(5000 * s, ht_make(900 * s, 0), 900 * s), 0);
}

/* ---- randomized: random operations, compactions, a model ----------------- */

#define NROWS 6
#define NMK 4
enum { MC_ROOT = 0, MC_LIVE, MC_A, MC_T, MC_M };

/* One stored pair as the model sees it: (row, column, map key) at (ht, seq),
 * seq following the write ids within a batch. */
struct ment {
	uint8_t row, col;
	int8_t mk;
	bool tomb;
	int32_t ival;
	int64_t ttl;
	uint64_t ht;
	uint32_t seq;
};

static struct {
	struct fx f;
	struct schema s;
	struct batch b;
	struct docwrite w;
	struct store_options o;
	struct ment *e;
	size_t n, cap;
	uint32_t seq;
	int64_t default_ttl;
} R;

static struct pv row_key[NROWS][2];
static char hkeys[2][2] = {"x", "y"};
static const char *mkeys[NMK] = {"k0", "k1", "k2", "k3"};

static void model_add(int row, int col, int mk, bool tomb, int32_t ival, int64_t ttl, uint64_t ht)
{
	if (R.n == R.cap) {
		R.cap = R.cap ? 2 * R.cap : 256;
		R.e = realloc(R.e, R.cap * sizeof *R.e);
		CHECK(R.e != NULL);
	}
	R.e[R.n++] = (struct ment){(uint8_t)row, (uint8_t)col, (int8_t)mk, tomb,
				   ival,         tomb ? DOCWRITE_NO_TTL : ttl, ht, R.seq++};
}

static bool ment_newer(const struct ment *a, uint64_t ht, uint32_t seq)
{
	return a->ht != ht ? a->ht > ht : a->seq > seq;
}

static const struct ment *model_newest(int row, int col, int mk, uint64_t at)
{
	const struct ment *best = NULL;
	for (size_t i = 0; i < R.n; i++) {
		const struct ment *e = &R.e[i];
		if (e->row != row || e->col != col || e->mk != mk || e->ht > at)
			continue;
		if (best == NULL || ment_newer(e, best->ht, best->seq))
			best = e;
	}
	return best;
}

static bool model_live(const struct ment *e, const struct ment *floor, uint64_t at)
{
	int64_t ttl;
	if (e == NULL || e->tomb || (floor != NULL && !ment_newer(e, floor->ht, floor->seq)))
		return false;
	ttl = e->ttl == DOCWRITE_NO_TTL ? R.default_ttl : e->ttl;
	if (ttl <= 0)
		return true;
	return ht_physical(at) - ht_physical(e->ht) <= (uint64_t)ttl * 1000;
}

static const char *model_row(int row, uint64_t at, char *out, size_t size)
{
	const struct ment *root = model_newest(row, MC_ROOT, -1, at), *mcol, *e;
	const struct ment *a, *t, *live;
	bool any = false, m_any = false;
	int len;
	char m[128] = "";

	live = model_newest(row, MC_LIVE, -1, at);
	a = model_newest(row, MC_A, -1, at);
	t = model_newest(row, MC_T, -1, at);
	mcol = model_newest(row, MC_M, -1, at);
	if (mcol != NULL && root != NULL && !ment_newer(mcol, root->ht, root->seq))
		mcol = root;
	if (mcol == NULL)
		mcol = root;
	for (int k = 0; k < NMK; k++) {
		e = model_newest(row, MC_M, k, at);
		if (model_live(e, mcol, at)) {
			size_t l = strlen(m);
			snprintf(m + l, sizeof m - l, "%s%s:%d", m_any ? "," : "", mkeys[k],
				 e->ival);
			m_any = true;
		}
	}
	any = model_live(live, root, at) || model_live(a, root, at) || model_live(t, root, at) ||
	      m_any;
	if (!any)
		return "not found";
	len = snprintf(out, size, "a=");
	if (model_live(a, root, at))
		len += snprintf(out + len, size - (size_t)len, "%d", a->ival);
	else
		len += snprintf(out + len, size - (size_t)len, "NULL");
	if (model_live(t, root, at))
		len += snprintf(out + len, size - (size_t)len, " t=s%d", t->ival);
	else
		len += snprintf(out + len, size - (size_t)len, " t=NULL");
	snprintf(out + len, size - (size_t)len, " m=%s%s%s", m_any ? "{" : "NULL", m,
		 m_any ? "}" : "");
	return out;
}

/* The same format from a row the reader built. */
static void format_row(const struct row *r, char *out, size_t size)
{
	const struct docnode *a = row_column_named(r, "a"), *t = row_column_named(r, "t");
	const struct docnode *m = row_column_named(r, "m");
	int len = snprintf(out, size, "a=");
	if (a != NULL)
		len += snprintf(out + len, size - (size_t)len, "%d", a->value.v.i32);
	else
		len += snprintf(out + len, size - (size_t)len, "NULL");
	if (t != NULL)
		len += snprintf(out + len, size - (size_t)len, " t=%.*s", (int)t->value.v.s.len,
				(const char *)t->value.v.s.p);
	else
		len += snprintf(out + len, size - (size_t)len, " t=NULL");
	len += snprintf(out + len, size - (size_t)len, " m=");
	if (m == NULL || m->children == NULL) {
		snprintf(out + len, size - (size_t)len, "NULL");
		return;
	}
	len += snprintf(out + len, size - (size_t)len, "{");
	for (const struct docnode *c = m->children; c != NULL; c = c->next)
		len += snprintf(out + len, size - (size_t)len, "%s%.*s:%d",
				c == m->children ? "" : ",", (int)c->key.v.s.len,
				(const char *)c->key.v.s.p, c->value.v.i32);
	snprintf(out + len, size - (size_t)len, "}");
}

static const char *store_row(int row, uint64_t at, char *out, size_t size)
{
	struct row r;
	bool found;
	CHECK_OK_MSG(reader_get_row(R.f.s, &R.s, row_key[row], 2, at, &R.f.arena, &r, &found,
				    R.f.errmsg),
		     R.f.errmsg);
	if (!found)
		return "not found";
	format_row(&r, out, size);
	return out;
}

/* A whole-table scan as "row:...;" in key order of the model rows. */
static void scan_all(uint64_t at, bool model, struct buf *out)
{
	char line[256];
	buf_reset(out);
	if (model) {
		for (int row = 0; row < NROWS; row++) {
			const char *s = model_row(row, at, line, sizeof line);
			if (strcmp(s, "not found") != 0)
				buf_printf(out, "%s/%d:%s;", hkeys[row / 3], row % 3 + 1, s);
		}
		return;
	}
	struct scan_spec sp;
	struct row *rows;
	size_t nrows;
	char err[DOCRAFT_ERRMSG_SIZE];
	/* Row order in the store: by hash, then r; sort into model order. */
	const char *lines[NROWS] = {0};
	char buf[NROWS][256];
	memset(&sp, 0, sizeof sp);
	sp.read_ht = at;
	CHECK_OK_MSG(reader_scan(R.f.s, &R.s, &sp, &R.f.arena, &rows, &nrows, NULL, err), err);
	CHECK(nrows <= NROWS);
	for (size_t i = 0; i < nrows; i++) {
		int h = rows[i].key[0].v.s.p[0] == 'x' ? 0 : 1;
		int row = h * 3 + rows[i].key[1].v.i32 - 1;
		format_row(&rows[i], buf[row], sizeof buf[row]);
		lines[row] = buf[row];
	}
	for (int row = 0; row < NROWS; row++)
		if (lines[row] != NULL)
			buf_printf(out, "%s/%d:%s;", hkeys[row / 3], row % 3 + 1, lines[row]);
}

static int64_t rand_ttl(uint64_t *rng)
{
	static const int64_t ttls[] = {DOCWRITE_NO_TTL, DOCWRITE_NO_TTL, DOCWRITE_NO_TTL,
				       DOCWRITE_NO_TTL, 0, 2000, 5000, 15000};
	return ttls[test_rand(rng) % 8];
}

/* Picks 1..2 distinct map keys. */
static size_t rand_mkeys(uint64_t *rng, int *ks)
{
	size_t n = 1 + test_rand(rng) % 2;
	ks[0] = (int)(test_rand(rng) % NMK);
	ks[1] = (ks[0] + 1 + (int)(test_rand(rng) % (NMK - 1))) % NMK;
	return n;
}

/* One random operation on the batch (on row, or a random row if < 0),
 * recorded in the model at ht. */
static void random_op(uint64_t *rng, uint64_t ht, int row)
{
	int ks[2];
	const struct pv *key;
	int64_t ttl = rand_ttl(rng);
	int32_t iv = (int32_t)(test_rand(rng) % 100);
	char tv[8];
	struct pv mk[2], mv[2];
	size_t n;
	int op = (int)(test_rand(rng) % 10);
	struct docwrite *w = &R.w;

	if (row < 0)
		row = (int)(test_rand(rng) % NROWS);
	key = row_key[row];

	snprintf(tv, sizeof tv, "s%d", iv);
	if (op <= 2) {
		/* INSERT: a and t given (value or NULL) or left out; m elements. */
		struct colval cols[3];
		size_t nc = 0;
		bool a_given = test_rand(rng) % 4 != 0, t_given = test_rand(rng) % 4 != 0;
		bool a_null = test_rand(rng) % 5 == 0, t_null = test_rand(rng) % 5 == 0;
		size_t nm = test_rand(rng) % 3;
		if (a_given)
			cols[nc++] = colval_of("a", a_null ? pv_null() : pv_int32(iv));
		if (t_given)
			cols[nc++] = colval_of("t", t_null ? pv_null() : pv_str(tv));
		if (nm > 0) {
			n = rand_mkeys(rng, ks);
			nm = nm < n ? nm : n;
			for (size_t i = 0; i < nm; i++) {
				mk[i] = pv_str(mkeys[ks[i]]);
				mv[i] = pv_int32(iv + (int32_t)i);
			}
			cols[nc++] = colval_map("m", mk, mv, nm);
		}
		CHECK_OK_MSG(docwrite_insert(w, key, 2, cols, nc, ttl), w->errmsg);
		model_add(row, MC_LIVE, -1, false, 0, ttl, ht);
		if (a_given)
			model_add(row, MC_A, -1, a_null, iv, ttl, ht);
		if (t_given)
			model_add(row, MC_T, -1, t_null, iv, ttl, ht);
		for (size_t i = 0; i < nm; i++)
			model_add(row, MC_M, ks[i], false, iv + (int32_t)i, ttl, ht);
	} else if (op == 3) {
		/* UPDATE a and/or t (NULL deletes). */
		struct colval cols[2];
		size_t nc = 0;
		int which = 1 + (int)(test_rand(rng) % 3);
		bool is_null = test_rand(rng) % 5 == 0;
		if (which & 1)
			cols[nc++] = colval_of("a", is_null ? pv_null() : pv_int32(iv));
		if (which & 2)
			cols[nc++] = colval_of("t", is_null ? pv_null() : pv_str(tv));
		CHECK_OK_MSG(docwrite_update(w, key, 2, cols, nc, ttl), w->errmsg);
		if (which & 1)
			model_add(row, MC_A, -1, is_null, iv, ttl, ht);
		if (which & 2)
			model_add(row, MC_T, -1, is_null, iv, ttl, ht);
	} else if (op == 4) {
		CHECK_OK_MSG(docwrite_delete_row(w, key, 2), w->errmsg);
		model_add(row, MC_ROOT, -1, true, 0, DOCWRITE_NO_TTL, ht);
	} else if (op == 5) {
		static const char *names[3] = {"a", "t", "m"};
		int c = (int)(test_rand(rng) % 3);
		CHECK_OK_MSG(docwrite_delete_column(w, key, 2, names[c]), w->errmsg);
		model_add(row, MC_A + c, -1, true, 0, DOCWRITE_NO_TTL, ht);
	} else if (op <= 7) {
		n = rand_mkeys(rng, ks);
		for (size_t i = 0; i < n; i++) {
			mk[i] = pv_str(mkeys[ks[i]]);
			mv[i] = pv_int32(iv + (int32_t)i);
		}
		CHECK_OK_MSG(docwrite_map_put(w, key, 2, "m", mk, mv, n, ttl), w->errmsg);
		for (size_t i = 0; i < n; i++)
			model_add(row, MC_M, ks[i], false, iv + (int32_t)i, ttl, ht);
	} else if (op == 8) {
		n = rand_mkeys(rng, ks);
		for (size_t i = 0; i < n; i++)
			mk[i] = pv_str(mkeys[ks[i]]);
		CHECK_OK_MSG(docwrite_map_remove(w, key, 2, "m", mk, n), w->errmsg);
		for (size_t i = 0; i < n; i++)
			model_add(row, MC_M, ks[i], true, 0, DOCWRITE_NO_TTL, ht);
	} else {
		/* m = {...}: tombstone at the column, then the elements. */
		n = rand_mkeys(rng, ks);
		for (size_t i = 0; i < n; i++) {
			mk[i] = pv_str(mkeys[ks[i]]);
			mv[i] = pv_int32(iv + (int32_t)i);
		}
		struct colval cv = colval_map("m", mk, mv, n);
		CHECK_OK_MSG(docwrite_collection_replace(w, key, 2, &cv, ttl), w->errmsg);
		model_add(row, MC_M, -1, true, 0, DOCWRITE_NO_TTL, ht);
		for (size_t i = 0; i < n; i++)
			model_add(row, MC_M, ks[i], false, iv + (int32_t)i, ttl, ht);
	}
}

/* Times worth reading at, all >= lo: batch times, just before/after them,
 * TTL expiries, and random ones up to a little past hi. */
static uint64_t probe_time(uint64_t *rng, uint64_t lo, uint64_t hi)
{
	uint64_t x = test_rand(rng) % 10, t;
	if (x < 4 && R.n > 0) {
		t = R.e[test_rand(rng) % R.n].ht + (test_rand(rng) % 3) - 1;
	} else if (x < 7 && R.n > 0) {
		const struct ment *e = &R.e[test_rand(rng) % R.n];
		int64_t ttl = e->ttl == DOCWRITE_NO_TTL ? R.default_ttl : e->ttl;
		t = ht_make(ht_physical(e->ht) + (uint64_t)(ttl > 0 ? ttl : 0) * 1000 +
				    test_rand(rng) % 2,
			    (uint32_t)(test_rand(rng) % 4096));
	} else {
		uint64_t span = ht_physical(hi) - ht_physical(lo) + 20000000;
		t = ht_make(ht_physical(lo) + test_rand(rng) % span,
			    (uint32_t)(test_rand(rng) % 4096));
	}
	return t < lo ? lo : t;
}

#define NRANDOM_PROBES 48
#define MAX_PROBES (NRANDOM_PROBES + 2 * 512)

/* Same µs, a few µs, up to 3 s, up to 10 s. */
static uint64_t advance(uint64_t *rng, uint64_t ht)
{
	uint64_t x = test_rand(rng) % 10;
	if (x < 2 && ht_logical(ht) < 4000)
		return ht + 1 + test_rand(rng) % 3;
	if (x < 5)
		return ht_make(ht_physical(ht) + 1 + test_rand(rng) % 1000, 0);
	if (x < 9)
		return ht_make(ht_physical(ht) + 1 + test_rand(rng) % 3000000, 0);
	return ht_make(ht_physical(ht) + 1 + test_rand(rng) % 10000000, 0);
}

static void random_run(uint64_t seed, bool packed, int64_t default_ttl, int rounds)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	uint64_t rng = seed ? seed : 1, ht = fx_ht(1), cutoff = 0;
	struct buf before = BUF_INIT, after = BUF_INIT, sb = BUF_INIT;
	static char want[MAX_PROBES][NROWS][160];
	static char scans[MAX_PROBES][1024];
	static uint64_t probes[MAX_PROBES];
	int nprobes;
	int nfull = 0, npartial = 0;
	size_t nprobed = 0;

	log_init(); /* DOCRAFT_TRACE=info shows each job's GC counts */
	memset(&R, 0, sizeof R);
	R.default_ttl = default_ttl;
	fx_open(&R.f, "gc-rand");
	store_options_default(&R.o);
	/* Retention longer than the epoch: automatic compactions (L0 file
	 * count) collect only below the tested cutoffs. */
	R.o.history_retention_us = UINT64_C(1) << 62;
	R.o.default_ttl_ms = default_ttl;
	reopen_with(&R.f, &R.o);
	CHECK_OK(schema_init(&R.s, "rt", err));
	CHECK_OK(schema_add(&R.s, "h", COL_HASH, CT_TEXT, err));
	CHECK_OK(schema_add(&R.s, "r", COL_RANGE, CT_INT32, err));
	CHECK_OK(schema_add(&R.s, "a", COL_REGULAR, CT_INT32, err));
	CHECK_OK(schema_add(&R.s, "t", COL_REGULAR, CT_TEXT, err));
	CHECK_OK_MSG(schema_add_column(&R.s, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT32, false,
				       err),
		     err);
	R.s.default_ttl_ms = default_ttl;
	R.s.packed = packed;
	batch_init(&R.b);
	docwrite_init(&R.w, &R.s, &R.b, NULL);
	for (int row = 0; row < NROWS; row++) {
		row_key[row][0] = pv_str(hkeys[row / 3]);
		row_key[row][1] = pv_int32(row % 3 + 1);
	}

	for (int round = 0; round < rounds; round++) {
		int nbatches = 10 + (int)(test_rand(&rng) % 40);
		uint64_t first = ht;
		for (int i = 0; i < nbatches; i++) {
			int k = test_rand(&rng) % 4 == 0 ? 2 + (int)(test_rand(&rng) % 3) : 1;
			for (int j = 0; j < k; j++)
				random_op(&rng, ht, -1);
			fx_apply(&R.f, &R.b, ht);
			if (test_rand(&rng) % 8 == 0)
				CHECK_OK_MSG(store_flush(R.f.s, R.f.errmsg), R.f.errmsg);
			ht = advance(&rng, ht);
		}
		if (test_rand(&rng) % 5 == 0) {
			CHECK_OK_MSG(store_flush(R.f.s, R.f.errmsg), R.f.errmsg);
			reopen_with(&R.f, &R.o);
			CHECK_EQ_U64(store_history_cutoff(R.f.s), cutoff);
		}
		/* A partial round: everything into one bottommost file (at the
		 * current cutoff), then files holding one row only, written
		 * without the applied marker (its key would make every file
		 * overlap every range). A compaction of another row's keys
		 * leaves them out, so its job is not full. */
		bool partial = test_rand(&rng) % 3 == 0;
		int local_row = -1;
		if (partial) {
			CHECK_OK_MSG(store_compact(R.f.s, cutoff, R.f.errmsg), R.f.errmsg);
			local_row = (int)(test_rand(&rng) % NROWS);
			for (int fi = 0; fi < 2; fi++) {
				for (int i = 0; i < 3; i++) {
					random_op(&rng, ht, local_row);
					struct batch *b = &R.b;
					CHECK_OK_MSG(store_apply(R.f.s, b->data.data, b->data.len,
								 ht, 0, R.f.errmsg),
						     R.f.errmsg);
					batch_reset(&R.b);
					ht = advance(&rng, ht);
				}
				CHECK_OK_MSG(store_flush(R.f.s, R.f.errmsg), R.f.errmsg);
			}
		}

		/* The cutoff: a batch time (maybe -1), or anywhere up to now. */
		uint64_t c, x = test_rand(&rng) % 10;
		if (x < 5) {
			c = R.e[R.n - 1 - test_rand(&rng) % (R.n < 60 ? R.n : 60)].ht -
			    (test_rand(&rng) % 2);
		} else {
			uint64_t span = ht_physical(ht) - ht_physical(first) + 1;
			c = ht_make(ht_physical(first) + test_rand(&rng) % span,
				    (uint32_t)(test_rand(&rng) % 4096));
		}
		if (c < cutoff)
			c = cutoff;

		/* Before: pairs above the cutoff, reads at times >= it. */
		size_t nb, na;
		pairs_above(R.f.s, c, &before, &nb);
		/* Every batch time at or above the cutoff and the instant before
		 * it (the most recent 512), plus random times. */
		nprobes = 0;
		uint64_t last = 0;
		for (size_t i = R.n; i-- > 0 && nprobes < MAX_PROBES - NRANDOM_PROBES;) {
			if (R.e[i].ht < c)
				break;
			if (R.e[i].ht == last)
				continue;
			last = R.e[i].ht;
			probes[nprobes++] = R.e[i].ht;
			if (R.e[i].ht - 1 >= c)
				probes[nprobes++] = R.e[i].ht - 1;
		}
		for (int q = 0; q < NRANDOM_PROBES; q++)
			probes[nprobes++] = q == 0 ? c : probe_time(&rng, c, ht);
		nprobed += (size_t)nprobes;
		for (int q = 0; q < nprobes; q++) {
			for (int row = 0; row < NROWS; row++) {
				char got[256];
				const char *g = store_row(row, probes[q], got, sizeof got);
				snprintf(want[q][row], sizeof want[q][row], "%s", g);
			}
			if (q % 8 == 0) {
				scan_all(probes[q], false, &sb);
				snprintf(scans[q], sizeof scans[q], "%s", buf_cstr(&sb));
			}
			arena_reset(&R.f.arena);
		}

		if (partial) {
			struct compaction_totals t0, t1;
			int start = (int)(test_rand(&rng) % (NROWS - 1));
			/* Another row's keys: its job leaves local_row's files out.
			 * A row never written at the edge of the key space overlaps
			 * no file and runs no job: then the next row. */
			compaction_get_totals(&t0);
			t1 = t0;
			for (int a = 0; a < NROWS - 1 && t1.jobs_partial == t0.jobs_partial; a++) {
				struct buf lo = BUF_INIT, hi = BUF_INIT;
				int row = (local_row + 1 + (start + a) % (NROWS - 1)) % NROWS;
				CHECK_OK(docwrite_dockey(&R.s, row_key[row], 2, &lo, err));
				buf_append(&hi, lo.data, lo.len);
				buf_push(&hi, KT_MAX_BYTE);
				CHECK_OK_MSG(store_compact_range(R.f.s, lo.data, lo.len, hi.data,
								 hi.len, c, R.f.errmsg),
					     R.f.errmsg);
				compaction_get_totals(&t1);
				buf_free(&lo);
				buf_free(&hi);
			}
			CHECK_MSG(t1.jobs_partial > t0.jobs_partial,
				  "seed %" PRIu64 " round %d: no partial job", seed, round);
			npartial++;
		} else {
			CHECK_OK_MSG(store_compact(R.f.s, c, R.f.errmsg), R.f.errmsg);
			nfull++;
		}
		cutoff = c;
		CHECK_EQ_U64(store_history_cutoff(R.f.s), cutoff);

		/* After: nothing above the cutoff touched, reads unchanged and
		 * equal to the model, reads below the cutoff refused. */
		pairs_above(R.f.s, c, &after, &na);
		CHECK_MSG(na == nb && before.len == after.len &&
				  (before.len == 0 || memcmp(before.data, after.data, before.len) == 0),
			  "seed %" PRIu64 " round %d: pairs above the cutoff changed (%zu -> %zu)",
			  seed, round, nb, na);
		for (int q = 0; q < nprobes; q++) {
			for (int row = 0; row < NROWS; row++) {
				char got[256], exp[256];
				const char *g = store_row(row, probes[q], got, sizeof got);
				const char *m = model_row(row, probes[q], exp, sizeof exp);
				CHECK_MSG(strcmp(g, want[q][row]) == 0,
					  "seed %" PRIu64 " round %d row %d at %" PRIu64
					  " (cutoff %" PRIu64 "): after '%s', before '%s'",
					  seed, round, row, probes[q], c, g, want[q][row]);
				CHECK_MSG(strcmp(g, m) == 0,
					  "seed %" PRIu64 " round %d row %d at %" PRIu64
					  " (cutoff %" PRIu64 "): store '%s', model '%s'",
					  seed, round, row, probes[q], c, g, m);
			}
			if (q % 8 == 0) {
				struct buf mb = BUF_INIT;
				scan_all(probes[q], false, &sb);
				scan_all(probes[q], true, &mb);
				CHECK_MSG(strcmp(buf_cstr(&sb), scans[q]) == 0,
					  "seed %" PRIu64 " round %d scan at %" PRIu64
					  ": after '%s', before '%s'",
					  seed, round, probes[q], buf_cstr(&sb), scans[q]);
				CHECK_MSG(strcmp(buf_cstr(&sb), buf_cstr(&mb)) == 0,
					  "seed %" PRIu64 " round %d scan at %" PRIu64
					  ": store '%s', model '%s'",
					  seed, round, probes[q], buf_cstr(&sb), buf_cstr(&mb));
				buf_free(&mb);
			}
			arena_reset(&R.f.arena);
		}
		if (c > 1) {
			struct row r;
			bool found;
			int rv = reader_get_row(R.f.s, &R.s, row_key[0], 2, c - 1, &R.f.arena, &r,
						&found, err);
			CHECK_EQ_INT(rv, DOCRAFT_ETOOOLD);
		}
		/* Later writes come after the cutoff. */
		if (ht <= c)
			ht = ht_make(ht_physical(c) + 1, 0);
	}
	test_note("%d full and %d partial compactions, %zu pairs written, reads at %zu times",
		  nfull, npartial, R.n, nprobed);
	buf_free(&before);
	buf_free(&after);
	buf_free(&sb);
	free(R.e);
	docwrite_free(&R.w);
	batch_free(&R.b);
	schema_free(&R.s);
	fx_close(&R.f);
}

TEST(random_model)
{
	random_run(test_seed(), false, 0, 12);
}

TEST(random_model_default_ttl)
{
	random_run(test_seed(), false, 8000, 12);
}

TEST(random_model_packed)
{
	random_run(test_seed(), true, 0, 12);
}

/* The path-frame stack the reader's builder and the GC share
 * (docdb/pathframe.h): entering a path keeps the frames of its prefixes,
 * pushes copies of the deepest one kept and takes the new path. */
TEST(path_frames)
{
	/* Paths as plain bytes: a "DocKey" of 2 bytes, subkeys of 1. */
	const uint8_t ab[] = "DKab", ac[] = "DKac", b[] = "DKb";
	const size_t bounds3[] = {2, 3, 4}, bounds2[] = {2, 3};
	struct path_frame st[4];
	struct buf path = BUF_INIT;
	size_t depth = 1;

	memset(st, 0, sizeof st);
	st[0].path_len = 2;
	buf_append(&path, "DK", 2);
	/* DK a b: frames 1 and 2 pushed, copies of frame 0. */
	st[0].overwrite = (struct docht){7, 0};
	CHECK_EQ_U64(pathframe_enter(st, &depth, &path, ab, 4, bounds3, 2), 1);
	CHECK_EQ_U64(depth, 3);
	CHECK_EQ_U64(st[1].path_len, 3);
	CHECK_EQ_U64(st[2].path_len, 4);
	CHECK_EQ_U64(st[2].overwrite.ht, 7);
	CHECK(path.len == 4 && memcmp(path.data, ab, 4) == 0);
	/* DK a c: frame 1 (DK a) is a prefix and stays; frame 2 is replaced
	 * by a copy of frame 1. */
	st[1].overwrite = (struct docht){9, 0};
	st[2].overwrite = (struct docht){11, 0};
	CHECK_EQ_U64(pathframe_enter(st, &depth, &path, ac, 4, bounds3, 2), 2);
	CHECK_EQ_U64(st[2].overwrite.ht, 9);
	/* DK b: frame 1 is no prefix: replaced by a copy of frame 0. */
	CHECK_EQ_U64(pathframe_enter(st, &depth, &path, b, 3, bounds2, 1), 1);
	CHECK_EQ_U64(depth, 2);
	CHECK_EQ_U64(st[1].overwrite.ht, 7);
	/* DK b again (a version of the same path): nothing pushed. */
	CHECK_EQ_U64(pathframe_enter(st, &depth, &path, b, 3, bounds2, 1), 2);
	/* DK itself: every frame below the root popped. */
	CHECK_EQ_U64(pathframe_enter(st, &depth, &path, b, 2, bounds2, 0), 1);
	CHECK_EQ_U64(depth, 1);
	CHECK(path.len == 2);
	buf_free(&path);
}
TEST_MAIN(T(msgs_after_t4_and_t5), T(msgs_partial), T(page_views_full), T(page_views_partial),
	  T(default_ttl), T(cutoff_persisted_never_lowered), T(internal_records_survive),
	  T(filter_decisions), T(auto_cutoff), T(random_model), T(random_model_default_ttl),
	  T(random_model_packed), T(path_frames))
