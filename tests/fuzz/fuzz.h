/* What every libFuzzer target of tests/fuzz shares.
 *
 * A target file defines LLVMFuzzerTestOneInput and
 *
 *   static void fuzz_seeds(void);
 *
 * which calls seed_write(name, bytes, len) for each seed: valid encodings
 * made with the real encoders (they let the fuzzer start deep inside the
 * decoder), plus a few broken ones. run.sh writes them into the corpus by
 * running the target binary once with FUZZ_WRITE_SEEDS=<dir> (see
 * LLVMFuzzerInitialize below), so seeds always follow the encoders.
 *
 * FUZZ_CHECK(c) aborts (a crash libFuzzer records) when an invariant of the
 * decoder under test does not hold. Include this header in exactly one file
 * per target. */
#ifndef DOCRAFT_TESTS_FUZZ_H
#define DOCRAFT_TESTS_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(c)                                                                    \
	do {                                                                             \
		if (!(c)) {                                                              \
			fprintf(stderr, "%s: check failed: %s (line %d)\n", __FILE__, #c, \
				__LINE__);                                               \
			abort();                                                         \
		}                                                                        \
	} while (0)

static const char *seed_dir;

/* Writes one seed file <seed_dir>/seed-<name>. */
static void seed_write(const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;
	snprintf(path, sizeof path, "%s/seed-%s", seed_dir, name);
	f = fopen(path, "wb");
	if (f == NULL || (n > 0 && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

static void seed_buf(const char *name, const struct buf *b)
{
	seed_write(name, b->data, b->len);
}

static void fuzz_seeds(void);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	seed_dir = getenv("FUZZ_WRITE_SEEDS");
	if (seed_dir != NULL) {
		fuzz_seeds();
		exit(0);
	}
	return 0;
}

#endif
