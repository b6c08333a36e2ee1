/* The CQL parser of `docraft shell` / `docraft -e`: text in, syntax tree out
 * (ast.h). A pure library: no I/O, no global state.
 *
 * The grammar (EBNF) is in the design note at the top of parser.c. In short:
 * CREATE TABLE, DROP TABLE, INSERT, UPDATE, DELETE and SELECT … [AS OF
 * <hybrid time>], several statements per input, `;` optional between them.
 *
 * Errors point at the offending token: struct cql_error (lexer.h) has its
 * line, column, byte offset and text plus a message such as "expected
 * VALUES"; cql_error_render shows it under its source line:
 *
 *   INSERT INTO t (a) VALUS (1)
 *                     ^^^^^ expected VALUES
 *
 * Thread-safety: none needed; every call works on its own arguments. */
#ifndef DOCRAFT_CQL_PARSER_H
#define DOCRAFT_CQL_PARSER_H

#include "common/buf.h"
#include "cql/ast.h"
#include "cql/lexer.h"

/* Largest input accepted (bytes); longer text is DOCRAFT_ETOOBIG. */
#define CQL_MAX_INPUT (16u * 1024 * 1024)

/* Parses every statement of the NUL-terminated text into out (which need not
 * be initialised). Returns 0 and out->n >= 0 statements (an input of only
 * blanks, comments and `;` has none), or DOCRAFT_EINVAL (syntax) /
 * DOCRAFT_ETOOBIG (input too long) with err filled (err may be NULL) and out
 * left empty. Either way cql_free(out) may be called; after a failure it is
 * not needed. */
int cql_parse(const char *text, struct cql_stmts *out, struct cql_error *err);
/* The same for text[0..len), which may hold NUL bytes (an error then). */
int cql_parse_n(const char *text, size_t len, struct cql_stmts *out, struct cql_error *err);

/* Releases everything a parse produced and empties out. Idempotent. */
void cql_free(struct cql_stmts *out);

/* Appends to out the classic two-line display of err against the text it
 * came from: the source line holding the error (tabs kept, a '\r' dropped),
 * then a line of spaces (tabs where the source has tabs) up to the error's
 * column, carets under the offending token (one caret at the end of the
 * input; clipped to its first line) and the message:
 *
 *   INSERT INTO t (a) VALUS (1)
 *                     ^^^^^ expected VALUES
 *
 * Both lines end with '\n'. text must be the same NUL-terminated text that
 * was parsed (after cql_parse_n, only the part before a first NUL shows). */
void cql_error_render(const char *text, const struct cql_error *err, struct buf *out);

/* One line: "line 1, column 19: expected VALUES (at 'VALUS')" into out
 * (appended, no newline). */
void cql_error_format(const struct cql_error *err, struct buf *out);

/* Statement keyword for messages: "CREATE TABLE", "INSERT", ... */
const char *cql_stmt_name(enum cql_stmt_kind kind);

/* Parses a hybrid time as AS OF accepts it: a raw HybridTime integer
 * ("6834582342385664000"), HT(<physical µs>[.<logical>]) as dumps print it,
 * or an ISO-8601 timestamp ('2024-05-01 12:00:00Z', logical 0). Returns 0 or
 * DOCRAFT_EINVAL with a reason in errmsg. For tools that take a time on the
 * command line. */
int cql_parse_hybrid_time(const char *s, uint64_t *ht, char *errmsg);

#endif
