/* Linearizability of the registers workload (design notes: linearizable.c).
 *
 * Model, per key: a register holding an integer or nil, initially nil.
 *   write V      -> V (always possible)
 *   delete       -> nil (always possible)
 *   cas OLD NEW  -> NEW, possible only when the register holds OLD
 *   read         -> must return what the register holds
 * Each key is checked on its own (a register is P-compositional: a history
 * is linearizable iff its restriction to every key is).
 *
 * What the completions mean:
 *   ok    the op took effect, once, between its invoke and its completion;
 *   fail  it did not take effect: dropped (a failed cas is thus never
 *         applied; a failed read observed nothing);
 *   info  unknown: a write/delete/cas may have taken effect at any time
 *         after its invoke, or never; an info read observed nothing and is
 *         dropped. An invoke without completion is info.
 *
 * A key whose search exceeds the budget is "unknown", never "valid". */
#ifndef DOCRAFT_JEPSEN_LINEARIZABLE_H
#define DOCRAFT_JEPSEN_LINEARIZABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"

enum lin_verdict { LIN_VALID, LIN_INVALID, LIN_UNKNOWN };

struct lin_options {
	uint64_t max_steps;      /* per key; 0: the default (100 million) */
	uint64_t time_limit_ms;  /* per key; 0: the default (60 s) */
	/* For all keys together; 0: none. Keys not finished in time are
	 * unknown (also those not started). */
	uint64_t total_time_limit_ms;
	size_t max_cache_bytes;  /* per key; 0: the default (1 GiB) */
	/* Keep info writes/cas/deletes whose value nothing observes (see
	 * linearizable.c: dropping them never changes the verdict). For tests. */
	bool no_prune;
	/* Plain WGL for info ops: no consume rule, no twin order, no
	 * subsumption (linearizable.c). For tests. */
	bool no_reduce;
};

struct lin_key_result {
	int64_t key;
	enum lin_verdict verdict;
	size_t nops;     /* ops checked (after dropping fail ops and info reads) */
	size_t ninfo;    /* of which info */
	size_t npruned;  /* info ops dropped as unobservable */
	uint64_t steps;  /* search steps */
	size_t cache_entries;
	uint64_t dominated; /* steps skipped as dominated by a visited node */
	double ms;
	/* INVALID: which op could not be linearized, and why; UNKNOWN: which
	 * budget ran out. NULL when VALID. */
	char *explanation;
};

struct lin_result {
	enum lin_verdict verdict; /* INVALID if any key is, else UNKNOWN if any is */
	struct lin_key_result *keys; /* ascending by key */
	size_t nkeys;
	size_t ninvalid, nunknown;
	size_t nops;
};

/* Checks every register op of h (f read/write/cas/delete). opt may be NULL.
 * Returns 0 (the verdict is in res, free it with lin_result_free) or
 * HISTORY_ENOMEM with errmsg. */
int lin_check(const struct history *h, const struct lin_options *opt, struct lin_result *res,
	      char *errmsg);
void lin_result_free(struct lin_result *res);

const char *lin_verdict_name(enum lin_verdict v); /* "valid", "INVALID", "unknown" */

#endif
