/* Replica moves: the engine (moves.h has the contract).
 *
 * Design.
 *
 * A move replaces replica `from` of one tablet by a new replica on tserver
 * `to`. Its state lives in the catalog (catalog.h: the "move" document and
 * the tablet document whose replicas list the new one as "joining"); every
 * transition is a catalog write first, the action after, so the master
 * leader that loads the catalog after a failover knows every move and where
 * it stood. Steps:
 *
 *   start      one write: the move document (step "adding") and the tablet
 *              with the new replica (raft id next_raft_id, "joining";
 *              next_raft_id + 1 so ids are never reused).
 *   adding     CREATE(join=true) goes to `to` at once, and its heartbeats
 *              get it too (tservers.c reconcile: a catalog replica the
 *              tserver lacks); once `to` answered it or reports the
 *              replica, ChangeConfig ADD goes to the tablet's leader
 *              (spare, caught up by checkpoint copy, promoted to voter;
 *              answered when promoted); OK -> write step "removing".
 *   removing   ChangeConfig REMOVE of `from` to the leader (if `from` leads,
 *              a StepDown to another voter first); OK -> one write: `from`
 *              dropped from the replicas, the joining mark cleared, the move
 *              document deleted. `from`'s tserver, when it next lists the
 *              tablet (now, or when it comes back), gets a delete
 *              (tservers.c: a replica the leader's configuration lacks).
 *   rolling-back  (the new replica's tserver silent past the bound, failed
 *              or draining; ADD refused MAX_FAILURES times; the new replica
 *              not created within CREATE_STUCK_MS) REMOVE of the
 *              new id if the leader's configuration has it, then one write:
 *              the new replica dropped, the move document deleted; policy
 *              picks again later.
 *
 * Deciding by the leader's configuration. Every action is chosen from the
 * configuration the tablet's current leader last reported
 * (TabletReport.config, kept in cat_tablet.config by tservers.c), not from
 * what this master remembers having sent, so a new master leader resumes
 * each move from its catalog step: adding + the new id a voter -> removing;
 * adding + the new id a spare (an ADD cut between raft_add and the
 * promotion) -> REMOVE it and ADD again; removing + `from` absent ->
 * finalize; rolling-back + the new id absent -> finalize. Each action is
 * thus idempotent: a repeated ADD of a voter or REMOVE of an absent id is
 * never sent, and a refused one (EINVAL: raft's DUPLICATEID / BADID, or
 * BUSY while another change commits) is retried on the next tick, after
 * the next report.
 *
 * Safety. policy_pick starts a move only when the tablet's up replicas are
 * a majority of n + 1 and never two moves of one tablet (moving). A REMOVE
 * is sent only if the voters left would have a live majority (each up in
 * the leader's term on a live tserver, per the reports); otherwise the move
 * waits and says why (at most every SAY_MS). A tablet below a majority
 * gets no move and a warning naming it.
 *
 * Driver. A timer (MOVES_TICK_MS) on the leader, idle until the catalog is
 * loaded and tserver_timeout_ms more have passed (every live tserver has
 * heartbeated by then, so none is judged failed on a guess). A tserver
 * that holds catalog replicas but never heartbeated this leader is
 * registered (not live) at that point, so it turns failed
 * --tserver-failed-after-s later, as it would have under the old leader.
 * Drain: leaders go first (tservers.c steps down a draining tserver's
 * leaders in its heartbeat replies); its replicas' moves wait until it
 * leads nothing or DRAIN_LEADERS_FIRST_MS have passed.
 *
 * A step written is acted on at once, as is a create answered; everything
 * else waits for the next tick (and the reports it needs).
 *
 * Operations in flight (an RPC or a catalog write) keep the generation of
 * the leadership they began in; a completion in another one touches
 * nothing (the catalog was reloaded) and only frees itself. */
#include "master/moves.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "master/internal.h"
#include "master/policy.h"
#include "rpc.pb-c.h"

/* ChangeConfig ADD answers once the new replica is promoted: its catch-up
 * (checkpoint copy, then raft's catch-up rounds, up to 10 x 5 s) bounds it. */
#define ADD_TIMEOUT_MS 120000
#define RPC_TIMEOUT_MS 10000
/* A refused action waits this long before the next try. */
#define RETRY_MS 1000
/* ADDs refused (not BUSY / NOT_LEADER / unreachable) before rolling back. */
#define MAX_FAILURES 5
/* "Waiting" lines of one move or tablet at most this often. */
#define SAY_MS 10000
/* Drain: a draining tserver's replicas move once it leads nothing, or this
 * long after the master saw the mark (a leader that cannot move away). */
#define DRAIN_LEADERS_FIRST_MS 10000
/* The new replica's tserver silent this long (capped by the failure
 * timeout): the move rolls back. */
#define TARGET_LOST_MS 30000
/* The new replica not created this long after the move started (its
 * tserver refuses it: full, failing disk, ...): the move rolls back. A
 * joining replica opens at once; its copy comes after, in the ADD. */
#define CREATE_STUCK_MS 60000
/* The new voter not following the current leader (its tserver reports it
 * up in the leader's term) this long into the step removing: the replaced
 * replica stays and the move rolls back (issue 15: a replica that never
 * heard from the leader elected after a step-down). */
#define FOLLOW_STUCK_MS 30000

/* ---- state ----------------------------------------------------------------------------------- */

const char *moves_tserver_state(const struct master *m, const struct cat_tserver *ts,
				uint64_t now)
{
	if (catalog_tserver_live(ts, now, m->tserver_timeout_ms))
		return "live";
	return now - ts->last_hb_ms > m->failed_after_ms ? "failed" : "unreachable";
}

static bool tserver_failed(const struct master *m, const struct cat_tserver *ts, uint64_t now)
{
	return !catalog_tserver_live(ts, now, m->tserver_timeout_ms) &&
	       now - ts->last_hb_ms > m->failed_after_ms;
}

/* Whether r's tserver is live and its last heartbeat reported r up
 * (leader or follower, not candidate nor copying) in leader's term (any
 * term when leader is NULL). */
static bool up_in_term(const struct master *m, const struct cat_replica *r,
		       const struct cat_replica *leader, uint64_t now)
{
	const struct cat_tserver *ts = catalog_find_tserver(&m->cat, r->uuid);
	return ts != NULL && catalog_tserver_live(ts, now, m->tserver_timeout_ms) &&
	       r->seen_hb == ts->hb_count && r->up && (leader == NULL || r->term == leader->term);
}

bool moves_replica_live(const struct master *m, const struct cat_tablet *tb,
			const struct cat_replica *r, uint64_t now)
{
	return !r->joining &&
	       up_in_term(m, r, catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms), now);
}

uint32_t moves_live_replicas(struct master *m, const struct cat_tablet *tb, uint64_t now)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		n += moves_replica_live(m, tb, &tb->replicas[k], now);
	return n;
}

void moves_describe(const struct cat_tablet *tb, char *out, size_t cap)
{
	const struct cat_move *mv = tb->move;
	if (mv == NULL) {
		snprintf(out, cap, "%s", "");
		return;
	}
	snprintf(out, cap, "%s %" PRIu64 " -> %.40s (raft id %" PRIu64 "): %s", mv->reason,
		 mv->from_raft_id, mv->to_uuid, mv->new_raft_id,
		 catalog_move_step_name(mv->step));
}

uint32_t moves_of_tserver(const struct master *m, const char *uuid)
{
	uint32_t n = 0;
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_move *mv = m->cat.tablets[i]->move;
		n += mv != NULL && (strcmp(mv->from_uuid, uuid) == 0 || strcmp(mv->to_uuid, uuid) == 0);
	}
	return n;
}

/* The configuration tb's current leader reported, or NULL if no leader is
 * known or its report had none. It may hold an entry not committed yet:
 * an id seen absent ends a step only in a committed one (cfg->committed). */
static const struct cat_config *leader_config(struct master *m, const struct cat_tablet *tb,
					      const struct cat_replica **leader, uint64_t now)
{
	*leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
	if (*leader == NULL || !tb->config.known || tb->config.term != (*leader)->term)
		return NULL;
	return &tb->config;
}

/* Whether c has id (*voter: as a voter). */
static bool config_has(const struct cat_config *c, uint64_t id, bool *voter)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->id[i] == id) {
			if (voter != NULL)
				*voter = c->voter[i];
			return true;
		}
	return false;
}

/* Whether removing id from c leaves voters of which a majority is live. */
static bool remove_keeps_majority(struct master *m, struct cat_tablet *tb,
				  const struct cat_config *c, uint64_t id, uint64_t now,
				  uint32_t *live, uint32_t *voters)
{
	*live = 0;
	*voters = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct cat_replica *r;
		if (!c->voter[i] || c->id[i] == id)
			continue;
		(*voters)++;
		r = catalog_replica(tb, c->id[i]);
		/* The new replica counts once promoted, joining or not. */
		if (r != NULL) {
			struct cat_replica as_voter = *r;
			as_voter.joining = false;
			*live += moves_replica_live(m, tb, &as_voter, now);
		}
	}
	return *voters > 0 && *live > *voters / 2;
}

/* Logs why mv waits, at most every SAY_MS. */
#define SAY_WAIT(m, tb, now, ...)                                                            \
	do {                                                                                 \
		if ((tb)->move->said_ms == 0 || (now) - (tb)->move->said_ms >= SAY_MS) {     \
			(tb)->move->said_ms = (now);                                         \
			LOG_AT(LOG_LVL_INFO, (tb)->id, (m)->term, "master %s: move %s: waits: " \
			       __VA_ARGS__);                                                 \
		}                                                                            \
	} while (0)

/* ---- catalog writes of a move ---------------------------------------------------------------- */

static void advance(struct master *m, struct cat_tablet *tb, uint64_t now);
static void send_create(struct master *m, struct cat_tablet *tb);

enum write_kind {
	W_START,    /* the move document and the new replica */
	W_STEP,     /* the move document's step */
	W_FINISH,   /* from dropped, joining cleared, document deleted */
	W_ROLLBACK, /* the new replica dropped, document deleted */
};

struct move_write {
	struct cwrite w; /* first */
	enum write_kind kind;
	char id[CATALOG_MAX_TABLET_ID + 1];
	uint64_t new_raft_id;
	enum cat_move_step step; /* W_STEP */
	char why[96];
	struct cat_tablet after; /* the tablet document written (its replicas) */
};

static const char *write_what(enum write_kind k)
{
	switch (k) {
	case W_START: return "start";
	case W_STEP: return "step";
	case W_FINISH: return "finish";
	case W_ROLLBACK: return "roll-back";
	}
	return "?";
}

/* tb without replica id, every joining mark cleared (as the write of a
 * move's end leaves it; the others keep what heartbeats told). */
static void drop_replica(struct cat_tablet *tb, uint64_t id)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < tb->n_replicas; k++) {
		if (tb->replicas[k].raft_id == id)
			continue;
		tb->replicas[n] = tb->replicas[k];
		tb->replicas[n++].joining = false;
	}
	tb->n_replicas = n;
}

static void move_written(struct cwrite *w, int status)
{
	struct move_write *op = (struct move_write *)w;
	struct master *m = w->m;
	struct cat_tablet *tb = w->gen == m->gen ? catalog_find_tablet(&m->cat, op->id) : NULL;
	struct cat_move *mv = tb != NULL ? tb->move : NULL;
	uint64_t now = master_now_ms(m);

	if (mv == NULL || mv->new_raft_id != op->new_raft_id || tb->state != CAT_RUNNING) {
		/* Another leadership (the catalog was reloaded) or the table
		 * was dropped meanwhile: nothing here to update. */
		ddl_cwrite_free(w);
		return;
	}
	mv->busy = false;
	mv->writing = false;
	if (status != 0) {
		LOG_AT(LOG_LVL_WARN, tb->id, m->term, "master %s: move %s: catalog write (%s): %s",
		       m->address, tb->id, write_what(op->kind), docraft_strerror(status));
		mv->next_try_ms = now + RETRY_MS;
		if (op->kind == W_START) {
			free(mv);
			tb->move = NULL;
		}
		ddl_cwrite_free(w);
		return;
	}
	switch (op->kind) {
	case W_START:
		tb->replicas[tb->n_replicas++] = op->after.replicas[op->after.n_replicas - 1];
		tb->next_raft_id = op->after.next_raft_id;
		mv->step_at_ms = now;
		LOG_AT(LOG_LVL_INFO, tb->id, m->term,
		       "master %s: move %s started (%s): replica %" PRIu64 " on %s -> raft id %" PRIu64
		       " on tserver %s",
		       m->address, tb->id, mv->reason, mv->from_raft_id, mv->from_uuid,
		       mv->new_raft_id, mv->to_uuid);
		ddl_cwrite_free(w);
		send_create(m, tb);
		return;
	case W_STEP:
		mv->step = op->step;
		mv->step_at_ms = now;
		mv->failures = 0;
		mv->said_ms = 0;
		LOG_AT(LOG_LVL_INFO, tb->id, m->term, "master %s: move %s: step %s%s%s", m->address,
		       tb->id, catalog_move_step_name(op->step), op->why[0] ? ": " : "", op->why);
		ddl_cwrite_free(w);
		advance(m, tb, now); /* the step's action at once */
		return;
	case W_FINISH:
	case W_ROLLBACK:
		LOG_AT(LOG_LVL_INFO, tb->id, m->term,
		       "master %s: move %s %s after %" PRIu64 " ms: replicas now %s", m->address,
		       tb->id, op->kind == W_FINISH ? "done" : "rolled back",
		       hlc_wall_clock(NULL) / 1000 - mv->started_ms,
		       op->kind == W_FINISH ? "with the new one" : "as before");
		drop_replica(tb, op->kind == W_FINISH ? mv->from_raft_id : mv->new_raft_id);
		free(mv);
		tb->move = NULL;
		break;
	}
	ddl_cwrite_free(w);
}

/* Writes tb's move as kind asks (op->after is tb as the write leaves it);
 * mv->busy until done. */
static void submit_write(struct master *m, struct cat_tablet *tb, struct move_write *op)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_move after_move;
	int rv;

	snprintf(op->id, sizeof op->id, "%s", tb->id);
	op->new_raft_id = tb->move->new_raft_id;
	batch_init(&op->w.b);
	rv = 0;
	if (op->kind != W_STEP)
		rv = catalog_write_tablet(&op->w.b, &op->after, errmsg);
	if (rv == 0 && (op->kind == W_START || op->kind == W_STEP)) {
		after_move = *tb->move;
		if (op->kind == W_STEP)
			after_move.step = op->step;
		op->after.move = &after_move;
		rv = catalog_write_move(&op->w.b, &op->after, errmsg);
		op->after.move = NULL;
	} else if (rv == 0) {
		rv = catalog_write_move_delete(&op->w.b, tb->id, errmsg);
	}
	if (rv == 0 && (rv = ddl_cwrite_submit(m, &op->w, move_written)) != 0)
		err_set(errmsg, rv, "%s", docraft_strerror(rv));
	if (rv != 0) {
		LOG_AT(LOG_LVL_WARN, tb->id, m->term, "master %s: move %s: catalog write (%s): %s",
		       m->address, tb->id, write_what(op->kind), errmsg);
		enum write_kind kind = op->kind;
		batch_free(&op->w.b);
		free(op);
		tb->move->next_try_ms = master_now_ms(m) + RETRY_MS;
		if (kind == W_START) {
			free(tb->move);
			tb->move = NULL;
		}
		return;
	}
	m->ops++;
	tb->move->busy = true;
	tb->move->writing = true;
}

static struct move_write *write_new(struct cat_tablet *tb, enum write_kind kind)
{
	struct move_write *op = xcalloc(1, sizeof *op);
	op->kind = kind;
	op->after = *tb;
	op->after.move = NULL;
	return op;
}

static void set_step(struct master *m, struct cat_tablet *tb, enum cat_move_step step,
		     const char *why)
{
	struct move_write *op = write_new(tb, W_STEP);
	op->step = step;
	snprintf(op->why, sizeof op->why, "%s", why);
	submit_write(m, tb, op);
}

/* W_FINISH (drop from, the new one a plain replica) or W_ROLLBACK (drop
 * the new one). */
static void finish(struct master *m, struct cat_tablet *tb, enum write_kind kind)
{
	struct move_write *op = write_new(tb, kind);
	drop_replica(&op->after, kind == W_FINISH ? tb->move->from_raft_id : tb->move->new_raft_id);
	submit_write(m, tb, op);
}

/* ---- RPCs of a move -------------------------------------------------------------------------- */

enum call_kind { C_ADD, C_REMOVE, C_STEP_DOWN, C_CREATE };

struct move_call {
	struct rpc_call_req req; /* first */
	struct master *m;
	uint64_t gen;
	enum call_kind kind;
	char id[CATALOG_MAX_TABLET_ID + 1];
	uint64_t new_raft_id; /* the move's, to find it again */
	uint64_t raft_id;     /* the peer added / removed, the step-down target */
	char address[RPC_ADDRESS_MAX + 1];
};

static const char *call_what(enum call_kind k)
{
	switch (k) {
	case C_ADD: return "add";
	case C_REMOVE: return "remove";
	case C_STEP_DOWN: return "step down";
	case C_CREATE: return "create";
	}
	return "?";
}

/* Refusals that say nothing about the move (a leader changing, a change
 * committing, a tserver restarting): retried without counting. */
static bool transient(int status)
{
	return status == DOCRAFT_ENOTLEADER || status == DOCRAFT_ELEADERLOST ||
	       status == DOCRAFT_EBUSY || status == DOCRAFT_EUNAVAILABLE ||
	       status == DOCRAFT_ETIMEDOUT || status == DOCRAFT_ECLOSED;
}

static void call_done(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct move_call *c = (struct move_call *)req;
	struct master *m = c->m;
	struct cat_tablet *tb;
	struct cat_move *mv;
	uint64_t now;

	m->ops--;
	tb = c->gen == m->gen && !m->closing ? catalog_find_tablet(&m->cat, c->id) : NULL;
	mv = tb != NULL ? tb->move : NULL;
	if (mv == NULL || mv->new_raft_id != c->new_raft_id) {
		free(c);
		return;
	}
	now = master_now_ms(m);
	mv->busy = false;
	if (res->status != 0) {
		bool counted = c->kind == C_ADD && !transient(res->status);
		mv->failures += counted;
		mv->next_try_ms = now + RETRY_MS;
		LOG_AT(LOG_LVL_INFO, tb->id, m->term,
		       "master %s: move %s: %s of raft id %" PRIu64 " at %s: %s: %s%s", m->address,
		       tb->id, call_what(c->kind), c->raft_id, c->address,
		       docraft_strerror(res->status), res->message,
		       counted ? " (counts towards a roll-back)" : "");
		free(c);
		return;
	}
	switch (c->kind) {
	case C_ADD:
		if (mv->step == CAT_MOVE_ADDING)
			set_step(m, tb, CAT_MOVE_REMOVING, "the new replica is a voter");
		break;
	case C_REMOVE:
		if (mv->step == CAT_MOVE_REMOVING && c->raft_id == mv->from_raft_id)
			finish(m, tb, W_FINISH);
		else if (mv->step == CAT_MOVE_ROLLING_BACK && c->raft_id == mv->new_raft_id)
			finish(m, tb, W_ROLLBACK);
		else
			mv->next_try_ms = now; /* a half-added spare removed: ADD again */
		break;
	case C_STEP_DOWN:
		/* The next leader's report says where the leadership went. */
		mv->next_try_ms = now + RETRY_MS;
		break;
	case C_CREATE:
		mv->created = true;
		if (mv->step == CAT_MOVE_ADDING)
			advance(m, tb, now);
		break;
	}
	free(c);
}

/* The new replica's CREATE(join=true), sent straight to its tserver once
 * the move is written (heartbeats would instruct it too, a beat later;
 * creates are idempotent). Answered once the replica is open. */
static void send_create(struct master *m, struct cat_tablet *tb)
{
	const struct cat_table *t = catalog_find_table(&m->cat, tb->table);
	struct cat_replica *r = catalog_replica(tb, tb->move->new_raft_id);
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct move_call *c;
	struct arena a;
	int rv;

	if (t == NULL || r == NULL)
		return;
	c = xcalloc(1, sizeof *c);
	c->m = m;
	c->gen = m->gen;
	c->kind = C_CREATE;
	c->raft_id = r->raft_id;
	c->new_raft_id = r->raft_id;
	snprintf(c->id, sizeof c->id, "%s", tb->id);
	snprintf(c->address, sizeof c->address, "%s", r->address);
	arena_init(&a);
	rv = rpc_call_message(&m->cl, r->address, DOCRAFT__METHOD__TSERVER_CREATE_TABLET,
			      &ddl_create_tablet_pb(t, tb, r->raft_id, &a)->base, RPC_TIMEOUT_MS,
			      &c->req, call_done, errmsg);
	arena_free(&a);
	if (rv != 0) {
		free(c); /* the heartbeats instruct it */
		return;
	}
	r->create_sent_ms = master_now_ms(m);
	m->ops++;
	tb->move->busy = true;
}

/* Sends a ChangeConfig (ADD / REMOVE of id) or a StepDown (to id) about tb
 * to its leader's tserver. */
static void send_call(struct master *m, struct cat_tablet *tb, const struct cat_replica *leader,
		      enum call_kind kind, uint64_t id, const char *peer_address)
{
	Docraft__ChangeConfigRequest cc = DOCRAFT__CHANGE_CONFIG_REQUEST__INIT;
	Docraft__StepDownRequest sd = DOCRAFT__STEP_DOWN_REQUEST__INIT;
	Docraft__Peer p = DOCRAFT__PEER__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct move_call *c = xcalloc(1, sizeof *c);
	const ProtobufCMessage *msg;
	uint16_t method;
	int rv;

	c->m = m;
	c->gen = m->gen;
	c->kind = kind;
	c->raft_id = id;
	c->new_raft_id = tb->move->new_raft_id;
	snprintf(c->id, sizeof c->id, "%s", tb->id);
	snprintf(c->address, sizeof c->address, "%s", leader->address);
	if (kind == C_STEP_DOWN) {
		sd.tablet_id = tb->id;
		sd.to_raft_id = id;
		msg = &sd.base;
		method = DOCRAFT__METHOD__TSERVER_STEP_DOWN;
	} else {
		p.raft_id = id;
		p.address = (char *)(peer_address != NULL ? peer_address : "");
		p.voter = true;
		cc.tablet_id = tb->id;
		cc.kind = kind == C_ADD ? DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD
					: DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__REMOVE;
		cc.peer = &p;
		msg = &cc.base;
		method = DOCRAFT__METHOD__TSERVER_CHANGE_CONFIG;
	}
	rv = rpc_call_message(&m->cl, leader->address, method, msg,
			      kind == C_ADD ? ADD_TIMEOUT_MS : RPC_TIMEOUT_MS, &c->req, call_done,
			      errmsg);
	if (rv != 0) {
		LOG_AT(LOG_LVL_WARN, tb->id, m->term, "master %s: move %s: %s: %s", m->address,
		       tb->id, call_what(kind), errmsg);
		tb->move->next_try_ms = master_now_ms(m) + RETRY_MS;
		free(c);
		return;
	}
	m->ops++;
	tb->move->busy = true;
	LOG_AT(LOG_LVL_INFO, tb->id, m->term, "master %s: move %s: %s raft id %" PRIu64
	       " sent to the leader at %s", m->address, tb->id, call_what(kind), id,
	       leader->address);
}

/* ---- advancing a move ------------------------------------------------------------------------ */

/* Why an adding move must roll back ("" : it need not). */
static void rollback_reason(struct master *m, const struct cat_tablet *tb, bool created,
			    uint64_t now, char *why, size_t cap)
{
	const struct cat_move *mv = tb->move;
	const struct cat_tserver *to = catalog_find_tserver(&m->cat, mv->to_uuid);
	uint64_t lost = m->failed_after_ms < TARGET_LOST_MS ? m->failed_after_ms : TARGET_LOST_MS;

	why[0] = '\0';
	if (to == NULL || (!catalog_tserver_live(to, now, m->tserver_timeout_ms) &&
			   now - to->last_hb_ms > lost))
		snprintf(why, cap, "its tserver %.40s is silent", mv->to_uuid);
	else if (catalog_draining(&m->cat, mv->to_uuid))
		snprintf(why, cap, "its tserver %.40s is draining", mv->to_uuid);
	else if (mv->failures >= MAX_FAILURES)
		snprintf(why, cap, "the leader refused to add it %u times", mv->failures);
	else if (!created && now - mv->step_at_ms > CREATE_STUCK_MS)
		snprintf(why, cap, "its tserver did not create it within %d s",
			 CREATE_STUCK_MS / 1000);
}

/* The steps removing (id: the replaced replica, end: W_FINISH) and
 * rolling-back (id: the new one, end: W_ROLLBACK): once the leader's
 * applied configuration lacks id, the final write; while id leads, a
 * step-down (to to: 0 any voter); else REMOVE id when the voters left keep
 * a live majority. */
static void remove_step(struct master *m, struct cat_tablet *tb, const struct cat_config *cfg,
			const struct cat_replica *leader, uint64_t id, uint64_t to,
			enum write_kind end, uint64_t now)
{
	uint32_t live, voters;

	if (!config_has(cfg, id, NULL)) {
		if (cfg->committed)
			finish(m, tb, end);
		else
			SAY_WAIT(m, tb, now, "the removal is not committed yet", m->address, tb->id);
		return;
	}
	if (leader->raft_id == id) {
		send_call(m, tb, leader, C_STEP_DOWN, to, NULL);
		return;
	}
	if (!remove_keeps_majority(m, tb, cfg, id, now, &live, &voters)) {
		SAY_WAIT(m, tb, now, "removing raft id %" PRIu64 " would leave %u live of %u voters, "
			 "not a majority", m->address, tb->id, id, live, voters);
		return;
	}
	send_call(m, tb, leader, C_REMOVE, id, NULL);
}

/* The step removing's guard: the replaced replica leaves (or its leader
 * steps down) only once the new voter follows the current leader. Raft's
 * promotion proves the new replica caught up with the leader that
 * promoted it, not with the next one: after a step-down it can miss the
 * new leader (issue 15), and removing the old replica then leaves two
 * working voters of three. Past FOLLOW_STUCK_MS the move rolls back. */
static bool removal_may_start(struct master *m, struct cat_tablet *tb,
			      const struct cat_config *cfg, const struct cat_replica *leader,
			      const struct cat_replica *fresh, uint64_t now)
{
	struct cat_move *mv = tb->move;
	bool voter = false;

	if (!config_has(cfg, mv->from_raft_id, NULL) || leader->raft_id == mv->new_raft_id)
		return true; /* removed already, or the new one leads */
	if (!config_has(cfg, mv->new_raft_id, &voter) || !voter)
		return true; /* the leader's report lags the promotion: remove_step decides */
	if (fresh != NULL && up_in_term(m, fresh, leader, now)) /* joining: not "live" */
		return true;
	if (now - mv->step_at_ms > FOLLOW_STUCK_MS) {
		set_step(m, tb, CAT_MOVE_ROLLING_BACK, "the new voter does not follow the leader");
		return false;
	}
	SAY_WAIT(m, tb, now, "raft id %" PRIu64 " does not follow the leader (term %" PRIu64
		 ") yet", m->address, tb->id, mv->new_raft_id, leader->term);
	return false;
}

static void advance(struct master *m, struct cat_tablet *tb, uint64_t now)
{
	struct cat_move *mv = tb->move;
	const struct cat_replica *leader;
	const struct cat_config *cfg = leader_config(m, tb, &leader, now);
	struct cat_replica *fresh = catalog_replica(tb, mv->new_raft_id);
	const struct cat_tserver *to_ts = catalog_find_tserver(&m->cat, mv->to_uuid);
	bool voter = false, has, created;
	char why[96];

	if (cfg == NULL) {
		SAY_WAIT(m, tb, now, "no leader has reported its configuration", m->address, tb->id);
		return;
	}
	switch (mv->step) {
	case CAT_MOVE_ADDING:
		has = config_has(cfg, mv->new_raft_id, &voter);
		if (has && voter) {
			set_step(m, tb, CAT_MOVE_REMOVING, "the leader's configuration has it as a voter");
			return;
		}
		created = mv->created || (fresh != NULL && to_ts != NULL && to_ts->hb_count != 0 &&
					  fresh->seen_hb == to_ts->hb_count);
		rollback_reason(m, tb, created, now, why, sizeof why);
		if (why[0] != '\0') {
			set_step(m, tb, CAT_MOVE_ROLLING_BACK, why);
			return;
		}
		if (has) {
			/* A spare: raft_add done, the promotion cut short (by a
			 * leader change, a failover of this master). */
			send_call(m, tb, leader, C_REMOVE, mv->new_raft_id, NULL);
			return;
		}
		if (!created) {
			SAY_WAIT(m, tb, now, "the new replica is not created on %s yet", m->address,
				 tb->id, mv->to_address);
			return;
		}
		send_call(m, tb, leader, C_ADD, mv->new_raft_id, mv->to_address);
		return;
	case CAT_MOVE_REMOVING:
		has = config_has(cfg, mv->new_raft_id, &voter);
		if (!removal_may_start(m, tb, cfg, leader, fresh, now))
			return;
		remove_step(m, tb, cfg, leader, mv->from_raft_id, has && voter ? mv->new_raft_id : 0,
			    W_FINISH, now);
		return;
	case CAT_MOVE_ROLLING_BACK:
		remove_step(m, tb, cfg, leader, mv->new_raft_id, 0, W_ROLLBACK, now);
		return;
	}
}

/* ---- starting moves -------------------------------------------------------------------------- */

/* Every tserver the catalog's replicas name gets an entry, so one that
 * died before this leadership is judged (not live; failed in time). */
static void register_catalog_tservers(struct master *m)
{
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->state != CAT_RUNNING)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			struct cat_tserver *ts;
			if (catalog_find_tserver(&m->cat, tb->replicas[k].uuid) != NULL)
				continue;
			ts = catalog_tserver_upsert(&m->cat, tb->replicas[k].uuid,
						    tb->replicas[k].address);
			ts->last_hb_ms = m->loaded_ms;
			LOG_INFO("master %s: tserver %s (%s) holds replicas and has not "
				 "heartbeated this leader", m->address, ts->uuid, ts->address);
		}
	}
}

/* Whether tserver s leads a running tablet. */
static bool leads_any(struct master *m, const struct cat_tserver *ts, uint64_t now)
{
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		const struct cat_replica *l;
		if (tb->state != CAT_RUNNING)
			continue;
		l = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		if (l != NULL && strcmp(l->uuid, ts->uuid) == 0)
			return true;
	}
	return false;
}

static void start_move(struct master *m, struct cat_tablet *tb, uint32_t replica,
		       const struct cat_tserver *to, enum policy_reason reason)
{
	const struct cat_replica *from = &tb->replicas[replica];
	struct cat_move *mv = xcalloc(1, sizeof *mv);
	struct move_write *op;
	struct cat_replica *r;

	snprintf(mv->reason, sizeof mv->reason, "%s", policy_reason_name(reason));
	mv->from_raft_id = from->raft_id;
	snprintf(mv->from_uuid, sizeof mv->from_uuid, "%s", from->uuid);
	snprintf(mv->from_address, sizeof mv->from_address, "%s", from->address);
	snprintf(mv->to_uuid, sizeof mv->to_uuid, "%s", to->uuid);
	snprintf(mv->to_address, sizeof mv->to_address, "%s", to->address);
	mv->new_raft_id = tb->next_raft_id;
	mv->step = CAT_MOVE_ADDING;
	mv->started_ms = hlc_wall_clock(NULL) / 1000;
	tb->move = mv;
	op = write_new(tb, W_START);
	r = &op->after.replicas[op->after.n_replicas++];
	memset(r, 0, sizeof *r);
	r->raft_id = mv->new_raft_id;
	snprintf(r->uuid, sizeof r->uuid, "%s", to->uuid);
	snprintf(r->address, sizeof r->address, "%s", to->address);
	r->joining = true;
	op->after.next_raft_id = mv->new_raft_id + 1;
	submit_write(m, tb, op);
}

/* Tablets below a majority that lose a replica to a failed tserver: said,
 * at most every SAY_MS per tablet, since policy skips them silently. */
static void say_below_majority(struct master *m, struct cat_tablet *tb,
			       const struct policy_tablet *pt,
			       const struct policy_server *servers, uint64_t now)
{
	uint32_t up = 0;
	bool lost = false;
	for (uint32_t k = 0; k < pt->n_replicas; k++) {
		up += pt->up[k];
		lost |= pt->server[k] == POLICY_NONE || servers[pt->server[k]].failed;
	}
	if (!lost || 2 * (up + 1) > pt->n_replicas + 1) /* policy.h's majority rule */
		return;
	if (tb->said_ms != 0 && now - tb->said_ms < SAY_MS)
		return;
	tb->said_ms = now;
	LOG_AT(LOG_LVL_WARN, tb->id, m->term,
	       "master %s: tablet %s: %u of %u replicas up: with a new one not a majority of "
	       "%u, so no replica is moved until more come back", m->address, tb->id, up,
	       pt->n_replicas, pt->n_replicas + 1);
}

static void start_moves(struct master *m, uint64_t now)
{
	size_t n_servers = m->cat.n_tservers, n = 0, in_flight = 0, picked;
	struct policy_server *servers = xcalloc(n_servers ? n_servers : 1, sizeof *servers);
	struct policy_tablet *tablets = xcalloc(m->cat.n_tablets ? m->cat.n_tablets : 1,
						sizeof *tablets);
	struct cat_tablet **of = xcalloc(m->cat.n_tablets ? m->cat.n_tablets : 1, sizeof *of);
	const char **zones = xcalloc(n_servers ? n_servers : 1, sizeof *zones);
	struct policy_move *out;
	uint32_t n_zones = 0;
	size_t max;

	for (size_t s = 0; s < n_servers; s++) {
		const struct cat_tserver *ts = m->cat.tservers[s];
		servers[s].live = catalog_tserver_live(ts, now, m->tserver_timeout_ms);
		servers[s].failed = tserver_failed(m, ts, now);
		servers[s].draining = catalog_draining(&m->cat, ts->uuid);
		servers[s].zone = policy_zone_index(zones, &n_zones, (uint32_t)n_servers,
						    ts->placement);
	}
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		const struct cat_table *t;
		struct policy_tablet *pt = &tablets[n];
		if (tb->state != CAT_RUNNING || (t = catalog_find_table(&m->cat, tb->table)) == NULL)
			continue;
		pt->rf = t->rf;
		pt->n_replicas = tb->n_replicas;
		pt->moving = tb->move != NULL;
		in_flight += pt->moving;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			const struct cat_replica *r = &tb->replicas[k];
			size_t s = catalog_tserver_index(&m->cat, r->uuid);
			pt->server[k] = s == SIZE_MAX ? POLICY_NONE : s;
			pt->up[k] = moves_replica_live(m, tb, r, now);
			if (s != SIZE_MAX)
				servers[s].load++;
		}
		if (tb->move != NULL) {
			size_t f = catalog_tserver_index(&m->cat, tb->move->from_uuid);
			size_t t2 = catalog_tserver_index(&m->cat, tb->move->to_uuid);
			if (f != SIZE_MAX)
				servers[f].moves_in_flight++;
			if (t2 != SIZE_MAX)
				servers[t2].moves_in_flight++;
		} else {
			say_below_majority(m, tb, pt, servers, now);
		}
		of[n++] = tb;
	}
	max = m->max_moves > in_flight ? m->max_moves - in_flight : 0;
	out = xcalloc(max ? max : 1, sizeof *out);
	picked = max > 0 ? policy_pick(servers, n_servers, tablets, n, max,
				       m->max_moves_per_server, out)
			 : 0;
	for (size_t i = 0; i < picked; i++) {
		struct cat_tablet *tb = of[out[i].tablet];
		size_t from = tablets[out[i].tablet].server[out[i].replica];
		struct cat_tserver *fts = from != POLICY_NONE ? m->cat.tservers[from] : NULL;
		if (tb->move != NULL)
			continue;
		if (out[i].reason == POLICY_DRAIN && fts != NULL && leads_any(m, fts, now) &&
		    now - (fts->drain_seen_ms != 0 ? fts->drain_seen_ms : now) <
			    DRAIN_LEADERS_FIRST_MS)
			continue; /* its leaders move first */
		start_move(m, tb, out[i].replica, m->cat.tservers[out[i].to], out[i].reason);
	}
	free(out);
	free(zones);
	free(of);
	free(tablets);
	free(servers);
}

void moves_tick(struct master *m)
{
	uint64_t now;

	if (m->closing || !m->leader || !m->loaded)
		return;
	now = master_now_ms(m);
	if (now - m->loaded_ms < m->tserver_timeout_ms)
		return;
	register_catalog_tservers(m);
	for (size_t s = 0; s < m->cat.n_tservers; s++) {
		struct cat_tserver *ts = m->cat.tservers[s];
		bool draining = catalog_draining(&m->cat, ts->uuid);
		if (draining && ts->drain_seen_ms == 0)
			ts->drain_seen_ms = now;
		else if (!draining)
			ts->drain_seen_ms = 0;
	}
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->move != NULL && tb->move->step_at_ms == 0)
			tb->move->step_at_ms = now; /* loaded: its step starts here for us */
		if (tb->move != NULL && !tb->move->busy && now >= tb->move->next_try_ms &&
		    tb->state == CAT_RUNNING)
			advance(m, tb, now);
	}
	start_moves(m, now);
}

/* ---- the timer ------------------------------------------------------------------------------- */

static void tick_cb(uv_timer_t *t)
{
	moves_tick(t->data);
}

void moves_open(struct master *m)
{
	uv_timer_init(m->loop, &m->moves_timer);
	m->moves_timer.data = m;
	m->moves_open = true;
	uv_timer_start(&m->moves_timer, tick_cb, MOVES_TICK_MS, MOVES_TICK_MS);
}

/* ---- MASTER_DRAIN ---------------------------------------------------------------------------- */

struct drain_op {
	struct cwrite w; /* first */
	struct rpc_call *call;
	char uuid[CATALOG_MAX_UUID + 1];
	bool on;
};

static void drain_reply(struct master *m, struct rpc_call *call, const char *uuid)
{
	Docraft__DrainResponse resp = DOCRAFT__DRAIN_RESPONSE__INIT;
	uint64_t now = master_now_ms(m);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		const struct cat_replica *l;
		bool holds = false;
		if (tb->state == CAT_DELETED)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++)
			holds |= strcmp(tb->replicas[k].uuid, uuid) == 0;
		resp.replicas_left += holds;
		l = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		resp.leaders_left += l != NULL && strcmp(l->uuid, uuid) == 0;
	}
	rpc_reply_message(call, &resp.base);
}

static void drain_written(struct cwrite *w, int status)
{
	struct drain_op *op = (struct drain_op *)w;
	struct master *m = w->m;

	if (status != 0) {
		rpc_reply_errorf(op->call, status, "drain: catalog write: %s%s",
				 docraft_strerror(status),
				 status == DOCRAFT_ELEADERLOST ? " (outcome unknown)" : "");
	} else if (w->gen != m->gen) {
		/* Committed; the next leader loads the mark. */
		rpc_reply_errorf(op->call, DOCRAFT_ELEADERLOST,
				 "drain: written, but the master lost its leadership; retry");
	} else {
		catalog_set_drain(&m->cat, op->uuid, op->on);
		LOG_INFO("master %s: tserver %s %s", m->address, op->uuid,
			 op->on ? "draining: its leaders, then its replicas move away"
				: "no longer draining");
		drain_reply(m, op->call, op->uuid);
	}
	ddl_cwrite_free(w);
}

/* The tserver named by uuid or address: a heartbeating one, or one the
 * catalog's replicas name. */
static const char *find_tserver_uuid(struct master *m, const char *name)
{
	for (size_t i = 0; i < m->cat.n_tservers; i++)
		if (strcmp(m->cat.tservers[i]->uuid, name) == 0 ||
		    strcmp(m->cat.tservers[i]->address, name) == 0)
			return m->cat.tservers[i]->uuid;
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		for (uint32_t k = 0; k < tb->n_replicas; k++)
			if (strcmp(tb->replicas[k].uuid, name) == 0 ||
			    strcmp(tb->replicas[k].address, name) == 0)
				return tb->replicas[k].uuid;
	}
	/* Draining but gone from everything else (drained, then stopped). */
	for (size_t i = 0; i < m->cat.n_drains; i++)
		if (strcmp(m->cat.drains[i], name) == 0)
			return m->cat.drains[i];
	return NULL;
}

enum rpc_dispatch_req moves_drain(void *ctx, struct rpc_call *call, void *request, void *obj)
{
	struct master *m = ctx;
	const Docraft__DrainRequest *req = request;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *uuid;
	struct drain_op *op;
	int rv;

	(void)obj;
	if (req->tserver[0] == '\0') {
		rpc_reply_error(call, DOCRAFT_EINVAL, "drain: name a tserver (uuid or address)",
				NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	uuid = find_tserver_uuid(m, req->tserver);
	if (uuid == NULL) {
		rpc_reply_errorf(call, DOCRAFT_ENOTFOUND,
				 "drain: no tserver '%.80s' is known to the master (give its uuid or "
				 "its address as `docraft tservers` lists it)",
				 req->tserver);
		return RPC_DISPATCH_FREE;
	}
	if (catalog_draining(&m->cat, uuid) == !req->undrain) {
		drain_reply(m, call, uuid); /* already so */
		return RPC_DISPATCH_FREE;
	}
	op = xcalloc(1, sizeof *op);
	op->call = call;
	op->on = !req->undrain;
	snprintf(op->uuid, sizeof op->uuid, "%s", uuid);
	batch_init(&op->w.b);
	rv = catalog_write_drain(&op->w.b, op->uuid, op->on, hlc_wall_clock(NULL) / 1000, errmsg);
	if (rv == 0 && (rv = ddl_cwrite_submit(m, &op->w, drain_written)) != 0)
		err_set(errmsg, rv, "drain: catalog write: %s", docraft_strerror(rv));
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		batch_free(&op->w.b);
		free(op);
		return RPC_DISPATCH_FREE;
	}
	m->ops++;
	return RPC_DISPATCH_FREE;
}

/* ---- MASTER_CLUSTER_STATUS ------------------------------------------------------------------- */

#define STATUS_MAX_IDS 100

enum rpc_dispatch_req moves_cluster_status(void *ctx, struct rpc_call *call, void *req,
					   void *obj)
{
	struct master *m = ctx;
	Docraft__ClusterStatusResponse resp = DOCRAFT__CLUSTER_STATUS_RESPONSE__INIT;
	uint64_t now = master_now_ms(m), wall = hlc_wall_clock(NULL) / 1000;
	size_t n_moves = 0;
	struct arena a;

	(void)req;
	(void)obj;
	arena_init(&a);
	resp.n_tservers = m->cat.n_tservers;
	resp.tservers = tservers_infos(m, now, &a);
	for (size_t i = 0; i < m->cat.n_tables; i++)
		resp.tables += m->cat.tables[i]->state == CAT_RUNNING;
	for (size_t i = 0; i < m->cat.n_tablets; i++)
		n_moves += m->cat.tablets[i]->move != NULL;
	resp.moves = master_zalloc(&a, n_moves * sizeof *resp.moves);
	resp.under_replicated_tablets = master_zalloc(&a, STATUS_MAX_IDS * sizeof(char *));
	resp.leaderless_tablets = master_zalloc(&a, STATUS_MAX_IDS * sizeof(char *));
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		const struct cat_table *t = catalog_find_table(&m->cat, tb->table);
		const struct cat_move *mv = tb->move;
		if (tb->state != CAT_RUNNING || t == NULL)
			continue;
		resp.tablets++;
		if (moves_live_replicas(m, tb, now) < t->rf) {
			if (resp.n_under_replicated_tablets < STATUS_MAX_IDS)
				resp.under_replicated_tablets[resp.n_under_replicated_tablets++] =
					tb->id;
			resp.under_replicated++;
		}
		if (catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms) == NULL) {
			if (resp.n_leaderless_tablets < STATUS_MAX_IDS)
				resp.leaderless_tablets[resp.n_leaderless_tablets++] = tb->id;
			resp.leaderless++;
		}
		if (mv != NULL) {
			Docraft__MoveInfo *mi = master_zalloc(&a, sizeof *mi);
			docraft__move_info__init(mi);
			mi->tablet_id = tb->id;
			mi->reason = (char *)mv->reason;
			mi->from_uuid = (char *)mv->from_uuid;
			mi->to_uuid = (char *)mv->to_uuid;
			mi->new_raft_id = mv->new_raft_id;
			mi->step = (char *)catalog_move_step_name(mv->step);
			mi->age_ms = wall > mv->started_ms ? wall - mv->started_ms : 0;
			resp.moves[resp.n_moves++] = mi;
		}
	}
	resp.n_masters = members_addresses(m, &a, &resp.masters);
	resp.master_leader = m->address;
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}
