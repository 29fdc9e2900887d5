/*
 * Line framer for newline-delimited JSON and the strict UTF-8 check it
 * applies to each line. Owns the partial line carried between feeds.
 */
#include "jsonrpc/framer.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/xmalloc.h"

/* A partial-line buffer that grew past this is released once the line is
 * out, so one huge message does not pin its memory for the conn's life. */
#define FRAMER_KEEP_CAP (64 * 1024)
#define FRAMER_WHAT_MAX 64

struct framer {
	size_t max_line;
	struct buf part; /* the line begun in an earlier feed */
	bool skipping;	 /* inside an oversize line: drop through '\n' */
	/* The oversize line's first and last bytes. */
	char head[FRAMER_EDGE], tail[FRAMER_EDGE];
	size_t head_len, tail_len;
	void (*on_overlong)(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len);
};

void framer_on_overlong(struct framer *f,
			void (*cb)(void *ctx, const char *head, size_t head_len,
				   const char *tail, size_t tail_len))
{
	f->on_overlong = cb;
}

/* Keeps the last FRAMER_EDGE bytes seen of an oversize line. */
static void framer_keep_tail(struct framer *f, const char *p, size_t n)
{
	if (n == 0)
		return;
	if (n >= FRAMER_EDGE) {
		memcpy(f->tail, p + n - FRAMER_EDGE, FRAMER_EDGE);
		f->tail_len = FRAMER_EDGE;
		return;
	}
	size_t keep =
		f->tail_len + n > FRAMER_EDGE ? FRAMER_EDGE - n : f->tail_len;
	memmove(f->tail, f->tail + f->tail_len - keep, keep);
	memcpy(f->tail + keep, p, n);
	f->tail_len = keep + n;
}

/* The oversize line begins: its first bytes are what the framer held
 * plus the start of seg. */
static void framer_begin_overlong(struct framer *f, const char *p, size_t seg)
{
	size_t h = f->part.len < FRAMER_EDGE ? f->part.len : FRAMER_EDGE;
	if (h > 0)
		memcpy(f->head, f->part.data, h);
	size_t more = seg < FRAMER_EDGE - h ? seg : FRAMER_EDGE - h;
	memcpy(f->head + h, p, more);
	f->head_len = h + more;
	f->tail_len = 0;
	if (f->part.len > 0)
		framer_keep_tail(f, f->part.data, f->part.len);
	framer_keep_tail(f, p, seg);
}

static void framer_end_overlong(struct framer *f, void *ctx)
{
	size_t t = f->tail_len;
	if (t > 0 && f->tail[t - 1] == '\r')
		t--;
	if (f->on_overlong)
		f->on_overlong(ctx, f->head, f->head_len, f->tail, t);
}

struct framer *framer_new(size_t max_line)
{
	struct framer *f = xcalloc(1, sizeof *f);
	f->max_line = max_line;
	buf_init(&f->part);
	return f;
}

void framer_free(struct framer *f)
{
	if (f == NULL)
		return;
	buf_free(&f->part);
	free(f);
}

size_t framer_utf8_prefix(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		/* JSON is mostly ASCII: skip it a word at a time. */
		while (len - i >= 8) {
			uint64_t w;
			memcpy(&w, p + i, 8);
			if (w & UINT64_C(0x8080808080808080))
				break;
			i += 8;
		}
		if (i == len)
			break;
		unsigned char c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		/* n continuation bytes; the first one must lie in [lo, hi],
		 * which is what rules out overlongs, surrogates and code
		 * points above U+10FFFF. */
		size_t n;
		unsigned char lo = 0x80, hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
		} else if (c == 0xe0) {
			n = 2;
			lo = 0xa0;
		} else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
			n = 2;
		} else if (c == 0xed) {
			n = 2;
			hi = 0x9f;
		} else if (c == 0xf0) {
			n = 3;
			lo = 0x90;
		} else if (c >= 0xf1 && c <= 0xf3) {
			n = 3;
		} else if (c == 0xf4) {
			n = 3;
			hi = 0x8f;
		} else {
			return i;
		}
		if (len - i - 1 < n)
			return i;
		if (p[i + 1] < lo || p[i + 1] > hi)
			return i;
		for (size_t k = 2; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return i;
		}
		i += n + 1;
	}
	return i;
}

static void framer_drop_part(struct framer *f)
{
	if (f->part.cap > FRAMER_KEEP_CAP)
		buf_free(&f->part);
	else
		buf_reset(&f->part);
}

static bool framer_is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (s[i]) {
		case ' ':
		case '\t':
		case '\r':
		case '\v':
		case '\f':
			break;
		default:
			return false;
		}
	}
	return true;
}

static void framer_emit(const char *line, size_t len,
			void (*on_line)(void *, const char *, size_t),
			void (*on_garbage)(void *, const char *), void *ctx)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (framer_is_blank(line, len))
		return;
	if (framer_utf8_prefix(line, len) != len) {
		on_garbage(ctx, "invalid UTF-8, line skipped");
		return;
	}
	on_line(ctx, line, len);
}

void framer_feed(struct framer *f, const char *data, size_t len,
		 void (*on_line)(void *ctx, const char *line, size_t len),
		 void (*on_garbage)(void *ctx, const char *what), void *ctx)
{
	const char *p = data;
	const char *end = data + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t seg = (size_t)((nl ? nl : end) - p);

		if (f->skipping) {
			framer_keep_tail(f, p, seg);
			if (nl == NULL)
				return;
			f->skipping = false;
			framer_end_overlong(f, ctx);
			p = nl + 1;
			continue;
		}
		if (seg > f->max_line - f->part.len) {
			char what[FRAMER_WHAT_MAX];
			snprintf(what, sizeof what,
				 "line over %zu bytes, skipped", f->max_line);
			framer_begin_overlong(f, p, seg);
			framer_drop_part(f);
			on_garbage(ctx, what);
			if (nl == NULL) {
				f->skipping = true;
				return;
			}
			framer_end_overlong(f, ctx);
			p = nl + 1;
			continue;
		}
		if (nl == NULL) {
			buf_append(&f->part, p, seg);
			return;
		}
		if (f->part.len == 0) {
			/* The common case: the whole line is in data. */
			framer_emit(p, seg, on_line, on_garbage, ctx);
		} else {
			buf_append(&f->part, p, seg);
			framer_emit(f->part.data, f->part.len, on_line,
				    on_garbage, ctx);
			framer_drop_part(f);
		}
		p = nl + 1;
	}
}
