/* The CQL subset of `docraft shell`: a recursive-descent parser.
 *
 * Design. One token of lookahead (p->tok) from the lexer, plus a second one
 * taken by copying the lexer (peek) where an assignment must tell
 * `m = m + {…}` from `m = user1`. Every rule either consumes what it
 * recognises or fails with a located error and nothing to undo: the whole
 * tree lives in one arena, dropped as a unit on failure. Keywords are not
 * separate tokens: a rule asks whether the current identifier spells one
 * (case-insensitively); the words listed in `reserved` cannot be unquoted
 * names, which keeps errors precise ("expected column name" at SELECT, not
 * somewhere later). Literals are kept untyped (ast.h); bind.h types them
 * against a column. Only syntax is checked here, plus what needs no schema
 * (one primary key definition, as many values as columns, the ranges of TTL,
 * LIMIT, default_time_to_live and hybrid times); names against a schema are
 * bind.h's job (cql_check_stmt, cql_create_schema).
 *
 * One file (over 1,000 lines, most of them the grammar's rules and this
 * note): the rules are mutually recursive (a term holds collections and
 * function calls of terms; every statement uses terms, names and WHERE) and
 * all work through the same dozen static helpers on struct parser (next,
 * peek, accept, expect, fail, vec_push, ...). Splitting statements from
 * terms would turn those helpers and the parser's state into an internal
 * interface without making either half readable alone; the grammar below
 * is the map of the file.
 *
 * The seeds' quirks: `WHERE a = 1, b = 2` (a comma for AND) is grammar;
 * ‘curly’ quotes delimit strings (lexer.h); `VALUES (user1, …)` gives a bare
 * word literal, which bind.h stores in text columns as written; `//` and
 * `--` comments may follow a statement; seed 001's YSQL parses too (jsonb is
 * just an unknown type name, `||` an append) and fails at its first non-CQL
 * step. `T1:` labels are not CQL: the caller strips them.
 *
 * Grammar (EBNF; UPPER words are case-insensitive keywords, `ident` an
 * unquoted or "quoted" identifier, [ ] optional, { } repeated):
 *
 *   input      = { ";" } { statement { ";" } } EOF
 *                (`;` is optional: a statement also ends where the next
 *                 one's first keyword starts)
 *   statement  = create | drop | insert | update | delete | select | describe
 *   create     = CREATE TABLE [ IF NOT EXISTS ] qname
 *                "(" element { "," element } ")"
 *                [ WITH option { AND option } ]
 *   element    = ident type [ PRIMARY KEY ]
 *              | PRIMARY KEY "(" partition { "," ident } ")"
 *   partition  = ident | "(" ident { "," ident } ")"
 *   type       = ident                    (boolean, int, text, ...; an unknown
 *                                          name is left to cql_create_schema)
 *              | MAP "<" ident "," ident ">" | SET "<" ident ">" | LIST "<" ident ">"
 *   option     = CLUSTERING ORDER BY "(" ident [ ASC | DESC ]
 *                                       { "," ident [ ASC | DESC ] } ")"
 *              | ident "=" term           (default_time_to_live = integer)
 *   drop       = DROP TABLE [ IF EXISTS ] qname
 *   describe   = DESCRIBE ( TABLES | TABLE qname )
 *   insert     = INSERT INTO qname "(" ident { "," ident } ")"
 *                VALUES "(" term { "," term } ")" [ using ]
 *   using      = USING TTL integer
 *   update     = UPDATE qname [ using ] SET assignment { "," assignment }
 *                WHERE where [ IF where ]       (IF: "=" only; conditional)
 *   assignment = ident "=" term                         (set, NULL, replace)
 *              | ident "=" ident ( "+" | "-" | "||" ) term  (same column twice)
 *              | ident "=" term "+" ident                   (list prepend)
 *              | ident "[" term "]" "=" term                (map entry)
 *   delete     = DELETE [ target { "," target } ] FROM qname WHERE where
 *   target     = ident [ "[" term "]" ]
 *   select     = SELECT ( "*" | ident { "," ident } ) FROM qname
 *                [ WHERE where ] [ ORDER BY ident [ ASC | DESC ]
 *                { "," ident [ ASC | DESC ] } ] [ LIMIT integer ]
 *                [ ALLOW FILTERING ] [ AS OF hybrid_time ]
 *   where      = condition { ( AND | "," ) condition }  (the comma: seed 000)
 *   condition  = ident ( "=" | "<" | "<=" | ">" | ">=" ) term
 *   hybrid_time = integer                       (a raw HybridTime)
 *              | HT "(" integer [ "." integer ] ")"   (as dumps print it)
 *              | string                         (ISO-8601, logical 0)
 *   qname      = ident [ "." ident ]
 *   term       = literal | "?" | ":" ident | ident "(" [ term { "," term } ] ")"
 *              | ident                          (a bare word: CQL_LIT_IDENT)
 *   literal    = string | [ "-" ] ( integer | float | NAN | INFINITY )
 *              | TRUE | FALSE | NULL | uuid | blob
 *              | "{" [ scalar ":" scalar { "," scalar ":" scalar } ] "}"
 *              | "{" scalar { "," scalar } "}" | "[" [ scalar { "," scalar } ] "]"
 *   scalar     = a term that is not a collection (no nesting)
 *
 * Comments (-- // and C style) and the lexical forms are in lexer.h. */
#include "cql/parser.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/hex.h"
#include "common/hlc.h"
#include "cql/bind.h"

/* Function calls nest at most this deep (uuid() is depth 1). */
#define MAX_DEPTH 8

struct parser {
	const char *text;
	size_t len;
	struct cql_lexer lx;
	struct cql_token tok;  /* current */
	struct cql_token prev; /* last consumed; kind EOF before the first */
	struct arena *a;
	struct cql_error *err;
	int nmarkers;
	int depth;
};

/* A growing array in the arena (doubling; the old block is left behind). */
struct vec {
	void *v;
	size_t n;
	size_t cap;
};

/* Hands vec's elements over to the tree: returns the array (in the
 * arena), *n its length. */
static void *vec_take(const struct vec *vec, size_t *n)
{
	*n = vec->n;
	return vec->v;
}

static void *vec_push(struct parser *p, struct vec *vec, size_t elsize)
{
	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 4;
		void *v = arena_alloc(p->a, cap * elsize);
		if (vec->n > 0)
			memcpy(v, vec->v, vec->n * elsize);
		vec->v = v;
		vec->cap = cap;
	}
	void *el = (char *)vec->v + vec->n++ * elsize;
	memset(el, 0, elsize);
	return el;
}

static const char *const reserved[] = {
	"allow", "and", "asc", "by", "create", "delete", "desc", "drop", "false", "from",
	"if", "in", "infinity", "insert", "into", "limit", "nan", "not", "null", "order",
	"primary", "select", "set", "table", "true", "update", "using", "where", "with",
};

static bool tok_is_word(const struct cql_token *t, const char *w)
{
	size_t l = strlen(w);
	return t->kind == CQL_TOK_IDENT && t->pos.length == l && strncasecmp(t->text, w, l) == 0;
}

static bool is_reserved(const struct cql_token *t)
{
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (tok_is_word(t, reserved[i]))
			return true;
	return false;
}

static bool is_kw(const struct parser *p, const char *w)
{
	return tok_is_word(&p->tok, w);
}

/* The position just after a token (its line and column follow its text). */
static struct cql_pos pos_after(const struct cql_token *t)
{
	struct cql_pos pos = t->pos;
	for (size_t i = 0; i < t->pos.length; i++) {
		unsigned char c = (unsigned char)t->text[i];
		if (c == '\n') {
			pos.line++;
			pos.column = 1;
		} else if ((c & 0xC0) != 0x80) {
			pos.column++;
		}
	}
	pos.offset += t->pos.length;
	pos.length = 0;
	return pos;
}

/* Error at the current token; at the end of the input, just after the last
 * token, with ", got end of input" appended. */
static int __attribute__((format(printf, 2, 3))) fail(struct parser *p, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (p->tok.kind == CQL_TOK_EOF) {
		struct cql_pos pos = p->prev.kind == CQL_TOK_EOF ? p->tok.pos : pos_after(&p->prev);
		return cql_error_set(p->err, p->text, &pos, "%s, got end of input", msg);
	}
	return cql_error_set(p->err, p->text, &p->tok.pos, "%s", msg);
}

static int __attribute__((format(printf, 3, 4)))
fail_at(struct parser *p, const struct cql_pos *pos, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return cql_error_set(p->err, p->text, pos, "%s", msg);
}

static int next(struct parser *p)
{
	p->prev = p->tok;
	return cql_lex_next(&p->lx, &p->tok, p->err);
}

/* The kind of the token after the current one. */
static enum cql_tok peek(const struct parser *p)
{
	struct cql_lexer lx = p->lx;
	struct cql_token t;
	if (cql_lex_next(&lx, &t, NULL) != 0)
		return CQL_TOK_EOF;
	return t.kind;
}

#define TRY(x)                             \
	do {                               \
		int rv_ = (x);             \
		if (rv_ != 0)              \
			return rv_;        \
	} while (0)

static int accept(struct parser *p, enum cql_tok kind, bool *got)
{
	*got = p->tok.kind == kind;
	return *got ? next(p) : 0;
}

static int expect(struct parser *p, enum cql_tok kind)
{
	if (p->tok.kind != kind)
		return fail(p, "expected %s", cql_tok_name(kind));
	return next(p);
}

static int accept_kw(struct parser *p, const char *w, bool *got)
{
	*got = is_kw(p, w);
	return *got ? next(p) : 0;
}

/* w in upper case for the message. */
static int expect_kw(struct parser *p, const char *w)
{
	if (!is_kw(p, w))
		return fail(p, "expected %s", w);
	return next(p);
}

/* Span [from, end of the last consumed token). */
static struct cql_pos span_from(const struct parser *p, const struct cql_pos *from)
{
	struct cql_pos pos = *from;
	size_t end = p->prev.pos.offset + p->prev.pos.length;
	pos.length = end > from->offset ? end - from->offset : 0;
	return pos;
}

static const char *copy_span(struct parser *p, const struct cql_pos *pos)
{
	char *s = arena_alloc(p->a, pos->length + 1);
	memcpy(s, p->text + pos->offset, pos->length);
	s[pos->length] = '\0';
	return s;
}

/* An identifier: unquoted (lower-cased) or "quoted" (kept). what names it
 * in errors ("column name"). */
static int parse_ident(struct parser *p, const char *what, struct cql_ident *out)
{
	char *s;
	if (p->tok.kind == CQL_TOK_IDENT) {
		if (is_reserved(&p->tok))
			return fail(p, "expected %s (%.*s is a reserved word; quote it: \"%.*s\")",
				    what, (int)p->tok.pos.length, p->tok.text,
				    (int)p->tok.pos.length, p->tok.text);
		s = arena_alloc(p->a, p->tok.pos.length + 1);
		for (size_t i = 0; i < p->tok.pos.length; i++) {
			char c = p->tok.text[i];
			s[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
		}
		s[p->tok.pos.length] = '\0';
	} else if (p->tok.kind == CQL_TOK_QIDENT) {
		s = arena_alloc(p->a, p->tok.pos.length + 1);
		size_t n = cql_token_unquote(&p->tok, s);
		if (n == 0)
			return fail(p, "expected %s (a quoted identifier cannot be empty)", what);
		if (strlen(s) != n)
			return fail(p, "expected %s (a quoted identifier cannot hold a NUL byte)",
				    what);
	} else {
		return fail(p, "expected %s", what);
	}
	out->name = s;
	out->pos = p->tok.pos;
	return next(p);
}

/* ident { "," ident }, appended to out (of struct cql_ident). */
static int parse_idents(struct parser *p, const char *what, struct vec *out)
{
	bool got;
	do {
		TRY(parse_ident(p, what, vec_push(p, out, sizeof(struct cql_ident))));
		TRY(accept(p, CQL_TOK_COMMA, &got));
	} while (got);
	return 0;
}

/* The ")" that closes a comma-separated list. */
static int close_list(struct parser *p)
{
	if (p->tok.kind != CQL_TOK_RPAREN)
		return fail(p, "expected ',' or ')'");
	return next(p);
}

/* ident [ "." ident ] */
static int parse_qname(struct parser *p, struct cql_ident *ks, struct cql_ident *table)
{
	bool dot;
	memset(ks, 0, sizeof *ks);
	TRY(parse_ident(p, "table name", table));
	TRY(accept(p, CQL_TOK_DOT, &dot));
	if (dot) {
		*ks = *table;
		TRY(parse_ident(p, "table name", table));
	}
	return 0;
}

/* ---- literals ---- */

/* Digits of an integer token into a magnitude; false on overflow. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static int parse_term(struct parser *p, struct cql_literal *lit, bool allow_coll);

static int parse_number(struct parser *p, struct cql_literal *lit, bool neg)
{
	if (p->tok.kind == CQL_TOK_INT) {
		uint64_t m;
		lit->kind = CQL_LIT_INT;
		if (!parse_u64(p->tok.text, p->tok.pos.length, &m) ||
		    m > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
			lit->v.int_overflow = true;
			lit->v.i = neg ? INT64_MIN : INT64_MAX;
		} else {
			lit->v.i = neg ? (int64_t)(0 - m) : (int64_t)m;
		}
	} else if (p->tok.kind == CQL_TOK_FLOAT) {
		char *s = arena_alloc(p->a, p->tok.pos.length + 1);
		memcpy(s, p->tok.text, p->tok.pos.length);
		s[p->tok.pos.length] = '\0';
		lit->kind = CQL_LIT_FLOAT;
		lit->v.f = strtod(s, NULL);
		if (neg)
			lit->v.f = -lit->v.f;
	} else if (is_kw(p, "nan")) {
		lit->kind = CQL_LIT_FLOAT;
		lit->v.f = neg ? -__builtin_nan("") : __builtin_nan("");
	} else if (is_kw(p, "infinity")) {
		lit->kind = CQL_LIT_FLOAT;
		lit->v.f = neg ? -__builtin_inf() : __builtin_inf();
	} else {
		return fail(p, "expected a number after '-'");
	}
	return next(p);
}

static int parse_collection(struct parser *p, struct cql_literal *lit)
{
	struct vec items = {0}, vals = {0};
	bool is_list = p->tok.kind == CQL_TOK_LBRACKET;
	enum cql_tok close = is_list ? CQL_TOK_RBRACKET : CQL_TOK_RBRACE;
	bool got;
	TRY(next(p));
	lit->kind = is_list ? CQL_LIT_LIST : CQL_LIT_SET;
	TRY(accept(p, close, &got));
	if (got)
		return 0;
	for (;;) {
		struct cql_literal *it = vec_push(p, &items, sizeof *it);
		TRY(parse_term(p, it, false));
		if (!is_list && items.n == 1 && p->tok.kind == CQL_TOK_COLON)
			lit->kind = CQL_LIT_MAP;
		if (lit->kind == CQL_LIT_MAP) {
			struct cql_literal *v = vec_push(p, &vals, sizeof *v);
			TRY(expect(p, CQL_TOK_COLON));
			TRY(parse_term(p, v, false));
		}
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
	}
	if (p->tok.kind != close)
		return fail(p, "expected ',' or %s", cql_tok_name(close));
	TRY(next(p));
	lit->v.coll.items = items.v;
	lit->v.coll.vals = vals.v;
	lit->v.coll.n = items.n;
	return 0;
}

static int parse_func(struct parser *p, struct cql_literal *lit)
{
	struct vec args = {0};
	struct cql_ident name;
	bool got;
	TRY(parse_ident(p, "function name", &name));
	TRY(expect(p, CQL_TOK_LPAREN));
	if (++p->depth > MAX_DEPTH)
		return fail_at(p, &name.pos, "function calls nested too deeply");
	lit->kind = CQL_LIT_FUNC;
	lit->v.func.name = name.name;
	TRY(accept(p, CQL_TOK_RPAREN, &got));
	if (!got) {
		for (;;) {
			struct cql_literal *arg = vec_push(p, &args, sizeof *arg);
			TRY(parse_term(p, arg, false));
			TRY(accept(p, CQL_TOK_COMMA, &got));
			if (!got)
				break;
		}
		TRY(close_list(p));
	}
	p->depth--;
	lit->v.func.args = vec_take(&args, &lit->v.func.nargs);
	return 0;
}

static void parse_uuid_token(const struct cql_token *t, uint8_t out[16])
{
	size_t k = 0;
	for (size_t i = 0; i + 1 < t->pos.length && k < 16; i++) {
		if (t->text[i] == '-')
			continue;
		out[k++] = (uint8_t)(hex_digit(t->text[i]) << 4 | hex_digit(t->text[i + 1]));
		i++;
	}
}

static int parse_term(struct parser *p, struct cql_literal *lit, bool allow_coll)
{
	struct cql_pos start = p->tok.pos;
	memset(lit, 0, sizeof *lit);
	switch (p->tok.kind) {
	case CQL_TOK_STRING: {
		char *s = arena_alloc(p->a, p->tok.pos.length + 1);
		lit->kind = CQL_LIT_STRING;
		lit->v.str.len = cql_token_unquote(&p->tok, s);
		lit->v.str.p = s;
		TRY(next(p));
		break;
	}
	case CQL_TOK_INT:
	case CQL_TOK_FLOAT:
		TRY(parse_number(p, lit, false));
		break;
	case CQL_TOK_MINUS:
		TRY(next(p));
		TRY(parse_number(p, lit, true));
		break;
	case CQL_TOK_UUID:
		lit->kind = CQL_LIT_UUID;
		parse_uuid_token(&p->tok, lit->v.uuid);
		TRY(next(p));
		break;
	case CQL_TOK_BLOB: {
		size_t n = (p->tok.pos.length - 2) / 2;
		uint8_t *b = arena_alloc(p->a, n + 1);
		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)(hex_digit(p->tok.text[2 + 2 * i]) << 4 |
					 hex_digit(p->tok.text[3 + 2 * i]));
		b[n] = 0;
		lit->kind = CQL_LIT_BLOB;
		lit->v.str.p = (const char *)b;
		lit->v.str.len = n;
		TRY(next(p));
		break;
	}
	case CQL_TOK_MARKER:
	case CQL_TOK_NAMED_MARKER:
		lit->kind = CQL_LIT_MARKER;
		lit->v.marker.index = p->nmarkers++;
		if (p->tok.kind == CQL_TOK_NAMED_MARKER) {
			struct cql_pos np = p->tok.pos;
			np.offset++;
			np.length--;
			lit->v.marker.name = copy_span(p, &np);
		}
		TRY(next(p));
		break;
	case CQL_TOK_LBRACE:
	case CQL_TOK_LBRACKET:
		if (!allow_coll)
			return fail(p, "nested collections are not supported");
		TRY(parse_collection(p, lit));
		break;
	case CQL_TOK_IDENT:
		if (is_kw(p, "true") || is_kw(p, "false")) {
			lit->kind = CQL_LIT_BOOL;
			lit->v.b = is_kw(p, "true");
			TRY(next(p));
		} else if (is_kw(p, "null")) {
			lit->kind = CQL_LIT_NULL;
			TRY(next(p));
		} else if (is_kw(p, "nan") || is_kw(p, "infinity")) {
			TRY(parse_number(p, lit, false));
		} else if (is_reserved(&p->tok)) {
			return fail(p, "expected a value");
		} else if (peek(p) == CQL_TOK_LPAREN) {
			TRY(parse_func(p, lit));
		} else {
			lit->kind = CQL_LIT_IDENT;
			lit->v.ident = copy_span(p, &p->tok.pos);
			TRY(next(p));
		}
		break;
	case CQL_TOK_QIDENT:
		return fail(p, "expected a value (strings take single quotes; double quotes "
			       "are for identifiers)");
	default:
		return fail(p, "expected a value");
	}
	lit->pos = span_from(p, &start);
	lit->src = copy_span(p, &lit->pos);
	return 0;
}

/* ---- CREATE TABLE ---- */

static int parse_type(struct parser *p, struct cql_type *ty)
{
	struct cql_ident id;
	struct cql_pos start = p->tok.pos;
	char buf[3 * SCHEMA_MAX_NAME + 16];
	memset(ty, 0, sizeof *ty);
	if (p->tok.kind != CQL_TOK_IDENT)
		return fail(p, "expected a type");
	if (is_kw(p, "map") || is_kw(p, "set") || is_kw(p, "list")) {
		bool is_map = is_kw(p, "map");
		struct cql_ident el[2];
		enum col_type et[2] = {0, 0};
		ty->type = is_map ? CT_MAP : is_kw(p, "set") ? CT_SET : CT_LIST;
		TRY(next(p));
		TRY(expect(p, CQL_TOK_LT));
		for (int i = 0; i < (is_map ? 2 : 1); i++) {
			if (i == 1)
				TRY(expect(p, CQL_TOK_COMMA));
			if (is_kw(p, "map") || is_kw(p, "set") || is_kw(p, "list") ||
			    is_kw(p, "frozen"))
				return fail(p, "nested collections are not supported");
			if (p->tok.kind != CQL_TOK_IDENT)
				return fail(p, "expected a type");
			el[i].name = copy_span(p, &p->tok.pos);
			el[i].pos = p->tok.pos;
			for (char *c = (char *)el[i].name; *c; c++)
				*c = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c;
			et[i] = col_type_parse(el[i].name);
			if (et[i] == 0 && ty->unknown.name == NULL)
				ty->unknown = el[i];
			TRY(next(p));
		}
		TRY(expect(p, CQL_TOK_GT));
		ty->elem_type = et[0];
		ty->value_type = et[1];
		if (is_map)
			snprintf(buf, sizeof buf, "map<%.*s, %.*s>", SCHEMA_MAX_NAME, el[0].name,
				 SCHEMA_MAX_NAME, el[1].name);
		else
			snprintf(buf, sizeof buf, "%s<%.*s>", ty->type == CT_SET ? "set" : "list",
				 SCHEMA_MAX_NAME, el[0].name);
		ty->name = arena_dup(p->a, buf, strlen(buf) + 1);
	} else if (is_kw(p, "frozen") || is_kw(p, "tuple")) {
		return fail(p, "%.*s types are not supported", (int)p->tok.pos.length, p->tok.text);
	} else {
		id.name = copy_span(p, &p->tok.pos);
		for (char *c = (char *)id.name; *c; c++)
			*c = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c;
		id.pos = p->tok.pos;
		ty->name = id.name;
		ty->type = col_type_parse(id.name);
		if (ty->type == 0)
			ty->unknown = id;
		TRY(next(p));
	}
	ty->pos = span_from(p, &start);
	return 0;
}

static int parse_pk(struct parser *p, struct cql_create_table *ct)
{
	struct vec hash = {0}, range = {0};
	bool got;
	TRY(expect(p, CQL_TOK_LPAREN));
	TRY(accept(p, CQL_TOK_LPAREN, &got));
	if (got) {
		TRY(parse_idents(p, "column name", &hash));
		TRY(close_list(p));
	} else {
		TRY(parse_ident(p, "column name", vec_push(p, &hash, sizeof(struct cql_ident))));
	}
	for (;;) {
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
		TRY(parse_ident(p, "column name", vec_push(p, &range, sizeof(struct cql_ident))));
	}
	TRY(close_list(p));
	ct->hash = vec_take(&hash, &ct->nhash);
	ct->range = vec_take(&range, &ct->nrange);
	return 0;
}

static int parse_order_list(struct parser *p, struct vec *out)
{
	bool got;
	for (;;) {
		struct cql_order *o = vec_push(p, out, sizeof *o);
		TRY(parse_ident(p, "column name", &o->col));
		if (is_kw(p, "desc") || is_kw(p, "asc")) {
			o->desc = is_kw(p, "desc");
			TRY(next(p));
		}
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			return 0;
	}
}

static int parse_create(struct parser *p, struct cql_stmt *st)
{
	struct cql_create_table *ct = &st->u.create;
	struct vec cols = {0}, opts = {0}, order = {0};
	bool got, any_pk = false, pk_may_follow = false;
	TRY(expect_kw(p, "TABLE"));
	TRY(accept_kw(p, "if", &got));
	if (got) {
		TRY(expect_kw(p, "NOT"));
		TRY(expect_kw(p, "EXISTS"));
		ct->if_not_exists = true;
	}
	TRY(parse_qname(p, &ct->keyspace, &ct->table));
	TRY(expect(p, CQL_TOK_LPAREN));
	for (;;) {
		pk_may_follow = false;
		if (is_kw(p, "primary")) {
			struct cql_pos at = p->tok.pos;
			if (any_pk)
				return fail(p, "the primary key is already defined");
			TRY(next(p));
			TRY(expect_kw(p, "KEY"));
			ct->has_pk = true;
			ct->pk_pos = at;
			any_pk = true;
			TRY(parse_pk(p, ct));
		} else {
			struct cql_coldef *c = vec_push(p, &cols, sizeof *c);
			TRY(parse_ident(p, "column name", &c->name));
			TRY(parse_type(p, &c->type));
			if (is_kw(p, "primary")) {
				if (any_pk)
					return fail(p, "the primary key is already defined");
				c->pk_pos = p->tok.pos;
				TRY(next(p));
				TRY(expect_kw(p, "KEY"));
				c->primary_key = true;
				any_pk = true;
			}
			pk_may_follow = !any_pk;
		}
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
	}
	if (p->tok.kind != CQL_TOK_RPAREN)
		return fail(p, pk_may_follow ? "expected ',', ')' or PRIMARY KEY"
					     : "expected ',' or ')'");
	TRY(next(p));
	ct->cols = vec_take(&cols, &ct->ncols);
	TRY(accept_kw(p, "with", &got));
	while (got) {
		if (is_kw(p, "clustering")) {
			if (order.n > 0)
				return fail(p, "CLUSTERING ORDER is already given");
			TRY(next(p));
			TRY(expect_kw(p, "ORDER"));
			TRY(expect_kw(p, "BY"));
			TRY(expect(p, CQL_TOK_LPAREN));
			TRY(parse_order_list(p, &order));
			if (p->tok.kind != CQL_TOK_RPAREN)
				return fail(p, "expected ASC, DESC, ',' or ')'");
			TRY(next(p));
		} else {
			struct cql_ident name;
			struct cql_literal v;
			TRY(parse_ident(p, "table option", &name));
			TRY(expect(p, CQL_TOK_EQ));
			TRY(parse_term(p, &v, true));
			if (strcmp(name.name, "default_time_to_live") == 0) {
				if (ct->has_default_ttl)
					return fail_at(p, &name.pos,
						       "default_time_to_live is already given");
				if (v.kind != CQL_LIT_INT || v.v.int_overflow || v.v.i < 0 ||
				    v.v.i > CQL_MAX_TTL_S)
					return fail_at(p, &v.pos,
						       "default_time_to_live must be a number of "
						       "seconds, 0..%" PRId64, CQL_MAX_TTL_S);
				ct->has_default_ttl = true;
				ct->default_ttl_s = v.v.i;
			} else {
				struct cql_option *o = vec_push(p, &opts, sizeof *o);
				o->name = name;
				o->value = v;
			}
		}
		TRY(accept_kw(p, "and", &got));
	}
	ct->clustering = vec_take(&order, &ct->nclustering);
	ct->options = vec_take(&opts, &ct->noptions);
	return 0;
}

static int parse_drop(struct parser *p, struct cql_stmt *st)
{
	struct cql_drop_table *d = &st->u.drop;
	bool got;
	TRY(expect_kw(p, "TABLE"));
	TRY(accept_kw(p, "if", &got));
	if (got) {
		TRY(expect_kw(p, "EXISTS"));
		d->if_exists = true;
	}
	return parse_qname(p, &d->keyspace, &d->table);
}

static int parse_describe(struct parser *p, struct cql_stmt *st)
{
	struct cql_describe *d = &st->u.describe;
	bool got;
	TRY(accept_kw(p, "tables", &got));
	if (got) {
		d->tables = true;
		return 0;
	}
	if (!is_kw(p, "table"))
		return fail(p, "expected TABLES or TABLE");
	TRY(next(p));
	return parse_qname(p, &d->keyspace, &d->table);
}

/* ---- INSERT / UPDATE / DELETE ---- */

static int parse_using(struct parser *p, bool *has_ttl, int64_t *ttl_s, struct cql_pos *ttl_pos)
{
	bool got;
	do {
		if (is_kw(p, "timestamp"))
			return fail(p, "USING TIMESTAMP is not supported");
		if (*has_ttl && is_kw(p, "ttl"))
			return fail(p, "TTL is already given");
		TRY(expect_kw(p, "TTL"));
		if (p->tok.kind == CQL_TOK_INT) {
			uint64_t v;
			if (!parse_u64(p->tok.text, p->tok.pos.length, &v) || v > CQL_MAX_TTL_S)
				return fail(p, "TTL must be 0..%" PRId64 " seconds", CQL_MAX_TTL_S);
			*has_ttl = true;
			*ttl_s = (int64_t)v;
			*ttl_pos = p->tok.pos;
			TRY(next(p));
		} else {
			return fail(p, "expected the TTL in seconds (an integer)");
		}
		TRY(accept_kw(p, "and", &got));
	} while (got);
	return 0;
}

static int parse_insert(struct parser *p, struct cql_stmt *st)
{
	struct cql_insert *in = &st->u.insert;
	struct vec cols = {0}, vals = {0};
	bool got;
	TRY(expect_kw(p, "INTO"));
	TRY(parse_qname(p, &in->keyspace, &in->table));
	TRY(expect(p, CQL_TOK_LPAREN));
	TRY(parse_idents(p, "column name", &cols));
	TRY(close_list(p));
	TRY(expect_kw(p, "VALUES"));
	TRY(expect(p, CQL_TOK_LPAREN));
	for (;;) {
		struct cql_literal *v = vec_push(p, &vals, sizeof *v);
		TRY(parse_term(p, v, true));
		if (vals.n > cols.n)
			return fail_at(p, &v->pos, "more values than columns (%zu)", cols.n);
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
	}
	if (p->tok.kind != CQL_TOK_RPAREN)
		return fail(p, "expected ',' or ')'");
	if (vals.n < cols.n)
		return fail(p, "expected ',' and %zu more value%s (one per column)",
			    cols.n - vals.n, cols.n - vals.n > 1 ? "s" : "");
	TRY(next(p));
	in->cols = cols.v;
	in->values = vals.v;
	in->ncols = cols.n;
	TRY(accept_kw(p, "using", &got));
	if (got)
		TRY(parse_using(p, &in->has_ttl, &in->ttl_s, &in->ttl_pos));
	return 0;
}

static int parse_where(struct parser *p, struct cql_cond **out, size_t *n)
{
	struct vec conds = {0};
	bool got;
	for (;;) {
		struct cql_cond *c = vec_push(p, &conds, sizeof *c);
		TRY(parse_ident(p, "column name", &c->col));
		c->rel_pos = p->tok.pos;
		switch (p->tok.kind) {
		case CQL_TOK_EQ: c->rel = CQL_REL_EQ; break;
		case CQL_TOK_LT: c->rel = CQL_REL_LT; break;
		case CQL_TOK_LE: c->rel = CQL_REL_LE; break;
		case CQL_TOK_GT: c->rel = CQL_REL_GT; break;
		case CQL_TOK_GE: c->rel = CQL_REL_GE; break;
		case CQL_TOK_NE: return fail(p, "!= is not supported in WHERE");
		default:
			if (is_kw(p, "in"))
				return fail(p, "IN is not supported");
			return fail(p, "expected =, <, <=, > or >=");
		}
		TRY(next(p));
		TRY(parse_term(p, &c->value, true));
		TRY(accept_kw(p, "and", &got));
		if (!got)
			TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
	}
	*out = vec_take(&conds, n);
	return 0;
}

/* The column an assignment names again on its right side (`c = c + …`,
 * `c = […] + c`): it must be as->col; why says so in the error. */
static int parse_same_column(struct parser *p, struct cql_assign *as, const char *why)
{
	struct cql_ident same;
	struct cql_token at = p->tok;
	TRY(parse_ident(p, "column name", &same));
	if (strcmp(same.name, as->col.name) != 0)
		return fail_at(p, &at.pos, "expected %s (%s)", as->col.name, why);
	return 0;
}

static int parse_assign(struct parser *p, struct cql_assign *as)
{
	bool got;
	TRY(parse_ident(p, "column name", &as->col));
	TRY(accept(p, CQL_TOK_LBRACKET, &got));
	if (got) {
		TRY(parse_term(p, &as->key, false));
		TRY(expect(p, CQL_TOK_RBRACKET));
		as->op = CQL_ASSIGN_ELEM;
		as->op_pos = p->tok.pos;
		TRY(expect(p, CQL_TOK_EQ));
		return parse_term(p, &as->value, false);
	}
	as->op_pos = p->tok.pos;
	TRY(expect(p, CQL_TOK_EQ));
	if (p->tok.kind == CQL_TOK_IDENT || p->tok.kind == CQL_TOK_QIDENT) {
		enum cql_tok k = peek(p);
		if (k == CQL_TOK_PLUS || k == CQL_TOK_MINUS || k == CQL_TOK_CONCAT) {
			TRY(parse_same_column(p, as, "`c = c + …` updates the column it names"));
			as->op = k == CQL_TOK_MINUS ? CQL_ASSIGN_REMOVE : CQL_ASSIGN_ADD;
			as->concat = k == CQL_TOK_CONCAT;
			as->op_pos = p->tok.pos;
			TRY(next(p));
			return parse_term(p, &as->value, true);
		}
	}
	TRY(parse_term(p, &as->value, true));
	as->op = CQL_ASSIGN_SET;
	if (p->tok.kind == CQL_TOK_PLUS) {
		as->op_pos = p->tok.pos;
		TRY(next(p));
		if (p->tok.kind != CQL_TOK_IDENT && p->tok.kind != CQL_TOK_QIDENT)
			return fail(p,
				    "expected %s (`c = […] + c` prepends to the column it names)",
				    as->col.name);
		if (p->tok.kind == CQL_TOK_IDENT && is_reserved(&p->tok))
			return fail(p, "expected %s", as->col.name);
		TRY(parse_same_column(p, as, "`c = […] + c` prepends to the column it names"));
		as->op = CQL_ASSIGN_PREPEND;
	}
	return 0;
}

static int parse_update(struct parser *p, struct cql_stmt *st)
{
	struct cql_update *up = &st->u.update;
	struct vec as = {0};
	bool got;
	TRY(parse_qname(p, &up->keyspace, &up->table));
	TRY(accept_kw(p, "using", &got));
	if (got)
		TRY(parse_using(p, &up->has_ttl, &up->ttl_s, &up->ttl_pos));
	if (!is_kw(p, "set"))
		return fail(p, up->has_ttl ? "expected AND or SET" : "expected USING or SET");
	TRY(next(p));
	for (;;) {
		TRY(parse_assign(p, vec_push(p, &as, sizeof(struct cql_assign))));
		TRY(accept(p, CQL_TOK_COMMA, &got));
		if (!got)
			break;
	}
	up->assigns = vec_take(&as, &up->nassigns);
	if (!is_kw(p, "where"))
		return fail(p, "expected ',' or WHERE");
	TRY(next(p));
	TRY(parse_where(p, &up->where, &up->nwhere));
	/* IF col = value [AND ...]: a conditional write (compare-and-set). */
	TRY(accept_kw(p, "if", &got));
	if (!got)
		return 0;
	if (is_kw(p, "exists") || is_kw(p, "not"))
		return fail(p, "IF [NOT] EXISTS is not supported in UPDATE: write IF col = value "
			       "(or IF col = NULL)");
	TRY(parse_where(p, &up->ifs, &up->nifs));
	for (size_t i = 0; i < up->nifs; i++)
		if (up->ifs[i].rel != CQL_REL_EQ)
			return fail_at(p, &up->ifs[i].rel_pos, "only = is supported in IF");
	return 0;
}

static int parse_delete(struct parser *p, struct cql_stmt *st)
{
	struct cql_delete *d = &st->u.del;
	struct vec targets = {0};
	bool got;
	if (!is_kw(p, "from")) {
		for (;;) {
			struct cql_delete_target *t = vec_push(p, &targets, sizeof *t);
			TRY(parse_ident(p, "column name or FROM", &t->col));
			TRY(accept(p, CQL_TOK_LBRACKET, &got));
			if (got) {
				t->has_key = true;
				TRY(parse_term(p, &t->key, false));
				TRY(expect(p, CQL_TOK_RBRACKET));
			}
			TRY(accept(p, CQL_TOK_COMMA, &got));
			if (!got)
				break;
		}
		if (!is_kw(p, "from"))
			return fail(p, "expected ',' or FROM");
	}
	TRY(next(p)); /* FROM */
	d->targets = vec_take(&targets, &d->ntargets);
	TRY(parse_qname(p, &d->keyspace, &d->table));
	if (is_kw(p, "using"))
		return fail(p, "USING is not supported in DELETE");
	TRY(expect_kw(p, "WHERE"));
	return parse_where(p, &d->where, &d->nwhere);
}

/* ---- SELECT ---- */

/* The digits of tok, or a failure. */
static int token_u64(struct parser *p, const struct cql_token *t, const char *s, size_t n,
		     uint64_t *v)
{
	if (n == 0 || !parse_u64(s, n, v))
		return fail_at(p, &t->pos, "hybrid time out of range");
	return 0;
}

static int parse_hybrid_time(struct parser *p, uint64_t *ht, struct cql_pos *at)
{
	struct cql_pos start = p->tok.pos;
	if (p->tok.kind == CQL_TOK_INT) {
		TRY(token_u64(p, &p->tok, p->tok.text, p->tok.pos.length, ht));
		TRY(next(p));
	} else if (p->tok.kind == CQL_TOK_STRING) {
		char *s = arena_alloc(p->a, p->tok.pos.length + 1);
		char msg[DOCRAFT_ERRMSG_SIZE];
		int64_t us;
		size_t n = cql_token_unquote(&p->tok, s);
		if (cql_parse_timestamp(s, n, &us, msg) != 0)
			return fail(p, "%s", msg);
		if (us < 0 || (uint64_t)us > (UINT64_MAX >> HT_LOGICAL_BITS))
			return fail(p, "hybrid time out of range");
		*ht = ht_make((uint64_t)us, 0);
		TRY(next(p));
	} else if (is_kw(p, "ht")) {
		uint64_t phys = 0, logical = 0;
		const char *dot;
		TRY(next(p));
		TRY(expect(p, CQL_TOK_LPAREN));
		if (p->tok.kind == CQL_TOK_INT) {
			TRY(token_u64(p, &p->tok, p->tok.text, p->tok.pos.length, &phys));
		} else if (p->tok.kind == CQL_TOK_FLOAT &&
			   (dot = memchr(p->tok.text, '.', p->tok.pos.length)) != NULL &&
			   strcspn(p->tok.text, "eE") >= p->tok.pos.length) {
			size_t ip = (size_t)(dot - p->tok.text);
			TRY(token_u64(p, &p->tok, p->tok.text, ip, &phys));
			TRY(token_u64(p, &p->tok, dot + 1, p->tok.pos.length - ip - 1, &logical));
		} else {
			return fail(p, "expected <physical µs>[.<logical>]");
		}
		if (phys > (UINT64_MAX >> HT_LOGICAL_BITS) || logical > HT_LOGICAL_MASK)
			return fail(p, "hybrid time out of range (logical is 0..%u)",
				    (unsigned)HT_LOGICAL_MASK);
		*ht = ht_make(phys, (uint32_t)logical);
		TRY(next(p));
		TRY(expect(p, CQL_TOK_RPAREN));
	} else {
		return fail(p, "expected a hybrid time: an integer, HT(<µs>.<logical>) or "
			       "an ISO-8601 string");
	}
	*at = span_from(p, &start);
	return 0;
}

static int parse_select(struct parser *p, struct cql_stmt *st)
{
	struct cql_select *s = &st->u.select;
	struct vec cols = {0}, order = {0};
	bool got;
	TRY(accept(p, CQL_TOK_STAR, &got));
	s->star = got;
	if (!got) {
		TRY(parse_idents(p, "column name or *", &cols));
		if (!is_kw(p, "from"))
			return fail(p, "expected ',' or FROM");
	}
	s->cols = vec_take(&cols, &s->ncols);
	TRY(expect_kw(p, "FROM"));
	TRY(parse_qname(p, &s->keyspace, &s->table));
	TRY(accept_kw(p, "where", &got));
	if (got)
		TRY(parse_where(p, &s->where, &s->nwhere));
	TRY(accept_kw(p, "order", &got));
	if (got) {
		TRY(expect_kw(p, "BY"));
		TRY(parse_order_list(p, &order));
		s->order_by = vec_take(&order, &s->norder_by);
	}
	if (is_kw(p, "limit")) {
		TRY(next(p));
		if (p->tok.kind != CQL_TOK_INT)
			return fail(p, "expected the LIMIT (a positive integer)");
		{
			uint64_t v;
			if (!parse_u64(p->tok.text, p->tok.pos.length, &v) || v == 0 ||
			    v > INT64_MAX)
				return fail(p, "LIMIT must be 1..%" PRId64, INT64_MAX);
			s->has_limit = true;
			s->limit = (int64_t)v;
			s->limit_pos = p->tok.pos;
		}
		TRY(next(p));
	}
	TRY(accept_kw(p, "allow", &got));
	if (got) {
		TRY(expect_kw(p, "FILTERING"));
		s->allow_filtering = true;
	}
	TRY(accept_kw(p, "as", &got));
	if (got) {
		TRY(expect_kw(p, "OF"));
		TRY(parse_hybrid_time(p, &s->as_of, &s->as_of_pos));
		s->has_as_of = true;
	}
	return 0;
}

/* What may follow a complete statement, for "expected …" messages. */
static const char *after_stmt(const struct cql_stmt *st)
{
	const struct cql_select *s = &st->u.select;
	switch (st->kind) {
	case CQL_STMT_CREATE_TABLE:
		return st->u.create.nclustering > 0 || st->u.create.has_default_ttl ||
				       st->u.create.noptions > 0
			       ? "expected AND or ';'"
			       : "expected WITH or ';'";
	case CQL_STMT_INSERT:
		return st->u.insert.has_ttl ? "expected AND or ';'" : "expected USING or ';'";
	case CQL_STMT_UPDATE:
		return st->u.update.nifs > 0 ? "expected AND or ';'" : "expected AND, IF or ';'";
	case CQL_STMT_DELETE:
		return "expected AND or ';'";
	case CQL_STMT_SELECT:
		if (s->has_as_of)
			return "expected ';'";
		if (s->allow_filtering)
			return "expected AS OF or ';'";
		if (s->has_limit)
			return "expected ALLOW FILTERING, AS OF or ';'";
		if (s->norder_by > 0)
			return "expected ',', LIMIT, ALLOW FILTERING, AS OF or ';'";
		if (s->nwhere > 0)
			return "expected AND, ORDER BY, LIMIT, ALLOW FILTERING, AS OF or ';'";
		return "expected WHERE, ORDER BY, LIMIT, ALLOW FILTERING, AS OF or ';'";
	default:
		return "expected ';'";
	}
}

/* The statements, indexed by kind: the keyword that starts one, its name
 * in messages (cql_stmt_name) and its rule. */
static const struct stmt_rule {
	const char *kw;
	const char *name;
	int (*parse)(struct parser *p, struct cql_stmt *st);
} stmt_rules[] = {
	[CQL_STMT_CREATE_TABLE] = {"create", "CREATE TABLE", parse_create},
	[CQL_STMT_DROP_TABLE] = {"drop", "DROP TABLE", parse_drop},
	[CQL_STMT_INSERT] = {"insert", "INSERT", parse_insert},
	[CQL_STMT_UPDATE] = {"update", "UPDATE", parse_update},
	[CQL_STMT_DELETE] = {"delete", "DELETE", parse_delete},
	[CQL_STMT_SELECT] = {"select", "SELECT", parse_select},
	[CQL_STMT_DESCRIBE] = {"describe", "DESCRIBE", parse_describe},
};
#define N_STMT_RULES (sizeof stmt_rules / sizeof stmt_rules[0])

/* The rule of the statement token t starts, or NULL. */
static const struct stmt_rule *stmt_rule(const struct cql_token *t)
{
	for (size_t k = 0; k < N_STMT_RULES; k++)
		if (stmt_rules[k].kw != NULL && tok_is_word(t, stmt_rules[k].kw))
			return &stmt_rules[k];
	return NULL;
}

static int parse_stmt(struct parser *p, struct cql_stmt *st)
{
	struct cql_pos start = p->tok.pos;
	const struct stmt_rule *rule;
	p->nmarkers = 0;
	p->depth = 0;
	if ((rule = stmt_rule(&p->tok)) == NULL)
		return fail(p,
			    "expected a statement: CREATE, DROP, INSERT, UPDATE, DELETE, SELECT or "
			    "DESCRIBE");
	st->kind = (enum cql_stmt_kind)(rule - stmt_rules);
	TRY(next(p)); /* the keyword: each rule starts after it */
	TRY(rule->parse(p, st));
	st->pos = span_from(p, &start);
	st->src = copy_span(p, &st->pos);
	st->nmarkers = p->nmarkers;
	if (p->tok.kind != CQL_TOK_SEMI && p->tok.kind != CQL_TOK_EOF && stmt_rule(&p->tok) == NULL)
		return fail(p, "%s", after_stmt(st));
	return 0;
}

int cql_parse_n(const char *text, size_t len, struct cql_stmts *out, struct cql_error *err)
{
	struct parser p;
	struct vec stmts = {0};
	int rv;

	memset(out, 0, sizeof *out);
	arena_init(&out->arena);
	if (err != NULL)
		memset(err, 0, sizeof *err);
	if (len > CQL_MAX_INPUT) {
		struct cql_pos pos = {1, 1, 0, 0};
		cql_error_set(err, NULL, &pos, "input of %zu bytes is too long (at most %u)", len,
			      CQL_MAX_INPUT);
		return DOCRAFT_ETOOBIG;
	}
	memset(&p, 0, sizeof p);
	p.text = text;
	p.len = len;
	p.a = &out->arena;
	p.err = err;
	cql_lexer_init(&p.lx, text, len);
	rv = next(&p);
	for (;;) {
		if (rv != 0)
			break;
		if (p.tok.kind == CQL_TOK_SEMI) {
			rv = next(&p);
			continue;
		}
		if (p.tok.kind == CQL_TOK_EOF)
			break;
		rv = parse_stmt(&p, vec_push(&p, &stmts, sizeof(struct cql_stmt)));
	}
	if (rv != 0) {
		cql_free(out);
		return rv;
	}
	out->v = vec_take(&stmts, &out->n);
	return 0;
}

int cql_parse(const char *text, struct cql_stmts *out, struct cql_error *err)
{
	return cql_parse_n(text, strlen(text), out, err);
}

void cql_free(struct cql_stmts *out)
{
	arena_free(&out->arena);
	out->v = NULL;
	out->n = 0;
}

const char *cql_stmt_name(enum cql_stmt_kind kind)
{
	if ((size_t)kind >= N_STMT_RULES || stmt_rules[kind].name == NULL)
		return "?";
	return stmt_rules[kind].name;
}

/* Longest stretch of a source line shown on either side of the error. */
#define RENDER_CONTEXT 60

void cql_error_render(const char *text, const struct cql_error *err, struct buf *out)
{
	size_t len = strlen(text), off = err->offset, start, end, from, to, carets = 0;
	if (off > len)
		off = len;
	start = off;
	while (start > 0 && text[start - 1] != '\n')
		start--;
	end = off;
	while (end < len && text[end] != '\n')
		end++;
	if (end > start && text[end - 1] == '\r')
		end--;
	/* Window long lines around the error, on character boundaries. */
	from = start;
	if (off - start > 2 * RENDER_CONTEXT) {
		from = off - RENDER_CONTEXT;
		while (from > start && ((unsigned char)text[from] & 0xC0) == 0x80)
			from--;
	}
	to = end;
	{
		size_t tok_end = off + err->length < end ? off + err->length : end;
		if (end - tok_end > 2 * RENDER_CONTEXT) {
			to = tok_end + RENDER_CONTEXT;
			while (to < end && ((unsigned char)text[to] & 0xC0) == 0x80)
				to++;
		}
		for (size_t i = off; i < tok_end; i++)
			if (((unsigned char)text[i] & 0xC0) != 0x80)
				carets++;
	}
	if (from > start)
		buf_append(out, "...", 3);
	buf_append(out, text + from, to - from);
	if (to < end)
		buf_append(out, "...", 3);
	buf_push(out, '\n');
	if (from > start)
		buf_append(out, "   ", 3);
	for (size_t i = from; i < off; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\t')
			buf_push(out, '\t');
		else if ((c & 0xC0) != 0x80)
			buf_push(out, ' ');
	}
	if (carets == 0)
		carets = 1;
	for (size_t i = 0; i < carets; i++)
		buf_push(out, '^');
	buf_printf(out, " %s\n", err->message);
}

void cql_error_format(const struct cql_error *err, struct buf *out)
{
	buf_printf(out, "line %u, column %u: %s", err->line, err->column, err->message);
	if (err->token[0] != '\0')
		buf_printf(out, " (at '%s')", err->token);
}

int cql_parse_hybrid_time(const char *s, uint64_t *ht, char *errmsg)
{
	struct arena a = ARENA_INIT;
	struct cql_error err;
	struct cql_pos at;
	struct parser p;
	int rv;

	memset(&p, 0, sizeof p);
	p.text = s;
	p.len = strlen(s);
	p.a = &a;
	p.err = &err;
	cql_lexer_init(&p.lx, s, p.len);
	rv = next(&p);
	if (rv == 0)
		rv = parse_hybrid_time(&p, ht, &at);
	if (rv == 0 && p.tok.kind != CQL_TOK_EOF)
		rv = fail(&p, "expected the end of the hybrid time");
	arena_free(&a);
	if (rv != 0) {
		/* An unquoted ISO-8601 timestamp, as typed on a command line. */
		int64_t us;
		if (s[0] >= '0' && s[0] <= '9' && strchr(s, '-') != NULL &&
		    cql_parse_timestamp(s, strlen(s), &us, NULL) == 0 && us >= 0 &&
		    (uint64_t)us <= (UINT64_MAX >> HT_LOGICAL_BITS)) {
			*ht = ht_make((uint64_t)us, 0);
			return 0;
		}
		return err_set(errmsg, rv, "%s", err.message);
	}
	return 0;
}
