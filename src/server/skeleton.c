/* The process skeleton. See skeleton.h for the contract.
 *
 * Design. The close chain is a cursor over the program's steps and a
 * count of closes in flight: a step runs with one hold of its own (so
 * that a close calling back at once cannot start the next step under it),
 * which is dropped when the step returns; whoever drops the count to zero
 * runs the next step. The flags every server has are not in the
 * programs' tables: server_parse puts them around the program's, the peer
 * limits as one CONFIG_CALL entry per flag of rpc_server_flags
 * (rpc/rpc.h), so both servers take the same ones, with the same words,
 * and a new one reaches both. */
#include "server/skeleton.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

void server_init(struct server *s, const char *prog, int default_log_level)
{
	memset(s, 0, sizeof *s);
	s->prog = prog;
	s->log_level = -1;
	s->start_ns = uv_hrtime();
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		s->start_wall_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	}
	s->default_log_level = default_log_level;
	rpc_server_options_default(&s->rpc_opts);
	signal(SIGPIPE, SIG_IGN);
	log_init();
	if (default_log_level >= 0 && getenv("DOCRAFT_TRACE") == NULL)
		log_set_level(default_log_level);
}

static _Noreturn void usage_exit(const struct server *s, const char *why)
{
	fprintf(stderr, "%s: %s\n(%s --help for the options)\n", s->prog, why, s->prog);
	exit(2);
}

_Noreturn void server_bad_usage(const struct server *s, const char *fmt, ...)
{
	char why[DOCRAFT_ERRMSG_SIZE * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	usage_exit(s, why);
}

static int set_rpc_option(void *dst, const char *name, const char *value, char *errmsg)
{
	return rpc_server_options_set(dst, name, value, errmsg);
}

/* The flags every server has: --address, --data and --masters before the
 * program's own, then --config, --log-level, --help and the peer limits
 * (one CONFIG_CALL entry per rpc_server_flags entry). */
#define LEADING_FLAGS 4
#define TRAILING_FLAGS (3 + RPC_SERVER_N_FLAGS)

static void leading_flags(struct server *s, const struct server_help *help,
			  struct config_flag *f)
{
	f[0] = (struct config_flag){.name = "address", .arg = "IP:PORT", .kind = CONFIG_STRING,
				    .dst = s->address, .cap = sizeof s->address,
				    .required = true, .help = help->address};
	f[1] = (struct config_flag){.name = "data", .arg = "DIR", .kind = CONFIG_STRING,
				    .dst = s->data, .cap = sizeof s->data, .required = true,
				    .help = help->data};
	f[2] = (struct config_flag){.name = "masters", .arg = "A,B,C", .kind = CONFIG_STRING,
				    .dst = s->masters, .cap = sizeof s->masters,
				    .help = help->masters};
	f[3] = (struct config_flag){.name = "http-address", .arg = "IP:PORT|off",
				    .kind = CONFIG_STRING, .dst = s->http_address,
				    .cap = sizeof s->http_address,
				    .help = "the HTTP server: /metrics, /api/v1, pages (default: "
					    "--address's IP, the server's HTTP port; ':PORT' takes "
					    "--address's IP; off: none)"};
}

static void trailing_flags(struct server *s, struct config_flag *f)
{
	static const char *const levels[] = {"error", "warn", "info", "debug", "trace"};
	int level = s->default_log_level;

	snprintf(s->log_help, sizeof s->log_help,
		 "error, warn, info, debug or trace (default: $DOCRAFT_TRACE, else %s)",
		 levels[level >= 0 && level <= LOG_LVL_TRACE ? level : LOG_LVL_WARN]);
	f[0] = (struct config_flag){.name = "config", .arg = "FILE", .kind = CONFIG_FILE,
				    .help = "'name = value' lines with the names of these flags "
					    "('#' comments); flags win"};
	f[1] = (struct config_flag){.name = "log-level", .arg = "LEVEL",
				    .kind = CONFIG_LOG_LEVEL, .dst = &s->log_level,
				    .help = s->log_help};
	f[2] = (struct config_flag){.name = "help", .kind = CONFIG_HELP, .help = "this text"};
	for (size_t i = 0; i < RPC_SERVER_N_FLAGS; i++)
		f[3 + i] = (struct config_flag){
			.name = rpc_server_flags[i].name, .arg = rpc_server_flags[i].arg,
			.kind = CONFIG_CALL, .dst = &s->rpc_opts, .set = set_rpc_option,
			.help = rpc_server_flags[i].help};
}

void server_parse(struct server *s, const struct server_help *help,
		  const struct config_spec *spec, int argc, char **argv)
{
	size_t n = LEADING_FLAGS + spec->n_flags + TRAILING_FLAGS;
	struct config_flag *flags = xcalloc(n, sizeof *flags);
	struct config_spec all = *spec;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	leading_flags(s, help, flags);
	memcpy(flags + LEADING_FLAGS, spec->flags, spec->n_flags * sizeof *flags);
	trailing_flags(s, flags + LEADING_FLAGS + spec->n_flags);
	all.flags = flags;
	all.n_flags = n;
	rv = config_parse(&all, argc, argv, errmsg);
	if (rv == CONFIG_HELP_SHOWN) {
		config_usage(&all, stdout);
		free(flags);
		exit(0);
	}
	free(flags);
	if (rv != 0)
		usage_exit(s, errmsg);
	if (s->log_level >= 0)
		log_set_level(s->log_level);
}

/* ---- loop and signals ---------------------------------------------------------------- */

static void on_signal(uv_signal_t *h, int signum)
{
	struct server *s = h->data;
	if (s->on_signal != NULL) {
		s->on_signal(s, signum);
		return;
	}
	if (s->closing)
		return;
	LOG_INFO("%s: signal %d: closing", s->prog, signum);
	server_close(s);
}

int server_open(struct server *s, const server_step_fn *steps, size_t n_steps)
{
	int rv;

	s->steps = steps;
	s->n_steps = n_steps;
	if ((rv = uv_loop_init(&s->loop)) != 0) {
		LOG_ERROR("%s: uv_loop_init: %s", s->prog, uv_strerror(rv));
		return -1;
	}
	uv_signal_init(&s->loop, &s->sigterm);
	uv_signal_init(&s->loop, &s->sigint);
	s->sigterm.data = s;
	s->sigint.data = s;
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	s->signals_on = true;
	return 0;
}

int server_listen(struct server *s, const char *address)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	if (listener_open(&s->loop, address, &s->l, errmsg) != 0) {
		LOG_ERROR("%s: %s", s->prog, errmsg);
		return -1;
	}
	if (rpc_server_init(&s->rpc, &s->loop, s->l, errmsg) != 0) {
		LOG_ERROR("%s: rpc server: %s", s->prog, errmsg);
		return -1;
	}
	s->rpc_on = true;
	if (rpc_server_configure(&s->rpc, &s->rpc_opts, errmsg) != 0) {
		LOG_ERROR("%s: rpc server: %s", s->prog, errmsg);
		return -1;
	}
	listener_set_max_pending(s->l, s->rpc_opts.max_connections,
				 s->rpc_opts.max_connections_per_ip);
	return 0;
}

void server_ready(const struct server *s, const char *id, const char *address)
{
	printf("%s%s%s listening on %s\n", s->prog, id != NULL ? " " : "", id != NULL ? id : "",
	       address);
	fflush(stdout);
}

/* ---- the close chain ----------------------------------------------------------------- */

static void close_next(struct server *s)
{
	while (s->step < s->n_steps) {
		server_step_fn step = s->steps[s->step++];
		s->pending = 1; /* held while the step starts its closes */
		step(s);
		if (--s->pending > 0)
			return; /* the last server_release runs the next step */
	}
}

void server_hold(struct server *s)
{
	s->pending++;
}

void server_release(struct server *s)
{
	if (--s->pending == 0)
		close_next(s);
}

void server_close(struct server *s)
{
	if (s->closing)
		return;
	s->closing = true;
	close_next(s);
}

void server_fail(struct server *s)
{
	s->exit_code = 1;
	server_close(s);
}

bool server_closing(const struct server *s)
{
	return s->closing;
}

static void rpc_closed(struct rpc_server *srv)
{
	struct server *s = (struct server *)((char *)srv - offsetof(struct server, rpc));
	s->rpc_on = false;
	server_release(s);
}

void server_step_rpc(struct server *s)
{
	if (s->rpc_on) {
		server_hold(s);
		rpc_server_close(&s->rpc, rpc_closed);
	}
}

static void listener_closed(void *arg)
{
	struct server *s = arg;
	s->l = NULL;
	server_release(s);
}

void server_step_listener(struct server *s)
{
	if (s->l != NULL) {
		server_hold(s);
		listener_close(s->l, listener_closed, s);
	}
}

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

void server_step_signals(struct server *s)
{
	if (s->signals_on) {
		s->signals_on = false;
		uv_close((uv_handle_t *)&s->sigterm, handle_closed);
		uv_close((uv_handle_t *)&s->sigint, handle_closed);
	}
}

int server_run(struct server *s)
{
	int rv;

	uv_run(&s->loop, UV_RUN_DEFAULT);
	rv = uv_loop_close(&s->loop);
	if (rv != 0) {
		LOG_ERROR("%s: loop not empty at exit: %s", s->prog, uv_strerror(rv));
		s->exit_code = 1;
	}
	return s->exit_code;
}

unsigned long server_raise_nofile(const struct server *s)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		LOG_WARN("%s: getrlimit(RLIMIT_NOFILE): %s", s->prog, strerror(errno));
		return 0;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			LOG_INFO("%s: open files limit raised from %llu to %llu (the hard limit)",
				 s->prog, (unsigned long long)was, (unsigned long long)rl.rlim_cur);
		else
			LOG_WARN("%s: cannot raise the open files limit from %llu to %llu: %s",
				 s->prog, (unsigned long long)was, (unsigned long long)rl.rlim_max,
				 strerror(errno));
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY ? 1ul << 20 : (unsigned long)rl.rlim_cur;
}
