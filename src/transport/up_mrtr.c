/*
 * input_required from a server of 2026-07-28 to a call of a 2025 client
 * (one whose request carried no protocol-version claim: a modern client's
 * call carries its own, and its input_required goes to it untouched).
 * A 2025 client cannot retry, so mcpvisor does: each of the round's
 * inputRequests goes to the instance as a request from the server on the
 * call's stream (the session asks the client whose call it is, as for a
 * 2025 server's mid-call request), the answers are collected, and the
 * retry goes upstream under a new id with the same params plus
 * inputResponses and the requestState as the server gave it, round after
 * round up to UPM_MAX_ROUNDS. The final answer goes to the instance
 * under the call's own id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/up_modern_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The ids of the requests a round asks of the client start so. */
#define UPM_ASK_PREFIX "mcpvisor-input-"

struct upm_call {
	struct upm_call *next;
	int64_t id;	 /* the instance's */
	int64_t wire_id; /* of the POST now upstream (id, then retries) */
	char *method;
	json_t *params;	 /* as first sent upstream */
	unsigned rounds; /* input_required answered so far */
	json_t *state;	 /* the round's requestState (a string), or NULL */
	json_t *asked;	 /* the ask ids still unanswered -> input key */
	json_t *answers; /* input key -> the client's result */
};

bool upm_mrtr_method(const char *method)
{
	return method && (strcmp(method, "tools/call") == 0 ||
			  strcmp(method, "prompts/get") == 0 ||
			  strcmp(method, "resources/read") == 0);
}

static void upm_call_free(struct upm_call *c)
{
	free(c->method);
	json_decref(c->params);
	json_decref(c->state);
	json_decref(c->asked);
	json_decref(c->answers);
	free(c);
}

static void upm_call_drop(struct upm *p, struct upm_call *c)
{
	for (struct upm_call **pp = &p->calls; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	upm_call_free(c);
}

void upm_mrtr_free(struct upm *p)
{
	while (p->calls) {
		struct upm_call *c = p->calls;
		p->calls = c->next;
		upm_call_free(c);
	}
}

void upm_mrtr_track(struct upm *p, int64_t id, const char *method,
		    json_t *params)
{
	upm_mrtr_forget(p, id); /* sent again: its rounds start over */
	struct upm_call *c = xcalloc(1, sizeof *c);
	c->id = id;
	c->wire_id = id;
	c->method = xstrdup(method);
	c->params = json_deep_copy(params);
	c->next = p->calls;
	p->calls = c;
}

static struct upm_call *upm_call_by_wire(struct upm *p, int64_t wire_id)
{
	for (struct upm_call *c = p->calls; c; c = c->next)
		if (c->wire_id == wire_id)
			return c;
	return NULL;
}

/* Ends call c with an error of ours (its rounds could not go on): the
 * instance gets it under the call's id. */
static void upm_fail(struct upm *p, struct upm_call *c, const char *text,
		     json_t *data)
{
	json_t *err = json_pack("{s:i,s:s}", "code", -32603, "message", text);
	if (data)
		json_object_set_new(err, "data", data);
	json_t *msg = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id",
				(json_int_t)c->id, "error", err);
	int64_t id = c->id, wire = c->wire_id;
	upm_call_drop(p, c);
	upm_done(p, wire); /* unsent, or answered */
	upm_give(p, msg, id);
	json_decref(msg);
}

/* Every input of the round is answered: the retry goes, under a new id,
 * with the same params plus the answers and the state as it came. */
static void upm_retry(struct upm *p, struct upm_call *c)
{
	json_t *params = json_deep_copy(c->params);
	json_object_set(params, "inputResponses", c->answers);
	if (c->state)
		json_object_set(params, "requestState", c->state);
	int64_t wire = UPM_RETRY_BASE + (int64_t)p->retry_seq++;
	json_t *msg = json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id",
				(json_int_t)wire, "method", c->method, "params",
				params);
	json_decref(c->answers);
	c->answers = NULL;
	json_decref(c->state);
	c->state = NULL;
	c->wire_id = wire;
	int rc = upm_post(p, msg, wire);
	json_decref(msg);
	if (rc < 0) {
		char *text = xasprintf("the retry of %s with the client's "
				       "answers could not be sent (%s)",
				       c->method, strerror(-rc));
		upm_fail(p, c, text, NULL);
		free(text);
	}
}

/* An input_required answer to call c: its requests go to the client. */
static void upm_round(struct upm *p, struct upm_call *c, json_t *result)
{
	upm_done(p, c->wire_id); /* answered: its stream is done */
	c->wire_id = 0;
	if (c->rounds >= UPM_MAX_ROUNDS) {
		char *text = xasprintf("the server asked for input more than "
				       "%d times in one %s; mcpvisor stopped "
				       "there",
				       UPM_MAX_ROUNDS, c->method);
		upm_fail(p, c, text, NULL);
		free(text);
		return;
	}
	c->rounds++;
	json_t *state = json_object_get(result, "requestState");
	c->state = json_is_string(state) ? json_incref(state) : NULL;
	json_decref(c->asked);
	json_decref(c->answers);
	c->asked = json_object();
	c->answers = json_object();
	json_t *reqs = json_object_get(result, "inputRequests");
	const char *key;
	json_t *r;
	unsigned n = 0;
	/* The ids first, then the requests: an answer that comes back at
	 * once finds the round complete only when all are out. */
	json_t *out = json_array();
	json_object_foreach(reqs, key, r)
	{
		const char *method =
			json_string_value(json_object_get(r, "method"));
		if (!method)
			continue;
		char *ask = xasprintf(UPM_ASK_PREFIX "%" PRId64 "-%u-%u", c->id,
				      c->rounds, n++);
		json_object_set_new(c->asked, ask, json_string(key));
		json_t *params = json_object_get(r, "params");
		json_array_append_new(
			out, json_pack("{s:s,s:s,s:s,s:O}", "jsonrpc", "2.0",
				       "id", ask, "method", method, "params",
				       json_is_object(params) ? params
							      : json_object()));
		free(ask);
	}
	if (n == 0) {
		json_decref(out);
		/* Nothing to ask (a state alone): the retry goes at once. */
		upm_retry(p, c);
		return;
	}
	int64_t id = c->id;
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m)
	{
		upm_give(p, m, id);
	}
	json_decref(out);
}

bool upm_mrtr_message(struct upm *p, const char *msg, size_t len,
		      int64_t related)
{
	struct upm_call *c = related > 0 ? upm_call_by_wire(p, related) : NULL;
	if (c == NULL)
		return false;
	/* Only an answer (its stream's own id) may be a round. */
	json_t *a = json_loadb(msg, len, 0, NULL);
	json_t *id = json_object_get(a, "id");
	bool answer = json_is_integer(id) &&
		      json_integer_value(id) == related &&
		      !json_object_get(a, "method");
	if (!answer) {
		json_decref(a);
		if (c->wire_id == c->id)
			return false; /* as it came */
		/* A retry's notification: the instance knows the call's id. */
		upm_out_message(p, msg, len, c->id);
		return true;
	}
	json_t *result = json_object_get(a, "result");
	const char *rt =
		json_string_value(json_object_get(result, "resultType"));
	if (rt && strcmp(rt, "input_required") == 0) {
		upm_round(p, c, result);
		json_decref(a);
		return true;
	}
	bool first = c->wire_id == c->id;
	int64_t cid = c->id;
	upm_call_drop(p, c);
	if (first) {
		json_decref(a);
		return false; /* the answer as it came */
	}
	json_object_set_new(a, "id", json_integer(cid));
	upm_give(p, a, cid);
	json_decref(a);
	return true;
}

bool upm_mrtr_answer(struct upm *p, json_t *msg)
{
	const char *ask = json_string_value(json_object_get(msg, "id"));
	if (!ask || strncmp(ask, UPM_ASK_PREFIX, strlen(UPM_ASK_PREFIX)) != 0)
		return false;
	for (struct upm_call *c = p->calls; c; c = c->next) {
		json_t *key = json_object_get(c->asked, ask);
		if (!key)
			continue;
		json_t *err = json_object_get(msg, "error");
		if (err) {
			/* The client could not answer: the call cannot go on
			 * (the server's rules give no way to say so). */
			const char *m = json_string_value(
				json_object_get(err, "message"));
			char *text = xasprintf(
				"the server needs input the client did not "
				"give: %s",
				m ? m : "(no message)");
			upm_fail(p, c, text, json_deep_copy(err));
			free(text);
			return true;
		}
		json_t *result = json_object_get(msg, "result");
		json_object_set(c->answers, json_string_value(key),
				json_is_object(result) ? result
						       : json_object());
		json_object_del(c->asked, ask);
		if (json_object_size(c->asked) == 0)
			upm_retry(p, c);
		return true;
	}
	return true; /* a call let go: nobody waits for it */
}

bool upm_mrtr_lost(struct upm *p, int64_t id, enum outbox_fact f)
{
	struct upm_call *c = id > 0 ? upm_call_by_wire(p, id) : NULL;
	if (c == NULL)
		return false;
	bool first = c->wire_id == c->id;
	int64_t cid = c->id;
	upm_call_drop(p, c);
	if (first)
		return false;
	/* The rounds before may have done something (a tool's effects): to
	 * the instance's rule the call was cut, whatever became of the
	 * retry. */
	(void)f;
	p->out.lost(p->ctx, cid, OUTBOX_CUT);
	return true;
}

bool upm_mrtr_forget(struct upm *p, int64_t id)
{
	for (struct upm_call *c = p->calls; c; c = c->next)
		if (c->id == id) {
			int64_t wire = c->wire_id;
			upm_call_drop(p, c);
			if (wire > 0 && wire != id)
				upm_cancel(p, wire);
			return true;
		}
	return false;
}

int64_t upm_mrtr_wire(struct upm *p, int64_t id)
{
	for (struct upm_call *c = p->calls; c; c = c->next)
		if (c->id == id)
			return c->wire_id;
	return id;
}
