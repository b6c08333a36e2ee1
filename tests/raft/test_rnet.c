/* rnet (src/raft/rnet.h) and its codec rwire (src/raft/rwire.h), with real
 * sockets on 127.0.0.1, real listeners and transports, and real C-Raft.
 *
 * (a) the codec alone: every message type round-trips, whole and split at
 *     every byte, with raft 0.15's memory layout; hostile frames (bad type,
 *     lengths, counts, configurations, limits) are refused; a frame cut
 *     short leaks nothing (ASan); rio's drop path frees what rwire decodes
 *     (malformed for raft 0.15, yet decodable) without a leak.
 * (b) two rnet instances on two listeners exchange every type, large
 *     payloads (read in place) and a cut AppendEntries; hostile bytes from
 *     a raw client close that connection only.
 * (c) close with sends in flight, queued and dropped, and async work:
 *     every callback fires once, none after the close callback; a peer
 *     that refuses (reconnects, bounded queue) and one that accepts and
 *     never reads (bounded write backlog).
 * (d) REAL C-Raft: a 3-replica group whose raft_io sends over rnet and
 *     stores through raft_uv (struct split below, test-only glue; the
 *     shared log is not merged yet): elect, 200 commands, close and reopen
 *     the leader, re-elect; and a MIXED group, two replicas on rnet and one
 *     on plain raft_uv over transport.c, with leadership moved to each kind
 *     (TimeoutNow) and snapshots installed in both directions.
 * (e) the cost of rnet_init + io.init + start + close, and of raft_uv_init
 *     + io.init for comparison (notes only: no timing assertion).
 *
 * Waits drive the loop until a condition holds or a guard timer fires. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/fixture.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "net/listener.h"
#include "raft/rio.h"
#include "raft/rnet.h"
#include "raft/rwire.h"
#include "raft/transport.h"
#include "loop.h"
#include "rawclient.h"
#include "sendrecv.h"
#include "seqfsm.h"
#include "test.h"

/* ---- messages ---- */

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Entry payloads live here (raft's buffers: valid until the send callback). */
static uint8_t payload_bytes[3 * 100 * 1024];

static void fill_payload(void)
{
	uint64_t s = 42;
	for (size_t i = 0; i < sizeof payload_bytes; i++)
		payload_bytes[i] = (uint8_t)(test_rand(&s) >> 24);
}

static struct raft_entry ents[128];

/* AppendEntries of n entries (lens[i] bytes each, taken from payload_bytes). */
static struct raft_message msg_ae(unsigned n, const size_t *lens)
{
	struct raft_message m = {0};
	size_t off = 0;

	m.type = RAFT_IO_APPEND_ENTRIES;
	m.append_entries.term = 7;
	m.append_entries.prev_log_index = 1000;
	m.append_entries.prev_log_term = 6;
	m.append_entries.leader_commit = 999;
	m.append_entries.n_entries = n;
	m.append_entries.entries = n > 0 ? ents : NULL;
	for (unsigned i = 0; i < n; i++) {
		ents[i].term = 5 + i % 3;
		ents[i].type = (unsigned short)(RAFT_COMMAND + i % 3);
		ents[i].buf.base = payload_bytes + off;
		ents[i].buf.len = lens[i];
		ents[i].batch = NULL;
		off += lens[i];
	}
	return m;
}

static struct raft_configuration conf3;
static uint8_t snap_data[5000];

static struct raft_message msg_is(size_t data_len)
{
	struct raft_message m = {0};

	m.type = RAFT_IO_INSTALL_SNAPSHOT;
	m.install_snapshot.term = 9;
	m.install_snapshot.last_index = 4096;
	m.install_snapshot.last_term = 8;
	m.install_snapshot.conf = conf3;
	m.install_snapshot.conf_index = 17;
	m.install_snapshot.data.base = data_len > 0 ? snap_data : NULL;
	m.install_snapshot.data.len = data_len;
	return m;
}

static void make_conf(void)
{
	raft_configuration_init(&conf3);
	CHECK_OK(raft_configuration_add(&conf3, 1, "127.0.0.1:9001", RAFT_VOTER));
	CHECK_OK(raft_configuration_add(&conf3, 2, "127.0.0.2:9002", RAFT_STANDBY));
	CHECK_OK(raft_configuration_add(&conf3, 0xfedcba9876543210ull, "x", RAFT_SPARE));
	for (size_t i = 0; i < sizeof snap_data; i++)
		snap_data[i] = (uint8_t)(i * 7);
}

/* One message of each type, and variants: n set to how many. */
#define N_SAMPLES 12
static size_t lens_many[100];

static void samples(struct raft_message *m)
{
	static const size_t one[] = {8};
	unsigned k = 0;

	for (unsigned i = 0; i < 100; i++)
		lens_many[i] = (i * 37) % 61; /* 0, odd and even lengths */
	m[k++] = msg_ae(0, NULL);
	m[k] = msg_ae(1, one);
	m[k].append_entries.entries = xmalloc(sizeof(struct raft_entry));
	m[k].append_entries.entries[0] = ents[0];
	k++;
	m[k] = msg_ae(100, lens_many);
	m[k].append_entries.entries = xmalloc(100 * sizeof(struct raft_entry));
	memcpy(m[k].append_entries.entries, ents, 100 * sizeof(struct raft_entry));
	k++;
	m[k].type = RAFT_IO_APPEND_ENTRIES_RESULT;
	m[k].append_entries_result.term = 3;
	m[k].append_entries_result.rejected = 77;
	m[k++].append_entries_result.last_log_index = 76;
	m[k].type = RAFT_IO_REQUEST_VOTE;
	m[k].request_vote = (struct raft_request_vote){11, 3, 500, 10, true, true};
	k++;
	m[k].type = RAFT_IO_REQUEST_VOTE;
	m[k].request_vote = (struct raft_request_vote){12, 2, 501, 11, false, false};
	k++;
	m[k].type = RAFT_IO_REQUEST_VOTE_RESULT;
	m[k].request_vote_result = (struct raft_request_vote_result){11, true, raft_tribool_true};
	k++;
	m[k].type = RAFT_IO_REQUEST_VOTE_RESULT;
	m[k].request_vote_result = (struct raft_request_vote_result){12, false, raft_tribool_false};
	k++;
	m[k++] = msg_is(sizeof snap_data);
	m[k++] = msg_is(1);
	m[k].type = RAFT_IO_TIMEOUT_NOW;
	m[k].timeout_now = (struct raft_timeout_now){13, 900, 12};
	k++;
	m[k].type = RAFT_IO_TIMEOUT_NOW;
	m[k].timeout_now = (struct raft_timeout_now){UINT64_MAX, UINT64_MAX, 0};
	k++;
	CHECK_EQ_INT(k, N_SAMPLES);
}

static void free_samples(struct raft_message *m)
{
	for (unsigned i = 0; i < N_SAMPLES; i++)
		if (m[i].type == RAFT_IO_APPEND_ENTRIES && m[i].append_entries.n_entries > 0)
			free(m[i].append_entries.entries);
}

/* Whether b (decoded) carries a's content (rwire_message_equal), in raft
 * 0.15's layout (rwire.h): one batch for all entries (NULL when they are
 * all empty), NULL base for an empty entry or empty data, entries NULL
 * when there are none. */
static bool same_message(const struct raft_message *a, const struct raft_message *b)
{
	if (!rwire_message_equal(a, b))
		return false;
	if (b->type == RAFT_IO_APPEND_ENTRIES) {
		const struct raft_append_entries *y = &b->append_entries;
		if (y->n_entries == 0)
			return y->entries == NULL;
		bool empty = rwire_payload_size(b) == 0;
		for (unsigned i = 0; i < y->n_entries; i++)
			if ((y->entries[i].batch == NULL) != empty ||
			    y->entries[i].batch != y->entries[0].batch ||
			    (y->entries[i].buf.len == 0) != (y->entries[i].buf.base == NULL))
				return false;
	}
	if (b->type == RAFT_IO_INSTALL_SNAPSHOT)
		return (b->install_snapshot.data.len == 0) == (b->install_snapshot.data.base == NULL);
	if (b->type == RAFT_IO_REQUEST_VOTE_RESULT) /* sent with flags: never unknown */
		return b->request_vote_result.pre_vote != raft_tribool_unknown;
	return true;
}

/* Decodes every message of [p, p + n) fed in chunks of `chunk` bytes (0:
 * all at once) into out (at most max); returns the count, or -1 on error. */
static int decode_all(const uint8_t *p, size_t n, size_t chunk, struct raft_message *out,
		      int max)
{
	struct rwire_decoder d;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	size_t off = 0;
	int k = 0;

	rwire_decoder_init(&d, 0);
	while (off < n) {
		size_t len = chunk == 0 || chunk > n - off ? n - off : chunk;
		size_t pos = 0;
		while (pos < len) {
			size_t used = 0;
			int rv = rwire_decoder_feed(&d, p + off + pos, len - pos, &used, &out[k],
						    errmsg);
			pos += used;
			if (rv == RWIRE_MESSAGE) {
				if (++k == max)
					break;
			} else if (rv != RWIRE_MORE) {
				test_note("decode: %s", errmsg);
				rwire_decoder_close(&d);
				return -1;
			}
		}
		off += len;
	}
	CHECK(d.stage == RWIRE_AT_PREAMBLE && d.have == 0);
	rwire_decoder_close(&d);
	return k;
}

/* ---- (a) the codec ---- */

TEST(codec_round_trips_every_type)
{
	struct raft_message m[N_SAMPLES], got[N_SAMPLES];
	struct buf all = BUF_INIT, one = BUF_INIT;
	static const size_t chunks[] = {0, 1, 3, 7, 16, 100, 4096};

	fill_payload();
	make_conf();
	samples(m);
	for (unsigned i = 0; i < N_SAMPLES; i++) {
		buf_reset(&one);
		CHECK_OK(rwire_encode(&m[i], &one));
		CHECK_EQ_U64(one.len, rwire_head_size(&m[i]) + rwire_payload_size(&m[i]));
		CHECK_EQ_INT(decode_all(one.data, one.len, 0, got, 1), 1);
		CHECK_MSG(same_message(&m[i], &got[0]), "sample %u (%s)", i,
			  rwire_type_name(m[i].type));
		CHECK(got[0].server_id == 0 && got[0].server_address == NULL);
		rwire_message_free(&got[0]);
		buf_append(&all, one.data, one.len);
	}
	/* Back to back in one stream, in chunks of every size. */
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		CHECK_EQ_INT(decode_all(all.data, all.len, chunks[c], got, N_SAMPLES), N_SAMPLES);
		for (unsigned i = 0; i < N_SAMPLES; i++) {
			CHECK_MSG(same_message(&m[i], &got[i]), "chunk %zu sample %u", chunks[c], i);
			rwire_message_free(&got[i]);
		}
	}
	/* Sizes as raft_uv writes them: header 48 + 16 n, 56 + configuration. */
	CHECK_EQ_U64(rwire_head_size(&m[0]), 16 + 48);
	CHECK_EQ_U64(rwire_head_size(&m[2]), 16 + 48 + 16 * 100);
	CHECK_EQ_U64(rwire_head_size(&m[8]), 16 + 56 + 72); /* conf: 9 + 24 + 24 + 11, padded */
	buf_free(&all);
	buf_free(&one);
	free_samples(m);
	raft_configuration_close(&conf3);
}

/* The exact bytes of a RequestVote and an AppendEntries, written out by
 * hand from canonical/raft v0.15.0 src/uv_encoding.c. */
TEST(codec_bytes_are_raft_uv_bytes)
{
	struct raft_message rv = {0}, ae;
	struct buf b = BUF_INIT;
	uint8_t want[16 + 48 + 16 + 8];
	static const size_t lens[] = {8};

	rv.type = RAFT_IO_REQUEST_VOTE;
	rv.request_vote = (struct raft_request_vote){5, 2, 40, 4, false, true};
	CHECK_OK(rwire_encode(&rv, &b));
	memset(want, 0, sizeof want);
	put64(want, 3);
	put64(want + 8, 40);
	put64(want + 16, 5);
	put64(want + 24, 2);
	put64(want + 32, 40);
	put64(want + 40, 4);
	put64(want + 48, 2); /* pre_vote */
	CHECK_EQ_MEM(b.data, b.len, want, 56);

	fill_payload();
	ae = msg_ae(1, lens);
	ae.append_entries.entries[0].term = 0x0102;
	ae.append_entries.entries[0].type = RAFT_BARRIER;
	buf_reset(&b);
	CHECK_OK(rwire_encode(&ae, &b));
	memset(want, 0, sizeof want);
	put64(want, 1);
	put64(want + 8, 48 + 16);
	put64(want + 16, 7);
	put64(want + 24, 1000);
	put64(want + 32, 6);
	put64(want + 40, 999);
	put64(want + 48, 1);
	put64(want + 56, 0x0102);
	want[64] = RAFT_BARRIER;
	want[68] = 8; /* u32 length */
	/* 8 bytes of slack at 72..79, then the payload */
	memcpy(want + 80, payload_bytes, 8);
	CHECK_EQ_MEM(b.data, b.len, want, sizeof want);
	buf_free(&b);
}

/* Feeds n bytes (whole, then byte by byte) to a decoder with limit and
 * expects DOCRAFT_ECORRUPT both ways. */
static void expect_refused(const void *p, size_t n, uint64_t limit, const char *what)
{
	for (int bytewise = 0; bytewise <= 1; bytewise++) {
		struct rwire_decoder d;
		struct raft_message m;
		char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
		size_t off = 0;
		int rv = RWIRE_MORE;

		rwire_decoder_init(&d, limit);
		while (off < n && rv == RWIRE_MORE) {
			size_t used = 0;
			size_t len = bytewise ? 1 : n - off;
			rv = rwire_decoder_feed(&d, (const uint8_t *)p + off, len, &used, &m, errmsg);
			off += used;
			if (rv == RWIRE_MESSAGE)
				rwire_message_free(&m);
		}
		CHECK_MSG(rv == DOCRAFT_ECORRUPT, "%s: not refused (rv %d, bytewise %d)", what, rv,
			  bytewise);
		if (!bytewise)
			test_note("%s: %s", what, errmsg);
		rwire_decoder_close(&d);
	}
}

/* A frame: type, header length, header. */
static size_t frame(uint8_t *out, uint64_t type, uint64_t hlen, const uint8_t *h, size_t n)
{
	put64(out, type);
	put64(out + 8, hlen);
	memcpy(out + 16, h, n);
	return 16 + n;
}

/* An InstallSnapshot frame around configuration bytes c (n), data length. */
static size_t is_frame(uint8_t *out, const uint8_t *c, size_t n, uint64_t dlen)
{
	uint8_t h[512] = {0};
	put64(h, 9);
	put64(h + 8, 100);
	put64(h + 16, 8);
	put64(h + 24, 3);
	put64(h + 32, n);
	memcpy(h + 40, c, n);
	put64(h + 40 + n, dlen);
	return frame(out, RAFT_IO_INSTALL_SNAPSHOT, 56 + n, h, 56 + n);
}

/* A configuration: format, count, then servers given as raw bytes. */
static size_t conf_bytes(uint8_t *out, uint8_t format, uint64_t count, const void *servers,
			 size_t n)
{
	out[0] = format;
	put64(out + 1, count);
	memcpy(out + 9, servers, n);
	return 9 + n;
}

TEST(decoder_refuses_hostile_frames)
{
	uint8_t f[8192], h[4096], c[256];
	size_t n;

	memset(h, 0, sizeof h);
	/* Types and header lengths. */
	n = frame(f, 0, 24, h, 24);
	expect_refused(f, n, 0, "type 0");
	n = frame(f, 7, 24, h, 24);
	expect_refused(f, n, 0, "type 7");
	n = frame(f, (uint64_t)1 << 40 | 1, 24, h, 24);
	expect_refused(f, n, 0, "type 2^40 + 1");
	n = frame(f, RAFT_IO_APPEND_ENTRIES_RESULT, 0, h, 0);
	expect_refused(f, n, 0, "header of 0 bytes");
	n = frame(f, RAFT_IO_APPEND_ENTRIES_RESULT, 23, h, 23);
	expect_refused(f, n, 0, "AppendEntriesResult header of 23 bytes");
	n = frame(f, RAFT_IO_TIMEOUT_NOW, 257, h, 257);
	expect_refused(f, n, 0, "TimeoutNow header of 257 bytes");
	n = frame(f, RAFT_IO_REQUEST_VOTE, 31, h, 31);
	expect_refused(f, n, 0, "RequestVote header of 31 bytes");
	n = frame(f, RAFT_IO_APPEND_ENTRIES, UINT64_MAX, h, 0);
	expect_refused(f, n, 0, "header of 2^64-1 bytes");
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 5000, h, 0);
	expect_refused(f, n, 4096, "AppendEntries header above the limit");
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 39, h, 39);
	expect_refused(f, n, 0, "AppendEntries header of 39 bytes");

	/* AppendEntries counts, types and payloads. */
	put64(h + 32, 3);
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "3 entries in a header for 2");
	put64(h + 32, UINT64_MAX);
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "2^64-1 entries");
	put64(h + 32, (uint64_t)1 << 32 | 1); /* 1 if truncated to unsigned */
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "2^32 + 1 entries");
	put64(h + 32, 2);
	h[40 + 8] = RAFT_COMMAND;
	h[56 + 8] = 9;
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "entry type 9");
	h[56 + 8] = 0;
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "entry type 0");
	h[56 + 8] = RAFT_CHANGE;
	h[40 + 12] = 0xff; /* lengths 3000-ish and 0xff... */
	h[40 + 13] = 0x0b;
	h[56 + 12] = 0xff;
	h[56 + 13] = 0x0b;
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 4096, "entries' total above the limit");
	h[56 + 15] = 0xff; /* u32 length near 4 GiB: above the default limit */
	n = frame(f, RAFT_IO_APPEND_ENTRIES, 48 + 32, h, 48 + 32);
	expect_refused(f, n, 0, "entry of ~4 GiB");
	memset(h, 0, sizeof h);

	/* InstallSnapshot configurations: servers as raw bytes (u64 id,
	 * address, NUL, role). */
#define ID1 "\x01\0\0\0\0\0\0\0"
#define ID2 "\x02\0\0\0\0\0\0\0"
#define SRV_A ID1 "a\0" "\x01"
	{
		static const struct {
			const char *what;
			uint8_t format;
			uint64_t count;
			const char *servers;
			size_t len;
			uint64_t data_len, limit;
		} bad[] = {
			{"snapshot data above the limit", 1, 1, SRV_A, 11, 200, 100},
			{"configuration format 2", 2, 1, SRV_A, 11, 0, 0},
			{"configuration without servers", 1, 0, "", 0, 0, 0},
			{"configuration of 2^64-1 servers", 1, UINT64_MAX, SRV_A, 11, 0, 0},
			{"configuration server id 0", 1, 2, SRV_A "\0\0\0\0\0\0\0\0\0\0\0", 22, 0, 0},
			{"address without NUL", 1, 1, ID1 "ab" "\x01", 11, 0, 0},
			{"role 7", 1, 1, ID1 "a\0" "\x07", 11, 0, 0},
			{"role past the configuration", 1, 2, SRV_A ID2 "bbb\0", 23, 0, 0},
			{"duplicate id", 1, 2, SRV_A ID1 "b\0" "\x01", 22, 0, 0},
			{"duplicate address", 1, 2, SRV_A ID2 "a\0" "\x01", 22, 0, 0},
			{"empty address", 1, 1, ID1 "\0" "\x01" "\0", 11, 0, 0},
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			size_t k = conf_bytes(c, bad[i].format, bad[i].count, bad[i].servers,
					      bad[i].len);
			n = is_frame(f, c, k, bad[i].data_len);
			expect_refused(f, n, bad[i].limit, bad[i].what);
		}
	}
	{
		size_t k;

		/* Configuration length past the header. */
		k = conf_bytes(c, 1, 1, SRV_A, 11);
		n = is_frame(f, c, k, 0);
		put64(f + 16 + 32, 1000);
		expect_refused(f, n, 0, "configuration length past the header");
		/* The same frames are fine when well formed (the tests can fail). */
		k = conf_bytes(c, 1, 2, SRV_A ID2 "b\0" "\x01", 22);
		n = is_frame(f, c, k, 3);
		memcpy(f + n, "abc", 3);
		{
			struct raft_message got[1];
			CHECK_EQ_INT(decode_all(f, n + 3, 1, got, 1), 1);
			CHECK_EQ_INT(got[0].install_snapshot.conf.n, 2);
			CHECK_EQ_MEM(got[0].install_snapshot.data.base, 3, "abc", 3);
			rwire_message_free(&got[0]);
		}
	}
}

/* Every prefix of a valid stream is "more", and closing the decoder there
 * frees what it holds (ASan). */
TEST(decoder_cut_short_leaks_nothing)
{
	struct raft_message m[N_SAMPLES];
	struct buf b = BUF_INIT;

	fill_payload();
	make_conf();
	samples(m);
	for (unsigned i = 0; i < N_SAMPLES; i++) {
		buf_reset(&b);
		CHECK_OK(rwire_encode(&m[i], &b));
		for (size_t cut = 0; cut < b.len; cut += 1 + cut / 16) {
			struct rwire_decoder d;
			struct raft_message got;
			char errmsg[DOCRAFT_ERRMSG_SIZE];
			size_t used = 0;

			rwire_decoder_init(&d, 0);
			CHECK_EQ_INT(rwire_decoder_feed(&d, b.data, cut, &used, &got, errmsg),
				     RWIRE_MORE);
			CHECK_EQ_U64(used, cut);
			rwire_decoder_close(&d);
		}
	}
	/* AppendEntries of entries that are all empty: no batch at all. */
	{
		static const size_t zero[] = {0, 0, 0};
		struct raft_message ae = msg_ae(3, zero), got[1];
		buf_reset(&b);
		CHECK_OK(rwire_encode(&ae, &b));
		CHECK_EQ_INT(decode_all(b.data, b.len, 0, got, 1), 1);
		CHECK(got[0].append_entries.entries[0].batch == NULL);
		CHECK(same_message(&ae, &got[0]));
		rwire_message_free(&got[0]);
	}
	buf_free(&b);
	free_samples(m);
	raft_configuration_close(&conf3);
}

/* ---- rio's drop path on what rnet decodes ---- */

/* Decodes m's frame as rnet would and hands it to the guard from (id,
 * address); true if the guard dropped it for reason (and freed it: ASan). */
static bool guard_drops(struct rio *g, const struct raft_message *m, raft_id id,
			const char *address, int reason)
{
	struct buf b = BUF_INIT;
	struct raft_message got[1];
	uint64_t before = g->n_guard[reason];

	CHECK_OK(rwire_encode(m, &b));
	CHECK_EQ_INT(decode_all(b.data, b.len, 0, got, 1), 1);
	buf_free(&b);
	got[0].server_id = id;
	got[0].server_address = address;
	rio_deliver(g, &got[0]);
	return g->n_guard[reason] == before + 1;
}

/* rio.c frees a dropped message as raft would, assuming raft_uv's layout
 * (batches only when the payload is not empty); rnet's layout must leave it
 * nothing to leak and nothing uninitialised to free. One replica on
 * raft_fixture, wrapped by rio, gets the malformed messages rio drops. */
TEST(rio_frees_what_rnet_decodes)
{
	static struct raft_fixture f;
	static struct seq_fsm sf;
	static struct rio g;
	struct raft_configuration conf;
	struct raft_message m;
	struct raft *r;
	raft_term term;
	static const size_t empty[] = {0, 0}, odd[] = {5, 8}, eight[] = {8};

	fill_payload();
	make_conf();
	CHECK_OK(raft_fixture_initialize(&f));
	seq_fsm_reset(&sf);
	CHECK_OK(raft_fixture_grow(&f, &sf.fsm));
	r = raft_fixture_get(&f, 0);
	CHECK_OK(rio_wrap_fixture(&g, r));
	CHECK_OK(raft_fixture_configuration(&f, 1, &conf));
	CHECK_OK(raft_fixture_bootstrap(&f, &conf));
	raft_configuration_close(&conf);
	CHECK_OK(raft_fixture_start(&f));
	CHECK(raft_fixture_step_until_has_leader(&f, 5000));
	term = r->current_term;

	m = msg_ae(2, empty); /* entries without a payload: no batch */
	m.append_entries.term = term + 1;
	CHECK(guard_drops(&g, &m, 1, "1", RIO_DROP_MALFORMED));
	m = msg_ae(2, odd); /* a non-last entry not a multiple of 8 */
	m.append_entries.term = term + 1;
	CHECK(guard_drops(&g, &m, 1, "1", RIO_DROP_MALFORMED));
	m = msg_ae(1, eight); /* an entry of a later term than the message */
	m.append_entries.term = 1;
	ents[0].term = 9;
	CHECK(guard_drops(&g, &m, 1, "1", RIO_DROP_MALFORMED));
	m = msg_ae(1, eight); /* from a stranger */
	CHECK(guard_drops(&g, &m, 9, "127.0.0.9:1", RIO_DROP_NOT_MEMBER));
	m = msg_is(0); /* no data */
	m.install_snapshot.term = term + 1;
	CHECK(guard_drops(&g, &m, 1, "1", RIO_DROP_MALFORMED));
	m = msg_is(100); /* last term above the term */
	m.install_snapshot.term = 1;
	m.install_snapshot.last_term = 2;
	CHECK(guard_drops(&g, &m, 1, "1", RIO_DROP_MALFORMED));
	CHECK_EQ_INT(raft_state(r), RAFT_LEADER);
	raft_fixture_close(&f);
	raft_configuration_close(&conf3);
}

/* ---- (b) two rnet instances ---- */

/* A bare rnet endpoint: its own listener, transport and received messages. */
struct ep {
	uv_loop_t *loop;
	struct listener *l;
	struct raft_uv_transport t;
	struct rnet n;
	char address[64];
	raft_id id;
	unsigned n_ticks;
	struct inbox in;
	bool closed;
	uint64_t close_seq;
};

static void ep_tick(struct raft_io *io)
{
	struct ep *e = io->data;
	e->n_ticks++;
}

static void ep_recv(struct raft_io *io, struct raft_message *m)
{
	struct ep *e = io->data;
	inbox_put(&e->in, m);
}

/* An endpoint whose listener is bound to bind ("127.0.0.1:0": any port). */
static void ep_open_at(uv_loop_t *loop, struct ep *e, raft_id id, const char *tablet,
		       const char *bind)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	memset(e, 0, sizeof *e);
	e->loop = loop;
	e->id = id;
	CHECK_OK_MSG(listener_open(loop, bind, &e->l, errmsg), errmsg);
	snprintf(e->address, sizeof e->address, "%s", listener_address(e->l));
	CHECK_OK_MSG(transport_init(&e->t, e->l, tablet, errmsg), errmsg);
	CHECK_OK(rnet_init(&e->n, loop, &e->t, errmsg));
	e->n.io.data = e;
	CHECK_OK_MSG(e->n.io.init(&e->n.io, id, e->address), e->n.io.errmsg);
	CHECK_OK_MSG(e->n.io.start(&e->n.io, 50, ep_tick, ep_recv), e->n.io.errmsg);
}

static void ep_open(uv_loop_t *loop, struct ep *e, raft_id id, const char *tablet)
{
	ep_open_at(loop, e, id, tablet, "127.0.0.1:0");
}

static void ep_close_cb(struct raft_io *io)
{
	struct ep *e = io->data;
	e->closed = true;
	e->close_seq = ++cb_seq;
}

static void ep_start_close(struct ep *e)
{
	e->n.io.close(&e->n.io, ep_close_cb);
	CHECK(!e->closed); /* never synchronous */
}

static void ep_finish_close(struct ep *e)
{
	CHECK(loop_run_until(e->loop, loop_flag_is_set, &e->closed, 10000));
	rnet_release(&e->n);
	transport_close(&e->t);
	close_listener(e->loop, e->l);
	inbox_free(&e->in);
}

static void ep_close(struct ep *e)
{
	ep_start_close(e);
	ep_finish_close(e);
}

static int ep_send(struct ep *from, struct ep *to, struct raft_message *m, struct sent *s)
{
	sent_reset(s);
	m->server_id = to->id;
	m->server_address = to->address;
	return from->n.io.send(&from->n.io, &s->req, m, sent_cb);
}

struct got_wait {
	struct ep *e;
	int n;
};

static bool got_n(void *p)
{
	struct got_wait *w = p;
	return w->e->in.n_got >= w->n;
}

static bool ticked_twice(void *p)
{
	return ((struct ep *)p)->n_ticks >= 2;
}

TEST(two_rnets_exchange_every_type)
{
	uv_loop_t loop;
	static struct ep a, b;
	struct raft_message m[N_SAMPLES];
	struct sent s[N_SAMPLES + 4];
	struct rnet_stats sa, sb;
	struct got_wait w = {&b, N_SAMPLES};
	struct sent_wait sw = {s, N_SAMPLES};

	log_init();
	fill_payload();
	make_conf();
	samples(m);
	start_loop(&loop);
	ep_open(&loop, &a, 1, "g");
	ep_open(&loop, &b, 2, "g");

	/* A to B: one of each (they queue while A connects: raise the bound). */
	rnet_set_max_pending(&a.n, N_SAMPLES);
	for (int i = 0; i < N_SAMPLES; i++)
		CHECK_OK(ep_send(&a, &b, &m[i], &s[i]));
	for (int i = 0; i < N_SAMPLES; i++)
		CHECK_EQ_INT(s[i].n_calls, 0); /* never inside send */
	CHECK(loop_run_until(&loop, got_n, &w, 10000));
	CHECK(loop_run_until(&loop, all_sent, &sw, 10000));
	for (int i = 0; i < N_SAMPLES; i++) {
		CHECK_EQ_INT(s[i].status, 0);
		CHECK_EQ_INT(s[i].n_calls, 1);
		CHECK_MSG(same_message(&m[i], &b.in.got[i]), "message %d (%s)", i,
			  rwire_type_name(m[i].type));
		CHECK_EQ_U64(b.in.got[i].server_id, 1);
		CHECK_EQ_STR(b.in.got[i].server_address, a.address);
	}

	/* B answers on its own connection. */
	{
		struct got_wait wa = {&a, 2};
		struct sent_wait sw2 = {s, 2};
		CHECK_OK(ep_send(&b, &a, &m[3], &s[0]));
		CHECK_OK(ep_send(&b, &a, &m[6], &s[1]));
		CHECK(loop_run_until(&loop, got_n, &wa, 10000));
		CHECK(loop_run_until(&loop, all_sent, &sw2, 10000));
		CHECK(same_message(&m[3], &a.in.got[0]) && same_message(&m[6], &a.in.got[1]));
		CHECK_EQ_U64(a.in.got[0].server_id, 2);
		CHECK_EQ_STR(a.in.got[0].server_address, b.address);
	}

	/* Large: three entries of 100 KiB (read in place), then cut to what fits
	 * A's limit of 250 KiB: two entries. */
	{
		static const size_t big[] = {100 * 1024, 100 * 1024, 100 * 1024};
		struct raft_message ae = msg_ae(3, big);
		struct raft_entry e3[3];
		struct got_wait wb = {&b, N_SAMPLES + 2};
		struct sent_wait sw3 = {s, 2};

		memcpy(e3, ents, sizeof e3);
		ae.append_entries.entries = e3;
		CHECK_OK(ep_send(&a, &b, &ae, &s[0]));
		rnet_set_limit(&a.n, 250 * 1024);
		CHECK_OK(ep_send(&a, &b, &ae, &s[1]));
		CHECK(loop_run_until(&loop, got_n, &wb, 10000));
		CHECK(loop_run_until(&loop, all_sent, &sw3, 10000));
		CHECK(same_message(&ae, &b.in.got[N_SAMPLES]));
		ae.append_entries.n_entries = 2;
		CHECK(same_message(&ae, &b.in.got[N_SAMPLES + 1]));
		/* One entry above the limit: refused at once, no callback. */
		rnet_set_limit(&a.n, 50 * 1024);
		CHECK_EQ_INT(ep_send(&a, &b, &ae, &s[2]), RAFT_TOOBIG);
		/* No destination. */
		ae.append_entries.n_entries = 0;
		sent_reset(&s[3]);
		ae.server_id = 0;
		CHECK_EQ_INT(a.n.io.send(&a.n.io, &s[3].req, &ae, sent_cb), RAFT_NOCONNECTION);
		for (int i = 0; i < 3; i++)
			uv_run(&loop, UV_RUN_NOWAIT);
		CHECK_EQ_INT(s[2].n_calls + s[3].n_calls, 0);
	}

	rnet_get_stats(&a.n, &sa);
	rnet_get_stats(&b.n, &sb);
	test_note("A: out %" PRIu64 " bytes, connects %" PRIu64 ", truncated %" PRIu64
		  "; B: in %" PRIu64 " bytes, accepted %" PRIu64,
		  sa.bytes_out, sa.connects, sa.truncated, sb.bytes_in, sb.accepted);
	CHECK_EQ_U64(sa.connects, 1);
	CHECK_EQ_U64(sb.accepted, 1);
	CHECK_EQ_U64(sa.truncated, 1);
	CHECK_EQ_U64(sa.msgs_out[RAFT_IO_APPEND_ENTRIES], 5);
	CHECK_EQ_U64(sb.msgs_in[RAFT_IO_APPEND_ENTRIES], 5);
	CHECK_EQ_U64(sb.msgs_in[RAFT_IO_INSTALL_SNAPSHOT], 2);
	CHECK_EQ_U64(sb.msgs_in[RAFT_IO_TIMEOUT_NOW], 2);
	CHECK_EQ_U64(sa.msgs_in[RAFT_IO_APPEND_ENTRIES_RESULT], 1);
	CHECK_EQ_U64(sa.bytes_out, sb.bytes_in);
	CHECK_EQ_U64(sa.decode_errors + sb.decode_errors + sa.drops + sb.drops, 0);
	CHECK(loop_run_until(&loop, ticked_twice, &a, 5000)); /* the tick timer runs */

	ep_close(&a);
	ep_close(&b);
	CHECK_OK(loop_finish(&loop));
	free_samples(m);
	raft_configuration_close(&conf3);
}

/* A peer speaking through the listener: a valid message is delivered with
 * the preamble's id and address; a bad frame closes that connection only. */
TEST(hostile_bytes_close_one_connection)
{
	uv_loop_t loop;
	static struct ep a, b;
	struct client r;
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	struct raft_message tn = {0};
	struct buf fr = BUF_INIT;
	struct rnet_stats st;
	size_t n;

	log_init();
	start_loop(&loop);
	ep_open(&loop, &b, 2, "g");
	client_connect(&loop, &r, b.address);
	n = listener_preamble_encode(pre, LISTENER_RAFT, "g", 77, "127.0.0.1:7777");
	client_write(&r, pre, n);
	tn.type = RAFT_IO_TIMEOUT_NOW;
	tn.timeout_now = (struct raft_timeout_now){4, 5, 6};
	CHECK_OK(rwire_encode(&tn, &fr));
	client_write(&r, fr.data, fr.len - 5); /* in two writes */
	client_write(&r, fr.data + fr.len - 5, 5);
	{
		struct got_wait w = {&b, 1};
		CHECK(loop_run_until(&loop, got_n, &w, 5000));
	}
	CHECK(same_message(&tn, &b.in.got[0]));
	CHECK_EQ_U64(b.in.got[0].server_id, 77);
	CHECK_EQ_STR(b.in.got[0].server_address, "127.0.0.1:7777");
	/* Garbage: the connection is closed and counted. */
	client_write(&r, "\x63\0\0\0\0\0\0\0\x18\0\0\0\0\0\0\0", 16);
	CHECK(loop_run_until(&loop, client_ended, &r, 5000));
	client_close(&loop, &r);
	rnet_get_stats(&b.n, &st);
	CHECK_EQ_U64(st.decode_errors, 1);
	CHECK_EQ_U64(st.msgs_in[RAFT_IO_TIMEOUT_NOW], 1);
	/* B still serves others. */
	ep_open(&loop, &a, 1, "g");
	{
		static struct sent s; /* until its callback */
		struct got_wait w = {&b, 2};
		struct sent_wait sw = {&s, 1};
		CHECK_OK(ep_send(&a, &b, &tn, &s));
		CHECK(loop_run_until(&loop, got_n, &w, 5000));
		CHECK(same_message(&tn, &b.in.got[1]));
		CHECK(loop_run_until(&loop, all_sent, &sw, 5000));
		CHECK_EQ_INT(s.status, 0);
	}
	ep_close(&a);
	ep_close(&b);
	buf_free(&fr);
	CHECK_OK(loop_finish(&loop));
}

/* ---- (c) close, refusing and silent peers ---- */

struct work {
	struct raft_io_async_work req;
	int status;
	int n_calls;
	uint64_t seq;
};

static int work_fn(struct raft_io_async_work *req)
{
	(void)req;
	usleep(50 * 1000);
	return 123;
}

static void work_done(struct raft_io_async_work *req, int status)
{
	struct work *w = req->data;
	w->status = status;
	w->n_calls++;
	w->seq = ++cb_seq;
}

/* An address where nothing listens (a listener opened and closed). */
static void dead_address(uv_loop_t *loop, char *out, size_t cap)
{
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	CHECK_OK_MSG(listener_open(loop, "127.0.0.1:0", &l, errmsg), errmsg);
	snprintf(out, cap, "%s", listener_address(l));
	close_listener(loop, l);
}

TEST(close_with_sends_pending)
{
	uv_loop_t loop;
	static struct ep a, b;
	struct ep dead = {0};
	struct raft_message tn = {0};
	struct sent s[10];
	struct work wk = {0};

	start_loop(&loop);
	ep_open(&loop, &a, 1, "g");
	ep_open(&loop, &b, 2, "g");
	dead.id = 3;
	dead_address(&loop, dead.address, sizeof dead.address);
	tn.type = RAFT_IO_TIMEOUT_NOW;
	/* Connect A to B first (and let that connection grow up). */
	rnet_set_retry_delay(&a.n, 50);
	{
		struct got_wait w = {&b, 1};
		struct sent_wait sw = {s, 1};
		CHECK_OK(ep_send(&a, &b, &tn, &s[0]));
		CHECK(loop_run_until(&loop, got_n, &w, 5000));
		CHECK(loop_run_until(&loop, all_sent, &sw, 5000));
		CHECK_EQ_INT(s[0].status, 0);
	}
	/* Five writes to B, five sends to nobody (three queued, two dropped),
	 * one async work item. */
	for (int i = 0; i < 5; i++)
		CHECK_OK(ep_send(&a, &b, &tn, &s[i]));
	for (int i = 5; i < 10; i++)
		CHECK_OK(ep_send(&a, &dead, &tn, &s[i]));
	wk.req.data = &wk;
	wk.req.work = work_fn;
	CHECK_OK(a.n.io.async_work(&a.n.io, &wk.req, work_done));
	ep_start_close(&a);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(s[i].n_calls, 0);
	CHECK_EQ_INT(a.n.io.send(&a.n.io, &s[0].req, &tn, sent_cb), RAFT_CANCELED);
	ep_finish_close(&a);
	for (int i = 0; i < 10; i++) {
		CHECK_EQ_INT(s[i].n_calls, 1);
		CHECK_MSG(s[i].seq < a.close_seq, "send %d completed after the close callback", i);
		if (i < 5)
			CHECK_MSG(s[i].status == 0 || s[i].status == RAFT_CANCELED, "send %d: %d", i,
				  s[i].status);
	}
	CHECK_EQ_INT(s[5].status, RAFT_NOCONNECTION);
	CHECK_EQ_INT(s[6].status, RAFT_NOCONNECTION);
	for (int i = 7; i < 10; i++)
		CHECK_EQ_INT(s[i].status, RAFT_CANCELED);
	CHECK_EQ_INT(wk.n_calls, 1);
	CHECK_EQ_INT(wk.status, 123);
	CHECK(wk.seq < a.close_seq);
	CHECK_EQ_U64(a.n.stats.drops, 2);

	/* Closing right after init, before start: still asynchronous. */
	{
		static struct ep c;
		char errmsg[DOCRAFT_ERRMSG_SIZE];
		memset(&c, 0, sizeof c);
		c.loop = &loop;
		CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &c.l, errmsg), errmsg);
		CHECK_OK(transport_init(&c.t, c.l, "g", errmsg));
		CHECK_OK(rnet_init(&c.n, &loop, &c.t, errmsg));
		c.n.io.data = &c;
		CHECK_OK(c.n.io.init(&c.n.io, 5, listener_address(c.l)));
		ep_close(&c);
		/* And one that never ran at all. */
		CHECK_OK(transport_init(&c.t, b.l, "h", errmsg));
		CHECK_OK(rnet_init(&c.n, &loop, &c.t, errmsg));
		CHECK_EQ_INT(c.n.io.load(&c.n.io, NULL, NULL, NULL, NULL, NULL, NULL), RAFT_IOERR);
		CHECK_EQ_STR(c.n.io.errmsg, "rnet has no storage");
		CHECK_EQ_INT(c.n.io.set_term(&c.n.io, 3), RAFT_IOERR);
		CHECK_EQ_INT(c.n.io.truncate(&c.n.io, 3), RAFT_IOERR);
		CHECK_EQ_INT(c.n.io.version, 2);
		rnet_release(&c.n);
		transport_close(&c.t);
	}
	ep_close(&b);
	CHECK_OK(loop_finish(&loop));
}

struct stats_wait {
	struct rnet *n;
	uint64_t connect_failures;
};

static bool failures_reached(void *p)
{
	struct stats_wait *w = p;
	return w->n->stats.connect_failures >= w->connect_failures;
}

/* A server whose listener is up but has no such tablet accepts, reads the
 * preamble and hangs up: what was written meanwhile is lost, and the send
 * says so (RAFT_IOERR), not 0; a connection that lives past the retry
 * delay confirms its sends. */
TEST(connection_that_dies_young_fails_its_sends)
{
	uv_loop_t loop;
	static struct ep a, b;
	struct ep none = {0};
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct raft_message rv = {0};
	struct sent s[2];
	struct sent_wait sw = {s, 1};

	start_loop(&loop);
	ep_open(&loop, &a, 1, "g");
	rnet_set_retry_delay(&a.n, 100);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	none.id = 7;
	snprintf(none.address, sizeof none.address, "%s", listener_address(l));
	rv.type = RAFT_IO_REQUEST_VOTE;
	CHECK_OK(ep_send(&a, &none, &rv, &s[0]));
	CHECK(loop_run_until(&loop, all_sent, &sw, 5000));
	CHECK_EQ_INT(s[0].status, RAFT_IOERR);
	CHECK(a.n.stats.connects >= 1);
	test_note("unconfirmed %" PRIu64 ", write errors %" PRIu64, a.n.stats.unconfirmed,
		  a.n.stats.write_errors);
	CHECK(a.n.stats.unconfirmed + a.n.stats.write_errors >= 1);

	/* A peer that has the tablet: held for the retry delay, then 0. */
	ep_open(&loop, &b, 2, "g");
	sw.s = &s[1];
	CHECK_OK(ep_send(&a, &b, &rv, &s[1]));
	CHECK(loop_run_until(&loop, all_sent, &sw, 5000));
	CHECK_EQ_INT(s[1].status, 0);
	CHECK_EQ_INT(b.in.n_got, 1);
	ep_close(&a);
	ep_close(&b);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
}

/* A peer that refuses: reconnect every retry delay, at most 3 sends kept,
 * delivered once the peer is there. */
TEST(refusing_peer_reconnects_and_bounds_its_queue)
{
	uv_loop_t loop;
	static struct ep a;
	struct ep dead = {0};
	struct raft_message rv = {0};
	struct sent s[10];
	struct stats_wait w;
	uint64_t t0;
	int n_noconn = 0;

	start_loop(&loop);
	ep_open(&loop, &a, 1, "g");
	rnet_set_retry_delay(&a.n, 30);
	dead.id = 9;
	dead_address(&loop, dead.address, sizeof dead.address);
	rv.type = RAFT_IO_REQUEST_VOTE;
	for (int i = 0; i < 10; i++)
		CHECK_OK(ep_send(&a, &dead, &rv, &s[i]));
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(s[i].n_calls, 0);
	t0 = uv_now(&loop);
	w.n = &a.n;
	w.connect_failures = 4;
	CHECK(loop_run_until(&loop, failures_reached, &w, 10000));
	test_note("4 connect failures after %" PRIu64 " ms (retry delay 30 ms)",
		  uv_now(&loop) - t0);
	for (int i = 0; i < 7; i++) {
		CHECK_EQ_INT(s[i].n_calls, 1);
		n_noconn += s[i].status == RAFT_NOCONNECTION;
	}
	CHECK_EQ_INT(n_noconn, 7);
	for (int i = 7; i < 10; i++)
		CHECK_EQ_INT(s[i].n_calls, 0); /* still queued */
	CHECK_EQ_U64(a.n.stats.drops, 7);
	CHECK_EQ_U64(a.n.stats.connects, 0);
	/* The peer comes up at that address: the next attempt connects and the
	 * three kept sends arrive, in order. */
	{
		static struct ep up;
		struct got_wait gw = {&up, 3};
		struct sent_wait sw = {&s[7], 3};
		char address[64];

		snprintf(address, sizeof address, "%s", dead.address);
		ep_open_at(&loop, &up, 9, "g", address);
		CHECK(loop_run_until(&loop, got_n, &gw, 10000));
		CHECK(loop_run_until(&loop, all_sent, &sw, 10000));
		for (int i = 7; i < 10; i++)
			CHECK_EQ_INT(s[i].status, 0);
		CHECK_EQ_U64(a.n.stats.connects, 1);
		CHECK_EQ_U64(up.in.got[0].server_id, 1);
		ep_close(&up);
	}
	ep_close(&a);
	CHECK_OK(loop_finish(&loop));
}

/* A peer that accepts and never reads: the write backlog stays bounded by
 * the limit (sends beyond it fail with RAFT_NOCONNECTION). */
struct silent {
	uv_tcp_t server;
	uv_tcp_t conns[4];
	int n_conns;
	int n_closed;
};

static void silent_conn_cb(uv_stream_t *server, int status)
{
	struct silent *q = server->data;
	if (status != 0 || q->n_conns == 4)
		return;
	uv_tcp_init(server->loop, &q->conns[q->n_conns]);
	q->conns[q->n_conns].data = q;
	CHECK_OK(uv_accept(server, (uv_stream_t *)&q->conns[q->n_conns]));
	q->n_conns++; /* never read */
}

static void silent_close_cb(uv_handle_t *h)
{
	((struct silent *)h->data)->n_closed++;
}

static bool silent_all_closed(void *p)
{
	struct silent *q = p;
	return q->n_closed == q->n_conns + 1;
}

static bool connected_once(void *p)
{
	return ((struct rnet *)p)->stats.connects >= 1;
}

TEST(silent_peer_bounds_the_write_backlog)
{
	uv_loop_t loop;
	static struct ep a;
	static struct silent q;
	struct ep peer = {0};
	struct sockaddr_in addr;
	int alen = sizeof addr;
	static struct sent s[400];
	static const size_t len[] = {64 * 1024};
	struct raft_message ae;
	int n_ok = 0, n_drop = 0, n_cancel = 0;

	fill_payload();
	start_loop(&loop);
	ep_open(&loop, &a, 1, "g");
	rnet_set_limit(&a.n, 256 * 1024);
	memset(&q, 0, sizeof q);
	uv_tcp_init(&loop, &q.server);
	q.server.data = &q;
	CHECK_OK(uv_ip4_addr("127.0.0.1", 0, &addr));
	CHECK_OK(uv_tcp_bind(&q.server, (struct sockaddr *)&addr, 0));
	CHECK_OK(uv_listen((uv_stream_t *)&q.server, 8, silent_conn_cb));
	CHECK_OK(uv_tcp_getsockname(&q.server, (struct sockaddr *)&addr, &alen));
	snprintf(peer.address, sizeof peer.address, "127.0.0.1:%d", ntohs(addr.sin_port));
	peer.id = 4;

	ae = msg_ae(1, len);
	CHECK_OK(ep_send(&a, &peer, &ae, &s[0]));
	CHECK(loop_run_until(&loop, connected_once, &a.n, 5000));
	for (int i = 1; i < 400; i++) {
		ae = msg_ae(1, len);
		CHECK_OK(ep_send(&a, &peer, &ae, &s[i]));
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	for (int i = 0; i < 3; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 400; i++) {
		n_ok += s[i].n_calls == 1 && s[i].status == 0;
		n_drop += s[i].n_calls == 1 && s[i].status == RAFT_NOCONNECTION;
	}
	test_note("400 sends of 64 KiB to a peer that never reads: %d written, %d dropped", n_ok,
		  n_drop);
	CHECK(n_drop > 0);
	CHECK_EQ_U64(a.n.stats.drops, (uint64_t)n_drop);
	ep_close(&a);
	for (int i = 0; i < 400; i++) {
		CHECK_EQ_INT(s[i].n_calls, 1);
		n_cancel += s[i].status == RAFT_CANCELED;
	}
	CHECK_EQ_INT(n_ok + n_drop + n_cancel, 400);
	for (int i = 0; i < q.n_conns; i++)
		uv_close((uv_handle_t *)&q.conns[i], silent_close_cb);
	uv_close((uv_handle_t *)&q.server, silent_close_cb);
	CHECK(loop_run_until(&loop, silent_all_closed, &q, 5000));
	CHECK_OK(loop_finish(&loop));
}

/* ---- (d) real C-Raft: rnet for the network, raft_uv for storage ---- */

/* The transport raft_uv gets when it is only the storage half: raft_uv
 * calls init (from io.init) and close, nothing else. */
static int dummy_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	(void)t;
	(void)id;
	(void)address;
	return 0;
}

static int dummy_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	(void)t;
	(void)cb;
	return 0;
}

static int dummy_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
			 const char *address, raft_uv_connect_cb cb)
{
	(void)t;
	(void)req;
	(void)id;
	(void)address;
	(void)cb;
	return RAFT_NOCONNECTION;
}

static void dummy_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	cb(t);
}

/* Test-only glue (the shape of raftlog_io): raft gets `io`; storage methods
 * go to raft_uv (`uv`, on a dummy transport), network methods to rnet. */
struct split {
	struct raft_io io;
	struct raft_io uv;
	struct raft_uv_transport dummy;
	struct rnet net;
	struct raft_uv_transport transport; /* rnet's, over the listener */
	raft_io_tick_cb tick_cb;
	raft_io_recv_cb recv_cb;
	raft_io_close_cb close_cb;
	bool uv_closed, net_closed;
};

static struct split *sp_of(struct raft_io *io)
{
	return (struct split *)io; /* io is the first member */
}

static int sp_fwd(struct split *sp, struct raft_io *inner, int rv)
{
	if (rv != 0)
		memcpy(sp->io.errmsg, inner->errmsg, sizeof sp->io.errmsg);
	return rv;
}

static int sp_init(struct raft_io *io, raft_id id, const char *address)
{
	struct split *sp = sp_of(io);
	int rv = sp_fwd(sp, &sp->uv, sp->uv.init(&sp->uv, id, address));
	return rv != 0 ? rv : sp_fwd(sp, &sp->net.io, sp->net.io.init(&sp->net.io, id, address));
}

static void sp_maybe_closed(struct split *sp)
{
	raft_io_close_cb cb = sp->close_cb;
	if (!sp->uv_closed || !sp->net_closed || cb == NULL)
		return;
	sp->close_cb = NULL;
	cb(&sp->io);
}

static void sp_uv_closed(struct raft_io *uv)
{
	struct split *sp = uv->data;
	sp->uv_closed = true; /* raft_uv 0.15 may say so twice (rio.c) */
	sp_maybe_closed(sp);
}

static void sp_net_closed(struct raft_io *net)
{
	struct split *sp = net->data;
	sp->net_closed = true;
	sp_maybe_closed(sp);
}

static void sp_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct split *sp = sp_of(io);
	sp->close_cb = cb;
	sp->uv.close(&sp->uv, sp_uv_closed);
	sp->net.io.close(&sp->net.io, sp_net_closed);
}

static int sp_load(struct raft_io *io, raft_term *term, raft_id *vote,
		   struct raft_snapshot **snapshot, raft_index *start, struct raft_entry *entries[],
		   size_t *n)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.load(&sp->uv, term, vote, snapshot, start, entries, n));
}

static void sp_tick(struct raft_io *net)
{
	struct split *sp = net->data;
	sp->tick_cb(&sp->io);
}

static void sp_recv(struct raft_io *net, struct raft_message *m)
{
	struct split *sp = net->data;
	sp->recv_cb(&sp->io, m);
}

static int sp_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
	struct split *sp = sp_of(io);
	sp->tick_cb = tick;
	sp->recv_cb = recv;
	return sp_fwd(sp, &sp->net.io, sp->net.io.start(&sp->net.io, msecs, sp_tick, sp_recv));
}

static int sp_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.bootstrap(&sp->uv, conf));
}

static int sp_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.recover(&sp->uv, conf));
}

static int sp_set_term(struct raft_io *io, raft_term term)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.set_term(&sp->uv, term));
}

static int sp_set_vote(struct raft_io *io, raft_id id)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.set_vote(&sp->uv, id));
}

static int sp_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *m,
		   raft_io_send_cb cb)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->net.io, sp->net.io.send(&sp->net.io, req, m, cb));
}

static int sp_append(struct raft_io *io, struct raft_io_append *req,
		     const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.append(&sp->uv, req, entries, n, cb));
}

static int sp_truncate(struct raft_io *io, raft_index index)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.truncate(&sp->uv, index));
}

static int sp_snapshot_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
			   const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.snapshot_put(&sp->uv, trailing, req, snapshot, cb));
}

static int sp_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			   raft_io_snapshot_get_cb cb)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->uv, sp->uv.snapshot_get(&sp->uv, req, cb));
}

static raft_time sp_time(struct raft_io *io)
{
	struct split *sp = sp_of(io);
	return sp->net.io.time(&sp->net.io);
}

static int sp_random(struct raft_io *io, int min, int max)
{
	struct split *sp = sp_of(io);
	return sp->net.io.random(&sp->net.io, min, max);
}

static int sp_async_work(struct raft_io *io, struct raft_io_async_work *req,
			 raft_io_async_work_cb cb)
{
	struct split *sp = sp_of(io);
	return sp_fwd(sp, &sp->net.io, sp->net.io.async_work(&sp->net.io, req, cb));
}

static void sp_setup(struct split *sp, uv_loop_t *loop, struct listener *l, const char *tablet,
		     const char *dir)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	memset(sp, 0, sizeof *sp);
	sp->dummy.init = dummy_init;
	sp->dummy.listen = dummy_listen;
	sp->dummy.connect = dummy_connect;
	sp->dummy.close = dummy_close;
	CHECK_OK(raft_uv_init(&sp->uv, loop, dir, &sp->dummy));
	raft_uv_set_segment_size(&sp->uv, 1024 * 1024);
	sp->uv.data = sp;
	CHECK_OK_MSG(transport_init(&sp->transport, l, tablet, errmsg), errmsg);
	CHECK_OK(rnet_init(&sp->net, loop, &sp->transport, errmsg));
	rnet_set_retry_delay(&sp->net, 200);
	sp->net.io.data = sp;
	sp->io.version = 2;
	sp->io.init = sp_init;
	sp->io.close = sp_close;
	sp->io.load = sp_load;
	sp->io.start = sp_start;
	sp->io.bootstrap = sp_bootstrap;
	sp->io.recover = sp_recover;
	sp->io.set_term = sp_set_term;
	sp->io.set_vote = sp_set_vote;
	sp->io.send = sp_send;
	sp->io.append = sp_append;
	sp->io.truncate = sp_truncate;
	sp->io.snapshot_put = sp_snapshot_put;
	sp->io.snapshot_get = sp_snapshot_get;
	sp->io.time = sp_time;
	sp->io.random = sp_random;
	sp->io.async_work = sp_async_work;
}

/* ---- a group of three replicas, each on its own listener ---- */

#define N_REP 3

struct group;

struct replica {
	struct group *g;
	int idx;
	bool plain;                 /* raft_uv over transport.c; else split */
	char dir[300];
	struct listener *l;
	char address[64];
	struct raft raft;
	struct seq_fsm fsm;
	struct split sp;
	struct raft_io uvio;        /* plain */
	struct raft_uv_transport transport; /* plain */
	bool uv_live;               /* raft_uv_close still due */
	bool open, closing;
};

struct group {
	uv_loop_t loop;
	char root[256];
	struct replica r[N_REP];
	struct seq_load load;
	unsigned threshold, trailing; /* snapshot settings, 0: raft's */
};

static void replica_open(struct group *g, struct replica *rep)
{
	struct raft_configuration conf;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct raft_io *io;
	int rv;

	if (rep->uv_live) /* the previous instance's, closed long ago */
		raft_uv_close(rep->plain ? &rep->uvio : &rep->sp.uv);
	seq_fsm_reset(&rep->fsm);
	if (rep->plain) {
		CHECK_OK_MSG(transport_init(&rep->transport, rep->l, "g1", errmsg), errmsg);
		CHECK_OK(raft_uv_init(&rep->uvio, &g->loop, rep->dir, &rep->transport));
		raft_uv_set_segment_size(&rep->uvio, 1024 * 1024);
		raft_uv_set_connect_retry_delay(&rep->uvio, 200);
		io = &rep->uvio;
	} else {
		sp_setup(&rep->sp, &g->loop, rep->l, "g1", rep->dir);
		io = &rep->sp.io;
	}
	rep->uv_live = true;
	rv = raft_init(&rep->raft, io, &rep->fsm.fsm, (raft_id)rep->idx + 1, rep->address);
	CHECK_OK_MSG(rv, raft_errmsg(&rep->raft));
	rep->raft.data = rep;
	raft_set_election_timeout(&rep->raft, 1000);
	raft_set_heartbeat_timeout(&rep->raft, 100);
	if (g->threshold > 0) {
		raft_set_snapshot_threshold(&rep->raft, g->threshold);
		raft_set_snapshot_trailing(&rep->raft, g->trailing);
	}
	raft_configuration_init(&conf);
	for (int i = 0; i < N_REP; i++)
		CHECK_OK(raft_configuration_add(&conf, (raft_id)i + 1, g->r[i].address, RAFT_VOTER));
	rv = raft_bootstrap(&rep->raft, &conf);
	raft_configuration_close(&conf);
	CHECK_MSG(rv == 0 || rv == RAFT_CANTBOOTSTRAP, "bootstrap: %s", raft_strerror(rv));
	CHECK_OK_MSG(raft_start(&rep->raft), raft_errmsg(&rep->raft));
	rep->fsm.n_restores = 0; /* the local snapshot restored by raft_start */
	rep->open = true;
}

static void replica_close_cb(struct raft *r)
{
	struct replica *rep = r->data;
	if (rep->plain) {
		transport_close(&rep->transport);
	} else {
		rnet_release(&rep->sp.net);
		transport_close(&rep->sp.transport);
	}
	/* raft_uv_close later (replica_open, group_end): raft_uv 0.15 can
	 * still touch its memory after this callback (tablet_raft.c). */
	rep->open = false;
	rep->closing = false;
}

static void replica_close(struct replica *rep)
{
	if (!rep->open || rep->closing)
		return;
	rep->closing = true;
	raft_close(&rep->raft, replica_close_cb);
}

static struct replica *group_leader(struct group *g)
{
	for (int i = 0; i < N_REP; i++) {
		struct replica *rep = &g->r[i];
		if (rep->open && !rep->closing && raft_state(&rep->raft) == RAFT_LEADER)
			return rep;
	}
	return NULL;
}

static bool has_leader(void *p)
{
	return group_leader(p) != NULL;
}

/* [0, target) acknowledged and applied by every open replica. */
static bool caught_up(void *p)
{
	struct group *g = p;
	struct replica *leader = group_leader(g);

	seq_load_pump(&g->load, leader != NULL ? &leader->raft : NULL);
	if (!seq_load_acked(&g->load))
		return false;
	for (int i = 0; i < N_REP; i++)
		if (g->r[i].open && !seq_fsm_has(&g->r[i].fsm, g->load.target))
			return false;
	return true;
}

static bool all_open_caught_up(void *p)
{
	struct group *g = p;
	for (int i = 0; i < N_REP; i++)
		if (!g->r[i].open)
			return false;
	return caught_up(g);
}

static bool all_closed(void *p)
{
	struct group *g = p;
	for (int i = 0; i < N_REP; i++)
		if (g->r[i].open)
			return false;
	return true;
}

static bool replica_closed(void *p)
{
	return !((struct replica *)p)->open;
}

static void check_consistent(struct group *g)
{
	for (int i = 0; i < N_REP; i++) {
		struct replica *rep = &g->r[i];
		CHECK_EQ_INT(rep->fsm.bad, 0);
		CHECK_EQ_INT(rep->fsm.distinct, g->load.target);
		CHECK_EQ_MEM(rep->fsm.seen, SEQ_MAX, g->r[0].fsm.seen, SEQ_MAX);
	}
}

static void group_begin(struct group *g, const char *tag, const bool plain[N_REP])
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	log_init();
	memset(g, 0, sizeof *g);
	start_loop(&g->loop);
	test_tmpdir_make(g->root, tag);
	for (int i = 0; i < N_REP; i++) {
		struct replica *rep = &g->r[i];
		rep->g = g;
		rep->idx = i;
		rep->plain = plain[i];
		snprintf(rep->dir, sizeof rep->dir, "%s/r%d", g->root, i + 1);
		CHECK_OK(mkdir(rep->dir, 0755));
		CHECK_OK_MSG(listener_open(&g->loop, "127.0.0.1:0", &rep->l, errmsg), errmsg);
		snprintf(rep->address, sizeof rep->address, "%s", listener_address(rep->l));
	}
}

static void group_end(struct group *g)
{
	for (int i = 0; i < N_REP; i++)
		replica_close(&g->r[i]);
	CHECK(loop_run_until(&g->loop, all_closed, g, 20000));
	for (int i = 0; i < N_REP; i++)
		close_listener(&g->loop, g->r[i].l);
	CHECK_OK(loop_finish(&g->loop));
	for (int i = 0; i < N_REP; i++)
		if (g->r[i].uv_live)
			raft_uv_close(g->r[i].plain ? &g->r[i].uvio : &g->r[i].sp.uv);
	test_tmpdir_remove(g->root);
}

static void set_target(struct group *g, unsigned target)
{
	g->load.target = target;
	CHECK_MSG(loop_run_until(&g->loop, caught_up, g, 60000), "not caught up at %u", target);
}

struct transfer {
	struct raft_transfer req;
	bool done;
};

static void transfer_cb(struct raft_transfer *req)
{
	((struct transfer *)req->data)->done = true;
}

struct leader_is {
	struct group *g;
	int idx;
	struct transfer *t;
};

static bool leader_is_or_done(void *p)
{
	struct leader_is *x = p;
	return group_leader(x->g) == &x->g->r[x->idx] || x->t->done;
}

/* Moves leadership to replica idx (raft_transfer: TimeoutNow). */
static void move_leader(struct group *g, int idx)
{
	for (int attempt = 0; attempt < 10; attempt++) {
		static struct transfer t; /* raft may hold it until the callback */
		struct leader_is x = {g, idx, &t};
		struct replica *leader;

		CHECK(loop_run_until(&g->loop, has_leader, g, 20000));
		leader = group_leader(g);
		if (leader == &g->r[idx])
			return;
		memset(&t, 0, sizeof t);
		t.req.data = &t;
		if (raft_transfer(&leader->raft, &t.req, (raft_id)idx + 1, transfer_cb) != 0)
			continue;
		CHECK(loop_run_until(&g->loop, leader_is_or_done, &x, 20000));
		CHECK(loop_run_until(&g->loop, loop_flag_is_set, &t.done, 20000));
		if (group_leader(g) == &g->r[idx])
			return;
	}
	CHECK_MSG(false, "leadership did not move to replica %d", idx + 1);
}

static void note_stats(struct group *g)
{
	for (int i = 0; i < N_REP; i++) {
		struct rnet_stats st;
		if (g->r[i].plain)
			continue;
		rnet_get_stats(&g->r[i].sp.net, &st);
		test_note("replica %d (rnet, last run): in AE %" PRIu64 " AER %" PRIu64
			  " RV %" PRIu64 " RVR %" PRIu64 " IS %" PRIu64 " TN %" PRIu64
			  ", connects %" PRIu64 ", failures %" PRIu64 ", decode errors %" PRIu64,
			  i + 1, st.msgs_in[1], st.msgs_in[2], st.msgs_in[3], st.msgs_in[4],
			  st.msgs_in[5], st.msgs_in[6], st.connects, st.connect_failures,
			  st.decode_errors);
		CHECK_EQ_U64(st.decode_errors, 0);
	}
}

/* Three replicas on rnet: elect, 200 commands, the leader closed (others
 * re-elect and go on) and reopened from its directory. */
TEST(raft_group_over_rnet)
{
	static struct group g;
	static const bool plain[N_REP] = {false, false, false};
	struct replica *old;
	uint64_t t0 = uv_hrtime();

	group_begin(&g, "rnet-group", plain);
	for (int i = 0; i < N_REP; i++)
		replica_open(&g, &g.r[i]);
	CHECK(loop_run_until(&g.loop, has_leader, &g, 20000));
	test_note("leader %d after %.2f s", group_leader(&g)->idx + 1,
		  (double)(uv_hrtime() - t0) / 1e9);
	set_target(&g, 200);
	check_consistent(&g);
	test_note("200 applied everywhere after %.2f s (%u retried)",
		  (double)(uv_hrtime() - t0) / 1e9, g.load.n_failed);

	old = group_leader(&g);
	replica_close(old);
	CHECK(loop_run_until(&g.loop, replica_closed, old, 10000));
	CHECK(loop_run_until(&g.loop, has_leader, &g, 20000));
	CHECK(group_leader(&g) != old);
	set_target(&g, 300);
	test_note("leader %d closed; %d leads, 300 applied after %.2f s", old->idx + 1,
		  group_leader(&g)->idx + 1, (double)(uv_hrtime() - t0) / 1e9);

	replica_open(&g, old);
	CHECK(loop_run_until(&g.loop, all_open_caught_up, &g, 60000));
	check_consistent(&g);
	note_stats(&g);
	test_note("reopened replica caught up after %.2f s", (double)(uv_hrtime() - t0) / 1e9);
	group_end(&g);
}

/* Two replicas on rnet, one on plain raft_uv over transport.c: every
 * message type crosses between the two implementations, both ways. */
TEST(mixed_group_rnet_and_raft_uv)
{
	static struct group g;
	static const bool plain[N_REP] = {false, false, true};
	uint64_t t0 = uv_hrtime();
	struct rnet_stats st;

	group_begin(&g, "rnet-mixed", plain);
	g.threshold = 64;
	g.trailing = 16;
	for (int i = 0; i < N_REP; i++)
		replica_open(&g, &g.r[i]);
	CHECK(loop_run_until(&g.loop, has_leader, &g, 20000));
	set_target(&g, 200);
	check_consistent(&g);

	/* Leadership: rnet -> raft_uv (a TimeoutNow from rnet), then raft_uv
	 * leads rnet followers. */
	move_leader(&g, 0);
	move_leader(&g, 2);
	rnet_get_stats(&g.r[0].sp.net, &st);
	CHECK(st.msgs_out[RAFT_IO_TIMEOUT_NOW] >= 1);
	set_target(&g, 300);
	check_consistent(&g);
	test_note("raft_uv replica leads, 300 applied after %.2f s",
		  (double)(uv_hrtime() - t0) / 1e9);

	/* raft_uv leader -> rnet follower: InstallSnapshot. The load goes on in
	 * steps: raft snapshots only after an apply pass, and one pass may
	 * run while a snapshot of index ~300 is still being written; three
	 * passes leave a snapshot well past the closed replica's log. */
	replica_close(&g.r[0]);
	CHECK(loop_run_until(&g.loop, replica_closed, &g.r[0], 10000));
	set_target(&g, 400);
	set_target(&g, 500);
	set_target(&g, 600);
	replica_open(&g, &g.r[0]);
	CHECK(loop_run_until(&g.loop, all_open_caught_up, &g, 60000));
	check_consistent(&g);
	rnet_get_stats(&g.r[0].sp.net, &st);
	test_note("rnet replica 1 reopened: %" PRIu64 " InstallSnapshot in, %u restores",
		  st.msgs_in[RAFT_IO_INSTALL_SNAPSHOT], g.r[0].fsm.n_restores);
	CHECK(st.msgs_in[RAFT_IO_INSTALL_SNAPSHOT] >= 1);
	CHECK(g.r[0].fsm.n_restores >= 1);

	/* rnet leader -> raft_uv follower: InstallSnapshot the other way. */
	move_leader(&g, 1);
	replica_close(&g.r[2]);
	CHECK(loop_run_until(&g.loop, replica_closed, &g.r[2], 10000));
	set_target(&g, 700);
	set_target(&g, 800);
	set_target(&g, 900);
	replica_open(&g, &g.r[2]);
	CHECK(loop_run_until(&g.loop, all_open_caught_up, &g, 60000));
	check_consistent(&g);
	rnet_get_stats(&g.r[1].sp.net, &st);
	test_note("raft_uv replica 3 reopened: %u restores; rnet leader sent %" PRIu64
		  " InstallSnapshot, %" PRIu64 " TimeoutNow",
		  g.r[2].fsm.n_restores, st.msgs_out[RAFT_IO_INSTALL_SNAPSHOT],
		  st.msgs_out[RAFT_IO_TIMEOUT_NOW]);
	CHECK(g.r[2].fsm.n_restores >= 1);
	CHECK(st.msgs_out[RAFT_IO_INSTALL_SNAPSHOT] >= 1);
	note_stats(&g);
	test_note("900 applied everywhere after %.2f s (%u retried)",
		  (double)(uv_hrtime() - t0) / 1e9, g.load.n_failed);
	group_end(&g);
}

/* ---- (e) the cost of an idle group's network half ---- */

struct closed_flag {
	bool closed;
};

static void cost_close_cb(struct raft_io *io)
{
	((struct closed_flag *)io->data)->closed = true;
}

static void cost_tick(struct raft_io *io)
{
	(void)io;
}

static void cost_recv(struct raft_io *io, struct raft_message *m)
{
	(void)io;
	rwire_message_free(m);
}

/* rnet_init + io.init + io.start + io.close (to its callback) + release,
 * N times on one listener; raft_uv_init + io.init + close for comparison.
 * Notes only: no timing assertion. */
TEST(init_cost)
{
	uv_loop_t loop;
	struct listener *l;
	char errmsg[DOCRAFT_ERRMSG_SIZE], root[256], dir[300];
	static struct raft_uv_transport t;
	static struct rnet n;
	static struct raft_io uvio;
	static struct raft_uv_transport dummy;
	const int N = 300, M = 10;
	uint64_t t0, t_init = 0, t_all;

	start_loop(&loop);
	CHECK_OK_MSG(listener_open(&loop, "127.0.0.1:0", &l, errmsg), errmsg);
	t0 = uv_hrtime();
	for (int i = 0; i < N; i++) {
		struct closed_flag f = {false};
		char tablet[32];
		uint64_t a = uv_hrtime();

		snprintf(tablet, sizeof tablet, "t%d", i);
		CHECK_OK(transport_init(&t, l, tablet, errmsg));
		CHECK_OK(rnet_init(&n, &loop, &t, errmsg));
		n.io.data = &f;
		CHECK_OK(n.io.init(&n.io, 1, listener_address(l)));
		CHECK_OK(n.io.start(&n.io, 100, cost_tick, cost_recv));
		t_init += uv_hrtime() - a;
		n.io.close(&n.io, cost_close_cb);
		CHECK(loop_run_until(&loop, loop_flag_is_set, &f.closed, 5000));
		rnet_release(&n);
		transport_close(&t);
	}
	t_all = uv_hrtime() - t0;
	test_note("rnet: init + io.init + start %.1f us, with close to its callback and "
		  "release %.1f us (mean of %d)",
		  (double)t_init / N / 1e3, (double)t_all / N / 1e3, N);

	test_tmpdir_make(root, "rnet-cost");
	snprintf(dir, sizeof dir, "%s/uv", root);
	CHECK_OK(mkdir(dir, 0755));
	memset(&dummy, 0, sizeof dummy);
	dummy.init = dummy_init;
	dummy.listen = dummy_listen;
	dummy.connect = dummy_connect;
	dummy.close = dummy_close;
	t0 = uv_hrtime();
	for (int i = 0; i < M; i++) {
		struct closed_flag f = {false};
		CHECK_OK(raft_uv_init(&uvio, &loop, dir, &dummy));
		uvio.data = &f;
		CHECK_OK_MSG(uvio.init(&uvio, 1, "127.0.0.1:1"), uvio.errmsg);
		uvio.close(&uvio, cost_close_cb);
		CHECK(loop_run_until(&loop, loop_flag_is_set, &f.closed, 5000));
		raft_uv_close(&uvio);
	}
	test_note("raft_uv: raft_uv_init + io.init + close %.1f us (mean of %d)",
		  (double)(uv_hrtime() - t0) / M / 1e3, M);
	close_listener(&loop, l);
	CHECK_OK(loop_finish(&loop));
	test_tmpdir_remove(root);
}

TEST_MAIN(T(codec_round_trips_every_type), T(codec_bytes_are_raft_uv_bytes),
	  T(decoder_refuses_hostile_frames), T(decoder_cut_short_leaks_nothing),
	  T(rio_frees_what_rnet_decodes),
	  T(two_rnets_exchange_every_type), T(hostile_bytes_close_one_connection),
	  T(close_with_sends_pending), T(connection_that_dies_young_fails_its_sends),
	  T(refusing_peer_reconnects_and_bounds_its_queue),
	  T(silent_peer_bounds_the_write_backlog), T(raft_group_over_rnet),
	  T(mixed_group_rnet_and_raft_uv), T(init_cost))
