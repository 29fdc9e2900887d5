/*
 * A message of MCP 2026-07-28 on the session's URL: a POST of its own,
 * stateless (no session id, no resumption), with the revision's standard
 * headers taken from the message (MCP-Protocol-Version from the _meta
 * claim, Mcp-Method, Mcp-Name), and what its response means: the answer
 * as JSON or on an event stream with the notifications related to it, or
 * an error status whose body is the JSON-RPC error the revision answers
 * with. The session's transport, initialize and GET stream are not
 * touched: a probe can go before an initialize on the same session.
 */
#include "mcpc/mcpc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The JSON string at span of text, decoded; NULL when it is not a string
 * (or holds a NUL). */
static char *mm_string(const char *text, const struct jsonscan_span *sp)
{
	if (sp->len < 2 || text[sp->off] != '"')
		return NULL;
	/* Without escapes the bytes are the value: most names and methods. */
	if (!memchr(text + sp->off + 1, '\\', sp->len - 2))
		return xstrndup(text + sp->off + 1, sp->len - 2);
	json_t *v = json_loadb(text + sp->off, sp->len, JSON_DECODE_ANY, NULL);
	char *out = NULL;
	if (json_is_string(v) &&
	    strlen(json_string_value(v)) == json_string_length(v))
		out = xstrdup(json_string_value(v));
	json_decref(v);
	return out;
}

/* The headers msg asks for: version (the claim, required), method and
 * name (NULL when none). 0, or -EINVAL. */
static int mm_headers(const char *msg, size_t len, char **version,
		      char **method, char **name)
{
	static const char *const top[] = {"method", "params"};
	static const char *const pk[] = {"_meta", "name", "uri"};
	static const char *const mk[] = {META_PROTOCOL_VERSION};
	struct jsonscan_span t[2] = {{0}}, p[3] = {{0}}, v = {0};
	*version = *method = *name = NULL;
	if (jsonscan_members(msg, len, top, 2, t) < 0 || t[1].len == 0 ||
	    msg[t[1].off] != '{')
		return -EINVAL;
	const char *params = msg + t[1].off;
	if (jsonscan_members(params, t[1].len, pk, 3, p) < 0 || p[0].len == 0 ||
	    params[p[0].off] != '{' ||
	    jsonscan_members(params + p[0].off, p[0].len, mk, 1, &v) < 0)
		return -EINVAL;
	struct jsonscan_span vv = {p[0].off + v.off, v.len};
	*version = mm_string(params, &vv);
	if (!*version || !mc_token_ok(*version, strlen(*version)))
		goto fail;
	if (t[0].len) {
		*method = mm_string(msg, &t[0]);
		if (!*method || !mc_token_ok(*method, strlen(*method)))
			goto fail;
	}
	const struct jsonscan_span *ns = NULL;
	if (*method && (strcmp(*method, "tools/call") == 0 ||
			strcmp(*method, "prompts/get") == 0))
		ns = &p[1];
	else if (*method && strcmp(*method, "resources/read") == 0)
		ns = &p[2];
	if (ns && ns->len) {
		char *raw = mm_string(params, ns);
		if (!raw)
			goto fail;
		*name = envelope_header_encode(raw);
		free(raw);
	}
	return 0;
fail:
	free(*version);
	free(*method);
	*version = *method = NULL;
	return -EINVAL;
}

int mcpc_send_modern(struct mcpc *m, const char *msg, size_t len, int64_t id)
{
	return mcpc_send_modern_with(m, msg, len, id, NULL);
}

int mcpc_send_modern_with(struct mcpc *m, const char *msg, size_t len,
			  int64_t id, const char *const *extra)
{
	if (m->life != MC_OPEN)
		return -EPIPE;
	if (len > MCPC_MAX_MESSAGE)
		return -EMSGSIZE;
	/* The revision has no HTTP+SSE binding: a legacy session's endpoint
	 * is for its own era only. */
	if (m->transport == MC_LEGACY)
		return -EPROTONOSUPPORT;
	if (m->waiting + m->held.count >= MCPC_MAX_WAITING ||
	    m->waiting_bytes + m->held.bytes + len > MCPC_MAX_WAITING_BYTES) {
		m->want_drain = true;
		return -ENOBUFS;
	}
	/* Room beside the configured lines and ours (type, accept, version,
	 * method, name, the provider's Authorization). */
	size_t nx = 0;
	while (extra && extra[nx])
		nx++;
	if (m->nheaders + 6 + nx > HTTPC_MAX_HEADERS)
		return -E2BIG;
	char *version, *method, *name;
	int rc = mm_headers(msg, len, &version, &method, &name);
	if (rc < 0)
		return rc;
	struct mc_stream *s = mc_stream_new(m, MC_POST, id);
	s->modern = true;
	s->modern_hdr[0] = xasprintf("MCP-Protocol-Version: %s", version);
	s->modern_hdr[1] = method ? xasprintf("Mcp-Method: %s", method) : NULL;
	s->modern_hdr[2] = name ? xasprintf("Mcp-Name: %s", name) : NULL;
	if (nx) {
		s->extra_hdr = xcalloc(nx + 1, sizeof *s->extra_hdr);
		for (size_t i = 0; i < nx; i++)
			s->extra_hdr[i] = xstrdup(extra[i]);
	}
	if (!m->modern_version || strcmp(m->modern_version, version) != 0) {
		free(m->modern_version);
		m->modern_version = version;
		version = NULL;
	}
	free(version);
	free(method);
	free(name);
	rc = mc_stream_start(s, "POST", m->url, msg, len);
	if (rc < 0)
		mc_stream_drop(s);
	return rc;
}

bool mc_modern_head(struct mc_stream *s, int status)
{
	/* 401 and 403 are the session's (a login); a 404 is no session's
	 * end here, it carries -32601. */
	if (mc_status_fault(s, status))
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
		mc_fault(s->m, MCPC_FAULT_PROTOCOL, status,
			 "the server answered neither JSON nor an event "
			 "stream",
			 NULL);
		return false;
	}
	return true;
}

void mc_modern_done(struct mc_stream *s, int status, int err, bool sent)
{
	struct mcpc *m = s->m;
	if (!s->got_head) {
		mc_no_response(s, err, sent);
		mc_stream_drop(s);
		return;
	}
	bool ok2xx = status >= 200 && status < 300;
	if (s->sse) {
		/* No resumption in this revision: a stream cut before its
		 * answer loses the request (the caller may send it again with
		 * a new id). */
		if (s->id > 0 && !s->answered)
			mc_lost(m, s->id, OUTBOX_CUT);
		mc_stream_drop(s);
		return;
	}
	/* The revision's errors come with 400 or 404 and the JSON-RPC error
	 * as the body: that is the answer. */
	if (s->json && s->body.len > 0 && err == 0 &&
	    (ok2xx || mc_answers(s->body.data, s->body.len, s->id))) {
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
		log_debug("HTTP %d to a 2026-07-28 POST", status);
	}
	/* Refused without an answer of the revision: a 4xx says the server
	 * did not take the request (a server of an older revision refusing
	 * a message it cannot place); a 503 only from a peer that says so. */
	if (s->id > 0 && !s->answered)
		mc_lost(m, s->id,
			err == 0 && ((status >= 400 && status < 500) ||
				     (status == 503 && m->refuses_503))
				? OUTBOX_REFUSED
				: OUTBOX_CUT);
	mc_stream_drop(s);
}
