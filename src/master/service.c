/* The master service (see service.h): its lifecycle, its leadership and
 * the RPC plumbing; the decisions are in ddl.c (tables) and tservers.c
 * (tablet servers), internal.h lists the files.
 *
 * Design.
 *
 * Leadership. Every POLL_MS, and at the start of every request, the master
 * compares its catalog tablet's role and term with what it last saw
 * (refresh). Becoming the ready leader of a new term bumps a generation
 * number, forgets the in-memory catalog and the tservers, and queues a
 * tablet_read: its barrier guarantees every committed catalog write is
 * applied, so the store read at the returned time is the whole catalog
 * (catalog_load). Requests are served once that load is done. Losing
 * leadership bumps the generation and forgets everything again. Every
 * asynchronous operation remembers the generation it started in; when it
 * completes in another one it touches no in-memory state (which was
 * rebuilt from the store in between) and only answers its caller.
 *
 * Plumbing. One table (rpc/dispatch.h) lists the MASTER_* methods: their
 * request and response messages (no request: the body is not read) and
 * their handler. Every method but ListMasters (any master answers it,
 * members.c) is served by the master leader only (RPC_METHOD_LEADER), so
 * for each call, in this order: a closing master
 * answers ECLOSED; one that is not the ready leader with its catalog
 * loaded answers as serving() says (ENOTLEADER with a hint, or
 * EUNAVAILABLE); the request is decoded (a malformed one is answered by
 * rpc_call_decode); the handler runs and answers; the dispatcher frees
 * the request. A handler never sees a master that is not serving. */
#include "master/service.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"
#include "master/catalog.h"
#include "master/internal.h"
#include "master/moves.h"
#include "master/placement.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/dispatch.h"
#include "rpc/rpc.h"
#include "tablet/remote_copy.h"
#include "tablet/tablet.h"

#define POLL_MS 50
#define LOAD_RETRY_MS 1000

/* ---- leadership ------------------------------------------------------------------------------ */

struct load_op {
	struct tablet_read req;
	struct master *m;
	uint64_t gen;
};

static void forget_catalog(struct master *m)
{
	catalog_clear_tables(&m->cat);
	catalog_clear_tservers(&m->cat);
	m->loaded = false;
	m->loading = false;
}

static void load_done(struct tablet_read *req, int status, uint64_t read_ht)
{
	struct load_op *op = req->data;
	struct master *m = op->m;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	m->ops--;
	if (op->gen == m->gen && !m->closing) {
		m->loading = false;
		if (status != 0) {
			LOG_WARN("master %s: catalog read barrier: %s", m->address,
				 docraft_strerror(status));
			m->load_retry_at = master_now_ms(m) + LOAD_RETRY_MS;
		} else if (catalog_load(&m->cat, tablet_store(m->t), read_ht, errmsg) != 0) {
			LOG_ERROR("master %s: loading the catalog: %s", m->address, errmsg);
			m->load_retry_at = master_now_ms(m) + LOAD_RETRY_MS;
		} else {
			m->loaded = true;
			m->loaded_ms = master_now_ms(m);
			LOG_INFO("master %s: leader in term %" PRIu64 ": catalog loaded, "
				 "%zu tables, %zu tablets", m->address, m->term, m->cat.n_tables,
				 m->cat.n_tablets);
		}
	}
	free(op);
}

static void start_load(struct master *m)
{
	struct load_op *op = xcalloc(1, sizeof *op);
	int rv;

	op->m = m;
	op->gen = m->gen;
	op->req.data = op;
	op->req.cb = load_done;
	rv = tablet_read(m->t, &op->req);
	if (rv != 0) {
		LOG_WARN("master %s: catalog read: %s", m->address, docraft_strerror(rv));
		m->load_retry_at = master_now_ms(m) + LOAD_RETRY_MS;
		free(op);
		return;
	}
	m->ops++;
	m->loading = true;
}

/* Follows the catalog tablet's role (see the design note). */
static void refresh(struct master *m)
{
	struct tablet_status st;

	if (m->closing)
		return;
	if (m->t == NULL) {
		members_join_poll(m); /* a joining master (members.c) */
		return;
	}
	members_refresh(m);
	tablet_get_status(m->t, &st);
	if (st.role == TABLET_FAILED && !m->fatal_sent) {
		m->fatal_sent = true;
		LOG_ERROR("master %s: the catalog tablet failed: %s", m->address, st.errmsg);
		if (m->fatal_cb != NULL)
			m->fatal_cb(m->fatal_arg, st.errmsg);
	}
	if (st.role == TABLET_LEADER) {
		if (!m->leader || st.term != m->term) {
			m->gen++;
			forget_catalog(m);
			m->leader = true;
			m->term = st.term;
			m->load_retry_at = 0;
			LOG_INFO("master %s: catalog leader in term %" PRIu64 ", loading",
				 m->address, st.term);
			start_load(m);
		} else if (!m->loaded && !m->loading && master_now_ms(m) >= m->load_retry_at) {
			start_load(m);
		}
	} else if (m->leader) {
		m->gen++;
		forget_catalog(m);
		m->leader = false;
		LOG_INFO("master %s: no longer the leader (term %" PRIu64 ", role %s)", m->address,
			 st.term, tablet_role_name(st.role));
	}
}

static void poll_cb(uv_timer_t *t)
{
	refresh(t->data);
	ddl_drops_poll(t->data);
}

void master_reply_not_leader(struct master *m, struct rpc_call *call)
{
	const char *addr = "";
	raft_id id = m->t != NULL ? tablet_leader(m->t, &addr) : 0;
	if (id == 0 || addr[0] == '\0')
		addr = members_leader_hint(m); /* a removed master's last leader */
	if (id != 0 && id == m->raft_id) {
		/* Elected but not ready yet (or about to step down). */
		rpc_reply_error(call, DOCRAFT_EUNAVAILABLE, "master leader not ready; retry", NULL,
				0);
		return;
	}
	rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the master leader",
			addr[0] != '\0' && strcmp(addr, m->address) != 0 ? addr : NULL, id);
}

void master_write_prepare(struct master *m, struct tablet_write *w, const struct batch *b,
			  tablet_write_cb cb, void *data)
{
	memset(w, 0, sizeof *w);
	memcpy(w->client_id, m->client_id, sizeof w->client_id);
	w->seq = ++m->seq;
	w->min_running = w->seq;
	w->batch = b->data.data;
	w->batch_len = b->data.len;
	w->cb = cb;
	w->data = data;
}

/* ---- plumbing -------------------------------------------------------------------------------- */

/* The dispatcher's leader hook (rpc/dispatch.h), before the request is
 * read: true if this master may serve now; otherwise call is answered. */
static bool serving(void *ctx, struct rpc_call *call, const struct rpc_method *method, void *obj)
{
	struct master *m = ctx;

	(void)method;
	(void)obj;
	if (m->closing) {
		rpc_reply_error(call, DOCRAFT_ECLOSED, "master shutting down", NULL, 0);
		return false;
	}
	refresh(m);
	if (m->leader && m->loaded)
		return true;
	if (m->leader) {
		rpc_reply_error(call, DOCRAFT_EUNAVAILABLE,
				"master leader is loading the catalog; retry", NULL, 0);
		return false;
	}
	master_reply_not_leader(m, call);
	return false;
}

static const struct rpc_dispatch_hooks hooks = {.leader = serving};

/* Every MASTER_* method: served by the ready leader only, but ListMasters. */
static const struct rpc_method methods[] = {
	{DOCRAFT__METHOD__MASTER_CREATE_TABLE, "CreateTable",
	 &docraft__create_table_request__descriptor, &docraft__create_table_response__descriptor,
	 RPC_METHOD_LEADER, NULL, ddl_create_table},
	{DOCRAFT__METHOD__MASTER_DROP_TABLE, "DropTable", &docraft__drop_table_request__descriptor,
	 &docraft__drop_table_response__descriptor, RPC_METHOD_LEADER, NULL, ddl_drop_table},
	{DOCRAFT__METHOD__MASTER_LIST_TABLES, "ListTables", NULL,
	 &docraft__list_tables_response__descriptor, RPC_METHOD_LEADER, NULL, ddl_list_tables},
	{DOCRAFT__METHOD__MASTER_GET_TABLE, "GetTable", &docraft__get_table_request__descriptor,
	 &docraft__get_table_response__descriptor, RPC_METHOD_LEADER, NULL, ddl_get_table},
	{DOCRAFT__METHOD__MASTER_LIST_TSERVERS, "ListTServers", NULL,
	 &docraft__list_tservers_response__descriptor, RPC_METHOD_LEADER, NULL, tservers_list},
	{DOCRAFT__METHOD__MASTER_HEARTBEAT, "Heartbeat", &docraft__heartbeat_request__descriptor,
	 &docraft__heartbeat_response__descriptor, RPC_METHOD_LEADER, NULL, tservers_heartbeat},
	{DOCRAFT__METHOD__MASTER_DRAIN, "Drain", &docraft__drain_request__descriptor,
	 &docraft__drain_response__descriptor, RPC_METHOD_LEADER, NULL, moves_drain},
	{DOCRAFT__METHOD__MASTER_CLUSTER_STATUS, "ClusterStatus", NULL,
	 &docraft__cluster_status_response__descriptor, RPC_METHOD_LEADER, NULL,
	 moves_cluster_status},
	/* Master membership (members.c); ListMasters is served by every master. */
	{DOCRAFT__METHOD__MASTER_CHANGE_MASTERS, "ChangeMasters",
	 &docraft__change_masters_request__descriptor, &docraft__change_masters_response__descriptor,
	 RPC_METHOD_LEADER, NULL, members_change},
	{DOCRAFT__METHOD__MASTER_LIST_MASTERS, "ListMasters", NULL,
	 &docraft__list_masters_response__descriptor, 0, NULL, members_list},
};

/* ---- lifecycle ------------------------------------------------------------------------------- */

void master_options_default(struct master_options *o)
{
	memset(o, 0, sizeof *o);
	o->tserver_timeout_ms = MASTER_DEFAULT_TSERVER_TIMEOUT_MS;
	o->tserver_failed_after_s = MASTER_DEFAULT_FAILED_AFTER_S;
	o->max_concurrent_moves = MASTER_DEFAULT_MAX_MOVES;
	o->default_rf = MASTER_DEFAULT_RF;
	o->leader_balance = true;
	o->drop_timeout_ms = 1500; /* below the client's 2 s attempt (service.h) */
}

const char *master_address(const struct master *m)
{
	return m->address;
}

static void seed_random(struct master *m)
{
	uint64_t seed = 0;
	if (getrandom(m->client_id, sizeof m->client_id, 0) != (ssize_t)sizeof m->client_id ||
	    getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20 ^ (uint64_t)getpid() << 40;
		for (size_t i = 0; i < sizeof m->client_id; i++)
			m->client_id[i] = (uint8_t)(seed >> (8 * (i % 8))) ^ (uint8_t)i;
	}
	m->rand = seed != 0 ? seed : UINT64_C(0x9e3779b97f4a7c15);
}

/* The options' master list into m (validated); m->raft_id is the 1-based
 * position of m->address in it, 0 if it is not there (members.c decides
 * whether that matters). */
static int set_masters(struct master *m, const struct master_options *o, char *errmsg)
{
	struct sockaddr_in sa;
	size_t n = o->masters != NULL && o->n_masters > 0 ? o->n_masters : 1;

	if (n > MASTER_MAX_MASTERS)
		return err_set(errmsg, DOCRAFT_EINVAL, "at most %d masters", MASTER_MAX_MASTERS);
	for (size_t i = 0; i < n; i++) {
		const char *a = o->masters != NULL && o->n_masters > 0 ? o->masters[i] : o->address;
		if (a == NULL || strlen(a) > RPC_ADDRESS_MAX ||
		    listener_parse_address(a, &sa, errmsg) != 0)
			return err_set(errmsg, DOCRAFT_EINVAL, "bad master address '%s'",
				       a != NULL ? a : "");
		for (size_t k = 0; k < i; k++)
			if (strcmp(m->masters[k], a) == 0)
				return err_set(errmsg, DOCRAFT_EINVAL, "master %s listed twice", a);
		snprintf(m->masters[i], sizeof m->masters[i], "%s", a);
		if (strcmp(a, m->address) == 0)
			m->raft_id = i + 1;
	}
	m->n_masters = n;
	return 0;
}

int master_open_catalog(struct master *m, const struct tablet_peer *peers, size_t n,
			char *errmsg)
{
	struct tablet_options to;
	char dir[4200];
	int rv;

	PRE(m->t == NULL && m->raft_id != 0);
	snprintf(dir, sizeof dir, "%s/%s", m->data_dir, CATALOG_TABLET_ID);
	tablet_options_default(&to);
	to.id = CATALOG_TABLET_ID;
	to.dir = dir;
	to.raft_id = m->raft_id;
	to.address = m->address;
	to.listener = m->l;
	to.copy = &m->copy;
	if (m->raft_heartbeat_ms != 0)
		to.heartbeat_ms = m->raft_heartbeat_ms;
	if (m->election_ms != 0)
		to.election_ms = m->election_ms;
	if ((rv = tablet_open(m->loop, &to, &m->t, errmsg)) != 0) {
		m->t = NULL;
		return rv;
	}
	if (peers != NULL && (rv = tablet_bootstrap(m->t, peers, n, errmsg)) != 0)
		return rv;
	if ((rv = tablet_start(m->t, errmsg)) != 0)
		return rv;
	LOG_INFO("master %s: raft id %llu, data in %s, leader balancing %s, tservers failed "
		 "after %" PRIu64 " s, at most %u concurrent moves", m->address,
		 (unsigned long long)m->raft_id, m->data_dir, m->leader_balance ? "on" : "off",
		 m->failed_after_ms / 1000, m->max_moves);
	return 0;
}

int master_open(uv_loop_t *loop, const struct master_options *o, struct master **out,
		char *errmsg)
{
	struct sockaddr_in sa;
	struct master *m;
	int rv;

	PRE(o->listener != NULL && o->rpc_server != NULL);
	*out = NULL;
	if (o->address == NULL || strlen(o->address) > RPC_ADDRESS_MAX ||
	    listener_parse_address(o->address, &sa, errmsg) != 0 || sa.sin_port == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad --address '%s'",
			       o->address != NULL ? o->address : "");
	if (o->data_dir == NULL || o->data_dir[0] == '\0' ||
	    strlen(o->data_dir) >= sizeof m->data_dir)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad data directory");
	if (o->tserver_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "tserver timeout must be > 0");
	if (o->tserver_failed_after_s == 0 ||
	    (uint64_t)o->tserver_failed_after_s * 1000 < o->tserver_timeout_ms)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "--tserver-failed-after-s %u: must be > 0 and at least the tserver "
			       "timeout (%" PRIu64 " ms)",
			       o->tserver_failed_after_s, o->tserver_timeout_ms);
	if (placement_check_rf(o->default_rf, errmsg) != 0)
		return err_wrap(errmsg, DOCRAFT_EINVAL, "default");
	if (o->drop_timeout_ms == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "drop timeout must be > 0");

	m = xcalloc(1, sizeof *m);
	m->loop = loop;
	snprintf(m->address, sizeof m->address, "%s", o->address);
	snprintf(m->data_dir, sizeof m->data_dir, "%s", o->data_dir);
	m->tserver_timeout_ms = o->tserver_timeout_ms;
	m->failed_after_ms = (uint64_t)o->tserver_failed_after_s * 1000;
	m->max_moves = o->max_concurrent_moves;
	m->max_moves_per_server = MASTER_MOVES_PER_SERVER;
	m->default_rf = o->default_rf;
	m->leader_balance = o->leader_balance;
	m->drop_timeout_ms = o->drop_timeout_ms;
	m->fatal_cb = o->fatal_cb;
	m->fatal_arg = o->fatal_arg;
	catalog_init(&m->cat);
	seed_random(m);
	uv_timer_init(loop, &m->poll);
	m->poll.data = m;
	m->poll_open = true;
	moves_open(m);
	*out = m;

	if ((rv = set_masters(m, o, errmsg)) != 0)
		return rv;
	if ((rv = fs_mkdir_p(m->data_dir, errmsg)) != 0)
		return rv;
	m->l = o->listener;
	if ((rv = copy_server_init(&m->copy, loop, m->l, errmsg)) != 0)
		return rv;
	m->copy_on = true;
	m->raft_heartbeat_ms = o->raft_heartbeat_ms;
	m->election_ms = o->election_ms;

	rpc_client_init(&m->cl, loop);
	m->cl.data = m;
	m->cl_on = true;
	m->srv = o->rpc_server;
	rv = rpc_dispatch_register(&m->methods, m->srv, methods,
				   sizeof methods / sizeof methods[0], m, &hooks, errmsg);
	if (rv != 0)
		return rv;
	/* The catalog tablet, now or once this master has joined. */
	if ((rv = members_open(m, o, errmsg)) != 0)
		return rv;
	uv_timer_start(&m->poll, poll_cb, POLL_MS, POLL_MS);
	return 0;
}

static void close_next(struct master *m);

static void tablet_closed(struct tablet *t, void *arg)
{
	struct master *m = arg;
	(void)t;
	m->t = NULL;
	close_next(m);
}

static void cl_closed(struct rpc_client *cl)
{
	close_next(cl->data);
}

static void copy_closed(struct copy_server *cs)
{
	close_next((struct master *)((char *)cs - offsetof(struct master, copy)));
}

static void poll_closed(uv_handle_t *h)
{
	struct master *m = h->data;
	m->poll_open = false;
	close_next(m);
}

static void moves_closed(uv_handle_t *h)
{
	struct master *m = h->data;
	m->moves_open = false;
	close_next(m);
}

/* One step of the close sequence per call; each asynchronous close calls
 * back here. */
static void close_next(struct master *m)
{
	master_close_cb cb;
	void *arg;

	if (m->t != NULL) {
		tablet_close(m->t, tablet_closed, m);
		return;
	}
	if (m->cl_on) {
		m->cl_on = false;
		rpc_client_close(&m->cl, cl_closed);
		return;
	}
	if (m->copy_on) {
		m->copy_on = false;
		copy_server_close(&m->copy, copy_closed);
		return;
	}
	if (m->poll_open) {
		if (!uv_is_closing((uv_handle_t *)&m->poll))
			uv_close((uv_handle_t *)&m->poll, poll_closed);
		return;
	}
	if (m->moves_open) {
		if (!uv_is_closing((uv_handle_t *)&m->moves_timer))
			uv_close((uv_handle_t *)&m->moves_timer, moves_closed);
		return;
	}
	members_close(m);
	ASSERT(m->ops == 0);
	catalog_free(&m->cat);
	cb = m->close_cb;
	arg = m->close_arg;
	free(m);
	if (cb != NULL)
		cb(arg);
}

void master_close(struct master *m, master_close_cb cb, void *arg)
{
	PRE(!m->closing);
	m->closing = true;
	m->close_cb = cb;
	m->close_arg = arg;
	uv_timer_stop(&m->poll);
	ddl_drops_poll(m); /* closing: every waiting DropTable answers ECLOSED */
	if (m->moves_open)
		uv_timer_stop(&m->moves_timer);
	close_next(m);
}
