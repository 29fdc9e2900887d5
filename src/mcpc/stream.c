/*
 * One HTTP request of a session and what comes on it: the streams' list
 * and lifetimes (freed only when no callback of ours runs), the one timer
 * that reopens them, the HTTP client's callbacks, and each message's
 * delivery with the request it relates to. What a response means for the
 * session is decided in mcpc.c and legacy.c.
 */
#include "mcpc/mcpc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
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

void mc_stream_forget_auth(struct mc_stream *s)
{
	if (s->auth_line == NULL)
		return;
	explicit_bzero(s->auth_line, strlen(s->auth_line));
	free(s->auth_line);
	s->auth_line = NULL;
}

static void mc_stream_free(struct mc_stream *s)
{
	mc_stream_forget_auth(s);
	for (int i = 0; i < 3; i++)
		free(s->modern_hdr[i]);
	for (size_t i = 0; s->extra_hdr && s->extra_hdr[i]; i++)
		free(s->extra_hdr[i]);
	free(s->extra_hdr);
	if (s->parser_on)
		sse_free(&s->parser);
	buf_free(&s->body);
	free(s->last_id);
	free(s);
}

void mc_reap(struct mcpc *m)
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
void mc_unwait(struct mc_stream *s)
{
	struct mcpc *m = s->m;
	if (!s->waiting)
		return;
	s->waiting = false;
	m->waiting--;
	m->waiting_bytes -= s->sent_len;
	mc_maybe_drain(m);
}

void mc_maybe_drain(struct mcpc *m)
{
	/* Below half of both bounds: whoever was refused may send again
	 * (from the timer: never inside the caller's call). */
	if (m->want_drain &&
	    m->waiting + m->held.count <= MCPC_MAX_WAITING / 2 &&
	    m->waiting_bytes + m->held.bytes <= MCPC_MAX_WAITING_BYTES / 2) {
		m->want_drain = false;
		m->drain_due = true;
		mc_arm(m);
	}
}

void mc_apply_pause(struct mc_stream *s)
{
	if (s->req)
		httpc_pause(s->req, s->m->paused || s->held_back);
}

void mc_partial(struct mc_stream *s, size_t n)
{
	struct mcpc *m = s->m;
	m->partial = m->partial - s->partial + n;
	s->partial = n;
	if (n == 0 && s == m->leader) {
		/* Its message is whole: the others read on. */
		m->leader = NULL;
		for (struct mc_stream *o = m->streams; o; o = o->next)
			if (o->held_back) {
				o->held_back = false;
				mc_apply_pause(o);
			}
		return;
	}
	if (n == 0 || m->partial <= MCPC_MAX_PARTIAL)
		return;
	if (m->leader == NULL)
		m->leader = s;
	else if (s != m->leader && !s->held_back) {
		s->held_back = true;
		mc_apply_pause(s);
	}
}

void mc_stream_drop(struct mc_stream *s)
{
	struct mcpc *m = s->m;
	if (s->dead)
		return;
	mc_unwait(s);
	mc_partial(s, 0);
	s->held_back = false;
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

void mc_drop_all(struct mcpc *m)
{
	while (m->streams)
		mc_stream_drop(m->streams);
}

void mc_held_free(struct mcpc *m)
{
	msgq_clear(&m->held);
	mc_maybe_drain(m);
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
	/* The token as it is now: one refreshed since the last request goes
	 * on this one. */
	mc_stream_forget_auth(s);
	const char *auth =
		m->authorization ? m->authorization(m->auth_arg) : NULL;
	if (auth) {
		s->auth_line = xasprintf("Authorization: %s", auth);
		h[n++] = s->auth_line;
	}
	bool streamable = s->kind == MC_POST || s->kind == MC_RESUME ||
			  s->kind == MC_GET || s->kind == MC_DELETE;
	if (s->kind == MC_POST || s->kind == MC_LEGACY_POST)
		h[n++] = "Content-Type: application/json";
	if (s->kind == MC_POST)
		h[n++] = "Accept: application/json, text/event-stream";
	else if (s->kind != MC_LEGACY_POST && s->kind != MC_DELETE)
		h[n++] = "Accept: text/event-stream";
	/* A modern message is stateless: its own version and names, never
	 * the session's. */
	s->had_session = streamable && m->session_hdr && !s->modern;
	if (s->had_session)
		h[n++] = m->session_hdr;
	if (streamable && m->version_hdr && !s->modern)
		h[n++] = m->version_hdr;
	for (int i = 0; s->modern && i < 3; i++)
		if (s->modern_hdr[i])
			h[n++] = s->modern_hdr[i];
	for (size_t i = 0; s->extra_hdr && s->extra_hdr[i]; i++)
		h[n++] = s->extra_hdr[i];
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
	s->json = false;
	s->progress = false;
	buf_reset(&s->body);
	int rc = httpc_start(m->http, &o, &mc_http_cbs, s, &s->req);
	buf_free(&lei);
	if (rc < 0) {
		s->req = NULL;
		return rc;
	}
	s->held_back = false;
	mc_partial(s, 0);
	if (m->paused)
		httpc_pause(s->req, true);
	if (s->kind == MC_POST || s->kind == MC_LEGACY_POST) {
		s->waiting = true;
		s->sent_len = len;
		m->waiting++;
		m->waiting_bytes += len;
	}
	return 0;
}

/* ---- timers: resumptions and reopenings ------------------------------- */

static void mc_timer_cb(uv_timer_t *t);

void mc_arm(struct mcpc *m)
{
	uint64_t next = m->gated ? m->gate_due : 0;
	if (m->drain_due)
		next = clock_now_ms();
	for (struct mc_stream *s = m->streams; s; s = s->next)
		if (s->due && (next == 0 || s->due < next))
			next = s->due;
	if (next == 0 || m->life != MC_OPEN) {
		uv_timer_stop(&m->timer);
		return;
	}
	uint64_t now = clock_now_ms();
	uv_timer_start(&m->timer, mc_timer_cb, next > now ? next - now : 0, 0);
}

void mc_due(struct mc_stream *s, uint64_t delay_ms)
{
	s->due = clock_now_ms() + delay_ms;
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
		mc_lost(m, s->id, OUTBOX_CUT);
	mc_stream_drop(s);
}

static void mc_timer_cb(uv_timer_t *t)
{
	struct mcpc *m = t->data;
	uint64_t now = clock_now_ms();
	m->busy++;
	if (m->drain_due && m->life == MC_OPEN) {
		m->drain_due = false;
		if (m->cbs.on_drain)
			m->cbs.on_drain(m->ctx);
	}
	if (m->gated && m->gate_due <= now)
		mc_ungate(m); /* the GET stream's answer is late: go anyway */
	/* One at a time from the list's head: a callback may change it. */
	for (;;) {
		struct mc_stream *s = m->streams;
		while (s && !(s->due && s->due <= now))
			s = s->next;
		if (!s || m->life != MC_OPEN)
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

bool mc_is_json(struct httpc_req *r)
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
bool mc_token_ok(const char *v, size_t n)
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

bool mc_answers(const char *msg, size_t len, int64_t id)
{
	static const char *const keys[] = {"id", "result", "error", "method"};
	struct jsonscan_span sp[4] = {{0}};
	long long v;
	return id > 0 && jsonscan_members(msg, len, keys, 4, sp) == 0 &&
	       sp[3].len == 0 && (sp[1].len || sp[2].len) &&
	       jsonscan_int(msg, &sp[0], &v) && v == id;
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
	if (!m->cbs.on_heartbeat || m->life != MC_OPEN)
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

/* ---- the HTTP client's callbacks ---------------------------------------- */

static bool mc_head_cb(void *ctx, struct httpc_req *r)
{
	struct mc_stream *s = ctx;
	struct mcpc *m = s->m;
	int status = httpc_status(r);
	bool keep = true;
	s->got_head = true;
	mc_unwait(s);
	m->ever_ok = true;
	m->busy++;
	switch (s->kind) {
	case MC_POST:
		keep = mc_post_head(s, status);
		break;
	case MC_RESUME:
	case MC_GET:
		keep = mc_get_head(s, status);
		if (s->kind == MC_GET)
			mc_ungate(m);
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
				mc_lost(m, s->id, OUTBOX_CUT);
				mc_stream_drop(s);
			} else {
				mc_fault(m, MCPC_FAULT_PROTOCOL, 0,
					 "the server sent a message past the "
					 "size limit",
					 NULL);
			}
		}
	} else if (!s->json) {
		/* dropped: not a message */
	} else if (len > MCPC_MAX_MESSAGE - s->body.len) {
		log_warn("an answer passed the size limit");
		mc_lost(m, s->id, OUTBOX_CUT);
		mc_stream_drop(s);
	} else {
		buf_append(&s->body, data, len);
	}
	if (!s->dead)
		mc_partial(s,
			   s->sse ? (s->parser_on ? sse_pending(&s->parser) : 0)
				  : s->body.len);
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
	mc_unwait(s);
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
