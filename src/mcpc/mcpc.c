/*
 * The MCP client session over Streamable HTTP: one HTTP request per
 * message, the answers' JSON or event streams, resumption with
 * Last-Event-ID, the standing GET stream, DELETE on close. The streams
 * of a session are few (its requests in flight), so they sit in a list.
 * The legacy transport's parts are in legacy.c.
 */
#include "mcpc/mcpc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/jsonscan.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

static void mc_on_event(void *ctx, const char *event, const char *id,
			const char *data, size_t len);
static void mc_on_comment(void *ctx);
static void mc_on_retry(void *ctx, uint64_t ms);
static const struct sse_cbs mc_sse_cbs = {mc_on_event, mc_on_comment,
					  mc_on_retry};

/* ---- streams ---------------------------------------------------------- */

struct mc_stream *mc_stream_new(struct mcpc *m, enum mc_kind kind, int64_t id)
{
	struct mc_stream *s = xcalloc(1, sizeof *s);
	s->m = m;
	s->kind = kind;
	s->id = id;
	s->retry_ms = MCPC_RETRY_MS;
	buf_init(&s->body);
	s->next = m->streams;
	if (m->streams)
		m->streams->prev = s;
	m->streams = s;
	return s;
}

static void mc_stream_free(struct mc_stream *s)
{
	if (s->parser_on)
		sse_free(&s->parser);
	buf_free(&s->body);
	free(s->last_id);
	free(s);
}

static void mc_reap(struct mcpc *m)
{
	if (m->busy > 0)
		return;
	while (m->dead) {
		struct mc_stream *s = m->dead;
		m->dead = s->next;
		mc_stream_free(s);
	}
}

/* Lets a stream go: its request ends without callbacks; freed once no
 * callback of ours is running (one may be running for it). */
void mc_stream_drop(struct mc_stream *s)
{
	struct mcpc *m = s->m;
	if (s->dead)
		return;
	s->dead = true;
	if (s->req)
		httpc_cancel(s->req);
	s->req = NULL;
	if (s->parser_on)
		sse_stop(&s->parser);
	if (s->prev)
		s->prev->next = s->next;
	else
		m->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = NULL;
	s->next = m->dead;
	m->dead = s;
	mc_reap(m);
}

static void mc_drop_all(struct mcpc *m)
{
	while (m->streams)
		mc_stream_drop(m->streams);
}

static void mc_held_free(struct mcpc *m)
{
	while (m->held) {
		struct mc_held *h = m->held;
		m->held = h->next;
		free(h);
	}
	m->held_tail = &m->held;
}

/* ---- faults and losses ------------------------------------------------ */

void mc_fault(struct mcpc *m, enum mcpc_fault f, int status, const char *text,
	      const char *resource_metadata)
{
	if (m->faulted || m->closing)
		return;
	m->faulted = true;
	mc_drop_all(m);
	mc_held_free(m);
	uv_timer_stop(&m->timer);
	log_debug("fault %d (HTTP %d): %s", (int)f, status, text);
	m->busy++;
	m->cbs.on_fault(m->ctx, f, status, text, resource_metadata);
	m->busy--;
	mc_reap(m);
}

void mc_lost(struct mcpc *m, int64_t id, bool sent)
{
	if (id <= 0 || m->faulted || m->closing)
		return;
	m->busy++;
	m->cbs.on_lost(m->ctx, id, sent);
	m->busy--;
}

/* The resource_metadata parameter of a WWW-Authenticate challenge, or
 * NULL. */
static char *mc_resource_metadata(const char *h)
{
	static const char key[] = "resource_metadata=";
	if (!h)
		return NULL;
	for (const char *p = h; *p; p++) {
		if (strncasecmp(p, key, sizeof key - 1) != 0)
			continue;
		if (p > h && p[-1] != ' ' && p[-1] != ',' && p[-1] != '\t')
			continue;
		p += sizeof key - 1;
		bool quoted = *p == '"';
		p += quoted;
		size_t n = strcspn(p, quoted ? "\"" : " ,\t");
		if (n == 0 || n > 2048 || (quoted && p[n] != '"'))
			return NULL;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] <= 0x20 ||
			    (unsigned char)p[i] >= 0x7f || p[i] == '\\')
				return NULL;
		return xstrndup(p, n);
	}
	return NULL;
}

bool mc_status_fault(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	if (status == 401 || status == 403) {
		char *rm = mc_resource_metadata(
			httpc_header(s->req, "WWW-Authenticate"));
		mc_fault(m, MCPC_FAULT_AUTH, status,
			 status == 401 ? "the server asks for authorization"
				       : "the server refused our credentials",
			 rm);
		free(rm);
		return true;
	}
	if (status == 404 && m->session_hdr && s->kind != MC_LEGACY_GET &&
	    s->kind != MC_LEGACY_POST) {
		mc_fault(m, MCPC_FAULT_EXPIRED, status,
			 "the server no longer knows our session", NULL);
		return true;
	}
	return false;
}

/* A request that got no response: what it means for the session. */
static void mc_no_response(struct mc_stream *s, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (!sent && !m->ever_ok) {
		mc_fault(m,
			 err == -ETIMEDOUT ? MCPC_FAULT_TIMEOUT
					   : MCPC_FAULT_CLOSED,
			 0,
			 err == -ETIMEDOUT ? "the server did not answer in time"
			 : err == -EPROTO  ? "the connection to the server "
					     "failed (TLS or protocol)"
					   : "the server cannot be reached",
			 NULL);
		return;
	}
	mc_lost(m, s->id, sent);
}

/* ---- starting requests ------------------------------------------------ */

static const struct httpc_cbs mc_http_cbs;

int mc_stream_start(struct mc_stream *s, const char *method, const char *url,
		    const char *body, size_t len)
{
	struct mcpc *m = s->m;
	const char *h[HTTPC_MAX_HEADERS + 1];
	size_t n = 0;
	for (size_t i = 0; i < m->nheaders; i++)
		h[n++] = m->headers[i];
	bool streamable = s->kind == MC_POST || s->kind == MC_RESUME ||
			  s->kind == MC_GET || s->kind == MC_DELETE;
	if (s->kind == MC_POST || s->kind == MC_LEGACY_POST)
		h[n++] = "Content-Type: application/json";
	if (s->kind == MC_POST)
		h[n++] = "Accept: application/json, text/event-stream";
	else if (s->kind != MC_LEGACY_POST && s->kind != MC_DELETE)
		h[n++] = "Accept: text/event-stream";
	if (streamable && m->session_hdr)
		h[n++] = m->session_hdr;
	if (streamable && m->version_hdr)
		h[n++] = m->version_hdr;
	struct buf lei;
	buf_init(&lei);
	if ((s->kind == MC_RESUME || s->kind == MC_GET) && s->last_id) {
		buf_puts(&lei, "Last-Event-ID: ");
		buf_puts(&lei, s->last_id);
		h[n++] = lei.data;
	}
	h[n] = NULL;
	struct httpc_opts o = {
		.method = method,
		.url = url,
		.unix_socket = m->unix_socket,
		.headers = h,
		.body = body,
		.body_len = len,
		.connect_timeout_ms = m->connect_timeout_ms,
		.total_timeout_ms = s->kind == MC_DELETE ? MCPC_DELETE_MS : 0,
	};
	s->got_head = false;
	s->sse = false;
	s->progress = false;
	buf_reset(&s->body);
	int rc = httpc_start(m->http, &o, &mc_http_cbs, s, &s->req);
	buf_free(&lei);
	if (rc < 0)
		s->req = NULL;
	return rc;
}

/* ---- timers: resumptions and reopenings ------------------------------- */

static void mc_timer_cb(uv_timer_t *t);

static void mc_arm(struct mcpc *m)
{
	uint64_t next = 0;
	for (struct mc_stream *s = m->streams; s; s = s->next)
		if (s->due && (next == 0 || s->due < next))
			next = s->due;
	if (next == 0 || m->faulted || m->closing) {
		uv_timer_stop(&m->timer);
		return;
	}
	uint64_t now = uv_now(m->loop);
	uv_timer_start(&m->timer, mc_timer_cb, next > now ? next - now : 0, 0);
}

static void mc_due(struct mc_stream *s, uint64_t delay_ms)
{
	s->due = uv_now(s->m->loop) + delay_ms;
	if (s->due == 0)
		s->due = 1;
	mc_arm(s->m);
}

static void mc_fire(struct mc_stream *s)
{
	struct mcpc *m = s->m;
	s->due = 0;
	if (s->req) {
		/* A request answered a while ago whose stream stayed open. */
		mc_stream_drop(s);
		return;
	}
	if (mc_stream_start(s, "GET", m->url, NULL, 0) == 0)
		return;
	if (s->kind == MC_RESUME)
		mc_lost(m, s->id, true);
	mc_stream_drop(s);
}

static void mc_timer_cb(uv_timer_t *t)
{
	struct mcpc *m = t->data;
	uint64_t now = uv_now(m->loop);
	m->busy++;
	/* One at a time from the list's head: a callback may change it. */
	for (;;) {
		struct mc_stream *s = m->streams;
		while (s && !(s->due && s->due <= now))
			s = s->next;
		if (!s || m->faulted || m->closing)
			break;
		mc_fire(s);
	}
	m->busy--;
	mc_reap(m);
	mc_arm(m);
}

/* ---- what came ---------------------------------------------------------- */

bool mc_is_sse(struct httpc_req *r)
{
	const char *ct = httpc_header(r, "Content-Type");
	return ct && strncasecmp(ct, "text/event-stream", 17) == 0;
}

static bool mc_is_json(struct httpc_req *r)
{
	const char *ct = httpc_header(r, "Content-Type");
	return ct && strncasecmp(ct, "application/json", 16) == 0;
}

void mc_sse_begin(struct mc_stream *s)
{
	if (s->parser_on)
		sse_free(&s->parser);
	sse_init(&s->parser, NULL, &mc_sse_cbs, s);
	s->parser_on = true;
	s->sse = true;
}

/* A printable token of at most MCPC_MAX_SESSION_ID bytes (what may go in
 * a header line). */
static bool mc_token_ok(const char *v, size_t n)
{
	if (n == 0 || n > MCPC_MAX_SESSION_ID)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
			return false;
	return true;
}

/* The initialize answer: the protocol version it settled on. */
static void mc_take_version(struct mcpc *m, const char *msg, size_t len,
			    const struct jsonscan_span *result)
{
	static const char *const keys[] = {"protocolVersion"};
	struct jsonscan_span v = {0};
	if (result->len == 0 ||
	    jsonscan_members(msg + result->off, result->len, keys, 1, &v) < 0 ||
	    v.len < 3)
		return;
	const char *p = msg + result->off + v.off;
	if (p[0] != '"' || !mc_token_ok(p + 1, v.len - 2) ||
	    memchr(p + 1, '\\', v.len - 2) || memchr(p + 1, '"', v.len - 2))
		return;
	free(m->version);
	free(m->version_hdr);
	m->version = xstrndup(p + 1, v.len - 2);
	m->version_hdr = xasprintf("MCP-Protocol-Version: %s", m->version);
}

bool mc_message(struct mcpc *m, struct mc_stream *s, const char *msg,
		size_t len)
{
	static const char *const keys[] = {"id", "result", "error", "method"};
	struct jsonscan_span sp[4] = {{0}};
	if (jsonscan_members(msg, len, keys, 4, sp) < 0) {
		mc_fault(m, MCPC_FAULT_PROTOCOL, 0,
			 "the server sent a message that is not JSON", NULL);
		return false;
	}
	int64_t related = s && s->kind != MC_GET ? s->id : 0;
	bool answer = false;
	long long id;
	if (related > 0 && sp[3].len == 0 && (sp[1].len || sp[2].len) &&
	    jsonscan_int(msg, &sp[0], &id) && id == related) {
		answer = true;
		if (s->answered)
			return true; /* delivered once already */
		s->answered = true;
		if (related == m->init_id && sp[1].len)
			mc_take_version(m, msg, len, &sp[1]);
	}
	m->busy++;
	m->cbs.on_message(m->ctx, msg, len, related);
	m->busy--;
	if (answer && !s->dead && s->req && s->kind != MC_LEGACY_GET)
		mc_due(s, MCPC_ANSWERED_LINGER_MS);
	return true;
}

static void mc_on_event(void *ctx, const char *event, const char *id,
			const char *data, size_t len)
{
	struct mc_stream *s = ctx;
	s->progress = true;
	if (s->kind == MC_LEGACY_GET) {
		mc_legacy_event(s, event, data, len);
		return;
	}
	/* An event with empty data primes resumption (its id is kept by
	 * the parser); other event types are not MCP's. */
	if (len == 0 || strcmp(event, "message") != 0)
		return;
	mc_message(s->m, s, data, len);
}

static void mc_on_comment(void *ctx)
{
	struct mc_stream *s = ctx;
	struct mcpc *m = s->m;
	if (!m->cbs.on_heartbeat || m->faulted || m->closing)
		return;
	m->busy++;
	m->cbs.on_heartbeat(m->ctx);
	m->busy--;
}

static void mc_on_retry(void *ctx, uint64_t ms)
{
	struct mc_stream *s = ctx;
	s->retry_ms = ms > MCPC_RETRY_MAX_MS ? MCPC_RETRY_MAX_MS : ms;
}

/* ---- Streamable HTTP responses ------------------------------------------ */

static void mc_open_get(struct mcpc *m)
{
	if (m->get_opened || m->legacy || m->faulted || m->closing)
		return;
	m->get_opened = true;
	struct mc_stream *s = mc_stream_new(m, MC_GET, 0);
	if (mc_stream_start(s, "GET", m->url, NULL, 0) < 0)
		mc_stream_drop(s);
}

/* The first POST of auto mode answered: which transport it is. */
static bool mc_decide(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	m->decided = true;
	if (status == 400 || status == 404 || status == 405) {
		log_debug("HTTP %d to the first POST: the legacy transport",
			  status);
		m->legacy = true;
		mc_stream_drop(s);
		if (mc_legacy_open(m) < 0)
			mc_fault(m, MCPC_FAULT_CLOSED, 0,
				 "the legacy event stream cannot be opened",
				 NULL);
		return false;
	}
	free(m->init_msg);
	m->init_msg = NULL;
	return true;
}

static bool mc_post_head(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	if (!m->decided && !mc_decide(s, status))
		return false;
	if (mc_status_fault(s, status))
		return false;
	if (status >= 200 && status < 300 && s->id == m->init_id &&
	    !m->session_hdr) {
		const char *sid = httpc_header(s->req, "Mcp-Session-Id");
		if (sid && !mc_token_ok(sid, strlen(sid))) {
			mc_fault(m, MCPC_FAULT_PROTOCOL, status,
				 "the server gave a malformed session id",
				 NULL);
			return false;
		}
		if (sid) {
			m->session_id = xstrdup(sid);
			m->session_hdr = xasprintf("Mcp-Session-Id: %s", sid);
		}
	}
	/* Held messages go after the head that settled the transport and
	 * the session id. */
	if (m->held)
		mc_flush_held(m);
	if (s->dead)
		return false;
	if (status == 202 || status == 204)
		return true;
	if (mc_is_sse(s->req) && status >= 200 && status < 300) {
		mc_sse_begin(s);
		return true;
	}
	if (mc_is_json(s->req))
		return true; /* buffered; judged when whole */
	if (status >= 200 && status < 300 && s->id > 0) {
		mc_fault(m, MCPC_FAULT_PROTOCOL, status,
			 "the server answered neither JSON nor an event "
			 "stream",
			 NULL);
		return false;
	}
	return true;
}

static bool mc_get_head(struct mc_stream *s, int status)
{
	if (mc_status_fault(s, status))
		return false;
	if (status == 200 && mc_is_sse(s->req)) {
		mc_sse_begin(s);
		return true;
	}
	return true; /* judged in mc_get_done */
}

/* A POST's event stream ended before its answer: resume it, or the
 * request is lost. */
static void mc_resume_or_lose(struct mc_stream *s, bool refused)
{
	if (s->progress)
		s->tries = 0;
	else
		s->tries++;
	if (!refused && s->last_id && s->tries < MCPC_RESUME_TRIES) {
		s->kind = MC_RESUME;
		mc_due(s, s->retry_ms);
		return;
	}
	mc_lost(s->m, s->id, true);
	mc_stream_drop(s);
}

static void mc_post_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (!s->got_head) {
		mc_no_response(s, err, sent);
		mc_stream_drop(s);
		return;
	}
	if (s->sse) {
		if (s->id > 0 && !s->answered && !m->faulted)
			mc_resume_or_lose(s, false);
		else
			mc_stream_drop(s);
		return;
	}
	bool ok2xx = status >= 200 && status < 300;
	if (s->body.len > 0 && err == 0) {
		if (!mc_message(m, s, s->body.data, s->body.len)) {
			mc_stream_drop(s);
			return;
		}
	} else if (ok2xx && s->id > 0 && status != 202 && status != 204 &&
		   err == 0) {
		mc_fault(m, MCPC_FAULT_PROTOCOL, status,
			 "the server answered a request with an empty body",
			 NULL);
		mc_stream_drop(s);
		return;
	}
	/* 202 to a request: its answer comes on the GET stream. */
	if (s->id > 0 && !s->answered && status != 202)
		mc_lost(m, s->id, true);
	if (s->id == 0 && s->kind == MC_POST && ok2xx && s->opens_get)
		mc_open_get(m);
	mc_stream_drop(s);
}

static void mc_resume_done(struct mc_stream *s, int status, int err, bool sent)
{
	if (!s->got_head) {
		/* Not reached: try again after retry, a bounded number of
		 * times. */
		s->progress = false;
		mc_resume_or_lose(s, false);
		return;
	}
	if (!s->sse) {
		log_debug("HTTP %d to a resumption: the answer is lost",
			  status);
		mc_resume_or_lose(s, true);
		return;
	}
	if (s->answered)
		mc_stream_drop(s);
	else
		mc_resume_or_lose(s, false);
}

static void mc_get_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (s->got_head && !s->sse && (status < 500 || status == 501)) {
		/* 405: the server has no GET stream; other answers: it
		 * offers none we can read. */
		log_debug("HTTP %d to the GET stream: none", status);
		mc_stream_drop(s);
		return;
	}
	if (s->progress)
		s->tries = 0;
	else
		s->tries++;
	if (s->tries >= MCPC_GET_TRIES) {
		if (!s->got_head)
			mc_fault(m, MCPC_FAULT_CLOSED, 0,
				 "the server cannot be reached", NULL);
		mc_stream_drop(s);
		return;
	}
	/* Bounded backoff on failures; a stream that worked is reopened
	 * after the server's retry. */
	uint64_t delay = s->retry_ms;
	for (int i = 0; i < s->tries && delay < 30000; i++)
		delay *= 2;
	mc_due(s, delay < 30000 ? delay : 30000);
}

/* ---- the HTTP client's callbacks ---------------------------------------- */

static bool mc_head_cb(void *ctx, struct httpc_req *r)
{
	struct mc_stream *s = ctx;
	struct mcpc *m = s->m;
	int status = httpc_status(r);
	bool keep = true;
	s->got_head = true;
	m->ever_ok = true;
	m->busy++;
	switch (s->kind) {
	case MC_POST:
		keep = mc_post_head(s, status);
		break;
	case MC_RESUME:
	case MC_GET:
		keep = mc_get_head(s, status);
		break;
	case MC_LEGACY_GET:
	case MC_LEGACY_POST:
		keep = mc_legacy_head(s, status);
		break;
	case MC_DELETE:
		break;
	}
	s->status = status;
	keep = keep && !s->dead;
	m->busy--;
	mc_reap(m);
	return keep;
}

static bool mc_body_cb(void *ctx, struct httpc_req *r, const char *data,
		       size_t len)
{
	struct mc_stream *s = ctx;
	struct mcpc *m = s->m;
	if (s->kind == MC_DELETE || s->kind == MC_LEGACY_POST)
		return true;
	m->busy++;
	if (s->sse) {
		if (sse_feed(&s->parser, data, len) < 0 && !s->dead) {
			log_warn("an event stream passed a limit: %s",
				 sse_error(&s->parser));
			if (s->kind == MC_POST || s->kind == MC_RESUME) {
				mc_lost(m, s->id, true);
				mc_stream_drop(s);
			} else {
				mc_fault(m, MCPC_FAULT_PROTOCOL, 0,
					 "the server sent a message past the "
					 "size limit",
					 NULL);
			}
		}
	} else if (len > MCPC_MAX_MESSAGE - s->body.len) {
		log_warn("an answer passed the size limit");
		mc_lost(m, s->id, true);
		mc_stream_drop(s);
	} else {
		buf_append(&s->body, data, len);
	}
	bool keep = !s->dead;
	m->busy--;
	mc_reap(m);
	return keep;
}

static void mc_done_cb(void *ctx, struct httpc_req *r, int err, const char *why)
{
	struct mc_stream *s = ctx;
	struct mcpc *m = s->m;
	bool sent = httpc_sent(r);
	s->req = NULL;
	if (err)
		log_debug("a request ended: %s", why ? why : "?");
	if (s->parser_on && sse_last_id(&s->parser)[0]) {
		free(s->last_id);
		s->last_id = xstrdup(sse_last_id(&s->parser));
	}
	m->busy++;
	switch (s->kind) {
	case MC_POST:
		mc_post_done(s, s->status, err, sent);
		break;
	case MC_RESUME:
		mc_resume_done(s, s->status, err, sent);
		break;
	case MC_GET:
		mc_get_done(s, s->status, err, sent);
		break;
	case MC_LEGACY_GET:
		mc_legacy_get_done(s, err);
		break;
	case MC_LEGACY_POST:
		mc_legacy_post_done(s, s->status, err, sent);
		break;
	case MC_DELETE:
		mc_stream_drop(s);
		m->busy--;
		mc_close_finish(m);
		return;
	}
	m->busy--;
	mc_reap(m);
}

static const struct httpc_cbs mc_http_cbs = {mc_head_cb, mc_body_cb,
					     mc_done_cb};

/* ---- the API ------------------------------------------------------------ */

int mcpc_new(struct httpc *http, const struct mcpc_opts *opts,
	     const struct mcpc_cbs *cbs, void *ctx, struct mcpc **out)
{
	const char *u = opts->url;
	if (!http || !opts->loop || !u ||
	    (strncasecmp(u, "http://", 7) != 0 &&
	     strncasecmp(u, "https://", 8) != 0) ||
	    strpbrk(u, " \r\n\t"))
		return -EINVAL;
	size_t nh = 0;
	while (opts->headers && opts->headers[nh])
		nh++;
	/* Room for ours: type, accept, session, version, last id. */
	if (nh > HTTPC_MAX_HEADERS - 5)
		return -EINVAL;
	struct mcpc *m = xcalloc(1, sizeof *m);
	m->http = http;
	m->loop = opts->loop;
	m->url = xstrdup(u);
	m->headers = xcalloc(nh + 1, sizeof *m->headers);
	for (size_t i = 0; i < nh; i++)
		m->headers[i] = xstrdup(opts->headers[i]);
	m->nheaders = nh;
	m->unix_socket = opts->unix_socket ? xstrdup(opts->unix_socket) : NULL;
	m->mode = opts->mode;
	m->legacy = opts->mode == MCPC_SSE;
	m->decided = opts->mode != MCPC_AUTO;
	m->connect_timeout_ms = opts->connect_timeout_ms;
	m->cbs = *cbs;
	m->ctx = ctx;
	m->held_tail = &m->held;
	uv_timer_init(m->loop, &m->timer);
	m->timer.data = m;
	*out = m;
	return 0;
}

static void mc_hold(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	struct mc_held *h = xmalloc(sizeof *h + len);
	h->next = NULL;
	h->id = id;
	h->len = len;
	memcpy(h->msg, msg, len);
	*m->held_tail = h;
	m->held_tail = &h->next;
}

static bool mc_method_is(const char *msg, size_t len, const char *quoted)
{
	static const char *const keys[] = {"method"};
	struct jsonscan_span sp = {0};
	size_t n = strlen(quoted);
	return jsonscan_members(msg, len, keys, 1, &sp) == 0 && sp.len == n &&
	       memcmp(msg + sp.off, quoted, n) == 0;
}

static int mc_post(struct mcpc *m, const char *msg, size_t len, int64_t id,
		   bool opens_get)
{
	struct mc_stream *s = mc_stream_new(m, MC_POST, id);
	s->opens_get = opens_get;
	int rc = mc_stream_start(s, "POST", m->url, msg, len);
	if (rc < 0)
		mc_stream_drop(s);
	return rc;
}

/* Sends one message on the transport as now known. */
static int mc_route(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	bool opens_get = false;
	/* Only until the session is set up: the hot path scans nothing. */
	if (m->init_id == 0 && id > 0 &&
	    mc_method_is(msg, len, "\"initialize\"")) {
		m->init_id = id;
		if (!m->decided) {
			m->init_msg = xmalloc(len);
			memcpy(m->init_msg, msg, len);
			m->init_len = len;
		}
	} else if (id == 0 && !m->get_opened && !m->legacy &&
		   mc_method_is(msg, len, "\"notifications/initialized\"")) {
		opens_get = true;
	}
	if (m->legacy && m->endpoint)
		return mc_legacy_post(m, msg, len, id);
	if (m->legacy) {
		mc_hold(m, msg, len, id);
		if (m->get_opened)
			return 0;
		int rc = mc_legacy_open(m);
		if (rc < 0) {
			m->get_opened = false;
			mc_held_free(m);
		}
		return rc;
	}
	/* Auto mode: one POST finds out the transport; the rest wait. */
	if (!m->decided && m->deciding) {
		mc_hold(m, msg, len, id);
		return 0;
	}
	m->deciding = true;
	return mc_post(m, msg, len, id, opens_get);
}

void mc_flush_held(struct mcpc *m)
{
	struct mc_held *h = m->held;
	m->held = NULL;
	m->held_tail = &m->held;
	while (h) {
		struct mc_held *next = h->next;
		if (!m->faulted && !m->closing &&
		    mc_route(m, h->msg, h->len, h->id) < 0)
			mc_lost(m, h->id, false);
		free(h);
		h = next;
	}
}

int mcpc_send(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	if (m->faulted || m->closing)
		return -EPIPE;
	if (len > MCPC_MAX_MESSAGE)
		return -EMSGSIZE;
	return mc_route(m, msg, len, id);
}

void mcpc_forget(struct mcpc *m, int64_t id)
{
	if (id <= 0)
		return;
	for (struct mc_stream *s = m->streams, *next; s; s = next) {
		next = s->next;
		if ((s->kind == MC_POST || s->kind == MC_RESUME) && s->id == id)
			mc_stream_drop(s);
	}
	for (struct mc_held **hp = &m->held; *hp;) {
		struct mc_held *h = *hp;
		if (h->id != id) {
			hp = &h->next;
			continue;
		}
		*hp = h->next;
		if (m->held_tail == &h->next)
			m->held_tail = hp;
		free(h);
	}
	mc_arm(m);
}

static void mc_free_cb(uv_handle_t *h)
{
	struct mcpc *m = h->data;
	mc_reap(m);
	void (*done)(void *) = m->done;
	void *arg = m->done_arg;
	for (size_t i = 0; i < m->nheaders; i++)
		free(m->headers[i]);
	free(m->headers);
	free(m->url);
	free(m->unix_socket);
	free(m->init_msg);
	free(m->session_hdr);
	free(m->session_id);
	free(m->version_hdr);
	free(m->version);
	free(m->endpoint);
	free(m);
	if (done)
		done(arg);
}

void mc_close_finish(struct mcpc *m)
{
	mc_drop_all(m);
	if (!uv_is_closing((uv_handle_t *)&m->timer))
		uv_close((uv_handle_t *)&m->timer, mc_free_cb);
}

void mcpc_close(struct mcpc *m, void (*done)(void *arg), void *arg)
{
	if (m->closing)
		return;
	bool faulted = m->faulted;
	m->done = done;
	m->done_arg = arg;
	mc_drop_all(m);
	mc_held_free(m);
	uv_timer_stop(&m->timer);
	m->closing = true;
	if (m->session_hdr && !m->legacy && !faulted) {
		struct mc_stream *s = mc_stream_new(m, MC_DELETE, 0);
		if (mc_stream_start(s, "DELETE", m->url, NULL, 0) == 0)
			return;
		mc_stream_drop(s);
	}
	mc_close_finish(m);
}

json_t *mcpc_describe(const struct mcpc *m, bool verbose)
{
	json_t *o = json_pack("{s:s, s:s}", "url", m->url, "protocol",
			      m->legacy ? "sse" : "streamable-http");
	if (m->version)
		json_object_set_new(o, "protocolVersion",
				    json_string(m->version));
	if (verbose && m->session_id) {
		char hex[65];
		sha256_hex(m->session_id, strlen(m->session_id), hex);
		hex[8] = '\0';
		json_object_set_new(o, "sessionId", json_string(hex));
	}
	return o;
}

bool mcpc_has_session(const struct mcpc *m)
{
	return m->session_id != NULL;
}
