/* Unit tests for the newline-delimited JSON line framer and its UTF-8
 * check. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/framer.h"
#include "util/buf.h"
#include "util/xmalloc.h"

#define TFR_MAX_LINES 4096

struct tfr_sink {
	char *lines[TFR_MAX_LINES];
	size_t lens[TFR_MAX_LINES];
	int nlines;
	int ngarbage;
	char last_garbage[128];
	const char *feed_start; /* to see whether a line pointed into data */
	const char *feed_end;
	int zero_copy;
};

static void tfr_on_line(void *ctx, const char *line, size_t len)
{
	struct tfr_sink *s = ctx;

	cr_assert_lt(s->nlines, TFR_MAX_LINES);
	if (line >= s->feed_start && line + len <= s->feed_end)
		s->zero_copy++;
	/* Lines may hold NUL bytes (valid UTF-8): copy all len bytes. */
	s->lines[s->nlines] = xmalloc(len + 1);
	memcpy(s->lines[s->nlines], line, len);
	s->lines[s->nlines][len] = '\0';
	s->lens[s->nlines] = len;
	s->nlines++;
}

static void tfr_on_garbage(void *ctx, const char *what)
{
	struct tfr_sink *s = ctx;

	s->ngarbage++;
	snprintf(s->last_garbage, sizeof s->last_garbage, "%s", what);
}

static void tfr_feed(struct framer *f, struct tfr_sink *s, const char *data,
		     size_t len)
{
	s->feed_start = data;
	s->feed_end = data + len;
	framer_feed(f, data, len, tfr_on_line, tfr_on_garbage, s);
}

static void tfr_feed_str(struct framer *f, struct tfr_sink *s, const char *str)
{
	tfr_feed(f, s, str, strlen(str));
}

static void tfr_sink_free(struct tfr_sink *s)
{
	for (int i = 0; i < s->nlines; i++)
		free(s->lines[i]);
	memset(s, 0, sizeof *s);
}

Test(framer, whole_lines_point_into_data)
{
	struct framer *f = framer_new(1024);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "{\"a\":1}\n{\"b\":2}\n");
	cr_assert_eq(s.nlines, 2);
	cr_assert_str_eq(s.lines[0], "{\"a\":1}");
	cr_assert_str_eq(s.lines[1], "{\"b\":2}");
	cr_assert_eq(s.zero_copy, 2);
	cr_assert_eq(s.ngarbage, 0);
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, free_null_is_noop)
{
	framer_free(NULL);
}

Test(framer, partial_line_split_at_every_position)
{
	const char *msg = "{\"id\":1,\"x\":\"h\xc3\xa9llo\"}\r\n"
			  "\n"
			  "{\"id\":2}\n"
			  "{\"id\":3}";
	size_t len = strlen(msg);

	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b++) {
			struct framer *f = framer_new(64);
			struct tfr_sink s = {0};
			tfr_feed(f, &s, msg, a);
			tfr_feed(f, &s, msg + a, b - a);
			tfr_feed(f, &s, msg + b, len - b);
			cr_assert_eq(s.nlines, 2, "split %zu/%zu: %d lines", a,
				     b, s.nlines);
			cr_assert_str_eq(s.lines[0],
					 "{\"id\":1,\"x\":\"h\xc3\xa9llo\"}");
			cr_assert_str_eq(s.lines[1], "{\"id\":2}");
			cr_assert_eq(s.ngarbage, 0);
			/* The unterminated third line comes with its '\n'. */
			tfr_feed_str(f, &s, "\n");
			cr_assert_eq(s.nlines, 3);
			cr_assert_str_eq(s.lines[2], "{\"id\":3}");
			tfr_sink_free(&s);
			framer_free(f);
		}
	}
}

Test(framer, crlf_stripped_once)
{
	struct framer *f = framer_new(1024);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "abc\r\nde\r\r\n");
	cr_assert_eq(s.nlines, 2);
	cr_assert_str_eq(s.lines[0], "abc");
	cr_assert_eq(s.lens[0], 3);
	/* Only the one '\r' before the newline belongs to the line end. */
	cr_assert_eq(s.lens[1], 3);
	cr_assert_str_eq(s.lines[1], "de\r");
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, blank_lines_skipped)
{
	struct framer *f = framer_new(1024);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "\n\r\n   \n\t \r\n{}\n \n");
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "{}");
	cr_assert_eq(s.ngarbage, 0);
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, line_at_limit_delivered)
{
	struct framer *f = framer_new(8);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "12345678\n");
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "12345678");
	/* The same across feeds, buffered. */
	tfr_feed_str(f, &s, "1234");
	tfr_feed_str(f, &s, "5678\n");
	cr_assert_eq(s.nlines, 2);
	cr_assert_str_eq(s.lines[1], "12345678");
	cr_assert_eq(s.ngarbage, 0);
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, oversize_line_skipped_next_delivered)
{
	struct framer *f = framer_new(8);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "123456789\n{\"ok\":1}\n");
	cr_assert_eq(s.ngarbage, 1);
	cr_assert_str_eq(s.last_garbage, "line over 8 bytes, skipped");
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "{\"ok\":1}");
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, oversize_line_across_feeds_reported_once)
{
	struct framer *f = framer_new(8);
	struct tfr_sink s = {0};

	tfr_feed_str(f, &s, "12345");
	tfr_feed_str(f, &s, "67890");
	cr_assert_eq(s.ngarbage, 1);
	for (int i = 0; i < 100; i++)
		tfr_feed_str(f, &s, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	cr_assert_eq(s.ngarbage, 1);
	cr_assert_eq(s.nlines, 0);
	tfr_feed_str(f, &s, "tail\n[1]\n");
	cr_assert_eq(s.ngarbage, 1);
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "[1]");
	/* A second oversize line is reported again. */
	tfr_feed_str(f, &s, "aaaaaaaaaaaaaaaaaaaa\n[2]\n");
	cr_assert_eq(s.ngarbage, 2);
	cr_assert_eq(s.nlines, 2);
	cr_assert_str_eq(s.lines[1], "[2]");
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, oversize_in_one_feed_not_buffered)
{
	struct framer *f = framer_new(8);
	struct tfr_sink s = {0};

	/* No newline yet: detected before any byte of it is kept. */
	tfr_feed_str(f, &s, "0123456789abcdef");
	cr_assert_eq(s.ngarbage, 1);
	tfr_feed_str(f, &s, "\n{}\n");
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "{}");
	tfr_sink_free(&s);
	framer_free(f);
}

static const struct {
	const char *name;
	const char *bytes;
} tfr_invalid[] = {
	{"lone 0xff", "{\"a\":\"\xff\"}"},
	{"lone 0xfe", "\xfe"},
	{"overlong slash", "\xc0\xaf"},
	{"overlong 2-byte", "\xc1\xbf"},
	{"overlong 3-byte", "\xe0\x80\xaf"},
	{"overlong 4-byte", "\xf0\x80\x80\xaf"},
	{"surrogate high", "\xed\xa0\x80"},
	{"surrogate low", "\xed\xbf\xbf"},
	{"above U+10FFFF", "\xf4\x90\x80\x80"},
	{"0xf5 lead", "\xf5\x80\x80\x80"},
	{"truncated 2-byte", "x\xc3"},
	{"truncated 3-byte", "\xe2\x82"},
	{"truncated 4-byte", "\xf0\x9f\x98"},
	{"bad continuation", "\xe2\x28\xa1"},
	{"lone continuation", "\x80"},
	{"invalid after ascii run", "abcdefghijklmnop\xc3("},
};

Test(framer, invalid_utf8_lines_skipped)
{
	for (size_t i = 0; i < sizeof tfr_invalid / sizeof tfr_invalid[0];
	     i++) {
		struct framer *f = framer_new(1024);
		struct tfr_sink s = {0};
		char *in = xasprintf("%s\n{\"next\":true}\n",
				     tfr_invalid[i].bytes);
		tfr_feed_str(f, &s, in);
		cr_assert_eq(s.ngarbage, 1, "%s", tfr_invalid[i].name);
		cr_assert_str_eq(s.last_garbage, "invalid UTF-8, line skipped");
		cr_assert_eq(s.nlines, 1, "%s", tfr_invalid[i].name);
		cr_assert_str_eq(s.lines[0], "{\"next\":true}");
		const char *b = tfr_invalid[i].bytes;
		cr_assert_lt(framer_utf8_prefix(b, strlen(b)), strlen(b), "%s",
			     tfr_invalid[i].name);
		free(in);
		tfr_sink_free(&s);
		framer_free(f);
	}
}

Test(framer, valid_multibyte_utf8)
{
	/* U+007F, U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF,
	 * U+10000, an emoji, U+10FFFF: the edges of each class. */
	const char *ok = "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf"
			 "\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80"
			 "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
	struct framer *f = framer_new(1024);
	struct tfr_sink s = {0};

	cr_assert_eq(framer_utf8_prefix(ok, strlen(ok)), strlen(ok));
	char *in = xasprintf("\"%s\"\n", ok);
	tfr_feed_str(f, &s, in);
	cr_assert_eq(s.ngarbage, 0);
	cr_assert_eq(s.nlines, 1);
	cr_assert_eq(s.lens[0], strlen(ok) + 2);
	cr_assert_eq(memcmp(s.lines[0] + 1, ok, strlen(ok)), 0);
	/* A valid prefix is measured up to the first bad byte. */
	cr_assert_eq(framer_utf8_prefix("ab\xc3\xa9\xff", 5), 4);
	free(in);
	tfr_sink_free(&s);
	framer_free(f);
}

Test(framer, burst_of_lines_in_one_feed)
{
	struct framer *f = framer_new(1024);
	struct tfr_sink s = {0};
	struct buf b;

	buf_init(&b);
	for (int i = 0; i < 3000; i++)
		buf_printf(&b, "{\"id\":%d}\n", i);
	tfr_feed(f, &s, b.data, b.len);
	cr_assert_eq(s.nlines, 3000);
	cr_assert_eq(s.zero_copy, 3000);
	for (int i = 0; i < 3000; i++) {
		char want[32];
		snprintf(want, sizeof want, "{\"id\":%d}", i);
		cr_assert_str_eq(s.lines[i], want);
	}
	buf_free(&b);
	tfr_sink_free(&s);
	framer_free(f);
}

static uint32_t tfr_rand(uint32_t *state)
{
	/* xorshift32: fixed seed, same run every time. */
	uint32_t x = *state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

Test(framer, random_garbage_never_breaks_invariants)
{
	uint32_t seed = 0x9e3779b9u;
	char data[512];

	for (int round = 0; round < 400; round++) {
		size_t max = 1 + tfr_rand(&seed) % 64;
		struct framer *f = framer_new(max);
		struct tfr_sink s = {0};
		for (int k = 0; k < 8; k++) {
			size_t len = tfr_rand(&seed) % sizeof data;
			for (size_t i = 0; i < len; i++) {
				uint32_t r = tfr_rand(&seed);
				/* Plenty of newlines so lines get cut. */
				data[i] = (r % 7 == 0) ? '\n' : (char)(r >> 8);
			}
			tfr_feed(f, &s, data, len);
			for (int i = 0; i < s.nlines; i++) {
				cr_assert_eq(
					memchr(s.lines[i], '\n', s.lens[i]),
					NULL);
				cr_assert_eq(framer_utf8_prefix(s.lines[i],
								s.lens[i]),
					     s.lens[i]);
				cr_assert_gt(s.lens[i], 0);
				cr_assert_leq(s.lens[i], max);
			}
			tfr_sink_free(&s);
		}
		framer_free(f);
	}
}

/* ---- the edges of an oversize line (which request it answered) ---- */

struct tfr_edges {
	int calls;
	char head[FRAMER_EDGE + 1], tail[FRAMER_EDGE + 1];
};

static struct tfr_edges *tfr_edges_seen;

static void tfr_on_overlong(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len)
{
	struct tfr_edges *e = tfr_edges_seen;
	e->calls++;
	memcpy(e->head, head, head_len);
	e->head[head_len] = '\0';
	memcpy(e->tail, tail, tail_len);
	e->tail[tail_len] = '\0';
}

Test(framer, oversize_line_edges_kept_across_feeds)
{
	struct framer *f = framer_new(1000);
	struct tfr_sink s = {0};
	struct tfr_edges e = {0};
	tfr_edges_seen = &e;
	framer_on_overlong(f, tfr_on_overlong);
	/* {"result":"xxxx...","jsonrpc":"2.0","id":7} in odd-sized pieces,
	 * the limit crossed in the middle of a feed. */
	struct buf line;
	buf_init(&line);
	buf_puts(&line, "{\"result\":\"");
	for (int i = 0; i < 5000; i++)
		buf_puts(&line, "x");
	buf_puts(&line, "\",\"jsonrpc\":\"2.0\",\"id\":7}\r\n{\"ok\":1}\n");
	for (size_t off = 0; off < line.len; off += 333) {
		size_t n = line.len - off < 333 ? line.len - off : 333;
		tfr_feed(f, &s, line.data + off, n);
	}
	cr_assert_eq(e.calls, 1);
	cr_assert_eq(strncmp(e.head, "{\"result\":\"xxx", 14), 0, "%s", e.head);
	cr_assert_eq(strlen(e.head), FRAMER_EDGE);
	const char *end = "\",\"jsonrpc\":\"2.0\",\"id\":7}";
	size_t tl = strlen(e.tail);
	cr_assert_eq(tl, FRAMER_EDGE - 1); /* its '\r' taken off */
	cr_assert_str_eq(e.tail + tl - strlen(end), end);
	cr_assert_eq(s.nlines, 1);
	cr_assert_str_eq(s.lines[0], "{\"ok\":1}");
	/* One whole oversize line in a single feed. */
	buf_reset(&line);
	for (int i = 0; i < 2000; i++)
		buf_puts(&line, "y");
	buf_puts(&line, "END\n");
	tfr_feed(f, &s, line.data, line.len);
	cr_assert_eq(e.calls, 2);
	cr_assert_eq(e.tail[strlen(e.tail) - 1], 'D');
	buf_free(&line);
	for (int i = 0; i < s.nlines; i++)
		free(s.lines[i]);
	framer_free(f);
}
