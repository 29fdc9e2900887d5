/*
 * An OAuth authorization server and a protected MCP endpoint on the test's
 * own loop, over real HTTP on 127.0.0.1 (for test_auth_flow.c and
 * test_auth_refresh.c): the discovery documents, Dynamic Client
 * Registration, /authorize that approves at once with a 302 to the
 * redirect URI, /token for codes (PKCE checked) and refresh tokens
 * (rotated, with reuse detection), and /mcp that answers 401 with a
 * challenge. A "browser" follows an authorization URL's redirect to the
 * flow's listener. Each knob and counter is a field of struct fx; every
 * request is logged ("GET /path\n") in fx.log, so a test can hold the
 * order of discovery to the specification's.
 */
#ifndef TEST_AUTH_FIXTURE_H
#define TEST_AUTH_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "auth/form.h"
#include "auth/pkce.h"
#include "http/httpc.h"
#include "http/httpparse.h"
#include "http/query.h"
#include "util/buf.h"
#include "util/xmalloc.h"

enum fx_iss { FX_ISS_CORRECT, FX_ISS_WRONG, FX_ISS_OMIT, FX_ISS_SLASH };

struct fx {
	/* knobs */
	bool iss_supported;
	enum fx_iss iss;
	bool no_pkce;		  /* omit code_challenge_methods_supported */
	const char *pkce_methods; /* JSON array text; NULL: ["S256"] */
	bool cimd;		  /* client_id_metadata_document_supported */
	const char *issuer_path;  /* "" or "/tenant1": the issuer's path */
	/* Where the authorization server metadata is served; NULL: RFC 8414
	 * path-inserted for issuer_path. */
	const char *as_doc_path;
	/* The issuer the document names; NULL: the real one. */
	const char *as_doc_issuer;
	const char *as_scopes; /* JSON array text or NULL */
	/* Where the protected resource metadata is served; NULL: the
	 * path-inserted URL of /mcp. */
	const char *prm_path;
	bool challenge_no_rm; /* /mcp's challenge has no resource_metadata */
	/* Answers a POST /mcp initialize with this status and no challenge
	 * (a 2026-07-28 server refuses a 2025 one with 400); 0: the 401. */
	int init_status;
	const char *register_method; /* what DCR answers it registered */
	bool no_register;	     /* no registration_endpoint */
	bool rotate;		     /* a new refresh token on each refresh */
	bool no_refresh;	     /* issue no refresh token */
	int expires_in;		     /* 0: 3600 */
	int token_delay_ms;	     /* answer /token this late */
	const char *prm_resource;    /* NULL: base + "/mcp" */
	const char *prm_scopes;	     /* JSON array text or NULL */
	const char *challenge_scope;
	const char *auth_methods; /* JSON array text or NULL */
	bool register_secret;	  /* DCR gives a client secret */
	/* state */
	int port;
	char base[64];
	int prm_gets, as_gets, registers, authorizes, token_codes,
		token_refreshes, refresh_refused, mcp_posts;
	int next_token;
	char refresh_token[64];	   /* the one valid now */
	char access_token[64];	   /* the last issued */
	char challenge[128];	   /* the last code_challenge */
	struct buf last_authorize; /* its query */
	struct buf last_token;	   /* the last /token body */
	struct buf last_register;  /* the last /register body */
	struct buf log;		   /* "METHOD /path\n" per request */
	char last_token_auth[256]; /* its Authorization header */
	uv_tcp_t tcp;
	uv_loop_t *loop;
	int conns; /* open connections */
};

struct fx_conn {
	uv_tcp_t tcp;
	uv_timer_t delay;
	struct fx *fx;
	struct httpparse *p;
	char *reply;
	uv_write_t wr;
	int handles;
};

static void fx_conn_closed(uv_handle_t *h)
{
	struct fx_conn *c = h->data;
	if (--c->handles > 0)
		return;
	c->fx->conns--;
	httpparse_free(c->p);
	free(c->reply);
	free(c);
}

static void fx_conn_close(struct fx_conn *c)
{
	if (uv_is_closing((uv_handle_t *)&c->tcp))
		return;
	uv_close((uv_handle_t *)&c->tcp, fx_conn_closed);
	uv_close((uv_handle_t *)&c->delay, fx_conn_closed);
}

static void fx_written(uv_write_t *w, int status)
{
	fx_conn_close(w->data);
}

static void fx_send_now(struct fx_conn *c)
{
	uv_buf_t b = uv_buf_init(c->reply, (unsigned)strlen(c->reply));
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, fx_written) < 0)
		fx_conn_close(c);
}

static void fx_delay_cb(uv_timer_t *t)
{
	fx_send_now(t->data);
}

static void fx_reply(struct fx_conn *c, int status, const char *extra,
		     const char *body, int delay_ms)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%s"
		   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		   status, extra ? extra : "", strlen(body), body);
	c->reply = buf_steal(&b);
	if (delay_ms > 0)
		uv_timer_start(&c->delay, fx_delay_cb, (uint64_t)delay_ms, 0);
	else
		fx_send_now(c);
}

static char *fx_param(const char *query, const char *name)
{
	struct form_query q;
	if (form_parse(query, strlen(query), &q) < 0)
		return NULL;
	const char *v = form_get(&q, name);
	char *out = v ? xstrdup(v) : NULL;
	form_query_clear(&q);
	return out;
}

static void fx_issue(struct fx *fx, struct fx_conn *c, const char *scope)
{
	snprintf(fx->access_token, sizeof fx->access_token, "at-%d",
		 ++fx->next_token);
	if (!fx->no_refresh && (fx->rotate || fx->refresh_token[0] == '\0'))
		snprintf(fx->refresh_token, sizeof fx->refresh_token, "rt-%d",
			 fx->next_token);
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "{\"access_token\":\"%s\",\"token_type\":\"Bearer\","
		   "\"expires_in\":%d",
		   fx->access_token, fx->expires_in ? fx->expires_in : 3600);
	if (!fx->no_refresh)
		buf_printf(&b, ",\"refresh_token\":\"%s\"", fx->refresh_token);
	if (scope)
		buf_printf(&b, ",\"scope\":\"%s\"", scope);
	buf_puts(&b, "}");
	fx_reply(c, 200, NULL, b.data, fx->token_delay_ms);
	buf_free(&b);
}

static void fx_token(struct fx *fx, struct fx_conn *c,
		     const struct http_request *r)
{
	buf_reset(&fx->last_token);
	buf_append(&fx->last_token, r->body, r->body_len);
	const char *auth = http_request_header(r, "authorization");
	snprintf(fx->last_token_auth, sizeof fx->last_token_auth, "%s",
		 auth ? auth : "");
	char *grant = fx_param(r->body, "grant_type");
	if (grant && strcmp(grant, "authorization_code") == 0) {
		fx->token_codes++;
		char *v = fx_param(r->body, "code_verifier");
		char *ch = v ? pkce_challenge(v) : NULL;
		if (ch && strcmp(ch, fx->challenge) == 0)
			fx_issue(fx, c, NULL);
		else
			fx_reply(c, 400, NULL, "{\"error\":\"invalid_grant\"}",
				 0);
		free(v);
		free(ch);
	} else if (grant && strcmp(grant, "refresh_token") == 0) {
		fx->token_refreshes++;
		char *rt = fx_param(r->body, "refresh_token");
		if (rt && fx->refresh_token[0] &&
		    strcmp(rt, fx->refresh_token) == 0) {
			fx_issue(fx, c, NULL);
		} else {
			/* Reuse of a rotated token: the family is revoked,
			 * as servers that rotate do. */
			fx->refresh_refused++;
			fx->refresh_token[0] = '\0';
			fx_reply(c, 400, NULL, "{\"error\":\"invalid_grant\"}",
				 fx->token_delay_ms);
		}
		free(rt);
	} else {
		fx_reply(c, 400, NULL, "{\"error\":\"unsupported_grant_type\"}",
			 0);
	}
	free(grant);
}

static void fx_request(struct fx_conn *c, const struct http_request *r)
{
	struct fx *fx = c->fx;
	char *path = http_url_path(r->url);
	const char *q = strchr(r->url, '?');
	q = q ? q + 1 : "";
	buf_printf(&fx->log, "%s %s\n",
		   r->method == HTTP_M_POST  ? "POST"
		   : r->method == HTTP_M_GET ? "GET"
					     : "OTHER",
		   path);
	const char *ipath = fx->issuer_path ? fx->issuer_path : "";
	char as_path[256];
	snprintf(as_path, sizeof as_path, "%s",
		 fx->as_doc_path ? fx->as_doc_path : "");
	if (!fx->as_doc_path)
		snprintf(as_path, sizeof as_path,
			 "/.well-known/oauth-authorization-server%s", ipath);
	struct buf b;
	buf_init(&b);
	if (strcmp(path, fx->prm_path ? fx->prm_path
				      : "/.well-known/oauth-protected-resource/"
					"mcp") == 0) {
		fx->prm_gets++;
		buf_printf(&b,
			   "{\"resource\":\"%s%s\",\"authorization_servers\":"
			   "[\"%s%s\"]",
			   fx->prm_resource ? fx->prm_resource : fx->base,
			   fx->prm_resource ? "" : "/mcp", fx->base, ipath);
		if (fx->prm_scopes)
			buf_printf(&b, ",\"scopes_supported\":%s",
				   fx->prm_scopes);
		buf_puts(&b, "}");
		fx_reply(c, 200, NULL, b.data, 0);
	} else if (strcmp(path, as_path) == 0) {
		fx->as_gets++;
		char iss[160];
		snprintf(iss, sizeof iss, "%s%s", fx->base, ipath);
		buf_printf(&b,
			   "{\"issuer\":\"%s\",\"authorization_endpoint\":"
			   "\"%s/authorize\",\"token_endpoint\":\"%s/token\","
			   "\"response_types_supported\":[\"code\"]",
			   fx->as_doc_issuer ? fx->as_doc_issuer : iss,
			   fx->base, fx->base);
		if (!fx->no_register)
			buf_printf(&b,
				   ",\"registration_endpoint\":\"%s/register\"",
				   fx->base);
		if (!fx->no_pkce)
			buf_printf(&b,
				   ",\"code_challenge_methods_supported\":%s",
				   fx->pkce_methods ? fx->pkce_methods
						    : "[\"S256\"]");
		if (fx->iss_supported)
			buf_puts(&b, ",\"authorization_response_iss_parameter_"
				     "supported\":true");
		if (fx->cimd)
			buf_puts(&b, ",\"client_id_metadata_document_"
				     "supported\":true");
		if (fx->as_scopes)
			buf_printf(&b, ",\"scopes_supported\":%s",
				   fx->as_scopes);
		if (fx->auth_methods)
			buf_printf(&b,
				   ",\"token_endpoint_auth_methods_supported\":"
				   "%s",
				   fx->auth_methods);
		buf_puts(&b, "}");
		fx_reply(c, 200, NULL, b.data, 0);
	} else if (strcmp(path, "/register") == 0 && r->method == HTTP_M_POST &&
		   !fx->no_register) {
		fx->registers++;
		buf_reset(&fx->last_register);
		buf_append(&fx->last_register, r->body, r->body_len);
		buf_printf(&b, "{\"client_id\":\"c%d\"", fx->registers);
		if (fx->register_secret)
			buf_puts(&b, ",\"client_secret\":\"s3cret\"");
		buf_printf(&b, ",\"token_endpoint_auth_method\":\"%s\"}",
			   fx->register_method	 ? fx->register_method
			   : fx->register_secret ? "client_secret_basic"
						 : "none");
		fx_reply(c, 201, NULL, b.data, 0);
	} else if (strcmp(path, "/authorize") == 0) {
		fx->authorizes++;
		buf_reset(&fx->last_authorize);
		buf_puts(&fx->last_authorize, q);
		char *redirect = fx_param(q, "redirect_uri");
		char *state = fx_param(q, "state");
		char *ch = fx_param(q, "code_challenge");
		snprintf(fx->challenge, sizeof fx->challenge, "%s",
			 ch ? ch : "");
		struct buf loc;
		buf_init(&loc);
		buf_printf(&loc, "Location: %s?code=good-code",
			   redirect ? redirect : "http://127.0.0.1:9/");
		form_add(&loc, "state", state);
		char iss[192];
		snprintf(iss, sizeof iss, "%s%s%s",
			 fx->iss == FX_ISS_WRONG ? "https://evil.example.com"
						 : fx->base,
			 ipath, fx->iss == FX_ISS_SLASH ? "/" : "");
		if (fx->iss != FX_ISS_OMIT)
			form_add(&loc, "iss", iss);
		buf_puts(&loc, "\r\n");
		fx_reply(c, 302, loc.data, "{}", 0);
		buf_free(&loc);
		free(redirect);
		free(state);
		free(ch);
	} else if (strcmp(path, "/token") == 0 && r->method == HTTP_M_POST) {
		fx_token(fx, c, r);
	} else if (strcmp(path, "/mcp") == 0 && fx->init_status &&
		   r->body_len > 0 &&
		   strstr(r->body, "\"method\":\"initialize\"")) {
		fx->mcp_posts++;
		fx_reply(c, fx->init_status, NULL, "{}", 0);
	} else if (strcmp(path, "/mcp") == 0) {
		fx->mcp_posts++;
		struct buf h;
		buf_init(&h);
		buf_printf(&h,
			   "WWW-Authenticate: Bearer error=\"invalid_token\"");
		if (!fx->challenge_no_rm)
			buf_printf(&h, ", resource_metadata=\"%s%s\"", fx->base,
				   fx->prm_path
					   ? fx->prm_path
					   : "/.well-known/"
					     "oauth-protected-resource/mcp");
		if (fx->challenge_scope)
			buf_printf(&h, ", scope=\"%s\"", fx->challenge_scope);
		buf_puts(&h, "\r\n");
		fx_reply(c, 401, h.data, "{}", 0);
		buf_free(&h);
	} else {
		fx_reply(c, 404, NULL, "{}", 0);
	}
	buf_free(&b);
	free(path);
}

static void fx_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char slab[65536];
	*b = uv_buf_init(slab, sizeof slab);
}

static void fx_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct fx_conn *c = s->data;
	if (n < 0) {
		fx_conn_close(c);
		return;
	}
	/* HEADERS_DONE comes once, with the body still to feed. */
	size_t off = 0;
	while (off < (size_t)n) {
		size_t used = 0;
		enum httpparse_state st = httpparse_feed(
			c->p, b->base + off, (size_t)n - off, &used);
		off += used;
		if (st == HTTPPARSE_DONE) {
			uv_read_stop(s);
			fx_request(c, httpparse_request(c->p));
			return;
		}
		if (st == HTTPPARSE_ERROR) {
			fx_conn_close(c);
			return;
		}
		if (st == HTTPPARSE_NEED_MORE || used == 0)
			return;
	}
}

static void fx_accept(uv_stream_t *server, int status)
{
	struct fx *fx = server->data;
	struct fx_conn *c = xcalloc(1, sizeof *c);
	c->fx = fx;
	fx->conns++;
	c->p = httpparse_new(65536);
	uv_tcp_init(server->loop, &c->tcp);
	uv_timer_init(server->loop, &c->delay);
	c->tcp.data = c->delay.data = c;
	c->handles = 2;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		fx_conn_close(c);
		return;
	}
	uv_read_start((uv_stream_t *)&c->tcp, fx_alloc, fx_read);
}

/* Listens on an ephemeral port of 127.0.0.1 ("localhost" in its URLs). */
static void fx_start(struct fx *fx, uv_loop_t *loop)
{
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	fx->loop = loop;
	buf_init(&fx->last_authorize);
	buf_init(&fx->last_token);
	buf_init(&fx->last_register);
	buf_init(&fx->log);
	uv_tcp_init(loop, &fx->tcp);
	fx->tcp.data = fx;
	uv_tcp_bind(&fx->tcp, (const struct sockaddr *)&a, 0);
	uv_listen((uv_stream_t *)&fx->tcp, 64, fx_accept);
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(&fx->tcp, (struct sockaddr *)&ss, &len);
	fx->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(fx->base, sizeof fx->base, "http://localhost:%d", fx->port);
}

/* Stops listening and waits for each connection to end (a delayed
 * answer is still written, into a closed socket if need be). */
static void fx_stop(struct fx *fx)
{
	uv_close((uv_handle_t *)&fx->tcp, NULL);
	while (fx->conns > 0)
		uv_run(fx->loop, UV_RUN_ONCE);
	buf_free(&fx->last_authorize);
	buf_free(&fx->last_token);
	buf_free(&fx->last_register);
	buf_free(&fx->log);
}

/* ---- the browser: GET the authorization URL, then its Location ---- */

struct fx_browser {
	struct httpc *h;
	char *location;
	int status; /* of the listener's page */
	bool done;
};

static bool fx_browser_head(void *ctx, struct httpc_req *r)
{
	struct fx_browser *b = ctx;
	const char *loc = httpc_header(r, "Location");
	if (loc && b->location == NULL)
		b->location = xstrdup(loc);
	b->status = httpc_status(r);
	return true;
}

static void fx_browser_done(void *ctx, struct httpc_req *r, int err,
			    const char *why);

static const struct httpc_cbs fx_browser_cbs = {fx_browser_head, NULL,
						fx_browser_done};

static void fx_browser_done(void *ctx, struct httpc_req *r, int err,
			    const char *why)
{
	struct fx_browser *b = ctx;
	if (b->location && b->status == 302) {
		/* The redirect: on to the listener. */
		char *loc = b->location;
		b->location = NULL;
		b->status = 0;
		struct httpc_opts o = {.method = "GET", .url = loc};
		struct httpc_req *req;
		if (httpc_start(b->h, &o, &fx_browser_cbs, b, &req) < 0)
			b->done = true;
		free(loc);
		return;
	}
	b->done = true;
}

/* Follows url (an authorization URL) as a browser would. */
static inline void fx_browse(struct fx_browser *b, struct httpc *h,
			     const char *url)
{
	memset(b, 0, sizeof *b);
	b->h = h;
	struct httpc_opts o = {.method = "GET", .url = url};
	struct httpc_req *req;
	httpc_start(h, &o, &fx_browser_cbs, b, &req);
}

#endif
