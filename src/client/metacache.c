/* The metadata cache and master calls: see metacache.h for the contract.
 *
 * Design note.
 *
 * Lookup. A table's tablets are kept sorted by partition start and, once
 * installed, cover [0, 65536) without gaps (metacache_install refuses
 * anything else), so the tablet of a hash is the last one whose start is
 * <= hash: a binary search, no allocation.
 *
 * Refresh. One GetTable per table at a time: the first waiter starts an
 * mcall with its own deadline, later waiters join the list. The answer is
 * installed (or refused) and every waiter is told, in the order they came.
 * A waiter whose deadline passes first leaves the list itself
 * (metacache_cancel); a refresh that gives up at the first waiter's
 * deadline tells the others EUNAVAILABLE, and they retry within their own
 * deadlines (retry.c). The mcall is heap memory owned by the table while
 * in flight, freed in its callback.
 *
 * Master calls. Masters are tried in this order: the last known leader,
 * then the list from the one after the last tried, wrapping. A NOT_LEADER
 * answer with a hint goes straight to the hint (at most n_masters + 1 hops
 * in a row, against two masters naming each other during an election); one
 * without a hint, and any transport failure, goes to the next master. Once
 * every master was tried since the last pause, the call sleeps a jittered
 * exponential backoff (backoff_min_ms doubling to backoff_max_ms), cut
 * short by the deadline. Each
 * attempt's timeout is rpc_timeout_ms capped by what is left before the
 * deadline, so a call never outlives it. Final answers (anything
 * status_retryable refuses) end the call at once.
 *
 * Down marks: a small array of (address, until) entries; an address that
 * failed is skipped as a target for MC_DOWN_MS when another replica is
 * available. The array is bounded; the entry closest to expiry is reused. */
#include "client/metacache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/log.h"
#include "rpc/wire.h"
#include "rpc.pb-c.h"

bool status_retryable(int status)
{
	switch (status) {
	case DOCRAFT_ENOTLEADER:
	case DOCRAFT_ELEADERLOST:
	case DOCRAFT_EUNAVAILABLE:
	case DOCRAFT_EBUSY:
	case DOCRAFT_ETIMEDOUT:
	case DOCRAFT_ETABLETNOTFOUND:
	case DOCRAFT_EWRONGTABLET:
	case DOCRAFT_ECLOSED: /* the server is shutting down */
		return true;
	default:
		return false;
	}
}

int status_final(const docraft_client *c, const struct rpc_result *res, const char *what,
		 const char *target, char *msg, size_t size, const char **why)
{
	snprintf(msg, size, "%s%s: %s", what, target,
		 res->message[0] ? res->message : docraft_strerror(res->status));
	*why = msg;
	if (res->status == DOCRAFT_ECLOSED && c->closing) {
		*why = "the client is closing";
		return DOCRAFT_ECLOSED;
	}
	return status_retryable(res->status) ? 0 : res->status;
}

/* ---- tables ---- */

void metacache_init(struct metacache *mc, docraft_client *c)
{
	memset(mc, 0, sizeof *mc);
	mc->c = c;
}

static void tablets_free(struct mc_tablet *tablets, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < tablets[i].n_replicas; j++) {
			free(tablets[i].replicas[j].uuid);
			free(tablets[i].replicas[j].redis_address);
		}
		free(tablets[i].replicas);
		free(tablets[i].id);
	}
	free(tablets);
}

static void table_clear(struct mc_table *t)
{
	if (t->loaded)
		schema_free(&t->schema);
	tablets_free(t->tablets, t->n_tablets);
	t->tablets = NULL;
	t->n_tablets = 0;
	t->loaded = false;
}

void metacache_free(struct metacache *mc)
{
	struct mc_table *t = mc->tables, *next;
	for (; t != NULL; t = next) {
		next = t->next;
		ASSERT(t->refresh == NULL);
		table_clear(t);
		free(t->name);
		free(t);
	}
	mc->tables = NULL;
}

struct mc_table *metacache_table(struct metacache *mc, const char *name)
{
	struct mc_table *t;
	for (t = mc->tables; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	t = xcalloc(1, sizeof *t);
	t->name = xstrdup(name);
	t->next = mc->tables;
	mc->tables = t;
	return t;
}

void metacache_forget(struct metacache *mc, const char *name)
{
	for (struct mc_table *t = mc->tables; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			table_clear(t);
}

struct mc_tablet *metacache_lookup(const struct mc_table *t, uint32_t hash)
{
	size_t lo = 0, hi;
	if (!t->loaded || t->n_tablets == 0 || hash > 0xFFFF)
		return NULL;
	/* The last tablet whose start <= hash; tablets[0].start == 0. */
	hi = t->n_tablets;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->tablets[mid].start <= hash)
			lo = mid;
		else
			hi = mid;
	}
	return &t->tablets[lo];
}

struct mc_tablet *metacache_tablet_by_id(const struct mc_table *t, const char *id)
{
	for (size_t i = 0; t->loaded && i < t->n_tablets; i++)
		if (strcmp(t->tablets[i].id, id) == 0)
			return &t->tablets[i];
	return NULL;
}

static int by_start(const void *a, const void *b)
{
	const struct mc_tablet *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int metacache_install(struct mc_table *t, const Docraft__GetTableResponse *resp, char *errmsg)
{
	struct mc_tablet *tablets;
	struct schema s;
	size_t n = resp->n_tablets;
	uint32_t expect = 0;
	int rv;

	if (resp->schema == NULL)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "table %s: no schema in the answer",
			       t->name);
	if (n == 0)
		return err_set(errmsg, DOCRAFT_EUNAVAILABLE, "table %s has no tablets yet", t->name);
	if (strlen(resp->table_id) > MC_TABLE_ID_MAX)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "table %s: table id too long", t->name);
	tablets = xcalloc(n, sizeof *tablets);
	for (size_t i = 0; i < n; i++) {
		const Docraft__TabletLocation *loc = resp->tablets[i];
		struct mc_tablet *tb = &tablets[i];
		tb->id = xstrdup(loc->tablet_id);
		tb->start = loc->start;
		tb->end = loc->end;
		tb->n_replicas = loc->n_replicas;
		tb->replicas = xcalloc(loc->n_replicas, sizeof *tb->replicas);
		if (loc->tablet_id == NULL || loc->tablet_id[0] == '\0' ||
		    strlen(loc->tablet_id) >= 128) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT, "table %s: bad tablet id", t->name);
			goto fail;
		}
		for (size_t j = 0; j < loc->n_replicas; j++) {
			const Docraft__Peer *p = loc->replicas[j];
			const char *addr = p->address ? p->address : "";
			if (strlen(addr) == 0 || strlen(addr) > RPC_ADDRESS_MAX) {
				rv = err_set(errmsg, DOCRAFT_ECORRUPT,
					     "tablet %s: bad replica address '%s'", tb->id, addr);
				goto fail;
			}
			tb->replicas[j].raft_id = p->raft_id;
			strcpy(tb->replicas[j].address, addr);
			tb->replicas[j].uuid = xstrdup(p->tserver_uuid);
			tb->replicas[j].redis_address =
				xstrdup(p->redis_address != NULL ? p->redis_address : "");
			tb->replicas[j].voter = p->voter;
		}
		if (loc->n_replicas == 0) {
			rv = err_set(errmsg, DOCRAFT_EUNAVAILABLE, "tablet %s has no replicas yet",
				     tb->id);
			goto fail;
		}
		if (loc->leader_raft_id != 0) {
			const char *a = metacache_replica_address(tb, loc->leader_raft_id);
			if (a == NULL) {
				rv = err_set(errmsg, DOCRAFT_ECORRUPT,
					     "tablet %s: leader %llu is not a replica", tb->id,
					     (unsigned long long)loc->leader_raft_id);
				goto fail;
			}
			strcpy(tb->leader, a);
		}
	}
	qsort(tablets, n, sizeof *tablets, by_start);
	for (size_t i = 0; i < n; i++) {
		if (tablets[i].start != expect || tablets[i].end <= tablets[i].start ||
		    tablets[i].end > 65536) {
			rv = err_set(errmsg, i == 0 && tablets[i].start != 0 ? DOCRAFT_EUNAVAILABLE
									     : DOCRAFT_ECORRUPT,
				     "table %s: tablet %s covers [%u, %u), expected a start at %u",
				     t->name, tablets[i].id, tablets[i].start, tablets[i].end,
				     expect);
			goto fail;
		}
		expect = tablets[i].end;
	}
	if (expect != 65536) {
		rv = err_set(errmsg, DOCRAFT_EUNAVAILABLE,
			     "table %s: tablets cover [0, %u) of the hash space only", t->name,
			     expect);
		goto fail;
	}
	if ((rv = wire_schema_from_pb(resp->schema, &s, errmsg)) != 0) {
		rv = err_wrap(errmsg, DOCRAFT_ECORRUPT, "table %s", t->name);
		goto fail;
	}
	table_clear(t);
	snprintf(t->id, sizeof t->id, "%s", resp->table_id);
	t->schema = s;
	t->tablets = tablets;
	t->n_tablets = n;
	t->loaded = true;
	t->generation++;
	return 0;
fail:
	tablets_free(tablets, n);
	return rv;
}

/* ---- leaders and down marks ---- */

const char *metacache_replica_address(const struct mc_tablet *tb, uint64_t raft_id)
{
	for (size_t i = 0; i < tb->n_replicas; i++)
		if (tb->replicas[i].raft_id == raft_id)
			return tb->replicas[i].address;
	return NULL;
}

const char *metacache_target(struct metacache *mc, const struct mc_tablet *tb, uint64_t now)
{
	if (tb->leader[0] != '\0' && !metacache_is_down(mc, tb->leader, now))
		return tb->leader;
	for (size_t i = 0; i < tb->n_replicas; i++)
		if (!metacache_is_down(mc, tb->replicas[i].address, now))
			return tb->replicas[i].address;
	if (tb->leader[0] != '\0')
		return tb->leader;
	return tb->n_replicas > 0 ? tb->replicas[0].address : "";
}

const char *metacache_next_replica(const struct mc_tablet *tb, const char *address)
{
	if (tb->n_replicas == 0)
		return "";
	for (size_t i = 0; i < tb->n_replicas; i++)
		if (strcmp(tb->replicas[i].address, address) == 0)
			return tb->replicas[(i + 1) % tb->n_replicas].address;
	return tb->replicas[0].address;
}

void metacache_set_leader(struct mc_tablet *tb, const char *address)
{
	size_t n = strlen(address);
	if (n > RPC_ADDRESS_MAX)
		return;
	memcpy(tb->leader, address, n + 1);
}

void metacache_mark_down(struct metacache *mc, const char *address, uint64_t now)
{
	size_t victim = 0;
	if (strlen(address) > RPC_ADDRESS_MAX)
		return;
	for (size_t i = 0; i < mc->n_down; i++) {
		if (strcmp(mc->down[i].address, address) == 0) {
			mc->down[i].until = now + MC_DOWN_MS;
			return;
		}
		if (mc->down[i].until < mc->down[victim].until)
			victim = i;
	}
	if (mc->n_down < MC_DOWN_MAX)
		victim = mc->n_down++;
	strcpy(mc->down[victim].address, address);
	mc->down[victim].until = now + MC_DOWN_MS;
}

void metacache_mark_up(struct metacache *mc, const char *address)
{
	for (size_t i = 0; i < mc->n_down; i++)
		if (strcmp(mc->down[i].address, address) == 0)
			mc->down[i].until = 0;
}

bool metacache_is_down(struct metacache *mc, const char *address, uint64_t now)
{
	for (size_t i = 0; i < mc->n_down; i++)
		if (strcmp(mc->down[i].address, address) == 0)
			return mc->down[i].until > now;
	return false;
}

/* ---- refresh ---- */

static void refresh_done(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			 size_t len)
{
	struct mc_table *t = m->data;
	char msg[DOCRAFT_ERRMSG_SIZE];
	struct mc_waiter *w;

	snprintf(msg, sizeof msg, "%s", errmsg);
	if (status == 0) {
		Docraft__GetTableResponse *resp =
			docraft__get_table_response__unpack(NULL, len, reply);
		if (resp == NULL) {
			status = err_set(msg, DOCRAFT_ECORRUPT,
					 "table %s: GetTable answer does not decode", t->name);
		} else {
			status = metacache_install(t, resp, msg);
			docraft__get_table_response__free_unpacked(resp, NULL);
		}
	} else if (status == DOCRAFT_ETABLENOTFOUND || status == DOCRAFT_ENOTFOUND) {
		table_clear(t);
		status = DOCRAFT_ETABLENOTFOUND;
	}
	free(m);
	t->refresh = NULL;
	/* Tell every waiter; each may start a new refresh (joining a list
	 * that is then new), so detach the current one first. */
	while ((w = t->waiters) != NULL) {
		t->waiters = w->next;
		if (t->waiters != NULL)
			t->waiters->prev = NULL;
		w->next = w->prev = NULL;
		w->waiting = false;
		w->cb(w, status, msg);
	}
}

void metacache_refresh(struct metacache *mc, struct mc_table *t, uint64_t deadline,
		       struct mc_waiter *w)
{
	PRE(!w->waiting);
	/* Append (waiters are answered in arrival order). */
	w->next = NULL;
	w->prev = NULL;
	w->waiting = true;
	if (t->waiters == NULL) {
		t->waiters = w;
	} else {
		struct mc_waiter *last = t->waiters;
		while (last->next != NULL)
			last = last->next;
		last->next = w;
		w->prev = last;
	}
	if (t->refresh == NULL) {
		Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
		struct mcall *m = xcalloc(1, sizeof *m);
		req.name = t->name;
		m->data = t;
		t->refresh = m;
		mc->refreshes++;
		mcall_start(m, mc->c, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, deadline,
			    refresh_done);
	}
}

const char *metacache_refresh_error(const struct mc_table *t)
{
	if (t->refresh == NULL || t->refresh->failures == 0)
		return "";
	return t->refresh->last_msg;
}

void metacache_cancel(struct mc_table *t, struct mc_waiter *w)
{
	if (!w->waiting)
		return;
	DLIST_REMOVE(t->waiters, w);
	w->waiting = false;
}

/* ---- master calls ---- */

static void mcall_send(struct mcall *m);

static void mcall_deliver(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
			  size_t len)
{
	ctimer_stop(m->c, &m->timer);
	free(m->payload);
	m->payload = NULL;
	m->cb(m, status, errmsg, reply, len);
}

/* Ends the call from the timer (never synchronously). */
static void mcall_finish_later(struct mcall *m, int status)
{
	m->result = status;
	ctimer_start(m->c, &m->timer, 0);
}

static void mcall_give_up(struct mcall *m)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	err_set(msg, 0, "no master answered within the deadline (%u attempts; last: %s: %s)",
		m->attempts, docraft_strerror(m->last_status), m->last_msg);
	mcall_deliver(m, DOCRAFT_EUNAVAILABLE, msg, NULL, 0);
}

static void mcall_timer(struct ctimer *t)
{
	struct mcall *m = CONTAINER_OF(t, struct mcall, timer);
	if (m->c->closing) {
		mcall_deliver(m, DOCRAFT_ECLOSED, "the client is closing", NULL, 0);
		return;
	}
	if (m->result != 0) {
		mcall_deliver(m, m->result, m->last_msg, NULL, 0);
		return;
	}
	mcall_send(m); /* after a backoff */
}

static void next_master(struct mcall *m)
{
	docraft_client *c = m->c;
	snprintf(m->target, sizeof m->target, "%s", c->masters[m->next_master % c->n_masters]);
	m->next_master = (m->next_master + 1) % c->n_masters;
}

static void mcall_reply(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct mcall *m = req->data;
	docraft_client *c = m->c;
	uint64_t now = client_now(c);
	const char *why;
	int final;

	if (res->status == DOCRAFT_OK) {
		/* Any master answers ListMasters; the others prove a leader. */
		if (m->method != DOCRAFT__METHOD__MASTER_LIST_MASTERS) {
			snprintf(c->master_leader, sizeof c->master_leader, "%s", m->target);
			client_masters_learn(c); /* masters.c */
		}
		mcall_deliver(m, 0, "", res->reply, res->reply_len);
		return;
	}
	m->last_status = res->status;
	m->failures++;
	final = status_final(c, res, "master ", m->target, m->last_msg, sizeof m->last_msg, &why);
	/* ChangeMasters: another change running (BUSY) or an add that failed
	 * and was rolled back (TIMED_OUT) are the caller's to decide. */
	if ((res->status == DOCRAFT_EBUSY || res->status == DOCRAFT_ETIMEDOUT) &&
	    m->method == DOCRAFT__METHOD__MASTER_CHANGE_MASTERS)
		final = res->status;
	if (final != 0) {
		mcall_deliver(m, final, why, NULL, 0);
		return;
	}
	if (strcmp(c->master_leader, m->target) == 0)
		c->master_leader[0] = '\0';
	if (now >= m->deadline) {
		mcall_give_up(m);
		return;
	}
	if (res->status == DOCRAFT_ENOTLEADER && res->leader_address[0] != '\0' &&
	    strcmp(res->leader_address, m->target) != 0 && m->hops <= c->n_masters &&
	    strlen(res->leader_address) <= RPC_ADDRESS_MAX) {
		client_masters_hint(c, res->leader_address); /* masters.c */
		m->hops++;
		snprintf(m->target, sizeof m->target, "%s", res->leader_address);
		mcall_send(m);
		return;
	}
	m->hops = 0;
	if (m->tried < c->n_masters) {
		next_master(m);
		mcall_send(m);
		return;
	}
	/* Every master failed since the last pause: back off, and learn the
	 * list again at the next success (masters.c). */
	m->tried = 0;
	c->masters_stale = true;
	{
		uint32_t d = client_jitter(c, m->backoff_ms);
		m->backoff_ms = m->backoff_ms * 2 > c->opts.backoff_max_ms ? c->opts.backoff_max_ms
									  : m->backoff_ms * 2;
		/* At the deadline, mcall_send gives up. */
		next_master(m);
		ctimer_start(c, &m->timer, now + d < m->deadline ? now + d : m->deadline);
	}
}

static void mcall_send(struct mcall *m)
{
	docraft_client *c = m->c;
	uint64_t now = client_now(c);
	uint64_t left;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (now >= m->deadline) {
		mcall_give_up(m);
		return;
	}
	left = m->deadline - now;
	m->tried++;
	m->attempts++;
	m->rpc.data = m;
	/* A master change (catching a new master up) may take longer than
	 * one attempt: it gets what is left of the deadline. */
	if (left > c->opts.rpc_timeout_ms && m->method != DOCRAFT__METHOD__MASTER_CHANGE_MASTERS)
		left = c->opts.rpc_timeout_ms;
	rv = rpc_call(&c->rpc, m->target, m->method, m->payload, m->len, (uint32_t)left, &m->rpc,
		      mcall_reply, errmsg);
	if (rv != 0) {
		m->last_status = rv;
		err_set(m->last_msg, 0, "master %s: %s", m->target, errmsg);
		mcall_finish_later(m, rv);
	}
}

void mcall_start(struct mcall *m, docraft_client *c, uint16_t method, const ProtobufCMessage *msg,
		 uint64_t deadline, mcall_cb cb)
{
	/* All else zero; data is the caller's. */
	*m = (struct mcall){.data = m->data, .c = c, .method = method, .deadline = deadline,
			    .cb = cb, .backoff_ms = c->opts.backoff_min_ms,
			    .last_status = DOCRAFT_ETIMEDOUT};
	m->len = protobuf_c_message_get_packed_size(msg);
	m->payload = xcalloc(1, m->len ? m->len : 1);
	protobuf_c_message_pack(msg, m->payload);
	snprintf(m->last_msg, sizeof m->last_msg, "the deadline passed before any attempt");
	ctimer_init(&m->timer, mcall_timer);
	if (c->master_leader[0] != '\0') {
		snprintf(m->target, sizeof m->target, "%s", c->master_leader);
		/* The list round starts after the leader's own entry. */
		for (size_t i = 0; i < c->n_masters; i++)
			if (strcmp(c->masters[i], c->master_leader) == 0)
				m->next_master = (i + 1) % c->n_masters;
	} else {
		next_master(m);
	}
	if (c->closing) {
		snprintf(m->last_msg, sizeof m->last_msg, "the client is closing");
		mcall_finish_later(m, DOCRAFT_ECLOSED);
		return;
	}
	mcall_send(m);
}
