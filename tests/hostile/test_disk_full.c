/* Disk full (issue 12): tserver 1's data directory is a 64 MiB tmpfs in a
 * mount namespace of its own (unshare -m; the test reaches its files through
 * /proc/<pid>/root). A master and three tservers on 127.0.0.1..3, a table of
 * 3 tablets with 3 replicas each, so tserver 1 hosts a replica of every
 * tablet (and leads some).
 *
 *   1. tserver 1 starts with a directory without meta.pb under tablets/: it
 *      is moved aside to tablets.orphan/, never deleted.
 *   2. Rows are written; then a ballast file fills tserver 1's file system.
 *      Writes go on: each is answered (success, or the client's retryable
 *      give-up, never a final error), tserver 1's replicas fail (its Raft
 *      log or RocksDB cannot write; a leader steps down) and the cluster
 *      keeps acknowledging writes through the other two.
 *      Two cases: RocksDB meets the full disk first (a flush fails, then the
 *      apply), or the Raft log does (a segment cannot be allocated).
 *   3. The ballast is removed: without a restart, tserver 1's replicas
 *      recover (reopen the store, restart raft, catch up) until every
 *      replica of every tablet has the same checksum; every acknowledged row
 *      reads back; every process is still up and stops cleanly.
 *
 * reopen_after_full_start: tserver 1 is restarted on a full file system
 * (its data copied onto a tmpfs mounted in this test's own mount namespace,
 * unshare(2), so the tmpfs outlives tserver 1's processes): its replicas
 * cannot be opened (RocksDB cannot write its new MANIFEST); once the
 * ballast is removed they reopen by themselves (tablet manager's reopen),
 * without another restart, and catch up.
 *
 * Needs root (mount namespaces): otherwise the test is skipped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "docraft/docraft.h"
#include "proc.h"
#include "test.h"

#include "cluster.h"

#define TMPFS_SIZE "64m"
#define RESERVE_MB "16" /* --min-free-disk-mb; the floor: 2 shared log segments (3
			 * raft_uv ones with --raft-log per-tablet) of 1 MiB */
#define NROWS_MAX 20000
#define VALUE_LEN 8192
#define FULL_WRITES_MS 40000   /* bound of the writes on a full disk */
#define AFTER_FAILURE_ACKS 100 /* acknowledged writes wanted after a failure */
#define RECOVER_MS 60000       /* bound of the recovery once space is back */

static char small[280];   /* tserver 1's data directory (the tmpfs) */
static char via_proc[480]; /* the same seen from here: /proc/<pid>/root/... */
static unsigned char acked[NROWS_MAX];

/* Starts tserver 1 again with its data on the tmpfs, which holds its uuid and
 * a directory without meta.pb. */
static void tserver1_on_tmpfs(void)
{
	struct server *s = &C.t[0];
	const char *script =
		"mount -t tmpfs -o size=" TMPFS_SIZE " docraft-disk-full \"$1\" && "
		"cp \"$2/uuid\" \"$1/uuid\" && mkdir -p \"$1/tablets/orphan-1\" && "
		"echo keep > \"$1/tablets/orphan-1/data\" && shift 2 && exec \"$@\"";
	char line[512];
	char *argv[32] = {"/usr/bin/unshare", "-m", "--propagation", "private", "sh", "-c",
			  (char *)script, "sh", small, s->dir, C.tserver_exe, "--address", s->addr,
			  "--data", small, "--masters", C.maddr, NULL};
	int n = 17, st = 0;
	for (int i = 0; C.tserver_args[i] != NULL; i++)
		argv[n++] = (char *)C.tserver_args[i];
	proc_signal(&s->p, SIGTERM);
	CHECK_MSG(proc_wait(&s->p, 15000, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "tserver 1 did not stop cleanly (%d)", st);
	snprintf(small, sizeof small, "%s/ts1-small", C.base);
	CHECK(mkdir(small, 0755) == 0);
	CHECK_MSG(proc_spawn(&s->p, argv, s->log) == 0, "spawn: %s", strerror(errno));
	int rv = proc_read_line(&s->p, line, sizeof line, 15000);
	CHECK_MSG(rv == 1 && strstr(line, " listening on ") != NULL,
		  "tserver 1 on the tmpfs did not start (%d): %s", rv, rv == 1 ? line : "");
	snprintf(via_proc, sizeof via_proc, "/proc/%d/root%s", (int)s->p.pid, small);
}

static int log_count(const char *path, const char *needle)
{
	static char text[1 << 22];
	FILE *f = fopen(path, "r");
	size_t n;
	if (f == NULL)
		return 0;
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	return count_substr(text, needle);
}

/* Notes tserver 1's log lines about failures and recoveries. */
static void note_failures(void)
{
	static const char *const words[] = {"failed", "recover", "open", "steps down", "became leader",
					    "lost leadership", "assert", "abort"};
	char line[1024];
	int n = 0;
	FILE *f = fopen(C.t[0].log, "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL && n < 40)
		for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
			if (strstr(line, words[i]) != NULL) {
				line[strcspn(line, "\n")] = '\0';
				test_note("ts1: %s", line);
				n++;
				break;
			}
	fclose(f);
}

/* For wait_for: `docraft checksum disk` exits 0 (the replicas agree). */
static bool checksums_agree(void *unused)
{
	(void)unused;
	return CLI(20000, "checksum", "disk") == 0;
}

/* For wait_for: the replicas agree and tserver 1 logged a recovery. */
static bool recovered_and_agree(void *unused)
{
	return checksums_agree(unused) && log_count(C.t[0].log, "recovered after") > 0;
}

/* Step 1: the directory without meta.pb is in tablets.orphan/, whole. */
static void check_orphan_moved(void)
{
	char path[1024], got[16] = "";
	struct dirent *e;
	bool found = false;
	snprintf(path, sizeof path, "%s/tablets/orphan-1", via_proc);
	CHECK_MSG(access(path, F_OK) != 0, "%s is still there", path);
	snprintf(path, sizeof path, "%s/tablets.orphan", via_proc);
	DIR *d = opendir(path);
	CHECK_MSG(d != NULL, "%s: %s", path, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "orphan-1.", 9) == 0) {
			snprintf(path, sizeof path, "%s/tablets.orphan/%s/data", via_proc, e->d_name);
			found = true;
		}
	closedir(d);
	CHECK_MSG(found, "no tablets.orphan/orphan-1.<time>");
	FILE *f = fopen(path, "r");
	CHECK_MSG(f != NULL, "%s: %s", path, strerror(errno));
	CHECK(fgets(got, sizeof got, f) != NULL);
	fclose(f);
	CHECK_EQ_STR(got, "keep\n");
	CHECK_MSG(log_count(C.t[0].log, "moved aside to") == 1, "no log line for the orphan");
}

/* Free bytes of tserver 1's file system. */
static uint64_t free_bytes(void)
{
	struct statvfs st;
	CHECK_MSG(statvfs(via_proc, &st) == 0, "statvfs %s: %s", via_proc, strerror(errno));
	return (uint64_t)st.f_bavail * st.f_bsize;
}

/* Writes a ballast file until the tmpfs has only `leave` bytes free (0: until
 * it is full); returns its size. */
static size_t fill_disk(uint64_t leave)
{
	static char chunk[1 << 16];
	char path[600];
	size_t total = 0;
	uint64_t want = leave == 0 ? UINT64_MAX : free_bytes() - leave;
	snprintf(path, sizeof path, "%s/ballast", via_proc);
	memset(chunk, 0xba, sizeof chunk);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
	while (total < want) {
		size_t n = want - total < sizeof chunk ? (size_t)(want - total) : sizeof chunk;
		ssize_t w = write(fd, chunk, n);
		if (w <= 0) {
			CHECK_MSG(w < 0 && errno == ENOSPC, "ballast: %s", strerror(errno));
			break;
		}
		total += (size_t)w;
	}
	close(fd);
	return total;
}

static void value_of(int k, char *out)
{
	int n = snprintf(out, VALUE_LEN + 1, "row %d:", k);
	for (int i = n; i < VALUE_LEN; i++)
		out[i] = (char)('a' + (k + i) % 26);
	out[VALUE_LEN] = '\0';
}

/* One write of row k: 0, or the client's code. */
static int write_row(int k)
{
	static char v[VALUE_LEN + 1];
	docraft_op *op = NULL;
	docraft_value key = docraft_value_int(k);
	value_of(k, v);
	docraft_value val = docraft_value_text(v);
	CHECK_OK(docraft_op_insert(&key, 1, &op));
	CHECK_OK(docraft_op_column(op, "v", &val));
	int rv = docraft_write(C.client, "disk", &op, 1, DOCRAFT_TTL_DEFAULT, NULL);
	docraft_op_free(op);
	return rv;
}

static void check_row(int k)
{
	static char want[VALUE_LEN + 1];
	docraft_result *r = NULL;
	docraft_value key = docraft_value_int(k);
	value_of(k, want);
	int rv = docraft_get(C.client, "disk", &key, 1, 0, &r);
	CHECK_MSG(rv == 0, "get of acknowledged row %d: %d %s", k, rv, docraft_errmsg());
	CHECK_MSG(docraft_result_nrows(r) == 1, "acknowledged row %d is lost", k);
	docraft_value v = docraft_result_value(r, 0, (size_t)docraft_result_column_index(r, "v"));
	CHECK_MSG(v.type == DOCRAFT_TYPE_TEXT && v.v.s.len == VALUE_LEN &&
			  memcmp(v.v.s.p, want, VALUE_LEN) == 0,
		  "acknowledged row %d has another value", k);
	docraft_result_free(r);
}

static void check_all_up(void)
{
	int st;
	CHECK_MSG(!proc_wait(&C.m.p, 0, &st), "the master exited (status %d)", st);
	for (int k = 0; k < NT; k++)
		CHECK_MSG(!proc_wait(&C.t[k].p, 0, &st), "tserver %d exited (status %d)", k + 1, st);
}

/* The cluster, tserver 1 on the tmpfs with a reserve of RESERVE_MB, a client
 * giving up after timeout_ms and table "disk" of ntablets tablets. */
static void setup(const char *memstore_mb, int timeout_ms, int ntablets)
{
	struct tablet t[8];
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;

	C.tserver_args[0] = "--raft-segment-mb";
	C.tserver_args[1] = "1";
	C.tserver_args[2] = "--memstore-mb"; /* flushes early: RocksDB meets the full disk */
	C.tserver_args[3] = memstore_mb;
	C.tserver_args[4] = "--min-free-disk-mb";
	C.tserver_args[5] = RESERVE_MB;
	C.tserver_args[6] = "--raft-log-segment-mb";
	C.tserver_args[7] = "1";
	C.tserver_args[8] = NULL;
	cluster_up("disk-full");
	tserver1_on_tmpfs();
	check_orphan_moved();

	docraft_client_options_init(&o);
	o.timeout_ms = timeout_ms;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	docraft_table_options to = {.num_tablets = ntablets, .replication_factor = 3};
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE disk (k int PRIMARY KEY, v text);", &to),
		     docraft_errmsg());
	tablets_with_leaders("disk", t, 8, ntablets, 20000);
}

static void disk_full_then_freed(const char *memstore_mb)
{
	int k = 0, errors = 0, acks_after = 0, nacked = 0, rv;

	setup(memstore_mb, 15000, 3);
	for (; k < 50; k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}

	size_t ballast = fill_disk(0);
	test_note("ballast: %zu MiB; tserver 1's file system is full", ballast >> 20);
	uint64_t end = proc_now_ms() + FULL_WRITES_MS;
	for (; k < NROWS_MAX && proc_now_ms() < end && acks_after < AFTER_FAILURE_ACKS; k++) {
		rv = write_row(k);
		/* Answered: done, or the client's retryable give-up. A final
		 * error (ENOSPC, EIO) for a write that may still commit is
		 * what must never come back. */
		CHECK_MSG(rv == 0 || rv == DOCRAFT_EUNAVAILABLE, "row %d: final error %d: %s", k,
			  rv, docraft_errmsg());
		if (rv == 0)
			acked[k] = 1;
		else
			errors++;
		if (rv == 0 && (acks_after > 0 || log_count(C.t[0].log, "replica failed") > 0))
			acks_after++;
	}
	test_note("%d writes on a full disk: %d retryable errors; %d failures and %d step-downs "
		  "in tserver 1's log", k - 50, errors, log_count(C.t[0].log, "replica failed"),
		  log_count(C.t[0].log, "leader steps down"));
	CHECK_MSG(log_count(C.t[0].log, "replica failed") > 0,
		  "no replica of tserver 1 failed in %d writes", k - 50);
	CHECK_MSG(acks_after >= AFTER_FAILURE_ACKS, "the cluster stopped acknowledging writes");
	check_all_up();

	/* Space back: tserver 1 recovers by itself. */
	char path[600];
	snprintf(path, sizeof path, "%s/ballast", via_proc);
	CHECK_MSG(unlink(path) == 0, "%s: %s", path, strerror(errno));
	int last = k;
	for (int i = 0; i < 20; i++, k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}
	if (!wait_for(recovered_and_agree, NULL, RECOVER_MS)) {
		note_failures();
		CHECK_MSG(false, "tserver 1 did not recover in %d ms:\n%s", RECOVER_MS, C.out);
	}
	note_failures();
	test_note("recovered: %d recoveries in tserver 1's log; checksums agree",
		  log_count(C.t[0].log, "recovered after"));
	for (int i = 0; i < k; i++)
		if (acked[i]) {
			check_row(i);
			nacked++;
		}
	test_note("%d acknowledged rows read back (%d written after the space came back)", nacked,
		  k - last);
	check_all_up();
	cluster_down();
	memset(acked, 0, sizeof acked);
}

/* A 2 MiB memtable budget: RocksDB flushes soon and meets the full disk
 * first (the apply fails). */
TEST(store_fills_first)
{
	disk_full_then_freed("2");
}

/* 64 MiB: memtables hold everything, the Raft log would meet the full disk
 * first. Without the reserve, C-Raft 0.15 crashed here about one run in
 * three (docs/replication.md, "A full disk"); below the floor tserver 1's
 * replicas now stop before raft_uv allocates a segment on the full disk. */
TEST(log_fills_first)
{
	disk_full_then_freed("64");
}

/* Free space between the floor and the reserve on tserver 1, which leads the
 * table's one tablet: writes are refused with the clear retryable message,
 * the replica neither fails nor loses its leadership, and writes are accepted
 * again once space is freed. */
TEST(reserve_refuses_writes)
{
	struct tablet t[2];
	char want[128], path[600];
	int k = 0, rv;
	uint64_t end;

	setup("64", 3000, 1);
	for (end = proc_now_ms() + 60000;; sleep_ms(500)) {
		CHECK_EQ_INT(tablets_with_leaders("disk", t, 2, 1, 20000), 1);
		if (strcmp(t[0].leader, C.t[0].addr) == 0)
			break;
		CHECK_MSG(proc_now_ms() < end, "tserver 1 does not lead the tablet");
		/* to tserver 1 by name: C-Raft's own pick of "any up-to-date
		 * voter" goes by configuration order and can bounce between
		 * the other two forever */
		CHECK_EQ_INT(CLI(10000, "step-down", t[0].id, C.t[0].addr), 0);
	}
	for (; k < 20; k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}
	size_t ballast = fill_disk(10u << 20); /* 10 MiB free: reserve 16, floor 3 */
	test_note("ballast: %zu MiB; %llu MiB free", ballast >> 20,
		  (unsigned long long)(free_bytes() >> 20));
	/* Refused within a refresh of the reserve (bounded wait). */
	snprintf(want, sizeof want, "disk almost full on %s", C.t[0].addr);
	for (end = proc_now_ms() + 10000;; k++) {
		rv = write_row(k);
		if (rv == 0) {
			acked[k] = 1;
			CHECK_MSG(proc_now_ms() < end, "writes still accepted below the reserve");
			continue;
		}
		CHECK_MSG(rv == DOCRAFT_EUNAVAILABLE && strstr(docraft_errmsg(), want) != NULL,
			  "row %d: %d %s (wanted the retryable '%s')", k, rv, docraft_errmsg(), want);
		break;
	}
	test_note("refused: %s", docraft_errmsg());
	for (int i = 0; i < 3; i++, k++) {
		rv = write_row(k);
		CHECK_MSG(rv == DOCRAFT_EUNAVAILABLE && strstr(docraft_errmsg(), want) != NULL,
			  "row %d: %d %s", k, rv, docraft_errmsg());
	}
	CHECK_MSG(log_count(C.t[0].log, "replica failed") == 0, "a replica of tserver 1 failed");
	CHECK_EQ_INT(tablets_with_leaders("disk", t, 2, 1, 20000), 1);
	CHECK_EQ_STR(t[0].leader, C.t[0].addr);
	check_all_up();

	snprintf(path, sizeof path, "%s/ballast", via_proc);
	CHECK_MSG(unlink(path) == 0, "%s: %s", path, strerror(errno));
	for (end = proc_now_ms() + 10000; (rv = write_row(k)) != 0; sleep_ms(200))
		CHECK_MSG(proc_now_ms() < end, "writes still refused after the space came back: "
			  "%d %s", rv, docraft_errmsg());
	acked[k++] = 1;
	for (int i = 0; i < k; i++)
		if (acked[i])
			check_row(i);
	check_all_up();
	cluster_down();
	memset(acked, 0, sizeof acked);
}

struct log_want {
	const char *needle;
	int want;
};

/* For wait_for: tserver 1's log has w->want lines with w->needle. */
static bool log_has_lines(void *arg)
{
	struct log_want *w = arg;
	return log_count(C.t[0].log, w->needle) >= w->want;
}

/* Polls until tserver 1's log has `want` lines with needle. */
static void wait_log(const char *needle, int want, int timeout_ms)
{
	struct log_want w = {needle, want};
	if (!wait_for(log_has_lines, &w, timeout_ms)) {
		note_failures();
		CHECK_MSG(false, "tserver 1's log: %d of %d '%s' in %d ms",
			  log_count(C.t[0].log, needle), want, needle, timeout_ms);
	}
}

TEST(reopen_after_full_start)
{
	struct server *s = &C.t[0];
	char err[DOCRAFT_ERRMSG_SIZE], cmd[1024], path[600];
	docraft_client_options o;
	int k = 0, rv, st = 0;

	C.tserver_args[0] = "--raft-segment-mb";
	C.tserver_args[1] = "1";
	C.tserver_args[2] = "--min-free-disk-mb";
	C.tserver_args[3] = RESERVE_MB;
	C.tserver_args[4] = "--raft-log-segment-mb";
	C.tserver_args[5] = "1";
	C.tserver_args[6] = NULL;
	cluster_up("disk-reopen");
	docraft_client_options_init(&o);
	o.timeout_ms = 15000;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	docraft_table_options to = {.num_tablets = 3, .replication_factor = 3};
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE disk (k int PRIMARY KEY, v text);", &to),
		     docraft_errmsg());
	struct tablet t[4];
	tablets_with_leaders("disk", t, 4, 3, 20000);
	for (; k < 50; k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}

	/* tserver 1 stops; its data moves to a tmpfs that is then filled. */
	proc_signal(&s->p, SIGTERM);
	CHECK_MSG(proc_wait(&s->p, 15000, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "tserver 1 did not stop cleanly (%d)", st);
	s->up = false;
	CHECK_MSG(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	CHECK_MSG(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "mount: %s",
		  strerror(errno));
	snprintf(small, sizeof small, "%s/ts1-small", C.base);
	CHECK(mkdir(small, 0755) == 0);
	CHECK_MSG(mount("docraft-reopen", small, "tmpfs", 0, "size=" TMPFS_SIZE) == 0,
		  "mount tmpfs: %s", strerror(errno));
	snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", s->dir, small);
	CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
	snprintf(via_proc, sizeof via_proc, "%s", small);
	snprintf(s->dir, sizeof s->dir, "%s", small);
	size_t ballast = fill_disk(0);
	test_note("ballast: %zu MiB; tserver 1's file system is full", ballast >> 20);
	tserver_start(0);
	wait_log("cannot open the replica", 3, 20000);
	test_note("tserver 1 started on the full disk: %d failed opens so far",
		  log_count(s->log, "cannot open the replica"));
	CHECK_MSG(log_count(s->log, "replica reopened after") == 0, "reopened on a full disk?");
	/* The other two go on acknowledging writes. */
	for (int i = 0; i < 30; i++, k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}
	check_all_up();

	/* Space back: every replica reopens by itself and catches up. */
	snprintf(path, sizeof path, "%s/ballast", small);
	CHECK_MSG(unlink(path) == 0, "%s: %s", path, strerror(errno));
	wait_log("replica reopened after", 3, RECOVER_MS);
	CHECK_MSG(wait_for(checksums_agree, NULL, RECOVER_MS), "checksums do not agree in %d ms:\n%s",
		  RECOVER_MS, C.out);
	note_failures();
	for (int i = 0; i < 20; i++, k++) {
		CHECK_MSG((rv = write_row(k)) == 0, "row %d: %d %s", k, rv, docraft_errmsg());
		acked[k] = 1;
	}
	for (int i = 0; i < k; i++)
		if (acked[i])
			check_row(i);
	check_all_up();
	proc_signal(&s->p, SIGTERM);
	CHECK_MSG(proc_wait(&s->p, 15000, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "tserver 1 did not stop cleanly (%d)", st);
	s->up = false;
	CHECK_MSG(umount(small) == 0, "umount %s: %s", small, strerror(errno));
	cluster_down();
	memset(acked, 0, sizeof acked);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {T(store_fills_first), T(log_fills_first),
						   T(reserve_refuses_writes),
						   T(reopen_after_full_start)};
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0) {
		printf("1..0 # SKIP needs root and unshare(1) for a tmpfs in a mount namespace\n");
		return 0;
	}
	return test_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
