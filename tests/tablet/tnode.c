/* tnode: one test server process hosting tablet replicas, driven line by line
 * over stdin/stdout by the real-process tests (test_process.c).
 *
 *   tnode --id N --address IP:PORT --dir DIR --peers "1=IP:PORT,2=..."
 *         [--bootstrap] [--tablets K] [--heartbeat-ms MS] [--election-ms MS]
 *         [--snapshot-threshold N] [--snapshot-trailing N]
 *         [--raft-log shared|per-tablet]
 *
 * One process = one server: a listener on --address carrying the Raft (and
 * checkpoint copy) traffic of tablets "tab1".."tabK" (default K = 1), each a
 * replica with raft id --id and data under DIR/tabI. Their Raft logs are
 * groups of one shared log in DIR/raftlog (raftlog.h; the default, as in
 * the tserver), or with --raft-log per-tablet each a raft_uv in DIR/tabI/raft. --bootstrap writes the
 * initial configuration (every peer a voter; harmless on a restart); without
 * it the replica waits to be added by a leader.
 *
 * Protocol: one command per line on stdin, one answer line per command on
 * stdout (flushed per line). Commands act on tab1 unless prefixed with
 * "@<tablet-id> ". Words are separated by single spaces; keys and values are
 * single words. Values in answers are printed with bytes outside 0x21..0x7e
 * and '%' escaped as %XX; "-" means "no value".
 *
 *   w TAG CLIENT SEQ KEY VALUE [MIN_RUNNING]
 *       Asynchronous write of one pair DocKey(KEY as a string range
 *       component) -> VALUE (raw bytes) with client id CLIENT (a number, as
 *       16 bytes: big-endian in the first 8) and sequence SEQ; MIN_RUNNING
 *       (default 1) is the client's smallest sequence still in flight.
 *       Many may be in flight. Answer, when done:
 *           W TAG ok HT
 *           W TAG err CODE LEADER-ID      (CODE: ENOTLEADER, ELEADERLOST, ...)
 *   r TAG KEY
 *       Linearizable read (tablet_read, then the newest version of KEY at or
 *       below the read time).       R TAG ok VALUE|-   or   R TAG err CODE LEADER-ID
 *   get KEY          local, non-linearizable: newest version here. G VALUE|-
 *   status           S role=R term=N leader=ID applied=N last=N flushed=N
 *                      replayed=N skipped=N copies=N store=N entries=N writes=N
 *                      snap=N (store index of the last raft snapshot)
 *                      first=N (first entry raft's log still holds)
 *                      [err=MESSAGE]
 *                    (role: follower candidate leader_not_ready leader copying
 *                    failed closed; store: the store's applied marker;
 *                    err: why FAILED, spaces as '_')
 *   checksum         C HEX n=PAIRS
 *                    FNV-1a 64 over every stored data pair (key first byte
 *                    > 0x20: internal records such as the applied marker and
 *                    the retry table are left out), in key order, each as
 *                    LE32 key length, key, LE32 value length, value. Replicas
 *                    that applied the same entries agree.
 *   snapshot         A ok            (asks raft for a snapshot soon)
 *   flush            A ok | A err CODE MESSAGE
 *   add ID ADDRESS   A ok | A err CODE MESSAGE   (answered when done)
 *   remove ID        idem
 *   transfer ID      idem (0: any voter)
 *   quit             closes everything gracefully, answers "Q ok", exits 0
 *
 * Unknown or malformed commands answer "E message". EOF on stdin and SIGTERM
 * (or SIGINT) close gracefully like quit. Logs go to stderr (DOCRAFT_TRACE).
 * Everything runs on the one loop thread. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "common/buf.h"
#include "common/log.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "docdb/store.h"
#include "net/listener.h"
#include "raftlog/raftlog.h"
#include "tablet/tablet.h"
#include "tablet/remote_copy.h"

#define MAX_PEERS 16
#define MAX_TABLETS 64
#define MAX_LINE (1u << 20)
#define MAX_WORDS 8

struct tab {
	struct tablet *t;
	char id[16];
	char dir[4096];
	bool closed;
};

struct opts {
	raft_id id;
	const char *address;
	const char *dir;
	const char *peers_arg;
	bool bootstrap;
	int ntabs;
	unsigned heartbeat_ms;
	unsigned election_ms;
	unsigned snapshot_threshold;
	unsigned snapshot_trailing;
	bool per_tablet_log;
};

static struct {
	struct opts o;
	uv_loop_t loop;
	struct listener *l;
	struct copy_server copy; /* serves checkpoint copies of our tablets */
	bool copy_on;
	struct raftlog *log;     /* DIR/raftlog; NULL with --raft-log per-tablet */
	struct tab tabs[MAX_TABLETS];
	int ntabs;
	int open_tabs;
	struct tablet_peer peers[MAX_PEERS];
	char peer_addr[MAX_PEERS][64];
	size_t npeers;
	union {
		uv_pipe_t pipe;
		uv_tty_t tty;
		uv_stream_t stream;
	} in;
	bool in_open;
	uv_signal_t sigterm, sigint;
	struct buf line;
	bool quitting;
	bool out_broken;
	int exit_code;
} S;

/* ---- output ----------------------------------------------------------------- */

static void write_all(const char *p, size_t n)
{
	while (n > 0 && !S.out_broken) {
		ssize_t k = write(STDOUT_FILENO, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			usleep(1000);
			continue;
		}
		if (k <= 0) {
			S.out_broken = true;
			break;
		}
		p += k;
		n -= (size_t)k;
	}
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One answer line, written with one write(2) when it fits. */
static void reply(const char *fmt, ...)
{
	char small[1024];
	char *p = small;
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof small - 1) {
		p = malloc((size_t)n + 2);
		if (p == NULL)
			abort();
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	p[n] = '\n';
	write_all(p, (size_t)n + 1);
	if (p != small)
		free(p);
}

static const char *code_name(int code)
{
	static const char *const names[] = {
		"OK",         "EINVAL",    "ENOTFOUND",  "ECORRUPT",    "EIO",
		"ENOSPC",     "ENOMEM",    "ETOOOLD",    "ECLOCKSKEW",  "ETOOBIG",
		"ECLOSED",    "ENOTLEADER", "ELEADERLOST", "EUNAVAILABLE", "EBUSY",
		"ETIMEDOUT",
	};
	if (code >= 0 && (size_t)code < sizeof names / sizeof names[0])
		return names[code];
	return "EUNKNOWN";
}

static const char *role_word(enum tablet_role r)
{
	switch (r) {
	case TABLET_FOLLOWER: return "follower";
	case TABLET_CANDIDATE: return "candidate";
	case TABLET_LEADER_NOT_READY: return "leader_not_ready";
	case TABLET_LEADER: return "leader";
	case TABLET_COPYING: return "copying";
	case TABLET_FAILED: return "failed";
	case TABLET_CLOSED: return "closed";
	}
	return "unknown";
}

/* Escapes bytes outside 0x21..0x7e, and '%', as %XX into out (NUL-ended). */
static void escape(struct buf *out, const uint8_t *p, size_t n)
{
	static const char hexd[] = "0123456789ABCDEF";
	buf_reset(out);
	for (size_t i = 0; i < n; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f && p[i] != '%') {
			buf_append(out, &p[i], 1);
		} else {
			char e[3] = {'%', hexd[p[i] >> 4], hexd[p[i] & 15]};
			buf_append(out, e, 3);
		}
	}
	buf_append(out, "", 1);
}

/* A message as one word: spaces become '_'. */
static void one_word(char *s)
{
	for (; *s; s++)
		if (*s == ' ' || *s == '\t' || *s == '\n')
			*s = '_';
}

/* ---- store lookups ------------------------------------------------------------ */

/* dockey(key) '#': the prefix of every version of key. */
static void key_prefix(struct buf *out, const char *key)
{
	struct pv comp = pv_str(key);
	struct dockey d = {false, 0, 0, 1, NULL, &comp};
	buf_reset(out);
	dockey_append(out, &d);
	uint8_t h = KT_HYBRID_TIME;
	buf_append(out, &h, 1);
}

/* The newest version of key at or below ht (HT_MAX: the newest) into val;
 * false when there is none. */
static bool lookup(struct store *s, const char *key, uint64_t ht, struct buf *val)
{
	struct buf prefix = BUF_INIT, seek = BUF_INIT, upper = BUF_INIT;
	struct store_iter *it;
	bool found = false;
	uint8_t end;

	key_prefix(&prefix, key);
	buf_append(&upper, prefix.data, prefix.len - 1);
	end = KT_HYBRID_TIME + 1;
	buf_append(&upper, &end, 1);
	buf_append(&seek, prefix.data, prefix.len);
	if (ht != UINT64_MAX) {
		struct docht d = {ht, UINT32_MAX};
		docht_append(&seek, d);
	}
	it = store_iter_new(s, prefix.data, prefix.len, upper.data, upper.len);
	store_iter_seek(it, seek.data, seek.len);
	if (store_iter_valid(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		size_t path_len;
		struct docht d;
		if (key_split_ht(k, kl, &path_len, &d) == 0 && path_len == prefix.len - 1 &&
		    d.ht <= ht) {
			buf_reset(val);
			buf_append(val, v, vl);
			found = true;
		}
	}
	store_iter_free(it);
	buf_free(&prefix);
	buf_free(&seek);
	buf_free(&upper);
	return found;
}

static void put_le32(uint64_t *h, uint32_t x)
{
	for (int i = 0; i < 4; i++)
		*h = (*h ^ ((x >> (8 * i)) & 0xFF)) * 1099511628211ULL;
}

static void put_bytes(uint64_t *h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ p[i]) * 1099511628211ULL;
}

static int checksum(struct store *s, uint64_t *sum, uint64_t *pairs, char *errmsg)
{
	const uint8_t lo = KT_INTERNAL_MAX + 1;
	struct store_iter *it = store_iter_new(s, &lo, 1, NULL, 0);
	uint64_t h = 1469598103934665603ULL, n = 0;
	int rv;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		put_le32(&h, (uint32_t)kl);
		put_bytes(&h, k, kl);
		put_le32(&h, (uint32_t)vl);
		put_bytes(&h, v, vl);
		n++;
	}
	rv = store_iter_status(it, errmsg);
	store_iter_free(it);
	*sum = h;
	*pairs = n;
	return rv;
}

/* ---- writes and reads ------------------------------------------------------------ */

struct wreq {
	struct tablet_write req;
	struct tab *tab;
	struct batch b;
	char tag[64];
};

static void parse_client(const char *s, uint8_t out[ENTRY_CLIENT_ID_LEN])
{
	uint64_t c = strtoull(s, NULL, 10);
	memset(out, 0, ENTRY_CLIENT_ID_LEN);
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(c >> (56 - 8 * i));
}

static raft_id leader_of(struct tab *tab)
{
	return tab->closed ? 0 : tablet_leader(tab->t, NULL);
}

static void write_done(struct tablet_write *req, int status, uint64_t ht)
{
	struct wreq *w = req->data;
	if (status == 0)
		reply("W %s ok %" PRIu64, w->tag, ht);
	else
		reply("W %s err %s %llu", w->tag, code_name(status),
		      (unsigned long long)leader_of(w->tab));
	batch_free(&w->b);
	free(w);
}

static void cmd_write(struct tab *tab, char **a, int n)
{
	struct wreq *w;
	struct buf dk = BUF_INIT;
	struct pv comp;
	struct dockey d;
	int rv;

	if (n < 6 || n > 7 || strlen(a[1]) >= sizeof w->tag) {
		reply("E usage: w TAG CLIENT SEQ KEY VALUE [MIN_RUNNING]");
		return;
	}
	w = calloc(1, sizeof *w);
	if (w == NULL)
		abort();
	w->tab = tab;
	snprintf(w->tag, sizeof w->tag, "%s", a[1]);
	batch_init(&w->b);
	comp = pv_str(a[4]);
	d = (struct dockey){false, 0, 0, 1, NULL, &comp};
	dockey_append(&dk, &d);
	batch_put(&w->b, dk.data, dk.len, a[5], strlen(a[5]));
	buf_free(&dk);
	parse_client(a[2], w->req.client_id);
	w->req.seq = strtoull(a[3], NULL, 10);
	w->req.min_running = n == 7 ? strtoull(a[6], NULL, 10) : 1;
	w->req.batch = w->b.data.data;
	w->req.batch_len = w->b.data.len;
	w->req.cb = write_done;
	w->req.data = w;
	rv = tab->closed ? DOCRAFT_ECLOSED : tablet_write(tab->t, &w->req);
	if (rv != 0) {
		w->req.data = w;
		write_done(&w->req, rv, 0);
	}
}

struct rreq {
	struct tablet_read req;
	struct tab *tab;
	char tag[64];
	char key[];
};

static void read_done(struct tablet_read *req, int status, uint64_t read_ht)
{
	struct rreq *r = req->data;
	if (status != 0 || r->tab->closed) {
		reply("R %s err %s %llu", r->tag, code_name(status ? status : DOCRAFT_ECLOSED),
		      (unsigned long long)leader_of(r->tab));
	} else {
		struct buf val = BUF_INIT, esc = BUF_INIT;
		if (lookup(tablet_store(r->tab->t), r->key, read_ht, &val)) {
			escape(&esc, val.data, val.len);
			reply("R %s ok %s", r->tag, (const char *)esc.data);
		} else {
			reply("R %s ok -", r->tag);
		}
		buf_free(&val);
		buf_free(&esc);
	}
	free(r);
}

static void cmd_read(struct tab *tab, char **a, int n)
{
	struct rreq *r;
	int rv;
	if (n != 3 || strlen(a[1]) >= sizeof r->tag) {
		reply("E usage: r TAG KEY");
		return;
	}
	r = calloc(1, sizeof *r + strlen(a[2]) + 1);
	if (r == NULL)
		abort();
	r->tab = tab;
	snprintf(r->tag, sizeof r->tag, "%s", a[1]);
	strcpy(r->key, a[2]);
	r->req.data = r;
	r->req.cb = read_done;
	rv = tab->closed ? DOCRAFT_ECLOSED : tablet_read(tab->t, &r->req);
	if (rv != 0)
		read_done(&r->req, rv, 0);
}

/* ---- local commands ------------------------------------------------------------------ */

static void cmd_get(struct tab *tab, char **a, int n)
{
	struct buf val = BUF_INIT, esc = BUF_INIT;
	if (n != 2) {
		reply("E usage: get KEY");
		return;
	}
	if (tab->closed) {
		reply("E tablet %s is closed", tab->id);
		return;
	}
	if (tablet_store(tab->t) == NULL) {
		reply("E tablet %s has no store now (a copy or a reopen is running)", tab->id);
		return;
	}
	if (lookup(tablet_store(tab->t), a[1], UINT64_MAX, &val)) {
		escape(&esc, val.data, val.len);
		reply("G %s", (const char *)esc.data);
	} else {
		reply("G -");
	}
	buf_free(&val);
	buf_free(&esc);
}

static void cmd_status(struct tab *tab)
{
	struct tablet_status st;
	uint64_t store_idx = 0;
	char err[DOCRAFT_ERRMSG_SIZE + 8] = "";
	if (tab->closed) {
		reply("S role=closed term=0 leader=0 applied=0 last=0 flushed=0 replayed=0 "
		      "skipped=0 copies=0 store=0 entries=0 writes=0 snap=0 first=0");
		return;
	}
	tablet_get_status(tab->t, &st);
	if (tablet_store(tab->t) != NULL) /* NULL while a store job runs (copy, reopen) */
		store_applied(tablet_store(tab->t), &store_idx, NULL);
	if (st.role == TABLET_FAILED && st.errmsg[0] != '\0') {
		snprintf(err, sizeof err, " err=%s", st.errmsg);
		one_word(err + 1);
	}
	reply("S role=%s term=%" PRIu64 " leader=%llu applied=%" PRIu64 " last=%" PRIu64
	      " flushed=%" PRIu64 " replayed=%" PRIu64 " skipped=%" PRIu64 " copies=%" PRIu64
	      " store=%" PRIu64 " entries=%" PRIu64 " writes=%" PRIu64 " snap=%" PRIu64 " first=%" PRIu64 "%s",
	      role_word(st.role), st.term, (unsigned long long)st.leader_id, st.applied_index,
	      st.last_index, st.flushed_index, st.replayed, st.skipped, st.copies, store_idx,
	      st.entries, st.writes, st.snapshot_index, st.first_index, err);
}

static void cmd_checksum(struct tab *tab)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	uint64_t sum, pairs;
	if (tab->closed) {
		reply("E tablet %s is closed", tab->id);
		return;
	}
	if (tablet_store(tab->t) == NULL) {
		reply("E tablet %s has no store now (a copy or a reopen is running)", tab->id);
		return;
	}
	if (checksum(tablet_store(tab->t), &sum, &pairs, errmsg) != 0) {
		one_word(errmsg);
		reply("E checksum: %s", errmsg);
		return;
	}
	reply("C %016" PRIx64 " n=%" PRIu64, sum, pairs);
}

static void admin_err(int code, char *errmsg)
{
	one_word(errmsg);
	reply("A err %s %s", code_name(code), errmsg[0] ? errmsg : "-");
}

static void change_done(void *arg, int status)
{
	char none[2] = "-";
	(void)arg;
	if (status == 0)
		reply("A ok");
	else
		admin_err(status, none);
}

static void cmd_admin(struct tab *tab, char **a, int n)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	int rv;
	if (tab->closed) {
		reply("A err ECLOSED tablet_closed");
		return;
	}
	if (strcmp(a[0], "snapshot") == 0 && n == 1) {
		tablet_request_snapshot(tab->t);
		reply("A ok");
		return;
	}
	if (strcmp(a[0], "flush") == 0 && n == 1) {
		if (tablet_store(tab->t) == NULL) {
			reply("E tablet %s has no store now (a copy or a reopen is running)",
			      tab->id);
			return;
		}
		rv = store_flush(tablet_store(tab->t), errmsg);
		if (rv == 0)
			reply("A ok");
		else
			admin_err(rv, errmsg);
		return;
	}
	if (strcmp(a[0], "add") == 0 && n == 3)
		rv = tablet_add_replica(tab->t, strtoull(a[1], NULL, 10), a[2], change_done, tab,
					errmsg);
	else if (strcmp(a[0], "remove") == 0 && n == 2)
		rv = tablet_remove_replica(tab->t, strtoull(a[1], NULL, 10), change_done, tab,
					   errmsg);
	else if (strcmp(a[0], "transfer") == 0 && n == 2)
		rv = tablet_transfer(tab->t, strtoull(a[1], NULL, 10), change_done, tab, errmsg);
	else {
		reply("E usage: add ID ADDRESS | remove ID | transfer ID | snapshot | flush");
		return;
	}
	if (rv != 0)
		admin_err(rv, errmsg);
}

/* ---- shutdown --------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void listener_closed(void *arg)
{
	(void)arg;
	S.l = NULL;
}

static void close_rest(void)
{
	if (S.l != NULL)
		listener_close(S.l, listener_closed, NULL);
	if (S.in_open) {
		uv_close((uv_handle_t *)&S.in.stream, handle_closed);
		S.in_open = false;
	}
	uv_close((uv_handle_t *)&S.sigterm, handle_closed);
	uv_close((uv_handle_t *)&S.sigint, handle_closed);
}

static void copy_closed(struct copy_server *cs)
{
	(void)cs;
	close_rest();
}

static void log_closed(struct raftlog *l, void *arg);

static void tablets_closed(void)
{
	if (S.log != NULL) {
		struct raftlog *l = S.log;
		int rv;
		S.log = NULL;
		if ((rv = raftlog_close(l, log_closed, NULL)) == 0)
			return;
		LOG_ERROR("tnode: raftlog_close: %s", docraft_strerror(rv));
		S.exit_code = 1;
	}
	if (S.copy_on) {
		S.copy_on = false;
		copy_server_close(&S.copy, copy_closed);
		return;
	}
	close_rest();
}

static void log_closed(struct raftlog *l, void *arg)
{
	(void)l;
	(void)arg;
	tablets_closed();
}

static void tablet_closed(struct tablet *t, void *arg)
{
	struct tab *tab = arg;
	(void)t;
	tab->t = NULL;
	if (--S.open_tabs == 0)
		tablets_closed();
}

static void shutdown_all(void)
{
	if (S.quitting)
		return;
	S.quitting = true;
	if (S.in_open)
		uv_read_stop(&S.in.stream);
	if (S.open_tabs == 0) {
		tablets_closed();
		return;
	}
	for (int i = 0; i < S.ntabs; i++) {
		if (S.tabs[i].t != NULL && !S.tabs[i].closed) {
			S.tabs[i].closed = true;
			tablet_close(S.tabs[i].t, tablet_closed, &S.tabs[i]);
		}
	}
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	LOG_WARN("tnode %llu: signal %d: closing", (unsigned long long)S.o.id, signum);
	shutdown_all();
}

/* ---- input --------------------------------------------------------------------------------- */

static struct tab *find_tab(const char *id)
{
	for (int i = 0; i < S.ntabs; i++)
		if (strcmp(S.tabs[i].id, id) == 0)
			return &S.tabs[i];
	return NULL;
}

static void command(char *line)
{
	char *a[MAX_WORDS + 1];
	int n = 0;
	struct tab *tab = &S.tabs[0];
	char *save = NULL;

	for (char *w = strtok_r(line, " \t\r", &save); w != NULL;
	     w = strtok_r(NULL, " \t\r", &save)) {
		if (n == MAX_WORDS) {
			reply("E too many words");
			return;
		}
		a[n++] = w;
	}
	if (n > 0 && a[0][0] == '@') {
		tab = find_tab(a[0] + 1);
		if (tab == NULL) {
			reply("E no tablet %s", a[0] + 1);
			return;
		}
		memmove(a, a + 1, (size_t)(n - 1) * sizeof a[0]);
		n--;
	}
	if (n == 0)
		return;
	if (S.quitting) {
		reply("E closing");
		return;
	}
	if (strcmp(a[0], "w") == 0)
		cmd_write(tab, a, n);
	else if (strcmp(a[0], "r") == 0)
		cmd_read(tab, a, n);
	else if (strcmp(a[0], "get") == 0)
		cmd_get(tab, a, n);
	else if (strcmp(a[0], "status") == 0)
		cmd_status(tab);
	else if (strcmp(a[0], "checksum") == 0)
		cmd_checksum(tab);
	else if (strcmp(a[0], "quit") == 0)
		shutdown_all();
	else if (strcmp(a[0], "snapshot") == 0 || strcmp(a[0], "flush") == 0 ||
		 strcmp(a[0], "add") == 0 || strcmp(a[0], "remove") == 0 ||
		 strcmp(a[0], "transfer") == 0)
		cmd_admin(tab, a, n);
	else
		reply("E unknown command %s", a[0]);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	static char space[65536];
	(void)h;
	(void)suggested;
	b->base = space;
	b->len = sizeof space;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	size_t start = 0;
	(void)s;
	if (n < 0) {
		if (n != UV_EOF)
			LOG_WARN("tnode: stdin: %s", uv_strerror((int)n));
		shutdown_all();
		return;
	}
	buf_append(&S.line, b->base, (size_t)n);
	for (size_t i = 0; i < S.line.len; i++) {
		if (S.line.data[i] != '\n')
			continue;
		S.line.data[i] = '\0';
		command((char *)S.line.data + start);
		start = i + 1;
		if (S.quitting)
			break;
	}
	if (start > 0) {
		memmove(S.line.data, S.line.data + start, S.line.len - start);
		S.line.len -= start;
	}
	if (S.line.len > MAX_LINE) {
		reply("E line too long");
		buf_reset(&S.line);
	}
}

static int open_stdin(void)
{
	int rv;
	switch (uv_guess_handle(STDIN_FILENO)) {
	case UV_NAMED_PIPE:
		if ((rv = uv_pipe_init(&S.loop, &S.in.pipe, 0)) != 0)
			return rv;
		rv = uv_pipe_open(&S.in.pipe, STDIN_FILENO);
		break;
	case UV_TTY:
		rv = uv_tty_init(&S.loop, &S.in.tty, STDIN_FILENO, 1);
		break;
	default:
		fprintf(stderr, "tnode: stdin must be a pipe or a terminal\n");
		return UV_EINVAL;
	}
	if (rv != 0) {
		uv_close((uv_handle_t *)&S.in.stream, NULL);
		return rv;
	}
	S.in_open = true;
	return uv_read_start(&S.in.stream, alloc_cb, read_cb);
}

/* ---- setup --------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: tnode --id N --address IP:PORT --dir DIR --peers \"1=IP:PORT,...\"\n"
		"             [--bootstrap] [--tablets K] [--heartbeat-ms MS] [--election-ms MS]\n"
		"             [--snapshot-threshold N] [--snapshot-trailing N]\n"
		"             [--raft-log shared|per-tablet]\n");
	exit(2);
}

static unsigned long long num_arg(const char *name, const char *v)
{
	char *end;
	unsigned long long x;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || *v == '\0' || *end != '\0') {
		fprintf(stderr, "tnode: %s: not a number: %s\n", name, v);
		usage();
	}
	return x;
}

static void parse_args(int argc, char **argv)
{
	struct opts *o = &S.o;
	memset(o, 0, sizeof *o);
	o->ntabs = 1;
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(k, "--bootstrap") == 0) {
			o->bootstrap = true;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(k, "--id") == 0)
			o->id = num_arg(k, v);
		else if (strcmp(k, "--address") == 0)
			o->address = v;
		else if (strcmp(k, "--dir") == 0)
			o->dir = v;
		else if (strcmp(k, "--peers") == 0)
			o->peers_arg = v;
		else if (strcmp(k, "--tablets") == 0)
			o->ntabs = (int)num_arg(k, v);
		else if (strcmp(k, "--heartbeat-ms") == 0)
			o->heartbeat_ms = (unsigned)num_arg(k, v);
		else if (strcmp(k, "--election-ms") == 0)
			o->election_ms = (unsigned)num_arg(k, v);
		else if (strcmp(k, "--snapshot-threshold") == 0)
			o->snapshot_threshold = (unsigned)num_arg(k, v);
		else if (strcmp(k, "--snapshot-trailing") == 0)
			o->snapshot_trailing = (unsigned)num_arg(k, v);
		else if (strcmp(k, "--raft-log") == 0 && strcmp(v, "per-tablet") == 0)
			o->per_tablet_log = true;
		else if (strcmp(k, "--raft-log") == 0 && strcmp(v, "shared") == 0)
			o->per_tablet_log = false;
		else
			usage();
	}
	if (o->id == 0 || o->address == NULL || o->dir == NULL || o->ntabs < 1 ||
	    o->ntabs > MAX_TABLETS)
		usage();
	if (o->bootstrap && o->peers_arg == NULL)
		usage();
}

/* "1=IP:PORT,2=IP:PORT,...": every peer a voter. */
static int parse_peers(const char *arg)
{
	const char *p = arg;
	while (p != NULL && *p != '\0') {
		const char *eq = strchr(p, '=');
		const char *comma = strchr(p, ',');
		size_t alen;
		if (eq == NULL || (comma != NULL && comma < eq) || S.npeers == MAX_PEERS)
			return -1;
		alen = comma != NULL ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (alen == 0 || alen >= sizeof S.peer_addr[0])
			return -1;
		S.peers[S.npeers].id = strtoull(p, NULL, 10);
		memcpy(S.peer_addr[S.npeers], eq + 1, alen);
		S.peer_addr[S.npeers][alen] = '\0';
		S.peers[S.npeers].address = S.peer_addr[S.npeers];
		S.peers[S.npeers].role = RAFT_VOTER;
		if (S.peers[S.npeers].id == 0)
			return -1;
		S.npeers++;
		p = comma != NULL ? comma + 1 : NULL;
	}
	return 0;
}

static int open_tablets(void)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	for (int i = 0; i < S.o.ntabs; i++) {
		struct tab *tab = &S.tabs[i];
		struct tablet_options o;
		snprintf(tab->id, sizeof tab->id, "tab%d", i + 1);
		snprintf(tab->dir, sizeof tab->dir, "%s/%s", S.o.dir, tab->id);
		tablet_options_default(&o);
		o.id = tab->id;
		o.dir = tab->dir;
		o.raft_id = S.o.id;
		o.address = S.o.address;
		o.listener = S.l;
		o.copy = &S.copy;
		o.raft_log = S.log;
		if (S.o.heartbeat_ms)
			o.heartbeat_ms = S.o.heartbeat_ms;
		if (S.o.election_ms)
			o.election_ms = S.o.election_ms;
		if (S.o.snapshot_threshold)
			o.snapshot_threshold = S.o.snapshot_threshold;
		if (S.o.snapshot_trailing)
			o.snapshot_trailing = S.o.snapshot_trailing;
		if (tablet_open(&S.loop, &o, &tab->t, errmsg) != 0) {
			LOG_ERROR("tnode: open %s: %s", tab->id, errmsg);
			return -1;
		}
		S.ntabs++;
		S.open_tabs++;
		if (S.o.bootstrap && tablet_bootstrap(tab->t, S.peers, S.npeers, errmsg) != 0) {
			LOG_ERROR("tnode: bootstrap %s: %s", tab->id, errmsg);
			return -1;
		}
		if (tablet_start(tab->t, errmsg) != 0) {
			LOG_ERROR("tnode: start %s: %s", tab->id, errmsg);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	signal(SIGPIPE, SIG_IGN);
	log_init();
	parse_args(argc, argv);
	if (S.o.peers_arg != NULL && parse_peers(S.o.peers_arg) != 0) {
		fprintf(stderr, "tnode: bad --peers: %s\n", S.o.peers_arg);
		return 2;
	}
	if (mkdir(S.o.dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "tnode: mkdir %s: %s\n", S.o.dir, strerror(errno));
		return 1;
	}
	buf_init(&S.line);
	if (uv_loop_init(&S.loop) != 0)
		return 1;
	uv_signal_init(&S.loop, &S.sigterm);
	uv_signal_init(&S.loop, &S.sigint);
	uv_signal_start(&S.sigterm, on_signal, SIGTERM);
	uv_signal_start(&S.sigint, on_signal, SIGINT);

	if (listener_open(&S.loop, S.o.address, &S.l, errmsg) != 0) {
		LOG_ERROR("tnode: %s", errmsg);
		S.exit_code = 1;
		S.quitting = true;
		tablets_closed();
		goto run;
	}
	if (copy_server_init(&S.copy, &S.loop, S.l, errmsg) != 0) {
		LOG_ERROR("tnode: copy server: %s", errmsg);
		S.exit_code = 1;
		S.quitting = true;
		tablets_closed();
		goto run;
	}
	S.copy_on = true;
	if (!S.o.per_tablet_log) {
		char dir[4200];
		struct raftlog_options lo = {.dir = dir, .segment_bytes = RAFTLOG_SEGMENT_BYTES};
		snprintf(dir, sizeof dir, "%s/raftlog", S.o.dir);
		if (raftlog_open(&S.loop, &lo, &S.log, errmsg) != 0) {
			LOG_ERROR("tnode: raftlog_open %s: %s", dir, errmsg);
			S.exit_code = 1;
			S.quitting = true;
			tablets_closed();
			goto run;
		}
	}
	if (open_tablets() != 0) {
		S.exit_code = 1;
		shutdown_all();
		goto run;
	}
	if ((rv = open_stdin()) != 0) {
		LOG_ERROR("tnode: stdin: %s", uv_strerror(rv));
		S.exit_code = 1;
		shutdown_all();
		goto run;
	}
	LOG_INFO("tnode %llu: serving %d tablet(s) at %s", (unsigned long long)S.o.id, S.ntabs,
		 listener_address(S.l));
run:
	uv_run(&S.loop, UV_RUN_DEFAULT);
	rv = uv_loop_close(&S.loop);
	if (rv != 0) {
		LOG_ERROR("tnode: loop not empty at exit: %s", uv_strerror(rv));
		S.exit_code = 1;
	}
	buf_free(&S.line);
	if (S.exit_code == 0)
		reply("Q ok");
	return S.exit_code;
}
