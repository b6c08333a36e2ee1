/* Levelled logging. Each line: time, level, "T <tablet> [term N]" when a
 * tablet is given, source location, message. The threshold comes from the
 * DOCRAFT_TRACE environment variable (error|warn|info|debug|trace, or 0-4;
 * default warn) read by log_init, or from log_set_level.
 *
 * The LOG_* macros test the level before formatting, so a disabled debug line
 * costs one comparison. Thread-safe: each line is written with one write(2). */
#ifndef DOCRAFT_COMMON_LOG_H
#define DOCRAFT_COMMON_LOG_H

#include <stdint.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
	LOG_LVL_TRACE,
};

extern int log_threshold;

/* Reads DOCRAFT_TRACE; idempotent. */
void log_init(void);
void log_set_level(int level);
/* Parses "info", "3", ...; returns -1 if unknown. */
int log_parse_level(const char *s);

/* tablet may be NULL (no tablet tag); term is printed only with a tablet. */
void log_write(int level, const char *tablet, uint64_t term, const char *file, int line,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#define LOG_AT(level, tablet, term, ...)                                              \
	do {                                                                          \
		if ((level) <= log_threshold)                                         \
			log_write((level), (tablet), (term), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define LOG_ERROR(...) LOG_AT(LOG_LVL_ERROR, NULL, 0, __VA_ARGS__)
#define LOG_WARN(...) LOG_AT(LOG_LVL_WARN, NULL, 0, __VA_ARGS__)
#define LOG_INFO(...) LOG_AT(LOG_LVL_INFO, NULL, 0, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LVL_DEBUG, NULL, 0, __VA_ARGS__)
/* Tablet-tagged variants. */
#define TLOG_ERROR(t, term, ...) LOG_AT(LOG_LVL_ERROR, (t), (term), __VA_ARGS__)
#define TLOG_WARN(t, term, ...) LOG_AT(LOG_LVL_WARN, (t), (term), __VA_ARGS__)
#define TLOG_INFO(t, term, ...) LOG_AT(LOG_LVL_INFO, (t), (term), __VA_ARGS__)
#define TLOG_DEBUG(t, term, ...) LOG_AT(LOG_LVL_DEBUG, (t), (term), __VA_ARGS__)

#endif
