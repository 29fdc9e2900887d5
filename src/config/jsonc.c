/*
 * JSONC read into a tree of byte spans beside jansson's values: comments
 * (line and block) and trailing commas allowed unless JSONC_STRICT, and
 * otherwise what jansson accepts by default, so a plain JSON file reads
 * the same here and there.
 */
#include "config/jsonc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/xmalloc.h"

struct jsonc {
	const char *text;
	size_t len;
	bool plain;
	struct jsonc_node *root;
};

struct jc_parser {
	const char *s;
	size_t len, i;
	int flags;
	int depth;
	bool plain; /* no comment, trailing comma or BOM met */
	struct jsonc_error *err;
	struct buf str; /* the string being decoded */
};

static int jc_fail(struct jc_parser *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int jc_fail(struct jc_parser *p, size_t at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err->text, sizeof p->err->text, fmt, ap);
	va_end(ap);
	p->err->offset = at;
	return -EINVAL;
}

static void jc_node_free(struct jsonc_node *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		jc_node_free(n->kids[i]);
	free(n->kids);
	free((char *)n->name);
	json_decref(n->value);
	free(n);
}

/* Whitespace and, unless strict, comments. */
static int jc_skip(struct jc_parser *p)
{
	while (p->i < p->len) {
		char c = p->s[p->i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			p->i++;
			continue;
		}
		if (c != '/' || p->i + 1 >= p->len ||
		    (p->s[p->i + 1] != '/' && p->s[p->i + 1] != '*'))
			return 0;
		if (p->flags & JSONC_STRICT)
			return jc_fail(p, p->i,
				       "a comment, which plain JSON does not "
				       "allow");
		p->plain = false;
		if (p->s[p->i + 1] == '/') {
			while (p->i < p->len && p->s[p->i] != '\n' &&
			       p->s[p->i] != '\r')
				p->i++;
			continue;
		}
		const char *end =
			memmem(p->s + p->i + 2, p->len - p->i - 2, "*/", 2);
		if (end == NULL)
			return jc_fail(p, p->i,
				       "a comment without its closing */");
		p->i = (size_t)(end - p->s) + 2;
	}
	return 0;
}

/* The length of the UTF-8 sequence at s (n bytes left) as jansson takes
 * it (no overlong forms, surrogates or code points past U+10FFFF), or 0. */
static size_t jc_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[k] & 0x3F);
	}
	if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) ||
	    v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return len;
}

static int jc_hex4(const char *s, uint32_t *v)
{
	*v = 0;
	for (int k = 0; k < 4; k++) {
		char c = s[k];
		uint32_t d;
		if (c >= '0' && c <= '9')
			d = (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (uint32_t)(c - 'A' + 10);
		else
			return -1;
		*v = *v * 16 + d;
	}
	return 0;
}

static void jc_put_utf8(struct buf *b, uint32_t v)
{
	unsigned char out[4];
	size_t n;
	if (v < 0x80) {
		out[0] = (unsigned char)v;
		n = 1;
	} else if (v < 0x800) {
		out[0] = (unsigned char)(0xC0 | (v >> 6));
		out[1] = (unsigned char)(0x80 | (v & 0x3F));
		n = 2;
	} else if (v < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (v >> 12));
		out[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (v & 0x3F));
		n = 3;
	} else {
		out[0] = (unsigned char)(0xF0 | (v >> 18));
		out[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3F));
		out[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
		out[3] = (unsigned char)(0x80 | (v & 0x3F));
		n = 4;
	}
	buf_append(b, out, n);
}

/* A \u escape at p->i (the backslash), with its low surrogate when it is
 * a high one. */
static int jc_uescape(struct jc_parser *p)
{
	size_t at = p->i;
	uint32_t v, lo;
	if (p->len - p->i < 6 || jc_hex4(p->s + p->i + 2, &v) < 0)
		return jc_fail(p, at, "a \\u escape needs four hex digits");
	p->i += 6;
	if (v == 0)
		return jc_fail(p, at, "\\u0000 in a string");
	if (v >= 0xDC00 && v <= 0xDFFF)
		return jc_fail(p, at, "a \\u escape of a lone low surrogate");
	if (v >= 0xD800 && v <= 0xDBFF) {
		if (p->len - p->i < 6 || p->s[p->i] != '\\' ||
		    p->s[p->i + 1] != 'u' ||
		    jc_hex4(p->s + p->i + 2, &lo) < 0 || lo < 0xDC00 ||
		    lo > 0xDFFF)
			return jc_fail(p, at,
				       "a \\u escape of a high surrogate "
				       "without its low one");
		p->i += 6;
		v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
	}
	jc_put_utf8(&p->str, v);
	return 0;
}

/* The string at p->i (its '"'), decoded into p->str. */
static int jc_string(struct jc_parser *p)
{
	size_t open = p->i++;
	buf_reset(&p->str);
	for (;;) {
		if (p->i >= p->len)
			return jc_fail(p, open,
				       "a string without its closing quote");
		unsigned char c = (unsigned char)p->s[p->i];
		if (c == '"') {
			p->i++;
			return 0;
		}
		if (c < 0x20)
			return jc_fail(p, p->i,
				       "a control character in a string "
				       "(write it as an escape)");
		if (c >= 0x80) {
			size_t n =
				jc_utf8_len((const unsigned char *)p->s + p->i,
					    p->len - p->i);
			if (n == 0)
				return jc_fail(p, p->i,
					       "a string that is not UTF-8");
			buf_append(&p->str, p->s + p->i, n);
			p->i += n;
			continue;
		}
		if (c != '\\') {
			buf_append(&p->str, &p->s[p->i++], 1);
			continue;
		}
		if (p->i + 1 >= p->len)
			return jc_fail(p, open,
				       "a string without its closing quote");
		static const char from[] = "\"\\/bfnrt",
				  to[] = "\"\\/\b\f\n\r\t";
		const char *e = strchr(from, p->s[p->i + 1]);
		if (p->s[p->i + 1] == 'u') {
			int rc = jc_uescape(p);
			if (rc < 0)
				return rc;
		} else if (e && *e) {
			buf_append(&p->str, &to[e - from], 1);
			p->i += 2;
		} else {
			return jc_fail(p, p->i,
				       "an unknown escape in a string");
		}
	}
}

static bool jc_digit(const struct jc_parser *p)
{
	return p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9';
}

static int jc_number(struct jc_parser *p, json_t **out)
{
	size_t st = p->i;
	bool real = false;
	if (p->s[p->i] == '-')
		p->i++;
	if (p->i < p->len && p->s[p->i] == '0')
		p->i++;
	else if (jc_digit(p))
		while (jc_digit(p))
			p->i++;
	else
		return jc_fail(p, st, "a value was expected");
	if (p->i < p->len && p->s[p->i] == '.') {
		p->i++;
		real = true;
		if (!jc_digit(p))
			return jc_fail(p, p->i,
				       "a digit after the decimal point was "
				       "expected");
		while (jc_digit(p))
			p->i++;
	}
	if (p->i < p->len && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		real = true;
		if (p->i < p->len && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (!jc_digit(p))
			return jc_fail(p, p->i,
				       "a digit in the exponent was expected");
		while (jc_digit(p))
			p->i++;
	}
	char *tok = xstrndup(p->s + st, p->i - st);
	int rc = 0;
	errno = 0;
	if (real) {
		double d = strtod(tok, NULL);
		if (errno == ERANGE && (d > 1 || d < -1))
			rc = jc_fail(p, st, "a number too big");
		else
			*out = json_real(d);
	} else {
		long long v = strtoll(tok, NULL, 10);
		if (errno == ERANGE)
			rc = jc_fail(p, st, "an integer too big for 64 bits");
		else
			*out = json_integer(v);
	}
	free(tok);
	return rc;
}

static struct jsonc_node *jc_value(struct jc_parser *p, int *rc);

static void jc_add_kid(struct jsonc_node *n, struct jsonc_node *kid)
{
	n->kids = xrealloc(n->kids, (n->nkids + 1) * sizeof *n->kids);
	n->kids[n->nkids++] = kid;
	kid->parent = n;
}

/* The members or items of the container at p->i ('{' or '['), into n. */
static int jc_container(struct jc_parser *p, struct jsonc_node *n)
{
	bool obj = p->s[p->i] == '{';
	char close = obj ? '}' : ']';
	const char *what = obj ? "an object" : "an array";
	int rc;
	if (++p->depth > JSONC_MAX_DEPTH)
		return jc_fail(p, p->i, "nested deeper than %d",
			       JSONC_MAX_DEPTH);
	n->value = obj ? json_object() : json_array();
	p->i++;
	size_t comma = JSONC_NONE;
	for (;;) {
		if ((rc = jc_skip(p)) < 0)
			return rc;
		if (p->i >= p->len)
			return jc_fail(p, n->start, "%s without its closing %c",
				       what, close);
		if (p->s[p->i] == close) {
			if (comma != JSONC_NONE && (p->flags & JSONC_STRICT))
				return jc_fail(p, comma,
					       "a comma before %c, which plain "
					       "JSON does not allow",
					       close);
			if (comma != JSONC_NONE)
				p->plain = false;
			p->i++;
			break;
		}
		if (n->nkids && comma == JSONC_NONE)
			return jc_fail(p, p->i, "expected , or %c", close);
		size_t name_start = p->i;
		char *name = NULL;
		if (obj) {
			if (p->s[p->i] != '"')
				return jc_fail(
					p, p->i,
					"expected a name in quotes or }");
			if ((rc = jc_string(p)) < 0)
				return rc;
			if (json_object_get(n->value,
					    p->str.data ? p->str.data : ""))
				return jc_fail(p, name_start,
					       "a name that comes twice in "
					       "one object");
			name = xstrndup(p->str.data ? p->str.data : "",
					p->str.len);
			if ((rc = jc_skip(p)) < 0) {
				free(name);
				return rc;
			}
			if (p->i >= p->len || p->s[p->i] != ':') {
				free(name);
				return jc_fail(p, p->i,
					       "expected : after a name");
			}
			p->i++;
			if ((rc = jc_skip(p)) < 0) {
				free(name);
				return rc;
			}
		}
		struct jsonc_node *kid = jc_value(p, &rc);
		if (kid == NULL) {
			free(name);
			return rc;
		}
		jc_add_kid(n, kid);
		if (obj) {
			kid->name = name;
			kid->name_start = name_start;
			json_object_set(n->value, name, kid->value);
		} else {
			json_array_append(n->value, kid->value);
		}
		if ((rc = jc_skip(p)) < 0)
			return rc;
		comma = JSONC_NONE;
		if (p->i < p->len && p->s[p->i] == ',') {
			comma = kid->comma = p->i;
			p->i++;
		}
	}
	p->depth--;
	return 0;
}

static struct jsonc_node *jc_value(struct jc_parser *p, int *rc)
{
	struct jsonc_node *n = xcalloc(1, sizeof *n);
	n->start = n->name_start = p->i;
	n->comma = JSONC_NONE;
	*rc = 0;
	static const struct {
		const char *word;
		size_t len;
	} words[] = {{"true", 4}, {"false", 5}, {"null", 4}};
	char c = p->i < p->len ? p->s[p->i] : '\0';
	if (p->i >= p->len) {
		*rc = jc_fail(p, p->i, "the text ends where a value belongs");
	} else if (c == '{' || c == '[') {
		*rc = jc_container(p, n);
	} else if (c == '"') {
		if ((*rc = jc_string(p)) == 0)
			n->value = json_stringn(p->str.data ? p->str.data : "",
						p->str.len);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		*rc = jc_number(p, &n->value);
	} else {
		int k = c == 't' ? 0 : c == 'f' ? 1 : c == 'n' ? 2 : -1;
		if (k >= 0 && p->len - p->i >= words[k].len &&
		    memcmp(p->s + p->i, words[k].word, words[k].len) == 0) {
			n->value = k == 0   ? json_true()
				   : k == 1 ? json_false()
					    : json_null();
			p->i += words[k].len;
		} else {
			*rc = jc_fail(p, p->i, "a value was expected");
		}
	}
	if (*rc < 0) {
		jc_node_free(n);
		return NULL;
	}
	n->end = p->i;
	return n;
}

/* Line and column of err->offset. */
static void jc_position(const char *s, struct jsonc_error *err)
{
	err->line = 1;
	err->column = 1;
	for (size_t i = 0; i < err->offset; i++) {
		if (s[i] == '\n') {
			err->line++;
			err->column = 1;
		} else if (((unsigned char)s[i] & 0xC0) != 0x80) {
			err->column++;
		}
	}
}

int jsonc_parse(const char *text, size_t len, int flags, struct jsonc **out,
		struct jsonc_error *err)
{
	struct jc_parser p = {.s = text,
			      .len = len,
			      .flags = flags,
			      .plain = true,
			      .err = err};
	struct jsonc_node *root = NULL;
	int rc;
	*out = NULL;
	memset(err, 0, sizeof *err);
	buf_init(&p.str);
	const char *nul = memchr(text, '\0', len);
	if (nul) {
		rc = jc_fail(&p, (size_t)(nul - text), "a NUL byte");
		goto fail;
	}
	/* Editors on Windows may start a file with a byte order mark. */
	if (!(flags & JSONC_STRICT) && len >= 3 &&
	    memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
		p.i = 3;
		p.plain = false;
	}
	if ((rc = jc_skip(&p)) < 0)
		goto fail;
	if ((root = jc_value(&p, &rc)) == NULL)
		goto fail;
	if ((rc = jc_skip(&p)) < 0)
		goto fail;
	if (p.i < len) {
		rc = jc_fail(&p, p.i, "more text after the value");
		goto fail;
	}
	struct jsonc *j = xcalloc(1, sizeof *j);
	j->text = text;
	j->len = len;
	j->plain = p.plain;
	j->root = root;
	*out = j;
	buf_free(&p.str);
	return 0;
fail:
	jc_node_free(root);
	buf_free(&p.str);
	jc_position(text, err);
	return rc;
}

void jsonc_free(struct jsonc *j)
{
	if (j == NULL)
		return;
	jc_node_free(j->root);
	free(j);
}

const struct jsonc_node *jsonc_root(const struct jsonc *j)
{
	return j->root;
}

const char *jsonc_text(const struct jsonc *j, size_t *len)
{
	if (len)
		*len = j->len;
	return j->text;
}

bool jsonc_is_plain(const struct jsonc *j)
{
	return j->plain;
}

const struct jsonc_node *jsonc_member(const struct jsonc_node *obj,
				      const char *name)
{
	if (obj == NULL || !json_is_object(obj->value))
		return NULL;
	for (size_t i = 0; i < obj->nkids; i++)
		if (strcmp(obj->kids[i]->name, name) == 0)
			return obj->kids[i];
	return NULL;
}
