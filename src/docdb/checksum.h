/* Replica checksums (docs/cluster.md, "Replica checksums"): a 64-bit digest
 * of the rows a store shows at one read time, so that replicas of a tablet
 * can prove they hold identical data (what YugabyteDB's ksck does).
 *
 * Contract. The checksum depends only on what a read at read_ht sees,
 * through the same rules as every read (reader.h: tombstones, TTLs,
 * liveness, packed rows, dropped columns): never on the raw pairs, their
 * write times, their order of arrival, overwritten history, compactions or
 * packing. Two stores with the same visible rows at read_ht have the same
 * checksum and row count; any difference in a key or a value changes the
 * checksum (up to 64-bit hash collisions).
 *
 * Definition (exact, so that other tools can recompute it):
 *
 *   checksum = FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
 *              0x00000100000001b3, one byte at a time: h ^= byte; h *= prime)
 *              over ROW(r1) ROW(r2) ... ROW(rn), the rows visible at read_ht
 *              in storage (DocKey) order; no rows: the offset basis.
 *   ROW    = 'R' VAL(k1) .. VAL(kK) COL(c1) .. COL(cM)
 *            k: the key columns (hash, then range) in schema order;
 *            c: every regular column of the schema, in schema order.
 *   COL    = 'N'                                  absent, NULL, or an empty
 *                                                 collection
 *          | 'P' VAL(v)                           primitive column
 *          | 'M' BE64(n) { VAL(key) VAL(value) }  map, n entries in key order
 *          | 'S' BE64(n) { VAL(member) }          set, in member order
 *          | 'L' BE64(n) { VAL(element) }         list, in list order (the
 *                                                 list indexes are not hashed)
 *   VAL    = '$'                       NULL
 *          | 'F' | 'T'                 bool false / true
 *          | 'H' BE64(v)               int8, int16, int32 (sign-extended)
 *          | 'I' BE64(v)               int64
 *          | 'O' BE64(v)               uint32 (date)
 *          | 'U' BE64(v)               uint64
 *          | 'C' BE32(bits)            float: IEEE bits, every NaN as 0x7FC00000
 *          | 'D' BE64(bits)            double: IEEE bits, NaN as 0x7FF8000000000000
 *          | 'S' BE64(len) bytes       text and blob
 *          | 's' BE64(v)               timestamp (µs)
 *          | '_' 16 bytes              uuid, RFC 4122 byte order
 *          | 'K' / 'J' / '[' BE64(v)   column id, system column id, list index
 *                                      (never appear in rows; for completeness)
 *   BE32 / BE64: big-endian; BE64 of a signed value is its two's complement.
 *
 * Use: checksum_store for a whole store in one call, or checksum_init then
 * checksum_step until done (one page of rows per call, so that a caller on
 * an event loop can yield between pages; every page reads at the same
 * read_ht). Errors: DOCRAFT_EINVAL (read_ht 0 or >= HT_INVALID),
 * DOCRAFT_ETOOOLD (read_ht below the store's history cutoff, also when the
 * cutoff passes read_ht between two pages), DOCRAFT_EIO / DOCRAFT_ECORRUPT
 * from the store, with errmsg.
 *
 * Threading: like reader.h (any thread, concurrent with store_apply); one
 * struct checksum belongs to one thread at a time. */
#ifndef DOCRAFT_DOCDB_CHECKSUM_H
#define DOCRAFT_DOCDB_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docdb/store.h"

#define CHECKSUM_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define CHECKSUM_FNV_PRIME UINT64_C(0x00000100000001b3)
/* Rows per checksum_step when the caller gives 0. */
#define CHECKSUM_PAGE_ROWS 1000u

struct checksum {
	uint64_t read_ht;
	uint64_t hash;   /* the FNV-1a state: the checksum once done */
	uint64_t rows;   /* rows hashed so far */
	bool done;       /* every row visible at read_ht has been hashed */
	/* Private. */
	struct buf paging;
	bool started;
};

/* Starts a checksum of the rows visible at read_ht (validated by the first
 * checksum_step). c is caller memory; release it with checksum_free. */
void checksum_init(struct checksum *c, uint64_t read_ht);
void checksum_free(struct checksum *c);

/* Hashes up to max_rows more rows (0: CHECKSUM_PAGE_ROWS) of s, whose
 * table is schema, and sets c->done after the last one. The same store and
 * schema must be given to every step of one checksum. A call once done is
 * a no-op returning 0. On error c is unusable (free it). */
int checksum_step(struct checksum *c, struct store *s, const struct schema *schema,
		  size_t max_rows, char *errmsg);

/* The whole store at read_ht in one call: *sum and *rows (both set only
 * on success). */
int checksum_store(struct store *s, const struct schema *schema, uint64_t read_ht,
		   uint64_t *sum, uint64_t *rows, char *errmsg);

/* Adds one row (ROW above) to c; checksum_step calls it for every row.
 * Exposed for tests and tools that hash rows from elsewhere. */
void checksum_add_row(struct checksum *c, const struct row *r);

#endif
