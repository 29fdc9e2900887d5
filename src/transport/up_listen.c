/*
 * The listen stream of a 2026-07-28 upstream (up_modern.h): its filter
 * (the list changes the server offers and the resources 2025 clients
 * follow), opening it again when it ends or when what is followed
 * changes, and its messages passed on as 2025's; and what the revision
 * removed that 2025 clients still ask (resources/subscribe and
 * unsubscribe, logging/setLevel), answered here.
 */
#include "transport/up_modern_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/jsonrpc.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* ---- listening ---------------------------------------------------------- */

/* The listen filter: the list changes the server offers, and the
 * resources 2025 clients follow (when it can); NULL when nothing. */
static json_t *upm_filter(struct upm *p)
{
	json_t *f = p->listen_kinds ? json_deep_copy(p->listen_kinds)
				    : json_object();
	if (p->can_subscribe && json_object_size(p->subs)) {
		json_t *uris = json_array();
		const char *uri;
		json_t *n;
		json_object_foreach(p->subs, uri, n)
		{
			json_array_append_new(uris, json_string(uri));
		}
		json_object_set_new(f, "resourceSubscriptions", uris);
	}
	if (json_object_size(f) == 0) {
		json_decref(f);
		return NULL;
	}
	return f;
}

void upm_listen(struct upm *p)
{
	json_t *filter = upm_filter(p);
	if (filter == NULL || p->relistens >= UPM_MAX_RELISTENS) {
		if (filter)
			log_warn("the server's subscriptions/listen stream "
				 "ended %d times in a row; its list changes "
				 "are no longer heard",
				 UPM_MAX_RELISTENS);
		json_decref(filter);
		p->listen_id = 0;
		return;
	}
	p->listen_id = UPM_LISTEN_BASE + (int64_t)p->listen_seq++;
	p->listen_ms = clock_now_ms();
	json_t *params = json_pack("{s:o}", "notifications", filter);
	if (upm_request(p, "subscriptions/listen", params, p->listen_id) < 0) {
		log_warn("subscriptions/listen could not be sent");
		p->listen_id = 0;
	}
}

/* The listen stream ended: asked for again, unless streams keep ending
 * at once (a server that cannot keep one open must not loop us). */
void upm_relisten(struct upm *p)
{
	if (clock_now_ms() - p->listen_ms >= UPM_LISTEN_SHORT_MS)
		p->relistens = 0;
	p->relistens++;
	upm_listen(p);
}

/* What is followed changed (a subscription): a new stream with the new
 * filter; the one it replaces goes once the new one is acknowledged (the
 * revision has no way to amend a filter), so nothing is missed between. */
static void upm_refilter(struct upm *p)
{
	if (!p->listening)
		return; /* the first stream opens with it */
	if (p->listen_old)
		upm_cancel(p, p->listen_old);
	p->listen_old = p->listen_id;
	p->relistens = 0;
	upm_listen(p);
	if (p->listen_id == 0 && p->listen_old) {
		/* Nothing is followed any more: the old goes now. */
		upm_cancel(p, p->listen_old);
		p->listen_old = 0;
	}
}

/* A message on listen stream sid: list changes and resource updates go
 * on as 2025's (no request caused them); the acknowledgement and the
 * stream's end stay here. */
void upm_listen_message(struct upm *p, const char *msg, size_t len, int64_t sid)
{
	json_t *n = json_loadb(msg, len, 0, NULL);
	const char *method = json_string_value(json_object_get(n, "method"));
	/* Its end: answered, or (on a channel) cancelled by the server. */
	if (method == NULL || strcmp(method, "notifications/cancelled") == 0) {
		json_decref(n);
		upm_done(p, sid);
		if (sid == p->listen_old)
			p->listen_old = 0;
		else
			upm_relisten(p);
		return;
	}
	if (strcmp(method, "notifications/subscriptions/acknowledged") == 0) {
		if (sid == p->listen_id && p->listen_old) {
			upm_cancel(p, p->listen_old);
			p->listen_old = 0;
		}
	} else {
		json_t *params = json_object_get(n, "params");
		json_object_del(json_object_get(params, "_meta"),
				META_SUBSCRIPTION_ID);
		if (json_object_size(json_object_get(params, "_meta")) == 0)
			json_object_del(params, "_meta");
		upm_give(p, n, 0);
	}
	json_decref(n);
}

/* ---- what the revision removed, answered here --------------------------- */

void upm_follow(struct upm *p, const json_t *subs)
{
	if (json_object_size(subs) == 0)
		return;
	json_decref(p->subs);
	p->subs = json_deep_copy(subs);
}

/* resources/subscribe or unsubscribe of a 2025 client: the set the
 * listen stream follows changes. */
void upm_subscribe(struct upm *p, int64_t id, json_t *params, bool on)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));
	if (uri == NULL || (on && !p->can_subscribe)) {
		json_t *e = json_pack(
			"{s:s,s:I,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
			(json_int_t)id, "error", "code",
			uri ? JR_METHOD_NOT_FOUND : JR_INVALID_PARAMS,
			"message",
			uri ? "the server offers no resource subscriptions"
			    : "params.uri must be a string");
		upm_give(p, e, id);
		json_decref(e);
		return;
	}
	if (p->subs == NULL)
		p->subs = json_object();
	json_int_t n = json_integer_value(json_object_get(p->subs, uri));
	bool changed;
	if (on) {
		changed = n == 0;
		json_object_set_new(p->subs, uri, json_integer(n + 1));
	} else {
		changed = n == 1;
		if (n <= 1)
			json_object_del(p->subs, uri);
		else
			json_object_set_new(p->subs, uri, json_integer(n - 1));
	}
	upm_answer(p, id, json_object());
	if (changed)
		upm_refilter(p);
}

/* logging/setLevel of a 2025 client: the revision has no such thing,
 * and its level is per request. One kept here would be every client's of
 * the instance; the client's session puts its own in its requests. */
void upm_set_level(struct upm *p, int64_t id, json_t *params)
{
	const char *level = json_string_value(json_object_get(params, "level"));
	if (level == NULL) {
		json_t *e = json_pack("{s:s,s:I,s:{s:i,s:s}}", "jsonrpc", "2.0",
				      "id", (json_int_t)id, "error", "code",
				      JR_INVALID_PARAMS, "message",
				      "params.level must be a string");
		upm_give(p, e, id);
		json_decref(e);
		return;
	}
	upm_answer(p, id, json_object());
}
