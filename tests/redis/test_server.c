/* The RESP server (src/redis/server.c) on a real libuv loop, driven over
 * real loopback sockets by blocking clients in the test thread: pipelines
 * whose replies keep their order across asynchronous commands, the
 * command table's errors, protocol errors closing the connection after
 * their reply, back-pressure, the client limit, the idle timeout, the
 * request size limit, and a close while a command is in progress.
 *
 * The server's loop runs in a thread of its own; a uv_async stops it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/buf.h"
#include "redis/resp.h"
#include "redis/server.h"
#include "test.h"
#include "wait.h"

/* ---- test commands: SLOW (an asynchronous echo), BIG (a large reply) ---- */

struct slow {
	uv_timer_t t;
	struct redis_conn *c;
	struct resp_arg text; /* argv[1] itself: valid until the command completes */
};

static atomic_int big_runs;
static atomic_int slow_pending;
static atomic_int slow_started; /* SLOWs taken (not "now") */

static void slow_closed(uv_handle_t *h)
{
	free(h->data);
}

static void slow_fire(uv_timer_t *t)
{
	struct slow *sl = t->data;

	resp_bulk(redis_conn_out(sl->c), sl->text.p, sl->text.n);
	atomic_fetch_sub(&slow_pending, 1);
	redis_conn_complete(sl->c);
	uv_close((uv_handle_t *)t, slow_closed);
}

/* SLOW text ms: replies text after ms milliseconds; SLOW text now:
 * replies and completes inside the call, still returning REDIS_ASYNC (a
 * command whose client call fails at once). */
static int cmd_slow(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct slow *sl;
	long long ms;

	(void)argc;
	if (argv[2].n == 3 && memcmp(argv[2].p, "now", 3) == 0) {
		resp_bulk(redis_conn_out(c), argv[1].p, argv[1].n);
		redis_conn_complete(c);
		return REDIS_ASYNC;
	}
	sl = calloc(1, sizeof *sl);
	if (!resp_string2ll(argv[2].p, argv[2].n, &ms) || ms < 0)
		ms = 0;
	sl->text = argv[1];
	sl->c = c;
	uv_timer_init(uv_default_loop(), &sl->t);
	sl->t.data = sl;
	atomic_fetch_add(&slow_pending, 1);
	atomic_fetch_add(&slow_started, 1);
	uv_timer_start(&sl->t, slow_fire, (uint64_t)ms, 0);
	return REDIS_ASYNC;
}

/* BIG: a 256 KiB bulk. */
static int cmd_big(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	static char v[256 * 1024];

	(void)argc;
	(void)argv;
	memset(v, 'x', sizeof v);
	resp_bulk(redis_conn_out(c), v, sizeof v);
	atomic_fetch_add(&big_runs, 1);
	return REDIS_DONE;
}

static const struct redis_command extra[] = {
	{"slow", 3, 0, 0, 0, 0, cmd_slow, NULL, 0},
	{"big", 1, 0, 0, 0, 0, cmd_big, NULL, 0},
};

/* ---- the server thread ---- */

struct fixture {
	pthread_t thread;
	uv_async_t stop;
	struct redis_server *srv;
	int port;
	atomic_int closed; /* the server's close callback ran */
};

static void server_closed(void *arg)
{
	struct fixture *f = arg;
	atomic_store(&f->closed, 1);
}

static void stop_cb(uv_async_t *a)
{
	struct fixture *f = a->data;
	redis_server_close(f->srv, server_closed, f);
	uv_close((uv_handle_t *)a, NULL);
}

static void *loop_thread(void *arg)
{
	(void)arg;
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	return NULL;
}

static void start(struct fixture *f, struct redis_server_options *o)
{
	struct sockaddr_in sa;
	char errmsg[256];
	const char *colon;

	memset(f, 0, sizeof *f);
	o->commands = extra;
	o->n_commands = sizeof extra / sizeof extra[0];
	uv_ip4_addr("127.0.0.1", 0, &sa);
	CHECK_OK(redis_server_start(uv_default_loop(), &sa, o, &f->srv, errmsg));
	colon = strrchr(redis_server_address(f->srv), ':');
	f->port = atoi(colon + 1);
	uv_async_init(uv_default_loop(), &f->stop, stop_cb);
	f->stop.data = f;
	CHECK(pthread_create(&f->thread, NULL, loop_thread, NULL) == 0);
}

static void stop(struct fixture *f)
{
	uv_async_send(&f->stop);
	CHECK(pthread_join(f->thread, NULL) == 0);
	CHECK(atomic_load(&f->closed));
	CHECK_EQ_INT(uv_loop_alive(uv_default_loop()), 0);
}

/* ---- a blocking client ---- */

static int client(int port)
{
	struct sockaddr_in sa;
	struct timeval tv = {10, 0}; /* a bound on every read: a hang fails */
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		CHECK(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

#define SEND(fd, lit) send_all(fd, lit, sizeof(lit) - 1)

/* Reads exactly want bytes and compares them. */
static void expect(int fd, const char *want)
{
	size_t n = strlen(want), got = 0;
	char *b = malloc(n + 1);

	while (got < n) {
		ssize_t r = recv(fd, b + got, n - got, 0);
		CHECK_MSG(r > 0, "recv: %zd (%s) after %zu of %zu bytes: %.*s", r, strerror(errno),
			  got, n, (int)got, b);
		got += (size_t)r;
	}
	b[n] = '\0';
	CHECK_EQ_STR(b, want);
	free(b);
}

/* The server closed the connection: recv sees the end. */
static void expect_eof(int fd)
{
	char c;
	CHECK_EQ_INT(recv(fd, &c, 1, 0), 0);
}

/* The server with the default options (tweaked by tweak when not NULL)
 * and one client connected to it. */
static int serve(struct fixture *f, void (*tweak)(struct redis_server_options *o))
{
	struct redis_server_options o;

	redis_server_options_default(&o);
	if (tweak != NULL)
		tweak(&o);
	start(f, &o);
	return client(f->port);
}

/* ---- cases ---- */

TEST(pipeline_keeps_order_across_async_commands)
{
	struct fixture f;
	int fd = serve(&f, NULL);
	/* the slow ones finish in the opposite order of their start */
	SEND(fd, "SLOW a 50\r\n*2\r\n$4\r\nECHO\r\n$1\r\nb\r\nSLOW c 1\r\nPING\r\nslow d 0\r\n"
		 "SLOW e now\r\nSLOW f now\r\nSLOW g 1\r\n");
	expect(fd, "$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n+PONG\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n"
		   "$1\r\ng\r\n");
	SEND(fd, "SELECT 5\r\nSELECT 16\r\nSELECT -1\r\nSELECT 1x\r\n");
	expect(fd, "+OK\r\n-ERR DB index is out of range\r\n-ERR DB index is out of range\r\n"
		   "-ERR value is not an integer or out of range\r\n");
	close(fd);
	stop(&f);
}

/* While a command is in flight the server reads on, into its buffer's
 * room only: the command's argv stays where it was (SLOW replies from
 * it), the requests behind it (far more than that room) wait, then run in
 * order. */
TEST(reads_on_while_a_command_is_in_flight)
{
	struct fixture f;
	struct buf req = BUF_INIT, want = BUF_INIT;
	const int n = 20000; /* 20,000 ECHOs: 240 KB behind the SLOW */
	int fd = serve(&f, NULL);

	/* alone (room behind it), as an array: its argv points into the
	 * input buffer (an inline command's words are the parser's copy) */
	atomic_store(&slow_started, 0);
	SEND(fd, "*3\r\n$4\r\nSLOW\r\n$19\r\nfirst-argument-kept\r\n$3\r\n300\r\n");
	/* the rest only once it runs (within 5 s): then it has been read alone */
	for (int i = 0; i < 500 && atomic_load(&slow_started) == 0; i++)
		sleep_ms(10);
	CHECK_EQ_INT(atomic_load(&slow_started), 1);
	buf_printf(&want, "$19\r\nfirst-argument-kept\r\n");
	for (int i = 0; i < n; i++) {
		buf_printf(&req, "ECHO %05d\r\n", i);
		buf_printf(&want, "$5\r\n%05d\r\n", i);
	}
	send_all(fd, req.data, req.len);
	expect(fd, (const char *)buf_cstr(&want));
	buf_free(&req);
	buf_free(&want);
	close(fd);
	stop(&f);
}

TEST(command_errors)
{
	struct fixture f;
	int fd = serve(&f, NULL);
	SEND(fd, "foo a b\r\nget\r\necho\r\nping a b\r\nclient\r\nclient foo\r\nconfig get\r\n"
		 "client setname\r\ncommand bar\r\n");
	expect(fd, "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"
		   "-ERR unknown command 'get', with args beginning with: \r\n"
		   "-ERR wrong number of arguments for 'echo' command\r\n"
		   "-ERR wrong number of arguments for 'ping' command\r\n"
		   "-ERR wrong number of arguments for 'client' command\r\n"
		   "-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n"
		   "-ERR wrong number of arguments for 'config|get' command\r\n"
		   "-ERR wrong number of arguments for 'client|setname' command\r\n"
		   "-ERR unknown subcommand 'bar'. Try COMMAND HELP.\r\n");
	/* the argument list stops past 128 bytes; newlines become spaces */
	{
		static const char arg[] =
			"0123456789012345678901234567890123456789012345678901234567890123456789"
			"0123456789012345678901234567890123456789012345678901234567890123456789";
		char line[512], want[512];
		snprintf(line, sizeof line, "nope \"a\\nb\" %s never\r\n", arg);
		send_all(fd, line, strlen(line));
		/* 'a b' takes 6 bytes: the second argument gets 128 - 6 = 122 */
		snprintf(
			want, sizeof want,
			"-ERR unknown command 'nope', with args beginning with: 'a b' '%.122s' \r\n",
			arg);
		expect(fd, want);
	}
	SEND(fd, "CLIENT SETNAME \"a b\"\r\nCLIENT GETNAME\r\nCLIENT SETNAME me\r\n"
		 "client getname\r\nCONFIG GET *\r\nCOMMAND COUNT\r\nECHO \"\"\r\n");
	expect(fd, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
		   "$-1\r\n+OK\r\n$2\r\nme\r\n*0\r\n:15\r\n$0\r\n\r\n");
	SEND(fd, "QUIT\r\nPING\r\n");
	expect(fd, "+OK\r\n");
	expect_eof(fd);
	close(fd);
	stop(&f);
}

/* The exec hook: an array of, per queued command, its reply when it is a
 * connection command, else "name:argc". */
static int exec_hook(struct redis_conn *c, size_t n, const struct redis_queued *q)
{
	struct buf *out = redis_conn_out(c);

	resp_array(out, n);
	for (size_t i = 0; i < n; i++) {
		if (q[i].cmd->flags & REDIS_CMD_LOCAL) {
			redis_conn_run_local(c, &q[i], out);
		} else {
			char t[64];
			snprintf(t, sizeof t, "%s:%u", q[i].cmd->name, q[i].argc);
			resp_bulk_str(out, t);
		}
	}
	return REDIS_DONE;
}

static void with_exec(struct redis_server_options *o)
{
	o->exec = exec_hook;
}

/* Redis 7's MULTI: queueing, its errors, EXECABORT, nested MULTI and WATCH
 * not dirtying the queue, EXEC and DISCARD without MULTI. */
TEST(multi_exec)
{
	struct fixture f;
	int fd = serve(&f, with_exec);
	SEND(fd, "EXEC\r\nDISCARD\r\nWATCH a\r\nUNWATCH\r\nMULTI\r\nMULTI\r\nWATCH x\r\n"
		 "SLOW a 1\r\nPING\r\nECHO hi\r\nEXEC\r\n");
	expect(fd,
	       "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n"
	       "-ERR docraft: WATCH is not supported\r\n-ERR docraft: WATCH is not supported\r\n"
	       "+OK\r\n-ERR MULTI calls can not be nested\r\n"
	       "-ERR WATCH inside MULTI is not allowed\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
	       "*3\r\n$6\r\nslow:3\r\n+PONG\r\n$2\r\nhi\r\n");
	/* an arity error or unknown command while queueing: EXECABORT */
	SEND(fd, "MULTI\r\nSLOW a\r\nPING\r\nEXEC\r\nMULTI\r\nnope\r\nEXEC\r\n"
		 "MULTI\r\nclient foo\r\nEXEC\r\n");
	expect(fd, "+OK\r\n-ERR wrong number of arguments for 'slow' command\r\n+QUEUED\r\n"
		   "-EXECABORT Transaction discarded because of previous errors.\r\n"
		   "+OK\r\n-ERR unknown command 'nope', with args beginning with: \r\n"
		   "-EXECABORT Transaction discarded because of previous errors.\r\n"
		   "+OK\r\n-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n"
		   "-EXECABORT Transaction discarded because of previous errors.\r\n");
	/* DISCARD drops the queue; an empty EXEC is an empty array; SELECT queued */
	SEND(fd, "MULTI\r\nSLOW a 1\r\nDISCARD\r\nEXEC\r\nMULTI\r\nEXEC\r\n"
		 "MULTI\r\nSELECT 3\r\nCLIENT ID\r\nEXEC\r\nQUIT\r\n");
	expect(fd, "+OK\r\n+QUEUED\r\n+OK\r\n-ERR EXEC without MULTI\r\n+OK\r\n*0\r\n"
		   "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:1\r\n+OK\r\n");
	expect_eof(fd);
	close(fd);
	stop(&f);
}

static void two_per_ip(struct redis_server_options *o)
{
	o->max_per_ip = 2;
}

static bool one_connection(void *arg)
{
	return redis_server_connections(arg) == 1; /* a word read across threads, polled */
}

/* Past max_per_ip connections from one address: the error, then closed. */
TEST(per_ip_limit)
{
	struct fixture f;
	int a = serve(&f, two_per_ip), b = client(f.port), c;
	SEND(a, "PING\r\n");
	expect(a, "+PONG\r\n");
	SEND(b, "PING\r\n");
	expect(b, "+PONG\r\n");
	c = client(f.port);
	expect(c, "-ERR max number of clients per IP reached\r\n");
	expect_eof(c);
	close(c);
	close(b);
	/* one closed: room again (the server sees the close asynchronously) */
	CHECK(wait_for(one_connection, f.srv, 10000));
	c = client(f.port);
	SEND(c, "PING\r\n");
	expect(c, "+PONG\r\n");
	close(c);
	close(a);
	stop(&f);
}

TEST(protocol_error_replies_then_closes)
{
	struct fixture f;
	int fd = serve(&f, NULL);
	SEND(fd, "PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n");
	expect(fd, "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n");
	expect_eof(fd);
	close(fd);
	fd = client(f.port);
	SEND(fd, "*1\r\n$5000000\r\n");
	expect(fd, "-ERR Protocol error: invalid bulk length\r\n");
	expect_eof(fd);
	close(fd);
	fd = client(f.port);
	SEND(fd, "SLOW a 20\r\necho \"x\r\n");
	expect(fd, "$1\r\na\r\n-ERR Protocol error: unbalanced quotes in request\r\n");
	expect_eof(fd);
	close(fd);
	stop(&f);
}

static void queue_1mib(struct redis_server_options *o)
{
	o->max_queued_bytes = 1u << 20;
}

/* Replies nobody reads stop the reading of requests. */
TEST(back_pressure)
{
	struct fixture f;
	struct buf req = BUF_INIT;
	const int n = 400; /* 100 MiB of replies */
	int fd, seen;

	atomic_store(&big_runs, 0);
	fd = serve(&f, queue_1mib);
	for (int i = 0; i < n; i++)
		buf_append(&req, "BIG\r\n", 5);
	send_all(fd, req.data, req.len); /* 2 KB: the socket takes it all */
	/* The server runs some, then waits for the client to read. */
	while (atomic_load(&big_runs) < 4)
		sleep_ms(10);
	do {
		seen = atomic_load(&big_runs);
		sleep_ms(200);
	} while (atomic_load(&big_runs) != seen);
	test_note("%d of %d run before the client read", seen, n);
	CHECK(seen < n / 4);
	/* Reading everything lets every one run. */
	{
		size_t want = (size_t)n * (256 * 1024 + 11), got = 0; /* $262144 */
		char *b = malloc(1 << 16);
		while (got < want) {
			ssize_t r = recv(fd, b, 1 << 16, 0);
			CHECK(r > 0);
			got += (size_t)r;
		}
		free(b);
		CHECK_EQ_U64(got, want);
	}
	CHECK_EQ_INT(atomic_load(&big_runs), n);
	buf_free(&req);
	close(fd);
	stop(&f);
}

static void two_clients_idle_300ms(struct redis_server_options *o)
{
	o->max_clients = 2;
	o->idle_timeout_ms = 300;
}

TEST(client_limit_and_idle_timeout)
{
	struct fixture f;
	int a, b, c;

	a = serve(&f, two_clients_idle_300ms);
	b = client(f.port);
	SEND(a, "PING\r\n");
	expect(a, "+PONG\r\n");
	SEND(b, "PING\r\n");
	expect(b, "+PONG\r\n");
	c = client(f.port);
	expect(c, "-ERR max number of clients reached\r\n");
	expect_eof(c);
	close(c);
	/* idle: both closed by the server within a few sweeps */
	expect_eof(a);
	expect_eof(b);
	close(a);
	close(b);
	stop(&f);
}

static void query_1000(struct redis_server_options *o)
{
	o->max_query_bytes = 1000;
}

TEST(request_size_limit)
{
	struct fixture f;
	char big[2048];
	int fd;

	fd = serve(&f, query_1000);
	SEND(fd, "*2\r\n$4\r\nECHO\r\n$1500\r\n");
	memset(big, 'v', sizeof big);
	send_all(fd, big, 1200);
	expect_eof(fd);
	close(fd);
	/* below it: fine */
	fd = client(f.port);
	SEND(fd, "*2\r\n$4\r\nECHO\r\n$900\r\n");
	send_all(fd, big, 900);
	SEND(fd, "\r\n");
	{
		char want[1000];
		snprintf(want, sizeof want, "$900\r\n%.*s\r\n", 900, big);
		expect(fd, want);
	}
	close(fd);
	stop(&f);
}

/* The server closes while a command is in progress: the connection
 * goes, the command still completes, and only then is the server gone. */
TEST(close_with_command_in_progress)
{
	struct fixture f;
	int fd = serve(&f, NULL);
	SEND(fd, "SLOW a 300\r\n");
	while (atomic_load(&slow_pending) == 0)
		sleep_ms(5);
	stop(&f); /* returns once the loop ends: after the SLOW completed */
	CHECK_EQ_INT(atomic_load(&slow_pending), 0);
	expect_eof(fd);
	close(fd);
}

TEST_MAIN(T(pipeline_keeps_order_across_async_commands), T(reads_on_while_a_command_is_in_flight),
	  T(command_errors), T(multi_exec), T(per_ip_limit), T(protocol_error_replies_then_closes),
	  T(back_pressure), T(client_limit_and_idle_timeout), T(request_size_limit),
	  T(close_with_command_in_progress))
