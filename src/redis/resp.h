/* RESP2, the Redis wire protocol: an incremental request parser and a
 * reply writer. Pure: no I/O, no libuv; the server (server.c) owns the
 * sockets and feeds the parser from its read buffer.
 *
 * Requests come in the two forms Redis accepts: a multibulk array of bulk
 * strings ("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"), or an inline command line
 * ("PING\r\n", split as Redis's sdssplitargs splits it: blanks separate
 * arguments, "double quotes" with \n \r \t \b \a \xHH escapes, 'single
 * quotes' with \'). A request starting with '*' is a multibulk, any other
 * an inline line, as in Redis.
 *
 * Limits and errors are Redis 7's (networking.c): a protocol error gives
 * the exact reply text Redis gives (resp_parser.err, "Protocol error: ...")
 * and the server must close the connection once that reply is written.
 *
 * Ownership: a parser owns its argument table and its scratch buffer (the
 * unescaped arguments of an inline command), both reused from command to
 * command (no allocation per argument). Arguments point into the caller's
 * input bytes (multibulk) or into the scratch buffer (inline); they stay
 * valid until the next resp_parse call or until the caller drops or moves
 * those input bytes. Not thread-safe: one parser per connection. */
#ifndef DOCRAFT_REDIS_RESP_H
#define DOCRAFT_REDIS_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Redis's own limits: proto-max-bulk-len is 512 MiB there; ours defaults
 * to the largest value DocDB stores (DOCWRITE_MAX_VALUE, 4 MiB; the
 * tserver glue checks the two agree). */
#define RESP_DEFAULT_MAX_BULK (4u << 20)
#define RESP_DEFAULT_MAX_MULTIBULK (1024u * 1024)
#define RESP_DEFAULT_MAX_INLINE (64u * 1024) /* PROTO_INLINE_MAX_SIZE */

struct resp_limits {
	uint64_t max_bulk;      /* longest bulk string argument, bytes */
	uint32_t max_multibulk; /* most arguments of a multibulk request */
	size_t max_inline;      /* longest inline line or header line without its \r\n */
};

/* One argument: n bytes at p (not NUL-terminated; may hold any byte). */
struct resp_arg {
	const char *p;
	size_t n;
};

struct resp_span; /* parser.c: an argument as an offset into the input */

struct resp_parser {
	struct resp_limits lim;
	/* The request in progress (all zero / -1 between requests). */
	size_t pos;          /* its bytes parsed so far */
	long long multibulk; /* its arguments still to read */
	long long bulklen;   /* the next argument's length; -1: header unread */
	uint32_t argc;
	uint32_t cap; /* entries of span and argv */
	struct resp_span *span;
	struct resp_arg *argv;
	struct buf scratch;
	char err[64]; /* the reply text of the last RESP_EPROTO */
};

/* A complete request. argc may be 0 (an empty line, "*0\r\n", "*-1\r\n"):
 * Redis executes nothing and replies nothing for it. */
struct resp_request {
	uint32_t argc;
	const struct resp_arg *argv;
	size_t used; /* input bytes it took, its \r\n included */
};

enum {
	RESP_EPROTO = -1, /* protocol error: reply p->err, then close */
	RESP_MORE = 0,    /* the request is not complete: call again with more */
	RESP_REQUEST = 1, /* *req holds one request */
};

/* An idle parser with limits lim (NULL: the defaults). Release it with
 * resp_parser_free. */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);
void resp_parser_free(struct resp_parser *p);

/* Parses the request at the start of data[0..len). Between calls that
 * return RESP_MORE the caller keeps every byte it passed and passes them
 * again, at the same offsets from data (the buffer itself may move), with
 * more bytes after them; the parser does not rescan what it already read.
 * On RESP_REQUEST the caller drops req->used bytes before the next call.
 * After RESP_EPROTO the parser must not be used again but for
 * resp_parser_free (the connection closes). */
int resp_parse(struct resp_parser *p, const char *data, size_t len, struct resp_request *req);

/* Bytes the request in progress still needs at least (a hint for the read
 * buffer's size; 0 when unknown). */
size_t resp_parser_need(const struct resp_parser *p);

/* ---- The reply writer: each call appends one RESP2 value to b. ---- */

/* "+s\r\n"; s must not hold \r or \n (PRE). */
void resp_simple(struct buf *b, const char *s);
/* "-msg\r\n"; msg starts with the error code ("ERR ...", "WRONGTYPE ...");
 * \r and \n in it become spaces, as Redis's addReplyError does. */
void resp_error(struct buf *b, const char *msg);
void resp_errorf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_int(struct buf *b, long long v);
void resp_bulk(struct buf *b, const void *p, size_t n);
void resp_bulk_str(struct buf *b, const char *s);
void resp_null_bulk(struct buf *b);
/* The header of an array of n values; the caller appends the n values. */
void resp_array(struct buf *b, size_t n);
void resp_null_array(struct buf *b);

/* Redis's string2ll: a strict decimal integer (optional '-', no '+', no
 * leading zeros, no blanks, at most 20 characters). 1 and *v set when
 * s[0..n) is one, 0 otherwise. */
int resp_string2ll(const char *s, size_t n, long long *v);

#endif
