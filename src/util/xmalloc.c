/* The one allocation family: aborts on exhaustion instead of returning NULL. */
#include "util/xmalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void xmalloc_die(size_t n)
{
	fprintf(stderr, "mcpvisor: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		xmalloc_die(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (p == NULL)
		xmalloc_die(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		xmalloc_die(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	n = strnlen(s, n);
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		xmalloc_die(0);
	char *p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

char **xstrvdup(char *const *v, size_t n)
{
	if (v == NULL)
		return NULL;
	char **out = xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = v[i] ? xstrdup(v[i]) : NULL;
	return out;
}

void *xmemdup(const void *p, size_t n)
{
	if (n == 0)
		return NULL;
	void *q = xmalloc(n);
	memcpy(q, p, n);
	return q;
}
