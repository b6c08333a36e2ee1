#include "common/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void check_panic(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "PANIC %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}
