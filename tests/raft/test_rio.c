/* rio forwarding: a stub inner io (every method, error messages, callbacks
 * reaching raft with the outer io), a 3-server raft_fixture cluster with every
 * server wrapped, and one real raft_uv instance (TCP on 127.0.0.1, temp dir)
 * with a v3 FSM whose snapshot_async runs, which raft_uv 0.15 alone refuses. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <raft.h>
#include <raft/fixture.h>
#include <raft/uv.h>
#include <uv.h>

#include "raft/rio.h"
#include "test.h"

/* ---- stub inner io ---- */

enum {
	M_INIT, M_CLOSE, M_LOAD, M_START, M_BOOTSTRAP, M_RECOVER, M_SET_TERM, M_SET_VOTE,
	M_SEND, M_APPEND, M_TRUNCATE, M_SNAPSHOT_PUT, M_SNAPSHOT_GET, M_TIME, M_RANDOM,
	M_ASYNC_WORK, M_COUNT
};

struct stub {
	struct raft_io io;
	unsigned calls[M_COUNT];
	bool fail;                    /* next call fails with RAFT_IOERR */
	raft_io_tick_cb tick;
	raft_io_recv_cb recv;
	struct raft_io_append *append_req;
	raft_io_append_cb append_cb;
};

static struct stub *stub_of(struct raft_io *io)
{
	struct stub *s = io->impl;
	CHECK(io == &s->io); /* rio forwards the inner pointer */
	return s;
}

static int stub_ret(struct stub *s, unsigned m, const char *name)
{
	s->calls[m]++;
	if (!s->fail)
		return 0;
	s->fail = false;
	snprintf(s->io.errmsg, sizeof s->io.errmsg, "stub: %s failed", name);
	return RAFT_IOERR;
}

static int stub_init(struct raft_io *io, raft_id id, const char *address)
{
	(void)id;
	(void)address;
	return stub_ret(stub_of(io), M_INIT, "init");
}

static void stub_close(struct raft_io *io, raft_io_close_cb cb)
{
	stub_of(io)->calls[M_CLOSE]++;
	cb(io);
}

static int stub_load(struct raft_io *io, raft_term *term, raft_id *voted_for,
		     struct raft_snapshot **snapshot, raft_index *start_index,
		     struct raft_entry *entries[], size_t *n_entries)
{
	*term = 7;
	*voted_for = 0;
	*snapshot = NULL;
	*start_index = 1;
	*entries = NULL;
	*n_entries = 0;
	return stub_ret(stub_of(io), M_LOAD, "load");
}

static int stub_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
		      raft_io_recv_cb recv)
{
	struct stub *s = stub_of(io);
	(void)msecs;
	s->tick = tick;
	s->recv = recv;
	return stub_ret(s, M_START, "start");
}

static int stub_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	(void)conf;
	return stub_ret(stub_of(io), M_BOOTSTRAP, "bootstrap");
}

static int stub_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	(void)conf;
	return stub_ret(stub_of(io), M_RECOVER, "recover");
}

static int stub_set_term(struct raft_io *io, raft_term term)
{
	(void)term;
	return stub_ret(stub_of(io), M_SET_TERM, "set_term");
}

static int stub_set_vote(struct raft_io *io, raft_id id)
{
	(void)id;
	return stub_ret(stub_of(io), M_SET_VOTE, "set_vote");
}

static int stub_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *m,
		     raft_io_send_cb cb)
{
	(void)req;
	(void)m;
	(void)cb;
	return stub_ret(stub_of(io), M_SEND, "send");
}

static int stub_append(struct raft_io *io, struct raft_io_append *req,
		       const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct stub *s = stub_of(io);
	(void)entries;
	(void)n;
	s->append_req = req;
	s->append_cb = cb;
	return stub_ret(s, M_APPEND, "append");
}

static int stub_truncate(struct raft_io *io, raft_index index)
{
	(void)index;
	return stub_ret(stub_of(io), M_TRUNCATE, "truncate");
}

static int stub_snapshot_put(struct raft_io *io, unsigned trailing,
			     struct raft_io_snapshot_put *req, const struct raft_snapshot *snapshot,
			     raft_io_snapshot_put_cb cb)
{
	(void)trailing;
	(void)req;
	(void)snapshot;
	(void)cb;
	return stub_ret(stub_of(io), M_SNAPSHOT_PUT, "snapshot_put");
}

static int stub_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			     raft_io_snapshot_get_cb cb)
{
	(void)req;
	(void)cb;
	return stub_ret(stub_of(io), M_SNAPSHOT_GET, "snapshot_get");
}

static raft_time stub_time(struct raft_io *io)
{
	stub_of(io)->calls[M_TIME]++;
	return 4242;
}

static int stub_random(struct raft_io *io, int min, int max)
{
	stub_of(io)->calls[M_RANDOM]++;
	return min + max;
}

static int stub_async_work(struct raft_io *io, struct raft_io_async_work *req,
			   raft_io_async_work_cb cb)
{
	(void)req;
	(void)cb;
	return stub_ret(stub_of(io), M_ASYNC_WORK, "async_work");
}

static void stub_setup(struct stub *s, bool with_async_work)
{
	memset(s, 0, sizeof *s);
	s->io.version = 1; /* what raft_uv 0.15 says */
	s->io.impl = s;
	s->io.init = stub_init;
	s->io.close = stub_close;
	s->io.load = stub_load;
	s->io.start = stub_start;
	s->io.bootstrap = stub_bootstrap;
	s->io.recover = stub_recover;
	s->io.set_term = stub_set_term;
	s->io.set_vote = stub_set_vote;
	s->io.send = stub_send;
	s->io.append = stub_append;
	s->io.truncate = stub_truncate;
	s->io.snapshot_put = stub_snapshot_put;
	s->io.snapshot_get = stub_snapshot_get;
	s->io.time = stub_time;
	s->io.random = stub_random;
	s->io.async_work = with_async_work ? stub_async_work : NULL;
}

/* What "raft" saw through the outer io. */
static struct raft_io *seen_io;
static struct raft_message *seen_msg;
static unsigned seen_ticks, seen_recvs, seen_closes, seen_appends;
static int seen_status;

static void up_tick(struct raft_io *io)
{
	seen_io = io;
	seen_ticks++;
}

static void up_recv(struct raft_io *io, struct raft_message *m)
{
	seen_io = io;
	seen_msg = m;
	seen_recvs++;
}

static void up_close(struct raft_io *io)
{
	seen_io = io;
	seen_closes++;
}

static void up_append(struct raft_io_append *req, int status)
{
	seen_status = status;
	seen_appends++;
	CHECK(req->data == &seen_appends);
}

/* Every method reaches the inner io with the inner pointer; a failed call's
 * message shows up in the outer errmsg; tick/recv/close come back with the
 * outer io; an asynchronous append failure carries the inner message too. */
TEST(stub_forwards_every_method)
{
	static struct stub s;
	static struct rio g;
	struct raft_io *o = &g.io;
	struct raft_configuration conf;
	struct raft_message m;
	struct raft_io_append req;
	struct raft_entry entry;
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap;
	raft_index start;
	struct raft_entry *entries;
	size_t n;

	stub_setup(&s, true);
	CHECK_OK(rio_wrap(&g, &s.io));
	CHECK_EQ_INT(o->version, 2);
	CHECK(o->async_work != NULL);
	CHECK(s.io.data == &g);
	CHECK(o->impl == s.io.impl);
	CHECK(o->data == NULL);
	raft_configuration_init(&conf);

	CHECK_OK(o->init(o, 1, "1"));
	CHECK_OK(o->load(o, &term, &vote, &snap, &start, &entries, &n));
	CHECK_EQ_U64(term, 7);
	CHECK_OK(o->bootstrap(o, &conf));
	CHECK_OK(o->recover(o, &conf));
	CHECK_OK(o->set_term(o, 3));
	CHECK_OK(o->set_vote(o, 2));
	memset(&m, 0, sizeof m);
	m.server_id = 2;
	m.server_address = "2";
	CHECK_OK(o->send(o, NULL, &m, NULL));
	CHECK_OK(o->truncate(o, 5));
	CHECK_OK(o->snapshot_put(o, 0, NULL, NULL, NULL));
	CHECK_OK(o->snapshot_get(o, NULL, NULL));
	CHECK_OK(o->async_work(o, NULL, NULL));
	CHECK_EQ_U64(o->time(o), 4242);
	CHECK_EQ_INT(o->random(o, 10, 20), 30);
	CHECK_OK(o->start(o, 100, up_tick, up_recv));
	for (unsigned k = 0; k < M_COUNT; k++)
		if (k != M_CLOSE && k != M_APPEND)
			CHECK_EQ_INT(s.calls[k], 1);

	/* Synchronous failures: the inner message is copied out. */
	s.fail = true;
	CHECK_EQ_INT(o->set_term(o, 4), RAFT_IOERR);
	CHECK_EQ_STR(o->errmsg, "stub: set_term failed");
	s.fail = true;
	CHECK_EQ_INT(o->send(o, NULL, &m, NULL), RAFT_IOERR);
	CHECK_EQ_STR(o->errmsg, "stub: send failed");

	/* Callbacks that carry an io come back with the outer one. */
	s.tick(&s.io);
	CHECK(seen_io == o);
	CHECK_EQ_INT(seen_ticks, 1);
	memset(&m, 0, sizeof m);
	m.type = RAFT_IO_APPEND_ENTRIES_RESULT; /* no raft attached: passes */
	s.recv(&s.io, &m);
	CHECK(seen_io == o && seen_msg == &m);
	CHECK_EQ_INT(seen_recvs, 1);

	/* Append: raft's request and callback, through a wrapper. */
	memset(&entry, 0, sizeof entry);
	req.data = &seen_appends;
	CHECK_OK(o->append(o, &req, &entry, 1, up_append));
	CHECK(s.append_req != &req);
	snprintf(s.io.errmsg, sizeof s.io.errmsg, "stub: disk full");
	s.append_cb(s.append_req, RAFT_NOSPACE);
	CHECK_EQ_INT(seen_appends, 1);
	CHECK_EQ_INT(seen_status, RAFT_NOSPACE);
	CHECK_EQ_STR(o->errmsg, "stub: disk full");
	CHECK_OK(o->append(o, &req, &entry, 1, up_append));
	s.append_cb(s.append_req, 0);
	CHECK_EQ_INT(seen_appends, 2);
	CHECK_EQ_INT(seen_status, 0);
	s.fail = true; /* failed call: no callback, wrapper freed (ASan) */
	CHECK_EQ_INT(o->append(o, &req, &entry, 1, up_append), RAFT_IOERR);
	CHECK_EQ_STR(o->errmsg, "stub: append failed");
	CHECK_EQ_INT(seen_appends, 2);

	o->close(o, up_close);
	CHECK(seen_io == o);
	CHECK_EQ_INT(seen_closes, 1);
	raft_configuration_close(&conf);
}

TEST(stub_version_and_validation)
{
	static struct stub s;
	static struct rio g;

	stub_setup(&s, false);
	CHECK_OK(rio_wrap(&g, &s.io));
	CHECK_EQ_INT(g.io.version, 1); /* no async_work to forward */
	CHECK(g.io.async_work == NULL);

	stub_setup(&s, true);
	s.io.send = NULL;
	CHECK_EQ_INT(rio_wrap(&g, &s.io), RAFT_INVALID);
}

/* ---- 3-server fixture, all wrapped ---- */

struct counter_fsm {
	struct raft *r;
	unsigned n;
	uint64_t sum;
	raft_index last;
};

static int counter_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct counter_fsm *c = fsm->data;
	uint64_t v;
	raft_index idx = raft_last_applied(c->r) + 1;

	CHECK(buf->len == sizeof v);
	CHECK(idx > c->last);
	memcpy(&v, buf->base, sizeof v);
	c->n++;
	c->sum += v;
	c->last = idx;
	*result = NULL;
	return 0;
}

static int counter_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	(void)fsm;
	(void)bufs;
	(void)n;
	return RAFT_BUSY;
}

static int counter_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	(void)fsm;
	raft_free(buf->base);
	return 0;
}

struct done {
	bool done;
	int status;
};

static void done_barrier_cb(struct raft_barrier *req, int status)
{
	struct done *d = req->data;
	d->done = true;
	d->status = status;
}

static void done_apply_cb(struct raft_apply *req, int status, void *result)
{
	struct done *d = req->data;
	(void)result;
	d->done = true;
	d->status = status;
}

/* Three counter servers on raft_fixture, each wrapped by a rio,
 * bootstrapped, not started (timeouts may be set first). Static storage:
 * the fixture keeps pointers into it. */
#define RIG_N 3
struct rig {
	struct raft_fixture f;
	struct raft_fsm fsms[RIG_N];
	struct counter_fsm cs[RIG_N];
	struct rio rios[RIG_N];
};

static void rig_up(struct rig *g)
{
	struct raft_configuration conf;

	memset(g, 0, sizeof *g);
	CHECK_OK(raft_fixture_initialize(&g->f));
	for (unsigned i = 0; i < RIG_N; i++) {
		g->fsms[i].version = 1;
		g->fsms[i].data = &g->cs[i];
		g->fsms[i].apply = counter_apply;
		g->fsms[i].snapshot = counter_snapshot;
		g->fsms[i].restore = counter_restore;
		CHECK_OK(raft_fixture_grow(&g->f, &g->fsms[i]));
		g->cs[i].r = raft_fixture_get(&g->f, i);
		CHECK_OK(rio_wrap_fixture(&g->rios[i], g->cs[i].r));
		CHECK(g->cs[i].r->io == &g->rios[i].io);
	}
	CHECK_OK(raft_fixture_configuration(&g->f, RIG_N, &conf));
	CHECK_OK(raft_fixture_bootstrap(&g->f, &conf));
	raft_configuration_close(&conf);
}

static bool any_leader(struct raft_fixture *f, void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < raft_fixture_n(f); i++)
		if (raft_state(raft_fixture_get(f, i)) == RAFT_LEADER)
			return true;
	return false;
}

/* Starts the rig and steps until a leader exists: its index. */
static unsigned rig_start_leader(struct rig *g)
{
	unsigned l = RIG_N;
	CHECK_OK(raft_fixture_start(&g->f));
	CHECK(raft_fixture_step_until(&g->f, any_leader, NULL, 5000));
	for (unsigned i = 0; i < RIG_N; i++)
		if (raft_state(g->cs[i].r) == RAFT_LEADER)
			l = i;
	CHECK(l < RIG_N);
	return l;
}

TEST(fixture_cluster_applies_through_rio)
{
	enum { NREQ = 100 };
	static struct rig g;
	static struct raft_apply reqs[NREQ];
	static struct done dones[NREQ];
	struct raft_barrier barrier;
	struct done bdone = {false, -1};
	struct raft *r;
	unsigned l;
	uint64_t want_sum = 0;

	rig_up(&g);
	l = rig_start_leader(&g);
	r = g.cs[l].r;
	barrier.data = &bdone;
	CHECK_OK(rio_on_leader(&g.rios[l], r, &barrier, done_barrier_cb));
	CHECK_EQ_U64(rio_term_first_index(&g.rios[l]), barrier.index);
	CHECK(raft_fixture_step_until_has_leader(&g.f, 2000));
	CHECK_EQ_INT(raft_fixture_leader_index(&g.f), l);

	for (unsigned k = 0; k < NREQ; k++) {
		struct raft_buffer buf;
		uint64_t v = 1000 + k;

		buf.len = sizeof v;
		buf.base = raft_malloc(buf.len);
		CHECK(buf.base != NULL);
		memcpy(buf.base, &v, sizeof v);
		reqs[k].data = &dones[k];
		dones[k].done = false;
		CHECK_OK(raft_apply(r, &reqs[k], &buf, 1, done_apply_cb));
		want_sum += v;
	}
	CHECK(raft_fixture_step_until_applied(&g.f, RIG_N, reqs[NREQ - 1].index, 5000));
	CHECK(bdone.done);
	CHECK_EQ_INT(bdone.status, 0);
	for (unsigned k = 0; k < NREQ; k++)
		CHECK(dones[k].done && dones[k].status == 0);
	for (unsigned i = 0; i < RIG_N; i++) {
		CHECK_EQ_INT(g.cs[i].n, NREQ);
		CHECK_EQ_U64(g.cs[i].sum, want_sum);
		CHECK_EQ_U64(g.cs[i].last, reqs[NREQ - 1].index);
	}
	/* The fixture reaches its backend through r->io->impl here. */
	CHECK(raft_fixture_step_until_delivered(&g.f, l, (l + 1) % RIG_N, 1000));
	CHECK_EQ_U64(g.rios[l].n_dropped, 0);
	raft_fixture_close(&g.f);
}

/* A replica that restarted does not vote for election_ms (the leader lease,
 * tablet.h): with S2 and S3 quiet for 3 s, S1 (timeout 1 s) gets no vote,
 * pre-vote or vote, before 3 s of fixture time, then wins. */
TEST(vote_quiet_delays_votes)
{
	static struct rig g;

	rig_up(&g);
	raft_fixture_set_randomized_election_timeout(&g.f, 0, 1000);
	raft_fixture_set_randomized_election_timeout(&g.f, 1, 8000);
	raft_fixture_set_randomized_election_timeout(&g.f, 2, 8000);
	CHECK_OK(raft_fixture_start(&g.f));
	rio_set_vote_quiet(&g.rios[1], 3000);
	rio_set_vote_quiet(&g.rios[2], 3000);

	CHECK(raft_fixture_step_until(&g.f, any_leader, NULL, 10000));
	CHECK(raft_fixture_time(&g.f) >= 3000);
	CHECK(raft_fixture_time(&g.f) < 8000);
	CHECK_EQ_INT(raft_state(g.cs[0].r), RAFT_LEADER);
	CHECK(g.rios[1].n_votes_dropped > 0 && g.rios[2].n_votes_dropped > 0);
	raft_fixture_close(&g.f);
}

static void bogus_send_cb(struct raft_io_send *req, int status)
{
	(void)req;
	(void)status;
	CHECK_MSG(false, "a refused send must not call back");
}

/* C-Raft 0.15 answers a completed InstallSnapshot from whatever state the
 * node is in by then, to the leader id/address read from follower_state;
 * on a candidate that union holds the votes pointer and in_pre_vote (the
 * address 0x100, a segfault in raft_uv's strlen). rio refuses exactly that
 * send; a candidate's reply to a real sender passes. */
/* An AppendEntries result addressed as 0.15's sendAppendEntriesResult does:
 * to follower_state.current_leader, whatever the state. */
static void result_to_leader(struct raft *r, struct raft_message *m)
{
	memset(m, 0, sizeof *m);
	m->type = RAFT_IO_APPEND_ENTRIES_RESULT;
	m->server_id = r->follower_state.current_leader.id;
	m->server_address = r->follower_state.current_leader.address;
	m->append_entries_result.term = r->current_term;
}

TEST(bogus_snapshot_result_refused)
{
	static struct rig g;
	struct raft_message m;
	struct raft_io_send req;
	struct raft *r;

	rig_up(&g);
	raft_fixture_set_randomized_election_timeout(&g.f, 0, 1000);
	raft_fixture_set_randomized_election_timeout(&g.f, 1, 8000);
	raft_fixture_set_randomized_election_timeout(&g.f, 2, 8000);
	CHECK_OK(raft_fixture_start(&g.f));
	CHECK(raft_fixture_step_until_state_is(&g.f, 0, RAFT_CANDIDATE, 5000));
	r = g.cs[0].r;

	result_to_leader(r, &m);
	CHECK_EQ_INT(r->io->send(r->io, &req, &m, bogus_send_cb), RAFT_NOCONNECTION);

	m.server_id = 2;
	m.server_address = "2";
	CHECK_OK(r->io->send(r->io, &req, &m, NULL));
	raft_fixture_close(&g.f);
}

/* canonical/raft#351: a follower whose append completes after its term
 * changed answers current_leader, {0, NULL} when it has not heard the new
 * term's leader; raft_uv's send then did strlen(NULL). rio drops a message
 * without a destination (RAFT_NOCONNECTION, no callback) and counts it. */
TEST(send_without_destination_refused)
{
	static struct rig g;
	struct raft_message m;
	struct raft_io_send req;
	struct raft *r;

	rig_up(&g);
	CHECK_OK(raft_fixture_start(&g.f));
	r = g.cs[0].r;
	CHECK_EQ_INT(raft_state(r), RAFT_FOLLOWER);
	CHECK(r->follower_state.current_leader.address == NULL);

	result_to_leader(r, &m);
	CHECK_EQ_INT(r->io->send(r->io, &req, &m, bogus_send_cb), RAFT_NOCONNECTION);
	CHECK_EQ_U64(g.rios[0].n_no_destination, 1);
	m.server_id = 2; /* an id without an address */
	CHECK_EQ_INT(r->io->send(r->io, &req, &m, bogus_send_cb), RAFT_NOCONNECTION);
	CHECK_EQ_U64(g.rios[0].n_no_destination, 2);

	m.server_address = "2";
	CHECK_OK(r->io->send(r->io, &req, &m, NULL));
	raft_fixture_close(&g.f);
}

static bool barrier_done(struct raft_fixture *f, void *arg)
{
	(void)f;
	return ((struct done *)arg)->done;
}

/* A follower acks the barrier before the leader's own (slow) write of it
 * completes: the ack is deferred, not dropped, and handed to raft when the
 * write completes, so the barrier commits then, not after the follower's
 * next answer to a heartbeat (>= 100 ms later). */
TEST(early_barrier_ack_deferred)
{
	static struct rig g;
	struct raft_barrier barrier;
	struct done bdone = {false, -1};
	raft_time t0, took;
	unsigned l;

	rig_up(&g);
	l = rig_start_leader(&g);
	/* Fast network and follower disks, a slow leader disk. */
	for (unsigned i = 0; i < RIG_N; i++) {
		raft_fixture_set_network_latency(&g.f, i, 2);
		raft_fixture_set_disk_latency(&g.f, i, i == l ? 40 : 2);
	}
	t0 = raft_fixture_time(&g.f);
	barrier.data = &bdone;
	CHECK_OK(rio_on_leader(&g.rios[l], g.cs[l].r, &barrier, done_barrier_cb));
	CHECK(raft_fixture_step_until(&g.f, barrier_done, &bdone, 2000));
	CHECK_EQ_INT(bdone.status, 0);
	took = raft_fixture_time(&g.f) - t0;
	test_note("barrier committed after %llu ms; acks deferred %llu, redelivered %llu",
		  (unsigned long long)took, (unsigned long long)g.rios[l].n_deferred,
		  (unsigned long long)g.rios[l].n_redelivered);
	CHECK(g.rios[l].n_deferred > 0);
	CHECK(g.rios[l].n_redelivered > 0);
	CHECK(took < 90);
	raft_fixture_close(&g.f);
}

/* ---- the message guard (rio.h) ---- */

/* The address of server id in r's configuration. */
static const char *addr_of(struct raft *r, raft_id id)
{
	for (unsigned i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == id)
			return r->configuration.servers[i].address;
	CHECK_MSG(false, "no server %llu", (unsigned long long)id);
	return NULL;
}

/* An AppendEntries with n entries of 8 bytes in one raft_malloc'd batch,
 * as raft_uv hands them over (ASan: a leak if the guard does not free it). */
static void mk_append(struct raft_message *m, raft_id from, const char *address,
		      raft_term term, unsigned n)
{
	memset(m, 0, sizeof *m);
	m->type = RAFT_IO_APPEND_ENTRIES;
	m->server_id = from;
	m->server_address = address;
	m->append_entries.term = term;
	m->append_entries.prev_log_index = 1;
	m->append_entries.prev_log_term = 1;
	m->append_entries.n_entries = n;
	if (n == 0)
		return;
	uint8_t *batch = raft_calloc(n, 8);
	m->append_entries.entries = raft_calloc(n, sizeof(struct raft_entry));
	CHECK(batch != NULL && m->append_entries.entries != NULL);
	for (unsigned i = 0; i < n; i++) {
		struct raft_entry *e = &m->append_entries.entries[i];
		e->term = term;
		e->type = RAFT_COMMAND;
		e->buf.base = batch + 8 * i;
		e->buf.len = 8;
		e->batch = batch;
	}
}

/* An InstallSnapshot with a one-server configuration and 8 bytes of data. */
static void mk_snapshot(struct raft_message *m, raft_id from, const char *address,
			raft_term term)
{
	memset(m, 0, sizeof *m);
	m->type = RAFT_IO_INSTALL_SNAPSHOT;
	m->server_id = from;
	m->server_address = address;
	m->install_snapshot.term = term;
	m->install_snapshot.last_index = 100;
	m->install_snapshot.last_term = term;
	m->install_snapshot.conf_index = 1;
	raft_configuration_init(&m->install_snapshot.conf);
	CHECK_OK(raft_configuration_add(&m->install_snapshot.conf, from, address, RAFT_VOTER));
	m->install_snapshot.data.len = 8;
	m->install_snapshot.data.base = raft_calloc(1, 8);
	CHECK(m->install_snapshot.data.base != NULL);
}

static void mk_vote(struct raft_message *m, raft_id from, const char *address, raft_term term)
{
	memset(m, 0, sizeof *m);
	m->type = RAFT_IO_REQUEST_VOTE;
	m->server_id = from;
	m->server_address = address;
	m->request_vote.term = term;
	m->request_vote.candidate_id = from;
	m->request_vote.last_log_index = 1000;
	m->request_vote.last_log_term = term;
	m->request_vote.disrupt_leader = true;
}

static bool leader_known_by_all(struct raft_fixture *f, void *arg)
{
	raft_id id = *(raft_id *)arg;
	for (unsigned i = 0; i < raft_fixture_n(f); i++) {
		struct raft *r = raft_fixture_get(f, i);
		if (r->id != id && (raft_state(r) != RAFT_FOLLOWER ||
				    r->follower_state.current_leader.id != id))
			return false;
	}
	return true;
}

/* The cast of a guard test: leader l, follower fi (and the third, oi). */
struct gcase {
	unsigned l, fi, oi;
	struct raft *r, *fr; /* leader's and follower's raft */
	struct rio *lg, *fg; /* ... and rio */
	raft_term term;      /* the leader's term */
};

/* A rig with a leader whose barrier is applied and followers that know it. */
static void guard_rig(struct rig *g, struct gcase *c)
{
	static struct raft_barrier barrier;
	static struct done bdone;
	raft_id id;

	rig_up(g);
	c->l = rig_start_leader(g);
	bdone.done = false;
	barrier.data = &bdone;
	CHECK_OK(rio_on_leader(&g->rios[c->l], g->cs[c->l].r, &barrier, done_barrier_cb));
	CHECK(raft_fixture_step_until(&g->f, barrier_done, &bdone, 2000));
	id = g->cs[c->l].r->id;
	CHECK(raft_fixture_step_until(&g->f, leader_known_by_all, &id, 2000));
	c->fi = (c->l + 1) % RIG_N;
	c->oi = (c->l + 2) % RIG_N;
	c->r = g->cs[c->l].r;
	c->fr = g->cs[c->fi].r;
	c->lg = &g->rios[c->l];
	c->fg = &g->rios[c->fi];
	c->term = c->r->current_term;
}

/* One AppendEntries at the leader's own term, claiming a member: the message
 * that crashes 0.15 with assertions off (raft treats leader_state as
 * follower_state). Dropped before raft; the batch is freed. A lower term
 * still reaches raft, which rejects it and stays leader. */
TEST(guard_drops_own_term)
{
	static struct rig g;
	struct raft_message m;
	struct gcase c;
	guard_rig(&g, &c);
	struct raft *r = c.r;
	raft_id f = c.fr->id;
	raft_term term = c.term;
	unsigned l = c.l;

	mk_append(&m, f, addr_of(r, f), term, 2);
	rio_deliver(&g.rios[l], &m);
	CHECK_EQ_U64(g.rios[l].n_guard[RIO_DROP_OWN_TERM], 1);
	mk_snapshot(&m, f, addr_of(r, f), term);
	rio_deliver(&g.rios[l], &m);
	CHECK_EQ_U64(g.rios[l].n_guard[RIO_DROP_OWN_TERM], 2);
	CHECK_EQ_INT(raft_state(r), RAFT_LEADER);
	CHECK_EQ_U64(r->current_term, term);

	mk_append(&m, f, addr_of(r, f), term - 1, 0);
	m.append_entries.prev_log_term = term - 1;
	rio_deliver(&g.rios[l], &m);
	CHECK_EQ_U64(g.rios[l].n_guard[RIO_DROP_OWN_TERM], 2);
	CHECK_EQ_INT(raft_state(r), RAFT_LEADER);
	CHECK_EQ_U64(r->current_term, term);
	CHECK(raft_fixture_step_until_has_leader(&g.f, 1000));
	raft_fixture_close(&g.f);
}

/* Senders outside the configuration (unknown id, or a member's id with
 * another address): a forged vote, leader, snapshot and result far ahead.
 * None reaches raft: no term moves, the leader stays. */
TEST(guard_drops_non_members)
{
	static struct rig g;
	struct raft_message m;
	struct gcase c;
	guard_rig(&g, &c);
	struct raft *r = c.r, *fr = c.fr;
	struct rio *fg = c.fg;
	raft_term term = c.term;
	unsigned l = c.l;

	mk_vote(&m, 9, "9", term + 1000);
	rio_deliver(fg, &m);
	mk_append(&m, 9, "9", term + 1000, 1);
	rio_deliver(fg, &m);
	mk_snapshot(&m, 9, "9", term + 1000);
	rio_deliver(fg, &m);
	mk_append(&m, r->id, "elsewhere", term + 1000, 1); /* a member's id, not its address */
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_NOT_MEMBER], 4);
	CHECK_EQ_U64(fr->current_term, term);
	CHECK_EQ_U64(fr->follower_state.current_leader.id, r->id);

	memset(&m, 0, sizeof m);
	m.type = RAFT_IO_APPEND_ENTRIES_RESULT;
	m.server_id = 9;
	m.server_address = "9";
	m.append_entries_result.term = term + 1000; /* raft steps down before the member check */
	rio_deliver(&g.rios[l], &m);
	m.type = RAFT_IO_REQUEST_VOTE_RESULT;
	m.request_vote_result.term = term + 1000;
	rio_deliver(&g.rios[l], &m);
	CHECK_EQ_U64(g.rios[l].n_guard[RIO_DROP_NOT_MEMBER], 2);
	CHECK_EQ_INT(raft_state(r), RAFT_LEADER);
	CHECK_EQ_U64(r->current_term, term);
	for (unsigned i = 0; i < RIG_N; i++)
		CHECK_EQ_U64(g.rios[i].n_guard[RIO_DROP_MALFORMED], 0);
	raft_fixture_close(&g.f);
}

/* A member claiming leadership of a term whose leader this follower already
 * follows: dropped, the follower keeps its leader. */
TEST(guard_drops_second_leader)
{
	static struct rig g;
	struct raft_message m;
	struct gcase c;
	guard_rig(&g, &c);
	raft_id other = g.cs[c.oi].r->id;

	CHECK_EQ_U64(c.fg->leader_term, c.fr->current_term);
	mk_append(&m, other, addr_of(c.fr, other), c.fr->current_term, 1);
	rio_deliver(c.fg, &m);
	CHECK_EQ_U64(c.fg->n_guard[RIO_DROP_OTHER_LEADER], 1);
	CHECK_EQ_U64(c.fr->follower_state.current_leader.id, c.r->id);
	raft_fixture_close(&g.f);
}

/* Content 0.15 mishandles, from a member at a lower term (raft would reach
 * its reply path and free entries[0].batch): entries without payload (the
 * batch pointer left uninitialised by raft_uv: here a poison value the guard
 * must not free), an entry past the payload, an entry term above the
 * message's, an undecodable configuration entry; a snapshot without data
 * (poison data pointer) or with an empty configuration; a vote for a third
 * server. */
TEST(guard_drops_malformed)
{
	static struct rig g;
	static uint8_t bad_conf[16] = {1, 5, 0, 0, 0, 0, 0, 0, 0, 7}; /* 5 servers in 7 bytes */
	struct raft_message m;
	struct gcase c;
	guard_rig(&g, &c);
	struct raft *r = c.r, *fr = c.fr;
	struct rio *fg = c.fg;
	raft_term t = c.term - 1;
	void *poison = (void *)(uintptr_t)0x1;
	unsigned n = 0;

	CHECK(t >= 1);
	mk_append(&m, r->id, addr_of(fr, r->id), t, 2);
	raft_free(m.append_entries.entries[0].batch);
	for (unsigned i = 0; i < 2; i++) {
		m.append_entries.entries[i].buf.len = 0;
		m.append_entries.entries[i].buf.base = NULL;
		m.append_entries.entries[i].batch = poison;
	}
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_append(&m, r->id, addr_of(fr, r->id), t, 2);
	m.append_entries.entries[0].buf.len = 5; /* the next entry would start past the payload */
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_append(&m, r->id, addr_of(fr, r->id), t, 1);
	m.append_entries.entries[0].term = t + 1;
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_append(&m, r->id, addr_of(fr, r->id), t, 1);
	memcpy(m.append_entries.entries[0].buf.base, bad_conf, 8);
	m.append_entries.entries[0].type = RAFT_CHANGE;
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_snapshot(&m, r->id, addr_of(fr, r->id), t);
	raft_free(m.install_snapshot.data.base);
	m.install_snapshot.data.base = poison;
	m.install_snapshot.data.len = 0;
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_snapshot(&m, r->id, addr_of(fr, r->id), t);
	raft_configuration_close(&m.install_snapshot.conf);
	raft_configuration_init(&m.install_snapshot.conf);
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	mk_vote(&m, r->id, addr_of(fr, r->id), fr->current_term + 5);
	m.request_vote.candidate_id = fr->id % RIG_N + 1;
	rio_deliver(fg, &m);
	CHECK_EQ_U64(fg->n_guard[RIO_DROP_MALFORMED], ++n);

	CHECK_EQ_U64(fr->current_term, r->current_term);
	CHECK_EQ_INT(raft_state(fr), RAFT_FOLLOWER);
	CHECK(raft_fixture_step_until_has_leader(&g.f, 1000));
	raft_fixture_close(&g.f);
}

/* While a removal is uncommitted, the server being removed still counts as
 * a member (it is one of the committed configuration); once committed, not. */
TEST(guard_membership_during_change)
{
	static struct rig g;
	static struct raft_change req;
	struct gcase c;
	guard_rig(&g, &c);
	struct raft *r = c.r;
	unsigned l = c.l;
	raft_id x = r->id % RIG_N + 1;
	char xaddr[32];

	snprintf(xaddr, sizeof xaddr, "%s", addr_of(r, x));
	CHECK(rio_is_member(&g.rios[l], x, xaddr));
	CHECK(!rio_is_member(&g.rios[l], x, "elsewhere"));
	CHECK(!rio_is_member(&g.rios[l], 9, xaddr));
	CHECK_OK(raft_remove(r, &req, x, NULL));
	CHECK(r->configuration_uncommitted_index != 0);
	CHECK(rio_is_member(&g.rios[l], x, xaddr));
	CHECK(raft_fixture_step_until_applied(&g.f, l, r->configuration_uncommitted_index, 2000));
	CHECK_EQ_U64(r->configuration_uncommitted_index, 0);
	CHECK(!rio_is_member(&g.rios[l], x, xaddr));
	raft_fixture_close(&g.f);
}

/* ---- one raft_uv instance ---- */

struct uvt {
	uv_loop_t loop;
	uv_timer_t guard_timer;
	struct raft_uv_transport transport;
	struct raft_io io;
	struct rio g;
	struct raft raft;
	struct raft_fsm fsm;
	struct raft_barrier barrier;
	struct done bdone;
	struct raft_apply apply;
	struct done adone;
	pthread_t loop_thread;
	unsigned applied;
	unsigned to_apply;
	unsigned snapshots;       /* fsm->snapshot calls (loop thread) */
	unsigned asyncs;          /* fsm->snapshot_async calls (pool thread) */
	unsigned finalized;       /* fsm->snapshot_finalize calls */
	bool async_off_loop;
	uint64_t start;           /* uv_now at start */
	bool closing;             /* raft_close called */
	bool closed;              /* its callback fired */
	bool timed_out;
};

static int uvt_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct uvt *t = fsm->data;
	(void)buf;
	t->applied++;
	*result = NULL;
	return 0;
}

static int uvt_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct uvt *t = fsm->data;

	t->snapshots++;
	*bufs = raft_malloc(sizeof **bufs);
	CHECK(*bufs != NULL);
	(*bufs)[0].len = 8;
	(*bufs)[0].base = raft_malloc(8);
	CHECK((*bufs)[0].base != NULL);
	memcpy((*bufs)[0].base, "marker!!", 8);
	*n = 1;
	return 0;
}

static int uvt_snapshot_async(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct uvt *t = fsm->data;
	(void)bufs;
	(void)n;
	__atomic_add_fetch(&t->asyncs, 1, __ATOMIC_SEQ_CST);
	if (!pthread_equal(pthread_self(), t->loop_thread))
		__atomic_store_n(&t->async_off_loop, true, __ATOMIC_SEQ_CST);
	return 0;
}

static int uvt_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct uvt *t = fsm->data;

	t->finalized++;
	for (unsigned i = 0; i < *n; i++)
		raft_free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n = 0;
	return 0;
}

static int uvt_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	(void)fsm;
	raft_free(buf->base);
	return 0;
}

static void uvt_raft_close_cb(struct raft *r)
{
	struct uvt *t = r->data;

	raft_uv_close(&t->io);
	raft_uv_tcp_close(&t->transport);
	uv_close((uv_handle_t *)&t->guard_timer, NULL);
	t->closed = true;
}

static void uvt_finish(struct uvt *t)
{
	if (t->closing)
		return;
	t->closing = true;
	raft_close(&t->raft, uvt_raft_close_cb);
}

static void uvt_apply_next(struct uvt *t);

static void uvt_apply_cb(struct raft_apply *req, int status, void *result)
{
	struct uvt *t = req->data;
	(void)result;
	t->adone.done = true;
	t->adone.status = status;
	if (status != 0) {
		t->to_apply = 0; /* the guard timer closes and the test fails */
		return;
	}
	uvt_apply_next(t);
}

/* Applies one entry at a time, each from the previous one's callback. */
static void uvt_apply_next(struct uvt *t)
{
	struct raft_buffer buf;

	if (t->to_apply == 0)
		return; /* the guard timer closes once a snapshot is done */
	t->to_apply--;
	buf.len = 8;
	buf.base = raft_malloc(buf.len);
	CHECK(buf.base != NULL);
	memset(buf.base, 'a', buf.len);
	t->apply.data = t;
	t->adone.done = false;
	t->adone.status = raft_apply(&t->raft, &t->apply, &buf, 1, uvt_apply_cb);
	if (t->adone.status != 0) {
		raft_free(buf.base);
		t->adone.done = true;
		t->to_apply = 0;
	}
}

/* Closes once everything is applied and every snapshot finalized, or on
 * failure or timeout. raft_close is only called from this timer, never from
 * inside an apply callback: raft_uv 0.15 closed from there with writes in
 * flight aborts in uv_poll_stop ("!uv__is_closing(handle)"), with or without
 * rio. */
static void uvt_guard_cb(uv_timer_t *timer)
{
	struct uvt *t = timer->data;

	if (t->to_apply == 0 && t->adone.done &&
	    (t->adone.status != 0 || (t->finalized > 0 && t->finalized == t->snapshots))) {
		uvt_finish(t);
		return;
	}
	if (uv_now(&t->loop) - t->start > 20000) {
		t->timed_out = true;
		uvt_finish(t);
	}
}

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	CHECK(fd >= 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static unsigned count_snapshot_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "snapshot-", 9) == 0 && strstr(e->d_name, ".meta") == NULL)
			n++;
	closedir(d);
	return n;
}

static void count_handle(uv_handle_t *h, void *arg)
{
	unsigned *n = arg;
	if (!uv_is_closing(h))
		(*n)++;
}

TEST(uv_single_node_v3_fsm)
{
	static struct uvt t;
	char dir[512];
	char address[64];
	struct raft_configuration conf;
	unsigned open_handles = 0;
	int rv;

	memset(&t, 0, sizeof t);
	test_tmpdir_make(dir, "rio");
	snprintf(address, sizeof address, "127.0.0.1:%d", free_port());
	t.loop_thread = pthread_self();
	t.to_apply = 40;

	CHECK_OK(uv_loop_init(&t.loop));
	CHECK_OK(uv_timer_init(&t.loop, &t.guard_timer));
	t.guard_timer.data = &t;
	CHECK_OK(raft_uv_tcp_init(&t.transport, &t.loop));
	CHECK_OK(raft_uv_init(&t.io, &t.loop, dir, &t.transport));
	CHECK_EQ_INT(t.io.version, 1); /* the 0.15 bug rio works around */
	raft_uv_set_segment_size(&t.io, 256 * 1024);
	CHECK_OK(rio_wrap(&t.g, &t.io));
	CHECK_EQ_INT(t.g.io.version, 2);

	t.fsm.version = 3;
	t.fsm.data = &t;
	t.fsm.apply = uvt_apply;
	t.fsm.snapshot = uvt_snapshot;
	t.fsm.restore = uvt_restore;
	t.fsm.snapshot_finalize = uvt_snapshot_finalize;
	t.fsm.snapshot_async = uvt_snapshot_async;
	rv = raft_init(&t.raft, &t.g.io, &t.fsm, 1, address);
	CHECK_OK_MSG(rv, raft_errmsg(&t.raft));
	t.raft.data = &t;
	raft_set_snapshot_threshold(&t.raft, 16);
	raft_set_snapshot_trailing(&t.raft, 8);

	raft_configuration_init(&conf);
	CHECK_OK(raft_configuration_add(&conf, 1, address, RAFT_VOTER));
	CHECK_OK_MSG(raft_bootstrap(&t.raft, &conf), raft_errmsg(&t.raft));
	raft_configuration_close(&conf);
	CHECK_OK_MSG(raft_start(&t.raft), raft_errmsg(&t.raft));

	/* A single voter elects itself inside raft_start. */
	CHECK_EQ_INT(raft_state(&t.raft), RAFT_LEADER);
	t.barrier.data = &t.bdone;
	CHECK_OK(rio_on_leader(&t.g, &t.raft, &t.barrier, done_barrier_cb));
	CHECK_EQ_U64(rio_term_first_index(&t.g), t.barrier.index);
	uvt_apply_next(&t);
	t.start = uv_now(&t.loop);
	CHECK_OK(uv_timer_start(&t.guard_timer, uvt_guard_cb, 100, 100));

	uv_run(&t.loop, UV_RUN_DEFAULT);

	CHECK(t.closed);
	CHECK(!t.timed_out);
	uv_walk(&t.loop, count_handle, &open_handles);
	CHECK_EQ_INT(open_handles, 0);
	CHECK_EQ_INT(uv_loop_close(&t.loop), 0);

	CHECK(t.bdone.done);
	CHECK_EQ_INT(t.bdone.status, 0);
	CHECK_EQ_INT(t.applied, 40);
	CHECK_EQ_INT(t.adone.status, 0);
	CHECK(t.snapshots >= 1);
	CHECK(t.asyncs >= 1);
	CHECK(t.async_off_loop);
	CHECK(t.finalized >= 1);
	CHECK(count_snapshot_files(dir) >= 1);
	test_note("raft_uv: %u entries applied, %u snapshots (%u async), tfi %llu", t.applied,
		  t.snapshots, t.asyncs, (unsigned long long)t.barrier.index);
	test_tmpdir_remove(dir);
}

TEST_MAIN(T(stub_forwards_every_method), T(stub_version_and_validation),
	  T(early_barrier_ack_deferred), T(vote_quiet_delays_votes),
	  T(bogus_snapshot_result_refused), T(send_without_destination_refused),
	  T(fixture_cluster_applies_through_rio), T(guard_drops_own_term),
	  T(guard_drops_non_members), T(guard_drops_second_leader), T(guard_drops_malformed),
	  T(guard_membership_during_change), T(uv_single_node_v3_fsm))
