/* Remote copy, destination side: fetching a tablet's checkpoint from a
 * source server, verifying it and installing it (copy_fetch of
 * remote_copy.h).
 *
 * Design note.
 *
 * One fetch ("fetcher"), strictly one step at a time (copy_link.c):
 * prepare job (remove a leftover <dest>.tmp, mkdir it), connect, write the
 * preamble, then read frames into one receive buffer of buffer_size bytes.
 * Frame headers are parsed in place (copy_frame_decode, copy_proto.c: pure,
 * fuzzed; this file checks order, sizes and CRCs); D payload bytes are
 * written from the buffer by a write job (pool: pwrite + CRC) once the
 * frame is complete or the buffer is full, with reading stopped until the
 * job is done — so at most one buffer of data is held. F opens the file
 * (O_EXCL), C checks size and CRC, fsyncs and closes it, E checks the file
 * count and byte total, then the finish job fsyncs the directory, opens the
 * copy with store_open (with paranoid checks, RocksDB's default, the open
 * fails unless every SST file the MANIFEST names is there with the size it
 * records) and compares its marker with E, and renames <dest>.tmp to
 * <dest> with RENAME_NOREPLACE and fsyncs the parent. Any failure closes
 * the connection and removes <dest>.tmp (the link's cleanup job) before the
 * callback; success skips the cleanup.
 *
 *   PREPARE --job--> CONNECT --> PREAMBLE --> RECV --E--> FINISH --job--> cb
 *                                              |  ^
 *                              F, D (full), C  +--+ open / write / close job
 *
 * Idle timeout: the fetch fails if nothing arrives for idle_timeout_ms
 * while it waits for the network (its own disk jobs do not count: the
 * timer stops with reading). */
#include "tablet/remote_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"
#include "net/listener.h"
#include "tablet/copy_link.h"
#include "tablet/copy_proto.h"

enum fstate {
	F_PREPARE,  /* prepare job */
	F_CONNECT,  /* uv_tcp_connect */
	F_PREAMBLE, /* uv_write of the preamble */
	F_RECV,     /* frames */
	F_FINISH,   /* finish job */
};

/* One fetch. link.dir is <dest>.tmp, link.fd the file being written;
 * link.done means the copy is in place. */
struct copy_fetcher {
	struct copy_link link;
	struct copy_fetch *req;
	copy_fetch_cb cb;
	uv_tcp_t tcp;
	uv_connect_t creq;
	uv_write_t wreq;
	struct sockaddr_in addr;
	char address[LISTENER_ADDRESS_MAX + 1];
	char dest[PATH_MAX];
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
	char name[COPY_NAME_MAX + 1];
	uint64_t size, got;
	uint32_t crc;
	size_t wlen; /* bytes the write job writes from rb + start */
	uint64_t nfiles, total;
	uint64_t end_index, end_ht;
	atomic_bool cancel;
	int status; /* the failure's code */
};

static void fetch_parse(struct copy_fetcher *f);

static struct copy_fetcher *fetcher_of(struct copy_link *k)
{
	return COPY_LINK_OWNER(k, struct copy_fetcher);
}

static void idle_cb(uv_timer_t *t)
{
	struct copy_fetcher *f = fetcher_of(t->data);
	static const char *what[] = {"", "connecting", "sending the preamble", "waiting for data",
				     ""};
	copy_link_fail(&f->link, DOCRAFT_ETIMEDOUT,
		       "nothing from the source for %" PRIu64 " ms (%s)", f->idle_ms,
		       what[f->state]);
}

static void arm_timer(struct copy_fetcher *f)
{
	uv_timer_start(&f->link.timer, idle_cb, f->idle_ms, 0);
}

static void stop_reading(struct copy_fetcher *f)
{
	if (f->reading) {
		uv_read_stop((uv_stream_t *)&f->tcp);
		f->reading = false;
	}
	uv_timer_stop(&f->link.timer);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct copy_fetcher *f = fetcher_of(h->data);
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
	struct copy_fetcher *f = fetcher_of(s->data);
	struct copy_stats *st = &f->req->stats;
	(void)buf;
	if (nread == 0 || f->link.failed)
		return;
	if (nread < 0) {
		if (nread != UV_EOF)
			copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE, "read: %s",
				       uv_strerror((int)nread));
		else if (f->in_file)
			copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE,
				       "connection closed by the source mid-file (%s: %" PRIu64
				       " of %" PRIu64 " bytes)",
				       f->name, f->got + (f->end - f->start), f->size);
		else
			copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE,
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
			copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE, "read: %s", uv_strerror(rv));
			return;
		}
		f->reading = true;
	}
	arm_timer(f);
}

/* -- the link's hooks -- */

static void fetch_on_fail(struct copy_link *k, int code, const char *msg)
{
	struct copy_fetcher *f = fetcher_of(k);

	f->status = code;
	err_set(f->req->errmsg, code, "copy of tablet %s from %s: %s", k->tablet_id, f->address,
		msg);
	if (code == DOCRAFT_ECLOSED)
		TLOG_INFO(k->tablet_id, 0, "%s", f->req->errmsg);
	else
		TLOG_WARN(k->tablet_id, 0, "%s", f->req->errmsg);
	stop_reading(f);
	copy_link_close_tcp(k); /* cancels a pending connect or write */
}

static void fetch_release(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	struct copy_fetch *req = f->req;
	copy_fetch_cb cb = f->cb;
	uint64_t idx = f->end_index, ht = f->end_ht;
	int status = k->done ? 0 : f->status;

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

static const struct copy_link_ops fetch_ops = {
	.fail = fetch_on_fail,
	.release = fetch_release,
};

/* -- jobs (pool threads) and their completions -- */

static void prepare_job(struct copy_link *k)
{
	if ((k->job_rv = copy_link_remove_dir(k->dir, k->job_err)) != 0)
		return;
	if (mkdir(k->dir, 0755) != 0)
		k->job_rv = err_set(k->job_err, fs_errno_code(errno), "mkdir %s: %s", k->dir,
				    strerror(errno));
}

static void connect_cb(uv_connect_t *req, int status);

static void prepare_done(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	int rv;

	if (!copy_link_job_ok(k))
		return;
	f->state = F_CONNECT;
	f->creq.data = f;
	rv = uv_tcp_connect(&f->creq, &f->tcp, (const struct sockaddr *)&f->addr, connect_cb);
	if (rv != 0) {
		copy_link_fail(k, DOCRAFT_EUNAVAILABLE, "connect: %s", uv_strerror(rv));
		return;
	}
	arm_timer(f);
}

static void preamble_write_cb(uv_write_t *w, int status)
{
	struct copy_fetcher *f = w->data;
	if (f->link.failed)
		return;
	if (status != 0) {
		copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE, "sending the preamble: %s",
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

	if (f->link.failed)
		return;
	if (status != 0) {
		copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE, "connect: %s", uv_strerror(status));
		return;
	}
	uv_tcp_nodelay(&f->tcp, 1);
	f->state = F_PREAMBLE;
	b = uv_buf_init((char *)f->preamble, (unsigned)f->plen);
	f->wreq.data = f;
	rv = uv_write(&f->wreq, (uv_stream_t *)&f->tcp, &b, 1, preamble_write_cb);
	if (rv != 0) {
		copy_link_fail(&f->link, DOCRAFT_EUNAVAILABLE, "sending the preamble: %s",
			       uv_strerror(rv));
		return;
	}
	arm_timer(f);
}

static void open_job(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	char path[PATH_MAX + COPY_NAME_MAX + 2];

	snprintf(path, sizeof path, "%s/%s", k->dir, f->name);
	k->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (k->fd < 0)
		k->job_rv = err_set(k->job_err, errno == EEXIST ? DOCRAFT_ECORRUPT
								: fs_errno_code(errno),
				    "create %s: %s", path, strerror(errno));
}

static void write_job(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	const uint8_t *p = f->rb + f->start;
	size_t done = 0;

	while (done < f->wlen) {
		ssize_t w = pwrite(k->fd, p + done, f->wlen - done, (off_t)(f->got + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			k->job_rv = err_set(k->job_err, fs_errno_code(errno), "write %s/%s: %s",
					    k->dir, f->name, strerror(errno));
			return;
		}
		done += (size_t)w;
	}
	f->crc = copy_crc32c(f->crc, p, f->wlen);
}

static void close_job(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	int fd = k->fd;

	k->fd = -1;
	if (fsync(fd) != 0) {
		k->job_rv = err_set(k->job_err, fs_errno_code(errno), "fsync %s/%s: %s", k->dir,
				    f->name, strerror(errno));
		close(fd);
		return;
	}
	if (close(fd) != 0)
		k->job_rv = err_set(k->job_err, fs_errno_code(errno), "close %s/%s: %s", k->dir,
				    f->name, strerror(errno));
}

static void finish_job(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);
	uint64_t idx, ht;
	int rv;

	if ((k->job_rv = fs_fsync_path(k->dir, k->job_err)) != 0)
		return;
	rv = copy_link_read_marker(k->dir, &idx, &ht, k->job_err);
	if (rv != 0) {
		k->job_rv = err_wrap(k->job_err, rv == DOCRAFT_EINVAL ? DOCRAFT_ECORRUPT : rv,
				     "the copy does not open");
		return;
	}
	if (idx != f->end_index || ht != f->end_ht) {
		k->job_rv = err_set(k->job_err, DOCRAFT_ECORRUPT,
				    "the copy's marker is index %" PRIu64 " ht %" PRIu64
				    ", the source announced %" PRIu64 " ht %" PRIu64,
				    idx, ht, f->end_index, f->end_ht);
		return;
	}
	if ((k->job_rv = fs_fsync_path(k->dir, k->job_err)) != 0)
		return;
	if (atomic_load(&f->cancel)) {
		k->job_rv = err_set(k->job_err, DOCRAFT_ECLOSED, "cancelled");
		return;
	}
	rv = renameat2(AT_FDCWD, k->dir, AT_FDCWD, f->dest, RENAME_NOREPLACE);
	if (rv != 0 && (errno == EINVAL || errno == ENOSYS)) {
		/* A file system without RENAME_NOREPLACE. */
		struct stat st;
		if (lstat(f->dest, &st) == 0)
			errno = EEXIST;
		else
			rv = rename(k->dir, f->dest);
	}
	if (rv != 0) {
		k->job_rv = err_set(k->job_err, fs_errno_code(errno), "rename %s to %s: %s",
				    k->dir, f->dest, strerror(errno));
		return;
	}
	if ((k->job_rv = fs_fsync_parent(f->dest, k->job_err)) != 0) {
		/* Not durably in place: take it back rather than half-report. */
		char ignored[DOCRAFT_ERRMSG_SIZE];
		copy_link_remove_dir(f->dest, ignored);
	}
}

static void finish_done(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);

	if (k->job_rv == 0) {
		/* In place: a cancel that came too late does not undo it. */
		k->done = true;
		k->cleanup_done = true; /* nothing to remove */
		TLOG_INFO(k->tablet_id, 0,
			  "copy from %s into %s: %" PRIu64 " files, %" PRIu64
			  " bytes, applied index %" PRIu64,
			  f->address, f->dest, f->nfiles, f->total, f->end_index);
		copy_link_maybe_release(k);
		return;
	}
	copy_link_job_ok(k); /* false: fails the fetch, or releases a failed one */
}

/* Completion of open, write and close jobs: back to the frames. */
static void file_job_done(struct copy_link *k)
{
	if (copy_link_job_ok(k))
		fetch_parse(fetcher_of(k));
}

static void write_done(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);

	if (!k->failed && k->job_rv == 0) {
		f->got += f->wlen;
		f->data_left -= f->wlen;
		f->start += f->wlen;
		f->req->stats.bytes += f->wlen;
		f->wlen = 0;
		if (f->data_left == 0)
			f->in_data = false;
	}
	file_job_done(k);
}

static void close_done(struct copy_link *k)
{
	struct copy_fetcher *f = fetcher_of(k);

	if (!k->failed && k->job_rv == 0) {
		f->in_file = false;
		f->nfiles++;
		f->total += f->size;
		f->req->stats.files++;
	}
	file_job_done(k);
}

/* -- frames -- */

enum step {
	STEP_NEXT, /* consumed something: parse on */
	STEP_MORE, /* needs more bytes from the network */
	STEP_STOP, /* started a job, or failed */
};

/* Stops reading and runs one job; the frames go on from its completion. */
static enum step step_job(struct copy_fetcher *f, copy_job_fn fn, copy_job_fn done)
{
	stop_reading(f);
	copy_link_job_start(&f->link, fn, done);
	return STEP_STOP;
}

/* D payload bytes at rb[start]: written once the frame is complete or the
 * buffer full. */
static enum step parse_data(struct copy_fetcher *f)
{
	size_t avail = f->end - f->start;
	size_t n = avail < f->data_left ? avail : (size_t)f->data_left;

	if (n == 0 || (n < f->data_left && f->end < f->cap))
		return STEP_MORE;
	f->wlen = n;
	return step_job(f, write_job, write_done);
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
	copy_link_fail(&f->link, DOCRAFT_ECORRUPT, "bad stream from the source: %s", what);
	return STEP_STOP;
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
	return step_job(f, open_job, file_job_done);
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
	return step_job(f, close_job, close_done);
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
	copy_link_close_tcp(&f->link); /* nothing more to receive */
	return step_job(f, finish_job, finish_done);
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
		copy_link_fail(&f->link, fr.code, "source: %s", fr.msg);
		return STEP_STOP;
	}
}

static void fetch_parse(struct copy_fetcher *f)
{
	enum step s = STEP_NEXT;

	while (s == STEP_NEXT) {
		if (f->link.failed || f->link.job_running || f->state != F_RECV)
			return;
		s = f->in_data ? parse_data(f) : parse_frame(f);
	}
	if (s == STEP_STOP)
		return;
	if (f->start == f->end)
		f->start = f->end = 0;
	start_reading(f);
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
	if (dlen == 0 || dlen + sizeof ".tmp" > PATH_MAX - COPY_NAME_MAX - 2)
		return err_set(errmsg, DOCRAFT_EINVAL, "destination path of %zu bytes", dlen);
	if (dest_dir[dlen - 1] == '/')
		return err_set(errmsg, DOCRAFT_EINVAL, "destination %s ends with '/'", dest_dir);
	if (lstat(dest_dir, &st) == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "destination %s already exists", dest_dir);
	if (errno != ENOENT)
		return err_set(errmsg, DOCRAFT_EIO, "stat %s: %s", dest_dir, strerror(errno));

	f = xzalloc(sizeof *f);
	rv = uv_tcp_init_ex(loop, &f->tcp, AF_INET);
	if (rv != 0) {
		free(f);
		return err_set(errmsg, DOCRAFT_EIO, "socket: %s", uv_strerror(rv));
	}
	copy_link_init(&f->link, &fetch_ops, loop, &f->tcp, false, tablet_id);
	f->req = req;
	f->cb = cb;
	f->addr = addr;
	snprintf(f->address, sizeof f->address, "%s", address);
	memcpy(f->dest, dest_dir, dlen + 1);
	snprintf(f->link.dir, sizeof f->link.dir, "%s.tmp", dest_dir);
	memcpy(f->preamble, preamble, plen);
	f->plen = plen;
	f->idle_ms = req->idle_timeout_ms != 0 ? req->idle_timeout_ms : COPY_DEFAULT_IDLE_MS;
	f->cap = cap;
	f->rb = xmalloc(cap);
	atomic_init(&f->cancel, false);
	memset(&req->stats, 0, sizeof req->stats);
	req->stats.buffer_size = cap;
	req->errmsg[0] = '\0';
	req->impl = f;
	f->state = F_PREPARE;
	copy_link_job_start(&f->link, prepare_job, prepare_done);
	return 0;
}

void copy_fetch_cancel(struct copy_fetch *req)
{
	struct copy_fetcher *f = req->impl;

	PRE(f != NULL);
	atomic_store(&f->cancel, true);
	copy_link_fail(&f->link, DOCRAFT_ECLOSED, "cancelled");
}
