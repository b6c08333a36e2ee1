/* Remote copy, source side: serving a tablet's checkpoint to a peer over a
 * COPY connection (the copy_server_* half of remote_copy.h).
 *
 * Design note.
 *
 * Per connection ("xfer"), strictly one step at a time (copy_link.c):
 *
 *   checkpoint job (pool): store_checkpoint(<store>.copy-<n>) — flushes the
 *     memtables, hard-links the SST files — then store_open of the checkpoint
 *     to read its marker (copy_link_read_marker), store_close, list its files
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
 * Idle timeout: the source sends K while its checkpoint is being written
 * (so the destination's idle timer measures a dead peer, not a slow flush)
 * and fails a transfer whose write has made no progress for its idle
 * timeout; one timer per transfer ticks for both.
 *
 * Slots: at most max_transfers at once, member_slots of them only for
 * peers the tablet's member check accepts (take_slot), so a flood of COPY
 * connections cannot keep a lagging replica from catching up. */
#include "tablet/remote_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "docdb/store.h"
#include "net/listener.h"
#include "tablet/copy_link.h"
#include "tablet/copy_proto.h"

#define COPY_SUFFIX ".copy-"

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

/* One transfer. link.dir is the checkpoint directory, link.fd the file
 * being read. */
struct copy_xfer {
	struct copy_link link;
	struct copy_xfer *next, **pprev; /* in cs->xfers */
	struct copy_server *cs;
	struct copy_reg *reg; /* NULL if the tablet is not registered */
	uv_write_t wreq; /* F, D, C, E: completion drives the next step */
	uv_write_t kreq; /* K */
	uv_write_t ereq; /* X */
	bool wreq_busy, kreq_busy, ereq_busy;
	bool other;      /* counted in stats.active_others */
	uint64_t last_progress;
	enum xstate state;
	/* checkpoint */
	uint64_t applied_index, applied_ht;
	struct file_ent *files;
	size_t nfiles, i;
	/* current file */
	uint64_t off;
	uint32_t crc;
	size_t n; /* bytes in buf from the last read job */
	uint64_t total;
	uint8_t *buf;
	size_t buf_size;
	uint8_t hdr[COPY_HDR_MAX];
	uint8_t xframe[COPY_ERROR_FRAME_MAX];
	uint8_t rbuf[64];
	bool peer_gone, write_error;
};

static void xfer_advance(struct copy_xfer *x);

static struct copy_xfer *xfer_of(struct copy_link *k)
{
	return COPY_LINK_OWNER(k, struct copy_xfer);
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

/* -- connection -- */

static unsigned writes_pending(const struct copy_xfer *x)
{
	return (unsigned)x->wreq_busy + x->kreq_busy + x->ereq_busy;
}

static void write_failed(struct copy_xfer *x, int status)
{
	copy_link_fail(&x->link, DOCRAFT_EUNAVAILABLE, "write to the destination: %s",
		       uv_strerror(status));
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
		write_failed(x, status);
		copy_link_maybe_release(&x->link);
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
			write_failed(x, status);
		/* The error frame is out (or cannot be): nothing more to say. */
		copy_link_close_tcp(&x->link);
	}
	copy_link_maybe_release(&x->link);
}

/* Writes bufs[0..n) with req (one of x's three), marked busy on success;
 * the idle clock starts with the first write pending. uv_write's code. */
static int write_bufs(struct copy_xfer *x, uv_write_t *req, bool *busy, const uv_buf_t *bufs,
		      unsigned n, uv_write_cb cb)
{
	int rv;

	if (writes_pending(x) == 0)
		x->last_progress = uv_now(x->cs->loop);
	req->data = x;
	rv = uv_write(req, (uv_stream_t *)x->link.tcp, bufs, n, cb);
	if (rv == 0)
		*busy = true;
	return rv;
}

/* Writes the frame in hdr (hlen bytes) followed by data (len bytes, may be
 * 0) with wreq; data_write_cb takes the next step. */
static void send_frame(struct copy_xfer *x, size_t hlen, const void *data, size_t len)
{
	uv_buf_t bufs[2];
	int rv;

	PRE(!x->wreq_busy && !x->link.tcp_closing);
	bufs[0] = uv_buf_init((char *)x->hdr, (unsigned)hlen);
	bufs[1] = uv_buf_init((char *)data, (unsigned)len);
	rv = write_bufs(x, &x->wreq, &x->wreq_busy, bufs, len > 0 ? 2 : 1, data_write_cb);
	if (rv != 0) {
		x->write_error = true;
		write_failed(x, rv);
	}
}

static void xfer_read_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct copy_xfer *x = xfer_of(h->data);
	(void)suggested;
	buf->base = (char *)x->rbuf;
	buf->len = sizeof x->rbuf;
}

static void xfer_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct copy_xfer *x = xfer_of(s->data);
	(void)buf;
	if (nread == 0)
		return;
	if (nread > 0) {
		copy_link_fail(&x->link, DOCRAFT_ECORRUPT,
			       "the destination sent %zd unexpected bytes", nread);
		return;
	}
	x->peer_gone = true;
	uv_read_stop(s);
	if (x->link.failed || x->link.done) {
		copy_link_close_tcp(&x->link);
		copy_link_maybe_release(&x->link);
		return;
	}
	copy_link_fail(&x->link, DOCRAFT_EUNAVAILABLE, "the destination went away: %s",
		       uv_strerror((int)nread));
}

static void xfer_tick_cb(uv_timer_t *t)
{
	struct copy_xfer *x = xfer_of(t->data);
	struct copy_server *cs = x->cs;
	static const char keepalive = 'K';
	uv_buf_t b;

	if (x->link.tcp_closing)
		return;
	if (writes_pending(x) > 0) {
		if (uv_now(cs->loop) - x->last_progress < cs->opts.idle_timeout_ms)
			return;
		x->write_error = true; /* a stuck socket cannot carry an error frame */
		copy_link_fail(&x->link, DOCRAFT_ETIMEDOUT, "no write progress for %" PRIu64 " ms",
			       cs->opts.idle_timeout_ms);
		copy_link_close_tcp(&x->link);
		copy_link_maybe_release(&x->link);
		return;
	}
	if (x->link.failed || x->state != X_CHECKPOINT)
		return;
	b = uv_buf_init((char *)&keepalive, 1);
	write_bufs(x, &x->kreq, &x->kreq_busy, &b, 1, aux_write_cb);
}

/* -- the link's hooks -- */

static void xfer_on_fail(struct copy_link *k, int code, const char *msg)
{
	struct copy_xfer *x = xfer_of(k);
	uv_buf_t b;

	x->cs->stats.failed++;
	if (code == DOCRAFT_ENOTFOUND || code == DOCRAFT_ECLOSED || code == DOCRAFT_EBUSY)
		TLOG_INFO(k->tablet_id, 0, "copy: %s", msg);
	else
		TLOG_WARN(k->tablet_id, 0, "copy: %s", msg);
	if (x->peer_gone || x->write_error || k->tcp_closing) {
		copy_link_close_tcp(k);
		return;
	}
	b = uv_buf_init((char *)x->xframe,
			(unsigned)copy_proto_encode_error(x->xframe, code, msg));
	if (write_bufs(x, &x->ereq, &x->ereq_busy, &b, 1, aux_write_cb) != 0)
		copy_link_close_tcp(k);
}

static bool xfer_busy(const struct copy_link *k)
{
	return writes_pending(COPY_LINK_OWNER(k, const struct copy_xfer)) > 0;
}

static void xfer_release(struct copy_link *k)
{
	struct copy_xfer *x = xfer_of(k);
	struct copy_server *cs = x->cs;

	*x->pprev = x->next;
	if (x->next != NULL)
		x->next->pprev = x->pprev;
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

static const struct copy_link_ops xfer_ops = {
	.fail = xfer_on_fail,
	.busy = xfer_busy,
	.release = xfer_release,
};

/* -- the steps -- */

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct file_ent *)a)->name, ((const struct file_ent *)b)->name);
}

/* Lists the regular files of the checkpoint, info logs excepted. */
static int list_files(struct copy_xfer *x, char *errmsg)
{
	const char *dir = x->link.dir;
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;
	int rv = 0;

	if (d == NULL)
		return err_set(errmsg, DOCRAFT_EIO, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		size_t n = strlen(e->d_name);
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strcmp(e->d_name, "LOG") == 0 || strncmp(e->d_name, "LOG.old", 7) == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			rv = err_set(errmsg, DOCRAFT_EIO, "stat %s/%s: %s", dir, e->d_name,
				     strerror(errno));
			break;
		}
		if (!S_ISREG(st.st_mode) || !copy_proto_valid_name(e->d_name, n)) {
			rv = err_set(errmsg, DOCRAFT_EIO, "checkpoint %s: unexpected entry %s",
				     dir, e->d_name);
			break;
		}
		if (x->nfiles == cap) {
			cap = cap ? 2 * cap : 32;
			x->files = xrealloc(x->files, cap * sizeof *x->files);
		}
		x->files[x->nfiles].name = xstrdup(e->d_name);
		x->files[x->nfiles].size = (uint64_t)st.st_size;
		x->nfiles++;
	}
	closedir(d);
	if (rv == 0 && x->nfiles > 0)
		qsort(x->files, x->nfiles, sizeof *x->files, cmp_files);
	return rv;
}

/* Pool thread. */
static void checkpoint_job(struct copy_link *k)
{
	struct copy_xfer *x = xfer_of(k);
	struct copy_server *cs = x->cs;
	struct copy_reg *reg = x->reg;
	struct store *s;
	int rv;

	/* A directory of this name can only be a crashed process' leftover. */
	if ((k->job_rv = copy_link_remove_dir(k->dir, k->job_err)) != 0)
		return;
	uv_mutex_lock(&cs->mu);
	s = reg->store;
	if (s != NULL)
		reg->busy++;
	uv_mutex_unlock(&cs->mu);
	if (s == NULL) {
		k->job_rv = err_set(k->job_err, DOCRAFT_ECLOSED, "tablet %s unregistered",
				    k->tablet_id);
		return;
	}
	rv = store_checkpoint(s, k->dir, k->job_err);
	uv_mutex_lock(&cs->mu);
	if (--reg->busy == 0)
		uv_cond_broadcast(&cs->idle);
	uv_mutex_unlock(&cs->mu);
	/* From here on the store may be closed: only the checkpoint is used. */
	if (rv != 0) {
		k->job_rv = rv;
		return;
	}
	rv = copy_link_read_marker(k->dir, &x->applied_index, &x->applied_ht, k->job_err);
	if (rv != 0) {
		k->job_rv = err_wrap(k->job_err, rv, "opening checkpoint");
		return;
	}
	k->job_rv = list_files(x, k->job_err);
}

static void checkpoint_done(struct copy_link *k)
{
	struct copy_xfer *x = xfer_of(k);

	if (!copy_link_job_ok(k))
		return;
	TLOG_DEBUG(k->tablet_id, 0,
		   "copy: checkpoint %s: %zu files, applied index %" PRIu64 " ht %" PRIu64,
		   k->dir, x->nfiles, x->applied_index, x->applied_ht);
	x->state = X_FILE_BEGIN;
	xfer_advance(x);
}

/* Pool thread: the next chunk of file i into buf, CRC extended. */
static void read_job(struct copy_link *k)
{
	struct copy_xfer *x = xfer_of(k);
	const struct file_ent *f = &x->files[x->i];
	uint64_t left = f->size - x->off;
	size_t want = left < x->buf_size ? (size_t)left : x->buf_size;
	size_t got = 0;

	if (k->fd < 0) {
		char path[PATH_MAX + COPY_NAME_MAX + 2];
		snprintf(path, sizeof path, "%s/%s", k->dir, f->name);
		k->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (k->fd < 0) {
			k->job_rv = err_set(k->job_err, DOCRAFT_EIO, "open %s: %s", path,
					    strerror(errno));
			return;
		}
	}
	while (got < want) {
		ssize_t r = pread(k->fd, x->buf + got, want - got, (off_t)(x->off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			k->job_rv = err_set(k->job_err, DOCRAFT_EIO, "read %s/%s: %s", k->dir,
					    f->name, strerror(errno));
			return;
		}
		if (r == 0) {
			k->job_rv = err_set(k->job_err, DOCRAFT_EIO,
					    "%s/%s shrank to %" PRIu64 " bytes", k->dir, f->name,
					    x->off + got);
			return;
		}
		got += (size_t)r;
	}
	x->crc = copy_crc32c(x->crc, x->buf, got);
	x->n = got;
	if (x->off + got == f->size) {
		close(k->fd);
		k->fd = -1;
	}
}

static void read_done(struct copy_link *k)
{
	struct copy_xfer *x = xfer_of(k);
	size_t hlen;

	if (!copy_link_job_ok(k))
		return;
	if (x->n > x->cs->stats.max_held)
		x->cs->stats.max_held = x->n;
	hlen = copy_proto_encode_data(x->hdr, (uint32_t)x->n);
	x->off += x->n;
	send_frame(x, hlen, x->buf, x->n);
}

/* Loop thread, nothing in flight on wreq: the next frame. */
static void xfer_advance(struct copy_xfer *x)
{
	const struct file_ent *f;
	size_t hlen;

	if (x->link.failed) {
		copy_link_maybe_release(&x->link);
		return;
	}
	switch (x->state) {
	case X_CHECKPOINT:
		ASSERT(false);
		break;
	case X_FILE_BEGIN:
		if (x->i == x->nfiles) {
			hlen = copy_proto_encode_end(x->hdr, (uint32_t)x->nfiles, x->total,
						     x->applied_index, x->applied_ht);
			x->state = X_END;
			send_frame(x, hlen, NULL, 0);
			return;
		}
		f = &x->files[x->i];
		hlen = copy_proto_encode_file(x->hdr, f->name, f->size);
		x->off = 0;
		x->crc = 0;
		x->state = X_FILE_DATA;
		send_frame(x, hlen, NULL, 0);
		return;
	case X_FILE_DATA:
		f = &x->files[x->i];
		if (x->off < f->size) {
			copy_link_job_start(&x->link, read_job, read_done);
			return;
		}
		hlen = copy_proto_encode_crc(x->hdr, x->crc);
		x->total += f->size;
		x->i++;
		x->cs->stats.files_sent++;
		x->state = X_FILE_BEGIN;
		send_frame(x, hlen, NULL, 0);
		return;
	case X_END:
		x->link.done = true;
		x->cs->stats.completed++;
		TLOG_INFO(x->link.tablet_id, 0,
			  "copy: sent %zu files, %" PRIu64 " bytes, applied index %" PRIu64,
			  x->nfiles, x->total, x->applied_index);
		copy_link_maybe_release(&x->link);
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
	    uv_tcp_getpeername(x->link.tcp, (struct sockaddr *)&ss, &len) == 0 &&
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
	copy_link_fail(&x->link, DOCRAFT_EBUSY,
		       "%u copies in progress (%u slots, %u of them kept for the "
		       "tablet's members; this peer is %sa member): try again later",
		       cs->stats.active - 1, cs->opts.max_transfers, cs->opts.member_slots,
		       member ? "" : "not ");
	return false;
}

/* The listener's LISTENER_COPY handler. */
static void on_copy(void *arg, uv_stream_t *stream, const char *tablet_id)
{
	struct copy_server *cs = arg;
	struct copy_xfer *x = xzalloc(sizeof *x);
	struct copy_link *k = &x->link;
	struct copy_reg *reg;
	uint64_t tick;
	int rv;

	copy_link_init(k, &xfer_ops, cs->loop, (uv_tcp_t *)stream, true, tablet_id);
	x->cs = cs;
	x->next = cs->xfers;
	if (cs->xfers != NULL)
		cs->xfers->pprev = &x->next;
	x->pprev = &cs->xfers;
	cs->xfers = x;
	cs->stats.started++;
	cs->stats.active++;
	x->state = X_CHECKPOINT;

	tick = cs->opts.idle_timeout_ms / 4;
	if (tick > COPY_KEEPALIVE_MS)
		tick = COPY_KEEPALIVE_MS;
	if (tick == 0)
		tick = 1;
	uv_timer_start(&k->timer, xfer_tick_cb, tick, tick);

	rv = uv_read_start(stream, xfer_read_alloc_cb, xfer_read_cb);
	if (rv != 0) {
		x->peer_gone = true;
		copy_link_fail(k, DOCRAFT_EUNAVAILABLE, "read from the destination: %s",
			       uv_strerror(rv));
		return;
	}
	if (cs->closing) {
		copy_link_fail(k, DOCRAFT_ECLOSED, "copy server closing");
		return;
	}
	reg = find_reg(cs, tablet_id);
	if (reg == NULL) {
		copy_link_fail(k, DOCRAFT_ENOTFOUND, "tablet %s is not hosted here", tablet_id);
		return;
	}
	if (!take_slot(cs, x, reg))
		return;
	x->reg = reg;
	reg->refs++;
	if ((size_t)snprintf(k->dir, sizeof k->dir, "%s%" PRIu64, reg->dir_prefix,
			     cs->next_id++) >= sizeof k->dir) {
		k->dir[0] = '\0';
		copy_link_fail(k, DOCRAFT_EINVAL, "store path too long");
		return;
	}
	x->buf_size = cs->opts.buffer_size;
	x->buf = xmalloc(x->buf_size);
	TLOG_DEBUG(tablet_id, 0, "copy: checkpoint into %s", k->dir);
	copy_link_job_start(k, checkpoint_job, checkpoint_done);
}

/* -- public -- */

int copy_server_init(struct copy_server *cs, uv_loop_t *loop, struct listener *l,
		     char *errmsg)
{
	static const struct copy_server_options defaults; /* all 0: every default */
	int rv;

	PRE(cs != NULL && loop != NULL && l != NULL && listener_loop(l) == loop);
	*cs = (struct copy_server){.loop = loop, .l = l};
	rv = copy_server_set_options(cs, &defaults, errmsg);
	ASSERT(rv == 0);
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

	if (n.buffer_size == 0)
		n.buffer_size = COPY_BUFFER_SIZE;
	if (n.idle_timeout_ms == 0)
		n.idle_timeout_ms = COPY_DEFAULT_IDLE_MS;
	if (n.max_transfers == 0)
		n.max_transfers = COPY_DEFAULT_MAX_TRANSFERS;
	if (n.member_slots == 0) /* the default, leaving one slot to others */
		n.member_slots = COPY_DEFAULT_MEMBER_SLOTS < n.max_transfers
					 ? COPY_DEFAULT_MEMBER_SLOTS
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
	reg = xzalloc(sizeof *reg);
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
			copy_link_fail(&x->link, DOCRAFT_ECLOSED, "tablet %s unregistered",
				       tablet_id);
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
		copy_link_fail(&x->link, DOCRAFT_ECLOSED, "copy server closing");
	}
	while (cs->regs != NULL)
		copy_server_unregister(cs, cs->regs->tablet_id);
	uv_close((uv_handle_t *)&cs->closer, closer_close_cb);
}

int copy_server_remove_leftovers(const char *store_path, char *errmsg)
{
	char parent[PATH_MAX], base[COPY_NAME_MAX + sizeof COPY_SUFFIX];
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
		char path[PATH_MAX + COPY_NAME_MAX + 2];
		if (strncmp(e->d_name, base, blen) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
		LOG_INFO("copy: removing leftover checkpoint %s", path);
		rv = copy_link_remove_dir(path, errmsg);
	}
	closedir(d);
	return rv;
}
