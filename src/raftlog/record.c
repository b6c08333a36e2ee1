/* The shared Raft log's format, encoders and checked decoders (the drawing
 * is at the top of log.c). All integers little endian. */
#include "raftlog/record.h"

#include <string.h>

#include "common/crc32c.h"
#include "common/err.h"

void rl_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void rl_put_u64(uint8_t *p, uint64_t v)
{
	rl_put_u32(p, (uint32_t)v);
	rl_put_u32(p + 4, (uint32_t)(v >> 32));
}

uint32_t rl_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t rl_get_u64(const uint8_t *p)
{
	return (uint64_t)rl_get_u32(p) | (uint64_t)rl_get_u32(p + 4) << 32;
}

/* ---- segment and batch headers ---- */

void rl_seg_header(uint8_t *h, uint64_t seg_seq, uint64_t first_batch_seq)
{
	memset(h, 0, RL_SEG_HDR);
	rl_put_u32(h, RL_SEG_MAGIC);
	rl_put_u32(h + 4, RL_SEG_VERSION);
	rl_put_u64(h + 8, seg_seq);
	rl_put_u64(h + 16, first_batch_seq);
	rl_put_u32(h + 24, crc32c(0, h, 24));
}

int rl_seg_header_check(const uint8_t *h, uint64_t *seg_seq, uint64_t *first_batch_seq)
{
	if (rl_get_u32(h) != RL_SEG_MAGIC || rl_get_u32(h + 4) != RL_SEG_VERSION ||
	    rl_get_u32(h + 24) != crc32c(0, h, 24))
		return DOCRAFT_ECORRUPT;
	*seg_seq = rl_get_u64(h + 8);
	*first_batch_seq = rl_get_u64(h + 16);
	return 0;
}

void rl_batch_seal(uint8_t *p, uint32_t len, uint64_t seq)
{
	rl_put_u32(p, RL_BATCH_MAGIC);
	rl_put_u32(p + 8, len);
	rl_put_u64(p + 12, seq);
	uint32_t crc = crc32c(0, p + 8, RL_BATCH_HDR - 8);
	rl_put_u32(p + 4, crc32c(crc, p + RL_BATCH_HDR, len));
}

int rl_batch_check(const uint8_t *p, size_t avail, uint32_t *len, uint64_t *seq)
{
	if (avail < RL_BATCH_HDR || rl_get_u32(p) != RL_BATCH_MAGIC)
		return DOCRAFT_ECORRUPT;
	uint32_t n = rl_get_u32(p + 8);
	if (n > RL_BATCH_MAX || n > avail - RL_BATCH_HDR)
		return DOCRAFT_ECORRUPT;
	uint32_t crc = crc32c(0, p + 8, RL_BATCH_HDR - 8);
	if (crc32c(crc, p + RL_BATCH_HDR, n) != rl_get_u32(p + 4))
		return DOCRAFT_ECORRUPT;
	*len = n;
	*seq = rl_get_u64(p + 12);
	return 0;
}

/* ---- record encoders ---- */

/* Appends a record header with body_len to be patched by rec_end. */
static size_t rec_begin(struct buf *b, uint8_t type, uint32_t group)
{
	size_t at = b->len;
	uint8_t h[RL_REC_HDR] = {type};
	rl_put_u32(h + 4, group);
	buf_append(b, h, sizeof h);
	return at;
}

static void rec_end(struct buf *b, size_t at)
{
	rl_put_u32(b->data + at + 8, (uint32_t)(b->len - at - RL_REC_HDR));
}

static void put64(struct buf *b, uint64_t v)
{
	uint8_t x[8];
	rl_put_u64(x, v);
	buf_append(b, x, 8);
}

static void put32(struct buf *b, uint32_t v)
{
	uint8_t x[4];
	rl_put_u32(x, v);
	buf_append(b, x, 4);
}

void rl_enc_group(struct buf *b, uint32_t group, const char *name)
{
	size_t at = rec_begin(b, RL_REC_GROUP, group);
	buf_append(b, name, strlen(name));
	rec_end(b, at);
}

void rl_enc_term_vote(struct buf *b, uint32_t group, uint64_t term, uint64_t vote)
{
	size_t at = rec_begin(b, RL_REC_TERM_VOTE, group);
	put64(b, term);
	put64(b, vote);
	rec_end(b, at);
}

void rl_enc_truncate(struct buf *b, uint32_t group, uint64_t index)
{
	size_t at = rec_begin(b, RL_REC_TRUNCATE, group);
	put64(b, index);
	rec_end(b, at);
}

void rl_enc_remove(struct buf *b, uint32_t group)
{
	rec_end(b, rec_begin(b, RL_REC_REMOVE, group));
}

void rl_enc_snapshot(struct buf *b, uint32_t group, uint64_t index, uint64_t term,
		     uint64_t conf_index, uint64_t first_needed, const void *conf, uint32_t conf_len,
		     const void *data, uint32_t data_len)
{
	size_t at = rec_begin(b, RL_REC_SNAPSHOT, group);
	put64(b, index);
	put64(b, term);
	put64(b, conf_index);
	put64(b, first_needed);
	put32(b, conf_len);
	put32(b, data_len);
	buf_append(b, conf, conf_len);
	buf_append(b, data, data_len);
	rec_end(b, at);
}

size_t rl_enc_entries_begin(struct buf *b, uint32_t group, uint64_t first, uint32_t n,
			    const uint64_t *terms, const uint8_t *types, const uint32_t *lens)
{
	size_t at = rec_begin(b, RL_REC_ENTRIES, group);
	size_t body = 16 + (size_t)RL_ENTRY_HDR * n;
	put64(b, first);
	put32(b, n);
	put32(b, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t h[RL_ENTRY_HDR] = {0};
		rl_put_u64(h, terms[i]);
		h[8] = types[i];
		rl_put_u32(h + 12, lens[i]);
		buf_append(b, h, sizeof h);
		body += rl_pad8(lens[i]);
	}
	/* The body length is known now: patch it once; the data follows. */
	rl_put_u32(b->data + at + 8, (uint32_t)body);
	return at;
}

void rl_enc_entry_data(struct buf *b, const void *data, uint32_t len)
{
	static const uint8_t zeros[8];
	buf_append(b, data, len);
	buf_append(b, zeros, rl_pad8(len) - len);
}

/* ---- decoder ---- */

static int bad(char *errmsg, const char *what, uint8_t type, uint32_t group)
{
	return err_set(errmsg, DOCRAFT_ECORRUPT, "record type %u of group %u: %s", type, group,
		       what);
}

static int decode_entries(struct rl_rec *r, char *errmsg)
{
	if (r->body_len < 16)
		return bad(errmsg, "short ENTRIES", r->type, r->group);
	r->first = rl_get_u64(r->body);
	r->n = rl_get_u32(r->body + 8);
	if (r->n == 0 || r->first == 0)
		return bad(errmsg, "ENTRIES without entries or at index 0", r->type, r->group);
	if ((uint64_t)r->n * RL_ENTRY_HDR > r->body_len - 16)
		return bad(errmsg, "ENTRIES headers past the record", r->type, r->group);
	uint64_t need = 16 + (uint64_t)r->n * RL_ENTRY_HDR;
	for (uint32_t i = 0; i < r->n; i++)
		need += rl_pad8(rl_get_u32(r->body + 16 + (size_t)RL_ENTRY_HDR * i + 12));
	if (need != r->body_len)
		return bad(errmsg, "ENTRIES data lengths do not add up", r->type, r->group);
	return 0;
}

int rl_rec_decode(const uint8_t *p, size_t avail, struct rl_rec *r, size_t *used, char *errmsg)
{
	memset(r, 0, sizeof *r);
	if (avail < RL_REC_HDR)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "record header cut short");
	r->type = p[0];
	r->group = rl_get_u32(p + 4);
	r->body_len = rl_get_u32(p + 8);
	if (r->body_len > avail - RL_REC_HDR)
		return bad(errmsg, "body past the batch", r->type, r->group);
	r->body = p + RL_REC_HDR;
	*used = RL_REC_HDR + (size_t)r->body_len;
	const uint8_t *q = r->body;
	switch (r->type) {
	case RL_REC_GROUP:
		if (r->body_len == 0 || r->body_len > RL_NAME_MAX)
			return bad(errmsg, "group name length", r->type, r->group);
		for (uint32_t i = 0; i < r->body_len; i++)
			if (q[i] < 0x20 || q[i] > 0x7e)
				return bad(errmsg, "group name not printable", r->type, r->group);
		r->name = (const char *)q;
		r->name_len = r->body_len;
		return 0;
	case RL_REC_TERM_VOTE:
		if (r->body_len != 16)
			return bad(errmsg, "TERM_VOTE length", r->type, r->group);
		r->term = rl_get_u64(q);
		r->vote = rl_get_u64(q + 8);
		return 0;
	case RL_REC_ENTRIES:
		return decode_entries(r, errmsg);
	case RL_REC_TRUNCATE:
		if (r->body_len != 8)
			return bad(errmsg, "TRUNCATE length", r->type, r->group);
		r->index = rl_get_u64(q);
		return 0;
	case RL_REC_SNAPSHOT:
		if (r->body_len < 40)
			return bad(errmsg, "short SNAPSHOT", r->type, r->group);
		r->index = rl_get_u64(q);
		r->term = rl_get_u64(q + 8);
		r->conf_index = rl_get_u64(q + 16);
		r->first_needed = rl_get_u64(q + 24);
		r->conf_len = rl_get_u32(q + 32);
		r->data_len = rl_get_u32(q + 36);
		if ((uint64_t)40 + r->conf_len + r->data_len != r->body_len || r->conf_len == 0)
			return bad(errmsg, "SNAPSHOT lengths", r->type, r->group);
		if (r->first_needed > r->index + 1)
			return bad(errmsg, "SNAPSHOT keeps entries past its index", r->type, r->group);
		r->conf = q + 40;
		r->data = q + 40 + r->conf_len;
		return 0;
	case RL_REC_REMOVE:
		if (r->body_len != 0)
			return bad(errmsg, "REMOVE length", r->type, r->group);
		return 0;
	default:
		return bad(errmsg, "unknown record type", r->type, r->group);
	}
}

void rl_entry_first(struct rl_entry_it *it, const struct rl_rec *r)
{
	it->r = r;
	it->i = 0;
	it->data_off = 16 + (size_t)RL_ENTRY_HDR * r->n;
}

bool rl_entry_next(struct rl_entry_it *it, struct rl_entry_view *e)
{
	if (it->i >= it->r->n)
		return false;
	const uint8_t *h = it->r->body + 16 + (size_t)RL_ENTRY_HDR * it->i;
	e->term = rl_get_u64(h);
	e->type = h[8];
	e->len = rl_get_u32(h + 12);
	e->body_off = it->data_off;
	it->data_off += rl_pad8(e->len);
	it->i++;
	return true;
}
