/* RESP2 request parser and reply writer (resp.h).
 *
 * Design note. The parser follows Redis 7's processMultibulkBuffer and
 * processInlineBuffer (networking.c) step for step, so that every input
 * gets the outcome and the error text Redis gives it:
 *  - the request type is decided by its first byte ('*': multibulk);
 *  - a header line ("*N", "$N") ends at the first '\r' and takes one more
 *    byte after it without looking at it, as Redis does; a bulk's trailing
 *    two bytes are skipped unchecked, as Redis does;
 *  - a header line still without '\r' past max_inline bytes is an error
 *    ("too big mbulk count string", "too big bulk count string"), and so
 *    is an inline line without '\n' past max_inline ("too big inline
 *    request");
 *  - numbers are read with string2ll (strict); a count above
 *    max_multibulk is "invalid multibulk length", a length above max_bulk
 *    "invalid bulk length";
 *  - *0 and *-N are empty requests (nothing runs, nothing is replied).
 * One difference: Redis searches lines with strchr, which stops at a NUL
 * byte, so "*1\0\r\n" waits there for more input; we use memchr and
 * report "invalid multibulk length" at once. An inline line is cut at its
 * first NUL as Redis's sdssplitargs (a C-string parser) cuts it.
 *
 * Incremental state: pos (bytes of the request read), multibulk (arguments
 * still to come), bulklen (the next argument's length once its header is
 * read) and the arguments read so far as offsets from the request's start
 * (the caller's buffer may move between calls). A read that splits a
 * request anywhere resumes where the last call stopped: no rescanning, no
 * quadratic cost for a request that trickles in.
 *
 * Memory: the argument table (offsets and the argv handed out) grows by
 * doubling as arguments arrive, starting at min(count, 1024) as Redis's
 * argv does, so a client must send bytes to make it grow; it is kept for
 * the next request up to 1024 entries and shrunk back when larger. */
#include "redis/resp.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/hex.h"
#include "common/mem.h"

struct resp_span {
	size_t off, n;
};

#define ARGV_KEEP 1024u

void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim)
{
	memset(p, 0, sizeof *p);
	if (lim != NULL) {
		p->lim = *lim;
	} else {
		p->lim.max_bulk = RESP_DEFAULT_MAX_BULK;
		p->lim.max_multibulk = RESP_DEFAULT_MAX_MULTIBULK;
		p->lim.max_inline = RESP_DEFAULT_MAX_INLINE;
	}
	p->bulklen = -1;
	buf_init(&p->scratch);
}

void resp_parser_free(struct resp_parser *p)
{
	free(p->span);
	free(p->argv);
	buf_free(&p->scratch);
	p->span = NULL;
	p->argv = NULL;
	p->cap = 0;
}

static void reserve(struct resp_parser *p, uint32_t n)
{
	if (n <= p->cap)
		return;
	p->span = xrealloc(p->span, (size_t)n * sizeof *p->span);
	p->argv = xrealloc(p->argv, (size_t)n * sizeof *p->argv);
	p->cap = n;
}

/* Between requests: an oversized table is given back. */
static void shrink(struct resp_parser *p)
{
	if (p->cap > ARGV_KEEP) {
		p->span = xrealloc(p->span, ARGV_KEEP * sizeof *p->span);
		p->argv = xrealloc(p->argv, ARGV_KEEP * sizeof *p->argv);
		p->cap = ARGV_KEEP;
	}
}

static int proto_error(struct resp_parser *p, const char *what)
{
	snprintf(p->err, sizeof p->err, "ERR Protocol error: %s", what);
	return RESP_EPROTO;
}

int resp_string2ll(const char *s, size_t n, long long *v)
{
	unsigned long long u;
	size_t i = 0;
	int neg = 0;

	if (n == 0 || n >= 21)
		return 0;
	if (n == 1 && s[0] == '0') {
		*v = 0;
		return 1;
	}
	if (s[0] == '-') {
		neg = 1;
		if (++i == n)
			return 0;
	}
	if (s[i] < '1' || s[i] > '9')
		return 0;
	u = (unsigned long long)(s[i++] - '0');
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (u > ULLONG_MAX / 10 || u * 10 > ULLONG_MAX - d)
			return 0;
		u = u * 10 + d;
	}
	if (i < n)
		return 0;
	if (neg) {
		if (u > (unsigned long long)LLONG_MAX + 1)
			return 0;
		*v = u == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)u;
	} else {
		if (u > (unsigned long long)LLONG_MAX)
			return 0;
		*v = (long long)u;
	}
	return 1;
}

static int done(struct resp_parser *p, const char *data, struct resp_request *req)
{
	for (uint32_t i = 0; i < p->argc; i++) {
		p->argv[i].p = data + p->span[i].off;
		p->argv[i].n = p->span[i].n;
	}
	req->argc = p->argc;
	req->argv = p->argv;
	req->used = p->pos;
	p->pos = 0;
	p->multibulk = 0;
	p->bulklen = -1;
	p->argc = 0;
	return RESP_REQUEST;
}

static int blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* sdssplitargs over s[0..n) (n stops at the first NUL: s is a C string
 * there): the arguments go to p->scratch, their spans to p->span. 0, or
 * -1 on unbalanced quotes. */
static int split_args(struct resp_parser *p, const char *s, size_t n)
{
	size_t i = 0;

	p->argc = 0;
	for (;;) {
		int inq = 0, insq = 0, fin = 0;
		size_t start;

		while (i < n && blank((unsigned char)s[i]))
			i++;
		if (i == n)
			return 0;
		start = p->scratch.len;
		while (!fin) {
			char c = i < n ? s[i] : '\0';
			char next = i + 1 < n ? s[i + 1] : '\0';
			if (inq || insq) {
				if (inq && c == '\\' && next == 'x' && i + 3 < n &&
				    hex_digit((unsigned char)s[i + 2]) >= 0 &&
				    hex_digit((unsigned char)s[i + 3]) >= 0) {
					buf_push(&p->scratch,
						 (uint8_t)(hex_digit((unsigned char)s[i + 2]) * 16 +
							   hex_digit((unsigned char)s[i + 3])));
					i += 3;
				} else if (inq && c == '\\' && next != '\0') {
					i++;
					switch (next) {
					case 'n': c = '\n'; break;
					case 'r': c = '\r'; break;
					case 't': c = '\t'; break;
					case 'b': c = '\b'; break;
					case 'a': c = '\a'; break;
					default: c = next; break;
					}
					buf_push(&p->scratch, (uint8_t)c);
				} else if (insq && c == '\\' && next == '\'') {
					i++;
					buf_push(&p->scratch, '\'');
				} else if (c == (inq ? '"' : '\'')) {
					/* a closing quote is followed by a blank or the end */
					if (next != '\0' && !blank((unsigned char)next))
						return -1;
					fin = 1;
				} else if (c == '\0') {
					return -1; /* unterminated quotes */
				} else {
					buf_push(&p->scratch, (uint8_t)c);
				}
			} else {
				switch (c) {
				case ' ':
				case '\n':
				case '\r':
				case '\t':
				case '\0':
					fin = 1;
					break;
				case '"':
					inq = 1;
					break;
				case '\'':
					insq = 1;
					break;
				default:
					buf_push(&p->scratch, (uint8_t)c);
					break;
				}
			}
			if (i < n)
				i++;
		}
		if (p->argc == p->cap)
			reserve(p, p->cap == 0 ? 8 : p->cap * 2);
		p->span[p->argc].off = start;
		p->span[p->argc].n = p->scratch.len - start;
		p->argc++;
	}
}

static int parse_inline(struct resp_parser *p, const char *data, size_t len,
			struct resp_request *req)
{
	const char *nl = memchr(data, '\n', len);
	const char *nul;
	size_t linelen, used;

	if (nl == NULL) {
		if (len > p->lim.max_inline)
			return proto_error(p, "too big inline request");
		return RESP_MORE;
	}
	linelen = (size_t)(nl - data);
	used = linelen + 1;
	if (linelen > 0 && data[linelen - 1] == '\r')
		linelen--;
	nul = memchr(data, '\0', linelen);
	if (nul != NULL)
		linelen = (size_t)(nul - data);
	buf_reset(&p->scratch);
	buf_reserve(&p->scratch, linelen + 1); /* no argument is longer than its line */
	if (split_args(p, data, linelen) != 0) {
		p->argc = 0;
		return proto_error(p, "unbalanced quotes in request");
	}
	/* done() resolves spans against data: here they are in scratch. */
	p->pos = used;
	return done(p, (const char *)p->scratch.data, req);
}

/* The header line at data[p->pos..len) ("*N" or "$N"): RESP_MORE, or
 * RESP_REQUEST with its number's text in [*s, *s + *n) and p->pos past it. */
static int header(struct resp_parser *p, const char *data, size_t len, const char *too_big,
		  const char **s, size_t *n)
{
	const char *at = data + p->pos;
	const char *cr = memchr(at, '\r', len - p->pos);

	if (cr == NULL) {
		if (len - p->pos > p->lim.max_inline)
			return proto_error(p, too_big);
		return RESP_MORE;
	}
	if ((size_t)(cr - data) + 2 > len) /* the byte after '\r' is still to come */
		return RESP_MORE;
	*s = at + 1;
	*n = (size_t)(cr - at - 1);
	return RESP_REQUEST;
}

int resp_parse(struct resp_parser *p, const char *data, size_t len, struct resp_request *req)
{
	const char *s;
	size_t n;
	long long ll;
	int rv;

	PRE(p->pos <= len);
	if (p->pos == 0 && p->multibulk == 0) {
		shrink(p);
		if (len == 0)
			return RESP_MORE;
		if (data[0] != '*')
			return parse_inline(p, data, len, req);
		rv = header(p, data, len, "too big mbulk count string", &s, &n);
		if (rv != RESP_REQUEST)
			return rv;
		if (!resp_string2ll(s, n, &ll) || ll > (long long)p->lim.max_multibulk)
			return proto_error(p, "invalid multibulk length");
		p->pos = (size_t)(s + n - data) + 2;
		if (ll <= 0)
			return done(p, data, req);
		p->multibulk = ll;
		reserve(p, ll < ARGV_KEEP ? (uint32_t)ll : ARGV_KEEP);
	}
	while (p->multibulk > 0) {
		if (p->bulklen < 0) {
			rv = header(p, data, len, "too big bulk count string", &s, &n);
			if (rv != RESP_REQUEST)
				return rv;
			if (data[p->pos] != '$') {
				char what[40];
				snprintf(what, sizeof what, "expected '$', got '%c'", data[p->pos]);
				return proto_error(p, what);
			}
			if (!resp_string2ll(s, n, &ll) || ll < 0 ||
			    (unsigned long long)ll > p->lim.max_bulk)
				return proto_error(p, "invalid bulk length");
			p->pos = (size_t)(s + n - data) + 2;
			p->bulklen = ll;
		}
		if (len - p->pos < (size_t)p->bulklen + 2)
			return RESP_MORE;
		if (p->argc == p->cap)
			reserve(p, p->cap * 2);
		p->span[p->argc].off = p->pos;
		p->span[p->argc].n = (size_t)p->bulklen;
		p->argc++;
		p->pos += (size_t)p->bulklen + 2;
		p->bulklen = -1;
		p->multibulk--;
	}
	return done(p, data, req);
}

size_t resp_parser_need(const struct resp_parser *p)
{
	if (p->multibulk > 0 && p->bulklen >= 0)
		return p->pos + (size_t)p->bulklen + 2;
	return 0;
}

/* ---- replies ---- */

void resp_simple(struct buf *b, const char *s)
{
	PRE(strpbrk(s, "\r\n") == NULL);
	buf_push(b, '+');
	buf_append(b, s, strlen(s));
	buf_append(b, "\r\n", 2);
}

void resp_error(struct buf *b, const char *msg)
{
	size_t n = strlen(msg), at;

	buf_push(b, '-');
	at = b->len;
	buf_append(b, msg, n);
	for (size_t i = at; i < b->len; i++)
		if (b->data[i] == '\r' || b->data[i] == '\n')
			b->data[i] = ' ';
	buf_append(b, "\r\n", 2);
}

void resp_errorf(struct buf *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	resp_error(b, msg);
}

void resp_int(struct buf *b, long long v)
{
	buf_printf(b, ":%lld\r\n", v);
}

void resp_bulk(struct buf *b, const void *p, size_t n)
{
	buf_printf(b, "$%zu\r\n", n);
	buf_append(b, p, n);
	buf_append(b, "\r\n", 2);
}

void resp_bulk_str(struct buf *b, const char *s)
{
	resp_bulk(b, s, strlen(s));
}

void resp_null_bulk(struct buf *b)
{
	buf_append(b, "$-1\r\n", 5);
}

void resp_array(struct buf *b, size_t n)
{
	buf_printf(b, "*%zu\r\n", n);
}

void resp_null_array(struct buf *b)
{
	buf_append(b, "*-1\r\n", 5);
}
