/* Child processes for real-process tests: spawn a program with its stdin and
 * stdout on pipes, talk to it line by line with timeouts, kill and reap it.
 *
 * Every child runs in its own process group with PR_SET_PDEATHSIG = SIGKILL,
 * so none outlives the test process, and is kept in a global list until it
 * is reaped: proc_kill_all (also registered with atexit on the first spawn)
 * SIGKILLs and reaps every child still listed, which is what a test runner
 * whose CHECK longjmps out of a case must call before the next case.
 *
 * Every call is bounded in time; nothing here blocks without a timeout.
 * Single-threaded use only. SIGPIPE is ignored from the first spawn on
 * (writing to a dead child then fails with EPIPE instead). */
#ifndef DOCRAFT_TEST_PROC_H
#define DOCRAFT_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_BUF_SIZE (1u << 16)

struct proc {
	pid_t pid;        /* 0: not running (never spawned, or reaped) */
	int in_fd;        /* the child's stdin (we write), non-blocking */
	int out_fd;       /* the child's stdout (we read), non-blocking */
	bool eof;         /* the child's stdout reached EOF */
	int status;       /* wait status once reaped */
	size_t len;       /* bytes buffered in buf */
	char buf[PROC_BUF_SIZE];
};

/* Starts argv[0] (a path) with argv; its stderr goes to stderr_path
 * (appended, created) or is inherited when NULL. 0, or -1 with errno. */
int proc_spawn(struct proc *p, char *const argv[], const char *stderr_path);

/* Writes one line (a '\n' is appended), waiting at most timeout_ms for pipe
 * space. 0, or -1 (child gone, or timed out). */
int proc_send(struct proc *p, int timeout_ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Takes one complete line already buffered (without its '\n') into line;
 * true if there was one. */
bool proc_take_line(struct proc *p, char *line, size_t cap);

/* Waits at most timeout_ms for output from any of the n children (NULL
 * entries and reaped ones are skipped) and buffers what is there. Returns the
 * number of children that produced bytes or EOF (0 on timeout). */
int proc_poll(struct proc **ps, size_t n, int timeout_ms);

/* Reads one line of p into line, waiting at most timeout_ms. 1 with a line,
 * 0 on timeout, -1 on EOF. */
int proc_read_line(struct proc *p, char *line, size_t cap, int timeout_ms);

/* Sends sig to the child's process group. */
int proc_signal(struct proc *p, int sig);

/* Waits at most timeout_ms for the child to exit and reaps it (closing its
 * pipes; pid becomes 0). true if it exited; *status (may be NULL) is the
 * wait status. */
bool proc_wait(struct proc *p, int timeout_ms, int *status);

/* SIGKILL, then reap (bounded). Also closes the pipes. */
void proc_kill(struct proc *p);

/* SIGKILLs and reaps every child spawned and not reaped yet. Returns how
 * many there were. */
int proc_kill_all(void);

/* Once per program (one harness; later calls do nothing): registers
 * at_exit with atexit and on_signal for SIGTERM (a meson timeout), SIGINT
 * and SIGHUP, so a harness cleans up (children, temp dirs) however the test
 * ends. */
void proc_on_exit(void (*at_exit)(void), void (*on_signal)(int));

/* Async-signal-safe: SIGKILLs every child's process group still listed,
 * without reaping (for a signal handler that is about to end the process). */
void proc_kill_all_from_signal(void);

/* For a fatal signal's handler (SIGTERM from a meson timeout, SIGINT,
 * SIGHUP): proc_kill_all_from_signal, then removes dir when it is not NULL
 * (fork + exec rm -rf: async-signal-safe), then dies of sig. */
void proc_die_of_signal(int sig, const char *dir);

/* The program of a test: $env_name when set and not empty (meson sets it),
 * else rel (e.g. "src/master/docraft-master") under the build dir, taken as
 * two levels above this program (<build>/tests/<folder>/<name>); the path
 * goes into out. 0 if it is executable, else -1 (out names the path tried). */
int proc_find_exe(char *out, size_t cap, const char *env_name, const char *rel);

/* Milliseconds of a monotonic clock. */
uint64_t proc_now_ms(void);

/* A TCP port free on every address 127.0.0.1..127.0.0.n at once (each bound
 * briefly, then closed), different from avoid (-1: none), chosen at random
 * below the kernel's ephemeral range; -1 when 200 attempts found none. n is
 * 1..PROC_MAX_PORT_ADDRS. For servers that all listen on the same port, one
 * per loopback address. */
#define PROC_MAX_PORT_ADDRS 16
int proc_free_port(int n, int avoid);

/* Prints the last n (<= 64) lines of the log file at path as TAP notes,
 * under the heading "---- <what> (last K of N lines)"; nothing if the file
 * cannot be read. For a failed case's post-mortem. */
void proc_note_log_tail(const char *what, const char *path, int n);

#endif
