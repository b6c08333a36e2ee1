/* The table of the hostile tests: kv (k text primary key, v int) in NTAB
 * tablets (the includer defines NTAB), RF 3, through the routing client
 * C.client of ../lib/cluster.h, and what they check at the end of a
 * case. Static inline helpers for one .c file per test program; needs
 * docdb/key.h, docraft/docraft.h, proc.h, test.h and cluster.h first. */
#ifndef DOCRAFT_TESTS_HOSTILE_KV_H
#define DOCRAFT_TESTS_HOSTILE_KV_H

static inline void client_open(void)
{
	char err[DOCRAFT_ERRMSG_SIZE];
	docraft_client_options o;
	docraft_client_options_init(&o);
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
	docraft_table_options to = {.num_tablets = NTAB, .replication_factor = 3};
	CHECK_OK_MSG(docraft_table_create_cql(C.client,
					      "CREATE TABLE kv (k text, v int, PRIMARY KEY ((k)));",
					      &to),
		     docraft_errmsg());
}

static inline uint16_t hash_of(const char *k)
{
	struct pv pv = pv_str(k);
	return key_hash_components(&pv, 1);
}

/* A key of the form <prefix><n> whose hash is inside [start, end) (inside)
 * or outside it. */
static inline void key_for(char *out, size_t cap, const char *prefix, uint32_t start,
			   uint32_t end, bool inside)
{
	for (int n = 0; n < 100000; n++) {
		snprintf(out, cap, "%s%d", prefix, n);
		uint16_t h = hash_of(out);
		if ((h >= start && h < end) == inside)
			return;
	}
	CHECK_MSG(false, "no key found");
}

/* Returns the hybrid time the write applied at. */
static inline uint64_t put(const char *k, int v)
{
	docraft_value key = docraft_value_text(k), val = docraft_value_int(v);
	docraft_op *op = NULL;
	uint64_t ht = 0;
	CHECK_OK(docraft_op_insert(&key, 1, &op));
	CHECK_OK(docraft_op_column(op, "v", &val));
	CHECK_OK_MSG(docraft_write(C.client, "kv", &op, 1, -1, &ht), docraft_errmsg());
	docraft_op_free(op);
	return ht;
}

static inline void all_up(void)
{
	int st;
	CHECK_MSG(!proc_wait(&C.m.p, 0, &st), "the master exited");
	for (int k = 0; k < NT; k++)
		CHECK_MSG(!proc_wait(&C.t[k].p, 0, &st), "tserver %d exited", k + 1);
}

#endif
