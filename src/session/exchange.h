/*
 * An exchange: one stream of messages to a client, the answers to one POST
 * or a session's standing GET stream. The endpoint supplies delivery; the
 * session and hub only send into it. Reference-counted, so a call that
 * outlives its HTTP request finds the exchange detached instead of freed.
 */
#ifndef MCPV_EXCHANGE_H
#define MCPV_EXCHANGE_H

#include <jansson.h>
#include <stdbool.h>

struct exchange;

struct exchange_ops {
	/* A message for the client, borrowed. */
	void (*deliver)(void *ctx, json_t *msg);
	/* Every expected response has been delivered. */
	void (*finish)(void *ctx);
};

/* expected: how many responses end it; 0 for a standing stream. Returns
 * with one reference, the endpoint's. */
struct exchange *exchange_new(const struct exchange_ops *ops, void *ctx,
			      unsigned expected);
void exchange_ref(struct exchange *ex);
void exchange_unref(struct exchange *ex);

/* Delivers msg (borrowed) unless detached; a response counts toward the
 * expected ones, and the last one finishes the exchange. */
void exchange_send(struct exchange *ex, json_t *msg);
/* An expected response that will not come (its request was cancelled). */
void exchange_skip(struct exchange *ex);
/* The HTTP side is gone (or done): nothing is delivered any more. */
void exchange_detach(struct exchange *ex);
bool exchange_attached(const struct exchange *ex);
/* Responses still expected. */
unsigned exchange_expected(const struct exchange *ex);

#endif
