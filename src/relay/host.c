/*
 * What the host sends the relay, a line at a time: its requests get our
 * ids and go on, or wait for the runtime; its initialize and the
 * requests a new session must hear again are kept (recall.h); its
 * answers to a server's requests go to the runtime; its
 * notifications/cancelled names its id and is sent with ours; a
 * 2026-07-28 subscriptions/listen is kept for as long as the host's
 * session; what is not one JSON-RPC object is answered with an error.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "relay/msg.h"
#include "relay/recall.h"
#include "relay/relay.h"
#include "relay/relay_int.h"
#include "util/jsonscan.h"
#include "util/xmalloc.h"

/* notifications/cancelled from the host names its id: ours goes on. */
static void host_cancel(struct relay *r, const char *line, size_t len)
{
	json_t *m = json_loadb(line, len, 0, NULL);
	json_t *rid = json_object_get(jr_params(m), "requestId");
	char *want =
		rid ? json_dumps(rid, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(m);
	if (want == NULL)
		return;
	if (relay_listen_cancel(r, want)) {
		free(want);
		relay_hold_check(r);
		return;
	}
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o)) {
		struct rreq *q = outbox_req_arg(o);
		if (q->kind != RK_HOST || strcmp(q->host_id, want) != 0)
			continue;
		int64_t id = outbox_req_id(o);
		if (q->modern) {
			/* The revision's cancellation: its stream dropped,
			 * which the runtime takes as one; no answer. */
			if (outbox_req_state(o) == OUTBOX_WRITTEN)
				r->ops->link_forget(r->ctx, id);
		} else if (outbox_req_state(o) == OUTBOX_WRITTEN &&
			   r->state == RS_LIVE) {
			char *s = xasprintf(
				"{\"jsonrpc\":\"2.0\",\"method\":"
				"\"notifications/cancelled\",\"params\":{"
				"\"requestId\":%lld}}",
				(long long)id);
			r->ops->link_send(r->ctx, s, strlen(s), 0);
			free(s);
			r->ops->link_forget(r->ctx, id);
		}
		relay_req_cancel(r, o);
		break;
	}
	free(want);
	relay_hold_check(r);
}

void relay_host_garbage(struct relay *r, const char *what)
{
	char *t = xasprintf("Parse error: %s", what);
	relay_host_error(r, NULL, JR_PARSE_ERROR, t);
	free(t);
}

void relay_host_line(struct relay *r, const char *line, size_t len)
{
	struct jsonscan_span sp[K_N];
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i < len && line[i] == '[') {
		relay_host_error(r, NULL, JR_INVALID_REQUEST,
				 "Invalid Request: batches are not supported");
		return;
	}
	if (jsonscan_members_strict(line, len, relay_msg_keys, K_N, sp) < 0) {
		relay_host_error(
			r, NULL, JR_PARSE_ERROR,
			"Parse error: the line is not one JSON object");
		return;
	}
	char method[JR_MAX_METHOD];
	method[0] = '\0';
	if (sp[K_METHOD].len) {
		const char *m = line + sp[K_METHOD].off;
		size_t n = sp[K_METHOD].len;
		if (m[0] != '"' || n < 2 || n - 2 >= sizeof method ||
		    memchr(m, '\\', n)) {
			relay_host_error(r, NULL, JR_INVALID_REQUEST,
					 "Invalid Request: bad method");
			return;
		}
		memcpy(method, m + 1, n - 2);
		method[n - 2] = '\0';
	}
	if (method[0] == '\0') {
		/* The host's answer to a server request: the runtime's. */
		if (sp[K_ID].len && r->state == RS_LIVE)
			r->ops->link_send(r->ctx, line, len, 0);
		return;
	}
	/* The era is the message's own: a host may speak both. */
	bool modern = relay_modern_claims(line, len, &sp[K_PARAMS]);
	if (sp[K_ID].len == 0) {
		if (strcmp(method, "notifications/cancelled") == 0) {
			host_cancel(r, line, len);
			return;
		}
		if (modern) {
			if (relay_may_send(r, true))
				r->ops->link_send_modern(r->ctx, line, len, 0);
			return;
		}
		if (strcmp(method, "notifications/initialized") == 0)
			r->host_initialized = true;
		/* Notifications in a gap between runtimes are dropped: the
		 * next runtime gets a fresh session. */
		if (r->state == RS_LIVE)
			r->ops->link_send(r->ctx, line, len, 0);
		return;
	}
	if (line[sp[K_ID].off] != '"' &&
	    (line[sp[K_ID].off] < '0' || line[sp[K_ID].off] > '9') &&
	    line[sp[K_ID].off] != '-') {
		relay_host_error(
			r, NULL, JR_INVALID_REQUEST,
			"Invalid Request: id must be a string or number");
		return;
	}
	if (modern && strcmp(method, "subscriptions/listen") == 0) {
		relay_listen_start(r, line, len, &sp[K_ID]);
		if (r->state == RS_DOWN)
			relay_loss(r, RELAY_LOSS_NONE);
		else
			relay_arm(r);
		return;
	}
	/* A modern request leaves nothing for a re-initialized session to
	 * hear again, and its lists are not the session's. */
	if (!modern && strcmp(method, "initialize") == 0) {
		free(r->init_line);
		r->init_line = xstrndup(line, len);
		r->init_len = len;
	}
	if (!modern)
		recall_keep(&r->replays, method, line, len, &sp[K_PARAMS]);
	struct outbox_req *o =
		relay_req_add(r, RK_HOST, method, line, len, &sp[K_ID]);
	struct rreq *q = outbox_req_arg(o);
	q->modern = modern;
	if (!modern)
		q->list = relay_list_of(method, line, &sp[K_PARAMS]);
	if (relay_may_send(r, modern)) {
		relay_req_send(r, o);
		relay_arm(r);
	} else if (r->state == RS_DOWN) {
		relay_loss(r, RELAY_LOSS_NONE);
	}
}
