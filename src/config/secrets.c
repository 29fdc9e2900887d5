/*
 * Masking of configured secrets in text the runtime did not write: a
 * server's stderr, or an error a server gave. The set lives only as long
 * as one answer that shows such text.
 */
#include "config/secrets.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/xmalloc.h"

struct secrets {
	char **v;
	size_t n, cap;
	bool sorted;
};

struct secrets *secrets_new(void)
{
	return xcalloc(1, sizeof(struct secrets));
}

void secrets_free(struct secrets *sec)
{
	if (sec == NULL)
		return;
	for (size_t i = 0; i < sec->n; i++)
		free(sec->v[i]);
	free(sec->v);
	free(sec);
}

void secrets_add(struct secrets *sec, const char *value)
{
	if (value == NULL || strlen(value) < SECRETS_MIN_LEN)
		return;
	for (size_t i = 0; i < sec->n; i++)
		if (strcmp(sec->v[i], value) == 0)
			return;
	if (sec->n == sec->cap) {
		sec->cap = sec->cap ? sec->cap * 2 : 16;
		sec->v = xrealloc(sec->v, sec->cap * sizeof *sec->v);
	}
	sec->v[sec->n++] = xstrdup(value);
	sec->sorted = false;
}

static void secrets_add_n(struct secrets *sec, const char *p, size_t n)
{
	char *v = xstrndup(p, n);
	secrets_add(sec, v);
	free(v);
}

/* What `check` masks in a url: the user info and every query value. */
static void secrets_add_url(struct secrets *sec, const char *url)
{
	const char *auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	size_t alen = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', alen);
	if (at)
		secrets_add_n(sec, auth, (size_t)(at - auth));
	const char *q = strchr(auth, '?');
	if (q == NULL)
		return;
	q++;
	while (*q && *q != '#') {
		size_t seg = strcspn(q, "&#");
		const char *eq = memchr(q, '=', seg);
		if (eq)
			secrets_add_n(sec, eq + 1, seg - (size_t)(eq + 1 - q));
		q += seg;
		if (*q == '&')
			q++;
	}
}

void secrets_add_server(struct secrets *sec, const struct server_config *s)
{
	if (s->url)
		secrets_add_url(sec, s->url);
	for (size_t i = 0; s->url_vars && s->url_vars[i]; i++)
		secrets_add(sec, s->url_vars[i]);
	for (size_t i = 0; i < s->nenv; i++)
		secrets_add(sec, s->env[i].value);
	for (size_t i = 0; i < s->nheaders; i++) {
		const char *v = s->headers[i].value;
		secrets_add(sec, v);
		/* "Bearer TOKEN": a server that refuses it may quote the
		 * token alone ("invalid token TOKEN"). */
		const char *sp = strchr(v, ' ');
		if (sp)
			secrets_add(sec, sp + strspn(sp, " "));
	}
	for (size_t i = 0; s->args_tpl && i < s->nargs; i++)
		if (s->args_tpl[i])
			secrets_add(sec, s->args[i]);
	/* A container's env is the server's env (above); its args, and an
	 * image from ${VAR} (the command form's is an arg, above): */
	const struct container_config *cc = s->container;
	for (size_t i = 0; cc && cc->args_tpl && i < cc->nargs; i++)
		if (cc->args_tpl[i])
			secrets_add(sec, cc->args[i]);
	if (cc && cc->image_tpl)
		secrets_add(sec, cc->image);
}

void secrets_add_config(struct secrets *sec, const struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nservers; i++)
		secrets_add_server(sec, &cfg->servers[i]);
	for (size_t i = 0; i < cfg->napi_keys; i++)
		secrets_add(sec, cfg->api_keys[i]);
}

static int secrets_longer_first(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
	return la < lb ? 1 : la > lb ? -1 : 0;
}

char *secrets_mask(struct secrets *sec, const char *text)
{
	if (text == NULL)
		return NULL;
	/* A secret that holds another must be masked whole, not leave its
	 * rest: the longest go first. */
	if (!sec->sorted && sec->n > 1) {
		qsort(sec->v, sec->n, sizeof *sec->v, secrets_longer_first);
		sec->sorted = true;
	}
	char *cur = xstrdup(text);
	for (size_t i = 0; i < sec->n; i++) {
		const char *needle = sec->v[i];
		if (strstr(cur, needle) == NULL)
			continue;
		size_t nl = strlen(needle);
		struct buf b;
		buf_init(&b);
		buf_append(&b, "", 0);
		const char *p = cur, *hit;
		while ((hit = strstr(p, needle)) != NULL) {
			buf_append(&b, p, (size_t)(hit - p));
			buf_puts(&b, "***");
			p = hit + nl;
		}
		buf_puts(&b, p);
		free(cur);
		cur = buf_steal(&b);
	}
	return cur;
}
