/*
 * Escaping of text others wrote before it meets a terminal or the log
 * (escape.h): one pass over the bytes, each character either copied or
 * shown as an escape.
 */
#include "util/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/xmalloc.h"

/* The longest piece one character becomes: "\u202e". */
#define ESCAPE_PIECE_MAX 8

/* The code point of the UTF-8 sequence at s (n bytes left) and its length
 * in *used; -1 when the bytes there are not UTF-8 (an overlong form, a
 * surrogate, a stray continuation byte, a sequence cut short). */
static int32_t escape_decode(const unsigned char *s, size_t n, size_t *used)
{
	unsigned char c = s[0];
	size_t len;
	int32_t cp, min;
	if (c < 0x80) {
		*used = 1;
		return c;
	} else if ((c & 0xE0) == 0xC0) {
		len = 2;
		cp = c & 0x1F;
		min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3;
		cp = c & 0x0F;
		min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return -1;
	}
	if (len > n)
		return -1;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	*used = len;
	return cp;
}

/* Whether code point cp is shown as an escape. */
static bool escape_needed(int32_t cp, unsigned flags)
{
	if (cp == '\n' || cp == '\t')
		return !(flags & ESCAPE_LINES);
	if (cp < 0x20 || cp == 0x7F)
		return true;
	if (cp >= 0x80 && cp <= 0x9F) /* C1: CSI, OSC, ... on some terminals */
		return true;
	/* Bidirectional embeddings, overrides and isolates: a line that
	 * shows other than it reads. */
	return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The next piece of s (n > 0 bytes left): copied, or its escape in piece
 * (ESCAPE_PIECE_MAX bytes). Returns the input bytes used; *out and *out_len
 * say what to write. */
static size_t escape_next(const char *s, size_t n, unsigned flags,
			  char piece[ESCAPE_PIECE_MAX], const char **out,
			  size_t *out_len)
{
	size_t used = 1;
	int32_t cp = escape_decode((const unsigned char *)s, n, &used);
	if (cp < 0) {
		*out_len = (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\x%02x",
					    (unsigned char)s[0]);
		*out = piece;
		return 1;
	}
	if (!escape_needed(cp, flags)) {
		*out = s;
		*out_len = used;
		return used;
	}
	switch (cp) {
	case '\n':
		*out_len = (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\n");
		break;
	case '\r':
		*out_len = (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\r");
		break;
	case '\t':
		*out_len = (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\t");
		break;
	default:
		*out_len = (size_t)snprintf(piece, ESCAPE_PIECE_MAX,
					    cp < 0x80 ? "\\x%02x" : "\\u%04x",
					    (unsigned)cp);
		break;
	}
	*out = piece;
	return used;
}

void escape_append(struct buf *out, const char *s, size_t len, unsigned flags)
{
	char piece[ESCAPE_PIECE_MAX];
	size_t i = 0;
	while (i < len) {
		/* A run that needs nothing goes in one copy. */
		size_t run = i;
		while (run < len && (unsigned char)s[run] >= 0x20 &&
		       (unsigned char)s[run] < 0x7F)
			run++;
		if (run > i) {
			buf_append(out, s + i, run - i);
			i = run;
			continue;
		}
		const char *p;
		size_t plen;
		i += escape_next(s + i, len - i, flags, piece, &p, &plen);
		buf_append(out, p, plen);
	}
}

char *escape_str(const char *s, unsigned flags)
{
	struct buf b;
	buf_init(&b);
	if (s)
		escape_append(&b, s, strlen(s), flags);
	return buf_steal(&b);
}

size_t escape_into(char *out, size_t size, const char *s, size_t len,
		   unsigned flags)
{
	char piece[ESCAPE_PIECE_MAX];
	size_t w = 0, i = 0;
	while (i < len) {
		const char *p;
		size_t plen;
		size_t used =
			escape_next(s + i, len - i, flags, piece, &p, &plen);
		if (w + plen >= size)
			break;
		memcpy(out + w, p, plen);
		w += plen;
		i += used;
	}
	out[w] = '\0';
	return w;
}

char *escape_shell_word(const char *s)
{
	if (s[0] &&
	    s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
			"VWXYZ0123456789/._-+:@%,=")] == '\0')
		return xstrdup(s);
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "'");
	for (const char *p = s; *p; p++)
		if (*p == '\'')
			buf_puts(&b, "'\\''");
		else
			buf_append(&b, p, 1);
	buf_puts(&b, "'");
	return buf_steal(&b);
}
