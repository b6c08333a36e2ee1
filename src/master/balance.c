/* Leader balancing (see balance.h).
 *
 * Design. One pass counts (balance_count), a second looks at the tablets
 * led by `from` only, table by table: for each run of adjacent tablets of
 * one table that `from` leads a tablet of, the per-table counts of the
 * servers that run names are recounted into load[].table_leaders (zeroed
 * first for those servers only, so a run costs its own size), then its
 * tablets led by `from` are ranked. Both passes are O(tablets * rf), with
 * no scratch memory beyond the caller's per-server load array. The master calls this once per
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

/* The server a tablet counts for (balance.h). */
static size_t counted_at(const struct balance_tablet *t, uint64_t now_ms, uint64_t cooldown_ms)
{
	return in_flight(t, now_ms, cooldown_ms) ? t->moved_to : t->leader;
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
		size_t who = counted_at(t, now_ms, cooldown_ms);
		PRE(t->n_replicas >= 1 && t->n_replicas <= BALANCE_MAX_REPLICAS);
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

/* table_leaders over tablets[a, b) (one table) for every server they
 * name; others' are not touched (and not read). */
static void count_table(const struct balance_tablet *tablets, size_t a, size_t b,
			uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load)
{
	for (size_t i = a; i < b; i++) {
		size_t who = counted_at(&tablets[i], now_ms, cooldown_ms);
		if (who != BALANCE_NONE)
			load[who].table_leaders = 0;
		for (uint32_t k = 0; k < tablets[i].n_replicas; k++)
			if (tablets[i].server[k] != BALANCE_NONE)
				load[tablets[i].server[k]].table_leaders = 0;
	}
	for (size_t i = a; i < b; i++) {
		size_t who = counted_at(&tablets[i], now_ms, cooldown_ms);
		if (who != BALANCE_NONE)
			load[who].table_leaders++;
	}
}

/* A candidate move and its rank: (rule, key1, key2, to), smallest wins. */
struct rank {
	int rule;
	int64_t key1, key2;
};

static bool ranks_before(const struct rank *a, size_t a_to, const struct rank *b, size_t b_to)
{
	if (a->rule != b->rule)
		return a->rule < b->rule;
	if (a->key1 != b->key1)
		return a->key1 < b->key1;
	if (a->key2 != b->key2)
		return a->key2 < b->key2;
	return a_to < b_to;
}

/* The rank of moving a tablet's leader from `from` to y (balance.h's
 * rules), or false when no rule allows it. */
static bool rank_of(const struct balance_server *servers, const struct balance_load *load,
		    size_t from, size_t y, struct rank *r)
{
	int64_t tf = load[from].table_leaders, ty = load[y].table_leaders;
	int64_t f = load[from].leaders, t = load[y].leaders;
	if (servers[from].draining)
		*r = (struct rank){1, ty, t};
	else if (tf >= ty + 2)
		*r = (struct rank){2, ty - tf, t};
	else if (tf >= ty + 1 && f >= t + 2)
		*r = (struct rank){3, t, 0};
	else
		return false;
	return true;
}

bool balance_pick(const struct balance_server *servers, size_t n_servers,
		  const struct balance_tablet *tablets, size_t n_tablets, size_t from,
		  uint64_t now_ms, uint64_t cooldown_ms, struct balance_load *load,
		  struct balance_move *out)
{
	struct balance_move best = {BALANCE_NONE, 0, BALANCE_NONE};
	struct rank best_rank = {0, 0, 0};

	PRE(from < n_servers);
	balance_count(tablets, n_tablets, n_servers, now_ms, cooldown_ms, load);
	if (!servers[from].live || (!servers[from].draining && load[from].leaders < 2))
		return false;
	for (size_t a = 0, b; a < n_tablets; a = b) {
		bool leads = false;
		for (b = a; b < n_tablets && tablets[b].table == tablets[a].table; b++)
			leads = leads || tablets[b].leader == from;
		if (!leads)
			continue;
		count_table(tablets, a, b, now_ms, cooldown_ms, load);
		for (size_t i = a; i < b; i++) {
			const struct balance_tablet *t = &tablets[i];
			if (t->leader != from || in_flight(t, now_ms, cooldown_ms) ||
			    !movable(servers, t))
				continue;
			for (uint32_t k = 0; k < t->n_replicas; k++) {
				size_t y = t->server[k];
				struct rank r;
				if (y == BALANCE_NONE || y == from || !servers[y].live ||
				    servers[y].draining || !load[y].settled ||
				    !rank_of(servers, load, from, y, &r))
					continue;
				if (best.to != BALANCE_NONE && !ranks_before(&r, y, &best_rank, best.to))
					continue;
				best.tablet = i;
				best.replica = k;
				best.to = y;
				best_rank = r;
			}
		}
	}
	if (best.to == BALANCE_NONE)
		return false;
	ASSERT(best.to != from && servers[best.to].live && !servers[best.to].draining);
	*out = best;
	return true;
}
