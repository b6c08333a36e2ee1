/* The master's catalog (see catalog.h for the stored layout).
 *
 * Design. Everything is kept in three arrays of pointers sorted by their
 * string key (table name, tablet id, tserver uuid) and searched by
 * bisection: a catalog holds at most some thousands of tablets, lookups
 * (one per reported replica per heartbeat) are O(log n), and insertions,
 * which only CreateTable and loading do, may move the array. A table also
 * lists its own tablets in partition order, pointing at the same objects.
 *
 * Loading walks the store once: every DocKey in order, each document
 * rebuilt by reader_get_doc at the read time (so versions, tombstones and
 * init markers are resolved exactly as DocDB resolves them), then a seek
 * past that DocKey. Tables are added first, then tablets are attached to
 * them, then every table is checked to be complete: its tablets tile
 * [0, 65536) without gaps and their number is the one recorded. A tablet
 * marked running whose table document is gone cannot be produced by this
 * code (a drop writes both in one batch); it is loaded as deleted, with a
 * warning, so its replicas are cleaned up rather than leaked. */
#include "master/catalog.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docdb/value.h"

#define KIND_TABLE "table"
#define KIND_TABLET "tablet"
#define KIND_DDL "ddl"
#define KIND_MOVE "move"
#define KIND_DRAIN "drain"
#define KIND_MASTERS "masters"
#define DDL_CREATE "create"
#define DDL_DROP "drop"
#define STATE_RUNNING "running"
#define STATE_DELETED "deleted"

/* ---- sorted indexes -------------------------------------------------------------------------- */

/* For each kind of entry: find (bisection; *found says whether the key is
 * there, the index is where it is or would go), insert at an index, remove
 * at an index. */
#define DEFINE_INDEX(name, type, arr, n, cap, key)                                      \
	static size_t name##_find(const struct catalog *c, const char *k, bool *found)  \
	{                                                                                \
		size_t lo = 0, hi = c->n;                                                \
		while (lo < hi) {                                                        \
			size_t mid = lo + (hi - lo) / 2;                                 \
			int cmp = strcmp(c->arr[mid]->key, k);                           \
			if (cmp == 0) {                                                  \
				*found = true;                                           \
				return mid;                                              \
			}                                                                \
			if (cmp < 0)                                                     \
				lo = mid + 1;                                            \
			else                                                             \
				hi = mid;                                                \
		}                                                                        \
		*found = false;                                                          \
		return lo;                                                               \
	}                                                                                \
	static void name##_insert(struct catalog *c, size_t at, type *e)                \
	{                                                                                \
		if (c->n == c->cap) {                                                    \
			c->cap = c->cap ? 2 * c->cap : 16;                               \
			c->arr = xrealloc(c->arr, c->cap * sizeof *c->arr);              \
		}                                                                        \
		memmove(&c->arr[at + 1], &c->arr[at], (c->n - at) * sizeof *c->arr);    \
		c->arr[at] = e;                                                          \
		c->n++;                                                                  \
	}                                                                                \
	static __attribute__((unused)) void name##_erase(struct catalog *c, size_t at)  \
	{                                                                                \
		memmove(&c->arr[at], &c->arr[at + 1], (c->n - at - 1) * sizeof *c->arr); \
		c->n--;                                                                  \
	}

DEFINE_INDEX(table_idx, struct cat_table, tables, n_tables, cap_tables, name)
DEFINE_INDEX(tablet_idx, struct cat_tablet, tablets, n_tablets, cap_tablets, id)
DEFINE_INDEX(tserver_idx, struct cat_tserver, tservers, n_tservers, cap_tservers, uuid)
DEFINE_INDEX(ddl_idx, struct cat_ddl, ddl, n_ddl, cap_ddl, client)

/* ---- lifecycle ------------------------------------------------------------------------------- */

void catalog_init(struct catalog *c)
{
	memset(c, 0, sizeof *c);
}

void catalog_clear_tables(struct catalog *c)
{
	for (size_t i = 0; i < c->n_tables; i++) {
		/* Its tablets are freed below, with every other tablet. */
		c->tables[i]->n_tablets = 0;
		catalog_table_free(c->tables[i]);
	}
	for (size_t i = 0; i < c->n_tablets; i++) {
		free(c->tablets[i]->move);
		free(c->tablets[i]);
	}
	for (size_t i = 0; i < c->n_ddl; i++)
		free(c->ddl[i]);
	for (size_t i = 0; i < c->n_drains; i++)
		free(c->drains[i]);
	for (size_t i = 0; i < c->n_loading_moves; i++)
		free(c->loading_moves[i]);
	free(c->loading_moves);
	free(c->loading_move_ids);
	c->loading_moves = NULL;
	c->loading_move_ids = NULL;
	c->n_loading_moves = 0;
	memset(&c->masters, 0, sizeof c->masters);
	c->n_tables = 0;
	c->n_tablets = 0;
	c->n_ddl = 0;
	c->n_drains = 0;
}

void catalog_clear_tservers(struct catalog *c)
{
	for (size_t i = 0; i < c->n_tservers; i++)
		free(c->tservers[i]);
	c->n_tservers = 0;
}

void catalog_free(struct catalog *c)
{
	catalog_clear_tables(c);
	catalog_clear_tservers(c);
	free(c->tables);
	free(c->tablets);
	free(c->tservers);
	free(c->ddl);
	free(c->drains);
	memset(c, 0, sizeof *c);
}

/* ---- tables and tablets ---------------------------------------------------------------------- */

int catalog_check_table_name(const char *name, char *errmsg)
{
	size_t len = name != NULL ? strlen(name) : 0;
	if (len == 0 || len > CATALOG_MAX_TABLE_NAME)
		return err_set(errmsg, DOCRAFT_EINVAL, "table name must be 1..%d characters",
			       CATALOG_MAX_TABLE_NAME);
	if (!isalpha((unsigned char)name[0]) && name[0] != '_')
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table name '%s' must start with a letter or '_'", name);
	for (size_t i = 1; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '.')
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "table name '%s': only letters, digits, '_' and '.' allowed",
				       name);
	return 0;
}

int catalog_table_new(const char *name, const void *schema_pb, size_t schema_len, uint32_t rf,
		      struct cat_table **out, char *errmsg)
{
	struct cat_table *t;
	Docraft__TableSchema *s;
	int rv;

	*out = NULL;
	if ((rv = catalog_check_table_name(name, errmsg)) != 0)
		return rv;
	s = docraft__table_schema__unpack(NULL, schema_len, schema_pb);
	if (s == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s: schema does not decode", name);
	if (strcmp(s->name, name) != 0) {
		rv = err_set(errmsg, DOCRAFT_EINVAL, "table %s: schema names table '%s'", name,
			     s->name);
		docraft__table_schema__free_unpacked(s, NULL);
		return rv;
	}
	t = xcalloc(1, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->schema = s;
	t->schema_pb = xcalloc(schema_len, 1);
	if (schema_len > 0)
		memcpy(t->schema_pb, schema_pb, schema_len);
	t->schema_len = schema_len;
	t->rf = rf;
	t->state = CAT_CREATING;
	*out = t;
	return 0;
}

void catalog_table_free(struct cat_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n_tablets; i++) {
		free(t->tablets[i]->move);
		free(t->tablets[i]);
	}
	free(t->tablets);
	if (t->schema != NULL)
		docraft__table_schema__free_unpacked(t->schema, NULL);
	free(t->schema_pb);
	free(t);
}

struct cat_tablet *catalog_table_add_tablet(struct cat_table *t, const char *id, uint32_t start,
					    uint32_t end)
{
	struct cat_tablet *tb = xcalloc(1, sizeof *tb);
	PRE(strlen(id) <= CATALOG_MAX_TABLET_ID);
	snprintf(tb->id, sizeof tb->id, "%s", id);
	snprintf(tb->table, sizeof tb->table, "%s", t->name);
	tb->start = start;
	tb->end = end;
	tb->state = t->state;
	t->tablets = xrealloc(t->tablets, (t->n_tablets + 1) * sizeof *t->tablets);
	t->tablets[t->n_tablets++] = tb;
	return tb;
}

int catalog_add_table(struct catalog *c, struct cat_table *t, char *errmsg)
{
	bool found;
	size_t at = table_idx_find(c, t->name, &found);
	if (found)
		return err_set(errmsg, DOCRAFT_EINVAL, "table '%s' already exists", t->name);
	for (size_t i = 0; i < t->n_tablets; i++) {
		tablet_idx_find(c, t->tablets[i]->id, &found);
		if (found)
			return err_set(errmsg, DOCRAFT_EINVAL, "tablet '%s' already exists",
				       t->tablets[i]->id);
	}
	table_idx_insert(c, at, t);
	for (size_t i = 0; i < t->n_tablets; i++) {
		size_t k = tablet_idx_find(c, t->tablets[i]->id, &found);
		ASSERT(!found);
		tablet_idx_insert(c, k, t->tablets[i]);
	}
	return 0;
}

void catalog_set_table_state(struct cat_table *t, enum cat_state s)
{
	t->state = s;
	for (size_t i = 0; i < t->n_tablets; i++)
		t->tablets[i]->state = s;
}

/* Takes t out of the table index; its tablets stay indexed. */
static void unlink_table(struct catalog *c, struct cat_table *t)
{
	bool found;
	size_t at = table_idx_find(c, t->name, &found);
	PRE(found && c->tables[at] == t);
	table_idx_erase(c, at);
}

static void unlink_tablet(struct catalog *c, struct cat_tablet *tb)
{
	bool found;
	size_t at = tablet_idx_find(c, tb->id, &found);
	PRE(found && c->tablets[at] == tb);
	tablet_idx_erase(c, at);
}

void catalog_remove_table(struct catalog *c, struct cat_table *t)
{
	unlink_table(c, t);
	for (size_t i = 0; i < t->n_tablets; i++)
		unlink_tablet(c, t->tablets[i]);
	catalog_table_free(t);
}

void catalog_drop_table(struct catalog *c, struct cat_table *t)
{
	unlink_table(c, t);
	for (size_t i = 0; i < t->n_tablets; i++) {
		struct cat_tablet *tb = t->tablets[i];
		tb->state = CAT_DELETED;
		free(tb->move); /* its document went with the drop */
		tb->move = NULL;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			tb->replicas[k].leader = false;
			tb->replicas[k].up = false;
			tb->replicas[k].gone = false;
		}
	}
	t->n_tablets = 0; /* the tablets stay in the index */
	catalog_table_free(t);
}

void catalog_remove_tablet(struct catalog *c, struct cat_tablet *tb)
{
	PRE(tb->state == CAT_DELETED);
	unlink_tablet(c, tb);
	free(tb->move);
	free(tb);
}

struct cat_table *catalog_find_table(const struct catalog *c, const char *name)
{
	bool found;
	size_t at = table_idx_find(c, name, &found);
	return found ? c->tables[at] : NULL;
}

struct cat_tablet *catalog_find_tablet(const struct catalog *c, const char *id)
{
	bool found;
	size_t at = tablet_idx_find(c, id, &found);
	return found ? c->tablets[at] : NULL;
}

/* ---- persistence: writing -------------------------------------------------------------------- */

/* DocKey(kind, name): no hash, two string range components. */
static void doc_key(struct buf *out, const char *kind, const char *name)
{
	struct pv comps[2] = {pv_str(kind), pv_str(name)};
	struct dockey d = {false, 0, 0, 2, NULL, comps};
	buf_reset(out);
	dockey_append(out, &d);
}

static struct subdoc leaf(struct pv v)
{
	struct subdoc d;
	memset(&d, 0, sizeof d);
	d.value = v;
	return d;
}

static struct subdoc object(const struct pv *keys, const struct subdoc *children, size_t n)
{
	struct subdoc d;
	memset(&d, 0, sizeof d);
	d.is_object = 1;
	d.keys = keys;
	d.children = children;
	d.n = n;
	return d;
}

/* One catalog change appended to a batch: the docwrite over it and the
 * DocKey being written. change_end restores the batch if the change
 * failed, so a caller's batch holds whole changes only. */
struct change {
	struct docwrite w;
	struct buf dk;
	struct batch *b;
	size_t len;     /* the batch before the change */
	uint32_t count;
};

static void change_begin(struct change *ch, struct batch *b)
{
	docwrite_init(&ch->w, NULL, b, NULL);
	buf_init(&ch->dk);
	ch->b = b;
	ch->len = b->data.len;
	ch->count = b->count;
}

/* Ends the change; rv its outcome: on error the batch is restored and
 * errmsg gets the reason. Returns rv. */
static int change_end(struct change *ch, int rv, char *errmsg)
{
	if (rv != 0) {
		ch->b->data.len = ch->len;
		ch->b->count = ch->count;
		err_set(errmsg, rv, "catalog write: %s", ch->w.errmsg);
	}
	docwrite_free(&ch->w);
	buf_free(&ch->dk);
	return rv;
}

/* Writes the document (kind, name) whole, replacing any older version. */
static int put_doc(struct change *ch, const char *kind, const char *name,
		   const struct subdoc *doc)
{
	doc_key(&ch->dk, kind, name);
	return docwrite_insert_subdoc(&ch->w, ch->dk.data, ch->dk.len, NULL, 0, doc);
}

/* Deletes the document (kind, name). */
static int delete_doc(struct change *ch, const char *kind, const char *name)
{
	doc_key(&ch->dk, kind, name);
	return docwrite_delete_path(&ch->w, ch->dk.data, ch->dk.len, NULL, 0);
}

static int write_tablet(struct change *ch, const struct cat_tablet *tb, const char *state)
{
	struct pv rkeys[CATALOG_MAX_REPLICAS];
	struct subdoc rdocs[CATALOG_MAX_REPLICAS];
	struct pv pkeys[CATALOG_MAX_REPLICAS][3];
	struct subdoc pdocs[CATALOG_MAX_REPLICAS][3];
	struct pv keys[6] = {pv_str("table"), pv_str("start"), pv_str("end"), pv_str("state"),
			     pv_str("replicas"), pv_str("next_raft_id")};
	struct subdoc children[6];
	struct subdoc doc;

	PRE(tb->n_replicas <= CATALOG_MAX_REPLICAS);
	for (uint32_t k = 0; k < tb->n_replicas; k++) {
		const struct cat_replica *r = &tb->replicas[k];
		pkeys[k][0] = pv_str("uuid");
		pdocs[k][0] = leaf(pv_str(r->uuid));
		pkeys[k][1] = pv_str("address");
		pdocs[k][1] = leaf(pv_str(r->address));
		pkeys[k][2] = pv_str("joining");
		pdocs[k][2] = leaf(pv_bool(true));
		rkeys[k] = pv_uint64(r->raft_id);
		rdocs[k] = object(pkeys[k], pdocs[k], r->joining ? 3 : 2);
	}
	children[0] = leaf(pv_str(tb->table));
	children[1] = leaf(pv_uint32(tb->start));
	children[2] = leaf(pv_uint32(tb->end));
	children[3] = leaf(pv_str(state));
	children[4] = object(rkeys, rdocs, tb->n_replicas);
	children[5] = leaf(pv_uint64(tb->next_raft_id));
	doc = object(keys, children, tb->next_raft_id != 0 ? 6 : 5);
	return put_doc(ch, KIND_TABLET, tb->id, &doc);
}

int catalog_write_table(struct batch *b, const struct cat_table *t, char *errmsg)
{
	struct pv keys[4] = {pv_str("schema"), pv_str("rf"), pv_str("tablets"), pv_str("id")};
	struct subdoc children[4];
	struct subdoc doc;
	struct change ch;
	int rv;

	change_begin(&ch, b);
	children[0] = leaf(pv_strn(t->schema_pb, t->schema_len));
	children[1] = leaf(pv_uint32(t->rf));
	children[2] = leaf(pv_uint32((uint32_t)t->n_tablets));
	children[3] = leaf(pv_str(t->id));
	doc = object(keys, children, t->id[0] != '\0' ? 4 : 3);
	rv = put_doc(&ch, KIND_TABLE, t->name, &doc);
	for (size_t i = 0; rv == 0 && i < t->n_tablets; i++)
		rv = write_tablet(&ch, t->tablets[i], STATE_RUNNING);
	return change_end(&ch, rv, errmsg);
}

int catalog_write_drop(struct batch *b, const struct cat_table *t, char *errmsg)
{
	struct pv state = pv_str("state");
	struct docvalue deleted = docvalue_of(pv_str(STATE_DELETED));
	struct change ch;
	int rv;

	change_begin(&ch, b);
	rv = delete_doc(&ch, KIND_TABLE, t->name);
	for (size_t i = 0; rv == 0 && i < t->n_tablets; i++) {
		doc_key(&ch.dk, KIND_TABLET, t->tablets[i]->id);
		rv = docwrite_put_path(&ch.w, ch.dk.data, ch.dk.len, &state, 1, &deleted);
		/* A move in flight ends with its table. */
		if (rv == 0 && t->tablets[i]->move != NULL)
			rv = delete_doc(&ch, KIND_MOVE, t->tablets[i]->id);
	}
	return change_end(&ch, rv, errmsg);
}

int catalog_write_purge(struct batch *b, const struct cat_tablet *tb, char *errmsg)
{
	struct change ch;

	change_begin(&ch, b);
	return change_end(&ch, delete_doc(&ch, KIND_TABLET, tb->id), errmsg);
}

int catalog_write_tablet(struct batch *b, const struct cat_tablet *tb, char *errmsg)
{
	struct change ch;

	PRE(tb->state == CAT_RUNNING);
	change_begin(&ch, b);
	return change_end(&ch, write_tablet(&ch, tb, STATE_RUNNING), errmsg);
}

int catalog_write_move(struct batch *b, const struct cat_tablet *tb, char *errmsg)
{
	const struct cat_move *mv = tb->move;
	struct pv keys[9] = {pv_str("reason"),     pv_str("from_raft_id"), pv_str("from_uuid"),
			     pv_str("from_address"), pv_str("to_uuid"),     pv_str("to_address"),
			     pv_str("new_raft_id"), pv_str("step"),         pv_str("started_ms")};
	struct subdoc children[9];
	struct subdoc doc;
	struct change ch;

	PRE(mv != NULL);
	change_begin(&ch, b);
	children[0] = leaf(pv_str(mv->reason));
	children[1] = leaf(pv_uint64(mv->from_raft_id));
	children[2] = leaf(pv_str(mv->from_uuid));
	children[3] = leaf(pv_str(mv->from_address));
	children[4] = leaf(pv_str(mv->to_uuid));
	children[5] = leaf(pv_str(mv->to_address));
	children[6] = leaf(pv_uint64(mv->new_raft_id));
	children[7] = leaf(pv_str(catalog_move_step_name(mv->step)));
	children[8] = leaf(pv_uint64(mv->started_ms));
	doc = object(keys, children, 9);
	return change_end(&ch, put_doc(&ch, KIND_MOVE, tb->id, &doc), errmsg);
}

int catalog_write_move_delete(struct batch *b, const char *id, char *errmsg)
{
	struct change ch;

	change_begin(&ch, b);
	return change_end(&ch, delete_doc(&ch, KIND_MOVE, id), errmsg);
}

int catalog_write_drain(struct batch *b, const char *uuid, bool on, uint64_t at_ms,
			char *errmsg)
{
	struct pv key = pv_str("at_ms");
	struct subdoc child_doc = leaf(pv_uint64(at_ms));
	struct subdoc doc = object(&key, &child_doc, 1);
	struct change ch;

	change_begin(&ch, b);
	return change_end(&ch, on ? put_doc(&ch, KIND_DRAIN, uuid, &doc)
				  : delete_doc(&ch, KIND_DRAIN, uuid),
			  errmsg);
}

/* ---- moves and drains ------------------------------------------------------------------------ */

static const char *const step_names[] = {"adding", "removing", "rolling-back"};

const char *catalog_move_step_name(enum cat_move_step s)
{
	return (size_t)s < sizeof step_names / sizeof step_names[0] ? step_names[s] : "?";
}

struct cat_replica *catalog_replica(struct cat_tablet *tb, uint64_t id)
{
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		if (tb->replicas[k].raft_id == id)
			return &tb->replicas[k];
	return NULL;
}

static size_t drain_find(const struct catalog *c, const char *uuid, bool *found)
{
	size_t lo = 0, hi = c->n_drains;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(c->drains[mid], uuid);
		if (cmp == 0) {
			*found = true;
			return mid;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

bool catalog_draining(const struct catalog *c, const char *uuid)
{
	bool found;
	drain_find(c, uuid, &found);
	return found;
}

void catalog_set_drain(struct catalog *c, const char *uuid, bool on)
{
	bool found;
	size_t at = drain_find(c, uuid, &found);
	if (on && !found) {
		if (c->n_drains == c->cap_drains) {
			c->cap_drains = c->cap_drains ? 2 * c->cap_drains : 8;
			c->drains = xrealloc(c->drains, c->cap_drains * sizeof *c->drains);
		}
		memmove(&c->drains[at + 1], &c->drains[at], (c->n_drains - at) * sizeof *c->drains);
		c->drains[at] = xstrdup(uuid);
		c->n_drains++;
	} else if (!on && found) {
		free(c->drains[at]);
		memmove(&c->drains[at], &c->drains[at + 1],
			(c->n_drains - at - 1) * sizeof *c->drains);
		c->n_drains--;
	}
}

/* ---- DDL request ids ------------------------------------------------------------------------- */

void catalog_ddl_set(struct cat_ddl *d, const uint8_t *id, uint64_t seq, enum cat_ddl_op op,
		     const char *table, uint64_t at_ms)
{
	memset(d, 0, sizeof *d);
	for (size_t i = 0; i < CATALOG_DDL_ID_LEN; i++)
		snprintf(d->client + 2 * i, 3, "%02x", id[i]);
	d->seq = seq;
	d->op = op;
	snprintf(d->table, sizeof d->table, "%s", table);
	d->at_ms = at_ms;
}

const struct cat_ddl *catalog_find_ddl(const struct catalog *c, const char *client)
{
	bool found;
	size_t at = ddl_idx_find(c, client, &found);
	return found ? c->ddl[at] : NULL;
}

void catalog_put_ddl(struct catalog *c, const struct cat_ddl *d)
{
	bool found;
	size_t at = ddl_idx_find(c, d->client, &found);
	if (!found)
		ddl_idx_insert(c, at, xcalloc(1, sizeof *d));
	*c->ddl[at] = *d;
}

int catalog_write_ddl(struct batch *b, const struct cat_ddl *d, char *errmsg)
{
	struct pv keys[4] = {pv_str("seq"), pv_str("op"), pv_str("table"), pv_str("at_ms")};
	struct subdoc children[4];
	struct subdoc doc;
	struct change ch;

	change_begin(&ch, b);
	children[0] = leaf(pv_uint64(d->seq));
	children[1] = leaf(pv_str(d->op == CAT_DDL_CREATE ? DDL_CREATE : DDL_DROP));
	children[2] = leaf(pv_str(d->table));
	children[3] = leaf(pv_uint64(d->at_ms));
	doc = object(keys, children, 4);
	return change_end(&ch, put_doc(&ch, KIND_DDL, d->client, &doc), errmsg);
}

int catalog_purge_ddl(struct catalog *c, struct batch *b, uint64_t now_ms, char *errmsg)
{
	size_t purged = 0;
	int rv = 0;
	if (now_ms < CATALOG_DDL_TTL_MS)
		return 0;
	for (size_t i = 0; i < c->n_ddl && purged < CATALOG_DDL_PURGE_MAX;) {
		struct change ch;
		if (c->ddl[i]->at_ms >= now_ms - CATALOG_DDL_TTL_MS) {
			i++;
			continue;
		}
		change_begin(&ch, b);
		rv = change_end(&ch, delete_doc(&ch, KIND_DDL, c->ddl[i]->client), errmsg);
		if (rv != 0)
			return rv;
		free(c->ddl[i]);
		ddl_idx_erase(c, i);
		purged++;
	}
	return rv;
}

int catalog_write_masters(struct batch *b, const struct cat_masters *ms, char *errmsg)
{
	struct pv mkeys[CATALOG_MAX_MASTERS];
	struct subdoc mdocs[CATALOG_MAX_MASTERS];
	struct pv keys[2] = {pv_str("next_id"), pv_str("members")};
	struct subdoc children[2];
	struct subdoc doc;
	struct change ch;

	PRE(ms->n <= CATALOG_MAX_MASTERS);
	for (size_t i = 0; i < ms->n; i++) {
		mkeys[i] = pv_uint64(ms->ids[i]);
		mdocs[i] = leaf(pv_str(ms->addresses[i]));
	}
	children[0] = leaf(pv_uint64(ms->next_id));
	children[1] = object(mkeys, mdocs, ms->n);
	doc = object(keys, children, 2);
	change_begin(&ch, b);
	return change_end(&ch, put_doc(&ch, KIND_MASTERS, "config", &doc), errmsg);
}

/* ---- persistence: loading -------------------------------------------------------------------- */

static const struct docnode *child(const struct docnode *n, const char *key)
{
	struct pv k = pv_str(key);
	return docnode_child(n, &k);
}

/* The primitive value of type at key; NULL (errmsg set) when it is missing
 * or of another type. */
static const struct docnode *primitive(const struct docnode *n, const char *key,
				       enum pv_type type, const char *what, char *errmsg)
{
	const struct docnode *c = child(n, key);
	if (c != NULL && c->kind == VAL_PRIMITIVE && c->value.type == type)
		return c;
	err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: bad or missing '%s'", what, key);
	return NULL;
}

/* The string at key (1..cap-1 bytes, no NUL) into out. */
static int get_str(const struct docnode *n, const char *key, char *out, size_t cap,
		   const char *what, char *errmsg)
{
	const struct docnode *c = primitive(n, key, PV_STRING, what, errmsg);
	if (c == NULL)
		return DOCRAFT_ECORRUPT;
	if (c->value.v.s.len == 0 || c->value.v.s.len >= cap ||
	    memchr(c->value.v.s.p, '\0', c->value.v.s.len) != NULL)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: bad or missing '%s'", what,
			       key);
	memcpy(out, c->value.v.s.p, c->value.v.s.len);
	out[c->value.v.s.len] = '\0';
	return 0;
}

static int get_u32(const struct docnode *n, const char *key, uint32_t *out, const char *what,
		   char *errmsg)
{
	const struct docnode *c = primitive(n, key, PV_UINT32, what, errmsg);
	if (c != NULL)
		*out = c->value.v.u32;
	return c != NULL ? 0 : DOCRAFT_ECORRUPT;
}

static int get_u64(const struct docnode *n, const char *key, uint64_t *out, const char *what,
		   char *errmsg)
{
	const struct docnode *c = primitive(n, key, PV_UINT64, what, errmsg);
	if (c != NULL)
		*out = c->value.v.u64;
	return c != NULL ? 0 : DOCRAFT_ECORRUPT;
}

static int load_ddl(struct catalog *c, const char *client, const struct docnode *doc,
		    char *errmsg)
{
	struct cat_ddl d;
	char op[16];
	bool found;
	int rv;

	memset(&d, 0, sizeof d);
	if (strlen(client) != 2 * CATALOG_DDL_ID_LEN ||
	    strspn(client, "0123456789abcdef") != 2 * CATALOG_DDL_ID_LEN)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: a DDL record of a bad client id");
	memcpy(d.client, client, sizeof d.client);
	if ((rv = get_u64(doc, "seq", &d.seq, "DDL record", errmsg)) != 0 ||
	    (rv = get_u64(doc, "at_ms", &d.at_ms, "DDL record", errmsg)) != 0 ||
	    (rv = get_str(doc, "op", op, sizeof op, "DDL record", errmsg)) != 0 ||
	    (rv = get_str(doc, "table", d.table, sizeof d.table, "DDL record", errmsg)) != 0)
		return rv;
	if (strcmp(op, DDL_CREATE) == 0)
		d.op = CAT_DDL_CREATE;
	else if (strcmp(op, DDL_DROP) == 0)
		d.op = CAT_DDL_DROP;
	else
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: DDL record: op '%s'", op);
	ddl_idx_find(c, d.client, &found);
	if (found)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: DDL record of %s twice", client);
	catalog_put_ddl(c, &d);
	return 0;
}

static int load_masters(struct catalog *c, const char *name, const struct docnode *doc,
			char *errmsg)
{
	const struct docnode *mem = child(doc, "members");
	struct cat_masters *ms = &c->masters;
	int rv;

	if (strcmp(name, "config") != 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: masters document '%s'", name);
	if ((rv = get_u64(doc, "next_id", &ms->next_id, "masters", errmsg)) != 0)
		return rv;
	if (mem == NULL || mem->kind != VAL_OBJECT || mem->n_children > CATALOG_MAX_MASTERS)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: masters: bad members");
	ms->n = 0;
	for (const struct docnode *r = mem->children; r != NULL; r = r->next) {
		if (r->key.type != PV_UINT64 || r->key.v.u64 == 0 || r->kind != VAL_PRIMITIVE ||
		    r->value.type != PV_STRING || r->value.v.s.len == 0 ||
		    r->value.v.s.len > RPC_ADDRESS_MAX ||
		    memchr(r->value.v.s.p, '\0', r->value.v.s.len) != NULL)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: masters: bad member");
		ms->ids[ms->n] = r->key.v.u64;
		memcpy(ms->addresses[ms->n], r->value.v.s.p, r->value.v.s.len);
		ms->addresses[ms->n][r->value.v.s.len] = '\0';
		ms->n++;
	}
	return 0;
}

static int load_table(struct catalog *c, const char *name, const struct docnode *doc,
		      char *errmsg)
{
	const struct docnode *s;
	struct cat_table *t;
	uint32_t rf, n;
	char what[CATALOG_MAX_TABLET_ID + 16];
	int rv;

	snprintf(what, sizeof what, "table %s", name);
	if ((s = primitive(doc, "schema", PV_STRING, what, errmsg)) == NULL)
		return DOCRAFT_ECORRUPT;
	if ((rv = get_u32(doc, "rf", &rf, what, errmsg)) != 0 ||
	    (rv = get_u32(doc, "tablets", &n, what, errmsg)) != 0)
		return rv;
	if (rf < 1 || rf > PLACEMENT_MAX_RF || n < 1 || n > 65535)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: rf %u, %u tablets", what,
			       rf, n);
	rv = catalog_table_new(name, s->value.v.s.p, s->value.v.s.len, rf, &t, errmsg);
	if (rv != 0)
		return err_wrap(errmsg, DOCRAFT_ECORRUPT, "catalog");
	/* "id" is absent in catalogs written before table ids existed. */
	if (child(doc, "id") != NULL &&
	    (rv = get_str(doc, "id", t->id, sizeof t->id, what, errmsg)) != 0) {
		catalog_table_free(t);
		return err_wrap(errmsg, DOCRAFT_ECORRUPT, "catalog");
	}
	t->state = CAT_RUNNING;
	t->loading_tablets = n;
	t->tablets = xcalloc(n, sizeof *t->tablets);
	rv = catalog_add_table(c, t, errmsg);
	if (rv != 0) {
		catalog_table_free(t);
		return err_wrap(errmsg, DOCRAFT_ECORRUPT, "catalog");
	}
	return 0;
}

static int load_tablet(struct catalog *c, const char *id, const struct docnode *doc,
		       char *errmsg)
{
	const struct docnode *reps = child(doc, "replicas");
	struct cat_tablet *tb;
	char state[16];
	char what[CATALOG_MAX_TABLET_ID + 16];
	bool found;
	size_t at;
	int rv;

	snprintf(what, sizeof what, "tablet %s", id);
	if (strlen(id) > CATALOG_MAX_TABLET_ID)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: tablet id too long");
	tb = xcalloc(1, sizeof *tb);
	snprintf(tb->id, sizeof tb->id, "%s", id);
	if ((rv = get_str(doc, "table", tb->table, sizeof tb->table, what, errmsg)) != 0 ||
	    (rv = get_u32(doc, "start", &tb->start, what, errmsg)) != 0 ||
	    (rv = get_u32(doc, "end", &tb->end, what, errmsg)) != 0 ||
	    (rv = get_str(doc, "state", state, sizeof state, what, errmsg)) != 0)
		goto fail;
	if (strcmp(state, STATE_RUNNING) == 0) {
		tb->state = CAT_RUNNING;
	} else if (strcmp(state, STATE_DELETED) == 0) {
		tb->state = CAT_DELETED;
	} else {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: state '%s'", what, state);
		goto fail;
	}
	if (tb->start >= tb->end || tb->end > 65536) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: partition [%u, %u)", what,
			     tb->start, tb->end);
		goto fail;
	}
	if (reps == NULL || reps->kind != VAL_OBJECT || reps->n_children < 1 ||
	    reps->n_children > CATALOG_MAX_REPLICAS) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: bad replicas", what);
		goto fail;
	}
	for (const struct docnode *r = reps->children; r != NULL; r = r->next) {
		struct cat_replica *rep = &tb->replicas[tb->n_replicas++];
		if (r->key.type != PV_UINT64 || r->key.v.u64 == 0 || r->kind != VAL_OBJECT) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: bad replica", what);
			goto fail;
		}
		rep->raft_id = r->key.v.u64;
		if ((rv = get_str(r, "uuid", rep->uuid, sizeof rep->uuid, what, errmsg)) != 0 ||
		    (rv = get_str(r, "address", rep->address, sizeof rep->address, what,
				  errmsg)) != 0)
			goto fail;
		if (child(r, "joining") != NULL) {
			const struct docnode *j = primitive(r, "joining", PV_BOOL, what, errmsg);
			if (j == NULL) {
				rv = DOCRAFT_ECORRUPT;
				goto fail;
			}
			rep->joining = j->value.v.b;
		}
		if (rep->raft_id >= tb->next_raft_id)
			tb->next_raft_id = rep->raft_id + 1;
	}
	if (child(doc, "next_raft_id") != NULL) {
		uint64_t next;
		if ((rv = get_u64(doc, "next_raft_id", &next, what, errmsg)) != 0)
			goto fail;
		if (next > tb->next_raft_id)
			tb->next_raft_id = next;
	}
	at = tablet_idx_find(c, tb->id, &found);
	if (found) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s twice", what);
		goto fail;
	}
	tablet_idx_insert(c, at, tb);
	return 0;
fail:
	free(tb);
	return rv;
}

static int load_move(struct catalog *c, const char *id, const struct docnode *doc,
		     char *errmsg)
{
	struct cat_move *mv = xcalloc(1, sizeof *mv);
	char step[16];
	char what[CATALOG_MAX_TABLET_ID + 16];
	int rv;

	snprintf(what, sizeof what, "move of %s", id);
	if ((rv = get_str(doc, "reason", mv->reason, sizeof mv->reason, what, errmsg)) != 0 ||
	    (rv = get_u64(doc, "from_raft_id", &mv->from_raft_id, what, errmsg)) != 0 ||
	    (rv = get_str(doc, "from_uuid", mv->from_uuid, sizeof mv->from_uuid, what,
			  errmsg)) != 0 ||
	    (rv = get_str(doc, "from_address", mv->from_address, sizeof mv->from_address, what,
			  errmsg)) != 0 ||
	    (rv = get_str(doc, "to_uuid", mv->to_uuid, sizeof mv->to_uuid, what, errmsg)) != 0 ||
	    (rv = get_str(doc, "to_address", mv->to_address, sizeof mv->to_address, what,
			  errmsg)) != 0 ||
	    (rv = get_u64(doc, "new_raft_id", &mv->new_raft_id, what, errmsg)) != 0 ||
	    (rv = get_str(doc, "step", step, sizeof step, what, errmsg)) != 0 ||
	    (rv = get_u64(doc, "started_ms", &mv->started_ms, what, errmsg)) != 0) {
		free(mv);
		return rv;
	}
	for (mv->step = CAT_MOVE_ADDING; mv->step <= CAT_MOVE_ROLLING_BACK; mv->step++)
		if (strcmp(step, step_names[mv->step]) == 0)
			break;
	if (mv->step > CAT_MOVE_ROLLING_BACK || mv->from_raft_id == 0 || mv->new_raft_id == 0 ||
	    mv->from_raft_id == mv->new_raft_id || strlen(id) > CATALOG_MAX_TABLET_ID) {
		rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: %s: step '%s', raft ids %" PRIu64
			     " -> %" PRIu64, what, step, mv->from_raft_id, mv->new_raft_id);
		free(mv);
		return rv;
	}
	c->loading_moves = xrealloc(c->loading_moves,
				    (c->n_loading_moves + 1) * sizeof *c->loading_moves);
	c->loading_move_ids = xrealloc(c->loading_move_ids,
				       (c->n_loading_moves + 1) * sizeof *c->loading_move_ids);
	c->loading_moves[c->n_loading_moves] = mv;
	snprintf(c->loading_move_ids[c->n_loading_moves], sizeof c->loading_move_ids[0], "%s",
		 id);
	c->n_loading_moves++;
	return 0;
}

static int load_drain(struct catalog *c, const char *uuid, const struct docnode *doc,
		      char *errmsg)
{
	uint64_t at;
	int rv;
	if (strlen(uuid) > CATALOG_MAX_UUID)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: a drain mark of a bad uuid");
	if ((rv = get_u64(doc, "at_ms", &at, "drain mark", errmsg)) != 0)
		return rv;
	catalog_set_drain(c, uuid, true);
	return 0;
}

/* Attaches the moves read to their tablets: a move names a running tablet
 * holding its replaced replica and its new one (joining); a move of a
 * tablet that is gone or deleted is dropped (its document stays until a
 * later write of that tablet's move). */
static int attach_moves(struct catalog *c, char *errmsg)
{
	for (size_t i = 0; i < c->n_loading_moves; i++) {
		struct cat_move *mv = c->loading_moves[i];
		struct cat_tablet *tb = catalog_find_tablet(c, c->loading_move_ids[i]);
		const struct cat_replica *from, *to;
		if (tb == NULL || tb->state != CAT_RUNNING) {
			LOG_WARN("catalog: a move of tablet %s, which is %s: ignored",
				 c->loading_move_ids[i], tb == NULL ? "unknown" : "deleted");
			continue;
		}
		from = catalog_replica(tb, mv->from_raft_id);
		to = catalog_replica(tb, mv->new_raft_id);
		if (from == NULL || to == NULL || !to->joining || from->joining)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: the move of tablet %s (raft id %" PRIu64
				       " -> %" PRIu64 ") does not match its replicas",
				       tb->id, mv->from_raft_id, mv->new_raft_id);
		tb->move = mv;
		c->loading_moves[i] = NULL;
	}
	for (size_t i = 0; i < c->n_tablets; i++) {
		const struct cat_tablet *tb = c->tablets[i];
		uint32_t joining = 0;
		if (tb->state != CAT_RUNNING)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++)
			joining += tb->replicas[k].joining;
		if (joining != (tb->move != NULL ? 1u : 0u))
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: tablet %s has %u joining replicas and %s move",
				       tb->id, joining, tb->move != NULL ? "a" : "no");
	}
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct cat_tablet *x = *(struct cat_tablet *const *)a;
	const struct cat_tablet *y = *(struct cat_tablet *const *)b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Attaches running tablets to their tables (and moves to their tablets)
 * and checks every table. */
static int assemble(struct catalog *c, char *errmsg)
{
	int rv;
	for (size_t i = 0; i < c->n_tablets; i++) {
		struct cat_tablet *tb = c->tablets[i];
		if (tb->state == CAT_RUNNING && catalog_find_table(c, tb->table) == NULL) {
			LOG_WARN("catalog: tablet %s of table %s, which does not exist: "
				 "deleting it", tb->id, tb->table);
			tb->state = CAT_DELETED;
		}
	}
	if ((rv = attach_moves(c, errmsg)) != 0)
		return rv;
	for (size_t i = 0; i < c->n_tablets; i++) {
		struct cat_tablet *tb = c->tablets[i];
		struct cat_table *t;
		if (tb->state != CAT_RUNNING)
			continue;
		t = catalog_find_table(c, tb->table); /* exists: checked above */
		if (t->n_tablets == t->loading_tablets)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: table %s has more than %u tablets", t->name,
				       t->loading_tablets);
		if (tb->n_replicas != t->rf + (tb->move != NULL ? 1 : 0))
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: tablet %s has %u replicas, table %s rf %u%s", tb->id,
				       tb->n_replicas, t->name, t->rf,
				       tb->move != NULL ? " and a move in flight" : "");
		t->tablets[t->n_tablets++] = tb;
	}
	for (size_t i = 0; i < c->n_tables; i++) {
		struct cat_table *t = c->tables[i];
		uint32_t next = 0;
		if (t->n_tablets != t->loading_tablets)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: table %s has %zu of its %u tablets", t->name,
				       t->n_tablets, t->loading_tablets);
		qsort(t->tablets, t->n_tablets, sizeof *t->tablets, cmp_start);
		for (size_t k = 0; k < t->n_tablets && t->tablets[k]->start == next; k++)
			next = t->tablets[k]->end;
		if (next != 65536)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "catalog: the tablets of table %s do not cover the "
				       "hash space", t->name);
	}
	return 0;
}

int catalog_load(struct catalog *c, struct store *s, uint64_t read_ht, char *errmsg)
{
	const uint8_t lo = KT_INTERNAL_MAX + 1;
	struct store_iter *it;
	struct arena a;
	struct buf dk = BUF_INIT;
	int rv = 0;

	catalog_clear_tables(c);
	arena_init(&a);
	it = store_iter_new(s, &lo, 1, NULL, 0);
	store_iter_seek_first(it);
	while (store_iter_valid(it)) {
		size_t kl, plen;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *p;
		const struct docnode *doc;
		struct dockey d;
		char name[CATALOG_MAX_TABLET_ID + 1];

		arena_reset(&a);
		plen = dockey_prefix_len(k, kl);
		if (plen == 0) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT, "catalog: a key is not a DocKey");
			break;
		}
		buf_reset(&dk);
		buf_append(&dk, k, plen);
		p = dk.data;
		if (dockey_decode(&p, dk.data + dk.len, &d, &a) != 0 || d.has_hash ||
		    d.n_range != 2 || d.range[0].type != PV_STRING ||
		    d.range[1].type != PV_STRING || d.range[1].v.s.len == 0 ||
		    d.range[1].v.s.len >= sizeof name ||
		    memchr(d.range[1].v.s.p, '\0', d.range[1].v.s.len) != NULL) {
			rv = err_set(errmsg, DOCRAFT_ECORRUPT,
				     "catalog: a DocKey is not (kind, name)");
			break;
		}
		memcpy(name, d.range[1].v.s.p, d.range[1].v.s.len);
		name[d.range[1].v.s.len] = '\0';
		rv = reader_get_doc(s, dk.data, dk.len, NULL, 0, read_ht, 0, &a, &doc, errmsg);
		if (rv != 0)
			break;
		if (doc != NULL) {
			struct pv kind_table = pv_str(KIND_TABLE);
			struct pv kind_tablet = pv_str(KIND_TABLET);
			struct pv kind_ddl = pv_str(KIND_DDL);
			struct pv kind_move = pv_str(KIND_MOVE);
			struct pv kind_drain = pv_str(KIND_DRAIN);
			struct pv kind_masters = pv_str(KIND_MASTERS);
			if (pv_equal(&d.range[0], &kind_table))
				rv = load_table(c, name, doc, errmsg);
			else if (pv_equal(&d.range[0], &kind_tablet))
				rv = load_tablet(c, name, doc, errmsg);
			else if (pv_equal(&d.range[0], &kind_ddl))
				rv = load_ddl(c, name, doc, errmsg);
			else if (pv_equal(&d.range[0], &kind_move))
				rv = load_move(c, name, doc, errmsg);
			else if (pv_equal(&d.range[0], &kind_drain))
				rv = load_drain(c, name, doc, errmsg);
			else if (pv_equal(&d.range[0], &kind_masters))
				rv = load_masters(c, name, doc, errmsg);
			else
				rv = err_set(errmsg, DOCRAFT_ECORRUPT,
					     "catalog: unknown document kind");
			if (rv != 0)
				break;
		}
		buf_push(&dk, KT_MAX_BYTE);
		store_iter_seek(it, dk.data, dk.len);
	}
	if (rv == 0)
		rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	if (rv == 0)
		rv = assemble(c, errmsg);
	for (size_t i = 0; i < c->n_loading_moves; i++)
		free(c->loading_moves[i]); /* not attached */
	free(c->loading_moves);
	free(c->loading_move_ids);
	c->loading_moves = NULL;
	c->loading_move_ids = NULL;
	c->n_loading_moves = 0;
	if (rv != 0)
		catalog_clear_tables(c);
	arena_free(&a);
	buf_free(&dk);
	return rv;
}

/* ---- tablet servers -------------------------------------------------------------------------- */

struct cat_tserver *catalog_find_tserver(const struct catalog *c, const char *uuid)
{
	bool found;
	size_t at = tserver_idx_find(c, uuid, &found);
	return found ? c->tservers[at] : NULL;
}

size_t catalog_tserver_index(const struct catalog *c, const char *uuid)
{
	bool found;
	size_t at = tserver_idx_find(c, uuid, &found);
	return found ? at : SIZE_MAX;
}

struct cat_tserver *catalog_tserver_upsert(struct catalog *c, const char *uuid,
					   const char *address)
{
	bool found;
	size_t at = tserver_idx_find(c, uuid, &found);
	struct cat_tserver *ts;
	PRE(strlen(uuid) <= CATALOG_MAX_UUID && strlen(address) <= RPC_ADDRESS_MAX);
	if (found) {
		ts = c->tservers[at];
	} else {
		ts = xcalloc(1, sizeof *ts);
		snprintf(ts->uuid, sizeof ts->uuid, "%s", uuid);
		tserver_idx_insert(c, at, ts);
	}
	snprintf(ts->address, sizeof ts->address, "%s", address);
	return ts;
}

bool catalog_tserver_live(const struct cat_tserver *ts, uint64_t now, uint64_t timeout_ms)
{
	return ts != NULL && ts->hb_count > 0 && now - ts->last_hb_ms <= timeout_ms;
}

const struct cat_replica *catalog_tablet_leader(const struct catalog *c,
						const struct cat_tablet *tb, uint64_t now,
						uint64_t timeout_ms)
{
	const struct cat_replica *best = NULL;
	for (uint32_t k = 0; k < tb->n_replicas; k++) {
		const struct cat_replica *r = &tb->replicas[k];
		const struct cat_tserver *ts;
		if (!r->leader)
			continue;
		ts = catalog_find_tserver(c, r->uuid);
		if (ts == NULL || r->seen_hb != ts->hb_count ||
		    !catalog_tserver_live(ts, now, timeout_ms))
			continue;
		if (best == NULL || r->term > best->term)
			best = r;
	}
	return best;
}
