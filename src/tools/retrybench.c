/* docraft-retrybench: the apply cost of the retry table (src/tablet/retry.c)
 * alone, in memory: what fsm.c apply does for each request of an entry
 * (retry_applied, retry_record) and for each entry (retry_changes_reset,
 * retry_changes_finish), without the RocksDB write.
 *
 * Workloads, one request per entry, N requests in all:
 *
 *   inorder   C clients, each sending seqs 1, 2, 3, ... with min_running =
 *             seq (one request in flight per client): the common case.
 *   shuffled  one client with every seq 1..N in flight at once, decided in a
 *             random order; min_running is the smallest seq not decided yet,
 *             so the table holds nearly every seq decided so far and each new
 *             one lands at a random place among them.
 *   reversed  one client whose seqs are decided from N down to 1 with
 *             min_running 1: every new seq is below every held one.
 *
 * Prints ns per request (CLOCK_MONOTONIC over the whole loop) for each.
 * Usage: docraft-retrybench [--requests N] [--clients C] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hlc.h"
#include "tablet/entry.h"
#include "tablet/retry.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct run {
	struct retry_table t;
	struct retry_changes ch;
	uint64_t idx;
};

static void one(struct run *r, uint32_t client, uint64_t seq, uint64_t min_running)
{
	uint8_t cid[ENTRY_CLIENT_ID_LEN];
	uint64_t ht;
	memset(cid, 0, sizeof cid);
	memcpy(cid, &client, sizeof client);
	r->idx++;
	ht = ht_make(UINT64_C(1700000000000000) + r->idx, 0);
	retry_changes_reset(&r->ch, r->idx);
	if (!retry_applied(&r->t, cid, seq))
		retry_record(&r->t, cid, seq, min_running, ht, 0, &r->ch);
	retry_changes_finish(&r->ch);
}

static void report(const char *name, uint64_t n, uint64_t ns, const struct run *r)
{
	printf("%-9s %8llu requests  %8.0f ns/request  (%zu seqs held at the end)\n", name,
	       (unsigned long long)n, (double)ns / (double)n, r->t.nrecords);
}

static void begin(struct run *r)
{
	memset(r, 0, sizeof *r);
	retry_init(&r->t);
	retry_changes_init(&r->ch);
}

static void end(struct run *r)
{
	retry_free(&r->t);
	retry_changes_free(&r->ch);
}

int main(int argc, char **argv)
{
	uint64_t n = 100000, clients = 1000, rng = 42, t0;
	uint64_t *order;
	unsigned char *done;
	struct run r;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--requests") == 0)
			n = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--clients") == 0)
			clients = strtoull(argv[i + 1], NULL, 10);
	}
	if (n == 0 || clients == 0) {
		fprintf(stderr, "usage: docraft-retrybench [--requests N] [--clients C]\n");
		return 2;
	}

	begin(&r);
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t seq = 1 + i / clients;
		one(&r, (uint32_t)(i % clients), seq, seq);
	}
	report("inorder", n, now_ns() - t0, &r);
	end(&r);

	order = malloc(n * sizeof *order);
	done = calloc(n + 2, 1);
	if (order == NULL || done == NULL)
		return 1;
	for (uint64_t i = 0; i < n; i++)
		order[i] = i + 1;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = rng_next(&rng) % (i + 1), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	begin(&r);
	t0 = now_ns();
	{
		uint64_t low = 1; /* the smallest seq not decided yet */
		for (uint64_t i = 0; i < n; i++) {
			one(&r, 0, order[i], low);
			done[order[i]] = 1;
			while (low <= n && done[low])
				low++;
		}
	}
	report("shuffled", n, now_ns() - t0, &r);
	end(&r);

	begin(&r);
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		one(&r, 0, n - i, 1);
	report("reversed", n, now_ns() - t0, &r);
	end(&r);
	free(order);
	free(done);
	return 0;
}
