/* docraft-master: the catalog server (service.h).
 *
 *   docraft-master --address IP:PORT --data DIR [--masters A,B,C | --join A,B]
 *                  [--tserver-timeout-ms MS] [--tserver-failed-after-s S]
 *                  [--max-concurrent-moves N] [--replication-factor N]
 *                  [--leader-balance on|off] [--drop-timeout-ms MS] [--config FILE]
 *                  [--log-level LEVEL] [--help]
 *
 * Flags take their value as the next argument or after '='. --config FILE
 * reads "key = value" lines (keys are the flag names without "--"; '#'
 * starts a comment); flags given on the command line win over the file.
 * Once serving, one line "docraft-master listening on <address>" goes to
 * stdout; logs go to stderr. SIGTERM or SIGINT close everything gracefully
 * (exit 0); a failure to start exits 1, a bad command line 2.
 *
 * The flag parser and everything around the loop are server/skeleton.h's;
 * this file holds the master's flag table and its one part, the master
 * service, which it puts on the skeleton's port and RPC server. */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "master/http_master.h"
#include "master/service.h"
#include "server/config.h"
#include "server/skeleton.h"
#include "server/web.h"

#define PROG "docraft-master"

static struct {
	struct server proc; /* loop, signals, flags, exit code (skeleton.h) */
	struct {
		unsigned tserver_timeout_ms;
		unsigned tserver_failed_after_s;
		unsigned max_concurrent_moves;
		unsigned replication_factor;
		bool leader_balance;
		unsigned drop_timeout_ms;
		char join[2048];
	} st;
	struct master *m;
	struct master_http http; /* what the HTTP handler reads (http_master.h) */
} S;

/* Every flag but --config, --log-level, --help and the peer limits,
 * which server_parse adds (server/skeleton.h).
 * The numbers are checked by master_open (a bad one fails the start). */
static const struct config_flag flags[] = {
	{.name = "join", .arg = "A,B", .kind = CONFIG_STRING, .dst = S.st.join,
	 .cap = sizeof S.st.join,
	 .help = "a new master: running masters to ask for its raft id once `docraft master add` "
		 "added it (no bootstrap; ignored once DIR/master.id exists)"},
	{.name = "tserver-timeout-ms", .arg = "MS", .kind = CONFIG_MS,
	 .dst = &S.st.tserver_timeout_ms, .max = UINT_MAX,
	 .help = "a tserver silent longer is not live (default 3000)"},
	{.name = "tserver-failed-after-s", .arg = "S", .kind = CONFIG_UINT,
	 .dst = &S.st.tserver_failed_after_s, .max = UINT_MAX / 1000, .what = "seconds",
	 .help = "a tserver silent longer is failed: its replicas are re-created elsewhere "
		 "(default 300)"},
	{.name = "max-concurrent-moves", .arg = "N", .kind = CONFIG_UINT,
	 .dst = &S.st.max_concurrent_moves, .max = 1024, .what = "a number of moves",
	 .help = "replica moves (re-replication, drain, rebalance) in flight at most; 0: none "
		 "(default 4)"},
	{.name = "replication-factor", .arg = "N", .kind = CONFIG_UINT,
	 .dst = &S.st.replication_factor, .max = UINT32_MAX, .what = "a replication factor",
	 .help = "used when CreateTable gives none: 1, 3 or 5 (default 3)"},
	{.name = "leader-balance", .arg = "on|off", .kind = CONFIG_BOOL,
	 .dst = &S.st.leader_balance,
	 .help = "even out tablet leaders per live tserver by asking leaders to step down in "
		 "heartbeat replies (default on)"},
	{.name = "drop-timeout-ms", .arg = "MS", .kind = CONFIG_MS,
	 .dst = &S.st.drop_timeout_ms, .max = UINT_MAX,
	 .help = "DropTable answers once each tablet of the table is deleted on a majority of its "
		 "replicas, or UNAVAILABLE after this (default 1500)"},
};

static const struct server_help help = {
	.address = "the address to bind and to be known by (required)",
	.data = "data directory (required; created if missing)",
	.masters = "every master's address, this one included, in the same order on every master "
		   "(default: --address); the bootstrap list only: after `docraft master add|remove`, "
		   "the masters' Raft configuration wins",
};

static const struct config_spec spec = {
	.synopsis = PROG " --address IP:PORT --data DIR [options]",
	.flags = flags,
	.n_flags = sizeof flags / sizeof flags[0],
};

/* ---- lifecycle ------------------------------------------------------------------------------- */

static void master_closed(void *arg)
{
	(void)arg;
	S.m = NULL;
	server_release(&S.proc);
}

static void step_master(struct server *s)
{
	if (S.m != NULL) {
		server_hold(s);
		master_close(S.m, master_closed, NULL);
	}
}

/* The signal handlers go first: a second signal while closing has its
 * default effect. The RPC server stops before the master (its handlers use
 * it), the port after it (the catalog tablet leaves it first). */
static const server_step_fn close_steps[] = {server_step_signals, server_step_http,
					     server_step_lag, server_step_rpc, step_master,
					     server_step_listener};

static void on_fatal(void *arg, const char *why)
{
	(void)arg;
	LOG_ERROR(PROG ": stopping: %s", why);
	server_fail(&S.proc);
}

/* The list of flag (its value s, split in place) into list; its length. */
static size_t split_masters(char *s, char **list, const char *flag)
{
	size_t n = s[0] != '\0' ? config_split_list(s, list, MASTER_MAX_MASTERS) : 0;
	if (n > MASTER_MAX_MASTERS)
		server_bad_usage(&S.proc, "more than %d masters in %s", MASTER_MAX_MASTERS, flag);
	return n;
}

int main(int argc, char **argv)
{
	struct master_options o;
	char *masters[MASTER_MAX_MASTERS];
	char *join[MASTER_MAX_MASTERS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	server_init(&S.proc, PROG, -1);
	master_options_default(&o);
	S.st.tserver_timeout_ms = (unsigned)o.tserver_timeout_ms;
	S.st.tserver_failed_after_s = o.tserver_failed_after_s;
	S.st.max_concurrent_moves = o.max_concurrent_moves;
	S.st.replication_factor = o.default_rf;
	S.st.leader_balance = o.leader_balance;
	S.st.drop_timeout_ms = (unsigned)o.drop_timeout_ms;
	server_parse(&S.proc, &help, &spec, argc, argv);
	o.address = S.proc.address;
	o.data_dir = S.proc.data;
	o.n_masters = split_masters(S.proc.masters, masters, "--masters");
	o.masters = o.n_masters > 0 ? (const char *const *)masters : NULL;
	o.n_join = split_masters(S.st.join, join, "--join");
	o.join = o.n_join > 0 ? (const char *const *)join : NULL;
	o.tserver_timeout_ms = S.st.tserver_timeout_ms;
	o.tserver_failed_after_s = S.st.tserver_failed_after_s;
	o.max_concurrent_moves = S.st.max_concurrent_moves;
	o.default_rf = S.st.replication_factor;
	o.leader_balance = S.st.leader_balance;
	o.drop_timeout_ms = S.st.drop_timeout_ms;
	o.fatal_cb = on_fatal;

	if (server_open(&S.proc, close_steps, sizeof close_steps / sizeof close_steps[0]) != 0)
		return 1;
	server_lag_start(&S.proc, o.election_ms);
	if (server_listen(&S.proc, S.proc.address) != 0) {
		server_fail(&S.proc);
		return server_run(&S.proc);
	}
	o.listener = S.proc.l;
	o.rpc_server = &S.proc.rpc;
	if (master_open(&S.proc.loop, &o, &S.m, errmsg) != 0) {
		LOG_ERROR(PROG ": %s", errmsg);
		server_fail(&S.proc);
	} else {
		S.http = (struct master_http){.proc = &S.proc, .m = &S.m};
		if (server_http_open(&S.proc, master_address(S.m), SERVER_HTTP_PORT_MASTER,
				     master_http_handle, &S.http) != 0)
			server_fail(&S.proc);
		else
			server_ready(&S.proc, NULL, master_address(S.m));
	}
	return server_run(&S.proc);
}
