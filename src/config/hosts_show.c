/*
 * Host and mcpvisor config files shown and written: what of them is
 * masked, the masked text of a file for the dry run's diff (its bytes
 * otherwise), and a new file laid out the way the other file already is
 * (its indent, inline arrays, final newline).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "util/buf.h"
#include "util/xmalloc.h"

static bool hosts_secret_key(const char *k)
{
	static const char *const words[] = {
		"token",  "secret", "passw", "apikey",	"api_key", "credential",
		"cookie", "oauth",  "auth",  "private", "session", NULL,
	};
	for (size_t i = 0; words[i]; i++)
		if (strcasestr(k, words[i]))
			return true;
	return false;
}

/* "${NAME}" alone (or an editor's "${input:id}") names where a secret
 * comes from, and is no secret itself: masking it in text would hide the
 * reason an entry stays. */
static bool hosts_only_reference(const char *s)
{
	size_t n = strlen(s);
	return n > 3 && strncmp(s, "${", 2) == 0 && s[n - 1] == '}' &&
	       strchr(s + 2, '$') == NULL && strchr(s, '}') == s + n - 1;
}

static void hosts_mask_all(json_t *v, struct secrets *sec)
{
	if (json_is_string(v)) {
		if (sec && !hosts_only_reference(json_string_value(v)))
			secrets_add(sec, json_string_value(v));
		json_string_set(v, "***");
		return;
	}
	size_t i;
	json_t *x;
	const char *k;
	if (json_is_array(v))
		json_array_foreach(v, i, x) hosts_mask_all(x, sec);
	else if (json_is_object(v))
		json_object_foreach(v, k, x) hosts_mask_all(x, sec);
}

/* url with its user info and query values as "***". */
static void hosts_mask_url(json_t *v, struct secrets *sec)
{
	const char *url = json_string_value(v);
	struct buf b;
	buf_init(&b);
	const char *auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	size_t alen = strcspn(auth, "/?#");
	const char *at = memchr(auth, '@', alen);
	if (at) {
		char *ui = xstrndup(auth, (size_t)(at - auth));
		if (sec)
			secrets_add(sec, ui);
		free(ui);
		buf_append(&b, url, (size_t)(auth - url));
		buf_append(&b, "***", 3);
		buf_append(&b, at, strlen(at));
	} else {
		buf_append(&b, url, strlen(url));
	}
	char *t = buf_steal(&b);
	char *q = strchr(t, '?');
	if (q) {
		struct buf o;
		buf_init(&o);
		buf_append(&o, t, (size_t)(q + 1 - t));
		for (char *s = q + 1; *s;) {
			size_t plen = strcspn(s, "&#");
			char *eq = memchr(s, '=', plen);
			if (eq) {
				char *val = xstrndup(
					eq + 1, plen - (size_t)(eq + 1 - s));
				if (sec)
					secrets_add(sec, val);
				free(val);
				buf_append(&o, s, (size_t)(eq + 1 - s));
				buf_append(&o, "***", 3);
			} else {
				buf_append(&o, s, plen);
			}
			s += plen;
			if (*s == '#') {
				buf_append(&o, s, strlen(s));
				break;
			}
			if (*s == '&')
				buf_append(&o, s++, 1);
		}
		free(t);
		t = buf_steal(&o);
	}
	json_string_set(v, t);
	free(t);
}

static void hosts_mask_walk(json_t *v, struct secrets *sec)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_array(v)) {
		json_array_foreach(v, i, x) hosts_mask_walk(x, sec);
		return;
	}
	json_object_foreach(v, k, x)
	{
		if (((strcmp(k, "env") == 0 || strcmp(k, "headers") == 0) &&
		     json_is_object(x)) ||
		    hosts_secret_key(k))
			hosts_mask_all(x, sec);
		else if (strcmp(k, "url") == 0 && json_is_string(x))
			hosts_mask_url(x, sec);
		else
			hosts_mask_walk(x, sec);
	}
}

json_t *hosts_mask(const json_t *doc, struct secrets *sec)
{
	json_t *c = json_deep_copy(doc);
	hosts_mask_walk(c, sec);
	return c;
}

/* Replaces in e each string of n (as read) that masked (hosts_mask's
 * copy of it) shows otherwise. */
static void hosts_mask_node(struct jsonc_edit *e, const struct jsonc_node *n,
			    const json_t *masked)
{
	if (json_is_string(n->value)) {
		if (masked && !json_equal(n->value, masked))
			jsonc_edit_set(e, n, NULL, masked);
		return;
	}
	for (size_t i = 0; i < n->nkids; i++) {
		const struct jsonc_node *k = n->kids[i];
		hosts_mask_node(e, k,
				k->name ? json_object_get(masked, k->name)
					: json_array_get(masked, i));
	}
}

/* The comment [p, end) into b, each quoted value after a ':' in it as
 * "***". */
static void hosts_mask_comment(struct buf *b, const char *p, const char *end)
{
	while (p < end) {
		const char *q = p + 1;
		while (*p == ':' && q < end && (*q == ' ' || *q == '\t'))
			q++;
		const char *r = q + 1;
		while (*p == ':' && q < end && *q == '"' && r < end &&
		       *r != '"')
			r += *r == '\\' && r + 1 < end ? 2 : 1;
		if (*p == ':' && q < end && *q == '"' && r < end) {
			buf_append(b, p, (size_t)(q + 1 - p));
			buf_puts(b, "***\"");
			p = r + 1;
			continue;
		}
		buf_append(b, p++, 1);
	}
}

/* t (JSONC) with the values of what is commented out shown as "***": a
 * commented-out entry ("// \"KEY\": \"sk-...\"") is config kept for later,
 * its values as secret as those in use, and nothing says which are not.
 * Caller frees. */
static char *hosts_mask_comments(const char *t)
{
	struct buf b;
	buf_init(&b);
	for (const char *p = t; *p;) {
		const char *q = p + 1;
		if (*p == '"') {
			while (*q && *q != '"')
				q += *q == '\\' && q[1] ? 2 : 1;
			q += *q ? 1 : 0;
		} else if (p[0] == '/' && p[1] == '/') {
			q = p + strcspn(p, "\r\n");
		} else if (p[0] == '/' && p[1] == '*') {
			q = strstr(p + 2, "*/");
			q = q ? q + 2 : p + strlen(p);
		}
		if (*p == '/' && (p[1] == '/' || p[1] == '*'))
			hosts_mask_comment(&b, p, q);
		else
			buf_append(&b, p, (size_t)(q - p));
		p = q;
	}
	return buf_steal(&b);
}

char *hosts_mask_text(const char *text, size_t len, struct secrets *sec)
{
	struct jsonc *j = NULL;
	struct jsonc_error err;
	char *out = NULL;
	size_t olen;
	if (jsonc_parse(text, len, 0, &j, &err) == 0) {
		json_t *m = hosts_mask(jsonc_root(j)->value, sec);
		struct jsonc_edit *e = jsonc_edit_new(j);
		hosts_mask_node(e, jsonc_root(j), m);
		if (jsonc_edit_finish(e, &out, &olen) < 0)
			out = NULL;
		json_decref(m);
		jsonc_free(j);
	}
	/* Not JSONC (never shown: setup refuses it): masked as text. */
	if (out == NULL)
		out = xstrndup(text, len);
	char *bare = hosts_mask_comments(out);
	char *masked = secrets_mask(sec, bare);
	free(bare);
	free(out);
	return masked;
}

char *hosts_dump(const json_t *doc, const char *like)
{
	char *t = jsonc_layout(doc, like, "");
	bool newline = true;
	if (like) {
		size_t n = strlen(like);
		while (n && (like[n - 1] == ' ' || like[n - 1] == '\r'))
			n--;
		newline = n && like[n - 1] == '\n';
	}
	if (!newline)
		return t;
	char *out = xasprintf("%s%s", t, jsonc_eol(like));
	free(t);
	return out;
}
