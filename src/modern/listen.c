/*
 * subscriptions/listen: a 2026-07-28 client's stream of list changes.
 * The hidden session's standing stream is ours (the fan): what the
 * session would tell a 2025 client on its GET stream goes to each listen
 * stream that asked for that kind, tagged with the listen request's id,
 * after an acknowledgement naming what is honoured.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "modern/modern_int.h"
#include "session/hub.h"
#include "util/xmalloc.h"

static const struct {
	const char *key;	  /* in params.notifications */
	const char *notification; /* what the session sends */
	unsigned kind;
} listen_kinds[] = {
	{"toolsListChanged", "notifications/tools/list_changed", LISTEN_TOOLS},
	{"promptsListChanged", "notifications/prompts/list_changed",
	 LISTEN_PROMPTS},
	{"resourcesListChanged", "notifications/resources/list_changed",
	 LISTEN_RESOURCES},
};
#define LISTEN_NKINDS (sizeof listen_kinds / sizeof listen_kinds[0])

static json_t *listen_meta(struct modern_req *r)
{
	return json_pack("{s:O}", META_SUBSCRIPTION_ID, r->client_id);
}

/* Whether l follows the resource uri. */
static bool listen_follows(struct modern_req *l, const char *uri)
{
	size_t i;
	json_t *u;
	json_array_foreach(l->subs, i, u)
	{
		if (strcmp(json_string_value(u), uri) == 0)
			return true;
	}
	return false;
}

/* A resource changed: the streams that follow it are told. */
static void listen_updated(struct modern_space *sp, json_t *msg)
{
	const char *uri =
		json_string_value(json_object_get(jr_params(msg), "uri"));
	if (uri == NULL)
		return;
	for (struct modern_req *l = sp->listeners; l; l = l->next_listener) {
		if (!listen_follows(l, uri))
			continue;
		json_t *params = json_pack("{s:s,s:o}", "uri", uri, "_meta",
					   listen_meta(l));
		mreq_send(l,
			  jr_notification("notifications/resources/updated",
					  params),
			  false);
	}
}

static void listen_noop_deliver(void *ctx, json_t *msg, const char *event_id,
				const char *data, size_t len)
{
}

static void listen_noop_finish(void *ctx)
{
}

/* Where the answers to our own subscribe and unsubscribe go: nowhere (a
 * server that cannot subscribe simply sends no update). */
static const struct exchange_ops listen_noop_ops = {
	.deliver = listen_noop_deliver,
	.finish = listen_noop_finish,
};

/* resources/subscribe or unsubscribe of uri on the hidden session. */
static void listen_subscribe(struct modern *m, struct session *s,
			     const char *method, const char *uri)
{
	struct exchange *ex = exchange_new(&listen_noop_ops, NULL, 1);
	json_t *req = jr_request(json_integer(++m->next_inner), method,
				 json_pack("{s:s}", "uri", uri));
	session_handle(s, req, ex);
	json_decref(req);
	exchange_unref(ex);
}

/* A message of the fan (the session's standing stream). */
static void listen_fan_deliver(void *ctx, json_t *msg, const char *event_id,
			       const char *data, size_t len)
{
	struct modern_space *sp = ctx;
	json_t *parsed = NULL;
	if (msg == NULL) {
		parsed = json_loadb(data, len, 0, NULL);
		msg = parsed;
		if (msg == NULL)
			return;
	}
	const char *method = jr_method(msg);
	struct session *s =
		sp->sid[0] ? hub_session_find(sp->m->hub, sp->sid) : NULL;
	if (method && jr_id(msg)) {
		/* A server's request no call caused: a 2026-07-28 client
		 * is asked only inside a call. */
		if (s) {
			json_t *e = jr_error(jr_id(msg), JR_METHOD_NOT_FOUND,
					     "No call of this client is "
					     "waiting to be asked",
					     NULL);
			session_handle(s, e, NULL);
			json_decref(e);
		}
		json_decref(parsed);
		return;
	}
	if (method && strcmp(method, "notifications/resources/updated") == 0) {
		listen_updated(sp, msg);
		json_decref(parsed);
		return;
	}
	unsigned kind = 0;
	for (size_t i = 0; method && i < LISTEN_NKINDS; i++)
		if (strcmp(method, listen_kinds[i].notification) == 0)
			kind = listen_kinds[i].kind;
	for (struct modern_req *l = sp->listeners; kind && l;
	     l = l->next_listener) {
		if (!(l->kinds & kind))
			continue;
		json_t *params = json_object();
		json_object_set_new(params, "_meta", listen_meta(l));
		mreq_send(l, jr_notification(method, params), false);
	}
	/* Told: watch for the next change from what is seen now. */
	if (kind && s)
		session_lists_prime(s);
	json_decref(parsed);
}

static void listen_fan_finish(void *ctx)
{
	listen_space_gone(ctx);
}

static const struct exchange_ops listen_fan_ops = {
	.deliver = listen_fan_deliver,
	.finish = listen_fan_finish,
};

struct modern_req *listen_start(struct modern_space *sp, struct session *s,
				struct modern_req *r)
{
	if (sp->nlisteners >= MODERN_MAX_LISTENERS) {
		mreq_fail(r, JR_SERVER_UNAVAILABLE,
			  "Too many listen streams are open for this client",
			  NULL);
		return NULL;
	}
	json_t *want = json_object_get(jr_params(r->msg), "notifications");
	json_t *honoured = json_object();
	for (size_t i = 0; i < LISTEN_NKINDS; i++) {
		if (!json_is_true(json_object_get(want, listen_kinds[i].key)))
			continue;
		r->kinds |= listen_kinds[i].kind;
		json_object_set_new(honoured, listen_kinds[i].key, json_true());
	}
	/* Resources: each uri followed is subscribed on the hidden session
	 * (its server's subscription is shared by the instance; a server
	 * that cannot subscribe refuses, and sends no update). */
	json_t *uris = json_object_get(want, "resourceSubscriptions");
	r->subs = json_array();
	size_t i;
	json_t *u;
	json_array_foreach(uris, i, u)
	{
		const char *uri = json_string_value(u);
		if (uri == NULL || strlen(uri) > MODERN_MAX_URI ||
		    json_array_size(r->subs) >= MODERN_MAX_SUBS ||
		    listen_follows(r, uri))
			continue;
		json_array_append(r->subs, u);
		listen_subscribe(sp->m, s, "resources/subscribe", uri);
	}
	if (json_array_size(r->subs) > 0)
		json_object_set(honoured, "resourceSubscriptions", r->subs);
	r->state = MREQ_LISTEN;
	r->listening = true;
	r->next_listener = sp->listeners;
	sp->listeners = r;
	sp->nlisteners++;
	sp->m->nlisteners++;
	if (sp->fan == NULL) {
		sp->fan = exchange_new(&listen_fan_ops, sp, 0);
		session_set_stream(s, sp->fan);
	}
	session_lists_prime(s);
	json_t *params = json_pack("{s:o,s:o}", "notifications", honoured,
				   "_meta", listen_meta(r));
	mreq_send(r,
		  jr_notification("notifications/subscriptions/acknowledged",
				  params),
		  false);
	return r;
}

void listen_drop(struct modern_req *r)
{
	if (!r->listening)
		return;
	r->listening = false;
	struct modern_space *sp = r->sp;
	struct modern_req **pp = &sp->listeners;
	while (*pp && *pp != r)
		pp = &(*pp)->next_listener;
	if (*pp)
		*pp = r->next_listener;
	sp->nlisteners--;
	sp->m->nlisteners--;
	/* What no other stream of the session follows is let go. */
	struct session *s =
		sp->sid[0] ? hub_session_find(sp->m->hub, sp->sid) : NULL;
	size_t i;
	json_t *u;
	json_array_foreach(r->subs, i, u)
	{
		bool kept = false;
		for (struct modern_req *l = sp->listeners; l && !kept;
		     l = l->next_listener)
			kept = listen_follows(l, json_string_value(u));
		if (!kept && s)
			listen_subscribe(sp->m, s, "resources/unsubscribe",
					 json_string_value(u));
	}
}

void listen_space_gone(struct modern_space *sp)
{
	/* The session ended: each stream gets the closing result and ends
	 * (the client listens again, on a new session). Nothing is sent to
	 * the session that is going. */
	sp->sid[0] = '\0';
	while (sp->listeners) {
		struct modern_req *l = sp->listeners;
		listen_drop(l);
		json_t *result = json_pack("{s:s,s:o}", "resultType",
					   "complete", "_meta", listen_meta(l));
		mreq_send(l, jr_result(l->client_id, result), true);
		mreq_end(l);
	}
	if (sp->fan) {
		exchange_detach(sp->fan);
		exchange_unref(sp->fan);
		sp->fan = NULL;
	}
	sp->sid[0] = '\0';
}
