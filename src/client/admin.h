/* What the admin files of libdocraft share (admin.c: listings, tablet
 * calls, checksums; cluster.c: drain and the cluster summary): text
 * tables, master answers, and the formatters of the listings.
 *
 * The admin_format_* functions are pure: they turn a decoded master answer
 * into the text the CLI prints, append it to out, and do no I/O, so the
 * unit tests give them fabricated answers (tests/client/test_admin_format.c).
 * Fields an older master leaves empty print as the older listing did
 * (state from `live`, no placement "-").
 *
 * Threading: any thread; nothing is shared. */
#ifndef DOCRAFT_CLIENT_ADMIN_H
#define DOCRAFT_CLIENT_ADMIN_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "common/buf.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"

/* Gives b's text to p->out (nothing when p, p->out or b is empty). */
void admin_out(const docraft_printer *p, struct buf *b);

/* A printf into a malloc'd string (out of memory is fatal). */
char *admin_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* A left-aligned text table: a header row, then rows of ncols cells, the
 * columns two spaces apart, the last one not padded. */
struct admin_table {
	size_t ncols, nrows;
	char **cells; /* (nrows + 1) * ncols, row 0 = the header */
};

void admin_table_init(struct admin_table *t, size_t ncols, const char *const *header);
/* Takes the ncols malloc'd strings of row (admin_fmt's). */
void admin_table_row(struct admin_table *t, char **row);
/* Appends the table to out and frees it. */
void admin_table_format(struct admin_table *t, struct buf *out);

/* The answer of a blocking call: rv its status, reply its bytes (freed
 * here), unpacked as a message of desc (the caller frees it). NULL with
 * *rv the error otherwise ("<method> answer does not decode"). */
ProtobufCMessage *admin_answer(int *rv, struct buf *reply, const ProtobufCMessageDescriptor *desc,
			       const char *method);

/* Every table (ListTables); the caller frees *out. */
int admin_list_tables(docraft_client *c, Docraft__ListTablesResponse **out);

/* ---- formatters (pure) ---- */

/* A table as `docraft tables` and DESCRIBE TABLE show it: the CREATE TABLE
 * that makes it, or for a Redis database (TableSchema.redis) a line saying
 * so ("-- redis_0: a Redis database (Redis SELECT 0): ..."). */
void admin_format_table(const Docraft__TableSchema *s, struct buf *out);

/* `docraft tservers`: one row per tserver,
 *   UUID ADDRESS LIVE HEARTBEAT REPLICAS LEADERS STATE PLACEMENT DRAIN MOVES
 * STATE live | unreachable | failed; DRAIN - | draining | drained. */
void admin_format_tservers(Docraft__TServerInfo *const *ts, size_t n, struct buf *out);

/* `docraft tablets TABLE`: one row per tablet of resp (in its order),
 *   TABLET PARTITION LEADER STATUS REPLICAS
 * STATUS ok, or a comma-separated list of leaderless, under-replicated
 * (live=N), moving; then, when a move is in flight, "moves in progress:"
 * and one indented line per moving tablet ("<tablet>  <move>"). */
void admin_format_tablets(const Docraft__GetTableResponse *resp, struct buf *out);

/* `docraft cluster`: "name: value" lines (masters, tservers by state,
 * tables, tablets, under-replicated, leaderless, moves in flight), then a
 * table of the moves (addresses from st's tservers, uuids when unknown). */
void admin_format_cluster(const Docraft__ClusterStatusResponse *st, struct buf *out);

/* The one-word state of a tserver: its state field, or from `live` when an
 * older master left it empty. */
const char *admin_tserver_state(const Docraft__TServerInfo *ts);

#endif
