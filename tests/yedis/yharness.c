#include "yharness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docdb/dump.h"
#include "redis/slot.h"
#include "yedis/yedis_int.h"

void yh_open(struct yh *h, const char *tag)
{
	struct store_options o;
	memset(h, 0, sizeof *h);
	test_tmpdir_make(h->dir, tag);
	store_options_default(&o);
	CHECK_OK_MSG(store_open(h->dir, &o, &h->s, h->errmsg), h->errmsg);
	h->next_index = 1;
	batch_init(&h->b);
	buf_init(&h->last_batch);
	buf_init(&h->reply);
	buf_init(&h->out);
	buf_init(&h->dump);
}

void yh_close(struct yh *h)
{
	yedis_txn_free(h->t);
	h->t = NULL;
	store_close(h->s);
	h->s = NULL;
	test_tmpdir_remove(h->dir);
	batch_free(&h->b);
	buf_free(&h->last_batch);
	buf_free(&h->reply);
	buf_free(&h->out);
	buf_free(&h->dump);
}

void yh_begin(struct yh *h, uint64_t ht, bool writable)
{
	struct yedis_txn_options o = {
		.store = h->s,
		.ht = ht,
		.seed = h->next_index,
		.batch = writable ? &h->b : NULL,
		.default_ttl_ms = h->default_ttl_ms,
	};
	CHECK(h->t == NULL);
	batch_reset(&h->b);
	h->ht = ht;
	h->writable = writable;
	h->t = yedis_txn_new(&o);
}

/* Reads one RESP value at *p; appends its readable form. */
static void fmt_value(struct buf *out, const uint8_t **p, const uint8_t *end)
{
	const uint8_t *q = *p, *nl;
	long long n;
	char type;
	if (q >= end) {
		buf_printf(out, "<truncated>");
		return;
	}
	type = (char)*q++;
	nl = memchr(q, '\r', (size_t)(end - q));
	if (nl == NULL || nl + 1 >= end) {
		buf_printf(out, "<bad reply>");
		*p = end;
		return;
	}
	switch (type) {
	case '+':
		buf_append(out, q, (size_t)(nl - q));
		*p = nl + 2;
		return;
	case '-':
		buf_printf(out, "(error) ");
		buf_append(out, q, (size_t)(nl - q));
		*p = nl + 2;
		return;
	case ':':
		buf_append(out, q, (size_t)(nl - q));
		*p = nl + 2;
		return;
	case '$':
		n = strtoll((const char *)q, NULL, 10);
		q = nl + 2;
		if (n < 0) {
			buf_printf(out, "nil");
			*p = q;
			return;
		}
		if ((long long)(end - q) < n + 2) {
			buf_printf(out, "<truncated bulk>");
			*p = end;
			return;
		}
		buf_push(out, '"');
		for (long long i = 0; i < n; i++) {
			uint8_t c = q[i];
			if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
				buf_printf(out, "\\x%02x", c);
			else
				buf_push(out, c);
		}
		buf_push(out, '"');
		*p = q + n + 2;
		return;
	case '*':
		n = strtoll((const char *)q, NULL, 10);
		*p = nl + 2;
		if (n < 0) {
			buf_printf(out, "nil");
			return;
		}
		buf_push(out, '[');
		for (long long i = 0; i < n; i++) {
			if (i > 0)
				buf_printf(out, ", ");
			fmt_value(out, p, end);
		}
		buf_push(out, ']');
		return;
	default:
		buf_printf(out, "<bad type %c>", type);
		*p = end;
	}
}

void yh_format_reply(struct buf *out, const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	fmt_value(out, &p, end);
	if (p != end)
		buf_printf(out, " <+%zu bytes>", (size_t)(end - p));
}

const char *yh_runv(struct yh *h, uint32_t argc, const struct resp_arg *argv)
{
	CHECK(h->t != NULL);
	buf_reset(&h->reply);
	CHECK_OK_MSG(yedis_exec(h->t, argc, argv, &h->reply, h->errmsg), h->errmsg);
	buf_reset(&h->out);
	yh_format_reply(&h->out, h->reply.data, h->reply.len);
	return buf_cstr(&h->out);
}

const char *yh_run(struct yh *h, const char *line)
{
	struct resp_arg argv[64];
	uint32_t argc = 0;
	const char *p = line;
	while (*p != '\0') {
		const char *w;
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		CHECK(argc < 64);
		w = p;
		while (*p != '\0' && *p != ' ')
			p++;
		if (p - w == 2 && w[0] == '"' && w[1] == '"')
			argv[argc++] = (struct resp_arg){w, 0};
		else
			argv[argc++] = (struct resp_arg){w, (size_t)(p - w)};
	}
	CHECK(argc > 0);
	return yh_runv(h, argc, argv);
}

void yh_commit(struct yh *h)
{
	CHECK(h->t != NULL);
	yedis_txn_seal(h->t); /* as the tablet does before applying */
	yedis_txn_free(h->t);
	h->t = NULL;
	buf_reset(&h->last_batch);
	if (!h->writable || h->b.count == 0)
		return;
	buf_append(&h->last_batch, h->b.data.data, h->b.data.len);
	CHECK_OK_MSG(
		store_apply(h->s, h->b.data.data, h->b.data.len, h->ht, h->next_index++, h->errmsg),
		h->errmsg);
	batch_reset(&h->b);
}

const char *yh_cmd(struct yh *h, uint64_t ht, const char *line)
{
	yh_begin(h, ht, true);
	yh_run(h, line);
	yh_commit(h);
	return buf_cstr(&h->out);
}

const char *yh_read(struct yh *h, uint64_t ht, const char *line)
{
	yh_begin(h, ht, false);
	yh_run(h, line);
	yh_commit(h);
	return buf_cstr(&h->out);
}

void yh_hset(struct yh *h, uint64_t ht, const char *key, const char *field, const char *value)
{
	struct resp_arg k = {key, strlen(key)};
	struct pv f = pv_str(field), v = pv_str(value);
	struct yroot r;
	yh_begin(h, ht, true);
	CHECK_OK_MSG(yv_root(h->t, &k, &r, h->errmsg), h->errmsg);
	if (r.type == YT_NONE)
		yw_root(h->t, &k, YT_HASH, NULL, YEDIS_NO_TTL);
	yw_put(h->t, &k, &f, 1, &v);
	yh_commit(h);
}

void yh_label_ht(struct yh *h, uint64_t ht, const char *label)
{
	CHECK(h->nhts < 64);
	h->hts[h->nhts].ht = ht;
	snprintf(h->hts[h->nhts].label, sizeof h->hts[0].label, "%s", label);
	h->nhts++;
}

void yh_label_key(struct yh *h, const char *key, const char *label)
{
	CHECK(h->nhashes < 16);
	h->hashes[h->nhashes].hash = redis_slot_partition(redis_key_slot(key, strlen(key)));
	snprintf(h->hashes[h->nhashes].label, sizeof h->hashes[0].label, "%s", label);
	h->nhashes++;
}

static const char *hash_label(void *ctx, uint16_t hash)
{
	struct yh *h = ctx;
	for (size_t i = 0; i < h->nhashes; i++)
		if (h->hashes[i].hash == hash)
			return h->hashes[i].label;
	return NULL;
}

static const char *ht_label(void *ctx, uint64_t ht)
{
	struct yh *h = ctx;
	for (size_t i = 0; i < h->nhts; i++)
		if (h->hts[i].ht == ht)
			return h->hts[i].label;
	return NULL;
}

const char *yh_dump(struct yh *h)
{
	struct dump_opts o = {NULL, ht_label, hash_label, h, true, false};
	buf_reset(&h->dump);
	CHECK_OK_MSG(dump_store(h->s, &o, &h->dump, h->errmsg), h->errmsg);
	return buf_cstr(&h->dump);
}
