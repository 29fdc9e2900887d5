/*
 * HTTP/1.1 response writing: status line, the headers every answer of ours
 * carries, bodies and Server-Sent Events, appended to a struct buf.
 */
#ifndef MCPV_HTTPRESP_H
#define MCPV_HTTPRESP_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

/* The standard reason phrase, "Unknown" for a status we never send. */
const char *httpresp_reason(int status);

/* Status line and headers up to the blank line. content_type NULL: none;
 * content_length -1: none (SSE streams, closed by the connection);
 * extra_headers NULL or CRLF-terminated lines. A 1xx answer gets only its
 * status line and extra_headers; a 204 never gets a Content-Length. */
void httpresp_head(struct buf *out, int status, const char *content_type,
		   long long content_length, bool keep_alive,
		   const char *extra_headers);
/* httpresp_head with Content-Length len, then body. */
void httpresp_simple(struct buf *out, int status, const char *content_type,
		     const char *body, size_t len, bool keep_alive,
		     const char *extra_headers);
/* One SSE event ending with a blank line. id, event NULL: none (cut at the
 * first line break, which would end the field); retry_ms -1: none. data is
 * split into one `data:` line per line (\r\n, \r or \n), so a client
 * rebuilds it exactly; data NULL writes no data line (an id- or
 * retry-only event), data "" one empty line. */
void httpresp_sse_event(struct buf *out, const char *id, const char *event,
			const char *data, size_t len, long retry_ms);

#endif
