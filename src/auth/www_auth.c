/* The WWW-Authenticate parser: challenges, auth-params, quoted strings. */
#include "auth/www_auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/buf.h"
#include "util/xmalloc.h"

struct wa_scan {
	const char *s;
	size_t len, pos;
};

static bool wa_tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool wa_t68char(unsigned char c)
{
	return isalnum(c) || (c && strchr("-._~+/", c));
}

static void wa_ows(struct wa_scan *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
		p->pos++;
}

/* Skips OWS and list separators; whether any comma was seen. */
static bool wa_commas(struct wa_scan *p)
{
	bool comma = false;
	for (;;) {
		wa_ows(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			comma = true;
			p->pos++;
			continue;
		}
		return comma;
	}
}

static size_t wa_token_len(const struct wa_scan *p, size_t at)
{
	size_t n = 0;
	while (at + n < p->len && wa_tchar((unsigned char)p->s[at + n]))
		n++;
	return n;
}

/* A quoted-string at p->pos into out (unescaped). -EINVAL when it does
 * not end or holds a control byte. */
static int wa_quoted(struct wa_scan *p, struct buf *out)
{
	p->pos++; /* the opening quote */
	while (p->pos < p->len) {
		unsigned char c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			return 0;
		if (c == '\\') {
			if (p->pos == p->len)
				return -EINVAL;
			c = (unsigned char)p->s[p->pos++];
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return -EINVAL;
		buf_append(out, &c, 1);
	}
	return -EINVAL;
}

static void wa_challenge_clear(struct www_auth_challenge *c)
{
	free(c->scheme);
	free(c->token68);
	for (size_t i = 0; i < c->nparams; i++) {
		free(c->params[i].name);
		free(c->params[i].value);
	}
	free(c->params);
}

void www_auth_clear(struct www_auth *w)
{
	for (size_t i = 0; i < w->n; i++)
		wa_challenge_clear(&w->ch[i]);
	free(w->ch);
	w->ch = NULL;
	w->n = 0;
}

/* Whether an auth-param starts at at: a token, BWS, '=' (a token68's
 * trailing '=' is followed by '=', ',' or the end, never by a value). */
static bool wa_param_at(const struct wa_scan *p, size_t at)
{
	size_t n = wa_token_len(p, at);
	if (n == 0)
		return false;
	size_t i = at + n;
	while (i < p->len && (p->s[i] == ' ' || p->s[i] == '\t'))
		i++;
	if (i == p->len || p->s[i] != '=')
		return false;
	i++;
	while (i < p->len && (p->s[i] == ' ' || p->s[i] == '\t'))
		i++;
	return i < p->len && p->s[i] != '=' && p->s[i] != ',';
}

/* One auth-param at p->pos into c. */
static int wa_param(struct wa_scan *p, struct www_auth_challenge *c)
{
	size_t n = wa_token_len(p, p->pos);
	char *name = xstrndup(p->s + p->pos, n);
	for (char *q = name; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	p->pos += n;
	wa_ows(p);
	p->pos++; /* '=' (wa_param_at saw it) */
	wa_ows(p);
	struct buf v;
	buf_init(&v);
	int rc = 0;
	if (p->s[p->pos] == '"') {
		rc = wa_quoted(p, &v);
	} else {
		size_t vn = wa_token_len(p, p->pos);
		/* A token68-like value (base64 '/', '=') is not a token, but
		 * servers write them unquoted: take the run. */
		while (p->pos + vn < p->len &&
		       (wa_t68char((unsigned char)p->s[p->pos + vn]) ||
			wa_tchar((unsigned char)p->s[p->pos + vn]) ||
			p->s[p->pos + vn] == '='))
			vn++;
		if (vn == 0)
			rc = -EINVAL;
		buf_append(&v, p->s + p->pos, vn);
		p->pos += vn;
	}
	if (rc < 0 || www_auth_param(c, name) != NULL) {
		free(name);
		buf_free(&v);
		return rc;
	}
	if (c->nparams == WWW_AUTH_MAX_PARAMS) {
		free(name);
		buf_free(&v);
		return -E2BIG;
	}
	c->params = xrealloc(c->params, (c->nparams + 1) * sizeof *c->params);
	c->params[c->nparams].name = name;
	c->params[c->nparams].value = buf_steal(&v);
	c->nparams++;
	return 0;
}

int www_auth_parse(const char *s, size_t len, struct www_auth *w)
{
	struct www_auth r = {0};
	struct wa_scan p = {s, len, 0};
	int rc = 0;
	if (len > WWW_AUTH_MAX_LEN)
		return -E2BIG;
	if (memchr(s, '\0', len))
		return -EINVAL;
	wa_commas(&p);
	while (p.pos < p.len) {
		size_t n = wa_token_len(&p, p.pos);
		if (n == 0) {
			rc = -EINVAL;
			goto fail;
		}
		if (r.n == WWW_AUTH_MAX_CHALLENGES) {
			rc = -E2BIG;
			goto fail;
		}
		r.ch = xrealloc(r.ch, (r.n + 1) * sizeof *r.ch);
		struct www_auth_challenge *c = &r.ch[r.n++];
		memset(c, 0, sizeof *c);
		c->scheme = xstrndup(s + p.pos, n);
		p.pos += n;
		size_t before = p.pos;
		wa_ows(&p);
		if (p.pos == p.len)
			break;
		if (p.s[p.pos] != ',' && p.pos == before) {
			rc = -EINVAL; /* "Bearer," is fine, "Bearer\"x" not */
			goto fail;
		}
		/* A token68 right after the scheme. */
		if (p.s[p.pos] != ',' && !wa_param_at(&p, p.pos)) {
			size_t t = 0;
			while (p.pos + t < p.len &&
			       wa_t68char((unsigned char)p.s[p.pos + t]))
				t++;
			while (p.pos + t < p.len && p.s[p.pos + t] == '=')
				t++;
			if (t == 0) {
				rc = -EINVAL;
				goto fail;
			}
			c->token68 = xstrndup(p.s + p.pos, t);
			p.pos += t;
			wa_ows(&p);
			if (p.pos < p.len && p.s[p.pos] != ',') {
				rc = -EINVAL;
				goto fail;
			}
			wa_commas(&p);
			continue;
		}
		/* auth-params, comma separated, until a token that is no
		 * param: the next challenge's scheme. */
		for (;;) {
			wa_commas(&p);
			if (p.pos == p.len || !wa_param_at(&p, p.pos))
				break;
			rc = wa_param(&p, c);
			if (rc < 0)
				goto fail;
			wa_ows(&p);
			if (p.pos < p.len && p.s[p.pos] != ',') {
				rc = -EINVAL;
				goto fail;
			}
		}
	}
	*w = r;
	return 0;
fail:
	www_auth_clear(&r);
	return rc;
}

const struct www_auth_challenge *www_auth_find(const struct www_auth *w,
					       const char *scheme)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcasecmp(w->ch[i].scheme, scheme) == 0)
			return &w->ch[i];
	return NULL;
}

const char *www_auth_param(const struct www_auth_challenge *c, const char *name)
{
	for (size_t i = 0; i < c->nparams; i++)
		if (strcasecmp(c->params[i].name, name) == 0)
			return c->params[i].value;
	return NULL;
}
