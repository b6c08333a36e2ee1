/* Binding: CQL literals to DocDB primitive values, statements checked
 * against a schema, CREATE TABLE to a schema. See bind.h for the rules;
 * the text forms of dates, timestamps and uuids are in textforms.c. */
#include "cql/bind.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/check.h"
#include "common/err.h"
#include "cql/parser.h"

const char *cql_type_str(enum col_type t, enum col_type elem, enum col_type value, char *buf,
			 size_t size)
{
	if (t == CT_MAP)
		snprintf(buf, size, "map<%s, %s>", col_type_name(elem), col_type_name(value));
	else if (t == CT_SET || t == CT_LIST)
		snprintf(buf, size, "%s<%s>", t == CT_SET ? "set" : "list", col_type_name(elem));
	else
		snprintf(buf, size, "%s", col_type_name(t));
	return buf;
}

static const char *col_str(const struct column *c, char *buf, size_t size)
{
	return cql_type_str(c->type, c->elem_type, c->value_type, buf, size);
}

/* ---- environment ---- */

static int64_t env_now(const struct cql_bind_env *env)
{
	struct timespec ts;
	if (env != NULL && env->now_us != 0)
		return env->now_us;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool env_random(const struct cql_bind_env *env, uint8_t *out, size_t n)
{
	if (env != NULL && env->random != NULL) {
		env->random(env->arg, out, n);
		return true;
	}
	while (n > 0) {
		ssize_t got = getrandom(out, n, 0);
		if (got <= 0)
			return false;
		out += got;
		n -= (size_t)got;
	}
	return true;
}

/* ---- literals to values ---- */

#define SHOW_MAX 40

/* The literal as written, shortened for messages. */
static const char *show(const struct cql_literal *lit, char *buf, size_t size)
{
	const char *src = lit->src ? lit->src : "value";
	size_t n = strlen(src);
	if (n <= SHOW_MAX) {
		snprintf(buf, size, "%s", src);
	} else {
		n = SHOW_MAX;
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
		snprintf(buf, size, "%.*s...", (int)n, src);
	}
	return buf;
}

static int __attribute__((format(printf, 2, 3))) why_set(char *why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, DOCRAFT_ERRMSG_SIZE, fmt, ap);
	va_end(ap);
	return DOCRAFT_EINVAL;
}

static int bind_func(const struct cql_literal *lit, enum col_type t,
		     const struct cql_bind_env *env, struct pv *out, char *why, const char *shown)
{
	const char *f = lit->v.func.name;
	uint8_t u[16];
	if (lit->v.func.nargs != 0)
		return why_set(why, "cannot store %s (%s() takes no arguments)", shown, f);
	if (strcmp(f, "uuid") == 0 && t == CT_UUID) {
		if (!env_random(env, u, sizeof u))
			return why_set(why, "cannot store %s (no random source)", shown);
		u[6] = (uint8_t)((u[6] & 0x0F) | 0x40);
		u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);
		*out = pv_uuid(u);
		return 0;
	}
	if (strcmp(f, "now") == 0 && t == CT_UUID) {
		/* Version 1: 100 ns ticks since 1582-10-15, random clock
		 * sequence and (multicast) node. */
		uint64_t ticks = (uint64_t)env_now(env) * 10 + UINT64_C(0x01B21DD213814000);
		if (!env_random(env, u + 8, 8))
			return why_set(why, "cannot store %s (no random source)", shown);
		u[0] = (uint8_t)(ticks >> 24);
		u[1] = (uint8_t)(ticks >> 16);
		u[2] = (uint8_t)(ticks >> 8);
		u[3] = (uint8_t)ticks;
		u[4] = (uint8_t)(ticks >> 40);
		u[5] = (uint8_t)(ticks >> 32);
		u[6] = (uint8_t)(((ticks >> 56) & 0x0F) | 0x10);
		u[7] = (uint8_t)(ticks >> 48);
		u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);
		u[10] |= 0x01;
		*out = pv_uuid(u);
		return 0;
	}
	if (strcmp(f, "currenttimestamp") == 0 && t == CT_TIMESTAMP) {
		*out = pv_timestamp(env_now(env));
		return 0;
	}
	if (strcmp(f, "currentdate") == 0 && t == CT_DATE) {
		int64_t now = env_now(env), days = now / INT64_C(86400000000);
		if (now < 0 && now % INT64_C(86400000000) != 0)
			days--;
		*out = pv_uint32((uint32_t)(days + (INT64_C(1) << 31)));
		return 0;
	}
	if (strcmp(f, "uuid") == 0 || strcmp(f, "now") == 0)
		return why_set(why, "cannot store %s (it gives a uuid)", shown);
	if (strcmp(f, "currenttimestamp") == 0)
		return why_set(why, "cannot store %s (it gives a timestamp)", shown);
	if (strcmp(f, "currentdate") == 0)
		return why_set(why, "cannot store %s (it gives a date)", shown);
	return why_set(why, "cannot store %s (unknown function %s(); known: uuid(), now(), "
			    "currenttimestamp(), currentdate())",
		       shown, f);
}

/* A string literal as a timestamp, uuid or date (t), in the forms
 * cql_parse_timestamp, cql_parse_uuid and cql_parse_date take. */
static int bind_string(const struct cql_literal *lit, enum col_type t, struct pv *out, char *why,
		       const char *shown)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	const char *p = lit->v.str.p;
	size_t len = lit->v.str.len;
	int64_t us;
	uint8_t u[16];
	uint32_t d;
	int rv;

	switch (t) {
	case CT_TIMESTAMP:
		if ((rv = cql_parse_timestamp(p, len, &us, msg)) == 0)
			*out = pv_timestamp(us);
		break;
	case CT_UUID:
		if ((rv = cql_parse_uuid(p, len, u, msg)) == 0)
			*out = pv_uuid(u);
		break;
	default:
		PRE(t == CT_DATE);
		if ((rv = cql_parse_date(p, len, &d, msg)) == 0)
			*out = pv_uint32(d);
		break;
	}
	return rv == 0 ? 0 : why_set(why, "cannot store %s (%s)", shown, msg);
}

/* lit → a value of primitive type t; on failure the reason goes to why
 * (DOCRAFT_ERRMSG_SIZE bytes), without the type or column. */
static int bind_prim(const struct cql_literal *lit, enum col_type t,
		     const struct cql_bind_env *env, struct pv *out, char *why)
{
	char shown[SHOW_MAX + 8];
	show(lit, shown, sizeof shown);
	*out = pv_null();
	switch (lit->kind) {
	case CQL_LIT_NULL:
		return 0;
	case CQL_LIT_MARKER:
		return why_set(why, "cannot store %s (an unbound bind marker)", shown);
	case CQL_LIT_FUNC:
		return bind_func(lit, t, env, out, why, shown);
	case CQL_LIT_IDENT:
		if (t == CT_TEXT) {
			*out = pv_str(lit->v.ident);
			return 0;
		}
		return why_set(why, "cannot store %s (a bare word; strings take quotes: '%s')",
			       shown, lit->v.ident);
	default:
		break;
	}
	if (lit->kind == CQL_LIT_STRING && (t == CT_TIMESTAMP || t == CT_UUID || t == CT_DATE))
		return bind_string(lit, t, out, why, shown);
	switch (t) {
	case CT_BOOL:
		if (lit->kind == CQL_LIT_BOOL) {
			*out = pv_bool(lit->v.b);
			return 0;
		}
		break;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32:
	case CT_INT64: {
		int64_t lo = t == CT_INT8 ? INT8_MIN : t == CT_INT16 ? INT16_MIN
					  : t == CT_INT32 ? INT32_MIN : INT64_MIN;
		int64_t hi = t == CT_INT8 ? INT8_MAX : t == CT_INT16 ? INT16_MAX
					  : t == CT_INT32 ? INT32_MAX : INT64_MAX;
		if (lit->kind != CQL_LIT_INT)
			break;
		if (lit->v.int_overflow || lit->v.i < lo || lit->v.i > hi)
			return why_set(why,
				       "cannot store %s (out of range %" PRId64 "..%" PRId64 ")",
				       shown, lo, hi);
		*out = t == CT_INT64 ? pv_int64(lit->v.i) : pv_int32((int32_t)lit->v.i);
		return 0;
	}
	case CT_FLOAT:
	case CT_DOUBLE: {
		double d;
		if (lit->kind == CQL_LIT_INT)
			d = (double)lit->v.i;
		else if (lit->kind == CQL_LIT_FLOAT)
			d = lit->v.f;
		else
			break;
		if (lit->kind == CQL_LIT_INT && lit->v.int_overflow)
			return why_set(why, "cannot store %s (out of range)", shown);
		if (t == CT_FLOAT) {
			if (isfinite(d) && fabs(d) > FLT_MAX)
				return why_set(why, "cannot store %s (out of range for float)",
					       shown);
			*out = pv_float((float)d);
		} else {
			*out = pv_double(d);
		}
		return 0;
	}
	case CT_TEXT:
		if (lit->kind == CQL_LIT_STRING) {
			*out = pv_strn(lit->v.str.p, lit->v.str.len);
			return 0;
		}
		break;
	case CT_BLOB:
		if (lit->kind == CQL_LIT_BLOB) {
			*out = pv_strn(lit->v.str.p, lit->v.str.len);
			return 0;
		}
		if (lit->kind == CQL_LIT_STRING)
			return why_set(why, "cannot store %s (blob literals are written 0x...)",
				       shown);
		break;
	case CT_TIMESTAMP:
		if (lit->kind == CQL_LIT_INT && !lit->v.int_overflow) {
			*out = pv_timestamp(lit->v.i);
			return 0;
		}
		break;
	case CT_UUID:
		if (lit->kind == CQL_LIT_UUID) {
			*out = pv_uuid(lit->v.uuid);
			return 0;
		}
		break;
	case CT_DATE:
		if (lit->kind == CQL_LIT_INT) {
			if (lit->v.int_overflow || lit->v.i < 0 || lit->v.i > UINT32_MAX)
				return why_set(why, "cannot store %s (out of range 0..%" PRIu32 ")",
					       shown, UINT32_MAX);
			*out = pv_uint32((uint32_t)lit->v.i);
			return 0;
		}
		break;
	default:
		return why_set(why, "cannot store %s (not a primitive type)", shown);
	}
	return why_set(why, "cannot store %s", shown);
}

/* Text must be UTF-8 (what the writer checks too). */
static int check_utf8(enum col_type t, const struct pv *v, char *why)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (t != CT_TEXT || v->type != PV_STRING)
		return 0;
	if (schema_check_value(t, v, true, "text", msg) != 0)
		return why_set(why, "cannot store a string that is not valid UTF-8");
	return 0;
}

int cql_bind_value(const struct cql_literal *lit, enum col_type type, struct arena *a,
		   struct pv *out, char *errmsg)
{
	char why[DOCRAFT_ERRMSG_SIZE];
	int rv;
	(void)a; /* values point into the literal; kept for bindings that copy */
	*out = pv_null();
	if (col_type_is_collection(type))
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "%s: a collection type (use cql_bind_column)", col_type_name(type));
	rv = bind_prim(lit, type, NULL, out, why);
	if (rv == 0)
		rv = check_utf8(type, out, why);
	if (rv != 0) {
		*out = pv_null();
		return err_set(errmsg, rv, "%s: %s", col_type_name(type), why);
	}
	return 0;
}

static int fail_lit(struct cql_error *err, const struct cql_literal *lit,
		    const struct column *col, const char *why)
{
	char ty[64];
	cql_error_set(err, NULL, &lit->pos, "column %s is %s: %s", col->name,
		      col_str(col, ty, sizeof ty), why);
	if (err != NULL && lit->src != NULL) {
		size_t n = strlen(lit->src);
		if (n >= sizeof err->token) {
			n = sizeof err->token - 1;
			while (n > 0 && ((unsigned char)lit->src[n] & 0xC0) == 0x80)
				n--;
		}
		memcpy(err->token, lit->src, n);
		err->token[n] = '\0';
	}
	return DOCRAFT_EINVAL;
}

static int __attribute__((format(printf, 4, 5)))
fail_pos(struct cql_error *err, const struct cql_pos *pos, const char *token, const char *fmt,
	 ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cql_error_set(err, NULL, pos, "%s", msg);
	if (err != NULL && token != NULL)
		snprintf(err->token, sizeof err->token, "%s", token);
	return DOCRAFT_EINVAL;
}

/* One primitive for col (element type t), NULL allowed or not. */
static int bind_one(const struct cql_literal *lit, const struct column *col, enum col_type t,
		    bool allow_null, const struct cql_bind_env *env, struct pv *out,
		    struct cql_error *err)
{
	char why[DOCRAFT_ERRMSG_SIZE];
	int rv = bind_prim(lit, t, env, out, why);
	if (rv == 0)
		rv = check_utf8(t, out, why);
	if (rv == 0 && !allow_null && out->type == PV_NULL)
		rv = why_set(why, "cannot store NULL here (collection elements and keys cannot "
				  "be NULL)");
	if (rv == 0)
		return 0;
	if (col_type_is_collection(col->type)) {
		char w2[DOCRAFT_ERRMSG_SIZE + 32];
		snprintf(w2, sizeof w2, "%s as %s", why, col_type_name(t));
		/* "cannot store 'x' (…) as int" reads oddly: put the type first. */
		if (strchr(why, '(') == NULL)
			return fail_lit(err, lit, col, w2);
	}
	return fail_lit(err, lit, col, why);
}

/* The elements of a collection literal of kind want (a `{}` also passes for
 * a map), bound to elem (and value for maps). */
static int bind_elems(const struct cql_literal *lit, const struct column *col,
		      enum cql_lit_kind want, enum col_type elem, enum col_type value,
		      const struct cql_bind_env *env, struct arena *a, struct cql_value *out,
		      struct cql_error *err)
{
	struct pv *keys, *vals = NULL;
	size_t n;
	bool ok = lit->kind == want ||
		  (want == CQL_LIT_MAP && lit->kind == CQL_LIT_SET && lit->v.coll.n == 0);
	if (!ok) {
		char shown[SHOW_MAX + 8], why[DOCRAFT_ERRMSG_SIZE];
		const char *need = want == CQL_LIT_MAP ? "a map {k: v, ...}"
				   : want == CQL_LIT_SET ? "a set {a, ...}"
							 : "a list [a, ...]";
		snprintf(why, sizeof why, "cannot store %s (expected %s)",
			 show(lit, shown, sizeof shown), need);
		return fail_lit(err, lit, col, why);
	}
	n = lit->v.coll.n;
	keys = arena_alloc(a, (n ? n : 1) * sizeof *keys);
	if (want == CQL_LIT_MAP)
		vals = arena_alloc(a, (n ? n : 1) * sizeof *vals);
	for (size_t i = 0; i < n; i++) {
		int rv = bind_one(&lit->v.coll.items[i], col, elem, false, env, &keys[i], err);
		if (rv == 0 && vals != NULL && lit->kind == CQL_LIT_MAP)
			rv = bind_one(&lit->v.coll.vals[i], col, value, false, env, &vals[i], err);
		if (rv != 0)
			return rv;
	}
	out->is_collection = true;
	out->keys = keys;
	out->vals = vals;
	out->n = n;
	return 0;
}

static enum cql_lit_kind coll_kind(enum col_type t)
{
	return t == CT_MAP ? CQL_LIT_MAP : t == CT_SET ? CQL_LIT_SET : CQL_LIT_LIST;
}

int cql_bind_column(const struct cql_literal *lit, const struct column *col,
		    const struct cql_bind_env *env, struct arena *a, struct cql_value *out,
		    struct cql_error *err)
{
	enum col_type t = (enum col_type)col->type;
	memset(out, 0, sizeof *out);
	out->value = pv_null();
	if (col_type_is_collection(t)) {
		if (lit->kind == CQL_LIT_NULL)
			return 0;
		return bind_elems(lit, col, coll_kind(t), (enum col_type)col->elem_type,
				  (enum col_type)col->value_type, env, a, out, err);
	}
	return bind_one(lit, col, t, true, env, &out->value, err);
}

int cql_bind_map_key(const struct cql_literal *lit, const struct column *col,
		     const struct cql_bind_env *env, struct arena *a, struct pv *out,
		     struct cql_error *err)
{
	(void)a;
	*out = pv_null();
	if (col->type != CT_MAP)
		return fail_lit(err, lit, col, "only map entries can be addressed by key");
	return bind_one(lit, col, (enum col_type)col->elem_type, false, env, out, err);
}

int cql_bind_assign(const struct cql_assign *as, const struct column *col,
		    const struct cql_bind_env *env, struct arena *a, struct pv *key,
		    struct cql_value *out, struct cql_error *err)
{
	enum col_type t = (enum col_type)col->type;
	char ty[64];
	memset(out, 0, sizeof *out);
	out->value = pv_null();
	col_str(col, ty, sizeof ty);
	switch (as->op) {
	case CQL_ASSIGN_SET:
		return cql_bind_column(&as->value, col, env, a, out, err);
	case CQL_ASSIGN_ADD:
		if (!col_type_is_collection(t))
			return fail_pos(err, &as->op_pos, as->concat ? "||" : "+",
					"column %s is %s: %s adds to map, set and list columns "
					"only",
					col->name, ty, as->concat ? "||" : "+");
		return bind_elems(&as->value, col, coll_kind(t), (enum col_type)col->elem_type,
				  (enum col_type)col->value_type, env, a, out, err);
	case CQL_ASSIGN_REMOVE:
		if (t == CT_LIST)
			return fail_pos(err, &as->op_pos, "-",
					"column %s is %s: removing list elements by value is not "
					"supported (it needs a read)",
					col->name, ty);
		if (t != CT_MAP && t != CT_SET)
			return fail_pos(err, &as->op_pos, "-",
					"column %s is %s: - removes from map and set columns only",
					col->name, ty);
		/* A map loses the keys of a set literal. */
		return bind_elems(&as->value, col, CQL_LIT_SET, (enum col_type)col->elem_type, 0,
				  env, a, out, err);
	case CQL_ASSIGN_PREPEND:
		if (t != CT_LIST)
			return fail_pos(err, &as->op_pos, "+",
					"column %s is %s: [...] + %s prepends to list columns only",
					col->name, ty, col->name);
		return bind_elems(&as->value, col, CQL_LIT_LIST, (enum col_type)col->elem_type, 0,
				  env, a, out, err);
	case CQL_ASSIGN_ELEM:
		if (t == CT_LIST)
			return fail_pos(err, &as->key.pos, as->key.src,
					"column %s is %s: setting a list element by index is not "
					"supported (it needs a read)",
					col->name, ty);
		if (t != CT_MAP)
			return fail_pos(err, &as->key.pos, as->key.src,
					"column %s is %s: only map entries can be set by key",
					col->name, ty);
		if (key == NULL)
			return fail_pos(err, &as->key.pos, as->key.src, "no place for the key");
		if (bind_one(&as->key, col, (enum col_type)col->elem_type, false, env, key, err))
			return DOCRAFT_EINVAL;
		return bind_one(&as->value, col, (enum col_type)col->value_type, true, env,
				&out->value, err);
	}
	return fail_pos(err, &as->op_pos, NULL, "unknown assignment");
}

/* ---- CREATE TABLE → schema ---- */

static const struct cql_coldef *find_def(const struct cql_create_table *ct, const char *name)
{
	for (size_t i = 0; i < ct->ncols; i++)
		if (strcmp(ct->cols[i].name.name, name) == 0)
			return &ct->cols[i];
	return NULL;
}

static int key_index(const struct cql_ident *keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int create_schema(const struct cql_create_table *ct, struct schema *out,
			 struct cql_error *err)
{
	const struct cql_ident *hash = ct->hash, *range = ct->range;
	size_t nhash = ct->nhash, nrange = ct->nrange;
	struct cql_ident inline_pk;
	bool desc[SCHEMA_MAX_COLUMNS] = {false};
	char msg[DOCRAFT_ERRMSG_SIZE];
	int last = -1;

	/* Columns: distinct names, known types. */
	for (size_t i = 0; i < ct->ncols; i++) {
		const struct cql_coldef *c = &ct->cols[i];
		for (size_t j = 0; j < i; j++)
			if (strcmp(ct->cols[j].name.name, c->name.name) == 0)
				return fail_pos(err, &c->name.pos, c->name.name,
						"column %s is declared twice", c->name.name);
		if (c->type.unknown.name != NULL)
			return fail_pos(err, &c->type.unknown.pos, c->type.unknown.name,
					"unknown type %s", c->type.unknown.name);
		if (c->primary_key) {
			inline_pk = c->name;
			hash = &inline_pk;
			nhash = 1;
			range = NULL;
			nrange = 0;
		}
	}
	if (ct->ncols > SCHEMA_MAX_COLUMNS)
		return fail_pos(err, &ct->table.pos, ct->table.name,
				"too many columns (at most %d)", SCHEMA_MAX_COLUMNS);
	if (nhash == 0)
		return fail_pos(err, &ct->table.pos, ct->table.name,
				"table %s has no PRIMARY KEY", ct->table.name);
	/* Key columns: declared, once, primitive. */
	for (size_t i = 0; i < nhash + nrange; i++) {
		const struct cql_ident *k = i < nhash ? &hash[i] : &range[i - nhash];
		const struct cql_coldef *c = find_def(ct, k->name);
		if (c == NULL)
			return fail_pos(err, &k->pos, k->name, "unknown column %s in PRIMARY KEY",
					k->name);
		if (key_index(hash, nhash, k->name) != (i < nhash ? (int)i : -1) ||
		    (i >= nhash && key_index(range, nrange, k->name) != (int)(i - nhash)))
			return fail_pos(err, &k->pos, k->name,
					"column %s appears twice in PRIMARY KEY", k->name);
		if (col_type_is_collection(c->type.type))
			return fail_pos(err, &k->pos, k->name,
					"key column %s cannot be a collection (%s)", k->name,
					c->type.name);
	}
	/* CLUSTERING ORDER BY: range columns, in key order. */
	for (size_t i = 0; i < ct->nclustering; i++) {
		const struct cql_ident *o = &ct->clustering[i].col;
		int r = key_index(range, nrange, o->name);
		if (r < 0)
			return fail_pos(err, &o->pos, o->name,
					find_def(ct, o->name) == NULL
						? "unknown column %s in CLUSTERING ORDER BY"
						: "%s is not a range column (CLUSTERING ORDER BY "
						  "orders range columns)",
					o->name);
		if (r <= last)
			return fail_pos(err, &o->pos, o->name,
					"CLUSTERING ORDER BY must name range columns once each, in "
					"PRIMARY KEY order");
		last = r;
		desc[r] = ct->clustering[i].desc;
	}
	if (schema_init(out, ct->table.name, msg) != 0)
		return fail_pos(err, &ct->table.pos, ct->table.name, "%s", msg);
	for (size_t i = 0; i < ct->noptions; i++) {
		const struct cql_option *o = &ct->options[i];
		if (strcmp(o->name.name, "packed") == 0) {
			if (o->value.kind != CQL_LIT_BOOL)
				return fail_pos(err, &o->value.pos, o->value.src,
						"packed must be true or false");
			out->packed = o->value.v.b;
		} else {
			return fail_pos(err, &o->name.pos, o->name.name,
					"unknown table option %s (known: default_time_to_live, "
					"packed, CLUSTERING ORDER BY)",
					o->name.name);
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(ct->options[j].name.name, o->name.name) == 0)
				return fail_pos(err, &o->name.pos, o->name.name,
						"option %s is already given", o->name.name);
	}
	/* Hash, range, then the other columns as declared. */
	for (size_t i = 0; i < nhash + nrange + ct->ncols; i++) {
		const struct cql_coldef *c;
		enum col_kind kind;
		bool d = false;
		if (i < nhash) {
			c = find_def(ct, hash[i].name);
			kind = COL_HASH;
		} else if (i < nhash + nrange) {
			c = find_def(ct, range[i - nhash].name);
			kind = COL_RANGE;
			d = desc[i - nhash];
		} else {
			c = &ct->cols[i - nhash - nrange];
			if (key_index(hash, nhash, c->name.name) >= 0 ||
			    key_index(range, nrange, c->name.name) >= 0)
				continue;
			kind = COL_REGULAR;
		}
		if (schema_add_column(out, c->name.name, kind, c->type.type, c->type.elem_type,
				      c->type.value_type, d, msg) != 0)
			return fail_pos(err, &c->name.pos, c->name.name, "%s", msg);
	}
	if (ct->has_default_ttl)
		out->default_ttl_ms = ct->default_ttl_s * 1000;
	return 0;
}

int cql_create_schema(const struct cql_create_table *ct, struct schema *out,
		      struct cql_error *err)
{
	int rv;
	memset(out, 0, sizeof *out);
	rv = create_schema(ct, out, err);
	if (rv != 0)
		schema_free(out);
	return rv;
}

/* ---- statements against a schema ---- */

static int find_col(const struct schema *s, const struct cql_ident *id,
		    const struct column **out, struct cql_error *err)
{
	*out = schema_find(s, id->name);
	if (*out == NULL)
		return fail_pos(err, &id->pos, id->name, "table %s has no column %s", s->table,
				id->name);
	return 0;
}

/* A bare word that names a column, anywhere in lit. */
static int check_words(const struct schema *s, const struct cql_literal *lit,
		       struct cql_error *err)
{
	switch (lit->kind) {
	case CQL_LIT_IDENT: {
		char lower[SCHEMA_MAX_NAME];
		size_t n = strlen(lit->v.ident);
		if (n >= sizeof lower)
			return 0;
		for (size_t i = 0; i <= n; i++) {
			char c = lit->v.ident[i];
			lower[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
		}
		if (schema_find(s, lower) != NULL)
			return fail_pos(err, &lit->pos, lit->src,
					"%s is a column, not a value (CQL cannot copy columns; a "
					"string takes quotes: '%s')",
					lit->v.ident, lit->v.ident);
		return 0;
	}
	case CQL_LIT_MAP:
	case CQL_LIT_SET:
	case CQL_LIT_LIST:
		for (size_t i = 0; i < lit->v.coll.n; i++) {
			if (check_words(s, &lit->v.coll.items[i], err) != 0)
				return DOCRAFT_EINVAL;
			if (lit->kind == CQL_LIT_MAP &&
			    check_words(s, &lit->v.coll.vals[i], err) != 0)
				return DOCRAFT_EINVAL;
		}
		return 0;
	case CQL_LIT_FUNC:
		for (size_t i = 0; i < lit->v.func.nargs; i++)
			if (check_words(s, &lit->v.func.args[i], err) != 0)
				return DOCRAFT_EINVAL;
		return 0;
	default:
		return 0;
	}
}

/* The position just after a literal (for "missing …" errors). */
static struct cql_pos end_of(const struct cql_literal *lit)
{
	struct cql_pos pos = lit->pos;
	for (const char *p = lit->src ? lit->src : ""; *p; p++) {
		if (*p == '\n') {
			pos.line++;
			pos.column = 1;
		} else if (((unsigned char)*p & 0xC0) != 0x80) {
			pos.column++;
		}
	}
	pos.offset += pos.length;
	pos.length = 0;
	return pos;
}

static size_t col_index(const struct schema *s, const struct column *c)
{
	return (size_t)(c - s->cols);
}

/* WHERE of UPDATE and DELETE: every key column once, with =. A missing
 * one is reported after the last condition (at the table without any). */
static int check_write_where(const struct cql_stmt *st, const struct schema *s,
			     const struct cql_ident *table, const struct cql_cond *w, size_t n,
			     struct cql_error *err)
{
	const char *what = cql_stmt_name(st->kind);
	size_t nkeys = schema_nkeys(s);
	for (size_t i = 0; i < n; i++) {
		const struct column *c;
		if (find_col(s, &w[i].col, &c, err) != 0 || check_words(s, &w[i].value, err) != 0)
			return DOCRAFT_EINVAL;
		if (c->kind == COL_REGULAR)
			return fail_pos(err, &w[i].col.pos, w[i].col.name,
					"%s is not a primary key column (%s … WHERE names the "
					"primary key only)",
					c->name, what);
		if (w[i].rel != CQL_REL_EQ)
			return fail_pos(err, &w[i].rel_pos, NULL,
					"%s needs = on every primary key column (no ranges)", what);
		for (size_t j = 0; j < i; j++)
			if (strcmp(w[j].col.name, w[i].col.name) == 0)
				return fail_pos(err, &w[i].col.pos, w[i].col.name,
						"%s is restricted twice", c->name);
	}
	for (size_t k = 0; k < nkeys; k++) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(w[i].col.name, s->cols[k].name) == 0;
		if (!found) {
			struct cql_pos at = n > 0 ? end_of(&w[n - 1].value) : table->pos;
			return fail_pos(err, &at, NULL,
					"expected AND %s = … (%s needs every primary key column)",
					s->cols[k].name, what);
		}
	}
	return 0;
}

#define NO_COND ((size_t)-1)

static int check_select(const struct cql_select *sel, const struct schema *s,
			struct cql_error *err)
{
	size_t nkeys = schema_nkeys(s), nhash_eq = 0;
	/* Per key column: the = condition, the lower and upper bounds. */
	size_t eq[SCHEMA_MAX_COLUMNS], lo[SCHEMA_MAX_COLUMNS], hi[SCHEMA_MAX_COLUMNS];
	for (size_t k = 0; k < nkeys; k++)
		eq[k] = lo[k] = hi[k] = NO_COND;
	for (size_t i = 0; i < sel->ncols; i++) {
		const struct column *c;
		if (find_col(s, &sel->cols[i], &c, err) != 0)
			return DOCRAFT_EINVAL;
	}
	for (size_t i = 0; i < sel->nwhere; i++) {
		const struct cql_cond *w = &sel->where[i];
		const struct column *c;
		size_t k, *slot;
		if (find_col(s, &w->col, &c, err) != 0 || check_words(s, &w->value, err) != 0)
			return DOCRAFT_EINVAL;
		if (c->kind == COL_REGULAR) {
			if (!sel->allow_filtering)
				return fail_pos(err, &w->col.pos, w->col.name,
						"%s is not a primary key column (conditions on "
						"other columns need ALLOW FILTERING)",
						c->name);
			continue;
		}
		k = col_index(s, c);
		if (c->kind == COL_HASH && w->rel != CQL_REL_EQ)
			return fail_pos(err, &w->rel_pos, NULL,
					"range conditions are only allowed on range columns (%s is "
					"a hash column)",
					c->name);
		slot = w->rel == CQL_REL_EQ ? &eq[k]
		       : w->rel == CQL_REL_GT || w->rel == CQL_REL_GE ? &lo[k]
								      : &hi[k];
		if (*slot != NO_COND ||
		    (w->rel == CQL_REL_EQ && (lo[k] != NO_COND || hi[k] != NO_COND)) ||
		    (w->rel != CQL_REL_EQ && eq[k] != NO_COND))
			return fail_pos(err, &w->col.pos, w->col.name,
					*slot != NO_COND && w->rel != CQL_REL_EQ
						? "%s already has a bound on this side"
						: "%s is restricted twice",
					c->name);
		*slot = i;
		if (c->kind == COL_HASH)
			nhash_eq++;
	}
	if (nhash_eq > 0 && nhash_eq < s->n_hash) {
		for (size_t k = 0; k < s->n_hash; k++)
			if (eq[k] == NO_COND) {
				struct cql_pos at = end_of(&sel->where[sel->nwhere - 1].value);
				return fail_pos(err, &at, NULL,
						"expected AND %s = … (restrict every hash column "
						"with =, or none)",
						s->cols[k].name);
			}
	}
	/* Range columns: = on a prefix, then at most one ranged column. */
	for (size_t k = s->n_hash, open = NO_COND; k < nkeys; k++) {
		size_t any = eq[k] != NO_COND ? eq[k] : lo[k] != NO_COND ? lo[k] : hi[k];
		if (any == NO_COND) {
			if (open == NO_COND)
				open = k;
			continue;
		}
		if (nhash_eq == 0 && !sel->allow_filtering)
			return fail_pos(err, &sel->where[any].col.pos, sel->where[any].col.name,
					"restricting range column %s needs = on every hash column, "
					"or ALLOW FILTERING",
					s->cols[k].name);
		if (open != NO_COND && !sel->allow_filtering) {
			bool ranged = lo[open] != NO_COND || hi[open] != NO_COND;
			return fail_pos(err, &sel->where[any].col.pos, sel->where[any].col.name,
					"cannot restrict %s: the earlier range column %s is %s",
					s->cols[k].name, s->cols[open].name,
					ranged ? "restricted by a range, not =" : "not restricted");
		}
		if (eq[k] == NO_COND && open == NO_COND)
			open = k;
	}
	/* ORDER BY: range columns in key order, one direction. */
	for (size_t i = 0; i < sel->norder_by; i++) {
		const struct cql_order *o = &sel->order_by[i];
		const struct column *c;
		bool rev, rev0;
		if (find_col(s, &o->col, &c, err) != 0)
			return DOCRAFT_EINVAL;
		if (c->kind != COL_RANGE)
			return fail_pos(err, &o->col.pos, o->col.name,
					"ORDER BY orders by range columns only (%s is a %s column)",
					c->name, c->kind == COL_HASH ? "hash" : "regular");
		if (col_index(s, c) != s->n_hash + i)
			return fail_pos(err, &o->col.pos, o->col.name,
					"ORDER BY must follow the primary key order: expected %s",
					s->cols[s->n_hash + i].name);
		rev = o->desc != c->desc;
		rev0 = sel->order_by[0].desc != s->cols[s->n_hash].desc;
		if (rev != rev0)
			return fail_pos(err, &o->col.pos, o->col.name,
					"ORDER BY must keep the table's clustering order or "
					"reverse all of it");
		if (nhash_eq < s->n_hash)
			return fail_pos(err, &o->col.pos, o->col.name,
					"ORDER BY needs = on every hash column");
	}
	return 0;
}

int cql_check_stmt(const struct cql_stmt *st, const struct schema *s, struct cql_error *err)
{
	switch (st->kind) {
	case CQL_STMT_INSERT: {
		const struct cql_insert *in = &st->u.insert;
		for (size_t i = 0; i < in->ncols; i++) {
			const struct column *c;
			if (find_col(s, &in->cols[i], &c, err) != 0 ||
			    check_words(s, &in->values[i], err) != 0)
				return DOCRAFT_EINVAL;
			for (size_t j = 0; j < i; j++)
				if (strcmp(in->cols[j].name, in->cols[i].name) == 0)
					return fail_pos(err, &in->cols[i].pos, in->cols[i].name,
							"column %s is given twice", c->name);
		}
		for (size_t k = 0; k < schema_nkeys(s); k++) {
			bool found = false;
			for (size_t i = 0; i < in->ncols && !found; i++)
				found = strcmp(in->cols[i].name, s->cols[k].name) == 0;
			if (!found)
				return fail_pos(err, &in->table.pos, in->table.name,
						"INSERT needs every primary key column: %s is "
						"missing",
						s->cols[k].name);
		}
		return 0;
	}
	case CQL_STMT_UPDATE: {
		const struct cql_update *up = &st->u.update;
		for (size_t i = 0; i < up->nassigns; i++) {
			const struct cql_assign *as = &up->assigns[i];
			const struct column *c;
			if (find_col(s, &as->col, &c, err) != 0 ||
			    check_words(s, &as->value, err) != 0 ||
			    (as->op == CQL_ASSIGN_ELEM && check_words(s, &as->key, err) != 0))
				return DOCRAFT_EINVAL;
			if (c->kind != COL_REGULAR)
				return fail_pos(err, &as->col.pos, as->col.name,
						"cannot SET primary key column %s", c->name);
		}
		return check_write_where(st, s, &up->table, up->where, up->nwhere, err);
	}
	case CQL_STMT_DELETE: {
		const struct cql_delete *d = &st->u.del;
		for (size_t i = 0; i < d->ntargets; i++) {
			const struct cql_delete_target *t = &d->targets[i];
			const struct column *c;
			if (find_col(s, &t->col, &c, err) != 0 ||
			    (t->has_key && check_words(s, &t->key, err) != 0))
				return DOCRAFT_EINVAL;
			if (c->kind != COL_REGULAR)
				return fail_pos(err, &t->col.pos, t->col.name,
						"cannot delete primary key column %s (DELETE "
						"FROM … deletes the row)",
						c->name);
			if (t->has_key && c->type != CT_MAP)
				return fail_pos(err, &t->key.pos, t->key.src,
						"only map entries can be deleted by key (%s is %s)",
						c->name, col_type_name((enum col_type)c->type));
		}
		return check_write_where(st, s, &d->table, d->where, d->nwhere, err);
	}
	case CQL_STMT_SELECT:
		return check_select(&st->u.select, s, err);
	default:
		return 0;
	}
}
