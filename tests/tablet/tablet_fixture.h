/* Real tablet replicas on C-Raft's raft_fixture: the third Raft io of a
 * tablet (tablet.h, struct tablet_raft_host), for deterministic tests of
 * leases, read barriers and group commit. The design note is on top of
 * tablet_fixture.c.
 *
 * N replicas of one tablet: each a struct tablet opened by tablet_open,
 * with a real DocDB store in <tmp>/sI, its fsm, write path, read path,
 * leases and retry table; its struct raft is fixture server I (id I + 1,
 * address "I+1"), whose in-memory io, network and clock are the fixture's.
 * Time is virtual: raft_fixture_time (ms) is raft's clock, the leases'
 * clock and the hybrid clocks' (from TF_EPOCH_US on).
 *
 * Driving: every raft_fixture_step (also inside raft_fixture_step_until*,
 * raft_fixture_elect, raft_fixture_depose) is followed by one turn of the
 * tablets' loop (the fixture's hook), then the test's hook. So a test calls
 * the raft_fixture_* functions on &tf->f as usual, and tablet_write /
 * tablet_read on tf->t[i]; requests queued between two steps are seen by
 * the tablets' polls after the next one.
 *
 * Threading: one thread, the loop's. Not for production: tests only. */
#ifndef DOCRAFT_TESTS_TABLET_FIXTURE_H
#define DOCRAFT_TESTS_TABLET_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/fixture.h>
#include <uv.h>

#include "tablet/tablet.h"

#define TF_MAX 5
/* Physical time (µs since the epoch) of the hybrid clocks at virtual 0. */
#define TF_EPOCH_US UINT64_C(1700000000000000)

struct tablet_fixture;
/* Runs after every fixture step and the loop turn that follows it. */
typedef void (*tablet_fixture_hook)(struct tablet_fixture *tf, void *arg);

struct tablet_fixture {
	struct raft_fixture f;         /* first: the fixture hook finds tf from it */
	struct tablet_raft_host host;  /* the tablets' raft host (tablet.h) */
	uv_loop_t loop;                /* the tablets' loop */
	unsigned n;
	struct tablet *t[TF_MAX];      /* replica i is fixture server i */
	char dir[256];                 /* temp dir: sI per replica */
	bool closed;                   /* raft_fixture_close done */
	/* Raft closes the tablets asked for (tablet_raft_host.close), fired
	 * from the next hook or from tablet_fixture_close. */
	struct {
		struct raft *r;
		void (*cb)(struct raft *r);
	} pending[TF_MAX];
	unsigned n_pending;
	unsigned n_open;               /* tablets not yet closed */
	uint64_t steps;                /* fixture steps so far */
	tablet_fixture_hook hook;
	void *hook_arg;
};

/* Opens n (1..TF_MAX) replicas of tablet "fx" with options base (id, dir,
 * raft_id, address, listener, raft_host and raft_log are set here; the
 * rest, e.g. lease_ms, max_inflight, election_ms, heartbeat_ms, is base's),
 * bootstraps them with every replica a voter and starts them. Nothing is
 * stepped yet. The tests' CHECKs fail on any error. */
void tablet_fixture_up(struct tablet_fixture *tf, unsigned n, const struct tablet_options *base);

/* Closes the fixture (its io flushes, every raft closes: what was in
 * flight fails with LEADERSHIPLOST), then the tablets, runs the loop until
 * they are freed, closes it and removes the temp dir. */
void tablet_fixture_down(struct tablet_fixture *tf);

/* The virtual time, ms. */
static inline uint64_t tablet_fixture_now(struct tablet_fixture *tf)
{
	return raft_fixture_time(&tf->f);
}

/* The index of a READY leader (tablet role TABLET_LEADER), or -1. */
int tablet_fixture_leader(struct tablet_fixture *tf);

/* Steps until pred(tf, arg) holds (checked after every step) or max_ms of
 * virtual time pass; returns pred. */
bool tablet_fixture_step_until(struct tablet_fixture *tf,
			       bool (*pred)(struct tablet_fixture *tf, void *arg), void *arg,
			       unsigned max_ms);

#endif
