/* Token requests: the code exchange and the refresh, with client
 * authentication, and what their answers mean. */
#include "auth/token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/fetch.h"
#include "auth/form.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/xmalloc.h"

struct treq {
	struct afetch *f;
	treq_cb cb;
	void *arg;
	bool refresh;
	char why[256];
};

void treq_build(const struct treq_opts *o, char **body, char **auth_header)
{
	struct buf b;
	buf_init(&b);
	const struct store_client *c = o->client;
	if (o->refresh_token) {
		form_add(&b, "grant_type", "refresh_token");
		form_add(&b, "refresh_token", o->refresh_token);
	} else {
		form_add(&b, "grant_type", "authorization_code");
		form_add(&b, "code", o->code);
		form_add(&b, "code_verifier", o->code_verifier);
		form_add(&b, "redirect_uri", o->redirect_uri);
	}
	form_add(&b, "resource", o->resource);
	*auth_header = NULL;
	const char *m = c->auth_method ? c->auth_method : "none";
	if (strcmp(m, "client_secret_basic") == 0 && c->client_secret) {
		/* RFC 6749 2.3.1: each form-encoded, then base64. The id
		 * is not also sent in the body: some servers refuse two
		 * authentications. */
		struct buf cred, h;
		buf_init(&cred);
		buf_init(&h);
		form_escape(&cred, c->client_id);
		buf_puts(&cred, ":");
		form_escape(&cred, c->client_secret);
		buf_puts(&h, "Authorization: Basic ");
		base64_append(&h, cred.data, cred.len, BASE64_STD, true);
		explicit_bzero(cred.data, cred.len);
		buf_free(&cred);
		*auth_header = buf_steal(&h);
	} else if (strcmp(m, "client_secret_post") == 0 && c->client_secret) {
		form_add(&b, "client_id", c->client_id);
		form_add(&b, "client_secret", c->client_secret);
	} else {
		form_add(&b, "client_id", c->client_id);
	}
	*body = buf_steal(&b);
}

static void treq_done_cb(void *arg, const struct afetch_result *res)
{
	struct treq *r = arg;
	r->f = NULL;
	const char *why = NULL;
	const char *what = r->refresh ? "refresh" : "token request";
	if (res->err < 0) {
		snprintf(r->why, sizeof r->why, "the %s got no answer: %s",
			 what, res->why);
		r->cb(r->arg, res->err, r->why, NULL, NULL);
		free(r);
		return;
	}
	if (res->status == 200) {
		struct meta_token t;
		if (meta_parse_token(res->body, res->len, &t, &why) < 0) {
			snprintf(r->why, sizeof r->why,
				 "the %s's answer is not usable: %s", what,
				 why);
			r->cb(r->arg, -EPROTO, r->why, NULL, NULL);
		} else {
			r->cb(r->arg, 0, NULL, &t, NULL);
			meta_token_clear(&t);
		}
		free(r);
		return;
	}
	struct meta_error e = {0};
	int err = -EPROTO;
	if (res->status >= 400 && res->status < 500 &&
	    meta_parse_error(res->body, res->len, &e) == 0 && e.error) {
		/* RFC 6749 5.2: these will not go away by asking again. */
		static const char *const final[] = {"invalid_grant",
						    "invalid_client",
						    "unauthorized_client",
						    "unsupported_grant_type",
						    "invalid_scope",
						    "invalid_target",
						    NULL};
		for (size_t i = 0; final[i]; i++)
			if (strcmp(e.error, final[i]) == 0)
				err = -EACCES;
		snprintf(r->why, sizeof r->why,
			 "the authorization server refused the %s: %.60s", what,
			 e.error);
	} else if (res->status == 401) {
		err = -EACCES;
		snprintf(r->why, sizeof r->why,
			 "the authorization server refused the client (HTTP "
			 "401)");
	} else {
		err = res->status >= 500 ? -EAGAIN : -EPROTO;
		snprintf(r->why, sizeof r->why, "the %s failed with HTTP %d",
			 what, res->status);
	}
	r->cb(r->arg, err, r->why, NULL, e.error);
	meta_error_clear(&e);
	free(r);
}

int treq_start(struct httpc *h, const struct treq_opts *o, treq_cb cb,
	       void *arg, struct treq **out)
{
	char *body, *auth;
	treq_build(o, &body, &auth);
	const char *hdrs[3] = {
		"Content-Type: application/x-www-form-urlencoded", auth, NULL};
	struct afetch_opts fo = {.method = "POST",
				 .url = o->token_endpoint,
				 .headers = hdrs,
				 .body = body,
				 .body_len = strlen(body)};
	struct treq *r = xcalloc(1, sizeof *r);
	r->cb = cb;
	r->arg = arg;
	r->refresh = o->refresh_token != NULL;
	int rc = afetch_start(h, &fo, treq_done_cb, r, &r->f);
	explicit_bzero(body, strlen(body));
	free(body);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	if (rc < 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void treq_cancel(struct treq *r)
{
	if (r == NULL)
		return;
	afetch_cancel(r->f);
	free(r);
}
