/* Tablet replicas on real Raft logs over loopback, in one process and one
 * loop: three servers (listeners on 127.0.0.1/.2/.3), one tablet with a
 * replica on each. Writes through the leader, linearizable reads, retried
 * writes applied once, restarts that replay only what was not flushed,
 * leadership transfer with writes in flight, conditional writes
 * (compare-and-set) decided at apply on every replica, and Redis writes
 * (issue 17): run at apply, grouped, answered with their replies, a retry
 * with its first replies after a restart and a leader change.
 *
 * Raft log: each server has a shared log (raftlog.h) in <tmp>/logI, as a
 * tserver does, except in the cases about raft_uv's own files
 * (writes_reads_and_retries, segments_are_written), which run on
 * per-tablet raft_uv logs; TABLET_RAFT_LOG=shared or per-tablet runs every
 * case on that one. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/condition.h"
#include "docdb/docwrite.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "net/listener.h"
#include "raft/segfill.h"
#include "raftlog/raftlog.h"
#include "tablet/remote_copy.h"
#include "tablet/fsm.h"
#include "tablet/retry.h"
#include "tablet/tablet.h"
#include "test.h"
#include "loop.h"
#include "proc.h"
#include "redis_cmds.h"

#define N 3

struct node {
	struct listener *l;
	struct copy_server cs;
	struct tablet *t;
	struct raftlog *log;   /* the server's shared log, NULL: per-tablet */
	char dir[300];
	char logdir[300];
	char addr[32];
};

struct cluster {
	uv_loop_t loop;
	char base[256];
	struct node n[N];
	int port;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

static struct cluster C;
/* The table schema the stores get (conditional writes), or NULL. */
static const struct schema *store_schema;
/* Raft election timeout of the replicas node_open opens. */
static unsigned election_ms = 500;
/* Raft log segment size of the replicas node_open opens. */
static size_t segment_bytes = 256u << 10;
/* Raft log memory share of the replicas node_open opens (0: none). */
static uint64_t log_memory_bytes;
/* The next cluster_up's servers have no shared log: a raft_uv per replica. */
static bool per_tablet_log;

/* Bytes of node i's raft log files named open-* (raft_uv pre-allocates each
 * to the segment size), or 0 with none. */
static off_t open_segment_size(int i)
{
	char dir[512], path[1024];
	struct dirent *e;
	struct stat st;
	off_t size = 0;
	DIR *d;
	snprintf(dir, sizeof dir, "%s/raft", C.n[i].dir);
	d = opendir(dir);
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "open-", 5) == 0) {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			CHECK(stat(path, &st) == 0);
			size = st.st_size;
		}
	closedir(d);
	return size;
}

static void node_open(int i, bool bootstrap)
{
	struct tablet_options o;
	struct tablet_peer peers[N];
	tablet_options_default(&o);
	o.id = "tab1";
	o.dir = C.n[i].dir;
	o.raft_id = (raft_id)(i + 1);
	o.address = C.n[i].addr;
	o.listener = C.n[i].l;
	o.copy = &C.n[i].cs;
	o.heartbeat_ms = 50;
	o.election_ms = election_ms;
	o.snapshot_threshold = 64;
	o.snapshot_trailing = 32;
	o.segment_bytes = segment_bytes;
	o.raft_log = C.n[i].log;
	o.log_memory_bytes = log_memory_bytes;
	o.store.schema = store_schema;
	CHECK_OK_MSG(tablet_open(&C.loop, &o, &C.n[i].t, C.errmsg), C.errmsg);
	for (int j = 0; j < N; j++) {
		peers[j].id = (raft_id)(j + 1);
		peers[j].address = C.n[j].addr;
		peers[j].role = RAFT_VOTER;
	}
	if (bootstrap)
		CHECK_OK_MSG(tablet_bootstrap(C.n[i].t, peers, N, C.errmsg), C.errmsg);
	CHECK_OK_MSG(tablet_start(C.n[i].t, C.errmsg), C.errmsg);
}

/* Opens server i's shared log (cluster_up's mode; none when per-tablet). */
static void log_open(int i)
{
	const char *mode = getenv("TABLET_RAFT_LOG");
	bool per_tablet = mode != NULL && *mode != '\0' ? strcmp(mode, "per-tablet") == 0
							: per_tablet_log;
	struct raftlog_options lo = {.dir = C.n[i].logdir,
				     .segment_bytes = RAFTLOG_SEGMENT_BYTES};
	C.n[i].log = NULL;
	if (!per_tablet)
		CHECK_OK_MSG(raftlog_open(&C.loop, &lo, &C.n[i].log, C.errmsg), C.errmsg);
}

/* Runs the loop until *count reaches want (a close callback counts). */
static void run_until_count(const int *count, int want)
{
	for (int k = 0; k < 10000 && *count < want; k++)
		uv_run(&C.loop, UV_RUN_ONCE);
	CHECK_EQ_INT(*count, want);
}

static int logs_closed;
static void log_closed(struct raftlog *l, void *arg)
{
	(void)l;
	(void)arg;
	logs_closed++;
}

/* Closes server i's shared log, if any (its tablet closed). */
static void log_close(int i)
{
	if (C.n[i].log == NULL)
		return;
	CHECK_OK(raftlog_close(C.n[i].log, log_closed, NULL));
	run_until_count(&logs_closed, logs_closed + 1);
	C.n[i].log = NULL;
}

static void cluster_up(const char *tag)
{
	/* A fresh port for every case: a case that failed midway may leave its
	 * listeners bound (a CHECK longjmps past node_close), and the next
	 * case must not trip over them. */
	static int last_port = -1;
	memset(&C, 0, sizeof C);
	signal(SIGPIPE, SIG_IGN);
	CHECK_OK(uv_loop_init(&C.loop));
	test_tmpdir_make(C.base, tag);
	C.port = proc_free_port(N, last_port);
	CHECK_MSG(C.port > 0, "no free port on 127.0.0.1-%d", N);
	last_port = C.port;
	for (int i = 0; i < N; i++) {
		snprintf(C.n[i].addr, sizeof C.n[i].addr, "127.0.0.%d:%d", i + 1, C.port);
		snprintf(C.n[i].dir, sizeof C.n[i].dir, "%s/n%d", C.base, i + 1);
		snprintf(C.n[i].logdir, sizeof C.n[i].logdir, "%s/log%d", C.base, i + 1);
		CHECK_OK_MSG(listener_open(&C.loop, C.n[i].addr, &C.n[i].l, C.errmsg), C.errmsg);
		log_open(i);
		CHECK_OK_MSG(copy_server_init(&C.n[i].cs, &C.loop, C.n[i].l, C.errmsg), C.errmsg);
	}
	for (int i = 0; i < N; i++)
		node_open(i, true);
}

static int closed_count;
static void on_closed(struct tablet *t, void *arg)
{
	(void)t;
	(void)arg;
	closed_count++;
}

static void node_close(int i)
{
	tablet_close(C.n[i].t, on_closed, NULL);
	run_until_count(&closed_count, closed_count + 1);
	C.n[i].t = NULL;
}

static void listener_closed(void *arg)
{
	(*(int *)arg)++;
}

static int cs_closed;
static void copy_server_closed(struct copy_server *cs)
{
	(void)cs;
	cs_closed++;
}

static void cluster_down(void)
{
	int n = 0;
	for (int i = 0; i < N; i++)
		if (C.n[i].t != NULL)
			node_close(i);
	for (int i = 0; i < N; i++)
		log_close(i);
	per_tablet_log = false;
	cs_closed = 0;
	for (int i = 0; i < N; i++)
		copy_server_close(&C.n[i].cs, copy_server_closed);
	for (int k = 0; k < 1000 && cs_closed < N; k++)
		uv_run(&C.loop, UV_RUN_ONCE);
	CHECK_EQ_INT(cs_closed, N);
	for (int i = 0; i < N; i++)
		listener_close(C.n[i].l, listener_closed, &n);
	for (int k = 0; k < 1000 && n < N; k++)
		uv_run(&C.loop, UV_RUN_ONCE);
	CHECK_EQ_INT(n, N);
	uv_run(&C.loop, UV_RUN_NOWAIT);
	CHECK_EQ_INT(uv_loop_close(&C.loop), 0);
	test_tmpdir_remove(C.base);
}

/* loop_run_until on the test's loop. */
static bool run_until(bool (*pred)(void *), void *arg, uint64_t timeout_ms)
{
	return loop_run_until(&C.loop, pred, arg, timeout_ms);
}

static int leader_index(void)
{
	for (int i = 0; i < N; i++) {
		struct tablet_status st;
		if (C.n[i].t == NULL)
			continue;
		tablet_get_status(C.n[i].t, &st);
		if (st.role == TABLET_LEADER)
			return i;
	}
	return -1;
}

static bool has_leader(void *arg)
{
	(void)arg;
	return leader_index() >= 0;
}

/* ---- writes -------------------------------------------------------------- */

struct w {
	struct tablet_write req;
	struct batch b;
	int status;
	bool done;
	uint64_t ht;
};

static void write_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct w *w = req->data;
	w->status = status;
	w->ht = ht;
	w->done = true;
}

/* A write of key = val (vlen bytes) from client with seq. */
static void w_init_len(struct w *w, uint8_t client, uint64_t seq, const char *key,
		       const char *val, size_t vlen)
{
	memset(w, 0, sizeof *w);
	batch_init(&w->b);
	/* A minimal DocKey: one string range component. */
	struct buf dk = BUF_INIT;
	struct pv comp = pv_str(key);
	struct dockey d = {false, 0, 0, 1, NULL, &comp};
	dockey_append(&dk, &d);
	batch_put(&w->b, dk.data, dk.len, val, vlen);
	buf_free(&dk);
	memset(w->req.client_id, client, sizeof w->req.client_id);
	w->req.seq = seq;
	w->req.min_running = 1;
	w->req.batch = w->b.data.data;
	w->req.batch_len = w->b.data.len;
	w->req.cb = write_cb;
	w->req.data = w;
}

static void w_init(struct w *w, uint8_t client, uint64_t seq, const char *key, const char *val)
{
	w_init_len(w, client, seq, key, val, strlen(val));
}

static bool all_done(void *arg)
{
	struct w **ws = arg;
	for (int i = 0; ws[i] != NULL; i++)
		if (!ws[i]->done)
			return false;
	return true;
}

/* n writes "<prefix><i>" = "v" from client, seqs 1..n, submitted to replica
 * l in one loop turn; list gets them and a NULL (n + 1 slots) for all_done. */
static void submit_writes(int l, uint8_t client, const char *prefix, struct w *ws,
			  struct w **list, int n)
{
	for (int i = 0; i < n; i++) {
		char k[16];
		snprintf(k, sizeof k, "%s%03d", prefix, i);
		w_init(&ws[i], client, (uint64_t)i + 1, k, "v");
		CHECK_OK(tablet_write(C.n[l].t, &ws[i].req));
		list[i] = &ws[i];
	}
	list[n] = NULL;
}

static bool applied_on_all(void *arg)
{
	uint64_t want = *(uint64_t *)arg;
	for (int i = 0; i < N; i++) {
		uint64_t idx;
		if (C.n[i].t == NULL)
			continue;
		if (tablet_store(C.n[i].t) == NULL)
			return false; /* a copy being installed */
		store_applied(tablet_store(C.n[i].t), &idx, NULL);
		if (idx < want)
			return false;
	}
	return true;
}

/* Number of stored pairs (data keys only) of a replica. */
static int count_pairs(int i)
{
	const uint8_t lo = KT_GROUP_END;
	struct store_iter *it = store_iter_new(tablet_store(C.n[i].t), &lo, 1, NULL, 0);
	int n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
		n++;
	store_iter_free(it);
	return n;
}

/* FNV-1a of replica i's pairs in [lo, hi) (hi NULL: to the end); *n gets
 * their count when not NULL. */
static uint64_t checksum_range(int i, uint8_t lo, const uint8_t *hi, int *n)
{
	struct store_iter *it = store_iter_new(tablet_store(C.n[i].t), &lo, 1, hi, hi ? 1 : 0);
	uint64_t h = 1469598103934665603ULL;
	int count = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it), count++) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl), *v = store_iter_value(it, &vl);
		for (size_t j = 0; j < kl; j++)
			h = (h ^ k[j]) * 1099511628211ULL;
		for (size_t j = 0; j < vl; j++)
			h = (h ^ v[j]) * 1099511628211ULL;
		h = (h ^ 0xFF) * 1099511628211ULL;
	}
	store_iter_free(it);
	if (n != NULL)
		*n = count;
	return h;
}

/* A checksum of every stored pair of a replica. */
static uint64_t checksum(int i)
{
	return checksum_range(i, KT_GROUP_END, NULL, NULL);
}

#define NW 200

TEST(writes_reads_and_retries)
{
	static struct w ws[NW + 1];
	struct w *list[NW + 2];
	cluster_up("tablet-uv");
	CHECK_MSG(run_until(has_leader, NULL, 10000), "no leader");
	int l = leader_index();

	/* 200 writes submitted in one loop turn: group commit packs them. */
	submit_writes(l, 1, "k", ws, list, NW);
	CHECK(run_until(all_done, list, 10000));
	for (int i = 0; i < NW; i++)
		CHECK_MSG(ws[i].status == 0, "write %d: %d", i, ws[i].status);
	struct tablet_status st;
	tablet_get_status(C.n[l].t, &st);
	test_note("%" PRIu64 " writes in %" PRIu64 " entries", st.writes, st.entries);
	CHECK(st.entries < NW / 4);

	/* A retry of an applied write is answered ok and not applied again. */
	int pairs = count_pairs(l);
	struct w again;
	w_init(&again, 1, 7, "k007", "changed");
	CHECK_OK(tablet_write(C.n[l].t, &again.req));
	struct w *one[2] = {&again, NULL};
	CHECK(run_until(all_done, one, 5000));
	CHECK_EQ_INT(again.status, 0);
	CHECK_EQ_INT(count_pairs(l), pairs);

	/* Every replica converges to the same bytes. */
	uint64_t idx;
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++)
		CHECK_EQ_U64(checksum(i), checksum(l));

	/* A follower refuses writes and names the leader. */
	int f = (l + 1) % N;
	struct w fw;
	w_init(&fw, 2, 1, "x", "y");
	CHECK_OK(tablet_write(C.n[f].t, &fw.req));
	struct w *fl[2] = {&fw, NULL};
	CHECK(run_until(all_done, fl, 5000));
	CHECK_EQ_INT(fw.status, DOCRAFT_ENOTLEADER);
	const char *hint;
	CHECK_EQ_U64(tablet_leader(C.n[f].t, &hint), (uint64_t)(l + 1));
	CHECK_EQ_STR(hint, C.n[l].addr);

	if (C.n[l].log == NULL) {
		/* raft_uv's segments have the configured size. */
		CHECK_EQ_U64((uint64_t)open_segment_size(l), (uint64_t)segment_bytes);
	} else {
		/* The shared log holds the group and served its appends. */
		struct raftlog_stats ls;
		raftlog_stats(C.n[l].log, &ls);
		CHECK_EQ_U64(ls.groups, 1);
		CHECK(ls.appends > 0 && ls.batches > 0 && ls.segments >= 1);
		CHECK(raftlog_group_exists(C.n[l].log, "tab1"));
	}

	for (int i = 0; i < NW; i++)
		batch_free(&ws[i].b);
	batch_free(&again.b);
	batch_free(&fw.b);
	cluster_down();
}

/* Extents of path flagged unwritten (allocated, never written), or -1 when
 * the filesystem does not answer FIEMAP. */
static int unwritten_extents(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	union {
		struct fiemap m;
		char buf[sizeof(struct fiemap) + 64 * sizeof(struct fiemap_extent)];
	} u;
	CHECK_MSG(fd >= 0, "%s", path);
	memset(&u, 0, sizeof u);
	u.m.fm_length = FIEMAP_MAX_OFFSET;
	u.m.fm_flags = FIEMAP_FLAG_SYNC;
	u.m.fm_extent_count = 64;
	if (ioctl(fd, FS_IOC_FIEMAP, &u.m) != 0) {
		close(fd);
		return -1;
	}
	close(fd);
	for (unsigned i = 0; i < u.m.fm_mapped_extents; i++)
		if (u.m.fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			n++;
	return n;
}

/* posix_fallocate(path, 0, len) as libraft.so binds it (by its plain
 * name: a call from C here would go to posix_fallocate64). */
static void extend(const char *path, off_t len)
{
	int (*fallocate_fn)(int, off_t, off_t);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	*(void **)&fallocate_fn = dlsym(RTLD_DEFAULT, "posix_fallocate");
	CHECK(fd >= 0 && fallocate_fn != NULL);
	CHECK_EQ_INT(fallocate_fn(fd, 0, len), 0);
	close(fd);
}

/* A new file of len bytes, through posix_fallocate. */
static void allocate(const char *path, off_t len)
{
	unlink(path);
	extend(path, len);
}

/* Every replica's open-* raft_uv segment (scan->segments of them) has no
 * unwritten extent; else scan->bad names one. */
struct seg_scan {
	int segments;
	char bad[1024];
};

static bool segments_written(void *arg)
{
	struct seg_scan *scan = arg;
	char dir[512];

	scan->segments = 0;
	scan->bad[0] = '\0';
	for (int i = 0; i < N; i++) {
		struct dirent *e;
		DIR *d;
		snprintf(dir, sizeof dir, "%s/raft", C.n[i].dir);
		CHECK((d = opendir(dir)) != NULL);
		while ((e = readdir(d)) != NULL) {
			char path[1024];
			if (strncmp(e->d_name, "open-", 5) != 0)
				continue;
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			if (unwritten_extents(path) != 0 && scan->bad[0] == '\0')
				snprintf(scan->bad, sizeof scan->bad, "%s", path);
			scan->segments++;
		}
		closedir(d);
	}
	return scan->bad[0] == '\0';
}

/* raft_uv's open segments are written before it appends to them: its
 * RWF_NOWAIT appends then never need an extent conversion (segfill.c). */
TEST(segments_are_written)
{
	char path[1024];
	char buf[4096];
	int fd;

	CHECK_MSG(segfill_active(), "the test executable does not export posix_fallocate");
	per_tablet_log = true; /* raft_uv's files */
	cluster_up("tablet-uv-segfill");
	/* Off, posix_fallocate is glibc's: on ext4 or xfs the blocks stay
	 * unwritten, which is what the checks below must see through. */
	snprintf(path, sizeof path, "%s/plain", C.base);
	segfill_set(false);
	allocate(path, 256 << 10);
	segfill_set(true);
	int before = unwritten_extents(path);
	if (before <= 0) {
		printf("# skip: this filesystem leaves no unwritten extents (FIEMAP: %d)\n", before);
		cluster_down();
		return;
	}
	/* On, the same call leaves written zeros. */
	snprintf(path, sizeof path, "%s/filled", C.base);
	allocate(path, 256 << 10);
	CHECK_EQ_INT(unwritten_extents(path), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT((int)pread(fd, buf, sizeof buf, 128 << 10), (int)sizeof buf);
	close(fd);
	for (size_t i = 0; i < sizeof buf; i++)
		CHECK_EQ_INT(buf[i], 0);
	/* Bytes before the file's old end are the caller's: kept. */
	snprintf(path, sizeof path, "%s/kept", C.base);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ_INT((int)write(fd, "abc", 3), 3);
	close(fd);
	extend(path, 64 << 10);
	CHECK_EQ_INT(unwritten_extents(path), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT((int)pread(fd, buf, 8, 0), 8);
	close(fd);
	CHECK(memcmp(buf, "abc\0\0\0\0\0", 8) == 0);

	/* Every replica's prepared and open segments, after writes. */
	CHECK_MSG(run_until(has_leader, NULL, 10000), "no leader");
	int l = leader_index();
	static struct w ws[20];
	struct w *list[21];
	submit_writes(l, 1, "s", ws, list, 20);
	CHECK(run_until(all_done, list, 10000));
	/* raft_uv prepares the next segment in its thread pool: one may be
	 * being filled right now; every one is written once prepared. */
	struct seg_scan scan = {0};
	CHECK_MSG(run_until(segments_written, &scan, 10000),
		  "%s has unwritten extents (%d segments)", scan.bad, scan.segments);
	CHECK(scan.segments >= N);
	for (int i = 0; i < 20; i++)
		batch_free(&ws[i].b);
	cluster_down();
}

struct r {
	struct tablet_read req;
	int status;
	bool done;
	uint64_t ht;
};

static void read_cb(struct tablet_read *req, int status, uint64_t ht)
{
	struct r *r = req->data;
	r->status = status;
	r->ht = ht;
	r->done = true;
}

static bool reads_done(void *arg)
{
	struct r *rs = arg;
	for (int i = 0; i < 10; i++)
		if (!rs[i].done)
			return false;
	return true;
}

/* Reads are answered after a barrier, at a time past every acknowledged
 * write; a follower refuses them. */
TEST(linearizable_reads)
{
	struct r rs[10];
	cluster_up("tablet-uv-read");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	struct w w;
	w_init(&w, 3, 1, "a", "1");
	CHECK_OK(tablet_write(C.n[l].t, &w.req));
	struct w *one[2] = {&w, NULL};
	CHECK(run_until(all_done, one, 5000));
	CHECK_EQ_INT(w.status, 0);
	memset(rs, 0, sizeof rs);
	for (int i = 0; i < 10; i++) {
		rs[i].req.data = &rs[i];
		rs[i].req.cb = read_cb;
		CHECK_OK(tablet_read(C.n[i < 8 ? l : (l + 1) % N].t, &rs[i].req));
	}
	CHECK(run_until(reads_done, rs, 5000));
	for (int i = 0; i < 8; i++) {
		CHECK_EQ_INT(rs[i].status, 0);
		CHECK(rs[i].ht > w.ht);
	}
	CHECK_EQ_INT(rs[8].status, DOCRAFT_ENOTLEADER);
	batch_free(&w.b);
	cluster_down();
}

/* ---- leader lease ---------------------------------------------------------- */

static uint64_t boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct lr {
	struct tablet_read req;
	int status;
	bool done;
	uint64_t at_ns; /* when answered */
};

static void lease_read_cb(struct tablet_read *req, int status, uint64_t ht)
{
	struct lr *r = req->data;
	(void)ht;
	r->status = status;
	r->done = true;
	r->at_ns = boottime_ns();
}

static bool lr_done(void *arg)
{
	return ((struct lr *)arg)->done;
}

static void lease_read(int i, struct lr *r, unsigned timeout_ms)
{
	memset(r, 0, sizeof *r);
	r->req.data = r;
	r->req.cb = lease_read_cb;
	CHECK_OK(tablet_read(C.n[i].t, &r->req));
	CHECK(run_until(lr_done, r, timeout_ms));
}

static void change_noop_cb(void *arg, int status)
{
	(void)arg;
	(void)status;
}

static uint64_t last_ack_ns;
static void lease_write_cb(struct tablet_write *req, int status, uint64_t ht)
{
	last_ack_ns = boottime_ns();
	write_cb(req, status, ht);
}

/* Writes a = seq at node l (client 5), acknowledged: last_ack_ns. */
static void lease_write(int l, uint64_t seq)
{
	struct w w;
	struct w *one[2] = {&w, NULL};
	char v[24];
	snprintf(v, sizeof v, "%" PRIu64, seq);
	w_init(&w, 5, seq, "a", v);
	w.req.cb = lease_write_cb;
	CHECK_OK(tablet_write(C.n[l].t, &w.req));
	CHECK(run_until(all_done, one, 5000));
	CHECK_EQ_INT(w.status, 0);
	batch_free(&w.b);
}

/* The leader lease (election 1500 ms, lease 1050 ms). A committed write
 * gives the leader a lease: reads are answered without a barrier, even once
 * both followers are gone, when no barrier could commit; but none later
 * than the lease after the write was acknowledged (its proposal was
 * earlier); past that, reads wait and fail when raft steps down. A
 * leadership transfer voids the lease at once. */
TEST(lease_reads)
{
	struct tablet_status st;
	struct lr r;
	const uint64_t lease_ns = 1050ull * 1000000u;
	uint64_t served = 0, last_served_ns = 0;
	int l, f1, f2;

	election_ms = 1500;
	cluster_up("tablet-uv-lease");
	CHECK(run_until(has_leader, NULL, 15000));
	l = leader_index();
	f1 = (l + 1) % N;
	f2 = (l + 2) % N;

	/* A transfer voids the lease: the read waits, then fails. */
	lease_write(l, 1);
	lease_read(l, &r, 5000);
	CHECK_EQ_INT(r.status, 0);
	tablet_get_status(C.n[l].t, &st);
	CHECK_EQ_U64(st.lease_reads, 1);
	CHECK_EQ_U64(st.barrier_reads, 0);
	CHECK_OK_MSG(tablet_transfer(C.n[l].t, (raft_id)(f1 + 1), change_noop_cb, NULL, C.errmsg),
		     C.errmsg);
	tablet_get_status(C.n[l].t, &st);
	CHECK_EQ_U64(st.lease_left_ms, 0);
	lease_read(l, &r, 10000);
	CHECK_EQ_INT(r.status, DOCRAFT_ENOTLEADER);
	CHECK(run_until(has_leader, NULL, 15000));
	l = leader_index();
	f1 = (l + 1) % N;
	f2 = (l + 2) % N;

	/* Followers gone right after a write: lease reads until it ends. */
	lease_write(l, 2);
	node_close(f1);
	node_close(f2);
	for (;;) {
		lease_read(l, &r, 10000);
		if (r.status != 0)
			break;
		served++;
		last_served_ns = r.at_ns;
		CHECK(r.at_ns < last_ack_ns + lease_ns);
		uv_sleep(20);
	}
	CHECK_EQ_INT(r.status, DOCRAFT_ENOTLEADER);
	test_note("%" PRIu64 " reads served under the lease, the last %" PRIu64
		  " ms after the write's ack; a read after that failed at +%" PRIu64 " ms",
		  served, (last_served_ns - last_ack_ns) / 1000000u,
		  (r.at_ns - last_ack_ns) / 1000000u);
	CHECK(served > 0);
	cluster_down();
	election_ms = 500;
}

/* All replicas stop without flushing (like kill -9: nothing was flushed but
 * what snapshots forced) and restart: identical state, and the entries
 * re-applied are at most those the stores had not flushed. */
TEST(restart_replays_only_unflushed)
{
	static struct w ws[NW];
	struct w *list[NW + 1];
	uint64_t sum_before, idx;
	cluster_up("tablet-uv-restart");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < NW / 4; i++) {
			char k[16];
			int j = round * (NW / 4) + i;
			snprintf(k, sizeof k, "r%03d", j);
			w_init(&ws[j], 4, (uint64_t)j + 1, k, "v");
			CHECK_OK(tablet_write(C.n[l].t, &ws[j].req));
			list[i] = &ws[j];
		}
		list[NW / 4] = NULL;
		CHECK(run_until(all_done, list, 10000));
	}
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	sum_before = checksum(l);
	uint64_t unflushed[N];
	for (int i = 0; i < N; i++) {
		struct tablet_status st;
		tablet_get_status(C.n[i].t, &st);
		unflushed[i] = st.applied_index;
	}
	/* As a server restarts: its shared log is reopened (recovered) too. */
	for (int i = 0; i < N; i++) {
		node_close(i);
		log_close(i);
		log_open(i);
	}
	for (int i = 0; i < N; i++) {
		node_open(i, false);
		struct tablet_status st;
		tablet_get_status(C.n[i].t, &st);
		test_note("replica %d: store index at open %" PRIu64 ", raft applied %" PRIu64, i + 1,
			  st.flushed_index, unflushed[i]);
		unflushed[i] -= st.flushed_index;
	}
	CHECK(run_until(has_leader, NULL, 10000));
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++) {
		struct tablet_status st;
		tablet_get_status(C.n[i].t, &st);
		test_note("replica %d: replayed %" PRIu64 " (unflushed %" PRIu64 ")", i + 1,
			  st.replayed, unflushed[i]);
		CHECK(st.replayed <= unflushed[i]);
		CHECK_EQ_U64(checksum(i), sum_before);
	}
	for (int i = 0; i < NW; i++)
		batch_free(&ws[i].b);
	cluster_down();
}

/* A follower away while the leader's log is truncated past it comes back
 * through a checkpoint copy and ends byte-identical. */
/* 20 rounds of 100 writes from client 5 to replica l (ws: 2000 slots): 20+
 * entries each side of several snapshots (threshold 64, trailing 32), so
 * the log no longer reaches back to a replica that was closed before. */
static void write_past_snapshots(int l, struct w *ws)
{
	struct w *list[101];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 100; i++) {
			char k[16];
			int j = round * 100 + i;
			snprintf(k, sizeof k, "c%04d", j);
			w_init(&ws[j], 5, (uint64_t)j + 1, k, "v");
			CHECK_OK(tablet_write(C.n[l].t, &ws[j].req));
			list[i] = &ws[j];
			/* One entry per 5 writes: wait for them (group commit
			 * would put all 100 in one or two entries). */
			if (i % 5 == 4) {
				struct w *five[6] = {list[i - 4], list[i - 3], list[i - 2],
						     list[i - 1], list[i], NULL};
				CHECK(run_until(all_done, five, 10000));
			}
		}
		list[100] = NULL;
		CHECK(run_until(all_done, list, 10000));
		for (int i = 0; i < 100; i++)
			CHECK_EQ_INT(list[i]->status, 0);
	}
}

/* A cluster (tag) whose follower (returned) was closed before the leader
 * (*leader) wrote past several snapshots (write_past_snapshots). */
static int cluster_with_lagging_follower(const char *tag, struct w *ws, int *leader)
{
	int f;
	cluster_up(tag);
	CHECK(run_until(has_leader, NULL, 10000));
	*leader = leader_index();
	f = (*leader + 1) % N;
	node_close(f);
	write_past_snapshots(*leader, ws);
	return f;
}

TEST(follower_catches_up_by_copy)
{
	static struct w ws[2000];
	uint64_t idx;
	int l;
	int f = cluster_with_lagging_follower("tablet-uv-copy", ws, &l);
	struct tablet_status st;
	tablet_get_status(C.n[l].t, &st);
	test_note("leader: %" PRIu64 " entries, last index %" PRIu64, st.entries, st.last_index);
	node_open(f, false);
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK_MSG(run_until(applied_on_all, &idx, 20000), "follower did not catch up");
	tablet_get_status(C.n[f].t, &st);
	test_note("follower: copies %" PRIu64 ", role %s", st.copies, tablet_role_name(st.role));
	CHECK(st.copies >= 1);
	for (int i = 0; i < N; i++)
		CHECK_EQ_U64(checksum(i), checksum(l));
	for (int i = 0; i < 2000; i++)
		batch_free(&ws[i].b);
	cluster_down();
}

struct copy_wait {
	int f;        /* the replica that copies */
	uint64_t idx; /* the leader's applied index */
};

static bool is_copying(int f)
{
	struct tablet_status st;
	tablet_get_status(C.n[f].t, &st);
	return st.role == TABLET_COPYING;
}

static bool copying_or_caught_up(void *arg)
{
	struct copy_wait *cw = arg;
	return is_copying(cw->f) || applied_on_all(&cw->idx);
}

/* A replica closed at each step of a checkpoint copy (its raft instance
 * closing for it, raft_uv being released, the fetch, the install off the
 * loop: closed 0, 1, 2, 4 ... loop turns after it went COPYING) closes and
 * calls back (node_close checks); reopened, it copies again and catches up
 * with the leader's data. */
TEST(close_during_copy)
{
	static struct w ws[2000];
	struct copy_wait cw;
	unsigned turns = 0, closes = 0;
	int l;
	int f = cluster_with_lagging_follower("tablet-uv-copy-close", ws, &l);
	cw.f = f;
	store_applied(tablet_store(C.n[l].t), &cw.idx, NULL);
	for (;;) {
		node_open(f, false);
		CHECK_MSG(run_until(copying_or_caught_up, &cw, 20000), "no copy started");
		if (!is_copying(f))
			break; /* an earlier round's copy was installed before its close */
		for (unsigned k = 0; k < turns; k++)
			uv_run(&C.loop, UV_RUN_ONCE);
		if (!is_copying(f))
			break; /* copied and restarted within the turns */
		node_close(f);
		closes++;
		CHECK(turns < 65536);
		turns = turns > 0 ? turns * 2 : 1;
	}
	test_note("closed %u times while copying; the last after %u loop turns", closes, turns);
	CHECK(closes >= 1);
	CHECK_MSG(run_until(applied_on_all, &cw.idx, 20000), "follower did not catch up");
	for (int i = 0; i < N; i++)
		CHECK_EQ_U64(checksum(i), checksum(l));
	for (int i = 0; i < 2000; i++)
		batch_free(&ws[i].b);
	cluster_down();
}

static bool transferred;
static void transfer_cb(void *arg, int status)
{
	(void)arg;
	(void)status;
	transferred = true;
}

static bool transfer_done(void *arg)
{
	int old = *(int *)arg;
	int l = leader_index();
	return transferred && l >= 0 && l != old;
}

/* Leadership moves while writes are in flight: every write either succeeds
 * or fails with a retryable code; retried with the same ids at the new
 * leader, each is applied exactly once (one pair per key on every replica). */
TEST(transfer_with_writes_in_flight)
{
	static struct w ws[300], rs[300];
	struct w *list[301];
	cluster_up("tablet-uv-transfer");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	for (int i = 0; i < 300; i++) {
		char k[16];
		snprintf(k, sizeof k, "t%03d", i);
		w_init(&ws[i], 6, (uint64_t)i + 1, k, "v");
		CHECK_OK(tablet_write(C.n[l].t, &ws[i].req));
		list[i] = &ws[i];
		if (i == 150) {
			transferred = false;
			CHECK_OK_MSG(tablet_transfer(C.n[l].t, 0, transfer_cb, NULL, C.errmsg),
				     C.errmsg);
		}
		if (i % 10 == 9)
			uv_run(&C.loop, UV_RUN_NOWAIT);
	}
	list[300] = NULL;
	CHECK(run_until(all_done, list, 10000));
	CHECK(run_until(transfer_done, &l, 10000));
	int nl = leader_index();
	int failed = 0;
	for (int i = 0; i < 300; i++) {
		int st = ws[i].status;
		CHECK_MSG(st == 0 || st == DOCRAFT_ENOTLEADER || st == DOCRAFT_ELEADERLOST,
			  "write %d: %d", i, st);
		if (st != 0) {
			/* Retry with the same id: the outcome may have been "applied". */
			char k[16];
			snprintf(k, sizeof k, "t%03d", i);
			w_init(&rs[failed], 6, (uint64_t)i + 1, k, "v");
			CHECK_OK(tablet_write(C.n[nl].t, &rs[failed].req));
			list[failed] = &rs[failed];
			failed++;
		}
	}
	list[failed] = NULL;
	test_note("leader %d -> %d, %d writes retried", l + 1, nl + 1, failed);
	CHECK(run_until(all_done, list, 10000));
	for (int i = 0; i < failed; i++)
		CHECK_EQ_INT(rs[i].status, 0);
	uint64_t idx;
	store_applied(tablet_store(C.n[nl].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++) {
		CHECK_EQ_INT(count_pairs(i), 300);
		CHECK_EQ_U64(checksum(i), checksum(nl));
	}
	for (int i = 0; i < 300; i++)
		batch_free(&ws[i].b);
	for (int i = 0; i < failed; i++)
		batch_free(&rs[i].b);
	cluster_down();
}

static int change_status = -1;
static void change_cb(void *arg, int status)
{
	(void)arg;
	change_status = status;
}

static bool change_done(void *arg)
{
	(void)arg;
	return change_status != -1;
}

/* A removed replica no longer counts: with it gone, writes still commit on
 * the remaining two; a second change while one runs is refused. */
TEST(remove_replica)
{
	struct w ws[2];
	struct w *list[2] = {&ws[0], NULL};
	cluster_up("tablet-uv-remove");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	int f = (l + 1) % N;
	change_status = -1;
	CHECK_OK_MSG(tablet_remove_replica(C.n[l].t, (raft_id)(f + 1), change_cb, NULL, C.errmsg),
		     C.errmsg);
	CHECK(tablet_remove_replica(C.n[l].t, (raft_id)(f + 1), change_cb, NULL, C.errmsg) != 0);
	CHECK(run_until(change_done, NULL, 5000));
	CHECK_EQ_INT(change_status, 0);
	node_close(f);
	w_init(&ws[0], 7, 1, "after-remove", "v");
	CHECK_OK(tablet_write(C.n[l].t, &ws[0].req));
	CHECK(run_until(all_done, list, 5000));
	CHECK_EQ_INT(ws[0].status, 0);
	/* A follower cannot change membership. */
	int other = (l + 2) % N;
	CHECK_EQ_INT(tablet_remove_replica(C.n[other].t, (raft_id)(l + 1), change_cb, NULL,
					   C.errmsg), DOCRAFT_ENOTLEADER);
	batch_free(&ws[0].b);
	(void)ws[1];
	cluster_down();
}

/* ---- conditional writes ------------------------------------------------------ */

/* Table t (k text hash key, v int) for the conditional writes. */
static struct schema cas_schema;

struct cw {
	struct w w;
	struct buf cond;
	struct buf dk;
};

/* Client 0xca's write seq: SET v = value on row k, if v == expect (expect
 * < 0: unconditional; expect == 0x7fffffff: if v has no live value). */
#define NO_VALUE 0x7fffffff
static void cw_init(struct cw *c, uint64_t seq, const char *k, int32_t value, int32_t expect)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct docwrite dw;
	struct pv key = pv_str(k);
	struct colval cv = colval_of("v", pv_int32(value));
	memset(c, 0, sizeof *c);
	batch_init(&c->w.b);
	docwrite_init(&dw, &cas_schema, &c->w.b, NULL);
	CHECK_OK_MSG(docwrite_update(&dw, &key, 1, &cv, 1, DOCWRITE_NO_TTL), dw.errmsg);
	docwrite_free(&dw);
	memset(c->w.req.client_id, 0xca, sizeof c->w.req.client_id);
	c->w.req.seq = seq;
	c->w.req.min_running = 1;
	c->w.req.batch = c->w.b.data.data;
	c->w.req.batch_len = c->w.b.data.len;
	c->w.req.cb = write_cb;
	c->w.req.data = &c->w;
	if (expect < 0)
		return;
	struct condition cd;
	memset(&cd, 0, sizeof cd);
	CHECK_OK_MSG(docwrite_dockey(&cas_schema, &key, 1, &c->dk, err), err);
	cd.dockey = c->dk.data;
	cd.dockey_len = c->dk.len;
	cd.column_id = schema_find(&cas_schema, "v")->id;
	cd.has_value = expect != NO_VALUE;
	cd.value = pv_int32(expect);
	condition_encode(&c->cond, &cd, 1);
	c->w.req.cond = c->cond.data;
	c->w.req.cond_len = c->cond.len;
}

static void cw_free(struct cw *c)
{
	batch_free(&c->w.b);
	buf_free(&c->cond);
	buf_free(&c->dk);
}

/* Submits the writes and runs until all are answered. */
static void cw_run(int l, struct cw **cs)
{
	struct w *list[16];
	int n = 0;
	for (; cs[n] != NULL; n++) {
		CHECK_OK(tablet_write(C.n[l].t, &cs[n]->w.req));
		list[n] = &cs[n]->w;
	}
	list[n] = NULL;
	CHECK(run_until(all_done, list, 10000));
}

/* A checksum of replica i's retry records (internal prefix 0x02). */
static uint64_t retry_checksum(int i)
{
	const uint8_t hi = 0x03;
	int n;
	uint64_t h = checksum_range(i, 0x02, &hi, &n);
	CHECK(n > 0);
	return h;
}

/* Row k's v on replica i as of everything it applied; -1: no value. */
static int32_t v_on(int i, const char *k)
{
	struct arena a = ARENA_INIT;
	struct pv key = pv_str(k);
	struct row r;
	bool found;
	uint64_t ht;
	int32_t v = -1;
	store_applied(tablet_store(C.n[i].t), NULL, &ht);
	CHECK_OK_MSG(reader_get_row(tablet_store(C.n[i].t), &cas_schema, &key, 1, ht, &a, &r,
				    &found, C.errmsg), C.errmsg);
	if (found) {
		const struct docnode *n = row_column_named(&r, "v");
		if (n != NULL && n->value.type == PV_INT32)
			v = n->value.v.i32;
	}
	arena_free(&a);
	return v;
}

/* Conditional writes on three replicas: a compare-and-set chain, a stale
 * CAS refused, retries answered from the retry table with their first
 * outcome (never evaluated again, also after a restart of every replica),
 * a CAS queued behind plain writes evaluated after them, and every replica
 * identical. */
TEST(conditional_writes)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	struct cw c[16];
	uint64_t idx;
	CHECK_OK_MSG(schema_init(&cas_schema, "t", err), err);
	CHECK_OK_MSG(schema_add_column(&cas_schema, "k", COL_HASH, CT_TEXT, 0, 0, false, err), err);
	CHECK_OK_MSG(schema_add_column(&cas_schema, "v", COL_REGULAR, CT_INT32, 0, 0, false, err),
		     err);
	store_schema = &cas_schema;
	cluster_up("tablet-uv-cas");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();

	/* v0, then the chain v0 -> v1 -> v2, one request at a time. */
	cw_init(&c[0], 1, "x", 0, NO_VALUE);  /* if absent: v = 0 */
	cw_run(l, (struct cw *[]){&c[0], NULL});
	CHECK_EQ_INT(c[0].w.status, 0);
	cw_init(&c[1], 2, "x", 1, 0);
	cw_run(l, (struct cw *[]){&c[1], NULL});
	CHECK_EQ_INT(c[1].w.status, 0);
	cw_init(&c[2], 3, "x", 2, 1);
	cw_run(l, (struct cw *[]){&c[2], NULL});
	CHECK_EQ_INT(c[2].w.status, 0);
	CHECK(c[2].w.ht > c[1].w.ht && c[1].w.ht > c[0].w.ht);
	/* Stale: v is 2, not 0; and "if absent" fails on an existing row. */
	cw_init(&c[3], 4, "x", 9, 0);
	cw_init(&c[4], 5, "x", 9, NO_VALUE);
	cw_run(l, (struct cw *[]){&c[3], &c[4], NULL});
	CHECK_EQ_INT(c[3].w.status, DOCRAFT_ECONDITION);
	CHECK_EQ_INT(c[4].w.status, DOCRAFT_ECONDITION);
	CHECK_EQ_U64(c[3].w.ht, 0);
	CHECK_EQ_INT(v_on(l, "x"), 2);

	/* The retry of the failed CAS (same id and seq) gets ECONDITION again,
	 * even though its condition (v == 2 now) would hold if evaluated. */
	int pairs = count_pairs(l);
	cw_init(&c[5], 4, "x", 3, 2);
	cw_run(l, (struct cw *[]){&c[5], NULL});
	CHECK_EQ_INT(c[5].w.status, DOCRAFT_ECONDITION);
	CHECK_EQ_INT(v_on(l, "x"), 2);
	/* The retry of an applied CAS is ok at its original time, not applied
	 * again (its condition, v == 1, is false now). */
	cw_init(&c[6], 3, "x", 2, 1);
	cw_run(l, (struct cw *[]){&c[6], NULL});
	CHECK_EQ_INT(c[6].w.status, 0);
	CHECK_EQ_U64(c[6].w.ht, c[2].w.ht);
	CHECK_EQ_INT(count_pairs(l), pairs);

	/* Queued in one loop turn: a plain write, a CAS that depends on it, a
	 * plain write, and the CAS's duplicate. The CAS gets an entry of its
	 * own after the first write's, so it sees v == 5. */
	cw_init(&c[7], 6, "x", 5, -1);
	cw_init(&c[8], 7, "x", 6, 5);
	cw_init(&c[9], 8, "y", 1, -1);
	cw_init(&c[10], 7, "x", 6, 5);
	struct tablet_status st0, st1;
	tablet_get_status(C.n[l].t, &st0);
	cw_run(l, (struct cw *[]){&c[7], &c[8], &c[9], &c[10], NULL});
	tablet_get_status(C.n[l].t, &st1);
	CHECK_EQ_INT(c[7].w.status, 0);
	CHECK_EQ_INT(c[8].w.status, 0);
	CHECK_EQ_INT(c[9].w.status, 0);
	CHECK_EQ_INT(c[10].w.status, 0);
	CHECK_EQ_U64(c[10].w.ht, c[8].w.ht);
	CHECK(c[8].w.ht > c[7].w.ht && c[9].w.ht > c[8].w.ht);
	test_note("4 writes (one CAS) in %" PRIu64 " entries", st1.entries - st0.entries);
	CHECK_EQ_U64(st1.entries - st0.entries, 3);
	CHECK_EQ_INT(v_on(l, "x"), 6);

	/* Every replica decided the same: identical data and retry records
	 * (with their outcomes). */
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	uint64_t sum = checksum(l), rsum = retry_checksum(l);
	for (int i = 0; i < N; i++) {
		CHECK_EQ_U64(checksum(i), sum);
		CHECK_EQ_U64(retry_checksum(i), rsum);
		CHECK_EQ_INT(v_on(i, "x"), 6);
		CHECK_EQ_INT(v_on(i, "y"), 1);
	}

	/* After a restart of every replica the outcomes come back from the
	 * store: the failed CAS is still refused, the applied one still ok. */
	for (int i = 0; i < N; i++)
		node_close(i);
	for (int i = 0; i < N; i++)
		node_open(i, false);
	CHECK(run_until(has_leader, NULL, 10000));
	l = leader_index();
	cw_init(&c[11], 4, "x", 7, 6); /* would hold now */
	cw_init(&c[12], 2, "x", 1, 0);
	cw_run(l, (struct cw *[]){&c[11], &c[12], NULL});
	CHECK_EQ_INT(c[11].w.status, DOCRAFT_ECONDITION);
	CHECK_EQ_INT(c[12].w.status, 0);
	CHECK_EQ_U64(c[12].w.ht, c[1].w.ht);
	CHECK_EQ_INT(v_on(l, "x"), 6);
	/* And a new CAS on the restarted group. */
	cw_init(&c[13], 9, "x", 7, 6);
	cw_run(l, (struct cw *[]){&c[13], NULL});
	CHECK_EQ_INT(c[13].w.status, 0);
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++) {
		CHECK_EQ_U64(checksum(i), checksum(l));
		CHECK_EQ_U64(retry_checksum(i), retry_checksum(l));
		CHECK_EQ_INT(v_on(i, "x"), 7);
	}

	for (int i = 0; i <= 13; i++)
		cw_free(&c[i]);
	cluster_down();
	store_schema = NULL;
	schema_free(&cas_schema);
}

/* Raft's in-memory log bounded by bytes (tablet.c, "Raft log memory"):
 * with a share of 64 KiB per replica, 40 writes of 4000 bytes applied one
 * entry at a time are fewer entries than the snapshot threshold (64) but
 * 160 KB: every replica snapshots by bytes (each 32 KiB applied) and keeps
 * ~8 trailing entries instead of the 32 the entry count allows, so raft
 * holds ~16 entries, not all 40 (without the byte bound: no snapshot). */
#define NBIG 40
#define BIG_BYTES 4000

static bool applied_ge(void *arg)
{
	uint64_t want = *(uint64_t *)arg;
	for (int i = 0; i < N; i++) {
		struct tablet_status st;
		tablet_get_status(C.n[i].t, &st);
		if (st.applied_index < want)
			return false;
	}
	return true;
}

/* Entries replica i's raft holds in memory. */
static uint64_t held_entries(int i)
{
	struct tablet_status st;
	tablet_get_status(C.n[i].t, &st);
	return st.last_index - st.first_index + 1;
}

/* Whether every replica's raft holds at most its 64 KiB share, with slack:
 * an entry past each half before the poll sees it, the snapshot's barrier,
 * rounding of the trailing count. */
static bool logs_within_share(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++)
		if (held_entries(i) * BIG_BYTES > (64u << 10) + 5 * BIG_BYTES)
			return false;
	return true;
}

TEST(snapshot_by_bytes)
{
	static struct w ws[NBIG];
	static char val[BIG_BYTES];
	log_memory_bytes = 64u << 10;
	memset(val, 'x', sizeof val);
	cluster_up("tablet-uv-bytes");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	for (int i = 0; i < NBIG; i++) {
		char k[16];
		struct w *one[2] = {&ws[i], NULL};
		snprintf(k, sizeof k, "big%03d", i);
		w_init_len(&ws[i], 6, (uint64_t)i + 1, k, val, sizeof val);
		CHECK_OK(tablet_write(C.n[l].t, &ws[i].req));
		CHECK(run_until(all_done, one, 10000));
		CHECK_EQ_INT(ws[i].status, 0);
	}
	struct tablet_status st;
	tablet_get_status(C.n[l].t, &st);
	uint64_t last = st.last_index;
	CHECK(run_until(applied_ge, &last, 10000));
	/* A snapshot truncates the log once its flush and marker are written
	 * (threadpool): wait for those still in flight, bounded. */
	bool within = run_until(logs_within_share, NULL, 10000);
	for (int i = 0; i < N; i++) {
		tablet_get_status(C.n[i].t, &st);
		test_note("replica %d: last %" PRIu64 ", first held %" PRIu64 ", %" PRIu64
			  " byte snapshots, %" PRIu64 " bytes since the last", i + 1, st.last_index,
			  st.first_index, st.byte_snapshots, st.log_bytes);
		CHECK_MSG(st.last_index < 64 + 8, "the entry threshold may have applied");
		CHECK_MSG(st.byte_snapshots > 0 && st.snapshot_index > 0,
			  "replica %d took no snapshot by bytes", i + 1);
		CHECK_EQ_U64(checksum(i), checksum(l));
	}
	CHECK_MSG(within, "a replica holds more than its 64 KiB share (entries of %d bytes)",
		  BIG_BYTES);
	for (int i = 0; i < NBIG; i++)
		batch_free(&ws[i].b);
	log_memory_bytes = 0;
	cluster_down();
}

/* ---- Redis writes (issue 17) ---------------------------------------------- */

static bool rws_done(void *arg)
{
	struct rw **ws = arg;
	for (int i = 0; ws[i] != NULL; i++)
		if (!ws[i]->done)
			return false;
	return true;
}

/* w through replica i, answered with status 0 and the replies want. */
static void rw_expect(struct rw *w, int i, const char *want)
{
	struct rw *one[2] = {w, NULL};
	CHECK_OK(tablet_write(C.n[i].t, &w->req));
	CHECK(run_until(rws_done, one, 10000));
	CHECK_EQ_INT(w->status, 0);
	CHECK_EQ_STR((const char *)w->replies.data, want);
}

static bool read_done(void *arg)
{
	return ((struct r *)arg)->done;
}

/* line's replies, read linearizably at replica i. */
static void redis_read_at(int i, const char *line, struct buf *out)
{
	struct r rd;
	memset(&rd, 0, sizeof rd);
	rd.req.data = &rd;
	rd.req.cb = read_cb;
	CHECK_OK(tablet_read(C.n[i].t, &rd.req));
	CHECK(run_until(read_done, &rd, 10000));
	CHECK_EQ_INT(rd.status, 0);
	redis_read(tablet_store(C.n[i].t), rd.ht, line, out);
	buf_push(out, 0);
}

static void redis_read_expect(int i, const char *line, const char *want)
{
	struct buf out = BUF_INIT;
	redis_read_at(i, line, &out);
	CHECK_EQ_STR((const char *)out.data, want);
	buf_free(&out);
}

/* Stored reply records (0x03) of replica i. */
static int reply_records(int i)
{
	const uint8_t hi = RETRY_REPLY_PREFIX + 1;
	int n;
	checksum_range(i, RETRY_REPLY_PREFIX, &hi, &n);
	return n;
}

#define NR 50

/* SET then GET; INCRs of one key from 50 clients grouped into few entries
 * give 1..50; a request's commands see each other; a retry, later or at
 * once, gets the first replies and increments nothing; replicas end equal,
 * reply records included; malformed commands never reach the log. */
TEST(redis_writes)
{
	static struct rw ws[NR];
	struct rw *list[NR + 1], set, multi, again, d1, d2, bad;
	struct tablet_status st0, st;
	bool seen[NR + 1] = {false};
	uint64_t idx;
	const uint8_t hi = RETRY_REPLY_PREFIX + 1;

	cluster_up("tablet-uv-redis");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	rw_init(&set, 1, 1, "set k v");
	rw_expect(&set, l, "+OK\r\n");
	redis_read_expect(l, "get k", "$1\r\nv\r\n");

	tablet_get_status(C.n[l].t, &st0);
	for (int i = 0; i < NR; i++) {
		rw_init(&ws[i], (uint8_t)(10 + i), 1, "incr n");
		CHECK_OK(tablet_write(C.n[l].t, &ws[i].req));
		list[i] = &ws[i];
	}
	list[NR] = NULL;
	CHECK(run_until(rws_done, list, 10000));
	for (int i = 0; i < NR; i++) {
		int v = 0;
		CHECK_EQ_INT(ws[i].status, 0);
		CHECK(sscanf((const char *)ws[i].replies.data, ":%d\r\n", &v) == 1);
		CHECK_MSG(v >= 1 && v <= NR && !seen[v], "reply %d", v);
		seen[v] = true;
	}
	tablet_get_status(C.n[l].t, &st);
	test_note("%d INCRs in %" PRIu64 " entries", NR, st.entries - st0.entries);
	CHECK(st.entries - st0.entries < NR / 2);

	rw_init(&multi, 2, 1, "incr n;incr n;get n;get k");
	rw_expect(&multi, l, ":51\r\n:52\r\n$2\r\n52\r\n$1\r\nv\r\n");

	/* The retry's replies are the first ones, nothing applies again. */
	rw_init(&again, 10, 1, "incr n");
	rw_expect(&again, l, (const char *)ws[0].replies.data);
	/* Twice at once: the second waits for the first, same replies. */
	rw_init(&d1, 3, 1, "incr n");
	rw_init(&d2, 3, 1, "incr n");
	CHECK_OK(tablet_write(C.n[l].t, &d1.req));
	rw_expect(&d2, l, ":53\r\n");
	CHECK(d1.done && d1.status == 0);
	CHECK_EQ_STR((const char *)d1.replies.data, ":53\r\n");
	redis_read_expect(l, "get n", "$2\r\n53\r\n");

	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++) {
		CHECK_EQ_U64(checksum(i), checksum(l));
		CHECK_EQ_U64(checksum_range(i, RETRY_REPLY_PREFIX, &hi, NULL),
			     checksum_range(l, RETRY_REPLY_PREFIX, &hi, NULL));
		/* The INCRs' and the MULTI's; not the SET's: "+OK" needs none. */
		CHECK_EQ_INT(reply_records(i), NR + 2);
	}
	/* A retry of the SET (client 1, seq 1) is answered "+OK" without a
	 * record and applies nothing again. */
	rw_free(&set);
	rw_init(&set, 1, 1, "set k v");
	rw_expect(&set, l, "+OK\r\n");
	redis_read_expect(l, "get k", "$1\r\nv\r\n");

	/* 2000 INCRs over 10 keys from 20 clients in one loop turn: on each
	 * key the replies are exactly 1..200 (a measurement, noted). */
	{
		enum { NC = 20, NS_ = 100, NK = 10 };
		static struct rw many[NC * NS_];
		static struct rw *ml[NC * NS_ + 1];
		static bool got[NK][NC * NS_ / NK + 1];
		uint64_t t0 = uv_hrtime();
		tablet_get_status(C.n[l].t, &st0);
		for (int c = 0; c < NC; c++)
			for (int q = 0; q < NS_; q++) {
				char cmd[32];
				int i = c * NS_ + q;
				snprintf(cmd, sizeof cmd, "incr m%d", q % NK);
				rw_init(&many[i], (uint8_t)(100 + c), (uint64_t)q + 1, cmd);
				CHECK_OK(tablet_write(C.n[l].t, &many[i].req));
				ml[i] = &many[i];
			}
		ml[NC * NS_] = NULL;
		CHECK(run_until(rws_done, ml, 30000));
		tablet_get_status(C.n[l].t, &st);
		test_note("%d INCRs from %d clients in %" PRIu64 " entries, %.1f ms", NC * NS_, NC,
			  st.entries - st0.entries, (double)(uv_hrtime() - t0) / 1e6);
		for (int i = 0; i < NC * NS_; i++) {
			int v = 0;
			CHECK_EQ_INT(many[i].status, 0);
			CHECK(sscanf((const char *)many[i].replies.data, ":%d\r\n", &v) == 1);
			CHECK(v >= 1 && v <= NC * NS_ / NK && !got[(i % NS_) % NK][v]);
			got[(i % NS_) % NK][v] = true;
			rw_free(&many[i]);
		}
		redis_read_expect(l, "get m0;get m9", "$3\r\n200\r\n$3\r\n200\r\n");
	}

	/* Malformed commands, or commands with a batch: refused at once. */
	rw_init(&bad, 4, 1, "get k");
	bad.req.redis_len = 3;
	CHECK_EQ_INT(tablet_write(C.n[l].t, &bad.req), DOCRAFT_EINVAL);
	bad.req.redis_len = bad.cmds.len;
	bad.req.batch = "x";
	bad.req.batch_len = 1;
	CHECK_EQ_INT(tablet_write(C.n[l].t, &bad.req), DOCRAFT_EINVAL);

	for (int i = 0; i < NR; i++)
		rw_free(&ws[i]);
	rw_free(&set);
	rw_free(&multi);
	rw_free(&again);
	rw_free(&d1);
	rw_free(&d2);
	rw_free(&bad);
	cluster_down();
}

/* A retried INCR is answered with its first reply from the replicated
 * state after every replica restarted and after a leadership transfer; a
 * reply too large to keep is answered with the documented error; reply
 * records go when their client forgets their seqs. */
TEST(redis_replies_survive_restart_and_transfer)
{
	static char line[80000];
	struct rw a, big, retry, fgt;
	struct buf want = BUF_INIT;
	uint64_t idx;

	cluster_up("tablet-uv-redis-restart");
	CHECK(run_until(has_leader, NULL, 10000));
	int l = leader_index();
	rw_init(&a, 7, 1, "incr c");
	rw_expect(&a, l, ":1\r\n");
	memcpy(line, "set big ", 8);
	memset(line + 8, 'x', 70000);
	strcpy(line + 8 + 70000, ";get big");
	rw_init(&big, 7, 2, line);
	CHECK_OK(tablet_write(C.n[l].t, &big.req));
	{
		struct rw *one[2] = {&big, NULL};
		CHECK(run_until(rws_done, one, 10000));
	}
	CHECK_EQ_INT(big.status, 0);
	CHECK_EQ_U64(big.replies.len, 5 + 8 + 70000 + 2);
	store_applied(tablet_store(C.n[l].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));

	for (int i = 0; i < N; i++) {
		node_close(i);
		log_close(i);
		log_open(i);
	}
	for (int i = 0; i < N; i++)
		node_open(i, false);
	CHECK(run_until(has_leader, NULL, 10000));
	int m = leader_index();
	rw_init(&retry, 7, 1, "incr c");
	rw_expect(&retry, m, ":1\r\n");
	rw_free(&retry);
	redis_read_expect(m, "get c", "$1\r\n1\r\n");
	for (int k = 0; k < 2; k++)
		buf_append(&want, "-" FSM_REDIS_TOO_LARGE "\r\n", strlen(FSM_REDIS_TOO_LARGE) + 3);
	buf_push(&want, 0);
	rw_init(&retry, 7, 2, line);
	rw_expect(&retry, m, (const char *)want.data);
	rw_free(&retry);

	transferred = false;
	CHECK_OK_MSG(tablet_transfer(C.n[m].t, 0, transfer_cb, NULL, C.errmsg), C.errmsg);
	CHECK(run_until(transfer_done, &m, 10000));
	int nl = leader_index();
	test_note("leader %d, after the restart %d, after the transfer %d", l + 1, m + 1, nl + 1);
	rw_init(&retry, 7, 1, "incr c");
	rw_expect(&retry, nl, ":1\r\n");
	rw_free(&retry);

	/* min_running 3 forgets seqs 1 and 2: their reply records go. */
	rw_init(&fgt, 7, 3, "incr c");
	fgt.req.min_running = 3;
	rw_expect(&fgt, nl, ":2\r\n");
	store_applied(tablet_store(C.n[nl].t), &idx, NULL);
	CHECK(run_until(applied_on_all, &idx, 10000));
	for (int i = 0; i < N; i++) {
		CHECK_EQ_INT(reply_records(i), 1);
		CHECK_EQ_U64(checksum(i), checksum(nl));
	}
	rw_free(&a);
	rw_free(&big);
	rw_free(&fgt);
	buf_free(&want);
	cluster_down();
}

TEST_MAIN(T(writes_reads_and_retries), T(linearizable_reads), T(restart_replays_only_unflushed),
	  T(follower_catches_up_by_copy), T(close_during_copy), T(transfer_with_writes_in_flight),
	  T(remove_replica),
	  T(conditional_writes), T(lease_reads), T(segments_are_written),
	  T(snapshot_by_bytes), T(redis_writes), T(redis_replies_survive_restart_and_transfer))
