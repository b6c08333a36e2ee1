/* The public value type: its constructors and text form (the API of
 * include/docraft/docraft.h), and its meeting with DocDB's values.
 *
 * Design note. A docraft_value is what the program holds; a column type is
 * what the table stores. accepted() below is the one place deciding which
 * program values a column type takes (an integer for every integer width
 * and for a timestamp, a float or a double for either floating type), and
 * values_to_pv the pv each becomes; the Datum on the wire is then
 * wire_pv_to_datum's (rpc/wire.h, shared with the tablet server), and
 * a Datum received goes back through wire_datum_to_pv, so the client and
 * the tablet server read the same bytes the same way (and hash a row's key
 * to the same 16 bits). Checks of the value itself (ranges of the small
 * integers, UTF-8) are schema_check_value's, as on the server.
 *
 * Error messages are the client's own (a program sees "column 'x' is
 * blob: cannot store a text value"); what the server sent that does not
 * fit its column is DOCRAFT_ECORRUPT. */
#include "client/values.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/err.h"
#include "rpc/wire.h"

/* ---- constructors ---- */

/* A value of type whose union begins with the n bytes at p (the rest zero). */
static docraft_value make(int type, const void *p, size_t n)
{
	docraft_value v;
	memset(&v, 0, sizeof v);
	v.type = type;
	memcpy(&v.v, p, n);
	return v;
}

docraft_value docraft_value_null(void)
{
	return make(DOCRAFT_TYPE_NULL, "", 0);
}

docraft_value docraft_value_bool(bool b)
{
	return make(DOCRAFT_TYPE_BOOL, &b, sizeof b);
}

docraft_value docraft_value_int(int64_t i)
{
	return make(DOCRAFT_TYPE_INT, &i, sizeof i);
}

docraft_value docraft_value_float(float f)
{
	return make(DOCRAFT_TYPE_FLOAT, &f, sizeof f);
}

docraft_value docraft_value_double(double d)
{
	return make(DOCRAFT_TYPE_DOUBLE, &d, sizeof d);
}

docraft_value docraft_value_text(const char *s)
{
	return docraft_value_textn(s, s != NULL ? strlen(s) : 0);
}

docraft_value docraft_value_textn(const char *s, size_t len)
{
	docraft_value v = docraft_value_blob(s, len);
	v.type = DOCRAFT_TYPE_TEXT;
	return v;
}

docraft_value docraft_value_blob(const void *p, size_t len)
{
	docraft_value v = make(DOCRAFT_TYPE_BLOB, "", 0);
	v.v.s.p = p != NULL ? p : "";
	v.v.s.len = p != NULL ? len : 0;
	return v;
}

docraft_value docraft_value_timestamp(int64_t micros)
{
	return make(DOCRAFT_TYPE_TIMESTAMP, &micros, sizeof micros);
}

docraft_value docraft_value_uuid(const uint8_t uuid[16])
{
	return make(DOCRAFT_TYPE_UUID, uuid, 16);
}

docraft_value docraft_value_date(uint32_t cql_date)
{
	return make(DOCRAFT_TYPE_DATE, &cql_date, sizeof cql_date);
}

/* ---- text form ---- */

/* Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yoe, doy, mp;
	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	yoe = z - era * 146097;
	yoe = (yoe - yoe / 1460 + yoe / 36524 - yoe / 146096) / 365;
	doy = (z - era * 146097) - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static void format_double(struct buf *b, double d)
{
	char tmp[40];
	if (d != d) {
		buf_printf(b, "NaN");
		return;
	}
	if (d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
		buf_printf(b, "%sInfinity", d < 0 ? "-" : "");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	buf_printf(b, "%s", tmp);
}

static void format_value(struct buf *b, const docraft_value *v, bool quoted)
{
	switch (v->type) {
	case DOCRAFT_TYPE_NULL:
		buf_printf(b, "null");
		break;
	case DOCRAFT_TYPE_BOOL:
		buf_printf(b, "%s", v->v.b ? "True" : "False");
		break;
	case DOCRAFT_TYPE_INT:
		buf_printf(b, "%" PRId64, v->v.i);
		break;
	case DOCRAFT_TYPE_FLOAT: {
		/* The shortest text that reads back as the same float. */
		char tmp[40];
		float f = v->v.f;
		if (f != f || f > 3.4028235e38f || f < -3.4028235e38f) {
			format_double(b, f);
			break;
		}
		for (int prec = 1; prec <= 9; prec++) {
			snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
			if (strtof(tmp, NULL) == f)
				break;
		}
		buf_printf(b, "%s", tmp);
		break;
	}
	case DOCRAFT_TYPE_DOUBLE:
		format_double(b, v->v.d);
		break;
	case DOCRAFT_TYPE_TEXT:
		if (quoted)
			buf_push(b, '\'');
		for (size_t i = 0; i < v->v.s.len; i++) {
			if (quoted && v->v.s.p[i] == '\'')
				buf_push(b, '\'');
			buf_push(b, (uint8_t)v->v.s.p[i]);
		}
		if (quoted)
			buf_push(b, '\'');
		break;
	case DOCRAFT_TYPE_BLOB:
		buf_printf(b, "0x");
		for (size_t i = 0; i < v->v.s.len; i++)
			buf_printf(b, "%02x", (unsigned char)v->v.s.p[i]);
		break;
	case DOCRAFT_TYPE_TIMESTAMP: {
		int64_t us = v->v.i, secs = us / 1000000, frac = us % 1000000, days, rem, y;
		unsigned mo, d;
		if (frac < 0) {
			frac += 1000000;
			secs--;
		}
		days = secs / 86400;
		rem = secs % 86400;
		if (rem < 0) {
			rem += 86400;
			days--;
		}
		civil_from_days(days, &y, &mo, &d);
		if (quoted)
			buf_push(b, '\'');
		buf_printf(b, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%06d+0000", y, mo, d,
			   (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (int)frac);
		if (quoted)
			buf_push(b, '\'');
		break;
	}
	case DOCRAFT_TYPE_UUID: {
		const uint8_t *u = v->v.uuid;
		for (int i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				buf_push(b, '-');
			buf_printf(b, "%02x", u[i]);
		}
		break;
	}
	case DOCRAFT_TYPE_DATE: {
		int64_t y;
		unsigned mo, d;
		civil_from_days((int64_t)v->v.date - (INT64_C(1) << 31), &y, &mo, &d);
		if (quoted)
			buf_push(b, '\'');
		buf_printf(b, "%04" PRId64 "-%02u-%02u", y, mo, d);
		if (quoted)
			buf_push(b, '\'');
		break;
	}
	default:
		buf_printf(b, "?");
		break;
	}
}

size_t docraft_value_format(const docraft_value *v, bool quoted, char *out, size_t size)
{
	struct buf b = BUF_INIT;
	size_t n;
	format_value(&b, v, quoted);
	n = b.len;
	if (size > 0) {
		size_t k = n < size - 1 ? n : size - 1;
		if (k > 0)
			memcpy(out, b.data, k);
		out[k] = '\0';
	}
	buf_free(&b);
	return n;
}

docraft_value *values_copy(struct arena *a, const docraft_value *v, size_t n)
{
	docraft_value *out = arena_alloc(a, (n ? n : 1) * sizeof *out);
	for (size_t i = 0; i < n; i++) {
		out[i] = v[i];
		if (v[i].type == DOCRAFT_TYPE_TEXT || v[i].type == DOCRAFT_TYPE_BLOB)
			out[i].v.s.p = v[i].v.s.len > 0 ? arena_dup(a, v[i].v.s.p, v[i].v.s.len)
							: "";
	}
	return out;
}

/* ---- values of a column type ---- */

static const char *value_type_name(int type)
{
	static const char *const names[] = {"NULL", "boolean", "integer", "float", "double",
					    "text", "blob", "timestamp", "uuid", "date"};
	if (type < 0 || (size_t)type >= sizeof names / sizeof names[0])
		return "unknown";
	return names[type];
}

#define TYPE_BIT(x) (1u << (x))

/* The program types a column type takes; 0: not a primitive type. */
static unsigned accepted(enum col_type t)
{
	switch (t) {
	case CT_BOOL:
		return TYPE_BIT(DOCRAFT_TYPE_BOOL);
	case CT_INT8:
	case CT_INT16:
	case CT_INT32:
	case CT_INT64:
		return TYPE_BIT(DOCRAFT_TYPE_INT);
	case CT_TIMESTAMP:
		return TYPE_BIT(DOCRAFT_TYPE_TIMESTAMP) | TYPE_BIT(DOCRAFT_TYPE_INT);
	case CT_DATE:
		return TYPE_BIT(DOCRAFT_TYPE_DATE);
	case CT_FLOAT:
	case CT_DOUBLE:
		return TYPE_BIT(DOCRAFT_TYPE_FLOAT) | TYPE_BIT(DOCRAFT_TYPE_DOUBLE);
	case CT_TEXT:
		return TYPE_BIT(DOCRAFT_TYPE_TEXT);
	case CT_BLOB:
		return TYPE_BIT(DOCRAFT_TYPE_BLOB);
	case CT_UUID:
		return TYPE_BIT(DOCRAFT_TYPE_UUID);
	default:
		return 0;
	}
}

/* Whether a column of type t may take v (not NULL), with the message. */
static int check_kind(const docraft_value *v, enum col_type t, const char *what, char *errmsg)
{
	unsigned ok = accepted(t);
	if (ok == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: not a primitive column", what);
	if (v->type < 0 || v->type >= 32 || (ok & TYPE_BIT(v->type)) == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s is %s: cannot store a %s value", what,
			       col_type_name(t), value_type_name(v->type));
	if ((t == CT_INT8 || t == CT_INT16 || t == CT_INT32) &&
	    (v->v.i < INT32_MIN || v->v.i > INT32_MAX))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: %lld out of range for %s", what,
			       (long long)v->v.i, col_type_name(t));
	if ((t == CT_TEXT || t == CT_BLOB) && v->v.s.len > 0 && v->v.s.p == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: NULL string", what);
	return 0;
}

int values_to_datum(const docraft_value *v, enum col_type t, bool allow_null, const char *what,
		    struct arena *a, Docraft__Datum **out, struct pv *pv, char *errmsg)
{
	Docraft__Datum *d = arena_alloc(a, sizeof *d);
	int rv;
	docraft__datum__init(d);
	*out = d;
	*pv = pv_null();
	if (v->type == DOCRAFT_TYPE_NULL) {
		if (!allow_null)
			return err_set(errmsg, DOCRAFT_EINVAL, "%s: NULL is not allowed here", what);
		wire_pv_to_datum(pv, d);
		return 0;
	}
	if ((rv = check_kind(v, t, what, errmsg)) != 0)
		return rv;
	*pv = values_to_pv(v, t);
	wire_pv_to_datum(pv, d);
	if (d->v_case == DOCRAFT__DATUM__V_UUID) /* d pointed into *pv */
		d->uuid.data = arena_dup(a, v->v.uuid, 16);
	return schema_check_value(t, pv, allow_null, what, errmsg);
}

int values_from_datum(const Docraft__Datum *d, enum col_type t, const char *what,
		      struct arena *a, docraft_value *out, char *errmsg)
{
	char why[DOCRAFT_ERRMSG_SIZE];
	struct pv pv;
	*out = docraft_value_null();
	if (wire_datum_to_pv(d, t, what, &pv, why) != 0) {
		if (accepted(t) == 0)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: not a primitive column",
				       what);
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "%s: the server sent a value that is not %s", what,
			       col_type_name(t));
	}
	*out = values_from_pv(&pv, t);
	if (pv.type == PV_STRING && pv.v.s.len > 0)
		out->v.s.p = arena_dup(a, pv.v.s.p, pv.v.s.len);
	return 0;
}

struct pv values_to_pv(const docraft_value *v, enum col_type t)
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
		/* protobuf-c and the key encoder want a pointer even for "". */
		return pv_strn(v->v.s.len > 0 ? v->v.s.p : "", v->v.s.len);
	case DOCRAFT_TYPE_UUID:
		return pv_uuid(v->v.uuid);
	default:
		return pv_null();
	}
}

docraft_value values_from_pv(const struct pv *v, enum col_type t)
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

/* ---- type names ---- */

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

int values_parse_type(const char *s, enum col_type *t, enum col_type *elem,
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
