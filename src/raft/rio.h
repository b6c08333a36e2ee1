/* rio: a struct raft_io wrapper that keeps C-Raft 0.15 from committing
 * entries of older terms by counting replicas (Raft thesis Figure 3.7 /
 * paper Figure 8; canonical/raft#220, fixed upstream only in 0.17.1 by #336).
 *
 * Why: in 0.15 a leader commits its last stored index N as soon as a majority
 * of match indexes reaches N, whatever the term of entry N, and a new leader
 * appends no entry of its own. A leader that re-replicates an older-term entry
 * onto a majority therefore commits (and applies) it, although a server with a
 * newer last term can still be elected and overwrite it: two replicas then
 * apply different commands at the same index.
 *
 * How, without touching the library: raft is given the OUTER io embedded in
 * struct rio; every method forwards to the INNER io (raft_uv, or a raft_fixture
 * server's in-memory io). Three things are added:
 *
 *   1. A barrier on election. The owner calls rio_on_leader() as soon as it sees
 *      the node become leader; it issues raft_barrier() and remembers the
 *      barrier's index as term_first_index (an entry of the current term).
 *   2. A filter on AppendEntries results (recv path, leader only). A successful
 *      result is passed to raft only if this node has stored its own barrier
 *      and the result's last_log_index is >= term_first_index, or if the
 *      result is <= raft_last_applied() (it cannot raise the commit index:
 *      replies to an InstallSnapshot, acks of entries already committed).
 *      Every other successful result is dropped, except an ack of the
 *      barrier that came before this node's own barrier write completed: it
 *      is deferred (kept, the latest per sender) and filtered again when
 *      that write completes, i.e. delivered as if the network had delayed
 *      it. Rejections and all other messages pass. Dropped results carry no
 *      buffers, so nothing leaks.
 *      Why "stored its own barrier": 0.15 only ever tries to commit the
 *      leader's last STORED index; until the barrier's write completes that is
 *      an older-term entry, and followers that already acked the barrier would
 *      let raft commit it while the term's entry is durable on fewer than a
 *      majority of disks. Once the barrier is stored, every index raft tries is
 *      of the current term, and counting replicas is then correct Raft.
 *   3. No AppendEntries are sent by a leader before its barrier exists (send
 *      path): raft gets RAFT_NOCONNECTION, which it treats as a transient
 *      failure and retries. Reason: 0.15 followers answer with their last
 *      STORED index, not prevLogIndex + nEntries, and the leader caps that at
 *      its own last index. The heartbeats a new leader sends while being
 *      elected have prevLogIndex = the old last index; a follower holding
 *      stale entries past it would answer with an index >= term_first_index
 *      and pass the filter without holding the barrier. Once a follower has
 *      stored any entry of the current term its log has nothing stale beyond
 *      it, so answers to AppendEntries sent after the barrier are truthful.
 *
 * The barrier does most of the work in practice (an AppendEntries that carries
 * an old entry to a follower carries the barrier too); the filter covers the
 * window before the leader's own barrier write completes, the hold covers
 * followers with stale tails. tests/raft/test_figure8.c plays all three
 * situations on 0.15 (the stale-tail case diverges if the hold is compiled out).
 *
 * The guard forgets term_first_index by itself whenever it sees (after a tick
 * or a received message) that the node is no longer leader, so a missed
 * rio_on_not_leader() cannot leave a stale index. A leader whose owner never
 * calls rio_on_leader() sends nothing and is deposed by the next election:
 * forgetting the barrier costs availability, not safety.
 *
 * The message guard (issue 12). C-Raft 0.15 trusts every message raft_uv
 * decodes, and raft_uv trusts the sender id and address of the connection's
 * preamble. With assertions compiled out (Debian), an AppendEntries at a
 * leader's own term makes raft treat leader_state as follower_state (a
 * general protection fault); any peer can also bump terms, claim leadership
 * or have a forged candidate voted for. Before raft sees a message, recv
 * drops (and counts in n_guard[reason]) every message that cannot be
 * legitimate:
 *
 *   RIO_DROP_NOT_MEMBER    the sender (server_id AND server_address) is not a
 *                          member of the configuration: raft's current one
 *                          (possibly uncommitted) or, while a change is
 *                          uncommitted, the last one seen committed (a server
 *                          being removed, possibly the leader that removes
 *                          itself, still speaks until the change commits).
 *                          A replica with an EMPTY configuration (created to
 *                          receive its first snapshot or entries) accepts any
 *                          sender: it has nobody to check against yet; the
 *                          listener's peer check is then the only filter.
 *   RIO_DROP_OWN_TERM      AppendEntries / InstallSnapshot with term equal to
 *                          the current term while this node is leader: at
 *                          most one leader exists per term, so the sender
 *                          lies (this is the message that crashes 0.15).
 *                          LOWER terms are not dropped: raft 0.15 rejects
 *                          them safely, and its answer (carrying the newer
 *                          term) is what makes a stale leader step down.
 *   RIO_DROP_OTHER_LEADER  AppendEntries / InstallSnapshot at the term in
 *                          which this follower already accepted a different
 *                          leader (rio remembers the leader and term it
 *                          delivered): a second leader of one term is forged.
 *   RIO_DROP_MALFORMED     content raft 0.15 mishandles: entries without a
 *                          payload (raft_uv leaves their batch pointer
 *                          uninitialised, raft frees it), entries that run
 *                          past the payload (a non-last entry whose length is
 *                          not a multiple of 8: raft_uv pads the offsets),
 *                          entry or previous terms above the message's term,
 *                          an index range that overflows, a configuration
 *                          entry that does not decode (raft would go
 *                          UNAVAILABLE); an InstallSnapshot without data (its
 *                          data pointer is uninitialised) or with an empty
 *                          configuration or a last term above the term
 *                          (not conf_index: 0.15 may send it uninitialised); a
 *                          RequestVote whose candidate is not the sender (raft
 *                          would persist a vote for a third server) or whose
 *                          last log term is above its term.
 *
 * A dropped message's buffers are freed exactly as raft's own recv path would
 * (recvCb for an UNAVAILABLE node): the distinct entry batches and the entries
 * array, or the snapshot data and configuration; where raft_uv left a pointer
 * uninitialised only what it did set is freed. Raft never sees a dropped
 * message, as if the network had lost it. The guard is always on (rio_set_guard
 * is only about the Figure 8 filter) and runs only while raft is attached
 * (io.data set). Each reason is logged at WARN on its 1st, 2nd, 4th, 8th ...
 * drop (log_id names the tablet).
 *
 * Version: the outer io reports version 2 (async_work is forwarded) so a v3
 * FSM with snapshot_async is accepted even though raft_uv 0.15 reports 1.
 *
 * Ownership and threading: the caller owns struct rio and the inner io; both
 * must stay at the same address until raft's close callback has fired (raft
 * keeps a pointer to the outer io); rio frees the configuration copy it keeps
 * when that close completes. Every function here, and every
 * trampoline, runs on the thread of the loop that drives that raft instance.
 * Return codes are raft's (RAFT_*), since rio speaks raft_io. */
#ifndef DOCRAFT_RAFT_RIO_H
#define DOCRAFT_RAFT_RIO_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

#define RIO_DEFERRED_MAX 8

/* Why the message guard dropped a message (see above). */
enum rio_drop {
	RIO_DROP_NOT_MEMBER = 0,
	RIO_DROP_OWN_TERM,
	RIO_DROP_OTHER_LEADER,
	RIO_DROP_MALFORMED,
	RIO_DROP_COUNT
};

struct rio {
	struct raft_io io;          /* OUTER io: hand &g->io to raft; owned by rio */
	struct raft_io *inner;      /* wrapped io (raft_uv or fixture), not owned */
	uint32_t magic;             /* RIO_MAGIC while wrapped (checks the mapping) */
	bool guard;                 /* filter + send hold on (default true) */
	raft_index term_first_index; /* barrier index of this leadership, 0 = unknown */
	bool barrier_stored;        /* this node's write of that barrier completed */
	uint64_t epoch;             /* bumped whenever the barrier is forgotten */
	raft_io_tick_cb tick_cb;    /* raft's callbacks, called with &io */
	raft_io_recv_cb recv_cb;
	raft_io_close_cb close_cb;
	uint64_t n_dropped;         /* successful results not handed to raft when
				       they came (dropped or deferred) */
	uint64_t n_held;            /* AppendEntries refused before the barrier */
	uint64_t n_no_destination;  /* sends dropped: no leader id/address (rio.c) */
	/* Acks of the barrier (last_log_index >= term_first_index) that came
	 * before this node stored its own barrier: the latest per sender,
	 * handed to raft (through the filter again) once it is stored, as if
	 * the network had delayed them. Without this a follower faster than
	 * the leader's own disk costs a heartbeat period or two (its next
	 * answer) before the barrier commits: a new leader then serves
	 * ~200 ms later (docs/reliability.md, "Failover time"). */
	struct rio_deferred {
		struct raft_message m;  /* an APPEND_ENTRIES_RESULT */
		char address[64];       /* m.server_address points here */
		uint64_t epoch;
	} deferred[RIO_DEFERRED_MAX];
	unsigned n_deferred_now;    /* entries used in deferred */
	uint64_t n_deferred;        /* acks deferred so far (metrics, tests) */
	uint64_t n_redelivered;     /* ... and handed to raft later */
	raft_time vote_quiet_until; /* RequestVotes dropped before (inner time) */
	uint64_t n_votes_dropped;
	/* The message guard. */
	const char *log_id;         /* tablet id in log lines (borrowed), or NULL */
	uint64_t n_guard[RIO_DROP_COUNT]; /* messages dropped, per reason */
	struct raft_configuration committed; /* last configuration seen committed */
	raft_index committed_index; /* its index (0: none copied yet) */
	raft_id leader_id;          /* the leader this follower was last handed */
	raft_term leader_term;      /* ... an AppendEntries / InstallSnapshot of, and its term */
	/* Log writes of this node that failed (disk full, I/O error; not
	 * RAFT_CANCELED), and the last one's code: 0.15 tells raft only, which
	 * on a follower just does not ack and on a leader answers one request
	 * and does not step down, so the owner watches this (tablet.c). */
	uint64_t n_append_errors;
	int last_append_error;
};

/* Wraps inner (already set up by raft_uv_init, not yet given to raft) and
 * fills g->io. The caller then passes &g->io, not inner, to raft_init. Uses
 * inner->data to find g from the inner io's callbacks (raft_uv never reads or
 * writes it; raft never sees inner). Returns 0, or RAFT_INVALID if inner lacks
 * a mandatory method. Loop thread; before raft_init. */
int rio_wrap(struct rio *g, struct raft_io *inner);

/* Wraps the io of a raft_fixture server: r is raft_fixture_get(f, i), called
 * after raft_fixture_grow (which already ran raft_init and io->init on the
 * inner io) and before raft_fixture_bootstrap/raft_fixture_start. Replaces
 * r->io with &g->io and sets g->io.data = r; this is the only place in docraft
 * that writes fields of struct raft (0.15 has no API for it; fixture tests
 * only). inner->data, which raft_init had set to r, then holds g: the fixture
 * never reads it (checked against the 0.15 object code) and raft only reads
 * r->io->data, i.e. the outer. g->io.impl mirrors inner->impl because the
 * fixture reaches its backend through r->io->impl in
 * raft_fixture_step_until_delivered. Returns 0 or RAFT_INVALID. */
int rio_wrap_fixture(struct rio *g, struct raft *r);

/* Call as soon as the node is seen as leader (state poll, fixture hook), before
 * anything else is submitted in this leadership: until it succeeds the leader
 * sends no AppendEntries at all. r must be the raft using g. Issues
 * raft_barrier(r, req, cb) and, on success, records req->index as
 * term_first_index (kept if one is already known for this leadership). req
 * must stay alive until cb fires (raft rules). Returns raft_barrier's code: RAFT_NOTLEADER if the node is not (or no
 * longer, or is transferring) leader; the caller retries on its next poll while
 * the node is still leader. cb fires with 0 once every earlier entry,
 * including older-term ones, is committed and applied. */
int rio_on_leader(struct rio *g, struct raft *r, struct raft_barrier *req, raft_barrier_cb cb);

/* Call when the node is seen to have lost leadership: forgets
 * term_first_index. Optional (the trampolines also notice), idempotent. */
void rio_on_not_leader(struct rio *g);

/* Turns the result filter and the pre-barrier send hold on or off (default on).
 * Exists only so tests can show the unguarded 0.15 behaviour; never switch it
 * off in production. rio_on_leader keeps issuing the barrier either way. */
void rio_set_guard(struct rio *g, bool on);

/* Drops every RequestVote (votes and pre-votes) that arrives during the next
 * ms milliseconds of the inner io's clock, as if the network had lost them.
 * For a replica that restarts: raft forgot the leader it heard from before,
 * so it would vote at once, while that leader may still count on this
 * replica's promise not to vote for election_ms after its last AppendEntries
 * (the leader lease, tablet.h). Call right after raft_start, before the loop
 * runs. Loop thread. */
void rio_set_vote_quiet(struct rio *g, unsigned ms);

/* Whether the server (id AND address) may speak Raft to this replica: a
 * member of raft's current configuration or, while a change is uncommitted,
 * of the last one seen committed; anyone while the configuration is empty or
 * no raft is attached yet (see the message guard above). The listener's peer
 * check of the tablet uses it too. Loop thread. */
bool rio_is_member(struct rio *g, raft_id id, const char *address);

/* Hands m to the guard and on to raft exactly as the inner io's receive
 * callback would (ownership of m's buffers passes with it): for tests that
 * play a hostile peer without a network. Loop thread, after raft_start. */
void rio_deliver(struct rio *g, struct raft_message *m);

/* "not_member", "own_term", "other_leader", "malformed" (metrics, logs);
 * "?" for anything else. */
const char *rio_drop_name(int reason);

/* The barrier index of the current leadership, or 0 if unknown. */
static inline raft_index rio_term_first_index(const struct rio *g)
{
	return g->term_first_index;
}

#endif
