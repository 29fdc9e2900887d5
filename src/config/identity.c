/*
 * Views of one server: its connection identity (plain or with secrets
 * fingerprinted, for instance keys), the masked description `mcpvisor
 * check` prints (what is masked decided by config/secrets.h), and the
 * names of its kind, scope and exposure.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/filter.h"
#include "config/secrets.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

/* NULL and invalid UTF-8 become null so a view never loses its key. */
static json_t *cfg_json_str(const char *s)
{
	json_t *t = s ? json_string(s) : NULL;
	return t ? t : json_null();
}

static char *cfg_fingerprint(const char *salt, const char *key,
			     const char *value)
{
	struct sha256_ctx *h = sha256_new();
	const char *sl = salt ? salt : "";
	char hex[SHA256_HEX_BYTES];
	sha256_update(h, sl, strlen(sl) + 1);
	sha256_update(h, key, strlen(key) + 1);
	sha256_update(h, value, strlen(value));
	sha256_final_hex(h, hex);
	sha256_free(h);
	return xasprintf("fp:%s", hex);
}

/* MASKED: every value "***" (headers); SHOWN: as secrets.h shows an env
 * value (its template, "***" for a secret, else the value). */
enum cfg_kv_view {
	CFG_KV_PLAIN,
	CFG_KV_FINGERPRINT,
	CFG_KV_MASKED,
	CFG_KV_SHOWN
};

static json_t *cfg_kv_json(const struct config_kv *kv, char *const *tpl,
			   size_t n, enum cfg_kv_view view, const char *salt)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *v;
		if (view == CFG_KV_MASKED) {
			v = json_string("***");
		} else if (view == CFG_KV_SHOWN) {
			char *shown = secrets_env_shown(kv[i].key, kv[i].value,
							tpl ? tpl[i] : NULL);
			v = cfg_json_str(shown);
			free(shown);
		} else if (view == CFG_KV_FINGERPRINT) {
			char *fp =
				cfg_fingerprint(salt, kv[i].key, kv[i].value);
			v = json_string(fp);
			free(fp);
		} else {
			v = cfg_json_str(kv[i].value);
		}
		json_object_set_new(o, kv[i].key, v);
	}
	return o;
}

enum cfg_args_view { CFG_ARGS_PLAIN, CFG_ARGS_FINGERPRINT, CFG_ARGS_TEMPLATE };

/* Args that came from ${VAR} may hold secrets: shown as their template
 * (and a literal one with its secret masked: secrets_arg_shown), or as a
 * fingerprint where they must still tell settings apart. */
static json_t *cfg_args_json(const struct server_config *s,
			     enum cfg_args_view view, const char *salt)
{
	json_t *a = json_array();
	for (size_t i = 0; i < s->nargs; i++) {
		const char *tpl = s->args_tpl ? s->args_tpl[i] : NULL;
		if (view == CFG_ARGS_TEMPLATE) {
			char *shown =
				secrets_arg_shown(s->args, s->nargs, i, tpl);
			json_array_append_new(a, cfg_json_str(shown));
			free(shown);
		} else if (tpl && view == CFG_ARGS_FINGERPRINT) {
			char *fp = cfg_fingerprint(salt, "arg", s->args[i]);
			json_array_append_new(a, json_string(fp));
			free(fp);
		} else {
			json_array_append_new(a, cfg_json_str(s->args[i]));
		}
	}
	return a;
}

/* Where the authority (after "scheme://") starts and how long it is. */
static const char *cfg_url_authority(const char *url, size_t *len)
{
	const char *p = strstr(url, "://");
	const char *auth = p ? p + 3 : url;
	*len = strcspn(auth, "/?#");
	return auth;
}

static bool cfg_url_has_secrets(const char *url)
{
	size_t alen;
	const char *auth = cfg_url_authority(url, &alen);
	return memchr(auth, '@', alen) != NULL || strpbrk(url, "?#") != NULL;
}

static json_t *cfg_strings_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, cfg_json_str(v[i]));
	return a;
}

/* A container's fields: in the identity (its args' secrets fingerprinted
 * or not) and in check's view (args from ${VAR} as their template). Its
 * env is the server's env, viewed with it. */
static json_t *cfg_container_json(const struct container_config *cc,
				  enum cfg_args_view view, const char *salt)
{
	json_t *o = json_object();
	json_object_set_new(o, "engine", cfg_json_str(cc->engine));
	/* An image from ${VAR} as its args are: the template for check, a
	 * fingerprint in the identity. */
	if (cc->image_tpl && view == CFG_ARGS_TEMPLATE) {
		json_object_set_new(o, "image", cfg_json_str(cc->image_tpl));
	} else if (cc->image_tpl && view == CFG_ARGS_FINGERPRINT) {
		char *fp = cfg_fingerprint(salt, "image", cc->image);
		json_object_set_new(o, "image", json_string(fp));
		free(fp);
	} else {
		json_object_set_new(o, "image", cfg_json_str(cc->image));
	}
	if (cc->port)
		json_object_set_new(o, "port", json_integer(cc->port));
	json_t *a = json_array();
	for (size_t i = 0; i < cc->nargs; i++) {
		const char *tpl = cc->args_tpl ? cc->args_tpl[i] : NULL;
		if (view == CFG_ARGS_TEMPLATE) {
			char *shown =
				secrets_arg_shown(cc->args, cc->nargs, i, tpl);
			json_array_append_new(a, cfg_json_str(shown));
			free(shown);
		} else if (tpl && view == CFG_ARGS_FINGERPRINT) {
			char *fp = cfg_fingerprint(salt, "arg", cc->args[i]);
			json_array_append_new(a, json_string(fp));
			free(fp);
		} else {
			json_array_append_new(a, cfg_json_str(cc->args[i]));
		}
	}
	json_object_set_new(o, "args", a);
	json_object_set_new(o, "volumes",
			    cfg_strings_json(cc->volumes, cc->nvolumes));
	json_object_set_new(o, "name", cfg_json_str(cc->name));
	json_object_set_new(o, "rm", json_boolean(cc->rm));
	return o;
}

json_t *config_server_identity(const struct server_config *s, bool fingerprint,
			       const char *salt)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(config_kind_name(s->kind)));
	json_object_set_new(o, "command", cfg_json_str(s->command));
	json_object_set_new(o, "args",
			    cfg_args_json(s,
					  fingerprint ? CFG_ARGS_FINGERPRINT
						      : CFG_ARGS_PLAIN,
					  salt));
	enum cfg_kv_view view = fingerprint ? CFG_KV_FINGERPRINT : CFG_KV_PLAIN;
	json_object_set_new(
		o, "env", cfg_kv_json(s->env, s->env_tpl, s->nenv, view, salt));
	json_object_set_new(o, "cwd", cfg_json_str(s->cwd));
	if (s->url && fingerprint &&
	    (cfg_url_has_secrets(s->url) || s->url_vars != NULL)) {
		char *fp = cfg_fingerprint(salt, "url", s->url);
		json_object_set_new(o, "url", json_string(fp));
		free(fp);
	} else {
		json_object_set_new(o, "url", cfg_json_str(s->url));
	}
	json_object_set_new(
		o, "headers",
		cfg_kv_json(s->headers, NULL, s->nheaders, view, salt));
	/* Only url servers have a transport to choose: a stdio server's
	 * identity (its instance key, its tool cache's name) stays what it
	 * was before there were url servers. */
	if (s->url)
		json_object_set_new(
			o, "type",
			json_string(config_http_type_name(s->http_type)));
	/* Only container servers have one: the identity of every other
	 * server stays what it was. */
	if (s->container)
		json_object_set_new(
			o, "container",
			cfg_container_json(s->container,
					   fingerprint ? CFG_ARGS_FINGERPRINT
						       : CFG_ARGS_PLAIN,
					   salt));
	json_object_set_new(o, "startupTimeout",
			    json_integer(s->startup_timeout_ms));
	json_object_set_new(o, "toolTimeout", json_integer(s->tool_timeout_ms));
	json_object_set_new(o, "idleTimeout", json_integer(s->idle_timeout_ms));
	/* Not the filters either: they choose what a session sees of the
	 * connection, not the connection, so servers that differ only in
	 * them share an instance and a reload that changes only them
	 * keeps it running. */
	return o;
}

json_t *config_server_describe(const struct server_config *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", cfg_json_str(s->name));
	json_object_set_new(o, "kind", json_string(config_kind_name(s->kind)));
	json_object_set_new(o, "scope",
			    json_string(config_scope_name(s->scope)));
	json_object_set_new(o, "exposure",
			    json_string(config_exposure_name(s->exposure)));
	json_object_set_new(o, "prefix", cfg_json_str(s->prefix));
	const char *transport =
		s->url ? config_http_type_name(s->http_type) : "stdio";
	if (s->kind == SERVER_CONTAINER || s->kind == SERVER_CONTAINER_HTTP)
		transport = config_kind_name(s->kind);
	json_object_set_new(o, "transport", json_string(transport));
	json_object_set_new(o, "command", cfg_json_str(s->command));
	json_object_set_new(o, "args",
			    cfg_args_json(s, CFG_ARGS_TEMPLATE, NULL));
	json_object_set_new(
		o, "env",
		cfg_kv_json(s->env, s->env_tpl, s->nenv, CFG_KV_SHOWN, NULL));
	json_object_set_new(o, "cwd", cfg_json_str(s->cwd));
	if (s->url) {
		char *masked = secrets_server_url(s);
		json_object_set_new(o, "url", cfg_json_str(masked));
		free(masked);
	} else {
		json_object_set_new(o, "url", json_null());
	}
	json_object_set_new(o, "headers",
			    cfg_kv_json(s->headers, NULL, s->nheaders,
					CFG_KV_MASKED, NULL));
	json_object_set_new(o, "startupTimeout",
			    json_integer(s->startup_timeout_ms));
	json_object_set_new(o, "idleTimeout", json_integer(s->idle_timeout_ms));
	json_object_set_new(o, "toolTimeout", json_integer(s->tool_timeout_ms));
	json_object_set_new(o, "disabled", json_boolean(s->disabled));
	if (s->container)
		json_object_set_new(o, "container",
				    cfg_container_json(s->container,
						       CFG_ARGS_TEMPLATE,
						       NULL));
	if (s->oauth)
		json_object_set_new(o, "oauth",
				    config_oauth_describe(s->oauth));
	if (s->error)
		json_object_set_new(o, "error", cfg_json_str(s->error));
	if (s->untrusted)
		json_object_set_new(o, "untrusted", cfg_json_str(s->untrusted));
	json_t *filters = config_filters_json(s);
	if (json_object_size(filters))
		json_object_set(o, "filters", filters);
	json_decref(filters);
	return o;
}

const char *config_scope_name(enum server_scope s)
{
	switch (s) {
	case SCOPE_SESSION:
		return "session";
	case SCOPE_SPACE:
		return "space";
	case SCOPE_APP:
		return "app";
	}
	return "unknown";
}

const char *config_exposure_name(enum server_exposure e)
{
	switch (e) {
	case EXPOSE_DIRECT:
		return "direct";
	case EXPOSE_HIDDEN:
		return "hidden";
	case EXPOSE_DEFERRED:
		return "deferred";
	}
	return "unknown";
}

const char *config_http_type_name(enum server_http_type t)
{
	switch (t) {
	case HTTP_TYPE_AUTO:
		return "auto";
	case HTTP_TYPE_STREAMABLE:
		return "http";
	case HTTP_TYPE_SSE:
		return "sse";
	}
	return "unknown";
}

const char *config_kind_name(enum server_kind k)
{
	switch (k) {
	case SERVER_STDIO:
		return "stdio";
	case SERVER_HTTP_REMOTE:
		return "http-remote";
	case SERVER_HTTP_LOCAL:
		return "http-local";
	case SERVER_CONTAINER:
		return "container";
	case SERVER_CONTAINER_HTTP:
		return "container-http";
	}
	return "unknown";
}
