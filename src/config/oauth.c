/*
 * A url server's "oauth": the sign-in settings `mcpvisor login` and the
 * runtime use (src/auth/), all optional: a pre-registered "clientId" and
 * "clientSecret" (a secret, usually "${VAR}"), a "clientMetadataUrl" (this
 * client's Client ID Metadata Document) and "scopes" to ask for.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/config_int.h"
#include "util/xmalloc.h"

#define CFG_OAUTH_MAX_SCOPES 64
#define CFG_OAUTH_MAX_SCOPE 256

static const char *const cfg_oauth_fields[] = {
	"clientId", "clientSecret", "clientMetadataUrl", "scopes", NULL};

void config_oauth_free(struct config_oauth *o)
{
	if (o == NULL)
		return;
	free(o->client_id);
	if (o->client_secret)
		explicit_bzero(o->client_secret, strlen(o->client_secret));
	free(o->client_secret);
	free(o->client_secret_tpl);
	free(o->client_metadata_url);
	for (size_t i = 0; i < o->nscopes; i++)
		free(o->scopes[i]);
	free(o->scopes);
	free(o);
}

struct config_oauth *config_oauth_dup(const struct config_oauth *o)
{
	if (o == NULL)
		return NULL;
	struct config_oauth *d = xcalloc(1, sizeof *d);
	d->client_id = o->client_id ? xstrdup(o->client_id) : NULL;
	d->client_secret = o->client_secret ? xstrdup(o->client_secret) : NULL;
	d->client_secret_tpl =
		o->client_secret_tpl ? xstrdup(o->client_secret_tpl) : NULL;
	d->client_metadata_url =
		o->client_metadata_url ? xstrdup(o->client_metadata_url) : NULL;
	d->scopes = xstrvdup(o->scopes, o->nscopes);
	d->nscopes = o->nscopes;
	return d;
}

/* A string field of "oauth", expanded: 0 absent, 1 set, -1 failed. */
static int cfg_oauth_str(struct config_srv *c, const json_t *oa,
			 const char *field, char **out, char **tpl)
{
	json_t *v = json_object_get(oa, field);
	char *where = xasprintf("oauth.%s", field);
	int rc = 0;
	if (v == NULL || json_is_null(v))
		goto done;
	rc = -1;
	if (!json_is_string(v)) {
		config_srv_fail(c, where, "expected a string, got %s",
				config_type_name(v));
		goto done;
	}
	const char *raw = json_string_value(v);
	if (json_string_length(v) > CONFIG_MAX_STRING || raw[0] == '\0') {
		config_srv_fail(c, where, raw[0] ? "too long" : "is empty");
		goto done;
	}
	if (config_srv_expand(c, where, NULL, raw, out) < 0) {
		free(*out);
		*out = NULL;
		goto done;
	}
	if (tpl && strstr(raw, "${"))
		*tpl = xstrdup(raw);
	rc = 1;
done:
	free(where);
	return rc;
}

/* Whether s is an https URL with a path: what a Client ID Metadata
 * Document's URL must be. */
static bool cfg_oauth_cimd_ok(const char *s)
{
	if (strncasecmp(s, "https://", 8) != 0)
		return false;
	const char *slash = strchr(s + 8, '/');
	return slash && slash[1] != '\0' && slash != s + 8;
}

void config_srv_parse_oauth(struct config_srv *c, const json_t *obj)
{
	json_t *oa = json_object_get(obj, "oauth");
	if (oa == NULL || json_is_null(oa))
		return;
	if (!json_is_object(oa)) {
		config_srv_fail(c, "oauth", "expected an object, got %s",
				config_type_name(oa));
		return;
	}
	if (c->s->url == NULL)
		config_warn(c->cfg,
			    "%s: server \"%s\": field \"oauth\" is ignored "
			    "without \"url\"",
			    c->cfg->path, c->shown);
	struct config_oauth *o = xcalloc(1, sizeof *o);
	c->s->oauth = o;
	cfg_oauth_str(c, oa, "clientId", &o->client_id, NULL);
	cfg_oauth_str(c, oa, "clientSecret", &o->client_secret,
		      &o->client_secret_tpl);
	if (cfg_oauth_str(c, oa, "clientMetadataUrl", &o->client_metadata_url,
			  NULL) > 0 &&
	    !cfg_oauth_cimd_ok(o->client_metadata_url))
		config_srv_fail(c, "oauth.clientMetadataUrl",
				"must be an https URL with a path (a Client ID "
				"Metadata Document)");
	if (o->client_secret && o->client_id == NULL)
		config_srv_fail(c, "oauth.clientSecret",
				"is of no use without \"clientId\"");
	json_t *sc = json_object_get(oa, "scopes");
	if (sc && !json_is_null(sc)) {
		if (!json_is_array(sc) ||
		    json_array_size(sc) > CFG_OAUTH_MAX_SCOPES) {
			config_srv_fail(c, "oauth.scopes",
					"expected an array of at most %d scope "
					"strings",
					CFG_OAUTH_MAX_SCOPES);
		} else {
			o->scopes = xcalloc(json_array_size(sc) + 1,
					    sizeof *o->scopes);
			size_t i;
			json_t *v;
			json_array_foreach(sc, i, v)
			{
				const char *s = json_string_value(v);
				/* RFC 6749 3.3: a scope-token is printable
				 * ASCII but for space, '"' and '\'. */
				bool ok = s && s[0] &&
					  strlen(s) <= CFG_OAUTH_MAX_SCOPE;
				for (const char *p = s; ok && *p; p++)
					ok = *p > 0x20 && *p < 0x7f &&
					     *p != '"' && *p != '\\';
				if (!ok) {
					config_srv_fail(
						c, "oauth.scopes",
						"item %zu is not a scope (a "
						"word of printable characters "
						"without spaces or quotes)",
						i + 1);
					break;
				}
				o->scopes[o->nscopes++] = xstrdup(s);
			}
		}
	}
	const char *key;
	json_t *v;
	json_object_foreach(oa, key, v)
	{
		bool known = false;
		for (int i = 0; cfg_oauth_fields[i]; i++)
			known = known || strcmp(key, cfg_oauth_fields[i]) == 0;
		if (known)
			continue;
		char *shown = config_show(key);
		config_warn(c->cfg,
			    "%s: server \"%s\": unknown field \"oauth.%s\" "
			    "(ignored)",
			    c->cfg->path, c->shown, shown);
		free(shown);
	}
}

json_t *config_oauth_describe(const struct config_oauth *o)
{
	json_t *d = json_object();
	if (o->client_id)
		json_object_set_new(d, "clientId", json_string(o->client_id));
	/* A secret: its template when it came from ${VAR} (a template holds
	 * none), else masked. */
	if (o->client_secret)
		json_object_set_new(d, "clientSecret",
				    json_string(o->client_secret_tpl
							? o->client_secret_tpl
							: "***"));
	if (o->client_metadata_url)
		json_object_set_new(d, "clientMetadataUrl",
				    json_string(o->client_metadata_url));
	if (o->nscopes) {
		json_t *a = json_array();
		for (size_t i = 0; i < o->nscopes; i++)
			json_array_append_new(a, json_string(o->scopes[i]));
		json_object_set_new(d, "scopes", a);
	}
	return d;
}
