/* The clock-skew shim (skew.c, libdocraft_skew.so): programs run under
 * LD_PRELOAD with DOCRAFT_SKEW_FILE see CLOCK_REALTIME, CLOCK_REALTIME_COARSE,
 * gettimeofday and time moved by the file's offset, CLOCK_MONOTONIC not.
 *
 * The shim path comes from $DOCRAFT_SKEW_SO (set by meson). Each case runs
 * this executable again as a child ("--skew-child ...") under LD_PRELOAD; the
 * child compares the wrapped calls with the raw system calls (which the shim
 * cannot see) and exits non-zero with a message when they disagree. One case
 * runs `date +%s` under the shim. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define CHILD_FLAG "--skew-child"

/* ---- the child: runs with the shim preloaded -------------------------------------- */

static int64_t raw_ms(clockid_t id)
{
	struct timespec ts;
	if (syscall(SYS_clock_gettime, id, &ts) != 0) {
		perror("raw clock_gettime");
		exit(3);
	}
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wrapped_ms(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0) {
		perror("clock_gettime");
		exit(3);
	}
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int child_failures;

static void child_expect(const char *what, int64_t got, int64_t want, int64_t slack)
{
	if (got < want - slack || got > want + slack) {
		fprintf(stderr, "skew child: %s: offset %" PRId64 " ms, expected %" PRId64 " ms (+-%" PRId64 ")\n",
			what, got, want, slack);
		child_failures++;
	}
}

/* Every wrapped call against the raw clocks, expecting `want` ms. */
static void child_check_all(int64_t want)
{
	struct timeval tv;
	int64_t raw;

	raw = raw_ms(CLOCK_REALTIME);
	child_expect("CLOCK_REALTIME", wrapped_ms(CLOCK_REALTIME) - raw, want, 200);
	raw = raw_ms(CLOCK_REALTIME_COARSE);
	child_expect("CLOCK_REALTIME_COARSE", wrapped_ms(CLOCK_REALTIME_COARSE) - raw, want, 200);
	raw = raw_ms(CLOCK_REALTIME);
	if (gettimeofday(&tv, NULL) != 0) {
		perror("gettimeofday");
		exit(3);
	}
	child_expect("gettimeofday", (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 - raw, want, 200);
	raw = raw_ms(CLOCK_REALTIME);
	child_expect("time", (int64_t)time(NULL) * 1000 - raw, want, 1200);
	raw = raw_ms(CLOCK_MONOTONIC);
	child_expect("CLOCK_MONOTONIC (never skewed)", wrapped_ms(CLOCK_MONOTONIC) - raw, 0, 200);
}

static void write_file(const char *path, const char *content)
{
	char tmp[4096];
	FILE *f;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL || fputs(content, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(tmp);
		exit(3);
	}
}

/* argv: --skew-child check MS | --skew-child reread MS1 CONTENT2 MS2 */
static int child_main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[2], "check") == 0) {
		child_check_all(strtoll(argv[3], NULL, 10));
	} else if (argc == 6 && strcmp(argv[2], "reread") == 0) {
		const char *file = getenv("DOCRAFT_SKEW_FILE");
		struct timespec pause = {0, 250 * 1000000L};
		if (file == NULL) {
			fprintf(stderr, "skew child: no DOCRAFT_SKEW_FILE\n");
			return 3;
		}
		child_check_all(strtoll(argv[3], NULL, 10));
		write_file(file, argv[4]);
		nanosleep(&pause, NULL); /* > the 100 ms re-read period */
		child_check_all(strtoll(argv[5], NULL, 10));
	} else {
		fprintf(stderr, "skew child: bad arguments\n");
		return 3;
	}
	return child_failures == 0 ? 0 : 1;
}

/* ---- the parent: the test cases ----------------------------------------------------- */

static const char *shim(void)
{
	const char *so = getenv("DOCRAFT_SKEW_SO");
	CHECK_MSG(so != NULL && so[0] != '\0', "DOCRAFT_SKEW_SO is not set (path of libdocraft_skew.so)");
	CHECK_MSG(access(so, R_OK) == 0, "%s: %s", so, strerror(errno));
	return so;
}

/* Runs this executable as a child under the shim; skew_file NULL: no variable. */
static int run_child(const char *skew_file, const char *const *args, size_t nargs)
{
	char self[4096], *argv[16];
	ssize_t n;
	pid_t pid;
	int status;
	size_t i;

	n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = '\0';
	CHECK(nargs + 3 <= sizeof argv / sizeof argv[0]);
	argv[0] = self;
	argv[1] = (char *)CHILD_FLAG;
	for (i = 0; i < nargs; i++)
		argv[2 + i] = (char *)args[i];
	argv[2 + nargs] = NULL;
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", shim(), 1);
		if (skew_file != NULL)
			setenv("DOCRAFT_SKEW_FILE", skew_file, 1);
		else
			unsetenv("DOCRAFT_SKEW_FILE");
		execv(self, argv);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void skew_path(char *out, size_t size, const char *dir)
{
	snprintf(out, size, "%s/skew_ms", dir);
}

TEST(plus_one_hour)
{
	char dir[512], file[600];
	const char *args[] = {"check", "3600000"};
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	write_file(file, "3600000\n");
	CHECK_EQ_INT(run_child(file, args, 2), 0);
	test_tmpdir_remove(dir);
}

TEST(date_moves_one_hour)
{
	char dir[512], file[600], cmd[2048], line[64] = "";
	const char *so = shim();
	long long shown, now;
	FILE *p;
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	write_file(file, "3600000");
	snprintf(cmd, sizeof cmd, "env LD_PRELOAD='%s' DOCRAFT_SKEW_FILE='%s' date +%%s", so, file);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	CHECK(fgets(line, sizeof line, p) != NULL);
	CHECK_EQ_INT(pclose(p), 0);
	shown = strtoll(line, NULL, 10);
	now = (long long)(raw_ms(CLOCK_REALTIME) / 1000);
	test_note("date +%%s under the shim: %lld, real: %lld", shown, now);
	CHECK_MSG(shown - now >= 3595 && shown - now <= 3605, "date is %lld s off, not ~3600",
		  shown - now);
	test_tmpdir_remove(dir);
}

TEST(negative_offset)
{
	char dir[512], file[600];
	const char *args[] = {"check", "-5000"};
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	write_file(file, " -5000 \n");
	CHECK_EQ_INT(run_child(file, args, 2), 0);
	test_tmpdir_remove(dir);
}

TEST(missing_file_is_zero)
{
	char dir[512], file[600];
	const char *args[] = {"check", "0"};
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	CHECK_EQ_INT(run_child(file, args, 2), 0);
	CHECK_EQ_INT(run_child(NULL, args, 2), 0); /* no DOCRAFT_SKEW_FILE at all */
	test_tmpdir_remove(dir);
}

TEST(garbage_is_zero)
{
	char dir[512], file[600];
	const char *args[] = {"check", "0"};
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	write_file(file, "12abc\n");
	CHECK_EQ_INT(run_child(file, args, 2), 0);
	test_tmpdir_remove(dir);
}

TEST(file_is_reread)
{
	char dir[512], file[600];
	const char *up[] = {"reread", "1000", "7000\n", "7000"};
	const char *gone[] = {"reread", "7000", "", "0"};
	test_tmpdir_make(dir, "skew");
	skew_path(file, sizeof file, dir);
	write_file(file, "1000\n");
	CHECK_EQ_INT(run_child(file, up, 4), 0);
	CHECK_EQ_INT(run_child(file, gone, 4), 0); /* an empty file: back to 0 */
	test_tmpdir_remove(dir);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		T(plus_one_hour),        T(date_moves_one_hour), T(negative_offset),
		T(missing_file_is_zero), T(garbage_is_zero),     T(file_is_reread),
	};
	if (argc >= 2 && strcmp(argv[1], CHILD_FLAG) == 0)
		return child_main(argc, argv);
	return test_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
