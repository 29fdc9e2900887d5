/*
 * libFuzzer harness for the one escaping function (src/util/escape.c)
 * that stands between what a server wrote and a terminal or the log.
 * Beyond the sanitizers: what comes out is valid UTF-8 and holds no
 * control character (C0 but '\n' and '\t' with ESCAPE_LINES, DEL, C1, the
 * bidirectional overrides and isolates), for any bytes in; the bounded
 * form never writes past its buffer, never cuts an escape, and is a
 * prefix of the whole form.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/escape.h"

/* The code point at p (n bytes left), its length in *len; -1 when the
 * bytes are not UTF-8. */
static long fe_decode(const unsigned char *p, size_t n, size_t *len)
{
	unsigned c = p[0];
	size_t k = c < 0x80		? 1
		   : (c & 0xE0) == 0xC0 ? 2
		   : (c & 0xF0) == 0xE0 ? 3
		   : (c & 0xF8) == 0xF0 ? 4
					: 0;
	if (k == 0 || k > n)
		return -1;
	long cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 7;
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return -1;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	static const long min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	*len = k;
	return cp;
}

static void fe_check(const char *s, size_t n, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		long cp = fe_decode(p + i, n - i, &k);
		if (cp < 0)
			abort(); /* not UTF-8 */
		bool line =
			(flags & ESCAPE_LINES) && (cp == '\n' || cp == '\t');
		if ((cp < 0x20 && !line) || cp == 0x7F ||
		    (cp >= 0x80 && cp <= 0x9F) ||
		    (cp >= 0x202A && cp <= 0x202E) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			abort(); /* a control reached the output */
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned flags = data[0] & 1 ? ESCAPE_LINES : 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	struct buf all;
	buf_init(&all);
	escape_append(&all, s, n, flags);
	fe_check(all.data ? all.data : "", all.len, flags);
	/* Bounded: any size, a prefix of the whole, NUL-terminated, no
	 * escape cut. */
	size_t cap = (size_t)(data[0] >> 1) + 1;
	char *out = malloc(cap);
	size_t w = escape_into(out, cap, s, n, flags);
	if (w >= cap || out[w] != '\0' || w > all.len ||
	    (w > 0 && memcmp(out, all.data, w) != 0))
		abort();
	fe_check(out, w, flags);
	free(out);
	buf_free(&all);
	return 0;
}
