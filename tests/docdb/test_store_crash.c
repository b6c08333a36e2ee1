/* Crash durability of the store (design.md, "Durability: one log, not two").
 *
 * A writer child applies Raft entries 1..N (flushing after chosen entries),
 * keeps applying more without flushing, and is SIGKILLed mid-stream; it never
 * closes the store. A verifier child then reopens the store, as a restarted
 * server would, and checks that it holds exactly the entries up to the last
 * flush, that store_applied names that entry, and that replaying the rest
 * from the "log" (regenerated here) restores everything while re-applying old
 * entries changes nothing.
 *
 * This process never opens RocksDB itself: RocksDB is not fork-safe once its
 * background threads exist, so both the writer and the verifier are forked
 * from a process that has not touched it. Every scenario is bounded in time;
 * the writer is always killed and reaped and the temp dir always removed. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "docdb/store.h"
#include "test.h"

#define BASE_US UINT64_C(1700000000000000)
#define PAIRS_PER_BATCH 5
#define EXTRA_BATCHES 40   /* applied after N, never flushed */
#define SCENARIO_SECONDS 120

struct scenario {
	uint64_t n;                /* entries whose fate is checked */
	const uint64_t *flush_at;  /* ascending, each <= n */
	size_t n_flush;
	size_t write_buffer_size;  /* 0: default (no automatic flush) */
	size_t pad;                /* extra value bytes per pair */
};

static uint64_t ht_of(uint64_t idx)
{
	return ht_make(BASE_US + idx * 1000, (uint32_t)(idx * 7 % 4096));
}

/* The flush point that must bound what survives: the last one. */
static uint64_t last_flush(const struct scenario *sc)
{
	return sc->n_flush ? sc->flush_at[sc->n_flush - 1] : 0;
}

/* Entry idx: keys "S<idx>-<j>" (j < 4) plus "Sshared" rewritten by every
 * entry, values "v<idx>-<j>-" followed by pad bytes derived from idx, j. */
static void make_batch(struct batch *b, uint64_t idx, size_t pad)
{
	char k[32];
	struct buf v = BUF_INIT;
	batch_reset(b);
	for (int j = 0; j < PAIRS_PER_BATCH; j++) {
		int kl = j < PAIRS_PER_BATCH - 1
				 ? snprintf(k, sizeof k, "S%06llu-%d", (unsigned long long)idx, j)
				 : snprintf(k, sizeof k, "Sshared");
		buf_reset(&v);
		buf_printf(&v, "v%llu-%d-", (unsigned long long)idx, j);
		for (size_t x = 0; x < pad; x++)
			buf_push(&v, (uint8_t)((idx * 131 + (uint64_t)j * 17 + x * 7) % 251));
		batch_put(b, k, (size_t)kl, v.data, v.len);
	}
	buf_free(&v);
}

/* ---- the writer (child) ---- */

enum { REC_APPLIED = 1, REC_FLUSHED, REC_ERROR };

struct record {
	uint32_t kind;
	uint32_t code;
	uint64_t idx;
};

static void report(int fd, uint32_t kind, uint32_t code, uint64_t idx)
{
	struct record r = {kind, code, idx};
	/* 16 bytes < PIPE_BUF: atomic. A dead parent ends us via SIGPIPE. */
	if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(3);
}

static bool is_flush_point(const struct scenario *sc, uint64_t idx)
{
	for (size_t i = 0; i < sc->n_flush; i++)
		if (sc->flush_at[i] == idx)
			return true;
	return false;
}

static void open_opts(const struct scenario *sc, struct store_options *o)
{
	store_options_default(o);
	o->write_buffer_size = sc->write_buffer_size;
}

static _Noreturn void writer(const struct scenario *sc, const char *path, int out)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_options o;
	struct store *s;
	struct batch b;
	int rv;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(SCENARIO_SECONDS + 30); /* backstop if nobody kills us */
	open_opts(sc, &o);
	if ((rv = store_open(path, &o, &s, errmsg)) != 0) {
		report(out, REC_ERROR, (uint32_t)rv, 0);
		_exit(1);
	}
	batch_init(&b);
	for (uint64_t idx = 1; idx <= sc->n + EXTRA_BATCHES; idx++) {
		make_batch(&b, idx, sc->pad);
		rv = store_apply(s, b.data.data, b.data.len, ht_of(idx), idx, errmsg);
		if (rv != 0) {
			report(out, REC_ERROR, (uint32_t)rv, idx);
			_exit(1);
		}
		report(out, REC_APPLIED, 0, idx);
		if (is_flush_point(sc, idx)) {
			if ((rv = store_flush(s, errmsg)) != 0) {
				report(out, REC_ERROR, (uint32_t)rv, idx);
				_exit(1);
			}
			report(out, REC_FLUSHED, 0, idx);
		}
	}
	/* Never store_close: wait for the SIGKILL. */
	for (;;)
		pause();
}

/* ---- the verifier (child) ---- */

struct kv {
	struct buf k;
	struct buf v;
};

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	size_t n = x->k.len < y->k.len ? x->k.len : y->k.len;
	int c = memcmp(x->k.data, y->k.data, n);
	if (c != 0)
		return c;
	return x->k.len < y->k.len ? -1 : x->k.len > y->k.len;
}

struct verifier {
	const struct scenario *sc;
	struct store *s;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char fail[1024];
	struct kv *want;
	size_t n_want;
};

#define EXPECT(v, c, ...)                                                     \
	do {                                                                  \
		if (!(c)) {                                                   \
			int n_ = snprintf((v)->fail, sizeof (v)->fail, "line %d: ", __LINE__); \
			snprintf((v)->fail + n_, sizeof (v)->fail - (size_t)n_, __VA_ARGS__); \
			return -1;                                            \
		}                                                             \
	} while (0)

static void want_free(struct verifier *v)
{
	for (size_t i = 0; i < v->n_want; i++) {
		buf_free(&v->want[i].k);
		buf_free(&v->want[i].v);
	}
	free(v->want);
	v->want = NULL;
	v->n_want = 0;
}

/* The exact stored contents after entries 1..upto: every pair, suffixed. */
static void want_build(struct verifier *v, uint64_t upto)
{
	struct batch b;
	struct batch_iter it;
	const uint8_t *k, *val;
	size_t kl, vl, i = 0;
	want_free(v);
	v->want = calloc(upto * PAIRS_PER_BATCH + 1, sizeof *v->want);
	if (v->want == NULL)
		abort();
	batch_init(&b);
	for (uint64_t idx = 1; idx <= upto; idx++) {
		make_batch(&b, idx, v->sc->pad);
		batch_iter_init(&it, b.data.data, b.data.len);
		for (uint32_t wid = 0; batch_next(&it, &k, &kl, &val, &vl) == 1; wid++, i++) {
			struct kv *e = &v->want[i];
			buf_init(&e->k);
			buf_init(&e->v);
			buf_append(&e->k, k, kl);
			buf_push(&e->k, KT_HYBRID_TIME);
			docht_append(&e->k, (struct docht){.ht = ht_of(idx), .write_id = wid});
			buf_append(&e->v, val, vl);
		}
	}
	batch_free(&b);
	v->n_want = i;
	qsort(v->want, v->n_want, sizeof *v->want, kv_cmp);
}

/* The store, from '!' on, is exactly v->want; the marker is the only record
 * below '!' (or there is none, for a store with nothing applied). */
static int check_contents(struct verifier *v, bool marker)
{
	struct store_iter *it = store_iter_new(v->s, NULL, 0, NULL, 0);
	size_t i = 0, internal = 0;
	int rv;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *val = store_iter_value(it, &vl);
		if (kl > 0 && k[0] <= KT_INTERNAL_MAX) {
			internal++;
			continue;
		}
		if (i >= v->n_want || kl != v->want[i].k.len ||
		    memcmp(k, v->want[i].k.data, kl) != 0) {
			store_iter_free(it);
			EXPECT(v, false, "stored key %zu (%.*s...) is not the expected one (of %zu)", i,
			       (int)(kl < 14 ? kl : 14), (const char *)k, v->n_want);
		}
		if (vl != v->want[i].v.len || memcmp(val, v->want[i].v.data, vl) != 0) {
			store_iter_free(it);
			EXPECT(v, false, "value of key %zu (%.*s...) differs", i,
			       (int)(kl < 14 ? kl : 14), (const char *)k);
		}
		i++;
	}
	rv = store_iter_status(it, v->errmsg);
	store_iter_free(it);
	EXPECT(v, rv == 0, "iteration: %s", v->errmsg);
	EXPECT(v, i == v->n_want, "%zu stored pairs, want %zu", i, v->n_want);
	EXPECT(v, internal == (marker ? 1u : 0u), "%zu internal records", internal);
	return 0;
}

/* No key of entry idx is stored (explicit, on top of check_contents). */
static int check_absent(struct verifier *v, uint64_t idx)
{
	char prefix[32];
	int n = snprintf(prefix, sizeof prefix, "S%06llu-", (unsigned long long)idx);
	struct store_iter *it = store_iter_new(v->s, prefix, (size_t)n, NULL, 0);
	bool found = false;
	store_iter_seek_first(it);
	if (store_iter_valid(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		found = kl >= (size_t)n && memcmp(k, prefix, (size_t)n) == 0;
	}
	store_iter_free(it);
	EXPECT(v, !found, "a key of unflushed entry %llu survived the crash",
	       (unsigned long long)idx);
	return 0;
}

static int apply_range(struct verifier *v, uint64_t from, uint64_t to)
{
	struct batch b;
	int rv = 0;
	batch_init(&b);
	for (uint64_t idx = from; idx <= to && rv == 0; idx++) {
		make_batch(&b, idx, v->sc->pad);
		rv = store_apply(v->s, b.data.data, b.data.len, ht_of(idx), idx, v->errmsg);
	}
	batch_free(&b);
	EXPECT(v, rv == 0, "apply: %s", v->errmsg);
	return 0;
}

static int verify(struct verifier *v, const char *path, uint64_t last_applied)
{
	const struct scenario *sc = v->sc;
	struct store_options o;
	uint64_t k = last_flush(sc), end, idx, ht;
	int rv;

	open_opts(sc, &o);
	rv = store_open(path, &o, &v->s, v->errmsg);
	EXPECT(v, rv == 0, "reopen: %s", v->errmsg);
	store_applied(v->s, &idx, &ht);
	if (sc->write_buffer_size == 0) {
		EXPECT(v, idx == k, "applied index %llu after the crash, want %llu",
		       (unsigned long long)idx, (unsigned long long)k);
	} else {
		/* Memtables also flush on their own: some entry from the last
		 * explicit flush on. */
		EXPECT(v, idx >= k && idx <= last_applied,
		       "applied index %llu after the crash, want %llu..%llu",
		       (unsigned long long)idx, (unsigned long long)k,
		       (unsigned long long)last_applied);
		test_note("auto-flush: %llu of %llu entries survived", (unsigned long long)idx,
			  (unsigned long long)last_applied);
		k = idx;
	}
	EXPECT(v, ht == (k ? ht_of(k) : 0), "applied ht %llu, want %llu",
	       (unsigned long long)ht, (unsigned long long)(k ? ht_of(k) : 0));

	/* Exactly entries 1..k. */
	want_build(v, k);
	if (check_contents(v, k > 0) != 0)
		return -1;
	for (idx = k + 1; idx <= last_applied; idx++)
		if (check_absent(v, idx) != 0)
			return -1;

	/* Replay k+1..n from the "log": everything is back. (Automatic
	 * flushes may have persisted entries past n: then there is nothing to
	 * replay and the end is k.) */
	end = k > sc->n ? k : sc->n;
	if (apply_range(v, k + 1, end) != 0)
		return -1;
	store_applied(v->s, &idx, &ht);
	EXPECT(v, idx == end && ht == (end ? ht_of(end) : 0), "applied %llu after replay, want %llu",
	       (unsigned long long)idx, (unsigned long long)end);
	want_build(v, end);
	if (check_contents(v, end > 0) != 0)
		return -1;

	/* Re-applying 1..end (what a restart from an older log start would do)
	 * is skipped: same pairs, same count. */
	if (apply_range(v, 1, end) != 0)
		return -1;
	if (check_contents(v, end > 0) != 0)
		return -1;
	store_applied(v->s, &idx, NULL);
	EXPECT(v, idx == end, "applied %llu after re-apply", (unsigned long long)idx);

	/* And the replayed state is durable once flushed. */
	EXPECT(v, store_flush(v->s, v->errmsg) == 0, "flush: %s", v->errmsg);
	store_close(v->s);
	v->s = NULL;
	EXPECT(v, store_open(path, &o, &v->s, v->errmsg) == 0, "reopen: %s", v->errmsg);
	if (check_contents(v, end > 0) != 0)
		return -1;
	return 0;
}

static _Noreturn void verifier(const struct scenario *sc, const char *path,
			       uint64_t last_applied, int out)
{
	struct verifier v = {.sc = sc};
	int rv;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(SCENARIO_SECONDS + 30);
	rv = verify(&v, path, last_applied);
	store_close(v.s);
	want_free(&v);
	if (rv != 0 && write(out, v.fail, strlen(v.fail)) < 0)
		_exit(3);
	close(out);
	exit(rv == 0 ? 0 : 1); /* exit, not _exit: LSan checks the verifier */
}

/* ---- the parent ---- */

/* Waits for pid up to deadline, then SIGKILLs it; always reaps it. */
static int reap(pid_t pid, time_t deadline)
{
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return status;
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return status;
		}
		usleep(5000);
	}
}

/* Reads one record within the deadline: 1 read, 0 EOF, -1 timeout/error. */
static int read_record(int fd, struct record *r, time_t deadline)
{
	size_t got = 0;
	while (got < sizeof *r) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		time_t left = deadline - time(NULL);
		ssize_t n;
		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)(left * 1000)) <= 0)
			continue;
		n = read(fd, (char *)r + got, sizeof *r - got);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	return 1;
}

static void fmt(char *fail, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *fail, size_t size, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(fail, size, f, ap);
	va_end(ap);
}

/* Runs one scenario; 0, or -1 with a reason in fail. Never leaves a child
 * or the temp dir behind. */
static int run(const struct scenario *sc, char *fail, size_t size)
{
	char dir[256], path[300];
	int fds[2];
	pid_t pid;
	time_t deadline = time(NULL) + SCENARIO_SECONDS;
	struct record r;
	uint64_t last_applied = 0, flushes = 0;
	int rv = -1, status;
	ssize_t n;

	test_tmpdir_make(dir, "crash");
	snprintf(path, sizeof path, "%s/db", dir);

	/* 1. The writer, killed once it is past entry n (so all of 1..n and
	 *    every flush point are behind it) and still writing. */
	if (pipe(fds) != 0) {
		fmt(fail, size, "pipe: %s", strerror(errno));
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fmt(fail, size, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		writer(sc, path, fds[1]);
	}
	close(fds[1]);
	for (;;) {
		int got = read_record(fds[0], &r, deadline);
		if (got <= 0) {
			fmt(fail, size, "writer %s after entry %llu",
			    got == 0 ? "died" : "timed out", (unsigned long long)last_applied);
			break;
		}
		if (r.kind == REC_ERROR) {
			fmt(fail, size, "writer failed at entry %llu: %s", (unsigned long long)r.idx,
			    docraft_strerror((int)r.code));
			break;
		}
		if (r.kind == REC_FLUSHED) {
			if (flushes >= sc->n_flush || sc->flush_at[flushes] != r.idx) {
				fmt(fail, size, "unexpected flush at %llu", (unsigned long long)r.idx);
				break;
			}
			flushes++;
			continue;
		}
		last_applied = r.idx;
		if (last_applied > sc->n) {
			rv = 0;
			break;
		}
	}
	kill(pid, SIGKILL);
	status = reap(pid, deadline + 5);
	/* What it reported before the kill landed. */
	while (rv == 0 && (n = read(fds[0], &r, sizeof r)) == (ssize_t)sizeof r)
		if (r.kind == REC_APPLIED)
			last_applied = r.idx;
	close(fds[0]);
	if (rv != 0)
		goto out;
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		fmt(fail, size, "writer ended with status %d before the kill", status);
		rv = -1;
		goto out;
	}
	if (flushes != sc->n_flush) {
		fmt(fail, size, "%llu flushes reported, want %zu", (unsigned long long)flushes,
		    sc->n_flush);
		rv = -1;
		goto out;
	}

	/* 2. The verifier: a fresh process reopening the store. */
	rv = -1;
	if (pipe(fds) != 0) {
		fmt(fail, size, "pipe: %s", strerror(errno));
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fmt(fail, size, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		verifier(sc, path, last_applied, fds[1]);
	}
	close(fds[1]);
	status = reap(pid, deadline);
	n = read(fds[0], fail, size - 1);
	fail[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rv = 0;
	} else if (fail[0] == '\0') {
		fmt(fail, size, "verifier ended with status %d (exit %d, signal %d)", status,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	if (rv == 0)
		test_note("killed after entry %llu; flushed up to %llu; verified",
			  (unsigned long long)last_applied, (unsigned long long)last_flush(sc));
out:
	test_tmpdir_remove(dir);
	return rv;
}

static void run_check(const struct scenario *sc)
{
	char fail[1024] = "";
	int rv = run(sc, fail, sizeof fail);
	CHECK_MSG(rv == 0, "%s", fail);
}

TEST(flush_once)
{
	static const uint64_t at[] = {37};
	struct scenario sc = {.n = 60, .flush_at = at, .n_flush = 1};
	run_check(&sc);
}

TEST(flush_several_times)
{
	static const uint64_t at[] = {5, 6, 20, 37, 44};
	struct scenario sc = {.n = 60, .flush_at = at, .n_flush = 5, .pad = 100};
	run_check(&sc);
}

TEST(never_flushed)
{
	struct scenario sc = {.n = 30};
	run_check(&sc);
}

TEST(flush_first_entry)
{
	static const uint64_t at[] = {1};
	struct scenario sc = {.n = 25, .flush_at = at, .n_flush = 1};
	run_check(&sc);
}

TEST(flush_last_entry)
{
	static const uint64_t at[] = {12, 50};
	struct scenario sc = {.n = 50, .flush_at = at, .n_flush = 2};
	run_check(&sc);
}

/* Small memtables flush on their own: whatever survives is still a prefix
 * 1..applied of the entries, never a torn one. */
TEST(automatic_flushes)
{
	static const uint64_t at[] = {40};
	struct scenario sc = {.n = 300, .flush_at = at, .n_flush = 1,
			      .write_buffer_size = 64 * 1024, .pad = 1500};
	run_check(&sc);
}

TEST_MAIN(T(flush_once), T(flush_several_times), T(never_flushed), T(flush_first_entry),
	  T(flush_last_entry), T(automatic_flushes))
