/*
 * Allocation that never returns NULL: on failure it logs and aborts, so no
 * caller carries an out-of-memory path it cannot test.
 */
#ifndef MCPV_XMALLOC_H
#define MCPV_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* At most n bytes of s, stopping at a NUL, like strndup. */
char *xstrndup(const char *s, size_t n);
/* A copy of n bytes at p; NULL when n is 0. */
void *xmemdup(const void *p, size_t n);
/* A copy of n strings (NULL entries stay NULL), NULL-terminated; NULL
 * when v is NULL. */
char **xstrvdup(char *const *v, size_t n);
/* printf into a fresh string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
