/* The master service (see service.h).
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
 * CreateTable:
 *   validate (name, schema through wire_schema_from_pb with column ids
 *   assigned 0.. in order and version 0, at least one hash column, TTL,
 *   rf 1/3/5, tablets 1..1024, enough live tservers) → place (placement.c)
 *   → table and tablets in memory as CAT_CREATING (the name is taken: a
 *   concurrent create or drop of it gets EBUSY) → one tablet_write with
 *   every document
 *   → committed: CAT_RUNNING, TSERVER_CREATE_TABLET to every replica (the
 *   same peers for all replicas of a tablet, join = false) → every call
 *   answered or failed (CREATE_TIMEOUT_MS) → reply. A replica whose create
 *   failed is not an error for the caller: heartbeats reconcile it.
 *   A write that fails removes the table from memory and answers the
 *   error (ELEADERLOST: the outcome is unknown, the rows may commit; then
 *   the next leader loads them and reconciliation creates the replicas).
 *
 * DropTable: the table goes CAT_DELETING (a concurrent drop or create of
 *   the name gets EBUSY), one write deletes its document and marks its
 *   tablets deleted; once committed the tablets are CAT_DELETED in memory
 *   and the table is gone.
 *
 * DDL request ids: a CreateTable / DropTable with a client id and seq
 *   writes a "ddl" record (catalog.h) in the same batch as its change (and
 *   purges stale ones); once committed it is in memory, and a new leader
 *   loads it. A request whose id is recorded for the same op and table is
 *   answered OK at once (its first result: the change took effect), so a
 *   client retrying after a timeout (CreateTable of many tablets waits for
 *   every replica) or a lost answer never gets "already exists" / "not
 *   found" for its own change. While its write is in flight a retry gets
 *   EBUSY (retried). Not enough live tservers is UNAVAILABLE (retried).
 *
 * Heartbeat: records the tserver (uuid, address, time) and, per reported
 *   tablet, the replica's role and term. Instructions in the reply:
 *   - delete: for every reported tablet that is deleted in the catalog;
 *   - create: for every running tablet with a replica on this tserver that
 *     the heartbeat does not list, unless a create was sent less than
 *     CREATE_RETRY_MS ago (the direct call of CreateTable, or an earlier
 *     instruction, may still be in progress);
 *   - step down (leader balancing, on unless --leader-balance off): at
 *     most one per reply, for a tablet this tserver leads, to the replica
 *     on a live tserver that leads at least two tablets fewer (balance.h
 *     has the rule): counts over running tablets with a known leader,
 *     moves in flight counted at their target; a tserver counts as up if
 *     heard from within LEADER_TARGET_FRESH_MS, and a replica as ready if
 *     its tserver's latest heartbeat listed it as follower or leader in
 *     the leader's term; every replica of the tablet on an up tserver must
 *     be ready, those must be a majority, and the target must be up with
 *     every replica it holds ready. A tablet's leader is not moved again
 *     for LEADER_MOVE_COOLDOWN_MS (why 5 s: at its definition). The move
 *     itself is the tserver's StepDown: a Raft barrier, then a transfer to
 *     the target; a move that fails (target too far behind, gone) changes
 *     nothing and may be chosen again once the cooldown is over. The
 *     cooldowns are volatile: a new master leader starts without any.
 *   Tablets the catalog does not know are left alone (never deleted: a
 *   master with a lost or foreign catalog must not wipe tablet servers).
 *   A deleted tablet that none of its replicas' tservers lists any more is
 *   purged from the catalog (one more write).
 *
 * Leaders: a replica counts as leader if the latest heartbeat of its
 *   tserver listed it with role "leader" and that tserver is live; among
 *   several (an old leader not yet stepped down), the highest term wins.
 *
 * Catalog writes carry this process's random client id and a sequence
 * number that is never reused (min_running = seq): the master never
 * retries a catalog write itself. */
#include "master/service.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "rpc/rpc.h"
#include "docdb/batch.h"
#include "docdb/schema.h"
#include "master/balance.h"
#include "master/catalog.h"
#include "master/placement.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/wire.h"
#include "tablet/remote_copy.h"
#include "tablet/tablet.h"

#define POLL_MS 50
#define CREATE_TIMEOUT_MS 5000
#define CREATE_RETRY_MS 3000
#define LOAD_RETRY_MS 1000
/* TabletReport.role of a ready leader (the tserver's name of TABLET_LEADER). */
#define ROLE_LEADER "leader"
/* ... and of a follower (TABLET_FOLLOWER). */
#define ROLE_FOLLOWER "follower"
/* Leader balancing: no second move of a tablet's leader within this time
 * of the first. A move resolves on the tserver within its election timeout
 * (the Raft transfer is abandoned then; 500 ms by default, 1 s at most in
 * practice), and the master sees the outcome once both the old and the new
 * leader have heartbeated after it: at most two tserver heartbeat periods
 * (1 s each by default), one more if a heartbeat is lost; about 3 s in the
 * worst case. 5 s is that with a margin. Meanwhile the tablet counts for
 * the target (balance.h), so the wait delays no other move, and a move
 * that failed is retried once it is over. */
#define LEADER_MOVE_COOLDOWN_MS 5000
/* Leader balancing: a tserver heard from longer ago than this takes over no
 * leader (capped by the liveness timeout): one and a half default tserver
 * heartbeat periods, so one late heartbeat does not exclude it but a
 * crashed tserver is excluded after 1.5 s rather than at the timeout (3 s). */
#define LEADER_TARGET_FRESH_MS 1500

struct master {
	uv_loop_t *loop;
	char address[RPC_ADDRESS_MAX + 1];
	char masters[MASTER_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
	size_t n_masters;
	raft_id raft_id;
	char data_dir[4096];
	uint64_t tserver_timeout_ms;
	uint32_t default_rf;
	bool leader_balance;
	void (*fatal_cb)(void *arg, const char *why);
	void *fatal_arg;
	bool fatal_sent;

	struct listener *l;
	struct copy_server copy;
	bool copy_on;
	struct rpc_server srv;
	bool srv_on;
	struct rpc_client cl;
	bool cl_on;
	struct tablet *t;
	uv_timer_t poll;
	bool poll_open;

	struct catalog cat;
	bool leader;     /* the catalog tablet is a ready leader in term */
	uint64_t term;
	bool loaded;     /* the catalog of this leadership is in memory */
	bool loading;
	uint64_t load_retry_at;
	uint64_t gen;    /* bumped at every change of leadership */

	uint8_t client_id[ENTRY_CLIENT_ID_LEN];
	uint64_t seq;
	uint64_t rand;
	size_t ops;      /* asynchronous operations alive */

	bool closing;
	master_close_cb close_cb;
	void *close_arg;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (p == NULL)
		PANIC("out of memory");
	return p;
}

static void *alloc0(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n ? n : 1);
	memset(p, 0, n ? n : 1);
	return p;
}

static uint64_t next_rand(struct master *m)
{
	/* xorshift64* */
	m->rand ^= m->rand >> 12;
	m->rand ^= m->rand << 25;
	m->rand ^= m->rand >> 27;
	return m->rand * UINT64_C(2685821657736338717);
}

static uint64_t now_ms(struct master *m)
{
	return uv_now(m->loop);
}

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
			m->load_retry_at = now_ms(m) + LOAD_RETRY_MS;
		} else if (catalog_load(&m->cat, tablet_store(m->t), read_ht, errmsg) != 0) {
			LOG_ERROR("master %s: loading the catalog: %s", m->address, errmsg);
			m->load_retry_at = now_ms(m) + LOAD_RETRY_MS;
		} else {
			m->loaded = true;
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
		m->load_retry_at = now_ms(m) + LOAD_RETRY_MS;
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

	if (m->closing || m->t == NULL)
		return;
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
		} else if (!m->loaded && !m->loading && now_ms(m) >= m->load_retry_at) {
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
}

static void reply_not_leader(struct master *m, struct rpc_call *call)
{
	const char *addr = "";
	raft_id id = m->t != NULL ? tablet_leader(m->t, &addr) : 0;
	if (id == m->raft_id) {
		/* Elected but not ready yet (or about to step down). */
		rpc_reply_error(call, DOCRAFT_EUNAVAILABLE, "master leader not ready; retry", NULL,
				0);
		return;
	}
	rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the master leader",
			id != 0 && addr[0] != '\0' ? addr : NULL, id);
}

/* True if this master may serve now; otherwise call is answered. */
static bool serving(struct master *m, struct rpc_call *call)
{
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
	reply_not_leader(m, call);
	return false;
}

/* ---- catalog writes -------------------------------------------------------------------------- */

struct cwrite;
typedef void (*cwrite_done_cb)(struct cwrite *w, int status);

/* One replicated change of the catalog; the first member of every op. */
struct cwrite {
	struct tablet_write req;
	struct batch b;
	struct master *m;
	uint64_t gen;
	cwrite_done_cb done;
};

static void cwrite_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct cwrite *w = req->data;
	(void)ht;
	w->done(w, status);
}

/* Queues w->b; done(w, status) follows unless an error is returned. */
static int cwrite_submit(struct master *m, struct cwrite *w, cwrite_done_cb done)
{
	w->m = m;
	w->gen = m->gen;
	w->done = done;
	memcpy(w->req.client_id, m->client_id, sizeof w->req.client_id);
	w->req.seq = ++m->seq;
	w->req.min_running = w->req.seq;
	w->req.batch = w->b.data.data;
	w->req.batch_len = w->b.data.len;
	w->req.cb = cwrite_cb;
	w->req.data = w;
	return tablet_write(m->t, &w->req);
}

static void reply_write_error(struct master *m, struct rpc_call *call, int status,
			      const char *what)
{
	if (status == DOCRAFT_ENOTLEADER) {
		reply_not_leader(m, call);
		return;
	}
	rpc_reply_errorf(call, status, "%s: catalog write: %s%s", what, docraft_strerror(status),
			 status == DOCRAFT_ELEADERLOST ? " (outcome unknown)" : "");
}

/* ---- purging dropped tablets ----------------------------------------------------------------- */

struct purge_op {
	struct cwrite w;
	char id[CATALOG_MAX_TABLET_ID + 1];
};

static void purge_written(struct cwrite *w, int status)
{
	struct purge_op *op = (struct purge_op *)w;
	struct master *m = w->m;
	if (w->gen == m->gen) {
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, op->id);
		if (tb != NULL && status == 0) {
			LOG_INFO("master %s: dropped tablet %s purged", m->address, op->id);
			catalog_remove_tablet(&m->cat, tb);
		} else if (tb != NULL) {
			LOG_WARN("master %s: purging dropped tablet %s: %s", m->address, op->id,
				 docraft_strerror(status));
			tb->purging = false;
		}
	}
	batch_free(&w->b);
	free(op);
	m->ops--;
}

/* Purges tb once no replica's tserver lists it any more. */
static void maybe_purge(struct master *m, struct cat_tablet *tb)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct purge_op *op;

	if (tb->purging || tb->state != CAT_DELETED)
		return;
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		if (!tb->replicas[k].gone)
			return;
	op = xcalloc(1, sizeof *op);
	batch_init(&op->w.b);
	snprintf(op->id, sizeof op->id, "%s", tb->id);
	if (catalog_write_purge(&op->w.b, tb, errmsg) != 0 ||
	    cwrite_submit(m, &op->w, purge_written) != 0) {
		batch_free(&op->w.b);
		free(op);
		return;
	}
	m->ops++;
	tb->purging = true;
}

/* ---- building messages ----------------------------------------------------------------------- */

static Docraft__Peer **peers_pb(const struct cat_tablet *tb, struct arena *a)
{
	Docraft__Peer **peers = alloc0(a, tb->n_replicas * sizeof *peers);
	for (uint32_t k = 0; k < tb->n_replicas; k++) {
		const struct cat_replica *r = &tb->replicas[k];
		Docraft__Peer *p = alloc0(a, sizeof *p);
		docraft__peer__init(p);
		p->raft_id = r->raft_id;
		p->address = (char *)r->address;
		p->tserver_uuid = (char *)r->uuid;
		p->voter = true;
		peers[k] = p;
	}
	return peers;
}

static Docraft__CreateTabletRequest *create_pb(const struct cat_table *t,
					       const struct cat_tablet *tb, uint64_t raft_id,
					       struct arena *a)
{
	Docraft__CreateTabletRequest *req = alloc0(a, sizeof *req);
	docraft__create_tablet_request__init(req);
	req->tablet_id = (char *)tb->id;
	req->schema = t->schema;
	req->raft_id = raft_id;
	req->n_peers = tb->n_replicas;
	req->peers = peers_pb(tb, a);
	req->join = false;
	req->partition_start = tb->start;
	req->partition_end = tb->end;
	req->table_id = (char *)t->id;
	return req;
}

static struct cat_replica *replica_on(struct cat_tablet *tb, const char *uuid)
{
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		if (strcmp(tb->replicas[k].uuid, uuid) == 0)
			return &tb->replicas[k];
	return NULL;
}

/* ---- DDL request ids ------------------------------------------------------------------------- */

/* The request id of a CreateTable / DropTable (catalog.h, "ddl"). *done:
 * the same request (client id, seq, op and table) already took effect, the
 * caller answers with its first result; else *has_ddl says whether d is to
 * be recorded with the change. An error code (errmsg set) for an id that is
 * not 16 bytes, or one reused for another DDL. */
static int ddl_check(struct master *m, const ProtobufCBinaryData *client_id, uint64_t seq,
		     enum cat_ddl_op op, const char *table, struct cat_ddl *d, bool *has_ddl,
		     bool *done, char *errmsg)
{
	const struct cat_ddl *old;
	memset(d, 0, sizeof *d);
	*has_ddl = false;
	*done = false;
	if (client_id->len == 0)
		return 0; /* an older client: no id */
	if (client_id->len != CATALOG_DDL_ID_LEN)
		return err_set(errmsg, DOCRAFT_EINVAL, "client_id of %zu bytes (must be %d)",
			       client_id->len, CATALOG_DDL_ID_LEN);
	catalog_ddl_set(d, client_id->data, seq, op, table, hlc_wall_clock(NULL) / 1000);
	*has_ddl = true;
	old = catalog_find_ddl(&m->cat, d->client);
	if (old == NULL || old->seq != seq)
		return 0;
	if (old->op != op || strcmp(old->table, table) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "request %s/%" PRIu64 " was a %s of table '%s', not this one",
			       d->client, seq, old->op == CAT_DDL_CREATE ? "create" : "drop",
			       old->table);
	LOG_INFO("master %s: %s table %s: a retry of request %s/%" PRIu64
		 ", answered with its first result",
		 m->address, op == CAT_DDL_CREATE ? "create" : "drop", table, d->client, seq);
	*done = true;
	return 0;
}

/* Appends to b the record d (when has_ddl) and the purge of stale ones. */
static int ddl_write(struct master *m, struct batch *b, const struct cat_ddl *d, bool has_ddl,
		     char *errmsg)
{
	int rv = has_ddl ? catalog_write_ddl(b, d, errmsg) : 0;
	if (rv == 0)
		rv = catalog_purge_ddl(&m->cat, b, hlc_wall_clock(NULL) / 1000, errmsg);
	return rv;
}

/* ---- CreateTable ----------------------------------------------------------------------------- */

struct create_call {
	struct rpc_call_req req; /* first */
	struct create_op *op;
	char tablet_id[CATALOG_MAX_TABLET_ID + 1];
	uint64_t raft_id;
	char address[RPC_ADDRESS_MAX + 1];
};

struct create_op {
	struct cwrite w; /* first */
	struct rpc_call *call;
	char name[CATALOG_MAX_TABLE_NAME + 1];
	bool has_ddl;       /* the request carried an id: ddl is recorded */
	struct cat_ddl ddl;
	struct create_call *calls;
	size_t outstanding;
	size_t failed;
};

static void create_free(struct create_op *op)
{
	struct master *m = op->w.m;
	batch_free(&op->w.b);
	free(op->calls);
	free(op);
	m->ops--;
}

static void create_finish(struct create_op *op)
{
	Docraft__CreateTableResponse resp = DOCRAFT__CREATE_TABLE_RESPONSE__INIT;
	resp.table_id = op->name;
	if (op->failed > 0)
		LOG_WARN("master %s: table %s: %zu replica creations failed; heartbeats will retry",
			 op->w.m->address, op->name, op->failed);
	rpc_reply_message(op->call, &resp.base);
	create_free(op);
}

static void create_rpc_done(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct create_call *cc = (struct create_call *)req;
	struct create_op *op = cc->op;
	struct master *m = op->w.m;

	if (res->status != 0) {
		op->failed++;
		LOG_WARN("master %s: create tablet %s (raft id %" PRIu64 ") on %s: %s: %s",
			 m->address, cc->tablet_id, cc->raft_id, cc->address,
			 docraft_strerror(res->status), res->message);
	}
	if (op->w.gen == m->gen) {
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, cc->tablet_id);
		if (tb != NULL && tb->state == CAT_RUNNING && cc->raft_id <= tb->n_replicas)
			tb->replicas[cc->raft_id - 1].create_sent_ms = now_ms(m);
	}
	if (--op->outstanding == 0)
		create_finish(op);
}

/* Asks every replica's tserver to create it. */
static void send_creates(struct master *m, struct create_op *op, struct cat_table *t)
{
	struct arena a;
	size_t n = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	arena_init(&a);
	op->calls = xcalloc(t->n_tablets * t->rf, sizeof *op->calls);
	for (size_t i = 0; i < t->n_tablets; i++) {
		struct cat_tablet *tb = t->tablets[i];
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			struct cat_replica *r = &tb->replicas[k];
			struct create_call *cc = &op->calls[n++];
			Docraft__CreateTabletRequest *req = create_pb(t, tb, r->raft_id, &a);
			int rv;
			cc->op = op;
			cc->raft_id = r->raft_id;
			snprintf(cc->tablet_id, sizeof cc->tablet_id, "%s", tb->id);
			snprintf(cc->address, sizeof cc->address, "%s", r->address);
			r->create_sent_ms = now_ms(m);
			rv = rpc_call_message(&m->cl, r->address,
					      DOCRAFT__METHOD__TSERVER_CREATE_TABLET, &req->base,
					      CREATE_TIMEOUT_MS, &cc->req, create_rpc_done, errmsg);
			if (rv != 0) {
				op->failed++;
				LOG_WARN("master %s: create tablet %s on %s: %s", m->address,
					 tb->id, r->address, errmsg);
				continue;
			}
			op->outstanding++;
		}
		arena_reset(&a);
	}
	arena_free(&a);
}

static void create_written(struct cwrite *w, int status)
{
	struct create_op *op = (struct create_op *)w;
	struct master *m = w->m;
	struct cat_table *t = w->gen == m->gen ? catalog_find_table(&m->cat, op->name) : NULL;

	ASSERT(w->gen != m->gen || (t != NULL && t->state == CAT_CREATING));
	if (status != 0) {
		LOG_WARN("master %s: create table %s: %s", m->address, op->name,
			 docraft_strerror(status));
		if (t != NULL)
			catalog_remove_table(&m->cat, t);
		reply_write_error(m, op->call, status, "create table");
		create_free(op);
		return;
	}
	LOG_INFO("master %s: table %s created", m->address, op->name);
	if (w->gen == m->gen && op->has_ddl)
		catalog_put_ddl(&m->cat, &op->ddl);
	if (t == NULL || m->closing) {
		/* Committed, but this master lost the leadership meanwhile (or
		 * is closing): the next leader's heartbeats create the replicas. */
		create_finish(op);
		return;
	}
	catalog_set_table_state(t, CAT_RUNNING);
	send_creates(m, op, t);
	if (op->outstanding == 0)
		create_finish(op);
}

/* The schema as the catalog stores it: columns as given, ids 0.. in order,
 * version 0; validated as every tserver will validate it. */
static int canonical_schema(const Docraft__TableSchema *in, struct buf *packed, char *errmsg)
{
	Docraft__TableSchema copy = *in, canon;
	Docraft__ColumnSchema *cols;
	Docraft__ColumnSchema **ptrs;
	struct schema s;
	struct arena a;
	size_t len;
	int rv;

	if (in->n_columns > SCHEMA_MAX_COLUMNS)
		return err_set(errmsg, DOCRAFT_EINVAL, "schema: too many columns (max %d)",
			       SCHEMA_MAX_COLUMNS);
	arena_init(&a);
	cols = alloc0(&a, in->n_columns * sizeof *cols);
	ptrs = alloc0(&a, in->n_columns * sizeof *ptrs);
	for (size_t i = 0; i < in->n_columns; i++) {
		cols[i] = *in->columns[i];
		cols[i].id = (int32_t)i;
		ptrs[i] = &cols[i];
	}
	copy.columns = ptrs;
	copy.version = 0;
	rv = wire_schema_from_pb(&copy, &s, errmsg);
	if (rv != 0) {
		arena_free(&a);
		return err_wrap(errmsg, DOCRAFT_EINVAL, "schema");
	}
	if (s.n_hash == 0)
		rv = err_set(errmsg, DOCRAFT_EINVAL, "schema: at least one hash column is needed");
	else if (s.default_ttl_ms < 0)
		rv = err_set(errmsg, DOCRAFT_EINVAL,
			     "schema: default TTL %" PRId64 " ms is negative", s.default_ttl_ms);
	if (rv == 0) {
		wire_schema_to_pb(&s, &canon, &a);
		len = protobuf_c_message_get_packed_size(&canon.base);
		buf_reset(packed);
		buf_reserve(packed, len + 1);
		protobuf_c_message_pack(&canon.base, packed->data);
		packed->len = len;
	}
	schema_free(&s);
	arena_free(&a);
	return rv;
}

/* Live tservers sorted by uuid (the catalog's order) and their loads. */
static size_t live_tservers(struct master *m, struct cat_tserver ***out,
			    struct placement_server **loads)
{
	uint64_t now = now_ms(m);
	struct cat_tserver **live = xcalloc(m->cat.n_tservers, sizeof *live);
	struct placement_server *ld;
	size_t n = 0;

	for (size_t i = 0; i < m->cat.n_tservers; i++)
		if (catalog_tserver_live(m->cat.tservers[i], now, m->tserver_timeout_ms))
			live[n++] = m->cat.tservers[i];
	ld = xcalloc(n, sizeof *ld);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->state == CAT_DELETED)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			size_t lo = 0, hi = n;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				int cmp = strcmp(live[mid]->uuid, tb->replicas[k].uuid);
				if (cmp == 0) {
					ld[mid].load++;
					break;
				}
				if (cmp < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
		}
	}
	*out = live;
	*loads = ld;
	return n;
}

/* A dropped tablet of table name that may still commit writes: fewer than
 * a majority of its replicas are known to be deleted (heartbeats no longer
 * list them). A client with a stale cache could still write there, and the
 * write, acknowledged, would vanish with the tablet: so the name cannot be
 * created again until none is left (the caller retries on EBUSY). */
static const struct cat_tablet *dropped_alive(const struct master *m, const char *name)
{
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		uint32_t gone = 0;
		if (tb->state != CAT_DELETED || strcmp(tb->table, name) != 0)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++)
			gone += tb->replicas[k].gone;
		if (gone <= tb->n_replicas / 2)
			return tb;
	}
	return NULL;
}

/* Validates, places and records the table (CAT_CREATING), and fills op's
 * batch. On error nothing is left in the catalog. */
static int prepare_create(struct master *m, const Docraft__CreateTableRequest *req,
			  struct create_op *op, char *errmsg)
{
	struct buf schema = BUF_INIT;
	struct cat_tserver **live = NULL;
	struct placement_server *loads = NULL;
	struct cat_table *t = NULL, *old;
	const struct cat_tablet *dropped;
	size_t *where = NULL, n_live;
	uint32_t rf, n;
	int rv;

	if (req->schema == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "create table: no schema");
	if ((rv = catalog_check_table_name(req->schema->name, errmsg)) != 0)
		return rv;
	snprintf(op->name, sizeof op->name, "%s", req->schema->name);
	old = catalog_find_table(&m->cat, op->name);
	if (old != NULL && old->state != CAT_RUNNING)
		return err_set(errmsg, DOCRAFT_EBUSY, "table '%s' is being %s; retry", op->name,
			       old->state == CAT_CREATING ? "created" : "dropped");
	if (old != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "table '%s' already exists", op->name);
	if ((dropped = dropped_alive(m, op->name)) != NULL)
		return err_set(errmsg, DOCRAFT_EBUSY, "table '%s' was dropped and its tablet %s "
			       "is not deleted on most replicas yet; retry", op->name, dropped->id);
	rf = req->replication_factor != 0 ? req->replication_factor : m->default_rf;
	if ((rv = placement_check_rf(rf, errmsg)) != 0)
		return rv;
	if ((rv = canonical_schema(req->schema, &schema, errmsg)) != 0)
		goto out;
	n_live = live_tservers(m, &live, &loads);
	n = req->num_tablets != 0 ? req->num_tablets : (uint32_t)(n_live > 0 ? n_live : 1);
	if (n > PLACEMENT_MAX_TABLETS) {
		rv = err_set(errmsg, DOCRAFT_EINVAL, "number of tablets must be 1..%d (got %u)",
			     PLACEMENT_MAX_TABLETS, n);
		goto out;
	}
	where = xcalloc((size_t)n * rf, sizeof *where);
	if ((rv = placement_place(loads, n_live, n, rf, where, errmsg)) != 0)
		goto out;
	if ((rv = catalog_table_new(op->name, schema.data, schema.len, rf, &t, errmsg)) != 0)
		goto out;
	snprintf(t->id, sizeof t->id, "%016" PRIx64, next_rand(m));
	for (int attempt = 0;; attempt++) {
		uint32_t suffix = (uint32_t)next_rand(m);
		for (uint32_t i = 0; i < n; i++) {
			char id[CATALOG_MAX_TABLET_ID + 1];
			uint32_t start, end;
			struct cat_tablet *tb;
			snprintf(id, sizeof id, "%s-%u-%08x", op->name, i, suffix);
			placement_partition(i, n, &start, &end);
			tb = catalog_table_add_tablet(t, id, start, end);
			tb->n_replicas = rf;
			for (uint32_t k = 0; k < rf; k++) {
				struct cat_replica *r = &tb->replicas[k];
				const struct cat_tserver *ts = live[where[(size_t)i * rf + k]];
				r->raft_id = k + 1;
				snprintf(r->uuid, sizeof r->uuid, "%s", ts->uuid);
				snprintf(r->address, sizeof r->address, "%s", ts->address);
			}
		}
		rv = catalog_add_table(&m->cat, t, errmsg);
		if (rv == 0 || attempt == 3)
			break;
		/* A tablet id taken by a dropped tablet: another suffix. */
		for (size_t i = 0; i < t->n_tablets; i++)
			free(t->tablets[i]);
		t->n_tablets = 0;
	}
	if (rv != 0) {
		catalog_table_free(t);
		goto out;
	}
	rv = catalog_write_table(&op->w.b, t, errmsg);
	if (rv == 0)
		rv = ddl_write(m, &op->w.b, &op->ddl, op->has_ddl, errmsg);
	if (rv != 0)
		catalog_remove_table(&m->cat, t);
out:
	buf_free(&schema);
	free(live);
	free(loads);
	free(where);
	return rv;
}

static void handle_create_table(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	Docraft__CreateTableRequest *req;
	struct create_op *op;
	bool done = false;
	int rv;

	if (!serving(m, call))
		return;
	req = rpc_call_decode(call, &docraft__create_table_request__descriptor);
	if (req == NULL)
		return;
	op = xcalloc(1, sizeof *op);
	batch_init(&op->w.b);
	op->call = call;
	m->ops++;
	op->w.m = m;
	rv = req->schema == NULL ? err_set(errmsg, DOCRAFT_EINVAL, "create table: no schema")
	   : ddl_check(m, &req->client_id, req->seq, CAT_DDL_CREATE, req->schema->name, &op->ddl,
			&op->has_ddl, &done, errmsg);
	if (rv == 0 && done) {
		Docraft__CreateTableResponse resp = DOCRAFT__CREATE_TABLE_RESPONSE__INIT;
		resp.table_id = op->ddl.table;
		rpc_reply_message(call, &resp.base);
		docraft__create_table_request__free_unpacked(req, NULL);
		create_free(op);
		return;
	}
	if (rv == 0)
		rv = prepare_create(m, req, op, errmsg);
	docraft__create_table_request__free_unpacked(req, NULL);
	if (rv == 0) {
		rv = cwrite_submit(m, &op->w, create_written);
		if (rv != 0) {
			struct cat_table *t = catalog_find_table(&m->cat, op->name);
			catalog_remove_table(&m->cat, t);
			err_set(errmsg, rv, "create table: catalog write: %s",
				docraft_strerror(rv));
		}
	}
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		create_free(op);
	}
}

/* ---- DropTable ------------------------------------------------------------------------------- */

struct drop_op {
	struct cwrite w; /* first */
	struct rpc_call *call;
	char name[CATALOG_MAX_TABLE_NAME + 1];
	bool has_ddl;
	struct cat_ddl ddl;
};

static void drop_written(struct cwrite *w, int status)
{
	struct drop_op *op = (struct drop_op *)w;
	struct master *m = w->m;
	struct cat_table *t = w->gen == m->gen ? catalog_find_table(&m->cat, op->name) : NULL;

	ASSERT(w->gen != m->gen || (t != NULL && t->state == CAT_DELETING));
	if (status != 0) {
		if (t != NULL)
			t->state = CAT_RUNNING;
		reply_write_error(m, op->call, status, "drop table");
	} else {
		Docraft__DropTableResponse resp = DOCRAFT__DROP_TABLE_RESPONSE__INIT;
		LOG_INFO("master %s: table %s dropped", m->address, op->name);
		if (t != NULL)
			catalog_drop_table(&m->cat, t);
		if (w->gen == m->gen && op->has_ddl)
			catalog_put_ddl(&m->cat, &op->ddl);
		rpc_reply_message(op->call, &resp.base);
	}
	batch_free(&w->b);
	free(op);
	m->ops--;
}

static void handle_drop_table(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	Docraft__DropTableRequest *req;
	struct cat_table *t;
	struct drop_op *op;
	struct cat_ddl ddl;
	bool has_ddl, done;
	int rv;

	if (!serving(m, call))
		return;
	req = rpc_call_decode(call, &docraft__drop_table_request__descriptor);
	if (req == NULL)
		return;
	rv = ddl_check(m, &req->client_id, req->seq, CAT_DDL_DROP, req->name, &ddl, &has_ddl,
		       &done, errmsg);
	if (rv == 0 && done) {
		Docraft__DropTableResponse resp = DOCRAFT__DROP_TABLE_RESPONSE__INIT;
		rpc_reply_message(call, &resp.base);
		goto out;
	}
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		goto out;
	}
	t = catalog_find_table(&m->cat, req->name);
	if (t == NULL) {
		rpc_reply_errorf(call, DOCRAFT_ETABLENOTFOUND, "table '%s' not found", req->name);
		goto out;
	}
	if (t->state != CAT_RUNNING) {
		rpc_reply_errorf(call, DOCRAFT_EBUSY, "table '%s' is being %s; retry", req->name,
				 t->state == CAT_CREATING ? "created" : "dropped");
		goto out;
	}
	op = xcalloc(1, sizeof *op);
	batch_init(&op->w.b);
	op->call = call;
	snprintf(op->name, sizeof op->name, "%s", t->name);
	op->has_ddl = has_ddl;
	op->ddl = ddl;
	rv = catalog_write_drop(&op->w.b, t, errmsg);
	if (rv == 0)
		rv = ddl_write(m, &op->w.b, &op->ddl, op->has_ddl, errmsg);
	if (rv == 0 && (rv = cwrite_submit(m, &op->w, drop_written)) != 0)
		err_set(errmsg, rv, "drop table: catalog write: %s", docraft_strerror(rv));
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		batch_free(&op->w.b);
		free(op);
		goto out;
	}
	m->ops++;
	t->state = CAT_DELETING;
out:
	docraft__drop_table_request__free_unpacked(req, NULL);
}

/* ---- reads of the catalog -------------------------------------------------------------------- */

static void handle_list_tables(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	Docraft__ListTablesResponse resp = DOCRAFT__LIST_TABLES_RESPONSE__INIT;
	struct arena a;

	if (!serving(m, call))
		return;
	arena_init(&a);
	resp.tables = alloc0(&a, m->cat.n_tables * sizeof *resp.tables);
	for (size_t i = 0; i < m->cat.n_tables; i++)
		if (m->cat.tables[i]->state != CAT_CREATING)
			resp.tables[resp.n_tables++] = m->cat.tables[i]->schema;
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
}

static void handle_get_table(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	Docraft__GetTableResponse resp = DOCRAFT__GET_TABLE_RESPONSE__INIT;
	Docraft__GetTableRequest *req;
	struct cat_table *t;
	struct arena a;
	uint64_t now = now_ms(m);

	if (!serving(m, call))
		return;
	req = rpc_call_decode(call, &docraft__get_table_request__descriptor);
	if (req == NULL)
		return;
	t = catalog_find_table(&m->cat, req->name);
	if (t == NULL || t->state == CAT_CREATING) {
		rpc_reply_errorf(call, DOCRAFT_ETABLENOTFOUND, "table '%s' not found", req->name);
		docraft__get_table_request__free_unpacked(req, NULL);
		return;
	}
	arena_init(&a);
	resp.schema = t->schema;
	resp.table_id = t->id;
	resp.n_tablets = t->n_tablets;
	resp.tablets = alloc0(&a, t->n_tablets * sizeof *resp.tablets);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const struct cat_tablet *tb = t->tablets[i];
		const struct cat_replica *leader =
			catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		Docraft__TabletLocation *loc = alloc0(&a, sizeof *loc);
		docraft__tablet_location__init(loc);
		loc->tablet_id = (char *)tb->id;
		loc->start = tb->start;
		loc->end = tb->end;
		loc->n_replicas = tb->n_replicas;
		loc->replicas = peers_pb(tb, &a);
		loc->leader_raft_id = leader != NULL ? leader->raft_id : 0;
		resp.tablets[i] = loc;
	}
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	docraft__get_table_request__free_unpacked(req, NULL);
}

static void handle_list_tservers(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	Docraft__ListTServersResponse resp = DOCRAFT__LIST_TSERVERS_RESPONSE__INIT;
	struct arena a;
	uint64_t now = now_ms(m);

	if (!serving(m, call))
		return;
	arena_init(&a);
	resp.n_tservers = m->cat.n_tservers;
	resp.tservers = alloc0(&a, m->cat.n_tservers * sizeof *resp.tservers);
	for (size_t i = 0; i < m->cat.n_tservers; i++) {
		struct cat_tserver *ts = m->cat.tservers[i];
		Docraft__TServerInfo *info = alloc0(&a, sizeof *info);
		docraft__tserver_info__init(info);
		info->uuid = ts->uuid;
		info->address = ts->address;
		info->live = catalog_tserver_live(ts, now, m->tserver_timeout_ms);
		info->last_heartbeat_ms_ago = now - ts->last_hb_ms;
		for (size_t k = 0; k < m->cat.n_tablets; k++) {
			struct cat_tablet *tb = m->cat.tablets[k];
			const struct cat_replica *leader;
			if (tb->state == CAT_DELETED || replica_on(tb, ts->uuid) == NULL)
				continue;
			info->tablets++;
			leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
			if (leader != NULL && strcmp(leader->uuid, ts->uuid) == 0)
				info->leaders++;
		}
		resp.tservers[i] = info;
	}
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
}

/* ---- Heartbeat ------------------------------------------------------------------------------- */

static bool valid_uuid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > CATALOG_MAX_UUID)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

struct instructions {
	Docraft__Instruction **v;
	size_t n, cap;
	struct arena *a;
};

static Docraft__Instruction *instruction_add(struct instructions *ins)
{
	Docraft__Instruction *i = alloc0(ins->a, sizeof *i);
	if (ins->n == ins->cap) {
		Docraft__Instruction **v;
		ins->cap = ins->cap ? 2 * ins->cap : 16;
		v = alloc0(ins->a, ins->cap * sizeof *v);
		if (ins->n > 0)
			memcpy(v, ins->v, ins->n * sizeof *v);
		ins->v = v;
	}
	docraft__instruction__init(i);
	ins->v[ins->n++] = i;
	return i;
}

/* Leader balancing (balance.h): the catalog as balance_pick's input
 * (servers: every tserver, by uuid; tablets: the running ones) and, if it
 * picks a move of a tablet ts leads, one StepDown instruction for ts. */
static void balance_leaders(struct master *m, const struct cat_tserver *ts,
			    struct instructions *ins, uint64_t now)
{
	size_t n_servers = m->cat.n_tservers, n = 0;
	size_t from = catalog_tserver_index(&m->cat, ts->uuid);
	uint64_t fresh = m->tserver_timeout_ms < LEADER_TARGET_FRESH_MS ? m->tserver_timeout_ms
									 : LEADER_TARGET_FRESH_MS;
	struct balance_server *servers;
	struct balance_tablet *tablets;
	struct cat_tablet **of;
	struct balance_load *load;
	struct balance_move mv;
	struct cat_tablet *tb;
	const struct cat_replica *to;
	Docraft__Instruction *in;
	Docraft__StepDownRequest *sd;
	bool leads = false;

	ASSERT(from != SIZE_MAX);
	/* A tserver that leads nothing has nothing to hand over (the common
	 * case on a balanced cluster of many tservers): ruled out cheaply. */
	for (size_t i = 0; i < m->cat.n_tablets && !leads; i++) {
		const struct cat_replica *r = m->cat.tablets[i]->state == CAT_RUNNING
						      ? replica_on(m->cat.tablets[i], ts->uuid)
						      : NULL;
		leads = r != NULL && r->leader;
	}
	if (!leads)
		return;
	servers = alloc0(ins->a, n_servers * sizeof *servers);
	load = alloc0(ins->a, n_servers * sizeof *load);
	tablets = alloc0(ins->a, m->cat.n_tablets * sizeof *tablets);
	of = alloc0(ins->a, m->cat.n_tablets * sizeof *of);
	for (size_t s = 0; s < n_servers; s++)
		servers[s].live = catalog_tserver_live(m->cat.tservers[s], now, fresh);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct balance_tablet *bt = &tablets[n];
		const struct cat_replica *leader;
		tb = m->cat.tablets[i];
		if (tb->state != CAT_RUNNING || tb->n_replicas == 0)
			continue;
		leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		bt->leader = leader != NULL ? catalog_tserver_index(&m->cat, leader->uuid)
					    : BALANCE_NONE;
		bt->n_replicas = tb->n_replicas;
		bt->moved_ms = tb->move_sent_ms;
		bt->moved_to = BALANCE_NONE;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			const struct cat_replica *r = &tb->replicas[k];
			size_t s = catalog_tserver_index(&m->cat, r->uuid);
			bt->server[k] = s;
			/* Listed by its tserver's latest heartbeat as a follower or
			 * leader, in the term of the leader when one is known. */
			bt->ready[k] = s != BALANCE_NONE &&
				       r->seen_hb == m->cat.tservers[s]->hb_count && r->up &&
				       (leader == NULL || r->term == leader->term);
			if (tb->move_sent_ms != 0 && r->raft_id == tb->move_to)
				bt->moved_to = s;
		}
		of[n++] = tb;
	}
	if (!balance_pick(servers, n_servers, tablets, n, from, now, LEADER_MOVE_COOLDOWN_MS,
			  load, &mv))
		return;
	tb = of[mv.tablet];
	to = &tb->replicas[mv.replica];
	in = instruction_add(ins);
	sd = alloc0(ins->a, sizeof *sd);
	docraft__step_down_request__init(sd);
	sd->tablet_id = tb->id;
	sd->to_raft_id = to->raft_id;
	in->kind_case = DOCRAFT__INSTRUCTION__KIND_STEP_DOWN;
	in->step_down = sd;
	tb->move_sent_ms = now;
	tb->move_to = to->raft_id;
	LOG_INFO("master %s: leader balance: tablet %s: leader moves from tserver %s "
		 "(%" PRIu32 " leaders) to %s (raft id %" PRIu64 ", %" PRIu32 " leaders)",
		 m->address, tb->id, ts->uuid, load[from].leaders, to->uuid, to->raft_id,
		 load[mv.to].leaders);
}

static void handle_heartbeat(void *arg, struct rpc_call *call)
{
	struct master *m = arg;
	Docraft__HeartbeatResponse resp = DOCRAFT__HEARTBEAT_RESPONSE__INIT;
	Docraft__HeartbeatRequest *req;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct instructions ins = {NULL, 0, 0, NULL};
	struct cat_tserver *ts;
	struct sockaddr_in sa;
	struct arena a;
	uint64_t now = now_ms(m);

	if (!serving(m, call))
		return;
	req = rpc_call_decode(call, &docraft__heartbeat_request__descriptor);
	if (req == NULL)
		return;
	if (!valid_uuid(req->uuid)) {
		rpc_reply_error(call, DOCRAFT_EINVAL, "heartbeat: bad tserver uuid", NULL, 0);
		goto out;
	}
	if (strlen(req->address) > RPC_ADDRESS_MAX ||
	    listener_parse_address(req->address, &sa, errmsg) != 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "heartbeat: bad address '%.32s'",
				 req->address);
		goto out;
	}
	ts = catalog_find_tserver(&m->cat, req->uuid);
	if (ts == NULL || strcmp(ts->address, req->address) != 0)
		LOG_INFO("master %s: tserver %s at %s", m->address, req->uuid, req->address);
	ts = catalog_tserver_upsert(&m->cat, req->uuid, req->address);
	ts->hb_count++;
	ts->last_hb_ms = now;

	arena_init(&a);
	ins.a = &a;
	for (size_t i = 0; i < req->n_tablets; i++) {
		const Docraft__TabletReport *rep = req->tablets[i];
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, rep->tablet_id);
		struct cat_replica *r;
		if (tb == NULL)
			continue; /* unknown here: never deleted on a guess */
		r = replica_on(tb, ts->uuid);
		if (tb->state == CAT_DELETED) {
			Docraft__Instruction *in = instruction_add(&ins);
			Docraft__DeleteTabletRequest *del = alloc0(&a, sizeof *del);
			docraft__delete_tablet_request__init(del);
			del->tablet_id = tb->id;
			in->kind_case = DOCRAFT__INSTRUCTION__KIND_DELETE;
			in->delete_ = del;
			if (r != NULL) {
				r->seen_hb = ts->hb_count;
				r->gone = false;
			}
			continue;
		}
		if (r == NULL)
			continue; /* not a member (a later configuration change) */
		r->seen_hb = ts->hb_count;
		r->leader = strcmp(rep->role, ROLE_LEADER) == 0;
		r->up = r->leader || strcmp(rep->role, ROLE_FOLLOWER) == 0;
		r->term = rep->term;
	}
	/* Replicas this tserver should have and did not list. */
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		struct cat_replica *r = replica_on(tb, ts->uuid);
		if (r == NULL || r->seen_hb == ts->hb_count)
			continue;
		r->leader = false;
		r->up = false;
		if (tb->state == CAT_DELETED) {
			r->gone = true;
			maybe_purge(m, tb);
		} else if (tb->state == CAT_RUNNING &&
			   (r->create_sent_ms == 0 || now - r->create_sent_ms >= CREATE_RETRY_MS)) {
			const struct cat_table *t = catalog_find_table(&m->cat, tb->table);
			Docraft__Instruction *in;
			if (t == NULL)
				continue;
			in = instruction_add(&ins);
			in->kind_case = DOCRAFT__INSTRUCTION__KIND_CREATE;
			in->create = create_pb(t, tb, r->raft_id, &a);
			r->create_sent_ms = now;
			LOG_INFO("master %s: tserver %s lacks tablet %s: create instructed",
				 m->address, ts->uuid, tb->id);
		}
	}
	if (m->leader_balance)
		balance_leaders(m, ts, &ins, now);
	resp.n_instructions = ins.n;
	resp.instructions = ins.v;
	resp.master_leader_address = m->address;
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
out:
	docraft__heartbeat_request__free_unpacked(req, NULL);
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

void master_options_default(struct master_options *o)
{
	memset(o, 0, sizeof *o);
	o->tserver_timeout_ms = MASTER_DEFAULT_TSERVER_TIMEOUT_MS;
	o->default_rf = MASTER_DEFAULT_RF;
	o->leader_balance = true;
}

const char *master_address(const struct master *m)
{
	return m->address;
}

static int mkdir_p(const char *path, char *errmsg)
{
	char tmp[4096];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof tmp)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad data directory '%s'", path);
	memcpy(tmp, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		char c = tmp[i];
		if (c != '/' && c != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return err_set(errmsg, DOCRAFT_EIO, "mkdir %s: %s", tmp, strerror(errno));
		tmp[i] = c;
	}
	return 0;
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

struct handler {
	uint16_t method;
	rpc_handler_cb cb;
};

static const struct handler handlers[] = {
	{DOCRAFT__METHOD__MASTER_CREATE_TABLE, handle_create_table},
	{DOCRAFT__METHOD__MASTER_DROP_TABLE, handle_drop_table},
	{DOCRAFT__METHOD__MASTER_LIST_TABLES, handle_list_tables},
	{DOCRAFT__METHOD__MASTER_GET_TABLE, handle_get_table},
	{DOCRAFT__METHOD__MASTER_LIST_TSERVERS, handle_list_tservers},
	{DOCRAFT__METHOD__MASTER_HEARTBEAT, handle_heartbeat},
};

/* The options' master list into m (validated); m->raft_id is the 1-based
 * position of m->address in it. */
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
	if (m->raft_id == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "--address %s is not in the master list",
			       m->address);
	return 0;
}

int master_open(uv_loop_t *loop, const struct master_options *o, struct master **out,
		char *errmsg)
{
	struct tablet_peer peers[MASTER_MAX_MASTERS];
	struct tablet_options to;
	struct sockaddr_in sa;
	char dir[4200];
	struct master *m;
	int rv;

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
	if (placement_check_rf(o->default_rf, errmsg) != 0)
		return err_wrap(errmsg, DOCRAFT_EINVAL, "default");

	m = xcalloc(1, sizeof *m);
	m->loop = loop;
	snprintf(m->address, sizeof m->address, "%s", o->address);
	snprintf(m->data_dir, sizeof m->data_dir, "%s", o->data_dir);
	m->tserver_timeout_ms = o->tserver_timeout_ms;
	m->default_rf = o->default_rf;
	m->leader_balance = o->leader_balance;
	m->fatal_cb = o->fatal_cb;
	m->fatal_arg = o->fatal_arg;
	catalog_init(&m->cat);
	seed_random(m);
	uv_timer_init(loop, &m->poll);
	m->poll.data = m;
	m->poll_open = true;
	*out = m;

	if ((rv = set_masters(m, o, errmsg)) != 0)
		return rv;
	if ((rv = mkdir_p(m->data_dir, errmsg)) != 0)
		return rv;
	if ((rv = listener_open(loop, m->address, &m->l, errmsg)) != 0)
		return rv;
	if ((rv = copy_server_init(&m->copy, loop, m->l, errmsg)) != 0)
		return rv;
	m->copy_on = true;

	snprintf(dir, sizeof dir, "%s/%s", m->data_dir, CATALOG_TABLET_ID);
	tablet_options_default(&to);
	to.id = CATALOG_TABLET_ID;
	to.dir = dir;
	to.raft_id = m->raft_id;
	to.address = m->address;
	to.listener = m->l;
	to.copy = &m->copy;
	if (o->raft_heartbeat_ms != 0)
		to.heartbeat_ms = o->raft_heartbeat_ms;
	if (o->election_ms != 0)
		to.election_ms = o->election_ms;
	if ((rv = tablet_open(loop, &to, &m->t, errmsg)) != 0) {
		m->t = NULL;
		return rv;
	}
	for (size_t i = 0; i < m->n_masters; i++) {
		peers[i].id = i + 1;
		peers[i].address = m->masters[i];
		peers[i].role = RAFT_VOTER;
	}
	if ((rv = tablet_bootstrap(m->t, peers, m->n_masters, errmsg)) != 0)
		return rv;
	if ((rv = tablet_start(m->t, errmsg)) != 0)
		return rv;

	rpc_client_init(&m->cl, loop);
	m->cl.data = m;
	m->cl_on = true;
	if ((rv = rpc_server_init(&m->srv, loop, m->l, errmsg)) != 0)
		return rv;
	m->srv.data = m;
	m->srv_on = true;
	if (o->rpc != NULL) {
		if ((rv = rpc_server_configure(&m->srv, o->rpc, errmsg)) != 0)
			return rv;
		listener_set_max_pending(m->l, o->rpc->max_connections,
					 o->rpc->max_connections_per_ip);
	}
	for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++) {
		rv = rpc_server_register(&m->srv, handlers[i].method, handlers[i].cb, m, errmsg);
		if (rv != 0)
			return rv;
	}
	uv_timer_start(&m->poll, poll_cb, POLL_MS, POLL_MS);
	LOG_INFO("master %s: raft id %llu of %zu, data in %s, leader balancing %s", m->address,
		 (unsigned long long)m->raft_id, m->n_masters, m->data_dir,
		 m->leader_balance ? "on" : "off");
	return 0;
}

static void close_next(struct master *m);

static void srv_closed(struct rpc_server *srv)
{
	close_next(srv->data);
}

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

static void listener_closed(void *arg)
{
	close_next(arg);
}

static void poll_closed(uv_handle_t *h)
{
	struct master *m = h->data;
	m->poll_open = false;
	close_next(m);
}

/* One step of the close sequence per call; each asynchronous close calls
 * back here. */
static void close_next(struct master *m)
{
	master_close_cb cb;
	void *arg;

	if (m->srv_on) {
		m->srv_on = false;
		rpc_server_close(&m->srv, srv_closed);
		return;
	}
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
	if (m->l != NULL) {
		struct listener *l = m->l;
		m->l = NULL;
		listener_close(l, listener_closed, m);
		return;
	}
	if (m->poll_open) {
		if (!uv_is_closing((uv_handle_t *)&m->poll))
			uv_close((uv_handle_t *)&m->poll, poll_closed);
		return;
	}
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
	close_next(m);
}
