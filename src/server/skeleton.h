/* The process skeleton docraft-tserver and docraft-master share: what
 * happens around their libuv loop, written once.
 *
 *   server_init      SIGPIPE ignored (net/listener.h), logging set up
 *   server_parse     the flags every server has (--address, --data,
 *                    --masters, --http-address, --config, --log-level, --help, the peer
 *                    limits of rpc/rpc.h) around the program's own table
 *                    (server/config.h); --help prints the usage and exits
 *                    0, a bad command line exits 2
 *   server_open      the loop, SIGTERM and SIGINT handlers
 *   server_listen    (optional) the port and its RPC server, with the
 *                    peer limits
 *   server_ready     the one "<prog>[ <id>] listening on <address>" line
 *                    on stdout that tells a supervisor it is up
 *   server_run       runs the loop until everything is closed; returns
 *                    the exit code: 0 after a graceful close, 1 after a
 *                    failure to start (server_fail) or a loop left unclean
 *
 * Closing is a chain of steps, the program's list (struct server_step),
 * run in order: a step starts the asynchronous closes of its part, calling
 * server_hold once for each and server_release from each close callback;
 * the next step starts when every close of the previous one has called
 * back. The skeleton's own parts are steps too (server_step_rpc,
 * server_step_listener, server_step_signals), placed where the program
 * wants them in its order.
 *
 * A signal calls the program's on_signal (which decides when to call
 * server_close: the tserver drains leaderships first), or, without one,
 * logs "<prog>: signal N: closing" and closes at once.
 *
 * Logging: after server_parse everything goes through common/log.h,
 * prefixed "<prog>: "; only usage errors (before logging matters) are
 * plain lines on stderr. Exit codes: 0 graceful, 1 start failure, 2 bad
 * command line.
 *
 * Threading: one server per process, everything on its loop's thread; the
 * struct is the program's (usually static), never freed. */
#ifndef DOCRAFT_SERVER_SKELETON_H
#define DOCRAFT_SERVER_SKELETON_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "common/lathist.h"
#include "net/listener.h"
#include "rpc/rpc.h"
#include "server/config.h"

struct server;

/* One step of the close chain (design note). */
typedef void (*server_step_fn)(struct server *s);

struct server {
	const char *prog;           /* "docraft-tserver": every message's prefix */
	uv_loop_t loop;
	/* What server_parse fills from the flags every server has. The
	 * peer-limit flags (--max-connections, ...) land in rpc_opts. */
	struct rpc_server_options rpc_opts;
	char address[64];           /* --address */
	char data[4096];            /* --data */
	char masters[2048];         /* --masters; "" if not given */
	char http_address[64];      /* --http-address (server/web.h); "" if not given */
	struct http_server *http;   /* server_http_open; NULL when off or closed */
	struct lathist loop_lag;    /* the loop-lag probe's measures (server/web.h) */
	uv_timer_t lag_timer;       /* the probe; lag_on while it runs */
	bool lag_on;
	uint64_t lag_due_ns;        /* uv_hrtime() at which it should run next */
	unsigned lag_election_ms;   /* for its warning's context; 0: none */
	uint64_t start_ns;          /* uv_hrtime() at server_init */
	double start_wall_s;        /* the wall clock then */
	int log_level;              /* --log-level; -1: not given */
	struct listener *l;         /* server_listen; NULL once closed */
	struct rpc_server rpc;      /* server_listen */
	bool rpc_on;
	/* Called on SIGTERM / SIGINT; NULL: close at once (design note). */
	void (*on_signal)(struct server *s, int signum);

	/* Private. */
	int default_log_level;
	char log_help[96];          /* --log-level's usage line */
	uv_signal_t sigterm, sigint;
	bool signals_on;
	bool closing;
	int exit_code;
	const server_step_fn *steps;
	size_t n_steps, step;
	unsigned pending;
};

/* Process start, before anything else: ignores SIGPIPE, reads
 * $DOCRAFT_TRACE (common/log.h); without it the log level is
 * default_level (-1: log.c's own default, warn). prog must outlive s. */
void server_init(struct server *s, const char *prog, int default_log_level);

/* The usage lines of the flags every server has and words differently. */
struct server_help {
	const char *address, *data, *masters;
};

/* Parses argv against the flags every server has and spec's own:
 * --address IP:PORT (required), --data DIR (required), --masters A,B,C
 * and --http-address IP:PORT|off (into s->address, s->data, s->masters,
 * s->http_address), then spec's flags, then
 * --config FILE, --log-level LEVEL (applied here), --help and the peer
 * limits of rpc/rpc.h (into s->rpc_opts). --help: prints the usage on
 * stdout, exit(0). A bad command line: "<prog>: <why>" and a hint on
 * stderr, exit(2). help and spec are not kept. */
void server_parse(struct server *s, const struct server_help *help,
		  const struct config_spec *spec, int argc, char **argv);

/* A usage error found after server_parse (flags that contradict each
 * other): as above, exit(2). */
_Noreturn void server_bad_usage(const struct server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Creates the loop and starts the SIGTERM and SIGINT handlers; steps
 * (n_steps of them, kept, not copied) is the close chain. 0, or -1 after
 * logging why (the caller returns 1). */
int server_open(struct server *s, const server_step_fn *steps, size_t n_steps);

/* Opens the port at address (net/listener.h) and the RPC server on it,
 * configured with s->rpc_opts, the port's accept-stage caps with it. 0, or
 * -1 after logging why (call server_fail). Close with server_step_rpc and
 * server_step_listener. */
int server_listen(struct server *s, const char *address);

/* The ready line: "<prog> <id> listening on <address>" (id NULL:
 * "<prog> listening on <address>"), flushed. */
void server_ready(const struct server *s, const char *id, const char *address);

/* Starts the close chain (once; later calls do nothing). */
void server_close(struct server *s);

/* A failure: the exit code becomes 1 and the close chain starts. */
void server_fail(struct server *s);

/* True once server_close (or server_fail) has run. */
bool server_closing(const struct server *s);

/* Inside a step: one more close to wait for; its callback calls
 * server_release. */
void server_hold(struct server *s);
void server_release(struct server *s);

/* The skeleton's own steps: the RPC server, the port, the signal
 * handlers. Each does nothing if its part is not open. */
void server_step_rpc(struct server *s);
void server_step_listener(struct server *s);
void server_step_signals(struct server *s);

/* Runs the loop until every handle is closed, then closes it. Returns the
 * exit code (0, or 1 after server_fail or if handles were left open). */
int server_run(struct server *s);

/* Raises RLIMIT_NOFILE's soft limit to the hard one (logged) and returns
 * the soft limit then in force (RLIM_INFINITY as 1 << 20); 0 if it cannot
 * be read (logged). Start-up only. */
unsigned long server_raise_nofile(const struct server *s);

#endif
