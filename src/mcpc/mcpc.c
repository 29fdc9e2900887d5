/*
 * The MCP client session over Streamable HTTP: one HTTP request per
 * message, the answers' JSON or event streams, resumption with
 * Last-Event-ID, the standing GET stream, DELETE on close; faults and
 * lost requests. The streams themselves are in stream.c, the legacy
 * transport in legacy.c.
 */
#include "mcpc/mcpc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

/* ---- faults and losses ------------------------------------------------ */

char *mc_unreachable_text(const struct mcpc *m, int err)
{
	/* The address only: user info, path and query may hold a secret
	 * (status masks the configured ones, not the server's own). */
	const char *u = m->url ? m->url : "";
	const char *p = strstr(u, "://");
	const char *auth = p ? p + 3 : u;
	size_t alen = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', alen);
	if (at) {
		alen -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	int n = (int)alen;
	switch (err) {
	case -ECONNREFUSED:
		return xasprintf("the server at %.*s refused the connection", n,
				 auth);
	case -EHOSTUNREACH:
		return xasprintf("the host name of %.*s did not resolve", n,
				 auth);
	case -ETIMEDOUT:
		return xasprintf("the server at %.*s did not answer in time", n,
				 auth);
	case -ECONNRESET:
		return xasprintf("the server at %.*s closed the connection "
				 "without an answer",
				 n, auth);
	case -EPROTO:
		return xasprintf("the connection to %.*s failed (TLS or "
				 "protocol)",
				 n, auth);
	case 0:
		return xasprintf("the server at %.*s did not answer", n, auth);
	default:
		return xasprintf("the server at %.*s cannot be reached (%s)", n,
				 auth, strerror(-err));
	}
}

/* A 401 or 403: the challenge and what the refused request carried. */
struct mc_auth_fact {
	const char *www_authenticate;
	const char *auth_sent;
};

static void mc_fault_with(struct mcpc *m, enum mcpc_fault f, int status,
			  const char *text, const char *resource_metadata,
			  int64_t refused_id, const struct mc_auth_fact *af)
{
	if (m->life != MC_OPEN)
		return;
	m->life = MC_FAULTED;
	/* What provably never ran: the refused POST, and what was held. */
	size_t n = (refused_id > 0) + m->held.count;
	struct outbox_fact_of *facts = xcalloc(n ? n : 1, sizeof *facts);
	size_t k = 0;
	if (refused_id > 0)
		facts[k++] =
			(struct outbox_fact_of){refused_id, OUTBOX_REFUSED};
	for (struct msgq_item *h = m->held.head; h; h = h->next)
		if (h->id > 0)
			facts[k++] = (struct outbox_fact_of){h->id,
							     OUTBOX_UNWRITTEN};
	mc_drop_all(m);
	mc_held_free(m);
	uv_timer_stop(&m->timer);
	log_debug("fault %d (HTTP %d): %s", (int)f, status, text);
	struct mcpc_fault_info fi = {
		.kind = f,
		.http_status = status,
		.text = text,
		.resource_metadata = resource_metadata,
		.www_authenticate = af ? af->www_authenticate : NULL,
		.auth_sent = af ? af->auth_sent : NULL,
		.facts = facts,
		.nfacts = k,
	};
	m->busy++;
	m->cbs.on_fault(m->ctx, &fi);
	m->busy--;
	free(facts);
	mc_reap(m);
}

void mc_fault(struct mcpc *m, enum mcpc_fault f, int status, const char *text,
	      const char *resource_metadata)
{
	mc_fault_with(m, f, status, text, resource_metadata, 0, NULL);
}

void mc_fault_refused(struct mcpc *m, enum mcpc_fault f, int status,
		      const char *text, int64_t refused_id)
{
	mc_fault_with(m, f, status, text, NULL, refused_id, NULL);
}

void mc_lost(struct mcpc *m, int64_t id, enum outbox_fact f)
{
	if (id <= 0 || m->life != MC_OPEN)
		return;
	m->busy++;
	m->cbs.on_lost(m->ctx, id, f);
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
		/* Copied: the fault lets the request go before it is told. */
		const char *h = httpc_header(s->req, "WWW-Authenticate");
		char *www =
			h ? xstrndup(h, strnlen(h, MCPC_MAX_CHALLENGE)) : NULL;
		char *rm = mc_resource_metadata(www);
		/* A server that refuses a request's credentials has not
		 * processed it: that request may go once more, with others. */
		bool post = s->kind == MC_POST || s->kind == MC_LEGACY_POST;
		static const size_t skip = sizeof "Authorization: " - 1;
		struct mc_auth_fact af = {
			.www_authenticate = www,
			.auth_sent = s->auth_line ? s->auth_line + skip : NULL,
		};
		const char *text =
			status == 403 ? "the server refused our credentials"
			: s->auth_line
				? "the server no longer takes our access token"
				: "the server asks for authorization";
		mc_fault_with(m, MCPC_FAULT_AUTH, status, text, rm,
			      post && !s->answered ? s->id : 0, &af);
		free(rm);
		free(www);
		return true;
	}
	/* Only a POST's 404 says the session is gone: a server without a
	 * GET route often answers 404 where the spec says 405, and taking
	 * that for an expired session would re-initialize forever. */
	if (status == 404 && s->had_session && s->kind == MC_POST) {
		/* The server did not process what it refused: a request's
		 * POST is named, so it can go once on the new session. */
		mc_fault_refused(m, MCPC_FAULT_EXPIRED, status,
				 "the server no longer knows our session",
				 s->answered ? 0 : s->id);
		return true;
	}
	return false;
}

/* A request that got no response: what it means for the session. */
void mc_no_response(struct mc_stream *s, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (!sent && !m->ever_ok) {
		char *text = mc_unreachable_text(m, err);
		mc_fault(m,
			 err == -ETIMEDOUT ? MCPC_FAULT_TIMEOUT
					   : MCPC_FAULT_CLOSED,
			 0, text, NULL);
		free(text);
		return;
	}
	mc_lost(m, s->id, sent ? OUTBOX_CUT : OUTBOX_UNWRITTEN);
}

/* ---- Streamable HTTP responses ------------------------------------------ */

static void mc_open_get(struct mcpc *m)
{
	if (m->get_opened || m->transport == MC_LEGACY || m->life != MC_OPEN) {
		mc_ungate(m);
		return;
	}
	m->get_opened = true;
	struct mc_stream *s = mc_stream_new(m, MC_GET, 0);
	if (mc_stream_start(s, "GET", m->url, NULL, 0) < 0) {
		mc_stream_drop(s);
		mc_ungate(m);
	}
}

/* The first POST of auto mode answered: which transport it is. */
static bool mc_decide(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	if (status == 400 || status == 404 || status == 405) {
		log_debug("HTTP %d to the first POST: the legacy transport",
			  status);
		m->transport = MC_LEGACY;
		mc_stream_drop(s);
		if (mc_legacy_open(m) < 0)
			mc_fault(m, MCPC_FAULT_CLOSED, 0,
				 "the legacy event stream cannot be opened",
				 NULL);
		return false;
	}
	m->transport = MC_STREAMABLE;
	free(m->init_msg);
	m->init_msg = NULL;
	return true;
}

bool mc_post_head(struct mc_stream *s, int status)
{
	struct mcpc *m = s->m;
	if (s->modern)
		return mc_modern_head(s, status);
	if (m->transport == MC_DECIDING && !mc_decide(s, status))
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
	if (m->held.head)
		mc_flush_held(m);
	if (s->dead)
		return false;
	if (status == 202 || status == 204)
		return true;
	if (mc_is_sse(s->req) && status >= 200 && status < 300) {
		mc_sse_begin(s);
		return true;
	}
	if (mc_is_json(s->req)) {
		s->json = true;
		return true; /* buffered; judged when whole */
	}
	if (status >= 200 && status < 300 && s->id > 0) {
		mc_fault(m, MCPC_FAULT_PROTOCOL, status,
			 "the server answered neither JSON nor an event "
			 "stream",
			 NULL);
		return false;
	}
	return true;
}

bool mc_get_head(struct mc_stream *s, int status)
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
	mc_lost(s->m, s->id, OUTBOX_CUT);
	mc_stream_drop(s);
}

void mc_post_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (s->modern) {
		mc_modern_done(s, status, err, sent);
		return;
	}
	/* The initialized notification not accepted: no GET stream follows
	 * it, so nothing waits for one. */
	if (s->opens_get &&
	    (!s->got_head || s->sse || status < 200 || status >= 300))
		mc_ungate(m);
	if (!s->got_head && m->transport == MC_DECIDING) {
		/* Auto mode cannot tell the transport: nothing can go. */
		char *text = mc_unreachable_text(m, err);
		mc_fault(m,
			 err == -ETIMEDOUT ? MCPC_FAULT_TIMEOUT
					   : MCPC_FAULT_CLOSED,
			 0, text, NULL);
		free(text);
		mc_stream_drop(s);
		return;
	}
	if (!s->got_head) {
		mc_no_response(s, err, sent);
		mc_stream_drop(s);
		return;
	}
	if (s->sse) {
		if (s->id > 0 && !s->answered && m->life == MC_OPEN)
			mc_resume_or_lose(s, false);
		else
			mc_stream_drop(s);
		return;
	}
	bool ok2xx = status >= 200 && status < 300;
	/* An error status may still carry our answer (a JSON-RPC error);
	 * anything else it carries is not for anyone. */
	bool deliver = s->json && s->body.len > 0 && err == 0 &&
		       (ok2xx || mc_answers(s->body.data, s->body.len, s->id));
	if (deliver) {
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
	} else if (!ok2xx) {
		log_debug("HTTP %d to a POST", status);
	}
	/* 202 to a request: its answer comes on the GET stream. A 503
	 * proves it unprocessed only from a peer that says so. */
	if (s->id > 0 && !s->answered && status != 202)
		mc_lost(m, s->id,
			status == 503 && m->refuses_503 && err == 0
				? OUTBOX_REFUSED
				: OUTBOX_CUT);
	if (s->id == 0 && s->kind == MC_POST && ok2xx && s->opens_get)
		mc_open_get(m);
	mc_stream_drop(s);
}

void mc_resume_done(struct mc_stream *s, int status, int err, bool sent)
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

void mc_get_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	mc_ungate(m); /* answered or not, what waits for it goes */
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
		if (!s->got_head) {
			char *text = mc_unreachable_text(m, err);
			mc_fault(m, MCPC_FAULT_CLOSED, 0, text, NULL);
			free(text);
		}
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

/* ---- the API ------------------------------------------------------------ */

int mcpc_new(struct httpc *http, const struct mcpc_opts *opts,
	     const struct mcpc_cbs *cbs, void *ctx, struct mcpc **out)
{
	const char *u = opts->url;
	if (!http || !u ||
	    (strncasecmp(u, "http://", 7) != 0 &&
	     strncasecmp(u, "https://", 8) != 0) ||
	    strpbrk(u, " \r\n\t"))
		return -EINVAL;
	size_t nh = 0;
	while (opts->headers && opts->headers[nh])
		nh++;
	/* Room for ours: type, accept, session, version, last id, the
	 * provider's Authorization. */
	if (nh > HTTPC_MAX_HEADERS - 6)
		return -EINVAL;
	struct mcpc *m = xcalloc(1, sizeof *m);
	m->http = http;
	m->loop = httpc_loop(http);
	m->url = xstrdup(u);
	m->headers = xcalloc(nh + 1, sizeof *m->headers);
	for (size_t i = 0; i < nh; i++)
		m->headers[i] = xstrdup(opts->headers[i]);
	m->nheaders = nh;
	m->unix_socket = opts->unix_socket ? xstrdup(opts->unix_socket) : NULL;
	m->mode = opts->mode;
	m->transport = opts->mode == MCPC_SSE	       ? MC_LEGACY
		       : opts->mode == MCPC_STREAMABLE ? MC_STREAMABLE
						       : MC_UNDECIDED;
	m->connect_timeout_ms = opts->connect_timeout_ms;
	m->refuses_503 = opts->refuses_with_503;
	m->authorization = opts->authorization;
	m->auth_arg = opts->auth_arg;
	m->cbs = *cbs;
	m->ctx = ctx;
	msgq_init(&m->held);
	uv_timer_init(m->loop, &m->timer);
	m->timer.data = m;
	*out = m;
	return 0;
}

static void mc_hold(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	msgq_push(&m->held, msg, len, id);
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
	/* Only the first request can be the initialize, and only
	 * notifications before the GET stream open it: the hot path scans
	 * nothing. */
	if (!m->first_seen && id > 0) {
		m->first_seen = true;
		if (mc_method_is(msg, len, "\"initialize\""))
			m->init_id = id;
	}
	/* Auto mode: kept to send again should this POST find a legacy
	 * server. */
	if (id > 0 && id == m->init_id && m->transport == MC_UNDECIDED) {
		m->init_msg = xmalloc(len);
		memcpy(m->init_msg, msg, len);
		m->init_len = len;
	} else if (id == 0 && !m->get_opened && m->transport != MC_LEGACY &&
		   mc_method_is(msg, len, "\"notifications/initialized\"")) {
		opens_get = true;
	}
	if (m->gated) {
		mc_hold(m, msg, len, id);
		return 0;
	}
	if (m->transport == MC_LEGACY && m->endpoint)
		return mc_legacy_post(m, msg, len, id);
	if (m->transport == MC_LEGACY) {
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
	if (m->transport == MC_DECIDING) {
		mc_hold(m, msg, len, id);
		return 0;
	}
	if (m->transport == MC_UNDECIDED)
		m->transport = MC_DECIDING;
	if (opens_get) {
		m->gated = true;
		m->gate_due = clock_now_ms() + MCPC_GATE_MS;
		mc_arm(m);
	}
	int rc = mc_post(m, msg, len, id, opens_get);
	if (rc < 0)
		m->gated = false;
	return rc;
}

void mc_ungate(struct mcpc *m)
{
	if (!m->gated)
		return;
	m->gated = false;
	m->gate_due = 0;
	mc_flush_held(m);
}

void mc_flush_held(struct mcpc *m)
{
	/* What is held now goes in order; what routing holds again (a
	 * legacy endpoint not known yet) is held anew, after it. */
	struct msgq now = m->held;
	if (now.head == NULL)
		return;
	msgq_init(&m->held);
	struct msgq_item *h;
	while ((h = msgq_pop(&now)) != NULL) {
		if (m->life == MC_OPEN &&
		    mc_route(m, h->msg, h->len, h->id) < 0)
			mc_lost(m, h->id, OUTBOX_UNWRITTEN);
		free(h);
	}
	mc_maybe_drain(m);
}

int mcpc_send(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	if (m->life != MC_OPEN)
		return -EPIPE;
	if (len > MCPC_MAX_MESSAGE)
		return -EMSGSIZE;
	/* Bounded: a server that takes no new requests (or a client cap)
	 * does not make every message wait in memory. */
	if (m->waiting + m->held.count >= MCPC_MAX_WAITING ||
	    m->waiting_bytes + m->held.bytes + len > MCPC_MAX_WAITING_BYTES) {
		m->want_drain = true;
		return -ENOBUFS;
	}
	return mc_route(m, msg, len, id);
}

void mcpc_pause(struct mcpc *m, bool on)
{
	if (m->paused == on)
		return;
	m->paused = on;
	for (struct mc_stream *s = m->streams; s; s = s->next)
		mc_apply_pause(s);
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
	if (msgq_forget(&m->held, id) > 0)
		mc_maybe_drain(m);
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
	free(m->modern_version);
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
	if (m->life == MC_CLOSING)
		return;
	bool faulted = m->life == MC_FAULTED;
	m->done = done;
	m->done_arg = arg;
	mc_drop_all(m);
	mc_held_free(m);
	uv_timer_stop(&m->timer);
	m->life = MC_CLOSING;
	if (m->session_hdr && m->transport != MC_LEGACY && !faulted) {
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
			      m->transport == MC_LEGACY ? "sse"
							: "streamable-http");
	if (m->version || m->modern_version)
		json_object_set_new(o, "protocolVersion",
				    json_string(m->version
							? m->version
							: m->modern_version));
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
