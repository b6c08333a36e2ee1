/* The Raft message guard against a real cluster (issue 12): a master and
 * three docraft-tserver processes on 127.0.0.1-3; a plain socket reads a
 * tablet's leader and term from the unauthenticated TABLET_STATUS call and
 * then speaks raft_uv (raftwire.h) to the tservers:
 *
 *   a. AppendEntries at the leader's own term, claiming a follower's id and
 *      address and connecting from that follower's IP: before the guard this
 *      crashed the leader (general protection fault in libraft 0.15); now
 *      rio drops it (logged "own_term");
 *   b. RequestVote with a term 1000 ahead, disrupt_leader, from a non-member
 *      id, to every replica: refused by the listener's peer check;
 *   c. a forged leader: AppendEntries with a higher term from a non-member
 *      id, from a member id with another address, and from a member's claim
 *      on the wrong source IP: all refused;
 *   d. garbage after a valid preamble (member claim, member IP): an absurd
 *      header length, an unknown type, a zero-length header, a truncated
 *      AppendEntries (raft_uv drops each connection), and an AppendEntries
 *      whose entries have no payload at a lower term to a follower (raft_uv
 *      leaves their batch pointer uninitialised and raft frees it): rio drops
 *      it (logged "malformed").
 *
 * Then: every process is still up, the tablet has a leader at a term that
 * shows no forged term was adopted, and writes and reads through the routing
 * client return what was written. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>

#include "client/internal.h"
#include "rpc/rpc.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "raftwire.h"
#include "rpc.pb-c.h"
#include "test.h"

#include "cluster.h"

#define TABLE "kv"
#define NTAB 2
#define FORGED_AHEAD 1000

/* One replica of the attacked tablet, as its TABLET_STATUS shows it. */
struct replica {
	int k;            /* tserver index */
	char ip[16];      /* its IP (source of its Raft connections) */
	uint64_t raft_id;
	uint64_t term;
	bool leader;
};

static void ip_of(const char *addr, char *ip, size_t cap)
{
	size_t n = strcspn(addr, ":");
	snprintf(ip, cap, "%.*s", (int)n, addr);
}

/* TABLET_STATUS of tablet at tserver k (one call through the client's
 * retries). false if it failed. */
static bool status_of(const char *tablet, int k, struct replica *out)
{
	Docraft__TabletStatusRequest req = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
	Docraft__TabletStatusResponse *resp;
	struct buf reply = BUF_INIT;
	bool ok = false;

	if (client_tablet_call(C.client, TABLE, tablet, C.t[k].addr,
			       DOCRAFT__METHOD__TSERVER_TABLET_STATUS, &req.base, &req.tablet_id,
			       &reply) == 0) {
		resp = docraft__tablet_status_response__unpack(NULL, reply.len, reply.data);
		if (resp != NULL && resp->n_tablets == 1) {
			out->k = k;
			ip_of(C.t[k].addr, out->ip, sizeof out->ip);
			out->raft_id = resp->tablets[0]->raft_id;
			out->term = resp->tablets[0]->term;
			out->leader = strcmp(resp->tablets[0]->role, "leader") == 0;
			ok = true;
		}
		if (resp != NULL)
			docraft__tablet_status_response__free_unpacked(resp, NULL);
	}
	buf_free(&reply);
	return ok;
}

struct led_tablet {
	const char *tablet;
	struct replica *rep;
	int leader;
};

/* For wait_for: all three replicas of l->tablet answer and one of them
 * (l->leader) reports itself leader. */
static bool replicas_answer_with_leader(void *arg)
{
	struct led_tablet *l = arg;
	int answered = 0;
	l->leader = -1;
	for (int k = 0; k < NT; k++)
		if (status_of(l->tablet, k, &l->rep[k])) {
			answered++;
			if (l->rep[k].leader)
				l->leader = k;
		}
	return answered == NT && l->leader >= 0;
}

/* Polls until one replica of tablet reports itself leader and all three
 * answer; rep[0..2] by tserver; returns the leader's tserver index. */
static int replicas_with_leader(const char *tablet, struct replica rep[NT], int timeout_ms)
{
	struct led_tablet l = {tablet, rep, -1};
	CHECK_MSG(wait_for(replicas_answer_with_leader, &l, timeout_ms),
		  "tablet %s: no leader reported within %d ms", tablet, timeout_ms);
	return l.leader;
}

/* Every server process is still running. */
static void check_all_up(const char *when)
{
	int st = 0;
	CHECK_MSG(!proc_wait(&C.m.p, 0, &st), "%s: the master exited (status 0x%x)", when, st);
	for (int k = 0; k < NT; k++) {
		if (proc_wait(&C.t[k].p, 0, &st)) {
			C.t[k].up = false;
			CHECK_MSG(false, "%s: tserver %d exited (%s %d)", when, k + 1,
				  WIFSIGNALED(st) ? "signal" : "status",
				  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
	}
}

static int log_count(int k, const char *needle)
{
	FILE *f = fopen(C.t[k].log, "r");
	char line[4096];
	int n = 0;
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

struct log_wait {
	int k, before;
	const char *needle, *what;
};

/* For wait_for: every server is up (else the case fails at once) and
 * tserver w->k's log has more than w->before lines with w->needle. */
static bool log_grew(void *arg)
{
	struct log_wait *w = arg;
	check_all_up(w->what);
	return log_count(w->k, w->needle) > w->before;
}

/* Waits until tserver k's log has more than `before` lines with needle,
 * failing at once if any server process exits meanwhile. */
static void wait_log(int k, const char *needle, int before, const char *what)
{
	struct log_wait w = {k, before, needle, what};
	CHECK_MSG(wait_for(log_grew, &w, 10000), "%s: no '%s' in tserver %d's log within 10 s",
		  what, needle, k + 1);
}

/* Sends msg on a fresh connection claiming id/address from src_ip and
 * expects the server to close it (refused at the preamble, or raft_uv
 * dropping the connection). */
static void send_expect_close(const char *src_ip, int k, const char *tablet, uint64_t id,
			      const char *address, const uint8_t *msg, size_t len, bool shut_wr,
			      const char *what)
{
	int fd = raftwire_connect(src_ip, C.t[k].addr, tablet, id, address);
	CHECK_MSG(fd >= 0, "%s: connect: %s", what, strerror(errno));
	(void)raftwire_send(fd, msg, len); /* may fail: refused already */
	if (shut_wr)
		shutdown(fd, SHUT_WR);
	CHECK_MSG(raftwire_wait_closed(fd, 10000), "%s: tserver %d kept the connection open",
		  what, k + 1);
	close(fd);
	check_all_up(what);
}

static void write_and_read(int n, int base)
{
	for (int i = base; i < base + n; i++) {
		char k[32], v[32];
		docraft_op *op = NULL;
		docraft_result *r = NULL;
		snprintf(k, sizeof k, "key%d", i);
		snprintf(v, sizeof v, "value%d", i);
		docraft_value key = docraft_value_text(k), val = docraft_value_text(v);
		CHECK_OK(docraft_op_insert(&key, 1, &op));
		CHECK_OK(docraft_op_column(op, "v", &val));
		int rv = docraft_write(C.client, TABLE, &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
		docraft_op_free(op);
		CHECK_MSG(rv == 0, "write %d: %d %s", i, rv, docraft_errmsg());
		rv = docraft_get(C.client, TABLE, &key, 1, 0, &r);
		CHECK_MSG(rv == 0, "read %d: %d %s", i, rv, docraft_errmsg());
		CHECK_MSG(docraft_result_nrows(r) == 1, "row %d: %zu rows", i,
			  docraft_result_nrows(r));
		docraft_value got = docraft_result_value(r, 0,
							 (size_t)docraft_result_column_index(r, "v"));
		bool same = got.type == DOCRAFT_TYPE_TEXT && got.v.s.len == strlen(v) &&
			    memcmp(got.v.s.p, v, got.v.s.len) == 0;
		docraft_result_free(r);
		CHECK_MSG(same, "row %d: read back something else", i);
	}
}

TEST(forged_raft_messages)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_table_options to = {.num_tablets = NTAB, .replication_factor = 3};
	struct tablet tabs[8];
	struct replica rep[NT], after[NT];
	uint8_t msg[1024];
	size_t len;
	int L, F, F2, n0;
	uint64_t term0;
	const char *tab;

	signal(SIGPIPE, SIG_IGN);
	cluster_up("raftguard");
	docraft_client_options_init(&o);
	o.num_tablets = NTAB;
	o.replication_factor = 3;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE kv (k text, v text, PRIMARY KEY (k));",
					      &to),
		     docraft_errmsg());
	CHECK_EQ_INT(tablets_with_leaders(TABLE, tabs, 8, NTAB, 20000), NTAB);
	write_and_read(10, 0);
	tab = tabs[0].id;

	/* What anyone can learn without credentials. */
	L = replicas_with_leader(tab, rep, 15000);
	F = (L + 1) % NT;
	F2 = (L + 2) % NT;
	term0 = rep[L].term;
	test_note("tablet %s: leader tserver %d (raft id %" PRIu64 ") at term %" PRIu64, tab,
		  L + 1, rep[L].raft_id, term0);

	/* a. AppendEntries at the leader's own term, as follower F, from F's IP. */
	n0 = log_count(L, "own_term");
	len = raftwire_append_entries(msg, sizeof msg, term0, 0, 0, 0, NULL, 0);
	{
		int fd = raftwire_connect(rep[F].ip, C.t[L].addr, tab, rep[F].raft_id,
					  C.t[F].addr);
		CHECK_MSG(fd >= 0, "connect: %s", strerror(errno));
		CHECK(raftwire_send(fd, msg, len));
		/* The leader either logs the drop or (without the guard) dies. */
		wait_log(L, "own_term", n0, "same-term AppendEntries");
		close(fd);
	}

	/* b. A forged RequestVote far ahead, from a non-member, to every replica. */
	len = raftwire_request_vote(msg, sizeof msg, term0 + FORGED_AHEAD, 999, 1u << 20,
				    term0 + FORGED_AHEAD, true, false);
	for (int k = 0; k < NT; k++)
		send_expect_close("127.0.0.1", k, tab, 999, "127.0.0.1:1", msg, len, false,
				  "forged RequestVote");

	/* c. A forged leader, far ahead: non-member id; a member's id with another
	 * address; a member's exact claim from the wrong IP. */
	len = raftwire_append_entries(msg, sizeof msg, term0 + FORGED_AHEAD, 0, 0, 0, NULL, 0);
	for (int k = 0; k < NT; k++) {
		char other[40];
		snprintf(other, sizeof other, "%s1", C.t[L].addr); /* another port */
		send_expect_close(rep[k].ip, k, tab, 998, C.t[L].addr, msg, len, false,
				  "forged leader (non-member id)");
		send_expect_close(rep[L].ip, k, tab, rep[L].raft_id, other, msg, len, false,
				  "forged leader (member id, other address)");
		send_expect_close("127.0.0.9", k, tab, rep[L].raft_id, C.t[L].addr, msg, len,
				  false, "forged leader (member claim, wrong IP)");
	}
	CHECK(log_count(L, "refused") > 0);

	/* d. Garbage after a valid preamble, as F from F's IP. */
	{
		static const uint8_t junk[8] = {0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41};
		len = raftwire_frame(msg, sizeof msg, 0x4141414141414141ull, 0x4141414141414141ull,
				     junk, sizeof junk);
		send_expect_close(rep[F].ip, L, tab, rep[F].raft_id, C.t[F].addr, msg, len, false,
				  "absurd header length");
		len = raftwire_frame(msg, sizeof msg, 99, sizeof junk, junk, sizeof junk);
		send_expect_close(rep[F].ip, L, tab, rep[F].raft_id, C.t[F].addr, msg, len, false,
				  "unknown message type");
		len = raftwire_frame(msg, sizeof msg, RAFT_IO_APPEND_ENTRIES, 0, NULL, 0);
		send_expect_close(rep[F].ip, L, tab, rep[F].raft_id, C.t[F].addr, msg, len, false,
				  "zero-length header");
		len = raftwire_append_entries(msg, sizeof msg, term0, 0, 0, 0, NULL, 0);
		send_expect_close(rep[F].ip, L, tab, rep[F].raft_id, C.t[F].addr, msg, len - 20,
				  true, "truncated AppendEntries");
	}
	{
		/* Entries without payload, at a lower term, "from the leader" to F2. */
		struct raftwire_entry e[2] = {{term0 - 1 > 0 ? term0 - 1 : 1, RAFT_COMMAND, NULL, 0},
					      {term0 - 1 > 0 ? term0 - 1 : 1, RAFT_COMMAND, NULL, 0}};
		uint64_t t = term0 > 1 ? term0 - 1 : 1;
		int fd = raftwire_connect(rep[L].ip, C.t[F2].addr, tab, rep[L].raft_id,
					  C.t[L].addr);
		CHECK_MSG(fd >= 0, "connect: %s", strerror(errno));
		n0 = log_count(F2, "malformed");
		len = raftwire_append_entries(msg, sizeof msg, t, 1u << 20, t, 0, e, 2);
		CHECK(raftwire_send(fd, msg, len));
		wait_log(F2, "malformed", n0, "entries without payload");
		close(fd);
	}

	/* The cluster keeps serving; no forged term was adopted. */
	write_and_read(40, 10);
	L = replicas_with_leader(tab, after, 15000);
	for (int k = 0; k < NT; k++)
		CHECK_MSG(after[k].term < term0 + FORGED_AHEAD,
			  "tserver %d is at term %" PRIu64 " (was %" PRIu64 ")", k + 1, after[k].term,
			  term0);
	test_note("after: leader tserver %d at term %" PRIu64, L + 1, after[L].term);
	check_all_up("the end");
	cluster_down();
}

TEST_MAIN(T(forged_raft_messages))
