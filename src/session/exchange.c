/* One stream of messages to a client, detached when its HTTP side ends. */
#include "session/exchange.h"

#include <stdlib.h>

#include "util/xmalloc.h"

struct exchange {
	const struct exchange_ops *ops;
	void *ctx;
	unsigned expected;
	bool standing;
	bool attached;
	int refs;
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
	if (ex->attached)
		ex->ops->deliver(ex->ctx, msg);
	if (response)
		exchange_count_response(ex);
}

void exchange_skip(struct exchange *ex)
{
	exchange_count_response(ex);
}

void exchange_detach(struct exchange *ex)
{
	ex->attached = false;
}

bool exchange_attached(const struct exchange *ex)
{
	return ex->attached;
}

unsigned exchange_expected(const struct exchange *ex)
{
	return ex->expected;
}
