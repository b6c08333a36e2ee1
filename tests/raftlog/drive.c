/* drive.h: C-Raft 0.15's side of a raftlog group's raft_io, for the tests.
 * What raft frees and asserts is mirrored from canonical/raft v0.15.0
 * (src/entry.c entryBatchesDestroy, src/start.c raft_start, src/snapshot.c
 * snapshotRestore/snapshotClose, src/replication.c sendSnapshotGetCb). */
#include "drive.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "docraft/error.h"
#include "loop.h"
#include "test.h"

static void default_fail(const char *file, int line, const char *msg)
{
	fprintf(stderr, "%s:%d: %s\n", file, line, msg);
	exit(3);
}

void (*drive_fail)(const char *file, int line, const char *msg) = default_fail;

void drive_failf(const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	drive_fail(file, line, msg);
	abort(); /* drive_fail does not return */
}

bool drive_run_until(uv_loop_t *loop, const bool *flag)
{
	return loop_run_until(loop, loop_flag_is_set, (void *)flag, DRIVE_WAIT_MS);
}

void drive_netdir_make(char *path)
{
	const char *old = getenv("TMPDIR");
	char save[512];
	bool shm = access("/dev/shm", W_OK) == 0;

	snprintf(save, sizeof save, "%s", old != NULL ? old : "");
	if (shm)
		setenv("TMPDIR", "/dev/shm", 1);
	test_tmpdir_make(path, "rlnet");
	if (shm && old != NULL)
		setenv("TMPDIR", save, 1);
	else if (shm)
		unsetenv("TMPDIR");
}

/* ---- attach / detach ---- */

static int attach(struct drive_group *g, uv_loop_t *loop, struct raftlog *l, const char *name,
		  const char *netdir, bool init, char *errmsg)
{
	int rv;

	memset(g, 0, sizeof *g);
	g->loop = loop;
	snprintf(g->name, sizeof g->name, "%s", name);
	g->key = drive_key(name);
	if ((rv = raft_uv_tcp_init(&g->transport, loop)) != 0) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "raft_uv_tcp_init: %d", rv);
		return rv;
	}
	if ((rv = raft_uv_init(&g->net, loop, netdir, &g->transport)) != 0) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "raft_uv_init: %.200s", g->net.errmsg);
		raft_uv_tcp_close(&g->transport);
		return rv;
	}
	g->net_ready = true;
	if ((rv = raftlog_io_init(&g->x, l, name, &g->net, errmsg)) != 0)
		goto err_net;
	g->x.io.data = g; /* raft_init: io->data = r */
	if (!init)
		return 0;
	if ((rv = g->x.io.init(&g->x.io, 1, "127.0.0.1:1")) != 0) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "io.init: %d %.200s", rv, g->x.io.errmsg);
		raftlog_io_release(&g->x);
		goto err_net;
	}
	g->inited = true;
	return 0;

err_net:
	raft_uv_close(&g->net);
	raft_uv_tcp_close(&g->transport);
	g->net_ready = false;
	return rv;
}

int drive_attach(struct drive_group *g, uv_loop_t *loop, struct raftlog *l, const char *name,
		 const char *netdir, char *errmsg)
{
	return attach(g, loop, l, name, netdir, true, errmsg);
}

int drive_attach_storage(struct drive_group *g, uv_loop_t *loop, struct raftlog *l,
			 const char *name, const char *netdir, char *errmsg)
{
	return attach(g, loop, l, name, netdir, false, errmsg);
}

static void close_cb(struct raft_io *io)
{
	struct drive_group *g = io->data; /* as raft's ioCloseCb reads it */
	g->close_fired = true;
}

void drive_detach(struct drive_group *g)
{
	DRIVE_CHECK(g->appends_in_flight == 0, "%s: detach with %u appends in flight", g->name,
		    g->appends_in_flight);
	if (g->inited) {
		g->x.io.close(&g->x.io, close_cb);
		DRIVE_CHECK(drive_run_until(g->loop, &g->close_fired), "%s: close never called back",
			    g->name);
		g->inited = false;
	}
	raftlog_io_release(&g->x);
	raftlog_io_release(&g->x); /* idempotent */
	if (g->net_ready) {
		raft_uv_close(&g->net);
		raft_uv_tcp_close(&g->transport);
		g->net_ready = false;
	}
}

/* ---- payloads ---- */

uint64_t drive_key(const char *name)
{
	uint64_t h = 1469598103934665603ull;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ull;
	return h;
}

void drive_payload(uint8_t *p, size_t len, uint64_t key, raft_index index, raft_term term,
		   uint32_t salt)
{
	uint64_t x = key ^ (index * 0x9E3779B97F4A7C15ull) ^ (term * 0xC2B2AE3D27D4EB4Full) ^
		     ((uint64_t)salt << 17) ^ len;
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			if (x == 0)
				x = 1;
		}
		p[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> (8 * (i % 8)));
	}
}

uint32_t drive_crc32(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < len; i++) {
		c ^= b[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
	}
	return c ^ 0xFFFFFFFFu;
}

/* ---- append / truncate ---- */

static void append_cb(struct raft_io_append *req, int status)
{
	struct drive_append *a = req->data;
	struct drive_group *g = a->g;

	DRIVE_CHECK(a->returned, "%s: append %llu callback fired inside io.append", g->name,
		    (unsigned long long)a->first);
	DRIVE_CHECK(!a->done, "%s: append %llu called back twice", g->name,
		    (unsigned long long)a->first);
	DRIVE_CHECK(a->seq == g->appends_done,
		    "%s: append #%u (index %llu) called back before #%u: out of order", g->name,
		    a->seq, (unsigned long long)a->first, g->appends_done);
	g->appends_done++;
	g->appends_in_flight--;
	a->status = status;
	if (status != 0)
		snprintf(a->errmsg, sizeof a->errmsg, "%s", g->x.io.errmsg);
	for (unsigned i = 0; i < a->n; i++)
		raft_free(a->entries[i].buf.base);
	raft_free(a->entries);
	a->entries = NULL;
	a->done = true;
	if (a->then != NULL)
		a->then(a);
}

int drive_append(struct drive_group *g, struct drive_append *a, raft_index first,
		 const struct drive_want *want, unsigned n)
{
	void (*then)(struct drive_append *) = a->then;
	void *arg = a->arg;
	int rv;

	memset(a, 0, sizeof *a);
	a->then = then;
	a->arg = arg;
	a->g = g;
	a->first = first;
	a->n = n;
	a->req.data = a;
	a->entries = raft_malloc(n * sizeof *a->entries);
	DRIVE_CHECK(a->entries != NULL, "raft_malloc");
	for (unsigned i = 0; i < n; i++) {
		struct raft_entry *e = &a->entries[i];
		e->term = want[i].term;
		e->type = want[i].type;
		e->buf.len = want[i].len;
		e->buf.base = raft_malloc(want[i].len > 0 ? want[i].len : 1);
		DRIVE_CHECK(e->buf.base != NULL, "raft_malloc");
		drive_payload(e->buf.base, want[i].len, g->key, first + i, want[i].term,
			      want[i].salt);
		if (i < DRIVE_CRCS)
			a->crc[i] = drive_crc32(e->buf.base, want[i].len);
		e->batch = NULL;
	}
	a->seq = g->next_seq;
	rv = g->x.io.append(&g->x.io, &a->req, a->entries, n, append_cb);
	if (rv != 0) {
		DRIVE_CHECK(!a->done, "%s: failed append (%d) called back", g->name, rv);
		snprintf(a->errmsg, sizeof a->errmsg, "%s", g->x.io.errmsg);
		for (unsigned i = 0; i < n; i++)
			raft_free(a->entries[i].buf.base);
		raft_free(a->entries);
		a->entries = NULL;
		a->status = rv;
		return rv;
	}
	g->next_seq++;
	g->appends_in_flight++;
	a->returned = true;
	return 0;
}

int drive_append_wait(struct drive_group *g, raft_index first, const struct drive_want *want,
		      unsigned n, char *errmsg)
{
	struct drive_append a;
	int rv;

	a.then = NULL;
	a.arg = NULL;
	rv = drive_append(g, &a, first, want, n);
	if (rv == 0) {
		DRIVE_CHECK(drive_run_until(g->loop, &a.done), "%s: append %llu never called back",
			    g->name, (unsigned long long)first);
		rv = a.status;
	}
	if (errmsg != NULL)
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "%s", a.errmsg);
	return rv;
}

int drive_truncate(struct drive_group *g, raft_index index)
{
	return g->x.io.truncate(&g->x.io, index);
}

/* ---- snapshots ---- */

static void conf_address(char *out, size_t cap, raft_id id)
{
	snprintf(out, cap, "10.0.0.%llu:9000", (unsigned long long)id);
}

static void conf_of(struct raft_configuration *c, const raft_id *ids, unsigned n)
{
	char address[64];

	raft_configuration_init(c);
	for (unsigned i = 0; i < n; i++) {
		conf_address(address, sizeof address, ids[i]);
		DRIVE_CHECK(raft_configuration_add(c, ids[i], address, RAFT_VOTER) == 0,
			    "raft_configuration_add");
	}
}

void drive_conf(struct raft_configuration *c, unsigned n)
{
	raft_id ids[DRIVE_MAX_SERVERS];
	for (unsigned i = 0; i < n && i < DRIVE_MAX_SERVERS; i++)
		ids[i] = i + 1;
	conf_of(c, ids, n < DRIVE_MAX_SERVERS ? n : DRIVE_MAX_SERVERS);
}

/* Copies a snapshot handed over by the io into s (checking its shape), then
 * frees it as raft does (snapshotClose + raft_free). */
static void snap_take(struct drive_group *g, struct raft_snapshot *in, struct drive_snap *s)
{
	char address[64];

	memset(s, 0, sizeof *s);
	DRIVE_CHECK(in->n_bufs == 1, "%s: snapshot with %u buffers (raft asserts 1)", g->name,
		    in->n_bufs);
	DRIVE_CHECK(in->bufs[0].len <= sizeof s->data, "%s: snapshot of %zu bytes", g->name,
		    in->bufs[0].len);
	DRIVE_CHECK(in->configuration.n <= DRIVE_MAX_SERVERS, "%s: %u servers", g->name,
		    in->configuration.n);
	s->index = in->index;
	s->term = in->term;
	s->conf_index = in->configuration_index;
	s->n_servers = in->configuration.n;
	for (unsigned i = 0; i < in->configuration.n; i++) {
		const struct raft_server *sv = &in->configuration.servers[i];
		s->ids[i] = sv->id;
		conf_address(address, sizeof address, sv->id);
		DRIVE_CHECK(sv->address != NULL && strcmp(sv->address, address) == 0 &&
				    sv->role == RAFT_VOTER,
			    "%s: snapshot server %llu is %s role %d", g->name,
			    (unsigned long long)sv->id, sv->address ? sv->address : "(null)",
			    sv->role);
	}
	s->len = in->bufs[0].len;
	memcpy(s->data, in->bufs[0].base, s->len);
	raft_configuration_close(&in->configuration);
	for (unsigned i = 0; i < in->n_bufs; i++)
		raft_free(in->bufs[i].base);
	raft_free(in->bufs);
	raft_free(in);
}

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
	struct drive_put *p = req->data;
	DRIVE_CHECK(p->returned, "%s: snapshot_put called back inside snapshot_put", p->g->name);
	DRIVE_CHECK(!p->done, "%s: snapshot_put called back twice", p->g->name);
	p->status = status;
	p->done = true;
}

void drive_put_free(struct drive_put *p)
{
	/* What raft frees once the put is over (takeSnapshotClose). */
	raft_configuration_close(&p->snap.configuration);
	for (unsigned i = 0; i < p->snap.n_bufs; i++)
		raft_free(p->snap.bufs[i].base);
	raft_free(p->snap.bufs);
	p->snap.bufs = NULL;
	p->snap.n_bufs = 0;
}

int drive_snapshot_put(struct drive_group *g, struct drive_put *p, unsigned trailing,
		       const struct drive_snap *s)
{
	size_t half = s->len / 2;
	int rv;

	memset(p, 0, sizeof *p);
	p->g = g;
	p->req.data = p;
	p->snap.index = s->index;
	p->snap.term = s->term;
	p->snap.configuration_index = s->conf_index;
	conf_of(&p->snap.configuration, s->ids, s->n_servers);
	p->snap.n_bufs = 2;
	p->snap.bufs = raft_malloc(2 * sizeof *p->snap.bufs);
	DRIVE_CHECK(p->snap.bufs != NULL, "raft_malloc");
	p->snap.bufs[0].len = half;
	p->snap.bufs[1].len = s->len - half;
	for (unsigned i = 0; i < 2; i++) {
		p->snap.bufs[i].base = raft_malloc(p->snap.bufs[i].len + 1);
		DRIVE_CHECK(p->snap.bufs[i].base != NULL, "raft_malloc");
	}
	memcpy(p->snap.bufs[0].base, s->data, half);
	memcpy(p->snap.bufs[1].base, s->data + half, s->len - half);
	rv = g->x.io.snapshot_put(&g->x.io, trailing, &p->req, &p->snap, put_cb);
	if (rv != 0) {
		DRIVE_CHECK(!p->done, "%s: failed snapshot_put called back", g->name);
		drive_put_free(p);
		return rv;
	}
	p->returned = true;
	return 0;
}

int drive_snapshot_put_wait(struct drive_group *g, unsigned trailing, const struct drive_snap *s)
{
	struct drive_put p;
	int rv = drive_snapshot_put(g, &p, trailing, s);

	if (rv != 0)
		return rv;
	DRIVE_CHECK(drive_run_until(g->loop, &p.done), "%s: snapshot_put never called back",
		    g->name);
	drive_put_free(&p);
	return p.status;
}

struct get {
	struct raft_io_snapshot_get req;
	struct drive_group *g;
	struct drive_snap *out;
	bool returned;
	bool done;
	int status;
};

static void get_cb(struct raft_io_snapshot_get *req, struct raft_snapshot *snapshot, int status)
{
	struct get *q = req->data;
	DRIVE_CHECK(q->returned, "snapshot_get called back inside snapshot_get");
	DRIVE_CHECK(!q->done, "snapshot_get called back twice");
	q->status = status;
	q->done = true;
	if (status == 0)
		snap_take(q->g, snapshot, q->out);
}

int drive_snapshot_get_wait(struct drive_group *g, struct drive_snap *s)
{
	struct get q;
	int rv;

	memset(&q, 0, sizeof q);
	q.req.data = &q;
	q.g = g;
	q.out = s;
	rv = g->x.io.snapshot_get(&g->x.io, &q.req, get_cb);
	if (rv != 0)
		return rv;
	q.returned = true;
	DRIVE_CHECK(drive_run_until(g->loop, &q.done), "%s: snapshot_get never called back",
		    g->name);
	return q.status;
}

/* ---- load ---- */

int drive_load(struct drive_group *g, struct drive_state *st, char *errmsg)
{
	struct raft_snapshot *snap = NULL;
	struct raft_entry *entries = NULL;
	size_t n = 0;
	void *batch = NULL;
	int rv;

	memset(st, 0, sizeof *st);
	rv = g->x.io.load(&g->x.io, &st->term, &st->vote, &snap, &st->start, &entries, &n);
	if (rv != 0) {
		if (errmsg != NULL)
			snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "%s", g->x.io.errmsg);
		return rv;
	}
	DRIVE_CHECK(st->start >= 1, "%s: load start_index 0", g->name);
	DRIVE_CHECK((entries == NULL) == (n == 0), "%s: load gave %zu entries at %p", g->name, n,
		    (void *)entries);
	if (snap != NULL) {
		st->has_snap = true;
		snap_take(g, snap, &st->snap);
	}
	st->n = n;
	st->e = calloc(n > 0 ? n : 1, sizeof *st->e);
	DRIVE_CHECK(st->e != NULL, "calloc");
	for (size_t i = 0; i < n; i++) {
		st->e[i].term = entries[i].term;
		st->e[i].type = entries[i].type;
		st->e[i].len = (uint32_t)entries[i].buf.len;
		st->e[i].data = malloc(entries[i].buf.len + 1);
		DRIVE_CHECK(st->e[i].data != NULL, "malloc");
		if (entries[i].buf.len > 0)
			memcpy(st->e[i].data, entries[i].buf.base, entries[i].buf.len);
	}
	/* Freed as raft's entryBatchesDestroy (and restoreEntries) do. */
	for (size_t i = 0; i < n; i++) {
		DRIVE_CHECK(entries[i].batch != NULL, "%s: loaded entry %llu has no batch", g->name,
			    (unsigned long long)(st->start + i));
		if (entries[i].batch != batch) {
			batch = entries[i].batch;
			raft_free(batch);
		}
	}
	raft_free(entries);

	/* What raft_start asserts or relies on. */
	if (!st->has_snap && n > 0) {
		DRIVE_CHECK(st->start == 1, "%s: entries from %llu without a snapshot", g->name,
			    (unsigned long long)st->start);
		DRIVE_CHECK(st->e[0].type == RAFT_CHANGE, "%s: entry 1 has type %u, not RAFT_CHANGE",
			    g->name, st->e[0].type);
	}
	if (st->has_snap && n == 0)
		DRIVE_CHECK(st->start == st->snap.index + 1,
			    "%s: snapshot %llu, no entries, start_index %llu", g->name,
			    (unsigned long long)st->snap.index, (unsigned long long)st->start);
	if (st->has_snap && n > 0)
		DRIVE_CHECK(st->start <= st->snap.index + 1 && st->start + n - 1 >= st->snap.index,
			    "%s: snapshot %llu but entries %llu..%llu", g->name,
			    (unsigned long long)st->snap.index, (unsigned long long)st->start,
			    (unsigned long long)(st->start + n - 1));
	return 0;
}

void drive_state_free(struct drive_state *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->e[i].data);
	free(st->e);
	memset(st, 0, sizeof *st);
}

const struct drive_entry *drive_state_at(const struct drive_state *st, raft_index index)
{
	if (index < st->start || index >= st->start + st->n)
		return NULL;
	return &st->e[index - st->start];
}

bool drive_entry_is(const struct drive_entry *e, uint64_t key, raft_index index,
		    const struct drive_want *w)
{
	uint8_t stack[4096];
	uint8_t *p = w->len <= sizeof stack ? stack : malloc(w->len);
	bool same;

	if (e->term != w->term || e->type != w->type || e->len != w->len) {
		if (p != stack)
			free(p);
		return false;
	}
	drive_payload(p, w->len, key, index, w->term, w->salt);
	same = w->len == 0 || memcmp(p, e->data, w->len) == 0;
	if (p != stack)
		free(p);
	return same;
}

/* ---- the log ---- */

static void log_closed_cb(struct raftlog *l, void *arg)
{
	(void)l;
	*(bool *)arg = true;
}

void drive_close_log(uv_loop_t *loop, struct raftlog *l)
{
	bool done = false;
	int rv = raftlog_close(l, log_closed_cb, &done);
	DRIVE_CHECK(rv == 0, "raftlog_close: %d", rv);
	DRIVE_CHECK(!done, "raftlog_close called back synchronously");
	DRIVE_CHECK(drive_run_until(loop, &done), "raftlog_close never called back");
}
