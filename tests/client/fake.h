/* A fake docraft cluster for the client tests: two masters and three
 * tablet servers, each a real rpc_server on its own loopback listener
 * (127.0.0.1, .2, .3, port chosen by the kernel), all on one loop run by a
 * thread of their own. They speak the real protocol (proto/docraft.proto)
 * but hold no data: the masters serve one table with two tablets from a
 * scripted catalog, the tablet servers log every request and answer as
 * the test scripts them (NOT_LEADER with or without a hint, a black hole,
 * TABLET_NOT_FOUND once, a gate that holds writes until N arrived, ...).
 *
 * Threading: the test thread changes the script and reads the logs under
 * f->mu (fake_lock / fake_unlock); the server thread handles requests
 * under the same mutex. Handlers never CHECK (they run on another thread):
 * anything unexpected is counted in f->errors. */
#ifndef DOCRAFT_TESTS_CLIENT_FAKE_H
#define DOCRAFT_TESTS_CLIENT_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "rpc/rpc.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"

#define FAKE_TS 3
#define FAKE_TABLETS 2
#define FAKE_LOG_MAX 256
#define FAKE_HELD_MAX 64

enum fake_ts_mode {
	TS_NORMAL = 0,
	TS_BLACKHOLE, /* never answers (until the fake stops) */
	TS_EINVAL,    /* answers every data call INVALID_ARGUMENT */
};

/* One data request a tablet server received. */
struct fake_req {
	int ts;              /* index of the tablet server */
	uint16_t method;
	char tablet[64];
	uint8_t client_id[16];
	uint64_t seq, min_running;
	bool hash_ok;        /* every key hashes into the tablet's partition */
	ProtobufCMessage *msg; /* the unpacked request (owned) */
};

struct fake_server {
	struct fake *f;
	int kind;  /* 0 master, 1 tserver */
	int index;
	struct listener *l;
	struct rpc_server rpc;
	char addr[32];
	bool closed;
};

/* The catalog view the masters serve. */
struct fake_view {
	char ids[FAKE_TABLETS][64];
	uint64_t leader[FAKE_TABLETS]; /* raft id, 0: unknown */
	char addr[4][32];              /* address of raft id 1..3 */
};

struct fake {
	uv_loop_t loop;
	uv_thread_t thread;
	uv_async_t stop_async;
	uv_mutex_t mu;
	struct fake_server master[2];
	struct fake_server ts[FAKE_TS];
	char dead_addr[32]; /* an address where nothing listens */

	/* Script, under mu. */
	bool has_table;
	struct schema schema;       /* valid when has_table */
	uint8_t *schema_pb;         /* packed TableSchema */
	size_t schema_pb_len;
	struct fake_view view;      /* what the masters say */
	struct fake_view next_view; /* ... after switch_after GetTable calls */
	int switch_after;           /* 0: never */
	bool master1_follower;      /* master 1 answers NOT_LEADER -> master 0 */
	int truth[FAKE_TABLETS];    /* tserver leading each tablet */
	bool hints;                 /* NOT_LEADER carries the leader's address */
	int mode[FAKE_TS];
	char tnf_tablet[64];        /* answered TABLET_NOT_FOUND once */
	int gate;                   /* hold writes until this many are held */
	uint8_t *read_reply;        /* canned ReadResponse (NULL: not found) */
	size_t read_reply_len;
	uint8_t *scan_pages[4];     /* canned ScanResponses, served in turn */
	size_t scan_page_len[4];
	int n_scan_pages, next_scan_page;

	/* Logs, under mu. */
	struct fake_req reqs[FAKE_LOG_MAX];
	int nreqs;
	int get_table_calls[2];
	int master_calls[2];        /* every master request, per master */
	int create_calls, drop_calls;
	Docraft__CreateTableRequest *created; /* last CreateTable (owned) */
	struct rpc_call *held[FAKE_HELD_MAX];
	int nheld;
	int gate_released;
	uint64_t ht_clock;
	int errors;
};

/* Starts the fake (servers bound, thread running); no table yet. */
void fake_start(struct fake *f);
/* Stops the servers (held calls answered CLOSED), joins the thread,
 * frees everything. */
void fake_stop(struct fake *f);
void fake_lock(struct fake *f);
void fake_unlock(struct fake *f);

/* Defines the table from a CREATE TABLE statement, with tablets
 * "<table>-0-aaaa" and "<table>-1-aaaa" on raft ids 1..3 = tservers 0..2,
 * leaders raft 1 in the view and tserver 0 in truth. Under the lock. */
void fake_set_table(struct fake *f, const char *create_cql);
/* "masters" string for a client: "m0,m1" addresses. */
const char *fake_masters(const struct fake *f);

/* The tablet (0 or 1) of a hash. */
static inline int fake_tablet_of(uint32_t hash)
{
	return hash >= 32768;
}

/* Packs msg into a malloc'd buffer. */
uint8_t *fake_pack(const ProtobufCMessage *msg, size_t *len);

#endif
