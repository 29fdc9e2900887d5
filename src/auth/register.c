/* Which client signs in, and the Dynamic Client Registration request. */
#include "auth/register.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "auth/fetch.h"
#include "auth/urls.h"
#include "config/config.h"
#include "http/httpc.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct reg {
	char *state_dir;
	char *issuer;
	struct afetch *f;
	uv_timer_t *later; /* delivers a client found without a request */
	struct store_client c;
	reg_cb cb;
	void *arg;
	char why[256];
};

const char *reg_auth_method(const struct meta_list *supported,
			    const char *registered, bool have_secret)
{
	if (!have_secret)
		return "none";
	if (registered && strcmp(registered, "none") != 0 &&
	    (!supported->present || meta_list_has(supported, registered)))
		return registered;
	if (!supported->present ||
	    meta_list_has(supported, "client_secret_basic"))
		return "client_secret_basic";
	if (meta_list_has(supported, "client_secret_post"))
		return "client_secret_post";
	return "client_secret_basic";
}

const char *reg_dcr_method(const struct meta_list *supported)
{
	if (!supported->present || meta_list_has(supported, "none"))
		return "none";
	if (meta_list_has(supported, "client_secret_basic"))
		return "client_secret_basic";
	if (meta_list_has(supported, "client_secret_post"))
		return "client_secret_post";
	return "none";
}

static void reg_free(struct reg *r)
{
	store_client_clear(&r->c);
	free(r->state_dir);
	free(r->issuer);
	free(r);
}

static void reg_later_closed(uv_handle_t *h)
{
	free(h);
}

static void reg_end(struct reg *r, int err, const char *why)
{
	if (r->later) {
		uv_close((uv_handle_t *)r->later, reg_later_closed);
		r->later = NULL;
	}
	r->cb(r->arg, err, why, err == 0 ? &r->c : NULL);
	reg_free(r);
}

static void reg_later_cb(uv_timer_t *t)
{
	reg_end(t->data, 0, NULL);
}

static void reg_done_cb(void *arg, const struct afetch_result *res)
{
	struct reg *r = arg;
	r->f = NULL;
	const char *why = NULL;
	struct meta_client mc;
	if (res->err < 0) {
		snprintf(r->why, sizeof r->why,
			 "the client registration got no answer: %s", res->why);
		reg_end(r, res->err, r->why);
		return;
	}
	if (res->status != 201 && res->status != 200) {
		struct meta_error e;
		if (meta_parse_error(res->body, res->len, &e) == 0 && e.error)
			snprintf(r->why, sizeof r->why,
				 "the authorization server refused the "
				 "client registration (HTTP %d, %.60s)",
				 res->status, e.error);
		else
			snprintf(r->why, sizeof r->why,
				 "the authorization server refused the "
				 "client registration (HTTP %d)",
				 res->status);
		meta_error_clear(&e);
		reg_end(r, -EACCES, r->why);
		return;
	}
	if (meta_parse_client(res->body, res->len, &mc, &why) < 0) {
		snprintf(r->why, sizeof r->why,
			 "the client registration's answer is not usable: %s",
			 why);
		reg_end(r, -EPROTO, r->why);
		return;
	}
	/* The answer decides (RFC 7591 3.2.1): the method and secret the
	 * server registered, not the ones asked for. */
	free(r->c.client_id);
	r->c.client_id = mc.client_id;
	mc.client_id = NULL;
	r->c.client_secret = mc.client_secret;
	mc.client_secret = NULL;
	if (mc.token_endpoint_auth_method) {
		free(r->c.auth_method);
		r->c.auth_method = mc.token_endpoint_auth_method;
		mc.token_endpoint_auth_method = NULL;
	}
	r->c.secret_expires_at = mc.client_secret_expires_at;
	meta_client_clear(&mc);
	if (store_client_write(r->state_dir, &r->c) < 0)
		log_warn("could not keep the client registration at %s",
			 r->issuer);
	reg_end(r, 0, NULL);
}

/* The Dynamic Client Registration request (RFC 7591 2, with
 * application_type from OpenID Connect Registration, as 2026-07-28
 * asks). */
static int reg_dcr(struct reg *r, struct httpc *h, const struct meta_as *as,
		   const char *redirect_uri)
{
	const char *method =
		reg_dcr_method(&as->token_endpoint_auth_methods_supported);
	json_t *o = json_pack("{s:s,s:[s],s:[s,s],s:[s],s:s,s:s}",
			      "client_name", REG_CLIENT_NAME, "redirect_uris",
			      redirect_uri, "grant_types", "authorization_code",
			      "refresh_token", "response_types", "code",
			      "token_endpoint_auth_method", method,
			      "application_type", "native");
	char *body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	static const char *const hdrs[] = {"Content-Type: application/json",
					   NULL};
	struct afetch_opts fo = {.method = "POST",
				 .url = as->registration_endpoint,
				 .headers = hdrs,
				 .body = body,
				 .body_len = strlen(body)};
	r->c.issuer = xstrdup(as->issuer);
	r->c.source = xstrdup("dcr");
	r->c.auth_method = xstrdup(method);
	r->c.redirect_uri = xstrdup(redirect_uri);
	int rc = afetch_start(h, &fo, reg_done_cb, r, &r->f);
	free(body);
	return rc;
}

int reg_start(struct httpc *h, const char *state_dir, const struct meta_as *as,
	      const struct config_oauth *oauth, const char *redirect_uri,
	      reg_cb cb, void *arg, struct reg **out)
{
	struct reg *r = xcalloc(1, sizeof *r);
	r->state_dir = xstrdup(state_dir);
	r->issuer = xstrdup(as->issuer);
	r->cb = cb;
	r->arg = arg;
	const struct meta_list *methods =
		&as->token_endpoint_auth_methods_supported;
	int rc = 0;
	struct store_client kept;
	bool have_kept = store_client_read(state_dir, as->issuer, &kept) == 0;
	/* Kept only for the redirect URI it was registered with (the
	 * listener binds that port again when it can) and while its secret
	 * lasts. */
	bool kept_ok = have_kept && strcmp(kept.source, "dcr") == 0 &&
		       kept.redirect_uri &&
		       strcmp(kept.redirect_uri, redirect_uri) == 0 &&
		       (kept.secret_expires_at == 0 ||
			kept.secret_expires_at > store_now() + 60);
	if (have_kept && !kept_ok)
		store_client_clear(&kept);
	if (oauth && oauth->client_id) {
		/* Pre-registered: kept under its issuer and id, so that a
		 * refresh in the runtime finds its secret (never as the
		 * issuer's shared registration). */
		r->c.issuer = xstrdup(as->issuer);
		r->c.source = xstrdup("pre");
		r->c.client_id = xstrdup(oauth->client_id);
		if (oauth->client_secret && oauth->client_secret[0])
			r->c.client_secret = xstrdup(oauth->client_secret);
		r->c.auth_method = xstrdup(reg_auth_method(
			methods, NULL, r->c.client_secret != NULL));
		if (store_client_write(state_dir, &r->c) < 0)
			log_warn("could not keep the client for %s",
				 as->issuer);
	} else if (oauth && oauth->client_metadata_url &&
		   as->client_id_metadata_document_supported) {
		r->c.issuer = xstrdup(as->issuer);
		r->c.source = xstrdup("cimd");
		r->c.client_id = xstrdup(oauth->client_metadata_url);
		r->c.auth_method = xstrdup("none");
		if (store_client_write(state_dir, &r->c) < 0)
			log_warn("could not keep the client for %s",
				 as->issuer);
	} else if (kept_ok) {
		r->c = kept;
		kept_ok = false;
	} else if (as->registration_endpoint) {
		rc = reg_dcr(r, h, as, redirect_uri);
		if (rc < 0) {
			reg_free(r);
			return rc;
		}
		*out = r;
		return 0;
	} else {
		reg_free(r);
		return -ENOENT;
	}
	if (kept_ok)
		store_client_clear(&kept);
	r->later = xmalloc(sizeof *r->later);
	uv_timer_init(httpc_loop(h), r->later);
	r->later->data = r;
	uv_timer_start(r->later, reg_later_cb, 0, 0);
	*out = r;
	return 0;
}

void reg_cancel(struct reg *r)
{
	if (r == NULL)
		return;
	afetch_cancel(r->f);
	if (r->later)
		uv_close((uv_handle_t *)r->later, reg_later_closed);
	r->later = NULL;
	reg_free(r);
}
