/*
 * Growable byte buffer: the one way bytes are accumulated (HTTP bodies,
 * lines, responses). Always NUL-terminated past len for convenience.
 */
#ifndef MCPV_BUF_H
#define MCPV_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
void buf_reserve(struct buf *b, size_t extra);
/* Inline, as buf_puts: most appends are short and fit, and then cost no
 * call, and a literal's bytes are copied without one either. */
static inline void buf_append(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap)
		buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}
/* Inline, so that a literal's length is known where it is appended. */
static inline void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends v in decimal, or in lower-case hex; no printf on hot paths. */
void buf_put_u64(struct buf *b, unsigned long long v);
void buf_put_hex(struct buf *b, unsigned long long v);
/* Writes v in decimal into out (>= 21 bytes); returns its length. */
size_t buf_fmt_u64(char *out, unsigned long long v);
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Hands the storage to the caller (NUL-terminated) and resets b. */
char *buf_steal(struct buf *b);

#endif
