/* The set checker (set workload: `add` and a final `read-set`).
 *
 * The final read is the last `ok` read-set (by completion time). Then:
 *   lost:        an element whose add completed `ok` before the final read
 *                was invoked, missing from it;
 *   unexpected:  an element of the final read never attempted, i.e. no add
 *                of it completed `ok` or `info` (or had no completion). An
 *                element whose only adds `fail`ed is unexpected too (a failed
 *                add must not take effect), counted also in failed_present;
 *   duplicated:  an element listed twice in the final read.
 * Valid iff there is a final read and none of these happened. An ok add that
 * completed after the final read was invoked (concurrent with it, or after
 * it) is not required to be in it; it is counted in not_required. */
#ifndef DOCRAFT_JEPSEN_SETCHECK_H
#define DOCRAFT_JEPSEN_SETCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"

#define SETCHECK_EXAMPLES 10

struct setcheck_list {
	size_t count;
	size_t nexamples; /* <= SETCHECK_EXAMPLES, smallest elements first */
	int64_t examples[SETCHECK_EXAMPLES];
};

struct setcheck_result {
	bool present; /* the history has set ops at all */
	bool valid;
	bool has_final_read;
	size_t final_line; /* the final read's completion line */
	size_t final_size; /* distinct elements in the final read */
	size_t adds, adds_ok, adds_fail, adds_info; /* add ops (info includes no completion) */
	size_t reads, reads_ok;                     /* read-set ops */
	size_t not_required;
	struct setcheck_list lost, unexpected, failed_present, duplicated;
};

/* Checks the set ops of h into res. Returns 0 or HISTORY_ENOMEM. */
int setcheck_check(const struct history *h, struct setcheck_result *res, char *errmsg);

#endif
