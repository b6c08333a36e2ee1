/* Shared fixture for DocDB tests: a real store in a temp dir, batches applied
 * at chosen hybrid times, and labels (T1, hash1, ...) so dumps read like the
 * seeds. Every helper CHECKs its own errors. */
#ifndef DOCRAFT_TEST_FIXTURE_H
#define DOCRAFT_TEST_FIXTURE_H

#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/docwrite.h"
#include "docdb/dump.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"
#include "test.h"

/* 2026-01-01T00:00:00Z in µs: the fixture's time zero. */
#define FX_BASE_US UINT64_C(1767225600000000)

struct fx {
	char dir[256];
	struct store *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t next_index;
	struct {
		uint64_t ht;
		char label[16];
	} hts[64];
	size_t nhts;
	struct {
		uint16_t hash;
		char label[16];
	} hashes[16];
	size_t nhashes;
	struct buf dump;
	struct arena arena;
};

/* Whether the read suites run with packed tables: DOCRAFT_TEST_PACKED set
 * to anything but "" or "0" (meson registers them both ways). */
bool fx_packed(void);

void fx_open(struct fx *f, const char *tag);
/* Closes the store (without flushing) and reopens it. */
void fx_reopen(struct fx *f);
void fx_close(struct fx *f);
/* Hybrid time at FX_BASE_US + seconds (+ micros). */
static inline uint64_t fx_ht(int64_t seconds) { return ht_make(FX_BASE_US + (uint64_t)(seconds * 1000000), 0); }
static inline uint64_t fx_ht_us(int64_t seconds, int64_t micros)
{
	return ht_make(FX_BASE_US + (uint64_t)(seconds * 1000000 + micros), 0);
}
/* Appends DocKey dk + subkeys sub[0..nsub) -> v to b (a raw pair, as
 * docwrite_put_path would write it, without its checks). */
void fx_put_path(struct batch *b, const struct buf *dk, const struct pv *sub, size_t nsub,
		 const struct docvalue *v);
/* Applies b at ht (next raft index), then resets b. */
void fx_apply(struct fx *f, struct batch *b, uint64_t ht);
void fx_label_ht(struct fx *f, uint64_t ht, const char *label);
void fx_label_hash(struct fx *f, uint16_t hash, const char *label);
/* Dump with the fixture's labels; valid until the next fx_dump. */
const char *fx_dump(struct fx *f, const struct schema *s, bool redis);
/* Formats a primitive column value of a row ("NULL" when absent). */
const char *fx_col(struct fx *f, const struct row *r, const char *col);
/* Formats a document: 'v' or {k: v, ...} (children in key order). */
const char *fx_doc(struct fx *f, const struct docnode *n);

#endif
