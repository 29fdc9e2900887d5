/*
 * struct auth: the runtime's view of the token store (a cache of the token
 * files of the servers it asked about, kept fresh by one watch), the
 * Authorization value, and what a 401 or 403 means (auth_challenge: the
 * one place that decides).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"
#include "auth/scope.h"
#include "auth/www_auth.h"
#include "http/httpc.h"
#include "util/clock.h"
#include "util/filewatch.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

struct auth *auth_new(uv_loop_t *loop, struct httpc *(*http)(void *arg),
		      void *http_arg, const char *state_dir)
{
	struct auth *a = xcalloc(1, sizeof *a);
	a->loop = loop;
	a->http = http;
	a->http_arg = http_arg;
	a->state_dir = xstrdup(state_dir);
	return a;
}

static void auth_entry_free(struct auth_entry *e)
{
	refresh_drop(e->rf);
	store_tokens_clear(&e->s);
	free(e->name);
	free(e->url);
	free(e);
}

void auth_free(struct auth *a)
{
	if (a == NULL)
		return;
	while (a->flows)
		auth_flow_cancel(a->flows);
	filewatch_free(a->watch);
	for (struct auth_entry *e = a->entries, *next; e; e = next) {
		next = e->next;
		auth_entry_free(e);
	}
	free(a->state_dir);
	free(a);
}

struct httpc *auth_http(struct auth *a, const char **why)
{
	struct httpc *h = a->http ? a->http(a->http_arg) : NULL;
	if (h == NULL)
		*why = "no HTTP client (libcurl could not be loaded)";
	return h;
}

struct auth_entry *auth_entry_get(struct auth *a, const char *name,
				  const char *url)
{
	/* The key is a digest of name and url: a known pair is found by
	 * them, without one (asked on every request to the server). */
	for (struct auth_entry *e = a->entries; e; e = e->next)
		if (strcmp(e->name, name) == 0 && e->url && url &&
		    strcmp(e->url, url) == 0)
			return e;
	char key[STORE_KEY_HEX + 1];
	store_key(name, url, key);
	for (struct auth_entry *e = a->entries; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	struct auth_entry *e = xcalloc(1, sizeof *e);
	e->name = xstrdup(name);
	e->url = xstrdup(url);
	memcpy(e->key, key, sizeof key);
	e->next = a->entries;
	a->entries = e;
	return e;
}

static bool auth_str_eq(const char *x, const char *y)
{
	return (x == NULL && y == NULL) || (x && y && strcmp(x, y) == 0);
}

int auth_entry_load(struct auth *a, struct auth_entry *e)
{
	struct store_tokens s;
	int rc = store_read(a->state_dir, e->key, &s);
	bool changed = !e->loaded || rc != e->load_rc;
	if (rc == 0 && e->loaded && e->load_rc == 0)
		changed = changed || s.t.generation != e->s.t.generation ||
			  !auth_str_eq(s.t.access_token, e->s.t.access_token) ||
			  !auth_str_eq(s.t.refresh_token, e->s.t.refresh_token);
	store_tokens_clear(&e->s);
	if (rc == 0)
		e->s = s;
	e->loaded = true;
	e->load_rc = rc == -ENOENT || rc == 0 ? rc : -EINVAL;
	if (rc < 0 && rc != -ENOENT)
		log_warn("the token file of server \"%s\" cannot be read "
			 "(%s): sign in again",
			 e->name, strerror(-rc));
	return changed;
}

int auth_reload(struct auth *a, const char *name, const char *url)
{
	return auth_entry_load(a, auth_entry_get(a, name, url));
}

int auth_bearer(struct auth *a, const char *name, const char *url, char **value,
		int64_t *refresh_in_ms)
{
	struct auth_entry *e = auth_entry_get(a, name, url);
	e->asked = true;
	if (!e->loaded)
		auth_entry_load(a, e);
	if (value)
		*value = NULL;
	if (refresh_in_ms)
		*refresh_in_ms = -1;
	if (e->load_rc < 0)
		return -ENOENT;
	const struct auth_tokens *t = &e->s.t;
	if (value)
		*value = xasprintf("Bearer %s", t->access_token);
	int64_t now = store_now();
	bool expired = t->expires_at > 0 && t->expires_at <= now;
	if (t->refresh_token == NULL)
		return expired ? -EKEYEXPIRED : 0;
	if (refresh_in_ms && t->expires_at > 0) {
		int64_t ms = (t->expires_at - now) * 1000 -
			     (int64_t)AUTH_REFRESH_EARLY_MS;
		*refresh_in_ms = ms > 0 ? ms : 0;
	}
	return 0;
}

/* ---- what a 401 or 403 means ---- */

static void auth_token_hash(const char *bearer, unsigned char out[32])
{
	const char *tok = bearer;
	if (strncasecmp(tok, "Bearer ", 7) == 0)
		tok += 7;
	sha256_bytes(tok, strlen(tok), out);
}

enum auth_verdict auth_challenge(struct auth *a, const char *name,
				 const char *url, int status,
				 const char *www_authenticate, const char *sent)
{
	struct auth_entry *e = auth_entry_get(a, name, url);
	auth_entry_load(a, e);
	struct store_challenge old, c = {0};
	bool had = store_challenge_read(a->state_dir, e->key, &old) == 0;
	struct www_auth w = {0};
	const struct www_auth_challenge *ch = NULL;
	if (www_authenticate &&
	    www_auth_parse(www_authenticate, strlen(www_authenticate), &w) == 0)
		ch = www_auth_find(&w, "Bearer");
	const char *scope = ch ? www_auth_param(ch, "scope") : NULL;
	const char *rm = ch ? www_auth_param(ch, "resource_metadata") : NULL;
	const char *error = ch ? www_auth_param(ch, "error") : NULL;
	c.status = status;
	c.scope = scope && !scope_bad(scope) ? xstrdup(scope) : NULL;
	c.resource_metadata = rm ? xstrdup(rm) : NULL;
	c.error = error && !scope_bad(error) ? xstrdup(error) : NULL;
	c.at = store_now();
	enum auth_verdict v = AUTH_LOGIN;
	const struct auth_tokens *t = e->load_rc == 0 ? &e->s.t : NULL;
	unsigned char sent_hash[32], have_hash[32];
	bool newer = false, just_refreshed = false;
	if (t && sent) {
		auth_token_hash(sent, sent_hash);
		auth_token_hash(t->access_token, have_hash);
		newer = !sha256_equal(sent_hash, have_hash);
		just_refreshed = e->has_refreshed &&
				 sha256_equal(sent_hash, e->refreshed) &&
				 clock_now_ms() - e->refreshed_ms <
					 AUTH_REFRESH_EARLY_MS;
	}
	if (status == 403 && t &&
	    (error == NULL || strcmp(error, "insufficient_scope") == 0)) {
		/* A step-up. Asking again for what was asked already helps
		 * only when the user grants more: a few times, then not. */
		char *had_scope = scope_union(e->s.requested_scope, t->scope);
		bool nothing_new =
			scope == NULL || scope_covers(had_scope, scope);
		free(had_scope);
		c.repeats = nothing_new ? (had ? old.repeats : 0) + 1 : 0;
		if (newer)
			v = AUTH_RETRY;
		else if (c.repeats > AUTH_STEP_UP_REPEATS)
			v = AUTH_REFUSED;
	} else if (t && newer) {
		v = AUTH_RETRY;
	} else if (t && t->refresh_token && !just_refreshed) {
		v = AUTH_REFRESH;
	}
	c.refused = v == AUTH_REFUSED;
	if (v != AUTH_RETRY && v != AUTH_REFRESH) {
		if (store_challenge_write(a->state_dir, e->key, &c) < 0)
			log_warn(
				"could not keep the challenge of server \"%s\"",
				name);
	}
	static const char *const names[] = {"retry", "refresh", "sign-in",
					    "refused"};
	log_info("server \"%s\" answered %d%s%s: %s", name, status,
		 c.error ? " " : "", c.error ? c.error : "", names[v]);
	store_challenge_clear(&c);
	if (had)
		store_challenge_clear(&old);
	www_auth_clear(&w);
	return v;
}

/* ---- the watch ---- */

static void auth_watch_fire(void *arg, const char *path, unsigned events,
			    uint64_t span_ms)
{
	struct auth *a = arg;
	/* Names first: the callback may call back into a. */
	size_t n = 0;
	for (struct auth_entry *e = a->entries; e; e = e->next)
		n++;
	char **names = xcalloc(2 * n + 1, sizeof *names);
	size_t k = 0;
	for (struct auth_entry *e = a->entries; e; e = e->next)
		if (e->asked && e->rf == NULL && auth_entry_load(a, e) == 1) {
			names[k++] = xstrdup(e->name);
			names[k++] = xstrdup(e->url);
		}
	for (size_t i = 0; i < k; i += 2) {
		if (a->watch_cb)
			a->watch_cb(a->watch_arg, names[i], names[i + 1]);
		free(names[i]);
		free(names[i + 1]);
	}
	free(names);
}

void auth_watch(struct auth *a, auth_watch_cb cb, void *arg)
{
	a->watch_cb = cb;
	a->watch_arg = arg;
	if (cb == NULL) {
		filewatch_free(a->watch);
		a->watch = NULL;
		return;
	}
	if (a->watch == NULL) {
		char *p = store_changed_path(a->state_dir);
		a->watch = filewatch_new(a->loop, p, auth_watch_fire, a);
		free(p);
	}
}
