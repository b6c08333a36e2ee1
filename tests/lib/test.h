/* A tiny TAP test runner. Each test executable lists its cases:
 *
 *   TEST(encodes_int32) { CHECK_EQ_INT(1, 1); }
 *   TEST_MAIN(T(encodes_int32), ...)
 *
 * A failed CHECK prints a diagnostic and ends that case (longjmp); the other
 * cases still run. Output is TAP ("ok N - name"), read by meson with
 * protocol: 'tap'. `./test_x name` runs one case. Cases run in order in one
 * process, so they must clean up after themselves (test_tmpdir_*). */
#ifndef DOCRAFT_TEST_H
#define DOCRAFT_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

#define TEST(name) static void name(void)
#define T(fn) {#fn, fn}
#define TEST_MAIN(...)                                                        \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		static const struct test_case cases_[] = {__VA_ARGS__};       \
		return test_run(cases_, sizeof cases_ / sizeof cases_[0], argc, argv); \
	}

/* Runs the cases named in argv[1..argc) (every case when none is named), in
 * their order in cases; 1 if one failed. */
int test_run(const struct test_case *cases, size_t n, int argc, char **argv);
_Noreturn void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void test_fail_mem(const char *file, int line, const char *what, const void *a, size_t alen,
		   const void *b, size_t blen);
/* Prints a "# ..." diagnostic line. */
void test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c))                                                     \
			test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #c); \
	} while (0)
#define CHECK_MSG(c, ...)                                                     \
	do {                                                                  \
		if (!(c))                                                     \
			test_fail(__FILE__, __LINE__, __VA_ARGS__);           \
	} while (0)
#define CHECK_EQ_INT(a, b)                                                    \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_)                                                 \
			test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
	} while (0)
#define CHECK_EQ_U64(a, b)                                                    \
	do {                                                                  \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);              \
		if (a_ != b_)                                                 \
			test_fail(__FILE__, __LINE__, "%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_); \
	} while (0)
#define CHECK_EQ_STR(a, b)                                                    \
	do {                                                                  \
		const char *a_ = (a), *b_ = (b);                              \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)          \
			test_fail(__FILE__, __LINE__, "%s == %s:\n--- got\n%s\n--- want\n%s", #a, #b, \
				  a_ ? a_ : "(null)", b_ ? b_ : "(null)");    \
	} while (0)
#define CHECK_EQ_MEM(a, alen, b, blen)                                        \
	do {                                                                  \
		size_t al_ = (alen), bl_ = (blen);                            \
		if (al_ != bl_ || memcmp((a), (b), al_) != 0)                 \
			test_fail_mem(__FILE__, __LINE__, #a " == " #b, (a), al_, (b), bl_); \
	} while (0)
/* rv is an int return code; on failure prints errmsg if given. */
#define CHECK_OK(rv)                                                          \
	do {                                                                  \
		int rv_ = (rv);                                               \
		if (rv_ != 0)                                                 \
			test_fail(__FILE__, __LINE__, "%s returned %d", #rv, rv_); \
	} while (0)
#define CHECK_OK_MSG(rv, errmsg)                                              \
	do {                                                                  \
		int rv_ = (rv);                                               \
		if (rv_ != 0)                                                 \
			test_fail(__FILE__, __LINE__, "%s returned %d: %s", #rv, rv_, (errmsg)); \
	} while (0)

/* Creates a fresh directory under $TMPDIR (or /tmp) into path (>= 256 bytes);
 * test_tmpdir_remove deletes it recursively. A dir still there when its case
 * ends (passed or failed) is removed by the runner. */
void test_tmpdir_make(char *path, const char *tag);
void test_tmpdir_remove(const char *path);

/* A "VmRSS" / "VmHWM" / ... field of /proc/<pid>/status in KiB (pid 0:
 * this process), or -1 if it cannot be read. */
long test_status_kib(int pid, const char *field);

/* A deterministic PRNG (xorshift64*) for randomized tests; the seed is
 * printed so a failure can be replayed with TEST_SEED=... */
uint64_t test_seed(void);
uint64_t test_rand(uint64_t *state);

#endif
