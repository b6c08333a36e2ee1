/* Remote bootstrap: a RocksDB checkpoint streamed over a COPY connection.
 *
 * Design note.
 *
 * The destination opens a TCP connection to the source server's one port
 * and sends a COPY preamble naming the tablet (listener.h); after that it
 * sends nothing. The source answers with frames, all integers big endian:
 *
 *   'K'                                         keepalive: checkpoint still
 *                                               being written (every
 *                                               COPY_KEEPALIVE_MS)
 *   'F' u16 name_len, name, u64 size            a file begins
 *   'D' u32 len (1..COPY_CHUNK_MAX), len bytes  the next bytes of that file
 *   'C' u32 crc32c                              the file ends; CRC-32C of its
 *                                               whole content
 *   'E' u32 nfiles, u64 total_bytes,            success: the checkpoint's
 *       u64 applied_index, u64 applied_ht       applied marker; then close
 *   'X' u8 code, u16 len (<= 1024), message     failure (a DOCRAFT_E* code);
 *                                               then close
 *
 * A file is F, D..., C; files follow each other; the stream ends with E or
 * X. Names are 1..255 printable ASCII bytes without '/', never "." or "..".
 *
 * Source, per connection ("xfer"), strictly one step at a time:
 *
 *   checkpoint job (pool): store_checkpoint(<store>.copy-<n>) — flushes the
 *     memtables, hard-links the SST files — then store_open of the checkpoint
 *     to read its marker (marker_options), store_close, list its files
 *     (RocksDB's info logs excepted)
 *   for each file: write F; then repeat { read job (pool): pread up to one
 *     buffer and extend the CRC; write D from that buffer; wait for the write
 *     callback } until the size is sent; write C
 *   write E; close the connection; cleanup job (pool): remove the directory
 *
 * Only after a D write completes is the buffer refilled, so a transfer holds
 * at most one buffer of file data however large the tablet (plus the frame
 * headers, the file list and the kernel's socket buffers). Failure at any
 * step (store error, peer gone, tablet unregistered, server closing, a write
 * pending for longer than the idle timeout) sends X if the connection can
 * still carry it, closes, and runs the same cleanup job. The checkpoint
 * needs the store only inside store_checkpoint: copy_server_unregister waits
 * for that call (reg->busy under cs->mu), not for the transfer, which goes
 * on from its own hard links until it is aborted.
 *
 * Destination ("fetcher"): prepare job (remove a leftover <dest>.tmp,
 * mkdir it), connect, write the preamble, then read frames into one receive
 * buffer of buffer_size bytes. Frame headers are parsed in place
 * (copy_frame_decode: pure, fuzzed; the fetcher checks order, sizes and
 * CRCs); D payload bytes are written from the buffer by a write job (pool:
 * pwrite + CRC) once the frame is complete or the buffer is full, with
 * reading stopped until the job is done — so at most one buffer of data is
 * held. F opens the file
 * (O_EXCL), C checks size and CRC, fsyncs and closes it, E checks the file
 * count and byte total, then the finish job fsyncs the directory, opens the
 * copy with store_open (with paranoid checks, RocksDB's default, the open
 * fails unless every SST file the MANIFEST names is there with the size it
 * records) and compares its marker with E, and renames
 * <dest>.tmp to <dest> with RENAME_NOREPLACE and fsyncs the parent. Any
 * failure closes the connection and removes <dest>.tmp (cleanup job) before
 * the callback.
 *
 * Integrity: transport and disk-to-disk corruption are caught by the
 * per-file size and CRC-32C (computed from the bytes the source read and the
 * bytes the destination wrote); a checkpoint that is not a consistent store
 * (missing or truncated file) fails to open; RocksDB's own block checksums
 * are then verified on every read of the copy. No zlib: RocksDB's
 * pkg-config file brings only -lrocksdb, and CRC-32C is a few lines here
 * (SSE4.2 when the CPU has it).
 *
 * Idle timeouts: the destination fails if nothing arrives for
 * idle_timeout_ms while it waits for the network (its own disk jobs do not
 * count); the source sends K while its checkpoint is being written and fails
 * a transfer whose write has made no progress for its idle timeout. */
#include "tablet/remote_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "docdb/store.h"
#include "net/listener.h"

#define NAME_MAX_LEN COPY_NAME_MAX
#define MSG_MAX COPY_MSG_MAX
/* Largest frame header: F with the longest name. */
#define HDR_MAX (1 + 2 + NAME_MAX_LEN + 8)
#define END_LEN (1 + 4 + 8 + 8 + 8)
#define COPY_SUFFIX ".copy-"

/* ---- helpers ---- */

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n);
	if (p == NULL)
		PANIC("out of memory (%zu bytes)", n);
	return p;
}

static int errno_code(int e)
{
	return e == ENOSPC || e == EDQUOT ? DOCRAFT_ENOSPC : DOCRAFT_EIO;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '/')
			return false;
	return true;
}

static bool valid_tablet_id(const char *s)
{
	size_t n = s != NULL ? strnlen(s, LISTENER_TABLET_ID_MAX + 1) : 0;
	if (n == 0 || n > LISTENER_TABLET_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT)
		return errno;
	return 0;
}

/* rm -rf path (absent is fine). Blocking: pool or startup only. */
static int rm_tree(const char *path, char *errmsg)
{
	struct stat st;
	int rv;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(errmsg, DOCRAFT_EIO, "stat %s: %s", path, strerror(errno));
	}
	rv = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (rv != 0)
		return err_set(errmsg, DOCRAFT_EIO, "removing %s: %s", path,
			       strerror(rv > 0 ? rv : errno));
	return 0;
}

static int fsync_path(const char *path, char *errmsg)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rv = 0;

	if (fd < 0)
		return err_set(errmsg, errno_code(errno), "open %s: %s", path, strerror(errno));
	if (fsync(fd) != 0)
		rv = err_set(errmsg, errno_code(errno), "fsync %s: %s", path, strerror(errno));
	close(fd);
	return rv;
}

/* Options for opening a checkpoint or a copy only to read its marker. The
 * open may start an automatic compaction (store_close cuts it short); with
 * an unbounded retention its GC runs at most at the history cutoff persisted
 * in the directory (compaction.h), never at now - retention, so these opens
 * cannot drop history the tablet itself would keep. */
static void marker_options(struct store_options *o)
{
	store_options_default(o);
	o->create_if_missing = false;
	o->history_retention_us = UINT64_MAX;
}

/* ---- CRC-32C ---- */

static uint32_t crc_table[8][256];
static uv_once_t crc_once = UV_ONCE_INIT;
static bool crc_hw_ok;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *b, size_t n)
{
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				     (uint32_t)b[3] << 24);
		uint32_t hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
			      (uint32_t)b[7] << 24;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		b += 8;
		n -= 8;
	}
	while (n-- > 0)
		crc = crc_table[0][(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *b,
							  size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		c = __builtin_ia32_crc32di(c, w);
		b += 8;
		n -= 8;
	}
	crc = (uint32_t)c;
	while (n-- > 0)
		crc = __builtin_ia32_crc32qi(crc, *b++);
	return crc;
}
#endif

uint32_t copy_crc32c(uint32_t crc, const void *p, size_t n)
{
	uv_once(&crc_once, crc_init);
	crc = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
	if (crc_hw_ok)
		return ~crc_hw(crc, p, n);
#endif
	return ~crc_sw(crc, p, n);
}

/* ==== source side ==== */

struct copy_reg {
	struct copy_reg *next;
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	char *dir_prefix; /* "<store path>.copy-" */
	struct store *store; /* NULL once unregistered; under cs->mu */
	unsigned busy;       /* threads inside store_checkpoint; under cs->mu */
	unsigned refs;       /* the registration and each transfer; loop thread */
	copy_member_check is_member; /* NULL: nobody is a member; loop thread */
	void *member_arg;
};

struct file_ent {
	char *name;
	uint64_t size;
};

enum xstate {
	X_CHECKPOINT, /* checkpoint job */
	X_FILE_BEGIN, /* next: F of file i, or E */
	X_FILE_DATA,  /* next: a read job, or C */
	X_END,        /* E is being written */
};

struct copy_xfer {
	struct copy_xfer *prev, *next;
	struct copy_server *cs;
	struct copy_reg *reg; /* NULL if the tablet is not registered */
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	uv_tcp_t *tcp; /* from the listener: raft_malloc'd */
	uv_timer_t timer;
	uv_work_t work;
	uv_write_t wreq; /* F, D, C, E: completion drives the next step */
	uv_write_t kreq; /* K */
	uv_write_t ereq; /* X */
	bool wreq_busy, kreq_busy, ereq_busy;
	bool other;      /* counted in stats.active_others */
	uint64_t last_progress;
	enum xstate state;
	/* checkpoint */
	char dir[PATH_MAX];
	uint64_t applied_index, applied_ht;
	struct file_ent *files;
	size_t nfiles, i;
	/* current file */
	int fd;
	uint64_t off;
	uint32_t crc;
	size_t n; /* bytes in buf from the last read job */
	uint64_t total;
	uint8_t *buf;
	size_t buf_size;
	uint8_t hdr[HDR_MAX];
	uint8_t xframe[4 + MSG_MAX];
	uint8_t rbuf[64];
	/* the job in flight */
	void (*job_fn)(struct copy_xfer *);
	void (*job_done)(struct copy_xfer *);
	bool job_running;
	int job_rv;
	char job_err[DOCRAFT_ERRMSG_SIZE];
	/* ending */
	bool failed, done;
	bool peer_gone, write_error;
	bool cleanup_started, cleanup_done;
	bool tcp_closing, tcp_closed, timer_closing, timer_closed;
	bool released;
};

static void xfer_fail(struct copy_xfer *x, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void xfer_advance(struct copy_xfer *x);
static void xfer_maybe_release(struct copy_xfer *x);

static void server_maybe_closed(struct copy_server *cs)
{
	if (!cs->closing || !cs->closer_closed || cs->xfers != NULL || cs->close_cb == NULL)
		return;
	copy_server_close_cb cb = cs->close_cb;
	cs->close_cb = NULL;
	uv_cond_destroy(&cs->idle);
	uv_mutex_destroy(&cs->mu);
	cb(cs);
}

static void reg_unref(struct copy_reg *reg)
{
	ASSERT(reg->refs > 0);
	if (--reg->refs > 0)
		return;
	free(reg->dir_prefix);
	free(reg);
}

static void xjob_work_cb(uv_work_t *w)
{
	struct copy_xfer *x = w->data;
	x->job_fn(x);
}

static void xjob_after_cb(uv_work_t *w, int status)
{
	struct copy_xfer *x = w->data;
	x->job_running = false;
	ASSERT(status == 0); /* never cancelled */
	(void)status;
	x->job_done(x);
}

static void xjob_start(struct copy_xfer *x, void (*fn)(struct copy_xfer *),
		       void (*done)(struct copy_xfer *))
{
	int rv;
	PRE(!x->job_running);
	x->job_fn = fn;
	x->job_done = done;
	x->job_rv = 0;
	x->job_err[0] = '\0';
	x->job_running = true;
	x->work.data = x;
	rv = uv_queue_work(x->cs->loop, &x->work, xjob_work_cb, xjob_after_cb);
	ASSERT(rv == 0);
	(void)rv;
}

/* -- connection -- */

static void xfer_tcp_close_cb(uv_handle_t *h)
{
	struct copy_xfer *x = h->data;
	listener_stream_free(h);
	x->tcp = NULL;
	x->tcp_closed = true;
	xfer_maybe_release(x);
}

static void xfer_close_tcp(struct copy_xfer *x)
{
	if (x->tcp_closing)
		return;
	x->tcp_closing = true;
	uv_read_stop((uv_stream_t *)x->tcp);
	uv_close((uv_handle_t *)x->tcp, xfer_tcp_close_cb);
}

static unsigned writes_pending(const struct copy_xfer *x)
{
	return (unsigned)x->wreq_busy + x->kreq_busy + x->ereq_busy;
}

static void data_write_cb(uv_write_t *w, int status)
{
	struct copy_xfer *x = w->data;
	x->wreq_busy = false;
	x->last_progress = uv_now(x->cs->loop);
	if (x->state == X_FILE_DATA && x->n > 0 && status == 0) {
		x->cs->stats.bytes_sent += x->n;
		x->n = 0;
	}
	if (status != 0) {
		if (status != UV_ECANCELED)
			x->write_error = true;
		xfer_fail(x, DOCRAFT_EUNAVAILABLE, "write to the destination: %s",
			  uv_strerror(status));
		xfer_maybe_release(x);
		return;
	}
	xfer_advance(x);
}

static void aux_write_cb(uv_write_t *w, int status)
{
	struct copy_xfer *x = w->data;
	if (w == &x->kreq)
		x->kreq_busy = false;
	else
		x->ereq_busy = false;
	x->last_progress = uv_now(x->cs->loop);
	if (status != 0 && status != UV_ECANCELED)
		x->write_error = true;
	if (w == &x->ereq || status != 0) {
		if (status != 0)
			xfer_fail(x, DOCRAFT_EUNAVAILABLE, "write to the destination: %s",
				  uv_strerror(status));
		/* The error frame is out (or cannot be): nothing more to say. */
		xfer_close_tcp(x);
	}
	xfer_maybe_release(x);
}

/* Writes the frame in hdr (hlen bytes) followed by data (len bytes, may be
 * 0) with wreq; data_write_cb takes the next step. */
static void send_frame(struct copy_xfer *x, size_t hlen, const void *data, size_t len)
{
	uv_buf_t bufs[2];
	int rv;

	PRE(!x->wreq_busy && !x->tcp_closing);
	bufs[0] = uv_buf_init((char *)x->hdr, (unsigned)hlen);
	bufs[1] = uv_buf_init((char *)data, (unsigned)len);
	if (writes_pending(x) == 0)
		x->last_progress = uv_now(x->cs->loop);
	x->wreq.data = x;
	rv = uv_write(&x->wreq, (uv_stream_t *)x->tcp, bufs, len > 0 ? 2 : 1, data_write_cb);
	if (rv != 0) {
		x->write_error = true;
		xfer_fail(x, DOCRAFT_EUNAVAILABLE, "write to the destination: %s",
			  uv_strerror(rv));
		return;
	}
	x->wreq_busy = true;
}

static void xfer_read_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct copy_xfer *x = h->data;
	(void)suggested;
	buf->base = (char *)x->rbuf;
	buf->len = sizeof x->rbuf;
}

static void xfer_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct copy_xfer *x = s->data;
	(void)buf;
	if (nread == 0)
		return;
	if (nread > 0) {
		xfer_fail(x, DOCRAFT_ECORRUPT, "the destination sent %zd unexpected bytes", nread);
		return;
	}
	x->peer_gone = true;
	uv_read_stop(s);
	if (x->failed || x->done) {
		xfer_close_tcp(x);
		xfer_maybe_release(x);
		return;
	}
	xfer_fail(x, DOCRAFT_EUNAVAILABLE, "the destination went away: %s",
		  uv_strerror((int)nread));
}

static void xfer_tick_cb(uv_timer_t *t)
{
	struct copy_xfer *x = t->data;
	struct copy_server *cs = x->cs;
	static const char keepalive = 'K';
	uv_buf_t b;

	if (x->tcp_closing)
		return;
	if (writes_pending(x) > 0) {
		if (uv_now(cs->loop) - x->last_progress < cs->opts.idle_timeout_ms)
			return;
		x->write_error = true; /* a stuck socket cannot carry an error frame */
		xfer_fail(x, DOCRAFT_ETIMEDOUT, "no write progress for %" PRIu64 " ms",
			  cs->opts.idle_timeout_ms);
		xfer_close_tcp(x);
		xfer_maybe_release(x);
		return;
	}
	if (x->failed || x->state != X_CHECKPOINT)
		return;
	b = uv_buf_init((char *)&keepalive, 1);
	x->kreq.data = x;
	x->last_progress = uv_now(cs->loop);
	if (uv_write(&x->kreq, (uv_stream_t *)x->tcp, &b, 1, aux_write_cb) == 0)
		x->kreq_busy = true;
}

/* -- failure and release -- */

static void xfer_fail(struct copy_xfer *x, int code, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	size_t len;
	va_list ap;

	if (x->failed || x->done)
		return;
	x->failed = true;
	x->cs->stats.failed++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (code == DOCRAFT_ENOTFOUND || code == DOCRAFT_ECLOSED || code == DOCRAFT_EBUSY)
		TLOG_INFO(x->tablet_id, 0, "copy: %s", msg);
	else
		TLOG_WARN(x->tablet_id, 0, "copy: %s", msg);
	if (x->peer_gone || x->write_error || x->tcp_closing) {
		xfer_close_tcp(x);
		xfer_maybe_release(x);
		return;
	}
	len = strlen(msg);
	x->xframe[0] = 'X';
	x->xframe[1] = (uint8_t)code;
	put_be16(x->xframe + 2, (uint16_t)len);
	memcpy(x->xframe + 4, msg, len);
	uv_buf_t b = uv_buf_init((char *)x->xframe, (unsigned)(4 + len));
	if (writes_pending(x) == 0)
		x->last_progress = uv_now(x->cs->loop);
	x->ereq.data = x;
	if (uv_write(&x->ereq, (uv_stream_t *)x->tcp, &b, 1, aux_write_cb) == 0)
		x->ereq_busy = true;
	else
		xfer_close_tcp(x);
	xfer_maybe_release(x);
}

static void cleanup_job(struct copy_xfer *x)
{
	if (x->fd >= 0) {
		close(x->fd);
		x->fd = -1;
	}
	if (x->dir[0] != '\0')
		x->job_rv = rm_tree(x->dir, x->job_err);
}

static void cleanup_done(struct copy_xfer *x)
{
	if (x->job_rv != 0)
		TLOG_WARN(x->tablet_id, 0, "copy: leaving a checkpoint behind: %s", x->job_err);
	x->cleanup_done = true;
	xfer_maybe_release(x);
}

static void xfer_timer_close_cb(uv_handle_t *h)
{
	struct copy_xfer *x = h->data;
	x->timer_closed = true;
	xfer_maybe_release(x);
}

/* Once the transfer has ended (done or failed) and nothing is in flight:
 * close the connection, remove the checkpoint, close the timer, free. */
static void xfer_maybe_release(struct copy_xfer *x)
{
	struct copy_server *cs = x->cs;

	if (!(x->failed || x->done) || x->released)
		return;
	if (x->job_running || writes_pending(x) > 0)
		return;
	xfer_close_tcp(x);
	if (!x->cleanup_done) {
		if (!x->cleanup_started) {
			x->cleanup_started = true;
			xjob_start(x, cleanup_job, cleanup_done);
		}
		return;
	}
	if (!x->timer_closing) {
		x->timer_closing = true;
		uv_close((uv_handle_t *)&x->timer, xfer_timer_close_cb);
	}
	if (!x->tcp_closed || !x->timer_closed)
		return;
	x->released = true;
	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		cs->xfers = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	if (x->reg != NULL)
		reg_unref(x->reg);
	for (size_t i = 0; i < x->nfiles; i++)
		free(x->files[i].name);
	free(x->files);
	free(x->buf);
	if (x->other)
		cs->stats.active_others--;
	free(x);
	cs->stats.active--;
	server_maybe_closed(cs);
}

/* -- the steps -- */

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct file_ent *)a)->name, ((const struct file_ent *)b)->name);
}

/* Lists the regular files of the checkpoint, info logs excepted. */
static int list_files(struct copy_xfer *x, char *errmsg)
{
	DIR *d = opendir(x->dir);
	struct dirent *e;
	size_t cap = 0;
	int rv = 0;

	if (d == NULL)
		return err_set(errmsg, DOCRAFT_EIO, "opendir %s: %s", x->dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		size_t n = strlen(e->d_name);
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strcmp(e->d_name, "LOG") == 0 || strncmp(e->d_name, "LOG.old", 7) == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			rv = err_set(errmsg, DOCRAFT_EIO, "stat %s/%s: %s", x->dir, e->d_name,
				     strerror(errno));
			break;
		}
		if (!S_ISREG(st.st_mode) || !valid_name(e->d_name, n)) {
			rv = err_set(errmsg, DOCRAFT_EIO, "checkpoint %s: unexpected entry %s",
				     x->dir, e->d_name);
			break;
		}
		if (x->nfiles == cap) {
			cap = cap ? 2 * cap : 32;
			x->files = realloc(x->files, cap * sizeof *x->files);
			if (x->files == NULL)
				PANIC("out of memory");
		}
		x->files[x->nfiles].name = strdup(e->d_name);
		if (x->files[x->nfiles].name == NULL)
			PANIC("out of memory");
		x->files[x->nfiles].size = (uint64_t)st.st_size;
		x->nfiles++;
	}
	closedir(d);
	if (rv == 0 && x->nfiles > 0)
		qsort(x->files, x->nfiles, sizeof *x->files, cmp_files);
	return rv;
}

/* Pool thread. */
static void checkpoint_job(struct copy_xfer *x)
{
	struct copy_server *cs = x->cs;
	struct copy_reg *reg = x->reg;
	struct store_options o;
	struct store *s, *cp;
	int rv;

	/* A directory of this name can only be a crashed process' leftover. */
	if ((x->job_rv = rm_tree(x->dir, x->job_err)) != 0)
		return;
	uv_mutex_lock(&cs->mu);
	s = reg->store;
	if (s != NULL)
		reg->busy++;
	uv_mutex_unlock(&cs->mu);
	if (s == NULL) {
		x->job_rv = err_set(x->job_err, DOCRAFT_ECLOSED, "tablet %s unregistered",
				    x->tablet_id);
		return;
	}
	rv = store_checkpoint(s, x->dir, x->job_err);
	uv_mutex_lock(&cs->mu);
	if (--reg->busy == 0)
		uv_cond_broadcast(&cs->idle);
	uv_mutex_unlock(&cs->mu);
	/* From here on the store may be closed: only the checkpoint is used. */
	if (rv != 0) {
		x->job_rv = rv;
		return;
	}
	marker_options(&o);
	if ((rv = store_open(x->dir, &o, &cp, x->job_err)) != 0) {
		x->job_rv = err_wrap(x->job_err, rv, "opening checkpoint");
		return;
	}
	store_applied(cp, &x->applied_index, &x->applied_ht);
	store_close(cp);
	x->job_rv = list_files(x, x->job_err);
}

static void checkpoint_done(struct copy_xfer *x)
{
	if (x->failed) {
		xfer_maybe_release(x);
		return;
	}
	if (x->job_rv != 0) {
		xfer_fail(x, x->job_rv, "%s", x->job_err);
		return;
	}
	TLOG_DEBUG(x->tablet_id, 0,
		   "copy: checkpoint %s: %zu files, applied index %" PRIu64 " ht %" PRIu64,
		   x->dir, x->nfiles, x->applied_index, x->applied_ht);
	x->state = X_FILE_BEGIN;
	xfer_advance(x);
}

/* Pool thread: the next chunk of file i into buf, CRC extended. */
static void read_job(struct copy_xfer *x)
{
	const struct file_ent *f = &x->files[x->i];
	uint64_t left = f->size - x->off;
	size_t want = left < x->buf_size ? (size_t)left : x->buf_size;
	size_t got = 0;

	if (x->fd < 0) {
		char path[PATH_MAX + NAME_MAX_LEN + 2];
		snprintf(path, sizeof path, "%s/%s", x->dir, f->name);
		x->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (x->fd < 0) {
			x->job_rv = err_set(x->job_err, DOCRAFT_EIO, "open %s: %s", path,
					    strerror(errno));
			return;
		}
	}
	while (got < want) {
		ssize_t r = pread(x->fd, x->buf + got, want - got, (off_t)(x->off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			x->job_rv = err_set(x->job_err, DOCRAFT_EIO, "read %s/%s: %s", x->dir,
					    f->name, strerror(errno));
			return;
		}
		if (r == 0) {
			x->job_rv = err_set(x->job_err, DOCRAFT_EIO,
					    "%s/%s shrank to %" PRIu64 " bytes", x->dir, f->name,
					    x->off + got);
			return;
		}
		got += (size_t)r;
	}
	x->crc = copy_crc32c(x->crc, x->buf, got);
	x->n = got;
	if (x->off + got == f->size) {
		close(x->fd);
		x->fd = -1;
	}
}

static void read_done(struct copy_xfer *x)
{
	if (x->failed) {
		xfer_maybe_release(x);
		return;
	}
	if (x->job_rv != 0) {
		xfer_fail(x, x->job_rv, "%s", x->job_err);
		return;
	}
	if (x->n > x->cs->stats.max_held)
		x->cs->stats.max_held = x->n;
	x->hdr[0] = 'D';
	put_be32(x->hdr + 1, (uint32_t)x->n);
	x->off += x->n;
	send_frame(x, 5, x->buf, x->n);
}

/* Loop thread, nothing in flight on wreq: the next frame. */
static void xfer_advance(struct copy_xfer *x)
{
	const struct file_ent *f;
	size_t len;

	if (x->failed) {
		xfer_maybe_release(x);
		return;
	}
	switch (x->state) {
	case X_CHECKPOINT:
		ASSERT(false);
		break;
	case X_FILE_BEGIN:
		if (x->i == x->nfiles) {
			x->hdr[0] = 'E';
			put_be32(x->hdr + 1, (uint32_t)x->nfiles);
			put_be64(x->hdr + 5, x->total);
			put_be64(x->hdr + 13, x->applied_index);
			put_be64(x->hdr + 21, x->applied_ht);
			x->state = X_END;
			send_frame(x, END_LEN, NULL, 0);
			return;
		}
		f = &x->files[x->i];
		len = strlen(f->name);
		x->hdr[0] = 'F';
		put_be16(x->hdr + 1, (uint16_t)len);
		memcpy(x->hdr + 3, f->name, len);
		put_be64(x->hdr + 3 + len, f->size);
		x->off = 0;
		x->crc = 0;
		x->state = X_FILE_DATA;
		send_frame(x, 3 + len + 8, NULL, 0);
		return;
	case X_FILE_DATA:
		f = &x->files[x->i];
		if (x->off < f->size) {
			xjob_start(x, read_job, read_done);
			return;
		}
		x->hdr[0] = 'C';
		put_be32(x->hdr + 1, x->crc);
		x->total += f->size;
		x->i++;
		x->cs->stats.files_sent++;
		x->state = X_FILE_BEGIN;
		send_frame(x, 5, NULL, 0);
		return;
	case X_END:
		x->done = true;
		x->cs->stats.completed++;
		TLOG_INFO(x->tablet_id, 0,
			  "copy: sent %zu files, %" PRIu64 " bytes, applied index %" PRIu64,
			  x->nfiles, x->total, x->applied_index);
		xfer_maybe_release(x);
		return;
	}
}

static struct copy_reg *find_reg(struct copy_server *cs, const char *tablet_id)
{
	for (struct copy_reg *r = cs->regs; r != NULL; r = r->next)
		if (strcmp(r->tablet_id, tablet_id) == 0)
			return r;
	return NULL;
}

/* Slots (remote_copy.h): max_transfers at once, member_slots of them only
 * for members of the tablet's configuration. x is already counted in
 * stats.active. false after failing x with DOCRAFT_EBUSY. */
static bool take_slot(struct copy_server *cs, struct copy_xfer *x, struct copy_reg *reg)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;
	bool member = false;
	unsigned others_max = cs->opts.max_transfers - cs->opts.member_slots;

	if (reg->is_member != NULL &&
	    uv_tcp_getpeername(x->tcp, (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family == AF_INET)
		member = reg->is_member(reg->member_arg, (const struct sockaddr_in *)&ss);
	if (cs->stats.active <= cs->opts.max_transfers &&
	    (member || cs->stats.active_others < others_max)) {
		if (!member) {
			x->other = true;
			cs->stats.active_others++;
		}
		return true;
	}
	cs->stats.busy++;
	xfer_fail(x, DOCRAFT_EBUSY, "%u copies in progress (%u slots, %u of them kept for the "
		  "tablet's members; this peer is %sa member): try again later",
		  cs->stats.active - 1, cs->opts.max_transfers, cs->opts.member_slots,
		  member ? "" : "not ");
	return false;
}

/* The listener's LISTENER_COPY handler. */
static void on_copy(void *arg, uv_stream_t *stream, const char *tablet_id)
{
	struct copy_server *cs = arg;
	struct copy_xfer *x = xmalloc(sizeof *x);
	struct copy_reg *reg;
	int rv;

	x->cs = cs;
	x->tcp = (uv_tcp_t *)stream;
	stream->data = x;
	x->fd = -1;
	snprintf(x->tablet_id, sizeof x->tablet_id, "%s", tablet_id);
	x->next = cs->xfers;
	if (cs->xfers != NULL)
		cs->xfers->prev = x;
	cs->xfers = x;
	cs->stats.started++;
	cs->stats.active++;
	x->state = X_CHECKPOINT;

	uv_timer_init(cs->loop, &x->timer);
	x->timer.data = x;
	uint64_t tick = cs->opts.idle_timeout_ms / 4;
	if (tick > COPY_KEEPALIVE_MS)
		tick = COPY_KEEPALIVE_MS;
	if (tick == 0)
		tick = 1;
	uv_timer_start(&x->timer, xfer_tick_cb, tick, tick);

	rv = uv_read_start(stream, xfer_read_alloc_cb, xfer_read_cb);
	if (rv != 0) {
		x->peer_gone = true;
		xfer_fail(x, DOCRAFT_EUNAVAILABLE, "read from the destination: %s",
			  uv_strerror(rv));
		return;
	}
	if (cs->closing) {
		xfer_fail(x, DOCRAFT_ECLOSED, "copy server closing");
		return;
	}
	reg = find_reg(cs, tablet_id);
	if (reg == NULL) {
		xfer_fail(x, DOCRAFT_ENOTFOUND, "tablet %s is not hosted here", tablet_id);
		return;
	}
	if (!take_slot(cs, x, reg))
		return;
	x->reg = reg;
	reg->refs++;
	if ((size_t)snprintf(x->dir, sizeof x->dir, "%s%" PRIu64, reg->dir_prefix,
			     cs->next_id++) >= sizeof x->dir) {
		x->dir[0] = '\0';
		xfer_fail(x, DOCRAFT_EINVAL, "store path too long");
		return;
	}
	x->buf_size = cs->opts.buffer_size;
	x->buf = malloc(x->buf_size);
	if (x->buf == NULL)
		PANIC("out of memory");
	TLOG_DEBUG(tablet_id, 0, "copy: checkpoint into %s", x->dir);
	xjob_start(x, checkpoint_job, checkpoint_done);
}

/* -- public -- */

static void options_default(struct copy_server_options *o)
{
	o->buffer_size = COPY_BUFFER_SIZE;
	o->idle_timeout_ms = COPY_DEFAULT_IDLE_MS;
	o->max_transfers = COPY_DEFAULT_MAX_TRANSFERS;
	o->member_slots = COPY_DEFAULT_MEMBER_SLOTS;
}

int copy_server_init(struct copy_server *cs, uv_loop_t *loop, struct listener *l,
		     char *errmsg)
{
	int rv;

	PRE(cs != NULL && loop != NULL && l != NULL && listener_loop(l) == loop);
	memset(cs, 0, sizeof *cs);
	cs->loop = loop;
	cs->l = l;
	options_default(&cs->opts);
	cs->stats.buffer_size = cs->opts.buffer_size;
	if (uv_mutex_init(&cs->mu) != 0)
		return err_set(errmsg, DOCRAFT_EIO, "copy server: mutex");
	if (uv_cond_init(&cs->idle) != 0) {
		uv_mutex_destroy(&cs->mu);
		return err_set(errmsg, DOCRAFT_EIO, "copy server: condition variable");
	}
	rv = listener_set_handler(l, LISTENER_COPY, on_copy, cs, errmsg);
	if (rv != 0) {
		uv_cond_destroy(&cs->idle);
		uv_mutex_destroy(&cs->mu);
		return rv;
	}
	uv_timer_init(loop, &cs->closer);
	cs->closer.data = cs;
	return 0;
}

int copy_server_set_options(struct copy_server *cs, const struct copy_server_options *o,
			    char *errmsg)
{
	struct copy_server_options n = *o;
	struct copy_server_options def;

	options_default(&def);
	if (n.buffer_size == 0)
		n.buffer_size = def.buffer_size;
	if (n.idle_timeout_ms == 0)
		n.idle_timeout_ms = def.idle_timeout_ms;
	if (n.max_transfers == 0)
		n.max_transfers = def.max_transfers;
	if (n.member_slots == 0) /* the default, leaving one slot to others */
		n.member_slots = def.member_slots < n.max_transfers ? def.member_slots
								    : n.max_transfers - 1;
	if (n.member_slots >= n.max_transfers)
		return err_set(errmsg, DOCRAFT_EINVAL, "%u member copy slots of %u: keep one for "
			       "other peers", n.member_slots, n.max_transfers);
	if (n.buffer_size < COPY_BUFFER_MIN || n.buffer_size > COPY_CHUNK_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "copy buffer of %zu bytes (%u..%u)",
			       n.buffer_size, COPY_BUFFER_MIN, COPY_CHUNK_MAX);
	cs->opts = n;
	cs->stats.buffer_size = n.buffer_size;
	return 0;
}

void copy_server_set_member_check(struct copy_server *cs, const char *tablet_id,
				  copy_member_check fn, void *arg)
{
	struct copy_reg *reg = find_reg(cs, tablet_id);
	if (reg != NULL) {
		reg->is_member = fn;
		reg->member_arg = arg;
	}
}

int copy_server_register(struct copy_server *cs, const char *tablet_id, struct store *s,
			 char *errmsg)
{
	struct copy_reg *reg;
	const char *path;
	size_t plen;

	PRE(cs != NULL && s != NULL);
	if (cs->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "copy server closing");
	if (!valid_tablet_id(tablet_id))
		return err_set(errmsg, DOCRAFT_EINVAL, "bad tablet id");
	if (find_reg(cs, tablet_id) != NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s already registered", tablet_id);
	path = store_path(s);
	plen = strlen(path);
	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	reg = xmalloc(sizeof *reg);
	reg->dir_prefix = xmalloc(plen + sizeof COPY_SUFFIX);
	memcpy(reg->dir_prefix, path, plen);
	memcpy(reg->dir_prefix + plen, COPY_SUFFIX, sizeof COPY_SUFFIX);
	snprintf(reg->tablet_id, sizeof reg->tablet_id, "%s", tablet_id);
	reg->store = s;
	reg->refs = 1;
	reg->next = cs->regs;
	cs->regs = reg;
	return 0;
}

void copy_server_unregister(struct copy_server *cs, const char *tablet_id)
{
	struct copy_reg **pp = &cs->regs, *reg;
	struct copy_xfer *x, *next;

	while (*pp != NULL && strcmp((*pp)->tablet_id, tablet_id) != 0)
		pp = &(*pp)->next;
	if ((reg = *pp) == NULL)
		return;
	*pp = reg->next;
	uv_mutex_lock(&cs->mu);
	reg->store = NULL;
	while (reg->busy > 0)
		uv_cond_wait(&cs->idle, &cs->mu);
	uv_mutex_unlock(&cs->mu);
	for (x = cs->xfers; x != NULL; x = next) {
		next = x->next;
		if (x->reg == reg)
			xfer_fail(x, DOCRAFT_ECLOSED, "tablet %s unregistered", tablet_id);
	}
	reg_unref(reg);
}

void copy_server_get_stats(const struct copy_server *cs, struct copy_server_stats *out)
{
	*out = cs->stats;
}

static void closer_close_cb(uv_handle_t *h)
{
	struct copy_server *cs = h->data;
	cs->closer_closed = true;
	server_maybe_closed(cs);
}

void copy_server_close(struct copy_server *cs, copy_server_close_cb cb)
{
	struct copy_xfer *x, *next;

	PRE(!cs->closing && cb != NULL);
	cs->closing = true;
	cs->close_cb = cb;
	listener_set_handler(cs->l, LISTENER_COPY, NULL, NULL, NULL);
	for (x = cs->xfers; x != NULL; x = next) {
		next = x->next;
		xfer_fail(x, DOCRAFT_ECLOSED, "copy server closing");
	}
	while (cs->regs != NULL)
		copy_server_unregister(cs, cs->regs->tablet_id);
	uv_close((uv_handle_t *)&cs->closer, closer_close_cb);
}

int copy_server_remove_leftovers(const char *store_path, char *errmsg)
{
	char parent[PATH_MAX], base[NAME_MAX_LEN + sizeof COPY_SUFFIX];
	const char *slash;
	size_t plen = strlen(store_path), blen;
	DIR *d;
	struct dirent *e;
	int rv = 0;

	while (plen > 1 && store_path[plen - 1] == '/')
		plen--;
	if (plen >= sizeof parent)
		return err_set(errmsg, DOCRAFT_EINVAL, "store path too long");
	memcpy(parent, store_path, plen);
	parent[plen] = '\0';
	slash = strrchr(parent, '/');
	if (slash == NULL) {
		blen = (size_t)snprintf(base, sizeof base, "%s" COPY_SUFFIX, parent);
		strcpy(parent, ".");
	} else {
		blen = (size_t)snprintf(base, sizeof base, "%s" COPY_SUFFIX, slash + 1);
		parent[slash == parent ? 1 : (size_t)(slash - parent)] = '\0';
	}
	if (blen >= sizeof base)
		return err_set(errmsg, DOCRAFT_EINVAL, "store name too long");
	d = opendir(parent);
	if (d == NULL)
		return err_set(errmsg, DOCRAFT_EIO, "opendir %s: %s", parent, strerror(errno));
	while (rv == 0 && (e = readdir(d)) != NULL) {
		char path[PATH_MAX + NAME_MAX_LEN + 2];
		if (strncmp(e->d_name, base, blen) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
		LOG_INFO("copy: removing leftover checkpoint %s", path);
		rv = rm_tree(path, errmsg);
	}
	closedir(d);
	return rv;
}

/* ==== destination side ==== */

enum fstate {
	F_PREPARE,  /* prepare job */
	F_CONNECT,  /* uv_tcp_connect */
	F_PREAMBLE, /* uv_write of the preamble */
	F_RECV,     /* frames */
	F_FINISH,   /* finish job */
};

struct copy_fetcher {
	struct copy_fetch *req;
	copy_fetch_cb cb;
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_connect_t creq;
	uv_write_t wreq;
	uv_work_t work;
	struct sockaddr_in addr;
	char address[LISTENER_ADDRESS_MAX + 1];
	char tablet_id[LISTENER_TABLET_ID_MAX + 1];
	char dest[PATH_MAX];
	char tmp[PATH_MAX];
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
	size_t plen;
	uint64_t idle_ms;
	enum fstate state;
	bool reading;
	/* receive buffer: unconsumed bytes are rb[start, end) */
	uint8_t *rb;
	size_t cap, start, end;
	bool in_data;       /* inside a D payload */
	uint64_t data_left; /* of that payload */
	/* current file */
	bool in_file;
	int fd;
	char name[NAME_MAX_LEN + 1];
	uint64_t size, got;
	uint32_t crc;
	size_t wlen; /* bytes the write job writes from rb + start */
	uint64_t nfiles, total;
	uint64_t end_index, end_ht;
	/* the job in flight */
	void (*job_fn)(struct copy_fetcher *);
	void (*job_done)(struct copy_fetcher *);
	bool job_running;
	int job_rv;
	char job_err[DOCRAFT_ERRMSG_SIZE];
	atomic_bool cancel;
	/* ending */
	bool failed, succeeded;
	int status;
	bool cleanup_started, cleanup_done;
	bool tcp_closing, tcp_closed, timer_closing, timer_closed;
	bool released;
};

static void fetch_fail(struct copy_fetcher *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fetch_maybe_release(struct copy_fetcher *f);
static void fetch_parse(struct copy_fetcher *f);

static void fjob_work_cb(uv_work_t *w)
{
	struct copy_fetcher *f = w->data;
	f->job_fn(f);
}

static void fjob_after_cb(uv_work_t *w, int status)
{
	struct copy_fetcher *f = w->data;
	f->job_running = false;
	ASSERT(status == 0);
	(void)status;
	f->job_done(f);
}

static void fjob_start(struct copy_fetcher *f, void (*fn)(struct copy_fetcher *),
		       void (*done)(struct copy_fetcher *))
{
	int rv;
	PRE(!f->job_running);
	f->job_fn = fn;
	f->job_done = done;
	f->job_rv = 0;
	f->job_err[0] = '\0';
	f->job_running = true;
	f->work.data = f;
	rv = uv_queue_work(f->loop, &f->work, fjob_work_cb, fjob_after_cb);
	ASSERT(rv == 0);
	(void)rv;
}

static void idle_cb(uv_timer_t *t)
{
	struct copy_fetcher *f = t->data;
	static const char *what[] = {"", "connecting", "sending the preamble", "waiting for data",
				     ""};
	fetch_fail(f, DOCRAFT_ETIMEDOUT, "nothing from the source for %" PRIu64 " ms (%s)",
		   f->idle_ms, what[f->state]);
}

static void arm_timer(struct copy_fetcher *f)
{
	uv_timer_start(&f->timer, idle_cb, f->idle_ms, 0);
}

static void fetch_tcp_close_cb(uv_handle_t *h)
{
	struct copy_fetcher *f = h->data;
	f->tcp_closed = true;
	fetch_maybe_release(f);
}

static void fetch_close_tcp(struct copy_fetcher *f)
{
	if (f->tcp_closing)
		return;
	f->tcp_closing = true;
	f->reading = false;
	uv_close((uv_handle_t *)&f->tcp, fetch_tcp_close_cb);
}

static void stop_reading(struct copy_fetcher *f)
{
	if (f->reading) {
		uv_read_stop((uv_stream_t *)&f->tcp);
		f->reading = false;
	}
	uv_timer_stop(&f->timer);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct copy_fetcher *f = h->data;
	(void)suggested;
	if (f->end == f->cap && f->start > 0) {
		memmove(f->rb, f->rb + f->start, f->end - f->start);
		f->end -= f->start;
		f->start = 0;
	}
	/* A full buffer is never left unconsumed (fetch_parse), so len > 0. */
	buf->base = (char *)f->rb + f->end;
	buf->len = f->cap - f->end;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct copy_fetcher *f = s->data;
	struct copy_stats *st = &f->req->stats;
	(void)buf;
	if (nread == 0 || f->failed)
		return;
	if (nread < 0) {
		if (nread != UV_EOF)
			fetch_fail(f, DOCRAFT_EUNAVAILABLE, "read: %s", uv_strerror((int)nread));
		else if (f->in_file)
			fetch_fail(f, DOCRAFT_EUNAVAILABLE,
				   "connection closed by the source mid-file (%s: %" PRIu64
				   " of %" PRIu64 " bytes)",
				   f->name, f->got + (f->end - f->start), f->size);
		else
			fetch_fail(f, DOCRAFT_EUNAVAILABLE,
				   "connection closed by the source before the end "
				   "(%" PRIu64 " files received)",
				   f->nfiles);
		return;
	}
	f->end += (size_t)nread;
	if (f->end - f->start > st->max_buffered)
		st->max_buffered = f->end - f->start;
	arm_timer(f);
	fetch_parse(f);
}

static void start_reading(struct copy_fetcher *f)
{
	int rv;
	if (!f->reading) {
		rv = uv_read_start((uv_stream_t *)&f->tcp, alloc_cb, read_cb);
		if (rv != 0) {
			fetch_fail(f, DOCRAFT_EUNAVAILABLE, "read: %s", uv_strerror(rv));
			return;
		}
		f->reading = true;
	}
	arm_timer(f);
}

/* -- jobs (pool threads) and their completions -- */

static void prepare_job(struct copy_fetcher *f)
{
	if ((f->job_rv = rm_tree(f->tmp, f->job_err)) != 0)
		return;
	if (mkdir(f->tmp, 0755) != 0)
		f->job_rv = err_set(f->job_err, errno_code(errno), "mkdir %s: %s", f->tmp,
				    strerror(errno));
}

static void connect_cb(uv_connect_t *req, int status);

static void prepare_done(struct copy_fetcher *f)
{
	int rv;
	if (f->failed) {
		fetch_maybe_release(f);
		return;
	}
	if (f->job_rv != 0) {
		fetch_fail(f, f->job_rv, "%s", f->job_err);
		return;
	}
	f->state = F_CONNECT;
	f->creq.data = f;
	rv = uv_tcp_connect(&f->creq, &f->tcp, (const struct sockaddr *)&f->addr, connect_cb);
	if (rv != 0) {
		fetch_fail(f, DOCRAFT_EUNAVAILABLE, "connect: %s", uv_strerror(rv));
		return;
	}
	arm_timer(f);
}

static void preamble_write_cb(uv_write_t *w, int status)
{
	struct copy_fetcher *f = w->data;
	if (f->failed)
		return;
	if (status != 0) {
		fetch_fail(f, DOCRAFT_EUNAVAILABLE, "sending the preamble: %s",
			   uv_strerror(status));
		return;
	}
	f->state = F_RECV;
	start_reading(f);
}

static void connect_cb(uv_connect_t *req, int status)
{
	struct copy_fetcher *f = req->data;
	uv_buf_t b;
	int rv;

	if (f->failed)
		return;
	if (status != 0) {
		fetch_fail(f, DOCRAFT_EUNAVAILABLE, "connect: %s", uv_strerror(status));
		return;
	}
	uv_tcp_nodelay(&f->tcp, 1);
	f->state = F_PREAMBLE;
	b = uv_buf_init((char *)f->preamble, (unsigned)f->plen);
	f->wreq.data = f;
	rv = uv_write(&f->wreq, (uv_stream_t *)&f->tcp, &b, 1, preamble_write_cb);
	if (rv != 0) {
		fetch_fail(f, DOCRAFT_EUNAVAILABLE, "sending the preamble: %s", uv_strerror(rv));
		return;
	}
	arm_timer(f);
}

static void open_job(struct copy_fetcher *f)
{
	char path[PATH_MAX + NAME_MAX_LEN + 2];
	snprintf(path, sizeof path, "%s/%s", f->tmp, f->name);
	f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0)
		f->job_rv = err_set(f->job_err, errno == EEXIST ? DOCRAFT_ECORRUPT
								: errno_code(errno),
				    "create %s: %s", path, strerror(errno));
}

static void write_job(struct copy_fetcher *f)
{
	const uint8_t *p = f->rb + f->start;
	size_t done = 0;

	while (done < f->wlen) {
		ssize_t w = pwrite(f->fd, p + done, f->wlen - done, (off_t)(f->got + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			f->job_rv = err_set(f->job_err, errno_code(errno), "write %s/%s: %s",
					    f->tmp, f->name, strerror(errno));
			return;
		}
		done += (size_t)w;
	}
	f->crc = copy_crc32c(f->crc, p, f->wlen);
}

static void close_job(struct copy_fetcher *f)
{
	int fd = f->fd;
	f->fd = -1;
	if (fsync(fd) != 0) {
		f->job_rv = err_set(f->job_err, errno_code(errno), "fsync %s/%s: %s", f->tmp,
				    f->name, strerror(errno));
		close(fd);
		return;
	}
	if (close(fd) != 0)
		f->job_rv = err_set(f->job_err, errno_code(errno), "close %s/%s: %s", f->tmp,
				    f->name, strerror(errno));
}

static int parent_dir(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return snprintf(out, size, ".") < 0;
	if (slash == path)
		return snprintf(out, size, "/") < 0;
	return snprintf(out, size, "%.*s", (int)(slash - path), path) < 0;
}

static void finish_job(struct copy_fetcher *f)
{
	struct store_options o;
	struct store *s;
	uint64_t idx, ht;
	char parent[PATH_MAX];
	int rv;

	if ((f->job_rv = fsync_path(f->tmp, f->job_err)) != 0)
		return;
	marker_options(&o);
	rv = store_open(f->tmp, &o, &s, f->job_err);
	if (rv != 0) {
		f->job_rv = err_wrap(f->job_err, rv == DOCRAFT_EINVAL ? DOCRAFT_ECORRUPT : rv,
				     "the copy does not open");
		return;
	}
	store_applied(s, &idx, &ht);
	store_close(s);
	if (idx != f->end_index || ht != f->end_ht) {
		f->job_rv = err_set(f->job_err, DOCRAFT_ECORRUPT,
				    "the copy's marker is index %" PRIu64 " ht %" PRIu64
				    ", the source announced %" PRIu64 " ht %" PRIu64,
				    idx, ht, f->end_index, f->end_ht);
		return;
	}
	if ((f->job_rv = fsync_path(f->tmp, f->job_err)) != 0)
		return;
	if (atomic_load(&f->cancel)) {
		f->job_rv = err_set(f->job_err, DOCRAFT_ECLOSED, "cancelled");
		return;
	}
	rv = renameat2(AT_FDCWD, f->tmp, AT_FDCWD, f->dest, RENAME_NOREPLACE);
	if (rv != 0 && (errno == EINVAL || errno == ENOSYS)) {
		/* A file system without RENAME_NOREPLACE. */
		struct stat st;
		if (lstat(f->dest, &st) == 0)
			errno = EEXIST;
		else
			rv = rename(f->tmp, f->dest);
	}
	if (rv != 0) {
		f->job_rv = err_set(f->job_err, errno_code(errno), "rename %s to %s: %s", f->tmp,
				    f->dest, strerror(errno));
		return;
	}
	parent_dir(f->dest, parent, sizeof parent);
	if ((f->job_rv = fsync_path(parent, f->job_err)) != 0) {
		/* Not durably in place: take it back rather than half-report. */
		char ignored[DOCRAFT_ERRMSG_SIZE];
		rm_tree(f->dest, ignored);
	}
}

static void finish_done(struct copy_fetcher *f)
{
	if (f->job_rv == 0) {
		/* In place: a cancel that came too late does not undo it. */
		f->succeeded = true;
		TLOG_INFO(f->tablet_id, 0,
			  "copy from %s into %s: %" PRIu64 " files, %" PRIu64
			  " bytes, applied index %" PRIu64,
			  f->address, f->dest, f->nfiles, f->total, f->end_index);
		fetch_maybe_release(f);
		return;
	}
	if (f->failed) {
		fetch_maybe_release(f);
		return;
	}
	fetch_fail(f, f->job_rv, "%s", f->job_err);
}

/* Completion of open, write and close jobs: back to the frames. */
static void file_job_done(struct copy_fetcher *f)
{
	if (f->failed) {
		fetch_maybe_release(f);
		return;
	}
	if (f->job_rv != 0) {
		fetch_fail(f, f->job_rv, "%s", f->job_err);
		return;
	}
	fetch_parse(f);
}

static void write_done(struct copy_fetcher *f)
{
	if (!f->failed && f->job_rv == 0) {
		f->got += f->wlen;
		f->data_left -= f->wlen;
		f->start += f->wlen;
		f->req->stats.bytes += f->wlen;
		f->wlen = 0;
		if (f->data_left == 0)
			f->in_data = false;
	}
	file_job_done(f);
}

static void close_done(struct copy_fetcher *f)
{
	if (!f->failed && f->job_rv == 0) {
		f->in_file = false;
		f->nfiles++;
		f->total += f->size;
		f->req->stats.files++;
	}
	file_job_done(f);
}

/* -- frames -- */

enum step {
	STEP_NEXT, /* consumed something: parse on */
	STEP_MORE, /* needs more bytes from the network */
	STEP_STOP, /* started a job, or failed */
};

/* D payload bytes at rb[start]: written once the frame is complete or the
 * buffer full. */
static enum step parse_data(struct copy_fetcher *f)
{
	size_t avail = f->end - f->start;
	size_t n = avail < f->data_left ? avail : (size_t)f->data_left;

	if (n == 0 || (n < f->data_left && f->end < f->cap))
		return STEP_MORE;
	f->wlen = n;
	stop_reading(f);
	fjob_start(f, write_job, write_done);
	return STEP_STOP;
}

static enum step corrupt(struct copy_fetcher *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum step corrupt(struct copy_fetcher *f, const char *fmt, ...)
{
	char what[2 * DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	fetch_fail(f, DOCRAFT_ECORRUPT, "bad stream from the source: %s", what);
	return STEP_STOP;
}

int copy_frame_decode(const uint8_t *p, size_t avail, struct copy_frame *out, char *errmsg)
{
	size_t need;
	uint16_t n;

	if (avail == 0)
		return 0;
	out->type = p[0];
	switch (p[0]) {
	case 'K':
		return 1;
	case 'F':
		if (avail < 3)
			return 0;
		n = be16_load(p + 1);
		if (n == 0 || n > NAME_MAX_LEN) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "file name of %u bytes", n);
			return -DOCRAFT_ECORRUPT;
		}
		need = 3 + (size_t)n + 8;
		if (avail < need)
			return 0;
		if (!valid_name((const char *)p + 3, n)) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "file name");
			return -DOCRAFT_ECORRUPT;
		}
		memcpy(out->name, p + 3, n);
		out->name[n] = '\0';
		out->size = be64_load(p + 3 + n);
		return (int)need;
	case 'D':
		if (avail < 5)
			return 0;
		out->len = be32_load(p + 1);
		if (out->len == 0 || out->len > COPY_CHUNK_MAX) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "data frame of %" PRIu32 " bytes",
				out->len);
			return -DOCRAFT_ECORRUPT;
		}
		return 5;
	case 'C':
		if (avail < 5)
			return 0;
		out->crc = be32_load(p + 1);
		return 5;
	case 'E':
		if (avail < END_LEN)
			return 0;
		out->nfiles = be32_load(p + 1);
		out->total = be64_load(p + 5);
		out->applied_index = be64_load(p + 13);
		out->applied_ht = be64_load(p + 21);
		return END_LEN;
	case 'X':
		if (avail < 4)
			return 0;
		n = be16_load(p + 2);
		if (n > MSG_MAX) {
			err_set(errmsg, DOCRAFT_ECORRUPT, "error message of %u bytes", n);
			return -DOCRAFT_ECORRUPT;
		}
		if (avail < 4 + (size_t)n)
			return 0;
		out->code = p[1];
		if (out->code <= DOCRAFT_OK || out->code >= DOCRAFT_ERROR_MAX)
			out->code = DOCRAFT_EIO;
		for (size_t i = 0; i < n; i++)
			out->msg[i] = (p[4 + i] >= 0x20 && p[4 + i] < 0x7f) ? (char)p[4 + i] : '?';
		out->msg[n] = '\0';
		return 4 + n;
	default:
		err_set(errmsg, DOCRAFT_ECORRUPT, "unknown frame type 0x%02x", p[0]);
		return -DOCRAFT_ECORRUPT;
	}
}

static enum step parse_file(struct copy_fetcher *f, const struct copy_frame *fr, size_t hlen)
{
	if (f->in_file)
		return corrupt(f, "file header inside file %s", f->name);
	memcpy(f->name, fr->name, sizeof f->name);
	f->size = fr->size;
	f->got = 0;
	f->crc = 0;
	f->in_file = true;
	f->start += hlen;
	stop_reading(f);
	fjob_start(f, open_job, file_job_done);
	return STEP_STOP;
}

static enum step parse_data_header(struct copy_fetcher *f, const struct copy_frame *fr,
				   size_t hlen)
{
	if (!f->in_file)
		return corrupt(f, "data outside a file");
	if (fr->len > f->size - f->got)
		return corrupt(f, "data frame of %" PRIu32 " bytes at %" PRIu64 " of %s (%" PRIu64
			       " bytes)",
			       fr->len, f->got, f->name, f->size);
	f->data_left = fr->len;
	f->in_data = true;
	f->start += hlen;
	return STEP_NEXT;
}

static enum step parse_file_end(struct copy_fetcher *f, const struct copy_frame *fr, size_t hlen)
{
	if (!f->in_file)
		return corrupt(f, "file end outside a file");
	if (f->got != f->size)
		return corrupt(f, "short file %s: %" PRIu64 " of %" PRIu64 " bytes", f->name,
			       f->got, f->size);
	if (fr->crc != f->crc)
		return corrupt(f, "file %s: CRC-32C 0x%08" PRIx32 ", the source sent 0x%08" PRIx32,
			       f->name, f->crc, fr->crc);
	f->start += hlen;
	stop_reading(f);
	fjob_start(f, close_job, close_done);
	return STEP_STOP;
}

static enum step parse_end(struct copy_fetcher *f, const struct copy_frame *fr, size_t hlen)
{
	if (f->in_file)
		return corrupt(f, "end inside file %s", f->name);
	if (fr->nfiles != f->nfiles || fr->total != f->total)
		return corrupt(f,
			       "end frame announces %" PRIu32 " files, %" PRIu64
			       " bytes; received %" PRIu64 ", %" PRIu64,
			       fr->nfiles, fr->total, f->nfiles, f->total);
	f->end_index = fr->applied_index;
	f->end_ht = fr->applied_ht;
	f->start += hlen;
	f->state = F_FINISH;
	stop_reading(f);
	fetch_close_tcp(f); /* nothing more to receive */
	fjob_start(f, finish_job, finish_done);
	return STEP_STOP;
}

/* The frame header at rb[start]. */
static enum step parse_frame(struct copy_fetcher *f)
{
	struct copy_frame fr;
	char why[DOCRAFT_ERRMSG_SIZE];
	int n = copy_frame_decode(f->rb + f->start, f->end - f->start, &fr, why);

	if (n == 0)
		return STEP_MORE;
	if (n < 0)
		return corrupt(f, "%s", why);
	switch (fr.type) {
	case 'K':
		f->start += (size_t)n;
		return STEP_NEXT;
	case 'F':
		return parse_file(f, &fr, (size_t)n);
	case 'D':
		return parse_data_header(f, &fr, (size_t)n);
	case 'C':
		return parse_file_end(f, &fr, (size_t)n);
	case 'E':
		return parse_end(f, &fr, (size_t)n);
	default: /* 'X' */
		fetch_fail(f, fr.code, "source: %s", fr.msg);
		return STEP_STOP;
	}
}

static void fetch_parse(struct copy_fetcher *f)
{
	enum step s = STEP_NEXT;

	while (s == STEP_NEXT) {
		if (f->failed || f->job_running || f->state != F_RECV)
			return;
		s = f->in_data ? parse_data(f) : parse_frame(f);
	}
	if (s == STEP_STOP)
		return;
	if (f->start == f->end)
		f->start = f->end = 0;
	start_reading(f);
}

/* -- failure and release -- */

static void fetch_fail(struct copy_fetcher *f, int code, const char *fmt, ...)
{
	char msg[DOCRAFT_ERRMSG_SIZE];
	va_list ap;

	if (f->failed || f->succeeded)
		return;
	f->failed = true;
	f->status = code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	err_set(f->req->errmsg, code, "copy of tablet %s from %s: %s", f->tablet_id, f->address,
		msg);
	if (code == DOCRAFT_ECLOSED)
		TLOG_INFO(f->tablet_id, 0, "%s", f->req->errmsg);
	else
		TLOG_WARN(f->tablet_id, 0, "%s", f->req->errmsg);
	stop_reading(f);
	fetch_close_tcp(f); /* cancels a pending connect or write */
	fetch_maybe_release(f);
}

static void fetch_cleanup_job(struct copy_fetcher *f)
{
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	f->job_rv = rm_tree(f->tmp, f->job_err);
}

static void fetch_cleanup_done(struct copy_fetcher *f)
{
	if (f->job_rv != 0)
		TLOG_WARN(f->tablet_id, 0, "copy: %s", f->job_err);
	f->cleanup_done = true;
	fetch_maybe_release(f);
}

static void fetch_timer_close_cb(uv_handle_t *h)
{
	struct copy_fetcher *f = h->data;
	f->timer_closed = true;
	fetch_maybe_release(f);
}

static void fetch_maybe_release(struct copy_fetcher *f)
{
	struct copy_fetch *req = f->req;
	copy_fetch_cb cb = f->cb;
	uint64_t idx = f->end_index, ht = f->end_ht;
	int status;

	if (!(f->failed || f->succeeded) || f->released || f->job_running)
		return;
	fetch_close_tcp(f);
	if (!f->succeeded && !f->cleanup_done) {
		if (!f->cleanup_started) {
			f->cleanup_started = true;
			fjob_start(f, fetch_cleanup_job, fetch_cleanup_done);
		}
		return;
	}
	if (!f->timer_closing) {
		f->timer_closing = true;
		uv_close((uv_handle_t *)&f->timer, fetch_timer_close_cb);
	}
	if (!f->tcp_closed || !f->timer_closed)
		return;
	f->released = true;
	status = f->succeeded ? 0 : f->status;
	if (status == 0) {
		req->errmsg[0] = '\0';
	} else {
		idx = 0;
		ht = 0;
	}
	free(f->rb);
	free(f);
	req->impl = NULL;
	cb(req, status, idx, ht, req->errmsg);
}

/* -- public -- */

int copy_fetch(uv_loop_t *loop, const char *address, const char *tablet_id, const char *dest_dir,
	       struct copy_fetch *req, copy_fetch_cb cb, char *errmsg)
{
	struct copy_fetcher *f;
	struct sockaddr_in addr;
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
	size_t plen, dlen, cap;
	struct stat st;
	int rv;

	PRE(loop != NULL && address != NULL && tablet_id != NULL && dest_dir != NULL);
	PRE(req != NULL && cb != NULL);
	if (listener_parse_address(address, &addr, errmsg) != 0)
		return DOCRAFT_EINVAL;
	plen = listener_preamble_encode(preamble, LISTENER_COPY, tablet_id, 0, NULL);
	if (plen == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "bad tablet id");
	cap = req->buffer_size != 0 ? req->buffer_size : COPY_BUFFER_SIZE;
	if (cap < COPY_BUFFER_MIN || cap > COPY_CHUNK_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "copy buffer of %zu bytes (%u..%u)", cap,
			       COPY_BUFFER_MIN, COPY_CHUNK_MAX);
	dlen = strlen(dest_dir);
	if (dlen == 0 || dlen + sizeof ".tmp" > PATH_MAX - NAME_MAX_LEN - 2)
		return err_set(errmsg, DOCRAFT_EINVAL, "destination path of %zu bytes", dlen);
	if (dest_dir[dlen - 1] == '/')
		return err_set(errmsg, DOCRAFT_EINVAL, "destination %s ends with '/'", dest_dir);
	if (lstat(dest_dir, &st) == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "destination %s already exists", dest_dir);
	if (errno != ENOENT)
		return err_set(errmsg, DOCRAFT_EIO, "stat %s: %s", dest_dir, strerror(errno));

	f = xmalloc(sizeof *f);
	rv = uv_tcp_init_ex(loop, &f->tcp, AF_INET);
	if (rv != 0) {
		free(f);
		return err_set(errmsg, DOCRAFT_EIO, "socket: %s", uv_strerror(rv));
	}
	f->tcp.data = f;
	uv_timer_init(loop, &f->timer);
	f->timer.data = f;
	f->req = req;
	f->cb = cb;
	f->loop = loop;
	f->addr = addr;
	snprintf(f->address, sizeof f->address, "%s", address);
	snprintf(f->tablet_id, sizeof f->tablet_id, "%s", tablet_id);
	memcpy(f->dest, dest_dir, dlen + 1);
	snprintf(f->tmp, sizeof f->tmp, "%s.tmp", dest_dir);
	memcpy(f->preamble, preamble, plen);
	f->plen = plen;
	f->idle_ms = req->idle_timeout_ms != 0 ? req->idle_timeout_ms : COPY_DEFAULT_IDLE_MS;
	f->cap = cap;
	f->rb = malloc(cap);
	if (f->rb == NULL)
		PANIC("out of memory");
	f->fd = -1;
	atomic_init(&f->cancel, false);
	memset(&req->stats, 0, sizeof req->stats);
	req->stats.buffer_size = cap;
	req->errmsg[0] = '\0';
	req->impl = f;
	f->state = F_PREPARE;
	fjob_start(f, prepare_job, prepare_done);
	return 0;
}

void copy_fetch_cancel(struct copy_fetch *req)
{
	struct copy_fetcher *f = req->impl;

	PRE(f != NULL);
	atomic_store(&f->cancel, true);
	fetch_fail(f, DOCRAFT_ECLOSED, "cancelled");
}
