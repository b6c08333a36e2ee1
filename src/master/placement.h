/* Placement: how CreateTable cuts the 16-bit hash space into tablets and on
 * which tablet servers it puts each tablet's replicas.
 *
 * Split: tablet i of n covers [floor(i * 65536 / n), floor((i + 1) * 65536 /
 * n)), the last one ending at 65536 (docs/cluster.md, "Master").
 *
 * Replicas: every tablet gets rf replicas on rf distinct live tablet
 * servers: in rf distinct zones when the servers span at least rf zones,
 * otherwise spread over the zones as evenly as possible; least loaded
 * first within that. The load of a server is the number of
 * replicas it already hosts (from the catalog) plus those this call has
 * placed so far, so the tablets of one new table spread evenly. Ties go to
 * the candidate listed first (callers list servers sorted by uuid, which
 * makes the result deterministic). A tablet's replicas are returned in
 * placement order, which is also the order of their Raft ids 1..rf.
 *
 * Pure functions: no allocation, no I/O, any thread. */
#ifndef DOCRAFT_MASTER_PLACEMENT_H
#define DOCRAFT_MASTER_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "docraft/error.h"

/* Most tablets one CreateTable may ask for. */
#define PLACEMENT_MAX_TABLETS 1024
/* Largest replication factor (1, 3 and 5 are accepted). */
#define PLACEMENT_MAX_RF 5

/* The partition [*start, *end) of tablet i of n (1 <= n <= 65535, i < n);
 * *end is 65536 for the last tablet. */
void placement_partition(uint32_t i, uint32_t n, uint32_t *start, uint32_t *end);

/* Whether rf is an accepted replication factor (1, 3 or 5). */
int placement_check_rf(uint32_t rf, char *errmsg);

/* A live tablet server that may receive replicas. */
struct placement_server {
	uint32_t load; /* replicas it hosts now */
	uint32_t zone; /* zone index (master/policy.h policy_zone_index): a tablet's
			* replicas go to distinct zones when the servers span at
			* least rf zones (0 everywhere: no zones) */
};

/* Places n_tablets tablets of rf replicas on the n_servers live servers
 * (their index in servers is their identity): out[i * rf + k] is the index
 * of the server holding replica k (Raft id k + 1) of tablet i. out holds
 * n_tablets * rf entries. Each server's load grows by the replicas placed
 * on it. Errors, with nothing written or changed: DOCRAFT_EINVAL for an rf
 * that is not 1, 3 or 5 or n_tablets outside 1..PLACEMENT_MAX_TABLETS;
 * DOCRAFT_EUNAVAILABLE (retryable: tservers may be starting or coming back)
 * for fewer live servers than rf (the message names both counts). */
int placement_place(struct placement_server *servers, size_t n_servers, uint32_t n_tablets,
		    uint32_t rf, size_t *out, char *errmsg);

#endif
