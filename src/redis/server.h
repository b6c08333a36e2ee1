/* The RESP server: a TCP listener on a libuv loop speaking Redis's
 * protocol (resp.h), its connections, and its command table.
 *
 * Connections: each has its input buffer and parser; its requests run one
 * at a time, in order (a pipeline's replies come back in its order, also
 * when a command completes later: the next request is not started before
 * it does). Reading stops while a command is in progress, while more than
 * max_queued_bytes of replies wait to be written (back-pressure: the
 * client's pipeline waits in its own socket), and after a protocol error
 * or QUIT, whose reply is written before the connection closes, as Redis
 * does. At end of input the requests already read still run and their
 * replies are written before the close.
 *
 * Commands: a table of struct redis_command, looked up case-insensitively,
 * with Redis's arity rule (n > 0: exactly n words, the name included;
 * n < 0: at least -n) and Redis's error texts for an unknown command, an
 * unknown subcommand and a wrong arity. The server has the commands that
 * need no storage (PING ECHO QUIT SELECT INFO COMMAND CLIENT CONFIG) and
 * MULTI's queueing (MULTI EXEC DISCARD, WATCH and UNWATCH refused); the
 * layer above adds its own (the data commands) through the options, and
 * EXEC's work through the exec hook.
 *
 * Threading: everything runs on the loop's thread; no function may be
 * called from another thread. Ownership: the server owns its connections;
 * a command's arguments belong to the connection and stay valid until the
 * command completes. */
#ifndef DOCRAFT_REDIS_SERVER_H
#define DOCRAFT_REDIS_SERVER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "redis/resp.h"

#define REDIS_DEFAULT_PORT 6379
#define REDIS_DBS 16 /* SELECT 0..15, Redis's default "databases" */
#define REDIS_DEFAULT_MAX_CLIENTS 10000u /* Redis's maxclients */
#define REDIS_DEFAULT_MAX_PER_IP 1000u
#define REDIS_DEFAULT_IDLE_TIMEOUT_MS (300u * 1000) /* as the RPC server's */
#define REDIS_DEFAULT_MAX_QUEUED_BYTES (32u << 20)
/* Input held for one request in progress (Redis: client-query-buffer-limit
 * 1 GiB); past it the connection closes. */
#define REDIS_DEFAULT_MAX_QUERY_BYTES (64u << 20)

struct redis_conn;
struct redis_server;

enum {
	REDIS_DONE = 0,  /* the reply is in redis_conn_out */
	REDIS_ASYNC = 1, /* the command will call redis_conn_complete */
};

/* Runs one command: argv[0] is its name (argv[1] the subcommand's for a
 * subcommand); the arity is already checked. Writes its reply into
 * redis_conn_out(c) and returns REDIS_DONE, or returns REDIS_ASYNC and
 * later (from a callback on the loop) writes its reply and calls
 * redis_conn_complete(c). argv stays valid until then. */
typedef int (*redis_command_fn)(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv);

/* The flags COMMAND reports (Redis's names). */
enum {
	REDIS_CMD_WRITE = 1u << 0,    /* "write" */
	REDIS_CMD_READONLY = 1u << 1, /* "readonly" */
	REDIS_CMD_DENYOOM = 1u << 2,  /* "denyoom" */
	REDIS_CMD_ADMIN = 1u << 3,    /* "admin" */
	REDIS_CMD_NOSCRIPT = 1u << 4, /* "noscript" */
	REDIS_CMD_LOADING = 1u << 5,  /* "loading" */
	REDIS_CMD_STALE = 1u << 6,    /* "stale" */
	REDIS_CMD_FAST = 1u << 7,     /* "fast" */
	/* Not reported by COMMAND: */
	REDIS_CMD_NOQUEUE = 1u << 8, /* runs at once inside MULTI (EXEC, DISCARD, MULTI,
					WATCH, UNWATCH, QUIT): never queued */
	REDIS_CMD_LOCAL = 1u << 9,   /* always replies at once (REDIS_DONE) and touches
					only the connection: redis_conn_run_local may run it */
};

struct redis_command {
	const char *name; /* lower case */
	int arity;
	unsigned flags;
	int first_key, last_key, step; /* COMMAND's key positions; 0: no keys */
	redis_command_fn fn;           /* NULL: a container run with no subcommand is an error */
	const struct redis_command *subs; /* a container's subcommands (CLIENT SETNAME) */
	size_t n_subs;
};

/* A command queued by MULTI, handed to the exec hook: cmd is the entry it
 * resolved to (the subcommand's for a subcommand), argv[0] its name. The
 * server owns it (argv and its bytes too) until the EXEC completes. */
struct redis_queued {
	const struct redis_command *cmd;
	uint32_t argc;
	const struct resp_arg *argv;
};

/* EXEC of a MULTI whose queue q[0..n) (n > 0) had no error while queueing:
 * writes the reply (an array of n replies, or one error when nothing ran)
 * like a command (REDIS_DONE, or REDIS_ASYNC then redis_conn_complete). */
typedef int (*redis_exec_fn)(struct redis_conn *c, size_t n, const struct redis_queued *q);

struct redis_server_options {
	struct resp_limits limits;
	uint32_t max_clients;     /* past it: "-ERR max number of clients reached", close */
	uint64_t idle_timeout_ms; /* close a connection idle so long; 0: never */
	size_t max_queued_bytes;  /* replies waiting before reading stops */
	size_t max_query_bytes;   /* input of one request in progress before closing */
	/* The layer above's commands, besides the server's own; a name of both
	 * is the layer above's. The table must outlive the server. */
	const struct redis_command *commands;
	size_t n_commands;
	void *data; /* for those commands: redis_conn_data */
	/* MULTI / EXEC (Redis's queueing and errors are the server's): EXEC's
	 * work; NULL: EXEC of a non-empty queue replies an error. */
	redis_exec_fn exec;
	/* Connections from one IP address; past it: "-ERR max number of
	 * clients per IP reached", close. 0: no limit. */
	uint32_t max_per_ip;
	/* The layer above answers CLUSTER: INFO says redis_mode:cluster and
	 * cluster_enabled:1 (cluster clients check it). */
	bool cluster;
	/* Appends the layer above's own INFO section(s) ("# Name\r\nkey:value
	 * \r\n..."), after the server's; NULL: none. Loop thread. */
	void (*info)(void *data, struct buf *out);
};

void redis_server_options_default(struct redis_server_options *o);

/* Listens on addr (port 0: any free port) and serves on loop. 0, or an
 * error code with errmsg (the address is in use, bad options); on error
 * nothing is left on the loop. */
int redis_server_start(uv_loop_t *loop, const struct sockaddr_in *addr,
		       const struct redis_server_options *o, struct redis_server **out,
		       char *errmsg);

/* The address it listens on, "IP:PORT" (the port chosen when 0 was given). */
const char *redis_server_address(const struct redis_server *s);

/* Connections open now (tests, metrics). */
uint32_t redis_server_connections(const struct redis_server *s);

/* Stops listening and closes every connection; cb(arg) once every handle
 * is closed and every connection released. A connection whose command is
 * in progress is released when that command completes: the owner of
 * asynchronous commands completes them (with an error reply, say) when it
 * closes. s is freed before cb. */
void redis_server_close(struct redis_server *s, void (*cb)(void *arg), void *arg);

/* ---- for commands ---- */

/* Where a command writes its reply (resp.h's writer). */
struct buf *redis_conn_out(struct redis_conn *c);
/* The database SELECT chose (0 at first). */
unsigned redis_conn_db(const struct redis_conn *c);
/* The options' data. */
void *redis_conn_data(const struct redis_conn *c);
/* Ends a command that returned REDIS_ASYNC: its reply is in
 * redis_conn_out(c). The connection runs its next request, or is released
 * if it closed meanwhile. May also be called inside the command's function
 * (it then returns REDIS_ASYNC all the same): the next request runs once
 * the function has returned. */
void redis_conn_complete(struct redis_conn *c);
/* Runs q (whose cmd has REDIS_CMD_LOCAL) now, its reply appended to out
 * instead of redis_conn_out (an exec hook running a queue's PING, ECHO,
 * SELECT...). */
void redis_conn_run_local(struct redis_conn *c, const struct redis_queued *q, struct buf *out);
/* The server's address, "IP:PORT" (CLUSTER NODES' "myself"). */
const char *redis_conn_server_address(const struct redis_conn *c);

#endif
