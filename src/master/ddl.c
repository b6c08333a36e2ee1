/* The master's catalog decisions: tables created and dropped, their
 * tablets placed, created on the tablet servers and purged, and the reads
 * of the catalog (internal.h has the files around it).
 *
 * Design.
 *
 * Every change of the catalog is a cwrite: a DocDB batch of catalog.h's
 * documents replicated through tablet_write on the catalog tablet. The
 * in-memory catalog changes once the write is committed, and only if this
 * master has been leader without interruption since the change began: an
 * operation remembers the generation (struct master) it started in, and a
 * completion in another one touches no in-memory state (it was rebuilt
 * from the store in between) and only answers its caller. Catalog writes
 * carry this process's random client id and a sequence number that is
 * never reused (min_running = seq): the master never retries a catalog
 * write itself.
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
 *   failed is not an error for the caller: heartbeats reconcile it
 *   (tservers.c).
 *   A write that fails removes the table from memory and answers the
 *   error (ELEADERLOST: the outcome is unknown, the rows may commit; then
 *   the next leader loads them and reconciliation creates the replicas).
 *   DROP->CREATE guard: the name of a dropped table whose tablets may
 *   still commit writes (a majority of replicas not known deleted) cannot
 *   be created again yet (EBUSY; dropped_alive says why).
 *
 * DropTable: the table goes CAT_DELETING (a concurrent drop or create of
 *   the name gets EBUSY, so does a drop while a replica move of one of its
 *   tablets has a catalog write in flight: it could land after the
 *   drop's), one write deletes its document and its tablets' move
 *   documents and marks its tablets deleted; once committed the tablets
 *   are CAT_DELETED in memory and the table is gone. The answer waits
 *   (issue 17: a client with a stale cache must not get a write
 *   acknowledged by a tablet about to vanish): TSERVER_DELETE_TABLET goes
 *   to every replica at once (drop_wait), a replica is gone when its
 *   tserver answers OK or "tablet not found" or when a heartbeat no longer
 *   lists it (heartbeats instruct the delete too: the fallback for a
 *   tserver that was down), and DropTable answers OK once every tablet is
 *   gone on a majority of its replicas: none can commit a write any more.
 *   Past --drop-timeout-ms (counted from the first DropTable that waited
 *   for the tablet: a retry past it waits only for the answers to the
 *   deletes it sent again) it answers
 *   EUNAVAILABLE naming the tablets still alive (the drop itself is
 *   committed); leadership lost meanwhile:
 *   ELEADERLOST. The client retries both with the same request id, and a
 *   retry of a committed drop waits the same way before its OK; a drop
 *   of a name already dropped by another request whose tablets are alive
 *   waits too before its "not found". A deleted tablet gone on all its
 *   replicas is purged from the catalog (one more write, ddl_maybe_purge).
 *
 * DDL request ids: a CreateTable / DropTable with a client id and seq
 *   writes a "ddl" record (catalog.h) in the same batch as its change (and
 *   purges stale ones); once committed it is in memory, and a new leader
 *   loads it. A request whose id is recorded for the same op and table is
 *   answered OK (its first result: the change took effect; a drop once its
 *   tablets are deleted, as above), so a
 *   client retrying after a timeout (CreateTable of many tablets waits for
 *   every replica) or a lost answer never gets "already exists" / "not
 *   found" for its own change. While its write is in flight a retry gets
 *   EBUSY (retried). Not enough live tservers is UNAVAILABLE (retried). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/schema.h"
#include "master/catalog.h"
#include "master/internal.h"
#include "master/moves.h"
#include "master/placement.h"
#include "rpc.pb-c.h"
#include "rpc/rpc.h"
#include "rpc/wire.h"
#include "tablet/tablet.h"

#define CREATE_TIMEOUT_MS 5000
/* One TSERVER_DELETE_TABLET of DropTable (capped by --drop-timeout-ms). */
#define DELETE_TIMEOUT_MS 5000

static uint64_t next_rand(struct master *m)
{
	/* xorshift64* */
	m->rand ^= m->rand >> 12;
	m->rand ^= m->rand << 25;
	m->rand ^= m->rand >> 27;
	return m->rand * UINT64_C(2685821657736338717);
}

/* ---- catalog writes -------------------------------------------------------------------------- */

static void cwrite_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct cwrite *w = req->data;
	(void)ht;
	w->done(w, status);
}

int ddl_cwrite_submit(struct master *m, struct cwrite *w, cwrite_done_cb done)
{
	w->m = m;
	w->gen = m->gen;
	w->done = done;
	master_write_prepare(m, &w->req, &w->b, cwrite_cb, w);
	return tablet_write(m->t, &w->req);
}

static void reply_write_error(struct master *m, struct rpc_call *call, int status,
			      const char *what)
{
	if (status == DOCRAFT_ENOTLEADER) {
		master_reply_not_leader(m, call);
		return;
	}
	rpc_reply_errorf(call, status, "%s: catalog write: %s%s", what, docraft_strerror(status),
			 status == DOCRAFT_ELEADERLOST ? " (outcome unknown)" : "");
}

void ddl_cwrite_free(struct cwrite *w)
{
	struct master *m = w->m;
	batch_free(&w->b);
	free(w);
	m->ops--;
}

/* The table named name that w changed, in the state w left it in; NULL
 * when w began under another leadership (the catalog was rebuilt since). */
static struct cat_table *written_table(struct cwrite *w, const char *name,
				       enum cat_state state)
{
	struct master *m = w->m;
	struct cat_table *t = w->gen == m->gen ? catalog_find_table(&m->cat, name) : NULL;
	ASSERT(w->gen != m->gen || (t != NULL && t->state == state));
	return t;
}

/* Whether a majority of tb's replicas is known deleted (gone): then tb
 * can commit no write any more. */
static bool deleted_on_majority(const struct cat_tablet *tb)
{
	uint32_t gone = 0;
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		gone += tb->replicas[k].gone;
	return gone > tb->n_replicas / 2;
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
	ddl_cwrite_free(w);
}

void ddl_maybe_purge(struct master *m, struct cat_tablet *tb)
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
	    ddl_cwrite_submit(m, &op->w, purge_written) != 0) {
		batch_free(&op->w.b);
		free(op);
		return;
	}
	m->ops++;
	tb->purging = true;
}

/* ---- building messages ----------------------------------------------------------------------- */

/* The replicas of tb as Peers; with cat, each with its tserver's Redis
 * address as its latest heartbeat gave it (issue 17; "" when unknown). */
static Docraft__Peer **peers_pb(const struct catalog *cat, const struct cat_tablet *tb,
				struct arena *a)
{
	Docraft__Peer **peers = master_zalloc(a, tb->n_replicas * sizeof *peers);
	for (uint32_t k = 0; k < tb->n_replicas; k++) {
		const struct cat_replica *r = &tb->replicas[k];
		Docraft__Peer *p = master_zalloc(a, sizeof *p);
		docraft__peer__init(p);
		p->raft_id = r->raft_id;
		p->address = (char *)r->address;
		p->tserver_uuid = (char *)r->uuid;
		p->voter = !r->joining;
		if (cat != NULL) {
			const struct cat_tserver *ts = catalog_find_tserver(cat, r->uuid);
			if (ts != NULL)
				p->redis_address = (char *)ts->redis_address;
		}
		peers[k] = p;
	}
	return peers;
}

Docraft__CreateTabletRequest *ddl_create_tablet_pb(const struct cat_table *t,
						   const struct cat_tablet *tb, uint64_t raft_id,
						   struct arena *a)
{
	Docraft__CreateTabletRequest *req = master_zalloc(a, sizeof *req);
	docraft__create_tablet_request__init(req);
	req->tablet_id = (char *)tb->id;
	req->schema = t->schema;
	req->raft_id = raft_id;
	req->n_peers = tb->n_replicas;
	req->peers = peers_pb(NULL, tb, a);
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		if (tb->replicas[k].raft_id == raft_id)
			req->join = tb->replicas[k].joining;
	req->partition_start = tb->start;
	req->partition_end = tb->end;
	req->table_id = (char *)t->id;
	return req;
}

/* ---- DDL request ids ------------------------------------------------------------------------- */

/* The request id of a CreateTable / DropTable (catalog.h, "ddl"). *done:
 * the same request (client id, seq, op and table) already took effect, the
 * caller answers with its first result; else *has_ddl says whether d is to
 * be recorded with the change. An error code (errmsg set) for an id that is
 * not 16 bytes, or one reused for another DDL. */
static int check_request_id(struct master *m, const ProtobufCBinaryData *client_id,
			    uint64_t seq, enum cat_ddl_op op, const char *table, struct cat_ddl *d,
			    bool *has_ddl, bool *done, char *errmsg)
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
static int write_request_id(struct master *m, struct batch *b, const struct cat_ddl *d,
			    bool has_ddl, char *errmsg)
{
	int rv = has_ddl ? catalog_write_ddl(b, d, errmsg) : 0;
	if (rv == 0)
		rv = catalog_purge_ddl(&m->cat, b, hlc_wall_clock(NULL) / 1000, errmsg);
	return rv;
}

/* ---- CreateTable ----------------------------------------------------------------------------- */

/* A CreateTable or DropTable: its catalog write, its caller and its
 * request id. */
struct table_op {
	struct cwrite w; /* first */
	struct rpc_call *call;
	char name[CATALOG_MAX_TABLE_NAME + 1];
	bool has_ddl;       /* the request carried an id: ddl is recorded */
	struct cat_ddl ddl;
};

struct create_call {
	struct rpc_call_req req; /* first */
	struct create_op *op;
	char tablet_id[CATALOG_MAX_TABLET_ID + 1];
	uint64_t raft_id;
	char address[RPC_ADDRESS_MAX + 1];
};

struct create_op {
	struct table_op t; /* first */
	struct create_call *calls;
	size_t outstanding;
	size_t failed;
};

static void create_free(struct create_op *op)
{
	free(op->calls);
	ddl_cwrite_free(&op->t.w);
}

static void create_finish(struct create_op *op)
{
	Docraft__CreateTableResponse resp = DOCRAFT__CREATE_TABLE_RESPONSE__INIT;
	resp.table_id = op->t.name;
	if (op->failed > 0)
		LOG_WARN("master %s: table %s: %zu replica creations failed; heartbeats will retry",
			 op->t.w.m->address, op->t.name, op->failed);
	rpc_reply_message(op->t.call, &resp.base);
	create_free(op);
}

static void create_rpc_done(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct create_call *cc = (struct create_call *)req;
	struct create_op *op = cc->op;
	struct master *m = op->t.w.m;

	if (res->status != 0) {
		op->failed++;
		LOG_WARN("master %s: create tablet %s (raft id %" PRIu64 ") on %s: %s: %s",
			 m->address, cc->tablet_id, cc->raft_id, cc->address,
			 docraft_strerror(res->status), res->message);
	}
	if (op->t.w.gen == m->gen) {
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, cc->tablet_id);
		struct cat_replica *r = tb != NULL && tb->state == CAT_RUNNING
						? catalog_replica(tb, cc->raft_id)
						: NULL;
		if (r != NULL)
			r->create_sent_ms = master_now_ms(m);
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
			Docraft__CreateTabletRequest *req =
				ddl_create_tablet_pb(t, tb, r->raft_id, &a);
			int rv;
			cc->op = op;
			cc->raft_id = r->raft_id;
			snprintf(cc->tablet_id, sizeof cc->tablet_id, "%s", tb->id);
			snprintf(cc->address, sizeof cc->address, "%s", r->address);
			r->create_sent_ms = master_now_ms(m);
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
	struct cat_table *t = written_table(w, op->t.name, CAT_CREATING);

	if (status != 0) {
		LOG_WARN("master %s: create table %s: %s", m->address, op->t.name,
			 docraft_strerror(status));
		if (t != NULL)
			catalog_remove_table(&m->cat, t);
		reply_write_error(m, op->t.call, status, "create table");
		create_free(op);
		return;
	}
	LOG_INFO("master %s: table %s created", m->address, op->t.name);
	if (w->gen == m->gen && op->t.has_ddl)
		catalog_put_ddl(&m->cat, &op->t.ddl);
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

/* A YEDIS table (TableSchema.redis, issue 17): exactly one column, k blob
 * hash key, and none of the options of a CQL table. */
static int check_redis_schema(const struct schema *s, char *errmsg)
{
	if (s->ncols != 1 || s->n_hash != 1 || strcmp(s->cols[0].name, "k") != 0 ||
	    s->cols[0].type != CT_BLOB)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "schema: a Redis table (%s) has exactly one column, k blob hash key",
			       s->table);
	if (s->packed || s->default_ttl_ms != 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "schema: a Redis table (%s) takes no packed rows or default TTL "
			       "(TTLs are per Redis value)",
			       s->table);
	return 0;
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
	cols = master_zalloc(&a, in->n_columns * sizeof *cols);
	ptrs = master_zalloc(&a, in->n_columns * sizeof *ptrs);
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
	else if (s.redis)
		rv = check_redis_schema(&s, errmsg);
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

/* A dropped tablet of table name that may still commit writes: fewer than
 * a majority of its replicas are known to be deleted (heartbeats no longer
 * list them). A client with a stale cache could still write there, and the
 * write, acknowledged, would vanish with the tablet: so the name cannot be
 * created again until none is left (the caller retries on EBUSY). */
static const struct cat_tablet *dropped_alive(const struct master *m, const char *name)
{
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->state == CAT_DELETED && strcmp(tb->table, name) == 0 &&
		    !deleted_on_majority(tb))
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
	snprintf(op->t.name, sizeof op->t.name, "%s", req->schema->name);
	old = catalog_find_table(&m->cat, op->t.name);
	if (old != NULL && old->state != CAT_RUNNING)
		return err_set(errmsg, DOCRAFT_EBUSY, "table '%s' is being %s; retry", op->t.name,
			       old->state == CAT_CREATING ? "created" : "dropped");
	if (old != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "table '%s' already exists", op->t.name);
	if ((dropped = dropped_alive(m, op->t.name)) != NULL)
		return err_set(errmsg, DOCRAFT_EBUSY, "table '%s' was dropped and its tablet %s "
			       "is not deleted on most replicas yet; retry", op->t.name,
			       dropped->id);
	rf = req->replication_factor != 0 ? req->replication_factor : m->default_rf;
	if ((rv = placement_check_rf(rf, errmsg)) != 0)
		return rv;
	if ((rv = canonical_schema(req->schema, &schema, errmsg)) != 0)
		goto out;
	n_live = tservers_live(m, &live, &loads);
	n = req->num_tablets != 0 ? req->num_tablets : (uint32_t)(n_live > 0 ? n_live : 1);
	if (n > PLACEMENT_MAX_TABLETS) {
		rv = err_set(errmsg, DOCRAFT_EINVAL, "number of tablets must be 1..%d (got %u)",
			     PLACEMENT_MAX_TABLETS, n);
		goto out;
	}
	where = xcalloc((size_t)n * rf, sizeof *where);
	if ((rv = placement_place(loads, n_live, n, rf, where, errmsg)) != 0)
		goto out;
	if ((rv = catalog_table_new(op->t.name, schema.data, schema.len, rf, &t, errmsg)) != 0)
		goto out;
	snprintf(t->id, sizeof t->id, "%016" PRIx64, next_rand(m));
	for (int attempt = 0;; attempt++) {
		uint32_t suffix = (uint32_t)next_rand(m);
		for (uint32_t i = 0; i < n; i++) {
			char id[CATALOG_MAX_TABLET_ID + 1];
			uint32_t start, end;
			struct cat_tablet *tb;
			snprintf(id, sizeof id, "%s-%u-%08x", op->t.name, i, suffix);
			placement_partition(i, n, &start, &end);
			tb = catalog_table_add_tablet(t, id, start, end);
			tb->n_replicas = rf;
			tb->next_raft_id = rf + 1;
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
	rv = catalog_write_table(&op->t.w.b, t, errmsg);
	if (rv == 0)
		rv = write_request_id(m, &op->t.w.b, &op->t.ddl, op->t.has_ddl, errmsg);
	if (rv != 0)
		catalog_remove_table(&m->cat, t);
out:
	buf_free(&schema);
	free(live);
	free(loads);
	free(where);
	return rv;
}

enum rpc_dispatch_req ddl_create_table(void *ctx, struct rpc_call *call, void *request, void *obj)
{
	struct master *m = ctx;
	const Docraft__CreateTableRequest *req = request;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct create_op *op;
	bool done = false;
	int rv;

	(void)obj;
	op = xcalloc(1, sizeof *op);
	batch_init(&op->t.w.b);
	op->t.call = call;
	m->ops++;
	op->t.w.m = m;
	rv = req->schema == NULL
		     ? err_set(errmsg, DOCRAFT_EINVAL, "create table: no schema")
		     : check_request_id(m, &req->client_id, req->seq, CAT_DDL_CREATE,
					req->schema->name, &op->t.ddl, &op->t.has_ddl, &done,
					errmsg);
	if (rv == 0 && done) {
		Docraft__CreateTableResponse resp = DOCRAFT__CREATE_TABLE_RESPONSE__INIT;
		resp.table_id = op->t.ddl.table;
		rpc_reply_message(call, &resp.base);
		create_free(op);
		return RPC_DISPATCH_FREE;
	}
	if (rv == 0)
		rv = prepare_create(m, req, op, errmsg);
	if (rv == 0) {
		rv = ddl_cwrite_submit(m, &op->t.w, create_written);
		if (rv != 0) {
			struct cat_table *t = catalog_find_table(&m->cat, op->t.name);
			catalog_remove_table(&m->cat, t);
			err_set(errmsg, rv, "create table: catalog write: %s",
				docraft_strerror(rv));
		}
	}
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		create_free(op);
	}
	return RPC_DISPATCH_FREE;
}

/* ---- DropTable ------------------------------------------------------------------------------- */

/* Waiting for a dropped table's tablets to be deleted (see the design
 * note): one drop_wait per DropTable answer still owed, on m->drops from
 * the first check that is not settled until answered; alive (m->ops) until
 * answered and every TSERVER_DELETE_TABLET it sent has called back. */
struct drop_wait;

struct delete_call {
	struct rpc_call_req req; /* first */
	struct drop_wait *dw;
	char tablet_id[CATALOG_MAX_TABLET_ID + 1];
	char uuid[CATALOG_MAX_UUID + 1];
	char address[RPC_ADDRESS_MAX + 1];
};

struct drop_wait {
	struct drop_wait *next; /* m->drops */
	struct master *m;
	struct rpc_call *call;  /* NULL once answered */
	bool listed;            /* on m->drops */
	uint64_t gen;
	uint64_t deadline_ms;
	int status;             /* the answer once settled: 0 or ETABLENOTFOUND */
	char name[CATALOG_MAX_TABLE_NAME + 1];
	char (*ids)[CATALOG_MAX_TABLET_ID + 1];
	size_t n_ids;
	struct delete_call *calls;
	size_t outstanding;
};

static void drop_wait_free_if_done(struct drop_wait *dw)
{
	if (dw->call != NULL || dw->outstanding > 0 || dw->listed)
		return;
	dw->m->ops--;
	free(dw->ids);
	free(dw->calls);
	free(dw);
}

static void drop_wait_unlist(struct drop_wait *dw)
{
	struct drop_wait **p = &dw->m->drops;
	if (!dw->listed)
		return;
	while (*p != dw)
		p = &(*p)->next;
	*p = dw->next;
	dw->listed = false;
}

/* The tablets of dw not yet deleted on a majority of their replicas, as
 * a list in out (at most size bytes); their number. A tablet purged from
 * the catalog is deleted everywhere. */
static size_t drop_alive_tablets(const struct drop_wait *dw, char *out, size_t size)
{
	size_t n = 0, len = 0;
	if (size > 0)
		out[0] = '\0';
	for (size_t i = 0; i < dw->n_ids; i++) {
		const struct cat_tablet *tb = catalog_find_tablet(&dw->m->cat, dw->ids[i]);
		if (tb == NULL || tb->state != CAT_DELETED || deleted_on_majority(tb))
			continue;
		if (len < size) {
			int w = snprintf(out + len, size - len, "%s%s", n > 0 ? ", " : "", tb->id);
			len += w > 0 ? (size_t)w : 0;
		}
		n++;
	}
	return n;
}

static void drop_answer(struct drop_wait *dw, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void drop_answer(struct drop_wait *dw, int status, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	if (status == 0) {
		Docraft__DropTableResponse resp = DOCRAFT__DROP_TABLE_RESPONSE__INIT;
		rpc_reply_message(dw->call, &resp.base);
	} else {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		rpc_reply_error(dw->call, status, msg, NULL, 0);
	}
	dw->call = NULL;
	drop_wait_unlist(dw);
}

/* Answers dw if it is settled: every tablet deleted on a majority (its
 * status), leadership lost (ELEADERLOST), or the deadline passed and every
 * delete it sent answered (EUNAVAILABLE, the tablets named). Returns
 * whether it answered. */
static bool drop_check(struct drop_wait *dw)
{
	struct master *m = dw->m;
	char alive[512];
	size_t n;

	if (dw->call == NULL)
		return false;
	if (m->closing) {
		drop_answer(dw, DOCRAFT_ECLOSED, "master shutting down");
		return true;
	}
	if (dw->gen != m->gen) {
		drop_answer(dw, DOCRAFT_ELEADERLOST,
			    "drop table '%s': leadership lost while its tablets were being "
			    "deleted (the drop is committed); retry", dw->name);
		return true;
	}
	n = drop_alive_tablets(dw, alive, sizeof alive);
	if (n == 0) {
		if (dw->status == 0)
			LOG_INFO("master %s: table %s dropped, its tablets deleted on a majority",
				 m->address, dw->name);
		drop_answer(dw, dw->status, "table '%s' not found", dw->name);
		return true;
	}
	if (master_now_ms(m) >= dw->deadline_ms && dw->outstanding == 0) {
		LOG_WARN("master %s: drop table %s: tablets %s not deleted on a majority within "
			 "%" PRIu64 " ms", m->address, dw->name, alive, m->drop_timeout_ms);
		drop_answer(dw, DOCRAFT_EUNAVAILABLE,
			    "table '%s' is dropped but %zu of its tablets (%s) are not yet deleted "
			    "on a majority of their replicas; retry",
			    dw->name, n, alive);
		return true;
	}
	return false;
}

static void delete_rpc_done(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct delete_call *dc = (struct delete_call *)req;
	struct drop_wait *dw = dc->dw;
	struct master *m = dw->m;
	bool deleted = res->status == 0 || res->status == DOCRAFT_ETABLETNOTFOUND;

	dw->outstanding--;
	if (!deleted)
		LOG_WARN("master %s: delete tablet %s on %s: %s: %s (heartbeats will retry)",
			 m->address, dc->tablet_id, dc->address, docraft_strerror(res->status),
			 res->message);
	if (deleted && dw->gen == m->gen && !m->closing) {
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, dc->tablet_id);
		struct cat_replica *r = NULL;
		for (uint32_t k = 0; tb != NULL && tb->state == CAT_DELETED && k < tb->n_replicas;
		     k++)
			if (strcmp(tb->replicas[k].uuid, dc->uuid) == 0)
				r = &tb->replicas[k];
		if (r != NULL) {
			r->gone = true;
			ddl_maybe_purge(m, tb);
		}
	}
	drop_check(dw);
	drop_wait_free_if_done(dw);
}

/* Sends TSERVER_DELETE_TABLET to every replica of dw's tablets not known
 * deleted, in parallel. */
static void send_deletes(struct drop_wait *dw)
{
	struct master *m = dw->m;
	size_t n = 0, max = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t timeout = m->drop_timeout_ms < DELETE_TIMEOUT_MS ? m->drop_timeout_ms
								    : DELETE_TIMEOUT_MS;

	for (size_t i = 0; i < dw->n_ids; i++) {
		const struct cat_tablet *tb = catalog_find_tablet(&m->cat, dw->ids[i]);
		max += tb != NULL ? tb->n_replicas : 0;
	}
	dw->calls = xcalloc(max > 0 ? max : 1, sizeof *dw->calls);
	for (size_t i = 0; i < dw->n_ids; i++) {
		const struct cat_tablet *tb = catalog_find_tablet(&m->cat, dw->ids[i]);
		for (uint32_t k = 0; tb != NULL && k < tb->n_replicas; k++) {
			const struct cat_replica *r = &tb->replicas[k];
			Docraft__DeleteTabletRequest del = DOCRAFT__DELETE_TABLET_REQUEST__INIT;
			struct delete_call *dc = &dw->calls[n];
			if (r->gone)
				continue;
			dc->dw = dw;
			snprintf(dc->tablet_id, sizeof dc->tablet_id, "%s", tb->id);
			snprintf(dc->uuid, sizeof dc->uuid, "%s", r->uuid);
			snprintf(dc->address, sizeof dc->address, "%s", r->address);
			del.tablet_id = dc->tablet_id;
			if (rpc_call_message(&m->cl, r->address, DOCRAFT__METHOD__TSERVER_DELETE_TABLET,
					     &del.base, timeout, &dc->req, delete_rpc_done,
					     errmsg) != 0) {
				/* No callback: heartbeats are the fallback. */
				LOG_WARN("master %s: delete tablet %s on %s: %s", m->address,
					 tb->id, r->address, errmsg);
				continue;
			}
			n++;
			dw->outstanding++;
		}
	}
}

/* The deadline of dw: its tablets' first DropTable's (a client retrying
 * on the error gets it again once the deletes it sent again are answered,
 * not after another --drop-timeout-ms). */
static uint64_t drop_deadline(struct master *m, const struct drop_wait *dw)
{
	uint64_t now = master_now_ms(m), d = now;
	for (size_t i = 0; i < dw->n_ids; i++) {
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, dw->ids[i]);
		if (tb == NULL)
			continue;
		if (tb->drop_deadline_ms == 0)
			tb->drop_deadline_ms = now + m->drop_timeout_ms;
		if (tb->drop_deadline_ms > d)
			d = tb->drop_deadline_ms;
	}
	return d;
}

/* Answers call (a DropTable of name) once the dropped tablets of name are
 * deleted on a majority of their replicas, with status then (0 or
 * DOCRAFT_ETABLENOTFOUND), or with an error (drop_check). */
static void drop_wait_start(struct master *m, struct rpc_call *call, const char *name,
			    int status)
{
	struct drop_wait *dw = xcalloc(1, sizeof *dw);
	size_t n = 0;

	dw->m = m;
	dw->call = call;
	dw->gen = m->gen;
	dw->status = status;
	snprintf(dw->name, sizeof dw->name, "%s", name);
	for (size_t i = 0; i < m->cat.n_tablets; i++)
		n += m->cat.tablets[i]->state == CAT_DELETED &&
		     strcmp(m->cat.tablets[i]->table, name) == 0;
	dw->ids = xcalloc(n > 0 ? n : 1, sizeof *dw->ids);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->state == CAT_DELETED && strcmp(tb->table, name) == 0)
			snprintf(dw->ids[dw->n_ids++], sizeof dw->ids[0], "%s", tb->id);
	}
	dw->deadline_ms = drop_deadline(m, dw);
	m->ops++;
	if (!m->closing)
		send_deletes(dw);
	if (!drop_check(dw)) {
		dw->next = m->drops;
		m->drops = dw;
		dw->listed = true;
	}
	drop_wait_free_if_done(dw);
}

void ddl_drops_poll(struct master *m)
{
	struct drop_wait *dw = m->drops, *next;
	for (; dw != NULL; dw = next) {
		next = dw->next;
		if (drop_check(dw))
			drop_wait_free_if_done(dw);
	}
}

static void drop_written(struct cwrite *w, int status)
{
	struct table_op *op = (struct table_op *)w;
	struct master *m = w->m;
	struct cat_table *t = written_table(w, op->name, CAT_DELETING);

	if (status != 0) {
		if (t != NULL)
			t->state = CAT_RUNNING;
		reply_write_error(m, op->call, status, "drop table");
	} else if (t == NULL) {
		/* Committed, but the tablets are not known deleted: the client
		 * retries (its request id makes the next leader wait for them). */
		rpc_reply_errorf(op->call, m->closing ? DOCRAFT_ECLOSED : DOCRAFT_ELEADERLOST,
				 "drop table '%s': committed, but %s before its tablets were "
				 "deleted; retry", op->name,
				 m->closing ? "the master is shutting down" : "leadership was lost");
	} else {
		LOG_INFO("master %s: table %s dropped: deleting its tablets", m->address,
			 op->name);
		catalog_drop_table(&m->cat, t);
		if (op->has_ddl)
			catalog_put_ddl(&m->cat, &op->ddl);
		drop_wait_start(m, op->call, op->name, 0);
	}
	ddl_cwrite_free(w);
}

enum rpc_dispatch_req ddl_drop_table(void *ctx, struct rpc_call *call, void *request, void *obj)
{
	struct master *m = ctx;
	const Docraft__DropTableRequest *req = request;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_table *t;
	struct table_op *op;
	struct cat_ddl ddl;
	bool has_ddl, done;
	int rv;

	(void)obj;
	rv = check_request_id(m, &req->client_id, req->seq, CAT_DDL_DROP, req->name, &ddl,
			      &has_ddl, &done, errmsg);
	if (rv == 0 && done) {
		/* Its first result, once its tablets are deleted. */
		drop_wait_start(m, call, req->name, 0);
		return RPC_DISPATCH_FREE;
	}
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	t = catalog_find_table(&m->cat, req->name);
	if (t == NULL && dropped_alive(m, req->name) != NULL) {
		/* Dropped by another request, its tablets not deleted yet: a
		 * concurrent dropper (two FLUSHDBs) answered "not found" now
		 * could write to them through a stale cache. */
		drop_wait_start(m, call, req->name, DOCRAFT_ETABLENOTFOUND);
		return RPC_DISPATCH_FREE;
	}
	if (t == NULL) {
		rpc_reply_errorf(call, DOCRAFT_ETABLENOTFOUND, "table '%s' not found", req->name);
		return RPC_DISPATCH_FREE;
	}
	if (t->state != CAT_RUNNING) {
		rpc_reply_errorf(call, DOCRAFT_EBUSY, "table '%s' is being %s; retry", req->name,
				 t->state == CAT_CREATING ? "created" : "dropped");
		return RPC_DISPATCH_FREE;
	}
	for (size_t i = 0; i < t->n_tablets; i++)
		if (t->tablets[i]->move != NULL && t->tablets[i]->move->writing) {
			/* Its write could land after the drop's (moves.h). */
			rpc_reply_errorf(call, DOCRAFT_EBUSY,
					 "table '%s': a replica move of tablet %s is being "
					 "written; retry", req->name, t->tablets[i]->id);
			return RPC_DISPATCH_FREE;
		}
	op = xcalloc(1, sizeof *op);
	batch_init(&op->w.b);
	op->call = call;
	snprintf(op->name, sizeof op->name, "%s", t->name);
	op->has_ddl = has_ddl;
	op->ddl = ddl;
	rv = catalog_write_drop(&op->w.b, t, errmsg);
	if (rv == 0)
		rv = write_request_id(m, &op->w.b, &op->ddl, op->has_ddl, errmsg);
	if (rv == 0 && (rv = ddl_cwrite_submit(m, &op->w, drop_written)) != 0)
		err_set(errmsg, rv, "drop table: catalog write: %s", docraft_strerror(rv));
	if (rv != 0) {
		rpc_reply_error(call, rv, errmsg, NULL, 0);
		batch_free(&op->w.b);
		free(op);
		return RPC_DISPATCH_FREE;
	}
	m->ops++;
	t->state = CAT_DELETING;
	return RPC_DISPATCH_FREE;
}

/* ---- reads of the catalog -------------------------------------------------------------------- */

enum rpc_dispatch_req ddl_list_tables(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct master *m = ctx;
	Docraft__ListTablesResponse resp = DOCRAFT__LIST_TABLES_RESPONSE__INIT;
	struct arena a;

	(void)req;
	(void)obj;
	arena_init(&a);
	resp.tables = master_zalloc(&a, m->cat.n_tables * sizeof *resp.tables);
	for (size_t i = 0; i < m->cat.n_tables; i++)
		if (m->cat.tables[i]->state != CAT_CREATING)
			resp.tables[resp.n_tables++] = m->cat.tables[i]->schema;
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}

enum rpc_dispatch_req ddl_get_table(void *ctx, struct rpc_call *call, void *request, void *obj)
{
	struct master *m = ctx;
	const Docraft__GetTableRequest *req = request;
	Docraft__GetTableResponse resp = DOCRAFT__GET_TABLE_RESPONSE__INIT;
	struct cat_table *t;
	struct arena a;
	uint64_t now = master_now_ms(m);

	(void)obj;
	t = catalog_find_table(&m->cat, req->name);
	if (t == NULL || t->state == CAT_CREATING) {
		rpc_reply_errorf(call, DOCRAFT_ETABLENOTFOUND, "table '%s' not found", req->name);
		return RPC_DISPATCH_FREE;
	}
	arena_init(&a);
	resp.schema = t->schema;
	resp.table_id = t->id;
	resp.n_tablets = t->n_tablets;
	resp.tablets = master_zalloc(&a, t->n_tablets * sizeof *resp.tablets);
	for (size_t i = 0; i < t->n_tablets; i++) {
		struct cat_tablet *tb = t->tablets[i];
		const struct cat_replica *leader =
			catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		Docraft__TabletLocation *loc = master_zalloc(&a, sizeof *loc);
		docraft__tablet_location__init(loc);
		loc->tablet_id = (char *)tb->id;
		loc->start = tb->start;
		loc->end = tb->end;
		loc->n_replicas = tb->n_replicas;
		loc->replicas = peers_pb(&m->cat, tb, &a);
		loc->leader_raft_id = leader != NULL ? leader->raft_id : 0;
		loc->live_replicas = moves_live_replicas(m, tb, now);
		loc->under_replicated = loc->live_replicas < t->rf;
		if (tb->move != NULL) {
			loc->move = master_zalloc(&a, MOVES_DESCRIBE_MAX);
			moves_describe(tb, loc->move, MOVES_DESCRIBE_MAX);
		}
		resp.tablets[i] = loc;
	}
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}
