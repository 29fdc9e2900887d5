/* One stream of messages to a client, detached when its HTTP side ends. */
#include "session/exchange.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "util/jsonscan.h"
#include "util/xmalloc.h"

struct exchange {
	const struct exchange_ops *ops;
	void *ctx;
	unsigned expected;
	bool standing;
	bool attached;
	bool waits_client; /* its client was asked and has not answered */
	int refs;
	exchange_record_fn record;
	void *rctx;
	uint64_t stream;
	struct exchange_req *reqs; /* room for as many as were expected */
	size_t nreqs, maxreqs;
	struct exchange_req one; /* the room when one is expected */
	size_t footprint;
};

struct exchange *exchange_new(const struct exchange_ops *ops, void *ctx,
			      unsigned expected)
{
	/* Not xcalloc: glibc's calloc skips its per-thread cache (see
	 * session_call_new). */
	struct exchange *ex = xmalloc(sizeof *ex);
	memset(ex, 0, sizeof *ex);
	ex->ops = ops;
	ex->ctx = ctx;
	ex->expected = expected;
	ex->standing = expected == 0;
	ex->attached = true;
	ex->refs = 1;
	ex->maxreqs = expected;
	return ex;
}

void exchange_ref(struct exchange *ex)
{
	ex->refs++;
}

void exchange_unref(struct exchange *ex)
{
	if (ex == NULL || --ex->refs > 0)
		return;
	for (size_t i = 0; i < ex->nreqs; i++)
		json_decref(ex->reqs[i].id);
	if (ex->reqs != &ex->one)
		free(ex->reqs);
	free(ex);
}

void exchange_expect(struct exchange *ex, json_t *id, const char *method)
{
	if (id == NULL || ex->nreqs >= ex->maxreqs)
		return;
	if (ex->reqs == NULL)
		ex->reqs = ex->maxreqs == 1
				   ? &ex->one
				   : xcalloc(ex->maxreqs, sizeof *ex->reqs);
	struct exchange_req *q = &ex->reqs[ex->nreqs++];
	/* Ids are never changed once parsed: shared, not copied. */
	q->id = json_incref(id);
	q->safe = method && jr_method_is_idempotent(method);
	ex->footprint += sizeof *q + 16 +
			 (json_is_string(id) ? json_string_length(id) : 0);
}

const struct exchange_req *exchange_reqs(const struct exchange *ex, size_t *n)
{
	*n = ex->nreqs;
	return ex->reqs;
}

size_t exchange_footprint(const struct exchange *ex)
{
	return ex->footprint;
}

/* The id of an answer that is text: scanned, and parsed alone. */
static json_t *exchange_text_id(const char *text, size_t len)
{
	static const char *const keys[] = {"id"};
	struct jsonscan_span sp = {0, 0};
	if (jsonscan_members(text, len, keys, 1, &sp) < 0 || sp.len == 0)
		return NULL;
	return json_loadb(text + sp.off, sp.len, JSON_DECODE_ANY, NULL);
}

/* The request an answer (msg, or text when msg is NULL) is for. With one
 * request still open (every single call) no id is compared, so the text
 * path scans nothing more. */
static struct exchange_req *exchange_req_for(struct exchange *ex, json_t *msg,
					     const char *text, size_t len)
{
	struct exchange_req *first = NULL;
	size_t open = 0;
	for (size_t i = 0; i < ex->nreqs; i++) {
		if (ex->reqs[i].answered)
			continue;
		if (first == NULL)
			first = &ex->reqs[i];
		open++;
	}
	if (open <= 1)
		return first;
	json_t *id = msg ? json_incref(json_object_get(msg, "id"))
			 : exchange_text_id(text, len);
	struct exchange_req *hit = NULL;
	for (size_t i = 0; id && i < ex->nreqs && hit == NULL; i++)
		if (!ex->reqs[i].answered && json_equal(ex->reqs[i].id, id))
			hit = &ex->reqs[i];
	json_decref(id);
	return hit;
}

static void exchange_mark_answered(struct exchange *ex, json_t *msg,
				   const char *text, size_t len, uint64_t event)
{
	struct exchange_req *q = exchange_req_for(ex, msg, text, len);
	if (q) {
		q->answered = true;
		q->event = event;
	}
}

void exchange_set_recorder(struct exchange *ex, exchange_record_fn fn,
			   void *rctx, uint64_t stream)
{
	ex->record = fn;
	ex->rctx = rctx;
	ex->stream = stream;
}

void exchange_clear_recorder(struct exchange *ex)
{
	ex->record = NULL;
	ex->rctx = NULL;
}

uint64_t exchange_stream(const struct exchange *ex)
{
	return ex->stream;
}

static void exchange_count_response(struct exchange *ex)
{
	if (ex->standing || ex->expected == 0)
		return;
	if (--ex->expected == 0 && ex->attached) {
		ex->attached = false;
		ex->ops->finish(ex->ctx);
	}
}

/* Whether a message must first be offered to ops->opening: the exchange
 * has no recorder yet, and someone receives it. */
static bool exchange_unopened(const struct exchange *ex)
{
	return ex->record == NULL && ex->attached && ex->ops->opening;
}

void exchange_send(struct exchange *ex, json_t *msg)
{
	bool response = json_object_get(msg, "method") == NULL;
	uint64_t event = 0;
	if (exchange_unopened(ex)) {
		/* Its length helps decide the form it goes in: serialized
		 * once here, and passed on as text. */
		char *text = json_dumps(msg, JSON_COMPACT);
		exchange_send_text(ex, text, strlen(text), response);
		return;
	}
	if (ex->record) {
		char id[EXCHANGE_EVENT_ID_MAX];
		size_t len = 0;
		char *spill = NULL;
		const char *data = ex->record(ex->rctx, ex->stream, msg, NULL,
					      &len, id, &event, &spill);
		if (ex->attached)
			ex->ops->deliver(ex->ctx, msg, id, data, len);
		free(spill);
	} else if (ex->attached) {
		ex->ops->deliver(ex->ctx, msg, NULL, NULL, 0);
	}
	if (response) {
		exchange_mark_answered(ex, msg, NULL, 0, event);
		exchange_count_response(ex);
	}
}

void exchange_send_text(struct exchange *ex, char *text, size_t len,
			bool response)
{
	uint64_t event = 0;
	if (exchange_unopened(ex))
		ex->ops->opening(ex->ctx, len,
				 response && !ex->standing &&
					 ex->expected == 1);
	if (ex->record) {
		char id[EXCHANGE_EVENT_ID_MAX];
		char *spill = NULL;
		const char *data = ex->record(ex->rctx, ex->stream, NULL, text,
					      &len, id, &event, &spill);
		if (ex->attached)
			ex->ops->deliver(ex->ctx, NULL, id, data, len);
		if (response)
			exchange_mark_answered(ex, NULL, data, len, event);
		free(spill);
	} else {
		if (ex->attached)
			ex->ops->deliver(ex->ctx, NULL, NULL, text, len);
		if (response)
			exchange_mark_answered(ex, NULL, text, len, event);
		free(text);
	}
	if (response)
		exchange_count_response(ex);
}

void exchange_skip(struct exchange *ex)
{
	exchange_count_response(ex);
}

void exchange_end(struct exchange *ex)
{
	if (!ex->attached)
		return;
	ex->attached = false;
	ex->ops->finish(ex->ctx);
}

void exchange_detach(struct exchange *ex)
{
	ex->attached = false;
}

int exchange_rebind(struct exchange *ex, const struct exchange_ops *ops,
		    void *ctx)
{
	if (ex->attached)
		return -EBUSY;
	ex->ops = ops;
	ex->ctx = ctx;
	ex->attached = true;
	return 0;
}

void exchange_set_waits_client(struct exchange *ex, bool on)
{
	ex->waits_client = on;
}

bool exchange_waits_client(const struct exchange *ex)
{
	return ex->waits_client;
}

bool exchange_attached(const struct exchange *ex)
{
	return ex->attached;
}

bool exchange_finished(const struct exchange *ex)
{
	return !ex->standing && ex->expected == 0;
}

bool exchange_standing(const struct exchange *ex)
{
	return ex->standing;
}
