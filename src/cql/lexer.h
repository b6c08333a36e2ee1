/* The CQL lexer: turns statement text into tokens with positions.
 *
 * Tokens point into the caller's text (no copies, no allocation); the text
 * must outlive them. Positions are 1-based lines and columns, columns
 * counted in characters (UTF-8 code points; a tab is one column), plus the
 * byte offset and byte length, so an error can be shown under its source
 * line with a caret (parser.h, cql_error_render).
 *
 * Lexical rules (the parser's design note has the grammar):
 *   - whitespace; comments `-- …` and `// …` to the end of the line and
 *     `/ * … * /` (no nesting) are skipped;
 *   - identifiers [A-Za-z_][A-Za-z0-9_]* (case-insensitive: the parser
 *     lower-cases them) and "quoted identifiers" ("" escapes a quote, case
 *     kept);
 *   - strings '…' ('' escapes a quote), $$…$$, and the typographic quotes of
 *     the seeds: a string may open with U+2018 or U+2019 and then closes at
 *     the next U+2018 or U+2019 (the seeds write both ‘user1’ and
 *     ’system.cpu’);
 *   - integers 123, floats 1.5 / 1e10 / 1.5e-3 (a sign is a separate `-`
 *     token), uuids 123e4567-e89b-12d3-a456-426614174000 (unquoted, tried
 *     before numbers and identifiers), blobs 0x[0-9a-fA-F]*;
 *   - bind markers `?` and `:name`; punctuation ( ) [ ] { } , ; . : * + -
 *     = < <= > >= != || .
 *
 * Thread-safety: a lexer is used by one thread; distinct lexers are
 * independent. */
#ifndef DOCRAFT_CQL_LEXER_H
#define DOCRAFT_CQL_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "docraft/error.h"

enum cql_tok {
	CQL_TOK_EOF = 0,
	CQL_TOK_IDENT,   /* unquoted word, keywords included */
	CQL_TOK_QIDENT,  /* "quoted identifier" */
	CQL_TOK_STRING,  /* '…', $$…$$, ‘…’ */
	CQL_TOK_INT,     /* digits only */
	CQL_TOK_FLOAT,   /* digits with a '.' and/or an exponent */
	CQL_TOK_UUID,    /* 8-4-4-4-12 hex digits */
	CQL_TOK_BLOB,    /* 0x… */
	CQL_TOK_MARKER,  /* ? */
	CQL_TOK_NAMED_MARKER, /* :name */
	CQL_TOK_LPAREN,
	CQL_TOK_RPAREN,
	CQL_TOK_LBRACKET,
	CQL_TOK_RBRACKET,
	CQL_TOK_LBRACE,
	CQL_TOK_RBRACE,
	CQL_TOK_COMMA,
	CQL_TOK_SEMI,
	CQL_TOK_DOT,
	CQL_TOK_COLON,
	CQL_TOK_STAR,
	CQL_TOK_PLUS,
	CQL_TOK_MINUS,
	CQL_TOK_EQ,
	CQL_TOK_LT,
	CQL_TOK_LE,
	CQL_TOK_GT,
	CQL_TOK_GE,
	CQL_TOK_NE,
	CQL_TOK_CONCAT, /* || */
	CQL_TOK_COUNT
};

/* Where a token (or an error) is in the source text. */
struct cql_pos {
	uint32_t line;   /* 1-based */
	uint32_t column; /* 1-based, in code points */
	size_t offset;   /* bytes from the start of the text */
	size_t length;   /* bytes; 0 at the end of the input */
};

struct cql_token {
	enum cql_tok kind;
	struct cql_pos pos;
	const char *text; /* text + pos.offset: the token as written */
};

/* A located error: what the parser, the binder and the schema builder
 * report. token is the offending token as written (truncated to fit, empty
 * at the end of the input); message says what was expected or what is
 * wrong, without the location (cql_error_render adds it). */
#define CQL_ERROR_TOKEN_MAX 64
struct cql_error {
	uint32_t line;
	uint32_t column;
	size_t offset;
	size_t length;
	char token[CQL_ERROR_TOKEN_MAX];
	char message[DOCRAFT_ERRMSG_SIZE];
};

struct cql_lexer {
	const char *text;
	size_t len;
	size_t off;
	uint32_t line;
	uint32_t column;
};

/* text[0..len) is the input; it need not be NUL-terminated. */
void cql_lexer_init(struct cql_lexer *lx, const char *text, size_t len);

/* Reads the next token (CQL_TOK_EOF, repeatedly, at the end; its position
 * is the end of the input). Returns 0, or DOCRAFT_EINVAL with err filled
 * (when err is not NULL) for an unterminated string, quoted identifier or
 * comment, a malformed number, uuid or blob, or a character that starts no
 * token; err then points at the offending text. */
int cql_lex_next(struct cql_lexer *lx, struct cql_token *tok, struct cql_error *err);

/* Decodes the value of a CQL_TOK_STRING or CQL_TOK_QIDENT token (quotes
 * removed, doubled quotes undone) into out, which must have room for
 * tok->pos.length + 1 bytes; NUL-terminates it and returns its length. */
size_t cql_token_unquote(const struct cql_token *tok, char *out);

/* "identifier", "string", "'('", "end of input", ... for messages. */
const char *cql_tok_name(enum cql_tok kind);

/* Fills err for a token or a position: line/column/offset/length from pos,
 * token from text + pos.offset (NULL text: empty), message from fmt.
 * Returns DOCRAFT_EINVAL. */
int cql_error_set(struct cql_error *err, const char *text, const struct cql_pos *pos,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
