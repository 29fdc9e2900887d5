/*
 * What the envelope's two files share: how a fault is written into a
 * struct envelope_err, and how client text is quoted in its message.
 */
#ifndef MCPV_ENVELOPE_INT_H
#define MCPV_ENVELOPE_INT_H

#include <stddef.h>

#include "jsonrpc/envelope.h"

/* Room for ENVELOPE_MAX_QUOTE bytes escaped (at most 4 bytes each, as
 * "\xNN"), the "..." that says it was cut, and the NUL. */
#define ENVELOPE_QUOTE_BUF (ENVELOPE_MAX_QUOTE * 4 + 4)

/* At most ENVELOPE_MAX_QUOTE bytes of s (len bytes), never cut inside a
 * character, escaped (control bytes shown), "..." when cut: for a
 * message, between quotes. */
void envelope_quote(char out[ENVELOPE_QUOTE_BUF], const char *s, size_t len);

/* A header value as envelope_header_decode reads it, without a copy
 * when it came plain: s (len bytes, not NUL-terminated) points into raw,
 * or into owned (the decoded sentinel, NUL-terminated), which the caller
 * frees. */
struct envelope_view {
	const char *s;
	size_t len;
	char *owned;
};
/* 0 and v filled, or -1 (v->owned NULL) when the value is not valid. */
int envelope_header_view(const char *raw, struct envelope_view *v);

/* Fills err (cleared first); takes data. Returns -1. */
int envelope_fail(struct envelope_err *err, int http_status, int code,
		  json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
