/* Running a libuv loop in a test until something holds: the in-process
 * twin of wait.h's wait_for, for tests that drive real servers, clients
 * and tablets on their own loop (rpc, raft, tablet, master).
 *
 * Threading: the calling thread must be the loop's. */
#ifndef DOCRAFT_TEST_LOOP_H
#define DOCRAFT_TEST_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* Runs loop until pred(arg) holds or timeout_ms of loop time pass;
 * returns pred(arg). pred is checked before and after every poll, so a
 * callback run at the top of an iteration does not leave the loop blocked
 * in the poll after it; a guard timer ends a loop with nothing to do. The
 * helper's own handles are closed before it returns. */
bool loop_run_until(uv_loop_t *loop, bool (*pred)(void *), void *arg, uint64_t timeout_ms);

/* Runs loop until nothing is left on it (bounded: 10 s of loop time),
 * then uv_loop_close; returns what uv_loop_close returns (0, or UV_EBUSY
 * when a handle is still open: the test left one behind). */
int loop_finish(uv_loop_t *loop);

/* A predicate for loop_run_until: *(bool *)flag. */
bool loop_flag_is_set(void *flag);

/* A close (or timer) callback that sets *(bool *)h->data. */
void loop_flag_close_cb(uv_handle_t *h);

#endif
