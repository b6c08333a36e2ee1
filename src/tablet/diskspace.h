/* Free-space reserve of a tablet server's data directory (issue 12; as
 * YugabyteDB's reject_writes_min_disk_space_mb).
 *
 * The free space of the file system holding the data directory is read
 * with uv_fs_statfs (on the libuv threadpool, never on the loop thread)
 * every DISKSPACE_REFRESH_MS and cached; the checks below read the cache.
 * Two thresholds (the rule is in docs/replication.md, "A full disk"):
 *
 *   reserve  (--min-free-disk-mb): below it the service refuses writes with
 *            SERVICE_BUSY "disk almost full on <address>: N MiB free,
 *            reserve M MiB" (retryable; the leader proposes nothing for
 *            them). Raft's own traffic goes on. A FAILED replica recovers
 *            only once free space is back above it.
 *   floor    (a number of Raft log segments, given to diskspace_init):
 *            below it every replica fails itself cleanly (its raft
 *            instance closes). Per-tablet logs (DISKSPACE_FLOOR_SEGMENTS of
 *            raft_uv's segment size): closing removes raft_uv's prepared
 *            segments, and stops it before it would have to allocate one
 *            on a full disk: C-Raft 0.15 crashes when a segment allocation
 *            or log write fails with several appends pending
 *            (docs/replication.md). The shared log
 *            (DISKSPACE_SHARED_FLOOR_SEGMENTS of its segment size) fails a
 *            full write cleanly, but needs room for the segment it fills
 *            and for the garbage collector's rewrite of live tails, which
 *            is what frees old segments.
 *
 * The reserve is at least twice the floor (diskspace_init refuses less), so
 * replicas that stop at the floor start again only once there is room for
 * the floor twice over (no flapping at one threshold).
 *
 * Threading: everything on the loop thread given to diskspace_init. */
#ifndef DOCRAFT_TABLET_DISKSPACE_H
#define DOCRAFT_TABLET_DISKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

/* Segments raft_uv prepares ahead (UV__TARGET_POOL_SIZE in 0.15) plus the
 * open one: what one replica may allocate before its next poll. */
#define DISKSPACE_FLOOR_SEGMENTS 3u
/* The shared log's open segment plus one for the rewrite of live tails
 * that lets the garbage collector remove the oldest (raftlog.h). */
#define DISKSPACE_SHARED_FLOOR_SEGMENTS 2u
#define DISKSPACE_REFRESH_MS 100u
#define DISKSPACE_DEFAULT_RESERVE_MB 256u

struct diskspace;
typedef void (*diskspace_close_cb)(struct diskspace *d);

/* Private: callers allocate it, only diskspace.c touches the fields. */
struct diskspace {
	uv_loop_t *loop;
	char dir[4096];          /* the data directory (statfs'd) */
	char address[64];        /* the server's address, for messages */
	uint64_t reserve;        /* bytes; 0: no reserve, no floor */
	uint64_t floor;          /* bytes */
	uint64_t free;           /* bytes available, from the last statfs */
	bool known;              /* a statfs answered */
	bool low;                /* below the reserve at the last refresh (logged) */
	bool failed_logged;      /* a statfs failure was logged */
	uv_timer_t timer;
	uv_fs_t req;
	bool req_busy;           /* req is on the threadpool */
	bool closing;
	unsigned handles_open;   /* timer and req while closing */
	diskspace_close_cb close_cb;
};

/* Starts refreshing. dir and address are copied. reserve_bytes 0 turns the
 * reserve (and the floor) off; the floor is floor_segments x segment_bytes
 * (DISKSPACE_FLOOR_SEGMENTS or DISKSPACE_SHARED_FLOOR_SEGMENTS and the
 * segment size of the server's Raft log). DOCRAFT_EINVAL with errmsg when
 * reserve_bytes is nonzero and below twice the floor; then nothing is left
 * to close. The first statfs runs
 * before this returns (synchronously), so the cache is valid at once. */
int diskspace_init(struct diskspace *d, uv_loop_t *loop, const char *dir, const char *address,
		   uint64_t reserve_bytes, unsigned floor_segments, size_t segment_bytes,
		   char *errmsg);

/* 0 when a write may be proposed; DOCRAFT_EBUSY with errmsg ("disk almost
 * full on ...") when free space is below the reserve. d may be NULL (0). */
int diskspace_admit(const struct diskspace *d, char *errmsg);

/* True when free space is below the floor: a replica must stop appending.
 * why gets the reason. d may be NULL (false). */
bool diskspace_below_floor(const struct diskspace *d, char *why, size_t why_len);

/* True when a failed replica may restart raft: free space at or above the
 * reserve. d may be NULL (true). */
bool diskspace_may_recover(const struct diskspace *d);

/* Stops refreshing; cb (not NULL) once the timer is closed and no statfs is
 * in flight. */
void diskspace_close(struct diskspace *d, diskspace_close_cb cb);

#endif
