/* One group's raft_io on the shared log (log.c): storage methods write
 * records; the network half (init, start's tick and receive, send, close,
 * time, random, async_work) is forwarded to `net`.
 *
 * Design note.
 *
 * Trampolines. net calls tick, recv and close callbacks with its own io
 * pointer; raft expects ours (it does r = io->data). net->data points to
 * our struct raftlog_io (raft_uv never reads or writes io->data, exactly as
 * rio.c relies on for its inner io), so the trampolines find it.
 *
 * Semantics taken from raft_uv 0.15 (src/uv.c, uv_append.c, uv_truncate.c,
 * uv_snapshot.c): set_term clears the vote; bootstrap refuses a group with
 * any state (RAFT_CANTBOOTSTRAP) and otherwise stores term 1 and entry 1,
 * the configuration, at term 1; recover appends a configuration entry at the
 * last index + 1; truncate is ordered before every later append (a record
 * in the same queue) and drops the entries from the group's index at once;
 * snapshot_put with trailing 0 (an installed snapshot) makes the next
 * append index snapshot index + 1 at once, as raft_uv's barrier does, and
 * with trailing > 0 keeps entries from index - trailing + 1 on; its record
 * follows every append queued before it, and its callback fires once it is
 * durable. load returns entries from the first the group still holds
 * (possibly below the snapshot's index, as raft_uv does with trailing
 * entries), data in one raft_malloc'd batch that every entry points to
 * (raft frees a loaded batch once no entry references it) and the array
 * itself raft_malloc'd (start.c frees it).
 *
 * Appends: raft does not pass the index. When the owner told us the raft
 * instance (raftlog_io_set_raft), an append must start at our next index,
 * which is raft_last_index(r) - n + 1 at the time of the call (raft adds
 * the entries to its in-memory log first, on leader and follower alike).
 * After a failed write 0.15's leader truncates its in-memory log and
 * appends at the failed index again: accepted; a follower keeps the failed
 * entries in memory and its next append would leave a hole: refused with
 * RAFT_IOERR and an ERROR line, never written at the wrong index (raft_uv
 * 0.15 writes it at the wrong index). */
#include "raftlog/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

static struct raftlog_io *ours(struct raft_io *io)
{
	return (struct raftlog_io *)((char *)io - offsetof(struct raftlog_io, io));
}

static struct raftlog_io *of_net(struct raft_io *net)
{
	struct raftlog_io *x = net->data;
	ASSERT(x != NULL && x->net == net);
	return x;
}

static int fwd(struct raftlog_io *x, int rv)
{
	if (rv != 0) {
		memcpy(x->io.errmsg, x->net->errmsg, sizeof x->io.errmsg);
		x->io.errmsg[sizeof x->io.errmsg - 1] = '\0';
	}
	return rv;
}

static int fail(struct raftlog_io *x, int code, const char *fmt, const char *what)
{
	snprintf(x->io.errmsg, sizeof x->io.errmsg, fmt, what, x->group->name);
	return code;
}

/* ---- configuration (raft_configuration_encode's format), checked ---- */

/* Decodes p[0..n) into c (initialized empty): 0 or RAFT_CORRUPT / NOMEM. */
static int conf_decode(const uint8_t *p, size_t n, struct raft_configuration *c)
{
	if (n < 9 || p[0] != 1)
		return RAFT_CORRUPT;
	uint64_t count = rl_get_u64(p + 1);
	size_t at = 9;
	for (uint64_t i = 0; i < count; i++) {
		if (n - at < 8)
			return RAFT_CORRUPT;
		raft_id id = rl_get_u64(p + at);
		at += 8;
		const uint8_t *z = memchr(p + at, '\0', n - at);
		if (z == NULL || (size_t)(z - p) + 1 >= n)
			return RAFT_CORRUPT;
		const char *address = (const char *)(p + at);
		at = (size_t)(z - p) + 1;
		int role = p[at++];
		int rv = raft_configuration_add(c, id, address, role);
		if (rv != 0)
			return rv == RAFT_NOMEM ? rv : RAFT_CORRUPT;
	}
	return 0;
}

/* ---- trampolines ---- */

static void tick_tramp(struct raft_io *net)
{
	struct raftlog_io *x = of_net(net);
	if (x->tick_cb != NULL)
		x->tick_cb(&x->io);
}

static void recv_tramp(struct raft_io *net, struct raft_message *m)
{
	struct raftlog_io *x = of_net(net);
	x->recv_cb(&x->io, m);
}

/* Raft's close callback, once net has closed AND the group has nothing
 * queued: net's close may run async work whose callback queues more (raft
 * 0.15's takeSnapshotDoneCb puts the snapshot while raft is closing), and
 * raft frees itself in its close callback, so every record's callback must
 * come first (raft_uv 0.15 waits for a snapshot put the same way). */
static void maybe_closed(struct raftlog_io *x)
{
	raft_io_close_cb cb = x->close_cb;
	if (!x->net_closed || x->group->queued > 0 || cb == NULL)
		return;
	x->close_cb = NULL;
	cb(&x->io);
}

static void close_tramp(struct raft_io *net)
{
	struct raftlog_io *x = of_net(net);
	x->net_closed = true; /* raft_uv 0.15 may fire its close callback twice */
	maybe_closed(x);
}

static void close_net(struct raftlog_io *x)
{
	x->closing = false;
	x->net->close(x->net, close_tramp);
}

void rl_io_idle(struct raftlog_io *x)
{
	if (x->closing)
		close_net(x);
	else
		maybe_closed(x);
}

/* ---- the methods ---- */

static int io_init(struct raft_io *io, raft_id id, const char *address)
{
	struct raftlog_io *x = ours(io);
	return fwd(x, x->net->init(x->net, id, address));
}

static void io_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct raftlog_io *x = ours(io);
	x->close_cb = cb;
	x->closing = true;
	if (x->group->queued == 0)
		close_net(x);
	/* else rl_io_idle, when the group's last queued op has completed */
}

static void snapshot_free(struct raft_snapshot *s)
{
	raft_configuration_close(&s->configuration);
	if (s->bufs != NULL) {
		raft_free(s->bufs[0].base);
		raft_free(s->bufs);
	}
	raft_free(s);
}

/* A raft_malloc'd copy of g's snapshot, as raft frees it. */
static int snapshot_copy(struct raftlog_io *x, struct raft_snapshot **out)
{
	struct raftlog_group *g = x->group;
	struct raft_snapshot *s = raft_calloc(1, sizeof *s);
	if (s == NULL)
		return RAFT_NOMEM;
	s->index = g->snap_index;
	s->term = g->snap_term;
	s->configuration_index = g->snap_conf_index;
	raft_configuration_init(&s->configuration);
	int rv = conf_decode(g->snap_conf, g->snap_conf_len, &s->configuration);
	if (rv != 0) {
		snapshot_free(s);
		return fail(x, rv, "raftlog: %s of group %s does not decode", "snapshot configuration");
	}
	s->bufs = raft_malloc(sizeof *s->bufs);
	if (s->bufs == NULL) {
		snapshot_free(s);
		return RAFT_NOMEM;
	}
	s->bufs[0].base = raft_malloc(g->snap_data_len > 0 ? g->snap_data_len : 1);
	if (s->bufs[0].base == NULL) {
		raft_free(s->bufs);
		s->bufs = NULL;
		snapshot_free(s);
		return RAFT_NOMEM;
	}
	memcpy(s->bufs[0].base, g->snap_data, g->snap_data_len);
	s->bufs[0].len = g->snap_data_len;
	s->n_bufs = 1;
	*out = s;
	return 0;
}

static int io_load(struct raft_io *io, raft_term *term, raft_id *vote,
		   struct raft_snapshot **snapshot, raft_index *start_index,
		   struct raft_entry *entries[], size_t *n_entries)
{
	struct raftlog_io *x = ours(io);
	struct raftlog_group *g = x->group;
	*term = g->term;
	*vote = g->vote;
	*snapshot = NULL;
	*start_index = g->first;
	*entries = NULL;
	*n_entries = 0;
	if (g->has_snap) {
		int rv = snapshot_copy(x, snapshot);
		if (rv != 0)
			return rv;
	}
	if (g->n == 0)
		return 0;
	size_t total = 0;
	for (size_t i = 0; i < g->n; i++)
		total += g->e[i].len;
	struct raft_entry *v = raft_calloc(g->n, sizeof *v);
	uint8_t *batch = raft_malloc(total > 0 ? total : 1);
	if (v == NULL || batch == NULL) {
		raft_free(v);
		raft_free(batch);
		if (*snapshot != NULL)
			snapshot_free(*snapshot);
		*snapshot = NULL;
		return RAFT_NOMEM;
	}
	size_t at = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct rl_entry *e = &g->e[i];
		int rv = rl_read(x->log, e->seg, e->off, batch + at, e->len, x->io.errmsg);
		if (rv != 0) {
			raft_free(v);
			raft_free(batch);
			if (*snapshot != NULL)
				snapshot_free(*snapshot);
			*snapshot = NULL;
			return rv;
		}
		v[i].term = e->term;
		v[i].type = e->type;
		v[i].buf.base = batch + at;
		v[i].buf.len = e->len;
		v[i].batch = batch;
		at += e->len;
	}
	*entries = v;
	*n_entries = g->n;
	return 0;
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
		    raft_io_recv_cb recv)
{
	struct raftlog_io *x = ours(io);
	x->tick_cb = tick;
	x->recv_cb = recv;
	return fwd(x, x->net->start(x->net, msecs, tick_tramp, recv_tramp));
}

/* Queues a TERM_VOTE and waits for it. */
static int term_vote(struct raftlog_io *x, uint64_t term, uint64_t vote)
{
	struct raftlog *l = x->log;
	struct rl_op *op = rl_op_begin(l, x->group, RL_REC_TERM_VOTE, RL_OP_SYNC);
	op->term = term;
	op->vote = vote;
	rl_enc_term_vote(rl_pending_buf(l), x->group->id, term, vote);
	rl_op_end(l, op);
	int rv = rl_op_wait(l, op);
	if (rv != 0)
		return fail(x, rv, "raftlog: %s of group %s failed", "term/vote write");
	return 0;
}

static int io_set_term(struct raft_io *io, raft_term term)
{
	return term_vote(ours(io), term, 0);
}

static int io_set_vote(struct raft_io *io, raft_id id)
{
	struct raftlog_io *x = ours(io);
	return term_vote(x, x->group->term, id);
}

/* Queues an ENTRIES record of entries[0..n) at the group's next index and
 * adds them to its index; returns the op (its record ended). */
static struct rl_op *queue_entries(struct raftlog_io *x, const struct raft_entry *entries,
				   unsigned n, uint8_t flags)
{
	struct raftlog *l = x->log;
	struct raftlog_group *g = x->group;
	uint64_t first = g->first + g->n;
	uint64_t terms_s[16];
	uint8_t types_s[16];
	uint32_t lens_s[16];
	uint64_t *terms = n <= 16 ? terms_s : xcalloc(n, sizeof *terms);
	uint8_t *types = n <= 16 ? types_s : xcalloc(n, 1);
	uint32_t *lens = n <= 16 ? lens_s : xcalloc(n, sizeof *lens);
	for (unsigned i = 0; i < n; i++) {
		terms[i] = entries[i].term;
		types[i] = (uint8_t)entries[i].type;
		lens[i] = (uint32_t)entries[i].buf.len;
	}
	struct rl_op *op = rl_op_begin(l, g, RL_REC_ENTRIES, flags);
	struct buf *b = rl_pending_buf(l);
	rl_enc_entries_begin(b, g->id, first, n, terms, types, lens);
	for (unsigned i = 0; i < n; i++) {
		rl_enc_entry_data(b, entries[i].buf.base, lens[i]);
		rl_group_push(g, terms[i], types[i], lens[i]);
	}
	rl_op_end(l, op);
	if (n > 16) {
		free(terms);
		free(types);
		free(lens);
	}
	return op;
}

/* Whether g has a term, a vote, entries or a snapshot. */
static bool has_state(const struct raftlog_group *g)
{
	return g->term != 0 || g->vote != 0 || g->n > 0 || g->has_snap;
}

static int io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	struct raftlog_io *x = ours(io);
	if (has_state(x->group))
		return fail(x, RAFT_CANTBOOTSTRAP, "raftlog: %s: group %s has state", "bootstrap");
	struct raft_buffer buf;
	int rv = raft_configuration_encode(conf, &buf);
	if (rv != 0)
		return rv;
	struct raftlog *l = x->log;
	struct rl_op *tv = rl_op_begin(l, x->group, RL_REC_TERM_VOTE, RL_OP_SYNC);
	tv->term = 1;
	rl_enc_term_vote(rl_pending_buf(l), x->group->id, 1, 0);
	rl_op_end(l, tv);
	struct raft_entry e = {.term = 1, .type = RAFT_CHANGE, .buf = buf};
	struct rl_op *op = queue_entries(x, &e, 1, RL_OP_SYNC);
	raft_free(buf.base);
	int rv1 = rl_op_wait(l, tv);
	int rv2 = rl_op_wait(l, op);
	if (rv1 != 0 || rv2 != 0)
		return fail(x, rv1 != 0 ? rv1 : rv2, "raftlog: %s of group %s failed", "bootstrap");
	return 0;
}

static int io_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	struct raftlog_io *x = ours(io);
	struct raftlog_group *g = x->group;
	struct raft_buffer buf;
	int rv = raft_configuration_encode(conf, &buf);
	if (rv != 0)
		return rv;
	/* raft_uv writes it at term 1; the last term keeps terms monotonic. */
	uint64_t term = g->n > 0 ? g->e[g->n - 1].term : g->has_snap ? g->snap_term : 1;
	struct raft_entry e = {.term = term, .type = RAFT_CHANGE, .buf = buf};
	struct rl_op *op = queue_entries(x, &e, 1, RL_OP_SYNC);
	raft_free(buf.base);
	rv = rl_op_wait(x->log, op);
	if (rv != 0)
		return fail(x, rv, "raftlog: %s of group %s failed", "recover");
	return 0;
}

static int io_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *m,
		   raft_io_send_cb cb)
{
	struct raftlog_io *x = ours(io);
	return fwd(x, x->net->send(x->net, req, m, cb));
}

static int io_append(struct raft_io *io, struct raft_io_append *req,
		     const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct raftlog_io *x = ours(io);
	struct raftlog_group *g = x->group;
	if (n == 0)
		return fail(x, RAFT_INVALID, "raftlog: %s (group %s)", "append of no entries");
	if (x->raft != NULL) {
		raft_index last = raft_last_index(x->raft);
		if (last + 1 < n || last + 1 - n != g->first + g->n) {
			LOG_ERROR("raftlog: group %s: append of %u entries at raft index %llu, "
				  "but the log's next index is %" PRIu64 " (a failed write "
				  "left a hole on this follower?): refused",
				  g->name, n, last + 1 - n, g->first + g->n);
			return fail(x, RAFT_IOERR, "raftlog: %s (group %s)",
				    "append past a hole in the log refused");
		}
	}
	struct rl_op *op = queue_entries(x, entries, n, 0);
	op->areq = req;
	op->acb = cb;
	req->cb = cb;
	x->log->st.appends++;
	return 0;
}

static int io_truncate(struct raft_io *io, raft_index index)
{
	struct raftlog_io *x = ours(io);
	struct raftlog *l = x->log;
	struct rl_op *op = rl_op_begin(l, x->group, RL_REC_TRUNCATE, 0);
	rl_enc_truncate(rl_pending_buf(l), x->group->id, index);
	rl_op_end(l, op);
	rl_group_truncate(x->group, index);
	return 0;
}

static int io_snapshot_put(struct raft_io *io, unsigned trailing,
			   struct raft_io_snapshot_put *req, const struct raft_snapshot *s,
			   raft_io_snapshot_put_cb cb)
{
	struct raftlog_io *x = ours(io);
	struct raftlog *l = x->log;
	struct raftlog_group *g = x->group;
	struct raft_buffer conf;
	int rv = raft_configuration_encode(&s->configuration, &conf);
	if (rv != 0)
		return rv;
	size_t len = 0;
	for (unsigned i = 0; i < s->n_bufs; i++)
		len += s->bufs[i].len;
	uint8_t *data = xmalloc(len > 0 ? len : 1);
	size_t at = 0;
	for (unsigned i = 0; i < s->n_bufs; i++) {
		memcpy(data + at, s->bufs[i].base, s->bufs[i].len);
		at += s->bufs[i].len;
	}
	uint64_t first_needed = 0;
	if (trailing > 0)
		first_needed = s->index >= trailing ? s->index - trailing + 1 : 1;
	struct rl_op *op = rl_op_begin(l, g, RL_REC_SNAPSHOT, 0);
	op->index = s->index;
	op->sreq = req;
	op->scb = cb;
	req->cb = cb;
	rl_enc_snapshot(rl_pending_buf(l), g->id, s->index, s->term, s->configuration_index,
			first_needed, conf.base, (uint32_t)conf.len, data, (uint32_t)len);
	rl_op_end(l, op);
	rl_group_set_snapshot(g, s->index, s->term, s->configuration_index, conf.base,
			      (uint32_t)conf.len, data, (uint32_t)len);
	rl_group_drop_below(g, first_needed, s->index);
	raft_free(conf.base);
	free(data);
	return 0;
}

static int io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			   raft_io_snapshot_get_cb cb)
{
	struct raftlog_io *x = ours(io);
	struct raft_snapshot *s = NULL;
	int status = 0;
	if (x->group->has_snap)
		status = snapshot_copy(x, &s);
	struct rl_op *op = xzalloc(sizeof *op);
	op->flags = RL_OP_GET;
	op->g = x->group;
	op->greq = req;
	op->gcb = cb;
	op->gsnap = s;
	op->status = status;
	req->cb = cb;
	rl_op_defer(x->log, op);
	return 0;
}

static raft_time io_time(struct raft_io *io)
{
	struct raftlog_io *x = ours(io);
	return x->net->time(x->net);
}

static int io_random(struct raft_io *io, int min, int max)
{
	struct raftlog_io *x = ours(io);
	return x->net->random(x->net, min, max);
}

static int io_async_work(struct raft_io *io, struct raft_io_async_work *req,
			 raft_io_async_work_cb cb)
{
	struct raftlog_io *x = ours(io);
	if (x->net->version < 2 && x->net->async_work == NULL)
		return fail(x, RAFT_INVALID, "raftlog: %s (group %s)", "net has no async_work");
	return fwd(x, x->net->async_work(x->net, req, cb));
}

int raftlog_io_init(struct raftlog_io *x, struct raftlog *l, const char *name,
		    struct raft_io *net, char *errmsg)
{
	size_t n = name != NULL ? strlen(name) : 0;
	if (n == 0 || n > RL_NAME_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "raftlog: group name of %zu bytes", n);
	for (size_t i = 0; i < n; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			return err_set(errmsg, DOCRAFT_EINVAL, "raftlog: group name not printable");
	if (net == NULL || net->init == NULL || net->close == NULL || net->start == NULL ||
	    net->send == NULL || net->time == NULL || net->random == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "raftlog: net lacks a method");
	if (l->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "raftlog: closing");
	struct raftlog_group *g = rl_group_get(l, name);
	if (g == NULL)
		return err_set(errmsg, DOCRAFT_EBUSY, "raftlog %s: all %u group ids were "
			       "issued, none is left for %s: move this server's replicas to a "
			       "fresh data directory", l->dir, RL_GROUP_ID_MAX, name);
	if (g->io != NULL)
		return err_set(errmsg, DOCRAFT_EBUSY, "raftlog: group %s already attached", name);
	memset(x, 0, sizeof *x);
	x->net = net;
	x->log = l;
	x->group = g;
	x->attached = true;
	g->io = x;
	l->attached++;
	net->data = x;
	struct raft_io *io = &x->io;
	io->version = 2;
	io->impl = x;
	io->init = io_init;
	io->close = io_close;
	io->load = io_load;
	io->start = io_start;
	io->bootstrap = io_bootstrap;
	io->recover = io_recover;
	io->set_term = io_set_term;
	io->set_vote = io_set_vote;
	io->send = io_send;
	io->append = io_append;
	io->truncate = io_truncate;
	io->snapshot_put = io_snapshot_put;
	io->snapshot_get = io_snapshot_get;
	io->time = io_time;
	io->random = io_random;
	io->async_work = io_async_work;
	return 0;
}

void raftlog_io_set_raft(struct raftlog_io *x, struct raft *r)
{
	x->raft = r;
}

void raftlog_io_release(struct raftlog_io *x)
{
	if (!x->attached)
		return;
	x->attached = false;
	x->group->io = NULL;
	x->log->attached--;
	x->group = NULL;
}
