/* The catalog (src/master/catalog.c) on a real DocDB store, without Raft:
 * batches written by catalog_write_* are applied with store_apply and read
 * back with catalog_load, as a new master leader would.
 *
 *   round_trip        tables, schemas, partitions, replicas survive
 *   drop_and_purge    a drop removes the table and marks its tablets
 *                     deleted; a purge removes a tablet's row; a new table
 *                     of the same name loads next to the deleted tablets
 *   read_time         a load at an older hybrid time sees the older catalog
 *   corrupt           incomplete or overlapping tablets are DOCRAFT_ECORRUPT
 *   tservers_leaders  liveness and the leader chosen from reports
 *   ddl_records       DDL request ids: written, replaced per client, loaded
 *                     by a new leader, purged once older than the TTL
 *   moves_and_drains  a move in flight (the move document, the tablet with
 *                     its joining replica and next_raft_id) and drain marks
 *                     load as written; the move's end and an undrain load
 *                     as written too; a move that does not match its
 *                     tablet's replicas is DOCRAFT_ECORRUPT; a drop deletes
 *                     the move documents of its tablets */
#include <stdio.h>
#include <string.h>

#include "common/hlc.h"
#include "docdb/store.h"
#include "master/catalog.h"
#include "master/placement.h"
#include "test.h"

static char dir[256];
static struct store *st;
static uint64_t next_index;

static uint64_t ht_at(uint64_t us)
{
	return us << HT_LOGICAL_BITS;
}

static void open_store(void)
{
	struct store_options o;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	test_tmpdir_make(dir, "catalog");
	store_options_default(&o);
	CHECK_OK_MSG(store_open(dir, &o, &st, errmsg), errmsg);
	next_index = 1;
}

static void close_store(void)
{
	store_close(st);
	st = NULL;
	test_tmpdir_remove(dir);
}

static void apply(struct batch *b, uint64_t us)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(store_apply(st, b->data.data, b->data.len, ht_at(us), next_index++, errmsg),
		     errmsg);
	batch_reset(b);
}

/* A packed schema for table name: k (hash text), ts (range timestamp
 * DESC), v (regular int64), tags (set<text>). */
static void schema_bytes(const char *name, uint8_t *out, size_t cap, size_t *len)
{
	Docraft__TableSchema s = DOCRAFT__TABLE_SCHEMA__INIT;
	Docraft__ColumnSchema c[4], *cp[4];
	static const char *names[] = {"k", "ts", "v", "tags"};
	static const Docraft__ColumnKind kinds[] = {DOCRAFT__COLUMN_KIND__HASH,
						    DOCRAFT__COLUMN_KIND__RANGE,
						    DOCRAFT__COLUMN_KIND__REGULAR,
						    DOCRAFT__COLUMN_KIND__REGULAR};
	static const Docraft__ColumnType types[] = {DOCRAFT__COLUMN_TYPE__TEXT,
						    DOCRAFT__COLUMN_TYPE__TIMESTAMP,
						    DOCRAFT__COLUMN_TYPE__INT64,
						    DOCRAFT__COLUMN_TYPE__SET};
	for (int i = 0; i < 4; i++) {
		docraft__column_schema__init(&c[i]);
		c[i].name = (char *)names[i];
		c[i].id = i;
		c[i].kind = kinds[i];
		c[i].type = types[i];
		cp[i] = &c[i];
	}
	c[1].desc = true;
	c[3].elem_type = DOCRAFT__COLUMN_TYPE__TEXT;
	s.name = (char *)name;
	s.columns = cp;
	s.n_columns = 4;
	s.default_ttl_ms = 3600000;
	*len = protobuf_c_message_get_packed_size(&s.base);
	CHECK(*len <= cap);
	protobuf_c_message_pack(&s.base, out);
}

/* A table of n tablets, rf replicas on tservers "ts-<k>" (tablet i's
 * replica k on tserver (i + k) % 5). */
static struct cat_table *make_table(const char *name, uint32_t n, uint32_t rf, uint32_t suffix)
{
	uint8_t sb[512];
	size_t len;
	struct cat_table *t;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	schema_bytes(name, sb, sizeof sb, &len);
	CHECK_OK_MSG(catalog_table_new(name, sb, len, rf, &t, errmsg), errmsg);
	for (uint32_t i = 0; i < n; i++) {
		char id[CATALOG_MAX_TABLET_ID + 1];
		uint32_t start, end;
		struct cat_tablet *tb;
		snprintf(id, sizeof id, "%s-%u-%08x", name, i, suffix);
		placement_partition(i, n, &start, &end);
		tb = catalog_table_add_tablet(t, id, start, end);
		tb->n_replicas = rf;
		for (uint32_t k = 0; k < rf; k++) {
			tb->replicas[k].raft_id = k + 1;
			snprintf(tb->replicas[k].uuid, sizeof tb->replicas[k].uuid, "ts-%u",
				 (i + k) % 5);
			snprintf(tb->replicas[k].address, sizeof tb->replicas[k].address,
				 "127.0.0.%u:9100", 2 + (i + k) % 5);
		}
	}
	return t;
}

static void check_same(const struct cat_table *a, const struct cat_table *b)
{
	CHECK_EQ_STR(a->name, b->name);
	CHECK_EQ_INT(a->rf, b->rf);
	CHECK_EQ_MEM(a->schema_pb, a->schema_len, b->schema_pb, b->schema_len);
	CHECK_EQ_STR(b->schema->name, a->name);
	CHECK_EQ_INT(b->schema->n_columns, 4);
	CHECK(b->schema->columns[1]->desc);
	CHECK_EQ_INT(b->schema->default_ttl_ms, 3600000);
	CHECK_EQ_INT(a->n_tablets, b->n_tablets);
	for (size_t i = 0; i < a->n_tablets; i++) {
		const struct cat_tablet *x = a->tablets[i], *y = b->tablets[i];
		CHECK_EQ_STR(x->id, y->id);
		CHECK_EQ_STR(x->table, y->table);
		CHECK_EQ_INT(x->start, y->start);
		CHECK_EQ_INT(x->end, y->end);
		CHECK_EQ_INT(y->state, CAT_RUNNING);
		CHECK_EQ_INT(x->n_replicas, y->n_replicas);
		for (uint32_t k = 0; k < x->n_replicas; k++) {
			CHECK_EQ_U64(x->replicas[k].raft_id, y->replicas[k].raft_id);
			CHECK_EQ_STR(x->replicas[k].uuid, y->replicas[k].uuid);
			CHECK_EQ_STR(x->replicas[k].address, y->replicas[k].address);
		}
	}
}

TEST(round_trip)
{
	struct catalog mem, loaded;
	struct batch b;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_table *t1, *t2;

	open_store();
	catalog_init(&mem);
	catalog_init(&loaded);
	batch_init(&b);
	t1 = make_table("msgs", 8, 3, 0x1234abcd);
	t2 = make_table("users.v2", 3, 5, 0x00000001);
	CHECK_OK(catalog_add_table(&mem, t1, errmsg));
	CHECK_OK(catalog_add_table(&mem, t2, errmsg));
	CHECK_OK_MSG(catalog_write_table(&b, t1, errmsg), errmsg);
	apply(&b, 1000);
	CHECK_OK_MSG(catalog_write_table(&b, t2, errmsg), errmsg);
	apply(&b, 2000);

	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(3000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 2);
	CHECK_EQ_INT(loaded.n_tablets, 11);
	check_same(t1, catalog_find_table(&loaded, "msgs"));
	check_same(t2, catalog_find_table(&loaded, "users.v2"));
	CHECK(catalog_find_tablet(&loaded, "msgs-7-1234abcd") != NULL);
	CHECK(catalog_find_tablet(&loaded, "msgs-8-1234abcd") == NULL);
	/* Loading again replaces, it does not add. */
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(3000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 2);
	CHECK_EQ_INT(loaded.n_tablets, 11);
	/* An older read time sees only the first table. */
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1500), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 1);
	CHECK_EQ_INT(loaded.n_tablets, 8);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(500), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 0);

	batch_free(&b);
	catalog_free(&mem);
	catalog_free(&loaded);
	close_store();
}

TEST(drop_and_purge)
{
	struct catalog mem, loaded;
	struct batch b;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_table *t, *t2;
	struct cat_tablet *tb;

	open_store();
	catalog_init(&mem);
	catalog_init(&loaded);
	batch_init(&b);
	t = make_table("msgs", 4, 3, 0xaaaaaaaa);
	CHECK_OK(catalog_add_table(&mem, t, errmsg));
	CHECK_OK(catalog_write_table(&b, t, errmsg));
	apply(&b, 1000);
	CHECK_OK(catalog_write_drop(&b, t, errmsg));
	apply(&b, 2000);
	catalog_drop_table(&mem, t);
	CHECK(catalog_find_table(&mem, "msgs") == NULL);
	CHECK_EQ_INT(mem.n_tablets, 4);

	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(2500), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 0);
	CHECK_EQ_INT(loaded.n_tablets, 4);
	for (size_t i = 0; i < loaded.n_tablets; i++) {
		CHECK_EQ_INT(loaded.tablets[i]->state, CAT_DELETED);
		CHECK_EQ_INT(loaded.tablets[i]->n_replicas, 3);
	}

	/* The same name again, other tablet ids. */
	t2 = make_table("msgs", 2, 1, 0xbbbbbbbb);
	CHECK_OK(catalog_add_table(&mem, t2, errmsg));
	CHECK_OK(catalog_write_table(&b, t2, errmsg));
	apply(&b, 3000);
	/* Purge one dropped tablet. */
	tb = catalog_find_tablet(&mem, "msgs-0-aaaaaaaa");
	CHECK(tb != NULL && tb->state == CAT_DELETED);
	CHECK_OK(catalog_write_purge(&b, tb, errmsg));
	apply(&b, 4000);
	catalog_remove_tablet(&mem, tb);

	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(5000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 1);
	CHECK_EQ_INT(loaded.n_tablets, 2 + 3);
	check_same(t2, catalog_find_table(&loaded, "msgs"));
	CHECK(catalog_find_tablet(&loaded, "msgs-0-aaaaaaaa") == NULL);
	CHECK_EQ_INT(catalog_find_tablet(&loaded, "msgs-1-aaaaaaaa")->state, CAT_DELETED);
	CHECK_EQ_INT(catalog_find_tablet(&loaded, "msgs-1-bbbbbbbb")->state, CAT_RUNNING);

	batch_free(&b);
	catalog_free(&mem);
	catalog_free(&loaded);
	close_store();
}

TEST(corrupt)
{
	struct catalog mem, loaded;
	struct batch b;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_table *t;

	open_store();
	catalog_init(&mem);
	catalog_init(&loaded);
	batch_init(&b);
	/* A table whose tablet 1 of 3 was never written. */
	t = make_table("gappy", 3, 1, 0x1);
	CHECK_OK(catalog_write_table(&b, t, errmsg));
	apply(&b, 1000);
	CHECK_OK(catalog_write_purge(&b, t->tablets[1], errmsg));
	apply(&b, 2000);
	CHECK_EQ_INT(catalog_load(&loaded, st, ht_at(3000), errmsg), DOCRAFT_ECORRUPT);
	CHECK_MSG(strstr(errmsg, "gappy") != NULL, "%s", errmsg);
	CHECK_EQ_INT(loaded.n_tables, 0);
	CHECK_EQ_INT(loaded.n_tablets, 0);
	/* Before the purge it was whole. */
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1500), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tablets, 3);
	catalog_table_free(t);

	batch_free(&b);
	catalog_free(&mem);
	catalog_free(&loaded);
	close_store();
}

TEST(names)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char long_name[CATALOG_MAX_TABLE_NAME + 2];
	struct cat_table *t;
	uint8_t sb[512];
	size_t len;

	CHECK_OK(catalog_check_table_name("msgs", errmsg));
	CHECK_OK(catalog_check_table_name("_x.y_2", errmsg));
	CHECK_EQ_INT(catalog_check_table_name("", errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(catalog_check_table_name("9lives", errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(catalog_check_table_name("a-b", errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(catalog_check_table_name("a b", errmsg), DOCRAFT_EINVAL);
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK_EQ_INT(catalog_check_table_name(long_name, errmsg), DOCRAFT_EINVAL);
	long_name[CATALOG_MAX_TABLE_NAME] = '\0';
	CHECK_OK(catalog_check_table_name(long_name, errmsg));
	/* A schema naming another table, or bytes that do not decode. */
	schema_bytes("other", sb, sizeof sb, &len);
	CHECK_EQ_INT(catalog_table_new("msgs", sb, len, 3, &t, errmsg), DOCRAFT_EINVAL);
	CHECK(t == NULL);
	memset(sb, 0xff, 16);
	CHECK_EQ_INT(catalog_table_new("msgs", sb, 16, 3, &t, errmsg), DOCRAFT_EINVAL);
}

TEST(tservers_leaders)
{
	struct catalog c;
	struct cat_table *t;
	struct cat_tablet *tb;
	struct cat_tserver *a, *b2;
	const struct cat_replica *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	catalog_init(&c);
	t = make_table("msgs", 1, 3, 0x2);
	CHECK_OK(catalog_add_table(&c, t, errmsg));
	tb = t->tablets[0]; /* replicas on ts-0, ts-1, ts-2 */
	a = catalog_tserver_upsert(&c, "ts-0", "127.0.0.2:9100");
	b2 = catalog_tserver_upsert(&c, "ts-1", "127.0.0.3:9100");
	CHECK(catalog_tserver_upsert(&c, "ts-0", "127.0.0.9:9100") == a);
	CHECK_EQ_STR(a->address, "127.0.0.9:9100");
	CHECK_EQ_INT(c.n_tservers, 2);
	CHECK(!catalog_tserver_live(a, 1000, 3000)); /* never heartbeated */
	a->hb_count = 1;
	a->last_hb_ms = 1000;
	b2->hb_count = 1;
	b2->last_hb_ms = 1000;
	CHECK(catalog_tserver_live(a, 4000, 3000));
	CHECK(!catalog_tserver_live(a, 4001, 3000));

	CHECK(catalog_tablet_leader(&c, tb, 1000, 3000) == NULL);
	tb->replicas[0].leader = true;
	tb->replicas[0].term = 2;
	tb->replicas[0].seen_hb = 1;
	tb->replicas[1].leader = true;
	tb->replicas[1].term = 3;
	tb->replicas[1].seen_hb = 1;
	l = catalog_tablet_leader(&c, tb, 1000, 3000);
	CHECK(l != NULL && l->raft_id == 2); /* the higher term */
	/* A later heartbeat of ts-1 without the tablet: its report is stale. */
	b2->hb_count = 2;
	l = catalog_tablet_leader(&c, tb, 1000, 3000);
	CHECK(l != NULL && l->raft_id == 1);
	/* ts-0 silent for too long. */
	CHECK(catalog_tablet_leader(&c, tb, 5000, 3000) == NULL);
	/* A tserver that never registered cannot lead. */
	tb->replicas[2].leader = true;
	tb->replicas[2].term = 9;
	CHECK(catalog_tablet_leader(&c, tb, 5000, 3000) == NULL);
	catalog_clear_tservers(&c);
	CHECK_EQ_INT(c.n_tservers, 0);
	catalog_free(&c);
}

TEST(ddl_records)
{
	struct catalog c, loaded;
	struct batch b;
	struct cat_ddl d;
	const struct cat_ddl *got;
	uint8_t a[CATALOG_DDL_ID_LEN], z[CATALOG_DDL_ID_LEN];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t now = 10 * (uint64_t)CATALOG_DDL_TTL_MS;

	open_store();
	catalog_init(&c);
	catalog_init(&loaded);
	batch_init(&b);
	memset(a, 0xa1, sizeof a);
	memset(z, 0x07, sizeof z);
	/* Client a creates t1 (seq 1) long ago, client z drops t2 (seq 5). */
	catalog_ddl_set(&d, a, 1, CAT_DDL_CREATE, "t1", now - CATALOG_DDL_TTL_MS - 1);
	CHECK_OK_MSG(catalog_write_ddl(&b, &d, errmsg), errmsg);
	catalog_put_ddl(&c, &d);
	catalog_ddl_set(&d, z, 5, CAT_DDL_DROP, "t2", now);
	CHECK_OK_MSG(catalog_write_ddl(&b, &d, errmsg), errmsg);
	catalog_put_ddl(&c, &d);
	apply(&b, 100);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_ddl, 2);
	got = catalog_find_ddl(&loaded, c.ddl[0]->client);
	CHECK(got != NULL && got->seq == c.ddl[0]->seq && got->op == c.ddl[0]->op &&
	      strcmp(got->table, c.ddl[0]->table) == 0 && got->at_ms == c.ddl[0]->at_ms);
	catalog_ddl_set(&d, z, 5, CAT_DDL_DROP, "t2", now);
	got = catalog_find_ddl(&loaded, d.client);
	CHECK(got != NULL && got->seq == 5 && got->op == CAT_DDL_DROP);
	CHECK_EQ_STR(got->table, "t2");
	/* The client's next DDL replaces its record. */
	catalog_ddl_set(&d, z, 6, CAT_DDL_CREATE, "t3", now);
	CHECK_OK_MSG(catalog_write_ddl(&b, &d, errmsg), errmsg);
	catalog_put_ddl(&c, &d);
	/* The purge takes a's record (older than the TTL), not z's. */
	CHECK_OK_MSG(catalog_purge_ddl(&c, &b, now, errmsg), errmsg);
	CHECK_EQ_INT(c.n_ddl, 1);
	apply(&b, 200);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_ddl, 1);
	got = catalog_find_ddl(&loaded, d.client);
	CHECK(got != NULL && got->seq == 6 && got->op == CAT_DDL_CREATE);
	CHECK_EQ_STR(got->table, "t3");
	batch_free(&b);
	catalog_free(&c);
	catalog_free(&loaded);
	close_store();
}

TEST(moves_and_drains)
{
	struct catalog mem, loaded;
	struct batch b;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct cat_table *t;
	struct cat_tablet *tb, *lt;
	struct cat_move mv;
	struct cat_replica *r;
	uint32_t count;

	open_store();
	catalog_init(&mem);
	catalog_init(&loaded);
	batch_init(&b);
	t = make_table("heal", 2, 3, 0xabc);
	for (size_t i = 0; i < t->n_tablets; i++)
		t->tablets[i]->next_raft_id = 4;
	CHECK_OK(catalog_add_table(&mem, t, errmsg));
	catalog_set_table_state(t, CAT_RUNNING);
	CHECK_OK_MSG(catalog_write_table(&b, t, errmsg), errmsg);
	apply(&b, 1000);

	/* Start: replica 2 of tablet 0 is replaced by raft id 4 on ts-9. */
	tb = t->tablets[0];
	memset(&mv, 0, sizeof mv);
	snprintf(mv.reason, sizeof mv.reason, "re-replicate");
	mv.from_raft_id = 2;
	snprintf(mv.from_uuid, sizeof mv.from_uuid, "%s", tb->replicas[1].uuid);
	snprintf(mv.from_address, sizeof mv.from_address, "%s", tb->replicas[1].address);
	snprintf(mv.to_uuid, sizeof mv.to_uuid, "ts-9");
	snprintf(mv.to_address, sizeof mv.to_address, "127.0.0.9:9100");
	mv.new_raft_id = 4;
	mv.step = CAT_MOVE_REMOVING;
	mv.started_ms = 123456;
	r = &tb->replicas[tb->n_replicas++];
	r->raft_id = 4;
	snprintf(r->uuid, sizeof r->uuid, "ts-9");
	snprintf(r->address, sizeof r->address, "127.0.0.9:9100");
	r->joining = true;
	tb->next_raft_id = 5;
	tb->move = &mv;
	CHECK_OK_MSG(catalog_write_tablet(&b, tb, errmsg), errmsg);
	CHECK_OK_MSG(catalog_write_move(&b, tb, errmsg), errmsg);
	CHECK_OK_MSG(catalog_write_drain(&b, "ts-1", true, 99, errmsg), errmsg);
	CHECK_OK_MSG(catalog_write_drain(&b, "ts-0", true, 98, errmsg), errmsg);
	apply(&b, 2000);
	tb->move = NULL;

	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(3000), errmsg), errmsg);
	lt = catalog_find_tablet(&loaded, tb->id);
	CHECK(lt != NULL && lt->move != NULL);
	CHECK_EQ_INT(lt->n_replicas, 4);
	CHECK_EQ_U64(lt->next_raft_id, 5);
	CHECK(catalog_replica(lt, 4) != NULL && catalog_replica(lt, 4)->joining);
	CHECK(!catalog_replica(lt, 2)->joining);
	CHECK_EQ_STR(lt->move->reason, "re-replicate");
	CHECK_EQ_U64(lt->move->from_raft_id, 2);
	CHECK_EQ_STR(lt->move->from_uuid, mv.from_uuid);
	CHECK_EQ_STR(lt->move->to_address, "127.0.0.9:9100");
	CHECK_EQ_U64(lt->move->new_raft_id, 4);
	CHECK_EQ_INT(lt->move->step, CAT_MOVE_REMOVING);
	CHECK_EQ_U64(lt->move->started_ms, 123456);
	CHECK(catalog_find_tablet(&loaded, t->tablets[1]->id)->move == NULL);
	CHECK(catalog_draining(&loaded, "ts-0") && catalog_draining(&loaded, "ts-1"));
	CHECK(!catalog_draining(&loaded, "ts-2"));
	CHECK_EQ_STR(catalog_move_step_name(lt->move->step), "removing");

	/* A move whose new replica is not in the tablet: corrupt. */
	tb->n_replicas--;
	tb->move = &mv;
	CHECK_OK_MSG(catalog_write_tablet(&b, tb, errmsg), errmsg);
	apply(&b, 4000);
	CHECK_EQ_INT(catalog_load(&loaded, st, ht_at(4500), errmsg), DOCRAFT_ECORRUPT);
	test_note("%s", errmsg);
	CHECK_EQ_INT(loaded.n_tables, 0);

	/* The end: replica 2 gone, the new one plain, the document deleted;
	 * ts-1 undrained. */
	tb->replicas[1] = tb->replicas[2];
	tb->replicas[2].raft_id = 4;
	snprintf(tb->replicas[2].uuid, sizeof tb->replicas[2].uuid, "ts-9");
	tb->replicas[2].joining = false;
	tb->move = NULL;
	CHECK_OK_MSG(catalog_write_tablet(&b, tb, errmsg), errmsg);
	CHECK_OK_MSG(catalog_write_move_delete(&b, tb->id, errmsg), errmsg);
	CHECK_OK_MSG(catalog_write_drain(&b, "ts-1", false, 0, errmsg), errmsg);
	apply(&b, 5000);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(5500), errmsg), errmsg);
	lt = catalog_find_tablet(&loaded, tb->id);
	CHECK(lt != NULL && lt->move == NULL && lt->n_replicas == 3);
	CHECK(catalog_replica(lt, 2) == NULL && catalog_replica(lt, 4) != NULL);
	CHECK_EQ_U64(lt->next_raft_id, 5);
	CHECK(catalog_draining(&loaded, "ts-0") && !catalog_draining(&loaded, "ts-1"));
	/* An older read time still sees the move. */
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(3000), errmsg), errmsg);
	CHECK(catalog_find_tablet(&loaded, tb->id)->move != NULL);

	/* A drop deletes a move document with its tablets: one more
	 * deletion in its batch for the tablet with a move. */
	CHECK_OK_MSG(catalog_load(&mem, st, ht_at(5500), errmsg), errmsg);
	t = catalog_find_table(&mem, "heal");
	CHECK_OK_MSG(catalog_write_drop(&b, t, errmsg), errmsg);
	count = b.count;
	batch_reset(&b);
	CHECK_OK_MSG(catalog_load(&mem, st, ht_at(3000), errmsg), errmsg);
	t = catalog_find_table(&mem, "heal");
	CHECK(t->tablets[0]->move != NULL);
	CHECK_OK_MSG(catalog_write_drop(&b, t, errmsg), errmsg);
	CHECK_EQ_INT(b.count, count + 1);
	apply(&b, 6000);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(6500), errmsg), errmsg);
	CHECK_EQ_INT(loaded.n_tables, 0);
	for (size_t i = 0; i < loaded.n_tablets; i++)
		CHECK(loaded.tablets[i]->move == NULL && loaded.tablets[i]->state == CAT_DELETED);

	batch_free(&b);
	catalog_free(&mem);
	catalog_free(&loaded);
	close_store();
}

static void set_masters(struct cat_masters *ms, size_t n, const uint64_t *ids,
			const char *const *addresses)
{
	ms->n = n;
	for (size_t i = 0; i < n; i++) {
		ms->ids[i] = ids[i];
		snprintf(ms->addresses[i], sizeof ms->addresses[i], "%s", addresses[i]);
	}
}

/* The masters document (members.c): written, loaded back whole; a newer
 * version replaces the older; absent, it loads as never written. */
TEST(masters_document)
{
	struct catalog loaded;
	struct cat_masters ms;
	struct batch b;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	open_store();
	catalog_init(&loaded);
	batch_init(&b);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1000), errmsg), errmsg);
	CHECK(loaded.masters.n == 0 && loaded.masters.next_id == 0);
	memset(&ms, 0, sizeof ms);
	ms.next_id = 5;
	set_masters(&ms, 3, (const uint64_t[]){1, 3, 4},
		    (const char *const[]){"127.0.0.1:7100", "127.0.0.3:7100", "127.0.0.4:7100"});
	CHECK_OK_MSG(catalog_write_masters(&b, &ms, errmsg), errmsg);
	apply(&b, 100);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.masters.next_id, 5);
	CHECK_EQ_INT(loaded.masters.n, 3);
	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ_INT(loaded.masters.ids[i], ms.ids[i]);
		CHECK_EQ_STR(loaded.masters.addresses[i], ms.addresses[i]);
	}
	/* Removing raft id 1: the whole document is replaced. */
	set_masters(&ms, 2, (const uint64_t[]){3, 4},
		    (const char *const[]){"127.0.0.3:7100", "127.0.0.4:7100"});
	CHECK_OK_MSG(catalog_write_masters(&b, &ms, errmsg), errmsg);
	apply(&b, 200);
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(1000), errmsg), errmsg);
	CHECK_EQ_INT(loaded.masters.n, 2);
	CHECK_EQ_INT(loaded.masters.ids[0], 3);
	CHECK_EQ_STR(loaded.masters.addresses[1], "127.0.0.4:7100");
	/* ... and as of before the first write, it was never written. */
	CHECK_OK_MSG(catalog_load(&loaded, st, ht_at(50), errmsg), errmsg);
	CHECK(loaded.masters.n == 0 && loaded.masters.next_id == 0);
	batch_free(&b);
	catalog_free(&loaded);
	close_store();
}

TEST_MAIN(T(round_trip), T(drop_and_purge), T(corrupt), T(names), T(tservers_leaders),
	  T(ddl_records), T(moves_and_drains), T(masters_document))
