/* Replica checksums; the contract and the exact definition are in
 * checksum.h. Rows come from reader_scan over the whole store (hash_key
 * NULL) at the checksum's read time, one page per step; the paging state
 * keeps the read time, so every page sees the same snapshot. */
#include "docdb/checksum.h"

#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hlc.h"

/* ---- FNV-1a 64 ---------------------------------------------------------- */

static void fnv_bytes(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t x = *h;
	for (size_t i = 0; i < n; i++) {
		x ^= b[i];
		x *= CHECKSUM_FNV_PRIME;
	}
	*h = x;
}

static void fnv_byte(uint64_t *h, uint8_t b)
{
	fnv_bytes(h, &b, 1);
}

static void fnv_be64(uint64_t *h, uint64_t v)
{
	uint8_t b[8];
	be64_store(b, v);
	fnv_bytes(h, b, sizeof b);
}

static void fnv_be32(uint64_t *h, uint32_t v)
{
	uint8_t b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (24 - 8 * i));
	fnv_bytes(h, b, sizeof b);
}

/* ---- VAL and COL -------------------------------------------------------- */

/* Each type's tag byte (the key encoding's ascending type byte); 0: none
 * (PV_BOOL's tag is its value, 'T' or 'F'). */
static const uint8_t val_tag[PV_TYPE_COUNT] = {
	[PV_NULL] = '$',	 [PV_INT32] = 'H',    [PV_INT64] = 'I',
	[PV_UINT32] = 'O',	 [PV_UINT64] = 'U',   [PV_FLOAT] = 'C',
	[PV_DOUBLE] = 'D',	 [PV_STRING] = 'S',   [PV_TIMESTAMP] = 's',
	[PV_UUID] = '_',	 [PV_COLUMN_ID] = 'K', [PV_SYSTEM_COLUMN_ID] = 'J',
	[PV_ARRAY_INDEX] = '[',	 [PV_REDIS_COUNTER] = '%', [PV_SS_FORWARD] = '&',
	[PV_SS_REVERSE] = '\'',
};

/* The tag, then the payload: integers of every width as BE64 (int32
 * sign-extended), floats as their bits, strings length-prefixed. An
 * unknown type hashes as NULL. */
static void hash_val(uint64_t *h, const struct pv *v)
{
	if (v->type == PV_BOOL) {
		fnv_byte(h, v->v.b ? 'T' : 'F');
		return;
	}
	if (v->type >= PV_TYPE_COUNT || v->type == PV_NULL) {
		fnv_byte(h, '$');
		return;
	}
	fnv_byte(h, val_tag[v->type]);
	switch (v->type) {
	case PV_INT32:
		fnv_be64(h, (uint64_t)(int64_t)v->v.i32);
		break;
	case PV_UINT32:
		fnv_be64(h, v->v.u32);
		break;
	case PV_UINT64:
		fnv_be64(h, v->v.u64);
		break;
	case PV_FLOAT:
		fnv_be32(h, pv_float_bits(v->v.f));
		break;
	case PV_DOUBLE:
		fnv_be64(h, pv_double_bits(v->v.d));
		break;
	case PV_STRING:
		fnv_be64(h, v->v.s.len);
		if (v->v.s.len > 0)
			fnv_bytes(h, v->v.s.p, v->v.s.len);
		break;
	case PV_UUID:
		fnv_bytes(h, v->v.uuid, sizeof v->v.uuid);
		break;
	case PV_REDIS_COUNTER:
	case PV_SS_FORWARD:
	case PV_SS_REVERSE:
		break; /* the tag is the whole value */
	default: /* PV_INT64, PV_TIMESTAMP, the column ids, PV_ARRAY_INDEX */
		fnv_be64(h, (uint64_t)v->v.i64);
		break;
	}
}

static void hash_col(uint64_t *h, const struct column *c, const struct docnode *n)
{
	uint8_t tag;
	if (!col_type_is_collection((enum col_type)c->type)) {
		if (n == NULL || n->kind != VAL_PRIMITIVE || n->value.type == PV_NULL) {
			fnv_byte(h, 'N');
		} else {
			fnv_byte(h, 'P');
			hash_val(h, &n->value);
		}
		return;
	}
	if (n == NULL || n->n_children == 0) {
		fnv_byte(h, 'N'); /* an empty collection reads as NULL */
		return;
	}
	tag = c->type == CT_MAP ? 'M' : c->type == CT_SET ? 'S' : 'L';
	fnv_byte(h, tag);
	fnv_be64(h, n->n_children);
	for (const struct docnode *e = n->children; e != NULL; e = e->next) {
		if (c->type == CT_LIST) {
			hash_val(h, &e->value);
		} else {
			hash_val(h, &e->key);
			if (c->type == CT_MAP)
				hash_val(h, &e->value);
		}
	}
}

void checksum_add_row(struct checksum *c, const struct row *r)
{
	const struct schema *s = r->schema;
	size_t nk = schema_nkeys(s);
	fnv_byte(&c->hash, 'R');
	for (size_t i = 0; i < nk; i++)
		hash_val(&c->hash, &r->key[i]);
	for (size_t i = nk; i < s->ncols; i++)
		hash_col(&c->hash, &s->cols[i], row_column(r, &s->cols[i]));
	c->rows++;
}

/* ---- scanning ------------------------------------------------------------- */

void checksum_init(struct checksum *c, uint64_t read_ht)
{
	memset(c, 0, sizeof *c);
	c->read_ht = read_ht;
	c->hash = CHECKSUM_FNV_OFFSET;
	buf_init(&c->paging);
}

void checksum_free(struct checksum *c)
{
	buf_free(&c->paging);
}

int checksum_step(struct checksum *c, struct store *s, const struct schema *schema,
		  size_t max_rows, char *errmsg)
{
	struct arena a = ARENA_INIT;
	struct scan_spec spec;
	struct row *rows = NULL;
	size_t n = 0;
	int rv;

	if (c->done)
		return 0;
	if (c->read_ht == 0 || c->read_ht >= HT_INVALID)
		return err_set(errmsg, DOCRAFT_EINVAL, "invalid read time %llu",
			       (unsigned long long)c->read_ht);
	if (c->started && c->paging.len == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "checksum: a failed checksum was resumed");
	memset(&spec, 0, sizeof spec);
	spec.read_ht = c->read_ht;
	spec.limit = max_rows != 0 ? max_rows : CHECKSUM_PAGE_ROWS;
	spec.paging = c->paging.len > 0 ? c->paging.data : NULL;
	spec.paging_len = c->paging.len;
	c->started = true;
	/* reader_scan consumes the state before it refills the same buffer. */
	rv = reader_scan(s, schema, &spec, &a, &rows, &n, &c->paging, errmsg);
	if (rv == 0) {
		for (size_t i = 0; i < n; i++)
			checksum_add_row(c, &rows[i]);
		if (c->paging.len == 0)
			c->done = true;
	} else {
		buf_reset(&c->paging);
	}
	arena_free(&a);
	return rv;
}

int checksum_store(struct store *s, const struct schema *schema, uint64_t read_ht,
		   uint64_t *sum, uint64_t *rows, char *errmsg)
{
	struct checksum c;
	int rv = 0;
	checksum_init(&c, read_ht);
	while (!c.done && (rv = checksum_step(&c, s, schema, 0, errmsg)) == 0)
		;
	if (rv == 0) {
		*sum = c.hash;
		*rows = c.rows;
	}
	checksum_free(&c);
	return rv;
}
