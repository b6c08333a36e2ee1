#include "docdb/schema.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"

int schema_init(struct schema *s, const char *table, char *errmsg)
{
	memset(s, 0, sizeof *s);
	if (table == NULL || *table == '\0' || strlen(table) >= SCHEMA_MAX_NAME)
		return err_set(errmsg, DOCRAFT_EINVAL, "table name must be 1..%d characters",
			       SCHEMA_MAX_NAME - 1);
	s->table = xstrdup(table);
	s->version = 0;
	s->versions = xcalloc(1, sizeof *s->versions);
	s->nversions = 1;
	return 0;
}

void schema_free(struct schema *s)
{
	for (size_t i = 0; i < s->ncols; i++)
		free(s->cols[i].name);
	for (size_t i = 0; i < s->nversions; i++)
		free(s->versions[i].ids);
	free(s->versions);
	free(s->cols);
	free(s->table);
	memset(s, 0, sizeof *s);
}

void schema_copy(struct schema *dst, const struct schema *src)
{
	*dst = *src;
	dst->table = xstrdup(src->table);
	dst->cols = xcalloc(src->ncols ? src->ncols : 1, sizeof *dst->cols);
	for (size_t i = 0; i < src->ncols; i++) {
		dst->cols[i] = src->cols[i];
		dst->cols[i].name = xstrdup(src->cols[i].name);
	}
	dst->versions = xcalloc(src->nversions ? src->nversions : 1, sizeof *dst->versions);
	for (size_t i = 0; i < src->nversions; i++) {
		const struct schema_version *v = &src->versions[i];
		dst->versions[i] = *v;
		dst->versions[i].ids = xcalloc(v->n ? v->n : 1, sizeof *v->ids);
		if (v->n > 0)
			memcpy(dst->versions[i].ids, v->ids, v->n * sizeof *v->ids);
	}
}

/* Appends a new version, a copy of the current one's columns. */
static void push_version(struct schema *s)
{
	struct schema_version *v = xrealloc(s->versions, (s->nversions + 1) * sizeof *v);
	const struct schema_version *last;
	s->versions = v;
	last = s->nversions > 0 ? &v[s->nversions - 1] : NULL;
	v = &v[s->nversions++];
	v->version = ++s->version;
	v->n = last ? last->n : 0;
	v->ids = xcalloc(v->n + 1, sizeof *v->ids);
	if (v->n > 0)
		memcpy(v->ids, last->ids, v->n * sizeof *v->ids);
}

static void pop_version(struct schema *s)
{
	free(s->versions[--s->nversions].ids);
	s->version--;
}

const struct schema_version *schema_version_get(const struct schema *s, uint32_t version)
{
	/* Versions are dense and ascending: look from the newest. */
	for (size_t i = s->nversions; i-- > 0;)
		if (s->versions[i].version == version)
			return &s->versions[i];
	return NULL;
}

bool col_type_is_collection(enum col_type t)
{
	return t == CT_MAP || t == CT_SET || t == CT_LIST;
}

static const char *const type_names[] = {
	[CT_BOOL] = "boolean", [CT_INT8] = "tinyint",  [CT_INT16] = "smallint",
	[CT_INT32] = "int",    [CT_INT64] = "bigint",  [CT_FLOAT] = "float",
	[CT_DOUBLE] = "double", [CT_TEXT] = "text",    [CT_BLOB] = "blob",
	[CT_TIMESTAMP] = "timestamp", [CT_UUID] = "uuid", [CT_DATE] = "date",
	[CT_MAP] = "map",      [CT_SET] = "set",       [CT_LIST] = "list",
};

const char *col_type_name(enum col_type t)
{
	if ((size_t)t >= sizeof type_names / sizeof type_names[0] || type_names[t] == NULL)
		return "?";
	return type_names[t];
}

enum col_type col_type_parse(const char *name)
{
	static const struct {
		const char *name;
		enum col_type t;
	} aliases[] = {{"bool", CT_BOOL}, {"varchar", CT_TEXT}, {"integer", CT_INT32},
		       {"int4", CT_INT32}, {"int8", CT_INT64}, {"int64", CT_INT64},
		       {"int32", CT_INT32}, {"bytes", CT_BLOB}};
	for (size_t t = CT_BOOL; t <= CT_DATE; t++)
		if (strcasecmp(name, type_names[t]) == 0)
			return (enum col_type)t;
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (strcasecmp(name, aliases[i].name) == 0)
			return aliases[i].t;
	return 0;
}

enum pv_type col_type_pv(enum col_type t)
{
	switch (t) {
	case CT_BOOL: return PV_BOOL;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32: return PV_INT32;
	case CT_INT64: return PV_INT64;
	case CT_FLOAT: return PV_FLOAT;
	case CT_DOUBLE: return PV_DOUBLE;
	case CT_TEXT:
	case CT_BLOB: return PV_STRING;
	case CT_TIMESTAMP: return PV_TIMESTAMP;
	case CT_UUID: return PV_UUID;
	case CT_DATE: return PV_UINT32;
	default: return PV_TYPE_COUNT;
	}
}

static bool valid_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len >= SCHEMA_MAX_NAME || !(isalpha((unsigned char)n[0]) || n[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)n[i]) || n[i] == '_'))
			return false;
	return true;
}

static bool valid_primitive(enum col_type t)
{
	return t >= CT_BOOL && t <= CT_DATE;
}

int schema_add_column(struct schema *s, const char *name, enum col_kind kind, enum col_type type,
		      enum col_type elem_type, enum col_type value_type, bool desc, char *errmsg)
{
	struct column *c;
	if (name == NULL || !valid_name(name))
		return err_set(errmsg, DOCRAFT_EINVAL, "invalid column name '%s'", name ? name : "");
	if (schema_find(s, name) != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "duplicate column '%s'", name);
	if (s->ncols >= SCHEMA_MAX_COLUMNS)
		return err_set(errmsg, DOCRAFT_EINVAL, "too many columns (max %d)", SCHEMA_MAX_COLUMNS);
	if (kind != COL_HASH && kind != COL_RANGE && kind != COL_REGULAR)
		return err_set(errmsg, DOCRAFT_EINVAL, "column '%s': invalid kind", name);
	if (kind == COL_HASH && s->n_range + (s->ncols - s->n_hash - s->n_range) > 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "hash column '%s' must come before range and regular columns", name);
	if (kind == COL_RANGE && s->ncols > s->n_hash + s->n_range)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "range column '%s' must come before regular columns", name);
	if (col_type_is_collection(type)) {
		if (kind != COL_REGULAR)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "key column '%s' cannot be a collection", name);
		if (!valid_primitive(elem_type) ||
		    (type == CT_MAP && !valid_primitive(value_type)))
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "column '%s': collection element types must be primitive", name);
	} else if (!valid_primitive(type)) {
		return err_set(errmsg, DOCRAFT_EINVAL, "column '%s': unknown type", name);
	}
	if (desc && kind != COL_RANGE)
		return err_set(errmsg, DOCRAFT_EINVAL, "only range columns can be DESC ('%s')", name);

	c = xrealloc(s->cols, (s->ncols + 1) * sizeof *c);
	s->cols = c;
	c = &s->cols[s->ncols++];
	memset(c, 0, sizeof *c);
	c->name = xstrdup(name);
	c->id = s->next_id++;
	c->kind = (uint8_t)kind;
	c->type = (uint8_t)type;
	c->elem_type = col_type_is_collection(type) ? (uint8_t)elem_type : 0;
	c->value_type = type == CT_MAP ? (uint8_t)value_type : 0;
	c->desc = desc;
	if (kind == COL_HASH)
		s->n_hash++;
	else if (kind == COL_RANGE)
		s->n_range++;
	if (kind == COL_REGULAR && !col_type_is_collection(type) && s->nversions > 0) {
		struct schema_version *v = &s->versions[s->nversions - 1];
		int32_t *ids = xrealloc(v->ids, (v->n + 1) * sizeof *ids);
		ids[v->n++] = c->id;
		v->ids = ids;
	}
	return 0;
}

int schema_add_regular_column(struct schema *s, const char *name, enum col_type type,
			      enum col_type elem_type, enum col_type value_type, char *errmsg)
{
	int rv;
	push_version(s);
	rv = schema_add_column(s, name, COL_REGULAR, type, elem_type, value_type, false, errmsg);
	if (rv != 0)
		pop_version(s);
	return rv;
}

int schema_drop_column(struct schema *s, const char *name, char *errmsg)
{
	const struct column *c = name ? schema_find(s, name) : NULL;
	struct schema_version *v;
	size_t i;
	int32_t id;
	if (c == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s has no column '%s'", s->table,
			       name ? name : "(null)");
	if (c->kind != COL_REGULAR)
		return err_set(errmsg, DOCRAFT_EINVAL, "cannot drop primary key column '%s'", name);
	id = c->id;
	i = (size_t)(c - s->cols);
	free(s->cols[i].name);
	memmove(&s->cols[i], &s->cols[i + 1], (s->ncols - i - 1) * sizeof *s->cols);
	s->ncols--;
	push_version(s);
	v = &s->versions[s->nversions - 1];
	for (size_t j = 0; j < v->n; j++)
		if (v->ids[j] == id) {
			memmove(&v->ids[j], &v->ids[j + 1], (v->n - j - 1) * sizeof *v->ids);
			v->n--;
			break;
		}
	return 0;
}

const struct column *schema_find(const struct schema *s, const char *name)
{
	for (size_t i = 0; i < s->ncols; i++)
		if (strcmp(s->cols[i].name, name) == 0)
			return &s->cols[i];
	return NULL;
}

const struct column *schema_find_id(const struct schema *s, int32_t id)
{
	for (size_t i = 0; i < s->ncols; i++)
		if (s->cols[i].id == id)
			return &s->cols[i];
	return NULL;
}

static bool utf8_valid(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = p[i];
		size_t len;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			len = 2;
			cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			len = 3;
			cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			len = 4;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += len;
	}
	return true;
}

int schema_check_value(enum col_type t, const struct pv *v, bool allow_null, const char *what,
		       char *errmsg)
{
	if (v->type == PV_NULL) {
		if (allow_null)
			return 0;
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: NULL is not allowed", what);
	}
	if (v->type != col_type_pv(t))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: expected %s, got a value of another type",
			       what, col_type_name(t));
	if (t == CT_INT8 && (v->v.i32 < -128 || v->v.i32 > 127))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: %d out of range for tinyint", what,
			       v->v.i32);
	if (t == CT_INT16 && (v->v.i32 < -32768 || v->v.i32 > 32767))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: %d out of range for smallint", what,
			       v->v.i32);
	if (t == CT_TEXT && !utf8_valid(v->v.s.p, v->v.s.len))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: text is not valid UTF-8", what);
	return 0;
}
