/* libdocraft_skew.so: an LD_PRELOAD shim that shifts the wall clock of one
 * process by an offset read from a file, so that a test can skew one node's
 * clock while the cluster runs (deploy/docraft-local skew NODE MS).
 *
 *   LD_PRELOAD=.../libdocraft_skew.so DOCRAFT_SKEW_FILE=/path/skew_ms prog
 *
 * The file holds an integer number of milliseconds (may be negative; '+',
 * surrounding blanks and a final newline are allowed). A missing, empty or
 * unreadable file means 0. The file is re-read at most every 100 ms,
 * measured with the real CLOCK_MONOTONIC; write it atomically (a temporary
 * file renamed over it) so a reader never sees half of it.
 *
 * Wrapped: clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE only;
 * every other clock, CLOCK_MONOTONIC included, passes through untouched),
 * gettimeofday and time, each resolved with dlsym(RTLD_NEXT). Calls made
 * inside libc itself (and raw syscalls) are not affected. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SKEW_EXPORT __attribute__((visibility("default")))
#define SKEW_REREAD_NS 100000000LL /* 100 ms */
#define NS_PER_SEC 1000000000LL

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);

static _Atomic(clock_gettime_fn) real_clock_gettime;
static _Atomic(gettimeofday_fn) real_gettimeofday;
static _Atomic(time_fn) real_time;

static const char *skew_file;             /* set once, in the constructor */
static _Atomic int64_t skew_offset_ms;    /* the offset last read */
static _Atomic int64_t skew_next_read_ns; /* monotonic ns of the next re-read */

/* Without a libc clock_gettime (it always has one): the raw system call. */
static int syscall_clock_gettime(clockid_t id, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

static clock_gettime_fn get_real_clock_gettime(void)
{
	clock_gettime_fn f = atomic_load_explicit(&real_clock_gettime, memory_order_acquire);
	if (f == NULL) {
		f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
		if (f == NULL)
			f = syscall_clock_gettime;
		atomic_store_explicit(&real_clock_gettime, f, memory_order_release);
	}
	return f;
}

static gettimeofday_fn get_real_gettimeofday(void)
{
	gettimeofday_fn f = atomic_load_explicit(&real_gettimeofday, memory_order_acquire);
	if (f == NULL) {
		f = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
		atomic_store_explicit(&real_gettimeofday, f, memory_order_release);
	}
	return f;
}

static time_fn get_real_time(void)
{
	time_fn f = atomic_load_explicit(&real_time, memory_order_acquire);
	if (f == NULL) {
		f = (time_fn)dlsym(RTLD_NEXT, "time");
		atomic_store_explicit(&real_time, f, memory_order_release);
	}
	return f;
}

/* The file's offset in ms; 0 when it is missing or does not hold a number. */
static int64_t read_offset_file(void)
{
	char buf[64];
	ssize_t n;
	int fd, sign = 1;
	int64_t v = 0;
	const char *p;
	bool digits = false;

	if (skew_file == NULL || skew_file[0] == '\0')
		return 0;
	fd = open(skew_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = buf;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-' || *p == '+')
		sign = *p++ == '-' ? -1 : 1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX / 1000000 - 9) / 10) /* keep offset * 1e6 in range */
			return 0;
		v = v * 10 + (*p - '0');
		digits = true;
	}
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (!digits || *p != '\0')
		return 0;
	return sign * v;
}

/* The current offset, re-reading the file when 100 ms have passed since the
 * last read (one thread re-reads; the others use the previous value). */
static int64_t current_offset_ms(void)
{
	struct timespec m;
	int64_t now, next;
	int saved = errno;

	if (get_real_clock_gettime()(CLOCK_MONOTONIC, &m) == 0) {
		now = (int64_t)m.tv_sec * NS_PER_SEC + m.tv_nsec;
		next = atomic_load_explicit(&skew_next_read_ns, memory_order_acquire);
		if (now >= next &&
		    atomic_compare_exchange_strong(&skew_next_read_ns, &next, now + SKEW_REREAD_NS))
			atomic_store(&skew_offset_ms, read_offset_file());
	}
	errno = saved;
	return atomic_load(&skew_offset_ms);
}

/* sec/frac + offset, normalised; frac_per_sec is 1e9 (ns) or 1e6 (us). */
static void shift(int64_t *sec, int64_t *frac, int64_t frac_per_sec, int64_t offset_ms)
{
	int64_t total_ms_frac = offset_ms * (frac_per_sec / 1000);
	int64_t s = *sec + total_ms_frac / frac_per_sec;
	int64_t f = *frac + total_ms_frac % frac_per_sec;
	if (f < 0) {
		f += frac_per_sec;
		s--;
	} else if (f >= frac_per_sec) {
		f -= frac_per_sec;
		s++;
	}
	*sec = s;
	*frac = f;
}

__attribute__((constructor)) static void skew_init(void)
{
	skew_file = getenv("DOCRAFT_SKEW_FILE");
	get_real_clock_gettime();
	get_real_gettimeofday();
	get_real_time();
	current_offset_ms(); /* the first read, before any thread can race it */
}

/* Out of line on purpose: the libc prototypes mark the pointers nonnull,
 * which would let the compiler drop these NULL checks in the wrappers. */
__attribute__((noinline)) static void shift_timespec(struct timespec *ts)
{
	int64_t off, s, ns;
	if (ts == NULL || (off = current_offset_ms()) == 0)
		return;
	s = ts->tv_sec;
	ns = ts->tv_nsec;
	shift(&s, &ns, NS_PER_SEC, off);
	ts->tv_sec = (time_t)s;
	ts->tv_nsec = (long)ns;
}

__attribute__((noinline)) static void shift_timeval(struct timeval *tv)
{
	int64_t off, s, us;
	if (tv == NULL || (off = current_offset_ms()) == 0)
		return;
	s = tv->tv_sec;
	us = tv->tv_usec;
	shift(&s, &us, 1000000, off);
	tv->tv_sec = (time_t)s;
	tv->tv_usec = (suseconds_t)us;
}

SKEW_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	int rv = get_real_clock_gettime()(id, ts);
	if (rv == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		shift_timespec(ts);
	return rv;
}

SKEW_EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	gettimeofday_fn real = get_real_gettimeofday();
	int rv;
	if (real == NULL) /* cannot happen with glibc */
		return (int)syscall(SYS_gettimeofday, tv, tz);
	rv = real(tv, tz);
	if (rv == 0)
		shift_timeval(tv);
	return rv;
}

SKEW_EXPORT time_t time(time_t *out)
{
	struct timespec ts;
	time_t t;
	/* From the real CLOCK_REALTIME so that a sub-second offset rounds like
	 * the clock it shifts; the real time() only if that fails. */
	if (get_real_clock_gettime()(CLOCK_REALTIME, &ts) == 0) {
		int64_t s = ts.tv_sec, ns = ts.tv_nsec;
		shift(&s, &ns, NS_PER_SEC, current_offset_ms());
		t = (time_t)s;
	} else {
		time_fn real = get_real_time();
		if (real == NULL)
			return (time_t)-1;
		t = real(NULL);
		if (t != (time_t)-1)
			t += (time_t)(current_offset_ms() / 1000);
	}
	if (out != NULL)
		*out = t;
	return t;
}
