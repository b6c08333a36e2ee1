/* Conversions between the client's public values and the wire (Datum,
 * TableSchema), and the DocDB primitive values (struct pv) that the hash
 * and the CQL binder work on.
 *
 * The rules are those of src/rpc/wire.c (the server's side of the same
 * messages): integers of every width travel as Datum.i, dates as Datum.u,
 * text and blobs as Datum.s, and a value the server decodes with
 * wire_datum_to_pv gives exactly the pv convert_value returns here, so the
 * client hashes a row's key to the same 16 bits as the tablet. They are
 * repeated rather than shared because wire.c also holds the write-batch
 * glue, which would drag the DocDB writer and RocksDB into libdocraft;
 * tests/client checks both sides agree. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client/internal.h"
#include "common/err.h"

static const char *value_type_name(int type)
{
	static const char *const names[] = {"NULL", "boolean", "integer", "float", "double",
					    "text", "blob", "timestamp", "uuid", "date"};
	if (type < 0 || (size_t)type >= sizeof names / sizeof names[0])
		return "unknown";
	return names[type];
}

static int mismatch(const char *what, enum col_type t, const docraft_value *v, char *errmsg)
{
	return err_set(errmsg, DOCRAFT_EINVAL, "%s is %s: cannot store a %s value", what,
		       col_type_name(t), value_type_name(v->type));
}

int convert_value(const docraft_value *v, enum col_type t, bool allow_null, const char *what,
		  struct arena *a, Docraft__Datum *d, struct pv *pv, char *errmsg)
{
	docraft__datum__init(d);
	*pv = pv_null();
	if (v->type == DOCRAFT_TYPE_NULL) {
		if (!allow_null)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: NULL is not allowed here", what);
		d->v_case = DOCRAFT__DATUM__V_NULL;
		d->null = 1;
		return 0;
	}
	switch (t) {
	case CT_BOOL:
		if (v->type != DOCRAFT_TYPE_BOOL)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_B;
		d->b = v->v.b;
		*pv = pv_bool(v->v.b);
		break;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32:
		if (v->type != DOCRAFT_TYPE_INT)
			return mismatch(what, t, v, errmsg);
		if (v->v.i < INT32_MIN || v->v.i > INT32_MAX)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: %lld out of range for %s", what,
				       (long long)v->v.i, col_type_name(t));
		d->v_case = DOCRAFT__DATUM__V_I;
		d->i = v->v.i;
		*pv = pv_int32((int32_t)v->v.i);
		break;
	case CT_INT64:
		if (v->type != DOCRAFT_TYPE_INT)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_I;
		d->i = v->v.i;
		*pv = pv_int64(v->v.i);
		break;
	case CT_TIMESTAMP:
		if (v->type != DOCRAFT_TYPE_TIMESTAMP && v->type != DOCRAFT_TYPE_INT)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_I;
		d->i = v->v.i;
		*pv = pv_timestamp(v->v.i);
		break;
	case CT_DATE:
		if (v->type != DOCRAFT_TYPE_DATE)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_U;
		d->u = v->v.date;
		*pv = pv_uint32(v->v.date);
		break;
	case CT_FLOAT:
		if (v->type != DOCRAFT_TYPE_FLOAT && v->type != DOCRAFT_TYPE_DOUBLE)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_F;
		d->f = v->type == DOCRAFT_TYPE_FLOAT ? v->v.f : (float)v->v.d;
		*pv = pv_float(d->f);
		break;
	case CT_DOUBLE:
		if (v->type != DOCRAFT_TYPE_FLOAT && v->type != DOCRAFT_TYPE_DOUBLE)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_D;
		d->d = v->type == DOCRAFT_TYPE_DOUBLE ? v->v.d : (double)v->v.f;
		*pv = pv_double(d->d);
		break;
	case CT_TEXT:
	case CT_BLOB:
		if (v->type != (t == CT_TEXT ? DOCRAFT_TYPE_TEXT : DOCRAFT_TYPE_BLOB))
			return mismatch(what, t, v, errmsg);
		if (v->v.s.len > 0 && v->v.s.p == NULL)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: NULL string", what);
		d->v_case = DOCRAFT__DATUM__V_S;
		d->s.data = (uint8_t *)(v->v.s.len > 0 ? v->v.s.p : "");
		d->s.len = v->v.s.len;
		*pv = pv_strn(d->s.data, d->s.len);
		break;
	case CT_UUID:
		if (v->type != DOCRAFT_TYPE_UUID)
			return mismatch(what, t, v, errmsg);
		d->v_case = DOCRAFT__DATUM__V_UUID;
		d->uuid.data = arena_dup(a, v->v.uuid, 16);
		d->uuid.len = 16;
		*pv = pv_uuid(v->v.uuid);
		break;
	default:
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: not a primitive column", what);
	}
	return schema_check_value(t, pv, allow_null, what, errmsg);
}

int convert_datum(const Docraft__Datum *d, enum col_type t, const char *what, struct arena *a,
		  docraft_value *out, char *errmsg)
{
	*out = docraft_value_null();
	if (d == NULL || d->v_case == DOCRAFT__DATUM__V__NOT_SET ||
	    d->v_case == DOCRAFT__DATUM__V_NULL)
		return 0;
	switch (t) {
	case CT_BOOL:
		if (d->v_case != DOCRAFT__DATUM__V_B)
			break;
		*out = docraft_value_bool(d->b);
		return 0;
	case CT_INT8:
	case CT_INT16:
	case CT_INT32:
	case CT_INT64:
		if (d->v_case != DOCRAFT__DATUM__V_I)
			break;
		*out = docraft_value_int(d->i);
		return 0;
	case CT_TIMESTAMP:
		if (d->v_case != DOCRAFT__DATUM__V_I)
			break;
		*out = docraft_value_timestamp(d->i);
		return 0;
	case CT_DATE:
		if (d->v_case != DOCRAFT__DATUM__V_U || d->u > UINT32_MAX)
			break;
		*out = docraft_value_date((uint32_t)d->u);
		return 0;
	case CT_FLOAT:
		if (d->v_case != DOCRAFT__DATUM__V_F)
			break;
		*out = docraft_value_float(d->f);
		return 0;
	case CT_DOUBLE:
		if (d->v_case != DOCRAFT__DATUM__V_D)
			break;
		*out = docraft_value_double(d->d);
		return 0;
	case CT_TEXT:
	case CT_BLOB: {
		const char *p = "";
		if (d->v_case != DOCRAFT__DATUM__V_S)
			break;
		if (d->s.len > 0)
			p = arena_dup(a, d->s.data, d->s.len);
		*out = t == CT_TEXT ? docraft_value_textn(p, d->s.len)
				    : docraft_value_blob(p, d->s.len);
		return 0;
	}
	case CT_UUID:
		if (d->v_case != DOCRAFT__DATUM__V_UUID || d->uuid.len != 16)
			break;
		*out = docraft_value_uuid(d->uuid.data);
		return 0;
	default:
		return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: not a primitive column", what);
	}
	return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: the server sent a value that is not %s", what,
		       col_type_name(t));
}

struct pv convert_to_pv(const docraft_value *v, enum col_type t)
{
	switch (v->type) {
	case DOCRAFT_TYPE_BOOL:
		return pv_bool(v->v.b);
	case DOCRAFT_TYPE_INT:
		if (t == CT_TIMESTAMP)
			return pv_timestamp(v->v.i);
		if (t == CT_INT64)
			return pv_int64(v->v.i);
		return pv_int32((int32_t)v->v.i);
	case DOCRAFT_TYPE_TIMESTAMP:
		return pv_timestamp(v->v.i);
	case DOCRAFT_TYPE_DATE:
		return pv_uint32(v->v.date);
	case DOCRAFT_TYPE_FLOAT:
		return t == CT_DOUBLE ? pv_double(v->v.f) : pv_float(v->v.f);
	case DOCRAFT_TYPE_DOUBLE:
		return t == CT_FLOAT ? pv_float((float)v->v.d) : pv_double(v->v.d);
	case DOCRAFT_TYPE_TEXT:
	case DOCRAFT_TYPE_BLOB:
		return pv_strn(v->v.s.p, v->v.s.len);
	case DOCRAFT_TYPE_UUID:
		return pv_uuid(v->v.uuid);
	default:
		return pv_null();
	}
}

docraft_value convert_from_pv(const struct pv *v, enum col_type t)
{
	switch (v->type) {
	case PV_BOOL:
		return docraft_value_bool(v->v.b);
	case PV_INT32:
		return docraft_value_int(v->v.i32);
	case PV_INT64:
		return t == CT_TIMESTAMP ? docraft_value_timestamp(v->v.i64)
					 : docraft_value_int(v->v.i64);
	case PV_TIMESTAMP:
		return docraft_value_timestamp(v->v.i64);
	case PV_UINT32:
		return docraft_value_date(v->v.u32);
	case PV_FLOAT:
		return docraft_value_float(v->v.f);
	case PV_DOUBLE:
		return docraft_value_double(v->v.d);
	case PV_STRING:
		return t == CT_BLOB ? docraft_value_blob(v->v.s.p, v->v.s.len)
				    : docraft_value_textn((const char *)v->v.s.p, v->v.s.len);
	case PV_UUID:
		return docraft_value_uuid(v->v.uuid);
	default:
		return docraft_value_null();
	}
}

/* ---- schemas ---- */

int convert_schema_from_pb(const Docraft__TableSchema *pb, struct schema *out, char *errmsg)
{
	int32_t max_id = -1;
	int rv;
	if ((rv = schema_init(out, pb->name ? pb->name : "", errmsg)) != 0)
		return rv;
	for (size_t i = 0; i < pb->n_columns; i++) {
		const Docraft__ColumnSchema *c = pb->columns[i];
		rv = schema_add_column(out, c->name ? c->name : "", (enum col_kind)c->kind,
				       (enum col_type)c->type, (enum col_type)c->elem_type,
				       (enum col_type)c->value_type, c->desc, errmsg);
		if (rv != 0) {
			schema_free(out);
			return rv;
		}
		if (c->id < 0) {
			schema_free(out);
			return err_set(errmsg, DOCRAFT_EINVAL, "column '%s' has id %d", c->name,
				       c->id);
		}
		out->cols[out->ncols - 1].id = c->id;
		if (c->id > max_id)
			max_id = c->id;
	}
	for (size_t i = 0; i < out->ncols; i++)
		for (size_t j = i + 1; j < out->ncols; j++)
			if (out->cols[i].id == out->cols[j].id) {
				int32_t id = out->cols[i].id;
				schema_free(out);
				return err_set(errmsg, DOCRAFT_EINVAL, "column id %d used twice", id);
			}
	out->next_id = max_id + 1;
	out->default_ttl_ms = pb->default_ttl_ms;
	out->version = pb->version;
	out->packed = pb->packed;
	return 0;
}

void convert_schema_to_pb(const struct schema *s, Docraft__TableSchema *pb, struct arena *a)
{
	docraft__table_schema__init(pb);
	pb->name = s->table;
	pb->n_columns = s->ncols;
	pb->columns = arena_alloc(a, (s->ncols ? s->ncols : 1) * sizeof *pb->columns);
	for (size_t i = 0; i < s->ncols; i++) {
		Docraft__ColumnSchema *c = arena_alloc(a, sizeof *c);
		docraft__column_schema__init(c);
		c->name = s->cols[i].name;
		c->id = s->cols[i].id;
		c->kind = (Docraft__ColumnKind)s->cols[i].kind;
		c->type = (Docraft__ColumnType)s->cols[i].type;
		c->elem_type = (Docraft__ColumnType)s->cols[i].elem_type;
		c->value_type = (Docraft__ColumnType)s->cols[i].value_type;
		c->desc = s->cols[i].desc;
		pb->columns[i] = c;
	}
	pb->default_ttl_ms = s->default_ttl_ms;
	pb->version = s->version;
	pb->packed = s->packed;
}

/* Copies s[0..n) without blanks at both ends into out (size bytes). */
static bool trimmed(const char *s, size_t n, char *out, size_t size)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0 || n >= size)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

int convert_parse_type(const char *s, enum col_type *t, enum col_type *elem,
		       enum col_type *value)
{
	char buf[64], a[32], b[32];
	size_t n;
	const char *lt, *comma;

	*t = *elem = *value = 0;
	if (s == NULL || !trimmed(s, strlen(s), buf, sizeof buf))
		return DOCRAFT_EINVAL;
	lt = strchr(buf, '<');
	if (lt == NULL) {
		*t = col_type_parse(buf);
		return *t != 0 && !col_type_is_collection(*t) ? 0 : DOCRAFT_EINVAL;
	}
	n = strlen(buf);
	if (buf[n - 1] != '>')
		return DOCRAFT_EINVAL;
	buf[n - 1] = '\0';
	if (!trimmed(buf, (size_t)(lt - buf), a, sizeof a))
		return DOCRAFT_EINVAL;
	if (strcasecmp(a, "map") == 0) {
		comma = strchr(lt + 1, ',');
		if (comma == NULL || !trimmed(lt + 1, (size_t)(comma - lt - 1), a, sizeof a) ||
		    !trimmed(comma + 1, strlen(comma + 1), b, sizeof b))
			return DOCRAFT_EINVAL;
		*t = CT_MAP;
		*elem = col_type_parse(a);
		*value = col_type_parse(b);
		return *elem != 0 && *value != 0 && !col_type_is_collection(*elem) &&
				       !col_type_is_collection(*value)
			       ? 0
			       : DOCRAFT_EINVAL;
	}
	if (strcasecmp(a, "set") == 0)
		*t = CT_SET;
	else if (strcasecmp(a, "list") == 0)
		*t = CT_LIST;
	else
		return DOCRAFT_EINVAL;
	if (!trimmed(lt + 1, strlen(lt + 1), a, sizeof a))
		return DOCRAFT_EINVAL;
	*elem = col_type_parse(a);
	return *elem != 0 && !col_type_is_collection(*elem) ? 0 : DOCRAFT_EINVAL;
}
