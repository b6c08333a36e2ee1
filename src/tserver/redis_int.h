/* Internals of the tserver's Redis front end (redis_data.c and the files
 * beside it): a "fan", one front-end command's Redis commands sent to
 * their tablets, and a reader for the RESP replies they get back.
 *
 * A fan collects sub-commands (a slot and an argv each), groups them per
 * slot (or, given the database's tablets, per tablet, or all into one
 * request), sends one docraft_redis_async per group, and once every group
 * has answered calls done(), which writes the command's reply from the
 * subs' replies (in the order they were added). A failure of the cluster
 * on any group replies "-ERR docraft: <reason>" instead. Then the fan is
 * freed and the connection completed. Loop thread only; one fan belongs
 * to one command in progress. */
#ifndef DOCRAFT_TSERVER_REDIS_INT_H
#define DOCRAFT_TSERVER_REDIS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docraft/docraft.h"
#include "redis/server.h"
#include "tserver/redis_data.h"

struct fan;
typedef void (*fan_fn)(struct fan *f);

struct fan_sub {
	uint16_t slot;
	uint32_t argc;
	const docraft_bytes *argv;
	/* the reply, once answered: owned by the group's result */
	const char *rep;
	size_t rep_n;
};

/* One request of a fan: subs[0..n) are indexes into f->subs. */
struct fan_group {
	docraft_req req;
	struct fan *f;
	uint16_t slot; /* the route: its first sub's slot */
	size_t key;    /* what group_for groups by */
	size_t n, cap;
	size_t *subs;
};

struct fan {
	struct redis_conn *c;
	struct redis_data *d;
	unsigned db;
	struct arena mem; /* argv built for subs, freed with the fan */
	struct fan_sub *subs;
	size_t n_subs, cap_subs;
	bool write;  /* some sub writes */
	bool batch;  /* one command that may share a request with other
			connections' (redis_batch.c) */
	bool single; /* every sub into one request (EXEC) */
	/* grouped per tablet (f->tablets), regrouped per slot when a tablet
	 * refuses a request as spanning others (a stale cache) */
	bool regroup, by_slot;
	bool unsure; /* a group failed for another reason than EWRONGTABLET:
			its commands may have applied, so no regroup resends them */
	fan_fn done; /* every group answered: write the reply */
	/* the command's own state (EXEC's queue, SCAN's cursor...) */
	const void *arg;
	size_t n_arg;
	uint64_t u;
	docraft_result *tablets;  /* fan_tablets' answer; NULL before */
	struct fan_group *groups; /* grown as groups are made (never while a
				     round's requests are in flight) */
	size_t n_groups, groups_cap, pending;
	size_t round; /* the first group of the requests in flight */
	int status;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	docraft_req treq; /* fan_tablets' request */
};

/* A fan for c's command, or NULL after replying the "no masters" error
 * (the caller returns REDIS_DONE then). */
struct fan *fan_new(struct redis_conn *c);
/* Adds a sub-command: argv (argc words) is copied into the fan, with
 * argv[0] replaced by name when name is not NULL. */
void fan_add(struct fan *f, uint16_t slot, const char *name, uint32_t argc,
	     const struct resp_arg *argv);
/* Sends the subs (n_subs > 0) and returns REDIS_ASYNC; done(f) runs once
 * all answered (or the error is replied). */
int fan_run(struct fan *f, fan_fn done);
/* Fetches the database's tablets into f->tablets, then calls next(f),
 * which goes on with fan_run, or replies and calls fan_end (on failure
 * the error is replied and the fan ends here). Returns REDIS_ASYNC. */
int fan_tablets(struct fan *f, fan_fn next);
/* The tablet of f->tablets owning slot (index), or SIZE_MAX. */
size_t fan_tablet_of(const struct fan *f, uint16_t slot);
/* Ends the fan: frees it, completes the connection (its reply written). */
void fan_end(struct fan *f);
/* Ends the fan replying "-ERR docraft: <msg>". */
void fan_fail(struct fan *f, const char *msg);

/* Sends group g (of a round of fan_run) in a request of its own. */
void fan_group_send(struct fan_group *g);
/* The command of g (one sub) as the client takes it. */
void fan_group_cmd(const struct fan_group *g, docraft_redis_cmd *out);
/* g's request answered: status, with errmsg when not DOCRAFT_OK, else
 * replies first..first + g->n of r (the caller checked they exist; r
 * must outlive the fan, which a fan of one group ends in here). */
void fan_group_answer(struct fan_group *g, int status, const char *errmsg, const docraft_result *r,
		      size_t first);
/* The message of a synchronous failure rv of a docraft_redis_async. */
const char *fan_sync_error(int rv);

/* ---- batching across connections (redis_batch.c) ----
 *
 * The single-key commands of a loop turn bound for one tablet share one
 * request, sent in that turn's check phase: the design note of
 * redis_batch.c. Loop thread only. */
struct redis_batcher;
struct redis_batch_stats {
	uint64_t requests; /* shared requests sent (two commands or more) */
	uint64_t commands; /* commands they carried */
	uint64_t split;    /* refused whole (stale tablet, read too big): sent one by one */
};
/* A batcher of client's requests on loop: 0, or a libuv error. */
int redis_batcher_new(uv_loop_t *loop, docraft_client *client, struct redis_batcher **out);
/* Adds group g (one command, of database db, write or read, bytes of
 * arguments, a read or a yedis_reply_small write) to this turn's request
 * for its tablet; it is answered through fan_group_answer, or sent on its
 * own (fan_group_send). */
void redis_batch_add(struct redis_batcher *b, struct fan_group *g, unsigned db, bool write,
		     uint16_t slot, size_t bytes);
void redis_batcher_stats(const struct redis_batcher *b, struct redis_batch_stats *out);
/* Sends what is collected; frees b and calls cb(arg) from the loop once
 * its handles are closed and every request it sent is answered (closing
 * the client answers them). Before the client closes. */
void redis_batcher_close(struct redis_batcher *b, void (*cb)(void *arg), void *arg);

/* ---- reading replies (the tablets' RESP2, trusted only so far) ---- */

/* A reply's integer (":N"), false when it is not one. */
bool rr_int(const char *p, size_t n, long long *v);
/* An array's header: its count and the header's length; false if not one. */
bool rr_array(const char *p, size_t n, long long *count, size_t *hdr);
/* The bulk string at p: its bytes at *s (*sn of them) and the whole
 * element's length *used; false when not a bulk. */
bool rr_bulk(const char *p, size_t n, const char **s, size_t *sn, size_t *used);
/* A reply is an error ("-..."). */
static inline bool rr_is_error(const char *p, size_t n)
{
	return n > 0 && p[0] == '-';
}

/* ---- command functions of the files beside redis_data.c ---- */

int redis_cmd_mget(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_mset(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_del(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_keys(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_scan(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_dbsize(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_flushdb(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_flushall(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
int redis_cmd_randomkey(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
extern const struct redis_command redis_cluster_subs[];
/* A tserver's Redis Cluster node id: uuid's hex digits, zero-padded to 40. */
void redis_node_id(char out[41], const char *uuid);
extern const size_t redis_cluster_n_subs;

/* Splits a multi-key front-end command (MGET MSET DEL EXISTS) into fan
 * subs; false when name is not one. */
bool redis_split_multikey(struct fan *f, uint32_t argc, const struct resp_arg *argv);
/* Writes the reply of a command split by redis_split_multikey from its
 * subs first..first+n. */
void redis_join_multikey(struct buf *out, const struct resp_arg *name, const struct fan_sub *subs,
			 size_t n);

#endif
