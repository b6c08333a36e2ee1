/* The master's catalog: tables, their tablets and replica placement (the
 * persistent part), and the tablet servers that heartbeat this master with
 * what their replicas report (the volatile part).
 *
 * Persistence. The catalog is stored in the store of the tablet
 * "sys.catalog", a Raft group replicated on the masters, as DocDB documents
 * under DocKeys without a hash and with two string range components:
 *
 *   DocKey("table", <name>) -> {
 *       "schema":  bytes, the packed docraft.TableSchema (column ids assigned)
 *       "rf":      uint32, the replication factor
 *       "tablets": uint32, the number of tablets
 *   }
 *   DocKey("ddl", <client id, 32 hex digits>) -> {
 *       "seq": uint64, "op": text "create" or "drop", "table": text,
 *       "at_ms": uint64 (the master's wall clock when it was written)
 *   }   the last CreateTable / DropTable of that client that took effect,
 *       written in the same batch as its table's documents: a retry of it
 *       (same client id and seq) is answered with its first result, on
 *       this master or the next leader; purged CATALOG_DDL_TTL_MS later
 *       by a later DDL write.
 *   DocKey("tablet", <tablet id>) -> {
 *       "table":    text, the table's name
 *       "start":    uint32, "end": uint32, the partition [start, end)
 *       "state":    text, "running" or "deleted" (its table was dropped; the
 *                   row stays until no replica reports the tablet any more)
 *       "replicas": { uint64 raft id -> {"uuid": text, "address": text
 *                                        [, "joining": bool true]} }
 *       "next_raft_id": uint64, the raft id the tablet's next new replica
 *                   gets (ids are never reused); absent in catalogs written
 *                   before replica moves: the largest id + 1
 *   }
 *   DocKey("move", <tablet id>) -> {        a replica move in flight (moves.c)
 *       "reason": text ("re-replicate", "drain", "rebalance"),
 *       "from_raft_id": uint64, "from_uuid": text, "from_address": text,
 *       "to_uuid": text, "to_address": text, "new_raft_id": uint64,
 *       "step": text ("adding", "removing", "rolling-back"),
 *       "started_ms": uint64 (wall clock)
 *   }   written in the same batch as the tablet document that gains the
 *       new replica (marked "joining"); deleted in the same batch as the
 *       one that loses the replaced (or, rolled back, the new) replica.
 *   DocKey("drain", <tserver uuid>) -> {"at_ms": uint64}   a draining tserver
 *   DocKey("masters", "config") -> {
 *       "next_id": uint64, the lowest raft id never given to a master
 *       "members": { uint64 raft id -> address text }, the masters' Raft
 *                  configuration as the last change intended it
 *   }   written by MASTER_CHANGE_MASTERS before each change (members.c);
 *       absent until the first change (then the ids are 1..n, --masters)
 *
 * Each document is written whole (an object with an init marker, so it
 * replaces any older version); a drop deletes the table document and sets
 * every tablet's "state" in the same batch; a purge deletes a tablet's
 * document. The catalog_write_* functions append these operations to a
 * DocDB batch, which the caller replicates with tablet_write; the leader
 * applies the change to memory once the write is committed, and a new
 * leader rebuilds everything with catalog_load after its read barrier.
 *
 * Tablet servers, replica reports and leaders are not persisted: tablet
 * servers heartbeat the leader every second and re-register by doing so.
 *
 * Ownership: the catalog owns every table, tablet and tserver it indexes.
 * Lookups return borrowed pointers, valid until the entry is removed or the
 * catalog cleared. Single-threaded (the master's loop thread). */
#ifndef DOCRAFT_MASTER_CATALOG_H
#define DOCRAFT_MASTER_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc/rpc.h"
#include "docdb/batch.h"
#include "docdb/store.h"
#include "docraft.pb-c.h"
#include "master/placement.h"
#include "master/policy.h"
#include "server/placement_str.h"

/* The id of the catalog tablet (its Raft group on the masters). */
#define CATALOG_TABLET_ID "sys.catalog"
/* Longest table name: tablet ids "<name>-<i>-<8 hex>" must fit in 64. */
#define CATALOG_MAX_TABLE_NAME 48
/* Longest tablet id (listener.h: 64 printable bytes). */
#define CATALOG_MAX_TABLET_ID 64
/* Longest tserver uuid accepted (docs/cluster.md: 32 hex characters). */
#define CATALOG_MAX_UUID 64
/* Most replicas of a tablet: rf, and the new one while a move runs. */
#define CATALOG_MAX_REPLICAS (PLACEMENT_MAX_RF + 1)
/* Most servers of a leader's reported configuration the master keeps. */
#define CATALOG_MAX_CONFIG (CATALOG_MAX_REPLICAS + 2)

enum cat_state {
	CAT_CREATING = 0, /* rows being written: visible to no request */
	CAT_RUNNING,
	CAT_DELETING,     /* tables: the drop is being written */
	CAT_DELETED,      /* tablets: dropped; replicas are told to delete it */
};

struct cat_replica {
	uint64_t raft_id;
	char uuid[CATALOG_MAX_UUID + 1];
	char address[RPC_ADDRESS_MAX + 1];
	/* Volatile (this master's leadership only). */
	bool leader;             /* the tserver's last report: role "leader" */
	bool up;                 /* ... role "leader" or "follower" (not copying, failed, ...) */
	uint64_t term;           /* ... in this term */
	uint64_t seen_hb;        /* the tserver heartbeat that last reported it */
	uint64_t create_sent_ms; /* last create sent or instructed (loop ms) */
	bool gone;               /* deleted tablets: a heartbeat no longer lists it */
	/* Persisted: the new replica of a move in flight (created with join). */
	bool joining;
};

enum cat_move_step { CAT_MOVE_ADDING = 0, CAT_MOVE_REMOVING, CAT_MOVE_ROLLING_BACK };

/* A replica move in flight (the "move" document; moves.c drives it). */
struct cat_move {
	char reason[16];
	uint64_t from_raft_id;
	char from_uuid[CATALOG_MAX_UUID + 1];
	char from_address[RPC_ADDRESS_MAX + 1];
	char to_uuid[CATALOG_MAX_UUID + 1];
	char to_address[RPC_ADDRESS_MAX + 1];
	uint64_t new_raft_id;
	enum cat_move_step step;
	uint64_t started_ms; /* wall clock ms */
	/* Volatile (moves.c). */
	bool busy;            /* an RPC or catalog write of it in flight */
	bool writing;         /* ... a catalog write */
	uint64_t step_at_ms;  /* loop ms this master saw the step begin */
	uint64_t next_try_ms; /* loop ms before which no action is retried */
	uint32_t failures;    /* ADD / REMOVE refusals in this step */
	bool created;         /* the new replica's tserver answered its CREATE */
	uint64_t said_ms;     /* loop ms of the last "waiting" log line */
};

/* The configuration a tablet's leader last reported (TabletReport.config). */
struct cat_config {
	bool known;
	uint64_t term;  /* the leader's term */
	uint64_t index; /* config_index */
	bool committed; /* the leader had applied that entry (index <= applied_index) */
	uint32_t n;
	uint64_t id[CATALOG_MAX_CONFIG];
	bool voter[CATALOG_MAX_CONFIG];
};

#define CATALOG_TABLE_ID_SIZE 17 /* 16 hex digits + NUL */

struct cat_tablet {
	char id[CATALOG_MAX_TABLET_ID + 1];
	char table[CATALOG_MAX_TABLE_NAME + 1];
	uint32_t start, end; /* [start, end) of the hash space; end <= 65536 */
	enum cat_state state;
	uint32_t n_replicas;
	struct cat_replica replicas[CATALOG_MAX_REPLICAS]; /* by raft id */
	uint64_t next_raft_id;                           /* never reused */
	struct cat_move *move; /* owned; NULL: no move in flight */
	struct cat_config config; /* volatile: its leader's last report */
	uint64_t said_ms;         /* volatile: last "below a majority" warning (moves.c) */
	bool purging; /* the deletion of its row is being written */
	/* Volatile, a deleted tablet: when DropTable gives up waiting for its
	 * deletion on a majority (loop ms; 0: no DropTable waited yet). */
	uint64_t drop_deadline_ms;
	/* Volatile: the last leader move instructed (leader balancing). */
	uint64_t move_sent_ms; /* loop ms; 0: none */
	uint64_t move_to;      /* the raft id of its target */
};

struct cat_table {
	char name[CATALOG_MAX_TABLE_NAME + 1];
	/* Unique per CREATE TABLE (the same name created again gets another):
	 * sent to its tablets (CreateTablet) and to clients (GetTable), so a
	 * tablet of a dropped table refuses requests meant for its successor.
	 * "" for a table stored before ids existed (then nothing is checked). */
	char id[CATALOG_TABLE_ID_SIZE];
	Docraft__TableSchema *schema; /* unpacked from schema_pb, owned */
	uint8_t *schema_pb;           /* packed, owned */
	size_t schema_len;
	uint32_t rf;
	enum cat_state state;
	size_t n_tablets;
	struct cat_tablet **tablets; /* by partition start; the tablets belong to the catalog */
	uint32_t loading_tablets;    /* private: the count stored, while loading */
};

struct cat_tserver {
	char uuid[CATALOG_MAX_UUID + 1];
	char address[RPC_ADDRESS_MAX + 1];
	uint64_t last_hb_ms; /* loop ms of its last heartbeat (or of its registration) */
	uint64_t hb_count;   /* heartbeats received (0: known from the catalog only) */
	char placement[PLACEMENT_STR_MAX + 1]; /* its latest heartbeat's "cloud.region.zone" */
	uint64_t drain_seen_ms; /* loop ms this master first saw it draining (moves.c) */
	/* Its latest heartbeat's RESP address (issue 17; "" none), in memory only. */
	char redis_address[RPC_ADDRESS_MAX + 1];
};

/* A DDL request id recorded (see the "ddl" document above). */
#define CATALOG_DDL_ID_LEN 16
#define CATALOG_DDL_TTL_MS (3600u * 1000)
/* Stale records purged per DDL write, at most (bounds the batch). */
#define CATALOG_DDL_PURGE_MAX 32
enum cat_ddl_op { CAT_DDL_CREATE = 1, CAT_DDL_DROP };

struct cat_ddl {
	char client[2 * CATALOG_DDL_ID_LEN + 1]; /* hex */
	uint64_t seq;
	enum cat_ddl_op op;
	char table[CATALOG_MAX_TABLE_NAME + 1];
	uint64_t at_ms;
};

/* The "masters" document (members.c); n == 0 and next_id == 0: never written. */
#define CATALOG_MAX_MASTERS 16
struct cat_masters {
	uint64_t next_id;
	size_t n;
	uint64_t ids[CATALOG_MAX_MASTERS];
	char addresses[CATALOG_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
};

struct catalog {
	struct cat_masters masters;    /* issue 15: master membership */
	struct cat_ddl **ddl;          /* sorted by client */
	size_t n_ddl, cap_ddl;
	struct cat_table **tables;     /* sorted by name */
	size_t n_tables, cap_tables;
	struct cat_tablet **tablets;   /* every tablet (deleted ones too), sorted by id */
	size_t n_tablets, cap_tablets;
	struct cat_tserver **tservers; /* sorted by uuid */
	size_t n_tservers, cap_tservers;
	char **drains;                 /* uuids of draining tservers, sorted */
	size_t n_drains, cap_drains;
	/* private: move documents read before their tablets, while loading */
	struct cat_move **loading_moves;
	char (*loading_move_ids)[CATALOG_MAX_TABLET_ID + 1];
	size_t n_loading_moves;
};

void catalog_init(struct catalog *c);
/* Frees everything. */
void catalog_free(struct catalog *c);
/* Drops every table, tablet, move and drain mark (not the tservers). */
void catalog_clear_tables(struct catalog *c);
/* Forgets every tserver (a new leader starts from fresh heartbeats). */
void catalog_clear_tservers(struct catalog *c);

/* ---- tables and tablets ---------------------------------------------------------------------- */

/* Checks a table name: 1..CATALOG_MAX_TABLE_NAME characters, a letter or
 * '_' then letters, digits, '_' or '.'. DOCRAFT_EINVAL with the reason. */
int catalog_check_table_name(const char *name, char *errmsg);

/* A new table (state CAT_CREATING, no tablets) with the packed schema
 * schema_pb (copied). DOCRAFT_EINVAL (bad name, schema bytes that do not
 * unpack, a schema named otherwise) with *out NULL. */
int catalog_table_new(const char *name, const void *schema_pb, size_t schema_len, uint32_t rf,
		      struct cat_table **out, char *errmsg);
/* Frees a table that was never added (its tablets too). */
void catalog_table_free(struct cat_table *t);
/* Appends a new tablet (state as the table's) to t, which must not be in
 * the catalog yet; partitions must be appended in order. Returns it. */
struct cat_tablet *catalog_table_add_tablet(struct cat_table *t, const char *id, uint32_t start,
					    uint32_t end);

/* Adds t and its tablets to the catalog, which takes ownership.
 * DOCRAFT_EINVAL (nothing added, t still the caller's) if a table of that
 * name or a tablet of one of its ids exists. */
int catalog_add_table(struct catalog *c, struct cat_table *t, char *errmsg);
/* Sets the state of t and of every tablet of t. */
void catalog_set_table_state(struct cat_table *t, enum cat_state s);
/* Removes t and its tablets and frees them (a create that failed). */
void catalog_remove_table(struct catalog *c, struct cat_table *t);
/* The drop, once written: t's tablets become CAT_DELETED (they stay, not
 * attached to any table, until purged) and t is removed and freed. */
void catalog_drop_table(struct catalog *c, struct cat_table *t);
/* Removes a (deleted) tablet and frees it. */
void catalog_remove_tablet(struct catalog *c, struct cat_tablet *tb);

struct cat_table *catalog_find_table(const struct catalog *c, const char *name);
struct cat_tablet *catalog_find_tablet(const struct catalog *c, const char *id);

/* ---- DDL request ids ------------------------------------------------------------------------- */

/* Fills d's client (hex of id, CATALOG_DDL_ID_LEN bytes), seq, op, table
 * and at_ms. */
void catalog_ddl_set(struct cat_ddl *d, const uint8_t *id, uint64_t seq, enum cat_ddl_op op,
		     const char *table, uint64_t at_ms);
/* The last DDL recorded for the client d->client names, NULL if none. */
const struct cat_ddl *catalog_find_ddl(const struct catalog *c, const char *client);
/* Records d (copied; replaces the client's earlier one), once written. */
void catalog_put_ddl(struct catalog *c, const struct cat_ddl *d);
/* Appends d's document. */
int catalog_write_ddl(struct batch *b, const struct cat_ddl *d, char *errmsg);
/* Appends the deletion of up to CATALOG_DDL_PURGE_MAX records written
 * before now_ms - CATALOG_DDL_TTL_MS, and forgets them (a batch that then
 * fails leaves them stored: the next purge deletes them). */
int catalog_purge_ddl(struct catalog *c, struct batch *b, uint64_t now_ms, char *errmsg);

/* ---- persistence ----------------------------------------------------------------------------- */

/* Appends the documents of t and of all its tablets (their state written
 * as "running"). DOCRAFT_EINVAL only if DocDB refuses a value (e.g. a
 * schema larger than DOCWRITE_MAX_VALUE); the batch is then unchanged. */
int catalog_write_table(struct batch *b, const struct cat_table *t, char *errmsg);
/* Appends the drop of t: its document deleted, its tablets "deleted". */
int catalog_write_drop(struct batch *b, const struct cat_table *t, char *errmsg);
/* Appends the deletion of a tablet's document. */
int catalog_write_purge(struct batch *b, const struct cat_tablet *tb, char *errmsg);
/* Appends the document of the running tablet tb as it is in memory (its
 * replicas with their joining marks, next_raft_id). */
int catalog_write_tablet(struct batch *b, const struct cat_tablet *tb, char *errmsg);
/* Appends tb->move's document (tb->move must be set). */
int catalog_write_move(struct batch *b, const struct cat_tablet *tb, char *errmsg);
/* Appends the deletion of tablet id's move document. */
int catalog_write_move_delete(struct batch *b, const char *id, char *errmsg);
/* Appends the drain mark of tserver uuid (on) or its deletion (!on). */
int catalog_write_drain(struct batch *b, const char *uuid, bool on, uint64_t at_ms,
			char *errmsg);

/* ---- moves and drains ------------------------------------------------------------------------ */

/* "adding", "removing", "rolling-back". */
const char *catalog_move_step_name(enum cat_move_step s);
/* The replica of tb with raft id id; NULL if none. */
struct cat_replica *catalog_replica(struct cat_tablet *tb, uint64_t id);
/* Whether tserver uuid is marked draining. */
bool catalog_draining(const struct catalog *c, const char *uuid);
/* Marks (on) or unmarks uuid draining in memory, once written. */
void catalog_set_drain(struct catalog *c, const char *uuid, bool on);

/* Appends the "masters" document of ms. */
int catalog_write_masters(struct batch *b, const struct cat_masters *ms, char *errmsg);

/* Replaces the tables, tablets, DDL records and the masters document of c with those stored in s
 * as of read_ht (tables and their tablets CAT_RUNNING, dropped tablets
 * CAT_DELETED; no volatile state), with their moves and the drain marks
 * (a move names a running tablet holding both its replicas, the new one
 * joining). Tservers are kept. On error (a store
 * error, or DOCRAFT_ECORRUPT for documents that do not decode or do not
 * fit together: a table whose tablets do not cover the hash space, a
 * replica without address, ...) c holds no tables or tablets and errmsg
 * says why. */
int catalog_load(struct catalog *c, struct store *s, uint64_t read_ht, char *errmsg);

/* ---- tablet servers -------------------------------------------------------------------------- */

struct cat_tserver *catalog_find_tserver(const struct catalog *c, const char *uuid);
/* The index of tserver uuid in c->tservers; SIZE_MAX if unknown. Valid
 * until a tserver is added or the tservers are cleared. */
size_t catalog_tserver_index(const struct catalog *c, const char *uuid);
/* The tserver uuid, created if new, with its address updated. */
struct cat_tserver *catalog_tserver_upsert(struct catalog *c, const char *uuid,
					   const char *address);
/* Whether ts heartbeated within timeout_ms of now (loop ms). */
bool catalog_tserver_live(const struct cat_tserver *ts, uint64_t now, uint64_t timeout_ms);

/* The leader of tb as reported: among the replicas whose tserver is live
 * and listed tb as leader in its latest heartbeat, the one with the
 * highest term; NULL when none. */
const struct cat_replica *catalog_tablet_leader(const struct catalog *c,
						const struct cat_tablet *tb, uint64_t now,
						uint64_t timeout_ms);

#endif
