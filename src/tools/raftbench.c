/* docraft-raftbench: replication throughput and commit latency.
 *
 * Starts three server processes on 127.0.0.1-3 (fork of this binary), each
 * hosting a replica of every tablet (RF 3, each process's shared Raft log
 * in DIR/nI/raftlog, or with --raft-log per-tablet a raft_uv per replica,
 * real RocksDB with the WAL off, the one-port transport). Once every tablet has a ready
 * leader, each process runs closed-loop writers on the tablets it leads: a
 * writer submits a one-pair DocDB batch through tablet_write and submits the
 * next one when the previous is acknowledged (committed by a majority and
 * applied on the leader). After a warm-up, writes, Raft entries and
 * per-write latency (submit to acknowledgement) are measured for the given
 * duration; the parent merges the three processes' figures:
 *
 *   docraft-raftbench --tablets 8 --writers 8 --seconds 10
 *   tablets writers/tablet  writes/s  entries/s  writes/entry  p50 ms  p99 ms
 *
 * Not a test: it asserts nothing; docs/benchmarks.md records its output. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/histogram.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "net/listener.h"
#include "raftlog/raftlog.h"
#include "tablet/tablet.h"

#define NODES 3
#define MAX_TABLETS 128

struct opts {
	int tablets;
	int writers;
	int seconds;
	int warmup;
	int value_size;
	int port;
	int max_inflight; /* tablet_options.max_inflight; 0: its default */
	const char *dir;
	bool per_tablet_log; /* --raft-log per-tablet */
};

struct writer {
	struct tablet_write req;
	struct node *n;
	int tablet;
	uint64_t seq;
	uint64_t started;
	struct batch b;
};

struct node {
	int index;
	struct opts o;
	uv_loop_t loop;
	struct listener *l;
	struct raftlog *log; /* NULL: --raft-log per-tablet */
	struct tablet *t[MAX_TABLETS];
	char addr[NODES][32];
	uv_timer_t timer;
	enum { WAITING, WARMUP, MEASURE, DONE } phase;
	uint64_t phase_end;
	struct writer *w;
	int nw;
	uint64_t writes;
	uint64_t entries_start[MAX_TABLETS];
	uint64_t entries;
	struct histogram h;
	int out_fd;
	char value[4096];
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void submit(struct writer *w);

static void write_cb(struct tablet_write *req, int status, uint64_t ht)
{
	struct writer *w = req->data;
	struct node *n = w->n;
	(void)ht;
	if (status == 0 && n->phase == MEASURE) {
		n->writes++;
		histogram_record(&n->h, now_us() - w->started);
	}
	if (n->phase == WARMUP || n->phase == MEASURE)
		submit(w);
}

static void submit(struct writer *w)
{
	struct node *n = w->n;
	char key[32];
	struct pv comp;
	struct dockey dk;
	struct buf k = BUF_INIT;
	snprintf(key, sizeof key, "w%d-%" PRIu64, (int)(w - n->w), w->seq);
	comp = pv_str(key);
	dk = (struct dockey){false, 0, 0, 1, NULL, &comp};
	dockey_append(&k, &dk);
	batch_reset(&w->b);
	batch_put(&w->b, k.data, k.len, n->value, (size_t)n->o.value_size);
	buf_free(&k);
	w->seq++;
	memset(w->req.client_id, 0, sizeof w->req.client_id);
	w->req.client_id[0] = (uint8_t)n->index;
	memcpy(w->req.client_id + 1, &w, sizeof w);
	w->req.seq = w->seq;
	w->req.min_running = w->seq;
	w->req.batch = w->b.data.data;
	w->req.batch_len = w->b.data.len;
	w->req.cb = write_cb;
	w->req.data = w;
	w->started = now_us();
	if (tablet_write(n->t[w->tablet], &w->req) != 0)
		fprintf(stderr, "raftbench: node %d: write refused\n", n->index + 1);
}

static bool leads(struct node *n, int i)
{
	struct tablet_status st;
	tablet_get_status(n->t[i], &st);
	return st.role == TABLET_LEADER;
}

static bool all_have_ready_leaders(struct node *n)
{
	for (int i = 0; i < n->o.tablets; i++) {
		struct tablet_status st;
		tablet_get_status(n->t[i], &st);
		/* A follower knows the leader; readiness shows on the leader only,
		 * so also wait a little after every tablet has one (timer). */
		if (st.leader_id == 0)
			return false;
	}
	return true;
}

static void report(struct node *n)
{
	/* writes, entries, then the histogram, as raw bytes on the pipe. */
	uint64_t hdr[2] = {n->writes, n->entries};
	if (write(n->out_fd, hdr, sizeof hdr) != sizeof hdr ||
	    write(n->out_fd, &n->h, sizeof n->h) != sizeof n->h)
		fprintf(stderr, "raftbench: node %d: cannot report\n", n->index + 1);
	close(n->out_fd);
}

static void timer_cb(uv_timer_t *h)
{
	struct node *n = h->data;
	uint64_t now = uv_now(&n->loop);
	switch (n->phase) {
	case WAITING:
		if (!all_have_ready_leaders(n) || now < n->phase_end)
			return;
		n->phase = WARMUP;
		n->phase_end = now + (uint64_t)n->o.warmup * 1000;
		for (int i = 0; i < n->o.tablets; i++) {
			if (!leads(n, i))
				continue;
			for (int k = 0; k < n->o.writers; k++) {
				struct writer *w = &n->w[n->nw++];
				w->n = n;
				w->tablet = i;
				batch_init(&w->b);
				submit(w);
			}
		}
		return;
	case WARMUP:
		if (now < n->phase_end)
			return;
		for (int i = 0; i < n->o.tablets; i++) {
			struct tablet_status st;
			tablet_get_status(n->t[i], &st);
			n->entries_start[i] = st.entries;
		}
		n->phase = MEASURE;
		n->phase_end = now + (uint64_t)n->o.seconds * 1000;
		return;
	case MEASURE:
		if (now < n->phase_end)
			return;
		n->phase = DONE;
		for (int i = 0; i < n->o.tablets; i++) {
			struct tablet_status st;
			tablet_get_status(n->t[i], &st);
			n->entries += st.entries - n->entries_start[i];
		}
		report(n);
		/* Keep serving as a follower until the parent ends us. */
		return;
	case DONE:
		return;
	}
}

static int node_main(int index, const struct opts *o, int out_fd)
{
	static struct node n;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memset(&n, 0, sizeof n);
	n.index = index;
	n.o = *o;
	n.out_fd = out_fd;
	memset(n.value, 'x', sizeof n.value);
	histogram_init(&n.h);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	log_init();
	uv_loop_init(&n.loop);
	for (int i = 0; i < NODES; i++)
		snprintf(n.addr[i], sizeof n.addr[i], "127.0.0.%d:%d", i + 1, o->port);
	if (listener_open(&n.loop, n.addr[index], &n.l, errmsg) != 0) {
		fprintf(stderr, "raftbench: %s\n", errmsg);
		return 1;
	}
	if (!o->per_tablet_log) {
		char dir[512];
		struct raftlog_options lo = {.dir = dir, .segment_bytes = RAFTLOG_SEGMENT_BYTES};
		if ((size_t)snprintf(dir, sizeof dir, "%s/n%d/raftlog", o->dir, index + 1) >=
		    sizeof dir) {
			fprintf(stderr, "raftbench: --dir too long: %s\n", o->dir);
			return 1;
		}
		if (raftlog_open(&n.loop, &lo, &n.log, errmsg) != 0) {
			fprintf(stderr, "raftbench: %s\n", errmsg);
			return 1;
		}
	}
	n.w = xcalloc((size_t)(o->tablets * o->writers), sizeof *n.w);
	for (int i = 0; i < o->tablets; i++) {
		struct tablet_options to;
		struct tablet_peer peers[NODES];
		char id[16], dir[512];
		snprintf(id, sizeof id, "bench%d", i);
		if ((size_t)snprintf(dir, sizeof dir, "%s/n%d/%s", o->dir, index + 1, id) >=
		    sizeof dir) {
			fprintf(stderr, "raftbench: --dir too long: %s\n", o->dir);
			return 1;
		}
		tablet_options_default(&to);
		to.id = id;
		to.dir = dir;
		if (o->max_inflight > 0)
			to.max_inflight = (unsigned)o->max_inflight;
		to.raft_id = (raft_id)(index + 1);
		to.address = n.addr[index];
		to.listener = n.l;
		to.raft_log = n.log;
		for (int p = 0; p < NODES; p++)
			peers[p] = (struct tablet_peer){(raft_id)(p + 1), n.addr[p], RAFT_VOTER};
		if (tablet_open(&n.loop, &to, &n.t[i], errmsg) != 0 ||
		    tablet_bootstrap(n.t[i], peers, NODES, errmsg) != 0 ||
		    tablet_start(n.t[i], errmsg) != 0) {
			fprintf(stderr, "raftbench: %s\n", errmsg);
			return 1;
		}
	}
	uv_timer_init(&n.loop, &n.timer);
	n.timer.data = &n;
	n.phase_end = uv_now(&n.loop) + 1500; /* let barriers apply, leaders settle */
	uv_timer_start(&n.timer, timer_cb, 10, 10);
	uv_run(&n.loop, UV_RUN_DEFAULT);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: docraft-raftbench [--tablets N] [--writers W] [--seconds S] [--warmup S]\n"
		"                         [--value-size B] [--port P] [--dir DIR] [--max-inflight E]\n"
		"                         [--raft-log shared|per-tablet]\n"
		"Three replica processes on 127.0.0.1-3; W closed-loop writers per tablet\n"
		"on each tablet's leader. Prints writes/s, entries/s and commit latency.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"tablets", 1, 0, 't'}, {"writers", 1, 0, 'w'}, {"seconds", 1, 0, 's'},
		{"warmup", 1, 0, 'u'},  {"value-size", 1, 0, 'v'}, {"port", 1, 0, 'p'},
		{"dir", 1, 0, 'd'},     {"max-inflight", 1, 0, 'e'},
		{"raft-log", 1, 0, 'r'}, {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
	struct opts o = {1, 1, 10, 2, 100, 0, 0, NULL, false};
	char tmp[4096], errmsg[DOCRAFT_ERRMSG_SIZE];
	bool made = false; /* o.dir is our temporary directory: removed at the end */
	pid_t pids[NODES];
	int fds[NODES];
	int c;
	static struct histogram total;
	uint64_t writes = 0, entries = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 't': o.tablets = atoi(optarg); break;
		case 'w': o.writers = atoi(optarg); break;
		case 's': o.seconds = atoi(optarg); break;
		case 'u': o.warmup = atoi(optarg); break;
		case 'v': o.value_size = atoi(optarg); break;
		case 'p': o.port = atoi(optarg); break;
		case 'd': o.dir = optarg; break;
		case 'e': o.max_inflight = atoi(optarg); break;
		case 'r':
			if (strcmp(optarg, "shared") != 0 && strcmp(optarg, "per-tablet") != 0) {
				usage(stderr);
				return 2;
			}
			o.per_tablet_log = strcmp(optarg, "per-tablet") == 0;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.tablets < 1 || o.tablets > MAX_TABLETS || o.writers < 1 || o.seconds < 1 ||
	    o.value_size < 1 || o.value_size > 4096) {
		usage(stderr);
		return 2;
	}
	if (o.port == 0)
		o.port = 30000 + (int)(getpid() % 20000);
	if (o.dir == NULL) {
		if (fs_mkdtemp(NULL, "docraft-raftbench", tmp, sizeof tmp, errmsg) != 0) {
			fprintf(stderr, "raftbench: %s\n", errmsg);
			return 1;
		}
		o.dir = tmp;
		made = true;
	}
	for (int i = 0; i < NODES; i++) {
		int p[2];
		if (pipe(p) != 0) {
			perror("pipe");
			return 1;
		}
		pids[i] = fork();
		if (pids[i] == 0) {
			close(p[0]);
			_exit(node_main(i, &o, p[1]));
		}
		close(p[1]);
		fds[i] = p[0];
	}
	histogram_init(&total);
	for (int i = 0; i < NODES; i++) {
		uint64_t hdr[2];
		static struct histogram h;
		size_t got = 0;
		ssize_t r;
		char *dst = (char *)hdr;
		while (got < sizeof hdr && (r = read(fds[i], dst + got, sizeof hdr - got)) > 0)
			got += (size_t)r;
		if (got != sizeof hdr) {
			fprintf(stderr, "raftbench: node %d reported nothing\n", i + 1);
			continue;
		}
		got = 0;
		dst = (char *)&h;
		while (got < sizeof h && (r = read(fds[i], dst + got, sizeof h - got)) > 0)
			got += (size_t)r;
		if (got == sizeof h)
			histogram_merge(&total, &h);
		writes += hdr[0];
		entries += hdr[1];
		close(fds[i]);
	}
	for (int i = 0; i < NODES; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	if (made)
		fs_remove_tree(o.dir);
	printf("%-8s %-15s %10s %10s %13s %8s %8s %8s\n", "tablets", "writers/tablet", "writes/s",
	       "entries/s", "writes/entry", "p50 ms", "p99 ms", "max ms");
	printf("%-8d %-15d %10.0f %10.0f %13.1f %8.2f %8.2f %8.2f\n", o.tablets, o.writers,
	       (double)writes / o.seconds, (double)entries / o.seconds,
	       entries ? (double)writes / (double)entries : 0.0,
	       (double)histogram_quantile(&total, 0.50) / 1000.0,
	       (double)histogram_quantile(&total, 0.99) / 1000.0, (double)total.max / 1000.0);
	return writes > 0 ? 0 : 1;
}
