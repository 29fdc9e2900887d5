/* Unit tests for the incremental text/event-stream parser. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/sse.h"
#include "util/buf.h"

/* Everything the parser reported, as one text to compare. */
struct tss_sink {
	struct buf log;
	int events;
	int comments;
	int stop_after; /* sse_stop after this many events; 0: never */
	struct sse *p;
};

static void tss_on_event(void *ctx, const char *event, const char *id,
			 const char *data, size_t len)
{
	struct tss_sink *s = ctx;
	cr_assert_eq(data[len], '\0');
	buf_printf(&s->log, "event(%s)(%s)(", event, id);
	buf_append(&s->log, data, len);
	buf_puts(&s->log, ")\n");
	s->events++;
	if (s->stop_after && s->events == s->stop_after)
		sse_stop(s->p);
}

static void tss_on_comment(void *ctx)
{
	struct tss_sink *s = ctx;
	buf_puts(&s->log, "comment\n");
	s->comments++;
}

static void tss_on_retry(void *ctx, uint64_t ms)
{
	struct tss_sink *s = ctx;
	buf_printf(&s->log, "retry %llu\n", (unsigned long long)ms);
}

static const struct sse_cbs tss_cbs = {tss_on_event, tss_on_comment,
				       tss_on_retry};

/* Feeds text in pieces of the given sizes (0-terminated list, the last
 * repeated); returns the log (caller frees) and the last feed's result. */
static char *tss_run(const struct sse_limits *lim, const char *text, size_t len,
		     const size_t *sizes, int *rc)
{
	struct sse p;
	struct tss_sink s = {.p = &p};
	buf_init(&s.log);
	buf_puts(&s.log, "");
	sse_init(&p, lim, &tss_cbs, &s);
	*rc = 0;
	size_t k = 0;
	for (size_t off = 0; off < len;) {
		size_t n = sizes ? sizes[k] : len;
		if (sizes && sizes[k + 1])
			k++;
		if (n > len - off)
			n = len - off;
		/* An exact copy, so reading past a piece is an ASan
		 * report. */
		char *piece = malloc(n);
		memcpy(piece, text + off, n);
		*rc = sse_feed(&p, piece, n);
		free(piece);
		off += n;
		if (*rc < 0)
			break;
	}
	if (sse_error(&p))
		buf_printf(&s.log, "error: %s\n", sse_error(&p));
	buf_printf(&s.log, "last id (%s)\n", sse_last_id(&p));
	sse_free(&p);
	return buf_steal(&s.log);
}

static const char tss_stream[] = "\xef\xbb\xbf: hb\r\n\r\n"
				 "retry: 250\n"
				 "id: 7\n"
				 "data:\n\n"
				 "event: message\r"
				 "id: 8\r"
				 "data: {\"jsonrpc\":\"2.0\",\"id\":1,\r"
				 "data:  \"result\":{}}\r\r"
				 ": another\n"
				 "data: one\r\n"
				 "data\r\n"
				 "data: three\r\n"
				 "\r\n"
				 "event: custom\nfoo: bar\nid: 9\n\n"
				 "id\ndata: x\n\n"
				 "data: unended";

static const char tss_expected[] =
	"comment\n"
	"retry 250\n"
	"event(message)(7)()\n"
	"event(message)(8)({\"jsonrpc\":\"2.0\",\"id\":1,\n \"result\":{}})\n"
	"comment\n"
	"event(message)(8)(one\n\nthree)\n"
	"event(message)()(x)\n"
	"last id ()\n";

Test(sse, whole_stream)
{
	int rc;
	char *log = tss_run(NULL, tss_stream, sizeof tss_stream - 1, NULL, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(log, tss_expected);
	free(log);
}

Test(sse, every_split_point_and_byte_by_byte)
{
	size_t len = sizeof tss_stream - 1;
	for (size_t cut = 1; cut < len; cut++) {
		size_t sizes[] = {cut, len, 0};
		int rc;
		char *log = tss_run(NULL, tss_stream, len, sizes, &rc);
		cr_assert_str_eq(log, tss_expected, "split at %zu", cut);
		free(log);
	}
	/* Two cuts: every pair of small pieces, then byte by byte. */
	for (size_t a = 1; a < 8; a++) {
		for (size_t b = 1; b < 8; b++) {
			size_t sizes[] = {a, b, 0};
			int rc;
			char *log = tss_run(NULL, tss_stream, len, sizes, &rc);
			cr_assert_str_eq(log, tss_expected, "pieces %zu,%zu", a,
					 b);
			free(log);
		}
	}
}

Test(sse, cr_at_chunk_end_then_lf_is_one_line_end)
{
	/* "data: a\r" | "\ndata: b\r\n\r\n": a CRLF split across two
	 * chunks is one line end, not an empty line that would dispatch
	 * "a" alone. */
	const char *t = "data: a\r\ndata: b\r\n\r\n";
	size_t sizes[] = {8, 64, 0};
	int rc;
	char *log = tss_run(NULL, t, strlen(t), sizes, &rc);
	cr_assert_str_eq(log, "event(message)()(a\nb)\nlast id ()\n");
	free(log);
	/* CR CR is two line ends: a dispatch. */
	log = tss_run(NULL, "data: a\r\rdata: b\n\n", 18, NULL, &rc);
	cr_assert_str_eq(log, "event(message)()(a)\nevent(message)()(b)\n"
			      "last id ()\n");
	free(log);
}

Test(sse, bom_only_at_start_and_partial_bom_is_data)
{
	int rc;
	/* A second BOM is part of the field name: an unknown field. */
	const char *t = "\xef\xbb\xbf\xef\xbb\xbf"
			"data: x\n\ndata: y\n\n";
	char *log = tss_run(NULL, t, strlen(t), NULL, &rc);
	cr_assert_str_eq(log, "event(message)()(y)\nlast id ()\n");
	free(log);
	/* Two bytes of a BOM then something else, split: kept. */
	const char *u = "\xef\xbb"
			"data: z\n\n";
	size_t one[] = {1, 0};
	log = tss_run(NULL, u, strlen(u), one, &rc);
	cr_assert_str_eq(log, "last id ()\n");
	free(log);
	log = tss_run(NULL,
		      "\xef\xbb\xbf"
		      "data: z\n\n",
		      12, one, &rc);
	cr_assert_str_eq(log, "event(message)()(z)\nlast id ()\n");
	free(log);
}

Test(sse, id_with_nul_is_ignored_and_ids_persist)
{
	const char t[] = "id: 5\ndata: a\n\nid: 6\0x\ndata: b\n\ndata: c\n\n";
	int rc;
	char *log = tss_run(NULL, t, sizeof t - 1, NULL, &rc);
	cr_assert_str_eq(log, "event(message)(5)(a)\nevent(message)(5)(b)\n"
			      "event(message)(5)(c)\nlast id (5)\n");
	free(log);
}

Test(sse, retry_digits_only)
{
	const char *t = "retry: 12a\nretry: -1\nretry:\nretry: 0\n"
			"retry:99999999999999999999999\nretry: 1500\n";
	int rc;
	char *log = tss_run(NULL, t, strlen(t), NULL, &rc);
	cr_assert_str_eq(log, "retry 0\nretry 18446744073709551615\n"
			      "retry 1500\nlast id ()\n");
	free(log);
}

Test(sse, id_of_an_event_without_data_is_kept_for_resumption)
{
	/* The priming event of the 2025-11-25 transport: an id, empty
	 * data; then the stream ends mid-event (no blank line), whose id
	 * does not count. */
	const char *t = "id: prime-1\ndata:\n\nid: half\ndata: {}\n";
	int rc;
	char *log = tss_run(NULL, t, strlen(t), NULL, &rc);
	cr_assert_str_eq(log, "event(message)(prime-1)()\nlast id (prime-1)\n");
	free(log);
	log = tss_run(NULL, "id: 3\n\n", 7, NULL, &rc);
	cr_assert_str_eq(log, "last id (3)\n");
	free(log);
}

Test(sse, limits_fail_sticky_and_say_which)
{
	struct sse_limits lim = {
		.max_line = 32, .max_data = 20, .max_field = 8};
	int rc;
	/* Exactly on each limit: fine. */
	const char *ok = "data: 0123456789\ndata: 012345678\n\n"
			 "id: 12345678\nevent: abcdefgh\n\n"
			 ": 456789012345678901234567890123\n";
	char *log = tss_run(&lim, ok, strlen(ok), NULL, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(log, "event(message)()(0123456789\n012345678)\n"
			      "comment\nlast id (12345678)\n");
	free(log);

	const char *data = "data: 0123456789\ndata: 0123456789\n\n";
	log = tss_run(&lim, data, strlen(data), NULL, &rc);
	cr_assert_eq(rc, -1);
	cr_assert(strstr(log, "error: an event's data passed its limit"), "%s",
		  log);
	free(log);

	/* Empty data lines add their separators: bounded too. */
	struct buf many;
	buf_init(&many);
	for (int i = 0; i < 40; i++)
		buf_puts(&many, "data\n");
	log = tss_run(&lim, many.data, many.len, NULL, &rc);
	cr_assert_eq(rc, -1);
	cr_assert(strstr(log, "data passed its limit"));
	free(log);
	buf_free(&many);

	const char *line = ": 4567890123456789012345678901234\ndata: x\n\n";
	size_t one[] = {1, 0};
	log = tss_run(&lim, line, strlen(line), one, &rc);
	cr_assert_eq(rc, -1);
	cr_assert_str_eq(log, "error: a line passed its limit\nlast id ()\n");
	free(log);

	const char *id = "id: 123456789\n\n";
	log = tss_run(&lim, id, strlen(id), NULL, &rc);
	cr_assert(strstr(log, "error: an event name, id or retry value"));
	free(log);

	/* Sticky: a later feed fails at once and reports nothing. */
	struct sse p;
	struct tss_sink s = {.p = &p};
	buf_init(&s.log);
	sse_init(&p, &lim, &tss_cbs, &s);
	cr_assert_eq(sse_feed(&p, id, strlen(id)), -1);
	cr_assert_eq(sse_feed(&p, "data: x\n\n", 9), -1);
	cr_assert_eq(s.events, 0);
	sse_free(&p);
	buf_free(&s.log);
}

Test(sse, stop_from_a_callback_returns_early)
{
	struct sse p;
	struct tss_sink s = {.p = &p, .stop_after = 1};
	buf_init(&s.log);
	sse_init(&p, NULL, &tss_cbs, &s);
	const char *t = "data: a\n\ndata: b\n\n";
	cr_assert_eq(sse_feed(&p, t, strlen(t)), 0);
	cr_assert_eq(s.events, 1);
	cr_assert_eq(sse_feed(&p, t, strlen(t)), 0);
	cr_assert_eq(s.events, 1);
	sse_free(&p);
	buf_free(&s.log);
}

Test(sse, garbage_never_crashes)
{
	struct sse_limits lim = {
		.max_line = 200, .max_data = 300, .max_field = 16};
	uint32_t x = 12345;
	static const char alphabet[] = "data:id:event:retry: \r\n\n\0\xef\xbb";
	for (int round = 0; round < 3000; round++) {
		char text[512];
		size_t len = (size_t)(x % sizeof text);
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245 + 12345;
			text[i] = (x >> 16) & 1 ? alphabet[(x >> 17) %
							   (sizeof alphabet)]
						: (char)(x >> 20);
		}
		x = x * 1103515245 + 12345;
		size_t sizes[] = {1 + x % 7, 1 + (x >> 8) % 13, 0};
		int rc1, rc2;
		char *a = tss_run(&lim, text, len, NULL, &rc1);
		char *b = tss_run(&lim, text, len, sizes, &rc2);
		cr_assert_str_eq(a, b, "round %d", round);
		cr_assert_eq(rc1, rc2);
		free(a);
		free(b);
	}
}

static void tss_count_event(void *ctx, const char *event, const char *id,
			    const char *data, size_t len)
{
	*(size_t *)ctx += len;
}

/* Not a pass/fail figure: prints the rate for the report. */
Test(sse, a_16_mib_event_at_its_limit)
{
	size_t n = SSE_MAX_DATA;
	char *text = malloc(n + 16);
	memcpy(text, "data: ", 6);
	memset(text + 6, 'x', n);
	memcpy(text + 6 + n, "\n\n", 2);
	size_t got = 0;
	struct sse_cbs cbs = {tss_count_event, NULL, NULL};
	struct sse p;
	sse_init(&p, NULL, &cbs, &got);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t off = 0; off < n + 8; off += 16384) {
		size_t k = n + 8 - off < 16384 ? n + 8 - off : 16384;
		cr_assert_eq(sse_feed(&p, text + off, k), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(got, n);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "sse: 16 MiB event in 16 KiB pieces: %.0f MB/s\n",
		(double)n / s / 1e6);
	/* One byte more is past the limit. */
	text[6 + n] = 'y';
	cr_assert_eq(sse_feed(&p, "data: ", 6), 0);
	cr_assert_eq(sse_feed(&p, text + 6, n + 1), -1);
	sse_free(&p);
	free(text);
}
