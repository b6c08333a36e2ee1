/* Leader balancing (see balance.h).
 *
 * Design. One pass counts (balance_count), a second looks at the tablets
 * led by `from` only; both are O(tablets * rf), with no scratch memory
 * beyond the caller's per-server load array. The master calls this once per
 * heartbeat of a server that leads something, so a cluster of S servers
 * and T tablets costs O(S * T * rf) a heartbeat period: cheap next to the
 * heartbeat replies it builds anyway (the create reconciliation walks every
 * tablet too). */
#include "master/balance.h"

#include <string.h>

#include "common/check.h"

static bool in_flight(const struct balance_tablet *t, uint64_t now_ms, uint64_t cooldown_ms)
{
	return t->moved_ms != 0 && now_ms - t->moved_ms < cooldown_ms;
}

void balance_count(const struct balance_tablet *tablets, size_t n_tablets, size_t n_servers,
		   uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load)
{
	for (size_t s = 0; s < n_servers; s++) {
		load[s].leaders = 0;
		load[s].settled = true;
	}
	for (size_t i = 0; i < n_tablets; i++) {
		const struct balance_tablet *t = &tablets[i];
		size_t who = in_flight(t, now_ms, cooldown_ms) ? t->moved_to : t->leader;
		PRE(t->n_replicas >= 1 && t->n_replicas <= PLACEMENT_MAX_RF);
		if (who != BALANCE_NONE) {
			PRE(who < n_servers);
			load[who].leaders++;
		}
		for (uint32_t k = 0; k < t->n_replicas; k++) {
			if (t->server[k] == BALANCE_NONE)
				continue;
			PRE(t->server[k] < n_servers);
			if (!t->ready[k])
				load[t->server[k]].settled = false;
		}
	}
}

/* Every replica of t on a live server is ready, and they are a majority. */
static bool movable(const struct balance_server *servers, const struct balance_tablet *t)
{
	uint32_t ready = 0;
	for (uint32_t k = 0; k < t->n_replicas; k++) {
		if (t->server[k] == BALANCE_NONE || !servers[t->server[k]].live)
			continue;
		if (!t->ready[k])
			return false;
		ready++;
	}
	return ready > t->n_replicas / 2;
}

bool balance_pick(const struct balance_server *servers, size_t n_servers,
		  const struct balance_tablet *tablets, size_t n_tablets, size_t from,
		  uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load,
		  struct balance_move *out)
{
	struct balance_move best = {BALANCE_NONE, 0, BALANCE_NONE};

	PRE(from < n_servers);
	balance_count(tablets, n_tablets, n_servers, now_ms, cooldown_ms, load);
	if (!servers[from].live || load[from].leaders < 2)
		return false;
	for (size_t i = 0; i < n_tablets; i++) {
		const struct balance_tablet *t = &tablets[i];
		if (t->leader != from || in_flight(t, now_ms, cooldown_ms) || !movable(servers, t))
			continue;
		for (uint32_t k = 0; k < t->n_replicas; k++) {
			size_t y = t->server[k];
			if (y == BALANCE_NONE || y == from || !servers[y].live || !load[y].settled ||
			    load[from].leaders < load[y].leaders + 2)
				continue;
			if (best.to != BALANCE_NONE &&
			    (load[y].leaders > load[best.to].leaders ||
			     (load[y].leaders == load[best.to].leaders && y >= best.to)))
				continue;
			best.tablet = i;
			best.replica = k;
			best.to = y;
		}
	}
	if (best.to == BALANCE_NONE)
		return false;
	ASSERT(best.to != from && servers[best.to].live);
	*out = best;
	return true;
}
