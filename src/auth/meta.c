/* Readers of the OAuth JSON documents, with limits. */
#include "auth/meta.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/xmalloc.h"

void meta_wipe(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static void meta_list_clear(struct meta_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

bool meta_list_has(const struct meta_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

/* A document: a JSON object of at most META_MAX_DOC bytes. */
static json_t *meta_load(const char *doc, size_t len, const char **why)
{
	if (len > META_MAX_DOC) {
		*why = "the document is too large";
		return NULL;
	}
	json_t *o = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		*why = "the document is not a JSON object";
		return NULL;
	}
	return o;
}

/* An optional string field: 0 (absent: *out NULL), -EINVAL (not a
 * string, or holds a NUL), -E2BIG (over max). */
static int meta_str(json_t *o, const char *field, size_t max, char **out)
{
	*out = NULL;
	json_t *v = json_object_get(o, field);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	size_t n = json_string_length(v);
	if (n > max)
		return -E2BIG;
	if (memchr(json_string_value(v), '\0', n))
		return -EINVAL;
	*out = xstrndup(json_string_value(v), n);
	return 0;
}

static int meta_list(json_t *o, const char *field, struct meta_list *out)
{
	memset(out, 0, sizeof *out);
	json_t *v = json_object_get(o, field);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return -EINVAL;
	if (json_array_size(v) > META_MAX_LIST)
		return -E2BIG;
	out->present = true;
	out->v = xcalloc(json_array_size(v) + 1, sizeof *out->v);
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return -EINVAL;
		size_t n = json_string_length(e);
		if (n > META_MAX_URL)
			return -E2BIG;
		if (memchr(json_string_value(e), '\0', n))
			return -EINVAL;
		out->v[out->n++] = xstrndup(json_string_value(e), n);
	}
	return 0;
}

static int meta_bool(json_t *o, const char *field, bool *out)
{
	json_t *v = json_object_get(o, field);
	*out = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}

/* Runs the field readers of one document: the first failure names the
 * field in *why. */
#define META_TRY(call, field)                                                  \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ < 0) {                                                 \
			*why = rc_ == -E2BIG ? "field \"" field                \
					       "\" is too long"                \
					     : "field \"" field                \
					       "\" has the wrong type";        \
			rc = rc_;                                              \
			goto fail;                                             \
		}                                                              \
	} while (0)

void meta_prm_clear(struct meta_prm *m)
{
	free(m->resource);
	meta_list_clear(&m->authorization_servers);
	meta_list_clear(&m->scopes_supported);
	memset(m, 0, sizeof *m);
}

int meta_parse_prm(const char *doc, size_t len, struct meta_prm *out,
		   const char **why)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	json_t *o = meta_load(doc, len, why);
	if (o == NULL)
		return -EINVAL;
	META_TRY(meta_str(o, "resource", META_MAX_URL, &out->resource),
		 "resource");
	META_TRY(meta_list(o, "authorization_servers",
			   &out->authorization_servers),
		 "authorization_servers");
	META_TRY(meta_list(o, "scopes_supported", &out->scopes_supported),
		 "scopes_supported");
	if (out->resource == NULL) {
		*why = "it has no \"resource\"";
		rc = -EINVAL;
		goto fail;
	}
	if (out->authorization_servers.n == 0) {
		*why = "it names no authorization server";
		rc = -EINVAL;
		goto fail;
	}
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	meta_prm_clear(out);
	return rc;
}

void meta_as_clear(struct meta_as *m)
{
	free(m->issuer);
	free(m->authorization_endpoint);
	free(m->token_endpoint);
	free(m->registration_endpoint);
	meta_list_clear(&m->scopes_supported);
	meta_list_clear(&m->response_types_supported);
	meta_list_clear(&m->code_challenge_methods_supported);
	meta_list_clear(&m->token_endpoint_auth_methods_supported);
	memset(m, 0, sizeof *m);
}

int meta_parse_as(const char *doc, size_t len, struct meta_as *out,
		  const char **why)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	json_t *o = meta_load(doc, len, why);
	if (o == NULL)
		return -EINVAL;
	META_TRY(meta_str(o, "issuer", META_MAX_URL, &out->issuer), "issuer");
	META_TRY(meta_str(o, "authorization_endpoint", META_MAX_URL,
			  &out->authorization_endpoint),
		 "authorization_endpoint");
	META_TRY(meta_str(o, "token_endpoint", META_MAX_URL,
			  &out->token_endpoint),
		 "token_endpoint");
	META_TRY(meta_str(o, "registration_endpoint", META_MAX_URL,
			  &out->registration_endpoint),
		 "registration_endpoint");
	META_TRY(meta_list(o, "scopes_supported", &out->scopes_supported),
		 "scopes_supported");
	META_TRY(meta_list(o, "response_types_supported",
			   &out->response_types_supported),
		 "response_types_supported");
	META_TRY(meta_list(o, "code_challenge_methods_supported",
			   &out->code_challenge_methods_supported),
		 "code_challenge_methods_supported");
	META_TRY(meta_list(o, "token_endpoint_auth_methods_supported",
			   &out->token_endpoint_auth_methods_supported),
		 "token_endpoint_auth_methods_supported");
	META_TRY(meta_bool(o, "client_id_metadata_document_supported",
			   &out->client_id_metadata_document_supported),
		 "client_id_metadata_document_supported");
	META_TRY(meta_bool(o, "authorization_response_iss_parameter_supported",
			   &out->iss_parameter_supported),
		 "authorization_response_iss_parameter_supported");
	if (out->issuer == NULL || out->authorization_endpoint == NULL ||
	    out->token_endpoint == NULL) {
		*why = "it lacks \"issuer\", \"authorization_endpoint\" or "
		       "\"token_endpoint\"";
		rc = -EINVAL;
		goto fail;
	}
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	meta_as_clear(out);
	return rc;
}

void meta_token_clear(struct meta_token *m)
{
	meta_wipe(m->access_token);
	meta_wipe(m->refresh_token);
	free(m->token_type);
	free(m->scope);
	memset(m, 0, sizeof *m);
	m->expires_in = -1;
}

int meta_parse_token(const char *doc, size_t len, struct meta_token *out,
		     const char **why)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	out->expires_in = -1;
	json_t *o = meta_load(doc, len, why);
	if (o == NULL)
		return -EINVAL;
	META_TRY(
		meta_str(o, "access_token", META_MAX_TOKEN, &out->access_token),
		"access_token");
	META_TRY(meta_str(o, "token_type", META_MAX_WORD, &out->token_type),
		 "token_type");
	META_TRY(meta_str(o, "refresh_token", META_MAX_TOKEN,
			  &out->refresh_token),
		 "refresh_token");
	META_TRY(meta_str(o, "scope", META_MAX_TEXT * 4, &out->scope), "scope");
	json_t *e = json_object_get(o, "expires_in");
	if (json_is_integer(e)) {
		out->expires_in = json_integer_value(e);
	} else if (json_is_real(e)) {
		/* Cast only what fits: a double past int64_t is undefined
		 * behaviour (what a fuzzer found with 5e31). */
		double r = json_real_value(e);
		out->expires_in =
			r >= 0 && r <= 366.0 * 24 * 3600 ? (int64_t)r : -1;
	} else if (json_is_string(e)) {
		/* Some servers quote it. */
		char *end = NULL;
		long long v = strtoll(json_string_value(e), &end, 10);
		if (end && *end == '\0' && end != json_string_value(e))
			out->expires_in = v;
	}
	/* A lifetime past a year (or negative) is as good as none. */
	if (out->expires_in < 0 || out->expires_in > 366 * 24 * 3600)
		out->expires_in = -1;
	if (out->access_token == NULL || out->access_token[0] == '\0') {
		*why = "it has no \"access_token\"";
		rc = -EINVAL;
		goto fail;
	}
	if (out->token_type == NULL ||
	    strcasecmp(out->token_type, "bearer") != 0) {
		*why = "its \"token_type\" is not Bearer";
		rc = -EINVAL;
		goto fail;
	}
	for (const char *p = out->access_token; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) {
			/* It goes into a header line. */
			*why = "its \"access_token\" holds a byte a header "
			       "cannot carry";
			rc = -EINVAL;
			goto fail;
		}
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	meta_token_clear(out);
	return rc;
}

void meta_error_clear(struct meta_error *m)
{
	free(m->error);
	free(m->error_description);
	memset(m, 0, sizeof *m);
}

/* Whether s keeps to RFC 6749 5.2's characters for error and
 * error_description (%x20-21 / %x23-5B / %x5D-7E): what falls outside
 * (a terminal escape, a line break) is not text to show anyone. */
static bool meta_nqschar(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
			return false;
	return true;
}

int meta_parse_error(const char *doc, size_t len, struct meta_error *out)
{
	const char *why;
	memset(out, 0, sizeof *out);
	json_t *o = meta_load(doc, len, &why);
	if (o == NULL)
		return -EINVAL;
	int rc = meta_str(o, "error", META_MAX_WORD, &out->error);
	if (rc == 0)
		rc = meta_str(o, "error_description", META_MAX_TEXT,
			      &out->error_description);
	json_decref(o);
	if (rc < 0) {
		meta_error_clear(out);
		return rc;
	}
	/* Dropped, not refused: the status still says the server said no. */
	if (out->error && !meta_nqschar(out->error)) {
		free(out->error);
		out->error = NULL;
	}
	if (out->error_description && !meta_nqschar(out->error_description)) {
		free(out->error_description);
		out->error_description = NULL;
	}
	return 0;
}

void meta_client_clear(struct meta_client *m)
{
	free(m->client_id);
	meta_wipe(m->client_secret);
	free(m->token_endpoint_auth_method);
	memset(m, 0, sizeof *m);
}

int meta_parse_client(const char *doc, size_t len, struct meta_client *out,
		      const char **why)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	json_t *o = meta_load(doc, len, why);
	if (o == NULL)
		return -EINVAL;
	META_TRY(meta_str(o, "client_id", META_MAX_URL, &out->client_id),
		 "client_id");
	META_TRY(meta_str(o, "client_secret", META_MAX_TOKEN,
			  &out->client_secret),
		 "client_secret");
	META_TRY(meta_str(o, "token_endpoint_auth_method", META_MAX_WORD,
			  &out->token_endpoint_auth_method),
		 "token_endpoint_auth_method");
	json_t *e = json_object_get(o, "client_secret_expires_at");
	if (json_is_integer(e) && json_integer_value(e) > 0)
		out->client_secret_expires_at = json_integer_value(e);
	if (out->client_id == NULL || out->client_id[0] == '\0') {
		*why = "it has no \"client_id\"";
		rc = -EINVAL;
		goto fail;
	}
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	meta_client_clear(out);
	return rc;
}
