/*
 * The legacy HTTP+SSE transport (2024-11-05): one GET opens the event
 * stream, whose `endpoint` event names where messages are POSTed; every
 * message from the server comes on that stream. It has no session id and
 * no resumption: the stream dropping ends the session.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcpc/mcpc_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define MC_MAX_URL 8192

/* The parts of an absolute http(s) URL that make its origin. */
struct mc_origin {
	const char *scheme;
	size_t scheme_len;
	const char *host; /* with a port when one is given */
	size_t host_len;
	const char *rest; /* path, query and fragment */
};

static bool mc_origin_parse(const char *u, struct mc_origin *o)
{
	const char *sep = strstr(u, "://");
	if (!sep)
		return false;
	o->scheme = u;
	o->scheme_len = (size_t)(sep - u);
	if (!((o->scheme_len == 4 && strncasecmp(u, "http", 4) == 0) ||
	      (o->scheme_len == 5 && strncasecmp(u, "https", 5) == 0)))
		return false;
	o->host = sep + 3;
	o->host_len = strcspn(o->host, "/?#");
	o->rest = o->host + o->host_len;
	/* Userinfo would be a second place for a secret, and a way to make
	 * one origin look like another. */
	if (o->host_len == 0 || memchr(o->host, '@', o->host_len))
		return false;
	return true;
}

/* The port of an origin's host part, the scheme's default when none. */
static size_t mc_host_only(const struct mc_origin *o, unsigned *port)
{
	size_t n = o->host_len;
	const char *h = o->host;
	const char *colon = NULL;
	/* The last colon after any IPv6 literal's bracket. */
	const char *close = memchr(h, ']', n);
	for (const char *p = close ? close : h; p < h + n; p++)
		if (*p == ':')
			colon = p;
	*port = o->scheme_len == 5 ? 443 : 80;
	if (!colon)
		return n;
	unsigned v = 0;
	for (const char *p = colon + 1; p < h + n; p++) {
		if (*p < '0' || *p > '9' || v > 65535)
			return 0;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (colon + 1 < h + n)
		*port = v;
	return (size_t)(colon - h);
}

static bool mc_same_origin(const struct mc_origin *a, const struct mc_origin *b)
{
	unsigned pa, pb;
	size_t ha = mc_host_only(a, &pa), hb = mc_host_only(b, &pb);
	return a->scheme_len == b->scheme_len &&
	       strncasecmp(a->scheme, b->scheme, a->scheme_len) == 0 && ha &&
	       ha == hb && strncasecmp(a->host, b->host, ha) == 0 && pa == pb;
}

char *mc_url_resolve(const char *base, const char *ref)
{
	struct mc_origin b, r;
	if (!mc_origin_parse(base, &b))
		return NULL;
	size_t n = strlen(ref);
	if (n == 0 || n > MC_MAX_URL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)ref[i] <= 0x20 ||
		    (unsigned char)ref[i] == 0x7f)
			return NULL;
	char *out;
	size_t scheme = strcspn(ref, ":/?#");
	if (ref[scheme] == ':') {
		out = xstrdup(ref);
	} else if (ref[0] == '/' && ref[1] == '/') {
		out = xasprintf("%.*s:%s", (int)b.scheme_len, b.scheme, ref);
	} else if (ref[0] == '/') {
		out = xasprintf("%.*s%s", (int)(b.rest - base), base, ref);
	} else {
		/* Relative to the base's path up to its last slash. */
		size_t path = strcspn(b.rest, "?#");
		const char *slash = NULL;
		for (const char *p = b.rest; p < b.rest + path; p++)
			if (*p == '/')
				slash = p;
		if (ref[0] == '?')
			out = xasprintf("%.*s%s", (int)(b.rest + path - base),
					base, ref);
		else if (slash)
			out = xasprintf("%.*s%s", (int)(slash + 1 - base), base,
					ref);
		else
			out = xasprintf("%.*s/%s", (int)(b.rest - base), base,
					ref);
	}
	if (!mc_origin_parse(out, &r) || !mc_same_origin(&b, &r)) {
		free(out);
		return NULL;
	}
	return out;
}

int mc_legacy_open(struct mcpc *m)
{
	if (m->init_msg) {
		/* Auto mode fell back: the initialize goes first. */
		msgq_push_front(&m->held, m->init_msg, m->init_len, m->init_id);
		free(m->init_msg);
		m->init_msg = NULL;
	}
	m->get_opened = true;
	struct mc_stream *s = mc_stream_new(m, MC_LEGACY_GET, 0);
	int rc = mc_stream_start(s, "GET", m->url, NULL, 0);
	if (rc < 0)
		mc_stream_drop(s);
	return rc;
}

int mc_legacy_post(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	struct mc_stream *s = mc_stream_new(m, MC_LEGACY_POST, id);
	int rc = mc_stream_start(s, "POST", m->endpoint, msg, len);
	if (rc < 0)
		mc_stream_drop(s);
	return rc;
}

bool mc_legacy_head(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	if (mc_status_fault(s, status))
		return false;
	if (s->kind == MC_LEGACY_POST) {
		if (status == 404) {
			mc_fault(m, MCPC_FAULT_EXPIRED, status,
				 "the server no longer knows our session",
				 NULL);
			return false;
		}
		return true;
	}
	if (status != 200 || !mc_is_sse(s->req)) {
		mc_fault(m, MCPC_FAULT_PROTOCOL, status,
			 "the server's legacy event stream is not an event "
			 "stream",
			 NULL);
		return false;
	}
	mc_sse_begin(s);
	return true;
}

void mc_legacy_event(struct mc_stream *s, const char *event, const char *data,
		     size_t len)
{
	struct mcpc *m = s->m;
	if (strcmp(event, "endpoint") == 0) {
		if (m->endpoint)
			return; /* the first one holds */
		char *url = strlen(data) == len ? mc_url_resolve(m->url, data)
						: NULL;
		if (!url) {
			mc_fault(m, MCPC_FAULT_PROTOCOL, 0,
				 "the server's legacy endpoint is not on its "
				 "own origin",
				 NULL);
			return;
		}
		m->endpoint = url;
		mc_flush_held(m);
		return;
	}
	if (len == 0 || strcmp(event, "message") != 0)
		return;
	mc_message(m, s, data, len);
}

void mc_legacy_get_done(struct mc_stream *s, int err)
{
	struct mcpc *m = s->m;
	if (!s->got_head) {
		char *text = mc_unreachable_text(m, err);
		mc_fault(m,
			 err == -ETIMEDOUT ? MCPC_FAULT_TIMEOUT
					   : MCPC_FAULT_CLOSED,
			 0, text, NULL);
		free(text);
	} else if (!m->endpoint)
		mc_fault(m, MCPC_FAULT_PROTOCOL, 0,
			 "the server's legacy event stream ended without an "
			 "endpoint",
			 NULL);
	else
		mc_fault(m, MCPC_FAULT_CLOSED, 0,
			 "the server's legacy event stream ended", NULL);
	mc_stream_drop(s);
}

void mc_legacy_post_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (!s->got_head) {
		mc_lost(m, s->id, sent ? OUTBOX_CUT : OUTBOX_UNWRITTEN);
	} else if (status < 200 || status >= 300) {
		log_debug("HTTP %d to a legacy POST", status);
		mc_lost(m, s->id, OUTBOX_CUT);
	}
	mc_stream_drop(s);
}
