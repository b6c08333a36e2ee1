/* docraft: the command-line client of a docraft cluster.
 *
 *   docraft [--masters a,b,c] [--timeout ms] shell
 *   docraft [--masters a,b,c] -e "stmt; stmt"
 *   docraft [--masters a,b,c] tservers | tables | tablets <table>
 *   docraft [--masters a,b,c] step-down <tablet> [<to ip:port>]
 *   docraft [--masters a,b,c] dump <tablet> [<replica ip:port>]
 *   docraft [--masters a,b,c] bench [options]   (src/tools/bench/bench.c)
 *   docraft [--masters a,b,c] checksum <table>
 *   docraft [--masters a,b,c] master list | add <ip:port> | remove <ip:port>
 *   docraft [--masters a,b,c] cluster | status
 *   docraft [--masters a,b,c] drain <tserver> [--wait[=S]] | undrain <tserver>
 *
 * Built on the public API of libdocraft only (include/docraft/docraft.h):
 * statements go through docraft_exec_cql, admin commands through
 * docraft_admin_*. The shell reads lines and runs a statement once the text
 * read so far ends with ';' outside strings and comments
 * (docraft_cql_complete), so statements may span lines. Exit status: 0
 * when everything succeeded, 1 when a statement or command failed, 2 for
 * a usage error. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docraft/docraft.h"
#include "tools/bench/bench.h"

#define DEFAULT_MASTERS "127.0.0.1:7100"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: docraft [options] <command>\n"
		"\n"
		"commands:\n"
		"  shell                 read CQL statements from stdin (end each with ';')\n"
		"  -e \"stmt; ...\"        run CQL statements and exit\n"
		"  tservers              list the tablet servers\n"
		"  tables                list the tables (as CREATE TABLE statements)\n"
		"  tablets <table>       a table's tablets: partitions, replicas, leaders\n"
		"  step-down <tablet> [addr]  ask a tablet's leader to step down (to the\n"
		"                        replica at addr, ip:port, when given)\n"
		"  dump <tablet> [addr]  the DocDB dump of the leader's replica (or of the\n"
		"                        replica at addr, ip:port)\n"
		"  bench [options]       YCSB-style benchmark of docraft, etcd or Redis\n"
		"                        (docraft bench --help)\n"
		"  checksum <table>      every replica's checksum of every tablet (the\n"
		"                        leader's latest write, then each replica at that\n"
		"                        time); exit 0 when all agree, 1 otherwise\n"
		"  master list           the masters: address, raft id, leader\n"
		"  master add <addr>     add the master at addr (started with --join)\n"
		"  master remove <addr>  remove the master at addr (one change at a time)\n"
		"  cluster (or status)   the cluster as the master leader sees it: tservers\n"
		"                        by state, under-replicated and leaderless tablets,\n"
		"                        replica moves in flight, masters\n"
		"  drain <tserver> [--wait[=S]]  move every leader, then every replica, off\n"
		"                        the tserver (uuid or ip:port); --wait: until none\n"
		"                        is left (at most S s, default 3600), with progress\n"
		"  undrain <tserver>     stop draining it (the balancer may move replicas back)\n"
		"\n"
		"options:\n"
		"  --masters a,b,c       master addresses, ip[:port] (default %s)\n"
		"  --timeout ms          total time of one request (default 10000)\n"
		"  --tablets n           tablets of tables created by CREATE TABLE (default:\n"
		"                        the master's, one per live tablet server)\n"
		"  --rf n                their replication factor (default: the master's)\n"
		"  -h, --help            this text\n"
		"\n"
		"CQL: CREATE TABLE, DROP TABLE, INSERT, UPDATE, DELETE, SELECT ... [AS OF\n"
		"<hybrid time>]. Errors point at the offending token.\n",
		DEFAULT_MASTERS);
}

static void write_out(void *arg, const char *text, size_t len)
{
	(void)arg;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
}

static void write_err(void *arg, const char *text, size_t len)
{
	(void)arg;
	fflush(stdout);
	fwrite(text, 1, len, stderr);
	fflush(stderr);
}

static const docraft_printer printer = {write_out, write_err, NULL};

static int fail(const char *what, int rv)
{
	const char *msg = docraft_errmsg();
	fprintf(stderr, "docraft: %s: %s%s%s\n", what, docraft_strerror(rv), msg[0] ? ": " : "",
		msg);
	return 1;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

static int shell(docraft_client *c)
{
	bool tty = isatty(STDIN_FILENO);
	char *text = NULL, *line = NULL;
	size_t len = 0, cap = 0, lcap = 0;
	int status = 0;

	if (tty)
		printf("docraft shell: CQL statements end with ';', Ctrl-D quits.\n");
	for (;;) {
		ssize_t n;
		if (tty) {
			fputs(len == 0 ? "docraft> " : "    ...> ", stdout);
			fflush(stdout);
		}
		n = getline(&line, &lcap, stdin);
		if (n < 0)
			break;
		if (len + (size_t)n + 1 > cap) {
			cap = 2 * (len + (size_t)n + 1);
			text = realloc(text, cap);
			if (text == NULL) {
				fprintf(stderr, "docraft: out of memory\n");
				exit(1);
			}
		}
		memcpy(text + len, line, (size_t)n + 1);
		len += (size_t)n;
		if (len == 0 || blank(text)) {
			len = 0;
			continue;
		}
		if (strncmp(text, "exit", 4) == 0 || strncmp(text, "quit", 4) == 0) {
			const char *rest = text + 4;
			while (*rest == ' ' || *rest == ';' || *rest == '\n' || *rest == '\r')
				rest++;
			if (*rest == '\0')
				break;
		}
		if (!docraft_cql_complete(text))
			continue;
		if (docraft_exec_cql(c, text, &printer) != 0)
			status = 1;
		len = 0;
	}
	if (len > 0 && !blank(text)) {
		/* The last statement without its ';'. */
		if (docraft_exec_cql(c, text, &printer) != 0)
			status = 1;
	}
	if (tty)
		printf("\n");
	free(text);
	free(line);
	return status;
}

static int parse_u32(const char *s, const char *what, uint32_t *out)
{
	char *end;
	unsigned long v;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v > UINT32_MAX) {
		fprintf(stderr, "docraft: bad %s '%s'\n", what, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* drain's arguments: the tserver, then --wait or --wait=S in any order.
 * Returns 0, or -1 after a message. */
static int drain_args(int argc, char **argv, int i, const char **node, uint32_t *wait_s)
{
	*node = NULL;
	*wait_s = 0;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0) {
			*wait_s = 3600;
		} else if (strncmp(argv[i], "--wait=", 7) == 0) {
			if (parse_u32(argv[i] + 7, "--wait seconds", wait_s) != 0 || *wait_s == 0) {
				fprintf(stderr, "docraft: --wait=S takes a positive number of seconds\n");
				return -1;
			}
		} else if (*node == NULL && argv[i][0] != '-') {
			*node = argv[i];
		} else {
			fprintf(stderr, "docraft: drain: unexpected argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (*node == NULL) {
		fprintf(stderr, "docraft: drain: which tserver? (uuid or ip:port)\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *masters = DEFAULT_MASTERS, *exec = NULL, *cmd = NULL;
	docraft_client_options opts;
	docraft_client *c;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *node = NULL;
	uint32_t wait_s = 0;
	int i, rv, status = 0;

	signal(SIGPIPE, SIG_IGN);
	docraft_client_options_init(&opts);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--masters") == 0 && i + 1 < argc) {
			masters = argv[++i];
		} else if (strncmp(a, "--masters=", 10) == 0) {
			masters = a + 10;
		} else if (strcmp(a, "--timeout") == 0 && i + 1 < argc) {
			if (parse_u32(argv[++i], "timeout", &opts.timeout_ms) != 0 ||
			    opts.timeout_ms == 0)
				return 2;
			if (opts.rpc_timeout_ms > opts.timeout_ms)
				opts.rpc_timeout_ms = opts.timeout_ms;
		} else if (strcmp(a, "--tablets") == 0 && i + 1 < argc) {
			if (parse_u32(argv[++i], "tablet count", &opts.num_tablets) != 0)
				return 2;
		} else if (strcmp(a, "--rf") == 0 && i + 1 < argc) {
			if (parse_u32(argv[++i], "replication factor", &opts.replication_factor) !=
			    0)
				return 2;
		} else if (strcmp(a, "-e") == 0 && i + 1 < argc) {
			exec = argv[++i];
		} else if (a[0] == '-') {
			fprintf(stderr, "docraft: unknown option %s (docraft --help)\n", a);
			return 2;
		} else {
			cmd = a;
			i++;
			break;
		}
	}
	if (exec == NULL && cmd == NULL) {
		usage(stderr);
		return 2;
	}
	if (exec == NULL && cmd != NULL && strcmp(cmd, "bench") == 0)
		return bench_main(argc - i + 1, argv + i - 1, masters, &opts);
	if (exec != NULL && cmd != NULL) {
		fprintf(stderr, "docraft: -e and a command (%s) do not mix\n", cmd);
		return 2;
	}
	if (cmd != NULL) {
		int nargs = argc - i;
		bool ok = (strcmp(cmd, "shell") == 0 && nargs == 0) ||
			  (strcmp(cmd, "tservers") == 0 && nargs == 0) ||
			  (strcmp(cmd, "tables") == 0 && nargs == 0) ||
			  (strcmp(cmd, "tablets") == 0 && nargs == 1) ||
			  (strcmp(cmd, "step-down") == 0 && (nargs == 1 || nargs == 2)) ||
			  (strcmp(cmd, "dump") == 0 && (nargs == 1 || nargs == 2)) ||
			  (strcmp(cmd, "checksum") == 0 && nargs == 1) ||
			  (strcmp(cmd, "master") == 0 && nargs == 1 &&
			   strcmp(argv[i], "list") == 0) ||
			  (strcmp(cmd, "master") == 0 && nargs == 2 &&
			   (strcmp(argv[i], "add") == 0 || strcmp(argv[i], "remove") == 0)) ||
			  ((strcmp(cmd, "cluster") == 0 || strcmp(cmd, "status") == 0) &&
			   nargs == 0) ||
			  (strcmp(cmd, "undrain") == 0 && nargs == 1);
		if (strcmp(cmd, "drain") == 0) {
			if (drain_args(argc, argv, i, &node, &wait_s) != 0)
				return 2;
			ok = true;
		}
		if (!ok) {
			fprintf(stderr, "docraft: bad command or arguments: %s (docraft --help)\n",
				cmd);
			return 2;
		}
	}
	if ((rv = docraft_client_open(masters, &opts, &c, errmsg)) != 0) {
		fprintf(stderr, "docraft: %s\n", errmsg);
		return 2;
	}
	if (exec != NULL) {
		status = docraft_exec_cql(c, exec, &printer) != 0;
	} else if (strcmp(cmd, "shell") == 0) {
		status = shell(c);
	} else if (strcmp(cmd, "tservers") == 0) {
		if ((rv = docraft_admin_tservers(c, &printer)) != 0)
			status = fail("tservers", rv);
	} else if (strcmp(cmd, "tables") == 0) {
		if ((rv = docraft_admin_tables(c, &printer)) != 0)
			status = fail("tables", rv);
	} else if (strcmp(cmd, "tablets") == 0) {
		if ((rv = docraft_admin_tablets(c, argv[i], &printer)) != 0)
			status = fail(argv[i], rv);
	} else if (strcmp(cmd, "step-down") == 0) {
		if ((rv = docraft_admin_step_down_to(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL,
						     &printer)) != 0)
			status = fail(argv[i], rv);
	} else if (strcmp(cmd, "master") == 0) {
		if (strcmp(argv[i], "list") == 0)
			rv = docraft_admin_masters(c, &printer);
		else if (strcmp(argv[i], "add") == 0)
			rv = docraft_admin_master_add(c, argv[i + 1], &printer);
		else
			rv = docraft_admin_master_remove(c, argv[i + 1], &printer);
		if (rv != 0)
			status = fail(argv[i + 1 < argc ? i + 1 : i], rv);
	} else if (strcmp(cmd, "cluster") == 0 || strcmp(cmd, "status") == 0) {
		if ((rv = docraft_admin_cluster(c, &printer)) != 0)
			status = fail(cmd, rv);
	} else if (strcmp(cmd, "drain") == 0 || strcmp(cmd, "undrain") == 0) {
		bool undrain = cmd[0] == 'u';
		if (undrain)
			node = argv[i];
		if ((rv = docraft_admin_drain(c, node, undrain, wait_s, &printer)) != 0)
			status = fail(node, rv);
	} else if (strcmp(cmd, "checksum") == 0) {
		if ((rv = docraft_admin_checksum(c, argv[i], &printer)) != 0)
			status = fail(argv[i], rv);
	} else {
		if ((rv = docraft_admin_dump(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL,
					     &printer)) != 0)
			status = fail(argv[i], rv);
	}
	docraft_client_close(c);
	return status;
}
