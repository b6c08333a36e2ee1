/* A stand-in for policy.c (helper "policy" writes the real one): the
 * rules of policy.h without zones, enough to drive moves.c until the real
 * policy is merged. DELETE THIS FILE when merging branch policy. */
#include "master/policy.h"

#include <ctype.h>
#include <string.h>

#include "common/err.h"

const char *policy_reason_name(enum policy_reason r)
{
	switch (r) {
	case POLICY_REREPLICATE: return "re-replicate";
	case POLICY_DRAIN: return "drain";
	case POLICY_REBALANCE: return "rebalance";
	}
	return "?";
}

static bool holds(const struct policy_tablet *t, size_t s)
{
	for (uint32_t k = 0; k < t->n_replicas; k++)
		if (t->server[k] == s)
			return true;
	return false;
}

static bool target_ok(const struct policy_server *sv, const uint32_t *busy, uint32_t per, size_t s)
{
	return sv[s].live && !sv[s].failed && !sv[s].draining &&
	       sv[s].moves_in_flight + busy[s] < per;
}

size_t policy_pick(const struct policy_server *servers, size_t n_servers,
		   const struct policy_tablet *tablets, size_t n_tablets, size_t max_moves,
		   uint32_t max_per_server, struct policy_move *out)
{
	uint32_t busy[256] = {0}, load[256];
	size_t n = 0;
	if (n_servers > 256)
		n_servers = 256;
	for (size_t s = 0; s < n_servers; s++)
		load[s] = servers[s].load;
	for (int reason = POLICY_REREPLICATE; reason <= POLICY_REBALANCE; reason++) {
		for (size_t i = 0; i < n_tablets && n < max_moves; i++) {
			const struct policy_tablet *t = &tablets[i];
			uint32_t up = 0;
			bool taken = false;
			for (size_t j = 0; j < n; j++)
				taken |= out[j].tablet == i;
			if (taken || t->moving || t->n_replicas > t->rf)
				continue;
			for (uint32_t k = 0; k < t->n_replicas; k++)
				up += t->up[k];
			if (up <= (t->n_replicas + 1) / 2)
				continue;
			for (uint32_t k = 0; k < t->n_replicas; k++) {
				size_t s = t->server[k], best = POLICY_NONE;
				bool want;
				if (reason == POLICY_REREPLICATE)
					want = s == POLICY_NONE || servers[s].failed;
				else if (reason == POLICY_DRAIN)
					want = s != POLICY_NONE && servers[s].draining && !servers[s].failed;
				else
					want = s != POLICY_NONE && servers[s].live && !servers[s].draining;
				if (!want || (s != POLICY_NONE && s < n_servers &&
					      busy[s] + servers[s].moves_in_flight >= max_per_server &&
					      reason != POLICY_REREPLICATE))
					continue;
				for (size_t c = 0; c < n_servers; c++)
					if (target_ok(servers, busy, max_per_server, c) && !holds(t, c) &&
					    (best == POLICY_NONE || load[c] < load[best]))
						best = c;
				if (best == POLICY_NONE)
					continue;
				if (reason == POLICY_REBALANCE && load[s] <= load[best] + 1)
					continue;
				out[n].tablet = i;
				out[n].replica = k;
				out[n].to = best;
				out[n].reason = (enum policy_reason)reason;
				load[best]++;
				busy[best]++;
				if (s != POLICY_NONE && s < n_servers) {
					busy[s]++;
					if (reason == POLICY_REBALANCE)
						load[s]--;
				}
				n++;
				break;
			}
		}
	}
	return n;
}

uint32_t policy_zone_index(const char **zones, uint32_t *n_zones, uint32_t cap, const char *zone)
{
	for (uint32_t i = 0; i < *n_zones; i++)
		if (strcmp(zones[i], zone) == 0)
			return i;
	if (*n_zones >= cap)
		return cap;
	zones[*n_zones] = zone;
	return (*n_zones)++;
}

bool policy_placement_valid(const char *s, char *errmsg)
{
	int parts = 1;
	size_t len = strlen(s), part = 0;
	if (len == 0)
		return true;
	if (len > 64) {
		err_set(errmsg, DOCRAFT_EINVAL, "placement longer than 64 bytes");
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.') {
			if (part == 0)
				break;
			parts++;
			part = 0;
		} else if (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-') {
			part++;
		} else {
			part = 0;
			break;
		}
	}
	if (parts != 3 || part == 0) {
		err_set(errmsg, DOCRAFT_EINVAL, "placement '%s' is not cloud.region.zone", s);
		return false;
	}
	return true;
}
