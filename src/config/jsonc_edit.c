/*
 * Text edits of a JSONC document: each edit becomes byte ranges replaced
 * in the text, and the commas, blanks and lines around a member that goes
 * or comes are settled per object, so the text keeps every other byte and
 * stays valid (no comma is left without a member after it unless the
 * object had a trailing comma before).
 */
#include "config/jsonc_edit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/xmalloc.h"

/* Indents longer than this are taken as this: no file nests that wide. */
#define JE_MAX_UNIT 8

/* How a text lays out JSON. */
struct je_style {
	char unit[JE_MAX_UNIT + 1]; /* one level of indent */
	bool inline_arrays;	    /* ["-y", "x"] on one line */
	bool spaced;		    /* ": " and ", " (else ":" and ",") */
	const char *eol;
};

enum je_kind { JE_DROP, JE_SET, JE_ADD };

struct je_op {
	enum je_kind kind;
	const struct jsonc_node *node; /* JE_ADD: the object */
	char *name;
	json_t *value;
};

/* Bytes [start, end) of the text replaced by text (start == end: an
 * insertion). seq keeps insertions at one place in the order made. */
struct je_range {
	size_t start, end;
	char *text;
	size_t seq;
};

struct jsonc_edit {
	const char *s;
	size_t len;
	struct je_style st;
	struct je_op *ops;
	size_t nops;
	struct je_range *r;
	size_t nr;
};

static bool je_blank(char c)
{
	return c == ' ' || c == '\t';
}

const char *jsonc_eol(const char *like)
{
	const char *nl = like ? strchr(like, '\n') : NULL;
	return nl && nl > like && nl[-1] == '\r' ? "\r\n" : "\n";
}

/* Whether like writes arrays of plain values on one line ("args": ["-y",
 * "x"]), as people do by hand and Prettier does. */
static bool je_inline_arrays(const char *like)
{
	for (const char *p = strchr(like, '['); p; p = strchr(p + 1, '[')) {
		size_t gap = strspn(p + 1, " \t");
		if (p[1 + gap] && p[1 + gap] != '\n' && p[1 + gap] != '\r' &&
		    p[1 + gap] != '{' && p[1 + gap] != '[' && p[1 + gap] != ']')
			return true;
	}
	return false;
}

static void je_style_of(const char *like, struct je_style *st)
{
	strcpy(st->unit, "  ");
	st->inline_arrays = false;
	st->spaced = true;
	st->eol = jsonc_eol(like);
	if (like == NULL)
		return;
	/* The unit: the first indented line that holds something. */
	for (const char *nl = strchr(like, '\n'); nl;
	     nl = strchr(nl + 1, '\n')) {
		size_t n = strspn(nl + 1, " \t");
		char next = nl[1 + n];
		if (n == 0 || next == '\0' || next == '\n' || next == '\r')
			continue;
		if (nl[1] == '\t')
			strcpy(st->unit, "\t");
		else {
			n = strspn(nl + 1, " ");
			n = n > JE_MAX_UNIT ? JE_MAX_UNIT : n;
			memset(st->unit, ' ', n);
			st->unit[n] = '\0';
		}
		break;
	}
	st->inline_arrays = je_inline_arrays(like);
	/* Most names' colons followed by a blank, or not (minified). */
	long spaced = 0;
	for (const char *c = strstr(like, "\":"); c; c = strstr(c + 2, "\":"))
		spaced += c[2] && strchr(" \t\r\n", c[2]) ? 1 : -1;
	st->spaced = spaced >= 0;
}

/* st as the members of obj have it: a colon followed by a blank or not
 * (the text's most common way when it has none). */
static struct je_style je_style_in(const struct jsonc_edit *e,
				   const struct jsonc_node *obj)
{
	struct je_style st = e->st;
	if (obj && obj->nkids && obj->kids[0]->name)
		st.spaced = e->s[obj->kids[0]->start - 1] != ':';
	return st;
}

/* With lines at *pos an array opened at the end of a line (JSON_INDENT(1)
 * text, one value a line): when its items are plain values, appends them
 * on one line ("[a, b]") and moves *pos past it. */
static bool je_collapse(struct buf *b, const char **pos, bool spaced)
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
		if (!first && spaced)
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

/* v laid out in st; pretty: one member or item a line, each line after
 * the first starting with indent; else on one line. */
static char *je_render(const json_t *v, const struct je_style *st,
		       const char *indent, bool pretty)
{
	size_t flags = JSON_ENCODE_ANY | JSON_PRESERVE_ORDER |
		       (st->spaced ? 0 : JSON_COMPACT);
	if (!pretty || !(json_is_object(v) || json_is_array(v)))
		return json_dumps(v, flags);
	/* Indent 1 makes every leading space one level deep; strings hold
	 * no raw newline, so leading spaces are indent only. */
	char *one = json_dumps(v, flags | JSON_INDENT(1));
	size_t ulen = strlen(st->unit);
	struct buf b;
	buf_init(&b);
	for (const char *line = one; *line;) {
		size_t depth = strspn(line, " ");
		if (line != one)
			buf_puts(&b, indent);
		for (size_t d = 0; d < depth; d++)
			buf_append(&b, st->unit, ulen);
		size_t len = strcspn(line + depth, "\n");
		const char *next = line + depth + len;
		if (st->inline_arrays && len && line[depth + len - 1] == '[') {
			buf_append(&b, line + depth, len - 1);
			const char *after = *next ? next + 1 : next;
			if (je_collapse(&b, &after, st->spaced))
				next = after;
			else
				buf_append(&b, "[", 1);
		} else {
			buf_append(&b, line + depth, len);
		}
		line = next;
		if (*line == '\n') {
			buf_puts(&b, st->eol);
			line++;
		}
	}
	free(one);
	return buf_steal(&b);
}

char *jsonc_layout(const json_t *v, const char *like, const char *indent)
{
	struct je_style st;
	je_style_of(like, &st);
	return je_render(v, &st, indent, true);
}

struct jsonc_edit *jsonc_edit_new(const struct jsonc *j)
{
	struct jsonc_edit *e = xcalloc(1, sizeof *e);
	const char *text = jsonc_text(j, &e->len);
	/* A copy ending in NUL (the reader's text need not; it has no NUL
	 * inside), so the style is read with string functions. */
	e->s = xstrndup(text, e->len);
	je_style_of(e->s, &e->st);
	return e;
}

void jsonc_edit_free(struct jsonc_edit *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < e->nops; i++) {
		free(e->ops[i].name);
		json_decref(e->ops[i].value);
	}
	for (size_t i = 0; i < e->nr; i++)
		free(e->r[i].text);
	free(e->ops);
	free(e->r);
	free((char *)e->s);
	free(e);
}

static void je_op(struct jsonc_edit *e, enum je_kind kind,
		  const struct jsonc_node *n, const char *name,
		  const json_t *value)
{
	e->ops = xrealloc(e->ops, (e->nops + 1) * sizeof *e->ops);
	e->ops[e->nops++] = (struct je_op){
		kind,
		n,
		name ? xstrdup(name) : NULL,
		value ? json_deep_copy(value) : NULL,
	};
}

void jsonc_edit_drop(struct jsonc_edit *e, const struct jsonc_node *m)
{
	je_op(e, JE_DROP, m, NULL, NULL);
}

void jsonc_edit_set(struct jsonc_edit *e, const struct jsonc_node *n,
		    const char *name, const json_t *value)
{
	je_op(e, JE_SET, n, name, value);
}

void jsonc_edit_add(struct jsonc_edit *e, const struct jsonc_node *obj,
		    const char *name, const json_t *value)
{
	je_op(e, JE_ADD, obj, name, value);
}

/* Takes ownership of text. */
static void je_put(struct jsonc_edit *e, size_t start, size_t end, char *text)
{
	e->r = xrealloc(e->r, (e->nr + 1) * sizeof *e->r);
	e->r[e->nr] = (struct je_range){start, end, text, e->nr};
	e->nr++;
}

static size_t je_line_start(const struct jsonc_edit *e, size_t off)
{
	while (off > 0 && e->s[off - 1] != '\n')
		off--;
	return off;
}

/* Whether only blanks come before off on its line. */
static bool je_starts_line(const struct jsonc_edit *e, size_t off)
{
	for (size_t i = je_line_start(e, off); i < off; i++)
		if (!je_blank(e->s[i]))
			return false;
	return true;
}

/* The blanks before off on its line (they are all there is). */
static char *je_indent_at(const struct jsonc_edit *e, size_t off)
{
	size_t ls = je_line_start(e, off);
	return je_starts_line(e, off) ? xstrndup(e->s + ls, off - ls)
				      : xstrdup("");
}

/* Past the blanks from off. */
static size_t je_skip_blanks(const struct jsonc_edit *e, size_t off)
{
	while (off < e->len && je_blank(e->s[off]))
		off++;
	return off;
}

/* Whether off (past blanks) is at a line's end: '\n', "\r\n" or the
 * text's end; *next: past that line break. */
static bool je_at_eol(const struct jsonc_edit *e, size_t off, size_t *next)
{
	if (off < e->len && e->s[off] == '\r')
		off++;
	if (off < e->len && e->s[off] != '\n')
		return false;
	*next = off < e->len ? off + 1 : off;
	return true;
}

/* The ranges that take member m out. */
static void je_drop_member(struct jsonc_edit *e, const struct jsonc_node *m)
{
	size_t a = m->name_start, b = m->end, next;
	if (m->comma != JSONC_NONE) {
		bool plain = true;
		for (size_t i = b; i < m->comma && plain; i++)
			plain = strchr(" \t\r\n", e->s[i]) != NULL;
		/* A comment between value and comma stays. */
		if (plain)
			b = m->comma + 1;
		else
			je_put(e, m->comma, m->comma + 1, xstrdup(""));
	}
	bool alone = je_starts_line(e, a);
	size_t after = je_skip_blanks(e, b);
	if (alone && je_at_eol(e, after, &next)) {
		/* Its lines are its own: they go whole. */
		je_put(e, je_line_start(e, a), next, xstrdup(""));
		return;
	}
	char c = after < e->len ? e->s[after] : '\0';
	if (c != '\0' && c != '\r' && c != '\n' && c != '}' && c != ']') {
		/* A member or comment follows on the line: it takes this
		 * member's place. */
		b = after;
	} else if (!alone) {
		while (a > 0 && je_blank(e->s[a - 1]))
			a--;
	}
	je_put(e, a, b, xstrdup(""));
}

/* Where members added after kid (the last that stays) go when they take
 * lines of their own: the end of its line, past its comma and a comment
 * there; right after it when something else follows on the line. */
static size_t je_after_member(const struct jsonc_edit *e,
			      const struct jsonc_node *kid)
{
	size_t after = kid->comma != JSONC_NONE ? kid->comma + 1 : kid->end;
	size_t p = after, next;
	for (;;) {
		p = je_skip_blanks(e, p);
		if (je_at_eol(e, p, &next))
			return p;
		if (p + 1 < e->len && e->s[p] == '/' && e->s[p + 1] == '/') {
			while (p < e->len && e->s[p] != '\n' && e->s[p] != '\r')
				p++;
			continue;
		}
		if (p + 1 < e->len && e->s[p] == '/' && e->s[p + 1] == '*') {
			const char *end =
				memmem(e->s + p + 2, e->len - p - 2, "*/", 2);
			const char *nl = memchr(e->s + p, '\n', e->len - p);
			if (end && (nl == NULL || nl > end)) {
				p = (size_t)(end - e->s) + 2;
				continue;
			}
		}
		return after;
	}
}

/* Where the comma after obj's member k ends when the members after it
 * all go: past the blanks to the next member, when that one shares the
 * comma's line ("a": 1, "b": 2 loses ", " with "b"). */
static size_t je_past_comma(const struct jsonc_edit *e,
			    const struct jsonc_node *obj, long k)
{
	const struct jsonc_node *kid = obj->kids[k];
	size_t end = kid->comma + 1;
	if ((size_t)k + 1 >= obj->nkids)
		return end;
	size_t next = obj->kids[k + 1]->name_start;
	if (je_skip_blanks(e, end) == next && !je_starts_line(e, next))
		return next;
	return end;
}

/* The members of obj that go and come, with the commas and lines about
 * them. */
static void je_object(struct jsonc_edit *e, const struct jsonc_node *obj)
{
	size_t n = obj->nkids;
	bool *gone = xcalloc(n ? n : 1, sizeof *gone);
	size_t nadd = 0;
	for (size_t i = 0; i < e->nops; i++) {
		const struct je_op *op = &e->ops[i];
		if (op->kind == JE_ADD && op->node == obj)
			nadd++;
		if (op->kind != JE_DROP || op->node->parent != obj)
			continue;
		for (size_t k = 0; k < n; k++)
			if (obj->kids[k] == op->node)
				gone[k] = true;
	}
	long last = -1; /* the last member that stays */
	for (size_t k = 0; k < n; k++) {
		if (gone[k])
			je_drop_member(e, obj->kids[k]);
		else
			last = (long)k;
	}
	bool trailing = n && obj->kids[n - 1]->comma != JSONC_NONE;
	const struct jsonc_node *lk = last >= 0 ? obj->kids[last] : NULL;
	struct je_style st = je_style_in(e, obj);
	if (nadd == 0) {
		/* The last member went: the one now last keeps no comma,
		 * unless the object had a trailing one. */
		if (n && gone[n - 1] && lk && !trailing)
			je_put(e, lk->comma, je_past_comma(e, obj, last),
			       xstrdup(""));
		free(gone);
		return;
	}
	/* Added members take lines of their own where the members have
	 * theirs (or where the object starts its line, when it is empty). */
	bool pretty =
		n ? je_starts_line(e, obj->kids[0]->name_start)
		  : obj->parent == NULL || je_starts_line(e, obj->name_start);
	char *outer = je_indent_at(e, obj->name_start);
	char *indent =
		pretty && n
			? je_indent_at(e, obj->kids[lk ? last : 0]->name_start)
			: xasprintf("%s%s", outer, st.unit);
	const char *sep = st.spaced ? ": " : ":";
	struct buf b;
	buf_init(&b);
	bool first = true;
	for (size_t i = 0; i < e->nops; i++) {
		const struct je_op *op = &e->ops[i];
		if (op->kind != JE_ADD || op->node != obj)
			continue;
		json_t *name = json_string(op->name);
		char *ntext = json_dumps(name, JSON_ENCODE_ANY);
		char *vtext = je_render(op->value, &st, indent, pretty);
		if (!first)
			buf_puts(&b, ",");
		if (pretty && (lk || !first))
			buf_puts(&b, st.eol);
		if (pretty)
			buf_puts(&b, indent);
		else if ((lk || !first) && st.spaced)
			buf_puts(&b, " ");
		buf_printf(&b, "%s%s%s", ntext, sep, vtext);
		first = false;
		json_decref(name);
		free(ntext);
		free(vtext);
	}
	if (trailing)
		buf_puts(&b, ",");
	size_t at;
	size_t close = obj->end - 1;
	if (lk) {
		if (lk->comma == JSONC_NONE)
			je_put(e, lk->end, lk->end, xstrdup(","));
		at = pretty		       ? je_after_member(e, lk)
		     : lk->comma != JSONC_NONE ? lk->comma + 1
					       : lk->end;
	} else if (!pretty) {
		at = obj->start + 1;
	} else if (je_starts_line(e, close)) {
		at = je_line_start(e, close);
		buf_puts(&b, st.eol);
	} else {
		at = close;
		char *head = xasprintf("%s%s", st.eol, b.data);
		buf_reset(&b);
		buf_printf(&b, "%s%s%s", head, st.eol, outer);
		free(head);
	}
	je_put(e, at, at, buf_steal(&b));
	free(outer);
	free(indent);
	free(gone);
}

static int je_range_cmp(const void *a, const void *b)
{
	const struct je_range *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* An insertion before what is replaced at the same place. */
	bool xi = x->start == x->end, yi = y->start == y->end;
	if (xi != yi)
		return xi ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int jsonc_edit_finish(struct jsonc_edit *e, char **out, size_t *len)
{
	*out = NULL;
	for (size_t i = 0; i < e->nops; i++) {
		const struct je_op *op = &e->ops[i];
		if (op->kind != JE_SET)
			continue;
		const struct jsonc_node *n = op->node;
		size_t from = op->name ? n->name_start : n->start;
		struct je_style st = je_style_in(e, n->name ? n->parent : NULL);
		char *ind = je_indent_at(e, from);
		char *v =
			je_render(op->value, &st, ind, je_starts_line(e, from));
		char *text = v;
		if (op->name) {
			json_t *name = json_string(op->name);
			char *ntext = json_dumps(name, JSON_ENCODE_ANY);
			text = xasprintf("%s%s%s", ntext,
					 st.spaced ? ": " : ":", v);
			free(v);
			free(ntext);
			json_decref(name);
		}
		free(ind);
		je_put(e, from, n->end, text);
	}
	/* Each object whose members go or come, once. */
	for (size_t i = 0; i < e->nops; i++) {
		const struct je_op *op = &e->ops[i];
		const struct jsonc_node *obj = op->kind == JE_ADD ? op->node
					       : op->kind == JE_DROP
						       ? op->node->parent
						       : NULL;
		bool seen = obj == NULL;
		for (size_t k = 0; k < i && !seen; k++) {
			const struct je_op *o = &e->ops[k];
			seen = (o->kind == JE_ADD && o->node == obj) ||
			       (o->kind == JE_DROP && o->node->parent == obj);
		}
		if (!seen)
			je_object(e, obj);
	}
	if (e->nr)
		qsort(e->r, e->nr, sizeof *e->r, je_range_cmp);
	struct buf b;
	buf_init(&b);
	size_t at = 0;
	int rc = 0;
	for (size_t i = 0; i < e->nr && rc == 0; i++) {
		struct je_range *r = &e->r[i];
		/* Blanks two members' drops both take are taken once. */
		if (r->start < at && r->text[0] == '\0' && r->start < r->end &&
		    i > 0 && e->r[i - 1].text[0] == '\0') {
			at = r->end > at ? r->end : at;
			continue;
		}
		if (r->start < at) {
			rc = -EINVAL;
			break;
		}
		buf_append(&b, e->s + at, r->start - at);
		buf_puts(&b, r->text);
		at = r->end;
	}
	if (rc == 0) {
		buf_append(&b, e->s + at, e->len - at);
		*len = b.len;
		*out = buf_steal(&b);
	} else {
		buf_free(&b);
	}
	jsonc_edit_free(e);
	return rc;
}
