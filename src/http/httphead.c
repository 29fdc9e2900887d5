/*
 * The common request head, read without the library. Every MCP client
 * sends the same shape: `GET`, `POST` or `DELETE`, an origin-form target,
 * HTTP/1.1, CRLF lines of token names and visible-ASCII values, a body
 * framed by Content-Length or none. Reading that shape here costs a
 * fraction of libhttp-parser's byte-at-a-time state machine and its
 * callbacks, and it is most of a call's parsing.
 *
 * This reader only ever declines: for any byte outside RFC 9112's strict
 * grammar, a bare LF, a folded line, leading empty lines, another method
 * or version, Transfer-Encoding, Upgrade, Connection options other than
 * close and keep-alive, a repeated single-valued header, an odd
 * Content-Length or a limit reached, it returns -1 and the library reads
 * the head as it always did, with its errors and statuses. What it takes
 * it reads as the library does (tests/fuzz/fuzz_httpparse.c drives every
 * input both ways and compares), so the library stays the one authority on
 * what a request means.
 */
#include "http/httphead.h"

#include <string.h>
#include <strings.h>

#include "util/xmalloc.h"

/* Byte classes: V a field value's (with SP and HT), T a name's (RFC 9110
 * tchar), U the target's (RFC 3986 pchar, `/`, `?`; no `#`). */
enum { HH_V = 1, HH_T = 2, HH_U = 4 };
#define HH_VT (HH_V | HH_T)
#define HH_VU (HH_V | HH_U)
#define HH_VTU (HH_V | HH_T | HH_U)

static const unsigned char hh_class[256] = {
	['\t'] = HH_V,		[' '] = HH_V,		['!'] = HH_VTU,
	['"'] = HH_V,		['#'] = HH_VT,		['$' ... '\''] = HH_VTU,
	['(' ... ')'] = HH_VU,	['*' ... '+'] = HH_VTU, [','] = HH_VU,
	['-' ... '.'] = HH_VTU, ['/'] = HH_VU,		['0' ... '9'] = HH_VTU,
	[':' ... ';'] = HH_VU,	['<'] = HH_V,		['='] = HH_VU,
	['>'] = HH_V,		['?' ... '@'] = HH_VU,	['A' ... 'Z'] = HH_VTU,
	['[' ... ']'] = HH_V,	['^'] = HH_VT,		['_'] = HH_VTU,
	['`'] = HH_VT,		['a' ... 'z'] = HH_VTU, ['{'] = HH_V,
	['|'] = HH_VT,		['}'] = HH_V,		['~'] = HH_VTU,
};

/* Headers that mean one thing (the first HTTP_H_SINGLES): two of them
 * are two readings of the request (RFC 9112 says 400 for two Hosts), and
 * which one a check sees must not be a matter of order. */
int httphead_known(const char *name, size_t len)
{
	/* By length first: most headers fall through at once. Each
	 * comparison has a literal's length, which the compiler turns into
	 * a few word compares. */
#define HH_IS(lit) (memcmp(name, lit, sizeof(lit) - 1) == 0)
	switch (len) {
	case 4:
		return HH_IS("host") ? HTTP_H_HOST : -1;
	case 6:
		return HH_IS("origin")	 ? HTTP_H_ORIGIN
		       : HH_IS("accept") ? HTTP_H_ACCEPT
		       : HH_IS("expect") ? HTTP_H_EXPECT
					 : -1;
	case 8:
		return HH_IS("mcp-name") ? HTTP_H_MCP_NAME : -1;
	case 10:
		return HH_IS("mcp-method") ? HTTP_H_MCP_METHOD : -1;
	case 12:
		return HH_IS("content-type") ? HTTP_H_CONTENT_TYPE : -1;
	case 13:
		return HH_IS("last-event-id")	? HTTP_H_LAST_EVENT_ID
		       : HH_IS("authorization") ? HTTP_H_AUTHORIZATION
						: -1;
	case 14:
		return HH_IS("mcp-session-id")	 ? HTTP_H_MCP_SESSION_ID
		       : HH_IS("content-length") ? HTTP_H_CONTENT_LENGTH
						 : -1;
	case 17:
		return HH_IS("transfer-encoding") ? HTTP_H_TRANSFER_ENCODING
						  : -1;
	case 20:
		return HH_IS("mcp-protocol-version")
			       ? HTTP_H_MCP_PROTOCOL_VERSION
			       : -1;
	default:
		return -1;
	}
#undef HH_IS
}

/* The request line up to its CRLF; returns where the headers start, or
 * NULL. */
static char *hh_request_line(char *h, const char *end, struct httphead *out)
{
	char *c = h;
	size_t left = (size_t)(end - c);
	if (left > 4 && memcmp(c, "GET ", 4) == 0)
		out->method = HTTP_M_GET, c += 4;
	else if (left > 5 && memcmp(c, "POST ", 5) == 0)
		out->method = HTTP_M_POST, c += 5;
	else if (left > 7 && memcmp(c, "DELETE ", 7) == 0)
		out->method = HTTP_M_DELETE, c += 7;
	else
		return NULL;
	char *url = c;
	if (*c != '/')
		return NULL;
	while (hh_class[(unsigned char)*c] & HH_U)
		c++;
	if (c - url > HTTP_MAX_URL || end - c < 11 ||
	    memcmp(c, " HTTP/1.1\r\n", 11) != 0)
		return NULL;
	*c = '\0';
	out->url = (size_t)(url - h);
	return c + 11;
}

/* What a framing header says; false when the library must judge it. */
static bool hh_framing(int k, const char *name, size_t name_len,
		       const char *value, size_t value_len, bool padded,
		       struct httphead *out)
{
	/* libhttp-parser 2.9 takes any name that starts so for one: it
	 * refuses `Transfer-Encodingx: y` on a request. */
	if (name_len >= 17 && memcmp(name, "transfer-encoding", 17) == 0)
		return false;
	if (k == HTTP_H_CONTENT_LENGTH) {
		/* Digits only, and few enough that no limit is near; the
		 * library refuses some blanks after them. */
		if (value_len == 0 || value_len > 15 || padded)
			return false;
		uint64_t v = 0;
		for (size_t i = 0; i < value_len; i++) {
			if (value[i] < '0' || value[i] > '9')
				return false;
			v = v * 10 + (uint64_t)(value[i] - '0');
		}
		out->content_length = v;
		return true;
	}
	if (k >= 0)
		return true;
	if (name_len == 10 && memcmp(name, "connection", 10) == 0) {
		if (strcasecmp(value, "close") == 0)
			out->keep_alive = false;
		else if (strcasecmp(value, "keep-alive") != 0)
			return false;
		return true;
	}
	/* The library reads these as framing too. */
	return !(name_len == 7 && memcmp(name, "upgrade", 7) == 0) &&
	       !(name_len == 16 && memcmp(name, "proxy-connection", 16) == 0);
}

int httphead_read(char *h, size_t len, struct httphead *out,
		  struct httphead_span **spans, size_t *cap,
		  unsigned short known[HTTP_H_COUNT])
{
	const char *end = h + len;
	/* A head found whole ends with LF, in no byte class: every scan
	 * below stops on it, so none needs to watch the end. */
	if (len == 0 || h[len - 1] != '\n')
		return -1;
	out->keep_alive = true;
	out->content_length = 0;
	char *c = hh_request_line(h, end, out);
	if (c == NULL)
		return -1;
	size_t n = 0, bytes = 0;
	for (;;) {
		if (end - c < 2)
			return -1;
		if (c[0] == '\r')
			break;
		char *name = c;
		for (; hh_class[(unsigned char)*c] & HH_T; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		if (c == name || *c != ':')
			return -1;
		size_t name_len = (size_t)(c - name);
		*c++ = '\0';
		while (*c == ' ' || *c == '\t')
			c++;
		char *value = c;
		while (hh_class[(unsigned char)*c] & HH_V)
			c++;
		if (c[0] != '\r' || c[1] != '\n')
			return -1;
		/* Counted as the library's callbacks count: the name and the
		 * value up to its line's end. */
		bytes += name_len + (size_t)(c - value);
		char *vend = c;
		while (vend > value && (vend[-1] == ' ' || vend[-1] == '\t'))
			vend--;
		bool padded = vend != c;
		*vend = '\0';
		c += 2;
		if (n == HTTP_MAX_HEADERS || bytes > HTTP_MAX_HEADER_BYTES)
			return -1;
		size_t value_len = (size_t)(vend - value);
		int k = httphead_known(name, name_len);
		if (k >= 0 && known[k] != 0) {
			if (k < HTTP_H_SINGLES)
				return -1;
		} else if (k >= 0) {
			known[k] = (unsigned short)(n + 1);
		}
		if (!hh_framing(k, name, name_len, value, value_len, padded,
				out))
			return -1;
		if (n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*spans = xrealloc(*spans, *cap * sizeof(**spans));
		}
		(*spans)[n++] = (struct httphead_span){
			.name = (size_t)(name - h),
			.name_len = name_len,
			.value = (size_t)(value - h),
			.value_len = value_len,
		};
	}
	/* The empty line ends the head exactly. */
	if (c + 2 != end || c[1] != '\n')
		return -1;
	return (int)n;
}
