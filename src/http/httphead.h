/*
 * The common request head, read without the library (internal to
 * src/http/: httpparse.c is its one caller). See httphead.c for the shape
 * it takes and why everything else goes to libhttp-parser.
 */
#ifndef MCPV_HTTPHEAD_H
#define MCPV_HTTPHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/httpparse.h"

/* One header in the parser's store: the name at name (name_len bytes,
 * lower-cased), the value at value, each followed by a NUL. */
struct httphead_span {
	size_t name, name_len, value, value_len;
};

/* What the request line and the framing headers say. */
struct httphead {
	enum http_method method;
	size_t url; /* offset of the target, NUL-terminated */
	bool keep_alive;
	uint64_t content_length; /* 0 when absent */
};

/* Which known header a lower-cased name of len bytes is, or -1. */
int httphead_known(const char *name, size_t len);

/* Reads the head h[0..len) (it ends with the CRLF of its empty line) in
 * place when it has the common shape: names lower-cased, a NUL written
 * after the target, each name and each value. Fills *spans (grown with
 * xrealloc, *cap its room), known[] (a known header's first span index +
 * 1) and *out; returns the number of headers. Returns -1 for any other
 * shape, with h, *spans and known[] half-written: the caller reads its
 * own copy of the bytes with the library then. */
int httphead_read(char *h, size_t len, struct httphead *out,
		  struct httphead_span **spans, size_t *cap,
		  unsigned short known[HTTP_H_COUNT]);

#endif
