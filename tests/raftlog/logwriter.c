/* logwriter: the child of test_crash.c, killed with SIGKILL at a random
 * moment. Opens the shared Raft log in DIR (small segments), starts
 * GROUPS groups the way raft_start does (drive.h: attach, load), raises the
 * term of a fifth of them (all on the first run) and votes, then appends to
 * every group without end, two appends in flight per group, 1..3 entries
 * of 16..1024 bytes each; every SNAP_EVERY entries it puts a snapshot at
 * the last acknowledged index with trailing TRAILING (so segments rotate and
 * go to the GC all the time); every 150..250 entries a group plays a
 * follower whose uncommitted tail a new leader overwrites: once its appends
 * have called back, a new term and vote, truncate(t) of up to its last 4
 * entries, and appends from t on in the new term. Groups 16..19 write
 * their first 40 entries and then stay idle: as the others fill segments,
 * the GC has to copy their live state forward.
 *
 *   logwriter DIR NETDIR SEED SEGMENT_BYTES
 *
 * Stdout, one line per fact, each written only once it is durable:
 *   T <group> <term> <vote>   set_term and set_vote returned 0 (a group whose
 *                             term was not raised appends in its old term)
 *   R                         every group started, appends begin
 *   A <group> <index> <crc>   an append's callback said 0 (crc32 of payload)
 *   S <group> <index>         a snapshot_put's callback said 0
 *   X <group> <index>         truncate(index) returned 0 (durable only with
 *                             the next append: until an A line at index
 *                             follows, the old entries may come back)
 * Each line is one write(2) of less than PIPE_BUF bytes: never torn. Entry
 * payloads are drive_payload(key, index, term, salt 0, len), so every entry
 * the parent loads can be checked, acknowledged or not. Exits 3 on anything
 * unexpected (message on stderr), and by itself after 60 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <raft.h>
#include <uv.h>

#include "docraft/error.h"
#include "drive.h"
#include "test.h"

#define GROUPS 20
#define INFLIGHT 2
#define SNAP_EVERY 300
#define TRAILING 50
#define IDLE_FROM 16    /* groups 16..19 write their first IDLE_ENTRIES, then idle */
#define IDLE_ENTRIES 40 /* (so the GC must copy them forward, crash or not) */

struct wgroup {
	struct drive_group g;
	raft_term term;
	raft_index next;  /* next index to submit */
	raft_index acked; /* highest acknowledged index */
	raft_index snapped;
	raft_index trunc_after; /* truncate once acked reaches this */
	bool truncating;        /* no new appends until the truncate */
	bool putting;
	struct drive_put put;
	struct drive_append a[INFLIGHT];
};

static struct wgroup groups[GROUPS];
static uv_loop_t loop;
static uint64_t rng;

static void say(const char *line, size_t len)
{
	if (write(STDOUT_FILENO, line, len) != (ssize_t)len)
		exit(3); /* the parent is gone */
}

static void submit(struct wgroup *w, struct drive_append *a);

static void appended(struct drive_append *a)
{
	struct wgroup *w = a->arg;
	char line[512];
	size_t len = 0;

	if (a->status != 0) {
		fprintf(stderr, "logwriter: %s append %llu: %d %s\n", w->g.name,
			(unsigned long long)a->first, a->status, a->errmsg);
		exit(3);
	}
	for (unsigned i = 0; i < a->n; i++)
		len += (size_t)snprintf(line + len, sizeof line - len, "A %d %llu %u\n",
					(int)(w - groups), (unsigned long long)(a->first + i),
					a->crc[i]);
	say(line, len);
	w->acked = a->first + a->n - 1;
	if (!w->truncating)
		submit(w, a);
}

/* New term and vote, truncate the last few entries, append again. Called
 * with no append of w in flight, outside any raftlog callback. */
static void overwrite_tail(struct wgroup *w)
{
	raft_index guard = w->putting ? w->put.snap.index : w->snapped;
	raft_index t = w->acked - (raft_index)(test_rand(&rng) % 5);
	char line[96];
	int i = (int)(w - groups), n;

	w->term++;
	if (w->g.x.io.set_term(&w->g.x.io, w->term) != 0 ||
	    w->g.x.io.set_vote(&w->g.x.io, 1 + (raft_id)(w->term % 3)) != 0) {
		fprintf(stderr, "logwriter: %s term/vote: %s\n", w->g.name, w->g.x.io.errmsg);
		exit(3);
	}
	n = snprintf(line, sizeof line, "T %d %llu %llu\n", i, (unsigned long long)w->term,
		     (unsigned long long)(1 + w->term % 3));
	say(line, (size_t)n);
	if (t > guard + 1 && t >= 2) {
		if (drive_truncate(&w->g, t) != 0) {
			fprintf(stderr, "logwriter: %s truncate %llu: %s\n", w->g.name,
				(unsigned long long)t, w->g.x.io.errmsg);
			exit(3);
		}
		n = snprintf(line, sizeof line, "X %d %llu\n", i, (unsigned long long)t);
		say(line, (size_t)n);
		w->next = t;
		w->acked = t - 1;
	}
	w->truncating = false;
	w->trunc_after = w->acked + 150 + (raft_index)(test_rand(&rng) % 100);
	for (int k = 0; k < INFLIGHT; k++)
		submit(w, &w->a[k]);
}

/* Once per loop turn: finished snapshots are reported, new ones started,
 * tails overwritten. */
static void turn_cb(uv_check_t *c)
{
	(void)c;
	for (int i = 0; i < GROUPS; i++) {
		struct wgroup *w = &groups[i];
		if (i >= IDLE_FROM)
			continue;
		if (!w->truncating && w->acked >= w->trunc_after)
			w->truncating = true;
		if (w->truncating && w->g.appends_in_flight == 0)
			overwrite_tail(w);
		if (w->putting && w->put.done) {
			char line[64];
			int n;
			if (w->put.status != 0) {
				fprintf(stderr, "logwriter: %s snapshot: %d\n", w->g.name,
					w->put.status);
				exit(3);
			}
			w->snapped = w->put.snap.index;
			drive_put_free(&w->put);
			w->putting = false;
			n = snprintf(line, sizeof line, "S %d %llu\n", i,
				     (unsigned long long)w->snapped);
			say(line, (size_t)n);
		}
		if (!w->putting && w->acked >= w->snapped + SNAP_EVERY) {
			struct drive_snap s;
			memset(&s, 0, sizeof s);
			s.index = w->acked;
			s.term = w->term;
			s.conf_index = 1;
			s.n_servers = 3;
			for (unsigned k = 0; k < 3; k++)
				s.ids[k] = k + 1;
			s.len = (size_t)snprintf((char *)s.data, sizeof s.data, "crash %d at %llu", i,
						 (unsigned long long)s.index);
			if (drive_snapshot_put(&w->g, &w->put, TRAILING, &s) != 0) {
				fprintf(stderr, "logwriter: %s snapshot_put refused: %s\n",
					w->g.name, w->g.x.io.errmsg);
				exit(3);
			}
			w->putting = true;
		}
	}
}

static void submit(struct wgroup *w, struct drive_append *a)
{
	struct drive_want want[3];
	unsigned n = 1 + (unsigned)(test_rand(&rng) % 3);

	if (w - groups >= IDLE_FROM && w->next > IDLE_ENTRIES)
		return;
	for (unsigned i = 0; i < n; i++) {
		want[i].term = w->term;
		want[i].type = w->next + i == 1 ? RAFT_CHANGE : RAFT_COMMAND;
		want[i].salt = 0;
		want[i].len = 16 + (uint32_t)(test_rand(&rng) % 1009);
	}
	a->then = appended;
	a->arg = w;
	if (drive_append(&w->g, a, w->next, want, n) != 0) {
		fprintf(stderr, "logwriter: %s append refused: %s\n", w->g.name, a->errmsg);
		exit(3);
	}
	w->next += n;
}

int main(int argc, char **argv)
{
	struct raftlog *l = NULL;
	struct raftlog_options o;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "", name[32], line[128];
	uv_check_t check;
	int n, seed;

	if (argc != 5) {
		fprintf(stderr, "usage: logwriter DIR NETDIR SEED SEGMENT_BYTES\n");
		return 2;
	}
	seed = (int)(strtoull(argv[3], NULL, 0) % 5);
	rng = strtoull(argv[3], NULL, 0) | 1;
	o.dir = argv[1];
	o.segment_bytes = strtoull(argv[4], NULL, 0);
	alarm(60);
	if (uv_loop_init(&loop) != 0 || raftlog_open(&loop, &o, &l, errmsg) != 0) {
		fprintf(stderr, "logwriter: open %s: %s\n", o.dir, errmsg);
		return 3;
	}
	for (int i = 0; i < GROUPS; i++) {
		struct wgroup *w = &groups[i];
		struct drive_state st;
		snprintf(name, sizeof name, "crash-%02d", i);
		if (drive_attach_storage(&w->g, &loop, l, name, argv[2], errmsg) != 0 ||
		    drive_load(&w->g, &st, errmsg) != 0) {
			fprintf(stderr, "logwriter: start %s: %s\n", name, errmsg);
			return 3;
		}
		w->next = st.start + st.n;
		w->acked = w->next - 1;
		w->snapped = st.has_snap ? st.snap.index : 0;
		w->trunc_after = w->acked + 1 + (raft_index)(test_rand(&rng) % 250);
		w->term = st.term;
		drive_state_free(&st);
		/* A new term (and vote) for a fifth of the groups per run, for all
		 * on the first: each is a synchronous durable write. */
		if (w->term != 0 && (i + seed) % 5 != 0)
			continue;
		w->term++;
		if (w->g.x.io.set_term(&w->g.x.io, w->term) != 0 ||
		    w->g.x.io.set_vote(&w->g.x.io, 1 + (raft_id)(w->term % 3)) != 0) {
			fprintf(stderr, "logwriter: %s term/vote: %s\n", name, w->g.x.io.errmsg);
			return 3;
		}
		n = snprintf(line, sizeof line, "T %d %llu %llu\n", i, (unsigned long long)w->term,
			     (unsigned long long)(1 + w->term % 3));
		say(line, (size_t)n);
	}
	say("R\n", 2);
	uv_check_init(&loop, &check);
	uv_check_start(&check, turn_cb);
	for (int i = 0; i < GROUPS; i++)
		for (int k = 0; k < INFLIGHT; k++)
			submit(&groups[i], &groups[i].a[k]);
	uv_run(&loop, UV_RUN_DEFAULT);
	fprintf(stderr, "logwriter: the loop ran out\n");
	return 3;
}
