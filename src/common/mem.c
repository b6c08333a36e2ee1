#include "common/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void *xmalloc(size_t n)
{
	void *p = malloc(n != 0 ? n : 1);
	if (p == NULL)
		PANIC("out of memory (%zu bytes)", n);
	return p;
}

void *xzalloc(size_t n)
{
	return xcalloc(1, n);
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count != 0 ? count : 1, size != 0 ? size : 1);
	if (p == NULL)
		PANIC("out of memory (%zu x %zu bytes)", count, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n != 0 ? n : 1);
	if (q == NULL)
		PANIC("out of memory (%zu bytes)", n);
	return q;
}

char *xstrdup(const char *s)
{
	PRE(s != NULL);
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p;
	PRE(s != NULL);
	n = strnlen(s, n);
	p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *xgrow(void *p, size_t *cap, size_t need, size_t elem, size_t min)
{
	size_t n;

	if (need <= *cap)
		return p;
	n = *cap * 2 > need ? *cap * 2 : need;
	if (n < min)
		n = min;
	if (elem != 0 && n > SIZE_MAX / elem)
		PANIC("array of %zu x %zu bytes", n, elem);
	*cap = n;
	return xrealloc(p, n * elem);
}
