/* drive: a test's stand-in for C-Raft 0.15 in front of one group of the
 * shared Raft log (src/raftlog/raftlog.h). It calls the group's struct
 * raft_io the way raft does (raft_init: init; raft_start: load; replication:
 * append with several in flight, truncate before a conflicting append,
 * snapshot_put one at a time, snapshot_get; raft_close: close) and frees what
 * the io hands over exactly as raft frees it (entry batches, snapshots), so
 * ASan sees a leak or a use after free where raft would have one.
 *
 * The network half is a real raft_uv (raft_uv_tcp transport, an empty
 * directory of its own): raftlog forwards init and close to it and never
 * calls its storage methods; nothing here starts it (no listening socket).
 *
 * Payloads are a pure function of (group key, index, term, salt, length), so
 * a reader knows the bytes an entry must hold without keeping them.
 *
 * Used by test_black.c and test_crash.c (inside a TAP case: failures go to
 * drive_fail, which the test sets to its test_fail) and by the child program
 * logwriter.c (default drive_fail: message on stderr, exit 3).
 * Threading: the loop's thread only. */
#ifndef DOCRAFT_TESTS_RAFTLOG_DRIVE_H
#define DOCRAFT_TESTS_RAFTLOG_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "raftlog/raftlog.h"

/* Where a broken expectation goes (a printf-like message, never returns). */
extern void (*drive_fail)(const char *file, int line, const char *msg);
#define DRIVE_CHECK(c, ...)                                                   \
	do {                                                                  \
		if (!(c))                                                     \
			drive_failf(__FILE__, __LINE__, __VA_ARGS__);         \
	} while (0)
_Noreturn void drive_failf(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One attached group: its raftlog io, its raft_uv network half. Static or
 * heap storage: raftlog and raft_uv keep pointers into it until detached. */
struct drive_group {
	struct raftlog_io x;
	struct raft_io net;
	struct raft_uv_transport transport;
	uv_loop_t *loop;
	char name[72];
	uint64_t key;      /* payload key: a hash of the name */
	bool net_ready;    /* raft_uv_init done: raft_uv_close due */
	bool inited;       /* io.init done: io.close due */
	bool close_fired;
	unsigned appends_in_flight;
	unsigned appends_done; /* callbacks seen, in submission order */
	unsigned next_seq;     /* sequence number of the next append */
};

/* raftlog_io_init(name) + a raft_uv on netdir (which must exist) + io.init
 * (id, "127.0.0.1:<port>"), as raft_init does. Returns what failed first
 * (the raftlog code, else the raft code) with errmsg; on failure nothing
 * stays attached. */
int drive_attach(struct drive_group *g, uv_loop_t *loop, struct raftlog *l, const char *name,
		 const char *netdir, char *errmsg);
/* The same without io.init (so drive_detach skips io.close): the storage
 * half alone, which raftlog_io_release allows ("valid if raft_init was
 * never called"). For the crash test, which starts 20 groups per round:
 * raft_uv's init probes async I/O, and its io_destroy takes ~25 ms. */
int drive_attach_storage(struct drive_group *g, uv_loop_t *loop, struct raftlog *l,
			 const char *name, const char *netdir, char *errmsg);

/* io.close as raft_close does, runs the loop until its callback, then
 * raftlog_io_release, raft_uv_close, raft_uv_tcp_close. Every append must
 * have called back first (raft waits for them the same way). */
void drive_detach(struct drive_group *g);

/* A temp dir for the raft_uvs' directories (raft_uv_init probes it with
 * O_DSYNC writes, ~45 ms each on this disk, and uses it for nothing else):
 * on /dev/shm when writable, else $TMPDIR; made with test_tmpdir_make, so
 * the test runner removes it. */
void drive_netdir_make(char *path);

/* ---- entries ---- */

uint64_t drive_key(const char *name);
/* Fills p[0..len) with the payload of (key, index, term, salt). */
void drive_payload(uint8_t *p, size_t len, uint64_t key, raft_index index, raft_term term,
		   uint32_t salt);
uint32_t drive_crc32(const void *p, size_t len);

/* What one entry must be (a model slot). */
struct drive_want {
	raft_term term;
	unsigned short type;
	uint32_t salt;
	uint32_t len;
};

#define DRIVE_CRCS 8
/* One append request in flight, as raft's struct appendLeader. The entries
 * array and the payloads are raft_malloc'd and freed in the callback (the
 * earliest raft may free them). */
struct drive_append {
	struct raft_io_append req;
	struct drive_group *g;
	raft_index first;
	unsigned n;
	unsigned seq;
	struct raft_entry *entries;
	bool done;
	int status;
	char errmsg[RAFT_ERRMSG_BUF_SIZE];
	bool returned; /* io.append has returned (a callback before: synchronous) */
	uint32_t crc[DRIVE_CRCS]; /* drive_crc32 of the first DRIVE_CRCS payloads */
	void (*then)(struct drive_append *a); /* optional, after the fields above are set */
	void *arg;
};

/* Submits entries first..first+n-1 described by want[0..n) (payloads from
 * drive_payload). Returns io.append's code (and on failure frees them; no
 * callback). Checks that the callback does not fire before io.append
 * returns and that a group's callbacks come in submission order. */
int drive_append(struct drive_group *g, struct drive_append *a, raft_index first,
		 const struct drive_want *want, unsigned n);
/* drive_append and run the loop until its callback (bounded); its status. */
int drive_append_wait(struct drive_group *g, raft_index first, const struct drive_want *want,
		      unsigned n, char *errmsg);

int drive_truncate(struct drive_group *g, raft_index index);

/* ---- snapshots ---- */

#define DRIVE_MAX_SERVERS 5
struct drive_snap {
	raft_index index;
	raft_term term;
	raft_index conf_index;
	unsigned n_servers;
	raft_id ids[DRIVE_MAX_SERVERS];
	uint8_t data[256];
	size_t len;
};

/* A configuration of servers 1..n at "10.0.0.<id>:9000", voters. */
void drive_conf(struct raft_configuration *c, unsigned n);

/* One snapshot_put in flight (raft has at most one per group). */
struct drive_put {
	struct raft_io_snapshot_put req;
	struct drive_group *g;
	struct raft_snapshot snap;
	bool returned;
	bool done;
	int status;
};

/* snapshot_put(trailing, s) with its data split into two buffers (raft hands
 * over the FSM's buffers as they are). Returns snapshot_put's code (on
 * failure everything is freed already). Checks the callback is not
 * synchronous; once p->done, drive_put_free releases what raft would. */
int drive_snapshot_put(struct drive_group *g, struct drive_put *p, unsigned trailing,
		       const struct drive_snap *s);
void drive_put_free(struct drive_put *p);
/* drive_snapshot_put, run until the callback, drive_put_free; its status. */
int drive_snapshot_put_wait(struct drive_group *g, unsigned trailing, const struct drive_snap *s);
/* snapshot_get, run until the callback; copies what came into *s, frees it
 * as raft's sendSnapshotGetCb does; the callback's status. */
int drive_snapshot_get_wait(struct drive_group *g, struct drive_snap *s);

/* ---- load ---- */

struct drive_entry {
	raft_term term;
	unsigned short type;
	uint32_t len;
	uint8_t *data; /* malloc'd copy */
};

struct drive_state {
	raft_term term;
	raft_id vote;
	bool has_snap;
	struct drive_snap snap;
	raft_index start;
	size_t n;
	struct drive_entry *e; /* entries start..start+n-1 */
};

/* io.load as raft_start does; copies everything into st (free with
 * drive_state_free) and frees what load returned as raft does. Checks the
 * shape raft asserts on (start >= 1, each entry's batch set, one snapshot
 * buffer, a first entry of type RAFT_CHANGE at index 1 without snapshot,
 * no entry gap after the snapshot). Returns load's code. */
int drive_load(struct drive_group *g, struct drive_state *st, char *errmsg);
void drive_state_free(struct drive_state *st);
/* The entry at index in st, or NULL. */
const struct drive_entry *drive_state_at(const struct drive_state *st, raft_index index);
/* Whether e holds exactly what w describes at index for group key. */
bool drive_entry_is(const struct drive_entry *e, uint64_t key, raft_index index,
		    const struct drive_want *w);

/* ---- the log ---- */

/* raftlog_close and run the loop until its callback (bounded); checks the
 * callback is not synchronous. */
void drive_close_log(uv_loop_t *loop, struct raftlog *l);

/* Runs loop until *flag is true (bounded, DRIVE_WAIT_MS of loop time). */
#define DRIVE_WAIT_MS 30000
bool drive_run_until(uv_loop_t *loop, const bool *flag);

#endif
