/*
 * An incremental text/event-stream parser (the WHATWG rules): bytes go in
 * as they come off the socket, in pieces of any size; events, comments
 * (heartbeats) and retry hints come out. It owns its buffers and reuses
 * them; nothing is allocated per byte.
 */
#ifndef MCPV_HTTP_SSE_H
#define MCPV_HTTP_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define SSE_MAX_DATA (16 * 1024 * 1024) /* one event's data */
/* One line: a data line's value up to SSE_MAX_DATA plus its field name. */
#define SSE_MAX_LINE (SSE_MAX_DATA + 64)
#define SSE_MAX_FIELD 1024 /* an event name, id or retry value */

struct sse_cbs {
	/* One event. event: its type ("message" when none was given); id:
	 * the last event id seen on this stream ("" when none); data: the
	 * data lines joined with LF (NUL-terminated after len; valid until
	 * this returns). An event without a data field is not dispatched. */
	void (*on_event)(void *ctx, const char *event, const char *id,
			 const char *data, size_t len);
	/* A comment line (": ..."): the peer is alive. May be NULL. */
	void (*on_comment)(void *ctx);
	/* A valid retry field, in milliseconds. May be NULL. */
	void (*on_retry)(void *ctx, uint64_t ms);
};

struct sse_limits {
	size_t max_line;  /* SSE_MAX_LINE */
	size_t max_data;  /* SSE_MAX_DATA */
	size_t max_field; /* SSE_MAX_FIELD */
};

enum sse_state {
	SSE_ST_FIELD, /* reading a field name */
	SSE_ST_SPACE, /* after the colon: one space may be skipped */
	SSE_ST_VALUE, /* reading a value */
};

enum sse_field {
	SSE_F_IGNORE, /* unknown field or a comment: the value is dropped */
	SSE_F_DATA,
	SSE_F_EVENT,
	SSE_F_ID,
	SSE_F_RETRY,
};

/* Embedded in its owner (no allocation of its own); fields private. */
struct sse {
	struct sse_cbs cbs;
	void *ctx;
	struct sse_limits lim;
	const char *error; /* sticky: which limit, static text */
	enum sse_state st;
	enum sse_field field;
	uint8_t bom;	/* BOM bytes matched; 3 + 1 once decided */
	bool cr;	/* the last line ended in CR: skip one LF */
	bool comment;	/* this line is a comment */
	bool has_data;	/* this event has a data field */
	bool field_nul; /* the field value holds a NUL */
	bool stop;	/* sse_stop was called from a callback */
	char name[8];	/* the field name so far */
	size_t name_len;
	size_t line_len;
	struct buf data;    /* this event's data */
	struct buf event;   /* this event's type */
	struct buf value;   /* the event, id or retry value being read */
	struct buf id;	    /* the last event id buffer */
	struct buf last_id; /* the id as of the last dispatch */
};

/* lim NULL: the SSE_MAX_* limits. */
void sse_init(struct sse *p, const struct sse_limits *lim,
	      const struct sse_cbs *cbs, void *ctx);
void sse_free(struct sse *p);
/* Feeds the next bytes of the stream. 0, or -1 once a limit was passed
 * (sticky; sse_error says which). Returns early, with 0, when a callback
 * called sse_stop. */
int sse_feed(struct sse *p, const char *data, size_t len);
/* From inside a callback: sse_feed returns after it. Sticky. */
void sse_stop(struct sse *p);
/* NULL, or which limit the stream passed (static text). */
const char *sse_error(const struct sse *p);
/* Bytes held for the event being read (its data so far, the value of
 * the field being read): what a stream holds in memory between events. */
size_t sse_pending(const struct sse *p);
/* The last event id as of the last dispatch point (a blank line), even of
 * an event that had no data (a resumption primer); "" when none. Valid
 * until the next sse_feed. */
const char *sse_last_id(const struct sse *p);

#endif
