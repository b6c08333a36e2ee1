/* libFuzzer target: the connection preamble (listener_preamble_parse,
 * src/net/listener.c), the first bytes any peer sends to a server's port.
 *
 * Input: the byte stream of a new connection. Checks, beyond "no crash,
 * no leak, no UB":
 *  - read step by step as the listener reads (never more than *want bytes,
 *    want always growing and never past LISTENER_PREAMBLE_MAX), the outcome
 *    is the one of a single call on all the bytes;
 *  - a complete preamble re-encodes (listener_preamble_encode) to exactly
 *    the bytes it was read from. */
#include "fuzz.h"

#include "net/listener.h"

static bool same(const struct listener_preamble *a, const struct listener_preamble *b)
{
	return a->kind == b->kind && a->id == b->id && strcmp(a->tablet_id, b->tablet_id) == 0 &&
	       strcmp(a->address, b->address) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct listener_preamble step, whole;
	uint8_t enc[LISTENER_PREAMBLE_MAX];
	size_t have = 0, want = 0, want2 = 0;
	int rv = 0, rv2;

	/* As the listener reads: exactly want bytes at a time. */
	for (;;) {
		size_t before = want;
		rv = listener_preamble_parse(data, have, &want, &step);
		if (rv != 0)
			break;
		FUZZ_CHECK(want > have && want > before && want <= LISTENER_PREAMBLE_MAX);
		if (size < want)
			break;
		have = want;
	}

	/* At once. */
	rv2 = listener_preamble_parse(data, size, &want2, &whole);
	FUZZ_CHECK(rv2 == rv);
	if (rv == 0)
		FUZZ_CHECK(want2 > size && want2 == want);
	if (rv == 1) {
		size_t n;
		FUZZ_CHECK(want2 == want && want == have);
		FUZZ_CHECK(same(&step, &whole));
		n = listener_preamble_encode(enc, whole.kind, whole.tablet_id, whole.id,
					     whole.address);
		FUZZ_CHECK(n == want && memcmp(enc, data, n) == 0);
	}
	return 0;
}

static void fuzz_seeds(void)
{
	uint8_t b[LISTENER_PREAMBLE_MAX + 8];
	char addr[LISTENER_ADDRESS_MAX + 1], id[LISTENER_TABLET_ID_MAX + 1];
	size_t n;

	n = listener_preamble_encode(b, LISTENER_RAFT, "t-0001", 3, "127.0.0.3:9100");
	memcpy(b + n, "raftuv", 6); /* raft_uv's handshake follows */
	seed_write("raft", b, n + 6);
	seed_write("raft-truncated", b, n - 3);
	n = listener_preamble_encode(b, LISTENER_RPC, "", 0, NULL);
	seed_write("rpc", b, n);
	n = listener_preamble_encode(b, LISTENER_COPY, "0f4c2d1e9a8b7c6d", 0, NULL);
	seed_write("copy", b, n);
	memset(addr, 'a', LISTENER_ADDRESS_MAX);
	addr[LISTENER_ADDRESS_MAX] = '\0';
	memset(id, 'i', LISTENER_TABLET_ID_MAX);
	id[LISTENER_TABLET_ID_MAX] = '\0';
	n = listener_preamble_encode(b, LISTENER_RAFT, id, UINT64_MAX, addr);
	seed_write("raft-longest", b, n);
	b[6] = LISTENER_TABLET_ID_MAX + 1;
	seed_write("tablet-id-too-long", b, n);
}
