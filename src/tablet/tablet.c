/* A tablet replica: C-Raft group + DocDB store. See tablet.h for the contract.
 *
 * Design.
 *
 * One poll per loop turn (a uv_prepare handle) drives everything that is not
 * a raft callback:
 *
 *   poll ─┬─ raft_state changed? ── leader: rio_on_leader (barrier) ──► READY
 *         │                          when the barrier applies
 *         │                     └── not leader: fail queued requests
 *         ├─ READY leader: queued writes ──► entries (group commit) ─► raft_apply
 *         │                queued reads  ──► one raft_barrier per batch
 *         └─ a restore asked for a checkpoint copy ──► copy procedure
 *
 * Requests are answered from raft callbacks (apply/barrier) or from the poll,
 * never from inside tablet_write / tablet_read.
 *
 * The state machine (fsm v3). apply: the entry's index is
 * raft_last_applied() + 1 (0.15 does not pass it); an index at or below the
 * store's applied marker is skipped (it is durable already: replay after a
 * restart), otherwise the entry's batches (minus requests the retry table
 * has seen) and the retry records go to the store in one RocksDB write with
 * the new marker. snapshot: a marker {index} taken on the loop thread;
 * snapshot_async (threadpool) flushes RocksDB, so when raft writes the marker
 * and truncates its log, everything up to the marker is in SST files.
 * restore: a marker above the store's applied index means this replica lacks
 * data raft no longer has (it was sent a snapshot): it must copy a checkpoint
 * from a healthy replica before it may apply anything.
 *
 * Failure: an apply that fails (disk full, corruption), a Raft log write or
 * barrier of this leader that fails (0.15 tells only the first request of
 * the failed write and does not step down, canonical/raft#321), or a raft
 * group that goes UNAVAILABLE marks the tablet FAILED; its raft instance is
 * closed from the next poll (a leader thereby steps down: its followers
 * elect another), every queued request fails with DOCRAFT_EUNAVAILABLE and
 * every write already in a Raft entry with DOCRAFT_ELEADERLOST (it may still
 * commit). Nothing is ever left hanging.
 *
 * Recovery: a FAILED replica whose raft instance has closed retries on a
 * timer with exponential backoff (RECOVER_FIRST_MS doubling to
 * RECOVER_MAX_MS): it closes its store (RocksDB stays read-only after a
 * failed background flush, and 7.8's C API has no Resume) and reopens it,
 * then restarts raft on the same directory, which replays the log from the
 * store's flushed marker. An attempt that fails schedules the next one; the
 * backoff starts over once the replica stayed up for RECOVER_RESET_MS.
 *
 * Store jobs (issue 12, nothing long on the loop thread). Closing a RocksDB
 * instance (waiting for its background jobs, freeing its memtables),
 * installing a checkpoint copy (renames, removing the old store) and
 * opening one take from tens of ms to seconds: they run on libuv's
 * threadpool as one store_job, never on the loop. A job runs only while
 * raft is closed (copy install, recovery) or gone (tablet_close), so no
 * apply, snapshot or copy-server read can touch the store meanwhile; the
 * tablet holds no store (t->store NULL: the service answers EUNAVAILABLE
 * for it), stays COPYING / FAILED so requests are answered retryably
 * (tablet_write and tablet_read refuse them), and continues in the job's
 * after-callback on the loop. tablet_close waits for a running job (its
 * after-callback finishes the close), and the close itself ends with a job
 * that closes the store, for a deletion as at shutdown: the manager waits
 * for the close callback either way.
 *
 * Raft log memory (issue 12, memory bounds). C-Raft 0.15 keeps every entry
 * since its last snapshot in memory, plus `trailing` entries before it, and
 * counts both in entries: 4096 + 8192 entries per replica whatever their
 * size, outside the store's memory budget. Each replica has a share S of
 * the process's --raft-log-memory-mb (struct tablet_log_budget, split among
 * the replicas hosted, at least TABLET_LOG_FLOOR_BYTES): the fsm counts the
 * bytes it applies (leader and followers alike: proposed entries not yet
 * applied are bounded by max_inflight); once they reach S/2 the poll
 * requests a snapshot (the snapshot_requested path, a barrier on a leader)
 * and sets raft's trailing count to S/2 over the average entry size of that
 * span, between LOG_TRAILING_MIN and snapshot_trailing. Raft then holds at
 * most ~S/2 applied + ~S/2 trailing bytes. The cost is one RocksDB flush
 * per snapshot (snapshot_async: the marker snapshot may only cut the log
 * below what is in SST files), i.e. an SST of about S/2 per snapshot per
 * replica, and fewer trailing entries for a lagging follower: past them it
 * needs a checkpoint copy. With few replicas the entry counts bind first
 * (256 MiB over 3 replicas: 42 MiB before a byte snapshot), so copies stay
 * as rare as before; the share is split, not per replica, because only the
 * sum matters for the process and a replica's share grows when others go.
 * Entries larger than S/2/LOG_TRAILING_MIN can exceed the share. */
#include "tablet/tablet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <ftw.h>
#include <sys/stat.h>

#include <raft/uv.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "docdb/condition.h"
#include "docdb/store_env.h"
#include "net/listener.h"
#include "raft/rio.h"
#include "raft/segfill.h"
#include "raft/transport.h"
#include "tablet/diskspace.h"
#include "tablet/fsm.h"
#include "tablet/remote_copy.h"


struct transfer;

/* One Raft entry proposed by this replica as leader. */
struct inflight {
	struct raft_apply req;
	struct tablet *t;
	uint64_t ht;
	uint64_t epoch, sent_ns;     /* leadership and time proposed (lease) */
	struct tablet_write *writes; /* answered when the entry applies */
	struct inflight *prev, *next;
};

/* A barrier whose callback may outlive a leadership (or the tablet's raft
 * instance): the callback finds the tablet through it. */
struct barrier {
	struct raft_barrier req;
	struct tablet *t;
	uint64_t epoch;
	uint64_t sent_ns;          /* time proposed (lease) */
	struct tablet_read *reads; /* read barrier: reads it serves */
};

struct tablet {
	uv_loop_t *loop;
	struct tablet_options o;
	char id[LISTENER_TABLET_ID_MAX + 1];
	char *dir, *raft_dir, *db_dir, *address;

	struct store *store;
	struct raft raft;
	struct raft_io uvio;
	struct rio rio;
	struct raft_uv_transport transport;
	struct tablet_fsm fsm;
	bool raft_open;     /* raft_init done, raft not closed yet */
	bool raft_started;
	bool raft_closing;  /* raft_close called, raft_uv not released yet
			       (raft_released) */

	struct hlc hlc;
	struct buf entry;   /* scratch */

	uv_prepare_t poll;
	enum tablet_role role;
	uint64_t epoch;                 /* bumped on every leadership change */
	bool leader_barrier_pending;

	struct tablet_write *wq_head, *wq_tail; /* queued, not proposed */
	struct tablet_write *done;              /* answered in the next poll */
	struct inflight *if_head, *if_tail;     /* proposed, not answered */
	unsigned n_inflight;                    /* entries in that list */
	struct tablet_read *rq_head, *rq_tail;  /* waiting for a barrier */
	bool read_barrier_busy;

	/* Leader lease (tablet.h): reads answered without a barrier until
	 * lease_until (CLOCK_BOOTTIME ns). */
	uint64_t lease_ns;          /* 0: leases off */
	uint64_t lease_until;       /* 0: no lease */
	bool lease_void;            /* this leadership started a transfer */
	bool lease_used;            /* reads served since the last renewal */

	bool snapshot_requested;
	bool snapshot_barrier;      /* a barrier to trigger it is in flight */
	uint64_t last_term;         /* term when raft was last open (logs) */
	struct transfer *transfers; /* freed after raft closes */
	struct tablet_status st;

	/* Checkpoint copy (role COPYING). */
	bool copy_pending;          /* raft closing for a copy */
	char copy_source[256];      /* address of the replica copied from */
	char *copy_dir;             /* dir/db.copy */
	struct copy_fetch copy_req;
	uv_timer_t copy_timer;      /* retry delay (copies, and recovery) */
	uv_timer_t log_timer;       /* raft_closed waits on it for raft_uv */
	uint64_t log_wait_since;    /* uv_now when that wait started */
	unsigned copy_attempts;

	/* The store being closed, swapped or reopened on the threadpool
	 * (struct store_job); t->store is NULL meanwhile. */
	struct store_job *store_job;

	/* Recovery of a FAILED replica (see the top). */
	unsigned recover_attempts;  /* since the backoff last started over */
	uint64_t recovered_at;      /* uv_now of the last recovery */

	bool closing;
	tablet_close_cb close_cb;
	void *close_arg;
};

/* ---- helpers ------------------------------------------------------------- */

/* Fewest trailing entries a byte bound leaves a lagging follower. */
#define LOG_TRAILING_MIN 4u

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (p == NULL)
		PANIC("out of memory");
	return p;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p == NULL)
		PANIC("out of memory");
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Creates path and its missing parents. */
static int mkdir_p(const char *path, char *errmsg)
{
	char tmp[4096];
	size_t n = strlen(path);
	if (n >= sizeof tmp)
		return err_set(errmsg, DOCRAFT_EINVAL, "path too long: %s", path);
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return err_set(errmsg, errno == ENOSPC ? DOCRAFT_ENOSPC : DOCRAFT_EIO,
				       "cannot create directory %s: %s", tmp, strerror(errno));
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* The term as raft knows it: 0.15 has no accessor; struct raft is public
 * there (c-raft.md §2.9). Used for logs and status only. */
static uint64_t term_of(struct tablet *t)
{
	if (t->raft_open)
		t->last_term = t->raft.current_term;
	return t->last_term;
}

#define TLOG(level, t, ...) LOG_AT(level, (t)->id, term_of(t), __VA_ARGS__)

/* One place where raft codes become docraft codes. */
static int from_raft(int rv)
{
	switch (rv) {
	case 0: return 0;
	case RAFT_NOTLEADER: return DOCRAFT_ENOTLEADER;
	case RAFT_LEADERSHIPLOST: return DOCRAFT_ELEADERLOST;
	case RAFT_SHUTDOWN: return DOCRAFT_ELEADERLOST;
	case RAFT_NOMEM: return DOCRAFT_ENOMEM;
	case RAFT_NOSPACE: return DOCRAFT_ENOSPC;
	case RAFT_TOOBIG: return DOCRAFT_ETOOBIG;
	case RAFT_BUSY:
	case RAFT_CANTCHANGE: return DOCRAFT_EBUSY;
	case RAFT_BADID:
	case RAFT_NOTFOUND:
	case RAFT_BADROLE:
	case RAFT_DUPLICATEID:
	case RAFT_DUPLICATEADDRESS: return DOCRAFT_EINVAL;
	case RAFT_CORRUPT: return DOCRAFT_ECORRUPT;
	default: return DOCRAFT_EIO;
	}
}

/* ---- leader lease (tablet.h) ------------------------------------------------ */

/* CLOCK_BOOTTIME keeps counting while the machine sleeps: a leader resumed
 * from a suspend sees its lease as expired. Never the loop's cached time: a
 * paused process must see the time it resumed at. */
static uint64_t lease_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An entry proposed at sent_ns in leadership epoch has committed. */
static void lease_extend(struct tablet *t, uint64_t epoch, uint64_t sent_ns)
{
	if (t->lease_ns == 0 || t->lease_void || epoch != t->epoch)
		return;
	if (sent_ns + t->lease_ns > t->lease_until)
		t->lease_until = sent_ns + t->lease_ns;
}

static bool lease_held(const struct tablet *t, uint64_t now)
{
	return t->role == TABLET_LEADER && now < t->lease_until;
}

/* A new leadership, or none: no lease until an entry of the new one commits. */
static void lease_drop(struct tablet *t)
{
	t->lease_until = 0;
	t->lease_void = false;
	t->lease_used = false;
}

const char *tablet_role_name(enum tablet_role r)
{
	static const char *const names[] = {"follower", "candidate", "leader (not ready)",
					    "leader", "copying", "failed", "closed"};
	return (size_t)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

void tablet_options_default(struct tablet_options *o)
{
	memset(o, 0, sizeof *o);
	o->heartbeat_ms = 100;
	o->election_ms = 1000;
	o->snapshot_threshold = 4096;
	o->snapshot_trailing = 8192;
	o->max_clock_skew_us = 500000;
	o->lease_ms = TABLET_LEASE_AUTO;
	o->max_inflight = 1;
	o->segment_bytes = TABLET_SEGMENT_BYTES;
	o->max_entry_bytes = 4u << 20;
	o->retry_ttl_us = RETRY_DEFAULT_TTL_US;
	store_options_default(&o->store);
}

/* ---- answering requests --------------------------------------------------- */

static void answer_write(struct tablet_write *w, int status, uint64_t ht)
{
	struct tablet_write *d = w->dups_;
	w->dups_ = NULL;
	w->cb(w, status, ht);
	while (d != NULL) {
		struct tablet_write *next = d->dups_;
		d->dups_ = NULL;
		d->cb(d, status, ht);
		d = next;
	}
}

static void fail_queued(struct tablet *t, int status)
{
	struct tablet_write *w = t->wq_head;
	struct tablet_read *r = t->rq_head;
	t->wq_head = t->wq_tail = NULL;
	t->rq_head = t->rq_tail = NULL;
	while (w != NULL) {
		struct tablet_write *next = w->next_;
		answer_write(w, status, 0);
		w = next;
	}
	while (r != NULL) {
		struct tablet_read *next = r->next_;
		r->cb(r, status, 0);
		r = next;
	}
}

static void answer_done(struct tablet *t)
{
	while (t->done != NULL) {
		struct tablet_write *w = t->done;
		t->done = w->next_;
		answer_write(w, w->status_, w->ht_);
	}
}

/* ---- the state machine ---------------------------------------------------- */

static void schedule_recovery(struct tablet *t);

static void fail(struct tablet *t, int code, const char *why)
{
	bool leader = t->role == TABLET_LEADER || t->role == TABLET_LEADER_NOT_READY;
	if (t->role == TABLET_FAILED || t->role == TABLET_CLOSED)
		return;
	TLOG(LOG_LVL_ERROR, t, "replica failed (%s)%s: %s", docraft_strerror(code),
	     leader ? ", the leader steps down" : "", why);
	snprintf(t->st.errmsg, sizeof t->st.errmsg, "%s: %s", docraft_strerror(code), why);
	t->st.failures++;
	t->role = TABLET_FAILED;
	/* With raft open, the poll closes it and raft_closed schedules the
	 * recovery; without (a copy failed, a recovery attempt failed), now. */
	if (!t->raft_open && !t->raft_closing && !t->closing)
		schedule_recovery(t);
}

/* A raft status saying that this replica's own disk write failed. */
static bool disk_error(int status)
{
	return status == RAFT_IOERR || status == RAFT_NOSPACE || status == RAFT_CORRUPT;
}

static void disk_failed(struct tablet *t, int status, const char *what)
{
	char why[DOCRAFT_ERRMSG_SIZE + sizeof t->rio.io.errmsg];
	snprintf(why, sizeof why, "%s failed (%s)", what, t->rio.io.errmsg);
	fail(t, from_raft(status), why);
}

/* ---- raft instance ------------------------------------------------------- */

/* Once per process: raft_uv's segments would stay unwritten (segfill.h). */
static void warn_unwritten_segments(struct tablet *t)
{
	static atomic_flag warned = ATOMIC_FLAG_INIT;
	if (segfill_enabled() && !segfill_active() && !atomic_flag_test_and_set(&warned))
		TLOG(LOG_LVL_WARN, t, "this executable does not export posix_fallocate: Raft "
				      "log segments stay unwritten and appends take raft_uv's "
				      "threadpool path (link it with raftglue_dep)");
}

/* The listener's peer check of this replica's Raft connections
 * (listener.h): a member of its configuration, connecting from the IP of
 * its address. TLS will replace the second half. */
static bool raft_peer_check(void *arg, uint64_t id, const char *address,
			    const struct sockaddr_in *peer)
{
	struct tablet *t = arg;
	return rio_is_member(&t->rio, id, address) && listener_peer_matches(address, peer);
}

/* The copy server's member check of this replica's COPY connections
 * (remote_copy.h): a peer connecting from the IP of a server in the current
 * configuration gets a member slot. TLS will replace the IP comparison. */
static bool copy_peer_check(void *arg, const struct sockaddr_in *peer)
{
	struct tablet *t = arg;
	const struct raft_configuration *c = &t->raft.configuration;
	if (!t->raft_open)
		return false;
	for (unsigned i = 0; i < c->n; i++)
		if (listener_peer_matches(c->servers[i].address, peer))
			return true;
	return false;
}

/* Registers the store with the copy server, if any. */
static int offer_copies(struct tablet *t, char *errmsg)
{
	int rv;
	if (t->o.copy == NULL)
		return 0;
	if ((rv = copy_server_register(t->o.copy, t->id, t->store, errmsg)) == 0)
		copy_server_set_member_check(t->o.copy, t->id, copy_peer_check, t);
	return rv;
}

static int raft_setup(struct tablet *t, char *errmsg)
{
	int rv;
	if ((rv = transport_init(&t->transport, t->o.listener, t->id, errmsg)) != 0)
		return rv;
	rv = raft_uv_init(&t->uvio, t->loop, t->raft_dir, &t->transport);
	if (rv != 0) {
		err_set(errmsg, from_raft(rv), "tablet %s: raft_uv_init: %s", t->id, t->uvio.errmsg);
		transport_close(&t->transport);
		return from_raft(rv) ? from_raft(rv) : DOCRAFT_EIO;
	}
	raft_uv_set_auto_recovery(&t->uvio, false);
	raft_uv_set_segment_size(&t->uvio, t->o.segment_bytes);
	warn_unwritten_segments(t);
	if ((rv = rio_wrap(&t->rio, &t->uvio)) != 0) {
		raft_uv_close(&t->uvio);
		transport_close(&t->transport);
		return err_set(errmsg, DOCRAFT_EIO, "tablet %s: rio_wrap: %s", t->id,
			       raft_strerror(rv));
	}
	t->rio.log_id = t->id;
	transport_set_peer_check(&t->transport, raft_peer_check, t);
	rv = raft_init(&t->raft, &t->rio.io, &t->fsm.fsm, t->o.raft_id, t->address);
	if (rv != 0) {
		err_set(errmsg, DOCRAFT_EIO, "tablet %s: raft_init: %s", t->id,
			rv == -1 ? "version mismatch" : raft_errmsg(&t->raft));
		raft_uv_close(&t->uvio);
		transport_close(&t->transport);
		return DOCRAFT_EIO;
	}
	raft_set_heartbeat_timeout(&t->raft, t->o.heartbeat_ms);
	raft_set_election_timeout(&t->raft, t->o.election_ms);
	raft_set_snapshot_threshold(&t->raft, t->o.snapshot_threshold);
	raft_set_snapshot_trailing(&t->raft, t->o.snapshot_trailing);
	raft_set_pre_vote(&t->raft, true);
	tablet_fsm_bind(&t->fsm, &t->raft);
	t->raft_open = true;
	t->raft_started = false;
	return 0;
}

static void raft_closed(struct raft *r);
static void start_close(struct tablet *t);

/* ---- open / bootstrap / start -------------------------------------------- */

static void poll_cb(uv_prepare_t *h);

int tablet_open(uv_loop_t *loop, const struct tablet_options *o, struct tablet **out,
		char *errmsg)
{
	struct tablet *t;
	int rv;

	*out = NULL;
	if (o->id == NULL || *o->id == '\0' || strlen(o->id) > LISTENER_TABLET_ID_MAX ||
	    o->dir == NULL || o->address == NULL || o->listener == NULL || o->raft_id == 0) {
		store_close(o->opened_store); /* NULL: a no-op */
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: id (1..%d characters), dir, "
			       "address, listener and raft id are required",
			       o->id != NULL ? o->id : "", LISTENER_TABLET_ID_MAX);
	}
	t = calloc(1, sizeof *t);
	if (t == NULL)
		PANIC("out of memory");
	t->loop = loop;
	t->o = *o;
	snprintf(t->id, sizeof t->id, "%s", o->id);
	t->dir = xstrdup(o->dir);
	t->address = xstrdup(o->address);
	t->raft_dir = path_join(o->dir, "raft");
	t->db_dir = path_join(o->dir, "db");
	t->copy_dir = path_join(o->dir, "db.copy");
	t->o.id = t->id;
	t->o.dir = t->dir;
	t->o.address = t->address;
	if (t->o.max_entry_bytes == 0 || t->o.max_entry_bytes > ENTRY_MAX_BYTES)
		t->o.max_entry_bytes = ENTRY_MAX_BYTES;
	if (t->o.max_inflight == 0)
		t->o.max_inflight = 1;
	if (t->o.segment_bytes == 0)
		t->o.segment_bytes = TABLET_SEGMENT_BYTES;
	hlc_init(&t->hlc, o->max_clock_skew_us ? o->max_clock_skew_us : 500000, NULL, NULL);
	{
		uint64_t max_ms = (uint64_t)(o->election_ms ? o->election_ms : 1000) * 7 / 10;
		uint64_t ms = o->lease_ms > max_ms ? max_ms : o->lease_ms;
		t->lease_ns = ms * 1000000u;
	}
	buf_init(&t->entry);

	t->o.opened_store = NULL;
	if (o->opened_store != NULL)
		t->store = o->opened_store;
	else if ((rv = tablet_prepare(o, &t->store, errmsg)) != 0)
		goto err;
	if ((rv = tablet_fsm_init(&t->fsm, t->id, t->store, &t->hlc, errmsg)) != 0)
		goto err_fsm;
	retry_set_ttl(&t->fsm.retry, o->retry_ttl_us);
	store_applied(t->store, &t->st.flushed_index, NULL);
	if ((rv = offer_copies(t, errmsg)) != 0)
		goto err_store;
	if ((rv = raft_setup(t, errmsg)) != 0) {
		if (t->o.copy != NULL)
			copy_server_unregister(t->o.copy, t->id);
		goto err_store;
	}
	uv_timer_init(loop, &t->copy_timer);
	t->copy_timer.data = t;
	uv_timer_init(loop, &t->log_timer);
	t->log_timer.data = t;
	uv_prepare_init(loop, &t->poll);
	t->poll.data = t;
	uv_prepare_start(&t->poll, poll_cb);
	TLOG(LOG_LVL_INFO, t, "opened: raft id %llu at %s, store applied index %" PRIu64,
	     (unsigned long long)o->raft_id, t->address, t->st.flushed_index);
	*out = t;
	return 0;

err_store:
	tablet_fsm_close(&t->fsm);
	store_close(t->store);
	goto err;
err_fsm:
	tablet_fsm_close(&t->fsm);
	store_close(t->store);
err:
	buf_free(&t->entry);
	free(t->dir);
	free(t->address);
	free(t->raft_dir);
	free(t->db_dir);
	free(t->copy_dir);
	free(t);
	return rv;
}

int tablet_prepare(const struct tablet_options *o, struct store **out, char *errmsg)
{
	char *raft_dir = path_join(o->dir, "raft");
	char *db_dir = path_join(o->dir, "db");
	char *copy_dir = path_join(o->dir, "db.copy");
	int rv;

	*out = NULL;
	if ((rv = mkdir_p(o->dir, errmsg)) == 0 && (rv = mkdir_p(raft_dir, errmsg)) == 0) {
		remove_tree(copy_dir); /* a copy interrupted by a crash */
		if ((rv = copy_server_remove_leftovers(db_dir, errmsg)) == 0)
			rv = store_open(db_dir, &o->store, out, errmsg);
	}
	free(raft_dir);
	free(db_dir);
	free(copy_dir);
	return rv;
}

int tablet_bootstrap(struct tablet *t, const struct tablet_peer *peers, size_t n, char *errmsg)
{
	struct raft_configuration conf;
	int rv = 0;
	raft_configuration_init(&conf);
	for (size_t i = 0; i < n && rv == 0; i++)
		rv = raft_configuration_add(&conf, peers[i].id, peers[i].address, peers[i].role);
	if (rv != 0) {
		raft_configuration_close(&conf);
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: bad configuration: %s", t->id,
			       raft_strerror(rv));
	}
	rv = raft_bootstrap(&t->raft, &conf);
	raft_configuration_close(&conf);
	if (rv == RAFT_CANTBOOTSTRAP)
		return 0;
	if (rv != 0)
		return err_set(errmsg, from_raft(rv), "tablet %s: bootstrap: %s", t->id,
			       raft_errmsg(&t->raft));
	return 0;
}

int tablet_start(struct tablet *t, char *errmsg)
{
	int rv;
	if (t->closing || t->role == TABLET_FAILED)
		return err_set(errmsg, DOCRAFT_ECLOSED, "tablet %s is closed", t->id);
	rv = raft_start(&t->raft);
	if (rv != 0)
		return err_set(errmsg, from_raft(rv), "tablet %s: raft_start: %s", t->id,
			       raft_errmsg(&t->raft));
	t->raft_started = true;
	t->fsm.log_last_at_start = raft_last_index(&t->raft);
	/* Before the crash this replica may have stored an entry that gave a
	 * leader its lease: no vote until that lease has surely run out. A
	 * log holding only the bootstrap configuration never stored one. */
	if (t->lease_ns != 0 && t->fsm.log_last_at_start > 1)
		rio_set_vote_quiet(&t->rio, t->o.election_ms);
	TLOG(LOG_LVL_INFO, t, "started: log ends at %" PRIu64 ", store at %" PRIu64,
	     t->fsm.log_last_at_start, t->st.flushed_index);
	return 0;
}

/* ---- leadership ------------------------------------------------------------ */

static struct barrier *barrier_new(struct tablet *t)
{
	struct barrier *b = calloc(1, sizeof *b);
	if (b == NULL)
		PANIC("out of memory");
	b->t = t;
	b->epoch = t->epoch;
	b->sent_ns = lease_clock(); /* before raft_barrier: never later than the entry */
	b->req.data = b;
	return b;
}

static void leader_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	struct tablet *t = b->t;
	t->leader_barrier_pending = false;
	if (disk_error(status))
		disk_failed(t, status, "this leader's Raft log write (its first barrier)");
	if (status == 0 && b->epoch == t->epoch && t->role == TABLET_LEADER_NOT_READY) {
		t->role = TABLET_LEADER;
		lease_extend(t, b->epoch, b->sent_ns);
		if (t->fsm.max_ht > hlc_last(&t->hlc)) {
			/* Entries beyond the skew were applied and not
			 * adopted (fsm.c); new writes must still be newer. */
			TLOG(LOG_LVL_WARN, t, "hybrid time %" PRIu64 " applied here is beyond the "
			     "maximum clock skew: this leader's writes follow it", t->fsm.max_ht);
			hlc_observe(&t->hlc, t->fsm.max_ht);
		}
		TLOG(LOG_LVL_INFO, t, "leader ready at index %" PRIu64,
		     (uint64_t)raft_last_applied(&t->raft));
	}
	free(b);
}

static void become_leader(struct tablet *t)
{
	struct barrier *b;
	int rv;
	if (t->leader_barrier_pending)
		return;
	b = barrier_new(t);
	rv = rio_on_leader(&t->rio, &t->raft, &b->req, leader_barrier_cb);
	if (rv != 0) {
		free(b); /* failed: no callback; the next poll tries again */
		return;
	}
	t->leader_barrier_pending = true;
}

static void step_down(struct tablet *t)
{
	rio_on_not_leader(&t->rio);
	fail_queued(t, DOCRAFT_ENOTLEADER);
}

/* ---- group commit --------------------------------------------------------- */

static void inflight_unlink(struct tablet *t, struct inflight *f)
{
	t->n_inflight--;
	if (f->prev)
		f->prev->next = f->next;
	else
		t->if_head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		t->if_tail = f->prev;
}

static void apply_cb(struct raft_apply *req, int status, void *result)
{
	struct inflight *f = req->data;
	struct tablet *t = f->t;
	struct tablet_write *w = f->writes;
	int code = from_raft(status);
	inflight_unlink(t, f);
	if (status == 0)
		lease_extend(t, f->epoch, f->sent_ns);
	if (disk_error(status))
		disk_failed(t, status, "this leader's Raft log write");
	/* It was in the log and may have reached followers: whatever failed,
	 * it may still commit, so the outcome is unknown (retry, same id). */
	if (code != 0)
		code = DOCRAFT_ELEADERLOST;
	while (w != NULL) {
		struct tablet_write *next = w->next_;
		uint64_t ht = 0;
		int st = code;
		/* The apply decided each request (retry.h): its outcome, and the
		 * time of the entry that decided it (an earlier one for a
		 * duplicate in the log). Not found: its record is already
		 * forgotten (min_running), so it applied here. */
		if (code == 0 && tablet_fsm_refused(result, w->client_id, w->seq)) {
			st = DOCRAFT_ETOOOLD; /* retry window expired: not applied */
		} else if (code == 0 &&
			   !retry_lookup(&t->fsm.retry, w->client_id, w->seq, &ht, &st)) {
			ht = f->ht;
			st = 0;
		}
		answer_write(w, st, st == 0 ? ht : 0);
		w = next;
	}
	free(f);
}

/* A queued write that duplicates one in flight waits for it. */
static bool attach_duplicate(struct tablet *t, struct tablet_write *w)
{
	for (struct inflight *f = t->if_head; f != NULL; f = f->next)
		for (struct tablet_write *o = f->writes; o != NULL; o = o->next_)
			if (o->seq == w->seq &&
			    memcmp(o->client_id, w->client_id, ENTRY_CLIENT_ID_LEN) == 0) {
				w->dups_ = o->dups_;
				o->dups_ = w;
				return true;
			}
	return false;
}

static void propose(struct tablet *t)
{
	/* Group commit: while max_inflight entries wait for their majority,
	 * writes queue up and go into the next entry together. Proposing
	 * every loop turn instead gave ~3.5 writes per entry at 64 clients
	 * on 4 tablets, and each entry costs about two client writes of CPU
	 * over the cluster (messages, disk submissions, a RocksDB write per
	 * replica): docs/benchmarks.md. */
	while (t->wq_head != NULL && t->n_inflight < t->o.max_inflight) {
		struct tablet_write *take = NULL, **tail = &take, *w;
		struct raft_buffer rb;
		struct inflight *f;
		size_t bytes = ENTRY_HEADER_SIZE;
		uint32_t n = 0;
		int rv;

		/* Take what fits in one entry; answer retries of decided writes.
		 * A conditional write goes alone: it ends the group before it
		 * and is the only request of its entry. */
		bool alone = false;
		while (!alone && (w = t->wq_head) != NULL) {
			size_t need = entry_request_size(w->cond_len, w->batch_len);
			if (n > 0 && (bytes + need > t->o.max_entry_bytes || w->cond_len > 0))
				break;
			t->wq_head = w->next_;
			if (t->wq_head == NULL)
				t->wq_tail = NULL;
			w->next_ = NULL;
			if (retry_lookup(&t->fsm.retry, w->client_id, w->seq, &w->ht_, &w->status_)) {
				if (w->status_ != 0)
					w->ht_ = 0;
				w->next_ = t->done;
				t->done = w;
				continue;
			}
			if (attach_duplicate(t, w))
				continue;
			*tail = w;
			tail = &w->next_;
			bytes += need;
			n++;
			alone = w->cond_len > 0;
		}
		if (n == 0)
			continue;

		f = calloc(1, sizeof *f);
		if (f == NULL)
			PANIC("out of memory");
		f->t = t;
		f->ht = hlc_now(&t->hlc);
		f->writes = take;
		buf_reset(&t->entry);
		entry_begin(&t->entry, f->ht, n);
		for (w = take; w != NULL; w = w->next_)
			entry_add_request_if(&t->entry, w->client_id, w->seq, w->min_running,
					     w->cond, w->cond_len, w->batch, w->batch_len);
		entry_finish(&t->entry);
		rb.len = t->entry.len;
		rb.base = raft_malloc(rb.len);
		if (rb.base == NULL)
			PANIC("out of memory");
		memcpy(rb.base, t->entry.data, rb.len);
		f->req.data = f;
		f->epoch = t->epoch;
		f->sent_ns = lease_clock();
		rv = raft_apply(&t->raft, &f->req, &rb, 1, apply_cb);
		if (rv != 0) {
			raft_free(rb.base);
			for (w = take; w != NULL;) {
				struct tablet_write *next = w->next_;
				answer_write(w, from_raft(rv), 0);
				w = next;
			}
			free(f);
			continue;
		}
		f->prev = t->if_tail;
		if (t->if_tail)
			t->if_tail->next = f;
		else
			t->if_head = f;
		t->if_tail = f;
		t->n_inflight++;
		t->st.entries++;
		t->st.writes += n;
	}
}

/* ---- reads ----------------------------------------------------------------- */

/* Below every write still in flight: a later read at this time sees the same
 * data. */
static uint64_t safe_time(struct tablet *t)
{
	uint64_t now = hlc_now(&t->hlc);
	if (t->if_head != NULL && t->if_head->ht <= now)
		return t->if_head->ht - 1;
	return now;
}

static void read_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	struct tablet *t = b->t;
	struct tablet_read *r = b->reads;
	int code = from_raft(status);
	bool ok = status == 0 && b->epoch == t->epoch && t->role == TABLET_LEADER;
	uint64_t ht;
	t->read_barrier_busy = false;
	if (disk_error(status))
		disk_failed(t, status, "this leader's Raft log write (a read barrier)");
	if (ok)
		lease_extend(t, b->epoch, b->sent_ns);
	ht = ok ? safe_time(t) : 0;
	if (!ok && code == 0)
		code = DOCRAFT_ENOTLEADER;
	if (code != 0)
		code = DOCRAFT_ENOTLEADER; /* a read has no effect: just retry */
	while (r != NULL) {
		struct tablet_read *next = r->next_;
		r->lease_ = false;
		if (ok)
			t->st.barrier_reads++;
		r->cb(r, ok ? 0 : code, ht);
		r = next;
	}
	free(b);
}

static void snapshot_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	b->t->snapshot_barrier = false;
	if (disk_error(status))
		disk_failed(b->t, status, "this leader's Raft log write (a snapshot barrier)");
	if (status == 0)
		lease_extend(b->t, b->epoch, b->sent_ns);
	free(b);
}

/* One barrier for every queued read; with no read queued, a renewal of the
 * lease (renew). */
static void issue_read_barrier(struct tablet *t, bool renew)
{
	struct barrier *b;
	int rv;
	if (t->read_barrier_busy || (t->rq_head == NULL && !renew))
		return;
	b = barrier_new(t);
	b->reads = t->rq_head;
	rv = raft_barrier(&t->raft, &b->req, read_barrier_cb);
	if (rv != 0) {
		free(b);
		return; /* not leader any more: the poll fails the reads */
	}
	t->rq_head = t->rq_tail = NULL;
	t->read_barrier_busy = true;
	if (renew && b->reads == NULL)
		t->st.lease_barriers++;
}

/* Under the lease, answers every queued read that does not ask for a
 * barrier; the rest wait for one. Keeps the lease alive while reads come
 * and no write would renew it. */
static void serve_reads(struct tablet *t)
{
	uint64_t now = lease_clock();
	if (t->rq_head != NULL && lease_held(t, now)) {
		struct tablet_read *r = t->rq_head, *keep = NULL, *keep_tail = NULL;
		uint64_t ht = safe_time(t);
		t->rq_head = t->rq_tail = NULL;
		while (r != NULL) {
			struct tablet_read *next = r->next_;
			r->next_ = NULL;
			if (r->barrier) {
				if (keep_tail != NULL)
					keep_tail->next_ = r;
				else
					keep = r;
				keep_tail = r;
			} else {
				r->lease_ = true;
				r->epoch_ = t->epoch;
				t->lease_used = true;
				t->st.lease_reads++;
				r->cb(r, 0, ht);
			}
			r = next;
		}
		/* Callbacks may have queued reads again: those go after. */
		if (keep != NULL) {
			keep_tail->next_ = t->rq_head;
			if (t->rq_head == NULL)
				t->rq_tail = keep_tail;
			t->rq_head = keep;
		}
	}
	issue_read_barrier(t, false);
	/* Renew with a barrier only if reads use the lease, no write entry is
	 * on its way to renew it, and less than half of it is left. */
	if (t->lease_used && t->if_head == NULL && !t->read_barrier_busy &&
	    lease_held(t, now) && t->lease_until - now < t->lease_ns / 2) {
		t->lease_used = false;
		issue_read_barrier(t, true);
	}
}

/* ---- the poll ---------------------------------------------------------------- */

static void close_handles(struct tablet *t);

/* ---- store jobs (see the top) ------------------------------------------- */

struct store_job;
typedef void (*store_job_cb)(struct tablet *t, struct store_job *j);

struct store_job {
	uv_work_t work;
	struct tablet *t;
	struct store *close; /* closed first (NULL: none) */
	bool install;        /* then dir/db.copy replaces dir/db */
	bool open;           /* then dir/db is opened into opened */
	store_job_cb done;   /* on the loop; the job is freed after it */
	struct store *opened;
	int rv;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

/* The threadpool half: touches only the store it was given and the files
 * of t's directory (t's paths and store options never change). */
static void store_job_work(uv_work_t *w)
{
	struct store_job *j = w->data;
	struct tablet *t = j->t;
	store_close(j->close);
	if (j->install) {
		/* db -> db.old, db.copy -> db, then db.old goes. */
		char *old = path_join(t->dir, "db.old");
		remove_tree(old);
		if (rename(t->db_dir, old) != 0 || rename(t->copy_dir, t->db_dir) != 0)
			j->rv = err_set(j->errmsg, DOCRAFT_EIO, "cannot install the copy: %s",
					strerror(errno));
		else
			remove_tree(old);
		free(old);
	}
	if (j->rv == 0 && j->open)
		j->rv = store_open(t->db_dir, &t->o.store, &j->opened, j->errmsg);
}

static void store_job_after(uv_work_t *w, int status)
{
	struct store_job *j = w->data;
	struct tablet *t = j->t;
	(void)status; /* never cancelled */
	t->store_job = NULL;
	j->done(t, j);
	free(j);
}

/* Takes t->store away (closed by the job) and runs the job; done gets the
 * outcome on the loop. Raft must be closed (PRE). libuv's uv_queue_work
 * only fails for a NULL work callback: a bug, not a path. */
static void store_job_start(struct tablet *t, bool install, bool open, store_job_cb done)
{
	struct store_job *j = calloc(1, sizeof *j);
	int rv;
	PRE(!t->raft_open && t->store_job == NULL);
	if (j == NULL)
		PANIC("out of memory");
	j->t = t;
	j->close = t->store;
	j->install = install;
	j->open = open;
	j->done = done;
	j->work.data = j;
	t->store = NULL;
	t->store_job = j;
	rv = uv_queue_work(t->loop, &j->work, store_job_work, store_job_after);
	if (rv != 0)
		PANIC("uv_queue_work: %s", uv_strerror(rv));
}

/* A job that opened a store ended while the tablet closes: keeps the store
 * for the close to close, and goes on with the close. True if so. */
static bool store_job_closing(struct tablet *t, struct store_job *j)
{
	if (!t->closing)
		return false;
	t->store = j->opened;
	close_handles(t);
	return true;
}

/* ---- checkpoint copy ------------------------------------------------------
 *
 * A restore found the store behind raft's snapshot: raft no longer has the
 * entries this replica lacks. The replica closes its raft instance, copies a
 * checkpoint of the leader's store (remote_copy.h; the leader flushed up to
 * the snapshot before sending it, so its checkpoint holds at least that
 * much), swaps it in for its own store, and starts raft again on the same
 * raft directory: raft restores the snapshot (now at or below the store's
 * marker) and the leader sends what follows. */

#define COPY_MAX_ATTEMPTS 10
#define COPY_RETRY_MS 1000

static void copy_fetch_start(struct tablet *t);
static void raft_restart_after_copy(struct tablet *t);

static void copy_timer_cb(uv_timer_t *h)
{
	struct tablet *t = h->data;
	if (!t->closing)
		copy_fetch_start(t);
}

static void copy_installed(struct tablet *t, struct store_job *j)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t applied_index = 0;
	int rv;
	if (store_job_closing(t, j))
		return;
	if (j->rv != 0) {
		fail(t, j->rv, j->errmsg);
		return;
	}
	t->store = j->opened;
	if ((rv = tablet_fsm_set_store(&t->fsm, t->store, errmsg)) != 0) {
		fail(t, rv, errmsg);
		return;
	}
	store_applied(t->store, &applied_index, NULL);
	t->st.copies++;
	t->st.flushed_index = applied_index;
	TLOG(LOG_LVL_INFO, t, "installed a checkpoint copy at index %" PRIu64 " from %s",
	     applied_index, t->copy_source);
	raft_restart_after_copy(t);
}

static void copy_done(struct copy_fetch *req, int status, uint64_t applied_index,
		      uint64_t applied_ht, const char *msg)
{
	struct tablet *t = req->data;
	(void)applied_ht;
	if (t->closing) {
		remove_tree(t->copy_dir);
		close_handles(t);
		return;
	}
	if (status != 0) {
		TLOG(LOG_LVL_WARN, t, "checkpoint copy from %s failed (attempt %u): %s",
		     t->copy_source, t->copy_attempts, msg);
		if (t->copy_attempts >= COPY_MAX_ATTEMPTS) {
			fail(t, status, "checkpoint copy failed too often");
			return;
		}
		uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
		return;
	}
	if (applied_index < t->fsm.copy_min_index) {
		TLOG(LOG_LVL_WARN, t, "copy holds index %" PRIu64 ", need %" PRIu64 ": again",
		     applied_index, t->fsm.copy_min_index);
		remove_tree(t->copy_dir);
		uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
		return;
	}
	/* Swap the copy in, off the loop; the replica stays COPYING. */
	store_job_start(t, true, true, copy_installed);
}

static void copy_fetch_start(struct tablet *t)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;
	t->copy_attempts++;
	remove_tree(t->copy_dir);
	memset(&t->copy_req, 0, sizeof t->copy_req);
	t->copy_req.data = t;
	rv = copy_fetch(t->loop, t->copy_source, t->id, t->copy_dir, &t->copy_req, copy_done,
			errmsg);
	if (rv != 0) {
		TLOG(LOG_LVL_WARN, t, "cannot start a checkpoint copy: %s", errmsg);
		if (t->copy_attempts >= COPY_MAX_ATTEMPTS)
			fail(t, rv, errmsg);
		else
			uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
	}
}

static void start_copy(struct tablet *t)
{
	const char *leader = NULL;
	raft_id id = 0;
	raft_leader(&t->raft, &id, &leader);
	if (id == 0 || leader == NULL || id == t->o.raft_id)
		return; /* wait until a leader is known */
	snprintf(t->copy_source, sizeof t->copy_source, "%s", leader);
	TLOG(LOG_LVL_WARN, t, "copying a checkpoint from leader %llu at %s (need index %" PRIu64 ")",
	     (unsigned long long)id, leader, t->fsm.copy_min_index);
	t->role = TABLET_COPYING;
	t->copy_pending = true;
	t->copy_attempts = 0;
	fail_queued(t, DOCRAFT_EUNAVAILABLE);
	start_close(t);
}

/* This replica's share of the Raft log memory, 0: none (the top). */
static uint64_t log_share(const struct tablet *t)
{
	const struct tablet_log_budget *b = t->o.log_budget;
	uint64_t share;
	if (b == NULL)
		return t->o.log_memory_bytes;
	if (b->total_bytes == 0)
		return 0;
	share = b->total_bytes / (b->replicas > 0 ? b->replicas : 1);
	return share > b->floor_bytes ? share : b->floor_bytes;
}

/* Requests a snapshot once the entries applied since the last one hold half
 * of the replica's share, and bounds the trailing entries by bytes. */
static void log_memory_check(struct tablet *t)
{
	uint64_t share = log_share(t), avg, trailing;
	if (share == 0 || t->snapshot_requested || t->fsm.snapshot_busy ||
	    t->fsm.log_bytes < share / 2)
		return;
	avg = t->fsm.log_bytes / (t->fsm.log_entries > 0 ? t->fsm.log_entries : 1);
	trailing = share / 2 / (avg > 0 ? avg : 1);
	if (trailing > t->o.snapshot_trailing)
		trailing = t->o.snapshot_trailing;
	if (trailing < LOG_TRAILING_MIN)
		trailing = LOG_TRAILING_MIN;
	raft_set_snapshot_trailing(&t->raft, (unsigned)trailing);
	t->st.byte_snapshots++;
	TLOG(LOG_LVL_DEBUG, t, "%" PRIu64 " entry bytes since the last snapshot (share %" PRIu64
	     "): snapshot, %" PRIu64 " trailing entries", t->fsm.log_bytes, share, trailing);
	t->snapshot_requested = true;
}

static void poll_cb(uv_prepare_t *h)
{
	struct tablet *t = h->data;
	enum tablet_role was = t->role;
	char why[DOCRAFT_ERRMSG_SIZE];
	answer_done(t);
	if (t->closing || !t->raft_open)
		return;
	if (t->fsm.failed)
		fail(t, DOCRAFT_EIO, t->fsm.errmsg);
	/* A log write that failed: a follower would stay behind (0.15 just
	 * does not ack, and raft_uv fails every later write too), a leader
	 * would go on without a durable log. */
	if (t->rio.n_append_errors > 0)
		disk_failed(t, t->rio.last_append_error, "a Raft log write");
	/* Before raft_uv must allocate a segment on a full disk (diskspace.h). */
	if (t->role != TABLET_FAILED && diskspace_below_floor(t->o.disk, why, sizeof why))
		fail(t, DOCRAFT_ENOSPC, why);
	if (t->fsm.copy_min_index != 0 && t->role != TABLET_COPYING && t->role != TABLET_FAILED)
		start_copy(t);
	if (t->role == TABLET_FAILED) {
		fail_queued(t, DOCRAFT_EUNAVAILABLE);
		start_close(t);
		return;
	}
	if (t->role == TABLET_COPYING)
		return;
	if (!t->raft_started)
		return;
	switch (raft_state(&t->raft)) {
	case RAFT_LEADER:
		if (t->role != TABLET_LEADER && t->role != TABLET_LEADER_NOT_READY) {
			t->epoch++;
			lease_drop(t);
			t->role = TABLET_LEADER_NOT_READY;
			TLOG(LOG_LVL_INFO, t, "became leader");
		}
		if (t->role == TABLET_LEADER_NOT_READY)
			become_leader(t);
		break;
	case RAFT_CANDIDATE:
		/* Rare and the start of every failover's timeline
		 * (docs/reliability.md reads it from the logs). */
		if (t->role != TABLET_CANDIDATE)
			TLOG(LOG_LVL_INFO, t, "election started: candidate (pre-vote)");
		t->role = TABLET_CANDIDATE;
		break;
	case RAFT_FOLLOWER:
		t->role = TABLET_FOLLOWER;
		break;
	default:
		fail(t, DOCRAFT_EUNAVAILABLE, "raft group became unavailable");
		fail_queued(t, DOCRAFT_EUNAVAILABLE);
		start_close(t);
		return;
	}
	if ((was == TABLET_LEADER || was == TABLET_LEADER_NOT_READY) &&
	    t->role != TABLET_LEADER && t->role != TABLET_LEADER_NOT_READY) {
		t->epoch++;
		lease_drop(t);
		TLOG(LOG_LVL_INFO, t, "lost leadership");
		step_down(t);
	}
	if (t->role == TABLET_LEADER) {
		propose(t);
		serve_reads(t);
	} else if (t->role != TABLET_LEADER_NOT_READY) {
		fail_queued(t, DOCRAFT_ENOTLEADER);
	}
	log_memory_check(t);
	if (t->snapshot_requested) {
		/* Raft snapshots after an apply pass once last_applied is
		 * threshold entries past the last snapshot: a threshold of 1
		 * and (on a leader) a barrier to apply make one happen; the
		 * threshold is restored once it has started. */
		if (t->fsm.snapshot_busy) {
			t->snapshot_requested = false;
			raft_set_snapshot_threshold(&t->raft, t->o.snapshot_threshold);
		} else {
			raft_set_snapshot_threshold(&t->raft, 1);
			if (t->role == TABLET_LEADER && !t->snapshot_barrier) {
				struct barrier *b = barrier_new(t);
				if (raft_barrier(&t->raft, &b->req, snapshot_barrier_cb) == 0)
					t->snapshot_barrier = true;
				else
					free(b);
			}
		}
	}
	answer_done(t);
}

/* ---- public requests -------------------------------------------------------- */

int tablet_write(struct tablet *t, struct tablet_write *req)
{
	if (t->closing || t->role == TABLET_FAILED || t->role == TABLET_CLOSED)
		return DOCRAFT_ECLOSED;
	if (t->role == TABLET_COPYING)
		return DOCRAFT_EUNAVAILABLE;
	/* The process's memtables are far over their budget: the flusher is
	 * behind (docdb/store_env.h); back off before it reaches Raft. */
	if (store_env_busy(t->o.store.env))
		return DOCRAFT_EBUSY;
	if (req->cb == NULL || (req->batch == NULL && req->batch_len != 0) ||
	    (req->cond == NULL && req->cond_len != 0))
		return DOCRAFT_EINVAL;
	if (req->cond_len > t->o.max_entry_bytes ||
	    entry_request_size(req->cond_len, req->batch_len) + ENTRY_HEADER_SIZE >
		    t->o.max_entry_bytes)
		return DOCRAFT_ETOOBIG;
	/* A malformed blob in the log would fail every replica's apply. */
	if (req->cond_len > 0) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		if (condition_validate(req->cond, req->cond_len, errmsg) != 0)
			return DOCRAFT_EINVAL;
	}
	req->next_ = NULL;
	req->dups_ = NULL;
	if (t->wq_tail)
		t->wq_tail->next_ = req;
	else
		t->wq_head = req;
	t->wq_tail = req;
	return 0;
}

int tablet_read(struct tablet *t, struct tablet_read *req)
{
	if (t->closing || t->role == TABLET_FAILED || t->role == TABLET_CLOSED)
		return DOCRAFT_ECLOSED;
	if (t->role == TABLET_COPYING)
		return DOCRAFT_EUNAVAILABLE;
	if (req->cb == NULL)
		return DOCRAFT_EINVAL;
	req->next_ = NULL;
	req->lease_ = false;
	if (t->rq_tail)
		t->rq_tail->next_ = req;
	else
		t->rq_head = req;
	t->rq_tail = req;
	return 0;
}

bool tablet_read_confirm(struct tablet *t, const struct tablet_read *req)
{
	return !req->lease_ || (req->epoch_ == t->epoch && lease_held(t, lease_clock()));
}

/* ---- membership ------------------------------------------------------------- */

struct change {
	struct raft_change req;
	struct tablet *t;
	raft_id id;
	bool promote; /* after raft_add: assign voter */
	tablet_change_cb cb;
	void *arg;
};

static void change_cb(struct raft_change *req, int status)
{
	struct change *c = req->data;
	if (status == 0 && c->promote) {
		c->promote = false;
		int rv = raft_assign(&c->t->raft, &c->req, c->id, RAFT_VOTER, change_cb);
		if (rv == 0)
			return;
		status = rv;
	}
	c->cb(c->arg, from_raft(status));
	free(c);
}

static struct change *change_new(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg)
{
	struct change *c = calloc(1, sizeof *c);
	if (c == NULL)
		PANIC("out of memory");
	c->t = t;
	c->id = id;
	c->cb = cb;
	c->arg = arg;
	c->req.data = c;
	return c;
}

static int change_start(struct tablet *t, struct change *c, int rv, const char *what, char *errmsg)
{
	if (rv == 0)
		return 0;
	free(c);
	return err_set(errmsg, from_raft(rv), "tablet %s: %s: %s", t->id, what,
		       raft_errmsg(&t->raft));
}

static int check_leader(struct tablet *t, char *errmsg)
{
	if (t->closing || !t->raft_open)
		return err_set(errmsg, DOCRAFT_ECLOSED, "tablet %s is closed", t->id);
	if (t->role != TABLET_LEADER)
		return err_set(errmsg, DOCRAFT_ENOTLEADER, "tablet %s: not the leader", t->id);
	return 0;
}

int tablet_add_replica(struct tablet *t, raft_id id, const char *address, tablet_change_cb cb,
		       void *arg, char *errmsg)
{
	struct change *c;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	c = change_new(t, id, cb, arg);
	c->promote = true;
	return change_start(t, c, raft_add(&t->raft, &c->req, id, address, change_cb), "add",
			    errmsg);
}

int tablet_remove_replica(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg,
			  char *errmsg)
{
	struct change *c;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	c = change_new(t, id, cb, arg);
	return change_start(t, c, raft_remove(&t->raft, &c->req, id, change_cb), "remove", errmsg);
}

/* raft keeps using a transfer request after its callback (the TimeoutNow
 * send embedded in it can still be cancelled when raft closes), so requests
 * stay on the tablet's list and are freed once raft has closed (transfers
 * are rare: a step-down, a shutdown). */
struct transfer {
	struct raft_transfer req;
	struct tablet *t;
	tablet_change_cb cb;
	void *arg;
	bool done;
	struct transfer *next;
};

static void transfer_cb(struct raft_transfer *req)
{
	struct transfer *x = req->data;
	if (x->done)
		return;
	x->done = true;
	x->cb(x->arg, 0);
}

static void transfers_free(struct tablet *t)
{
	while (t->transfers != NULL) {
		struct transfer *x = t->transfers;
		t->transfers = x->next;
		free(x);
	}
}

int tablet_transfer(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg, char *errmsg)
{
	struct transfer *x;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	x = calloc(1, sizeof *x);
	if (x == NULL)
		PANIC("out of memory");
	x->t = t;
	x->cb = cb;
	x->arg = arg;
	x->req.data = x;
	rv = raft_transfer(&t->raft, &x->req, id, transfer_cb);
	if (rv == 0) {
		/* TimeoutNow makes the target's voters ignore this leader: the
		 * lease is void for the rest of this leadership, even if the
		 * transfer fails (a late TimeoutNow may still start an
		 * election). */
		t->lease_until = 0;
		t->lease_void = true;
		x->next = t->transfers;
		t->transfers = x;
	} else {
		free(x);
		return err_set(errmsg, from_raft(rv), "tablet %s: transfer: %s", t->id,
			       raft_errmsg(&t->raft));
	}
	return 0;
}

/* ---- state ------------------------------------------------------------------ */

raft_id tablet_leader(struct tablet *t, const char **address)
{
	raft_id id = 0;
	const char *a = NULL;
	if (t->raft_open && t->raft_started)
		raft_leader(&t->raft, &id, &a);
	if (address != NULL)
		*address = a != NULL ? a : "";
	return id;
}

void tablet_get_status(struct tablet *t, struct tablet_status *st)
{
	const char *a;
	*st = t->st;
	st->replayed = t->fsm.replayed;
	st->skipped = t->fsm.skipped;
	st->snapshot_index = t->fsm.snapshot_index;
	st->log_bytes = t->fsm.log_bytes;
	st->role = t->role;
	st->term = term_of(t);
	st->leader_id = tablet_leader(t, &a);
	snprintf(st->leader_address, sizeof st->leader_address, "%s", a);
	if (t->raft_open) {
		st->last_index = raft_last_index(&t->raft);
		st->applied_index = raft_last_applied(&t->raft);
		/* 0.15 has no accessor; struct raft_log is public in raft.h */
		st->first_index = t->raft.log.offset + 1;
	}
	{
		uint64_t now = lease_clock();
		st->lease_left_ms = lease_held(t, now) ? (t->lease_until - now) / 1000000u : 0;
	}
}

const char *tablet_id(const struct tablet *t)
{
	return t->id;
}

uint64_t tablet_now(struct tablet *t)
{
	return hlc_now(&t->hlc);
}

struct store *tablet_store(struct tablet *t)
{
	return t->store;
}

void tablet_request_snapshot(struct tablet *t)
{
	t->snapshot_requested = true;
}

/* ---- close ------------------------------------------------------------------ */

static void close_finished(struct tablet *t, struct store_job *j)
{
	tablet_close_cb cb = t->close_cb;
	void *arg = t->close_arg;
	(void)j;
	buf_free(&t->entry);
	TLOG(LOG_LVL_INFO, t, "closed");
	free(t->dir);
	free(t->address);
	free(t->raft_dir);
	free(t->db_dir);
	free(t->copy_dir);
	t->role = TABLET_CLOSED;
	if (cb != NULL)
		cb(t, arg);
	free(t);
}

static void poll_closed(uv_handle_t *h)
{
	struct tablet *t = h->data;
	answer_done(t);
	fail_queued(t, DOCRAFT_ECLOSED);
	tablet_fsm_close(&t->fsm);
	/* The store (NULL after a failed copy swap) closes off the loop: a
	 * deleted tablet's memtables may be large. */
	store_job_start(t, false, false, close_finished);
}

/* libuv finishes closes in reverse order: chain them so the tablet, which
 * embeds the handles, is freed only after the last one. */
static void log_timer_closed(uv_handle_t *h)
{
	struct tablet *t = h->data;
	uv_close((uv_handle_t *)&t->poll, poll_closed);
}

static void timer_closed(uv_handle_t *h)
{
	struct tablet *t = h->data;
	uv_close((uv_handle_t *)&t->log_timer, log_timer_closed);
}

static void close_handles(struct tablet *t)
{
	uv_close((uv_handle_t *)&t->copy_timer, timer_closed);
}

/* raft_uv outlives its close callback (C-Raft 0.15 up to canonical/raft
 * 0.18.1; fixed in cowsql/raft#45): uvAppendClose starts closing the open
 * segment's writer, but uvMaybeFireCloseCb does not wait for it, so when
 * that writer waits for a write on the threadpool (raft_uv's EAGAIN
 * fallback), or the transport closes first, the close callback comes
 * first, and the writer's own close callback then calls uvMaybeFireCloseCb
 * on the struct uv that raft_uv_close freed, through uv->transport
 * (embedded here) and uv->io (close_tramp, made idempotent in rio.c). With
 * 300 busy replicas a tserver died so at SIGTERM (docs/benchmarks.md).
 *
 * So raft_uv's memory, and this tablet, are kept until no raft_uv writer of
 * this loop is part-way through closing: no closing handle whose close
 * callback, and no active check handle (a writer waiting for its threadpool
 * writes: UvWriterClose is raft_uv's only uv_check_start) whose callback,
 * lies in libraft. That is every raft instance's, not only this one's (the
 * handles do not say whose they are), so the wait is conservative; such
 * handles live one loop turn, or as long as a segment write. uv_walk sees
 * closing handles until just before their close callback runs; close_cb
 * and check_cb are libuv's own fields of the handle (part of its ABI). */
#define LOG_WAIT_POLL_MS 10u
#define LOG_WAIT_MAX_MS 60000u

struct writer_scan {
	const void *raft_base; /* where libraft is loaded */
	bool busy;
};

static bool in_libraft(const struct writer_scan *ws, void (*fn)(void))
{
	Dl_info info;
	return fn != NULL && dladdr((void *)fn, &info) != 0 && info.dli_fbase == ws->raft_base;
}

static void writer_scan_cb(uv_handle_t *h, void *arg)
{
	struct writer_scan *ws = arg;
	if (ws->busy)
		return;
	if (uv_is_closing(h))
		ws->busy = in_libraft(ws, (void (*)(void))h->close_cb);
	else if (h->type == UV_CHECK && uv_is_active(h))
		ws->busy = in_libraft(ws, (void (*)(void))((uv_check_t *)h)->check_cb);
}

static bool raft_writers_closing(uv_loop_t *loop)
{
	struct writer_scan ws = {NULL, false};
	Dl_info info;
	if (dladdr((void *)raft_uv_init, &info) == 0)
		return false; /* cannot tell (never seen): as before this check */
	ws.raft_base = info.dli_fbase;
	uv_walk(loop, writer_scan_cb, &ws);
	return ws.busy;
}

static void raft_released(struct tablet *t);

static void log_timer_cb(uv_timer_t *h)
{
	struct tablet *t = h->data;
	uint64_t waited = uv_now(t->loop) - t->log_wait_since;
	if (raft_writers_closing(t->loop)) {
		if (waited < LOG_WAIT_MAX_MS) {
			uv_timer_start(&t->log_timer, log_timer_cb, LOG_WAIT_POLL_MS, 0);
			return;
		}
		TLOG(LOG_LVL_ERROR, t, "raft_uv writers still closing %" PRIu64 " ms after "
		     "the raft close; releasing raft_uv anyway", waited);
	}
	raft_released(t);
}

static void raft_closed(struct raft *r)
{
	struct tablet *t = r->data;
	t->raft_open = false; /* raft's memory is closed; raft_uv's is not */
	t->raft_started = false;
	if (raft_writers_closing(t->loop)) {
		TLOG(LOG_LVL_DEBUG, t, "raft closed; waiting for raft_uv's writers to close");
		t->log_wait_since = uv_now(t->loop);
		uv_timer_start(&t->log_timer, log_timer_cb, LOG_WAIT_POLL_MS, 0);
		return;
	}
	raft_released(t);
}

static void raft_released(struct tablet *t)
{
	transfers_free(t);
	raft_uv_close(&t->uvio);
	transport_close(&t->transport);
	t->raft_open = false;
	t->raft_started = false;
	t->raft_closing = false;
	if (t->closing) {
		close_handles(t);
		return;
	}
	if (t->role == TABLET_FAILED) {
		t->copy_pending = false;
		schedule_recovery(t);
		return;
	}
	if (t->copy_pending) {
		t->copy_pending = false;
		if (t->o.copy != NULL)
			copy_server_unregister(t->o.copy, t->id);
		copy_fetch_start(t);
	}
}

static void raft_restart_after_copy(struct tablet *t)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;
	if ((rv = offer_copies(t, errmsg)) != 0)
		TLOG(LOG_LVL_WARN, t, "cannot offer the store for copies: %s", errmsg);
	if ((rv = raft_setup(t, errmsg)) != 0 || (rv = tablet_start(t, errmsg)) != 0) {
		fail(t, rv, errmsg);
		return;
	}
	t->role = TABLET_FOLLOWER;
}

/* ---- recovery of a FAILED replica (see the top) ---------------------------- */

#define RECOVER_FIRST_MS TABLET_RECOVER_FIRST_MS
#define RECOVER_MAX_MS TABLET_RECOVER_MAX_MS
#define RECOVER_RESET_MS 60000u

static void recovered(struct tablet *t, struct store_job *j)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t flushed = 0;
	int rv;
	if (store_job_closing(t, j))
		return;
	t->store = j->opened;
	if ((rv = j->rv) != 0 || (rv = tablet_fsm_set_store(&t->fsm, t->store, errmsg)) != 0) {
		TLOG(LOG_LVL_WARN, t, "recovery attempt %u failed: %s", t->recover_attempts,
		     j->rv != 0 ? j->errmsg : errmsg);
		schedule_recovery(t);
		return;
	}
	t->fsm.failed = false;
	t->fsm.errmsg[0] = '\0';
	store_applied(t->store, &flushed, NULL);
	if ((rv = offer_copies(t, errmsg)) != 0)
		TLOG(LOG_LVL_WARN, t, "cannot offer the store for copies: %s", errmsg);
	if ((rv = raft_setup(t, errmsg)) != 0) {
		TLOG(LOG_LVL_WARN, t, "recovery attempt %u failed: %s", t->recover_attempts,
		     errmsg);
		schedule_recovery(t);
		return;
	}
	t->role = TABLET_FOLLOWER;
	if ((rv = tablet_start(t, errmsg)) != 0) {
		fail(t, rv, errmsg); /* raft is open: the poll closes it, then again */
		return;
	}
	t->st.recoveries++;
	t->recovered_at = uv_now(t->loop);
	TLOG(LOG_LVL_WARN, t, "recovered after %u attempt(s): store reopened at applied index "
			      "%" PRIu64 ", raft restarted (last failure: %s)",
	     t->recover_attempts, flushed, t->st.errmsg);
}

/* Closes the store (NULL after a failed copy swap) and reopens it, off the
 * loop; recovered goes on. */
static void recover(struct tablet *t)
{
	if (!diskspace_may_recover(t->o.disk)) {
		TLOG(LOG_LVL_WARN, t, "recovery attempt %u postponed: the disk is below its "
				      "free-space reserve", t->recover_attempts);
		schedule_recovery(t);
		return;
	}
	if (t->o.copy != NULL)
		copy_server_unregister(t->o.copy, t->id);
	store_job_start(t, false, true, recovered);
}

static void recover_timer_cb(uv_timer_t *h)
{
	struct tablet *t = h->data;
	if (!t->closing && t->role == TABLET_FAILED && !t->raft_open && !t->raft_closing)
		recover(t);
}

/* Once raft is closed (or was not open): the next attempt after the
 * backoff. */
static void schedule_recovery(struct tablet *t)
{
	uint64_t delay = RECOVER_FIRST_MS;
	if (t->recover_attempts > 0 && uv_now(t->loop) - t->recovered_at >= RECOVER_RESET_MS)
		t->recover_attempts = 0;
	for (unsigned i = 0; i < t->recover_attempts && delay < RECOVER_MAX_MS; i++)
		delay *= 2;
	if (delay > RECOVER_MAX_MS)
		delay = RECOVER_MAX_MS;
	t->recover_attempts++;
	TLOG(LOG_LVL_WARN, t, "recovery attempt %u in %" PRIu64 " ms", t->recover_attempts, delay);
	uv_timer_start(&t->copy_timer, recover_timer_cb, delay, 0);
}

/* Closes the raft instance; the tablet (store, poll) lives on until
 * tablet_close. Pending raft requests fire their callbacks from raft_close. */
static void start_close(struct tablet *t)
{
	if (!t->raft_open || t->raft_closing)
		return;
	t->raft_closing = true;
	t->raft.data = t;
	raft_close(&t->raft, raft_closed);
}

void tablet_close(struct tablet *t, tablet_close_cb cb, void *arg)
{
	PRE(!t->closing);
	t->closing = true;
	t->close_cb = cb;
	t->close_arg = arg;
	if (t->o.copy != NULL)
		copy_server_unregister(t->o.copy, t->id);
	if (t->raft_open || t->raft_closing) {
		start_close(t); /* raft_released then closes the poll handle */
		return;
	}
	uv_timer_stop(&t->copy_timer);
	if (t->store_job != NULL)
		return; /* its callback finishes the close (store_job_closing) */
	if (t->copy_req.impl != NULL) {
		/* A fetch runs: its callback finishes the close. */
		copy_fetch_cancel(&t->copy_req);
		return;
	}
	close_handles(t);
}
