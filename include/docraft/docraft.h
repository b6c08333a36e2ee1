/* libdocraft: the routing client of a docraft cluster.
 *
 * A client connects to a cluster from its list of master addresses, creates
 * and drops tables, and reads and writes rows. It keeps a metadata cache
 * (every table it used: schema and tablet locations), computes the 16-bit
 * hash of a row's hash columns, and sends each request to the leader of the
 * tablet whose partition covers that hash. NOT_LEADER replies are followed
 * at once to the leader they name; a transport error, a timeout or an
 * unknown tablet refreshes that table's locations from the master leader;
 * retries back off with jitter, and a request gives up after its total
 * time (default 10 s) with DOCRAFT_EUNAVAILABLE. A retried write carries the
 * client id and sequence number of its first attempt, so it applies once.
 * The design notes at the top of src/client/client.c (loop, jobs,
 * batching), src/client/metacache.c (cache, masters) and
 * src/client/retry.c (one request's life, drawn) have the whole picture.
 *
 * Two layers:
 *
 *   blocking   docraft_write, docraft_get, docraft_scan, docraft_exec_cql,
 *              ... : call, wait, get the outcome. The reason of a failure
 *              is docraft_errmsg() (per thread, like dlerror).
 *   async      docraft_write_async, ... : a caller-owned struct docraft_req
 *              and a callback, run on the client's loop (libuv style).
 *
 * Loops and threads. By default a client owns a libuv loop and runs it on a
 * thread of its own; every function may then be called from any number of
 * threads at once (each blocking call queues a request for the loop thread
 * and sleeps on a condition variable until its callback has run), and async
 * callbacks run on the client's thread. Why a thread and not the caller's:
 * connections stay serviced between calls (a server closing a connection
 * is noticed at once, not on the next call), many application threads share
 * one client, its connections and its cache, and the blocking calls of a
 * simple program cost one context switch each, far below a network round
 * trip. A program that already runs a libuv loop may instead give it in
 * docraft_client_options.loop: the client then has no thread, every call
 * must be made on that loop's thread, and only the async functions work
 * (the blocking ones would have to wait for the very loop they block; they
 * return DOCRAFT_EINVAL).
 *
 * Errors: every function that can fail returns DOCRAFT_OK (0) or a
 * DOCRAFT_E* code of docraft/error.h. The ones a caller acts on:
 *   DOCRAFT_EUNAVAILABLE      the request gave up (no leader, no master, the
 *                             network): its outcome is unknown for a write
 *   DOCRAFT_EINVAL            bad argument, unknown column, wrong type
 *   DOCRAFT_ETABLENOTFOUND    no such table
 *   DOCRAFT_ECLOSED           the client is closing
 *
 * Memory: opaque objects (docraft_client, docraft_op, docraft_schema,
 * docraft_result) are created and freed by this library; values
 * (docraft_value) are plain structs whose strings are borrowed: functions
 * that keep a value copy its bytes. Allocation failure aborts the process
 * (as everywhere in docraft).
 *
 * Signals: SIGPIPE must be ignored by a program that links libdocraft
 * (signal(SIGPIPE, SIG_IGN) before docraft_client_open). The library
 * writes to its connections with plain write(2) (libuv), and writing to a
 * connection the server has closed (a server stopping, crashing, or
 * closing an idle connection) raises SIGPIPE, whose default action ends
 * the whole process. The library itself neither ignores nor blocks any
 * signal, in the caller's threads or in its own. With SIGPIPE ignored,
 * the write fails with EPIPE instead and the request is retried like
 * after any transport error.
 *
 * Every exported function carries DOCRAFT_API; the library is built with
 * -fvisibility=hidden. */
#ifndef DOCRAFT_DOCRAFT_H
#define DOCRAFT_DOCRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docraft/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uv_loop_s;

/* ------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------ */

/* The type of a docraft_value. Column types map to value types as:
 *   boolean                        BOOL
 *   tinyint smallint int bigint    INT (range-checked against the column)
 *   float double                   FLOAT or DOUBLE (either, converted)
 *   text                           TEXT (must be UTF-8)
 *   blob                           BLOB
 *   timestamp                      TIMESTAMP (µs since the epoch) or INT
 *   uuid                           UUID
 *   date                           DATE (CQL's raw date: days + 2^31)
 * NULL fits any regular column (and deletes it), never a key column nor a
 * collection element. Reads return the type of the column's line above
 * (INT for every integer column). */
enum docraft_type {
	DOCRAFT_TYPE_NULL = 0,
	DOCRAFT_TYPE_BOOL,
	DOCRAFT_TYPE_INT,
	DOCRAFT_TYPE_FLOAT,
	DOCRAFT_TYPE_DOUBLE,
	DOCRAFT_TYPE_TEXT,
	DOCRAFT_TYPE_BLOB,
	DOCRAFT_TYPE_TIMESTAMP,
	DOCRAFT_TYPE_UUID,
	DOCRAFT_TYPE_DATE,
};

/* One primitive value. Strings are borrowed (not NUL-terminated in
 * general: use len). Build values with the docraft_value_* functions. */
typedef struct docraft_value {
	int type; /* enum docraft_type */
	union {
		bool b;
		int64_t i; /* INT; TIMESTAMP (µs) */
		float f;
		double d;
		struct {
			const char *p;
			size_t len;
		} s; /* TEXT, BLOB */
		uint8_t uuid[16];
		uint32_t date;
	} v;
} docraft_value;

DOCRAFT_API docraft_value docraft_value_null(void);
DOCRAFT_API docraft_value docraft_value_bool(bool b);
DOCRAFT_API docraft_value docraft_value_int(int64_t i);
DOCRAFT_API docraft_value docraft_value_float(float f);
DOCRAFT_API docraft_value docraft_value_double(double d);
/* s is NUL-terminated; borrowed. */
DOCRAFT_API docraft_value docraft_value_text(const char *s);
DOCRAFT_API docraft_value docraft_value_textn(const char *s, size_t len);
DOCRAFT_API docraft_value docraft_value_blob(const void *p, size_t len);
DOCRAFT_API docraft_value docraft_value_timestamp(int64_t micros);
/* uuid: 16 bytes in RFC 4122 order (copied). */
DOCRAFT_API docraft_value docraft_value_uuid(const uint8_t uuid[16]);
DOCRAFT_API docraft_value docraft_value_date(uint32_t cql_date);

/* Writes v the way the shell shows it (cqlsh style: text bare at the top
 * level, 'quoted' when quoted is true; blobs 0x..; timestamps ISO-8601 UTC)
 * into out (size bytes, NUL-terminated, truncated to fit). Returns the
 * length the full text needs, like snprintf. */
DOCRAFT_API size_t docraft_value_format(const docraft_value *v, bool quoted, char *out,
					size_t size);

/* ------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------ */

typedef struct docraft_client docraft_client;

typedef struct docraft_client_options {
	/* Total time of one request, retries included (ms, >= 1; default
	 * 10000). When it passes the request fails DOCRAFT_EUNAVAILABLE. */
	uint32_t timeout_ms;
	/* Time of one attempt, to a tablet server or a master (ms, >= 1;
	 * default 2000; capped by what is left of timeout_ms). An attempt that
	 * times out refreshes the tablet's locations and is retried. */
	uint32_t rpc_timeout_ms;
	/* Backoff between retries that need one: jittered exponential from
	 * backoff_min_ms, doubling to backoff_max_ms (default 20, 1000). */
	uint32_t backoff_min_ms;
	uint32_t backoff_max_ms;
	/* CREATE TABLE through docraft_exec_cql, and docraft_table_create with
	 * options NULL: tablets and replication factor (default 0 for both:
	 * the master's defaults, one tablet per live tablet server, as
	 * YugabyteDB does on small servers, and its --replication-factor). */
	uint32_t num_tablets;
	uint32_t replication_factor;
	/* NULL (default): the client owns a loop and a thread. Otherwise the
	 * client runs on this loop: async API only, on the loop's thread (see
	 * the top of this file). */
	struct uv_loop_s *loop;
} docraft_client_options;

/* Fills o with the defaults above. */
DOCRAFT_API void docraft_client_options_init(docraft_client_options *o);

/* Creates a client for the cluster whose masters are listed in masters:
 * "ip:port[,ip:port...]" (IPv4 literals; ports default to 7100 when
 * omitted; 1 to 16 entries). No connection is made here: the first request
 * finds the master leader (any master answers or names it), so a program
 * may start before its cluster. options may be NULL (the defaults); it is
 * copied. On success *out must be closed with docraft_client_close. On
 * failure (DOCRAFT_EINVAL: a bad address or option) *out is NULL and
 * errmsg (DOCRAFT_ERRMSG_SIZE bytes, may be NULL) says why. */
DOCRAFT_API int docraft_client_open(const char *masters, const docraft_client_options *options,
				    docraft_client **out, char *errmsg);

/* Closes the client: requests in flight fail with DOCRAFT_ECLOSED (their
 * callbacks run, blocking calls return), connections are closed, then the
 * memory is released. Blocks until that is done; must not be called from a
 * client callback nor concurrently with other calls on the client that
 * start after it. With a caller's loop (options.loop) it runs that loop
 * until the client's handles are closed, so it must not be called from a
 * callback of that loop either; use docraft_client_close_async there.
 * NULL is a no-op. */
DOCRAFT_API void docraft_client_close(docraft_client *c);

/* For clients on a caller's loop, from that loop's thread: starts closing
 * as above and calls cb(arg) (may be NULL) from the loop once the client's
 * memory is released (never inside this call). DOCRAFT_EINVAL (nothing
 * done) for a client that owns its loop: use docraft_client_close. */
DOCRAFT_API int docraft_client_close_async(docraft_client *c, void (*cb)(void *arg), void *arg);

/* The 16-byte id this client puts on its writes (random per client). */
DOCRAFT_API void docraft_client_id(const docraft_client *c, uint8_t out[16]);

/* The reason of the last failed blocking call made by this thread ("" if
 * none failed yet). Valid until the thread's next call. */
DOCRAFT_API const char *docraft_errmsg(void);

/* ------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

/* A table schema under construction (the builder alternative to CQL). */
typedef struct docraft_schema docraft_schema;

enum docraft_column_kind {
	DOCRAFT_COLUMN_HASH = 1,   /* partition key: hashed to pick the tablet */
	DOCRAFT_COLUMN_RANGE,      /* clustering key, ascending */
	DOCRAFT_COLUMN_RANGE_DESC, /* clustering key, descending */
	DOCRAFT_COLUMN_REGULAR,
};

/* A new, empty schema for table name (an identifier). */
DOCRAFT_API int docraft_schema_new(const char *table, docraft_schema **out, char *errmsg);
/* Adds a column. type is a CQL type name: "int", "text", "bigint",
 * "timestamp", "map<text, int>", "set<int>", "list<text>", ... Hash columns
 * come first, then range columns, then regular ones; key columns are
 * primitive. DOCRAFT_EINVAL with the reason otherwise (schema unchanged). */
DOCRAFT_API int docraft_schema_add_column(docraft_schema *s, const char *name, int kind,
					  const char *type, char *errmsg);
/* Table-wide default TTL in milliseconds (0: none, the default). */
DOCRAFT_API void docraft_schema_set_default_ttl(docraft_schema *s, int64_t ttl_ms);
/* Packed rows (see docs/docdb.md); off by default. */
DOCRAFT_API void docraft_schema_set_packed(docraft_schema *s, bool packed);
DOCRAFT_API void docraft_schema_free(docraft_schema *s);

typedef struct docraft_table_options {
	uint32_t num_tablets;        /* 0: the client's option */
	uint32_t replication_factor; /* 0: the client's option */
	bool if_not_exists;          /* an existing table is success */
} docraft_table_options;

/* Creates a table on the cluster (the master splits the hash space into
 * num_tablets tablets and places their replicas). options may be NULL.
 * The schema is copied. Blocking. */
DOCRAFT_API int docraft_table_create(docraft_client *c, const docraft_schema *s,
				     const docraft_table_options *options);
/* The same from a CQL statement "CREATE TABLE ..." (docraft shell's
 * dialect, see docraft_exec_cql); options.if_not_exists also follows the
 * statement's IF NOT EXISTS. */
DOCRAFT_API int docraft_table_create_cql(docraft_client *c, const char *cql,
					 const docraft_table_options *options);
/* Drops the table (if_exists: a missing table is success) and forgets it
 * in the metadata cache. Blocking. */
DOCRAFT_API int docraft_table_drop(docraft_client *c, const char *table, bool if_exists);

/* ------------------------------------------------------------------------
 * Row operations
 * ------------------------------------------------------------------------ */

/* One operation on one row (one WriteOp on the wire). Built here, checked
 * against the table's schema by docraft_write. The primary key is given in
 * schema order: hash columns, then range columns. Every constructor copies
 * what it is given and returns DOCRAFT_EINVAL (and *out NULL) for a NULL
 * pointer, no key, or more than 1024 values. */
typedef struct docraft_op docraft_op;

/* INSERT: the row exists afterwards (liveness column) with the columns
 * given by docraft_op_column / docraft_op_collection. */
DOCRAFT_API int docraft_op_insert(const docraft_value *key, size_t nkey, docraft_op **out);
/* UPDATE: sets the columns given by docraft_op_column (a NULL value deletes
 * the column); does not create the row's liveness. */
DOCRAFT_API int docraft_op_update(const docraft_value *key, size_t nkey, docraft_op **out);
/* DELETE FROM: the whole row. */
DOCRAFT_API int docraft_op_delete_row(const docraft_value *key, size_t nkey, docraft_op **out);
/* DELETE column: one column (a collection as a whole too). */
DOCRAFT_API int docraft_op_delete_column(const docraft_value *key, size_t nkey, const char *column,
					 docraft_op **out);
/* m = m + {mkeys[i]: mvals[i]} */
DOCRAFT_API int docraft_op_map_put(const docraft_value *key, size_t nkey, const char *column,
				   const docraft_value *mkeys, const docraft_value *mvals, size_t n,
				   docraft_op **out);
/* m = m - {mkeys...}  (DELETE m[k]) */
DOCRAFT_API int docraft_op_map_remove(const docraft_value *key, size_t nkey, const char *column,
				      const docraft_value *mkeys, size_t n, docraft_op **out);
/* s = s + {elems...} / s = s - {elems...} */
DOCRAFT_API int docraft_op_set_add(const docraft_value *key, size_t nkey, const char *column,
				   const docraft_value *elems, size_t n, docraft_op **out);
DOCRAFT_API int docraft_op_set_remove(const docraft_value *key, size_t nkey, const char *column,
				      const docraft_value *elems, size_t n, docraft_op **out);
/* l = l + [elems...] / l = [elems...] + l */
DOCRAFT_API int docraft_op_list_append(const docraft_value *key, size_t nkey, const char *column,
				       const docraft_value *elems, size_t n, docraft_op **out);
DOCRAFT_API int docraft_op_list_prepend(const docraft_value *key, size_t nkey, const char *column,
					const docraft_value *elems, size_t n, docraft_op **out);
/* c = {...} / [...]: replaces the whole collection (mvals only for maps,
 * else NULL). */
DOCRAFT_API int docraft_op_collection_replace(const docraft_value *key, size_t nkey,
					      const char *column, const docraft_value *keys,
					      const docraft_value *vals, size_t n,
					      docraft_op **out);

/* INSERT/UPDATE: one primitive column's value (copied). DOCRAFT_EINVAL on
 * another kind of op. */
DOCRAFT_API int docraft_op_column(docraft_op *op, const char *column, const docraft_value *v);
/* INSERT: a collection column's elements (vals only for maps, else NULL). */
DOCRAFT_API int docraft_op_collection(docraft_op *op, const char *column, const docraft_value *keys,
				      const docraft_value *vals, size_t n);
/* Conditional writes (compare-and-set). Adds a condition to op: the write
 * that carries op applies only if, at the op's place in its tablet's Raft
 * log, op's row has column equal to *expected; expected NULL (or a NULL
 * value): the column has no live value (the row may not exist). The check
 * and the write are one atomic step, evaluated identically on every
 * replica, so the outcome is linearizable either way. Several conditions
 * (on any ops of the write) must all hold. A write whose condition is false
 * applies nothing and returns DOCRAFT_ECONDITION, a definite outcome (a
 * retry of it is answered from the tablet's retry table, never evaluated
 * twice). Every op of a docraft_write that carries a condition must fall on
 * one tablet (DOCRAFT_EINVAL otherwise). column must be a primitive regular
 * column; the value is copied and checked against the schema by
 * docraft_write. DOCRAFT_EINVAL for NULL op/column. */
DOCRAFT_API int docraft_op_if(docraft_op *op, const char *column, const docraft_value *expected);
/* This op's TTL in ms (0: never expires), overriding docraft_write's. */
DOCRAFT_API void docraft_op_set_ttl(docraft_op *op, int64_t ttl_ms);
DOCRAFT_API void docraft_op_free(docraft_op *op);

/* docraft_write's ttl_ms: no TTL given (the table's default applies). */
#define DOCRAFT_TTL_DEFAULT (-1)

/* Applies ops[0..n) to table. The ops are grouped by tablet (by the hash
 * of each row's hash columns); each group is one WriteRequest, atomic on
 * its tablet, and the groups are sent in parallel. Ops on one row keep
 * their order. Writes to distinct tablets are NOT atomic together: on
 * failure some groups may have applied (the error is the first failing
 * group's, in op order). ttl_ms applies to ops without their own TTL
 * (DOCRAFT_TTL_DEFAULT: none). *ht (may be NULL) gets the largest hybrid
 * time the groups applied at: a read at that time sees them all. The ops
 * are only read, and may be freed after the call. Blocking. */
DOCRAFT_API int docraft_write(docraft_client *c, const char *table, docraft_op *const *ops,
			      size_t n, int64_t ttl_ms, uint64_t *ht);

/* ------------------------------------------------------------------------
 * Reads
 * ------------------------------------------------------------------------ */

/* Rows read by docraft_get or docraft_scan, with their table's columns
 * (primary key columns first, then the regular ones, schema order). */
typedef struct docraft_result docraft_result;

/* Reads one row by its full primary key (schema order) at read_ht (0: now,
 * linearizable; else a past hybrid time within the history retention).
 * *out: a result with 0 or 1 row (free it). Blocking. */
DOCRAFT_API int docraft_get(docraft_client *c, const char *table, const docraft_value *key,
			    size_t nkey, uint64_t read_ht, docraft_result **out);

/* What a scan reads: every row with the given hash key (all hash columns),
 * or every row of the table (n_hash 0: tablet after tablet, in hash
 * order), optionally narrowed by = on the first n_eq range columns and
 * bounds on range column n_eq. */
typedef struct docraft_scan_spec {
	const docraft_value *hash_key;
	size_t n_hash;
	const docraft_value *range_eq;
	size_t n_eq;
	const docraft_value *lower; /* NULL: unbounded */
	bool lower_incl;
	const docraft_value *upper; /* NULL: unbounded */
	bool upper_incl;
	bool reverse;       /* descending clustering order (ORDER BY ... DESC) */
	uint64_t limit;     /* rows in this result; 0: all (see resume) */
	uint32_t page_size; /* rows per RPC; 0: 1000 */
	uint64_t read_ht;   /* 0: now; the first page's read time is kept */
} docraft_scan_spec;

/* Scans table; *out gets up to spec->limit rows. If more may follow,
 * docraft_result_has_more(*out) is true and docraft_scan_resume continues
 * at the same read time. Blocking. */
DOCRAFT_API int docraft_scan(docraft_client *c, const char *table, const docraft_scan_spec *spec,
			     docraft_result **out);
/* The next up to limit rows after prev (a scan result with has_more; limit
 * 0: the original scan's limit). prev stays valid (free it). */
DOCRAFT_API int docraft_scan_resume(docraft_client *c, const docraft_result *prev, uint64_t limit,
				    docraft_result **out);

DOCRAFT_API size_t docraft_result_nrows(const docraft_result *r);
DOCRAFT_API size_t docraft_result_ncolumns(const docraft_result *r);
DOCRAFT_API const char *docraft_result_column_name(const docraft_result *r, size_t col);
/* The column's CQL type: "int", "map<text, text>", ... */
DOCRAFT_API const char *docraft_result_column_type(const docraft_result *r, size_t col);
DOCRAFT_API bool docraft_result_column_is_collection(const docraft_result *r, size_t col);
/* Index of the named column, or -1. */
DOCRAFT_API int docraft_result_column_index(const docraft_result *r, const char *name);
/* The value of a primitive column of a row (type NULL when the column is
 * NULL; a collection column gives NULL too: use docraft_result_elems).
 * Strings point into r. Out-of-range indexes give NULL. */
DOCRAFT_API docraft_value docraft_result_value(const docraft_result *r, size_t row, size_t col);
/* A collection column's elements: keys (map keys, set members, list items
 * in order) and, for maps, values (else NULL). Returns the count (0 for an
 * empty or NULL collection). Pointers into r. */
DOCRAFT_API size_t docraft_result_elems(const docraft_result *r, size_t row, size_t col,
					const docraft_value **keys, const docraft_value **vals);
/* The hybrid time the rows were read at. */
DOCRAFT_API uint64_t docraft_result_read_ht(const docraft_result *r);
DOCRAFT_API bool docraft_result_has_more(const docraft_result *r);
DOCRAFT_API void docraft_result_free(docraft_result *r);

/* ------------------------------------------------------------------------
 * CQL and administration (what the docraft CLI runs)
 * ------------------------------------------------------------------------ */

/* Where text output goes: out for results, err for error messages. Each
 * call gets a piece of text (not NUL-terminated). NULL functions drop it. */
typedef struct docraft_printer {
	void (*out)(void *arg, const char *text, size_t len);
	void (*err)(void *arg, const char *text, size_t len);
	void *arg;
} docraft_printer;

/* Runs the CQL statements of text (docraft shell's subset: CREATE/DROP
 * TABLE, INSERT, UPDATE, DELETE, SELECT ... [AS OF <hybrid time>]; the
 * grammar is in src/cql/parser.c, the mapping to operations in
 * src/client/cql.c) in order and prints SELECT results as cqlsh does. The
 * whole text is parsed first (a syntax error runs nothing); execution stops
 * at the first failing statement. Errors are printed to p->err, pointing
 * at the offending token when there is one:
 *
 *   INSERT INTO t (a) VALUS (1)
 *                     ^^^^^ expected VALUES
 *
 * and returned (DOCRAFT_EINVAL for CQL errors). Blocking. */
DOCRAFT_API int docraft_exec_cql(docraft_client *c, const char *text, const docraft_printer *p);

/* Whether text ends a statement: its last token is ';' (outside strings and
 * comments). For shells that read statements line by line. */
DOCRAFT_API bool docraft_cql_complete(const char *text);

/* Admin commands, printing tables to p->out. Blocking.
 *   tservers   every tablet server: uuid, address, live, heartbeat age,
 *              replicas, leaders, state (live / unreachable / failed),
 *              placement, drain (- / draining / drained), moves in flight
 *   tables     every table with its schema as CQL
 *   tablets    the table's tablets: partition, leader, status (ok, or
 *              leaderless / under-replicated(live=N) / moving), replicas;
 *              then the moves in progress
 *   step_down  asks the tablet's leader to step down: any up-to-date voter
 *              takes over (step_down_to: the replica at address to,
 *              "ip:port", which must be one of the tablet's; EINVAL
 *              otherwise)
 *   dump       the DocDB dump of one replica of the tablet: the leader's,
 *              or replica's ("ip:port") when given */
DOCRAFT_API int docraft_admin_tservers(docraft_client *c, const docraft_printer *p);
DOCRAFT_API int docraft_admin_tables(docraft_client *c, const docraft_printer *p);
DOCRAFT_API int docraft_admin_tablets(docraft_client *c, const char *table,
				      const docraft_printer *p);
DOCRAFT_API int docraft_admin_step_down(docraft_client *c, const char *tablet_id,
					const docraft_printer *p);
DOCRAFT_API int docraft_admin_step_down_to(docraft_client *c, const char *tablet_id, const char *to,
					   const docraft_printer *p);
DOCRAFT_API int docraft_admin_dump(docraft_client *c, const char *tablet_id, const char *replica,
				   const docraft_printer *p);
/* Master membership (docs/cluster.md, "Master membership").
 *   masters        every master (ListMasters, which any master answers):
 *                  address, raft id, "leader" for the leader it names
 *   master_add     adds the master at address ("ip:port", started with
 *                  --join): one Raft change of the masters at a time;
 *                  prints the masters after it. DOCRAFT_EBUSY while
 *                  another change runs, DOCRAFT_EINVAL for a bad address or
 *                  beyond the most masters allowed (7)
 *   master_remove  removes the master at address (the leader hands its
 *                  leadership over first); DOCRAFT_ENOTFOUND if it is not
 *                  a master, DOCRAFT_EINVAL for the last one, DOCRAFT_EBUSY
 *                  as above.
 * Blocking; DOCRAFT_EINVAL for NULL c or address. */
DOCRAFT_API int docraft_admin_masters(docraft_client *c, const docraft_printer *p);
DOCRAFT_API int docraft_admin_master_add(docraft_client *c, const char *address,
					 const docraft_printer *p);
DOCRAFT_API int docraft_admin_master_remove(docraft_client *c, const char *address,
					    const docraft_printer *p);

/* The cluster as the master leader sees it (docs/cluster.md, "Self-healing:
 * commands and flags"): "name: value" lines for the master leader, the
 * masters, tservers by state, tables, tablets, under-replicated and
 * leaderless tablets (count, then up to 10 ids), moves in flight, then one
 * row per move (tablet, reason, from, to, new raft id, step, age). Blocking;
 * the master's error otherwise (an older master: "unknown method"). */
DOCRAFT_API int docraft_admin_cluster(docraft_client *c, const docraft_printer *p);
/* Marks the tserver (its uuid or "ip:port") draining — the master moves its
 * leaders, then its replicas, away — or, with undrain, not any more. Prints
 * one line with the replicas and leaders left. With wait_s > 0 (drain only)
 * it then polls the master every second, printing a line whenever the
 * counts change, until the tserver is drained (no replica left: it can be
 * stopped); DOCRAFT_ETIMEDOUT after wait_s seconds, DOCRAFT_EINVAL if it
 * is undrained meanwhile. An unknown tserver: DOCRAFT_ENOTFOUND. Blocking. */
DOCRAFT_API int docraft_admin_drain(docraft_client *c, const char *tserver, bool undrain,
				    uint32_t wait_s, const docraft_printer *p);
/* Replica checksums of every tablet of table (docs/cluster.md, "Replica
 * checksums"): for each tablet, its leader (as the master last heard it;
 * the other replicas in turn when it does not answer) is asked for the
 * checksum at read_ht 0, i.e. at the last write it applied, then every
 * other replica at the leader's read_ht (each waits until it has applied up
 * to it). Prints one line per replica to p->out:
 *
 *   <tablet> <address> <leader|follower|learner> rows=<n> checksum=<16 hex>
 *       applied=<index> read_ht=<ht>         (one line)
 *   <tablet> <address> <role> UNAVAILABLE: <reason>
 *
 * then a last line: "checksums: N tablets, all replicas agree", or
 * "checksums: MISMATCH in tablet X[, Y ...]", or "checksums: INCOMPLETE:
 * <the first replica that did not answer>". Returns DOCRAFT_OK when every
 * replica answered and all agree (same rows and checksum per tablet);
 * DOCRAFT_ECORRUPT on a mismatch (even if a replica also failed to
 * answer); DOCRAFT_EUNAVAILABLE when a replica did not answer within the
 * client's timeout (docraft_errmsg() names the replica and the reason);
 * otherwise the error of getting the table (DOCRAFT_ETABLENOTFOUND, ...).
 * A replica that does not answer costs up to the client's timeout_ms.
 * Blocking; DOCRAFT_EINVAL for NULL c or table. */
DOCRAFT_API int docraft_admin_checksum(docraft_client *c, const char *table,
				       const docraft_printer *p);

/* ------------------------------------------------------------------------
 * Async layer
 * ------------------------------------------------------------------------ */

/* One asynchronous request: caller memory, valid from the submitting call
 * until its callback has returned (libuv's request rule). The callback
 * runs exactly once, on the client's loop thread, never inside the
 * submitting call. If a submitting function returns an error, the callback
 * is never called (the reason is then in docraft_errmsg()). */
typedef struct docraft_req docraft_req;
typedef void (*docraft_req_cb)(docraft_req *req);

struct docraft_req {
	void *data; /* free for the caller */

	/* The outcome, set before the callback runs. */
	int status;                       /* DOCRAFT_OK or a DOCRAFT_E* code */
	char errmsg[DOCRAFT_ERRMSG_SIZE]; /* "" on success */
	uint64_t ht;                      /* write: applied at; get/scan: read at */
	/* get/scan: the rows; the callback owns them from then on (free with
	 * docraft_result_free); NULL on failure. */
	docraft_result *result;

	/* Private. */
	void *internal_;
};

/* docraft_write, async. ops must stay valid and unchanged until the
 * callback. Synchronous errors: DOCRAFT_EINVAL (NULL arguments, n 0),
 * DOCRAFT_ECLOSED. */
DOCRAFT_API int docraft_write_async(docraft_client *c, docraft_req *req, const char *table,
				    docraft_op *const *ops, size_t n, int64_t ttl_ms,
				    docraft_req_cb cb);
/* docraft_get, async; key is copied. */
DOCRAFT_API int docraft_get_async(docraft_client *c, docraft_req *req, const char *table,
				  const docraft_value *key, size_t nkey, uint64_t read_ht,
				  docraft_req_cb cb);
/* docraft_scan, async; spec and its values are copied. */
DOCRAFT_API int docraft_scan_async(docraft_client *c, docraft_req *req, const char *table,
				   const docraft_scan_spec *spec, docraft_req_cb cb);
/* docraft_scan_resume, async; prev must stay valid until the callback. */
DOCRAFT_API int docraft_scan_resume_async(docraft_client *c, docraft_req *req,
					  const docraft_result *prev, uint64_t limit,
					  docraft_req_cb cb);
/* docraft_table_create / drop, async (the schema is copied). */
DOCRAFT_API int docraft_table_create_async(docraft_client *c, docraft_req *req,
					   const docraft_schema *s,
					   const docraft_table_options *options, docraft_req_cb cb);
DOCRAFT_API int docraft_table_drop_async(docraft_client *c, docraft_req *req, const char *table,
					 bool if_exists, docraft_req_cb cb);

/* ------------------------------------------------------------------------
 * YEDIS: Redis commands on the tablet that owns a slot (issue 17)
 * ------------------------------------------------------------------------
 * Redis database db is the table "redis_<db>" (a YEDIS table: src/yedis/
 * yedis.h), created on first use with the cluster's default tablets and
 * replication factor. A key's slot is Redis Cluster's (crc16 of the key
 * or its {hash tag}, mod 16384); the tablet owning a slot owns partition
 * value slot * 4 (src/redis/slot.h). */

typedef struct docraft_bytes {
	const void *p;
	size_t n;
} docraft_bytes;

/* One Redis command: argv[0] its name. */
typedef struct docraft_redis_cmd {
	uint32_t argc;
	const docraft_bytes *argv;
} docraft_redis_cmd;

/* Runs cmds[0..n) (copied) on the leader of the tablet of database db
 * owning slot, atomically and in order. write: some command may write
 * (yedis_command_find's YEDIS_WRITE): the request is replicated before it
 * is answered and retried with its sequence number, so it applies once;
 * otherwise a linearizable read. On DOCRAFT_OK req->result holds one RESP2
 * reply per command (docraft_result_reply; Redis's own errors are
 * replies); failures of the cluster are req->status / req->errmsg.
 * Synchronous errors: DOCRAFT_EINVAL (n 0, argc 0, slot >= 16384),
 * DOCRAFT_ECLOSED. */
DOCRAFT_API int docraft_redis_async(docraft_client *c, docraft_req *req, unsigned db, uint16_t slot,
				    const docraft_redis_cmd *cmds, size_t n, bool write,
				    docraft_req_cb cb);
/* The replies of a docraft_redis_async result: i < docraft_result_nreplies(r);
 * *len bytes at the returned pointer, owned by r. */
DOCRAFT_API size_t docraft_result_nreplies(const docraft_result *r);
DOCRAFT_API const void *docraft_result_reply(const docraft_result *r, size_t i, size_t *len);

/* One tablet of a Redis database as the client's cache knows it: slots
 * first_slot..last_slot (inclusive), its replicas' Redis addresses
 * ("IP:PORT", "" when a tserver runs none), the leader's first (leader
 * false when unknown). */
typedef struct docraft_redis_tablet {
	const char *tablet_id;
	uint16_t first_slot, last_slot;
	bool leader_known;
	size_t nreplicas;
	const char *const *redis_addresses; /* [0] is the leader when leader_known */
	const char *const *tserver_uuids;
} docraft_redis_tablet;

/* The tablets of database db (created on first use like docraft_redis_async),
 * into req->result: docraft_result_ntablets / docraft_result_redis_tablet
 * (strings owned by the result). */
DOCRAFT_API int docraft_redis_tablets_async(docraft_client *c, docraft_req *req, unsigned db,
					    docraft_req_cb cb);
/* The slots first..last of the tablet of database db that owns slot, as
 * the client's cache knows it now, without a request: 0, or
 * DOCRAFT_ENOTFOUND while the cache holds no tablets of that database (no
 * request to it yet). A stale answer is possible (a split since): a
 * request that relies on it is refused WRONG_TABLET as a whole. Only for a
 * client embedded in its caller's loop (docraft_client_options.loop), on
 * that loop's thread. */
DOCRAFT_API int docraft_redis_slot_tablet(docraft_client *c, unsigned db, uint16_t slot,
					  uint16_t *first, uint16_t *last);
DOCRAFT_API size_t docraft_result_ntablets(const docraft_result *r);
DOCRAFT_API void docraft_result_redis_tablet(const docraft_result *r, size_t i,
					     docraft_redis_tablet *out);

#ifdef __cplusplus
}
#endif

#endif
