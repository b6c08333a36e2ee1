/* A tablet replica without its raft instance (life DOWN): store jobs on the
 * threadpool, the checkpoint copy, and the recovery of a FAILED replica.
 *
 * Design.
 *
 * Store jobs (issue 12, nothing long on the loop thread). Closing a RocksDB
 * instance (waiting for its background jobs, freeing its memtables),
 * installing a checkpoint copy (renames, removing the old store) and
 * opening one take from tens of ms to seconds: they run on libuv's
 * threadpool as one store_job, never on the loop. A job runs only while
 * raft is closed (DOWN: copy install, recovery) or gone (CLOSING), so no
 * apply, snapshot or copy-server read can touch the store meanwhile; the
 * tablet holds no store (t->store NULL: the service answers EUNAVAILABLE
 * for it), stays COPYING / FAILED so requests are answered retryably
 * (tablet_admit refuses them), and continues in the job's after-callback
 * on the loop. tablet_close waits for a running job (its after-callback
 * finishes the close), and the close itself ends with a job that closes
 * the store, for a deletion as at shutdown: the manager waits for the close
 * callback either way.
 *
 * Checkpoint copy. A restore found the store behind raft's snapshot: raft
 * no longer has the entries this replica lacks. The replica goes COPYING,
 * closes its raft instance, copies a checkpoint of the leader's store
 * (remote_copy.h; the leader flushed up to the snapshot before sending it,
 * so its checkpoint holds at least that much), swaps it in for its own
 * store, and starts raft again on the same raft directory: raft restores
 * the snapshot (now at or below the store's marker) and the leader sends
 * what follows.
 *
 *   poll: copy needed ─► COPYING, raft_close ─► released ─► fetch ─┐
 *         ┌── retry after COPY_RETRY_MS (at most COPY_MAX_ATTEMPTS) ◄┤ failed,
 *         │                                                          │ or too old
 *         └─► fetch ─► store job: close, install, open ─► raft_setup, start
 *
 * Recovery: a FAILED replica whose raft instance has closed retries on a
 * timer with exponential backoff (RECOVER_FIRST_MS doubling to
 * RECOVER_MAX_MS): it closes its store (RocksDB stays read-only after a
 * failed background flush, and 7.8's C API has no Resume) and reopens it,
 * then restarts raft on the same directory, which replays the log from the
 * store's flushed marker. An attempt that fails schedules the next one; the
 * backoff starts over once the replica stayed up for RECOVER_RESET_MS. Below
 * the disk's free-space reserve an attempt is postponed (diskspace.h). */
#include <errno.h>
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

/* ---- store jobs ------------------------------------------------------------- */

struct store_job {
	uv_work_t work;
	struct tablet *t;
	struct store *close; /* closed first (NULL: none) */
	bool install;        /* then dir/db.copy replaces dir/db */
	bool open;           /* then dir/db is opened into opened */
	tablet_job_cb done;  /* on the loop; the job is freed after it */
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
		char *old = tablet_path_join(t->dir, "db.old");
		fs_remove_tree(old);
		if (rename(t->db_dir, old) != 0 || rename(t->copy_dir, t->db_dir) != 0)
			j->rv = err_set(j->errmsg, DOCRAFT_EIO, "cannot install the copy: %s",
					strerror(errno));
		else
			fs_remove_tree(old);
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

/* libuv's uv_queue_work only fails for a NULL work callback: a bug, not a
 * path. */
void tablet_recover_job(struct tablet *t, bool install, bool open, tablet_job_cb done)
{
	struct store_job *j = xzalloc(sizeof *j);
	int rv;
	PRE((t->life == LIFE_DOWN || t->life == LIFE_CLOSING) && t->store_job == NULL);
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

/* The start of a job's after-callback on the loop: true once the store the
 * job opened is the tablet's and the fsm's. False if the tablet closes (it
 * keeps that store for the close to close, and the close goes on), or if
 * the job or the handover failed: a copy's install then fails the replica,
 * a recovery attempt schedules the next one. */
static bool job_take_store(struct tablet *t, struct store_job *j)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;
	t->store = j->opened;
	if (tablet_closing(t)) {
		tablet_close_handles(t);
		return false;
	}
	if ((rv = j->rv) != 0)
		snprintf(errmsg, sizeof errmsg, "%s", j->errmsg);
	else if ((rv = tablet_fsm_set_store(&t->fsm, t->store, errmsg)) == 0)
		return true;
	if (j->install) {
		tablet_fail(t, rv, errmsg);
	} else {
		TLOG(LOG_LVL_WARN, t, "recovery attempt %u failed: %s", t->recover_attempts,
		     errmsg);
		tablet_recover_schedule(t);
	}
	return false;
}

/* ---- checkpoint copy -------------------------------------------------------- */

#define COPY_MAX_ATTEMPTS 10
#define COPY_RETRY_MS 1000

static void copy_timer_cb(uv_timer_t *h)
{
	struct tablet *t = h->data;
	if (!tablet_closing(t))
		tablet_recover_fetch(t);
}

static void raft_restart_after_copy(struct tablet *t)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;
	if ((rv = tablet_offer_copies(t, errmsg)) != 0)
		TLOG(LOG_LVL_WARN, t, "cannot offer the store for copies: %s", errmsg);
	if ((rv = tablet_raft_setup(t, errmsg)) != 0 || (rv = tablet_start(t, errmsg)) != 0) {
		tablet_fail(t, rv, errmsg);
		return;
	}
	t->role = TABLET_FOLLOWER;
}

static void copy_installed(struct tablet *t, struct store_job *j)
{
	uint64_t applied_index = 0;
	if (!job_take_store(t, j))
		return;
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
	if (tablet_closing(t)) {
		fs_remove_tree(t->copy_dir);
		tablet_close_handles(t);
		return;
	}
	if (status != 0) {
		TLOG(LOG_LVL_WARN, t, "checkpoint copy from %s failed (attempt %u): %s",
		     t->copy_source, t->copy_attempts, msg);
		if (t->copy_attempts >= COPY_MAX_ATTEMPTS) {
			tablet_fail(t, status, "checkpoint copy failed too often");
			return;
		}
		uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
		return;
	}
	if (applied_index < t->fsm.copy_min_index) {
		TLOG(LOG_LVL_WARN, t, "copy holds index %" PRIu64 ", need %" PRIu64 ": again",
		     applied_index, t->fsm.copy_min_index);
		fs_remove_tree(t->copy_dir);
		uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
		return;
	}
	/* Swap the copy in, off the loop; the replica stays COPYING. */
	tablet_recover_job(t, true, true, copy_installed);
}

void tablet_recover_fetch(struct tablet *t)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;
	t->copy_attempts++;
	fs_remove_tree(t->copy_dir);
	memset(&t->copy_req, 0, sizeof t->copy_req);
	t->copy_req.data = t;
	rv = copy_fetch(t->loop, t->copy_source, t->id, t->copy_dir, &t->copy_req, copy_done,
			errmsg);
	if (rv != 0) {
		TLOG(LOG_LVL_WARN, t, "cannot start a checkpoint copy: %s", errmsg);
		if (t->copy_attempts >= COPY_MAX_ATTEMPTS)
			tablet_fail(t, rv, errmsg);
		else
			uv_timer_start(&t->copy_timer, copy_timer_cb, COPY_RETRY_MS, 0);
	}
}

void tablet_recover_copy(struct tablet *t)
{
	const char *leader = NULL;
	raft_id id = 0;
	raft_leader(t->raft, &id, &leader);
	if (id == 0 || leader == NULL || id == t->o.raft_id)
		return; /* wait until a leader is known */
	snprintf(t->copy_source, sizeof t->copy_source, "%s", leader);
	TLOG(LOG_LVL_WARN, t, "copying a checkpoint from leader %llu at %s (need index %" PRIu64 ")",
	     (unsigned long long)id, leader, t->fsm.copy_min_index);
	t->role = TABLET_COPYING;
	t->copy_attempts = 0;
	tablet_fail_queued(t, DOCRAFT_EUNAVAILABLE);
	tablet_raft_close(t, false); /* once released: tablet_recover_fetch */
}

/* ---- recovery of a FAILED replica ------------------------------------------- */

#define RECOVER_FIRST_MS TABLET_RECOVER_FIRST_MS
#define RECOVER_MAX_MS TABLET_RECOVER_MAX_MS
#define RECOVER_RESET_MS 60000u

static void recovered(struct tablet *t, struct store_job *j)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t flushed = 0;
	int rv;
	if (!job_take_store(t, j))
		return;
	t->fsm.failed = false;
	t->fsm.errmsg[0] = '\0';
	store_applied(t->store, &flushed, NULL);
	if ((rv = tablet_offer_copies(t, errmsg)) != 0)
		TLOG(LOG_LVL_WARN, t, "cannot offer the store for copies: %s", errmsg);
	if ((rv = tablet_raft_setup(t, errmsg)) != 0) {
		TLOG(LOG_LVL_WARN, t, "recovery attempt %u failed: %s", t->recover_attempts,
		     errmsg);
		tablet_recover_schedule(t);
		return;
	}
	t->role = TABLET_FOLLOWER;
	if ((rv = tablet_start(t, errmsg)) != 0) {
		tablet_fail(t, rv, errmsg); /* raft is open: the poll closes it, then again */
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
		tablet_recover_schedule(t);
		return;
	}
	if (t->o.copy != NULL)
		copy_server_unregister(t->o.copy, t->id);
	tablet_recover_job(t, false, true, recovered);
}

static void recover_timer_cb(uv_timer_t *h)
{
	struct tablet *t = h->data;
	if (t->life == LIFE_DOWN && t->role == TABLET_FAILED)
		recover(t);
}

void tablet_recover_schedule(struct tablet *t)
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
