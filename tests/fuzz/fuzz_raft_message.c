/* libFuzzer target: raft_uv's message stream as rnet reads it
 * (rwire_decoder_*, src/raft/rwire.c), the bytes any peer may send after
 * the RAFT preamble.
 *
 * Input: one control byte, then the stream. The control byte picks the
 * decoder's limit (bit 0: 4 KiB, else the 64 MiB default) and seeds the
 * chunk sizes the stream is fed in (as reads of a socket would cut it).
 * Checks, beyond "no crash, no leak, no UB":
 *  - fed in chunks, with payloads read in place through the window
 *    whenever the decoder offers one, the messages and the outcome are the
 *    ones of a single feed of the whole stream;
 *  - every message has raft 0.15's layout (one batch shared by all
 *    entries, NULL iff they are all empty, entries inside it, entries NULL
 *    for none; data NULL iff empty; a
 *    configuration of at least one server) and respects the limit;
 *  - it re-encodes (rwire_encode) to a frame that decodes to an equal
 *    message. */
#include "fuzz.h"

#include <raft.h>

#include "common/err.h"
#include "raft/rwire.h"

#define MAX_MESSAGES 64

struct outcome {
	int n;
	int last_rv; /* RWIRE_MORE or an error code */
	struct raft_message m[MAX_MESSAGES];
};

static void check_layout(const struct raft_message *m, uint64_t limit)
{
	if (m->type == RAFT_IO_APPEND_ENTRIES) {
		const struct raft_append_entries *a = &m->append_entries;
		const uint8_t *batch, *end;
		uint64_t total = 0;

		if (a->n_entries == 0) {
			FUZZ_CHECK(a->entries == NULL);
			return;
		}
		FUZZ_CHECK(a->entries != NULL);
		batch = a->entries[0].batch;
		for (unsigned i = 0; i < a->n_entries; i++)
			total += a->entries[i].buf.len;
		FUZZ_CHECK(total <= limit);
		FUZZ_CHECK((batch == NULL) == (total == 0));
		if (batch == NULL) {
			for (unsigned i = 0; i < a->n_entries; i++)
				FUZZ_CHECK(a->entries[i].batch == NULL &&
					   a->entries[i].buf.base == NULL);
			return;
		}
		end = batch + total;
		for (unsigned i = 0; i < a->n_entries; i++) {
			const struct raft_entry *e = &a->entries[i];
			FUZZ_CHECK(e->batch == batch);
			FUZZ_CHECK(e->type == RAFT_COMMAND || e->type == RAFT_BARRIER ||
				   e->type == RAFT_CHANGE);
			if (e->buf.len == 0) {
				FUZZ_CHECK(e->buf.base == NULL);
				continue;
			}
			FUZZ_CHECK((const uint8_t *)e->buf.base >= batch &&
				   (const uint8_t *)e->buf.base + e->buf.len <= end);
		}
	} else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
		const struct raft_install_snapshot *s = &m->install_snapshot;
		FUZZ_CHECK(s->conf.n >= 1);
		for (unsigned i = 0; i < s->conf.n; i++)
			FUZZ_CHECK(s->conf.servers[i].id != 0 && s->conf.servers[i].address[0] != 0);
		FUZZ_CHECK((s->data.len == 0) == (s->data.base == NULL));
		FUZZ_CHECK(s->data.len <= limit);
	} else {
		FUZZ_CHECK(m->type >= 1 && m->type <= RWIRE_TYPE_MAX);
	}
}

/* Feeds data; chunks of sizes from seed (0: all at once). */
static void run(const uint8_t *data, size_t size, uint64_t limit, unsigned seed,
		struct outcome *o)
{
	struct rwire_decoder d;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	size_t off = 0;
	uint32_t x = seed * 2654435761u + 1;

	memset(o, 0, sizeof *o);
	rwire_decoder_init(&d, limit);
	while (off < size && o->n < MAX_MESSAGES) {
		size_t len = size - off, used = 0;
		uint8_t *win;
		size_t wlen;
		int rv;

		if (seed != 0) {
			x = x * 1103515245u + 12345u;
			len = 1 + (x >> 16) % 61;
			if (len > size - off)
				len = size - off;
			if (rwire_decoder_window(&d, 1, &win, &wlen)) {
				if (len > wlen)
					len = wlen;
				memcpy(win, data + off, len); /* a read in place */
				off += len;
				if (rwire_decoder_advance(&d, len, &o->m[o->n]) == RWIRE_MESSAGE)
					o->n++;
				continue;
			}
		}
		rv = rwire_decoder_feed(&d, data + off, len, &used, &o->m[o->n], errmsg);
		FUZZ_CHECK(used <= len);
		off += used;
		if (rv == RWIRE_MESSAGE) {
			o->n++;
			continue;
		}
		if (rv != RWIRE_MORE) {
			FUZZ_CHECK(rv == DOCRAFT_ECORRUPT && errmsg[0] != '\0');
			o->last_rv = rv;
			break;
		}
		FUZZ_CHECK(used == len);
	}
	rwire_decoder_close(&d);
}

static void free_outcome(struct outcome *o)
{
	for (int i = 0; i < o->n; i++)
		rwire_message_free(&o->m[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, chunked;
	uint64_t limit;
	struct buf b = BUF_INIT;

	if (size < 1)
		return 0;
	limit = (data[0] & 1) ? 4096 : 0;
	run(data + 1, size - 1, limit, 0, &whole);
	run(data + 1, size - 1, limit, data[0] | 1u, &chunked);
	FUZZ_CHECK(whole.n == chunked.n);
	if (whole.n < MAX_MESSAGES)
		FUZZ_CHECK(whole.last_rv == chunked.last_rv);
	for (int i = 0; i < whole.n; i++) {
		struct outcome again;

		FUZZ_CHECK(rwire_message_equal(&whole.m[i], &chunked.m[i]));
		check_layout(&whole.m[i], limit == 0 ? RWIRE_LIMIT_DEFAULT : limit);
		buf_reset(&b);
		FUZZ_CHECK(rwire_encode(&whole.m[i], &b) == 0);
		run(b.data, b.len, 0, 0, &again);
		FUZZ_CHECK(again.n == 1 && again.last_rv == 0);
		FUZZ_CHECK(rwire_message_equal(&whole.m[i], &again.m[0]));
		free_outcome(&again);
	}
	free_outcome(&whole);
	free_outcome(&chunked);
	buf_free(&b);
	return 0;
}

static void seed_message(const char *name, uint8_t control, const struct raft_message *m)
{
	struct buf b = BUF_INIT;
	buf_push(&b, control);
	FUZZ_CHECK(rwire_encode(m, &b) == 0);
	seed_buf(name, &b);
	buf_free(&b);
}

static void fuzz_seeds(void)
{
	static uint8_t payload[64];
	struct raft_entry e[3];
	struct raft_message m = {0};
	struct raft_configuration conf;

	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)i;
	m.type = RAFT_IO_APPEND_ENTRIES;
	m.append_entries = (struct raft_append_entries){3, 10, 2, 9, NULL, 0};
	seed_message("heartbeat", 0, &m);
	e[0] = (struct raft_entry){3, RAFT_COMMAND, {payload, 8}, NULL};
	e[1] = (struct raft_entry){3, RAFT_BARRIER, {payload + 8, 0}, NULL};
	e[2] = (struct raft_entry){3, RAFT_CHANGE, {payload + 8, 21}, NULL};
	m.append_entries.entries = e;
	m.append_entries.n_entries = 3;
	seed_message("append-entries", 2, &m);
	seed_message("append-entries-small-limit", 1, &m);
	m.type = RAFT_IO_APPEND_ENTRIES_RESULT;
	m.append_entries_result = (struct raft_append_entries_result){3, 0, 12};
	seed_message("append-entries-result", 4, &m);
	m.type = RAFT_IO_REQUEST_VOTE;
	m.request_vote = (struct raft_request_vote){4, 2, 12, 3, true, true};
	seed_message("request-vote", 6, &m);
	m.type = RAFT_IO_REQUEST_VOTE_RESULT;
	m.request_vote_result = (struct raft_request_vote_result){4, true, raft_tribool_true};
	seed_message("request-vote-result", 8, &m);
	m.type = RAFT_IO_TIMEOUT_NOW;
	m.timeout_now = (struct raft_timeout_now){4, 12, 3};
	seed_message("timeout-now", 10, &m);
	raft_configuration_init(&conf);
	raft_configuration_add(&conf, 1, "127.0.0.1:9001", RAFT_VOTER);
	raft_configuration_add(&conf, 2, "127.0.0.2:9001", RAFT_STANDBY);
	m.type = RAFT_IO_INSTALL_SNAPSHOT;
	m.install_snapshot.term = 5;
	m.install_snapshot.last_index = 100;
	m.install_snapshot.last_term = 4;
	m.install_snapshot.conf = conf;
	m.install_snapshot.conf_index = 1;
	m.install_snapshot.data.base = payload;
	m.install_snapshot.data.len = 40;
	seed_message("install-snapshot", 12, &m);
	raft_configuration_close(&conf);
	/* Broken: unknown type, then a header length of 2^64 - 1. */
	seed_write("garbage", "\x00\x07\0\0\0\0\0\0\0\x18\0\0\0\0\0\0\0", 17);
	seed_write("huge-header", "\x00\x01\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 17);
}
