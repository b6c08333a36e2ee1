/* Crash safety of the shared Raft log: a child (logwriter.c) appends to 20
 * groups on 64 KiB segments, snapshotting with a small trailing every 300
 * entries (rotation and GC all the time), and reports each durable fact on
 * a pipe; the parent SIGKILLs it at a random moment (5..200 ms after it
 * began appending, or 0..30 ms after its start, inside recovery, every
 * tenth round), reopens the log in-process and checks:
 *
 *   - every acknowledged entry is there with the same payload (crc), unless
 *     a snapshot the log holds lets it go (below index - trailing + 1);
 *   - each group's entries run contiguously from at most its first needed
 *     index to at least its last acknowledged one, and every entry the log
 *     returns, acknowledged or not, holds the payload the child wrote;
 *   - no group lost its term or vote, nor an acknowledged snapshot;
 *   - terms never go down along a group's log: the child also plays a
 *     follower whose tail a new leader overwrites (new term, truncate,
 *     appends), and a truncated tail must not come back after newer ones;
 *   - four groups that went idle after 40 entries keep them while the GC
 *     copies them forward and removes the segments they were in.
 *
 * Groups are attached without io.init (drive_attach_storage: raft_uv's
 * init costs ~25 ms a group in io_destroy; test_black covers init/close).
 * Rounds share one directory: each child recovers what the previous kill
 * left (and the parent's own recovery cut). RAFTLOG_CRASH_ROUNDS (default
 * 100) sets the count; the seed (TEST_SEED) and each delay are printed.
 * Suite raftlog-crash: real processes, not run under ASan. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <raft.h>
#include <uv.h>

#include "docraft/error.h"
#include "drive.h"
#include "loop.h"
#include "proc.h"
#include "raftlog/raftlog.h"
#include "test.h"

#define GROUPS 20
#define TRAILING 50
#define SEGMENT_BYTES (64u << 10)

static void fail_hook(const char *file, int line, const char *msg)
{
	test_fail(file, line, "%s", msg);
}

/* What the children acknowledged, per group. An acknowledged entry stays
 * required until a truncate at or below it (X): then it may be there or not
 * (the truncate is durable only with the next append), until acknowledged
 * again. */
enum { ACK_NONE, ACK_REQUIRED, ACK_TRUNCATED };
struct acked {
	raft_term term; /* highest term reported (T) */
	raft_id vote;   /* the vote reported with it */
	raft_index snap;
	raft_index last;
	size_t cap;
	uint32_t *crc;   /* by index */
	uint8_t *have;   /* by index: ACK_NONE, ACK_REQUIRED, ACK_TRUNCATED */
};

static struct acked acks[GROUPS];

static void ack_entry(int g, raft_index index, uint32_t crc)
{
	struct acked *a = &acks[g];
	if (index >= a->cap) {
		size_t cap = a->cap ? a->cap : 1024;
		while (cap <= index)
			cap *= 2;
		a->crc = realloc(a->crc, cap * sizeof *a->crc);
		a->have = realloc(a->have, cap * sizeof *a->have);
		CHECK(a->crc != NULL && a->have != NULL);
		memset(a->have + a->cap, 0, (cap - a->cap) * sizeof *a->have);
		a->cap = cap;
	}
	a->crc[index] = crc;
	a->have[index] = ACK_REQUIRED;
	if (index > a->last)
		a->last = index;
}

static void take_line(const char *line, unsigned *n_acks)
{
	int g;
	unsigned long long x, y;
	unsigned crc;

	if (strcmp(line, "R") == 0)
		return;
	if (sscanf(line, "A %d %llu %u", &g, &x, &crc) == 3) {
		CHECK(g >= 0 && g < GROUPS);
		ack_entry(g, x, crc);
		(*n_acks)++;
	} else if (sscanf(line, "T %d %llu %llu", &g, &x, &y) == 3) {
		CHECK(g >= 0 && g < GROUPS);
		CHECK_MSG(x > acks[g].term, "group %d: term %llu after %llu", g, x,
			  (unsigned long long)acks[g].term);
		acks[g].term = x;
		acks[g].vote = y;
	} else if (sscanf(line, "S %d %llu", &g, &x) == 2) {
		CHECK(g >= 0 && g < GROUPS);
		acks[g].snap = x;
	} else if (sscanf(line, "X %d %llu", &g, &x) == 2) {
		CHECK(g >= 0 && g < GROUPS && x >= 1);
		for (raft_index k = x; k < acks[g].cap; k++)
			if (acks[g].have[k] == ACK_REQUIRED)
				acks[g].have[k] = ACK_TRUNCATED;
		acks[g].last = x - 1;
	} else {
		CHECK_MSG(false, "logwriter said \"%s\"", line);
	}
}

/* Takes the child's lines for timeout_ms or until EOF. */
static void drain(struct proc *p, int timeout_ms, unsigned *n_acks)
{
	char line[256];
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	int rv;

	while (proc_now_ms() < end && (rv = proc_read_line(p, line, sizeof line, 20)) >= 0)
		if (rv == 1)
			take_line(line, n_acks);
}

static void check_group(uv_loop_t *loop, struct raftlog *l, const char *netdir, int i)
{
	static struct drive_group g;
	struct drive_state st;
	struct acked *a = &acks[i];
	char name[32], errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	raft_index needed = 1, last;

	snprintf(name, sizeof name, "crash-%02d", i);
	CHECK_OK_MSG(drive_attach_storage(&g, loop, l, name, netdir, errmsg), errmsg);
	CHECK_OK_MSG(drive_load(&g, &st, errmsg), errmsg);
	CHECK_MSG(st.term >= a->term, "%s: term %llu, %llu was acknowledged", name,
		  (unsigned long long)st.term, (unsigned long long)a->term);
	CHECK_MSG(st.term > a->term || st.vote == a->vote, "%s: term %llu vote %llu, want vote %llu",
		  name, (unsigned long long)st.term, (unsigned long long)st.vote,
		  (unsigned long long)a->vote);
	if (a->snap > 0)
		CHECK_MSG(st.has_snap && st.snap.index >= a->snap,
			  "%s: snapshot %llu acknowledged, the log has %llu", name,
			  (unsigned long long)a->snap,
			  (unsigned long long)(st.has_snap ? st.snap.index : 0));
	if (st.has_snap && st.snap.index > TRAILING)
		needed = st.snap.index - TRAILING + 1;
	last = st.start + st.n - 1;
	CHECK_MSG(st.start <= needed, "%s: entries start at %llu, snapshot %llu needs %llu", name,
		  (unsigned long long)st.start, (unsigned long long)st.snap.index,
		  (unsigned long long)needed);
	CHECK_MSG(a->last == 0 || (st.n > 0 && last >= a->last),
		  "%s: entries end at %llu (%zu of them), %llu was acknowledged", name,
		  (unsigned long long)last, st.n, (unsigned long long)a->last);
	for (raft_index k = needed; k <= a->last; k++) {
		const struct drive_entry *e;
		if (k >= a->cap || a->have[k] != ACK_REQUIRED)
			continue;
		e = drive_state_at(&st, k);
		CHECK_MSG(e != NULL, "%s: acknowledged entry %llu missing", name,
			  (unsigned long long)k);
		CHECK_MSG(drive_crc32(e->data, e->len) == a->crc[k],
			  "%s: acknowledged entry %llu has other bytes", name, (unsigned long long)k);
	}
	for (size_t k = 0; k < st.n; k++) {
		raft_index idx = st.start + k;
		struct drive_want w = {st.e[k].term, st.e[k].type, 0, st.e[k].len};
		CHECK_MSG(st.e[k].type == (idx == 1 ? RAFT_CHANGE : RAFT_COMMAND),
			  "%s: entry %llu has type %u", name, (unsigned long long)idx, st.e[k].type);
		CHECK_MSG(drive_entry_is(&st.e[k], g.key, idx, &w),
			  "%s: entry %llu (term %llu, %u bytes) is not what was written", name,
			  (unsigned long long)idx, (unsigned long long)st.e[k].term, st.e[k].len);
		/* A Raft log's terms never go down: an older entry after a newer
		 * one is a truncated tail come back. */
		CHECK_MSG(k == 0 || st.e[k].term >= st.e[k - 1].term,
			  "%s: entry %llu has term %llu after term %llu", name,
			  (unsigned long long)idx, (unsigned long long)st.e[k].term,
			  (unsigned long long)st.e[k - 1].term);
	}
	drive_state_free(&st);
	drive_detach(&g);
}

/* The oldest segment's sequence number in dir (0: none). */
static unsigned long long oldest_segment(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned long long min = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL) {
		unsigned long long v;
		if (strlen(de->d_name) == 20 && strcmp(de->d_name + 16, ".seg") == 0 &&
		    sscanf(de->d_name, "%16llu", &v) == 1 && (min == 0 || v < min))
			min = v;
	}
	closedir(d);
	return min;
}

static void on_signal(int sig)
{
	proc_die_of_signal(sig, NULL);
}

static void at_exit(void)
{
	proc_kill_all();
}

TEST(sigkill_rounds)
{
	char dir[256], logdir[320], netdir[320], exe[512], seedarg[32], segarg[32];
	const char *env = getenv("RAFTLOG_CRASH_ROUNDS");
	int rounds = env != NULL ? atoi(env) : 100;
	uint64_t seed = test_seed(), rng = seed;
	unsigned total_acks = 0, recovery_kills = 0;
	uv_loop_t loop;
	struct raftlog_stats st;

	drive_fail = fail_hook;
	proc_on_exit(at_exit, on_signal);
	CHECK_MSG(proc_find_exe(exe, sizeof exe, "RAFTLOG_LOGWRITER", "tests/raftlog/logwriter") ==
			  0,
		  "no logwriter at %s", exe);
	test_tmpdir_make(dir, "rl-crash");
	snprintf(logdir, sizeof logdir, "%s/log", dir);
	drive_netdir_make(netdir);
	snprintf(segarg, sizeof segarg, "%u", SEGMENT_BYTES);
	memset(acks, 0, sizeof acks);
	CHECK_OK(uv_loop_init(&loop));
	for (int r = 0; r < rounds; r++) {
		static struct proc p;
		char *argv[] = {exe, logdir, netdir, seedarg, segarg, NULL};
		char line[256];
		unsigned n_acks = 0;
		bool in_recovery = r % 10 == 9;
		int delay = in_recovery ? (int)(test_rand(&rng) % 31)
					: 5 + (int)(test_rand(&rng) % 196);
		struct raftlog_options o = {logdir, SEGMENT_BYTES};
		struct raftlog *l = NULL;
		char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
		int rv, status = 0;

		snprintf(seedarg, sizeof seedarg, "%llu", (unsigned long long)test_rand(&rng));
		CHECK(proc_spawn(&p, argv, NULL) == 0);
		if (!in_recovery) {
			do {
				rv = proc_read_line(&p, line, sizeof line, 20000);
				CHECK_MSG(rv == 1, "round %d: the child did not start (%d)", r, rv);
				take_line(line, &n_acks);
			} while (strcmp(line, "R") != 0);
		}
		drain(&p, delay, &n_acks);
		proc_signal(&p, SIGKILL);
		drain(&p, 10000, &n_acks);
		CHECK(proc_wait(&p, 10000, &status));
		CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "round %d: the child ended by itself (status %d)", r, status);
		total_acks += n_acks;
		if (in_recovery && n_acks == 0)
			recovery_kills++;

		rv = raftlog_open(&loop, &o, &l, errmsg);
		CHECK_MSG(rv == 0, "round %d (killed after %d ms): open: %d %s", r, delay, rv, errmsg);
		for (int i = 0; i < GROUPS; i++)
			check_group(&loop, l, netdir, i);
		raftlog_stats(l, &st);
		if (r % 10 == 0 || r == rounds - 1)
			test_note("round %d: killed %d ms %s, %u acks; %llu segments, %llu bytes, "
				  "%llu live",
				  r, delay, in_recovery ? "after start" : "into appending", n_acks,
				  (unsigned long long)st.segments, (unsigned long long)st.disk_bytes,
				  (unsigned long long)st.live_bytes);
		drive_close_log(&loop, l);
	}
	test_note("%d rounds, %u acknowledged entries checked as they came, %u kills before any "
		  "append; the oldest segment left is number %llu (the idle groups' first records "
		  "were in number 1)",
		  rounds, total_acks, recovery_kills, oldest_segment(logdir));
	for (int i = 0; i < GROUPS; i++) {
		free(acks[i].crc);
		free(acks[i].have);
	}
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
	test_tmpdir_remove(netdir);
}

TEST_MAIN(T(sigkill_rounds))
