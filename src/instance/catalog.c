/*
 * An instance's catalogue: the initialize handshake with version
 * negotiation, the first lists (tools, prompts, resources, templates, every
 * page, within bounds on the whole list), their refresh on list_changed
 * (one fetch in flight and one more pending per list, however many come),
 * and the lists a tool cache seeds.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "instance/backoff.h"
#include "instance/instance_int.h"
#include "journal/journal.h"
#include "jsonrpc/envelope.h"
#include "jsonrpc/jsonrpc.h"
#include "transport/upstream.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* ---- startup: initialize, initialized, first lists ---- */

/* At most INSTANCE_MAX_INSTRUCTIONS bytes, never cut inside a UTF-8
 * sequence (it goes back out as a JSON string). */
static char *instance_instructions_copy(const char *text)
{
	size_t len = strlen(text);
	if (len > INSTANCE_MAX_INSTRUCTIONS) {
		len = INSTANCE_MAX_INSTRUCTIONS;
		while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
			len--;
	}
	return xstrndup(text, len);
}

static void instance_lists_done(struct instance *inst)
{
	if (inst->state != INSTANCE_STARTING || inst->starting_lists > 0)
		return;
	uv_timer_stop(&inst->startup_timer);
	uint64_t ms = clock_now_ms() - inst->started_ms;
	char *why = xasprintf("ready in %llu ms", (unsigned long long)ms);
	backoff_reset(&inst->backoff);
	inst->lost_ports = 0;
	/* It let us in: a challenge from before is stale. */
	inst->auth_status = 0;
	free(inst->auth_metadata);
	inst->auth_metadata = NULL;
	/* Running now: a reason it failed before would be stale. */
	instance_set_error(inst, NULL);
	inst->lists_cached = false;
	inst->lists_known = true;
	instance_set_state(inst, INSTANCE_READY, why);
	instance_record_ready(inst);
	free(why);
	if (inst->cbs.on_lists)
		inst->cbs.on_lists(inst->ctx, inst);
	instance_resend(inst);
	instance_wake_waiters(inst, 0);
}

/* One fetch of one list: every page of it, in turn. */
struct instance_list_fetch {
	struct instance *inst;
	enum instance_list which;
	bool first;  /* one of the lists a start waits for */
	json_t *acc; /* the items of the pages so far */
	unsigned page;
	size_t bytes; /* the size of the pages so far */
};

static void instance_list_send(struct instance_list_fetch *f,
			       const char *cursor);

/* The fetch is over: error NULL, its items are the list; else (taken)
 * why the server's list fails, and it offers nothing of that kind, which
 * status shows. A fetch its instance let go of (the connection went)
 * changes nothing. A list_changed that came meanwhile fetches once more. */
static void instance_list_end(struct instance_list_fetch *f, char *error)
{
	struct instance *inst = f->inst;
	enum instance_list w = f->which;
	bool current = inst->list_fetch[w] == f;
	if (current)
		inst->list_fetch[w] = NULL;
	bool live = current && inst->up &&
		    (inst->state == INSTANCE_STARTING ||
		     inst->state == INSTANCE_READY);
	if (live) {
		if (error)
			log_warn("instance %s: %s", inst->name, error);
		instance_set_list(inst, w,
				  error ? json_array() : json_incref(f->acc));
		free(inst->list_error[w]);
		inst->list_error[w] = error;
		error = NULL;
		if (f->first) {
			inst->starting_lists--;
			instance_lists_done(inst);
		} else if (inst->state == INSTANCE_READY &&
			   inst->cbs.on_lists) {
			inst->cbs.on_lists(inst->ctx, inst);
		}
	}
	free(error);
	json_decref(f->acc);
	free(f);
	if (live && inst->list_again[w]) {
		inst->list_again[w] = false;
		instance_list_refresh(inst, w);
	}
}

/* Why the answer to a page is not a list: the server's error, or its
 * shape. New string. */
static char *instance_list_refused(const struct instance_list_fetch *f,
				   json_t *resp)
{
	const char *method = instance_list_methods[f->which];
	json_t *error = json_object_get(resp, "error");
	/* Its answer came and could not be used (inbound.c): say so. */
	const char *unusable = json_string_value(json_object_get(
		json_object_get(error, "data"), "answerUnusable"));
	if (unusable)
		return xasprintf("%s failed: its answer %s; nothing of it is "
				 "offered",
				 method, unusable);
	if (error) {
		const char *m =
			json_string_value(json_object_get(error, "message"));
		return xasprintf("%s failed: %.300s; nothing of it is offered",
				 method, m ? m : "(no message)");
	}
	return xasprintf("%s answered without a \"%s\" array; nothing of it "
			 "is offered",
			 method, instance_list_keys[f->which]);
}

static void instance_list_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct instance_list_fetch *f = arg;
	struct instance *inst = f->inst;
	const char *method = instance_list_methods[f->which];
	/* The size of this answer as it came (0 for one the instance made
	 * up): the bound is on what the server sends. */
	f->bytes += inst->inbound_len;
	json_t *result = json_object_get(resp, "result");
	json_t *items = json_object_get(result, instance_list_keys[f->which]);
	if (inst->list_fetch[f->which] != f || inst->up == NULL) {
		instance_list_end(f, NULL);
		return;
	}
	if (!json_is_array(items)) {
		instance_list_end(f, instance_list_refused(f, resp));
		return;
	}
	/* Bounds on the whole list, across its pages: a server cannot make
	 * the runtime hold more than this for one of its lists. */
	if (f->bytes > INSTANCE_MAX_LIST_BYTES) {
		instance_list_end(
			f, xasprintf("%s came to more than %d MiB over %u "
				     "page(s), over the limit for one list; "
				     "nothing of it is offered",
				     method, INSTANCE_MAX_LIST_BYTES >> 20,
				     f->page + 1));
		return;
	}
	if (json_array_size(f->acc) + json_array_size(items) >
	    INSTANCE_MAX_LIST_ITEMS) {
		instance_list_end(
			f, xasprintf("%s listed more than %d items, over the "
				     "limit for one list; nothing of it is "
				     "offered",
				     method, INSTANCE_MAX_LIST_ITEMS));
		return;
	}
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item)
	{
		if (json_is_object(item))
			json_array_append(f->acc, item);
	}
	const char *cursor =
		json_string_value(json_object_get(result, "nextCursor"));
	if (cursor == NULL || cursor[0] == '\0') {
		instance_list_end(f, NULL);
		return;
	}
	if (f->page + 1 >= INSTANCE_MAX_LIST_PAGES) {
		instance_list_end(
			f, xasprintf("%s went on past %d pages, over the "
				     "limit for one list; nothing of it is "
				     "offered",
				     method, INSTANCE_MAX_LIST_PAGES));
		return;
	}
	f->page++;
	char *next = xstrdup(cursor); /* resp goes with this callback */
	instance_list_send(f, next);
	free(next);
}

static void instance_list_send(struct instance_list_fetch *f,
			       const char *cursor)
{
	json_t *params = json_object();
	if (cursor)
		json_object_set_new(params, "cursor", json_string(cursor));
	/* Not sent: a connection that is going ends it with nothing to
	 * keep; one that goes on (its input full) keeps the reason. */
	int64_t rc =
		instance_send_request(f->inst, instance_list_methods[f->which],
				      params, instance_list_reply_cb, f, true);
	if (rc < 0)
		instance_list_end(
			f, xasprintf("%s could not be sent (%s); nothing of "
				     "it is offered",
				     instance_list_methods[f->which],
				     strerror((int)-rc)));
}

/* Starts fetching list w (every page); first: a start waits for it. */
static void instance_list_fetch(struct instance *inst, enum instance_list w,
				bool first)
{
	struct instance_list_fetch *f = xcalloc(1, sizeof *f);
	f->inst = inst;
	f->which = w;
	f->first = first;
	f->acc = json_array();
	inst->list_fetch[w] = f;
	inst->list_again[w] = false;
	instance_list_send(f, NULL);
}

void instance_list_refresh(struct instance *inst, enum instance_list w)
{
	if (inst->up == NULL ||
	    (inst->state != INSTANCE_READY && inst->state != INSTANCE_STARTING))
		return;
	/* One fetch at a time, and at most one more after it: a burst of
	 * list_changed costs two fetches, not one each. */
	if (inst->list_fetch[w]) {
		inst->list_again[w] = true;
		return;
	}
	/* Starting, before its first lists are asked for: those will be
	 * fresh. */
	if (inst->state == INSTANCE_STARTING && inst->starting_lists == 0)
		return;
	instance_list_fetch(inst, w, false);
}

static bool instance_is_auth_error(json_t *error)
{
	json_int_t code = json_integer_value(json_object_get(error, "code"));
	json_t *data = json_object_get(error, "data");
	json_int_t status = json_integer_value(json_object_get(data, "status"));
	const char *msg = json_string_value(json_object_get(error, "message"));
	if (status == 401 || status == 403)
		return true;
	if (code == -32001 && msg &&
	    (strcasestr(msg, "unauthorized") || strcasestr(msg, "auth")))
		return true;
	return false;
}

void instance_init_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct instance *inst = arg;
	/* Without a connection its loss is being handled already (a
	 * failure, or a re-open that sends a new initialize). */
	if (inst->state != INSTANCE_STARTING || inst->up == NULL)
		return;
	json_t *error = json_object_get(resp, "error");
	json_t *result = json_object_get(resp, "result");
	if (error) {
		const char *m =
			json_string_value(json_object_get(error, "message"));
		bool auth = instance_is_auth_error(error);
		instance_fail(inst,
			      auth ? INSTANCE_NEEDS_AUTH : INSTANCE_FAILED,
			      xasprintf("initialize failed: %s",
					m ? m : "(no message)"));
		return;
	}
	const char *version =
		json_string_value(json_object_get(result, "protocolVersion"));
	bool modern = version && strcmp(version, MODERN_VERSION) == 0;
	if (!mcp_version_supported(version) && !modern) {
		instance_fail(
			inst, INSTANCE_FAILED,
			xasprintf("server answered initialize with "
				  "protocol version \"%s\", which mcpvisor "
				  "does not speak",
				  version ? version : "(none)"));
		return;
	}
	free(inst->protocol_version);
	inst->protocol_version = xstrdup(version);
	/* Its era is known: the next opens speak 2025 at once, or (a
	 * process) probe with server/discover first. */
	inst->era_legacy = !modern;
	inst->era_modern = modern;
	json_t *caps = json_object_get(result, "capabilities");
	json_decref(inst->caps);
	inst->caps = json_is_object(caps) ? json_incref(caps) : json_object();
	const char *instr =
		json_string_value(json_object_get(result, "instructions"));
	free(inst->instructions);
	inst->instructions = instr ? instance_instructions_copy(instr) : NULL;
	instance_notify(inst, "notifications/initialized", NULL);
	/* The first lists are fetched together; the instance is ready when
	 * all have come back. */
	inst->starting_lists = 0;
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (instance_has_capability(inst, instance_list_caps[i]))
			inst->starting_lists++;
	if (inst->starting_lists == 0) {
		instance_lists_done(inst);
		return;
	}
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (instance_has_capability(inst, instance_list_caps[i]))
			instance_list_fetch(inst, (enum instance_list)i, true);
}

void instance_seed_lists(struct instance *inst, json_t *lists)
{
	if (inst->state == INSTANCE_READY || inst->lists_known)
		return;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		json_t *a = json_object_get(lists, instance_list_keys[i]);
		if (json_is_array(a))
			instance_set_list(inst, (enum instance_list)i,
					  json_incref(a));
	}
	const char *instr =
		json_string_value(json_object_get(lists, "instructions"));
	if (instr && inst->instructions == NULL)
		inst->instructions = instance_instructions_copy(instr);
	/* Known to speak a 2025 revision: no probe at its start. */
	const char *era = json_string_value(json_object_get(lists, "era"));
	if (era && strcmp(era, INSTANCE_ERA_2025) == 0)
		inst->era_legacy = true;
	else if (era && strcmp(era, INSTANCE_ERA_MODERN) == 0)
		inst->era_modern = true;
	inst->lists_cached = true;
	inst->lists_known = true;
}

const char *instance_instructions(const struct instance *inst)
{
	return inst->instructions;
}

json_t *instance_lists_json(const struct instance *inst)
{
	json_t *o = json_object();
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (inst->lists[i])
			json_object_set(o, instance_list_keys[i],
					inst->lists[i]);
	if (inst->instructions)
		json_object_set_new(o, "instructions",
				    json_string(inst->instructions));
	/* What changes the next start's probe is kept: over HTTP a 2025
	 * verdict (no server/discover first), for a process a 2026-07-28 one
	 * (server/discover first; a 2025 process is sent the initialize
	 * first anyway). */
	bool http = inst->server.kind == SERVER_HTTP_REMOTE ||
		    inst->server.kind == SERVER_HTTP_LOCAL ||
		    inst->server.kind == SERVER_CONTAINER_HTTP;
	if (inst->era_legacy && http)
		json_object_set_new(o, "era", json_string(INSTANCE_ERA_2025));
	else if (inst->era_modern && !http)
		json_object_set_new(o, "era", json_string(INSTANCE_ERA_MODERN));
	return o;
}
