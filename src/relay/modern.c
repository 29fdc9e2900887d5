/*
 * What MCP 2026-07-28 asks of the relay beyond forwarding: which host
 * messages are modern (the _meta claim), and the host's listens. A listen
 * is the host's for as long as its stdio session lasts: each runtime gets
 * a subscriptions/listen of the relay's own (a fresh request, ours), and
 * what comes on it reaches the host tagged with the host's id.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "relay/msg.h"
#include "relay/relay_int.h"
#include "util/clock.h"
#include "util/xmalloc.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"
#define LISTEN_ACK "notifications/subscriptions/acknowledged"

/* The span of key in obj._meta, obj at span of text; false when absent. */
static bool modern_meta_span(const char *text, const struct jsonscan_span *obj,
			     const char *key, struct jsonscan_span *out)
{
	static const char *const mk[] = {"_meta"};
	const char *const kk[] = {key};
	struct jsonscan_span m, v;
	if (obj->len == 0 || text[obj->off] != '{' ||
	    jsonscan_members(text + obj->off, obj->len, mk, 1, &m) < 0 ||
	    m.len == 0)
		return false;
	size_t base = obj->off + m.off;
	if (text[base] != '{' ||
	    jsonscan_members(text + base, m.len, kk, 1, &v) < 0 || v.len == 0)
		return false;
	out->off = base + v.off;
	out->len = v.len;
	return true;
}

bool relay_modern_claims(const char *line, size_t len,
			 const struct jsonscan_span *params)
{
	struct jsonscan_span v;
	(void)len;
	/* A member name with escapes never matches (jsonscan), so params
	 * without the literal "_meta" claim nothing: the common call skips
	 * the two scans. */
	if (params->len == 0 ||
	    memmem(line + params->off, params->len, "\"_meta\"", 7) == NULL)
		return false;
	return modern_meta_span(line, params, META_VERSION, &v);
}

/* ---- the host's listens ---- */

static void listen_send(struct relay *r, struct rlisten *rl)
{
	struct jsonscan_span sp[K_N];
	jsonscan_members(rl->line, rl->len, relay_msg_keys, K_N, sp);
	struct outbox_req *o =
		relay_req_add(r, RK_LISTEN, "subscriptions/listen", rl->line,
			      rl->len, &sp[K_ID]);
	struct rreq *q = outbox_req_arg(o);
	q->modern = true;
	q->listen = rl;
	rl->ours = outbox_req_id(o);
	relay_req_send(r, o);
}

/* Unlinked and freed; its request (if any) let go first. */
static void listen_drop(struct relay *r, struct rlisten *rl)
{
	if (rl->ours) {
		struct outbox_req *o = outbox_find(r->ob, rl->ours);
		if (o) {
			((struct rreq *)outbox_req_arg(o))->listen = NULL;
			relay_req_cancel(r, o);
		}
		rl->ours = 0;
	}
	struct rlisten **pp = &r->listens;
	while (*pp && *pp != rl)
		pp = &(*pp)->next;
	if (*pp)
		*pp = rl->next;
	free(rl->host_id);
	free(rl->line);
	free(rl);
}

void relay_listen_start(struct relay *r, const char *line, size_t len,
			const struct jsonscan_span *id_span)
{
	struct rlisten *rl = xcalloc(1, sizeof *rl);
	rl->host_id = xstrndup(line + id_span->off, id_span->len);
	rl->line = xstrndup(line, len);
	rl->len = len;
	rl->wait_from = clock_now_ms();
	struct rlisten **pp = &r->listens;
	while (*pp)
		pp = &(*pp)->next;
	*pp = rl;
	if (relay_may_send(r, true))
		listen_send(r, rl);
}

void relay_listens_resume(struct relay *r)
{
	struct rlisten *next;
	for (struct rlisten *rl = r->listens; rl; rl = next) {
		next = rl->next;
		if (!relay_may_send(r, true))
			return;
		if (rl->ours == 0)
			listen_send(r, rl);
	}
}

/* The runtime ended a listen the host holds (its session ended, or the
 * stream was cut while it lives): listened again, unless it keeps doing
 * so on this runtime. */
static void listen_ended(struct relay *r, struct rlisten *rl)
{
	if (rl->ends_link != r->links) {
		rl->ends_link = r->links;
		rl->ends = 0;
	}
	if (++rl->ends > RELAY_RELISTEN_MAX) {
		relay_listen_fail_of(r, rl, JR_SERVER_UNAVAILABLE,
				     "The mcpvisor runtime ends this listen "
				     "again and again; listen again later");
		return;
	}
	if (relay_may_send(r, true))
		listen_send(r, rl);
}

void relay_listen_cut(struct relay *r, struct outbox_req *o)
{
	struct rlisten *rl = ((struct rreq *)outbox_req_arg(o))->listen;
	relay_req_cancel(r, o);
	if (rl)
		listen_ended(r, rl);
}

/* msg for the host: the subscription id (at sub, when found) and the id
 * (at id, when len) are the host's. */
static void listen_write(struct relay *r, const struct rlisten *rl,
			 const char *msg, size_t len,
			 const struct jsonscan_span *sub,
			 const struct jsonscan_span *id)
{
	/* The later span first, so the earlier one's offset holds. */
	const struct jsonscan_span *a = sub, *b = id->len ? id : NULL;
	if (a && b && b->off > a->off) {
		a = b;
		b = sub;
	} else if (a == NULL) {
		a = b;
		b = NULL;
	}
	if (a == NULL) {
		r->ops->host_write(r->ctx, msg, len);
		return;
	}
	size_t n1, n2;
	char *s1 = relay_msg_splice(msg, len, a, rl->host_id, &n1);
	if (b == NULL) {
		r->ops->host_write(r->ctx, s1, n1);
		free(s1);
		return;
	}
	char *s2 = relay_msg_splice(s1, n1, b, rl->host_id, &n2);
	r->ops->host_write(r->ctx, s2, n2);
	free(s1);
	free(s2);
}

/* A listen resumed on a new runtime: a change in the gap was told to
 * nobody (a new runtime watches from what it sees when the listen comes),
 * so the host hears each kind the acknowledgement honours as changed and
 * lists again. */
static void listen_gap_notes(struct relay *r, const struct rlisten *rl,
			     const char *ack, size_t len)
{
	static const char *const kinds[][2] = {
		{"toolsListChanged", "notifications/tools/list_changed"},
		{"promptsListChanged", "notifications/prompts/list_changed"},
		{"resourcesListChanged",
		 "notifications/resources/list_changed"},
	};
	json_t *m = json_loadb(ack, len, 0, NULL);
	json_t *want = json_object_get(jr_params(m), "notifications");
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (!json_is_true(json_object_get(want, kinds[i][0])))
			continue;
		char *s =
			xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\","
				  "\"params\":{\"_meta\":{\"" META_SUBSCRIPTION
				  "\":%s}}}",
				  kinds[i][1], rl->host_id);
		r->ops->host_write(r->ctx, s, strlen(s));
		free(s);
	}
	json_decref(m);
}

void relay_listen_message(struct relay *r, struct outbox_req *o,
			  const char *msg, size_t len)
{
	static const char *const keys[] = {"id", "method", "params", "result"};
	enum { L_ID, L_METHOD, L_PARAMS, L_RESULT, L_N };
	struct rlisten *rl = ((struct rreq *)outbox_req_arg(o))->listen;
	struct jsonscan_span sp[L_N], sub;
	if (rl == NULL || jsonscan_members(msg, len, keys, L_N, sp) < 0)
		return;
	if (sp[L_METHOD].len) {
		bool ack = sp[L_METHOD].len == sizeof LISTEN_ACK + 1 &&
			   memcmp(msg + sp[L_METHOD].off + 1, LISTEN_ACK,
				  sizeof LISTEN_ACK - 1) == 0;
		/*
		 * The acknowledgement of a listen the relay sent again (a new
		 * runtime, or the runtime ended the last one) is not the
		 * host's: the host sent one listen and had its
		 * acknowledgement, from whichever runtime first gave one
		 * (rl->acked, set as it was written), and the revision sends
		 * it once, first. Until then (the runtime was lost before it
		 * acknowledged) the next runtime's is the host's first.
		 */
		if (ack && rl->acked) {
			if (rl->acked_link != r->links)
				listen_gap_notes(r, rl, msg, len);
			rl->acked_link = r->links;
			return;
		}
		struct jsonscan_span none = {0, 0};
		bool found = modern_meta_span(msg, &sp[L_PARAMS],
					      META_SUBSCRIPTION, &sub);
		listen_write(r, rl, msg, len, found ? &sub : NULL, &none);
		if (ack) {
			rl->acked = true;
			rl->acked_link = r->links;
		}
		return;
	}
	/* Its answer: the stream ends. A result after the acknowledgement
	 * is the runtime's session ending ("listen again"), which the host's
	 * stdio session did not: the relay listens again for it. */
	if (rl->acked && sp[L_RESULT].len) {
		outbox_settle(r->ob, o, OUTBOX_ANSWERED, NULL);
		listen_ended(r, rl);
		return;
	}
	bool found =
		modern_meta_span(msg, &sp[L_RESULT], META_SUBSCRIPTION, &sub);
	listen_write(r, rl, msg, len, found ? &sub : NULL, &sp[L_ID]);
	outbox_settle(r->ob, o, OUTBOX_ANSWERED, NULL);
	listen_drop(r, rl);
}

bool relay_listen_cancel(struct relay *r, const char *host_id)
{
	for (struct rlisten *rl = r->listens; rl; rl = rl->next) {
		if (strcmp(rl->host_id, host_id) != 0)
			continue;
		struct outbox_req *o =
			rl->ours ? outbox_find(r->ob, rl->ours) : NULL;
		if (o && outbox_req_state(o) == OUTBOX_WRITTEN)
			r->ops->link_forget(r->ctx, rl->ours);
		listen_drop(r, rl);
		return true;
	}
	return false;
}

void relay_listens_lost(struct relay *r, uint64_t now)
{
	for (struct rlisten *rl = r->listens; rl; rl = rl->next)
		if (!rl->acked && rl->wait_from < now)
			rl->wait_from = now;
}

void relay_listen_fail_of(struct relay *r, struct rlisten *rl, int code,
			  const char *text)
{
	relay_host_error(r, rl->host_id, code, text);
	listen_drop(r, rl);
}

void relay_listens_fail(struct relay *r, const char *text)
{
	while (r->listens)
		relay_listen_fail_of(r, r->listens, JR_SERVER_UNAVAILABLE,
				     text);
}

/* An acknowledged listen has no answer the host waits for: it waits for
 * the runtime however long. One not acknowledged is a request the host
 * waits on, and hears at the cap as a request does. */
void relay_listens_cap(struct relay *r, uint64_t now)
{
	struct rlisten *next;
	for (struct rlisten *rl = r->listens; rl; rl = next) {
		next = rl->next;
		if (!rl->acked && now >= rl->wait_from + RELAY_RECOVERY_CAP_MS)
			relay_listen_fail_of(r, rl, JR_SERVER_UNAVAILABLE,
					     "The mcpvisor runtime is still "
					     "starting again; retry in a few "
					     "seconds");
	}
}

uint64_t relay_listens_next_cap(const struct relay *r)
{
	uint64_t at = 0;
	for (const struct rlisten *rl = r->listens; rl; rl = rl->next) {
		uint64_t t = rl->wait_from + RELAY_RECOVERY_CAP_MS;
		if (!rl->acked && (at == 0 || t < at))
			at = t;
	}
	return at;
}

size_t relay_listens_written(const struct relay *r, uint64_t link)
{
	size_t n = 0;
	for (const struct rlisten *rl = r->listens; rl; rl = rl->next) {
		struct outbox_req *o =
			rl->ours ? outbox_find(r->ob, rl->ours) : NULL;
		n += o && outbox_req_on(o, link);
	}
	return n;
}

void relay_listens_free(struct relay *r)
{
	while (r->listens)
		listen_drop(r, r->listens);
}
