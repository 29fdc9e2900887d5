/*
 * libFuzzer harness for the text/event-stream parser (src/http/sse.c) that
 * reads every HTTP server's SSE answers. Beyond the sanitizers: one feed,
 * feeds split where the input says, and an independent reference (the
 * WHATWG algorithm over the whole stream at once, with the same limits)
 * report the same events, comments, retries, last id and failure.
 *
 * Input: byte 0 holds how many chunk-size bytes follow (bits 0-2, 1..8)
 * and the default-limits mode (bits 6-7 both set); byte 1 picks small
 * limits; the rest is the stream.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/sse.h"
#include "util/buf.h"

static void fs_on_event(void *ctx, const char *event, const char *id,
			const char *data, size_t len)
{
	struct buf *b = ctx;
	if (data[len] != '\0') {
		fprintf(stderr, "fuzz_sse: FAIL: data not NUL-terminated\n");
		abort();
	}
	buf_puts(b, "event ");
	buf_puts(b, event);
	buf_puts(b, " id ");
	buf_puts(b, id);
	buf_puts(b, " data ");
	buf_put_u64(b, len);
	buf_puts(b, ":");
	buf_append(b, data, len);
	buf_puts(b, "\n");
}

static void fs_on_comment(void *ctx)
{
	buf_puts(ctx, "comment\n");
}

static void fs_on_retry(void *ctx, uint64_t ms)
{
	buf_puts(ctx, "retry ");
	buf_put_u64(ctx, ms);
	buf_puts(ctx, "\n");
}

static const struct sse_cbs fs_cbs = {fs_on_event, fs_on_comment, fs_on_retry};

static void fs_end(struct sse *p, int rc, struct buf *out)
{
	/* Which limit may differ with the split (a long data line passes
	 * the data limit before the line is whole); that one did not. */
	if (rc < 0 || sse_error(p))
		buf_puts(out, "error\n");
	buf_puts(out, "last id ");
	buf_puts(out, sse_last_id(p));
	buf_puts(out, "\n");
}

/* The reference: the WHATWG steps over whole lines of the whole input. */
struct fs_ref {
	const struct sse_limits *lim;
	struct buf *out;
	struct buf data, event, id, last_id;
	bool has_data;
};

static bool fs_ref_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* One line; ended: whether its end-of-line came. false: a limit. */
static bool fs_ref_line(struct fs_ref *r, const char *l, size_t n, bool ended)
{
	if (n > r->lim->max_line)
		return false;
	if (n == 0 && ended) {
		buf_reset(&r->last_id);
		buf_append(&r->last_id, r->id.data, r->id.len);
		if (r->has_data) {
			buf_puts(r->out, "event ");
			buf_puts(r->out,
				 r->event.len ? r->event.data : "message");
			buf_puts(r->out, " id ");
			buf_puts(r->out, r->last_id.data);
			buf_puts(r->out, " data ");
			buf_put_u64(r->out, r->data.len);
			buf_puts(r->out, ":");
			buf_append(r->out, r->data.data, r->data.len);
			buf_puts(r->out, "\n");
		}
		r->has_data = false;
		buf_reset(&r->data);
		buf_reset(&r->event);
		return true;
	}
	if (n == 0 || l[0] == ':') {
		if (ended && n)
			fs_on_comment(r->out);
		return true;
	}
	const char *colon = memchr(l, ':', n);
	if (!colon && !ended)
		return true; /* the field is not known yet */
	size_t nl = colon ? (size_t)(colon - l) : n;
	const char *v = colon ? colon + 1 : l + n;
	size_t vn = (size_t)(l + n - v);
	if (vn && v[0] == ' ') {
		v++;
		vn--;
	}
	if (fs_ref_eq(l, nl, "data")) {
		size_t sep = r->has_data ? 1 : 0;
		if (r->data.len + sep + vn > r->lim->max_data)
			return false;
		if (!ended)
			return true;
		if (sep)
			buf_append(&r->data, "\n", 1);
		buf_append(&r->data, v, vn);
		r->has_data = true;
		return true;
	}
	bool ev = fs_ref_eq(l, nl, "event"), id = fs_ref_eq(l, nl, "id");
	bool retry = fs_ref_eq(l, nl, "retry");
	if ((ev || id || retry) && vn > r->lim->max_field)
		return false;
	if (!ended)
		return true;
	if (ev) {
		buf_reset(&r->event);
		buf_append(&r->event, v, vn);
	} else if (id && !memchr(v, '\0', vn)) {
		buf_reset(&r->id);
		buf_append(&r->id, v, vn);
	} else if (retry && vn) {
		uint64_t ms = 0;
		for (size_t i = 0; i < vn; i++) {
			if (v[i] < '0' || v[i] > '9')
				return true;
			ms = ms > (UINT64_MAX - 9) / 10
				     ? UINT64_MAX
				     : ms * 10 + (uint64_t)(v[i] - '0');
		}
		fs_on_retry(r->out, ms);
	}
	return true;
}

static void fs_reference(const char *s, size_t n, const struct sse_limits *lim,
			 struct buf *out)
{
	struct fs_ref r = {.lim = lim, .out = out};
	buf_init(&r.data);
	buf_init(&r.event);
	buf_init(&r.id);
	buf_init(&r.last_id);
	buf_puts(&r.data, "");
	buf_puts(&r.event, "");
	buf_puts(&r.id, "");
	buf_puts(&r.last_id, "");
	size_t i = 0;
	if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	/* A stream that ends inside what may still be a BOM. */
	if (n < 3 && memcmp(s, "\xef\xbb\xbf", n) == 0)
		i = n;
	bool ok = true;
	while (ok) {
		size_t start = i;
		while (i < n && s[i] != '\r' && s[i] != '\n')
			i++;
		if (i == n) {
			ok = fs_ref_line(&r, s + start, i - start, false);
			break;
		}
		ok = fs_ref_line(&r, s + start, i - start, true);
		if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
			i++;
		i++;
	}
	if (!ok)
		buf_puts(out, "error\n");
	buf_puts(out, "last id ");
	buf_puts(out, r.last_id.data);
	buf_puts(out, "\n");
	buf_free(&r.data);
	buf_free(&r.event);
	buf_free(&r.id);
	buf_free(&r.last_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t nsizes = (size_t)(data[0] & 7) + 1;
	bool big = (data[0] & 0xc0) == 0xc0;
	if (size < 2 + nsizes)
		return 0;
	struct sse_limits lim = {
		.max_line = 1 + (size_t)data[1] % 97,
		.max_data = 1 + (size_t)data[1] * 7 % 131,
		.max_field = 1 + (size_t)data[1] % 13,
	};
	if (big)
		lim = (struct sse_limits){SSE_MAX_LINE, SSE_MAX_DATA,
					  SSE_MAX_FIELD};
	const uint8_t *sizes = data + 2;
	const char *msg = (const char *)data + 2 + nsizes;
	size_t len = size - 2 - nsizes;

	struct buf whole, split, ref;
	buf_init(&whole);
	buf_init(&split);
	buf_init(&ref);
	buf_append(&whole, "", 0);
	buf_append(&split, "", 0);
	buf_append(&ref, "", 0);

	struct sse p;
	sse_init(&p, &lim, &fs_cbs, &whole);
	fs_end(&p, sse_feed(&p, msg, len), &whole);
	sse_free(&p);

	sse_init(&p, &lim, &fs_cbs, &split);
	int rc = 0;
	for (size_t off = 0, k = 0; off < len && rc == 0;) {
		size_t n = (size_t)sizes[k++ % nsizes] % 64 + 1;
		n = n < len - off ? n : len - off;
		/* A copy of exactly n bytes, so reading past the piece is
		 * an ASan report. */
		char *seg = malloc(n);
		memcpy(seg, msg + off, n);
		rc = sse_feed(&p, seg, n);
		free(seg);
		off += n;
	}
	fs_end(&p, rc, &split);
	sse_free(&p);
	fs_reference(msg, len, &lim, &ref);

	const char *bad = NULL;
	if (whole.len != split.len ||
	    memcmp(whole.data, split.data, whole.len) != 0)
		bad = "one feed and split feeds differ";
	else if (whole.len != ref.len ||
		 memcmp(whole.data, ref.data, whole.len) != 0)
		bad = "parser and reference differ";
	if (bad) {
		fprintf(stderr,
			"fuzz_sse: FAIL: %s (limits %zu/%zu/%zu)\n"
			"--- whole ---\n%.*s\n--- split ---\n%.*s\n"
			"--- reference ---\n%.*s\n",
			bad, lim.max_line, lim.max_data, lim.max_field,
			(int)whole.len, whole.data, (int)split.len, split.data,
			(int)ref.len, ref.data);
		abort();
	}
	buf_free(&whole);
	buf_free(&split);
	buf_free(&ref);
	return 0;
}
