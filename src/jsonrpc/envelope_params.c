/*
 * The Mcp-Param-* headers of MCP 2026-07-28 (SEP-2243): whether a tool's
 * inputSchema uses x-mcp-header as the revision allows, and whether a
 * tools/call sent the headers its arguments call for, with the values
 * its body has. Pure: no I/O, no state.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/envelope_int.h"
#include "jsonrpc/jsonrpc.h"
#include "util/xmalloc.h"

#define ENV_ANNOTATION "x-mcp-header"
#define ENV_PARAM_PREFIX "mcp-param-"
#define ENV_PARAM_PREFIX_LEN (sizeof ENV_PARAM_PREFIX - 1)

/* Keywords whose value is one subschema, an array of them, or a map of
 * names to them: an annotation under any of these is not reached through
 * "properties" alone. Anything else (enum, const, default, examples,
 * descriptions, vendor keys) is data, where "x-mcp-header" means
 * nothing. */
static const char *const env_kw_schema[] = {
	"items",
	"additionalProperties",
	"additionalItems",
	"contains",
	"propertyNames",
	"unevaluatedProperties",
	"unevaluatedItems",
	"not",
	"if",
	"then",
	"else",
	"contentSchema",
	"allOf",
	"anyOf",
	"oneOf",
	"prefixItems",
	NULL,
};
static const char *const env_kw_map[] = {
	"patternProperties", "$defs",	     "definitions",
	"dependentSchemas",  "dependencies", NULL,
};

static bool env_kw(const char *const *set, const char *key)
{
	for (int i = 0; set[i]; i++)
		if (strcmp(set[i], key) == 0)
			return true;
	return false;
}

/* RFC 9110 token: what a header name may be made of. */
static bool env_token(const char *s)
{
	if (s == NULL || *s == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (!isalnum(*p) && strchr("!#$%&'*+-.^_`|~", *p) == NULL)
			return false;
	return true;
}

static bool env_primitive_name(const char *t)
{
	return strcmp(t, "string") == 0 || strcmp(t, "integer") == 0 ||
	       strcmp(t, "boolean") == 0;
}

/* "type" is one of string, integer, boolean; or a list of exactly one of
 * them and "null" (a null argument is sent without its header). */
static bool env_primitive(json_t *prop)
{
	json_t *t = json_object_get(prop, "type");
	if (json_is_string(t))
		return env_primitive_name(json_string_value(t));
	if (!json_is_array(t))
		return false;
	int prim = 0;
	size_t i;
	json_t *e;
	json_array_foreach(t, i, e)
	{
		if (!json_is_string(e))
			return false;
		if (env_primitive_name(json_string_value(e)))
			prim++;
		else if (strcmp(json_string_value(e), "null") != 0)
			return false;
	}
	return prim == 1;
}

struct env_names {
	const char *name[ENVELOPE_MAX_PARAMS];
	size_t n;
};

static bool env_schema_walk(json_t *node, bool reachable, int depth,
			    struct env_names *seen);

static bool env_schema_walk_many(json_t *v, int depth, bool map,
				 struct env_names *seen)
{
	const char *k;
	json_t *e;
	size_t i;
	if (json_is_array(v) && !map) {
		json_array_foreach(v, i, e)
		{
			if (!env_schema_walk(e, false, depth, seen))
				return false;
		}
		return true;
	}
	if (json_is_object(v) && map) {
		json_object_foreach(v, k, e)
		{
			if (!env_schema_walk(e, false, depth, seen))
				return false;
		}
		return true;
	}
	return map || env_schema_walk(v, false, depth, seen);
}

static bool env_schema_walk(json_t *node, bool reachable, int depth,
			    struct env_names *seen)
{
	if (!json_is_object(node))
		return true; /* true, false, or not a schema: nothing marked */
	if (depth > ENVELOPE_MAX_SCHEMA_DEPTH)
		return false;
	json_t *mark = json_object_get(node, ENV_ANNOTATION);
	if (mark != NULL) {
		if (!reachable || !json_is_string(mark) ||
		    !env_token(json_string_value(mark)) || !env_primitive(node))
			return false;
		const char *name = json_string_value(mark);
		for (size_t i = 0; i < seen->n; i++)
			if (strcasecmp(seen->name[i], name) == 0)
				return false;
		if (seen->n == ENVELOPE_MAX_PARAMS)
			return false;
		seen->name[seen->n++] = name;
	}
	const char *key;
	json_t *v;
	json_object_foreach(node, key, v)
	{
		bool ok = true;
		if (strcmp(key, "properties") == 0 && json_is_object(v)) {
			const char *pk;
			json_t *sub;
			json_object_foreach(v, pk, sub)
			{
				if (!env_schema_walk(sub, reachable, depth + 1,
						     seen))
					return false;
			}
		} else if (env_kw(env_kw_schema, key)) {
			ok = env_schema_walk_many(v, depth + 1, false, seen);
		} else if (env_kw(env_kw_map, key)) {
			ok = env_schema_walk_many(v, depth + 1, true, seen);
		}
		if (!ok)
			return false;
	}
	return true;
}

bool envelope_schema_ok(json_t *input_schema)
{
	struct env_names seen = {.n = 0};
	return env_schema_walk(input_schema, true, 0, &seen);
}

/* Whether h (a header value, decoded) is the number v: as integers when
 * both are, else as doubles (so "42.0" is 42, as SEP-2243 asks). */
static bool env_number_equal(const char *h, json_t *v)
{
	const char *p = h;
	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	bool integral = *p == '\0';
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p != '\0')
		return false;
	if (integral && json_is_integer(v)) {
		errno = 0;
		long long n = strtoll(h, NULL, 10);
		return errno == 0 && n == json_integer_value(v);
	}
	return strtod(h, NULL) == json_number_value(v);
}

/* The body's value of an argument for a message: strings quoted,
 * numbers and booleans as JSON. */
static void env_show_value(char out[ENVELOPE_QUOTE_BUF], json_t *v)
{
	if (json_is_string(v)) {
		envelope_quote(out, json_string_value(v),
			       json_string_length(v));
		return;
	}
	char *s = json_dumps(v, JSON_ENCODE_ANY);
	envelope_quote(out, s ? s : "?", s ? strlen(s) : 1);
	free(s);
}

static bool env_param_same(const struct envelope_view *got, json_t *value)
{
	if (json_is_string(value))
		return got->len == json_string_length(value) &&
		       memcmp(got->s, json_string_value(value), got->len) == 0;
	const char *word = json_is_true(value) ? "true" : "false";
	if (!json_is_number(value))
		return got->len == strlen(word) &&
		       memcmp(got->s, word, got->len) == 0;
	/* A number's text, NUL-terminated for strtod; 64 bytes is more
	 * than any integer or double a client writes needs. */
	char text[64];
	if (got->len >= sizeof text)
		return false;
	memcpy(text, got->s, got->len);
	text[got->len] = '\0';
	return env_number_equal(text, value);
}

enum env_param_fault {
	ENV_PARAM_LONG,
	ENV_PARAM_EXTRA,
	ENV_PARAM_TYPE,
	ENV_PARAM_MISSING,
	ENV_PARAM_INVALID,
	ENV_PARAM_DIFFERENT,
};

/* One annotated argument: value (NULL: absent) against its header. */
static int env_param_one(const char *name, const char *key, json_t *value,
			 envelope_header_fn hdr, void *arg,
			 struct envelope_err *err)
{
	/* "mcp-param-" and the name, lower-cased; on the stack when short,
	 * as it is on every call of a marked tool. */
	char small[128];
	size_t nlen = strlen(name);
	size_t need = ENV_PARAM_PREFIX_LEN + nlen + 1;
	char *lname = need <= sizeof small ? small : xmalloc(need);
	memcpy(lname, ENV_PARAM_PREFIX, ENV_PARAM_PREFIX_LEN);
	for (size_t i = 0; i <= nlen; i++)
		lname[ENV_PARAM_PREFIX_LEN + i] =
			(char)tolower((unsigned char)name[i]);
	const char *raw = hdr ? hdr(arg, lname) : NULL;
	if (lname != small)
		free(lname);
	enum env_param_fault why;
	struct envelope_view got = {NULL, 0, NULL};
	bool absent = value == NULL || json_is_null(value);
	if (raw && strlen(raw) > ENVELOPE_MAX_HEADER)
		why = ENV_PARAM_LONG;
	else if (absent && raw == NULL)
		return 0;
	else if (absent)
		why = ENV_PARAM_EXTRA;
	else if (json_is_object(value) || json_is_array(value))
		why = ENV_PARAM_TYPE;
	else if (raw == NULL)
		why = ENV_PARAM_MISSING;
	else if (envelope_header_view(raw, &got) < 0)
		why = ENV_PARAM_INVALID;
	else if (env_param_same(&got, value)) {
		free(got.owned);
		return 0;
	} else
		why = ENV_PARAM_DIFFERENT;
	/* Quoted only for a fault: the accepted path stays free of it. */
	char qn[ENVELOPE_QUOTE_BUF], qk[ENVELOPE_QUOTE_BUF];
	char qh[ENVELOPE_QUOTE_BUF], qv[ENVELOPE_QUOTE_BUF];
	envelope_quote(qn, name, strlen(name));
	envelope_quote(qk, key, strlen(key));
	switch (why) {
	case ENV_PARAM_LONG:
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "Mcp-Param-%s header is longer than %d "
				     "bytes",
				     qn, ENVELOPE_MAX_HEADER);
	case ENV_PARAM_EXTRA:
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "Mcp-Param-%s header sent, but argument "
				     "'%s' is absent",
				     qn, qk);
	case ENV_PARAM_TYPE:
		return envelope_fail(err, 400, JR_INVALID_PARAMS, NULL,
				     "argument '%s' (Mcp-Param-%s) must be a "
				     "string, integer or boolean",
				     qk, qn);
	case ENV_PARAM_MISSING:
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "Mcp-Param-%s header missing for "
				     "argument '%s'",
				     qn, qk);
	case ENV_PARAM_INVALID:
		envelope_quote(qh, raw, strlen(raw));
		return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
				     "Mcp-Param-%s header '%s' is not a valid "
				     "value (visible ASCII, or a "
				     "=?base64?...?= sentinel of UTF-8)",
				     qn, qh);
	case ENV_PARAM_DIFFERENT:
		break;
	}
	envelope_quote(qh, got.s, got.len);
	free(got.owned);
	env_show_value(qv, value);
	const char *mark = json_is_string(value) ? "'" : "";
	return envelope_fail(err, 400, JR_HEADER_MISMATCH, NULL,
			     "Mcp-Param-%s header '%s' does not match "
			     "argument '%s' (%s%s%s)",
			     qn, qh, qk, mark, qv, mark);
}

/* The properties of schema (reached through "properties" only) against
 * args at the same place; *count: annotations met so far. */
static int env_params_walk(json_t *schema, json_t *args, int depth,
			   size_t *count, envelope_header_fn hdr, void *arg,
			   struct envelope_err *err)
{
	json_t *props = json_object_get(schema, "properties");
	if (!json_is_object(props) || depth >= ENVELOPE_MAX_SCHEMA_DEPTH)
		return 0;
	const char *key;
	json_t *sub;
	json_object_foreach(props, key, sub)
	{
		if (!json_is_object(sub))
			continue;
		json_t *value = json_is_object(args)
					? json_object_get(args, key)
					: NULL;
		json_t *mark = json_object_get(sub, ENV_ANNOTATION);
		if (json_is_string(mark) &&
		    env_token(json_string_value(mark))) {
			if (++*count > ENVELOPE_MAX_PARAMS)
				return 0;
			if (env_param_one(json_string_value(mark), key, value,
					  hdr, arg, err) < 0)
				return -1;
		}
		if (env_params_walk(sub, value, depth + 1, count, hdr, arg,
				    err) < 0)
			return -1;
	}
	return 0;
}

int envelope_check_params(json_t *input_schema, json_t *arguments,
			  envelope_header_fn hdr, void *arg,
			  struct envelope_err *err)
{
	memset(err, 0, sizeof *err);
	if (!json_is_object(input_schema))
		return 0;
	size_t count = 0;
	return env_params_walk(input_schema, arguments, 0, &count, hdr, arg,
			       err);
}
