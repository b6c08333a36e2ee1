/* The shared test helpers themselves: wait_for (wait.h), proc_find_exe and
 * proc_on_exit (proc.h). No timing assertions: only what was called and
 * returned. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "test.h"
#include "wait.h"

struct counter {
	int calls;
	int true_from; /* the call (1-based) from which cond holds; 0: never */
};

static bool count_cond(void *arg)
{
	struct counter *c = arg;
	c->calls++;
	return c->true_from > 0 && c->calls >= c->true_from;
}

TEST(wait_for_true_at_once_calls_once)
{
	struct counter c = {0, 1};
	CHECK(wait_for(count_cond, &c, 10000));
	CHECK_EQ_INT(c.calls, 1);
}

TEST(wait_for_polls_until_it_holds)
{
	struct counter c = {0, 4};
	CHECK(wait_for(count_cond, &c, 60000));
	CHECK_EQ_INT(c.calls, 4);
}

TEST(wait_for_false_after_the_timeout)
{
	struct counter c = {0, 0};
	CHECK(!wait_for(count_cond, &c, 50));
	CHECK_MSG(c.calls >= 2, "cond called %d times: not again at the deadline", c.calls);
}

TEST(wait_for_zero_timeout_calls_once)
{
	struct counter c = {0, 0};
	CHECK(!wait_for(count_cond, &c, 0));
	CHECK_EQ_INT(c.calls, 1);
}

TEST(find_exe_from_env)
{
	char out[256];
	CHECK_OK(setenv("DOCRAFT_TEST_EXE", "/bin/sh", 1));
	CHECK_OK(proc_find_exe(out, sizeof out, "DOCRAFT_TEST_EXE", "nope/nope"));
	CHECK_EQ_STR(out, "/bin/sh");
	CHECK_OK(unsetenv("DOCRAFT_TEST_EXE"));
}

TEST(find_exe_under_the_build_dir)
{
	char out[4096];
	/* This program is <build>/tests/lib/test_lib. */
	CHECK_OK(proc_find_exe(out, sizeof out, "DOCRAFT_TEST_EXE_UNSET", "tests/lib/test_lib"));
	CHECK_MSG(strstr(out, "/../../tests/lib/test_lib") != NULL, "%s", out);
	CHECK_EQ_INT(proc_find_exe(out, sizeof out, "DOCRAFT_TEST_EXE_UNSET", "no/such/program"),
		     -1);
	CHECK_MSG(strstr(out, "/../../no/such/program") != NULL, "%s", out);
}

static void exit_44(void)
{
	_exit(44);
}

static void signal_42(int sig)
{
	(void)sig;
	_exit(42);
}

static void signal_43(int sig)
{
	(void)sig;
	_exit(43);
}

/* Runs fn in a child; its exit status. */
static int in_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(1);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st), "child status 0x%x", st);
	return WEXITSTATUS(st);
}

static void exits(void)
{
	proc_on_exit(exit_44, signal_42);
	exit(0);
}

static void gets_sigterm(void)
{
	proc_on_exit(exit_44, signal_42);
	proc_on_exit(exit_44, signal_43); /* ignored: registered once */
	raise(SIGTERM);
}

TEST(on_exit_runs_at_exit_and_on_signals)
{
	CHECK_EQ_INT(in_child(exits), 44);
	CHECK_EQ_INT(in_child(gets_sigterm), 42);
}

TEST_MAIN(T(wait_for_true_at_once_calls_once), T(wait_for_polls_until_it_holds),
	  T(wait_for_false_after_the_timeout), T(wait_for_zero_timeout_calls_once),
	  T(find_exe_from_env), T(find_exe_under_the_build_dir),
	  T(on_exit_runs_at_exit_and_on_signals))
