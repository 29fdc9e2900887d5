/*
 * Host and mcpvisor config files shown and written: a masked copy for the
 * dry run's diff, and the text laid out the way the file already was (its
 * indent, inline arrays, final newline), so a diff shows the change only.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
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

/* Whether like writes arrays of plain values on one line ("args": ["-y",
 * "x"]), as people do by hand and Prettier does. */
static bool hosts_inline_arrays(const char *like)
{
	for (const char *p = strchr(like, '['); p; p = strchr(p + 1, '[')) {
		size_t gap = strspn(p + 1, " \t");
		if (p[1 + gap] && p[1 + gap] != '\n' && p[1 + gap] != '\r' &&
		    p[1 + gap] != '{' && p[1 + gap] != '[')
			return true;
	}
	return false;
}

/* With lines at *pos an array opened at the end of line (JSON_INDENT(1)
 * text, one value a line): when its items are plain values, appends them
 * on one line ("[a, b]") and moves *pos past it. */
static bool hosts_collapse(struct buf *b, const char **pos)
{
	const char *p = *pos;
	struct buf one;
	buf_init(&one);
	buf_append(&one, "[", 1);
	for (bool first = true;; first = false) {
		p += strspn(p, " ");
		size_t len = strcspn(p, "\n");
		if (*p == ']') {
			buf_append(&one, p, len);
			p += len;
			break;
		}
		if (len == 0 || *p == '{' || *p == '[') {
			buf_free(&one);
			return false;
		}
		if (!first)
			buf_append(&one, " ", 1);
		buf_append(&one, p, len);
		p += len;
		if (*p == '\n')
			p++;
	}
	buf_append(b, one.data, one.len);
	buf_free(&one);
	*pos = p;
	return true;
}

char *hosts_dump(const json_t *doc, const char *like)
{
	/* The unit of like's indent: the first indented line's. */
	const char *unit = "  ";
	size_t ulen = 2;
	bool newline = true, inline_arrays = false;
	if (like) {
		const char *nl = strchr(like, '\n');
		if (nl && (nl[1] == '\t' || nl[1] == ' ')) {
			unit = nl + 1;
			ulen = nl[1] == '\t' ? 1 : strspn(nl + 1, " ");
			if (ulen > 8)
				ulen = 8;
		}
		size_t n = strlen(like);
		while (n && (like[n - 1] == ' ' || like[n - 1] == '\r'))
			n--;
		newline = n && like[n - 1] == '\n';
		inline_arrays = hosts_inline_arrays(like);
	}
	/* Indent 1 makes every leading space one level deep; strings hold
	 * no raw newline, so leading spaces are indent only. */
	char *one = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	struct buf b;
	buf_init(&b);
	for (const char *line = one; *line;) {
		size_t depth = strspn(line, " ");
		for (size_t d = 0; d < depth; d++)
			buf_append(&b, unit, ulen);
		size_t len = strcspn(line + depth, "\n");
		const char *next = line + depth + len;
		if (inline_arrays && len && line[depth + len - 1] == '[') {
			buf_append(&b, line + depth, len - 1);
			const char *after = *next ? next + 1 : next;
			if (hosts_collapse(&b, &after))
				next = after;
			else
				buf_append(&b, "[", 1);
		} else {
			buf_append(&b, line + depth, len);
		}
		line = next;
		if (*line == '\n') {
			buf_append(&b, "\n", 1);
			line++;
		}
	}
	if (newline)
		buf_append(&b, "\n", 1);
	free(one);
	return buf_steal(&b);
}
