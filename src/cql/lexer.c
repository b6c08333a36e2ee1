#include "cql/lexer.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(unsigned char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* U+2018 or U+2019 (E2 80 98 / E2 80 99) at p, within n bytes. */
static bool is_curly_quote(const char *p, size_t n)
{
	return n >= 3 && (unsigned char)p[0] == 0xE2 && (unsigned char)p[1] == 0x80 &&
	       ((unsigned char)p[2] == 0x98 || (unsigned char)p[2] == 0x99);
}

/* Length of the UTF-8 sequence starting at p (1 for a stray byte). */
static size_t utf8_len(const char *p, size_t n)
{
	unsigned char c = (unsigned char)p[0];
	size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
	if (len > n)
		return 1;
	for (size_t i = 1; i < len; i++)
		if (((unsigned char)p[i] & 0xC0) != 0x80)
			return 1;
	return len;
}

void cql_lexer_init(struct cql_lexer *lx, const char *text, size_t len)
{
	lx->text = text;
	lx->len = len;
	lx->off = 0;
	lx->line = 1;
	lx->column = 1;
}

/* Moves n bytes forward, keeping line and column. */
static void advance(struct cql_lexer *lx, size_t n)
{
	for (size_t i = 0; i < n && lx->off < lx->len; i++) {
		unsigned char c = (unsigned char)lx->text[lx->off++];
		if (c == '\n') {
			lx->line++;
			lx->column = 1;
		} else if ((c & 0xC0) != 0x80) {
			lx->column++;
		}
	}
}

static struct cql_pos here(const struct cql_lexer *lx)
{
	struct cql_pos p = {lx->line, lx->column, lx->off, 0};
	return p;
}

const char *cql_tok_name(enum cql_tok kind)
{
	static const char *const names[CQL_TOK_COUNT] = {
		[CQL_TOK_EOF] = "end of input",   [CQL_TOK_IDENT] = "identifier",
		[CQL_TOK_QIDENT] = "quoted identifier", [CQL_TOK_STRING] = "string",
		[CQL_TOK_INT] = "integer",        [CQL_TOK_FLOAT] = "float",
		[CQL_TOK_UUID] = "uuid",          [CQL_TOK_BLOB] = "blob",
		[CQL_TOK_MARKER] = "'?'",         [CQL_TOK_NAMED_MARKER] = "bind marker",
		[CQL_TOK_LPAREN] = "'('",         [CQL_TOK_RPAREN] = "')'",
		[CQL_TOK_LBRACKET] = "'['",       [CQL_TOK_RBRACKET] = "']'",
		[CQL_TOK_LBRACE] = "'{'",         [CQL_TOK_RBRACE] = "'}'",
		[CQL_TOK_COMMA] = "','",          [CQL_TOK_SEMI] = "';'",
		[CQL_TOK_DOT] = "'.'",            [CQL_TOK_COLON] = "':'",
		[CQL_TOK_STAR] = "'*'",           [CQL_TOK_PLUS] = "'+'",
		[CQL_TOK_MINUS] = "'-'",          [CQL_TOK_EQ] = "'='",
		[CQL_TOK_LT] = "'<'",             [CQL_TOK_LE] = "'<='",
		[CQL_TOK_GT] = "'>'",             [CQL_TOK_GE] = "'>='",
		[CQL_TOK_NE] = "'!='",            [CQL_TOK_CONCAT] = "'||'",
	};
	if ((unsigned)kind >= CQL_TOK_COUNT || names[kind] == NULL)
		return "token";
	return names[kind];
}

int cql_error_set(struct cql_error *err, const char *text, const struct cql_pos *pos,
		  const char *fmt, ...)
{
	va_list ap;
	size_t n;
	if (err == NULL)
		return DOCRAFT_EINVAL;
	memset(err, 0, sizeof *err);
	err->line = pos->line;
	err->column = pos->column;
	err->offset = pos->offset;
	err->length = pos->length;
	n = pos->length;
	if (text == NULL)
		n = 0;
	if (n >= sizeof err->token) {
		/* Cut on a character boundary. */
		n = sizeof err->token - 1;
		while (n > 0 && ((unsigned char)text[pos->offset + n] & 0xC0) == 0x80)
			n--;
	}
	if (n > 0)
		memcpy(err->token, text + pos->offset, n);
	err->token[n] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return DOCRAFT_EINVAL;
}

/* Error over [start, lx->off) or, when that is empty, one character. */
static int lex_error(struct cql_lexer *lx, struct cql_pos start, struct cql_error *err,
		     const char *msg)
{
	start.length = lx->off > start.offset ? lx->off - start.offset
					      : utf8_len(lx->text + start.offset,
							 lx->len - start.offset);
	if (start.offset >= lx->len)
		start.length = 0;
	return cql_error_set(err, lx->text, &start, "%s", msg);
}

/* Skips whitespace and comments. */
static int skip_space(struct cql_lexer *lx, struct cql_error *err)
{
	while (lx->off < lx->len) {
		const char *p = lx->text + lx->off;
		size_t rest = lx->len - lx->off;
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' ||
		    *p == '\v') {
			advance(lx, 1);
		} else if (rest >= 2 &&
			   ((p[0] == '-' && p[1] == '-') || (p[0] == '/' && p[1] == '/'))) {
			while (lx->off < lx->len && lx->text[lx->off] != '\n')
				advance(lx, 1);
		} else if (rest >= 2 && p[0] == '/' && p[1] == '*') {
			struct cql_pos start = here(lx);
			advance(lx, 2);
			for (;;) {
				if (lx->off + 1 >= lx->len) {
					lx->off = start.offset;
					lx->line = start.line;
					lx->column = start.column;
					advance(lx, 2);
					return lex_error(lx, start, err, "unterminated comment");
				}
				if (lx->text[lx->off] == '*' && lx->text[lx->off + 1] == '/') {
					advance(lx, 2);
					break;
				}
				advance(lx, 1);
			}
		} else {
			break;
		}
	}
	return 0;
}

/* Whether an unquoted uuid (8-4-4-4-12 hex digits, not followed by an
 * identifier character) starts at p. */
static bool uuid_at(const char *p, size_t n)
{
	static const size_t groups[] = {8, 4, 4, 4, 12};
	size_t i = 0;
	for (size_t g = 0; g < 5; g++) {
		if (g > 0) {
			if (i >= n || p[i] != '-')
				return false;
			i++;
		}
		for (size_t k = 0; k < groups[g]; k++, i++)
			if (i >= n || !is_hex((unsigned char)p[i]))
				return false;
	}
	return i == n || !is_ident_char((unsigned char)p[i]);
}

/* The end of the run of characters from t[i] (of n) that pass is. */
static size_t skip(const char *t, size_t i, size_t n, bool (*is)(unsigned char))
{
	while (i < n && is((unsigned char)t[i]))
		i++;
	return i;
}

/* Consumes a literal of end - lx->off characters. A letter, digit or '_'
 * right after it glues it to a word: the whole word is consumed and is the
 * error what (so that it is reported once, as one token). */
static int end_literal(struct cql_lexer *lx, size_t end, struct cql_token *tok,
		       struct cql_error *err, const char *what)
{
	advance(lx, end - lx->off);
	if (lx->off < lx->len && is_ident_char((unsigned char)lx->text[lx->off])) {
		advance(lx, skip(lx->text, lx->off, lx->len, is_ident_char) - lx->off);
		return lex_error(lx, tok->pos, err, what);
	}
	return 0;
}

static int lex_number(struct cql_lexer *lx, struct cql_token *tok, struct cql_error *err)
{
	const char *t = lx->text;
	size_t i = lx->off, n = lx->len;
	bool is_float = false;
	int rv;
	if (n - i >= 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
		if ((rv = end_literal(lx, skip(t, i + 2, n, is_hex), tok, err,
				      "malformed blob literal")) != 0)
			return rv;
		if ((lx->off - tok->pos.offset) % 2 != 0)
			return lex_error(lx, tok->pos, err,
					 "blob literal has an odd number of hex digits");
		tok->kind = CQL_TOK_BLOB;
		return 0;
	}
	i = skip(t, i, n, is_digit);
	if (i + 1 < n && t[i] == '.' && is_digit((unsigned char)t[i + 1])) {
		is_float = true;
		i = skip(t, i + 1, n, is_digit);
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		size_t j = i + 1;
		if (j < n && (t[j] == '+' || t[j] == '-'))
			j++;
		if (j < n && is_digit((unsigned char)t[j])) {
			is_float = true;
			i = skip(t, j, n, is_digit);
		}
	}
	if ((rv = end_literal(lx, i, tok, err, "malformed number")) != 0)
		return rv;
	tok->kind = is_float ? CQL_TOK_FLOAT : CQL_TOK_INT;
	return 0;
}

/* A string or quoted identifier closed by q (doubled q escapes it). */
static int lex_quoted(struct cql_lexer *lx, struct cql_token *tok, char q, struct cql_error *err)
{
	advance(lx, 1);
	for (;;) {
		if (lx->off >= lx->len) {
			return lex_error(lx, tok->pos, err,
					 q == '\'' ? "unterminated string"
						   : "unterminated quoted identifier");
		}
		if (lx->text[lx->off] == q) {
			if (lx->off + 1 < lx->len && lx->text[lx->off + 1] == q) {
				advance(lx, 2);
				continue;
			}
			advance(lx, 1);
			break;
		}
		advance(lx, 1);
	}
	tok->kind = q == '\'' ? CQL_TOK_STRING : CQL_TOK_QIDENT;
	return 0;
}

static int lex_curly(struct cql_lexer *lx, struct cql_token *tok, struct cql_error *err)
{
	advance(lx, 3);
	while (lx->off < lx->len && !is_curly_quote(lx->text + lx->off, lx->len - lx->off))
		advance(lx, 1);
	if (lx->off >= lx->len)
		return lex_error(lx, tok->pos, err, "unterminated string");
	advance(lx, 3);
	tok->kind = CQL_TOK_STRING;
	return 0;
}

static int lex_dollar(struct cql_lexer *lx, struct cql_token *tok, struct cql_error *err)
{
	advance(lx, 2);
	while (lx->off + 1 < lx->len &&
	       !(lx->text[lx->off] == '$' && lx->text[lx->off + 1] == '$'))
		advance(lx, 1);
	if (lx->off + 1 >= lx->len) {
		advance(lx, lx->len - lx->off);
		return lex_error(lx, tok->pos, err, "unterminated $$ string");
	}
	advance(lx, 2);
	tok->kind = CQL_TOK_STRING;
	return 0;
}

int cql_lex_next(struct cql_lexer *lx, struct cql_token *tok, struct cql_error *err)
{
	const char *p;
	size_t rest;
	int rv;

	memset(tok, 0, sizeof *tok);
	rv = skip_space(lx, err);
	if (rv != 0)
		return rv;
	tok->pos = here(lx);
	tok->text = lx->text + lx->off;
	if (lx->off >= lx->len) {
		tok->kind = CQL_TOK_EOF;
		return 0;
	}
	p = lx->text + lx->off;
	rest = lx->len - lx->off;
	rv = 0;
	if (is_hex((unsigned char)*p) && uuid_at(p, rest)) {
		advance(lx, 36);
		tok->kind = CQL_TOK_UUID;
	} else if (is_digit((unsigned char)*p)) {
		rv = lex_number(lx, tok, err);
	} else if (is_ident_start((unsigned char)*p)) {
		while (lx->off < lx->len && is_ident_char((unsigned char)lx->text[lx->off]))
			advance(lx, 1);
		tok->kind = CQL_TOK_IDENT;
	} else if (*p == '\'' || *p == '"') {
		rv = lex_quoted(lx, tok, *p, err);
	} else if (is_curly_quote(p, rest)) {
		rv = lex_curly(lx, tok, err);
	} else if (rest >= 2 && p[0] == '$' && p[1] == '$') {
		rv = lex_dollar(lx, tok, err);
	} else if (*p == ':' && rest >= 2 && is_ident_start((unsigned char)p[1])) {
		advance(lx, 1);
		while (lx->off < lx->len && is_ident_char((unsigned char)lx->text[lx->off]))
			advance(lx, 1);
		tok->kind = CQL_TOK_NAMED_MARKER;
	} else {
		static const struct {
			const char *s;
			enum cql_tok kind;
		} punct[] = {
			{"<=", CQL_TOK_LE}, {">=", CQL_TOK_GE}, {"!=", CQL_TOK_NE},
			{"||", CQL_TOK_CONCAT}, {"(", CQL_TOK_LPAREN}, {")", CQL_TOK_RPAREN},
			{"[", CQL_TOK_LBRACKET}, {"]", CQL_TOK_RBRACKET}, {"{", CQL_TOK_LBRACE},
			{"}", CQL_TOK_RBRACE}, {",", CQL_TOK_COMMA}, {";", CQL_TOK_SEMI},
			{".", CQL_TOK_DOT}, {":", CQL_TOK_COLON}, {"*", CQL_TOK_STAR},
			{"+", CQL_TOK_PLUS}, {"-", CQL_TOK_MINUS}, {"=", CQL_TOK_EQ},
			{"<", CQL_TOK_LT}, {">", CQL_TOK_GT}, {"?", CQL_TOK_MARKER},
		};
		size_t i;
		for (i = 0; i < sizeof punct / sizeof punct[0]; i++) {
			size_t l = strlen(punct[i].s);
			if (rest >= l && memcmp(p, punct[i].s, l) == 0) {
				advance(lx, l);
				tok->kind = punct[i].kind;
				break;
			}
		}
		if (i == sizeof punct / sizeof punct[0]) {
			size_t l = utf8_len(p, rest);
			char msg[64];
			if (l == 1 && ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7F))
				snprintf(msg, sizeof msg, "unexpected character \\x%02x",
					 (unsigned char)*p);
			else
				snprintf(msg, sizeof msg, "unexpected character '%.*s'", (int)l, p);
			advance(lx, l);
			return lex_error(lx, tok->pos, err, msg);
		}
	}
	if (rv != 0)
		return rv;
	tok->pos.length = lx->off - tok->pos.offset;
	return 0;
}

size_t cql_token_unquote(const struct cql_token *tok, char *out)
{
	const char *p = tok->text;
	size_t len = tok->pos.length, n = 0;
	if (len >= 4 && p[0] == '$' && p[1] == '$') {
		n = len - 4;
		memcpy(out, p + 2, n);
	} else if (len >= 6 && is_curly_quote(p, len)) {
		n = len - 6;
		memcpy(out, p + 3, n);
	} else if (len >= 2 && (p[0] == '\'' || p[0] == '"')) {
		char q = p[0];
		for (size_t i = 1; i + 1 < len; i++) {
			out[n++] = p[i];
			if (p[i] == q)
				i++; /* the doubled quote */
		}
	} else {
		n = len;
		memcpy(out, p, n);
	}
	out[n] = '\0';
	return n;
}
