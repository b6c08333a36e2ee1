/* libFuzzer target: a tablet's Raft entry body as every replica decodes it
 * before applying it (src/tablet/entry.c), with the DocDB write batches
 * (src/docdb/batch.c) and condition blobs (src/docdb/condition.c) inside.
 *
 * Input: the entry bytes. Checks, beyond "no crash, no leak, no UB":
 *  - every request entry_next returns lies inside the input, its batch
 *    iterates to the end with exactly the pairs batch_validate counted, and
 *    its condition blob decodes (condition_decode) to the conditions
 *    condition_validate accepted, each DocKey well-formed;
 *  - a Redis request's commands (version 3) iterate to exactly the count
 *    entry_redis_validate gave, every word inside the input;
 *  - a version-2 or -3 entry that decodes re-encodes (entry_begin_v,
 *    entry_add_request_if, entry_add_redis) to exactly its bytes before
 *    the padding;
 *  - errors come with a message. */
#include "fuzz.h"

#include "common/arena.h"
#include "docdb/batch.h"
#include "docdb/condition.h"
#include "docdb/key.h"
#include "docdb/value.h"
#include "docraft/error.h"
#include "tablet/entry.h"

static bool inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
	return n == 0 || (p >= data && p + n <= data + size);
}

static void check_request(const struct entry_request *q, const uint8_t *data, size_t size)
{
	struct batch_iter it;
	const uint8_t *k, *v;
	size_t kl, vl;
	uint32_t count = 0, seen = 0;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (q->kind == ENTRY_KIND_REDIS) {
		struct entry_redis_iter ri;
		const struct resp_arg *argv;
		uint32_t argc, ncmds = 0;
		FUZZ_CHECK(inside(q->redis, q->redis_len, data, size) && q->batch_len == 0);
		entry_redis_iter_init(&ri, q->redis, q->redis_len);
		while (entry_redis_iter_next(&ri, &argc, &argv)) {
			FUZZ_CHECK(argc >= 1);
			for (uint32_t i = 0; i < argc; i++)
				FUZZ_CHECK(inside((const uint8_t *)argv[i].p, argv[i].n, q->redis,
						  q->redis_len));
			ncmds++;
		}
		entry_redis_iter_free(&ri);
		FUZZ_CHECK(ncmds == q->redis_n && ncmds >= 1);
		return;
	}
	FUZZ_CHECK(inside(q->batch, q->batch_len, data, size));
	FUZZ_CHECK(batch_validate(q->batch, q->batch_len, &count, errmsg) == 0);
	batch_iter_init(&it, q->batch, q->batch_len);
	while ((rv = batch_next(&it, &k, &kl, &v, &vl)) == 1) {
		FUZZ_CHECK(kl <= BATCH_MAX_KEY && vl <= BATCH_MAX_VALUE);
		FUZZ_CHECK(inside(k, kl, q->batch, q->batch_len) &&
			   inside(v, vl, q->batch, q->batch_len));
		seen++;
	}
	FUZZ_CHECK(rv == 0 && seen == count);
	if (q->cond != NULL) {
		struct arena a = ARENA_INIT;
		struct condition *c;
		size_t n;
		FUZZ_CHECK(inside(q->cond, q->cond_len, data, size));
		FUZZ_CHECK(condition_decode(q->cond, q->cond_len, &a, &c, &n, errmsg) == 0);
		FUZZ_CHECK(n >= 1 && n <= CONDITION_MAX);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(dockey_prefix_len(c[i].dockey, c[i].dockey_len) ==
				   c[i].dockey_len);
			FUZZ_CHECK(c[i].column_id >= 0);
			FUZZ_CHECK(!c[i].has_value || c[i].value.type != PV_NULL);
		}
		arena_free(&a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct entry_reader r;
	struct entry_request q;
	struct buf enc = BUF_INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE] = "";
	int rv;

	if (entry_open(&r, data, size, errmsg) != 0) {
		FUZZ_CHECK(errmsg[0] != '\0');
		return 0;
	}
	entry_begin_v(&enc, r.ht, r.n_requests, r.version >= 2 ? r.version : 2);
	while ((rv = entry_next(&r, &q, errmsg)) == 1) {
		check_request(&q, data, size);
		if (q.kind == ENTRY_KIND_REDIS)
			entry_add_redis(&enc, q.client_id, q.seq, q.min_running, q.redis,
					q.redis_len);
		else
			entry_add_request_if(&enc, q.client_id, q.seq, q.min_running, q.cond,
					     q.cond_len, q.batch, q.batch_len);
		/* Bounded work: a request costs at least its fixed fields. */
		FUZZ_CHECK(r.read <= size / (ENTRY_CLIENT_ID_LEN + 16));
	}
	if (rv < 0) {
		FUZZ_CHECK(rv == -DOCRAFT_ECORRUPT && errmsg[0] != '\0');
	} else {
		FUZZ_CHECK(rv == 0 && r.read == r.n_requests);
		if (r.version >= 2) {
			FUZZ_CHECK(enc.len <= size && size - enc.len < 8);
			FUZZ_CHECK(memcmp(enc.data, data, enc.len) == 0);
		}
	}
	buf_free(&enc);
	return 0;
}

/* A batch of a few real pairs: row key 'G' hash ... with a liveness column
 * and a string column, and a row tombstone. */
static void seed_batch(struct batch *b, int64_t k)
{
	struct pv key = pv_int64(k);
	struct dockey dk = {true, key_hash_components(&key, 1), 1, 0, &key, NULL};
	struct buf kb = BUF_INIT, vb = BUF_INIT;
	struct pv col;
	struct docvalue v;

	dockey_append(&kb, &dk);
	col = pv_liveness();
	key_append_pv(&kb, &col);
	v = docvalue_of(pv_null());
	value_append(&vb, &v);
	batch_put(b, kb.data, kb.len, vb.data, vb.len);
	buf_reset(&kb);
	buf_reset(&vb);
	dockey_append(&kb, &dk);
	col = pv_column(3);
	key_append_pv(&kb, &col);
	v = docvalue_of(pv_str("hello"));
	v.has_ttl = true;
	v.ttl_ms = 60000;
	value_append(&vb, &v);
	batch_put(b, kb.data, kb.len, vb.data, vb.len);
	buf_reset(&kb);
	buf_reset(&vb);
	dockey_append(&kb, &dk);
	v = docvalue_kind(VAL_TOMBSTONE);
	value_append(&vb, &v);
	batch_put(b, kb.data, kb.len, vb.data, vb.len);
	buf_free(&kb);
	buf_free(&vb);
}

static void fuzz_seeds(void)
{
	uint8_t client[ENTRY_CLIENT_ID_LEN];
	struct batch b1, b2;
	struct buf e = BUF_INIT, cond = BUF_INIT, dk = BUF_INIT;
	struct pv key = pv_int64(7);
	struct dockey d = {true, key_hash_components(&key, 1), 1, 0, &key, NULL};
	struct condition c[2];

	memset(client, 0xab, sizeof client);
	batch_init(&b1);
	batch_init(&b2);
	seed_batch(&b1, 7);
	seed_batch(&b2, -1);

	entry_begin(&e, 0x123456789abcull, 2);
	entry_add_request(&e, client, 5, 3, b1.data.data, b1.data.len);
	entry_add_request(&e, client, 6, 3, b2.data.data, b2.data.len);
	entry_finish(&e);
	seed_buf("two-requests", &e);

	dockey_append(&dk, &d);
	memset(c, 0, sizeof c);
	c[0].dockey = dk.data;
	c[0].dockey_len = dk.len;
	c[0].column_id = 3;
	c[0].has_value = true;
	c[0].value = pv_str("hello");
	c[1] = c[0];
	c[1].has_value = false;
	condition_encode(&cond, c, 2);
	buf_reset(&e);
	entry_begin(&e, 42, 1);
	entry_add_request_if(&e, client, 9, 9, cond.data, cond.len, b1.data.data, b1.data.len);
	entry_finish(&e);
	seed_buf("conditional", &e);
	seed_write("conditional-truncated", e.data, e.len - 12);

	/* Version 1: no condition field. */
	buf_reset(&e);
	entry_begin(&e, 1, 1);
	e.data[0] = 1;
	buf_append(&e, client, sizeof client);
	buf_append_be64(&e, 1);
	buf_append_be64(&e, 1);
	buf_append_be32(&e, (uint32_t)b2.data.len);
	buf_append(&e, b2.data.data, b2.data.len);
	seed_buf("version-1", &e);

	buf_reset(&e);
	entry_begin(&e, 1, 0);
	entry_finish(&e);
	seed_buf("empty", &e);

	/* Version 3: two Redis requests (SET, then INCR and GET). */
	{
		struct buf cmds = BUF_INIT;
		entry_redis_begin(&cmds, 1);
		entry_redis_command(&cmds, 3);
		entry_redis_arg(&cmds, "set", 3);
		entry_redis_arg(&cmds, "k", 1);
		entry_redis_arg(&cmds, "v", 1);
		buf_reset(&e);
		entry_begin_v(&e, 77, 2, ENTRY_VERSION);
		entry_add_redis(&e, client, 10, 10, cmds.data, cmds.len);
		buf_reset(&cmds);
		entry_redis_begin(&cmds, 2);
		entry_redis_command(&cmds, 2);
		entry_redis_arg(&cmds, "incr", 4);
		entry_redis_arg(&cmds, "n", 1);
		entry_redis_command(&cmds, 2);
		entry_redis_arg(&cmds, "get", 3);
		entry_redis_arg(&cmds, "k", 1);
		entry_add_redis(&e, client, 11, 10, cmds.data, cmds.len);
		entry_finish(&e);
		seed_buf("redis", &e);
		/* Version 3 with a batch and a conditional entry. */
		buf_reset(&e);
		entry_begin_v(&e, 78, 1, ENTRY_VERSION);
		entry_add_request(&e, client, 12, 12, b1.data.data, b1.data.len);
		entry_finish(&e);
		seed_buf("v3-batch", &e);
		buf_reset(&e);
		entry_begin_v(&e, 79, 1, ENTRY_VERSION);
		entry_add_request_if(&e, client, 13, 13, cond.data, cond.len, b1.data.data,
				     b1.data.len);
		entry_finish(&e);
		seed_buf("v3-conditional", &e);
		buf_free(&cmds);
	}

	buf_free(&e);
	buf_free(&cond);
	buf_free(&dk);
	batch_free(&b1);
	batch_free(&b2);
}
