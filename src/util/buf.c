/* Growable byte buffer. */
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

void buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *buf_steal(struct buf *b)
{
	char *p = b->data;
	if (p == NULL)
		p = xstrdup("");
	buf_init(b);
	return p;
}

size_t buf_fmt_u64(char *out, unsigned long long v)
{
	/* The digits come last first: written from the end of tmp, then
	 * copied once. */
	char tmp[20];
	char *p = tmp + sizeof tmp;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	size_t n = (size_t)(tmp + sizeof tmp - p);
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

void buf_put_u64(struct buf *b, unsigned long long v)
{
	/* Straight into the buffer, which stays NUL-terminated. */
	buf_reserve(b, 20);
	b->len += buf_fmt_u64(b->data + b->len, v);
}

void buf_put_hex(struct buf *b, unsigned long long v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	buf_reserve(b, n);
	for (size_t i = 0; i < n; i++)
		b->data[b->len + i] = tmp[n - 1 - i];
	b->len += n;
	b->data[b->len] = '\0';
}
