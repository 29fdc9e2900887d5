/*
 * Host and mcpvisor config files shown and written: a masked copy for the
 * dry run's diff (config/secrets.h decides what is masked), and the text
 * laid out the way the file already was (its indent, inline arrays, final
 * newline), so a diff shows the change only.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* What is secret is decided by config/secrets.c, for the dry run as for
 * status and logs. */
json_t *hosts_mask(const json_t *doc, struct secrets *sec)
{
	return secrets_mask_json(doc, sec);
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
