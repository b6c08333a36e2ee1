#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Longest line written, '\n' included. Lines up to PIPE_BUF (4096 on Linux)
 * are also atomic when stderr is a pipe. */
#define LINE_MAX_BYTES 4096
#define ELLIPSIS "..."

int log_threshold = LOG_LVL_WARN;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "ERROR",
	[LOG_LVL_WARN] = "WARN",
	[LOG_LVL_INFO] = "INFO",
	[LOG_LVL_DEBUG] = "DEBUG",
	[LOG_LVL_TRACE] = "TRACE",
};

#define NLEVELS ((int)(sizeof level_names / sizeof level_names[0]))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

int log_parse_level(const char *s)
{
	if (s == NULL)
		return -1;
	if (s[0] >= '0' && s[0] < '0' + NLEVELS && s[1] == '\0')
		return s[0] - '0';
	for (int i = 0; i < NLEVELS; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

void log_set_level(int level)
{
	if (level < LOG_LVL_ERROR)
		level = LOG_LVL_ERROR;
	if (level > LOG_LVL_TRACE)
		level = LOG_LVL_TRACE;
	__atomic_store_n(&log_threshold, level, __ATOMIC_RELAXED);
}

static void init_from_env(void)
{
	const char *s = getenv("DOCRAFT_TRACE");
	int level;
	if (s == NULL || s[0] == '\0')
		return;
	level = log_parse_level(s);
	if (level < 0) {
		log_write(LOG_LVL_WARN, NULL, 0, __FILE__, __LINE__,
			  "ignoring DOCRAFT_TRACE=\"%.64s\": expected error|warn|info|debug|trace or 0-4; "
			  "keeping the current level",
			  s);
		return;
	}
	log_set_level(level);
}

void log_init(void)
{
	pthread_once(&init_once, init_from_env);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash != NULL ? slash + 1 : path;
}

/* Appends to line[*len]; returns -1 (with *len at the limit) once the text no
 * longer fits, else 0. */
static int append_v(char *line, size_t *len, const char *fmt, va_list ap)
{
	/* One byte is kept back for the '\n'; snprintf's NUL goes there. */
	size_t room = LINE_MAX_BYTES - *len;
	int n = vsnprintf(line + *len, room, fmt, ap);
	if (n < 0)
		return 0; /* encoding error: keep what is there */
	if ((size_t)n >= room) {
		*len = LINE_MAX_BYTES - 1;
		return -1;
	}
	*len += (size_t)n;
	return 0;
}

static int append(char *line, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int append(char *line, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int rv;
	va_start(ap, fmt);
	rv = append_v(line, len, fmt, ap);
	va_end(ap);
	return rv;
}

/* Marks a truncated line with "...", cutting on a UTF-8 character boundary. */
static void mark_truncated(char *line, size_t *len)
{
	size_t pos = LINE_MAX_BYTES - 1 - (sizeof ELLIPSIS - 1);
	while (pos > 0 && ((unsigned char)line[pos] & 0xC0) == 0x80)
		pos--;
	memcpy(line + pos, ELLIPSIS, sizeof ELLIPSIS - 1);
	*len = pos + sizeof ELLIPSIS - 1;
}

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report it */
		}
		p += w;
		n -= (size_t)w;
	}
}

void log_write(int level, const char *tablet, uint64_t term, const char *file, int line,
	       const char *fmt, ...)
{
	char buf[LINE_MAX_BYTES];
	size_t len = 0, msg_start;
	int saved_errno = errno;
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int rv;

	if (level > __atomic_load_n(&log_threshold, __ATOMIC_RELAXED))
		return;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	len = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	rv = append(buf, &len, ".%06ldZ %-5s ", (long)(ts.tv_nsec / 1000),
		    level >= 0 && level < NLEVELS ? level_names[level] : "?");
	if (rv == 0 && tablet != NULL)
		rv = append(buf, &len, "T %s [term %" PRIu64 "] ", tablet, term);
	if (rv == 0)
		rv = append(buf, &len, "%s:%d ", base_name(file), line);
	msg_start = len;
	if (rv == 0) {
		va_start(ap, fmt);
		rv = append_v(buf, &len, fmt, ap);
		va_end(ap);
	}
	if (rv != 0) {
		mark_truncated(buf, &len);
	} else {
		/* A message ending in '\n' must not produce an empty line. */
		while (len > msg_start && buf[len - 1] == '\n')
			len--;
	}
	buf[len++] = '\n';
	write_all(buf, len);
	errno = saved_errno;
}
