/* Remote bootstrap: copying a tablet's RocksDB checkpoint between servers.
 *
 * A follower whose Raft log was truncated past its applied index, and a new
 * replica, catch up from a RocksDB checkpoint of a healthy replica
 * (design.md, "Durability"; reference/c-raft.md §4.2 items 2-3): the source
 * writes a checkpoint next to the tablet's store, streams its files over the
 * server's one port (a COPY connection, listener.h) and removes it; the
 * destination writes them into <dest>.tmp, fsyncs, checks them and renames
 * the directory to <dest>, which is then a store that store_open opens, and
 * whose applied marker says from which Raft index the replica continues.
 *
 * Memory: each side holds one fixed buffer per transfer (default
 * COPY_BUFFER_SIZE); nothing grows with the size of the tablet. Disk I/O and
 * checksums run on the libuv threadpool; the loop thread only moves frames.
 *
 * Threading: everything here belongs to the thread running the loop the
 * objects were created on; no function may be called from another thread
 * (copy_crc32c excepted). Signals: as for listener.h, the process must
 * ignore SIGPIPE.
 *
 * Wire format and design notes: at the top of copy_proto.c (the stream),
 * copy_link.c (what both ends share), copy_source.c (copy_server_*) and
 * copy_dest.c (copy_fetch). */
#ifndef DOCRAFT_TABLET_REMOTE_COPY_H
#define DOCRAFT_TABLET_REMOTE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "docraft/error.h"

struct listener;
struct sockaddr_in;
struct store;

/* Default size of the one data buffer of a transfer, on either side. */
#define COPY_BUFFER_SIZE (1024u * 1024)
/* Smallest buffer accepted (a frame header must fit, with room to spare). */
#define COPY_BUFFER_MIN 4096u
/* Largest data frame a receiver accepts (a sender's buffer size). */
#define COPY_CHUNK_MAX (16u * 1024 * 1024)
/* Default idle period after which a stalled transfer fails. */
#define COPY_DEFAULT_IDLE_MS 30000u
/* While the source is creating its checkpoint it sends keepalive frames
 * this often, so a destination's idle timer measures a dead peer, not a
 * slow flush. */
#define COPY_KEEPALIVE_MS 1000u
/* Default cap on transfers a server runs at once (each holds a buffer and a
 * checkpoint directory, and its checkpoint occupies a libuv pool thread for
 * one memtable flush: keep the cap below UV_THREADPOOL_SIZE, which raft_uv
 * shares); more get an error frame with DOCRAFT_EBUSY. */
#define COPY_DEFAULT_MAX_TRANSFERS 4u
/* Default number of those slots kept for copies to a member of the
 * tablet's Raft configuration (copy_server_set_member_check): a copy asked
 * by any other peer gets one of the rest or DOCRAFT_EBUSY, so a flood of
 * COPY connections cannot keep a lagging replica from catching up. */
#define COPY_DEFAULT_MEMBER_SLOTS 2u

/* CRC-32C (Castagnoli) of n bytes, continuing from crc (0 to start): the
 * per-file integrity check of the wire format. Any thread. */
uint32_t copy_crc32c(uint32_t crc, const void *p, size_t n);

/* ---- the stream's framing (wire format: top of copy_proto.c) ---- */

/* Longest file name and error message a frame carries. */
#define COPY_NAME_MAX 255
#define COPY_MSG_MAX 1024

/* One frame header as the destination reads it. */
struct copy_frame {
	uint8_t type;                  /* 'K', 'F', 'D', 'C', 'E' or 'X' */
	char name[COPY_NAME_MAX + 1];  /* F: a valid file name */
	uint64_t size;                 /* F: the file's size */
	uint32_t len;                  /* D: payload bytes after the header, 1..COPY_CHUNK_MAX */
	uint32_t crc;                  /* C: CRC-32C of the whole file */
	uint32_t nfiles;               /* E */
	uint64_t total, applied_index, applied_ht; /* E */
	int code;                      /* X: a DOCRAFT_E* code (unknown: DOCRAFT_EIO) */
	char msg[COPY_MSG_MAX + 1];    /* X: non-printable bytes as '?' */
};

/* The pure decoder of one frame header at p[0..avail) (the only bytes it
 * reads): its length (> 0) with *out filled, 0 when more bytes are needed,
 * or -DOCRAFT_ECORRUPT with errmsg (unknown type, name or message length,
 * bad name, data length 0 or above COPY_CHUNK_MAX). What depends on the
 * stream (order of frames, sizes, CRCs) is the fetcher's to check. Any
 * thread. */
int copy_frame_decode(const uint8_t *p, size_t avail, struct copy_frame *out, char *errmsg);

/* ---- source side ---- */

struct copy_server;
struct copy_reg;
struct copy_xfer;

/* Called once a closing server has finished every transfer and released
 * everything it allocated; cs may then be freed. */
typedef void (*copy_server_close_cb)(struct copy_server *cs);

struct copy_server_options {
	size_t buffer_size;       /* bytes read from a file at once; 0 = COPY_BUFFER_SIZE,
				     else COPY_BUFFER_MIN..COPY_CHUNK_MAX */
	uint64_t idle_timeout_ms; /* a write pending longer fails the transfer;
				     0 = COPY_DEFAULT_IDLE_MS */
	unsigned max_transfers;   /* 0 = COPY_DEFAULT_MAX_TRANSFERS */
	unsigned member_slots;    /* of max_transfers, kept for members; 0 =
				     COPY_DEFAULT_MEMBER_SLOTS (at most
				     max_transfers - 1); more: DOCRAFT_EINVAL */
};

/* Counters since copy_server_init, for status pages and tests. */
struct copy_server_stats {
	uint64_t started;    /* COPY connections received */
	uint64_t completed;  /* end frame written */
	uint64_t failed;     /* error frame sent or connection dropped */
	uint64_t files_sent;
	uint64_t bytes_sent; /* file content bytes */
	size_t buffer_size;  /* the buffer each transfer allocates */
	size_t max_held;     /* most file bytes one transfer held in memory at once
				(read from disk, write not yet completed) */
	unsigned active;     /* transfers not yet released */
	unsigned active_others; /* ... of them for peers that are not members */
	uint64_t busy;       /* refused with DOCRAFT_EBUSY: no slot */
};

/* Private: callers allocate it, only this module reads or writes it. */
struct copy_server {
	uv_loop_t *loop;
	struct listener *l;
	struct copy_server_options opts;
	struct copy_server_stats stats;
	struct copy_reg *regs;   /* registered tablets */
	struct copy_xfer *xfers; /* transfers not released yet */
	uint64_t next_id;        /* names checkpoint directories */
	uv_mutex_t mu;           /* reg->store and reg->busy, shared with the pool */
	uv_cond_t idle;          /* signalled when a reg->busy drops to 0 */
	uv_timer_t closer;
	bool closing;
	bool closer_closed;
	copy_server_close_cb close_cb;
};

/* Serves COPY connections arriving at l (which must run on loop): becomes
 * l's LISTENER_COPY handler. Loop thread. cs is caller memory, initialised
 * here, which must stay at the same address until the close callback; l is
 * borrowed and must outlive the server (close the server, then the
 * listener). On failure returns a code with errmsg and cs needs no close. */
int copy_server_init(struct copy_server *cs, uv_loop_t *loop, struct listener *l,
		     char *errmsg);

/* Changes the options (copied) for transfers started afterwards. Loop
 * thread. DOCRAFT_EINVAL with errmsg for a buffer size out of range. */
int copy_server_set_options(struct copy_server *cs, const struct copy_server_options *o,
			    char *errmsg);

/* Makes store s, the store of tablet_id (1..64 printable ASCII bytes,
 * copied), available for copying. Loop thread. s is borrowed: it must stay
 * open until copy_server_unregister(cs, tablet_id) has returned.
 * Checkpoints are written in directories "<store_path(s)>.copy-<n>", which
 * the server removes; one left by a crash is removed before its name is
 * used again, and copy_server_remove_leftovers removes them all.
 * DOCRAFT_EINVAL for a bad id or an id already registered; DOCRAFT_ECLOSED
 * once closing. */
int copy_server_register(struct copy_server *cs, const char *tablet_id, struct store *s,
			 char *errmsg);

/* Whether a COPY connection from peer comes from a member of the tablet's
 * Raft configuration (then it may take a member slot). Called on the loop
 * thread while the tablet is registered. */
typedef bool (*copy_member_check)(void *arg, const struct sockaddr_in *peer);

/* Sets registered tablet_id's member check (no-op for an unknown id; a
 * tablet without one treats every peer as a non-member). arg is borrowed
 * until copy_server_unregister. Loop thread. */
void copy_server_set_member_check(struct copy_server *cs, const char *tablet_id,
				  copy_member_check fn, void *arg);

/* Withdraws tablet_id (no-op if not registered). Loop thread. When it
 * returns the server no longer touches the store, which the caller may
 * close: if a checkpoint of it is being written on the threadpool at that
 * moment, this call waits for store_checkpoint to return (the loop thread
 * blocks for the rest of one memtable flush, as store_close would).
 * Transfers of the tablet in progress are aborted: the destination gets an
 * error frame (DOCRAFT_ECLOSED, "tablet ... unregistered"), and each
 * checkpoint directory is removed asynchronously — it is a separate
 * directory of hard links, so the store may go away meanwhile. */
void copy_server_unregister(struct copy_server *cs, const char *tablet_id);

/* Counters, copied into *out. Loop thread. */
void copy_server_get_stats(const struct copy_server *cs, struct copy_server_stats *out);

/* Loop thread. Removes the handler from the listener, aborts every
 * transfer (DOCRAFT_ECLOSED, "copy server closing"), unregisters every tablet
 * still registered (as copy_server_unregister: stores must stay open until
 * this returns), and calls cb on a later loop iteration once every
 * transfer's checkpoint directory is removed and every handle is closed.
 * Must not be called twice; nothing else may be called afterwards. */
void copy_server_close(struct copy_server *cs, copy_server_close_cb cb);

/* Removes the "<store_path>.copy-*" directories a crashed process may have
 * left (call before the store is registered). Any thread, but blocking
 * file-system work: at startup or on the threadpool. Returns 0, or
 * DOCRAFT_EIO / DOCRAFT_EINVAL with errmsg. */
int copy_server_remove_leftovers(const char *store_path, char *errmsg);

/* ---- destination side ---- */

struct copy_fetch;
struct copy_fetcher;

/* Completion of copy_fetch, called exactly once on the loop thread after
 * every handle and buffer of the transfer is released (req may be freed or
 * reused from here). status 0: dest_dir holds the copy and applied_index /
 * applied_ht are its applied marker. Otherwise dest_dir does not exist, the
 * .tmp directory was removed, and errmsg (req->errmsg) says why:
 *   DOCRAFT_EUNAVAILABLE  connection refused, reset, or closed before the end
 *   DOCRAFT_ETIMEDOUT     nothing from the source for the idle period
 *   DOCRAFT_ECORRUPT      malformed frame, short file, CRC mismatch, a copy
 *                         that does not open as a store or whose marker
 *                         differs from the end frame
 *   DOCRAFT_EIO, DOCRAFT_ENOSPC  local file-system errors
 *   DOCRAFT_ECLOSED       copy_fetch_cancel
 *   any code the source sent in an error frame, e.g. DOCRAFT_ENOTFOUND for a
 *   tablet it does not host, DOCRAFT_ECLOSED for one unregistered meanwhile,
 *   DOCRAFT_EBUSY when it runs too many transfers. */
typedef void (*copy_fetch_cb)(struct copy_fetch *req, int status, uint64_t applied_index,
			      uint64_t applied_ht, const char *errmsg);

/* Counters of one fetch. */
struct copy_stats {
	uint64_t files;      /* files completed (fsynced and closed) */
	uint64_t bytes;      /* file content bytes written */
	size_t buffer_size;  /* the one receive buffer */
	size_t max_buffered; /* most received bytes held in memory at once */
};

/* One fetch, allocated by the caller, who keeps it alive until cb. */
struct copy_fetch {
	void *data;                        /* the caller's */
	/* In: set before copy_fetch; 0 = default. */
	size_t buffer_size;                /* COPY_BUFFER_MIN.. (COPY_BUFFER_SIZE) */
	uint64_t idle_timeout_ms;          /* (COPY_DEFAULT_IDLE_MS) */
	/* Out. */
	struct copy_stats stats;           /* updated as the copy runs */
	char errmsg[DOCRAFT_ERRMSG_SIZE];  /* the reason given to cb */
	struct copy_fetcher *impl;         /* private; NULL when not running */
};

/* Copies tablet tablet_id from the server at address ("a.b.c.d:port") into
 * dest_dir. dest_dir must not exist and its parent must; the files arrive in
 * dest_dir + ".tmp" (a leftover of a crashed fetch is removed first; two
 * fetches to the same dest_dir must not run at once), each fsynced, then the
 * directory; the copy is opened once to check its marker against the end
 * frame, and renamed to dest_dir (no-replace) and the parent fsynced.
 *
 * Returns 0 and later calls cb exactly once; or fails synchronously, without
 * ever calling cb and with nothing to release: DOCRAFT_EINVAL for a bad
 * address, tablet id, buffer size or a dest_dir that exists (or is too
 * long), DOCRAFT_EIO if dest_dir cannot be checked or no socket can be made.
 * Strings are copied; req is borrowed until cb (its impl is set while the
 * fetch runs, NULL again before cb). Loop thread only. */
int copy_fetch(uv_loop_t *loop, const char *address, const char *tablet_id, const char *dest_dir,
	       struct copy_fetch *req, copy_fetch_cb cb, char *errmsg);

/* Loop thread. Aborts a running fetch: cb comes later with DOCRAFT_ECLOSED
 * and the .tmp directory removed — unless the copy was already being
 * renamed into place, in which case cb reports success. No-op if the fetch
 * is already failing. Only between a successful copy_fetch and its
 * callback. */
void copy_fetch_cancel(struct copy_fetch *req);

#endif
