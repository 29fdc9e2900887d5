/*
 * A server's filters: reads and checks "tools", "prompts" and "resources"
 * ({"allow": [...], "deny": [...]}) and matches their '*' patterns.
 */
#include "config/filter.h"

#include <stdlib.h>
#include <string.h>

#include "config/config_int.h"
#include "util/xmalloc.h"

bool config_glob_match(const char *pattern, const char *text)
{
	const char *p = pattern, *t = text;
	/* Where the last '*' was (the pattern after it) and the text it
	 * last started to swallow: on a mismatch it swallows one more
	 * character and the rest is tried again. Only the last star needs
	 * backtracking: whatever an earlier one could swallow, the later
	 * one can too. At most strlen(pattern) * strlen(text) steps. */
	const char *star = NULL, *swallowed = NULL;
	while (*t) {
		if (*p == '*') {
			star = ++p;
			swallowed = t;
		} else if (*p == *t) {
			p++;
			t++;
		} else if (star) {
			p = star;
			t = ++swallowed;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

static bool cfg_filter_any(char *const *pats, size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (config_glob_match(pats[i], text))
			return true;
	return false;
}

bool config_filter_keeps(const struct config_filter *f, const char *text)
{
	if (text == NULL)
		return !config_filter_active(f);
	if (cfg_filter_any(f->deny, f->ndeny, text))
		return false;
	return f->nallow == 0 || cfg_filter_any(f->allow, f->nallow, text);
}

bool config_filter_active(const struct config_filter *f)
{
	return f->nallow > 0 || f->ndeny > 0;
}

static json_t *cfg_filter_list(char *const *pats, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(pats[i]));
	return a;
}

json_t *config_filter_json(const struct config_filter *f)
{
	if (!config_filter_active(f))
		return NULL;
	json_t *o = json_object();
	if (f->nallow)
		json_object_set_new(o, "allow",
				    cfg_filter_list(f->allow, f->nallow));
	if (f->ndeny)
		json_object_set_new(o, "deny",
				    cfg_filter_list(f->deny, f->ndeny));
	return o;
}

json_t *config_filters_json(const struct server_config *s)
{
	json_t *o = json_object();
	json_t *t = config_filter_json(&s->tools);
	json_t *p = config_filter_json(&s->prompts);
	json_t *r = config_filter_json(&s->resources);
	if (t)
		json_object_set_new(o, "tools", t);
	if (p)
		json_object_set_new(o, "prompts", p);
	if (r)
		json_object_set_new(o, "resources", r);
	return o;
}

static void cfg_filter_free_list(char **pats, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(pats[i]);
	free(pats);
}

void config_filter_clear(struct config_filter *f)
{
	cfg_filter_free_list(f->allow, f->nallow);
	cfg_filter_free_list(f->deny, f->ndeny);
	memset(f, 0, sizeof *f);
}

/* ---- reading ---- */

/* A tool or prompt pattern that starts with the server's prefix and "__"
 * was most likely written as clients see the name: it matches the
 * server's own names, which do not carry the prefix. Said, not refused:
 * a server may name its tools so. */
static void cfg_filter_warn_prefixed(struct config_srv *c, const char *field,
				     const char *pat)
{
	const char *prefix = c->s->prefix ? c->s->prefix : c->s->name;
	size_t plen = strlen(prefix);
	if (plen == 0 || strcmp(field, "resources") == 0 ||
	    strncmp(pat, prefix, plen) != 0 || strncmp(pat + plen, "__", 2))
		return;
	char *shown = config_show(pat);
	config_warn(c->cfg,
		    "%s: server \"%s\": field \"%s\": pattern \"%s\" starts "
		    "with the prefix \"%s__\"; patterns match the server's "
		    "own names, without the prefix",
		    c->cfg->path, c->shown, field, shown, prefix);
	free(shown);
}

/* One pattern: a non-empty string without control characters (a NUL
 * would cut it short) within the limit. -1 on an error (set). */
static int cfg_filter_check(struct config_srv *c, const char *field,
			    const char *key, size_t i, const json_t *v)
{
	if (!json_is_string(v)) {
		config_srv_fail(c, field,
				"\"%s\": item %zu: expected a string, got %s",
				key, i, config_type_name(v));
		return -1;
	}
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	if (len == 0) {
		config_srv_fail(c, field,
				"\"%s\": item %zu: an empty pattern matches "
				"nothing; \"*\" matches everything",
				key, i);
		return -1;
	}
	if (len > CONFIG_FILTER_MAX_PATTERN) {
		config_srv_fail(c, field,
				"\"%s\": item %zu: longer than %d bytes", key,
				i, CONFIG_FILTER_MAX_PATTERN);
		return -1;
	}
	for (size_t j = 0; j < len; j++) {
		if ((unsigned char)s[j] < 0x20 || s[j] == 0x7f) {
			config_srv_fail(c, field,
					"\"%s\": item %zu: holds a control "
					"character",
					key, i);
			return -1;
		}
	}
	return 0;
}

/* One list of patterns (allow or deny). -1 on an error (set). */
static int cfg_filter_read_list(struct config_srv *c, const char *field,
				const char *key, const json_t *a, char ***out,
				size_t *nout)
{
	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		config_srv_fail(c, field,
				"\"%s\": expected an array of name patterns "
				"(strings), got %s",
				key, config_type_name(a));
		return -1;
	}
	size_t n = json_array_size(a);
	if (n > CONFIG_FILTER_MAX_PATTERNS) {
		config_srv_fail(c, field,
				"\"%s\": %zu patterns, at most %d are allowed",
				key, n, CONFIG_FILTER_MAX_PATTERNS);
		return -1;
	}
	char **pats = xcalloc(n + 1, sizeof *pats);
	size_t k = 0;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const json_t *v = json_array_get(a, i);
		rc = cfg_filter_check(c, field, key, i, v);
		if (rc == 0) {
			pats[k++] = xstrdup(json_string_value(v));
			cfg_filter_warn_prefixed(c, field, pats[k - 1]);
		}
	}
	*out = pats;
	*nout = k;
	return rc;
}

void config_srv_parse_filter(struct config_srv *c, const json_t *obj,
			     const char *field, struct config_filter *f)
{
	const json_t *v = json_object_get(obj, field);
	if (v == NULL || json_is_null(v))
		return;
	if (!json_is_object(v)) {
		config_srv_fail(c, field,
				"expected an object with \"allow\" and/or "
				"\"deny\" (arrays of name patterns), got %s",
				config_type_name(v));
		return;
	}
	/* A misspelt list must not quietly let through what it was meant
	 * to hold back: anything but allow and deny is an error. */
	const char *key;
	json_t *x;
	json_object_foreach((json_t *)v, key, x)
	{
		if (strcmp(key, "allow") == 0 || strcmp(key, "deny") == 0)
			continue;
		char *shown = config_show(key);
		config_srv_fail(c, field,
				"unknown key \"%s\": a filter takes only "
				"\"allow\" and \"deny\"",
				shown);
		free(shown);
		return;
	}
	if (cfg_filter_read_list(c, field, "allow", json_object_get(v, "allow"),
				 &f->allow, &f->nallow) < 0)
		return;
	cfg_filter_read_list(c, field, "deny", json_object_get(v, "deny"),
			     &f->deny, &f->ndeny);
}
