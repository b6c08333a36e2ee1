/* Intrusive doubly linked lists: the node struct has fields named prev and
 * next, the owner holds a pointer to the first node (NULL: empty).
 *
 * Design note. The one-port listener (incoming connections), the RPC server
 * (connections, calls in flight), the RPC client (calls per connection) and
 * the RPC output flusher (dirty connections) each keep such a list, and
 * each wrote the same unlink by hand; so did raft/transport.c,
 * client/metacache.c, client/client.c, tablet/tablet_write.c and
 * docdb/store_env.c. These two macros are that
 * code, once, in common/ so that every layer may use them. The lists are
 * unordered bags: push puts a node first, remove takes it out from
 * anywhere in O(1); neither allocates. Pure: no I/O, no libuv.
 *
 * head is an lvalue (a field or variable of the node pointer type) and may
 * be evaluated several times; so may n, which must not have side effects
 * and must not be head itself (DLIST_REMOVE(l->first, l->first) would
 * read n after writing head: copy it to a variable first). A node must be
 * in at most one list through a given pair of fields.
 * Not thread-safe: the list's owner serializes access. */
#ifndef DOCRAFT_COMMON_DLIST_H
#define DOCRAFT_COMMON_DLIST_H

#include <stddef.h>

/* Puts n (in no list) first in the list at head. */
#define DLIST_PUSH(head, n)                                                                 \
	do {                                                                                \
		(n)->prev = NULL;                                                           \
		(n)->next = (head);                                                         \
		if ((head) != NULL)                                                         \
			(head)->prev = (n);                                                 \
		(head) = (n);                                                               \
	} while (0)

/* Takes n out of the list at head (n must be in it); n's links become NULL. */
#define DLIST_REMOVE(head, n)                                                               \
	do {                                                                                \
		if ((n)->prev != NULL)                                                      \
			(n)->prev->next = (n)->next;                                        \
		else                                                                        \
			(head) = (n)->next;                                                 \
		if ((n)->next != NULL)                                                      \
			(n)->next->prev = (n)->prev;                                        \
		(n)->prev = (n)->next = NULL;                                               \
	} while (0)

#endif
