/* libFuzzer target: the frames of a multiplexed Raft connection as rmux
 * reads them (rmuxwire_decoder_*, src/raft/rmuxwire.c), the bytes any peer
 * may send after the RMUX preamble.
 *
 * Input: one control byte, then the stream. The control byte picks the
 * decoder's limit (bit 0: 4 KiB, else the default) and seeds the chunk
 * sizes the stream is fed in (as reads of a socket would cut it). Checks,
 * beyond "no crash, no leak, no UB":
 *  - fed in chunks, with payloads read in place through the window
 *    whenever the decoder offers one, the frames (OPENs and messages, with
 *    their group numbers) and the outcome are those of a single feed;
 *  - an OPEN has a tablet id of 1..64 and an address of 1..255 printable
 *    bytes and a non-zero id, and re-encodes (rmuxwire_open_encode) to the
 *    bytes it came from. */
#include "fuzz.h"

#include <raft.h>

#include "common/err.h"
#include "raft/rmuxwire.h"

#define MAX_FRAMES 64

struct frame {
	int kind; /* RMUXWIRE_MESSAGE or RMUXWIRE_OPENED */
	uint32_t group;
	struct raft_message m;
	struct rmuxwire_open o;
};

struct outcome {
	int n;
	int last_rv; /* RMUXWIRE_MORE or an error code */
	struct frame f[MAX_FRAMES];
};

static void check_open(const struct rmuxwire_open *o)
{
	uint8_t enc[RMUXWIRE_OPEN_MAX];
	size_t tl = strlen(o->tablet_id), al = strlen(o->address);

	FUZZ_CHECK(tl >= 1 && tl <= RMUXWIRE_TABLET_ID_MAX);
	FUZZ_CHECK(al >= 1 && al <= RMUXWIRE_ADDRESS_MAX);
	FUZZ_CHECK(o->id != 0);
	FUZZ_CHECK(rmuxwire_open_encode(enc, o->group, o->tablet_id, o->id, o->address) ==
		   RMUXWIRE_HEAD_SIZE + 1 + tl + 8 + 1 + al);
}

static void record(struct outcome *out, int kind, uint32_t group, struct raft_message *m,
		   const struct rmuxwire_open *o)
{
	if (kind == RMUXWIRE_OPENED)
		check_open(o);
	if (out->n == MAX_FRAMES) {
		if (kind == RMUXWIRE_MESSAGE)
			rwire_message_free(m);
		return;
	}
	out->f[out->n].kind = kind;
	out->f[out->n].group = group;
	if (kind == RMUXWIRE_MESSAGE)
		out->f[out->n].m = *m;
	else
		out->f[out->n].o = *o;
	out->n++;
}

/* Feeds p[0..n) in chunks from seed (0: one feed), reading payloads in
 * place when the decoder offers a window. */
static void run(const uint8_t *p, size_t n, uint64_t limit, uint32_t seed, struct outcome *out)
{
	struct rmuxwire_decoder d;
	size_t off = 0;
	uint32_t s = seed;

	memset(out, 0, sizeof *out);
	rmuxwire_decoder_init(&d, limit);
	while (off < n) {
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		struct raft_message m;
		struct rmuxwire_open o;
		uint32_t group;
		uint8_t *w;
		size_t wn, chunk = n - off, used = 0;
		int rv;

		if (seed != 0) {
			s = s * 1103515245u + 12345u;
			chunk = 1 + (s >> 16) % 97;
			if (chunk > n - off)
				chunk = n - off;
			if (rmuxwire_decoder_window(&d, 1, &w, &wn)) {
				if (wn > chunk)
					wn = chunk;
				memcpy(w, p + off, wn);
				off += wn;
				if (rmuxwire_decoder_advance(&d, wn, &group, &m) ==
				    RMUXWIRE_MESSAGE)
					record(out, RMUXWIRE_MESSAGE, group, &m, NULL);
				continue;
			}
		}
		rv = rmuxwire_decoder_feed(&d, p + off, chunk, &used, &group, &m, &o, errmsg);
		FUZZ_CHECK(used <= chunk);
		off += used;
		if (rv == RMUXWIRE_MESSAGE || rv == RMUXWIRE_OPENED) {
			record(out, rv, group, &m, &o);
			continue;
		}
		if (rv != RMUXWIRE_MORE) {
			FUZZ_CHECK(rv == DOCRAFT_ECORRUPT);
			out->last_rv = rv;
			break;
		}
		FUZZ_CHECK(used == chunk);
	}
	rmuxwire_decoder_close(&d);
}

/* Field by field: the bytes after a string's NUL and the padding are not
 * part of what was decoded. */
static bool open_equal(const struct rmuxwire_open *a, const struct rmuxwire_open *b)
{
	return a->group == b->group && a->id == b->id && strcmp(a->tablet_id, b->tablet_id) == 0 &&
	       strcmp(a->address, b->address) == 0;
}

static void free_outcome(struct outcome *o)
{
	for (int i = 0; i < o->n; i++)
		if (o->f[i].kind == RMUXWIRE_MESSAGE)
			rwire_message_free(&o->f[i].m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, cut;
	uint64_t limit;

	if (size < 1)
		return 0;
	limit = (data[0] & 1) ? 4096 : 0;
	run(data + 1, size - 1, limit, 0, &whole);
	run(data + 1, size - 1, limit, (uint32_t)data[0] | 0x100, &cut);
	FUZZ_CHECK(whole.n == cut.n);
	FUZZ_CHECK(whole.last_rv == cut.last_rv);
	for (int i = 0; i < whole.n; i++) {
		FUZZ_CHECK(whole.f[i].kind == cut.f[i].kind);
		FUZZ_CHECK(whole.f[i].group == cut.f[i].group);
		if (whole.f[i].kind == RMUXWIRE_MESSAGE)
			FUZZ_CHECK(rwire_message_equal(&whole.f[i].m, &cut.f[i].m));
		else
			FUZZ_CHECK(open_equal(&whole.f[i].o, &cut.f[i].o));
	}
	free_outcome(&whole);
	free_outcome(&cut);
	return 0;
}

static void fuzz_seeds(void)
{
	struct buf b = BUF_INIT;
	uint8_t open[RMUXWIRE_OPEN_MAX], head[RMUXWIRE_HEAD_SIZE];
	struct raft_message tn = {0}, ae = {0};
	struct raft_entry e[2];
	static uint8_t payload[300];
	size_t n;

	tn.type = RAFT_IO_TIMEOUT_NOW;
	tn.timeout_now = (struct raft_timeout_now){4, 5, 6};
	memset(e, 0, sizeof e);
	e[0].term = 3;
	e[0].type = RAFT_COMMAND;
	e[0].buf = (struct raft_buffer){payload, 100};
	e[1].term = 3;
	e[1].type = RAFT_COMMAND;
	e[1].buf = (struct raft_buffer){payload + 100, 200};
	ae.type = RAFT_IO_APPEND_ENTRIES;
	ae.append_entries = (struct raft_append_entries){3, 10, 2, 9, e, 2};

	buf_append(&b, "\x00", 1); /* control byte */
	n = rmuxwire_open_encode(open, 7, "tablet-1", 2, "127.0.0.2:9100");
	buf_append(&b, open, n);
	rmuxwire_msg_head(7, head);
	buf_append(&b, head, sizeof head);
	rwire_encode(&tn, &b);
	buf_append(&b, head, sizeof head);
	rwire_encode(&ae, &b);
	seed_buf("open-tn-ae", &b);
	b.data[0] = 1; /* the small limit */
	seed_buf("open-tn-ae-small", &b);
	b.len = 1 + n;
	buf_append(&b, "\x09\x01\0\0\0", 5);
	seed_buf("bad-type", &b);
	buf_free(&b);
}
