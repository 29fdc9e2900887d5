/*
 * An instance's requests: they live in its outbox under ids of its own,
 * each with one outcome. When an answer will not come, what is known of
 * it (a fact from the transport, with its id) goes to the outbox's rule
 * (outbox_judge), which says: send it again (under the same id, so a
 * cancel still finds it), or answer that it did not run, or that it may
 * or may not have taken effect. Also the toolTimeout deadlines and the
 * messages that come back from the server, including the ones that name
 * no request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance/backoff.h"
#include "instance/instance_int.h"
#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "transport/upstream.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The error for a request lost after it was sent that is not sent again:
 * one that may have changed something (the client must not be led to run
 * it twice), or one that changes nothing lost for the second time (the
 * server is likely killed by it). */
static json_t *instance_lost_error(struct instance *inst, bool may_have_run)
{
	const char *reason = instance_lost_reason(inst);
	char *msg = xasprintf(
		"Server \"%s\" went away while handling this request (%s)%s",
		inst->name, reason,
		may_have_run
			? "; it may or may not have taken effect, so check "
			  "before retrying."
			: ", for the second time, so it is not sent "
			  "again.");
	json_t *data = json_pack("{s:s,s:s,s:b}", "server", inst->name,
				 "reason", reason, "mayHaveRun", may_have_run);
	json_t *err = jr_error(NULL, JR_SERVER_UNAVAILABLE, msg, data);
	free(msg);
	return err;
}

bool instance_resent_in_flight(const struct instance *inst)
{
	for (struct outbox_req *r = outbox_first(inst->outbox); r;
	     r = outbox_next(inst->outbox, r))
		if (outbox_req_state(r) == OUTBOX_WRITTEN &&
		    outbox_req_sends(r) > 1)
			return true;
	return false;
}

void instance_settle_lost(struct instance *inst, struct outbox_req *r,
			  enum outbox_verdict v)
{
	unsigned reached = outbox_req_reached(r);
	json_t *err = v == OUTBOX_FAIL_MAYBE ? instance_lost_error(inst, true)
		      : reached > 1	     ? instance_lost_error(inst, false)
				    : instance_unavailable_error(inst, reached);
	outbox_settle(inst->outbox, r,
		      reached ? OUTBOX_LOST_SENT : OUTBOX_LOST_UNSENT, err);
	json_decref(err);
}

struct instance_walk {
	struct instance *inst;
	bool reconnects;
	void (*fn)(struct instance *, struct outbox_req *);
	uint64_t now, next; /* instance_expire: the clock, the next due */
};

static bool instance_pending_step(void *arg, struct outbox_req *r)
{
	struct instance_walk *w = arg;
	bool written = outbox_req_state(r) == OUTBOX_WRITTEN;
	/* A queued request waits for the next connection, if any. */
	if (!written && w->reconnects)
		return true;
	enum outbox_verdict v = outbox_judge(
		w->inst->outbox, r, w->reconnects ? OUTBOX_CUT : OUTBOX_ENDING);
	if (v != OUTBOX_RESEND)
		instance_settle_lost(w->inst, r, v);
	return true;
}

void instance_fail_pending(struct instance *inst, bool reconnects)
{
	struct instance_walk w = {.inst = inst, .reconnects = reconnects};
	outbox_each(inst->outbox, instance_pending_step, &w);
}

/*
 * The transport lost one request's answer while the connection goes on
 * (an HTTP stream that ended without it, a POST refused). The rule
 * decides; the handshake's and the lists' own requests get the error,
 * which their callbacks handle as any failed answer.
 */
void instance_lose_request(struct instance *inst, struct outbox_req *r,
			   enum outbox_fact f)
{
	enum outbox_verdict v = outbox_judge(inst->outbox, r, f);
	static const char *const facts[] = {
		[OUTBOX_UNWRITTEN] = "before it was sent",
		[OUTBOX_REFUSED] = "unprocessed (refused by the server)",
		[OUTBOX_CUT] = "after it was sent",
		[OUTBOX_ENDING] = "as the connection ends",
	};
	log_info("instance %s: the answer to %s (id %" PRId64 ") was lost %s"
		 "%s",
		 inst->name, outbox_req_method(r), outbox_req_id(r), facts[f],
		 v == OUTBOX_RESEND ? "; sending it again" : "");
	if (v == OUTBOX_RESEND) {
		if (inst->state == INSTANCE_READY)
			instance_resend(inst);
		return;
	}
	const char *outer = inst->stop_why;
	if (inst->last_error == NULL)
		inst->stop_why = f == OUTBOX_CUT
					 ? "its answer was lost on the way"
					 : "it could not be sent";
	instance_settle_lost(inst, r, v);
	inst->stop_why = outer;
}

/* A queued request that will not be written: the rule says how it is
 * answered (a re-send's earlier write may have reached the server). */
static void instance_lose_unsent(struct instance *inst, struct outbox_req *r)
{
	instance_settle_lost(inst, r,
			     outbox_judge(inst->outbox, r, OUTBOX_ENDING));
}

static bool instance_queued_step(void *arg, struct outbox_req *r)
{
	struct instance_walk *w = arg;
	if (outbox_req_state(r) == OUTBOX_QUEUED)
		w->fn(w->inst, r);
	return true;
}

/* Calls fn for each request still queued (fn may settle any request: a
 * callback may end others). */
static void instance_each_queued(struct instance *inst,
				 void (*fn)(struct instance *,
					    struct outbox_req *))
{
	struct instance_walk w = {.inst = inst, .fn = fn};
	outbox_each(inst->outbox, instance_queued_step, &w);
}

void instance_fail_resend(struct instance *inst)
{
	instance_each_queued(inst, instance_lose_unsent);
}

bool instance_has_queued(const struct instance *inst)
{
	for (struct outbox_req *r = outbox_first(inst->outbox); r;
	     r = outbox_next(inst->outbox, r))
		if (outbox_req_state(r) == OUTBOX_QUEUED)
			return true;
	return false;
}

/* Writes r on the current connection: 0 or -errno. */
static int instance_write_req(struct instance *inst, struct outbox_req *r)
{
	/* The rule's guard: nothing writes a call that may have run. */
	if (!outbox_may_write(r))
		return -EALREADY;
	size_t len;
	const char *kept = outbox_req_msg(r, &len);
	if (kept) {
		int rc = inst->ops->send(inst->up, kept, len, outbox_req_id(r));
		if (rc == 0)
			outbox_written(inst->outbox, r, inst->gen);
		return rc;
	}
	json_t *msg = jr_request(
		json_integer(outbox_req_id(r)), outbox_req_method(r),
		outbox_req_params(r) ? json_incref(outbox_req_params(r))
				     : NULL);
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (s == NULL)
		return -EINVAL;
	int rc = inst->ops->send(inst->up, s, strlen(s), outbox_req_id(r));
	free(s);
	if (rc == 0)
		outbox_written(inst->outbox, r, inst->gen);
	return rc;
}

static void instance_deadline_cb(uv_timer_t *t)
{
	instance_expire(t->data);
}

/* The toolTimeout applies to tools/call: the one request whose running
 * time is the tool's. */
static void instance_arm_deadline(struct instance *inst, struct outbox_req *r)
{
	if (inst->tool_timeout_ms == 0 || outbox_req_internal(r) ||
	    strcmp(outbox_req_method(r), "tools/call") != 0)
		return;
	outbox_req_set_deadline(r, clock_now_ms() + inst->tool_timeout_ms);
	/* Deadlines come in the order of sending, so an armed timer already
	 * waits for an earlier one, which re-arms for the rest. */
	if (!uv_is_active((uv_handle_t *)&inst->deadline_timer))
		uv_timer_start(&inst->deadline_timer, instance_deadline_cb,
			       inst->tool_timeout_ms, 0);
}

int64_t instance_send_request(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb, void *arg,
			      bool internal)
{
	if (inst->up == NULL) {
		json_decref(params);
		return -EPIPE;
	}
	struct outbox_req *r = outbox_add(inst->outbox, method, params,
					  internal, cb, NULL, arg);
	int rc = instance_write_req(inst, r);
	if (rc < 0) {
		outbox_settle(inst->outbox, r, OUTBOX_CANCELLED, NULL);
		return rc;
	}
	if (internal) {
		/* Never re-sent: no need to keep them. */
		outbox_req_set_params(r, NULL);
	}
	instance_arm_deadline(inst, r);
	return outbox_req_id(r);
}

static void instance_resend_one(struct instance *inst, struct outbox_req *r)
{
	log_info("instance %s: sending %s again (id %" PRId64 ")", inst->name,
		 outbox_req_method(r), outbox_req_id(r));
	int rc = inst->up ? instance_write_req(inst, r) : -EPIPE;
	/* A full queue: it waits for the transport's on_drain. */
	if (rc == -ENOBUFS)
		return;
	if (rc < 0)
		instance_lose_unsent(inst, r);
}

void instance_resend(struct instance *inst)
{
	instance_each_queued(inst, instance_resend_one);
}

int64_t instance_request_text(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb,
			      instance_text_cb text_cb, void *arg)
{
	int64_t id = instance_request(inst, method, params, cb, arg);
	if (id > 0)
		outbox_req_set_text_cb(outbox_find(inst->outbox, id), text_cb);
	return id;
}

/* {"name": ...} of params sent as text, for the toolTimeout's message
 * (only when one is set: it costs a scan). */
static json_t *instance_raw_name(const char *params, size_t len)
{
	static const char *const keys[] = {"name"};
	struct jsonscan_span sp;
	if (jsonscan_members(params, len, keys, 1, &sp) < 0 || sp.len == 0)
		return NULL;
	json_t *name =
		json_loadb(params + sp.off, sp.len, JSON_DECODE_ANY, NULL);
	if (!json_is_string(name)) {
		json_decref(name);
		return NULL;
	}
	return json_pack("{s:o}", "name", name);
}

int64_t instance_request_raw(struct instance *inst, const char *method,
			     const char *params, size_t params_len,
			     instance_reply_cb cb, instance_text_cb text_cb,
			     void *arg)
{
	if (inst->state != INSTANCE_READY || inst->up == NULL)
		return -EAGAIN;
	/* The message goes into a buffer the instance keeps: no
	 * allocation per call once it has grown. */
	struct buf *b = &inst->scratch;
	int64_t id = outbox_peek_id(inst->outbox);
	buf_reset(b);
	buf_reserve(b, params_len + 64);
	buf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
	buf_put_u64(b, (unsigned long long)id);
	buf_puts(b, ",\"method\":\"");
	buf_puts(b, method);
	buf_puts(b, "\",\"params\":");
	buf_append(b, params, params_len);
	buf_puts(b, "}");
	int rc = inst->ops->send(inst->up, b->data, b->len, id);
	if (rc < 0) {
		if (b->cap > 4 * 1024 * 1024)
			buf_free(b); /* one huge call does not pin memory */
		return rc;
	}
	struct outbox_req *r =
		outbox_add(inst->outbox, method, NULL, false, cb, text_cb, arg);
	outbox_written(inst->outbox, r, inst->gen);
	/* Kept to write again only where the rule may ask for it: a
	 * transport that can prove a request unprocessed after send
	 * returned (HTTP: refused, unwritten), or a request that changes
	 * nothing. A stdio call is written once and needs no copy. */
	if ((inst->ops->caps & UPSTREAM_LATE_FACTS) || outbox_req_idempotent(r))
		outbox_req_set_msg(r, b->data, b->len);
	if (inst->tool_timeout_ms > 0)
		outbox_req_set_hint(r, instance_raw_name(params, params_len));
	if (b->cap > 4 * 1024 * 1024)
		buf_free(b); /* one huge call does not pin its memory */
	instance_arm_deadline(inst, r);
	return outbox_req_id(r);
}

int64_t instance_request(struct instance *inst, const char *method,
			 json_t *params, instance_reply_cb cb, void *arg)
{
	if (inst->state != INSTANCE_READY) {
		json_decref(params);
		return -EAGAIN;
	}
	return instance_send_request(inst, method, params, cb, arg, false);
}

static const char *instance_send_errtext(int rc)
{
	switch (rc) {
	case -ENOBUFS:
		return "its input is full (the server is not reading it)";
	case -EPIPE:
		return "the connection is gone";
	default:
		return strerror(-rc);
	}
}

/* The server is told a request it was sent is cancelled, and the
 * transport stops waiting for its answer (an HTTP stream tied to it). */
static void instance_tell_cancelled(struct instance *inst, int64_t id,
				    const char *reason)
{
	if (inst->ops->forget)
		inst->ops->forget(inst->up, id);
	json_t *params = json_object();
	json_object_set_new(params, "requestId", json_integer(id));
	if (reason)
		json_object_set_new(params, "reason", json_string(reason));
	instance_notify(inst, "notifications/cancelled", params);
}

bool instance_cancel(struct instance *inst, int64_t id, const char *reason)
{
	struct outbox_req *r = outbox_find(inst->outbox, id);
	if (r == NULL)
		return false;
	/* Only the connection it was written on has heard of it. */
	bool tell = outbox_req_on(r, inst->gen) && inst->up != NULL;
	outbox_settle(inst->outbox, r, OUTBOX_CANCELLED, NULL);
	if (tell)
		instance_tell_cancelled(inst, id, reason);
	return true;
}

static int instance_write(struct instance *inst, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s == NULL)
		return -EINVAL;
	int rc = inst->ops->send(inst->up, s, strlen(s), 0);
	free(s);
	return rc;
}

int instance_notify(struct instance *inst, const char *method, json_t *params)
{
	int rc = -EPIPE;
	if (inst->up != NULL) {
		json_t *msg = jr_notification(method, params);
		params = NULL;
		rc = instance_write(inst, msg);
		json_decref(msg);
	}
	json_decref(params);
	/* Nothing answers a notification, so a lost one is only seen
	 * here (a cancellation the server never heard of). */
	if (rc < 0)
		log_warn("instance %s: %s not sent: %s", inst->name, method,
			 instance_send_errtext(rc));
	return rc;
}

int instance_respond_on(struct instance *inst, uint64_t gen, json_t *id,
			json_t *result, json_t *error)
{
	int rc = -EPIPE;
	if (gen != 0 && gen != inst->gen) {
		/* The request came from a connection since replaced: its
		 * id means nothing (or something else) to the new one. */
		rc = -ESTALE;
	} else if (inst->up != NULL) {
		json_t *msg = json_object();
		json_object_set_new(msg, "jsonrpc", json_string("2.0"));
		json_object_set(msg, "id", id);
		if (error)
			json_object_set_new(msg, "error", error);
		else
			json_object_set_new(msg, "result",
					    result ? result : json_object());
		result = error = NULL;
		rc = instance_write(inst, msg);
		json_decref(msg);
	}
	json_decref(result);
	json_decref(error);
	if (rc < 0)
		log_warn("instance %s: answer to the server's request not "
			 "sent: %s",
			 inst->name,
			 rc == -ESTALE ? "the server that asked is gone"
				       : instance_send_errtext(rc));
	return rc;
}

int instance_respond(struct instance *inst, json_t *id, json_t *result,
		     json_t *error)
{
	return instance_respond_on(inst, 0, id, result, error);
}

uint64_t instance_conn_gen(const struct instance *inst)
{
	return inst->up ? inst->gen : 0;
}

/* ---- toolTimeout ---- */

static json_t *instance_timeout_error(struct instance *inst,
				      const struct outbox_req *r)
{
	json_t *about = outbox_req_params(r) ? outbox_req_params(r)
					     : outbox_req_hint(r);
	const char *tool = json_string_value(json_object_get(about, "name"));
	unsigned long long ms = (unsigned long long)inst->tool_timeout_ms;
	char *msg = xasprintf(
		"Server \"%s\" did not answer %s%s%s%s within its toolTimeout "
		"of %llu.%03llu s; the call was cancelled on the server and "
		"may or may not have taken effect.",
		inst->name, outbox_req_method(r), tool ? " \"" : "",
		tool ? tool : "", tool ? "\"" : "", ms / 1000, ms % 1000);
	json_t *data =
		json_pack("{s:s,s:I,s:b}", "server", inst->name,
			  "toolTimeoutMs", (json_int_t)ms, "mayHaveRun", 1);
	if (tool)
		json_object_set_new(data, "tool", json_string(tool));
	json_t *err = jr_error(NULL, JR_REQUEST_TIMEOUT, msg, data);
	free(msg);
	return err;
}

static bool instance_expire_step(void *arg, struct outbox_req *r)
{
	struct instance_walk *w = arg;
	struct instance *inst = w->inst;
	uint64_t due = outbox_req_deadline(r);
	if (due == 0)
		return true;
	if (due > w->now) {
		if (w->next == 0 || due < w->next)
			w->next = due;
		return true;
	}
	log_warn("instance %s: %s (id %" PRId64 ") passed its toolTimeout; "
		 "cancelled",
		 inst->name, outbox_req_method(r), outbox_req_id(r));
	json_t *err = instance_timeout_error(inst, r);
	int64_t id = outbox_req_id(r);
	bool tell = outbox_req_on(r, inst->gen) && inst->up != NULL;
	outbox_settle(inst->outbox, r, OUTBOX_LOST_SENT, err);
	json_decref(err);
	if (tell)
		instance_tell_cancelled(inst, id, "toolTimeout");
	return true;
}

void instance_expire(struct instance *inst)
{
	struct instance_walk w = {.inst = inst, .now = clock_now_ms()};
	outbox_each(inst->outbox, instance_expire_step, &w);
	uint64_t now = w.now, next = w.next;
	uv_timer_stop(&inst->deadline_timer);
	if (next > 0 && !inst->freeing)
		uv_timer_start(&inst->deadline_timer, instance_deadline_cb,
			       next - now, 0);
}
