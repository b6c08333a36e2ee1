/* Hostile HTTP against real servers (issue 16): one docraft-master and
 * three docraft-tservers (../lib/cluster.h) with --http-address on free
 * ports, a table of 3 tablets RF 3, and a routing client in a thread that
 * writes a row and reads it back in a loop for the whole case. From plain
 * sockets bound to other loopback addresses (127.0.0.50..), the case sends
 * to tserver 1's and the master's HTTP ports:
 *
 *   malformed          request lines without a method or version, a bad
 *                      version, binary junk, a header line without ':',
 *                      a POST: each answered 4xx or closed, never 2xx or
 *                      5xx (but 505 for an HTTP/9.9 request)
 *   oversized          60 KB of headers (431) and a 60 KB URL (414)
 *   slow clients       64 connections from one address sending a byte
 *                      every 100 ms (slowloris): past the per-address cap
 *                      (32) they are closed at once; a scrape from another
 *                      address is answered meanwhile
 *   1000 connections   from four addresses at once, half a request each;
 *                      /healthz from another address is answered meanwhile
 *
 * and checks that every process is still running, that the client's every
 * write and read succeeded while the attacks ran (its slowest operation is
 * noted, before and during: the RPC port is the same loop), and that
 * /metrics still answers. Every socket is closed and every process stopped
 * at the end; waits are bounded (poll timeouts).
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
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
#include <time.h>
#include <unistd.h>

#include "docraft/docraft.h"
#include "httpget.h"
#include "test.h"

#include "cluster.h"


/* ---- the routing client's workload, in a thread ---- */

struct workload {
	pthread_t th;
	docraft_client *c;
	atomic_bool stop;
	atomic_int ok, failed;
	atomic_uint_fast64_t slowest_us; /* reset by the case between phases */
	char err[512];
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void quiet(void *arg, const char *text, size_t len)
{
	(void)arg;
	(void)text;
	(void)len;
}

static void *workload_main(void *arg)
{
	struct workload *w = arg;
	docraft_printer p = {quiet, quiet, w};
	char cql[256];

	for (int i = 0; !atomic_load(&w->stop); i++) {
		uint64_t t0 = now_us(), d;
		int rv;
		snprintf(cql, sizeof cql, "INSERT INTO kv (k, v) VALUES ('k%d', 'v%d');", i, i);
		rv = docraft_exec_cql(w->c, cql, &p);
		if (rv == 0) {
			snprintf(cql, sizeof cql, "SELECT v FROM kv WHERE k = 'k%d';", i);
			rv = docraft_exec_cql(w->c, cql, &p);
		}
		d = now_us() - t0;
		if (d > atomic_load(&w->slowest_us))
			atomic_store(&w->slowest_us, d);
		if (rv == 0) {
			atomic_fetch_add(&w->ok, 1);
		} else {
			snprintf(w->err, sizeof w->err, "row %d: %s", i, docraft_strerror(rv));
			atomic_fetch_add(&w->failed, 1);
		}
	}
	return NULL;
}

/* ---- plain sockets ---- */

/* The status of the answer to raw sent from src to dst: 0 if closed
 * without one (or nothing within timeout_ms), -1 if it could not connect. */
static int answer_status(const char *src, const char *dst, const char *raw, size_t len,
			 int timeout_ms)
{
	char buf[256];
	size_t n = 0;
	int fd = tcp_connect_from(src, dst), status = 0;

	if (fd < 0)
		return -1;
	send(fd, raw, len, MSG_NOSIGNAL);
	while (n + 1 < sizeof buf) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	if (n >= 12 && sscanf(buf, "HTTP/1.%*c %d", &status) != 1)
		status = 0;
	return status;
}

static void malformed(const char *dst)
{
	static const char *const bad[] = {
		"GARBAGE\r\n\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
		"GET / FOO/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd",
		"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello\r\n\r\n",
		"GET /%zz%00 HTTP/1.1\r\nHost: x\r\n\r\n",
	};
	unsigned answered = 0, closed = 0;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int st = answer_status("127.0.0.50", dst, bad[i], strlen(bad[i]), 3000);
		/* HTTP/9.9: 505 Version Not Supported, the status for it. */
		CHECK_MSG(st == 0 || (st >= 400 && st < 500) || (i == 2 && st == 505),
			  "%s: request %zu answered %d", dst, i, st);
		if (st == 0)
			closed++;
		else
			answered++;
	}
	test_note("%s: malformed requests: %u answered 4xx, %u closed", dst, answered, closed);
}

static void oversized(const char *dst)
{
	static char big[70000];
	int st;

	snprintf(big, sizeof big, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %0*d\r\n\r\n", 60000,
		 0);
	st = answer_status("127.0.0.51", dst, big, strlen(big), 5000);
	CHECK_MSG(st == 431, "%s: 60 KB of headers answered %d", dst, st);
	memset(big, 'a', sizeof big);
	memcpy(big, "GET /", 5);
	snprintf(big + 60000, sizeof big - 60000, " HTTP/1.1\r\nHost: x\r\n\r\n");
	st = answer_status("127.0.0.51", dst, big, strlen(big), 5000);
	CHECK_MSG(st == 414, "%s: a 60 KB URL answered %d", dst, st);
}

/* 64 slowloris connections from 127.0.0.52, a byte each every 100 ms for
 * 3 s, and a scrape from 127.0.0.53 in the middle. */
static void slow_clients(const char *dst)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaa";
	int fds[64], open = 0, st;

	for (int i = 0; i < 64; i++)
		if ((fds[i] = tcp_connect_from("127.0.0.52", dst)) >= 0)
			open++;
	for (int t = 0; t < 30; t++) {
		for (int i = 0; i < 64; i++)
			if (fds[i] >= 0 &&
			    send(fds[i], req + (t % (sizeof req - 1)), 1, MSG_NOSIGNAL) < 0) {
				close(fds[i]);
				fds[i] = -1;
			}
		if (t == 15) {
			st = http_get(dst, "/metrics", NULL, 10000);
			CHECK_MSG(st == 200, "%s: a scrape during slowloris answered %d", dst, st);
		}
		usleep(100000);
	}
	open = 0;
	for (int i = 0; i < 64; i++)
		if (fds[i] >= 0) {
			open++;
			close(fds[i]);
		}
	test_note("%s: slowloris: %d of 64 connections still writable after 3 s", dst, open);
}

static void thousand(const char *dst)
{
	static int fds[1000];
	char src[32];
	int opened = 0, st;

	for (int i = 0; i < 1000; i++) {
		snprintf(src, sizeof src, "127.0.0.%d", 54 + i % 4);
		fds[i] = tcp_connect_from(src, dst);
		if (fds[i] >= 0) {
			opened++;
			send(fds[i], "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
	}
	st = http_get(dst, "/healthz", NULL, 10000);
	for (int i = 0; i < 1000; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	test_note("%s: 1000 connections: %d connected", dst, opened);
	CHECK_MSG(st == 200, "%s: /healthz during 1000 connections answered %d", dst, st);
}

TEST(hostile_http)
{
	static struct workload w;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct rlimit rl;
	uint64_t calm_us;
	const char *targets[2];

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cluster_use_http();
	cluster_up("httpattack");
	CHECK_MSG(CLI(30000, "--tablets", "3", "-e", "CREATE TABLE kv (k text PRIMARY KEY, v text);") ==
			  0,
		  "create: %s", C.out);
	{
		struct tablet t[3];
		tablets_with_leaders("kv", t, 3, 3, 20000);
	}
	memset(&w, 0, sizeof w);
	CHECK_MSG(docraft_client_open(C.maddr, NULL, &w.c, errmsg) == 0, "client: %s", errmsg);
	CHECK_OK(pthread_create(&w.th, NULL, workload_main, &w));
	sleep(2);
	calm_us = atomic_load(&w.slowest_us);
	atomic_store(&w.slowest_us, 0);

	targets[0] = C.t[0].http;
	targets[1] = C.mhttp;
	for (int i = 0; i < 2; i++) {
		malformed(targets[i]);
		oversized(targets[i]);
		slow_clients(targets[i]);
		thousand(targets[i]);
	}

	atomic_store(&w.stop, true);
	pthread_join(w.th, NULL);
	docraft_client_close(w.c);
	test_note("client: %d operations, %d failed; slowest write+read %.1f ms calm, %.1f ms "
		  "under attack",
		  atomic_load(&w.ok), atomic_load(&w.failed), (double)calm_us / 1e3,
		  (double)atomic_load(&w.slowest_us) / 1e3);
	CHECK_MSG(atomic_load(&w.failed) == 0, "client failures, last: %s", w.err);
	CHECK(atomic_load(&w.ok) > 0);
	CHECK_MSG(proc_wait(&C.m.p, 0, NULL) == false, "the master died");
	for (int k = 0; k < NT; k++)
		CHECK_MSG(proc_wait(&C.t[k].p, 0, NULL) == false, "tserver %d died", k + 1);
	for (int i = 0; i < 2; i++)
		CHECK_EQ_INT(http_get(targets[i], "/metrics", NULL, 10000), 200);
	cluster_down();
}

TEST_MAIN(T(hostile_http))
