/* libFuzzer target: the paging state of a scan (reader_paging_decode,
 * src/docdb/reader.c), which a client sends back to resume a scan.
 *
 * Input: the paging state bytes. Checks, beyond "no crash, no leak, no UB":
 * a state that decodes holds exactly one well-formed DocKey (dockey_decode
 * reads it to its end) and is rebuilt byte for byte from its read time and
 * DocKey, as reader_scan writes it; one that does not has a message. */
#include "fuzz.h"

#include "common/arena.h"
#include "docdb/key.h"
#include "docdb/reader.h"
#include "docraft/error.h"

#define PAGING_V1 0x01 /* reader.c */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	const uint8_t *dk, *p;
	size_t dl;
	uint64_t ht;
	struct arena a = ARENA_INIT;
	struct dockey k;
	struct buf b = BUF_INIT;

	if (reader_paging_decode(data, size, &ht, &dk, &dl, errmsg) != 0) {
		FUZZ_CHECK(errmsg[0] != '\0');
		return 0;
	}
	FUZZ_CHECK(dl > 0 && dk >= data && dk + dl == data + size);
	p = dk;
	FUZZ_CHECK(dockey_decode(&p, dk + dl, &k, &a) == 0 && p == dk + dl);
	buf_push(&b, PAGING_V1);
	buf_append_be64(&b, ht);
	dockey_append(&b, &k);
	FUZZ_CHECK(b.len == size && memcmp(b.data, data, size) == 0);
	buf_free(&b);
	arena_free(&a);
	return 0;
}

static void seed_state(const char *name, uint64_t ht, const struct dockey *k)
{
	struct buf b = BUF_INIT;
	buf_push(&b, PAGING_V1);
	buf_append_be64(&b, ht);
	dockey_append(&b, k);
	seed_buf(name, &b);
	b.data[0] = 2;
	seed_write("bad-version", b.data, b.len);
	seed_write("truncated", b.data, b.len - 1);
	buf_free(&b);
}

static void fuzz_seeds(void)
{
	struct pv h[2] = {pv_int32(12), pv_str("user")};
	struct pv r[2] = {pv_desc(pv_timestamp(1700000000000000)), pv_double(0.5)};
	struct dockey hashed = {true, key_hash_components(h, 2), 2, 2, h, r};
	struct dockey range_only = {false, 0, 0, 1, NULL, r};
	seed_state("range-only", 1, &range_only);
	seed_state("hashed", 0x5f3e000000000ull, &hashed);
}
