/* What the pieces of one tablet replica share: struct tablet, its lifecycle
 * state, and the internals each file offers the others. Included only by
 * src/tablet/tablet*.c (the public contract is tablet.h).
 *
 *   tablet.c             lifecycle: open, bootstrap, start, the poll, failure,
 *                        status, close
 *   tablet_raft.c        the raft instance: setup on the shared log or
 *                        raft_uv, close and release, Raft log memory and
 *                        snapshots
 *   tablet_write.c       the write path: queue, group commit, apply callbacks
 *   tablet_read.c        the read path: leader leases, barriers, safe time
 *   tablet_membership.c  leadership, configuration changes, transfers, peer
 *                        checks
 *   tablet_recover.c     the store off the loop: store jobs, checkpoint copy,
 *                        recovery of a FAILED replica
 *
 * Threading: everything here runs on the tablet's loop thread, except
 * tablet_recover.c's store-job work function (it says what it touches). */
#ifndef DOCRAFT_TABLET_TABLET_INT_H
#define DOCRAFT_TABLET_TABLET_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/buf.h"
#include "common/hlc.h"
#include "common/log.h"
#include "net/listener.h"
#include "raft/rio.h"
#include "raft/rnet.h"
#include "raftlog/raftlog.h"
#include "tablet/fsm.h"
#include "tablet/remote_copy.h"
#include "tablet/tablet.h"

/* ---- the lifecycle of a replica's instance -------------------------------
 *
 * One state, changed only through tablet_life_set, which ASSERTs that the
 * transition is one of these (our own invariant, not input):
 *
 *            tablet_open
 *                 │ raft_setup
 *   ┌────────► OPEN ──tablet_start──► RUNNING
 *   │ raft_setup  │ raft_close          │ raft_close (FAILED, COPYING)
 *   │ (copy,      └──────► RAFT_CLOSING ◄┘
 *   │  recovery)                │ raft_closed
 *   │                     RAFT_RELEASING   (per-tablet: raft_uv kept until
 *   │                           │           its writers have closed)
 *   └──────────────────── DOWN ◄┘ raft_released
 *      (no raft instance: fetching or installing a copy, or FAILED
 *       waiting for / running a recovery)
 *
 * tablet_close from any of these (once) enters the closing branch:
 *
 *   OPEN, RUNNING, RAFT_CLOSING ──► CLOSE_RAFT ──raft_closed──►
 *   RAFT_RELEASING ──────────────► CLOSE_RELEASING ──raft_released──►
 *   DOWN ────────────────────────► CLOSING ──handles, store job──► CLOSED
 *
 * The raft instance's memory is valid in OPEN, RUNNING, RAFT_CLOSING and
 * CLOSE_RAFT (tablet_raft_alive); raft is started only in RUNNING. The
 * role (enum tablet_role) is the other half of the state: what the replica
 * is to its group (follower ... leader, COPYING, FAILED), as the poll
 * learns it from raft. */
enum tablet_life {
	LIFE_OPEN,
	LIFE_RUNNING,
	LIFE_RAFT_CLOSING,
	LIFE_RAFT_RELEASING,
	LIFE_DOWN,
	/* the closing branch last (tablet_closing) */
	LIFE_CLOSE_RAFT,
	LIFE_CLOSE_RELEASING,
	LIFE_CLOSING,
	LIFE_CLOSED,
};

struct transfer;
struct store_job;

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
	enum tablet_life life;      /* tablet_life_set only */

	struct store *store;
	struct raft *raft;          /* &raft_mem, or the host's (o.raft_host) */
	struct raft raft_mem;       /* raft on the shared and per-tablet logs */
	const struct tablet_log_ops *log_ops; /* which Raft io (tablet_raft.c) */
	struct raft_io uvio;        /* per-tablet log: raft_uv in raft_dir */
	struct rnet rnet;           /* shared log: the network half ... */
	struct raftlog_io logio;    /* ... and the group's io on o.raft_log */
	struct rio rio;             /* the guard around uvio or logio */
	struct raft_uv_transport transport;
	struct tablet_fsm fsm;

	struct hlc hlc;
	struct buf entry;   /* scratch */
	struct buf replies; /* scratch: the kept replies of a retried Redis write */
	struct buf reply_lens; /* ... their lengths (uint32_t) */

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
	 * lease_until (tablet_read_clock ns). */
	uint64_t lease_ns;          /* 0: leases off */
	uint64_t lease_until;       /* 0: no lease */
	bool lease_void;            /* this leadership started a transfer */
	bool lease_used;            /* reads served since the last renewal */

	bool snapshot_requested;
	bool snapshot_barrier;      /* a barrier to trigger it is in flight */
	uint64_t last_term;         /* term when raft was last alive (logs) */
	struct transfer *transfers; /* freed after raft closes */
	struct tablet_status st;

	/* Checkpoint copy (role COPYING). */
	char copy_source[256];      /* address of the replica copied from */
	char *copy_dir;             /* dir/db.copy */
	struct copy_fetch copy_req;
	uv_timer_t copy_timer;      /* retry delay (copies, and recovery) */
	uv_timer_t log_timer;       /* raft_closed waits on it for raft_uv
				       (per-tablet log only) */
	uint64_t log_wait_since;    /* uv_now when that wait started */
	unsigned copy_attempts;

	/* The store being closed, swapped or reopened on the threadpool
	 * (tablet_recover.c); t->store is NULL meanwhile. */
	struct store_job *store_job;

	/* Recovery of a FAILED replica (tablet_recover.c). */
	unsigned recover_attempts;  /* since the backoff last started over */
	uint64_t recovered_at;      /* uv_now of the last recovery */

	tablet_close_cb close_cb;
	void *close_arg;
};

/* ---- tablet.c: lifecycle ------------------------------------------------- */

/* Moves t to state to; ASSERTs that the transition is in the diagram above
 * and logs it at DEBUG. */
void tablet_life_set(struct tablet *t, enum tablet_life to);
/* The state's name, for logs. */
const char *tablet_life_name(enum tablet_life l);

/* raft_init done and raft_closed not yet: raft's memory may be read. */
static inline bool tablet_raft_alive(const struct tablet *t)
{
	return t->life == LIFE_OPEN || t->life == LIFE_RUNNING ||
	       t->life == LIFE_RAFT_CLOSING || t->life == LIFE_CLOSE_RAFT;
}

/* tablet_close was called. */
static inline bool tablet_closing(const struct tablet *t)
{
	return t->life >= LIFE_CLOSE_RAFT;
}

/* a "/" b in a new string (free it). */
char *tablet_path_join(const char *a, const char *b);

/* The term as raft knows it (the last one seen once raft is gone): logs and
 * status only. */
uint64_t tablet_term(struct tablet *t);

#define TLOG(level, t, ...) LOG_AT(level, (t)->id, tablet_term(t), __VA_ARGS__)

/* The one place where raft codes become docraft codes. */
int tablet_from_raft(int rv);

/* A raft status saying that this replica's own disk write failed. */
static inline bool tablet_disk_error(int status)
{
	return status == RAFT_IOERR || status == RAFT_NOSPACE || status == RAFT_CORRUPT;
}

/* Marks the replica FAILED (logged, counted, errmsg kept for the status);
 * a no-op if it is FAILED or CLOSED already. With no raft instance (DOWN)
 * the recovery is scheduled at once; else once raft has been closed by the
 * poll (tablet_raft.c schedules it once raft is released). */
void tablet_fail(struct tablet *t, int code, const char *why);
/* tablet_fail for a failed Raft log write (status: its raft code). */
void tablet_disk_failed(struct tablet *t, int status, const char *what);

/* Whether a new request may be queued: 0, DOCRAFT_ECLOSED (closing, FAILED
 * or CLOSED) or DOCRAFT_EUNAVAILABLE (COPYING). */
int tablet_admit(const struct tablet *t);

/* Answers every queued (not proposed) write and read with status. */
void tablet_fail_queued(struct tablet *t, int status);

/* Registers the store with the copy server, if any (and its member check). */
int tablet_offer_copies(struct tablet *t, char *errmsg);

/* CLOSING (PRE), once nothing else runs (raft released, no store job, no
 * fetch): closes the loop handles, fails what is still queued, closes the
 * store (a store job), then calls the close callback and frees t. */
void tablet_close_handles(struct tablet *t);

/* ---- tablet_raft.c: the raft instance ----------------------------------- */

/* The three Raft ios a replica may have, behind one seam (tablet_raft.c):
 * the group of the server's shared log (o.raft_log set), a raft_uv of its
 * own, or a raft instance its host owns (o.raft_host: raft_fixture). */
struct tablet_log_ops;

/* DOWN -> OPEN: the shared-port transport, the replica's Raft io on it (its
 * group of the shared log with rnet, or raft_uv in raft_dir) behind the
 * rio guard, raft_init with the options' timeouts (not started); with a
 * raft host, the host's raft instance, its io wrapped by rio. On error
 * nothing is left open and the state stays DOWN. */
int tablet_raft_setup(struct tablet *t, char *errmsg);
/* From OPEN or RUNNING (else a no-op): to RAFT_CLOSING (for_close:
 * tablet_close's CLOSE_RAFT), then raft_close, whose pending requests fire
 * their callbacks from inside it; raft_closed, then the release of the
 * Raft io, continue on later loop turns (RAFT_RELEASING, then DOWN: the copy fetch
 * or the recovery starts; when closing, the close). */
void tablet_raft_close(struct tablet *t, bool for_close);
/* From the poll of a live raft: requests a snapshot when the Raft log holds
 * half of the replica's memory share, and drives a requested one. */
void tablet_raft_snapshots(struct tablet *t);

/* ---- tablet_write.c: the write path ------------------------------------- */

/* Answers w and every retry waiting for it (dups_). */
void tablet_write_answer(struct tablet_write *w, int status, uint64_t ht);
/* Answers the writes the proposer found decided (t->done). */
void tablet_write_answer_done(struct tablet *t);
/* READY leader only: queued writes into Raft entries (group commit). */
void tablet_write_propose(struct tablet *t);

/* ---- tablet_read.c: leases and the read path ---------------------------- */

/* The lease clock in ns: CLOCK_BOOTTIME, never the loop's cached time; a
 * raft host's clock if it has one (virtual time on raft_fixture). */
uint64_t tablet_read_clock(const struct tablet *t);
/* An entry proposed at sent_ns in leadership epoch has committed. */
void tablet_read_lease_extend(struct tablet *t, uint64_t epoch, uint64_t sent_ns);
/* A ready leader whose lease runs past now. */
bool tablet_read_lease_held(const struct tablet *t, uint64_t now);
/* A new leadership, or none: no lease until an entry of the new one commits. */
void tablet_read_lease_drop(struct tablet *t);
/* A barrier request stamped with this leadership and the time (before the
 * raft call: never later than the entry). Free it if raft refuses it. */
struct barrier *tablet_read_barrier_new(struct tablet *t);
/* READY leader only: answers queued reads under the lease or with one
 * barrier for all, and renews a lease that reads use. */
void tablet_read_serve(struct tablet *t);

/* ---- tablet_membership.c: leadership and membership --------------------- */

/* From the poll of a started raft: follows raft_state into the role
 * (becoming leader: the leader barrier; losing it: queued requests fail).
 * False if the raft group became unavailable (the replica FAILED, its raft
 * closing): the poll stops there. */
bool tablet_membership_follow(struct tablet *t);
/* The listener's peer check of this replica's Raft connections. */
bool tablet_membership_raft_check(void *arg, uint64_t id, const char *address,
				  const struct sockaddr_in *peer);
/* The copy server's member check of this replica's COPY connections. */
bool tablet_membership_copy_check(void *arg, const struct sockaddr_in *peer);
/* Once raft has closed: frees the transfer requests raft may have used. */
void tablet_membership_free_transfers(struct tablet *t);

/* ---- tablet_recover.c: the store off the loop --------------------------- */

typedef void (*tablet_job_cb)(struct tablet *t, struct store_job *j);

/* DOWN or CLOSING (PRE): takes t->store away (closed on the threadpool),
 * then dir/db.copy replaces dir/db (install) and dir/db is opened (open);
 * done runs on the loop with the outcome (struct store_job, private to
 * tablet_recover.c: copy installs and recoveries read it there; the close's
 * done ends the close). The job is freed after done returns. */
void tablet_recover_job(struct tablet *t, bool install, bool open, tablet_job_cb done);
/* The poll found the store behind raft's snapshot: once a leader is known,
 * the replica goes COPYING and closes its raft instance. */
void tablet_recover_copy(struct tablet *t);
/* Raft released for a copy: the checkpoint fetch starts. */
void tablet_recover_fetch(struct tablet *t);
/* DOWN and FAILED: the next recovery attempt after the backoff. */
void tablet_recover_schedule(struct tablet *t);

#endif
