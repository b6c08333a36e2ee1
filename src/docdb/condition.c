/* Conditions of conditional writes; the contract and the layout are in
 * condition.h. */
#include "docdb/condition.h"

#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/value.h"

void condition_encode(struct buf *out, const struct condition *c, size_t n)
{
	struct buf v = BUF_INIT;
	PRE(n >= 1 && n <= CONDITION_MAX);
	buf_append_be32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		PRE(c[i].column_id >= 0);
		PRE(c[i].dockey_len > 0 &&
		    dockey_prefix_len(c[i].dockey, c[i].dockey_len) == c[i].dockey_len);
		buf_append_be32(out, (uint32_t)c[i].dockey_len);
		buf_append(out, c[i].dockey, c[i].dockey_len);
		buf_append_be32(out, (uint32_t)c[i].column_id);
		buf_push(out, c[i].has_value ? 1 : 0);
		if (!c[i].has_value)
			continue;
		PRE(c[i].value.type != PV_NULL);
		buf_reset(&v);
		value_append_pv(&v, &c[i].value);
		buf_append_be32(out, (uint32_t)v.len);
		buf_append(out, v.data, v.len);
	}
	buf_free(&v);
}


static bool value_type_ok(uint8_t t)
{
	switch (t) {
	case PV_BOOL:
	case PV_INT32:
	case PV_INT64:
	case PV_UINT32:
	case PV_UINT64:
	case PV_FLOAT:
	case PV_DOUBLE:
	case PV_STRING:
	case PV_TIMESTAMP:
	case PV_UUID:
		return true;
	default:
		return false;
	}
}

/* Decodes into out (when not NULL) or only checks. */
static int decode(const uint8_t *p, size_t len, struct condition *out, size_t cap, size_t *n,
		  char *errmsg)
{
	const uint8_t *end = p + len;
	uint32_t count;
	if (len < 4)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "condition blob of %zu bytes", len);
	count = be32_load(p);
	p += 4;
	if (count == 0 || count > CONDITION_MAX)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "%u conditions (1..%d allowed)", count,
			       CONDITION_MAX);
	for (uint32_t i = 0; i < count; i++) {
		struct condition c;
		const uint8_t *f;
		size_t flen;
		uint32_t id;
		memset(&c, 0, sizeof c);
		if (!be32_field_take(&p, end, &f, &flen))
			return err_set(errmsg, DOCRAFT_ECORRUPT, "condition %u: truncated DocKey",
				       i + 1);
		if (flen == 0 || dockey_prefix_len(f, flen) != flen)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "condition %u: not one well-formed DocKey", i + 1);
		c.dockey = f;
		c.dockey_len = flen;
		if (end - p < 5)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "condition %u: truncated", i + 1);
		id = be32_load(p);
		if (id > INT32_MAX)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "condition %u: column id %u", i + 1,
				       id);
		c.column_id = (int32_t)id;
		if (p[4] > 1)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "condition %u: unknown kind %u",
				       i + 1, p[4]);
		c.has_value = p[4] == 1;
		p += 5;
		if (c.has_value) {
			if (!be32_field_take(&p, end, &f, &flen))
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "condition %u: truncated value", i + 1);
			if (value_decode_pv(f, flen, &c.value) != 0 || !value_type_ok(c.value.type))
				return err_set(errmsg, DOCRAFT_ECORRUPT,
					       "condition %u: not a primitive value", i + 1);
		}
		if (out != NULL && i < cap)
			out[i] = c;
	}
	if (p != end)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "%zu stray bytes after the conditions",
			       (size_t)(end - p));
	*n = count;
	return 0;
}

int condition_decode(const uint8_t *p, size_t len, struct arena *a, struct condition **out,
		     size_t *n, char *errmsg)
{
	struct condition *c;
	size_t count = 0;
	int rv;
	*out = NULL;
	*n = 0;
	/* The count is checked (<= CONDITION_MAX) before anything is stored. */
	if (len >= 4 && be32_load(p) >= 1 && be32_load(p) <= CONDITION_MAX)
		c = arena_alloc(a, be32_load(p) * sizeof *c);
	else
		c = NULL;
	if ((rv = decode(p, len, c, c != NULL ? be32_load(p) : 0, &count, errmsg)) != 0)
		return rv;
	*out = c;
	*n = count;
	return 0;
}

int condition_validate(const uint8_t *p, size_t len, char *errmsg)
{
	size_t n;
	return decode(p, len, NULL, 0, &n, errmsg);
}

/* Whether the column node is a live value equal to c's expectation. */
static bool holds(const struct condition *c, const struct docnode *node)
{
	bool live = node != NULL && node->kind == VAL_PRIMITIVE && node->value.type != PV_NULL;
	if (!c->has_value)
		return !live;
	return live && pv_equal(&node->value, &c->value);
}

int condition_eval(struct store *s, const struct schema *schema, const uint8_t *p, size_t len,
		   uint64_t read_ht, bool *result, char *errmsg)
{
	struct arena a = ARENA_INIT;
	struct condition *c;
	size_t n;
	int rv;

	*result = false;
	if ((rv = condition_decode(p, len, &a, &c, &n, errmsg)) != 0)
		goto out;
	*result = true;
	for (size_t i = 0; i < n && *result; i++) {
		const struct docnode *node;
		struct pv col = pv_column(c[i].column_id);
		if (schema != NULL)
			rv = reader_get_table_doc(s, schema, c[i].dockey, c[i].dockey_len, &col, 1,
						  read_ht, &a, &node, errmsg);
		else
			rv = reader_get_doc(s, c[i].dockey, c[i].dockey_len, &col, 1, read_ht,
					    store_default_ttl_ms(s), &a, &node, errmsg);
		if (rv != 0) {
			*result = false;
			goto out;
		}
		*result = holds(&c[i], node);
	}
out:
	arena_free(&a);
	return rv;
}
