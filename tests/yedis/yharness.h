/* The YEDIS test harness: a real store in a temp dir, commands run in
 * txns (yedis.h) and their batches applied at the txn's hybrid time, as
 * the tablet does at apply. Replies come back in a compact readable form:
 *
 *   +OK -> OK      -ERR x -> (error) ERR x      :3 -> 3
 *   $5 hello -> "hello"   $-1 / *-1 -> nil      *2 ... -> ["a", 3]
 *
 * (bulk bytes outside 0x20..0x7e, and " and \, as \xNN). Every helper
 * CHECKs its own errors. Shared by the command files' tests (strings,
 * keys, hashes, sets, sorted sets, lists, time series). */
#ifndef DOCRAFT_TEST_YHARNESS_H
#define DOCRAFT_TEST_YHARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "docraft/error.h"
#include "docdb/batch.h"
#include "docdb/store.h"
#include "yedis/yedis.h"
#include "test.h"

/* 2026-01-01T00:00:00Z in µs: time zero of the harness. */
#define YH_BASE_US UINT64_C(1767225600000000)

static inline uint64_t yh_ht(int64_t seconds)
{
	return ht_make(YH_BASE_US + (uint64_t)(seconds * 1000000), 0);
}
static inline uint64_t yh_ht_ms(int64_t ms)
{
	return ht_make(YH_BASE_US + (uint64_t)(ms * 1000), 0);
}

struct yh {
	char dir[256];
	struct store *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t next_index;
	int64_t default_ttl_ms;
	/* The txn in progress (yh_begin .. yh_commit). */
	struct yedis_txn *t;
	struct batch b;
	uint64_t ht;
	bool writable;
	struct buf last_batch; /* the bytes of the last committed batch */
	struct buf reply, out, dump;
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
};

void yh_open(struct yh *h, const char *tag);
void yh_close(struct yh *h);

/* Starts a txn at ht (writable: with a batch; else a read-only txn). */
void yh_begin(struct yh *h, uint64_t ht, bool writable);
/* Runs one command in the txn: words separated by blanks, "" for an empty
 * word, no other quoting. Returns the reply (valid until the next call). */
const char *yh_run(struct yh *h, const char *line);
/* The same with explicit arguments (any bytes). */
const char *yh_runv(struct yh *h, uint32_t argc, const struct resp_arg *argv);
/* Applies the txn's batch at its hybrid time (if it holds anything) and
 * frees the txn. */
void yh_commit(struct yh *h);
/* One command in a writable txn of its own at ht, committed. */
const char *yh_cmd(struct yh *h, uint64_t ht, const char *line);
/* One command in a read-only txn at ht. */
const char *yh_read(struct yh *h, uint64_t ht, const char *line);

/* Writes field = value into the hash at key as HSET does (a new hash
 * root first when the key holds none), in a txn of its own at ht: for
 * the tests of the other commands on hashes (WRONGTYPE, EXPIRE...). */
void yh_hset(struct yh *h, uint64_t ht, const char *key, const char *field, const char *value);

/* The store in the seed's Redis notation (docdb/dump.h), hybrid times
 * named by yh_label_ht. Valid until the next yh_dump. */
void yh_label_ht(struct yh *h, uint64_t ht, const char *label);
/* Names the 16-bit hash of a Redis key (its slot's partition value). */
void yh_label_key(struct yh *h, const char *key, const char *label);
const char *yh_dump(struct yh *h);

/* RESP reply bytes in the readable form above (appended to out). */
void yh_format_reply(struct buf *out, const uint8_t *p, size_t n);

#endif
