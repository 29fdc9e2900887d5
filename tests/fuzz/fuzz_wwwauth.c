/*
 * libFuzzer harness for the WWW-Authenticate parser (src/auth/www_auth.c),
 * which reads what any MCP server answers with a 401 or 403. Beyond the
 * sanitizers: a refused value leaves the result untouched; an accepted
 * one keeps its limits (WWW_AUTH_MAX_*), has schemes and parameter names
 * of token characters (names lower-cased, each once per challenge), values
 * without control bytes, a token68 only where there are no parameters; and
 * written out again (each value quoted, '"' and '\' escaped) it parses to
 * the same challenges.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/www_auth.h"
#include "util/buf.h"

static void fw_fail(const char *what, const char *in, size_t len)
{
	fprintf(stderr, "FAIL: %s (input of %zu bytes: %.200s)\n", what, len,
		in);
	abort();
}

static bool fw_token(const char *s, bool lower)
{
	if (s == NULL || *s == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (!isalnum(*p) && !strchr("!#$%&'*+-.^_`|~", *p))
			return false;
		if (lower && isupper(*p))
			return false;
	}
	return true;
}

/* w written out as a header value the parser must read back alike. */
static void fw_write(const struct www_auth *w, struct buf *out)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct www_auth_challenge *c = &w->ch[i];
		buf_printf(out, "%s%s", i ? ", " : "", c->scheme);
		if (c->token68)
			buf_printf(out, " %s", c->token68);
		for (size_t k = 0; k < c->nparams; k++) {
			buf_printf(out, "%s%s=\"", k ? ", " : " ",
				   c->params[k].name);
			for (const char *p = c->params[k].value; *p; p++) {
				if (*p == '"' || *p == '\\')
					buf_puts(out, "\\");
				buf_append(out, p, 1);
			}
			buf_puts(out, "\"");
		}
	}
}

static bool fw_same(const struct www_auth *a, const struct www_auth *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct www_auth_challenge *x = &a->ch[i], *y = &b->ch[i];
		if (strcmp(x->scheme, y->scheme) != 0 ||
		    (x->token68 == NULL) != (y->token68 == NULL) ||
		    (x->token68 && strcmp(x->token68, y->token68) != 0) ||
		    x->nparams != y->nparams)
			return false;
		for (size_t k = 0; k < x->nparams; k++)
			if (strcmp(x->params[k].name, y->params[k].name) != 0 ||
			    strcmp(x->params[k].value, y->params[k].value) != 0)
				return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct www_auth w = {(void *)1, 12345};
	int rc = www_auth_parse(in, size, &w);
	if (rc < 0) {
		if (rc != -EINVAL && rc != -E2BIG)
			fw_fail("an error other than -EINVAL/-E2BIG", in, size);
		if (w.ch != (void *)1 || w.n != 12345)
			fw_fail("a refused value changed the result", in, size);
		if (size > WWW_AUTH_MAX_LEN && rc != -E2BIG)
			fw_fail("over WWW_AUTH_MAX_LEN but not -E2BIG", in,
				size);
		return 0;
	}
	if (size > WWW_AUTH_MAX_LEN)
		fw_fail("accepted past WWW_AUTH_MAX_LEN", in, size);
	if (w.n > WWW_AUTH_MAX_CHALLENGES)
		fw_fail("past WWW_AUTH_MAX_CHALLENGES", in, size);
	for (size_t i = 0; i < w.n; i++) {
		const struct www_auth_challenge *c = &w.ch[i];
		if (!fw_token(c->scheme, false))
			fw_fail("a scheme that is no token", in, size);
		if (c->nparams > WWW_AUTH_MAX_PARAMS)
			fw_fail("past WWW_AUTH_MAX_PARAMS", in, size);
		if (c->token68 && c->nparams)
			fw_fail("a token68 and parameters", in, size);
		if (www_auth_find(&w, c->scheme) == NULL)
			fw_fail("a scheme www_auth_find misses", in, size);
		for (size_t k = 0; k < c->nparams; k++) {
			const struct www_auth_param *p = &c->params[k];
			if (!fw_token(p->name, true))
				fw_fail("a parameter name that is no "
					"lower-case token",
					in, size);
			if (www_auth_param(c, p->name) != p->value)
				fw_fail("a parameter named twice", in, size);
			for (const unsigned char *v =
				     (const unsigned char *)p->value;
			     *v; v++)
				if ((*v < 0x20 && *v != '\t') || *v == 0x7f)
					fw_fail("a control byte in a value", in,
						size);
		}
	}
	/* Written out again, it reads the same (when it fits the limit). */
	struct buf out;
	buf_init(&out);
	fw_write(&w, &out);
	if (out.len <= WWW_AUTH_MAX_LEN) {
		struct www_auth w2;
		if (www_auth_parse(out.len ? out.data : "", out.len, &w2) < 0)
			fw_fail("its own writing is refused", in, size);
		if (!fw_same(&w, &w2))
			fw_fail("its own writing reads differently", in, size);
		www_auth_clear(&w2);
	}
	buf_free(&out);
	www_auth_clear(&w);
	return 0;
}
