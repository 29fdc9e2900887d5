/*
 * The resources the instance's clients follow: resources/subscribe less
 * resources/unsubscribe, counted per uri when the server (or, for a
 * 2026-07-28 server, mcpvisor's side of it) answered them. Client state
 * that outlives a process: each new upstream is lent the set (the listen
 * stream of a 2026-07-28 server opens with it), and a 2025 server that
 * started again is sent resources/subscribe for each uri once its
 * handshake is done, before the requests that waited for the start.
 */
#include <stdlib.h>
#include <string.h>

#include "instance/instance_int.h"
#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* An answer to a request the instance sent for its clients (nobody waits
 * for it): an error is worth a line, nothing more. One lost with its
 * process is not an error: the next start settles it. */
static void instance_subs_warn(struct instance *inst, json_t *resp,
			       const char *what)
{
	json_t *err = json_object_get(resp, "error");
	if (err == NULL || inst->state != INSTANCE_READY)
		return;
	const char *m = json_string_value(json_object_get(err, "message"));
	char *masked = m ? instance_mask(inst, m, strlen(m)) : NULL;
	instance_warn(inst, "%s failed: %.200s", what,
		      masked ? masked : "(no message)");
	free(masked);
}

/* A subscribe sent again: a server that refuses one now (it no longer
 * offers subscriptions); the client's was answered long ago. */
static void instance_subs_reply_cb(void *arg, json_t *resp, bool sent)
{
	instance_subs_warn(arg, resp, "resources/subscribe sent again");
}

static void instance_subs_send(struct instance *inst, const char *uri)
{
	json_t *params = json_pack("{s:s}", "uri", uri);
	instance_send_request(inst, "resources/subscribe", params,
			      instance_subs_reply_cb, inst, true);
}

void instance_subs_answered(struct instance *inst, const struct outbox_req *r)
{
	const char *method = outbox_req_method(r);
	bool on = strcmp(method, "resources/subscribe") == 0;
	if (outbox_req_internal(r) ||
	    (!on && strcmp(method, "resources/unsubscribe") != 0))
		return;
	const char *uri =
		json_string_value(json_object_get(outbox_req_params(r), "uri"));
	if (uri == NULL)
		return;
	if (inst->subs == NULL)
		inst->subs = json_object();
	json_int_t n = json_integer_value(json_object_get(inst->subs, uri));
	if (on) {
		if (n == 0 &&
		    json_object_size(inst->subs) >= INSTANCE_MAX_SUBS) {
			instance_warn(inst,
				      "more than %d resources subscribed to; "
				      "this one is not subscribed again after "
				      "a restart",
				      INSTANCE_MAX_SUBS);
			return;
		}
		json_object_set_new(inst->subs, uri, json_integer(n + 1));
		return;
	}
	if (n <= 1) {
		json_object_del(inst->subs, uri);
		return;
	}
	json_object_set_new(inst->subs, uri, json_integer(n - 1));
	/* A 2025 server keeps one subscription per session, and this is one
	 * session for every client: one client's unsubscribe ended the
	 * others'. Theirs is asked for again. (A 2026-07-28 server's is
	 * counted on mcpvisor's side, and this one never left.) */
	if (!inst->era_modern)
		instance_subs_send(inst, uri);
}

/* The unsubscribe of a uri whose last follower's session ended. */
static void instance_subs_left_cb(void *arg, json_t *resp, bool sent)
{
	instance_subs_warn(arg, resp,
			   "resources/unsubscribe for a session that ended");
}

void instance_subs_leave(struct instance *inst, const char *uri, unsigned n)
{
	json_int_t had = json_integer_value(json_object_get(inst->subs, uri));
	/* Not counted (past INSTANCE_MAX_SUBS), or an instance the reload
	 * made anew, which never had it. */
	if (had <= 0 || n == 0)
		return;
	json_int_t left = had > (json_int_t)n ? had - (json_int_t)n : 0;
	if (left)
		json_object_set_new(inst->subs, uri, json_integer(left));
	else
		json_object_del(inst->subs, uri);
	/* Not running: the next start follows what is left. */
	if (inst->state != INSTANCE_READY)
		return;
	/* A 2026-07-28 server's upstream counts each client's subscribes
	 * itself: each is undone there. A 2025 server holds one
	 * subscription for every client: undone only when nobody else
	 * follows the uri. */
	unsigned sends = inst->era_modern ? (unsigned)(had - left)
			 : left == 0	  ? 1
					  : 0;
	for (unsigned i = 0; i < sends; i++)
		instance_send_request(inst, "resources/unsubscribe",
				      json_pack("{s:s}", "uri", uri),
				      instance_subs_left_cb, inst, true);
}

size_t instance_subs_followed(const struct instance *inst)
{
	return json_object_size(inst->subs);
}

void instance_subs_restore(struct instance *inst)
{
	if (json_object_size(inst->subs) == 0)
		return;
	/* The uris are what clients asked for; masked all the same, as
	 * anything else that reaches the log. */
	struct buf list;
	buf_init(&list);
	const char *uri;
	json_t *n;
	json_object_foreach(inst->subs, uri, n)
	{
		if (list.len)
			buf_puts(&list, ", ");
		buf_puts(&list, uri);
		if (!inst->era_modern)
			instance_subs_send(inst, uri);
	}
	char *masked = instance_mask(inst, list.data, list.len);
	log_info("instance %s: %zu resource subscription%s %s: %.2000s",
		 inst->name, json_object_size(inst->subs),
		 json_object_size(inst->subs) == 1 ? "" : "s",
		 inst->era_modern ? "followed again by its listen stream"
				  : "sent again (resources/subscribe)",
		 masked);
	free(masked);
	buf_free(&list);
}
