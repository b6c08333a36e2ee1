/* A tablet replica: C-Raft group + DocDB store. See tablet.h for the
 * contract; this file is its lifecycle, tablet_int.h lists the other
 * pieces (write and read paths, membership, the raft instance, recovery).
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
 *         ├─ the Raft log holds half of its memory share ──► a snapshot
 *         └─ a restore asked for a checkpoint copy ──► copy procedure
 *
 * Requests are answered from raft callbacks (apply/barrier) or from the poll,
 * never from inside tablet_write / tablet_read.
 *
 * Two variables say where a replica is. Its life (enum tablet_life,
 * tablet_int.h, with its diagram) is where its raft instance and the tablet
 * itself are in their lives: OPEN, RUNNING, closing and releasing raft_uv,
 * DOWN (no raft instance), and the closing branch; every change goes through
 * tablet_life_set, which checks it against the diagram. Its role (enum
 * tablet_role, tablet.h) is what it is to its group, as the poll learns it
 * from raft, plus COPYING and FAILED.
 *
 * The state machine (fsm v3, fsm.h). apply: the entry's index is
 * raft_last_applied() + 1 (0.15 does not pass it); an index at or below the
 * store's applied marker is skipped (it is durable already: replay after a
 * restart), otherwise the entry's batches (minus requests the retry table
 * has seen) and the retry records go to the store in one RocksDB write with
 * the new marker. snapshot: a marker {index} taken on the loop thread;
 * snapshot_async (threadpool) flushes RocksDB, so when raft writes the marker
 * and truncates its log, everything up to the marker is in SST files.
 * restore: a marker above the store's applied index means this replica lacks
 * data raft no longer has (it was sent a snapshot): it must copy a checkpoint
 * from a healthy replica before it may apply anything (tablet_recover.c).
 *
 * Failure: an apply that fails (disk full, corruption), a Raft log write or
 * barrier of this leader that fails (0.15 tells only the first request of
 * the failed write and does not step down, canonical/raft#321), a disk
 * below its free-space floor, or a raft group that goes UNAVAILABLE marks
 * the tablet FAILED; its raft instance is closed from the next poll (a
 * leader thereby steps down: its followers elect another), every queued
 * request fails with DOCRAFT_EUNAVAILABLE and every write already in a Raft
 * entry with DOCRAFT_ELEADERLOST (it may still commit). Nothing is ever left
 * hanging. Once raft is released (DOWN) the replica recovers with backoff
 * (tablet_recover.c).
 *
 * Close: tablet_close closes raft if it is open, waits for a running store
 * job or copy fetch, then closes the loop handles (in a chain: the tablet
 * embeds them), fails what is still queued, and closes the store in a last
 * store job; the close callback runs after it, and the tablet is freed
 * when the callback returns. */
#include "tablet/tablet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/mem.h"
#include "tablet/diskspace.h"
#include "tablet/tablet_int.h"

/* ---- life ------------------------------------------------------------------- */

const char *tablet_life_name(enum tablet_life l)
{
	static const char *const names[] = {
		[LIFE_OPEN] = "open", [LIFE_RUNNING] = "running",
		[LIFE_RAFT_CLOSING] = "raft closing", [LIFE_RAFT_RELEASING] = "raft releasing",
		[LIFE_DOWN] = "down", [LIFE_CLOSE_RAFT] = "closing (raft)",
		[LIFE_CLOSE_RELEASING] = "closing (raft releasing)", [LIFE_CLOSING] = "closing",
		[LIFE_CLOSED] = "closed",
	};
	return (size_t)l < sizeof names / sizeof names[0] ? names[l] : "?";
}

#define BIT(l) (1u << (l))

/* The states each state may go to (the diagram in tablet_int.h). */
static const unsigned life_next[] = {
	[LIFE_OPEN] = BIT(LIFE_RUNNING) | BIT(LIFE_RAFT_CLOSING) | BIT(LIFE_CLOSE_RAFT),
	[LIFE_RUNNING] = BIT(LIFE_RAFT_CLOSING) | BIT(LIFE_CLOSE_RAFT),
	[LIFE_RAFT_CLOSING] = BIT(LIFE_RAFT_RELEASING) | BIT(LIFE_CLOSE_RAFT),
	[LIFE_RAFT_RELEASING] = BIT(LIFE_DOWN) | BIT(LIFE_CLOSE_RELEASING),
	[LIFE_DOWN] = BIT(LIFE_OPEN) | BIT(LIFE_CLOSING),
	[LIFE_CLOSE_RAFT] = BIT(LIFE_CLOSE_RELEASING),
	[LIFE_CLOSE_RELEASING] = BIT(LIFE_CLOSING),
	[LIFE_CLOSING] = BIT(LIFE_CLOSED),
	[LIFE_CLOSED] = 0,
};

void tablet_life_set(struct tablet *t, enum tablet_life to)
{
	enum tablet_life from = t->life;
	ASSERT((size_t)from < sizeof life_next / sizeof life_next[0] &&
	       (life_next[from] & BIT(to)) != 0);
	t->life = to;
	/* After the change: the term is read from raft only while it is alive. */
	TLOG(LOG_LVL_DEBUG, t, "%s -> %s", tablet_life_name(from), tablet_life_name(to));
}

/* ---- helpers ------------------------------------------------------------- */

char *tablet_path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* 0.15 has no accessor; struct raft is public there (c-raft.md §2.9). */
uint64_t tablet_term(struct tablet *t)
{
	if (tablet_raft_alive(t))
		t->last_term = t->raft->current_term;
	return t->last_term;
}

int tablet_from_raft(int rv)
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

const char *tablet_role_name(enum tablet_role r)
{
	static const char *const names[] = {"follower", "candidate", "leader (not ready)",
					    "leader", "copying", "failed", "closed"};
	return (size_t)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

void tablet_options_default(struct tablet_options *o)
{
	static const struct tablet_options defaults = {
		.heartbeat_ms = 100,
		.election_ms = 1000,
		.snapshot_threshold = 4096,
		.snapshot_trailing = 8192,
		.max_clock_skew_us = 500000,
		.lease_ms = TABLET_LEASE_AUTO,
		.max_inflight = 1,
		.segment_bytes = TABLET_SEGMENT_BYTES,
		.max_entry_bytes = 4u << 20,
		.retry_ttl_us = RETRY_DEFAULT_TTL_US,
	};
	*o = defaults;
	store_options_default(&o->store);
}

/* ---- failure and queued requests -------------------------------------------- */

int tablet_admit(const struct tablet *t)
{
	if (tablet_closing(t) || t->role == TABLET_FAILED || t->role == TABLET_CLOSED)
		return DOCRAFT_ECLOSED;
	if (t->role == TABLET_COPYING)
		return DOCRAFT_EUNAVAILABLE;
	return 0;
}

void tablet_fail_queued(struct tablet *t, int status)
{
	struct tablet_write *w = t->wq_head;
	struct tablet_read *r = t->rq_head;
	t->wq_head = t->wq_tail = NULL;
	t->rq_head = t->rq_tail = NULL;
	while (w != NULL) {
		struct tablet_write *next = w->next_;
		tablet_write_answer(w, status, 0);
		w = next;
	}
	while (r != NULL) {
		struct tablet_read *next = r->next_;
		r->cb(r, status, 0);
		r = next;
	}
}

void tablet_fail(struct tablet *t, int code, const char *why)
{
	bool leader = t->role == TABLET_LEADER || t->role == TABLET_LEADER_NOT_READY;
	if (t->role == TABLET_FAILED || t->role == TABLET_CLOSED)
		return;
	TLOG(LOG_LVL_ERROR, t, "replica failed (%s)%s: %s", docraft_strerror(code),
	     leader ? ", the leader steps down" : "", why);
	snprintf(t->st.errmsg, sizeof t->st.errmsg, "%s: %s", docraft_strerror(code), why);
	t->st.failures++;
	t->role = TABLET_FAILED;
	/* With raft open, the poll closes it and its release schedules the
	 * recovery; without (a copy failed, a recovery attempt failed), now. */
	if (t->life == LIFE_DOWN)
		tablet_recover_schedule(t);
}

void tablet_disk_failed(struct tablet *t, int status, const char *what)
{
	char why[DOCRAFT_ERRMSG_SIZE + sizeof t->rio.io.errmsg];
	snprintf(why, sizeof why, "%s failed (%s)", what, t->rio.io.errmsg);
	tablet_fail(t, tablet_from_raft(status), why);
}

/* ---- open / bootstrap / start -------------------------------------------- */

int tablet_offer_copies(struct tablet *t, char *errmsg)
{
	int rv;
	if (t->o.copy == NULL)
		return 0;
	if ((rv = copy_server_register(t->o.copy, t->id, t->store, errmsg)) == 0)
		copy_server_set_member_check(t->o.copy, t->id, tablet_membership_copy_check, t);
	return rv;
}

static void poll_cb(uv_prepare_t *h);

/* The memory tablet_open allocates before anything can fail. */
static void free_paths(struct tablet *t)
{
	buf_free(&t->entry);
	buf_free(&t->replies);
	buf_free(&t->reply_lens);
	free(t->dir);
	free(t->address);
	free(t->raft_dir);
	free(t->db_dir);
	free(t->copy_dir);
}

int tablet_open(uv_loop_t *loop, const struct tablet_options *o, struct tablet **out,
		char *errmsg)
{
	struct tablet *t;
	int rv;

	*out = NULL;
	if (o->id == NULL || *o->id == '\0' || strlen(o->id) > LISTENER_TABLET_ID_MAX ||
	    o->dir == NULL || o->address == NULL || o->raft_id == 0 ||
	    (o->listener == NULL && o->raft_host == NULL)) {
		store_close(o->opened_store); /* NULL: a no-op */
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: id (1..%d characters), dir, "
			       "address, listener (or a raft host) and raft id are required",
			       o->id != NULL ? o->id : "", LISTENER_TABLET_ID_MAX);
	}
	t = xzalloc(sizeof *t);
	t->life = LIFE_DOWN; /* no raft instance yet */
	t->loop = loop;
	t->o = *o;
	snprintf(t->id, sizeof t->id, "%s", o->id);
	t->dir = xstrdup(o->dir);
	t->address = xstrdup(o->address);
	t->raft_dir = tablet_path_join(o->dir, "raft");
	t->db_dir = tablet_path_join(o->dir, "db");
	t->copy_dir = tablet_path_join(o->dir, "db.copy");
	t->o.id = t->id;
	t->o.dir = t->dir;
	t->o.address = t->address;
	if (t->o.max_entry_bytes == 0 || t->o.max_entry_bytes > ENTRY_MAX_BYTES)
		t->o.max_entry_bytes = ENTRY_MAX_BYTES;
	if (t->o.max_inflight == 0)
		t->o.max_inflight = 1;
	if (t->o.segment_bytes == 0)
		t->o.segment_bytes = TABLET_SEGMENT_BYTES;
	hlc_init(&t->hlc, o->max_clock_skew_us ? o->max_clock_skew_us : 500000,
		 o->raft_host != NULL ? o->raft_host->hlc_clock_us : NULL, o->raft_host);
	{
		uint64_t max_ms = (uint64_t)(o->election_ms ? o->election_ms : 1000) * 7 / 10;
		uint64_t ms = o->lease_ms > max_ms ? max_ms : o->lease_ms;
		t->lease_ns = ms * 1000000u;
	}
	buf_init(&t->entry);
	buf_init(&t->replies);
	buf_init(&t->reply_lens);

	t->o.opened_store = NULL;
	if (o->opened_store != NULL)
		t->store = o->opened_store;
	else if ((rv = tablet_prepare(o, &t->store, errmsg)) != 0)
		goto err;
	if ((rv = tablet_fsm_init(&t->fsm, t->id, t->store, &t->hlc, errmsg)) != 0)
		goto err_store;
	retry_set_ttl(&t->fsm.retry, o->retry_ttl_us);
	store_applied(t->store, &t->st.flushed_index, NULL);
	if ((rv = tablet_offer_copies(t, errmsg)) != 0)
		goto err_store;
	if ((rv = tablet_raft_setup(t, errmsg)) != 0) {
		if (t->o.copy != NULL)
			copy_server_unregister(t->o.copy, t->id);
		goto err_store;
	}
	uv_timer_init(loop, &t->copy_timer);
	uv_timer_init(loop, &t->log_timer);
	uv_prepare_init(loop, &t->poll);
	t->copy_timer.data = t->log_timer.data = t->poll.data = t;
	uv_prepare_start(&t->poll, poll_cb);
	TLOG(LOG_LVL_INFO, t, "opened: raft id %llu at %s, store applied index %" PRIu64,
	     (unsigned long long)o->raft_id, t->address, t->st.flushed_index);
	*out = t;
	return 0;

err_store:
	tablet_fsm_close(&t->fsm);
	store_close(t->store);
err:
	free_paths(t);
	free(t);
	return rv;
}

int tablet_prepare(const struct tablet_options *o, struct store **out, char *errmsg)
{
	char *raft_dir = tablet_path_join(o->dir, "raft");
	char *db_dir = tablet_path_join(o->dir, "db");
	char *copy_dir = tablet_path_join(o->dir, "db.copy");
	int rv;

	*out = NULL;
	if ((rv = fs_mkdir_p(o->dir, errmsg)) == 0 &&
	    (o->raft_log != NULL || o->raft_host != NULL ||
	     (rv = fs_mkdir_p(raft_dir, errmsg)) == 0)) {
		fs_remove_tree(copy_dir); /* a copy interrupted by a crash */
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
	rv = raft_bootstrap(t->raft, &conf);
	raft_configuration_close(&conf);
	if (rv == RAFT_CANTBOOTSTRAP)
		return 0;
	if (rv != 0)
		return err_set(errmsg, tablet_from_raft(rv), "tablet %s: bootstrap: %s", t->id,
			       raft_errmsg(t->raft));
	return 0;
}

int tablet_start(struct tablet *t, char *errmsg)
{
	int rv;
	if (tablet_closing(t) || t->role == TABLET_FAILED)
		return err_set(errmsg, DOCRAFT_ECLOSED, "tablet %s is closed", t->id);
	rv = raft_start(t->raft);
	if (rv != 0)
		return err_set(errmsg, tablet_from_raft(rv), "tablet %s: raft_start: %s", t->id,
			       raft_errmsg(t->raft));
	tablet_life_set(t, LIFE_RUNNING);
	t->fsm.log_last_at_start = raft_last_index(t->raft);
	/* Before the crash this replica may have stored an entry that gave a
	 * leader its lease: no vote until that lease has surely run out. A
	 * log holding only the bootstrap configuration never stored one. */
	if (t->lease_ns != 0 && t->fsm.log_last_at_start > 1)
		rio_set_vote_quiet(&t->rio, t->o.election_ms);
	TLOG(LOG_LVL_INFO, t, "started: log ends at %" PRIu64 ", store at %" PRIu64,
	     t->fsm.log_last_at_start, t->st.flushed_index);
	return 0;
}

/* ---- the poll ----------------------------------------------------------------- */

static void poll_cb(uv_prepare_t *h)
{
	struct tablet *t = h->data;
	char why[DOCRAFT_ERRMSG_SIZE];
	tablet_write_answer_done(t);
	if (t->life != LIFE_OPEN && t->life != LIFE_RUNNING && t->life != LIFE_RAFT_CLOSING)
		return;
	if (t->fsm.failed)
		tablet_fail(t, DOCRAFT_EIO, t->fsm.errmsg);
	/* A log write that failed: a follower would stay behind (0.15 just
	 * does not ack, and raft_uv fails every later write too), a leader
	 * would go on without a durable log. */
	if (t->rio.n_append_errors > 0)
		tablet_disk_failed(t, t->rio.last_append_error, "a Raft log write");
	/* Before raft_uv must allocate a segment on a full disk (diskspace.h). */
	if (t->role != TABLET_FAILED && diskspace_below_floor(t->o.disk, why, sizeof why))
		tablet_fail(t, DOCRAFT_ENOSPC, why);
	if (t->fsm.copy_min_index != 0 && t->role != TABLET_COPYING && t->role != TABLET_FAILED)
		tablet_recover_copy(t);
	if (t->role == TABLET_FAILED) {
		tablet_fail_queued(t, DOCRAFT_EUNAVAILABLE);
		tablet_raft_close(t, false);
		return;
	}
	if (t->role == TABLET_COPYING || t->life != LIFE_RUNNING)
		return;
	if (!tablet_membership_follow(t))
		return;
	if (t->role == TABLET_LEADER) {
		tablet_write_propose(t);
		tablet_read_serve(t);
	} else if (t->role != TABLET_LEADER_NOT_READY) {
		tablet_fail_queued(t, DOCRAFT_ENOTLEADER);
	}
	tablet_raft_snapshots(t);
	tablet_write_answer_done(t);
}

/* ---- state ------------------------------------------------------------------ */

raft_id tablet_leader(struct tablet *t, const char **address)
{
	raft_id id = 0;
	const char *a = NULL;
	/* Only a started raft knows one (raft_close makes it UNAVAILABLE). */
	if (t->life == LIFE_RUNNING)
		raft_leader(t->raft, &id, &a);
	if (address != NULL)
		*address = a != NULL ? a : "";
	return id;
}

bool tablet_configuration(struct tablet *t, const struct raft_configuration **conf,
			  uint64_t *index)
{
	if (tablet_closing(t) || !tablet_raft_alive(t) || t->raft->configuration.n == 0)
		return false;
	*conf = &t->raft->configuration;
	*index = t->raft->configuration_uncommitted_index != 0
			 ? t->raft->configuration_uncommitted_index
			 : t->raft->configuration_index;
	return true;
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
	st->leader_changes = t->epoch;
	st->pending_writes = 0;
	for (const struct tablet_write *w = t->wq_head; w != NULL; w = w->next_)
		st->pending_writes++;
	for (const struct inflight *f = t->if_head; f != NULL; f = f->next)
		for (const struct tablet_write *w = f->writes; w != NULL; w = w->next_)
			st->pending_writes++;
	st->pending_reads = 0;
	for (const struct tablet_read *r = t->rq_head; r != NULL; r = r->next_)
		st->pending_reads++;
	st->retry_records = t->fsm.retry.nrecords;
	st->guard_dropped = 0;
	for (int i = 0; i < RIO_DROP_COUNT; i++)
		st->guard_dropped += t->rio.n_guard[i];
	st->term = tablet_term(t);
	st->leader_id = tablet_leader(t, &a);
	snprintf(st->leader_address, sizeof st->leader_address, "%s", a);
	if (tablet_raft_alive(t)) {
		st->last_index = raft_last_index(t->raft);
		st->applied_index = raft_last_applied(t->raft);
		st->commit_index = t->raft->commit_index;
		/* 0.15 has no accessor; struct raft_log is public in raft.h */
		st->first_index = t->raft->log.offset + 1;
	}
	{
		uint64_t now = tablet_read_clock(t);
		st->lease_left_ms =
			tablet_read_lease_held(t, now) ? (t->lease_until - now) / 1000000u : 0;
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
	tablet_life_set(t, LIFE_CLOSED);
	TLOG(LOG_LVL_INFO, t, "closed");
	free_paths(t);
	t->role = TABLET_CLOSED;
	if (cb != NULL)
		cb(t, arg);
	free(t);
}

/* The last handle has closed. */
static void poll_closed(struct tablet *t)
{
	tablet_write_answer_done(t);
	tablet_fail_queued(t, DOCRAFT_ECLOSED);
	tablet_fsm_close(&t->fsm);
	/* The store (NULL after a failed copy swap) closes off the loop: a
	 * deleted tablet's memtables may be large. */
	tablet_recover_job(t, false, false, close_finished);
}

/* libuv finishes closes in reverse order: chain them (copy_timer, then
 * log_timer, then poll) so the tablet, which embeds the handles, is freed
 * only after the last one. */
static void handle_closed(uv_handle_t *h)
{
	struct tablet *t = h->data;
	if (h == (uv_handle_t *)&t->copy_timer)
		uv_close((uv_handle_t *)&t->log_timer, handle_closed);
	else if (h == (uv_handle_t *)&t->log_timer)
		uv_close((uv_handle_t *)&t->poll, handle_closed);
	else
		poll_closed(t);
}

void tablet_close_handles(struct tablet *t)
{
	PRE(t->life == LIFE_CLOSING);
	uv_close((uv_handle_t *)&t->copy_timer, handle_closed);
}

void tablet_close(struct tablet *t, tablet_close_cb cb, void *arg)
{
	PRE(!tablet_closing(t));
	t->close_cb = cb;
	t->close_arg = arg;
	if (t->o.copy != NULL)
		copy_server_unregister(t->o.copy, t->id);
	switch (t->life) {
	case LIFE_OPEN:
	case LIFE_RUNNING:
		tablet_raft_close(t, true); /* its release goes on with the close */
		return;
	case LIFE_RAFT_CLOSING:
		tablet_life_set(t, LIFE_CLOSE_RAFT);
		return;
	case LIFE_RAFT_RELEASING:
		tablet_life_set(t, LIFE_CLOSE_RELEASING);
		return;
	default: /* DOWN: a store job, a fetch or a timer may run */
		break;
	}
	tablet_life_set(t, LIFE_CLOSING);
	uv_timer_stop(&t->copy_timer);
	if (t->store_job != NULL)
		return; /* its callback finishes the close (job_take_store) */
	if (t->copy_req.impl != NULL) {
		/* A fetch runs: its callback finishes the close. */
		copy_fetch_cancel(&t->copy_req);
		return;
	}
	tablet_close_handles(t);
}
