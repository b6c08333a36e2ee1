/* Real-process tests of docraft-master, without real tablet servers: the
 * tservers are fakes inside this process, each an rpc_server on its own
 * listener (127.0.0.2, .3, .4) that records TSERVER_CREATE_TABLET calls and
 * heartbeats the master leader (every HB_MS, following NOT_LEADER hints)
 * with reports whose roles and terms the test chooses, and that executes
 * the create/delete/step-down instructions of the replies.
 *
 *   single_master   CreateTable of 8 tablets RF 3 (partitions exactly as the
 *                   split formula, 24 replicas, 8 create calls per fake with
 *                   identical peers per tablet), leaders from reports
 *                   (highest term wins), restart (SIGTERM, then the same
 *                   --data): the catalog is intact, DropTable (heartbeat
 *                   replies carry delete instructions), a silent fake
 *                   becomes not live, errors (RF 5 with 3 tservers, RF 2,
 *                   bad schemas, duplicate table, unknown table); the
 *                   fakes' placements in ListTServers, a heartbeat with a
 *                   bad placement refused
 *   three_masters   three docraft-master processes: one leader, followers
 *                   answer NOT_LEADER with its address; kill -9 the leader:
 *                   another one leads with the catalog intact; the killed
 *                   one rejoins as a follower. Every method at a follower:
 *                   NOT_LEADER before its request is read; at the leader
 *                   a request that does not decode: INVALID. DDL request
 *                   ids: a retried CreateTable (same client id and seq)
 *                   gets its first result, before and after the failover,
 *                   another id for the name "already exists", a drop may
 *                   not reuse a create's id; a retried DropTable gets OK,
 *                   a new one "not found"
 *   leader_balance  fake 0 reports leading all 6 tablets of a table (RF 3):
 *                   with --leader-balance off no step-down comes in 3 s;
 *                   restarted with it on, the heartbeat replies to fake 0
 *                   carry step-downs (at most one per reply; the fakes
 *                   execute them: the target leads in the next term) until
 *                   2/2/2, in exactly 4 moves, and nothing moves after
 *
 * Masters listen on 127.0.0.N:PORT (N = 1..3), keep data in <tmp>/mN and
 * their log (stderr) in <tmp>/mN.log (or $MASTER_LOG_DIR/<case>-mN.log,
 * kept); the logs of a failed case are summarized. DOCRAFT_MASTER names
 * the binary. Children never outlive the test (proc.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "proc.h"
#include "common/buf.h"
#include "rpc/rpc.h"
#include "docraft.pb-c.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "test.h"
#include "loop.h"

#define NM 3            /* master slots */
#define NF 3            /* fake tservers */
#define HB_MS 300       /* fake heartbeat period */
#define TIMEOUT_MS 1500 /* --tserver-timeout-ms */
#define CALL_MS 5000
#define WAIT_MS 30000
#define MAX_TABS 128

/* ---- state ----------------------------------------------------------------------------------- */

struct ftab {
	char id[80];
	char role[16];
	uint64_t term;
	uint64_t raft_id;
};

struct fcreate {
	char id[80];
	uint64_t raft_id;
	char peers[512]; /* "1=uuid@address,2=..." in the request's order */
	char schema[64];
	size_t ncols;
	bool join;
};

struct fake {
	char uuid[40];
	char addr[32];
	char placement[40]; /* sent in every heartbeat */
	struct listener *l;
	struct rpc_server srv;
	bool srv_on;
	bool hb_on;
	bool hb_busy;
	struct rpc_call_req hb_req;
	int target; /* master slot it heartbeats */
	struct ftab tabs[MAX_TABS];
	size_t ntabs;
	struct fcreate creates[MAX_TABS];
	size_t ncreates;
	char deletes[MAX_TABS][80];
	size_t ndeletes;
	size_t create_instructions;
	size_t step_downs;       /* step-down instructions received */
	size_t max_step_downs;   /* most in one reply */
	uint64_t hb_ok;
};

struct master_proc {
	struct proc p;
	char addr[32];
	char dir[300];
	char log[400];
	bool up;
};

static struct {
	const char *master_flags[3]; /* extra flags of master_start (NULL-terminated) */
	bool active;
	bool loop_on;
	char base[256];
	char bin[4096];
	char tag[32];
	int port, fport;
	int nm;
	char masters_arg[128];
	struct master_proc m[NM];
	uv_loop_t loop;
	struct rpc_client cl;
	uv_timer_t hb_timer;
	struct fake f[NF];
	int hint; /* master slot last known to lead */
} C;

struct res {
	int status;
	char message[DOCRAFT_ERRMSG_SIZE];
	char leader[64];
	uint8_t *reply;
	size_t len;
	bool done;
};

static void res_free(struct res *r)
{
	free(r->reply);
	memset(r, 0, sizeof *r);
}

/* ---- driving the loop ------------------------------------------------------------------------ */

/* loop_run_until on the test's loop. */
static bool run_until(bool (*pred)(void *), void *arg, uint64_t timeout_ms)
{
	return loop_run_until(&C.loop, pred, arg, timeout_ms);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static void run_for(uint64_t ms)
{
	run_until(never, NULL, ms);
}

static bool is_done(void *arg)
{
	return ((struct res *)arg)->done;
}

/* ---- calls ----------------------------------------------------------------------------------- */

static void call_cb(struct rpc_call_req *req, const struct rpc_result *r)
{
	struct res *out = req->data;
	out->status = r->status;
	snprintf(out->message, sizeof out->message, "%s", r->message);
	snprintf(out->leader, sizeof out->leader, "%s", r->leader_address);
	if (r->status == 0 && r->reply_len > 0) {
		out->reply = malloc(r->reply_len);
		if (out->reply == NULL)
			abort();
		memcpy(out->reply, r->reply, r->reply_len);
	}
	out->len = r->status == 0 ? r->reply_len : 0;
	out->done = true;
}

/* One call to address with the request payload given as bytes; *out is
 * the outcome (res_free it). */
static void call_raw(const char *address, uint16_t method, const void *payload, size_t len,
		     struct res *out)
{
	struct rpc_call_req req;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	memset(out, 0, sizeof *out);
	req.data = out;
	rv = rpc_call(&C.cl, address, method, payload, len, CALL_MS, &req, call_cb, errmsg);
	if (rv != 0) {
		out->status = rv;
		snprintf(out->message, sizeof out->message, "%s", errmsg);
		out->done = true;
		return;
	}
	run_until(is_done, out, CALL_MS + 2000);
	CHECK_MSG(out->done, "call to %s: no callback", address);
}

/* call_raw with msg packed. */
static void call(const char *address, uint16_t method, const ProtobufCMessage *msg,
		 struct res *out)
{
	struct buf b = BUF_INIT;
	size_t len = protobuf_c_message_get_packed_size(msg);

	buf_reserve(&b, len + 1);
	protobuf_c_message_pack(msg, b.data);
	call_raw(address, method, b.data, len, out);
	buf_free(&b);
}

static int slot_of(const char *address)
{
	for (int k = 0; k < C.nm; k++)
		if (strcmp(C.m[k].addr, address) == 0)
			return k;
	return -1;
}

/* Set while a case expects UNAVAILABLE itself as the answer. */
static bool unavailable_expected;

static bool retryable(int status)
{
	return status == DOCRAFT_ENOTLEADER ||
	       (status == DOCRAFT_EUNAVAILABLE && !unavailable_expected) ||
	       status == DOCRAFT_ETIMEDOUT || status == DOCRAFT_ECLOSED ||
	       status == DOCRAFT_EBUSY || status == DOCRAFT_ELEADERLOST;
}

/* Calls the master leader (following hints, trying every live master)
 * until an answer that is not "retry elsewhere or later". */
static void call_leader(uint16_t method, const ProtobufCMessage *msg, struct res *out)
{
	uint64_t end = proc_now_ms() + WAIT_MS;
	for (;;) {
		int k = C.hint;
		for (int i = 0; i < C.nm && (k < 0 || k >= C.nm || !C.m[k].up); i++)
			k = i;
		CHECK_MSG(k >= 0 && k < C.nm && C.m[k].up, "no master is up");
		call(C.m[k].addr, method, msg, out);
		if (!retryable(out->status)) {
			C.hint = k;
			return;
		}
		int h = out->status == DOCRAFT_ENOTLEADER ? slot_of(out->leader) : -1;
		if (h >= 0 && h != k && C.m[h].up) {
			C.hint = h;
		} else {
			C.hint = (k + 1) % C.nm;
			run_for(100);
		}
		CHECK_MSG(proc_now_ms() < end, "no master leader answered method %u within %d ms "
			  "(last: %d %s)", method, WAIT_MS, out->status, out->message);
		res_free(out);
	}
}

/* ---- fake tablet servers --------------------------------------------------------------------- */

static struct ftab *ftab_find(struct fake *f, const char *id)
{
	for (size_t i = 0; i < f->ntabs; i++)
		if (strcmp(f->tabs[i].id, id) == 0)
			return &f->tabs[i];
	return NULL;
}

static void ftab_add(struct fake *f, const char *id, uint64_t raft_id)
{
	struct ftab *t;
	if (ftab_find(f, id) != NULL || f->ntabs == MAX_TABS)
		return;
	t = &f->tabs[f->ntabs++];
	memset(t, 0, sizeof *t);
	snprintf(t->id, sizeof t->id, "%s", id);
	snprintf(t->role, sizeof t->role, "follower");
	t->term = 1;
	t->raft_id = raft_id;
}

static void ftab_remove(struct fake *f, const char *id)
{
	struct ftab *t = ftab_find(f, id);
	if (t == NULL)
		return;
	*t = f->tabs[--f->ntabs];
}

static void format_peers(char *out, size_t cap, Docraft__Peer **peers, size_t n)
{
	size_t off = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && off < cap; i++)
		off += (size_t)snprintf(out + off, cap - off, "%s%" PRIu64 "=%s@%s%s",
					i ? "," : "", peers[i]->raft_id, peers[i]->tserver_uuid,
					peers[i]->address, peers[i]->voter ? "" : "(nv)");
}

static void fake_create(void *arg, struct rpc_call *call_)
{
	struct fake *f = arg;
	Docraft__CreateTabletRequest *req =
		docraft__create_tablet_request__unpack(NULL, call_->request_len, call_->request);
	Docraft__CreateTabletResponse resp = DOCRAFT__CREATE_TABLET_RESPONSE__INIT;
	if (req == NULL) {
		rpc_reply_error(call_, DOCRAFT_EINVAL, "bad request", NULL, 0);
		return;
	}
	if (f->ncreates < MAX_TABS) {
		struct fcreate *c = &f->creates[f->ncreates++];
		snprintf(c->id, sizeof c->id, "%s", req->tablet_id);
		c->raft_id = req->raft_id;
		format_peers(c->peers, sizeof c->peers, req->peers, req->n_peers);
		snprintf(c->schema, sizeof c->schema, "%s", req->schema ? req->schema->name : "");
		c->ncols = req->schema ? req->schema->n_columns : 0;
		c->join = req->join;
	}
	ftab_add(f, req->tablet_id, req->raft_id);
	docraft__create_tablet_request__free_unpacked(req, NULL);
	rpc_reply_message(call_, &resp.base);
}

/* A step-down instruction to f, as a Raft transfer would end: the target
 * replica leads in the next term, the others follow in it. */
static void fake_step_down(struct fake *f, const Docraft__StepDownRequest *sd)
{
	struct ftab *mine = ftab_find(f, sd->tablet_id);
	uint64_t term;
	if (mine == NULL || strcmp(mine->role, "leader") != 0)
		return;
	term = mine->term + 1;
	for (int k = 0; k < NF; k++) {
		struct ftab *t = ftab_find(&C.f[k], sd->tablet_id);
		if (t == NULL)
			continue;
		t->term = term;
		snprintf(t->role, sizeof t->role, "%s",
			 t->raft_id == sd->to_raft_id ? "leader" : "follower");
	}
}

static void hb_done(struct rpc_call_req *req, const struct rpc_result *r)
{
	size_t step_downs = 0;
	struct fake *f = req->data;
	Docraft__HeartbeatResponse *resp;

	f->hb_busy = false;
	if (r->status != 0) {
		int k = slot_of(r->leader_address);
		if (r->status == DOCRAFT_ENOTLEADER && k >= 0)
			f->target = k;
		else
			f->target = (f->target + 1) % C.nm;
		return;
	}
	resp = docraft__heartbeat_response__unpack(NULL, r->reply_len, r->reply);
	if (resp == NULL)
		return;
	f->hb_ok++;
	for (size_t i = 0; i < resp->n_instructions; i++) {
		const Docraft__Instruction *in = resp->instructions[i];
		if (in->kind_case == DOCRAFT__INSTRUCTION__KIND_CREATE) {
			f->create_instructions++;
			ftab_add(f, in->create->tablet_id, in->create->raft_id);
		} else if (in->kind_case == DOCRAFT__INSTRUCTION__KIND_DELETE) {
			bool seen = false;
			for (size_t k = 0; k < f->ndeletes; k++)
				seen = seen || strcmp(f->deletes[k], in->delete_->tablet_id) == 0;
			if (!seen && f->ndeletes < MAX_TABS)
				snprintf(f->deletes[f->ndeletes++], sizeof f->deletes[0], "%s",
					 in->delete_->tablet_id);
			ftab_remove(f, in->delete_->tablet_id);
		} else if (in->kind_case == DOCRAFT__INSTRUCTION__KIND_STEP_DOWN) {
			step_downs++;
			fake_step_down(f, in->step_down);
		}
	}
	f->step_downs += step_downs;
	if (step_downs > f->max_step_downs)
		f->max_step_downs = step_downs;
	docraft__heartbeat_response__free_unpacked(resp, NULL);
}

static void send_heartbeat(struct fake *f)
{
	Docraft__HeartbeatRequest req = DOCRAFT__HEARTBEAT_REQUEST__INIT;
	Docraft__TabletReport reps[MAX_TABS], *rp[MAX_TABS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	for (size_t i = 0; i < f->ntabs; i++) {
		docraft__tablet_report__init(&reps[i]);
		reps[i].tablet_id = f->tabs[i].id;
		reps[i].role = f->tabs[i].role;
		reps[i].term = f->tabs[i].term;
		reps[i].raft_id = f->tabs[i].raft_id;
		rp[i] = &reps[i];
	}
	req.uuid = f->uuid;
	req.address = f->addr;
	req.placement = f->placement;
	req.n_tablets = f->ntabs;
	req.tablets = rp;
	f->hb_req.data = f;
	if (f->target < 0 || f->target >= C.nm || !C.m[f->target].up)
		f->target = C.hint >= 0 ? C.hint : 0;
	if (rpc_call_message(&C.cl, C.m[f->target].addr, DOCRAFT__METHOD__MASTER_HEARTBEAT,
			     &req.base, 1000, &f->hb_req, hb_done, errmsg) == 0)
		f->hb_busy = true;
}

static void hb_timer_cb(uv_timer_t *t)
{
	(void)t;
	for (int i = 0; i < NF; i++)
		if (C.f[i].hb_on && !C.f[i].hb_busy)
			send_heartbeat(&C.f[i]);
}

/* ---- masters --------------------------------------------------------------------------------- */

static void dump_logs(void)
{
	for (int k = 0; k < NM; k++) {
		char what[64];
		snprintf(what, sizeof what, "failed case: master %d log", k + 1);
		proc_note_log_tail(what, C.m[k].log, 30);
	}
}

static void master_start(int k)
{
	struct master_proc *m = &C.m[k];
	char line[512];
	char *argv[] = {C.bin,
			"--address", m->addr,
			"--masters", C.masters_arg,
			"--data", m->dir,
			"--tserver-timeout-ms", "1500",
			"--log-level", "info",
			(char *)C.master_flags[0], (char *)C.master_flags[1],
			(char *)C.master_flags[2], NULL};
	int rv;

	CHECK_MSG(proc_spawn(&m->p, argv, m->log) == 0, "spawn %s: %s", C.bin, strerror(errno));
	m->up = true;
	rv = proc_read_line(&m->p, line, sizeof line, 20000);
	CHECK_MSG(rv == 1, "master %d: no ready line (%d)", k + 1, rv);
	CHECK_MSG(strncmp(line, "docraft-master listening on ", 28) == 0 &&
			  strcmp(line + 28, m->addr) == 0,
		  "master %d: '%s'", k + 1, line);
}

/* SIGTERM, expecting a graceful exit 0. */
static void master_stop(int k)
{
	struct master_proc *m = &C.m[k];
	int st = 0;
	bool exited;
	if (!m->up)
		return;
	proc_signal(&m->p, SIGTERM);
	exited = proc_wait(&m->p, 20000, &st);
	if (!exited)
		proc_kill(&m->p);
	m->up = false;
	CHECK_MSG(exited, "master %d: no exit within 20 s of SIGTERM", k + 1);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "master %d: wait status 0x%x", k + 1,
		  st);
}

static void master_kill(int k)
{
	proc_kill(&C.m[k].p);
	C.m[k].up = false;
}


/* ---- setup and teardown ---------------------------------------------------------------------- */

static void listener_closed(void *arg)
{
	(void)arg;
}

/* The fake's server is closed: now its listener. */
static void srv_closed(struct rpc_server *srv)
{
	struct fake *f = srv->data;
	listener_close(f->l, listener_closed, NULL);
	f->l = NULL;
}

static void client_closed(struct rpc_client *cl)
{
	(void)cl;
}

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void loop_down(void)
{
	if (!C.loop_on)
		return;
	for (int i = 0; i < NF; i++) {
		struct fake *f = &C.f[i];
		f->hb_on = false;
		if (f->srv_on) {
			rpc_server_close(&f->srv, srv_closed);
		} else if (f->l != NULL) {
			listener_close(f->l, listener_closed, NULL);
			f->l = NULL;
		}
		f->srv_on = false;
	}
	rpc_client_close(&C.cl, client_closed);
	uv_close((uv_handle_t *)&C.hb_timer, handle_closed);
	uv_run(&C.loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&C.loop), 0);
	C.loop_on = false;
}

static void cleanup(bool failed)
{
	if (!C.active)
		return;
	C.active = false;
	proc_kill_all();
	for (int k = 0; k < NM; k++)
		C.m[k].up = false;
	if (failed)
		dump_logs();
	loop_down();
	test_tmpdir_remove(C.base);
}

static void cleanup_at_exit(void)
{
	cleanup(true);
}

static void on_fatal_signal(int sig)
{
	proc_die_of_signal(sig, C.active ? C.base : NULL);
}

/* nm masters (not started), NF fakes listening (heartbeats off). */
static void setup(const char *tag, int nm)
{
	const char *logdir = getenv("MASTER_LOG_DIR");
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	size_t off = 0;

	cleanup(true); /* the previous case failed */
	proc_on_exit(cleanup_at_exit, on_fatal_signal);
	signal(SIGPIPE, SIG_IGN);
	memset(C.m, 0, sizeof C.m);
	memset(C.f, 0, sizeof C.f);
	memset(C.master_flags, 0, sizeof C.master_flags);
	snprintf(C.tag, sizeof C.tag, "%s", tag);
	CHECK_MSG(proc_find_exe(C.bin, sizeof C.bin, "DOCRAFT_MASTER",
				"src/master/docraft-master") == 0,
		  "docraft-master not found at %s (set DOCRAFT_MASTER)", C.bin);
	test_tmpdir_make(C.base, tag);
	C.active = true;
	C.port = proc_free_port(4, -1);
	C.fport = proc_free_port(4, C.port);
	CHECK(C.port > 0 && C.fport > 0);
	C.nm = nm;
	C.hint = 0;
	for (int k = 0; k < nm; k++) {
		struct master_proc *m = &C.m[k];
		snprintf(m->addr, sizeof m->addr, "127.0.0.%d:%d", k + 1, C.port);
		snprintf(m->dir, sizeof m->dir, "%s/m%d", C.base, k + 1);
		if (logdir != NULL && *logdir != '\0')
			snprintf(m->log, sizeof m->log, "%s/%s-m%d.log", logdir, tag, k + 1);
		else
			snprintf(m->log, sizeof m->log, "%s/m%d.log", C.base, k + 1);
		off += (size_t)snprintf(C.masters_arg + off, sizeof C.masters_arg - off, "%s%s",
					k ? "," : "", m->addr);
	}

	CHECK_EQ_INT(uv_loop_init(&C.loop), 0);
	C.loop_on = true;
	rpc_client_init(&C.cl, &C.loop);
	uv_timer_init(&C.loop, &C.hb_timer);
	uv_timer_start(&C.hb_timer, hb_timer_cb, HB_MS, HB_MS);
	for (int i = 0; i < NF; i++) {
		struct fake *f = &C.f[i];
		snprintf(f->uuid, sizeof f->uuid, "%032x", 0xf00d01 + i);
		snprintf(f->addr, sizeof f->addr, "127.0.0.%d:%d", i + 2, C.fport);
		CHECK_OK_MSG(listener_open(&C.loop, f->addr, &f->l, errmsg), errmsg);
		CHECK_OK_MSG(rpc_server_init(&f->srv, &C.loop, f->l, errmsg), errmsg);
		f->srv.data = f;
		f->srv_on = true;
		CHECK_OK_MSG(rpc_server_register(&f->srv, DOCRAFT__METHOD__TSERVER_CREATE_TABLET,
						 fake_create, f, errmsg),
			     errmsg);
	}
}

static void teardown(void)
{
	for (int k = 0; k < C.nm; k++)
		master_stop(k);
	C.active = false;
	loop_down();
	test_tmpdir_remove(C.base);
}

/* ---- requests -------------------------------------------------------------------------------- */

/* The test schema: channel text HASH, ts timestamp RANGE DESC, seq bigint
 * RANGE, body text, tags set<text>, attrs map<text, int>; TTL one day. */
struct schema_pb {
	Docraft__TableSchema s;
	Docraft__ColumnSchema c[8];
	Docraft__ColumnSchema *cp[8];
};

static void add_col(struct schema_pb *sp, const char *name, Docraft__ColumnKind kind,
		    Docraft__ColumnType type, Docraft__ColumnType elem, Docraft__ColumnType val,
		    bool desc)
{
	Docraft__ColumnSchema *c = &sp->c[sp->s.n_columns];
	docraft__column_schema__init(c);
	c->name = (char *)name;
	c->id = 77; /* the master assigns ids: whatever is sent is ignored */
	c->kind = kind;
	c->type = type;
	c->elem_type = elem;
	c->value_type = val;
	c->desc = desc;
	sp->cp[sp->s.n_columns++] = c;
}

static void msgs_schema(struct schema_pb *sp, const char *name)
{
	memset(sp, 0, sizeof *sp);
	docraft__table_schema__init(&sp->s);
	sp->s.name = (char *)name;
	sp->s.columns = sp->cp;
	sp->s.default_ttl_ms = 86400000;
	add_col(sp, "channel", DOCRAFT__COLUMN_KIND__HASH, DOCRAFT__COLUMN_TYPE__TEXT, 0, 0, false);
	add_col(sp, "ts", DOCRAFT__COLUMN_KIND__RANGE, DOCRAFT__COLUMN_TYPE__TIMESTAMP, 0, 0, true);
	add_col(sp, "seq", DOCRAFT__COLUMN_KIND__RANGE, DOCRAFT__COLUMN_TYPE__INT64, 0, 0, false);
	add_col(sp, "body", DOCRAFT__COLUMN_KIND__REGULAR, DOCRAFT__COLUMN_TYPE__TEXT, 0, 0, false);
	add_col(sp, "tags", DOCRAFT__COLUMN_KIND__REGULAR, DOCRAFT__COLUMN_TYPE__SET,
		DOCRAFT__COLUMN_TYPE__TEXT, 0, false);
	add_col(sp, "attrs", DOCRAFT__COLUMN_KIND__REGULAR, DOCRAFT__COLUMN_TYPE__MAP,
		DOCRAFT__COLUMN_TYPE__TEXT, DOCRAFT__COLUMN_TYPE__INT32, false);
}

/* A DDL request id: client id (16 bytes of `client`) and seq; client 0:
 * none. */
struct ddl_id {
	uint8_t client;
	uint64_t seq;
};

static void set_id(ProtobufCBinaryData *cid, uint64_t *seq, uint8_t buf[16], struct ddl_id id)
{
	if (id.client == 0)
		return;
	memset(buf, id.client, 16);
	cid->data = buf;
	cid->len = 16;
	*seq = id.seq;
}

static int create_table_id(struct schema_pb *sp, uint32_t tablets, uint32_t rf, struct ddl_id id,
			   struct res *out)
{
	Docraft__CreateTableRequest req = DOCRAFT__CREATE_TABLE_REQUEST__INIT;
	uint8_t cid[16];
	req.schema = &sp->s;
	req.num_tablets = tablets;
	req.replication_factor = rf;
	set_id(&req.client_id, &req.seq, cid, id);
	call_leader(DOCRAFT__METHOD__MASTER_CREATE_TABLE, &req.base, out);
	return out->status;
}

static int create_table(struct schema_pb *sp, uint32_t tablets, uint32_t rf, struct res *out)
{
	return create_table_id(sp, tablets, rf, (struct ddl_id){0, 0}, out);
}

static int create_msgs_id(const char *name, uint32_t tablets, uint32_t rf, struct ddl_id id,
			  char *message)
{
	struct schema_pb sp;
	struct res r;
	int status;
	msgs_schema(&sp, name);
	status = create_table_id(&sp, tablets, rf, id, &r);
	if (message != NULL)
		snprintf(message, DOCRAFT_ERRMSG_SIZE, "%s", r.message);
	if (status == 0) {
		Docraft__CreateTableResponse *resp =
			docraft__create_table_response__unpack(NULL, r.len, r.reply);
		CHECK(resp != NULL);
		CHECK_EQ_STR(resp->table_id, name);
		docraft__create_table_response__free_unpacked(resp, NULL);
	}
	res_free(&r);
	return status;
}

static int create_msgs(const char *name, uint32_t tablets, uint32_t rf, char *message)
{
	return create_msgs_id(name, tablets, rf, (struct ddl_id){0, 0}, message);
}

/* GetTable from the leader; NULL (and *status) on an error answer. */
static Docraft__GetTableResponse *get_table_at(const char *address, const char *name,
					       int *status, char *leader)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	Docraft__GetTableResponse *resp = NULL;
	struct res r;
	req.name = (char *)name;
	if (address != NULL)
		call(address, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &r);
	else
		call_leader(DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &r);
	*status = r.status;
	if (leader != NULL)
		snprintf(leader, 64, "%s", r.leader);
	if (r.status == 0) {
		resp = docraft__get_table_response__unpack(NULL, r.len, r.reply);
		CHECK(resp != NULL);
	}
	res_free(&r);
	return resp;
}

static Docraft__GetTableResponse *get_table(const char *name)
{
	int status;
	Docraft__GetTableResponse *t = get_table_at(NULL, name, &status, NULL);
	CHECK_MSG(t != NULL, "GetTable %s: status %d", name, status);
	return t;
}

/* Partition and placement of a table as text (leaders left out). */
static void layout(const Docraft__GetTableResponse *t, struct buf *out)
{
	buf_reset(out);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const Docraft__TabletLocation *l = t->tablets[i];
		char peers[512];
		format_peers(peers, sizeof peers, l->replicas, l->n_replicas);
		buf_printf(out, "%s [%u,%u) %s\n", l->tablet_id, l->start, l->end, peers);
	}
	buf_printf(out, "schema %s cols %zu ttl %" PRId64 "\n", t->schema->name,
		   t->schema->n_columns, t->schema->default_ttl_ms);
	buf_push(out, '\0');
}

static Docraft__ListTServersResponse *list_tservers(void)
{
	Docraft__ListTServersRequest req = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
	Docraft__ListTServersResponse *resp;
	struct res r;
	call_leader(DOCRAFT__METHOD__MASTER_LIST_TSERVERS, &req.base, &r);
	CHECK_MSG(r.status == 0, "ListTServers: %d %s", r.status, r.message);
	resp = docraft__list_tservers_response__unpack(NULL, r.len, r.reply);
	CHECK(resp != NULL);
	res_free(&r);
	return resp;
}

/* Fake i as ListTServers reports it (NULL if absent). */
static const Docraft__TServerInfo *ts_info(const Docraft__ListTServersResponse *l, int i)
{
	for (size_t k = 0; k < l->n_tservers; k++)
		if (strcmp(l->tservers[k]->uuid, C.f[i].uuid) == 0)
			return l->tservers[k];
	return NULL;
}

/* Waits until ListTServers shows fake i live (or not). */
static void wait_live(int i, bool live)
{
	uint64_t end = proc_now_ms() + WAIT_MS;
	for (;;) {
		Docraft__ListTServersResponse *l = list_tservers();
		const Docraft__TServerInfo *ts = ts_info(l, i);
		bool ok = live ? ts != NULL && ts->live : ts == NULL || !ts->live;
		if (ok && ts != NULL)
			CHECK_EQ_STR(ts->address, C.f[i].addr);
		docraft__list_tservers_response__free_unpacked(l, NULL);
		if (ok)
			return;
		CHECK_MSG(proc_now_ms() < end, "fake %d never became %s", i,
			  live ? "live" : "not live");
		run_for(100);
	}
}

static int fake_of_uuid(const char *uuid)
{
	for (int i = 0; i < NF; i++)
		if (strcmp(C.f[i].uuid, uuid) == 0)
			return i;
	return -1;
}

/* Expected leader of tablet i: fake i % 3 (raft id of its replica). */
static uint64_t expected_leader(const Docraft__TabletLocation *l, size_t i)
{
	for (size_t k = 0; k < l->n_replicas; k++)
		if (fake_of_uuid(l->replicas[k]->tserver_uuid) == (int)(i % NF))
			return l->replicas[k]->raft_id;
	return 0;
}

/* Makes fake i % 3 report leader of tablet i in term 5, the others
 * follower in term 5 (fake (i + 1) % 3 claims leader of tablet 0 in the
 * older term 4: a deposed leader not yet stepped down). */
static void set_leaders(const Docraft__GetTableResponse *t)
{
	for (size_t i = 0; i < t->n_tablets; i++) {
		for (int k = 0; k < NF; k++) {
			struct ftab *ft = ftab_find(&C.f[k], t->tablets[i]->tablet_id);
			if (ft == NULL)
				continue;
			ft->term = 5;
			snprintf(ft->role, sizeof ft->role, "%s",
				 (size_t)k == i % NF ? "leader" : "follower");
			if (i == 0 && k == 1) {
				ft->term = 4;
				snprintf(ft->role, sizeof ft->role, "leader");
			}
		}
	}
}

static bool leaders_match(const char *name)
{
	Docraft__GetTableResponse *t = get_table(name);
	bool ok = true;
	for (size_t i = 0; i < t->n_tablets; i++)
		ok = ok && t->tablets[i]->leader_raft_id == expected_leader(t->tablets[i], i);
	docraft__get_table_response__free_unpacked(t, NULL);
	return ok;
}

static void wait_leaders(const char *name)
{
	uint64_t end = proc_now_ms() + WAIT_MS;
	while (!leaders_match(name)) {
		CHECK_MSG(proc_now_ms() < end, "leaders of %s never matched the reports", name);
		run_for(100);
	}
}

static int drop_table_id(const char *name, struct ddl_id id, char *message)
{
	Docraft__DropTableRequest req = DOCRAFT__DROP_TABLE_REQUEST__INIT;
	uint8_t cid[16];
	struct res r;
	int status;
	req.name = (char *)name;
	set_id(&req.client_id, &req.seq, cid, id);
	call_leader(DOCRAFT__METHOD__MASTER_DROP_TABLE, &req.base, &r);
	status = r.status;
	if (message != NULL)
		snprintf(message, DOCRAFT_ERRMSG_SIZE, "%s", r.message);
	res_free(&r);
	return status;
}

static int drop_table(const char *name, char *message)
{
	return drop_table_id(name, (struct ddl_id){0, 0}, message);
}

static size_t list_tables(char names[][64], size_t cap)
{
	Docraft__ListTablesRequest req = DOCRAFT__LIST_TABLES_REQUEST__INIT;
	Docraft__ListTablesResponse *resp;
	struct res r;
	size_t n;
	call_leader(DOCRAFT__METHOD__MASTER_LIST_TABLES, &req.base, &r);
	CHECK_MSG(r.status == 0, "ListTables: %d %s", r.status, r.message);
	resp = docraft__list_tables_response__unpack(NULL, r.len, r.reply);
	CHECK(resp != NULL);
	n = resp->n_tables;
	for (size_t i = 0; i < n && i < cap; i++)
		snprintf(names[i], 64, "%s", resp->tables[i]->name);
	docraft__list_tables_response__free_unpacked(resp, NULL);
	res_free(&r);
	return n;
}

/* ---- checks ---------------------------------------------------------------------------------- */

/* Each fake got exactly one create per tablet of t, with the peers of
 * GetTable, identical across the replicas of a tablet. */
static void check_creates(const Docraft__GetTableResponse *t, size_t per_fake_before)
{
	for (int k = 0; k < NF; k++)
		CHECK_EQ_INT(C.f[k].ncreates - per_fake_before, t->n_tablets);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const Docraft__TabletLocation *l = t->tablets[i];
		char want[512];
		int found = 0;
		format_peers(want, sizeof want, l->replicas, l->n_replicas);
		for (int k = 0; k < NF; k++) {
			for (size_t c = per_fake_before; c < C.f[k].ncreates; c++) {
				const struct fcreate *fc = &C.f[k].creates[c];
				if (strcmp(fc->id, l->tablet_id) != 0)
					continue;
				found++;
				CHECK_EQ_STR(fc->peers, want);
				CHECK(!fc->join);
				CHECK_EQ_STR(fc->schema, t->schema->name);
				CHECK_EQ_INT(fc->ncols, 6);
				/* Its own raft id is the one its uuid has in the peers. */
				for (size_t p = 0; p < l->n_replicas; p++)
					if (strcmp(l->replicas[p]->tserver_uuid, C.f[k].uuid) == 0)
						CHECK_EQ_U64(fc->raft_id, l->replicas[p]->raft_id);
			}
		}
		CHECK_EQ_INT(found, (int)l->n_replicas);
	}
}

static void check_layout(const Docraft__GetTableResponse *t, uint32_t n, uint32_t rf,
			 const char *name)
{
	int per_fake[NF] = {0};
	CHECK_EQ_STR(t->schema->name, name);
	CHECK_EQ_INT(t->schema->n_columns, 6);
	for (size_t c = 0; c < t->schema->n_columns; c++)
		CHECK_EQ_INT(t->schema->columns[c]->id, (int)c); /* assigned by the master */
	CHECK(t->schema->columns[1]->desc);
	CHECK_EQ_INT(t->schema->columns[1]->kind, DOCRAFT__COLUMN_KIND__RANGE);
	CHECK_EQ_INT(t->schema->columns[4]->type, DOCRAFT__COLUMN_TYPE__SET);
	CHECK_EQ_INT(t->schema->columns[5]->value_type, DOCRAFT__COLUMN_TYPE__INT32);
	CHECK_EQ_INT(t->schema->default_ttl_ms, 86400000);
	CHECK_EQ_INT(t->n_tablets, n);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const Docraft__TabletLocation *l = t->tablets[i];
		char prefix[80];
		CHECK_EQ_U64(l->start, (uint64_t)i * 65536 / n);
		CHECK_EQ_U64(l->end, (uint64_t)(i + 1) * 65536 / n);
		snprintf(prefix, sizeof prefix, "%s-%zu-", name, i);
		CHECK_MSG(strncmp(l->tablet_id, prefix, strlen(prefix)) == 0 &&
				  strlen(l->tablet_id) == strlen(prefix) + 8,
			  "tablet id %s", l->tablet_id);
		CHECK_EQ_INT(l->n_replicas, rf);
		for (size_t k = 0; k < l->n_replicas; k++) {
			int f = fake_of_uuid(l->replicas[k]->tserver_uuid);
			CHECK(f >= 0);
			CHECK_EQ_U64(l->replicas[k]->raft_id, k + 1);
			CHECK_EQ_STR(l->replicas[k]->address, C.f[f].addr);
			CHECK(l->replicas[k]->voter);
			for (size_t j = 0; j < k; j++)
				CHECK(fake_of_uuid(l->replicas[j]->tserver_uuid) != f);
			per_fake[f]++;
		}
	}
	if (rf == NF)
		for (int f = 0; f < NF; f++)
			CHECK_EQ_INT(per_fake[f], n);
}

static bool all_deleted(void *arg)
{
	const Docraft__GetTableResponse *t = arg;
	for (size_t i = 0; i < t->n_tablets; i++) {
		for (int k = 0; k < NF; k++) {
			bool got = false;
			const char *id = t->tablets[i]->tablet_id;
			for (size_t d = 0; d < C.f[k].ndeletes; d++)
				got = got || strcmp(C.f[k].deletes[d], id) == 0;
			if (!got || ftab_find(&C.f[k], t->tablets[i]->tablet_id) != NULL)
				return false;
		}
	}
	return true;
}

static void start_heartbeats(void)
{
	for (int i = 0; i < NF; i++)
		C.f[i].hb_on = true;
}

/* Sends two calls at once to the leader and waits for both. */
static void call_twice(uint16_t method, const ProtobufCMessage *msg, struct res out[2])
{
	struct rpc_call_req req[2];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memset(out, 0, 2 * sizeof *out);
	for (int i = 0; i < 2; i++) {
		req[i].data = &out[i];
		CHECK_OK_MSG(rpc_call_message(&C.cl, C.m[C.hint].addr, method, msg, CALL_MS,
					      &req[i], call_cb, errmsg),
			     errmsg);
	}
	run_until(is_done, &out[0], CALL_MS + 2000);
	run_until(is_done, &out[1], CALL_MS + 2000);
	CHECK(out[0].done && out[1].done);
}

static void concurrent_create_drop(void)
{
	Docraft__CreateTableRequest creq = DOCRAFT__CREATE_TABLE_REQUEST__INIT;
	Docraft__DropTableRequest dreq = DOCRAFT__DROP_TABLE_REQUEST__INIT;
	struct schema_pb sp;
	struct res r[2];
	int ok;

	msgs_schema(&sp, "dup");
	creq.schema = &sp.s;
	creq.num_tablets = 2;
	creq.replication_factor = 1;
	call_twice(DOCRAFT__METHOD__MASTER_CREATE_TABLE, &creq.base, r);
	ok = r[0].status == 0 ? 0 : 1;
	CHECK_MSG(r[ok].status == 0, "create: %d %s / %d %s", r[0].status, r[0].message,
		  r[1].status, r[1].message);
	CHECK_MSG((r[!ok].status == DOCRAFT_EBUSY && strstr(r[!ok].message, "being created")) ||
			  (r[!ok].status == DOCRAFT_EINVAL && strstr(r[!ok].message, "exists")),
		  "second create: %d %s", r[!ok].status, r[!ok].message);
	test_note("concurrent create: %s", r[!ok].message);
	res_free(&r[0]);
	res_free(&r[1]);
	dreq.name = (char *)"dup";
	call_twice(DOCRAFT__METHOD__MASTER_DROP_TABLE, &dreq.base, r);
	ok = r[0].status == 0 ? 0 : 1;
	CHECK_MSG(r[ok].status == 0, "drop: %d %s / %d %s", r[0].status, r[0].message,
		  r[1].status, r[1].message);
	CHECK_MSG((r[!ok].status == DOCRAFT_EBUSY && strstr(r[!ok].message, "being dropped")) ||
			  r[!ok].status == DOCRAFT_ETABLENOTFOUND,
		  "second drop: %d %s", r[!ok].status, r[!ok].message);
	test_note("concurrent drop: %s", r[!ok].message);
	res_free(&r[0]);
	res_free(&r[1]);
	/* Its replicas go with the next heartbeats. */
	for (uint64_t end = proc_now_ms() + WAIT_MS; C.f[0].ntabs + C.f[1].ntabs +
						       C.f[2].ntabs > 8 * 3;) {
		CHECK_MSG(proc_now_ms() < end, "replicas of 'dup' never deleted");
		run_for(100);
	}
	for (int k = 0; k < NF; k++)
		C.f[k].ndeletes = 0;
}

/* A heartbeat with a placement that is not cloud.region.zone fails with
 * INVALID_ARGUMENT saying why, and registers nobody. */
static void bad_placement(void)
{
	Docraft__HeartbeatRequest req = DOCRAFT__HEARTBEAT_REQUEST__INIT;
	Docraft__ListTServersResponse *ls;
	struct res r;
	req.uuid = (char *)"bad-placement";
	req.address = (char *)"127.0.0.9:9";
	req.placement = (char *)"cloud.region";
	call_leader(DOCRAFT__METHOD__MASTER_HEARTBEAT, &req.base, &r);
	CHECK_EQ_INT(r.status, DOCRAFT_EINVAL);
	CHECK_MSG(strstr(r.message, "placement 'cloud.region': 2 parts") != NULL, "%s", r.message);
	res_free(&r);
	ls = list_tservers();
	CHECK_EQ_INT(ls->n_tservers, NF);
	docraft__list_tservers_response__free_unpacked(ls, NULL);
}

/* ---- cases ----------------------------------------------------------------------------------- */

TEST(single_master)
{
	Docraft__GetTableResponse *t, *t2;
	Docraft__ListTServersResponse *ls;
	struct schema_pb sp;
	struct res r;
	struct buf before = BUF_INIT, after = BUF_INIT;
	char msg[DOCRAFT_ERRMSG_SIZE];
	char names[8][64];
	int status;

	setup("master1", 1);
	master_start(0);
	for (int i = 0; i < NF; i++) /* zones: two in one, one alone, as --placement sets */
		snprintf(C.f[i].placement, sizeof C.f[i].placement, "%s",
			 i < 2 ? "test.r1.a" : "test.r1.b");
	start_heartbeats();
	for (int i = 0; i < NF; i++)
		wait_live(i, true);

	/* Errors before anything exists. */
	/* Not enough live tservers: retryable (they may come), not EINVAL. */
	unavailable_expected = true;
	CHECK_EQ_INT(create_msgs("msgs", 8, 5, msg), DOCRAFT_EUNAVAILABLE);
	unavailable_expected = false;
	CHECK_MSG(strstr(msg, "not enough live tservers: 3 live, replication factor 5"), "%s",
		  msg);
	CHECK_EQ_INT(create_msgs("msgs", 8, 2, msg), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(msg, "1, 3 or 5"), "%s", msg);
	CHECK_EQ_INT(create_msgs("bad-name", 8, 3, msg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(create_msgs("msgs", 2000, 3, msg), DOCRAFT_EINVAL);
	msgs_schema(&sp, "msgs");
	sp.c[0].kind = DOCRAFT__COLUMN_KIND__REGULAR; /* a regular column before the keys */
	CHECK_EQ_INT(create_table(&sp, 8, 3, &r), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(r.message, "schema"), "%s", r.message);
	res_free(&r);
	msgs_schema(&sp, "msgs");
	sp.c[0].kind = DOCRAFT__COLUMN_KIND__RANGE; /* no hash column */
	CHECK_EQ_INT(create_table(&sp, 8, 3, &r), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(r.message, "hash column"), "%s", r.message);
	res_free(&r);
	msgs_schema(&sp, "msgs");
	sp.c[3].name = (char *)"body";
	sp.c[4].name = (char *)"body"; /* duplicate column */
	CHECK_EQ_INT(create_table(&sp, 8, 3, &r), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(r.message, "duplicate"), "%s", r.message);
	res_free(&r);
	msgs_schema(&sp, "msgs");
	sp.c[4].elem_type = DOCRAFT__COLUMN_TYPE__MAP; /* set<map> */
	CHECK_EQ_INT(create_table(&sp, 8, 3, &r), DOCRAFT_EINVAL);
	res_free(&r);
	msgs_schema(&sp, "msgs");
	sp.s.default_ttl_ms = -5;
	CHECK_EQ_INT(create_table(&sp, 8, 3, &r), DOCRAFT_EINVAL);
	res_free(&r);
	CHECK(get_table_at(NULL, "msgs", &status, NULL) == NULL);
	CHECK_EQ_INT(status, DOCRAFT_ETABLENOTFOUND);
	CHECK_EQ_INT(drop_table("msgs", msg), DOCRAFT_ETABLENOTFOUND);
	CHECK_MSG(strstr(msg, "msgs"), "%s", msg);
	CHECK_EQ_INT(list_tables(names, 8), 0);
	for (int k = 0; k < NF; k++)
		CHECK_EQ_INT(C.f[k].ncreates, 0);

	/* CreateTable: 8 tablets, RF 3. */
	CHECK_EQ_INT(create_msgs("msgs", 8, 3, msg), 0);
	t = get_table("msgs");
	check_layout(t, 8, 3, "msgs");
	check_creates(t, 0);
	CHECK_EQ_INT(create_msgs("msgs", 4, 1, msg), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(msg, "already exists"), "%s", msg);
	CHECK_EQ_INT(list_tables(names, 8), 1);
	CHECK_EQ_STR(names[0], "msgs");

	/* Two creates (then two drops) of one name at once: one wins, the
	 * other is told the name is busy or taken (or already gone). */
	concurrent_create_drop();

	/* Leaders from reports; a deposed leader of an older term loses. */
	set_leaders(t);
	wait_leaders("msgs");
	ls = list_tservers();
	for (int i = 0; i < NF; i++) {
		const Docraft__TServerInfo *ts = ts_info(ls, i);
		CHECK(ts != NULL && ts->live);
		CHECK_EQ_INT(ts->tablets, 8);
		CHECK_EQ_INT(ts->leaders, i < 2 ? 3 : 2);
		CHECK(ts->last_heartbeat_ms_ago < TIMEOUT_MS);
		CHECK_EQ_STR(ts->placement, C.f[i].placement);
	}
	docraft__list_tservers_response__free_unpacked(ls, NULL);
	bad_placement();

	/* Restart: the catalog is intact; leaders are learned again. */
	layout(t, &before);
	master_stop(0);
	master_start(0);
	t2 = get_table("msgs");
	layout(t2, &after);
	CHECK_EQ_STR((const char *)after.data, (const char *)before.data);
	docraft__get_table_response__free_unpacked(t2, NULL);
	wait_leaders("msgs");
	CHECK_EQ_INT(list_tables(names, 8), 1);
	/* The fakes listed every replica they were asked to create. */
	for (int k = 0; k < NF; k++)
		CHECK_EQ_INT(C.f[k].create_instructions, 0);

	/* DropTable: heartbeat replies tell every replica to go. */
	CHECK_EQ_INT(drop_table("msgs", msg), 0);
	CHECK(get_table_at(NULL, "msgs", &status, NULL) == NULL);
	CHECK_EQ_INT(status, DOCRAFT_ETABLENOTFOUND);
	CHECK_MSG(run_until(all_deleted, t, WAIT_MS), "delete instructions missing");
	for (int k = 0; k < NF; k++) {
		CHECK_EQ_INT(C.f[k].ndeletes, 8);
		CHECK_EQ_INT(C.f[k].ntabs, 0);
	}
	CHECK_EQ_INT(drop_table("msgs", msg), DOCRAFT_ETABLENOTFOUND);
	CHECK_EQ_INT(list_tables(names, 8), 0);
	/* Once no tserver lists them, the dropped tablets are purged from the
	 * catalog: a tserver that lists one again (say, a stale copy) is then
	 * left alone, as for any tablet the catalog does not know. */
	for (uint64_t end = proc_now_ms() + WAIT_MS;;) {
		C.f[0].ndeletes = 0;
		for (size_t i = 0; i < t->n_tablets; i++)
			ftab_add(&C.f[0], t->tablets[i]->tablet_id, 1);
		run_for(4 * HB_MS);
		if (C.f[0].ndeletes == 0)
			break;
		CHECK_MSG(proc_now_ms() < end, "dropped tablets never purged");
	}
	CHECK_EQ_INT(C.f[0].ntabs, 8);
	C.f[0].ntabs = 0;

	/* The name again: new tablet ids. */
	for (int k = 0; k < NF; k++)
		C.f[k].ncreates = 0;
	CHECK_EQ_INT(create_msgs("msgs", 3, 3, msg), 0);
	t2 = get_table("msgs");
	check_layout(t2, 3, 3, "msgs");
	check_creates(t2, 0);
	for (size_t i = 0; i < t2->n_tablets; i++)
		for (size_t j = 0; j < t->n_tablets; j++)
			CHECK(strcmp(t2->tablets[i]->tablet_id, t->tablets[j]->tablet_id) != 0);
	docraft__get_table_response__free_unpacked(t2, NULL);
	docraft__get_table_response__free_unpacked(t, NULL);

	/* A silent tserver is not live after the timeout, and gets no replicas. */
	C.f[2].hb_on = false;
	wait_live(2, false);
	wait_live(0, true);
	wait_live(1, true);
	unavailable_expected = true;
	CHECK_EQ_INT(create_msgs("more", 4, 3, msg), DOCRAFT_EUNAVAILABLE);
	unavailable_expected = false;
	CHECK_MSG(strstr(msg, "2 live"), "%s", msg);
	CHECK_EQ_INT(create_msgs("more", 4, 1, msg), 0);
	t = get_table("more");
	for (size_t i = 0; i < t->n_tablets; i++) {
		CHECK_EQ_INT(t->tablets[i]->n_replicas, 1);
		CHECK(fake_of_uuid(t->tablets[i]->replicas[0]->tserver_uuid) != 2);
	}
	docraft__get_table_response__free_unpacked(t, NULL);
	ls = list_tservers();
	CHECK_EQ_INT(ts_info(ls, 0)->tablets, 3 + 2);
	CHECK_EQ_INT(ts_info(ls, 1)->tablets, 3 + 2);
	CHECK_EQ_INT(ts_info(ls, 2)->tablets, 3);
	CHECK(!ts_info(ls, 2)->live);
	docraft__list_tservers_response__free_unpacked(ls, NULL);
	CHECK_EQ_INT(list_tables(names, 8), 2);
	CHECK_EQ_STR(names[0], "more");
	CHECK_EQ_STR(names[1], "msgs");

	buf_free(&before);
	buf_free(&after);
	teardown();
}

/* The slot that answers ListTables; -1 if none within WAIT_MS. */
static int find_leader(void)
{
	uint64_t end = proc_now_ms() + WAIT_MS;
	Docraft__ListTablesRequest req = DOCRAFT__LIST_TABLES_REQUEST__INIT;
	for (;;) {
		for (int k = 0; k < C.nm; k++) {
			struct res r;
			if (!C.m[k].up)
				continue;
			int status;
			call(C.m[k].addr, DOCRAFT__METHOD__MASTER_LIST_TABLES, &req.base, &r);
			status = r.status;
			res_free(&r);
			if (status == 0)
				return k;
		}
		if (proc_now_ms() >= end)
			return -1;
		run_for(100);
	}
}

/* The master's table of methods: at a follower every MASTER_* method
 * answers NOT_LEADER naming the leader before its request is read (one
 * that does not decode too); at the leader a request that does not decode
 * answers INVALID "malformed <message>", and ListTables and ListTServers
 * read no request. */
static void check_methods(int leader)
{
	static const uint8_t junk[] = {0xff}; /* a tag cut short: decodes as nothing */
	static const struct {
		uint16_t method;
		const char *request; /* NULL: not read */
	} methods[] = {
		{DOCRAFT__METHOD__MASTER_CREATE_TABLE, "CreateTableRequest"},
		{DOCRAFT__METHOD__MASTER_DROP_TABLE, "DropTableRequest"},
		{DOCRAFT__METHOD__MASTER_LIST_TABLES, NULL},
		{DOCRAFT__METHOD__MASTER_GET_TABLE, "GetTableRequest"},
		{DOCRAFT__METHOD__MASTER_LIST_TSERVERS, NULL},
		{DOCRAFT__METHOD__MASTER_HEARTBEAT, "HeartbeatRequest"},
	};

	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		char want[64];
		struct res r;
		call_raw(C.m[(leader + 1) % NM].addr, methods[i].method, junk, sizeof junk, &r);
		CHECK_EQ_INT(r.status, DOCRAFT_ENOTLEADER);
		CHECK_EQ_STR(r.leader, C.m[leader].addr);
		res_free(&r);
		call_raw(C.m[leader].addr, methods[i].method, junk, sizeof junk, &r);
		if (methods[i].request == NULL) {
			CHECK_MSG(r.status == 0, "method %u: %s", methods[i].method, r.message);
		} else {
			snprintf(want, sizeof want, "malformed %s", methods[i].request);
			CHECK_EQ_INT(r.status, DOCRAFT_EINVAL);
			CHECK_MSG(strstr(r.message, want) != NULL, "method %u: '%s'",
				  methods[i].method, r.message);
		}
		res_free(&r);
	}
}

/* Waits until master k answers NOT_LEADER naming leader's address. */
static void wait_hint(int k, int leader)
{
	uint64_t end = proc_now_ms() + WAIT_MS;
	Docraft__ListTablesRequest req = DOCRAFT__LIST_TABLES_REQUEST__INIT;
	for (;;) {
		struct res r;
		bool ok;
		call(C.m[k].addr, DOCRAFT__METHOD__MASTER_LIST_TABLES, &req.base, &r);
		ok = r.status == DOCRAFT_ENOTLEADER && strcmp(r.leader, C.m[leader].addr) == 0;
		CHECK_MSG(r.status != 0, "master %d answered as a leader too", k + 1);
		res_free(&r);
		if (ok)
			return;
		CHECK_MSG(proc_now_ms() < end, "master %d never named master %d as leader", k + 1,
			  leader + 1);
		run_for(100);
	}
}

TEST(three_masters)
{
	Docraft__GetTableResponse *t;
	struct buf before = BUF_INIT, after = BUF_INIT;
	char msg[DOCRAFT_ERRMSG_SIZE];
	char leader_addr[64];
	char names[8][64];
	int leader, leader2, status;

	setup("master3", 3);
	for (int k = 0; k < NM; k++)
		master_start(k);
	leader = find_leader();
	CHECK_MSG(leader >= 0, "no master leader");
	for (int k = 0; k < NM; k++)
		if (k != leader)
			wait_hint(k, leader);
	/* GetTable at a follower: NOT_LEADER with the leader's address. */
	t = get_table_at(C.m[(leader + 1) % NM].addr, "x", &status, leader_addr);
	CHECK(t == NULL);
	CHECK_EQ_INT(status, DOCRAFT_ENOTLEADER);
	CHECK_EQ_STR(leader_addr, C.m[leader].addr);
	check_methods(leader);

	C.hint = leader;
	start_heartbeats();
	for (int i = 0; i < NF; i++)
		wait_live(i, true);
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA1, 7}, msg), 0);
	t = get_table("msgs");
	check_layout(t, 4, 3, "msgs");
	check_creates(t, 0);
	layout(t, &before);
	docraft__get_table_response__free_unpacked(t, NULL);
	/* Its answer lost: the retry (same id) gets the first result; another
	 * request for the name gets "already exists". */
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA1, 7}, msg), 0);
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA1, 8}, msg), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(msg, "already exists") != NULL, "%s", msg);
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA2, 7}, msg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(create_msgs("msgs", 4, 3, msg), DOCRAFT_EINVAL);
	/* A drop may not reuse the id of a create. */
	CHECK_EQ_INT(drop_table_id("msgs", (struct ddl_id){0xA1, 7}, msg), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(msg, "was a create") != NULL, "%s", msg);

	/* kill -9 the leader: another master leads, with the catalog. */
	master_kill(leader);
	leader2 = find_leader();
	CHECK_MSG(leader2 >= 0 && leader2 != leader, "no new leader (%d)", leader2);
	C.hint = leader2;
	t = get_table("msgs");
	layout(t, &after);
	CHECK_EQ_STR((const char *)after.data, (const char *)before.data);
	docraft__get_table_response__free_unpacked(t, NULL);
	/* The request id is in the replicated catalog: the new leader answers
	 * the retry with the first result too. */
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA1, 7}, msg), 0);
	CHECK_EQ_INT(create_msgs_id("msgs", 4, 3, (struct ddl_id){0xA1, 9}, msg), DOCRAFT_EINVAL);
	for (int k = 0; k < NM; k++)
		if (k != leader && k != leader2)
			wait_hint(k, leader2);
	/* The fakes found the new leader; it places new tables. */
	for (int i = 0; i < NF; i++)
		wait_live(i, true);
	set_leaders(t = get_table("msgs"));
	docraft__get_table_response__free_unpacked(t, NULL);
	wait_leaders("msgs");
	CHECK_EQ_INT(create_msgs("second", 2, 1, msg), 0);
	CHECK_EQ_INT(list_tables(names, 8), 2);
	/* A dropped table: the retried drop gets the first result (OK), a
	 * new drop "not found". */
	CHECK_EQ_INT(create_msgs_id("third", 1, 1, (struct ddl_id){0xA3, 1}, msg), 0);
	CHECK_EQ_INT(drop_table_id("third", (struct ddl_id){0xA3, 2}, msg), 0);
	CHECK_EQ_INT(drop_table_id("third", (struct ddl_id){0xA3, 2}, msg), 0);
	CHECK_EQ_INT(drop_table_id("third", (struct ddl_id){0xA3, 3}, msg),
		     DOCRAFT_ETABLENOTFOUND);
	CHECK_EQ_INT(list_tables(names, 8), 2);

	/* The killed master comes back and follows (whoever leads by then). */
	master_start(leader);
	leader2 = find_leader();
	CHECK(leader2 >= 0);
	for (int k = 0; k < NM; k++)
		if (k != leader2)
			wait_hint(k, leader2);
	C.hint = leader2;
	CHECK_EQ_INT(list_tables(names, 8), 2);

	buf_free(&before);
	buf_free(&after);
	teardown();
}

/* Tablets each fake leads as ListTServers reports them. */
static void leaders_listed(uint32_t leaders[NF])
{
	Docraft__ListTServersResponse *l = list_tservers();
	for (int i = 0; i < NF; i++) {
		const Docraft__TServerInfo *ts = ts_info(l, i);
		leaders[i] = ts != NULL ? ts->leaders : 0;
	}
	docraft__list_tservers_response__free_unpacked(l, NULL);
}

static bool listed_as(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t n[NF];
	leaders_listed(n);
	return n[0] == a && n[1] == b && n[2] == c;
}

static size_t step_downs(void)
{
	size_t n = 0;
	for (int i = 0; i < NF; i++)
		n += C.f[i].step_downs;
	return n;
}

TEST(leader_balance)
{
	Docraft__GetTableResponse *t;
	char msg[DOCRAFT_ERRMSG_SIZE];
	uint64_t end;
	uint32_t n[NF];

	setup("masterlb", 1);
	C.master_flags[0] = "--leader-balance";
	C.master_flags[1] = "off";
	master_start(0);
	start_heartbeats();
	for (int i = 0; i < NF; i++)
		wait_live(i, true);
	CHECK_EQ_INT(create_msgs("lb", 6, 3, msg), 0);
	t = get_table("lb");
	for (size_t i = 0; i < t->n_tablets; i++)
		for (int k = 0; k < NF; k++) {
			struct ftab *ft = ftab_find(&C.f[k], t->tablets[i]->tablet_id);
			CHECK(ft != NULL);
			ft->term = 2;
			snprintf(ft->role, sizeof ft->role, "%s", k == 0 ? "leader" : "follower");
		}
	docraft__get_table_response__free_unpacked(t, NULL);

	/* Off: the master sees 6/0/0 and leaves it. */
	for (end = proc_now_ms() + WAIT_MS; !listed_as(6, 0, 0);) {
		CHECK_MSG(proc_now_ms() < end, "the master never saw fake 0 lead 6 tablets");
		run_for(100);
	}
	run_for(3000);
	CHECK_EQ_INT(step_downs(), 0);
	CHECK(listed_as(6, 0, 0));

	/* On (the default): 4 moves, one reply at a time, to 2/2/2. */
	master_stop(0);
	C.master_flags[0] = C.master_flags[1] = NULL;
	master_start(0);
	for (end = proc_now_ms() + WAIT_MS; !listed_as(2, 2, 2);) {
		leaders_listed(n);
		CHECK_MSG(proc_now_ms() < end, "leaders never balanced: %u/%u/%u after %zu "
			  "step-downs", n[0], n[1], n[2], step_downs());
		run_for(100);
	}
	test_note("balanced after %zu step-downs", step_downs());
	run_for(2000);
	CHECK(listed_as(2, 2, 2));
	CHECK_EQ_INT(step_downs(), 4);
	CHECK_EQ_INT(C.f[0].step_downs, 4);
	for (int i = 0; i < NF; i++)
		CHECK(C.f[i].max_step_downs <= 1);
	teardown();
}

TEST_MAIN(T(single_master), T(three_masters), T(leader_balance))
