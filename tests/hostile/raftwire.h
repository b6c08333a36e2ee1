/* raft_uv 0.15's wire format, encoded by hand, for tests that play a hostile
 * Raft peer from a plain socket (tests/hostile/).
 *
 * After docraft's RAFT preamble (src/net/listener.h) a connection carries
 * raft_uv messages back to back (canonical/raft v0.15.0 src/uv_encoding.c,
 * src/uv_recv.c), every integer little endian:
 *
 *   u64 type (RAFT_IO_APPEND_ENTRIES = 1 ... RAFT_IO_TIMEOUT_NOW = 6)
 *   u64 header length H (> 0), then H bytes of header, then the payload:
 *   AppendEntries   header: term, prev_log_index, prev_log_term,
 *                   leader_commit, n, n x {u64 term, u8 type, 3 unused,
 *                   u32 length}, 8 bytes of slack (raft sizes the header
 *                   as 48 + 16 n); payload: the entries' bytes, in order
 *   RequestVote     header: term, candidate_id, last_log_index,
 *                   last_log_term, flags (1 disrupt_leader, 2 pre_vote)
 *
 * Functions return sizes or -1; nothing here asserts. Not thread-safe only
 * in that fds are the caller's. */
#ifndef DOCRAFT_TESTS_HOSTILE_RAFTWIRE_H
#define DOCRAFT_TESTS_HOSTILE_RAFTWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RAFTWIRE_ENTRIES_MAX 16

struct raftwire_entry {
	uint64_t term;
	uint8_t type;      /* RAFT_COMMAND, RAFT_BARRIER, RAFT_CHANGE */
	const void *data;  /* len bytes, sent as the payload */
	uint32_t len;
};

/* A whole frame: type, header length, header bytes as given (for garbage:
 * any type, any claimed length). Writes into out (cap bytes); returns the
 * length, or 0 if it does not fit. */
size_t raftwire_frame(uint8_t *out, size_t cap, uint64_t type, uint64_t claimed_len,
		      const void *header, size_t header_len);

/* An AppendEntries of n (<= RAFTWIRE_ENTRIES_MAX) entries with their
 * payload. Returns the length, or 0 if it does not fit in cap. */
size_t raftwire_append_entries(uint8_t *out, size_t cap, uint64_t term, uint64_t prev_index,
			       uint64_t prev_term, uint64_t commit,
			       const struct raftwire_entry *e, unsigned n);

/* A RequestVote. Returns the length, or 0 if it does not fit in cap. */
size_t raftwire_request_vote(uint8_t *out, size_t cap, uint64_t term, uint64_t candidate,
			     uint64_t last_index, uint64_t last_term, bool disrupt_leader,
			     bool pre_vote);

/* A TCP connection from src_ip (bound, any port) to dst ("a.b.c.d:port")
 * that has sent the n bytes at preamble (n may be 0: nothing sent).
 * Returns the fd (blocking, the caller closes it) or -1 with errno. */
int raftwire_dial(const char *src_ip, const char *dst, const void *preamble, size_t n);

/* A TCP connection from src_ip (bound, any port) to dst ("a.b.c.d:port")
 * that has sent the RAFT preamble for tablet claiming id and address.
 * Returns the fd (blocking, the caller closes it) or -1 with errno. */
int raftwire_connect(const char *src_ip, const char *dst, const char *tablet, uint64_t id,
		     const char *address);

/* Writes all n bytes (MSG_NOSIGNAL). false if the peer has gone. */
bool raftwire_send(int fd, const void *p, size_t n);

/* Waits at most timeout_ms for the peer to close the connection (EOF or
 * reset), discarding what it sends. true if it did. */
bool raftwire_wait_closed(int fd, int timeout_ms);

#endif
