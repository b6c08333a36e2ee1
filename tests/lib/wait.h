/* Waiting in tests: wait_for polls a condition until it holds or a timeout
 * passes, instead of a fixed sleep that hopes the thing happened. A test
 * that sleeps to wait for something uses wait_for; a fixed sleep_ms is kept
 * only where the time itself is the point (e.g. "nothing happens for N ms").
 *
 * The poll interval starts short (WAIT_FIRST_MS) and doubles up to
 * WAIT_MAX_MS, so a condition that holds soon is seen soon and one that is
 * costly to check (a CLI process, an RPC round) is not checked in a tight
 * loop. Both functions only sleep: single- or multi-threaded callers alike,
 * no shared state. */
#ifndef DOCRAFT_TESTS_WAIT_H
#define DOCRAFT_TESTS_WAIT_H

#include <stdbool.h>

#define WAIT_FIRST_MS 10
#define WAIT_MAX_MS 200

/* Calls cond(arg) until it returns true or timeout_ms have passed on a
 * monotonic clock; cond is called at least once, and once more at the
 * deadline. Returns whether it held. cond runs on the caller's thread and may
 * fail the test (CHECK), which ends the wait with the case. */
bool wait_for(bool (*cond)(void *arg), void *arg, int timeout_ms);

/* Sleeps ms milliseconds (restarted after EINTR). */
void sleep_ms(int ms);

#endif
