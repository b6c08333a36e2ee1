/* See sendrecv.h. */
#include "sendrecv.h"

#include <stdio.h>
#include <string.h>

#include "raft/rwire.h"

uint64_t cb_seq;

void sent_reset(struct sent *s)
{
	memset(s, 0, sizeof *s);
	s->req.data = s;
}

void sent_cb(struct raft_io_send *req, int status)
{
	struct sent *s = req->data;
	s->status = status;
	s->n_calls++;
	s->seq = ++cb_seq;
}

bool all_sent(void *p)
{
	struct sent_wait *w = p;
	for (int i = 0; i < w->n; i++)
		if (w->s[i].n_calls == 0)
			return false;
	return true;
}

void inbox_put(struct inbox *b, struct raft_message *m)
{
	if (b->n_got == INBOX_MAX) {
		rwire_message_free(m);
		return;
	}
	snprintf(b->got_from[b->n_got], sizeof b->got_from[0], "%s", m->server_address);
	b->got[b->n_got] = *m;
	b->got[b->n_got].server_address = b->got_from[b->n_got];
	b->n_got++;
}

void inbox_free(struct inbox *b)
{
	for (int i = 0; i < b->n_got; i++)
		rwire_message_free(&b->got[i]);
	b->n_got = 0;
}
