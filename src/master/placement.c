/* Placement (see placement.h).
 *
 * Design. The split is the formula of docs/cluster.md, computed with
 * hash16_partition_start so the master, the tablet servers and the client
 * agree on every boundary. For n = 3 the tablets are [0, 21845),
 * [21845, 43690), [43690, 65536): the remainder of 65536 / n goes to the
 * tablets whose start rounds down, never to one tablet alone.
 *
 * Replicas are chosen greedily, tablet after tablet: for each one the rf
 * servers with the smallest (zone count, load, index) triples, found by rf
 * linear scans that skip the servers already chosen for that tablet; the
 * zone count of a server is the number of the tablet's replicas chosen so
 * far in its zone (rf <= 5, so this is O(rf * rf * servers) per tablet and
 * needs no scratch memory). Distinctness holds by construction. Zones:
 * while fewer than rf replicas are chosen, a server in a zone without one
 * has count 0, so when the servers span at least rf zones every replica
 * lands in a zone of its own; with fewer zones, the k-th replica goes to a
 * zone holding the fewest so far, which spreads them as evenly as
 * possible (RF 3 on two zones: 2 + 1). Within that, the least loaded.
 * Balance (within each zone when zones decide): when the loads differ by
 * at most one, taking the rf least loaded and adding one to each keeps
 * them within one,
 * so on equal servers a table of n tablets puts n * rf / servers replicas
 * (rounded up or down) on each; servers that start behind receive the new
 * replicas first until they catch up. Loads are increased once a tablet's
 * whole replica set is chosen (the scans skip the servers already taken for
 * it).
 *
 * What this does not do: weighting by tablet size; moving replicas is the
 * replica policy's (policy.h) and the master's move engine's. Leaders are
 * whoever wins the first election; the master learns them from heartbeats
 * and then evens them out per table and per tserver by asking leaders to
 * step down in favour of a given replica (leader balancing: balance.h,
 * wired in tservers.c's heartbeat handler). */
#include "master/placement.h"

#include <stdbool.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hash16.h"

void placement_partition(uint32_t i, uint32_t n, uint32_t *start, uint32_t *end)
{
	PRE(n >= 1 && n <= 65535 && i < n);
	*start = hash16_partition_start(i, n);
	*end = i + 1 == n ? 65536u : hash16_partition_start(i + 1, n);
}

int placement_check_rf(uint32_t rf, char *errmsg)
{
	if (rf != 1 && rf != 3 && rf != 5)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "replication factor must be 1, 3 or 5 (got %u)", rf);
	return 0;
}

/* Replicas among chosen[0..k) in zone. */
static uint32_t in_zone(const struct placement_server *servers, const size_t *chosen, uint32_t k,
			uint32_t zone)
{
	uint32_t n = 0;
	for (uint32_t j = 0; j < k; j++)
		n += servers[chosen[j]].zone == zone;
	return n;
}

int placement_place(struct placement_server *servers, size_t n_servers, uint32_t n_tablets,
		    uint32_t rf, size_t *out, char *errmsg)
{
	int rv;

	if ((rv = placement_check_rf(rf, errmsg)) != 0)
		return rv;
	if (n_tablets < 1 || n_tablets > PLACEMENT_MAX_TABLETS)
		return err_set(errmsg, DOCRAFT_EINVAL, "number of tablets must be 1..%d (got %u)",
			       PLACEMENT_MAX_TABLETS, n_tablets);
	if (n_servers < rf)
		return err_set(errmsg, DOCRAFT_EUNAVAILABLE,
			       "not enough live tservers: %zu live, replication factor %u",
			       n_servers, rf);
	for (uint32_t i = 0; i < n_tablets; i++) {
		size_t *chosen = &out[(size_t)i * rf];
		for (uint32_t k = 0; k < rf; k++) {
			size_t best = SIZE_MAX;
			uint32_t best_count = 0;
			for (size_t s = 0; s < n_servers; s++) {
				bool taken = false;
				uint32_t count;
				for (uint32_t j = 0; j < k; j++)
					taken = taken || chosen[j] == s;
				if (taken)
					continue;
				count = in_zone(servers, chosen, k, servers[s].zone);
				if (best == SIZE_MAX || count < best_count ||
				    (count == best_count && servers[s].load < servers[best].load)) {
					best = s;
					best_count = count;
				}
			}
			ASSERT(best != SIZE_MAX);
			chosen[k] = best;
		}
		for (uint32_t k = 0; k < rf; k++)
			servers[chosen[k]].load++;
	}
	return 0;
}
