/* The write path the RPC server and client share (internal to src/rpc/):
 * per-connection output queues of whole frames and the per-owner list of
 * connections with frames queued, written out once per loop turn.
 *
 * Ownership: a queued frame belongs to its queue until outq_flush hands it
 * to libuv; from then on to the batch, freed by outq_batch_free in the
 * write callback. outq_clear frees what is still queued.
 *
 * Threading: everything here belongs to the thread running the owner's
 * loop. Callers: rpc/server.c and rpc/client.c only. */
#ifndef DOCRAFT_RPC_OUTQ_H
#define DOCRAFT_RPC_OUTQ_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "rpc/rpc.h"

/* One frame, queued or being written: header and payload in one
 * allocation. req is used when it is the first of a batch. */
struct outq_frame {
	uv_write_t req;
	struct outq_frame *next; /* in an output queue, then in its batch */
	size_t len;
	uint8_t data[];
};

/* A connection's frames not yet handed to libuv, in order. Zeroed memory
 * is an empty queue. */
struct outq {
	struct outq_frame *head, *tail;
	size_t bytes; /* sum of the queued frames' len */
};

/* A frame of len bytes (data to be filled by the caller, len set); never
 * NULL (out of memory is PANIC). The caller owns it until outq_push. */
struct outq_frame *outq_frame_new(size_t len);

/* Appends w (the queue owns it from now on). */
void outq_push(struct outq *q, struct outq_frame *w);
/* Appends a frame holding a copy of the len bytes at p (the client's
 * preamble). */
void outq_push_bytes(struct outq *q, const void *p, size_t len);
/* Frees every queued frame; q is empty afterwards. */
void outq_clear(struct outq *q);

/* Hands all of q to libuv on s, in order, cut into batches of at most 64
 * frames and 1 MiB (a larger frame goes alone), one uv_write (a writev)
 * per batch: cb for each batch, last_cb for the final one. Counts
 * uv_writes into *writes and frames into *frames. Returns 0, or
 * uv_write's error (that batch freed, later frames left in q; callbacks of
 * the batches already written still run). */
int outq_flush(struct outq *q, uv_stream_t *s, uv_write_cb cb, uv_write_cb last_cb,
	       uint64_t *writes, uint64_t *frames);
/* Frees the batch whose first frame's uv_write_t is req: call it from
 * every write callback of outq_flush, whatever the status. */
void outq_batch_free(uv_write_t *req);

/* The dirty list of a server or a client (struct rpc_flusher, rpc.h):
 * owner goes in both handles' data. Both handles must be uv_close'd by
 * the owner (it counts them among its handles). */
void outq_flusher_init(uv_loop_t *loop, struct rpc_flusher *f, void *owner);
/* Closes both handles, cb for each (the owner counts two handles closing).
 * PRE: nothing listed (the owner has closed or flushed its connections). */
void outq_flusher_close(struct rpc_flusher *f, uv_close_cb cb);
/* Lists l (no-op when listed) and makes sure cb runs this turn, or the
 * next one without blocking. */
void outq_flusher_add(struct rpc_flusher *f, struct rpc_dirty_link *l, uv_check_cb cb);
/* Unlists l (no-op when not listed). */
void outq_flusher_remove(struct rpc_flusher *f, struct rpc_dirty_link *l);
/* For the check callback: the next listed connection (unlisted), or NULL
 * once none is left (the handles then stop until the next add). */
struct rpc_dirty_link *outq_flusher_take(struct rpc_flusher *f);

#endif
