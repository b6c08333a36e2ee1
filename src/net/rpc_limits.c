/* Connections per source address: a chained hash table keyed by the IPv4
 * address, one node per address with live connections. See rpc_limits.h. */
#include "net/rpc_limits.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/mem.h"

struct ip_count {
	struct ip_count *next;
	uint32_t ip;
	uint32_t n;
};

static unsigned bucket(uint32_t ip)
{
	return ((ip * 2654435761u) >> 24) & (IP_COUNTS_BUCKETS - 1); /* Knuth */
}

static struct ip_count **find(struct ip_counts *t, uint32_t ip)
{
	struct ip_count **pp = &t->buckets[bucket(ip)];
	while (*pp != NULL && (*pp)->ip != ip)
		pp = &(*pp)->next;
	return pp;
}

void ip_counts_init(struct ip_counts *t)
{
	memset(t, 0, sizeof *t);
}

void ip_counts_free(struct ip_counts *t)
{
	for (unsigned i = 0; i < IP_COUNTS_BUCKETS; i++) {
		struct ip_count *c = t->buckets[i], *next;
		for (; c != NULL; c = next) {
			next = c->next;
			free(c);
		}
		t->buckets[i] = NULL;
	}
	t->total = 0;
}

uint32_t ip_counts_get(const struct ip_counts *t, uint32_t ip)
{
	const struct ip_count *c = t->buckets[bucket(ip)];
	while (c != NULL && c->ip != ip)
		c = c->next;
	return c != NULL ? c->n : 0;
}

void ip_counts_add(struct ip_counts *t, uint32_t ip)
{
	struct ip_count **pp = find(t, ip);
	if (*pp == NULL) {
		*pp = xzalloc(sizeof **pp);
		(*pp)->ip = ip;
	}
	(*pp)->n++;
	t->total++;
}

void ip_counts_remove(struct ip_counts *t, uint32_t ip)
{
	struct ip_count **pp = find(t, ip), *c = *pp;

	PRE(c != NULL && c->n > 0 && t->total > 0);
	t->total--;
	if (--c->n == 0) {
		*pp = c->next;
		free(c);
	}
}
