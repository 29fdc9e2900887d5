/*
 * The secret values of a config, gathered by the rule (secrets.c) so
 * that text the runtime did not write (a server's stderr, an error a
 * server gave) is shown with each replaced by "***". A set lives only as
 * long as one answer that shows such text, or as one instance.
 */
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"
#include "config/secrets_int.h"
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

void secrets_add_n(struct secrets *sec, const char *p, size_t n)
{
	if (sec == NULL)
		return;
	char *v = xstrndup(p, n);
	secrets_add(sec, v);
	free(v);
}

/* A credential and, when it has a scheme ("Bearer TOKEN"), the token
 * alone: a server that refuses it may quote it so ("invalid token
 * TOKEN"). */
void secrets_add_credential(struct secrets *sec, const char *v)
{
	secrets_add(sec, v);
	const char *sp = strchr(v, ' ');
	if (sp)
		secrets_add(sec, sp + strspn(sp, " "));
}

/* What is secret in args (and their templates, when they came from
 * ${VAR}): the values of secret variables, else the part the rule finds
 * in a literal; a url's credentials. */
static void secrets_add_args(struct secrets *sec, char *const *args,
			     char *const *tpl, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (args[i] == NULL)
			continue;
		if (tpl && tpl[i]) {
			secrets_tpl_scan(tpl[i], sec);
			continue;
		}
		const char *part = secrets_arg_part(args, n, i);
		if (part)
			secrets_add(sec, part);
		else if (secrets_is_url(args[i]))
			free(secrets_mask_url(args[i], sec));
	}
}

void secrets_add_server(struct secrets *sec, const struct server_config *s)
{
	if (s->url)
		free(secrets_mask_url(s->url, sec));
	for (size_t i = 0; s->url_vars && s->url_vars[i]; i++)
		if (secrets_var_is_secret(NULL, s->url_vars[i]))
			secrets_add(sec, s->url_vars[i]);
	for (size_t i = 0; i < s->nenv; i++) {
		const char *v = s->env[i].value;
		const char *tpl = s->env_tpl ? s->env_tpl[i] : NULL;
		if (tpl)
			secrets_tpl_scan(tpl, sec);
		if (secrets_env_is_secret(s->env[i].key, v, tpl))
			secrets_add_credential(sec, v);
		else if (secrets_is_url(v))
			free(secrets_mask_url(v, sec));
	}
	/* Every header value: what a server is sent to let us in. */
	for (size_t i = 0; i < s->nheaders; i++) {
		if (s->headers_tpl && s->headers_tpl[i])
			secrets_tpl_scan(s->headers_tpl[i], sec);
		secrets_add_credential(sec, s->headers[i].value);
	}
	secrets_add_args(sec, s->args, s->args_tpl, s->nargs);
	/* A pre-registered OAuth client's secret, whatever it looks like. */
	if (s->oauth && s->oauth->client_secret) {
		if (s->oauth->client_secret_tpl)
			secrets_tpl_scan(s->oauth->client_secret_tpl, sec);
		secrets_add(sec, s->oauth->client_secret);
	}
	/* A container's env is the server's env (above); its args, and an
	 * image from ${VAR} (the command form's is an arg, above): */
	const struct container_config *cc = s->container;
	if (cc) {
		secrets_add_args(sec, cc->args, cc->args_tpl, cc->nargs);
		if (cc->image_tpl)
			secrets_tpl_scan(cc->image_tpl, sec);
	}
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
