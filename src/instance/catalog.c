/*
 * An instance's catalogue: the initialize handshake with version
 * negotiation, the first lists (tools, prompts, resources, templates, every
 * page), their refresh on list_changed, and the lists a tool cache seeds.
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
	free(why);
	if (inst->cbs.on_lists)
		inst->cbs.on_lists(inst->ctx, inst);
	instance_resend(inst);
	instance_wake_waiters(inst, 0);
}

struct instance_list_fetch {
	struct instance *inst;
	enum instance_list which;
	json_t *acc;
	unsigned page;
};

static void instance_list_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct instance_list_fetch *f = arg;
	struct instance *inst = f->inst;
	json_t *result = json_object_get(resp, "result");
	json_t *items = json_object_get(result, instance_list_keys[f->which]);
	bool starting = inst->state == INSTANCE_STARTING;
	if (!json_is_array(items)) {
		/* A server that errors on a list it declared offers nothing
		 * of that kind; it is not a reason to fail the start. */
		if (inst->state == INSTANCE_STARTING ||
		    inst->state == INSTANCE_READY)
			log_warn("instance %s: %s failed; treating as empty",
				 inst->name, instance_list_methods[f->which]);
	} else {
		size_t i;
		json_t *item;
		json_array_foreach(items, i, item)
		{
			if (json_array_size(f->acc) >= INSTANCE_MAX_LIST_ITEMS)
				break;
			if (json_is_object(item))
				json_array_append(f->acc, item);
		}
		const char *cursor = json_string_value(
			json_object_get(result, "nextCursor"));
		if (cursor && cursor[0] &&
		    f->page + 1 < INSTANCE_MAX_LIST_PAGES &&
		    json_array_size(f->acc) < INSTANCE_MAX_LIST_ITEMS &&
		    inst->up) {
			instance_fetch_list(inst, f->which, f->acc, cursor,
					    f->page + 1);
			json_decref(f->acc);
			free(f);
			return;
		}
	}
	if (inst->up && (starting || inst->state == INSTANCE_READY)) {
		json_decref(inst->lists[f->which]);
		inst->lists[f->which] = json_incref(f->acc);
		if (starting) {
			inst->starting_lists--;
			instance_lists_done(inst);
		} else if (inst->cbs.on_lists) {
			inst->cbs.on_lists(inst->ctx, inst);
		}
	}
	json_decref(f->acc);
	free(f);
}

void instance_fetch_list(struct instance *inst, enum instance_list which,
			 json_t *acc, const char *cursor, unsigned page)
{
	struct instance_list_fetch *f = xcalloc(1, sizeof *f);
	f->inst = inst;
	f->which = which;
	f->acc = acc ? json_incref(acc) : json_array();
	f->page = page;
	json_t *params = json_object();
	if (cursor)
		json_object_set_new(params, "cursor", json_string(cursor));
	if (instance_send_request(inst, instance_list_methods[which], params,
				  instance_list_reply_cb, f, true) < 0) {
		json_decref(f->acc);
		free(f);
	}
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
	if (!mcp_version_supported(version)) {
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
			instance_fetch_list(inst, (enum instance_list)i, NULL,
					    NULL, 0);
}

void instance_seed_lists(struct instance *inst, json_t *lists)
{
	if (inst->state == INSTANCE_READY || inst->lists_known)
		return;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		json_t *a = json_object_get(lists, instance_list_keys[i]);
		if (json_is_array(a)) {
			json_decref(inst->lists[i]);
			inst->lists[i] = json_incref(a);
		}
	}
	const char *instr =
		json_string_value(json_object_get(lists, "instructions"));
	if (instr && inst->instructions == NULL)
		inst->instructions = instance_instructions_copy(instr);
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
	return o;
}
