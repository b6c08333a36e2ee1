#include "docdb/packed.h"

#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "docdb/varint.h"
#include "docraft/error.h"

void packed_encode(struct buf *out, uint32_t version, const struct docvalue *const *cols,
		   size_t n)
{
	size_t offsets, data, end = 0;
	uvarint_append(out, version);
	offsets = out->len;
	for (size_t i = 0; i < n; i++)
		buf_append_le32(out, 0);
	data = out->len;
	for (size_t i = 0; i < n; i++) {
		if (cols[i] != NULL) {
			PRE(cols[i]->kind == VAL_PRIMITIVE && cols[i]->prim.type != PV_NULL);
			value_append(out, cols[i]);
		}
		end = out->len - data;
		PRE(end <= UINT32_MAX);
		out->data[offsets + 4 * i] = (uint8_t)end;
		out->data[offsets + 4 * i + 1] = (uint8_t)(end >> 8);
		out->data[offsets + 4 * i + 2] = (uint8_t)(end >> 16);
		out->data[offsets + 4 * i + 3] = (uint8_t)(end >> 24);
	}
}

size_t packed_value_size(const struct docvalue *v)
{
	struct docvalue head = *v;
	struct buf b = BUF_INIT;
	size_t n;
	/* A string is 'S' + its bytes: measure the rest without copying them. */
	if (v->kind == VAL_PRIMITIVE && v->prim.type == PV_STRING)
		head.prim = pv_null(); /* '$': one byte, like 'S' */
	value_append(&b, &head);
	n = b.len;
	buf_free(&b);
	if (v->kind == VAL_PRIMITIVE && v->prim.type == PV_STRING)
		n += v->prim.v.s.len;
	return n;
}

int packed_version(const uint8_t *p, size_t len, uint32_t *version)
{
	const uint8_t *s = p;
	uint64_t v;
	if (uvarint_decode(&s, p + len, &v) != 0 || v > UINT32_MAX)
		return DOCRAFT_ECORRUPT;
	*version = (uint32_t)v;
	return 0;
}

int packed_parse(const uint8_t *p, size_t len, size_t n, struct packed_row *out)
{
	const uint8_t *s = p, *end = p + len;
	uint64_t v;
	uint32_t prev = 0;
	memset(out, 0, sizeof *out);
	if (uvarint_decode(&s, end, &v) != 0 || v > UINT32_MAX)
		return DOCRAFT_ECORRUPT;
	if (n > (size_t)(end - s) / 4)
		return DOCRAFT_ECORRUPT;
	out->version = (uint32_t)v;
	out->n = n;
	out->offsets = s;
	out->data = s + 4 * n;
	out->data_len = (size_t)(end - out->data);
	for (size_t i = 0; i < n; i++) {
		uint32_t o = le32_load(out->offsets + 4 * i);
		if (o < prev || o > out->data_len)
			return DOCRAFT_ECORRUPT;
		prev = o;
	}
	if ((size_t)prev != out->data_len)
		return DOCRAFT_ECORRUPT;
	return 0;
}

int packed_parse_schema(const uint8_t *p, size_t len, const struct schema *s,
			struct packed_row *out, const struct schema_version **ver, char *errmsg)
{
	uint32_t version;
	const struct schema_version *sv;
	*ver = NULL;
	if (packed_version(p, len, &version) != 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "packed row without a schema version");
	if ((sv = schema_version_get(s, version)) == NULL)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "packed row of schema version %u, unknown to table %s (at version %u)",
			       version, s->table, s->version);
	if (packed_parse(p, len, sv->n, out) != 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "malformed packed row (schema version %u, %zu columns)", version, sv->n);
	*ver = sv;
	return 0;
}

int packed_column(const struct packed_row *r, size_t i, struct docvalue *out, bool *is_null)
{
	uint32_t start, end;
	PRE(i < r->n);
	start = i == 0 ? 0 : le32_load(r->offsets + 4 * (i - 1));
	end = le32_load(r->offsets + 4 * i);
	memset(out, 0, sizeof *out);
	/* packed_parse checked the offsets; checked again, so that a row that
	 * was not parsed cannot read out of bounds. */
	if (start > end || end > r->data_len)
		return DOCRAFT_ECORRUPT;
	*is_null = start == end;
	if (*is_null)
		return 0;
	if (value_decode(r->data + start, end - start, out) != 0 || out->kind != VAL_PRIMITIVE ||
	    out->prim.type == PV_NULL || out->merge_flags != 0)
		return DOCRAFT_ECORRUPT;
	return 0;
}
