/* Error helpers: fill an errmsg buffer and return a code in one statement.
 *
 *   if (len > max)
 *           return err_set(errmsg, DOCRAFT_ETOOBIG, "value of %zu bytes", len);
 *
 * errmsg may be NULL (the message is dropped). Buffers are
 * DOCRAFT_ERRMSG_SIZE bytes; longer messages are truncated. */
#ifndef DOCRAFT_COMMON_ERR_H
#define DOCRAFT_COMMON_ERR_H

#include "docraft/error.h"

/* Formats into errmsg (if not NULL) and returns code. */
int err_set(char *errmsg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the message already in errmsg with "<prefix>: "; returns code. */
int err_wrap(char *errmsg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
