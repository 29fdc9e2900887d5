/*
 * The authorization code flow of one sign-in: asking the server what it
 * wants (a probe, when no challenge is known), discovery, registration,
 * the loopback listener and the authorization URL with PKCE, state and
 * resource, the redirect checked (state, then iss as RFC 9207 and the MCP
 * 2026-07-28 table say, then error or code), the token request and the
 * tokens stored under the server's lock.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "auth/discover.h"
#include "auth/fetch.h"
#include "auth/form.h"
#include "auth/lockwait.h"
#include "auth/loopback.h"
#include "auth/pkce.h"
#include "auth/register.h"
#include "auth/scope.h"
#include "auth/token.h"
#include "auth/urls.h"
#include "auth/www_auth.h"
#include "config/config.h"
#include "http/httpc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define FLOW_PROBE_MS 15000
#define FLOW_PROBE_MAX_BODY (64 * 1024)
#define FLOW_PROTOCOL "2025-11-25"

enum flow_state {
	FLOW_PROBE,    /* asking the server without a token */
	FLOW_DISCOVER, /* metadata */
	FLOW_REGISTER, /* the client */
	FLOW_WAIT,     /* the URL is out; waiting for the redirect */
	FLOW_TOKEN,    /* the code exchange */
	FLOW_STORE,    /* waiting for the server's lock */
	FLOW_DONE,
};

enum flow_probe_step { PROBE_INIT, PROBE_INITIALIZED, PROBE_LIST };

struct auth_flow {
	struct auth_flow *next; /* in a->flows */
	struct auth *a;
	struct httpc *h;
	enum flow_state st;
	enum flow_probe_step probe_step;
	char *name, *url;
	char key[STORE_KEY_HEX + 1];
	/* What the config says. */
	char *client_id, *client_secret, *client_metadata_url, *cfg_scope;
	/* The challenge this flow answers. */
	int ch_status;
	char *ch_scope, *ch_rm, *ch_error;
	char *earlier; /* a step-up: what was asked and granted before */
	char *extra;   /* --scope */
	char *session; /* the probe's Mcp-Session-Id */
	int want_port;
	uint64_t timeout_ms;
	struct afetch *probe;
	struct discover *disc;
	struct reg *reg;
	struct treq *treq;
	struct lockwait *lw;
	struct loopback *lb;
	uv_timer_t *deadline;
	struct discover_result d;
	struct store_client client;
	int port;
	char redirect_uri[64];
	char state[PKCE_STATE_LEN + 1];
	char verifier[PKCE_VERIFIER_LEN + 1];
	char *scope; /* asked for */
	char *auth_url;
	struct meta_token tok;
	struct auth_flow_cbs cbs;
	void *arg;
	char why[320];
};

static void flow_deadline_closed(uv_handle_t *h)
{
	free(h);
}

static void flow_free(struct auth_flow *f)
{
	afetch_cancel(f->probe);
	discover_cancel(f->disc);
	reg_cancel(f->reg);
	treq_cancel(f->treq);
	lockwait_cancel(f->lw);
	loopback_free(f->lb);
	if (f->deadline)
		uv_close((uv_handle_t *)f->deadline, flow_deadline_closed);
	discover_result_clear(&f->d);
	store_client_clear(&f->client);
	meta_token_clear(&f->tok);
	explicit_bzero(f->verifier, sizeof f->verifier);
	free(f->name);
	free(f->url);
	free(f->client_id);
	meta_wipe(f->client_secret);
	free(f->client_metadata_url);
	free(f->cfg_scope);
	free(f->ch_scope);
	free(f->ch_rm);
	free(f->ch_error);
	free(f->earlier);
	free(f->extra);
	free(f->session);
	free(f->scope);
	free(f->auth_url);
	free(f);
}

/* The end: one on_done, then the flow is gone. */
static void flow_end(struct auth_flow *f, int err, const char *why)
{
	f->st = FLOW_DONE;
	flow_unlink(f->a, f);
	auth_done_cb cb = f->cbs.on_done;
	void *arg = f->arg;
	char msg[sizeof f->why];
	snprintf(msg, sizeof msg, "%s", why ? why : "");
	if (err == 0)
		log_info("signed in to server \"%s\"", f->name);
	else
		log_warn("sign-in to server \"%s\" failed: %s", f->name, msg);
	flow_free(f);
	cb(arg, err, err == 0 ? NULL : msg);
}

static void flow_fail(struct auth_flow *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void flow_fail(struct auth_flow *f, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof f->why, fmt, ap);
	va_end(ap);
	flow_end(f, err, f->why);
}

/* ---- the challenge ---- */

/* Takes the Bearer challenge of a WWW-Authenticate value. */
static void flow_take_challenge(struct auth_flow *f, int status,
				const char *www)
{
	struct www_auth w;
	f->ch_status = status;
	if (www == NULL || www_auth_parse(www, strlen(www), &w) < 0)
		return;
	const struct www_auth_challenge *c = www_auth_find(&w, "Bearer");
	if (c) {
		const char *s = www_auth_param(c, "scope");
		const char *rm = www_auth_param(c, "resource_metadata");
		const char *e = www_auth_param(c, "error");
		f->ch_scope = s && !scope_bad(s) ? xstrdup(s) : NULL;
		f->ch_rm = rm ? xstrdup(rm) : NULL;
		f->ch_error = e ? xstrdup(e) : NULL;
	}
	www_auth_clear(&w);
}

static void flow_discover(struct auth_flow *f);

/* ---- the probe: what does the server ask of a client without a token ----
 */

static void flow_probe_cb(void *arg, const struct afetch_result *r);

static int flow_probe_send(struct auth_flow *f)
{
	static const char *const bodies[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"" FLOW_PROTOCOL "\","
		"\"capabilities\":{},\"clientInfo\":{\"name\":\"mcpvisor\","
		"\"version\":\"0.1.0\"}}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		"initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
	};
	char *sid =
		f->session ? xasprintf("Mcp-Session-Id: %s", f->session) : NULL;
	const char *hdrs[5] = {"Content-Type: application/json",
			       "Accept: application/json, text/event-stream",
			       f->probe_step == PROBE_INIT
				       ? NULL
				       : "MCP-Protocol-Version: " FLOW_PROTOCOL,
			       NULL, NULL};
	if (hdrs[2])
		hdrs[3] = sid;
	const char *body = bodies[f->probe_step];
	struct afetch_opts o = {.method = "POST",
				.url = f->url,
				.headers = hdrs,
				.body = body,
				.body_len = strlen(body),
				.max_body = FLOW_PROBE_MAX_BODY,
				.timeout_ms = FLOW_PROBE_MS};
	int rc = afetch_start(f->h, &o, flow_probe_cb, f, &f->probe);
	free(sid);
	return rc;
}

static void flow_probe_cb(void *arg, const struct afetch_result *r)
{
	struct auth_flow *f = arg;
	f->probe = NULL;
	if (r->status == 401 || r->status == 403) {
		flow_take_challenge(f, r->status, r->www_authenticate);
		flow_discover(f);
		return;
	}
	if (r->err < 0 && r->err != -EMSGSIZE) {
		flow_fail(f, r->err, "the server could not be reached: %s",
			  r->why);
		return;
	}
	/* An initialize refused for another reason than a token (a
	 * 2026-07-28 server answers one that lacks MCP-Protocol-Version
	 * with a 400) says nothing of what the server asks for: tools/list
	 * may still meet the challenge, with its scope. */
	if (f->probe_step == PROBE_INIT && r->status >= 400 &&
	    r->status < 500) {
		f->probe_step = PROBE_LIST;
		if (flow_probe_send(f) == 0)
			return;
	}
	/* Answered without a token: some servers let initialize through
	 * and guard the rest; the next step may meet the challenge. */
	if (r->status >= 200 && r->status < 300 && f->probe_step < PROBE_LIST) {
		if (f->probe_step == PROBE_INIT && r->mcp_session_id &&
		    strlen(r->mcp_session_id) < 256 &&
		    strpbrk(r->mcp_session_id, "\r\n") == NULL)
			f->session = xstrdup(r->mcp_session_id);
		f->probe_step++;
		if (flow_probe_send(f) == 0)
			return;
	}
	/* No challenge: discovery from the well-known URLs alone. */
	flow_discover(f);
}

/* ---- discovery, listener, registration ---- */

static void flow_register_cb(void *arg, int err, const char *why,
			     struct store_client *c);

static int flow_listen_cb(void *arg, const char *query, const char **msg);

static void flow_discover_cb(void *arg, int err, const char *why,
			     struct discover_result *r)
{
	struct auth_flow *f = arg;
	f->disc = NULL;
	if (err < 0) {
		flow_fail(f, err == -ENOENT ? -EPROTO : err, "%s", why);
		return;
	}
	f->d = *r;
	memset(r, 0, sizeof *r);
	/* The listener: the port asked for, else the one a kept
	 * registration at this issuer names (its redirect URI stays the
	 * registered one), else any. */
	int port = f->want_port;
	struct store_client kept;
	if (port == 0 &&
	    store_client_read(f->a->state_dir, f->d.as.issuer, &kept) == 0) {
		int p = 0;
		if (kept.redirect_uri &&
		    sscanf(kept.redirect_uri, "http://127.0.0.1:%d/callback",
			   &p) == 1 &&
		    p > 0 && p < 65536)
			port = p;
		store_client_clear(&kept);
	}
	int rc = loopback_start(f->a->loop, port, flow_listen_cb, f, &f->lb,
				&f->port);
	if (rc < 0 && port != 0 && f->want_port == 0)
		rc = loopback_start(f->a->loop, 0, flow_listen_cb, f, &f->lb,
				    &f->port);
	if (rc < 0) {
		flow_fail(f, rc,
			  "cannot listen for the redirect on 127.0.0.1:%d: %s",
			  port, uv_strerror(rc));
		return;
	}
	snprintf(f->redirect_uri, sizeof f->redirect_uri,
		 "http://127.0.0.1:%d/callback", f->port);
	struct config_oauth o = {.client_id = f->client_id,
				 .client_secret = f->client_secret,
				 .client_metadata_url = f->client_metadata_url};
	f->st = FLOW_REGISTER;
	rc = reg_start(f->h, f->a->state_dir, &f->d.as, &o, f->redirect_uri,
		       flow_register_cb, f, &f->reg);
	if (rc == -ENOENT) {
		flow_fail(f, -EACCES,
			  "the authorization server %.100s offers no client "
			  "registration: give server \"%s\" a pre-registered "
			  "client in its config (\"oauth\": {\"clientId\": "
			  "\"...\"})",
			  f->d.as.issuer, f->name);
		return;
	}
	if (rc < 0)
		flow_fail(f, rc, "the client registration could not start");
}

static void flow_discover(struct auth_flow *f)
{
	f->st = FLOW_DISCOVER;
	int rc = discover_start(f->h, f->url, f->ch_rm, flow_discover_cb, f,
				&f->disc);
	if (rc < 0)
		flow_fail(f, rc, "the server's URL cannot be used for sign-in");
}

/* The authorization request's URL (RFC 6749 4.1.1, RFC 7636, RFC 8707):
 * the endpoint's own query kept. */
static char *flow_auth_url(struct auth_flow *f, const char *challenge)
{
	struct buf b;
	buf_init(&b);
	const char *ep = f->d.as.authorization_endpoint;
	size_t n = strcspn(ep, "#");
	buf_append(&b, ep, n);
	if (memchr(ep, '?', n) == NULL)
		buf_puts(&b, "?");
	form_add(&b, "response_type", "code");
	form_add(&b, "client_id", f->client.client_id);
	form_add(&b, "redirect_uri", f->redirect_uri);
	form_add(&b, "code_challenge", challenge);
	form_add(&b, "code_challenge_method", "S256");
	form_add(&b, "state", f->state);
	form_add(&b, "resource", f->d.prm.resource);
	form_add(&b, "scope", f->scope);
	/* OpenID Connect 11: a refresh token for offline_access is given
	 * only after consent. */
	if (f->scope && scope_covers(f->scope, "offline_access"))
		form_add(&b, "prompt", "consent");
	return buf_steal(&b);
}

static void flow_deadline_cb(uv_timer_t *t)
{
	struct auth_flow *f = t->data;
	flow_fail(f, -ETIMEDOUT,
		  "no redirect came back within %llu s; run the sign-in again",
		  (unsigned long long)(f->timeout_ms / 1000));
}

static void flow_register_cb(void *arg, int err, const char *why,
			     struct store_client *c)
{
	struct auth_flow *f = arg;
	f->reg = NULL;
	if (err < 0) {
		flow_fail(f, err, "%s", why);
		return;
	}
	f->client = *c;
	memset(c, 0, sizeof *c);
	/* The method the server supports, now that the registration says
	 * what it got. */
	const char *m = reg_auth_method(
		&f->d.as.token_endpoint_auth_methods_supported,
		f->client.auth_method, f->client.client_secret != NULL);
	char *method = xstrdup(m); /* m may be the registered one */
	free(f->client.auth_method);
	f->client.auth_method = method;
	char *cfg_extra = scope_union(f->cfg_scope, f->extra);
	f->scope =
		scope_select(f->ch_scope, &f->d.prm.scopes_supported,
			     &f->d.as.scopes_supported, f->earlier, cfg_extra);
	free(cfg_extra);
	pkce_verifier(f->verifier);
	pkce_state(f->state);
	char *challenge = pkce_challenge(f->verifier);
	f->auth_url = flow_auth_url(f, challenge);
	free(challenge);
	if (!urls_secure(f->auth_url)) {
		flow_fail(
			f, -EACCES,
			"the authorization endpoint is neither https nor on a "
			"loopback host");
		return;
	}
	f->st = FLOW_WAIT;
	f->deadline = xmalloc(sizeof *f->deadline);
	uv_timer_init(f->a->loop, f->deadline);
	f->deadline->data = f;
	uv_timer_start(f->deadline, flow_deadline_cb, f->timeout_ms, 0);
	log_info("sign-in to server \"%s\": waiting for the redirect on %s",
		 f->name, f->redirect_uri);
	f->cbs.on_url(f->arg, f->auth_url, f->redirect_uri);
}

/* ---- the redirect ---- */

static void flow_token_cb(void *arg, int err, const char *why,
			  struct meta_token *t, const char *oauth_error);

/* What the redirect says: 1 the flow goes on (the code exchange), 0 it
 * was not ours (a wrong or missing state: wait on), <0 the flow ended
 * (f is gone). */
static int flow_redirect(struct auth_flow *f, const char *query,
			 const char **msg)
{
	struct form_query q;
	if (f->st != FLOW_WAIT) {
		*msg = "This sign-in is over.";
		return 0;
	}
	if (form_parse(query, strlen(query), &q) < 0) {
		*msg = "The redirect could not be read.";
		return 0;
	}
	const char *state = form_get(&q, "state");
	if (state == NULL || !pkce_equal(state, f->state)) {
		/* Anyone on this machine can reach the port: a stray or
		 * forged request must not end the real sign-in. */
		form_query_clear(&q);
		*msg = "This redirect does not belong to the sign-in under "
		       "way.";
		return 0;
	}
	/* RFC 9207 and MCP 2026-07-28: iss compared as a plain string
	 * before anything else of the answer is used, its error included
	 * (an answer from another server must not steer this one). */
	const char *iss = form_get(&q, "iss");
	const char *issuer = f->d.as.issuer;
	if (iss == NULL && f->d.as.iss_parameter_supported) {
		form_query_clear(&q);
		*msg = "Sign-in refused: see the terminal.";
		flow_fail(f, -EACCES,
			  "the redirect lacks the iss parameter the "
			  "authorization server promised (RFC 9207); the "
			  "answer was not used");
		return -1;
	}
	if (iss && strcmp(iss, issuer) != 0) {
		form_query_clear(&q);
		*msg = "Sign-in refused: see the terminal.";
		flow_fail(f, -EACCES,
			  "the redirect names another issuer than %.100s (RFC "
			  "9207): a mix-up; the answer was not used",
			  issuer);
		return -1;
	}
	const char *error = form_get(&q, "error");
	if (error) {
		char e[64];
		snprintf(e, sizeof e, "%s", error);
		form_query_clear(&q);
		*msg = "Sign-in refused: see the terminal.";
		flow_fail(f, -EACCES,
			  "the authorization server refused the sign-in: %s",
			  scope_bad(e) ? "(an error it wrote)" : e);
		return -1;
	}
	const char *code = form_get(&q, "code");
	if (code == NULL || code[0] == '\0') {
		form_query_clear(&q);
		*msg = "Sign-in failed: see the terminal.";
		flow_fail(f, -EPROTO, "the redirect carries no code");
		return -1;
	}
	struct treq_opts o = {.token_endpoint = f->d.as.token_endpoint,
			      .client = &f->client,
			      .code = code,
			      .code_verifier = f->verifier,
			      .redirect_uri = f->redirect_uri,
			      .resource = f->d.prm.resource};
	f->st = FLOW_TOKEN;
	int rc = treq_start(f->h, &o, flow_token_cb, f, &f->treq);
	form_query_clear(&q);
	if (rc < 0) {
		*msg = "Sign-in failed: see the terminal.";
		flow_fail(f, rc, "the token request could not start");
		return -1;
	}
	*msg = "Signed in to the server. You can close this window.";
	return 1;
}

static int flow_listen_cb(void *arg, const char *query, const char **msg)
{
	struct auth_flow *f = arg;
	int rc = flow_redirect(f, query, msg);
	if (rc == 1) {
		/* One redirect only: nothing more is listened for. */
		loopback_free(f->lb);
		f->lb = NULL;
	}
	return rc == 0 ? -1 : 0;
}

int auth_flow_redirect(struct auth_flow *f, const char *redirect_url,
		       const char **why)
{
	const char *msg = NULL;
	*why = "the pasted text is not the redirect of this sign-in";
	if (f->st != FLOW_WAIT) {
		*why = "this sign-in is not waiting for a redirect";
		return -EINVAL;
	}
	/* A whole URL to the listener, or just its query. */
	const char *q = strchr(redirect_url, '?');
	q = q ? q + 1 : redirect_url;
	size_t n = strcspn(q, "#\r\n");
	char *query = xstrndup(q, n);
	int rc = flow_redirect(f, query, &msg);
	free(query);
	if (rc == 0)
		return -EINVAL;
	if (rc == 1) {
		loopback_free(f->lb);
		f->lb = NULL;
	}
	return 0;
}

/* ---- the tokens ---- */

static void flow_store_cb(void *arg, int fd, int err);

static void flow_token_cb(void *arg, int err, const char *why,
			  struct meta_token *t, const char *oauth_error)
{
	struct auth_flow *f = arg;
	f->treq = NULL;
	if (err < 0) {
		/* A registration the server no longer knows is dropped:
		 * the next sign-in registers again. */
		if (oauth_error && strcmp(oauth_error, "invalid_client") == 0 &&
		    strcmp(f->client.source, "dcr") == 0)
			store_client_remove(f->a->state_dir, &f->client);
		flow_fail(f, err, "%s", why);
		return;
	}
	f->tok = *t;
	memset(t, 0, sizeof *t);
	f->st = FLOW_STORE;
	f->lw = lockwait_start(f->a->loop, f->a->state_dir, f->key,
			       AUTH_LOCK_WAIT_MS, flow_store_cb, f);
}

static void flow_store_cb(void *arg, int fd, int err)
{
	struct auth_flow *f = arg;
	f->lw = NULL;
	if (fd < 0) {
		flow_fail(f, err,
			  "the tokens could not be stored: the server's lock "
			  "is held too long by another mcpvisor");
		return;
	}
	struct store_tokens old, s = {0};
	uint64_t gen = 0;
	if (store_read(f->a->state_dir, f->key, &old) == 0) {
		gen = old.t.generation;
		store_tokens_clear(&old);
	}
	struct auth_tokens *t = &s.t;
	t->access_token = f->tok.access_token;
	t->refresh_token = f->tok.refresh_token;
	t->token_type = f->tok.token_type;
	/* What the server granted, else (RFC 6749 5.1: the same as asked)
	 * what was asked. */
	t->scope = f->tok.scope ? f->tok.scope : f->scope;
	t->expires_at =
		f->tok.expires_in >= 0 ? store_now() + f->tok.expires_in : 0;
	t->issuer = f->d.as.issuer;
	t->resource = f->d.prm.resource;
	t->token_endpoint = f->d.as.token_endpoint;
	t->client_id = f->client.client_id;
	t->generation = gen + 1;
	s.requested_scope = f->scope;
	int rc = store_write(f->a->state_dir, f->name, f->url, &s);
	if (rc == 0) {
		/* Answered: the next challenge starts afresh, but its
		 * count of repeated step-ups goes on. */
		struct store_challenge c;
		if (store_challenge_read(f->a->state_dir, f->key, &c) == 0) {
			c.status = 0;
			store_challenge_write(f->a->state_dir, f->key, &c);
			store_challenge_clear(&c);
		}
	}
	store_unlock(fd);
	if (rc < 0) {
		flow_fail(f, rc, "the tokens could not be stored: %s",
			  strerror(-rc));
		return;
	}
	struct auth_entry *e = auth_entry_get(f->a, f->name, f->url);
	auth_entry_load(f->a, e);
	flow_end(f, 0, NULL);
}

/* ---- start and cancel ---- */

void flow_unlink(struct auth *a, struct auth_flow *f)
{
	for (struct auth_flow **pp = &a->flows; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			return;
		}
}

/* The challenge kept for the server (auth_challenge), when it is still
 * to be answered; a 403 for scope makes this flow a step-up. */
static void flow_recorded(struct auth_flow *f)
{
	struct store_challenge c;
	if (store_challenge_read(f->a->state_dir, f->key, &c) < 0)
		return;
	if (c.status == 401 || c.status == 403) {
		f->ch_status = c.status;
		f->ch_scope = c.scope;
		f->ch_rm = c.resource_metadata;
		f->ch_error = c.error;
		c.scope = c.resource_metadata = c.error = NULL;
	}
	store_challenge_clear(&c);
}

int auth_flow_start(struct auth *a, const struct auth_flow_opts *o,
		    const struct auth_flow_cbs *cbs, void *arg,
		    struct auth_flow **out)
{
	const char *why = NULL;
	if (o->name == NULL || o->url == NULL || cbs->on_url == NULL ||
	    cbs->on_done == NULL)
		return -EINVAL;
	if (!urls_secure(o->url))
		return -EPROTONOSUPPORT;
	struct httpc *h = auth_http(a, &why);
	if (h == NULL)
		return -ENOSYS;
	struct auth_flow *f = xcalloc(1, sizeof *f);
	f->a = a;
	f->h = h;
	f->name = xstrdup(o->name);
	f->url = xstrdup(o->url);
	store_key(o->name, o->url, f->key);
	f->cbs = *cbs;
	f->arg = arg;
	f->want_port = o->port;
	f->timeout_ms = o->timeout_ms ? o->timeout_ms : AUTH_FLOW_TIMEOUT_MS;
	f->extra = o->scope && !scope_bad(o->scope) ? xstrdup(o->scope) : NULL;
	if (o->oauth) {
		const struct config_oauth *c = o->oauth;
		f->client_id = c->client_id ? xstrdup(c->client_id) : NULL;
		f->client_secret =
			c->client_secret ? xstrdup(c->client_secret) : NULL;
		f->client_metadata_url =
			c->client_metadata_url ? xstrdup(c->client_metadata_url)
					       : NULL;
		for (size_t i = 0; i < c->nscopes; i++) {
			char *u = scope_union(f->cfg_scope, c->scopes[i]);
			free(f->cfg_scope);
			f->cfg_scope = u;
		}
	}
	if (o->status == 401 || o->status == 403)
		flow_take_challenge(f, o->status, o->www_authenticate);
	else
		flow_recorded(f);
	/* A 403 for scope: a step-up keeps what was asked and granted. */
	if (f->ch_status == 403) {
		struct store_tokens s;
		if (store_read(a->state_dir, f->key, &s) == 0) {
			char *u = scope_union(s.requested_scope, s.t.scope);
			f->earlier = u ? u : xstrdup("");
			store_tokens_clear(&s);
		}
	}
	int rc;
	if (f->ch_status) {
		f->st = FLOW_DISCOVER;
		rc = discover_start(h, f->url, f->ch_rm, flow_discover_cb, f,
				    &f->disc);
	} else {
		f->st = FLOW_PROBE;
		f->probe_step = PROBE_INIT;
		rc = flow_probe_send(f);
	}
	if (rc < 0) {
		flow_free(f);
		return rc;
	}
	f->next = a->flows;
	a->flows = f;
	if (out)
		*out = f;
	return 0;
}

void auth_flow_cancel(struct auth_flow *f)
{
	if (f == NULL)
		return;
	flow_unlink(f->a, f);
	flow_free(f);
}
