/* Free-space reserve of the data directory. See diskspace.h for the
 * contract and docs/replication.md ("A full disk") for the rule.
 *
 * Design note. The cache is refreshed by a timer on the loop that starts
 * one uv_fs_statfs at a time (the threadpool does the statfs(2), which can
 * block on a slow or hung file system); a refresh still in flight when the
 * timer fires is not doubled. A statfs that fails keeps the last value
 * (logged once). The timer is unref'd: it never keeps the loop alive. */
#include "tablet/diskspace.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"

#define MIB (1024u * 1024u)

static void note(struct diskspace *d)
{
	bool low = d->free < d->reserve;
	if (low && !d->low)
		LOG_WARN("disk almost full on %s: %" PRIu64 " MiB free in %s, reserve %" PRIu64
			 " MiB: writes are refused; below %" PRIu64 " MiB replicas stop",
			 d->address, d->free / MIB, d->dir, d->reserve / MIB, d->floor / MIB);
	else if (!low && d->low)
		LOG_INFO("disk space back on %s: %" PRIu64 " MiB free, reserve %" PRIu64
			 " MiB: writes are accepted", d->address, d->free / MIB, d->reserve / MIB);
	d->low = low;
}

static void statfs_done(struct diskspace *d, uv_fs_t *req)
{
	if (req->result == 0) {
		const uv_statfs_t *st = req->ptr;
		d->free = st->f_bavail * st->f_bsize;
		d->known = true;
		d->failed_logged = false;
		note(d);
	} else if (!d->failed_logged) {
		LOG_WARN("disk space of %s: statfs: %s (keeping the last value)", d->dir,
			 uv_strerror((int)req->result));
		d->failed_logged = true;
	}
}

static void maybe_closed(struct diskspace *d)
{
	if (--d->handles_open == 0)
		d->close_cb(d);
}

static void statfs_cb(uv_fs_t *req)
{
	struct diskspace *d = req->data;
	d->req_busy = false;
	if (!d->closing)
		statfs_done(d, req);
	uv_fs_req_cleanup(req);
	if (d->closing)
		maybe_closed(d);
}

static void timer_cb(uv_timer_t *h)
{
	struct diskspace *d = h->data;
	if (d->req_busy || d->closing)
		return;
	d->req.data = d;
	if (uv_fs_statfs(d->loop, &d->req, d->dir, statfs_cb) == 0)
		d->req_busy = true;
}

int diskspace_init(struct diskspace *d, uv_loop_t *loop, const char *dir, const char *address,
		   uint64_t reserve_bytes, unsigned floor_segments, size_t segment_bytes,
		   char *errmsg)
{
	uv_fs_t req;
	uint64_t floor = (uint64_t)floor_segments * segment_bytes;

	if (reserve_bytes != 0 && reserve_bytes < 2 * floor)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "a disk reserve of %" PRIu64 " MiB is below twice the floor of %u "
			       "Raft log segments of %zu MiB (%" PRIu64 " MiB): raise the "
			       "reserve or lower the segment size",
			       reserve_bytes / MIB, floor_segments, segment_bytes / MIB,
			       2 * floor / MIB);
	memset(d, 0, sizeof *d);
	d->loop = loop;
	snprintf(d->dir, sizeof d->dir, "%s", dir);
	snprintf(d->address, sizeof d->address, "%s", address);
	d->reserve = reserve_bytes;
	d->floor = reserve_bytes != 0 ? floor : 0;
	/* Once synchronously, at start-up: valid before the first request. */
	(void)uv_fs_statfs(loop, &req, d->dir, NULL); /* the result is in req */
	statfs_done(d, &req); /* a failure is logged; the cache stays unknown */
	uv_fs_req_cleanup(&req);
	uv_timer_init(loop, &d->timer);
	d->timer.data = d;
	if (d->reserve != 0) {
		uv_timer_start(&d->timer, timer_cb, DISKSPACE_REFRESH_MS, DISKSPACE_REFRESH_MS);
		uv_unref((uv_handle_t *)&d->timer);
	}
	return 0;
}

int diskspace_admit(const struct diskspace *d, char *errmsg)
{
	if (d == NULL || d->reserve == 0 || !d->known || d->free >= d->reserve)
		return 0;
	return err_set(errmsg, DOCRAFT_EBUSY,
		       "disk almost full on %s: %" PRIu64 " MiB free, reserve %" PRIu64 " MiB",
		       d->address, d->free / MIB, d->reserve / MIB);
}

bool diskspace_below_floor(const struct diskspace *d, char *why, size_t why_len)
{
	if (d == NULL || d->reserve == 0 || !d->known || d->free >= d->floor)
		return false;
	snprintf(why, why_len,
		 "disk almost full on %s: %" PRIu64 " MiB free, below the floor of %" PRIu64
		 " MiB (room for the Raft log's next segments)",
		 d->address, d->free / MIB, d->floor / MIB);
	return true;
}

bool diskspace_may_recover(const struct diskspace *d)
{
	return d == NULL || d->reserve == 0 || !d->known || d->free >= d->reserve;
}

static void timer_closed(uv_handle_t *h)
{
	maybe_closed(h->data);
}

void diskspace_close(struct diskspace *d, diskspace_close_cb cb)
{
	d->closing = true;
	d->close_cb = cb;
	d->handles_open = 1 + (d->req_busy ? 1 : 0);
	uv_close((uv_handle_t *)&d->timer, timer_closed);
}
