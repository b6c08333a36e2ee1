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
	char prefix[DOCRAFT_ERRMSG_SIZE];
	char old[DOCRAFT_ERRMSG_SIZE];
	va_list ap;
	if (errmsg == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, errmsg, sizeof old);
	old[sizeof old - 1] = '\0';
	snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "%s: %s", prefix, old);
	return code;
}
