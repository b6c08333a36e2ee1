/* libFuzzer target: every RPC request message as the servers decode it,
 * and what they turn it into (src/rpc/wire.c).
 *
 * Input: byte 0 picks the message type (table `types` below: every request
 * the tablet server and the master unpack, the heartbeat reply a tablet
 * server unpacks, the error info a client unpacks, and the tablet's meta.pb
 * — a CreateTabletRequest — read from disk at start), byte 1 picks the table
 * schema data requests are checked against (plain, or packed with
 * collections and a dropped column), the rest is the protobuf payload.
 *
 * After protobuf-c's unpack, the checks and conversions the services run:
 *  - WriteRequest: wire_apply_ops into a docwrite batch and wire_conditions,
 *    as on_write does (src/tserver/service.c); what they accept must be what
 *    every replica accepts: the batch passes batch_validate, the blob
 *    condition_validate, and the Raft entry made of them decodes
 *    (entry_open / entry_next) to the same bytes;
 *  - ReadRequest / ScanRequest: each key datum through wire_datum_to_pv and
 *    schema_check_value (the service's decode_keys), the DocKey through
 *    docwrite_dockey, scan bounds, and the paging state through
 *    reader_paging_decode;
 *  - schemas (CreateTablet, CreateTable, heartbeat instructions):
 *    wire_schema_from_pb; an accepted schema goes back to protobuf
 *    (wire_schema_to_pb, pack, unpack) and decodes again to the same
 *    columns; peer addresses through listener_parse_address.
 * Beyond these invariants: no crash, no leak, no UB. */
#include "fuzz.h"

#include "common/arena.h"
#include "docdb/batch.h"
#include "docdb/condition.h"
#include "docdb/docwrite.h"
#include "docdb/reader.h"
#include "docraft.pb-c.h"
#include "docraft/error.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/wire.h"
#include "tablet/entry.h"

static const ProtobufCMessageDescriptor *const types[] = {
	&docraft__write_request__descriptor,         /* 0 */
	&docraft__read_request__descriptor,          /* 1 */
	&docraft__scan_request__descriptor,          /* 2 */
	&docraft__create_tablet_request__descriptor, /* 3: also meta.pb */
	&docraft__create_table_request__descriptor,  /* 4 */
	&docraft__change_config_request__descriptor, /* 5 */
	&docraft__heartbeat_request__descriptor,     /* 6 */
	&docraft__heartbeat_response__descriptor,    /* 7 */
	&docraft__delete_tablet_request__descriptor,
	&docraft__step_down_request__descriptor,
	&docraft__dump_tablet_request__descriptor,
	&docraft__tablet_status_request__descriptor,
	&docraft__checksum_request__descriptor,
	&docraft__drop_table_request__descriptor,
	&docraft__get_table_request__descriptor,
	&docraft__list_tables_request__descriptor,
	&docraft__list_tservers_request__descriptor,
	&docraft__ping_request__descriptor,
	&docraft__error_info__descriptor,
};
#define N_TYPES (sizeof types / sizeof types[0])

static struct schema schemas[2];

/* ---- schemas ---- */

static void check_schema(const Docraft__TableSchema *pb)
{
	struct schema s, s2;
	Docraft__TableSchema out, *back;
	struct arena a = ARENA_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	uint8_t *packed;
	size_t len;

	if (pb == NULL)
		return;
	if (pb->n_columns > SCHEMA_MAX_COLUMNS)
		return; /* the master refuses it first (canonical_schema) */
	if (wire_schema_from_pb(pb, &s, errmsg) != 0) {
		FUZZ_CHECK(errmsg[0] != '\0');
		return;
	}
	wire_schema_to_pb(&s, &out, &a);
	packed = wire_pack(&out.base, &a, &len);
	back = docraft__table_schema__unpack(NULL, len, packed);
	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(wire_schema_from_pb(back, &s2, errmsg) == 0);
	FUZZ_CHECK(s2.ncols == s.ncols && s2.n_hash == s.n_hash && s2.n_range == s.n_range &&
		   s2.version == s.version && s2.packed == s.packed &&
		   s2.default_ttl_ms == s.default_ttl_ms);
	for (size_t i = 0; i < s.ncols; i++)
		FUZZ_CHECK(strcmp(s.cols[i].name, s2.cols[i].name) == 0 &&
			   s.cols[i].id == s2.cols[i].id && s.cols[i].type == s2.cols[i].type &&
			   s.cols[i].kind == s2.cols[i].kind && s.cols[i].desc == s2.cols[i].desc);
	docraft__table_schema__free_unpacked(back, NULL);
	schema_free(&s2);
	schema_free(&s);
	arena_free(&a);
}

static void check_peer(const Docraft__Peer *p)
{
	struct sockaddr_in sa;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (p != NULL)
		(void)listener_parse_address(p->address, &sa, errmsg);
}

static void check_create_tablet(const Docraft__CreateTabletRequest *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_peers; i++)
		check_peer(r->peers[i]);
	check_schema(r->schema);
}

/* ---- data requests ---- */

/* n key datums for the columns first.. of s, as the service converts them. */
static int keys(const struct schema *s, size_t first, Docraft__Datum **d, size_t n,
		struct pv *out)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (first + n > schema_nkeys(s))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct column *c = &s->cols[first + i];
		if (wire_datum_to_pv(d[i], c->type, "key", &out[i], errmsg) != 0 ||
		    schema_check_value(c->type, &out[i], false, "key", errmsg) != 0)
			return -1;
	}
	return 0;
}

static void check_write(const struct schema *s, const Docraft__WriteRequest *req)
{
	struct batch b;
	struct docwrite w;
	struct buf cond = BUF_INIT, e = BUF_INIT;
	struct arena a = ARENA_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	int64_t list_counter = 1000;
	uint8_t client[ENTRY_CLIENT_ID_LEN] = {0};
	int rv;

	batch_init(&b);
	docwrite_init(&w, s, &b, &list_counter);
	rv = wire_apply_ops(&w, req, &a, errmsg);
	docwrite_free(&w);
	if (rv == 0)
		rv = wire_conditions(s, req, &cond, &a, errmsg);
	if (rv != 0) {
		FUZZ_CHECK(errmsg[0] != '\0');
	} else {
		struct entry_reader r;
		struct entry_request q;
		uint32_t count;
		FUZZ_CHECK(batch_validate(b.data.data, b.data.len, &count, errmsg) == 0 &&
			   count == b.count);
		FUZZ_CHECK(cond.len == 0 || condition_validate(cond.data, cond.len, errmsg) == 0);
		/* The Raft entry the leader would propose, as a replica reads it. */
		entry_begin(&e, 1, 1);
		entry_add_request_if(&e, client, req->seq, req->min_running, cond.data, cond.len,
				     b.data.data, b.data.len);
		entry_finish(&e);
		FUZZ_CHECK(entry_open(&r, e.data, e.len, errmsg) == 0);
		FUZZ_CHECK(entry_next(&r, &q, errmsg) == 1);
		FUZZ_CHECK(q.batch_len == b.data.len && q.cond_len == cond.len);
		FUZZ_CHECK(entry_next(&r, &q, errmsg) == 0);
	}
	batch_free(&b);
	buf_free(&cond);
	buf_free(&e);
	arena_free(&a);
}

static void check_read(const struct schema *s, const Docraft__ReadRequest *req)
{
	struct pv k[SCHEMA_MAX_COLUMNS];
	struct buf dk = BUF_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (req->n_key == schema_nkeys(s) && keys(s, 0, req->key, req->n_key, k) == 0)
		FUZZ_CHECK(docwrite_dockey(s, k, req->n_key, &dk, errmsg) == 0 &&
			   dockey_prefix_len(dk.data, dk.len) == dk.len);
	buf_free(&dk);
}

static void check_scan(const struct schema *s, const Docraft__ScanRequest *req)
{
	struct pv k[SCHEMA_MAX_COLUMNS], bound;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const uint8_t *dk;
	size_t dl;
	uint64_t ht;

	(void)keys(s, 0, req->hash_key, req->n_hash_key, k);
	(void)keys(s, s->n_hash, req->range_eq, req->n_range_eq, k);
	if (s->n_hash + req->n_range_eq < schema_nkeys(s)) {
		const struct column *c = &s->cols[s->n_hash + req->n_range_eq];
		if (req->lower != NULL)
			(void)wire_datum_to_pv(req->lower, c->type, "lower", &bound, errmsg);
		if (req->upper != NULL)
			(void)wire_datum_to_pv(req->upper, c->type, "upper", &bound, errmsg);
	}
	if (req->paging.len > 0)
		(void)reader_paging_decode(req->paging.data, req->paging.len, &ht, &dk, &dl,
					   errmsg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *type;
	const struct schema *s;
	ProtobufCMessage *m;

	if (size < 2)
		return 0;
	type = types[data[0] % N_TYPES];
	s = &schemas[data[1] % 2];
	m = protobuf_c_message_unpack(type, NULL, size - 2, data + 2);
	if (m == NULL)
		return 0;
	if (type == &docraft__write_request__descriptor) {
		check_write(s, (Docraft__WriteRequest *)m);
	} else if (type == &docraft__read_request__descriptor) {
		check_read(s, (Docraft__ReadRequest *)m);
	} else if (type == &docraft__scan_request__descriptor) {
		check_scan(s, (Docraft__ScanRequest *)m);
	} else if (type == &docraft__create_tablet_request__descriptor) {
		check_create_tablet((Docraft__CreateTabletRequest *)m);
	} else if (type == &docraft__create_table_request__descriptor) {
		check_schema(((Docraft__CreateTableRequest *)m)->schema);
	} else if (type == &docraft__change_config_request__descriptor) {
		check_peer(((Docraft__ChangeConfigRequest *)m)->peer);
	} else if (type == &docraft__heartbeat_response__descriptor) {
		Docraft__HeartbeatResponse *r = (Docraft__HeartbeatResponse *)m;
		for (size_t i = 0; i < r->n_instructions; i++) {
			const Docraft__Instruction *in = r->instructions[i];
			if (in->kind_case == DOCRAFT__INSTRUCTION__KIND_CREATE)
				check_create_tablet(in->create);
			else if (in->kind_case == DOCRAFT__INSTRUCTION__KIND_CHANGE)
				check_peer(in->change->peer);
		}
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}

/* ---- the schemas and the seeds ---- */

__attribute__((constructor)) static void init(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct schema *a = &schemas[0], *b = &schemas[1];
	int rv = schema_init(a, "plain", errmsg);
	rv = rv ?: schema_add(a, "h", COL_HASH, CT_INT64, errmsg);
	rv = rv ?: schema_add(a, "h2", COL_HASH, CT_TEXT, errmsg);
	rv = rv ?: schema_add_column(a, "r", COL_RANGE, CT_TIMESTAMP, 0, 0, true, errmsg);
	rv = rv ?: schema_add(a, "v", COL_REGULAR, CT_INT32, errmsg);
	rv = rv ?: schema_add(a, "f", COL_REGULAR, CT_DOUBLE, errmsg);
	rv = rv ?: schema_add(a, "u", COL_REGULAR, CT_UUID, errmsg);
	rv = rv ?: schema_add(a, "t", COL_REGULAR, CT_TEXT, errmsg);
	rv = rv ?: schema_init(b, "packed", errmsg);
	rv = rv ?: schema_add(b, "k", COL_HASH, CT_INT32, errmsg);
	rv = rv ?: schema_add(b, "a", COL_REGULAR, CT_INT8, errmsg);
	rv = rv ?: schema_add(b, "b", COL_REGULAR, CT_BLOB, errmsg);
	rv = rv ?: schema_add_column(b, "m", COL_REGULAR, CT_MAP, CT_TEXT, CT_INT64, false, errmsg);
	rv = rv ?: schema_add_column(b, "s", COL_REGULAR, CT_SET, CT_INT32, 0, false, errmsg);
	rv = rv ?: schema_add_column(b, "l", COL_REGULAR, CT_LIST, CT_TEXT, 0, false, errmsg);
	rv = rv ?: schema_add_regular_column(b, "d", CT_DATE, 0, 0, errmsg);
	rv = rv ?: schema_drop_column(b, "a", errmsg);
	FUZZ_CHECK(rv == 0);
	b->packed = true;
}

static void seed_msg(const char *name, unsigned type, unsigned schema, const ProtobufCMessage *m)
{
	struct buf b = BUF_INIT;
	size_t len = protobuf_c_message_get_packed_size(m);
	buf_push(&b, (uint8_t)type);
	buf_push(&b, (uint8_t)schema);
	buf_reserve(&b, len);
	protobuf_c_message_pack(m, b.data + 2);
	b.len += len;
	seed_buf(name, &b);
	buf_free(&b);
}

static Docraft__Datum *datum(struct arena *a, struct pv v)
{
	return wire_datum_new(&v, a);
}

static void set_col(Docraft__ColumnValue *c, char *name, Docraft__Datum *value,
		    Docraft__Datum **keys, size_t n_keys, Docraft__Datum **values, size_t n_values)
{
	docraft__column_value__init(c);
	c->name = name;
	c->value = value;
	c->keys = keys;
	c->n_keys = n_keys;
	c->values = values;
	c->n_values = n_values;
}

static void set_op(Docraft__WriteOp *op, Docraft__WriteOp__Kind kind, Docraft__Datum **key,
		   size_t n_key, Docraft__ColumnValue **cols, size_t n_cols, int64_t ttl_ms)
{
	docraft__write_op__init(op);
	op->kind = kind;
	op->key = key;
	op->n_key = n_key;
	op->columns = cols;
	op->n_columns = n_cols;
	op->ttl_ms = ttl_ms;
}

static void fuzz_seeds(void)
{
	struct arena a = ARENA_INIT;
	static const uint8_t uuid[16] = {9, 8, 7, 6, 5, 4, 0x43, 2, 1, 0, 1, 2, 3, 4, 5, 6};
	uint8_t client[16];
	Docraft__Datum *key0[3], *key1[1], *mk[2], *mv[2];
	Docraft__ColumnValue cv[4], *pcv[4];
	Docraft__WriteOp op[3], *pop[3];
	Docraft__Condition cond, *pcond = &cond;
	Docraft__WriteRequest w = DOCRAFT__WRITE_REQUEST__INIT;
	Docraft__ReadRequest rd = DOCRAFT__READ_REQUEST__INIT;
	Docraft__ScanRequest sc = DOCRAFT__SCAN_REQUEST__INIT;
	Docraft__TableSchema ts;
	Docraft__Peer peer[3], *ppeer[3];
	Docraft__CreateTabletRequest ct = DOCRAFT__CREATE_TABLET_REQUEST__INIT;
	Docraft__CreateTableRequest ctab = DOCRAFT__CREATE_TABLE_REQUEST__INIT;
	Docraft__Instruction ins = DOCRAFT__INSTRUCTION__INIT, *pins = &ins;
	Docraft__HeartbeatResponse hr = DOCRAFT__HEARTBEAT_RESPONSE__INIT;
	Docraft__ChangeConfigRequest cc = DOCRAFT__CHANGE_CONFIG_REQUEST__INIT;
	Docraft__ErrorInfo ei = DOCRAFT__ERROR_INFO__INIT;
	char addr[3][32];
	struct buf paging = BUF_INIT;

	memset(client, 7, sizeof client);
	key0[0] = datum(&a, pv_int64(42));
	key0[1] = datum(&a, pv_str("user"));
	key0[2] = datum(&a, pv_timestamp(1700000000000000));
	for (int i = 0; i < 4; i++)
		pcv[i] = &cv[i];
	for (int i = 0; i < 3; i++)
		pop[i] = &op[i];
	/* plain: INSERT (v, f, u, t), UPDATE v, DELETE_ROW; a condition on v. */
	set_col(&cv[0], "v", datum(&a, pv_int32(-1)), NULL, 0, NULL, 0);
	set_col(&cv[1], "f", datum(&a, pv_double(2.5)), NULL, 0, NULL, 0);
	set_col(&cv[2], "u", datum(&a, pv_uuid(uuid)), NULL, 0, NULL, 0);
	set_col(&cv[3], "t", datum(&a, pv_str("text")), NULL, 0, NULL, 0);
	set_op(&op[0], DOCRAFT__WRITE_OP__KIND__INSERT, key0, 3, pcv, 4, 60000);
	set_op(&op[1], DOCRAFT__WRITE_OP__KIND__UPDATE, key0, 3, pcv, 1, -1);
	set_op(&op[2], DOCRAFT__WRITE_OP__KIND__DELETE_ROW, key0, 3, NULL, 0, -1);
	w.tablet_id = "t-1";
	w.table = "plain";
	w.client_id.data = client;
	w.client_id.len = sizeof client;
	w.seq = 5;
	w.min_running = 4;
	w.n_ops = 3;
	w.ops = pop;
	seed_msg("write-plain", 0, 0, &w.base);
	docraft__condition__init(&cond);
	cond.n_key = 3;
	cond.key = key0;
	cond.column = "v";
	cond.has_value = true;
	cond.value = datum(&a, pv_int32(-1));
	w.n_ops = 1;
	w.n_conditions = 1;
	w.conditions = &pcond;
	seed_msg("write-conditional", 0, 0, &w.base);

	/* packed: INSERT of every packable column with collections, then list
	 * and map operations. */
	key1[0] = datum(&a, pv_int32(3));
	mk[0] = datum(&a, pv_str("x"));
	mk[1] = datum(&a, pv_str("y"));
	mv[0] = datum(&a, pv_int64(1));
	mv[1] = datum(&a, pv_int64(2));
	set_col(&cv[0], "b", datum(&a, pv_strn("\0\1\2", 3)), NULL, 0, NULL, 0);
	set_col(&cv[1], "d", datum(&a, pv_uint32(19000)), NULL, 0, NULL, 0);
	set_col(&cv[2], "m", NULL, mk, 2, mv, 2);
	set_col(&cv[3], "l", NULL, mk, 2, NULL, 0);
	set_op(&op[0], DOCRAFT__WRITE_OP__KIND__INSERT, key1, 1, pcv, 4, 60000);
	set_op(&op[1], DOCRAFT__WRITE_OP__KIND__LIST_APPEND, key1, 1, &pcv[3], 1, -1);
	set_op(&op[2], DOCRAFT__WRITE_OP__KIND__MAP_REMOVE, key1, 1, &pcv[2], 1, -1);
	w.table = "packed";
	w.n_ops = 3;
	w.n_conditions = 0;
	seed_msg("write-packed", 0, 1, &w.base);

	rd.tablet_id = "t-1";
	rd.table = "plain";
	rd.n_key = 3;
	rd.key = key0;
	seed_msg("read", 1, 0, &rd.base);

	buf_push(&paging, 0x01);
	buf_append_be64(&paging, 77);
	{
		struct pv k[3] = {pv_int64(42), pv_str("user"), pv_timestamp(1)};
		(void)docwrite_dockey(&schemas[0], k, 3, &paging, NULL);
	}
	sc.tablet_id = "t-1";
	sc.table = "plain";
	sc.n_hash_key = 2;
	sc.hash_key = key0;
	sc.lower = key0[2];
	sc.lower_incl = true;
	sc.limit = 10;
	sc.paging.data = paging.data;
	sc.paging.len = paging.len;
	seed_msg("scan", 2, 0, &sc.base);

	wire_schema_to_pb(&schemas[1], &ts, &a);
	for (int i = 0; i < 3; i++) {
		docraft__peer__init(&peer[i]);
		snprintf(addr[i], sizeof addr[i], "127.0.0.%d:9100", i + 1);
		peer[i].raft_id = (uint64_t)i + 1;
		peer[i].address = addr[i];
		peer[i].voter = true;
		ppeer[i] = &peer[i];
	}
	ct.tablet_id = "0123456789abcdef";
	ct.schema = &ts;
	ct.raft_id = 2;
	ct.n_peers = 3;
	ct.peers = ppeer;
	seed_msg("create-tablet-meta-pb", 3, 0, &ct.base);
	ctab.schema = &ts;
	ctab.num_tablets = 8;
	ctab.replication_factor = 3;
	seed_msg("create-table", 4, 0, &ctab.base);
	cc.tablet_id = "0123456789abcdef";
	cc.kind = DOCRAFT__CHANGE_CONFIG_REQUEST__KIND__ADD;
	cc.peer = &peer[2];
	seed_msg("change-config", 5, 0, &cc.base);
	ins.kind_case = DOCRAFT__INSTRUCTION__KIND_CREATE;
	ins.create = &ct;
	hr.n_instructions = 1;
	hr.instructions = &pins;
	hr.master_leader_address = "127.0.0.1:7100";
	seed_msg("heartbeat-response", 7, 0, &hr.base);
	ei.code = DOCRAFT_ENOTLEADER;
	ei.message = "not the leader";
	ei.leader_address = "127.0.0.2:9100";
	ei.leader_id = 2;
	seed_msg("error-info", N_TYPES - 1, 0, &ei.base);

	buf_free(&paging);
	arena_free(&a);
}
