/*
 * Instances by canonical key, their leases and idle timers, the journal of
 * what they own (processes, containers), the HTTP client of url servers
 * and the cache of their lists.
 */
#include "pool/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "http/httpc.h"
#include "journal/journal.h"
#include "pool/keys.h"
#include "pool/known.h"
#include "pool/lease.h"
#include "pool/pool_int.h"
#include "toolcache/toolcache.h"
#include "transport/upstream.h"
#include "util/clock.h"
#include "util/keymap.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

static void pool_entry_destroy(struct pool_entry *e);

static struct pool_entry *pool_entry_of(struct instance *inst)
{
	return instance_data(inst);
}

/* ---- entries at rest ---- */

/* Whether the instance runs nothing and nothing is coming, so nothing is
 * lost by closing it. Not one that needs credentials: it is what remembers
 * that they were refused, so that no later session tries them again until
 * a reload changes them (which closes it) or `mcpvisor restart`. */
static bool pool_entry_at_rest(const struct pool_entry *e)
{
	enum instance_state st = instance_state(e->inst);
	return st == INSTANCE_STOPPED || st == INSTANCE_FAILED;
}

/* ---- instance callbacks, passed on to the hub ---- */

static void pool_inst_notification_cb(void *ctx, struct instance *inst,
				      json_t *msg, void *cause)
{
	struct pool_entry *e = ctx;
	if (e->pool->cbs.on_notification)
		e->pool->cbs.on_notification(e->pool->ctx, inst, msg, cause);
}

static void pool_inst_request_cb(void *ctx, struct instance *inst, json_t *msg,
				 void *cause)
{
	struct pool_entry *e = ctx;
	if (e->pool->cbs.on_request)
		e->pool->cbs.on_request(e->pool->ctx, inst, msg, cause);
}

static void pool_inst_state_cb(void *ctx, struct instance *inst,
			       enum instance_state from, enum instance_state to)
{
	struct pool_entry *e = ctx;
	if (to == INSTANCE_READY && lease_holders(e->leases) == 0) {
		lease_touch(e->leases, clock_now_ms());
		pool_idle_arm(e);
	}
	if (to == INSTANCE_FAILED && pool_entry_followed(e))
		pool_idle_arm(e);
	/* A server that fails to start drops its cached tools. */
	if (from == INSTANCE_STARTING &&
	    (to == INSTANCE_FAILED || to == INSTANCE_NEEDS_AUTH) &&
	    e->pool->cache && e->cache_name) {
		toolcache_drop(e->pool->cache, e->cache_name);
		known_cached_set(e->pool->known, e->cache_name, NULL);
	}
	if (e->pool->cbs.on_state)
		e->pool->cbs.on_state(e->pool->ctx, inst, from, to);
}

static void pool_inst_lists_cb(void *ctx, struct instance *inst)
{
	struct pool_entry *e = ctx;
	/* A list that failed (too large, unreadable) is not what the server
	 * offers: cached, it would stand for its tools at the next start,
	 * which would then never ask it again. */
	if (e->pool->cache && e->cache_name &&
	    instance_state(inst) == INSTANCE_READY &&
	    instance_lists_failed(inst)) {
		toolcache_drop(e->pool->cache, e->cache_name);
		known_cached_set(e->pool->known, e->cache_name, NULL);
	} else if (e->pool->cache && e->cache_name &&
		   instance_state(inst) == INSTANCE_READY) {
		json_t *lists = instance_lists_json(inst);
		int rc = toolcache_store(e->pool->cache, e->cache_name, lists);
		if (rc < 0)
			log_warn("instance %s: could not cache its lists: %s",
				 e->name, strerror(-rc));
		known_cached_set(e->pool->known, e->cache_name,
				 rc < 0 ? NULL : lists);
		json_decref(lists);
	}
	if (e->pool->cbs.on_lists)
		e->pool->cbs.on_lists(e->pool->ctx, inst);
}

/* Whatever the transport runs (a process, a container) is journaled while
 * it lives, and a closed entry stays until all of it is gone. */
static void pool_inst_owned_cb(void *ctx, struct instance *inst,
			       const struct upstream_owned *o, bool live)
{
	struct pool_entry *e = ctx;
	/* A container reported again with its id is the one already
	 * counted (upstream.h). */
	bool update = o->kind == UPSTREAM_OWNED_CONTAINER && o->container_id;
	if (live && !update)
		e->live++;
	else if (!live && e->live > 0)
		e->live--;
	/* Given up on: the journal keeps it, so the next start reconciles
	 * it; the entry need not wait for it. */
	if (e->pool->journal && !(o->kept && !live)) {
		int rc = live ? journal_add_owned(e->pool->journal, o,
						  instance_public_key(inst))
			      : journal_remove_owned(e->pool->journal, o);
		if (rc < 0 && rc != -ENOENT)
			log_warn("instance %s: journal: %s", e->name,
				 strerror(-rc));
	}
	if (e->closing && e->live == 0)
		pool_entry_destroy(e);
}

static const struct instance_cbs pool_instance_cbs = {
	.on_notification = pool_inst_notification_cb,
	.on_request = pool_inst_request_cb,
	.on_state = pool_inst_state_cb,
	.on_lists = pool_inst_lists_cb,
	.on_owned = pool_inst_owned_cb,
};

/* ---- entries ---- */

static struct pool_entry *pool_find_key(struct pool *pool, const char *key)
{
	return keymap_get(&pool->by_key, key);
}

struct pool *pool_new(uv_loop_t *loop, const struct instance_cbs *cbs,
		      void *ctx, struct journal *journal,
		      struct toolcache *cache)
{
	struct pool *pool = xcalloc(1, sizeof *pool);
	pool->loop = loop;
	pool->cbs = *cbs;
	pool->ctx = ctx;
	pool->journal = journal;
	pool->cache = cache;
	pool->known = known_new(cache);
	pool->idle_ms = CONFIG_DEFAULT_IDLE_MS;
	if (cache) {
		snprintf(pool->salt, sizeof pool->salt, "%s",
			 toolcache_salt(cache));
	} else {
		random_hex(pool->salt, 32);
	}
	return pool;
}

void pool_set_idle_ms(struct pool *pool, uint64_t ms)
{
	pool->idle_ms = ms;
}

struct instance *pool_instance_find(struct pool *pool, const char *key)
{
	struct pool_entry *e = pool_find_key(pool, key);
	return e ? e->inst : NULL;
}

/* ---- lists without an instance ---- */

json_t *pool_lists_known(struct pool *pool, const struct server_config *s,
			 const struct pool_scope_ctx *sc, const char *key)
{
	if (pool_find_key(pool, key) || pool->cache == NULL ||
	    !pool_key_per_session(s, sc))
		return NULL;
	json_t *lists = known_ghost(pool->known, key);
	if (lists)
		return lists;
	char *name = pool_key_cache_name(pool->cache, s, sc);
	lists = known_cached(pool->known, name);
	free(name);
	return lists ? known_ghost_add(pool->known, key, sc->session_id, lists)
		     : NULL;
}

json_t *pool_lists_cached(struct pool *pool, const struct server_config *s,
			  const struct pool_scope_ctx *sc)
{
	if (pool->cache == NULL || toolcache_empty(pool->cache))
		return NULL;
	char *name = pool_key_cache_name(pool->cache, s, sc);
	json_t *lists = known_cached(pool->known, name);
	free(name);
	return lists;
}

json_t *pool_lists_offered(struct pool *pool, const char *key,
			   enum instance_list which)
{
	static const char *const names[INSTANCE_NLISTS] = {
		"tools", "prompts", "resources", "resourceTemplates"};
	struct pool_entry *e = pool_find_key(pool, key);
	if (e)
		return instance_list(e->inst, which);
	return json_object_get(known_ghost(pool->known, key), names[which]);
}

const char *pool_instructions(struct pool *pool, const struct server_config *s,
			      const struct pool_scope_ctx *sc, const char *key)
{
	struct pool_entry *e = pool_find_key(pool, key);
	if (e)
		return instance_instructions(e->inst);
	json_t *lists = pool_lists_known(pool, s, sc, key);
	if (lists == NULL && !toolcache_empty(pool->cache) &&
	    !pool_key_per_session(s, sc)) {
		char *name = pool_key_cache_name(pool->cache, s, sc);
		lists = known_cached(pool->known, name);
		free(name);
	}
	return json_string_value(json_object_get(lists, "instructions"));
}

void pool_foreach_member(struct pool *pool, struct instance *inst,
			 bool holders_only,
			 void (*fn)(void *arg, const char *session_id),
			 void *arg)
{
	(void)pool;
	struct pool_entry *e = pool_entry_of(inst);
	if (e == NULL || e->leases == NULL)
		return;
	unsigned requests;
	const char *id;
	for (size_t i = 0; (id = lease_member_at(e->leases, i, &requests)); i++)
		if (!holders_only || requests > 0)
			fn(arg, id);
}

struct httpc *pool_http(struct pool *pool)
{
	if (pool->http == NULL && !pool->freeing) {
		const char *why = NULL;
		pool->http = httpc_new(pool->loop, &why);
		if (pool->http == NULL && !pool->http_said) {
			log_error("no HTTP client (%s): servers reached by "
				  "url cannot start",
				  why ? why : "unknown error");
			pool->http_said = true;
		}
	}
	return pool->http;
}

/* instance_spec's getter: called when a url server starts. */
static struct httpc *pool_http_cb(void *arg)
{
	return pool_http(arg);
}

/* ---- sign-in: auth/auth.h as the instances' struct instance_signin ---- */

static int pool_auth_bearer(void *arg, const char *name, const char *url,
			    char **value, int64_t *refresh_in_ms)
{
	return auth_bearer(arg, name, url, value, refresh_in_ms);
}

static enum auth_verdict pool_auth_challenge(void *arg, const char *name,
					     const char *url, int status,
					     const char *www, const char *sent)
{
	return auth_challenge(arg, name, url, status, www, sent);
}

static int pool_auth_refresh(void *arg, const char *name, const char *url,
			     const char *sent, auth_done_cb cb, void *cb_arg,
			     struct auth_req **out)
{
	return auth_refresh(arg, name, url, sent, cb, cb_arg, out);
}

static int pool_auth_reload(void *arg, const char *name, const char *url)
{
	return auth_reload(arg, name, url);
}

static const struct instance_signin pool_signin = {
	.bearer = pool_auth_bearer,
	.challenge = pool_auth_challenge,
	.refresh = pool_auth_refresh,
	.cancel = auth_req_cancel,
	.reload = pool_auth_reload,
};

void pool_set_auth(struct pool *pool, struct auth *a)
{
	pool->auth = a;
}

struct auth *pool_auth(struct pool *pool)
{
	return pool->auth;
}

void pool_credentials_changed(struct pool *pool, const char *name,
			      const char *url)
{
	(void)url; /* each instance reads its own server's tokens anew */
	struct pool_entry *next;
	for (struct pool_entry *e = pool->entries; e; e = next) {
		next = e->next;
		if (strcmp(e->name, name) == 0)
			instance_credentials_changed(e->inst);
	}
}

/* Last of the pool, once no entry is left: the HTTP client goes too (its
 * handles close on the loop, which the owner runs before closing it);
 * an instance still stopping then has its requests ended. */
static void pool_destroy(struct pool *pool)
{
	if (pool->http)
		httpc_free(pool->http);
	free(pool);
}

static void pool_entry_close_cb(uv_handle_t *h)
{
	struct pool_entry *e = h->data;
	struct pool *pool = e->pool;
	free(e);
	if (--pool->nclosing == 0 && pool->freeing)
		pool_destroy(pool);
}

static void pool_entry_destroy(struct pool_entry *e)
{
	lease_set_free(e->leases);
	e->leases = NULL;
	free(e->name);
	free(e->ident);
	free(e->cache_name);
	uv_close((uv_handle_t *)&e->idle_timer, pool_entry_close_cb);
}

/* Closes an entry's instance at once and forgets it; the entry itself
 * lives until the instance's processes are gone (the journal hears of
 * it). */
void pool_entry_close(struct pool_entry *e, const char *why)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		e->pool->entries = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		e->pool->last = e->prev;
	e->next = e->prev = NULL;
	keymap_del(&e->pool->by_key, instance_key(e->inst));
	e->closing = true;
	e->pool->nclosing++;
	uv_timer_stop(&e->idle_timer);
	log_info("instance %s: closing (%s)", e->name, why);
	instance_free(e->inst);
	if (e->live == 0)
		pool_entry_destroy(e);
}

struct instance *pool_instance_for(struct pool *pool,
				   const struct server_config *s,
				   const struct pool_scope_ctx *sc,
				   const char *key_in)
{
	struct pool_entry *e = pool_find_key(pool, key_in);
	if (e) {
		lease_join(e->leases, sc->session_id);
		return e->inst;
	}
	char *cwd = NULL;
	char *key = pool_instance_key(s, sc, &cwd);
	char *public_key = pool_key_public(pool->salt, s, sc);
	struct instance_spec spec = {
		.server = s,
		.key = key,
		.public_key = public_key,
		.cwd = cwd,
		.client_caps_json =
			sc->client_caps_json
				? sc->client_caps_json
				: "{\"roots\":{\"listChanged\":true}}",
		.journal = pool->journal,
		.http = pool_http_cb,
		.http_arg = pool,
		.signin = pool->auth ? &pool_signin : NULL,
		.signin_arg = pool->auth,
	};
	e = xcalloc(1, sizeof *e);
	e->pool = pool;
	e->per_session = pool_key_per_session(s, sc);
	e->name = xstrdup(s->name);
	e->ident = pool_server_ident(s);
	e->leases = lease_set_new(clock_now_ms());
	e->idle_ms = s->idle_timeout_ms >= 0 ? (uint64_t)s->idle_timeout_ms
					     : pool->idle_ms;
	uv_timer_init(pool->loop, &e->idle_timer);
	e->idle_timer.data = e;
	e->inst = instance_new(pool->loop, &spec, &pool_instance_cbs, e);
	instance_set_data(e->inst, e);
	known_forget(pool->known, key);
	e->cache_name = pool_key_cache_name(pool->cache, s, sc);
	if (e->cache_name) {
		json_t *lists = known_cached(pool->known, e->cache_name);
		if (lists)
			instance_seed_lists(e->inst, lists);
	}
	lease_join(e->leases, sc->session_id);
	e->prev = pool->last;
	if (pool->last)
		pool->last->next = e;
	else
		pool->entries = e;
	pool->last = e;
	keymap_put(&pool->by_key, instance_key(e->inst), e);
	log_debug("new instance %s", public_key);
	free(key);
	free(public_key);
	free(cwd);
	return e->inst;
}

void pool_acquire(struct pool *pool, struct instance *inst,
		  const char *session_id)
{
	struct pool_entry *e = pool_entry_of(inst);
	if (e->closing)
		return;
	if (lease_take(e->leases, session_id))
		uv_timer_stop(&e->idle_timer);
}

void pool_release(struct pool *pool, struct instance *inst,
		  const char *session_id)
{
	struct pool_entry *e = pool_entry_of(inst);
	if (e->closing)
		return;
	if (lease_drop(e->leases, session_id, clock_now_ms()))
		pool_idle_arm(e);
}

void pool_session_gone(struct pool *pool, const char *session_id)
{
	known_session_gone(pool->known, session_id);
	struct pool_entry *next;
	for (struct pool_entry *e = pool->entries; e; e = next) {
		next = e->next;
		if (!lease_is_member(e->leases, session_id))
			continue;
		bool unheld =
			lease_leave(e->leases, session_id, clock_now_ms());
		if (lease_members(e->leases) > 0) {
			if (unheld)
				pool_idle_arm(e);
			continue;
		}
		/* An instance of this session alone ends with it; a shared
		 * one (app, space) stays warm for its idle time, so that the
		 * next session (each CLI call is one) finds it running. */
		if (e->per_session) {
			pool_entry_close(e, "its session ended");
		} else if (pool_entry_at_rest(e)) {
			pool_entry_close(e, "no session uses it");
		} else if (instance_state(e->inst) == INSTANCE_NEEDS_AUTH) {
			log_info(
				"instance %s: no session uses it; kept, as its "
				"credentials were refused, until %s",
				e->name,
				instance_signs_in(e->inst)
					? "a login gives it tokens"
					: "a reload changes them");
		} else {
			if (unheld)
				pool_idle_arm(e);
			log_info("instance %s: no session uses it; kept for "
				 "%llu ms",
				 e->name, (unsigned long long)e->idle_ms);
		}
	}
}

unsigned pool_reload(struct pool *pool,
		     bool (*wanted)(void *arg, const char *name,
				    const char *ident),
		     void *arg)
{
	unsigned closed = 0;
	struct pool_entry *next;
	for (struct pool_entry *e = pool->entries; e; e = next) {
		next = e->next;
		if (!wanted(arg, e->name, e->ident)) {
			pool_entry_close(e, "removed or changed by a reload");
			closed++;
		}
	}
	/* Explicit stops of servers that no longer exist are forgotten. */
	struct pool_held **hp = &pool->held;
	while (*hp) {
		if (!wanted(arg, (*hp)->name, NULL)) {
			struct pool_held *h = *hp;
			*hp = h->next;
			free(h->name);
			free(h);
		} else {
			hp = &(*hp)->next;
		}
	}
	return closed;
}

bool pool_server_held_stopped(const struct pool *pool, const char *name)
{
	for (const struct pool_held *h = pool->held; h; h = h->next)
		if (strcmp(h->name, name) == 0)
			return true;
	return false;
}

void pool_stop_server(struct pool *pool, const char *name)
{
	for (struct pool_entry *e = pool->entries; e; e = e->next) {
		if (name && strcmp(e->name, name) != 0)
			continue;
		instance_stop(e->inst, "stopped on request", false);
		if (!name && !pool_server_held_stopped(pool, e->name)) {
			struct pool_held *h = xcalloc(1, sizeof *h);
			h->name = xstrdup(e->name);
			h->next = pool->held;
			pool->held = h;
		}
	}
	if (name && !pool_server_held_stopped(pool, name)) {
		struct pool_held *h = xcalloc(1, sizeof *h);
		h->name = xstrdup(name);
		h->next = pool->held;
		pool->held = h;
	}
}

static void pool_restart_ready_cb(void *arg, struct instance *inst, int err)
{
	(void)arg;
	/* A stop that came after the restart (its last lease went, or
	 * another stop) supersedes it: that is no failure. */
	if (err == -ECANCELED)
		log_info("instance %s: restart superseded by a stop",
			 instance_name(inst));
	else if (err < 0)
		log_warn("instance %s: restart failed: %s", instance_name(inst),
			 instance_last_error(inst) ? instance_last_error(inst)
						   : strerror(-err));
}

void pool_restart_server(struct pool *pool, const char *name)
{
	for (struct pool_held **hp = &pool->held; *hp; hp = &(*hp)->next) {
		if (strcmp((*hp)->name, name) == 0) {
			struct pool_held *h = *hp;
			*hp = h->next;
			free(h->name);
			free(h);
			break;
		}
	}
	for (struct pool_entry *e = pool->entries; e; e = e->next) {
		if (strcmp(e->name, name) != 0)
			continue;
		enum instance_state st = instance_state(e->inst);
		instance_stop(e->inst, "restart requested", true);
		if (st == INSTANCE_READY || st == INSTANCE_STARTING ||
		    st == INSTANCE_FAILED)
			instance_ensure(e->inst, pool_restart_ready_cb, NULL);
	}
}

void pool_foreach(struct pool *pool,
		  void (*fn)(void *arg, struct instance *inst), void *arg)
{
	for (struct pool_entry *e = pool->entries; e; e = e->next)
		fn(arg, e->inst);
}

json_t *pool_describe(struct pool *pool, struct instance *inst)
{
	struct pool_entry *e = pool_entry_of(inst);
	json_t *o = json_object();
	json_object_set_new(o, "members", lease_describe(e->leases));
	json_object_set_new(o, "holders",
			    json_integer(lease_holders(e->leases)));
	json_object_set_new(o, "requests",
			    json_integer(lease_requests(e->leases)));
	json_object_set_new(o, "idleTimeoutMs",
			    json_integer((json_int_t)e->idle_ms));
	enum instance_state st = instance_state(inst);
	/* Not while followed: pool_idle_cb keeps it then. */
	if (lease_holders(e->leases) == 0 &&
	    (st == INSTANCE_READY || st == INSTANCE_FAILED) &&
	    instance_subs_followed(inst) == 0) {
		uint64_t now = clock_now_ms();
		uint64_t due = lease_idle_since(e->leases) + e->idle_ms;
		json_object_set_new(
			o, "idleClosesInMs",
			json_integer((json_int_t)(due > now ? due - now : 0)));
	}
	return o;
}

unsigned pool_requests(const struct pool *pool)
{
	unsigned n = 0;
	for (const struct pool_entry *e = pool->entries; e; e = e->next)
		n += lease_requests(e->leases);
	return n;
}

void pool_free(struct pool *pool)
{
	if (pool == NULL)
		return;
	while (pool->entries)
		pool_entry_close(pool->entries, "runtime stopping");
	keymap_free(&pool->by_key);
	known_free(pool->known);
	pool->known = NULL;
	while (pool->held) {
		struct pool_held *h = pool->held;
		pool->held = h->next;
		free(h->name);
		free(h);
	}
	/* Entries still closing free the pool with the last of them. */
	pool->freeing = true;
	if (pool->nclosing == 0)
		pool_destroy(pool);
}
