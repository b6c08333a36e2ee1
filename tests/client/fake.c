/* The fake cluster of fake.h. */
#include "fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "docdb/key.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/wire.h"
#include "test.h"
#include "cql/bind.h"
#include "cql/parser.h"

uint8_t *fake_pack(const ProtobufCMessage *msg, size_t *len)
{
	*len = protobuf_c_message_get_packed_size(msg);
	uint8_t *p = malloc(*len ? *len : 1);
	protobuf_c_message_pack(msg, p);
	return p;
}

void fake_lock(struct fake *f)
{
	uv_mutex_lock(&f->mu);
}

void fake_unlock(struct fake *f)
{
	uv_mutex_unlock(&f->mu);
}

static void reply_msg(struct rpc_call *call, const ProtobufCMessage *m)
{
	rpc_reply_message(call, m);
}

/* ---- catalog ---- */

static void set_schema(struct fake *f, const Docraft__TableSchema *pb)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (f->has_table) {
		schema_free(&f->schema);
		free(f->schema_pb);
	}
	f->schema_pb = fake_pack(&pb->base, &f->schema_pb_len);
	if (wire_schema_from_pb(pb, &f->schema, errmsg) != 0) {
		f->errors++;
		f->has_table = false;
		return;
	}
	f->has_table = true;
	for (int i = 0; i < FAKE_TABLETS; i++) {
		snprintf(f->view.ids[i], sizeof f->view.ids[i], "%s-%d-aaaa", pb->name, i);
		f->view.leader[i] = 1;
		f->truth[i] = 0;
	}
	for (int r = 1; r <= 3; r++)
		snprintf(f->view.addr[r], sizeof f->view.addr[r], "%s", f->ts[r - 1].addr);
	f->next_view = f->view;
}

void fake_set_table(struct fake *f, const char *create_cql)
{
	struct cql_stmts st;
	struct cql_error err;
	struct schema s;
	struct arena a = ARENA_INIT;
	Docraft__TableSchema pb;
	CHECK_OK_MSG(cql_parse(create_cql, &st, &err), err.message);
	CHECK_OK_MSG(cql_create_schema(&st.v[0].u.create, &s, &err), err.message);
	wire_schema_to_pb(&s, &pb, &a);
	set_schema(f, &pb);
	schema_free(&s);
	arena_free(&a);
	cql_free(&st);
}

const char *fake_masters(const struct fake *f)
{
	static char buf[80];
	snprintf(buf, sizeof buf, "%s,%s", f->master[0].addr, f->master[1].addr);
	return buf;
}

/* ---- masters ---- */

static bool not_master_leader(struct fake_server *s, struct rpc_call *call)
{
	struct fake *f = s->f;
	f->master_calls[s->index]++;
	if (s->index == 1 && f->master1_follower) {
		rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the master leader",
				f->master[0].addr, 1);
		return true;
	}
	return false;
}

static void get_table(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	Docraft__GetTableRequest *req;
	Docraft__GetTableResponse resp = DOCRAFT__GET_TABLE_RESPONSE__INIT;
	Docraft__TabletLocation locs[FAKE_TABLETS], *plocs[FAKE_TABLETS];
	Docraft__Peer peers[FAKE_TABLETS][3], *ppeers[FAKE_TABLETS][3];
	char uuids[3][16];

	fake_lock(f);
	f->get_table_calls[s->index]++;
	if (not_master_leader(s, call))
		goto out;
	req = docraft__get_table_request__unpack(NULL, call->request_len, call->request);
	if (req == NULL) {
		f->errors++;
		rpc_reply_error(call, DOCRAFT_EINVAL, "bad request", NULL, 0);
		goto out;
	}
	if (!f->has_table || strcmp(req->name, f->schema.table) != 0) {
		rpc_reply_errorf(call, DOCRAFT_ETABLENOTFOUND, "no table %s", req->name);
		docraft__get_table_request__free_unpacked(req, NULL);
		goto out;
	}
	docraft__get_table_request__free_unpacked(req, NULL);
	resp.schema = docraft__table_schema__unpack(NULL, f->schema_pb_len, f->schema_pb);
	for (int i = 0; i < FAKE_TABLETS; i++) {
		docraft__tablet_location__init(&locs[i]);
		locs[i].tablet_id = f->view.ids[i];
		locs[i].start = i == 0 ? 0 : 32768;
		locs[i].end = i == 0 ? 32768 : 65536;
		locs[i].leader_raft_id = f->view.leader[i];
		for (int r = 0; r < 3; r++) {
			docraft__peer__init(&peers[i][r]);
			snprintf(uuids[r], sizeof uuids[r], "ts-%d", r);
			peers[i][r].raft_id = (uint64_t)r + 1;
			peers[i][r].address = f->view.addr[r + 1];
			peers[i][r].tserver_uuid = uuids[r];
			peers[i][r].voter = 1;
			ppeers[i][r] = &peers[i][r];
		}
		locs[i].replicas = ppeers[i];
		locs[i].n_replicas = 3;
		plocs[i] = &locs[i];
	}
	/* Listed last first: the client sorts them. */
	{
		Docraft__TabletLocation *rev[FAKE_TABLETS];
		for (int i = 0; i < FAKE_TABLETS; i++)
			rev[i] = plocs[FAKE_TABLETS - 1 - i];
		resp.tablets = rev;
		resp.n_tablets = FAKE_TABLETS;
		reply_msg(call, &resp.base);
	}
	docraft__table_schema__free_unpacked(resp.schema, NULL);
	if (f->switch_after > 0 &&
	    f->get_table_calls[0] + f->get_table_calls[1] >= f->switch_after) {
		f->view = f->next_view;
		f->switch_after = 0;
	}
out:
	fake_unlock(f);
}

static void create_table(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	Docraft__CreateTableRequest *req;
	Docraft__CreateTableResponse resp = DOCRAFT__CREATE_TABLE_RESPONSE__INIT;

	fake_lock(f);
	f->create_calls++;
	if (not_master_leader(s, call))
		goto out;
	req = docraft__create_table_request__unpack(NULL, call->request_len, call->request);
	if (req == NULL || req->schema == NULL) {
		f->errors++;
		rpc_reply_error(call, DOCRAFT_EINVAL, "bad request", NULL, 0);
		goto out;
	}
	if (f->has_table && strcmp(f->schema.table, req->schema->name) == 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "table %s exists", req->schema->name);
		docraft__create_table_request__free_unpacked(req, NULL);
		goto out;
	}
	set_schema(f, req->schema);
	if (f->created != NULL)
		docraft__create_table_request__free_unpacked(f->created, NULL);
	f->created = req;
	resp.table_id = req->schema->name;
	reply_msg(call, &resp.base);
out:
	fake_unlock(f);
}

static void drop_table(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	Docraft__DropTableRequest *req;
	Docraft__DropTableResponse resp = DOCRAFT__DROP_TABLE_RESPONSE__INIT;

	fake_lock(f);
	f->drop_calls++;
	if (not_master_leader(s, call))
		goto out;
	req = docraft__drop_table_request__unpack(NULL, call->request_len, call->request);
	if (req == NULL || !f->has_table || strcmp(req->name, f->schema.table) != 0) {
		rpc_reply_error(call, DOCRAFT_ETABLENOTFOUND, "no such table", NULL, 0);
	} else {
		schema_free(&f->schema);
		free(f->schema_pb);
		f->schema_pb = NULL;
		f->has_table = false;
		reply_msg(call, &resp.base);
	}
	if (req != NULL)
		docraft__drop_table_request__free_unpacked(req, NULL);
out:
	fake_unlock(f);
}

static void list_tables(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	Docraft__ListTablesResponse resp = DOCRAFT__LIST_TABLES_RESPONSE__INIT;
	Docraft__TableSchema *one = NULL;

	fake_lock(f);
	if (not_master_leader(s, call))
		goto out;
	if (f->has_table) {
		one = docraft__table_schema__unpack(NULL, f->schema_pb_len, f->schema_pb);
		resp.tables = &one;
		resp.n_tables = 1;
	}
	reply_msg(call, &resp.base);
	if (one != NULL)
		docraft__table_schema__free_unpacked(one, NULL);
out:
	fake_unlock(f);
}

static void list_tservers(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	Docraft__ListTServersResponse resp = DOCRAFT__LIST_TSERVERS_RESPONSE__INIT;
	Docraft__TServerInfo info[FAKE_TS], *pinfo[FAKE_TS];
	char uuids[FAKE_TS][16];

	fake_lock(f);
	if (not_master_leader(s, call))
		goto out;
	for (int i = 0; i < FAKE_TS; i++) {
		docraft__tserver_info__init(&info[i]);
		snprintf(uuids[i], sizeof uuids[i], "ts-%d", i);
		info[i].uuid = uuids[i];
		info[i].address = f->ts[i].addr;
		info[i].live = i != 2;
		info[i].last_heartbeat_ms_ago = i == 2 ? 4000 : 300;
		info[i].tablets = 2;
		info[i].leaders = i == 0 ? 2 : 0;
		pinfo[i] = &info[i];
	}
	resp.tservers = pinfo;
	resp.n_tservers = FAKE_TS;
	reply_msg(call, &resp.base);
out:
	fake_unlock(f);
}

/* ---- tablet servers ---- */

static int tablet_index(struct fake *f, const char *id)
{
	size_t n = f->has_table ? strlen(f->schema.table) : 0;
	if (n == 0 || strncmp(id, f->schema.table, n) != 0 || id[n] != '-')
		return -1;
	if (id[n + 1] == '0' && id[n + 2] == '-')
		return 0;
	if (id[n + 1] == '1' && id[n + 2] == '-')
		return 1;
	return -1;
}

/* Whether the key datums (hash columns first) hash into tablet ti. */
static bool key_in_tablet(struct fake *f, Docraft__Datum **key, size_t n, int ti)
{
	struct pv pv[SCHEMA_MAX_COLUMNS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (n < f->schema.n_hash)
		return false;
	for (size_t i = 0; i < f->schema.n_hash; i++)
		if (wire_datum_to_pv(key[i], (enum col_type)f->schema.cols[i].type, "key", &pv[i],
				     errmsg) != 0)
			return false;
	return fake_tablet_of(key_hash_components(pv, f->schema.n_hash)) == ti;
}

static void release_gate(struct fake *f)
{
	for (int i = 0; i < f->nheld; i++) {
		Docraft__WriteResponse resp = DOCRAFT__WRITE_RESPONSE__INIT;
		resp.ht = ++f->ht_clock;
		reply_msg(f->held[i], &resp.base);
	}
	f->nheld = 0;
	f->gate = 0;
	f->gate_released++;
}

static void data_call(void *arg, struct rpc_call *call)
{
	struct fake_server *s = arg;
	struct fake *f = s->f;
	struct fake_req *r;
	const char *tablet = "";
	int ti;

	fake_lock(f);
	if (f->nreqs == FAKE_LOG_MAX) {
		f->errors++;
		rpc_reply_error(call, DOCRAFT_EINVAL, "log full", NULL, 0);
		goto out;
	}
	r = &f->reqs[f->nreqs];
	memset(r, 0, sizeof *r);
	r->ts = s->index;
	r->method = call->method;
	r->hash_ok = true;
	switch (call->method) {
	case DOCRAFT__METHOD__TSERVER_WRITE: {
		Docraft__WriteRequest *w =
			docraft__write_request__unpack(NULL, call->request_len, call->request);
		if (w == NULL)
			break;
		r->msg = &w->base;
		tablet = w->tablet_id;
		if (w->client_id.len == 16)
			memcpy(r->client_id, w->client_id.data, 16);
		r->seq = w->seq;
		r->min_running = w->min_running;
		for (size_t i = 0; i < w->n_ops; i++)
			r->hash_ok = r->hash_ok && key_in_tablet(f, w->ops[i]->key, w->ops[i]->n_key,
								 tablet_index(f, tablet));
		break;
	}
	case DOCRAFT__METHOD__TSERVER_READ: {
		Docraft__ReadRequest *q =
			docraft__read_request__unpack(NULL, call->request_len, call->request);
		if (q == NULL)
			break;
		r->msg = &q->base;
		tablet = q->tablet_id;
		r->hash_ok = key_in_tablet(f, q->key, q->n_key, tablet_index(f, tablet));
		break;
	}
	case DOCRAFT__METHOD__TSERVER_SCAN: {
		Docraft__ScanRequest *q =
			docraft__scan_request__unpack(NULL, call->request_len, call->request);
		if (q == NULL)
			break;
		r->msg = &q->base;
		tablet = q->tablet_id;
		if (q->n_hash_key > 0)
			r->hash_ok = key_in_tablet(f, q->hash_key, q->n_hash_key,
						   tablet_index(f, tablet));
		break;
	}
	case DOCRAFT__METHOD__TSERVER_STEP_DOWN: {
		Docraft__StepDownRequest *q =
			docraft__step_down_request__unpack(NULL, call->request_len, call->request);
		if (q == NULL)
			break;
		r->msg = &q->base;
		tablet = q->tablet_id;
		break;
	}
	case DOCRAFT__METHOD__TSERVER_DUMP_TABLET: {
		Docraft__DumpTabletRequest *q =
			docraft__dump_tablet_request__unpack(NULL, call->request_len, call->request);
		if (q == NULL)
			break;
		r->msg = &q->base;
		tablet = q->tablet_id;
		break;
	}
	default:
		break;
	}
	if (r->msg == NULL) {
		f->errors++;
		rpc_reply_error(call, DOCRAFT_EINVAL, "bad request", NULL, 0);
		goto out;
	}
	snprintf(r->tablet, sizeof r->tablet, "%s", tablet);
	f->nreqs++;
	ti = tablet_index(f, tablet);

	if (f->mode[s->index] == TS_BLACKHOLE) {
		if (f->nheld < FAKE_HELD_MAX)
			f->held[f->nheld++] = call;
		else
			rpc_reply_error(call, DOCRAFT_EBUSY, "held too many", NULL, 0);
		goto out;
	}
	if (f->mode[s->index] == TS_EINVAL) {
		rpc_reply_error(call, DOCRAFT_EINVAL, "column msg: expected a text value", NULL, 0);
		goto out;
	}
	if (f->tnf_tablet[0] != '\0' && strcmp(f->tnf_tablet, tablet) == 0) {
		f->tnf_tablet[0] = '\0';
		rpc_reply_errorf(call, DOCRAFT_ETABLETNOTFOUND, "tablet %s not found", tablet);
		goto out;
	}
	if (ti < 0) {
		rpc_reply_errorf(call, DOCRAFT_ETABLETNOTFOUND, "tablet %s not found", tablet);
		goto out;
	}
	if (call->method == DOCRAFT__METHOD__TSERVER_DUMP_TABLET) {
		Docraft__DumpTabletResponse resp = DOCRAFT__DUMP_TABLET_RESPONSE__INIT;
		char text[128];
		snprintf(text, sizeof text, "dump of %s at %s", tablet, s->addr);
		resp.text = text;
		reply_msg(call, &resp.base);
		goto out;
	}
	if (f->truth[ti] != s->index) {
		int l = f->truth[ti];
		rpc_reply_error(call, DOCRAFT_ENOTLEADER, "not the leader",
				f->hints ? f->ts[l].addr : NULL, f->hints ? (uint64_t)l + 1 : 0);
		goto out;
	}
	switch (call->method) {
	case DOCRAFT__METHOD__TSERVER_WRITE:
		if (f->gate > 0) {
			f->held[f->nheld++] = call;
			if (f->nheld >= f->gate)
				release_gate(f);
			goto out;
		} else {
			Docraft__WriteResponse resp = DOCRAFT__WRITE_RESPONSE__INIT;
			resp.ht = ++f->ht_clock;
			reply_msg(call, &resp.base);
		}
		break;
	case DOCRAFT__METHOD__TSERVER_READ:
		if (f->read_reply != NULL) {
			rpc_reply(call, f->read_reply, f->read_reply_len);
		} else {
			Docraft__ReadResponse resp = DOCRAFT__READ_RESPONSE__INIT;
			resp.read_ht = 4096;
			reply_msg(call, &resp.base);
		}
		break;
	case DOCRAFT__METHOD__TSERVER_SCAN:
		if (f->next_scan_page < f->n_scan_pages) {
			int i = f->next_scan_page++;
			rpc_reply(call, f->scan_pages[i], f->scan_page_len[i]);
		} else {
			Docraft__ScanResponse resp = DOCRAFT__SCAN_RESPONSE__INIT;
			resp.read_ht = 8192;
			reply_msg(call, &resp.base);
		}
		break;
	default: {
		Docraft__StepDownResponse resp = DOCRAFT__STEP_DOWN_RESPONSE__INIT;
		reply_msg(call, &resp.base);
		break;
	}
	}
out:
	fake_unlock(f);
}

/* ---- start and stop ---- */

static void server_open(struct fake *f, struct fake_server *s, int kind, int index,
			const char *ip)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	char addr[32];
	s->f = f;
	s->kind = kind;
	s->index = index;
	snprintf(addr, sizeof addr, "%s:0", ip);
	CHECK_OK_MSG(listener_open(&f->loop, addr, &s->l, errmsg), errmsg);
	snprintf(s->addr, sizeof s->addr, "%s", listener_address(s->l));
	CHECK_OK_MSG(rpc_server_init(&s->rpc, &f->loop, s->l, errmsg), errmsg);
	s->rpc.data = s;
	if (kind == 0) {
		rpc_server_register(&s->rpc, DOCRAFT__METHOD__MASTER_GET_TABLE, get_table, s, errmsg);
		rpc_server_register(&s->rpc, DOCRAFT__METHOD__MASTER_CREATE_TABLE, create_table, s,
				    errmsg);
		rpc_server_register(&s->rpc, DOCRAFT__METHOD__MASTER_DROP_TABLE, drop_table, s,
				    errmsg);
		rpc_server_register(&s->rpc, DOCRAFT__METHOD__MASTER_LIST_TABLES, list_tables, s,
				    errmsg);
		rpc_server_register(&s->rpc, DOCRAFT__METHOD__MASTER_LIST_TSERVERS, list_tservers,
				    s, errmsg);
	} else {
		static const uint16_t methods[] = {
			DOCRAFT__METHOD__TSERVER_WRITE, DOCRAFT__METHOD__TSERVER_READ,
			DOCRAFT__METHOD__TSERVER_SCAN, DOCRAFT__METHOD__TSERVER_STEP_DOWN,
			DOCRAFT__METHOD__TSERVER_DUMP_TABLET};
		for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
			rpc_server_register(&s->rpc, methods[i], data_call, s, errmsg);
	}
}

static void thread_main(void *arg)
{
	struct fake *f = arg;
	uv_run(&f->loop, UV_RUN_DEFAULT);
}

static void listener_closed(void *arg)
{
	((struct fake_server *)arg)->closed = true;
}

static void rpc_closed(struct rpc_server *srv)
{
	struct fake_server *s = srv->data;
	listener_close(s->l, listener_closed, s);
}

static void stop_cb(uv_async_t *a)
{
	struct fake *f = a->data;
	fake_lock(f);
	for (int i = 0; i < f->nheld; i++)
		rpc_reply_error(f->held[i], DOCRAFT_ECLOSED, "fake stopping", NULL, 0);
	f->nheld = 0;
	fake_unlock(f);
	for (int i = 0; i < 2; i++)
		rpc_server_close(&f->master[i].rpc, rpc_closed);
	for (int i = 0; i < FAKE_TS; i++)
		rpc_server_close(&f->ts[i].rpc, rpc_closed);
	uv_close((uv_handle_t *)a, NULL);
}

void fake_start(struct fake *f)
{
	static const char *const ips[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
	memset(f, 0, sizeof *f);
	CHECK_OK(uv_loop_init(&f->loop));
	CHECK_OK(uv_mutex_init(&f->mu));
	f->hints = true;
	server_open(f, &f->master[0], 0, 0, "127.0.0.1");
	server_open(f, &f->master[1], 0, 1, "127.0.0.2");
	for (int i = 0; i < FAKE_TS; i++)
		server_open(f, &f->ts[i], 1, i, ips[i]);
	/* A port where nothing listens: bound then closed at once. */
	{
		struct listener *l;
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		CHECK_OK_MSG(listener_open(&f->loop, "127.0.0.3:0", &l, errmsg), errmsg);
		snprintf(f->dead_addr, sizeof f->dead_addr, "%s", listener_address(l));
		listener_close(l, NULL, NULL);
		uv_run(&f->loop, UV_RUN_NOWAIT);
	}
	CHECK_OK(uv_async_init(&f->loop, &f->stop_async, stop_cb));
	f->stop_async.data = f;
	CHECK_OK(uv_thread_create(&f->thread, thread_main, f));
}

void fake_stop(struct fake *f)
{
	uv_async_send(&f->stop_async);
	uv_thread_join(&f->thread);
	/* Anything left (close callbacks) runs here. */
	while (uv_run(&f->loop, UV_RUN_NOWAIT) != 0)
		;
	CHECK_EQ_INT(uv_loop_close(&f->loop), 0);
	for (int i = 0; i < f->nreqs; i++)
		protobuf_c_message_free_unpacked(f->reqs[i].msg, NULL);
	if (f->created != NULL)
		docraft__create_table_request__free_unpacked(f->created, NULL);
	if (f->has_table) {
		schema_free(&f->schema);
		free(f->schema_pb);
	}
	free(f->read_reply);
	for (int i = 0; i < f->n_scan_pages; i++)
		free(f->scan_pages[i]);
	uv_mutex_destroy(&f->mu);
}
