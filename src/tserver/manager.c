/* The tablet manager. See manager.h for the contract.
 *
 * Replicas are a singly linked list (a tablet server hosts hundreds, not
 * millions). Closing a tablet is asynchronous (tablet_close), so a replica
 * being deleted stays in the list as CLOSING until its tablet's close
 * callback, where its files are removed and its delete callers answered.
 * Callbacks that have no tablet to wait for (an idempotent create, a
 * delete that cancels a queued create) are run from a zero-delay timer,
 * never from inside the call.
 *
 * Off the loop thread. Opening a replica costs ~100-200 ms of blocking
 * file-system work (meta.pb write and fsyncs, RocksDB open, raft_uv's
 * capability probe, metadata and bootstrap segment), and a CREATE TABLE
 * sends a tserver dozens of creates at once: run on the loop they stalled
 * it for seconds, past the election timeout. A create is therefore a job
 * (struct mgr_job) on m->jobs, in order:
 *
 *   QUEUED ──(a pool slot, MANAGER_CREATE_JOBS)──► POOL: create_work on the
 *   threadpool: mkdir, meta.pb, tablet_prepare (dirs, RocksDB open)
 *   ──► READY (create_after, loop) ──► opener_cb, ONE replica per loop turn:
 *   tablet_open with the opened store, bootstrap, start ──► OPEN, waiters 0
 *
 * raft_uv's part (raft_init's probe and metadata, raft_bootstrap) must run
 * on the loop that will own the raft instance, hence one per turn: a turn
 * costs one replica's raft set-up (~40-100 ms), not a batch's. The replica
 * is CREATING throughout (invisible to lookups; manager_busy names it); a
 * second create of it joins the first's waiters; a delete cancels it (a
 * QUEUED job just goes; a POOL job is finished by create_after; a READY
 * one's store is closed by the removal job), answering the creates
 * DOCRAFT_ETABLETNOTFOUND. Removing files (a deleted replica, a cancelled
 * create) is a job too: remove_work closes a store it was given and
 * removes meta.pb then the directory. A job's replica stays on m->head
 * until the job's after-callback, so manager_close waits for every job
 * through maybe_closed. libuv's uv_queue_work only fails for a NULL work
 * callback, so its failure is a bug (PANIC), not a path.
 *
 * Reopen. A replica whose open failed with a sound meta.pb (at start:
 * RocksDB could not write its MANIFEST on a full disk, an I/O error) stays
 * FAILED and visible, with r->meta kept and r->reopen_at set: one manager
 * timer (m->reopen) fires at the earliest reopen_at, and each due replica
 * (its failed tablet, if any, closed; the disk above its reserve) gets a
 * reopen job (job->reopen) on the same queue as creates, so it shares their
 * pool slots and the one-per-turn opener: reopen_work runs tablet_prepare
 * (no meta.pb write), reopen_after queues it for the opener, which opens
 * raft on the loop (open_replica, as at start). A failed attempt schedules
 * the next one with the backoff. The replica stays FAILED (and visible)
 * until the opener succeeds; a delete or close meanwhile takes the job
 * down like a create's: QUEUED or READY at once (a READY store is closed),
 * POOL in reopen_after.
 *
 * One file, past 1,000 lines, on purpose: the replica list, the job queue
 * with its pool slots and one-per-turn opener, the reopen timer and the
 * asynchronous close share invariants no caller outside sees (a job's
 * replica stays on m->head until its after-callback; maybe_closed waits
 * for all of them), and splitting them would only publish those internals
 * in a private header. What does not touch them lives beside it: the
 * checks of a create request (create_check.c) and the reports
 * (manager_report.c). */
#include "tserver/manager.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/hlc.h"
#include "common/log.h"
#include "common/mem.h"
#include "raftlog/raftlog.h"
#include "rpc/wire.h"
#include "tablet/diskspace.h"
#include "tserver/create_check.h"
#include "tablet/remote_copy.h"

/* Largest meta.pb accepted (a schema of SCHEMA_MAX_COLUMNS columns is far
 * below). */
#define META_MAX_BYTES (16u << 20)

/* A manager_delete caller waiting for its callback. */
struct mgr_waiter {
	manager_delete_cb cb;
	void *arg;
	int status;
	struct mgr_waiter *next;
};

/* A create in progress, or a removal of a replica's files (design note). */
struct mgr_job {
	uv_work_t work;
	struct replica *r;
	enum { JOB_QUEUED, JOB_POOL, JOB_READY } phase; /* creates and reopens */
	bool reopen;                 /* a reopen (design note), not a create */
	Docraft__CreateTabletRequest *req; /* create: a copy of the request */
	uint8_t *packed;             /* create: req packed, the meta.pb */
	size_t len;
	struct store *store;         /* create: opened on the pool (READY);
					removal: closed there first */
	int status;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct mgr_job *next;        /* m->jobs (creates) */
};

/* ---- file-system helpers ---------------------------------------------------- */

/* a/b as a new string (free with free()). */
static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* ---- replicas -------------------------------------------------------------------- */

static struct replica *lookup(struct manager *m, const char *id)
{
	for (struct replica *r = m->head; r != NULL; r = r->next)
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

static struct replica *replica_new(struct manager *m, const char *id)
{
	struct replica *r = xzalloc(sizeof *r);
	snprintf(r->id, sizeof r->id, "%s", id);
	r->dir = path_join(m->tablets_dir, id);
	r->m = m;
	r->next = m->head;
	m->head = r;
	m->log_budget.replicas++;
	return r;
}

static void replica_unlink(struct replica *r)
{
	struct replica **pp = &r->m->head;
	while (*pp != NULL && *pp != r)
		pp = &(*pp)->next;
	if (*pp == r) {
		*pp = r->next;
		r->m->log_budget.replicas--;
	}
}

static void replica_free(struct replica *r)
{
	if (r->meta != NULL)
		docraft__create_tablet_request__free_unpacked(r->meta, NULL);
	if (r->has_schema)
		schema_free(&r->schema);
	free(r->dir);
	free(r);
}

/* Removes r's meta.pb (first: a crash then leaves a directory without one,
 * removed at the next start) and then its directory. */
static int delete_files(struct replica *r)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char *meta = path_join(r->dir, MANAGER_META_FILE);
	int rv = 0;
	if (unlink(meta) != 0 && errno != ENOENT) {
		rv = fs_errno_code(errno);
		LOG_ERROR("tablet %s: cannot remove %s: %s", r->id, meta, strerror(errno));
	}
	free(meta);
	if (rv == 0) {
		fs_fsync_path(r->dir, NULL);
		fs_remove_tree(r->dir);
		if (fs_fsync_path(r->m->tablets_dir, errmsg) != 0)
			LOG_WARN("%s", errmsg);
	}
	return rv;
}

static void run_waiters(struct mgr_waiter *w, int status)
{
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->cb(w->arg, status);
		free(w);
		w = next;
	}
}

static void defer_cb(uv_timer_t *h)
{
	struct manager *m = h->data;
	struct mgr_waiter *w = m->deferred;
	m->deferred = NULL;
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->next = NULL;
		run_waiters(w, w->status);
		w = next;
	}
}

static void defer_waiters(struct manager *m, struct mgr_waiter *w, int status)
{
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->status = status;
		w->next = m->deferred;
		m->deferred = w;
		w = next;
	}
	uv_timer_start(&m->defer, defer_cb, 0, 0);
}

static struct mgr_waiter *waiter_new(manager_delete_cb cb, void *arg)
{
	struct mgr_waiter *w = xzalloc(sizeof *w);
	w->cb = cb;
	w->arg = arg;
	return w;
}

static void defer_closed(uv_handle_t *h)
{
	struct manager *m = h->data;
	defer_cb(&m->defer);
	free(m->data_dir);
	free(m->tablets_dir);
	free(m->address);
	LOG_INFO("tablet manager closed");
	m->close_cb(m);
}

static void reopen_closed(uv_handle_t *h)
{
	struct manager *m = h->data;
	uv_close((uv_handle_t *)&m->defer, defer_closed);
}

static void opener_closed(uv_handle_t *h)
{
	struct manager *m = h->data;
	uv_close((uv_handle_t *)&m->reopen, reopen_closed);
}

/* A job's replica stays on m->head until its after-callback, so an empty
 * list also means no job is left on the threadpool. */
static void maybe_closed(struct manager *m)
{
	if (m->closing && m->n_open == 0 && m->head == NULL && m->pool_jobs == 0 &&
	    !uv_is_closing((uv_handle_t *)&m->opener))
		uv_close((uv_handle_t *)&m->opener, opener_closed);
}

/* ---- jobs (see the top) --------------------------------------------------------- */

static void queue_work(struct manager *m, struct mgr_job *job, uv_work_cb work,
		       uv_after_work_cb after)
{
	int rv;
	job->work.data = job;
	rv = uv_queue_work(m->loop, &job->work, work, after);
	if (rv != 0) /* only for a NULL work callback */
		PANIC("uv_queue_work: %s", uv_strerror(rv));
	m->pool_jobs++;
}

static void job_free(struct mgr_job *job)
{
	if (job->req != NULL)
		docraft__create_tablet_request__free_unpacked(job->req, NULL);
	free(job->packed);
	free(job);
}

/* Queues job (QUEUED) after every other; start_creates runs it. */
static void job_append(struct manager *m, struct mgr_job *job)
{
	job->phase = JOB_QUEUED;
	job->r->job = job;
	if (m->jobs_tail != NULL)
		m->jobs_tail->next = job;
	else
		m->jobs_head = job;
	m->jobs_tail = job;
}

static void job_unlink(struct manager *m, struct mgr_job *job)
{
	struct mgr_job **pp = &m->jobs_head;
	m->jobs_tail = NULL;
	while (*pp != NULL && *pp != job) {
		m->jobs_tail = *pp;
		pp = &(*pp)->next;
	}
	if (*pp == job)
		*pp = job->next;
	while (*pp != NULL) {
		m->jobs_tail = *pp;
		pp = &(*pp)->next;
	}
	job->r->job = NULL;
}

/* Threadpool: closes the store it was given, removes r's files. */
static void remove_work(uv_work_t *w)
{
	struct mgr_job *job = w->data;
	store_close(job->store);
	job->store = NULL;
	job->status = delete_files(job->r);
}

/* The Raft state of replica id in the shared log, if any, goes for good
 * (its tablet is closed, or it never had one). Blocks the loop for one
 * durable write; a failure is logged (the next create of id tries again). */
static void remove_group(struct manager *m, const char *id, const char *why)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	if (m->o.raft_log == NULL || !raftlog_group_exists(m->o.raft_log, id))
		return;
	if (raftlog_group_remove(m->o.raft_log, id, errmsg) != 0)
		LOG_ERROR("tablet %s: cannot remove its group of the shared Raft log (%s): %s", id,
			  why, errmsg);
	else
		LOG_INFO("tablet %s: its group of the shared Raft log is removed (%s)", id, why);
}

static void remove_after(uv_work_t *w, int status)
{
	struct mgr_job *job = w->data;
	struct replica *r = job->r;
	struct manager *m = r->m;
	struct mgr_waiter *waiters = r->waiters;
	(void)status; /* never cancelled */
	m->pool_jobs--;
	/* After meta.pb is gone: a crash in between leaves a group without a
	 * replica (removed by the next create of that id), never a replica
	 * without its Raft state. */
	if (job->status == 0)
		remove_group(m, r->id, "replica deleted");
	LOG_INFO("tablet %s: replica deleted", r->id);
	r->waiters = NULL;
	replica_unlink(r);
	replica_free(r);
	run_waiters(waiters, job->status);
	free(job);
	maybe_closed(m);
}

/* r is CLOSING (its tablet closed, or it never had one): closes store
 * (may be NULL) and removes r's files on the threadpool, then frees r and
 * answers its delete waiters. */
static void start_removal(struct replica *r, struct store *store)
{
	struct mgr_job *job = xzalloc(sizeof *job);
	job->r = r;
	job->store = store;
	r->state = REPLICA_CLOSING;
	r->remove_files = true;
	queue_work(r->m, job, remove_work, remove_after);
}

static void tablet_closed_cb(struct tablet *t, void *arg)
{
	struct replica *r = arg;
	struct manager *m = r->m;
	(void)t;
	r->t = NULL;
	m->n_open--;
	if (r->state == REPLICA_CLOSING && r->remove_files) {
		start_removal(r, NULL);
	} else if (r->state == REPLICA_CLOSING) {
		struct mgr_waiter *w = r->waiters;
		r->waiters = NULL;
		replica_unlink(r);
		replica_free(r);
		run_waiters(w, 0);
	} else if (m->closing) {
		/* A FAILED replica whose tablet finished closing. */
		replica_unlink(r);
		replica_free(r);
	}
	maybe_closed(m);
}

static void close_tablet(struct replica *r)
{
	r->tablet_closing = true;
	tablet_close(r->t, tablet_closed_cb, r);
}

/* r's tablet options (any thread: reads only what never changes). */
static void options_for(struct manager *m, struct replica *r, struct tablet_options *o)
{
	tablet_options_default(o);
	o->id = r->id;
	o->dir = r->dir;
	o->raft_id = r->raft_id;
	o->address = m->address;
	o->listener = m->o.listener;
	o->copy = m->o.copy;
	if (m->o.raft_heartbeat_ms != 0)
		o->heartbeat_ms = m->o.raft_heartbeat_ms;
	if (m->o.election_ms != 0)
		o->election_ms = m->o.election_ms;
	if (m->o.max_inflight != 0)
		o->max_inflight = m->o.max_inflight;
	if (m->o.segment_bytes != 0)
		o->segment_bytes = m->o.segment_bytes;
	o->raft_log = m->o.raft_log;
	o->raft_mux = m->o.raft_mux;
	o->disk = m->o.disk;
	o->log_budget = &m->log_budget;
	if (m->o.max_clock_skew_ms != 0)
		o->max_clock_skew_us = (uint64_t)m->o.max_clock_skew_ms * 1000;
	if (m->o.lease_ms == MANAGER_LEASE_OFF)
		o->lease_ms = 0;
	else if (m->o.lease_ms != 0)
		o->lease_ms = m->o.lease_ms;
	if (m->o.retry_ttl_s != 0)
		o->retry_ttl_us = (uint64_t)m->o.retry_ttl_s * 1000000;
	if (m->o.history_retention_s != 0)
		o->store.history_retention_us = (uint64_t)m->o.history_retention_s * 1000000;
	o->store.env = m->o.store_env;
	o->store.default_ttl_ms = r->schema.default_ttl_ms;
	/* The schema compaction GC uses: repacking of packed rows and removal
	 * of dropped columns (the store keeps its own copy). */
	o->store.schema = &r->schema;
}

/* Opens r's tablet as req describes, with store (tablet_prepare'd, taken
 * over even on error) or, NULL, opening it here; on error r->t may be set
 * (an opened tablet that failed later): the caller closes it. */
static int open_replica(struct manager *m, struct replica *r,
			const Docraft__CreateTabletRequest *req, struct store *store,
			char *errmsg)
{
	struct tablet_options o;
	int rv;

	options_for(m, r, &o);
	o.opened_store = store;
	if ((rv = tablet_open(m->loop, &o, &r->t, errmsg)) != 0)
		return rv;
	m->n_open++;
	if (!req->join) {
		struct tablet_peer *peers = xcalloc(req->n_peers, sizeof *peers);
		for (size_t i = 0; i < req->n_peers; i++) {
			peers[i].id = req->peers[i]->raft_id;
			peers[i].address = req->peers[i]->address;
			peers[i].role = RAFT_VOTER;
		}
		rv = tablet_bootstrap(r->t, peers, req->n_peers, errmsg);
		free(peers);
		if (rv != 0)
			return rv;
	}
	return tablet_start(r->t, errmsg);
}

/* Moves DIR/tablets/name, which has no meta.pb, to
 * DIR/tablets.orphan/<name>.<unix time>[.<n>] and says so: it may be the
 * remains of an interrupted create or delete, or data an operator put there
 * (a replica whose meta.pb was lost): never deleted, an operator decides. */
static void move_aside(struct manager *m, const char *dir, const char *name)
{
	char *orphans = path_join(m->data_dir, "tablets.orphan");
	char target[4096];
	struct stat st;
	int n = 0;
	if (mkdir(orphans, 0755) != 0 && errno != EEXIST) {
		LOG_ERROR("%s has no %s; cannot move it aside: mkdir %s: %s (left in place, "
			  "ignored)", dir, MANAGER_META_FILE, orphans, strerror(errno));
		free(orphans);
		return;
	}
	do {
		int l = n == 0 ? snprintf(target, sizeof target, "%s/%s.%lld", orphans, name,
					  (long long)time(NULL))
			       : snprintf(target, sizeof target, "%s/%s.%lld.%d", orphans, name,
					  (long long)time(NULL), n);
		if (l < 0 || (size_t)l >= sizeof target) {
			LOG_ERROR("%s has no %s; cannot move it aside: path too long (left in "
				  "place, ignored)", dir, MANAGER_META_FILE);
			free(orphans);
			return;
		}
		n++;
	} while (lstat(target, &st) == 0);
	if (rename(dir, target) != 0) {
		LOG_ERROR("%s has no %s; cannot move it aside to %s: %s (left in place, ignored)",
			  dir, MANAGER_META_FILE, target, strerror(errno));
	} else {
		fs_fsync_path(orphans, NULL);
		fs_fsync_path(m->tablets_dir, NULL);
		LOG_WARN("%s has no %s (an interrupted create or delete, or a replica whose "
			 "%s was lost): moved aside to %s, not deleted; remove it once inspected",
			 dir, MANAGER_META_FILE, MANAGER_META_FILE, target);
	}
	free(orphans);
}

/* ---- reopen of a replica that failed to open (see the top) --------------------- */

static void reopen_cb(uv_timer_t *h);

/* Arms m->reopen for the earliest pending attempt. */
static void arm_reopen(struct manager *m)
{
	uint64_t next = 0, now = uv_now(m->loop);
	for (struct replica *r = m->head; r != NULL; r = r->next)
		if (r->state == REPLICA_FAILED && r->reopen_at != 0 &&
		    (next == 0 || r->reopen_at < next))
			next = r->reopen_at;
	if (next == 0)
		uv_timer_stop(&m->reopen);
	else
		uv_timer_start(&m->reopen, reopen_cb, next > now ? next - now : 0, 0);
}

/* The next attempt of r (FAILED, r->meta set), after the backoff. */
static void schedule_reopen(struct replica *r)
{
	uint64_t delay = TABLET_RECOVER_FIRST_MS;
	for (unsigned i = 0; i < r->reopen_attempts && delay < TABLET_RECOVER_MAX_MS; i++)
		delay *= 2;
	if (delay > TABLET_RECOVER_MAX_MS)
		delay = TABLET_RECOVER_MAX_MS;
	r->reopen_attempts++;
	r->reopen_at = uv_now(r->m->loop) + delay;
	LOG_WARN("tablet %s: reopen attempt %u in %" PRIu64 " ms", r->id, r->reopen_attempts,
		 delay);
	arm_reopen(r->m);
}

/* An open or reopen of r (FAILED, r->meta set) failed: reported, retried. */
static void reopen_failed(struct replica *r, const char *why)
{
	r->open_failures++;
	snprintf(r->errmsg, sizeof r->errmsg, "cannot open the replica (retrying): %s", why);
	LOG_ERROR("tablet %s: cannot open the replica: %s (retried with backoff)", r->id, why);
	if (!r->m->closing)
		schedule_reopen(r);
}

static void reopen_work(uv_work_t *w)
{
	struct mgr_job *job = w->data;
	struct tablet_options o;
	options_for(job->r->m, job->r, &o);
	job->status = tablet_prepare(&o, &job->store, job->errmsg);
}

static void opener_cb(uv_idle_t *h);
static void start_creates(struct manager *m);

/* A create or reopen job back from the threadpool: its pool slot is free. */
static struct mgr_job *slot_returned(uv_work_t *w)
{
	struct mgr_job *job = w->data;
	job->r->m->pool_jobs--;
	job->r->m->pool_creates--;
	return job;
}

static void reopen_after(uv_work_t *w, int status)
{
	struct mgr_job *job = slot_returned(w);
	struct replica *r = job->r;
	struct manager *m = r->m;
	(void)status; /* never cancelled */
	if (job->status == 0 && !r->remove_files && !m->closing) {
		job->phase = JOB_READY;
		uv_idle_start(&m->opener, opener_cb);
	} else {
		job_unlink(m, job);
		if (r->remove_files) { /* deleted meanwhile */
			start_removal(r, job->store);
		} else if (m->closing) {
			store_close(job->store);
			replica_unlink(r);
			replica_free(r);
		} else {
			reopen_failed(r, job->errmsg);
		}
		job_free(job);
	}
	start_creates(m);
	maybe_closed(m);
}

/* The opener's part of a reopen (job unlinked; the caller frees it). */
static void reopen_open(struct manager *m, struct mgr_job *job)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r = job->r;
	if (open_replica(m, r, r->meta, job->store, errmsg) != 0) {
		if (r->t != NULL)
			close_tablet(r); /* stays FAILED; the callback clears r->t */
		reopen_failed(r, errmsg);
		return;
	}
	r->state = REPLICA_OPEN;
	r->reopens++;
	r->errmsg[0] = '\0';
	docraft__create_tablet_request__free_unpacked(r->meta, NULL);
	r->meta = NULL;
	LOG_WARN("tablet %s: replica reopened after %u attempt(s) (raft id %" PRIu64 ", table %s)",
		 r->id, r->reopen_attempts, r->raft_id, r->schema.table);
	r->reopen_attempts = 0;
}

static void reopen_cb(uv_timer_t *h)
{
	struct manager *m = h->data;
	uint64_t now = uv_now(m->loop);
	for (struct replica *r = m->head; r != NULL; r = r->next) {
		if (r->state != REPLICA_FAILED || r->reopen_at == 0 || r->reopen_at > now)
			continue;
		r->reopen_at = 0;
		if (r->t != NULL) { /* the failed attempt's tablet is still closing */
			r->reopen_at = now + TABLET_RECOVER_FIRST_MS;
		} else if (!diskspace_may_recover(m->o.disk)) {
			LOG_WARN("tablet %s: reopen attempt %u postponed: the disk is below its "
				 "free-space reserve", r->id, r->reopen_attempts);
			schedule_reopen(r);
		} else {
			struct mgr_job *job = xzalloc(sizeof *job);
			job->r = r;
			job->reopen = true;
			job_append(m, job);
		}
	}
	start_creates(m);
	arm_reopen(m);
}

/* Loads the replica in DIR/tablets/name at start. */
static void load_replica(struct manager *m, const char *name)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char *dir = path_join(m->tablets_dir, name);
	char *meta = path_join(dir, MANAGER_META_FILE);
	Docraft__CreateTabletRequest *req = NULL;
	struct replica *r;
	struct stat st;
	uint8_t *data;
	size_t len;
	int rv;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		LOG_WARN("%s: not a tablet directory, ignored", dir);
		goto out;
	}
	rv = fs_read_file(meta, META_MAX_BYTES, &data, &len, errmsg);
	if (rv == DOCRAFT_ENOTFOUND) {
		move_aside(m, dir, name);
		goto out;
	}
	if (create_check_id(name, NULL) != 0) {
		LOG_WARN("%s: not a tablet id, ignored", dir);
		free(data);
		goto out;
	}
	r = replica_new(m, name);
	r->state = REPLICA_FAILED;
	if (rv != 0) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s", errmsg);
		goto failed;
	}
	req = docraft__create_tablet_request__unpack(NULL, len, data);
	free(data);
	if (req == NULL) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s does not decode", meta);
		goto failed;
	}
	if (strcmp(req->tablet_id, name) != 0) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s names tablet '%s'", meta, req->tablet_id);
		goto failed;
	}
	r->raft_id = req->raft_id;
	r->join = req->join;
	if (req->partition_end == 0) {
		LOG_WARN("tablet %s: %s has no partition (written before partitions were "
			 "kept): serving the whole hash range", name, meta);
		req->partition_start = 0;
		req->partition_end = 65536;
	}
	if (create_check_request(req, NULL, &r->schema, r->errmsg) != 0)
		goto failed;
	r->part_start = req->partition_start;
	r->part_end = req->partition_end;
	snprintf(r->table_id, sizeof r->table_id, "%s", req->table_id);
	r->has_schema = true;
	if (open_replica(m, r, req, NULL, errmsg) != 0) {
		if (r->t != NULL)
			close_tablet(r); /* stays FAILED; the callback clears r->t */
		r->meta = req; /* sound: retried (design note) */
		req = NULL;
		reopen_failed(r, errmsg);
		goto out;
	}
	r->state = REPLICA_OPEN;
	LOG_INFO("tablet %s: replica reopened (raft id %" PRIu64 ", table %s)", r->id, r->raft_id,
		 r->schema.table);
	goto out;
failed:
	LOG_ERROR("tablet %s: cannot open the replica: %s (not retried: fix or delete it)", name,
		  r->errmsg);
out:
	if (req != NULL)
		docraft__create_tablet_request__free_unpacked(req, NULL);
	free(meta);
	free(dir);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int manager_init(struct manager *m, uv_loop_t *loop, const struct manager_options *o,
		 char *errmsg)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int rv;

	memset(m, 0, sizeof *m);
	if (o->data_dir == NULL || o->address == NULL || o->listener == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "manager: data dir, address and listener "
			       "are required");
	m->loop = loop;
	m->o = *o;
	m->data_dir = xstrdup(o->data_dir);
	m->address = xstrdup(o->address);
	m->tablets_dir = path_join(o->data_dir, "tablets");
	m->o.data_dir = m->data_dir;
	m->o.address = m->address;
	m->log_budget.total_bytes = o->raft_log_memory_bytes;
	m->log_budget.floor_bytes = TABLET_LOG_FLOOR_BYTES;
	if (mkdir(m->tablets_dir, 0755) != 0 && errno != EEXIST) {
		rv = err_set(errmsg, fs_errno_code(errno), "mkdir %s: %s", m->tablets_dir,
			     strerror(errno));
		goto fail;
	}
	d = opendir(m->tablets_dir);
	if (d == NULL) {
		rv = err_set(errmsg, DOCRAFT_EIO, "opendir %s: %s", m->tablets_dir,
			     strerror(errno));
		goto fail;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	fs_fsync_path(m->data_dir, NULL);
	uv_timer_init(loop, &m->defer);
	m->defer.data = m;
	uv_idle_init(loop, &m->opener);
	m->opener.data = m;
	uv_timer_init(loop, &m->reopen);
	m->reopen.data = m;
	if (n > 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; i < n; i++) {
		load_replica(m, names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
fail:
	free(m->data_dir);
	free(m->tablets_dir);
	free(m->address);
	return rv;
}

/* Threadpool: everything of a create that blocks and does not need the
 * loop (design note). On failure nothing it made is left behind. */
static void create_work(uv_work_t *w)
{
	struct mgr_job *job = w->data;
	struct replica *r = job->r;
	struct tablet_options o;
	struct stat st;
	char *meta;
	int rv;

	if (stat(r->dir, &st) == 0) {
		job->status = err_set(job->errmsg, DOCRAFT_EIO,
				      "%s exists but holds no known replica", r->dir);
		return;
	}
	if (mkdir(r->dir, 0755) != 0) {
		job->status = err_set(job->errmsg, fs_errno_code(errno), "mkdir %s: %s", r->dir,
				      strerror(errno));
		return;
	}
	meta = path_join(r->dir, MANAGER_META_FILE);
	rv = fs_write_file(meta, job->packed, job->len, job->errmsg);
	free(meta);
	if (rv == 0)
		rv = fs_fsync_path(r->m->tablets_dir, job->errmsg);
	if (rv == 0) {
		options_for(r->m, r, &o);
		rv = tablet_prepare(&o, &job->store, job->errmsg);
	}
	if (rv != 0)
		delete_files(r);
	job->status = rv;
}

/* Answers r's create waiters (and forgets them). */
static void answer_creates(struct replica *r, int status)
{
	struct mgr_waiter *w = r->create_waiters;
	r->create_waiters = NULL;
	run_waiters(w, status);
}

static void create_after(uv_work_t *w, int status)
{
	struct mgr_job *job = slot_returned(w);
	struct replica *r = job->r;
	struct manager *m = r->m;
	(void)status; /* never cancelled */
	if (job->status != 0) {
		LOG_ERROR("tablet %s: create failed: %s", r->id, job->errmsg);
		job_unlink(m, job);
		answer_creates(r, job->status);
		run_waiters(r->waiters, 0); /* deleted meanwhile: nothing is left */
		r->waiters = NULL;
		replica_unlink(r);
		replica_free(r);
		job_free(job);
	} else if (r->remove_files || m->closing) {
		/* Deleted meanwhile (the store and files go), or the server is
		 * closing (they stay: a restart opens the replica). */
		job_unlink(m, job);
		answer_creates(r, r->remove_files ? DOCRAFT_ETABLETNOTFOUND : DOCRAFT_ECLOSED);
		if (r->remove_files) {
			start_removal(r, job->store);
		} else {
			store_close(job->store); /* a new, empty store: nothing to flush */
			replica_unlink(r);
			replica_free(r);
		}
		job_free(job);
	} else {
		job->phase = JOB_READY;
		uv_idle_start(&m->opener, opener_cb);
	}
	start_creates(m);
	maybe_closed(m);
}

/* One READY replica per loop turn: its raft instance is opened on the loop
 * (design note). */
static void opener_cb(uv_idle_t *h)
{
	struct manager *m = h->data;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct mgr_job *job = m->jobs_head;
	struct replica *r;
	int rv;

	while (job != NULL && job->phase != JOB_READY)
		job = job->next;
	if (job == NULL) {
		uv_idle_stop(h);
		return;
	}
	r = job->r;
	job_unlink(m, job);
	if (job->reopen) {
		reopen_open(m, job);
		job_free(job);
		return;
	}
	rv = open_replica(m, r, job->req, job->store, errmsg);
	if (rv != 0) {
		LOG_ERROR("tablet %s: create failed: %s", r->id, errmsg);
		r->state = REPLICA_CLOSING;
		r->remove_files = true;
		if (r->t != NULL)
			close_tablet(r); /* the callback removes the files */
		else
			start_removal(r, NULL); /* the tablet took the store */
	} else {
		r->state = REPLICA_OPEN;
		LOG_INFO("tablet %s: replica created (raft id %" PRIu64 ", table %s, %s)", r->id,
			 r->raft_id, r->schema.table, job->req->join ? "joining" : "bootstrapped");
	}
	answer_creates(r, rv);
	job_free(job);
}


/* Replicas on m's list, whatever their state (creating, open, failed,
 * closing). */
static size_t count_replicas(const struct manager *m)
{
	size_t n = 0;
	for (const struct replica *r = m->head; r != NULL; r = r->next)
		n++;
	return n;
}

/* Puts queued creates on the threadpool, MANAGER_CREATE_JOBS at most. */
static void start_creates(struct manager *m)
{
	for (struct mgr_job *job = m->jobs_head;
	     job != NULL && m->pool_creates < MANAGER_CREATE_JOBS; job = job->next) {
		if (job->phase != JOB_QUEUED)
			continue;
		job->phase = JOB_POOL;
		m->pool_creates++;
		queue_work(m, job, job->reopen ? reopen_work : create_work,
			   job->reopen ? reopen_after : create_after);
	}
}

int manager_create(struct manager *m, const Docraft__CreateTabletRequest *req,
		   manager_create_cb cb, void *arg, char *errmsg)
{
	size_t hosted;
	struct replica *r;
	struct mgr_job *job;
	struct mgr_waiter *w;
	struct schema s;
	int rv;

	if (m->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "the tablet server is shutting down");
	if ((rv = create_check_id(req->tablet_id, errmsg)) != 0)
		return rv;
	if ((r = lookup(m, req->tablet_id)) != NULL) {
		if (r->state == REPLICA_CLOSING || r->remove_files)
			return err_set(errmsg, DOCRAFT_EBUSY, "tablet %s is being deleted", r->id);
		if (r->raft_id != req->raft_id)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s exists here with raft id %" PRIu64, r->id,
				       r->raft_id);
		if (r->state == REPLICA_FAILED)
			return err_set(errmsg, DOCRAFT_EUNAVAILABLE,
				       "tablet %s exists but failed: %s", r->id, r->errmsg);
		if (req->partition_start != r->part_start || req->partition_end != r->part_end)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s exists here with partition [%u, %u), not [%u, %u)",
				       r->id, r->part_start, r->part_end, req->partition_start,
				       req->partition_end);
		if (strcmp(req->table_id, r->table_id) != 0)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s exists here for table id '%s', not '%s'", r->id,
				       r->table_id, req->table_id);
		w = waiter_new(cb, arg);
		if (r->state == REPLICA_CREATING) {
			w->next = r->create_waiters; /* the first create's outcome */
			r->create_waiters = w;
		} else {
			defer_waiters(m, w, 0);
		}
		return 0;
	}
	if ((rv = create_check_request(req, m->address, &s, errmsg)) != 0)
		return rv;
	/* Capacity (issue 12), see manager.h: every replica listed counts, the
	 * ones still being created too (creates run in jobs, so a burst of
	 * them arrives before any is open). */
	if (m->o.max_replicas != 0 && (hosted = count_replicas(m)) >= m->o.max_replicas)
		return err_set(errmsg, DOCRAFT_EUNAVAILABLE,
			       "tablet %s: this server hosts %zu replicas, as many as its "
			       "open-file and AIO limits allow (--max-replicas); place it elsewhere",
			       req->tablet_id, hosted);

	/* Unknown here, so whatever the log holds of it is a deleted replica's. */
	remove_group(m, req->tablet_id, "left by an interrupted delete");
	r = replica_new(m, req->tablet_id);
	r->schema = s;
	r->has_schema = true;
	r->raft_id = req->raft_id;
	r->join = req->join;
	r->part_start = req->partition_start;
	r->part_end = req->partition_end;
	snprintf(r->table_id, sizeof r->table_id, "%s", req->table_id);
	r->state = REPLICA_CREATING; /* invisible until open */
	r->create_waiters = waiter_new(cb, arg);
	job = xzalloc(sizeof *job);
	job->r = r;
	job->len = protobuf_c_message_get_packed_size(&req->base);
	job->packed = xmalloc(job->len);
	protobuf_c_message_pack(&req->base, job->packed);
	job->req = docraft__create_tablet_request__unpack(NULL, job->len, job->packed);
	if (job->req == NULL)
		PANIC("out of memory"); /* it packed just now */
	job_append(m, job);
	start_creates(m);
	return 0;
}

int manager_delete(struct manager *m, const char *id, manager_delete_cb cb, void *arg,
		   char *errmsg)
{
	struct replica *r = lookup(m, id != NULL ? id : "");
	struct mgr_waiter *w;

	if (m->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "the tablet server is shutting down");
	if (r == NULL || (r->state == REPLICA_CLOSING && !r->remove_files))
		return err_set(errmsg, DOCRAFT_ETABLETNOTFOUND, "tablet %s is not hosted here",
			       id != NULL ? id : "");
	w = waiter_new(cb, arg);
	w->next = r->waiters;
	r->waiters = w;
	if (r->remove_files)
		return 0; /* already being deleted: wait for it */
	LOG_INFO("tablet %s: deleting the replica%s", r->id,
		 r->state == REPLICA_CREATING ? " (being created)" : "");
	r->remove_files = true;
	if (r->state == REPLICA_CREATING) {
		struct mgr_job *job = r->job;
		if (job->phase == JOB_POOL)
			return 0; /* create_after finishes it */
		job_unlink(m, job);
		defer_waiters(m, r->create_waiters, DOCRAFT_ETABLETNOTFOUND);
		r->create_waiters = NULL;
		if (job->phase == JOB_READY) {
			start_removal(r, job->store);
		} else { /* QUEUED: nothing made yet */
			defer_waiters(m, r->waiters, 0);
			r->waiters = NULL;
			replica_unlink(r);
			replica_free(r);
		}
		job_free(job);
		return 0;
	}
	r->state = REPLICA_CLOSING;
	if (r->job != NULL) { /* a FAILED replica's reopen (design note) */
		struct mgr_job *job = r->job;
		if (job->phase == JOB_POOL)
			return 0; /* reopen_after removes it */
		job_unlink(m, job);
		start_removal(r, job->store);
		job_free(job);
		return 0;
	}
	if (r->t != NULL) {
		/* A FAILED replica's tablet may already be closing: its
		 * callback sees CLOSING and finishes the delete. */
		if (!r->tablet_closing)
			close_tablet(r);
		return 0;
	}
	start_removal(r, NULL);
	return 0;
}

static bool visible(const struct replica *r)
{
	return r->state == REPLICA_OPEN || r->state == REPLICA_FAILED;
}

struct replica *manager_find(struct manager *m, const char *id)
{
	struct replica *r = lookup(m, id != NULL ? id : "");
	return r != NULL && visible(r) ? r : NULL;
}

const char *manager_busy(struct manager *m, const char *id)
{
	struct replica *r = lookup(m, id != NULL ? id : "");
	if (r == NULL || visible(r))
		return NULL;
	return r->state == REPLICA_CREATING && !r->remove_files ? "being created"
								: "being deleted";
}

void manager_foreach(struct manager *m, void (*fn)(void *arg, struct replica *r), void *arg)
{
	for (struct replica *r = m->head; r != NULL; r = r->next)
		if (visible(r))
			fn(arg, r);
}

int64_t *manager_list_counter(struct replica *r)
{
	int64_t now = (int64_t)ht_physical(tablet_now(r->t));
	if (r->list_counter < now)
		r->list_counter = now;
	return &r->list_counter;
}

bool manager_closing(const struct manager *m)
{
	return m->closing;
}

void manager_close(struct manager *m, manager_close_cb cb)
{
	struct replica *r, *next;

	PRE(!m->closing && cb != NULL);
	m->closing = true;
	m->close_cb = cb;
	for (r = m->head; r != NULL; r = next) {
		next = r->next;
		switch (r->state) {
		case REPLICA_OPEN:
			r->state = REPLICA_CLOSING;
			close_tablet(r);
			break;
		case REPLICA_FAILED:
			if (r->job != NULL) { /* a reopen (design note) */
				struct mgr_job *job = r->job;
				if (job->phase == JOB_POOL)
					break; /* reopen_after frees it */
				job_unlink(m, job);
				store_close(job->store); /* READY: nothing written yet */
				job_free(job);
			}
			if (r->t == NULL) {
				replica_unlink(r);
				replica_free(r);
			}
			break; /* else its tablet's close callback frees it */
		case REPLICA_CLOSING:
			break; /* being deleted: its callback finishes */
		case REPLICA_CREATING: {
			struct mgr_job *job = r->job;
			if (job->phase == JOB_POOL)
				break; /* create_after finishes it */
			job_unlink(m, job);
			store_close(job->store); /* READY: a new, empty store */
			job_free(job);
			defer_waiters(m, r->create_waiters, DOCRAFT_ECLOSED);
			r->create_waiters = NULL;
			replica_unlink(r);
			replica_free(r);
			break;
		}
		}
	}
	uv_idle_stop(&m->opener);
	uv_timer_stop(&m->reopen);
	maybe_closed(m);
}
