/* One end of a remote copy: connection, timer, one job, ordered release.
 *
 * Design note.
 *
 * Both ends of a transfer run the same way: strictly one step at a time,
 * each step either a frame on the connection or one job on the libuv
 * threadpool (disk I/O, checksums, RocksDB), never two jobs at once, so an
 * end's fields need no lock: a job touches them only while the loop thread
 * waits for its completion. What differs (which frames, which jobs) is in
 * copy_source.c and copy_dest.c; this file is what does not:
 *
 *   running --copy_link_fail--> failed --+
 *      |                                  +--> nothing in flight (no job, no
 *      +--------(the end's own)--> done --+    write: ops->busy)
 *                                               |
 *            close the connection; cleanup job (close fd, remove dir,
 *            unless cleanup_done was set); close the timer
 *                                               |
 *            both close callbacks came --> ops->release (frees the end)
 *
 * A failure is recorded once (the first wins, and none after done); the
 * end reports it through ops->fail while the connection may still carry
 * it. Every callback that may have been the last thing in flight calls
 * copy_link_maybe_release, which does nothing until the end is over and
 * idle, so the order in which jobs, writes and closes complete does not
 * matter. Jobs are never cancelled (uv_cancel is not used): a job that
 * completes after the failure only lets the release go on. */
#include "tablet/copy_link.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "docdb/store.h"

void copy_link_init(struct copy_link *k, const struct copy_link_ops *ops, uv_loop_t *loop,
		    uv_tcp_t *tcp, bool from_listener, const char *tablet_id)
{
	k->ops = ops;
	k->loop = loop;
	k->tcp = tcp;
	k->tcp_from_listener = from_listener;
	tcp->data = k;
	uv_timer_init(loop, &k->timer);
	k->timer.data = k;
	snprintf(k->tablet_id, sizeof k->tablet_id, "%s", tablet_id);
	k->fd = -1;
}

/* ---- the job ---- */

static void job_work_cb(uv_work_t *w)
{
	struct copy_link *k = w->data;
	k->job_fn(k);
}

static void job_after_cb(uv_work_t *w, int status)
{
	struct copy_link *k = w->data;
	k->job_running = false;
	ASSERT(status == 0); /* never cancelled */
	(void)status;
	k->job_done(k);
}

void copy_link_job_start(struct copy_link *k, copy_job_fn fn, copy_job_fn done)
{
	int rv;
	PRE(!k->job_running);
	k->job_fn = fn;
	k->job_done = done;
	k->job_rv = 0;
	k->job_err[0] = '\0';
	k->job_running = true;
	k->work.data = k;
	rv = uv_queue_work(k->loop, &k->work, job_work_cb, job_after_cb);
	ASSERT(rv == 0);
	(void)rv;
}

bool copy_link_job_ok(struct copy_link *k)
{
	if (k->failed) {
		copy_link_maybe_release(k);
		return false;
	}
	if (k->job_rv != 0) {
		copy_link_fail(k, k->job_rv, "%s", k->job_err);
		return false;
	}
	return true;
}

/* ---- failure and release ---- */

void copy_link_fail(struct copy_link *k, int code, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	if (k->failed || k->done)
		return;
	k->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	k->ops->fail(k, code, msg);
	copy_link_maybe_release(k);
}

static void tcp_close_cb(uv_handle_t *h)
{
	struct copy_link *k = h->data;
	if (k->tcp_from_listener) {
		listener_stream_free(h);
		k->tcp = NULL;
	}
	k->tcp_closed = true;
	copy_link_maybe_release(k);
}

void copy_link_close_tcp(struct copy_link *k)
{
	if (k->tcp_closing)
		return;
	k->tcp_closing = true;
	uv_read_stop((uv_stream_t *)k->tcp);
	uv_close((uv_handle_t *)k->tcp, tcp_close_cb);
}

static void cleanup_job(struct copy_link *k)
{
	if (k->fd >= 0) {
		close(k->fd);
		k->fd = -1;
	}
	if (k->dir[0] != '\0')
		k->job_rv = copy_link_remove_dir(k->dir, k->job_err);
}

static void cleanup_done(struct copy_link *k)
{
	if (k->job_rv != 0)
		TLOG_WARN(k->tablet_id, 0, "copy: leaving %s behind: %s", k->dir, k->job_err);
	k->cleanup_done = true;
	copy_link_maybe_release(k);
}

static void timer_close_cb(uv_handle_t *h)
{
	struct copy_link *k = h->data;
	k->timer_closed = true;
	copy_link_maybe_release(k);
}

void copy_link_maybe_release(struct copy_link *k)
{
	if (!(k->failed || k->done) || k->released || k->job_running)
		return;
	if (k->ops->busy != NULL && k->ops->busy(k))
		return;
	copy_link_close_tcp(k);
	if (!k->cleanup_done) {
		if (!k->cleanup_started) {
			k->cleanup_started = true;
			copy_link_job_start(k, cleanup_job, cleanup_done);
		}
		return;
	}
	if (!k->timer_closing) {
		k->timer_closing = true;
		uv_close((uv_handle_t *)&k->timer, timer_close_cb);
	}
	if (!k->tcp_closed || !k->timer_closed)
		return;
	k->released = true;
	k->ops->release(k);
}

/* ---- blocking file helpers ---- */

int copy_link_remove_dir(const char *path, char *errmsg)
{
	struct stat st;

	fs_remove_tree(path); /* logs what it cannot remove */
	if (lstat(path, &st) == 0)
		return err_set(errmsg, DOCRAFT_EIO, "cannot remove %s", path);
	if (errno != ENOENT)
		return err_set(errmsg, DOCRAFT_EIO, "stat %s: %s", path, strerror(errno));
	return 0;
}

int copy_link_read_marker(const char *dir, uint64_t *applied_index, uint64_t *applied_ht,
			  char *errmsg)
{
	struct store_options o;
	struct store *s;
	int rv;

	store_options_default(&o);
	o.create_if_missing = false;
	o.history_retention_us = UINT64_MAX;
	if ((rv = store_open(dir, &o, &s, errmsg)) != 0)
		return rv;
	store_applied(s, applied_index, applied_ht);
	store_close(s);
	return 0;
}
