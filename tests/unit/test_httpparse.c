/*
 * Unit tests for the HTTP request parser (splits, pipelining, limits,
 * garbage, query strings) and the response writers.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/httpparse.h"
#include "http/httpresp.h"
#include "http/query.h"
#include "util/buf.h"

struct tp_run {
	enum httpparse_state st;
	size_t used;	    /* bytes consumed in total */
	int headers_done;   /* HEADERS_DONE seen */
	size_t hd_consumed; /* total consumed when HEADERS_DONE came */
};

/* Feeds s the way a connection would: step bytes arrive at a time, the
 * unconsumed rest is offered again, until DONE, ERROR or input runs out. */
static struct tp_run tp_drive(struct httpparse *p, const char *s, size_t len,
			      size_t step)
{
	struct tp_run r = {HTTPPARSE_NEED_MORE, 0, 0, 0};
	size_t end = 0;
	while (end < len) {
		end = end + step < len ? end + step : len;
		while (r.used < end) {
			size_t c = 99999999;
			r.st = httpparse_feed(p, s + r.used, end - r.used, &c);
			cr_assert_leq(c, end - r.used);
			r.used += c;
			if (r.st == HTTPPARSE_HEADERS_DONE) {
				r.headers_done++;
				r.hd_consumed = r.used;
				continue;
			}
			if (r.st == HTTPPARSE_DONE || r.st == HTTPPARSE_ERROR)
				return r;
			cr_assert_eq(r.used, end, "NEED_MORE left bytes");
			break;
		}
	}
	return r;
}

static struct tp_run tp_drive_str(struct httpparse *p, const char *s,
				  size_t step)
{
	return tp_drive(p, s, strlen(s), step);
}

static void tp_expect_error(const char *s, size_t len, size_t max_body,
			    int status)
{
	struct httpparse *p = httpparse_new(max_body);
	struct tp_run r = tp_drive(p, s, len, len ? len : 1);
	cr_assert_eq(r.st, HTTPPARSE_ERROR, "state %d", r.st);
	const char *reason = NULL;
	cr_assert_eq(httpparse_error(p, &reason), status, "status %d (%s)",
		     httpparse_error(p, &reason), reason);
	cr_assert(reason && reason[0]);
	httpparse_free(p);
}

Test(httpparse, simple_get)
{
	const char *req = "GET /mcp?x=1 HTTP/1.1\r\nHost: example\r\n\r\n";
	struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
	size_t c;
	cr_assert_eq(httpparse_feed(p, req, strlen(req), &c), HTTPPARSE_DONE);
	cr_assert_eq(c, strlen(req));
	const struct http_request *r = httpparse_request(p);
	cr_assert_eq(r->method, HTTP_M_GET);
	cr_assert_str_eq(r->url, "/mcp?x=1");
	cr_assert_eq(r->nheaders, 1);
	cr_assert_str_eq(r->headers[0].name, "host");
	cr_assert_str_eq(r->headers[0].value, "example");
	cr_assert_eq(r->body_len, 0);
	cr_assert_str_eq(r->body, "");
	cr_assert(r->keep_alive);
	cr_assert_eq(r->http_major, 1);
	cr_assert_eq(r->http_minor, 1);
	/* Feeding before httpparse_next neither consumes nor forgets. */
	cr_assert_eq(httpparse_feed(p, req, strlen(req), &c), HTTPPARSE_DONE);
	cr_assert_eq(c, 0);
	cr_assert_str_eq(httpparse_request(p)->url, "/mcp?x=1");
	httpparse_free(p);
	httpparse_free(NULL);
}

Test(httpparse, methods)
{
	static const struct {
		const char *name;
		enum http_method m;
	} cases[] = {
		{"GET", HTTP_M_GET},	   {"POST", HTTP_M_POST},
		{"DELETE", HTTP_M_DELETE}, {"OPTIONS", HTTP_M_OPTIONS},
		{"HEAD", HTTP_M_HEAD},	   {"PUT", HTTP_M_OTHER},
		{"PATCH", HTTP_M_OTHER},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char req[128];
		snprintf(req, sizeof(req), "%s / HTTP/1.1\r\n\r\n",
			 cases[i].name);
		struct httpparse *p = httpparse_new(100);
		struct tp_run r = tp_drive_str(p, req, 1000);
		cr_assert_eq(r.st, HTTPPARSE_DONE, "%s", cases[i].name);
		cr_assert_eq(httpparse_request(p)->method, cases[i].m, "%s",
			     cases[i].name);
		httpparse_free(p);
	}
}

static const char tp_post[] = "POST /mcp HTTP/1.1\r\n"
			      "Host: h\r\n"
			      "Content-Type: application/json\r\n"
			      "Content-Length: 27\r\n"
			      "\r\n"
			      "{\"jsonrpc\":\"2.0\",\"id\":1}\n\n\n";

static void tp_check_post(struct httpparse *p)
{
	const struct http_request *r = httpparse_request(p);
	cr_assert_eq(r->method, HTTP_M_POST);
	cr_assert_str_eq(r->url, "/mcp");
	cr_assert_eq(r->nheaders, 3);
	cr_assert_str_eq(r->headers[1].name, "content-type");
	cr_assert_str_eq(r->headers[1].value, "application/json");
	cr_assert_eq(r->body_len, 27);
	cr_assert_str_eq(r->body, "{\"jsonrpc\":\"2.0\",\"id\":1}\n\n\n");
}

Test(httpparse, post_content_length)
{
	struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
	struct tp_run r = tp_drive_str(p, tp_post, 100000);
	cr_assert_eq(r.st, HTTPPARSE_DONE);
	cr_assert_eq(r.used, strlen(tp_post));
	cr_assert_eq(r.headers_done, 1);
	/* The body starts where HEADERS_DONE said the headers ended. */
	cr_assert_eq(r.hd_consumed, strlen(tp_post) - 27);
	tp_check_post(p);
	httpparse_free(p);
}

Test(httpparse, post_every_split)
{
	for (size_t step = 1; step < sizeof(tp_post); step++) {
		struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
		struct tp_run r = tp_drive_str(p, tp_post, step);
		cr_assert_eq(r.st, HTTPPARSE_DONE, "step %zu", step);
		cr_assert_eq(r.used, strlen(tp_post));
		cr_assert_eq(r.headers_done, 1, "step %zu", step);
		cr_assert_eq(r.hd_consumed, strlen(tp_post) - 27);
		tp_check_post(p);
		httpparse_free(p);
	}
}

Test(httpparse, post_one_byte_at_a_time)
{
	struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
	size_t len = strlen(tp_post), off = 0;
	int hd = 0;
	enum httpparse_state st = HTTPPARSE_NEED_MORE;
	while (off < len) {
		size_t c;
		st = httpparse_feed(p, tp_post + off, 1, &c);
		off += c;
		if (st == HTTPPARSE_HEADERS_DONE)
			hd++;
		else if (st != HTTPPARSE_NEED_MORE)
			break;
	}
	cr_assert_eq(st, HTTPPARSE_DONE);
	cr_assert_eq(off, len);
	cr_assert_eq(hd, 1);
	tp_check_post(p);
	httpparse_free(p);
}

static const char tp_chunked[] = "POST /c HTTP/1.1\r\n"
				 "Transfer-Encoding: chunked\r\n"
				 "\r\n"
				 "5\r\nhello\r\n"
				 "6;ext=1\r\n world\r\n"
				 "0\r\n"
				 "X-Trailer: t\r\n"
				 "\r\n";

Test(httpparse, chunked_body)
{
	for (size_t step = 1; step <= sizeof(tp_chunked); step += 3) {
		struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
		struct tp_run r = tp_drive_str(p, tp_chunked, step);
		cr_assert_eq(r.st, HTTPPARSE_DONE, "step %zu", step);
		cr_assert_eq(r.used, strlen(tp_chunked));
		cr_assert_eq(r.headers_done, 1);
		const struct http_request *req = httpparse_request(p);
		cr_assert_eq(req->body_len, 11);
		cr_assert_str_eq(req->body, "hello world");
		/* Trailers are not headers. */
		cr_assert_eq(req->nheaders, 1);
		cr_assert_null(http_request_header(req, "x-trailer"));
		httpparse_free(p);
	}
}

Test(httpparse, headers_split_across_feeds)
{
	const char *parts[] = {"GET / HTTP/1.1\r\nX-Lo",
			       "ng-Na",
			       "me:   val",
			       "ue one \r",
			       "\nAccept: a",
			       "\r\n",
			       "\r",
			       "\n"};
	struct httpparse *p = httpparse_new(100);
	enum httpparse_state st = HTTPPARSE_NEED_MORE;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t c;
		st = httpparse_feed(p, parts[i], strlen(parts[i]), &c);
		cr_assert_eq(c, strlen(parts[i]));
		if (i + 1 < sizeof(parts) / sizeof(parts[0]))
			cr_assert_eq(st, HTTPPARSE_NEED_MORE, "part %zu", i);
	}
	cr_assert_eq(st, HTTPPARSE_DONE);
	const struct http_request *r = httpparse_request(p);
	cr_assert_eq(r->nheaders, 2);
	cr_assert_str_eq(r->headers[0].name, "x-long-name");
	cr_assert_str_eq(r->headers[0].value, "value one");
	cr_assert_str_eq(r->headers[1].name, "accept");
	cr_assert_str_eq(r->headers[1].value, "a");
	httpparse_free(p);
}

Test(httpparse, header_lookup)
{
	const char *req = "GET / HTTP/1.1\r\n"
			  "MCP-Session-Id: abc\r\n"
			  "X-Empty:\r\n"
			  "Accept: application/json\r\n"
			  "accept: text/event-stream\r\n"
			  "\r\n";
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, req, 7).st, HTTPPARSE_DONE);
	const struct http_request *r = httpparse_request(p);
	cr_assert_eq(r->nheaders, 4);
	cr_assert_str_eq(r->headers[0].name, "mcp-session-id");
	cr_assert_str_eq(http_request_header(r, "mcp-session-id"), "abc");
	cr_assert_str_eq(http_request_header(r, "MCP-SESSION-ID"), "abc");
	cr_assert_str_eq(http_request_header(r, "x-empty"), "");
	cr_assert_str_eq(http_request_header(r, "ACCEPT"), "application/json");
	cr_assert_str_eq(r->headers[3].name, "accept");
	cr_assert_str_eq(r->headers[3].value, "text/event-stream");
	cr_assert_null(http_request_header(r, "missing"));
	cr_assert_null(http_request_header(r, "accep"));
	httpparse_free(p);
}

static bool tp_keep_alive(const char *req)
{
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, req, 1000).st, HTTPPARSE_DONE);
	bool ka = httpparse_request(p)->keep_alive;
	httpparse_free(p);
	return ka;
}

Test(httpparse, keep_alive)
{
	cr_assert(tp_keep_alive("GET / HTTP/1.1\r\n\r\n"));
	cr_assert_not(tp_keep_alive("GET / HTTP/1.1\r\nConnection: close\r\n"
				    "\r\n"));
	cr_assert_not(tp_keep_alive("GET / HTTP/1.0\r\n\r\n"));
	cr_assert(tp_keep_alive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n"
				"\r\n"));
	struct httpparse *p = httpparse_new(100);
	tp_drive_str(p, "GET / HTTP/1.0\r\n\r\n", 100);
	cr_assert_eq(httpparse_request(p)->http_minor, 0);
	httpparse_free(p);
}

Test(httpparse, pipelined)
{
	const char *first = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n";
	const char *second = "POST /two HTTP/1.1\r\nContent-Length: 3\r\n\r\n"
			     "abc";
	char both[256];
	snprintf(both, sizeof(both), "%s%s", first, second);
	size_t len = strlen(both);

	struct httpparse *p = httpparse_new(100);
	size_t c;
	cr_assert_eq(httpparse_feed(p, both, len, &c), HTTPPARSE_DONE);
	cr_assert_eq(c, strlen(first));
	cr_assert_str_eq(httpparse_request(p)->url, "/one");
	httpparse_next(p);

	size_t off = c;
	cr_assert_eq(httpparse_feed(p, both + off, len - off, &c),
		     HTTPPARSE_HEADERS_DONE);
	off += c;
	cr_assert_eq(httpparse_feed(p, both + off, len - off, &c),
		     HTTPPARSE_DONE);
	off += c;
	cr_assert_eq(off, len);
	const struct http_request *r = httpparse_request(p);
	cr_assert_str_eq(r->url, "/two");
	cr_assert_eq(r->method, HTTP_M_POST);
	cr_assert_eq(r->nheaders, 1);
	cr_assert_str_eq(r->body, "abc");
	cr_assert_null(http_request_header(r, "host"));
	httpparse_next(p);

	/* A third request after the state was reset twice. */
	const char *third = "\r\nDELETE /mcp HTTP/1.1\r\n\r\n";
	cr_assert_eq(httpparse_feed(p, third, strlen(third), &c),
		     HTTPPARSE_DONE);
	cr_assert_eq(c, strlen(third));
	cr_assert_eq(httpparse_request(p)->method, HTTP_M_DELETE);
	httpparse_free(p);
}

Test(httpparse, expect_continue)
{
	const char *head = "POST /mcp HTTP/1.1\r\n"
			   "Expect: 100-continue\r\n"
			   "Content-Length: 10\r\n\r\n";
	struct httpparse *p = httpparse_new(100);
	size_t c;
	cr_assert_eq(httpparse_feed(p, head, strlen(head), &c),
		     HTTPPARSE_HEADERS_DONE);
	cr_assert_eq(c, strlen(head));
	const struct http_request *r = httpparse_request(p);
	cr_assert_str_eq(http_request_header(r, "expect"), "100-continue");
	cr_assert_eq(r->body_len, 0);
	cr_assert_str_eq(r->url, "/mcp");
	/* Reported once: partial body is just NEED_MORE. */
	cr_assert_eq(httpparse_feed(p, "01234", 5, &c), HTTPPARSE_NEED_MORE);
	cr_assert_eq(c, 5);
	cr_assert_eq(httpparse_feed(p, "", 0, &c), HTTPPARSE_NEED_MORE);
	cr_assert_eq(c, 0);
	cr_assert_eq(httpparse_feed(p, "56789", 5, &c), HTTPPARSE_DONE);
	cr_assert_eq(c, 5);
	r = httpparse_request(p);
	cr_assert_eq(r->body_len, 10);
	cr_assert_str_eq(r->body, "0123456789");
	httpparse_free(p);
}

Test(httpparse, no_body_skips_headers_done)
{
	struct httpparse *p = httpparse_new(100);
	struct tp_run r = tp_drive_str(
		p, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1);
	cr_assert_eq(r.st, HTTPPARSE_DONE);
	cr_assert_eq(r.headers_done, 0);
	httpparse_free(p);
}

Test(httpparse, limit_url_414)
{
	size_t n = HTTP_MAX_URL + 100;
	char *req = malloc(n + 64);
	memcpy(req, "GET /", 5);
	memset(req + 5, 'a', n);
	strcpy(req + 5 + n, " HTTP/1.1\r\n\r\n");
	tp_expect_error(req, strlen(req), 100, 414);
	/* Exactly at the limit is fine. */
	strcpy(req + HTTP_MAX_URL + 4, " HTTP/1.1\r\n\r\n");
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, req, 1000).st, HTTPPARSE_DONE);
	cr_assert_eq(strlen(httpparse_request(p)->url), HTTP_MAX_URL);
	httpparse_free(p);
	free(req);
}

Test(httpparse, limit_header_bytes_431)
{
	size_t n = HTTP_MAX_HEADER_BYTES + 10;
	char *req = malloc(n + 64);
	strcpy(req, "GET / HTTP/1.1\r\nX-Big: ");
	size_t off = strlen(req);
	memset(req + off, 'v', n);
	strcpy(req + off + n, "\r\n\r\n");
	tp_expect_error(req, strlen(req), 100, 431);
	/* Split into small feeds it still fails, as the bytes add up. */
	struct httpparse *p = httpparse_new(100);
	struct tp_run r = tp_drive_str(p, req, 100);
	cr_assert_eq(r.st, HTTPPARSE_ERROR);
	cr_assert_eq(httpparse_error(p, NULL), 431);
	httpparse_free(p);
	free(req);
}

static char *tp_many_headers(int n)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < n; i++)
		buf_printf(&b, "X-H%d: %d\r\n", i, i);
	buf_puts(&b, "\r\n");
	return buf_steal(&b);
}

Test(httpparse, limit_header_count_431)
{
	char *ok = tp_many_headers(HTTP_MAX_HEADERS);
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, ok, 13).st, HTTPPARSE_DONE);
	cr_assert_eq(httpparse_request(p)->nheaders, HTTP_MAX_HEADERS);
	httpparse_free(p);
	free(ok);

	char *bad = tp_many_headers(HTTP_MAX_HEADERS + 1);
	tp_expect_error(bad, strlen(bad), 100, 431);
	free(bad);
}

Test(httpparse, limit_content_length_413)
{
	/* Refused at the headers: no body byte is needed to say so. */
	const char *req = "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
	tp_expect_error(req, strlen(req), 100, 413);
	const char *huge = "POST / HTTP/1.1\r\n"
			   "Content-Length: 99999999999999\r\n\r\n";
	tp_expect_error(huge, strlen(huge), HTTP_DEFAULT_MAX_BODY, 413);

	char full[256];
	snprintf(full, sizeof(full),
		 "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n%0100d", 7);
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, full, 9).st, HTTPPARSE_DONE);
	cr_assert_eq(httpparse_request(p)->body_len, 100);
	httpparse_free(p);
}

Test(httpparse, limit_chunked_growth_413)
{
	const char *head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			   "\r\n";
	struct httpparse *p = httpparse_new(10);
	size_t c;
	cr_assert_eq(httpparse_feed(p, head, strlen(head), &c),
		     HTTPPARSE_HEADERS_DONE);
	cr_assert_eq(httpparse_feed(p, "8\r\n12345678\r\n", 13, &c),
		     HTTPPARSE_NEED_MORE);
	cr_assert_eq(httpparse_request(p)->body_len, 8);
	cr_assert_eq(httpparse_feed(p, "3\r\n", 3, &c), HTTPPARSE_ERROR);
	cr_assert_eq(httpparse_error(p, NULL), 413);
	httpparse_free(p);

	/* Many small chunks, each under the limit, add up past it. */
	struct buf b;
	buf_init(&b);
	buf_puts(&b, head);
	for (int i = 0; i < 20; i++)
		buf_puts(&b, "1\r\nx\r\n");
	buf_puts(&b, "0\r\n\r\n");
	tp_expect_error(b.data, b.len, 10, 413);
	p = httpparse_new(10);
	struct tp_run r = tp_drive(p, b.data, b.len, 1);
	cr_assert_eq(r.st, HTTPPARSE_ERROR);
	cr_assert_eq(httpparse_error(p, NULL), 413);
	cr_assert_leq(httpparse_request(p)->body_len, 10);
	httpparse_free(p);
	buf_free(&b);
}

Test(httpparse, upgrade_and_connect_501)
{
	const char *up = "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\n"
			 "Upgrade: websocket\r\n\r\n";
	tp_expect_error(up, strlen(up), 100, 501);
	const char *conn = "CONNECT example.com:443 HTTP/1.1\r\n\r\n";
	tp_expect_error(conn, strlen(conn), 100, 501);
}

Test(httpparse, garbage_400)
{
	const char *bad[] = {
		"GET / HTTP/9.9\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"\x01\x02\x03garbage\r\n\r\n",
		"GET / FTP/1.1\r\n\r\n",
		"GET  HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2"
		"\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tp_expect_error(bad[i], strlen(bad[i]), 100, 400);

	const char nul_value[] = "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
	tp_expect_error(nul_value, sizeof(nul_value) - 1, 100, 400);
	const char nul_name[] = "GET / HTTP/1.1\r\nX-\0A: ab\r\n\r\n";
	tp_expect_error(nul_name, sizeof(nul_name) - 1, 100, 400);
	const char nul_url[] = "GET /a\0b HTTP/1.1\r\n\r\n";
	tp_expect_error(nul_url, sizeof(nul_url) - 1, 100, 400);

	unsigned char rnd[512];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		x = x * 1103515245u + 12345u;
		rnd[i] = (unsigned char)(x >> 16);
	}
	rnd[0] = 0xff; /* not a method letter */
	tp_expect_error((const char *)rnd, sizeof(rnd), 100, 400);
}

Test(httpparse, error_is_sticky)
{
	struct httpparse *p = httpparse_new(100);
	size_t c = 5;
	cr_assert_eq(httpparse_feed(p, "@@@ / HTTP/1.1\r\n\r\n", 18, &c),
		     HTTPPARSE_ERROR);
	const char *why = NULL;
	cr_assert_eq(httpparse_error(p, &why), 400);
	cr_assert(why && why[0]);
	const char *good = "GET / HTTP/1.1\r\n\r\n";
	cr_assert_eq(httpparse_feed(p, good, strlen(good), &c),
		     HTTPPARSE_ERROR);
	cr_assert_eq(c, 0);
	httpparse_next(p);
	cr_assert_eq(httpparse_feed(p, good, strlen(good), &c),
		     HTTPPARSE_ERROR);
	cr_assert_eq(httpparse_error(p, NULL), 400);
	httpparse_free(p);
}

static void tp_param(const char *url, const char *name, const char *want)
{
	char *got = http_query_param(url, name);
	if (want == NULL) {
		cr_assert_null(got, "%s [%s] gave %s", url, name, got);
	} else {
		cr_assert_not_null(got, "%s [%s]", url, name);
		cr_assert_str_eq(got, want, "%s [%s]", url, name);
	}
	free(got);
}

Test(httpparse, query_params)
{
	tp_param("/mcp?a=1&b=two", "a", "1");
	tp_param("/mcp?a=1&b=two", "b", "two");
	tp_param("/mcp?a=1&b=two", "c", NULL);
	tp_param("/mcp", "a", NULL);
	tp_param("/mcp?", "a", NULL);
	tp_param("/mcp?a=hello%20world%21", "a", "hello world!");
	tp_param("/mcp?a=x+y+z", "a", "x y z");
	tp_param("/mcp?a=%2B%2b", "a", "++");
	tp_param("/mcp?my+key=v&my%20key=w", "my key", "v");
	tp_param("/mcp?a=1&a=2", "a", "1");
	tp_param("/mcp?x", "x", "");
	tp_param("/mcp?x=", "x", "");
	tp_param("/mcp?x=&y", "y", "");
	tp_param("/mcp?&&x=1&&", "x", "1");
	tp_param("/mcp?x=a=b", "x", "a=b");
	tp_param("/mcp?x=%zz", "x", NULL);
	tp_param("/mcp?x=%4", "x", NULL);
	tp_param("/mcp?x=%", "x", NULL);
	tp_param("/mcp?x=a%00b", "x", NULL);
	tp_param("/mcp?bad%zz=1&x=2", "x", "2");
	tp_param("/mcp?x=1#frag", "x", "1");
	tp_param("/mcp?x=1#&y=2", "y", NULL);
	tp_param("/mcp#?x=1", "x", NULL);
	tp_param("/mcp?x=%C3%A9", "x", "\xc3\xa9");
}

Test(httpparse, url_path)
{
	const char *cases[][2] = {
		{"/mcp?a=1", "/mcp"}, {"/mcp", "/mcp"}, {"/mcp#f?x", "/mcp"},
		{"/a/b?", "/a/b"},    {"?x=1", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = http_url_path(cases[i][0]);
		cr_assert_str_eq(path, cases[i][1]);
		free(path);
	}
}

Test(httpresp, simple_exact)
{
	struct buf b;
	buf_init(&b);
	httpresp_simple(&b, 200, "application/json", "{}", 2, true, NULL);
	cr_assert_str_eq(b.data, "HTTP/1.1 200 OK\r\n"
				 "Content-Type: application/json\r\n"
				 "Content-Length: 2\r\n"
				 "Connection: keep-alive\r\n"
				 "\r\n"
				 "{}");
	buf_reset(&b);
	httpresp_simple(&b, 404, NULL, NULL, 0, false,
			"WWW-Authenticate: Bearer\r\n");
	cr_assert_str_eq(b.data, "HTTP/1.1 404 Not Found\r\n"
				 "Content-Length: 0\r\n"
				 "Connection: close\r\n"
				 "WWW-Authenticate: Bearer\r\n"
				 "\r\n");
	buf_reset(&b);
	httpresp_simple(&b, 202, NULL, "", 0, true, NULL);
	cr_assert_str_eq(b.data, "HTTP/1.1 202 Accepted\r\n"
				 "Content-Length: 0\r\n"
				 "Connection: keep-alive\r\n"
				 "\r\n");
	buf_free(&b);
}

Test(httpresp, head_exact)
{
	struct buf b;
	buf_init(&b);
	httpresp_head(&b, 200, "text/event-stream", -1, true,
		      "Mcp-Session-Id: s1\r\n");
	cr_assert_str_eq(b.data, "HTTP/1.1 200 OK\r\n"
				 "Content-Type: text/event-stream\r\n"
				 "Cache-Control: no-cache\r\n"
				 "Connection: keep-alive\r\n"
				 "Mcp-Session-Id: s1\r\n"
				 "\r\n");
	buf_reset(&b);
	httpresp_head(&b, 100, NULL, -1, true, NULL);
	cr_assert_str_eq(b.data, "HTTP/1.1 100 Continue\r\n\r\n");
	buf_reset(&b);
	httpresp_head(&b, 204, NULL, 0, false, NULL);
	cr_assert_str_eq(b.data, "HTTP/1.1 204 No Content\r\n"
				 "Connection: close\r\n"
				 "\r\n");
	buf_free(&b);
}

Test(httpresp, reasons)
{
	cr_assert_str_eq(httpresp_reason(413), "Content Too Large");
	cr_assert_str_eq(httpresp_reason(431),
			 "Request Header Fields Too Large");
	cr_assert_str_eq(httpresp_reason(503), "Service Unavailable");
	cr_assert_str_eq(httpresp_reason(999), "Unknown");
	const int all[] = {100, 200, 202, 204, 400, 401, 403, 404, 405,
			   406, 413, 414, 415, 431, 500, 501, 503};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cr_assert_str_neq(httpresp_reason(all[i]), "Unknown", "%d",
				  all[i]);
}

Test(httpresp, sse_event)
{
	struct buf b;
	buf_init(&b);
	httpresp_sse_event(&b, "7", "message", "{\"a\":1}", 7, -1);
	cr_assert_str_eq(b.data, "id: 7\nevent: message\ndata: {\"a\":1}\n\n");

	buf_reset(&b);
	const char data[] = "one\r\ntwo\rthree\nfour\n";
	httpresp_sse_event(&b, NULL, NULL, data, sizeof(data) - 1, 3000);
	cr_assert_str_eq(b.data, "retry: 3000\n"
				 "data: one\n"
				 "data: two\n"
				 "data: three\n"
				 "data: four\n"
				 "data: \n"
				 "\n");

	buf_reset(&b);
	httpresp_sse_event(&b, "a\nevent: evil", NULL, "", 0, -1);
	cr_assert_str_eq(b.data, "id: a\ndata: \n\n");

	buf_reset(&b);
	httpresp_sse_event(&b, "p1", NULL, NULL, 0, 500);
	cr_assert_str_eq(b.data, "id: p1\nretry: 500\n\n");

	buf_reset(&b);
	httpresp_sse_event(&b, NULL, NULL, "a\n\nb", 4, -1);
	cr_assert_str_eq(b.data, "data: a\ndata: \ndata: b\n\n");
	buf_free(&b);
}

static uint32_t tp_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Mutated requests in random splits: any outcome but a crash, a leak or an
 * out-of-range answer is a failure. */
Test(httpparse, random_input_never_crashes)
{
	static const char *seeds[] = {
		tp_post,
		tp_chunked,
		"GET /mcp?a=1 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n",
	};
	const char alphabet[] = "\r\n :;0123456789abcdefABCDEF\x00\x7f\xff%?#";
	uint32_t seed = 0x9e3779b9u;
	char buf[600];
	int counts[4] = {0};
	for (int iter = 0; iter < 4000; iter++) {
		size_t len;
		if (iter % 4 == 0) {
			len = tp_rand(&seed) % sizeof(buf);
			for (size_t i = 0; i < len; i++)
				buf[i] = (char)tp_rand(&seed);
		} else {
			const char *s = seeds[tp_rand(&seed) % 4];
			len = strlen(s);
			memcpy(buf, s, len);
			int muts = 1 + (int)(tp_rand(&seed) % 4);
			for (int m = 0; m < muts; m++) {
				size_t at = tp_rand(&seed) % len;
				buf[at] = alphabet[tp_rand(&seed) %
						   (sizeof(alphabet) - 1)];
			}
			len = tp_rand(&seed) % (len + 1);
		}
		struct httpparse *p = httpparse_new(64);
		size_t step = 1 + tp_rand(&seed) % 40;
		struct tp_run r = tp_drive(p, buf, len, step);
		cr_assert_leq(r.used, len);
		cr_assert_leq(r.headers_done, 1);
		counts[r.st]++;
		if (r.st == HTTPPARSE_ERROR) {
			const char *why = NULL;
			int st = httpparse_error(p, &why);
			cr_assert(st == 400 || st == 413 || st == 414 ||
					  st == 431 || st == 501,
				  "status %d", st);
			cr_assert_not_null(why);
		} else if (r.st == HTTPPARSE_DONE) {
			const struct http_request *req = httpparse_request(p);
			cr_assert_not_null(req->url);
			cr_assert_not_null(req->body);
			cr_assert_leq(req->body_len, 64);
			cr_assert_eq(req->body[req->body_len], '\0');
			httpparse_next(p);
		}
		httpparse_free(p);
	}
	/* The mutations leave enough intact to exercise every outcome. */
	cr_assert_gt(counts[HTTPPARSE_DONE], 100);
	cr_assert_gt(counts[HTTPPARSE_ERROR], 100);
	cr_assert_gt(counts[HTTPPARSE_NEED_MORE], 100);
}

/* The same error, with the same status, however the bytes are split. */
static void tp_expect_error_any_split(const char *s, size_t len, int status)
{
	static const size_t steps[] = {1, 2, 3, 7, 64, 0};
	for (int i = 0; steps[i] || i == 5; i++) {
		size_t step = steps[i] ? steps[i] : len;
		struct httpparse *p = httpparse_new(HTTP_DEFAULT_MAX_BODY);
		struct tp_run r = tp_drive(p, s, len, step);
		cr_assert_eq(r.st, HTTPPARSE_ERROR, "step %zu: state %d", step,
			     r.st);
		const char *reason = NULL;
		cr_assert_eq(httpparse_error(p, &reason), status,
			     "step %zu: status %d (%s)", step,
			     httpparse_error(p, &reason), reason);
		httpparse_free(p);
		if (steps[i] == 0)
			break;
	}
}

Test(httpparse, second_host_or_origin_is_refused)
{
	const char *host = "GET / HTTP/1.1\r\nHost: localhost\r\n"
			   "Host: evil.example\r\n\r\n";
	tp_expect_error_any_split(host, strlen(host), 400);
	const char *origin = "GET / HTTP/1.1\r\nOrigin: http://localhost\r\n"
			     "Origin: http://evil.example\r\n\r\n";
	tp_expect_error_any_split(origin, strlen(origin), 400);
	const char *sid = "GET / HTTP/1.1\r\nMcp-Session-Id: a\r\n"
			  "mcp-session-id: b\r\n\r\n";
	tp_expect_error_any_split(sid, strlen(sid), 400);
	/* Headers that may repeat still do. */
	struct httpparse *p = httpparse_new(100);
	const char *ok = "GET / HTTP/1.1\r\nAccept: a\r\nAccept: b\r\n\r\n";
	struct tp_run r = tp_drive_str(p, ok, strlen(ok));
	cr_assert_eq(r.st, HTTPPARSE_DONE);
	httpparse_free(p);
}

Test(httpparse, bare_cr_in_the_head_is_refused)
{
	/* Lenient parsing read this as `origin: ...`. */
	const char *s = "GET / HTTP/1.1\r\nX:\rXOrigin: http://evil\r\n\r\n";
	tp_expect_error_any_split(s, strlen(s), 400);
	const char *end = "GET / HTTP/1.1\r\nHost: a\r\r\n\r\n";
	tp_expect_error_any_split(end, strlen(end), 400);
}

Test(httpparse, chunk_framing_is_checked)
{
	const char *longer = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			     "\r\n2\r\nabcdef\r\n0\r\n\r\n";
	tp_expect_error_any_split(longer, strlen(longer), 400);
	const char *no_crlf =
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		"\r\n2\r\nab0\r\n\r\n";
	tp_expect_error_any_split(no_crlf, strlen(no_crlf), 400);
	const char *bare = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			   "\r\n2\rXab\r\n0\r\n\r\n";
	tp_expect_error_any_split(bare, strlen(bare), 400);
	/* Good framing with an extension and a trailer, in any split. */
	const char *good = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			   "\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n";
	for (size_t step = 1; step <= strlen(good); step++) {
		struct httpparse *p = httpparse_new(100);
		struct tp_run r = tp_drive_str(p, good, step);
		cr_assert_eq(r.st, HTTPPARSE_DONE, "step %zu", step);
		cr_assert_str_eq(httpparse_request(p)->body, "abcde");
		httpparse_free(p);
	}
}

Test(httpparse, status_does_not_depend_on_the_split)
{
	/* The fuzzer's case: 400 whole, 431 byte by byte before. */
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 64; i++)
		buf_puts(&b, "g:\n");
	buf_puts(&b, "o\xef\r\n\r\n");
	struct httpparse *p = httpparse_new(100);
	struct tp_run whole = tp_drive(p, b.data, b.len, b.len);
	int want = httpparse_error(p, NULL);
	cr_assert_eq(whole.st, HTTPPARSE_ERROR);
	httpparse_free(p);
	tp_expect_error_any_split(b.data, b.len, want);
	/* A head that never ends: 431 at the head limit, in any split. */
	buf_reset(&b);
	buf_puts(&b, "GET / HTTP/1.1\r\n");
	while (b.len < HTTP_MAX_HEAD + 100)
		buf_puts(
			&b,
			"X-A: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n");
	tp_expect_error_any_split(b.data, b.len, 431);
	buf_free(&b);
	/* The fuzzer again: a bad byte in one chunk size and a too large
	 * next chunk were 413 whole and 400 split; the first error in the
	 * bytes wins. */
	const char *ck = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "5\xcf\r\nhello\r\nFFFFFFF\r\n";
	tp_expect_error_any_split(ck, strlen(ck), 400);
}

Test(httpparse, garbage_is_refused_at_once)
{
	/* No need to wait for the head's end to refuse what no head has. */
	struct httpparse *p = httpparse_new(100);
	size_t c;
	cr_assert_eq(httpparse_feed(p, "\x01", 1, &c), HTTPPARSE_ERROR);
	httpparse_free(p);
	p = httpparse_new(100);
	cr_assert_eq(httpparse_feed(p, "get ", 4, &c), HTTPPARSE_ERROR);
	httpparse_free(p);
}

/* Empty lines before a request line are skipped; the request after them in
 * the same bytes is read at once (it used to wait, NEED_MORE, for bytes the
 * client had already sent; found by tests/fuzz/fuzz_httpparse). */
Test(httpparse, empty_lines_then_request_in_one_feed)
{
	const char *s = "\r\n\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n";
	struct httpparse *p = httpparse_new(1024);
	size_t used = 0;
	cr_assert_eq(httpparse_feed(p, s, strlen(s), &used), HTTPPARSE_DONE);
	cr_assert_eq(used, strlen(s));
	cr_assert_str_eq(httpparse_request(p)->url, "/x");
	/* and after a request, as a client's stray CRLF after a body */
	httpparse_next(p);
	const char *t = "\r\nGET /y HTTP/1.1\r\n\r\n";
	cr_assert_eq(httpparse_feed(p, t, strlen(t), &used), HTTPPARSE_DONE);
	cr_assert_eq(used, strlen(t));
	cr_assert_str_eq(httpparse_request(p)->url, "/y");
	httpparse_free(p);
}

/* Every known header is found by its slot as by its name, in any case; a
 * repeatable one (Accept) keeps its first value; a name of a known one's
 * length that is not it is no known header. */
Test(httpparse, known_headers_are_found_once_as_parsed)
{
	const char *req = "POST /mcp HTTP/1.1\r\n"
			  "Host: a\r\nORIGIN: b\r\nContent-Type: c\r\n"
			  "Last-Event-ID: d\r\nMcp-Session-Id: e\r\n"
			  "Content-Length: 0\r\nMCP-Protocol-Version: g\r\n"
			  "Accept: h\r\naccept: h2\r\nAuthorization: i\r\n"
			  "Mcp-Method: k\r\nMcp-Name: l\r\nX-Name01: m\r\n"
			  "Expecx: n\r\n\r\n";
	struct httpparse *p = httpparse_new(100);
	cr_assert_eq(tp_drive_str(p, req, 5).st, HTTPPARSE_DONE);
	const struct http_request *r = httpparse_request(p);
	static const struct {
		enum http_hdr h;
		const char *name, *value;
	} want[] = {
		{HTTP_H_HOST, "host", "a"},
		{HTTP_H_ORIGIN, "origin", "b"},
		{HTTP_H_CONTENT_TYPE, "content-type", "c"},
		{HTTP_H_LAST_EVENT_ID, "last-event-id", "d"},
		{HTTP_H_MCP_SESSION_ID, "mcp-session-id", "e"},
		{HTTP_H_CONTENT_LENGTH, "content-length", "0"},
		{HTTP_H_MCP_PROTOCOL_VERSION, "mcp-protocol-version", "g"},
		{HTTP_H_ACCEPT, "accept", "h"},
		{HTTP_H_AUTHORIZATION, "authorization", "i"},
		{HTTP_H_MCP_METHOD, "mcp-method", "k"},
		{HTTP_H_MCP_NAME, "mcp-name", "l"},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cr_assert_str_eq(http_request_known(r, want[i].h),
				 want[i].value, "%s", want[i].name);
		cr_assert_str_eq(http_request_header(r, want[i].name),
				 want[i].value, "%s", want[i].name);
	}
	cr_assert_null(http_request_known(r, HTTP_H_EXPECT),
		       "Expecx is not it");
	cr_assert_null(http_request_known(r, HTTP_H_TRANSFER_ENCODING));
	cr_assert_str_eq(http_request_header(r, "x-name01"), "m");
	/* The next request on the connection starts with none known. */
	httpparse_next(p);
	cr_assert_eq(
		tp_drive_str(p, "GET / HTTP/1.1\r\nExpect: x\r\n\r\n", 3).st,
		HTTPPARSE_DONE);
	r = httpparse_request(p);
	cr_assert_null(http_request_known(r, HTTP_H_HOST));
	cr_assert_str_eq(http_request_known(r, HTTP_H_EXPECT), "x");
	httpparse_free(p);
}

/* What one whole feed of s reads: every request (method, version,
 * keep-alive, target, headers in order, known slots, body) and how it
 * ends, as text to compare. */
static void tp_digest(const char *s, size_t len, bool library_only,
		      struct buf *d)
{
	struct httpparse *p = httpparse_new(1000);
	if (library_only)
		httpparse_library_only(p);
	size_t off = 0;
	while (off < len) {
		size_t used = 0;
		enum httpparse_state st =
			httpparse_feed(p, s + off, len - off, &used);
		off += used;
		if (st == HTTPPARSE_HEADERS_DONE)
			continue;
		if (st == HTTPPARSE_ERROR) {
			const char *why = NULL;
			int status = httpparse_error(p, &why);
			buf_printf(d, "ERROR %d %s", status, why);
			break;
		}
		if (st == HTTPPARSE_NEED_MORE) {
			buf_puts(d, "NEED_MORE");
			break;
		}
		const struct http_request *r = httpparse_request(p);
		buf_printf(d, "m%d %d.%d ka%d [%s]", (int)r->method,
			   r->http_major, r->http_minor, (int)r->keep_alive,
			   r->url);
		for (size_t i = 0; i < r->nheaders; i++)
			buf_printf(d, " [%s|%s]", r->headers[i].name,
				   r->headers[i].value);
		for (int k = 0; k < HTTP_H_COUNT; k++)
			buf_printf(d, " %d=%s", k,
				   r->known[k] ? r->known[k] : "-");
		buf_printf(d, " body %zu [%s]\n", r->body_len, r->body);
		httpparse_next(p);
	}
	httpparse_free(p);
}

/* The reader of the common head (httphead.c) takes what clients send and
 * declines the rest; either way the requests read are the library's, and
 * so are the refusals (the fuzz target compares the same on any input). */
Test(httpparse, the_common_head_is_read_as_the_library_reads_it)
{
	static const char *const heads[] = {
		/* what the SDKs send */
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:7345\r\n"
		"Accept: application/json, text/event-stream\r\n"
		"Content-Type: application/json\r\nMcp-Session-Id: s1\r\n"
		"MCP-Protocol-Version: 2025-11-25\r\nConnection: keep-alive\r\n"
		"User-Agent: node\r\nContent-Length: 5\r\n\r\n{\"a\"}",
		"GET /mcp?space=a%20b&x=1 HTTP/1.1\r\nHost: h\r\n"
		"Last-Event-ID: 0-7\r\nAccept: text/event-stream\r\n\r\n",
		"DELETE /mcp HTTP/1.1\r\nHost: h\r\nMcp-Session-Id: s\r\n"
		"Connection: Close\r\n\r\n",
		/* blanks, case, empty and repeated values, pipelining */
		"POST /m HTTP/1.1\r\nHOST:h  \r\nX-Empty:\r\nACCEPT: a\r\n"
		"accept: b\r\nContent-Length: 00002\r\n\r\nabGET / HTTP/1.1\r\n"
		"Host: x\r\n\r\n",
		/* near misses, which the library judges */
		"POST /m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		"2\r\nab\r\n0\r\n\r\n",
		"POST /m HTTP/1.1\r\nTransfer-Encodingx: y\r\n\r\n",
		"POST /m HTTP/1.1\r\nContent-Length: 2 \t\r\n\r\nab",
		"POST /m HTTP/1.1\r\nContent-Length: 2 \r\n\r\nab",
		"POST /m HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1"
		"\r\n\r\na",
		"POST /m HTTP/1.1\r\nContent-Length: 5000\r\n\r\n",
		"GET /m HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET /m HTTP/1.1\nHost: a\n\n",
		"GET /m HTTP/1.0\r\nHost: a\r\n\r\n",
		"HEAD /m HTTP/1.1\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\n\r\n",
		"GET http://a/m HTTP/1.1\r\n\r\n",
		"GET /m#f HTTP/1.1\r\n\r\n",
		"GET /m\x80 HTTP/1.1\r\n\r\n",
		"GET /m HTTP/1.1\r\nX: \x80\r\n\r\n",
		"GET /m HTTP/1.1\r\nX : y\r\n\r\n",
		"GET /m HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: ws\r\n\r\n",
		"GET /m HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
		"GET /m HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",
		"GET /m HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /m  HTTP/1.1\r\n\r\n",
		"GET /m HTTP/1.1 \r\n\r\n",
		"\r\nGET /m HTTP/1.1\r\n\r\n",
		"DELETE /mcp HT\n\r\nGET / HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		struct buf fast, lib;
		buf_init(&fast);
		buf_init(&lib);
		tp_digest(heads[i], strlen(heads[i]), false, &fast);
		tp_digest(heads[i], strlen(heads[i]), true, &lib);
		cr_assert_str_eq(fast.data, lib.data, "head %zu:\n%s\n%s\n%s",
				 i, heads[i], fast.data, lib.data);
		buf_free(&fast);
		buf_free(&lib);
	}
}

/* A line the library reads as a request line without a version used to
 * be taken with the empty line after it as nothing at all, and the next
 * head read as its rest; it is refused where it is. */
Test(httpparse, a_request_line_without_a_version_is_refused)
{
	const char *s = "DELETE /mcp HT\n\r\nGET / HTTP/1.1\r\n\r\n";
	for (int lib = 0; lib < 2; lib++) {
		struct httpparse *p = httpparse_new(100);
		if (lib)
			httpparse_library_only(p);
		size_t used = 0;
		cr_assert_eq(httpparse_feed(p, s, strlen(s), &used),
			     HTTPPARSE_ERROR);
		const char *why;
		cr_assert_eq(httpparse_error(p, &why), 400);
		cr_assert_str_eq(why, "malformed request line");
		httpparse_free(p);
	}
}
