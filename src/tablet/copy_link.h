/* One end of a remote copy: what the source's transfer (copy_source.c)
 * and the destination's fetch (copy_dest.c) share — the connection, the
 * timer, one threadpool job at a time, the first failure, and the ordered
 * release — and the blocking file helpers both ends run in their jobs.
 *
 * Internal to src/tablet/copy_*.c (the public API is remote_copy.h).
 * Threading: a link belongs to the thread of the loop it was initialised
 * on; only the functions marked "pool" may run on a libuv pool thread (in
 * a job). Design note: top of copy_link.c. */
#ifndef DOCRAFT_TABLET_COPY_LINK_H
#define DOCRAFT_TABLET_COPY_LINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "docraft/error.h"
#include "net/listener.h"

struct copy_link;

/* A job's body (pool thread) or its completion (loop thread). */
typedef void (*copy_job_fn)(struct copy_link *k);

/* What each end does at the three points where the link hands over. */
struct copy_link_ops {
	/* The end's first failure (copy_link_fail), msg already formatted:
	 * count, log and report it (the source sends an X frame if it can, the
	 * destination records the reason for its callback), and close or keep
	 * the connection. copy_link_fail runs copy_link_maybe_release after. */
	void (*fail)(struct copy_link *k, int code, const char *msg);
	/* Optional: true while the end waits for something the link does not
	 * see (the source's frame writes); the release waits for false. */
	bool (*busy)(const struct copy_link *k);
	/* Every handle closed and the cleanup done: free the end, whose memory
	 * holds k (and call its user back). Called once; k is gone after. */
	void (*release)(struct copy_link *k);
};

/* Embedded as the member `link` of struct copy_xfer and struct
 * copy_fetcher (COPY_LINK_OWNER finds them); the end reads the fields, the
 * functions below change the ending ones. */
struct copy_link {
	const struct copy_link_ops *ops;
	uv_loop_t *loop;
	uv_tcp_t *tcp;          /* data = this link; NULL once closed if from_listener */
	bool tcp_from_listener; /* freed with listener_stream_free once closed */
	uv_timer_t timer;       /* data = this link; started by the end */
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	/* What the cleanup job releases: the file a job reads or writes (-1:
	 * none) and the directory to remove ("": none). */
	int fd;
	char dir[PATH_MAX];
	/* the job in flight */
	uv_work_t work;
	copy_job_fn job_fn, job_done;
	bool job_running;
	int job_rv;                        /* set by the job: 0 or a code... */
	char job_err[DOCRAFT_ERRMSG_SIZE]; /* ... with this message */
	/* ending: failed or done, then cleanup, then both handles closed */
	bool failed, done;
	bool cleanup_started, cleanup_done; /* cleanup_done: set it to skip the cleanup */
	bool tcp_closing, tcp_closed, timer_closing, timer_closed;
	bool released;
};

/* The struct holding link k as its member `link`. */
#define COPY_LINK_OWNER(k, type) ((type *)(void *)((char *)(k) - offsetof(type, link)))

/* Initialises k (which must not move until ops->release) for a connection
 * tcp (already initialised on loop, borrowed; from_listener: handed over
 * by the listener, which frees it) of tablet_id (copied). Initialises the
 * timer. Loop thread. */
void copy_link_init(struct copy_link *k, const struct copy_link_ops *ops, uv_loop_t *loop,
		    uv_tcp_t *tcp, bool from_listener, const char *tablet_id);

/* Runs fn(k) on the threadpool, then done(k) on the loop thread; job_rv
 * and job_err start cleared. One job at a time (PRE). */
void copy_link_job_start(struct copy_link *k, copy_job_fn fn, copy_job_fn done);

/* The head of a job's completion: true when the end goes on. false when
 * the end had already failed (then it releases what it can) or the job
 * failed (then the end fails with job_rv and job_err). */
bool copy_link_job_ok(struct copy_link *k);

/* Fails the end with code and a printf message: no-op if it has failed or
 * is done already; otherwise sets failed, calls ops->fail and
 * copy_link_maybe_release. */
void copy_link_fail(struct copy_link *k, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Stops reading and closes the connection (once; the close callback
 * continues the release). */
void copy_link_close_tcp(struct copy_link *k);

/* Once the end has failed or is done and nothing is in flight: closes the
 * connection, runs the cleanup job (closes fd, removes dir) unless
 * cleanup_done is set, closes the timer, and calls ops->release when both
 * handles are closed. Call after anything that may have been the last
 * thing in flight. */
void copy_link_maybe_release(struct copy_link *k);

/* ---- blocking file helpers (pool, or start-up) ---- */

/* rm -rf path (absent is fine): 0, or DOCRAFT_EIO with errmsg when
 * something of it is left. */
int copy_link_remove_dir(const char *path, char *errmsg);

/* Opens the store at dir only to read its applied marker, and closes it:
 * 0, or store_open's code with errmsg (the caller says what it opened).
 * The open may start an automatic compaction (store_close cuts it short);
 * with an unbounded retention its GC runs at most at the history cutoff
 * persisted in the directory (compaction.h), never at now - retention, so
 * it cannot drop history the tablet itself would keep. */
int copy_link_read_marker(const char *dir, uint64_t *applied_index, uint64_t *applied_ht,
			  char *errmsg);

#endif
