/* rmuxwire: the frames of a multiplexed Raft connection (rmux.h), with a
 * decoder that takes hostile input.
 *
 * After docraft's RMUX preamble (net/listener.h, kind 4, tablet id "") a
 * connection carries frames back to back, every integer little endian:
 *
 *   OPEN  u8 2, u32 group, u8 tablet id length T (1..64), T bytes of tablet
 *         id (printable ASCII), u64 sender raft id (non-zero), u8 address
 *         length A (1..255), A bytes of sender address (printable ASCII)
 *   MSG   u8 1, u32 group, then one Raft message in raft_uv 0.15's wire
 *         format (rwire.h: u64 type, u64 header length, header, payload)
 *
 * A group number is the sender's name for one of its Raft groups on this
 * connection: an OPEN announces it once (before its first MSG) with the
 * tablet it belongs to and the replica that sends; every MSG after it is
 * that replica's message to that tablet. A connection carries one
 * direction only (sender to listener).
 *
 * Hostile input (docs/style.md): the decoder never asserts on the bytes. It
 * refuses an unknown frame type, lengths or characters out of range, raft
 * id 0, and whatever rwire refuses in a message (limits included). The
 * decoder does not keep the group table (rmux.c does: an OPEN of a group
 * number already open, a MSG of one never opened are its errors).
 *
 * Pure code: no I/O, no libuv. Not thread-safe per decoder. */
#ifndef DOCRAFT_RAFT_RMUXWIRE_H
#define DOCRAFT_RAFT_RMUXWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "raft/rwire.h"

#define RMUXWIRE_MSG 1
#define RMUXWIRE_OPEN 2
#define RMUXWIRE_HEAD_SIZE 5 /* type, group */
#define RMUXWIRE_TABLET_ID_MAX 64
#define RMUXWIRE_ADDRESS_MAX 255
/* Longest OPEN frame. */
#define RMUXWIRE_OPEN_MAX \
	(RMUXWIRE_HEAD_SIZE + 1 + RMUXWIRE_TABLET_ID_MAX + 8 + 1 + RMUXWIRE_ADDRESS_MAX)

/* An OPEN frame, decoded. */
struct rmuxwire_open {
	uint32_t group;
	char tablet_id[RMUXWIRE_TABLET_ID_MAX + 1];
	uint64_t id;
	char address[RMUXWIRE_ADDRESS_MAX + 1];
};

/* Writes a MSG frame's head (RMUXWIRE_HEAD_SIZE bytes) into out; the
 * message (rwire_head_encode, then its payload) follows. */
void rmuxwire_msg_head(uint32_t group, uint8_t *out);

/* Writes an OPEN frame into out (at least RMUXWIRE_OPEN_MAX bytes) and
 * returns its length; 0 if an argument cannot be encoded (lengths or
 * characters out of range, id 0). */
size_t rmuxwire_open_encode(uint8_t *out, uint32_t group, const char *tablet_id, uint64_t id,
			    const char *address);

enum rmuxwire_stage { RMUXWIRE_AT_HEAD = 0, RMUXWIRE_AT_OPEN, RMUXWIRE_AT_MSG };

/* The state of one incoming connection. Fields are rmuxwire's. */
struct rmuxwire_decoder {
	enum rmuxwire_stage stage;
	size_t have;                      /* bytes of frame[] received */
	size_t want;                      /* bytes of frame[] the next step needs */
	uint8_t frame[RMUXWIRE_OPEN_MAX]; /* the head, or the whole OPEN frame */
	uint32_t group;                   /* of the frame being decoded */
	struct rwire_decoder msg;         /* the message of a MSG frame */
};

/* Results of rmuxwire_decoder_feed / _advance besides error codes. */
#define RMUXWIRE_MORE 0    /* all bytes taken, nothing complete yet */
#define RMUXWIRE_MESSAGE 1 /* *group and *m hold a message (rwire.h's ownership) */
#define RMUXWIRE_OPENED 2  /* *open (and *group) hold an OPEN frame */

/* Sets up d for a new connection; limit as rwire_decoder_init. */
void rmuxwire_decoder_init(struct rmuxwire_decoder *d, uint64_t limit);

/* Releases what a frame cut short holds. */
void rmuxwire_decoder_close(struct rmuxwire_decoder *d);

/* Takes bytes of the connection: RMUXWIRE_MORE (all n taken),
 * RMUXWIRE_MESSAGE or RMUXWIRE_OPENED (*used bytes taken, the rest not
 * looked at), or DOCRAFT_ECORRUPT with errmsg: the connection is unusable
 * (close it, then rmuxwire_decoder_close). A message is the caller's as
 * rwire_decoder_feed says (server_id 0, server_address NULL). */
int rmuxwire_decoder_feed(struct rmuxwire_decoder *d, const uint8_t *p, size_t n, size_t *used,
			  uint32_t *group, struct raft_message *m, struct rmuxwire_open *open,
			  char *errmsg);

/* Zero-copy reading of large payloads, as rwire_decoder_window. */
bool rmuxwire_decoder_window(struct rmuxwire_decoder *d, size_t min, uint8_t **p, size_t *n);

/* After k bytes were read into the window: RMUXWIRE_MORE or
 * RMUXWIRE_MESSAGE (*group, *m as for rmuxwire_decoder_feed). */
int rmuxwire_decoder_advance(struct rmuxwire_decoder *d, size_t k, uint32_t *group,
			     struct raft_message *m);

#endif
