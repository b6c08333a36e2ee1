/* The shared Raft log's on-disk format: segment headers, batch headers and
 * records (the drawing is at the top of log.c). Pure: encoders append to a
 * struct buf, decoders read only the bytes they are given and return
 * DOCRAFT_ECORRUPT (never assert) on anything that does not decode.
 *
 * Internal to src/raftlog/ and its white-box test (tests/raftlog/
 * test_engine.c). No I/O, no state; any thread. */
#ifndef DOCRAFT_RAFTLOG_RECORD_H
#define DOCRAFT_RAFTLOG_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define RL_SEG_MAGIC 0x47534c52u   /* "RLSG" little endian */
#define RL_SEG_VERSION 1u
#define RL_SEG_HDR 32u             /* segment header bytes */
#define RL_BATCH_MAGIC 0x48424c52u /* "RLBH" */
#define RL_BATCH_HDR 20u           /* batch header bytes */
#define RL_REC_HDR 12u             /* record header bytes */
#define RL_ENTRY_HDR 16u           /* per-entry header inside ENTRIES */
#define RL_NAME_MAX 64u
/* Group ids are issued 1, 2, ... and never reused; recovery indexes groups
 * by id in an array, so an id read from disk above this bound is
 * corruption, not an allocation (16 M replicas created on one server). */
#define RL_GROUP_ID_MAX (1u << 24)
#define RL_BATCH_MAX (1u << 30)    /* largest batch payload accepted on decode */

enum rl_rec_type {
	RL_REC_GROUP = 1,
	RL_REC_TERM_VOTE = 2,
	RL_REC_ENTRIES = 3,
	RL_REC_TRUNCATE = 4,
	RL_REC_SNAPSHOT = 5,
	RL_REC_REMOVE = 6,
};

/* A decoded record: pointers into the bytes given to rl_rec_decode. */
struct rl_rec {
	uint8_t type;
	uint32_t group;
	const uint8_t *body;
	uint32_t body_len;
	const char *name;        /* GROUP: 1..RL_NAME_MAX bytes, not NUL-terminated */
	size_t name_len;
	uint64_t term, vote;     /* TERM_VOTE; SNAPSHOT: term */
	uint64_t index;          /* TRUNCATE; SNAPSHOT: the snapshot's index */
	uint64_t first;          /* ENTRIES: index of the first entry */
	uint32_t n;              /* ENTRIES: count (>= 1) */
	uint64_t conf_index;     /* SNAPSHOT */
	uint64_t first_needed;   /* SNAPSHOT: 0 = every entry gone (installed) */
	const uint8_t *conf;     /* SNAPSHOT: raft_configuration_encode bytes */
	uint32_t conf_len;
	const uint8_t *data;     /* SNAPSHOT: the snapshot's data */
	uint32_t data_len;
};

/* One entry of an ENTRIES record, in order (rl_entry_next). */
struct rl_entry_it {
	const struct rl_rec *r;
	uint32_t i;
	size_t data_off;         /* offset of entry i's data in r->body */
};
struct rl_entry_view {
	uint64_t term;
	uint8_t type;
	uint32_t len;
	size_t body_off;         /* offset of the data in the record's body */
};

static inline size_t rl_pad8(size_t n) { return (n + 7) & ~(size_t)7; }

void rl_put_u32(uint8_t *p, uint32_t v);
void rl_put_u64(uint8_t *p, uint64_t v);
uint32_t rl_get_u32(const uint8_t *p);
uint64_t rl_get_u64(const uint8_t *p);

/* Segment header: fills h[RL_SEG_HDR]. */
void rl_seg_header(uint8_t *h, uint64_t seg_seq, uint64_t first_batch_seq);
/* 0 or DOCRAFT_ECORRUPT (bad magic, version or CRC). */
int rl_seg_header_check(const uint8_t *h, uint64_t *seg_seq, uint64_t *first_batch_seq);

/* Fills the batch header at p (RL_BATCH_HDR bytes followed by len payload
 * bytes, already in place): magic, CRC-32C (over the header's len and seq
 * and the payload), len, seq. */
void rl_batch_seal(uint8_t *p, uint32_t len, uint64_t seq);
/* Checks the batch at p (avail bytes from p): 0 with *len and *seq, or
 * DOCRAFT_ECORRUPT (short, bad magic, length past avail, bad CRC). */
int rl_batch_check(const uint8_t *p, size_t avail, uint32_t *len, uint64_t *seq);

/* Record encoders: each appends one whole record to b. */
void rl_enc_group(struct buf *b, uint32_t group, const char *name);
void rl_enc_term_vote(struct buf *b, uint32_t group, uint64_t term, uint64_t vote);
void rl_enc_truncate(struct buf *b, uint32_t group, uint64_t index);
void rl_enc_remove(struct buf *b, uint32_t group);
void rl_enc_snapshot(struct buf *b, uint32_t group, uint64_t index, uint64_t term,
		     uint64_t conf_index, uint64_t first_needed, const void *conf, uint32_t conf_len,
		     const void *data, uint32_t data_len);
/* ENTRIES in two steps: rl_enc_entries_begin writes the record and entry
 * headers (terms, types and lengths given by the arrays) and returns the
 * offset in b of the record; then the caller appends each entry's data with
 * rl_enc_entry_data, in order. Entry k's data then sits at
 * (returned offset) + RL_REC_HDR + rl_entries_data_off(n, lens, k). */
size_t rl_enc_entries_begin(struct buf *b, uint32_t group, uint64_t first, uint32_t n,
			    const uint64_t *terms, const uint8_t *types, const uint32_t *lens);
void rl_enc_entry_data(struct buf *b, const void *data, uint32_t len);

/* Decodes the record at p (avail bytes): 0 with *r filled and *used its
 * length, or DOCRAFT_ECORRUPT with errmsg. */
int rl_rec_decode(const uint8_t *p, size_t avail, struct rl_rec *r, size_t *used, char *errmsg);

void rl_entry_first(struct rl_entry_it *it, const struct rl_rec *r);
/* The next entry of the record: true with *e filled, false after the last. */
bool rl_entry_next(struct rl_entry_it *it, struct rl_entry_view *e);

#endif
