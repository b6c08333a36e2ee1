/* The http layer in process: the Prometheus writer (checked by Debian's
 * promtool when installed) and the HTTP server on a real libuv loop, talked
 * to over loopback sockets from a client thread while the test's thread
 * runs the loop. The hostile cases use small limits (a 1 s idle timeout,
 * 4 connections per address) so that they stay quick; the same limits at
 * their defaults are exercised against real servers in
 * tests/hostile/test_http_attack.c.
 *
 * Cases: the writer's format; GET, HEAD, POST (405), unknown paths (the
 * handler's 404); a malformed request line (400); oversized headers (431)
 * and URL (414); the per-address cap (other addresses still served); a
 * slow client closed by the idle timeout; 1000 connections at once, the
 * server answering afterwards. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "common/buf.h"
#include "common/err.h"
#include "http/http.h"
#include "http/metrics.h"
#include "httpget.h"
#include "loop.h"
#include "test.h"

/* ---- the writer ------------------------------------------------------------------------------ */

static void write_sample(struct buf *b)
{
	struct metrics m;
	struct metrics_labels l;
	struct lathist h = {0};

	metrics_init(&m, b);
	metrics_one(&m, "docraft_test_plain", "gauge", "A plain gauge.", 42);
	metrics_family(&m, "docraft_test_requests_total", "counter", "Counted, with labels.");
	metrics_labels_reset(&l);
	metrics_label(&l, "method", "TSERVER_WRITE");
	metrics_label(&l, "table", "we\"ird\\name\nx");
	metrics_u64(&m, "docraft_test_requests_total", &l, 7);
	lathist_record(&h, 10);      /* first bucket (50 us) */
	lathist_record(&h, 3000);    /* 5 ms */
	lathist_record(&h, 1000000); /* 1 s */
	lathist_record(&h, 99000000); /* above 10 s: +Inf only */
	metrics_family(&m, "docraft_test_latency_seconds", "histogram", "A histogram.");
	metrics_labels_reset(&l);
	metrics_label(&l, "tablet", "t-1");
	metrics_hist(&m, "docraft_test_latency_seconds", &l, &h);
}

TEST(writer_format)
{
	struct buf b;
	buf_init(&b);
	write_sample(&b);
	const char *s = buf_cstr(&b);
	CHECK(strstr(s, "# HELP docraft_test_plain A plain gauge.\n# TYPE docraft_test_plain "
			"gauge\ndocraft_test_plain 42\n") != NULL);
	CHECK(strstr(s, "docraft_test_requests_total{method=\"TSERVER_WRITE\",table=\"we\\\"ird\\\\"
			"name\\nx\"} 7\n") != NULL);
	/* Cumulative buckets, +Inf = count, the sum in seconds. */
	CHECK(strstr(s, "docraft_test_latency_seconds_bucket{tablet=\"t-1\",le=\"5e-05\"} 1\n") !=
	      NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_bucket{tablet=\"t-1\",le=\"0.005\"} 2\n") !=
	      NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_bucket{tablet=\"t-1\",le=\"1\"} 3\n") != NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_bucket{tablet=\"t-1\",le=\"10\"} 3\n") != NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_bucket{tablet=\"t-1\",le=\"+Inf\"} 4\n") !=
	      NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_sum{tablet=\"t-1\"} 100.00301\n") != NULL);
	CHECK(strstr(s, "docraft_test_latency_seconds_count{tablet=\"t-1\"} 4\n") != NULL);
	buf_free(&b);
}

TEST(writer_passes_promtool)
{
	struct buf b;
	char cmd[64];
	FILE *p;
	int rv;

	if (access("/usr/bin/promtool", X_OK) != 0) {
		test_note("SKIP: /usr/bin/promtool absent (Debian package prometheus)");
		return;
	}
	buf_init(&b);
	write_sample(&b);
	snprintf(cmd, sizeof cmd, "/usr/bin/promtool check metrics >/dev/null 2>&1");
	p = popen(cmd, "w");
	CHECK(p != NULL);
	fwrite(b.data, 1, b.len, p);
	rv = pclose(p);
	CHECK_MSG(rv == 0, "promtool check metrics failed (status %d) on:\n%s", rv, buf_cstr(&b));
	buf_free(&b);
}

/* ---- the server ------------------------------------------------------------------------------ */

struct fixture {
	uv_loop_t loop;
	struct http_server *h;
	int port;
	unsigned handled;
};

static struct fixture F;

static void handler(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct fixture *f = arg;
	f->handled++;
	if (strcmp(req->path, "/hello") == 0) {
		const char *who = http_arg(req, "who");
		buf_printf(&resp->body, "hello %s\n", who != NULL ? who : "world");
		return;
	}
	http_error(resp, 404, "Not Found");
}

static void open_server(const struct http_options *o)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *a;

	memset(&F, 0, sizeof F);
	CHECK_OK(uv_loop_init(&F.loop));
	CHECK_MSG(http_open(&F.loop, "127.0.0.1:0", o, handler, &F, &F.h, errmsg) == 0, "%s",
		  errmsg);
	a = strrchr(http_address(F.h), ':');
	F.port = atoi(a + 1);
	CHECK(F.port > 0);
}

static void closed(void *arg)
{
	*(bool *)arg = true;
}

static void close_server(void)
{
	bool done = false;
	http_close(F.h, closed, &done);
	CHECK(loop_run_until(&F.loop, loop_flag_is_set, &done, 5000));
	CHECK_OK(loop_finish(&F.loop));
}

/* A client job in a thread while the loop runs here. */
struct job {
	void (*fn)(struct job *j);
	atomic_bool done;
	char out[65536];
	int n;
	int extra;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	j->fn(j);
	atomic_store(&j->done, true);
	return NULL;
}

static bool job_done(void *arg)
{
	return atomic_load(&((struct job *)arg)->done);
}

static void tick(uv_timer_t *t)
{
	(void)t; /* wakes the loop so that loop_run_until sees the job finish */
}

static void run_job(struct job *j, void (*fn)(struct job *j))
{
	pthread_t th;
	uv_timer_t t;

	j->fn = fn;
	atomic_store(&j->done, false);
	uv_timer_init(&F.loop, &t);
	uv_timer_start(&t, tick, 10, 10);
	CHECK_OK(pthread_create(&th, NULL, job_main, j));
	CHECK_MSG(loop_run_until(&F.loop, job_done, j, 60000), "client job did not finish");
	pthread_join(th, NULL);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&F.loop, UV_RUN_NOWAIT);
}

/* A socket from src (e.g. "127.0.0.2") to the server; -1 on failure. */
static int connect_from(const char *src)
{
	char dst[32];
	snprintf(dst, sizeof dst, "127.0.0.1:%d", F.port);
	return tcp_connect_from(src, dst);
}

/* Reads until the peer closes, cap is reached or timeout_ms passes with
 * nothing; returns the bytes read (-1: reset). */
static int read_all(int fd, char *out, size_t cap, int timeout_ms)
{
	size_t n = 0;
	while (n + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		r = recv(fd, out + n, cap - 1 - n, 0);
		if (r < 0)
			return n > 0 ? (int)n : -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	return (int)n;
}

/* Sends raw from src and reads the answer into j->out. */
static void exchange(struct job *j, const char *src, const char *raw, size_t len)
{
	int fd = connect_from(src);
	j->n = -2;
	if (fd < 0)
		return;
	if (send(fd, raw, len, MSG_NOSIGNAL) >= 0)
		j->n = read_all(fd, j->out, sizeof j->out, 5000);
	close(fd);
}

static const char *req_text;

static void job_simple(struct job *j)
{
	exchange(j, "127.0.0.1", req_text, strlen(req_text));
}

static void simple(struct job *j, const char *text)
{
	req_text = text;
	run_job(j, job_simple);
}

TEST(serves_get_head_and_refuses_post)
{
	static struct job j;

	open_server(NULL);
	simple(&j, "GET /hello?who=docraft HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 200", 12) == 0, "%s", j.out);
	CHECK(strstr(j.out, "\r\n\r\nhello docraft\n") != NULL);
	CHECK(strstr(j.out, "no-store") != NULL);
	simple(&j, "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 200", 12) == 0, "%s", j.out);
	CHECK(strstr(j.out, "hello world") == NULL);
	simple(&j, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: "
		   "close\r\n\r\nabc");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 405", 12) == 0, "%s", j.out);
	CHECK(strstr(j.out, "Allow: GET, HEAD") != NULL);
	simple(&j, "GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 404", 12) == 0, "%s", j.out);
	close_server();
}

TEST(malformed_and_oversized_requests_get_4xx)
{
	static struct job j;
	static char big[100000];
	unsigned before;

	open_server(NULL);
	/* No method and URL: MHD closes without a word. */
	simple(&j, "GARBAGE\r\n\r\n");
	CHECK_MSG(j.n == 0 || strncmp(j.out, "HTTP/1.1 400", 12) == 0, "%s", j.out);
	simple(&j, "GET / FOO/9\r\n\r\n");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 400", 12) == 0, "%s", j.out);
	simple(&j, "GET /hello HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 400", 12) == 0, "%s", j.out);
	snprintf(big, sizeof big, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: %0*d\r\n\r\n", 60000,
		 0);
	simple(&j, big);
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 431", 12) == 0, "%.200s", j.out);
	memset(big, 'a', sizeof big);
	memcpy(big, "GET /", 5);
	snprintf(big + 60000, sizeof big - 60000, " HTTP/1.1\r\nHost: x\r\n\r\n");
	simple(&j, big);
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 414", 12) == 0, "%.200s", j.out);
	before = F.handled;
	simple(&j, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK(strncmp(j.out, "HTTP/1.1 200", 12) == 0);
	CHECK_EQ_INT(F.handled, before + 1); /* the bad ones never reached the handler */
	close_server();
}

/* Four idle connections from 127.0.0.1 fill its cap: a fifth is closed
 * without an answer, while 127.0.0.2 is served. */
static void job_per_ip(struct job *j)
{
	int fds[4], fd;
	char line[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

	for (int i = 0; i < 4; i++)
		fds[i] = connect_from("127.0.0.1");
	usleep(200000); /* let the server accept them */
	fd = connect_from("127.0.0.1");
	j->extra = -2;
	if (fd >= 0) {
		send(fd, line, strlen(line), MSG_NOSIGNAL);
		j->extra = read_all(fd, j->out, sizeof j->out, 5000);
		close(fd);
	}
	exchange(j, "127.0.0.2", line, strlen(line));
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

TEST(per_address_cap_keeps_others_served)
{
	static struct job j;
	struct http_options o;

	http_options_default(&o);
	o.max_per_ip = 4;
	open_server(&o);
	run_job(&j, job_per_ip);
	CHECK_MSG(j.extra <= 0, "the fifth connection of one address got an answer");
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 200", 12) == 0, "%s", j.out);
	close_server();
}

/* Slowloris: a request sent a few bytes at a time, then nothing: closed by
 * the idle timeout (1 s here) without an answer; the wait is bounded. */
static void job_slow(struct job *j)
{
	int fd = connect_from("127.0.0.1");
	j->n = -2;
	if (fd < 0)
		return;
	send(fd, "GET /hel", 8, MSG_NOSIGNAL);
	usleep(300000);
	send(fd, "lo HTTP/1.1\r\nX-A: ", 18, MSG_NOSIGNAL);
	j->n = read_all(fd, j->out, sizeof j->out, 15000);
	close(fd);
}

TEST(slow_client_is_closed_by_the_idle_timeout)
{
	static struct job j;
	struct http_options o;

	http_options_default(&o);
	o.timeout_s = 1;
	open_server(&o);
	run_job(&j, job_slow);
	CHECK_MSG(j.n == 0 || j.n == -1, "read %d bytes: %s", j.n, j.out);
	close_server();
}

/* 1000 connections at once from one address (each sending half a
 * request), against the default caps (256 in all, 32 per address): those
 * past the cap are closed at once, and the server answers a normal request
 * from another address while the others are open. */
static void job_thousand(struct job *j)
{
	static int fds[1000];
	int opened = 0;
	char line[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

	for (int i = 0; i < 1000; i++) {
		fds[i] = connect_from("127.0.0.1");
		if (fds[i] >= 0) {
			opened++;
			send(fds[i], "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
	}
	j->extra = opened;
	exchange(j, "127.0.0.3", line, strlen(line));
	for (int i = 0; i < 1000; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

TEST(a_thousand_connections)
{
	static struct job j;
	struct http_options o;
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 2400 && rl.rlim_max >= 2400) {
		rl.rlim_cur = 2400;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 2400) {
		test_note("SKIP: RLIMIT_NOFILE below 2400 (ulimit -n)");
		return;
	}
	http_options_default(&o);
	open_server(&o);
	run_job(&j, job_thousand);
	test_note("%d of 1000 connections opened", j.extra);
	CHECK_MSG(strncmp(j.out, "HTTP/1.1 200", 12) == 0, "%s", j.out);
	close_server();
}

TEST(bad_addresses_are_refused)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct http_server *h;
	uv_loop_t loop;

	CHECK_OK(uv_loop_init(&loop));
	CHECK_EQ_INT(http_open(&loop, "nonsense", NULL, handler, NULL, &h, errmsg),
		     DOCRAFT_EINVAL);
	CHECK(h == NULL);
	CHECK_EQ_INT(http_open(&loop, "127.0.0.1:99999", NULL, handler, NULL, &h, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(http_open(&loop, "::1:80", NULL, handler, NULL, &h, errmsg), DOCRAFT_EINVAL);
	CHECK_EQ_INT(http_open(&loop, "192.0.2.1:8080", NULL, handler, NULL, &h, errmsg),
		     DOCRAFT_EIO); /* not an address of this host */
	CHECK(strstr(errmsg, "192.0.2.1:8080") != NULL);
	CHECK_OK(uv_loop_close(&loop));
}

TEST_MAIN(T(writer_format), T(writer_passes_promtool), T(serves_get_head_and_refuses_post),
	  T(malformed_and_oversized_requests_get_4xx), T(per_address_cap_keeps_others_served),
	  T(slow_client_is_closed_by_the_idle_timeout), T(a_thousand_connections),
	  T(bad_addresses_are_refused))
