/* Real-process tests: three (or four) tnode processes on loopback, one tablet
 * replica each, real Raft logs and real RocksDB; nodes are killed with
 * SIGKILL.
 *
 * Raft log: each case says which (tnode --raft-log): kill_all_and_restart
 * runs on per-tablet raft_uv logs, the others on the shared log (one per
 * tnode in <dir>/raftlog), so the default suite exercises both without
 * running twice. TNODE_RAFT_LOG=shared or per-tablet runs every case on
 * that one.
 *
 *   kill_leader_mid_stream       the leader dies with writes in flight: a new
 *                                leader within a few election timeouts, every
 *                                acknowledged write on every replica, retries
 *                                (same client id and seq) applied once
 *   kill_all_and_restart         every replica dies: identical state after a
 *                                restart, replaying at most what was not
 *                                flushed
 *   follower_catches_up_by_copy  a follower down during >= 100k writes, the
 *                                log truncated past it: it catches up through
 *                                a checkpoint copy, byte-identical
 *   new_replica_catches_up       a replica added to a loaded tablet catches up
 *                                the same way
 *
 * Node i (1-based) listens on 127.0.0.i:PORT (one free port for all), keeps
 * its data in <tmp>/nI and its log (stderr) in <tmp>/nI.log, or in
 * $TNODE_LOG_DIR/<case>-nI.log (kept) when that is set; the logs of a failed
 * case are summarized on stdout. Children never outlive the test
 * (proc.h), and a case that fails is cleaned up at the start of the next
 * case and at exit. TNODE names the tnode executable (default: next to this
 * one). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "test.h"

#define NN 4             /* node slots; cases use 3 or 4 */
#define HEARTBEAT_MS 50
#define ELECTION_MS 500
#define LINE_MAX_ 8192
#define CMD_MS 10000     /* a synchronous command's answer */

struct tnode {
	struct proc p;
	int id;          /* raft id, 1-based */
	char addr[32];
	char dir[300];
	char log[320];
	bool up;         /* spawned and not reaped */
	bool bootstrap;
	char *reply[26]; /* last unclaimed answer per kind letter */
};

struct status {
	char role[32];
	uint64_t term, leader, applied, last, flushed, replayed, skipped, copies, store;
	uint64_t entries, writes, snap, first;
	char err[256];
};

static struct {
	bool active;     /* a case is running (or failed without cleaning up) */
	char base[256];
	char tnode[4096];
	int port;
	int nodes;       /* slots in use */
	unsigned snap_threshold, snap_trailing;
	const char *raft_log;  /* tnode --raft-log: shared or per-tablet */
	struct tnode n[NN];
} C;

/* ---- writer: pipelined writes with retries ------------------------------------ */

enum op_state { OP_NEW = 0, OP_SENT, OP_RETRY, OP_ACKED };

struct op {
	uint8_t state;
	int8_t node;     /* where it is in flight */
	uint16_t attempts;
};

struct writer {
	struct op *ops;
	size_t n;
	size_t next;     /* first op never sent */
	size_t low;      /* every op below is acknowledged */
	size_t acked;
	size_t inflight;
	size_t *retry;   /* stack of ops to resend */
	size_t nretry;
	int leader;      /* node slot we send to, -1 unknown */
	unsigned max_inflight;
	uint64_t client;
	char prefix[8];
	uint64_t sent, errs, stale;
	uint64_t retried; /* acknowledged after more than one attempt */
	uint64_t dedup;   /* of those, answered from the retry table (ht 0) */
};

/* The one writer (file-static, so that a failed case can free it). */
static struct writer writer_g;
static struct writer *W; /* the writer answers go to: writer_g or NULL */

static void key_of(const struct writer *w, size_t i, char *k, size_t cap)
{
	snprintf(k, cap, "%s%07zu", w->prefix, i);
}

static void value_of(const struct writer *w, size_t i, char *v, size_t cap)
{
	snprintf(v, cap, "v%zu-%s-%" PRIu64, i, w->prefix, w->client);
}

static void writer_free(struct writer *w);

static struct writer *writer_new(size_t n, uint64_t client, const char *prefix,
				 unsigned max_inflight)
{
	struct writer *w = &writer_g;
	writer_free(w);
	memset(w, 0, sizeof *w);
	w->ops = calloc(n, sizeof *w->ops);
	w->retry = calloc(n, sizeof *w->retry);
	CHECK(w->ops != NULL && w->retry != NULL);
	w->n = n;
	w->leader = -1;
	w->client = client;
	w->max_inflight = max_inflight;
	snprintf(w->prefix, sizeof w->prefix, "%s", prefix);
	W = w;
	return w;
}

static void writer_free(struct writer *w)
{
	free(w->ops);
	free(w->retry);
	w->ops = NULL;
	w->retry = NULL;
	if (W == w)
		W = NULL;
}

static void op_unsent(struct writer *w, size_t i)
{
	w->ops[i].state = OP_RETRY;
	w->ops[i].node = -1;
	w->retry[w->nretry++] = i;
	w->inflight--;
}

/* Every op in flight at node slot k has an unknown outcome now. */
static void writer_node_lost(struct writer *w, int k)
{
	for (size_t i = 0; i < w->next; i++)
		if (w->ops[i].state == OP_SENT && w->ops[i].node == k)
			op_unsent(w, i);
	if (w->leader == k)
		w->leader = -1;
}

static void writer_on_line(struct writer *w, int k, const char *line)
{
	char tag[64], res[16], code[32];
	unsigned long long leader = 0;
	size_t i;
	int f = sscanf(line, "W %63s %15s %31s %llu", tag, res, code, &leader);
	CHECK_MSG(f >= 3, "node %d: bad answer: %s", k + 1, line);
	i = strtoull(tag, NULL, 10);
	CHECK_MSG(i < w->n, "node %d: unknown tag: %s", k + 1, line);
	if (w->ops[i].state != OP_SENT || w->ops[i].node != k) {
		w->stale++;
		return;
	}
	if (strcmp(res, "ok") == 0) {
		if (w->ops[i].attempts > 1) {
			w->retried++;
			/* tablet.c answers a retry of an applied write with ht 0 */
			if (strtoull(code, NULL, 10) == 0)
				w->dedup++;
		}
		w->ops[i].state = OP_ACKED;
		w->inflight--;
		w->acked++;
		while (w->low < w->n && w->ops[w->low].state == OP_ACKED)
			w->low++;
		return;
	}
	CHECK_MSG(strcmp(code, "ENOTLEADER") == 0 || strcmp(code, "ELEADERLOST") == 0 ||
			  strcmp(code, "ECLOSED") == 0 || strcmp(code, "EUNAVAILABLE") == 0 ||
			  strcmp(code, "EBUSY") == 0,
		  "node %d: unexpected write error: %s", k + 1, line);
	w->errs++;
	op_unsent(w, i);
	if (w->leader == k) {
		int hint = (int)leader - 1;
		w->leader = hint >= 0 && hint < C.nodes && hint != k && C.n[hint].up ? hint : -1;
	}
}

/* ---- nodes ------------------------------------------------------------------------- */

static void node_clear_replies(struct tnode *n)
{
	for (int i = 0; i < 26; i++) {
		free(n->reply[i]);
		n->reply[i] = NULL;
	}
}

static void dispatch(int k, const char *line)
{
	struct tnode *n = &C.n[k];
	char c = line[0];
	if (c == 'W' && line[1] == ' ') {
		if (W != NULL)
			writer_on_line(W, k, line);
		return;
	}
	if (c == 'Q')
		return;
	if (c < 'A' || c > 'Z') {
		test_note("node %d: unexpected output: %s", k + 1, line);
		return;
	}
	free(n->reply[c - 'A']);
	n->reply[c - 'A'] = strdup(line);
}

/* Reads and dispatches what the nodes have written, waiting at most
 * timeout_ms for the first bytes. */
static void pump(int timeout_ms)
{
	struct proc *ps[NN];
	char line[LINE_MAX_];
	for (int k = 0; k < NN; k++)
		ps[k] = k < C.nodes && C.n[k].up ? &C.n[k].p : NULL;
	proc_poll(ps, NN, timeout_ms);
	for (int k = 0; k < C.nodes; k++) {
		if (!C.n[k].up)
			continue;
		while (proc_take_line(&C.n[k].p, line, sizeof line))
			dispatch(k, line);
	}
}

/* Sends a command to node k and waits for its answer of the given kind into
 * out. false on timeout, EOF or an "E" answer (then out holds what there
 * was). */
static bool cmd(int k, char kind, char *out, size_t cap, int timeout_ms, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static bool cmd(int k, char kind, char *out, size_t cap, int timeout_ms, const char *fmt, ...)
{
	struct tnode *n = &C.n[k];
	char line[1024];
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	va_list ap;
	snprintf(out, cap, "(no answer)");
	if (!n->up)
		return false;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	free(n->reply[kind - 'A']);
	n->reply[kind - 'A'] = NULL;
	free(n->reply['E' - 'A']);
	n->reply['E' - 'A'] = NULL;
	if (proc_send(&n->p, timeout_ms, "%s", line) != 0)
		return false;
	for (;;) {
		char **r = &n->reply[kind - 'A'], **e = &n->reply['E' - 'A'];
		if (*r != NULL || *e != NULL) {
			bool ok = *r != NULL;
			snprintf(out, cap, "%s", ok ? *r : *e);
			free(*r);
			free(*e);
			*r = *e = NULL;
			return ok;
		}
		if (n->p.eof) {
			snprintf(out, cap, "(node %d exited)", k + 1);
			return false;
		}
		if (proc_now_ms() >= end)
			return false;
		pump(20);
	}
}

static void parse_status(const char *line, struct status *st)
{
	char buf[LINE_MAX_];
	char *save = NULL;
	memset(st, 0, sizeof *st);
	snprintf(buf, sizeof buf, "%s", line);
	for (char *t = strtok_r(buf, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(t, '=');
		uint64_t v;
		if (eq == NULL)
			continue;
		*eq = '\0';
		v = strtoull(eq + 1, NULL, 10);
		if (strcmp(t, "role") == 0)
			snprintf(st->role, sizeof st->role, "%s", eq + 1);
		else if (strcmp(t, "err") == 0)
			snprintf(st->err, sizeof st->err, "%s", eq + 1);
		else if (strcmp(t, "term") == 0)
			st->term = v;
		else if (strcmp(t, "leader") == 0)
			st->leader = v;
		else if (strcmp(t, "applied") == 0)
			st->applied = v;
		else if (strcmp(t, "last") == 0)
			st->last = v;
		else if (strcmp(t, "flushed") == 0)
			st->flushed = v;
		else if (strcmp(t, "replayed") == 0)
			st->replayed = v;
		else if (strcmp(t, "skipped") == 0)
			st->skipped = v;
		else if (strcmp(t, "copies") == 0)
			st->copies = v;
		else if (strcmp(t, "store") == 0)
			st->store = v;
		else if (strcmp(t, "first") == 0)
			st->first = v;
		else if (strcmp(t, "entries") == 0)
			st->entries = v;
		else if (strcmp(t, "snap") == 0)
			st->snap = v;
		else if (strcmp(t, "writes") == 0)
			st->writes = v;
	}
}

static bool node_status(int k, struct status *st)
{
	char line[LINE_MAX_];
	if (!cmd(k, 'S', line, sizeof line, CMD_MS, "status"))
		return false;
	parse_status(line, st);
	return true;
}

static void status_must(int k, struct status *st)
{
	char line[LINE_MAX_];
	CHECK_MSG(cmd(k, 'S', line, sizeof line, CMD_MS, "status"), "node %d: status: %s", k + 1,
		  line);
	parse_status(line, st);
}

/* "C <hex> n=<pairs>" of node k. */
static void node_checksum(int k, char *sum, size_t cap, uint64_t *pairs)
{
	char line[256], hex[64];
	unsigned long long n = 0;
	CHECK_MSG(cmd(k, 'C', line, sizeof line, 60000, "checksum"), "node %d: checksum: %s",
		  k + 1, line);
	CHECK_MSG(sscanf(line, "C %63s n=%llu", hex, &n) == 2, "node %d: %s", k + 1, line);
	snprintf(sum, cap, "%s", hex);
	if (pairs != NULL)
		*pairs = n;
}

static void node_start(int k)
{
	struct tnode *n = &C.n[k];
	char id[16], hb[16], el[16], th[16], tr[16], peers[256];
	char *argv[24];
	int a = 0;
	size_t off = 0;
	for (int j = 0; j < 3; j++)
		off += (size_t)snprintf(peers + off, sizeof peers - off, "%s%d=%s", j ? "," : "",
					j + 1, C.n[j].addr);
	snprintf(id, sizeof id, "%d", n->id);
	snprintf(hb, sizeof hb, "%d", HEARTBEAT_MS);
	snprintf(el, sizeof el, "%d", ELECTION_MS);
	snprintf(th, sizeof th, "%u", C.snap_threshold);
	snprintf(tr, sizeof tr, "%u", C.snap_trailing);
	argv[a++] = C.tnode;
	argv[a++] = "--id";
	argv[a++] = id;
	argv[a++] = "--address";
	argv[a++] = n->addr;
	argv[a++] = "--dir";
	argv[a++] = n->dir;
	argv[a++] = "--peers";
	argv[a++] = peers;
	argv[a++] = "--heartbeat-ms";
	argv[a++] = hb;
	argv[a++] = "--election-ms";
	argv[a++] = el;
	argv[a++] = "--snapshot-threshold";
	argv[a++] = th;
	argv[a++] = "--snapshot-trailing";
	argv[a++] = tr;
	argv[a++] = "--raft-log";
	argv[a++] = (char *)C.raft_log;
	if (n->bootstrap)
		argv[a++] = "--bootstrap";
	argv[a] = NULL;
	node_clear_replies(n);
	CHECK_MSG(proc_spawn(&n->p, argv, n->log) == 0, "spawn %s: %s", C.tnode, strerror(errno));
	n->up = true;
}

/* kill -9, reaped. */
static void node_kill(int k)
{
	proc_kill(&C.n[k].p);
	C.n[k].up = false;
	node_clear_replies(&C.n[k]);
	if (W != NULL)
		writer_node_lost(W, k);
}

/* "quit": graceful close; the process must exit 0. */
static void node_quit(int k)
{
	struct tnode *n = &C.n[k];
	int st = 0;
	bool exited;
	if (!n->up)
		return;
	proc_send(&n->p, 1000, "quit");
	exited = proc_wait(&n->p, 20000, &st);
	if (!exited)
		proc_kill(&n->p);
	n->up = false;
	node_clear_replies(n);
	CHECK_MSG(exited, "node %d: no exit within 20 s of quit", k + 1);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "node %d: quit: wait status 0x%x", k + 1,
		  st);
}


/* Prints the last lines of each node's log. */
static void dump_logs(void)
{
	for (int k = 0; k < C.nodes; k++) {
		char what[64];
		snprintf(what, sizeof what, "failed case: node %d log", k + 1);
		proc_note_log_tail(what, C.n[k].log, 25);
	}
}

/* Kills every node, removes the temp dir. After a failure (still active at
 * the start of the next case, or at exit) it shows the logs first. */
static void cluster_cleanup(bool failed)
{
	if (!C.active)
		return;
	proc_kill_all();
	if (failed)
		dump_logs();
	for (int k = 0; k < NN; k++) {
		C.n[k].up = false;
		node_clear_replies(&C.n[k]);
	}
	if (W != NULL)
		writer_free(W);
	test_tmpdir_remove(C.base);
	C.active = false;
}

static void cleanup_at_exit(void)
{
	cluster_cleanup(true);
}

/* SIGTERM (a meson timeout), SIGINT, SIGHUP: kill the nodes and remove the
 * temp dir with async-signal-safe calls only (fork + exec rm), then die of
 * the signal. */
static void on_fatal_signal(int sig)
{
	proc_die_of_signal(sig, C.active ? C.base : NULL);
}

/* raft_log: the case's Raft log (see the top), unless TNODE_RAFT_LOG says. */
static void cluster_up(const char *tag, int nodes, unsigned threshold, unsigned trailing,
		       const char *raft_log)
{
	const char *logdir = getenv("TNODE_LOG_DIR");
	const char *forced = getenv("TNODE_RAFT_LOG");
	cluster_cleanup(true); /* the previous case failed */
	proc_on_exit(cleanup_at_exit, on_fatal_signal);
	memset(C.n, 0, sizeof C.n);
	CHECK_MSG(proc_find_exe(C.tnode, sizeof C.tnode, "TNODE", "tests/tablet/tnode") == 0,
		  "tnode not found at %s (set TNODE)", C.tnode);
	test_tmpdir_make(C.base, tag);
	C.active = true;
	C.port = proc_free_port(NN, -1);
	CHECK_MSG(C.port > 0, "no free port on 127.0.0.1..%d", NN);
	C.nodes = NN;
	C.snap_threshold = threshold;
	C.snap_trailing = trailing;
	C.raft_log = forced != NULL && *forced != '\0' ? forced : raft_log;
	test_note("Raft log: %s", C.raft_log);
	for (int k = 0; k < NN; k++) {
		struct tnode *n = &C.n[k];
		n->id = k + 1;
		n->bootstrap = k < 3;
		snprintf(n->addr, sizeof n->addr, "127.0.0.%d:%d", k + 1, C.port);
		snprintf(n->dir, sizeof n->dir, "%s/n%d", C.base, k + 1);
		if (logdir != NULL && *logdir != '\0')
			snprintf(n->log, sizeof n->log, "%s/%s-n%d.log", logdir, tag, k + 1);
		else
			snprintf(n->log, sizeof n->log, "%s/n%d.log", C.base, k + 1);
	}
	for (int k = 0; k < nodes; k++)
		node_start(k);
}

static void cluster_down(void)
{
	for (int k = 0; k < C.nodes; k++)
		node_quit(k);
	if (W != NULL)
		writer_free(W);
	cluster_cleanup(false);
}

/* ---- waiting ----------------------------------------------------------------------- */

/* The node that reports itself a ready leader in a term above min_term;
 * -1 after timeout_ms. */
static int find_leader(uint64_t min_term, int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	do {
		for (int k = 0; k < C.nodes; k++) {
			struct status st;
			if (!C.n[k].up || !node_status(k, &st))
				continue;
			if (strcmp(st.role, "leader") == 0 && st.term > min_term)
				return k;
		}
		pump(20);
	} while (proc_now_ms() < end);
	return -1;
}

static int leader_must(uint64_t min_term, int timeout_ms)
{
	int l = find_leader(min_term, timeout_ms);
	CHECK_MSG(l >= 0, "no leader within %d ms", timeout_ms);
	return l;
}

/* Until every node up has applied the leader's whole log (and the leader
 * has applied it too); fails at once if a node reports FAILED. */
static void wait_converged(int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	struct status st[NN];
	for (;;) {
		int l = -1;
		bool done = true;
		for (int k = 0; k < C.nodes; k++) {
			if (!C.n[k].up)
				continue;
			status_must(k, &st[k]);
			CHECK_MSG(strcmp(st[k].role, "failed") != 0, "node %d failed: %s", k + 1,
				  st[k].err);
			if (strcmp(st[k].role, "leader") == 0)
				l = k;
		}
		if (l < 0) {
			done = false;
		} else {
			for (int k = 0; k < C.nodes; k++)
				if (C.n[k].up && (st[k].applied < st[l].last ||
						  st[k].store != st[l].store))
					done = false;
		}
		if (done)
			return;
		if (proc_now_ms() >= end) {
			for (int k = 0; k < C.nodes; k++) {
				if (!C.n[k].up)
					continue;
				test_note("node %d: role %s term %" PRIu64 " applied %" PRIu64
					  " last %" PRIu64 " store %" PRIu64, k + 1, st[k].role,
					  st[k].term, st[k].applied, st[k].last, st[k].store);
			}
			CHECK_MSG(false, "replicas did not converge within %d ms", timeout_ms);
		}
		pump(100);
	}
}

/* Every node up has the same checksum; returns it in sum. */
static void checksums_agree(char *sum, size_t cap, uint64_t *pairs)
{
	char first[64] = "";
	uint64_t n0 = 0;
	int k0 = -1;
	for (int k = 0; k < C.nodes; k++) {
		char s[64];
		uint64_t n;
		if (!C.n[k].up)
			continue;
		node_checksum(k, s, sizeof s, &n);
		if (k0 < 0) {
			snprintf(first, sizeof first, "%s", s);
			n0 = n;
			k0 = k;
			continue;
		}
		CHECK_MSG(strcmp(s, first) == 0 && n == n0,
			  "node %d: checksum %s (%" PRIu64 " pairs), node %d: %s (%" PRIu64
			  " pairs)",
			  k + 1, s, n, k0 + 1, first, n0);
	}
	if (sum != NULL)
		snprintf(sum, cap, "%s", first);
	if (pairs != NULL)
		*pairs = n0;
}

/* ---- running writes ------------------------------------------------------------- */

static void writer_send(struct writer *w, size_t i)
{
	char k[32], v[64];
	int l = w->leader;
	key_of(w, i, k, sizeof k);
	value_of(w, i, v, sizeof v);
	w->ops[i].state = OP_SENT;
	w->ops[i].node = (int8_t)l;
	w->ops[i].attempts++;
	w->inflight++;
	w->sent++;
	if (proc_send(&C.n[l].p, 5000, "w %zu %" PRIu64 " %zu %s %s %zu", i, w->client, i + 1, k,
		      v, w->low + 1) != 0)
		op_unsent(w, i);
}

/* Sends retries, then new writes, until the pipeline is full. */
static void writer_fill(struct writer *w)
{
	while (w->leader >= 0 && w->inflight < w->max_inflight) {
		if (w->nretry > 0)
			writer_send(w, w->retry[--w->nretry]);
		else if (w->next < w->n)
			writer_send(w, w->next++);
		else
			break;
	}
}

/* One round: find a leader if needed, fill the pipeline, read answers. */
static void writer_step(struct writer *w, int leader_timeout_ms)
{
	if (w->leader < 0 && (w->nretry > 0 || w->next < w->n)) {
		if (w->inflight > 0) {
			/* Answers still due from a deposed leader come first. */
			pump(20);
			return;
		}
		w->leader = leader_must(0, leader_timeout_ms);
	}
	writer_fill(w);
	pump(w->inflight > 0 ? 50 : 0);
}

static bool writer_done(const struct writer *w)
{
	return w->acked == w->n;
}

static void writer_run(struct writer *w, int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	while (!writer_done(w)) {
		CHECK_MSG(proc_now_ms() < end,
			  "writes not done within %d ms: %zu of %zu acknowledged, %zu in flight",
			  timeout_ms, w->acked, w->n, w->inflight);
		writer_step(w, 20 * ELECTION_MS);
	}
}

/* Every step-th acknowledged write is the newest version of its key on node
 * k (local reads). */
static void check_present(const struct writer *w, int k, size_t step)
{
	char line[256], want[80];
	size_t missing = 0, checked = 0;
	for (size_t i = 0; i < w->n; i += step) {
		char key[32], v[64];
		if (w->ops[i].state != OP_ACKED)
			continue;
		key_of(w, i, key, sizeof key);
		value_of(w, i, v, sizeof v);
		snprintf(want, sizeof want, "G %s", v);
		CHECK_MSG(cmd(k, 'G', line, sizeof line, CMD_MS, "get %s", key), "node %d: get: %s",
			  k + 1, line);
		if (strcmp(line, want) != 0) {
			if (missing < 5)
				test_note("node %d: %s: %s, want %s", k + 1, key, line, want);
			missing++;
		}
		checked++;
	}
	CHECK_MSG(missing == 0, "node %d: %zu of %zu acknowledged writes missing", k + 1, missing,
		  checked);
}

/* Linearizable reads at the leader of some acknowledged keys. */
static void check_reads(const struct writer *w, int l, size_t count)
{
	char line[256];
	size_t step = w->n / count ? w->n / count : 1;
	for (size_t i = 0; i < w->n; i += step) {
		char key[32], v[64], want[128];
		key_of(w, i, key, sizeof key);
		value_of(w, i, v, sizeof v);
		snprintf(want, sizeof want, "R %zu ok %s", i, v);
		CHECK_MSG(cmd(l, 'R', line, sizeof line, CMD_MS, "r %zu %s", i, key),
			  "node %d: read: %s", l + 1, line);
		CHECK_EQ_STR(line, want);
	}
}

/* ---- cases ------------------------------------------------------------------------- */

#define A_WRITES 6000

TEST(kill_leader_mid_stream)
{
	struct writer *w;
	struct status st;
	uint64_t t_kill, t_new, old_term, pairs;
	int l, nl;

	cluster_up("proc-kill-leader", 3, 1000, 500, "shared");
	l = leader_must(0, 20 * ELECTION_MS);
	status_must(l, &st);
	old_term = st.term;
	w = writer_new(A_WRITES, 1, "a", 64);
	w->leader = l;

	/* Half the writes, then the leader dies with a full pipeline: some
	 * writes replicated, some only in its log or queue, some unread. */
	while (w->next < A_WRITES / 2) {
		CHECK(!writer_done(w));
		writer_step(w, 20 * ELECTION_MS);
	}
	pump(0);
	writer_fill(w);
	test_note("killing leader %d (term %" PRIu64 ") with %zu writes in flight, %zu"
		  " acknowledged",
		  l + 1, old_term, w->inflight, w->acked);
	node_kill(l);
	t_kill = proc_now_ms();
	nl = find_leader(old_term, 30000);
	t_new = proc_now_ms();
	CHECK_MSG(nl >= 0, "no new leader within 30 s");
	test_note("failover: node %d leads after %" PRIu64 " ms (election timeout %d ms)", nl + 1,
		  t_new - t_kill, ELECTION_MS);
	CHECK_MSG(t_new - t_kill <= 10 * ELECTION_MS, "failover took %" PRIu64 " ms",
		  t_new - t_kill);
	w->leader = nl;

	/* The rest, with the unknown ones retried under the same seq. */
	writer_run(w, 120000);
	test_note("%zu writes acknowledged, %" PRIu64 " sends, %" PRIu64 " errors, %" PRIu64
		  " stale answers; %" PRIu64 " acknowledged on a retry, %" PRIu64
		  " of them found already applied", w->acked, w->sent, w->errs, w->stale,
		  w->retried, w->dedup);

	node_start(l);
	wait_converged(60000);
	for (int k = 0; k < 3; k++)
		check_present(w, k, 1);
	checksums_agree(NULL, 0, &pairs);
	/* Distinct keys, each written once: a retry applied twice would add a
	 * second version. */
	CHECK_EQ_U64(pairs, A_WRITES);
	nl = leader_must(0, 20 * ELECTION_MS);
	check_reads(w, nl, 100);
	writer_free(w);
	cluster_down();
}

#define B_WRITES 5000

TEST(kill_all_and_restart)
{
	struct writer *w;
	struct status before[3], after[3];
	char sum_before[64], sum_after[64];
	uint64_t pairs;
	bool flushed_some = false;

	/* A small threshold: snapshots flush part of the data before the kill. */
	cluster_up("proc-kill-all", 3, 128, 64, "per-tablet");
	w = writer_new(B_WRITES, 2, "b", 64);
	writer_run(w, 120000);
	wait_converged(60000);
	checksums_agree(sum_before, sizeof sum_before, &pairs);
	CHECK_EQ_U64(pairs, B_WRITES);
	for (int k = 0; k < 3; k++)
		status_must(k, &before[k]);
	writer_free(w);
	for (int k = 0; k < 3; k++)
		node_kill(k);
	for (int k = 0; k < 3; k++)
		node_start(k);
	leader_must(0, 30000);
	wait_converged(60000);
	checksums_agree(sum_after, sizeof sum_after, &pairs);
	CHECK_EQ_STR(sum_after, sum_before);
	CHECK_EQ_U64(pairs, B_WRITES);
	for (int k = 0; k < 3; k++) {
		uint64_t unflushed;
		status_must(k, &after[k]);
		CHECK(after[k].flushed <= before[k].applied);
		unflushed = before[k].applied - after[k].flushed;
		test_note("node %d: applied %" PRIu64 " before the kill, %" PRIu64
			  " flushed at open: replayed %" PRIu64 " (<= %" PRIu64 "), skipped %"
			  PRIu64,
			  k + 1, before[k].applied, after[k].flushed, after[k].replayed, unflushed,
			  after[k].skipped);
		CHECK(after[k].replayed <= unflushed);
		flushed_some |= after[k].flushed > 0;
	}
	/* Otherwise the bound above says nothing. */
	CHECK_MSG(flushed_some, "no replica had flushed anything before the kill");
	cluster_down();
}

/* The leader's log must have passed threshold + trailing entries, and the
 * leader must have finished a snapshot (a flush, then a marker) at an index
 * >= threshold: raft then drops the entries below index - trailing, so a
 * replica that stopped before (or a new, empty one) can no longer catch up
 * from the log. Snapshots run asynchronously (the flush is on the
 * threadpool), so wait for one, bounded. */
/* Writes rounds of n pairs (keys prefix<round>…) until the leader's Raft
 * log starts past index floor + 1 (a snapshot truncated it), so that a
 * replica at or below floor can only catch up through a checkpoint copy.
 * How many entries n writes make depends on group commit (the machine's
 * speed), hence rounds. With beyond_first true, floor is raised to the
 * leader's last index after the first round: raft_uv queues the messages a
 * leader sends to a dead peer and delivers them when it comes back, so a
 * follower killed at index 2 may still receive the entries the leader sent
 * "to it" while it was down, up to about the first snapshot. Round r writes as client id client + 1000 r (the
 * retry table dedups by client and seq). Returns the writer of the last
 * round (for check_present); *pairs is the total written. */
static struct writer *write_until_truncated(size_t n, uint64_t client, const char *prefix,
					    unsigned inflight, uint64_t floor, bool beyond_first,
					    uint64_t *pairs)
{
	struct writer *w = NULL;
	struct status st;
	*pairs = 0;
	for (int round = 0;; round++) {
		char pre[8];
		uint64_t t0 = proc_now_ms(), end;
		int l;
		CHECK_MSG(round < 8, "%" PRIu64 " writes left the leader's log starting at %" PRIu64
			  " (snapshot at %" PRIu64 "), not past %" PRIu64, *pairs, st.first,
			  st.snap, floor + 1);
		snprintf(pre, sizeof pre, "%s%d", prefix, round);
		w = writer_new(n, client + 1000 * (uint64_t)round, pre, inflight);
		writer_run(w, 300000);
		*pairs += n;
		l = leader_must(0, 20 * ELECTION_MS);
		status_must(l, &st);
		test_note("round %d: %zu writes in %" PRIu64 " ms, leader %d: %" PRIu64
			  " entries, log %" PRIu64 "..%" PRIu64 ", snapshot at %" PRIu64, round, n,
			  proc_now_ms() - t0, l + 1, st.entries, st.first, st.last, st.snap);
		if (round == 0 && beyond_first && st.last > floor)
			floor = st.last;
		/* snapshots are asynchronous: give the one under way time to land */
		end = proc_now_ms() + 5000;
		while (st.first <= floor + 1 && st.last > floor + C.snap_threshold &&
		       proc_now_ms() < end) {
			pump(100);
			status_must(l, &st);
		}
		if (st.first > floor + 1)
			return w;
	}
}

/* Waits until node k has caught up with the leader (bounded), failing at
 * once if it reports FAILED. */
static void wait_caught_up(int k, int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	uint64_t t0 = proc_now_ms();
	struct status st, ls;
	for (;;) {
		int l = find_leader(0, 20 * ELECTION_MS);
		CHECK_MSG(l >= 0, "no leader");
		status_must(l, &ls);
		status_must(k, &st);
		CHECK_MSG(strcmp(st.role, "failed") != 0, "node %d failed: %s", k + 1, st.err);
		if (st.applied >= ls.applied && st.store == ls.store &&
		    strcmp(st.role, "follower") == 0)
			break;
		CHECK_MSG(proc_now_ms() < end,
			  "node %d not caught up within %d ms: role %s applied %" PRIu64
			  " store %" PRIu64 " (leader applied %" PRIu64 " store %" PRIu64 ")",
			  k + 1, timeout_ms, st.role, st.applied, st.store, ls.applied, ls.store);
		pump(200);
	}
	test_note("node %d caught up in %" PRIu64 " ms: copies %" PRIu64 ", replayed %" PRIu64
		  ", skipped %" PRIu64 ", store index %" PRIu64, k + 1, proc_now_ms() - t0,
		  st.copies, st.replayed, st.skipped, st.store);
}

#define C_WRITES 100000

TEST(follower_catches_up_by_copy)
{
	struct writer *w;
	struct status st;
	uint64_t pairs, total;
	int l, f;

	cluster_up("proc-copy", 3, 1000, 500, "shared");
	l = leader_must(0, 20 * ELECTION_MS);
	status_must(l, &st);
	f = (l + 1) % 3;
	node_kill(f);
	test_note("follower %d stopped at most at index %" PRIu64 "; leader %d", f + 1, st.last,
		  l + 1);

	w = write_until_truncated(C_WRITES, 3, "c", 128, st.last, true, &total);

	node_start(f);
	wait_caught_up(f, 180000);
	status_must(f, &st);
	CHECK_MSG(st.copies >= 1, "node %d caught up without a checkpoint copy (copies %" PRIu64
		  ", replayed %" PRIu64 ")", f + 1, st.copies, st.replayed);
	wait_converged(60000);
	checksums_agree(NULL, 0, &pairs);
	CHECK_EQ_U64(pairs, total);
	check_present(w, f, 97);
	writer_free(w);
	cluster_down();
}

#define D_WRITES 20000

TEST(new_replica_catches_up)
{
	struct writer *w;
	struct status st;
	char line[512];
	uint64_t pairs, total, end, t0;
	int l;

	cluster_up("proc-add", 3, 200, 100, "shared");
	w = write_until_truncated(D_WRITES, 4, "d", 32, 0, false, &total);
	wait_converged(60000);

	node_start(3); /* no --bootstrap: joins empty */
	l = leader_must(0, 20 * ELECTION_MS);
	t0 = proc_now_ms();
	CHECK_MSG(proc_send(&C.n[l].p, 1000, "add 4 %s", C.n[3].addr) == 0, "send add");
	end = proc_now_ms() + 180000;
	for (;;) {
		char **r = &C.n[l].reply['A' - 'A'];
		if (*r != NULL) {
			snprintf(line, sizeof line, "%s", *r);
			free(*r);
			*r = NULL;
			break;
		}
		status_must(3, &st);
		CHECK_MSG(strcmp(st.role, "failed") != 0, "node 4 failed: %s", st.err);
		CHECK_MSG(proc_now_ms() < end, "add not done within 180 s: node 4 role %s applied %"
			  PRIu64, st.role, st.applied);
		CHECK_MSG(C.n[l].up && !C.n[l].p.eof, "leader %d exited", l + 1);
		pump(200);
	}
	test_note("add 4 answered after %" PRIu64 " ms: %s", proc_now_ms() - t0, line);
	CHECK_EQ_STR(line, "A ok");
	wait_caught_up(3, 120000);
	status_must(3, &st);
	CHECK_MSG(st.copies >= 1, "node 4 caught up without a checkpoint copy (copies %" PRIu64
		  ", replayed %" PRIu64 ")", st.copies, st.replayed);
	wait_converged(60000);
	checksums_agree(NULL, 0, &pairs);
	CHECK_EQ_U64(pairs, total);
	check_present(w, 3, 97);
	writer_free(w);
	cluster_down();
}

TEST_MAIN(T(kill_leader_mid_stream), T(kill_all_and_restart), T(follower_catches_up_by_copy),
	  T(new_replica_catches_up))
