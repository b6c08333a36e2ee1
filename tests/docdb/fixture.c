#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/key.h"
#include "docdb/value.h"

bool fx_packed(void)
{
	const char *e = getenv("DOCRAFT_TEST_PACKED");
	return e != NULL && *e != '\0' && strcmp(e, "0") != 0;
}

void fx_open(struct fx *f, const char *tag)
{
	struct store_options o;
	memset(f, 0, sizeof *f);
	test_tmpdir_make(f->dir, tag);
	store_options_default(&o);
	CHECK_OK_MSG(store_open(f->dir, &o, &f->s, f->errmsg), f->errmsg);
	f->next_index = 1;
	buf_init(&f->dump);
	arena_init(&f->arena);
}

void fx_reopen(struct fx *f)
{
	struct store_options o;
	store_close(f->s);
	store_options_default(&o);
	CHECK_OK_MSG(store_open(f->dir, &o, &f->s, f->errmsg), f->errmsg);
}

void fx_close(struct fx *f)
{
	store_close(f->s);
	f->s = NULL;
	test_tmpdir_remove(f->dir);
	buf_free(&f->dump);
	arena_free(&f->arena);
}

void fx_put_path(struct batch *b, const struct buf *dk, const struct pv *sub, size_t nsub,
		 const struct docvalue *v)
{
	struct buf k = BUF_INIT, val = BUF_INIT;
	buf_append(&k, dk->data, dk->len);
	for (size_t i = 0; i < nsub; i++)
		key_append_pv(&k, &sub[i]);
	value_append(&val, v);
	batch_put(b, k.data, k.len, val.data, val.len);
	buf_free(&k);
	buf_free(&val);
}

void fx_apply(struct fx *f, struct batch *b, uint64_t ht)
{
	CHECK_OK_MSG(store_apply(f->s, b->data.data, b->data.len, ht, f->next_index++, f->errmsg),
		     f->errmsg);
	batch_reset(b);
}

void fx_label_ht(struct fx *f, uint64_t ht, const char *label)
{
	CHECK(f->nhts < 64);
	f->hts[f->nhts].ht = ht;
	snprintf(f->hts[f->nhts].label, sizeof f->hts[0].label, "%s", label);
	f->nhts++;
}

void fx_label_hash(struct fx *f, uint16_t hash, const char *label)
{
	CHECK(f->nhashes < 16);
	f->hashes[f->nhashes].hash = hash;
	snprintf(f->hashes[f->nhashes].label, sizeof f->hashes[0].label, "%s", label);
	f->nhashes++;
}

static const char *ht_label(void *ctx, uint64_t ht)
{
	struct fx *f = ctx;
	for (size_t i = 0; i < f->nhts; i++)
		if (f->hts[i].ht == ht)
			return f->hts[i].label;
	return NULL;
}

static const char *hash_label(void *ctx, uint16_t hash)
{
	struct fx *f = ctx;
	for (size_t i = 0; i < f->nhashes; i++)
		if (f->hashes[i].hash == hash)
			return f->hashes[i].label;
	return NULL;
}

const char *fx_dump(struct fx *f, const struct schema *s, bool redis)
{
	struct dump_opts o = {s, ht_label, hash_label, f, redis, false};
	buf_reset(&f->dump);
	CHECK_OK_MSG(dump_store(f->s, &o, &f->dump, f->errmsg), f->errmsg);
	return buf_cstr(&f->dump);
}

static void format_doc(struct buf *out, const struct docnode *n)
{
	if (n == NULL) {
		buf_printf(out, "NULL");
		return;
	}
	if (n->kind == VAL_PRIMITIVE) {
		pv_format(out, &n->value);
		return;
	}
	buf_push(out, '{');
	for (const struct docnode *c = n->children; c != NULL; c = c->next) {
		pv_format(out, &c->key);
		buf_printf(out, ": ");
		format_doc(out, c);
		if (c->next != NULL)
			buf_printf(out, ", ");
	}
	buf_push(out, '}');
}

const char *fx_doc(struct fx *f, const struct docnode *n)
{
	buf_reset(&f->dump);
	format_doc(&f->dump, n);
	return buf_cstr(&f->dump);
}

const char *fx_col(struct fx *f, const struct row *r, const char *col)
{
	return fx_doc(f, row_column_named(r, col));
}
