/* The client's list of masters (issue 15, docs/cluster.md "Master
 * membership"): learned from the cluster, not only from the caller's list.
 *
 * Design. The list starts as the caller's (docraft_client_open) and is
 * "stale". After a master call succeeds while the list is stale, one
 * ListMasters (any master answers it) runs in the background; its answer
 * becomes the list, followed by the caller's addresses it does not name
 * (kept as a fallback: a master removed from the cluster may still point
 * to the leader). The list turns stale again whenever every master of it
 * failed in a row (metacache.c's backoff), so the next success learns it
 * anew. A NOT_LEADER hint naming an address the list lacks adds it at
 * once. One ListMasters at a time; it is heap memory owned by its own
 * callback, which also runs (ECLOSED) when the client closes.
 *
 * Threading: the client's loop thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "common/log.h"
#include "common/mem.h"
#include "rpc.pb-c.h"

void client_masters_init(docraft_client *c)
{
	for (size_t i = 0; i < c->n_masters; i++)
		snprintf(c->flag_masters[i], sizeof c->flag_masters[i], "%s", c->masters[i]);
	c->n_flag_masters = c->n_masters;
	c->masters_stale = true;
}

static bool listed(const docraft_client *c, const char *address)
{
	for (size_t i = 0; i < c->n_masters; i++)
		if (strcmp(c->masters[i], address) == 0)
			return true;
	return false;
}

void client_masters_hint(docraft_client *c, const char *address)
{
	if (address[0] == '\0' || strlen(address) > RPC_ADDRESS_MAX || listed(c, address) ||
	    c->n_masters == CLIENT_MAX_MASTERS)
		return;
	snprintf(c->masters[c->n_masters++], sizeof c->masters[0], "%s", address);
	c->masters_stale = true;
}

static void learned(struct mcall *m, int status, const char *errmsg, const uint8_t *reply,
		    size_t len)
{
	docraft_client *c = m->c;
	Docraft__ListMastersResponse *resp;
	size_t n = 0;

	c->masters_learning = false;
	if (status != 0) {
		LOG_DEBUG("docraft client: ListMasters: %s", errmsg);
		free(m);
		return;
	}
	free(m);
	resp = docraft__list_masters_response__unpack(NULL, len, reply);
	if (resp == NULL || resp->n_masters == 0) {
		if (resp != NULL)
			docraft__list_masters_response__free_unpacked(resp, NULL);
		return;
	}
	for (size_t i = 0; i < resp->n_masters && n < CLIENT_MAX_MASTERS; i++)
		if (strlen(resp->masters[i]) <= RPC_ADDRESS_MAX)
			snprintf(c->masters[n++], sizeof c->masters[0], "%s", resp->masters[i]);
	c->n_masters = n;
	for (size_t i = 0; i < c->n_flag_masters && c->n_masters < CLIENT_MAX_MASTERS; i++)
		if (!listed(c, c->flag_masters[i]))
			snprintf(c->masters[c->n_masters++], sizeof c->masters[0], "%s",
				 c->flag_masters[i]);
	c->masters_stale = false;
	docraft__list_masters_response__free_unpacked(resp, NULL);
}

void client_masters_learn(docraft_client *c)
{
	Docraft__ListMastersRequest req = DOCRAFT__LIST_MASTERS_REQUEST__INIT;
	struct mcall *m;

	if (!c->masters_stale || c->masters_learning || c->closing)
		return;
	c->masters_learning = true;
	m = xcalloc(1, sizeof *m);
	mcall_start(m, c, DOCRAFT__METHOD__MASTER_LIST_MASTERS, &req.base,
		    client_now(c) + c->opts.rpc_timeout_ms, learned);
}
