/* The raft instance of a tablet replica: its setup on one of two Raft ios,
 * its close and release, and the bound on the memory of its log.
 *
 * Design.
 *
 * Setup (DOWN -> OPEN): the shared-port transport (raft/transport.h), the
 * replica's Raft io on it, the rio guard around that io (raft/rio.h),
 * raft_init with the fsm (fsm.h) and the options' timeouts, pre-vote on.
 * The same group is set up again after a checkpoint copy and on every
 * recovery (tablet_recover.c). The Raft io is one of three, behind a seam
 * (struct tablet_log_ops: setup, close, release); everything else is one
 * path:
 *
 *   shared      (o.raft_log set, the tserver's default): rnet (raft/rnet.h)
 *               carries the messages over the transport, and raftlog_io
 *               (raftlog/raftlog.h) stores term, vote, entries and
 *               snapshots as group `id` of the server's one log. Release:
 *               raftlog_io_release, rnet_release, transport_close.
 *   per-tablet  (o.raft_log NULL, `--raft-log per-tablet`): raft_uv on
 *               dir/raft (auto-recovery off, o.segment_bytes segments),
 *               the transport its network. Release: raft_uv_close and
 *               transport_close, once raft_uv's writers have closed (below).
 *   hosted      (o.raft_host set; tests only): the host's struct raft,
 *               raft_init'ed on its io with our fsm (raft_fixture: the
 *               fixture owns the servers' struct raft and io, and its
 *               virtual clock is also the leases' clock, tablet_read.c);
 *               rio wraps that io in place (rio_wrap_fixture). No
 *               transport. The host closes raft (raft_fixture_close must
 *               be the only raft_close of a fixture server) and frees the
 *               io: close asks it to, release has nothing to do.
 *               tests/tablet/tablet_fixture.c is the host.
 *
 * Close: raft_close (RAFT_CLOSING, or CLOSE_RAFT when the tablet closes);
 * pending raft requests fire their callbacks from it. raft_closed
 * (RAFT_RELEASING / CLOSE_RELEASING) then releases the io. The shared log's
 * io has returned every append before raft's close callback (raftlog.h),
 * so it is released at once. raft_uv is not:
 *
 * raft_uv outlives its close callback (C-Raft 0.15 up to canonical/raft
 * 0.18.1; fixed in cowsql/raft#45): uvAppendClose starts closing the open
 * segment's writer, but uvMaybeFireCloseCb does not wait for it, so when
 * that writer waits for a write on the threadpool (raft_uv's EAGAIN
 * fallback), or the transport closes first, the close callback comes
 * first, and the writer's own close callback then calls uvMaybeFireCloseCb
 * on the struct uv that raft_uv_close freed, through uv->transport
 * (embedded here) and uv->io (close_tramp, made idempotent in rio.c). With
 * 300 busy replicas a tserver died so at SIGTERM (docs/benchmarks.md).
 *
 * So on the per-tablet path raft_uv's memory, and this tablet, are kept
 * until no raft_uv writer of this loop is part-way through closing: no
 * closing handle whose close callback, and no active check handle (a
 * writer waiting for its threadpool writes: UvWriterClose is raft_uv's
 * only uv_check_start) whose callback, lies in libraft. That is every raft
 * instance's, not only this one's (the handles do not say whose they are),
 * so the wait is conservative; such handles live one loop turn, or as long
 * as a segment write. uv_walk sees closing handles until just before their
 * close callback runs; close_cb and check_cb are libuv's own fields of the
 * handle (part of its ABI). Once released (DOWN / CLOSING): the close goes
 * on, a FAILED replica schedules its recovery, a COPYING one starts its
 * fetch.
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
#include <dlfcn.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/err.h"
#include "raft/segfill.h"
#include "raft/transport.h"
#include "tablet/tablet_int.h"

/* ---- setup: the seam between the three Raft ios ---------------------------- */

/* One kind of Raft io. setup makes t->raft (raft_init'ed, its io behind
 * the rio guard, not started) and returns 0, or leaves nothing and returns
 * the error. close is raft_close(t->raft, cb) or what stands for it.
 * release frees the io once raft's close callback has fired. */
struct tablet_log_ops {
	const char *name;                       /* logs */
	int (*setup)(struct tablet *t, char *errmsg);
	void (*close)(struct tablet *t, void (*cb)(struct raft *r));
	void (*release)(struct tablet *t);
	bool wait_writers;                      /* raft_uv's writers (see the top) */
};

/* Once per process: raft_uv's segments would stay unwritten (segfill.h). */
static void warn_unwritten_segments(struct tablet *t)
{
	static atomic_flag warned = ATOMIC_FLAG_INIT;
	if (segfill_enabled() && !segfill_active() && !atomic_flag_test_and_set(&warned))
		TLOG(LOG_LVL_WARN, t, "this executable does not export posix_fallocate: Raft "
				      "log segments stay unwritten and appends take raft_uv's "
				      "threadpool path (link it with raftglue_dep)");
}

/* The two ios on the shared-port transport: rio around io, raft_init into
 * the tablet's own struct raft. On error io is released (release(t)) and
 * the transport closed. */
static int raft_on_io(struct tablet *t, struct raft_io *io, void (*release)(struct tablet *),
		      char *errmsg)
{
	int rv;
	if ((rv = rio_wrap(&t->rio, io)) != 0) {
		release(t);
		return err_set(errmsg, DOCRAFT_EIO, "tablet %s: rio_wrap: %s", t->id,
			       raft_strerror(rv));
	}
	t->rio.log_id = t->id;
	transport_set_peer_check(&t->transport, tablet_membership_raft_check, t);
	t->raft = &t->raft_mem;
	rv = raft_init(t->raft, &t->rio.io, &t->fsm.fsm, t->o.raft_id, t->address);
	if (rv != 0) {
		err_set(errmsg, DOCRAFT_EIO, "tablet %s: raft_init: %s", t->id,
			rv == -1 ? "version mismatch" : raft_errmsg(t->raft));
		release(t);
		return DOCRAFT_EIO;
	}
	return 0;
}

static void per_tablet_release(struct tablet *t)
{
	raft_uv_close(&t->uvio);
	transport_close(&t->transport);
}

static int per_tablet_setup(struct tablet *t, char *errmsg)
{
	int rv;
	if ((rv = transport_init(&t->transport, t->o.listener, t->id, errmsg)) != 0)
		return rv;
	if ((rv = raft_uv_init(&t->uvio, t->loop, t->raft_dir, &t->transport)) != 0) {
		int code = tablet_from_raft(rv);
		transport_close(&t->transport);
		return err_set(errmsg, code ? code : DOCRAFT_EIO, "tablet %s: raft_uv_init: %s",
			       t->id, t->uvio.errmsg);
	}
	raft_uv_set_auto_recovery(&t->uvio, false);
	raft_uv_set_segment_size(&t->uvio, t->o.segment_bytes);
	warn_unwritten_segments(t);
	return raft_on_io(t, &t->uvio, per_tablet_release, errmsg);
}

static void shared_release(struct tablet *t)
{
	raftlog_io_release(&t->logio);
	rnet_release(&t->rnet);
	transport_close(&t->transport);
}

static int shared_setup(struct tablet *t, char *errmsg)
{
	int rv;
	if ((rv = transport_init(&t->transport, t->o.listener, t->id, errmsg)) != 0)
		return rv;
	if ((rv = rnet_init(&t->rnet, t->loop, &t->transport, errmsg)) != 0) {
		transport_close(&t->transport);
		return rv;
	}
	rnet_set_log_id(&t->rnet, t->id);
	if (t->o.raft_mux != NULL)
		rnet_set_mux(&t->rnet, t->o.raft_mux);
	if ((rv = raftlog_io_init(&t->logio, t->o.raft_log, t->id, &t->rnet.io, errmsg)) != 0) {
		rnet_release(&t->rnet);
		transport_close(&t->transport);
		return rv;
	}
	if ((rv = raft_on_io(t, &t->logio.io, shared_release, errmsg)) != 0)
		return rv;
	/* The log checks each append against raft's own last index. */
	raftlog_io_set_raft(&t->logio, t->raft);
	return 0;
}

static void own_close(struct tablet *t, void (*cb)(struct raft *r))
{
	raft_close(t->raft, cb);
}

/* The host's raft instance (tablet.h, struct tablet_raft_host): no
 * transport, no io of ours; the host closes raft and frees its io. */
static int hosted_setup(struct tablet *t, char *errmsg)
{
	struct tablet_raft_host *h = t->o.raft_host;
	struct raft *r = NULL;
	int rv;
	if ((rv = h->open(h, &t->o, &t->fsm.fsm, &r, errmsg)) != 0)
		return rv;
	if ((rv = rio_wrap_fixture(&t->rio, r)) != 0)
		return err_set(errmsg, DOCRAFT_EIO, "tablet %s: rio_wrap_fixture: %s", t->id,
			       raft_strerror(rv));
	t->rio.log_id = t->id;
	t->raft = r;
	return 0;
}

static void hosted_close(struct tablet *t, void (*cb)(struct raft *r))
{
	t->o.raft_host->close(t->o.raft_host, t->raft, cb);
}

static void hosted_release(struct tablet *t)
{
	(void)t;
}

static const struct tablet_log_ops per_tablet_ops = {"per-tablet", per_tablet_setup, own_close,
						      per_tablet_release, true};
static const struct tablet_log_ops shared_ops = {"shared", shared_setup, own_close,
						  shared_release, false};
static const struct tablet_log_ops hosted_ops = {"hosted", hosted_setup, hosted_close,
						  hosted_release, false};

int tablet_raft_setup(struct tablet *t, char *errmsg)
{
	int rv;
	t->log_ops = t->o.raft_host != NULL ? &hosted_ops
		     : t->o.raft_log != NULL ? &shared_ops
					     : &per_tablet_ops;
	if ((rv = t->log_ops->setup(t, errmsg)) != 0)
		return rv;
	raft_set_heartbeat_timeout(t->raft, t->o.heartbeat_ms);
	raft_set_election_timeout(t->raft, t->o.election_ms);
	raft_set_snapshot_threshold(t->raft, t->o.snapshot_threshold);
	raft_set_snapshot_trailing(t->raft, t->o.snapshot_trailing);
	raft_set_pre_vote(t->raft, true);
	tablet_fsm_bind(&t->fsm, t->raft);
	tablet_life_set(t, LIFE_OPEN);
	TLOG(LOG_LVL_DEBUG, t, "raft set up on the %s Raft log", t->log_ops->name);
	return 0;
}

/* ---- close and release (see the top) ----------------------------------------- */

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

static void raft_released(struct tablet *t)
{
	tablet_membership_free_transfers(t);
	t->log_ops->release(t);
	if (tablet_closing(t)) {
		tablet_life_set(t, LIFE_CLOSING);
		tablet_close_handles(t);
		return;
	}
	tablet_life_set(t, LIFE_DOWN);
	if (t->role == TABLET_FAILED) {
		tablet_recover_schedule(t);
		return;
	}
	/* Only a copy closes raft with the replica neither FAILED nor closing
	 * (tablet_recover_copy). */
	if (t->role == TABLET_COPYING) {
		if (t->o.copy != NULL)
			copy_server_unregister(t->o.copy, t->id);
		tablet_recover_fetch(t);
	}
}

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
	/* raft's memory is closed; its io's is not */
	tablet_life_set(t, tablet_closing(t) ? LIFE_CLOSE_RELEASING : LIFE_RAFT_RELEASING);
	if (t->log_ops->wait_writers && raft_writers_closing(t->loop)) {
		TLOG(LOG_LVL_DEBUG, t, "raft closed; waiting for raft_uv's writers to close");
		t->log_wait_since = uv_now(t->loop);
		uv_timer_start(&t->log_timer, log_timer_cb, LOG_WAIT_POLL_MS, 0);
		return;
	}
	raft_released(t);
}

void tablet_raft_close(struct tablet *t, bool for_close)
{
	if (t->life != LIFE_OPEN && t->life != LIFE_RUNNING)
		return;
	tablet_life_set(t, for_close ? LIFE_CLOSE_RAFT : LIFE_RAFT_CLOSING);
	t->raft->data = t;
	t->log_ops->close(t, raft_closed);
}

/* ---- Raft log memory and snapshots (see the top) ------------------------------ */

/* Fewest trailing entries a byte bound leaves a lagging follower. */
#define LOG_TRAILING_MIN 4u

/* This replica's share of the Raft log memory, 0: none. */
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
	raft_set_snapshot_trailing(t->raft, (unsigned)trailing);
	t->st.byte_snapshots++;
	TLOG(LOG_LVL_DEBUG, t, "%" PRIu64 " entry bytes since the last snapshot (share %" PRIu64
	     "): snapshot, %" PRIu64 " trailing entries", t->fsm.log_bytes, share, trailing);
	t->snapshot_requested = true;
}

static void snapshot_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	b->t->snapshot_barrier = false;
	if (tablet_disk_error(status))
		tablet_disk_failed(b->t, status, "this leader's Raft log write (a snapshot barrier)");
	if (status == 0)
		tablet_read_lease_extend(b->t, b->epoch, b->sent_ns);
	free(b);
}

void tablet_raft_snapshots(struct tablet *t)
{
	log_memory_check(t);
	if (!t->snapshot_requested)
		return;
	/* Raft snapshots after an apply pass once last_applied is threshold
	 * entries past the last snapshot: a threshold of 1 and (on a leader) a
	 * barrier to apply make one happen; the threshold is restored once it
	 * has started. */
	if (t->fsm.snapshot_busy) {
		t->snapshot_requested = false;
		raft_set_snapshot_threshold(t->raft, t->o.snapshot_threshold);
		return;
	}
	raft_set_snapshot_threshold(t->raft, 1);
	if (t->role == TABLET_LEADER && !t->snapshot_barrier) {
		struct barrier *b = tablet_read_barrier_new(t);
		if (raft_barrier(t->raft, &b->req, snapshot_barrier_cb) == 0)
			t->snapshot_barrier = true;
		else
			free(b);
	}
}
