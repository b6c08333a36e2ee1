/* History holds (docdb/compaction.h, store_hold_history): what a read or a
 * paged scan in progress needs survives a forced compaction, and a read
 * older than the retention gets "snapshot too old", never other data. Real
 * RocksDB in a temp dir, hybrid times taken from the wall clock (the
 * retention counts back from min(now, the last write)).
 *
 *   paged_scan_survives_compaction  a scan at T1 (between a row's first
 *       version and its overwrite) reads one page, holds T1 as the tablet
 *       service does, a full compaction is forced with a cutoff of now: the
 *       cutoff stops at T1 and the next page still reads the first
 *       versions; a read below T1 is refused.
 *   old_read_refused                retention 1 s, no compaction yet: a read
 *       AS OF a time older than the retention is DOCRAFT_ETOOOLD with a clear
 *       message.
 *   holds_bounded                   the hold table is bounded: 1000 holds
 *       fit in COMPACTION_MAX_HOLDS and still cap the cutoff at the oldest;
 *       a hold renews history older than the retention, never older than
 *       twice the retention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/compaction.h"
#include "docdb/docwrite.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "test.h"

#define ROWS 4

static struct {
	char dir[256];
	char path[300];
	struct store *s;
	struct schema schema;
	struct batch b;
	struct docwrite w;
	uint64_t index;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
} C;

/* A hybrid time seconds before now. */
static uint64_t ago(uint64_t seconds)
{
	return ht_make(hlc_wall_clock(NULL) - seconds * 1000000, 0);
}

static void open_store(const char *tag, uint64_t retention_us)
{
	struct store_options o;

	memset(&C, 0, sizeof C);
	test_tmpdir_make(C.dir, tag);
	snprintf(C.path, sizeof C.path, "%s/db", C.dir);
	store_options_default(&o);
	o.history_retention_us = retention_us;
	CHECK_OK_MSG(store_open(C.path, &o, &C.s, C.errmsg), C.errmsg);
	CHECK_OK_MSG(schema_init(&C.schema, "t", C.errmsg), C.errmsg);
	CHECK_OK_MSG(schema_add_column(&C.schema, "h", COL_HASH, CT_TEXT, 0, 0, false, C.errmsg),
		     C.errmsg);
	CHECK_OK_MSG(schema_add_column(&C.schema, "r", COL_RANGE, CT_INT32, 0, 0, false, C.errmsg),
		     C.errmsg);
	CHECK_OK_MSG(schema_add_column(&C.schema, "v", COL_REGULAR, CT_INT32, 0, 0, false,
				       C.errmsg),
		     C.errmsg);
	batch_init(&C.b);
	docwrite_init(&C.w, &C.schema, &C.b, NULL);
}

static void close_store(void)
{
	docwrite_free(&C.w);
	batch_free(&C.b);
	schema_free(&C.schema);
	store_close(C.s);
	test_tmpdir_remove(C.dir);
}

static void put(const char *h, int32_t r, int32_t v)
{
	struct pv key[2] = {pv_str(h), pv_int32(r)};
	struct colval c = colval_of("v", pv_int32(v));

	CHECK_OK_MSG(docwrite_insert(&C.w, key, 2, &c, 1, DOCWRITE_NO_TTL), C.w.errmsg);
}

static void apply(uint64_t ht)
{
	CHECK_OK_MSG(store_apply(C.s, C.b.data.data, C.b.data.len, ht, ++C.index, C.errmsg),
		     C.errmsg);
	batch_reset(&C.b);
}

/* Rows of hash key "a" at read_ht, limit rows from paging (NULL: first). */
static int scan_page(uint64_t read_ht, size_t limit, struct buf *paging, struct arena *a,
		     struct row **rows, size_t *n)
{
	struct pv h = pv_str("a");
	struct scan_spec spec;
	struct buf next = BUF_INIT;
	int rv;

	memset(&spec, 0, sizeof spec);
	spec.read_ht = read_ht;
	spec.hash_key = &h;
	spec.n_hash = 1;
	spec.limit = limit;
	spec.paging = paging->len > 0 ? paging->data : NULL;
	spec.paging_len = paging->len;
	rv = reader_scan(C.s, &C.schema, &spec, a, rows, n, &next, C.errmsg);
	buf_reset(paging);
	if (rv == 0 && next.len > 0)
		buf_append(paging, next.data, next.len);
	buf_free(&next);
	return rv;
}

static int32_t v_of(const struct row *r)
{
	const struct docnode *n = row_column_named(r, "v");
	return n != NULL ? n->value.v.i32 : -1;
}

TEST(paged_scan_survives_compaction)
{
	uint64_t t0 = ago(20), t1 = ago(18), t2 = ago(15), t3 = ago(1);
	struct buf paging = BUF_INIT;
	struct arena a = ARENA_INIT;
	struct row *rows;
	size_t n;

	open_store("hold-scan", 0); /* 900 s */
	for (int32_t r = 1; r <= ROWS; r++)
		put("a", r, r);
	apply(t0);
	for (int32_t r = 1; r <= ROWS; r++)
		put("a", r, 100 + r); /* overwrites: the first versions are garbage
				       * for any read after t2 */
	apply(t2);
	put("b", 1, 1);
	apply(t3);

	/* Page 1 at t1, and the hold the service takes for the scan. */
	CHECK_OK_MSG(store_hold_history(C.s, t1, 60000, C.errmsg), C.errmsg);
	CHECK_OK_MSG(scan_page(t1, 2, &paging, &a, &rows, &n), C.errmsg);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(v_of(&rows[0]), 1);
	CHECK(paging.len > 0);

	/* Forced: a full compaction asked to collect everything up to now. */
	CHECK_OK_MSG(store_compact(C.s, ago(0), C.errmsg), C.errmsg);
	CHECK_MSG(store_history_cutoff(C.s) <= t1, "cutoff %llu above the held %llu",
		  (unsigned long long)store_history_cutoff(C.s), (unsigned long long)t1);

	/* Page 2 (renewing its hold): the first versions, still there. */
	CHECK_OK_MSG(store_hold_history(C.s, t1, 60000, C.errmsg), C.errmsg);
	arena_reset(&a);
	CHECK_OK_MSG(scan_page(t1, 2, &paging, &a, &rows, &n), C.errmsg);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(v_of(&rows[0]), 3);
	CHECK_EQ_INT(v_of(&rows[1]), 4);

	/* Below the hold: gone for good, refused. */
	CHECK_EQ_INT(store_hold_history(C.s, t0, 60000, C.errmsg), DOCRAFT_ETOOOLD);
	/* A read now sees the overwrites. */
	buf_reset(&paging);
	arena_reset(&a);
	CHECK_OK_MSG(scan_page(ago(0), 0, &paging, &a, &rows, &n), C.errmsg);
	CHECK_EQ_INT(n, ROWS);
	CHECK_EQ_INT(v_of(&rows[0]), 101);
	arena_free(&a);
	buf_free(&paging);
	close_store();
}

TEST(old_read_refused)
{
	open_store("hold-old", 1000000);
	put("a", 1, 1);
	apply(ago(30));
	put("a", 1, 2);
	apply(ago(1));
	/* Nothing compacted yet, yet a read 10 s back (retention 1 s) is
	 * refused: what it would see may be collected at any moment. */
	CHECK_EQ_INT(store_hold_history(C.s, ago(10), 1000, C.errmsg), DOCRAFT_ETOOOLD);
	CHECK_MSG(strstr(C.errmsg, "below the history kept") != NULL, "errmsg: %s", C.errmsg);
	CHECK_OK_MSG(store_hold_history(C.s, ago(0), 1000, C.errmsg), C.errmsg);
	close_store();
}

TEST(holds_bounded)
{
	struct compaction_holds *h = malloc(sizeof *h);
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	CHECK(h != NULL);
	compaction_holds_init(h);
	CHECK_EQ_U64(compaction_hold_cap(h, 5000), 5000);
	for (uint64_t i = 0; i < 1000; i++)
		CHECK_OK_MSG(compaction_hold_add(h, 6000 + (i * 7919) % 1000, 0, 0, 0, 60000, errmsg),
			     errmsg);
	CHECK(h->n <= COMPACTION_MAX_HOLDS);
	CHECK_EQ_U64(compaction_hold_cap(h, 1000000), 6000);
	/* A raise in progress at 6000: a new hold below it is refused. */
	CHECK_EQ_INT(compaction_hold_add(h, 5999, 0, 0, 0, 60000, errmsg), DOCRAFT_ETOOOLD);
	/* Older than the retention (7000) but kept by a live hold: renewed;
	 * older than twice the retention (6500): refused, held or not. */
	CHECK_OK_MSG(compaction_hold_add(h, 6800, 0, 7000, 6500, 60000, errmsg), errmsg);
	CHECK_EQ_INT(compaction_hold_add(h, 6200, 0, 7000, 6500, 60000, errmsg), DOCRAFT_ETOOOLD);
	compaction_holds_destroy(h);
	free(h);
}

TEST_MAIN(T(paged_scan_survives_compaction), T(old_read_refused), T(holds_bounded))
