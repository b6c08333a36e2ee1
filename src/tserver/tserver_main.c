/* docraft-tserver: the tablet server process.
 *
 *   docraft-tserver --address IP:PORT --data DIR [--masters A,B,C] [...]
 *
 * One libuv loop, one TCP port (net/listener.h) carrying client and admin
 * RPCs (tserver/service.h), the Raft traffic of every hosted replica and
 * checkpoint copies (tablet/remote_copy.h). Replicas live under
 * DIR/tablets (tserver/manager.h); DIR/uuid names the server. With
 * --masters it heartbeats the master leader (tserver/heartbeat.h); without,
 * it runs standalone and tablets are created by RPC.
 *
 * What every server does around its loop (flags and --config, signals,
 * the port and its RPC server, the ready line, the close chain, exit
 * codes) is server/skeleton.h; this file holds what is the tserver's: its
 * flag table, DIR/uuid, the parts it opens and closes, the drain of its
 * leaderships on a signal and its replica capacity. The loop-lag probe is
 * the skeleton's (server/web.h).
 *
 * Ready: one line "docraft-tserver <uuid> listening on <address>" on
 * stdout. SIGTERM / SIGINT: every tablet it leads transfers its leadership
 * (waiting at most --shutdown-transfer-ms), then everything is closed in
 * order (heartbeats, RPC, tablets, copies, the port) and the process exits
 * 0. A second signal skips the wait. Logs: stderr (common/log.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <uv.h>

#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"
#include "rpc/rpc.h"
#include "docdb/store_env.h"
#include "net/listener.h"
#include "raft/rmux.h"
#include "raft/segfill.h"
#include "raftlog/raftlog.h"
#include "server/config.h"
#include "server/placement_str.h"
#include "server/skeleton.h"
#include "server/web.h"
#include "tablet/diskspace.h"
#include "tserver/heartbeat.h"
#include "tserver/http_tserver.h"
#include "tserver/logmode.h"
#include "tserver/manager.h"
#include "tserver/redis_front.h" /* issue 17 */
#include "tablet/remote_copy.h"
#include "tserver/service.h"

#define PROG "docraft-tserver"
#define UUID_LEN 32
#define DRAIN_TICK_MS 20

struct config {
	unsigned heartbeat_ms;      /* to the master; 0: heartbeat default */
	unsigned election_ms;       /* raft */
	unsigned heartbeat_raft_ms; /* raft */
	unsigned lease_ms;          /* given: 0 off; not given: 7/10 of election-ms */
	bool lease_given;
	unsigned max_inflight;      /* 0: tablet default */
	bool per_tablet_log;        /* --raft-log per-tablet: raft_uv per replica */
	unsigned log_segment_mb;    /* the shared log's segment size */
	unsigned segment_mb;        /* per-tablet: 0: tablet default */
	bool fill_segments;         /* per-tablet: segfill.h */
	unsigned shutdown_transfer_ms;
	unsigned max_clock_skew_ms;
	unsigned block_cache_mb;    /* 0: store_env default */
	unsigned memstore_mb;       /* 0: store_env default */
	unsigned raft_log_memory_mb; /* 0: no byte bound on Raft's in-memory logs */
	unsigned min_free_disk_mb;  /* diskspace.h reserve */
	unsigned max_replicas;      /* 0: what the process limits allow (host_limits) */
	unsigned retry_ttl_s;       /* 0: tablet default (660) */
	unsigned history_retention_s; /* 0: store default (900) */
	char placement[PLACEMENT_STR_MAX + 1]; /* --placement cloud.region.zone ("": none) */
};


static struct {
	struct server proc;     /* loop, signals, the port and its RPC server (skeleton.h) */
	struct config cfg;
	char uuid[UUID_LEN + 1];
	char *masters[HEARTBEAT_MAX_MASTERS];
	size_t n_masters;

	struct copy_server copy;
	struct rpc_client cl;
	struct manager m;
	struct service svc;
	struct heartbeat hb;
	struct store_env *env;  /* every store's cache and memtable budget */
	struct diskspace disk;  /* the data directory's free-space reserve */
	bool disk_on;
	struct raftlog *log;    /* DIR/raftlog: every replica's Raft log (shared mode) */
	struct rmux *mux;       /* every replica's Raft messages (shared mode) */
	bool copy_on, cl_on, m_on, svc_on, hb_on;
	struct tserver_http http; /* what the HTTP handler reads (http_tserver.h) */
	bool serving;             /* started and not draining (/readyz) */
	/* issue 17: the Redis protocol port (--redis-address) */
	struct tserver_redis redis;
	bool redis_on;
	char redis_address[TSERVER_REDIS_ADDRESS_MAX];
	unsigned redis_max_per_ip; /* --redis-max-connections-per-ip */

	uv_timer_t drain_timer;
	bool handles_on;
	bool stopping, draining;
	uint64_t drain_deadline;
	unsigned transfers;     /* transfers started while draining */
} S;

/* ---- flags ----------------------------------------------------------------------------- */

#define SECONDS_MAX (30u * 86400)

/* --raft-log: shared (false at dst) or per-tablet (true). */
static int set_raft_log(void *dst, const char *name, const char *value, char *errmsg)
{
	if (strcmp(value, logmode_name(true)) != 0 && strcmp(value, logmode_name(false)) != 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "%s takes %s or %s, not '%s'", name,
			       logmode_name(true), logmode_name(false), value);
	*(bool *)dst = strcmp(value, logmode_name(false)) == 0;
	return 0;
}

/* --placement: "" or cloud.region.zone (server/placement_str.h; the master
 * checks the heartbeat's string again). */
static int set_placement(void *dst, const char *name, const char *value, char *errmsg)
{
	char why[DOCRAFT_ERRMSG_SIZE];
	if (!placement_str_valid(value, why))
		return err_set(errmsg, DOCRAFT_EINVAL, "%s: %s", name, why);
	memcpy(dst, value, strlen(value) + 1);
	return 0;
}

/* Every flag but --config, --log-level, --help and the peer limits,
 * which server_parse adds (server/skeleton.h).
 *
 * Raft timing of every replica (--election-ms, --heartbeat-raft-ms). A
 * follower campaigns after hearing nothing for a random time in
 * [election, 2 x election) (raft 0.15), i.e. after at least 5 missed
 * heartbeats; a new leader is in practice elected when the SECOND follower
 * times out (the first one's pre-vote is refused while the other still
 * knows the dead leader), so a leader's crash costs about 1.7 x election:
 * ~0.9 s at 500 ms (docs/reliability.md, "Failover time"). The default
 * --max-clock-skew-ms is YugabyteDB's max_clock_skew_usec. */
static const struct config_flag flags[] = {
	/* issue 17 */
	{.name = "redis-address", .arg = "IP:PORT|off", .kind = CONFIG_STRING,
	 .dst = S.redis_address, .cap = sizeof S.redis_address,
	 .help = "Redis protocol port (default: IP:6379 with the IP of --address, left off "
		 "when taken; :PORT: that IP; off: none)"},
	{.name = "redis-max-connections-per-ip", .arg = "N", .kind = CONFIG_UINT,
	 .dst = &S.redis_max_per_ip, .min = 0, .max = 1000000, .what = "a count", .def = "1000",
	 .help = "Redis connections from one IP address; 0: no limit (default 1000)"},
	{.name = "heartbeat-ms", .arg = "MS", .kind = CONFIG_MS, .dst = &S.cfg.heartbeat_ms,
	 .min = 1, .help = "heartbeat period to the master (default 1000)"},
	{.name = "election-ms", .arg = "MS", .kind = CONFIG_MS, .dst = &S.cfg.election_ms,
	 .min = 1, .def = "500", .help = "Raft election timeout (default 500)"},
	{.name = "heartbeat-raft-ms", .arg = "MS", .kind = CONFIG_MS,
	 .dst = &S.cfg.heartbeat_raft_ms, .min = 1, .def = "100",
	 .help = "Raft heartbeat period (default 100)"},
	{.name = "max-inflight-entries", .arg = "N", .kind = CONFIG_UINT,
	 .dst = &S.cfg.max_inflight, .min = 1, .max = 1024, .what = "a count",
	 .help = "Raft entries a tablet leader keeps in flight; writes arriving meanwhile share "
		 "the next entry (default 1)"},
	{.name = "raft-log", .arg = "shared|per-tablet", .kind = CONFIG_CALL,
	 .dst = &S.cfg.per_tablet_log, .set = set_raft_log, .def = "shared",
	 .help = "where the replicas' Raft logs live: one log of the server in DIR/raftlog "
		 "(shared), or a raft_uv log per replica (per-tablet); fixed at the data "
		 "directory's first start (default shared)"},
	{.name = "raft-log-segment-mb", .arg = "MB", .kind = CONFIG_MB,
	 .dst = &S.cfg.log_segment_mb, .min = 1, .max = 1024, .def = "64",
	 .help = "size of the shared Raft log's segment files, written as they fill (1 MiB of "
		 "zeros ahead), never preallocated whole (default 64)"},
	{.name = "raft-segment-mb", .arg = "MB", .kind = CONFIG_MB, .dst = &S.cfg.segment_mb,
	 .min = 1, .max = 1024,
	 .help = "--raft-log per-tablet only: size of a tablet's Raft log segment files; "
		 "raft_uv keeps up to three per tablet (default 8)"},
	{.name = "raft-fill-segments", .arg = "on|off", .kind = CONFIG_BOOL,
	 .dst = &S.cfg.fill_segments, .def = "on",
	 .help = "--raft-log per-tablet only: write zeros over each Raft log segment raft_uv "
		 "prepares, so that appends are overwrites (default on)"},
	{.name = "lease-ms", .arg = "MS", .kind = CONFIG_MS, .dst = &S.cfg.lease_ms,
	 .given = &S.cfg.lease_given,
	 .help = "leader lease: reads without a Raft round (default 7/10 of --election-ms, at "
		 "most that; 0: off)"},
	{.name = "max-clock-skew-ms", .arg = "MS", .kind = CONFIG_MS,
	 .dst = &S.cfg.max_clock_skew_ms, .min = 1, .def = "500",
	 .help = "largest clock difference between servers: a hybrid time further ahead of this "
		 "clock is refused (default 500)"},
	{.name = "shutdown-transfer-ms", .arg = "MS", .kind = CONFIG_MS,
	 .dst = &S.cfg.shutdown_transfer_ms, .min = 1, .def = "3000",
	 .help = "on SIGTERM, the longest wait for leadership transfers (default 3000)"},
	{.name = "block-cache-mb", .arg = "MB", .kind = CONFIG_MB, .dst = &S.cfg.block_cache_mb,
	 .min = 1, .max = 1u << 20,
	 .help = "RocksDB block cache shared by every tablet of the process, index and filter "
		 "blocks included (default 256)"},
	{.name = "memstore-mb", .arg = "MB", .kind = CONFIG_MB, .dst = &S.cfg.memstore_mb,
	 .min = 1, .max = 1u << 20,
	 .help = "memtable budget over every tablet of the process: past it, the memtable "
		 "holding the oldest write is flushed (default 256)"},
	{.name = "raft-log-memory-mb", .arg = "MB", .kind = CONFIG_MB,
	 .dst = &S.cfg.raft_log_memory_mb, .max = 1u << 20, .what = "0 or a size in MiB",
	 .def = "256",
	 .help = "memory for the Raft logs of every tablet of the process, split among them (at "
		 "least 256 KiB each): a tablet snapshots once half its share is applied; 0: "
		 "entry counts only (default 256)"},
	{.name = "retry-record-ttl-s", .arg = "S", .kind = CONFIG_UINT, .dst = &S.cfg.retry_ttl_s,
	 .min = 1, .max = SECONDS_MAX, .what = "a number of seconds",
	 .help = "how long a tablet remembers a write's request id, so a retry is applied once; "
		 "the same on every tserver (default 660)"},
	{.name = "history-retention-s", .arg = "S", .kind = CONFIG_UINT,
	 .dst = &S.cfg.history_retention_s, .min = 1, .max = SECONDS_MAX,
	 .what = "a number of seconds",
	 .help = "how far back reads AS OF a past time may go; compaction keeps older versions "
		 "no longer (default 900)"},
	/* Its default, DISKSPACE_DEFAULT_RESERVE_MB, is set by main. */
	{.name = "min-free-disk-mb", .arg = "MB", .kind = CONFIG_MB,
	 .dst = &S.cfg.min_free_disk_mb, .min = 1, .max = 1u << 30,
	 .help = "free-space reserve of the data directory's file system: below it writes are "
		 "refused (retryable), below 3 Raft segments replicas stop; 0: off (default 256)"},
	{.name = "placement", .arg = "CLOUD.REGION.ZONE", .kind = CONFIG_CALL,
	 .dst = S.cfg.placement, .set = set_placement,
	 .help = "where this server runs, sent with every heartbeat: the master puts a table's "
		 "replicas in distinct zones when there are enough (default: none)"},
	{.name = "max-replicas", .arg = "N", .kind = CONFIG_UINT, .dst = &S.cfg.max_replicas,
	 .min = 1, .max = 1u << 20, .what = "a count",
	 .help = "replicas this server accepts; past it a create is refused, retryably "
		 "(default: what its open-file and AIO limits allow)"},
};

static const struct server_help help = {
	.address = "address to bind: client RPC, Raft and copies (required)",
	.data = "data directory (required): DIR/uuid, DIR/tablets/<id>/",
	.masters = "master addresses (1 to 16); without it: standalone",
};

static const struct config_spec spec = {
	.synopsis = PROG " --address IP:PORT --data DIR [--masters A,B,C] [options]",
	.about = "Hosts tablet replicas of a docraft cluster on one port.",
	.footer = "Prints \"" PROG " <uuid> listening on <address>\" when ready. SIGTERM: "
		  "transfers the\nleadership of every tablet it leads, then stops cleanly "
		  "(exit 0).\n",
	.flags = flags,
	.n_flags = sizeof flags / sizeof flags[0],
};

/* What the table cannot say: flags checked against each other, and the
 * masters' addresses. */
static void check_flags(void)
{
	struct config *c = &S.cfg;

	/* raft_start asserts it. */
	if (c->heartbeat_raft_ms >= c->election_ms)
		server_bad_usage(&S.proc, "--heartbeat-raft-ms (%u) must be below --election-ms (%u)",
				 c->heartbeat_raft_ms, c->election_ms);
	if (c->lease_given && c->lease_ms > c->election_ms * 7 / 10)
		server_bad_usage(&S.proc, "--lease-ms (%u) must be at most 7/10 of --election-ms (%u)",
				 c->lease_ms, c->election_ms * 7 / 10);
	if (S.proc.masters[0] != '\0') {
		size_t n = config_split_list(S.proc.masters, S.masters, HEARTBEAT_MAX_MASTERS);
		if (n > HEARTBEAT_MAX_MASTERS)
			server_bad_usage(&S.proc, "--masters: at most %d addresses",
					 HEARTBEAT_MAX_MASTERS);
		if (n == 0)
			server_bad_usage(&S.proc, "--masters: no address");
		for (size_t i = 0; i < n; i++) {
			struct sockaddr_in sa;
			char why[DOCRAFT_ERRMSG_SIZE];
			if (listener_parse_address(S.masters[i], &sa, why) != 0)
				server_bad_usage(&S.proc, "--masters: %s", why);
		}
		S.n_masters = n;
	}
}

/* ---- data directory ---------------------------------------------------------------- */

/* DIR/uuid: read it, or create it on the first start. */
static int load_uuid(char *errmsg)
{
	char path[4200], buf[UUID_LEN + 8];
	uint8_t *data;
	size_t n;
	int rv;

	snprintf(path, sizeof path, "%s/uuid", S.proc.data);
	rv = fs_read_file(path, 4096, &data, &n, errmsg);
	if (rv == 0) {
		bool ok;
		while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
			data[--n] = '\0';
		ok = n == UUID_LEN && strspn((char *)data, "0123456789abcdef") == UUID_LEN;
		if (ok)
			memcpy(S.uuid, data, UUID_LEN + 1);
		free(data);
		return ok ? 0 : err_set(errmsg, DOCRAFT_ECORRUPT, "%s does not hold a uuid", path);
	}
	if (rv != DOCRAFT_ENOTFOUND)
		return rv;
	{
		uint8_t r[UUID_LEN / 2];
		size_t got = 0;
		while (got < sizeof r) {
			ssize_t k = getrandom(r + got, sizeof r - got, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return err_set(errmsg, DOCRAFT_EIO, "getrandom: %s",
					       strerror(errno));
			got += (size_t)k;
		}
		for (size_t i = 0; i < sizeof r; i++)
			snprintf(S.uuid + 2 * i, 3, "%02x", r[i]);
	}
	snprintf(buf, sizeof buf, "%s\n", S.uuid);
	return fs_write_file(path, buf, strlen(buf), errmsg);
}

/* ---- shutdown ------------------------------------------------------------------------ */

/* CLOSE_PART(part, type, obj, flag, close) defines part_closed, the close
 * callback of S.obj (clears S.flag, releases the close step), and
 * close_part, which starts close(&S.obj, part_closed) if S.flag is set, as
 * one close of the current step (server/skeleton.h, "close chain"). */
#define CLOSE_PART(part, type, obj, flag, close)            \
	static void part##_closed(type *x)                  \
	{                                                   \
		(void)x;                                    \
		S.flag = false;                             \
		server_release(&S.proc);                    \
	}                                                   \
	static void close_##part(void)                      \
	{                                                   \
		if (S.flag) {                               \
			server_hold(&S.proc);               \
			close(&S.obj, part##_closed);       \
		}                                           \
	}

CLOSE_PART(hb, struct heartbeat, hb, hb_on, heartbeat_stop)
CLOSE_PART(redis, struct tserver_redis, redis, redis_on, tserver_redis_close) /* issue 17 */
CLOSE_PART(client, struct rpc_client, cl, cl_on, rpc_client_close)
CLOSE_PART(manager, struct manager, m, m_on, manager_close)
CLOSE_PART(service, struct service, svc, svc_on, service_close)
CLOSE_PART(copy, struct copy_server, copy, copy_on, copy_server_close)
CLOSE_PART(disk, struct diskspace, disk, disk_on, diskspace_close)

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void log_closed(struct raftlog *l, void *arg)
{
	(void)l;
	(void)arg;
	server_release(&S.proc);
}

static void mux_closed(void *arg)
{
	(void)arg;
	server_release(&S.proc);
}

/* The shared Raft log and the Raft multiplexer, once every replica is
 * closed (raftlog_close says DOCRAFT_EBUSY while one is attached: then it
 * is left to the exit). */
static void close_log(void)
{
	struct raftlog *l = S.log;
	int rv;
	if (S.mux != NULL) {
		server_hold(&S.proc);
		if ((rv = rmux_close(S.mux, mux_closed, NULL)) != 0) {
			LOG_ERROR(PROG ": closing the Raft multiplexer: %s", docraft_strerror(rv));
			server_release(&S.proc);
		}
		S.mux = NULL;
	}
	if (l == NULL)
		return;
	S.log = NULL;
	server_hold(&S.proc);
	if ((rv = raftlog_close(l, log_closed, NULL)) != 0) {
		LOG_ERROR(PROG ": closing the Raft log: %s", docraft_strerror(rv));
		server_release(&S.proc);
	}
}

/* The close chain, one layer after the other: heartbeats (and the rpc
 * client), the RPC server (calls in progress are answered into the void),
 * the tablets, the shared Raft log, the service, the copy server, the
 * port, the handles. */
static void step_heartbeat(struct server *s)
{
	(void)s;
	close_redis(); /* issue 17 */
	close_hb();
	close_client();
}

static void step_manager(struct server *s)
{
	(void)s;
	close_manager();
}

static void step_log(struct server *s)
{
	(void)s;
	close_log();
}

static void step_service(struct server *s)
{
	(void)s;
	close_service();
}

static void step_copy(struct server *s)
{
	(void)s;
	close_copy();
}

static void step_handles(struct server *s)
{
	if (S.handles_on) {
		S.handles_on = false;
		uv_close((uv_handle_t *)&S.drain_timer, handle_closed);
	}
	server_step_lag(s);
	server_step_signals(s);
	close_disk();
}

static const server_step_fn close_steps[] = {
	server_step_http, step_heartbeat, server_step_rpc, step_manager, step_log, step_service,
	step_copy, server_step_listener, step_handles,
};

/* A leadership hand-over while draining: a Raft barrier first, then the
 * transfer. Once the barrier has committed, the voters that are up to date
 * (which raft_transfer(0) prefers) are ones that just acknowledged it, so
 * the target is alive and the transfer quick. It also keeps clear of a
 * use-after-free: tablet_membership.c frees a transfer request in its callback while
 * raft_uv may still hold the request's TimeoutNow message for an
 * unreachable target, and cancels it (calling into the freed request) when
 * the tablet closes. */
struct drain_req {
	struct tablet_read rd;
	char id[LISTENER_TABLET_ID_MAX + 1];
	bool hopeless;      /* no other voter: not waited for */
	struct drain_req *next;
};

static struct drain_req *drains;

static struct drain_req *drain_find(const char *id)
{
	for (struct drain_req *d = drains; d != NULL; d = d->next)
		if (strcmp(d->id, id) == 0)
			return d;
	return NULL;
}

static void drain_free(struct drain_req *d)
{
	struct drain_req **pp = &drains;
	while (*pp != NULL && *pp != d)
		pp = &(*pp)->next;
	if (*pp == d)
		*pp = d->next;
	free(d);
}

static void transfer_done(void *arg, int status)
{
	struct drain_req *d = arg;
	if (status != 0)
		LOG_DEBUG("tablet %s: leadership transfer: %s", d->id, docraft_strerror(status));
	drain_free(d);
}

static void drain_barrier_done(struct tablet_read *rd, int status, uint64_t ht)
{
	struct drain_req *d = rd->data;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct replica *r;
	struct tablet_status st;
	int rv;
	(void)ht;
	r = status == 0 && S.m_on ? manager_find(&S.m, d->id) : NULL;
	if (r == NULL || r->state != REPLICA_OPEN || r->t == NULL) {
		drain_free(d);
		return;
	}
	tablet_get_status(r->t, &st);
	rv = tablet_transfer(r->t, 0, transfer_done, d, errmsg);
	if (rv == 0) {
		S.transfers++;
		TLOG_INFO(r->id, st.term, "transferring the leadership before stopping");
	} else if (rv == DOCRAFT_EINVAL) {
		TLOG_INFO(r->id, st.term, "no other voter to hand the leadership to");
		d->hopeless = true; /* kept: not tried again */
	} else {
		drain_free(d); /* tried again at the next tick */
	}
}

/* Counts the tablets this server still leads and starts a hand-over for
 * each one that has none in progress. */
static void drain_one(void *arg, struct replica *r)
{
	unsigned *leaders = arg;
	struct tablet_status st;
	struct drain_req *d;
	if (r->state != REPLICA_OPEN || r->t == NULL)
		return;
	tablet_get_status(r->t, &st);
	if (st.role != TABLET_LEADER && st.role != TABLET_LEADER_NOT_READY)
		return;
	d = drain_find(r->id);
	if (d != NULL) {
		if (!d->hopeless)
			(*leaders)++;
		return;
	}
	(*leaders)++;
	if (st.role != TABLET_LEADER)
		return; /* not ready yet */
	d = xzalloc(sizeof *d);
	snprintf(d->id, sizeof d->id, "%s", r->id);
	d->rd.data = d;
	d->rd.cb = drain_barrier_done;
	d->next = drains;
	drains = d;
	if (tablet_read(r->t, &d->rd) != 0)
		drain_free(d);
}

static void start_closing(void)
{
	S.draining = false;
	uv_timer_stop(&S.drain_timer);
	LOG_INFO(PROG " %s: closing", S.uuid);
	server_close(&S.proc);
}

static void drain_tick(uv_timer_t *t)
{
	unsigned leaders = 0;
	(void)t;
	if (S.m_on)
		manager_foreach(&S.m, drain_one, &leaders);
	if (leaders == 0) {
		LOG_INFO(PROG " %s: leads no tablet any more (%u transfers)", S.uuid, S.transfers);
		start_closing();
	} else if (uv_now(&S.proc.loop) >= S.drain_deadline) {
		LOG_WARN(PROG " %s: still leads %u tablet(s) after %u ms: stopping anyway", S.uuid,
			 leaders, S.cfg.shutdown_transfer_ms);
		start_closing();
	}
}

/* SIGTERM / SIGINT (server/skeleton.h calls it): the drain, then the
 * close chain; a second signal while draining skips the wait. */
static void on_signal(struct server *s, int signum)
{
	(void)s;
	if (S.stopping) {
		if (S.draining) {
			LOG_WARN(PROG " %s: signal %d again: stopping now", S.uuid, signum);
			start_closing();
		}
		return;
	}
	S.stopping = true;
	S.draining = true;
	S.serving = false;
	S.drain_deadline = uv_now(&S.proc.loop) + S.cfg.shutdown_transfer_ms;
	LOG_INFO(PROG " %s: signal %d: handing over leaderships, then stopping", S.uuid, signum);
	uv_timer_start(&S.drain_timer, drain_tick, 0, DRAIN_TICK_MS);
}

/* ---- process limits ------------------------------------------------------------------ */

/* What one replica holds open, measured with 300 replicas per tserver
 * (docs/benchmarks.md, "Memory of many replicas"): 10-14 descriptors
 * (raft_uv's open and prepared segments and their eventfds, RocksDB's
 * LOCK, LOG, MANIFEST, directories and SST files; RocksDB keeps every SST
 * open) and 2 AIO events (raft_uv's io_setup per segment writer, counted
 * against the system-wide /proc/sys/fs/aio-max-nr). The margins cover SST
 * files a busy store accumulates between compactions. With the shared
 * Raft log a replica holds only its store's files and no AIO context
 * (the log's few descriptors are the process's, in FDS_RESERVED). */
#define FDS_PER_REPLICA 24u
#define AIO_PER_REPLICA 4u
#define FDS_PER_REPLICA_SHARED 18u
#define AIO_PER_REPLICA_SHARED 0u
#define FDS_RESERVED 256u /* logs, the listener, copies, RocksDB's own files */

static unsigned long read_proc_ulong(const char *path)
{
	unsigned long v = 0;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Raises RLIMIT_NOFILE's soft limit to the hard one, and returns how many
 * replicas the open-file and AIO limits leave room for (logged). Sockets
 * get up to a quarter of the descriptors (--max-connections caps them). */
static unsigned host_limits(void)
{
	unsigned long fds = server_raise_nofile(&S.proc);
	unsigned long sockets, aio_max, aio_used, by_fds, by_aio, n;
	unsigned max_connections = S.proc.rpc_opts.max_connections;
	unsigned fds_per = S.cfg.per_tablet_log ? FDS_PER_REPLICA : FDS_PER_REPLICA_SHARED;
	unsigned aio_per = S.cfg.per_tablet_log ? AIO_PER_REPLICA : AIO_PER_REPLICA_SHARED;

	if (fds == 0)
		return 0;
	sockets = max_connections < fds / 4 ? max_connections : fds / 4;
	by_fds = fds > sockets + FDS_RESERVED ? (fds - sockets - FDS_RESERVED) / fds_per : 0;
	aio_max = read_proc_ulong("/proc/sys/fs/aio-max-nr");
	aio_used = read_proc_ulong("/proc/sys/fs/aio-nr");
	by_aio = aio_max == 0 || aio_per == 0 ? by_fds
	       : aio_max > aio_used ? (aio_max - aio_used) / aio_per : 0;
	n = by_fds < by_aio ? by_fds : by_aio;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	if (n == 0)
		n = 1; /* still host one; the warning below says why not more */
	LOG_INFO(PROG ": can host %lu replicas: open files %lu (%lu kept for up to %lu "
		 "connections, %u per replica), AIO events %lu of %lu in use system-wide "
		 "(%u per replica)%s",
		 n, fds, sockets + FDS_RESERVED, sockets, fds_per, aio_used, aio_max, aio_per,
		 S.cfg.max_replicas != 0 ? "; --max-replicas overrides it" : "");
	if (n < 16)
		LOG_WARN(PROG ": the limits leave room for only %lu replicas: raise the open "
			 "files hard limit (ulimit -Hn) or fs.aio-max-nr", n);
	return S.cfg.max_replicas != 0 ? S.cfg.max_replicas : (unsigned)n;
}

/* ---- start --------------------------------------------------------------------------- */

/* The data directory's Raft log mode (logmode.h), then, in shared mode,
 * DIR/raftlog: one recovery scan before any replica opens; a corrupt log
 * (raftlog.h says where) stops the server. */
static int open_log(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE], dir[4200];
	struct raftlog_options lo;
	struct raftlog_stats st;
	uint64_t t0;

	if (logmode_check(S.proc.data, !S.cfg.per_tablet_log, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return -1;
	}
	if (S.cfg.per_tablet_log) {
		LOG_INFO(PROG ": Raft logs: raft_uv per replica (--raft-log per-tablet)");
		return 0;
	}
	snprintf(dir, sizeof dir, "%s/raftlog", S.proc.data);
	memset(&lo, 0, sizeof lo);
	lo.dir = dir;
	lo.segment_bytes = (size_t)S.cfg.log_segment_mb << 20;
	t0 = uv_hrtime();
	if (raftlog_open(&S.proc.loop, &lo, &S.log, errmsg) != 0) {
		LOG_ERROR(PROG ": the shared Raft log %s: %s", dir, errmsg);
		return -1;
	}
	if (rmux_open(&S.proc.loop, S.proc.l, &S.mux, errmsg) != 0) {
		LOG_ERROR(PROG ": the Raft multiplexer: %s", errmsg);
		return -1;
	}
	raftlog_stats(S.log, &st);
	LOG_INFO(PROG ": shared Raft log %s opened in %" PRIu64 " ms: %" PRIu64 " groups, %"
		 PRIu64 " segments, %" PRIu64 " MiB (%" PRIu64 " MiB live)", dir,
		 (uv_hrtime() - t0) / 1000000, st.groups, st.segments, st.disk_bytes >> 20,
		 st.live_bytes >> 20);
	return 0;
}

/* issue 17: the RESP address the heartbeats give the master (clients
 * connect there): "" when the port is off; a wildcard IP becomes the IP of
 * the RPC address rpc. */
static void redis_advertised(const char *rpc, char *out, size_t cap)
{
	const char *ra, *port, *rport;
	out[0] = '\0';
	if (S.redis.srv == NULL)
		return;
	ra = redis_server_address(S.redis.srv);
	port = strrchr(ra, ':');
	rport = strrchr(rpc, ':');
	if (port != NULL && rport != NULL &&
	    (strncmp(ra, "0.0.0.0:", 8) == 0 || strncmp(ra, "[::]:", 5) == 0))
		snprintf(out, cap, "%.*s%s", (int)(rport - rpc), rpc, port);
	else
		snprintf(out, cap, "%s", ra);
}

static int start(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char redis_adv[RPC_ADDRESS_MAX + 1];
	struct manager_options mo;
	struct service_options so;
	const char *address;

	if (server_listen(&S.proc, S.proc.address) != 0)
		return -1;
	address = listener_address(S.proc.l);
	if (copy_server_init(&S.copy, &S.proc.loop, S.proc.l, errmsg) != 0) {
		LOG_ERROR(PROG ": copy server: %s", errmsg);
		return -1;
	}
	S.copy_on = true;
	/* issue 17: the Redis protocol port */
	S.redis.uuid = S.uuid;
	S.redis.max_per_ip = S.redis_max_per_ip;
	S.redis.max_per_ip_set = true;
	if (tserver_redis_start(&S.redis, &S.proc.loop, S.redis_address, address,
				(const char *const *)S.masters, S.n_masters, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return -1;
	}
	S.redis_on = S.redis.srv != NULL;
	rpc_client_init(&S.cl, &S.proc.loop);
	S.cl_on = true;

	{
		struct store_env_options eo;
		store_env_options_default(&eo);
		if (S.cfg.block_cache_mb != 0)
			eo.block_cache_bytes = (size_t)S.cfg.block_cache_mb << 20;
		if (S.cfg.memstore_mb != 0)
			eo.write_buffer_bytes = (size_t)S.cfg.memstore_mb << 20;
		if (store_env_create(&eo, &S.env, errmsg) != 0) {
			LOG_ERROR(PROG ": %s", errmsg);
			return -1;
		}
		LOG_INFO(PROG ": block cache %zu MiB, memtable budget %zu MiB over every tablet",
			 eo.block_cache_bytes >> 20, eo.write_buffer_bytes >> 20);
	}

	if (diskspace_init(&S.disk, &S.proc.loop, S.proc.data, address,
			   (uint64_t)S.cfg.min_free_disk_mb << 20,
			   S.cfg.per_tablet_log ? DISKSPACE_FLOOR_SEGMENTS
						: DISKSPACE_SHARED_FLOOR_SEGMENTS,
			   S.cfg.per_tablet_log ? (S.cfg.segment_mb != 0 ? (size_t)S.cfg.segment_mb << 20
									 : TABLET_SEGMENT_BYTES)
						: (size_t)S.cfg.log_segment_mb << 20,
			   errmsg) != 0) {
		LOG_ERROR(PROG ": --min-free-disk-mb: %s", errmsg);
		return -1;
	}
	S.disk_on = true;
	if (open_log() != 0)
		return -1;

	memset(&mo, 0, sizeof mo);
	mo.max_replicas = host_limits();
	mo.data_dir = S.proc.data;
	mo.store_env = S.env;
	mo.address = address;
	mo.listener = S.proc.l;
	mo.copy = &S.copy;
	mo.raft_heartbeat_ms = S.cfg.heartbeat_raft_ms;
	mo.election_ms = S.cfg.election_ms;
	mo.max_inflight = S.cfg.max_inflight;
	mo.max_clock_skew_ms = S.cfg.max_clock_skew_ms;
	mo.segment_bytes = (size_t)S.cfg.segment_mb << 20;
	mo.retry_ttl_s = S.cfg.retry_ttl_s;
	mo.history_retention_s = S.cfg.history_retention_s;
	mo.raft_log_memory_bytes = (uint64_t)S.cfg.raft_log_memory_mb << 20;
	mo.disk = &S.disk;
	mo.raft_log = S.log;
	mo.raft_mux = S.mux;
	segfill_set(S.cfg.fill_segments);
	mo.lease_ms = !S.cfg.lease_given ? 0 : S.cfg.lease_ms == 0 ? MANAGER_LEASE_OFF
								 : S.cfg.lease_ms;
	if (manager_init(&S.m, &S.proc.loop, &mo, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return -1;
	}
	S.m_on = true;
	memset(&so, 0, sizeof so);
	so.max_clock_skew_us = (uint64_t)S.cfg.max_clock_skew_ms * 1000;
	so.disk = &S.disk;
	if (service_init(&S.svc, &S.proc.loop, &S.proc.rpc, &S.m, &so, errmsg) != 0) {
		LOG_ERROR(PROG ": service: %s", errmsg);
		return -1;
	}
	S.svc_on = true;
	if (S.n_masters > 0) {
		struct heartbeat_options ho;
		memset(&ho, 0, sizeof ho);
		ho.uuid = S.uuid;
		ho.address = address;
		ho.masters = (const char *const *)S.masters;
		ho.n_masters = S.n_masters;
		ho.interval_ms = S.cfg.heartbeat_ms;
		ho.placement = S.cfg.placement;
		redis_advertised(address, redis_adv, sizeof redis_adv);
		ho.redis_address = redis_adv;
		if (heartbeat_start(&S.hb, &S.proc.loop, &S.cl, &S.m, &S.svc, &ho, errmsg) != 0) {
			LOG_ERROR(PROG ": %s", errmsg);
			return -1;
		}
		S.hb_on = true;
	}
	S.http = (struct tserver_http){.proc = &S.proc, .uuid = S.uuid, .m = &S.m, .m_on = &S.m_on,
				       .env = &S.env, .copy = &S.copy, .copy_on = &S.copy_on,
				       .log = &S.log, .ready = &S.serving};
	if (server_http_open(&S.proc, address, SERVER_HTTP_PORT_TSERVER, tserver_http_handle,
			     &S.http) != 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	server_init(&S.proc, PROG, LOG_LVL_INFO);
	S.cfg.min_free_disk_mb = DISKSPACE_DEFAULT_RESERVE_MB;
	server_parse(&S.proc, &help, &spec, argc, argv);
	check_flags();
	if (fs_mkdir_p(S.proc.data, errmsg) != 0 || load_uuid(errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return 1;
	}
	if (server_open(&S.proc, close_steps, sizeof close_steps / sizeof close_steps[0]) != 0)
		return 1;
	S.proc.on_signal = on_signal;
	uv_timer_init(&S.proc.loop, &S.drain_timer);
	server_lag_start(&S.proc, S.cfg.election_ms);
	S.handles_on = true;

	if (start() != 0) {
		S.stopping = true;
		server_fail(&S.proc);
	} else {
		LOG_INFO(PROG " %s: serving at %s, data in %s, %s", S.uuid,
			 listener_address(S.proc.l), S.proc.data,
			 S.n_masters > 0 ? "heartbeating the masters" : "standalone");
		S.serving = true;
		server_ready(&S.proc, S.uuid, listener_address(S.proc.l));
	}
	rv = server_run(&S.proc);
	/* Hand-overs whose callbacks never came (raft does not report a
	 * transfer pending at close): nothing refers to them any more. */
	while (drains != NULL)
		drain_free(drains);
	store_env_destroy(S.env); /* every store closed with the manager */
	if (rv == 0)
		LOG_INFO(PROG " %s: stopped", S.uuid);
	return rv;
}
