/*
 * Incremental text/event-stream parser. A line is consumed in pieces as
 * the bytes come: its field name is matched first, then its value goes
 * straight to where it belongs (a data value into the event's data), so
 * a 16 MiB data line is copied once and never held twice.
 */
#include "http/sse.h"

#include <string.h>

/* An event's data buffer above this is let go after dispatch, so an idle
 * stream does not keep the memory of its largest message. */
#define SSE_KEEP_CAP (256 * 1024)

static const unsigned char sse_bom[3] = {0xef, 0xbb, 0xbf};

void sse_init(struct sse *p, const struct sse_limits *lim,
	      const struct sse_cbs *cbs, void *ctx)
{
	memset(p, 0, sizeof *p);
	p->cbs = *cbs;
	p->ctx = ctx;
	if (lim) {
		p->lim = *lim;
	} else {
		p->lim.max_line = SSE_MAX_LINE;
		p->lim.max_data = SSE_MAX_DATA;
		p->lim.max_field = SSE_MAX_FIELD;
	}
	buf_init(&p->data);
	buf_init(&p->event);
	buf_init(&p->value);
	buf_init(&p->id);
	buf_init(&p->last_id);
}

void sse_free(struct sse *p)
{
	if (!p)
		return;
	buf_free(&p->data);
	buf_free(&p->event);
	buf_free(&p->value);
	buf_free(&p->id);
	buf_free(&p->last_id);
}

void sse_stop(struct sse *p)
{
	p->stop = true;
}

const char *sse_error(const struct sse *p)
{
	return p->error;
}

size_t sse_pending(const struct sse *p)
{
	return p->data.len + p->value.len;
}

const char *sse_last_id(const struct sse *p)
{
	return p->last_id.data ? p->last_id.data : "";
}

static int sse_fail(struct sse *p, const char *why)
{
	p->error = why;
	return -1;
}

static enum sse_field sse_field_of(const struct sse *p)
{
	if (p->name_len > sizeof p->name)
		return SSE_F_IGNORE;
	const char *n = p->name;
	size_t l = p->name_len;
	if (l == 4 && memcmp(n, "data", 4) == 0)
		return SSE_F_DATA;
	if (l == 5 && memcmp(n, "event", 5) == 0)
		return SSE_F_EVENT;
	if (l == 2 && memcmp(n, "id", 2) == 0)
		return SSE_F_ID;
	if (l == 5 && memcmp(n, "retry", 5) == 0)
		return SSE_F_RETRY;
	return SSE_F_IGNORE;
}

/* The field name is known: its value starts. */
static int sse_field_begin(struct sse *p)
{
	p->field = p->comment ? SSE_F_IGNORE : sse_field_of(p);
	p->field_nul = false;
	buf_reset(&p->value);
	if (p->field == SSE_F_DATA) {
		/* Data lines are joined with LF: the separator goes in
		 * before every value but the first. */
		if (p->has_data) {
			if (p->data.len >= p->lim.max_data)
				return sse_fail(p, "an event's data passed "
						   "its limit");
			buf_append(&p->data, "\n", 1);
		}
		p->has_data = true;
	}
	return 0;
}

/* Appends a piece of the current field's value. */
static int sse_value(struct sse *p, const char *s, size_t n)
{
	if (n == 0)
		return 0;
	switch (p->field) {
	case SSE_F_DATA:
		if (n > p->lim.max_data - p->data.len)
			return sse_fail(p, "an event's data passed its limit");
		buf_append(&p->data, s, n);
		break;
	case SSE_F_EVENT:
	case SSE_F_ID:
	case SSE_F_RETRY:
		if (n > p->lim.max_field - p->value.len)
			return sse_fail(p, "an event name, id or retry value "
					   "passed its limit");
		if (memchr(s, '\0', n))
			p->field_nul = true;
		buf_append(&p->value, s, n);
		break;
	case SSE_F_IGNORE:
		break;
	}
	return 0;
}

static void sse_copy(struct buf *to, const struct buf *from)
{
	buf_reset(to);
	buf_append(to, from->data ? from->data : "", from->len);
}

static void sse_field_end(struct sse *p)
{
	switch (p->field) {
	case SSE_F_EVENT:
		sse_copy(&p->event, &p->value);
		break;
	case SSE_F_ID:
		if (!p->field_nul)
			sse_copy(&p->id, &p->value);
		break;
	case SSE_F_RETRY: {
		if (p->value.len == 0)
			break;
		uint64_t ms = 0;
		for (size_t i = 0; i < p->value.len; i++) {
			unsigned char c = (unsigned char)p->value.data[i];
			if (c < '0' || c > '9')
				return;
			/* Saturates: a value past any sane delay is as
			 * good as the largest. */
			ms = ms > (UINT64_MAX - 9) / 10 ? UINT64_MAX
							: ms * 10 + (c - '0');
		}
		if (p->cbs.on_retry)
			p->cbs.on_retry(p->ctx, ms);
		break;
	}
	default:
		break;
	}
}

static void sse_dispatch(struct sse *p)
{
	/* The id takes effect at every dispatch point, data or not: a
	 * server primes resumption with an id and no message. */
	if (p->last_id.len != p->id.len ||
	    (p->id.len && memcmp(p->last_id.data, p->id.data, p->id.len)))
		sse_copy(&p->last_id, &p->id);
	if (p->has_data && p->cbs.on_event) {
		const char *ev = p->event.len ? p->event.data : "message";
		p->cbs.on_event(p->ctx, ev, sse_last_id(p),
				p->data.data ? p->data.data : "", p->data.len);
	}
	p->has_data = false;
	buf_reset(&p->event);
	if (p->data.cap > SSE_KEEP_CAP)
		buf_free(&p->data);
	else
		buf_reset(&p->data);
}

/* The current line ended (its end-of-line bytes consumed). */
static int sse_line_end(struct sse *p)
{
	if (p->line_len == 0) {
		sse_dispatch(p);
	} else if (p->comment) {
		if (p->cbs.on_comment)
			p->cbs.on_comment(p->ctx);
	} else {
		/* A line without a colon is a field with an empty value. */
		if (p->st == SSE_ST_FIELD && sse_field_begin(p) < 0)
			return -1;
		sse_field_end(p);
	}
	p->st = SSE_ST_FIELD;
	p->field = SSE_F_IGNORE;
	p->comment = false;
	p->name_len = 0;
	p->line_len = 0;
	return 0;
}

/* A piece of the current line, holding no CR or LF. */
static int sse_piece(struct sse *p, const char *s, size_t n)
{
	if (n > p->lim.max_line - p->line_len)
		return sse_fail(p, "a line passed its limit");
	if (p->line_len == 0 && n > 0 && s[0] == ':')
		p->comment = true;
	p->line_len += n;
	if (p->comment)
		return 0;
	if (p->st == SSE_ST_FIELD) {
		const char *colon = memchr(s, ':', n);
		size_t k = colon ? (size_t)(colon - s) : n;
		for (size_t i = 0; i < k; i++) {
			if (p->name_len < sizeof p->name)
				p->name[p->name_len] = s[i];
			/* Past the array: a name no field has; counting
			 * on stops before it wraps. */
			if (p->name_len <= sizeof p->name)
				p->name_len++;
		}
		if (!colon)
			return 0;
		if (sse_field_begin(p) < 0)
			return -1;
		p->st = SSE_ST_SPACE;
		s += k + 1;
		n -= k + 1;
	}
	if (p->st == SSE_ST_SPACE && n > 0) {
		if (s[0] == ' ') {
			s++;
			n--;
		}
		p->st = SSE_ST_VALUE;
	}
	return sse_value(p, s, n);
}

/* The first CR or LF in [s, end), or end. */
static const char *sse_eol(const char *s, const char *end)
{
	const char *lf = memchr(s, '\n', (size_t)(end - s));
	const char *stop = lf ? lf : end;
	const char *cr = memchr(s, '\r', (size_t)(stop - s));
	return cr ? cr : stop;
}

static int sse_lines(struct sse *p, const char *s, size_t n)
{
	const char *end = s + n;
	while (s < end) {
		if (p->cr) {
			p->cr = false;
			if (*s == '\n') {
				s++;
				continue;
			}
		}
		const char *e = sse_eol(s, end);
		if (sse_piece(p, s, (size_t)(e - s)) < 0)
			return -1;
		if (e == end)
			break;
		p->cr = *e == '\r';
		s = e + 1;
		if (sse_line_end(p) < 0)
			return -1;
		if (p->stop)
			return 0;
	}
	return 0;
}

int sse_feed(struct sse *p, const char *data, size_t len)
{
	if (p->error)
		return -1;
	if (p->stop)
		return 0;
	/* A byte-order mark may lead the stream, itself split. */
	while (p->bom < 3 && len > 0) {
		if ((unsigned char)data[0] != sse_bom[p->bom]) {
			/* Not a BOM: the bytes that looked like one are
			 * the stream's first. */
			uint8_t held = p->bom;
			p->bom = 4;
			if (held &&
			    sse_lines(p, (const char *)sse_bom, held) < 0)
				return -1;
			break;
		}
		p->bom++;
		data++;
		len--;
	}
	if (p->bom == 3)
		p->bom = 4;
	if (p->bom < 3)
		return 0;
	if (p->stop)
		return 0;
	return sse_lines(p, data, len);
}
