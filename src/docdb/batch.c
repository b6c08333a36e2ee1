#include "docdb/batch.h"

#include "common/check.h"
#include "common/err.h"

void batch_put(struct batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
	PRE(klen <= BATCH_MAX_KEY && vlen <= BATCH_MAX_VALUE);
	buf_append_le32(&b->data, (uint32_t)klen);
	buf_append(&b->data, key, klen);
	buf_append_le32(&b->data, (uint32_t)vlen);
	buf_append(&b->data, val, vlen);
	b->count++;
}

static int take(struct batch_iter *it, const uint8_t **p, size_t *len, uint32_t max)
{
	uint32_t n;
	if (it->end - it->p < 4)
		return -DOCRAFT_ECORRUPT;
	n = le32_load(it->p);
	if (n > max || (size_t)(it->end - it->p - 4) < n)
		return -DOCRAFT_ECORRUPT;
	*p = it->p + 4;
	*len = n;
	it->p += 4 + (size_t)n;
	return 0;
}

int batch_next(struct batch_iter *it, const uint8_t **key, size_t *klen, const uint8_t **val,
	       size_t *vlen)
{
	int rv;
	if (it->p == it->end)
		return 0;
	if ((rv = take(it, key, klen, BATCH_MAX_KEY)) != 0)
		return rv;
	if ((rv = take(it, val, vlen, BATCH_MAX_VALUE)) != 0)
		return rv;
	return 1;
}

int batch_validate(const void *data, size_t len, uint32_t *count, char *errmsg)
{
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint32_t n = 0;
	int rv;
	batch_iter_init(&it, data, len);
	while ((rv = batch_next(&it, &k, &kl, &v, &vl)) == 1)
		n++;
	if (rv < 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "malformed write batch: pair %u at offset %zu", n,
			       (size_t)(it.p - (const uint8_t *)data));
	*count = n;
	return 0;
}
