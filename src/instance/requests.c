/*
 * An instance's requests: its own ids for what it sends, the requests in
 * flight and what happens to them when the server goes away (re-sent when
 * they change nothing, answered "may or may not have taken effect" when
 * they might), and the messages that come back from the server.
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
#include "transport/stdio.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

static void instance_pending_free(struct instance_pending *p)
{
	free(p->method);
	json_decref(p->params);
	free(p);
}

static void instance_pending_unlink(struct instance_pending *p)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->next = p->prev = p;
}

static void instance_pending_append(struct instance_pending *head,
				    struct instance_pending *p)
{
	p->prev = head->prev;
	p->next = head;
	head->prev->next = p;
	head->prev = p;
}

/* A request that may have changed something was lost with the server:
 * the client must not be led to run it twice. */
static json_t *instance_lost_call_error(struct instance *inst)
{
	const char *reason =
		inst->last_error ? inst->last_error : "the server stopped";
	char *msg = xasprintf(
		"Server \"%s\" went away while handling this request (%s); it "
		"may or may not have taken effect, so check before retrying.",
		inst->name, reason);
	json_t *data = json_pack("{s:s,s:s,s:b}", "server", inst->name,
				 "reason", reason, "mayHaveRun", 1);
	json_t *err = jr_error(NULL, JR_SERVER_UNAVAILABLE, msg, data);
	free(msg);
	return err;
}

/* The server is gone. With keep_idempotent (a connection that dropped on
 * its own), requests that change nothing wait to be sent again once it is
 * back; every other request in flight gets an error now. */
void instance_fail_pending(struct instance *inst, bool keep_idempotent)
{
	while (inst->pending.next != &inst->pending) {
		struct instance_pending *p = inst->pending.next;
		instance_pending_unlink(p);
		inst->npending--;
		if (keep_idempotent && !p->internal && p->method &&
		    jr_method_is_idempotent(p->method)) {
			instance_pending_append(&inst->resend, p);
			continue;
		}
		if (p->cb) {
			json_t *err = !p->internal && p->method &&
						      !jr_method_is_idempotent(
							      p->method)
					      ? instance_lost_call_error(inst)
					      : instance_unavailable_error(
							inst, true);
			p->cb(p->arg, err, true);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

/* The requests kept for a resend cannot be sent: answer them. */
void instance_fail_resend(struct instance *inst)
{
	while (inst->resend.next != &inst->resend) {
		struct instance_pending *p = inst->resend.next;
		instance_pending_unlink(p);
		if (p->cb) {
			json_t *err = instance_unavailable_error(inst, false);
			p->cb(p->arg, err, false);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

static struct instance_pending *instance_take_pending(struct instance *inst,
						      int64_t id)
{
	for (struct instance_pending *p = inst->pending.next;
	     p != &inst->pending; p = p->next) {
		if (p->id == id) {
			p->prev->next = p->next;
			p->next->prev = p->prev;
			inst->npending--;
			return p;
		}
	}
	return NULL;
}

static int instance_write(struct instance *inst, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s == NULL)
		return -EINVAL;
	int rc = stdio_conn_send(inst->conn, s, strlen(s));
	free(s);
	return rc;
}

int64_t instance_send_request(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb, void *arg,
			      bool internal)
{
	if (inst->conn == NULL) {
		json_decref(params);
		return -EPIPE;
	}
	int64_t id = inst->next_id++;
	json_t *msg = jr_request(json_integer(id), method,
				 params ? json_incref(params) : NULL);
	int rc = instance_write(inst, msg);
	json_decref(msg);
	if (rc < 0) {
		json_decref(params);
		return rc;
	}
	struct instance_pending *p = xcalloc(1, sizeof *p);
	p->id = id;
	p->cb = cb;
	p->arg = arg;
	p->internal = internal;
	if (!internal) {
		p->method = xstrdup(method);
		p->params = params;
	} else {
		json_decref(params);
	}
	instance_pending_append(&inst->pending, p);
	inst->npending++;
	return id;
}

/* Sends again what a dropped connection lost and changed nothing. */
void instance_resend(struct instance *inst)
{
	while (inst->resend.next != &inst->resend) {
		struct instance_pending *p = inst->resend.next;
		instance_pending_unlink(p);
		log_info("instance %s: sending %s again after the reconnect",
			 inst->name, p->method);
		if (instance_send_request(inst, p->method,
					  json_incref(p->params), p->cb, p->arg,
					  false) < 0 &&
		    p->cb) {
			json_t *err = instance_unavailable_error(inst, false);
			p->cb(p->arg, err, false);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

int64_t instance_request_text(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb,
			      instance_text_cb text_cb, void *arg)
{
	int64_t id = instance_request(inst, method, params, cb, arg);
	if (id > 0)
		inst->pending.prev->text_cb = text_cb;
	return id;
}

int64_t instance_request_raw(struct instance *inst, const char *method,
			     const char *params, size_t params_len,
			     instance_reply_cb cb, instance_text_cb text_cb,
			     void *arg)
{
	if (inst->state != INSTANCE_READY || inst->conn == NULL)
		return -EAGAIN;
	int64_t id = inst->next_id++;
	struct buf b;
	buf_init(&b);
	buf_reserve(&b, params_len + 64);
	buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	buf_put_u64(&b, (unsigned long long)id);
	buf_puts(&b, ",\"method\":\"");
	buf_puts(&b, method);
	buf_puts(&b, "\",\"params\":");
	buf_append(&b, params, params_len);
	buf_puts(&b, "}");
	int rc = stdio_conn_send(inst->conn, b.data, b.len);
	buf_free(&b);
	if (rc < 0)
		return rc;
	struct instance_pending *p = xcalloc(1, sizeof *p);
	p->id = id;
	p->cb = cb;
	p->text_cb = text_cb;
	p->arg = arg;
	p->method = xstrdup(method);
	instance_pending_append(&inst->pending, p);
	inst->npending++;
	return id;
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

void instance_cancel(struct instance *inst, int64_t id, const char *reason)
{
	struct instance_pending *p = instance_take_pending(inst, id);
	if (p == NULL) {
		/* Waiting for a resend: it never reaches the server now. */
		for (struct instance_pending *q = inst->resend.next;
		     q != &inst->resend; q = q->next) {
			if (q->id == id) {
				instance_pending_unlink(q);
				instance_pending_free(q);
				return;
			}
		}
		return;
	}
	instance_pending_free(p);
	if (inst->conn == NULL)
		return;
	json_t *params = json_object();
	json_object_set_new(params, "requestId", json_integer(id));
	if (reason)
		json_object_set_new(params, "reason", json_string(reason));
	instance_notify(inst, "notifications/cancelled", params);
}

int instance_notify(struct instance *inst, const char *method, json_t *params)
{
	if (inst->conn == NULL) {
		json_decref(params);
		return -EPIPE;
	}
	json_t *msg = jr_notification(method, params);
	int rc = instance_write(inst, msg);
	json_decref(msg);
	return rc;
}

int instance_respond(struct instance *inst, json_t *id, json_t *result,
		     json_t *error)
{
	if (inst->conn == NULL) {
		json_decref(result);
		json_decref(error);
		return -EPIPE;
	}
	json_t *msg = json_object();
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	json_object_set(msg, "id", id);
	if (error)
		json_object_set_new(msg, "error", error);
	else
		json_object_set_new(msg, "result",
				    result ? result : json_object());
	int rc = instance_write(inst, msg);
	json_decref(msg);
	return rc;
}

/* ---- messages from the server ---- */

static void instance_handle_notification(struct instance *inst, json_t *msg)
{
	const char *method = jr_method(msg);
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		if (i == INSTANCE_TEMPLATES)
			continue;
		char name[64];
		snprintf(name, sizeof name, "notifications/%s/list_changed",
			 instance_list_caps[i]);
		if (strcmp(method, name) == 0 &&
		    inst->state == INSTANCE_READY) {
			instance_fetch_list(inst, (enum instance_list)i, NULL,
					    NULL, 0);
			if (i == INSTANCE_RESOURCES)
				instance_fetch_list(inst, INSTANCE_TEMPLATES,
						    NULL, NULL, 0);
			return;
		}
	}
	if (inst->cbs.on_notification)
		inst->cbs.on_notification(inst->ctx, inst, msg);
}

/* A successful answer to a request that takes text goes on without a
 * parse. True when the line was one and is dealt with. */
static bool instance_fast_answer(struct instance *inst, const char *line,
				 size_t len)
{
	static const char *const keys[] = {"jsonrpc", "id", "method", "result",
					   "error"};
	struct jsonscan_span sp[5];
	long long id;
	if (jsonscan_members(line, len, keys, 5, sp) < 0 || sp[2].len ||
	    sp[4].len || sp[3].len == 0 || !jsonscan_int(line, &sp[1], &id) ||
	    sp[0].len != 5 || memcmp(line + sp[0].off, "\"2.0\"", 5) != 0)
		return false;
	struct instance_pending *p = instance_take_pending(inst, id);
	if (p == NULL) {
		log_debug("instance %s: answer to an unknown or cancelled "
			  "request; dropped",
			  inst->name);
		return true;
	}
	if (p->text_cb) {
		p->text_cb(p->arg, line, sp[3].off, sp[3].len);
		instance_pending_free(p);
		return true;
	}
	/* Not a text taker: put it back and let the full parse handle it. */
	instance_pending_append(&inst->pending, p);
	inst->npending++;
	return false;
}

void instance_message_cb(void *ctx, const char *line, size_t len)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	if (instance_fast_answer(inst, line, len))
		return;
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
	if (msg == NULL) {
		log_warn("instance %s: skipped a line that is not JSON (%s)",
			 inst->name, jerr.text);
		return;
	}
	const char *why;
	switch (jr_classify(msg, &why)) {
	case JR_RESPONSE: {
		json_t *id = jr_id(msg);
		struct instance_pending *p =
			json_is_integer(id)
				? instance_take_pending(inst,
							json_integer_value(id))
				: NULL;
		if (p == NULL) {
			log_debug("instance %s: answer to an unknown or "
				  "cancelled request; dropped",
				  inst->name);
			break;
		}
		if (p->cb)
			p->cb(p->arg, msg, true);
		instance_pending_free(p);
		break;
	}
	case JR_NOTIFICATION:
		instance_handle_notification(inst, msg);
		break;
	case JR_REQUEST:
		if (strcmp(jr_method(msg), "ping") == 0)
			instance_respond(inst, jr_id(msg), json_object(), NULL);
		else if (inst->cbs.on_request)
			inst->cbs.on_request(inst->ctx, inst, msg);
		else
			instance_respond(inst, jr_id(msg), NULL,
					 json_pack("{s:i,s:s}", "code",
						   JR_METHOD_NOT_FOUND,
						   "message",
						   "method not found"));
		break;
	case JR_INVALID:
		log_warn("instance %s: skipped an invalid message (%s)",
			 inst->name, why);
		break;
	}
	json_decref(msg);
}

void instance_garbage_cb(void *ctx, const char *what)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	log_warn("instance %s: %s", inst->name, what);
}
