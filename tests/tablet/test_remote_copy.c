/* Remote bootstrap (tablet/remote_copy.h) on real loopback sockets: "nodes"
 * are listeners on 127.0.0.1 and 127.0.0.2 with a copy server each, all on
 * one uv loop per case; stores are real RocksDB instances in temp dirs.
 *
 * (a) a source with SST files and memtable data is copied, the copy opens
 *     with the same pairs and applied marker, and is itself a source for a
 *     second copy through tiny buffers; the memory held stays within one
 *     buffer per side while more than 10 MiB go through;
 * (b) the source's frame encoders write the wire format and decode back;
 *     errors: unknown tablet, synchronous EINVAL without a callback, a
 *     refused connection, a silent source (idle timeout), malformed streams
 *     (bad CRC, short file, bad name, wrong totals, an error frame), a real
 *     checkpoint with an SST file missing or truncated (well-framed: only
 *     opening the copy can tell) or a marker other than announced, too many
 *     transfers;
 * (c) aborts: the source unregisters (during the checkpoint and mid-stream)
 *     or closes, a raw client hangs up or stops reading, the destination
 *     cancels — each side removes its temporary directory.
 *
 * Every wait drives the loop until a condition holds or a guard timer
 * fires; nothing sleeps. Every case ends with uv_loop_close() == 0 and its
 * temp dir removed. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/hlc.h"
#include "docdb/batch.h"
#include "docdb/key.h"
#include "docdb/pv.h"
#include "docdb/store.h"
#include "net/listener.h"
#include "tablet/copy_proto.h"
#include "tablet/remote_copy.h"
#include "test.h"
#include "loop.h"

#define BASE_US UINT64_C(1700000000000000)
#define MIB (1024u * 1024)

/* ---- driving the loop ---- */

static void start_loop(uv_loop_t *loop)
{
	signal(SIGPIPE, SIG_IGN); /* listener.h */
	CHECK_OK(uv_loop_init(loop));
}

static bool never(void *p)
{
	(void)p;
	return false;
}

/* ---- temp dirs ---- */

/* Entries of dir whose name starts with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* ---- stores ---- */

static uint64_t ht_of(uint64_t index)
{
	return ht_make(BASE_US + index * 1000, (uint32_t)(index % 4096));
}

struct source {
	char path[320];
	struct store *s;
	uint64_t digest, pairs, index, ht;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

/* FNV-1a over every stored (key, value), internal records included. */
static uint64_t store_digest(struct store *s, uint64_t *pairs)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_iter *it = store_iter_new(s, NULL, 0, NULL, 0);
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	*pairs = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		uint64_t lens[2] = {kl, vl};
		h = fnv(h, lens, sizeof lens);
		h = fnv(h, k, kl);
		h = fnv(h, v, vl);
		(*pairs)++;
	}
	CHECK_OK_MSG(store_iter_status(it, errmsg), errmsg);
	store_iter_free(it);
	return h;
}

/* A store at dir/name with npairs rows (a DocKey of one string, a random
 * string value of vlen bytes), 500 per Raft entry, flushed after 20%, 40%,
 * 60% and 70% of the entries: several SST files, and the last 30% only in
 * the (64 MiB) memtable, which a copy must include. */
static void source_make(struct source *src, const char *dir, const char *name, int npairs,
			size_t vlen)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_options o;
	struct batch b;
	struct buf key = BUF_INIT;
	uint64_t seed = test_seed();
	uint8_t *v = malloc(vlen);
	int per = 500, nbatches = (npairs + per - 1) / per;

	snprintf(src->path, sizeof src->path, "%s/%s", dir, name);
	store_options_default(&o);
	o.write_buffer_size = 64 * MIB;
	CHECK_OK_MSG(store_open(src->path, &o, &src->s, errmsg), errmsg);
	batch_init(&b);
	for (int i = 0; i < nbatches; i++) {
		batch_reset(&b);
		for (int j = 0; j < per && i * per + j < npairs; j++) {
			char id[32];
			struct pv pk;
			int il = snprintf(id, sizeof id, "row-%08d", i * per + j);
			buf_reset(&key);
			pk = pv_strn(id, (size_t)il);
			dockey_append(&key, &(struct dockey){.n_range = 1, .range = &pk});
			v[0] = 'S'; /* a string value: raw bytes to the end */
			for (size_t x = 1; x < vlen; x += 8) {
				uint64_t r = test_rand(&seed);
				memcpy(v + x, &r, vlen - x < 8 ? vlen - x : 8);
			}
			batch_put(&b, key.data, key.len, v, vlen);
		}
		CHECK_OK_MSG(store_apply(src->s, b.data.data, b.data.len, ht_of((uint64_t)i + 1),
					 (uint64_t)i + 1, errmsg),
			     errmsg);
		if (i + 1 == nbatches * 2 / 10 || i + 1 == nbatches * 4 / 10 ||
		    i + 1 == nbatches * 6 / 10 || i + 1 == nbatches * 7 / 10)
			CHECK_OK_MSG(store_flush(src->s, errmsg), errmsg);
	}
	batch_free(&b);
	buf_free(&key);
	free(v);
	store_applied(src->s, &src->index, &src->ht);
	CHECK_EQ_U64(src->index, (uint64_t)nbatches);
	src->digest = store_digest(src->s, &src->pairs);
}

/* Opens the copy at path and checks it holds exactly src's pairs and marker. */
static void check_copy(const char *path, const struct source *src)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct store_options o;
	struct store *s;
	uint64_t pairs, idx, ht;

	store_options_default(&o);
	o.create_if_missing = false;
	CHECK_OK_MSG(store_open(path, &o, &s, errmsg), errmsg);
	store_applied(s, &idx, &ht);
	CHECK_EQ_U64(idx, src->index);
	CHECK_EQ_U64(ht, src->ht);
	CHECK_EQ_U64(store_digest(s, &pairs), src->digest);
	CHECK_EQ_U64(pairs, src->pairs);
	store_close(s);
}

/* ---- nodes: listener + copy server ---- */

struct node {
	struct copy_server cs; /* first: the close callback gets it */
	struct listener *l;
	bool cs_closing;
	bool cs_closed;
	bool l_closed;
};

static void node_open(uv_loop_t *loop, struct node *n, const char *ip)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE], address[64];

	memset(n, 0, sizeof *n);
	snprintf(address, sizeof address, "%s:0", ip);
	CHECK_OK_MSG(listener_open(loop, address, &n->l, errmsg), errmsg);
	CHECK_OK_MSG(copy_server_init(&n->cs, loop, n->l, errmsg), errmsg);
}

static void cs_closed_cb(struct copy_server *cs)
{
	((struct node *)cs)->cs_closed = true;
}

static void listener_closed_cb(void *arg)
{
	*(bool *)arg = true;
}

/* Starts closing the copy server (without waiting). */
static void node_close_server(struct node *n)
{
	n->cs_closing = true;
	copy_server_close(&n->cs, cs_closed_cb);
	CHECK(!n->cs_closed); /* never synchronous */
}

static void node_close(uv_loop_t *loop, struct node *n)
{
	if (!n->cs_closing)
		node_close_server(n);
	CHECK(loop_run_until(loop, loop_flag_is_set, &n->cs_closed, 10000));
	listener_close(n->l, listener_closed_cb, &n->l_closed);
	CHECK(loop_run_until(loop, loop_flag_is_set, &n->l_closed, 5000));
}

static bool server_idle(void *p)
{
	struct copy_server_stats st;
	copy_server_get_stats(p, &st);
	return st.active == 0;
}

/* ---- fetches ---- */

struct result {
	int calls;
	int status;
	uint64_t index, ht;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

static void fetch_cb(struct copy_fetch *req, int status, uint64_t index, uint64_t ht,
		     const char *errmsg)
{
	struct result *r = req->data;
	r->calls++;
	r->status = status;
	r->index = index;
	r->ht = ht;
	snprintf(r->errmsg, sizeof r->errmsg, "%s", errmsg);
	CHECK(req->impl == NULL);
}

static bool fetched(void *p)
{
	return ((struct result *)p)->calls > 0;
}

static bool has_bytes(void *p)
{
	return ((struct copy_fetch *)p)->stats.bytes > 0;
}

/* Starts a fetch of tablet_id from address into dest. */
static void fetch_start(uv_loop_t *loop, const char *address, const char *tablet_id,
			const char *dest, struct copy_fetch *req, struct result *r)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	memset(r, 0, sizeof *r);
	req->data = r;
	CHECK_OK_MSG(copy_fetch(loop, address, tablet_id, dest, req, fetch_cb, errmsg), errmsg);
}

/* Runs a fetch to its end and checks it failed with code, the message
 * containing want, and left neither dest nor dest.tmp. */
static void expect_fetch_error(uv_loop_t *loop, struct copy_fetch *req, struct result *r,
			       const char *dest, int code, const char *want)
{
	char tmp[400];

	CHECK(loop_run_until(loop, fetched, r, 20000));
	CHECK_EQ_INT(r->calls, 1);
	CHECK_MSG(r->status == code, "status %d (%s), want %d", r->status, r->errmsg, code);
	CHECK_MSG(strstr(r->errmsg, want) != NULL, "message \"%s\" lacks \"%s\"", r->errmsg,
		  want);
	CHECK_EQ_STR(req->errmsg, r->errmsg);
	snprintf(tmp, sizeof tmp, "%s.tmp", dest);
	CHECK(!exists(dest));
	CHECK(!exists(tmp));
}

/* ---- (a) copies ---- */

TEST(crc32c_vectors)
{
	static const uint8_t zeros[32], ones[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint64_t seed = test_seed();
	uint8_t data[4099];
	uint32_t whole, parts;

	/* RFC 3720 B.4 and the usual check value. */
	CHECK_EQ_U64(copy_crc32c(0, "123456789", 9), 0xe3069283u);
	CHECK_EQ_U64(copy_crc32c(0, zeros, 32), 0x8a9136aau);
	CHECK_EQ_U64(copy_crc32c(0, ones, 32), 0x62a8ab43u);
	CHECK_EQ_U64(copy_crc32c(0, NULL, 0), 0);
	/* Extending in pieces of any size (and alignment) gives the same CRC. */
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)test_rand(&seed);
	whole = copy_crc32c(0, data, sizeof data);
	for (int round = 0; round < 50; round++) {
		size_t off = 0;
		parts = 0;
		while (off < sizeof data) {
			size_t n = (size_t)(test_rand(&seed) % 37);
			if (n > sizeof data - off)
				n = sizeof data - off;
			parts = copy_crc32c(parts, data + off, n);
			off += n;
		}
		CHECK_EQ_U64(parts, whole);
	}
}

/* Heap in use (glibc), 0 where mallinfo2 does not see the allocator. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

struct heap_probe {
	uv_timer_t timer;
	struct copy_fetch *req;
	struct result *r;
	size_t base, peak;
	int samples;
};

/* Samples the heap while file bytes are streaming (after the source's
 * checkpoint, before the destination's final open of the copy). */
static void heap_probe_cb(uv_timer_t *t)
{
	struct heap_probe *hp = t->data;
	size_t h;

	if (hp->r->calls > 0 || hp->req->stats.bytes == 0 || hp->req->stats.bytes >= 10 * MIB)
		return;
	h = heap_in_use();
	if (hp->samples++ == 0)
		hp->base = hp->peak = h;
	if (h > hp->peak)
		hp->peak = h;
}

TEST(copies_store_with_memtable)
{
	char dir[256], dest[320], dest2[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_options so = {0};
	struct copy_server_stats st;
	struct source src, copy;
	struct node n1, n2;
	struct copy_fetch req = {0}, req2 = {0};
	struct heap_probe hp = {0};
	struct result r;
	uv_loop_t loop;
	bool closed = false;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 50000, 224);
	test_note("source: %" PRIu64 " pairs, applied index %" PRIu64, src.pairs, src.index);
	snprintf(dest, sizeof dest, "%s/copy", dir);
	snprintf(dest2, sizeof dest2, "%s/copy2", dir);

	start_loop(&loop);
	node_open(&loop, &n1, "127.0.0.1");
	node_open(&loop, &n2, "127.0.0.2");
	CHECK_OK_MSG(copy_server_register(&n2.cs, "t1", src.s, errmsg), errmsg);
	CHECK_EQ_INT(copy_server_register(&n2.cs, "t1", src.s, errmsg), DOCRAFT_EINVAL);

	/* 127.0.0.2 -> dest, default 1 MiB buffers on both sides. */
	uv_timer_init(&loop, &hp.timer);
	hp.timer.data = &hp;
	hp.req = &req;
	hp.r = &r;
	uv_timer_start(&hp.timer, heap_probe_cb, 1, 1);
	fetch_start(&loop, listener_address(n2.l), "t1", dest, &req, &r);
	CHECK(loop_run_until(&loop, fetched, &r, 60000));
	uv_close((uv_handle_t *)&hp.timer, loop_flag_close_cb);
	hp.timer.data = &closed;
	CHECK_OK_MSG(r.status, r.errmsg);
	CHECK_EQ_U64(r.index, src.index);
	CHECK_EQ_U64(r.ht, src.ht);
	CHECK_EQ_STR(r.errmsg, "");

	/* Memory: one buffer per side, whatever went through. */
	test_note("copied %" PRIu64 " files, %" PRIu64 " bytes; receive buffer %zu, most held %zu",
		  req.stats.files, req.stats.bytes, req.stats.buffer_size, req.stats.max_buffered);
	CHECK(req.stats.bytes > 10 * MIB);
	CHECK(req.stats.files >= 4); /* several SST files, MANIFEST, CURRENT, OPTIONS */
	CHECK_EQ_U64(req.stats.buffer_size, COPY_BUFFER_SIZE);
	CHECK(req.stats.max_buffered <= COPY_BUFFER_SIZE);
	CHECK(loop_run_until(&loop, server_idle, &n2.cs, 5000));
	copy_server_get_stats(&n2.cs, &st);
	test_note("source: sent %" PRIu64 " files, %" PRIu64 " bytes; buffer %zu, most held %zu",
		  st.files_sent, st.bytes_sent, st.buffer_size, st.max_held);
	CHECK_EQ_U64(st.completed, 1);
	CHECK_EQ_U64(st.failed, 0);
	CHECK_EQ_U64(st.bytes_sent, req.stats.bytes);
	CHECK_EQ_U64(st.files_sent, req.stats.files);
	CHECK(st.max_held > 0 && st.max_held <= COPY_BUFFER_SIZE);
	if (hp.samples > 0 && hp.base > 0) {
		test_note("heap while streaming: %d samples, grew by %zu bytes at most",
			  hp.samples, hp.peak - hp.base);
		CHECK(hp.peak - hp.base < 4 * MIB);
	}

	/* The copy is a store with the same pairs and marker; nothing left
	 * behind on either side. */
	check_copy(dest, &src);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	CHECK_EQ_INT(count_entries(dir, "copy.tmp"), 0);

	/* The copy seeds the next replica: 127.0.0.1 -> dest2 through tiny
	 * buffers (data frames split across many reads and writes). */
	{
		struct store_options o;
		store_options_default(&o);
		o.create_if_missing = false;
		snprintf(copy.path, sizeof copy.path, "%s", dest);
		CHECK_OK_MSG(store_open(dest, &o, &copy.s, errmsg), errmsg);
	}
	so.buffer_size = 64 * 1024;
	CHECK_OK_MSG(copy_server_set_options(&n1.cs, &so, errmsg), errmsg);
	CHECK_OK_MSG(copy_server_register(&n1.cs, "t1", copy.s, errmsg), errmsg);
	req2.buffer_size = COPY_BUFFER_MIN;
	fetch_start(&loop, listener_address(n1.l), "t1", dest2, &req2, &r);
	CHECK(loop_run_until(&loop, fetched, &r, 60000));
	CHECK_OK_MSG(r.status, r.errmsg);
	CHECK_EQ_U64(r.index, src.index);
	CHECK(req2.stats.max_buffered <= COPY_BUFFER_MIN);
	CHECK(loop_run_until(&loop, server_idle, &n1.cs, 5000));
	copy_server_get_stats(&n1.cs, &st);
	CHECK(st.max_held <= 64 * 1024);
	check_copy(dest2, &src);
	CHECK_EQ_INT(count_entries(dir, "copy.copy-"), 0);

	copy_server_unregister(&n1.cs, "t1");
	store_close(copy.s);
	copy_server_unregister(&n2.cs, "t1");
	store_close(src.s);
	node_close(&loop, &n1);
	node_close(&loop, &n2);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

/* ---- (b) errors ---- */

TEST(unknown_tablet)
{
	char dir[256], dest[320];
	struct copy_server_stats st;
	struct node n;
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	fetch_start(&loop, listener_address(n.l), "nope", dest, &req, &r);
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_ENOTFOUND, "tablet nope is not hosted");
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 5000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_U64(st.started, 1);
	CHECK_EQ_U64(st.failed, 1);
	node_close(&loop, &n);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

TEST(sync_errors_call_no_callback)
{
	char dir[256], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_fetch req = {0};
	struct result r = {0};
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	start_loop(&loop);
	req.data = &r;
	/* dest_dir exists (the temp dir itself). */
	CHECK_EQ_INT(copy_fetch(&loop, "127.0.0.2:9", "t1", dir, &req, fetch_cb, errmsg),
		     DOCRAFT_EINVAL);
	CHECK(strstr(errmsg, "exists") != NULL);
	CHECK_EQ_INT(copy_fetch(&loop, "localhost:9", "t1", "/nonexistent/x", &req, fetch_cb,
				errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(copy_fetch(&loop, "127.0.0.2:9", "", "/nonexistent/x", &req, fetch_cb, errmsg),
		     DOCRAFT_EINVAL);
	CHECK_EQ_INT(copy_fetch(&loop, "127.0.0.2:9", "a b", "/nonexistent/x", &req, fetch_cb,
				errmsg),
		     DOCRAFT_EINVAL);
	req.buffer_size = 100;
	CHECK_EQ_INT(copy_fetch(&loop, "127.0.0.2:9", "t1", "/nonexistent/x", &req, fetch_cb,
				errmsg),
		     DOCRAFT_EINVAL);
	CHECK(strstr(errmsg, "buffer") != NULL);
	CHECK(!loop_run_until(&loop, never, NULL, 100));
	CHECK_EQ_INT(r.calls, 0);
	CHECK(!uv_loop_alive(&loop));
	CHECK_OK(loop_finish(&loop));
	CHECK(exists(dir));
	test_tmpdir_remove(dir);
}

TEST(refused)
{
	char dir[256], dest[320], address[64], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct listener *l;
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;
	bool closed = false;

	test_tmpdir_make(dir, "copy");
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	/* A port that was free a moment ago, with nothing listening now. */
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.3:0", &l, errmsg), errmsg);
	snprintf(address, sizeof address, "%s", listener_address(l));
	listener_close(l, listener_closed_cb, &closed);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &closed, 5000));
	fetch_start(&loop, address, "t1", dest, &req, &r);
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_EUNAVAILABLE, "connect");
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

/* A fake source: a COPY handler that writes canned bytes, then closes the
 * connection (close_after) or holds it, silent. */
struct fake {
	const uint8_t *bytes;
	size_t len;
	bool close_after;
	uv_stream_t *held;
	uv_write_t w;
	int calls;
};

static void fake_write_cb(uv_write_t *w, int status)
{
	struct fake *fk = w->data;
	(void)status;
	if (fk->close_after) {
		listener_stream_close(fk->held);
		fk->held = NULL;
	}
}

static void fake_handler(void *arg, uv_stream_t *s, const char *tablet_id)
{
	struct fake *fk = arg;
	(void)tablet_id;
	fk->calls++;
	CHECK(fk->held == NULL);
	fk->held = s;
	if (fk->len > 0) {
		uv_buf_t b = uv_buf_init((char *)fk->bytes, (unsigned)fk->len);
		fk->w.data = fk;
		CHECK_OK(uv_write(&fk->w, s, &b, 1, fake_write_cb));
	}
}

static void fake_release(struct fake *fk)
{
	if (fk->held != NULL)
		listener_stream_close(fk->held);
	fk->held = NULL;
}

TEST(idle_timeout)
{
	char dir[256], dest[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct listener *l;
	struct fake fk = {0};
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;
	uint64_t t0;
	bool closed = false;

	test_tmpdir_make(dir, "copy");
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.2:0", &l, errmsg), errmsg);
	CHECK_OK_MSG(listener_set_handler(l, LISTENER_COPY, fake_handler, &fk, errmsg), errmsg);
	req.idle_timeout_ms = 200;
	t0 = uv_now(&loop);
	fetch_start(&loop, listener_address(l), "t1", dest, &req, &r);
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_ETIMEDOUT, "200 ms");
	uv_update_time(&loop);
	CHECK(uv_now(&loop) - t0 >= 200 && uv_now(&loop) - t0 < 5000);
	CHECK_EQ_INT(fk.calls, 1);
	fake_release(&fk);
	listener_close(l, listener_closed_cb, &closed);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &closed, 5000));
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

/* Frame builders for the fake source. */
static void frame_file(struct buf *b, const char *name, uint64_t size)
{
	buf_push(b, 'F');
	buf_append_be16(b, (uint16_t)strlen(name));
	buf_append(b, name, strlen(name));
	buf_append_be64(b, size);
}

static void frame_data(struct buf *b, const void *p, size_t n)
{
	buf_push(b, 'D');
	buf_append_be32(b, (uint32_t)n);
	buf_append(b, p, n);
}

static void frame_crc(struct buf *b, uint32_t crc)
{
	buf_push(b, 'C');
	buf_append_be32(b, crc);
}

static void frame_end(struct buf *b, uint32_t nfiles, uint64_t total)
{
	buf_push(b, 'E');
	buf_append_be32(b, nfiles);
	buf_append_be64(b, total);
	buf_append_be64(b, 7);
	buf_append_be64(b, ht_of(7));
}

/* Decodes exactly len bytes at p as one frame header of the given type. */
static void decode_one(const uint8_t *p, size_t len, uint8_t type, struct copy_frame *fr)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_frame scratch;

	for (size_t k = 0; k < len; k++) /* every shorter prefix needs more bytes */
		CHECK_EQ_INT(copy_frame_decode(p, k, &scratch, errmsg), 0);
	CHECK_EQ_INT(copy_frame_decode(p, len, fr, errmsg), (int)len);
	CHECK_EQ_INT(fr->type, type);
}

/* The source's encoders (copy_proto.h) write what the builders above, read
 * from the wire format, write; the decoder reads it back; an error message
 * too long for a frame is cut, names are checked. */
TEST(proto_encoders_round_trip)
{
	uint8_t hdr[COPY_HDR_MAX], xframe[COPY_ERROR_FRAME_MAX];
	char name[COPY_NAME_MAX + 2], longmsg[COPY_MSG_MAX + 100];
	struct buf b = BUF_INIT;
	struct copy_frame fr;
	size_t n;

	memset(name, 'n', sizeof name);
	name[COPY_NAME_MAX] = '\0'; /* the longest valid name */
	n = copy_proto_encode_file(hdr, name, 1ull << 40);
	frame_file(&b, name, 1ull << 40);
	CHECK_EQ_U64(n, b.len);
	CHECK(memcmp(hdr, b.data, n) == 0);
	CHECK_EQ_U64(n, COPY_HDR_MAX);
	decode_one(hdr, n, 'F', &fr);
	CHECK_EQ_STR(fr.name, name);
	CHECK_EQ_U64(fr.size, 1ull << 40);

	buf_reset(&b);
	n = copy_proto_encode_data(hdr, 3);
	frame_data(&b, "abc", 3);
	CHECK_EQ_U64(n + 3, b.len);
	CHECK(memcmp(hdr, b.data, n) == 0);
	decode_one(hdr, n, 'D', &fr);
	CHECK_EQ_U64(fr.len, 3);

	buf_reset(&b);
	n = copy_proto_encode_crc(hdr, 0xdeadbeefu);
	frame_crc(&b, 0xdeadbeefu);
	CHECK_EQ_U64(n, b.len);
	CHECK(memcmp(hdr, b.data, n) == 0);
	decode_one(hdr, n, 'C', &fr);
	CHECK_EQ_U64(fr.crc, 0xdeadbeefu);

	buf_reset(&b);
	n = copy_proto_encode_end(hdr, 2, 12345, 7, ht_of(7));
	frame_end(&b, 2, 12345);
	CHECK_EQ_U64(n, b.len);
	CHECK_EQ_U64(n, COPY_END_LEN);
	CHECK(memcmp(hdr, b.data, n) == 0);
	decode_one(hdr, n, 'E', &fr);
	CHECK_EQ_U64(fr.nfiles, 2);
	CHECK_EQ_U64(fr.total, 12345);
	CHECK_EQ_U64(fr.applied_index, 7);
	CHECK_EQ_U64(fr.applied_ht, ht_of(7));

	n = copy_proto_encode_error(xframe, DOCRAFT_EBUSY, "busy");
	CHECK_EQ_U64(n, 4 + 4);
	decode_one(xframe, n, 'X', &fr);
	CHECK_EQ_INT(fr.code, DOCRAFT_EBUSY);
	CHECK_EQ_STR(fr.msg, "busy");
	memset(longmsg, 'm', sizeof longmsg - 1);
	longmsg[sizeof longmsg - 1] = '\0';
	n = copy_proto_encode_error(xframe, DOCRAFT_EIO, longmsg);
	CHECK_EQ_U64(n, COPY_ERROR_FRAME_MAX);
	decode_one(xframe, n, 'X', &fr);
	CHECK_EQ_U64(strlen(fr.msg), COPY_MSG_MAX);

	CHECK(copy_proto_valid_name("000012.sst", 10));
	CHECK(copy_proto_valid_name("...", 3));
	CHECK(!copy_proto_valid_name("", 0));
	CHECK(!copy_proto_valid_name(".", 1));
	CHECK(!copy_proto_valid_name("..", 2));
	CHECK(!copy_proto_valid_name("a/b", 3));
	CHECK(!copy_proto_valid_name("a b", 3));
	CHECK(!copy_proto_valid_name(name, COPY_NAME_MAX + 1));
	buf_free(&b);
}

/* Feeds bytes from a fake source; expects code and want in the message. */
static void expect_bad_stream(const struct buf *bytes, bool close_after, int code,
			      const char *want)
{
	char dir[256], dest[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct listener *l;
	struct fake fk = {0};
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;
	bool closed = false;

	test_tmpdir_make(dir, "copy");
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.2:0", &l, errmsg), errmsg);
	CHECK_OK_MSG(listener_set_handler(l, LISTENER_COPY, fake_handler, &fk, errmsg), errmsg);
	fk.bytes = bytes->data;
	fk.len = bytes->len;
	fk.close_after = close_after;
	req.idle_timeout_ms = 5000;
	fetch_start(&loop, listener_address(l), "t1", dest, &req, &r);
	expect_fetch_error(&loop, &req, &r, dest, code, want);
	fake_release(&fk);
	listener_close(l, listener_closed_cb, &closed);
	CHECK(loop_run_until(&loop, loop_flag_is_set, &closed, 5000));
	CHECK_OK(loop_finish(&loop));
	CHECK_EQ_INT(count_entries(dir, ""), 2); /* "." and ".." */
	test_tmpdir_remove(dir);
}

TEST(malformed_streams)
{
	struct buf b = BUF_INIT;
	static const char msg[] = "disk full on the source";

	/* Content that does not match its CRC. */
	frame_file(&b, "000001.sst", 3);
	frame_data(&b, "abc", 3);
	frame_crc(&b, copy_crc32c(0, "abd", 3));
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "CRC-32C");

	/* The connection drops in the middle of a file. */
	buf_reset(&b);
	frame_file(&b, "000001.sst", 10);
	frame_data(&b, "abc", 3);
	expect_bad_stream(&b, true, DOCRAFT_EUNAVAILABLE, "mid-file (000001.sst: 3 of 10");

	/* A file ends early. */
	buf_reset(&b);
	frame_file(&b, "000001.sst", 10);
	frame_data(&b, "abc", 3);
	frame_crc(&b, copy_crc32c(0, "abc", 3));
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "short file 000001.sst: 3 of 10");

	/* More data than announced. */
	buf_reset(&b);
	frame_file(&b, "000001.sst", 2);
	frame_data(&b, "abc", 3);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "data frame of 3 bytes");

	/* A name that would escape the directory. */
	buf_reset(&b);
	frame_file(&b, "../evil", 0);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "file name");

	/* The same file twice. */
	buf_reset(&b);
	frame_file(&b, "CURRENT", 0);
	frame_crc(&b, 0);
	frame_file(&b, "CURRENT", 0);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "File exists");

	/* Totals that do not match what came. */
	buf_reset(&b);
	frame_file(&b, "CURRENT", 3);
	frame_data(&b, "abc", 3);
	frame_crc(&b, copy_crc32c(0, "abc", 3));
	frame_end(&b, 2, 3);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "end frame announces 2 files");

	/* Well-formed, but not a store. */
	buf_reset(&b);
	frame_file(&b, "CURRENT", 3);
	frame_data(&b, "abc", 3);
	frame_crc(&b, copy_crc32c(0, "abc", 3));
	frame_end(&b, 1, 3);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "does not open");

	/* Unknown frame. */
	buf_reset(&b);
	buf_push(&b, 'Z');
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "unknown frame type 0x5a");

	/* An error frame: its code and message come through. */
	buf_reset(&b);
	buf_push(&b, 'K');
	buf_push(&b, 'X');
	buf_push(&b, DOCRAFT_ENOSPC);
	buf_append_be16(&b, sizeof msg - 1);
	buf_append(&b, msg, sizeof msg - 1);
	expect_bad_stream(&b, true, DOCRAFT_ENOSPC, "source: disk full on the source");
	buf_free(&b);
}

enum damage { WHOLE, DROP_SST, HALF_SST };

/* Frames for every file of a real checkpoint of a small store, except that
 * the largest SST file is left out (DROP_SST) or cut in half (HALF_SST);
 * the end frame announces applied index 7. Each frame is well-formed with a
 * matching CRC: only opening the copy can tell. */
static void frames_of_checkpoint(struct buf *b, const char *cp, enum damage damage)
{
	char path[600], victim[256] = "";
	uint64_t nfiles = 0, total = 0, biggest = 0;
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(cp);

	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		snprintf(path, sizeof path, "%s/%s", cp, e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".sst") == 0 && stat(path, &st) == 0 &&
		    (uint64_t)st.st_size > biggest) {
			biggest = (uint64_t)st.st_size;
			snprintf(victim, sizeof victim, "%s", e->d_name);
		}
	}
	CHECK(victim[0] != '\0');
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		uint8_t *data;
		size_t size;
		FILE *fp;
		if (e->d_name[0] == '.' || strncmp(e->d_name, "LOG", 3) == 0)
			continue;
		if (damage == DROP_SST && strcmp(e->d_name, victim) == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", cp, e->d_name);
		CHECK_OK(stat(path, &st));
		size = (size_t)st.st_size;
		data = malloc(size + 1);
		fp = fopen(path, "rb");
		CHECK(fp != NULL);
		CHECK_EQ_U64(fread(data, 1, size, fp), size);
		fclose(fp);
		if (damage == HALF_SST && strcmp(e->d_name, victim) == 0)
			size /= 2;
		frame_file(b, e->d_name, size);
		if (size > 0)
			frame_data(b, data, size);
		frame_crc(b, copy_crc32c(0, data, size));
		free(data);
		nfiles++;
		total += size;
	}
	closedir(d);
	frame_end(b, (uint32_t)nfiles, total);
}

TEST(incomplete_checkpoint_rejected)
{
	char dir[256], cp[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct source src;
	struct buf b = BUF_INIT;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 4000, 200);
	CHECK_EQ_U64(src.index, 8);
	snprintf(cp, sizeof cp, "%s/cp", dir);
	CHECK_OK_MSG(store_checkpoint(src.s, cp, errmsg), errmsg);
	store_close(src.s);

	frames_of_checkpoint(&b, cp, DROP_SST);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "does not open");
	buf_reset(&b);
	frames_of_checkpoint(&b, cp, HALF_SST);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "does not open");
	/* Complete, but not the marker the end frame announced. */
	buf_reset(&b);
	frames_of_checkpoint(&b, cp, WHOLE);
	expect_bad_stream(&b, false, DOCRAFT_ECORRUPT, "the copy's marker is index 8");
	buf_free(&b);
	test_tmpdir_remove(dir);
}

static bool two_fetched(void *p)
{
	struct result *r = p;
	return r[0].calls > 0 && r[1].calls > 0;
}

TEST(too_many_transfers)
{
	char dir[256], dest[2][320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_options so = {0};
	struct source src;
	struct node n;
	struct copy_fetch req[2] = {{0}, {0}};
	struct result r[2];
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 5000, 200);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	so.max_transfers = 1;
	CHECK_OK_MSG(copy_server_set_options(&n.cs, &so, errmsg), errmsg);
	so.buffer_size = 10;
	CHECK_EQ_INT(copy_server_set_options(&n.cs, &so, errmsg), DOCRAFT_EINVAL);
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	for (int i = 0; i < 2; i++) {
		snprintf(dest[i], sizeof dest[i], "%s/copy%d", dir, i);
		fetch_start(&loop, listener_address(n.l), "t1", dest[i], &req[i], &r[i]);
	}
	CHECK(loop_run_until(&loop, two_fetched, r, 30000));
	/* One of them got through, the other was told to come back later. */
	CHECK_MSG((r[0].status == 0) != (r[1].status == 0), "statuses %d (%s), %d (%s)",
		  r[0].status, r[0].errmsg, r[1].status, r[1].errmsg);
	for (int i = 0; i < 2; i++) {
		if (r[i].status == 0) {
			check_copy(dest[i], &src);
		} else {
			CHECK_EQ_INT(r[i].status, DOCRAFT_EBUSY);
			CHECK(strstr(r[i].errmsg, "in progress") != NULL);
			CHECK(!exists(dest[i]));
		}
	}
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 5000));
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	copy_server_unregister(&n.cs, "t1");
	store_close(src.s);
	node_close(&loop, &n);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

/* ---- (c) aborts ---- */

static bool server_started(void *p)
{
	struct copy_server_stats st;
	copy_server_get_stats(p, &st);
	return st.started > 0;
}

/* The source withdraws the tablet and closes its store, either while its
 * checkpoint is being written (mid_stream false) or while files stream. */
static void unregister_case(bool mid_stream)
{
	char dir[256], dest[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_stats st;
	struct source src;
	struct node n;
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 20000, 200);
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	req.buffer_size = 64 * 1024;
	fetch_start(&loop, listener_address(n.l), "t1", dest, &req, &r);
	if (mid_stream)
		CHECK(loop_run_until(&loop, has_bytes, &req, 30000));
	else
		CHECK(loop_run_until(&loop, server_started, &n.cs, 30000));
	CHECK_EQ_INT(r.calls, 0);
	/* After unregister returns the store is ours to close. */
	copy_server_unregister(&n.cs, "t1");
	store_close(src.s);
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_ECLOSED, "tablet t1 unregistered");
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 5000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_U64(st.failed, 1);
	CHECK_EQ_U64(st.completed, 0);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	node_close(&loop, &n);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

TEST(source_unregisters_during_checkpoint)
{
	unregister_case(false);
}

TEST(source_unregisters_mid_stream)
{
	unregister_case(true);
}

TEST(source_closes_mid_stream)
{
	char dir[256], dest[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct source src;
	struct node n;
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 20000, 200);
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	req.buffer_size = 64 * 1024;
	fetch_start(&loop, listener_address(n.l), "t1", dest, &req, &r);
	CHECK(loop_run_until(&loop, has_bytes, &req, 30000));
	node_close_server(&n);
	store_close(src.s); /* close returned: the store is no longer used */
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_ECLOSED, "closing");
	node_close(&loop, &n);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

/* A raw client: sends a COPY preamble, reads up to some bytes, hangs up. */
struct raw {
	uv_tcp_t tcp;
	uv_connect_t creq;
	uv_write_t w;
	uint8_t preamble[LISTENER_PREAMBLE_MAX];
	uint8_t sink[65536];
	size_t received;
	bool no_read; /* never reads: the source's writes stall */
	bool connected, failed, closed;
};

static void raw_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct raw *c = h->data;
	(void)suggested;
	buf->base = (char *)c->sink;
	buf->len = sizeof c->sink;
}

static void raw_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct raw *c = s->data;
	(void)buf;
	if (nread > 0)
		c->received += (size_t)nread;
	else if (nread < 0)
		uv_read_stop(s);
}

static void raw_write_cb(uv_write_t *w, int status)
{
	(void)w;
	(void)status;
}

static void raw_connect_cb(uv_connect_t *req, int status)
{
	struct raw *c = req->data;
	size_t n;
	uv_buf_t b;

	if (status != 0) {
		c->failed = true;
		return;
	}
	c->connected = true;
	n = listener_preamble_encode(c->preamble, LISTENER_COPY, "t1", 0, NULL);
	b = uv_buf_init((char *)c->preamble, (unsigned)n);
	uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, raw_write_cb);
	if (!c->no_read)
		uv_read_start((uv_stream_t *)&c->tcp, raw_alloc_cb, raw_read_cb);
}

static bool raw_connected(void *p)
{
	struct raw *c = p;
	return c->connected || c->failed;
}

static bool raw_has_1mib(void *p)
{
	return ((struct raw *)p)->received > MIB;
}

static void raw_close_cb(uv_handle_t *h)
{
	((struct raw *)h->data)->closed = true;
}

/* Connects c (zeroed) to a copy server at address and sends its preamble
 * for t1; no_read: it then never reads. */
static void raw_open(uv_loop_t *loop, struct raw *c, const char *address, bool no_read)
{
	struct sockaddr_in addr;
	CHECK_OK(listener_parse_address(address, &addr, NULL));
	c->no_read = no_read;
	uv_tcp_init(loop, &c->tcp);
	c->tcp.data = c;
	c->creq.data = c;
	CHECK_OK(uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&addr, raw_connect_cb));
}

static void raw_close(uv_loop_t *loop, struct raw *c)
{
	uv_close((uv_handle_t *)&c->tcp, raw_close_cb);
	CHECK(loop_run_until(loop, loop_flag_is_set, &c->closed, 5000));
}

/* The end of a raw-peer case: t1 unregistered, the source store closed, the
 * node and loop finished, c freed, dir removed. */
static void raw_case_end(uv_loop_t *loop, struct node *n, struct source *src, struct raw *c,
			 const char *dir)
{
	copy_server_unregister(&n->cs, "t1");
	store_close(src->s);
	node_close(loop, n);
	CHECK_OK(loop_finish(loop));
	free(c);
	test_tmpdir_remove(dir);
}

static void raw_case(bool mid_stream)
{
	char dir[256], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_stats st;
	struct source src;
	struct node n;
	struct raw *c = calloc(1, sizeof *c);
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 20000, 200);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	raw_open(&loop, c, listener_address(n.l), false);
	CHECK(loop_run_until(&loop, raw_connected, c, 5000));
	CHECK(c->connected);
	if (mid_stream)
		CHECK(loop_run_until(&loop, raw_has_1mib, c, 30000));
	else
		CHECK(loop_run_until(&loop, server_started, &n.cs, 5000));
	raw_close(&loop, c);
	/* The source notices, aborts and removes its checkpoint. */
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 10000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_U64(st.started, 1);
	CHECK_EQ_U64(st.failed, 1);
	CHECK_EQ_U64(st.completed, 0);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	raw_case_end(&loop, &n, &src, c, dir);
}

TEST(client_hangs_up_during_checkpoint)
{
	raw_case(false);
}

TEST(client_hangs_up_mid_stream)
{
	raw_case(true);
}

static bool member_check(void *arg, const struct sockaddr_in *peer)
{
	CHECK(peer->sin_family == AF_INET);
	return *(bool *)arg;
}

/* A copy server of 2 slots, 1 kept for members: a non-member that holds
 * the shared slot (a destination that never reads) leaves no room for a
 * second non-member (EBUSY, saying why), but a member still gets its copy. */
TEST(copy_slots_kept_for_members)
{
	char dir[256], dest[2][320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_options so = {0};
	struct copy_server_stats st;
	struct source src;
	struct node n;
	struct copy_fetch req[2] = {{0}, {0}};
	struct result r[2];
	struct raw *c = calloc(1, sizeof *c);
	bool member = false;
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 50000, 224);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	so.max_transfers = 2;
	so.member_slots = 2;
	CHECK_EQ_INT(copy_server_set_options(&n.cs, &so, errmsg), DOCRAFT_EINVAL);
	so.member_slots = 1;
	CHECK_OK_MSG(copy_server_set_options(&n.cs, &so, errmsg), errmsg);
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	copy_server_set_member_check(&n.cs, "t1", member_check, &member);

	/* A non-member takes the shared slot and stalls in it. */
	raw_open(&loop, c, listener_address(n.l), true);
	CHECK(loop_run_until(&loop, server_started, &n.cs, 5000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_INT(st.active_others, 1);

	/* Another non-member: busy, though a slot is free. */
	snprintf(dest[0], sizeof dest[0], "%s/copy0", dir);
	fetch_start(&loop, listener_address(n.l), "t1", dest[0], &req[0], &r[0]);
	expect_fetch_error(&loop, &req[0], &r[0], dest[0], DOCRAFT_EBUSY,
			   "kept for the tablet's members");
	/* A member gets the kept slot and its copy. */
	member = true;
	snprintf(dest[1], sizeof dest[1], "%s/copy1", dir);
	fetch_start(&loop, listener_address(n.l), "t1", dest[1], &req[1], &r[1]);
	CHECK(loop_run_until(&loop, fetched, &r[1], 30000));
	CHECK_MSG(r[1].status == 0, "member copy: %s", r[1].errmsg);
	check_copy(dest[1], &src);
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_U64(st.busy, 1);
	CHECK_EQ_INT(st.active_others, 1); /* the stalled one is still there */

	raw_close(&loop, c);
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 10000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_INT(st.active_others, 0);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	raw_case_end(&loop, &n, &src, c, dir);
}

/* A destination that stops reading: the source's write stalls once the
 * socket buffers are full, and its idle timeout aborts the transfer. */
TEST(source_times_out_stalled_destination)
{
	char dir[256], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct copy_server_options so = {0};
	struct copy_server_stats st;
	struct source src;
	struct node n;
	struct raw *c = calloc(1, sizeof *c);
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 50000, 224);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	so.idle_timeout_ms = 300;
	CHECK_OK_MSG(copy_server_set_options(&n.cs, &so, errmsg), errmsg);
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	raw_open(&loop, c, listener_address(n.l), true);
	CHECK(loop_run_until(&loop, server_started, &n.cs, 5000));
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 30000));
	copy_server_get_stats(&n.cs, &st);
	CHECK_EQ_U64(st.failed, 1);
	CHECK_EQ_U64(st.completed, 0);
	CHECK(st.bytes_sent < 12 * MIB);
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	raw_close(&loop, c);
	raw_case_end(&loop, &n, &src, c, dir);
}

static void cancel_case(bool mid_stream)
{
	char dir[256], dest[320], errmsg[DOCRAFT_ERRMSG_SIZE];
	struct source src;
	struct node n;
	struct copy_fetch req = {0};
	struct result r;
	uv_loop_t loop;

	test_tmpdir_make(dir, "copy");
	source_make(&src, dir, "src", 20000, 200);
	snprintf(dest, sizeof dest, "%s/copy", dir);
	start_loop(&loop);
	node_open(&loop, &n, "127.0.0.2");
	CHECK_OK_MSG(copy_server_register(&n.cs, "t1", src.s, errmsg), errmsg);
	req.buffer_size = 64 * 1024;
	fetch_start(&loop, listener_address(n.l), "t1", dest, &req, &r);
	if (mid_stream)
		CHECK(loop_run_until(&loop, has_bytes, &req, 30000));
	copy_fetch_cancel(&req);
	copy_fetch_cancel(&req); /* already failing: no-op */
	CHECK_EQ_INT(r.calls, 0); /* never synchronous */
	expect_fetch_error(&loop, &req, &r, dest, DOCRAFT_ECLOSED, "cancelled");
	CHECK(loop_run_until(&loop, server_idle, &n.cs, 10000));
	CHECK_EQ_INT(count_entries(dir, "src.copy-"), 0);
	copy_server_unregister(&n.cs, "t1");
	store_close(src.s);
	node_close(&loop, &n);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(dir);
}

TEST(cancel_at_once)
{
	cancel_case(false);
}

TEST(cancel_mid_stream)
{
	cancel_case(true);
}

TEST(leftovers_removed)
{
	char dir[256], path[400], errmsg[DOCRAFT_ERRMSG_SIZE];
	FILE *fp;

	test_tmpdir_make(dir, "copy");
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/db.copy-%d", dir, i);
		CHECK_OK(mkdir(path, 0755));
		snprintf(path, sizeof path, "%s/db.copy-%d/000001.sst", dir, i);
		fp = fopen(path, "w");
		CHECK(fp != NULL);
		fputs("x", fp);
		fclose(fp);
	}
	snprintf(path, sizeof path, "%s/db", dir);
	CHECK_OK(mkdir(path, 0755));
	snprintf(path, sizeof path, "%s/dbx.copy-1", dir);
	CHECK_OK(mkdir(path, 0755));
	snprintf(path, sizeof path, "%s/db", dir);
	CHECK_OK_MSG(copy_server_remove_leftovers(path, errmsg), errmsg);
	CHECK_EQ_INT(count_entries(dir, "db.copy-"), 0);
	CHECK_EQ_INT(count_entries(dir, "db"), 2); /* db and dbx.copy-1 */
	test_tmpdir_remove(dir);
}

TEST_MAIN(T(crc32c_vectors), T(copies_store_with_memtable), T(unknown_tablet),
	  T(sync_errors_call_no_callback), T(refused), T(idle_timeout), T(malformed_streams),
	  T(incomplete_checkpoint_rejected),
	  T(proto_encoders_round_trip), T(too_many_transfers), T(copy_slots_kept_for_members),
	  T(source_unregisters_during_checkpoint), T(source_unregisters_mid_stream),
	  T(source_closes_mid_stream), T(client_hangs_up_during_checkpoint),
	  T(client_hangs_up_mid_stream), T(source_times_out_stalled_destination),
	  T(cancel_at_once), T(cancel_mid_stream), T(leftovers_removed))
