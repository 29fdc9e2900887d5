/*
 * Host and mcpvisor config files shown and written: the masked text of a
 * file for the dry run's diff (config/secrets.h decides what is masked;
 * its bytes otherwise), and a new file laid out the way the other file
 * already is (its indent, inline arrays, final newline).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* What is secret is decided by config/secrets.c, for the dry run as for
 * status and logs. */
json_t *hosts_mask(const json_t *doc, struct secrets *sec)
{
	return secrets_mask_json(doc, sec);
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
