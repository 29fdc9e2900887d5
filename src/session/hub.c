/*
 * The hub: sessions by id over one config and one pool, and the routing of
 * a server's messages to the sessions they concern. What status shows of
 * it is in hub_status.c.
 */
#include "session/hub.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "jsonrpc/jsonrpc.h"
#include "metrics/metrics.h"
#include "router/router.h"
#include "session/hub_int.h"
#include "session/session.h"
#include "session/session_int.h"
#include "session/spaces.h"
#include "session/tokens.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/keymap.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define HUB_SWEEP_MS 5000

struct tokens *hub_tokens(struct hub *hub)
{
	return &hub->tokens;
}

static uint64_t hub_call_key(const void *p)
{
	return hmap_mix((uint64_t)(uintptr_t)p);
}

void hub_call_live(struct hub *hub, struct call *c)
{
	hmap_put(&hub->calls, hub_call_key(c), c);
	/* One clock read on the hot path: its start for status and for its
	 * server's figures (counted until hub_call_gone). */
	c->started_us = clock_now_us();
	c->started_ms = c->started_us / 1000;
	c->fig = metrics_server(hub->metrics, instance_name(c->inst));
	metrics_call_begin(c->fig);
}

void hub_call_gone(struct hub *hub, struct call *c)
{
	hmap_del(&hub->calls, hub_call_key(c), c);
	metrics_call_end(c->fig, c->started_us, c->error);
	if (c->token)
		tokens_drop(&hub->tokens, c->token, c);
	c->token = 0;
}

/* The call a transport named as the cause of a server message (the arg
 * of the request whose answer stream carried it), when it is a call in
 * flight on inst: the pointer is compared, never followed, until found
 * among the live calls. NULL for any other arg (the runtime's own
 * requests), or a call that ended since. */
static struct call *hub_cause_call(struct hub *hub, struct instance *inst,
				   void *cause)
{
	for (struct hmap_node *n = hmap_first(&hub->calls, hub_call_key(cause));
	     n; n = hmap_next(n)) {
		struct call *c = n->val;
		if (n->val == cause)
			return c->inst == inst && !c->done ? c : NULL;
	}
	return NULL;
}

/* The sessions that use an instance: taken from its leases (not by
 * asking every session), and gathered before any is told, so that telling
 * one cannot change the walk. */
struct hub_fanout {
	struct hub *hub;
	struct session **s;
	size_t n, cap;
	struct session *local[16];
};

static void hub_fanout_add_cb(void *arg, const char *session_id)
{
	struct hub_fanout *f = arg;
	struct session *s = hub_session_find(f->hub, session_id);
	if (s == NULL)
		return;
	if (f->n == f->cap) {
		size_t cap = f->cap * 2;
		struct session **grown = xcalloc(cap, sizeof *grown);
		memcpy(grown, f->s, f->n * sizeof *grown);
		if (f->s != f->local)
			free(f->s);
		f->s = grown;
		f->cap = cap;
	}
	f->s[f->n++] = s;
}

static void hub_fanout_collect(struct hub *hub, struct instance *inst,
			       struct hub_fanout *f)
{
	f->hub = hub;
	f->s = f->local;
	f->n = 0;
	f->cap = sizeof f->local / sizeof f->local[0];
	pool_foreach_member(hub->pool, inst, false, hub_fanout_add_cb, f);
}

static void hub_fanout_done(struct hub_fanout *f)
{
	if (f->s != f->local)
		free(f->s);
}

static void hub_inst_notification_cb(void *ctx, struct instance *inst,
				     json_t *msg, void *cause)
{
	struct hub *hub = ctx;
	const char *method = jr_method(msg);
	if (strcmp(method, "notifications/progress") == 0) {
		const char *tok = json_string_value(
			json_object_get(jr_params(msg), "progressToken"));
		struct call *c = tokens_find(&hub->tokens, tok);
		if (c)
			session_call_progress(c, inst, msg);
		return;
	}
	if (strcmp(method, "notifications/cancelled") == 0) {
		for (struct hub_entry *e = hub->sessions; e; e = e->next)
			if (session_route_server_cancel(e->s, inst, msg))
				return;
		return;
	}
	bool related = strcmp(method, "notifications/message") == 0;
	/* Over HTTP a log line came on the stream of the call it concerns:
	 * to that call's client alone. One that came on a request of the
	 * runtime's own concerns no call: every session below is told. */
	if (related && cause) {
		struct call *c = hub_cause_call(hub, inst, cause);
		if (c) {
			session_call_related(c, msg);
			return;
		}
		related = false;
	}
	/* The rest goes to the sessions that use the instance: its lease
	 * members, not every session asked in turn. */
	struct hub_fanout f;
	hub_fanout_collect(hub, inst, &f);
	for (size_t i = 0; i < f.n; i++) {
		if (!session_uses(f.s[i], inst) ||
		    !session_notification_kept(f.s[i], inst, msg))
			continue;
		if (related)
			session_route_related(f.s[i], inst, msg);
		else
			session_notify(f.s[i], msg);
	}
	hub_fanout_done(&f);
}

bool hub_instance_asks(struct hub *hub, struct instance *inst)
{
	return keymap_count(&hub->askers) > 0 &&
	       keymap_get(&hub->askers, instance_key(inst)) != NULL;
}

/* inst's server asked a client mid-call and its transport could not say
 * which call asked: from now on its calls take turns (calls.c), so the
 * next request can only be the one call's in flight. */
static void hub_note_asker(struct hub *hub, struct instance *inst)
{
	if (keymap_get(&hub->askers, instance_key(inst)))
		return;
	char *key = xstrdup(instance_key(inst));
	keymap_put(&hub->askers, key, key);
	log_info("server \"%s\" asks its clients in the middle of calls and "
		 "cannot say which call asks: its calls take turns from now "
		 "on",
		 instance_name(inst));
}

/* Over stdio, the likeliest cause of a server's request across sessions
 * (see session_cause_rank). */
/* A session's likeliest call on an instance, ranked (session_cause_rank). */
struct hub_rank {
	bool waits;
	unsigned asked;
	uint64_t order;
};

/* Whether a ranks before b: not waiting for its client, else asked
 * least, else the oldest. */
static bool hub_rank_before(const struct hub_rank *a, const struct hub_rank *b)
{
	if (a->waits != b->waits)
		return !a->waits;
	if (a->asked != b->asked)
		return a->asked < b->asked;
	return a->order < b->order;
}

static struct session *hub_guess_cause(struct hub *hub, struct instance *inst)
{
	struct session *target = NULL;
	struct hub_rank best = {0}, r;
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		if (!session_cause_rank(e->s, inst, &r.waits, &r.asked,
					&r.order))
			continue;
		if (target == NULL || hub_rank_before(&r, &best)) {
			target = e->s;
			best = r;
		}
	}
	return target;
}

/* A request of a server for a client (sampling, elicitation, roots) goes
 * to the session whose call caused it, and to no other. Over HTTP the
 * transport names the cause (the call whose answer stream carried it):
 * exactly that call. Over stdio (cause NULL) the likeliest cause is
 * ranked across sessions; a request no call caused can only be the
 * owner's of a per-session instance. The capability does not pick the
 * cause (a session that could answer is not thereby the one that asked):
 * a wrong guess fails the request instead of showing one client
 * another's. When that session cannot answer, the server gets an error
 * (or, for roots, which the runtime always advertises, an empty list). */
static void hub_inst_request_cb(void *ctx, struct instance *inst, json_t *msg,
				void *cause)
{
	struct hub *hub = ctx;
	const char *method = jr_method(msg);
	const char *cap =
		strcmp(method, "sampling/createMessage") == 0 ? "sampling"
		: strcmp(method, "elicitation/create") == 0   ? "elicitation"
		: strcmp(method, "roots/list") == 0	      ? "roots"
							      : NULL;
	struct call *call = cause ? hub_cause_call(hub, inst, cause) : NULL;
	if (cause == NULL && cap)
		hub_note_asker(hub, inst);
	struct session *target = call	 ? call->session
				 : cause ? NULL
					 : hub_guess_cause(hub, inst);
	for (struct hub_entry *e = hub->sessions; e && !target; e = e->next)
		if (session_owns(e->s, inst))
			target = e->s;
	bool roots = cap && strcmp(cap, "roots") == 0;
	if (target &&
	    (cap == NULL || (session_client_has(target, cap) &&
			     (!roots || session_roots_for(target, inst))))) {
		if (session_forward_server_request(target, inst, msg, call,
						   cause == NULL))
			return;
		instance_respond(
			inst, jr_id(msg), NULL,
			json_pack("{s:i,s:s}", "code", JR_INTERNAL_ERROR,
				  "message",
				  "The client session is not listening (no "
				  "open stream) and cannot answer"));
		return;
	}
	if (roots) {
		/* app servers are everyone's: they get no client's roots. */
		instance_respond(inst, jr_id(msg), json_pack("{s:[]}", "roots"),
				 NULL);
		return;
	}
	char *text = target ? xasprintf("The client whose call on server "
					"\"%s\" asked does not support %s",
					instance_name(inst), method)
			    : xasprintf("No call of a client session is "
					"waiting on server \"%s\", so no "
					"client can answer %s",
					instance_name(inst), method);
	instance_respond(
		inst, jr_id(msg), NULL,
		json_pack("{s:i,s:s}", "code",
			  cap ? JR_INTERNAL_ERROR : JR_METHOD_NOT_FOUND,
			  "message", text));
	free(text);
}

static void hub_inst_lists_cb(void *ctx, struct instance *inst)
{
	struct hub *hub = ctx;
	hub_names_note(hub, inst);
	struct hub_fanout f;
	hub_fanout_collect(hub, inst, &f);
	for (size_t i = 0; i < f.n; i++)
		if (session_uses(f.s[i], inst))
			session_lists_changed(f.s[i], inst);
	hub_fanout_done(&f);
}

static void hub_check_quiet(struct hub *hub)
{
	if (hub->quiet_fn && pool_requests(hub->pool) == 0) {
		void (*fn)(void *) = hub->quiet_fn;
		hub->quiet_fn = NULL;
		fn(hub->quiet_arg);
	}
}

static void hub_inst_state_cb(void *ctx, struct instance *inst,
			      enum instance_state from, enum instance_state to)
{
	struct hub *hub = ctx;
	/* Lists dropped at once (explicit stop, failed start, needs_auth)
	 * change what clients see. */
	if (to == INSTANCE_STOPPING || to == INSTANCE_NEEDS_AUTH ||
	    (from == INSTANCE_STARTING && to == INSTANCE_FAILED))
		hub_inst_lists_cb(hub, inst);
	if (to == INSTANCE_STARTING && instance_starts(inst) > 1)
		metrics_restarted(
			metrics_server(hub->metrics, instance_name(inst)));
}

const struct instance_cbs hub_instance_cbs = {
	.on_notification = hub_inst_notification_cb,
	.on_request = hub_inst_request_cb,
	.on_lists = hub_inst_lists_cb,
	.on_state = hub_inst_state_cb,
};

/* Idle means no request in flight and no lease held: a busy session's
 * idle time starts again now, so it is measured from its last request's
 * end (to within one sweep). */
static void hub_sweep_cb(uv_timer_t *t)
{
	struct hub *hub = t->data;
	hub_sweep(hub);
}

void hub_sweep(struct hub *hub)
{
	uint64_t now = clock_now_ms();
	struct hub_entry *e = hub->sessions;
	while (e) {
		struct hub_entry *next = e->next;
		if (session_busy(e->s))
			session_touch(e->s, now);
		if (hub->session_timeout_ms > 0 &&
		    now - session_last_seen(e->s) >= hub->session_timeout_ms &&
		    !session_has_stream(e->s)) {
			log_debug("session %.8s expired after %llu ms idle",
				  session_id(e->s),
				  (unsigned long long)(now - session_last_seen(
								     e->s)));
			hub_session_end(hub, e->s);
		} else {
			session_sweep(e->s, now);
		}
		e = next;
	}
	hub_check_quiet(hub);
}

struct hub *hub_new(uv_loop_t *loop, struct config *cfg, const char *app_dir,
		    struct journal *journal, struct toolcache *cache)
{
	struct hub *hub = xcalloc(1, sizeof *hub);
	hub->loop = loop;
	hub->cfg = cfg;
	hub->app_dir = xstrdup(app_dir);
	hub->page_size = ROUTER_DEFAULT_PAGE;
	hub->session_timeout_ms = HUB_DEFAULT_SESSION_TIMEOUT_MS;
	hub->max_sessions = HUB_DEFAULT_MAX_SESSIONS;
	keymap_init(&hub->by_id);
	tokens_init(&hub->tokens);
	hmap_init(&hub->calls);
	hub->metrics = metrics_new();
	hub->pool = pool_new(loop, &hub_instance_cbs, hub, journal, cache);
	if (cfg->idle_timeout_ms >= 0)
		pool_set_idle_ms(hub->pool, (uint64_t)cfg->idle_timeout_ms);
	hub->spaces = spaces_new(loop);
	uv_timer_init(loop, &hub->sweep);
	hub->sweep.data = hub;
	uv_timer_start(&hub->sweep, hub_sweep_cb, HUB_SWEEP_MS, HUB_SWEEP_MS);
	return hub;
}

void hub_set_session_timeout(struct hub *hub, uint64_t ms)
{
	hub->session_timeout_ms = ms;
}

void hub_set_max_sessions(struct hub *hub, size_t n)
{
	hub->max_sessions = n ? n : HUB_DEFAULT_MAX_SESSIONS;
}

static void hub_sweep_close_cb(uv_handle_t *h)
{
	free(h->data);
}

void hub_free(struct hub *hub)
{
	if (hub == NULL)
		return;
	/* Nothing finds a session that is going. */
	keymap_free(&hub->by_id);
	for (size_t i = 0; i < hub->askers.cap; i++)
		free(hub->askers.slots[i].val);
	keymap_free(&hub->askers);
	while (hub->sessions) {
		struct hub_entry *e = hub->sessions;
		hub->sessions = e->next;
		session_free(e->s);
		free(e);
	}
	hub_signins_free(hub);
	tokens_free(&hub->tokens);
	hmap_free(&hub->calls);
	spaces_free(hub->spaces);
	hub_metrics_orphan(hub);
	pool_free(hub->pool);
	metrics_free(hub->metrics);
	config_free(hub->cfg);
	json_decref(hub->long_names);
	free(hub->app_dir);
	free(hub->reload_error);
	/* The hub itself goes with its timer. */
	uv_close((uv_handle_t *)&hub->sweep, hub_sweep_close_cb);
}

static bool hub_server_wanted(const struct server_config *s, const char *name,
			      const char *ident)
{
	if (strcmp(s->name, name) != 0 || s->error || s->disabled)
		return false;
	if (ident == NULL)
		return true;
	char *now = pool_server_ident(s);
	bool same = strcmp(now, ident) == 0;
	free(now);
	return same;
}

/* After a reload: an instance stays if the global config or a session's
 * space still resolves its server to the same settings. */
static bool hub_reload_wanted_cb(void *arg, const char *name, const char *ident)
{
	struct hub *hub = arg;
	const struct server_config *g = config_find(hub->cfg, name);
	if (g && hub_server_wanted(g, name, ident))
		return true;
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		size_t n;
		const struct server_config *const *srv =
			session_servers(e->s, &n);
		for (size_t i = 0; i < n; i++)
			if (hub_server_wanted(srv[i], name, ident))
				return true;
	}
	return false;
}

void hub_space_loaded(void *arg, const char *dir, struct trust_space *ts)
{
	struct hub *hub = arg;
	size_t nchanged = 0;
	struct session **changed = xcalloc(hub->nsessions + 1, sizeof *changed);
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		if (session_space(e->s) &&
		    strcmp(session_space(e->s), dir) == 0 &&
		    session_set_space(e->s, ts))
			changed[nchanged++] = e->s;
	if (nchanged)
		pool_reload(hub->pool, hub_reload_wanted_cb, hub);
	for (size_t i = 0; i < nchanged; i++) {
		session_lists_reset(changed[i]);
		session_lists_changed(changed[i], NULL);
	}
	free(changed);
}

unsigned hub_reload(struct hub *hub, struct config *cfg)
{
	struct config *old = hub->cfg;
	hub->cfg = cfg;
	size_t nchanged = 0;
	struct session **changed = xcalloc(hub->nsessions + 1, sizeof *changed);
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		if (session_reconfigure(e->s))
			changed[nchanged++] = e->s;
	config_free(old);
	unsigned closed = pool_reload(hub->pool, hub_reload_wanted_cb, hub);
	if (cfg->idle_timeout_ms >= 0)
		pool_set_idle_ms(hub->pool, (uint64_t)cfg->idle_timeout_ms);
	for (size_t i = 0; i < nchanged; i++)
		session_lists_reset(changed[i]);
	free(changed);
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		session_lists_changed(e->s, NULL);
	hub_names_recheck(hub);
	/* Each space's file is read again off the loop; its sessions take
	 * it in hub_space_loaded (one read per space). */
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		if (session_space(e->s))
			spaces_refresh(hub->spaces, session_space(e->s),
				       hub_space_loaded, hub);
	log_info("config reloaded from %s: %zu server(s), %u instance(s) "
		 "closed",
		 cfg->path, cfg->nservers, closed);
	return closed;
}

void hub_set_reload_error(struct hub *hub, const char *msg)
{
	free(hub->reload_error);
	hub->reload_error = msg ? xstrdup(msg) : NULL;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	hub->reload_error_at =
		(uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

void hub_request_done(struct hub *hub)
{
	hub_check_quiet(hub);
}

unsigned hub_requests(const struct hub *hub)
{
	return pool_requests(hub->pool);
}

void hub_when_quiet(struct hub *hub, void (*fn)(void *arg), void *arg)
{
	hub->quiet_fn = fn;
	hub->quiet_arg = arg;
	hub_check_quiet(hub);
}

/* The calls in flight on a server's instances, for a refusal. */
static char *hub_calls_on(struct hub *hub, const char *name)
{
	struct buf b;
	buf_init(&b);
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		session_describe_calls(e->s, name, &b);
	return b.len ? buf_steal(&b) : (buf_free(&b), NULL);
}

static int hub_control_check(struct hub *hub, const char *name, bool force,
			     const char *verb, char **msg)
{
	if (name && config_find(hub->cfg, name) == NULL) {
		*msg = xasprintf("no server named \"%s\" in %s", name,
				 hub->cfg->path);
		return -ENOENT;
	}
	char *calls = NULL;
	if (name)
		calls = hub_calls_on(hub, name);
	else
		for (size_t i = 0; i < hub->cfg->nservers && !calls; i++)
			calls = hub_calls_on(hub, hub->cfg->servers[i].name);
	if (calls && !force) {
		*msg = xasprintf(
			"not %s %s: a call is in flight (%s); wait for "
			"it or use --force",
			verb, name ? name : "every server", calls);
		free(calls);
		return -EBUSY;
	}
	free(calls);
	return 0;
}

int hub_stop_server(struct hub *hub, const char *name, bool force, char **msg)
{
	int rc = hub_control_check(hub, name, force, "stopping", msg);
	if (rc < 0)
		return rc;
	pool_stop_server(hub->pool, name);
	*msg = xasprintf("stopped %s", name ? name : "every server");
	return 0;
}

int hub_restart_server(struct hub *hub, const char *name, bool force,
		       char **msg)
{
	int rc = hub_control_check(hub, name, force, "restarting", msg);
	if (rc < 0)
		return rc;
	pool_restart_server(hub->pool, name);
	*msg = xasprintf("restarting %s", name);
	return 0;
}

const struct config *hub_config(const struct hub *hub)
{
	return hub->cfg;
}

struct pool *hub_pool(struct hub *hub)
{
	return hub->pool;
}

const char *hub_app_dir(const struct hub *hub)
{
	return hub->app_dir;
}

size_t hub_page_size(const struct hub *hub)
{
	return hub->page_size;
}

void hub_set_page_size(struct hub *hub, size_t n)
{
	hub->page_size = n;
}

/* At the cap, the session to make room: the one idle longest, never one
 * with a request in flight; one with a GET stream only when no other is
 * left (its client is still listening). NULL when all are busy. */
static struct session *hub_evictable(struct hub *hub)
{
	struct session *best = NULL;
	bool best_stream = true;
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		if (session_busy(e->s))
			continue;
		bool stream = session_has_stream(e->s);
		if (best == NULL || (best_stream && !stream) ||
		    (stream == best_stream &&
		     session_last_seen(e->s) < session_last_seen(best))) {
			best = e->s;
			best_stream = stream;
		}
	}
	return best;
}

/* Rate limit of the session-cap log lines (process-wide: they are
 * about the process's log). */
static uint64_t hub_cap_said_ms;
static size_t hub_cap_events;

json_t *hub_initialize_read(struct hub *hub, json_t *params, const char *space,
			    struct trust_space *ts, struct session **out)
{
	*out = NULL;
	if (hub->nsessions >= hub->max_sessions) {
		struct session *old = hub_evictable(hub);
		uint64_t now = clock_now_ms();
		/* A flood of initialize would log a line each: one a second
		 * says the cap is in play and how often. */
		bool say =
			now - hub_cap_said_ms >= 1000 || hub_cap_said_ms == 0;
		hub_cap_events++;
		if (say)
			hub_cap_said_ms = now;
		if (old == NULL) {
			if (say) {
				log_warn(
					"initialize refused: %zu sessions, all "
					"busy (the cap is %zu; %zu at the cap "
					"since the last line)",
					hub->nsessions, hub->max_sessions,
					hub_cap_events);
				hub_cap_events = 0;
			}
			return NULL;
		}
		if (say) {
			log_info("session %.8s ended to make room (%zu "
				 "sessions, the cap; %zu at the cap since the "
				 "last line)",
				 session_id(old), hub->nsessions,
				 hub_cap_events);
			hub_cap_events = 0;
		}
		hub_session_end(hub, old);
	}
	struct session *s = session_new(hub, space, ts, params);
	struct hub_entry *e = xcalloc(1, sizeof *e);
	e->s = s;
	e->next = hub->sessions;
	if (hub->sessions)
		hub->sessions->prev = e;
	hub->sessions = e;
	hub->nsessions++;
	keymap_put(&hub->by_id, session_id(s), e);
	*out = s;
	const char *cname = json_string_value(
		json_object_get(json_object_get(params, "clientInfo"), "name"));
	log_debug("session %.8s opened (client %s, protocol %s%s%s)",
		  session_id(s), cname ? cname : "?",
		  session_protocol_version(s), space ? ", space " : "",
		  space ? space : "");
	char *instructions = session_instructions(s);
	json_t *result = json_pack(
		"{s:s,s:{s:{s:b},s:{s:b},s:{s:b,s:b},s:{},s:{}},"
		"s:{s:s,s:s},s:s}",
		"protocolVersion", session_protocol_version(s), "capabilities",
		"tools", "listChanged", 1, "prompts", "listChanged", 1,
		"resources", "subscribe", 1, "listChanged", 1, "logging",
		"completions", "serverInfo", "name", "mcpvisor", "version",
		"0.1.0", "instructions", instructions);
	free(instructions);
	return result;
}

struct spaces *hub_spaces(struct hub *hub)
{
	return hub->spaces;
}

struct session *hub_session_find(struct hub *hub, const char *id)
{
	struct hub_entry *e = keymap_get(&hub->by_id, id);
	return e ? e->s : NULL;
}

void hub_session_end(struct hub *hub, struct session *s)
{
	struct hub_entry *e = keymap_get(&hub->by_id, session_id(s));
	if (e == NULL || e->s != s)
		return;
	keymap_del(&hub->by_id, session_id(s));
	if (e->prev)
		e->prev->next = e->next;
	else
		hub->sessions = e->next;
	if (e->next)
		e->next->prev = e->prev;
	hub->nsessions--;
	log_debug("session %.8s ended", session_id(s));
	char *id = xstrdup(session_id(s));
	/* What it followed and never unsubscribed from is no longer
	 * followed for it. */
	session_subs_leave(s);
	session_free(s);
	free(e);
	/* Instances nobody uses any longer close at once. */
	pool_session_gone(hub->pool, id);
	free(id);
	hub_check_quiet(hub);
}

size_t hub_session_count(const struct hub *hub)
{
	return hub->nsessions;
}

/* First hex digits of the id's SHA-256: enough to tell sessions apart in
 * a status, useless for acting in one. */
void hub_session_label(const char *id, char out[HUB_LABEL_LEN + 1])
{
	char hex[SHA256_HEX_BYTES];
	sha256_hex(id, strlen(id), hex);
	memcpy(out, hex, HUB_LABEL_LEN);
	out[HUB_LABEL_LEN] = '\0';
}
