/* The counting state machine and its load: see seqfsm.h. */
#include "seqfsm.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct seq_fsm *f = fsm->data;
	uint64_t v = 0;

	*result = NULL;
	if (buf->len != 8) {
		f->bad++;
		return 0;
	}
	memcpy(&v, buf->base, 8);
	if (v >= SEQ_MAX) {
		f->bad++;
		return 0;
	}
	if (!f->seen[v]) {
		f->seen[v] = 1;
		f->distinct++;
		f->sum += v;
	}
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct seq_fsm *f = fsm->data;

	*bufs = raft_malloc(sizeof **bufs);
	(*bufs)[0].base = raft_malloc(SEQ_MAX);
	(*bufs)[0].len = SEQ_MAX;
	memcpy((*bufs)[0].base, f->seen, SEQ_MAX);
	*n = 1;
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct seq_fsm *f = fsm->data;

	if (buf->len != SEQ_MAX)
		return RAFT_MALFORMED;
	memcpy(f->seen, buf->base, SEQ_MAX);
	f->distinct = 0;
	f->sum = 0;
	for (unsigned i = 0; i < SEQ_MAX; i++) {
		if (f->seen[i]) {
			f->distinct++;
			f->sum += i;
		}
	}
	f->n_restores++;
	raft_free(buf->base);
	return 0;
}

void seq_fsm_reset(struct seq_fsm *f)
{
	memset(f, 0, sizeof *f);
	f->fsm.version = 1;
	f->fsm.data = f;
	f->fsm.apply = fsm_apply;
	f->fsm.snapshot = fsm_snapshot;
	f->fsm.restore = fsm_restore;
}

bool seq_fsm_has(const struct seq_fsm *f, unsigned target)
{
	uint64_t want = (uint64_t)target * (target - 1) / 2;
	return f->distinct == target && f->sum == want;
}

struct apply_req {
	struct raft_apply req;
	struct seq_load *l;
	unsigned seq;
};

static void apply_cb(struct raft_apply *req, int status, void *result)
{
	struct apply_req *a = req->data;

	(void)result;
	if (status == 0) {
		a->l->state[a->seq] = 2;
	} else {
		a->l->state[a->seq] = 0;
		a->l->n_failed++;
	}
	free(a);
}

void seq_load_pump(struct seq_load *l, struct raft *leader)
{
	for (unsigned seq = 0; leader != NULL && seq < l->target; seq++) {
		struct apply_req *a;
		struct raft_buffer buf;
		uint64_t v = seq;

		if (l->state[seq] != 0)
			continue;
		a = xmalloc(sizeof *a);
		a->req.data = a;
		a->l = l;
		a->seq = seq;
		buf.len = 8;
		buf.base = raft_malloc(8);
		memcpy(buf.base, &v, 8);
		if (raft_apply(leader, &a->req, &buf, 1, apply_cb) != 0) {
			raft_free(buf.base);
			free(a);
			return; /* not leader any more: next time */
		}
		l->state[seq] = 1;
	}
}

bool seq_load_acked(const struct seq_load *l)
{
	for (unsigned seq = 0; seq < l->target; seq++)
		if (l->state[seq] != 2)
			return false;
	return true;
}
