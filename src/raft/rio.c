/* rio: forwarding raft_io with the "Figure 8" guard for C-Raft 0.15.
 *
 * Design note.
 *
 * Forwarding. Each outer method calls the same method of the inner io with the
 * inner pointer. When a forwarded call fails, inner->errmsg is copied to the
 * outer errmsg, which is where raft looks (ErrMsgTransfer(r->io->errmsg)).
 * raft also reads r->io->errmsg asynchronously, in appendLeaderCb when a disk
 * write failed, so append requests are wrapped: rio allocates a small request
 * (raft_malloc), gives it to the inner io, copies the errmsg on failure and
 * then calls raft's callback with raft's own request. Every other request
 * (send, snapshot put/get, async work) reaches the inner io unchanged: their
 * callbacks get only the request, never an io, so they need no trampoline.
 *
 * The callbacks that do get an io (tick, recv, close) are trampolined: the
 * inner io calls them with the INNER pointer, raft expects the outer one (it
 * does struct raft *r = io->data). The trampoline finds the rio through
 * inner->data:
 *   - raft_uv: raft_init is given the outer io, so raft sets outer.data = r
 *     and never sees inner; raft_uv calls its callbacks with its own back
 *     pointer uv->io (== inner) and keeps its state in inner->impl and
 *     transport->data, never in inner->data.
 *   - raft_fixture: raft_fixture_grow ran raft_init on the inner io (so
 *     inner->data was r); after rio_wrap_fixture raft only reads r->io, the
 *     outer, and the fixture code never reads servers[i].io.data (checked in
 *     the 0.15 object code: no access at that offset; it fires
 *     io->tick_cb(io->io) and io->recv_cb(peer->io->io, msg) with the inner).
 * So inner->data is free in both and a registry (with a lock, since tablets
 * live on several loop threads) is not needed. A magic number in struct rio is
 * checked in every trampoline, so an io that did use data would be caught at
 * once rather than corrupt memory quietly.
 *
 * The guard (see rio.h for the why). Decision on a received
 * RAFT_IO_APPEND_ENTRIES_RESULT with rejected == 0, only while the node is
 * leader (raft ignores results otherwise):
 *
 *     last_log_index <= raft_last_applied(r)   pass  (cannot raise commit index)
 *     barrier unknown                          drop
 *     barrier not yet stored here              drop, but an ack of the barrier
 *                                              (>= term_first_index) is deferred
 *     last_log_index <  term_first_index       drop
 *     otherwise                                pass
 *
 * Deferred acks (the latest per sender, at most RIO_DEFERRED_MAX) go through
 * this table again right after the barrier's write completes and raft has
 * counted it (append_tramp), in the same epoch and leadership only: exactly
 * what raft would have seen had the network delayed them. On loopback a
 * follower often acks the barrier before the leader's own write is done;
 * dropping that ack left the barrier uncommitted until the follower's next
 * answer, one or two heartbeat periods later.
 *
 * "Stored here" is learnt from the append callbacks: raft writes a batch that
 * ends at its current last index (appendLeader and replicationAppend acquire
 * "from index to the end"), so at io->append time the batch covers
 * [raft_last_index - n + 1, raft_last_index]; the batch holding
 * term_first_index, written in this leadership (epoch), marks it stored when it
 * completes with status 0. A failed write leaves it unstored until a later
 * batch covering that index succeeds (after a failed write raft truncates its
 * log there and the next entries of this term are appended at that index).
 *
 * Why the first line is safe: 0.15's replicationQuorum(r, last_stored) only
 * commits last_stored, and only if last_stored > commit_index; a match index
 * <= last_applied <= commit_index is below it and is never counted. Without
 * this line a follower catching up through InstallSnapshot (whose reply
 * carries the snapshot index, usually below the barrier) would be re-sent the
 * snapshot forever.
 *
 * Send hold: while leader with term_first_index == 0, outgoing AppendEntries
 * fail with RAFT_NOCONNECTION (raft frees its request and retries on the next
 * heartbeat or trigger; the callback is not called, as the raft_io contract
 * for a failed call requires). Other messages pass (votes, InstallSnapshot).
 *
 * Leadership tracking: after every forwarded tick and recv, if raft_state is
 * not RAFT_LEADER, term_first_index is reset. A node cannot lose and regain
 * leadership without ticking in between (it must time out to campaign), so a
 * stale index never survives into a later term. */
#include "raft/rio.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"

#define RIO_MAGIC 0x52494f31u /* "RIO1" */

/* The wrapper for one append request (see the design note). */
struct append_req {
	struct raft_io_append req;  /* given to the inner io; req.data = this */
	struct raft_io_append *orig; /* raft's request */
	raft_io_append_cb cb;       /* raft's callback */
	struct rio *g;
	bool has_barrier;           /* batch holds term_first_index of epoch */
	uint64_t epoch;
};

static struct rio *outer_rio(struct raft_io *io)
{
	struct rio *g = (struct rio *)((char *)io - offsetof(struct rio, io));
	ASSERT(g->magic == RIO_MAGIC);
	return g;
}

static struct rio *inner_rio(struct raft_io *inner)
{
	struct rio *g = inner->data;
	ASSERT(g != NULL && g->magic == RIO_MAGIC && g->inner == inner);
	return g;
}

static void copy_errmsg(struct rio *g)
{
	memcpy(g->io.errmsg, g->inner->errmsg, sizeof g->io.errmsg);
	g->io.errmsg[sizeof g->io.errmsg - 1] = '\0';
}

/* rv is the inner io's return code; copies its errmsg on failure. */
static int fwd(struct rio *g, int rv)
{
	if (rv != 0)
		copy_errmsg(g);
	return rv;
}

static bool is_leader(struct rio *g)
{
	struct raft *r = g->io.data;
	return r != NULL && raft_state(r) == RAFT_LEADER;
}

static void forget(struct rio *g)
{
	g->term_first_index = 0;
	g->barrier_stored = false;
	g->epoch++;
	g->n_deferred_now = 0;
}

/* Forgets the barrier once the node is seen not to lead. */
static void observe(struct rio *g)
{
	if (g->term_first_index != 0 && !is_leader(g))
		forget(g);
}

static bool drop_result(struct rio *g, const struct raft_append_entries_result *res)
{
	struct raft *r = g->io.data;

	if (!g->guard || res->rejected != 0 || !is_leader(g))
		return false;
	if (res->last_log_index <= raft_last_applied(r))
		return false;
	if (g->term_first_index == 0 || !g->barrier_stored)
		return true;
	return res->last_log_index < g->term_first_index;
}

/* A barrier ack dropped only because this node's barrier write has not
 * completed yet: keep it (the latest per sender) for redeliver(). */
static bool defer_result(struct rio *g, const struct raft_message *m)
{
	const struct raft_append_entries_result *res = &m->append_entries_result;
	struct rio_deferred *d = NULL;
	size_t alen;

	if (g->term_first_index == 0 || g->barrier_stored ||
	    res->last_log_index < g->term_first_index || m->server_address == NULL)
		return false;
	alen = strlen(m->server_address);
	if (alen >= sizeof g->deferred[0].address)
		return false;
	for (unsigned i = 0; i < g->n_deferred_now; i++)
		if (g->deferred[i].m.server_id == m->server_id)
			d = &g->deferred[i];
	if (d == NULL) {
		if (g->n_deferred_now == RIO_DEFERRED_MAX)
			return false;
		d = &g->deferred[g->n_deferred_now++];
	}
	d->m = *m;
	memcpy(d->address, m->server_address, alen + 1);
	d->m.server_address = d->address;
	d->epoch = g->epoch;
	g->n_deferred++;
	return true;
}

/* The barrier is stored: hand the deferred acks to raft, through the
 * filter again (a message delayed by the network is still valid Raft). */
static void redeliver(struct rio *g)
{
	unsigned n = g->n_deferred_now;
	struct rio_deferred d[RIO_DEFERRED_MAX];

	if (n == 0)
		return;
	memcpy(d, g->deferred, n * sizeof d[0]);
	g->n_deferred_now = 0;
	for (unsigned i = 0; i < n; i++) {
		d[i].m.server_address = d[i].address;
		if (d[i].epoch != g->epoch || !is_leader(g) ||
		    drop_result(g, &d[i].m.append_entries_result))
			continue;
		g->n_redelivered++;
		g->recv_cb(&g->io, &d[i].m);
		observe(g);
	}
}

/* ---- the message guard (rio.h) ---- */

static bool member_of(const struct raft_configuration *c, raft_id id, const char *address)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == id)
			return address != NULL && strcmp(c->servers[i].address, address) == 0;
	return false;
}

/* Keeps a copy of raft's configuration whenever it is committed, for the
 * window in which a change is uncommitted. Out of memory: no copy (the
 * current configuration alone is checked) and the next call tries again. */
static void track_committed(struct rio *g)
{
	const struct raft *r = g->io.data;
	const struct raft_configuration *c;

	if (r == NULL || r->configuration_uncommitted_index != 0 ||
	    r->configuration_index == g->committed_index)
		return;
	c = &r->configuration;
	raft_configuration_close(&g->committed);
	raft_configuration_init(&g->committed);
	g->committed_index = r->configuration_index;
	for (unsigned i = 0; i < c->n; i++) {
		if (raft_configuration_add(&g->committed, c->servers[i].id,
					   c->servers[i].address, c->servers[i].role) != 0) {
			raft_configuration_close(&g->committed);
			raft_configuration_init(&g->committed);
			g->committed_index = 0;
			return;
		}
	}
}

bool rio_is_member(struct rio *g, raft_id id, const char *address)
{
	const struct raft *r = g->io.data;

	if (r == NULL || r->configuration.n == 0)
		return true;
	track_committed(g);
	if (member_of(&r->configuration, id, address))
		return true;
	return r->configuration_uncommitted_index != 0 && member_of(&g->committed, id, address);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A RAFT_CHANGE entry decodes as raft 0.15's configurationDecode expects
 * (format 1, server count, per server: id, NUL-terminated address, role),
 * within the buffer, with at least one server, no id 0 and no duplicate id
 * or address. raft would read past a short buffer, and a failing decode
 * makes it UNAVAILABLE. */
static bool valid_conf_entry(const struct raft_buffer *b)
{
	const uint8_t *p = b->base, *end = p + b->len;
	uint64_t n;

	if (b->len < 9 || p[0] != 1)
		return false;
	n = get64(p + 1);
	p += 9;
	if (n == 0 || n > b->len / 10) /* each server takes at least 10 bytes */
		return false;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *addr, *nul;
		uint64_t id;

		if (end - p < 8)
			return false;
		id = get64(p);
		addr = p + 8;
		nul = memchr(addr, '\0', (size_t)(end - addr));
		if (id == 0 || nul == NULL || nul == addr || end - nul < 2)
			return false;
		if (nul[1] != RAFT_VOTER && nul[1] != RAFT_STANDBY && nul[1] != RAFT_SPARE)
			return false;
		for (const uint8_t *q = b->base + 9; q < p;) { /* earlier servers */
			const uint8_t *qa = q + 8;
			size_t ql = strlen((const char *)qa);
			if (get64(q) == id || strcmp((const char *)qa, (const char *)addr) == 0)
				return false;
			q = qa + ql + 2;
		}
		p = nul + 2;
	}
	return true;
}

static bool valid_append_entries(const struct raft_append_entries *a)
{
	size_t payload = 0;

	if (a->n_entries > 0 && a->entries == NULL)
		return false;
	if (a->prev_log_term > a->term || a->prev_log_index > UINT64_MAX - a->n_entries)
		return false;
	for (unsigned i = 0; i < a->n_entries; i++) {
		const struct raft_entry *e = &a->entries[i];
		payload += e->buf.len;
		if (e->term > a->term || e->term == 0)
			return false;
		if (i + 1 < a->n_entries && e->buf.len % 8 != 0)
			return false;
	}
	if (a->n_entries > 0 && payload == 0)
		return false;
	for (unsigned i = 0; i < a->n_entries; i++)
		if (a->entries[i].type == RAFT_CHANGE && !valid_conf_entry(&a->entries[i].buf))
			return false;
	return true;
}

static bool valid_install_snapshot(const struct raft_install_snapshot *s)
{
	/* Not conf_index: 0.15's sendSnapshot copies it from the snapshot the
	 * io loaded, where it is not always set (an uninitialised value came
	 * from a legitimate leader in test_tablet_fixture under ASan). */
	return s->data.len > 0 && s->conf.n > 0 && s->last_term <= s->term && s->last_term > 0;
}

static bool valid_message(const struct raft_message *m)
{
	switch (m->type) {
	case RAFT_IO_APPEND_ENTRIES:
		return valid_append_entries(&m->append_entries);
	case RAFT_IO_INSTALL_SNAPSHOT:
		return valid_install_snapshot(&m->install_snapshot);
	case RAFT_IO_REQUEST_VOTE:
		return m->request_vote.candidate_id == m->server_id &&
		       m->request_vote.last_log_term <= m->request_vote.term;
	default:
		return true;
	}
}

/* The reason to drop m, or -1 to hand it to raft. */
static int guard_verdict(struct rio *g, const struct raft_message *m)
{
	const struct raft *r = g->io.data;
	raft_term term;

	if (r == NULL)
		return -1;
	if (!rio_is_member(g, m->server_id, m->server_address))
		return RIO_DROP_NOT_MEMBER;
	if (!valid_message(m))
		return RIO_DROP_MALFORMED;
	if (m->type != RAFT_IO_APPEND_ENTRIES && m->type != RAFT_IO_INSTALL_SNAPSHOT)
		return -1;
	term = m->type == RAFT_IO_APPEND_ENTRIES ? m->append_entries.term
						 : m->install_snapshot.term;
	if (term != r->current_term)
		return -1;
	if (r->state == RAFT_LEADER)
		return RIO_DROP_OWN_TERM;
	if (g->leader_term == term && g->leader_id != m->server_id)
		return RIO_DROP_OTHER_LEADER;
	return -1;
}

/* Frees what raft would have taken over (recvCb's UNAVAILABLE path), minus
 * the pointers raft_uv leaves uninitialised in the malformed cases above. */
static void free_message(struct raft_message *m)
{
	if (m->type == RAFT_IO_APPEND_ENTRIES) {
		struct raft_append_entries *a = &m->append_entries;
		size_t payload = 0;
		void *batch = NULL;

		if (a->entries == NULL)
			return;
		for (unsigned i = 0; i < a->n_entries; i++)
			payload += a->entries[i].buf.len;
		for (unsigned i = 0; payload > 0 && i < a->n_entries; i++) {
			if (a->entries[i].batch != batch && a->entries[i].batch != NULL) {
				batch = a->entries[i].batch;
				raft_free(batch);
			}
		}
		raft_free(a->entries);
	} else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
		raft_configuration_close(&m->install_snapshot.conf);
		if (m->install_snapshot.data.len > 0)
			raft_free(m->install_snapshot.data.base);
	}
}

static void guard_drop(struct rio *g, struct raft_message *m, int reason)
{
	const struct raft *r = g->io.data;
	uint64_t n = ++g->n_guard[reason];

	if ((n & (n - 1)) == 0)
		TLOG_WARN(g->log_id, r->current_term,
			  "raft guard: dropped a message of type %d from %llu (%s): %s "
			  "(%llu so far)",
			  m->type, (unsigned long long)m->server_id,
			  m->server_address != NULL ? m->server_address : "?",
			  rio_drop_name(reason), (unsigned long long)n);
	free_message(m);
}

/* After raft took an AppendEntries / InstallSnapshot: the leader it now
 * follows in this term (RIO_DROP_OTHER_LEADER). */
static void note_leader(struct rio *g, const struct raft_message *m)
{
	const struct raft *r = g->io.data;

	if (r == NULL || (m->type != RAFT_IO_APPEND_ENTRIES && m->type != RAFT_IO_INSTALL_SNAPSHOT))
		return;
	if (r->state == RAFT_FOLLOWER && r->follower_state.current_leader.id == m->server_id) {
		g->leader_id = m->server_id;
		g->leader_term = r->current_term;
	}
}

const char *rio_drop_name(int reason)
{
	static const char *const names[RIO_DROP_COUNT] = {
		[RIO_DROP_NOT_MEMBER] = "not_member",
		[RIO_DROP_OWN_TERM] = "own_term",
		[RIO_DROP_OTHER_LEADER] = "other_leader",
		[RIO_DROP_MALFORMED] = "malformed",
	};
	return reason >= 0 && reason < RIO_DROP_COUNT ? names[reason] : "?";
}

/* ---- trampolines: inner io -> raft ---- */

static void tick_tramp(struct raft_io *inner)
{
	struct rio *g = inner_rio(inner);

	g->tick_cb(&g->io);
	observe(g);
}

static void recv_tramp(struct raft_io *inner, struct raft_message *m)
{
	rio_deliver(inner_rio(inner), m);
}

void rio_deliver(struct rio *g, struct raft_message *m)
{
	int reason = guard_verdict(g, m);

	if (reason >= 0) {
		guard_drop(g, m, reason);
		return;
	}
	/* Below, only messages without buffers are dropped (votes, results);
	 * AppendEntries and InstallSnapshot go to raft, which takes ownership
	 * of their buffers. */
	if (m->type == RAFT_IO_REQUEST_VOTE && g->inner->time(g->inner) < g->vote_quiet_until) {
		g->n_votes_dropped++; /* owns no memory either */
		return;
	}
	if (m->type == RAFT_IO_APPEND_ENTRIES_RESULT &&
	    drop_result(g, &m->append_entries_result)) {
		g->n_dropped++;
		defer_result(g, m);
		return;
	}
	g->recv_cb(&g->io, m);
	note_leader(g, m);
	observe(g);
}

/* raft_uv (0.15, and canonical/raft up to 0.18.1) may call this more than
 * once: a segment writer that finishes closing after the close callback
 * re-runs uvMaybeFireCloseCb, which fires again (fixed in cowsql/raft#45,
 * "Don't call uvMaybeFireCloseCb in uvAliveSegmentWriterCloseCb"). raft's
 * callback runs once; see tablet_raft.c raft_closed for keeping raft_uv's memory
 * alive until then. */
static void close_tramp(struct raft_io *inner)
{
	struct rio *g = inner_rio(inner);
	raft_io_close_cb cb = g->close_cb;

	raft_configuration_close(&g->committed);
	raft_configuration_init(&g->committed);
	g->committed_index = 0;
	g->close_cb = NULL;
	if (cb != NULL)
		cb(&g->io);
}

static void append_tramp(struct raft_io_append *req, int status)
{
	struct append_req *a = req->data;
	struct raft_io_append *orig = a->orig;
	raft_io_append_cb cb = a->cb;
	struct rio *g = a->g;
	bool stored_now = false;

	if (status != 0) {
		copy_errmsg(g);
		if (status != RAFT_CANCELED) {
			g->n_append_errors++;
			g->last_append_error = status;
		}
	} else if (a->has_barrier && a->epoch == g->epoch && !g->barrier_stored) {
		g->barrier_stored = true;
		stored_now = true;
	}
	raft_free(a);
	if (cb != NULL)
		cb(orig, status);
	/* After raft has counted its own write (its last stored index now
	 * covers the barrier), the followers' early acks. */
	if (stored_now)
		redeliver(g);
}

/* ---- outer methods: raft -> inner io ---- */

static int io_init(struct raft_io *io, raft_id id, const char *address)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->init(g->inner, id, address));
}

static void io_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct rio *g = outer_rio(io);

	g->close_cb = cb;
	forget(g);
	g->inner->close(g->inner, close_tramp);
}

static int io_load(struct raft_io *io, raft_term *term, raft_id *voted_for,
		   struct raft_snapshot **snapshot, raft_index *start_index,
		   struct raft_entry *entries[], size_t *n_entries)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->load(g->inner, term, voted_for, snapshot, start_index, entries,
				     n_entries));
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
		    raft_io_recv_cb recv)
{
	struct rio *g = outer_rio(io);

	g->tick_cb = tick;
	g->recv_cb = recv;
	return fwd(g, g->inner->start(g->inner, msecs, tick_tramp, recv_tramp));
}

static int io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->bootstrap(g->inner, conf));
}

static int io_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->recover(g->inner, conf));
}

static int io_set_term(struct raft_io *io, raft_term term)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->set_term(g->inner, term));
}

static int io_set_vote(struct raft_io *io, raft_id server_id)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->set_vote(g->inner, server_id));
}

/* C-Raft 0.15 bug: when the snapshot_put of an InstallSnapshot completes,
 * installSnapshotCb answers with sendAppendEntriesResult whatever the state;
 * if the election timer made this replica a candidate (or leader) while the
 * snapshot was being written, the leader's id and address it sends to are
 * read from follower_state, a union member then holding candidate_state
 * (id: the votes pointer; address: disrupt_leader/in_pre_vote, 0x100 in a
 * pre-vote) or leader_state. Sent on, the inner io dereferences that address.
 * Such a result has no destination: drop it, as if the network lost it (the
 * leader probes again). A non-follower's legitimate result (rejecting a
 * stale leader's AppendEntries) carries the sender's own address. */
static bool bogus_snapshot_result(struct rio *g, const struct raft_message *m)
{
	const struct raft *r = g->io.data;
	return m->type == RAFT_IO_APPEND_ENTRIES_RESULT && r != NULL &&
	       r->state != RAFT_FOLLOWER && m->server_id == r->follower_state.current_leader.id &&
	       m->server_address == r->follower_state.current_leader.address;
}

/* C-Raft 0.15 bug (canonical/raft#351, fixed in 0.17.1 by 35479fc "Don't
 * respond to AppendEntries if role/term has changed"): when a follower's
 * append completes, appendFollowerCb answers the leader recorded in
 * follower_state, even if the term changed while the entries were being
 * written. A replica that campaigned meanwhile and then stepped down to a
 * newer term whose leader it has not heard yet holds current_leader
 * {0, NULL}, and raft_uv's send does strlen(NULL): the SIGSEGV of two
 * tservers with 300 replicas each, when loop stalls set off elections
 * (docs/benchmarks.md). A message without a destination is dropped, as if
 * the network lost it. */
static bool no_destination(const struct raft_message *m)
{
	return m->server_id == 0 || m->server_address == NULL;
}

static int io_send(struct raft_io *io, struct raft_io_send *req,
		   const struct raft_message *message, raft_io_send_cb cb)
{
	struct rio *g = outer_rio(io);

	if (no_destination(message)) {
		g->n_no_destination++;
		snprintf(g->io.errmsg, sizeof g->io.errmsg,
			 "rio: a message without a destination (leader unknown)");
		return RAFT_NOCONNECTION;
	}
	if (bogus_snapshot_result(g, message)) {
		snprintf(g->io.errmsg, sizeof g->io.errmsg,
			 "rio: AppendEntries result of a snapshot install after a state change");
		return RAFT_NOCONNECTION;
	}

	if (g->guard && message->type == RAFT_IO_APPEND_ENTRIES &&
	    g->term_first_index == 0 && is_leader(g)) {
		g->n_held++;
		snprintf(g->io.errmsg, sizeof g->io.errmsg,
			 "rio: no AppendEntries before this leadership's barrier");
		return RAFT_NOCONNECTION;
	}
	return fwd(g, g->inner->send(g->inner, req, message, cb));
}

static int io_append(struct raft_io *io, struct raft_io_append *req,
		     const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct rio *g = outer_rio(io);
	struct append_req *a;
	int rv;

	a = raft_malloc(sizeof *a);
	if (a == NULL) {
		snprintf(g->io.errmsg, sizeof g->io.errmsg, "rio: out of memory");
		return RAFT_NOMEM;
	}
	a->req.data = a;
	a->orig = req;
	a->cb = cb;
	a->g = g;
	a->has_barrier = false;
	a->epoch = g->epoch;
	if (g->term_first_index != 0 && is_leader(g)) {
		/* raft writes a batch that ends at its last index (appendLeader and
		 * replicationAppend acquire "from index to the end"). */
		raft_index last = raft_last_index(g->io.data);
		raft_index first = last + 1 - n;
		a->has_barrier = first <= g->term_first_index && g->term_first_index <= last;
	}
	req->cb = cb;
	rv = g->inner->append(g->inner, &a->req, entries, n, append_tramp);
	if (rv != 0) {
		raft_free(a);
		copy_errmsg(g);
	}
	return rv;
}

static int io_truncate(struct raft_io *io, raft_index index)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->truncate(g->inner, index));
}

static int io_snapshot_put(struct raft_io *io, unsigned trailing,
			   struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
			   raft_io_snapshot_put_cb cb)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->snapshot_put(g->inner, trailing, req, snapshot, cb));
}

static int io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			   raft_io_snapshot_get_cb cb)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->snapshot_get(g->inner, req, cb));
}

static raft_time io_time(struct raft_io *io)
{
	struct rio *g = outer_rio(io);
	return g->inner->time(g->inner);
}

static int io_random(struct raft_io *io, int min, int max)
{
	struct rio *g = outer_rio(io);
	return g->inner->random(g->inner, min, max);
}

static int io_async_work(struct raft_io *io, struct raft_io_async_work *req,
			 raft_io_async_work_cb cb)
{
	struct rio *g = outer_rio(io);
	return fwd(g, g->inner->async_work(g->inner, req, cb));
}

/* ---- API ---- */

static bool inner_complete(const struct raft_io *inner)
{
	return inner->init != NULL && inner->close != NULL && inner->load != NULL &&
	       inner->start != NULL && inner->bootstrap != NULL && inner->recover != NULL &&
	       inner->set_term != NULL && inner->set_vote != NULL && inner->send != NULL &&
	       inner->append != NULL && inner->truncate != NULL &&
	       inner->snapshot_put != NULL && inner->snapshot_get != NULL &&
	       inner->time != NULL && inner->random != NULL;
}

int rio_wrap(struct rio *g, struct raft_io *inner)
{
	PRE(g != NULL && inner != NULL);

	if (!inner_complete(inner))
		return RAFT_INVALID;

	memset(g, 0, sizeof *g);
	g->inner = inner;
	g->magic = RIO_MAGIC;
	g->guard = true;
	raft_configuration_init(&g->committed);

	/* version 2 + async_work: accepted by raft_init with a v3 FSM that sets
	 * snapshot_async (raft_uv 0.15 implements async_work but says 1). */
	g->io.version = inner->async_work != NULL ? 2 : 1;
	g->io.data = NULL; /* set by raft_init (or rio_wrap_fixture) */
	g->io.impl = inner->impl;
	g->io.init = io_init;
	g->io.close = io_close;
	g->io.load = io_load;
	g->io.start = io_start;
	g->io.bootstrap = io_bootstrap;
	g->io.recover = io_recover;
	g->io.set_term = io_set_term;
	g->io.set_vote = io_set_vote;
	g->io.send = io_send;
	g->io.append = io_append;
	g->io.truncate = io_truncate;
	g->io.snapshot_put = io_snapshot_put;
	g->io.snapshot_get = io_snapshot_get;
	g->io.time = io_time;
	g->io.random = io_random;
	g->io.async_work = inner->async_work != NULL ? io_async_work : NULL;

	inner->data = g;
	return 0;
}

int rio_wrap_fixture(struct rio *g, struct raft *r)
{
	int rv;

	PRE(g != NULL && r != NULL && r->io != NULL);
	/* Wrapping twice would make the rio its own inner. */
	PRE(r->io->init != io_init);

	rv = rio_wrap(g, r->io);
	if (rv != 0)
		return rv;
	g->io.data = r;
	r->io = &g->io;
	return 0;
}

int rio_on_leader(struct rio *g, struct raft *r, struct raft_barrier *req, raft_barrier_cb cb)
{
	int rv;

	PRE(g != NULL && r != NULL && req != NULL);
	PRE(g->io.data == r);

	if (g->term_first_index != 0) {
		/* Already known for this leadership: just another barrier. */
		return raft_barrier(r, req, cb);
	}
	/* raft_barrier appends at last index + 1, then writes it and sends
	 * AppendEntries carrying it, in the same call. Setting the index first
	 * lets those go out instead of being held until the next heartbeat,
	 * and lets io_append recognise the barrier's write. */
	forget(g);
	g->term_first_index = raft_last_index(r) + 1;
	rv = raft_barrier(r, req, cb);
	if (rv != 0) {
		forget(g);
		return rv;
	}
	ASSERT(req->index == g->term_first_index);
	return 0;
}

void rio_on_not_leader(struct rio *g)
{
	PRE(g != NULL);
	forget(g);
}

void rio_set_guard(struct rio *g, bool on)
{
	PRE(g != NULL);
	g->guard = on;
}

void rio_set_vote_quiet(struct rio *g, unsigned ms)
{
	g->vote_quiet_until = g->inner->time(g->inner) + ms;
}
