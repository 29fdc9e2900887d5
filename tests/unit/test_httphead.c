/*
 * Unit tests for the reader of the common request head (src/http/
 * httphead.c): it takes what MCP clients send, in place, and declines the
 * rest. That the requests it takes are the library's is held by
 * test_httpparse and the fuzz target; here, that it takes them at all.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "http/httphead.h"

struct th_read {
	int n;
	struct httphead h;
	struct httphead_span *spans;
	size_t cap;
	unsigned short known[HTTP_H_COUNT];
	char *copy;
};

static struct th_read th_read(const char *head)
{
	struct th_read r = {0};
	r.copy = strdup(head);
	r.n = httphead_read(r.copy, strlen(head), &r.h, &r.spans, &r.cap,
			    r.known);
	return r;
}

static void th_free(struct th_read *r)
{
	free(r->spans);
	free(r->copy);
}

static const char *th_name(const struct th_read *r, int i)
{
	return r->copy + r->spans[i].name;
}

static const char *th_value(const struct th_read *r, int i)
{
	return r->copy + r->spans[i].value;
}

/* The heads the TypeScript SDK's client, the bench's and the relay's
 * libcurl send. */
Test(httphead, takes_what_clients_send)
{
	static const char *const heads[] = {
		"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:7345\r\n"
		"connection: keep-alive\r\ncontent-type: application/json\r\n"
		"accept: application/json, text/event-stream\r\n"
		"mcp-session-id: 9f1c\r\nmcp-protocol-version: 2025-11-25\r\n"
		"accept-language: *\r\nsec-fetch-mode: cors\r\n"
		"user-agent: node\r\naccept-encoding: gzip, deflate\r\n"
		"content-length: 57\r\n\r\n",
		"POST /mcp?space=%2Fhome%2Fa HTTP/1.1\r\nHost: localhost\r\n"
		"Accept: application/json, text/event-stream\r\n"
		"Content-Type: application/json\r\nContent-Length: 131\r\n\r\n",
		"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n"
		"Last-Event-ID: 3-12\r\n\r\n",
		"DELETE /mcp HTTP/1.1\r\nHost: h\r\nMcp-Session-Id: s\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		struct th_read r = th_read(heads[i]);
		cr_assert_geq(r.n, 1, "declined:\n%s", heads[i]);
		th_free(&r);
	}
}

Test(httphead, reads_in_place)
{
	struct th_read r =
		th_read("POST /mcp?a=1 HTTP/1.1\r\nHOST: h  \r\nX-Empty:\r\n"
			"Accept: a\r\naccept: b\r\nConnection: close\r\n"
			"Content-Length: 12\r\n\r\n");
	cr_assert_eq(r.n, 6);
	cr_assert_eq(r.h.method, HTTP_M_POST);
	cr_assert_str_eq(r.copy + r.h.url, "/mcp?a=1");
	cr_assert_eq(r.h.content_length, 12);
	cr_assert_not(r.h.keep_alive);
	cr_assert_str_eq(th_name(&r, 0), "host");
	cr_assert_str_eq(th_value(&r, 0), "h");
	cr_assert_eq(r.spans[0].value_len, 1);
	cr_assert_str_eq(th_name(&r, 1), "x-empty");
	cr_assert_str_eq(th_value(&r, 1), "");
	/* known: index + 1 of the first */
	cr_assert_eq(r.known[HTTP_H_HOST], 1);
	cr_assert_eq(r.known[HTTP_H_ACCEPT], 3);
	cr_assert_eq(r.known[HTTP_H_CONTENT_LENGTH], 6);
	cr_assert_eq(r.known[HTTP_H_ORIGIN], 0);
	th_free(&r);
}

/* Each of these goes to the library, which judges it (accepting some,
 * refusing others, reading one differently from a plain reading). */
Test(httphead, declines_what_the_library_must_judge)
{
	static const char *const heads[] = {
		"GET /m HTTP/1.0\r\n\r\n",
		"PUT /m HTTP/1.1\r\n\r\n",
		"GET * HTTP/1.1\r\n\r\n",
		"GET /m#f HTTP/1.1\r\n\r\n",
		"GET /m HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"GET /m HTTP/1.1\nX: a\n\n",
		"GET /m HTTP/1.1\r\nX : a\r\n\r\n",
		"GET /m HTTP/1.1\r\nX: \x7f\r\n\r\n",
		"GET /m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /m HTTP/1.1\r\nTransfer-Encoding-X: y\r\n\r\n",
		"GET /m HTTP/1.1\r\nContent-Length: 1 \r\n\r\n",
		"GET /m HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
		"GET /m HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
		"GET /m HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
		"GET /m HTTP/1.1\r\nConnection: upgrade\r\n\r\n",
		"GET /m HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
		"GET /m HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",
		"GET /m HTTP/1.1\r\n\r\nX",
		"\r\nGET /m HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		struct th_read r = th_read(heads[i]);
		cr_assert_eq(r.n, -1, "taken:\n%s", heads[i]);
		th_free(&r);
	}
}

/* The limits are the library's: at them the reader declines and the
 * library answers with their statuses. */
Test(httphead, declines_at_the_limits)
{
	char *h = malloc(HTTP_MAX_URL + 64);
	strcpy(h, "GET /");
	memset(h + 5, 'a', HTTP_MAX_URL);
	strcpy(h + 5 + HTTP_MAX_URL, " HTTP/1.1\r\n\r\n");
	struct th_read r = th_read(h);
	cr_assert_eq(r.n, -1);
	th_free(&r);
	free(h);

	size_t cap = 32 + (HTTP_MAX_HEADERS + 1) * 8;
	h = malloc(cap);
	strcpy(h, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		strcat(h, "x: y\r\n");
	strcat(h, "\r\n");
	r = th_read(h);
	cr_assert_eq(r.n, HTTP_MAX_HEADERS);
	th_free(&r);
	h[strlen(h) - 2] = '\0';
	strcat(h, "x: y\r\n\r\n");
	r = th_read(h);
	cr_assert_eq(r.n, -1);
	th_free(&r);
	free(h);
}
