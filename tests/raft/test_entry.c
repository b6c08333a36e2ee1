/* Raft entry encoding: round trip and hostile input. */
#include <stdlib.h>
#include <string.h>

#include "docdb/batch.h"
#include "tablet/entry.h"
#include "test.h"

static void make(struct buf *out, struct batch *b1, struct batch *b2)
{
	uint8_t c1[16] = {1}, c2[16] = {2};
	batch_init(b1);
	batch_init(b2);
	batch_put(b1, "k1", 2, "v1", 2);
	batch_put(b2, "k2", 2, "v22", 3);
	batch_put(b2, "k3", 2, "", 0);
	entry_begin(out, 12345, 2);
	entry_add_request(out, c1, 7, 5, b1->data.data, b1->data.len);
	entry_add_request(out, c2, 9, 9, b2->data.data, b2->data.len);
	entry_finish(out);
}

TEST(round_trip)
{
	struct buf e = BUF_INIT;
	struct batch b1, b2;
	struct entry_reader r;
	struct entry_request q;
	char err[DOCRAFT_ERRMSG_SIZE];
	make(&e, &b1, &b2);
	CHECK_OK(entry_open(&r, e.data, e.len, err));
	CHECK_EQ_U64(r.ht, 12345);
	CHECK_EQ_INT(r.n_requests, 2);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_INT(q.client_id[0], 1);
	CHECK_EQ_U64(q.seq, 7);
	CHECK_EQ_U64(q.min_running, 5);
	CHECK_EQ_MEM(q.batch, q.batch_len, b1.data.data, b1.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 1);
	CHECK_EQ_U64(q.seq, 9);
	CHECK_EQ_MEM(q.batch, q.batch_len, b2.data.data, b2.data.len);
	CHECK_EQ_INT(entry_next(&r, &q, err), 0);
	CHECK_EQ_INT(e.len % 8, 0);
	/* Up to 7 zero bytes of padding are accepted; non-zero or 8 are not. */
	static const struct {
		const char *tail;
		size_t n;
		int last;
	} cases[] = {{"\0\0\0", 3, 0}, {"\0\0\0\0\0\0\0", 7, 0},
		     {"\0\0\0\0\0\0\0\0", 8, -DOCRAFT_ECORRUPT}, {"\0\1", 2, -DOCRAFT_ECORRUPT}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct buf p = BUF_INIT;
		buf_append(&p, e.data, e.len);
		buf_append(&p, cases[c].tail, cases[c].n);
		CHECK_OK(entry_open(&r, p.data, p.len, err));
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(entry_next(&r, &q, err), 1);
		CHECK_EQ_INT(entry_next(&r, &q, err), cases[c].last);
		buf_free(&p);
	}
	buf_free(&e);
	batch_free(&b1);
	batch_free(&b2);
}

/* Every prefix and every single-byte corruption decodes or fails cleanly. */
TEST(hostile_input)
{
	struct buf e = BUF_INIT;
	struct batch b1, b2;
	char err[DOCRAFT_ERRMSG_SIZE];
	make(&e, &b1, &b2);
	for (size_t n = 0; n < e.len; n++) {
		struct entry_reader r;
		struct entry_request q;
		int rv = 0;
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, e.data, n);
		if (entry_open(&r, copy, n, err) == 0)
			while ((rv = entry_next(&r, &q, err)) == 1)
				;
		CHECK_MSG(n < ENTRY_HEADER_SIZE || rv == -DOCRAFT_ECORRUPT, "prefix %zu: %d", n, rv);
		free(copy);
	}
	for (size_t i = 0; i < e.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			struct entry_reader r;
			struct entry_request q;
			uint8_t *copy = malloc(e.len);
			memcpy(copy, e.data, e.len);
			copy[i] ^= (uint8_t)(1 << bit);
			if (entry_open(&r, copy, e.len, err) == 0)
				while (entry_next(&r, &q, err) == 1)
					;
			free(copy);
		}
	buf_free(&e);
	batch_free(&b1);
	batch_free(&b2);
}

TEST_MAIN(T(round_trip), T(hostile_input))
