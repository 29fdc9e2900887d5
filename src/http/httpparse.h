/*
 * HTTP/1.1 request parsing, the only module that knows libhttp-parser, so
 * the parser can be swapped. Incremental, one request at a time (pipelined
 * bytes stay unconsumed until httpparse_next), with named limits.
 */
#ifndef MCPV_HTTPPARSE_H
#define MCPV_HTTPPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define HTTP_MAX_URL 8192
#define HTTP_MAX_HEADER_BYTES (32 * 1024) /* all names + values */
#define HTTP_MAX_HEADERS 64
#define HTTP_DEFAULT_MAX_BODY (4 * 1024 * 1024)
/* The raw head (request line, headers, separators) is read whole before it
 * is parsed, so its status never depends on how it was split; a head that
 * has not ended within this many bytes is refused with 431. */
#define HTTP_MAX_HEAD                                                          \
	(HTTP_MAX_URL + HTTP_MAX_HEADER_BYTES + 8 * HTTP_MAX_HEADERS + 1024)

enum http_method {
	HTTP_M_OTHER,
	HTTP_M_GET,
	HTTP_M_POST,
	HTTP_M_DELETE,
	HTTP_M_OPTIONS,
	HTTP_M_HEAD,
};

struct http_header {
	const char *name; /* lower-cased */
	size_t name_len;
	const char *value;
};

/* The headers mcpvisor reads, found once as the request is parsed. The
 * first HTTP_H_SINGLES mean one thing: a second one is an error. */
enum http_hdr {
	HTTP_H_HOST,
	HTTP_H_ORIGIN,
	HTTP_H_CONTENT_TYPE,
	HTTP_H_LAST_EVENT_ID,
	HTTP_H_MCP_SESSION_ID,
	HTTP_H_CONTENT_LENGTH,
	HTTP_H_TRANSFER_ENCODING,
	HTTP_H_MCP_PROTOCOL_VERSION,
	HTTP_H_SINGLES,
	HTTP_H_ACCEPT = HTTP_H_SINGLES,
	HTTP_H_AUTHORIZATION,
	HTTP_H_EXPECT,
	HTTP_H_MCP_METHOD,
	HTTP_H_MCP_NAME,
	HTTP_H_COUNT
};

struct http_request {
	/* The value of each known header (the first, for one that may come
	 * more than once), or NULL. */
	const char *known[HTTP_H_COUNT];
	enum http_method method;
	const char *url; /* raw target: path and query */
	struct http_header *headers;
	size_t nheaders;
	char *body; /* NUL-terminated, may contain NULs */
	size_t body_len;
	bool keep_alive;
	int http_major, http_minor;
};

enum httpparse_state {
	HTTPPARSE_NEED_MORE,	/* feed more bytes */
	HTTPPARSE_HEADERS_DONE, /* headers complete, body still coming: the
				   caller may answer `Expect: 100-continue`
				   (reported once per request) */
	HTTPPARSE_DONE,		/* a whole request is ready */
	HTTPPARSE_ERROR,	/* see httpparse_error */
};

struct httpparse;

struct httpparse *httpparse_new(size_t max_body);
void httpparse_free(struct httpparse *p);

/* Feeds bytes; *consumed says how many were used (the rest belongs to the
 * next request, feed it again after httpparse_next). Strict where the
 * library is lenient: a bare CR in the head, a second Host, Origin or other
 * single-valued header, and chunk data not followed by CRLF are errors. */
enum httpparse_state httpparse_feed(struct httpparse *p, const char *data,
				    size_t len, size_t *consumed);
/* The request, valid after HEADERS_DONE (no body yet) or DONE. */
const struct http_request *httpparse_request(const struct httpparse *p);
/* A known header's value (found as the request was parsed), or NULL. */
static inline const char *http_request_known(const struct http_request *r,
					     enum http_hdr h)
{
	return r->known[h];
}
/* Any header's value by its name, any case (len bytes); NULL when
 * absent. http_request_header takes a string, whose length a literal's
 * call works out at compile time. */
const char *http_request_header_n(const struct http_request *r,
				  const char *name, size_t len);
static inline const char *http_request_header(const struct http_request *r,
					      const char *name)
{
	return http_request_header_n(r, name, strlen(name));
}
/* After DONE: forget the request and get ready for the next one. */
void httpparse_next(struct httpparse *p);
/* Every head goes to libhttp-parser, none to the reader of the common
 * shape (httphead.c): for the fuzz target and tests that hold that reader
 * to the library. */
void httpparse_library_only(struct httpparse *p);
/* After ERROR: the status to answer with (400, 413, 414, 431, 501) and a
 * short reason. */
int httpparse_error(const struct httpparse *p, const char **reason);

#endif
