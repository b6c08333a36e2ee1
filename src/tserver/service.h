/* The tablet server's RPC service: a handler for every TSERVER_* method of
 * proto/rpc.proto (payloads in proto/docraft.proto), on the rpc_server of
 * the server's one port, acting on the replicas of a tablet manager.
 *
 *   TSERVER_WRITE          WriteRequest -> WriteResponse{ht}       leader only
 *   TSERVER_READ           ReadRequest  -> ReadResponse            leader only
 *   TSERVER_SCAN           ScanRequest  -> ScanResponse            leader only
 *   TSERVER_CREATE_TABLET  CreateTabletRequest -> {}
 *   TSERVER_DELETE_TABLET  DeleteTabletRequest -> {}   once the files are gone
 *   TSERVER_CHANGE_CONFIG  ChangeConfigRequest -> {}   once committed; leader only
 *   TSERVER_STEP_DOWN      StepDownRequest -> {}       once another node leads
 *   TSERVER_DUMP_TABLET    DumpTabletRequest -> {text} this replica's raw pairs
 *   TSERVER_TABLET_STATUS  TabletStatusRequest -> {reports}
 *   TSERVER_CHECKSUM       ChecksumRequest -> {checksum, rows, read_ht,
 *                          applied_index}                any replica
 *
 * Errors (the frame status, with ErrorInfo): NOT_LEADER with the leader's
 * address and raft id when known; TABLET_NOT_FOUND; INVALID_ARGUMENT with the
 * reason (malformed request, schema version mismatch, bad op or key);
 * WRONG_TABLET (a key whose hash is outside the tablet's partition: nothing
 * of the request is applied; the client refreshes its locations);
 * CLOCK_SKEW (a read time further ahead of the leader's clock than the
 * maximum skew: refused, never adopted); LEADERSHIP_LOST (a write whose outcome is
 * unknown: retry with the same client id and seq); UNAVAILABLE (replica
 * failed or closing, server shutting down, transfer not completed);
 * SERVICE_BUSY (too many writes queued on the tablet, or a membership change
 * already running); TIMED_OUT (the caller's deadline passed first, or a
 * checksum's replica did not apply up to its read_ht within wait_ms);
 * SNAPSHOT_TOO_OLD (read time below the history cutoff). Details and
 * decisions: the design note at the top of service.c.
 *
 * Threading: the loop thread of the server, manager and rpc_server. */
#ifndef DOCRAFT_TSERVER_SERVICE_H
#define DOCRAFT_TSERVER_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "rpc/dispatch.h"
#include "rpc/rpc.h"
#include "docraft.pb-c.h"
#include "tserver/manager.h"

/* Rows per scan page when the request gives no limit, and the most allowed
 * (a larger limit is lowered to it). */
#define SERVICE_SCAN_DEFAULT_LIMIT 1000u
#define SERVICE_SCAN_MAX_LIMIT 10000u
/* Writes, reads and scans queued or in flight per tablet beyond which new
 * ones get SERVICE_BUSY. */
#define SERVICE_DEFAULT_MAX_PENDING 10000u
/* Default of service_options.max_clock_skew_us (--max-clock-skew-ms). */
#define SERVICE_DEFAULT_MAX_CLOCK_SKEW_US 500000u
/* TSERVER_CHECKSUM: how long a replica waits to have applied up to the
 * request's read_ht when wait_ms is 0, the most wait_ms may ask for, and
 * the period of the timer that polls the applied hybrid time. */
#define SERVICE_CHECKSUM_WAIT_MS 5000u
#define SERVICE_CHECKSUM_WAIT_MAX_MS 60000u
#define SERVICE_CHECKSUM_POLL_MS 10u
/* CHECKSUM and DUMP_TABLET requests being served at once (each costs a
 * page of work per loop turn, a dump up to max_reply_bytes of memory);
 * beyond, SERVICE_BUSY. */
#define SERVICE_MAX_PAGED_OPS 8u
/* Stored pairs a DUMP_TABLET formats per loop turn. */
#define SERVICE_DUMP_PAGE_PAIRS 2000u

struct service_options {
	/* Largest reply payload: scans return fewer rows than asked when
	 * their rows would not fit. 0 = RPC_FRAME_DEFAULT_MAX minus 64 KiB. */
	uint32_t max_reply_bytes;
	unsigned max_pending; /* per tablet; 0 = SERVICE_DEFAULT_MAX_PENDING */
	/* The largest clock difference between servers: how far an explicit
	 * read time may be ahead of the leader's safe time and still be waited
	 * for (further: CLOCK_SKEW), and the read-restart window of scans.
	 * 0 = SERVICE_DEFAULT_MAX_CLOCK_SKEW_US. */
	uint64_t max_clock_skew_us;
	/* Free-space reserve (diskspace.h): below it writes are refused
	 * (SERVICE_BUSY "disk almost full ..."). NULL: none. Borrowed. */
	const struct diskspace *disk;
};

struct svc_op;
struct service;
typedef void (*service_close_cb)(struct service *s);

/* Private: callers allocate it, only service*.c touch the fields. */
struct service {
	uv_loop_t *loop;
	struct rpc_server *srv;
	struct manager *m;
	struct service_options o;
	struct rpc_dispatch dispatch; /* the TSERVER_* method table on srv */
	uv_timer_t sweep;      /* answers calls whose deadline passed */
	struct svc_op *ops;    /* requests waiting for a tablet callback */
	bool closing;
	service_close_cb close_cb;
	uv_timer_t checksum_timer; /* drives checksums and dumps: one page per tick */
	unsigned handles_open;     /* sweep and checksum_timer, while closing */
	unsigned n_paged;          /* OP_CHECKSUM and OP_DUMP ops (SERVICE_MAX_PAGED_OPS) */
};

/* Registers every TSERVER_* handler on srv (which must not have them yet).
 * s is caller memory at a fixed address until the close callback; srv and m
 * are borrowed. o may be NULL (defaults). DOCRAFT_EINVAL with errmsg if a
 * method is already registered; then nothing is left to close. */
int service_init(struct service *s, uv_loop_t *loop, struct rpc_server *srv, struct manager *m,
		 const struct service_options *o, char *errmsg);

/* Carries out one instruction of a heartbeat reply (create / delete a
 * replica, change a configuration, step down) exactly as the matching RPC
 * would, logging the outcome instead of answering. Nothing is retained from
 * ins after the call. */
void service_execute(struct service *s, const Docraft__Instruction *ins);

/* Stops the deadline timer and calls cb(s) from the loop. Call it after the
 * manager has closed (every tablet callback has run): requests still
 * waiting then are answered UNAVAILABLE and dropped. Once. */
void service_close(struct service *s, service_close_cb cb);

#endif
