#include "history.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "# docraft-jepsen history v1"
#define NFIELDS 7

struct tok {
	const char *p;
	size_t n;
};

static const char *const f_names[HISTORY_F_COUNT] = {"read", "write", "cas", "delete", "add",
						      "read-set"};
static const char *const type_names[] = {"invoke", "ok", "fail", "info"};

const char *history_f_name(enum history_f f)
{
	return (unsigned)f < HISTORY_F_COUNT ? f_names[f] : "?";
}

const char *history_type_name(enum history_type t)
{
	return (unsigned)t <= HISTORY_INFO ? type_names[t] : "?";
}

const char *history_val_str(struct history_val v, char *buf, size_t size)
{
	switch (v.kind) {
	case HISTORY_VAL_NONE:
		snprintf(buf, size, "-");
		break;
	case HISTORY_VAL_NIL:
		snprintf(buf, size, "nil");
		break;
	case HISTORY_VAL_INT:
		snprintf(buf, size, "%" PRId64, v.v);
		break;
	}
	return buf;
}

static int set_err(char *errmsg, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_err(char *errmsg, int code, const char *fmt, ...)
{
	if (errmsg != NULL) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(errmsg, HISTORY_ERRMSG_SIZE, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A token for an error message: at most 32 bytes, unprintable bytes as '?'. */
static const char *tokstr(struct tok t, char *buf)
{
	size_t n = t.n > 32 ? 32 : t.n, i;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t.p[i];
		buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (t.n > n) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static bool tok_is(struct tok t, const char *s)
{
	size_t n = strlen(s);
	return t.n == n && memcmp(t.p, s, n) == 0;
}

static bool parse_u64(struct tok t, uint64_t *out)
{
	uint64_t v = 0;
	if (t.n == 0)
		return false;
	for (size_t i = 0; i < t.n; i++) {
		unsigned d = (unsigned)(unsigned char)t.p[i] - '0';
		if (d > 9)
			return false;
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_i64(struct tok t, int64_t *out)
{
	bool neg = t.n > 0 && t.p[0] == '-';
	uint64_t mag;
	struct tok digits = {t.p + neg, t.n - neg};
	if (!parse_u64(digits, &mag))
		return false;
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return false;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)mag;
	}
	return true;
}

static bool parse_val(struct tok t, struct history_val *v)
{
	if (tok_is(t, "-")) {
		v->kind = HISTORY_VAL_NONE;
		v->v = 0;
		return true;
	}
	if (tok_is(t, "nil")) {
		v->kind = HISTORY_VAL_NIL;
		v->v = 0;
		return true;
	}
	v->kind = HISTORY_VAL_INT;
	return parse_i64(t, &v->v);
}

static bool val_eq(struct history_val a, struct history_val b)
{
	return a.kind == b.kind && (a.kind != HISTORY_VAL_INT || a.v == b.v);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ---- per-process state: a small open-addressing map ---- */

struct proc {
	int64_t id; /* -1: empty slot (process numbers are non-negative) */
	size_t open;     /* index + 1 of the open op in ops, 0 when idle */
	size_t info_line; /* the line of its info completion, 0 if none */
	uint64_t last_ns;
	size_t last_line;
};

struct procmap {
	struct proc *slots;
	size_t cap, n;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

static struct proc *procmap_get(struct procmap *m, int64_t id)
{
	if (m->n + 1 > m->cap / 2) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		struct proc *ns = malloc(ncap * sizeof *ns);
		if (ns == NULL)
			return NULL;
		for (size_t i = 0; i < ncap; i++)
			ns[i].id = -1;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->slots[i].id < 0)
				continue;
			size_t j = mix64((uint64_t)m->slots[i].id) & (ncap - 1);
			while (ns[j].id >= 0)
				j = (j + 1) & (ncap - 1);
			ns[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	size_t j = mix64((uint64_t)id) & (m->cap - 1);
	while (m->slots[j].id >= 0 && m->slots[j].id != id)
		j = (j + 1) & (m->cap - 1);
	if (m->slots[j].id < 0) {
		memset(&m->slots[j], 0, sizeof m->slots[j]);
		m->slots[j].id = id;
		m->n++;
	}
	return &m->slots[j];
}

/* ---- the parser ---- */

struct parser {
	struct history_event *events;
	size_t nevents, cap_events;
	struct history_op *ops;
	size_t nops, cap_ops;
	struct procmap procs;
	char *errmsg;
};

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	size_t ncap = *cap ? *cap * 2 : 256;
	void *np = realloc(p, ncap * elem);
	if (np != NULL)
		*cap = ncap;
	return np;
}

static int perr(struct parser *ps, size_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(struct parser *ps, size_t line, const char *fmt, ...)
{
	if (ps->errmsg != NULL) {
		int n = snprintf(ps->errmsg, HISTORY_ERRMSG_SIZE, "line %zu: ", line);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ps->errmsg + n, HISTORY_ERRMSG_SIZE - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return HISTORY_EPARSE;
}

/* "-" (empty) or E1,E2,... into a sorted array. */
static int parse_elems(struct parser *ps, size_t line, struct tok t, struct history_event *ev)
{
	char b[48];
	size_t n = 1, k = 0;
	ev->elems = NULL;
	ev->nelems = 0;
	if (tok_is(t, "-"))
		return 0;
	for (size_t i = 0; i < t.n; i++)
		n += t.p[i] == ',';
	ev->elems = malloc(n * sizeof *ev->elems);
	if (ev->elems == NULL)
		return set_err(ps->errmsg, HISTORY_ENOMEM, "out of memory");
	const char *p = t.p, *end = t.p + t.n;
	while (k < n) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		struct tok e = {p, (size_t)((c ? c : end) - p)};
		if (!parse_i64(e, &ev->elems[k]))
			return perr(ps, line, "bad set element '%s' in '%s'", tokstr(e, b),
				    tokstr(t, (char[48]){0}));
		k++;
		p = c ? c + 1 : end;
	}
	ev->nelems = n;
	qsort(ev->elems, n, sizeof *ev->elems, cmp_i64);
	return 0;
}

/* The value fields each f allows; completion-specific rules in parse_line. */
static int check_fields(struct parser *ps, size_t line, const struct history_event *ev)
{
	const char *f = f_names[ev->f];
	enum history_val_kind k1 = ev->value.kind, k2 = ev->value2.kind;
	if (ev->f != HISTORY_CAS && k2 != HISTORY_VAL_NONE)
		return perr(ps, line, "%s takes no second value (want '-')", f);
	switch (ev->f) {
	case HISTORY_READ:
		if (ev->type == HISTORY_INVOKE && k1 != HISTORY_VAL_NONE)
			return perr(ps, line, "read invoke with a value (want '-')");
		if (ev->type == HISTORY_OK && k1 == HISTORY_VAL_NONE)
			return perr(ps, line, "ok read without a value (want an integer or nil)");
		break;
	case HISTORY_WRITE:
	case HISTORY_ADD:
		if (k1 != HISTORY_VAL_INT)
			return perr(ps, line, "%s needs an integer value", f);
		break;
	case HISTORY_CAS:
		if (k1 == HISTORY_VAL_NONE || k2 == HISTORY_VAL_NONE)
			return perr(ps, line, "cas needs OLD and NEW (integers or nil)");
		break;
	case HISTORY_DELETE:
		if (k1 != HISTORY_VAL_NONE)
			return perr(ps, line, "delete takes no value (want '-')");
		break;
	case HISTORY_READ_SET:
	case HISTORY_F_COUNT:
		break;
	}
	return 0;
}

static int parse_line(struct parser *ps, size_t line, const char *s, size_t n)
{
	struct tok t[NFIELDS];
	size_t nt = 0, i = 0;
	char b[48];
	int rv;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == n)
			break;
		size_t st = i;
		while (i < n && s[i] != ' ' && s[i] != '\t')
			i++;
		if (nt == NFIELDS)
			return perr(ps, line, "more than %d fields (extra '%s')", NFIELDS,
				    tokstr((struct tok){s + st, i - st}, b));
		t[nt].p = s + st;
		t[nt].n = i - st;
		nt++;
	}
	if (nt < NFIELDS)
		return perr(ps, line, "%zu fields, want %d: <time_ns> <process> <type> <f> <key> <value> <value2>",
			    nt, NFIELDS);

	struct history_event ev;
	memset(&ev, 0, sizeof ev);
	ev.line = line;
	if (!parse_u64(t[0], &ev.time_ns) || ev.time_ns > (uint64_t)INT64_MAX)
		return perr(ps, line, "bad time_ns '%s' (want a non-negative integer < 2^63)", tokstr(t[0], b));
	if (!parse_i64(t[1], &ev.process) || ev.process < 0)
		return perr(ps, line, "bad process '%s' (want a non-negative integer)", tokstr(t[1], b));
	for (i = 0; i <= HISTORY_INFO; i++)
		if (tok_is(t[2], type_names[i]))
			break;
	if (i > HISTORY_INFO)
		return perr(ps, line, "bad type '%s' (want invoke, ok, fail or info)", tokstr(t[2], b));
	ev.type = (enum history_type)i;
	for (i = 0; i < HISTORY_F_COUNT; i++)
		if (tok_is(t[3], f_names[i]))
			break;
	if (i == HISTORY_F_COUNT)
		return perr(ps, line, "bad f '%s' (want read, write, cas, delete, add or read-set)",
			    tokstr(t[3], b));
	ev.f = (enum history_f)i;
	bool set_op = ev.f == HISTORY_ADD || ev.f == HISTORY_READ_SET;
	if (set_op) {
		if (!tok_is(t[4], "-"))
			return perr(ps, line, "%s takes no key (want '-'), got '%s'", f_names[ev.f],
				    tokstr(t[4], b));
	} else {
		if (!parse_i64(t[4], &ev.key))
			return perr(ps, line, "bad key '%s' (want an integer)", tokstr(t[4], b));
		ev.has_key = true;
	}
	if (ev.f == HISTORY_READ_SET) {
		if (!tok_is(t[6], "-"))
			return perr(ps, line, "read-set takes no second value (want '-')");
		if (ev.type != HISTORY_OK && !tok_is(t[5], "-"))
			return perr(ps, line, "%s read-set with elements (want '-')", type_names[ev.type]);
	} else {
		if (!parse_val(t[5], &ev.value))
			return perr(ps, line, "bad value '%s' (want an integer, nil or -)", tokstr(t[5], b));
		if (!parse_val(t[6], &ev.value2))
			return perr(ps, line, "bad value2 '%s' (want an integer, nil or -)", tokstr(t[6], b));
		if ((rv = check_fields(ps, line, &ev)) != 0)
			return rv;
	}

	/* Pairing, per process. */
	struct proc *pr = procmap_get(&ps->procs, ev.process);
	if (pr == NULL)
		return set_err(ps->errmsg, HISTORY_ENOMEM, "out of memory");
	if (pr->last_line != 0 && ev.time_ns < pr->last_ns)
		return perr(ps, line, "time goes back for process %" PRId64 " (%" PRIu64 " < %" PRIu64
			    " at line %zu)", ev.process, ev.time_ns, pr->last_ns, pr->last_line);
	if (ev.type == HISTORY_INVOKE) {
		if (pr->open != 0)
			return perr(ps, line, "process %" PRId64 " invokes while its %s from line %zu is still open",
				    ev.process, f_names[ps->ops[pr->open - 1].f], ps->ops[pr->open - 1].invoke_line);
		if (pr->info_line != 0)
			return perr(ps, line, "process %" PRId64 " issues again after its info at line %zu "
				    "(a new process number is required)", ev.process, pr->info_line);
		struct history_op *nops = grow(ps->ops, &ps->cap_ops, ps->nops, sizeof *ps->ops);
		if (nops == NULL)
			return set_err(ps->errmsg, HISTORY_ENOMEM, "out of memory");
		ps->ops = nops;
		struct history_op *op = &ps->ops[ps->nops++];
		memset(op, 0, sizeof *op);
		op->process = ev.process;
		op->f = ev.f;
		op->has_key = ev.has_key;
		op->key = ev.key;
		op->type = HISTORY_INFO;
		op->invoke_ns = ev.time_ns;
		op->value = ev.value;
		op->value2 = ev.value2;
		op->invoke_line = line;
		pr->open = ps->nops;
	} else {
		if (pr->open == 0)
			return perr(ps, line, "%s %s for process %" PRId64 " without an open invoke",
				    type_names[ev.type], f_names[ev.f], ev.process);
		struct history_op *op = &ps->ops[pr->open - 1];
		if (op->f != ev.f)
			return perr(ps, line, "%s %s does not match the invoke at line %zu (%s)", type_names[ev.type],
				    f_names[ev.f], op->invoke_line, f_names[op->f]);
		if (op->has_key && op->key != ev.key)
			return perr(ps, line, "key %" PRId64 " does not match the invoke at line %zu (key %" PRId64 ")",
				    ev.key, op->invoke_line, op->key);
		if ((ev.f == HISTORY_WRITE || ev.f == HISTORY_CAS || ev.f == HISTORY_ADD) &&
		    (!val_eq(op->value, ev.value) || !val_eq(op->value2, ev.value2)))
			return perr(ps, line, "values do not match the invoke at line %zu", op->invoke_line);
		if (ev.f == HISTORY_READ_SET && ev.type == HISTORY_OK &&
		    (rv = parse_elems(ps, line, t[5], &ev)) != 0) {
			free(ev.elems);
			return rv;
		}
		op->type = ev.type;
		/* The elements are on the heap: sorting the events later
		 * does not move them. */
		op->elems = ev.elems;
		op->nelems = ev.nelems;
		op->completed = true;
		op->complete_ns = ev.time_ns;
		op->complete_line = line;
		if (ev.f == HISTORY_READ && ev.type == HISTORY_OK)
			op->value = ev.value;
		pr->open = 0;
		if (ev.type == HISTORY_INFO)
			pr->info_line = line;
	}
	pr->last_ns = ev.time_ns;
	pr->last_line = line;

	struct history_event *nev = grow(ps->events, &ps->cap_events, ps->nevents, sizeof *ps->events);
	if (nev == NULL) {
		free(ev.elems);
		return set_err(ps->errmsg, HISTORY_ENOMEM, "out of memory");
	}
	ps->events = nev;
	ps->events[ps->nevents++] = ev;
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct history_event *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

static int cmp_op(const void *a, const void *b)
{
	const struct history_op *x = a, *y = b;
	if (x->invoke_ns != y->invoke_ns)
		return x->invoke_ns < y->invoke_ns ? -1 : 1;
	return (x->invoke_line > y->invoke_line) - (x->invoke_line < y->invoke_line);
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

void history_free(struct history *h)
{
	for (size_t i = 0; i < h->nevents; i++)
		free(h->events[i].elems);
	free(h->events);
	free(h->ops);
	memset(h, 0, sizeof *h);
}

int history_parse(const char *text, size_t len, struct history *h, char *errmsg)
{
	struct parser ps;
	char msg[HISTORY_ERRMSG_SIZE] = "";
	size_t line = 0, pos = 0;
	int rv = 0;
	memset(&ps, 0, sizeof ps);
	memset(h, 0, sizeof *h);
	ps.errmsg = msg;
	if (len == 0)
		return set_err(errmsg, HISTORY_EPARSE, "empty input (no '" HEADER "' header)");
	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		pos += n + (nl != NULL);
		line++;
		if (memchr(s, '\0', n) != NULL) {
			rv = perr(&ps, line, "NUL byte (not a text file?)");
			if (nl == NULL && line > 1)
				goto cut_short;
			break;
		}
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (line == 1) {
			while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
				n--;
			if (n != strlen(HEADER) || memcmp(s, HEADER, n) != 0) {
				rv = perr(&ps, line, "not a docraft-jepsen history (want '" HEADER "' first)");
				break;
			}
			continue;
		}
		size_t i = 0;
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (blank(s, n))
			continue;
		if (s[i] == '#') {
			if (n - i >= 5 && memcmp(s + i, "# end", 5) == 0)
				h->has_end = true;
			continue;
		}
		if ((rv = parse_line(&ps, line, s, n)) == 0)
			continue;
		if (rv != HISTORY_EPARSE || nl != NULL)
			break;
	cut_short:
		/* The unterminated last line: a writer cut short. */
		h->ignored_line = line;
		snprintf(h->ignored_why, sizeof h->ignored_why, "%s", msg);
		rv = 0;
	}
	free(ps.procs.slots);
	if (rv != 0) {
		struct history tmp = {.events = ps.events, .nevents = ps.nevents, .ops = ps.ops, .nops = ps.nops};
		history_free(&tmp);
		memset(h, 0, sizeof *h);
		if (errmsg != NULL)
			snprintf(errmsg, HISTORY_ERRMSG_SIZE, "%s", msg);
		return rv;
	}
	if (ps.nevents > 1)
		qsort(ps.events, ps.nevents, sizeof *ps.events, cmp_event);
	if (ps.nops > 1)
		qsort(ps.ops, ps.nops, sizeof *ps.ops, cmp_op);
	h->events = ps.events;
	h->nevents = ps.nevents;
	h->ops = ps.ops;
	h->nops = ps.nops;
	return 0;
}

int history_load(const char *path, struct history *h, char *errmsg)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rv;
	memset(h, 0, sizeof *h);
	if (fp == NULL)
		return set_err(errmsg, HISTORY_EIO, "%s: %s", path, strerror(errno));
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 1 << 16;
			char *nb = realloc(buf, ncap);
			if (nb == NULL) {
				free(buf);
				fclose(fp);
				return set_err(errmsg, HISTORY_ENOMEM, "%s: out of memory", path);
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len, fp);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		int e = errno;
		free(buf);
		fclose(fp);
		return set_err(errmsg, HISTORY_EIO, "%s: read error: %s", path, strerror(e));
	}
	fclose(fp);
	rv = history_parse(buf, len, h, errmsg);
	free(buf);
	if (rv != 0 && errmsg != NULL) {
		char tmp[HISTORY_ERRMSG_SIZE];
		snprintf(tmp, sizeof tmp, "%s", errmsg);
		snprintf(errmsg, HISTORY_ERRMSG_SIZE, "%s: %.200s", path, tmp);
	}
	return rv;
}
