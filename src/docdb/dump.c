#include "docdb/dump.h"

#include <inttypes.h>

#include "common/arena.h"
#include "common/hlc.h"
#include "docdb/key.h"
#include "docdb/packed.h"
#include "docdb/value.h"

static void put_pv(struct buf *out, const struct pv *v, const struct dump_opts *o)
{
	if (o->redis && v->type == PV_STRING) {
		buf_append(out, v->v.s.p, v->v.s.len);
		return;
	}
	pv_format(out, v);
}

static void put_subkey(struct buf *out, const struct pv *v, const struct dump_opts *o)
{
	if (v->type == PV_SYSTEM_COLUMN_ID && v->v.i64 == LIVENESS_COLUMN_ID) {
		buf_printf(out, "liveness_column_id");
		return;
	}
	if (v->type == PV_COLUMN_ID && o->schema != NULL) {
		const struct column *c = schema_find_id(o->schema, (int32_t)v->v.i64);
		if (c != NULL) {
			buf_printf(out, "%s_column_id", c->name);
			return;
		}
	}
	put_pv(out, v, o);
}

static void put_ht(struct buf *out, struct docht d, const struct dump_opts *o)
{
	const char *label = o->ht_label ? o->ht_label(o->ctx, d.ht) : NULL;
	if (label != NULL)
		buf_printf(out, "%s", label);
	else
		buf_printf(out, "HT(%" PRIu64 ".%u)", ht_physical(d.ht), ht_logical(d.ht));
	if (o->show_write_id)
		buf_printf(out, " w%u", d.write_id);
}

static const char *marker(uint8_t kind, bool redis)
{
	switch (kind) {
	case VAL_TOMBSTONE: return redis ? "Tombstone" : "[DELETE]";
	case VAL_OBJECT: return redis ? "[Redis-Hash-Type]" : "{}";
	case VAL_ARRAY: return "[]";
	case VAL_REDIS_SET: return "[Redis-Set-Type]";
	case VAL_REDIS_LIST: return "[Redis-List-Type]";
	case VAL_REDIS_TS: return "[Redis-TS-Type]";
	case VAL_REDIS_SORTED_SET: return "[Redis-SortedSet-Type]";
	default: return "[?]";
	}
}

static void put_control(struct buf *out, const struct docvalue *v, const struct dump_opts *o)
{
	if (v->merge_flags)
		buf_printf(out, "(MERGE = %" PRIu64 ") ", v->merge_flags);
	if (v->has_ttl) {
		if (o->redis && v->ttl_ms % 1000 == 0)
			buf_printf(out, "%" PRId64 ", ", v->ttl_ms / 1000);
		else if (o->redis)
			buf_printf(out, "%" PRId64 "ms, ", v->ttl_ms);
		else if (v->ttl_ms % 1000 == 0)
			buf_printf(out, "(TTL = %" PRId64 ") ", v->ttl_ms / 1000);
		else
			buf_printf(out, "(TTL = %" PRId64 "ms) ", v->ttl_ms);
	}
	if (v->has_user_ts)
		buf_printf(out, "(TIMESTAMP = %" PRId64 ") ", v->user_ts);
}

/* [PACKED ROW v1: msg='msg1', views=(TTL = 60) 10, category=NULL] with a
 * schema that knows the version (dropped columns as col(<id>)), else
 * [PACKED ROW v1, 20 bytes]. */
static void put_packed(struct buf *out, const struct docvalue *v, const struct dump_opts *o)
{
	const struct schema_version *sv = NULL;
	struct packed_row r;
	uint32_t version;
	if (packed_version(v->packed, v->packed_len, &version) != 0) {
		buf_printf(out, "[PACKED ROW <corrupt %zu bytes>]", v->packed_len);
		return;
	}
	if (o->schema != NULL)
		sv = schema_version_get(o->schema, version);
	if (sv == NULL) {
		buf_printf(out, "[PACKED ROW v%u, %zu bytes]", version, v->packed_len);
		return;
	}
	if (packed_parse(v->packed, v->packed_len, sv->n, &r) != 0) {
		buf_printf(out, "[PACKED ROW v%u <corrupt %zu bytes>]", version, v->packed_len);
		return;
	}
	buf_printf(out, "[PACKED ROW v%u", version);
	for (size_t i = 0; i < sv->n; i++) {
		const struct column *c = schema_find_id(o->schema, sv->ids[i]);
		struct docvalue cv;
		bool is_null;
		buf_printf(out, "%s", i == 0 ? ": " : ", ");
		if (c != NULL)
			buf_printf(out, "%s=", c->name);
		else
			buf_printf(out, "col(%d)=", sv->ids[i]);
		if (packed_column(&r, i, &cv, &is_null) != 0) {
			buf_printf(out, "<corrupt>");
		} else if (is_null) {
			buf_printf(out, "NULL");
		} else {
			put_control(out, &cv, o);
			put_pv(out, &cv.prim, o);
		}
	}
	buf_push(out, ']');
}

static void put_value(struct buf *out, const uint8_t *val, size_t vlen, const struct dump_opts *o)
{
	struct docvalue v;
	if (value_decode(val, vlen, &v) != 0) {
		buf_printf(out, "<corrupt value of %zu bytes>", vlen);
		return;
	}
	put_control(out, &v, o);
	if (v.kind == VAL_PRIMITIVE) {
		if (v.prim.type == PV_NULL)
			buf_printf(out, "[NULL]");
		else
			put_pv(out, &v.prim, o);
	} else if (v.kind == VAL_PACKED_ROW) {
		put_packed(out, &v, o);
	} else {
		buf_printf(out, "%s", marker(v.kind, o->redis));
	}
}

void dump_pair(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
	       const struct dump_opts *o, struct buf *out)
{
	struct arena a = ARENA_INIT;
	struct subdockey sk;
	if (subdockey_decode(key, klen, &sk, &a) != 0) {
		buf_printf(out, "<corrupt key of %zu bytes>\n", klen);
		arena_free(&a);
		return;
	}
	buf_push(out, '(');
	const char *sep = "";
	if (sk.doc.has_hash) {
		const char *label = o->hash_label ? o->hash_label(o->ctx, sk.doc.hash) : NULL;
		if (label != NULL)
			buf_printf(out, "%s", label);
		else
			buf_printf(out, "0x%04x", sk.doc.hash);
		sep = ", ";
	}
	for (size_t i = 0; i < sk.doc.n_hashed; i++, sep = ", ") {
		buf_printf(out, "%s", sep);
		put_pv(out, &sk.doc.hashed[i], o);
	}
	for (size_t i = 0; i < sk.doc.n_range; i++, sep = ", ") {
		buf_printf(out, "%s", sep);
		put_pv(out, &sk.doc.range[i], o);
	}
	buf_push(out, ')');
	for (size_t i = 0; i < sk.n_subkeys; i++) {
		buf_printf(out, ", ");
		put_subkey(out, &sk.subkeys[i], o);
	}
	if (sk.has_ht) {
		buf_printf(out, ", ");
		put_ht(out, sk.ht, o);
	}
	buf_printf(out, " -> ");
	put_value(out, val, vlen, o);
	buf_push(out, '\n');
	arena_free(&a);
}

int dump_store(struct store *s, const struct dump_opts *o, struct buf *out, char *errmsg)
{
	const uint8_t lo = KT_GROUP_END;
	struct store_iter *it = store_iter_new(s, &lo, 1, NULL, 0);
	int rv;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		dump_pair(k, kl, v, vl, o, out);
	}
	rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	return rv;
}
