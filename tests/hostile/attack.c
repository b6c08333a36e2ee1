/* docraft-attack: hostile traffic against a running cluster, for the
 * failover suite's "hostile" nemesis (tests/jepsen/nemesis.sh) and by hand.
 *
 *   docraft-attack --masters ADDR[,ADDR...] --duration SEC [--seed N]
 *                  [--set-table NAME] [--source-ip IP]
 *
 * For --duration seconds it repeats attacks picked at random, each from a
 * plain socket, none with credentials, against the tablets and tservers the
 * master names (what any client can learn):
 *
 *   raft-own-term   AppendEntries at a tablet leader's own term (read from
 *                   the unauthenticated TABLET_STATUS call), claiming a
 *                   follower's id and address from the follower's IP: the
 *                   message that crashed libraft 0.15 before the guard
 *   raft-forged     RequestVote / AppendEntries 1000 terms ahead from a
 *                   non-member id, to every replica of a tablet
 *   rpc-garbage     after an RPC preamble: random bytes, an oversized length,
 *                   a bad kind, or a truncated frame and EOF
 *   preamble-junk   random bytes where the preamble should be
 *   conn-flood      200 idle connections to one tserver, held for a second
 *   slow-reader     4000 TABLET_STATUS calls on one connection whose
 *                   answers are never read, held for two seconds
 *   wrong-tablet    an INSERT into --set-table (a table whose first column
 *                   is a bigint primary key, e.g. the failover suite's
 *                   jepsen_set) for a negative key — one the workload never
 *                   writes — sent with a forged client id to the leader of a
 *                   tablet that does NOT own the key's hash
 *
 * Every attack only checks what the server must do where that is a clear
 * rule: a wrong-tablet write must not be accepted. One that is accepted is
 * a breach: it is printed and the exit status is 1 (and a set checker sees
 * the element in a final scan: a row stored outside its partition is visible
 * to scans). Whether the cluster kept serving is for the caller to judge
 * (the failover checker, `docraft checksum`, process liveness).
 *
 * One line per attack on stdout: `<unix_ms> attack <name> <target> <what
 * happened>`. Exit: 0, 1 on a breach, 2 for bad usage or when the master
 * cannot be reached at all.
 *
 * The process is bounded: every socket has a 3 s send/receive timeout, the
 * loop stops at --duration, and every connection it opens is closed before
 * the next attack. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>

#include "client/internal.h"
#include "common/buf.h"
#include "net/rpc_frame.h"
#include "docdb/key.h"
#include "docdb/pv.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "net/listener.h"
#include "raftwire.h"
#include "rpc.pb-c.h"

#define FLOOD_CONNS 200
#define SLOW_CALLS 4000
#define FORGED_AHEAD 1000
#define IO_TIMEOUT_MS 3000

static struct {
	docraft_client *client;
	const char *set_table;
	const char *source_ip;
	unsigned seed;
	int breaches;
} A = {.set_table = "jepsen_set", .source_ip = "127.0.0.1"};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static unsigned rnd(unsigned n)
{
	return n == 0 ? 0 : (unsigned)rand_r(&A.seed) % n;
}

static void report(const char *name, const char *target, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report(const char *name, const char *target, const char *fmt, ...)
{
	va_list ap;
	printf("%" PRIu64 " attack %s %s ", now_ms(), name, target);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void ip_of(const char *addr, char *ip, size_t cap)
{
	size_t n = strcspn(addr, ":");
	snprintf(ip, cap, "%.*s", (int)n, addr);
}

static void set_timeouts(int fd)
{
	struct timeval tv = {IO_TIMEOUT_MS / 1000, (IO_TIMEOUT_MS % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* A connection to addr that has sent an RPC preamble; -1 if none. */
static int dial_rpc(const char *addr)
{
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	size_t n = listener_preamble_encode(pre, LISTENER_RPC, "", 0, NULL);
	int fd = raftwire_dial(A.source_ip, addr, pre, n);
	if (fd >= 0)
		set_timeouts(fd);
	return fd;
}

/* ---- what any client can learn ------------------------------------------------------- */

static Docraft__GetTableResponse *get_table(const char *table)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	Docraft__GetTableResponse *resp = NULL;
	struct buf reply = BUF_INIT;
	req.name = (char *)table;
	if (client_master_call(A.client, DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base, &reply) ==
	    0)
		resp = docraft__get_table_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	return resp;
}

static const Docraft__Peer *peer_of(const Docraft__TabletLocation *t, uint64_t id)
{
	for (size_t i = 0; i < t->n_replicas; i++)
		if (t->replicas[i]->raft_id == id)
			return t->replicas[i];
	return NULL;
}

/* The term replica addr reports for tablet (0 if it did not answer). */
static uint64_t term_at(const char *table, const char *tablet, const char *addr)
{
	Docraft__TabletStatusRequest req = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
	Docraft__TabletStatusResponse *resp;
	struct buf reply = BUF_INIT;
	uint64_t term = 0;
	if (client_tablet_call(A.client, table, tablet, addr,
			       DOCRAFT__METHOD__TSERVER_TABLET_STATUS, &req.base, &req.tablet_id,
			       &reply) == 0) {
		resp = docraft__tablet_status_response__unpack(NULL, reply.len, reply.data);
		if (resp != NULL && resp->n_tablets == 1)
			term = resp->tablets[0]->term;
		if (resp != NULL)
			docraft__tablet_status_response__free_unpacked(resp, NULL);
	}
	buf_free(&reply);
	return term;
}

/* A random tablet of table that has a known leader and at least one other
 * replica, or NULL. */
static const Docraft__TabletLocation *pick_tablet(const Docraft__GetTableResponse *t)
{
	if (t == NULL || t->n_tablets == 0)
		return NULL;
	const Docraft__TabletLocation *loc = t->tablets[rnd((unsigned)t->n_tablets)];
	if (loc->n_replicas < 2 || peer_of(loc, loc->leader_raft_id) == NULL)
		return NULL;
	return loc;
}

/* ---- attacks --------------------------------------------------------------------------- */

static void raft_own_term(void)
{
	Docraft__GetTableResponse *t = get_table(A.set_table);
	const Docraft__TabletLocation *loc = pick_tablet(t);
	const Docraft__Peer *leader, *follower = NULL;
	uint8_t msg[256];
	char ip[64];
	uint64_t term;
	int fd;

	if (loc == NULL) {
		report("raft-own-term", "-", "skipped: no tablet with a known leader");
		goto out;
	}
	leader = peer_of(loc, loc->leader_raft_id);
	for (size_t i = 0; i < loc->n_replicas && follower == NULL; i++)
		if (loc->replicas[i] != leader)
			follower = loc->replicas[i];
	term = term_at(A.set_table, loc->tablet_id, leader->address);
	if (term == 0) {
		report("raft-own-term", leader->address, "skipped: no status answer");
		goto out;
	}
	ip_of(follower->address, ip, sizeof ip);
	fd = raftwire_connect(ip, leader->address, loc->tablet_id, follower->raft_id,
			      follower->address);
	if (fd < 0) {
		report("raft-own-term", leader->address, "connect: %s", strerror(errno));
		goto out;
	}
	size_t len = raftwire_append_entries(msg, sizeof msg, term, 0, 0, 0, NULL, 0);
	bool sent = raftwire_send(fd, msg, len);
	sleep_ms(200);
	close(fd);
	report("raft-own-term", leader->address, "tablet %s term %" PRIu64 " as %" PRIu64 ": %s",
	       loc->tablet_id, term, follower->raft_id, sent ? "sent" : "refused");
out:
	if (t != NULL)
		docraft__get_table_response__free_unpacked(t, NULL);
}

static void raft_forged(void)
{
	Docraft__GetTableResponse *t = get_table(A.set_table);
	const Docraft__TabletLocation *loc = pick_tablet(t);
	uint8_t msg[256];
	int closed = 0;

	if (loc == NULL) {
		report("raft-forged", "-", "skipped: no tablet with a known leader");
		goto out;
	}
	uint64_t term = term_at(A.set_table, loc->tablet_id,
				peer_of(loc, loc->leader_raft_id)->address);
	for (size_t i = 0; i < loc->n_replicas; i++) {
		const Docraft__Peer *p = loc->replicas[i];
		uint64_t forged_id = 900 + rnd(99);
		size_t len = rnd(2) == 0
				     ? raftwire_request_vote(msg, sizeof msg, term + FORGED_AHEAD,
							     forged_id, 1u << 30,
							     term + FORGED_AHEAD, true, false)
				     : raftwire_append_entries(msg, sizeof msg, term + FORGED_AHEAD,
							       0, 0, 0, NULL, 0);
		int fd = raftwire_connect(A.source_ip, p->address, loc->tablet_id, forged_id,
					  "127.0.0.1:1");
		if (fd < 0)
			continue;
		(void)raftwire_send(fd, msg, len);
		closed += raftwire_wait_closed(fd, IO_TIMEOUT_MS);
		close(fd);
	}
	report("raft-forged", loc->tablet_id, "%d of %zu replicas closed the connection", closed,
	       loc->n_replicas);
out:
	if (t != NULL)
		docraft__get_table_response__free_unpacked(t, NULL);
}

/* A random live tserver's address (from the master's list), into out. */
static bool pick_tserver(char *out, size_t cap)
{
	Docraft__ListTServersRequest req = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
	Docraft__ListTServersResponse *resp = NULL;
	struct buf reply = BUF_INIT;
	bool ok = false;
	if (client_master_call(A.client, DOCRAFT__METHOD__MASTER_LIST_TSERVERS, &req.base,
			       &reply) == 0)
		resp = docraft__list_tservers_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	if (resp != NULL && resp->n_tservers > 0) {
		snprintf(out, cap, "%s", resp->tservers[rnd((unsigned)resp->n_tservers)]->address);
		ok = true;
	}
	if (resp != NULL)
		docraft__list_tservers_response__free_unpacked(resp, NULL);
	return ok;
}

static void rpc_garbage(void)
{
	static const char *const what[] = {"random bytes", "oversized length", "bad kind",
					   "truncated frame"};
	char addr[128];
	uint8_t junk[512];
	size_t n = sizeof junk;
	unsigned k = rnd(4);
	int fd;

	if (!pick_tserver(addr, sizeof addr) || (fd = dial_rpc(addr)) < 0) {
		report("rpc-garbage", "-", "skipped: no tserver reachable");
		return;
	}
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)rnd(256);
	if (k > 0) {
		struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = 1,
				      .method = DOCRAFT__METHOD__TSERVER_WRITE, .len = 100};
		rpc_frame_encode_header(junk, &f);
		if (k == 1)
			junk[0] = junk[1] = junk[2] = junk[3] = 0xff;
		else if (k == 2)
			junk[4] = 9;
		n = RPC_FRAME_HEADER_SIZE + 40; /* truncated: 100 announced */
	}
	(void)raftwire_send(fd, junk, n);
	shutdown(fd, SHUT_WR);
	bool closed = raftwire_wait_closed(fd, IO_TIMEOUT_MS);
	close(fd);
	report("rpc-garbage", addr, "%s: %s", what[k], closed ? "closed" : "still open");
}

static void preamble_junk(void)
{
	char addr[128];
	uint8_t junk[128];
	int fd;
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)rnd(256);
	if (!pick_tserver(addr, sizeof addr) ||
	    (fd = raftwire_dial(A.source_ip, addr, junk, 1 + rnd(sizeof junk))) < 0) {
		report("preamble-junk", "-", "skipped: no tserver reachable");
		return;
	}
	bool closed = raftwire_wait_closed(fd, IO_TIMEOUT_MS);
	close(fd);
	report("preamble-junk", addr, "%s", closed ? "closed" : "still open");
}

static void conn_flood(void)
{
	char addr[128];
	int fds[FLOOD_CONNS], n = 0;
	if (!pick_tserver(addr, sizeof addr)) {
		report("conn-flood", "-", "skipped: no tserver reachable");
		return;
	}
	for (int i = 0; i < FLOOD_CONNS; i++)
		if ((fds[n] = raftwire_dial(A.source_ip, addr, NULL, 0)) >= 0)
			n++;
	sleep_ms(1000);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	report("conn-flood", addr, "%d of %d connections opened", n, FLOOD_CONNS);
}

static void slow_reader(void)
{
	Docraft__TabletStatusRequest req = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
	struct buf b = BUF_INIT;
	uint8_t payload[64];
	char addr[128];
	int fd, sent = 0;

	if (!pick_tserver(addr, sizeof addr) || (fd = dial_rpc(addr)) < 0) {
		report("slow-reader", "-", "skipped: no tserver reachable");
		return;
	}
	size_t plen = docraft__tablet_status_request__pack(&req, payload);
	for (int i = 0; i < SLOW_CALLS; i++) {
		struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = (uint64_t)i + 1,
				      .method = DOCRAFT__METHOD__TSERVER_TABLET_STATUS,
				      .payload = payload, .len = plen};
		buf_reset(&b);
		rpc_frame_encode(&b, &f);
		if (!raftwire_send(fd, b.data, b.len))
			break; /* send timeout: the server stopped reading us */
		sent++;
	}
	buf_free(&b);
	sleep_ms(2000);
	close(fd);
	report("slow-reader", addr, "%d of %d calls sent, no answer read", sent, SLOW_CALLS);
}

/* Sends one TSERVER_WRITE frame on fd and reads the answer's status;
 * -1 when no answer came. */
static int call_status(int fd, const Docraft__WriteRequest *w)
{
	struct rpc_frame_decoder d;
	struct buf b = BUF_INIT;
	uint8_t in[4096];
	int status = -1;
	size_t plen = docraft__write_request__get_packed_size(w);
	uint8_t *payload = malloc(plen > 0 ? plen : 1);

	if (payload == NULL)
		return -1;
	docraft__write_request__pack(w, payload);
	struct rpc_frame f = {.kind = RPC_FRAME_REQUEST, .call_id = 7,
			      .method = DOCRAFT__METHOD__TSERVER_WRITE, .payload = payload,
			      .len = plen, .budget_ms = IO_TIMEOUT_MS};
	rpc_frame_encode(&b, &f);
	free(payload);
	bool sent = raftwire_send(fd, b.data, b.len);
	buf_free(&b);
	if (!sent)
		return -1;
	rpc_frame_decoder_init(&d, RPC_FRAME_DEFAULT_MAX);
	for (;;) {
		ssize_t r = recv(fd, in, sizeof in, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		const uint8_t *p = in;
		size_t len = (size_t)r;
		struct rpc_frame out;
		int rv = rpc_frame_decoder_next(&d, &p, &len, &out);
		if (rv == RPC_FRAME_READY) {
			status = out.status;
			free(out.payload);
			break;
		}
		if (rv != RPC_FRAME_MORE)
			break;
	}
	rpc_frame_decoder_free(&d);
	return status;
}

static void wrong_tablet(void)
{
	Docraft__GetTableResponse *t = get_table(A.set_table);
	Docraft__WriteRequest w = DOCRAFT__WRITE_REQUEST__INIT;
	Docraft__WriteOp op = DOCRAFT__WRITE_OP__INIT, *ops[1] = {&op};
	Docraft__Datum key = DOCRAFT__DATUM__INIT, *keys[1] = {&key};
	const Docraft__TabletLocation *wrong = NULL;
	uint8_t client_id[16];
	int64_t e = -1 - (int64_t)rnd(1u << 30);
	struct pv pv = pv_int64(e);
	uint16_t h = key_hash_components(&pv, 1);

	if (t == NULL || t->n_tablets < 2 || t->schema == NULL) {
		report("wrong-tablet", "-", "skipped: table %s not found or one tablet",
		       A.set_table);
		goto out;
	}
	for (size_t i = 0; i < t->n_tablets && wrong == NULL; i++) {
		const Docraft__TabletLocation *loc = t->tablets[(i + rnd(8)) % t->n_tablets];
		if ((h < loc->start || h >= loc->end) && peer_of(loc, loc->leader_raft_id) != NULL)
			wrong = loc;
	}
	if (wrong == NULL) {
		report("wrong-tablet", "-", "skipped: no other tablet with a known leader");
		goto out;
	}
	for (size_t i = 0; i < sizeof client_id; i++)
		client_id[i] = (uint8_t)rnd(256);
	key.v_case = DOCRAFT__DATUM__V_I;
	key.i = e;
	op.kind = DOCRAFT__WRITE_OP__KIND__INSERT;
	op.n_key = 1;
	op.key = keys;
	op.ttl_ms = -1;
	w.tablet_id = wrong->tablet_id;
	w.table = (char *)A.set_table;
	w.schema_version = t->schema->version;
	w.client_id.data = client_id;
	w.client_id.len = sizeof client_id;
	w.seq = 1;
	w.n_ops = 1;
	w.ops = ops;
	const char *addr = peer_of(wrong, wrong->leader_raft_id)->address;
	int fd = dial_rpc(addr);
	int status = fd >= 0 ? call_status(fd, &w) : -1;
	if (fd >= 0)
		close(fd);
	if (status == DOCRAFT_OK) {
		A.breaches++;
		report("wrong-tablet", addr,
		       "BREACH: tablet %s [0x%04x, 0x%04x) accepted key %" PRId64
		       " (hash 0x%04x)",
		       wrong->tablet_id, wrong->start, wrong->end, e, h);
	} else {
		report("wrong-tablet", addr, "key %" PRId64 " (hash 0x%04x) to tablet %s: status %d",
		       e, h, wrong->tablet_id, status);
	}
out:
	if (t != NULL)
		docraft__get_table_response__free_unpacked(t, NULL);
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: docraft-attack --masters ADDR[,ADDR...] --duration SEC "
			"[--seed N] [--set-table NAME] [--source-ip IP]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"masters", required_argument, NULL, 'm'},
		{"duration", required_argument, NULL, 'd'},
		{"seed", required_argument, NULL, 's'},
		{"set-table", required_argument, NULL, 't'},
		{"source-ip", required_argument, NULL, 'i'},
		{NULL, 0, NULL, 0},
	};
	static void (*const attacks[])(void) = {raft_own_term, raft_forged, rpc_garbage,
						preamble_junk, conn_flood, slow_reader,
						wrong_tablet};
	char err[DOCRAFT_ERRMSG_SIZE];
	const char *masters = NULL;
	docraft_client_options o;
	long duration = -1;
	int c;

	A.seed = (unsigned)time(NULL);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm': masters = optarg; break;
		case 'd': duration = strtol(optarg, NULL, 10); break;
		case 's': A.seed = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': A.set_table = optarg; break;
		case 'i': A.source_ip = optarg; break;
		default: usage(); return 2;
		}
	}
	if (masters == NULL || duration < 0 || optind != argc) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	docraft_client_options_init(&o);
	if (docraft_client_open(masters, &o, &A.client, err) != 0) {
		fprintf(stderr, "docraft-attack: %s\n", err);
		return 2;
	}
	uint64_t end = now_ms() + (uint64_t)duration * 1000;
	do
		attacks[rnd(sizeof attacks / sizeof attacks[0])]();
	while (now_ms() < end);
	docraft_client_close(A.client);
	if (A.breaches > 0)
		fprintf(stderr, "docraft-attack: %d breach(es)\n", A.breaches);
	return A.breaches > 0 ? 1 : 0;
}
