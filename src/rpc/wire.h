/* Conversions between DocDB's C types and the RPC messages of
 * proto/docraft.proto, shared by the tablet server, the master and the
 * client library:
 *
 *   struct schema   <->  Docraft__TableSchema
 *   struct pv       <->  Docraft__Datum       (checked against a column type)
 *   WriteRequest ops ->  docwrite calls       (schema-checked, into a batch)
 *   Conditions       ->  condition blob       (schema-checked, docdb/condition.h)
 *   struct row       ->  Docraft__Row
 *
 * Messages built here point into the caller's data and into an arena for
 * their arrays: pack them before either goes away; never pass them to
 * protobuf_c_message_free_unpacked. Decoders never trust their input: a
 * value of the wrong kind is DOCRAFT_EINVAL with a message naming it.
 * Pure functions; any thread. */
#ifndef DOCRAFT_RPC_WIRE_H
#define DOCRAFT_RPC_WIRE_H

#include "common/arena.h"
#include "docdb/condition.h"
#include "docdb/docwrite.h"
#include "docdb/pv.h"
#include "docdb/reader.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"

/* Builds *out (schema_init'ed here; schema_free it) from pb, keeping pb's
 * column ids. */
int wire_schema_from_pb(const Docraft__TableSchema *pb, struct schema *out, char *errmsg);
void wire_schema_to_pb(const struct schema *s, Docraft__TableSchema *pb, struct arena *a);

/* d as a value of type t (what: e.g. "column 'x'", for the message).
 * Strings and uuids borrow from d (an empty string points at a static "",
 * never NULL). A NULL datum gives PV_NULL. */
int wire_datum_to_pv(const Docraft__Datum *d, enum col_type t, const char *what, struct pv *out,
		     char *errmsg);
/* d borrows v's bytes. */
void wire_pv_to_datum(const struct pv *v, Docraft__Datum *d);
Docraft__Datum *wire_datum_new(const struct pv *v, struct arena *a);

/* Appends every op of req to w's batch (on error the batch is unchanged
 * for that op and the error names it). Values borrow from req. */
int wire_apply_ops(struct docwrite *w, const Docraft__WriteRequest *req, struct arena *a,
		   char *errmsg);

/* Appends the condition blob (docdb/condition.h) of req's conditions to
 * out, checked against s: as many key values as s has key columns, of
 * their types and not NULL; the column a primitive regular column; the
 * value of its type (a NULL or missing value means "no live value"). No
 * conditions: out is unchanged. DOCRAFT_EINVAL + errmsg naming the
 * condition otherwise (out may then hold part of a blob). The blob owns
 * its bytes (a is scratch, freed by the caller when it likes). */
int wire_conditions(const struct schema *s, const Docraft__WriteRequest *req, struct buf *out,
		    struct arena *a, char *errmsg);

/* The row's key and every present regular column. */
void wire_row_to_pb(const struct row *r, Docraft__Row *pb, struct arena *a);

/* Packs any message into a buffer allocated in a. */
void *wire_pack(const ProtobufCMessage *m, struct arena *a, size_t *len);

#endif
