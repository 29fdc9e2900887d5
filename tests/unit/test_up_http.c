/*
 * Unit tests for the remote HTTP upstream against the scripted HTTP
 * server of test_mcpc.c (mcpc_fixture.h) on the test's loop: messages
 * carry the request they relate to, a 401 is an AUTH fault with its
 * challenge and no secret in its text, a refused server is CLOSED,
 * describe masks the url, stop sends DELETE and ends in on_closed, and
 * no callback runs inside an op.
 */
#include "mcpc_fixture.h"

#include <errno.h>

#include "transport/upstream.h"

#define TUH_QUERY_SECRET "qsecret-1234567"
#define TUH_HEADER_SECRET "hsecret-7654321"

struct tuh {
	struct tmc t; /* the server side (t.m stays NULL) */
	struct upstream *u;
	bool in_op;
	int nmsgs;
	int64_t related;
	int nfault;
	enum upstream_fault_kind kind;
	int status;
	char text[256], rm[256];
	int nclosed;
};

static void tuh_message(void *ctx, const char *m, size_t n, int64_t rel)
{
	struct tuh *h = ctx;
	cr_assert_not(h->in_op, "on_message inside an op");
	h->nmsgs++;
	h->related = rel;
}

static void tuh_lost(void *ctx, int64_t id, enum outbox_fact f)
{
	cr_assert_not(((struct tuh *)ctx)->in_op, "on_lost inside an op");
}

static void tuh_fault(void *ctx, const struct upstream_fault *f)
{
	struct tuh *h = ctx;
	cr_assert_not(h->in_op, "on_fault inside an op");
	h->nfault++;
	h->kind = f->kind;
	h->status = f->http_status;
	snprintf(h->text, sizeof h->text, "%s", f->text ? f->text : "");
	snprintf(h->rm, sizeof h->rm, "%s",
		 f->resource_metadata ? f->resource_metadata : "");
}

static void tuh_owned(void *ctx, const struct upstream_owned *o, bool live)
{
	cr_assert_fail("a remote server owns nothing");
}

static void tuh_closed(void *ctx)
{
	struct tuh *h = ctx;
	cr_assert_not(h->in_op, "on_closed inside an op");
	h->nclosed++;
	h->u = NULL;
}

static const struct upstream_cbs tuh_cbs = {
	.on_message = tuh_message,
	.on_lost = tuh_lost,
	.on_fault = tuh_fault,
	.on_owned = tuh_owned,
	.on_closed = tuh_closed,
};

/* The fixture's server, and an upstream_http to it (url with a secret
 * query value, a secret header). port 0: the server's; else that. */
static void tuh_start(struct tuh *h, enum server_http_type type, int port,
		      void (*script)(struct tmc *, struct tm_conn *, int,
				     const struct tm_req *))
{
	struct tmc *t = &h->t;
	memset(h, 0, sizeof *h);
	tm_listen(t, script);
	snprintf(t->url, sizeof t->url,
		 "http://127.0.0.1:%d/mcp?api_key=" TUH_QUERY_SECRET,
		 port ? port : t->port);

	struct config_kv headers[] = {
		{"Authorization", "Bearer " TUH_HEADER_SECRET}};
	struct server_config s = {
		.name = "remote",
		.kind = SERVER_HTTP_REMOTE,
		.url = t->url,
		.headers = headers,
		.nheaders = 1,
		.http_type = type,
	};
	struct upstream_spec spec = {.server = &s, .http = t->http};
	h->in_op = true;
	cr_assert_eq(upstream_http.open(&t->loop, &spec, &tuh_cbs, h, &h->u),
		     0);
	h->in_op = false;
}

static void tuh_send(struct tuh *h, const char *msg, int64_t id)
{
	h->in_op = true;
	cr_assert_eq(upstream_http.send(h->u, msg, strlen(msg), id), 0);
	h->in_op = false;
}

static bool tuh_faulted(struct tmc *t)
{
	return ((struct tuh *)t)->nfault > 0;
}

static bool tuh_answered(struct tmc *t)
{
	return ((struct tuh *)t)->nmsgs > 0;
}

static bool tuh_is_closed(struct tmc *t)
{
	return ((struct tuh *)t)->nclosed > 0;
}

static void tuh_stop(struct tuh *h)
{
	if (h->u != NULL) {
		h->in_op = true;
		upstream_http.stop(h->u);
		upstream_http.stop(h->u); /* idempotent */
		h->in_op = false;
	}
	tm_run_until(&h->t, tuh_is_closed, "on_closed");
	cr_assert_eq(h->nclosed, 1);
	tm_stop(&h->t);
}

static void tuh_script_401(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	tm_reply(c, 401,
		 "WWW-Authenticate: Bearer realm=\"mcp\", resource_metadata="
		 "\"https://auth.example/.well-known/oauth-protected-"
		 "resource\"\r\n",
		 "application/json", "{}");
}

Test(up_http, unauthorized_is_auth_with_its_challenge_and_no_secret)
{
	struct tuh h;
	tuh_start(&h, HTTP_TYPE_AUTO, 0, tuh_script_401);
	tuh_send(&h, TM_INIT, 1);
	tm_run_until(&h.t, tuh_faulted, "the fault");
	cr_assert_eq(h.kind, UPSTREAM_AUTH);
	cr_assert_eq(h.status, 401);
	cr_assert_str_eq(
		h.rm,
		"https://auth.example/.well-known/oauth-protected-resource");
	cr_assert_null(strstr(h.text, TUH_QUERY_SECRET), "%s", h.text);
	cr_assert_null(strstr(h.text, TUH_HEADER_SECRET), "%s", h.text);
	/* The header went out as configured. */
	const struct tm_req *init = tm_nth(&h.t, "POST", 0);
	cr_assert(tm_has_header(init,
				"authorization: Bearer " TUH_HEADER_SECRET));
	/* After a fault the upstream closes on its own; stop is allowed. */
	tm_run_until(&h.t, tuh_is_closed, "on_closed after the fault");
	cr_assert_eq(h.nfault, 1);
	tuh_stop(&h);
}

static void tuh_script_plain(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (strcmp(r->method, "GET") == 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else if (strcmp(r->method, "DELETE") == 0)
		tm_reply(c, 200, NULL, NULL, NULL);
	else if (tm_body_has(r, "\"initialize\""))
		tm_reply(c, 200, "Mcp-Session-Id: sess-42\r\n",
			 "application/json", TM_INIT_RESULT);
	else
		tm_reply(c, 202, NULL, NULL, NULL);
}

Test(up_http, answers_relate_and_describe_masks_the_url)
{
	struct tuh h;
	tuh_start(&h, HTTP_TYPE_STREAMABLE, 0, tuh_script_plain);
	json_t *d = upstream_http.describe(h.u, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "http");
	json_decref(d);

	tuh_send(&h, TM_INIT, 1);
	tm_run_until(&h.t, tuh_answered, "the initialize answer");
	cr_assert_eq(h.related, 1);
	tuh_send(&h, TM_INITIALIZED, 0);

	d = upstream_http.describe(h.u, false);
	const char *url = json_string_value(json_object_get(d, "url"));
	cr_assert_not_null(url);
	cr_assert_null(strstr(url, TUH_QUERY_SECRET), "%s", url);
	cr_assert_not_null(strstr(url, "api_key="), "%s", url);
	cr_assert_str_eq(json_string_value(json_object_get(d, "protocol")),
			 "streamable-http");
	cr_assert_str_eq(
		json_string_value(json_object_get(d, "protocolVersion")),
		"2025-06-18");
	cr_assert_null(json_object_get(d, "sessionId"), "only verbose");
	json_decref(d);
	d = upstream_http.describe(h.u, true);
	const char *sid = json_string_value(json_object_get(d, "sessionId"));
	cr_assert_not_null(sid);
	cr_assert_eq(strlen(sid), 8, "a fingerprint, not the id: %s", sid);
	cr_assert_null(strstr(sid, "sess-42"));
	json_decref(d);

	tuh_stop(&h);
	cr_assert_eq(h.nfault, 0);
}

Test(up_http, stop_sends_delete_and_refuses_later_sends)
{
	struct tuh h;
	tuh_start(&h, HTTP_TYPE_STREAMABLE, 0, tuh_script_plain);
	tuh_send(&h, TM_INIT, 1);
	tm_run_until(&h.t, tuh_answered, "the initialize answer");
	h.in_op = true;
	upstream_http.stop(h.u);
	cr_assert_eq(upstream_http.send(h.u, TM_CALL(2), strlen(TM_CALL(2)), 2),
		     -EPIPE);
	h.in_op = false;
	cr_assert_eq(h.nclosed, 0, "on_closed inside stop");
	tm_run_until(&h.t, tuh_is_closed, "on_closed");
	const struct tm_req *del = tm_nth(&h.t, "DELETE", 0);
	cr_assert_not_null(del, "no DELETE");
	cr_assert(tm_has_header(del, "mcp-session-id: sess-42"));
	cr_assert(
		tm_has_header(del, "authorization: Bearer " TUH_HEADER_SECRET));
	tuh_stop(&h);
}

Test(up_http, a_refused_server_is_closed)
{
	/* A port nothing listens on: bound, never listening. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t len = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &len);
	struct tuh h;
	tuh_start(&h, HTTP_TYPE_AUTO, ntohs(a.sin_port), tuh_script_plain);
	tuh_send(&h, TM_INIT, 1);
	tm_run_until(&h.t, tuh_faulted, "the fault");
	cr_assert_eq(h.kind, UPSTREAM_CLOSED, "%s", h.text);
	cr_assert_null(strstr(h.text, TUH_QUERY_SECRET), "%s", h.text);
	tuh_stop(&h);
	close(fd);
}

Test(up_http, the_legacy_type_describes_as_sse)
{
	struct tuh h;
	tuh_start(&h, HTTP_TYPE_SSE, 0, tuh_script_plain);
	json_t *d = upstream_http.describe(h.u, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "sse");
	json_decref(d);
	tuh_stop(&h);
}
