/*
 * What is shown of secret-bearing values, by the rule (secrets.c): a url
 * with its credentials masked, an env value or an argument as `check`
 * shows it, and a host's config file for setup's dry run.
 */
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"
#include "config/secrets_int.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* "k=v&..." (query or fragment, len bytes) with each value, and each
 * segment without '=', as "***". */
static void secrets_mask_pairs(struct buf *b, const char *q, size_t len,
			       struct secrets *sec)
{
	const char *end = q + len;
	while (q < end) {
		size_t seg = strcspn(q, "&");
		if (seg > (size_t)(end - q))
			seg = (size_t)(end - q);
		const char *eq = memchr(q, '=', seg);
		if (eq) {
			buf_append(b, q, (size_t)(eq - q) + 1);
			buf_puts(b, "***");
			secrets_add_n(sec, eq + 1, seg - (size_t)(eq + 1 - q));
		} else if (seg > 0) {
			buf_puts(b, "***");
			secrets_add_n(sec, q, seg);
		}
		q += seg;
		if (q < end && *q == '&') {
			buf_puts(b, "&");
			q++;
		}
	}
}

char *secrets_mask_url(const char *url, struct secrets *sec)
{
	struct buf b;
	buf_init(&b);
	const char *p = strstr(url, "://");
	const char *auth = p ? p + 3 : url;
	size_t alen = strcspn(auth, "/?#");
	buf_append(&b, url, (size_t)(auth - url));
	/* User info may be a password or a token used as a user name: all
	 * of it goes. */
	const char *at = memrchr(auth, '@', alen);
	if (at) {
		secrets_add_n(sec, auth, (size_t)(at - auth));
		buf_puts(&b, "***@");
		buf_append(&b, at + 1, (size_t)(auth + alen - at - 1));
	} else {
		buf_append(&b, auth, alen);
	}
	const char *rest = auth + alen;
	size_t plen = strcspn(rest, "?#");
	buf_append(&b, rest, plen);
	rest += plen;
	/* Query values are where API keys travel. */
	if (*rest == '?') {
		rest++;
		size_t qlen = strcspn(rest, "#");
		buf_puts(&b, "?");
		secrets_mask_pairs(&b, rest, qlen, sec);
		rest += qlen;
	}
	/* A fragment carries tokens as pairs ("#access_token=..."); an
	 * anchor is kept. */
	if (*rest == '#') {
		rest++;
		buf_puts(&b, "#");
		if (strchr(rest, '=')) {
			secrets_mask_pairs(&b, rest, strlen(rest), sec);
		} else if (secrets_value_is_secret(rest)) {
			buf_puts(&b, "***");
			if (sec)
				secrets_add(sec, rest);
		} else {
			buf_puts(&b, rest);
		}
	}
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

/* text with every occurrence of value as "***"; new string. */
static char *secrets_mask_one(const char *text, const char *value)
{
	struct buf b;
	buf_init(&b);
	size_t vlen = strlen(value);
	const char *p = text;
	for (const char *hit; vlen && (hit = strstr(p, value)) != NULL;
	     p = hit + vlen) {
		buf_append(&b, p, (size_t)(hit - p));
		buf_puts(&b, "***");
	}
	buf_puts(&b, p);
	buf_append(&b, "", 0);
	return buf_steal(&b);
}

char *secrets_server_url(const struct server_config *s)
{
	if (s->url == NULL)
		return NULL;
	char *shown = secrets_mask_url(s->url, NULL);
	for (size_t i = 0; s->url_vars && s->url_vars[i]; i++) {
		if (!secrets_var_is_secret(NULL, s->url_vars[i]))
			continue;
		char *m = secrets_mask_one(shown, s->url_vars[i]);
		free(shown);
		shown = m;
	}
	return shown;
}

/* Whether a default written in tpl ("${TOKEN:-...}") is a secret: the
 * template shows it. */
static bool secrets_tpl_default_secret(const char *tpl, bool named)
{
	for (const char *p = strstr(tpl, "${"); p; p = strstr(p, "${")) {
		const char *close = strchr(p, '}');
		if (close == NULL)
			break;
		const char *d = strstr(p, ":-");
		if (d && d < close) {
			char *dv = xstrndup(d + 2, (size_t)(close - d - 2));
			bool secret = secrets_value_is_secret(dv) ||
				      (named && strlen(dv) >= SECRETS_MIN_LEN);
			free(dv);
			if (secret)
				return true;
		}
		p = close + 1;
	}
	return false;
}

char *secrets_env_shown(const char *name, const char *value, const char *tpl)
{
	if (tpl &&
	    !secrets_tpl_default_secret(tpl, secrets_name_is_secret(name)))
		return xstrdup(tpl);
	if (secrets_env_is_secret(name, value, tpl))
		return xstrdup("***");
	if (secrets_is_url(value))
		return secrets_mask_url(value, NULL);
	return xstrdup(value);
}

char *secrets_arg_shown(char *const *args, size_t n, size_t i, const char *tpl)
{
	if (tpl)
		return xstrdup(tpl);
	if (args[i] == NULL)
		return NULL;
	const char *part = secrets_arg_part(args, n, i);
	if (part)
		return xasprintf("%.*s***", (int)(part - args[i]), args[i]);
	if (secrets_is_url(args[i]))
		return secrets_mask_url(args[i], NULL);
	return xstrdup(args[i]);
}

/* "${NAME}" alone (or an editor's "${input:id}", "${env:NAME}") names
 * where a secret comes from, and is no secret itself: masking it would
 * hide the reason an entry stays. */
static bool secrets_only_reference(const char *s)
{
	size_t n = strlen(s);
	return n > 3 && strncmp(s, "${", 2) == 0 && s[n - 1] == '}' &&
	       strchr(s + 2, '$') == NULL && strchr(s, '}') == s + n - 1;
}

/* v shown as "***", its value in sec. */
static void secrets_json_hide(json_t *v, struct secrets *sec)
{
	if (sec)
		secrets_add_credential(sec, json_string_value(v));
	json_string_set(v, "***");
}

/* Every string in v as "***" (a reference too: under a key that names a
 * secret, its very shape is not shown). */
static void secrets_json_all(json_t *v, struct secrets *sec)
{
	if (json_is_string(v)) {
		if (sec && !secrets_only_reference(json_string_value(v)))
			secrets_add(sec, json_string_value(v));
		json_string_set(v, "***");
		return;
	}
	size_t i;
	json_t *x;
	const char *k;
	if (json_is_array(v))
		json_array_foreach(v, i, x) secrets_json_all(x, sec);
	else if (json_is_object(v))
		json_object_foreach(v, k, x) secrets_json_all(x, sec);
}

static void secrets_json_url(json_t *v, struct secrets *sec)
{
	char *m = secrets_mask_url(json_string_value(v), sec);
	json_string_set(v, m);
	free(m);
}

static void secrets_json_walk(json_t *v, struct secrets *sec);

/* An entry's "args": each literal by the rule; "--token=X" keeps its
 * option's name. A ${...} in a host's file is a reference. */
static void secrets_json_args(json_t *a, struct secrets *sec)
{
	size_t n = json_array_size(a);
	char **args = xcalloc(n + 1, sizeof *args);
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		args[i] = xstrdup(s && !strstr(s, "${") ? s : "");
	}
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_array_get(a, i);
		if (!json_is_string(x)) {
			secrets_json_walk(x, sec);
			continue;
		}
		if (args[i][0] == '\0')
			continue; /* a reference, or empty */
		const char *part = secrets_arg_part(args, n, i);
		if (part && sec)
			secrets_add(sec, part);
		else if (sec && secrets_is_url(args[i]))
			free(secrets_mask_url(args[i], sec));
		char *shown = secrets_arg_shown(args, n, i, NULL);
		json_string_set(x, shown);
		free(shown);
	}
	for (size_t i = 0; i < n; i++)
		free(args[i]);
	free(args);
}

/* One server entry of a host's file, whatever the server is called. */
static void secrets_json_entry(json_t *e, struct secrets *sec)
{
	if (!json_is_object(e)) {
		secrets_json_walk(e, sec);
		return;
	}
	const char *k;
	json_t *x;
	json_object_foreach(e, k, x)
	{
		bool env = strcmp(k, "env") == 0;
		if ((env || strcmp(k, "headers") == 0) && json_is_object(x)) {
			const char *name;
			json_t *v;
			json_object_foreach(x, name, v)
			{
				const char *s = json_string_value(v);
				if (s == NULL) {
					secrets_json_all(v, sec);
					continue;
				}
				if (secrets_only_reference(s))
					continue;
				if (!env ||
				    secrets_env_is_secret(name, s, NULL))
					secrets_json_hide(v, sec);
				else if (secrets_is_url(s))
					secrets_json_url(v, sec);
			}
		} else if (strcmp(k, "url") == 0 && json_is_string(x)) {
			secrets_json_url(x, sec);
		} else if (strcmp(k, "args") == 0 && json_is_array(x)) {
			secrets_json_args(x, sec);
		} else if (secrets_name_is_secret(k)) {
			secrets_json_all(x, sec);
		} else {
			secrets_json_walk(x, sec);
		}
	}
}

/* The keys whose objects are servers by name, in the hosts' files. */
static bool secrets_server_map(const char *k)
{
	return strcmp(k, "mcpServers") == 0 || strcmp(k, "servers") == 0 ||
	       strcmp(k, "context_servers") == 0;
}

static void secrets_json_walk(json_t *v, struct secrets *sec)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (secrets_only_reference(s))
			return;
		if (secrets_value_is_secret(s))
			secrets_json_hide(v, sec);
		else if (secrets_is_url(s))
			secrets_json_url(v, sec);
		return;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x) secrets_json_walk(x, sec);
		return;
	}
	json_object_foreach(v, k, x)
	{
		if (secrets_server_map(k) && json_is_object(x)) {
			const char *name;
			json_t *e;
			json_object_foreach(x, name, e)
				secrets_json_entry(e, sec);
		} else if (secrets_name_is_secret(k)) {
			secrets_json_all(x, sec);
		} else {
			secrets_json_walk(x, sec);
		}
	}
}

json_t *secrets_mask_json(const json_t *doc, struct secrets *sec)
{
	json_t *c = json_deep_copy(doc);
	secrets_json_walk(c, sec);
	return c;
}
