/* The admin commands of the docraft CLI (docraft.h: docraft_admin_*):
 * master listings printed as tables, and tablet calls routed like data
 * calls (step-down follows NOT_LEADER hints to the leader; dump goes to
 * the leader or to the replica named; checksums ask every replica).
 *
 * A tablet is named by its id alone; its table is found by listing the
 * tables and looking into each (tablet ids start with their table's name,
 * so that table is tried first). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin.h"
#include "client/internal.h"
#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"
#include "rpc.pb-c.h"

void admin_out(const docraft_printer *p, struct buf *b)
{
	if (p != NULL && p->out != NULL && b->len > 0)
		p->out(p->arg, (const char *)b->data, b->len);
}

void admin_table_init(struct admin_table *t, size_t ncols, const char *const *header)
{
	t->ncols = ncols;
	t->nrows = 0;
	t->cells = xcalloc(ncols, sizeof *t->cells);
	for (size_t j = 0; j < ncols; j++)
		t->cells[j] = xstrdup(header[j]);
}

void admin_table_row(struct admin_table *t, char **row)
{
	char **cells = xrealloc(t->cells, (t->nrows + 2) * t->ncols * sizeof *cells);
	t->cells = cells;
	t->nrows++;
	memcpy(&t->cells[t->nrows * t->ncols], row, t->ncols * sizeof *row);
}

void admin_table_format(struct admin_table *t, struct buf *b)
{
	size_t *w = xcalloc(t->ncols, sizeof *w);
	for (size_t i = 0; i <= t->nrows; i++)
		for (size_t j = 0; j < t->ncols; j++) {
			size_t n = strlen(t->cells[i * t->ncols + j]);
			if (n > w[j])
				w[j] = n;
		}
	for (size_t i = 0; i <= t->nrows; i++) {
		for (size_t j = 0; j < t->ncols; j++) {
			const char *s = t->cells[i * t->ncols + j];
			if (j + 1 < t->ncols)
				buf_printf(b, "%-*s  ", (int)w[j], s);
			else
				buf_printf(b, "%s", s);
		}
		buf_printf(b, "\n");
	}
	for (size_t i = 0; i < (t->nrows + 1) * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(w);
}

char *admin_fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		PANIC("out of memory");
	va_end(ap);
	return s;
}

ProtobufCMessage *admin_answer(int *rv, struct buf *reply, const ProtobufCMessageDescriptor *desc,
			       const char *method)
{
	ProtobufCMessage *m = NULL;
	if (*rv == 0) {
		m = protobuf_c_message_unpack(desc, NULL, reply->len, reply->data);
		if (m == NULL)
			*rv = client_error(DOCRAFT_ECORRUPT, "%s answer does not decode", method);
	}
	buf_free(reply);
	return m;
}

const char *admin_tserver_state(const Docraft__TServerInfo *ts)
{
	if (ts->state != NULL && ts->state[0] != '\0')
		return ts->state;
	return ts->live ? "live" : "unreachable";
}

void admin_format_tservers(Docraft__TServerInfo *const *ts, size_t n, struct buf *out)
{
	static const char *const header[] = {"UUID",	  "ADDRESS", "LIVE",	  "HEARTBEAT", "REPLICAS",
					     "LEADERS", "STATE",   "PLACEMENT", "DRAIN",	   "MOVES"};
	struct admin_table t;
	admin_table_init(&t, 10, header);
	for (size_t i = 0; i < n; i++) {
		char *row[10];
		row[0] = admin_fmt("%s", ts[i]->uuid);
		row[1] = admin_fmt("%s", ts[i]->address);
		row[2] = admin_fmt("%s", ts[i]->live ? "yes" : "NO");
		row[3] = admin_fmt("%" PRIu64 " ms ago", ts[i]->last_heartbeat_ms_ago);
		row[4] = admin_fmt("%u", ts[i]->tablets);
		row[5] = admin_fmt("%u", ts[i]->leaders);
		row[6] = admin_fmt("%s", admin_tserver_state(ts[i]));
		row[7] = admin_fmt("%s", ts[i]->placement != NULL && ts[i]->placement[0] != '\0'
						 ? ts[i]->placement
						 : "-");
		row[8] = admin_fmt("%s", ts[i]->drained ? "drained" : ts[i]->draining ? "draining" : "-");
		row[9] = admin_fmt("%u", ts[i]->moves);
		admin_table_row(&t, row);
	}
	admin_table_format(&t, out);
}

int docraft_admin_tservers(docraft_client *c, const docraft_printer *p)
{
	Docraft__ListTServersRequest req = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
	Docraft__ListTServersResponse *resp;
	struct buf reply = BUF_INIT, b = BUF_INIT;
	int rv;

	if (c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_LIST_TSERVERS, &req.base, &reply);
	resp = (Docraft__ListTServersResponse *)admin_answer(
		&rv, &reply, &docraft__list_tservers_response__descriptor, "ListTServers");
	if (resp == NULL)
		return rv;
	admin_format_tservers(resp->tservers, resp->n_tservers, &b);
	admin_out(p, &b);
	buf_free(&b);
	docraft__list_tservers_response__free_unpacked(resp, NULL);
	return 0;
}

static const char *type_text(const Docraft__ColumnSchema *c, char *buf, size_t size)
{
	if (c->type == DOCRAFT__COLUMN_TYPE__MAP)
		snprintf(buf, size, "map<%s, %s>", col_type_name((enum col_type)c->elem_type),
			 col_type_name((enum col_type)c->value_type));
	else if (c->type == DOCRAFT__COLUMN_TYPE__SET || c->type == DOCRAFT__COLUMN_TYPE__LIST)
		snprintf(buf, size, "%s<%s>", c->type == DOCRAFT__COLUMN_TYPE__SET ? "set" : "list",
			 col_type_name((enum col_type)c->elem_type));
	else
		snprintf(buf, size, "%s", col_type_name((enum col_type)c->type));
	return buf;
}

void admin_format_table(const Docraft__TableSchema *s, struct buf *b)
{
	char tb[64];
	size_t nh = 0, nr = 0, ndesc = 0;
	unsigned db;
	if (s->redis) {
		buf_printf(b, "-- %s: a Redis database", s->name);
		if (sscanf(s->name, "redis_%u", &db) == 1)
			buf_printf(b, " (Redis SELECT %u)", db);
		buf_printf(b, ": key -> typed value (string, hash, set, sorted set, list or time "
			      "series, each with its TTL), written with a Redis client; SELECT * "
			      "lists it as (key, type, ttl, value)");
		return;
	}
	buf_printf(b, "CREATE TABLE %s (", s->name);
	for (size_t i = 0; i < s->n_columns; i++)
		buf_printf(b, "%s%s %s", i ? ", " : "", s->columns[i]->name,
			   type_text(s->columns[i], tb, sizeof tb));
	buf_printf(b, ", PRIMARY KEY ((");
	for (size_t i = 0; i < s->n_columns; i++)
		if (s->columns[i]->kind == DOCRAFT__COLUMN_KIND__HASH)
			buf_printf(b, "%s%s", nh++ ? ", " : "", s->columns[i]->name);
	buf_printf(b, ")");
	for (size_t i = 0; i < s->n_columns; i++)
		if (s->columns[i]->kind == DOCRAFT__COLUMN_KIND__RANGE) {
			buf_printf(b, ", %s", s->columns[i]->name);
			nr++;
			ndesc += s->columns[i]->desc;
		}
	buf_printf(b, "))");
	if (ndesc > 0) {
		size_t k = 0;
		buf_printf(b, " WITH CLUSTERING ORDER BY (");
		for (size_t i = 0; i < s->n_columns; i++)
			if (s->columns[i]->kind == DOCRAFT__COLUMN_KIND__RANGE)
				buf_printf(b, "%s%s %s", k++ ? ", " : "", s->columns[i]->name,
					   s->columns[i]->desc ? "DESC" : "ASC");
		buf_printf(b, ")");
	}
	if (s->default_ttl_ms > 0)
		buf_printf(b, " %s default_time_to_live = %" PRId64, ndesc ? "AND" : "WITH",
			   s->default_ttl_ms / 1000);
	buf_printf(b, ";");
	(void)nr;
}

int admin_list_tables(docraft_client *c, Docraft__ListTablesResponse **out)
{
	Docraft__ListTablesRequest req = DOCRAFT__LIST_TABLES_REQUEST__INIT;
	struct buf reply = BUF_INIT;
	int rv;
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_LIST_TABLES, &req.base, &reply);
	*out = (Docraft__ListTablesResponse *)admin_answer(
		&rv, &reply, &docraft__list_tables_response__descriptor, "ListTables");
	if (*out == NULL)
		return rv;
	return 0;
}

int docraft_admin_tables(docraft_client *c, const docraft_printer *p)
{
	Docraft__ListTablesResponse *resp;
	struct buf b = BUF_INIT;
	int rv;
	if (c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = admin_list_tables(c, &resp)) != 0)
		return rv;
	for (size_t i = 0; i < resp->n_tables; i++) {
		admin_format_table(resp->tables[i], &b);
		buf_printf(&b, "\n");
	}
	if (resp->n_tables == 0)
		buf_printf(&b, "(no tables)\n");
	admin_out(p, &b);
	buf_free(&b);
	docraft__list_tables_response__free_unpacked(resp, NULL);
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const Docraft__TabletLocation *x = *(Docraft__TabletLocation *const *)a;
	const Docraft__TabletLocation *y = *(Docraft__TabletLocation *const *)b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The table's GetTable answer, its tablets sorted by partition start. */
static int get_table(docraft_client *c, const char *table, Docraft__GetTableResponse **out)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	struct buf reply = BUF_INIT;
	int rv;
	req.name = (char *)table;
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &reply);
	*out = (Docraft__GetTableResponse *)admin_answer(
		&rv, &reply, &docraft__get_table_response__descriptor, "GetTable");
	if (*out == NULL)
		return rv;
	qsort((*out)->tablets, (*out)->n_tablets, sizeof *(*out)->tablets, by_start);
	return 0;
}

/* The STATUS cell of a tablet (admin_format_tablets). */
static char *tablet_status(const Docraft__TabletLocation *loc)
{
	struct buf b = BUF_INIT;
	char *s;
	if (loc->leader_raft_id == 0)
		buf_printf(&b, "leaderless");
	if (loc->under_replicated)
		buf_printf(&b, "%sunder-replicated(live=%u)", b.len ? "," : "", loc->live_replicas);
	if (loc->move != NULL && loc->move[0] != '\0')
		buf_printf(&b, "%smoving", b.len ? "," : "");
	s = xstrdup(b.len ? buf_cstr(&b) : "ok");
	buf_free(&b);
	return s;
}

void admin_format_tablets(const Docraft__GetTableResponse *resp, struct buf *out)
{
	static const char *const header[] = {"TABLET", "PARTITION", "LEADER", "STATUS", "REPLICAS"};
	struct admin_table t;
	size_t moving = 0;

	admin_table_init(&t, 5, header);
	for (size_t i = 0; i < resp->n_tablets; i++) {
		const Docraft__TabletLocation *loc = resp->tablets[i];
		struct buf reps = BUF_INIT;
		const char *leader = "(none)";
		char *row[5];
		for (size_t j = 0; j < loc->n_replicas; j++) {
			const Docraft__Peer *peer = loc->replicas[j];
			bool is_leader = peer->raft_id == loc->leader_raft_id;
			if (is_leader)
				leader = peer->address;
			buf_printf(&reps, "%s%" PRIu64 "@%s%s%s", j ? " " : "", peer->raft_id,
				   peer->address, is_leader ? "*" : "",
				   peer->voter ? "" : "(learner)");
		}
		row[0] = admin_fmt("%s", loc->tablet_id);
		row[1] = admin_fmt("[0x%04x, 0x%04x)", loc->start, loc->end);
		row[2] = admin_fmt("%s", leader);
		row[3] = tablet_status(loc);
		row[4] = admin_fmt("%s", buf_cstr(&reps));
		buf_free(&reps);
		admin_table_row(&t, row);
		moving += loc->move != NULL && loc->move[0] != '\0';
	}
	admin_table_format(&t, out);
	if (moving == 0)
		return;
	buf_printf(out, "moves in progress:\n");
	for (size_t i = 0; i < resp->n_tablets; i++)
		if (resp->tablets[i]->move != NULL && resp->tablets[i]->move[0] != '\0')
			buf_printf(out, "  %s  %s\n", resp->tablets[i]->tablet_id,
				   resp->tablets[i]->move);
}

int docraft_admin_tablets(docraft_client *c, const char *table, const docraft_printer *p)
{
	Docraft__GetTableResponse *resp;
	struct buf b = BUF_INIT;
	int rv;

	if (c == NULL || table == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = get_table(c, table, &resp)) != 0)
		return rv;
	admin_format_tablets(resp, &b);
	admin_out(p, &b);
	buf_free(&b);
	docraft__get_table_response__free_unpacked(resp, NULL);
	return 0;
}

/* The name of the table holding tablet_id, into out (malloc'd). */
/* The table holding tablet_id (*out, malloc'd); with replica not NULL,
 * also the raft id of the tablet's replica at that address (*raft_id). */
static int find_tablet(docraft_client *c, const char *tablet_id, const char *replica,
		       char **out, uint64_t *raft_id)
{
	Docraft__ListTablesResponse *tables;
	int rv;
	*out = NULL;
	if (raft_id != NULL)
		*raft_id = 0;
	if ((rv = admin_list_tables(c, &tables)) != 0)
		return rv;
	/* Ids are <table>-<i>-<suffix>: a table whose name prefixes the id
	 * goes first. */
	for (int pass = 0; pass < 2 && *out == NULL && rv == 0; pass++)
		for (size_t i = 0; i < tables->n_tables && *out == NULL; i++) {
			const char *name = tables->tables[i]->name;
			size_t n = strlen(name);
			bool prefix = strncmp(tablet_id, name, n) == 0 && tablet_id[n] == '-';
			Docraft__GetTableResponse *resp;
			if (prefix != (pass == 0))
				continue;
			if ((rv = get_table(c, name, &resp)) != 0) {
				if (rv == DOCRAFT_ETABLENOTFOUND || rv == DOCRAFT_ENOTFOUND) {
					rv = 0; /* dropped meanwhile */
					continue;
				}
				break;
			}
			for (size_t j = 0; j < resp->n_tablets; j++) {
				const Docraft__TabletLocation *loc = resp->tablets[j];
				if (strcmp(loc->tablet_id, tablet_id) != 0)
					continue;
				*out = xstrdup(name);
				for (size_t k = 0; replica != NULL && k < loc->n_replicas; k++)
					if (strcmp(loc->replicas[k]->address, replica) == 0)
						*raft_id = loc->replicas[k]->raft_id;
			}
			docraft__get_table_response__free_unpacked(resp, NULL);
		}
	docraft__list_tables_response__free_unpacked(tables, NULL);
	if (rv == 0 && *out == NULL)
		rv = client_error(DOCRAFT_ENOTFOUND, "no tablet %s in any table", tablet_id);
	if (rv == 0 && replica != NULL && *raft_id == 0) {
		rv = client_error(DOCRAFT_EINVAL, "tablet %s has no replica at %s", tablet_id,
				  replica);
		free(*out);
		*out = NULL;
	}
	return rv;
}

/* Calls method on tablet_id, of whichever table holds it (on replica when
 * not NULL, else on its leader); the answer is appended to reply. */
static int call_tablet(docraft_client *c, const char *tablet_id, const char *replica,
		       uint16_t method, ProtobufCMessage *msg, char **tablet_id_field,
		       struct buf *reply)
{
	char *table;
	int rv;

	if (c == NULL || tablet_id == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = find_tablet(c, tablet_id, NULL, &table, NULL)) != 0)
		return rv;
	rv = client_tablet_call(c, table, tablet_id, replica, method, msg, tablet_id_field, reply);
	free(table);
	return rv;
}

int docraft_admin_step_down(docraft_client *c, const char *tablet_id, const docraft_printer *p)
{
	return docraft_admin_step_down_to(c, tablet_id, NULL, p);
}

int docraft_admin_step_down_to(docraft_client *c, const char *tablet_id, const char *to,
			       const docraft_printer *p)
{
	Docraft__StepDownRequest req = DOCRAFT__STEP_DOWN_REQUEST__INIT;
	struct buf reply = BUF_INIT, b = BUF_INIT;
	char *table;
	int rv;

	if (c == NULL || tablet_id == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = find_tablet(c, tablet_id, to, &table, &req.to_raft_id)) != 0)
		return rv;
	rv = client_tablet_call(c, table, tablet_id, NULL, DOCRAFT__METHOD__TSERVER_STEP_DOWN,
				&req.base, &req.tablet_id, &reply);
	free(table);
	if (rv == 0) {
		if (to != NULL)
			buf_printf(&b, "tablet %s: the leader handed over to %s\n", tablet_id, to);
		else
			buf_printf(&b, "tablet %s: the leader stepped down\n", tablet_id);
		admin_out(p, &b);
	}
	buf_free(&reply);
	buf_free(&b);
	return rv;
}

int docraft_admin_dump(docraft_client *c, const char *tablet_id, const char *replica,
		       const docraft_printer *p)
{
	Docraft__DumpTabletRequest req = DOCRAFT__DUMP_TABLET_REQUEST__INIT;
	Docraft__DumpTabletResponse *resp;
	struct buf reply = BUF_INIT, b = BUF_INIT;
	int rv = call_tablet(c, tablet_id, replica, DOCRAFT__METHOD__TSERVER_DUMP_TABLET, &req.base,
			     &req.tablet_id, &reply);

	resp = (Docraft__DumpTabletResponse *)admin_answer(
		&rv, &reply, &docraft__dump_tablet_response__descriptor, "DumpTablet");
	if (resp == NULL)
		return rv;
	buf_printf(&b, "%s", resp->text);
	if (b.len > 0 && b.data[b.len - 1] != '\n')
		buf_push(&b, '\n');
	admin_out(p, &b);
	buf_free(&b);
	docraft__dump_tablet_response__free_unpacked(resp, NULL);
	return 0;
}

/* ---- replica checksums ---------------------------------------------------------------- */

/* One replica's answer to TSERVER_CHECKSUM. */
struct ck_answer {
	int status; /* 0: answered */
	char msg[DOCRAFT_ERRMSG_SIZE];
	uint64_t checksum, rows, read_ht, applied_index;
};

/* Asks the replica at address for tablet_id's checksum at read_ht, with a
 * wait that fits in one attempt (so that a replica still catching up
 * answers "behind" rather than the attempt timing out; the call retries it
 * until the client's timeout). Fills *a; returns a->status. */
static int checksum_call(docraft_client *c, const char *table, const char *tablet_id,
			 const char *address, uint64_t read_ht, struct ck_answer *a)
{
	Docraft__ChecksumRequest req = DOCRAFT__CHECKSUM_REQUEST__INIT;
	Docraft__ChecksumResponse *resp;
	struct buf reply = BUF_INIT;
	uint32_t rpc_ms = c->opts.rpc_timeout_ms;

	memset(a, 0, sizeof *a);
	req.read_ht = read_ht;
	req.wait_ms = rpc_ms > 500 ? rpc_ms - 250 : rpc_ms / 2 + 1;
	a->status = client_tablet_call(c, table, tablet_id, address,
				       DOCRAFT__METHOD__TSERVER_CHECKSUM, &req.base, &req.tablet_id,
				       &reply);
	if (a->status != 0) {
		snprintf(a->msg, sizeof a->msg, "%s", docraft_errmsg());
	} else if ((resp = docraft__checksum_response__unpack(NULL, reply.len, reply.data)) ==
		   NULL) {
		a->status = DOCRAFT_ECORRUPT;
		snprintf(a->msg, sizeof a->msg, "Checksum answer does not decode");
	} else {
		a->checksum = resp->checksum;
		a->rows = resp->rows;
		a->read_ht = resp->read_ht;
		a->applied_index = resp->applied_index;
		docraft__checksum_response__free_unpacked(resp, NULL);
	}
	buf_free(&reply);
	return a->status;
}

static const char *replica_role(const Docraft__TabletLocation *loc, const Docraft__Peer *peer)
{
	if (loc->leader_raft_id != 0 && peer->raft_id == loc->leader_raft_id)
		return "leader";
	return peer->voter ? "follower" : "learner";
}

/* Prints replica k's line; remembers the first failure in unavail. */
static void checksum_line(const docraft_printer *p, const Docraft__TabletLocation *loc, size_t k,
			  const struct ck_answer *a, char *unavail, size_t unavail_size)
{
	const Docraft__Peer *peer = loc->replicas[k];
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s %s %s ", loc->tablet_id, peer->address, replica_role(loc, peer));
	if (a->status == 0) {
		buf_printf(&b, "rows=%" PRIu64 " checksum=%016" PRIx64 " applied=%" PRIu64
			   " read_ht=%" PRIu64 "\n", a->rows, a->checksum, a->applied_index,
			   a->read_ht);
	} else {
		buf_printf(&b, "UNAVAILABLE: %s: %s\n", docraft_strerror(a->status), a->msg);
		if (unavail[0] == '\0')
			snprintf(unavail, unavail_size, "replica %s of tablet %s did not answer: %s: %s",
				 peer->address, loc->tablet_id, docraft_strerror(a->status), a->msg);
	}
	admin_out(p, &b);
	buf_free(&b);
}

/* Checks one tablet. Every replica is asked at read_ht 0 (its own latest
 * applied write); the reference time is the newest of those, and a replica
 * that answered an older time is asked again at it (it waits until it has
 * applied that far). Not "the leader's time": the leader the master last
 * heard of may have handed over (leader balancing moves leaders) and lag
 * behind the last acknowledged write. Lines come in the order leader, then
 * the others. Returns whether every answer agrees with the reference;
 * failures are printed and noted in unavail. */
static bool checksum_tablet(docraft_client *c, const char *table,
			    const Docraft__TabletLocation *loc, const docraft_printer *p,
			    char *unavail, size_t unavail_size)
{
	size_t n = loc->n_replicas, ref = n;
	size_t *order = xcalloc(n + 1, sizeof *order);
	struct ck_answer *ans = xcalloc(n + 1, sizeof *ans);
	uint64_t at = 0;
	bool agree = true;
	size_t m = 0;

	/* The leader as the master knows it first, then the others in order. */
	for (size_t k = 0; k < n; k++)
		if (loc->leader_raft_id != 0 && loc->replicas[k]->raft_id == loc->leader_raft_id)
			order[m++] = k;
	for (size_t k = 0; k < n; k++)
		if (m == 0 || order[0] != k)
			order[m++] = k;
	for (size_t k = 0; k < n; k++)
		if (checksum_call(c, table, loc->tablet_id, loc->replicas[k]->address, 0,
				  &ans[k]) == 0 &&
		    ans[k].read_ht > at)
			at = ans[k].read_ht;
	for (size_t i = 0; i < n; i++) {
		size_t k = order[i];
		if (ans[k].status == 0 && ans[k].read_ht != at)
			checksum_call(c, table, loc->tablet_id, loc->replicas[k]->address, at,
				      &ans[k]);
		checksum_line(p, loc, k, &ans[k], unavail, unavail_size);
		if (ans[k].status != 0)
			continue;
		if (ref == n)
			ref = k;
		else if (ans[k].checksum != ans[ref].checksum || ans[k].rows != ans[ref].rows)
			agree = false;
	}
	free(order);
	free(ans);
	return agree;
}

int docraft_admin_checksum(docraft_client *c, const char *table, const docraft_printer *p)
{
	Docraft__GetTableResponse *resp;
	struct buf mismatch = BUF_INIT, b = BUF_INIT;
	char unavail[DOCRAFT_ERRMSG_SIZE + 256] = "";
	size_t nmismatch = 0;
	int rv;

	if (c == NULL || table == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = get_table(c, table, &resp)) != 0)
		return rv;
	for (size_t i = 0; i < resp->n_tablets; i++) {
		const Docraft__TabletLocation *loc = resp->tablets[i];
		if (!checksum_tablet(c, table, loc, p, unavail, sizeof unavail))
			buf_printf(&mismatch, "%s%s", nmismatch++ ? ", " : "", loc->tablet_id);
	}
	if (nmismatch > 0) {
		buf_printf(&b, "checksums: MISMATCH in tablet %s\n", buf_cstr(&mismatch));
		buf_printf(&b, "  (replicas differ at the same read time: run it again; if it "
			   "persists, compare `docraft dump TABLET REPLICA` of two replicas)\n");
		rv = DOCRAFT_ECORRUPT;
	} else if (unavail[0] != '\0') {
		buf_printf(&b, "checksums: INCOMPLETE: %s\n", unavail);
		buf_printf(&b, "  (a replica did not answer or has not applied up to the read time "
			   "yet: check it with `docraft tservers` and run the check again)\n");
		rv = DOCRAFT_EUNAVAILABLE;
	} else {
		buf_printf(&b, "checksums: %zu tablets, all replicas agree\n", resp->n_tablets);
	}
	admin_out(p, &b);
	if (rv == DOCRAFT_ECORRUPT)
		rv = client_error(rv, "table %s: replicas disagree in tablet %s%s%s", table,
				  buf_cstr(&mismatch), unavail[0] ? "; also: " : "", unavail);
	else if (rv == DOCRAFT_EUNAVAILABLE)
		rv = client_error(rv, "table %s: %s", table, unavail);
	buf_free(&b);
	buf_free(&mismatch);
	docraft__get_table_response__free_unpacked(resp, NULL);
	return rv;
}

/* ---- master membership ----------------------------------------------------------------------- */

int docraft_admin_masters(docraft_client *c, const docraft_printer *p)
{
	static const char *const header[] = {"ADDRESS", "RAFT_ID", "ROLE"};
	Docraft__ListMastersRequest req = DOCRAFT__LIST_MASTERS_REQUEST__INIT;
	Docraft__ListMastersResponse *resp;
	struct buf reply = BUF_INIT;
	struct buf b = BUF_INIT;
	struct admin_table t;
	int rv;

	if (c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_LIST_MASTERS, &req.base, &reply);
	resp = (Docraft__ListMastersResponse *)admin_answer(
		&rv, &reply, &docraft__list_masters_response__descriptor, "ListMasters");
	if (resp == NULL)
		return rv;
	admin_table_init(&t, 3, header);
	for (size_t i = 0; i < resp->n_masters; i++) {
		char *row[3];
		row[0] = admin_fmt("%s", resp->masters[i]);
		row[1] = i < resp->n_raft_ids ? admin_fmt("%" PRIu64, resp->raft_ids[i]) : admin_fmt("?");
		row[2] = admin_fmt("%s", strcmp(resp->masters[i], resp->leader) == 0 ? "leader"
									       : "follower");
		admin_table_row(&t, row);
	}
	admin_table_format(&t, &b);
	admin_out(p, &b);
	buf_free(&b);
	docraft__list_masters_response__free_unpacked(resp, NULL);
	return 0;
}

static int change_masters(docraft_client *c, Docraft__ChangeMastersRequest__Kind kind,
			  const char *address, const docraft_printer *p)
{
	Docraft__ChangeMastersRequest req = DOCRAFT__CHANGE_MASTERS_REQUEST__INIT;
	Docraft__ChangeMastersResponse *resp;
	struct buf reply = BUF_INIT;
	struct buf b = BUF_INIT;
	int rv;

	if (c == NULL || address == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	req.kind = kind;
	req.address = (char *)address;
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_CHANGE_MASTERS, &req.base, &reply);
	resp = (Docraft__ChangeMastersResponse *)admin_answer(
		&rv, &reply, &docraft__change_masters_response__descriptor, "ChangeMasters");
	if (resp == NULL)
		return rv;
	buf_printf(&b, "masters:");
	for (size_t i = 0; i < resp->n_masters; i++)
		buf_printf(&b, " %s", resp->masters[i]);
	buf_printf(&b, "\n");
	admin_out(p, &b);
	buf_free(&b);
	docraft__change_masters_response__free_unpacked(resp, NULL);
	return 0;
}

int docraft_admin_master_add(docraft_client *c, const char *address, const docraft_printer *p)
{
	return change_masters(c, DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD, address, p);
}

int docraft_admin_master_remove(docraft_client *c, const char *address, const docraft_printer *p)
{
	return change_masters(c, DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__REMOVE, address, p);
}
