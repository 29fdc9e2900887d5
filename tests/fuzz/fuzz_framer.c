/*
 * libFuzzer harness for the line framer (src/jsonrpc/framer.c) that cuts
 * a server's stdout into messages. Beyond the sanitizers: one feed, feeds
 * split where the input says, and an independent reference (split on LF,
 * limit, strip one CR, skip blank, strict UTF-8 by decoding each code
 * point) report the same lines and garbage; framer_utf8_prefix is the
 * longest valid prefix by the same decoder.
 *
 * Input: byte 0 holds how many chunk-size bytes follow (bits 0-2, 1..8)
 * and the long mode (bits 6-7 both set); byte 1 picks the line limit; the
 * rest is the stream. Long mode puts a line near a limit around 64 KiB
 * in front of the stream, where the framer gives back its partial-line
 * buffer.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/framer.h"
#include "util/buf.h"

#define FF_LONG_BASE (64 * 1024 - 512)

/* Length of the valid UTF-8 character at s, 0 when there is none. */
static size_t ff_ref_char(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	size_t k;
	uint32_t cp, min;
	if ((s[0] & 0xe0) == 0xc0) {
		k = 2;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		k = 3;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		k = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

static bool ff_ref_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t k = ff_ref_char(s + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

static void ff_on_line(void *ctx, const char *line, size_t len)
{
	struct buf *b = ctx;
	buf_puts(b, "line ");
	buf_put_u64(b, len);
	buf_puts(b, ":");
	buf_append(b, line, len);
	buf_puts(b, "\n");
}

static void ff_on_garbage(void *ctx, const char *what)
{
	struct buf *b = ctx;
	buf_puts(b,
		 strstr(what, "UTF-8") ? "garbage utf8\n" : "garbage long\n");
}

static void ff_reference(const char *s, size_t n, size_t max_line,
			 struct buf *out)
{
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\n')
			continue;
		const char *l = s + start;
		size_t len = i - start;
		start = i + 1;
		if (len > max_line) {
			ff_on_garbage(out, "long");
			continue;
		}
		if (len && l[len - 1] == '\r')
			len--;
		size_t sp = 0;
		while (sp < len && l[sp] != '\0' && strchr(" \t\r\v\f", l[sp]))
			sp++;
		if (sp == len)
			continue;
		if (!ff_ref_valid((const unsigned char *)l, len)) {
			ff_on_garbage(out, "UTF-8");
			continue;
		}
		ff_on_line(out, l, len);
	}
	/* An unended line is reported as soon as it outgrows the limit. */
	if (n - start > max_line)
		ff_on_garbage(out, "long");
}

static void ff_check_utf8(const char *s, size_t n)
{
	size_t p = framer_utf8_prefix(s, n);
	const unsigned char *u = (const unsigned char *)s;
	if (p > n || !ff_ref_valid(u, p) ||
	    (p < n && ff_ref_char(u + p, n - p) != 0)) {
		fprintf(stderr,
			"fuzz_framer: FAIL: utf8 prefix %zu of %zu wrong\n", p,
			n);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t nsizes = (size_t)(data[0] & 7) + 1;
	bool long_mode = (data[0] & 0xc0) == 0xc0;
	if (size < 2 + nsizes)
		return 0;
	size_t max_line = (size_t)data[1] % 96 + 1;
	const uint8_t *sizes = data + 2;
	const char *msg = (const char *)data + 2 + nsizes;
	size_t len = size - 2 - nsizes;

	ff_check_utf8(msg, len);

	struct buf stream;
	buf_init(&stream);
	size_t scale = 1;
	if (long_mode) {
		/* One line of the stream's other bytes, within 8 bytes of a
		 * limit near 64 KiB, then the stream as written. */
		max_line = FF_LONG_BASE + (size_t)data[1] * 8;
		size_t want = max_line - 8 + sizes[0] % 17;
		char fill = 'x';
		for (size_t i = 0; i < len && fill == 'x'; i++)
			if (msg[i] != '\n')
				fill = msg[i];
		buf_reserve(&stream, want + len);
		memset(stream.data, fill, want);
		stream.len = want;
		buf_append(&stream, msg, len);
		msg = stream.data;
		len = stream.len;
		scale = 1024;
	}

	struct buf whole, split, ref;
	buf_init(&whole);
	buf_init(&split);
	buf_init(&ref);
	/* Never NULL, for memcmp. */
	buf_append(&whole, "", 0);
	buf_append(&split, "", 0);
	buf_append(&ref, "", 0);
	struct framer *f = framer_new(max_line);
	framer_feed(f, msg, len, ff_on_line, ff_on_garbage, &whole);
	framer_free(f);

	f = framer_new(max_line);
	for (size_t off = 0, k = 0; off < len;) {
		size_t n = ((size_t)sizes[k++ % nsizes] % 64 + 1) * scale;
		n = n < len - off ? n : len - off;
		/* A copy of exactly n bytes, so reading past the segment is
		 * an ASan report. */
		char *seg = malloc(n);
		memcpy(seg, msg + off, n);
		framer_feed(f, seg, n, ff_on_line, ff_on_garbage, &split);
		free(seg);
		off += n;
	}
	framer_free(f);
	ff_reference(msg, len, max_line, &ref);

	const char *bad = NULL;
	if (whole.len != split.len ||
	    memcmp(whole.data, split.data, whole.len) != 0)
		bad = "one feed and split feeds differ";
	else if (whole.len != ref.len ||
		 memcmp(whole.data, ref.data, whole.len) != 0)
		bad = "framer and reference differ";
	if (bad) {
		fprintf(stderr,
			"fuzz_framer: FAIL: %s (limit %zu)\n--- whole "
			"---\n%.*s\n"
			"--- split ---\n%.*s\n--- reference ---\n%.*s\n",
			bad, max_line, (int)whole.len, whole.data,
			(int)split.len, split.data, (int)ref.len, ref.data);
		abort();
	}
	buf_free(&whole);
	buf_free(&split);
	buf_free(&ref);
	buf_free(&stream);
	return 0;
}
