/* docraft-master: the catalog server (service.h).
 *
 *   docraft-master --address IP:PORT --data DIR [--masters A,B,C]
 *                  [--tserver-timeout-ms MS] [--replication-factor N]
 *                  [--leader-balance on|off] [--config FILE]
 *                  [--log-level LEVEL] [--help]
 *
 * Flags take their value as the next argument or after '='. --config FILE
 * reads "key = value" lines (keys are the flag names without "--"; '#'
 * starts a comment); flags given on the command line win over the file.
 * Once serving, one line "docraft-master listening on <address>" goes to
 * stdout; logs go to stderr. SIGTERM or SIGINT close everything gracefully
 * (exit 0); a failure to start exits 1, a bad command line 2. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/log.h"
#include "rpc/rpc.h"
#include "master/service.h"

#define MAX_LINE 4096

static const char usage_text[] =
	"usage: docraft-master --address IP:PORT --data DIR [options]\n"
	"\n"
	"  --address IP:PORT          the address to bind and to be known by (required)\n"
	"  --data DIR                 data directory (required; created if missing)\n"
	"  --masters A,B,C            every master's address, this one included, in the\n"
	"                             same order on every master (default: --address)\n"
	"  --tserver-timeout-ms MS    a tserver silent longer is not live (default 3000)\n"
	"  --replication-factor N     used when CreateTable gives none: 1, 3 or 5 (default 3)\n"
	"  --leader-balance on|off    even out tablet leaders per live tserver by asking\n"
	"                             leaders to step down in heartbeat replies (default on)\n"
	"  --config FILE              'key = value' lines with the flags above (no --)\n"
	"  --log-level LEVEL          error, warn, info, debug or trace (default: $DOCRAFT_TRACE\n"
	"                             or warn)\n"
	"  --help                     this text\n";

struct settings {
	char *address;
	char *data;
	char *masters;
	char *tserver_timeout_ms;
	char *replication_factor;
	char *leader_balance;
	char *log_level;
	struct rpc_server_options rpc;
};

static struct {
	uv_loop_t loop;
	struct master *m;
	uv_signal_t sigterm, sigint;
	bool shutting_down;
	int exit_code;
} S;

static _Noreturn void usage_error(const char *fmt, const char *arg)
	__attribute__((format(printf, 1, 0)));

static _Noreturn void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "docraft-master: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(docraft-master --help shows the flags)\n");
	exit(2);
}

/* Sets the setting named key (flag name without "--"); false if unknown. */
static bool set(struct settings *st, const char *key, const char *value)
{
	static const struct {
		const char *name;
		size_t off;
	} keys[] = {
		{"address", offsetof(struct settings, address)},
		{"data", offsetof(struct settings, data)},
		{"masters", offsetof(struct settings, masters)},
		{"tserver-timeout-ms", offsetof(struct settings, tserver_timeout_ms)},
		{"replication-factor", offsetof(struct settings, replication_factor)},
		{"leader-balance", offsetof(struct settings, leader_balance)},
		{"log-level", offsetof(struct settings, log_level)},
	};
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (strcmp(keys[i].name, key) == 0) {
			char **slot = (char **)((char *)st + keys[i].off);
			free(*slot);
			*slot = strdup(value);
			if (*slot == NULL)
				abort();
			return true;
		}
	}
	rv = rpc_server_options_set(&st->rpc, key, value, errmsg);
	if (rv == DOCRAFT_EINVAL)
		usage_error("%s", errmsg);
	return rv == 0;
}

static char *trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static void read_config(struct settings *st, const char *path)
{
	char line[MAX_LINE];
	FILE *f = fopen(path, "r");
	unsigned n = 0;

	if (f == NULL) {
		fprintf(stderr, "docraft-master: --config %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char *hash = strchr(line, '#');
		char *eq, *key, *value;
		n++;
		if (hash != NULL)
			*hash = '\0';
		key = trim(line);
		if (*key == '\0')
			continue;
		eq = strchr(key, '=');
		if (eq == NULL) {
			fprintf(stderr, "docraft-master: %s:%u: expected 'key = value'\n", path, n);
			exit(2);
		}
		*eq = '\0';
		value = trim(eq + 1);
		key = trim(key);
		for (char *p = key; *p != '\0'; p++)
			if (*p == '_')
				*p = '-';
		if (!set(st, key, value)) {
			fprintf(stderr, "docraft-master: %s:%u: unknown key '%s'\n", path, n, key);
			exit(2);
		}
	}
	fclose(f);
}

static unsigned long long number(const char *name, const char *v)
{
	char *end;
	unsigned long long x;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || *v == '\0' || *end != '\0' || *v == '-')
		usage_error("not a number: %s", name);
	return x;
}

/* "on"/"off" (also "true"/"false"). */
static bool on_off(const char *name, const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0)
		return true;
	if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0)
		return false;
	usage_error("%s takes on or off", name);
}

/* Splits "a,b,c" in place into list (at most max entries). */
static size_t split_masters(char *s, const char **list, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(s, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		tok = trim(tok);
		if (*tok == '\0')
			continue;
		if (n == max) {
			fprintf(stderr, "docraft-master: more than %zu masters in --masters\n",
				max);
			exit(2);
		}
		list[n++] = tok;
	}
	return n;
}

static void parse_args(int argc, char **argv, struct settings *st)
{
	/* The config file first, so that flags override it. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			read_config(st, argv[i + 1]);
		else if (strncmp(argv[i], "--config=", 9) == 0)
			read_config(st, argv[i] + 9);
	}
	for (int i = 1; i < argc; i++) {
		char key[64];
		const char *a = argv[i], *value, *eq;
		size_t klen;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			for (size_t k = 0; k < RPC_SERVER_N_FLAGS; k++) {
				char left[64];
				snprintf(left, sizeof left, "--%s %s", rpc_server_flags[k].name,
					 rpc_server_flags[k].arg);
				printf("  %-26s %s\n", left, rpc_server_flags[k].help);
			}
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0)
			usage_error("unexpected argument '%s'", a);
		eq = strchr(a, '=');
		klen = eq != NULL ? (size_t)(eq - a - 2) : strlen(a + 2);
		if (klen >= sizeof key)
			usage_error("unknown flag '%s'", a);
		memcpy(key, a + 2, klen);
		key[klen] = '\0';
		if (eq != NULL) {
			value = eq + 1;
		} else {
			if (i + 1 >= argc)
				usage_error("flag '%s' needs a value", a);
			value = argv[++i];
		}
		if (strcmp(key, "config") == 0)
			continue;
		if (!set(st, key, value))
			usage_error("unknown flag '%s'", a);
	}
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void master_closed(void *arg)
{
	(void)arg;
	S.m = NULL;
}

static void shutdown_all(void)
{
	if (S.shutting_down)
		return;
	S.shutting_down = true;
	uv_close((uv_handle_t *)&S.sigterm, handle_closed);
	uv_close((uv_handle_t *)&S.sigint, handle_closed);
	if (S.m != NULL)
		master_close(S.m, master_closed, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	LOG_INFO("docraft-master: signal %d: closing", signum);
	shutdown_all();
}

static void on_fatal(void *arg, const char *why)
{
	(void)arg;
	LOG_ERROR("docraft-master: stopping: %s", why);
	S.exit_code = 1;
	shutdown_all();
}

int main(int argc, char **argv)
{
	struct settings st;
	struct master_options o;
	const char *masters[MASTER_MAX_MASTERS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	signal(SIGPIPE, SIG_IGN);
	log_init();
	memset(&st, 0, sizeof st);
	rpc_server_options_default(&st.rpc);
	parse_args(argc, argv, &st);
	if (st.address == NULL)
		usage_error("%s is required", "--address");
	if (st.data == NULL)
		usage_error("%s is required", "--data");
	if (st.log_level != NULL) {
		int level = log_parse_level(st.log_level);
		if (level < 0)
			usage_error("bad --log-level '%s'", st.log_level);
		log_set_level(level);
	}
	master_options_default(&o);
	o.address = st.address;
	o.data_dir = st.data;
	o.rpc = &st.rpc;
	if (st.masters != NULL) {
		o.n_masters = split_masters(st.masters, masters, MASTER_MAX_MASTERS);
		o.masters = masters;
	}
	if (st.tserver_timeout_ms != NULL)
		o.tserver_timeout_ms = number("--tserver-timeout-ms", st.tserver_timeout_ms);
	if (st.replication_factor != NULL)
		o.default_rf = (uint32_t)number("--replication-factor", st.replication_factor);
	if (st.leader_balance != NULL)
		o.leader_balance = on_off("--leader-balance", st.leader_balance);
	o.fatal_cb = on_fatal;

	if (uv_loop_init(&S.loop) != 0) {
		fprintf(stderr, "docraft-master: cannot create the event loop\n");
		return 1;
	}
	uv_signal_init(&S.loop, &S.sigterm);
	uv_signal_init(&S.loop, &S.sigint);
	uv_signal_start(&S.sigterm, on_signal, SIGTERM);
	uv_signal_start(&S.sigint, on_signal, SIGINT);

	rv = master_open(&S.loop, &o, &S.m, errmsg);
	if (rv != 0) {
		fprintf(stderr, "docraft-master: %s\n", errmsg);
		S.exit_code = 1;
		shutdown_all();
	} else {
		printf("docraft-master listening on %s\n", master_address(S.m));
		fflush(stdout);
	}
	uv_run(&S.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&S.loop) != 0) {
		LOG_ERROR("docraft-master: handles left open at exit");
		S.exit_code = 1;
	}
	free(st.address);
	free(st.data);
	free(st.masters);
	free(st.tserver_timeout_ms);
	free(st.replication_factor);
	free(st.leader_balance);
	free(st.log_level);
	return S.exit_code;
}
