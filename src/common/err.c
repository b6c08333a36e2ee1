#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[DOCRAFT_ERROR_MAX] = {
	[DOCRAFT_OK] = "ok",
	[DOCRAFT_EINVAL] = "invalid argument",
	[DOCRAFT_ENOTFOUND] = "not found",
	[DOCRAFT_ECORRUPT] = "corrupt data",
	[DOCRAFT_EIO] = "I/O error",
	[DOCRAFT_ENOSPC] = "no space left on device",
	[DOCRAFT_ENOMEM] = "out of memory",
	[DOCRAFT_ETOOOLD] = "snapshot too old",
	[DOCRAFT_ECLOCKSKEW] = "clock skew too large",
	[DOCRAFT_ETOOBIG] = "too big",
	[DOCRAFT_ECLOSED] = "closed",
	[DOCRAFT_ENOTLEADER] = "not the leader",
	[DOCRAFT_ELEADERLOST] = "leadership lost, outcome unknown",
	[DOCRAFT_EUNAVAILABLE] = "unavailable",
	[DOCRAFT_EBUSY] = "busy",
	[DOCRAFT_ETIMEDOUT] = "timed out",
	[DOCRAFT_ETABLETNOTFOUND] = "tablet not found",
	[DOCRAFT_ETABLENOTFOUND] = "table not found",
	[DOCRAFT_ECONDITION] = "condition not met, not applied",
	[DOCRAFT_EWRONGTABLET] = "key outside the tablet's partition",
};

const char *docraft_strerror(int code)
{
	if (code < 0 || code >= DOCRAFT_ERROR_MAX || names[code] == NULL)
		return "unknown error";
	return names[code];
}

int err_set(char *errmsg, int code, const char *fmt, ...)
{
	va_list ap;
	if (errmsg == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(errmsg, DOCRAFT_ERRMSG_SIZE, fmt, ap);
	va_end(ap);
	return code;
}

int err_wrap(char *errmsg, int code, const char *fmt, ...)
{
	char old[DOCRAFT_ERRMSG_SIZE];
	size_t n;
	va_list ap;
	if (errmsg == NULL)
		return code;
	memcpy(old, errmsg, sizeof old);
	old[sizeof old - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(errmsg, DOCRAFT_ERRMSG_SIZE, fmt, ap);
	va_end(ap);
	/* errmsg = "<prefix>: <old>", truncated to the buffer. */
	n = strlen(errmsg);
	for (const char *p = ": "; *p != '\0' && n + 1 < DOCRAFT_ERRMSG_SIZE; p++)
		errmsg[n++] = *p;
	for (const char *p = old; *p != '\0' && n + 1 < DOCRAFT_ERRMSG_SIZE; p++)
		errmsg[n++] = *p;
	errmsg[n] = '\0';
	return code;
}
