#include "tablet/entry.h"

#include <stdbool.h>
#include <string.h>

#include "common/err.h"
#include "docdb/batch.h"

void entry_begin(struct buf *out, uint64_t ht, uint32_t n_requests)
{
	buf_push(out, ENTRY_VERSION);
	buf_append_be64(out, ht);
	buf_append_be32(out, n_requests);
}

void entry_add_request(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq, uint64_t min_running, const void *batch, size_t batch_len)
{
	buf_append(out, client_id, ENTRY_CLIENT_ID_LEN);
	buf_append_be64(out, seq);
	buf_append_be64(out, min_running);
	buf_append_be32(out, (uint32_t)batch_len);
	buf_append(out, batch, batch_len);
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
	if (p[0] != ENTRY_VERSION)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry version %u is unknown", p[0]);
	r->ht = be64_load(p + 1);
	r->n_requests = be32_load(p + 9);
	r->p = p + ENTRY_HEADER_SIZE;
	r->end = p + len;
	return 0;
}

int entry_next(struct entry_reader *r, struct entry_request *out, char *errmsg)
{
	size_t left = (size_t)(r->end - r->p);
	uint32_t blen, count;
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
	if (left < entry_request_size(0)) {
		err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry truncated in request %u", r->read);
		return -DOCRAFT_ECORRUPT;
	}
	memcpy(out->client_id, r->p, ENTRY_CLIENT_ID_LEN);
	out->seq = be64_load(r->p + 16);
	out->min_running = be64_load(r->p + 24);
	blen = be32_load(r->p + 32);
	if (blen > left - entry_request_size(0)) {
		err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry truncated in request %u", r->read);
		return -DOCRAFT_ECORRUPT;
	}
	out->batch = r->p + entry_request_size(0);
	out->batch_len = blen;
	if (batch_validate(out->batch, blen, &count, errmsg) != 0)
		return -DOCRAFT_ECORRUPT;
	r->p += entry_request_size(blen);
	r->read++;
	return 1;
}
