/*
 * The request envelope of MCP 2026-07-28 on Streamable HTTP: the era of a
 * POSTed message, the checks of a modern one in the conformance suite's
 * order with the status and error the revision names for each fault, the
 * header value sentinel (SEP-2243) and the per-request log level. The
 * x-mcp-header part is envelope_params.c. Pure: no I/O, no state.
 */
#include "jsonrpc/envelope.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope_int.h"
#include "jsonrpc/framer.h"
#include "jsonrpc/jsonrpc.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/xmalloc.h"

#define ENV_SENTINEL_HEAD "=?base64?"
#define ENV_SENTINEL_TAIL "?="
#define ENV_HEAD_LEN (sizeof ENV_SENTINEL_HEAD - 1)
#define ENV_TAIL_LEN (sizeof ENV_SENTINEL_TAIL - 1)

/* The client requests of 2026-07-28 (schema.ts, ClientRequest). */
static const char *const env_methods[] = {
	"server/discover",
	"completion/complete",
	"prompts/get",
	"prompts/list",
	"resources/list",
	"resources/templates/list",
	"resources/read",
	"subscriptions/listen",
	"tools/call",
	"tools/list",
	NULL,
};

/* Methods earlier revisions had and this one dropped (the server-to-client
 * ones now come only inside input_required): the same 404, but a message
 * that tells a client what happened rather than "unknown". The tasks
 * extension's methods are unknown here: mcpvisor does not offer it. */
static const char *const env_removed[] = {
	"initialize",
	"ping",
	"logging/setLevel",
	"resources/subscribe",
	"resources/unsubscribe",
	"roots/list",
	"sampling/createMessage",
	"elicitation/create",
	NULL,
};

static const char *const env_levels[] = {
	"debug",    "info",  "notice",	  "warning", "error",
	"critical", "alert", "emergency", NULL,
};

static bool env_in(const char *const *set, const char *s)
{
	for (int i = 0; set[i]; i++)
		if (strcmp(set[i], s) == 0)
			return true;
	return false;
}

void envelope_quote(char out[ENVELOPE_QUOTE_BUF], const char *s, size_t len)
{
	size_t n = len < ENVELOPE_MAX_QUOTE ? len : ENVELOPE_MAX_QUOTE;
	/* Back off to a character's start, so the cut shows no stray byte
	 * (at most three: UTF-8 has no longer tails). */
	for (int i = 0;
	     i < 3 && n > 0 && n < len && ((unsigned char)s[n] & 0xc0) == 0x80;
	     i++)
		n--;
	size_t w = escape_into(out, ENVELOPE_QUOTE_BUF - 3, s, n, 0);
	if (n < len)
		memcpy(out + w, "...", 4);
}

int envelope_fail(struct envelope_err *err, int http_status, int code,
		  json_t *data, const char *fmt, ...)
{
	envelope_err_clear(err);
	err->http_status = http_status;
	err->code = code;
	err->data = data;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&err->message, fmt, ap) < 0)
		abort();
	va_end(ap);
	return -1;
}

void envelope_err_clear(struct envelope_err *err)
{
	if (err == NULL)
		return;
	free(err->message);
	json_decref(err->data);
	memset(err, 0, sizeof *err);
}

/* What the checks of one message share, looked up once: the accepted
 * path is on every modern request. */
struct env_msg {
	json_t *msg;
	json_t *params; /* NULL: none (or not an object: refused) */
	json_t *meta;	/* params._meta, NULL: none */
	json_t *claim;	/* _meta's protocol version, NULL: none */
};

/* The claim of msg: params._meta's protocol version key, any value. */
static json_t *env_claim(json_t *msg)
{
	json_t *params =
		json_is_object(msg) ? json_object_get(msg, "params") : NULL;
	json_t *meta = json_is_object(params) ? json_object_get(params, "_meta")
					      : NULL;
	return json_is_object(meta)
		       ? json_object_get(meta, META_PROTOCOL_VERSION)
		       : NULL;
}

static bool env_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* s with surrounding spaces and tabs left out: its start and length. */
static const char *env_trim(const char *s, size_t *len)
{
	size_t n = strlen(s);
	while (n > 0 && env_ows(*s))
		s++, n--;
	while (n > 0 && env_ows(s[n - 1]))
		n--;
	*len = n;
	return s;
}

/* The newest revision of the 2025 era. */
#define ENV_NEWEST_LEGACY "2025-11-25"

enum envelope_era envelope_classify(json_t *msg, const char *header_version)
{
	if (env_claim(msg) != NULL)
		return ENVELOPE_MODERN;
	if (header_version == NULL)
		return ENVELOPE_LEGACY;
	size_t n;
	const char *v = env_trim(header_version, &n);
	if (n == 0)
		return ENVELOPE_LEGACY;
	/* The legacy names are short; a longer value is none of them. */
	char name[32];
	if (n >= sizeof name)
		return ENVELOPE_MODERN;
	memcpy(name, v, n);
	name[n] = '\0';
	/* A version older than every revision (dates sort as text) is no
	 * modern claim: the 2025 path refuses it by name. */
	if (mcp_version_supported(name) || strcmp(name, ENV_NEWEST_LEGACY) < 0)
		return ENVELOPE_LEGACY;
	return ENVELOPE_MODERN;
}

static bool env_sentinel_shaped(const char *s, size_t n)
{
	return n >= ENV_HEAD_LEN && n >= ENV_TAIL_LEN &&
	       memcmp(s, ENV_SENTINEL_HEAD, ENV_HEAD_LEN) == 0 &&
	       memcmp(s + n - ENV_TAIL_LEN, ENV_SENTINEL_TAIL, ENV_TAIL_LEN) ==
		       0;
}

/* Standard base64, padded, canonical: the decoded bytes
 * (NUL-terminated) and their length, or NULL. */
static char *env_b64_decode(const char *s, size_t n, size_t *out_len)
{
	unsigned char *out = xmalloc(n / 4 * 3 + 3);
	long got = base64_decode(s, n, out, BASE64_STD, true);
	if (got < 0) {
		free(out);
		return NULL;
	}
	out[got] = '\0';
	*out_len = (size_t)got;
	return (char *)out;
}

int envelope_header_view(const char *raw, struct envelope_view *v)
{
	v->owned = NULL;
	size_t n;
	const char *s = env_trim(raw, &n);
	if (n > ENVELOPE_MAX_HEADER)
		return -1;
	/* RFC 9110 field-value characters, as SEP-2243 allows them plain:
	 * anything else must have come inside a sentinel. */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x21 || c > 0x7e) && !env_ows((char)c))
			return -1;
	}
	if (!env_sentinel_shaped(s, n)) {
		v->s = s;
		v->len = n;
		return 0;
	}
	if (n < ENV_HEAD_LEN + ENV_TAIL_LEN)
		return -1; /* "=?base64?=": head and tail overlap */
	size_t len;
	char *out = env_b64_decode(s + ENV_HEAD_LEN,
				   n - ENV_HEAD_LEN - ENV_TAIL_LEN, &len);
	if (out == NULL)
		return -1;
	if (memchr(out, '\0', len) != NULL ||
	    framer_utf8_prefix(out, len) != len) {
		free(out);
		return -1;
	}
	v->s = v->owned = out;
	v->len = len;
	return 0;
}

char *envelope_header_decode(const char *raw)
{
	struct envelope_view v;
	if (raw == NULL || envelope_header_view(raw, &v) < 0)
		return NULL;
	return v.owned ? v.owned : xstrndup(v.s, v.len);
}

char *envelope_header_encode(const char *s)
{
	if (s == NULL)
		s = "";
	size_t n = strlen(s);
	bool plain = !env_sentinel_shaped(s, n) &&
		     (n == 0 || (s[0] != ' ' && s[n - 1] != ' '));
	for (size_t i = 0; plain && i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		plain = c == ' ' || (c >= 0x21 && c <= 0x7e);
	}
	if (plain)
		return xstrdup(s);
	struct buf b;
	buf_init(&b);
	buf_puts(&b, ENV_SENTINEL_HEAD);
	base64_append(&b, s, n, BASE64_STD, true);
	buf_puts(&b, ENV_SENTINEL_TAIL);
	return buf_steal(&b);
}

/* A header through hdr: absent (NULL), or present and at most
 * ENVELOPE_MAX_HEADER bytes; -1 with err for a longer one. */
static int env_header(envelope_header_fn hdr, void *arg, const char *lname,
		      const char *shown, const char **out,
		      struct envelope_err *err)
{
	*out = hdr ? hdr(arg, lname) : NULL;
	if (*out && strlen(*out) > ENVELOPE_MAX_HEADER)
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "%s header is longer than %d bytes", shown,
				     ENVELOPE_MAX_HEADER);
	return 0;
}

/* A JSON-RPC request or notification, as far as the envelope needs;
 * fills m (params and _meta looked up once). */
static int env_check_shape(json_t *msg, struct env_msg *m, struct envelope *env,
			   struct envelope_err *err)
{
	if (!json_is_object(msg))
		return envelope_fail(err, 400, JR_INVALID_REQUEST, NULL,
				     "a message must be a JSON object");
	json_t *method = json_object_get(msg, "method");
	if (!json_is_string(method))
		return envelope_fail(err, 400, JR_INVALID_REQUEST, NULL,
				     "a request needs a string \"method\"");
	json_t *id = json_object_get(msg, "id");
	if (id != NULL && !jr_id_valid(id))
		return envelope_fail(err, 400, JR_INVALID_REQUEST, NULL,
				     "\"id\" must be a string or an integer");
	env->method = json_string_value(method);
	env->notification = id == NULL;
	m->msg = msg;
	m->params = json_object_get(msg, "params");
	m->meta = json_is_object(m->params)
			  ? json_object_get(m->params, "_meta")
			  : NULL;
	m->claim = json_is_object(m->meta)
			   ? json_object_get(m->meta, META_PROTOCOL_VERSION)
			   : NULL;
	return 0;
}

/* The _meta keys a request must carry and the types of those sent. */
static int env_check_meta(const struct env_msg *m, struct envelope *env,
			  struct envelope_err *err)
{
	if (m->params != NULL && !json_is_object(m->params))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "\"params\" must be an object");
	json_t *meta = m->meta;
	if (meta != NULL && !json_is_object(meta))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "params._meta must be an object");
	json_t *pv = m->claim;
	json_t *caps = meta ? json_object_get(meta, META_CLIENT_CAPS) : NULL;
	if (!env->notification && (pv == NULL || caps == NULL)) {
		const char *both = pv == NULL && caps == NULL ? " and " : "";
		return envelope_fail(
			err, 400, JR_INVALID_PARAMS, NULL,
			"params._meta lacks %s%s%s: a 2026-07-28 request "
			"carries both",
			pv ? "" : META_PROTOCOL_VERSION, both,
			caps ? "" : META_CLIENT_CAPS);
	}
	if (pv != NULL && !json_is_string(pv))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "_meta %s must be a string",
				     META_PROTOCOL_VERSION);
	if (caps != NULL && !json_is_object(caps))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "_meta %s must be an object",
				     META_CLIENT_CAPS);
	json_t *info = meta ? json_object_get(meta, META_CLIENT_INFO) : NULL;
	if (info != NULL && !json_is_object(info))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "_meta %s must be an object",
				     META_CLIENT_INFO);
	json_t *token = meta ? json_object_get(meta, "progressToken") : NULL;
	if (token != NULL && !json_is_string(token) && !json_is_number(token))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "_meta progressToken must be a string or "
				     "a number");
	env->client_caps = caps;
	env->client_info = info;
	env->progress_token = token;
	return 0;
}

static int env_check_version(const struct env_msg *m, const char *header,
			     struct envelope *env, struct envelope_err *err)
{
	size_t hlen;
	const char *h = env_trim(header, &hlen);
	const char *v = m->claim ? json_string_value(m->claim) : NULL;
	size_t vlen = m->claim ? json_string_length(m->claim) : 0;
	char qh[ENVELOPE_QUOTE_BUF], qv[ENVELOPE_QUOTE_BUF];
	if (v != NULL && (vlen != hlen || memcmp(v, h, hlen) != 0)) {
		envelope_quote(qh, h, hlen);
		envelope_quote(qv, v, vlen);
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "MCP-Protocol-Version header '%s' does "
				     "not match _meta %s '%s'",
				     qh, META_PROTOCOL_VERSION, qv);
	}
	if (hlen != strlen(MODERN_VERSION) ||
	    memcmp(h, MODERN_VERSION, hlen) != 0) {
		/* The same bytes as the claim when there is one, so the
		 * echo is what the client asked for (NUL and all). */
		json_t *req = v ? json_stringn(v, vlen) : json_stringn(h, hlen);
		if (req == NULL)
			req = json_string(""); /* a header not UTF-8 */
		json_t *data = json_pack("{s:[s],s:o}", "supported",
					 MODERN_VERSION, "requested", req);
		envelope_quote(qh, h, hlen);
		return envelope_fail(err, 400, JR_UNSUPPORTED_VERSION, data,
				     "protocol version '%s' is not supported "
				     "(supported: %s)",
				     qh, MODERN_VERSION);
	}
	env->version = MODERN_VERSION;
	return 0;
}

enum envelope_log envelope_log_parse(const char *name)
{
	for (int i = 0; name && env_levels[i]; i++)
		if (strcmp(env_levels[i], name) == 0)
			return (enum envelope_log)i;
	return ENVELOPE_LOG_NONE;
}

const char *envelope_log_name(enum envelope_log level)
{
	return level == ENVELOPE_LOG_NONE ? NULL : env_levels[level];
}

static int env_check_log(const struct env_msg *m, struct envelope *env,
			 struct envelope_err *err)
{
	json_t *lv = m->meta ? json_object_get(m->meta, META_LOG_LEVEL) : NULL;
	env->log_level = ENVELOPE_LOG_NONE;
	if (lv == NULL)
		return 0;
	if (json_is_string(lv) &&
	    strlen(json_string_value(lv)) == json_string_length(lv))
		env->log_level = envelope_log_parse(json_string_value(lv));
	if (env->log_level != ENVELOPE_LOG_NONE)
		return 0;
	return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
			     "_meta %s must be one of debug, info, notice, "
			     "warning, error, critical, alert, emergency",
			     META_LOG_LEVEL);
}

static int env_check_method(struct envelope *env, struct envelope_err *err)
{
	bool notif_name = strncmp(env->method, "notifications/", 14) == 0;
	if (env->notification ? notif_name : env_in(env_methods, env->method))
		return 0;
	/* Quoted only here: the accepted path stays free of it. */
	char q[ENVELOPE_QUOTE_BUF];
	envelope_quote(q, env->method, strlen(env->method));
	if (env->notification)
		return envelope_fail(err, 400, JR_INVALID_REQUEST, NULL,
				     "'%s' without an \"id\": only "
				     "notifications/... may go unanswered",
				     q);
	if (env_in(env_removed, env->method))
		return envelope_fail(err, 404, JR_METHOD_NOT_FOUND, NULL,
				     "method '%s' is not part of MCP %s", q,
				     MODERN_VERSION);
	return envelope_fail(err, 404, JR_METHOD_NOT_FOUND, NULL,
			     "method '%s' not found", q);
}

/* One standard header against its body value (want, wlen bytes):
 * decoded, then compared byte for byte. */
static int env_check_standard(envelope_header_fn hdr, void *arg,
			      const char *lname, const char *shown,
			      bool required, const char *want, size_t wlen,
			      struct envelope_err *err)
{
	const char *raw;
	if (env_header(hdr, arg, lname, shown, &raw, err) < 0)
		return -1;
	if (raw == NULL && !required)
		return 0;
	struct envelope_view v = {NULL, 0, NULL};
	bool valid = raw && envelope_header_view(raw, &v) == 0;
	bool same = valid && v.len == wlen && memcmp(v.s, want, wlen) == 0;
	char qw[ENVELOPE_QUOTE_BUF], qh[ENVELOPE_QUOTE_BUF];
	if (!same && valid)
		envelope_quote(qh, v.s, v.len);
	free(v.owned);
	if (same)
		return 0;
	envelope_quote(qw, want, wlen);
	if (raw == NULL)
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "%s header missing (the body says '%s')",
				     shown, qw);
	if (!valid) {
		envelope_quote(qh, raw, strlen(raw));
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "%s header '%s' is not a valid value "
				     "(visible ASCII, or a =?base64?...?= "
				     "sentinel of UTF-8)",
				     shown, qh);
	}
	return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
			     "%s header '%s' does not match the body's '%s'",
			     shown, qh, qw);
}

/* Mcp-Name of the three methods that route by a name or uri. */
static int env_check_name(const struct env_msg *m, struct envelope *env,
			  envelope_header_fn hdr, void *arg,
			  struct envelope_err *err)
{
	const char *key;
	if (strcmp(env->method, "tools/call") == 0 ||
	    strcmp(env->method, "prompts/get") == 0)
		key = "name";
	else if (strcmp(env->method, "resources/read") == 0)
		key = "uri";
	else
		return 0;
	json_t *v = m->params ? json_object_get(m->params, key) : NULL;
	if (!json_is_string(v))
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "%s needs a string params.%s", env->method,
				     key);
	return env_check_standard(hdr, arg, "mcp-name", "Mcp-Name", true,
				  json_string_value(v), json_string_length(v),
				  err);
}

int envelope_check(json_t *msg, envelope_header_fn hdr, void *arg,
		   struct envelope *env, struct envelope_err *err)
{
	memset(env, 0, sizeof *env);
	env->log_level = ENVELOPE_LOG_NONE;
	memset(err, 0, sizeof *err);
	struct env_msg m;
	if (env_check_shape(msg, &m, env, err) < 0)
		goto fail;
	const char *version;
	if (env_header(hdr, arg, "mcp-protocol-version", "MCP-Protocol-Version",
		       &version, err) < 0)
		goto fail;
	if (version == NULL) {
		envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
			      "MCP-Protocol-Version header missing: a "
			      "%s request carries it on every POST",
			      MODERN_VERSION);
		goto fail;
	}
	/* A 2025 handshake under a modern header: the TypeScript SDK calls
	 * it a header fault, not a malformed modern request. */
	if (!env->notification && m.claim == NULL &&
	    strcmp(env->method, "initialize") == 0) {
		envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
			      "initialize is a 2025 handshake, but the "
			      "MCP-Protocol-Version header names another "
			      "revision");
		goto fail;
	}
	if (env_check_meta(&m, env, err) < 0 ||
	    env_check_version(&m, version, env, err) < 0 ||
	    env_check_log(&m, env, err) < 0 || env_check_method(env, err) < 0 ||
	    env_check_standard(hdr, arg, "mcp-method", "Mcp-Method",
			       !env->notification, env->method,
			       strlen(env->method), err) < 0 ||
	    env_check_name(&m, env, hdr, arg, err) < 0)
		goto fail;
	return 0;
fail:
	memset(env, 0, sizeof *env);
	env->log_level = ENVELOPE_LOG_NONE;
	return -1;
}

bool envelope_log_passes(enum envelope_log want, const char *level)
{
	if (want == ENVELOPE_LOG_NONE)
		return false;
	enum envelope_log l = envelope_log_parse(level);
	if (l == ENVELOPE_LOG_NONE)
		return want == ENVELOPE_LOG_DEBUG;
	return l >= want;
}
