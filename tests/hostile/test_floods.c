/* Floods against real servers (issue 12, bounded resources per peer): one
 * docraft-master and three docraft-tserver processes on 127.0.0.1-3 (the
 * cluster of tests/lib/cluster.h), a table of 3 tablets with 3 replicas,
 * and a routing client in a thread that writes a row and reads it back, in
 * a loop, for the whole case. From plain sockets bound to other loopback
 * addresses (127.0.0.50..), the case then sends, to tserver 1 and to the
 * master:
 *
 *   connection flood   1100 RPC connections from one address: those past
 *                      the per-address cap (1000) are closed at once;
 *                      1100 silent connections from another: the listener's
 *                      accept-stage cap closes those past 1000
 *   slow readers       connections that send 16 KiB pings as fast as the
 *                      socket takes them and never read an answer
 *   bad frames         a frame announcing 2 GiB (answered TOO_BIG, closed),
 *                      a truncated frame, garbage after the preamble
 *   decode bomb        a WriteRequest of 200000 empty ops (400 KB that
 *                      protobuf-c would decode into 26 MB): TOO_BIG
 *   DUMP/CHECKSUM      40 connections asking both of one tablet at once:
 *                      each answered OK or SERVICE_BUSY
 *
 * and checks that every process is still running, that the client's every
 * write and read succeeded (its own retries included) while the floods ran,
 * and that the cluster still answers a CLI command. Every socket is closed
 * and every process stopped at the end; waits are bounded (poll timeouts).
 *
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net/rpc_frame.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

#define FLOOD 1100

/* ---- the routing client's workload, in a thread ---- */

struct workload {
	pthread_t th;
	docraft_client *c;
	atomic_bool stop;
	atomic_int ok, failed;
	char err[512];
	char out[4096];
	size_t out_len;
};

static void capture(void *arg, const char *text, size_t len)
{
	struct workload *w = arg;
	if (w->out_len + len + 1 < sizeof w->out) {
		memcpy(w->out + w->out_len, text, len);
		w->out_len += len;
		w->out[w->out_len] = '\0';
	}
}

static void *workload_main(void *arg)
{
	struct workload *w = arg;
	docraft_printer p = {capture, capture, w};
	char cql[256], want[64];

	for (int i = 0; !atomic_load(&w->stop); i++) {
		snprintf(cql, sizeof cql, "INSERT INTO kv (k, v) VALUES ('k%d', 'v%d');", i, i);
		w->out_len = 0;
		w->out[0] = '\0';
		int rv = docraft_exec_cql(w->c, cql, &p);
		if (rv == 0) {
			snprintf(cql, sizeof cql, "SELECT v FROM kv WHERE k = 'k%d';", i);
			snprintf(want, sizeof want, "v%d", i);
			rv = docraft_exec_cql(w->c, cql, &p);
			if (rv == 0 && strstr(w->out, want) == NULL)
				rv = -1;
		}
		if (rv == 0) {
			atomic_fetch_add(&w->ok, 1);
		} else {
			snprintf(w->err, sizeof w->err, "row %d: %d: %.400s", i, rv, w->out);
			atomic_fetch_add(&w->failed, 1);
		}
	}
	return NULL;
}

/* ---- plain sockets ---- */

/* A blocking TCP connection from source address src to dst ("ip:port");
 * -1 if the connect fails. */
static int tcp_from(const char *src, const char *dst)
{
	struct sockaddr_in a, s;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK_OK(listener_parse_address(dst, &a, NULL));
	memset(&s, 0, sizeof s);
	s.sin_family = AF_INET;
	CHECK(inet_pton(AF_INET, src, &s.sin_addr) == 1);
	CHECK_MSG(bind(fd, (struct sockaddr *)&s, sizeof s) == 0, "bind %s: %s", src,
		  strerror(errno));
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the server closed it: fine for a flood */
		b += w;
		n -= (size_t)w;
	}
}

static int rpc_conn(const char *src, const char *dst)
{
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	size_t n = listener_preamble_encode(pre, LISTENER_RPC, "", 0, NULL);
	int fd = tcp_from(src, dst);
	if (fd >= 0)
		send_all(fd, pre, n);
	return fd;
}

static void send_frame(int fd, uint64_t id, uint16_t method, const void *p, size_t len)
{
	struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = id, .method = method,
			      .payload = (uint8_t *)p, .len = len};
	struct buf b = BUF_INIT;
	rpc_frame_encode(&b, &f);
	send_all(fd, b.data, b.len);
	buf_free(&b);
}

static void send_message(int fd, uint64_t id, uint16_t method, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *p = malloc(n + 1);
	protobuf_c_message_pack(m, p);
	send_frame(fd, id, method, p, n);
	free(p);
}

/* Reads one response frame (within timeout_ms) into *f; its status, or
 * -1 on EOF, error or timeout. f->payload is the caller's to free. */
static int read_frame(int fd, struct rpc_frame *f, int timeout_ms)
{
	struct rpc_frame_decoder d;
	uint8_t buf[65536];
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	int rv = -1;

	rpc_frame_decoder_init(&d, RPC_FRAME_DEFAULT_MAX);
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		uint64_t now = proc_now_ms();
		if (now >= end || poll(&pf, 1, (int)(end - now)) <= 0)
			break;
		/* One byte at a time past the header would be slow; frames here
		 * are small, and nothing after the first frame matters. */
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			break;
		const uint8_t *p = buf;
		size_t len = (size_t)n;
		int r = rpc_frame_decoder_next(&d, &p, &len, f);
		if (r == RPC_FRAME_READY) {
			rv = f->status;
			break;
		}
		if (r != RPC_FRAME_MORE)
			break;
	}
	rpc_frame_decoder_free(&d);
	return rv;
}

/* Whether the server closed fd (EOF or reset) within timeout_ms; data
 * before the EOF is skipped. */
static bool closed_by_peer(int fd, int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	uint8_t buf[4096];

	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		uint64_t now = proc_now_ms();
		if (now >= end || poll(&pf, 1, (int)(end - now)) <= 0)
			return false;
		ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

/* How many of fds[0..n) the server closes within timeout_ms (one poll over
 * all of them at a time; stops early once want are closed). */
static int count_closed(const int *fds, int n, int want, int timeout_ms)
{
	static struct pollfd pf[FLOOD];
	static int at[FLOOD];
	static bool gone[FLOOD];
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	uint8_t buf[4096];
	int closed = 0;

	memset(gone, 0, sizeof gone);
	while (closed < want) {
		uint64_t now = proc_now_ms();
		int m = 0;
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0 && !gone[i]) {
				pf[m] = (struct pollfd){fds[i], POLLIN, 0};
				at[m++] = i;
			}
		if (m == 0 || now >= end || poll(pf, (nfds_t)m, (int)(end - now)) <= 0)
			break;
		for (int j = 0; j < m; j++) {
			if (pf[j].revents == 0)
				continue;
			ssize_t r = recv(pf[j].fd, buf, sizeof buf, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				gone[at[j]] = true;
				closed++;
			}
		}
	}
	return closed;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void all_up(void)
{
	int st;
	CHECK_MSG(!proc_wait(&C.m.p, 1, &st), "the master exited (status %d)", st);
	for (int k = 0; k < NT; k++)
		CHECK_MSG(!proc_wait(&C.t[k].p, 1, &st), "tserver %d exited (status %d)", k + 1,
			  st);
}

/* FLOOD connections from src to dst, with the RPC preamble or silent: at
 * least those past the per-address cap (1000) are closed by the server. */
static void flood(int *fds, const char *src, const char *dst, bool preamble)
{
	int closed;
	for (int i = 0; i < FLOOD; i++)
		fds[i] = preamble ? rpc_conn(src, dst) : tcp_from(src, dst);
	closed = count_closed(fds, FLOOD, FLOOD - 1000, 10000);
	test_note("%s connection flood: %d of %d closed by the server",
		  preamble ? "RPC" : "silent", closed, FLOOD);
	CHECK_MSG(closed >= FLOOD - 1000, "only %d connections closed", closed);
	close_all(fds, FLOOD);
}

/* ---- the case ---- */

struct progress {
	struct workload *w;
	int ok_want;
};

/* For wait_for: the workload reached p->ok_want rows, or failed. */
static bool progressed_or_failed(void *arg)
{
	struct progress *p = arg;
	return atomic_load(&p->w->ok) >= p->ok_want || atomic_load(&p->w->failed) != 0;
}

TEST(floods_while_serving)
{
	static int fds[FLOOD];
	struct workload w;
	struct tablet tab[3];
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_table_options to = {.num_tablets = 3, .replication_factor = 3};
	const char *ts = NULL;
	int ok_before;

	cluster_up("floods");
	ts = C.t[0].addr;
	docraft_client_options_init(&o);
	o.timeout_ms = 20000;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE kv (k text PRIMARY KEY, v text);", &to),
		     "create table");
	CHECK(tablets_with_leaders("kv", tab, 3, 3, 20000) == 3);

	memset(&w, 0, sizeof w);
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &w.c, err), err);
	CHECK(pthread_create(&w.th, NULL, workload_main, &w) == 0);

	/* Connection floods. */
	flood(fds, "127.0.0.50", ts, true);
	flood(fds, "127.0.0.51", ts, false);
	all_up();

	/* Slow readers: pings of 16 KiB, never a read, until the socket is
	 * full (non-blocking). */
	{
		static uint8_t big[16 << 10];
		Docraft__PingRequest pr = DOCRAFT__PING_REQUEST__INIT;
		pr.data.data = big;
		pr.data.len = sizeof big;
		for (int i = 0; i < 20; i++) {
			fds[i] = rpc_conn("127.0.0.52", i % 2 ? ts : C.maddr);
			CHECK(fds[i] >= 0);
			fcntl(fds[i], F_SETFL, O_NONBLOCK);
			for (int k = 0; k < 2000; k++) {
				size_t n = protobuf_c_message_get_packed_size(&pr.base);
				uint8_t *p = malloc(n);
				struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = (uint64_t)k,
						      .method = DOCRAFT__METHOD__METHOD_PING,
						      .payload = p, .len = n};
				struct buf b = BUF_INIT;
				protobuf_c_message_pack(&pr.base, p);
				rpc_frame_encode(&b, &f);
				ssize_t wr = send(fds[i], b.data, b.len, MSG_NOSIGNAL);
				bool full = wr < (ssize_t)b.len;
				buf_free(&b);
				free(p);
				if (full)
					break; /* full (or a partial frame: a truncated one) */
			}
		}
	}

	/* Bad frames. */
	{
		uint8_t h[RPC_FRAME_HEADER_SIZE];
		struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = 9,
				      .method = DOCRAFT__METHOD__TSERVER_WRITE,
				      .len = 0x7fffffffu - RPC_FRAME_HEADER_SIZE};
		struct rpc_frame r;
		int fd = rpc_conn("127.0.0.53", ts);
		rpc_frame_encode_header(h, &f);
		send_all(fd, h, sizeof h);
		CHECK_EQ_INT(read_frame(fd, &r, 5000), DOCRAFT_ETOOBIG);
		free(r.payload);
		CHECK(closed_by_peer(fd, 5000));
		close(fd);

		fd = rpc_conn("127.0.0.53", ts); /* truncated */
		f.len = 1000;
		rpc_frame_encode_header(h, &f);
		send_all(fd, h, sizeof h);
		send_all(fd, "partial", 7);
		close(fd);

		fd = rpc_conn("127.0.0.53", C.maddr); /* garbage */
		send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
		CHECK(closed_by_peer(fd, 5000));
		close(fd);
	}

	/* Decode bomb: 200000 empty WriteOps. */
	{
		struct buf b = BUF_INIT;
		struct rpc_frame r;
		int fd = rpc_conn("127.0.0.54", ts);
		for (int i = 0; i < 200000; i++) {
			buf_push(&b, 0x3a);
			buf_push(&b, 0x00);
		}
		send_frame(fd, 1, DOCRAFT__METHOD__TSERVER_WRITE, b.data, b.len);
		CHECK_EQ_INT(read_frame(fd, &r, 10000), DOCRAFT_ETOOBIG);
		free(r.payload);
		buf_free(&b);
		close(fd);
	}

	/* DUMP and CHECKSUM, 40 connections at once. */
	{
		Docraft__DumpTabletRequest dr = DOCRAFT__DUMP_TABLET_REQUEST__INIT;
		Docraft__ChecksumRequest cr = DOCRAFT__CHECKSUM_REQUEST__INIT;
		int busy = 0, answered = 0;
		dr.tablet_id = tab[0].id;
		cr.tablet_id = tab[0].id;
		for (int i = 0; i < 40; i++) {
			fds[100 + i] = rpc_conn("127.0.0.55", ts);
			CHECK(fds[100 + i] >= 0);
			send_message(fds[100 + i], 1, DOCRAFT__METHOD__TSERVER_DUMP_TABLET,
				     &dr.base);
		}
		for (int i = 0; i < 40; i++) {
			struct rpc_frame r;
			int st = read_frame(fds[100 + i], &r, 10000);
			CHECK_MSG(st == DOCRAFT_OK || st == DOCRAFT_EBUSY, "dump %d: status %d", i,
				  st);
			free(r.payload);
			busy += st == DOCRAFT_EBUSY;
			answered++;
			send_message(fds[100 + i], 2, DOCRAFT__METHOD__TSERVER_CHECKSUM, &cr.base);
		}
		for (int i = 0; i < 40; i++) {
			struct rpc_frame r;
			int st = read_frame(fds[100 + i], &r, 10000);
			CHECK_MSG(st == DOCRAFT_OK || st == DOCRAFT_EBUSY, "checksum %d: status %d",
				  i, st);
			free(r.payload);
			busy += st == DOCRAFT_EBUSY;
			answered++;
		}
		test_note("DUMP/CHECKSUM flood: %d answered, %d SERVICE_BUSY", answered, busy);
		for (int i = 0; i < 40; i++)
			close(fds[100 + i]);
	}

	/* The client kept working through all of it, and works on. */
	all_up();
	ok_before = atomic_load(&w.ok);
	struct progress p = {&w, ok_before + 5};
	(void)wait_for(progressed_or_failed, &p, 20000); /* the checks below tell */
	close_all(fds, 20); /* the slow readers */
	atomic_store(&w.stop, true);
	pthread_join(w.th, NULL);
	docraft_client_close(w.c);
	test_note("client: %d rows written and read back, %d failed", atomic_load(&w.ok),
		  atomic_load(&w.failed));
	CHECK_MSG(atomic_load(&w.failed) == 0, "client failed: %s", w.err);
	CHECK(atomic_load(&w.ok) >= ok_before + 5);
	all_up();
	CHECK_EQ_INT(CLI(10000, "tservers"), 0);
	cluster_down();
}

TEST_MAIN(T(floods_while_serving))
