/*
 * The refresh of a server's tokens: one at a time per server in this
 * process (later callers wait for the one under way and share its result)
 * and across processes (done while holding the server's lock, after
 * reading its file again). Because nothing else writes the file while the
 * lock is held, the file read under it is compared with what the refused
 * request carried: tokens written meanwhile (a login, another process's
 * refresh) are taken without a request; a rotated refresh token is stored
 * before the lock goes; a refused one is forgotten only while it is the
 * one stored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth_int.h"
#include "auth/lockwait.h"
#include "auth/meta.h"
#include "auth/token.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

struct auth_req {
	struct auth_req *next;
	struct refresh *rf;
	auth_done_cb cb;
	void *arg;
};

struct refresh {
	struct auth *a;
	struct auth_entry *e;
	struct auth_req *waiters;
	struct lockwait *lw;
	struct treq *tr;
	int fd;
	/* The access token the refused request carried (NULL: a refresh
	 * ahead of expiry), and the generation the cache had. */
	char *sent;
	uint64_t cached_gen;
	struct store_tokens s; /* the file as read under the lock */
	struct store_client client;
	char why[256];
};

static void refresh_free(struct refresh *rf)
{
	lockwait_cancel(rf->lw);
	treq_cancel(rf->tr);
	if (rf->fd >= 0)
		store_unlock(rf->fd);
	meta_wipe(rf->sent);
	store_tokens_clear(&rf->s);
	store_client_clear(&rf->client);
	for (struct auth_req *r = rf->waiters, *next; r; r = next) {
		next = r->next;
		free(r);
	}
	free(rf);
}

void refresh_drop(struct refresh *rf)
{
	if (rf == NULL)
		return;
	rf->e->rf = NULL;
	refresh_free(rf);
}

/* The end: the lock goes first (another process may be waiting), the
 * cache is read again, then every waiter hears the one result. */
static void refresh_end(struct refresh *rf, int err, const char *why)
{
	struct auth_entry *e = rf->e;
	if (rf->fd >= 0) {
		store_unlock(rf->fd);
		rf->fd = -1;
	}
	e->rf = NULL;
	auth_entry_load(rf->a, e);
	if (err == 0)
		log_info("tokens of server \"%s\" refreshed", e->name);
	else
		log_warn("refresh of server \"%s\" failed: %s", e->name, why);
	char msg[sizeof rf->why];
	snprintf(msg, sizeof msg, "%s", why ? why : "");
	struct auth_req *w = rf->waiters;
	rf->waiters = NULL;
	refresh_free(rf);
	while (w) {
		struct auth_req *next = w->next;
		w->cb(w->arg, err, err == 0 ? NULL : msg);
		free(w);
		w = next;
	}
}

static void refresh_token_cb(void *arg, int err, const char *why,
			     struct meta_token *t, const char *oauth_error)
{
	struct refresh *rf = arg;
	struct auth_entry *e = rf->e;
	rf->tr = NULL;
	if (err < 0) {
		if (err == -EACCES) {
			/* Refused for good. The lock is ours: the stored
			 * refresh token is still the one sent, and it is
			 * dead; the access token with it is of no use. The
			 * registration goes too when the server no longer
			 * knows the client (it was registered, not
			 * configured). */
			store_remove(rf->a->state_dir, e->key);
			if (oauth_error &&
			    (strcmp(oauth_error, "invalid_client") == 0 ||
			     strcmp(oauth_error, "unauthorized_client") == 0) &&
			    rf->client.source &&
			    strcmp(rf->client.source, "dcr") == 0)
				store_client_remove(rf->a->state_dir,
						    &rf->client);
			snprintf(rf->why, sizeof rf->why,
				 "%s; sign in again: mcpvisor login %s", why,
				 e->name);
			refresh_end(rf, -EACCES, rf->why);
			return;
		}
		refresh_end(rf, err, why);
		return;
	}
	struct store_tokens n = {0};
	struct auth_tokens *o = &rf->s.t;
	n.t.access_token = t->access_token;
	n.t.token_type = t->token_type;
	/* A server that does not rotate sends none: the old one lives on
	 * (RFC 6749 6). */
	n.t.refresh_token =
		t->refresh_token ? t->refresh_token : o->refresh_token;
	n.t.scope = t->scope ? t->scope : o->scope;
	n.t.expires_at = t->expires_in >= 0 ? store_now() + t->expires_in : 0;
	n.t.issuer = o->issuer;
	n.t.resource = o->resource;
	n.t.token_endpoint = o->token_endpoint;
	n.t.client_id = o->client_id;
	n.t.generation = o->generation + 1;
	n.requested_scope = rf->s.requested_scope;
	int rc = store_write(rf->a->state_dir, e->name, e->url, &n);
	if (rc < 0) {
		/* The new refresh token is lost with it when the server
		 * rotates: nothing else can be done than say so. */
		snprintf(rf->why, sizeof rf->why,
			 "the refreshed tokens could not be stored (%s)",
			 strerror(-rc));
		refresh_end(rf, rc, rf->why);
		return;
	}
	sha256_bytes(t->access_token, strlen(t->access_token), e->refreshed);
	e->refreshed_ms = clock_now_ms();
	e->has_refreshed = true;
	refresh_end(rf, 0, NULL);
}

static void refresh_locked_cb(void *arg, int fd, int err)
{
	struct refresh *rf = arg;
	struct auth_entry *e = rf->e;
	rf->lw = NULL;
	if (fd < 0) {
		snprintf(rf->why, sizeof rf->why,
			 "another mcpvisor holds the tokens of server \"%s\" "
			 "(%s)",
			 e->name, strerror(-err));
		refresh_end(rf, err, rf->why);
		return;
	}
	rf->fd = fd;
	int rc = store_read(rf->a->state_dir, e->key, &rf->s);
	if (rc < 0) {
		snprintf(rf->why, sizeof rf->why,
			 "no tokens are stored for server \"%s\": sign in: "
			 "mcpvisor login %s",
			 e->name, e->name);
		refresh_end(rf, -EACCES, rf->why);
		return;
	}
	struct auth_tokens *t = &rf->s.t;
	/* Written since the refused request went (a login, a refresh
	 * elsewhere): those are the tokens to use. */
	bool changed = rf->sent ? strcmp(t->access_token, rf->sent) != 0
				: t->generation != rf->cached_gen;
	bool fresh =
		t->expires_at == 0 || (t->expires_at - store_now()) * 1000 >
					      (int64_t)AUTH_REFRESH_EARLY_MS;
	if (changed && (rf->sent || fresh)) {
		refresh_end(rf, 0, NULL);
		return;
	}
	if (t->refresh_token == NULL) {
		snprintf(rf->why, sizeof rf->why,
			 "the token of server \"%s\" cannot be refreshed (no "
			 "refresh token was issued): mcpvisor login %s",
			 e->name, e->name);
		refresh_end(rf, -EACCES, rf->why);
		return;
	}
	if (t->token_endpoint == NULL || t->issuer == NULL) {
		snprintf(rf->why, sizeof rf->why,
			 "the token file of server \"%s\" lacks its token "
			 "endpoint: mcpvisor login %s",
			 e->name, e->name);
		refresh_end(rf, -EACCES, rf->why);
		return;
	}
	/* The client the tokens were issued to: its own registration at
	 * the issuer (not the issuer's shared one, which may be another
	 * server's client), else a public client of that id. */
	if (t->client_id == NULL ||
	    store_client_find(rf->a->state_dir, t->issuer, t->client_id,
			      &rf->client) < 0) {
		store_client_clear(&rf->client);
		rf->client.client_id =
			xstrdup(t->client_id ? t->client_id : "");
		rf->client.auth_method = xstrdup("none");
	}
	const char *why = NULL;
	struct httpc *h = auth_http(rf->a, &why);
	struct treq_opts o = {.token_endpoint = t->token_endpoint,
			      .client = &rf->client,
			      .refresh_token = t->refresh_token,
			      .resource = t->resource};
	rc = h ? treq_start(h, &o, refresh_token_cb, rf, &rf->tr) : -ENOSYS;
	if (rc < 0) {
		snprintf(rf->why, sizeof rf->why,
			 "the refresh could not start%s%s", why ? ": " : "",
			 why ? why : "");
		refresh_end(rf, rc == -EINVAL ? -EACCES : rc, rf->why);
	}
}

int auth_refresh(struct auth *a, const char *name, const char *url,
		 const char *sent, auth_done_cb cb, void *arg,
		 struct auth_req **out)
{
	struct auth_entry *e = auth_entry_get(a, name, url);
	if (!e->loaded)
		auth_entry_load(a, e);
	struct auth_req *r = xcalloc(1, sizeof *r);
	r->cb = cb;
	r->arg = arg;
	struct refresh *rf = e->rf;
	if (rf == NULL) {
		rf = xcalloc(1, sizeof *rf);
		rf->a = a;
		rf->e = e;
		rf->fd = -1;
		if (sent) {
			const char *tok = sent;
			if (strncasecmp(tok, "Bearer ", 7) == 0)
				tok += 7;
			rf->sent = xstrdup(tok);
		}
		rf->cached_gen = e->load_rc == 0 ? e->s.t.generation : 0;
		e->rf = rf;
		rf->lw = lockwait_start(a->loop, a->state_dir, e->key,
					AUTH_LOCK_WAIT_MS, refresh_locked_cb,
					rf);
	}
	/* Joined at the end: callers hear in the order they asked. */
	struct auth_req **pp = &rf->waiters;
	while (*pp)
		pp = &(*pp)->next;
	*pp = r;
	r->rf = rf;
	if (out)
		*out = r;
	return 0;
}

void auth_req_cancel(struct auth_req *r)
{
	if (r == NULL)
		return;
	struct refresh *rf = r->rf;
	for (struct auth_req **pp = &rf->waiters; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			free(r);
			return;
		}
}
