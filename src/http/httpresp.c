/*
 * HTTP/1.1 response writing into a struct buf: status lines with their
 * reason phrases, our fixed headers, and SSE event framing.
 */
#include "http/httpresp.h"

#include <string.h>

#include "util/buf.h"

const char *httpresp_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	default:
		return "Unknown";
	}
}

void httpresp_head(struct buf *out, int status, const char *content_type,
		   long long content_length, bool keep_alive,
		   const char *extra_headers)
{
	buf_puts(out, "HTTP/1.1 ");
	buf_put_u64(out, (unsigned long long)status);
	buf_puts(out, " ");
	buf_puts(out, httpresp_reason(status));
	buf_puts(out, "\r\n");
	/* An interim answer is not the response: its headers would be read
	 * as the final one's by nobody. */
	if (status >= 100 && status < 200) {
		if (extra_headers)
			buf_puts(out, extra_headers);
		buf_puts(out, "\r\n");
		return;
	}
	if (content_type) {
		buf_puts(out, "Content-Type: ");
		buf_puts(out, content_type);
		buf_puts(out, "\r\n");
		if (strncmp(content_type, "text/event-stream", 17) == 0)
			buf_puts(out, "Cache-Control: no-cache\r\n");
	}
	if (content_length >= 0 && status != 204) {
		buf_puts(out, "Content-Length: ");
		buf_put_u64(out, (unsigned long long)content_length);
		buf_puts(out, "\r\n");
	}
	buf_puts(out, keep_alive ? "Connection: keep-alive\r\n"
				 : "Connection: close\r\n");
	if (extra_headers)
		buf_puts(out, extra_headers);
	buf_puts(out, "\r\n");
}

void httpresp_simple(struct buf *out, int status, const char *content_type,
		     const char *body, size_t len, bool keep_alive,
		     const char *extra_headers)
{
	httpresp_head(out, status, content_type, (long long)len, keep_alive,
		      extra_headers);
	if (len)
		buf_append(out, body, len);
}

static void httpresp_sse_field(struct buf *out, const char *name,
			       const char *value)
{
	buf_puts(out, name);
	buf_puts(out, ": ");
	buf_append(out, value, strcspn(value, "\r\n"));
	buf_puts(out, "\n");
}

void httpresp_sse_event(struct buf *out, const char *id, const char *event,
			const char *data, size_t len, long retry_ms)
{
	if (id)
		httpresp_sse_field(out, "id", id);
	if (event)
		httpresp_sse_field(out, "event", event);
	if (retry_ms >= 0)
		buf_printf(out, "retry: %ld\n", retry_ms);
	if (data) {
		size_t start = 0;
		for (size_t i = 0;; i++) {
			if (i < len && data[i] != '\r' && data[i] != '\n')
				continue;
			buf_puts(out, "data: ");
			buf_append(out, data + start, i - start);
			buf_puts(out, "\n");
			if (i >= len)
				break;
			if (data[i] == '\r' && i + 1 < len &&
			    data[i + 1] == '\n')
				i++;
			start = i + 1;
		}
	}
	buf_puts(out, "\n");
}
