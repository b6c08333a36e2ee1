#include "tablet/entry.h"

#include <stdbool.h>
#include <string.h>

#include "common/err.h"
#include "docdb/batch.h"
#include "docdb/condition.h"

void entry_begin(struct buf *out, uint64_t ht, uint32_t n_requests)
{
	buf_push(out, ENTRY_VERSION);
	buf_append_be64(out, ht);
	buf_append_be32(out, n_requests);
}

void entry_add_request_if(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
			  uint64_t seq, uint64_t min_running, const void *cond, size_t cond_len,
			  const void *batch, size_t batch_len)
{
	buf_append(out, client_id, ENTRY_CLIENT_ID_LEN);
	buf_append_be64(out, seq);
	buf_append_be64(out, min_running);
	buf_append_be32(out, (uint32_t)cond_len);
	if (cond_len > 0)
		buf_append(out, cond, cond_len);
	buf_append_be32(out, (uint32_t)batch_len);
	buf_append(out, batch, batch_len);
}

void entry_add_request(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq, uint64_t min_running, const void *batch, size_t batch_len)
{
	entry_add_request_if(out, client_id, seq, min_running, NULL, 0, batch, batch_len);
}

void entry_finish(struct buf *out)
{
	static const uint8_t zeros[8];
	buf_append(out, zeros, (8 - out->len % 8) % 8);
}

int entry_open(struct entry_reader *r, const void *data, size_t len, char *errmsg)
{
	const uint8_t *p = data;
	memset(r, 0, sizeof *r);
	if (len < ENTRY_HEADER_SIZE)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry of %zu bytes is too short", len);
	if (p[0] != 1 && p[0] != ENTRY_VERSION)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry version %u is unknown", p[0]);
	r->version = p[0];
	r->ht = be64_load(p + 1);
	r->n_requests = be32_load(p + 9);
	r->p = p + ENTRY_HEADER_SIZE;
	r->end = p + len;
	return 0;
}

static int truncated(struct entry_reader *r, char *errmsg)
{
	err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry truncated in request %u", r->read);
	return -DOCRAFT_ECORRUPT;
}


int entry_next(struct entry_reader *r, struct entry_request *out, char *errmsg)
{
	size_t left = (size_t)(r->end - r->p);
	const uint8_t *p;
	uint32_t count;
	if (r->read == r->n_requests) {
		bool padding = left < 8;
		for (size_t i = 0; padding && i < left; i++)
			padding = r->p[i] == 0;
		if (!padding) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "%zu stray bytes after the last request",
				left);
			return -DOCRAFT_ECORRUPT;
		}
		return 0;
	}
	if (left < ENTRY_CLIENT_ID_LEN + 16)
		return truncated(r, errmsg);
	memcpy(out->client_id, r->p, ENTRY_CLIENT_ID_LEN);
	out->seq = be64_load(r->p + 16);
	out->min_running = be64_load(r->p + 24);
	p = r->p + ENTRY_CLIENT_ID_LEN + 16;
	out->cond = NULL;
	out->cond_len = 0;
	if (r->version >= 2) {
		const uint8_t *c;
		size_t clen;
		if (!be32_field_take(&p, r->end, &c, &clen))
			return truncated(r, errmsg);
		if (clen > 0) {
			if (r->n_requests != 1) {
				err_set(errmsg, DOCRAFT_ECORRUPT,
					"raft entry: conditional request %u is one of %u", r->read,
					r->n_requests);
				return -DOCRAFT_ECORRUPT;
			}
			if (condition_validate(c, clen, errmsg) != 0)
				return -DOCRAFT_ECORRUPT;
			out->cond = c;
			out->cond_len = clen;
		}
	}
	if (!be32_field_take(&p, r->end, &out->batch, &out->batch_len))
		return truncated(r, errmsg);
	if (batch_validate(out->batch, out->batch_len, &count, errmsg) != 0)
		return -DOCRAFT_ECORRUPT;
	r->p = p;
	r->read++;
	return 1;
}
