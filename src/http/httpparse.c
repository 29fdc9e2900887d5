/*
 * HTTP/1.1 request parser on top of libhttp-parser: accumulates the split
 * pieces the library hands out, enforces our size limits with the status
 * each one deserves, and stops after every request so pipelined bytes wait.
 */
#include "http/httpparse.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* http_parser.h declares its own enum http_method, which would clash with
 * ours; rename its tag within this file only (it is an int either way). */
#define http_method hp_lib_method
#include <http_parser.h>
#undef http_method

#include "http/httphead.h"
#include "util/buf.h"
#include "util/xmalloc.h"

enum httpparse_phase {
	PHASE_HEADERS, /* request line and headers */
	PHASE_BODY,    /* headers reported, body coming */
	PHASE_DONE,    /* request complete, parser paused */
	PHASE_ERROR,
};

/* Which header piece the library reported last, to tell a name that
 * continues across feeds from the start of the next header. */
enum httpparse_hpiece { HP_NONE, HP_FIELD, HP_VALUE };

/* Our own check of chunked framing over the bytes the library took: the
 * library, built lenient, skips the CRLF after chunk data unchecked. */
enum httpparse_chunk {
	CK_SIZE,
	CK_EXT,
	CK_SIZE_LF,
	CK_DATA,
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TRAILER_START,
	CK_TRAILER,
	CK_END_LF,
	CK_END,
};

struct httpparse {
	http_parser hp;
	struct buf head;   /* the head, gathered until it ends */
	size_t head_scan;  /* head bytes known not to end it */
	bool head_started; /* the request line has begun */
	/* Each known header's span (index + 1), the first; 0: none yet. */
	unsigned short known[HTTP_H_COUNT];
	bool repeated; /* a single-valued one came twice */
	bool chunked;  /* the body is chunked: framing checked */
	enum httpparse_chunk ck;
	uint64_t ck_left; /* chunk data bytes still to come */
	bool ck_digits;	  /* a size digit was seen */
	bool ck_bad;	  /* the framing broke at the end of the last scan */
	size_t max_body;
	enum httpparse_phase phase;
	bool headers_complete;
	bool headers_pending; /* paused in on_headers_complete */
	enum httpparse_hpiece hpiece;
	size_t header_bytes;
	struct buf url, body;
	/* Every header of the request, name (lower-cased) and value, each
	 * NUL-terminated, one after the other: one buffer kept from request
	 * to request, so a request's headers cost no allocation. The
	 * request's pointers into it are set when the head ends (it may move
	 * while it grows). */
	struct buf hstore;
	struct httphead_span *spans; /* where each header lies in hstore */
	size_t nspans, hcap;
	size_t req_cap; /* room in req.headers */
	struct http_request req;
	/* The head was read by httphead.c, not the library: the body is
	 * counted here, body_left bytes still to come. */
	bool fast;
	uint64_t body_left;
	bool library_only; /* httpparse_library_only */
	int err_status;
	const char *err_reason;
};

static int httpparse_fail(struct httpparse *p, int status, const char *reason)
{
	p->err_status = status;
	p->err_reason = reason;
	return -1;
}

/* The value of the header in progress is whole: its trailing blanks go
 * (the library skips the leading ones), it gets its NUL, and the name is
 * checked against the single-valued ones. */
static void httpparse_commit_header(struct httpparse *p)
{
	struct httphead_span *h = &p->spans[p->nspans - 1];
	if (p->hpiece == HP_FIELD) { /* a name without a value */
		buf_append(&p->hstore, "", 1);
		h->value = p->hstore.len;
	}
	size_t end = p->hstore.len;
	while (end > h->value && (p->hstore.data[end - 1] == ' ' ||
				  p->hstore.data[end - 1] == '\t'))
		end--;
	p->hstore.len = end;
	h->value_len = end - h->value;
	buf_append(&p->hstore, "", 1);
	int k = httphead_known(p->hstore.data + h->name, h->name_len);
	if (k < 0)
		return;
	if (p->known[k] == 0)
		p->known[k] = p->nspans; /* the first: its index + 1 */
	else if (k < HTTP_H_SINGLES)
		p->repeated = true;
}

static int httpparse_count_header_bytes(struct httpparse *p, size_t len)
{
	p->header_bytes += len;
	if (p->header_bytes > HTTP_MAX_HEADER_BYTES)
		return httpparse_fail(p, 431, "request headers too large");
	return 0;
}

static int httpparse_url_cb(http_parser *hp, const char *at, size_t len)
{
	struct httpparse *p = hp->data;
	if (p->url.len + len > HTTP_MAX_URL)
		return httpparse_fail(p, 414, "request target too long");
	buf_append(&p->url, at, len);
	return 0;
}

static int httpparse_header_field_cb(http_parser *hp, const char *at,
				     size_t len)
{
	struct httpparse *p = hp->data;
	if (httpparse_count_header_bytes(p, len) < 0)
		return -1;
	/* Trailers of a chunked body are bounded but not kept; their names
	 * are checked as the head's are (below). */
	if (p->headers_complete)
		return memchr(at, ' ', len) || memchr(at, '\t', len)
			       ? httpparse_fail(p, 400, "invalid header name")
			       : 0;
	if (p->hpiece != HP_FIELD) {
		if (p->hpiece == HP_VALUE)
			httpparse_commit_header(p);
		if (p->nspans >= HTTP_MAX_HEADERS)
			return httpparse_fail(p, 431, "too many headers");
		if (p->nspans == p->hcap) {
			p->hcap = p->hcap ? p->hcap * 2 : 16;
			p->spans =
				xrealloc(p->spans, p->hcap * sizeof(*p->spans));
		}
		p->spans[p->nspans++] =
			(struct httphead_span){.name = p->hstore.len};
		p->hpiece = HP_FIELD;
	}
	size_t from = p->hstore.len;
	buf_append(&p->hstore, at, len);
	for (char *c = p->hstore.data + from;
	     c < p->hstore.data + p->hstore.len; c++) {
		/* The library, built lenient, lets spaces into names; RFC
		 * 9112 says to refuse them, as they smuggle `Name : value`
		 * past other parsers. */
		if (*c == ' ' || *c == '\t')
			return httpparse_fail(p, 400, "invalid header name");
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	}
	p->spans[p->nspans - 1].name_len += len;
	return 0;
}

static int httpparse_header_value_cb(http_parser *hp, const char *at,
				     size_t len)
{
	struct httpparse *p = hp->data;
	if (httpparse_count_header_bytes(p, len) < 0)
		return -1;
	if (p->headers_complete)
		return 0;
	if (p->hpiece == HP_FIELD) {
		buf_append(&p->hstore, "", 1);
		p->spans[p->nspans - 1].value = p->hstore.len;
	}
	p->hpiece = HP_VALUE;
	buf_append(&p->hstore, at, len);
	return 0;
}

static enum http_method httpparse_map_method(unsigned m)
{
	switch (m) {
	case HTTP_GET:
		return HTTP_M_GET;
	case HTTP_POST:
		return HTTP_M_POST;
	case HTTP_DELETE:
		return HTTP_M_DELETE;
	case HTTP_OPTIONS:
		return HTTP_M_OPTIONS;
	case HTTP_HEAD:
		return HTTP_M_HEAD;
	default:
		return HTTP_M_OTHER;
	}
}

/* The request's view of the headers, now that hstore is whole, and its
 * body, empty so far (still a NUL-terminated string). */
static void httpparse_expose(struct httpparse *p)
{
	struct http_request *r = &p->req;
	if (p->nspans > p->req_cap) {
		p->req_cap = p->hcap;
		r->headers =
			xrealloc(r->headers, p->req_cap * sizeof(*r->headers));
	}
	for (size_t i = 0; i < p->nspans; i++) {
		r->headers[i].name = p->hstore.data + p->spans[i].name;
		r->headers[i].name_len = p->spans[i].name_len;
		r->headers[i].value = p->hstore.data + p->spans[i].value;
	}
	r->nheaders = p->nspans;
	for (int k = 0; k < HTTP_H_COUNT; k++)
		r->known[k] =
			p->known[k] ? r->headers[p->known[k] - 1].value : NULL;
	buf_append(&p->body, "", 0);
	r->body = p->body.data;
	r->body_len = 0;
}

static int httpparse_headers_complete_cb(http_parser *hp)
{
	struct httpparse *p = hp->data;
	struct http_request *r = &p->req;

	if (p->hpiece != HP_NONE)
		httpparse_commit_header(p);
	p->hpiece = HP_NONE;
	p->headers_complete = true;
	if (p->repeated)
		return httpparse_fail(p, 400,
				      "a single-valued header is "
				      "repeated");

	r->method = httpparse_map_method(hp->method);
	r->http_major = hp->http_major;
	r->http_minor = hp->http_minor;
	r->keep_alive = http_should_keep_alive(hp) != 0;
	buf_append(&p->url, "", 0);
	r->url = p->url.data;
	httpparse_expose(p);

	/* The library takes any single-digit version. */
	if (hp->http_major != 1 || hp->http_minor > 1)
		return httpparse_fail(p, 400, "unsupported HTTP version");
	/* Set by the library before this callback for CONNECT and for
	 * `Connection: upgrade` + `Upgrade:`; we speak neither. */
	if (hp->upgrade)
		return httpparse_fail(p, 501, "upgrade not supported");

	bool chunked = (hp->flags & F_CHUNKED) != 0;
	p->chunked = chunked;
	p->ck = CK_SIZE;
	bool has_length = (hp->flags & F_CONTENTLENGTH) &&
			  hp->content_length != ULLONG_MAX;
	if (!chunked && has_length && hp->content_length > p->max_body)
		return httpparse_fail(p, 413, "request body too large");
	if (chunked || (has_length && hp->content_length > 0)) {
		/* Stop here once so the caller can answer 100-continue or
		 * refuse the request before its body is read. */
		p->headers_pending = true;
		http_parser_pause(hp, 1);
	}
	return 0;
}

static int httpparse_chunk_header_cb(http_parser *hp)
{
	struct httpparse *p = hp->data;
	/* content_length holds this chunk's announced size here. */
	if (hp->content_length > p->max_body - p->body.len)
		return httpparse_fail(p, 413, "request body too large");
	return 0;
}

static int httpparse_body_cb(http_parser *hp, const char *at, size_t len)
{
	struct httpparse *p = hp->data;
	if (len > p->max_body - p->body.len)
		return httpparse_fail(p, 413, "request body too large");
	buf_append(&p->body, at, len);
	p->req.body = p->body.data;
	p->req.body_len = p->body.len;
	return 0;
}

static int httpparse_message_complete_cb(http_parser *hp)
{
	struct httpparse *p = hp->data;
	p->req.keep_alive = http_should_keep_alive(hp) != 0;
	p->phase = PHASE_DONE;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings httpparse_settings = {
	.on_url = httpparse_url_cb,
	.on_header_field = httpparse_header_field_cb,
	.on_header_value = httpparse_header_value_cb,
	.on_headers_complete = httpparse_headers_complete_cb,
	.on_chunk_header = httpparse_chunk_header_cb,
	.on_body = httpparse_body_cb,
	.on_message_complete = httpparse_message_complete_cb,
};

/* Bodies up to this size keep their storage for the next request. */
#define HTTPPARSE_KEEP_BODY 65536

static void httpparse_clear_request(struct httpparse *p)
{
	struct http_request *r = &p->req;
	struct http_header *headers = r->headers;
	memset(r, 0, sizeof(*r));
	r->headers = headers;
	p->nspans = 0;
	buf_reset(&p->url);
	buf_reset(&p->hstore);
	/* Give a large body's storage back rather than keep it per
	 * connection. */
	if (p->body.cap > HTTPPARSE_KEEP_BODY)
		buf_free(&p->body);
	else
		buf_reset(&p->body);
	p->headers_complete = false;
	p->headers_pending = false;
	p->hpiece = HP_NONE;
	p->header_bytes = 0;
	p->phase = PHASE_HEADERS;
	buf_reset(&p->head);
	p->head_scan = 0;
	p->head_started = false;
	memset(p->known, 0, sizeof p->known);
	p->repeated = false;
	p->chunked = false;
	p->ck = CK_SIZE;
	p->ck_left = 0;
	p->ck_digits = false;
	p->ck_bad = false;
	p->fast = false;
	p->body_left = 0;
}

struct httpparse *httpparse_new(size_t max_body)
{
	struct httpparse *p = xcalloc(1, sizeof(*p));
	p->max_body = max_body;
	buf_init(&p->url);
	buf_init(&p->hstore);
	buf_init(&p->body);
	buf_init(&p->head);
	http_parser_init(&p->hp, HTTP_REQUEST);
	p->hp.data = p;
	p->phase = PHASE_HEADERS;
	return p;
}

void httpparse_free(struct httpparse *p)
{
	if (p == NULL)
		return;
	httpparse_clear_request(p);
	free(p->req.headers);
	free(p->spans);
	buf_free(&p->url);
	buf_free(&p->hstore);
	buf_free(&p->body);
	buf_free(&p->head);
	free(p);
}

static enum httpparse_state httpparse_check(struct httpparse *p)
{
	enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
	if (p->err_status == 0) {
		if (e == HPE_HEADER_OVERFLOW)
			httpparse_fail(p, 431, "request headers too large");
		else
			httpparse_fail(p, 400, http_errno_description(e));
	}
	p->phase = PHASE_ERROR;
	return HTTPPARSE_ERROR;
}

/* Where the head in p->head ends (just past its empty line), or 0 when
 * it has not ended yet. Resumes where the last look stopped. */
static size_t httpparse_head_end(const char *d, size_t len, size_t *scan)
{
	size_t i = *scan;
	while (i < len) {
		const char *lf = memchr(d + i, '\n', len - i);
		if (lf == NULL) {
			i = len;
			break;
		}
		i = (size_t)(lf - d);
		if (i + 1 < len && d[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && d[i + 1] == '\r' && d[i + 2] == '\n')
			return i + 3;
		if (i + 2 >= len)
			break; /* undecided until more comes */
		i++;
	}
	*scan = i;
	return 0;
}

/* Garbage is refused at once, not when the head limit is reached: a
 * request line starts with a method (after any empty lines). Judged by
 * one byte, so the answer does not depend on the split either; the rest
 * is the library's, on the whole head. */
static bool httpparse_head_start_ok(struct httpparse *p, const char *d,
				    size_t len)
{
	for (size_t i = 0; i < len && !p->head_started; i++) {
		if (d[i] == '\r' || d[i] == '\n')
			continue;
		if (d[i] < 'A' || d[i] > 'Z')
			return false;
		p->head_started = true;
	}
	return true;
}

/* One step of the chunked-framing check; false on bad framing. */
static bool httpparse_chunk_byte(struct httpparse *p, char ch)
{
	switch (p->ck) {
	case CK_SIZE: {
		int v = ch >= '0' && ch <= '9'	 ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
						 : -1;
		if (v >= 0) {
			if (p->ck_left > (UINT64_MAX >> 4))
				return false;
			p->ck_left = p->ck_left * 16 + (uint64_t)v;
			p->ck_digits = true;
			return true;
		}
		if (!p->ck_digits)
			return false;
		if (ch == ';' || ch == ' ' || ch == '\t')
			p->ck = CK_EXT;
		else if (ch == '\r')
			p->ck = CK_SIZE_LF;
		else
			return false;
		return true;
	}
	case CK_EXT:
		if (ch == '\r')
			p->ck = CK_SIZE_LF;
		return ch != '\n';
	case CK_SIZE_LF:
		if (ch != '\n')
			return false;
		p->ck_digits = false;
		p->ck = p->ck_left ? CK_DATA : CK_TRAILER_START;
		return true;
	case CK_DATA:
		if (--p->ck_left == 0)
			p->ck = CK_DATA_CR;
		return true;
	case CK_DATA_CR:
		p->ck = CK_DATA_LF;
		return ch == '\r';
	case CK_DATA_LF:
		p->ck = CK_SIZE;
		return ch == '\n';
	case CK_TRAILER_START:
		p->ck = ch == '\r' ? CK_END_LF : CK_TRAILER;
		return ch != '\n';
	case CK_TRAILER:
		if (ch == '\n')
			p->ck = CK_TRAILER_START;
		return true;
	case CK_END_LF:
		p->ck = CK_END;
		return ch == '\n';
	case CK_END:
		return false;
	}
	return false;
}

/* How many of d[0..len) the chunked framing allows, checked before the
 * library sees them: it stops at a bad byte (p->ck_bad) or at the body's
 * end. The library then parses only that much, so whichever error comes
 * first in the bytes wins, however they were split. */
static size_t httpparse_chunk_scan(struct httpparse *p, const char *d,
				   size_t len)
{
	size_t i = 0;
	while (i < len && p->ck != CK_END) {
		if (p->ck == CK_DATA && p->ck_left > 1) {
			/* Skip the data in one step. */
			size_t skip = p->ck_left - 1 < len - i
					      ? (size_t)(p->ck_left - 1)
					      : len - i;
			p->ck_left -= skip;
			i += skip;
			continue;
		}
		if (!httpparse_chunk_byte(p, d[i])) {
			p->ck_bad = true;
			return i;
		}
		i++;
	}
	return i;
}

/* The head is whole (or over its limit): parsed in one piece, so any
 * split gives the same answer. end is its length in p->head, old how
 * much of it earlier feeds gave. */
/* The head d[0..end) read by httphead.c when it has the common shape
 * (see there): a copy in hstore, read in place. False, with nothing
 * kept, when the library must read it. */
static bool httpparse_fast_head(struct httpparse *p, const char *d, size_t end)
{
	if (p->library_only)
		return false;
	struct httphead h;
	buf_reset(&p->hstore);
	buf_append(&p->hstore, d, end);
	int n = httphead_read(p->hstore.data, end, &h, &p->spans, &p->hcap,
			      p->known);
	if (n < 0 || h.content_length > p->max_body) {
		buf_reset(&p->hstore);
		memset(p->known, 0, sizeof p->known);
		return false;
	}
	struct http_request *r = &p->req;
	p->nspans = (size_t)n;
	r->method = h.method;
	r->http_major = 1;
	r->http_minor = 1;
	r->keep_alive = h.keep_alive;
	r->url = p->hstore.data + h.url;
	httpparse_expose(p);
	p->fast = true;
	p->body_left = h.content_length;
	p->headers_complete = true;
	p->phase = h.content_length ? PHASE_BODY : PHASE_DONE;
	return true;
}

/* The body of a request whose head httphead.c read: Content-Length
 * bytes, taken as they come. */
static enum httpparse_state httpparse_fast_body(struct httpparse *p,
						const char *data, size_t len,
						size_t *consumed)
{
	size_t n = p->body_left < len ? (size_t)p->body_left : len;
	buf_append(&p->body, data, n);
	p->req.body = p->body.data;
	p->req.body_len = p->body.len;
	p->body_left -= n;
	*consumed = n;
	if (p->body_left > 0)
		return HTTPPARSE_NEED_MORE;
	p->phase = PHASE_DONE;
	return HTTPPARSE_DONE;
}

static enum httpparse_state httpparse_feed_head(struct httpparse *p,
						const char *d, size_t end,
						size_t old, size_t *consumed)
{
	if (httpparse_fast_head(p, d, end)) {
		*consumed = end - old;
		return p->phase == PHASE_DONE ? HTTPPARSE_DONE
					      : HTTPPARSE_HEADERS_DONE;
	}
	for (const char *cr = memchr(d, '\r', end); cr;
	     cr = memchr(cr + 1, '\r', end - (size_t)(cr + 1 - d))) {
		if ((size_t)(cr - d) + 1 == end || cr[1] != '\n') {
			httpparse_fail(p, 400, "bare CR in the request head");
			return httpparse_check(p);
		}
	}
	size_t n = http_parser_execute(&p->hp, &httpparse_settings, d, end);
	enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
	if (p->err_status || (e != HPE_OK && e != HPE_PAUSED))
		return httpparse_check(p);
	if (p->headers_pending) {
		/* Paused on the final LF of the headers, which the library has
		 * not counted yet: let it take that byte so the body starts
		 * right after the head. */
		p->headers_pending = false;
		p->phase = PHASE_BODY;
		http_parser_pause(&p->hp, 0);
		if (n < end)
			n += http_parser_execute(&p->hp, &httpparse_settings,
						 d + n, 1);
		if (p->err_status || HTTP_PARSER_ERRNO(&p->hp) != HPE_OK)
			return httpparse_check(p);
	}
	if (p->phase == PHASE_HEADERS && end >= HTTP_MAX_HEAD) {
		/* Over the limit and still no end: too large. */
		httpparse_fail(p, 431, "request headers too large");
		return httpparse_check(p);
	}
	if (n != end) {
		/* The library saw the head end elsewhere than we did: the
		 * request has two readings. */
		httpparse_fail(p, 400, "malformed request head");
		return httpparse_check(p);
	}
	*consumed = end - old;
	if (p->phase == PHASE_DONE)
		return HTTPPARSE_DONE;
	if (p->phase == PHASE_BODY)
		return HTTPPARSE_HEADERS_DONE;
	/* The library took the head and is still in it: a line it reads as
	 * a request line without a version (`GET /x HT`), which the next
	 * head would be read as the rest of. Nothing to answer. */
	for (size_t i = 0; i < end; i++) {
		if (d[i] != '\r' && d[i] != '\n') {
			httpparse_fail(p, 400, "malformed request line");
			return httpparse_check(p);
		}
	}
	/* Only empty lines before a request line: start over. */
	buf_reset(&p->head);
	p->head_scan = 0;
	p->head_started = false;
	return HTTPPARSE_NEED_MORE;
}

static enum httpparse_state httpparse_feed_once(struct httpparse *p,
						const char *data, size_t len,
						size_t *consumed)
{
	*consumed = 0;
	if (p->phase == PHASE_ERROR)
		return HTTPPARSE_ERROR;
	if (p->phase == PHASE_DONE)
		return HTTPPARSE_DONE;
	/* A zero-length execute means EOF to the library. */
	if (len == 0)
		return HTTPPARSE_NEED_MORE;

	if (p->phase == PHASE_HEADERS) {
		size_t old = p->head.len;
		size_t take =
			HTTP_MAX_HEAD - old < len ? HTTP_MAX_HEAD - old : len;
		if (!httpparse_head_start_ok(p, data, take)) {
			httpparse_fail(p, 400,
				       "invalid character in the "
				       "request head");
			return httpparse_check(p);
		}
		if (old == 0) {
			/* The common case, a whole head in one piece: parsed
			 * where it lies. */
			size_t end =
				httpparse_head_end(data, take, &p->head_scan);
			if (end)
				return httpparse_feed_head(p, data, end, 0,
							   consumed);
		}
		/* Else gathered; the look resumes where it stopped (the copy
		 * starts at the same offset when old is 0). */
		buf_append(&p->head, data, take);
		size_t end = httpparse_head_end(p->head.data, p->head.len,
						&p->head_scan);
		if (end == 0 && p->head.len < HTTP_MAX_HEAD) {
			*consumed = take;
			return HTTPPARSE_NEED_MORE;
		}
		return httpparse_feed_head(p, p->head.data,
					   end ? end : p->head.len, old,
					   consumed);
	}

	if (p->fast)
		return httpparse_fast_body(p, data, len, consumed);
	size_t lim = p->chunked ? httpparse_chunk_scan(p, data, len) : len;
	size_t n = 0;
	if (lim > 0) {
		n = http_parser_execute(&p->hp, &httpparse_settings, data, lim);
		enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
		if (p->err_status || (e != HPE_OK && e != HPE_PAUSED))
			return httpparse_check(p);
	}
	if (p->ck_bad && p->phase != PHASE_DONE) {
		httpparse_fail(p, 400, "invalid chunk framing");
		return httpparse_check(p);
	}
	*consumed = n;
	if (p->phase == PHASE_DONE)
		return HTTPPARSE_DONE;
	return HTTPPARSE_NEED_MORE;
}

enum httpparse_state httpparse_feed(struct httpparse *p, const char *data,
				    size_t len, size_t *consumed)
{
	*consumed = 0;
	for (;;) {
		size_t used = 0;
		enum httpparse_state st = httpparse_feed_once(
			p, data + *consumed, len - *consumed, &used);
		*consumed += used;
		/* Empty lines before a request line are skipped and the
		 * parser starts over: the request after them may be in the
		 * same bytes, and a caller told NEED_MORE would wait for
		 * more that never comes. */
		if (st != HTTPPARSE_NEED_MORE || p->phase != PHASE_HEADERS ||
		    used == 0 || *consumed == len)
			return st;
	}
}

const struct http_request *httpparse_request(const struct httpparse *p)
{
	return &p->req;
}

const char *http_request_header_n(const struct http_request *r,
				  const char *name, size_t len)
{
	/* The request's names are kept lower-cased: only name's letters
	 * need folding. */
	for (size_t i = 0; i < r->nheaders; i++) {
		const char *have = r->headers[i].name;
		if (r->headers[i].name_len != len)
			continue;
		size_t k = 0;
		while (k < len) {
			unsigned char q = (unsigned char)name[k];
			if ((unsigned)(q - 'A') < 26u)
				q += 'a' - 'A';
			if (q != (unsigned char)have[k])
				break;
			k++;
		}
		if (k == len)
			return r->headers[i].value;
	}
	return NULL;
}

void httpparse_next(struct httpparse *p)
{
	if (p->phase == PHASE_ERROR)
		return;
	httpparse_clear_request(p);
	/* A fresh init also lifts the pause from on_message_complete. */
	http_parser_init(&p->hp, HTTP_REQUEST);
	p->hp.data = p;
}

void httpparse_library_only(struct httpparse *p)
{
	p->library_only = true;
}

int httpparse_error(const struct httpparse *p, const char **reason)
{
	if (reason)
		*reason = p->err_reason ? p->err_reason : "";
	return p->err_status;
}
