/* One stream of messages to a client, detached when its HTTP side ends. */
#include "session/exchange.h"

#include <errno.h>
#include <stdlib.h>

#include "util/xmalloc.h"

struct exchange {
	const struct exchange_ops *ops;
	void *ctx;
	unsigned expected;
	bool standing;
	bool attached;
	int refs;
	exchange_record_fn record;
	void *rctx;
	uint64_t stream;
};

struct exchange *exchange_new(const struct exchange_ops *ops, void *ctx,
			      unsigned expected)
{
	struct exchange *ex = xcalloc(1, sizeof *ex);
	ex->ops = ops;
	ex->ctx = ctx;
	ex->expected = expected;
	ex->standing = expected == 0;
	ex->attached = true;
	ex->refs = 1;
	return ex;
}

void exchange_ref(struct exchange *ex)
{
	ex->refs++;
}

void exchange_unref(struct exchange *ex)
{
	if (ex && --ex->refs == 0)
		free(ex);
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

void exchange_send(struct exchange *ex, json_t *msg)
{
	bool response = json_object_get(msg, "method") == NULL;
	if (ex->record) {
		char id[32];
		size_t len = 0;
		char *spill = NULL;
		const char *data = ex->record(ex->rctx, ex->stream, msg, NULL,
					      &len, id, &spill);
		if (ex->attached)
			ex->ops->deliver(ex->ctx, msg, id, data, len);
		free(spill);
	} else if (ex->attached) {
		ex->ops->deliver(ex->ctx, msg, NULL, NULL, 0);
	}
	if (response)
		exchange_count_response(ex);
}

void exchange_send_text(struct exchange *ex, char *text, size_t len,
			bool response)
{
	if (ex->record) {
		char id[32];
		char *spill = NULL;
		const char *data = ex->record(ex->rctx, ex->stream, NULL, text,
					      &len, id, &spill);
		if (ex->attached)
			ex->ops->deliver(ex->ctx, NULL, id, data, len);
		free(spill);
	} else {
		if (ex->attached)
			ex->ops->deliver(ex->ctx, NULL, NULL, text, len);
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
