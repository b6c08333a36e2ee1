/* Send requests and received messages of the rnet and rmux tests
 * (test_rnet, test_rmux): a raft_io_send that records its callback, a
 * predicate that waits for a set of them, and an inbox that keeps what a
 * recv callback was given.
 *
 * Loop thread only. */
#ifndef DOCRAFT_TESTS_RAFT_SENDRECV_H
#define DOCRAFT_TESTS_RAFT_SENDRECV_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

/* Numbers callbacks in the order they run (sends, closes, work). */
extern uint64_t cb_seq;

struct sent {
	struct raft_io_send req;
	int status;
	int n_calls;
	uint64_t seq; /* cb_seq at the callback */
};

/* Zeroes s and points s->req.data at it; then pass &s->req and sent_cb. */
void sent_reset(struct sent *s);
void sent_cb(struct raft_io_send *req, int status);

/* For loop_run_until: every one of s[0..n) has had its callback. */
struct sent_wait {
	struct sent *s;
	int n;
};
bool all_sent(void *p);

#define INBOX_MAX 64

/* Received messages, with their sender address copied; the inbox owns
 * their buffers (inbox_free). Beyond INBOX_MAX a message is freed. */
struct inbox {
	int n_got;
	struct raft_message got[INBOX_MAX];
	char got_from[INBOX_MAX][64];
};

void inbox_put(struct inbox *b, struct raft_message *m);
void inbox_free(struct inbox *b);

#endif
