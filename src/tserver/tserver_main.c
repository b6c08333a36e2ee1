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
 * Ready: one line "docraft-tserver <uuid> listening on <address>" on
 * stdout. SIGTERM / SIGINT: every tablet it leads transfers its leadership
 * (waiting at most --shutdown-transfer-ms), then everything is closed in
 * order (heartbeats, RPC, tablets, copies, the port) and the process exits
 * 0. A second signal skips the wait. Logs: stderr (common/log.h). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "rpc/rpc.h"
#include "docdb/store_env.h"
#include "net/listener.h"
#include "raft/segfill.h"
#include "tablet/diskspace.h"
#include "tserver/heartbeat.h"
#include "tserver/manager.h"
#include "tablet/remote_copy.h"
#include "tserver/service.h"

#define PROG "docraft-tserver"
#define UUID_LEN 32
#define DEFAULT_SHUTDOWN_TRANSFER_MS 3000u
/* Raft timing of every replica. A follower campaigns after hearing nothing
 * for a random time in [election, 2 x election) (raft 0.15), i.e. after at
 * least 5 missed heartbeats; a new leader is in practice elected when the
 * SECOND follower times out (the first one's pre-vote is refused while the
 * other still knows the dead leader), so a leader's crash costs about 1.7 x
 * election: ~0.9 s at 500 ms (docs/reliability.md, "Failover time"). */
#define DEFAULT_ELECTION_MS 500u
#define DEFAULT_HEARTBEAT_RAFT_MS 100u
#define DEFAULT_MAX_CLOCK_SKEW_MS 500u /* YugabyteDB's max_clock_skew_usec */
#define DRAIN_TICK_MS 20

struct config {
	char address[64];
	char data[4096];
	char masters[2048];
	unsigned heartbeat_ms;      /* to the master */
	unsigned election_ms;       /* raft */
	unsigned heartbeat_raft_ms; /* raft */
	int lease_ms;               /* -1: not given (7/10 of election-ms); 0: off */
	unsigned max_inflight;      /* 0: tablet default */
	unsigned segment_mb;        /* 0: tablet default */
	bool fill_segments;         /* segfill.h; default true */
	unsigned shutdown_transfer_ms;
	unsigned max_clock_skew_ms; /* 0: DEFAULT_MAX_CLOCK_SKEW_MS */
	int log_level;              /* -1: not given */
	unsigned block_cache_mb;    /* 0: store_env default */
	unsigned memstore_mb;       /* 0: store_env default */
	unsigned raft_log_memory_mb; /* 0: no byte bound on Raft's in-memory logs */
	unsigned min_free_disk_mb;  /* diskspace.h reserve; 0: off */
	unsigned max_replicas;      /* 0: what the process limits allow (host_limits) */
	struct rpc_server_options rpc; /* connection and request limits (rpc.h) */
	unsigned retry_ttl_s;       /* 0: tablet default (660) */
	unsigned history_retention_s; /* 0: store default (900) */
};

enum close_step {
	STEP_HEARTBEAT = 0, /* heartbeats and the rpc client */
	STEP_SERVER,
	STEP_MANAGER,
	STEP_SERVICE,
	STEP_COPY,
	STEP_LISTENER,
	STEP_HANDLES,
	STEP_DONE,
};

#define LAG_PERIOD_MS 100
#define LAG_WARN_MS 100
#define LAG_DEBUG_MS 10

static struct {
	struct config cfg;
	char uuid[UUID_LEN + 1];
	char *masters[HEARTBEAT_MAX_MASTERS];
	size_t n_masters;

	uv_loop_t loop;
	struct listener *l;
	struct copy_server copy;
	struct rpc_server srv;
	struct rpc_client cl;
	struct manager m;
	struct service svc;
	struct heartbeat hb;
	struct store_env *env;  /* every store's cache and memtable budget */
	struct diskspace disk;  /* the data directory's free-space reserve */
	bool disk_on;
	bool copy_on, srv_on, cl_on, m_on, svc_on, hb_on;

	uv_signal_t sigterm, sigint;
	uv_timer_t drain_timer;
	uv_timer_t lag_timer; /* loop-lag probe, see lag_cb */
	uint64_t lag_due_ns;  /* uv_hrtime() at which lag_cb should run */
	bool handles_on;
	bool stopping, draining;
	uint64_t drain_deadline;
	unsigned transfers;     /* transfers started while draining */
	enum close_step step;
	unsigned step_pending;
	int exit_code;
} S;

/* ---- flags and config ------------------------------------------------------------ */

static const struct flag {
	const char *name;
	const char *arg;
	const char *help;
} flags[] = {
	{"address", "IP:PORT", "address to bind: client RPC, Raft and copies (required)"},
	{"data", "DIR", "data directory (required): DIR/uuid, DIR/tablets/<id>/"},
	{"masters", "A,B,C", "master addresses (1 to 16); without it: standalone"},
	{"heartbeat-ms", "MS", "heartbeat period to the master (default 1000)"},
	{"election-ms", "MS", "Raft election timeout (default 500)"},
	{"heartbeat-raft-ms", "MS", "Raft heartbeat period (default 100)"},
	{"max-inflight-entries", "N", "Raft entries a tablet leader keeps in flight; writes "
				      "arriving meanwhile share the next entry (default 1)"},
	{"raft-segment-mb", "MB", "size of a tablet's Raft log segment files; raft_uv keeps up "
				  "to three per tablet (default 8)"},
	{"raft-fill-segments", "on|off", "write zeros over each Raft log segment raft_uv "
				       "prepares, so that appends are overwrites (default on)"},
	{"lease-ms", "MS", "leader lease: reads without a Raft round (default 7/10 of "
			   "--election-ms, at most that; 0: off)"},
	{"max-clock-skew-ms", "MS", "largest clock difference between servers: a hybrid time "
				    "further ahead of this clock is refused (default 500)"},
	{"shutdown-transfer-ms", "MS",
	 "on SIGTERM, the longest wait for leadership transfers (default 3000)"},
	{"block-cache-mb", "MB", "RocksDB block cache shared by every tablet of the process, "
				 "index and filter blocks included (default 256)"},
	{"memstore-mb", "MB", "memtable budget over every tablet of the process: past it, "
			      "the memtable holding the oldest write is flushed (default 256)"},
	{"raft-log-memory-mb", "MB", "memory for the Raft logs of every tablet of the process, "
				     "split among them (at least 256 KiB each): a tablet snapshots "
				     "once half its share is applied; 0: entry counts only "
				     "(default 256)"},
	{"retry-record-ttl-s", "S", "how long a tablet remembers a write's request id, so a "
				    "retry is applied once; the same on every tserver "
				    "(default 660)"},
	{"history-retention-s", "S", "how far back reads AS OF a past time may go; compaction "
				     "keeps older versions no longer (default 900)"},
	{"min-free-disk-mb", "MB", "free-space reserve of the data directory's file system: "
				     "below it writes are refused (retryable), below 3 Raft "
				     "segments replicas stop; 0: off (default 256)"},
	{"max-replicas", "N", "replicas this server accepts; past it a create is refused, "
			      "retryably (default: what its open-file and AIO limits allow)"},
	{"config", "FILE", "'name = value' lines with the names of these flags; flags win"},
	{"log-level", "LEVEL", "error, warn, info, debug or trace (default info, or "
			       "$DOCRAFT_TRACE)"},
	{"help", NULL, "this text"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " --address IP:PORT --data DIR [--masters A,B,C] [options]\n\n"
		   "Hosts tablet replicas of a docraft cluster on one port.\n\noptions:\n");
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		char left[64];
		snprintf(left, sizeof left, "--%s%s%s", flags[i].name, flags[i].arg ? " " : "",
			 flags[i].arg ? flags[i].arg : "");
		fprintf(f, "  %-28s %s\n", left, flags[i].help);
	}
	for (size_t i = 0; i < RPC_SERVER_N_FLAGS; i++) {
		char left[64];
		snprintf(left, sizeof left, "--%s %s", rpc_server_flags[i].name,
			 rpc_server_flags[i].arg);
		fprintf(f, "  %-28s %s\n", left, rpc_server_flags[i].help);
	}
	fprintf(f, "\nPrints \"" PROG " <uuid> listening on <address>\" when ready. SIGTERM: "
		   "transfers the\nleadership of every tablet it leads, then stops cleanly "
		   "(exit 0).\n");
}

static _Noreturn void bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void bad_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(" PROG " --help for the options)\n");
	exit(2);
}

/* A whole number in 1..max, or a usage error naming what it should be. */
static unsigned parse_uint(const char *name, const char *v, const char *where, unsigned long max,
			   const char *what)
{
	char *end;
	unsigned long x;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno != 0 || *v == '\0' || *end != '\0' || x == 0 || x > max)
		bad_usage("%s%s: '%s' is not %s (1..%lu)", where, name, v, what, max);
	return (unsigned)x;
}

static unsigned parse_ms(const char *name, const char *v, const char *where)
{
	return parse_uint(name, v, where, 3600000, "a number of milliseconds");
}

static void copy_str(char *dst, size_t cap, const char *name, const char *v, const char *where)
{
	if (strlen(v) >= cap || *v == '\0')
		bad_usage("%s%s: empty or too long", where, name);
	memcpy(dst, v, strlen(v) + 1);
}

/* Applies one option; where says where it came from (for messages). */
static void set_option(const char *name, const char *v, const char *where)
{
	struct config *c = &S.cfg;
	if (strcmp(name, "address") == 0) {
		copy_str(c->address, sizeof c->address, name, v, where);
	} else if (strcmp(name, "data") == 0) {
		copy_str(c->data, sizeof c->data, name, v, where);
	} else if (strcmp(name, "masters") == 0) {
		copy_str(c->masters, sizeof c->masters, name, v, where);
	} else if (strcmp(name, "heartbeat-ms") == 0) {
		c->heartbeat_ms = parse_ms(name, v, where);
	} else if (strcmp(name, "election-ms") == 0) {
		c->election_ms = parse_ms(name, v, where);
	} else if (strcmp(name, "max-clock-skew-ms") == 0) {
		c->max_clock_skew_ms = parse_ms(name, v, where);
	} else if (strcmp(name, "heartbeat-raft-ms") == 0) {
		c->heartbeat_raft_ms = parse_ms(name, v, where);
	} else if (strcmp(name, "max-inflight-entries") == 0) {
		c->max_inflight = parse_uint(name, v, where, 1024, "a count");
	} else if (strcmp(name, "raft-segment-mb") == 0) {
		c->segment_mb = parse_uint(name, v, where, 1024, "a size in MiB");
	} else if (strcmp(name, "raft-fill-segments") == 0) {
		if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
			bad_usage("%sraft-fill-segments takes on or off, not '%s'", where, v);
		c->fill_segments = strcmp(v, "on") == 0;
	} else if (strcmp(name, "lease-ms") == 0) {
		c->lease_ms = strcmp(v, "0") == 0 ? 0 : (int)parse_ms(name, v, where);
	} else if (strcmp(name, "shutdown-transfer-ms") == 0) {
		c->shutdown_transfer_ms = parse_ms(name, v, where);
	} else if (strcmp(name, "min-free-disk-mb") == 0) {
		c->min_free_disk_mb = parse_uint(name, v, where, 1u << 30, "a size in MiB");
	} else if (strcmp(name, "block-cache-mb") == 0) {
		c->block_cache_mb = parse_uint(name, v, where, 1u << 20, "a size in MiB");
	} else if (strcmp(name, "memstore-mb") == 0) {
		c->memstore_mb = parse_uint(name, v, where, 1u << 20, "a size in MiB");
	} else if (strcmp(name, "raft-log-memory-mb") == 0) {
		c->raft_log_memory_mb = strcmp(v, "0") == 0 ? 0
					 : parse_uint(name, v, where, 1u << 20, "0 or a size in MiB");
	} else if (strcmp(name, "retry-record-ttl-s") == 0) {
		c->retry_ttl_s = parse_uint(name, v, where, 30 * 86400, "a number of seconds");
	} else if (strcmp(name, "history-retention-s") == 0) {
		c->history_retention_s = parse_uint(name, v, where, 30 * 86400, "a number of seconds");
	} else if (strcmp(name, "max-replicas") == 0) {
		c->max_replicas = parse_uint(name, v, where, 1u << 20, "a count");
	} else if (strcmp(name, "log-level") == 0) {
		c->log_level = log_parse_level(v);
		if (c->log_level < 0)
			bad_usage("%slog-level: unknown level '%s'", where, v);
	} else {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		int rv = rpc_server_options_set(&c->rpc, name, v, errmsg);
		if (rv == DOCRAFT_ENOTFOUND)
			bad_usage("%sunknown option '%s'", where, name);
		if (rv != 0)
			bad_usage("%s%s", where, errmsg);
	}
}

static char *trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static void load_config(const char *path)
{
	char line[8192], where[4200];
	unsigned lineno = 0;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		bad_usage("--config %s: %s", path, strerror(errno));
	while (fgets(line, sizeof line, f) != NULL) {
		char *s = trim(line), *eq, *k, *v;
		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		snprintf(where, sizeof where, "%s:%u: ", path, lineno);
		eq = strchr(s, '=');
		if (eq == NULL)
			bad_usage("%sexpected 'name = value'", where);
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		if (strncmp(k, "--", 2) == 0)
			k += 2;
		if (strcmp(k, "config") == 0 || strcmp(k, "help") == 0)
			bad_usage("%s'%s' is not allowed in a config file", where, k);
		set_option(k, v, where);
	}
	fclose(f);
}

/* --name value or --name=value at argv[*i]; *value NULL for --help. */
static const char *flag_at(int argc, char **argv, int *i, const char **value)
{
	static char name[64];
	const char *a = argv[*i];
	const char *eq;
	if (strncmp(a, "--", 2) != 0)
		bad_usage("unexpected argument '%s'", a);
	a += 2;
	eq = strchr(a, '=');
	if (eq != NULL) {
		if ((size_t)(eq - a) >= sizeof name)
			bad_usage("unknown option '%s'", argv[*i]);
		memcpy(name, a, (size_t)(eq - a));
		name[eq - a] = '\0';
		*value = eq + 1;
		return name;
	}
	snprintf(name, sizeof name, "%s", a);
	if (strcmp(name, "help") == 0) {
		*value = NULL;
		return name;
	}
	if (*i + 1 >= argc)
		bad_usage("--%s needs a value", name);
	*value = argv[++*i];
	return name;
}

static void parse_args(int argc, char **argv)
{
	const char *config = NULL;
	S.cfg.log_level = -1;
	S.cfg.lease_ms = -1;
	S.cfg.fill_segments = true;
	S.cfg.raft_log_memory_mb = 256;
	S.cfg.min_free_disk_mb = DISKSPACE_DEFAULT_RESERVE_MB;
	rpc_server_options_default(&S.cfg.rpc);
	/* First --help and --config, then the file, then the flags over it. */
	for (int i = 1; i < argc; i++) {
		const char *v;
		const char *name = flag_at(argc, argv, &i, &v);
		if (strcmp(name, "help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(name, "config") == 0)
			config = v;
	}
	if (config != NULL)
		load_config(config);
	for (int i = 1; i < argc; i++) {
		const char *v;
		const char *name = flag_at(argc, argv, &i, &v);
		if (strcmp(name, "config") != 0)
			set_option(name, v, "--");
	}
	if (S.cfg.address[0] == '\0')
		bad_usage("--address is required");
	if (S.cfg.data[0] == '\0')
		bad_usage("--data is required");
	if (S.cfg.shutdown_transfer_ms == 0)
		S.cfg.shutdown_transfer_ms = DEFAULT_SHUTDOWN_TRANSFER_MS;
	if (S.cfg.election_ms == 0)
		S.cfg.election_ms = DEFAULT_ELECTION_MS;
	if (S.cfg.max_clock_skew_ms == 0)
		S.cfg.max_clock_skew_ms = DEFAULT_MAX_CLOCK_SKEW_MS;
	if (S.cfg.heartbeat_raft_ms == 0)
		S.cfg.heartbeat_raft_ms = DEFAULT_HEARTBEAT_RAFT_MS;
	/* raft_start asserts it. */
	if (S.cfg.heartbeat_raft_ms >= S.cfg.election_ms)
		bad_usage("--heartbeat-raft-ms (%u) must be below --election-ms (%u)",
			  S.cfg.heartbeat_raft_ms, S.cfg.election_ms);
	if (S.cfg.lease_ms > 0 && (unsigned)S.cfg.lease_ms > S.cfg.election_ms * 7 / 10)
		bad_usage("--lease-ms (%d) must be at most 7/10 of --election-ms (%u)",
			  S.cfg.lease_ms, S.cfg.election_ms * 7 / 10);
	if (S.cfg.masters[0] != '\0') {
		char *save = NULL;
		for (char *p = strtok_r(S.cfg.masters, ",", &save); p != NULL;
		     p = strtok_r(NULL, ",", &save)) {
			struct sockaddr_in sa;
			char why[DOCRAFT_ERRMSG_SIZE];
			p = trim(p);
			if (*p == '\0')
				continue;
			if (S.n_masters == HEARTBEAT_MAX_MASTERS)
				bad_usage("--masters: at most %d addresses", HEARTBEAT_MAX_MASTERS);
			if (listener_parse_address(p, &sa, why) != 0)
				bad_usage("--masters: %s", why);
			S.masters[S.n_masters++] = p;
		}
		if (S.n_masters == 0)
			bad_usage("--masters: no address");
	}
}

/* ---- data directory ---------------------------------------------------------------- */

static int mkdir_p(const char *path, char *errmsg)
{
	char tmp[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof tmp)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad path %s", path);
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1;; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return err_set(errmsg, DOCRAFT_EIO, "mkdir %s: %s", tmp, strerror(errno));
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* DIR/uuid: read it, or create it on the first start. */
static int load_uuid(char *errmsg)
{
	char path[4200], buf[UUID_LEN + 8];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "%s/uuid", S.cfg.data);
	f = fopen(path, "r");
	if (f != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
		if (n != UUID_LEN || strspn(buf, "0123456789abcdef") != UUID_LEN)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "%s does not hold a uuid", path);
		memcpy(S.uuid, buf, UUID_LEN + 1);
		return 0;
	}
	if (errno != ENOENT)
		return err_set(errmsg, DOCRAFT_EIO, "open %s: %s", path, strerror(errno));
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

static void close_next(void);

static void step_done(void)
{
	if (--S.step_pending == 0)
		close_next();
}

static void hb_closed(struct heartbeat *hb)
{
	(void)hb;
	S.hb_on = false;
	step_done();
}

static void client_closed(struct rpc_client *cl)
{
	(void)cl;
	S.cl_on = false;
	step_done();
}

static void server_closed(struct rpc_server *srv)
{
	(void)srv;
	S.srv_on = false;
	step_done();
}

static void manager_closed(struct manager *m)
{
	(void)m;
	S.m_on = false;
	step_done();
}

static void service_closed(struct service *svc)
{
	(void)svc;
	S.svc_on = false;
	step_done();
}

static void copy_closed(struct copy_server *cs)
{
	(void)cs;
	S.copy_on = false;
	step_done();
}

static void listener_closed(void *arg)
{
	(void)arg;
	S.l = NULL;
	step_done();
}

static void disk_closed(struct diskspace *d)
{
	(void)d;
	S.disk_on = false;
	step_done();
}

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

/* Closes what is open, one layer after the other: heartbeats (and the rpc
 * client), the RPC server (calls in progress are answered into the void),
 * the tablets, the service, the copy server, the port, the handles. */
static void close_next(void)
{
	while (S.step < STEP_DONE) {
		enum close_step step = S.step++;
		S.step_pending = 1; /* held while starting, released below */
		switch (step) {
		case STEP_HEARTBEAT:
			if (S.hb_on) {
				S.step_pending++;
				heartbeat_stop(&S.hb, hb_closed);
			}
			if (S.cl_on) {
				S.step_pending++;
				rpc_client_close(&S.cl, client_closed);
			}
			break;
		case STEP_SERVER:
			if (S.srv_on) {
				S.step_pending++;
				rpc_server_close(&S.srv, server_closed);
			}
			break;
		case STEP_MANAGER:
			if (S.m_on) {
				S.step_pending++;
				manager_close(&S.m, manager_closed);
			}
			break;
		case STEP_SERVICE:
			if (S.svc_on) {
				S.step_pending++;
				service_close(&S.svc, service_closed);
			}
			break;
		case STEP_COPY:
			if (S.copy_on) {
				S.step_pending++;
				copy_server_close(&S.copy, copy_closed);
			}
			break;
		case STEP_LISTENER:
			if (S.l != NULL) {
				S.step_pending++;
				listener_close(S.l, listener_closed, NULL);
			}
			break;
		case STEP_HANDLES:
			if (S.handles_on) {
				S.handles_on = false;
				uv_close((uv_handle_t *)&S.sigterm, handle_closed);
				uv_close((uv_handle_t *)&S.sigint, handle_closed);
				uv_close((uv_handle_t *)&S.drain_timer, handle_closed);
				uv_close((uv_handle_t *)&S.lag_timer, handle_closed);
			}
			if (S.disk_on) {
				S.step_pending++;
				diskspace_close(&S.disk, disk_closed);
			}
			break;
		case STEP_DONE:
			break;
		}
		if (--S.step_pending > 0)
			return; /* the last callback of this step calls close_next */
	}
}

/* A leadership hand-over while draining: a Raft barrier first, then the
 * transfer. Once the barrier has committed, the voters that are up to date
 * (which raft_transfer(0) prefers) are ones that just acknowledged it, so
 * the target is alive and the transfer quick. It also keeps clear of a
 * use-after-free: tablet.c frees a transfer request in its callback while
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
	d = calloc(1, sizeof *d);
	if (d == NULL)
		PANIC("out of memory");
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
	close_next();
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
	} else if (uv_now(&S.loop) >= S.drain_deadline) {
		LOG_WARN(PROG " %s: still leads %u tablet(s) after %u ms: stopping anyway", S.uuid,
			 leaders, S.cfg.shutdown_transfer_ms);
		start_closing();
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	if (S.stopping) {
		if (S.draining) {
			LOG_WARN(PROG " %s: signal %d again: stopping now", S.uuid, signum);
			start_closing();
		}
		return;
	}
	S.stopping = true;
	S.draining = true;
	S.drain_deadline = uv_now(&S.loop) + S.cfg.shutdown_transfer_ms;
	LOG_INFO(PROG " %s: signal %d: handing over leaderships, then stopping", S.uuid, signum);
	uv_timer_start(&S.drain_timer, drain_tick, 0, DRAIN_TICK_MS);
}

/* ---- loop lag ------------------------------------------------------------------------ */

/* Every LAG_PERIOD_MS the probe compares when it runs with when it was due:
 * the difference is how long the loop thread was busy with something else
 * (a handler, a RocksDB call, a stall). Everything of every tablet runs on
 * this thread, so a lag near the election timeout costs leaderships; it is
 * logged (WARN from LAG_WARN_MS, DEBUG from LAG_DEBUG_MS). */
static void lag_cb(uv_timer_t *t)
{
	uint64_t now = uv_hrtime();
	uint64_t lag_ms = now > S.lag_due_ns ? (now - S.lag_due_ns) / 1000000 : 0;

	(void)t;
	S.lag_due_ns = now + LAG_PERIOD_MS * 1000000;
	if (lag_ms >= LAG_WARN_MS)
		LOG_WARN(PROG ": the loop thread was busy for %" PRIu64 " ms (a turn ran that "
			 "late; election timeout %u ms)",
			 lag_ms, S.cfg.election_ms);
	else if (lag_ms >= LAG_DEBUG_MS)
		LOG_DEBUG(PROG ": loop lag %" PRIu64 " ms", lag_ms);
}

/* ---- process limits ------------------------------------------------------------------ */

/* What one replica holds open, measured with 300 replicas per tserver
 * (docs/benchmarks.md, "Memory of many replicas"): 10-14 descriptors
 * (raft_uv's open and prepared segments and their eventfds, RocksDB's
 * LOCK, LOG, MANIFEST, directories and SST files; RocksDB keeps every SST
 * open) and 2 AIO events (raft_uv's io_setup per segment writer, counted
 * against the system-wide /proc/sys/fs/aio-max-nr). The margins cover SST
 * files a busy store accumulates between compactions. */
#define FDS_PER_REPLICA 24u
#define AIO_PER_REPLICA 4u
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
	struct rlimit rl;
	unsigned long fds, sockets, aio_max, aio_used, by_fds, by_aio, n;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		LOG_WARN(PROG ": getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return 0;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			LOG_INFO(PROG ": open files limit raised from %llu to %llu (the hard limit)",
				 (unsigned long long)was, (unsigned long long)rl.rlim_cur);
		else
			LOG_WARN(PROG ": cannot raise the open files limit from %llu to %llu: %s",
				 (unsigned long long)was, (unsigned long long)rl.rlim_max,
				 strerror(errno));
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	fds = rl.rlim_cur == RLIM_INFINITY ? 1ul << 20 : (unsigned long)rl.rlim_cur;
	sockets = S.cfg.rpc.max_connections < fds / 4 ? S.cfg.rpc.max_connections : fds / 4;
	by_fds = fds > sockets + FDS_RESERVED ? (fds - sockets - FDS_RESERVED) / FDS_PER_REPLICA
					      : 0;
	aio_max = read_proc_ulong("/proc/sys/fs/aio-max-nr");
	aio_used = read_proc_ulong("/proc/sys/fs/aio-nr");
	by_aio = aio_max == 0 ? by_fds
	       : aio_max > aio_used ? (aio_max - aio_used) / AIO_PER_REPLICA : 0;
	n = by_fds < by_aio ? by_fds : by_aio;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	if (n == 0)
		n = 1; /* still host one; the warning below says why not more */
	LOG_INFO(PROG ": can host %lu replicas: open files %lu (%lu kept for up to %lu "
		 "connections, %u per replica), AIO events %lu of %lu in use system-wide "
		 "(%u per replica)%s",
		 n, fds, sockets + FDS_RESERVED, sockets, FDS_PER_REPLICA, aio_used, aio_max,
		 AIO_PER_REPLICA,
		 S.cfg.max_replicas != 0 ? "; --max-replicas overrides it" : "");
	if (n < 16)
		LOG_WARN(PROG ": the limits leave room for only %lu replicas: raise the open "
			 "files hard limit (ulimit -Hn) or fs.aio-max-nr", n);
	return S.cfg.max_replicas != 0 ? S.cfg.max_replicas : (unsigned)n;
}

/* ---- start --------------------------------------------------------------------------- */

static int start(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct manager_options mo;
	struct service_options so;
	const char *address;

	if (listener_open(&S.loop, S.cfg.address, &S.l, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return -1;
	}
	address = listener_address(S.l);
	if (copy_server_init(&S.copy, &S.loop, S.l, errmsg) != 0) {
		LOG_ERROR(PROG ": copy server: %s", errmsg);
		return -1;
	}
	S.copy_on = true;
	if (rpc_server_init(&S.srv, &S.loop, S.l, errmsg) != 0) {
		LOG_ERROR(PROG ": rpc server: %s", errmsg);
		return -1;
	}
	S.srv_on = true;
	if (rpc_server_configure(&S.srv, &S.cfg.rpc, errmsg) != 0) {
		LOG_ERROR(PROG ": rpc server: %s", errmsg);
		return -1;
	}
	listener_set_max_pending(S.l, S.cfg.rpc.max_connections, S.cfg.rpc.max_connections_per_ip);
	rpc_client_init(&S.cl, &S.loop);
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

	if (diskspace_init(&S.disk, &S.loop, S.cfg.data, address,
			   (uint64_t)S.cfg.min_free_disk_mb << 20,
			   S.cfg.segment_mb != 0 ? (size_t)S.cfg.segment_mb << 20 : TABLET_SEGMENT_BYTES,
			   errmsg) != 0) {
		LOG_ERROR(PROG ": --min-free-disk-mb: %s", errmsg);
		return -1;
	}
	S.disk_on = true;

	memset(&mo, 0, sizeof mo);
	mo.max_replicas = host_limits();
	mo.data_dir = S.cfg.data;
	mo.store_env = S.env;
	mo.address = address;
	mo.listener = S.l;
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
	segfill_set(S.cfg.fill_segments);
	mo.lease_ms = S.cfg.lease_ms < 0 ? 0 : S.cfg.lease_ms == 0 ? MANAGER_LEASE_OFF
								   : (unsigned)S.cfg.lease_ms;
	if (manager_init(&S.m, &S.loop, &mo, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		return -1;
	}
	S.m_on = true;
	memset(&so, 0, sizeof so);
	so.max_clock_skew_us = (uint64_t)S.cfg.max_clock_skew_ms * 1000;
	so.disk = &S.disk;
	if (service_init(&S.svc, &S.loop, &S.srv, &S.m, &so, errmsg) != 0) {
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
		if (heartbeat_start(&S.hb, &S.loop, &S.cl, &S.m, &S.svc, &ho, errmsg) != 0) {
			LOG_ERROR(PROG ": %s", errmsg);
			return -1;
		}
		S.hb_on = true;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	signal(SIGPIPE, SIG_IGN);
	log_init();
	if (getenv("DOCRAFT_TRACE") == NULL)
		log_set_level(LOG_LVL_INFO);
	parse_args(argc, argv);
	if (S.cfg.log_level >= 0)
		log_set_level(S.cfg.log_level);
	if (mkdir_p(S.cfg.data, errmsg) != 0 || load_uuid(errmsg) != 0) {
		fprintf(stderr, PROG ": %s\n", errmsg);
		return 1;
	}
	if ((rv = uv_loop_init(&S.loop)) != 0) {
		fprintf(stderr, PROG ": uv_loop_init: %s\n", uv_strerror(rv));
		return 1;
	}
	uv_signal_init(&S.loop, &S.sigterm);
	uv_signal_init(&S.loop, &S.sigint);
	uv_timer_init(&S.loop, &S.drain_timer);
	uv_timer_init(&S.loop, &S.lag_timer);
	S.lag_due_ns = uv_hrtime() + LAG_PERIOD_MS * 1000000;
	uv_timer_start(&S.lag_timer, lag_cb, LAG_PERIOD_MS, LAG_PERIOD_MS);
	uv_unref((uv_handle_t *)&S.lag_timer);
	S.handles_on = true;
	uv_signal_start(&S.sigterm, on_signal, SIGTERM);
	uv_signal_start(&S.sigint, on_signal, SIGINT);

	if (start() != 0) {
		S.exit_code = 1;
		S.stopping = true;
		close_next();
	} else {
		LOG_INFO(PROG " %s: serving at %s, data in %s, %s", S.uuid, listener_address(S.l),
			 S.cfg.data, S.n_masters > 0 ? "heartbeating the masters" : "standalone");
		printf(PROG " %s listening on %s\n", S.uuid, listener_address(S.l));
		fflush(stdout);
	}
	uv_run(&S.loop, UV_RUN_DEFAULT);
	rv = uv_loop_close(&S.loop);
	if (rv != 0) {
		LOG_ERROR(PROG ": loop not empty at exit: %s", uv_strerror(rv));
		S.exit_code = 1;
	}
	/* Hand-overs whose callbacks never came (raft does not report a
	 * transfer pending at close): nothing refers to them any more. */
	while (drains != NULL)
		drain_free(drains);
	store_env_destroy(S.env); /* every store closed with the manager */
	if (S.exit_code == 0)
		LOG_INFO(PROG " %s: stopped", S.uuid);
	return S.exit_code;
}
