#include "test.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static jmp_buf fail_jmp;

/* Temp dirs made during the running case, removed when it ends whether it
 * passed or failed (a failed CHECK longjmps past the case's own cleanup). */
#define MAX_TMPDIRS 64
static char tmpdirs[MAX_TMPDIRS][256];
static pid_t tmpdirs_owner;

static void tmpdirs_sweep(void);

static void print_prefixed(const char *s)
{
	fputs("# ", stdout);
	for (; *s; s++) {
		fputc(*s, stdout);
		if (*s == '\n')
			fputs("# ", stdout);
	}
	fputc('\n', stdout);
}

/* Every line of the note is a TAP comment (a multi-line note, e.g. a
 * command's output, must not end the TAP stream early). */
void test_note(const char *fmt, ...)
{
	char msg[65536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	print_prefixed(msg);
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[65536];
	va_list ap;
	int n = snprintf(msg, sizeof msg, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	print_prefixed(msg);
	fflush(stdout);
	longjmp(fail_jmp, 1);
}

static void hex(const char *label, const void *p, size_t n)
{
	const unsigned char *b = p;
	printf("#   %s (%zu):", label, n);
	for (size_t i = 0; i < n; i++)
		printf(" %02X", b[i]);
	printf("\n");
}

void test_fail_mem(const char *file, int line, const char *what, const void *a, size_t alen,
		   const void *b, size_t blen)
{
	printf("# %s:%d: %s differ\n", file, line, what);
	hex("got ", a, alen);
	hex("want", b, blen);
	fflush(stdout);
	longjmp(fail_jmp, 1);
}

/* Whether case name is selected: no names on the command line, or one of
 * argv[1..argc) is it. */
static bool selected(const char *name, int argc, char **argv)
{
	if (argc <= 1)
		return true;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int test_run(const struct test_case *cases, size_t n, int argc, char **argv)
{
	volatile size_t failed = 0;
	size_t planned = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n; i++)
		if (selected(cases[i].name, argc, argv))
			planned++;
	printf("1..%zu\n", planned);
	volatile size_t num = 0;
	for (size_t i = 0; i < n; i++) {
		if (!selected(cases[i].name, argc, argv))
			continue;
		num++;
		tmpdirs_owner = getpid();
		if (setjmp(fail_jmp) == 0) {
			cases[i].fn();
			printf("ok %zu - %s\n", (size_t)num, cases[i].name);
		} else {
			printf("not ok %zu - %s\n", (size_t)num, cases[i].name);
			failed++;
		}
		tmpdirs_sweep();
		fflush(stdout);
	}
	return failed ? 1 : 0;
}

void test_tmpdir_make(char *path, const char *tag)
{
	const char *base = getenv("TMPDIR");
	snprintf(path, 256, "%s/docraft-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (mkdtemp(path) == NULL) {
		perror("mkdtemp");
		abort();
	}
	for (int i = 0; i < MAX_TMPDIRS; i++)
		if (tmpdirs[i][0] == '\0') {
			snprintf(tmpdirs[i], sizeof tmpdirs[i], "%s", path);
			break;
		}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void test_tmpdir_remove(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < MAX_TMPDIRS; i++)
		if (strcmp(tmpdirs[i], path) == 0)
			tmpdirs[i][0] = '\0';
}

/* Only the runner's own process sweeps (children of fork inherit the list). */
static void tmpdirs_sweep(void)
{
	if (getpid() != tmpdirs_owner)
		return;
	for (int i = 0; i < MAX_TMPDIRS; i++)
		if (tmpdirs[i][0] != '\0') {
			nftw(tmpdirs[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
			tmpdirs[i][0] = '\0';
		}
}

uint64_t test_seed(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (seed == 0)
		seed = 1;
	printf("# seed %" PRIu64 " (replay with TEST_SEED=%" PRIu64 ")\n", seed, seed);
	return seed;
}

uint64_t test_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}

long test_status_kib(int pid, const char *field)
{
	char path[64], line[256];
	long kib = -1;
	size_t n = strlen(field);
	FILE *f;
	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/status");
	else
		snprintf(path, sizeof path, "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			kib = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}
