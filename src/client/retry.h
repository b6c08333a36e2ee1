/* One request's life: a call to a tablet's leader with retries (struct
 * tcall), and the loading of a table into the metadata cache (struct
 * tload). The state machine is drawn at the top of retry.c.
 *
 * Both are caller memory embedded in a job; their callback runs exactly
 * once, never inside the start function, and they hold no libuv handle
 * (timers are ctimers, the RPC is an rpc_call_req), so the owner may free
 * them from the callback on. Threading: the client's loop thread only. */
#ifndef DOCRAFT_CLIENT_RETRY_H
#define DOCRAFT_CLIENT_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/ctimer.h"
#include "client/metacache.h"
#include "rpc/rpc.h"

/* NOT_LEADER redirects followed at once, without a refresh or a backoff
 * (then: an election is probably under way, so back off and refresh). */
#define TCALL_MAX_HOPS 4
#define TCALL_TABLET_ID_MAX 128

struct tcall;
/* status 0: reply[0..len) is the answer (valid only during the call).
 * Otherwise a final error of the server, DOCRAFT_EUNAVAILABLE (the
 * deadline passed; errmsg names the last failure) or DOCRAFT_ECLOSED. */
typedef void (*tcall_cb)(struct tcall *t, int status, const char *errmsg, const uint8_t *reply,
			 size_t len);
/* Called before each attempt, after the tablet id field is set, to update
 * the message (e.g. WriteRequest.min_running). May be NULL. */
typedef void (*tcall_prepare_cb)(struct tcall *t);

enum tcall_state {
	TCALL_IDLE = 0,
	TCALL_LOCATE,  /* transient: finding the tablet and its leader */
	TCALL_SEND,    /* RPC in flight */
	TCALL_BACKOFF, /* waiting before a refresh */
	TCALL_REFRESH, /* waiting for the table's new locations */
	TCALL_DONE,
};

struct tcall {
	void *data; /* free for the owner */

	/* Set by tcall_init. */
	docraft_client *c;
	struct mc_table *table;
	uint32_t route;          /* the hash whose tablet is called */
	const char *by_id;       /* or: the tablet with this id (admin) */
	const char *replica;     /* or: always this address (admin dump) */
	uint16_t method;
	ProtobufCMessage *msg;   /* repacked for every attempt */
	char **tablet_id_field;  /* msg's tablet_id, set for every attempt */
	/* Optional (set after tcall_init): msg's table_id, set for every
	 * attempt to the cached table's id (mc_table.id), so that a tablet of
	 * a dropped incarnation of the table refuses it (WRONG_TABLET). */
	char **table_id_field;
	uint64_t deadline;       /* uv_now() ms */
	tcall_cb cb;
	tcall_prepare_cb prepare;

	/* Outcome of the successful attempt (for scans: the next tablet). */
	uint32_t tablet_start, tablet_end;

	/* Counters, for tests and error messages. */
	unsigned attempts;  /* RPCs sent */
	unsigned redirects; /* NOT_LEADER hints followed */
	unsigned refreshes; /* table refreshes asked for */
	unsigned wrong_tablets; /* WRONG_TABLET answers */

	/* Private. */
	enum tcall_state state;
	char tablet_id[TCALL_TABLET_ID_MAX];
	char target[RPC_ADDRESS_MAX + 1];
	unsigned hops;
	uint32_t backoff_ms;
	struct tcall *bo_prev, *bo_next; /* in table->backing_off */
	bool bo_linked;
	int final;          /* status delivered from the timer */
	struct ctimer timer;
	struct mc_waiter waiter;
	struct rpc_call_req rpc;
	int last_status;
	char last_msg[DOCRAFT_ERRMSG_SIZE];
};

/* Prepares t to call method on the tablet of table covering route, with
 * msg (borrowed until the callback; its tablet id field is overwritten).
 * Use tcall_by_id / tcall_to_replica to route otherwise. */
void tcall_init(struct tcall *t, docraft_client *c, struct mc_table *table, uint32_t route,
		uint16_t method, ProtobufCMessage *msg, char **tablet_id_field, uint64_t deadline,
		tcall_cb cb);
/* Routes by tablet id (borrowed) instead of by hash. */
void tcall_by_id(struct tcall *t, const char *tablet_id);
/* Sends every attempt to address (borrowed), ignoring leaders. */
void tcall_to_replica(struct tcall *t, const char *address);
/* Starts the call. The callback runs later, exactly once. */
void tcall_start(struct tcall *t);

/* ---- loading a table ---- */

struct tload;
/* status 0: the table is loaded (and refreshed when force was given). */
typedef void (*tload_cb)(struct tload *l, int status, const char *errmsg);

struct tload {
	void *data;

	/* Private. */
	docraft_client *c;
	struct mc_table *table;
	uint64_t deadline;
	bool force;
	uint32_t backoff_ms;
	int final;
	char final_msg[DOCRAFT_ERRMSG_SIZE];
	struct ctimer timer;
	struct mc_waiter waiter;
	tload_cb cb;
};

/* Makes sure table is in the cache (force: refreshed from the master even
 * if it is), retrying a master that is unavailable until deadline. cb runs
 * exactly once, never synchronously. */
void tload_start(struct tload *l, docraft_client *c, struct mc_table *table, bool force,
		 uint64_t deadline, tload_cb cb);

#endif
