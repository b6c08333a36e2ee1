/* Child processes for real-process tests. See proc.h. */
#include "proc.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

/* Every child spawned and not reaped yet. */
static struct proc *children[MAX_CHILDREN];
static bool atexit_done;

uint64_t proc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int proc_find_exe(char *out, size_t cap, const char *env_name, const char *rel)
{
	const char *env = getenv(env_name);
	if (env != NULL && *env != '\0') {
		snprintf(out, cap, "%s", env);
	} else {
		char self[4096];
		ssize_t r = readlink("/proc/self/exe", self, sizeof self - 1);
		if (r <= 0)
			return -1;
		self[r] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL)
			*slash = '\0';
		snprintf(out, cap, "%s/../../%s", self, rel);
	}
	return access(out, X_OK) == 0 ? 0 : -1;
}

void proc_on_exit(void (*at_exit_fn)(void), void (*on_signal)(int))
{
	static bool registered;
	if (registered)
		return;
	atexit(at_exit_fn);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	registered = true;
}

static void at_exit(void)
{
	proc_kill_all();
}

static void track(struct proc *p)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] == NULL) {
			children[i] = p;
			return;
		}
	}
	/* More than MAX_CHILDREN alive is a test bug: do not lose track. */
	kill(-p->pid, SIGKILL);
	abort();
}

static void untrack(struct proc *p)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == p)
			children[i] = NULL;
}

static void close_fds(struct proc *p)
{
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->in_fd = p->out_fd = -1;
}

int proc_spawn(struct proc *p, char *const argv[], const char *stderr_path)
{
	int in[2], out[2], err_fd = -1;
	pid_t parent = getpid();
	pid_t pid;

	memset(p, 0, sizeof *p);
	p->in_fd = p->out_fd = -1;
	if (!atexit_done) {
		signal(SIGPIPE, SIG_IGN);
		atexit(at_exit);
		atexit_done = true;
	}
	if (pipe2(in, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	if (stderr_path != NULL) {
		err_fd = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (err_fd < 0)
			goto fail;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		/* Child: only async-signal-safe calls from here to exec. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the parent died before prctl */
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
			_exit(127);
		if (err_fd >= 0 && dup2(err_fd, STDERR_FILENO) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	/* Parent: also set the group here, so a kill right away reaches it. */
	setpgid(pid, pid);
	close(in[0]);
	close(out[1]);
	if (err_fd >= 0)
		close(err_fd);
	p->pid = pid;
	p->in_fd = in[1];
	p->out_fd = out[0];
	fcntl(p->in_fd, F_SETFL, fcntl(p->in_fd, F_GETFL) | O_NONBLOCK);
	fcntl(p->out_fd, F_SETFL, fcntl(p->out_fd, F_GETFL) | O_NONBLOCK);
	track(p);
	return 0;
fail:
	{
		int e = errno;
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		if (err_fd >= 0)
			close(err_fd);
		errno = e;
	}
	return -1;
}

int proc_send(struct proc *p, int timeout_ms, const char *fmt, ...)
{
	char small[1024];
	char *line = small;
	size_t off = 0, n;
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	va_list ap;
	int k, rv = -1;

	if (p->pid == 0 || p->in_fd < 0)
		return -1;
	va_start(ap, fmt);
	k = vsnprintf(small, sizeof small - 1, fmt, ap);
	va_end(ap);
	if (k < 0)
		return -1;
	if ((size_t)k >= sizeof small - 1) {
		line = malloc((size_t)k + 2);
		if (line == NULL)
			return -1;
		va_start(ap, fmt);
		vsnprintf(line, (size_t)k + 1, fmt, ap);
		va_end(ap);
	}
	line[k] = '\n';
	n = (size_t)k + 1;
	while (off < n) {
		ssize_t w = write(p->in_fd, line + off, n - off);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {p->in_fd, POLLOUT, 0};
			uint64_t now = proc_now_ms();
			if (now >= end)
				goto out;
			poll(&pfd, 1, (int)(end - now));
			continue;
		}
		goto out; /* EPIPE: the child is gone */
	}
	rv = 0;
out:
	if (line != small)
		free(line);
	return rv;
}

bool proc_take_line(struct proc *p, char *line, size_t cap)
{
	char *nl = memchr(p->buf, '\n', p->len);
	size_t n;
	if (nl == NULL) {
		if (p->len == sizeof p->buf) {
			/* A line longer than the buffer: hand out what there is. */
			nl = p->buf + p->len - 1;
		} else {
			return false;
		}
	}
	n = (size_t)(nl - p->buf);
	if (cap > 0) {
		size_t c = n < cap - 1 ? n : cap - 1;
		memcpy(line, p->buf, c);
		line[c] = '\0';
	}
	memmove(p->buf, nl + 1, p->len - n - 1);
	p->len -= n + 1;
	return true;
}

/* Reads what is available; true if bytes or EOF arrived. */
static bool fill(struct proc *p)
{
	bool got = false;
	while (p->out_fd >= 0 && !p->eof && p->len < sizeof p->buf) {
		ssize_t r = read(p->out_fd, p->buf + p->len, sizeof p->buf - p->len);
		if (r > 0) {
			p->len += (size_t)r;
			got = true;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			break;
		p->eof = true; /* EOF or a read error */
		got = true;
	}
	return got;
}

int proc_poll(struct proc **ps, size_t n, int timeout_ms)
{
	struct pollfd pfd[MAX_CHILDREN];
	struct proc *who[MAX_CHILDREN];
	size_t m = 0;
	int got = 0;

	for (size_t i = 0; i < n && m < MAX_CHILDREN; i++) {
		struct proc *p = ps[i];
		if (p == NULL || p->out_fd < 0 || p->eof)
			continue;
		/* Bytes already buffered count as news only if a line is there. */
		if (memchr(p->buf, '\n', p->len) != NULL)
			timeout_ms = 0;
		pfd[m].fd = p->out_fd;
		pfd[m].events = POLLIN;
		pfd[m].revents = 0;
		who[m++] = p;
	}
	if (m == 0) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return 0;
	}
	if (poll(pfd, m, timeout_ms) <= 0)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (pfd[i].revents != 0 && fill(who[i]))
			got++;
	return got;
}

int proc_read_line(struct proc *p, char *line, size_t cap, int timeout_ms)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t now;
		if (proc_take_line(p, line, cap))
			return 1;
		fill(p);
		if (proc_take_line(p, line, cap))
			return 1;
		if (p->eof || p->out_fd < 0)
			return -1;
		now = proc_now_ms();
		if (now >= end)
			return 0;
		struct pollfd pfd = {p->out_fd, POLLIN, 0};
		poll(&pfd, 1, (int)(end - now));
	}
}

int proc_signal(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return -1;
	return kill(-p->pid, sig);
}

bool proc_wait(struct proc *p, int timeout_ms, int *status)
{
	uint64_t end = proc_now_ms() + (uint64_t)timeout_ms;
	unsigned nap = 1;
	if (p->pid <= 0) {
		if (status != NULL)
			*status = p->status;
		return true;
	}
	for (;;) {
		int st;
		pid_t r = waitpid(p->pid, &st, WNOHANG);
		if (r == p->pid || (r < 0 && errno == ECHILD)) {
			p->status = r == p->pid ? st : 0;
			if (status != NULL)
				*status = p->status;
			/* Anything left in the group (there should be nothing). */
			kill(-p->pid, SIGKILL);
			p->pid = 0;
			close_fds(p);
			untrack(p);
			return true;
		}
		if (proc_now_ms() >= end)
			return false;
		usleep(nap * 1000);
		if (nap < 20)
			nap *= 2;
	}
}

void proc_kill(struct proc *p)
{
	if (p->pid <= 0) {
		close_fds(p);
		return;
	}
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	/* SIGKILL cannot be caught; a process stuck in uninterruptible I/O
	 * still goes within seconds. */
	if (!proc_wait(p, 30000, NULL)) {
		fprintf(stderr, "proc: pid %d did not die after SIGKILL\n", (int)p->pid);
		untrack(p);
		close_fds(p);
		p->pid = 0;
	}
}

void proc_kill_all_from_signal(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		struct proc *p = children[i];
		if (p != NULL && p->pid > 0)
			kill(-p->pid, SIGKILL);
	}
}

void proc_die_of_signal(int sig, const char *dir)
{
	proc_kill_all_from_signal();
	if (dir != NULL) {
		pid_t pid = fork();
		if (pid == 0) {
			execl("/bin/rm", "rm", "-rf", "--", dir, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int proc_kill_all(void)
{
	int n = 0;
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] != NULL) {
			proc_kill(children[i]);
			children[i] = NULL;
			n++;
		}
	}
	return n;
}

/* The kernel's ephemeral port range (32768..60999 when unreadable). */
static void ephemeral_range(int *lo, int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	*lo = 32768;
	*hi = 60999;
	if (f != NULL) {
		if (fscanf(f, "%d %d", lo, hi) != 2) {
			*lo = 32768;
			*hi = 60999;
		}
		fclose(f);
	}
}

/* Candidates lie below the ephemeral range: a port the kernel handed out for
 * bind(0) can be taken by any outgoing connection of the machine between our
 * close and the server's bind, which then fails with EADDRINUSE. */
int proc_free_port(int n, int avoid)
{
	if (n < 1 || n > PROC_MAX_PORT_ADDRS)
		return -1;
	int lo, hi, first = 10000, span;
	ephemeral_range(&lo, &hi);
	span = lo - first;
	if (span < 1000) { /* a range that starts low: above it */
		first = hi + 1;
		span = 65536 - first;
		if (span < 100)
			return -1;
	}
	static unsigned seed;
	if (seed == 0)
		seed = (unsigned)getpid() * 2654435761u ^ (unsigned)proc_now_ms();
	for (int attempt = 0; attempt < 200; attempt++) {
		int fds[PROC_MAX_PORT_ADDRS], port = first + (int)(rand_r(&seed) % (unsigned)span);
		int ok = port != avoid;
		for (int i = 0; i < n; i++)
			fds[i] = -1;
		for (int i = 0; i < n && ok; i++) {
			struct sockaddr_in a;
			memset(&a, 0, sizeof a);
			a.sin_family = AF_INET;
			a.sin_port = htons((uint16_t)port);
			a.sin_addr.s_addr = htonl(0x7F000001u + (uint32_t)i);
			fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0)
				ok = 0;
		}
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (ok)
			return port;
	}
	return -1;
}

void proc_note_log_tail(const char *what, const char *path, int n)
{
	static char ring[64][1024];
	FILE *f = path[0] != '\0' ? fopen(path, "r") : NULL;
	int nl = 0;

	if (f == NULL)
		return;
	if (n > 64)
		n = 64;
	while (fgets(ring[nl % n], sizeof ring[0], f) != NULL)
		nl++;
	fclose(f);
	test_note("---- %s (last %d of %d lines)", what, nl < n ? nl : n, nl);
	for (int i = nl < n ? 0 : nl - n; i < nl; i++) {
		ring[i % n][strcspn(ring[i % n], "\n")] = '\0';
		test_note("%s", ring[i % n]);
	}
}
