/* Redis commands in the tablet tests (issue 17): a text form for them,
 * reading through a read-only yedis txn, the replies of a Redis write.
 *
 *   "set k v;incr n" -> two commands; words split at single spaces (a
 *   word may not hold ' ' or ';': enough for tests).
 *
 * Header-only (static): each test file that uses it includes it once. */
#ifndef DOCRAFT_TESTS_TABLET_REDIS_CMDS_H
#define DOCRAFT_TESTS_TABLET_REDIS_CMDS_H

#include <string.h>

#include "common/buf.h"
#include "tablet/entry.h"
#include "tablet/tablet.h"
#include "test.h"
#include "yedis/yedis.h"

/* The words of one command of line (up to ';') into argv; returns the
 * number, *next past the ';' (or at the end). */
static inline uint32_t redis_words(const char *line, const char **next, struct resp_arg *argv,
				   uint32_t max)
{
	uint32_t n = 0;
	const char *p = line;
	while (*p != '\0' && *p != ';') {
		const char *w = p;
		while (*p != '\0' && *p != ';' && *p != ' ')
			p++;
		CHECK(n < max);
		argv[n].p = w;
		argv[n].n = (size_t)(p - w);
		n++;
		if (*p == ' ')
			p++;
	}
	*next = *p == ';' ? p + 1 : p;
	return n;
}

/* The commands of line, in entry.h's encoding, into out. */
static inline void redis_encode(struct buf *out, const char *line)
{
	struct resp_arg argv[16];
	uint32_t ncmds = 0;
	const char *p = line, *next;
	while (*p != '\0') {
		redis_words(p, &next, argv, 16);
		ncmds++;
		p = next;
	}
	entry_redis_begin(out, ncmds);
	for (p = line; *p != '\0'; p = next) {
		uint32_t n = redis_words(p, &next, argv, 16);
		entry_redis_command(out, n);
		for (uint32_t i = 0; i < n; i++)
			entry_redis_arg(out, argv[i].p, argv[i].n);
	}
}

/* Runs line's commands read-only on s at ht; their replies into out. */
static inline void redis_read(struct store *s, uint64_t ht, const char *line, struct buf *out)
{
	struct yedis_txn_options o = {.store = s, .ht = ht, .seed = 1};
	struct yedis_txn *t = yedis_txn_new(&o);
	struct resp_arg argv[16];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *next;
	buf_reset(out);
	for (const char *p = line; *p != '\0'; p = next) {
		uint32_t n = redis_words(p, &next, argv, 16);
		CHECK_OK_MSG(yedis_exec(t, n, argv, out, errmsg), errmsg);
	}
	yedis_txn_free(t);
}

/* A Redis write's replies (w answered with status 0), concatenated, into
 * out; checks that their lengths add up. */
static inline void redis_replies(const struct tablet_write *w, struct buf *out)
{
	size_t total = 0;
	buf_reset(out);
	for (uint32_t i = 0; i < w->nreplies; i++)
		total += w->reply_len[i];
	buf_append(out, w->replies, total);
	buf_push(out, 0);
	out->len--; /* a C string too */
}

/* A Redis write and its answer. */
struct rw {
	struct tablet_write req;
	struct buf cmds;
	struct buf replies; /* concatenated, NUL-terminated */
	int status;
	bool done;
};

static inline void rw_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct rw *w = req->data;
	(void)ht;
	w->status = status;
	w->done = true;
	if (status == 0)
		redis_replies(req, &w->replies);
}

/* The Redis write of line's commands from client with seq. */
static inline void rw_init(struct rw *w, uint8_t client, uint64_t seq, const char *line)
{
	memset(w, 0, sizeof *w);
	redis_encode(&w->cmds, line);
	memset(w->req.client_id, client, sizeof w->req.client_id);
	w->req.seq = seq;
	w->req.min_running = 1;
	w->req.redis = w->cmds.data;
	w->req.redis_len = w->cmds.len;
	w->req.cb = rw_cb;
	w->req.data = w;
}

static inline void rw_free(struct rw *w)
{
	buf_free(&w->cmds);
	buf_free(&w->replies);
}

#endif
