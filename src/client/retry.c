/* One request's life: a tablet call with retries (see retry.h).
 *
 * Design note.
 *
 *                        tcall_start
 *                             |
 *                             v
 *   +----------------->  LOCATE  ---- table not loaded, tablet stale ---+
 *   |                      |                                            |
 *   |          tablet found: target = its leader (or a replica that     |
 *   |          is not marked down when the leader is, or is unknown)    |
 *   |                      v                                            v
 *   |   +-------------->  SEND  (attempt timeout = min(rpc_timeout,   REFRESH
 *   |   |                  |     time left); same client id + seq)   (GetTable,
 *   |   |                  |                                         coalesced)
 *   |   |   OK ------------+----------------------------> DONE(OK)      |
 *   |   |                  |                                            |
 *   |   |   NOT_LEADER     | hint given, new, hops <= TCALL_MAX_HOPS:   |
 *   |   +------------------+ leader := hint (in the cache), at once     |
 *   |   |                  | no hint: the next replica, at once         |
 *   |   |                  |                                            |
 *   |   |   transport error, TIMED_OUT, UNAVAILABLE, TABLET_NOT_FOUND,  |
 *   |   |   LEADERSHIP_LOST, server CLOSED, too many hops:              |
 *   |   |                  | tablet stale (+ target marked down)        |
 *   |   |   WRONG_TABLET:  | refresh now, no backoff (the 2nd: DONE)    |
 *   |   |   SERVICE_BUSY:  | same target, no refresh                    |
 *   |   |                  v                                            |
 *   |   +---- (BUSY) -- BACKOFF  jittered: 20 ms doubling to 1 s  ------+
 *   |                                                                   |
 *   +-------------------------------------------------------------------+
 *                       refresh answered (or the tablet was refreshed
 *                       meanwhile by another request: no GetTable)
 *
 *   INVALID_ARGUMENT, TABLE_NOT_FOUND, NOT_FOUND, TOO_BIG, ... ----> DONE(that)
 *   deadline (default 10 s after the request started) in any state
 *                                  ----> DONE(EUNAVAILABLE, "... last: <error>")
 *   client closing in any state ----> DONE(ECLOSED)
 *
 * Why this shape. A NOT_LEADER hint is the freshest knowledge there is (the
 * server just heard from its leader), so it is followed at once and costs
 * the master nothing; a chain of hints longer than TCALL_MAX_HOPS means an
 * election is under way, and waiting is better than ping-pong. Everything
 * that says "this address does not serve this tablet any more" refreshes
 * the table from the master, after a backoff so that a dead leader is not
 * hammered while Raft elects a new one and the master learns it (one
 * heartbeat). The backoff is jittered so that many clients do not retry in
 * lockstep. A backoff after a lost leader (not after SERVICE_BUSY) ends
 * early when another call to the same tablet succeeds: the tablet is
 * served again, so the calls that were in flight at a failover follow the
 * first one that found the new leader at once (backoff reset to
 * backoff_min_ms) instead of sleeping out a backoff grown during the
 * election (up to backoff_max_ms, 1 s). The total time is bounded: no
 * state waits past the deadline (an RPC's timeout is capped by the time
 * left, a backoff by the deadline, a refresh wait by a timer at the
 * deadline), and giving up reports
 * DOCRAFT_EUNAVAILABLE with the last error seen, distinct from the final
 * errors a server returns.
 *
 * WRONG_TABLET (a key outside the tablet's partition; nothing of the
 * request was applied) means the cached partitions of the table are stale
 * (the table was dropped and created again under the same name, ...): the
 * table is refreshed at once and the call located again by its route. A
 * second WRONG_TABLET after that refresh means the master's map agrees
 * that this tablet covers the route, so the request itself mixes keys of
 * several tablets: it is delivered to the owner, which regroups or fails.
 *
 * Exactly once. The request message is built once by the owner and only
 * its tablet id (and the write's min_running) change between attempts: a
 * write keeps its client id and sequence number on every retry, so a
 * tablet that applied the first attempt answers the retry from its retry
 * table instead of applying it again.
 *
 * Callbacks are delivered from the client timer (final = status) when
 * they are decided inside a start function, so they never run
 * synchronously. */
#include "client/retry.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/internal.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
#include "rpc.pb-c.h" /* DOCRAFT__METHOD__TSERVER_READ, for the deliberate bug */
#endif

static void locate(struct tcall *t);
static void send_attempt(struct tcall *t);

/* ---- calls backing off after a lost leader (table->backing_off) ---- */

static void bo_unlink(struct tcall *t)
{
	if (!t->bo_linked)
		return;
	if (t->bo_prev != NULL)
		t->bo_prev->bo_next = t->bo_next;
	else
		t->table->backing_off = t->bo_next;
	if (t->bo_next != NULL)
		t->bo_next->bo_prev = t->bo_prev;
	t->bo_prev = t->bo_next = NULL;
	t->bo_linked = false;
}

static void bo_link(struct tcall *t)
{
	if (t->bo_linked)
		return;
	t->bo_prev = NULL;
	t->bo_next = t->table->backing_off;
	if (t->bo_next != NULL)
		t->bo_next->bo_prev = t;
	t->table->backing_off = t;
	t->bo_linked = true;
}

/* A call to tablet_id just succeeded: its leader serves again, so the calls
 * of that tablet waiting out a backoff (after a lost leader) go now, with
 * their backoff reset, instead of sleeping up to backoff_max_ms more. */
static void wake_tablet(docraft_client *c, struct mc_table *table, const char *tablet_id)
{
	struct tcall *w = table->backing_off, *next;
	uint64_t now = client_now(c);
	for (; w != NULL; w = next) {
		next = w->bo_next;
		if (w->state != TCALL_BACKOFF || strcmp(w->tablet_id, tablet_id) != 0)
			continue;
		bo_unlink(w);
		w->backoff_ms = c->opts.backoff_min_ms;
		ctimer_start(c, &w->timer, now);
	}
}

static void deliver(struct tcall *t, int status, const char *errmsg, const uint8_t *reply,
		    size_t len)
{
	bo_unlink(t);
	ctimer_stop(t->c, &t->timer);
	metacache_cancel(t->table, &t->waiter);
	t->state = TCALL_DONE;
	t->cb(t, status, errmsg, reply, len);
}

/* Decided inside a start function or a synchronous failure: deliver from
 * the timer. */
static void deliver_later(struct tcall *t, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void deliver_later(struct tcall *t, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->last_msg, sizeof t->last_msg, fmt, ap);
	va_end(ap);
	t->final = status;
	t->state = TCALL_DONE;
	ctimer_start(t->c, &t->timer, 0);
}

static void give_up(struct tcall *t)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	err_set(msg, 0,
		"tablet %s of table %s unavailable: gave up after %u attempts (%u redirects, "
		"%u refreshes); last: %s: %s",
		t->tablet_id[0] ? t->tablet_id : "?", t->table->name, t->attempts, t->redirects,
		t->refreshes, docraft_strerror(t->last_status), t->last_msg);
	deliver(t, DOCRAFT_EUNAVAILABLE, msg, NULL, 0);
}

static void timer_fired(struct ctimer *ct)
{
	struct tcall *t = CONTAINER_OF(ct, struct tcall, timer);
	uint64_t now = client_now(t->c);

	bo_unlink(t);
	if (t->c->closing) {
		deliver(t, DOCRAFT_ECLOSED, "the client is closing", NULL, 0);
		return;
	}
	switch (t->state) {
	case TCALL_DONE:
		deliver(t, t->final, t->last_msg, NULL, 0);
		return;
	case TCALL_REFRESH:
		/* The deadline, while waiting for the master. */
		if (metacache_refresh_error(t->table)[0] != '\0') {
			t->last_status = DOCRAFT_EUNAVAILABLE;
			snprintf(t->last_msg, sizeof t->last_msg, "%s",
				 metacache_refresh_error(t->table));
		}
		give_up(t);
		return;
	case TCALL_BACKOFF:
		if (now >= t->deadline) {
			give_up(t);
			return;
		}
		locate(t);
		return;
	default:
		PANIC("tcall timer in state %d", (int)t->state);
	}
}

static void refreshed(struct mc_waiter *w, int status, const char *errmsg)
{
	struct tcall *t = CONTAINER_OF(w, struct tcall, waiter);
	uint64_t now = client_now(t->c);

	ctimer_stop(t->c, &t->timer);
	if (t->c->closing) {
		deliver(t, DOCRAFT_ECLOSED, "the client is closing", NULL, 0);
		return;
	}
	if (status != 0) {
		if (!status_retryable(status)) {
			deliver(t, status, errmsg, NULL, 0);
			return;
		}
		/* The master is unavailable: keep its error and try again. */
		t->last_status = status;
		snprintf(t->last_msg, sizeof t->last_msg, "%s", errmsg);
		if (now >= t->deadline) {
			give_up(t);
			return;
		}
		t->state = TCALL_BACKOFF;
		{
			uint32_t d = client_jitter(t->c, t->backoff_ms);
			t->backoff_ms = t->backoff_ms * 2 > t->c->opts.backoff_max_ms
						? t->c->opts.backoff_max_ms
						: t->backoff_ms * 2;
			ctimer_start(t->c, &t->timer, now + d < t->deadline ? now + d : t->deadline);
		}
		return;
	}
	locate(t);
}

static void refresh(struct tcall *t)
{
	t->state = TCALL_REFRESH;
	t->refreshes++;
	t->hops = 0;
	/* A timer at the deadline bounds the wait. */
	ctimer_start(t->c, &t->timer, t->deadline);
	metacache_refresh(&t->c->mc, t->table, t->deadline, &t->waiter);
}

static void backoff(struct tcall *t)
{
	uint64_t now = client_now(t->c);
	uint32_t d;

	if (now >= t->deadline) {
		give_up(t);
		return;
	}
	d = client_jitter(t->c, t->backoff_ms);
	t->backoff_ms = t->backoff_ms * 2 > t->c->opts.backoff_max_ms ? t->c->opts.backoff_max_ms
								      : t->backoff_ms * 2;
	t->state = TCALL_BACKOFF;
	t->hops = 0;
	ctimer_start(t->c, &t->timer, now + d < t->deadline ? now + d : t->deadline);
}

/* A backoff after the tablet's leader was lost (not after SERVICE_BUSY):
 * cut short by the first success of another call to the tablet. */
static void backoff_lost_leader(struct tcall *t)
{
	backoff(t);
	if (t->state == TCALL_BACKOFF && t->replica == NULL && t->tablet_id[0] != '\0')
		bo_link(t);
}

static struct mc_tablet *find_tablet(struct tcall *t)
{
	if (t->by_id != NULL)
		return metacache_tablet_by_id(t->table, t->by_id);
	return metacache_lookup(t->table, t->route);
}

static void locate(struct tcall *t)
{
	struct mc_tablet *tb;
	size_t n;

	t->state = TCALL_LOCATE;
	if (!t->table->loaded) {
		refresh(t);
		return;
	}
	tb = find_tablet(t);
	if (tb == NULL) {
		/* Only by id: the table is loaded, so every hash has a tablet. */
		if (t->refreshes == 0) {
			refresh(t);
			return;
		}
		deliver(t, DOCRAFT_ENOTFOUND, "", NULL, 0);
		return;
	}
	if (tb->stale) {
		refresh(t);
		return;
	}
	n = strlen(tb->id);
	if (n >= sizeof t->tablet_id) {
		deliver(t, DOCRAFT_ECORRUPT, "tablet id too long", NULL, 0);
		return;
	}
	memcpy(t->tablet_id, tb->id, n + 1);
	t->tablet_start = tb->start;
	t->tablet_end = tb->end;
	if (t->replica != NULL)
		snprintf(t->target, sizeof t->target, "%s", t->replica);
	else
		snprintf(t->target, sizeof t->target, "%s",
			 metacache_target(&t->c->mc, tb, client_now(t->c)));
#ifdef DOCRAFT_JEPSEN_BUG_FOLLOWER_READS
	/* DELIBERATE BUG (meson -Djepsen_bug=follower-reads, failover suite
	 * only, docs/reliability.md): reads go to a random replica. */
	if (t->replica == NULL && t->method == DOCRAFT__METHOD__TSERVER_READ && tb->n_replicas > 0)
		snprintf(t->target, sizeof t->target, "%s",
			 tb->replicas[client_jitter(t->c, 1u << 20) % tb->n_replicas].address);
#endif
	send_attempt(t);
}

/* Marks the tablet the call went to as needing a refresh. */
static void invalidate(struct tcall *t)
{
	struct mc_tablet *tb = find_tablet(t);
	if (tb != NULL && strcmp(tb->id, t->tablet_id) == 0)
		tb->stale = true;
}

static void on_reply(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct tcall *t = req->data;
	docraft_client *c = t->c;
	uint64_t now = client_now(c);
	struct mc_tablet *tb;
	const char *why;
	int final;

	if (res->status == DOCRAFT_OK) {
		if (t->replica == NULL && (tb = find_tablet(t)) != NULL &&
		    strcmp(tb->id, t->tablet_id) == 0) {
			/* The tablet is served at target: whatever made it stale
			 * (a lost leader) is over. */
			metacache_set_leader(tb, t->target);
			tb->stale = false;
		}
		metacache_mark_up(&c->mc, t->target);
		if (t->replica == NULL && t->table->backing_off != NULL)
			wake_tablet(c, t->table, t->tablet_id);
		deliver(t, 0, "", res->reply, res->reply_len);
		return;
	}
	t->last_status = res->status;
	final = status_final(c, res, "", t->target, t->last_msg, sizeof t->last_msg, &why);
	if (final != 0) {
		if (final == DOCRAFT_ETABLENOTFOUND)
			metacache_forget(&c->mc, t->table->name);
		deliver(t, final, why, NULL, 0);
		return;
	}
	if (now >= t->deadline) {
		give_up(t);
		return;
	}
	tb = find_tablet(t);
	if (tb != NULL && strcmp(tb->id, t->tablet_id) != 0)
		tb = NULL; /* refreshed meanwhile: locate again */
	switch (res->status) {
	case DOCRAFT_ENOTLEADER:
		if (t->replica != NULL || tb == NULL)
			break;
		if (t->hops < TCALL_MAX_HOPS) {
			const char *next = NULL;
			if (res->leader_address[0] != '\0' &&
			    strcmp(res->leader_address, t->target) != 0 &&
			    strlen(res->leader_address) <= RPC_ADDRESS_MAX) {
				next = res->leader_address;
				metacache_set_leader(tb, next);
			} else if (res->leader_address[0] == '\0' && res->leader_id != 0 &&
				   (next = metacache_replica_address(tb, res->leader_id)) != NULL &&
				   strcmp(next, t->target) != 0) {
				metacache_set_leader(tb, next);
			} else if (res->leader_address[0] == '\0' && tb->n_replicas > 1) {
				/* No hint (tikv#15056): ask the next replica. */
				next = metacache_next_replica(tb, t->target);
				tb->leader[0] = '\0';
			} else {
				next = NULL;
			}
			if (next != NULL) {
				t->hops++;
				t->redirects++;
				snprintf(t->target, sizeof t->target, "%s", next);
				send_attempt(t);
				return;
			}
		}
		/* An election is under way: wait, then ask the master. */
		tb->stale = true;
		tb->leader[0] = '\0';
		backoff_lost_leader(t);
		return;
	case DOCRAFT_EWRONGTABLET:
		if (t->replica != NULL || t->by_id != NULL || t->wrong_tablets++ > 0) {
			deliver(t, res->status, t->last_msg, NULL, 0);
			return;
		}
		invalidate(t);
		refresh(t);
		return;
	case DOCRAFT_EBUSY:
		/* Overloaded, not gone: the same target after a pause. */
		if (tb != NULL && t->replica == NULL)
			metacache_set_leader(tb, t->target);
		backoff(t);
		return;
	case DOCRAFT_EUNAVAILABLE:
	case DOCRAFT_ETIMEDOUT:
		metacache_mark_down(&c->mc, t->target, now);
		break;
	default:
		break;
	}
	/* Transport error, timeout, unknown tablet, lost leadership, a
	 * server closing: refresh this table's locations after a backoff. */
	if (t->replica == NULL)
		invalidate(t);
	backoff_lost_leader(t);
}

static void send_attempt(struct tcall *t)
{
	docraft_client *c = t->c;
	uint64_t now = client_now(c), left;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (now >= t->deadline) {
		give_up(t);
		return;
	}
	if (t->target[0] == '\0') {
		t->last_status = DOCRAFT_EUNAVAILABLE;
		snprintf(t->last_msg, sizeof t->last_msg, "tablet %s has no replica", t->tablet_id);
		invalidate(t);
		backoff(t);
		return;
	}
	left = t->deadline - now;
	*t->tablet_id_field = t->tablet_id;
	if (t->table_id_field != NULL)
		*t->table_id_field = t->table->id;
	if (t->prepare != NULL)
		t->prepare(t);
	t->state = TCALL_SEND;
	t->attempts++;
	t->rpc.data = t;
	rv = rpc_call_message(&c->rpc, t->target, t->method, t->msg,
			      (uint32_t)(left < c->opts.rpc_timeout_ms ? left : c->opts.rpc_timeout_ms),
			      &t->rpc, on_reply, errmsg);
	if (rv != 0) {
		if (rv == DOCRAFT_EINVAL && t->replica == NULL) {
			/* A hint we cannot even parse: ask the master. */
			t->last_status = rv;
			snprintf(t->last_msg, sizeof t->last_msg, "%s", errmsg);
			invalidate(t);
			backoff(t);
			return;
		}
		deliver_later(t, rv, "%s", errmsg);
	}
}

void tcall_init(struct tcall *t, docraft_client *c, struct mc_table *table, uint32_t route,
		uint16_t method, ProtobufCMessage *msg, char **tablet_id_field, uint64_t deadline,
		tcall_cb cb)
{
	/* All else zero; data is the owner's. */
	*t = (struct tcall){.data = t->data, .c = c, .table = table, .route = route,
			    .method = method, .msg = msg, .tablet_id_field = tablet_id_field,
			    .deadline = deadline, .cb = cb, .backoff_ms = c->opts.backoff_min_ms,
			    .last_status = DOCRAFT_ETIMEDOUT};
	snprintf(t->last_msg, sizeof t->last_msg, "the deadline passed before any attempt");
	ctimer_init(&t->timer, timer_fired);
	t->waiter.cb = refreshed;
}

void tcall_by_id(struct tcall *t, const char *tablet_id)
{
	t->by_id = tablet_id;
}

void tcall_to_replica(struct tcall *t, const char *address)
{
	t->replica = address;
}

void tcall_start(struct tcall *t)
{
	PRE(t->state == TCALL_IDLE);
	if (t->c->closing) {
		deliver_later(t, DOCRAFT_ECLOSED, "the client is closing");
		return;
	}
	/* Go through the timer once so that nothing (not even a failure found
	 * at once) calls back inside this function. */
	t->state = TCALL_BACKOFF;
	ctimer_start(t->c, &t->timer, 0);
}

/* ---- loading a table ---- */

static void tload_deliver(struct tload *l, int status, const char *errmsg)
{
	ctimer_stop(l->c, &l->timer);
	metacache_cancel(l->table, &l->waiter);
	l->cb(l, status, errmsg);
}

static void tload_loaded(struct mc_waiter *w, int status, const char *errmsg);

static void tload_timer(struct ctimer *ct)
{
	struct tload *l = CONTAINER_OF(ct, struct tload, timer);
	uint64_t now = client_now(l->c);

	if (l->c->closing) {
		tload_deliver(l, DOCRAFT_ECLOSED, "the client is closing");
		return;
	}
	if (l->final >= 0) {
		tload_deliver(l, l->final, l->final_msg);
		return;
	}
	if (l->waiter.waiting || now >= l->deadline) {
		/* The deadline while waiting (or right after a backoff). */
		const char *last = metacache_refresh_error(l->table);
		if (last[0] != '\0')
			err_set(l->final_msg, 0, "table %s: no master answered in time; last: %s",
				l->table->name, last);
		tload_deliver(l, DOCRAFT_EUNAVAILABLE, l->final_msg);
		return;
	}
	if (!l->force && l->table->loaded) {
		tload_deliver(l, 0, "");
		return;
	}
	ctimer_start(l->c, &l->timer, l->deadline);
	metacache_refresh(&l->c->mc, l->table, l->deadline, &l->waiter);
}

static void tload_loaded(struct mc_waiter *w, int status, const char *errmsg)
{
	struct tload *l = CONTAINER_OF(w, struct tload, waiter);
	uint64_t now = client_now(l->c);

	if (status == 0 || !status_retryable(status) || l->c->closing) {
		tload_deliver(l, l->c->closing ? DOCRAFT_ECLOSED : status, errmsg);
		return;
	}
	snprintf(l->final_msg, sizeof l->final_msg, "table %s: %s", l->table->name, errmsg);
	if (now >= l->deadline) {
		tload_deliver(l, DOCRAFT_EUNAVAILABLE, l->final_msg);
		return;
	}
	{
		uint32_t d = client_jitter(l->c, l->backoff_ms);
		l->backoff_ms = l->backoff_ms * 2 > l->c->opts.backoff_max_ms
					? l->c->opts.backoff_max_ms
					: l->backoff_ms * 2;
		ctimer_start(l->c, &l->timer, now + d < l->deadline ? now + d : l->deadline);
	}
}

void tload_start(struct tload *l, docraft_client *c, struct mc_table *table, bool force,
		 uint64_t deadline, tload_cb cb)
{
	/* All else zero; data is the owner's. */
	*l = (struct tload){.data = l->data, .c = c, .table = table, .force = force,
			    .deadline = deadline, .cb = cb, .final = -1,
			    .backoff_ms = c->opts.backoff_min_ms};
	snprintf(l->final_msg, sizeof l->final_msg, "table %s: no master answered in time",
		 table->name);
	ctimer_init(&l->timer, tload_timer);
	l->waiter.cb = tload_loaded;
	if (c->closing) {
		l->final = DOCRAFT_ECLOSED;
		snprintf(l->final_msg, sizeof l->final_msg, "the client is closing");
	}
	ctimer_start(c, &l->timer, 0);
}
