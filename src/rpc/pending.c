/* The RPC client's pending calls: a call id table and a deadline heap
 * (see pending.h).
 *
 * Design note. Every pending call is in three places: the id table (to
 * match a response to its call), the deadline heap (one timer for all
 * deadlines, armed at the earliest), and its connection's list (client.c:
 * to fail them all when it breaks). The first two are here, as plain data
 * structures over fields of struct rpc_call_req, so neither allocates per
 * call. The id table is a chained hash on the id's low bits (ids are
 * consecutive, so they spread evenly), doubled when it holds as many calls
 * as buckets. The heap keeps each call's index in the call, so a call
 * that completes early (reply, failure) leaves it in O(log n) without a
 * search. Neither knows about timers: a change of the earliest deadline is
 * reported to the caller, which arms the one timer. */
#include "rpc/pending.h"

#include <stdlib.h>

#include "common/check.h"
#include "common/mem.h"

#define IDS_INITIAL 64 /* buckets, a power of two */

void pending_init(struct rpc_client *cl)
{
	cl->ids_mask = IDS_INITIAL - 1;
	cl->ids = xcalloc(IDS_INITIAL, sizeof *cl->ids);
}

void pending_free(struct rpc_client *cl)
{
	ASSERT(cl->n_ids == 0 && cl->heap_len == 0);
	free(cl->ids);
	cl->ids = NULL;
	free(cl->heap);
	cl->heap = NULL;
}

/* ---- call id table ---- */

static void ids_grow(struct rpc_client *cl)
{
	size_t n = (cl->ids_mask + 1) * 2;
	struct rpc_call_req **t = xcalloc(n, sizeof *t);

	for (size_t i = 0; i <= cl->ids_mask; i++) {
		struct rpc_call_req *r, *next;
		for (r = cl->ids[i]; r != NULL; r = next) {
			next = r->id_next;
			r->id_next = t[r->id & (n - 1)];
			t[r->id & (n - 1)] = r;
		}
	}
	free(cl->ids);
	cl->ids = t;
	cl->ids_mask = n - 1;
}

void pending_id_insert(struct rpc_client *cl, struct rpc_call_req *req)
{
	struct rpc_call_req **b;

	if (cl->n_ids >= cl->ids_mask + 1)
		ids_grow(cl);
	b = &cl->ids[req->id & cl->ids_mask];
	req->id_next = *b;
	*b = req;
	cl->n_ids++;
}

struct rpc_call_req *pending_id_find(struct rpc_client *cl, uint64_t id)
{
	struct rpc_call_req *r;

	for (r = cl->ids[id & cl->ids_mask]; r != NULL; r = r->id_next)
		if (r->id == id)
			return r;
	return NULL;
}

void pending_id_remove(struct rpc_client *cl, struct rpc_call_req *req)
{
	struct rpc_call_req **pp = &cl->ids[req->id & cl->ids_mask];

	while (*pp != NULL && *pp != req)
		pp = &(*pp)->id_next;
	ASSERT(*pp == req);
	*pp = req->id_next;
	req->id_next = NULL;
	cl->n_ids--;
}

/* ---- deadline heap (min-heap on deadline, index kept in each req) ---- */

static void heap_set(struct rpc_client *cl, size_t i, struct rpc_call_req *r)
{
	cl->heap[i] = r;
	r->heap_index = i;
}

static void heap_up(struct rpc_client *cl, size_t i)
{
	struct rpc_call_req *r = cl->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (cl->heap[parent]->deadline <= r->deadline)
			break;
		heap_set(cl, i, cl->heap[parent]);
		i = parent;
	}
	heap_set(cl, i, r);
}

static void heap_down(struct rpc_client *cl, size_t i)
{
	struct rpc_call_req *r = cl->heap[i];

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= cl->heap_len)
			break;
		if (child + 1 < cl->heap_len &&
		    cl->heap[child + 1]->deadline < cl->heap[child]->deadline)
			child++;
		if (r->deadline <= cl->heap[child]->deadline)
			break;
		heap_set(cl, i, cl->heap[child]);
		i = child;
	}
	heap_set(cl, i, r);
}

bool pending_deadline_push(struct rpc_client *cl, struct rpc_call_req *r)
{
	if (cl->heap_len == cl->heap_cap) {
		size_t cap = cl->heap_cap ? cl->heap_cap * 2 : 64;
		cl->heap = xrealloc(cl->heap, cap * sizeof *cl->heap);
		cl->heap_cap = cap;
	}
	heap_set(cl, cl->heap_len++, r);
	heap_up(cl, r->heap_index);
	return r->heap_index == 0;
}

bool pending_deadline_remove(struct rpc_client *cl, struct rpc_call_req *r)
{
	size_t i = r->heap_index;
	struct rpc_call_req *last;

	ASSERT(i < cl->heap_len && cl->heap[i] == r);
	r->heap_index = SIZE_MAX;
	last = cl->heap[--cl->heap_len];
	if (last != r) {
		heap_set(cl, i, last);
		heap_up(cl, i);
		heap_down(cl, last->heap_index);
	}
	return i == 0;
}

