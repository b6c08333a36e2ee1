#include "tablet/entry.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/condition.h"

void entry_begin_v(struct buf *out, uint64_t ht, uint32_t n_requests, uint8_t version)
{
	PRE(out->len == 0 && (version == 2 || version == ENTRY_VERSION));
	buf_push(out, version);
	buf_append_be64(out, ht);
	buf_append_be32(out, n_requests);
}

void entry_begin(struct buf *out, uint64_t ht, uint32_t n_requests)
{
	entry_begin_v(out, ht, n_requests, 2);
}

static void add_head(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		     uint64_t seq, uint64_t min_running, enum entry_kind kind)
{
	buf_append(out, client_id, ENTRY_CLIENT_ID_LEN);
	buf_append_be64(out, seq);
	buf_append_be64(out, min_running);
	if (out->data[0] >= 3)
		buf_push(out, (uint8_t)kind);
}

void entry_add_request_if(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
			  uint64_t seq, uint64_t min_running, const void *cond, size_t cond_len,
			  const void *batch, size_t batch_len)
{
	bool v3 = out->data[0] >= 3;
	add_head(out, client_id, seq, min_running, cond_len > 0 ? ENTRY_KIND_COND : ENTRY_KIND_BATCH);
	if (!v3 || cond_len > 0) {
		buf_append_be32(out, (uint32_t)cond_len);
		if (cond_len > 0)
			buf_append(out, cond, cond_len);
	}
	buf_append_be32(out, (uint32_t)batch_len);
	buf_append(out, batch, batch_len);
}

void entry_add_request(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		       uint64_t seq, uint64_t min_running, const void *batch, size_t batch_len)
{
	entry_add_request_if(out, client_id, seq, min_running, NULL, 0, batch, batch_len);
}

void entry_add_redis(struct buf *out, const uint8_t client_id[ENTRY_CLIENT_ID_LEN],
		     uint64_t seq, uint64_t min_running, const void *cmds, size_t len)
{
	PRE(out->data[0] >= 3);
	add_head(out, client_id, seq, min_running, ENTRY_KIND_REDIS);
	buf_append_be32(out, (uint32_t)len);
	buf_append(out, cmds, len);
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
	if (p[0] < 1 || p[0] > ENTRY_VERSION)
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


static int corrupt(struct entry_reader *r, char *errmsg, const char *what)
{
	err_set(errmsg, DOCRAFT_ECORRUPT, "raft entry: request %u: %s", r->read, what);
	return -DOCRAFT_ECORRUPT;
}

int entry_next(struct entry_reader *r, struct entry_request *out, char *errmsg)
{
	size_t left = (size_t)(r->end - r->p);
	const uint8_t *p;
	uint32_t count;
	unsigned kind = ENTRY_KIND_BATCH;
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
	memset(out, 0, sizeof *out);
	memcpy(out->client_id, r->p, ENTRY_CLIENT_ID_LEN);
	out->seq = be64_load(r->p + 16);
	out->min_running = be64_load(r->p + 24);
	p = r->p + ENTRY_CLIENT_ID_LEN + 16;
	if (r->version >= 3) {
		if (p == r->end)
			return truncated(r, errmsg);
		kind = *p++;
		if (kind > ENTRY_KIND_REDIS)
			return corrupt(r, errmsg, "unknown kind");
	}
	if (kind == ENTRY_KIND_REDIS) {
		if (!be32_field_take(&p, r->end, &out->redis, &out->redis_len))
			return truncated(r, errmsg);
		if (entry_redis_validate(out->redis, out->redis_len, &out->redis_n, errmsg) != 0)
			return -DOCRAFT_ECORRUPT;
	} else {
		if (r->version == 2 || kind == ENTRY_KIND_COND) {
			const uint8_t *c;
			size_t clen;
			if (!be32_field_take(&p, r->end, &c, &clen))
				return truncated(r, errmsg);
			if (clen == 0 && kind == ENTRY_KIND_COND)
				return corrupt(r, errmsg, "a conditional request without conditions");
			if (clen > 0) {
				if (r->n_requests != 1) {
					err_set(errmsg, DOCRAFT_ECORRUPT,
						"raft entry: conditional request %u is one of %u",
						r->read, r->n_requests);
					return -DOCRAFT_ECORRUPT;
				}
				if (condition_validate(c, clen, errmsg) != 0)
					return -DOCRAFT_ECORRUPT;
				out->cond = c;
				out->cond_len = clen;
				kind = ENTRY_KIND_COND;
			}
		}
		if (!be32_field_take(&p, r->end, &out->batch, &out->batch_len))
			return truncated(r, errmsg);
		if (batch_validate(out->batch, out->batch_len, &count, errmsg) != 0)
			return -DOCRAFT_ECORRUPT;
	}
	r->kinds |= 1u << kind;
	if ((r->kinds & (1u << ENTRY_KIND_REDIS)) && (r->kinds & (1u << ENTRY_KIND_BATCH)))
		return corrupt(r, errmsg, "redis and batch requests in one entry");
	out->kind = (enum entry_kind)kind;
	r->p = p;
	r->read++;
	return 1;
}

/* ---- Redis commands ---- */

void entry_redis_begin(struct buf *out, uint32_t ncmds)
{
	buf_append_be32(out, ncmds);
}

void entry_redis_command(struct buf *out, uint32_t argc)
{
	buf_append_be32(out, argc);
}

void entry_redis_arg(struct buf *out, const void *p, size_t n)
{
	buf_append_be32(out, (uint32_t)n);
	buf_append(out, p, n);
}

int entry_redis_validate(const void *data, size_t len, uint32_t *n, char *errmsg)
{
	const uint8_t *p = data, *end = p + len;
	uint32_t ncmds;
	if (len < 4)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "redis commands: %zu bytes", len);
	ncmds = be32_load(p);
	p += 4;
	if (ncmds == 0 || ncmds > ENTRY_REDIS_MAX_COMMANDS)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "redis commands: %u commands (1..%u)",
			       ncmds, ENTRY_REDIS_MAX_COMMANDS);
	for (uint32_t i = 0; i < ncmds; i++) {
		uint32_t argc;
		if (end - p < 4)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "redis command %u truncated", i);
		argc = be32_load(p);
		p += 4;
		if (argc == 0)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "redis command %u has no words", i);
		/* Each word takes 4 bytes at least: a huge argc ends here. */
		if ((size_t)(end - p) / 4 < argc)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "redis command %u truncated", i);
		for (uint32_t j = 0; j < argc; j++) {
			const uint8_t *a;
			size_t alen;
			if (!be32_field_take(&p, end, &a, &alen))
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "redis command %u truncated in word %u", i, j);
		}
	}
	if (p != end)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "redis commands: %zu stray bytes",
			       (size_t)(end - p));
	*n = ncmds;
	return 0;
}

void entry_redis_iter_init(struct entry_redis_iter *it, const void *data, size_t len)
{
	it->p = (const uint8_t *)data + 4;
	it->end = (const uint8_t *)data + len;
	it->argv = NULL;
	it->cap = 0;
}

bool entry_redis_iter_next(struct entry_redis_iter *it, uint32_t *argc,
			   const struct resp_arg **argv)
{
	uint32_t n;
	if (it->p >= it->end)
		return false;
	n = be32_load(it->p);
	it->p += 4;
	if (n > it->cap) {
		it->cap = n < 8 ? 8 : n;
		it->argv = xrealloc(it->argv, it->cap * sizeof *it->argv);
	}
	for (uint32_t j = 0; j < n; j++) {
		const uint8_t *a;
		size_t alen;
		bool ok = be32_field_take(&it->p, it->end, &a, &alen);
		ASSERT(ok); /* validated (the pre-condition) */
		it->argv[j].p = (const char *)a;
		it->argv[j].n = alen;
	}
	*argc = n;
	*argv = it->argv;
	return true;
}

void entry_redis_iter_free(struct entry_redis_iter *it)
{
	free(it->argv);
	it->argv = NULL;
	it->cap = 0;
}
