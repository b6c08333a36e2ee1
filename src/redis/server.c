/* The RESP server (server.h): listener, connections, command dispatch and
 * the connection commands.
 *
 * Design note. A connection is a small state machine driven by pump():
 * parse the next request from the input buffer, run it, repeat, until the
 * input runs out, a command goes asynchronous, the replies queued pass
 * max_queued_bytes, or the connection is to close after its reply. Then
 * flush() writes what the commands wrote, and want_read() starts or stops
 * reading to match. Every event (bytes read, a write done, a command
 * completed) calls pump() again; so the requests of a pipeline run in
 * order, one at a time, and their replies leave in that order.
 *
 * Buffers. Input: one buffer, requests consumed from its front (pos),
 * compacted only between commands, so the arguments of a command in
 * progress (pointers into it) stay valid; meanwhile reading goes on only
 * into the buffer's spare room, never growing (moving) it, and stops when
 * that is full. A client with one command in flight at a time, as most
 * are, is thus never stopped and started (two epoll_ctl per command). Output: two buffers, `out` where commands write
 * and `wr` the one uv_write is sending; when a write ends, out becomes wr.
 *
 * Lifetime. A connection is freed once its handle is closed and no
 * command is in progress (a command completing on a closed connection
 * frees it). The server is freed once its listener and every connection
 * are. The idle timeout is one server timer sweeping the connections.
 *
 * MULTI: after MULTI a connection queues every command (copied: argv
 * points into the input buffer, which moves on) but the REDIS_CMD_NOQUEUE
 * ones, replying +QUEUED; an unknown command or a wrong arity while
 * queueing replies its error and marks the queue dirty, so EXEC replies
 * EXECABORT (Redis 7's multi.c). EXEC hands a clean queue to the exec hook
 * and frees it when the EXEC completes.
 *
 * Errors are Redis 7's texts (server.c commandCheckExistence,
 * commandCheckArity; networking.c; db.c selectCommand). */
#include "redis/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"

#define READ_CHUNK (16u * 1024)
#define COMPACT_AT (64u * 1024)
#define CLIENT_NAME_MAX 256

struct redis_conn {
	uv_tcp_t tcp;
	struct redis_server *s;
	struct redis_conn *prev, *next; /* s->conns */
	uint64_t id;
	struct resp_parser parser;
	struct buf in;
	size_t pos;     /* in: bytes consumed */
	struct buf out; /* replies being written by commands */
	struct buf wr;  /* replies uv_write is sending */
	uv_write_t write_req;
	uint64_t last_active;
	unsigned db;
	char *name; /* CLIENT SETNAME; NULL: none */
	bool writing, reading, pending, eof, close_after, closing, closed;
	bool in_run; /* inside a command's function: a completion there returns to pump */
	bool multi, multi_dirty; /* after MULTI; an error while queueing */
	bool in_exec;            /* an EXEC in progress owns mq */
	struct redis_queued *mq; /* the queue: each argv one block with its bytes */
	size_t mq_n, mq_cap;
	struct in_addr peer;
};

struct redis_server {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_timer_t sweep;
	struct redis_server_options o;
	struct redis_conn *conns;
	uint32_t n_conns;  /* open (in conns) */
	uint32_t live;     /* allocated: open, or closed with a command in progress */
	uint32_t refusing; /* connections refused past max_clients, still closing */
	uint64_t next_id;
	const struct redis_command **table; /* sorted by name */
	size_t n_table;
	char address[INET_ADDRSTRLEN + 8];
	int handles; /* listener and timer not yet closed */
	bool closing;
	void (*close_cb)(void *arg);
	void *close_arg;
};

static void pump(struct redis_conn *c);
static void maybe_free_server(struct redis_server *s);

/* ---- the built-in commands ---- */

static int cmd_ping(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	if (argc > 2)
		resp_error(&c->out, "ERR wrong number of arguments for 'ping' command");
	else if (argc == 1)
		resp_simple(&c->out, "PONG");
	else
		resp_bulk(&c->out, argv[1].p, argv[1].n);
	return REDIS_DONE;
}

static int cmd_echo(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	resp_bulk(&c->out, argv[1].p, argv[1].n);
	return REDIS_DONE;
}

static int cmd_quit(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_simple(&c->out, "OK");
	c->close_after = true;
	return REDIS_DONE;
}

static int cmd_select(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	long long db;

	(void)argc;
	if (!resp_string2ll(argv[1].p, argv[1].n, &db) || db < INT32_MIN || db > INT32_MAX)
		resp_error(&c->out, "ERR value is not an integer or out of range");
	else if (db < 0 || db >= REDIS_DBS)
		resp_error(&c->out, "ERR DB index is out of range");
	else {
		c->db = (unsigned)db;
		resp_simple(&c->out, "OK");
	}
	return REDIS_DONE;
}

static int cmd_client_setname(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	for (size_t i = 0; i < argv[2].n; i++) {
		if (argv[2].p[i] < '!' || argv[2].p[i] > '~') {
			resp_error(&c->out, "ERR Client names cannot contain spaces, newlines or "
					    "special characters.");
			return REDIS_DONE;
		}
	}
	if (argv[2].n > CLIENT_NAME_MAX) {
		resp_errorf(&c->out, "ERR Client names are limited to %d bytes here",
			    CLIENT_NAME_MAX);
		return REDIS_DONE;
	}
	free(c->name);
	c->name = NULL;
	if (argv[2].n > 0) {
		c->name = xmalloc(argv[2].n + 1);
		memcpy(c->name, argv[2].p, argv[2].n);
		c->name[argv[2].n] = '\0';
	}
	resp_simple(&c->out, "OK");
	return REDIS_DONE;
}

static int cmd_client_getname(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	if (c->name == NULL)
		resp_null_bulk(&c->out);
	else
		resp_bulk_str(&c->out, c->name);
	return REDIS_DONE;
}

static int cmd_client_id(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_int(&c->out, (long long)c->id);
	return REDIS_DONE;
}

static int cmd_config_get(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_array(&c->out, 0); /* no configuration parameter is exposed */
	return REDIS_DONE;
}

/* ---- MULTI ---- */

static void multi_clear(struct redis_conn *c)
{
	for (size_t i = 0; i < c->mq_n; i++)
		free((void *)c->mq[i].argv);
	c->mq_n = 0;
	c->multi = c->multi_dirty = false;
}

static void multi_queue(struct redis_conn *c, const struct redis_command *cmd, uint32_t argc,
			const struct resp_arg *argv)
{
	size_t bytes = argc * sizeof(struct resp_arg);
	struct resp_arg *copy;
	char *p;

	for (uint32_t i = 0; i < argc; i++)
		bytes += argv[i].n + 1;
	copy = xmalloc(bytes);
	p = (char *)(copy + argc);
	for (uint32_t i = 0; i < argc; i++) {
		memcpy(p, argv[i].p, argv[i].n);
		p[argv[i].n] = '\0';
		copy[i].p = p;
		copy[i].n = argv[i].n;
		p += argv[i].n + 1;
	}
	if (c->mq_n == c->mq_cap) {
		c->mq_cap = c->mq_cap == 0 ? 8 : 2 * c->mq_cap;
		c->mq = xrealloc(c->mq, c->mq_cap * sizeof *c->mq);
	}
	c->mq[c->mq_n++] = (struct redis_queued){.cmd = cmd, .argc = argc, .argv = copy};
}

static int cmd_multi(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	if (c->multi) {
		resp_error(&c->out, "ERR MULTI calls can not be nested");
	} else {
		c->multi = true;
		resp_simple(&c->out, "OK");
	}
	return REDIS_DONE;
}

static int cmd_discard(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	if (!c->multi) {
		resp_error(&c->out, "ERR DISCARD without MULTI");
	} else {
		multi_clear(c);
		resp_simple(&c->out, "OK");
	}
	return REDIS_DONE;
}

static int cmd_exec(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	if (!c->multi) {
		resp_error(&c->out, "ERR EXEC without MULTI");
		return REDIS_DONE;
	}
	if (c->multi_dirty) {
		multi_clear(c);
		resp_error(&c->out, "EXECABORT Transaction discarded because of previous errors.");
		return REDIS_DONE;
	}
	c->multi = false;
	if (c->mq_n == 0) {
		resp_array(&c->out, 0);
		return REDIS_DONE;
	}
	if (c->s->o.exec == NULL) {
		multi_clear(c);
		resp_error(&c->out, "ERR docraft: no EXEC here");
		return REDIS_DONE;
	}
	c->in_exec = true;
	if (c->s->o.exec(c, c->mq_n, c->mq) == REDIS_DONE) {
		c->in_exec = false;
		multi_clear(c);
		return REDIS_DONE;
	}
	return REDIS_ASYNC; /* redis_conn_complete clears the queue */
}

static int cmd_watch(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	if (c->multi)
		resp_error(&c->out, "ERR WATCH inside MULTI is not allowed");
	else
		resp_error(&c->out, "ERR docraft: WATCH is not supported");
	return REDIS_DONE;
}

/* INFO [section...]: the sections clients look at, whatever is asked.
 * redis_version says which Redis the protocol and errors follow. */
static int cmd_info(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct buf b = BUF_INIT;
	const char *port = strrchr(c->s->address, ':');

	(void)argc;
	(void)argv;
	buf_printf(&b,
		   "# Server\r\nredis_version:7.0.0\r\nredis_mode:%s\r\n"
		   "docraft:1\r\ntcp_port:%s\r\n\r\n"
		   "# Clients\r\nconnected_clients:%" PRIu32 "\r\nmaxclients:%" PRIu32 "\r\n\r\n"
		   "# Cluster\r\ncluster_enabled:%d\r\n",
		   c->s->o.cluster ? "cluster" : "standalone", port != NULL ? port + 1 : "",
		   c->s->n_conns, c->s->o.max_clients, c->s->o.cluster ? 1 : 0);
	if (c->s->o.info != NULL) {
		buf_append(&b, "\r\n", 2);
		c->s->o.info(c->s->o.data, &b);
	}
	resp_bulk(&c->out, b.data, b.len);
	buf_free(&b);
	return REDIS_DONE;
}

static int cmd_command(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
static int cmd_command_count(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
static int cmd_command_info(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
static int cmd_command_docs(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);
static int cmd_help(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);

#define FLAGS_CONN (REDIS_CMD_LOADING | REDIS_CMD_STALE | REDIS_CMD_FAST | REDIS_CMD_LOCAL)
#define FLAGS_TX                                                                     \
	(REDIS_CMD_NOSCRIPT | REDIS_CMD_LOADING | REDIS_CMD_STALE | REDIS_CMD_FAST | \
	 REDIS_CMD_NOQUEUE)

static const struct redis_command client_subs[] = {
	{"getname", 2, FLAGS_CONN, 0, 0, 0, cmd_client_getname, NULL, 0},
	{"help", 2, FLAGS_CONN, 0, 0, 0, cmd_help, NULL, 0},
	{"id", 2, FLAGS_CONN, 0, 0, 0, cmd_client_id, NULL, 0},
	{"setname", 3, FLAGS_CONN, 0, 0, 0, cmd_client_setname, NULL, 0},
};

static const struct redis_command command_subs[] = {
	{"count", 2, FLAGS_CONN, 0, 0, 0, cmd_command_count, NULL, 0},
	{"docs", -2, FLAGS_CONN, 0, 0, 0, cmd_command_docs, NULL, 0},
	{"help", 2, FLAGS_CONN, 0, 0, 0, cmd_help, NULL, 0},
	{"info", -2, FLAGS_CONN, 0, 0, 0, cmd_command_info, NULL, 0},
};

static const struct redis_command config_subs[] = {
	{"get", -3,
	 REDIS_CMD_ADMIN | REDIS_CMD_NOSCRIPT | REDIS_CMD_LOADING | REDIS_CMD_STALE |
		 REDIS_CMD_LOCAL,
	 0, 0, 0, cmd_config_get, NULL, 0},
	{"help", 2, FLAGS_CONN, 0, 0, 0, cmd_help, NULL, 0},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct redis_command builtins[] = {
	{"client", -2, 0, 0, 0, 0, NULL, client_subs, N(client_subs)},
	{"command", -1, REDIS_CMD_LOADING | REDIS_CMD_STALE | REDIS_CMD_LOCAL, 0, 0, 0, cmd_command,
	 command_subs, N(command_subs)},
	{"discard", 1, FLAGS_TX, 0, 0, 0, cmd_discard, NULL, 0},
	{"config", -2, 0, 0, 0, 0, NULL, config_subs, N(config_subs)},
	{"echo", 2, FLAGS_CONN, 0, 0, 0, cmd_echo, NULL, 0},
	{"exec", 1, FLAGS_TX & ~REDIS_CMD_FAST, 0, 0, 0, cmd_exec, NULL, 0},
	{"info", -1, REDIS_CMD_LOADING | REDIS_CMD_STALE | REDIS_CMD_LOCAL, 0, 0, 0, cmd_info, NULL,
	 0},
	{"multi", 1, FLAGS_TX, 0, 0, 0, cmd_multi, NULL, 0},
	{"ping", -1, REDIS_CMD_FAST | REDIS_CMD_LOCAL, 0, 0, 0, cmd_ping, NULL, 0},
	{"quit", -1, FLAGS_CONN | REDIS_CMD_NOQUEUE, 0, 0, 0, cmd_quit, NULL, 0},
	{"select", 2, FLAGS_CONN, 0, 0, 0, cmd_select, NULL, 0},
	{"unwatch", 1, FLAGS_TX, 0, 0, 0, cmd_watch, NULL, 0},
	{"watch", -2, FLAGS_TX, 0, 0, 0, cmd_watch, NULL, 0},
};

/* ---- the table ---- */

static int name_cmp(const char *name, size_t n, const char *key)
{
	size_t kn = strlen(key);
	int d = strncasecmp(name, key, n < kn ? n : kn);
	if (d != 0)
		return d;
	return n < kn ? -1 : n > kn ? 1 : 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct redis_command *x = *(const struct redis_command *const *)a;
	const struct redis_command *y = *(const struct redis_command *const *)b;
	return strcmp(x->name, y->name);
}

static const struct redis_command *find_in(const struct redis_command *const *t, size_t n,
					   const struct resp_arg *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = name_cmp(name->p, name->n, t[mid]->name);
		if (d == 0)
			return t[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Subcommand tables are small and sorted by hand: a linear search. */
static const struct redis_command *find_sub(const struct redis_command *cmd,
					    const struct resp_arg *name)
{
	for (size_t i = 0; i < cmd->n_subs; i++)
		if (name_cmp(name->p, name->n, cmd->subs[i].name) == 0)
			return &cmd->subs[i];
	return NULL;
}

static int build_table(struct redis_server *s, char *errmsg)
{
	size_t n = 0;

	s->table = xmalloc((N(builtins) + s->o.n_commands) * sizeof *s->table);
	for (size_t i = 0; i < s->o.n_commands; i++)
		s->table[n++] = &s->o.commands[i];
	for (size_t i = 0; i < N(builtins); i++) {
		bool shadowed = false;
		for (size_t j = 0; j < s->o.n_commands; j++)
			shadowed |= strcmp(s->o.commands[j].name, builtins[i].name) == 0;
		if (!shadowed)
			s->table[n++] = &builtins[i];
	}
	qsort(s->table, n, sizeof *s->table, entry_cmp);
	for (size_t i = 0; i + 1 < n; i++) {
		if (strcmp(s->table[i]->name, s->table[i + 1]->name) == 0) {
			free(s->table);
			s->table = NULL;
			return err_set(errmsg, DOCRAFT_EINVAL, "redis command '%s' given twice",
				       s->table[i]->name);
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (const char *p = s->table[i]->name; *p != '\0'; p++) {
			if (isupper((unsigned char)*p)) {
				err_set(errmsg, DOCRAFT_EINVAL,
					"redis command '%s' not in lower case", s->table[i]->name);
				free(s->table);
				s->table = NULL;
				return DOCRAFT_EINVAL;
			}
		}
	}
	s->n_table = n;
	return 0;
}

/* ---- COMMAND ---- */

static void command_info(struct buf *b, const struct redis_command *cmd, const char *parent)
{
	static const char *const names[] = {"write",    "readonly", "denyoom", "admin",
					    "noscript", "loading",  "stale",   "fast"};
	size_t nflags = 0;

	resp_array(b, 10);
	if (parent != NULL) {
		char full[128];
		snprintf(full, sizeof full, "%s|%s", parent, cmd->name);
		resp_bulk_str(b, full);
	} else {
		resp_bulk_str(b, cmd->name);
	}
	resp_int(b, cmd->arity);
	for (size_t i = 0; i < N(names); i++)
		nflags += (cmd->flags >> i) & 1;
	resp_array(b, nflags);
	for (size_t i = 0; i < N(names); i++)
		if (cmd->flags & (1u << i))
			resp_simple(b, names[i]);
	resp_int(b, cmd->first_key);
	resp_int(b, cmd->last_key);
	resp_int(b, cmd->step);
	resp_array(b, 0); /* ACL categories */
	resp_array(b, 0); /* tips */
	resp_array(b, 0); /* key specifications */
	resp_array(b, cmd->n_subs);
	for (size_t i = 0; i < cmd->n_subs; i++)
		command_info(b, &cmd->subs[i], cmd->name);
}

static int cmd_command(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_array(&c->out, c->s->n_table);
	for (size_t i = 0; i < c->s->n_table; i++)
		command_info(&c->out, c->s->table[i], NULL);
	return REDIS_DONE;
}

static int cmd_command_count(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_int(&c->out, (long long)c->s->n_table);
	return REDIS_DONE;
}

static int cmd_command_info(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	resp_array(&c->out, argc - 2);
	for (uint32_t i = 2; i < argc; i++) {
		const struct redis_command *cmd = find_in(c->s->table, c->s->n_table, &argv[i]);
		if (cmd == NULL)
			resp_null_array(&c->out);
		else
			command_info(&c->out, cmd, NULL);
	}
	return REDIS_DONE;
}

/* No documentation is kept: an empty map (a RESP2 array). */
static int cmd_command_docs(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	(void)argv;
	resp_array(&c->out, 0);
	return REDIS_DONE;
}

/* CLIENT HELP, COMMAND HELP, CONFIG HELP: the subcommands there are. */
static int cmd_help(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	const struct redis_command *cmd = find_in(c->s->table, c->s->n_table, &argv[0]);

	(void)argc;
	PRE(cmd != NULL);
	resp_array(&c->out, cmd->n_subs);
	for (size_t i = 0; i < cmd->n_subs; i++) {
		char line[64];
		size_t j;
		snprintf(line, sizeof line, "%s", cmd->subs[i].name);
		for (j = 0; line[j] != '\0'; j++)
			line[j] = (char)toupper((unsigned char)line[j]);
		resp_simple(&c->out, line);
	}
	return REDIS_DONE;
}

/* ---- dispatch ---- */

/* The length of a as sdscatprintf's "%.*s" prints it: up to a NUL. */
static int printable(const struct resp_arg *a, size_t max)
{
	const char *nul = memchr(a->p, '\0', a->n);
	size_t n = nul != NULL ? (size_t)(nul - a->p) : a->n;
	return (int)(n < max ? n : max);
}

static void unknown_command(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	char args[160];
	size_t len = 0;

	args[0] = '\0';
	for (uint32_t i = 1; i < argc && len < 128; i++) {
		int n = printable(&argv[i], 128 - len);
		len += (size_t)snprintf(args + len, sizeof args - len, "'%.*s' ", n, argv[i].p);
	}
	resp_errorf(&c->out, "ERR unknown command '%.*s', with args beginning with: %s",
		    printable(&argv[0], 128), argv[0].p, args);
}

static int run(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	const struct redis_command *cmd = find_in(c->s->table, c->s->n_table, &argv[0]);
	const char *parent = NULL;

	if (cmd == NULL) {
		unknown_command(c, argc, argv);
		c->multi_dirty = c->multi;
		return REDIS_DONE;
	}
	if (cmd->n_subs > 0 && argc >= 2) {
		const struct redis_command *sub = find_sub(cmd, &argv[1]);
		if (sub == NULL) {
			char upper[32];
			size_t i;
			for (i = 0; cmd->name[i] != '\0' && i + 1 < sizeof upper; i++)
				upper[i] = (char)toupper((unsigned char)cmd->name[i]);
			upper[i] = '\0';
			resp_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
				    printable(&argv[1], 128), argv[1].p, upper);
			c->multi_dirty = c->multi;
			return REDIS_DONE;
		}
		parent = cmd->name;
		cmd = sub;
	}
	if ((cmd->arity > 0 && (uint32_t)cmd->arity != argc) ||
	    (cmd->arity < 0 && argc < (uint32_t)-cmd->arity)) {
		if (parent != NULL)
			resp_errorf(&c->out, "ERR wrong number of arguments for '%s|%s' command",
				    parent, cmd->name);
		else
			resp_errorf(&c->out, "ERR wrong number of arguments for '%s' command",
				    cmd->name);
		c->multi_dirty = c->multi;
		return REDIS_DONE;
	}
	PRE(cmd->fn != NULL); /* a container without fn has arity -2 */
	if (c->multi && !(cmd->flags & REDIS_CMD_NOQUEUE)) {
		multi_queue(c, cmd, argc, argv);
		resp_simple(&c->out, "QUEUED");
		return REDIS_DONE;
	}
	return cmd->fn(c, argc, argv);
}

/* ---- connections ---- */

static void conn_free(struct redis_conn *c)
{
	struct redis_server *s = c->s;

	c->in_exec = false;
	multi_clear(c);
	free(c->mq);
	resp_parser_free(&c->parser);
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->wr);
	free(c->name);
	free(c);
	s->live--;
	maybe_free_server(s);
}

static void conn_closed(uv_handle_t *h)
{
	struct redis_conn *c = h->data;

	c->closed = true;
	DLIST_REMOVE(c->s->conns, c);
	c->s->n_conns--;
	if (!c->pending)
		conn_free(c);
}

static void conn_close(struct redis_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct redis_conn *c = h->data;
	size_t have = c->in.len - c->pos, need = resp_parser_need(&c->parser);
	size_t want = need > have ? need - have : READ_CHUNK;

	(void)hint;
	if (want < READ_CHUNK)
		want = READ_CHUNK;
	if (!c->pending) /* else argv points into it: the room there is */
		buf_reserve(&c->in, want);
	b->base = (char *)c->in.data + c->in.len;
	b->len = c->in.cap - c->in.len;
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
	struct redis_conn *c = st->data;

	(void)b;
	if (nread == 0)
		return;
	if (nread == UV_ENOBUFS) { /* a command in progress, its buffer full */
		uv_read_stop(st);
		c->reading = false;
		return;
	}
	if (nread < 0) {
		if (nread != UV_EOF) {
			conn_close(c);
			return;
		}
		c->eof = true;
	} else {
		c->in.len += (size_t)nread;
		c->last_active = uv_now(c->s->loop);
		if (c->in.len - c->pos > c->s->o.max_query_bytes) {
			LOG_WARN("redis: closing client %" PRIu64 " whose request passed %zu bytes",
				 c->id, c->s->o.max_query_bytes);
			conn_close(c);
			return;
		}
	}
	pump(c);
}

static void write_cb(uv_write_t *req, int status)
{
	struct redis_conn *c = req->data;

	c->writing = false;
	buf_reset(&c->wr);
	if (c->closing)
		return;
	if (status != 0) {
		conn_close(c);
		return;
	}
	c->last_active = uv_now(c->s->loop);
	pump(c);
}

static void flush(struct redis_conn *c)
{
	struct buf t;
	uv_buf_t b;
	size_t sent;
	int rv;

	if (c->writing || c->out.len == 0 || c->closing)
		return;
	/* Most replies fit the socket: written here, no request, no write
	 * callback, no epoll change (libuv re-arms the watcher after every
	 * uv_write); the rest, if any, goes through uv_write. */
	b = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
	rv = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
	if (rv < 0 && rv != UV_EAGAIN) {
		conn_close(c);
		return;
	}
	if (rv >= 0 && (size_t)rv == c->out.len) {
		buf_reset(&c->out);
		c->last_active = uv_now(c->s->loop);
		return;
	}
	t = c->wr;
	c->wr = c->out;
	c->out = t;
	sent = rv > 0 ? (size_t)rv : 0;
	b = uv_buf_init((char *)c->wr.data + sent, (unsigned)(c->wr.len - sent));
	c->write_req.data = c;
	if ((rv = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &b, 1, write_cb)) != 0) {
		conn_close(c);
		return;
	}
	c->writing = true;
}

static size_t queued(const struct redis_conn *c)
{
	return c->out.len + c->wr.len;
}

static void want_read(struct redis_conn *c)
{
	bool want;

	if (c->closing)
		return;
	want = !c->eof && !c->close_after && queued(c) < c->s->o.max_queued_bytes &&
	       (!c->pending || c->in.len < c->in.cap);

	if (want && !c->reading) {
		if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0) {
			conn_close(c);
			return;
		}
		c->reading = true;
	} else if (!want && c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = false;
	}
}

static void compact(struct redis_conn *c)
{
	if (c->pos == c->in.len) {
		c->pos = c->in.len = 0;
	} else if (c->pos >= COMPACT_AT || c->pos > c->in.len / 2) {
		memmove(c->in.data, c->in.data + c->pos, c->in.len - c->pos);
		c->in.len -= c->pos;
		c->pos = 0;
	}
}

static void pump(struct redis_conn *c)
{
	for (;;) {
		struct resp_request req;
		int rv;
		/* replies at the cap: write them now (a write that empties
		 * the queue at once calls nobody back), go on if that did */
		if (!c->closing && queued(c) >= c->s->o.max_queued_bytes)
			flush(c);
		if (c->pending || c->close_after || c->closing ||
		    queued(c) >= c->s->o.max_queued_bytes)
			break;
		rv = resp_parse(&c->parser, (const char *)c->in.data + c->pos, c->in.len - c->pos,
				&req);
		if (rv == RESP_MORE) {
			if (c->eof)
				c->close_after = true;
			break;
		}
		if (rv == RESP_EPROTO) {
			LOG_DEBUG("redis: client %" PRIu64 ": %s", c->id, c->parser.err);
			resp_error(&c->out, c->parser.err);
			c->close_after = true;
			break;
		}
		c->pos += req.used;
		if (req.argc == 0)
			continue;
		/* pending from the start: a command may complete inside its
		 * function (a client call that fails at once) */
		c->pending = true;
		c->in_run = true;
		if (run(c, req.argc, req.argv) == REDIS_DONE)
			c->pending = false;
		c->in_run = false;
	}
	if (!c->pending)
		compact(c);
	flush(c);
	if (c->close_after && !c->pending && !c->writing && c->out.len == 0) {
		conn_close(c);
		return;
	}
	want_read(c);
}

void redis_conn_complete(struct redis_conn *c)
{
	PRE(c->pending);
	c->pending = false;
	if (c->in_exec) {
		c->in_exec = false;
		multi_clear(c);
	}
	if (c->in_run)
		return; /* completed inside its function: pump carries on */
	c->last_active = uv_now(c->s->loop);
	if (c->closed) {
		conn_free(c);
		return;
	}
	pump(c);
}

struct buf *redis_conn_out(struct redis_conn *c)
{
	return &c->out;
}

unsigned redis_conn_db(const struct redis_conn *c)
{
	return c->db;
}

void *redis_conn_data(const struct redis_conn *c)
{
	return c->s->o.data;
}

void redis_conn_run_local(struct redis_conn *c, const struct redis_queued *q, struct buf *out)
{
	struct buf t = c->out;
	int rv;

	PRE(q->cmd->flags & REDIS_CMD_LOCAL);
	if (out == &c->out) {
		rv = q->cmd->fn(c, q->argc, q->argv);
		PRE(rv == REDIS_DONE);
		return;
	}
	c->out = *out;
	rv = q->cmd->fn(c, q->argc, q->argv);
	*out = c->out;
	c->out = t;
	PRE(rv == REDIS_DONE);
}

const char *redis_conn_server_address(const struct redis_conn *c)
{
	return c->s->address;
}

/* ---- the listener ---- */

struct refused {
	uv_tcp_t tcp;
	uv_write_t w;
	struct redis_server *s;
};

static void refused_closed(uv_handle_t *h)
{
	struct refused *r = h->data;
	struct redis_server *s = r->s;

	free(r);
	s->refusing--;
	maybe_free_server(s);
}

static void refuse_written(uv_write_t *req, int status)
{
	struct refused *r = req->data;

	(void)status;
	uv_close((uv_handle_t *)&r->tcp, refused_closed);
}

/* Past max_clients: Redis's reply, then close. */
static void refuse(struct redis_server *s)
{
	static const char msg[] = "-ERR max number of clients reached\r\n";
	struct refused *r = xmalloc(sizeof *r);
	uv_buf_t b = uv_buf_init((char *)msg, sizeof msg - 1);

	r->s = s;
	s->refusing++;
	uv_tcp_init(s->loop, &r->tcp);
	r->tcp.data = r;
	r->w.data = r;
	if (uv_accept((uv_stream_t *)&s->tcp, (uv_stream_t *)&r->tcp) != 0 ||
	    uv_write(&r->w, (uv_stream_t *)&r->tcp, &b, 1, refuse_written) != 0)
		uv_close((uv_handle_t *)&r->tcp, refused_closed);
}

static void free_handle(uv_handle_t *h)
{
	free(h->data);
}

/* Open connections from ip (a walk: accepts are rare next to requests). */
static uint32_t same_ip(const struct redis_server *s, struct in_addr ip)
{
	uint32_t n = 0;
	for (const struct redis_conn *c = s->conns; c != NULL; c = c->next)
		n += !c->closing && c->peer.s_addr == ip.s_addr;
	return n;
}

static void accept_cb(uv_stream_t *ls, int status)
{
	struct redis_server *s = ls->data;
	struct redis_conn *c;

	if (status != 0 || s->closing)
		return;
	if (s->n_conns >= s->o.max_clients) {
		refuse(s);
		return;
	}
	c = xcalloc(1, sizeof *c);
	c->s = s;
	uv_tcp_init(s->loop, &c->tcp);
	c->tcp.data = c;
	if (uv_accept(ls, (uv_stream_t *)&c->tcp) != 0) {
		uv_close((uv_handle_t *)&c->tcp, free_handle);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	{
		struct sockaddr_in peer;
		int plen = sizeof peer;
		if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen) == 0 &&
		    peer.sin_family == AF_INET)
			c->peer = peer.sin_addr;
	}
	c->id = ++s->next_id;
	resp_parser_init(&c->parser, &s->o.limits);
	buf_init(&c->in);
	buf_init(&c->out);
	buf_init(&c->wr);
	c->last_active = uv_now(s->loop);
	if (s->o.max_per_ip > 0 && c->peer.s_addr != 0 && same_ip(s, c->peer) >= s->o.max_per_ip) {
		/* replied like any reply, then closed (QUIT's path) */
		resp_error(&c->out, "ERR max number of clients per IP reached");
		c->close_after = true;
	}
	DLIST_PUSH(s->conns, c);
	s->n_conns++;
	s->live++;
	if (c->close_after)
		pump(c);
	else
		want_read(c);
}

static void sweep_cb(uv_timer_t *t)
{
	struct redis_server *s = t->data;
	uint64_t now = uv_now(s->loop);
	struct redis_conn *c, *next;

	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (!c->pending && !c->closing && now - c->last_active >= s->o.idle_timeout_ms) {
			LOG_DEBUG("redis: closing client %" PRIu64 " idle for %" PRIu64 " ms",
				  c->id, now - c->last_active);
			conn_close(c);
		}
	}
}

void redis_server_options_default(struct redis_server_options *o)
{
	memset(o, 0, sizeof *o);
	o->limits.max_bulk = RESP_DEFAULT_MAX_BULK;
	o->limits.max_multibulk = RESP_DEFAULT_MAX_MULTIBULK;
	o->limits.max_inline = RESP_DEFAULT_MAX_INLINE;
	o->max_clients = REDIS_DEFAULT_MAX_CLIENTS;
	o->idle_timeout_ms = REDIS_DEFAULT_IDLE_TIMEOUT_MS;
	o->max_queued_bytes = REDIS_DEFAULT_MAX_QUEUED_BYTES;
	o->max_query_bytes = REDIS_DEFAULT_MAX_QUERY_BYTES;
	o->max_per_ip = REDIS_DEFAULT_MAX_PER_IP;
}

static void handle_closed(uv_handle_t *h)
{
	struct redis_server *s = h->data;
	s->handles--;
	maybe_free_server(s);
}

static void maybe_free_server(struct redis_server *s)
{
	void (*cb)(void *);
	void *arg;

	if (!s->closing || s->handles > 0 || s->live > 0 || s->refusing > 0)
		return;
	cb = s->close_cb;
	arg = s->close_arg;
	free(s->table);
	free(s);
	if (cb != NULL)
		cb(arg);
}

int redis_server_start(uv_loop_t *loop, const struct sockaddr_in *addr,
		       const struct redis_server_options *o, struct redis_server **out,
		       char *errmsg)
{
	struct redis_server *s;
	struct sockaddr_in bound;
	int len = sizeof bound, rv;
	char ip[INET_ADDRSTRLEN];

	if (o->max_clients == 0 || o->max_queued_bytes == 0 || o->max_query_bytes == 0 ||
	    o->limits.max_inline == 0 || o->limits.max_multibulk == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "redis server: a limit of 0");
	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->o = *o;
	if ((rv = build_table(s, errmsg)) != 0) {
		free(s);
		return rv;
	}
	uv_tcp_init(loop, &s->tcp);
	s->tcp.data = s;
	s->handles = 1;
	if ((rv = uv_tcp_bind(&s->tcp, (const struct sockaddr *)addr, 0)) != 0 ||
	    (rv = uv_listen((uv_stream_t *)&s->tcp, 511, accept_cb)) != 0 ||
	    (rv = uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&bound, &len)) != 0) {
		inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof ip);
		err_set(errmsg, DOCRAFT_EIO, "redis server: listen on %s:%u: %s", ip,
			ntohs(addr->sin_port), uv_strerror(rv));
		s->closing = true; /* frees s once the handle is closed */
		uv_close((uv_handle_t *)&s->tcp, handle_closed);
		return DOCRAFT_EIO;
	}
	inet_ntop(AF_INET, &bound.sin_addr, ip, sizeof ip);
	snprintf(s->address, sizeof s->address, "%s:%u", ip, ntohs(bound.sin_port));
	uv_timer_init(loop, &s->sweep);
	s->sweep.data = s;
	s->handles++;
	if (o->idle_timeout_ms > 0) {
		uint64_t period = o->idle_timeout_ms / 4 > 1000 ? 1000 : o->idle_timeout_ms / 4 + 1;
		uv_timer_start(&s->sweep, sweep_cb, period, period);
		uv_unref((uv_handle_t *)&s->sweep);
	}
	*out = s;
	return 0;
}

const char *redis_server_address(const struct redis_server *s)
{
	return s->address;
}

uint32_t redis_server_connections(const struct redis_server *s)
{
	return s->n_conns;
}

void redis_server_close(struct redis_server *s, void (*cb)(void *arg), void *arg)
{
	struct redis_conn *c, *next;

	PRE(!s->closing);
	s->closing = true;
	s->close_cb = cb;
	s->close_arg = arg;
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		conn_close(c);
	}
	uv_close((uv_handle_t *)&s->tcp, handle_closed);
	uv_close((uv_handle_t *)&s->sweep, handle_closed);
}
